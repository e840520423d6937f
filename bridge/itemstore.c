/* itemstore.c -- see itemstore.h. A chained hash table of entries keyed by
 * (owner, id); each owner keeps its entries in a FIFO list (core/list.h),
 * and the owners sit in a max-heap by bytes held, so the owner that gives
 * up an item when the store is full is found in O(1) and re-placed in
 * O(log owners). Within an owner the oldest go first, which for a
 * conversation's items (each referenced in the turns right after it)
 * keeps what is still in use. */
#include "bridge/itemstore.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/hash.h"
#include "core/list.h"

#define BUCKETS 4096u       /* entries; a power of two */
#define OWNER_BUCKETS 512u  /* owners; a power of two */

typedef struct owner owner;

typedef struct entry {
    char *id;
    char *text;
    size_t size;
    owner *who;
    struct entry *chain;         /* next in the bucket */
    tg_list_node fifo;           /* the owner's FIFO, oldest first */
} entry;

struct owner {
    uint64_t key;
    size_t bytes;
    size_t heap_at;              /* index in the heap */
    tg_list entries;             /* its FIFO: head the oldest */
    owner *chain;
};

struct tg_itemstore {
    pthread_mutex_t mu;
    entry *buckets[BUCKETS];
    owner *owners[OWNER_BUCKETS];
    owner **heap;                /* max-heap by bytes */
    size_t n_heap, cap_heap;
    size_t bytes, max_bytes;
};

tg_itemstore *tg_itemstore_new(size_t max_bytes)
{
    tg_itemstore *s = tg_calloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->max_bytes = max_bytes;
    return s;
}

/* ---- the owners' heap --------------------------------------------------- */

static void heap_set(tg_itemstore *s, size_t i, owner *o)
{
    s->heap[i] = o;
    o->heap_at = i;
}

static void sift_up(tg_itemstore *s, size_t i)
{
    owner *o = s->heap[i];
    while (i > 0 && s->heap[(i - 1) / 2]->bytes < o->bytes) {
        heap_set(s, i, s->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(s, i, o);
}

static void sift_down(tg_itemstore *s, size_t i)
{
    owner *o = s->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->n_heap)
            break;
        if (c + 1 < s->n_heap && s->heap[c + 1]->bytes > s->heap[c]->bytes)
            c++;
        if (s->heap[c]->bytes <= o->bytes)
            break;
        heap_set(s, i, s->heap[c]);
        i = c;
    }
    heap_set(s, i, o);
}

static void heap_remove(tg_itemstore *s, owner *o)
{
    size_t i = o->heap_at;
    owner *last = s->heap[--s->n_heap];
    if (last == o)
        return;
    heap_set(s, i, last);
    sift_up(s, i);
    sift_down(s, last->heap_at);
}

/* ---- owners ------------------------------------------------------------- */

static owner **owner_slot(tg_itemstore *s, uint64_t key)
{
    owner **p = &s->owners[tg_hash64(&key, sizeof key, 0) & (OWNER_BUCKETS - 1)];
    while (*p && (*p)->key != key)
        p = &(*p)->chain;
    return p;
}

static owner *owner_get(tg_itemstore *s, uint64_t key)
{
    owner **p = owner_slot(s, key);
    if (*p)
        return *p;
    if (s->n_heap == s->cap_heap) {
        size_t cap = s->cap_heap ? s->cap_heap * 2 : 64;
        s->heap = tg_realloc(s->heap, cap * sizeof *s->heap);
        s->cap_heap = cap;
    }
    owner *o = tg_calloc(1, sizeof *o);
    o->key = key;
    *p = o;
    heap_set(s, s->n_heap++, o);
    return o;
}

static void owner_drop(tg_itemstore *s, owner *o)
{
    owner **p = owner_slot(s, o->key);
    *p = o->chain;
    heap_remove(s, o);
    free(o);
}

/* ---- entries ------------------------------------------------------------ */

static entry *oldest(owner *o)
{
    return TG_LIST_ITEM(o->entries.head, entry, fifo);
}

static entry **slot_of(tg_itemstore *s, uint64_t key, const char *id)
{
    uint64_t h = tg_hash64(id, strlen(id), key);
    entry **p = &s->buckets[h & (BUCKETS - 1)];
    while (*p && ((*p)->who->key != key || strcmp((*p)->id, id)))
        p = &(*p)->chain;
    return p;
}

static void drop(tg_itemstore *s, entry *e)
{
    owner *o = e->who;
    entry **p = slot_of(s, o->key, e->id);
    *p = e->chain;
    tg_list_remove(&o->entries, &e->fifo);
    s->bytes -= e->size;
    o->bytes -= e->size;
    free(e->id);
    free(e->text);
    free(e);
    if (tg_list_empty(&o->entries))
        owner_drop(s, o);
    else
        sift_down(s, o->heap_at);
}

static void link_newest(tg_itemstore *s, owner *o, entry *e)
{
    e->who = o;
    *slot_of(s, o->key, e->id) = e;
    tg_list_push_back(&o->entries, &e->fifo);
    o->bytes += e->size;
    s->bytes += e->size;
    sift_up(s, o->heap_at);
}

void tg_itemstore_put(tg_itemstore *s, uint64_t key, const char *id, const char *text)
{
    size_t size = strlen(id) + strlen(text) + sizeof(entry);
    if (!s || size > s->max_bytes)
        return;
    entry *e = tg_calloc(1, sizeof *e);
    e->id = tg_strdup(id);
    e->text = tg_strdup(text);
    e->size = size;
    pthread_mutex_lock(&s->mu);
    entry *old = *slot_of(s, key, id);
    if (old)
        drop(s, old);
    owner *o = owner_get(s, key);
    link_newest(s, o, e);
    /* the owner holding the most gives up its oldest, so a flood evicts
     * the flooder's own items first */
    while (s->bytes > s->max_bytes)
        drop(s, oldest(s->heap[0]));
    pthread_mutex_unlock(&s->mu);
}

char *tg_itemstore_get(tg_itemstore *s, uint64_t key, const char *id)
{
    if (!s)
        return NULL;
    pthread_mutex_lock(&s->mu);
    entry *e = *slot_of(s, key, id);
    char *copy = e ? tg_strdup(e->text) : NULL;
    pthread_mutex_unlock(&s->mu);
    return copy;
}

size_t tg_itemstore_bytes(tg_itemstore *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = s->bytes;
    pthread_mutex_unlock(&s->mu);
    return n;
}

size_t tg_itemstore_owner_bytes(tg_itemstore *s, uint64_t key)
{
    pthread_mutex_lock(&s->mu);
    owner *o = *owner_slot(s, key);
    size_t n = o ? o->bytes : 0;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void tg_itemstore_free(tg_itemstore *s)
{
    if (!s)
        return;
    while (s->n_heap)
        drop(s, oldest(s->heap[0]));
    free(s->heap);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
