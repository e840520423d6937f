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
 * strict:<provider> (the provider validators live in mock_strict.c, which
 * this file includes so that the Makefile builds one translation unit; a
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

static json_t *completion(const request *r, json_t *message, const char *finish)
{
    return json_pack("{s:s,s:s,s:I,s:s,s:[{s:i,s:o,s:s}],s:{s:i,s:i,s:i}}", "id",
                     "chatcmpl-mock", "object", "chat.completion", "created",
                     (json_int_t)time(NULL), "model", request_model(r), "choices", "index", 0,
                     "message", message, "finish_reason", finish, "usage", "prompt_tokens", 5,
                     "completion_tokens", 5, "total_tokens", 10);
}

/* One chat.completion.chunk; finish may be NULL (JSON null). */
static json_t *chunk(const request *r, json_t *delta, const char *finish)
{
    return json_pack("{s:s,s:s,s:I,s:s,s:[{s:i,s:o,s:o}]}", "id", "chatcmpl-mock", "object",
                     "chat.completion.chunk", "created", (json_int_t)time(NULL), "model",
                     request_model(r), "choices", "index", 0, "delta", delta, "finish_reason",
                     finish ? json_string(finish) : json_null());
}

static int add_done(stream *s)
{
    return stream_add(s, "data: [DONE]\n\n", 14);
}

/* Closes a scripted stream: the finish chunk, [DONE], then queues it; rc is
 * the result of the events added so far. */
static enum MHD_Result end_stream(request *r, struct MHD_Connection *conn, stream *s, int rc,
                                  const char *finish)
{
    if (rc == 0)
        rc = stream_add_event(s, chunk(r, json_object(), finish));
    if (rc == 0)
        rc = add_done(s);
    if (rc) {
        stream_free(s);
        return MHD_NO;
    }
    return queue_stream(r, conn, s, MHD_SIZE_UNKNOWN, "text/event-stream");
}

static const char *first_tool_name(const request *r)
{
    json_t *tool = json_array_get(json_object_get(r->json, "tools"), 0);
    const char *name = json_string_value(json_object_get(json_object_get(tool, "function"), "name"));
    return name ? name : "mock_tool";
}

static bool answer_directive(request *r, struct MHD_Connection *conn, enum MHD_Result *ret);

static enum MHD_Result answer_default(request *r, struct MHD_Connection *conn)
{
    enum MHD_Result ret;
    if (answer_directive(r, conn, &ret))
        return ret;
    long chunks = header_long(conn, "X-Mock-Chunks", 5);
    long delay = header_long(conn, "X-Mock-Delay-Ms", 0);
    if (!r->stream) {
        json_t *msg = json_pack("{s:s,s:s}", "role", "assistant", "content", "hello from mock");
        return queue_json(r, conn, 200, completion(r, msg, "stop"));
    }
    stream *s = stream_new(conn, (unsigned)delay);
    if (!s)
        return MHD_NO;
    s->stamp = header(conn, "X-Mock-Stamp") != NULL;
    int rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant", "content", ""), NULL));
    for (long i = 0; i < chunks && rc == 0; i++) {
        char tok[48];
        snprintf(tok, sizeof(tok), "tok%ld %s", i, s->stamp ? STAMP " " : "");
        rc = stream_add_event(s, chunk(r, json_pack("{s:s}", "content", tok), NULL));
    }
    return end_stream(r, conn, s, rc, "stop");
}

/* A value for a schema node as a strict-mode model writes one: null where
 * the type allows null (an optional property made nullable), else a sample
 * of the type; objects get every property. */
static json_t *sample_value(json_t *node)
{
    json_t *type = json_object_get(node, "type");
    size_t i;
    json_t *t;
    json_array_foreach(type, i, t) if (!strcmp(json_string_value(t) ?: "", "null")) return json_null();
    json_array_foreach(json_object_get(node, "anyOf"), i, t)
        if (!strcmp(json_string_value(json_object_get(t, "type")) ?: "", "null")) return json_null();
    if (json_is_true(json_object_get(node, "nullable"))) /* the OpenAPI form (Gemini) */
        return json_null();
    if (json_array_size(json_object_get(node, "enum")))  /* as a constrained model would */
        return json_deep_copy(json_array_get(json_object_get(node, "enum"), 0));
    const char *ty = json_is_array(type) ? json_string_value(json_array_get(type, 0))
                                         : json_string_value(type);
    if (!ty)
        ty = json_object_get(node, "properties") ? "object" : "string";
    if (!strcmp(ty, "integer"))
        return json_integer(1);
    if (!strcmp(ty, "number"))
        return json_real(1.5);
    if (!strcmp(ty, "boolean"))
        return json_true();
    if (!strcmp(ty, "array"))
        return json_array();
    if (!strcmp(ty, "object")) {
        json_t *o = json_object();
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(node, "properties"), k, v)
            json_object_set_new(o, k, sample_value(v));
        return o;
    }
    return json_string("x");
}

static enum MHD_Result answer_structured(request *r, struct MHD_Connection *conn)
{
    json_t *schema = json_object_get(
        json_object_get(json_object_get(r->json, "response_format"), "json_schema"), "schema");
    json_t *v = sample_value(schema);  /* a NULL schema samples a string */
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(v);
    enum MHD_Result ret;
    if (!r->stream) {
        ret = queue_json(r, conn, 200,
                         completion(r, json_pack("{s:s,s:s}", "role", "assistant", "content", text), "stop"));
        free(text);
        return ret;
    }
    stream *s = stream_new(conn, 0);
    if (!s) {
        free(text);
        return MHD_NO;
    }
    size_t half = strlen(text) / 2;  /* the JSON in two pieces, as tokens come */
    int rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s%}", "role", "assistant", "content", text, half), NULL));
    if (rc == 0)
        rc = stream_add_event(s, chunk(r, json_pack("{s:s}", "content", text + half), NULL));
    free(text);
    return end_stream(r, conn, s, rc, "stop");
}

static enum MHD_Result answer_tools(request *r, struct MHD_Connection *conn);
static const char *answered_call(const request *r, json_t **tool_msg);

/* The text the assistant turn before the tool answer carried (X-Mock-Say:
 * the agent's model said something beside its call), or NULL. */
static const char *said_before_call(const request *r)
{
    json_t *msgs = json_object_get(r->json, "messages");
    for (size_t i = json_array_size(msgs); i-- > 0;) {
        json_t *m = json_array_get(msgs, i);
        if (!strcmp(json_string_value(json_object_get(m, "role")) ?: "", "assistant"))
            return json_string_value(json_object_get(m, "content"));
    }
    return NULL;
}

/* One turn of an agent loop: the result of a call (matched by id, so a
 * proxy that rewrites ids must keep history and answer paired) ends it.
 * With X-Mock-Say the call's turn also says that text, and the answer is
 * "lost: ..." unless the history gives the text back with the call. */
static enum MHD_Result answer_agent(request *r, struct MHD_Connection *conn)
{
    json_t *tool_msg = NULL;
    if (!answered_call(r, &tool_msg))
        return answer_tools(r, conn);
    const char *result = json_string_value(json_object_get(tool_msg, "content"));
    const char *say = header(conn, "X-Mock-Say"), *said = said_before_call(r);
    char text[256];
    if (say && *say && (!said || strcmp(say, said)))
        snprintf(text, sizeof text, "lost: the turn of the call said '%.100s'", said ? said : "(nothing)");
    else
        snprintf(text, sizeof text, "result: %.200s", result ? result : "?");
    if (!r->stream)
        return queue_json(r, conn, 200,
                          completion(r, json_pack("{s:s,s:s}", "role", "assistant", "content", text),
                                     "stop"));
    stream *s = stream_new(conn, 0);
    if (!s)
        return MHD_NO;
    int rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant", "content", text), NULL));
    return end_stream(r, conn, s, rc, "stop");
}

static enum MHD_Result answer_tools(request *r, struct MHD_Connection *conn)
{
    const char *name = first_tool_name(r);
    /* X-Mock-Say / X-Mock-Think: text and reasoning beside the call */
    const char *say = header(conn, "X-Mock-Say"), *think = header(conn, "X-Mock-Think");
    if (!r->stream) {
        json_t *msg = json_pack("{s:s,s:n,s:[{s:s,s:s,s:{s:s,s:s}}]}", "role", "assistant",
                                "content", "tool_calls", "id", "call_mock1", "type", "function",
                                "function", "name", name, "arguments", "{}");
        if (say && *say)
            json_object_set_new(msg, "content", json_string(say));
        if (think && *think)
            json_object_set_new(msg, "reasoning_content", json_string(think));
        return queue_json(r, conn, 200, completion(r, msg, "tool_calls"));
    }
    stream *s = stream_new(conn, (unsigned)header_long(conn, "X-Mock-Delay-Ms", 0));
    if (!s)
        return MHD_NO;
    int rc = 0;
    if (think && *think)
        rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant",
                                                    "reasoning_content", think), NULL));
    if (say && *say && rc == 0)
        rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant", "content", say),
                                       NULL));
    json_t *first = json_pack("{s:s,s:n,s:[{s:i,s:s,s:s,s:{s:s,s:s}}]}", "role", "assistant",
                              "content", "tool_calls", "index", 0, "id", "call_mock1", "type",
                              "function", "function", "name", name, "arguments", "");
    if (rc == 0)
        rc = stream_add_event(s, chunk(r, first, NULL));
    else
        json_decref(first);
    const char *frag[] = { "{", "}" };
    for (size_t i = 0; i < 2 && rc == 0; i++)
        rc = stream_add_event(s, chunk(r, json_pack("{s:[{s:i,s:{s:s}}]}", "tool_calls", "index", 0,
                                                    "function", "arguments", frag[i]),
                                       NULL));
    return end_stream(r, conn, s, rc, "tool_calls");
}

/* ---- parallel: several tool calls in one turn ----
 * A user turn -> calls of the first N declared tools (N from X-Mock-Calls,
 * default min(3, tools); past the tool count the list is taken again, so
 * one function can be called twice in a turn), ids call_par0.., arguments
 * sampled from each tool's schema with strings "v<i>" so that no two calls
 * are alike. Streamed, each call opens with its id and name and its
 * arguments follow in three fragments (X-Mock-Arg-Pieces: n, at most one
 * per byte; the bench's time-to-first-argument test); with X-Mock-Style: gemini each call
 * comes whole in its own chunk without an index (R3); X-Mock-Ids: name gives
 * every call its function's name as id (R9), empty gives none (R2);
 * X-Mock-Untyped: 1 leaves out each call's "type" (R1; whole answers and
 * the gemini style). A turn
 * whose history ends with the tool answers of the last assistant turn -> a
 * text listing every result in call order ("results: a | b"), or
 * "unanswered: ID" for a call without its answer, so a proxy must keep
 * every pair together. */

static json_t *sample_tagged(json_t *node, const char *tag)
{
    json_t *v = sample_value(node);
    bool free_text = !json_object_get(node, "enum");
    if (json_is_string(v) && free_text) {
        json_decref(v);
        return json_string(tag);
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *p;
        json_object_foreach(json_object_get(node, "properties"), k, p) {
            json_t *cur = json_object_get(v, k);
            if (json_is_string(cur) && !json_object_get(p, "enum"))
                json_object_set_new(v, k, json_string(tag));
        }
    }
    return v;
}

/* The text for a history that ends with tool answers; NULL when the last
 * message is not one. */
static char *parallel_results(const request *r)
{
    json_t *msgs = json_object_get(r->json, "messages");
    size_t n = json_array_size(msgs);
    const char *lrole = json_string_value(json_object_get(json_array_get(msgs, n ? n - 1 : 0), "role"));
    if (n == 0 || !lrole || strcmp(lrole, "tool"))
        return NULL;
    size_t a = n;
    while (a-- > 0 && !json_array_size(json_object_get(json_array_get(msgs, a), "tool_calls")))
        ;
    tg_buf out = { 0 };
    if (a == (size_t)-1) {
        tg_buf_puts(&out, "unanswered: no assistant turn with tool_calls");
        return out.data;
    }
    json_t *calls = json_object_get(json_array_get(msgs, a), "tool_calls");
    tg_buf_puts(&out, "results: ");
    for (size_t k = 0; k < json_array_size(calls); k++) {
        const char *id = json_string_value(json_object_get(json_array_get(calls, k), "id")) ?: "";
        const char *content = NULL;
        for (size_t t = a + 1; t < n && !content; t++) {
            json_t *m = json_array_get(msgs, t);
            if (!strcmp(json_string_value(json_object_get(m, "tool_call_id")) ?: "", id))
                content = json_string_value(json_object_get(m, "content"));
        }
        if (!content) {
            out.len = 0;
            tg_buf_puts(&out, "unanswered: ");
            tg_buf_puts(&out, id);
            return out.data;
        }
        if (k)
            tg_buf_puts(&out, " | ");
        tg_buf_puts(&out, content);
    }
    return out.data;
}

static enum MHD_Result answer_text(request *r, struct MHD_Connection *conn, const char *text);

static enum MHD_Result answer_parallel(request *r, struct MHD_Connection *conn)
{
    char *text = parallel_results(r);
    if (text) {
        enum MHD_Result ret = answer_text(r, conn, text);
        free(text);
        return ret;
    }
    json_t *tools = json_object_get(r->json, "tools");
    size_t nt = json_array_size(tools);
    if (nt == 0)
        return answer_text(r, conn, "no tools");
    long n = header_long(conn, "X-Mock-Calls", nt < 3 ? (long)nt : 3);
    /* A forced tool_choice is obeyed as a model does: one call of that tool
     * (a name the list lacks is called all the same, as the agent would
     * then see it). */
    const char *forced = json_string_value(
        json_object_get(json_object_get(json_object_get(r->json, "tool_choice"), "function"), "name"));
    json_t *forced_tool = NULL;
    if (forced) {
        forced_tool = json_pack("{s:{s:s,s:O}}", "function", "name", forced, "parameters",
                                json_object_get(json_object_get(json_array_get(tools, 0), "function"), "parameters"));
        for (size_t t = 0; t < nt; t++)
            if (!strcmp(json_string_value(json_object_get(json_object_get(json_array_get(tools, t), "function"), "name")) ?: "", forced))
                json_object_set(forced_tool, "function", json_object_get(json_array_get(tools, t), "function"));
        n = 1;
    }
    const char *style = header(conn, "X-Mock-Style");
    bool gemini = style && !strcmp(style, "gemini");
    bool untyped = header_long(conn, "X-Mock-Untyped", 0) > 0;
    const char *ids = header(conn, "X-Mock-Ids");
    json_t *calls = json_array();
    for (long i = 0; i < n; i++) {
        json_t *fn = json_object_get(forced_tool ? forced_tool : json_array_get(tools, (size_t)i % nt), "function");
        char id[80], tag[24];
        snprintf(id, sizeof id, "call_par%ld", i);
        if (ids && !strcmp(ids, "name")) /* R9: native adapters' id is the function's name */
            snprintf(id, sizeof id, "%.70s", json_string_value(json_object_get(fn, "name")) ?: "");
        else if (ids && !strcmp(ids, "empty")) /* R2: Gemini's parallel calls */
            id[0] = '\0';
        snprintf(tag, sizeof tag, "v%ld", i);
        json_t *args = sample_tagged(json_object_get(fn, "parameters"), tag);
        if (!json_is_object(args)) {
            json_decref(args);
            args = json_object();
        }
        char *a = json_dumps(args, JSON_COMPACT);
        json_decref(args);
        json_t *call = json_pack("{s:s,s:s,s:{s:O,s:s}}", "id", id, "type", "function", "function",
                                 "name", json_object_get(fn, "name"), "arguments", a);
        if (untyped) /* R1 */
            json_object_del(call, "type");
        json_array_append_new(calls, call);
        free(a);
    }
    json_decref(forced_tool);
    if (!r->stream) {
        json_t *msg = json_pack("{s:s,s:n,s:o}", "role", "assistant", "content", "tool_calls", calls);
        return queue_json(r, conn, 200, completion(r, msg, "tool_calls"));
    }
    stream *s = stream_new(conn, (unsigned)header_long(conn, "X-Mock-Delay-Ms", 0));
    if (!s) {
        json_decref(calls);
        return MHD_NO;
    }
    int rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant", "content", ""), NULL));
    size_t i;
    json_t *c;
    json_array_foreach(calls, i, c) {
        json_t *fn = json_object_get(c, "function");
        const char *a = json_string_value(json_object_get(fn, "arguments"));
        if (rc)
            break;
        if (gemini) {
            rc = stream_add_event(s, chunk(r, json_pack("{s:[O]}", "tool_calls", c), NULL));
            continue;
        }
        rc = stream_add_event(s, chunk(r, json_pack("{s:[{s:I,s:O,s:s,s:{s:O,s:s}}]}", "tool_calls",
                                                    "index", (json_int_t)i, "id", json_object_get(c, "id"),
                                                    "type", "function", "function", "name",
                                                    json_object_get(fn, "name"), "arguments", ""),
                                       NULL));
        size_t len = strlen(a);
        long pieces = header_long(conn, "X-Mock-Arg-Pieces", 3);
        size_t np = pieces < 1 ? 1 : (size_t)pieces > len && len ? len : (size_t)pieces;
        for (size_t k = 0; k < np && rc == 0; k++) {
            size_t from = len * k / np, to = len * (k + 1) / np;
            rc = stream_add_event(s, chunk(r, json_pack("{s:[{s:I,s:{s:s%}}]}", "tool_calls", "index",
                                                        (json_int_t)i, "function", "arguments",
                                                        a + from, to - from),
                                           NULL));
        }
    }
    json_decref(calls);
    return end_stream(r, conn, s, rc, "tool_calls");
}

/* ---- discovery: a scripted model that follows the meta-tool protocol ----
 * user turn -> search_tools{query: the user's text} (a text "A || B || C"
 * searches query A with queries [B, C], and X-Mock-Group adds group);
 * search result ->
 * get_tool_schema{names:[first result]} (or, with X-Mock-Discovery: direct,
 * a call of that tool by its own name); schema -> call_tool{name,
 * arguments: X-Mock-Args}; the result of a real tool -> a text answer.
 * Meta-tools are found by suffix, so prefixed meta names work too.
 * X-Mock-Signature: SIG makes it Gemini 3: its calls carry
 * extra_content.google.thought_signature SIG, and a history in which one
 * of its calls lost it is refused with Gemini's 400 (R19).
 * X-Mock-Quiet: a streamed call comes without the text before it.
 * X-Mock-Refuse-Round: N refuses the request once the history holds N
 * tool answers (an inner round the proxy builds), with a 400 whose
 * message, type and code name the round.
 * Scenario discovery-fill (for agents, which send no headers): the call
 * after the schema carries a value for each required parameter (by type:
 * "x", 1, true, [], {}), so that an agent's own check of the arguments
 * lets it run; a user turn of text parts searches their joined text.
 * X-Mock-Follow-Hint: the result of a real tool that carries toolgate's
 * successor hints (<toolgate-next-tools> [...]) -> call_tool{name: the
 * first hinted tool, arguments: X-Mock-Args} instead of the text answer. */

static const char *tool_with_suffix(const request *r, const char *suffix)
{
    json_t *tools = json_object_get(r->json, "tools");
    size_t sl = strlen(suffix);
    for (size_t i = 0; i < json_array_size(tools); i++) {
        const char *n = json_string_value(
            json_object_get(json_object_get(json_array_get(tools, i), "function"), "name"));
        size_t nl = n ? strlen(n) : 0;
        if (nl >= sl && strcmp(n + nl - sl, suffix) == 0)
            return n;
    }
    return NULL;
}

/* The name of the call that the last tool message answers. */
static const char *answered_call(const request *r, json_t **tool_msg)
{
    json_t *msgs = json_object_get(r->json, "messages");
    size_t n = json_array_size(msgs);
    json_t *last = json_array_get(msgs, n ? n - 1 : 0);
    *tool_msg = last;
    if (n == 0 || strcmp(json_string_value(json_object_get(last, "role")) ?: "", "tool"))
        return NULL;
    const char *id = json_string_value(json_object_get(last, "tool_call_id"));
    for (size_t i = n; i-- > 0;) {
        json_t *calls = json_object_get(json_array_get(msgs, i), "tool_calls");
        for (size_t k = 0; k < json_array_size(calls); k++) {
            json_t *c = json_array_get(calls, k);
            if (id && !strcmp(json_string_value(json_object_get(c, "id")) ?: "", id))
                return json_string_value(json_object_get(json_object_get(c, "function"), "name"));
        }
    }
    return NULL;
}

/* X-Mock-Signature: the Gemini 3 signature of a call, as it rides on it. */
static json_t *signature_of(struct MHD_Connection *conn)
{
    const char *sig = header(conn, "X-Mock-Signature");
    return sig ? json_pack("{s:{s:s}}", "google", "thought_signature", sig) : NULL;
}

/* A call the mock made (id call_disc...) replayed without its signature. */
static bool signature_lost(const request *r, const char *sig)
{
    json_t *msgs = json_object_get(r->json, "messages");
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *calls = json_object_get(json_array_get(msgs, i), "tool_calls");
        for (size_t k = 0; k < json_array_size(calls); k++) {
            json_t *c = json_array_get(calls, k);
            const char *id = json_string_value(json_object_get(c, "id"));
            const char *got = json_string_value(json_object_get(
                json_object_get(json_object_get(c, "extra_content"), "google"),
                "thought_signature"));
            if (id && !strncmp(id, "call_disc", 9) && (!got || strcmp(got, sig)))
                return true;
        }
    }
    return false;
}

static size_t tool_answers(const request *r)
{
    json_t *msgs = json_object_get(r->json, "messages");
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(msgs); i++)
        n += !strcmp(json_string_value(json_object_get(json_array_get(msgs, i), "role")) ?: "", "tool");
    return n;
}

static enum MHD_Result answer_call(request *r, struct MHD_Connection *conn, const char *name,
                                   json_t *args)
{
    char *a = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(args);
    char id[32];
    snprintf(id, sizeof id, "call_disc%u", (unsigned)(json_array_size(json_object_get(r->json, "messages"))));
    enum MHD_Result ret;
    if (!r->stream) {
        json_t *msg = json_pack("{s:s,s:n,s:[{s:s,s:s,s:{s:s,s:s}}]}", "role", "assistant",
                                "content", "tool_calls", "id", id, "type", "function",
                                "function", "name", name, "arguments", a);
        json_t *sig = signature_of(conn);
        if (sig)
            json_object_set_new(json_array_get(json_object_get(msg, "tool_calls"), 0),
                                "extra_content", sig);
        ret = queue_json(r, conn, 200, completion(r, msg, "tool_calls"));
    } else {
        stream *s = stream_new(conn, 0);
        int rc = s ? 0 : -1;
        if (rc == 0 && !header(conn, "X-Mock-Quiet"))  /* quiet: the call alone */
            rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant", "content", "Looking. "), NULL));
        if (rc == 0) {
            json_t *d = json_pack("{s:[{s:i,s:s,s:s,s:{s:s,s:s}}]}", "tool_calls", "index", 0,
                                  "id", id, "type", "function", "function", "name", name,
                                  "arguments", a);
            json_t *sig = signature_of(conn);
            if (sig)
                json_object_set_new(json_array_get(json_object_get(d, "tool_calls"), 0),
                                    "extra_content", sig);
            rc = stream_add_event(s, chunk(r, d, NULL));
        }
        if (rc == 0)
            rc = stream_add_event(s, chunk(r, json_object(), "tool_calls"));
        if (rc == 0)
            rc = add_done(s);
        ret = rc ? MHD_NO : queue_stream(r, conn, s, MHD_SIZE_UNKNOWN, "text/event-stream");
        if (rc && s)
            stream_free(s);
    }
    free(a);
    return ret;
}

static enum MHD_Result answer_text(request *r, struct MHD_Connection *conn, const char *text)
{
    if (!r->stream) {
        json_t *msg = json_pack("{s:s,s:s}", "role", "assistant", "content", text);
        return queue_json(r, conn, 200, completion(r, msg, "stop"));
    }
    stream *s = stream_new(conn, 0);
    if (!s)
        return MHD_NO;
    int rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant", "content", text), NULL));
    return end_stream(r, conn, s, rc, "stop");
}

/* The first tool toolgate's successor hints name in a tool message (the
 * text after the note's opening line: "[{"name":"X", ...), or NULL; points
 * into a static buffer. */
static const char *first_hinted(json_t *tool_msg)
{
    static __thread char name[128];
    const char *c = json_string_value(json_object_get(tool_msg, "content"));
    const char *open = c ? strstr(c, "<toolgate-next-tools>") : NULL;
    const char *at = open ? strstr(open, "[{\"name\":\"") : NULL;
    if (!at)
        return NULL;
    at += 10;
    size_t n = strcspn(at, "\"");
    if (n == 0 || n >= sizeof name)
        return NULL;
    memcpy(name, at, n);
    name[n] = '\0';
    return name;
}

/* A value of each required parameter of a schema, by its type. */
static json_t *filled_args(json_t *params)
{
    json_t *out = json_object(), *props = json_object_get(params, "properties");
    json_t *req = json_object_get(params, "required");
    for (size_t i = 0; i < json_array_size(req); i++) {
        const char *k = json_string_value(json_array_get(req, i));
        json_t *t = json_object_get(json_object_get(props, k ? k : ""), "type");
        const char *ty = json_is_string(t) ? json_string_value(t)
                         : json_string_value(json_array_get(t, 0));
        json_t *v = !ty                          ? json_string("x")
                    : !strcmp(ty, "integer") || !strcmp(ty, "number") ? json_integer(1)
                    : !strcmp(ty, "boolean")     ? json_true()
                    : !strcmp(ty, "array")       ? json_array()
                    : !strcmp(ty, "object")      ? json_object()
                                                 : json_string("x");
        if (k)
            json_object_set_new(out, k, v);
        else
            json_decref(v);
    }
    return out;
}

/* A message's text: its content string, or its text parts joined (into
 * buf). */
static const char *message_text(json_t *msg, char *buf, size_t len)
{
    json_t *c = json_object_get(msg, "content");
    if (json_is_string(c))
        return json_string_value(c);
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < json_array_size(c) && o + 1 < len; i++) {
        const char *t = json_string_value(json_object_get(json_array_get(c, i), "text"));
        if (t)
            o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? " " : "", t);
    }
    return o ? buf : NULL;
}

/* search_tools' arguments for a user's text: "A || B" is two phrasings. */
static json_t *search_args(const char *text, const char *group)
{
    json_t *args = json_object(), *alts = json_array();
    const char *p = text;
    for (int first = 1;; first = 0) {
        const char *bar = strstr(p, " || ");
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (first)
            json_object_set_new(args, "query", json_stringn(p, n));
        else
            json_array_append_new(alts, json_stringn(p, n));
        if (!bar)
            break;
        p = bar + 4;
    }
    if (json_array_size(alts))
        json_object_set_new(args, "queries", alts);
    else
        json_decref(alts);
    if (group)
        json_object_set_new(args, "group", json_string(group));
    return args;
}

static enum MHD_Result answer_discovery(request *r, struct MHD_Connection *conn)
{
    const char *search = tool_with_suffix(r, "search_tools");
    const char *schema = tool_with_suffix(r, "get_tool_schema");
    const char *call = tool_with_suffix(r, "call_tool");
    json_t *last;
    const char *answered = answered_call(r, &last);
    const char *args_text = header(conn, "X-Mock-Args");
    json_t *args = json_loads(args_text ? args_text : "{}", 0, NULL);
    if (!args)
        args = json_object();
    bool direct = header(conn, "X-Mock-Discovery") && !strcmp(header(conn, "X-Mock-Discovery"), "direct");
    const char *sig = header(conn, "X-Mock-Signature");
    long refuse = header_long(conn, "X-Mock-Refuse-Round", 0);
    if (sig && signature_lost(r, sig)) {
        json_decref(args);
        /* Gemini's own words (dialects.md section 8) */
        return queue_error(r, conn, 400,
                           "Function call is missing a thought_signature in functionCall parts.",
                           "INVALID_ARGUMENT");
    }
    if (refuse > 0 && tool_answers(r) >= (size_t)refuse) {
        json_decref(args);
        char m[96];
        snprintf(m, sizeof m, "mock: round %ld refused", refuse);
        json_t *e = json_pack("{s:{s:s,s:s,s:n,s:s}}", "error", "message", m, "type",
                              "invalid_request_error", "param", "code", "round_refused");
        return queue_json(r, conn, 400, e);
    }
    if (!search || !answered) {
        json_decref(args);
        if (!search)
            return answer_text(r, conn, "no meta-tools offered");
        char text[2048];
        const char *q = message_text(last, text, sizeof text);
        return answer_call(r, conn, search, search_args(q ? q : "tool", header(conn, "X-Mock-Group")));
    }
    json_t *result = json_loads(json_string_value(json_object_get(last, "content")) ?: "", 0, NULL);
    enum MHD_Result ret;
    if (!strcmp(answered, search)) {
        const char *first = json_string_value(
            json_object_get(json_array_get(json_object_get(result, "results"), 0), "name"));
        if (!first)
            ret = answer_text(r, conn, "search found nothing");
        else if (direct)
            ret = answer_call(r, conn, first, json_incref(args));
        else
            ret = answer_call(r, conn, schema ? schema : search, json_pack("{s:[s]}", "names", first));
    } else if (schema && !strcmp(answered, schema)) {
        json_t *tool = json_array_get(json_object_get(result, "tools"), 0);
        const char *name = json_string_value(json_object_get(tool, "name"));
        if (name && !args_text && !strcmp(r->scenario, "discovery-fill")) {
            json_decref(args);
            args = filled_args(json_object_get(tool, "parameters"));
        }
        if (!name || !call)
            ret = answer_text(r, conn, "no schema came back");
        else
            ret = answer_call(r, conn, call, json_pack("{s:s,s:O}", "name", name, "arguments", args));
    } else if (header(conn, "X-Mock-Follow-Hint") && call && first_hinted(last)) {
        ret = answer_call(r, conn, call, json_pack("{s:s,s:O}", "name", first_hinted(last),
                                                   "arguments", args));
    } else {
        char text[512];
        snprintf(text, sizeof text, "done: %.400s",
                 json_string_value(json_object_get(last, "content")) ?: "");
        ret = answer_text(r, conn, text);
    }
    json_decref(result);
    json_decref(args);
    return ret;
}

/* ---- directive: the user's text names the call the model makes ----
 * Agents cannot send X-Mock headers, so a real agent CLI drives the mock
 * through its prompt: a user message containing
 *     MOCK_CALL <tool> key=value key='value with spaces'
 * makes the model call <tool> with those (string) arguments (once the agent offers
 * it), and, once the result of that call is in the history, answer with a
 * text that quotes it ("MOCK_RESULT: ..."), so a test sees that the agent
 * really ran the tool. On a request whose tools were collapsed behind the
 * discovery meta-tools the model searches first (search_tools{query:
 * <tool>}) and then calls call_tool{name, arguments}. A request with the
 * directive but neither the tool nor the meta-tools (an agent's title or
 * summary side request) gets a short text, or JSON for its response_format's
 * schema when it asks for one (Gemini CLI's model router). Gemini 3 models (model names
 * containing "gemini-3") sign their first call of a step with a
 * thought_signature, as Gemini does (R19); strict:gemini wants it back.
 * With MOCK_CUT_STREAMS anywhere in that message every streamed answer is
 * cut short (non-streamed ones are not), to drive an agent's fallback to
 * non-streamed requests.
 * Flows of more than one step: a tool the request does not offer is
 * loaded first through Claude Code's ToolSearch ({query: "select:<tool>"})
 * when that is offered; in a value, "\n" is a newline and MOCK_NEXT is
 * MOCK_CALL, so a sub-agent's prompt can carry a directive of its own (the
 * last MOCK_CALL of a message is the one that counts). The final text
 * also quotes what the history holds after the call beyond the tool's text
 * (an image or document moved to a user message, or text drawn from it):
 * every word "tok-..." in the text of later messages and in the decoded
 * base64 of their data URLs and file parts ("MOCK_SEEN: tok-..."), so a
 * test sees that a file's bytes reached the model. */

typedef struct directive {
    char tool[128];
    json_t *args;     /* owned */
    size_t at;        /* index of the message that carried it */
    bool cut_streams; /* MOCK_CUT_STREAMS: a streamed answer ends unfinished */
} directive;

/* The text of a message's content: the string, or its text parts joined. */
static void content_text(json_t *content, tg_buf *out)
{
    if (json_is_string(content)) {
        tg_buf_puts(out, json_string_value(content));
        return;
    }
    size_t i;
    json_t *part;
    json_array_foreach(content, i, part) {
        const char *t = json_string_value(json_object_get(part, "text"));
        if (t) {
            if (out->len)
                tg_buf_puts(out, " ");
            tg_buf_puts(out, t);
        }
    }
}

/* A directive's value as the model sends it: "\n" a newline, MOCK_NEXT
 * the nested directive's MOCK_CALL. */
static json_t *directive_value(const char *p, size_t n)
{
    tg_buf b = { 0 };
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\\' && i + 1 < n && p[i + 1] == 'n') {
            tg_buf_puts(&b, "\n");
            i++;
        } else if (n - i >= 9 && !memcmp(p + i, "MOCK_NEXT", 9)) {
            tg_buf_puts(&b, "MOCK_CALL");
            i += 8;
        } else {
            tg_buf_append(&b, p + i, 1);
        }
    }
    json_t *v = json_stringn(b.data ? b.data : "", b.len);
    tg_buf_free(&b);
    return v;
}

/* The arguments after the tool's name: key=value pairs up to the end of
 * the line, a value either one word or in single quotes ('cat a.txt'), all
 * strings but a bare true or false. Not JSON: some agents quote the prompt (opencode run sends it
 * in double quotes) and escape the double quotes inside. */
static json_t *directive_args(const char *p)
{
    json_t *args = json_object();
    for (;;) {
        p += strspn(p, " \t");
        size_t kl = strcspn(p, "= \t\n'\"");
        if (!kl || p[kl] != '=')
            return args;
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(kl < sizeof key ? kl : sizeof key - 1), p);
        p += kl + 1;
        size_t vl;
        if (*p == '\'') {
            p++;
            vl = strcspn(p, "'\n");
            json_object_set_new(args, key, directive_value(p, vl));
            p += vl + (p[vl] == '\'');
        } else {
            vl = strcspn(p, " \t\n\"");
            bool yes = vl == 4 && !memcmp(p, "true", 4), no = vl == 5 && !memcmp(p, "false", 5);
            json_object_set_new(args, key, yes || no ? json_boolean(yes) : directive_value(p, vl));
            p += vl;
        }
    }
}

/* Finds the last MOCK_CALL in a user message; false when there is none. */
static bool find_directive(const request *r, directive *d)
{
    json_t *msgs = json_object_get(r->json, "messages");
    for (size_t i = json_array_size(msgs); i-- > 0;) {
        json_t *m = json_array_get(msgs, i);
        if (strcmp(json_string_value(json_object_get(m, "role")) ?: "", "user"))
            continue;
        tg_buf text = { 0 };
        content_text(json_object_get(m, "content"), &text);
        const char *at = text.data ? strstr(text.data, "MOCK_CALL ") : NULL;
        for (const char *next = at; next; next = strstr(next + 1, "MOCK_CALL "))
            at = next;
        if (!at) {
            tg_buf_free(&text);
            continue;
        }
        at += strlen("MOCK_CALL ");
        size_t n = strcspn(at, " \t\n");
        snprintf(d->tool, sizeof d->tool, "%.*s", (int)(n < sizeof d->tool ? n : sizeof d->tool - 1), at);
        d->args = directive_args(at + n);
        d->at = i;
        d->cut_streams = strstr(text.data, "MOCK_CUT_STREAMS") != NULL;
        tg_buf_free(&text);
        return d->tool[0] != '\0';
    }
    return false;
}

static bool offers_tool(const request *r, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(r->json, "tools"), i, t)
        if (!strcmp(json_string_value(json_object_get(json_object_get(t, "function"), "name")) ?: "", name))
            return true;
    return false;
}

/* The answered call the model made last (after message `from`): its
 * function object, and the text of its result in *result. NULL when the
 * model has made no call since, or its result is not in yet. */
static json_t *last_answered_call(const request *r, size_t from, tg_buf *result)
{
    json_t *msgs = json_object_get(r->json, "messages");
    size_t n = json_array_size(msgs), a = n;
    while (a-- > from + 1)
        if (json_array_size(json_object_get(json_array_get(msgs, a), "tool_calls")))
            break;
    if (a == from || a == (size_t)-1)
        return NULL;
    json_t *calls = json_object_get(json_array_get(msgs, a), "tool_calls");
    /* the last answered one: a client may merge its turns' calls into
     * one assistant message */
    for (size_t k = json_array_size(calls); k-- > 0;) {
        json_t *c = json_array_get(calls, k);
        const char *id = json_string_value(json_object_get(c, "id")) ?: "";
        for (size_t t = a + 1; t < n; t++) {
            json_t *m = json_array_get(msgs, t);
            if (!strcmp(json_string_value(json_object_get(m, "role")) ?: "", "tool") &&
                !strcmp(json_string_value(json_object_get(m, "tool_call_id")) ?: "", id)) {
                content_text(json_object_get(m, "content"), result);
                return json_object_get(c, "function");
            }
        }
    }
    return NULL;
}

/* One call of `name` with `args` (consumed), whole or streamed in three
 * argument fragments, signed for Gemini 3. */
static enum MHD_Result answer_named_call(request *r, struct MHD_Connection *conn, const char *name,
                                         json_t *args)
{
    char *a = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    if (!a)
        return MHD_NO;
    char id[40];
    snprintf(id, sizeof id, "call_dir%zu", json_array_size(json_object_get(r->json, "messages")));
    json_t *call = json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", id, "type", "function", "function",
                             "name", name, "arguments", a);
    if (strstr(request_model(r), "gemini-3")) {
        char sig[64];
        snprintf(sig, sizeof sig, "mock-signature-%s", id);
        json_object_set_new(call, "extra_content",
                            json_pack("{s:{s:s}}", "google", "thought_signature", sig));
    }
    enum MHD_Result ret;
    if (!r->stream) {
        json_t *msg = json_pack("{s:s,s:n,s:[o]}", "role", "assistant", "content", "tool_calls", call);
        ret = queue_json(r, conn, 200, completion(r, msg, "tool_calls"));
        free(a);
        return ret;
    }
    stream *s = stream_new(conn, 0);
    int rc = s ? 0 : -1;
    json_t *first = json_deep_copy(call);
    json_object_set_new(first, "index", json_integer(0));
    json_object_set_new(json_object_get(first, "function"), "arguments", json_string(""));
    if (rc == 0)
        rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:n,s:[o]}", "role", "assistant",
                                                    "content", "tool_calls", first), NULL));
    else
        json_decref(first);
    size_t len = strlen(a), cut[4] = { 0, len / 3, 2 * len / 3, len };
    for (int k = 0; k < 3 && rc == 0; k++)
        rc = stream_add_event(s, chunk(r, json_pack("{s:[{s:i,s:{s:s%}}]}", "tool_calls", "index", 0,
                                                    "function", "arguments", a + cut[k],
                                                    cut[k + 1] - cut[k]),
                                       NULL));
    json_decref(call);
    free(a);
    if (!s)
        return MHD_NO;
    return end_stream(r, conn, s, rc, "tool_calls");
}

/* Appends to `out` each word "tok-..." of `p` (n bytes) not in it yet. */
static void scan_tokens(const char *p, size_t n, tg_buf *out)
{
    for (const char *at = p; (at = memmem(at, n - (size_t)(at - p), "tok-", 4));) {
        size_t w = 4;
        while (at + w < p + n && (isalnum((unsigned char)at[w]) || at[w] == '-' || at[w] == '_'))
            w++;
        char word[128];
        snprintf(word, sizeof word, " %.*s", (int)(w < 120 ? w : 120), at);
        if (out->len < 1024 && !(out->data && strstr(out->data, word)))
            tg_buf_puts(out, word);
        at += w;
    }
}

/* The bytes of base64 text (standard or URL-safe; other characters are
 * skipped), into `out`. */
static void base64_decode(const char *p, size_t n, tg_buf *out)
{
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        const char *digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const char *d = p[i] ? strchr(digits, p[i]) : NULL;
        int v = d ? (int)(d - digits) : p[i] == '-' ? 62 : p[i] == '_' ? 63 : -1;
        if (v < 0)
            continue;
        acc = (acc << 6 | (unsigned)v) & 0xffffff;
        if ((bits += 6) >= 8) {
            bits -= 8;
            char c = (char)(acc >> bits & 0xff);
            tg_buf_append(out, &c, 1);
        }
    }
}

/* The tokens in a message's content: in its text, and in the decoded
 * bytes of every data URL or base64 file part it holds. */
static void content_tokens(json_t *v, tg_buf *out)
{
    if (json_is_string(v)) {
        const char *t = json_string_value(v), *b64 = strstr(t, ";base64,");
        size_t n = json_string_length(v);
        if (!strncmp(t, "data:", 5) && b64) {
            tg_buf bytes = { 0 };
            base64_decode(b64 + 8, n - (size_t)(b64 + 8 - t), &bytes);
            scan_tokens(bytes.data ? bytes.data : "", bytes.len, out);
            tg_buf_free(&bytes);
        } else {
            scan_tokens(t, n, out);
        }
        return;
    }
    size_t i;
    const char *k;
    json_t *e;
    if (json_is_array(v))
        json_array_foreach(v, i, e) content_tokens(e, out);
    else if (json_is_object(v))
        json_object_foreach(v, k, e) {
            if (!strcmp(k, "file_data") && json_is_string(e) && strncmp(json_string_value(e), "data:", 5)) {
                tg_buf bytes = { 0 };
                base64_decode(json_string_value(e), json_string_length(e), &bytes);
                scan_tokens(bytes.data ? bytes.data : "", bytes.len, out);
                tg_buf_free(&bytes);
            } else {
                content_tokens(e, out);
            }
        }
}

/* What the user and tool messages after message `from` hold ("MOCK_SEEN"
 * above). */
static void seen_tokens(const request *r, size_t from, tg_buf *out)
{
    json_t *msgs = json_object_get(r->json, "messages");
    for (size_t i = from + 1; i < json_array_size(msgs); i++) {
        json_t *m = json_array_get(msgs, i);
        const char *role = json_string_value(json_object_get(m, "role")) ?: "";
        if (!strcmp(role, "user") || !strcmp(role, "tool"))
            content_tokens(json_object_get(m, "content"), out);
    }
}

/* The final text: the result, on one line and cut to a readable length,
 * and the tokens seen after the directive. */
static enum MHD_Result answer_result(request *r, struct MHD_Connection *conn, const char *result,
                                     size_t from)
{
    tg_buf tokens = { 0 };
    seen_tokens(r, from, &tokens);
    char text[1600];
    int n = snprintf(text, sizeof text, "MOCK_RESULT: %.360s%s%.1100s", result,
                     tokens.len ? " MOCK_SEEN:" : "", tokens.data ? tokens.data : "");
    tg_buf_free(&tokens);
    for (int i = 0; i < n && i < (int)sizeof text; i++)
        if (text[i] == '\n' || text[i] == '\r' || text[i] == '\t')
            text[i] = ' ';
    return answer_text(r, conn, text);
}

/* A stream that stops after its first words, without a finish_reason or
 * [DONE]: what makes Claude Code send its request again unstreamed. */
static enum MHD_Result answer_cut_stream(request *r, struct MHD_Connection *conn)
{
    stream *s = stream_new(conn, 0);
    if (!s)
        return MHD_NO;
    if (stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant", "content", "Cut "),
                                  NULL))) {
        stream_free(s);
        return MHD_NO;
    }
    return queue_stream(r, conn, s, MHD_SIZE_UNKNOWN, "text/event-stream");
}

/* Answers a request that carries a directive; false (nothing queued) when
 * it carries none. */
static bool answer_directive(request *r, struct MHD_Connection *conn, enum MHD_Result *ret)
{
    directive d = { 0 };
    if (!find_directive(r, &d))
        return false;
    if (d.cut_streams && r->stream) {
        json_decref(d.args);
        *ret = answer_cut_stream(r, conn);
        return true;
    }
    const char *search = tool_with_suffix(r, "search_tools");
    const char *call_tool = tool_with_suffix(r, "call_tool");
    tg_buf result = { 0 };
    json_t *fn = last_answered_call(r, d.at, &result);
    const char *called = fn ? json_string_value(json_object_get(fn, "name")) ?: "" : NULL;
    if (fn && (!strcmp(called, d.tool) || (call_tool && !strcmp(called, call_tool))))
        *ret = answer_result(r, conn, result.data ? result.data : "", d.at);
    else if (fn && search && !strcmp(called, search) && call_tool)
        *ret = answer_named_call(r, conn, call_tool,
                                 json_pack("{s:s,s:O}", "name", d.tool, "arguments", d.args));
    else if (fn && !strcmp(called, "ToolSearch") && offers_tool(r, d.tool))
        *ret = answer_named_call(r, conn, d.tool, json_incref(d.args));
    else if (fn)
        *ret = answer_result(r, conn, "unexpected call answered", d.at);
    else if (offers_tool(r, d.tool))
        *ret = answer_named_call(r, conn, d.tool, json_incref(d.args));
    else if (offers_tool(r, "ToolSearch")) {
        char query[160];
        snprintf(query, sizeof query, "select:%s", d.tool);
        *ret = answer_named_call(r, conn, "ToolSearch", json_pack("{s:s}", "query", query));
    } else if (search)
        *ret = answer_named_call(r, conn, search, json_pack("{s:s}", "query", d.tool));
    else if (json_object_get(json_object_get(r->json, "response_format"), "json_schema"))
        *ret = answer_structured(r, conn);  /* a side request for JSON (Gemini CLI's model router) */
    else
        *ret = answer_text(r, conn, "mock: no such tool offered here");
    tg_buf_free(&result);
    json_decref(d.args);
    return true;
}

static enum MHD_Result answer_status(request *r, struct MHD_Connection *conn)
{
    long status = header_long(conn, "X-Mock-Status", 500);
    if (status < 100 || status > 599)
        status = 500;
    char *body = strdup("{\"error\":{\"message\":\"mock failure\",\"type\":\"server_error\","
                        "\"param\":null,\"code\":null}}");
    if (!body)
        return MHD_NO;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "application/json");
    if (status == 429 || status == 503)
        MHD_add_response_header(resp, "Retry-After", "0");
    r->status = (unsigned)status;
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* Hold the request without answering; poll for a vanished client. */
static enum MHD_Result answer_stall(request *r, struct MHD_Connection *conn)
{
    uint64_t now = now_ms();
    if (r->hold_until && now >= r->hold_until)
        return answer_default(r, conn);
    if (r->dispatched) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        char c;
        ssize_t n = ci ? recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) : -1;
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
            return MHD_NO; /* client gone: close our side too */
    }
    uint64_t due = now + STALL_POLL_MS;
    if (r->hold_until && r->hold_until < due)
        due = r->hold_until;
    sleep_until(conn, due);
    return MHD_YES;
}

static enum MHD_Result answer_reset(request *r, struct MHD_Connection *conn)
{
    stream *s = stream_new(conn, (unsigned)header_long(conn, "X-Mock-Delay-Ms", 0));
    if (!s)
        return MHD_NO;
    s->abort_at_end = true;
    int rc = 0;
    if (r->stream) {
        rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant", "content", "tok0 "), NULL));
        if (rc == 0)
            rc = stream_add_event(s, chunk(r, json_pack("{s:s}", "content", "tok1 "), NULL));
    } else {
        const char *part = "{\"id\":\"chatcmpl-mock\",\"object\":\"chat.completion\",\"choices\":[";
        rc = stream_add(s, part, strlen(part));
    }
    if (rc) {
        stream_free(s);
        return MHD_NO;
    }
    /* Non-stream: promise more bytes than we send, so the cut is visible. */
    return queue_stream(r, conn, s, r->stream ? MHD_SIZE_UNKNOWN : 4096,
                        r->stream ? "text/event-stream" : "application/json");
}

static enum MHD_Result answer_garbage(request *r, struct MHD_Connection *conn)
{
    if (!r->stream)
        return queue_text(r, conn, 200, "application/json", "{\"choices\": [ this is not json");
    return queue_text(r, conn, 200, "text/event-stream", "data: {not json}\n\ndata: [DONE]\n\n");
}

static enum MHD_Result answer_big(request *r, struct MHD_Connection *conn)
{
    char *text = malloc(BIG_CONTENT + 1);
    if (!text)
        return MHD_NO;
    static const char word[] = "lorem ipsum dolor sit amet ";
    for (size_t i = 0; i < BIG_CONTENT; i++)
        text[i] = word[i % (sizeof(word) - 1)];
    text[BIG_CONTENT] = '\0';
    json_t *msg = json_pack("{s:s,s:s%}", "role", "assistant", "content", text, (size_t)BIG_CONTENT);
    free(text);
    return queue_json(r, conn, 200, completion(r, msg, "stop"));
}

static char *read_file(const char *path, size_t *len)
{
    tg_buf b = { 0 };
    if (tg_buf_read_file(&b, path)) {
        tg_buf_free(&b);
        return NULL;
    }
    return tg_buf_steal(&b, len);
}

static enum MHD_Result answer_fixture(request *r, struct MHD_Connection *conn)
{
    const char *path = header(conn, "X-Mock-Fixture");
    size_t len = 0;
    char *data = path ? read_file(path, &len) : NULL;
    if (!data)
        return queue_error(r, conn, 500, "mock: cannot read X-Mock-Fixture", "server_error");
    if (!ends_with(path, ".sse")) {  /* X-Mock-Status / X-Mock-Content-Type may say otherwise */
        const char *ctype = header(conn, "X-Mock-Content-Type");
        return queue_buffer(r, conn, (unsigned)header_long(conn, "X-Mock-Status", 200),
                            ctype ? ctype : "application/json", data, len);
    }
    stream *s = stream_new(conn, (unsigned)header_long(conn, "X-Mock-Delay-Ms", 0));
    int rc = s ? 0 : -1;
    /* One piece per SSE event, so delays fall between events. */
    for (size_t at = 0; at < len && rc == 0;) {
        char *sep = memmem(data + at, len - at, "\n\n", 2);
        size_t end = sep ? (size_t)(sep - data) + 2 : len;
        rc = stream_add(s, data + at, end - at);
        at = end;
    }
    free(data);
    if (rc) {
        if (s)
            stream_free(s);
        return MHD_NO;
    }
    return queue_stream(r, conn, s, MHD_SIZE_UNKNOWN, "text/event-stream");
}

#include "mock_strict.c"

static enum MHD_Result answer_strict(request *r, struct MHD_Connection *conn)
{
    const char *provider = r->scenario + strlen("strict:");
    verdict v = strict_check(provider, r->json);
    if (v.body) {
        r->status = v.status;
        return queue_buffer(r, conn, v.status, "application/json", v.body, strlen(v.body));
    }
    const char *then = header(conn, "X-Mock-Then");
    if (then && strcmp(then, "tools") == 0)
        return answer_tools(r, conn);
    if (then && strcmp(then, "parallel") == 0)
        return answer_parallel(r, conn);
    /* a validated request answered with a scripted chat stream (the
     * conformance suite: each answer shape a bridge must turn into events) */
    if (then && strcmp(then, "fixture") == 0)
        return answer_fixture(r, conn);
    return answer_default(r, conn);
}

/* ------------------------------------------------------------------ */
/* Embeddings: POST {model, input: string | [strings]} answers OpenAI's
 * {object: list, data: [{object, index, embedding}], model, usage}, each
 * vector hash_embed's (deterministic), in reverse order so that a client
 * must read the indexes. The model picks a failure: mock-embed-status
 * (500), -stall (no answer until the client goes), -stall1 (the same for a
 * call of one input: a search's query, not a catalog's batch), -garbage (not JSON),
 * -dim (vectors of two sizes), -count (one vector short), -big (an answer
 * of 40 MB), -deep (arrays nested 100,000 deep). */

static enum MHD_Result answer_big_embedding(request *r, struct MHD_Connection *conn)
{
    static const char head[] = "{\"object\":\"list\",\"data\":[{\"index\":0,\"embedding\":[0";
    static const char tail[] = "]}]}";
    size_t zeros = 20u << 20, len = sizeof head - 1 + 2 * zeros + sizeof tail - 1;
    char *text = malloc(len), *p = text;
    if (!text)
        return MHD_NO;
    memcpy(p, head, sizeof head - 1);
    p += sizeof head - 1;
    for (size_t i = 0; i < zeros; i++, p += 2)
        memcpy(p, ",0", 2);
    memcpy(p, tail, sizeof tail - 1);
    return queue_buffer(r, conn, 200, "application/json", text, len);
}

static enum MHD_Result answer_embeddings(request *r, struct MHD_Connection *conn)
{
    r->json = r->body.data ? json_loadb(r->body.data, r->body.len, JSON_ALLOW_NUL, NULL) : NULL;
    const char *model = json_string_value(json_object_get(r->json, "model"));
    const char *mode = model && !strncmp(model, "mock-embed-", 11) ? model + 11 : "";
    json_t *in = json_object_get(r->json, "input");
    size_t n = json_is_string(in) ? 1 : json_array_size(in);
    pthread_mutex_lock(&seen.lock);
    seen.embed_calls++;
    seen.embed_inputs += (long)n;
    const char *auth = header(conn, "Authorization");
    snprintf(seen.embed_auth, sizeof seen.embed_auth, "%s", auth ? auth : "");
    pthread_mutex_unlock(&seen.lock);
    snprintf(r->scenario, sizeof r->scenario, "embed%s%s", *mode ? "-" : "", mode);
    r->dispatched = true;
    if (!r->json || (!json_is_string(in) && !json_is_array(in)))
        return queue_error(r, conn, 400, "mock: input must be a string or an array of strings",
                           "invalid_request_error");
    if (!strcmp(mode, "status"))
        return queue_error(r, conn, 500, "mock: embeddings failed", "server_error");
    if (!strcmp(mode, "stall") || (!strcmp(mode, "stall1") && n == 1)) {
        strcpy(r->scenario, "stall");  /* a resume polls whether the client is gone */
        return answer_stall(r, conn);
    }
    if (!strcmp(mode, "garbage"))
        return queue_text(r, conn, 200, "application/json", "<html>502 Bad Gateway</html>");
    if (!strcmp(mode, "big"))
        return answer_big_embedding(r, conn);
    if (!strcmp(mode, "deep")) {
        size_t depth = 100000;
        char *text = malloc(2 * depth + 1);
        if (!text)
            return MHD_NO;
        memset(text, '[', depth);
        memset(text + depth, ']', depth);
        return queue_buffer(r, conn, 200, "application/json", text, 2 * depth);
    }
    json_t *data = json_array();
    for (size_t k = 0; k < n; k++) {
        size_t i = n - 1 - k;
        if (!strcmp(mode, "count") && k + 1 == n)
            break;
        const char *text = json_is_string(in) ? json_string_value(in)
                                              : json_string_value(json_array_get(in, i));
        size_t dim = !strcmp(mode, "dim") && i % 2 ? HASH_EMBED_DIM / 2 : HASH_EMBED_DIM;
        json_array_append_new(data, json_pack("{s:s,s:I,s:o}", "object", "embedding", "index",
                                              (json_int_t)i, "embedding",
                                              hash_embed_json(text ? text : "", dim)));
    }
    return queue_json(r, conn, 200,
                      json_pack("{s:s,s:o,s:s,s:{s:I,s:I}}", "object", "list", "data", data,
                                "model", model ? model : "", "usage", "prompt_tokens",
                                (json_int_t)n, "total_tokens", (json_int_t)n));
}

/* ------------------------------------------------------------------ */
/* Dispatch. */

/* /as/NAME,Then=parallel,Style=gemini/...: each KEY=VALUE after the name
 * acts as the header X-Mock-KEY (one the request sends wins), so that a
 * route's upstream URL alone picks a whole personality (make demo). The
 * values live in r->path_args, which outlives the request's headers. */
static void path_headers(request *r, struct MHD_Connection *conn)
{
    static const char *const names[] = { "X-Mock-Then", "X-Mock-Style", "X-Mock-Calls",
                                         "X-Mock-Untyped", "X-Mock-Ids", NULL };
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
    if (strcmp(sc, "discovery") == 0 || strcmp(sc, "discovery-fill") == 0)
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
