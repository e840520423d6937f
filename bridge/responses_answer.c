/* responses_answer.c -- the Responses bridge's answer side: a whole chat
 * answer as the Response object (see responses_api.h).
 *
 * One chat choice becomes the Response's output items in the order a
 * Responses model emits them: reasoning, message, function calls (each
 * call in the shape its tool was declared in, through b->kinds). The
 * pieces of that object (its envelope, its ids, a call item) serve the
 * event stream too (responses_events.c), through responses_api_int.h.
 */
#include "bridge/responses_api.h"

#include <stdio.h>
#include <string.h>

#include "bridge/bridge.h"
#include "bridge/responses_answer.h"
#include "core/jsonio.h"

/* ---- the Response object ------------------------------------------------ */

json_t *tg_resp_usage(const json_t *u)
{
    if (!json_is_object(u))
        return json_null();
    json_int_t in = tg_bridge_int_at(u, "prompt_tokens", NULL), out = tg_bridge_int_at(u, "completion_tokens", NULL);
    json_int_t total = json_is_integer(json_object_get(u, "total_tokens"))
                           ? tg_bridge_int_at(u, "total_tokens", NULL)
                           : in + out;
    /* the prompt's tokens read from the provider's cache: OpenAI's and
     * most providers' prompt_tokens_details, DeepSeek's own name */
    json_int_t cached = tg_bridge_int_at(u, "prompt_tokens_details", "cached_tokens");
    if (!cached)
        cached = tg_bridge_int_at(u, "prompt_cache_hit_tokens", NULL);
    /* and written to it (openai 7.60's chat usage has them; 0 where the
     * provider does not say, as the Responses usage requires the field) */
    json_int_t written = tg_bridge_int_at(u, "prompt_tokens_details", "cache_write_tokens");
    return json_pack("{s:I, s:{s:I, s:I}, s:I, s:{s:I}, s:I}", "input_tokens", in,
                     "input_tokens_details", "cached_tokens", cached, "cache_write_tokens",
                     written, "output_tokens", out,
                     "output_tokens_details", "reasoning_tokens",
                     tg_bridge_int_at(u, "completion_tokens_details", "reasoning_tokens"), "total_tokens",
                     total);
}

static json_t *echo_or(tg_resp_bridge *b, const char *k, json_t *dflt)
{
    json_t *v = json_object_get(b->echo, k);
    if (v && !json_is_null(v)) {
        json_decref(dflt);
        return json_incref(v);
    }
    return dflt;
}

json_t *tg_resp_object(tg_resp_bridge *b, json_t *id, json_t *model, json_int_t created,
                       const char *status, const char *finish, json_t *output, json_t *usage,
                       json_t *error)
{
    const char *why = NULL;
    if (!strcmp(status, "completed") && finish) {
        if (!strcmp(finish, "length"))
            why = "max_output_tokens";
        else if (!strcmp(finish, "content_filter"))
            why = "content_filter";
        if (why)
            status = "incomplete";
    }
    json_t *r = json_object();
    json_object_set(r, "id", id);
    json_object_set_new(r, "object", json_string("response"));
    json_object_set_new(r, "created_at", json_integer(created));
    json_object_set_new(r, "status", json_string(status));
    json_object_set_new(r, "error", error ? error : json_null());
    json_object_set_new(r, "incomplete_details",
                        why ? json_pack("{s:s}", "reason", why) : json_null());
    json_object_set_new(r, "instructions", echo_or(b, "instructions", json_null()));
    json_object_set_new(r, "max_output_tokens", echo_or(b, "max_output_tokens", json_null()));
    if (!json_is_string(model))
        model = json_object_get(b->echo, "model");
    json_object_set_new(r, "model", json_is_string(model) ? json_incref(model) : json_string(""));
    json_object_set(r, "output", output);
    json_object_set_new(r, "parallel_tool_calls", echo_or(b, "parallel_tool_calls", json_true()));
    json_object_set_new(r, "previous_response_id", b->previous ? json_incref(b->previous) : json_null());
    json_object_set_new(r, "reasoning",
                        echo_or(b, "reasoning", json_pack("{s:n, s:n}", "effort", "summary")));
    json_object_set_new(r, "store", json_boolean(b->stored));
    json_object_set_new(r, "temperature", echo_or(b, "temperature", json_null()));
    json_object_set_new(r, "text",
                        echo_or(b, "text", json_pack("{s:{s:s}}", "format", "type", "text")));
    json_object_set_new(r, "tool_choice", echo_or(b, "tool_choice", json_string("auto")));
    json_object_set_new(r, "tools", echo_or(b, "tools", json_array()));
    json_object_set_new(r, "top_p", echo_or(b, "top_p", json_null()));
    json_object_set_new(r, "truncation", json_string("disabled"));
    json_object_set_new(r, "usage", usage ? usage : json_null());
    json_object_set_new(r, "user", echo_or(b, "user", json_null()));
    json_object_set_new(r, "metadata", echo_or(b, "metadata", json_object()));
    /* openai 7.60's Response: access_programs is required (null: none
     * applied); the rest repeat the request as OpenAI's do */
    json_object_set_new(r, "access_programs", json_null());
    json_object_set_new(r, "background", json_false());
    json_object_set_new(r, "max_tool_calls", echo_or(b, "max_tool_calls", json_null()));
    json_object_set_new(r, "prompt_cache_key", echo_or(b, "prompt_cache_key", json_null()));
    json_object_set_new(r, "safety_identifier", echo_or(b, "safety_identifier", json_null()));
    json_object_set_new(r, "service_tier", echo_or(b, "service_tier", json_string("default")));
    json_object_set_new(r, "top_logprobs", echo_or(b, "top_logprobs", json_integer(0)));
    return r;
}

void tg_resp_set_encrypted(tg_resp_bridge *b, json_t *item, const char *text, size_t n)
{
    if (!b->encrypted)
        return;
    tg_buf e = {0};
    tg_buf_puts(&e, ENCRYPTED_TAG);
    tg_buf_append(&e, text, n);
    json_object_set_new(item, "encrypted_content", json_stringn(e.data, e.len));
    tg_buf_free(&e);
}

/* Ids: from the caller's unique name (tg_resp_bridge_name) when it gave
 * one, which a store of items needs; else from the chat answer's id. */
json_t *tg_resp_item_id(tg_resp_bridge *b, const char *kind)
{
    char s[160];
    const char *base = b->name[0] ? b->name : json_string_value(b->id);
    snprintf(s, sizeof s, "%s_%u_%.120s", kind, b->n_items++, base ? base : "toolgate");
    return json_string(s);
}

json_t *tg_resp_response_id(const tg_resp_bridge *b, const json_t *chat_id)
{
    char s[160];
    const char *v = b->name[0] ? b->name : json_string_value(chat_id);
    snprintf(s, sizeof s, "resp_%.140s", v && *v ? v : "toolgate");
    return json_string(s);
}

void tg_resp_bridge_name(tg_resp_bridge *b, const char *unique)
{
    snprintf(b->name, sizeof b->name, "%s", unique);
}

json_t *tg_responses_items(const tg_resp_bridge *b)
{
    return b->output ? json_incref(b->output) : json_array();
}

/* The record holds the Response itself without its output (kept once,
 * beside it), for GET /v1/responses/{id} (responses_stored.c), and the
 * input only for a client that chains (keeps_record): one that sends the
 * whole history every turn leaves a record without it, which answers GET
 * but continues no chain and lists no input items. */
json_t *tg_responses_record(const tg_resp_bridge *b)
{
    if (!b->stored || !b->id || !b->output)
        return NULL;
    json_t *rec = json_pack("{s:s, s:O, s:O, s:O}", "type", TG_RESP_RECORD, "id", b->id,
                            "previous_response_id", b->previous ? b->previous : json_null(),
                            "output", b->output);
    if (b->input)
        json_object_set(rec, "input", b->input);
    if (b->final) {
        json_t *resp = json_copy(b->final);
        json_object_del(resp, "output");
        json_object_set_new(rec, "response", resp);
    }
    return rec;
}

void tg_resp_keep_final(tg_resp_bridge *b, const json_t *response)
{
    json_decref(b->final);
    b->final = json_incref((json_t *)response);
}

json_t *tg_resp_text_part(const char *type, const char *text, size_t n)
{
    if (!strcmp(type, "refusal"))
        return json_pack("{s:s, s:s%}", "type", "refusal", "refusal", text, n);
    return json_pack("{s:s, s:s%, s:[], s:[]}", "type", "output_text", "text", text, n,
                     "annotations", "logprobs");
}

const char *tg_resp_kind_of(const tg_resp_bridge *b, const char *name, const json_t **k)
{
    *k = name ? json_object_get(b->kinds, name) : NULL;
    const char *kind = json_string_value(json_object_get(*k, "kind"));
    return kind ? kind : "function";
}

/* a[k] when it is an integer, else null (borrowed from a or static). */
static json_t *int_or_null(const json_t *a, const char *k)
{
    json_t *v = json_object_get(a, k);
    return json_is_integer(v) ? v : json_null();
}

/* A custom, local_shell or tool_search call, whole, in the shape Codex
 * reads (codex-rs protocol ResponseItem), or a shell or apply_patch call
 * in the shape of OpenAI's tools of those names: its arguments are the
 * function arguments the model wrote for the chat tool it was declared
 * as. */
json_t *tg_resp_shaped_item(json_t *id, const char *kind, const json_t *k, const char *call_id,
                            const char *args, const char *status)
{
    json_t *a = args ? tg_json_load(args, strlen(args), 0, NULL) : NULL;
    json_t *item = json_pack("{s:o, s:s, s:s}", "id", id, "status", status, "call_id", call_id);
    if (!strcmp(kind, "custom")) {
        const json_t *in = json_object_get(a, "input");
        json_object_set_new(item, "type", json_string("custom_tool_call"));
        json_object_set(item, "name", json_object_get(k, "name"));
        if (json_object_get(k, "namespace"))
            json_object_set(item, "namespace", json_object_get(k, "namespace"));
        /* a model that wrote the text itself, not {input}, meant the text */
        json_object_set_new(item, "input", json_is_string(in) ? json_incref((json_t *)in)
                                                              : json_string(args ? args : ""));
    } else if (!strcmp(kind, "shell")) {
        json_t *action = json_pack("{s:o, s:O, s:O}", "commands",
                                   json_is_array(json_object_get(a, "commands"))
                                       ? json_incref(json_object_get(a, "commands"))
                                       : json_array(),
                                   "timeout_ms", int_or_null(a, "timeout_ms"),
                                   "max_output_length", int_or_null(a, "max_output_length"));
        json_object_set_new(item, "type", json_string("shell_call"));
        json_object_set_new(item, "action", action);
        json_object_set_new(item, "environment", json_pack("{s:s}", "type", "local"));
    } else if (!strcmp(kind, "apply_patch")) {
        const char *op = json_string_value(json_object_get(a, "type"));
        const json_t *path = json_object_get(a, "path"), *diff = json_object_get(a, "diff");
        json_t *operation = json_pack("{s:s, s:s}", "type", op ? op : "update_file", "path",
                                      json_is_string(path) ? json_string_value(path) : "");
        if (!op || strcmp(op, "delete_file"))
            json_object_set_new(operation, "diff", json_string(json_is_string(diff)
                                                                   ? json_string_value(diff)
                                                                   : ""));
        json_object_set_new(item, "type", json_string("apply_patch_call"));
        json_object_set_new(item, "operation", operation);
    } else if (!strcmp(kind, "local_shell")) {
        json_t *action = json_is_object(a) ? json_deep_copy(a) : json_object();
        json_object_set_new(action, "type", json_string("exec"));
        if (!json_is_array(json_object_get(action, "command")))
            json_object_set_new(action, "command", json_array());
        json_object_set_new(item, "type", json_string("local_shell_call"));
        json_object_set_new(item, "action", action);
    } else {
        json_object_set_new(item, "type", json_string("tool_search_call"));
        json_object_set_new(item, "execution", json_string("client"));
        json_object_set_new(item, "arguments", json_is_object(a) ? json_incref(a) : json_object());
    }
    json_decref(a);
    return item;
}

json_t *tg_resp_call_item(const tg_resp_bridge *b, json_t *id, const json_t *call,
                          const char *status)
{
    const json_t *fn = json_object_get(call, "function");
    const char *name = json_string_value(json_object_get(fn, "name"));
    const char *args = json_string_value(json_object_get(fn, "arguments"));
    const char *cid = json_string_value(json_object_get(call, "id"));
    const json_t *k;
    const char *kind = tg_resp_kind_of(b, name, &k);
    if (strcmp(kind, "function"))
        return tg_resp_shaped_item(id, kind, k, cid ? cid : "", args, status);
    json_t *item = json_pack("{s:o, s:s, s:s, s:s, s:s, s:s}", "id", id, "type", "function_call",
                             "status", status, "call_id", cid ? cid : "", "name",
                             name ? name : "", "arguments", args ? args : "");
    if (k) {  /* a tool of a namespace: its own name, and the namespace */
        json_object_set(item, "name", json_object_get(k, "name"));
        json_object_set(item, "namespace", json_object_get(k, "namespace"));
    }
    return item;
}

json_t *tg_responses_answer(tg_resp_bridge *b, const json_t *completion)
{
    json_t *choices = json_object_get(completion, "choices");
    json_t *choice = json_array_get(choices, 0);
    json_t *msg = json_object_get(choice, "message");
    const char *finish = tg_bridge_finish(completion);
    json_decref(b->id);
    b->id = tg_resp_response_id(b, json_object_get(completion, "id"));
    json_t *output = json_array();
    tg_buf own = {0};
    const char *reasoning = tg_bridge_reasoning(msg, &own);
    if (reasoning) {
        json_t *item = json_pack("{s:o, s:s, s:[{s:s, s:s}]}", "id", tg_resp_item_id(b, "rs"), "type",
                                 "reasoning", "summary", "type", "summary_text", "text", reasoning);
        tg_resp_set_encrypted(b, item, reasoning, strlen(reasoning));
        json_array_append_new(output, item);
    }
    tg_buf_free(&own);
    json_t *parts = json_array();
    const json_t *content = json_object_get(msg, "content");
    tg_buf t = {0};
    if (json_is_string(content))
        tg_buf_append(&t, json_string_value(content), json_string_length(content));
    else if (json_is_array(content))
        tg_resp_join_text(content, &t);
    if (t.len) {
        json_t *part = tg_resp_text_part("output_text", t.data, t.len);
        /* chat's logprobs.content entries have the Responses shape */
        const json_t *lp = json_object_get(json_object_get(choice, "logprobs"), "content");
        if (json_is_array(lp))
            json_object_set(part, "logprobs", (json_t *)lp);
        json_array_append_new(parts, part);
    }
    tg_buf_free(&t);
    const json_t *refusal = json_object_get(msg, "refusal");
    if (json_is_string(refusal) && json_string_length(refusal))
        json_array_append_new(parts, tg_resp_text_part("refusal", json_string_value(refusal),
                                               json_string_length(refusal)));
    if (json_array_size(parts))
        json_array_append_new(output, json_pack("{s:o, s:s, s:s, s:s, s:o}", "id",
                                                tg_resp_item_id(b, "msg"), "type", "message", "status",
                                                "completed", "role", "assistant", "content", parts));
    else
        json_decref(parts);
    size_t i;
    const json_t *call;
    json_array_foreach(json_object_get(msg, "tool_calls"), i, call) {
        json_array_append_new(output, tg_resp_call_item(b, tg_resp_item_id(b, "fc"), call, "completed"));
    }
    const json_t *created = json_object_get(completion, "created");
    json_t *r = tg_resp_object(b, b->id, json_object_get(completion, "model"),
                                json_is_integer(created) ? json_integer_value(created) : b->arrived,
                                "completed", finish, output,
                                tg_resp_usage(json_object_get(completion, "usage")), NULL);
    json_decref(b->output);
    b->output = output;  /* tg_responses_items */
    tg_resp_keep_final(b, r);
    return r;
}

