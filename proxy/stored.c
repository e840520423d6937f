/* stored.c -- the Responses API's stored-response endpoints on a route
 * that bridges the API over chat completions:
 *
 *   GET    /v1/responses/{id}              the Response (stream=true: replayed
 *                                          as its events, past starting_after)
 *   GET    /v1/responses/{id}/input_items  its input, a cursor page
 *   DELETE /v1/responses/{id}              {id, object: response.deleted, deleted}
 *   POST   /v1/responses/{id}/cancel       400: only background responses
 *                                          cancel, and the bridge runs none
 *
 * answered from the record the bridged Response left in the caller's store
 * (proxy/bridges.c remember_items, bridge/responses_stored.c), where the
 * chat provider behind the route has no such endpoint. The owner is the
 * one the Response was made under (item_owner): another client's id is
 * the API's 404, exactly like an unknown one. A store on the worker's loop
 * (Redis) is read like an item_reference (store.h fetch): the request
 * waits, and its dispatch runs again with what was read.
 *
 * Which requests: the route of the prefix when it bridges Responses; with
 * no prefix, the first route that bridges them, and an id its store does
 * not hold goes on to the first route when that one passes the API
 * through (the provider's own stored responses).
 */
#include "proxy/stored.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/responses_api.h"
#include "core/alloc.h"
#include "core/jsonio.h"
#include "proxy/bridges.h"
#include "proxy/metrics.h"
#include "proxy/worker.h"

typedef enum { SR_GET, SR_ITEMS, SR_DELETE, SR_CANCEL } stored_op;

/* The op and the id (copied into id) a path past the prefix names, or -1. */
static int parse_path(const char *rest, const char *method, char *id, size_t cap)
{
    const char *p = !strncmp(rest, "/v1/responses/", 14) ? rest + 14
                    : !strncmp(rest, "/responses/", 11)   ? rest + 11
                                                          : NULL;
    if (!p || !*p)
        return -1;
    const char *slash = strchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : strlen(p);
    if (!n || n >= cap)
        return -1;
    memcpy(id, p, n);
    id[n] = 0;
    const char *tail = slash ? slash : "";
    if (!strcmp(method, "GET") && !*tail)
        return strcmp(id, "input_tokens") ? SR_GET : -1;
    if (!strcmp(method, "GET") && !strcmp(tail, "/input_items"))
        return SR_ITEMS;
    if (!strcmp(method, "DELETE") && !*tail)
        return SR_DELETE;
    if (!strcmp(method, "POST") && !strcmp(tail, "/cancel"))
        return SR_CANCEL;
    return -1;
}

static const tg_route *bridging_route(const tg_conf *c, const tg_route *by_prefix)
{
    if (by_prefix)
        return tg_route_bridges_responses(by_prefix) ? by_prefix : NULL;
    for (int i = 0; i < c->n_routes; i++)
        if (tg_route_bridges_responses(&c->routes[i]))
            return &c->routes[i];
    return NULL;
}

static const char *arg(tg_req *r, const char *k)
{
    return MHD_lookup_connection_value(r->client.conn, MHD_GET_ARGUMENT_KIND, k);
}

static enum MHD_Result find_encrypted(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    (void)kind;
    if ((!strcmp(key, "include") || !strcmp(key, "include[]")) && value &&
        !strcmp(value, "reasoning.encrypted_content"))
        *(bool *)cls = true;
    return MHD_YES;
}

/* Whether rec is the record of a Response (not a tombstone, not an item). */
static bool held(const json_t *rec)
{
    json_t *v = tg_responses_stored(rec, false);
    json_decref(v);
    return v != NULL;
}

static void answer_json(tg_req *r, int status, json_t *v)
{
    char *s = tg_json_dumps(v);
    json_decref(v);
    set_answer(r, status, s, strlen(s), false);
    r->answer.type = "application/json";
}

static void not_found(tg_req *r, const char *id)
{
    set_error(r, 404, "invalid_request_error", NULL, NULL, "Response with id '%.200s' not found.",
              id);
}

/* GET /v1/responses/{id}: whole, or replayed as a stream. */
static void answer_get(tg_req *r, const json_t *rec, const char *id)
{
    bool encrypted = false;
    MHD_get_connection_values(r->client.conn, MHD_GET_ARGUMENT_KIND, find_encrypted, &encrypted);
    json_t *resp = tg_responses_stored(rec, encrypted);
    if (!resp) {
        not_found(r, id);
        return;
    }
    const char *stream = arg(r, "stream");
    if (!stream || strcmp(stream, "true")) {
        answer_json(r, 200, resp);
        return;
    }
    const char *after = arg(r, "starting_after");
    char *end = NULL;
    long long from = after ? strtoll(after, &end, 10) : -1;
    if (after && (!*after || *end)) {
        json_decref(resp);
        set_error(r, 400, "invalid_request_error", "invalid_type", "starting_after",
                  "Invalid 'starting_after': expected an integer, got '%.40s'.", after);
        return;
    }
    tg_buf out = {0};
    tg_responses_replay(resp, (json_int_t)from, &out);
    json_decref(resp);
    size_t len = 0;
    char *body = tg_buf_steal(&out, &len);
    set_answer(r, 200, body ? body : tg_strdup(""), len, false);
    r->answer.type = "text/event-stream";
}

static void answer_items(tg_req *r, const json_t *rec, const char *id)
{
    if (!held(rec)) {
        not_found(r, id);
        return;
    }
    if (!json_is_array(json_object_get(rec, "input"))) {
        set_error(r, 404, "invalid_request_error", "input_items_not_kept", NULL,
                  "Input items of response '%.200s' not found: toolgate keeps the input of "
                  "responses that a later previous_response_id can continue (the first turn, "
                  "or one naming previous_response_id); this client sent its whole history, "
                  "which it holds itself (docs/bridges.md)", id);
        return;
    }
    tg_resp_list_query q = {.after = arg(r, "after"), .before = arg(r, "before"),
                            .order = arg(r, "order"), .limit = arg(r, "limit")};
    json_t *list = NULL;
    tg_error err;
    if (tg_responses_input_list(rec, &q, &list, &err)) {
        set_error_from(r, &err);
        return;
    }
    answer_json(r, 200, list);
}

/* A tombstone under the response's id and each of its items' ids, which
 * every later lookup takes for a missing entry. */
static void answer_delete(tg_req *r, const json_t *rec, const char *id)
{
    if (!held(rec)) {
        not_found(r, id);
        return;
    }
    tg_store *st = r->w->srv->items;
    json_t *ids = json_array();
    json_array_append_new(ids, json_string(id));
    size_t i;
    const json_t *item;
    json_array_foreach(json_object_get(rec, "output"), i, item) {
        const json_t *v = json_object_get(item, "id");
        if (json_is_string(v))
            json_array_append(ids, (json_t *)v);
    }
    json_t *v;
    json_array_foreach(ids, i, v) {
        json_t *t = tg_responses_tombstone(json_string_value(v));
        char *text = tg_json_dumps(t);
        json_decref(t);
        if (tg_store_put(st, r->w->id, r->client.owner, json_string_value(v), text))
            tg_metrics_store_error(r->w->metrics, "put");
        free(text);
    }
    json_decref(ids);
    answer_json(r, 200, json_pack("{s:s, s:s, s:b}", "id", id, "object", "response.deleted",
                                  "deleted", 1));
}

static void answer_cancel(tg_req *r, const json_t *rec, const char *id)
{
    if (!held(rec)) {
        not_found(r, id);
        return;
    }
    set_error(r, 400, "invalid_request_error", NULL, NULL,
              "Only responses created with background=true can be cancelled; response "
              "'%.200s' was not (toolgate's bridge to chat completions runs no background "
              "responses).", id);
}

static void on_read(void *ud, const tg_store_got *got)
{
    tg_req *r = ud;
    r->prep.fetching = false;
    if (got->status == TG_STORE_DOWN) {
        r->prep.fetch_down = true;
        tg_metrics_store_error(r->w->metrics, "get");
    } else if (got->n && got->texts[0]) {
        json_t *v = tg_json_load(got->texts[0], strlen(got->texts[0]), 0, NULL);
        if (v)
            json_object_set_new(r->prep.fetched, "record", v);
    }
    req_resume(r);
    req_unref(r);
}

/* The record under id: 1 while a store on the loop reads it, else 0 with
 * *rec (new reference, or NULL: not held) or -1 when the store is down. */
static int read_record(tg_req *r, const char *id, json_t **rec)
{
    tg_store *st = r->w->srv->items;
    *rec = NULL;
    if (r->prep.fetched) {  /* read on the loop, and dispatched again */
        if (r->prep.fetching)
            return 1;
        if (r->prep.fetch_down)
            return -1;
        *rec = json_incref(json_object_get(r->prep.fetched, "record"));
        return 0;
    }
    if (st->ops->fetch) {
        r->prep.fetched = json_object();
        r->prep.fetching = true;
        const char *ids[1] = {id};
        st->ops->fetch(st, r->w->id, r->client.owner, ids, 1, NULL, 0,
                       now_us() + (uint64_t)TG_STORE_BUDGET_MS * 1000, on_read, req_ref(r));
        return r->prep.fetching ? 1 : read_record(r, id, rec);
    }
    char *text = NULL;
    if (tg_store_get(st, r->w->id, r->client.owner, id, &text) == TG_STORE_DOWN) {
        tg_metrics_store_error(r->w->metrics, "get");
        return -1;
    }
    *rec = text ? tg_json_load(text, strlen(text), 0, NULL) : NULL;
    free(text);
    return 0;
}

int stored_route(tg_req *r, const tg_route *by_prefix)
{
    char id[256];
    int op = parse_path(r->client.rest, r->client.method, id, sizeof id);
    const tg_route *rt = op < 0 ? NULL : bridging_route(r->conf, by_prefix);
    if (!rt)
        return 0;
    r->route = rt;
    r->client.owner = item_owner(r, rt);
    json_t *rec = NULL;
    int k = read_record(r, id, &rec);
    if (k > 0)
        return 1;
    if (k < 0) {
        tg_store *st = r->w->srv->items;
        set_error(r, 503, "api_error", "store_unavailable", NULL,
                  "response '%.200s' cannot be read now: the store of Responses "
                  "([server] responses_store, %s) cannot be reached, or did not answer within "
                  "%d ms; retry", id, st->name, TG_STORE_BUDGET_MS);
        return -1;
    }
    if (!held(rec) && !by_prefix && rt != &r->conf->routes[0]) {
        json_decref(rec);  /* the first route's provider may hold it */
        r->route = &r->conf->routes[0];
        return 0;
    }
    switch (op) {
    case SR_GET: answer_get(r, rec, id); break;
    case SR_ITEMS: answer_items(r, rec, id); break;
    case SR_DELETE: answer_delete(r, rec, id); break;
    default: answer_cancel(r, rec, id); break;
    }
    json_decref(rec);
    return -1;
}
