/* worker.h -- the worker and the server, as every layer of proxy/ sees them.
 *
 * Types only (and the clock): a worker is one thread's event loop over one
 * epoll set that holds its libmicrohttpd daemon, the sockets of its curl
 * multi handle, its client sockets (proxy/front.c), its Redis
 * connection (proxy/store.h), and an eventfd for control (proxy/server.c
 * runs it). The layers above read and write
 * the worker's fields (its lists, its cache, its metrics) but call only
 * downward:
 *
 *   request < retry < bridges < embed_wait < prepare < upsock, upconn < upstream < front < server
 *
 * (proxy/request.h ... proxy/server.c; each file's opening comment says
 * what it holds). No function here.
 */
#ifndef TG_WORKER_H
#define TG_WORKER_H

#include <curl/curl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "conf/conf.h"
#include "core/cache.h"
#include "core/list.h"
#include "proxy/http.h"
#include "proxy/metrics.h"
#include "proxy/store.h"

/* epoll tags: kind in the top byte, a generation in the middle, fd below. */
enum { K_MHD = 1, K_CTL, K_CURL, K_CLIENT, K_UPCONN, K_STORE, K_CONN };
#define TAG(kind, gen, fd) (((uint64_t)(kind) << 56) | ((uint64_t)((gen) & 0xffffff) << 32) | (uint32_t)(fd))
#define TAG_KIND(t) ((int)((t) >> 56))
#define TAG_GEN(t) ((uint32_t)(((t) >> 32) & 0xffffff))
#define TAG_FD(t) ((int)(uint32_t)(t))

typedef struct worker worker;
struct tg_req;
struct embed_job;
typedef struct embed_job embed_job;

/* A client connection that has not sent a whole request head yet: from
 * its accept, or from the end of its previous answer (keep-alive). The
 * worker keeps them in arrival order, so the sweep looks only at the
 * oldest (header_timeout). */
typedef struct head_wait {
    struct MHD_Connection *conn;
    uint64_t since;
    bool listed;
    tg_list_node node;            /* on the worker's heads */
    /* Its socket in the worker's epoll set for as long as it is open
     * (K_CONN, proxy/front.c): a kept-alive connection is parked between
     * an answer and the client's next bytes. */
    int fd;
    uint32_t gen;
    bool registered;              /* in the epoll set (and w->conns[fd]) */
    bool park_cand;               /* answered in this run of MHD: on park_cands */
    bool parked;                  /* suspended by toolgate until its next bytes: on parked */
    uint64_t parked_at;
    tg_list_node park_node;       /* on park_cands or parked */
} head_wait;

struct worker {
    int id;
    pthread_t thread;
    int epfd;
    int ctlfd;
    int listen_fd;
    struct MHD_Daemon *mhd;
    CURLM *multi;
    long curl_deadline_ms;        /* -1: none */
    tg_conf *conf;
    _Atomic(tg_conf *) pending_conf;
    atomic_int stop;
    bool draining;
    bool mhd_pending;
    int n_suspended;              /* connections MHD holds suspended */
    struct tg_req *resumeq;              /* resumes batched for the next flush */
    struct tg_req *suspendq;      /* suspends made at the end of the run of MHD */
    uint64_t resume_due;          /* when the batch goes (now_us clock) */
    uint64_t drain_deadline;      /* end of shutdown_grace, then of the last flush */
    bool drain_cut;               /* the grace passed: open requests were ended */
    struct tg_req *inflight;             /* doubly linked */
    tg_list heads;                /* head_wait, oldest first: connections waiting for a request head */
    tg_list park_cands;           /* head_wait answered in this run of MHD (front.c) */
    tg_list parked;               /* head_wait parked, oldest first */
    head_wait **conns;            /* by socket: the registered connections */
    size_t n_conns;
    int n_inflight;
    uint32_t gen;
    int n_retry_wait;             /* requests waiting for a retry */
    uint64_t next_sweep;
    tg_cache *cache;
    tg_metrics *metrics;
    CURLSH *tls_share;            /* TLS sessions shared by the worker's handles,
                                     so a new connection resumes (upstream.c) */
    char *ca_builtin;             /* libcurl's built-in CA bundle file (upstream.c) */
    struct embed_job *embed_jobs; /* catalogs being embedded on the multi (embed_wait.c) */
    unsigned embed_warned;        /* causes of embedding fallbacks already logged */
    CURL *spare[64];              /* reset easy handles, reused: creating one
                                     costs more than a whole small request */
    int n_spare;
    char accept_encoding[48];     /* "Accept-Encoding: ..." sent upstream (upstream.c) */
    struct curl_slist up_tail[3]; /* the headers every upstream request ends
                                     with, linked behind its own (upstream.c) */
    const char *http_proxy;       /* the proxy environment as curl reads it, */
    const char *https_proxy;      /* once (upstream_proxy_env): NULL when unset */
    const char *no_proxy;
    struct tg_req *free_reqs;     /* finished requests' memory, reused (request.c) */
    int n_free_reqs;
    tg_random rng;                /* ids (request ids, Responses and items) */
    uint8_t *upfd;                /* per upstream socket: UPFD_* bits */
    struct upconn_pool *upc;      /* toolgate's own client's connections (upconn.c) */
    size_t n_upfd;
    struct server *srv;
    atomic_size_t *body_bytes;    /* the server's, for max_body_memory */
};

typedef struct server {
    worker *workers;
    int n;
    atomic_int ready;
    atomic_int open_reqs;  /* requests in flight on all workers (the drain) */
    atomic_int warming;    /* upstream connections opened at start, not yet ended (/readyz) */
    tg_metrics_set *metrics;
    tg_store *items;      /* Responses items for item_reference (store.h) */
    atomic_size_t body_bytes;  /* request bodies held, against max_body_memory */
} server;

/* The monotonic clock in microseconds: every deadline of the loop. */
static inline uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

#endif
