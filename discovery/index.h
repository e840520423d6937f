/* index.h -- discovery's search index: BM25F over a tool catalog.
 *
 * Internal to discovery/. The index is a json_t (an object holding packed
 * binary postings in json strings) so that it can live in the per-worker
 * cache (sanitize/cache.h) like any other value and be shared read-only.
 */
#ifndef TG_DISC_INDEX_H
#define TG_DISC_INDEX_H

#include <jansson.h>
#include <stddef.h>

/* Build over `tools` (borrowed array of OpenAI tools; doc i = tools[i]).
 * Names, descriptions, parameter names and parameter descriptions are
 * indexed. Returns a new reference, never NULL unless out of memory. */
json_t *tg_dindex_build(json_t *tools);

/* Rank the catalog for a free-text query. Fills up to `max` doc numbers
 * (best first) into out[] and their scores into score[] (may be NULL).
 * Returns how many docs matched at all (may exceed max). */
size_t tg_dindex_search(json_t *index, const char *query, size_t *out, double *score,
                        size_t max);

/* Rough heap cost of an index, for the cache's byte bound. */
size_t tg_dindex_cost(json_t *index);

/* Edit distance between two names, case-insensitive (capped at 255). */
unsigned tg_dindex_distance(const char *a, const char *b);

#endif
