/* mock_upstream.c -- a fake OpenAI-compatible LLM provider for tests.
 *
 * One process, libmicrohttpd with an epoll thread pool, built to hold
 * thousands of slow streams at once: no thread per connection and no
 * sleeping in callbacks. A connection whose next SSE piece is not due yet
 * is suspended from inside its content reader and put in a min-heap; one
 * timer thread resumes connections as their deadlines pass. Held requests
 * ("stall") use the same heap to poll, every 200 ms, whether the client
 * has gone away.
 *
 * Behaviour is picked per request (header X-Mock, a path under /as/NAME/
 * -- an upstream URL http://HOST/as/strict:gemini/v1 makes every request of
 * a route one scenario, for clients that cannot send headers -- or model
 * "mock-NAME"):
 * default, tools, discovery (a scripted model that uses the meta-tools),
 * structured (JSON for the request's response_format, as a strict model
 * writes it), parallel (several calls in one turn, then the results in
 * call order), agent (a call of the first tool, then, once its result is in
 * the history under the call's own id, a text that quotes it), status, stall, reset, garbage, big, slow, fixture and
 * strict:<provider> (the provider validators live in mock_strict.c; a
 * request they accept is answered as X-Mock-Then says: tools, parallel,
 * fixture, or the default text).
 * Whatever the scenario's default answer, a user message with "MOCK_CALL
 * <tool> key=value..." scripts a tool call and a text quoting its result
 * (see "directive" below: how real agent CLIs are driven).
 * POST .../embeddings answers deterministic vectors (hash_embed.h), or
 * fails as its model says: mock-embed-status, -stall, -garbage, -dim, -count
 * or -big (embeddings below).
 * A path /as/NAME,Then=parallel,Style=gemini,Untyped=1,Calls=1,Ids=name/
 * also sets those X-Mock-* headers (a personality in an upstream URL).
 * GET /_last, GET /_count and POST /_reset let tests see what reached us.
 *
 *
 * The files, one translation unit (the Makefile builds this one, which
 * includes the others, so every function stays static): this one serves
 * HTTP (the timer heap, the request and its SSE stream, dispatch, main);
 * mock_answers.c holds the personalities above, mock_script.c the
 * MOCK_CALL scripting, mock_strict.c the strict providers' validators.
 *
 *   mock-upstream [--listen HOST:PORT] [-v]      prints "port=N" once ready
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem; `make CFLAGS=...` drops the Makefile's -D */
#endif
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "test/mock/hash_embed.h"

#define MAX_BODY (256u * 1024 * 1024) /* far above any proxy's max_body */
#define STALL_POLL_MS 200
#define BIG_CONTENT (10u * 1024 * 1024)

static bool verbose;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* ------------------------------------------------------------------ */
/* Timer: a min-heap of (deadline, connection) and one thread that resumes
 * each connection when its deadline passes. A connection is pushed only
 * after it has been suspended, so a resume can never overtake its suspend. */

typedef struct {
    uint64_t due;
    struct MHD_Connection *conn;
} timer_entry;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    timer_entry *heap;
    size_t n, cap;
} timers = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0 };

static void heap_swap(size_t a, size_t b)
{
    timer_entry t = timers.heap[a];
    timers.heap[a] = timers.heap[b];
    timers.heap[b] = t;
}

static void timer_push(uint64_t due, struct MHD_Connection *conn)
{
    pthread_mutex_lock(&timers.lock);
    if (timers.n == timers.cap) {
        size_t cap = timers.cap ? timers.cap * 2 : 1024;
        timer_entry *h = realloc(timers.heap, cap * sizeof(*h));
        if (!h) {
            /* Out of memory: resume at once rather than strand the client. */
            pthread_mutex_unlock(&timers.lock);
            MHD_resume_connection(conn);
            return;
        }
        timers.heap = h;
        timers.cap = cap;
    }
    size_t i = timers.n++;
    timers.heap[i] = (timer_entry){ due, conn };
    while (i > 0 && timers.heap[(i - 1) / 2].due > timers.heap[i].due) {
        heap_swap(i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    if (i == 0)
        pthread_cond_signal(&timers.wake);
    pthread_mutex_unlock(&timers.lock);
}

static timer_entry timer_pop_locked(void)
{
    timer_entry top = timers.heap[0];
    timers.heap[0] = timers.heap[--timers.n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < timers.n && timers.heap[l].due < timers.heap[m].due)
            m = l;
        if (r < timers.n && timers.heap[r].due < timers.heap[m].due)
            m = r;
        if (m == i)
            break;
        heap_swap(i, m);
        i = m;
    }
    return top;
}

static void *timer_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&timers.lock);
    for (;;) {
        if (timers.n == 0) {
            pthread_cond_wait(&timers.wake, &timers.lock);
            continue;
        }
        uint64_t now = now_ms(), due = timers.heap[0].due;
        if (due <= now) {
            timer_entry e = timer_pop_locked();
            pthread_mutex_unlock(&timers.lock);
            MHD_resume_connection(e.conn);
            pthread_mutex_lock(&timers.lock);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t wait = due - now;
        ts.tv_sec += (time_t)(wait / 1000);
        ts.tv_nsec += (long)(wait % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&timers.wake, &timers.lock, &ts);
    }
    return NULL;
}

static void sleep_until(struct MHD_Connection *conn, uint64_t due)
{
    MHD_suspend_connection(conn);
    timer_push(due, conn);
}

/* ------------------------------------------------------------------ */
/* What the tests can inspect: the last POST and the POST count. */

static struct {
    pthread_mutex_t lock;
    char *last;  /* JSON text of the last POST, or NULL */
    long count;
    long embed_calls, embed_inputs;  /* POSTs to .../embeddings, texts they held */
    char embed_auth[256];            /* the last one's Authorization */
} seen = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, "" };

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value)
{
    (void)kind;
    char name[256];
    size_t i;
    for (i = 0; key[i] && i < sizeof(name) - 1; i++)
        name[i] = (char)((key[i] >= 'A' && key[i] <= 'Z') ? key[i] + 32 : key[i]);
    name[i] = '\0';
    json_object_set_new(cls, name, json_string(value ? value : ""));
    return MHD_YES;
}

static void remember_post(struct MHD_Connection *conn, const char *url, const tg_buf *body)
{
    json_t *headers = json_object();
    MHD_get_connection_values(conn, MHD_HEADER_KIND, add_header, headers);
    json_t *rec = json_object();
    json_object_set_new(rec, "path", json_string(url));
    json_object_set_new(rec, "headers", headers);
    json_t *text_body = json_stringn(body->data ? body->data : "", body->len);
    if (!text_body) /* not UTF-8: say so rather than drop the key */
        text_body = json_sprintf("<%zu bytes, not UTF-8>", body->len);
    json_object_set_new(rec, "body", text_body);
    char *text = json_dumps(rec, JSON_COMPACT);
    json_decref(rec);
    pthread_mutex_lock(&seen.lock);
    free(seen.last);
    seen.last = text;
    seen.count++;
    pthread_mutex_unlock(&seen.lock);
}

/* ------------------------------------------------------------------ */
/* Per-request state. */

typedef struct request {
    tg_buf body;
    bool too_big;
    bool dispatched;       /* answered or held once: later calls are resumes */
    json_t *json;          /* parsed body, NULL when it is not JSON */
    char scenario[64];
    bool stream;
    uint64_t hold_until;   /* stall: 0 = forever */
    unsigned status;       /* for the -v log */
    char error[320];       /* for the -v log: the start of an error body */
    const char *method;
    char *url;
    char *path_args; /* /as/NAME,K=V...: the K=V part, cut into headers' values */
} request;

static void request_free(request *r)
{
    if (!r)
        return;
    tg_buf_free(&r->body);
    json_decref(r->json);
    free(r->url);
    free(r->path_args);
    free(r);
}

static const char *header(struct MHD_Connection *conn, const char *name)
{
    return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

static long header_long(struct MHD_Connection *conn, const char *name, long dflt)
{
    const char *v = header(conn, name);
    if (!v || !*v)
        return dflt;
    char *end;
    long n = strtol(v, &end, 10);
    return (*end || n < 0) ? dflt : n;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static const char *request_model(const request *r)
{
    const char *m = json_string_value(json_object_get(r->json, "model"));
    return m ? m : "mock-model";
}

/* ------------------------------------------------------------------ */
/* Streaming: a response is a list of pieces (SSE events or raw bytes); the
 * content reader hands out piece k no earlier than start + k * delay. */

typedef struct stream {
    struct MHD_Connection *conn;
    char **piece;
    size_t *piece_len;
    size_t n, cap;
    size_t next;       /* piece being sent */
    size_t off;        /* bytes of it already sent */
    uint64_t next_due; /* when piece `next` may start */
    unsigned delay_ms;
    bool abort_at_end; /* "reset": drop the connection instead of ending */
    bool stamp;        /* write the send time into each piece's STAMP slot */
} stream;

/* X-Mock-Stamp: each content piece carries STAMP, whose digits become the
 * CLOCK_MONOTONIC microsecond at which the piece is handed to MHD for
 * sending, so that a client on the same machine can measure each chunk's
 * one-way latency (bench/streamer.c reads it). */
#define STAMP "@t0000000000000000"
#define STAMP_DIGITS 16

static void stream_free(void *cls)
{
    stream *s = cls;
    for (size_t i = 0; i < s->n; i++)
        free(s->piece[i]);
    free(s->piece);
    free(s->piece_len);
    free(s);
}

static stream *stream_new(struct MHD_Connection *conn, unsigned delay_ms)
{
    stream *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->conn = conn;
    s->delay_ms = delay_ms;
    s->next_due = now_ms();
    return s;
}

static int stream_add(stream *s, const char *bytes, size_t len)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        char **p = realloc(s->piece, cap * sizeof(*p));
        if (!p)
            return -1;
        s->piece = p;
        size_t *l = realloc(s->piece_len, cap * sizeof(*l));
        if (!l)
            return -1;
        s->piece_len = l;
        s->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, bytes, len);
    copy[len] = '\0';
    s->piece[s->n] = copy;
    s->piece_len[s->n++] = len;
    return 0;
}

/* Adds "data: <json>\n\n" and takes ownership of ev. */
static int stream_add_event(stream *s, json_t *ev)
{
    char *text = json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    if (!text)
        return -1;
    tg_buf b = { 0 };
    int rc = tg_buf_printf(&b, "data: %s\n\n", text);
    free(text);
    if (rc == 0)
        rc = stream_add(s, b.data, b.len);
    tg_buf_free(&b);
    return rc;
}

static void stamp_piece(char *piece, size_t len)
{
    char *at = memmem(piece, len, "@t", 2);
    if (!at || (size_t)(at - piece) + 2 + STAMP_DIGITS > len)
        return;
    char digits[STAMP_DIGITS + 1];
    snprintf(digits, sizeof digits, "%0*" PRIu64, STAMP_DIGITS, now_us());
    memcpy(at + 2, digits, STAMP_DIGITS);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    stream *s = cls;
    if (s->next >= s->n)
        return s->abort_at_end ? MHD_CONTENT_READER_END_WITH_ERROR
                               : MHD_CONTENT_READER_END_OF_STREAM;
    if (s->off == 0) {
        uint64_t now = now_ms();
        if (now < s->next_due) {
            /* Not due yet: park the connection; the timer resumes it. */
            sleep_until(s->conn, s->next_due);
            return 0;
        }
        if (s->stamp)
            stamp_piece(s->piece[s->next], s->piece_len[s->next]);
    }
    size_t left = s->piece_len[s->next] - s->off;
    size_t n = left < max ? left : max;
    memcpy(buf, s->piece[s->next] + s->off, n);
    s->off += n;
    if (s->off == s->piece_len[s->next]) {
        s->next++;
        s->off = 0;
        s->next_due = now_ms() + s->delay_ms;
    }
    return (ssize_t)n;
}

/* ------------------------------------------------------------------ */
/* Response builders. Every queue_* returns the MHD_queue_response result. */

static enum MHD_Result queue_buffer(request *r, struct MHD_Connection *conn,
                                    unsigned status, const char *ctype, char *body,
                                    size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", ctype);
    if (header(conn, "X-Mock-Close"))  /* no keep-alive: the proxy must open anew */
        MHD_add_response_header(resp, "Connection", "close");
    r->status = status;
    if (status >= 400)
        snprintf(r->error, sizeof r->error, "%.*s", (int)(len < 300 ? len : 300), body);
    enum MHD_Result ret = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* Queues json (consumed) as the body. */
static enum MHD_Result queue_json(request *r, struct MHD_Connection *conn, unsigned status,
                                  json_t *json)
{
    char *text = json_dumps(json, JSON_COMPACT);
    json_decref(json);
    if (!text)
        return MHD_NO;
    return queue_buffer(r, conn, status, "application/json", text, strlen(text));
}

static enum MHD_Result queue_text(request *r, struct MHD_Connection *conn, unsigned status,
                                  const char *ctype, const char *text)
{
    char *copy = strdup(text);
    if (!copy)
        return MHD_NO;
    return queue_buffer(r, conn, status, ctype, copy, strlen(copy));
}

static enum MHD_Result queue_error(request *r, struct MHD_Connection *conn, unsigned status,
                                   const char *message, const char *type)
{
    json_t *e = json_pack("{s:{s:s,s:s,s:n,s:n}}", "error", "message", message, "type", type,
                          "param", "code");
    return queue_json(r, conn, status, e);
}

static enum MHD_Result queue_stream(request *r, struct MHD_Connection *conn, stream *s,
                                    uint64_t size, const char *ctype)
{
    struct MHD_Response *resp =
        MHD_create_response_from_callback(size, 16 * 1024, stream_read, s, stream_free);
    if (!resp) {
        stream_free(s);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", ctype);
    if (size == MHD_SIZE_UNKNOWN)
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
    r->status = 200;
    enum MHD_Result ret = MHD_queue_response(conn, 200, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* ------------------------------------------------------------------ */
/* The answers: each personality (mock_answers.c), then the scripted calls
 * a user message asks for (mock_script.c). Both are part of this
 * translation unit, as mock_strict.c is, so their functions stay static
 * and the Makefile builds one file. */

#include "mock_answers.c"
#include "mock_script.c"

/* ------------------------------------------------------------------ */
/* Dispatch. */

/* /as/NAME,Then=parallel,Style=gemini/...: each KEY=VALUE after the name
 * acts as the header X-Mock-KEY (one the request sends wins), so that a
 * route's upstream URL alone picks a whole personality (make demo). The
 * values live in r->path_args, which outlives the request's headers. */
static void path_headers(request *r, struct MHD_Connection *conn)
{
    static const char *const names[] = { "X-Mock-Then", "X-Mock-Style", "X-Mock-Calls",
                                         "X-Mock-Untyped", "X-Mock-Ids", "X-Mock-Force", NULL };
    const char *from = r->url + 4 + strcspn(r->url + 4, ",/");
    if (*from != ',' || !(r->path_args = strndup(from + 1, strcspn(from + 1, "/"))))
        return;
    char *save = NULL;
    for (char *kv = strtok_r(r->path_args, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            continue;
        *eq = '\0';
        for (size_t i = 0; names[i]; i++)
            if (!strcasecmp(kv, names[i] + 7) && !header(conn, names[i]))
                MHD_set_connection_value(conn, MHD_HEADER_KIND, names[i], eq + 1);
    }
}

static void pick_scenario(request *r, struct MHD_Connection *conn)
{
    const char *h = header(conn, "X-Mock");
    const char *model = json_string_value(json_object_get(r->json, "model"));
    const char *name = "default";
    size_t path_len = 0;
    if (h && *h)
        name = h;
    else if (r->url && strncmp(r->url, "/as/", 4) == 0 && (path_len = strcspn(r->url + 4, ",/")))
        name = r->url + 4;
    else if (model && strncmp(model, "mock-", 5) == 0)
        name = model + 5;
    if (path_len) {
        snprintf(r->scenario, sizeof(r->scenario), "%.*s", (int)path_len, name);
        path_headers(r, conn);
    }
    else
        snprintf(r->scenario, sizeof(r->scenario), "%s", name);
    r->stream = json_is_true(json_object_get(r->json, "stream"));
    if (strcmp(r->scenario, "stream") == 0) { /* model "mock-stream": default, streamed */
        r->stream = true;
        strcpy(r->scenario, "default");
    }
    /* X-Mock-Force: stream | whole -- a provider that streams whatever the
     * request says (or never streams), as some backends and gateways do */
    const char *force = header(conn, "X-Mock-Force");
    if (force && !strcmp(force, "stream"))
        r->stream = true;
    else if (force && !strcmp(force, "whole"))
        r->stream = false;
}

static enum MHD_Result chat_completions(request *r, struct MHD_Connection *conn)
{
    const char *sc = r->scenario;
    if (strcmp(sc, "stall") == 0)
        return answer_stall(r, conn);
    if (strncmp(sc, "strict:", 7) == 0) {
        if (!r->json)
            return queue_error(r, conn, 400, "mock: request body is not JSON", "invalid_request_error");
        return answer_strict(r, conn);
    }
    if (!r->json && strcmp(sc, "status") != 0 && strcmp(sc, "fixture") != 0)
        return queue_error(r, conn, 400, "mock: request body is not JSON", "invalid_request_error");
    if (strcmp(sc, "tools") == 0)
        return answer_tools(r, conn);
    if (strcmp(sc, "structured") == 0)
        return answer_structured(r, conn);
    if (strcmp(sc, "agent") == 0)
        return answer_agent(r, conn);
    if (strcmp(sc, "parallel") == 0)
        return answer_parallel(r, conn);
    if (strcmp(sc, "discovery") == 0 || strcmp(sc, "discovery-fill") == 0 ||
        strcmp(sc, "discovery-toolsearch") == 0)
        return answer_discovery(r, conn);
    if (strcmp(sc, "status") == 0)
        return answer_status(r, conn);
    if (strcmp(sc, "reset") == 0)
        return answer_reset(r, conn);
    if (strcmp(sc, "garbage") == 0)
        return answer_garbage(r, conn);
    if (strcmp(sc, "big") == 0)
        return answer_big(r, conn);
    if (strcmp(sc, "fixture") == 0)
        return answer_fixture(r, conn);
    if (strcmp(sc, "slow") == 0)
        r->stream = true;
    return answer_default(r, conn);
}

static enum MHD_Result control_endpoint(request *r, struct MHD_Connection *conn,
                                        const char *url, const char *method, bool *handled)
{
    *handled = true;
    if (strcmp(method, "GET") == 0 && strcmp(url, "/_last") == 0) {
        pthread_mutex_lock(&seen.lock);
        char *text = strdup(seen.last ? seen.last : "{}");
        pthread_mutex_unlock(&seen.lock);
        return text ? queue_buffer(r, conn, 200, "application/json", text, strlen(text)) : MHD_NO;
    }
    if (strcmp(method, "GET") == 0 && strcmp(url, "/_count") == 0) {
        pthread_mutex_lock(&seen.lock);
        json_t *c = json_pack("{s:I,s:I,s:I,s:s}", "count", (json_int_t)seen.count,
                              "embed_calls", (json_int_t)seen.embed_calls, "embed_inputs",
                              (json_int_t)seen.embed_inputs, "embed_auth", seen.embed_auth);
        pthread_mutex_unlock(&seen.lock);
        return queue_json(r, conn, 200, c);
    }
    if (strcmp(method, "POST") == 0 && strcmp(url, "/_reset") == 0) {
        pthread_mutex_lock(&seen.lock);
        free(seen.last);
        seen.last = NULL;
        seen.count = seen.embed_calls = seen.embed_inputs = 0;
        pthread_mutex_unlock(&seen.lock);
        return queue_json(r, conn, 200, json_pack("{s:b}", "ok", 1));
    }
    if (strcmp(method, "GET") == 0 && ends_with(url, "/models"))
        return queue_text(r, conn, 200, "application/json",
                          "{\"object\":\"list\",\"data\":[{\"id\":\"mock-model\",\"object\":"
                          "\"model\",\"owned_by\":\"mock\"}]}");
    *handled = false;
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)cls;
    (void)version;
    request *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof(*r));
        if (!r)
            return MHD_NO;
        r->method = strcmp(method, "POST") == 0 ? "POST" : strcmp(method, "GET") == 0 ? "GET" : "OTHER";
        r->url = strdup(url);
        *con_cls = r;
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (r->body.len + *upload_data_size > MAX_BODY)
            r->too_big = true;
        else
            tg_buf_append(&r->body, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->dispatched) /* resumed after a hold */
        return chat_completions(r, conn);

    bool handled;
    enum MHD_Result ret = control_endpoint(r, conn, url, method, &handled);
    if (handled)
        return ret;
    if (strcmp(method, "POST") == 0)
        remember_post(conn, url, &r->body); /* any POST: tests check what a proxy sent */
    /* a fixture is what any POST answers (a passed-through API's own path) */
    const char *scen = header(conn, "X-Mock");
    if (strcmp(method, "POST") == 0 && scen && !strcmp(scen, "fixture") &&
        !ends_with(url, "/chat/completions"))
        return answer_fixture(r, conn);
    if (strcmp(method, "POST") == 0 && ends_with(url, "/embeddings"))
        return answer_embeddings(r, conn);
    if (strcmp(method, "POST") != 0 || !ends_with(url, "/chat/completions"))
        return queue_error(r, conn, 404, "mock: no such endpoint", "invalid_request_error");
    if (r->too_big)
        return queue_error(r, conn, 413, "mock: body too large", "invalid_request_error");
    r->json = r->body.data ? json_loadb(r->body.data, r->body.len, JSON_ALLOW_NUL, NULL) : NULL;
    pick_scenario(r, conn);
    long delay = header_long(conn, "X-Mock-Delay-Ms", -1);
    if (strcmp(r->scenario, "stall") == 0 && delay >= 0)
        r->hold_until = now_ms() + (uint64_t)delay;
    ret = chat_completions(r, conn);
    r->dispatched = true;
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    request *r = *con_cls;
    if (verbose && r)
        fprintf(stderr, "mock: %s %s scenario=%s status=%u%s%s%s\n", r->method,
                r->url ? r->url : "?", r->scenario[0] ? r->scenario : "-", r->status,
                toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (aborted)",
                r->error[0] ? " " : "", r->error);
    request_free(r);
    *con_cls = NULL;
}

/* ------------------------------------------------------------------ */

static int parse_listen(const char *spec, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(spec, ':');
    if (!colon || (size_t)(colon - spec) >= sizeof(host))
        return -1;
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535)
        return -1;
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (!*host || strcmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int main(int argc, char **argv)
{
    const char *listen_at = "127.0.0.1:0";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
            listen_at = argv[++i];
        else if (strcmp(argv[i], "-v") == 0)
            verbose = true;
        else {
            fprintf(stderr, "usage: %s [--listen HOST:PORT] [-v]\n", argv[0]);
            return 2;
        }
    }
    struct sockaddr_in sa;
    if (parse_listen(listen_at, &sa)) {
        fprintf(stderr, "mock-upstream: bad --listen %s\n", listen_at);
        return 2;
    }
    raise_fd_limit();
    signal(SIGPIPE, SIG_IGN);
    /* Block the stop signals in every thread (MHD's inherit this mask) and
     * take them with sigwait below: no race between a flag and pause(). */
    sigset_t stop_sigs;
    sigemptyset(&stop_sigs);
    sigaddset(&stop_sigs, SIGTERM);
    sigaddset(&stop_sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_sigs, NULL);

    pthread_t timer;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&timers.wake, &ca);
    pthread_create(&timer, NULL, timer_thread, NULL);

    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | (verbose ? MHD_USE_ERROR_LOG : 0), 0, NULL,
        NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)2, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned int)60000, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)0,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)4096, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, NULL, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "mock-upstream: cannot listen on %s\n", listen_at);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("port=%u\n", info ? (unsigned)info->port : 0u);
    fflush(stdout);

    int sig;
    sigwait(&stop_sigs, &sig);
    /* Suspended connections make MHD_stop_daemon unsafe, and the kernel
     * closes every socket anyway: leave at once. */
    if (verbose)
        fprintf(stderr, "mock-upstream: exiting\n");
    _exit(0);
}
