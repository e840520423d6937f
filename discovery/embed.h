/* embed.h -- search_tools' semantic rank: cosine over embeddings of the
 * catalog and the query, from the route's embeddings endpoint.
 *
 * Internal to discovery/. The network is ctx->embedder's (discovery.h);
 * everything here is a function over JSON, tested with a fake embedder.
 */
#ifndef TG_DISC_EMBED_H
#define TG_DISC_EMBED_H

#include <jansson.h>
#include <stddef.h>

#include "discovery.h"

struct tg_ctx;

#define TG_EMBED_BATCH 64      /* inputs of one embeddings call */
#define TG_EMBED_TEXT_MAX 2048 /* bytes of one tool's or query's text */

/* For each of the nq phrasings q[], the catalog's `depth` tools of highest
 * cosine (those whose mask[i] is set, mask NULL: all) add 1 / (k + rank)
 * to rrf[tool], rank from 1: reciprocal rank fusion with what BM25 put
 * there. The catalog (the derivation d, borrowed) is embedded once per
 * (catalog, route, model) and kept in ctx->cache. Returns 1 when semantic
 * ranking is off for the request, 0 when it was fused, -1 when it failed
 * (reported in ctx->embedder; rrf untouched: BM25 alone ranks). */
int tg_disc_embed_fuse(const struct tg_ctx *ctx, json_t *d, const char **q, size_t nq,
                       const unsigned char *mask, size_t depth, double k, double *rrf);

/* Parse one embeddings answer ({data: [{index, embedding: [numbers]}]})
 * for n inputs into unit vectors, out[n * *dim] (malloc'd, the caller
 * frees). want_dim 0 takes the answer's dimension, else it must match.
 * NULL with *why set when the answer is not what was asked. For tests. */
float *tg_disc_embed_parse(json_t *answer, size_t n, size_t want_dim, size_t *dim,
                           tg_embed_fail *why);

#endif
