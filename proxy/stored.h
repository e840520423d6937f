/* stored.h -- the Responses API's stored-response endpoints (GET, DELETE,
 * input_items, cancel of /v1/responses/{id}) answered from the store on a
 * route that bridges the API (proxy/stored.c). Above proxy/bridges.h,
 * below proxy/front.c. */
#ifndef TG_STORED_H
#define TG_STORED_H

#include "proxy/request.h"

/* For such a request on such a route: -1 with the answer in r, or 1 while
 * a store on the loop reads the record (dispatched again when it is in).
 * 0 for any other request, and for an id the store does not hold when
 * the first route passes the API through (r->route set to it). */
int stored_route(tg_req *r, const tg_route *by_prefix);

#endif
