/* fuzz_discovery.c -- libFuzzer target: any bytes as what a model writes to
 * the discovery meta-tools. A 48-tool catalog (three groups, names in the
 * forms agents send) is staged through the request pipeline on the dialect
 * the first byte picks; the rest is the arguments text of a search_tools,
 * a get_tool_schema, a call_tool and a loosely named direct call in one
 * answer, answered whole (tg_pipeline_response: the rounds, the
 * conversion, the repair) and as a streamed round (tg_discovery_stream_round).
 * With the first byte's high bit set, the rest is a whole answer instead. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discovery/discovery.h"
#include "pipeline/pipeline.h"

static json_t *catalog(void)
{
    static const char *const groups[] = { "docker-", "git_", "mcp__slack__" };
    static const char *const verbs[] = { "logs", "list", "create", "delete", "get", "update",
                                         "search", "run", "stop", "send", "read", "write",
                                         "move", "copy", "status", "show" };
    json_t *tools = json_array();
    for (size_t g = 0; g < 3; g++)
        for (size_t v = 0; v < 16; v++) {
            char name[64], desc[128];
            snprintf(name, sizeof name, "%s%s", groups[g], verbs[v]);
            snprintf(desc, sizeof desc, "%s things in %s, with a limit and tags.", verbs[v],
                     groups[g]);
            json_array_append_new(
                tools, json_pack("{sss{sssss{sss{s{ss}s{ss}s{ss}s{ss}}s[s]}}}", "type", "function",
                                 "function", "name", name, "description", desc, "parameters",
                                 "type", "object", "properties", "id", "type", "string", "limit",
                                 "type", "integer", "tags", "type", "array", "flag", "type",
                                 "boolean", "required", "id"));
        }
    return tools;
}

static const char *meta_name(json_t *body, const char *base)
{
    json_t *tools = json_object_get(body, "tools"), *t;
    size_t i, lb = strlen(base);
    json_array_foreach(tools, i, t) {
        const char *n = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
        size_t ln = n ? strlen(n) : 0;
        if (ln >= lb && strcmp(n + ln - lb, base) == 0)
            return n;
    }
    return base;
}

static json_t *calls(json_t *body, const char *args, size_t n)
{
    static const char *const metas[] = { "search_tools", "get_tool_schema", "call_tool" };
    json_t *out = json_array();
    for (size_t i = 0; i < 4; i++) {
        char id[16];
        snprintf(id, sizeof id, "call%zu", i);
        json_array_append_new(out, json_pack("{sssss{ssso*}}", "id", id, "type", "function",
                                             "function", "name",
                                             i < 3 ? meta_name(body, metas[i]) : "Docker_Logs",
                                             "arguments", json_stringn(args, n)));
    }
    return out;
}

static json_t *answer(json_t *tool_calls)
{
    return json_pack("{sss[{sis{sssnso}ss}]}", "id", "chatcmpl-f", "choices", "index", 0,
                     "message", "role", "assistant", "content", "tool_calls", tool_calls,
                     "finish_reason", "tool_calls");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    tg_rules_set rules;
    tg_rules_preset((tg_dialect)((data[0] & 0x7f) % TG_D_COUNT), &rules);
    rules.disc.mode = TG_DISC_AUTO;  /* 48 tools, above the threshold */
    tg_ctx ctx;
    tg_ctx_init(&ctx, "r", &rules, NULL);
    json_t *body = json_pack("{sss[{ssss}]so}", "model", "m", "messages", "role", "user",
                             "content", "hello", "tools", catalog());
    tg_error err;
    if (tg_pipeline_request(body, &ctx, &err) != 0)
        goto done;
    const char *rest = (const char *)data + 1;
    json_t *resp = NULL, *tc = NULL;
    if (data[0] & 0x80) {
        resp = json_loadb(rest, size - 1, 0, NULL);
    } else {
        tc = calls(body, rest, size - 1);  /* NULL args when not UTF-8: json_stringn refuses */
        resp = answer(json_incref(tc));
    }
    if (resp) {
        json_t *next = NULL;
        tg_pipeline_response(resp, &ctx, &next);
        json_decref(next);
        json_decref(resp);
    }
    if (tc) {
        json_t *msg = json_pack("{sssnsO}", "role", "assistant", "content", "tool_calls", tc);
        json_t *emit = NULL, *next = NULL;
        json_object_set_new(ctx.disc_state, "rounds", json_integer(0));
        tg_discovery_stream_round(&ctx, msg, &emit, &next);
        json_decref(emit);
        json_decref(next);
        json_decref(msg);
        json_decref(tc);
    }
done:
    json_decref(body);
    tg_ctx_clear(&ctx);
    return 0;
}
