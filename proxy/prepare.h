/* prepare.h -- a request's body prepared for its route (proxy/prepare.c).
 * Above proxy/bridges.h, below proxy/upstream.h. Each int function returns
 * 0, or -1 with an error answer in r. */
#ifndef TG_PREPARE_H
#define TG_PREPARE_H

#include "proxy/request.h"

/* A chat body: parse, validate, route (by_prefix, else by model), then
 * prepare_route; 1 while the provider fields its replayed calls lost are
 * read from a store on the loop (sig_prefetch: it is dispatched again). */
int prepare_chat(tg_req *r, const tg_route *by_prefix);
/* On a route that keeps signatures, with a store on the loop (Redis): the
 * fields kept for the current turn's calls of body that came without them
 * are read in one fetch; 1 while it is out (the caller suspends r), 0
 * when there is nothing to read (also every later time). */
int sig_prefetch(tg_req *r, const tg_route *route, const json_t *body);
/* Run the request stages for `route` over the client's body and keep the
 * bytes to send (r->up.body, r->up.tools); again from the original bytes
 * on a fallback. */
int prepare_route(tg_req *r, const tg_route *route);
/* An agent API's body (r->prep.api): 0 when it became a chat body (the
 * chat way follows), 1 when the route's provider takes it as it is
 * (r->route set; pass_only: an endpoint with no chat form), 2 while what
 * it names is read from a store on the loop (it is dispatched again then),
 * -1 with an answer in r. */
int prepare_bridged(tg_req *r, const tg_route *by_prefix, bool pass_only);
/* discovery_embeddings' calls of this request: counted, and a fallback
 * to BM25 logged once per cause and worker (r->prep.embed_from set). */
void embed_report(tg_req *r);
/* The opaque fields (thought signatures) of the calls the answer gave the
 * agent, into the item store, so that a replay without them gets them
 * back (prepare_route). Once a request; any time after the answer is made. */
void keep_signatures(tg_req *r);
/* A body passed as it came: the client's bytes are the upstream body. */
void prepare_plain(tg_req *r);

#endif
