/* server.c -- workers, the client side (libmicrohttpd) and the upstream side
 * (libcurl multi) of the proxy.
 *
 * Design. There is no thread per request. toolgate runs N workers (one per
 * core by default); each is a single event loop over one epoll set that
 * holds: its own libmicrohttpd daemon (external epoll mode, listening on its
 * own SO_REUSEPORT socket so the kernel spreads connections), the sockets of
 * its own curl multi handle, the client sockets of requests that wait, and an
 * eventfd for control (stop, reload). A request lives and dies on the worker
 * that accepted it, so the request path takes no lock and makes no thread
 * hand-off: the client connection is suspended while upstream has nothing
 * for it, and resumed from the curl callbacks of the same thread.
 *
 * The network code knows nothing of dialects. It calls tg_pipeline_request()
 * on the parsed body, tg_pipeline_response() on a whole answer, and feeds
 * stream events through tg_stream_*() (sanitize/), then moves bytes.
 *
 * Request lifetime: a tg_req is reference counted by its three possible
 * holders: the MHD connection (until the completed callback), the upstream
 * transfer (until the easy handle is removed) and a streaming response (until
 * MHD frees it). All three live on one thread, so the count is a plain int.
 */
#include "proxy/server.h"

#include <curl/curl.h>
#include <errno.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/cache.h"
#include "core/jsonio.h"
#include "proxy/http.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/store.h"
#include "proxy/sse.h"
#include "proxy/request.h"
#include "proxy/bridges.h"
#include "proxy/prepare.h"
#include "proxy/upsock.h"
#include "proxy/upstream.h"

#define TG_VERSION_HDR "toolgate"

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
    if (r->prep.dropped)
        MHD_add_response_header(resp, "X-Toolgate-Dropped", r->prep.dropped);
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

static enum MHD_Result queue_answer(tg_req *r)
{
    if (r->prep.bridge)
        bridge_whole_answer(r);
    api_error_shape(r);
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        r->answer.len, r->answer.body ? r->answer.body : (char *)"", MHD_RESPMEM_MUST_FREE);
    if (!r->answer.body)
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
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
    } else {
        MHD_add_response_header(resp, "Content-Type", "application/json");
    }
    add_common_headers(r, resp);
    enum MHD_Result ok = MHD_queue_response(r->client.conn, (unsigned)r->answer.status, resp);
    MHD_destroy_response(resp);
    r->state = RQ_ANSWERED;
    return ok;
}

/* ---- streaming to the client ------------------------------------------- */

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
        resp = body ? MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE) : NULL;
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
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    add_common_headers(r, resp);
    enum MHD_Result ok = MHD_queue_response(r->client.conn, (unsigned)r->answer.status, resp);
    MHD_destroy_response(resp);
    r->state = RQ_STREAMING;
    return ok;
}

/* ---- the client side (MHD) --------------------------------------------- */

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

static void answer_json(tg_req *r, int status, const char *json)
{
    set_answer(r, status, strdup(json), strlen(json), false);
}

/* Clients check a base URL before they use it (Claude Code sends HEAD
 * <ANTHROPIC_BASE_URL>/api/hello, which Anthropic's API answers): the root,
 * every route prefix and /api/hello under them answer, like /healthz,
 * without a key. */
static bool base_url_check(const tg_req *r)
{
    return (!strcmp(r->client.method, "HEAD") || !strcmp(r->client.method, "GET")) &&
           (!*r->client.rest || !strcmp(r->client.rest, "/") || !strcmp(r->client.rest, "/api/hello"));
}

static enum MHD_Result dispatch(tg_req *r)
{
    const tg_conf *c = r->conf;
    const char *url = r->client.url;
    if (!strcmp(url, "/healthz")) {
        answer_json(r, 200, "{\"status\":\"ok\"}");
        return queue_answer(r);
    }
    if (!strcmp(url, "/readyz")) {
        bool ready = atomic_load(&r->w->srv->ready) && !r->w->draining;
        answer_json(r, ready ? 200 : 503, ready ? "{\"status\":\"ready\"}" : "{\"status\":\"draining\"}");
        return queue_answer(r);
    }
    if (!strcmp(url, "/metrics")) {  /* its key was checked on the headers */
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
    const char *rest = r->client.rest;
    const tg_route *by_prefix = r->client.by_prefix;
    if (base_url_check(r)) {
        answer_json(r, 200, "{\"status\":\"ok\"}");
        return queue_answer(r);
    }
    if (r->client.over_budget) {
        set_error(r, 503, "server_error", "overloaded", NULL,
                  "toolgate holds max_body_memory (%zu bytes) of request bodies at once; "
                  "retry shortly", c->max_body_memory);
        return queue_answer(r);
    }
    if (r->client.too_large) {
        set_error(r, 413, "invalid_request_error", "request_too_large", NULL,
                  "request body is larger than max_body (%zu bytes)", c->max_body);
        return queue_answer(r);
    }
    if (!strcmp(rest, "/v1/chat/completions") || !strcmp(rest, "/chat/completions")) {
        if (strcmp(r->client.method, "POST")) {
            set_error(r, 405, "invalid_request_error", "method_not_allowed", NULL,
                      "%s /v1/chat/completions: use POST", r->client.method);
            return queue_answer(r);
        }
        r->prep.is_chat = true;
        if (prepare_chat(r, by_prefix))
            return queue_answer(r);
    } else if (r->prep.api && !strcmp(r->client.method, "POST")) {
        /* count_tokens has no chat form: passed through, or refused */
        bool count = !strcmp(rest, "/v1/messages/count_tokens");
        int k = prepare_bridged(r, by_prefix, count);
        if (k < 0)
            return queue_answer(r);
        r->prep.is_chat = k == 0;
        if (k == 0 && prepare_chat(r, by_prefix))
            return queue_answer(r);
        if (k == 1)
            prepare_plain(r);
    } else if (!strncmp(rest, "/v1/", 4) || !strcmp(rest, "/v1")) {
        r->route = by_prefix ? by_prefix : &c->routes[0];
        prepare_plain(r);
    } else {
        set_error(r, 404, "invalid_request_error", "unknown_url", NULL,
                  "unknown path %s: toolgate serves [prefix]/v1/chat/completions, "
                  "[prefix]/v1/responses, [prefix]/v1/messages, /v1/*, "
                  "/healthz, /readyz and /metrics",
                  url);
        return queue_answer(r);
    }

    tg_buf u = {0};
    tg_buf_puts(&u, r->route->upstream);
    tg_append_path(&u, r->prep.is_chat                    ? "/chat/completions"
                       : !strncmp(r->client.rest, "/v1", 3) ? r->client.rest + 3
                                                     : r->client.rest);
    if (!r->prep.bridge || !r->prep.api->own_query)
        tg_append_query(r->client.conn, &u);
    int rc = start_upstream(r, u.data, r->client.method);
    tg_buf_free(&u);
    if (rc) {
        set_error(r, 502, "upstream_error", "upstream_unreachable", NULL,
                  "could not start the upstream request");
        return queue_answer(r);
    }
    r->state = RQ_WAIT;
    req_suspend(r);
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
    if (!h || h->listed)  /* NULL: its calloc failed, the connection goes unwatched */
        return;
    h->since = now_us();
    h->listed = true;
    h->next = NULL;
    h->prev = w->heads_tail;
    if (w->heads_tail)
        w->heads_tail->next = h;
    else
        w->heads = h;
    w->heads_tail = h;
}

static void heads_del(worker *w, head_wait *h)
{
    if (!h || !h->listed)
        return;
    if (h->prev)
        h->prev->next = h->next;
    else
        w->heads = h->next;
    if (h->next)
        h->next->prev = h->prev;
    else
        w->heads_tail = h->prev;
    h->prev = h->next = NULL;
    h->listed = false;
}

static head_wait *head_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    worker *w = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        head_wait *h = calloc(1, sizeof *h);
        if (h) {
            h->conn = conn;
            heads_add(w, h);
        }
        *socket_context = h;
    } else if (*socket_context) {
        heads_del(w, *socket_context);
        free(*socket_context);
        *socket_context = NULL;
    }
}

/* Heads late past header_timeout: the socket is shut down, which
 * libmicrohttpd sees as the client's close and cleans up as one. */
static void sweep_heads(worker *w, uint64_t t)
{
    uint64_t limit = (uint64_t)w->conf->header_timeout_ms * 1000;
    while (w->heads && t - w->heads->since > limit) {
        head_wait *h = w->heads;
        heads_del(w, h);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(h->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci)
            shutdown(ci->connect_fd, SHUT_RDWR);
        tg_metrics_limit(w->metrics, TG_LIMIT_HEADER_TIMEOUT);
        w->mhd_pending = true;
    }
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    worker *w = cls;
    tg_req *r = *con_cls;
    (void)version;
    if (!r) {
        heads_del(w, head_of(conn));  /* the head is whole */
        r = req_new(w, conn, url, method);
        if (!r)
            return MHD_NO;
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
    if (*upload_data_size) {
        size_t k = *upload_data_size;
        if (!r->client.too_large && r->client.body.len + k > r->conf->max_body)
            r->client.too_large = true;
        /* a body without Content-Length is charged as it comes */
        if (!r->client.too_large && !r->client.over_budget && r->client.body.len + k > r->client.body_charge &&
            !body_charge(r, r->client.body.len + k - r->client.body_charge))
            r->client.over_budget = true;
        if (r->client.too_large || r->client.over_budget) {
            tg_buf_free(&r->client.body);
            body_release(r);
        } else {
            tg_buf_append(&r->client.body, upload_data, k);
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    switch (r->state) {
    case RQ_READ:
        return dispatch(r);
    case RQ_WAIT:
        if (r->client.gone)
            return MHD_NO;
        req_suspend(r);
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
                req_suspend(r);
                return MHD_YES;
            }
            return queue_stream(r);
        }
        return queue_answer(r);
    default:
        return MHD_YES;
    }
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    tg_req *r = *con_cls;
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        heads_add(cls, head_of(conn));  /* kept alive: the next head's deadline runs */
    if (!r)
        return;
    *con_cls = NULL;
    unwatch_client(r);
    r->client.conn = NULL;
    if (r->client.suspended)
        r->w->n_suspended--;
    r->client.suspended = false;
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
    tg_metrics_request_done(r->w->metrics, r->route ? r->route->name : "-", status,
                            r->ctx_live && r->ctx.stream, r->t_start, r->up.t_start,
                            r->up.t_first_byte, r->t_done, &r->ctx.stats);
    req_unref(r);
}

/* The client went away while we waited: cancel upstream now. */
static void on_client_hangup(tg_req *r)
{
    if (r->client.gone)
        return;
    r->client.gone = true;
    stop_upstream(r);
    unwatch_client(r);
    req_resume(r);
}

/* ---- timers --------------------------------------------------------------- */

static void sweep_timeouts(worker *w, uint64_t t)
{
    for (tg_req *r = w->inflight, *next; r; r = next) {
        next = r->next;
        /* Watch the client socket of requests that wait long enough to be
         * worth two syscalls; quick ones finish before it matters. */
        if (r->client.conn && r->client.fd < 0 && !r->client.gone && r->client.suspended &&
            t - r->t_start > 50000)
            watch_client(r);
        if (r->up.easy)
            time_out_if_late(r, t);
    }
}

/* ---- the loop -------------------------------------------------------------- */

static void take_new_conf(worker *w)
{
    tg_conf *n = atomic_exchange(&w->pending_conf, NULL);
    if (n) {
        tg_conf_unref(w->conf);
        w->conf = n;
    }
}

/* SIGTERM. The listener stays open through shutdown_grace, so /readyz
 * answers 503 (a load balancer asking sees "draining", not a refused
 * connection) and requests that still come are served, each answer
 * closing its connection. */
static void begin_drain(worker *w)
{
    if (w->draining)
        return;
    w->draining = true;
    w->drain_deadline = now_us() + (uint64_t)w->conf->shutdown_grace_ms * 1000;
}

/* shutdown_grace has passed: every request still open gets an end in its
 * API's shape -- a stream the error event of a cut stream (and [DONE] on
 * chat), a request still waiting for upstream a 503 -- and its connection
 * is resumed, so the answers can be written before the daemon stops (it
 * refuses to stop while a connection is suspended). */
static void end_open_requests(worker *w)
{
    static const char msg[] = "toolgate is shutting down and shutdown_grace has passed; the "
                              "stream was cut";
    for (tg_req *r = w->inflight, *next; r; r = next) {
        next = r->next;
        if (!r->client.conn || r->client.gone || r->state == RQ_ANSWERED || r->stream.done)
            continue;
        if (r->state == RQ_READ)
            continue;  /* still reading its body: closed with the daemon */
        req_ref(r);
        stop_upstream(r);
        if (r->up.retry_at) {
            r->up.retry_at = 0;
            w->n_retry_wait--;
        }
        tg_metrics_limit(w->metrics, TG_LIMIT_SHUTDOWN);
        if (r->stream.repair) {
            tg_stream_fail(r->stream.repair, "shutting_down", msg, stream_dst(r));
            bridge_flush(r, true);
            r->stream.done = true;
        } else if (r->stream.raw) {
            raw_stream_error(r, "shutting_down", msg);
            r->stream.done = true;
        } else if (r->state == RQ_WAIT) {
            set_error(r, 503, "server_error", "shutting_down", NULL,
                      "toolgate is shutting down and shutdown_grace has passed before upstream "
                      "answered");
        }
        req_resume(r);
        req_unref(r);
    }
}

/* The drain's end: when no worker has a request open (a worker done
 * before the others keeps serving: its listener still gets connections,
 * /readyz among them), or at shutdown_grace, when the open requests are
 * ended and the loop runs a last second to write their ends. True when
 * it is over. */
static bool drain_over(worker *w)
{
    uint64_t t = now_us();
    if (atomic_load_explicit(&w->srv->open_reqs, memory_order_relaxed) == 0)
        return true;
    if (t < w->drain_deadline)
        return false;
    if (w->drain_cut)
        return true;
    w->drain_cut = true;
    tg_log(TG_LOG_WARN, "shutdown_grace passed with %d requests open: ending them",
           w->n_inflight);
    end_open_requests(w);
    w->drain_deadline = t + 1000000;
    return false;
}

static void run_curl_timeout(worker *w)
{
    int running;
    if (w->curl_deadline_ms >= 0 && (long)(now_us() / 1000) >= w->curl_deadline_ms) {
        w->curl_deadline_ms = -1;
        curl_multi_socket_action(w->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
}

static int loop_timeout_ms(worker *w)
{
    if (w->mhd_pending)
        return 0;
    long t = w->n_retry_wait ? 20 : 250;
    if (w->resumeq) {  /* the batch's window, rounded up */
        uint64_t u = now_us();
        long d = w->resume_due > u ? (long)((w->resume_due - u + 999) / 1000) : 0;
        t = d < t ? d : t;
    }
    long now = (long)(now_us() / 1000);
    if (w->curl_deadline_ms >= 0) {
        long d = w->curl_deadline_ms - now;
        t = d < 0 ? 0 : (d < t ? d : t);
    }
    MHD_UNSIGNED_LONG_LONG mt;
    if (MHD_get_timeout(w->mhd, &mt) == MHD_YES && (long)mt < t)
        t = (long)mt;
    return (int)t;
}

/* MHD processes a resumed connection only on the run after the one that
 * noticed the resume, so run until it has nothing due (bounded). */
static void run_mhd_now(worker *w)
{
    for (int i = 0; i < 4; i++) {
        w->mhd_pending = false;
        MHD_run(w->mhd);
        MHD_UNSIGNED_LONG_LONG t;
        if (!w->mhd_pending && (MHD_get_timeout(w->mhd, &t) != MHD_YES || t > 0))
            break;
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    struct epoll_event evs[256];
    for (;;) {
        if (atomic_load(&w->stop))
            begin_drain(w);
        if (w->draining && drain_over(w))
            break;
        int n = epoll_wait(w->epfd, evs, 256, loop_timeout_ms(w));
        bool run_mhd = n == 0;
        for (int i = 0; i < n; i++) {
            uint64_t tag = evs[i].data.u64;
            switch (TAG_KIND(tag)) {
            case K_MHD:
                run_mhd = true;
                break;
            case K_CTL: {
                uint64_t v;
                ssize_t rd = read(w->ctlfd, &v, sizeof v);
                (void)rd;
                take_new_conf(w);
                break;
            }
            case K_CURL:
                on_curl_event(w, TAG_FD(tag), evs[i].events);
                break;
            case K_CLIENT: {
                tg_req *r = find_by_client(w, TAG_FD(tag), TAG_GEN(tag));
                if (r)
                    on_client_hangup(r);
                run_mhd = true;
                break;
            }
            }
        }
        run_curl_timeout(w);
        check_curl_done(w);
        if (w->resumeq && (w->draining || now_us() >= w->resume_due))
            flush_resumes(w);
        /* MHD may have work no event announces (a connection it has not
         * read to EAGAIN stays on its ready list): curl events alone must
         * not starve it. */
        MHD_UNSIGNED_LONG_LONG mt;
        if (!run_mhd && MHD_get_timeout(w->mhd, &mt) == MHD_YES && mt == 0)
            run_mhd = true;
        if (run_mhd || w->mhd_pending || w->draining)
            run_mhd_now(w);
        /* A request MHD just handed us usually starts a transfer with a zero
         * timeout: act now rather than after another epoll_wait. */
        run_curl_timeout(w);
        check_curl_done(w);
        /* A quick upstream may have answered during that transfer start:
         * hand it to MHD now rather than after another epoll_wait. */
        if (w->mhd_pending)
            run_mhd_now(w);
        uint64_t t = now_us();
        if (w->n_retry_wait)
            fire_due_retries(w, t);
        if (t >= w->next_sweep) {
            w->next_sweep = t + 200000;
            sweep_timeouts(w, t);
            sweep_heads(w, t);
        }
    }
    return NULL;
}

/* ---- set-up ------------------------------------------------------------------ */

/* A listening socket on host:port; shared: with SO_REUSEPORT, which gives
 * every worker its own socket on the one port. 0 or -1 with err. */
static int bind_listener(const char *host, int port, bool shared, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc) {
        snprintf(err, errlen, "listen %s:%d: %s", host, port, gai_strerror(rc));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (shared)
            setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 4096)) {
            snprintf(err, errlen, "listen %s:%d: %s%s", host, port, strerror(errno),
                     errno == EADDRINUSE ? " (another program, or another toolgate, listens "
                                           "there)"
                                         : "");
            close(fd);
            fd = -1;
        }
    } else {
        snprintf(err, errlen, "socket: %s", strerror(errno));
    }
    freeaddrinfo(ai);
    return fd;
}

/* SO_REUSEPORT would also let a second toolgate (or any program of the
 * same user that sets it) bind beside the first and take half its
 * connections. So before the workers bind, the port is taken once
 * without it: that fails with "address in use" whoever listens there,
 * and is let go at once for the workers' sockets. */
static int port_free(const char *host, int port, char *err, size_t errlen)
{
    int fd = bind_listener(host, port, false, err, errlen);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

static int open_listener(const char *host, int port, char *err, size_t errlen)
{
    return bind_listener(host, port, true, err, errlen);
}

static int worker_start(server *s, worker *w, int id, tg_conf *conf, const char *host, int port,
                        char *err, size_t errlen)
{
    w->id = id;
    w->srv = s;
    w->body_bytes = &s->body_bytes;
    w->conf = tg_conf_ref(conf);
    w->curl_deadline_ms = -1;
    tg_random_init(&w->rng);
    w->listen_fd = open_listener(host, port, err, errlen);
    if (w->listen_fd < 0)
        return -1;
    /* The pool holds the headers and the read buffer, so its size is how
     * much of a body one recv() takes: with 32 KB over max_header a 184 KB
     * agent request takes 8 reads instead of 25 (big-100 at 64 connections:
     * 5,600 req/s instead of 4,950). But MHD zeroes half the pool of every
     * connection, and an open stream is mostly its pool: 5,000 streams
     * cost 33 KB each with 8 KB over max_header, 51 KB with 32 KB. Streams
     * that stay open for minutes win. */
    size_t memlimit = conf->max_header + 8 * 1024;
    /* MHD counts per daemon and the kernel spreads a client's connections
     * over the workers' sockets evenly: each worker takes its share of
     * max_conns_per_ip (0: MHD's "no limit") */
    unsigned per_ip = conf->max_conns_per_ip
                          ? (unsigned)((conf->max_conns_per_ip + conf->threads - 1) / conf->threads)
                          : 0;
    w->mhd = MHD_start_daemon(
        MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO, 0, NULL, NULL, on_request, w,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)w->listen_fd, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, w, MHD_OPTION_NOTIFY_CONNECTION, on_connection, w,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)300,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)60000, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        memlimit, MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip, MHD_OPTION_END);
    if (!w->mhd) {
        snprintf(err, errlen, "cannot start the HTTP front end on %s:%d", host, port);
        return -1;
    }
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    w->ctlfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(w->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG(K_MHD, 0, di->epoll_fd)};
    epoll_ctl(w->epfd, EPOLL_CTL_ADD, di->epoll_fd, &ev);
    ev.data.u64 = TAG(K_CTL, 0, w->ctlfd);
    epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->ctlfd, &ev);
    w->multi = curl_multi_init();
    curl_multi_setopt(w->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
    curl_multi_setopt(w->multi, CURLMOPT_SOCKETDATA, w);
    curl_multi_setopt(w->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
    curl_multi_setopt(w->multi, CURLMOPT_TIMERDATA, w);
    curl_multi_setopt(w->multi, CURLMOPT_MAXCONNECTS, 512L);
    w->cache = tg_cache_new(256, 64u << 20);
    w->metrics = tg_metrics_worker(s->metrics, id);
    return pthread_create(&w->thread, NULL, worker_main, w) ? -1 : 0;
}

static void worker_cleanup(worker *w)
{
    /* libmicrohttpd aborts the process when stopped with a connection
     * suspended: a client that did not take its end in time is resumed
     * (and closed by the stop) */
    for (tg_req *r = w->inflight; r; r = r->next)
        req_resume(r);
    flush_resumes(w);
    if (w->mhd)
        MHD_stop_daemon(w->mhd);
    /* Anything still holding a transfer after the grace period is dropped. */
    for (tg_req *r = w->inflight, *next; r; r = next) {
        next = r->next;
        stop_upstream(r);
    }
    while (w->n_spare)
        curl_easy_cleanup(w->spare[--w->n_spare]);
    if (w->multi)
        curl_multi_cleanup(w->multi);
    free(w->upfd);
    if (w->epfd > 0)
        close(w->epfd);
    if (w->ctlfd > 0)
        close(w->ctlfd);
    tg_cache_free(w->cache);
    tg_conf_unref(atomic_exchange(&w->pending_conf, NULL));
    tg_conf_unref(w->conf);
}

static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void reload(server *s, const char *path)
{
    tg_buf errs = {0};
    tg_conf *n = tg_conf_load(path, &errs);
    if (!n) {
        tg_log(TG_LOG_ERROR, "reload of %s rejected, the running conf stays:\n%s", path,
               errs.data ? errs.data : "");
        tg_buf_free(&errs);
        return;
    }
    tg_buf_free(&errs);
    for (int i = 0; i < s->n; i++) {
        tg_conf_unref(atomic_exchange(&s->workers[i].pending_conf, tg_conf_ref(n)));
        uint64_t one = 1;
        ssize_t wr = write(s->workers[i].ctlfd, &one, sizeof one);
        (void)wr;
    }
    tg_log(TG_LOG_INFO, "reloaded %s: %d routes", path, n->n_routes);
    tg_conf_unref(n);
}

int tg_server_run(tg_conf *conf, const char *conf_path, const char *listen_override)
{
    char *host = strdup(conf->listen_host);
    int port = conf->listen_port;
    if (listen_override) {
        const char *colon = strrchr(listen_override, ':');
        if (!colon) {
            fprintf(stderr, "toolgate: --listen: expected HOST:PORT\n");
            free(host);
            return 2;
        }
        free(host);
        host = strndup(listen_override, (size_t)(colon - listen_override));
        if (host[0] == '[') {
            memmove(host, host + 1, strlen(host));
            host[strlen(host) - 1] = '\0';
        }
        port = atoi(colon + 1);
    }
    raise_fd_limit();
    /* Request bodies of a few hundred KB come and go at thousands a second:
     * keep them on the workers' heaps instead of an mmap, page faults and
     * munmap for each (glibc's dynamic threshold also trims worker heaps
     * back with madvise, so the next body faults its pages in again). */
    mallopt(M_MMAP_THRESHOLD, 8 << 20);
    mallopt(M_TRIM_THRESHOLD, 16 << 20);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    signal(SIGPIPE, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    server s = {0};
    s.n = conf->threads;
    s.workers = calloc((size_t)s.n, sizeof *s.workers);
    s.metrics = tg_metrics_new(s.n);
    char err[320] = "";
    s.items = tg_store_open(conf, s.n, err, sizeof err);
    if (!s.items) {
        fprintf(stderr, "toolgate: %s\n", err);
        tg_metrics_free(s.metrics);
        free(s.workers);
        free(host);
        curl_global_cleanup();
        return 1;
    }
    tg_log(TG_LOG_INFO, "Responses items kept in %s", s.items->name);
    int started = 0;
    bool free_port = port_free(host, port, err, sizeof err) == 0;
    if (!free_port)
        fprintf(stderr, "toolgate: %s\n", err);
    for (int i = 0; free_port && i < s.n; i++) {
        if (worker_start(&s, &s.workers[i], i, conf, host, port, err, sizeof err)) {
            fprintf(stderr, "toolgate: %s\n", err);
            break;
        }
        started++;
    }
    int code = 0;
    if (free_port && started == s.n) {
        atomic_store(&s.ready, 1);
        tg_log(TG_LOG_INFO, "listening on %s:%d with %d workers, %d routes (%s)", host, port, s.n,
               conf->n_routes, conf_path ? conf_path : "-");
        for (;;) {
            int sig;
            if (sigwait(&set, &sig))
                continue;
            if (sig == SIGHUP && conf_path) {
                reload(&s, conf_path);
                continue;
            }
            if (sig == SIGTERM || sig == SIGINT)
                break;
        }
        tg_log(TG_LOG_INFO, "stopping: finishing requests in flight");
    } else {
        code = 1;
    }
    for (int i = 0; i < started; i++) {
        atomic_store(&s.workers[i].stop, 1);
        uint64_t one = 1;
        ssize_t wr = write(s.workers[i].ctlfd, &one, sizeof one);
        (void)wr;
    }
    for (int i = 0; i < started; i++)
        pthread_join(s.workers[i].thread, NULL);
    for (int i = 0; i < s.n; i++)
        worker_cleanup(&s.workers[i]);
    free(s.workers);
    tg_metrics_free(s.metrics);
    tg_store_free(s.items);
    free(host);
    curl_global_cleanup();
    return code;
}
