/* test_plain.c -- the byte-level shortcut that relays whole answers without
 * parsing must say "plain" only when no repair rule could apply; every
 * answer it lets through must also come out of the full repair unchanged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "pipeline/pipeline.h"

static const char *const plain[] = {
    "{\"id\":\"x\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
    "\"assistant\",\"content\":\"hello\"},\"finish_reason\":\"stop\"}],\"usage\":{\"total_tokens\":3}}",
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_answers),
        cmocka_unit_test(test_answers_that_need_a_look),
        cmocka_unit_test(test_pending_work_forces_a_parse),
    };
    return cmocka_run_group_tests_name("plain", tests, NULL, NULL);
}
