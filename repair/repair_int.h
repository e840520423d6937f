/* repair_int.h -- what repair.c gives the stream side of the repair
 * (repair_stream.c and its stream_*.c) beyond repair.h: the call repair
 * both paths share, ids, finish_reason and content. Each lower repair file
 * has a header of its own (repair_base.h, repair_schema.h, repair_text.h,
 * custom_calls.h), and none of them calls repair.c. Not for other stages. */
#ifndef TG_REPAIR_INT_H
#define TG_REPAIR_INT_H

#include <stdint.h>

#include "core/ctx.h"

/* Seed for synthesized ids, from the response id and the choice index. */
uint64_t tg_rr_seed(const char *resp_id, long choice);
/* "call_" + 24 alphanumerics, from a hash of the arguments (R8). */
void tg_rr_synth_id(char out[32], uint64_t seed, size_t pos, const char *name,
                    const char *args, unsigned attempt);
/* Repair an array of OpenAI-shaped tool calls in place, for the message
 * whose ids so far are the keys of `ids` (a set, updated): R20 split, R1,
 * names reversed, R13/R14/R15/json fix/inverse arg mapping, R8/R9 ids.
 * first_pos is the position of calls[0] in the agent's message. Calls that
 * cannot be delivered (no name) are removed and counted as failures.
 * Returns the number of calls left. */
size_t tg_rr_fix_calls(tg_ctx *ctx, json_t *calls, uint64_t seed, size_t first_pos,
                       json_t *ids);
/* R8/R9 for one call (its "id" set in place): a missing id is synthesized
 * from the agent name and args, one the message has already is made
 * unique; the result joins the `ids` set. */
void tg_rr_assign_id(tg_ctx *ctx, json_t *call, uint64_t seed, size_t pos, const char *agent,
                     const char *args, json_t *ids);
/* The finish_reason the agent must see for a choice with ncalls calls;
 * returns `f` itself when nothing changes (R10, R11). */
const char *tg_rr_finish(tg_ctx *ctx, const char *f, size_t ncalls);
/* f's OpenAI word when f is a known foreign one ("eos" -> "stop",
 * "model_length" -> "length"), else f itself. */
const char *tg_rr_finish_word(const char *f);
/* f says the generation failed (Mistral's "error", Zhipu's "network_error",
 * vLLM's "abort", DeepSeek's "insufficient_system_resource"): R26's error,
 * streamed and whole. */
bool tg_rr_finish_failed(const char *f);
/* R22: holder's usage in OpenAI's shape, the three counters integers (a
 * missing one is what the others imply), or gone when it names none
 * ("usage": {}). 1 when changed. */
int tg_rr_usage_shape(json_t *holder);
/* The bytes from v (a usage object's '{') to e name OpenAI's three
 * counters, each with a number: R22's byte check on the shortcuts. */
bool tg_rr_usage_counters(const char *v, const char *e);
/* Content written for a rewritten response_format schema, restored to the
 * agent's schema: a new string, or NULL (unparsable, or nothing to undo). */
json_t *tg_rr_structured_content(tg_ctx *ctx, const char *text, size_t n);
/* The legacy answer shape on a message or stream delta: its first call (a
 * delta's index 0) as function_call (see tg_repair_legacy_answer). */
void tg_rr_legacy_calls(json_t *holder);
const char *tg_rr_legacy_finish(const char *f);
/* Mistral content list -> text (and thinking into reasoning_content) on a
 * message or delta (R23). Returns 1 when changed. */
int tg_rr_flatten_content(tg_ctx *ctx, json_t *msg);
/* R27: the calls in a Groq tool_use_failed error's failed_generation that
 * name declared tools (new array of OpenAI calls, not yet fixed), or NULL. */
json_t *tg_rr_failed_generation(tg_ctx *ctx, const json_t *err);
/* A recovered text call {"name","arguments":object} -> OpenAI tool call
 * (new reference, empty id to be synthesized). */
json_t *tg_rr_call_from_text(const json_t *tc);
/* GLM argument markup inside a call's name (repair_text.c): the declared
 * name before it and the pairs as arguments. 0 when fn changed. */
int tg_rr_name_markup(const tg_ctx *ctx, json_t *fn);

#endif
