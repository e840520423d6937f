/* messages_answer.c -- the Messages bridge's answer side (see
 * messages_api.h): a chat answer as the Message object, a chat stream as
 * the Messages API's events, an upstream error in Anthropic's shape.
 *
 * Choice 0 becomes the Message's content in the order a Claude
 * model writes it: thinking, text, tool_use. A stream is an event machine
 * over the repaired chat chunks: blocks are sequential, opened on their
 * first delta and closed when another block starts or the stream ends, so
 * every delta refers to the open block. The repair stage sends each tool
 * call whole in one delta, so calls never interleave; a tool block's input
 * goes in one input_json_delta as it closes (input_of decides what the
 * arguments are only once they are whole). A fragment for a call whose
 * block is already closed cannot be placed, and ends the message with an
 * error rather than a call with cut arguments.
 */
#include "bridge/messages_api.h"

#include <stdio.h>
#include <string.h>

#include "bridge/bridge.h"
#include "bridge/messages_api_int.h"
#include "core/jsonio.h"

/* ---- the Message object ------------------------------------------------- */

/* Chat usage in Anthropic's names: input_tokens are those not read from
 * the cache, as Anthropic counts them; the cached ones are
 * cache_read_input_tokens, from prompt_tokens_details.cached_tokens
 * (OpenAI, Gemini's OpenAI-compatible endpoint, most others) or
 * DeepSeek's prompt_cache_hit_tokens. */
static json_t *usage_of(const json_t *u)
{
    json_int_t in = tg_bridge_int_at(u, "prompt_tokens", NULL), out = tg_bridge_int_at(u, "completion_tokens", NULL);
    const json_t *c = json_object_get(json_object_get(u, "prompt_tokens_details"), "cached_tokens");
    if (!json_is_integer(c))
        c = json_object_get(u, "prompt_cache_hit_tokens");
    json_int_t cached = json_is_integer(c) ? json_integer_value(c) : 0;
    if (cached > in)
        cached = in;
    if (cached < 0)
        cached = 0;
    json_t *r = json_pack("{s:I, s:I}", "input_tokens", in - cached, "output_tokens", out);
    if (json_is_integer(c))
        json_object_set_new(r, "cache_read_input_tokens", json_integer(cached));
    /* the tokens written to the cache, where the chat usage says (openai
     * 7.60's prompt_tokens_details.cache_write_tokens) */
    const json_t *w = json_object_get(json_object_get(u, "prompt_tokens_details"),
                                      "cache_write_tokens");
    if (json_is_integer(w))
        json_object_set(r, "cache_creation_input_tokens", (json_t *)w);
    return r;
}

/* What Anthropic's Usage (and, with delta, MessageDeltaUsage) declares
 * beyond the token counts: every field is in every answer, null where the
 * chat answer does not tell (@anthropic-ai/sdk 1.17 types them required;
 * fallback_credit and iterations are its beta types', which Claude Code
 * reads).
 * Takes r, returns it. */
static json_t *usage_filled(json_t *r, bool delta)
{
    static const char *const all[] = {"cache_creation_input_tokens", "cache_read_input_tokens",
                                      "output_tokens_details", "server_tool_use",
                                      "fallback_credit", "iterations", NULL};
    static const char *const message_only[] = {"cache_creation", "inference_geo", "service_tier",
                                               "speed", NULL};
    for (const char *const *k = all; *k; k++)
        if (!json_object_get(r, *k))
            json_object_set_new(r, *k, json_null());
    for (const char *const *k = message_only; *k && !delta; k++)
        json_object_set_new(r, *k, json_null());
    return r;
}

/* stop_details: what a refusal was (the chat answer names no category),
 * null for every other stop. New reference. */
static json_t *stop_details_of(const char *why)
{
    if (!why || strcmp(why, "refusal"))
        return json_null();
    return json_pack("{s:s, s:n, s:n}", "type", "refusal", "category", "explanation");
}

/* The Message's fields that only Anthropic's service fills (the code
 * execution container, cache diagnostics, the beta's context edits): null,
 * as Anthropic sends them when it has none. */
static json_t *message_filled(json_t *msg, const char *why)
{
    json_object_set_new(msg, "container", json_null());
    json_object_set_new(msg, "context_management", json_null());
    json_object_set_new(msg, "diagnostics", json_null());
    json_object_set_new(msg, "stop_details", stop_details_of(why));
    return msg;
}

/* Who called a tool: the model itself (ToolUseBlock.caller, required by
 * @anthropic-ai/sdk 1.17; server tools' code execution is the other kind,
 * which the bridge never runs). New reference. */
static json_t *direct_caller(void)
{
    return json_pack("{s:s}", "type", "direct");
}

/* "msg_" and the chat answer's id, which clients treat as opaque. */
static json_t *message_id(const json_t *chat_id)
{
    char s[160];
    const char *v = json_string_value(chat_id);
    snprintf(s, sizeof s, "msg_%.140s", v && *v ? v : "toolgate");
    return json_string(s);
}

/* The stop string that ended the answer, when the provider names it (vLLM
 * puts it in the choice's stop_reason) and the request asked for it. */
static const char *stop_hit(const tg_msg_bridge *b, const json_t *stop_reason)
{
    const char *s = json_string_value(stop_reason);
    size_t i;
    const json_t *v;
    if (s)
        json_array_foreach(b->stops, i, v) if (json_is_string(v) && !strcmp(s, json_string_value(v)))
            return s;
    return NULL;
}

static const char *stop_reason_of(const tg_msg_bridge *b, const char *finish, bool calls,
                                  const json_t *stop_reason)
{
    if (finish && !strcmp(finish, "length"))
        return "max_tokens";
    if (calls)
        return "tool_use";
    if (finish && !strcmp(finish, "content_filter"))
        return "refusal";
    if (stop_hit(b, stop_reason))
        return "stop_sequence";
    return "end_turn";
}

/* A call's arguments as tool_use input: the object they hold, {} for
 * none. The repair stage makes arguments JSON where it can; what it could
 * not (and delivers as it came) stays the model's text, as a string: input
 * is never made up, and the client's validation of the input refuses it
 * and tells the model, as an OpenAI agent's parse of the arguments would. */
static json_t *input_of(const char *args, size_t n)
{
    size_t i = 0;
    while (i < n && (args[i] == ' ' || args[i] == '\n' || args[i] == '\t' || args[i] == '\r'))
        i++;
    if (i == n)
        return json_object();
    json_t *v = tg_json_load(args, n, 0, NULL);
    if (json_is_object(v))
        return v;
    json_decref(v);
    return json_stringn(args, n);
}

json_t *tg_messages_answer(tg_msg_bridge *b, const json_t *completion)
{
    const json_t *choice = json_array_get(json_object_get(completion, "choices"), 0);
    const json_t *msg = json_object_get(choice, "message");
    const char *finish = tg_bridge_finish(completion);
    json_t *content = json_array();
    tg_buf own = {0};
    const char *reasoning = tg_bridge_reasoning(msg, &own);
    if (reasoning)
        json_array_append_new(content, json_pack("{s:s, s:s, s:s}", "type", "thinking", "thinking",
                                                 reasoning, "signature", ""));
    tg_buf_free(&own);
    const json_t *c = json_object_get(msg, "content");
    tg_buf t = {0};
    size_t i;
    const json_t *p;
    if (json_is_string(c))
        tg_buf_append(&t, json_string_value(c), json_string_length(c));
    else
        json_array_foreach(c, i, p) if (json_is_string(json_object_get(p, "text")))
            tg_buf_puts(&t, json_string_value(json_object_get(p, "text")));
    const json_t *refusal = json_object_get(msg, "refusal");
    if (json_is_string(refusal) && json_string_length(refusal))
        tg_buf_append(&t, json_string_value(refusal), json_string_length(refusal));
    if (t.len)
        json_array_append_new(content, json_pack("{s:s, s:s%, s:n}", "type", "text", "text",
                                                 t.data, t.len, "citations"));
    tg_buf_free(&t);
    const json_t *call;
    size_t n_calls = 0;
    json_array_foreach(json_object_get(msg, "tool_calls"), i, call) {
        const json_t *fn = json_object_get(call, "function");
        const char *id = json_string_value(json_object_get(call, "id"));
        const char *name = json_string_value(json_object_get(fn, "name"));
        json_array_append_new(content, json_pack("{s:s, s:s, s:s, s:o, s:o}", "type", "tool_use", "id",
                                                 id ? id : "", "name", name ? name : "", "input",
                                                 input_of(json_string_value(json_object_get(fn, "arguments")),
                                                          json_string_length(json_object_get(fn, "arguments"))),
                                                 "caller", direct_caller()));
        n_calls++;
    }
    const json_t *model = json_object_get(completion, "model");
    const json_t *sr = json_object_get(choice, "stop_reason");
    const char *hit = stop_hit(b, sr);
    const char *why = stop_reason_of(b, finish, n_calls > 0, sr);
    json_t *whole = json_pack("{s:o, s:s, s:s, s:O, s:o, s:s, s:o, s:o}", "id",
                     message_id(json_object_get(completion, "id")), "type", "message", "role",
                     "assistant", "model", json_is_string(model) ? model : b->model, "content",
                     content, "stop_reason", why, "stop_sequence",
                     hit && !strcmp(why, "stop_sequence") ? json_string(hit) : json_null(),
                     "usage", usage_filled(usage_of(json_object_get(completion, "usage")), false));
    return message_filled(whole, why);
}

/* ---- the event stream --------------------------------------------------- */

static void stream_start(void *vb, const json_t *chunk, tg_buf *out)
{
    tg_msg_bridge *b = vb;
    const json_t *m = json_object_get(chunk, "model");
    json_t *msg = json_pack("{s:o, s:s, s:s, s:O, s:[], s:n, s:n, s:{s:I, s:I}}", "id",
                            message_id(json_object_get(chunk, "id")), "type", "message", "role",
                            "assistant", "model", json_is_string(m) ? m : b->model, "content",
                            "stop_reason", "stop_sequence", "usage", "input_tokens",
                            (json_int_t)0, "output_tokens", (json_int_t)0);
    usage_filled(json_object_get(msg, "usage"), false);
    message_filled(msg, NULL);
    tg_bridge_emit(out, json_pack("{s:s, s:o}", "type", "message_start", "message", msg));
}

static void block_delta(tg_msg_bridge *b, json_t *delta, tg_buf *out);

/* A tool block's input goes in one input_json_delta as it closes: the
 * repair stage sends each call whole anyway, and only whole arguments can
 * be told apart from the text input_of keeps as a string. */
static void close_block(tg_msg_bridge *b, tg_buf *out)
{
    if (b->open == BLK_NONE)
        return;
    if (b->open == BLK_TOOL) {
        json_object_set_new(b->calls_done, json_string_value(b->call_key), json_true());
        json_decref(b->call_key);
        b->call_key = NULL;
        json_t *input = input_of(b->args.data ? b->args.data : "", b->args.len);
        if (json_is_string(input) || json_object_size(input)) {
            tg_buf t = {0};  /* the object as it came, or the text as a JSON string */
            if (json_is_string(input))
                tg_json_dump(input, &t);
            else
                tg_buf_append(&t, b->args.data, b->args.len);
            block_delta(b, json_pack("{s:s, s:s%}", "type", "input_json_delta", "partial_json",
                                     t.data, t.len),
                        out);
            tg_buf_free(&t);
        }
        json_decref(input);
        tg_buf_reset(&b->args);
    }
    tg_bridge_emit(out, json_pack("{s:s, s:i}", "type", "content_block_stop", "index", b->n_blocks - 1));
    b->open = BLK_NONE;
}

/* Opens a block (content_block, stolen) as the next index. */
static void open_block(tg_msg_bridge *b, int kind, json_t *block, tg_buf *out)
{
    close_block(b, out);
    tg_bridge_emit(out, json_pack("{s:s, s:i, s:o}", "type", "content_block_start", "index", b->n_blocks,
                        "content_block", block));
    b->n_blocks++;
    b->open = kind;
}

/* delta (stolen) for the open block. */
static void block_delta(tg_msg_bridge *b, json_t *delta, tg_buf *out)
{
    tg_bridge_emit(out, json_pack("{s:s, s:i, s:o}", "type", "content_block_delta", "index",
                        b->n_blocks - 1, "delta", delta));
}

static void on_text(tg_msg_bridge *b, int kind, const char *text, tg_buf *out)
{
    if (b->open != kind) {
        if (kind == BLK_TEXT)
            open_block(b, kind, json_pack("{s:s, s:s, s:n}", "type", "text", "text", "", "citations"),
                       out);
        else
            open_block(b, kind,
                       json_pack("{s:s, s:s, s:s}", "type", "thinking", "thinking", "", "signature",
                                 ""),
                       out);
    }
    if (kind == BLK_TEXT)
        block_delta(b, json_pack("{s:s, s:s}", "type", "text_delta", "text", text), out);
    else
        block_delta(b, json_pack("{s:s, s:s, s:n}", "type", "thinking_delta", "thinking", text,
                                 "estimated_tokens"),
                    out);
}

static void emit_error(const char *type, const char *message, tg_buf *out);

static bool on_call(void *vb, const json_t *tc, const char *key, tg_buf *out)
{
    tg_msg_bridge *b = vb;
    const json_t *fn = json_object_get(tc, "function");
    const char *args = json_string_value(json_object_get(fn, "arguments"));
    bool current = b->open == BLK_TOOL && !strcmp(json_string_value(b->call_key), key);
    if (!current) {
        if (json_object_get(b->calls_done, key)) {
            emit_error("api_error",
                       "upstream sent more of a tool call's arguments after the next content "
                       "block began; the call is withheld rather than sent cut",
                       out);
            return false;
        }
        const char *id = json_string_value(json_object_get(tc, "id"));
        const char *name = json_string_value(json_object_get(fn, "name"));
        open_block(b, BLK_TOOL,
                   json_pack("{s:s, s:s, s:s, s:{}, s:o}", "type", "tool_use", "id", id ? id : "",
                             "name", name ? name : "", "input", "caller", direct_caller()),
                   out);
        b->call_key = json_string(key);
    }
    if (args)
        tg_buf_puts(&b->args, args);
    return true;
}

static void stream_finish(void *vb, tg_buf *out)
{
    tg_msg_bridge *b = vb;
    close_block(b, out);
    const char *finish = b->rd.finish[0] ? b->rd.finish : NULL;
    bool calls = json_object_size(b->calls_done) > 0;
    const char *why = stop_reason_of(b, finish, calls, b->rd.stop_reason);
    const char *hit = stop_hit(b, b->rd.stop_reason);
    json_t *usage = usage_filled(usage_of(b->rd.usage), true);
    tg_bridge_emit(out, json_pack("{s:s, s:{s:s, s:o, s:o, s:n}, s:n, s:o}", "type",
                        "message_delta", "delta", "stop_reason", why, "stop_sequence",
                        hit && !strcmp(why, "stop_sequence") ? json_string(hit) : json_null(),
                        "stop_details", stop_details_of(why), "container",
                        "context_management", "usage", usage));
    tg_bridge_emit(out, json_pack("{s:s}", "type", "message_stop"));
}

/* An error ends the stream, which clients raise; no message_stop follows,
 * as with Anthropic. A block still open stays so: a cut call's input is
 * never sent (the repair stage withholds such calls too). */
static void emit_error(const char *type, const char *message, tg_buf *out)
{
    tg_bridge_emit(out, json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "type", type, "message",
                        message));
}

/* Anthropic's error type for a chat error's type or code. */
static const char *error_type_of(const json_t *error)
{
    const char *t = json_string_value(json_object_get(error, "type"));
    const char *c = json_string_value(json_object_get(error, "code"));
    static const char *const known[] = {"invalid_request_error", "authentication_error",
                                        "permission_error",      "not_found_error",
                                        "request_too_large",     "rate_limit_error",
                                        "api_error",             "overloaded_error", NULL};
    if (t && tg_bridge_is_one_of(t, known))
        return t;
    const char *s[] = {t, c};
    for (int i = 0; i < 2; i++) {
        if (s[i] && strstr(s[i], "rate_limit"))
            return "rate_limit_error";
        if (s[i] && strstr(s[i], "overload"))
            return "overloaded_error";
    }
    return "api_error";
}

static void on_fail(void *vb, const json_t *error, tg_buf *out)
{
    (void)vb;
    const char *msg = json_string_value(json_object_get(error, "message"));
    emit_error(error_type_of(error), msg ? msg : "upstream error", out);
}

static void on_thinking(void *b, const char *text, tg_buf *out)
{
    on_text(b, BLK_THINKING, text, out);
}

/* a refusal is the answer's text: a Message has no refusal block */
static void on_answer_text(void *b, const char *text, tg_buf *out)
{
    on_text(b, BLK_TEXT, text, out);
}

static void on_content(void *b, const char *text, const json_t *logprobs, tg_buf *out)
{
    (void)logprobs;  /* a Message has none */
    on_text(b, BLK_TEXT, text, out);
}

static const tg_chat_events messages_events = {
    .start = stream_start,
    .reasoning = on_thinking,
    .text = on_content,
    .refusal = on_answer_text,
    .call = on_call,
    .finish = stream_finish,
    .fail = on_fail,
};

void tg_messages_stream(tg_msg_bridge *b, const char *sse, size_t n, tg_buf *out)
{
    tg_chat_read(&b->rd, &messages_events, b, sse, n, out);
}

void tg_messages_stream_end(tg_msg_bridge *b, tg_buf *out)
{
    tg_chat_read_end(&b->rd, &messages_events, b, out);
}

/* ---- errors --------------------------------------------------------------- */

static const char *error_type_for(int status)
{
    switch (status) {
    case 400: case 405: case 415: case 422: case 431: return "invalid_request_error";
    case 401: return "authentication_error";
    case 402: return "billing_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 408: case 504: return "timeout_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: case 529: return "overloaded_error";
    default: return status >= 400 && status < 500 ? "invalid_request_error" : "api_error";
    }
}

char *tg_messages_error_body(int status, const char *body, size_t n, size_t *len)
{
    json_t *v = body && n ? tg_json_load(body, n, 0, NULL) : NULL;
    const json_t *error = json_object_get(v, "error");
    if (!json_is_object(error) || tg_msg_is_type(v, "error")) {
        json_decref(v);
        return NULL;
    }
    const char *msg = json_string_value(json_object_get(error, "message"));
    json_t *a = json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "type",
                          error_type_for(status), "message", msg ? msg : "error");
    json_decref(v);
    tg_buf out = {0};
    tg_json_dump(a, &out);
    json_decref(a);
    return tg_buf_steal(&out, len);
}

