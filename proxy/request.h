/* request.h -- the request object: a tg_req, its lifetime and its answer.
 *
 * A tg_req is reference counted by its three possible holders: the MHD
 * connection (until the completed callback), the upstream transfer (until
 * the easy handle is removed) and a streaming response (until MHD frees
 * it). All three live on the worker's thread, so the count is a plain int.
 *
 * Its fields are grouped by the phase that sets them (client, prep, up,
 * answer, stream): r->up.status is what the provider said, r->answer.status
 * what the client is told. request.c holds what every layer above does to
 * a request: refs, suspend and resume (batched, below), the watch of a
 * waiting client's socket, the answer it is given (set_answer, set_error)
 * and its access log line. It calls nothing in proxy/ above it; the
 * bridges reach it through the bridge_api table (function pointers), whose
 * type is here and whose rows are in proxy/bridges.c.
 */
#ifndef TG_REQUEST_H
#define TG_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/tg.h"
#include "proxy/sse.h"
#include "discovery/embed.h"
#include "proxy/worker.h"
#include "pipeline/pipeline.h"

#define STREAM_HIGH_WATER (1u << 20)  /* pause upstream past this much unsent */
#define STREAM_LOW_WATER (256u << 10)
#define STREAM_KEEP (64u << 10)       /* a stream's output buffer kept once drained */
#define TG_MODELS_OPENAI 1
#define TG_MODELS_ANTHROPIC 2

typedef enum {
    RQ_READ,       /* receiving the client's body */
    RQ_WAIT,       /* suspended, upstream has nothing for us yet */
    RQ_READY,      /* something to answer: error, whole body, or stream start */
    RQ_STREAMING,  /* streaming response queued */
    RQ_ANSWERED
} rq_state;

/* A request, its fields grouped by the phase that sets them: the client
 * side (MHD's connection, the body it sent), its preparation (the agent
 * API it speaks, the bridge), the upstream transfer (one round at a time:
 * a retry, a fallback or a discovery round starts the next), the whole
 * answer queued for the client, and the stream relayed to it. */
typedef struct tg_req {
    int refs;
    worker *w;
    tg_conf *conf;
    const tg_route *route;
    char id[64];
    rq_state state;
    uint64_t t_start, t_done;
    tg_ctx ctx;
    bool ctx_live;
    json_t *json;                 /* parsed request body */

    struct {
        struct MHD_Connection *conn;  /* NULL once MHD is done with it */
        char method[16];
        char *url;
        const char *rest;             /* url past the route prefix */
        const tg_route *by_prefix;    /* the route its path names, or NULL */
        tg_buf body;                  /* client body (freed once a stream starts) */
        size_t body_len;              /* its length, for the log */
        bool too_large;
        bool decoded;                 /* body is its Content-Encoding undone (prepare.c) */
        bool over_budget;             /* max_body_memory was reached while reading */
        size_t body_charge;           /* bytes of max_body_memory this body holds */
        const char *key;              /* the client_keys entry it matched, or NULL */
        char *model;                  /* the model it named, once its body was read
                                         (for the log when no chat body came of it) */
        bool stream;                  /* it asked for a stream */
        uint64_t owner;               /* whose Responses items it may read (item_owner) */
        int fd;                       /* its socket while watched (watch_client), or -1 */
        uint32_t gen;
        bool shared;                  /* watched through its connection's K_CONN entry */
        bool gone;
        bool suspended;               /* as MHD sees it: a queued resume not yet made */
        bool held;                    /* MHD holds it suspended (its suspend not queued) */
        bool suspend_queued;          /* on the worker's suspend queue (req_suspend_after_run) */
        struct tg_req *suspend_next;
        bool resume_queued;           /* on the worker's resume queue */
        struct tg_req *resume_next;
    } client;

    /* An agent API over chat (/v1/responses, /v1/messages): api is set
     * for a request to its path, bridge once the route bridges it */
    struct {
        bool is_chat;
        unsigned char models;         /* GET .../v1/models answered in: 0 as it comes,
                                         TG_MODELS_OPENAI or TG_MODELS_ANTHROPIC */
        const struct bridge_api *api;
        void *bridge;                 /* api's bridge state, or NULL */
        char *dropped;                /* what the bridge left out, for X-Toolgate-Dropped */
        char *translated;             /* what it gave in another form, X-Toolgate-Translated */
        const char *estimate;         /* what toolgate estimated (X-Toolgate-Estimate), or NULL */
        uint64_t tools_hash;          /* of the tools' raw bytes, 0 = unknown */
        size_t tools_bytes;
        tg_embedder embedder;         /* ctx.embedder with discovery_embeddings */
        const tg_route *embed_from;   /* the route whose discovery_embeddings it serves
                                         (r->route may move on to a fallback) */
        uint64_t embed_deadline;      /* its embeddings budget ends (now_us), 0: not begun */
        bool embed_ready;             /* its catalog's vectors were waited for
                                         (embed_wait.c): dispatch goes on upstream */
        bool embed_waiting;           /* they are being embedded: the client is suspended */
        json_t *fetched;              /* what a store on the loop read for it: id ->
                                         item or record (bridges.c prefetch), or NULL */
        json_t *fetch_ids;            /* the item ids asked for, in order */
        uint64_t fetch_deadline;      /* the request's store budget ends (now_us) */
        int fetch_rounds;
        bool fetching;                /* that read is out: the client is suspended */
        bool fetch_down;              /* it failed, or ran past the store budget */
        json_t *sigs;                 /* a chat request's kept provider fields, read
                                         from a store on the loop: "sig:ID" -> object
                                         (prepare.c sig_prefetch), or NULL */
        const tg_route *sigs_for;     /* the route they were read for (its owner) */
        bool sigs_fetching;           /* that read is out: the client is suspended */
        bool converted;               /* a bridged body is the chat request now: a
                                         resume goes on with prepare_chat */
    } prep;

    struct {
        CURL *easy;
        struct tg_upconn *h1;         /* or the round's connection on toolgate's own
                                         client (upconn.h), NULL once it ended */
        bool own;                     /* the round runs on that client (holds a reference) */
        bool curl_only;               /* later rounds through libcurl (an answer it alone decodes) */
        struct curl_slist *headers;
        struct curl_slist id_node;    /* its X-Request-Id line, in the request (no
                                         malloc a request): not curl's to free */
        char id_line[96];
        tg_buf body;                  /* the body sent upstream; its head when
                                         tools is set */
        json_t *tools;                /* the tools' cached text, sent after
                                         body and before TG_REQUEST_TAIL, or
                                         NULL (tg_request_dump_split) */
        size_t pos;                   /* curl's read position in those pieces */
        size_t len;                   /* its length, for the log once freed */
        char *url;
        long status;
        tg_header_list hdrs;          /* upstream response headers kept for the client */
        bool headers_done;
        bool round_sse;               /* this round's answer is a stream: a later
                                         discovery round may answer an error instead */
        bool paused;
        tg_buf resp;                  /* whole upstream body (non-stream) */
        bool running;                 /* the round is on the multi handle, unfinished */
        CURLcode result;
        char why[CURL_ERROR_SIZE];    /* libcurl's own words on a failed round
                                         (CURLOPT_ERRORBUFFER): which certificate
                                         check failed, not only "SSL error" */
        bool timed_out;
        bool cut;                     /* the whole answer passed max_answer */
        bool head_cut;                /* the headers to pass on passed UP_HEAD_MAX */
        size_t head_bytes;            /* their bytes so far, this round */
        int attempt;                  /* retries made on this route */
        bool fell_back;               /* the route's fallback is in use */
        uint64_t retry_at;            /* 0, or when to send again */
        uint64_t t_start, t_first_byte, t_last_byte;
        bool evented;                 /* a stream read ended an event or comment */
    } up;

    struct {
        int status;
        char *body;                   /* malloc'd body for RQ_READY non-stream */
        size_t len;
        bool from_upstream;
        const char *type;             /* NULL, or our Content-Type over upstream's */
        char *reason;                 /* toolgate's own error message (set_error), for
                                         its warn line (access_log_line), or NULL */
    } answer;

    struct {
        bool is_sse;                  /* the client's answer is a stream */
        bool raw;                     /* a passed-through stream (an API's own, on a
                                         route that passes it): relayed byte for byte */
        tg_sse sse;
        tg_stream *repair;
        tg_buf out;
        size_t out_off;
        bool done;
        bool sent_event;              /* the stream's first bytes went out */
        tg_buf chat_out;              /* the chat stream's text, before the bridge */
    } stream;

    struct tg_req *prev, *next;   /* worker's list of requests in flight */
} tg_req;

/* The Responses API (bridge/responses_api.h) and Anthropic's Messages API
 * (bridge/messages_api.h) reach every route the same way: the body
 * becomes a chat request before the route's stages and the chat answer
 * (whole or streamed) is turned back after them, or, on a route whose
 * provider has the API itself, the body goes through with only the
 * agent's private keys taken out. What differs is in this table. */
typedef struct bridge_api {
    const char *name;             /* its path, for messages: "/v1/messages" */
    /* the header the API's own servers read a key from ("x-api-key"), or
     * NULL for Authorization: Bearer; a passed request carries the route's
     * api_key there */
    const char *key_header;
    /* the client's query string is the API's (Claude Code's ?beta=true),
     * not for the chat upstream of a bridged request (an Azure client's
     * api-version, sent with /v1/responses too, is) */
    bool own_query;
    bool (*bridges)(const tg_route *route);
    size_t (*strip_markers)(json_t *body, const char *prefix);
    /* the stored things body names, read before to_chat from a store on
     * the worker's loop: 1 while they are read (r is suspended, and its
     * dispatch runs again once they are in), 0 when there is nothing to
     * wait for (NULL: the API reads no store) */
    int (*prefetch)(tg_req *r, const json_t *body);
    /* body -> chat body (*chat), with r->prep.bridge set, for route (NULL
     * when none matched yet); 0, or -1 with err */
    int (*to_chat)(tg_req *r, const tg_route *route, const json_t *body, json_t **chat,
                   tg_error *err);
    const json_t *(*dropped)(const void *b);  /* {kind: [name]} left out (bridge.h) */
    /* {kind: [name]} given in another form (NULL: the API has none) */
    const json_t *(*translated)(const void *b);
    /* the answer of the API's token count endpoint for a bridged route,
     * an estimate (NULL: the endpoint is passed through only) */
    json_t *(*count_estimate)(const json_t *body);
    json_t *(*answer)(void *b, const json_t *completion);
    void (*stream)(void *b, const char *sse, size_t n, tg_buf *out);
    void (*stream_end)(void *b, tg_buf *out);
    void (*done)(tg_req *r);      /* the answer is whole (NULL: nothing to do) */
    /* an error answer in the API's own shape, or NULL to leave it (NULL:
     * the API shares OpenAI's) */
    char *(*error_body)(int status, const char *body, size_t n, size_t *len);
    void (*free)(void *b);
    /* Gemini's API: the model is in the path, not the body (NULL: the
     * body's "model"); into buf (cap bytes), returns it or NULL */
    const char *(*model_of)(tg_req *r, char *buf, size_t cap);
    /* the Content-Type of a bridged stream (NULL: text/event-stream) */
    const char *(*stream_type)(const void *b);
    /* a whole chat answer to a request that asked for a stream (a
     * provider that answered whole) as the API's stream, true when it
     * wrote it (NULL: the API's whole answer goes) */
    bool (*answer_stream)(void *b, const json_t *completion, tg_buf *out);
    /* the upstream URL of a passed request (NULL: the route's upstream
     * and the path past /v1) */
    void (*pass_url)(tg_req *r, tg_buf *u);
} bridge_api;

/* ---- lifetime ---- */

/* A new request of `conn` on w (refs 1: MHD's), in w's list of requests
 * in flight. */
tg_req *req_new(worker *w, struct MHD_Connection *conn, const char *url, const char *method);
static inline tg_req *req_ref(tg_req *r)
{
    r->refs++;
    return r;
}
void req_unref(tg_req *r);
/* Frees the memory of finished requests the worker kept for reuse. */
void req_free_spares(worker *w);

/* max_body_memory: every worker's bodies count against one budget, taken
 * before a byte is stored (false: over it) and given back when the body
 * is freed. */
bool body_charge(tg_req *r, size_t n);
void body_release(tg_req *r);

#define TAIL_LEN (sizeof TG_REQUEST_TAIL - 1)

/* The upstream body's length: its head, the tools' text and the tail. */
static inline size_t up_body_len(const tg_req *r)
{
    return r->up.body.len + (r->up.tools ? json_string_length(r->up.tools) + TAIL_LEN : 0);
}
void up_body_free(tg_req *r);
/* Frees r->up.headers: the nodes curl made, not r->up.id_node nor the
 * worker's tail (w->up_tail) they are linked to. */
void upstream_headers_free(tg_req *r);

/* ---- the client connection ---- */

void req_suspend(tg_req *r);
/* The same from the access handler's final call, made after the run of
 * MHD (req_flush_suspends, which the loop calls after each run). */
void req_suspend_after_run(tg_req *r);
void req_flush_suspends(worker *w);
/* Resumes now, or in the worker's next batch (request.c says when). */
void req_resume(tg_req *r);
void flush_resumes(worker *w);
void watch_client(tg_req *r);
void unwatch_client(tg_req *r);
tg_req *find_by_client(worker *w, int fd, uint32_t gen);
/* One of the client's request headers (borrowed from MHD), or NULL. */
const char *client_header(tg_req *r, const char *name);

/* ---- the answer ---- */

/* The whole answer: takes body (malloc'd, or NULL); r goes RQ_READY. */
void set_answer(tg_req *r, int status, char *body, size_t len, bool from_upstream);
void set_error(tg_req *r, int status, const char *type, const char *code, const char *param,
               const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void set_error_from(tg_req *r, const tg_error *err);

/* Where the repaired chat stream goes: to the client, or first through
 * the request's bridge (bridge_flush, proxy/bridges.h). */
static inline tg_buf *stream_dst(tg_req *r)
{
    return r->prep.bridge ? &r->stream.chat_out : &r->stream.out;
}

/* The request's log: its access log line (one JSON object), when the
 * log is on, and for an error answer toolgate made itself (set_error,
 * any API, any status >= 400) one warn line with the request id, route,
 * model, stream flag and the error's message. */
void access_log_line(tg_req *r, int status);
/* What the client named, kept for the log (client.model, client.stream). */
void note_client_model(tg_req *r, const json_t *body);

#endif
