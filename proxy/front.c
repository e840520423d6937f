/* front.c -- the front door: what libmicrohttpd hands a worker, and what
 * goes back to the client.
 *
 * A request's head is checked before a byte of its body is read
 * (refuse_on_headers: client key, max_header, dot segments), its body read
 * within max_body and max_body_memory, and then dispatched in four steps:
 * the ops endpoints toolgate answers itself (/healthz, /readyz, /metrics),
 * admission (a base-URL check, a body over a limit), routing (chat, an
 * agent API, any other /v1 path: proxy/prepare.c) and the upstream URL of
 * the round that proxy/upstream.c starts. While upstream works the client
 * connection is suspended; MHD calls on_request again when it is resumed
 * and the answer goes out whole (queue_answer) or as a stream
 * (queue_stream, read by stream_reader). on_completed logs and counts
 * the request; on_client_hangup ends the upstream of a client gone while
 * it waited. Connections that have not sent a whole head are kept in
 * arrival order for header_timeout (heads_*), and a kept-alive one is
 * parked between an answer and its next bytes (conns_*).
 */
#include "proxy/front.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "core/alloc.h"
#include "core/list.h"
#include "proxy/bridges.h"
#include "proxy/embed_wait.h"
#include "proxy/gemini.h"
#include "proxy/log.h"
#include "proxy/prepare.h"
#include "proxy/stored.h"
#include "proxy/upstream.h"

/* ---- answers to the client ---------------------------------------------- */


/* X-Toolgate-Dropped: what a bridge left out, then the top-level
 * parameters the route's target refuses (hygiene.c, ctx->dropped). */
static void add_dropped_header(tg_req *r, struct MHD_Response *resp)
{
    const json_t *params = r->ctx_live ? r->ctx.dropped : NULL;
    if (!r->prep.dropped && !json_array_size(params))
        return;
    tg_buf t = {0};
    if (r->prep.dropped)
        tg_buf_puts(&t, r->prep.dropped);
    size_t i;
    const json_t *v;
    json_array_foreach(params, i, v) {
        tg_buf_puts(&t, i ? ", " : t.len ? "; parameters " : "parameters ");
        tg_buf_puts(&t, json_string_value(v));
    }
    MHD_add_response_header(resp, "X-Toolgate-Dropped", t.data);
    tg_buf_free(&t);
}

static void add_common_headers(tg_req *r, struct MHD_Response *resp)
{
    MHD_add_response_header(resp, "X-Request-Id", r->id);
    if (r->w->draining)  /* shutting down: the client's next request goes elsewhere */
        MHD_add_response_header(resp, "Connection", "close");
    if (r->ctx_live && r->ctx.stats.tools_in != r->ctx.stats.tools_out) {
        char v[128];
        snprintf(v, sizeof v, "in=%u out=%u bytes_in=%zu bytes_out=%zu", r->ctx.stats.tools_in,
                 r->ctx.stats.tools_out, r->ctx.stats.tools_bytes_in, r->ctx.stats.tools_bytes_out);
        MHD_add_response_header(resp, "X-Toolgate-Tools", v);
    }
    add_dropped_header(r, resp);
    if (r->prep.translated)
        MHD_add_response_header(resp, "X-Toolgate-Translated", r->prep.translated);
    if (r->prep.estimate)
        MHD_add_response_header(resp, "X-Toolgate-Estimate", r->prep.estimate);
    if (r->ctx_live && r->ctx.stats.schema_standins) {  /* rule 62, degraded */
        char v[96];
        snprintf(v, sizeof v, "schema-budget; standins=%u", r->ctx.stats.schema_standins);
        MHD_add_response_header(resp, "X-Toolgate-Degraded", v);
    }
}

static void add_upstream_headers(tg_req *r, struct MHD_Response *resp, bool keep_type)
{
    for (size_t i = 0; i < r->up.hdrs.n; i++) {
        const char *n = r->up.hdrs.v[i].name;
        if (!keep_type && !strcasecmp(n, "content-type"))
            continue;
        MHD_add_response_header(resp, n, r->up.hdrs.v[i].value);
    }
}

/* resp goes to MHD with the headers every answer carries, under the
 * answer's status; r is then in `state`. */
static enum MHD_Result send_response(tg_req *r, struct MHD_Response *resp, rq_state state)
{
    add_common_headers(r, resp);
    enum MHD_Result ok = MHD_queue_response(r->client.conn, (unsigned)r->answer.status, resp);
    MHD_destroy_response(resp);
    r->state = state;
    return ok;
}

static enum MHD_Result queue_answer(tg_req *r)
{
    keep_signatures(r);
    if (r->prep.bridge)
        bridge_whole_answer(r);
    api_error_shape(r);
    /* no answer: an empty body that is nobody's to free */
    struct MHD_Response *resp =
        r->answer.body
            ? MHD_create_response_from_buffer(r->answer.len, r->answer.body, MHD_RESPMEM_MUST_FREE)
            : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    r->answer.body = NULL;
    if (!resp)
        return MHD_NO;
    if (r->answer.from_upstream) {
        add_upstream_headers(r, resp, !r->answer.type);
        if (r->answer.type)
            MHD_add_response_header(resp, "Content-Type", r->answer.type);
        if (r->answer.status >= 400) {
            char v[16];
            snprintf(v, sizeof v, "%d", r->answer.status);
            MHD_add_response_header(resp, "X-Toolgate-Upstream-Error", v);
        }
    } else {  /* toolgate's own: JSON, or a replayed stream (proxy/stored.c) */
        MHD_add_response_header(resp, "Content-Type",
                                r->answer.type ? r->answer.type : "application/json");
    }
    return send_response(r, resp, RQ_ANSWERED);
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    tg_req *r = cls;
    (void)pos;
    size_t avail = r->stream.out.len - r->stream.out_off;
    if (avail) {
        size_t n = avail < max ? avail : max;
        r->stream.sent_event = true;
        memcpy(buf, r->stream.out.data + r->stream.out_off, n);
        r->stream.out_off += n;
        if (r->stream.out_off == r->stream.out.len) {
            /* drained: a buffer grown while the client lagged goes */
            if (r->stream.out.cap > STREAM_KEEP)
                tg_buf_free(&r->stream.out);
            else
                tg_buf_reset(&r->stream.out);
            r->stream.out_off = 0;
        } else if (r->stream.out_off >= STREAM_KEEP && r->stream.out_off >= r->stream.out.len / 2) {
            /* Sent bytes go once they are half the buffer. Upstream adds
             * while the client reads, so the buffer may never drain: kept,
             * the sent bytes made a stream cost all it ever sent (a client
             * that does not read held the ~3 MB a socket takes), not the
             * unsent bytes the pause bounds. */
            tg_buf_consume(&r->stream.out, r->stream.out_off);
            r->stream.out_off = 0;
        }
        maybe_unpause(r);
        return (ssize_t)n;
    }
    if (r->stream.done)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (r->client.gone)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    req_suspend(r);
    return 0;
}

static void stream_reader_free(void *cls)
{
    req_unref(cls);
}

/* MHD keeps a buffer of the given block size per streaming response; SSE
 * events are small and thousands of streams may be open, so 1 KB (a larger
 * event takes more than one call of the reader). */
static enum MHD_Result queue_stream(tg_req *r)
{
    struct MHD_Response *resp;
    if (r->stream.done && !r->stream.out_off) {
        /* Upstream's whole stream came before the client's answer was
         * queued (a short answer, one read): it goes as one body, head and
         * events in one send, instead of a chunked relay (head, events,
         * terminator: three). Same events, same headers. */
        size_t n = 0;
        char *body = tg_buf_steal(&r->stream.out, &n);
        resp = MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
            free(body);
            return MHD_NO;
        }
    } else {
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, stream_reader,
                                                 req_ref(r), stream_reader_free);
        if (!resp) {
            req_unref(r);
            return MHD_NO;
        }
    }
    /* the upstream's headers are the last round's by now (a discovery
     * round that started before the client was answered has replaced
     * them), so the stream says what it is itself */
    add_upstream_headers(r, resp, false);
    const char *type = r->prep.bridge && r->prep.api->stream_type
                           ? r->prep.api->stream_type(r->prep.bridge)
                           : "text/event-stream";  /* Gemini's JSON array is not SSE */
    MHD_add_response_header(resp, "Content-Type", type);
    return send_response(r, resp, RQ_STREAMING);
}

static void answer_json(tg_req *r, int status, const char *json)
{
    set_answer(r, status, tg_strdup(json), strlen(json), false);
}

/* ---- dispatch: ops endpoints, admission, routing, the upstream URL -------- */

/* The metrics in Prometheus' text format (its key was checked on the
 * headers). */
static enum MHD_Result serve_metrics(tg_req *r)
{
    size_t len;
    char *m = tg_metrics_render(r->w->srv->metrics, &len);
    set_answer(r, 200, m, len, false);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, r->answer.body, MHD_RESPMEM_MUST_FREE);
    r->answer.body = NULL;
    MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4");
    enum MHD_Result ok = MHD_queue_response(r->client.conn, 200, resp);
    MHD_destroy_response(resp);
    r->state = RQ_ANSWERED;
    return ok;
}

/* The endpoints toolgate answers itself, whatever the routes: true with
 * the answer queued (*res) when the path is one. */
static bool serve_ops(tg_req *r, enum MHD_Result *res)
{
    const char *url = r->client.url;
    if (!strcmp(url, "/healthz")) {
        answer_json(r, 200, "{\"status\":\"ok\"}");
        *res = queue_answer(r);
        return true;
    }
    if (!strcmp(url, "/readyz")) {
        bool ready = atomic_load(&r->w->srv->ready) && !r->w->draining;
        bool warming = ready && atomic_load(&r->w->srv->warming) > 0;
        answer_json(r, ready && !warming ? 200 : 503,
                    warming  ? "{\"status\":\"warming\"}"
                    : ready ? "{\"status\":\"ready\"}"
                            : "{\"status\":\"draining\"}");
        *res = queue_answer(r);
        return true;
    }
    if (!strcmp(url, "/metrics")) {
        *res = serve_metrics(r);
        return true;
    }
    return false;
}

/* Clients check a base URL before they use it (Claude Code sends HEAD
 * <ANTHROPIC_BASE_URL>/api/hello, which Anthropic's API answers): the root,
 * every route prefix and /api/hello under them answer, like /healthz,
 * without a key. */
static bool base_url_check(const tg_req *r)
{
    const char *m = r->client.method, *rest = r->client.rest;
    return (!strcmp(m, "HEAD") || !strcmp(m, "GET")) &&
           (!*rest || !strcmp(rest, "/") || !strcmp(rest, "/api/hello"));
}

/* Admission: what is answered before a route is looked at -- a client
 * checking its base URL, a body over max_body_memory or max_body. True
 * with the answer in r. */
static bool answered_at_door(tg_req *r)
{
    const tg_conf *c = r->conf;
    if (base_url_check(r)) {
        answer_json(r, 200, "{\"status\":\"ok\"}");
        return true;
    }
    if (r->client.over_budget) {
        set_error(r, 503, "server_error", "overloaded", NULL,
                  "toolgate holds max_body_memory (%zu bytes) of request bodies at once; "
                  "retry shortly", c->max_body_memory);
        return true;
    }
    if (r->client.too_large) {
        set_error(r, 413, "invalid_request_error", "request_too_large", NULL,
                  "request body is larger than max_body (%zu bytes)", c->max_body);
        return true;
    }
    return false;
}

/* Routing: the request's kind by its path past the route prefix (chat,
 * an agent API, any other /v1 path) and its body prepared for its route
 * (proxy/prepare.h). 0; 1 while it waits on the store (dispatched again
 * when what it names is read); or -1 with the answer in r. */
static int route_request(tg_req *r)
{
    const char *rest = r->client.rest;
    const tg_route *by_prefix = r->client.by_prefix;
    if (!strcmp(rest, "/v1/chat/completions") || !strcmp(rest, "/chat/completions")) {
        if (strcmp(r->client.method, "POST")) {
            set_error(r, 405, "invalid_request_error", "method_not_allowed", NULL,
                      "%s /v1/chat/completions: use POST", r->client.method);
            return -1;
        }
        r->prep.is_chat = true;
        return prepare_chat(r, by_prefix);
    }
    int side;
    if (gemini_side(r, by_prefix, &side))  /* Gemini's model list, countTokens... */
        return side;
    if (r->prep.api && !strcmp(r->client.method, "POST")) {
        /* count_tokens has no chat form: passed through, or estimated */
        bool count = token_count_path(rest);
        if (r->prep.converted)  /* it waited on the store as a chat request */
            return prepare_chat(r, by_prefix);
        int k = prepare_bridged(r, by_prefix, count);
        if (k < 0 || k == 2)
            return k < 0 ? -1 : 1;  /* 1: waits on the store */
        r->prep.is_chat = k == 0;
        r->prep.converted = k == 0;
        if (k == 0)
            return prepare_chat(r, by_prefix);
        prepare_plain(r);
        return 0;
    }
    int stored = stored_route(r, by_prefix);  /* GET /v1/responses/{id}... when bridged */
    if (stored)
        return stored;
    if (!strncmp(rest, "/v1/", 4) || !strcmp(rest, "/v1")) {
        r->route = by_prefix ? by_prefix : &r->conf->routes[0];
        if (models_route(r))  /* answered from the conf */
            return -1;
        prepare_plain(r);
        return 0;
    }
    set_error(r, 404, "invalid_request_error", "unknown_url", NULL,
              "unknown path %s: toolgate serves [prefix]/v1/chat/completions, "
              "[prefix]/v1/responses, [prefix]/v1/messages, /v1/*, "
              "/healthz, /readyz and /metrics",
              r->client.url);
    return -1;
}

/* The upstream URL: the route's base URL, then the provider's chat path
 * for a chat request, else the client's path (past /v1, which the base
 * URL holds); the client's query string too, unless it is the bridged
 * API's own. */
static void upstream_url(tg_req *r, tg_buf *u)
{
    const char *rest = r->client.rest;
    if (!r->prep.bridge && !r->prep.is_chat && r->prep.api && r->prep.api->pass_url) {
        r->prep.api->pass_url(r, u);  /* Gemini's native API has its own base */
    } else {
        tg_buf_puts(u, r->route->upstream);
        tg_append_path(u, r->prep.is_chat                ? "/chat/completions"
                          : !strncmp(rest, "/v1", 3) ? rest + 3
                                                     : rest);
    }
    if (!r->prep.bridge || !r->prep.api->own_query)
        tg_append_query(r->client.conn, u);
}

/* A whole request: answered here, or sent upstream with the client
 * suspended until there is something to answer. */
static enum MHD_Result dispatch(tg_req *r)
{
    enum MHD_Result res;
    if (serve_ops(r, &res))
        return res;
    /* prepared already: it waited for its catalog's embeddings */
    int k = r->prep.embed_ready ? 0 : answered_at_door(r) ? -1 : route_request(r);
    if (k < 0)
        return queue_answer(r);
    if (k > 0 || embed_wait_catalog(r)) {  /* the store reads, or the catalog is embedded,
                                              on the loop; the resume dispatches it again */
        req_suspend_after_run(r);
        return MHD_YES;
    }
    tg_buf u = {0};
    upstream_url(r, &u);
    free(r->up.url);
    r->up.url = tg_buf_steal(&u, NULL);  /* the round's URL, not copied again */
    int rc = start_upstream(r, r->up.url, r->client.method);
    if (rc) {
        set_error(r, 502, "upstream_error", "upstream_unreachable", NULL,
                  "could not start the upstream request");
        return queue_answer(r);
    }
    r->state = RQ_WAIT;
    req_suspend_after_run(r);
    return MHD_YES;
}

/* ---- request heads (header_timeout) ------------------------------------ */

/* libmicrohttpd's connection timeout restarts with every byte, so a
 * client that sends its head a byte at a time (slowloris) would hold a
 * connection for as long as it likes; header_timeout is a deadline for
 * the whole head instead. An idle kept-alive connection waits for its
 * next head under the same deadline. */
static void heads_add(worker *w, head_wait *h)
{
    if (!h || h->listed)  /* NULL: MHD gave no socket context (head_of) */
        return;
    h->since = now_us();
    h->listed = true;
    tg_list_push_back(&w->heads, &h->node);
}

static void heads_del(worker *w, head_wait *h)
{
    if (!h || !h->listed)
        return;
    tg_list_remove(&w->heads, &h->node);
    h->listed = false;
}

static head_wait *head_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* ---- kept-alive connections parked between requests --------------------- */

/* libmicrohttpd 0.9.75 in epoll mode takes a suspended connection out of
 * its epoll set (EPOLL_CTL_DEL) and marks a resumed one readable, so after
 * each answer it reads, meets EAGAIN and puts the socket back
 * (EPOLL_CTL_ADD): three of a small request's seven system calls, none of
 * them moving a byte. So each connection's socket is also in the worker's
 * own epoll set, from its accept to its close (one epoll_ctl a connection,
 * edge-triggered), and a connection kept alive after an answer is
 * suspended by toolgate right after the run of MHD that sent the answer
 * ("parked": MHD holds it out of its set already, so the suspend is no
 * system call). The client's next bytes (or its close) wake the worker,
 * which resumes it, and MHD's read finds the request: no EAGAIN, no
 * epoll_ctl. A connection that stays quiet is resumed after PARK_MAX_US
 * (the sweep), back to MHD's own wait, so the suspended list that every
 * resume walks (proxy/request.c) holds only recent ones; the drain and
 * the stop resume them all (MHD aborts when stopped with one suspended).
 * It needs the request's own suspend made after the run (proxy/request.c
 * req_suspend_after_run), or MHD reads before the answer and adds the
 * socket back anyway. Not parked: a connection whose next head was
 * already whole in the same run (pipelined), one being closed, any while
 * draining. A pipelined head that is not whole yet waits for its next
 * bytes or the sweep. The cost: one epoll_ctl a connection, so a client
 * that opens a connection a request pays one more system call. */
#define PARK_MAX_US 100000

static void conn_register(worker *w, head_wait *h)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(h->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci || ci->connect_fd < 0)
        return;
    size_t fd = (size_t)ci->connect_fd;
    if (fd >= w->n_conns) {
        size_t n = w->n_conns ? w->n_conns : 256;
        while (n <= fd)
            n *= 2;
        w->conns = tg_realloc(w->conns, n * sizeof *w->conns);
        memset(w->conns + w->n_conns, 0, (n - w->n_conns) * sizeof *w->conns);
        w->n_conns = n;
    }
    h->fd = (int)fd;
    h->gen = ++w->gen & 0xffffff;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET,
                             .data.u64 = TAG(K_CONN, h->gen, h->fd)};
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, h->fd, &ev) == 0) {
        h->registered = true;
        w->conns[fd] = h;
    }
}

static void unpark(worker *w, head_wait *h)
{
    tg_list_remove(&w->parked, &h->park_node);
    h->parked = false;
    w->n_suspended--;
    MHD_resume_connection(h->conn);
    w->mhd_pending = true;
}

/* After a run of MHD: the connections it answered and kept alive. */
void conns_park(worker *w)
{
    uint64_t t = 0;
    head_wait *h;
    while ((h = TG_LIST_ITEM(w->park_cands.head, head_wait, park_node))) {
        tg_list_remove(&w->park_cands, &h->park_node);
        h->park_cand = false;
        if (!h->listed || w->draining)  /* its next head is whole: a request runs */
            continue;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(h->conn, MHD_CONNECTION_INFO_CONNECTION_SUSPENDED);
        if (!ci || ci->suspended)
            continue;
        MHD_suspend_connection(h->conn);
        w->n_suspended++;
        h->parked = true;
        h->parked_at = t ? t : (t = now_us());
        tg_list_push_back(&w->parked, &h->park_node);
    }
}

/* An event on a connection's socket (K_CONN): a parked one's next bytes
 * or close, or the close of a client whose request waits (watch_client). */
void conn_event(worker *w, uint64_t tag, uint32_t events)
{
    size_t fd = (size_t)TAG_FD(tag);
    head_wait *h = fd < w->n_conns ? w->conns[fd] : NULL;
    if (!h || h->gen != TAG_GEN(tag))
        return;
    if (h->parked) {
        unpark(w, h);
    } else if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        tg_req *r = find_by_client(w, h->fd, h->gen);
        if (r)
            on_client_hangup(r);
    }
}

/* Parked longer than PARK_MAX_US at time t (all with t = UINT64_MAX). */
void conns_unpark(worker *w, uint64_t t)
{
    head_wait *h;
    while ((h = TG_LIST_ITEM(w->parked.head, head_wait, park_node)) &&
           (t == UINT64_MAX || t - h->parked_at > PARK_MAX_US))
        unpark(w, h);
}

void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                   enum MHD_ConnectionNotificationCode toe)
{
    worker *w = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        head_wait *h = tg_calloc(1, sizeof *h);
        h->conn = conn;
        h->fd = -1;
        heads_add(w, h);
        conn_register(w, h);
        *socket_context = h;
    } else if (*socket_context) {
        head_wait *h = *socket_context;
        heads_del(w, h);
        if (h->park_cand)
            tg_list_remove(&w->park_cands, &h->park_node);
        if (h->parked) {  /* MHD closes none it holds suspended: never so */
            tg_list_remove(&w->parked, &h->park_node);
            w->n_suspended--;
        }
        /* the close that follows takes the socket out of the epoll set */
        if (h->registered && w->conns[h->fd] == h)
            w->conns[h->fd] = NULL;
        free(h);
        *socket_context = NULL;
    }
}

/* Heads late past header_timeout: the socket is shut down, which
 * libmicrohttpd sees as the client's close and cleans up as one. */
void sweep_heads(worker *w, uint64_t t)
{
    uint64_t limit = (uint64_t)w->conf->header_timeout_ms * 1000;
    head_wait *h;
    while ((h = TG_LIST_ITEM(w->heads.head, head_wait, node)) && t - h->since > limit) {
        heads_del(w, h);
        if (h->parked)  /* MHD must see the close */
            unpark(w, h);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(h->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci)
            shutdown(ci->connect_fd, SHUT_RDWR);
        tg_metrics_limit(w->metrics, TG_LIMIT_HEADER_TIMEOUT);
        w->mhd_pending = true;
    }
}

/* ---- the request: head, body, answer -------------------------------------- */

static bool client_authorized(tg_req *r)
{
    char **keys = r->conf->client_keys;
    if (!keys)
        return true;
    const char *auth = client_header(r, "Authorization");
    if (!auth || strncasecmp(auth, "Bearer ", 7))
        return false;
    const char *tok = auth + 7;
    bool ok = false;
    for (char **k = keys; *k; k++) {  /* every key compared: no early exit */
        bool eq = tg_consttime_equal(tok, *k);
        if (eq && !ok)
            r->client.key = *k;
        ok |= eq;
    }
    return ok;
}

static enum MHD_Result add_header_bytes(void *cls, enum MHD_ValueKind kind, const char *key,
                                        const char *value)
{
    (void)kind;
    *(size_t *)cls += strlen(key) + (value ? strlen(value) : 0) + 4;  /* ": " CRLF */
    return MHD_YES;
}

/* MHD's own limit is its connection pool, which is sized for reading
 * bodies in large pieces; max_header is enforced here. */
static bool headers_exceed(struct MHD_Connection *conn, const char *url, size_t max)
{
    size_t n = strlen(url) + 32;  /* method, version, CRLF */
    MHD_get_connection_values(conn, MHD_HEADER_KIND, add_header_bytes, &n);
    return n > max;
}

/* What the request line and headers alone decide is answered before a
 * byte of the body is read: with client_keys set, nobody without a key
 * makes toolgate hold a body. Returns true with the answer in r. */
static bool refuse_on_headers(tg_req *r, const char *url)
{
    const tg_conf *c = r->conf;
    r->client.by_prefix = tg_route_by_prefix(c, url, &r->client.rest);
    r->prep.api = api_of(r->client.rest);  /* its errors take the API's shape from here on */
    if (!r->prep.api)  /* GET /v1/models/MODEL: OpenAI's path, Gemini's SDK's too */
        r->prep.api = api_of_gemini_sdk(r);
    bool open_path = !strcmp(url, "/healthz") || !strcmp(url, "/readyz") ||
                     (!strcmp(url, "/metrics") && !c->metrics_auth) || base_url_check(r);
    if (!open_path && !client_authorized(r)) {
        set_error(r, 401, "invalid_request_error", "invalid_api_key", NULL,
                  "missing or unknown client key: send Authorization: Bearer <key> with one of "
                  "the keys in [server] client_keys");
        return true;
    }
    if (headers_exceed(r->client.conn, url, c->max_header)) {
        set_error(r, 431, "invalid_request_error", "request_header_fields_too_large", NULL,
                  "request line and headers are larger than max_header (%zu bytes)",
                  c->max_header);
        return true;
    }
    if (tg_path_has_dot_segment(url)) {
        if (!r->prep.api)  /* refused in the shape of the API it aimed at */
            r->prep.api = api_aimed_at(r->client.rest);
        set_error(r, 400, "invalid_request_error", "invalid_path", NULL,
                  "path %.200s has a dot segment ('.' or '..', raw or percent-encoded): "
                  "toolgate forwards paths as they are and refuses one that would leave its "
                  "route",
                  url);
        return true;
    }
    return false;
}

/* A request's head is whole: the request is made, refused on its head
 * alone, or made ready for its body (Content-Length checked against
 * max_body, charged against max_body_memory, its buffer reserved). */
static enum MHD_Result begin_request(worker *w, struct MHD_Connection *conn, const char *url,
                                     const char *method, void **con_cls)
{
    heads_del(w, head_of(conn));  /* the head is whole */
    tg_req *r = req_new(w, conn, url, method);
    *con_cls = r;
    if (refuse_on_headers(r, url))
        return queue_answer(r);  /* MHD reads no body after an answer */
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
    unsigned long long n = cl ? strtoull(cl, NULL, 10) : 0;
    if (n > r->conf->max_body) {
        r->client.too_large = true;
    } else if (n && !body_charge(r, (size_t)n)) {
        r->client.over_budget = true;
        return dispatch(r);  /* the 503, before the body is read */
    } else if (n) {  /* one allocation, no copies as the body arrives */
        tg_buf_reserve(&r->client.body, (size_t)n);
    }
    return MHD_YES;
}

/* k more bytes of the body, kept within max_body and max_body_memory (a
 * body past either is dropped and answered by dispatch). */
static void read_body(tg_req *r, const char *data, size_t k)
{
    if (!r->client.too_large && r->client.body.len + k > r->conf->max_body)
        r->client.too_large = true;
    /* a body without Content-Length is charged as it comes */
    if (!r->client.too_large && !r->client.over_budget &&
        r->client.body.len + k > r->client.body_charge &&
        !body_charge(r, r->client.body.len + k - r->client.body_charge))
        r->client.over_budget = true;
    if (r->client.too_large || r->client.over_budget) {
        tg_buf_free(&r->client.body);
        body_release(r);
    } else {
        tg_buf_append(&r->client.body, data, k);
    }
}

/* MHD's call once the body is read, and again on every resume: dispatch
 * it, wait on, or queue what there is to answer. */
static enum MHD_Result answer_when_ready(tg_req *r)
{
    switch (r->state) {
    case RQ_READ:
        return r->client.gone ? MHD_NO : dispatch(r);
    case RQ_WAIT:
        if (r->client.gone)
            return MHD_NO;
        req_suspend_after_run(r);
        return MHD_YES;
    case RQ_READY:
        if (r->client.gone)
            return MHD_NO;
        if (r->stream.raw)
            return queue_stream(r);
        if (r->stream.is_sse && r->stream.repair && !r->answer.body) {
            /* the status line waits for the stream's first byte, so that
             * a discovery round refused before then is answered with the
             * provider's own status (round_answered_whole) */
            if (!r->stream.out.len && !r->stream.done) {
                req_suspend_after_run(r);
                return MHD_YES;
            }
            return queue_stream(r);
        }
        return queue_answer(r);
    default:
        return MHD_YES;
    }
}

enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                           const char *method, const char *version, const char *upload_data,
                           size_t *upload_data_size, void **con_cls)
{
    tg_req *r = *con_cls;
    (void)version;
    if (!r)
        return begin_request(cls, conn, url, method, con_cls);
    if (*upload_data_size) {
        read_body(r, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    return answer_when_ready(r);
}

void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                  enum MHD_RequestTerminationCode toe)
{
    tg_req *r = *con_cls;
    worker *w = cls;
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) {
        head_wait *h = head_of(conn);
        heads_add(w, h);  /* kept alive: the next head's deadline runs */
        if (h && h->registered && !h->park_cand && !h->parked && !w->draining) {
            h->park_cand = true;  /* conns_park, after this run of MHD */
            tg_list_push_back(&w->park_cands, &h->park_node);
        }
    }
    if (!r)
        return;
    *con_cls = NULL;
    unwatch_client(r);
    r->client.conn = NULL;
    if (r->client.suspended)
        r->w->n_suspended--;
    r->client.suspended = false;
    r->client.held = false;
    r->t_done = now_us();
    int status = r->answer.status ? r->answer.status : (int)r->up.status;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
        r->client.gone = true;
        stop_upstream(r);
        if (!status)
            status = 499;
    }
    access_log_line(r, status);
    if (r->ctx_live && r->ctx.stats.bad_chunks)
        tg_log(TG_LOG_WARN,
               "request %s: route %s: upstream sent %u stream events that were not valid chat "
               "chunks (repaired or dropped)",
               r->id, r->route ? r->route->name : "-", r->ctx.stats.bad_chunks);
    if (r->prep.embed_from && (r->prep.embedder.calls || r->prep.embedder.fallbacks))
        embed_report(r);
    tg_metrics_request_done(r->w->metrics, r->route ? r->route->name : "-", status,
                            r->ctx_live && r->ctx.stream, r->t_start, r->up.t_start,
                            r->up.t_first_byte, r->t_done, &r->ctx.stats);
    req_unref(r);
}

/* The client went away while we waited: cancel upstream now. */
void on_client_hangup(tg_req *r)
{
    if (r->client.gone)
        return;
    r->client.gone = true;
    stop_upstream(r);
    unwatch_client(r);
    req_resume(r);
}
