/* upconn.h -- toolgate's own HTTP/1.1 client for http and https upstreams
 * (proxy/upconn.c, TLS in proxy/uptls.c): a worker's connections, their pool, their sockets in
 * the worker's epoll set. Knows nothing of requests: a round is a request
 * head and body pieces out, header lines and body bytes in (proxy/h1.h),
 * and one call of done at the end, with a CURLcode so that what follows
 * (retries, errors, logs) reads it as it reads libcurl's.
 *
 * Ownership: upconn_start copies the head (into the connection's own
 * buffer, kept from round to round: no allocation a round); the body pieces stay the
 * caller's and must live until upconn_sent_all or the round's end. The
 * connection is the worker's; the caller's handle to it is valid from
 * upconn_start until done is called or the caller calls upconn_cancel.
 */
#ifndef TG_UPCONN_H
#define TG_UPCONN_H

#include <sys/socket.h>
#include <sys/uio.h>

#include "core/buf.h"
#include "proxy/uptls.h"
#include "proxy/worker.h"

typedef struct tg_upconn tg_upconn;

typedef struct {
    /* a header line as it came (h1.h) */
    void (*line)(void *ud, const char *line, size_t n);
    /* body bytes: n taken, 0 stop (the round ends with CURLE_WRITE_ERROR),
     * TG_H1_PAUSE (the same bytes come again after upconn_unpause) */
    size_t (*body)(void *ud, const char *data, size_t n);
    /* the round's end; the handle is gone when this is called */
    void (*done)(void *ud, CURLcode rc);
    /* before a failed round's done: why, in libcurl's words (a TLS
     * certificate problem), when there is more to say than the code */
    void (*why)(void *ud, const char *msg);
} tg_upconn_cb;

/* Where a round goes: the URL's authority (also the pool's key), its
 * address, and the request target. */
typedef struct {
    char authority[256];
    char key[300];       /* the pool's key: scheme, authority, trust identity */
    char host[256];      /* the authority's host: SNI and the certificate's name */
    const char *target;  /* into the URL: the path and query */
    struct sockaddr_storage addr;
    socklen_t alen;
    bool tls;
    tg_tls_id id;        /* https: whom to trust (borrowed for the round) */
} tg_uptarget;

/* Fills t when url is http or https to an address known without a lookup
 * (an IP literal, or a name whose address libcurl found in the last 60 s:
 * upconn_learn), with no userinfo and a target of printable ASCII; id is
 * an https round's trust (borrowed until the round ends). False: the
 * round goes through libcurl. */
bool upconn_target(worker *w, const char *url, const tg_tls_id *id, tg_uptarget *t);
/* libcurl connected to url's host at ip:port: later rounds may go direct. */
void upconn_learn(worker *w, const char *url, const char *ip, long port);
/* libcurl looks url's host name up on w's multi handle (its threaded
 * resolver: the worker never waits on DNS) and connects to it over plain
 * tcp, within ms; where it connected is learnt (upconn_learn) and
 * found(ud, rc, why) told, CURLE_OK or why not in libcurl's words (also
 * CURLE_ABORTED_BY_CALLBACK at the worker's end, upconn_free_all). False:
 * nothing started (no host name in url). upconn_lookup_done takes the
 * multi's completions that are lookups (true), from the loop. */
typedef void (*upconn_found_fn)(void *ud, CURLcode rc, const char *why);
bool upconn_lookup(worker *w, const char *url, long ms, upconn_found_fn found, void *ud);
bool upconn_lookup_done(worker *w, CURL *e, CURLcode rc);
/* url's upstream answered in a way only libcurl reads (a content coding
 * unasked): its rounds go through libcurl for the next 10 minutes. */
void upconn_avoid(worker *w, const char *url);

/* The worker's buffer for the next round's head: empty, its room kept
 * (a head written anew each round cost a malloc of its size, and one of
 * 1 KB made glibc consolidate its free lists). Valid until the next call. */
tg_buf *upconn_head(worker *w);
/* Starts a round on a pooled connection to t, else a new one; head is the
 * request head (copied, e.g. from upconn_head), body[0..nbody)
 * the body's pieces (borrowed).
 * connect_ms bounds a new connection's set-up (0: none). NULL only when
 * no socket could be had at all; failures after this come through done,
 * never from inside this call. */
tg_upconn *upconn_start(worker *w, const tg_uptarget *t, const tg_buf *head,
                        const struct iovec *body, int nbody, long connect_ms,
                        const tg_upconn_cb *cb, void *ud);
/* Opens a connection to t with no round, for the pool: its TCP connect
 * and TLS handshake (https only), bounded by connect_ms, so that the
 * first requests find a connection and a TLS session to resume
 * (upstream_warm). cb->done(ud, rc) when it is pooled (CURLE_OK) or not
 * (cb->why first), also at the worker's end; line and body are never
 * called. False: nothing started (not https, a connection to t already
 * open, no socket). */
bool upconn_warm(worker *w, const tg_uptarget *t, long connect_ms, const tg_upconn_cb *cb,
                 void *ud);
/* The caller ends the round early: done is not called; the connection is
 * closed (mid-answer, it cannot carry another). */
void upconn_cancel(worker *w, tg_upconn *c);
/* A paused round reads again (the bytes it left come first). */
void upconn_unpause(worker *w, tg_upconn *c);
/* Every byte of the body went out: the caller may free its pieces. */
bool upconn_sent_all(const tg_upconn *c);
/* A connection still being set up (TCP, then TLS) past its connect_ms at t. */
bool upconn_connect_late(const tg_upconn *c, uint64_t t);

/* The loop's side: an epoll event for tag (K_UPCONN), the completions
 * upconn_start deferred, idle connections past their age at t, and the
 * worker's end (every connection closed). */
void upconn_event(worker *w, uint64_t tag, uint32_t events);
void upconn_run_due(worker *w);
/* Completions or reads wait for upconn_run_due: the loop must not sleep. */
bool upconn_has_due(const worker *w);
void upconn_sweep(worker *w, uint64_t t);
void upconn_free_all(worker *w);

#endif
