/* embed_wait.h -- discovery's embeddings off the worker's critical path
 * (issue 28 part 2).
 *
 * A request with discovery_embeddings whose catalog's vectors are not in
 * the worker cache waits for them before it goes upstream: the catalog's
 * calls run on the worker's multi handle, TG_EMBED_BATCH texts a call and
 * a few at once, while the worker serves others; a second request over the
 * same catalog joins the first's work (one in-flight table a worker, keyed
 * like the cache). Every call of a request, the catalog's and its searches'
 * queries, shares one time budget (embed_budget_left_ms); what runs past it
 * falls back to BM25, counted as any failure. A round's searches, whole or
 * streamed, have their phrasings embedded the same way before they are
 * answered.
 */
#ifndef TG_EMBED_WAIT_H
#define TG_EMBED_WAIT_H

#include <curl/curl.h>
#include <stdbool.h>

#include "core/buf.h"
#include "proxy/request.h"

/* 1 when r waits for its catalog's vectors (the caller suspends it; it is
 * resumed when they are in, or when they failed, with r->prep.embed_ready
 * set); 0 when there is nothing to wait for (also on every later call). */
int embed_wait_catalog(tg_req *r);

/* A whole round's answer (r->up.resp) whose search_tools calls will embed
 * texts not embedded yet: they are embedded on the loop (one call), and
 * cont(r) runs when they are in or failed; 1 then, 0 when there is nothing
 * to wait for. */
int embed_wait_queries(tg_req *r, void (*cont)(tg_req *r));
/* The same for a streamed round that has ended (its stream repair holds
 * its calls, tg_stream_round_message): run before tg_stream_end answers
 * them. */
int embed_wait_stream(tg_req *r, void (*cont)(tg_req *r));
/* The answer to an embeddings body whose every input was embedded so
 * (embed_wait_queries), a new reference; NULL when one is missing. */
json_t *embed_known_answer(tg_req *r, json_t *body);

/* An easy handle of w's multi ended with rc: true when it was one of the
 * catalogs' calls (handled here), false for an upstream round's. */
bool embed_wait_done(worker *w, CURL *easy, CURLcode rc);

/* The worker stops: its catalogs' calls end, their requests let go. */
void embed_wait_free(worker *w);

/* The request's embeddings budget: begun at its first call (the lesser
 * of the embeddings route's ttfb_timeout, its timeout and
 * TG_EMBED_TIMEOUT_MAX_MS), what is left of it in ms (<= 0: spent). */
long embed_budget_left_ms(tg_req *r);

/* The embeddings route of r's discovery_embeddings, its URL and
 * Authorization header line (see prepare.c's embed_post for whose key),
 * or NULL when no such route is configured. */
const tg_route *embed_target(tg_req *r, tg_buf *url, tg_buf *auth);

#endif
