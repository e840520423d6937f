/* prepare.c -- what goes upstream: a request's body prepared for its route.
 *
 * Three ways, by what the client sent (proxy/front.c picks one): a chat
 * request is parsed, routed by model (or by its path's prefix) and run
 * through the request stages for its route (prepare_chat, prepare_route);
 * a request of an agent API is first made a chat request by its bridge,
 * or, on a route whose provider has the API itself, passed with only the
 * agent's private markers taken out (prepare_bridged); any other /v1 path
 * goes as it came (prepare_plain). A fallback (proxy/upstream.c) prepares
 * the same request again for another route (prepare_route). Each leaves
 * an error answer in r when it refuses.
 */
#include "proxy/prepare.h"

#include "core/alloc.h"
#include "core/decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/cache.h"
#include "bridge/bridge.h"
#include "core/jsonio.h"
#include "proxy/bridges.h"
#include "proxy/embed_wait.h"
#include "proxy/log.h"
#include "proxy/metrics.h"

static void route_list(const tg_conf *c, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < c->n_routes && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, "%s%s", i ? ", " : "", c->routes[i].name);
}

/* A route whose api_key named an unset variable (conf.c: api_key_var)
 * forwards the client's own provider key; without one the provider's
 * answer would be a bare 401, or a 502 from a provider toolgate cannot
 * reach: the error names the variable to set instead. A client's key is
 * any credential header that is not toolgate's own client key (http.c). */
static int refuse_keyless(tg_req *r, const tg_route *route)
{
    static const char *const creds[] = {"x-upstream-authorization", "authorization",
                                        "x-api-key", "api-key", "x-goog-api-key", NULL};
    if (!route->api_key_var || route->api_key)
        return 0;
    for (const char *const *h = creds; *h; h++) {
        const char *v = client_header(r, *h);
        if (v && *v && !(r->client.key && strstr(v, r->client.key)))
            return 0;
    }
    set_error(r, 401, "invalid_request_error", "missing_api_key", NULL,
              "route '%s' has no provider key: its api_key is ${%s}, which is unset or empty in "
              "toolgate's environment; set %s and restart toolgate, or send your own key in "
              "x-upstream-authorization",
              route->name, route->api_key_var, route->api_key_var);
    return -1;
}

/* The body is read and rewritten, so it is decoded first when it came
 * compressed (core/decode.h: Codex sends zstd bodies, and the APIs take
 * them): within max_body decoded, its growth charged to max_body_memory;
 * what goes upstream is the plain body (Content-Encoding is not passed). An
 * unknown coding is a 415, bytes that are not their coding a 400, a body
 * past max_body decoded a 413, each naming what it was. */
static int body_plain(tg_req *r)
{
    const char *enc = client_header(r, "content-encoding");
    if (!enc || !*enc || !strcasecmp(enc, "identity") || r->client.decoded)
        return 0;
    tg_buf out = {0};
    const tg_buf *in = &r->client.body;
    int rc = tg_decode_body(enc, in->data ? in->data : "", in->len, r->conf->max_body, &out);
    if (rc == TG_DECODE_OK && out.len > r->client.body_charge &&
        !body_charge(r, out.len - r->client.body_charge)) {
        tg_buf_free(&out);
        set_error(r, 503, "server_error", "overloaded", NULL,
                  "toolgate holds max_body_memory (%zu bytes) of request bodies at once; retry "
                  "shortly", r->conf->max_body_memory);
        return -1;
    }
    if (rc != TG_DECODE_OK) {
        tg_buf_free(&out);
        if (rc == TG_DECODE_UNKNOWN)
            set_error(r, 415, "invalid_request_error", "unsupported_content_encoding", NULL,
                      "request body has Content-Encoding '%.64s': toolgate decodes zstd, gzip "
                      "and deflate only",
                      enc);
        else if (rc == TG_DECODE_TOO_LARGE)
            set_error(r, 413, "invalid_request_error", "request_too_large", NULL,
                      "request body, decoded from '%.64s', is larger than max_body (%zu bytes)",
                      enc, r->conf->max_body);
        else
            set_error(r, 400, "invalid_request_error", "invalid_content_encoding", NULL,
                      "request body is not valid '%.64s' data (its Content-Encoding)", enc);
        return -1;
    }
    tg_buf_free(&r->client.body);
    r->client.body = out;
    r->client.decoded = true;
    return 0;
}

/* A token count on a route that bridges the API: the chat provider counts
 * none without generating, so toolgate answers an estimate, and says so
 * (X-Toolgate-Estimate), rather than leave the agent without a count. */
static void answer_estimate(tg_req *r, const json_t *body)
{
    json_t *a = r->prep.api->count_estimate(body);
    tg_buf out = {0};
    tg_json_dump(a, &out);
    json_decref(a);
    size_t len;
    char *text = tg_buf_steal(&out, &len);
    set_answer(r, 200, text, len, false);
    r->answer.type = "application/json";
    r->prep.estimate = "input_tokens";
}

/* A request of an agent API (r->prep.api): on a route that bridges it, the body
 * becomes a chat request that goes the chat way, and the answer is turned
 * back on its way out. Returns 0 for the chat way, 1 when the route's
 * provider takes the request as it is (r->route set), 2 while what it
 * names is read from the store (bridge_api.prefetch: the request waits,
 * and comes here again), -1 with an answer in r. */
int prepare_bridged(tg_req *r, const tg_route *by_prefix, bool pass_only)
{
    tg_error err;
    uint64_t hash;
    size_t bytes;
    if (body_plain(r))
        return -1;
    const tg_buf *in = &r->client.body;
    json_t *body = tg_request_parse(in->data ? in->data : "", in->len, NULL, r->conf->max_depth,
                                    &hash, &bytes, &err);
    if (!body) {
        set_error_from(r, &err);
        return -1;
    }
    note_client_model(r, body);
    char path_model[256];  /* Gemini's is in the path */
    const char *model = r->prep.api->model_of
                            ? r->prep.api->model_of(r, path_model, sizeof path_model)
                            : json_string_value(tg_json_get(body, "model"));
    if (r->prep.api->model_of && model) {  /* the access line names it too */
        free(r->client.model);
        r->client.model = tg_strdup(model);
    }
    const tg_route *route = by_prefix ? by_prefix : model ? tg_route_by_model(r->conf, model) : NULL;
    if (route && !r->prep.api->bridges(route)) {
        if (r->prep.api->strip_markers(body, route->strip_prefix)) {
            tg_buf_reset(&r->client.body);
            tg_json_dump(body, &r->client.body);
        }
        json_decref(body);
        r->route = route;
        return refuse_keyless(r, route) ? -1 : 1;
    }
    if (pass_only) {  /* an endpoint with no chat form */
        if (!route) {
            char routes[512];
            route_list(r->conf, routes, sizeof routes);
            set_error(r, 404, "invalid_request_error", "model_not_found", "model",
                      "no route for model '%s' (routes tried, in order: %s)", model ? model : "",
                      routes);
            json_decref(body);
            return -1;
        }
        if (r->prep.api->count_estimate) {
            r->route = route;
            answer_estimate(r, body);
            json_decref(body);
            return -1;
        }
        json_decref(body);
        set_error(r, 404, "invalid_request_error", "unsupported_endpoint", NULL,
                  "%s%s: route '%s' bridges %s over the provider's chat completions, which "
                  "count no tokens without generating; this endpoint is answered on routes that "
                  "pass the API through to a provider that has it",
                  r->prep.api->name, r->client.rest + strlen(r->prep.api->name), route->name,
                  r->prep.api->name);
        return -1;
    }
    json_t *chat = NULL;
    if (route)  /* the route picked, for the log of a request refused below */
        r->route = route;
    r->client.owner = item_owner(r, route);
    if (r->prep.api->prefetch && r->prep.api->prefetch(r, body) > 0) {
        json_decref(body);  /* read again when what it names is in */
        return 2;
    }
    int rc = r->prep.api->to_chat(r, route, body, &chat, &err);
    json_decref(body);
    if (rc) {
        set_error_from(r, &err);
        return -1;
    }
    note_dropped(r);
    /* from here on the chat request is the client's body: a fallback
     * rewrites it again for its own route, and prepare_chat reads it like
     * any chat body, so the worker's tool-list cache (keyed by the tools'
     * bytes, which the conversion writes the same every turn) serves it */
    tg_buf_reset(&r->client.body);
    tg_json_dump(chat, &r->client.body);
    json_decref(chat);
    return 0;
}

/* Build the upstream body for a chat request: parse, route, run the request
 * stages. Leaves an answer in r on error. */
int prepare_chat(tg_req *r, const tg_route *by_prefix)
{
    const tg_conf *c = r->conf;
    tg_error err;
    if (body_plain(r))
        return -1;
    const tg_buf *in = &r->client.body;
    json_t *body = tg_request_parse(in->data ? in->data : "", in->len, r->w->cache, c->max_depth,
                                    &r->prep.tools_hash, &r->prep.tools_bytes, &err);
    if (!body) {
        set_error_from(r, &err);
        return -1;
    }
    r->json = body;
    r->client.stream = tg_json_is(tg_json_get(body, "stream"), JSON_TRUE);
    /* the route first: a request refused below is logged with it */
    const char *model = json_string_value(tg_json_get(body, "model"));
    r->route = by_prefix ? by_prefix : (model ? tg_route_by_model(c, model) : NULL);
    /* An agent resends its tool list every turn: once a list (by its bytes'
     * hash) has passed, its entries are not walked again. */
    uint64_t th = r->prep.tools_hash;
    json_t *ok = th ? tg_cache_get(r->w->cache, "toolsok", th) : NULL;
    bool checked = ok != NULL;
    json_decref(ok);
    if (tg_validate_chat_request(body, c->max_tools, checked, &err)) {
        set_error_from(r, &err);
        return -1;
    }
    if (r->prep.tools_hash && !checked)
        tg_cache_put(r->w->cache, "toolsok", r->prep.tools_hash, json_true(), 16);
    if (!r->route) {
        char routes[512];
        route_list(c, routes, sizeof routes);
        set_error(r, 404, "invalid_request_error", "model_not_found", "model",
                  "no route for model '%s' (routes tried, in order: %s)", model ? model : "",
                  routes);
        return -1;
    }
    if (refuse_keyless(r, r->route))  /* not on a fallback: its error would hide the first's */
        return -1;
    if (sig_prefetch(r, r->route, body) > 0) {
        json_decref(r->json);  /* read again when the kept fields are in */
        r->json = NULL;
        return 1;
    }
    return prepare_route(r, r->route);
}

/* ---- discovery's embeddings calls ----------------------------------------
 *
 * discovery_embeddings = ROUTE:MODEL: search_tools ranks with ROUTE's
 * embeddings (discovery/embed.c). Every call runs on the worker's loop
 * (proxy/embed_wait.c): the catalog's before the request goes upstream,
 * a round's search phrasings when the round has ended, whole or streamed,
 * all within the request's one embeddings budget. So the embedder the
 * search asks only reads what is in: a text not embedded so (past the
 * budget, or more phrasings in one turn than one wave of calls carries) is
 * no call on the worker thread but a fallback to BM25, counted. */
static json_t *embed_post(tg_embedder *self, json_t *body, tg_embed_fail *why)
{
    json_t *known = embed_known_answer(self->ud, body);
    if (!known)
        self->calls--;  /* counted by the search, and not made */
    *why = embed_budget_left_ms(self->ud) > 0 ? TG_EMB_TOO_BIG : TG_EMB_TIMEOUT;
    return known;
}

void embed_report(tg_req *r)
{
    tg_embedder *e = &r->prep.embedder;
    tg_metrics_embed(r->w->metrics, e->calls, e->fallbacks, e->fallbacks ? e->cause : TG_EMB_N);
    if (!e->fallbacks || (r->w->embed_warned & (1u << e->cause)))
        return;
    r->w->embed_warned |= 1u << e->cause;
    const tg_route *from = r->prep.embed_from;
    const tg_route *er = tg_route_by_name(r->conf, from->rules.disc.embed_route);
    tg_log(TG_LOG_WARN,
           "request %s: route %s: discovery_embeddings %s:%s failed (%s, upstream %s); "
           "search_tools ranked by BM25 alone (logged once per cause)",
           r->id, from->name, from->rules.disc.embed_route, from->rules.disc.embed_model,
           tg_embed_fail_name(e->cause), er ? er->upstream_shown : "-");
}

/* ---- the body for its route ----------------------------------------------- */

/* curl sends a body it is given whole (POSTFIELDS) of under 64 KB in the
 * same send as the request's head; a body read through on_upstream_read
 * goes in a send of its own. So a small body's head, tools' text and tail
 * are joined into one: one system call fewer a request (issue 20). */
#define JOIN_BODY_MAX (60 * 1024)

static void join_small_body(tg_req *r)
{
    if (!r->up.tools || up_body_len(r) > JOIN_BODY_MAX)
        return;
    tg_buf_append(&r->up.body, json_string_value(r->up.tools), json_string_length(r->up.tools));
    tg_buf_append(&r->up.body, TG_REQUEST_TAIL, TAIL_LEN);
    json_decref(r->up.tools);
    r->up.tools = NULL;
}

/* What the request stages gave upstream in another form (a chat custom
 * tool as a function, sanitize/custom.h; a forced tool_choice as "auto" on
 * Moonshot while thinking, rule 78): said like a bridge's translations
 * (X-Toolgate-Translated, the log, toolgate_bridge_translated_total). A
 * bridged request has no chat custom tools, so its own note stands. */
static void note_chat_translated(tg_req *r)
{
    size_t n = tg_bridge_dropped_count(r->ctx.translated);
    if (!n)
        return;
    free(r->prep.translated);
    r->prep.translated = tg_bridge_dropped_text(r->ctx.translated);
    tg_metrics_translated(r->w->metrics, n);
    tg_log(TG_LOG_INFO, "request %s: route %s: sent upstream in another form: %s",
           r->id, r->route->name, r->prep.translated ? r->prep.translated : "");
}

/* ---- opaque fields of tool calls, kept across turns ----------------------
 *
 * A provider may put fields on a tool call that must come back with it
 * (Gemini 3's extra_content.google.thought_signature: a replayed call
 * without it is refused, "Function call is missing a thought_signature").
 * Many clients rebuild their messages from their own types and drop them,
 * and Claude Code over the Messages bridge cannot carry them at all. So
 * the calls an answer gives the agent leave their fields in the item store
 * (ctx->opaque_out, filled by the repair stage) under (owner, "sig:" +
 * call id), bounded by owner (and expiring, with Redis), and a replayed
 * call of the current turn that comes without them gets them back before
 * the request stages run. The memory store is read where it is needed; a
 * store on the worker's loop (Redis) is read before: sig_prefetch asks for
 * the current turn's call ids in one fetch, the request waits like one
 * whose items are read (the worker serves others), and the restore finds
 * them in r->prep.sigs. A put is sent and not waited for. What the store does
 * not have is left to the hygiene stage (fill_signatures: Google's
 * documented stand-in, recorded as thought-signature-fill). Only on routes
 * that keep signatures (messages.keep_signatures). */
#define SIG_PREFIX "sig:"
#define SIG_LOOKUPS_MAX 32  /* store reads a request, the current turn's calls */
#define SIG_TEXT_MAX (64 * 1024)

static bool keeps_signatures(const tg_route *route)
{
    return route && (route->rules.msg.flags & TG_MR_KEEP_SIGNATURE);
}

static bool has_opaque(const json_t *call)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)call, k, v)
        if (strcmp(k, "id") && strcmp(k, "type") && strcmp(k, "function") && strcmp(k, "index"))
            return true;
    return false;
}

/* The store key of a call's kept fields, or false for a call that has
 * them already or no id worth a look-up. */
static bool sig_key(const json_t *call, char key[300])
{
    const char *id = json_string_value(tg_json_get(call, "id"));
    if (!json_is_object(call) || !id || !*id || strlen(id) > 256 || has_opaque(call))
        return false;
    snprintf(key, 300, SIG_PREFIX "%s", id);
    return true;
}

/* The index of the first message of the current turn (after the last
 * user message): its calls are the ones the provider checks. */
static size_t turn_start(const json_t *msgs)
{
    size_t i = json_array_size(msgs);
    while (i > 0) {
        const char *role = json_string_value(tg_json_get(json_array_get(msgs, i - 1), "role"));
        if (role && !strcmp(role, "user"))
            break;
        i--;
    }
    return i;
}

/* The keys of the current turn's calls that came without their fields,
 * SIG_LOOKUPS_MAX at most (a new array). */
static json_t *sig_keys(const json_t *body)
{
    json_t *msgs = tg_json_get(body, "messages"), *keys = json_array();
    for (size_t i = turn_start(msgs); i < json_array_size(msgs); i++) {
        json_t *calls = tg_json_get(json_array_get(msgs, i), "tool_calls");
        for (size_t k = 0; k < json_array_size(calls); k++) {
            char key[300];
            if (json_array_size(keys) < SIG_LOOKUPS_MAX && sig_key(json_array_get(calls, k), key))
                json_array_append_new(keys, json_string(key));
        }
    }
    return keys;
}

static void on_sigs(void *ud, const tg_store_got *got)
{
    tg_req *r = ud;
    r->prep.sigs_fetching = false;
    if (got->status == TG_STORE_DOWN) {
        tg_metrics_store_error(r->w->metrics, "get");  /* hygiene's stand-in then */
    } else {
        json_t *keys = tg_json_get(r->prep.sigs, "");
        for (size_t i = 0; i < got->n && i < json_array_size(keys); i++) {
            json_t *o = got->texts[i] && strlen(got->texts[i]) <= SIG_TEXT_MAX
                            ? tg_json_load(got->texts[i], strlen(got->texts[i]), 0, NULL)
                            : NULL;
            if (json_is_object(o))
                json_object_set(r->prep.sigs, json_string_value(json_array_get(keys, i)), o);
            json_decref(o);
        }
    }
    json_object_del(r->prep.sigs, "");
    req_resume(r);  /* no-op when it ended before the request was suspended */
    req_unref(r);
}

int sig_prefetch(tg_req *r, const tg_route *route, const json_t *body)
{
    tg_store *st = r->w->srv->items;
    if (!st->ops->fetch || r->prep.sigs || !keeps_signatures(route))
        return 0;
    json_t *keys = sig_keys(body);
    size_t n = json_array_size(keys);
    r->prep.sigs = json_object();
    r->prep.sigs_for = route;
    if (!n) {
        json_decref(keys);
        return 0;
    }
    const char *ids[SIG_LOOKUPS_MAX];
    for (size_t i = 0; i < n; i++)
        ids[i] = json_string_value(json_array_get(keys, i));
    json_object_set_new(r->prep.sigs, "", keys);  /* the order asked, until the answer */
    r->prep.sigs_fetching = true;
    st->ops->fetch(st, r->w->id, item_owner(r, route), ids, n, NULL, 0,
                   now_us() + (uint64_t)TG_STORE_BUDGET_MS * 1000, on_sigs, req_ref(r));
    return r->prep.sigs_fetching ? 1 : 0;
}

/* One call's kept fields: from what the loop read (a store on the loop),
 * or from the memory store; -1 when the store cannot be reached. */
static int restore_call(tg_req *r, uint64_t owner, json_t *call, unsigned *n)
{
    char key[300], *text = NULL;
    if (!sig_key(call, key))
        return 0;
    json_t *o = NULL;
    if (r->w->srv->items->ops->fetch) {
        o = json_incref(json_object_get(r->prep.sigs, key));
    } else {
        if (tg_store_get(r->w->srv->items, r->w->id, owner, key, &text) == TG_STORE_DOWN) {
            tg_metrics_store_error(r->w->metrics, "get");
            return -1;
        }
        o = text ? tg_json_load(text, strlen(text), 0, NULL) : NULL;
        free(text);
    }
    if (json_is_object(o)) {
        json_object_update_missing(call, o);
        (*n)++;
    }
    json_decref(o);
    return 0;
}

/* The assistant calls after the last user turn: the ones the provider checks. */
static void restore_signatures(tg_req *r, const tg_route *route, json_t *body)
{
    if (!keeps_signatures(route) ||
        (r->w->srv->items->ops->fetch && (!r->prep.sigs || r->prep.sigs_for != route)))
        return;  /* a store on the loop read nothing for this route (its owner) */
    json_t *msgs = tg_json_get(body, "messages");
    size_t i = turn_start(msgs);
    uint64_t owner = 0;  /* two SHA-256: only when a call is looked up (most turns have none) */
    unsigned looked = 0, found = 0;
    for (; i < json_array_size(msgs); i++) {
        json_t *calls = tg_json_get(json_array_get(msgs, i), "tool_calls");
        for (size_t k = 0; k < json_array_size(calls) && looked < SIG_LOOKUPS_MAX; k++) {
            json_t *c = json_array_get(calls, k);
            if (!json_is_object(c) || has_opaque(c))
                continue;
            if (!looked++)
                owner = item_owner(r, route);
            if (restore_call(r, owner, c, &found))
                return;  /* the store is away: hygiene's stand-in then */
        }
    }
    if (found)
        tg_metrics_signatures_restored(r->w->metrics, found);
    if (found)
        tg_log(TG_LOG_INFO,
               "request %s: route %s: %u replayed tool call(s) came without the fields the "
               "provider put on them (thought signature); restored from the store",
               r->id, route->name, found);
}

void keep_signatures(tg_req *r)
{
    if (!r->ctx_live || !r->ctx.opaque_out ||
        !keeps_signatures(r->route))  /* elsewhere hygiene drops them */
        return;
    uint64_t owner = item_owner(r, r->route);
    const char *id;
    json_t *v;
    json_object_foreach(r->ctx.opaque_out, id, v) {
        char key[300], *text = tg_json_dumps(v);
        snprintf(key, sizeof key, SIG_PREFIX "%.256s", id);
        if (text && strlen(text) <= SIG_TEXT_MAX &&
            tg_store_put(r->w->srv->items, r->w->id, owner, key, text))
            tg_metrics_store_error(r->w->metrics, "put");
        free(text);
    }
    json_decref(r->ctx.opaque_out);
    r->ctx.opaque_out = NULL;  /* kept once, whichever end comes first */
}

/* Run the request stages for `route` over the client's body and keep the
 * bytes to send. A fallback runs this again from the original bytes, so
 * the other route gets a request rewritten for its own dialect. */
int prepare_route(tg_req *r, const tg_route *route)
{
    tg_error err;
    json_t *body = r->json;
    if (r->ctx_live) {  /* second time: the first run edited r->json in place */
        tg_ctx_clear(&r->ctx);
        r->ctx_live = false;
        body = tg_request_parse(r->client.body.data, r->client.body.len, r->w->cache,
                                r->conf->max_depth, &r->prep.tools_hash, &r->prep.tools_bytes,
                                &err);
        if (!body)
            return -1;
        json_decref(r->json);
        r->json = body;
    }
    r->route = route;
    tg_ctx_init(&r->ctx, route->name, &route->rules, route->strip_prefix);
    r->ctx_live = true;
    r->ctx.cache = r->w->cache;
    r->ctx.tools_hash = r->prep.tools_hash;
    if (route->rules.disc.embed_route) {
        r->prep.embedder = (tg_embedder){.post = embed_post, .ud = r};
        r->prep.embed_from = route;
        r->ctx.embedder = &r->prep.embedder;
    }
    r->ctx.stats.tools_bytes_in = r->prep.tools_bytes;
    tg_route_rewrite_model(route, body);
    restore_signatures(r, route, body);
    if (tg_pipeline_request(body, &r->ctx, &err)) {
        set_error_from(r, &err);
        return -1;
    }
    if (json_array_size(r->ctx.dropped)) {  /* rules 56, 67, 75: said, not refused */
        char *names = tg_json_dumps(r->ctx.dropped);
        tg_metrics_dropped(r->w->metrics, json_array_size(r->ctx.dropped));
        tg_log(TG_LOG_INFO, "request %s: route %s: parameters its target refuses left out: %s",
               r->id, route->name, names ? names : "?");
        free(names);
    }
    note_chat_translated(r);
    upstream_headers_free(r);  /* the api_key may differ between routes */
    up_body_free(r);
    /* a small body, tools' text joined (join_small_body), is about the
     * size the client sent: one allocation, not a doubling series. A large
     * one's head leaves the tools out and is sized by doubling. */
    if (r->client.body.len <= JOIN_BODY_MAX)
        tg_buf_reserve(&r->up.body, r->client.body.len + r->client.body.len / 4 + 64);
    if (tg_request_dump_split(body, &r->ctx, &r->up.body, &r->up.tools)) {
        /* a value JSON cannot say (jsonio.h); memory cannot fail (tg.h) */
        set_error(r, 500, "server_error", NULL, NULL,
                  "the request for route %s could not be written as JSON", route->name);
        return -1;
    }
    join_small_body(r);
    if (!r->ctx.request)
        r->ctx.request = json_incref(body);
    return 0;
}

/* A request passed as it came (an agent API on a route that passes it,
 * any other /v1 path): the client's body is the upstream body. */
void prepare_plain(tg_req *r)
{
    up_body_free(r);
    tg_buf_append(&r->up.body, r->client.body.data ? r->client.body.data : "", r->client.body.len);
}
