/* metrics.h -- Prometheus counters and histograms. Each worker writes only
 * its own tg_metrics (relaxed atomics, no locks); GET /metrics sums them. */
#ifndef TG_METRICS_H
#define TG_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "discovery/embed.h"
#include "pipeline/pipeline.h"

typedef struct tg_metrics tg_metrics;
typedef struct tg_metrics_set tg_metrics_set;

tg_metrics_set *tg_metrics_new(int workers);
tg_metrics *tg_metrics_worker(tg_metrics_set *s, int i);
void tg_metrics_free(tg_metrics_set *s);

void tg_metrics_inflight(tg_metrics *m, int delta);
void tg_metrics_upstream_error(tg_metrics *m, long status);
void tg_metrics_retry(tg_metrics *m);
/* n things a bridge left out of one request (hosted tools...). */
void tg_metrics_dropped(tg_metrics *m, size_t n);
void tg_metrics_translated(tg_metrics *m, size_t n);
/* Replayed calls whose opaque fields came back from the store (prepare.c). */
void tg_metrics_signatures_restored(tg_metrics *m, size_t n);
/* An inner discovery round the provider answered with an error. */
void tg_metrics_round_error(tg_metrics *m);
/* A request's embeddings calls and the searches that fell back to BM25
 * for `cause` (discovery_embeddings; TG_EMB_N when none did). */
void tg_metrics_embed(tg_metrics *m, unsigned calls, unsigned fallbacks, tg_embed_fail cause);
/* A bound of the Security section cut something off. */
typedef enum {
    TG_LIMIT_MAX_EVENT,       /* an upstream SSE event past max_event */
    TG_LIMIT_MAX_ANSWER,      /* a whole upstream answer past max_answer */
    TG_LIMIT_HEADER_TIMEOUT,  /* a request head not whole within header_timeout */
    TG_LIMIT_SHUTDOWN,        /* a stream still open at the end of shutdown_grace */
    TG_LIMIT_UPSTREAM_HEAD,   /* upstream headers too large to pass on (UP_HEAD_MAX) */
    TG_LIMIT_N
} tg_limit;
void tg_metrics_limit(tg_metrics *m, tg_limit which);
/* A put or get ("put", "get") the Responses item store could not do. */
void tg_metrics_store_error(tg_metrics *m, const char *op);
/* Times are CLOCK_MONOTONIC microseconds; 0 = did not happen. */
void tg_metrics_request_done(tg_metrics *m, const char *route, int status, bool stream,
                             uint64_t t_start, uint64_t t_upstream, uint64_t t_first_byte,
                             uint64_t t_done, const tg_stats *st);
/* Text exposition format; malloc'd. */
char *tg_metrics_render(tg_metrics_set *s, size_t *len);

#endif
