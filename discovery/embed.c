/* embed.c -- semantic ranking for search_tools (issue 19, part 3).
 *
 * BM25 finds the tools that use the user's words; a user who says "sea
 * level" for a tool that says "elevation" needs meaning, which embeddings
 * carry. With discovery_embeddings = ROUTE:MODEL, each tool of a catalog is
 * embedded once (its name, description and parameter names, TG_EMBED_BATCH
 * texts a call) through the route's OpenAI-shaped POST /v1/embeddings, the
 * unit vectors kept in the worker cache under (catalog, route, model); each
 * search embeds its phrasings in one call, ranks the tools by cosine and
 * adds that rank to BM25's by reciprocal rank fusion, which needs no common
 * scale between a cosine and a BM25 score.
 *
 * A hostile or broken endpoint can send anything: the answer's bytes are
 * bounded by the embedder (TG_EMBED_ANSWER_MAX), its dimension here
 * (TG_EMBED_DIM_MAX, and the same for every vector of a catalog and its
 * queries), its count must be one vector per input, every index in range
 * and once. Whatever fails, the search is BM25's alone; the embedder
 * records the cause and no more calls are made in that request.
 *
 * Cache value: {"dim": D, "v": packed float[n][D]} (unit vectors).
 */
#include "discovery/embed.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/buf.h"
#include "core/cache.h"
#include "core/ctx.h"
#include "core/tg.h"

typedef struct target {  /* discovery_embeddings = ROUTE:MODEL */
    const char *route, *model;
} target;

const char *tg_embed_fail_name(tg_embed_fail why)
{
    static const char *const names[TG_EMB_N] = {
        "transport", "timeout", "status", "too_big", "malformed", "dimension", "count", "no_route",
    };
    return (unsigned)why < TG_EMB_N ? names[why] : "unknown";
}

/* ---- texts ------------------------------------------------------------- */

static json_t *fn_of(json_t *tool)
{
    json_t *fn = json_object_get(tool, "function");
    return json_is_object(fn) ? fn : tool;
}

/* A string of at most TG_EMBED_TEXT_MAX bytes, cut at a UTF-8 boundary. */
static json_t *bounded(const char *s, size_t n)
{
    json_t *v = json_stringn(s, tg_utf8_cut(s, n, TG_EMBED_TEXT_MAX));
    return v ? v : json_string("");
}

/* "name: description Parameters: a, b, c." -- what the tool says about
 * itself, as the agent named it. */
static json_t *tool_text(json_t *d, size_t i)
{
    json_t *fn = fn_of(json_array_get(json_object_get(d, "catalog"), i));
    const char *name = json_string_value(json_array_get(json_object_get(d, "agent"), i));
    const char *desc = json_string_value(json_object_get(fn, "description"));
    json_t *props = json_object_get(json_object_get(fn, "parameters"), "properties");
    tg_buf b = { 0 };
    tg_buf_printf(&b, "%s: %s", name ? name : "", desc ? desc : "");
    const char *key;
    json_t *v;
    size_t k = 0;
    json_object_foreach(props, key, v) {
        if (b.len > TG_EMBED_TEXT_MAX)
            break;
        tg_buf_printf(&b, "%s%s", k++ ? ", " : " Parameters: ", key);
    }
    json_t *r = bounded(b.data ? b.data : "", b.len);
    tg_buf_free(&b);
    return r;
}

/* ---- one call -------------------------------------------------------- */

static void normalize(float *v, size_t dim)
{
    double s = 0;
    for (size_t j = 0; j < dim; j++)
        s += (double)v[j] * v[j];
    if (s <= 0 || !isfinite(s))
        return;
    double inv = 1.0 / sqrt(s);
    for (size_t j = 0; j < dim; j++)
        v[j] = (float)(v[j] * inv);
}

float *tg_disc_embed_parse(json_t *answer, size_t n, size_t want_dim, size_t *dim,
                           tg_embed_fail *why)
{
    json_t *data = json_object_get(answer, "data");
    float *out = NULL;
    unsigned char *seen = tg_calloc(n ? n : 1, 1);
    *dim = want_dim;
    *why = TG_EMB_MALFORMED;
    if (!json_is_array(data))
        goto fail;
    if (json_array_size(data) != n) {
        *why = TG_EMB_COUNT;
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(data, i);
        json_t *vec = json_object_get(item, "embedding");
        json_t *idx = json_object_get(item, "index");
        json_int_t at = idx ? json_integer_value(idx) : (json_int_t)i;
        if (!json_is_array(vec) || (idx && !json_is_integer(idx)))
            goto fail;
        if (at < 0 || (size_t)at >= n || seen[at]) {
            *why = TG_EMB_COUNT;
            goto fail;
        }
        seen[at] = 1;
        size_t len = json_array_size(vec);
        if (!*dim)
            *dim = len;
        if (len != *dim || len == 0 || len > TG_EMBED_DIM_MAX) {
            *why = TG_EMB_DIMENSION;
            goto fail;
        }
        if (!out)
            out = tg_malloc(n * *dim * sizeof *out);  /* both bounded above */
        float *v = out + (size_t)at * *dim;
        for (size_t j = 0; j < len; j++) {
            json_t *x = json_array_get(vec, j);
            if (!json_is_number(x) || !isfinite(json_number_value(x)))
                goto fail;
            v[j] = (float)json_number_value(x);
        }
        normalize(v, *dim);
    }
    if (!out)
        goto fail;  /* n == 0: nothing was asked */
    free(seen);
    return out;
fail:
    free(seen);
    free(out);
    return NULL;
}

/* Embed texts (borrowed array of strings) in one call. */
static float *embed_call(const struct tg_ctx *ctx, const target *tg, json_t *texts,
                         size_t want_dim, size_t *dim, tg_embed_fail *why)
{
    tg_embedder *e = ctx->embedder;
    json_t *body = json_pack("{sssO}", "model", tg->model, "input", texts);
    json_t *ans = NULL;
    float *v = NULL;
    *why = TG_EMB_MALFORMED;
    if (body) {  /* NULL only for a model name that is not UTF-8 */
        e->calls++;
        ans = e->post(e, body, why);
    }
    if (ans)
        v = tg_disc_embed_parse(ans, json_array_size(texts), want_dim, dim, why);
    json_decref(ans);
    json_decref(body);
    return v;
}

/* ---- the catalog's vectors (cached) ---------------------------------- */

uint64_t tg_disc_embed_catalog_key(const char *route, const char *model, json_t *d)
{
    route = route ? route : "";
    json_int_t dk = json_integer_value(json_object_get(d, "key"));
    uint64_t h = tg_hash64(&dk, sizeof dk, 0x74676d6265640001ull);
    h = tg_hash64(route, strlen(route) + 1, h);
    return tg_hash64(model, strlen(model), h);
}

json_t *tg_disc_embed_catalog_texts(json_t *d)
{
    size_t n = json_array_size(json_object_get(d, "catalog"));
    json_t *texts = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(texts, tool_text(d, i));
    return texts;
}

json_t *tg_disc_embed_pack(const float *all, size_t n, size_t dim)
{
    return json_pack("{sIso}", "dim", (json_int_t)dim, "v",
                     json_stringn_nocheck((const char *)all, n * dim * sizeof *all));
}

static json_t *embed_catalog(const struct tg_ctx *ctx, const target *tg, json_t *d,
                             tg_embed_fail *why)
{
    size_t n = json_array_size(json_object_get(d, "catalog")), dim = 0;
    if (n > TG_EMBED_CATALOG_MAX) {
        *why = TG_EMB_TOO_BIG;
        return NULL;
    }
    float *all = NULL;
    for (size_t at = 0; at < n; at += TG_EMBED_BATCH) {
        size_t m = n - at < TG_EMBED_BATCH ? n - at : TG_EMBED_BATCH, got_dim = 0;
        json_t *texts = json_array();
        for (size_t i = at; i < at + m; i++)
            json_array_append_new(texts, tool_text(d, i));
        float *v = embed_call(ctx, tg, texts, dim, &got_dim, why);
        json_decref(texts);
        if (!v) {
            free(all);
            return NULL;
        }
        if (!all) {
            dim = got_dim;
            all = tg_malloc(n * dim * sizeof *all);
        }
        memcpy(all + at * dim, v, m * dim * sizeof *v);
        free(v);
    }
    if (!all)
        return NULL;
    json_t *r = tg_disc_embed_pack(all, n, dim);
    free(all);
    return r;
}

/* From the request's own state (several searches a request, with or
 * without a cache), the worker cache, or the endpoint. */
static json_t *catalog_vectors(const struct tg_ctx *ctx, const target *tg, json_t *d,
                               tg_embed_fail *why)
{
    json_t *cv = json_object_get(ctx->disc_state, "embed");
    if (cv)
        return json_incref(cv);
    uint64_t key = tg_disc_embed_catalog_key(tg->route, tg->model, d);
    cv = tg_cache_get(ctx->cache, TG_EMBED_CACHE_KIND, key);
    if (!cv && (cv = embed_catalog(ctx, tg, d, why)))
        tg_cache_put(ctx->cache, TG_EMBED_CACHE_KIND, key, cv,
                     json_string_length(json_object_get(cv, "v")) + 256);
    if (cv && ctx->disc_state)
        json_object_set(ctx->disc_state, "embed", cv);
    return cv;
}

json_t *tg_disc_embed_query_texts(const char **q, size_t nq)
{
    json_t *texts = json_array();
    for (size_t i = 0; i < nq; i++)
        json_array_append_new(texts, bounded(q[i], strlen(q[i])));
    return texts;
}

/* ---- ranking ----------------------------------------------------------- */

typedef struct near {
    size_t doc;
    float cos;
} near;

/* The catalog's top `depth` by cosine to q (unit vectors), best first. */
static size_t nearest(const float *cat, size_t n, size_t dim, const float *q,
                      const unsigned char *mask, near *top, size_t depth)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (mask && !mask[i])
            continue;
        const float *v = cat + i * dim;
        float c = 0;
        for (size_t j = 0; j < dim; j++)
            c += v[j] * q[j];
        if (kept == depth && c <= top[kept - 1].cos)
            continue;
        size_t at = kept < depth ? kept++ : kept - 1;
        while (at > 0 && top[at - 1].cos < c) {
            top[at] = top[at - 1];
            at--;
        }
        top[at] = (near){ i, c };
    }
    return kept;
}

static int fall_back(tg_embedder *e, tg_embed_fail why)
{
    e->failed = true;
    e->fallbacks++;
    e->causes |= 1u << why;
    e->cause = why;
    return -1;
}

int tg_disc_embed_fuse(const struct tg_ctx *ctx, const char *route, const char *model, json_t *d,
                       const char **q, size_t nq, const unsigned char *mask, size_t depth,
                       double k, double *rrf)
{
    tg_embedder *e = ctx->embedder;
    target tg = { route, model };
    if (!e || !e->post || !model || !nq || !depth)
        return 1;
    if (e->failed) {  /* failed earlier in this request: not again */
        e->fallbacks++;
        return -1;
    }
    tg_embed_fail why = TG_EMB_MALFORMED;
    json_t *cv = catalog_vectors(ctx, &tg, d, &why);
    if (!cv)
        return fall_back(e, why);
    size_t n = json_array_size(json_object_get(d, "catalog"));
    size_t dim = (size_t)json_integer_value(json_object_get(cv, "dim")), got = 0;
    const float *cat = (const float *)json_string_value(json_object_get(cv, "v"));
    json_t *texts = tg_disc_embed_query_texts(q, nq);
    float *qv = embed_call(ctx, &tg, texts, dim, &got, &why);
    json_decref(texts);
    if (!qv || !cat || json_string_length(json_object_get(cv, "v")) != n * dim * sizeof *cat) {
        free(qv);
        json_decref(cv);
        return fall_back(e, qv ? TG_EMB_MALFORMED : why);
    }
    near *top = tg_malloc(depth * sizeof *top);
    for (size_t i = 0; i < nq; i++) {
        size_t m = nearest(cat, n, dim, qv + i * dim, mask, top, depth);
        for (size_t r = 0; r < m; r++)
            rrf[top[r].doc] += 1.0 / (k + (double)r + 1.0);
    }
    free(top);
    free(qv);
    json_decref(cv);
    return 0;
}
