/* upconn.c -- toolgate's own HTTP/1.1 client for http and https
 * upstreams: a worker's connections, kept alive in a pool, served by the
 * worker's one epoll loop.
 *
 * Why: libcurl's multi interface costs about 100,000 instructions and two
 * poll calls per request (URL parsing, header formatting, its state
 * machine, a liveness check on every reused connection); on the bench's
 * tool-call stream that was 40% of toolgate's CPU. A round here is one
 * sendmsg of the head and body pieces and the reads of the answer. The
 * round's bytes are parsed by proxy/h1.c; what a round cannot take here
 * (a proxy, userinfo, a name libcurl has not resolved yet) stays with
 * libcurl (upconn_target says which); a name is never looked up here
 * (no call may block the worker), libcurl finds its address
 * (upconn_lookup, for the start-up warm-up). https rounds speak TLS through
 * OpenSSL (proxy/uptls.c: contexts, sessions, verification): the same
 * state machine, with a handshake between connect and send, and reads and
 * writes through the connection's SSL (conn_read, conn_write).
 *
 * A connection is U_CONNECTING, U_HANDSHAKE (TLS), U_SENDING (the head and
 * body go out; an early answer is read all the same), U_RECEIVING, or
 * U_IDLE in the pool.
 * Sockets stay registered (level-triggered) for input from connect to
 * close: an idle one that becomes readable was closed by the upstream (or
 * sent what nobody asked for) and is closed, so a reused connection needs
 * no liveness check; the race that remains (the upstream closes as the
 * request goes out) is answered as libcurl answers it, by sending once
 * more on a new connection when nothing of the answer came. Reads go to
 * one scratch buffer per worker; a connection keeps only what the parser
 * left (a line not yet ended, or a paused body), so 5,000 open streams
 * hold no 16 KB buffer each.
 */
#include "proxy/upconn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/buf.h"
#include "core/hash.h"
#include "core/list.h"
#include "core/tg.h"
#include "proxy/h1.h"
#include "proxy/upsock.h"

#include <openssl/err.h>

enum { U_CONNECTING, U_HANDSHAKE, U_SENDING, U_RECEIVING, U_IDLE };

#define IDLE_MAX_AGE_US (60ull * 1000000)  /* libcurl keeps one up to 118 s */
#define IDLE_MAX 512                       /* libcurl's CURLMOPT_MAXCONNECTS here */
#define ADDR_TTL_US (60ull * 1000000)      /* libcurl's DNS cache timeout */
#define AVOID_US (600ull * 1000000)        /* an upstream that encodes unasked */
#define N_ADDRS 32
#define READ_SIZE 16384
#define MAX_PIECES 6
#define N_TARGETS 4                        /* plain-http URLs upconn_target remembers */
#define HEAD_KEEP 4096                     /* a head buffer's room kept for the next round */

struct tg_upconn {
    int fd;
    uint32_t gen;
    int state;
    uint32_t events;       /* registered with epoll; 0: not registered */
    bool reused;           /* from the pool: a close before any answer is sent again */
    bool warm;             /* opened with no round, for the pool (upconn_warm) */
    bool retried;
    bool paused;
    bool due;              /* on the due list: end with due_rc, or feed what is kept */
    bool refeed;
    CURLcode due_rc;
    char key[300];         /* the pool's key (tg_uptarget.key) */
    char host[256];        /* https: SNI and the certificate's name */
    bool tls;              /* https */
    SSL *ssl;              /* its TLS once the handshake starts */
    tg_tls_id id;          /* the round's trust (borrowed), for a connection it opens */
    char why[256];         /* a failure's words, told before done (cb->why) */
    struct sockaddr_storage addr;
    socklen_t alen;
    tg_buf head;
    struct iovec iov[MAX_PIECES];
    int niov;
    size_t total, sent;
    tg_buf in;             /* read, not yet taken by the parser */
    tg_h1 h1;
    const tg_upconn_cb *cb;
    void *ud;
    uint64_t connect_deadline;
    long connect_ms;       /* the round's, also for the connection send_again opens */
    uint64_t idle_since;
    tg_list_node node;     /* on the idle list or the due list */
};

typedef struct {
    char key[260];  /* addr_key: "s:" and the authority */
    struct sockaddr_storage addr;
    socklen_t alen;
    uint64_t until;
    bool avoid;  /* rounds to key go through libcurl until then (upconn_avoid) */
} known_addr;

/* A plain-http URL as upconn_target parsed it: a route's rounds all go to
 * one URL, parsed again each round for 1,100 instructions. What is known
 * of its address is not kept here (it changes: upconn_learn, _avoid). */
typedef struct {
    char url[512];     /* "" when unused */
    size_t target_at;  /* where the target starts in url, 0: "/" */
    bool literal;      /* t.addr is the URL's IP literal */
    tg_uptarget t;     /* t.target not set */
} parsed_url;

typedef struct lookup {
    CURL *easy;
    char *url;  /* the upstream's URL: where the address is learnt */
    upconn_found_fn found;
    void *ud;
    char why[CURL_ERROR_SIZE];
    struct lookup *next;
} lookup;

struct upconn_pool {
    tg_upconn **by_fd;
    size_t n_fd;
    tg_list idle;          /* most recently used first */
    int n_idle;
    tg_list due;           /* rounds upconn_run_due ends or feeds, newest first */
    uint32_t gen;
    known_addr addrs[N_ADDRS];
    int next_addr;
    int n_addrs;           /* slots ever taken: addrs[0..n_addrs) (taken in order) */
    uptls *tls;            /* contexts and sessions, made at the first https round */
    int n_warming;         /* connections upconn_warm opened, not yet pooled or failed */
    lookup *lookups;       /* names libcurl looks up (upconn_lookup) */
    parsed_url parsed[N_TARGETS];
    int next_parsed;
    tg_buf head;           /* the next round's head, written by the caller (upconn_head) */
    char rd[READ_SIZE];
    char wr[16384];        /* a TLS request's pieces as one record (conn_write) */
};

static struct upconn_pool *pool(worker *w)
{
    if (!w->upc)
        w->upc = tg_calloc(1, sizeof *w->upc);
    return w->upc;
}

/* ---- where a round goes ----------------------------------------------------- */

/* host and port of an authority (80 or 443 when none is given) */
static bool split_authority(const char *a, size_t n, bool tls, char *host, size_t hcap,
                            unsigned *port)
{
    *port = tls ? 443 : 80;
    return tg_split_host_port(a, n, host, hcap, port) == 0;
}

static bool literal_addr(const char *host, unsigned port, struct sockaddr_storage *ss,
                         socklen_t *len)
{
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *len = sizeof *v4;
        return true;
    }
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *len = sizeof *v6;
        return true;
    }
    return false;
}

/* The authority of an http or https URL and where its target starts. */
static bool http_authority(const char *url, const char **a, size_t *n, const char **target,
                           bool *tls)
{
    *tls = !strncmp(url, "https://", 8);
    if (!*tls && strncmp(url, "http://", 7))
        return false;
    *a = url + (*tls ? 8 : 7);
    *n = strcspn(*a, "/?#");
    *target = *a + *n;
    return *n && *n < sizeof ((tg_uptarget *)0)->authority && !memchr(*a, '@', *n);
}

static uint64_t hash_str(const char *s)
{
    return s ? tg_hash64(s, strlen(s), 0) : 0;
}

/* Where known_addr and the pool file an authority: "s:" before an https
 * one, so that http and https to one host (ports 80 and 443) differ.
 * Its length. (Every round makes its keys: memcpy, not snprintf, which
 * cost 2,200 instructions a round.) */
static size_t addr_key(char *dst, size_t cap, const char *a, size_t n, bool tls)
{
    size_t at = 0;
    if (tls && cap > 2) {
        memcpy(dst, "s:", 2);
        at = 2;
    }
    if (n > cap - 1 - at)
        n = cap - 1 - at;
    memcpy(dst + at, a, n);
    dst[at + n] = '\0';
    return at + n;
}

/* t's address: its literal, or the one learnt for akey (t->key's
 * authority part) unless that authority is to be avoided. */
static bool target_addr(struct upconn_pool *P, const char *akey, bool literal, tg_uptarget *t)
{
    known_addr *k = NULL;
    /* keys are unique (addr_slot); the clock is read only for a match */
    for (int i = 0; P && i < P->n_addrs; i++)
        if (P->addrs[i].until && !strcmp(P->addrs[i].key, akey)) {
            if (P->addrs[i].until > now_us())
                k = &P->addrs[i];
            break;
        }
    if (k && k->avoid)
        return false;
    if (literal)
        return true;
    if (!k)
        return false;
    t->addr = k->addr;
    t->alen = k->alen;
    return true;
}

/* The plain-http URL url as parsed before, or NULL. */
static const parsed_url *parsed_of(const struct upconn_pool *P, const char *url)
{
    for (int i = 0; P && i < N_TARGETS; i++)
        if (P->parsed[i].url[0] && !strcmp(P->parsed[i].url, url))
            return &P->parsed[i];
    return NULL;
}

static void remember_parsed(struct upconn_pool *P, const char *url, const char *target,
                            bool literal, const tg_uptarget *t)
{
    size_t n = strlen(url);
    if (!P || n >= sizeof P->parsed[0].url)
        return;
    parsed_url *u = &P->parsed[P->next_parsed];
    P->next_parsed = (P->next_parsed + 1) % N_TARGETS;
    memcpy(u->url, url, n + 1);
    u->target_at = *target ? (size_t)(target - url) : 0;
    u->literal = literal;
    u->t = *t;
    u->t.target = NULL;  /* into this round's URL string: set from the next one's */
}

bool upconn_target(worker *w, const char *url, const tg_tls_id *id, tg_uptarget *t)
{
    struct upconn_pool *P = w->upc;
    const parsed_url *u = parsed_of(P, url);
    if (u) {
        *t = u->t;
        t->target = u->target_at ? url + u->target_at : "/";
        return target_addr(P, t->key, u->literal, t);
    }
    const char *a, *target;
    size_t n;
    bool tls;
    if (!http_authority(url, &a, &n, &target, &tls) || (*target && *target != '/') ||
        (tls && !id))
        return false;
    for (const char *s = target; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f || *s == '#')
            return false;
    unsigned port;
    if (!split_authority(a, n, tls, t->host, sizeof t->host, &port))
        return false;
    memcpy(t->authority, a, n);
    t->authority[n] = '\0';
    t->target = *target ? target : "/";
    t->tls = tls;
    char akey[260];  /* known_addr.key */
    size_t alen = addr_key(akey, sizeof akey, a, n, tls);
    memcpy(t->key, akey, alen + 1);  /* t->key is the larger */
    if (tls) {  /* a connection serves only rounds that trust and show the same: "|" and
                 * the trust's hash in 16 hex digits */
        t->id = *id;
        uint64_t h = hash_str(id->ca_file) ^ hash_str(id->ca_path) * 3 ^
                     hash_str(id->cert) * 5 ^ hash_str(id->key) * 7;
        char *k = t->key + alen;
        *k++ = '|';
        for (int i = 15; i >= 0; i--, h >>= 4)
            k[i] = "0123456789abcdef"[h & 15];
        k[16] = '\0';
    } else {
        memset(&t->id, 0, sizeof t->id);
    }
    bool literal = literal_addr(t->host, port, &t->addr, &t->alen);
    if (!tls)  /* an https round's key also says whom it trusts: parsed each time */
        remember_parsed(P, url, target, literal, t);
    return target_addr(P, akey, literal, t);
}

/* The slot of authority a[0..n): its own, else the oldest. */
static known_addr *addr_slot(struct upconn_pool *P, const char *a, size_t n, bool tls)
{
    char key[sizeof P->addrs[0].key];
    addr_key(key, sizeof key, a, n, tls);
    for (int i = 0; i < N_ADDRS; i++)
        if (!strcmp(P->addrs[i].key, key))
            return &P->addrs[i];
    known_addr *k = &P->addrs[P->next_addr];
    P->next_addr = (P->next_addr + 1) % N_ADDRS;
    if (P->n_addrs < N_ADDRS)
        P->n_addrs++;
    memset(k, 0, sizeof *k);
    memcpy(k->key, key, sizeof key);
    return k;
}

void upconn_avoid(worker *w, const char *url)
{
    const char *a, *target;
    size_t n;
    bool tls;
    if (!http_authority(url, &a, &n, &target, &tls))
        return;
    known_addr *k = addr_slot(pool(w), a, n, tls);
    k->avoid = true;
    k->until = now_us() + AVOID_US;
}

void upconn_learn(worker *w, const char *url, const char *ip, long port)
{
    const char *a, *target;
    size_t n;
    char host[256];
    unsigned up;
    bool tls;
    if (!ip || port <= 0 || port > 65535 || !http_authority(url, &a, &n, &target, &tls) ||
        !split_authority(a, n, tls, host, sizeof host, &up))
        return;
    struct sockaddr_storage ss;
    socklen_t len;
    if (literal_addr(host, up, &ss, &len) || !literal_addr(ip, (unsigned)port, &ss, &len))
        return;  /* a literal needs no learning */
    if (ss.ss_family == AF_INET6 &&
        IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)&ss)->sin6_addr))
        return;  /* its scope (the interface) is not in what libcurl reports */
    known_addr *slot = addr_slot(pool(w), a, n, tls);
    if (slot->avoid && slot->until > now_us())
        return;
    slot->avoid = false;
    slot->addr = ss;
    slot->alen = len;
    slot->until = now_us() + ADDR_TTL_US;
}

/* ---- a host name's address, found by libcurl ---------------------------------- */

/* libcurl looks the name up on the worker's multi (its threaded
 * resolver) with a CONNECT_ONLY transfer to host:port over plain tcp:
 * the address that answered is what a round's upconn_learn would take.
 * The transfer's connection is closed when it ends. */
bool upconn_lookup(worker *w, const char *url, long ms, upconn_found_fn found, void *ud)
{
    const char *a, *target;
    size_t n;
    bool tls;
    char host[256], curl_url[300];
    unsigned port;
    struct sockaddr_storage ss;
    socklen_t len;
    if (!http_authority(url, &a, &n, &target, &tls) ||
        !split_authority(a, n, tls, host, sizeof host, &port) || literal_addr(host, port, &ss, &len) ||
        (size_t)snprintf(curl_url, sizeof curl_url, "http://%s:%u/", host, port) >= sizeof curl_url)
        return false;
    CURL *e = curl_easy_init();
    if (!e)
        return false;
    lookup *l = tg_calloc(1, sizeof *l);
    curl_easy_setopt(e, CURLOPT_URL, curl_url);
    curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);  /* tcp only: no request, no TLS */
    curl_easy_setopt(e, CURLOPT_PROXY, "");         /* not the environment's http_proxy */
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    /* a lookup that outlives ms is left to its thread: without this,
     * libcurl 7.88 joins the thread when the transfer ends, and the
     * worker waits on the DNS after all */
    curl_easy_setopt(e, CURLOPT_QUICK_EXIT, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, ms > 0 ? ms : 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, ms > 0 ? ms : 1L);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_curl_open);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, w);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, on_curl_close);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, w);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, l->why);
    if (curl_multi_add_handle(w->multi, e) != CURLM_OK) {
        curl_easy_cleanup(e);
        free(l);
        return false;
    }
    struct upconn_pool *P = pool(w);
    l->easy = e;
    l->url = tg_strdup(url);
    l->found = found;
    l->ud = ud;
    l->next = P->lookups;
    P->lookups = l;
    return true;
}

/* l off the multi and freed, its owner told. */
static void lookup_end(worker *w, lookup *l, CURLcode rc)
{
    char *ip = NULL;
    long port = 0;
    if (rc == CURLE_OK && !curl_easy_getinfo(l->easy, CURLINFO_PRIMARY_IP, &ip) &&
        !curl_easy_getinfo(l->easy, CURLINFO_PRIMARY_PORT, &port))
        upconn_learn(w, l->url, ip, port);
    curl_multi_remove_handle(w->multi, l->easy);  /* closes its connection (CONNECT_ONLY) */
    curl_easy_cleanup(l->easy);
    if (rc == CURLE_OK || !l->why[0])
        snprintf(l->why, sizeof l->why, "%s", curl_easy_strerror(rc));
    l->found(l->ud, rc, l->why);
    free(l->url);
    free(l);
}

bool upconn_lookup_done(worker *w, CURL *e, CURLcode rc)
{
    lookup **p = w->upc ? &w->upc->lookups : NULL;
    while (p && *p && (*p)->easy != e)
        p = &(*p)->next;
    if (!p || !*p)
        return false;
    lookup *l = *p;
    *p = l->next;
    lookup_end(w, l, rc);
    return true;
}

/* ---- connections -------------------------------------------------------------- */

static void watch(worker *w, tg_upconn *c, uint32_t events)
{
    if (c->events == events)
        return;
    struct epoll_event ev = {.events = events, .data.u64 = TAG(K_UPCONN, c->gen, c->fd)};
    if (!events)
        epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    else
        epoll_ctl(w->epfd, c->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev);
    c->events = events;
}

static tg_upconn *conn_of(tg_list_node *n)
{
    return TG_LIST_ITEM(n, tg_upconn, node);
}

static void close_conn(worker *w, tg_upconn *c)
{
    struct upconn_pool *P = w->upc;
    if (c->state == U_IDLE) {
        tg_list_remove(&P->idle, &c->node);
        P->n_idle--;
    }
    if (c->due)
        tg_list_remove(&P->due, &c->node);
    uptls_close(c->ssl);
    c->ssl = NULL;
    if (c->fd >= 0) {
        if ((size_t)c->fd < P->n_fd)
            P->by_fd[c->fd] = NULL;
        close(c->fd);  /* also leaves the epoll set */
    }
    tg_buf_free(&c->head);
    tg_buf_free(&c->in);
    free(c);
}

/* A socket to c->addr, connecting within c->connect_ms; false when none
 * could be made. */
static bool open_socket(worker *w, tg_upconn *c)
{
    struct upconn_pool *P = w->upc;
    c->fd = socket(c->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return false;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    int idle = 60;  /* libcurl's CURLOPT_TCP_KEEPIDLE and KEEPINTVL, not the kernel's 2 h */
    setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof idle);
    if ((size_t)c->fd >= P->n_fd) {
        size_t n = P->n_fd ? P->n_fd : 256;
        while (n <= (size_t)c->fd)
            n *= 2;
        P->by_fd = tg_realloc(P->by_fd, n * sizeof *P->by_fd);
        memset(P->by_fd + P->n_fd, 0, (n - P->n_fd) * sizeof *P->by_fd);
        P->n_fd = n;
    }
    P->by_fd[c->fd] = c;
    c->gen = ++P->gen;
    c->events = 0;
    c->connect_deadline = c->connect_ms > 0 ? now_us() + (uint64_t)c->connect_ms * 1000 : 0;
    /* Writable is what starts the request (or the TLS handshake), also
     * when connect succeeded at once: send_again opens a socket and sends
     * nothing itself. */
    if (connect(c->fd, (struct sockaddr *)&c->addr, c->alen) == 0)
        c->state = c->tls ? U_HANDSHAKE : U_SENDING;
    else if (errno == EINPROGRESS)
        c->state = U_CONNECTING;
    else
        return false;
    watch(w, c, EPOLLIN | EPOLLOUT);
    return true;
}

/* b emptied, its room kept unless it grew past HEAD_KEEP. */
static void keep_room(tg_buf *b)
{
    if (b->cap > HEAD_KEEP)
        tg_buf_free(b);
    else
        tg_buf_reset(b);
}

tg_buf *upconn_head(worker *w)
{
    struct upconn_pool *P = pool(w);
    keep_room(&P->head);
    return &P->head;
}

/* The round ends: c goes to the pool or is closed, then the caller hears. */
static void end_round(worker *w, tg_upconn *c, CURLcode rc, bool reusable)
{
    struct upconn_pool *P = w->upc;
    const tg_upconn_cb *cb = c->cb;
    void *ud = c->ud;
    c->cb = NULL;
    c->ud = NULL;
    if (c->warm) {
        c->warm = false;
        P->n_warming--;
    }
    if (cb && cb->why && c->why[0] && rc != CURLE_OK)
        cb->why(ud, c->why);
    if (reusable) {
        keep_room(&c->head);  /* the next round's head is copied into it */
        c->niov = 0;
        c->state = U_IDLE;
        c->idle_since = now_us();
        watch(w, c, EPOLLIN);
        tg_list_push_front(&P->idle, &c->node);
        if (++P->n_idle > IDLE_MAX)
            close_conn(w, conn_of(P->idle.tail));
    } else {
        close_conn(w, c);
    }
    if (cb)
        cb->done(ud, rc);
}

/* An end found inside upconn_start: told from the loop (upconn_run_due). */
static void end_later(worker *w, tg_upconn *c, CURLcode rc)
{
    struct upconn_pool *P = w->upc;
    if (c->due)
        return;
    c->due = true;
    c->refeed = false;
    c->due_rc = rc;
    tg_list_push_front(&P->due, &c->node);
}

/* The upstream closed a reused connection before any answer: once more
 * on a new one (libcurl does the same). True when it did. */
static bool send_again(worker *w, tg_upconn *c)
{
    if (!c->reused || c->retried || c->h1.seen_any)
        return false;
    struct upconn_pool *P = w->upc;
    if ((size_t)c->fd < P->n_fd)
        P->by_fd[c->fd] = NULL;
    uptls_close(c->ssl);
    c->ssl = NULL;
    close(c->fd);
    c->reused = false;
    c->retried = true;
    c->sent = 0;
    tg_buf_free(&c->in);
    tg_h1_init(&c->h1, false);
    /* connect_timeout bounds this connect as it did the first (the
     * upstream may be gone now): with none, the round hung in connect
     * until ttfb_timeout (5 minutes by default) */
    if (!open_socket(w, c)) {
        if (c->fd >= 0) {
            P->by_fd[c->fd] = NULL;
            close(c->fd);
        }
        c->fd = -1;
        end_later(w, c, CURLE_COULDNT_CONNECT);
    }
    return true;
}

/* ---- the connection's bytes: its socket, or its TLS ----------------------------- */

enum { IO_AGAIN = -1, IO_FAIL = -2 };

/* OpenSSL's error queue emptied before a TLS call, as SSL_get_error
 * wants. Clearing walks all 16 slots (and frees) even when the queue is
 * empty, as it is after every round that went well: 1,700 instructions
 * a round, where asking first costs a few. */
static void err_clear(void)
{
    if (ERR_peek_error())
        ERR_clear_error();
}

/* What a TLS call that did not complete waits for: the socket readable,
 * or writable too (OpenSSL may need either whatever the call was). */
static int tls_wait(worker *w, tg_upconn *c, int ret)
{
    int e = SSL_get_error(c->ssl, ret);
    if (e == SSL_ERROR_WANT_READ) {  /* a request still going out keeps its EPOLLOUT */
        watch(w, c, c->state == U_SENDING && c->sent < c->total ? EPOLLIN | EPOLLOUT : EPOLLIN);
        return IO_AGAIN;
    }
    if (e == SSL_ERROR_WANT_WRITE) {
        watch(w, c, EPOLLIN | EPOLLOUT);
        return IO_AGAIN;
    }
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0;
    return IO_FAIL;
}

/* Up to n bytes of the answer: > 0, 0 at its end, IO_AGAIN, or IO_FAIL
 * (a reset, a TLS failure: c->why says which). */
static ssize_t conn_read(worker *w, tg_upconn *c, char *buf, size_t n)
{
    if (!c->ssl) {
        ssize_t k;
        do
            k = recv(c->fd, buf, n, 0);
        while (k < 0 && errno == EINTR);
        if (k < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? IO_AGAIN : IO_FAIL;
        return k;
    }
    err_clear();
    int k = SSL_read(c->ssl, buf, (int)(n > INT_MAX ? INT_MAX : n));
    if (k > 0)
        return k;
    int r = tls_wait(w, c, k);
    if (r == IO_FAIL)
        uptls_failure(c->ssl, k, c->why, sizeof c->why);
    return r;
}

/* Some of v[0..nv): bytes written, IO_AGAIN, or IO_FAIL. TLS writes the
 * first piece (a record each); after IO_AGAIN the same piece comes again,
 * as OpenSSL wants. */
static ssize_t conn_write(worker *w, tg_upconn *c, struct iovec *v, int nv)
{
    if (!c->ssl) {
        struct msghdr m = {.msg_iov = v, .msg_iovlen = (size_t)nv};
        ssize_t k;
        do
            k = sendmsg(c->fd, &m, MSG_NOSIGNAL);
        while (k < 0 && errno == EINTR);
        if (k < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? IO_AGAIN : IO_FAIL;
        return k;
    }
    /* A request of a few pieces that fits one record goes as one: one
     * record and one send, not one per piece. The same bytes come again
     * after IO_AGAIN (c->sent has not moved), as OpenSSL wants. */
    if (nv < 1)
        return IO_FAIL;
    const void *data = v[0].iov_base;
    size_t n = v[0].iov_len;
    if (nv > 1) {
        size_t all = 0;
        for (int i = 0; i < nv; i++)
            all += v[i].iov_len;
        if (all <= sizeof w->upc->wr) {
            for (int i = 0, at = 0; i < nv; at += (int)v[i].iov_len, i++)
                memcpy(w->upc->wr + at, v[i].iov_base, v[i].iov_len);
            data = w->upc->wr;
            n = all;
        }
    }
    err_clear();
    int k = SSL_write(c->ssl, data, (int)(n > INT_MAX ? INT_MAX : n));
    if (k > 0)
        return k;
    int r = tls_wait(w, c, k);
    return r == 0 ? IO_FAIL : r;
}

/* The TLS handshake, on its first call made with the round's trust.
 * True once it is done (c is U_SENDING); false while it waits or when the
 * round ended (an unusable trust, a certificate that does not verify). */
static bool handshake(worker *w, tg_upconn *c)
{
    struct upconn_pool *P = w->upc;
    if (!c->ssl) {
        if (!P->tls)
            P->tls = uptls_new();
        c->ssl = uptls_open(P->tls, &c->id, c->host, c->key, c->fd, c->why, sizeof c->why);
        if (!c->ssl) {
            end_round(w, c, CURLE_SSL_CACERT_BADFILE, false);
            return false;
        }
    }
    err_clear();
    int k = SSL_connect(c->ssl);
    if (k == 1 && c->warm) {  /* no round: pooled, its session ticket read while it idles */
        end_round(w, c, CURLE_OK, true);
        return false;
    }
    if (k == 1) {
        c->state = U_SENDING;
        return true;
    }
    if (tls_wait(w, c, k) == IO_AGAIN)
        return false;
    end_round(w, c, uptls_failure(c->ssl, k, c->why, sizeof c->why), false);
    return false;
}

/* The upstream stopped taking the request (a send failed): an answer it
 * sent first is still to be read, and is the round's answer -- a 413 from
 * the head alone, then a close with the body unread (nginx's
 * client_max_body_size), reached the client through libcurl, which reads
 * before it writes, but became a failed send here. */
static bool answer_waiting(const tg_upconn *c)
{
    char b;
    return c->h1.seen_any || (c->ssl && SSL_has_pending(c->ssl)) ||
           recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

/* Writes what is left of the request. False when the round ended. */
static bool send_rest(worker *w, tg_upconn *c, bool in_start)
{
    while (c->sent < c->total) {
        struct iovec v[MAX_PIECES];
        int nv = 0;
        size_t off = c->sent;
        for (int i = 0; i < c->niov; i++) {
            if (off >= c->iov[i].iov_len) {
                off -= c->iov[i].iov_len;
                continue;
            }
            v[nv].iov_base = (char *)c->iov[i].iov_base + off;
            v[nv].iov_len = c->iov[i].iov_len - off;
            off = 0;
            nv++;
        }
        ssize_t k = conn_write(w, c, v, nv);
        if (k > 0) {
            c->sent += (size_t)k;
            continue;
        }
        if (k == IO_AGAIN) {
            if (!c->ssl)
                watch(w, c, EPOLLIN | EPOLLOUT);
            return true;
        }
        if (answer_waiting(c)) {  /* not reusable: sent < total */
            c->state = U_RECEIVING;
            watch(w, c, EPOLLIN);
            return true;
        }
        if (send_again(w, c))
            return true;
        if (in_start)
            end_later(w, c, CURLE_SEND_ERROR);
        else
            end_round(w, c, CURLE_SEND_ERROR, false);
        return false;
    }
    c->state = U_RECEIVING;
    watch(w, c, EPOLLIN);
    return true;
}

static CURLcode h1_code(tg_h1_error e)
{
    switch (e) {
    case TG_H1_E_CODING:
        return CURLE_BAD_CONTENT_ENCODING;
    case TG_H1_E_PARTIAL:
        return CURLE_PARTIAL_FILE;
    case TG_H1_E_NOTHING:
        return CURLE_GOT_NOTHING;
    default:
        return CURLE_WEIRD_SERVER_REPLY;
    }
}

/* Offers the parser what is kept and data[0..n). False when the round
 * ended or paused (the caller reads no more). */
static bool feed(worker *w, tg_upconn *c, const char *data, size_t n)
{
    const char *buf = data;
    size_t len = n, used = 0;
    if (c->in.len) {
        tg_buf_append(&c->in, data, n);
        buf = c->in.data;
        len = c->in.len;
    }
    tg_h1_cb hc = {c->cb->line, c->cb->body};
    tg_h1_result res = tg_h1_feed(&c->h1, buf, len, &used, &hc, c->ud);
    size_t rest = len - used;
    if (buf == c->in.data) {
        tg_buf_consume(&c->in, used);
        if (!c->in.len)
            tg_buf_free(&c->in);
    } else if (rest && res != TG_H1_DONE && res != TG_H1_ERROR && res != TG_H1_STOPPED) {
        tg_buf_append(&c->in, buf + used, rest);
    }
    switch (res) {
    case TG_H1_MORE:
        return true;
    case TG_H1_PAUSED:
        c->paused = true;
        watch(w, c, 0);
        return false;
    case TG_H1_STOPPED:
        end_round(w, c, CURLE_WRITE_ERROR, false);
        return false;
    case TG_H1_ERROR:
        end_round(w, c, h1_code(c->h1.err), false);
        return false;
    case TG_H1_DONE:
        /* bytes past the answer: nothing asked for them, the connection goes */
        end_round(w, c, CURLE_OK,
                  c->h1.keep_alive && !rest && !c->in.len && c->sent == c->total);
        return false;
    }
    return false;
}

static void on_eof(worker *w, tg_upconn *c, bool reset)
{
    if (send_again(w, c))
        return;
    tg_h1_result res = reset ? TG_H1_ERROR : tg_h1_eof(&c->h1);
    if (res == TG_H1_DONE && c->in.len)  /* a line that never ended */
        res = TG_H1_ERROR;
    if (res == TG_H1_DONE)
        end_round(w, c, CURLE_OK, false);
    else
        end_round(w, c, reset ? CURLE_RECV_ERROR : h1_code(c->h1.err), false);
}

/* Reads while the socket has more; a short read means it had all (not
 * over TLS: OpenSSL may hold decrypted records the socket no longer
 * signals, so TLS reads until OpenSSL wants more from the socket). */
static void read_answer(worker *w, tg_upconn *c)
{
    struct upconn_pool *P = w->upc;
    for (;;) {
        ssize_t k = conn_read(w, c, P->rd, sizeof P->rd);
        if (k == IO_AGAIN)
            return;
        if (k <= 0) {
            on_eof(w, c, k < 0);
            return;
        }
        if (!feed(w, c, P->rd, (size_t)k) || (!c->ssl && (size_t)k < sizeof P->rd))
            return;
    }
}

/* An idle connection became readable: closed by the upstream, or, over
 * TLS, a record that carries no data (TLS 1.3 sends session tickets after
 * the handshake). True when it may stay in the pool. */
static bool idle_still_good(worker *w, tg_upconn *c)
{
    return c->ssl && conn_read(w, c, w->upc->rd, sizeof w->upc->rd) == IO_AGAIN;
}

tg_upconn *upconn_start(worker *w, const tg_uptarget *t, const tg_buf *head,
                        const struct iovec *body, int nbody, long connect_ms,
                        const tg_upconn_cb *cb, void *ud)
{
    struct upconn_pool *P = pool(w);
    tg_upconn *c = conn_of(P->idle.head);
    while (c && strcmp(c->key, t->key))
        c = conn_of(c->node.next);
    if (c) {
        tg_list_remove(&P->idle, &c->node);
        P->n_idle--;
        c->reused = true;
        c->state = U_SENDING;
    } else {
        c = tg_calloc(1, sizeof *c);
        snprintf(c->key, sizeof c->key, "%s", t->key);
        snprintf(c->host, sizeof c->host, "%s", t->host);
        c->tls = t->tls;
        c->id = t->id;
        c->addr = t->addr;
        c->alen = t->alen;
        c->connect_ms = connect_ms;
        if (!open_socket(w, c)) {
            if (c->fd < 0) {
                free(c);
                return NULL;
            }
            c->state = U_CONNECTING;
            end_later(w, c, CURLE_COULDNT_CONNECT);
        }
    }
    c->retried = c->paused = false;
    c->connect_ms = connect_ms;
    c->id = t->id;  /* the round's: a connection send_again opens trusts as it does */
    c->why[0] = '\0';
    c->cb = cb;
    c->ud = ud;
    tg_h1_init(&c->h1, false);
    tg_buf_reset(&c->head);
    tg_buf_append(&c->head, head->data, head->len);
    size_t head_len = c->head.len;
    c->iov[0] = (struct iovec){c->head.data, head_len};
    c->niov = 1;
    c->total = head_len;
    for (int i = 0; i < nbody && c->niov < MAX_PIECES; i++) {
        if (!body[i].iov_len)
            continue;
        c->iov[c->niov++] = body[i];
        c->total += body[i].iov_len;
    }
    c->sent = 0;
    if (!c->due && c->state == U_SENDING)
        send_rest(w, c, true);
    return c;
}

bool upconn_warm(worker *w, const tg_uptarget *t, long connect_ms, const tg_upconn_cb *cb,
                 void *ud)
{
    struct upconn_pool *P = pool(w);
    if (!t->tls)
        return false;
    for (size_t i = 0; i < P->n_fd; i++)
        if (P->by_fd[i] && !strcmp(P->by_fd[i]->key, t->key))
            return false;
    tg_upconn *c = tg_calloc(1, sizeof *c);
    snprintf(c->key, sizeof c->key, "%s", t->key);
    snprintf(c->host, sizeof c->host, "%s", t->host);
    c->tls = true;
    c->id = t->id;
    c->addr = t->addr;
    c->alen = t->alen;
    c->connect_ms = connect_ms;
    c->cb = cb;
    c->ud = ud;
    c->warm = true;
    P->n_warming++;
    tg_h1_init(&c->h1, false);
    if (!open_socket(w, c)) {
        if (c->fd < 0) {
            P->n_warming--;
            free(c);
            return false;
        }
        c->state = U_CONNECTING;
        end_later(w, c, CURLE_COULDNT_CONNECT);
    }
    return true;
}

void upconn_cancel(worker *w, tg_upconn *c)
{
    c->cb = NULL;
    c->ud = NULL;
    close_conn(w, c);
}

void upconn_unpause(worker *w, tg_upconn *c)
{
    if (!c->paused)
        return;
    c->paused = false;
    watch(w, c, c->state == U_SENDING ? EPOLLIN | EPOLLOUT : EPOLLIN);
    if ((c->in.len || (c->ssl && SSL_has_pending(c->ssl))) && !c->due) {
        /* fed from the loop: this call may come from inside the client's
         * read, which must not see the round end under it */
        c->due = true;
        c->refeed = true;
        tg_list_push_front(&w->upc->due, &c->node);
    }
}

bool upconn_sent_all(const tg_upconn *c)
{
    return c->sent == c->total;
}

bool upconn_connect_late(const tg_upconn *c, uint64_t t)
{
    return (c->state == U_CONNECTING || c->state == U_HANDSHAKE) && c->connect_deadline &&
           t > c->connect_deadline;
}

void upconn_event(worker *w, uint64_t tag, uint32_t events)
{
    struct upconn_pool *P = w->upc;
    int fd = TAG_FD(tag);
    tg_upconn *c = P && fd >= 0 && (size_t)fd < P->n_fd ? P->by_fd[fd] : NULL;
    if (!c || (c->gen & 0xffffff) != TAG_GEN(tag) || c->due)
        return;
    if (c->state == U_IDLE) {  /* closed by the upstream, or bytes nobody asked for */
        if (!idle_still_good(w, c))
            close_conn(w, c);
        return;
    }
    if (c->state == U_CONNECTING) {
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        int err = 0;
        socklen_t el = sizeof err;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
            end_round(w, c, CURLE_COULDNT_CONNECT, false);
            return;
        }
        c->state = c->tls ? U_HANDSHAKE : U_SENDING;
    }
    if (c->state == U_HANDSHAKE) {
        if (!handshake(w, c) || !send_rest(w, c, false))
            return;
    } else if (c->state == U_SENDING && (events & (EPOLLOUT | (c->ssl ? EPOLLIN : 0))) &&
               !send_rest(w, c, false)) {
        return;
    }
    if (c->state != U_CONNECTING && !c->paused &&
        (events & (EPOLLIN | EPOLLHUP | EPOLLERR) || (c->ssl && SSL_has_pending(c->ssl))))
        read_answer(w, c);
}

void upconn_run_due(worker *w)
{
    struct upconn_pool *P = w->upc;
    while (P && !tg_list_empty(&P->due)) {
        tg_upconn *c = conn_of(P->due.head);
        tg_list_remove(&P->due, &c->node);
        c->due = false;
        if (c->refeed) {
            c->refeed = false;
            if (feed(w, c, NULL, 0) && !c->paused)
                read_answer(w, c);
        } else {
            end_round(w, c, c->due_rc, false);
        }
    }
}

bool upconn_has_due(const worker *w)
{
    return w->upc && !tg_list_empty(&w->upc->due);
}

void upconn_sweep(worker *w, uint64_t t)
{
    struct upconn_pool *P = w->upc;
    for (size_t i = 0; P && P->n_warming && i < P->n_fd; i++) {
        tg_upconn *c = P->by_fd[i];
        if (c && c->warm && !c->due && upconn_connect_late(c, t)) {
            snprintf(c->why, sizeof c->why, "no TLS connection within %ld ms", c->connect_ms);
            end_round(w, c, CURLE_OPERATION_TIMEDOUT, false);
        }
    }
    while (P && P->idle.tail && t - conn_of(P->idle.tail)->idle_since > IDLE_MAX_AGE_US)
        close_conn(w, conn_of(P->idle.tail));
}

void upconn_free_all(worker *w)
{
    struct upconn_pool *P = w->upc;
    if (!P)
        return;
    while (P->lookups) {  /* their owners hear, and start nothing more */
        lookup *l = P->lookups;
        P->lookups = l->next;
        lookup_end(w, l, CURLE_ABORTED_BY_CALLBACK);
    }
    for (size_t i = 0; i < P->n_fd; i++) {
        tg_upconn *c = P->by_fd[i];
        if (c && c->warm)  /* its owner hears (request rounds were cancelled before) */
            end_round(w, c, CURLE_ABORTED_BY_CALLBACK, false);
        else if (c)
            close_conn(w, c);
    }
    while (!tg_list_empty(&P->due)) {  /* failed before they had a socket */
        tg_upconn *c = conn_of(P->due.head);
        if (c->warm)
            end_round(w, c, c->due_rc, false);
        else
            close_conn(w, c);
    }
    free(P->by_fd);
    tg_buf_free(&P->head);
    uptls_free(P->tls);
    free(P);
    w->upc = NULL;
}
