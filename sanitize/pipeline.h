/* pipeline.h -- the stages in order, and the per-request context they share.
 *
 *   request -> route -> hygiene -> schema dialect -> discovery -> upstream
 *           -> repair -> discovery intercept -> agent
 *
 * The ctx lives as long as one client request. What the request stages learn
 * (the agent's tools, renamed tools, rewritten ids) is kept here so that the
 * response stages can undo it: toolgate is stateless across requests, and
 * everything is derived from the request itself.
 */
#ifndef TG_PIPELINE_H
#define TG_PIPELINE_H

#include <stdbool.h>

#include "../discovery/discovery.h"
#include "buf.h"
#include "hygiene.h"
#include "repair.h"
#include "schema.h"
#include "tg.h"

#define TG_QUIRKS 30

/* Counters a request accumulates, for logs and /metrics. */
typedef struct tg_stats {
    unsigned schema_rewrites;
    unsigned fields_stripped;
    unsigned repairs;
    unsigned repair_failures;
    unsigned quirks[TG_QUIRKS];      /* repairs by quirk: [n] for Rn, [0] others */        /* calls delivered unrepaired or dropped */
    unsigned discovery_rounds;
    unsigned hints_given;            /* turns whose model reads new successor hints */
    unsigned hints_followed;         /* ... and whose answer calls a hinted tool */
    unsigned bad_chunks;             /* stream chunks repaired or dropped for their shape */
    unsigned tools_in, tools_out;
    size_t tools_bytes_in, tools_bytes_out;
} tg_stats;

typedef struct tg_ctx {
    /* Rules in force (borrowed from the route or a bare preset). */
    const char *route_name;          /* NULL for `rewrite --dialect` */
    tg_dialect dialect;
    const tg_schema_rules *schema;
    const tg_msg_rules *msg;
    const tg_repair_rules *repair;
    const tg_disc_conf *disc;
    const char *strip_prefix;        /* "" disables */

    json_t *explain;                 /* NULL, or array of change records */
    struct tg_cache *cache;          /* owned by the worker thread that runs
                                        this request (sanitize/cache.h); NULL
                                        disables caching */

    /* Learned on the way up, used on the way down (all owned by ctx). */
    json_t *tools;                   /* the agent's tools as received, or NULL.
                                        Shared with the request body: a stage
                                        that rewrites tools builds a new array
                                        and never edits these objects. */
    json_t *name_map;                /* {upstream name: agent name} or NULL */
    json_t *arg_inverse;             /* schema stage's inverse data or NULL */
    json_t *rf_inverse;              /* the inverse of a rewritten
                                        response_format schema, or NULL */
    json_t *id_map;                  /* {upstream id: agent id} or NULL */
    json_t *disc_state;              /* discovery's per-request state or NULL */
    json_t *request;                 /* the upstream request body (for discovery rounds) */
    bool stream;
    bool legacy_functions;           /* the agent sent functions[]: answer
                                        with function_call (hygiene.c) */
    uint64_t tools_hash;             /* hash of the tools' raw bytes, 0 = unknown;
                                        stages may key their caches on it
                                        instead of serializing the tools */
    tg_stats stats;
} tg_ctx;

/* Bare ctx for a dialect preset (rules owned by the ctx's static storage of
 * the caller: pass a tg_rules_set you keep alive). */
typedef struct tg_rules_set {
    tg_schema_rules schema;
    tg_msg_rules msg;
    tg_repair_rules repair;
    tg_disc_conf disc;
} tg_rules_set;

void tg_rules_preset(tg_dialect d, tg_rules_set *out);
void tg_ctx_init(tg_ctx *ctx, const char *route_name, const tg_rules_set *rules,
                 const char *strip_prefix);
void tg_ctx_clear(tg_ctx *ctx);  /* drops every reference the ctx owns */
/* A streamed answer has begun and the request can no longer be resent:
 * unless a discovery round may follow, ctx->request keeps only what the
 * response stages read (an agent's whole history otherwise lives as long as
 * the stream). Returns whether ctx->request was replaced. */
bool tg_ctx_trim_request(tg_ctx *ctx);

/* Run the request stages over body, in place. 0, or -1 with err filled. */
int tg_pipeline_request(json_t *body, tg_ctx *ctx, tg_error *err);

/* The two halves of the raw path, for callers that route between them:
 * parse (tools from the cache when their bytes were seen before; sets
 * *tools_hash, 0 when unknown) and dump (the tools' serialization spliced
 * from the cache). */
json_t *tg_request_parse(const char *raw, size_t n, struct tg_cache *cache, int max_depth,
                         uint64_t *tools_hash, size_t *tools_bytes, tg_error *err);
int tg_request_dump(json_t *body, tg_ctx *ctx, tg_buf *out);
/* The same without copying the tools' text: the body is head, then
 * *tools_text (a new reference to a string, or NULL when head is already
 * the whole body), then TG_REQUEST_TAIL. For senders that can send pieces. */
#define TG_REQUEST_TAIL "}"
int tg_request_dump_split(json_t *body, tg_ctx *ctx, tg_buf *head, json_t **tools_text);

/* The network's entry: the client's raw body in, the upstream body out.
 * Same stages as tg_pipeline_request, but an agent's tool list, which is
 * the same bytes turn after turn, is found by a scan, hashed, and neither
 * parsed nor serialized again once seen (worker cache). *body_out gets the
 * parsed request (new reference) for logging and discovery rounds.
 * 0, or -1 with err filled (400 for bad JSON). */
int tg_pipeline_request_raw(const char *raw, size_t n, tg_ctx *ctx, json_t **body_out,
                            tg_buf *out, tg_error *err);

/* Run the response stages over a whole chat.completion, in place.
 * Returns 0 (resp is for the agent) or 1 (*next_body must go upstream). */
int tg_pipeline_response(json_t *resp, tg_ctx *ctx, json_t **next_body);

#endif
