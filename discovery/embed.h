/* embed.h -- search_tools' semantic rank: cosine over embeddings of the
 * catalog and the query, from the route's embeddings endpoint.
 *
 * Internal to discovery/. The network is ctx->embedder's (discovery.h);
 * everything here is a function over JSON, tested with a fake embedder.
 */
#ifndef TG_DISC_EMBED_H
#define TG_DISC_EMBED_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tg_ctx;

/* Semantic ranking (discovery/embed.c). search_tools also ranks the
 * catalog by the cosine of embeddings that an OpenAI-compatible
 * POST /v1/embeddings returns, and fuses that rank with BM25's. The network
 * is the caller's: proxy/ sets ctx->embedder to a libcurl client of the
 * named route, tests to a fake. Discovery reports what happened into the
 * embedder (calls, fallbacks and their causes); any failure falls back to
 * BM25 for that search, never fails a request. */
typedef enum {
    TG_EMB_TRANSPORT,  /* no connection, or the transfer broke */
    TG_EMB_TIMEOUT,
    TG_EMB_STATUS,     /* a non-2xx answer */
    TG_EMB_TOO_BIG,    /* the answer passed TG_EMBED_ANSWER_MAX */
    TG_EMB_MALFORMED,  /* not JSON, or not {data:[{index, embedding:[numbers]}]} */
    TG_EMB_DIMENSION,  /* vectors of different or too many dimensions */
    TG_EMB_COUNT,      /* not one vector per input */
    TG_EMB_NO_ROUTE,   /* the named route is gone (a reload) */
    TG_EMB_N
} tg_embed_fail;

#define TG_EMBED_ANSWER_MAX (32u << 20) /* bytes of one embeddings answer */
#define TG_EMBED_DIM_MAX 8192           /* dimensions of one vector */

typedef struct tg_embedder {
    /* POST body ({model, input: [strings]}, borrowed) to the embeddings
     * endpoint; the answer's parsed JSON (new reference), or NULL with
     * *why set. Must itself stop reading past TG_EMBED_ANSWER_MAX. */
    json_t *(*post)(struct tg_embedder *self, json_t *body, tg_embed_fail *why);
    void *ud;
    /* filled by discovery, per request */
    unsigned calls;      /* posts made */
    unsigned fallbacks;  /* searches ranked by BM25 alone because of a failure */
    unsigned causes;     /* bit (1u << tg_embed_fail) for each cause seen */
    tg_embed_fail cause; /* the failure's (one a request: no tries after it) */
    bool failed;         /* a post failed: no more tries in this request */
} tg_embedder;

/* The cause's name for logs and tests ("timeout", "status", ...). */
const char *tg_embed_fail_name(tg_embed_fail why);

#define TG_EMBED_BATCH 64      /* inputs of one embeddings call */
#define TG_EMBED_TEXT_MAX 2048 /* bytes of one tool's or query's text */
/* catalog texts one request may have embedded: a larger catalog is ranked
 * by BM25 alone (cause too_big), 64 calls at most a request */
#define TG_EMBED_CATALOG_MAX 4096
#define TG_EMBED_CACHE_KIND "embed" /* the catalog's vectors in ctx->cache */

/* With route and model (discovery_embeddings = ROUTE:MODEL, NULL: off):
 * for each of the nq phrasings q[], the catalog's `depth` tools of highest
 * cosine (those whose mask[i] is set, mask NULL: all) add 1 / (k + rank)
 * to rrf[tool], rank from 1: reciprocal rank fusion with what BM25 put
 * there. The catalog (the derivation d, borrowed) is embedded once per
 * (catalog, route, model) and kept in ctx->cache. Returns 1 when semantic
 * ranking is off for the request, 0 when it was fused, -1 when it failed
 * (reported in ctx->embedder; rrf untouched: BM25 alone ranks). */
int tg_disc_embed_fuse(const struct tg_ctx *ctx, const char *route, const char *model, json_t *d,
                       const char **q, size_t nq, const unsigned char *mask, size_t depth,
                       double k, double *rrf);

/* The catalog's vectors ahead of its searches, by a caller that embeds
 * them without blocking (proxy/embed_wait.c): the worker-cache key of
 * (catalog, route, model), every tool's text (a new array of strings, one
 * per catalog tool) and the cache value of n unit vectors of dim floats
 * ({"dim": D, "v": packed}). tg_disc_embed_fuse finds such a value in
 * ctx->cache, or in ctx->disc_state's "embed" for this request alone. */
uint64_t tg_disc_embed_catalog_key(const char *route, const char *model, json_t *d);
json_t *tg_disc_embed_catalog_texts(json_t *d);
json_t *tg_disc_embed_pack(const float *all, size_t n, size_t dim);
/* A search's phrasings as its one call sends them (a new array). */
json_t *tg_disc_embed_query_texts(const char **q, size_t nq);

/* Parse one embeddings answer ({data: [{index, embedding: [numbers]}]})
 * for n inputs into unit vectors, out[n * *dim] (malloc'd, the caller
 * frees). want_dim 0 takes the answer's dimension, else it must match.
 * NULL with *why set when the answer is not what was asked. For tests. */
float *tg_disc_embed_parse(json_t *answer, size_t n, size_t want_dim, size_t *dim,
                           tg_embed_fail *why);

#endif
