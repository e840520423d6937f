/* responses_events.c -- the Responses bridge's event stream (see
 * responses_api.h): the repaired chat stream as the Responses API's events.
 *
 * An event machine over the chat chunks (bridge.h's reader calls it): items
 * are opened on their first delta and closed (".done" events, in output
 * order) when the chat stream finishes, so every event a client's
 * accumulator sees refers to an item it was told about. The items and the
 * Response they close with are responses_answer.c's.
 */
#include "bridge/responses_api.h"

#include <stdio.h>
#include <string.h>

#include "bridge/bridge.h"
#include "bridge/responses_answer.h"

/* ---- the event stream --------------------------------------------------- */

static json_t *event_new(tg_resp_bridge *b, const char *type)
{
    return json_pack("{s:s, s:I}", "type", type, "sequence_number", b->seq++);
}

static json_t *stream_response(tg_resp_bridge *b, const char *status, json_t *error)
{
    return tg_resp_object(b, b->id, b->model, b->created, status,
                           b->rd.finish[0] ? b->rd.finish : NULL, b->output,
                           !strcmp(status, "in_progress") ? NULL : tg_resp_usage(b->rd.usage), error);
}

static json_t *keep_final(tg_resp_bridge *b, json_t *response)
{
    tg_resp_keep_final(b, response);
    return response;
}

static void stream_start(void *vb, const json_t *chunk, tg_buf *out)
{
    tg_resp_bridge *b = vb;
    b->id = tg_resp_response_id(b, json_object_get(chunk, "id"));
    const json_t *m = json_object_get(chunk, "model");
    b->model = json_is_string(m) ? json_incref((json_t *)m) : NULL;
    const json_t *c = json_object_get(chunk, "created");
    b->created = json_is_integer(c) ? json_integer_value(c) : b->arrived;
    b->output = json_array();
    b->calls = json_object();
    static const char *const first[] = {"response.created", "response.in_progress", NULL};
    for (const char *const *t = first; *t; t++) {
        json_t *ev = event_new(b, *t);
        json_object_set_new(ev, "response", stream_response(b, "in_progress", NULL));
        tg_bridge_emit(out, ev);
    }
}

static json_t *item_event(tg_resp_bridge *b, const char *type, int at)
{
    json_t *ev = event_new(b, type);
    json_object_set_new(ev, "output_index", json_integer(at));
    return ev;
}

static json_t *part_event(tg_resp_bridge *b, const char *type, int at)
{
    json_t *item = json_array_get(b->output, (size_t)at);
    json_t *ev = event_new(b, type);
    json_object_set(ev, "item_id", json_object_get(item, "id"));
    json_object_set_new(ev, "output_index", json_integer(at));
    json_object_set_new(ev, "content_index",
                        json_integer((json_int_t)json_array_size(json_object_get(item, "content"))));
    return ev;
}

static int add_item(tg_resp_bridge *b, json_t *item, tg_buf *out)
{
    int at = (int)json_array_size(b->output);
    json_array_append_new(b->output, item);
    json_t *ev = item_event(b, "response.output_item.added", at);
    json_object_set(ev, "item", item);
    tg_bridge_emit(out, ev);
    return at;
}

static void item_done(tg_resp_bridge *b, int at, tg_buf *out)
{
    json_t *item = json_array_get(b->output, (size_t)at);
    json_object_set_new(item, "status", json_string("completed"));
    json_t *ev = item_event(b, "response.output_item.done", at);
    json_object_set(ev, "item", item);
    tg_bridge_emit(out, ev);
}

static void close_part(tg_resp_bridge *b, tg_buf *out)
{
    if (!b->part_kind)
        return;
    bool refusal = b->part_kind == 2;
    json_t *item = json_array_get(b->output, (size_t)b->msg_at);
    json_t *part = tg_resp_text_part(refusal ? "refusal" : "output_text", b->text.data ? b->text.data : "",
                             b->text.len);
    if (!refusal && b->logprobs)
        json_object_set(part, "logprobs", b->logprobs);
    json_decref(b->logprobs);
    b->logprobs = NULL;
    json_t *ev = part_event(b, refusal ? "response.refusal.done" : "response.output_text.done",
                            b->msg_at);
    json_object_set(ev, refusal ? "refusal" : "text", json_object_get(part, refusal ? "refusal" : "text"));
    /* the contract's output_text.done carries the part's logprobs, as
     * every delta does */
    if (!refusal)
        json_object_set(ev, "logprobs", json_object_get(part, "logprobs"));
    tg_bridge_emit(out, ev);
    ev = part_event(b, "response.content_part.done", b->msg_at);
    json_object_set(ev, "part", part);
    tg_bridge_emit(out, ev);
    json_array_append_new(json_object_get(item, "content"), part);
    tg_buf_reset(&b->text);
    b->part_kind = 0;
}

static void close_message(tg_resp_bridge *b, tg_buf *out)
{
    if (b->msg_at < 0)
        return;
    close_part(b, out);
    item_done(b, b->msg_at, out);
    b->msg_at = -1;
}

static void close_reasoning(tg_resp_bridge *b, tg_buf *out)
{
    if (b->reason_at < 0)
        return;
    json_t *item = json_array_get(b->output, (size_t)b->reason_at);
    json_t *id = json_object_get(item, "id");
    json_t *part = json_pack("{s:s, s:s%}", "type", "summary_text", "text",
                             b->reason.data ? b->reason.data : "", b->reason.len);
    json_t *ev = event_new(b, "response.reasoning_summary_text.done");
    json_object_set(ev, "item_id", id);
    json_object_set_new(ev, "output_index", json_integer(b->reason_at));
    json_object_set_new(ev, "summary_index", json_integer(0));
    json_object_set(ev, "text", json_object_get(part, "text"));
    tg_bridge_emit(out, ev);
    ev = event_new(b, "response.reasoning_summary_part.done");
    json_object_set(ev, "item_id", id);
    json_object_set_new(ev, "output_index", json_integer(b->reason_at));
    json_object_set_new(ev, "summary_index", json_integer(0));
    json_object_set(ev, "part", part);
    tg_bridge_emit(out, ev);
    json_array_append_new(json_object_get(item, "summary"), part);
    tg_resp_set_encrypted(b, item, b->reason.data ? b->reason.data : "", b->reason.len);
    item_done(b, b->reason_at, out);
    tg_buf_reset(&b->reason);
    b->reason_at = -1;
}

/* An item after function calls: they are done first, so the items of the
 * stream are done in their output order (the repair stage sends a call's
 * arguments before anything else of its choice). on_reasoning and on_text
 * call it before they open their item. */
static void close_calls(tg_resp_bridge *b, tg_buf *out);

/* Reasoning text for the reasoning item (its summary text), opened on
 * need with its one summary part. */
static void on_reasoning(void *vb, const char *text, tg_buf *out)
{
    tg_resp_bridge *b = vb;
    if (b->reason_at < 0) {
        close_message(b, out);
        close_calls(b, out);
        b->reason_at = add_item(b, json_pack("{s:o, s:s, s:[]}", "id", tg_resp_item_id(b, "rs"), "type",
                                             "reasoning", "summary"),
                                out);
        json_t *ev = event_new(b, "response.reasoning_summary_part.added");
        json_object_set(ev, "item_id", json_object_get(json_array_get(b->output, (size_t)b->reason_at), "id"));
        json_object_set_new(ev, "output_index", json_integer(b->reason_at));
        json_object_set_new(ev, "summary_index", json_integer(0));
        json_object_set_new(ev, "part", json_pack("{s:s, s:s}", "type", "summary_text", "text", ""));
        tg_bridge_emit(out, ev);
    }
    tg_buf_puts(&b->reason, text);
    json_t *ev = event_new(b, "response.reasoning_summary_text.delta");
    json_object_set(ev, "item_id", json_object_get(json_array_get(b->output, (size_t)b->reason_at), "id"));
    json_object_set_new(ev, "output_index", json_integer(b->reason_at));
    json_object_set_new(ev, "summary_index", json_integer(0));
    json_object_set_new(ev, "delta", json_string(text));
    tg_bridge_emit(out, ev);
}

/* Text (kind 1, with the chunk's logprobs or NULL) or refusal (kind 2)
 * for the message item, opened on need. */
static void on_text(tg_resp_bridge *b, int kind, const char *text, const json_t *logprobs,
                    tg_buf *out)
{
    close_reasoning(b, out);
    if (b->msg_at < 0) {
        close_calls(b, out);
        b->msg_at = add_item(b, json_pack("{s:o, s:s, s:s, s:s, s:[]}", "id", tg_resp_item_id(b, "msg"),
                                          "type", "message", "status", "in_progress", "role",
                                          "assistant", "content"),
                             out);
    }
    if (b->part_kind != kind) {
        close_part(b, out);
        b->part_kind = kind;
        json_t *ev = part_event(b, "response.content_part.added", b->msg_at);
        json_object_set_new(ev, "part", tg_resp_text_part(kind == 2 ? "refusal" : "output_text", "", 0));
        tg_bridge_emit(out, ev);
    }
    tg_buf_puts(&b->text, text);
    json_t *ev = part_event(b, kind == 2 ? "response.refusal.delta" : "response.output_text.delta",
                            b->msg_at);
    json_object_set_new(ev, "delta", json_string(text));
    if (kind == 1) {
        json_t *lp = json_is_array(logprobs) ? json_incref((json_t *)logprobs) : json_array();
        if (!b->logprobs)
            b->logprobs = json_array();
        json_array_extend(b->logprobs, lp);
        json_object_set_new(ev, "logprobs", lp);
    }
    tg_bridge_emit(out, ev);
}

static bool on_call(void *vb, const json_t *tc, const char *key, tg_buf *out)
{
    tg_resp_bridge *b = vb;
    const json_t *fn = json_object_get(tc, "function");
    const char *args = json_string_value(json_object_get(fn, "arguments"));
    json_t *at_v = json_object_get(b->calls, key);
    int at;
    if (!at_v) {
        close_reasoning(b, out);
        close_message(b, out);
        json_t *call = json_deep_copy(tc);
        json_object_set_new(json_object_get(call, "function"), "arguments", json_string(""));
        json_t *item = tg_resp_call_item(b, tg_resp_item_id(b, "fc"), call, "in_progress");
        json_decref(call);
        bool shaped = strcmp(json_string_value(json_object_get(item, "type")), "function_call");
        at = add_item(b, item, out);
        json_object_set_new(b->calls, key, json_integer(at));
        if (shaped) {  /* its fields come from the whole arguments (close_calls) */
            char at_key[32];
            snprintf(at_key, sizeof at_key, "%d", at);
            json_object_set_new(b->raw, at_key, json_pack("{s:O, s:s}", "name",
                                                          json_object_get(fn, "name"), "args",
                                                          ""));
        }
    } else {
        at = (int)json_integer_value(at_v);
    }
    json_t *item = json_array_get(b->output, (size_t)at);
    char at_key[32];
    snprintf(at_key, sizeof at_key, "%d", at);
    json_t *raw = json_object_get(b->raw, at_key);
    if (raw) {  /* a custom, local_shell or tool_search call */
        tg_buf a = {0};
        tg_buf_puts(&a, json_string_value(json_object_get(raw, "args")));
        tg_buf_puts(&a, args ? args : "");
        json_object_set_new(raw, "args", json_stringn(a.data ? a.data : "", a.len));
        tg_buf_free(&a);
        return true;
    }
    const char *name = json_string_value(json_object_get(fn, "name"));
    if (name && *name && !*json_string_value(json_object_get(item, "name")))
        json_object_set_new(item, "name", json_string(name));
    if (args && *args) {
        tg_buf a = {0};
        tg_buf_puts(&a, json_string_value(json_object_get(item, "arguments")));
        tg_buf_puts(&a, args);
        json_object_set_new(item, "arguments", json_stringn(a.data, a.len));
        tg_buf_free(&a);
        json_t *ev = item_event(b, "response.function_call_arguments.delta", at);
        json_object_set(ev, "item_id", json_object_get(item, "id"));
        json_object_set_new(ev, "delta", json_string(args));
        tg_bridge_emit(out, ev);
    }
    return true;
}

static void close_calls(tg_resp_bridge *b, tg_buf *out)
{
    size_t n = json_array_size(b->output);
    for (size_t at = 0; at < n; at++) {
        json_t *item = json_array_get(b->output, at);
        const char *status = json_string_value(json_object_get(item, "status"));
        if (!status || strcmp(status, "in_progress"))
            continue;
        char at_key[32];
        snprintf(at_key, sizeof at_key, "%zu", at);
        const json_t *raw = json_object_get(b->raw, at_key);
        if (raw) {  /* a shaped call, whole now */
            const json_t *k;
            const char *kind = tg_resp_kind_of(b, json_string_value(json_object_get(raw, "name")), &k);
            json_t *whole = tg_resp_shaped_item(json_incref(json_object_get(item, "id")), kind, k,
                                        json_string_value(json_object_get(item, "call_id")),
                                        json_string_value(json_object_get(raw, "args")),
                                        "in_progress");
            json_array_set_new(b->output, at, whole);
            item_done(b, (int)at, out);
            continue;
        }
        if (strcmp(json_string_value(json_object_get(item, "type")), "function_call"))
            continue;
        json_t *ev = item_event(b, "response.function_call_arguments.done", (int)at);
        json_object_set(ev, "item_id", json_object_get(item, "id"));
        json_object_set(ev, "arguments", json_object_get(item, "arguments"));
        tg_bridge_emit(out, ev);
        item_done(b, (int)at, out);
    }
    json_object_clear(b->calls);
    json_object_clear(b->raw);
}

static void stream_finish(void *vb, tg_buf *out)
{
    tg_resp_bridge *b = vb;
    close_reasoning(b, out);
    close_message(b, out);
    close_calls(b, out);
    json_t *r = stream_response(b, "completed", NULL);
    const char *status = json_string_value(json_object_get(r, "status"));
    json_t *ev = event_new(b, strcmp(status, "completed") ? "response.incomplete"
                                                          : "response.completed");
    tg_resp_keep_final(b, r);
    json_object_set_new(ev, "response", r);
    tg_bridge_emit(out, ev);
}

/* An error event of the chat stream ends the Response as failed, after
 * the error itself, which is what clients raise. */
static void stream_fail(void *vb, const json_t *error, tg_buf *out)
{
    tg_resp_bridge *b = vb;
    const json_t *msg = json_object_get(error, "message");
    const json_t *code = json_object_get(error, "code");
    const json_t *param = json_object_get(error, "param");
    json_t *ev = event_new(b, "error");
    json_object_set_new(ev, "code", json_is_string(code) ? json_incref((json_t *)code) : json_null());
    json_object_set_new(ev, "message", json_string(json_is_string(msg) ? json_string_value(msg)
                                                                       : "upstream error"));
    json_object_set_new(ev, "param",
                        json_is_string(param) ? json_incref((json_t *)param) : json_null());
    tg_bridge_emit(out, ev);
    close_reasoning(b, out);
    close_message(b, out);
    close_calls(b, out);
    ev = event_new(b, "response.failed");
    json_object_set_new(
        ev, "response",
        keep_final(b, stream_response(b, "failed",
                        json_pack("{s:s, s:s}", "code",
                                  json_is_string(code) ? json_string_value(code) : "server_error",
                                  "message",
                                  json_is_string(msg) ? json_string_value(msg) : "upstream error"))));
    tg_bridge_emit(out, ev);
}

static void on_output_text(void *b, const char *text, const json_t *logprobs, tg_buf *out)
{
    on_text(b, 1, text, logprobs, out);
}

static void on_refusal(void *b, const char *text, tg_buf *out)
{
    on_text(b, 2, text, NULL, out);
}

static const tg_chat_events responses_events = {
    .start = stream_start,
    .reasoning = on_reasoning,
    .text = on_output_text,
    .refusal = on_refusal,
    .call = on_call,
    .finish = stream_finish,
    .fail = stream_fail,
};

void tg_responses_stream(tg_resp_bridge *b, const char *sse, size_t n, tg_buf *out)
{
    tg_chat_read(&b->rd, &responses_events, b, sse, n, out);
}

void tg_responses_stream_end(tg_resp_bridge *b, tg_buf *out)
{
    tg_chat_read_end(&b->rd, &responses_events, b, out);
}

