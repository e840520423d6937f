/* cache.h -- a small bounded LRU of JSON values, one per worker thread.
 *
 * Agents resend the same tool list every turn, so the work derived from it
 * (the schema rewrite, discovery's search index) is worth keeping. Entries
 * are keyed by (kind, 64-bit hash): `kind` separates the users of one cache
 * ("schema", "disc"...), the hash is the caller's digest of its inputs.
 *
 * Not thread-safe on purpose: the proxy gives every worker its own cache, so
 * there are no locks. Cached values are shared, never mutate one you got.
 */
#ifndef TG_CACHE_H
#define TG_CACHE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hash.h"  /* tg_hash64, the hash of cache keys */

typedef struct tg_cache tg_cache;

/* Either bound may be 0 for "no limit on that axis" (not both). */
tg_cache *tg_cache_new(size_t max_entries, size_t max_bytes);
void tg_cache_free(tg_cache *c);

/* NEW reference, or NULL on a miss (or when c is NULL). */
json_t *tg_cache_get(tg_cache *c, const char *kind, uint64_t key);
/* Keeps a reference to value (increfs); `cost` is the caller's estimate of
 * its size in bytes. Replaces an entry with the same key; evicts the least
 * recently used entries past the bounds. No-op when c is NULL. */
void tg_cache_put(tg_cache *c, const char *kind, uint64_t key, json_t *value, size_t cost);

/* Counters, for tests and /metrics. */
size_t tg_cache_entries(const tg_cache *c);
size_t tg_cache_bytes(const tg_cache *c);

#endif
