/* collect.h -- a chat completion stream folded back into the whole answer
 * (collect.c): for a provider that streams although the agent asked for
 * one answer (stream false or absent).
 *
 * Ownership: the collector owns what it keeps; tg_collect_end hands the
 * caller a new reference and frees the collector.
 */
#ifndef TG_COLLECT_H
#define TG_COLLECT_H

#include <stddef.h>

#include <jansson.h>

typedef struct tg_collect tg_collect;

tg_collect *tg_collect_new(void);
/* The data of one event ("[DONE]" and what is not a JSON object are
 * skipped). */
void tg_collect_event(tg_collect *c, const char *data, size_t len);
/* The chat.completion the chunks make, or the first {"error": ...} event
 * the stream carried, or NULL when no event was a chat chunk (one with a
 * choices array). Frees c. */
json_t *tg_collect_end(tg_collect *c);

#endif
