/* store_redis.c -- the Redis (or Valkey) backend of store.h.
 *
 * Layout, per owner O (16 hex digits; the braces make one cluster hash slot
 * of an owner's keys):
 *   tg:{O}:i:ID   the item's JSON text, expiring after responses_ttl
 *   tg:{O}:o      a list of the owner's ids, oldest first
 *   tg:{O}:s      a hash: ID -> bytes, and "#" -> the owner's total
 * A put is one Lua script, so replicas writing for one owner at once never
 * leave the list, the sizes and the items out of step: it stores the item,
 * appends its id, and while the owner's total passes responses_per_owner
 * drops the owner's oldest items. Each owner has its own budget, so one
 * owner can never evict another's items (Redis's maxmemory bounds the
 * whole; set maxmemory-policy volatile-ttl or noeviction there). The
 * list and hash get the item's TTL again at each put: an owner idle for
 * responses_ttl leaves nothing behind. Items expire oldest first, so an
 * expired item still counted in "#" is the next one trimmed.
 *
 * A get is a GET of the owner's key for the id: another owner's id is a
 * different key, so it is MISSING exactly like an unknown id.
 *
 * Each worker has its own connection (hiredis contexts are not
 * thread-safe), with connect and command timeouts so a worker never waits
 * on Redis longer than timeout_ms. A connection that fails is dropped and
 * not tried again before a backoff (100 ms doubling to 1 s), or before
 * another worker has connected again; meanwhile it answers DOWN at once.
 */
#include "proxy/store.h"

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "proxy/log.h"

#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 1000
#define MAX_ID 200  /* toolgate's ids are ~40 bytes; longer ones are not asked for */

typedef struct conn {
    redisContext *c;
    uint64_t failed_us;    /* when it last failed */
    uint64_t retry_at_us;  /* after a failure, no attempt before this */
    long backoff_ms;       /* 0 while up */
} conn;

typedef struct redis_store {
    tg_store base;
    tg_redis_url url;
    size_t per_owner;
    long ttl_ms, timeout_ms;
    int n;
    conn *conns;
    atomic_ullong up_us;   /* when a worker last connected: another worker
                              in backoff since before then tries at once */
} redis_store;

static const char put_script[] =
    "local item, list, sizes = KEYS[1], KEYS[2], KEYS[3]\n"
    "local id, ttl, budget, prefix = ARGV[1], ARGV[3], tonumber(ARGV[4]), ARGV[5]\n"
    "local size = #id + #ARGV[2]\n"
    "local old = redis.call('HGET', sizes, id)\n"
    "if old then\n"
    "  redis.call('LREM', list, 0, id)\n"
    "  redis.call('HINCRBY', sizes, '#', -tonumber(old))\n"
    "end\n"
    "redis.call('SET', item, ARGV[2], 'PX', ttl)\n"
    "redis.call('RPUSH', list, id)\n"
    "redis.call('HSET', sizes, id, size)\n"
    "local total = redis.call('HINCRBY', sizes, '#', size)\n"
    "while total > budget do\n"
    "  local gone = redis.call('LPOP', list)\n"
    "  if not gone then break end\n"
    "  local s = tonumber(redis.call('HGET', sizes, gone) or 0)\n"
    "  redis.call('HDEL', sizes, gone)\n"
    "  redis.call('DEL', prefix .. gone)\n"
    "  total = redis.call('HINCRBY', sizes, '#', -s)\n"
    "end\n"
    "redis.call('PEXPIRE', list, ttl)\n"
    "redis.call('PEXPIRE', sizes, ttl)\n"
    "return total\n";

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static struct timeval ms_tv(long ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    return tv;
}

/* Drops a failed connection and sets when the next attempt may be made. */
static void conn_fail(redis_store *rs, conn *k, const char *why)
{
    if (!k->backoff_ms)
        tg_log(TG_LOG_WARN, "responses_store %s: %s; answering without it until it is back",
               rs->base.name, why);
    if (k->c)
        redisFree(k->c);
    k->c = NULL;
    k->backoff_ms = k->backoff_ms ? k->backoff_ms * 2 : BACKOFF_FIRST_MS;
    if (k->backoff_ms > BACKOFF_MAX_MS)
        k->backoff_ms = BACKOFF_MAX_MS;
    k->failed_us = now_us();
    k->retry_at_us = k->failed_us + (uint64_t)k->backoff_ms * 1000u;
}

/* A command that must answer OK (AUTH, SELECT); 0 or -1. */
static int setup_command(redisContext *c, const char *cmd, const char *arg)
{
    redisReply *rep = redisCommand(c, "%s %s", cmd, arg);
    int ok = rep && rep->type == REDIS_REPLY_STATUS;
    if (rep)
        freeReplyObject(rep);
    return ok ? 0 : -1;
}

/* The slot's connection, made when there is none and the backoff allows;
 * NULL when Redis cannot be used now. */
static redisContext *conn_get(redis_store *rs, int slot)
{
    conn *k = &rs->conns[slot];
    if (k->c)
        return k->c;
    if (k->backoff_ms && now_us() < k->retry_at_us &&
        atomic_load_explicit(&rs->up_us, memory_order_relaxed) <= k->failed_us)
        return NULL;
    k->c = redisConnectWithTimeout(rs->url.host, rs->url.port, ms_tv(rs->timeout_ms));
    if (!k->c || k->c->err) {
        conn_fail(rs, k, k->c ? k->c->errstr : "cannot connect");
        return NULL;
    }
    char db[16];
    snprintf(db, sizeof db, "%d", rs->url.db);
    if (redisSetTimeout(k->c, ms_tv(rs->timeout_ms)) != REDIS_OK ||
        (rs->url.password[0] && setup_command(k->c, "AUTH", rs->url.password)) ||
        (rs->url.db && setup_command(k->c, "SELECT", db))) {
        conn_fail(rs, k, k->c->err ? k->c->errstr : "AUTH or SELECT refused");
        return NULL;
    }
    if (k->backoff_ms)
        tg_log(TG_LOG_INFO, "responses_store %s: connected again", rs->base.name);
    k->backoff_ms = 0;
    atomic_store_explicit(&rs->up_us, now_us(), memory_order_relaxed);
    return k->c;
}

/* The reply to a command, or NULL when Redis cannot be used (the
 * connection is then dropped: what it would read next is not the answer to
 * the next command). A connection that worked before and fails now may
 * only be stale (Redis restarted), so it gets one new connection at once.
 * An error reply (LOADING, OOM...) is returned for the caller to treat as
 * down. */
static redisReply *command(redis_store *rs, int slot, const char *fmt, ...)
{
    conn *k = &rs->conns[slot];
    for (int attempt = 0; attempt < 2; attempt++) {
        bool reused = k->c != NULL;
        redisContext *c = conn_get(rs, slot);
        if (!c)
            return NULL;
        va_list ap;
        va_start(ap, fmt);
        redisReply *rep = redisvCommand(c, fmt, ap);
        va_end(ap);
        if (rep) {
            if (rep->type == REDIS_REPLY_ERROR)
                tg_log(TG_LOG_WARN, "responses_store %s: %.200s", rs->base.name, rep->str);
            return rep;
        }
        conn_fail(rs, k, c->errstr[0] ? c->errstr : "no answer");
        if (!reused)
            return NULL;
        k->retry_at_us = 0;
    }
    return NULL;
}

static void owner_prefix(char *buf, size_t n, uint64_t owner)
{
    snprintf(buf, n, "tg:{%016llx}:", (unsigned long long)owner);
}

static int redis_put(tg_store *s, int slot, uint64_t owner, const char *id, const char *text)
{
    redis_store *rs = (redis_store *)s;
    size_t nid = strlen(id), ntext = strlen(text);
    if (nid > MAX_ID || nid + ntext > rs->per_owner)
        return 0;  /* never found: refused like an evicted item */
    char pre[40], item[40 + MAX_ID], list[48], sizes[48], ttl[24], budget[24];
    owner_prefix(pre, sizeof pre, owner);
    snprintf(item, sizeof item, "%si:%s", pre, id);
    snprintf(list, sizeof list, "%so", pre);
    snprintf(sizes, sizeof sizes, "%ss", pre);
    snprintf(ttl, sizeof ttl, "%ld", rs->ttl_ms);
    snprintf(budget, sizeof budget, "%zu", rs->per_owner);
    char ipre[48];
    snprintf(ipre, sizeof ipre, "%si:", pre);
    redisReply *rep = command(rs, slot, "EVAL %s 3 %s %s %s %b %b %s %s %s", put_script, item,
                              list, sizes, id, nid, text, ntext, ttl, budget, ipre);
    int rc = rep && rep->type != REDIS_REPLY_ERROR ? 0 : -1;
    if (rep)
        freeReplyObject(rep);
    return rc;
}

static tg_store_status redis_get(tg_store *s, int slot, uint64_t owner, const char *id,
                                 char **text)
{
    redis_store *rs = (redis_store *)s;
    *text = NULL;
    size_t nid = strlen(id);
    if (nid > MAX_ID)
        return TG_STORE_MISSING;
    char pre[40];
    owner_prefix(pre, sizeof pre, owner);
    redisReply *rep = command(rs, slot, "GET %si:%b", pre, id, nid);
    if (!rep)
        return TG_STORE_DOWN;
    tg_store_status st = TG_STORE_DOWN;
    if (rep->type == REDIS_REPLY_NIL) {
        st = TG_STORE_MISSING;
    } else if (rep->type == REDIS_REPLY_STRING) {
        *text = tg_malloc(rep->len + 1);
        memcpy(*text, rep->str, rep->len);
        (*text)[rep->len] = '\0';
        st = TG_STORE_FOUND;
    }
    freeReplyObject(rep);
    return st;
}

static size_t redis_bytes(tg_store *s) { return 0; }

static void redis_free(tg_store *s)
{
    redis_store *rs = (redis_store *)s;
    for (int i = 0; i < rs->n; i++)
        if (rs->conns[i].c)
            redisFree(rs->conns[i].c);
    free(rs->conns);
    free(rs);
}

static const tg_store_ops redis_ops = {redis_put, redis_get, redis_bytes, redis_free};

tg_store *tg_store_redis(const tg_redis_url *u, int workers, size_t per_owner, long ttl_ms,
                         long timeout_ms)
{
    redis_store *rs = tg_calloc(1, sizeof *rs);
    rs->conns = tg_calloc((size_t)workers, sizeof *rs->conns);
    rs->base.ops = &redis_ops;
    rs->url = *u;
    rs->per_owner = per_owner;
    rs->ttl_ms = ttl_ms;
    rs->timeout_ms = timeout_ms;
    rs->n = workers;
    snprintf(rs->base.name, sizeof rs->base.name, "redis %.100s:%d/%d", u->host, u->port, u->db);
    return &rs->base;
}
