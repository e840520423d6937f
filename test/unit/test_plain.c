/* test_plain.c -- the byte-level shortcut that relays whole answers without
 * parsing must say "plain" only when no repair rule could apply; every
 * answer it lets through must also come out of the full repair unchanged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "core/tg.h"
#include "pipeline/pipeline.h"

static const char *const plain[] = {
    "{\"id\":\"x\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
    "\"assistant\",\"content\":\"hello\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"total_tokens\":3}}",
    "  {\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"a [b] {c}\"},\"finish_reason\":\"length\"}]}\n",
    "{\"choices\":[]}",
};

static const char *const not_plain[] = {
    /* tool calls, in any form or place */
    "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[]},\"finish_reason\":\"tool_calls\"}]}",
    "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"x\"},\"finish_reason\":\"tool_calls\"}]}",
    "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"function_call\":{\"name\":\"f\"}}}]}",
    /* R23 content list, R25 empty role */
    "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\": [{\"type\":\"text\",\"text\":\"x\"}]}}]}",
    "{\"choices\":[{\"message\":{\"role\":\"\",\"content\":\"x\"},\"finish_reason\":\"stop\"}]}",
    /* errors (R27) and anything that is not one balanced JSON object */
    "{\"error\":{\"message\":\"x\",\"code\":\"tool_use_failed\"}}",
    "{\"choices\": [ this is not json",
    "[1,2]",
    "",
    "{\"a\":1} {\"b\":2}",
};

static void ctx_for(tg_ctx *ctx, tg_rules_set *rules)
{
    tg_rules_preset(TG_D_OPENAI, rules);
    tg_ctx_init(ctx, "r", rules, "_");
}

static void test_plain_answers(void **state)
{
    (void)state;
    tg_rules_set rules;
    tg_ctx ctx;
    ctx_for(&ctx, &rules);
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        assert_true(tg_repair_surely_plain(&ctx, plain[i], strlen(plain[i])));
        /* and the full repair agrees: it changes nothing */
        json_t *resp = json_loads(plain[i], 0, NULL);
        json_t *copy = json_deep_copy(resp);
        unsigned before = ctx.stats.repairs;
        json_t *next = NULL;
        tg_pipeline_response(resp, &ctx, &next);
        assert_null(next);
        assert_int_equal(ctx.stats.repairs, before);
        assert_true(json_equal(resp, copy));
        json_decref(resp);
        json_decref(copy);
    }
    tg_ctx_clear(&ctx);
}

static void test_answers_that_need_a_look(void **state)
{
    (void)state;
    tg_rules_set rules;
    tg_ctx ctx;
    ctx_for(&ctx, &rules);
    for (size_t i = 0; i < sizeof not_plain / sizeof not_plain[0]; i++)
        assert_false(tg_repair_surely_plain(&ctx, not_plain[i], strlen(not_plain[i])));
    tg_ctx_clear(&ctx);
}

static void test_pending_work_forces_a_parse(void **state)
{
    (void)state;
    tg_rules_set rules;
    tg_ctx ctx;
    ctx_for(&ctx, &rules);
    ctx.disc_state = json_object();  /* a discovery round sums usage */
    assert_false(tg_repair_surely_plain(&ctx, plain[0], strlen(plain[0])));
    json_decref(ctx.disc_state);
    ctx.disc_state = NULL;
    rules.repair.text_tool_calls = true;  /* R12 may find a call in the text */
    ctx.tools = json_loads("[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]", 0, NULL);
    assert_false(tg_repair_surely_plain(&ctx, plain[0], strlen(plain[0])));
    tg_ctx_clear(&ctx);
}

/* The shortcut as it was written first (tg_json_value_end, then a byte
 * search for each word): tg_repair_surely_plain's one pass must answer
 * as this does on every input. */
static const char *find(const char *s, const char *e, const char *needle)
{
    size_t n = strlen(needle);
    if (!s || e < s || (size_t)(e - s) < n)
        return NULL;
    return memmem(s, (size_t)(e - s), needle, n);
}

static const char *after_colon(const char *p, const char *e)
{
    while (p < e && *p != ':')
        p++;
    for (p++; p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'); p++)
        ;
    return p;
}

static bool reference_plain(const char *d, size_t n)
{
    const char *e = d + n;
    while (d < e && (*d == ' ' || *d == '\n' || *d == '\r' || *d == '\t'))
        d++;
    while (e > d && (e[-1] == ' ' || e[-1] == '\n' || e[-1] == '\r' || e[-1] == '\t'))
        e--;
    if (d == e || *d != '{' || tg_json_value_end(d, e) != e)
        return false;
    if (find(d, e, "tool_calls") || find(d, e, "function_call") || find(d, e, "\"error\""))
        return false;
    for (const char *p = find(d, e, "\"content\""); p; p = find(p + 1, e, "\"content\"")) {
        const char *v = after_colon(p + 9, e);
        if (v < e && *v == '[')
            return false;
    }
    for (const char *p = find(d, e, "\"role\""); p; p = find(p + 1, e, "\"role\"")) {
        const char *v = after_colon(p + 6, e);
        if (e - v < 3 || v[0] != '"' || v[1] == '"')
            return false;
    }
    return true;
}

/* Answers made of the pieces the scan turns on (quotes, escapes,
 * brackets, the words and their near misses), cut anywhere: the one pass
 * and the reference agree on each. */
static void test_one_pass_matches_the_searches(void **state)
{
    (void)state;
    static const char *const pieces[] = {
        "{", "}", "[", "]", "\"", "\\", "\\\"", ":", ",", " ", "\n", "a", "_", "x_y",
        "\"role\"", "\"role\":", "\"assistant\"", "\"\"", "\"content\"", "\"content\":",
        " [", "\"error\"", "\"erro", "tool_calls", "tool_call", "ool_calls", "function_call",
        "unction_call", "function_cal", "\"content\"content\"", "null", "\"x\"", "1",
    };
    tg_rules_set rules;
    tg_ctx ctx;
    ctx_for(&ctx, &rules);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    unsigned agree_true = 0, with_escape = 0;  /* plain ones, and of them with a backslash */
    char buf[512];
    for (int round = 0; round < 200000; round++) {
        size_t len = 0;
        if (round % 3)
            buf[len++] = '{';
        int n = 1 + (int)(seed % 24);
        for (int i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            const char *pc = pieces[(seed >> 33) % (sizeof pieces / sizeof pieces[0])];
            size_t k = strlen(pc);
            if (len + k + 2 > sizeof buf)
                break;
            memcpy(buf + len, pc, k);
            len += k;
        }
        if (round % 2)
            buf[len++] = '}';
        buf[len] = '\0';
        for (size_t cut = len; cut + 4 > len && cut > 0; cut--) {
            bool want = reference_plain(buf, cut);
            bool got = tg_repair_surely_plain(&ctx, buf, cut);
            if (want != got)
                print_error("%.*s: one pass says %d, the searches %d\n", (int)cut, buf, got, want);
            assert_int_equal(got, want);
            agree_true += want;
            with_escape += want && memchr(buf, '\\', cut);
        }
    }
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        assert_true(reference_plain(plain[i], strlen(plain[i])));
    for (size_t i = 0; i < sizeof not_plain / sizeof not_plain[0]; i++)
        assert_false(reference_plain(not_plain[i], strlen(not_plain[i])));
    /* both answers were asked for, many times, on both of the pass's ways
     * (quote to quote, and byte by byte where a backslash is) */
    assert_true(agree_true > 1000);
    assert_true(with_escape > 100 && agree_true - with_escape > 100);
    tg_ctx_clear(&ctx);
}

/* R10 on the shortcut: an answer whose choice has no finish_reason, or
 * a word that is not OpenAI's, goes to the parse (repair_choice). */
static void test_finish_words_force_a_parse(void **state)
{
    (void)state;
    /* choices: [] is plain (nothing to repair); choices not a list is the
     * parse's (need[] below) */
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        assert_true(tg_repair_finish_plain(plain[i], strlen(plain[i])));
    static const char *const need[] = {
        /* R22: usage without OpenAI's three counters; R26: choices not a list */
        "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"x\"},\"finish_reason\":\"stop\"}],\"usage\":{\"total_tokens\":3}}",
        "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"x\"},\"finish_reason\":\"stop\"}],\"usage\":{}}",
        "{\"id\":\"x\",\"choices\":null,\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":0,\"total_tokens\":0}}",
        "{\"id\":\"x\"}",
        "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"Hello\"}}]}",
        "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"x\"},\"finish_reason\":\"eos\"}]}",
        "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"x\"},\"finish_reason\":\"end_turn\"}]}",
        "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"x\"},\"finish_reason\":null}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"},\"finish_reason\":\"stop\"},"
        "{\"message\":{\"content\":\"b\"}}]}",
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        assert_false(tg_repair_finish_plain(need[i], strlen(need[i])));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_answers),
        cmocka_unit_test(test_answers_that_need_a_look),
        cmocka_unit_test(test_pending_work_forces_a_parse),
        cmocka_unit_test(test_one_pass_matches_the_searches),
        cmocka_unit_test(test_finish_words_force_a_parse),
    };
    return cmocka_run_group_tests_name("plain", tests, NULL, NULL);
}
