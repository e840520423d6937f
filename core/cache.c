/* cache.c -- bounded LRU of JSON values (see cache.h).
 *
 * A doubly linked list in recency order plus an open hash table of chains.
 * Sizes are small (hundreds of entries per worker), so the table has a fixed
 * power-of-two bucket count chosen at creation and never rehashes.
 */
#include "core/cache.h"
#include "core/alloc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    struct entry *prev, *next;  /* recency list, head = most recent */
    struct entry *chain;        /* bucket chain */
    char *kind;
    uint64_t key;
    json_t *value;
    size_t cost;
} entry;

struct tg_cache {
    entry *head, *tail;
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

static void list_unlink(tg_cache *c, entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void list_push_front(tg_cache *c, entry *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (!c->tail)
        c->tail = e;
}

static void entry_remove(tg_cache *c, entry *e)
{
    entry **pp = find_slot(c, e->kind, e->key);
    if (*pp == e)
        *pp = e->chain;
    list_unlink(c, e);
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
    while (c->head)
        entry_remove(c, c->head);
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
    list_unlink(c, e);
    list_push_front(c, e);
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
    list_push_front(c, e);
    c->entries++;
    c->bytes += cost;
    while (over_bounds(c) && c->tail && c->tail != e)
        entry_remove(c, c->tail);
}

size_t tg_cache_entries(const tg_cache *c)
{
    return c ? c->entries : 0;
}

size_t tg_cache_bytes(const tg_cache *c)
{
    return c ? c->bytes : 0;
}
