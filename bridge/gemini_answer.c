/* gemini_answer.c -- the Gemini bridge's answer side (see gemini_api.h):
 * a chat answer as a GenerateContentResponse, a chat stream as Gemini's
 * stream (a JSON array or SSE), countTokens' estimate, a model's
 * description, and an upstream error in Google's shape.
 *
 * Choice 0 becomes candidate 0: thought, text, then one
 * functionCall part a call (args parsed into an object; the model's text
 * as a string when it is not one, never made up). A stream is a sequence
 * of GenerateContentResponses, each with the parts of one chat delta; a
 * call goes out whole, gathered until something else begins (the repair
 * stage sends each call whole anyway), and the last response carries the
 * finishReason and usageMetadata, as Gemini's does.
 */
#include "bridge/gemini_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/bridge.h"
#include "bridge/gemini_api_int.h"
#include "core/jsonio.h"

/* ---- the answer ----------------------------------------------------------- */

/* Chat usage in Gemini's names: candidatesTokenCount leaves the thoughts
 * out, which Gemini counts apart (thoughtsTokenCount). */
static json_t *usage_of(const json_t *u)
{
    json_int_t in = tg_bridge_int_at(u, "prompt_tokens", NULL);
    json_int_t out = tg_bridge_int_at(u, "completion_tokens", NULL);
    json_int_t thoughts = tg_bridge_int_at(u, "completion_tokens_details", "reasoning_tokens");
    if (thoughts > out)
        thoughts = out;
    json_t *r = json_pack("{s:I, s:I, s:I}", "promptTokenCount", in, "candidatesTokenCount",
                          out - thoughts, "totalTokenCount",
                          json_is_integer(json_object_get(u, "total_tokens"))
                              ? tg_bridge_int_at(u, "total_tokens", NULL)
                              : in + out);
    if (json_is_integer(json_object_get(json_object_get(u, "prompt_tokens_details"), "cached_tokens")))
        json_object_set_new(r, "cachedContentTokenCount",
                            json_integer(tg_bridge_int_at(u, "prompt_tokens_details", "cached_tokens")));
    if (thoughts)
        json_object_set_new(r, "thoughtsTokenCount", json_integer(thoughts));
    return r;
}

static const char *finish_of(const char *finish)
{
    if (finish && !strcmp(finish, "length"))
        return "MAX_TOKENS";
    if (finish && !strcmp(finish, "content_filter"))
        return "SAFETY";
    return "STOP";  /* Gemini ends a turn of calls with STOP too */
}

/* A call's arguments as functionCall.args: the object they hold, {} for
 * none, else the model's text as a string (never made up). */
static json_t *args_of(const char *args, size_t n)
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

/* A functionCall part: {functionCall: {id, name, args}, thoughtSignature}. */
static json_t *call_part(const char *id, const char *name, const char *args, size_t n,
                         const json_t *sig)
{
    json_t *fc = json_pack("{s:s, s:o}", "name", name ? name : "", "args", args_of(args ? args : "", n));
    if (id && *id)
        json_object_set_new(fc, "id", json_string(id));
    json_t *p = json_pack("{s:o}", "functionCall", fc);
    if (json_is_string(sig))
        json_object_set(p, "thoughtSignature", (json_t *)sig);
    return p;
}

static const json_t *signature_of(const json_t *call)
{
    return json_object_get(json_object_get(json_object_get(call, "extra_content"), "google"),
                           "thought_signature");
}

/* One GenerateContentResponse: candidate 0 with parts (stolen), and its
 * finishReason and usage (stolen) when given. */
/* A chat token's logprob entry {token, logprob} as Gemini's candidate
 * {token, logProbability} (new reference). */
static json_t *token_of(const json_t *t)
{
    json_t *c = json_object();
    const json_t *tok = json_object_get(t, "token"), *lp = json_object_get(t, "logprob");
    if (json_is_string(tok))
        json_object_set(c, "token", (json_t *)tok);
    if (json_is_number(lp))
        json_object_set_new(c, "logProbability", json_real(json_number_value(lp)));
    return c;
}

/* Chat's choices[].logprobs.content as the candidate's logprobsResult
 * (chosenCandidates, topCandidates when the tokens carry top_logprobs,
 * logProbabilitySum) and avgLogprobs, set on cand; nothing for none. */
static void set_logprobs(json_t *cand, const json_t *content)
{
    if (!json_is_array(content) || !json_array_size(content))
        return;
    json_t *chosen = json_array(), *tops = json_array();
    double sum = 0;
    bool any_top = false;
    size_t i;
    const json_t *t;
    json_array_foreach(content, i, t) {
        json_array_append_new(chosen, token_of(t));
        sum += json_number_value(json_object_get(t, "logprob"));
        json_t *cands = json_array();
        size_t j;
        const json_t *alt;
        json_array_foreach(json_object_get(t, "top_logprobs"), j, alt) {
            json_array_append_new(cands, token_of(alt));
            any_top = true;
        }
        json_array_append_new(tops, json_pack("{s:o}", "candidates", cands));
    }
    json_t *r = json_pack("{s:o, s:f}", "chosenCandidates", chosen, "logProbabilitySum", sum);
    if (any_top)
        json_object_set_new(r, "topCandidates", tops);
    else
        json_decref(tops);
    json_object_set_new(cand, "logprobsResult", r);
    json_object_set_new(cand, "avgLogprobs", json_real(sum / (double)json_array_size(content)));
}

static json_t *response_of(const tg_gem_bridge *b, json_t *parts, const char *finish,
                           json_t *usage, const json_t *id, const json_t *version)
{
    json_t *cand = json_pack("{s:{s:s, s:o}, s:i}", "content", "role", "model", "parts", parts,
                             "index", 0);
    if (finish)
        json_object_set_new(cand, "finishReason", json_string(finish));
    json_t *r = json_pack("{s:[o]}", "candidates", cand);
    if (usage)
        json_object_set_new(r, "usageMetadata", usage);
    json_object_set(r, "modelVersion", json_is_string(version) ? (json_t *)version : b->model);
    if (json_is_string(id))
        json_object_set(r, "responseId", (json_t *)id);
    return r;
}

json_t *tg_gemini_answer(tg_gem_bridge *b, const json_t *completion)
{
    const json_t *choice = json_array_get(json_object_get(completion, "choices"), 0);
    const json_t *msg = json_object_get(choice, "message");
    json_t *parts = json_array();
    tg_buf own = {0};
    const char *reasoning = tg_bridge_reasoning(msg, &own);
    if (reasoning)
        json_array_append_new(parts, json_pack("{s:s, s:b}", "text", reasoning, "thought", 1));
    tg_buf_free(&own);
    tg_buf t = {0};
    const json_t *c = json_object_get(msg, "content");
    size_t i;
    const json_t *p;
    if (json_is_string(c))
        tg_buf_append(&t, json_string_value(c), json_string_length(c));
    else
        json_array_foreach(c, i, p) if (json_is_string(json_object_get(p, "text")))
            tg_buf_puts(&t, json_string_value(json_object_get(p, "text")));
    const json_t *refusal = json_object_get(msg, "refusal");
    if (json_is_string(refusal))
        tg_buf_append(&t, json_string_value(refusal), json_string_length(refusal));
    if (t.len)
        json_array_append_new(parts, json_pack("{s:s%}", "text", t.data, t.len));
    tg_buf_free(&t);
    json_array_foreach(json_object_get(msg, "tool_calls"), i, p) {
        const json_t *fn = json_object_get(p, "function");
        const json_t *a = json_object_get(fn, "arguments");
        json_array_append_new(parts, call_part(json_string_value(json_object_get(p, "id")),
                                               json_string_value(json_object_get(fn, "name")),
                                               json_string_value(a), json_string_length(a),
                                               signature_of(p)));
    }
    const char *finish = tg_bridge_finish(completion);
    json_t *r = response_of(b, parts, finish_of(finish),
                            usage_of(json_object_get(completion, "usage")),
                            json_object_get(completion, "id"), json_object_get(completion, "model"));
    set_logprobs(json_array_get(json_object_get(r, "candidates"), 0),
                 json_object_get(json_object_get(choice, "logprobs"), "content"));
    return r;
}

/* ---- the stream ----------------------------------------------------------- */

/* A response (stolen) onto the stream: an SSE event, or the array's next
 * element. */
static void emit(tg_gem_bridge *b, json_t *resp, tg_buf *out)
{
    if (b->sse)
        tg_buf_puts(out, "data: ");
    else
        tg_buf_puts(out, b->n_out ? ",\r\n" : "[");
    tg_json_dump(resp, out);
    if (b->sse)
        tg_buf_puts(out, "\r\n\r\n");
    b->n_out++;
    json_decref(resp);
}

static void emit_parts(tg_gem_bridge *b, json_t *parts, tg_buf *out)
{
    emit(b, response_of(b, parts, NULL, NULL, b->id, b->version), out);
}

static void stream_start(void *vb, const json_t *chunk, tg_buf *out)
{
    tg_gem_bridge *b = vb;
    (void)out;
    const json_t *id = json_object_get(chunk, "id"), *m = json_object_get(chunk, "model");
    b->id = json_is_string(id) ? json_incref((json_t *)id) : NULL;
    b->version = json_is_string(m) ? json_incref((json_t *)m) : NULL;
}

/* The call gathered so far goes out whole. */
static void flush_call(tg_gem_bridge *b, tg_buf *out)
{
    if (!b->call)
        return;
    json_object_set_new(b->calls_done, json_string_value(json_object_get(b->call, "key")),
                        json_true());
    json_t *part = call_part(json_string_value(json_object_get(b->call, "id")),
                             json_string_value(json_object_get(b->call, "name")),
                             b->args.data ? b->args.data : "", b->args.len,
                             json_object_get(b->call, "sig"));
    json_decref(b->call);
    b->call = NULL;
    tg_buf_reset(&b->args);
    emit_parts(b, json_pack("[o]", part), out);
}

/* A text part onto the stream; logprobs: the chunk's tokens, as that
 * response's logprobsResult. */
static void on_text(tg_gem_bridge *b, const char *text, bool thought, const json_t *logprobs,
                    tg_buf *out)
{
    flush_call(b, out);
    json_t *part = json_pack("{s:s}", "text", text);
    if (thought)
        json_object_set_new(part, "thought", json_true());
    json_t *resp = response_of(b, json_pack("[o]", part), NULL, NULL, b->id, b->version);
    set_logprobs(json_array_get(json_object_get(resp, "candidates"), 0), logprobs);
    emit(b, resp, out);
}

static void on_reasoning(void *b, const char *text, tg_buf *out)
{
    on_text(b, text, true, NULL, out);
}

static void on_content(void *b, const char *text, const json_t *logprobs, tg_buf *out)
{
    on_text(b, text, false, logprobs, out);
}

static void on_refusal(void *b, const char *text, tg_buf *out) { on_text(b, text, false, NULL, out); }

static void emit_error(tg_gem_bridge *b, int code, const char *status, const char *msg,
                       tg_buf *out)
{
    emit(b, json_pack("{s:{s:i, s:s, s:s}}", "error", "code", code, "message", msg, "status", status),
         out);
}

static bool on_call(void *vb, const json_t *tc, const char *key, tg_buf *out)
{
    tg_gem_bridge *b = vb;
    const json_t *fn = json_object_get(tc, "function");
    bool current = b->call && !strcmp(json_string_value(json_object_get(b->call, "key")), key);
    if (!current) {
        if (json_object_get(b->calls_done, key)) {
            emit_error(b, 500, "INTERNAL",
                       "upstream sent more of a function call's arguments after the next part "
                       "began; the call is withheld rather than sent cut",
                       out);
            return false;
        }
        flush_call(b, out);
        const char *id = json_string_value(json_object_get(tc, "id"));
        const char *name = json_string_value(json_object_get(fn, "name"));
        b->call = json_pack("{s:s, s:s, s:s}", "key", key, "id", id ? id : "", "name",
                            name ? name : "");
    }
    const json_t *sig = signature_of(tc);
    if (json_is_string(sig))
        json_object_set(b->call, "sig", (json_t *)sig);
    const char *args = json_string_value(json_object_get(fn, "arguments"));
    if (args)
        tg_buf_puts(&b->args, args);
    return true;
}

static void stream_finish(void *vb, tg_buf *out)
{
    tg_gem_bridge *b = vb;
    flush_call(b, out);
    const char *finish = b->rd.finish[0] ? b->rd.finish : NULL;
    emit(b, response_of(b, json_array(), finish_of(finish), usage_of(b->rd.usage), b->id, b->version),
         out);
}

/* Gemini's status names for HTTP statuses (google.rpc.Code). */
static const char *status_for(int status)
{
    switch (status) {
    case 400: case 405: case 413: case 415: case 422: case 431: return "INVALID_ARGUMENT";
    case 401: return "UNAUTHENTICATED";
    case 403: return "PERMISSION_DENIED";
    case 404: return "NOT_FOUND";
    case 409: return "ABORTED";
    case 429: return "RESOURCE_EXHAUSTED";
    case 499: return "CANCELLED";
    case 501: return "UNIMPLEMENTED";
    case 503: case 529: return "UNAVAILABLE";
    case 408: case 504: return "DEADLINE_EXCEEDED";
    default: return status >= 400 && status < 500 ? "FAILED_PRECONDITION" : "INTERNAL";
    }
}

/* A chat stream's error event: its code when it is an HTTP status, else by
 * its type (rate limits, overload), else 500. */
static void on_fail(void *vb, const json_t *error, tg_buf *out)
{
    const char *msg = json_string_value(json_object_get(error, "message"));
    const json_t *c = json_object_get(error, "code");
    const char *t = json_string_value(json_object_get(error, "type"));
    const char *cs = json_string_value(c);
    int code = json_is_integer(c) && json_integer_value(c) >= 400 && json_integer_value(c) < 600
                   ? (int)json_integer_value(c)
                   : 500;
    if (code == 500 && ((t && strstr(t, "rate_limit")) || (cs && strstr(cs, "rate_limit"))))
        code = 429;
    else if (code == 500 && ((t && strstr(t, "overload")) || (cs && strstr(cs, "overload"))))
        code = 503;
    else if (code == 500 && cs && strstr(cs, "timeout"))
        code = 504;
    flush_call(vb, out);
    emit_error(vb, code, status_for(code), msg ? msg : "upstream error", out);
}

static const tg_chat_events gemini_events = {
    .start = stream_start,
    .reasoning = on_reasoning,
    .text = on_content,
    .refusal = on_refusal,
    .call = on_call,
    .finish = stream_finish,
    .fail = on_fail,
};

void tg_gemini_stream(tg_gem_bridge *b, const char *sse, size_t n, tg_buf *out)
{
    tg_chat_read(&b->rd, &gemini_events, b, sse, n, out);
}

void tg_gemini_stream_end(tg_gem_bridge *b, tg_buf *out)
{
    tg_chat_read_end(&b->rd, &gemini_events, b, out);
    if (b->sse || b->closed)
        return;
    tg_buf_puts(out, b->n_out ? "]" : "[]");
    b->closed = true;
}

void tg_gemini_answer_stream(tg_gem_bridge *b, const json_t *completion, tg_buf *out)
{
    emit(b, tg_gemini_answer(b, completion), out);
    if (!b->sse) {
        tg_buf_puts(out, "]");
        b->closed = true;
    }
}

bool tg_gemini_streams(const tg_gem_bridge *b)
{
    return b && b->stream;
}

const char *tg_gemini_stream_type(const tg_gem_bridge *b)
{
    return b && b->stream && !b->sse ? "application/json" : "text/event-stream";
}

/* ---- countTokens and models --------------------------------------------- */

json_int_t tg_gemini_count_estimate(const json_t *chat)
{
    size_t bytes = 0;
    static const char *const keys[] = {"messages", "tools", NULL};
    for (const char *const *k = keys; *k; k++) {
        char *t = json_object_get(chat, *k) ? tg_json_dumps(json_object_get(chat, *k)) : NULL;
        bytes += t ? strlen(t) : 0;
        free(t);
    }
    return (json_int_t)((bytes + 3) / 4);
}

json_t *tg_gemini_model_info(const char *name)
{
    char full[300];
    snprintf(full, sizeof full, "models/%.280s", name);
    return json_pack("{s:s, s:s, s:s, s:s, s:[s, s, s]}", "name", full, "baseModelId", name,
                     "version", "toolgate", "displayName", name, "supportedGenerationMethods",
                     "generateContent", "streamGenerateContent", "countTokens");
}

/* ---- errors --------------------------------------------------------------- */

char *tg_gemini_error_body(int status, const char *body, size_t n, size_t *len)
{
    json_t *v = body && n ? tg_json_load(body, n, 0, NULL) : NULL;
    const json_t *o = json_is_array(v) ? json_array_get(v, 0) : v;
    const json_t *error = json_object_get(o, "error");
    if (!json_is_object(error) ||
        (v == o && json_is_integer(json_object_get(error, "code")) &&
         json_is_string(json_object_get(error, "status")))) {
        json_decref(v);
        return NULL;
    }
    const char *msg = json_string_value(json_object_get(error, "message"));
    const char *st = json_string_value(json_object_get(error, "status"));
    json_t *a = json_pack("{s:{s:i, s:s, s:s}}", "error", "code", status, "message",
                          msg ? msg : "error", "status", st ? st : status_for(status));
    const json_t *details = json_object_get(error, "details");
    if (json_is_array(details))
        json_object_set(json_object_get(a, "error"), "details", (json_t *)details);
    json_decref(v);
    tg_buf out = {0};
    tg_json_dump(a, &out);
    json_decref(a);
    return tg_buf_steal(&out, len);
}

