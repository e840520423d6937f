/* store.h -- where the items of bridged Responses are kept for a later
 * item_reference: one interface, two backends chosen at start from
 * [server] responses_store.
 *
 *   memory  (a size, the default): bridge/itemstore.h, shared by the
 *           workers of one process; a replica does not see another's items.
 *   redis   (redis://HOST:PORT/DB): Redis or Valkey, shared by every replica
 *           that names the same database, so any replica answers any
 *           reference. Layout and limits in store_redis.c.
 *
 * Both scope items by owner (item_owner in proxy/bridges.c): an id that another owner
 * holds is MISSING, exactly like an unknown one. A backend that cannot be
 * reached answers DOWN, never MISSING, so the client is told the store is
 * away (a 503) rather than that its item does not exist.
 *
 * Workers call with their own slot (0..workers-1): a backend may keep one
 * connection per slot and take no lock (hiredis contexts are not
 * thread-safe). No call waits longer than the backend's timeouts.
 */
#ifndef TG_STORE_H
#define TG_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "conf/conf.h"

typedef enum { TG_STORE_FOUND, TG_STORE_MISSING, TG_STORE_DOWN } tg_store_status;

typedef struct tg_store tg_store;

typedef struct tg_store_ops {
    /* 0 kept (or deliberately not kept: larger than the owner may hold),
     * -1 the backend could not be reached. */
    int (*put)(tg_store *s, int slot, uint64_t owner, const char *id, const char *text);
    /* FOUND with *text malloc'd, or MISSING / DOWN with *text NULL. */
    tg_store_status (*get)(tg_store *s, int slot, uint64_t owner, const char *id, char **text);
    /* Bytes held in this process (memory), or 0 when the backend cannot tell cheaply. */
    size_t (*bytes)(tg_store *s);
    void (*free)(tg_store *s);
} tg_store_ops;

struct tg_store {
    const tg_store_ops *ops;
    char name[128];  /* "memory", "redis 127.0.0.1:6379/0": for logs and errors */
};

/* The backend the conf names, with one slot per worker; NULL with err
 * filled when it cannot be made (never because Redis is down: that is
 * retried per request). */
tg_store *tg_store_open(const tg_conf *conf, int workers, char *err, size_t n);
tg_store *tg_store_memory(size_t max_bytes);
tg_store *tg_store_redis(const tg_redis_url *u, int workers, size_t per_owner, long ttl_ms,
                         long timeout_ms);

static inline int tg_store_put(tg_store *s, int slot, uint64_t owner, const char *id,
                               const char *text)
{
    return s->ops->put(s, slot, owner, id, text);
}
static inline tg_store_status tg_store_get(tg_store *s, int slot, uint64_t owner,
                                           const char *id, char **text)
{
    return s->ops->get(s, slot, owner, id, text);
}
static inline size_t tg_store_bytes(tg_store *s) { return s->ops->bytes(s); }
static inline void tg_store_free(tg_store *s)
{
    if (s)
        s->ops->free(s);
}

/* A stable owner from what identifies the client (kind "key", "credential"
 * or "route", and its value): the first 8 bytes of SHA-256, the same in
 * every process and replica, which a shared store needs. */
uint64_t tg_store_owner(const char *kind, const char *value);

#endif
