/* hints.h -- successor hints: beside the result of a tool the model found
 * through discovery, the schemas of the tools likely to be called next, so
 * that its next call is typed without a search round.
 *
 * Internal to discovery/. The note goes inside the tool message's content,
 * after the result, between TG_HINTS_OPEN and TG_HINTS_CLOSE lines: no
 * message is added (providers' role and order rules, rules 6 and 44 of
 * docs/dialects.md, stay met) and the tools
 * array is not touched (prompt caches stay warm). Every note is computed
 * from the derivation and the messages up to its own, so a history sends
 * the same bytes on every later turn.
 */
#ifndef TG_DISC_HINTS_H
#define TG_DISC_HINTS_H

#include <jansson.h>

#define TG_HINTS_MAX 3  /* tools per note */
#define TG_HINTS_OPEN "<toolgate-next-tools>"
#define TG_HINTS_CLOSE "</toolgate-next-tools>"

/* Add a note to each tool message of body["messages"] (edited in place)
 * that answers a call of a hidden catalog tool of the derivation d
 * (borrowed; see discovery.c). Returns a new array: the catalog positions
 * hinted by the tool messages after the last assistant message, i.e. what
 * the model reads for the first time this turn (may be empty). Each
 * note's choice is kept in cache (the worker's, may be NULL) under a digest
 * of everything it depends on, so a turn computes only its new results'. */
struct tg_cache;
json_t *tg_disc_hints_add(json_t *body, json_t *d, struct tg_cache *cache);

/* Whether one of calls (borrowed array of OpenAI tool calls, by agent or
 * upstream name) calls a tool of hinted (borrowed array of positions). */
int tg_disc_hints_followed(json_t *d, json_t *hinted, json_t *calls);

#endif
