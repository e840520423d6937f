/* test_embed.c -- search_tools' semantic rank (discovery/embed.c) with a
 * fake embedder: fusion with BM25, the catalog embedded once per worker
 * cache, every fallback to BM25, the bounds on what an endpoint sends, and
 * the conf key.
 *
 * The fake embeds a text as the mock upstream does (test/mock/hash_embed.h):
 * a test device, not a measure of semantic recall.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf/conf.h"
#include "core/cache.h"
#include "discovery/embed.h"
#include "pipeline/pipeline.h"
#include "test/mock/hash_embed.h"

#define DIM HASH_EMBED_DIM

typedef enum { F_OK, F_STATUS, F_TIMEOUT, F_GARBAGE, F_DIM, F_COUNT, F_HUGE, F_NAN, F_INDEX } fmode;

typedef struct fake {
    tg_embedder e;
    fmode mode;
    int good_calls;  /* calls answered well before mode applies */
    int posts, inputs;
} fake;

static json_t *fake_post(tg_embedder *self, json_t *body, tg_embed_fail *why)
{
    fake *f = (fake *)self;
    json_t *in = json_object_get(body, "input");
    f->posts++;
    f->inputs += (int)json_array_size(in);
    assert_string_equal(json_string_value(json_object_get(body, "model")), "fake-model");
    fmode m = f->posts > f->good_calls ? f->mode : F_OK;
    if (m == F_STATUS || m == F_TIMEOUT) {
        *why = m == F_STATUS ? TG_EMB_STATUS : TG_EMB_TIMEOUT;
        return NULL;
    }
    if (m == F_GARBAGE)
        return json_string("<html>bad gateway</html>");
    json_t *data = json_array();
    size_t n = json_array_size(in);
    for (size_t i = 0; i < n; i++) {  /* in reverse order: the index says which */
        size_t j = n - 1 - i;
        if (m == F_COUNT && i + 1 == n)
            break;
        size_t dim = m == F_DIM ? DIM + 1 + (i % 2) : m == F_HUGE ? TG_EMBED_DIM_MAX + 1 : DIM;
        json_t *vec = hash_embed_json(json_string_value(json_array_get(in, j)), dim);
        if (m == F_NAN)
            json_array_set_new(vec, 0, json_string("NaN"));
        json_array_append_new(data, json_pack("{sssIso}", "object", "embedding", "index",
                                              (json_int_t)(m == F_INDEX && i == 0 ? n : j),
                                              "embedding", vec));
    }
    return json_pack("{ssso}", "object", "list", "data", data);
}

/* ---- a catalog ---------------------------------------------------------- */

static json_t *tool(const char *name, const char *desc)
{
    return json_pack("{sss{sssss{sss{}}}}", "type", "function", "function", "name", name,
                     "description", desc, "parameters", "type", "object", "properties");
}

/* n tools: a few that matter and fillers that share no word with them. */
static json_t *catalog(size_t n)
{
    json_t *t = json_array();
    json_array_append_new(t, tool("plan_trip", "Plan a trip itinerary with stops and dates."));
    json_array_append_new(t, tool("rent_car", "Book a car from a rental agency."));
    json_array_append_new(t, tool("list_invoices", "List the invoices of an account."));
    static const char *const nouns[] = { "widget", "gadget", "sprocket", "gizmo", "bolt",
                                         "flange", "valve", "lever", "spring", "gear" };
    static const char *const verbs[] = { "inspect", "polish", "weigh", "paint", "label" };
    for (size_t i = json_array_size(t); i < n; i++) {
        char name[64], desc[128];
        const char *v = verbs[i % 5], *o = nouns[(i / 5) % 10];
        snprintf(name, sizeof name, "%s_%s_%zu", v, o, i);
        snprintf(desc, sizeof desc, "%s a %s on line %zu.", v, o, i);
        json_array_append_new(t, tool(name, desc));
    }
    return t;
}

static void rules(tg_rules_set *r)
{
    tg_rules_preset(TG_D_OPENAI, r);
    r->disc.mode = TG_DISC_ON;
    r->disc.embed_route = "emb";
    r->disc.embed_model = "fake-model";
    r->disc.wordvec = 0;  /* the embeddings alone: the built-in word vectors find more */
}

/* Stage a request over tools into ctx (which the caller clears). */
static void stage(tg_ctx *ctx, const tg_rules_set *r, tg_cache *cache, json_t *tools, fake *f)
{
    tg_error err;
    tg_ctx_init(ctx, "t", r, NULL);
    ctx->cache = cache;
    ctx->embedder = f ? &f->e : NULL;
    json_t *body = json_pack("{sss[{ssss}]sO}", "model", "m", "messages", "role", "user",
                             "content", "hi", "tools", tools);
    assert_int_equal(tg_pipeline_request(body, ctx, &err), 0);
    json_decref(body);
}

static long rank_of(json_t *answer, const char *name)
{
    json_t *res = json_object_get(answer, "results");
    for (size_t i = 0; i < json_array_size(res); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(res, i), "name")), name))
            return (long)i;
    return -1;
}

static char *search_text(tg_ctx *ctx, const char *q)
{
    json_t *r = tg_discovery_search(ctx, q, 8);
    assert_non_null(r);
    char *s = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(r);
    return s;
}

static fake fake_of(fmode m, int good)
{
    fake f = { .e = { .post = fake_post }, .mode = m, .good_calls = good };
    return f;
}

/* ---- tests -------------------------------------------------------------- */

/* BM25 cannot find a car for "hire an automobile" (no shared word but
 * "trip"); the cosine rank can, and fusion puts it in the answer. */
static void test_fusion(void **state)
{
    (void)state;
    tg_rules_set r;
    rules(&r);
    json_t *tools = catalog(50);
    tg_ctx a, b;
    stage(&a, &r, NULL, tools, NULL);
    json_t *plain = tg_discovery_search(&a, "hire an automobile for the trip", 8);
    assert_int_equal(rank_of(plain, "rent_car"), -1);
    assert_int_equal(rank_of(plain, "plan_trip"), 0);
    /* discovery_wordvec = on (the default): toolgate's own word vectors
     * know that an automobile is a car, with no endpoint */
    tg_ctx w;
    r.disc.wordvec = 1;
    stage(&w, &r, NULL, tools, NULL);
    json_t *wv = tg_discovery_search(&w, "hire an automobile for the trip", 8);
    assert_true(rank_of(wv, "rent_car") >= 0);
    json_decref(wv);
    tg_ctx_clear(&w);
    r.disc.wordvec = 0;

    fake f = fake_of(F_OK, 0);
    stage(&b, &r, NULL, tools, &f);
    json_t *fused = tg_discovery_search(&b, "hire an automobile for the trip", 8);
    long rc = rank_of(fused, "rent_car");
    assert_true(rc >= 0 && rc <= 1);
    assert_true(rank_of(fused, "plan_trip") <= 1);
    assert_int_equal(f.posts, 2);  /* the catalog (50 < one batch), then the query */
    assert_int_equal(f.inputs, 51);
    assert_int_equal(f.e.fallbacks, 0);

    /* several phrasings: embedded in one call */
    json_t *args = json_pack("{sss[ss]}", "query", "automobile", "queries", "hire a vehicle",
                             "lease");
    json_t *m = tg_discovery_search_args(&b, args);
    assert_int_equal(rank_of(m, "rent_car"), 0);
    assert_int_equal(f.posts, 3);
    assert_int_equal(f.inputs, 54);
    json_decref(args);
    json_decref(m);
    json_decref(plain);
    json_decref(fused);
    tg_ctx_clear(&a);
    tg_ctx_clear(&b);
    json_decref(tools);
}

/* The catalog is embedded once per worker cache, in batches; the next
 * request over the same tools embeds only its query. */
static void test_catalog_cached(void **state)
{
    (void)state;
    tg_rules_set r;
    rules(&r);
    tg_cache *cache = tg_cache_new(64, 0);
    json_t *tools = catalog(150);
    fake f = fake_of(F_OK, 0);
    tg_ctx a, b, c;
    stage(&a, &r, cache, tools, &f);
    free(search_text(&a, "automobile"));
    assert_int_equal(f.posts, 3 + 1);  /* 64 + 64 + 22, then the query */
    assert_int_equal(f.inputs, 151);
    free(search_text(&a, "automobile"));
    assert_int_equal(f.posts, 5);

    json_t *copy = json_deep_copy(tools);  /* same content, another array */
    stage(&b, &r, cache, copy, &f);
    free(search_text(&b, "automobile"));
    assert_int_equal(f.posts, 6);
    assert_int_equal(f.inputs, 153);

    tg_rules_set r2 = r;  /* another model: its own vectors */
    r2.disc.embed_model = "fake-model";
    r2.disc.embed_route = "emb2";
    stage(&c, &r2, cache, tools, &f);
    free(search_text(&c, "automobile"));
    assert_int_equal(f.posts, 6 + 3 + 1);
    tg_ctx_clear(&a);
    tg_ctx_clear(&b);
    tg_ctx_clear(&c);
    json_decref(copy);
    json_decref(tools);
    tg_cache_free(cache);
}

/* Every failure, of the catalog's calls or of the query's, gives the very
 * answer BM25 alone gives, and is reported; a request that saw a failure
 * makes no more calls. */
static void test_fallbacks(void **state)
{
    (void)state;
    static const struct {
        fmode m;
        tg_embed_fail why;
    } cases[] = {
        { F_STATUS, TG_EMB_STATUS },    { F_TIMEOUT, TG_EMB_TIMEOUT },
        { F_GARBAGE, TG_EMB_MALFORMED }, { F_DIM, TG_EMB_DIMENSION },
        { F_COUNT, TG_EMB_COUNT },       { F_HUGE, TG_EMB_DIMENSION },
        { F_NAN, TG_EMB_MALFORMED },     { F_INDEX, TG_EMB_COUNT },
    };
    tg_rules_set r;
    rules(&r);
    json_t *tools = catalog(100);  /* two catalog calls */
    tg_ctx plain;
    stage(&plain, &r, NULL, tools, NULL);
    char *want = search_text(&plain, "hire an automobile for the trip");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int good = 0; good <= 2; good++) {  /* 1st catalog call, 2nd, the query */
            tg_cache *cache = tg_cache_new(16, 0);
            fake f = fake_of(cases[i].m, good);
            tg_ctx ctx;
            stage(&ctx, &r, cache, tools, &f);
            char *got = search_text(&ctx, "hire an automobile for the trip");
            if (strcmp(got, want))
                fail_msg("case %zu after %d good calls: not BM25's answer", i, good);
            tg_embed_fail why = cases[i].why;
            if (cases[i].m == F_DIM && good == 2)
                why = TG_EMB_DIMENSION;  /* the query's vector is not the catalog's size */
            if (f.e.causes != 1u << why)
                fail_msg("case %zu after %d good calls: causes %#x, want %s", i, good,
                         f.e.causes, tg_embed_fail_name(why));
            assert_int_equal(f.e.fallbacks, 1);
            assert_int_equal(f.posts, good + 1);
            free(got);
            got = search_text(&ctx, "hire an automobile for the trip");
            assert_string_equal(got, want);
            assert_int_equal(f.posts, good + 1);  /* not tried again */
            assert_int_equal(f.e.fallbacks, 2);
            free(got);
            tg_ctx_clear(&ctx);
            tg_cache_free(cache);
        }
    free(want);
    tg_ctx_clear(&plain);
    json_decref(tools);
}

static void test_parse(void **state)
{
    (void)state;
    size_t dim;
    tg_embed_fail why;
    json_t *ok = json_loads("{\"data\":[{\"index\":1,\"embedding\":[0,3,4]},"
                            "{\"index\":0,\"embedding\":[2,0,0]}]}", 0, NULL);
    float *v = tg_disc_embed_parse(ok, 2, 0, &dim, &why);
    assert_non_null(v);
    assert_int_equal(dim, 3);
    assert_true(v[0] == 1.0f && v[3] == 0.0f && v[4] > 0.59f && v[4] < 0.61f);
    free(v);
    assert_null(tg_disc_embed_parse(ok, 2, 4, &dim, &why));  /* another dimension */
    assert_int_equal(why, TG_EMB_DIMENSION);
    assert_null(tg_disc_embed_parse(ok, 3, 0, &dim, &why));
    assert_int_equal(why, TG_EMB_COUNT);
    static const char *const bad[] = {
        "{}", "[]", "{\"data\":{}}", "{\"data\":[{\"index\":0}]}",
        "{\"data\":[{\"index\":\"0\",\"embedding\":[1]}]}",
        "{\"data\":[{\"index\":0,\"embedding\":[true]}]}",
        "{\"data\":[{\"index\":0,\"embedding\":[[1]]}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *a = json_loads(bad[i], 0, NULL);
        assert_null(tg_disc_embed_parse(a, 1, 0, &dim, &why));
        assert_int_equal(why, TG_EMB_MALFORMED);
        json_decref(a);
    }
    json_t *empty = json_loads("{\"data\":[{\"index\":0,\"embedding\":[]}]}", 0, NULL);
    assert_null(tg_disc_embed_parse(empty, 1, 0, &dim, &why));
    assert_int_equal(why, TG_EMB_DIMENSION);
    json_decref(empty);
    json_decref(ok);
}

static void test_conf_key(void **state)
{
    (void)state;
    tg_buf err = { 0 };
    tg_conf *c = tg_conf_load_string("[route chat]\nmodels = *\nupstream = http://a/v1\n"
                                     "discovery_embeddings = emb:nomic-embed-text:latest\n"
                                     "discovery_core = read_*\n"
                                     "[route emb]\nprefix = /emb\nupstream = http://b/v1\n",
                                     "t.conf", &err);
    assert_non_null(c);
    const tg_route *r = tg_route_by_name(c, "chat");
    assert_string_equal(r->rules.disc.embed_route, "emb");
    assert_string_equal(r->rules.disc.embed_model, "nomic-embed-text:latest");
    assert_null(tg_route_by_name(c, "emb")->rules.disc.embed_model);
    tg_conf_unref(c);
    static const char *const bad[] = { "nothere:m", "emb", "emb:", ":m" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "[route chat]\nmodels = *\nupstream = http://a/v1\ndiscovery_embeddings = %s\n"
                 "[route emb]\nprefix = /emb\nupstream = http://b/v1\n",
                 bad[i]);
        err.len = 0;
        c = tg_conf_load_string(text, "t.conf", &err);
        assert_null(c);
        assert_non_null(strstr(err.data, "discovery_embeddings"));
    }
    tg_buf_free(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fusion),        cmocka_unit_test(test_catalog_cached),
        cmocka_unit_test(test_fallbacks),     cmocka_unit_test(test_parse),
        cmocka_unit_test(test_conf_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
