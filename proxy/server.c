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
#include "proxy/retry.h"
#include "proxy/bridges.h"
#include "proxy/prepare.h"

#define TG_VERSION_HDR "toolgate"

/* Upstream sockets stay in the worker's epoll set between transfers: curl
 * removes a keep-alive connection's socket after every response and adds it
 * back for the next request, two epoll_ctl calls a request for nothing. A
 * removed socket that was only waiting for input is parked instead (still
 * registered, ignored); an event on a parked socket (the upstream closed
 * it) unregisters it. Upstream sockets are opened and closed through our
 * callbacks, which reset the state, so a new socket that gets a closed
 * one's number starts unregistered. */
enum { UPFD_IN = 1, UPFD_OUT = 2, UPFD_REG = 4, UPFD_PARKED = 8 };

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

static void maybe_unpause(tg_req *r)
{
    if (r->up.paused && r->up.easy && r->stream.out.len - r->stream.out_off < STREAM_LOW_WATER) {
        r->up.paused = false;
        curl_easy_pause(r->up.easy, CURLPAUSE_CONT);
    }
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

/* ---- upstream (curl) ----------------------------------------------------- */

static void upstream_done(tg_req *r);
static int start_upstream(tg_req *r, const char *url, const char *method);

static void on_sse_event(void *user, const char *event, const char *data, size_t len)
{
    tg_req *r = user;
    (void)event;
    tg_stream_event(r->stream.repair, data, len, stream_dst(r));
    bridge_flush(r, false);
}

static void on_sse_comment(void *user, const char *text, size_t len)
{
    tg_req *r = user;
    /* Keep-alive comments keep idle clients and their proxies from timing out. */
    tg_buf_append(&r->stream.out, text, len);
    tg_buf_append(&r->stream.out, "\n\n", 2);
}

/* A parser for the (next) upstream stream, bounded by max_event. */
static void sse_start(tg_req *r)
{
    tg_sse_init(&r->stream.sse, on_sse_event, on_sse_comment, r);
    r->stream.sse.max_event = r->conf->max_event;
}

static bool header_is(const char *line, size_t n, const char *name)
{
    size_t k = strlen(name);
    return n > k && line[k] == ':' && !strncasecmp(line, name, k);
}

/* No retry or fallback once a stream has begun, so the client's raw body
 * (an agent's may be hundreds of KB) can go now rather than live as long as
 * the stream. Nor does the body sent upstream, once curl has sent all of
 * it: agents' streams would otherwise each hold their request (tool lists
 * included) for as long as the model talks. */
static void release_bodies(tg_req *r)
{
    r->client.body_len = r->client.body.len;
    tg_buf_free(&r->client.body);
    body_release(r);
    curl_off_t sent = 0;
    r->up.len = up_body_len(r);
    if (!curl_easy_getinfo(r->up.easy, CURLINFO_SIZE_UPLOAD_T, &sent) &&
        sent == (curl_off_t)r->up.len)
        up_body_free(r);
}

/* A request toolgate passes through (an agent API on a route that passes
 * it, or any other /v1 path) whose provider answers a 2xx event stream:
 * the bytes go to the client as they come, with no parser and nothing
 * held but what the client has not read yet (the pause bounds it). Before
 * this, such a stream (Claude Code on an anthropic route) reached the
 * client whole, at its end. */
static bool start_raw_stream(tg_req *r, const char *ct)
{
    if (r->prep.is_chat || r->state != RQ_WAIT || r->up.status < 200 || r->up.status >= 300 || !ct ||
        !strstr(ct, "text/event-stream"))
        return false;
    r->stream.is_sse = r->stream.raw = true;
    r->answer.status = (int)r->up.status;
    release_bodies(r);
    r->state = RQ_READY;
    req_resume(r);
    return true;
}

/* Headers of the final response decide the mode: a 2xx event stream to a
 * streaming request is relayed as it comes; everything else is collected. */
static void on_upstream_headers_done(tg_req *r)
{
    r->up.headers_done = true;
    const char *ct = tg_header_get(&r->up.hdrs, "content-type");
    r->up.round_sse = false;  /* collected whole unless it is the stream we asked for */
    if (start_raw_stream(r, ct))
        return;
    if (r->ctx.stream && r->up.status >= 200 && r->up.status < 300 && ct &&
        strstr(ct, "text/event-stream")) {
        r->stream.is_sse = r->up.round_sse = true;
        if (r->state == RQ_WAIT && !r->stream.repair) {
            r->answer.status = (int)r->up.status;  /* the client's, whatever later rounds say */
            release_bodies(r);
            if (tg_ctx_trim_request(&r->ctx)) {  /* the log reads the model from r->json */
                json_decref(r->json);
                r->json = json_incref(r->ctx.request);
            }
            r->stream.repair = tg_stream_new(&r->ctx);
            sse_start(r);
            r->state = RQ_READY;
            req_resume(r);
        } else {
            /* a later discovery round: same client stream, fresh parser */
            tg_sse_free(&r->stream.sse);
            sse_start(r);
        }
    }
}

static size_t on_upstream_header(char *line, size_t size, size_t nitems, void *ud)
{
    tg_req *r = ud;
    size_t n = size * nitems;
    if (n >= 5 && !strncmp(line, "HTTP/", 5)) {
        const char *sp = memchr(line, ' ', n);
        r->up.status = sp ? strtol(sp + 1, NULL, 10) : 0;
        tg_header_list_free(&r->up.hdrs);
        return n;
    }
    if (n <= 2 && (line[0] == '\r' || line[0] == '\n')) {
        if (r->up.status >= 200)
            on_upstream_headers_done(r);
        return n;
    }
    /* Headers the client must not receive from us as they are. */
    if (header_is(line, n, "content-length") || header_is(line, n, "transfer-encoding") ||
        header_is(line, n, "content-encoding") || header_is(line, n, "connection") ||
        header_is(line, n, "keep-alive") || header_is(line, n, "date") ||
        header_is(line, n, "proxy-connection") || header_is(line, n, "upgrade") ||
        header_is(line, n, "trailer") || header_is(line, n, "te") ||
        header_is(line, n, "x-request-id"))
        return n;
    tg_header_list_add_line(&r->up.hdrs, line, n);
    return n;
}

/* An upstream event past max_event (one endless line, or data lines
 * without the blank line that ends an event): the agent's stream ends
 * with the error event of a cut stream, in its API's shape, and the
 * transfer stops (the caller returns 0 to curl). */
static void cut_long_event(tg_req *r)
{
    char msg[192];
    snprintf(msg, sizeof msg,
             "upstream sent a stream event larger than max_event (%zu bytes); the stream was cut",
             r->conf->max_event);
    tg_log(TG_LOG_WARN, "request %s: route %s: %s", r->id, r->route->name, msg);
    tg_metrics_limit(r->w->metrics, TG_LIMIT_MAX_EVENT);
    tg_stream_fail(r->stream.repair, "event_too_large", msg, stream_dst(r));
    bridge_flush(r, false);
    req_resume(r);
}

static size_t on_upstream_data(char *data, size_t size, size_t nmemb, void *ud)
{
    tg_req *r = ud;
    size_t n = size * nmemb;
    uint64_t t = now_us();
    if (!r->up.t_first_byte)
        r->up.t_first_byte = t;
    r->up.t_last_byte = t;
    if (r->client.gone)
        return 0;  /* abort the transfer */
    if (!r->up.headers_done)
        on_upstream_headers_done(r);
    /* A slow client of a stream: leave the bytes with curl (they come
     * again on unpause) rather than buffer without bound. */
    if ((r->stream.raw || (r->stream.is_sse && r->up.round_sse)) &&
        r->stream.out.len - r->stream.out_off > STREAM_HIGH_WATER) {
        r->up.paused = true;
        return CURL_WRITEFUNC_PAUSE;
    }
    if (r->stream.raw) {
        tg_buf_append(&r->stream.out, data, n);
        req_resume(r);
        return n;
    }
    if (r->stream.is_sse && r->up.round_sse) {
        if (tg_sse_feed(&r->stream.sse, data, n)) {
            cut_long_event(r);
            return 0;
        }
        if (r->stream.out.len > r->stream.out_off)
            req_resume(r);
        return n;
    }
    /* Bytes as decoded (curl inflates gzip, br, zstd before this call), so
     * a small compressed answer cannot grow past the bound either. */
    if (r->up.resp.len + n > r->conf->max_answer) {
        r->up.cut = true;
        tg_buf_free(&r->up.resp);
        return 0;  /* stops the transfer */
    }
    tg_buf_append(&r->up.resp, data, n);
    return n;
}

/* The headers sent upstream: the client's that a provider reads (http.h:
 * an allow-list, credentials by their own rules), then the provider key:
 * the route's api_key, else what the client sent in
 * x-upstream-authorization, else the client's own Authorization unless it
 * was toolgate's client key, which never leaves toolgate. */

static struct curl_slist *build_upstream_headers(tg_req *r, bool is_json_body)
{
    struct curl_slist *h = NULL;
    /* a request passed to the API's own servers takes the key where they
     * read it (Anthropic's: x-api-key) */
    const char *key_header = r->prep.api && !r->prep.bridge ? r->prep.api->key_header : NULL;
    const char *up_auth = client_header(r, "x-upstream-authorization");
    tg_forward_ctx f = {.list = &h, .drop_auth = r->route->api_key != NULL,
                        .client_key = r->client.key, .upstream_auth = up_auth,
                        .extra = r->conf->forward_headers};
    MHD_get_connection_values(r->client.conn, MHD_HEADER_KIND, tg_forward_request_header, &f);
    tg_buf b = {0};
    if (r->route->api_key && key_header)
        tg_buf_printf(&b, "%s: %s", key_header, r->route->api_key);
    else if (r->route->api_key)
        tg_buf_printf(&b, "Authorization: Bearer %s", r->route->api_key);
    else if (up_auth && *up_auth)
        tg_buf_printf(&b, "Authorization: %s", up_auth);
    if (b.len)
        h = curl_slist_append(h, b.data);
    tg_buf_free(&b);
    char idh[96];
    snprintf(idh, sizeof idh, "X-Request-Id: %s", r->id);
    h = curl_slist_append(h, idh);
    const char *ct = client_header(r, "content-type");
    if (is_json_body) {
        h = curl_slist_append(h, "Content-Type: application/json");
    } else if (ct && *ct) {  /* a passed body goes with the type it came with */
        tg_buf t = {0};
        tg_buf_printf(&t, "Content-Type: %s", ct);
        h = curl_slist_append(h, t.data);
        tg_buf_free(&t);
    }
    h = curl_slist_append(h, "Expect:");  /* no 100-continue round trip */
    return h;
}

static int on_curl_close(void *userp, curl_socket_t s);
static curl_socket_t on_curl_open(void *userp, curlsocktype purpose, struct curl_sockaddr *a);

/* The upstream body in pieces: an agent's tool list (hundreds of KB, the
 * same every turn) is sent from the worker cache's text of it, so the body
 * is never assembled: curl reads the head, the tools' text and the tail through
 * on_upstream_read, one copy into its upload buffer instead of two. */
static size_t on_upstream_read(char *buf, size_t size, size_t n, void *userp)
{
    tg_req *r = userp;
    size_t want = size * n, got = 0;
    size_t hl = r->up.body.len, tl = json_string_length(r->up.tools);
    while (got < want && r->up.pos < hl + tl + TAIL_LEN) {
        const char *src;
        size_t avail;
        if (r->up.pos < hl) {
            src = r->up.body.data + r->up.pos;
            avail = hl - r->up.pos;
        } else if (r->up.pos < hl + tl) {
            src = json_string_value(r->up.tools) + (r->up.pos - hl);
            avail = hl + tl - r->up.pos;
        } else {
            src = &TG_REQUEST_TAIL[r->up.pos - hl - tl];
            avail = hl + tl + TAIL_LEN - r->up.pos;
        }
        size_t k = avail < want - got ? avail : want - got;
        memcpy(buf + got, src, k);
        got += k;
        r->up.pos += k;
    }
    return got;
}

/* curl rewinds when it resends on a fresh connection (a kept-alive one
 * that the upstream had closed). */
static int on_upstream_seek(void *userp, curl_off_t offset, int origin)
{
    tg_req *r = userp;
    if (origin != SEEK_SET || offset < 0 || (size_t)offset > up_body_len(r))
        return CURL_SEEKFUNC_CANTSEEK;
    r->up.pos = (size_t)offset;
    return CURL_SEEKFUNC_OK;
}

static int start_upstream(tg_req *r, const char *url, const char *method)
{
    worker *w = r->w;
    const tg_route *rt = r->route;
    CURL *e = w->n_spare ? w->spare[--w->n_spare] : curl_easy_init();
    if (!e)
        return -1;
    char *u = strdup(url);  /* url may be r->up.url itself (another round) */
    free(r->up.url);
    r->up.url = u;
    r->up.status = 0;
    r->up.headers_done = false;
    r->up.t_first_byte = 0;
    tg_header_list_free(&r->up.hdrs);
    tg_buf_reset(&r->up.resp);
    r->up.cut = false;
    if (!r->up.headers)
        r->up.headers = build_upstream_headers(r, r->prep.is_chat);
    curl_easy_setopt(e, CURLOPT_URL, r->up.url);
    /* the path was checked for dot segments (refuse_on_headers): curl
     * must not resolve any it would find in the route's base URL either */
    curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->up.headers);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_upstream_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_upstream_data);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");  /* decoded bytes count (max_answer) */
    /* an upstream's 3xx goes to the client as it came: followed, it
     * would take the request (and the route's key) where it names */
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    /* Streams hold a transfer open for minutes and their events are small:
     * a 4 KB receive buffer instead of curl's 16 KB keeps thousands of open
     * streams affordable (5,000: 20 MB); whole answers keep the default,
     * fewer reads. 1 KB took a read and a poll per KB of a burst: the
     * bench's tool-call stream (5 KB at once) cost 5 of each, and 4 KB
     * measured 6% less CPU per request. */
    if (r->ctx_live && r->ctx.stream)
        curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 4096L);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_curl_open);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, w);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, on_curl_close);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, w);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, rt->connect_timeout_ms);
    if (rt->total_timeout_ms)
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, rt->total_timeout_ms);
    if (!strcmp(method, "POST")) {
        size_t total = up_body_len(r);
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        if (r->up.tools) {
            r->up.pos = 0;
            curl_easy_setopt(e, CURLOPT_READFUNCTION, on_upstream_read);
            curl_easy_setopt(e, CURLOPT_READDATA, r);
            curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_upstream_seek);
            curl_easy_setopt(e, CURLOPT_SEEKDATA, r);
        } else {
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->up.body.data ? r->up.body.data : "");
        }
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)total);
        /* curl copies a body past 64 KB through its upload buffer, 64 KB a
         * send; an agent's 200 KB request then takes one send, not four.
         * The buffer lives only for the transfer. */
        size_t ul = total < (512u << 10) ? total : (512u << 10);
        if (!r->ctx.stream && ul > 64 * 1024)  /* streams keep theirs as long as they run */
            curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, (long)ul);
        else
            curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 64 * 1024L);
    } else if (!strcmp(method, "GET")) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
        if (r->up.body.len) {
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->up.body.data);
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->up.body.len);
        }
    }
    r->up.easy = e;
    r->up.running = true;
    r->up.t_start = now_us();
    r->up.t_last_byte = r->up.t_start;
    req_ref(r);
    if (curl_multi_add_handle(w->multi, e) != CURLM_OK) {
        r->up.easy = NULL;
        r->up.running = false;
        curl_easy_cleanup(e);
        req_unref(r);
        return -1;
    }
    return 0;
}

static void stop_upstream(tg_req *r)
{
    if (!r->up.easy)
        return;
    worker *w = r->w;
    curl_multi_remove_handle(w->multi, r->up.easy);
    if (w->n_spare < (int)(sizeof w->spare / sizeof w->spare[0])) {
        curl_easy_reset(r->up.easy);
        w->spare[w->n_spare++] = r->up.easy;
    } else {
        curl_easy_cleanup(r->up.easy);
    }
    r->up.easy = NULL;
    r->up.running = false;
    req_unref(r);
}

/* ---- answers built from the upstream's -------------------------------- */

static bool is_json_type(tg_req *r)
{
    const char *ct = tg_header_get(&r->up.hdrs, "content-type");
    return !ct || strstr(ct, "json");
}

static void finish_stream(tg_req *r, bool transport_error)
{
    tg_sse_finish(&r->stream.sse);
    json_t *next = NULL;
    if (tg_stream_end(r->stream.repair, transport_error, stream_dst(r), &next) == 1 && next) {
        up_body_free(r);
        tg_json_dump(next, &r->up.body);
        json_decref(next);
        if (start_upstream(r, r->up.url, "POST") == 0) {
            bridge_flush(r, false);
            req_resume(r);
            return;
        }
        json_t *ignored = NULL;
        tg_stream_end(r->stream.repair, true, stream_dst(r), &ignored);
        json_decref(ignored);
    }
    bridge_flush(r, true);
    r->stream.done = true;
    req_resume(r);
}

/* A later discovery round of a stream that the provider answered whole:
 * a completion (some gateways answer so) goes on through the stream as
 * the chunks it would have been; an error ends the client's stream with
 * the provider's error (status, message, code) in the stream's own error
 * shape, or, when nothing has reached the client yet, as the error answer
 * itself, with its status. Logged and counted either way: a lost error
 * makes agents retry blind (Codex retried five times on stream_truncated). */
static void relay_upstream_error(tg_req *r, int status);

/* A discovery round toolgate built was refused: a warning with the
 * provider's words, and the count. */
static void round_refused(tg_req *r)
{
    size_t len = r->up.resp.len;
    tg_metrics_round_error(r->w->metrics);
    tg_log(TG_LOG_WARN, "request %s: upstream %s refused discovery round %u with %ld: %.*s",
           r->id, r->route->upstream, r->ctx.stats.discovery_rounds, r->up.status,
           (int)(len < 400 ? len : 400), r->up.resp.data ? r->up.resp.data : "");
}

static void round_answered_whole(tg_req *r)
{
    const char *body = r->up.resp.data ? r->up.resp.data : "";
    size_t len = r->up.resp.len;
    if (r->up.status >= 200 && r->up.status < 300) {
        json_t *resp = tg_json_load_answer(body, len);
        tg_buf sse = {0};
        if (json_is_object(resp) && !json_object_get(resp, "error") &&
            tg_completion_sse(resp, &sse) == 0) {
            json_decref(resp);
            r->up.round_sse = true;
            tg_sse_feed(&r->stream.sse, sse.data, sse.len);
            tg_buf_free(&sse);
            finish_stream(r, false);
            return;
        }
        json_decref(resp);
        tg_buf_free(&sse);
    }
    round_refused(r);
    if (r->state == RQ_READY && !r->stream.out.len && !r->stream.chat_out.len) {
        /* the client has had nothing, not even the status line */
        r->stream.is_sse = false;
        relay_upstream_error(r, r->up.status >= 400 ? (int)r->up.status : 502);
        req_resume(r);
        return;
    }
    tg_stream_round_refused(r->stream.repair, r->up.status, body, len, stream_dst(r));
    bridge_flush(r, true);
    r->stream.done = true;
    req_resume(r);
}

/* A generation failure the repair stage can turn into a tool call (Groq's
 * tool_use_failed, R27) on a streaming request: the agent asked for SSE, so
 * the recovered answer goes out as a stream, through the stream repair. */
static void answer_recovered_stream(tg_req *r)
{
    r->stream.repair = tg_stream_new(&r->ctx);
    sse_start(r);
    tg_stream_event(r->stream.repair, r->up.resp.data, r->up.resp.len, stream_dst(r));
    json_t *next = NULL;
    tg_stream_end(r->stream.repair, false, stream_dst(r), &next);
    json_decref(next);
    bridge_flush(r, true);
    tg_header_list_free(&r->up.hdrs);
    tg_header_list_add_line(&r->up.hdrs, "Content-Type: text/event-stream", 31);
    r->up.status = 200;
    r->answer.status = 200;
    r->stream.is_sse = true;
    r->stream.done = true;
    r->state = RQ_READY;
}

/* Did the response stages leave the answer exactly as the provider sent
 * it? Only when no repair was noted and nothing could have been mapped back
 * (tool names, arguments, ids, discovery rounds). */
static bool answer_untouched(const tg_req *r, unsigned repairs, unsigned failures)
{
    const tg_ctx *c = &r->ctx;
    return c->stats.repairs == repairs && c->stats.repair_failures == failures && !c->name_map &&
           !c->arg_inverse && !c->id_map && !c->disc_state;
}

/* An upstream error answer, with the upstream's status (or `status` for a
 * 2xx that carried no answer): relayed as it came when OpenAI-shaped, else
 * rewritten into that shape with the provider's message kept, so that
 * every client shows it. */
static void relay_upstream_error(tg_req *r, int status)
{
    size_t len = r->up.resp.len, n = 0;
    char *norm = tg_upstream_error_body(r->up.resp.data, len, r->up.status, &n);
    if (!norm) {
        set_answer(r, status, tg_buf_steal(&r->up.resp, &len), len, true);
        return;
    }
    set_answer(r, status, norm, n, true);
    r->answer.type = "application/json";
}

/* A whole (non-streamed) answer from upstream: repair it, or run another
 * discovery round, or relay an error in OpenAI's shape. */
static void finish_whole(tg_req *r)
{
    size_t len = r->up.resp.len;
    if (!r->prep.is_chat) {
        set_answer(r, (int)r->up.status, tg_buf_steal(&r->up.resp, &len), len, true);
        return;
    }
    if (r->up.status < 200 || r->up.status >= 300) {
        json_t *err = (r->up.status == 400 && is_json_type(r))
                          ? tg_json_load(r->up.resp.data ? r->up.resp.data : "", len, 0, NULL)
                          : NULL;
        if (err && tg_repair_response(err, &r->ctx) == TG_REPAIR_NOW_SUCCESS) {
            if (r->ctx.stream) {
                json_decref(err);
                answer_recovered_stream(r);  /* from the original bytes */
                return;
            }
            char *s = tg_json_dumps(err);
            json_decref(err);
            set_answer(r, 200, s, strlen(s), false);
            return;
        }
        json_decref(err);
        if (r->ctx.stats.discovery_rounds)  /* a round toolgate built was refused */
            round_refused(r);
        relay_upstream_error(r, (int)r->up.status);
        return;
    }
    if (tg_repair_surely_plain(&r->ctx, r->up.resp.data ? r->up.resp.data : "", len)) {
        /* Most answers carry no tool call and need nothing: relayed as
         * they came, without paying for a parse. */
        set_answer(r, (int)r->up.status, tg_buf_steal(&r->up.resp, &len), len, true);
        return;
    }
    json_t *resp = tg_json_load_answer(r->up.resp.data ? r->up.resp.data : "", len);
    if (!json_is_object(resp)) {
        /* a success status over an error ([{"error": ...}]) or garbage:
         * what the provider said, as an error the agent can read */
        json_decref(resp);
        relay_upstream_error(r, 502);
        return;
    }
    json_t *next = NULL;
    unsigned repairs = r->ctx.stats.repairs, failures = r->ctx.stats.repair_failures;
    if (tg_pipeline_response(resp, &r->ctx, &next) == 1 && next) {
        json_decref(resp);
        up_body_free(r);
        tg_json_dump(next, &r->up.body);
        json_decref(next);
        if (start_upstream(r, r->up.url, "POST") == 0)
            return;
        set_error(r, 502, "upstream_error", "upstream_unreachable", NULL,
                  "could not start the next discovery round");
        return;
    }
    if (r->ctx.stream) {
        /* The agent asked for a stream and the provider answered whole
         * (older Ollama with tools, some gateways): sent as the stream it
         * would have been, or the agent's client finds no chunk at all. */
        tg_buf sse = {0};
        if (tg_completion_sse(resp, &sse) == 0) {
            json_decref(resp);
            char *s = tg_buf_steal(&sse, &len);
            set_answer(r, (int)r->up.status, s, len, true);
            r->answer.type = "text/event-stream";
            return;
        }
        tg_buf_free(&sse);
    }
    if (answer_untouched(r, repairs, failures)) {
        /* Nothing was repaired or mapped: the provider's own bytes, as they
         * came, which also spares serializing them again. */
        json_decref(resp);
        set_answer(r, (int)r->up.status, tg_buf_steal(&r->up.resp, &len), len, true);
        return;
    }
    tg_buf out = {0};
    tg_json_dump(resp, &out);
    json_decref(resp);
    char *s = tg_buf_steal(&out, &len);
    set_answer(r, (int)r->up.status, s, len, true);
}

/* Worth another try (retry.h) -- and nothing has reached the client yet. */
static bool retryable(const tg_req *r)
{
    return !r->client.gone && r->state == RQ_WAIT &&
           tg_retryable(r->up.result, r->up.status, r->up.timed_out);
}

/* Try again later, or now on the fallback route. True when it did. */
static bool retry_or_fall_back(tg_req *r)
{
    if (!retryable(r))
        return false;
    long delay = tg_retry_delay_ms(r->up.attempt, r->route->retries,
                                   tg_header_get(&r->up.hdrs, "retry-after"), now_us());
    if (delay >= 0) {
        r->up.attempt++;
        r->up.retry_at = now_us() + (uint64_t)delay * 1000 + 1;
        r->w->n_retry_wait++;
        tg_metrics_retry(r->w->metrics);
        tg_log(TG_LOG_INFO, "request %s: upstream %s answered %ld (%s); retry %d in %ld ms",
               r->id, r->route->upstream_shown, r->up.status, curl_easy_strerror(r->up.result),
               r->up.attempt, delay);
        return true;
    }
    const char *fb_name = tg_fallback_route(r->route->fallback, r->up.fell_back, r->prep.is_chat);
    const tg_route *fb = fb_name ? tg_route_by_name(r->conf, fb_name) : NULL;
    if (!fb)
        return false;
    tg_log(TG_LOG_WARN, "request %s: route %s failed (%ld), falling back to route %s", r->id,
           r->route->name, r->up.status, fb->name);
    r->up.fell_back = true;
    r->up.attempt = 0;
    if (prepare_route(r, fb))
        return false;
    tg_buf u = {0};
    tg_buf_printf(&u, "%s/chat/completions", fb->upstream);
    int rc = start_upstream(r, u.data, "POST");
    tg_buf_free(&u);
    return rc == 0;
}

static void fire_due_retries(worker *w, uint64_t t)
{
    for (tg_req *r = w->inflight; r && w->n_retry_wait > 0; r = r->next) {
        if (!r->up.retry_at || r->up.retry_at > t)
            continue;
        r->up.retry_at = 0;
        w->n_retry_wait--;
        if (r->client.gone)
            continue;
        char *url = strdup(r->up.url);
        if (start_upstream(r, url, r->client.method)) {
            set_error(r, 502, "upstream_error", "upstream_unreachable", NULL,
                      "could not start the upstream request");
            req_resume(r);
        }
        free(url);
    }
}

static void upstream_done(tg_req *r)
{
    CURLcode rc = r->up.result;
    if (r->client.gone) {
        r->stream.done = true;
        req_resume(r);
        return;
    }
    if (r->up.cut) {
        tg_log(TG_LOG_WARN, "request %s: route %s: upstream answered more than max_answer (%zu bytes)",
               r->id, r->route->name, r->conf->max_answer);
        tg_metrics_limit(r->w->metrics, TG_LIMIT_MAX_ANSWER);
        set_error(r, 502, "upstream_error", "answer_too_large", NULL,
                  "the upstream of route %s answered more than max_answer (%zu bytes, counted "
                  "decoded); the answer was cut off",
                  r->route->name, r->conf->max_answer);
        req_resume(r);
        return;
    }
    if (retry_or_fall_back(r))
        return;
    if (rc != CURLE_OK)
        tg_metrics_upstream_error(r->w->metrics, 0);
    else if (r->up.status >= 400)
        tg_metrics_upstream_error(r->w->metrics, r->up.status);
    if (r->stream.raw && r->state >= RQ_READY) {
        if (rc != CURLE_OK || r->up.timed_out) {
            char msg[256];
            snprintf(msg, sizeof msg, "upstream %s cut the stream: %s (route %s)",
                     r->route->upstream_shown,
                     r->up.timed_out ? "timed out" : curl_easy_strerror(rc), r->route->name);
            tg_log(TG_LOG_WARN, "request %s: %s", r->id, msg);
            raw_stream_error(r, r->up.timed_out ? "upstream_timeout" : "stream_truncated", msg);
        }
        r->stream.done = true;
        req_resume(r);
        return;
    }
    if (r->stream.is_sse && r->state >= RQ_READY && r->stream.repair) {
        if (rc == CURLE_OK && !r->up.timed_out && !r->up.round_sse)
            round_answered_whole(r);
        else
            finish_stream(r, rc != CURLE_OK || r->up.timed_out);
        return;
    }
    if (rc != CURLE_OK || r->up.timed_out) {
        bool timeout = tg_upstream_timed_out(r->up.timed_out, rc);
        if (timeout)
            set_error(r, 504, "upstream_error", "upstream_timeout", NULL,
                      "upstream %s did not answer in time (route %s)", r->route->upstream_shown,
                      r->route->name);
        else
            set_error(r, 502, "upstream_error", "upstream_unreachable", NULL,
                      "upstream %s failed: %s (route %s)", r->route->upstream_shown,
                      curl_easy_strerror(rc), r->route->name);
    } else {
        finish_whole(r);
    }
    if (r->state == RQ_READY)
        req_resume(r);
}

static void check_curl_done(worker *w)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(w->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        tg_req *r = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        CURLcode rc = m->data.result;
        r->up.result = rc;
        req_ref(r);
        stop_upstream(r);
        upstream_done(r);
        req_unref(r);
    }
}

static uint8_t *upfd_slot(worker *w, curl_socket_t s)
{
    if (s < 0)
        return NULL;
    if ((size_t)s >= w->n_upfd) {
        size_t n = w->n_upfd ? w->n_upfd : 256;
        while (n <= (size_t)s)
            n *= 2;
        uint8_t *p = realloc(w->upfd, n);
        if (!p)
            return NULL;
        memset(p + w->n_upfd, 0, n - w->n_upfd);
        w->upfd = p;
        w->n_upfd = n;
    }
    return &w->upfd[s];
}

static int on_curl_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    worker *w = userp;
    (void)e;
    (void)socketp;
    uint8_t *st = upfd_slot(w, s);
    if (what == CURL_POLL_REMOVE) {
        if (st && (*st & (UPFD_REG | UPFD_OUT)) == UPFD_REG && (*st & UPFD_IN)) {
            *st |= UPFD_PARKED;
        } else {
            epoll_ctl(w->epfd, EPOLL_CTL_DEL, s, NULL);
            if (st)
                *st = 0;
        }
        return 0;
    }
    uint8_t want = (uint8_t)((what & CURL_POLL_IN ? UPFD_IN : 0) |
                             (what & CURL_POLL_OUT ? UPFD_OUT : 0));
    struct epoll_event ev = {
        .events = (uint32_t)((want & UPFD_IN ? EPOLLIN : 0) | (want & UPFD_OUT ? EPOLLOUT : 0)),
        .data.u64 = TAG(K_CURL, 0, s)};
    if (st && (*st & UPFD_REG)) {
        if ((*st & (UPFD_IN | UPFD_OUT)) != want && epoll_ctl(w->epfd, EPOLL_CTL_MOD, s, &ev) &&
            errno == ENOENT)
            epoll_ctl(w->epfd, EPOLL_CTL_ADD, s, &ev);
    } else if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, s, &ev) != 0 && errno == EEXIST) {
        epoll_ctl(w->epfd, EPOLL_CTL_MOD, s, &ev);
    }
    if (st)
        *st = (uint8_t)(UPFD_REG | want);
    return 0;
}

/* An event for a curl socket: curl's, unless the socket is parked. */
static void on_curl_event(worker *w, curl_socket_t s, uint32_t events)
{
    uint8_t *st = (size_t)s < w->n_upfd ? &w->upfd[s] : NULL;
    if (st && (*st & UPFD_PARKED)) {
        epoll_ctl(w->epfd, EPOLL_CTL_DEL, s, NULL);
        *st = 0;
        return;
    }
    int running;
    int flags = (events & EPOLLIN ? CURL_CSELECT_IN : 0) | (events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                (events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
    curl_multi_socket_action(w->multi, s, flags, &running);
}

/* Every upstream socket is opened here, so a new socket never inherits the
 * state of a closed one that had the same number. */
static curl_socket_t on_curl_open(void *userp, curlsocktype purpose, struct curl_sockaddr *a)
{
    worker *w = userp;
    (void)purpose;
    curl_socket_t s = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
    if (s >= 0 && (size_t)s < w->n_upfd)
        w->upfd[s] = 0;
    return s < 0 ? CURL_SOCKET_BAD : s;
}

static int on_curl_close(void *userp, curl_socket_t s)
{
    worker *w = userp;
    if ((size_t)s < w->n_upfd)
        w->upfd[s] = 0;  /* close() drops it from the epoll set */
    return close(s);
}

static int on_curl_timer(CURLM *m, long timeout_ms, void *userp)
{
    worker *w = userp;
    (void)m;
    w->curl_deadline_ms = timeout_ms < 0 ? -1 : (long)(now_us() / 1000) + timeout_ms;
    return 0;
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

/* Time-to-first-byte and idle limits per route (retry.h says when an
 * upstream is late): a late one is stopped and ended as a timeout. Swept
 * a few times a second (proxy/server.c), plenty for limits counted in
 * seconds. */
static void time_out_if_late(tg_req *r, uint64_t t)
{
    const tg_route *rt = r->route;
    tg_lateness late = tg_upstream_late(t, r->up.t_start, r->up.t_first_byte, r->up.t_last_byte,
                                        rt->ttfb_timeout_ms, rt->idle_timeout_ms);
    if (late == TG_ON_TIME)
        return;
    tg_log(TG_LOG_WARN, "request %s: upstream %s timed out (%s)", r->id, rt->upstream_shown,
           late == TG_LATE_IDLE ? "idle_timeout" : "ttfb_timeout");
    r->up.timed_out = true;
    r->up.result = CURLE_OPERATION_TIMEDOUT;
    req_ref(r);
    stop_upstream(r);
    upstream_done(r);
    req_unref(r);
}

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
