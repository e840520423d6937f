/* store_redis.c -- the Redis (or Valkey) backend of store.h, on the
 * worker's own event loop.
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
 * Reads are one round trip a batch, never one a hop: the items a request
 * names go in one MGET (512 ids a command), and a previous_response_id
 * chain is walked by a Lua script inside Redis, up to 256 records or 4 MB
 * a batch, which returns the records and the id the walk stopped at (the
 * next batch starts there). Another owner's id is a different key, so it
 * is missing exactly like an unknown id.
 *
 * No worker ever waits on Redis. Each worker has its own connection
 * (hiredis contexts are not thread-safe), asynchronous (hiredis' async API
 * on an adapter over the worker's epoll set): a put is sent and not waited
 * for, a fetch ends in a callback. A connection not made within
 * timeout_ms, or that sends nothing for timeout_ms while a command waits
 * on it, is dropped: what waited on it is answered DOWN. A fetch also has
 * a deadline of its own (the request's store budget). A connection that
 * fails is not tried again before a backoff (100 ms doubling to 1 s), or
 * before another worker has connected again; meanwhile calls answer DOWN
 * at once. One that breaks after working (Redis restarted) is made again
 * at the next call.
 *
 * A host name is resolved by a thread of the store's own, never on a
 * worker: hiredis' connect calls getaddrinfo, which waits on DNS as long
 * as DNS takes (issue 28). The thread resolves at start (the server waits
 * for it up to RESOLVE_FIRST_MS), again every RESOLVE_EVERY_MS, and at
 * once when a worker's connection failed; a worker connects to the last
 * address it found (an IP literal, which getaddrinfo reads without a
 * lookup) and, while there is none yet, answers DOWN at once. A lookup
 * that hangs holds that thread alone; stopping the server waits for it.
 *
 * What a reply may allocate is bounded: hiredis 0.14 allocates an array
 * of the count a multi-bulk header announces, so "*999999999" would be
 * 8 GB; the reader's functions here refuse an array longer than toolgate
 * ever asks for and a string longer than an owner may hold, and a reply
 * still being read past that size drops the connection.
 */
#include "proxy/store.h"

#include <arpa/inet.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#include "core/alloc.h"
#include "core/list.h"
#include "proxy/log.h"

#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 1000
#define MAX_ID 200          /* toolgate's ids are ~40 bytes; longer ones are not asked for */
#define MGET_IDS 512        /* ids per MGET */
#define BATCH_RECORDS 256   /* records per chain batch */
#define BATCH_BYTES (4u << 20)
#define MAX_ELEMENTS 1024   /* the longest array toolgate asks for: MGET_IDS, 1 + 2 x BATCH_RECORDS */
#define MAX_PENDING 4096    /* commands waiting on one connection; past it a call is DOWN */
#define RESOLVE_FIRST_MS 2000   /* the server's start waits this long for a host's address */
#define RESOLVE_EVERY_MS 30000  /* a host name is looked up again this often */

typedef struct fetch fetch;

typedef struct conn {
    struct redis_store *rs;
    redisAsyncContext *ac;
    tg_store_loop loop;
    bool attached;
    bool connected;
    bool was_up;            /* this connection worked: its break is retried at once */
    uint64_t started_us;    /* the connection began */
    uint64_t quiet_since;   /* last byte read, or the first command since */
    int pending;            /* commands without their reply */
    uint64_t failed_us;     /* when it last failed */
    uint64_t retry_at_us;   /* after a failure, no attempt before this */
    long backoff_ms;        /* 0 while up */
    tg_list fetches;        /* fetches of this slot not done yet (their deadlines) */
} conn;

/* The host's address, found off the workers (one thread a store, for a
 * host name only): `addr` under `lock`, which is never held across a
 * lookup. */
typedef struct resolver {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bool named;                   /* a host name: addresses come from the thread */
    bool threaded;                /* the thread runs */
    bool stop, again;
    char addr[INET6_ADDRSTRLEN];  /* "" until the first lookup succeeds */
    char why[160];                /* the last lookup's failure */
} resolver;

typedef struct redis_store {
    tg_store base;
    tg_redis_url url;
    resolver res;
    size_t per_owner;
    long ttl_ms, timeout_ms;
    size_t reply_max;       /* a string, and a reply being read, at most */
    const redisReplyObjectFunctions *orig;
    redisReplyObjectFunctions capped;
    int n;
    conn *conns;
    atomic_ullong up_us;    /* when a worker last connected: another worker
                               in backoff since before then tries at once */
} redis_store;

struct fetch {
    conn *k;
    tg_store_fetched done;
    void *ud;
    uint64_t deadline;
    int waiting;            /* replies outstanding */
    bool reported;
    size_t mget_at;         /* where the next MGET reply's texts go */
    unsigned chain_left;
    char pre[48];           /* "tg:{O}:i:" */
    tg_store_got got;
    size_t cap_chain;
    tg_list_node node;      /* on its conn's fetches */
};

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

/* A batch of a previous_response_id chain: from ARGV[2], each record's
 * previous_response_id (bridge/responses_answer.c's record) names the next,
 * for at most ARGV[3] records or past ARGV[4] bytes. Returns {next or
 * nil, id1, record1, id2, record2...}: next is where the walk stopped
 * with more to read; nil when the chain ended (or an id is not held, which
 * the caller sees as that id missing). */
static const char chain_script[] =
    "local pre, id, max, maxbytes = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])\n"
    "local out, bytes = {false}, 0\n"
    "for i = 1, max do\n"
    "  local v = redis.call('GET', pre .. id)\n"
    "  if not v then return out end\n"
    "  out[#out + 1] = id\n"
    "  out[#out + 1] = v\n"
    "  bytes = bytes + #v\n"
    "  local ok, rec = pcall(cjson.decode, v)\n"
    "  local prev = ok and type(rec) == 'table' and rec['previous_response_id']\n"
    "  if type(prev) ~= 'string' then return out end\n"
    "  id = prev\n"
    "  if bytes >= maxbytes then break end\n"
    "end\n"
    "out[1] = id\n"
    "return out\n";

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- what a reply may allocate ----------------------------------------------- */

static void *capped_array(const redisReadTask *t, int elements)
{
    const redis_store *rs = t->privdata;
    if (elements < 0 || elements > MAX_ELEMENTS)
        return NULL;  /* the reader's error: the connection is dropped */
    return rs->orig->createArray(t, elements);
}

static void *capped_string(const redisReadTask *t, char *str, size_t len)
{
    const redis_store *rs = t->privdata;
    if (len > rs->reply_max)
        return NULL;
    return rs->orig->createString(t, str, len);
}

/* ---- the adapter: hiredis' socket in the worker's epoll set ----------------- */

/* One per context (not per slot): a context being freed cleans up its own
 * socket, never the one that replaced it. */
typedef struct evh {
    int epfd, fd;
    uint64_t tag;
    uint32_t ev;  /* epoll interest now */
    bool in_epoll;
} evh;

static void ev_update(evh *h)
{
    struct epoll_event e = {.events = h->ev, .data.u64 = h->tag};
    if (!h->ev) {
        if (h->in_epoll)
            epoll_ctl(h->epfd, EPOLL_CTL_DEL, h->fd, &e);
        h->in_epoll = false;
        return;
    }
    if (epoll_ctl(h->epfd, h->in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, h->fd, &e) == 0)
        h->in_epoll = true;
}

static void ev_add_read(void *p)
{
    evh *h = p;
    h->ev |= EPOLLIN;
    ev_update(h);
}

static void ev_del_read(void *p)
{
    evh *h = p;
    h->ev &= ~(uint32_t)EPOLLIN;
    ev_update(h);
}

static void ev_add_write(void *p)
{
    evh *h = p;
    h->ev |= EPOLLOUT;
    ev_update(h);
}

static void ev_del_write(void *p)
{
    evh *h = p;
    h->ev &= ~(uint32_t)EPOLLOUT;
    ev_update(h);
}

static void ev_cleanup(void *p)
{
    evh *h = p;
    h->ev = 0;
    ev_update(h);
    free(h);
}

/* ---- the host's address, off the workers --------------------------------------- */

static bool is_ip_literal(const char *host)
{
    unsigned char b[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, b) == 1 || inet_pton(AF_INET6, host, b) == 1;
}

/* One lookup of the host: its first address into rs->res.addr. */
static void resolve_once(redis_store *rs)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int rc = getaddrinfo(rs->url.host, NULL, &hints, &ai);
    char addr[INET6_ADDRSTRLEN] = "";
    if (!rc && ai) {
        const void *a = ai->ai_family == AF_INET6
                            ? (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr
                            : (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr;
        inet_ntop(ai->ai_family, a, addr, sizeof addr);
    }
    if (ai)
        freeaddrinfo(ai);
    resolver *r = &rs->res;
    const char *why = rc ? gai_strerror(rc) : "no address";
    pthread_mutex_lock(&r->lock);
    bool changed = *addr && strcmp(addr, r->addr);
    bool news = !*addr && strcmp(r->why, why);  /* logged once a cause, not each retry */
    if (*addr) {
        snprintf(r->addr, sizeof r->addr, "%s", addr);
        r->why[0] = 0;
    } else {  /* the last address found is kept: DNS down is not Redis down */
        snprintf(r->why, sizeof r->why, "%s", why);
    }
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->lock);
    if (changed)  /* workers in backoff try the new address at once */
        atomic_store_explicit(&rs->up_us, now_us(), memory_order_relaxed);
    if (news)
        tg_log(TG_LOG_WARN, "responses_store %s: cannot look up %.100s: %s", rs->base.name,
               rs->url.host, why);
}

static void *resolver_main(void *p)
{
    redis_store *rs = p;
    resolver *r = &rs->res;
    pthread_mutex_lock(&r->lock);
    while (!r->stop) {
        r->again = false;
        pthread_mutex_unlock(&r->lock);
        resolve_once(rs);
        pthread_mutex_lock(&r->lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += RESOLVE_EVERY_MS / 1000;
        while (!r->stop && !r->again)
            if (pthread_cond_timedwait(&r->wake, &r->lock, &until))
                break;  /* time for the next lookup */
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* The host's address into addr; false while none is known. A worker's
 * failed connection asks for a new lookup (poke). */
static bool resolved(redis_store *rs, char addr[INET6_ADDRSTRLEN])
{
    resolver *r = &rs->res;
    if (!r->named) {  /* an IP literal: no lookup */
        snprintf(addr, INET6_ADDRSTRLEN, "%.45s", rs->url.host);
        return true;
    }
    pthread_mutex_lock(&r->lock);
    snprintf(addr, INET6_ADDRSTRLEN, "%s", r->addr);
    pthread_mutex_unlock(&r->lock);
    return *addr != 0;
}

static void resolver_poke(redis_store *rs)
{
    resolver *r = &rs->res;
    if (!r->threaded)
        return;
    pthread_mutex_lock(&r->lock);
    r->again = true;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
}

/* A host name: its thread started, and its first lookup waited for up to
 * RESOLVE_FIRST_MS (the server's start, no worker yet). */
static void resolver_start(redis_store *rs)
{
    resolver *r = &rs->res;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    if (is_ip_literal(rs->url.host))
        return;
    r->named = true;
    if (pthread_create(&r->thread, NULL, resolver_main, rs)) {
        tg_log(TG_LOG_WARN, "responses_store %s: no thread to look up %.100s: Redis not used",
               rs->base.name, rs->url.host);
        snprintf(r->why, sizeof r->why, "no resolver thread");  /* no address ever: DOWN */
        return;
    }
    r->threaded = true;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += RESOLVE_FIRST_MS / 1000;
    pthread_mutex_lock(&r->lock);
    while (!r->addr[0] && !r->why[0])
        if (pthread_cond_timedwait(&r->wake, &r->lock, &until))
            break;
    pthread_mutex_unlock(&r->lock);
}

static void resolver_stop(redis_store *rs)
{
    resolver *r = &rs->res;
    if (r->threaded) {
        pthread_mutex_lock(&r->lock);
        r->stop = true;
        pthread_cond_signal(&r->wake);
        pthread_mutex_unlock(&r->lock);
        pthread_join(r->thread, NULL);
    }
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
}

/* ---- the connection -------------------------------------------------------- */

/* Sets when the next attempt may be made after a failure. */
static void conn_fail(conn *k, const char *why)
{
    resolver_poke(k->rs);  /* the address may have moved */
    if (!k->backoff_ms)
        tg_log(TG_LOG_WARN, "responses_store %s: %s; answering without it until it is back",
               k->rs->base.name, why);
    k->backoff_ms = k->backoff_ms ? k->backoff_ms * 2 : BACKOFF_FIRST_MS;
    if (k->backoff_ms > BACKOFF_MAX_MS)
        k->backoff_ms = BACKOFF_MAX_MS;
    k->failed_us = now_us();
    /* a connection that worked and broke (Redis restarted) is made again
     * at the next call, once */
    k->retry_at_us = k->was_up ? 0 : k->failed_us + (uint64_t)k->backoff_ms * 1000u;
    k->was_up = false;
}

/* Drops the connection: what waited on it is answered DOWN (hiredis calls
 * every pending callback with no reply). */
static void conn_drop(conn *k, const char *why)
{
    redisAsyncContext *ac = k->ac;
    if (!ac)
        return;
    k->ac = NULL;
    k->connected = false;
    conn_fail(k, why);
    redisAsyncFree(ac);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    conn *k = ac->data;
    if (k->ac != ac)
        return;
    if (status != REDIS_OK) {  /* hiredis frees the context after this call */
        k->ac = NULL;
        conn_fail(k, ac->errstr[0] ? ac->errstr : "cannot connect");
        return;
    }
    k->connected = true;
    k->was_up = true;
    if (k->backoff_ms)
        tg_log(TG_LOG_INFO, "responses_store %s: connected again", k->rs->base.name);
    k->backoff_ms = 0;
    atomic_store_explicit(&k->rs->up_us, now_us(), memory_order_relaxed);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    conn *k = ac->data;
    if (k->ac != ac)  /* dropped by us: already counted */
        return;
    k->ac = NULL;
    k->connected = false;
    conn_fail(k, ac->errstr[0] ? ac->errstr : "the connection closed");
}

static void pending_add(conn *k)
{
    if (k->pending++ == 0)
        k->quiet_since = now_us();
}

static void pending_done(conn *k)
{
    k->pending--;
    k->quiet_since = now_us();
}

/* AUTH and SELECT, sent before anything else: one refused drops it. */
static void on_setup(redisAsyncContext *ac, void *reply, void *priv)
{
    conn *k = priv;
    redisReply *rep = reply;
    pending_done(k);
    if (rep && rep->type != REDIS_REPLY_STATUS && k->ac == ac)
        conn_drop(k, "AUTH or SELECT refused");
}

/* The slot's connection, begun when there is none and the backoff allows;
 * NULL when Redis cannot be used now. Commands may be sent before it is
 * made: hiredis writes them once it is. */
static redisAsyncContext *conn_open(conn *k)
{
    redis_store *rs = k->rs;
    if (k->ac)
        return k->ac;
    if (!k->attached)
        return NULL;
    if (k->backoff_ms && now_us() < k->retry_at_us &&
        atomic_load_explicit(&rs->up_us, memory_order_relaxed) <= k->failed_us)
        return NULL;
    char addr[INET6_ADDRSTRLEN];
    if (!resolved(rs, addr)) {
        char why[200];
        snprintf(why, sizeof why, "no address for %.100s yet (looked up off the workers)",
                 rs->url.host);
        conn_fail(k, why);
        return NULL;
    }
    redisAsyncContext *ac = redisAsyncConnect(addr, rs->url.port);
    if (!ac || ac->err) {
        conn_fail(k, ac ? ac->errstr : "cannot connect");
        if (ac)
            redisAsyncFree(ac);
        return NULL;
    }
    ac->c.reader->fn = &rs->capped;
    ac->c.reader->privdata = rs;
    ac->data = k;
    evh *h = tg_calloc(1, sizeof *h);
    h->epfd = k->loop.epfd;
    h->fd = ac->c.fd;
    h->tag = k->loop.tag;
    ac->ev.data = h;
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    k->ac = ac;
    k->connected = false;
    k->started_us = now_us();
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    char db[16];
    snprintf(db, sizeof db, "%d", rs->url.db);
    if (rs->url.password[0] &&
        redisAsyncCommand(ac, on_setup, k, "AUTH %s", rs->url.password) == REDIS_OK)
        pending_add(k);
    if (rs->url.db && redisAsyncCommand(ac, on_setup, k, "SELECT %s", db) == REDIS_OK)
        pending_add(k);
    ev_add_write(h);  /* the connect's end is a write event */
    return k->ac;
}

/* ---- puts: sent, not waited for -------------------------------------------- */

static void on_put(redisAsyncContext *ac, void *reply, void *priv)
{
    conn *k = priv;
    redisReply *rep = reply;
    pending_done(k);
    if (rep && rep->type == REDIS_REPLY_ERROR)
        tg_log(TG_LOG_WARN, "responses_store %s: %.200s", k->rs->base.name, rep->str);
    if ((!rep || rep->type == REDIS_REPLY_ERROR) && k->loop.put_failed)
        k->loop.put_failed(k->loop.ud);
}

static void owner_prefix(char *buf, size_t n, uint64_t owner)
{
    snprintf(buf, n, "tg:{%016llx}:", (unsigned long long)owner);
}

static int redis_put(tg_store *s, int slot, uint64_t owner, const char *id, const char *text)
{
    redis_store *rs = (redis_store *)s;
    conn *k = &rs->conns[slot];
    size_t nid = strlen(id), ntext = strlen(text);
    if (nid > MAX_ID || nid + ntext > rs->per_owner)
        return 0;  /* never found: refused like an evicted item */
    redisAsyncContext *ac = conn_open(k);
    if (!ac || k->pending >= MAX_PENDING)
        return -1;
    char pre[40], item[40 + MAX_ID], list[48], sizes[48], ttl[24], budget[24], ipre[48];
    owner_prefix(pre, sizeof pre, owner);
    snprintf(item, sizeof item, "%si:%s", pre, id);
    snprintf(list, sizeof list, "%so", pre);
    snprintf(sizes, sizeof sizes, "%ss", pre);
    snprintf(ttl, sizeof ttl, "%ld", rs->ttl_ms);
    snprintf(budget, sizeof budget, "%zu", rs->per_owner);
    snprintf(ipre, sizeof ipre, "%si:", pre);
    if (redisAsyncCommand(ac, on_put, k, "EVAL %s 3 %s %s %s %b %b %s %s %s", put_script, item,
                          list, sizes, id, nid, text, ntext, ttl, budget, ipre) != REDIS_OK)
        return -1;
    pending_add(k);
    return 0;
}

/* ---- fetches: the ids in MGETs, the chain in batches ----------------------- */

static fetch *fetch_of(tg_list_node *n)
{
    return TG_LIST_ITEM(n, fetch, node);
}

static void fetch_unlink(fetch *f)
{
    tg_list_remove(&f->k->fetches, &f->node);
}

static void fetch_free(fetch *f)
{
    for (size_t i = 0; i < f->got.n; i++)
        free(f->got.texts[i]);
    for (size_t i = 0; i < f->got.n_chain; i++) {
        free(f->got.chain_ids[i]);
        free(f->got.chain_texts[i]);
    }
    free(f->got.texts);
    free(f->got.chain_ids);
    free(f->got.chain_texts);
    free(f);
}

/* Its caller is told (once); it goes when no reply is outstanding. */
static void fetch_settle(fetch *f)
{
    if (!f->reported && (f->waiting == 0 || f->got.status == TG_STORE_DOWN)) {
        f->reported = true;
        fetch_unlink(f);
        f->done(f->ud, &f->got);
    }
    if (f->reported && f->waiting == 0)
        fetch_free(f);
}

static char *dup_str(const redisReply *e)
{
    char *t = tg_malloc(e->len + 1);
    memcpy(t, e->str, e->len);
    t[e->len] = '\0';
    return t;
}

static void fetch_down(fetch *f, const redisReply *rep)
{
    if (rep && rep->type == REDIS_REPLY_ERROR)
        tg_log(TG_LOG_WARN, "responses_store %s: %.200s", f->k->rs->base.name, rep->str);
    f->got.status = TG_STORE_DOWN;
}

static void on_mget(redisAsyncContext *ac, void *reply, void *priv)
{
    fetch *f = priv;
    redisReply *rep = reply;
    pending_done(f->k);
    f->waiting--;
    if (!rep || rep->type != REDIS_REPLY_ARRAY || f->mget_at + rep->elements > f->got.n) {
        fetch_down(f, rep);
    } else if (!f->reported) {
        for (size_t i = 0; i < rep->elements; i++, f->mget_at++) {
            const redisReply *e = rep->element[i];
            if (e->type == REDIS_REPLY_STRING) {
                f->got.texts[f->mget_at] = dup_str(e);
                f->got.bytes += e->len;
            }
        }
    }
    fetch_settle(f);
}

static int send_chain(fetch *f, const char *from);

static void on_chain(redisAsyncContext *ac, void *reply, void *priv)
{
    fetch *f = priv;
    redisReply *rep = reply;
    pending_done(f->k);
    f->waiting--;
    if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 || rep->elements % 2 == 0) {
        fetch_down(f, rep);
        fetch_settle(f);
        return;
    }
    if (!f->reported) {
        for (size_t i = 1; i + 1 < rep->elements; i += 2) {
            const redisReply *id = rep->element[i], *rec = rep->element[i + 1];
            if (id->type != REDIS_REPLY_STRING || rec->type != REDIS_REPLY_STRING ||
                !f->chain_left) {
                fetch_down(f, NULL);
                break;
            }
            if (f->got.n_chain == f->cap_chain) {
                f->cap_chain = f->cap_chain ? f->cap_chain * 2 : 16;
                f->got.chain_ids = tg_realloc(f->got.chain_ids, f->cap_chain * sizeof(char *));
                f->got.chain_texts =
                    tg_realloc(f->got.chain_texts, f->cap_chain * sizeof(char *));
            }
            f->got.chain_ids[f->got.n_chain] = dup_str(id);
            f->got.chain_texts[f->got.n_chain++] = dup_str(rec);
            f->got.bytes += rec->len;
            f->chain_left--;
        }
        /* more than an owner may hold: not an honest store */
        if (f->got.bytes > 2 * f->k->rs->per_owner + (1u << 20))
            fetch_down(f, NULL);
        const redisReply *next = rep->element[0];
        if (f->got.status != TG_STORE_DOWN && next->type == REDIS_REPLY_STRING &&
            f->chain_left && now_us() < f->deadline) {
            char *from = dup_str(next);
            if (send_chain(f, from))
                fetch_down(f, NULL);
            free(from);
        }
    }
    fetch_settle(f);
}

static int send_chain(fetch *f, const char *from)
{
    conn *k = f->k;
    if (!k->ac || k->pending >= MAX_PENDING || strlen(from) > MAX_ID)
        return -1;
    char key[48 + MAX_ID], max[16], bytes[16];
    snprintf(key, sizeof key, "%s%s", f->pre, from);
    snprintf(max, sizeof max, "%u", f->chain_left < BATCH_RECORDS ? f->chain_left : BATCH_RECORDS);
    snprintf(bytes, sizeof bytes, "%u", BATCH_BYTES);
    if (redisAsyncCommand(k->ac, on_chain, f, "EVAL %s 1 %s %s %s %s %s", chain_script, key,
                          f->pre, from, max, bytes) != REDIS_OK)
        return -1;
    pending_add(k);
    f->waiting++;
    return 0;
}

static int send_mgets(fetch *f, const char *const *ids, size_t n)
{
    conn *k = f->k;
    const char *argv[1 + MGET_IDS];
    size_t lens[1 + MGET_IDS];
    char *keys[MGET_IDS];
    for (size_t at = 0; at < n; at += MGET_IDS) {
        size_t m = n - at < MGET_IDS ? n - at : MGET_IDS;
        argv[0] = "MGET";
        lens[0] = 4;
        for (size_t i = 0; i < m; i++) {
            size_t nid = strnlen(ids[at + i], MAX_ID + 1);
            keys[i] = tg_malloc(sizeof f->pre + nid + 1);
            /* an id too long to be toolgate's is asked for cut: not held */
            snprintf(keys[i], sizeof f->pre + nid + 1, "%s%.*s", f->pre, (int)nid, ids[at + i]);
            argv[1 + i] = keys[i];
            lens[1 + i] = strlen(keys[i]);
        }
        int rc = k->pending < MAX_PENDING
                     ? redisAsyncCommandArgv(k->ac, on_mget, f, (int)(m + 1), argv, lens)
                     : REDIS_ERR;
        for (size_t i = 0; i < m; i++)
            free(keys[i]);
        if (rc != REDIS_OK)
            return -1;
        pending_add(k);
        f->waiting++;
    }
    return 0;
}

static void redis_fetch(tg_store *s, int slot, uint64_t owner, const char *const *ids, size_t n,
                        const char *chain, unsigned chain_max, uint64_t deadline_us,
                        tg_store_fetched done, void *ud)
{
    redis_store *rs = (redis_store *)s;
    conn *k = &rs->conns[slot];
    fetch *f = tg_calloc(1, sizeof *f);
    f->k = k;
    f->done = done;
    f->ud = ud;
    f->deadline = deadline_us;
    f->chain_left = chain_max;
    f->got.status = TG_STORE_FOUND;
    f->got.n = n;
    f->got.texts = tg_calloc(n ? n : 1, sizeof(char *));
    char pre[40];
    owner_prefix(pre, sizeof pre, owner);
    snprintf(f->pre, sizeof f->pre, "%si:", pre);
    tg_list_push_front(&k->fetches, &f->node);
    if (!conn_open(k) || (n && send_mgets(f, ids, n)) || (chain && chain_max && send_chain(f, chain)))
        f->got.status = TG_STORE_DOWN;
    fetch_settle(f);
}

/* ---- the loop's calls ------------------------------------------------------ */

static void redis_attach(tg_store *s, int slot, const tg_store_loop *loop)
{
    conn *k = &((redis_store *)s)->conns[slot];
    k->loop = *loop;
    k->attached = true;
}

static void redis_detach(tg_store *s, int slot)
{
    conn *k = &((redis_store *)s)->conns[slot];
    if (k->ac) {
        redisAsyncContext *ac = k->ac;
        k->ac = NULL;
        redisAsyncFree(ac);  /* pending fetches are told DOWN */
    }
    while (!tg_list_empty(&k->fetches)) {
        fetch *f = fetch_of(k->fetches.head);
        f->got.status = TG_STORE_DOWN;
        fetch_settle(f);
    }
    k->attached = false;
}

static void redis_event(tg_store *s, int slot, uint32_t events)
{
    redis_store *rs = (redis_store *)s;
    conn *k = &rs->conns[slot];
    redisAsyncContext *ac = k->ac;
    if (!ac)
        return;
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        k->quiet_since = now_us();
        redisAsyncHandleRead(ac);
        /* a reply still being read past what any answer can be */
        if (k->ac == ac && ac->c.reader->len > 2 * rs->reply_max)
            conn_drop(k, "Redis sent a reply larger than toolgate reads");
    }
    if (k->ac == ac && (events & EPOLLOUT))
        redisAsyncHandleWrite(ac);
}

static void redis_tick(tg_store *s, int slot, uint64_t t)
{
    redis_store *rs = (redis_store *)s;
    conn *k = &rs->conns[slot];
    for (fetch *f = fetch_of(k->fetches.head), *next; f; f = next) {
        next = fetch_of(f->node.next);
        if (t >= f->deadline) {
            f->got.status = TG_STORE_DOWN;
            fetch_settle(f);
        }
    }
    uint64_t limit = (uint64_t)rs->timeout_ms * 1000u;
    if (k->ac && !k->connected && t - k->started_us > limit)
        conn_drop(k, "connect timed out");
    else if (k->ac && k->pending > 0 && t - k->quiet_since > limit)
        conn_drop(k, "no answer in time");
}

static tg_store_status redis_get(tg_store *s, int slot, uint64_t owner, const char *id,
                                 char **text)
{
    *text = NULL;  /* reads go through fetch: a worker never waits on Redis */
    return TG_STORE_DOWN;
}

static size_t redis_bytes(tg_store *s) { return 0; }

static void redis_free(tg_store *s)
{
    redis_store *rs = (redis_store *)s;
    for (int i = 0; i < rs->n; i++)
        if (rs->conns[i].ac || !tg_list_empty(&rs->conns[i].fetches))
            redis_detach(s, i);
    resolver_stop(rs);
    free(rs->conns);
    free(rs);
}

static const tg_store_ops redis_ops = {
    .put = redis_put,
    .get = redis_get,
    .bytes = redis_bytes,
    .free = redis_free,
    .attach = redis_attach,
    .detach = redis_detach,
    .event = redis_event,
    .tick = redis_tick,
    .fetch = redis_fetch,
};

tg_store *tg_store_redis(const tg_redis_url *u, int workers, size_t per_owner, long ttl_ms,
                         long timeout_ms)
{
    redis_store *rs = tg_calloc(1, sizeof *rs);
    rs->conns = tg_calloc((size_t)workers, sizeof *rs->conns);
    for (int i = 0; i < workers; i++)
        rs->conns[i].rs = rs;
    rs->base.ops = &redis_ops;
    rs->url = *u;
    rs->per_owner = per_owner;
    rs->ttl_ms = ttl_ms;
    rs->timeout_ms = timeout_ms;
    rs->reply_max = per_owner + BATCH_BYTES + (64u << 10);
    /* hiredis' own reply functions, behind the caps */
    redisReader *probe = redisReaderCreate();
    rs->orig = probe->fn;
    redisReaderFree(probe);
    rs->capped = *rs->orig;
    rs->capped.createArray = capped_array;
    rs->capped.createString = capped_string;
    rs->n = workers;
    snprintf(rs->base.name, sizeof rs->base.name, "redis %.100s:%d/%d", u->host, u->port, u->db);
    resolver_start(rs);
    return &rs->base;
}
