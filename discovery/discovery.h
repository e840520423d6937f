/* discovery.h -- lazy tool discovery: large tool lists collapse behind the
 * meta-tools search_tools / get_tool_schema / call_tool, answered by toolgate.
 */
#ifndef TG_DISCOVERY_H
#define TG_DISCOVERY_H

#include <stdbool.h>

#include "core/tg.h"
#include "discovery/disc_conf.h"

struct tg_ctx;

/* Request stage: may replace body["tools"]; records in ctx what it did. */
int tg_discovery_stage(json_t *body, struct tg_ctx *ctx, tg_error *err);

/* Response intercept (non-streamed), after the repair stage. Returns 0 when
 * resp goes to the agent, 1 when *next_body (new reference) must be sent
 * upstream for another round (also kept in ctx->request). call_tool calls
 * become ordinary calls (put through tg_repair_response); usage is summed
 * over the rounds; after max_rounds the agent gets the model's text or a
 * note that discovery did not converge, never a dangling meta call. */
int tg_discovery_intercept(json_t *resp, struct tg_ctx *ctx, json_t **next_body);

/* Streams. The stream repair asks, for each tool call as soon as its name is
 * known, whether it is one of this request's meta-tools; those calls are held
 * back from the agent. True for the meta-tools and for names that are
 * neither exposed nor in the catalog: toolgate answers those with an error
 * that names the closest tools. */
bool tg_discovery_is_meta(const struct tg_ctx *ctx, const char *upstream_name);

/* At the end of each upstream round the stream repair hands over the
 * round's assembled assistant message (borrowed; upstream tool names;
 * OpenAI shape {role, content, tool_calls}). The function fills *emit (new
 * reference or NULL: an array of ordinary tool calls to stream to the agent,
 * e.g. what call_tool named; upstream names and the arguments string as the
 * model wrote them, so the stream repair fixes them like any call) and
 * returns 1 with *next_body (new reference) when another round must go
 * upstream, 0 when the turn is over. A round that calls real tools ends the
 * turn: its meta calls are dropped (the model asks again next turn if it
 * must). */
int tg_discovery_stream_round(struct tg_ctx *ctx, json_t *assistant_msg, json_t **emit,
                              json_t **next_body);

/* A stream relays a call of this real tool (upstream name) to the agent:
 * counted when it is one the turn's successor hints named. */
void tg_discovery_saw_call(struct tg_ctx *ctx, const char *upstream_name);

/* The texts the search_tools calls of a whole chat completion will have
 * embedded when they are answered (each search's phrasings, as
 * discovery_embeddings sends them), a new array; empty when discovery is
 * not on for ctx. So that a caller can embed them before, off the thread. */
json_t *tg_discovery_search_texts(const struct tg_ctx *ctx, json_t *completion);

/* After a stream's last round: text the stream should add as content when
 * discovery gave up after max_rounds (the agent must get some answer), or
 * NULL. Borrowed, valid while ctx lives. */
const char *tg_discovery_final_note(const struct tg_ctx *ctx);

/* The search_tools answer for `query` over this request's catalog, as the
 * model would get it (new reference), or NULL when discovery is not active
 * for the request. For the eval tool and tests. */
json_t *tg_discovery_search(const struct tg_ctx *ctx, const char *query, int limit);

/* The same for search_tools' whole arguments (borrowed): {query, queries,
 * group, limit}. */
json_t *tg_discovery_search_args(const struct tg_ctx *ctx, json_t *args);

#endif
