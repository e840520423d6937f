/* responses_stored.c -- the stored-response endpoints of the Responses API
 * on a bridged route, answered from the record a bridged Response left in
 * the caller's store (tg_responses_record): GET /v1/responses/{id} (whole,
 * or replayed as the event stream), GET /v1/responses/{id}/input_items
 * and the tombstone DELETE leaves. The chat providers behind the bridge
 * keep nothing, so these would otherwise reach a provider that has no
 * such endpoint.
 *
 * Everything here is a pure function of the record (parsed JSON) and the
 * query: proxy/stored.c finds the record and sends what these make. The
 * replayed stream is made from the stored Response as one event per piece
 * (each text part one delta): the events and sequence numbers a client
 * reads are those of a stream that sent every text whole, so starting_after
 * counts in those numbers (a replay is the same every time).
 */
#include "bridge/responses_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/bridge.h"
#include "bridge/responses_api_int.h"
#include "core/jsonio.h"

/* ---- the Response ------------------------------------------------------- */

/* include[] reasoning.encrypted_content on a Response made without it: the
 * reasoning's summary text under the bridge's tag (responses_api_int.h),
 * which the bridge reads back when the item returns in an input. */
static void add_encrypted(json_t *output)
{
    size_t i;
    json_t *item;
    json_array_foreach(output, i, item) {
        const char *type = json_string_value(json_object_get(item, "type"));
        if (!type || strcmp(type, "reasoning") || json_object_get(item, "encrypted_content"))
            continue;
        tg_buf t = {0};
        tg_buf_puts(&t, ENCRYPTED_TAG);
        tg_resp_join_text(json_object_get(item, "summary"), &t);
        json_object_set_new(item, "encrypted_content", json_stringn(t.data, t.len));
        tg_buf_free(&t);
    }
}

json_t *tg_responses_stored(const json_t *record, bool encrypted)
{
    const char *type = json_string_value(json_object_get(record, "type"));
    const json_t *resp = json_object_get(record, "response");
    if (!type || strcmp(type, TG_RESP_RECORD) || !json_is_object(resp))
        return NULL;
    json_t *r = json_deep_copy(resp);
    const json_t *output = json_object_get(record, "output");
    json_object_set_new(r, "output", json_is_array(output) ? json_deep_copy(output)
                                                           : json_array());
    if (encrypted)
        add_encrypted(json_object_get(r, "output"));
    return r;
}

json_t *tg_responses_tombstone(const char *id)
{
    return json_pack("{s:s, s:s}", "type", TG_RESP_DELETED, "id", id);
}

/* ---- input_items -------------------------------------------------------- */

/* An input item as the API lists it (ResponseItem): with an id (the
 * item's own, else one made from the response's id and its index, the
 * same every time) and a message's content as parts. New reference. */
static json_t *listed_item(const json_t *item, size_t i, const char *rid)
{
    json_t *it = json_is_object(item) ? json_deep_copy(item) : json_object();
    const char *type = json_string_value(json_object_get(it, "type"));
    const char *role = json_string_value(json_object_get(it, "role"));
    if (!type && role)
        json_object_set_new(it, "type", json_string(type = "message"));
    bool msg = type && !strcmp(type, "message");
    if (!json_is_string(json_object_get(it, "id"))) {
        const char *pre = msg                                         ? "msg"
                          : type && !strcmp(type, "function_call")    ? "fc"
                          : type && !strcmp(type, "function_call_output") ? "fco"
                                                                      : "item";
        const char *base = rid && !strncmp(rid, "resp_", 5) ? rid + 5 : rid ? rid : "";
        char id[200];
        snprintf(id, sizeof id, "%s_in%zu_%.150s", pre, i, base);
        json_object_set_new(it, "id", json_string(id));
    }
    if (msg) {
        const json_t *c = json_object_get(it, "content");
        bool out = role && !strcmp(role, "assistant");
        if (json_is_string(c))
            json_object_set_new(
                it, "content",
                out ? json_pack("[{s:s, s:O, s:[], s:[]}]", "type", "output_text", "text", c,
                                "annotations", "logprobs")
                    : json_pack("[{s:s, s:O}]", "type", "input_text", "text", c));
        if (!json_object_get(it, "status"))
            json_object_set_new(it, "status", json_string("completed"));
    }
    return it;
}

/* The index in items of the one whose id is id, or -1. */
static long index_of(const json_t *items, const char *id)
{
    size_t i;
    const json_t *it;
    json_array_foreach(items, i, it) {
        const char *v = json_string_value(json_object_get(it, "id"));
        if (v && !strcmp(v, id))
            return (long)i;
    }
    return -1;
}

static int parse_limit(const char *s, long *limit, tg_error *err)
{
    *limit = 20;
    if (!s)
        return 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 1 || v > 100) {
        tg_error_set(err, 400, "invalid_request_error", "invalid_value", "limit",
                     "Invalid 'limit': expected an integer between 1 and 100, got '%.40s'.", s);
        return -1;
    }
    *limit = v;
    return 0;
}

int tg_responses_input_list(const json_t *record, const tg_resp_list_query *q, json_t **list,
                            tg_error *err)
{
    *list = NULL;
    long limit;
    if (parse_limit(q->limit, &limit, err))
        return -1;
    bool asc = false;  /* the API's default is desc */
    if (q->order && !(asc = !strcmp(q->order, "asc")) && strcmp(q->order, "desc")) {
        tg_error_set(err, 400, "invalid_request_error", "invalid_value", "order",
                     "Invalid 'order': expected one of 'asc' or 'desc', got '%.40s'.", q->order);
        return -1;
    }
    const json_t *input = json_object_get(record, "input");
    const char *rid = json_string_value(json_object_get(record, "id"));
    json_t *items = json_array();  /* in the order asked for */
    size_t n = json_array_size(input);
    for (size_t k = 0; k < n; k++) {
        size_t i = asc ? k : n - 1 - k;
        json_array_append_new(items, listed_item(json_array_get(input, i), i, rid));
    }
    /* after / before: ids in the list; one it does not hold is a cursor
     * past its end */
    long from = 0, to = (long)n;
    if (q->after) {
        long at = index_of(items, q->after);
        from = at < 0 ? (long)n : at + 1;
    }
    if (q->before) {
        long at = index_of(items, q->before);
        to = at < 0 ? to : at;
    }
    json_t *data = json_array();
    for (long i = from; i < to && (long)json_array_size(data) < limit; i++)
        json_array_append(data, json_array_get(items, (size_t)i));
    bool more = from + (long)json_array_size(data) < to;
    size_t got = json_array_size(data);
    json_t *first = got ? json_object_get(json_array_get(data, 0), "id") : NULL;
    json_t *last = got ? json_object_get(json_array_get(data, got - 1), "id") : NULL;
    *list = json_pack("{s:s, s:o, s:O, s:O, s:b}", "object", "list", "data", data, "first_id",
                      first ? first : json_null(), "last_id", last ? last : json_null(),
                      "has_more", more);
    json_decref(items);
    return 0;
}

/* ---- the replayed stream ------------------------------------------------ */

typedef struct {
    tg_buf *out;
    json_int_t seq, after;
} replay;

static void emit(replay *rp, const char *type, json_t *fields)
{
    json_t *ev = json_pack("{s:s, s:I}", "type", type, "sequence_number", rp->seq++);
    json_object_update(ev, fields);
    json_decref(fields);
    if (rp->seq - 1 > rp->after)
        tg_bridge_emit(rp->out, ev);
    else
        json_decref(ev);
}

static json_t *at(const json_t *item, size_t i)
{
    return json_pack("{s:O?, s:I}", "item_id", json_object_get(item, "id"), "output_index",
                     (json_int_t)i);
}

static void replay_message(replay *rp, const json_t *item, size_t i)
{
    size_t j;
    const json_t *part;
    json_array_foreach(json_object_get(item, "content"), j, part) {
        const char *type = json_string_value(json_object_get(part, "type"));
        bool refusal = type && !strcmp(type, "refusal");
        const json_t *text = json_object_get(part, refusal ? "refusal" : "text");
        json_t *empty = refusal ? json_pack("{s:s, s:s}", "type", "refusal", "refusal", "")
                                : json_pack("{s:s, s:s, s:[], s:[]}", "type", "output_text",
                                            "text", "", "annotations", "logprobs");
        json_t *f = at(item, i);
        json_object_set_new(f, "content_index", json_integer((json_int_t)j));
        json_object_set_new(f, "part", empty);
        emit(rp, "response.content_part.added", json_deep_copy(f));
        json_object_del(f, "part");
        json_t *d = json_deep_copy(f);
        json_object_set_new(d, "delta", json_string(json_is_string(text) ? json_string_value(text) : ""));
        if (!refusal) {
            const json_t *lp = json_object_get(part, "logprobs");
            json_object_set_new(d, "logprobs", json_is_array(lp) ? json_incref((json_t *)lp)
                                                                 : json_array());
        }
        emit(rp, refusal ? "response.refusal.delta" : "response.output_text.delta", d);
        d = json_deep_copy(f);
        json_object_set_new(d, refusal ? "refusal" : "text",
                            json_string(json_is_string(text) ? json_string_value(text) : ""));
        if (!refusal) {
            const json_t *lp = json_object_get(part, "logprobs");
            json_object_set_new(d, "logprobs", json_is_array(lp) ? json_incref((json_t *)lp)
                                                                 : json_array());
        }
        emit(rp, refusal ? "response.refusal.done" : "response.output_text.done", d);
        json_object_set(f, "part", (json_t *)part);
        emit(rp, "response.content_part.done", f);
    }
}

static void replay_reasoning(replay *rp, const json_t *item, size_t i)
{
    size_t j;
    const json_t *part;
    json_array_foreach(json_object_get(item, "summary"), j, part) {
        const json_t *text = json_object_get(part, "text");
        json_t *f = at(item, i);
        json_object_set_new(f, "summary_index", json_integer((json_int_t)j));
        json_t *e = json_deep_copy(f);
        json_object_set_new(e, "part", json_pack("{s:s, s:s}", "type", "summary_text", "text", ""));
        emit(rp, "response.reasoning_summary_part.added", e);
        json_t *d = json_deep_copy(f);
        json_object_set_new(d, "delta", json_string(json_is_string(text) ? json_string_value(text) : ""));
        emit(rp, "response.reasoning_summary_text.delta", d);
        d = json_deep_copy(f);
        json_object_set_new(d, "text", json_string(json_is_string(text) ? json_string_value(text) : ""));
        emit(rp, "response.reasoning_summary_text.done", d);
        json_object_set(f, "part", (json_t *)part);
        emit(rp, "response.reasoning_summary_part.done", f);
    }
}

/* The item as output_item.added announces it: nothing of its content yet. */
static json_t *opened(const json_t *item, const char *type)
{
    json_t *o = json_deep_copy(item);
    if (json_object_get(o, "status"))
        json_object_set_new(o, "status", json_string("in_progress"));
    if (!strcmp(type, "message"))
        json_object_set_new(o, "content", json_array());
    else if (!strcmp(type, "reasoning"))
        json_object_set_new(o, "summary", json_array());
    else if (!strcmp(type, "function_call"))
        json_object_set_new(o, "arguments", json_string(""));
    return o;
}

void tg_responses_replay(const json_t *response, json_int_t starting_after, tg_buf *out)
{
    replay rp = {.out = out, .after = starting_after};
    json_t *start = json_deep_copy(response);
    json_object_set_new(start, "status", json_string("in_progress"));
    json_object_set_new(start, "output", json_array());
    json_object_set_new(start, "usage", json_null());
    json_object_set_new(start, "incomplete_details", json_null());
    json_object_set_new(start, "error", json_null());
    emit(&rp, "response.created", json_pack("{s:O}", "response", start));
    emit(&rp, "response.in_progress", json_pack("{s:o}", "response", start));
    size_t i;
    const json_t *item;
    json_array_foreach(json_object_get(response, "output"), i, item) {
        const char *type = json_string_value(json_object_get(item, "type"));
        type = type ? type : "";
        emit(&rp, "response.output_item.added",
             json_pack("{s:I, s:o}", "output_index", (json_int_t)i, "item", opened(item, type)));
        if (!strcmp(type, "message"))
            replay_message(&rp, item, i);
        else if (!strcmp(type, "reasoning"))
            replay_reasoning(&rp, item, i);
        else if (!strcmp(type, "function_call")) {
            json_t *d = at(item, i);
            json_object_set(d, "delta", json_object_get(item, "arguments"));
            emit(&rp, "response.function_call_arguments.delta", d);
            d = at(item, i);
            json_object_set(d, "arguments", json_object_get(item, "arguments"));
            json_object_set(d, "name", json_object_get(item, "name"));
            emit(&rp, "response.function_call_arguments.done", d);
        }
        emit(&rp, "response.output_item.done",
             json_pack("{s:I, s:O}", "output_index", (json_int_t)i, "item", item));
    }
    const char *status = json_string_value(json_object_get(response, "status"));
    const char *last = status && !strcmp(status, "failed")       ? "response.failed"
                       : status && !strcmp(status, "incomplete") ? "response.incomplete"
                                                                 : "response.completed";
    emit(&rp, last, json_pack("{s:O}", "response", response));
}
