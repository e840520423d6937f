/* pipeline.h -- the stages in order (the context they share: core/ctx.h).
 *
 *   request -> route -> custom tools -> hygiene -> schema dialect -> discovery -> upstream
 *           -> repair -> discovery intercept -> agent
 *
 * This header is the one that knows every stage; nothing below it includes
 * it. Callers above (conf/, proxy/, the tests) start here.
 */
#ifndef TG_PIPELINE_H
#define TG_PIPELINE_H

#include <stdbool.h>

#include "core/buf.h"
#include "core/ctx.h"
#include "core/tg.h"
#include "discovery/discovery.h"
#include "repair/repair.h"
#include "sanitize/custom.h"
#include "sanitize/hygiene.h"
#include "sanitize/schema.h"

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
/* Run the request stages over body, in place. 0, or -1 with err filled. */
int tg_pipeline_request(json_t *body, tg_ctx *ctx, tg_error *err);

/* The two halves of the raw path, for callers that route between them:
 * parse (tools from the cache when their bytes were seen before; sets
 * *tools_hash, 0 when unknown) and dump (the tools' serialization spliced
 * from the cache). */
json_t *tg_request_parse(const char *raw, size_t n, struct tg_cache *cache, int max_depth,
                         uint64_t *tools_hash, size_t *tools_bytes, tg_error *err);
/* 0, or -1 when body is NULL. */
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
