/* cache.c -- bounded LRU of JSON values (see cache.h).
 *
 * A doubly linked list in recency order (core/list.h) plus an open hash
 * table of chains.
 * Sizes are small (hundreds of entries per worker), so the table has a fixed
 * power-of-two bucket count chosen at creation and never rehashes.
 */
#include "core/cache.h"
#include "core/alloc.h"
#include "core/list.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    tg_list_node lru;           /* recency list, head = most recent */
    struct entry *chain;        /* bucket chain */
    char *kind;
    uint64_t key;
    json_t *value;
    size_t cost;
} entry;

struct tg_cache {
    tg_list lru;
    entry **buckets;
    size_t nbuckets;  /* power of two */
    size_t entries, bytes;
    size_t max_entries, max_bytes;
};

tg_cache *tg_cache_new(size_t max_entries, size_t max_bytes)
{
    tg_cache *c = tg_calloc(1, sizeof *c);
    size_t want = max_entries ? max_entries : 256;
    c->nbuckets = 16;
    while (c->nbuckets < want && c->nbuckets < (1u << 20))
        c->nbuckets <<= 1;
    c->buckets = tg_calloc(c->nbuckets, sizeof *c->buckets);
    c->max_entries = max_entries;
    c->max_bytes = max_bytes;
    return c;
}

static size_t bucket_of(const tg_cache *c, const char *kind, uint64_t key)
{
    return (size_t)tg_hash64(kind, strlen(kind), key) & (c->nbuckets - 1);
}

static entry **find_slot(tg_cache *c, const char *kind, uint64_t key)
{
    entry **pp = &c->buckets[bucket_of(c, kind, key)];
    while (*pp && ((*pp)->key != key || strcmp((*pp)->kind, kind) != 0))
        pp = &(*pp)->chain;
    return pp;
}

static entry *lru_last(tg_cache *c)
{
    return TG_LIST_ITEM(c->lru.tail, entry, lru);
}

static void entry_remove(tg_cache *c, entry *e)
{
    entry **pp = find_slot(c, e->kind, e->key);
    if (*pp == e)
        *pp = e->chain;
    tg_list_remove(&c->lru, &e->lru);
    c->entries--;
    c->bytes -= e->cost;
    json_decref(e->value);
    free(e->kind);
    free(e);
}

static bool over_bounds(const tg_cache *c)
{
    return (c->max_entries && c->entries > c->max_entries) ||
           (c->max_bytes && c->bytes > c->max_bytes);
}

void tg_cache_free(tg_cache *c)
{
    if (!c)
        return;
    while (!tg_list_empty(&c->lru))
        entry_remove(c, TG_LIST_ITEM(c->lru.head, entry, lru));
    free(c->buckets);
    free(c);
}

json_t *tg_cache_get(tg_cache *c, const char *kind, uint64_t key)
{
    if (!c || !kind)
        return NULL;
    entry *e = *find_slot(c, kind, key);
    if (!e)
        return NULL;
    tg_list_move_front(&c->lru, &e->lru);
    return json_incref(e->value);
}

void tg_cache_put(tg_cache *c, const char *kind, uint64_t key, json_t *value, size_t cost)
{
    if (!c || !kind || !value)
        return;
    /* One value larger than the whole budget would only evict everything. */
    if (c->max_bytes && cost > c->max_bytes)
        return;
    entry **pp = find_slot(c, kind, key);
    if (*pp)
        entry_remove(c, *pp);
    entry *e = tg_calloc(1, sizeof *e);
    e->kind = tg_strdup(kind);
    e->key = key;
    e->value = json_incref(value);
    e->cost = cost;
    pp = find_slot(c, kind, key);
    *pp = e;
    tg_list_push_front(&c->lru, &e->lru);
    c->entries++;
    c->bytes += cost;
    while (over_bounds(c) && lru_last(c) && lru_last(c) != e)
        entry_remove(c, lru_last(c));
}

size_t tg_cache_entries(const tg_cache *c)
{
    return c ? c->entries : 0;
}

size_t tg_cache_bytes(const tg_cache *c)
{
    return c ? c->bytes : 0;
}
