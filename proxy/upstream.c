/* upstream.c -- the upstream transfer: one curl easy handle per round on
 * the worker's multi handle, its callbacks, and what the round's end
 * makes of the request.
 *
 * A round starts with start_upstream (the headers the provider reads, the
 * body in pieces, curl's options) and ends in upstream_done: the answer
 * whole (repaired, or another discovery round, or the provider's error in
 * OpenAI's shape), the end of a stream, a retry after a delay or the
 * route's fallback now. A 2xx event stream is decided on its headers
 * (on_upstream_headers_done): relayed as it comes, byte for byte when
 * passed through (raw), else event by event through the stream repair.
 * What is retried, when, where a route falls back to and when an upstream
 * is late are decided by the pure functions of proxy/retry.h; this file
 * only acts on them. The client is told through the request
 * (req_resume): nothing here calls proxy/front.c.
 */
#include "proxy/upstream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/jsonio.h"
#include "proxy/bridges.h"
#include "proxy/embed_wait.h"
#include "proxy/log.h"
#include "proxy/prepare.h"
#include "proxy/h1.h"
#include "proxy/retry.h"
#include "proxy/upconn.h"
#include "proxy/upsock.h"
#include "proxy/fold.h"

/* ---- a round's answer as it comes --------------------------------------- */

static void on_sse_event(void *user, const char *event, const char *data, size_t len)
{
    tg_req *r = user;
    (void)event;
    r->up.evented = true;
    tg_stream_event(r->stream.repair, data, len, stream_dst(r));
    bridge_flush(r, false);
}

static void on_sse_comment(void *user, const char *text, size_t len)
{
    tg_req *r = user;
    r->up.evented = true;
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

/* Headers the client must not receive from us as they are: framing and
 * hop-by-hop ones (MHD writes its own), and the upstream's request id
 * (ours goes out). Looked up by the name's length and first letter. */
static bool header_held_back(const char *line, size_t n)
{
    static const struct {
        const char *name;
        size_t len;
    } held[] = {
#define H(s) {s, sizeof s - 1}
        H("content-length"), H("transfer-encoding"), H("content-encoding"), H("connection"),
        H("keep-alive"), H("date"), H("proxy-connection"), H("upgrade"), H("trailer"), H("te"),
        H("x-request-id"),
#undef H
    };
    const char *colon = memchr(line, ':', n);
    if (!colon)
        return false;
    size_t k = (size_t)(colon - line);
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
        if (held[i].len == k && held[i].name[0] == (line[0] | 0x20) &&
            !strncasecmp(line, held[i].name, k))
            return true;
    return false;
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
    if (r->up.own ? r->up.h1 && upconn_sent_all(r->up.h1)
                  : !curl_easy_getinfo(r->up.easy, CURLINFO_SIZE_UPLOAD_T, &sent) &&
                        sent == (curl_off_t)r->up.len)
        up_body_free(r);
}

/* A request toolgate passes through (an agent API on a route that passes
 * it, or any other /v1 path) whose provider answers a 2xx event stream
 * (an agent API's request that asked for one answer is collected and
 * folded instead, fold_api_stream):
 * the bytes go to the client as they come, with no parser and nothing
 * held but what the client has not read yet (the pause bounds it). Before
 * this, such a stream (Claude Code on an anthropic route) reached the
 * client whole, at its end. */
static bool start_raw_stream(tg_req *r, const char *ct)
{
    if (r->prep.is_chat || r->state != RQ_WAIT || r->up.status < 200 || r->up.status >= 300 ||
        !ct || !strstr(ct, "text/event-stream") || (r->prep.api && !r->client.stream))
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

/* The upstream headers passed on to the client, at most. libmicrohttpd
 * writes the client's answer head in the connection's pool, which holds
 * max_header + 8 KB (proxy/server.c) and may still hold a request head of
 * max_header: a head that does not fit there was an empty reply (the
 * connection closed) logged as a 200. Providers send 1-2 KB; toolgate's
 * own headers take well under 1 KB of the rest. */
#define UP_HEAD_MAX (6u << 10)

static size_t on_upstream_header(char *line, size_t size, size_t nitems, void *ud)
{
    tg_req *r = ud;
    size_t n = size * nitems;
    if (n >= 5 && !memcmp(line, "HTTP/", 5)) {
        const char *sp = memchr(line, ' ', n);
        r->up.status = sp ? strtol(sp + 1, NULL, 10) : 0;
        tg_header_list_free(&r->up.hdrs);
        r->up.head_bytes = 0;
        return n;
    }
    if (r->up.head_cut)
        return 0;  /* stops curl's transfer; the own client's stops at its body */
    if (n <= 2 && (line[0] == '\r' || line[0] == '\n')) {
        if (r->up.status >= 200)
            on_upstream_headers_done(r);
        return n;
    }
    if (header_held_back(line, n))
        return n;
    r->up.head_bytes += n;
    if (r->up.head_bytes > UP_HEAD_MAX) {
        r->up.head_cut = true;
        tg_header_list_free(&r->up.hdrs);
        return 0;
    }
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
    /* A stream is idle until an event or comment ends (below): bytes a
     * second apart that end none kept it open as long as upstream liked. */
    bool sse = r->stream.is_sse && r->up.round_sse && !r->stream.raw;
    if (!sse)
        r->up.t_last_byte = t;
    if (r->client.gone || r->up.head_cut)
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
        /* Room for what this read's events come to (about the bytes read,
         * a little more where a rule writes): a burst, such as a tool
         * call's 5 KB, is one allocation instead of six doublings, while
         * a slow stream's small reads keep a small buffer (a fixed 4 KB
         * start cost 20 MB at 5,000 open streams). The client's reads
         * keep it (front.c stream_reader resets it below STREAM_KEEP). */
        tg_buf_reserve(&r->stream.out, n + n / 4);
        tg_stream *rs = r->stream.repair;
        if (rs)  /* this read's events: one clock read for all */
            tg_stream_clock(rs, t);
        r->up.evented = false;
        int cut = tg_sse_feed(&r->stream.sse, data, n);
        if (r->up.evented)
            r->up.t_last_byte = t;
        if (rs)
            tg_stream_clock(rs, 0);
        if (cut) {
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

void maybe_unpause(tg_req *r)
{
    if (!r->up.paused || r->stream.out.len - r->stream.out_off >= STREAM_LOW_WATER)
        return;
    if (r->up.h1) {
        r->up.paused = false;
        upconn_unpause(r->w, r->up.h1);
    } else if (r->up.easy) {
        r->up.paused = false;
        curl_easy_pause(r->up.easy, CURLPAUSE_CONT);
    }
}

/* ---- a round's start and stop --------------------------------------------- */

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
    if (r->route->api_key && key_header) {
        tg_header_line_append(&h, key_header, r->route->api_key);
    } else if (r->route->api_key) {
        tg_buf b = {0};
        tg_buf_printf(&b, "Authorization: Bearer %s", r->route->api_key);
        struct curl_slist *l = curl_slist_append(h, b.data);
        tg_buf_free(&b);
        if (!l)  /* curl is out of memory (core/tg.h) */
            tg_oom(sizeof *l);
        h = l;
    } else if (up_auth && *up_auth) {
        tg_header_line_append(&h, "Authorization", up_auth);
    }
    static const char idn[] = "X-Request-Id: ";
    _Static_assert(sizeof r->up.id_line >= sizeof idn + sizeof r->id, "room for the id");
    memcpy(r->up.id_line, idn, sizeof idn - 1);
    memcpy(r->up.id_line + sizeof idn - 1, r->id, strlen(r->id) + 1);
    r->up.id_node = (struct curl_slist){r->up.id_line, NULL};
    if (h) {  /* behind ours: the same order as before, no malloc */
        struct curl_slist *end = h;
        while (end->next)
            end = end->next;
        end->next = &r->up.id_node;
    } else {
        h = &r->up.id_node;
    }
    const char *ct = client_header(r, "content-type");
    if (!is_json_body && ct && *ct)  /* a passed body goes with the type it came with */
        tg_header_line_append(&h, "Content-Type", ct);
    /* the rest is the same for every request: the worker's nodes, linked
     * behind the last of ours (upstream_headers_free unlinks them) */
    struct curl_slist *tail = is_json_body ? &r->w->up_tail[0] : &r->w->up_tail[1], *last = h;
    while (last->next)
        last = last->next;
    last->next = tail;
    return h;
}

/* curl looks a transfer's proxy up in the environment every time: five
 * getenv a request (no_proxy, NO_PROXY, http_proxy, all_proxy, ALL_PROXY),
 * 3,000 instructions. Read once here with curl's rules (an empty variable
 * is unset; http never reads HTTP_PROXY, httpoxy; all_proxy is the
 * fallback), and handed to curl as its options, which curl then applies
 * exactly as it would the environment. toolgate never changes its
 * environment, so what getenv returns stays valid. */
static const char *env_first(const char *const *names)
{
    for (; *names; names++) {
        const char *v = getenv(*names);
        if (v && *v)
            return v;
    }
    return NULL;
}

void upstream_proxy_env(worker *w)
{
    static const char *const no[] = {"no_proxy", "NO_PROXY", NULL};
    static const char *const http[] = {"http_proxy", "all_proxy", "ALL_PROXY", NULL};
    static const char *const https[] = {"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
                                        NULL};
    w->no_proxy = env_first(no);
    w->http_proxy = env_first(http);
    w->https_proxy = env_first(https);
}

/* The worker's TLS state, once: a share of TLS sessions among its easy
 * handles (each handle keeps its own by default, so a connection opened on
 * another handle could not resume), and libcurl's built-in CA bundle.
 * Single-threaded use, so the share needs no lock callbacks. */
void upstream_tls_init(worker *w)
{
    w->tls_share = curl_share_init();
    if (w->tls_share)
        curl_share_setopt(w->tls_share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    CURL *e = curl_easy_init();
    char *ca = NULL;
    if (e && curl_easy_getinfo(e, CURLINFO_CAINFO, &ca) == CURLE_OK && ca)
        w->ca_builtin = tg_strdup(ca);
    if (e)
        curl_easy_cleanup(e);
}

void upstream_tls_free(worker *w)
{
    if (w->tls_share)
        curl_share_cleanup(w->tls_share);
    w->tls_share = NULL;
    free(w->ca_builtin);
    w->ca_builtin = NULL;
}

/* An https round's trust and client certificate, every round (a spare
 * handle keeps the last route's). The CA directory is never libcurl's
 * built-in one: with a CA directory set, libcurl 7.88 parses the whole
 * CA bundle again for every handshake (47 ms of CPU with Debian's 144
 * certificates, issue 29); with a file alone it keeps the parsed store in
 * the worker's multi handle for CURLOPT_CA_CACHE_TIMEOUT (24 h). Debian's
 * directory holds the bundle's certificates, so trust is the same. */
static void set_tls(tg_req *r, CURL *e)
{
    const tg_route *rt = r->route;
    const char *file = rt->tls_ca_file, *dir = rt->tls_ca_path;
    if (!file && !dir)
        file = r->w->ca_builtin;
    curl_easy_setopt(e, CURLOPT_CAINFO, file);
    curl_easy_setopt(e, CURLOPT_CAPATH, dir);
    curl_easy_setopt(e, CURLOPT_SSLCERT, rt->tls_cert);
    curl_easy_setopt(e, CURLOPT_SSLKEY, rt->tls_key);
}

/* "" for none: curl then reads no environment either */
static void set_proxy(tg_req *r, CURL *e)
{
    worker *w = r->w;
    const char *p = !strncmp(r->up.url, "https://", 8) ? w->https_proxy : w->http_proxy;
    curl_easy_setopt(e, CURLOPT_PROXY, p ? p : "");
    curl_easy_setopt(e, CURLOPT_NOPROXY, w->no_proxy ? w->no_proxy : "");
}

/* The Accept-Encoding curl would send for CURLOPT_ACCEPT_ENCODING "" (every
 * encoding it decodes, in its order), written once per worker. Sent as one
 * of our headers, curl still decodes (the option stays set) but no longer
 * formats the header twice a request, a byte at a time (5,000
 * instructions). Empty when curl decodes nothing: curl's own then. */
void upstream_accept_encoding(worker *w)
{
    const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
    tg_buf b = {0};
    if (v->features & CURL_VERSION_LIBZ)
        tg_buf_puts(&b, ", deflate, gzip");
    if (v->features & CURL_VERSION_BROTLI)
        tg_buf_puts(&b, ", br");
    if (v->features & CURL_VERSION_ZSTD)
        tg_buf_puts(&b, ", zstd");
    w->accept_encoding[0] = '\0';
    if (b.len)
        snprintf(w->accept_encoding, sizeof w->accept_encoding, "Accept-Encoding: %s", b.data + 2);
    tg_buf_free(&b);
    /* [0] only for a chat body, which toolgate wrote; Expect: empty, no
     * 100-continue round trip. curl reads these, never writes them. */
    w->up_tail[0] = (struct curl_slist){(char *)"Content-Type: application/json", &w->up_tail[1]};
    w->up_tail[1] =
        (struct curl_slist){(char *)"Expect:", w->accept_encoding[0] ? &w->up_tail[2] : NULL};
    w->up_tail[2] = (struct curl_slist){w->accept_encoding, NULL};
}

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

/* What every round of a worker sets alike, once per easy handle: a
 * finished round's handle goes back to the worker's spares as it is (no
 * curl_easy_reset, which cost 3,300 instructions a request and made every
 * option below be set again), and start_upstream sets only what differs
 * between rounds, each of those every time. */
static CURL *easy_new(worker *w)
{
    CURL *e = curl_easy_init();
    if (!e)
        return NULL;
    /* the path was checked for dot segments (refuse_on_headers): curl
     * must not resolve any it would find in the route's base URL either */
    curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    /* a round whose name lookup outlives it (connect_timeout first, a
     * client gone) must not wait for libcurl's resolver thread: 7.88 joins
     * that thread when the transfer ends unless told to leave it, which
     * froze the worker until DNS answered (test/adversary/dns.sh) */
    curl_easy_setopt(e, CURLOPT_QUICK_EXIT, 1L);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_upstream_header);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_upstream_data);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, on_upstream_read);
    curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_upstream_seek);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");  /* decoded bytes count (max_answer) */
    /* an upstream's 3xx goes to the client as it came: followed, it
     * would take the request (and the route's key) where it names */
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_curl_open);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, w);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, on_curl_close);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, w);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    if (w->tls_share)
        curl_easy_setopt(e, CURLOPT_SHARE, w->tls_share);
    return e;
}

/* The request's method and body: a spare handle still holds the last
 * round's, so each branch sets every one of them. */
static void set_method(tg_req *r, CURL *e, const char *method)
{
    if (!strcmp(method, "POST")) {
        size_t total = up_body_len(r);
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, NULL);
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        if (r->up.tools) {  /* read in pieces (on_upstream_read) */
            r->up.pos = 0;
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, NULL);
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
        return;
    }
    /* GET, and the start of any other: no body unless one is set below
     * (HTTPGET last: setting POSTFIELDS, even to NULL, makes it a POST) */
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)-1);
    curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 64 * 1024L);
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    if (!strcmp(method, "GET")) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, NULL);
        return;
    }
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    if (r->up.body.len) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->up.body.data);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->up.body.len);
    }
}

/* ---- a round on toolgate's own client (proxy/upconn.h) -------------------- */

static void upstream_done(tg_req *r);

static void own_line(void *ud, const char *line, size_t n)
{
    on_upstream_header((char *)line, 1, n, ud);
}

static size_t own_body(void *ud, const char *data, size_t n)
{
    size_t k = on_upstream_data((char *)data, 1, n, ud);
    return k == CURL_WRITEFUNC_PAUSE ? TG_H1_PAUSE : k;
}

static void finish_round(tg_req *r, CURLcode rc);

/* Why a round failed, for the client's 502 and the log: libcurl's error
 * buffer when it wrote one ("SSL certificate problem: unable to get local
 * issuer certificate"), else the code's generic text. */
static const char *round_why(const tg_req *r, CURLcode rc)
{
    return r->up.why[0] ? r->up.why : curl_easy_strerror(rc);
}

static void own_done(void *ud, CURLcode rc)
{
    tg_req *r = ud;
    r->up.h1 = NULL;
    r->up.running = false;
    if (rc != CURLE_BAD_CONTENT_ENCODING || r->up.headers_done || r->client.gone) {
        finish_round(r, rc);
        return;
    }
    /* The upstream encoded its answer though this client asked for
     * identity: the round again through libcurl, which decodes it.
     * Nothing of the answer reached anyone yet. */
    tg_log(TG_LOG_WARN, "request %s: upstream %s sent a content coding unasked; the round "
           "goes again through libcurl, as its rounds will for 10 minutes", r->id,
           r->route->upstream_shown);
    r->up.curl_only = true;
    upconn_avoid(r->w, r->up.url);
    req_ref(r);
    stop_upstream(r);
    if (start_upstream(r, r->up.url, "POST"))
        finish_round(r, rc);
    req_unref(r);
}

static void own_why(void *ud, const char *msg)
{
    tg_req *r = ud;
    snprintf(r->up.why, sizeof r->up.why, "%s", msg);
}

static const tg_upconn_cb own_cb = {own_line, own_body, own_done, own_why};

/* A route's trust and client certificate for the own client: libcurl's
 * built-in CA bundle when the route names neither a file nor a path. */
static tg_tls_id route_trust(const worker *w, const tg_route *rt)
{
    tg_tls_id id = {rt->tls_ca_file, rt->tls_ca_path, rt->tls_cert, rt->tls_key};
    if (!id.ca_file && !id.ca_path)
        id.ca_file = w->ca_builtin;
    return id;
}

/* A chat round goes over toolgate's own client (upconn.c says why), over
 * TLS (uptls.c) to an https upstream, with the route's trust as libcurl
 * would have it (set_tls); the rest (proxies, passed requests), and all
 * with upstream_client = curl, through libcurl. */
static bool own_round(tg_req *r, const char *method, tg_uptarget *t)
{
    if (r->conf->curl_only || r->up.curl_only || !r->prep.is_chat || strcmp(method, "POST"))
        return false;
    bool tls = !strncmp(r->up.url, "https://", 8);
    if (tls ? r->w->https_proxy != NULL : r->w->http_proxy != NULL)
        return false;
    tg_tls_id id = route_trust(r->w, r->route);
    return upconn_target(r->w, r->up.url, tls ? &id : NULL, t);
}

/* ---- warm-up: a connection to each https upstream before the first request */

/* A fresh worker's first burst (64 clients at once) opened as many TLS
 * connections, each a full handshake: on the bench the upstream's RSA
 * signatures alone put a fresh toolgate's p99 at 2-4x a fresh nginx's.
 * One connection per upstream and trust, made before the worker serves,
 * parses the CA store, and its session ticket turns the burst's
 * connections into resumptions (bench/README.md). /readyz says
 * "warming" until each ended, pooled or not (at most WARM_MAX_MS). An
 * upstream named by host name (every hosted provider) is looked up by
 * libcurl first (upconn_lookup), within the same bound; a name that does
 * not resolve is logged and the worker is ready all the same. */
#define WARM_MAX_MS 2000

typedef struct {
    worker *w;
    tg_conf *conf;  /* the route's strings (the trust) outlive a reload */
    const tg_route *rt;
    char why[256];
    long ms;            /* the bound */
    uint64_t deadline;  /* ... on the now_us clock */
} warm_note;

static void warm_done(void *ud, CURLcode rc)
{
    warm_note *n = ud;
    if (rc != CURLE_OK && rc != CURLE_ABORTED_BY_CALLBACK)
        tg_log(TG_LOG_INFO, "route %s: no connection warmed before the first request: %s",
               n->rt->name, n->why[0] ? n->why : curl_easy_strerror(rc));
    atomic_fetch_sub(&n->w->srv->warming, 1);
    tg_conf_unref(n->conf);
    free(n);
}

static void warm_why(void *ud, const char *msg)
{
    warm_note *n = ud;
    snprintf(n->why, sizeof n->why, "%s", msg);
}

static const tg_upconn_cb warm_cb = {NULL, NULL, warm_done, warm_why};

/* The TLS warm-up to n's upstream, when its address is known, within
 * what is left of n's bound; n ends in any case. */
static void warm_tls(warm_note *n)
{
    const tg_route *rt = n->rt;
    tg_tls_id id = route_trust(n->w, rt);
    tg_uptarget t;
    uint64_t now = now_us();
    long left = n->deadline > now ? (long)((n->deadline - now + 999) / 1000) : 0;
    if (!upconn_target(n->w, rt->upstream, &id, &t)) {
        warm_done(n, CURLE_OK);  /* an upstream the own client does not take */
    } else if (!left) {
        snprintf(n->why, sizeof n->why, "its address took the whole %ld ms", n->ms);
        warm_done(n, CURLE_OPERATION_TIMEDOUT);
    } else if (!upconn_warm(n->w, &t, left, &warm_cb, n)) {
        warm_done(n, CURLE_OK);  /* one is open already: nothing to say */
    }
}

/* libcurl looked the host name up (upconn_lookup). */
static void warm_found(void *ud, CURLcode rc, const char *why)
{
    warm_note *n = ud;
    if (rc == CURLE_OK) {
        warm_tls(n);
        return;
    }
    snprintf(n->why, sizeof n->why, "%s", why);
    warm_done(n, rc);
}

void upstream_warm(worker *w)
{
    const tg_conf *c = w->conf;
    if (c->curl_only || w->https_proxy)
        return;
    for (int i = 0; i < c->n_routes; i++) {
        const tg_route *rt = &c->routes[i];
        if (strncmp(rt->upstream, "https://", 8))
            continue;
        warm_note *n = tg_calloc(1, sizeof *n);
        n->w = w;
        n->conf = tg_conf_ref(w->conf);
        n->rt = rt;
        n->ms = rt->connect_timeout_ms > 0 && rt->connect_timeout_ms < WARM_MAX_MS
                    ? rt->connect_timeout_ms
                    : WARM_MAX_MS;
        n->deadline = now_us() + (uint64_t)n->ms * 1000;
        atomic_fetch_add(&w->srv->warming, 1);
        if (!upconn_lookup(w, rt->upstream, n->ms, warm_found, n))
            warm_tls(n);  /* an IP literal (or no host the own client takes) */
    }
}

/* The head libcurl writes for the same round: request line, Host, Accept
 * unless ours has one, our headers by libcurl's rules ("Name:" with no
 * value only removes one of libcurl's own, "Name;" is sent empty), then
 * Content-Length. Accept-Encoding says identity: nothing here decodes a
 * content coding (h1.h). */
static void own_head(tg_req *r, const tg_uptarget *t, size_t body_len, tg_buf *h)
{
#define PUT_LIT(s) tg_buf_append(h, s, sizeof s - 1)
    bool accept = false;
    PUT_LIT("POST ");
    tg_buf_puts(h, t->target);
    PUT_LIT(" HTTP/1.1\r\nHost: ");
    tg_buf_puts(h, t->authority);
    PUT_LIT("\r\n");
    for (const struct curl_slist *s = r->up.headers; s; s = s->next) {
        const char *d = s->data;
        size_t n = strlen(d);
        if (n >= 16 && !strncasecmp(d, "accept-encoding:", 16))
            continue;
        const char *colon = memchr(d, ':', n);
        if (!colon) {
            if (n && d[n - 1] == ';') {
                tg_buf_append(h, d, n - 1);
                PUT_LIT(":\r\n");
            }
            continue;
        }
        const char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        if (!*v)
            continue;
        if (colon - d == 6 && !strncasecmp(d, "accept", 6))
            accept = true;
        tg_buf_append(h, d, n);
        PUT_LIT("\r\n");
    }
    if (!accept)
        PUT_LIT("Accept: */*\r\n");
    PUT_LIT("Accept-Encoding: identity\r\nContent-Length: ");
    /* the length in decimal, as %zu writes it (a snprintf cost 770
     * instructions a round) */
    char dec[24];
    size_t at = sizeof dec;
    do
        dec[--at] = (char)('0' + body_len % 10);
    while ((body_len /= 10) && at);
    tg_buf_append(h, dec + at, sizeof dec - at);
    PUT_LIT("\r\n\r\n");
#undef PUT_LIT
}

/* 0, or -1 when no socket could be had (libcurl then takes the round). */
static int start_own(tg_req *r, const tg_uptarget *t)
{
    size_t total = up_body_len(r);
    tg_buf *head = upconn_head(r->w);
    own_head(r, t, total, head);
    struct iovec body[3] = {{r->up.body.data, r->up.body.len}};
    int nb = 1;
    if (r->up.tools) {
        body[1] = (struct iovec){(void *)json_string_value(r->up.tools),
                                 json_string_length(r->up.tools)};
        body[2] = (struct iovec){(void *)TG_REQUEST_TAIL, TAIL_LEN};
        nb = 3;
    }
    tg_upconn *c = upconn_start(r->w, t, head, body, nb, r->route->connect_timeout_ms, &own_cb, r);
    if (!c)
        return -1;
    r->up.h1 = c;
    r->up.own = true;
    return 0;
}

/* ---- a round's start and stop, either client --------------------------------- */

int start_upstream(tg_req *r, const char *url, const char *method)
{
    worker *w = r->w;
    const tg_route *rt = r->route;
    if (url != r->up.url) {  /* another round, or the caller's own (front.c) */
        char *u = tg_strdup(url);  /* url may point into r->up.url */
        free(r->up.url);
        r->up.url = u;
    }
    r->up.status = 0;
    r->up.headers_done = false;
    r->up.t_first_byte = 0;
    tg_header_list_free(&r->up.hdrs);
    tg_buf_reset(&r->up.resp);
    r->up.cut = false;
    r->up.head_cut = false;
    r->up.head_bytes = 0;
    if (!r->up.headers)
        r->up.headers = build_upstream_headers(r, r->prep.is_chat);
    r->up.t_start = now_us();
    r->up.t_last_byte = r->up.t_start;
    tg_uptarget t;
    if (own_round(r, method, &t) && start_own(r, &t) == 0) {
        r->up.running = true;
        req_ref(r);
        return 0;
    }
    CURL *e = w->n_spare ? w->spare[--w->n_spare] : easy_new(w);
    if (!e)
        return -1;
    curl_easy_setopt(e, CURLOPT_URL, r->up.url);
    set_proxy(r, e);
    if (!strncmp(r->up.url, "https://", 8))
        set_tls(r, e);
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    r->up.why[0] = '\0';
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->up.why);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->up.headers);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_READDATA, r);
    curl_easy_setopt(e, CURLOPT_SEEKDATA, r);
    /* Streams hold a transfer open for minutes and their events are small:
     * an 8 KB receive buffer instead of curl's 16 KB; whole answers keep
     * the default, fewer reads. curl (7.88) pays a read and a poll (its
     * "more pending?" check) per buffer of a burst: 1 KB cost 5 of each on
     * the bench's tool-call stream (5 KB at once), 4 KB two, 8 KB one, 11.1
     * system calls a request down to 9.1. A stream's buffer costs only the
     * pages its reads touch (small events: one), so 5,000 open slow streams
     * measured 181 MB with 4 KB and 183-184 MB with 8 KB. */
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE,
                     r->ctx_live && r->ctx.stream ? 8192L : (long)CURL_MAX_WRITE_SIZE);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, rt->connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, rt->total_timeout_ms);  /* 0: none */
    set_method(r, e, method);
    r->up.easy = e;
    r->up.running = true;
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

void stop_upstream(tg_req *r)
{
    if (r->up.own) {  /* a connection cut short cannot carry another round */
        if (r->up.h1)
            upconn_cancel(r->w, r->up.h1);
        r->up.h1 = NULL;
        r->up.own = false;
        r->up.running = false;
        r->up.paused = false;
        req_unref(r);
        return;
    }
    if (!r->up.easy)
        return;
    worker *w = r->w;
    curl_multi_remove_handle(w->multi, r->up.easy);
    /* A handle whose transfer curl finished is kept as it is: the next
     * round sets what is its own (easy_new). One cut short (the client
     * went, a timeout, a pause) may hold state of its transfer: it goes. */
    curl_easy_setopt(r->up.easy, CURLOPT_ERRORBUFFER, NULL);  /* r's memory */
    if (!r->up.running && !r->up.paused && w->n_spare < (int)(sizeof w->spare / sizeof w->spare[0])) {
        w->spare[w->n_spare++] = r->up.easy;
    } else {
        curl_easy_cleanup(r->up.easy);
    }
    r->up.easy = NULL;
    r->up.running = false;
    req_unref(r);
}

/* ---- answers built from the upstream's ------------------------------------ */

static bool is_json_type(tg_req *r)
{
    const char *ct = tg_header_get(&r->up.hdrs, "content-type");
    return !ct || strstr(ct, "json");
}

static void finish_stream(tg_req *r, bool transport_error);

/* A streamed round's searches were embedded on the loop (or failed): the
 * stream's end goes on. */
static void stream_embedded(tg_req *r)
{
    if (r->client.gone) {
        r->stream.done = true;
        req_resume(r);
        return;
    }
    finish_stream(r, false);
}

static void finish_stream(tg_req *r, bool transport_error)
{
    tg_sse_finish(&r->stream.sse);
    if (!transport_error && embed_wait_stream(r, stream_embedded))
        return;  /* its searches' texts are embedded on the loop: this runs again */
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
    keep_signatures(r);
    bridge_flush(r, true);
    r->stream.done = true;
    req_resume(r);
}

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

/* An upstream error answer, with the upstream's status (or `status` for a
 * 2xx that carried no answer): relayed as it came when OpenAI-shaped, else
 * rewritten into that shape with the provider's message kept, so that
 * every client shows it; `err`, when the response stages made the error
 * (tg_repair_response: no choice, a failed generation), is what goes. */
static void relay_upstream_error(tg_req *r, int status, const json_t *err)
{
    size_t len = r->up.resp.len, n = 0;
    char *norm = err ? tg_json_dumps(err)
                     : tg_upstream_error_body(r->up.resp.data, len, r->up.status, &n);
    n = err && norm ? strlen(norm) : n;
    if (!norm) {
        set_answer(r, status, tg_buf_steal(&r->up.resp, &len), len, true);
        return;
    }
    set_answer(r, status, norm, n, true);
    r->answer.type = "application/json";
}

/* A later discovery round of a stream that the provider answered whole:
 * a completion (some gateways answer so) goes on through the stream as
 * the chunks it would have been; an error ends the client's stream with
 * the provider's error (status, message, code) in the stream's own error
 * shape, or, when nothing has reached the client yet, as the error answer
 * itself, with its status. Logged and counted either way: a lost error
 * makes agents retry blind (Codex retried five times on stream_truncated). */
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
        relay_upstream_error(r, r->up.status >= 400 ? (int)r->up.status : 502, NULL);
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

/* A whole (non-streamed) answer from upstream: repair it, or run another
 * discovery round, or relay an error in OpenAI's shape. */
static void finish_whole(tg_req *r)
{
    size_t len = r->up.resp.len;
    if (!r->prep.is_chat) {
        if (models_answer(r))  /* GET /v1/models: in the shape asked for */
            return;
        tg_fold_api_stream(r);
        len = r->up.resp.len;
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
        relay_upstream_error(r, (int)r->up.status, NULL);
        return;
    }
    if (!r->ctx.stream)
        tg_fold_chat_stream(r);
    len = r->up.resp.len;
    /* a whole answer the agent's stream needs: made here, or by a bridge
     * that streams a whole answer in its own way (Gemini's one response) */
    bool make_stream = r->ctx.stream && !(r->prep.bridge && r->prep.api->answer_stream);
    const char *body = r->up.resp.data ? r->up.resp.data : "";
    if (!make_stream && tg_repair_surely_plain(&r->ctx, body, len) &&
        tg_repair_finish_plain(body, len)) {
        /* Most answers carry no tool call and need nothing: relayed as
         * they came, without paying for a parse. */
        set_answer(r, (int)r->up.status, tg_buf_steal(&r->up.resp, &len), len, true);
        return;
    }
    json_t *next = NULL, *resp = tg_json_load_answer(r->up.resp.data ? r->up.resp.data : "", len);
    unsigned repairs = r->ctx.stats.repairs, failures = r->ctx.stats.repair_failures;
    if (json_is_object(resp) && tg_pipeline_response(resp, &r->ctx, &next) == 1 && next) {
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
    if (!json_is_object(resp) || json_is_object(json_object_get(resp, "error"))) {
        /* a 2xx over an error, garbage, or no answer (tg_repair_response) */
        relay_upstream_error(r, 502, json_is_object(resp) ? resp : NULL);
        json_decref(resp);
        return;
    }
    if (make_stream) {
        /* The agent asked for a stream and the provider answered whole
         * (older Ollama with tools, some gateways): sent as the stream it
         * would have been, or the agent's client finds no chunk at all. */
        tg_buf sse = {0};
        if (tg_completion_sse(resp, &sse) == 0) {
            json_decref(resp);
            tg_answer_mode_said(r, "whole-streamed");
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

/* ---- the round's end: retry, fallback, timeouts --------------------------- */

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

void fire_due_retries(worker *w, uint64_t t)
{
    for (tg_req *r = w->inflight; r && w->n_retry_wait > 0; r = r->next) {
        if (!r->up.retry_at || r->up.retry_at > t)
            continue;
        r->up.retry_at = 0;
        w->n_retry_wait--;
        if (r->client.gone)
            continue;
        char *url = tg_strdup(r->up.url);
        if (start_upstream(r, url, r->client.method)) {
            set_error(r, 502, "upstream_error", "upstream_unreachable", NULL,
                      "could not start the upstream request");
            req_resume(r);
        }
        free(url);
    }
}

/* The upstream's headers do not fit the client's answer head
 * (UP_HEAD_MAX): a 502 in the API's shape, logged and counted, rather
 * than an empty reply. A stream already relayed to the client (a later
 * discovery round) ends with the error event of a cut stream. */
static void head_too_large(tg_req *r)
{
    char msg[256];
    snprintf(msg, sizeof msg,
             "upstream %s sent response headers larger than toolgate passes on (%u bytes); "
             "the answer was dropped (route %s)",
             r->route->upstream_shown, UP_HEAD_MAX, r->route->name);
    tg_log(TG_LOG_WARN, "request %s: %s", r->id, msg);
    tg_metrics_limit(r->w->metrics, TG_LIMIT_UPSTREAM_HEAD);
    tg_metrics_upstream_error(r->w->metrics, 0);
    if (r->state >= RQ_READY && r->stream.repair) {
        finish_stream(r, true);
        return;
    }
    if (r->state >= RQ_READY && r->stream.raw) {
        raw_stream_error(r, "upstream_head_too_large", msg);
        r->stream.done = true;
        req_resume(r);
        return;
    }
    set_error(r, 502, "upstream_error", "upstream_head_too_large", NULL, "%s", msg);
    req_resume(r);
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
        tg_metrics_limit(r->w->metrics, TG_LIMIT_MAX_ANSWER);
        set_error(r, 502, "upstream_error", "answer_too_large", NULL,
                  "the upstream of route %s answered more than max_answer (%zu bytes, counted "
                  "decoded); the answer was cut off",
                  r->route->name, r->conf->max_answer);
        req_resume(r);
        return;
    }
    if (r->up.head_cut) {
        head_too_large(r);
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
            char msg[768];
            snprintf(msg, sizeof msg, "upstream %s cut the stream: %s (route %s)",
                     r->route->upstream_shown,
                     r->up.timed_out ? "timed out" : round_why(r, rc), r->route->name);
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
                      round_why(r, rc), r->route->name);
    } else if (embed_wait_queries(r, upstream_done)) {
        return;  /* its searches' texts are embedded on the loop: this runs again */
    } else {
        finish_whole(r);
    }
    if (r->state == RQ_READY)
        req_resume(r);
}

/* A plain-http round libcurl finished: where it connected, so that the
 * next streamed round to that host can go over toolgate's own client
 * without a name lookup of its own (upconn_learn). */
static void learn_address(tg_req *r, CURL *e)
{
    char *ip = NULL;
    long port = 0;
    bool tls = !strncmp(r->up.url, "https://", 8);
    if (!r->conf->curl_only && !(tls ? r->w->https_proxy : r->w->http_proxy) &&
        !curl_easy_getinfo(e, CURLINFO_PRIMARY_IP, &ip) &&
        !curl_easy_getinfo(e, CURLINFO_PRIMARY_PORT, &port))
        upconn_learn(r->w, r->up.url, ip, port);
}

void check_curl_done(worker *w)
{
    CURLMsg *m;
    int left;
    upconn_run_due(w);
    while ((m = curl_multi_info_read(w->multi, &left))) {
        if (m->msg != CURLMSG_DONE || embed_wait_done(w, m->easy_handle, m->data.result) ||
            upconn_lookup_done(w, m->easy_handle, m->data.result))
            continue;  /* a catalog's embeddings call (embed_wait.c), a warm-up's
                        * lookup (upconn.c): not rounds */
        tg_req *r = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        CURLcode rc = m->data.result;
        if (rc == CURLE_OK)
            learn_address(r, m->easy_handle);
        r->up.running = false;  /* curl is done with the transfer */
        finish_round(r, rc);
    }
}

/* The round ended with rc: off its client (a handle still running was cut
 * short, and is not kept: stop_upstream), then what follows it. */
static void finish_round(tg_req *r, CURLcode rc)
{
    r->up.result = rc;
    req_ref(r);
    stop_upstream(r);
    upstream_done(r);
    req_unref(r);
}

/* Time-to-first-byte and idle limits per route (retry.h says when an
 * upstream is late): a late one is stopped and ended as a timeout. Swept
 * a few times a second (proxy/server.c), plenty for limits counted in
 * seconds. */
void time_out_if_late(tg_req *r, uint64_t t)
{
    const tg_route *rt = r->route;
    if (r->up.own) {  /* what libcurl's own timers bound on its rounds */
        bool connect = r->up.h1 && upconn_connect_late(r->up.h1, t);
        if (connect || (rt->total_timeout_ms > 0 &&
                        t - r->up.t_start > (uint64_t)rt->total_timeout_ms * 1000)) {
            tg_log(TG_LOG_WARN, "request %s: upstream %s timed out (%s)", r->id,
                   rt->upstream_shown, connect ? "connect_timeout" : "total_timeout");
            finish_round(r, CURLE_OPERATION_TIMEDOUT);
            return;
        }
    }
    tg_lateness late = tg_upstream_late(t, r->up.t_start, r->up.t_first_byte, r->up.t_last_byte,
                                        rt->ttfb_timeout_ms, rt->idle_timeout_ms);
    if (late == TG_ON_TIME)
        return;
    tg_log(TG_LOG_WARN, "request %s: upstream %s timed out (%s)", r->id, rt->upstream_shown,
           late == TG_LATE_IDLE ? "idle_timeout" : "ttfb_timeout");
    r->up.timed_out = true;
    finish_round(r, CURLE_OPERATION_TIMEDOUT);
}
