/* store.c -- see store.h: the memory backend (a wrapper over
 * bridge/itemstore.c), the choice of backend, and the owner hash. */
#include "proxy/store.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/itemstore.h"
#include "core/alloc.h"

typedef struct mem_store {
    tg_store base;
    tg_itemstore *items;
} mem_store;

static int mem_put(tg_store *s, int slot, uint64_t owner, const char *id, const char *text)
{
    tg_itemstore_put(((mem_store *)s)->items, owner, id, text);
    return 0;
}

static tg_store_status mem_get(tg_store *s, int slot, uint64_t owner, const char *id, char **text)
{
    *text = tg_itemstore_get(((mem_store *)s)->items, owner, id);
    return *text ? TG_STORE_FOUND : TG_STORE_MISSING;
}

static size_t mem_bytes(tg_store *s) { return tg_itemstore_bytes(((mem_store *)s)->items); }

static void mem_free(tg_store *s)
{
    tg_itemstore_free(((mem_store *)s)->items);
    free(s);
}

static const tg_store_ops mem_ops = {.put = mem_put, .get = mem_get, .bytes = mem_bytes,
                                     .free = mem_free};

tg_store *tg_store_memory(size_t max_bytes)
{
    mem_store *m = tg_calloc(1, sizeof *m);
    m->items = tg_itemstore_new(max_bytes);
    m->base.ops = &mem_ops;
    snprintf(m->base.name, sizeof m->base.name, "memory");
    return &m->base;
}

/* A connection not made in this long is dropped, and so is one that sends
 * nothing for this long while a command waits on it (store_redis.c). */
#define REDIS_TIMEOUT_MS 200

tg_store *tg_store_open(const tg_conf *conf, int workers, char *err, size_t n)
{
    if (!conf->responses_redis)
        return tg_store_memory(conf->responses_store);
    tg_redis_url u;
    if (tg_parse_redis_url(conf->responses_redis, &u)) {
        snprintf(err, n, "responses_store: cannot read '%s'", conf->responses_redis);
        return NULL;
    }
    return tg_store_redis(&u, workers, conf->responses_per_owner, conf->responses_ttl_ms,
                          REDIS_TIMEOUT_MS);
}

/* Owners were a hash seeded per process, which made them unguessable but
 * different in every replica; a shared store needs the same owner for the
 * same client everywhere. SHA-256 keeps what the store holds from telling
 * anything about a key or credential (it cannot be reversed, and an owner
 * is never shown to a client); guessing an owner would not help anyway,
 * since an item is found only by its 130-bit random id as well. */
uint64_t tg_store_owner(const char *kind, const char *value)
{
    /* "toolgate-owner" NUL kind NUL SHA-256(value): no allocation, whatever
     * the value's length */
    static const char tag[] = "toolgate-owner";
    unsigned char in[sizeof tag + 16 + SHA256_DIGEST_LENGTH], md[SHA256_DIGEST_LENGTH];
    size_t nk = strnlen(kind, 15) + 1;
    memcpy(in, tag, sizeof tag);
    memcpy(in + sizeof tag, kind, nk - 1);
    in[sizeof tag + nk - 1] = 0;
    SHA256((const unsigned char *)value, strlen(value), in + sizeof tag + nk);
    SHA256(in, sizeof tag + nk + SHA256_DIGEST_LENGTH, md);
    uint64_t h = 0;
    for (int i = 0; i < 8; i++)
        h = h << 8 | md[i];
    return h;
}
