/* upstream.h -- the upstream transfer (proxy/upstream.c): a round's start
 * and stop, curl's completions, retries and timeouts. Above
 * proxy/prepare.h and proxy/upsock.h, below proxy/front.h. */
#ifndef TG_UPSTREAM_H
#define TG_UPSTREAM_H

#include "proxy/request.h"

/* Starts a round: `method` to `url` (copied; may be r->up.url) with the
 * prepared body, on r->w's multi handle, holding a reference. 0, or -1
 * (nothing started). */
int start_upstream(tg_req *r, const char *url, const char *method);
/* Takes the round off the multi handle (its easy handle kept for reuse)
 * and drops its reference. Nothing when no round runs. */
void stop_upstream(tg_req *r);
/* w->accept_encoding, once at the worker's start. */
void upstream_accept_encoding(worker *w);
/* w's proxy settings from the environment, once at the worker's start. */
void upstream_proxy_env(worker *w);
/* The worker's TLS session share and libcurl's built-in CA file; freed
 * after every easy handle of the worker is. */
void upstream_tls_init(worker *w);
void upstream_tls_free(worker *w);
/* A connection to each https upstream of w's routes (upconn_warm), once
 * at the worker's start, a host name's address found first by libcurl
 * on w's multi (upconn_lookup): srv->warming counts those not yet ended. */
void upstream_warm(worker *w);
/* A paused stream's upstream goes on once the client has read enough. */
void maybe_unpause(tg_req *r);

/* The loop's turn: rounds curl finished, retries whose delay passed,
 * upstreams past their ttfb or idle limit at time t (µs, now_us()). */
void check_curl_done(worker *w);
void fire_due_retries(worker *w, uint64_t t);
void time_out_if_late(tg_req *r, uint64_t t);

#endif
