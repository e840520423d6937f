/* fuzz_schema.c -- libFuzzer target: any JSON as a tool's parameters, for
 * every dialect. The request stages must accept or refuse it, never crash,
 * loop or leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *params = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!params)
        return 0;
    for (int i = 0; i < 3 * TG_D_COUNT; i++) {
        int d = i % TG_D_COUNT;
        /* the same schema as a tool's parameters, a legacy function's, and
         * a strict response_format's */
        json_t *body =
            i < TG_D_COUNT
                ? json_pack("{s:s, s:[{s:s,s:s}], s:[{s:s, s:{s:s, s:s, s:O}}]}", "model", "m",
                            "messages", "role", "user", "content", "hi", "tools", "type",
                            "function", "function", "name", "fuzz.tool", "description", "d",
                            "parameters", params)
            : i < 2 * TG_D_COUNT
                ? json_pack("{s:s, s:[{s:s,s:s}], s:[{s:s, s:O}], s:s}", "model", "m", "messages",
                            "role", "user", "content", "hi", "functions", "name", "fuzz.fn",
                            "parameters", params, "function_call", "auto")
                : json_pack("{s:s, s:[{s:s,s:s}], s:{s:s, s:{s:s, s:b, s:O}}}", "model", "m",
                            "messages", "role", "user", "content", "hi", "response_format",
                            "type", "json_schema", "json_schema", "name", "out", "strict", 1,
                            "schema", params);
        tg_rules_set rules;
        tg_rules_preset((tg_dialect)d, &rules);
        tg_ctx ctx;
        tg_ctx_init(&ctx, NULL, &rules, "_");
        tg_error err;
        tg_pipeline_request(body, &ctx, &err);
        char *s = json_dumps(body, JSON_COMPACT);
        free(s);
        tg_ctx_clear(&ctx);
        json_decref(body);
    }
    json_decref(params);
    return 0;
}
