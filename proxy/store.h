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
 * thread-safe).
 *
 * A backend over the network (Redis) never makes a worker wait: its
 * sockets join the worker's epoll set (attach, event, tick), a put is sent
 * and not waited for (a failure seen later is told to the loop's
 * put_failed), and reads are asynchronous (fetch: its callback comes on
 * the worker's thread). The memory backend has no fetch: its get is a
 * lookup.
 */
#ifndef TG_STORE_H
#define TG_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "conf/conf.h"

typedef enum { TG_STORE_FOUND, TG_STORE_MISSING, TG_STORE_DOWN } tg_store_status;

typedef struct tg_store tg_store;

/* What a worker's loop gives a backend with sockets: its epoll set, the
 * tag their events carry (they come back through ops->event), and whom
 * to tell of a put that failed after it was sent. */
typedef struct tg_store_loop {
    int epfd;
    uint64_t tag;
    void (*put_failed)(void *ud);
    void *ud;
} tg_store_loop;

/* What a fetch read: texts[i] for ids[i] (NULL: not held), then the
 * records of a previous_response_id chain, chain_ids[k] and chain_texts[k]
 * oldest last (the first is the id asked for). status is DOWN when the
 * store failed, or the fetch ran past its deadline, before all was read;
 * FOUND otherwise. Borrowed for the callback's duration. */
typedef struct tg_store_got {
    tg_store_status status;
    size_t n;
    char **texts;
    size_t n_chain;
    char **chain_ids, **chain_texts;
    size_t bytes;
} tg_store_got;

typedef void (*tg_store_fetched)(void *ud, const tg_store_got *got);

typedef struct tg_store_ops {
    /* 0 kept (or deliberately not kept: larger than the owner may hold),
     * -1 the backend could not be reached. */
    int (*put)(tg_store *s, int slot, uint64_t owner, const char *id, const char *text);
    /* FOUND with *text malloc'd, or MISSING / DOWN with *text NULL. */
    tg_store_status (*get)(tg_store *s, int slot, uint64_t owner, const char *id, char **text);
    /* Bytes held in this process (memory), or 0 when the backend cannot tell cheaply. */
    size_t (*bytes)(tg_store *s);
    void (*free)(tg_store *s);
    /* The rest only for a backend on the worker's loop (NULL otherwise).
     * attach: the slot's loop, before its first call; detach: its
     * connection closed (pending fetches are done with DOWN) before the
     * loop ends; event: its socket is ready; tick: its timeouts, a few
     * times a second. */
    void (*attach)(tg_store *s, int slot, const tg_store_loop *loop);
    void (*detach)(tg_store *s, int slot);
    void (*event)(tg_store *s, int slot, uint32_t events);
    void (*tick)(tg_store *s, int slot, uint64_t now_us);
    /* The n items ids (owner's), and the chain of records from chain
     * (NULL: none) following each one's previous_response_id, at most
     * chain_max records: done(ud, got) once, on the worker's thread: from
     * inside fetch when the store cannot be used now (DOWN), else later,
     * at the latest soon after deadline_us (now_us clock). */
    void (*fetch)(tg_store *s, int slot, uint64_t owner, const char *const *ids, size_t n,
                  const char *chain, unsigned chain_max, uint64_t deadline_us,
                  tg_store_fetched done, void *ud);
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

/* A fetch's whole wait and its chain, at most (the request's store budget:
 * past it the request is answered without the store, the API's 503). */
#define TG_STORE_BUDGET_MS 5000
#define TG_STORE_CHAIN_MAX 4096

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
