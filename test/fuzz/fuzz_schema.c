/* fuzz_schema.c -- libFuzzer target: any JSON as a tool's parameters, for
 * every dialect. The request stages must accept or refuse it, never crash,
 * loop or leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../sanitize/pipeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *params = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!params)
        return 0;
    for (int d = 0; d < TG_D_COUNT; d++) {
        json_t *body = json_pack("{s:s, s:[{s:s,s:s}], s:[{s:s, s:{s:s, s:s, s:O}}]}", "model", "m",
                                 "messages", "role", "user", "content", "hi", "tools", "type",
                                 "function", "function", "name", "fuzz.tool", "description", "d",
                                 "parameters", params);
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
