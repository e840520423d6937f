/* ctx.h -- the per-request context every stage reads and fills.
 *
 * The ctx lives as long as one client request. What the request stages learn
 * (the agent's tools, renamed tools, rewritten ids) is kept here so that the
 * response stages can undo it: toolgate is stateless across requests, and
 * everything is derived from the request itself.
 *
 * It sits in core/ so that each stage includes only what is below it: the
 * rule sets it points to are declared by their stages (sanitize/, repair/,
 * discovery/) and are opaque here; the stream repair reaches the discovery
 * intercept, which sits above it, through the hooks below, set by the
 * pipeline (pipeline/pipeline.c), never by name.
 */
#ifndef TG_CTX_H
#define TG_CTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dialect.h"
#include "core/quirk.h"
#include "core/tg.h"

struct tg_cache;
struct tg_schema_rules;
struct tg_msg_rules;
struct tg_repair_rules;
struct tg_disc_conf;
struct tg_embedder;
struct tg_ctx;

/* Counters a request accumulates, for logs and /metrics. */
typedef struct tg_stats {
    unsigned schema_rewrites;
    unsigned fields_stripped;
    unsigned repairs;
    unsigned repair_failures;        /* calls delivered unrepaired or dropped */
    unsigned quirks[TG_QUIRKS];      /* repairs by quirk id (core/quirk.h) */
    unsigned discovery_rounds;
    unsigned hints_given;            /* turns whose model reads new successor hints */
    unsigned hints_followed;         /* ... and whose answer calls a hinted tool */
    unsigned bad_chunks;             /* stream chunks repaired or dropped for their shape */
    unsigned tools_in, tools_out;
    size_t tools_bytes_in, tools_bytes_out;
    unsigned schema_standins;        /* $refs left out by the schema budget
                                        (rule 62, degraded) */
} tg_stats;

/* What the stream repair asks of the discovery intercept (discovery.h has
 * the contracts of the functions these point to). */
typedef struct tg_intercept {
    bool (*is_meta)(const struct tg_ctx *ctx, const char *upstream_name);
    int (*stream_round)(struct tg_ctx *ctx, json_t *assistant_msg, json_t **emit,
                        json_t **next_body);
    const char *(*final_note)(const struct tg_ctx *ctx);
    void (*saw_call)(struct tg_ctx *ctx, const char *upstream_name);
} tg_intercept;

typedef struct tg_ctx {
    /* Rules in force (borrowed from the route or a bare preset). */
    const char *route_name;          /* NULL for `rewrite --dialect` */
    tg_dialect dialect;
    const struct tg_schema_rules *schema;
    const struct tg_msg_rules *msg;
    const struct tg_repair_rules *repair;
    const struct tg_disc_conf *disc;
    const tg_intercept *intercept;   /* NULL when discovery is off */
    const char *strip_prefix;        /* "" disables */

    json_t *explain;                 /* NULL, or array of change records */
    struct tg_cache *cache;          /* owned by the worker thread that runs
                                        this request (core/cache.h); NULL
                                        disables caching */
    struct tg_embedder *embedder;    /* the caller's, or NULL: semantic
                                        ranking off (discovery/discovery.h) */

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
    json_t *dropped;                 /* [name] of top-level parameters the
                                        target refuses, left out (said in
                                        X-Toolgate-Dropped), or NULL */
    json_t *custom_tools;            /* {agent name: true}: chat custom tools
                                        sent up as functions (sanitize/custom.h),
                                        whose calls go back as custom calls */
    json_t *translated;              /* {kind: [name]} given upstream in another
                                        form (X-Toolgate-Translated), or NULL */
    json_t *disc_state;              /* discovery's per-request state or NULL */
    json_t *request;                 /* the upstream request body (for discovery rounds) */
    json_t *opaque_out;              /* {call id: {its opaque fields}} of the calls
                                        the agent got that carry fields such as
                                        Gemini 3's extra_content, for the proxy
                                        to keep (proxy/signatures.c), or NULL */
    bool no_shortcuts;               /* tests: the request stages take none of
                                        their shortcuts (a history with nothing
                                        to pair, ...), to compare with */
    bool stream;
    bool legacy_functions;           /* the agent sent functions[]: answer
                                        with function_call (hygiene.c) */
    uint64_t tools_hash;             /* hash of the tools' raw bytes, 0 = unknown;
                                        stages may key their caches on it
                                        instead of serializing the tools */
    tg_stats stats;
} tg_ctx;

void tg_ctx_clear(tg_ctx *ctx);  /* drops every reference the ctx owns */
/* A streamed answer has begun and the request can no longer be resent:
 * unless a discovery round may follow, ctx->request keeps only what the
 * response stages read (an agent's whole history otherwise lives as long as
 * the stream). Returns whether ctx->request was replaced. */
bool tg_ctx_trim_request(tg_ctx *ctx);
/* Says that `what` of `kind` went upstream in another form: one entry of
 * ctx->translated (X-Toolgate-Translated), each value listed once. */
void tg_ctx_translated(tg_ctx *ctx, const char *kind, const char *what);

#endif
