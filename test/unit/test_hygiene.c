/* test_hygiene.c -- the message-hygiene stage against its vectors, plus the
 * properties a vector cannot state.
 *
 * Every file of test/vectors/hygiene/ is one test:
 *   {"name", "rule", "dialect", "strip_prefix"?, "rules"?: {conf key: value},
 *    "input": body, "expected": body, "stripped"?: n, "id_map"?: {...},
 *    "explain"?: [{"pointer", "rule", ...}]   (each must match a record)}
 * and is also run a second time over its own expected output, which must come
 * back unchanged with nothing stripped: the stage is a fixpoint, so turn N+1
 * of a conversation never re-rewrites what turn N already sent.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "pipeline/pipeline.h"

/* ---- helpers ------------------------------------------------------------ */

static void print_diff(const char *what, json_t *got, json_t *want)
{
    char *g = json_dumps(got, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    char *w = json_dumps(want, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    /* stdio, not print_error: cmocka truncates long messages */
    fprintf(stderr, "# %s mismatch\n--- expected\n%s\n--- got\n%s\n", what, w ? w : "(null)",
            g ? g : "(null)");
    free(g);
    free(w);
}

/* Runs the stage for `dialect` with optional conf overrides; the caller
 * clears ctx. */
static void run_stage_as(json_t *body, const char *dialect, json_t *overrides,
                         const char *prefix, tg_rules_set *rules, tg_ctx *ctx, bool no_shortcuts)
{
    int d = tg_dialect_from_name(dialect);
    if (d < 0)
        fail_msg("unknown dialect '%s'", dialect);
    tg_rules_preset((tg_dialect)d, rules);
    const char *key;
    json_t *val;
    json_object_foreach(overrides, key, val) {
        char msg[256];
        if (tg_msg_rules_set(&rules->msg, key, json_string_value(val), msg, sizeof msg))
            fail_msg("rule override %s: %s", key, msg);
    }
    tg_ctx_init(ctx, "test", rules, prefix);
    ctx->explain = json_array();
    ctx->no_shortcuts = no_shortcuts;
    tg_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(tg_hygiene_stage(body, ctx, &err), 0);
}

static void run_stage(json_t *body, const char *dialect, json_t *overrides,
                      const char *prefix, tg_rules_set *rules, tg_ctx *ctx)
{
    run_stage_as(body, dialect, overrides, prefix, rules, ctx, false);
}

/* The stage's shortcuts (ctx->no_shortcuts) change nothing: the body, the
 * explain records and the count are those of the long way. */
static bool same_as_long_way(json_t *input, const char *dialect, json_t *overrides,
                             const char *prefix)
{
    tg_rules_set rules;
    tg_ctx fast, slow;
    json_t *a = json_deep_copy(input), *b = json_deep_copy(input);
    run_stage_as(a, dialect, overrides, prefix, &rules, &fast, false);
    run_stage_as(b, dialect, overrides, prefix, &rules, &slow, true);
    bool ok = json_equal(a, b) && json_equal(fast.explain, slow.explain) &&
              (fast.id_map == slow.id_map || json_equal(fast.id_map, slow.id_map)) &&
              fast.stats.fields_stripped == slow.stats.fields_stripped;
    if (!ok)
        print_diff("shortcut", a, b);
    tg_ctx_clear(&fast);
    tg_ctx_clear(&slow);
    json_decref(a);
    json_decref(b);
    return ok;
}

static bool explain_has(json_t *explain, json_t *want)
{
    size_t i;
    json_t *rec;
    json_array_foreach(explain, i, rec) {
        const char *key;
        json_t *val;
        bool all = true;
        json_object_foreach(want, key, val)
            if (!json_equal(json_object_get(rec, key), val))
                all = false;
        if (all)
            return true;
    }
    return false;
}

/* ---- the vectors -------------------------------------------------------- */

typedef struct vector {
    char path[1024];
    char name[300];
} vector;

static void run_vector(void **state)
{
    const vector *v = *state;
    json_error_t jerr;
    json_t *vec = json_load_file(v->path, 0, &jerr);
    if (!vec)
        fail_msg("%s:%d: %s", v->path, jerr.line, jerr.text);
    const char *dialect = json_string_value(json_object_get(vec, "dialect"));
    json_t *input = json_object_get(vec, "input");
    json_t *expected = json_object_get(vec, "expected");
    json_t *overrides = json_object_get(vec, "rules");
    const char *prefix = json_string_value(json_object_get(vec, "strip_prefix"));
    assert_non_null(dialect);
    assert_non_null(input);
    assert_non_null(expected);

    tg_rules_set rules;
    tg_ctx ctx;
    json_t *body = json_deep_copy(input);
    run_stage(body, dialect, overrides, prefix, &rules, &ctx);
    bool ok = json_equal(body, expected);
    if (!ok)
        print_diff("body", body, expected);

    json_t *stripped = json_object_get(vec, "stripped");
    if (stripped && ctx.stats.fields_stripped != json_integer_value(stripped)) {
        print_error("fields_stripped: expected %lld, got %u\n",
                    (long long)json_integer_value(stripped), ctx.stats.fields_stripped);
        ok = false;
    }
    json_t *id_map = json_object_get(vec, "id_map");
    if (id_map && !json_equal(ctx.id_map, id_map)) {
        print_diff("id_map", ctx.id_map, id_map);
        ok = false;
    }
    size_t i;
    json_t *want;
    json_array_foreach(json_object_get(vec, "explain"), i, want) {
        if (!explain_has(ctx.explain, want)) {
            print_diff("explain record", ctx.explain, want);
            ok = false;
        }
    }
    tg_ctx_clear(&ctx);
    json_decref(body);
    if (!same_as_long_way(input, dialect, overrides, prefix) ||
        !same_as_long_way(expected, dialect, overrides, prefix))
        ok = false;

    /* fixpoint: the expected body is what the target accepts as is */
    body = json_deep_copy(expected);
    run_stage(body, dialect, overrides, prefix, &rules, &ctx);
    if (!json_equal(body, expected)) {
        print_diff("second pass", body, expected);
        ok = false;
    }
    if (ctx.stats.fields_stripped || json_array_size(ctx.explain)) {
        print_diff("second pass changes", ctx.explain, json_null());
        ok = false;
    }
    tg_ctx_clear(&ctx);
    json_decref(body);
    json_decref(vec);
    if (!ok)
        fail_msg("%s", v->name);
}

static int json_file(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return n > 5 && !strcmp(e->d_name + n - 5, ".json");
}

/* ---- properties --------------------------------------------------------- */

static bool mistral_id(const char *s)
{
    if (!s || strlen(s) != 9)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

static json_t *call_msg(const char *id, const char *name)
{
    return json_pack("{s:s, s:n, s:[{s:s, s:s, s:{s:s, s:s}}]}", "role", "assistant",
                     "content", "tool_calls", "id", id, "type", "function", "function",
                     "name", name, "arguments", "{\"q\":1}");
}

static json_t *tool_msg(const char *id)
{
    return json_pack("{s:s, s:s, s:s}", "role", "tool", "tool_call_id", id, "content", "ok");
}

/* Runs one Mistral turn over a copy of history and checks every call id and
 * its answer; fills seen {agent id: upstream id} and fails on any change. */
static void mistral_turn(json_t *history, json_t *seen)
{
    tg_rules_set rules;
    tg_ctx ctx;
    json_t *body = json_pack("{s:s, s:O}", "model", "mistral-large", "messages", history);
    json_t *copy = json_deep_copy(body);
    json_decref(body);
    run_stage(copy, "mistral", NULL, NULL, &rules, &ctx);

    json_t *in = history, *out = json_object_get(copy, "messages");
    size_t k = 0;  /* output index: bridges may be inserted */
    for (size_t i = 0; i < json_array_size(in); i++, k++) {
        json_t *a = json_array_get(in, i), *b = json_array_get(out, k);
        if (strcmp(json_string_value(json_object_get(a, "role")),
                   json_string_value(json_object_get(b, "role"))))
            b = json_array_get(out, ++k);  /* skip the bridge */
        json_t *ca = json_object_get(a, "tool_calls"), *cb = json_object_get(b, "tool_calls");
        for (size_t j = 0; j < json_array_size(ca); j++) {
            const char *orig = json_string_value(json_object_get(json_array_get(ca, j), "id"));
            const char *up = json_string_value(json_object_get(json_array_get(cb, j), "id"));
            assert_true(mistral_id(up));
            json_t *before = json_object_get(seen, orig);
            if (before)
                assert_string_equal(json_string_value(before), up);
            else
                json_object_set_new(seen, orig, json_string(up));
            if (strcmp(up, orig))  /* id_map records rewritten ids only */
                assert_string_equal(json_string_value(json_object_get(ctx.id_map, up)), orig);
            else
                assert_null(json_object_get(ctx.id_map, up));
        }
        const char *tid = json_string_value(json_object_get(a, "tool_call_id"));
        if (tid) {
            const char *up = json_string_value(json_object_get(b, "tool_call_id"));
            assert_non_null(json_object_get(seen, tid));
            assert_string_equal(json_string_value(json_object_get(seen, tid)), up);
        }
    }
    tg_ctx_clear(&ctx);
    json_decref(copy);
}

/* Issue #4: a three-turn tool conversation keeps its ids across turns
 * (rule 42, section 6 Mistral: the second turn is where Mistral 422s). */
static void test_mistral_multi_turn_ids(void **state)
{
    (void)state;
    json_t *seen = json_object();
    json_t *h = json_array();
    json_array_append_new(h, json_pack("{s:s, s:s}", "role", "system", "content", "be brief"));
    json_array_append_new(h, json_pack("{s:s, s:s}", "role", "user", "content", "weather?"));
    json_array_append_new(h, call_msg("call_0fypS1hVX", "get_weather"));
    json_array_append_new(h, tool_msg("call_0fypS1hVX"));
    mistral_turn(h, seen);  /* turn 1 */

    json_array_append_new(h, json_pack("{s:s, s:s}", "role", "assistant", "content", "Sunny."));
    json_array_append_new(h, json_pack("{s:s, s:s}", "role", "user", "content", "and files?"));
    json_t *two = call_msg("toolu_01A09q90qw90lq917835lq9", "ls");
    json_array_append_new(json_object_get(two, "tool_calls"),
                          json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", "abcDEF123", "type",
                                    "function", "function", "name", "cat", "arguments", "{}"));
    json_array_append_new(h, two);
    json_array_append_new(h, tool_msg("toolu_01A09q90qw90lq917835lq9"));
    json_array_append_new(h, tool_msg("abcDEF123"));
    mistral_turn(h, seen);  /* turn 2 */

    json_array_append_new(h, json_pack("{s:s, s:s}", "role", "user", "content", "thanks, now grep"));
    json_array_append_new(h, call_msg("functions.grep:7", "grep"));
    json_array_append_new(h, tool_msg("functions.grep:7"));
    mistral_turn(h, seen);  /* turn 3 */

    assert_int_equal(json_object_size(seen), 4);
    /* a native 9-char id is left as it is */
    assert_string_equal(json_string_value(json_object_get(seen, "abcDEF123")), "abcDEF123");
    /* four distinct upstream ids */
    json_t *distinct = json_object();
    const char *key;
    json_t *val;
    json_object_foreach(seen, key, val)
        json_object_set(distinct, json_string_value(val), val);
    assert_int_equal(json_object_size(distinct), 4);
    json_decref(distinct);
    json_decref(seen);
    json_decref(h);
}

/* A native id that happens to equal the hash of a foreign id keeps its value;
 * the foreign id, seen later, is salted to another id, the same every time. */
static void test_mistral_id_collision(void **state)
{
    (void)state;
    tg_rules_set rules;
    tg_ctx ctx;
    json_t *body = json_pack("{s:[o,o]}", "messages", call_msg("call_x", "f"), tool_msg("call_x"));
    run_stage(body, "mistral", NULL, NULL, &rules, &ctx);
    char h[16];
    snprintf(h, sizeof h, "%s",
             json_string_value(json_object_get(
                 json_array_get(json_object_get(json_array_get(json_object_get(body, "messages"), 0),
                                                "tool_calls"), 0), "id")));
    assert_true(mistral_id(h));
    tg_ctx_clear(&ctx);
    json_decref(body);

    char first[16] = "";
    for (int round = 0; round < 2; round++) {
        body = json_pack("{s:[o,o,o,o]}", "messages", call_msg(h, "f"), tool_msg(h),
                         call_msg("call_x", "g"), tool_msg("call_x"));
        run_stage(body, "mistral", NULL, NULL, &rules, &ctx);
        json_t *m = json_object_get(body, "messages");
        const char *id0 = json_string_value(json_object_get(
            json_array_get(json_object_get(json_array_get(m, 0), "tool_calls"), 0), "id"));
        const char *id2 = json_string_value(json_object_get(
            json_array_get(json_object_get(json_array_get(m, 2), "tool_calls"), 0), "id"));
        assert_string_equal(id0, h);
        assert_true(mistral_id(id2));
        assert_string_not_equal(id2, h);
        assert_string_equal(json_string_value(json_object_get(json_array_get(m, 3), "tool_call_id")), id2);
        if (round == 0)
            snprintf(first, sizeof first, "%s", id2);
        else
            assert_string_equal(first, id2);
        tg_ctx_clear(&ctx);
        json_decref(body);
    }
}

static void test_rules_set(void **state)
{
    (void)state;
    tg_msg_rules r;
    char msg[512];
    tg_msg_rules_preset(TG_D_MISTRAL, &r);
    assert_true(r.flags & TG_MR_MISTRAL_IDS);
    assert_int_equal(tg_msg_rules_set(&r, "mistral_ids", "off", msg, sizeof msg), 0);
    assert_false(r.flags & TG_MR_MISTRAL_IDS);
    assert_int_equal(tg_msg_rules_set(&r, "strip_unknown", "off", msg, sizeof msg), 0);
    assert_false(r.flags & (TG_MR_ALLOWLIST | TG_MR_CALL_SHAPE));
    assert_int_equal(tg_msg_rules_set(&r, "keep_reasoning", "ON", msg, sizeof msg), 0);
    assert_true(r.flags & TG_MR_KEEP_REASONING);
    assert_int_equal(tg_msg_rules_set(&r, "drop_nulls", "maybe", msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "messages.drop_nulls: expected on or off, got 'maybe'"));
    assert_int_equal(tg_msg_rules_set(&r, "strip_everything", "on", msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "unknown messages rule 'strip_everything'"));
    assert_non_null(strstr(msg, "keep_reasoning"));
    tg_msg_rules_preset(TG_D_PASSTHROUGH, &r);
    assert_int_equal(r.flags, 0);
    tg_msg_rules_preset(TG_D_GEMINI, &r);
    assert_true(r.flags & TG_MR_KEEP_SIGNATURE);
}

/* Bad input never crashes and is left alone where it is not ours to judge. */
static void test_bad_input(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "[1,2]",
        "{\"messages\": 7}",
        "{\"messages\": [1, \"x\", null, [], {}, {\"role\": 5}, {\"role\": null, \"content\": 3}]}",
        "{\"messages\": [{\"role\": \"assistant\", \"tool_calls\": \"nope\", \"content\": {}}]}",
        "{\"messages\": [{\"role\": \"assistant\", \"tool_calls\": [null, 3, [], {\"function\": 1},"
        " {\"function\": {\"arguments\": 12}, \"id\": 4}, {\"function\": {\"arguments\": [1]}}]}]}",
        "{\"messages\": [{\"role\": \"tool\", \"tool_call_id\": 9, \"content\": [null, 1, {\"type\": 2}]}]}",
        "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\"}, {\"type\": \"type\", \"_x\": 1}]}]}",
        "{\"messages\": [{\"role\": \"tool\"}, {\"role\": \"user\"}, {\"role\": \"assistant\", \"content\": []}]}",
        "{\"messages\": [{\"role\": \"assistant\", \"tool_calls\": [{\"id\": \"a\\u0000b\", \"function\":"
        " {\"name\": \"f\", \"arguments\": \"\\\"{\\\\\\\"a\\\\\\\":1}\\\"\"}}]}]}",
        "{\"_x\": null, \"seed\": 1, \"random_seed\": 2, \"max_completion_tokens\": 5, \"messages\": []}",
    };
    static const char *const prefixes[] = {"_", "", "t", "r", "role"};
    for (size_t b = 0; b < sizeof bodies / sizeof bodies[0]; b++) {
        for (int d = 0; d < TG_D_COUNT; d++) {
            for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++) {
                json_error_t jerr;
                json_t *body = json_loads(bodies[b], JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
                if (!body)
                    fail_msg("body %zu: %s", b, jerr.text);
                tg_rules_set rules;
                tg_ctx ctx;
                run_stage(body, tg_dialect_name((tg_dialect)d), NULL, prefixes[p], &rules, &ctx);
                tg_ctx_clear(&ctx);
                json_decref(body);
            }
        }
    }
    /* a stage run with no rules and no explain log */
    tg_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.dialect = TG_D_GROQ;
    json_t *body = json_loads("{\"store\": true, \"messages\": [{\"role\": \"user\", \"content\": \"x\","
                              " \"id\": 1}]}", 0, NULL);
    assert_int_equal(tg_hygiene_stage(body, &ctx, NULL), 0);
    assert_null(json_object_get(body, "store"));
    assert_int_equal(ctx.stats.fields_stripped, 2);
    tg_ctx_clear(&ctx);  /* what was dropped is listed for the header */
    json_decref(body);
}

/* One walk, no re-serialization: 20000 messages stay well under a second. */
static void test_large_body(void **state)
{
    (void)state;
    json_t *msgs = json_array();
    for (int i = 0; i < 5000; i++) {
        char id[32];
        snprintf(id, sizeof id, "call_%d", i);
        json_array_append_new(msgs, json_pack("{s:s, s:s, s:s}", "role", "user", "content",
                                              "a fairly ordinary user message", "_ts", "x"));
        json_array_append_new(msgs, call_msg(id, "f"));
        json_array_append_new(msgs, tool_msg(id));
        json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "assistant", "content", "ok"));
    }
    json_t *body = json_pack("{s:s, s:o}", "model", "m", "messages", msgs);
    tg_rules_set rules;
    tg_ctx ctx;
    clock_t t0 = clock();
    run_stage(body, "mistral", NULL, NULL, &rules, &ctx);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    assert_int_equal(json_object_size(ctx.id_map), 5000);
    assert_true(secs < 2.0);
    tg_ctx_clear(&ctx);
    json_decref(body);
}

/* A route's drop_params: the keys go on any dialect, even one that keeps
 * them (openai keeps prompt_cache_key), named in ctx->dropped, with the
 * stage's shortcuts on and off alike. */
static void test_drop_params(void **state)
{
    (void)state;
    char *drop[] = {"prompt_cache_key", "safety_identifier", NULL};
    const char *dialects[] = {"openai", "passthrough", "mistral", NULL};
    for (const char **d = dialects; *d; d++) {
        for (int slow = 0; slow < 2; slow++) {
            json_t *body = json_pack("{s:s, s:[{s:s, s:s}], s:s, s:s, s:f}", "model", "deepseek-v3",
                                     "messages", "role", "user", "content", "hi",
                                     "prompt_cache_key", "k1", "safety_identifier", "u1",
                                     "temperature", 0.5);
            tg_rules_set rules;
            tg_ctx ctx;
            tg_rules_preset((tg_dialect)tg_dialect_from_name(*d), &rules);
            rules.msg.drop = drop;
            tg_ctx_init(&ctx, "test", &rules, NULL);
            ctx.no_shortcuts = slow;
            tg_error err;
            memset(&err, 0, sizeof err);
            assert_int_equal(tg_hygiene_stage(body, &ctx, &err), 0);
            assert_null(json_object_get(body, "prompt_cache_key"));
            assert_null(json_object_get(body, "safety_identifier"));
            assert_non_null(json_object_get(body, "temperature"));
            assert_int_equal(json_array_size(ctx.dropped), 2);
            tg_ctx_clear(&ctx);
            json_decref(body);
        }
    }
}

/* Reasoning a target refuses (Gemini, a strict validator, DeepSeek off a
 * tool turn) is left out and named in ctx->dropped (X-Toolgate-Dropped)
 * once, however many turns had it. */
static void test_reasoning_said(void **state)
{
    (void)state;
    const char *dialects[] = {"gemini", "groq", "deepseek", NULL};
    for (const char **d = dialects; *d; d++) {
        json_t *body = json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s}]}",
                                 "model", "m", "messages", "role", "user", "content", "a",
                                 "role", "assistant", "content", "b", "reasoning_content", "r1",
                                 "role", "user", "content", "c",
                                 "role", "assistant", "content", "d", "reasoning_content", "r2",
                                 "role", "user", "content", "e");
        tg_rules_set rules;
        tg_ctx ctx;
        run_stage(body, *d, NULL, NULL, &rules, &ctx);
        json_t *a = json_array_get(json_object_get(body, "messages"), 1);
        int kept = json_object_get(a, "reasoning_content") != NULL;
        size_t named = 0;
        for (size_t i = 0; i < json_array_size(ctx.dropped); i++)
            named += !strcmp(json_string_value(json_array_get(ctx.dropped, i)),
                             "messages[].reasoning_content");
        assert_false(kept);  /* DeepSeek refuses it off a tool turn too (rule 52) */
        assert_int_equal(named, 1);
        tg_ctx_clear(&ctx);
        json_decref(body);
    }
}

int main(void)
{
    const char *root = getenv("TG_ROOT");
    char dir[400];
    snprintf(dir, sizeof dir, "%s/test/vectors/hygiene", root ? root : ".");
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, json_file, alphasort);
    if (n < 0) {
        fprintf(stderr, "cannot read %s\n", dir);
        n = 0;
    }
    static const struct CMUnitTest fixed[] = {
        cmocka_unit_test(test_mistral_multi_turn_ids),
        cmocka_unit_test(test_mistral_id_collision),
        cmocka_unit_test(test_rules_set),
        cmocka_unit_test(test_drop_params),
        cmocka_unit_test(test_reasoning_said),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_large_body),
    };
    size_t nfixed = sizeof fixed / sizeof fixed[0];
    struct CMUnitTest *tests = calloc(nfixed + (size_t)n, sizeof *tests);
    vector *vecs = calloc((size_t)n + 1, sizeof *vecs);
    memcpy(tests, fixed, sizeof fixed);
    for (int i = 0; i < n; i++) {
        snprintf(vecs[i].path, sizeof vecs[i].path, "%s/%s", dir, ents[i]->d_name);
        snprintf(vecs[i].name, sizeof vecs[i].name, "vector %s", ents[i]->d_name);
        tests[nfixed + i] = (struct CMUnitTest){vecs[i].name, run_vector, NULL, NULL, &vecs[i]};
        free(ents[i]);
    }
    free(ents);
    int rc = _cmocka_run_group_tests("hygiene", tests, nfixed + (size_t)n, NULL, NULL);
    free(tests);
    free(vecs);
    /* an empty vector directory is a failure, not a pass */
    return rc ? rc : (n == 0);
}
