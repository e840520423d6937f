/* embed_http.h -- a libcurl client of an OpenAI-shaped embeddings
 * endpoint (POST {model, input} -> {data: [{index, embedding}]}), for
 * discovery's semantic rank (discovery/embed.c): the proxy's embedder of
 * a route, and the eval's (make eval with TG_EVAL_EMBED_URL).
 */
#ifndef TG_EMBED_HTTP_H
#define TG_EMBED_HTTP_H

#include <curl/curl.h>
#include <jansson.h>

#include "core/buf.h"
#include "discovery/embed.h"

#define TG_EMBED_TIMEOUT_MAX_MS 5000 /* a request's embeddings budget: never longer */

/* One call on an easy handle the caller owns: what it sends, and the
 * answer read so far (at most TG_EMBED_ANSWER_MAX bytes). */
typedef struct tg_embed_call {
    CURL *easy;
    struct curl_slist *headers;
    char *text;
    tg_buf answer;
    int too_big;
} tg_embed_call;

/* Sets e up to POST body (borrowed) to url, with the header auth or none,
 * within connect_ms and timeout_ms (<= 0: TG_EMBED_TIMEOUT_MAX_MS); c must
 * stay where it is until the call ends. -1 when it cannot be sent (c is
 * to be freed then). */
int tg_embed_call_set(tg_embed_call *c, CURL *e, const char *url, const char *auth,
                      long connect_ms, long timeout_ms, json_t *body);
/* The ended call's answer (new reference), or NULL with *why set; frees
 * what c holds (not its easy handle). */
json_t *tg_embed_call_end(tg_embed_call *c, CURLcode rc, tg_embed_fail *why);
void tg_embed_call_free(tg_embed_call *c);

/* Blocking: for tools (test/tools/discovery_eval.c), never on a worker.
 * POST body (borrowed) to url with the header auth ("Authorization: Bearer
 * ...", or NULL). *easy is a handle kept between calls (created when NULL;
 * the caller cleans it up), so that the connection is reused. The answer is
 * read up to TG_EMBED_ANSWER_MAX bytes, within timeout_ms (<= 0:
 * TG_EMBED_TIMEOUT_MAX_MS). Returns its JSON (new reference), or NULL with
 * *why set. */
json_t *tg_embed_http(CURL **easy, const char *url, const char *auth, long connect_ms,
                      long timeout_ms, json_t *body, tg_embed_fail *why);

#endif
