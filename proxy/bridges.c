/* bridges.c -- the agent APIs' glue: the bridge_api rows of the Responses
 * API and of Anthropic's Messages API, the item store's calls, and what
 * turns a chat answer (whole or streamed) back into the API's shape.
 *
 * The bridges themselves (bridge/) know nothing of requests or sockets;
 * this file gives them a request's pieces: the route's options, the
 * worker's ids, the store of Responses items (proxy/store.h) and whose
 * items a request may read (item_owner). The layers above reach an API
 * only through r->prep.api, a row of the table below, and the few
 * functions of proxy/bridges.h.
 */
#include "proxy/bridges.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/gemini_api.h"
#include "bridge/messages_api.h"
#include "bridge/models.h"
#include "bridge/responses_api.h"
#include "core/alloc.h"
#include "core/jsonio.h"
#include "proxy/log.h"

/* What the store held under an id (new reference), or NULL for a
 * tombstone that DELETE /v1/responses/{id} left (proxy/stored.c). */
static json_t *live(json_t *v)
{
    const char *type = json_string_value(json_object_get(v, "type"));
    if (type && !strcmp(type, TG_RESP_DELETED)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

/* An item_reference answered from the store; when the store cannot be
 * reached the client is told so (a 503 it may retry), never that its item
 * does not exist. */
static json_t *stored_item(void *ud, const char *id, tg_error *err)
{
    tg_req *r = ud;
    tg_store *st = r->w->srv->items;
    char *text = NULL;
    if (r->prep.fetched && !r->prep.fetch_down) {  /* read before, on the loop */
        json_t *v = json_object_get(r->prep.fetched, id);
        return v ? live(json_incref(v)) : NULL;
    }
    if (r->prep.fetch_down ||
        tg_store_get(st, r->w->id, r->client.owner, id, &text) == TG_STORE_DOWN) {
        if (!r->prep.fetch_down)  /* a failed fetch was counted when it ended */
            tg_metrics_store_error(r->w->metrics, "get");
        tg_error_set(err, 503, "api_error", "store_unavailable", "input",
                     "input: item_reference '%.80s' cannot be answered now: the store of "
                     "Responses items ([server] responses_store, %s) cannot be reached, or "
                     "did not answer within the request's store budget (%d ms); retry, or "
                     "send the item itself (store: false)", id, st->name, TG_STORE_BUDGET_MS);
        return NULL;
    }
    json_t *item = text ? tg_json_load(text, strlen(text), 0, NULL) : NULL;
    free(text);
    return live(item);
}

/* ids (a new array): the item_references of input items not in have
 * and not yet in the list. */
static void references(const json_t *input, const json_t *have, json_t *ids, json_t *seen)
{
    size_t i;
    const json_t *it;
    json_array_foreach(input, i, it) {
        const char *type = json_string_value(json_object_get(it, "type"));
        const char *id = json_string_value(json_object_get(it, "id"));
        if (type && id && !strcmp(type, "item_reference") && !json_object_get(have, id) &&
            !json_object_get(seen, id)) {
            json_object_set_new(seen, id, json_true());
            json_array_append_new(ids, json_string(id));
        }
    }
}

static void on_fetched(void *ud, const tg_store_got *got);

/* One fetch of the ids in r->prep.fetch_ids and the chain from chain. */
static void fetch_now(tg_req *r, const char *chain)
{
    tg_store *st = r->w->srv->items;
    size_t n = json_array_size(r->prep.fetch_ids);
    const char **idv = tg_calloc(n ? n : 1, sizeof *idv);
    for (size_t i = 0; i < n; i++)
        idv[i] = json_string_value(json_array_get(r->prep.fetch_ids, i));
    r->prep.fetching = true;
    r->prep.fetch_rounds++;
    st->ops->fetch(st, r->w->id, r->client.owner, idv, n, chain, chain ? TG_STORE_CHAIN_MAX : 0,
                   r->prep.fetch_deadline, on_fetched, req_ref(r));
    free(idv);
}

/* A fetch of the store on the loop has ended (store.h): what it read is
 * parsed into r->prep.fetched. The records of a chain may reference items
 * of their own turns: those are read in one more round trip. Then the
 * request's dispatch runs again. */
static void on_fetched(void *ud, const tg_store_got *got)
{
    tg_req *r = ud;
    r->prep.fetching = false;
    json_t *more = json_array(), *seen = json_object();
    if (got->status == TG_STORE_DOWN) {
        r->prep.fetch_down = true;
        tg_metrics_store_error(r->w->metrics, "get");
    } else {
        for (size_t i = 0; i < got->n; i++) {
            json_t *v = got->texts[i] ? tg_json_load(got->texts[i], strlen(got->texts[i]), 0, NULL)
                                      : NULL;
            if (v)
                json_object_set_new(r->prep.fetched, json_string_value(json_array_get(
                                                         r->prep.fetch_ids, i)), v);
        }
        for (size_t i = 0; i < got->n_chain; i++) {
            json_t *v = tg_json_load(got->chain_texts[i], strlen(got->chain_texts[i]), 0, NULL);
            references(json_object_get(v, "input"), r->prep.fetched, more, seen);
            if (v)
                json_object_set_new(r->prep.fetched, got->chain_ids[i], v);
        }
    }
    json_decref(seen);
    if (json_array_size(more) && r->prep.fetch_rounds < 2 && !r->client.gone) {
        json_decref(r->prep.fetch_ids);
        r->prep.fetch_ids = more;
        fetch_now(r, NULL);
    } else {
        json_decref(more);
        req_resume(r);  /* no-op when the fetch ended before the request was suspended */
    }
    req_unref(r);
}

/* The items a Responses request references and the chain its
 * previous_response_id starts, read from a store on the worker's loop in
 * a few round trips, while the worker serves others; the conversion then
 * finds them in r->prep.fetched (stored_item). */
static int responses_prefetch(tg_req *r, const json_t *body)
{
    tg_store *st = r->w->srv->items;
    if (!st->ops->fetch || r->prep.fetched)
        return 0;
    json_t *ids = json_array(), *seen = json_object();
    references(json_object_get(body, "input"), seen, ids, seen);
    json_decref(seen);
    const char *chain = json_string_value(json_object_get(body, "previous_response_id"));
    if (!json_array_size(ids) && !chain) {
        json_decref(ids);
        return 0;
    }
    r->prep.fetched = json_object();
    r->prep.fetch_ids = ids;
    r->prep.fetch_deadline = now_us() + (uint64_t)TG_STORE_BUDGET_MS * 1000;
    fetch_now(r, chain);
    return r->prep.fetching ? 1 : 0;
}

/* The route's choices, and what its target takes by its dialect: PDFs as
 * chat file parts (OpenAI's chat completions), cache_control
 * (Anthropic's), a discovery catalog. */
static tg_bridge_opts bridge_opts(tg_req *r, const tg_route *route)
{
    tg_dialect d = route ? route->rules.schema.dialect : TG_D_PASSTHROUGH;
    tg_bridge_opts o = {
        .refuse_hosted = route && route->refuse_hosted,
        .file_parts = route && (d == TG_D_OPENAI || d == TG_D_OPENAI_STRICT),
        .cache_control = route && d == TG_D_ANTHROPIC,
        .discovery = route && route->rules.disc.mode != TG_DISC_OFF,
        .discovery_above = route && route->rules.disc.mode == TG_DISC_AUTO
                               ? route->rules.disc.threshold : 0,
        .cache = r->w->cache,
    };
    return o;
}

/* The request's Responses bridge, named with ids unique past this
 * request (for the item store). */
static void take_resp_bridge(tg_req *r, tg_resp_bridge *b)
{
    char name[64];
    tg_request_id(name, sizeof name, &r->w->rng);
    tg_resp_bridge_name(b, name + 3);
    r->prep.bridge = b;
}

static int responses_to_chat(tg_req *r, const tg_route *route, const json_t *body, json_t **chat,
                             tg_error *err)
{
    tg_resp_bridge *b = NULL;
    tg_bridge_opts o = bridge_opts(r, route);
    if (tg_responses_to_chat_opts(body, &o, stored_item, r, chat, &b, err))
        return -1;
    take_resp_bridge(r, b);
    return 0;
}

/* The items of a bridged answer, kept where a later item_reference to
 * them is answered (bridge/itemstore.h). */
static void remember_items(tg_req *r)
{
    json_t *items = tg_responses_items(r->prep.bridge);
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item) {
        const char *id = json_string_value(json_object_get(item, "id"));
        char *text = id ? tg_json_dumps(item) : NULL;
        /* a store that cannot be reached only costs later references (a
         * 503 then): the answer goes out as it is */
        if (text && tg_store_put(r->w->srv->items, r->w->id, r->client.owner, id, text))
            tg_metrics_store_error(r->w->metrics, "put");
        free(text);
    }
    json_decref(items);
    /* and the record a later previous_response_id names (store: false
     * leaves none) */
    json_t *rec = tg_responses_record(r->prep.bridge);
    const char *rid = json_string_value(json_object_get(rec, "id"));
    char *text = rid ? tg_json_dumps(rec) : NULL;
    if (text && tg_store_put(r->w->srv->items, r->w->id, r->client.owner, rid, text))
        tg_metrics_store_error(r->w->metrics, "put");
    free(text);
    json_decref(rec);
}

static json_t *responses_answer(void *b, const json_t *c) { return tg_responses_answer(b, c); }

static void responses_stream(void *b, const char *sse, size_t n, tg_buf *out)
{
    tg_responses_stream(b, sse, n, out);
}

static void responses_stream_end(void *b, tg_buf *out) { tg_responses_stream_end(b, out); }

static void responses_free(void *b) { tg_resp_bridge_free(b); }

static const json_t *responses_dropped_peek(const void *b) { return tg_resp_bridge_dropped_peek(b); }

/* POST /v1/responses/input_tokens's answer (InputTokenCountResponse) */
static json_t *responses_count(const json_t *body)
{
    return json_pack("{s:s, s:I}", "object", "response.input_tokens", "input_tokens",
                     tg_responses_count_estimate(body));
}

static const bridge_api responses_api = {
    .name = "/v1/responses",
    .count_estimate = responses_count,
    .bridges = tg_route_bridges_responses,
    .strip_markers = tg_responses_strip_markers,
    .prefetch = responses_prefetch,
    .to_chat = responses_to_chat,
    .dropped = responses_dropped_peek,
    .answer = responses_answer,
    .stream = responses_stream,
    .stream_end = responses_stream_end,
    .done = remember_items,
    .free = responses_free,
};

/* POST /v1/responses/compact: a summary asked of the route's model
 * (bridge/responses_compact.c), no record kept. */
static int compact_to_chat(tg_req *r, const tg_route *route, const json_t *body, json_t **chat,
                           tg_error *err)
{
    tg_resp_bridge *b = NULL;
    tg_bridge_opts o = bridge_opts(r, route);
    if (tg_responses_compact_to_chat(body, &o, stored_item, r, chat, &b, err))
        return -1;
    take_resp_bridge(r, b);
    return 0;
}

static json_t *compact_answer(void *b, const json_t *c) { return tg_responses_compacted(b, c); }

static const bridge_api compact_api = {
    .name = "/v1/responses",
    .bridges = tg_route_bridges_responses,
    .strip_markers = tg_responses_strip_markers,
    .prefetch = responses_prefetch,
    .to_chat = compact_to_chat,
    .dropped = responses_dropped_peek,
    .answer = compact_answer,
    .stream = responses_stream,  /* never: the summary call is not streamed */
    .stream_end = responses_stream_end,
    .free = responses_free,
};

static int messages_to_chat(tg_req *r, const tg_route *route, const json_t *body, json_t **chat,
                            tg_error *err)
{
    tg_msg_bridge *b = NULL;
    tg_bridge_opts o = bridge_opts(r, route);
    if (tg_messages_to_chat_opts(body, &o, chat, &b, err))
        return -1;
    r->prep.bridge = b;
    return 0;
}

static json_t *messages_answer(void *b, const json_t *c) { return tg_messages_answer(b, c); }

static void messages_stream(void *b, const char *sse, size_t n, tg_buf *out)
{
    tg_messages_stream(b, sse, n, out);
}

static void messages_stream_end(void *b, tg_buf *out) { tg_messages_stream_end(b, out); }

static void messages_free(void *b) { tg_msg_bridge_free(b); }

static const json_t *messages_dropped_peek(const void *b) { return tg_msg_bridge_dropped_peek(b); }

static json_t *messages_count(const json_t *body)
{
    return json_pack("{s:I}", "input_tokens", tg_messages_count_estimate(body));
}

static const json_t *messages_translated_peek(const void *b)
{
    return tg_msg_bridge_translated_peek(b);
}

static const bridge_api messages_api = {
    .name = "/v1/messages",
    .key_header = "x-api-key",
    .own_query = true,
    .bridges = tg_route_bridges_messages,
    .strip_markers = tg_messages_strip_markers,
    .to_chat = messages_to_chat,
    .dropped = messages_dropped_peek,
    .translated = messages_translated_peek,
    .count_estimate = messages_count,
    .answer = messages_answer,
    .stream = messages_stream,
    .stream_end = messages_stream_end,
    .error_body = tg_messages_error_body,
    .free = messages_free,
};

bool gemini_sdk(tg_req *r)
{
    const char *c = client_header(r, "x-goog-api-client");
    return c && strstr(c, "genai-");
}

const bridge_api *api_of_gemini_sdk(tg_req *r)
{
    char model[8];
    return gemini_sdk(r) && tg_gemini_path(r->client.rest, true, model, sizeof model) != TG_GEM_NONE
               ? &gemini_api
               : NULL;
}

/* Gemini's API: the model and whether and how the answer streams are in
 * the path (MODEL:streamGenerateContent) and query (alt=sse). */
static const char *gemini_model(tg_req *r, char *buf, size_t cap)
{
    tg_gemini_path(r->client.rest, gemini_sdk(r), buf, cap);
    return *buf ? buf : NULL;
}

static int gemini_to_chat(tg_req *r, const tg_route *route, const json_t *body, json_t **chat,
                          tg_error *err)
{
    char model[256];
    tg_gem_method m = tg_gemini_path(r->client.rest, gemini_sdk(r), model, sizeof model);
    const char *alt = MHD_lookup_connection_value(r->client.conn, MHD_GET_ARGUMENT_KIND, "alt");
    tg_gemini_call call = {.model = model, .stream = m == TG_GEM_STREAM,
                           .sse = alt && !strcmp(alt, "sse")};
    tg_gem_bridge *b = NULL;
    tg_bridge_opts o = bridge_opts(r, route);
    if (tg_gemini_to_chat(body, &call, &o, chat, &b, err))
        return -1;
    r->prep.bridge = b;
    return 0;
}

static json_t *gemini_answer(void *b, const json_t *c) { return tg_gemini_answer(b, c); }

static void gemini_stream(void *b, const char *sse, size_t n, tg_buf *out)
{
    tg_gemini_stream(b, sse, n, out);
}

static void gemini_stream_end(void *b, tg_buf *out) { tg_gemini_stream_end(b, out); }

static void gemini_free(void *b) { tg_gem_bridge_free(b); }

static const json_t *gemini_dropped_peek(const void *b) { return tg_gem_bridge_dropped_peek(b); }

static const char *gemini_stream_type(const void *b) { return tg_gemini_stream_type(b); }

/* The SDK reads a streamed request's answer as a stream, whatever its
 * Content-Type: a whole chat answer goes as a stream one response long. */
static bool gemini_answer_stream(void *b, const json_t *c, tg_buf *out)
{
    if (!tg_gemini_streams(b))
        return false;
    tg_gemini_answer_stream(b, c, out);
    return true;
}

/* Nothing of Gemini's request is the agent's own: its body goes as it
 * came (markers are a chat-side convention). */
static size_t gemini_strip_markers(json_t *body, const char *prefix)
{
    (void)body;
    (void)prefix;
    return 0;
}

/* A passed request goes to Gemini's native API: the route's base without
 * the OpenAI-compatible endpoint's tail, then the client's path. */
static void gemini_pass_url(tg_req *r, tg_buf *u)
{
    tg_route_gemini_base(r->route, u);
    tg_append_path(u, r->client.rest);
}

const bridge_api gemini_api = {
    .name = "/v1beta/models",
    .key_header = "x-goog-api-key",
    .own_query = true,
    .bridges = tg_route_bridges_gemini,
    .strip_markers = gemini_strip_markers,
    .to_chat = gemini_to_chat,
    .dropped = gemini_dropped_peek,
    .answer = gemini_answer,
    .stream = gemini_stream,
    .stream_end = gemini_stream_end,
    .error_body = tg_gemini_error_body,
    .free = gemini_free,
    .model_of = gemini_model,
    .stream_type = gemini_stream_type,
    .answer_stream = gemini_answer_stream,
    .pass_url = gemini_pass_url,
};

/* The agent API a path (past the route prefix) belongs to, or NULL. */
const bridge_api *api_of(const char *rest)
{
    char model[8];
    if (tg_gemini_path(rest, false, model, sizeof model) != TG_GEM_NONE)
        return &gemini_api;
    if (!strcmp(rest, "/v1/responses") || !strcmp(rest, "/responses") ||
        !strcmp(rest, "/v1/responses/input_tokens") || !strcmp(rest, "/responses/input_tokens"))
        return &responses_api;
    if (!strcmp(rest, "/v1/responses/compact") || !strcmp(rest, "/responses/compact"))
        return &compact_api;
    if (!strcmp(rest, "/v1/messages") || !strcmp(rest, "/v1/messages/count_tokens"))
        return &messages_api;
    return NULL;
}

bool token_count_path(const char *rest)
{
    return !strcmp(rest, "/v1/messages/count_tokens") ||
           !strcmp(rest, "/v1/responses/input_tokens") || !strcmp(rest, "/responses/input_tokens");
}

const bridge_api *api_aimed_at(const char *rest)
{
    if (!strncmp(rest, "/v1beta/", 8))
        return &gemini_api;
    return !strncmp(rest, "/v1/messages", 12) ? &messages_api : NULL;
}

/* Headers that carry a provider credential, for item_owner and for the
 * forwarding rules (http.h). */
static const char *upstream_credential(tg_req *r)
{
    static const char *const names[] = {"x-upstream-authorization", "authorization", "x-api-key",
                                        "api-key", "x-goog-api-key", NULL};
    for (int i = 0; names[i]; i++) {
        const char *v = client_header(r, names[i]);
        if (v && *v && !(r->client.key && i == 1))
            return v;
    }
    return NULL;
}

/* Whose Responses items a request may read and leaves (itemstore.h): the
 * client key it matched when client_keys is set; else the provider
 * credential it carries, which is the client's identity at the provider;
 * else, with neither, everyone on the route alike. Hashed the same way in
 * every replica, so a shared store finds it (store.h tg_store_owner). */
uint64_t item_owner(tg_req *r, const tg_route *route)
{
    const char *cred = upstream_credential(r);
    const char *kind = r->client.key ? "key" : cred ? "credential" : "route";
    const char *v = r->client.key ? r->client.key : cred ? cred : route ? route->name : "";
    return tg_store_owner(kind, v);
}

/* What the bridge left out of the request (tools only the API's own
 * servers run...): said in X-Toolgate-Dropped, the log and the metrics,
 * so that an agent that keeps working without them is not left guessing. */
static void note_translated(tg_req *r)
{
    const json_t *t = r->prep.api->translated ? r->prep.api->translated(r->prep.bridge) : NULL;
    size_t n = tg_bridge_dropped_count(t);
    if (!n)
        return;
    free(r->prep.translated);
    r->prep.translated = tg_bridge_dropped_text(t);
    tg_metrics_translated(r->w->metrics, n);
    tg_log(TG_LOG_INFO, "request %s: %s bridge gave its chat upstream in another form: %s",
           r->id, r->prep.api->name, r->prep.translated ? r->prep.translated : "");
}

void note_dropped(tg_req *r)
{
    note_translated(r);
    const json_t *d = r->prep.api->dropped ? r->prep.api->dropped(r->prep.bridge) : NULL;
    size_t n = tg_bridge_dropped_count(d);
    if (!n)
        return;
    free(r->prep.dropped);
    r->prep.dropped = tg_bridge_dropped_text(d);
    /* hints (cache_control) change no answer: the header says them, and
     * only what the model misses is counted and logged */
    n -= json_array_size(json_object_get(d, TG_BRIDGE_HINTS));
    if (!n)
        return;
    tg_metrics_dropped(r->w->metrics, n);
    tg_log(TG_LOG_INFO, "request %s: %s bridge dropped what its chat upstream cannot run: %s",
           r->id, r->prep.api->name, r->prep.dropped ? r->prep.dropped : "");
}

/* A bridged request's whole answer: the chat answer (JSON, or SSE when the
 * agent asked for a stream) in the API's shape. */
void bridge_whole_answer(tg_req *r)
{
    if (r->answer.status < 200 || r->answer.status >= 300 || !r->answer.body)
        return;
    tg_buf out = {0};
    if (r->answer.type && strstr(r->answer.type, "event-stream")) {
        r->prep.api->stream(r->prep.bridge, r->answer.body, r->answer.len, &out);
        r->prep.api->stream_end(r->prep.bridge, &out);
        if (r->prep.api->stream_type)  /* Gemini's JSON array */
            r->answer.type = r->prep.api->stream_type(r->prep.bridge);
    } else {
        json_t *chat = tg_json_load(r->answer.body, r->answer.len, 0, NULL);
        if (!json_is_object(chat)) {
            json_decref(chat);
            return;
        }
        if (r->prep.api->answer_stream && r->prep.api->answer_stream(r->prep.bridge, chat, &out)) {
            json_decref(chat);
            r->answer.type = r->prep.api->stream_type(r->prep.bridge);
        } else {
            json_t *resp = r->prep.api->answer(r->prep.bridge, chat);
            json_decref(chat);
            tg_json_dump(resp, &out);
            json_decref(resp);
            r->answer.type = "application/json";
        }
    }
    free(r->answer.body);
    r->answer.body = tg_buf_steal(&out, &r->answer.len);
    if (r->prep.api->done)
        r->prep.api->done(r);
}

/* An error answer to a request of an API with its own error shape, bridged
 * or passed, toolgate's or the provider's, in that shape (an error already
 * in it goes as it came), so the API's clients show the message. */
void api_error_shape(tg_req *r)
{
    if (!r->prep.api || !r->prep.api->error_body || !r->answer.body ||
        (r->answer.status >= 200 && r->answer.status < 300))
        return;
    size_t len = 0;
    char *body = r->prep.api->error_body(r->answer.status, r->answer.body, r->answer.len, &len);
    if (!body)
        return;
    free(r->answer.body);
    r->answer.body = body;
    r->answer.len = len;
    r->answer.type = "application/json";
}

void bridge_stream_out(tg_req *r, bool end)
{
    if (!r->prep.bridge)
        return;
    tg_buf *chat = &r->stream.chat_out;
    r->prep.api->stream(r->prep.bridge, chat->data, chat->len, &r->stream.out);
    tg_buf_reset(&r->stream.chat_out);
    if (end) {
        r->prep.api->stream_end(r->prep.bridge, &r->stream.out);
        if (r->prep.api->done)
            r->prep.api->done(r);
    }
}

/* A passed-through stream cut short (upstream gone, a timeout, shutdown):
 * its end is an error event in the shape its API's clients read. */
void raw_stream_error(tg_req *r, const char *code, const char *msg)
{
    json_t *e;
    const char *event = "error";
    if (r->prep.api == &gemini_api) {  /* Gemini's: an error object as the data */
        e = json_pack("{s:{s:i, s:s, s:s}}", "error", "code", 500, "message", msg, "status",
                      "INTERNAL");
        event = NULL;
    } else if (r->prep.api && !strcmp(r->prep.api->name, "/v1/messages"))
        e = json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "type", "api_error",
                      "message", msg);
    else if (r->prep.api)  /* the Responses API's error event */
        e = json_pack("{s:s, s:s, s:s, s:n}", "type", "error", "code", code, "message", msg,
                      "param");
    else {
        event = NULL;
        e = json_pack("{s:{s:s, s:s, s:s}}", "error", "message", msg, "type", "upstream_error",
                      "code", code);
    }
    if (event) {
        tg_buf_puts(&r->stream.out, "event: ");
        tg_buf_puts(&r->stream.out, event);
        tg_buf_puts(&r->stream.out, "\n");
    }
    tg_buf_puts(&r->stream.out, "data: ");
    tg_json_dump(e, &r->stream.out);
    tg_buf_puts(&r->stream.out, "\n\n");
    json_decref(e);
}

/* ---- GET [prefix]/v1/models ----------------------------------------------
 *
 * Agents list models to fill a picker or check a name. A request is
 * Anthropic's when it carries anthropic-version or x-api-key (Claude Code,
 * @anthropic-ai/sdk), else OpenAI's. The list is the upstream's (the route
 * of the prefix, or the first route), which knows what it serves: passed
 * as it came in OpenAI's shape, or turned into Anthropic's; on a route
 * that passes /v1/messages an Anthropic request gets the provider's own.
 * toolgate answers from the conf instead where the upstream's list does
 * not name what agents send: a route with upstream_model (its models'
 * names are aliases), or an upstream that serves no list (an error
 * status): then the route's concrete model names (its models entries
 * without a glob character, else its upstream_model). */

#define MODELS_PATH "/v1/models"

static bool models_anthropic(tg_req *r)
{
    return client_header(r, "anthropic-version") || client_header(r, "x-api-key");
}

/* The route's concrete model names, NULL-terminated (the array is
 * malloc'd, the names borrowed from the conf), or NULL when it has none. */
static const char **conf_models(const tg_route *rt)
{
    size_t n = 0;
    for (char **m = rt->models; m && *m; m++)
        n++;
    const char **names = tg_calloc(n + 2, sizeof *names);
    size_t k = 0;
    for (char **m = rt->models; m && *m; m++)
        if (!strpbrk(*m, "*?["))
            names[k++] = *m;
    if (!k && rt->upstream_model)
        names[k++] = rt->upstream_model;
    if (!k) {
        free(names);
        return NULL;
    }
    return names;
}

/* The list (an OpenAI list, borrowed), or the model of it the path names,
 * as the answer in the request's shape; a name not in it is a 404. */
static void models_reply(tg_req *r, const json_t *list)
{
    const char *id = r->client.rest + strlen(MODELS_PATH);
    id = *id == '/' && id[1] ? id + 1 : NULL;
    bool anth = r->prep.models == TG_MODELS_ANTHROPIC;
    const json_t *m = id ? tg_models_find_peek(list, id) : list;
    if (!m) {
        if (anth)  /* Anthropic's error shape (api_error_shape) */
            r->prep.api = api_aimed_at("/v1/messages");
        set_error(r, 404, "invalid_request_error", "model_not_found",
                  "model", "model: %.200s: route %s lists no such model", id, r->route->name);
        return;
    }
    json_t *out = anth ? tg_models_anthropic(m) : json_incref((json_t *)m);
    char *s = tg_json_dumps(out);
    json_decref(out);
    set_answer(r, 200, s, strlen(s), false);
}

/* The conf's list, answered; false when the route names no model. */
static bool models_from_conf(tg_req *r)
{
    const char **names = conf_models(r->route);
    if (!names)
        return false;
    json_t *list = tg_models_list(names);
    free(names);
    models_reply(r, list);
    json_decref(list);
    return true;
}

int models_route(tg_req *r)
{
    const char *rest = r->client.rest;
    size_t n = strlen(MODELS_PATH);
    if (strcmp(r->client.method, "GET") || strncmp(rest, MODELS_PATH, n) ||
        (rest[n] && rest[n] != '/'))
        return 0;
    bool anth = models_anthropic(r);
    if (anth && !tg_route_bridges_messages(r->route))
        return 0;  /* the provider's own list, in its own shape */
    r->prep.models = anth ? TG_MODELS_ANTHROPIC : TG_MODELS_OPENAI;
    if (r->route->upstream_model && models_from_conf(r))
        return -1;
    return 0;
}

bool models_answer(tg_req *r)
{
    if (!r->prep.models)
        return false;
    if (r->up.status >= 400)
        return models_from_conf(r);
    if (r->prep.models == TG_MODELS_OPENAI || r->up.status < 200 || r->up.status >= 300)
        return false;
    json_t *v = tg_json_load(r->up.resp.data ? r->up.resp.data : "", r->up.resp.len, 0, NULL);
    json_t *out = tg_models_anthropic(v);
    json_decref(v);
    if (!out)
        return false;
    char *s = tg_json_dumps(out);
    json_decref(out);
    set_answer(r, 200, s, strlen(s), false);
    return true;
}
