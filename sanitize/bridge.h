/* bridge.h -- what the agent-API bridges share (responses_api.c for
 * OpenAI's Responses API, messages_api.c for Anthropic's Messages API):
 * reading the repaired chat stream they are fed, writing their own event
 * stream, and the few JSON helpers of both directions. Ownership follows
 * sanitize/tg.h. */
#ifndef TG_BRIDGE_H
#define TG_BRIDGE_H

#include <stdbool.h>

#include "buf.h"
#include "tg.h"

/* A 400 invalid_value naming param; fmt has one %s, for what. Returns -1. */
int tg_bridge_bad(tg_error *err, const char *param, const char *fmt, const char *what);
/* Is k one of the NULL-terminated list? */
bool tg_bridge_is_one_of(const char *k, const char *const *list);
/* The integer at o[k1] (or o[k1][k2]), 0 when it is not one. */
json_int_t tg_bridge_int_at(const json_t *o, const char *k1, const char *k2);
/* A chat message's or delta's reasoning text (reasoning_content, or the
 * reasoning some providers send instead), or NULL when it has none. */
const char *tg_bridge_reasoning(const json_t *msg);

/* Writes the event (stolen), an object whose "type" names it, as
 * "event: TYPE\ndata: JSON\n\n", the framing both APIs' streams use. */
void tg_bridge_emit(tg_buf *out, json_t *ev);

/* The chat stream's SSE text, in pieces of any size (the part of an event
 * not yet whole waits in pending): on_data gets each whole event's data,
 * its data lines joined ("[DONE]" included). */
void tg_bridge_read_sse(tg_buf *pending, const char *sse, size_t n,
                        void (*on_data)(void *ud, const char *data, size_t len), void *ud);

#endif
