/* itemstore.c -- see itemstore.h. A chained hash table over a FIFO list:
 * entries are looked up by id and evicted oldest first, which for a
 * conversation's items (each referenced in the turns right after it) keeps
 * what is still in use. */
#include "itemstore.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"

#define BUCKETS 4096u /* a power of two */

typedef struct entry {
    char *id;
    char *text;
    size_t size;
    struct entry *chain;         /* next in the bucket */
    struct entry *older, *newer; /* the FIFO */
} entry;

struct tg_itemstore {
    pthread_mutex_t mu;
    entry *buckets[BUCKETS];
    entry *oldest, *newest;
    size_t bytes, max_bytes;
};

tg_itemstore *tg_itemstore_new(size_t max_bytes)
{
    tg_itemstore *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->mu, NULL);
    s->max_bytes = max_bytes;
    return s;
}

static entry **slot_of(tg_itemstore *s, const char *id)
{
    entry **p = &s->buckets[tg_hash64(id, strlen(id), 0) & (BUCKETS - 1)];
    while (*p && strcmp((*p)->id, id))
        p = &(*p)->chain;
    return p;
}

static void drop(tg_itemstore *s, entry *e)
{
    entry **p = slot_of(s, e->id);
    *p = e->chain;
    if (e->older)
        e->older->newer = e->newer;
    else
        s->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        s->newest = e->older;
    s->bytes -= e->size;
    free(e->id);
    free(e->text);
    free(e);
}

void tg_itemstore_put(tg_itemstore *s, const char *id, const char *text)
{
    size_t size = strlen(id) + strlen(text) + sizeof(entry);
    if (!s || size > s->max_bytes)
        return;
    entry *e = calloc(1, sizeof *e);
    if (!e || !(e->id = strdup(id)) || !(e->text = strdup(text))) {
        if (e)
            free(e->id);
        free(e);
        return;
    }
    e->size = size;
    pthread_mutex_lock(&s->mu);
    entry *old = *slot_of(s, id);
    if (old)
        drop(s, old);
    while (s->oldest && s->bytes + size > s->max_bytes)
        drop(s, s->oldest);
    entry **p = slot_of(s, id);
    *p = e;
    e->older = s->newest;
    if (s->newest)
        s->newest->newer = e;
    else
        s->oldest = e;
    s->newest = e;
    s->bytes += size;
    pthread_mutex_unlock(&s->mu);
}

char *tg_itemstore_get(tg_itemstore *s, const char *id)
{
    if (!s)
        return NULL;
    pthread_mutex_lock(&s->mu);
    entry *e = *slot_of(s, id);
    char *copy = e ? strdup(e->text) : NULL;
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

void tg_itemstore_free(tg_itemstore *s)
{
    if (!s)
        return;
    while (s->oldest)
        drop(s, s->oldest);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
