/* test_pipeline.c -- the raw fast path must send upstream exactly what the
 * plain path (parse everything, run the stages, serialize) sends, on the
 * first sight of a tool list and on every later one, for every dialect; and
 * odd bodies (tools twice, escaped keys, tools not an array, no tools) must
 * fall back to the plain path, errors included. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"
#include "core/hash.h"
#include "pipeline/pipeline.h"

static char *slurp(const char *path, size_t *n)
{
    tg_buf b = {0};
    if (tg_buf_read_file(&b, path)) {
        tg_buf_free(&b);
        return NULL;
    }
    return tg_buf_steal(&b, n);
}

static const char *shared_dir(void)
{
    const char *s = getenv("TG_SHARED");
    return s && *s ? s : "../shared";
}

/* The plain path's upstream body, parsed (key order aside). */
static json_t *plain(const char *raw, size_t n, tg_dialect d)
{
    tg_rules_set rules;
    tg_rules_preset(d, &rules);
    tg_ctx ctx;
    tg_ctx_init(&ctx, "r", &rules, "_");
    json_t *body = json_loadb(raw, n, 0, NULL);
    tg_error err;
    if (body && tg_pipeline_request(body, &ctx, &err)) {
        json_decref(body);
        body = NULL;
    }
    tg_ctx_clear(&ctx);
    return body;
}

/* The raw path's upstream body as text. */
/* The raw path over raw[0..n) on dialect d's preset with cache: ctx and
 * rules are the caller's (ctx to clear), as are *body and *out. */
static int run_raw(const char *raw, size_t n, tg_dialect d, tg_cache *cache, tg_rules_set *rules,
                   tg_ctx *ctx, json_t **body, tg_buf *out)
{
    tg_rules_preset(d, rules);
    tg_ctx_init(ctx, "r", rules, "_");
    ctx->cache = cache;
    *body = NULL;
    tg_error err;
    return tg_pipeline_request_raw(raw, n, ctx, body, out, &err);
}

static char *fast(const char *raw, size_t n, tg_dialect d, tg_cache *cache, int *rc)
{
    tg_rules_set rules;
    tg_ctx ctx;
    json_t *body;
    tg_buf out = {0};
    *rc = run_raw(raw, n, d, cache, &rules, &ctx, &body, &out);
    json_decref(body);
    tg_ctx_clear(&ctx);
    return tg_buf_steal(&out, NULL);
}

static void check_same(const char *raw, size_t n, tg_dialect d, tg_cache *cache)
{
    json_t *want = plain(raw, n, d);
    assert_non_null(want);
    int rc;
    char *first = fast(raw, n, d, cache, &rc);
    assert_int_equal(rc, 0);
    char *second = fast(raw, n, d, cache, &rc);
    assert_int_equal(rc, 0);
    /* byte-identical turn after turn: prompt caches stay warm */
    assert_string_equal(first, second);
    json_t *got = json_loads(second, 0, NULL);
    assert_non_null(got);
    if (!json_equal(got, want)) {
        char *w = json_dumps(want, JSON_COMPACT);
        print_error("dialect %s: raw path differs from the plain path\nwant %.300s\ngot  %.300s\n",
                    tg_dialect_name(d), w, second);
        free(w);
        fail();
    }
    json_decref(got);
    json_decref(want);
    free(first);
    free(second);
}

static void test_corpus_requests_every_dialect(void **state)
{
    (void)state;
    const char *names[] = {"big-50.json", "big-100.json"};
    for (size_t i = 0; i < 2; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/corpus/requests/%s", shared_dir(), names[i]);
        size_t n;
        char *raw = slurp(path, &n);
        if (!raw) {
            print_error("corpus not found at %s (set TG_SHARED)\n", path);
            fail();
        }
        tg_cache *cache = tg_cache_new(256, 64u << 20);
        for (int d = 0; d < TG_D_COUNT; d++)
            check_same(raw, n, (tg_dialect)d, cache);
        tg_cache_free(cache);
        free(raw);
    }
}

/* Adding a dialect means a row of core/dialect.h's table, naming a preset
 * of each stage (schema.c, hygiene.c, repair.c): a row that was zeros would
 * be a dialect that silently does nothing. Every id has a name that maps
 * back to it, is in the list error messages print, has features, and has
 * rules in every stage; only passthrough is empty (it rewrites nothing). */
static void test_every_dialect_has_a_row(void **state)
{
    (void)state;
    const char *list = tg_dialect_list();
    for (int d = 0; d < TG_D_COUNT; d++) {
        const char *name = tg_dialect_name((tg_dialect)d);
        assert_string_not_equal(name, "?");
        assert_int_equal(tg_dialect_from_name(name), d);
        assert_non_null(strstr(list, name));
        tg_rules_set rs;
        tg_rules_preset((tg_dialect)d, &rs);
        assert_int_equal(rs.schema.dialect, d);
        assert_true(rs.repair.flags != 0);
        unsigned f = tg_dialect_features((tg_dialect)d);
        if (tg_dialect_has((tg_dialect)d, TG_DF_FORMATS_NONE | TG_DF_FORMATS_ANTHROPIC))
            fail_msg("dialect %s keeps two lists of formats", name);
        if (d == TG_D_PASSTHROUGH) {
            assert_int_equal(f, 0);
            assert_int_equal(rs.schema.flags | rs.msg.flags, 0);
            continue;
        }
        if (!(f & TG_DF_REWRITE))
            fail_msg("dialect %s has no features", name);
        if (!rs.schema.flags || !rs.msg.flags)
            fail_msg("dialect %s has no schema or message rules", name);
    }
}

/* Repair rule ids are an enum (core/quirk.h): every id has its name, the
 * names parse back, nothing past the last id has one; and a repair counts
 * into its own quirk's slot, not "other". */
static void test_quirk_ids(void **state)
{
    (void)state;
    assert_string_equal(tg_quirk_name(TG_Q_OTHER), "other");
    for (int q = 1; q < TG_QUIRKS; q++) {
        char want[16];
        snprintf(want, sizeof want, "R%d", q);
        const char *name = tg_quirk_name((tg_quirk)q);
        assert_non_null(name);
        assert_string_equal(name, want);
        assert_int_equal(tg_quirk_from_name(name), q);
    }
    assert_int_equal(TG_R29, 29);
    assert_int_equal(tg_quirk_from_name("other"), TG_Q_OTHER);
    assert_null(tg_quirk_name(TG_QUIRKS));
    assert_int_equal(tg_quirk_from_name("R30"), -1);
    assert_int_equal(tg_quirk_from_name("R0"), -1);
    assert_int_equal(tg_quirk_from_name("R"), -1);
    assert_int_equal(tg_quirk_from_name(NULL), -1);

    /* a call without type (R1) and with object arguments (R13) */
    tg_rules_set rules;
    tg_rules_preset(TG_D_GROQ, &rules);
    tg_ctx ctx;
    tg_ctx_init(&ctx, "r", &rules, "_");
    json_t *resp = json_loads(
        "{\"id\":\"x\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,"
        "\"finish_reason\":\"tool_calls\",\"message\":{\"role\":\"assistant\",\"content\":null,"
        "\"tool_calls\":[{\"id\":\"c1\",\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}}]}}]}",
        0, NULL);
    assert_non_null(resp);
    json_t *next = NULL;
    assert_int_equal(tg_pipeline_response(resp, &ctx, &next), 0);
    assert_int_equal(ctx.stats.quirks[TG_R1], 1);
    assert_int_equal(ctx.stats.quirks[TG_R13], 1);
    assert_int_equal(ctx.stats.quirks[TG_Q_OTHER], 0);
    json_decref(resp);
    tg_ctx_clear(&ctx);
}

/* core/hash.h: tg_fnv1a64 is FNV-1a 64 (the published values), chainable,
 * since ids derived from it must never change; tg_hash64 chains too. */
static void test_hashes(void **state)
{
    (void)state;
    assert_true(tg_fnv1a64(TG_FNV1A_OFFSET, "", 0) == 0xcbf29ce484222325ull);
    assert_true(tg_fnv1a64(TG_FNV1A_OFFSET, "a", 1) == 0xaf63dc4c8601ec8cull);
    assert_true(tg_fnv1a64(TG_FNV1A_OFFSET, "foobar", 6) == 0x85944171f73967e8ull);
    assert_true(tg_fnv1a64(tg_fnv1a64(TG_FNV1A_OFFSET, "foo", 3), "bar", 3) ==
                0x85944171f73967e8ull);
    uint64_t a = tg_hash64("foo", 3, 0);
    assert_true(tg_hash64("foo", 3, 0) == a);
    assert_true(tg_hash64("foo", 3, 1) != a);
    assert_true(tg_hash64("bar", 3, a) != tg_hash64("bar", 3, 0));
}

static void test_odd_bodies_fall_back(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "{\"model\":\"m\",\"messages\":[]}",
        "{\"model\":\"m\",\"messages\":[],\"tools\":null}",
        "{\"model\":\"m\",\"messages\":[],\"tools\":[]}",
        "  {\"tools\" : [ {\"type\":\"function\",\"function\":{\"name\":\"a\"}} ] , \"messages\":[]}",
        "{\"t\\u006fols\":[],\"messages\":[{\"role\":\"user\",\"content\":\"\\\"tools\\\":[\"}]}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\\\\\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"b\"}}]}",
    };
    tg_cache *cache = tg_cache_new(64, 1u << 20);
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
        for (int d = 0; d < TG_D_COUNT; d++)
            check_same(bodies[i], strlen(bodies[i]), (tg_dialect)d, cache);
    tg_cache_free(cache);
}

static void test_bad_bodies_are_errors(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "{\"tools\":[],\"tools\":[],\"messages\":[]}",  /* duplicate key */
        "{\"tools\":[1,2,\"messages\":[]}",              /* broken inside tools */
        "[1]",
        "",
    };
    tg_cache *cache = tg_cache_new(64, 1u << 20);
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        int rc;
        char *s = fast(bodies[i], strlen(bodies[i]), TG_D_OPENAI, cache, &rc);
        assert_int_equal(rc, -1);
        free(s);
    }
    tg_cache_free(cache);
}

/* The second request with the same tools but other messages reuses the
 * parsed tools and still carries its own messages. */
/* The tools' span and hash, by the scan of a large body and by the
 * memmem of a small one (pipeline.c: SMALL_BODY): a small body with tools
 * has them found (a hash, the array's bytes) on first sight and from the
 * cache after; one without them, or naming "tools" only inside a string,
 * has none. */
static void expect_tools(const char *raw, size_t want_bytes, tg_cache *cache)
{
    for (int turn = 0; turn < 2; turn++) {
        uint64_t h;
        size_t bytes;
        tg_error err;
        json_t *body = tg_request_parse(raw, strlen(raw), cache, 64, &h, &bytes, &err);
        assert_non_null(body);
        assert_int_equal(bytes, want_bytes);
        assert_true(want_bytes ? h != 0 : h == 0);
        json_decref(body);
    }
}

static void test_tools_found_small_and_large(void **state)
{
    (void)state;
    tg_cache *cache = tg_cache_new(64, 1u << 20);
    const char *tools = "[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]";
    char small[256];
    snprintf(small, sizeof small, "{\"model\":\"m\",\"messages\":[],\"tools\" : %s}", tools);
    expect_tools(small, strlen(tools), cache);
    expect_tools("{\"model\":\"m\",\"messages\":[]}", 0, cache);
    expect_tools("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\\\"tools\\\"\"}]}",
                 0, cache);
    tg_buf big = {0};
    tg_buf_puts(&big, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"");
    for (int i = 0; i < 5000; i++)
        tg_buf_puts(&big, "x");
    tg_buf_puts(&big, "\"}],\"tools\":");
    tg_buf_puts(&big, tools);
    tg_buf_puts(&big, "}");
    expect_tools(big.data, strlen(tools), cache);
    tg_buf_free(&big);
    tg_cache_free(cache);
}

/* A tool list seen before without custom tools is not walked again for
 * them (custom.c: "nocustom", keyed by the tools' hash): a list with a
 * custom tool is still translated on its second sight, and said
 * (ctx->custom_tools, ctx->translated: the schema stage's cache would give
 * the same body either way), one without on every sight, in every
 * dialect, as without a cache. */
static char *custom_turn(const char *raw, tg_dialect d, tg_cache *cache)
{
    tg_rules_set rules;
    tg_ctx ctx;
    json_t *body;
    tg_buf out = {0};
    assert_int_equal(run_raw(raw, strlen(raw), d, cache, &rules, &ctx, &body, &out), 0);
    /* the body, keys sorted: with a cache the tools are written last */
    char *b = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
    out.len = 0;
    tg_buf_puts(&out, b ? b : "-");
    free(b);
    char *c = ctx.custom_tools ? json_dumps(ctx.custom_tools, JSON_COMPACT) : NULL;
    char *t = ctx.translated ? json_dumps(ctx.translated, JSON_COMPACT) : NULL;
    tg_buf_puts(&out, " | ");
    tg_buf_puts(&out, c ? c : "-");
    tg_buf_puts(&out, " | ");
    tg_buf_puts(&out, t ? t : "-");
    free(c);
    free(t);
    json_decref(body);
    tg_ctx_clear(&ctx);
    return tg_buf_steal(&out, NULL);
}

static void test_custom_tools_turn_after_turn(void **state)
{
    (void)state;
    const char *with = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                       "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}},"
                       "{\"type\":\"custom\",\"custom\":{\"name\":\"patch\",\"description\":\"d\"}}]}";
    const char *without = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                          "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}";
    const char *bodies[] = {without, with, without, with};
    for (int d = 0; d < TG_D_COUNT; d++) {
        tg_cache *cache = tg_cache_new(64, 1u << 20);
        for (int i = 0; i < 4; i++) {
            char *want = custom_turn(bodies[i], (tg_dialect)d, NULL);
            char *got = custom_turn(bodies[i], (tg_dialect)d, cache);
            if (strcmp(want, got))
                fail_msg("dialect %s, turn %d: with the cache\n%s\nwithout\n%s",
                         tg_dialect_name((tg_dialect)d), i, got, want);
            free(want);
            free(got);
        }
        tg_cache_free(cache);
    }
}

static void test_cached_tools_new_messages(void **state)
{
    (void)state;
    const char *a = "{\"messages\":[{\"role\":\"user\",\"content\":\"one\"}],\"tools\":[{\"type\":\"function\","
                    "\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\",\"properties\":{}}}}]}";
    const char *b = "{\"messages\":[{\"role\":\"user\",\"content\":\"two\"}],\"tools\":[{\"type\":\"function\","
                    "\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\",\"properties\":{}}}}]}";
    tg_cache *cache = tg_cache_new(64, 1u << 20);
    int rc;
    char *x = fast(a, strlen(a), TG_D_OPENAI, cache, &rc);
    char *y = fast(b, strlen(b), TG_D_OPENAI, cache, &rc);
    assert_non_null(strstr(x, "\"one\""));
    assert_non_null(strstr(y, "\"two\""));
    assert_null(strstr(y, "\"one\""));
    free(x);
    free(y);
    tg_cache_free(cache);
}

/* A tool list seen before is recognised by its bytes, not scanned again:
 * a longer list with the same first bytes, the known list followed by
 * garbage or by a second "tools" key, and a list that only starts like the
 * known one must still be read (or refused) as if never seen. */
static void test_known_tools_span(void **state)
{
    (void)state;
    char tool[512], one[1024], two[2048];
    snprintf(tool, sizeof tool,
             "{\"type\":\"function\",\"function\":{\"name\":\"f%%d\",\"description\":\"%0200d\"}}", 0);
    char t1[512], t2[512];
    snprintf(t1, sizeof t1, tool, 1);
    snprintf(t2, sizeof t2, tool, 2);
    snprintf(one, sizeof one, "[%s]", t1);
    snprintf(two, sizeof two, "[%s,%s]", t1, t2);  /* same first 256 bytes */
    char body[4096];
    tg_cache *cache = tg_cache_new(64, 1u << 20);
    int rc;
    snprintf(body, sizeof body, "{\"messages\":[],\"tools\":%s}", one);
    check_same(body, strlen(body), TG_D_OPENAI, cache);
    snprintf(body, sizeof body, "{\"messages\":[],\"tools\":%s}", two);
    check_same(body, strlen(body), TG_D_OPENAI, cache);
    char *s = fast(body, strlen(body), TG_D_OPENAI, cache, &rc);
    assert_non_null(strstr(s, "\"f2\""));
    free(s);
    snprintf(body, sizeof body, "{\"messages\":[],\"tools\":%s}", one);
    check_same(body, strlen(body), TG_D_OPENAI, cache);
    s = fast(body, strlen(body), TG_D_OPENAI, cache, &rc);
    assert_null(strstr(s, "\"f2\""));
    free(s);
    static const char *const tails[] = {"x}", ",\"tools\":[]}", "]}", ""};
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        snprintf(body, sizeof body, "{\"messages\":[],\"tools\":%s%s", one, tails[i]);
        s = fast(body, strlen(body), TG_D_OPENAI, cache, &rc);
        assert_int_equal(rc, -1);
        free(s);
    }
    /* a prefix of the known list, cut inside it */
    snprintf(body, sizeof body, "{\"messages\":[],\"tools\":%.*s}", (int)strlen(one) - 2, one);
    s = fast(body, strlen(body), TG_D_OPENAI, cache, &rc);
    assert_int_equal(rc, -1);
    free(s);
    /* a short list (under the 256 bytes its key reads), known with what
     * follows it: the same, read again; the same first 256 bytes with a
     * second "tools" key after them, refused */
    char pad[400];
    memset(pad, 'p', 300);
    pad[300] = '\0';
    static const char *const ends[] = {"}", ",\"tools\":[]}"};
    for (int k = 0; k < 2; k++) {
        snprintf(body, sizeof body,
                 "{\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"s\"}}],"
                 "\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]%s",
                 pad, ends[k]);
        for (int again = 0; again < 2 && !k; again++)
            check_same(body, strlen(body), TG_D_OPENAI, cache);
        if (k) {
            s = fast(body, strlen(body), TG_D_OPENAI, cache, &rc);
            assert_int_equal(rc, -1);
            free(s);
        }
    }
    tg_cache_free(cache);
}

/* Once a stream has begun, the request keeps only what the response stages
 * read, unless a discovery round may still need all of it. */
/* The schema of a strict response_format after the request stages (with
 * a worker cache when cache is not NULL; *inverse, when not NULL, gets
 * whether an inverse was kept for the answer). */
static json_t *rf_schema_cached(tg_dialect d, const char *schema, bool strict, tg_cache *cache,
                                bool *inverse);

static json_t *rf_schema_after(tg_dialect d, const char *schema, bool strict)
{
    return rf_schema_cached(d, schema, strict, NULL, NULL);
}

static json_t *rf_schema_cached(tg_dialect d, const char *schema, bool strict, tg_cache *cache,
                                bool *inverse)
{
    char raw[1024];
    snprintf(raw, sizeof raw,
             "{\"model\":\"m\",\"messages\":[],\"response_format\":{\"type\":\"json_schema\","
             "\"json_schema\":{\"name\":\"o\",\"strict\":%s,\"schema\":%s}}}",
             strict ? "true" : "false", schema);
    tg_rules_set rules;
    tg_rules_preset(d, &rules);
    tg_ctx ctx;
    tg_ctx_init(&ctx, "r", &rules, "_");
    ctx.cache = cache;
    json_t *body = json_loads(raw, 0, NULL);
    assert_non_null(body);
    tg_error err;
    assert_int_equal(tg_pipeline_request(body, &ctx, &err), 0);
    if (inverse)
        *inverse = ctx.rf_inverse != NULL;
    json_t *out = json_incref(
        json_object_get(json_object_get(json_object_get(body, "response_format"), "json_schema"),
                        "schema"));
    json_decref(body);
    tg_ctx_clear(&ctx);
    return out;
}

static void expect_rf(tg_dialect d, const char *schema, bool strict, const char *want)
{
    json_t *got = rf_schema_after(d, schema, strict);
    json_t *w = json_loads(want, 0, NULL);
    assert_non_null(w);
    if (!json_equal(got, w)) {
        char *g = json_dumps(got, JSON_COMPACT);
        print_error("dialect %s, schema %s\nwant %s\ngot  %s\n", tg_dialect_name(d), schema, want, g);
        free(g);
        fail();
    }
    json_decref(got);
    json_decref(w);
}

/* Structured outputs (docs/dialects.md sections 0 and 2): a strict
 * response_format is made strict-valid where the answer keeps its shape,
 * and left to the provider where it would not (a root that is not an
 * object, a map); nothing changes without strict on openai, or on targets
 * that take JSON Schema there. */
static void test_response_format(void **state)
{
    (void)state;
    const char *optional = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},"
                           "\"b\":{\"type\":\"integer\"}},\"required\":[\"a\"]}";
    const char *strict_form = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},"
                              "\"b\":{\"type\":[\"integer\",\"null\"]}},\"required\":[\"a\",\"b\"],"
                              "\"additionalProperties\":false}";
    expect_rf(TG_D_OPENAI, optional, true, strict_form);
    expect_rf(TG_D_OPENAI_STRICT, optional, false, strict_form);
    expect_rf(TG_D_OPENAI, optional, false, optional);
    expect_rf(TG_D_GEMINI, optional, true, optional);
    expect_rf(TG_D_MISTRAL, optional, true, optional);
    const char *root_array = "{\"type\":\"array\",\"items\":{\"type\":\"string\"}}";
    expect_rf(TG_D_OPENAI, root_array, true, root_array);
    const char *root_map = "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}";
    expect_rf(TG_D_OPENAI_STRICT, root_map, true, root_map);

    /* a worker's second sight of the schema comes from its cache, the
     * same form and the same way back */
    tg_cache *cache = tg_cache_new(64, 1u << 20);
    json_t *want = json_loads(strict_form, 0, NULL);
    for (int i = 0; i < 2; i++) {
        bool inv = false;
        json_t *got = rf_schema_cached(TG_D_OPENAI, optional, true, cache, &inv);
        assert_true(json_equal(got, want));
        assert_true(inv);
        json_decref(got);
    }
    json_decref(want);
    tg_cache_free(cache);
}

static void test_trim_request(void **state)
{
    (void)state;
    tg_rules_set rules;
    tg_rules_preset(TG_D_OPENAI, &rules);
    tg_ctx ctx;
    tg_ctx_init(&ctx, "r", &rules, "_");
    ctx.request = json_pack("{s:s, s:s, s:[{s:s}]}", "model", "m", "tool_choice", "none",
                            "messages", "role", "user");
    assert_true(tg_ctx_trim_request(&ctx));
    assert_int_equal(json_object_size(ctx.request), 2);
    assert_string_equal(json_string_value(json_object_get(ctx.request, "model")), "m");
    assert_string_equal(json_string_value(json_object_get(ctx.request, "tool_choice")), "none");
    ctx.disc_state = json_object();
    json_object_set_new(ctx.request, "messages", json_array());
    assert_false(tg_ctx_trim_request(&ctx));
    assert_non_null(json_object_get(ctx.request, "messages"));
    tg_ctx_clear(&ctx);
}

/* ---- the stages' shortcuts ------------------------------------------------
 *
 * A shortcut (a history with nothing to pair, a body without tools) must
 * give what the long way gives: ctx->no_shortcuts takes the long way. Each
 * hygiene vector's input and expected body, and each without its tool keys
 * (the shortcut of the schema stage), for every dialect. */

static bool same_ctx_json(json_t *a, json_t *b)
{
    return a == b || json_equal(a, b);
}

static bool stages_same(json_t *input, tg_dialect d)
{
    tg_rules_set rules;
    tg_rules_preset(d, &rules);
    tg_ctx c[2];
    json_t *body[2];
    int rc[2];
    for (int slow = 0; slow < 2; slow++) {
        tg_ctx_init(&c[slow], "r", &rules, "_");
        c[slow].explain = json_array();
        c[slow].no_shortcuts = slow;
        body[slow] = json_deep_copy(input);
        tg_error err;
        rc[slow] = tg_pipeline_request(body[slow], &c[slow], &err);
    }
    bool ok = rc[0] == rc[1] && json_equal(body[0], body[1]) &&
              json_equal(c[0].explain, c[1].explain) && same_ctx_json(c[0].id_map, c[1].id_map) &&
              same_ctx_json(c[0].name_map, c[1].name_map) &&
              same_ctx_json(c[0].dropped, c[1].dropped) &&
              same_ctx_json(c[0].translated, c[1].translated) &&
              !memcmp(&c[0].stats, &c[1].stats, sizeof c[0].stats);
    if (!ok) {
        char *a = json_dumps(body[0], JSON_COMPACT), *b = json_dumps(body[1], JSON_COMPACT);
        print_error("dialect %s: the shortcut differs\nshort %.400s\nlong  %.400s\n",
                    tg_dialect_name(d), a ? a : "-", b ? b : "-");
        free(a);
        free(b);
    }
    for (int i = 0; i < 2; i++) {
        tg_ctx_clear(&c[i]);
        json_decref(body[i]);
    }
    return ok;
}

static int vector_file(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return n > 5 && !strcmp(e->d_name + n - 5, ".json");
}

static void test_shortcuts_change_nothing(void **state)
{
    (void)state;
    const char *root = getenv("TG_ROOT");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/test/vectors/hygiene", root ? root : ".");
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, vector_file, alphasort);
    assert_true(n > 0);
    unsigned bodies = 0, bad = 0;
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, ents[i]->d_name);
        free(ents[i]);
        json_t *vec = json_load_file(path, 0, NULL);
        assert_non_null(vec);
        const char *which[] = {"input", "expected"};
        for (int w = 0; w < 2; w++) {
            json_t *b = json_deep_copy(json_object_get(vec, which[w]));
            for (int bare = 0; bare < 2 && json_is_object(b); bare++) {
                if (bare) {
                    json_object_del(b, "tools");
                    json_object_del(b, "tool_choice");
                    json_object_del(b, "response_format");
                    json_object_del(b, "parallel_tool_calls");
                }
                for (int d = 0; d < TG_D_COUNT; d++)
                    if (!stages_same(b, (tg_dialect)d)) {
                        print_error("in %s (%s%s)\n", path, which[w], bare ? ", no tool keys" : "");
                        bad++;
                    }
                bodies++;
            }
            json_decref(b);
        }
        json_decref(vec);
    }
    free(ents);
    print_message("# %u bodies, %d dialects each\n", bodies, (int)TG_D_COUNT);
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_requests_every_dialect),
        cmocka_unit_test(test_odd_bodies_fall_back),
        cmocka_unit_test(test_every_dialect_has_a_row),
        cmocka_unit_test(test_quirk_ids),
        cmocka_unit_test(test_hashes),
        cmocka_unit_test(test_bad_bodies_are_errors),
        cmocka_unit_test(test_cached_tools_new_messages),
        cmocka_unit_test(test_tools_found_small_and_large),
        cmocka_unit_test(test_custom_tools_turn_after_turn),
        cmocka_unit_test(test_known_tools_span),
        cmocka_unit_test(test_trim_request),
        cmocka_unit_test(test_response_format),
        cmocka_unit_test(test_shortcuts_change_nothing),
    };
    return cmocka_run_group_tests_name("pipeline", tests, NULL, NULL);
}
