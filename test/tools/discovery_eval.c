/* discovery_eval.c -- how well search_tools finds the right tool, and what
 * discovery saves upstream. `make eval`.
 *
 *   build/test/discovery_eval [-v] [-r] [-t] [-e] [-c] [-g] [queries.json]
 *
 * Queries (test/discovery/queries.json) are tasks phrased the way a user
 * would, each labeled with the tool (server + name, from
 * $TG_SHARED/corpus/tools/) that should be found, and with its half: the
 * servers sorted by name alternate tune, test, tune, ... (index 0 is tune),
 * a rule fixed before any tuning. The ranker may be tuned on the tune half;
 * the test half's figures are the honest ones, and its misses are never
 * printed (-v prints the tune half's misses; -t counts the tune half alone,
 * to decide a change before the test half is looked at once).
 *
 * Catalogs are the tool lists of corpus/requests/big-{100,400,1000}.json;
 * when a query's target is not among them, it takes the place of the
 * catalog's last tool, so every query is counted at every size against the
 * same number of distractors. Everything runs through the real request
 * pipeline (dialect openai, discovery on) and tg_discovery_search, i.e. what
 * the model would get.
 *
 * Prints R@1/3/5/10 and MRR@10 per half and size; with -e, how many turns
 * end with the right tool called when the scripted model runs the whole
 * protocol (end_to_end), and what successor hints do for two-step tasks
 * (chains_eval; -c: that alone); then (unless -r) the tools
 * bytes sent upstream with and without discovery, the cost of the
 * discovery stage cold and cached and of a search alone per size. Exits 1
 * when a query or catalog cannot be read.
 *
 * With TG_EVAL_EMBED_URL (an OpenAI-compatible base such as
 * http://127.0.0.1:11434/v1), TG_EVAL_EMBED_MODEL and optionally
 * TG_EVAL_EMBED_KEY, search_tools also ranks by that model's embeddings
 * (discovery_embeddings, discovery/embed.c) and the figures are the fused
 * ones. Every text is sent once (eval_post keeps its vector), so a run costs
 * the corpus's tools and queries, not 1,554 catalogs.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/cache.h"
#include "pipeline/pipeline.h"
#include "discovery/hints.h"
#include "discovery/index.h"
#include "proxy/embed_http.h"

static char shared[1024];

/* ---- the embeddings endpoint of TG_EVAL_EMBED_URL --------------------------
 * An embedder (discovery.h) that sends each text once: its vector is kept
 * (as JSON) and the answer for a call is put together from what is kept. */
typedef struct eval_embedder {
    tg_embedder e;
    char url[1024], auth[1024];
    CURL *easy;
    json_t *memo;  /* text -> embedding array */
    unsigned sent, failed;
} eval_embedder;

static json_t *eval_post(tg_embedder *self, json_t *body, tg_embed_fail *why)
{
    eval_embedder *ev = (eval_embedder *)self;
    json_t *in = json_object_get(body, "input"), *miss = json_array();
    for (size_t i = 0; i < json_array_size(in); i++) {
        const char *t = json_string_value(json_array_get(in, i));
        if (!json_object_get(ev->memo, t))
            json_array_append(miss, json_array_get(in, i));
    }
    if (json_array_size(miss)) {
        json_t *req = json_pack("{sOsO}", "model", json_object_get(body, "model"), "input", miss);
        json_t *ans = tg_embed_http(&ev->easy, ev->url, *ev->auth ? ev->auth : NULL, 10000, 120000,
                                    req, why);
        json_t *data = json_object_get(ans, "data");
        ev->sent += (unsigned)json_array_size(miss);
        for (size_t k = 0; k < json_array_size(data); k++) {
            json_t *item = json_array_get(data, k);
            json_t *t = json_array_get(miss, (size_t)json_integer_value(json_object_get(item, "index")));
            if (json_is_string(t) && json_is_array(json_object_get(item, "embedding")))
                json_object_set(ev->memo, json_string_value(t), json_object_get(item, "embedding"));
        }
        json_decref(req);
        if (!ans) {
            ev->failed++;
            json_decref(miss);
            return NULL;
        }
        json_decref(ans);
    }
    json_decref(miss);
    json_t *data = json_array();
    for (size_t i = 0; i < json_array_size(in); i++) {
        json_t *v = json_object_get(ev->memo, json_string_value(json_array_get(in, i)));
        if (!v)
            break;  /* the endpoint left it out: parse says "count" */
        json_array_append_new(data, json_pack("{sIsO}", "index", (json_int_t)i, "embedding", v));
    }
    return json_pack("{so}", "data", data);
}

static eval_embedder *eval_embedder_from_env(void)
{
    const char *url = getenv("TG_EVAL_EMBED_URL"), *model = getenv("TG_EVAL_EMBED_MODEL");
    const char *key = getenv("TG_EVAL_EMBED_KEY");
    if (!url || !*url)
        return NULL;
    if (!model || !*model) {
        fprintf(stderr, "discovery_eval: TG_EVAL_EMBED_URL needs TG_EVAL_EMBED_MODEL\n");
        exit(1);
    }
    eval_embedder *ev = tg_calloc(1, sizeof *ev);
    ev->e.post = eval_post;
    size_t n = strlen(url);
    while (n > 0 && url[n - 1] == '/')
        n--;
    snprintf(ev->url, sizeof ev->url, "%.*s/embeddings", (int)n, url);
    if (key && *key)
        snprintf(ev->auth, sizeof ev->auth, "Authorization: Bearer %s", key);
    ev->memo = json_object();
    return ev;
}

static eval_embedder *embedder;  /* set once in main, before any search */

static json_t *load(const char *rel)
{
    char path[2048];
    json_error_t e;
    snprintf(path, sizeof path, "%s/%s", shared, rel);
    json_t *v = json_load_file(path, 0, &e);
    if (!v)
        fprintf(stderr, "discovery_eval: %s: %s\n", path, e.text);
    return v;
}

/* corpus/requests/big-N.json (a new reference), or NULL. */
static json_t *load_big(int n)
{
    char rel[64];
    snprintf(rel, sizeof rel, "corpus/requests/big-%d.json", n);
    return load(rel);
}

static const char *fname(json_t *tool)
{
    return json_string_value(json_object_get(json_object_get(tool, "function"), "name"));
}

/* The corpus tool a query names (its "server" and "tool"), or NULL. */
static json_t *query_tool(json_t *corpus, json_t *qq)
{
    const char *server = json_string_value(json_object_get(qq, "server"));
    const char *tname = json_string_value(json_object_get(qq, "tool"));
    json_t *tool = NULL, *list = json_object_get(corpus, server ? server : "");
    for (size_t i = 0; i < json_array_size(list); i++)
        if (tname && strcmp(fname(json_array_get(list, i)), tname) == 0)
            tool = json_array_get(list, i);
    return tool;
}

static const char *fdesc(json_t *tool)
{
    const char *s =
        json_string_value(json_object_get(json_object_get(tool, "function"), "description"));
    return s ? s : "";
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Position of the corpus tool (server, name) in a catalog: the big-N files
 * prefix "server__" where two servers share a name. -1 when absent. */
static long find_target(json_t *catalog, const char *server, json_t *tool)
{
    char pref[512];
    snprintf(pref, sizeof pref, "%s__%s", server, fname(tool));
    for (size_t i = 0; i < json_array_size(catalog); i++) {
        json_t *t = json_array_get(catalog, i);
        const char *n = fname(t);
        if (n && (strcmp(n, fname(tool)) == 0 || strcmp(n, pref) == 0) &&
            strcmp(fdesc(t), fdesc(tool)) == 0)
            return (long)i;
    }
    return -1;
}

static int name_used(json_t *catalog, const char *n, size_t skip)
{
    for (size_t i = 0; i < json_array_size(catalog); i++)
        if (i != skip && strcmp(fname(json_array_get(catalog, i)), n) == 0)
            return 1;
    return 0;
}

/* The catalog for one query: base, or base with its tool at `slot`
 * replaced by the target (renamed server__name if the name is taken). Sets
 * *want. */
static json_t *catalog_at(json_t *base, const char *server, json_t *tool, size_t slot, char *want,
                          size_t wn)
{
    long at = find_target(base, server, tool);
    if (at >= 0) {
        snprintf(want, wn, "%s", fname(json_array_get(base, (size_t)at)));
        return json_incref(base);
    }
    json_t *c = json_copy(base);
    size_t last = slot;
    json_t *t = json_deep_copy(tool);
    if (name_used(c, fname(tool), last)) {
        char n[512];
        snprintf(n, sizeof n, "%s__%s", server, fname(tool));
        json_object_set_new(json_object_get(t, "function"), "name", json_string(n));
    }
    snprintf(want, wn, "%s", fname(t));
    json_array_set_new(c, last, t);
    return c;
}

/* ... in place of the catalog's last tool. */
static json_t *catalog_for(json_t *base, const char *server, json_t *tool, char *want, size_t wn)
{
    return catalog_at(base, server, tool, json_array_size(base) - 1, want, wn);
}

static json_t *body_with(json_t *tools, const char *text)
{
    return json_pack("{sss[{ssss}]sO}", "model", "m", "messages", "role", "user", "content",
                     text, "tools", tools);
}

static json_t *body_for(json_t *tools)
{
    return body_with(tools, "hello");
}

/* Run the request stages with discovery `mode`; returns the ctx (caller
 * clears it) and the body's upstream tools bytes in *out. */
static void run_pipeline(tg_rules_set *rules, tg_cache *cache, json_t *tools, tg_ctx *ctx)
{
    tg_error err;
    tg_ctx_init(ctx, "eval", rules, NULL);
    ctx->cache = cache;
    ctx->embedder = embedder ? &embedder->e : NULL;
    json_t *body = body_for(tools);
    if (tg_pipeline_request(body, ctx, &err))
        fprintf(stderr, "discovery_eval: pipeline refused: %s\n", err.message);
    json_decref(body);
}

/* Ranks of every query's target in one catalog size: rank[q] is 0-based,
 * or -1 when the target is not in the top EVAL_DEPTH. */
#define EVAL_DEPTH 10

typedef struct tally {
    size_t n, hit[4];  /* R@1, 3, 5, 10 */
    double rr;         /* sum of 1/rank (0 beyond EVAL_DEPTH) */
} tally;

static void tally_add(tally *t, int rank)
{
    static const int at[4] = { 1, 3, 5, 10 };
    t->n++;
    for (int k = 0; k < 4; k++)
        t->hit[k] += rank >= 0 && rank < at[k];
    if (rank >= 0)
        t->rr += 1.0 / (rank + 1);
}

static void tally_row(const char *half, int size, const tally *t)
{
    double n = t->n ? (double)t->n : 1.0;
    printf("| %-4s | %5d | %3zu | %.3f | %.3f | %.3f | %.3f | %.3f |\n", half, size, t->n,
           t->hit[0] / n, t->hit[1] / n, t->hit[2] / n, t->hit[3] / n, t->rr / n);
}

/* -v prints misses of the tuning half only: the test half's misses must
 * never guide the ranker (docs/discovery_quality.md); -t leaves the
 * test half out altogether, for deciding a change before its one look. */
static int tune_only;

static int eval_size(int size, json_t *queries, json_t *corpus, tg_rules_set *rules,
                     tg_cache *cache, int verbose, tally out[2])
{
    json_t *big = load_big(size);
    if (!big)
        return -1;
    json_t *base = json_object_get(big, "tools");
    for (size_t q = 0; q < json_array_size(queries); q++) {
        json_t *qq = json_array_get(queries, q);
        const char *text = json_string_value(json_object_get(qq, "query"));
        const char *server = json_string_value(json_object_get(qq, "server"));
        const char *tname = json_string_value(json_object_get(qq, "tool"));
        const char *half = json_string_value(json_object_get(qq, "half"));
        json_t *tool = query_tool(corpus, qq);
        int test = half && strcmp(half, "test") == 0;
        if (!text || !tool || !half || (!test && strcmp(half, "tune") != 0)) {
            fprintf(stderr, "discovery_eval: query %zu: no tool %s/%s or no half\n", q,
                    server ? server : "?", tname ? tname : "?");
            continue;
        }
        if (test && tune_only)
            continue;
        char want[512];
        json_t *cat = catalog_for(base, server, tool, want, sizeof want);
        tg_ctx ctx;
        run_pipeline(rules, cache, cat, &ctx);
        json_t *r = tg_discovery_search(&ctx, text, EVAL_DEPTH);
        json_t *res = json_object_get(r, "results");
        int rank = -1;
        for (size_t i = 0; i < json_array_size(res) && rank < 0; i++) {
            const char *got = json_string_value(json_object_get(json_array_get(res, i), "name"));
            if (got && strcmp(tg_schema_agent_name(&ctx, got), want) == 0)
                rank = (int)i;
        }
        tally_add(&out[test], rank);
        if (verbose && !test && rank != 0) {
            printf("  [%d] miss@%d %-60s want %s got", size, rank, text, want);
            for (size_t i = 0; i < json_array_size(res) && i < 3; i++)
                printf(" %s", json_string_value(json_object_get(json_array_get(res, i), "name")));
            printf("\n");
        }
        json_decref(r);
        if (embedder)  /* one embedder for every request: a failure stays with its own */
            embedder->e.failed = false;
        tg_ctx_clear(&ctx);
        json_decref(cat);
    }
    json_decref(big);
    return 0;
}

static void bytes_row(int size, tg_rules_set *on, tg_rules_set *off, tg_rules_set *bare)
{
    char plain[32];
    json_t *big = load_big(size);
    if (!big)
        return;
    tg_ctx a, b;
    tg_error err;
    json_t *body = json_deep_copy(big);
    tg_ctx_init(&a, "eval", off, NULL);
    if (tg_pipeline_request(body, &a, &err))  /* the dialect may refuse that many tools */
        snprintf(plain, sizeof plain, "refused");
    else
        snprintf(plain, sizeof plain, "%zu", a.stats.tools_bytes_out);
    json_decref(body);
    tg_ctx c;
    run_pipeline(on, NULL, json_object_get(big, "tools"), &b);
    run_pipeline(bare, NULL, json_object_get(big, "tools"), &c);
    printf("| big-%-4d | %4u -> %2u | %9zu | %9s | %7zu (%4.1f%%) | %5zu (%4.2f%%) |\n", size,
           b.stats.tools_in, b.stats.tools_out, b.stats.tools_bytes_in, plain,
           b.stats.tools_bytes_out,
           100.0 * (double)b.stats.tools_bytes_out /
               (double)(b.stats.tools_bytes_in ? b.stats.tools_bytes_in : 1),
           c.stats.tools_bytes_out,
           100.0 * (double)c.stats.tools_bytes_out /
               (double)(c.stats.tools_bytes_in ? c.stats.tools_bytes_in : 1));
    tg_ctx_clear(&c);
    tg_ctx_clear(&a);
    tg_ctx_clear(&b);
    json_decref(big);
}

/* The discovery stage alone on big-1000 (after hygiene and schema), with no
 * cache, and with a warm cache. */
static void timing(tg_rules_set *on)
{
    json_t *big = load("corpus/requests/big-1000.json");
    if (!big)
        return;
    tg_cache *cache = tg_cache_new(64, 0);
    double cold = 0, warm = 0;
    const int reps = 5;
    for (int pass = 0; pass < 2; pass++)
        for (int r = 0; r < reps + 1; r++) {
            tg_ctx ctx;
            tg_error err;
            tg_ctx_init(&ctx, "eval", on, NULL);
            ctx.cache = pass ? cache : NULL;
            json_t *body = json_deep_copy(big);
            ctx.tools = json_incref(json_object_get(body, "tools"));
            tg_hygiene_stage(body, &ctx, &err);
            tg_schema_stage(body, &ctx, &err);
            double t0 = now_ms();
            tg_discovery_stage(body, &ctx, &err);
            double dt = now_ms() - t0;
            if (r > 0)  /* the first run of each pass warms up (and fills the cache) */
                *(pass ? &warm : &cold) += dt / reps;
            json_decref(body);
            tg_ctx_clear(&ctx);
        }
    printf("\ndiscovery stage on big-1000: cold %.2f ms, cached %.2f ms (mean of %d)\n", cold, warm,
           reps);
    tg_cache_free(cache);
    json_decref(big);
}

/* The search alone (tg_dindex_search over a built index) at each size,
 * every query's text once per pass, 5 passes: what a search_tools call
 * costs once the catalog's index is in the cache. */
static void search_timing(json_t *queries)
{
    static const int sizes[] = { 100, 400, 1000 };
    printf("\nsearch alone (tg_dindex_search, %zu queries x 5):", json_array_size(queries));
    for (int si = 0; si < 3; si++) {
        json_t *big = load_big(sizes[si]);
        if (!big)
            return;
        json_t *idx = tg_dindex_build(json_object_get(big, "tools"));
        size_t hits[EVAL_DEPTH], n = 0;
        double t0 = now_ms();
        for (int pass = 0; pass < 5; pass++)
            for (size_t q = 0; q < json_array_size(queries); q++, n++)
                tg_dindex_search(idx, json_string_value(json_object_get(json_array_get(queries, q),
                                                                        "query")),
                                 hits, NULL, EVAL_DEPTH);
        printf(" big-%d %.1f us%s", sizes[si], n ? (now_ms() - t0) * 1000.0 / (double)n : 0.0,
               si < 2 ? "," : "\n");
        json_decref(idx);
        json_decref(big);
    }
}

/* big-1000 with a history of `n` results of hidden tools (the agent called
 * them by name; each result names an issue and a path). */
static json_t *long_history(json_t *big, int n)
{
    json_t *tools = json_object_get(big, "tools");
    json_t *msgs = json_pack("[{ssss}]", "role", "user", "content",
                             "go through the open issues and fix the files they name");
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "call%d", i);
        json_array_append_new(msgs, json_pack("{sssns[{sssss{ssss}}]}", "role", "assistant",
                                              "content", "tool_calls", "id", id, "type",
                                              "function", "function", "name",
                                              fname(json_array_get(tools, (size_t)(i * 17 % 1000))),
                                              "arguments", "{\"owner\":\"acme\",\"repo\":\"web\"}"));
        json_array_append_new(msgs, json_pack("{ssssss}", "role", "tool", "tool_call_id", id,
                                              "content", "[{\"number\":42,\"title\":\"crash on "
                                              "login\",\"path\":\"src/auth.c\"}]"));
    }
    return json_pack("{sssosO}", "model", "m", "messages", msgs, "tools", tools);
}

/* The request stages with successor hints on a 50-result history: off,
 * on with every note computed (the catalog's derivation cached), and on
 * with the notes recalled from the worker cache (the next turn). */
static void hint_timing(tg_rules_set *on)
{
    json_t *big = load_big(1000);
    if (!big)
        return;
    tg_rules_set off = *on;
    off.disc.hints = 0;
    const int reps = 5;
    double t[3] = { 0, 0, 0 };
    for (int r = 0; r < reps; r++) {
        tg_cache *cache = tg_cache_new(4096, 0);
        for (int pass = -1; pass < 3; pass++) {  /* -1 fills the derivation */
            tg_ctx ctx;
            tg_error err;
            tg_ctx_init(&ctx, "eval", pass <= 0 ? &off : on, NULL);
            ctx.cache = cache;
            json_t *body = long_history(big, 50);
            double t0 = now_ms();
            tg_pipeline_request(body, &ctx, &err);
            if (pass >= 0)
                t[pass] += (now_ms() - t0) / reps;
            json_decref(body);
            tg_ctx_clear(&ctx);
        }
        tg_cache_free(cache);
    }
    printf("request stages on big-1000 with 50 results of hidden tools: hints off %.2f ms, "
           "on %.2f ms (every note computed), %.2f ms (notes recalled) (mean of %d)\n",
           t[0], t[1], t[2], reps);
    json_decref(big);
}

/* ---- -g: fit the ranker's knobs on the tune half ------------------------
 * Straight on the index (what search_tools ranks with), over the tune half
 * only; prints, for every value of every knob, the mean over the three
 * sizes of R@5 + MRR@10, then each size's (a knob whose best differs by
 * catalog size shows there). The test half is never read here. */
/* One knob at a time around the defaults (a coordinate sweep): knob k takes
 * each of its values with the others at their defaults. */
typedef struct knob {
    const char *name;
    size_t off;
    double v[7];
} knob;
#define KNOB(n, f, ...) { n, offsetof(tg_dindex_params, f), { __VA_ARGS__, -1 } }
static const knob knobs[] = {
    KNOB("w.name", w[TG_DF_NAME], 1, 1.5, 2, 3, 5),
    KNOB("w.param", w[TG_DF_PARAM], 0.6, 1.2, 2, 3),
    KNOB("w.pdesc", w[TG_DF_PDESC], 0.1, 0.2, 0.4, 0.8),
    KNOB("b", b, 0.6, 0.75, 0.9, 1.0),
    KNOB("k1", k1, 0.8, 1.2, 2),
    KNOB("name_bonus", name_bonus, 0, 0.25, 0.5, 1),
    KNOB("syn_weight", syn_weight, 0.2, 0.45, 0.7),
    KNOB("verb_weight", verb_weight, 0.5, 0.8, 1),
    KNOB("coverage", coverage, 0, 0.25, 0.5, 1, 2),
    KNOB("name_cover", name_cover, 0, 0.25, 0.5, 1, 2),
    KNOB("prefix_w", prefix_weight, 0, 0.2, 0.4, 0.7),
    KNOB("rerank", rerank, 0, 0.1, 0.25, 0.5, 1),
    KNOB("lex_w", lex_weight, 0, 0.05, 0.1, 0.2, 0.3, 0.45),
    KNOB("vec_w", vec_weight, 0, 0.05, 0.1, 0.2, 0.35, 0.5),
    KNOB("vec_min", vec_min, 0, 0.1, 0.2, 0.3, 0.4),
    KNOB("soft_w", soft_weight, 0, 0.1, 0.2, 0.3, 0.45),
    KNOB("soft_min", soft_min, 0.4, 0.5, 0.6, 0.7),
    KNOB("soft_max", soft_max, 1, 2, 4, 8),
    KNOB("exact_w", exact_w, 0, 0.02, 0.05, 0.1, 0.2, 0.35),
    KNOB("ask_pen", ask_pen, 0, 0.2, 0.5, 0.6, 0.7, 0.85),
    KNOB("exp_w", exp_w, 0, 0.05, 0.1, 0.2, 0.3, 0.45),
    KNOB("exp_syn_w", exp_syn_w, 0, 0.3, 0.45, 0.6, 0.8, 1),
};
#define NKNOBS (sizeof knobs / sizeof knobs[0])

/* TG_EVAL_SWEEP="rerank,lex_w": sweep only these knobs (all when unset). */
static int knob_swept(size_t k)
{
    const char *only = getenv("TG_EVAL_SWEEP");
    size_t l = strlen(knobs[k].name);
    for (const char *p = only; p && *p; p += strcspn(p, ","), p += *p == ',')
        if (strncmp(p, knobs[k].name, l) == 0 && (p[l] == ',' || !p[l]))
            return 1;
    return !only || !*only;
}

static size_t grid_count(void)
{
    size_t c = 0;
    for (size_t k = 0; k < NKNOBS; k++)
        for (size_t j = 0; knob_swept(k) && knobs[k].v[j] >= 0; j++)
            c++;
    return c;
}

static tg_dindex_params grid_point(size_t i, const tg_dindex_params *base, const knob **which)
{
    tg_dindex_params p = *base;
    for (size_t k = 0; k < NKNOBS; k++)
        for (size_t j = 0; knob_swept(k) && knobs[k].v[j] >= 0; j++)
            if (i-- == 0) {
                *(double *)((char *)&p + knobs[k].off) = knobs[k].v[j];
                *which = &knobs[k];
                return p;
            }
    return p;
}

static long catalog_pos(json_t *cat, const char *want)
{
    for (size_t i = 0; i < json_array_size(cat); i++)
        if (strcmp(fname(json_array_get(cat, i)), want) == 0)
            return (long)i;
    return -1;
}

/* TG_EVAL_FOLD="k/n" (or "k/n/held"): the sweep counts only the tune
 * servers whose rank among the tune half's servers (sorted by name) is not
 * k modulo n (with "held": only those that are), to cross-validate a fit
 * by server within the tune half. */
static int fold_skips(json_t *queries, const char *server)
{
    const char *f = getenv("TG_EVAL_FOLD");
    int k, n, used = 0;
    if (!f || sscanf(f, "%d/%d%n", &k, &n, &used) != 2 || n < 2)
        return 0;
    int held = strcmp(f + used, "/held") == 0;
    json_t *seen = json_object();
    for (size_t q = 0; q < json_array_size(queries); q++) {
        json_t *qq = json_array_get(queries, q);
        const char *s = json_string_value(json_object_get(qq, "server"));
        if (s && strcmp(json_string_value(json_object_get(qq, "half")), "tune") == 0 &&
            strcmp(s, server) < 0)
            json_object_set_new(seen, s, json_true());
    }
    int in = (int)(json_object_size(seen) % (size_t)n) == k;
    json_decref(seen);
    return held ? !in : in;
}

static int grid(json_t *queries, json_t *corpus, const tg_dindex_params *base)
{
    static const int sizes[] = { 100, 400, 1000 };
    size_t ng = grid_count();
    double *score = calloc(ng, sizeof *score), *per = calloc(ng * 3, sizeof *per);
    for (int si = 0; si < 3; si++) {
        json_t *big = load_big(sizes[si]);
        if (!big)
            return 1;
        json_t *bt = json_object_get(big, "tools");
        size_t nq = 0;
        for (size_t q = 0; q < json_array_size(queries); q++) {
            json_t *qq = json_array_get(queries, q);
            if (strcmp(json_string_value(json_object_get(qq, "half")), "tune") != 0)
                continue;
            const char *server = json_string_value(json_object_get(qq, "server"));
            json_t *tool = query_tool(corpus, qq);
            if (!tool || fold_skips(queries, server))
                continue;
            char want[512];
            json_t *cat = catalog_for(bt, server, tool, want, sizeof want);
            long at = catalog_pos(cat, want);
            json_t *idx = tg_dindex_build(cat);
            const char *text = json_string_value(json_object_get(qq, "query"));
            for (size_t g = 0; g < ng; g++) {
                const knob *kn;
                tg_dindex_params p = grid_point(g, base, &kn);
                size_t hits[EVAL_DEPTH];
                size_t m = tg_dindex_search_p(idx, text, &p, hits, NULL, EVAL_DEPTH);
                for (size_t i = 0; i < m && i < EVAL_DEPTH; i++)
                    if ((long)hits[i] == at) {
                        score[g] += 1.0 / (double)(i + 1) + (i < 5);
                        per[g * 3 + (size_t)si] += 1.0 / (double)(i + 1) + (i < 5);
                        break;
                    }
            }
            nq++;
            json_decref(idx);
            json_decref(cat);
        }
        for (size_t g = 0; g < ng; g++)
            per[g * 3 + (size_t)si] /= (double)nq;
        for (size_t g = 0; g < ng && si == 2; g++)
            score[g] /= (double)nq * 3;
        json_decref(big);
    }
    for (size_t g = 0; g < ng; g++) {
        const knob *kn;
        tg_dindex_params p = grid_point(g, base, &kn);
        printf("%-12s %5.2f  %.4f  (100: %.4f, 400: %.4f, 1000: %.4f)\n", kn->name,
               *(double *)((char *)&p + kn->off), score[g], per[g * 3], per[g * 3 + 1],
               per[g * 3 + 2]);
    }
    free(per);
    free(score);
    return 0;
}

/* ---- -e: end to end ------------------------------------------------------
 * What the scripted mock model of `make test` does (test/mock, "discovery"):
 * it calls search_tools with the user's text, asks get_tool_schema for the
 * first result, and calls it through call_tool. Counted: the turns whose
 * answer to the agent is a call of the right tool, through the real
 * request and response pipeline (inner rounds, name mapping, call_tool
 * unwrapped). */
static const char *meta_named(json_t *body, const char *suffix)
{
    json_t *tools = json_object_get(body, "tools");
    size_t sl = strlen(suffix);
    for (size_t i = 0; i < json_array_size(tools); i++) {
        const char *n = fname(json_array_get(tools, i));
        size_t nl = n ? strlen(n) : 0;
        if (nl >= sl && strcmp(n + nl - sl, suffix) == 0)
            return n;
    }
    return suffix;
}

static json_t *model_turn(json_t *up)
{
    json_t *msgs = json_object_get(up, "messages");
    json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
    const char *content = json_string_value(json_object_get(last, "content"));
    json_t *args = NULL;
    const char *name = NULL;
    if (strcmp(json_string_value(json_object_get(last, "role")), "tool") != 0) {
        name = meta_named(up, "search_tools");
        args = json_pack("{ss}", "query", content ? content : "");
    } else {
        json_t *ans = json_loads(content ? content : "", 0, NULL);
        json_t *first = json_array_get(json_object_get(ans, "results"), 0);
        json_t *tool = json_array_get(json_object_get(ans, "tools"), 0);
        if (first) {
            name = meta_named(up, "get_tool_schema");
            args = json_pack("{s[O]}", "names", json_object_get(first, "name"));
        } else if (tool) {
            name = meta_named(up, "call_tool");
            args = json_pack("{sOs{}}", "name", json_object_get(tool, "name"), "arguments");
        }
        json_decref(ans);
    }
    json_t *msg = json_pack("{ss}", "role", "assistant");
    if (args) {
        char *a = json_dumps(args, JSON_COMPACT);
        json_object_set_new(msg, "content", json_null());
        json_object_set_new(msg, "tool_calls",
                            json_pack("[{sssss{ssss}}]", "id", "call_e2e", "type", "function",
                                      "function", "name", name, "arguments", a));
        free(a);
        json_decref(args);
    } else {
        json_object_set_new(msg, "content", json_string("nothing found"));
    }
    return json_pack("{sssssss[{siso ss}]}", "id", "chatcmpl-e2e", "object", "chat.completion",
                     "model", "m", "choices", "index", 0, "message", msg, "finish_reason",
                     args ? "tool_calls" : "stop");
}

/* The rounds of a turn whose request stages ran: the scripted model
 * answers (`first`, when given, is its first answer; stolen) and toolgate
 * runs its inner rounds until the agent gets the answer. 1 when that is a
 * call of `want`; *requests counts the upstream requests. */
static int rounds_to_agent(tg_ctx *ctx, json_t *body, json_t *first, const char *want,
                           int *requests)
{
    int ok = 0;
    json_t *up = json_incref(body);
    for (int round = 0; round < 8; round++) {
        json_t *resp = round == 0 && first ? first : model_turn(up), *next = NULL;
        (*requests)++;
        if (!tg_pipeline_response(resp, ctx, &next)) {
            json_t *c = json_array_get(json_object_get(json_object_get(json_array_get(
                json_object_get(resp, "choices"), 0), "message"), "tool_calls"), 0);
            ok = c && strcmp(fname(c) ? fname(c) : "", want) == 0;
            json_decref(resp);
            break;
        }
        json_decref(resp);
        json_decref(up);
        up = next;
    }
    json_decref(up);
    return ok;
}

static int e2e_called(tg_rules_set *rules, tg_cache *cache, json_t *cat, const char *text,
                      const char *want)
{
    tg_ctx ctx;
    tg_error err;
    tg_ctx_init(&ctx, "eval", rules, NULL);
    ctx.cache = cache;
    ctx.embedder = embedder ? &embedder->e : NULL;
    json_t *body = body_with(cat, text);
    int ok = 0, requests = 0;
    if (tg_pipeline_request(body, &ctx, &err) == 0)
        ok = rounds_to_agent(&ctx, body, NULL, want, &requests);
    json_decref(body);
    tg_ctx_clear(&ctx);
    if (embedder)
        embedder->e.failed = false;
    return ok;
}

static int end_to_end(json_t *queries, json_t *corpus, tg_rules_set *rules, tg_cache *cache)
{
    static const int sizes[] = { 400, 1000 };
    printf("\nend to end: the scripted model searches, reads the first result's schema and "
           "calls it\n\n| half | tools | queries | right tool called |\n|---|---|---|---|\n");
    for (int si = 0; si < 2; si++) {
        json_t *big = load_big(sizes[si]);
        if (!big)
            return 1;
        size_t n[2] = { 0, 0 }, ok[2] = { 0, 0 };
        for (size_t q = 0; q < json_array_size(queries); q++) {
            json_t *qq = json_array_get(queries, q);
            const char *server = json_string_value(json_object_get(qq, "server"));
            int test = strcmp(json_string_value(json_object_get(qq, "half")), "test") == 0;
            json_t *tool = query_tool(corpus, qq);
            if (!tool)
                continue;
            char want[512];
            json_t *cat = catalog_for(json_object_get(big, "tools"), server, tool, want,
                                      sizeof want);
            n[test]++;
            ok[test] += (size_t)e2e_called(rules, cache, cat,
                                           json_string_value(json_object_get(qq, "query")), want);
            json_decref(cat);
        }
        for (int h = 0; h < 2; h++)
            printf("| %s | %5d | %3zu | %.3f |\n", h ? "test" : "tune", sizes[si], n[h],
                   n[h] ? (double)ok[h] / (double)n[h] : 0.0);
        json_decref(big);
    }
    return 0;
}

/* ---- -e, two-step tasks: successor hints --------------------------------
 * test/discovery/chains.json: tasks of two steps, each with the first
 * tool, the arguments it was called with, a result as its server would
 * give it, and the tool the second step needs. The agent sends that result
 * back; counted: how often the second tool is the first of the note's
 * tools (what a model that trusts the note would call) or among them, and,
 * with a scripted model that calls the wanted tool straight from the note
 * when it is there and otherwise searches with the task's text, reads the
 * first result's schema and calls it: how often the right tool is called
 * and how many upstream requests that took, hints on and off. */
static json_t *hinted_in(json_t *up)
{
    json_t *m = json_array_get(json_object_get(up, "messages"), 2);
    const char *c = json_string_value(json_object_get(m, "content"));
    const char *at = c ? strstr(c, TG_HINTS_OPEN) : NULL;
    const char *js = at ? strstr(at, ".)\n[") : NULL;
    const char *end = js ? strstr(js, "\n" TG_HINTS_CLOSE) : NULL;
    json_t *names = json_array();
    if (!end)
        return names;
    json_t *list = json_loadb(js + 3, (size_t)(end - js - 3), 0, NULL);
    for (size_t i = 0; i < json_array_size(list); i++)
        json_array_append(names, json_object_get(json_array_get(list, i), "name"));
    json_decref(list);
    return names;
}

static int has_name(json_t *names, const char *n)
{
    for (size_t i = 0; i < json_array_size(names); i++)
        if (strcmp(json_string_value(json_array_get(names, i)), n) == 0)
            return 1;
    return 0;
}

typedef struct chain_run {
    int hint1, hint3, called, requests;
    char note[512];  /* the hinted names, for -v */
} chain_run;

static json_t *chain_body(json_t *cat, json_t *ch, const char *first)
{
    char *args = json_dumps(json_object_get(ch, "args"), JSON_COMPACT);
    json_t *b = json_pack("{sss[{sssO}{sss[{sssss{ssss}}]}{sssssO}]sO}", "model", "m", "messages",
                          "role", "user", "content", json_object_get(ch, "task"), "role",
                          "assistant", "tool_calls", "id", "call_1", "type", "function",
                          "function", "name", first, "arguments", args, "role", "tool",
                          "tool_call_id", "call_1", "content", json_object_get(ch, "result"),
                          "tools", cat);
    free(args);
    return b;
}

static chain_run chain_turn(tg_rules_set *rules, tg_cache *cache, json_t *cat, json_t *ch,
                            const char *first, const char *want)
{
    chain_run r = { 0, 0, 0, 0, "" };
    tg_ctx ctx;
    tg_error err;
    tg_ctx_init(&ctx, "eval", rules, NULL);
    ctx.cache = cache;
    json_t *body = chain_body(cat, ch, first);
    if (tg_pipeline_request(body, &ctx, &err) == 0) {
        json_t *hinted = hinted_in(body);
        r.hint1 = json_array_size(hinted) && strcmp(json_string_value(json_array_get(hinted, 0)), want) == 0;
        r.hint3 = has_name(hinted, want);
        char *names = json_dumps(hinted, JSON_COMPACT);
        snprintf(r.note, sizeof r.note, "%s", names ? names : "");
        free(names);
        /* the note, or a search with the task's text */
        json_t *msg = json_pack("{sssn}", "role", "assistant", "content");
        const char *name = meta_named(body, r.hint3 ? "call_tool" : "search_tools");
        json_t *args = r.hint3 ? json_pack("{sss{}}", "name", want, "arguments")
                               : json_pack("{sO}", "query", json_object_get(ch, "task"));
        char *a = json_dumps(args, JSON_COMPACT);
        json_object_set_new(msg, "tool_calls",
                            json_pack("[{sssss{ssss}}]", "id", "call_2", "type", "function",
                                      "function", "name", name, "arguments", a));
        free(a);
        json_decref(args);
        json_t *resp = json_pack("{sssssss[{siso ss}]}", "id", "chatcmpl-e2e", "object",
                                 "chat.completion", "model", "m", "choices", "index", 0,
                                 "message", msg, "finish_reason", "tool_calls");
        r.called = rounds_to_agent(&ctx, body, resp, want, &r.requests);
        json_decref(hinted);
    }
    json_decref(body);
    tg_ctx_clear(&ctx);
    return r;
}

/* A chain's tool of the corpus ("first" or "next"). */
static json_t *chain_tool(json_t *corpus, json_t *ch, const char *which)
{
    json_t *qq = json_pack("{sOsO}", "server", json_object_get(ch, "server"), "tool",
                           json_object_get(ch, which));
    json_t *t = query_tool(corpus, qq);
    json_decref(qq);
    return t;
}

/* A server's half, as the queries give it ("tune" when none says). */
static int test_half(json_t *queries, const char *server)
{
    for (size_t q = 0; q < json_array_size(queries); q++) {
        json_t *qq = json_array_get(queries, q);
        if (strcmp(json_string_value(json_object_get(qq, "server")), server) == 0)
            return strcmp(json_string_value(json_object_get(qq, "half")), "test") == 0;
    }
    return 0;
}

static int chains_eval(const char *path, json_t *queries, json_t *corpus, tg_rules_set *rules,
                       tg_cache *cache, int verbose)
{
    json_t *chains = json_load_file(path, 0, NULL);
    if (!json_is_array(chains)) {
        fprintf(stderr, "discovery_eval: cannot read %s\n", path);
        return 1;
    }
    tg_rules_set off = *rules;
    off.disc.hints = 0;
    static const int sizes[] = { 400, 1000 };
    printf("\nsuccessor hints, two-step tasks (%s): the agent sends back the first "
           "tool's result\n\n| half | tools | tasks | next tool first in the note | in the note | "
           "right tool called, hints on | off | upstream requests, on | off |\n"
           "|---|---|---|---|---|---|---|---|---|\n", path);
    for (int si = 0; si < 2; si++) {
        json_t *big = load_big(sizes[si]);
        if (!big)
            return 1;
        json_t *base = json_object_get(big, "tools");
        size_t n[2] = { 0 }, h1[2] = { 0 }, h3[2] = { 0 }, on_ok[2] = { 0 }, off_ok[2] = { 0 };
        size_t on_req[2] = { 0 }, off_req[2] = { 0 };
        for (size_t i = 0; i < json_array_size(chains); i++) {
            json_t *ch = json_array_get(chains, i);
            const char *server = json_string_value(json_object_get(ch, "server"));
            json_t *tf = chain_tool(corpus, ch, "first"), *tn = chain_tool(corpus, ch, "next");
            if (!tf || !tn)
                continue;
            char first[512], want[512];
            size_t last = json_array_size(base) - 1;
            json_t *c1 = catalog_at(base, server, tf, last, first, sizeof first);
            long fpos = find_target(c1, server, tf);
            json_t *cat = catalog_at(c1, server, tn, fpos == (long)last - 1 ? last - 2 : last - 1,
                                     want, sizeof want);
            chain_run on = chain_turn(rules, cache, cat, ch, first, want);
            chain_run of = chain_turn(&off, cache, cat, ch, first, want);
            int t = test_half(queries, server);
            n[t]++;
            h1[t] += (size_t)on.hint1;
            h3[t] += (size_t)on.hint3;
            on_ok[t] += (size_t)on.called;
            off_ok[t] += (size_t)of.called;
            on_req[t] += (size_t)on.requests;
            off_req[t] += (size_t)of.requests;
            if (verbose && !t && !on.hint3)  /* the tune half's misses only */
                fprintf(stderr, "chain miss at %d: %s -> %s, hinted %s\n", sizes[si], first,
                        want, on.note);
            json_decref(cat);
            json_decref(c1);
        }
        for (int t = 0; t < 2; t++) {
            double d = n[t] ? (double)n[t] : 1.0;
            printf("| %s | %5d | %zu | %.3f | %.3f | %.3f | %.3f | %.2f | %.2f |\n",
                   t ? "test" : "tune", sizes[si], n[t], (double)h1[t] / d, (double)h3[t] / d,
                   (double)on_ok[t] / d, (double)off_ok[t] / d, (double)on_req[t] / d,
                   (double)off_req[t] / d);
        }
        json_decref(big);
    }
    json_decref(chains);
    return 0;
}

int main(int argc, char **argv)
{
    int verbose = 0, recall_only = 0, failed = 0, fit = 0, e2e = 0, chains_only = 0;
    const char *qpath = "test/discovery/queries.json";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0)
            verbose = 1;
        else if (strcmp(argv[i], "-r") == 0)
            recall_only = 1;
        else if (strcmp(argv[i], "-g") == 0)
            fit = 1;
        else if (strcmp(argv[i], "-e") == 0)
            e2e = 1;
        else if (strcmp(argv[i], "-c") == 0)
            chains_only = 1;
        else if (strcmp(argv[i], "-t") == 0)
            tune_only = 1;
        else
            qpath = argv[i];
    }
    const char *env = getenv("TG_SHARED");
    snprintf(shared, sizeof shared, "%s", env && *env ? env : "../shared");

    json_error_t e;
    json_t *queries = json_load_file(qpath, 0, &e);
    if (!json_is_array(queries)) {
        fprintf(stderr, "discovery_eval: %s: %s\n", qpath, e.text);
        return 1;
    }
    /* corpus: {server: [tools]} from the queries' servers */
    json_t *corpus = json_object();
    for (size_t i = 0; i < json_array_size(queries); i++) {
        const char *s = json_string_value(json_object_get(json_array_get(queries, i), "server"));
        char rel[512];
        if (!s || json_object_get(corpus, s))
            continue;
        snprintf(rel, sizeof rel, "corpus/tools/%s.json", s);
        json_t *t = load(rel);
        if (t)
            json_object_set_new(corpus, s, t);
    }

    if (fit) {
        /* TG_EVAL_KNOBS="prefix_w=0.2 rerank=0.1": sweep around other values */
        tg_dindex_params base = tg_dindex_defaults;
        const char *kv = getenv("TG_EVAL_KNOBS");
        while (kv && *kv) {
            char name[32];
            double v;
            int used = 0;
            if (sscanf(kv, " %31[^=]=%lf%n", name, &v, &used) != 2)
                break;
            for (size_t k = 0; k < NKNOBS; k++)
                if (!strcmp(knobs[k].name, name))
                    *(double *)((char *)&base + knobs[k].off) = v;
            if (!strcmp(name, "lex_kinds"))  /* not swept: a mask, and a count */
                base.lex_kinds = (unsigned)v;
            else if (!strcmp(name, "lex_max"))
                base.lex_max = (unsigned)v;
            kv += used;
        }
        int rc = grid(queries, corpus, &base);
        json_decref(corpus);
        json_decref(queries);
        return rc;
    }

    tg_rules_set on, off;
    tg_rules_preset(TG_D_OPENAI, &on);
    tg_rules_preset(TG_D_OPENAI, &off);
    on.disc.mode = TG_DISC_ON;
    tg_cache *cache = tg_cache_new(256, 0);
    embedder = eval_embedder_from_env();
    if (embedder) {
        on.disc.embed_route = "eval";
        on.disc.embed_model = getenv("TG_EVAL_EMBED_MODEL");
    }

    if (chains_only) {
        failed = chains_eval("test/discovery/chains.json", queries, corpus, &on, cache, verbose);
        goto out;
    }
    printf("search_tools recall (%zu queries, %zu servers; dialect openai; catalog = big-N "
           "with the target in place of its last tool)%s%s\n\n",
           json_array_size(queries), json_object_size(corpus),
           embedder ? "; BM25 fused with the embeddings of " : "",
           embedder ? on.disc.embed_model : "");
    printf("| half | tools | queries | R@1 | R@3 | R@5 | R@10 | MRR@10 |\n"
           "|---|---|---|---|---|---|---|---|\n");
    static const int sizes[] = { 100, 400, 1000 };
    tally t[3][2];
    memset(t, 0, sizeof t);
    for (int i = 0; i < 3; i++)
        if (eval_size(sizes[i], queries, corpus, &on, cache, verbose, t[i]))
            failed = 1;
    for (int h = 0; h < (tune_only ? 1 : 2); h++)
        for (int i = 0; i < 3; i++)
            tally_row(h ? "test" : "tune", sizes[i], &t[i][h]);
    if (embedder) {
        printf("\nembeddings: %u texts sent, %u calls failed, %u searches fell back to BM25\n",
               embedder->sent, embedder->failed, embedder->e.fallbacks);
        if (embedder->e.fallbacks)
            failed = 1;  /* the figures are not the fused ones */
    }
    if (e2e && end_to_end(queries, corpus, &on, cache))
        failed = 1;
    if (e2e && chains_eval("test/discovery/chains.json", queries, corpus, &on, cache, verbose))
        failed = 1;
    if (recall_only)
        goto out;

    printf("\nupstream tools bytes (compact JSON), openai dialect\n\n");
    tg_rules_set bare = on;
    bare.disc.list_names = 0;
    printf("| request | tools | original | without discovery | discovery | discovery, "
           "list_names=0 |\n|---|---|---|---|---|---|\n");
    bytes_row(100, &on, &off, &bare);
    bytes_row(400, &on, &off, &bare);
    bytes_row(1000, &on, &off, &bare);
    timing(&on);
    search_timing(queries);
    hint_timing(&on);

out:
    if (embedder) {
        curl_easy_cleanup(embedder->easy);
        json_decref(embedder->memo);
        free(embedder);
    }
    tg_cache_free(cache);
    json_decref(corpus);
    json_decref(queries);
    return failed;
}
