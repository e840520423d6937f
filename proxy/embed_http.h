/* embed_http.h -- a blocking libcurl client of an OpenAI-shaped embeddings
 * endpoint (POST {model, input} -> {data: [{index, embedding}]}), for
 * discovery's semantic rank (discovery/embed.c): the proxy's embedder of
 * a route, and the eval's (make eval with TG_EVAL_EMBED_URL).
 */
#ifndef TG_EMBED_HTTP_H
#define TG_EMBED_HTTP_H

#include <curl/curl.h>
#include <jansson.h>

#include "discovery/embed.h"

#define TG_EMBED_TIMEOUT_MAX_MS 5000 /* the proxy's calls block a worker: never longer */

/* POST body (borrowed) to url with the header auth ("Authorization: Bearer
 * ...", or NULL). *easy is a handle kept between calls (created when NULL;
 * the caller cleans it up), so that the connection is reused. The answer is
 * read up to TG_EMBED_ANSWER_MAX bytes, within timeout_ms (<= 0:
 * TG_EMBED_TIMEOUT_MAX_MS). Returns its JSON (new reference), or NULL with
 * *why set. */
json_t *tg_embed_http(CURL **easy, const char *url, const char *auth, long connect_ms,
                      long timeout_ms, json_t *body, tg_embed_fail *why);

#endif
