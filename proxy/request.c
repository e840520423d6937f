/* request.c -- the request object: lifetime, suspend and resume, the
 * client socket's watch, the answer and the access log line.
 *
 * The bottom of proxy/'s request path (the order is in proxy/worker.h):
 * everything above creates, holds, answers and logs requests through
 * these functions, and nothing here calls up. See proxy/request.h for the
 * reference counting.
 */
#include "proxy/request.h"

#include <microhttpd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#include "core/alloc.h"
#include "proxy/log.h"

/* A request's struct is past malloc's small sizes (1 KB): each calloc of
 * one made glibc consolidate its fast bins, 4,000 instructions a request.
 * A worker keeps the memory of the last FREE_REQS it finished instead
 * (zeroed again on reuse: nothing of one client's request reaches the
 * next). Not under AddressSanitizer, which must see each one freed.
 * FREE_REQS is above the connections one worker serves at once in the
 * bench (64): at 32, a wave of 64 answers freed half of them and the next
 * wave calloc'ed them again (malloc_consolidate 0.8% of the samples at 64
 * connections). 256 of 1.7 KB: 440 KB a worker at most, kept only after
 * such a wave. */
#if defined(__SANITIZE_ADDRESS__)
#define FREE_REQS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FREE_REQS 0
#endif
#endif
#ifndef FREE_REQS
#define FREE_REQS 256
#endif

static tg_req *req_alloc(worker *w)
{
    tg_req *r = w->free_reqs;
    if (!r)
        return tg_calloc(1, sizeof *r);
    w->free_reqs = r->next;
    w->n_free_reqs--;
    memset(r, 0, sizeof *r);
    return r;
}

static void req_release(tg_req *r)
{
    worker *w = r->w;
    if (w->n_free_reqs >= FREE_REQS) {
        free(r);
        return;
    }
    r->next = w->free_reqs;
    w->free_reqs = r;
    w->n_free_reqs++;
}

void req_free_spares(worker *w)
{
    while (w->free_reqs) {
        tg_req *r = w->free_reqs;
        w->free_reqs = r->next;
        free(r);
    }
    w->n_free_reqs = 0;
}

tg_req *req_new(worker *w, struct MHD_Connection *conn, const char *url,
                const char *method)
{
    tg_req *r = req_alloc(w);
    r->refs = 1;
    r->w = w;
    r->client.conn = conn;
    r->conf = tg_conf_ref(w->conf);
    r->client.url = tg_strdup(url);
    size_t ml = strnlen(method, sizeof r->client.method - 1);  /* cut as snprintf did */
    memcpy(r->client.method, method, ml);
    r->client.method[ml] = '\0';
    r->client.fd = -1;
    r->t_start = now_us();
    const char *id = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
    size_t il = id ? strnlen(id, sizeof r->id) : 0;
    if (il && il < sizeof r->id && tg_header_value_safe(id))
        memcpy(r->id, id, il + 1);
    else
        tg_request_id(r->id, sizeof r->id, &w->rng);
    tg_metrics_inflight(w->metrics, 1);
    r->next = w->inflight;
    if (w->inflight)
        w->inflight->prev = r;
    w->inflight = r;
    w->n_inflight++;
    atomic_fetch_add_explicit(&w->srv->open_reqs, 1, memory_order_relaxed);
    return r;
}

static void req_unlink(tg_req *r)
{
    worker *w = r->w;
    if (r->prev)
        r->prev->next = r->next;
    else if (w->inflight == r)
        w->inflight = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
}

void up_body_free(tg_req *r)
{
    tg_buf_free(&r->up.body);
    json_decref(r->up.tools);
    r->up.tools = NULL;
}

/* max_body_memory: every worker's bodies count against one budget, taken
 * before a byte is stored and given back when the body is freed. */
bool body_charge(tg_req *r, size_t n)
{
    size_t was = atomic_fetch_add(r->w->body_bytes, n);
    if (was + n > r->conf->max_body_memory) {
        atomic_fetch_sub(r->w->body_bytes, n);
        return false;
    }
    r->client.body_charge += n;
    return true;
}

void body_release(tg_req *r)
{
    if (r->client.body_charge)
        atomic_fetch_sub(r->w->body_bytes, r->client.body_charge);
    r->client.body_charge = 0;
}

/* w->up_tail: the worker's nodes behind every request's own
 * (proxy/upstream.c) */
static bool is_tail(const worker *w, const struct curl_slist *n)
{
    return n >= &w->up_tail[0] && n < &w->up_tail[3];
}

void upstream_headers_free(tg_req *r)
{
    struct curl_slist *n = r->up.headers, *seg = NULL, *prev = NULL;
    r->up.headers = NULL;
    /* the runs of curl's nodes around the request's own id node, each cut
     * off and freed, up to the worker's tail */
    for (; n && !is_tail(r->w, n); n = n->next) {
        if (n == &r->up.id_node) {
            if (prev)
                prev->next = NULL;
            curl_slist_free_all(seg);
            seg = prev = NULL;
            continue;
        }
        if (!seg)
            seg = n;
        prev = n;
    }
    if (prev)
        prev->next = NULL;
    curl_slist_free_all(seg);
}

void req_unref(tg_req *r)
{
    if (--r->refs > 0)
        return;
    body_release(r);
    req_unlink(r);
    r->w->n_inflight--;
    atomic_fetch_sub_explicit(&r->w->srv->open_reqs, 1, memory_order_relaxed);
    tg_metrics_inflight(r->w->metrics, -1);
    tg_buf_free(&r->client.body);
    up_body_free(r);
    tg_buf_free(&r->up.resp);
    tg_buf_free(&r->stream.out);
    tg_buf_free(&r->stream.chat_out);
    if (r->prep.bridge)
        r->prep.api->free(r->prep.bridge);
    tg_header_list_free(&r->up.hdrs);
    upstream_headers_free(r);
    free(r->up.url);
    free(r->prep.dropped);
    free(r->prep.translated);
    json_decref(r->prep.fetched);
    json_decref(r->prep.sigs);
    json_decref(r->prep.fetch_ids);
    free(r->answer.body);
    free(r->answer.reason);
    free(r->client.model);
    free(r->client.url);
    if (r->stream.repair)
        tg_stream_free(r->stream.repair);
    tg_sse_free(&r->stream.sse);
    if (r->ctx_live)
        tg_ctx_clear(&r->ctx);
    json_decref(r->json);
    tg_conf_unref(r->conf);
    req_release(r);
}

/* Resumes in batches. MHD (0.9.75) resumes a connection by a flag, and its
 * next run walks the whole list of suspended connections to find the
 * flagged ones: with 5,000 streams open, one walk per event was 40% of
 * the CPU. So with many connections suspended a resume is queued, and the
 * queue goes to MHD at most once per window, one walk for all the events
 * of the window. The window grows with the walk it saves (1 µs per
 * suspended connection, at most RESUME_WINDOW_MAX_US): the walk stays a
 * few percent of one core whatever the event rate, and an event waits at
 * most the window. Below RESUME_BATCH_MIN suspended, the walk is short and
 * a resume goes at once, as before; so do the resumes before a stream's
 * first bytes went out (its answer's head, its first event), whose wait
 * is the client's time to first event: two walks a stream, not one an
 * event. */
#define RESUME_BATCH_MIN 256
#define RESUME_WINDOW_MAX_US 5000

static void resume_now(tg_req *r)
{
    r->client.suspended = false;
    r->w->n_suspended--;
    if (r->client.held) {
        r->client.held = false;
        MHD_resume_connection(r->client.conn);
    }  /* else its suspend was still queued: MHD never held it */
    r->w->mhd_pending = true;  /* run MHD in this loop turn, not the next */
}

void req_resume(tg_req *r)
{
    worker *w = r->w;
    if (!r->client.suspended || !r->client.conn || r->client.resume_queued)
        return;
    if (w->n_suspended < RESUME_BATCH_MIN || w->draining || !r->stream.sent_event) {
        resume_now(r);
        return;
    }
    if (!w->resumeq) {
        uint64_t win = (uint64_t)w->n_suspended;
        w->resume_due = now_us() + (win < RESUME_WINDOW_MAX_US ? win : RESUME_WINDOW_MAX_US);
    }
    r->client.resume_queued = true;
    r->client.resume_next = w->resumeq;
    w->resumeq = req_ref(r);
}

/* The batch goes to MHD (its next run walks the suspended list once). */
void flush_resumes(worker *w)
{
    while (w->resumeq) {
        tg_req *r = w->resumeq;
        w->resumeq = r->client.resume_next;
        r->client.resume_next = NULL;
        r->client.resume_queued = false;
        if (r->client.suspended && r->client.conn)
            resume_now(r);
        req_unref(r);
    }
}

/* MHD suspends it now, if it counts as suspended and MHD does not hold it
 * yet (the one place MHD_suspend_connection is called for a request). */
static void hold(tg_req *r)
{
    if (r->client.suspended && !r->client.held && r->client.conn) {
        r->client.held = true;
        MHD_suspend_connection(r->client.conn);
    }
}

void req_suspend(tg_req *r)
{
    if (!r->client.suspended && r->client.conn) {
        r->client.suspended = true;
        r->w->n_suspended++;
    }
    hold(r);
}

/* libmicrohttpd (0.9.75) does not update a connection's event state once
 * it is suspended: suspended inside the access handler's final call, it
 * keeps the "read" state of the request's head, and resumed it reads
 * first, meets EAGAIN, and after the answer goes back into its epoll set
 * (EPOLL_CTL_ADD; proxy/front.c says what that costs). Left to the end
 * of the run, the final call without an answer leaves it "blocked" (no
 * read, no epoll change), and the suspend that follows the run
 * (req_flush_suspends) keeps that state for the resume. */
void req_suspend_after_run(tg_req *r)
{
    if (r->client.suspended || !r->client.conn)
        return;
    r->client.suspended = true;
    r->w->n_suspended++;
    if (!r->client.suspend_queued) {
        r->client.suspend_queued = true;
        r->client.suspend_next = r->w->suspendq;
        r->w->suspendq = req_ref(r);
    }
}

void req_flush_suspends(worker *w)
{
    while (w->suspendq) {
        tg_req *r = w->suspendq;
        w->suspendq = r->client.suspend_next;
        r->client.suspend_next = NULL;
        r->client.suspend_queued = false;
        hold(r);
        req_unref(r);
    }
}

/* Watch the client socket while we wait, so that a client that goes away
 * cancels its upstream transfer at once instead of when data next flows. */
void watch_client(tg_req *r)
{
    const union MHD_ConnectionInfo *sc =
        MHD_get_connection_info(r->client.conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    const head_wait *h = sc ? sc->socket_context : NULL;
    if (h && h->registered) {
        /* its socket is in the set already (K_CONN, proxy/front.c): armed
         * again, so that a close that came before is reported now */
        r->client.fd = h->fd;
        r->client.gen = h->gen;
        r->client.shared = true;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET,
                                 .data.u64 = TAG(K_CONN, h->gen, h->fd)};
        epoll_ctl(r->w->epfd, EPOLL_CTL_MOD, h->fd, &ev);
        return;
    }
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->client.conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return;
    r->client.fd = ci->connect_fd;
    r->client.gen = ++r->w->gen & 0xffffff;
    struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLET,
                             .data.u64 = TAG(K_CLIENT, r->client.gen, r->client.fd)};
    if (epoll_ctl(r->w->epfd, EPOLL_CTL_ADD, r->client.fd, &ev) != 0)
        r->client.fd = -1;
}

void unwatch_client(tg_req *r)
{
    if (r->client.fd >= 0) {
        if (!r->client.shared)
            epoll_ctl(r->w->epfd, EPOLL_CTL_DEL, r->client.fd, NULL);
        r->client.fd = -1;
        r->client.shared = false;
    }
}

tg_req *find_by_client(worker *w, int fd, uint32_t gen)
{
    for (tg_req *r = w->inflight; r; r = r->next)
        if (r->client.fd == fd && r->client.gen == gen)
            return r;
    return NULL;
}

const char *client_header(tg_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->client.conn, MHD_HEADER_KIND, name);
}

void set_answer(tg_req *r, int status, char *body, size_t len, bool from_upstream)
{
    free(r->answer.body);
    free(r->answer.reason);
    r->answer.reason = NULL;
    r->answer.status = status;
    r->answer.body = body;
    r->answer.len = len;
    r->answer.from_upstream = from_upstream;
    r->answer.type = NULL;
    r->state = RQ_READY;
}

void set_error(tg_req *r, int status, const char *type, const char *code,
               const char *param, const char *fmt, ...)
{
    tg_error err;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tg_error_set(&err, status, type, code, param, "%s", msg);
    char *body = tg_error_body(&err);
    set_answer(r, status, body, strlen(body), false);
    r->answer.reason = tg_strdup(msg);
}

void set_error_from(tg_req *r, const tg_error *err)
{
    char *body = tg_error_body(err);
    set_answer(r, err->status ? err->status : 400, body, strlen(body), false);
    r->answer.reason = tg_strdup(err->message);
}

void note_client_model(tg_req *r, const json_t *body)
{
    const char *model = json_string_value(json_object_get(body, "model"));
    free(r->client.model);
    r->client.model = model ? tg_strdup(model) : NULL;
    r->client.stream = json_is_true(json_object_get(body, "stream"));
}

/* The route that was picked, or the one the path's prefix names (an
 * answer refused before the route's stages ran). */
static const tg_route *log_route(const tg_req *r)
{
    return r->route ? r->route : r->client.by_prefix;
}

/* The model as the route's stages left it (the chat body's), else as the
 * client named it. */
static const char *log_model(const tg_req *r)
{
    const char *m = r->json ? json_string_value(json_object_get(r->json, "model")) : NULL;
    return m ? m : r->client.model;
}

static bool log_stream(const tg_req *r)
{
    return (r->ctx_live && r->ctx.stream) || r->client.stream;
}

/* An error answer toolgate made itself: once, at warn, with what an
 * operator needs to see why an agent failed (the agent shows little). */
static void own_error_line(const tg_req *r, int status)
{
    const tg_route *rt = log_route(r);
    const char *model = log_model(r);
    tg_log(TG_LOG_WARN, "request %s: answered %d: %s %s route %s model %s stream %s: %.600s",
           r->id, status, r->client.method, r->client.url ? r->client.url : "-",
           rt ? rt->name : "-", model ? model : "-", log_stream(r) ? "true" : "false",
           r->answer.reason);
}

/* Appends s as a JSON string (quotes, escapes). */
static void json_str(tg_buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    tg_buf_append(b, "\"", 1);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            tg_buf_append(b, e, 2);
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            tg_buf_append(b, e, 6);
        } else {
            tg_buf_append(b, s, 1);
        }
    }
    tg_buf_append(b, "\"", 1);
}

/* One JSON line per request, built by hand: it runs for every request and
 * jansson's object building cost more than the rest of a small request.
 * Nothing secret is in it: no header is logged. */
void access_log_line(tg_req *r, int status)
{
    if (r->answer.reason && status >= 400 && !r->answer.from_upstream)
        own_error_line(r, status);
    if (!tg_access_log_on() || tg_log_level_get() < TG_LOG_INFO)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    tg_buf b = {0};
    tg_buf_printf(&b, "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"id\":",
                  tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  ts.tv_nsec / 1000000);
    json_str(&b, r->id);
    tg_buf_puts(&b, ",\"method\":");
    json_str(&b, r->client.method);
    tg_buf_puts(&b, ",\"path\":");
    json_str(&b, r->client.url);
    tg_buf_puts(&b, ",\"route\":");
    const tg_route *rt = log_route(r);
    if (rt)
        json_str(&b, rt->name);
    else
        tg_buf_puts(&b, "null");
    const char *model = log_model(r);
    tg_buf_puts(&b, ",\"model\":");
    if (model)
        json_str(&b, model);
    else
        tg_buf_puts(&b, "null");
    tg_buf_printf(&b, ",\"status\":%d,\"stream\":%s,\"ms\":%.3f", status,
                  log_stream(r) ? "true" : "false",
                  (double)(r->t_done - r->t_start) / 1000.0);
    if (r->up.t_first_byte)
        tg_buf_printf(&b, ",\"upstream_ttfb_ms\":%.3f",
                      (double)(r->up.t_first_byte - r->up.t_start) / 1000.0);
    tg_buf_printf(&b, ",\"bytes_in\":%zu,\"bytes_up\":%zu,\"retries\":%d",
                  r->client.body.len ? r->client.body.len : r->client.body_len,
                  up_body_len(r) ? up_body_len(r) : r->up.len, r->up.attempt);
    if (r->ctx_live)
        tg_buf_printf(&b,
                      ",\"tools_in\":%u,\"tools_out\":%u,\"repairs\":%u,\"stripped\":%u,"
                      "\"discovery_rounds\":%u",
                      r->ctx.stats.tools_in, r->ctx.stats.tools_out, r->ctx.stats.repairs,
                      r->ctx.stats.fields_stripped, r->ctx.stats.discovery_rounds);
    if (r->ctx_live && r->ctx.stats.schema_standins)  /* rule 62, degraded */
        tg_buf_printf(&b, ",\"schema_standins\":%u", r->ctx.stats.schema_standins);
    tg_buf_puts(&b, "}");
    tg_access_log(b.data, b.len);
    tg_buf_free(&b);
}
