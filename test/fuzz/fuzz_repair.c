/* fuzz_repair.c -- libFuzzer target: any bytes as a provider's answer, both
 * as a whole JSON body and as an SSE stream, through the response stages. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/sse.h"
#include "pipeline/pipeline.h"

static void on_event(void *u, const char *event, const char *data, size_t len)
{
    (void)event;
    tg_buf *out = ((tg_buf **)u)[1];
    tg_stream_event(((tg_stream **)u)[0], data, len, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char tools[] =
        "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":"
        "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"days\":"
        "{\"type\":\"integer\"},\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}}}]";
    tg_rules_set rules;
    tg_rules_preset(size ? (tg_dialect)(data[0] % TG_D_COUNT) : TG_D_OPENAI, &rules);
    rules.repair.text_tool_calls = size > 1 && (data[1] & 1);
    tg_ctx ctx;
    tg_ctx_init(&ctx, NULL, &rules, "_");
    ctx.tools = json_loads(tools, 0, NULL);
    /* the answer shapes the request can ask for: legacy function_call, and
     * a strict response_format whose optional properties became nullable */
    ctx.legacy_functions = size > 1 && (data[1] & 2);
    if (size > 1 && (data[1] & 4))
        ctx.rf_inverse = json_loads("{\"o\":[\"city\",\"days\"],\"p\":{\"tags\":{\"o\":[]}}}",
                                    0, NULL);

    json_t *resp = json_loadb((const char *)data, size, 0, NULL);
    if (resp) {
        json_t *next = NULL;
        tg_pipeline_response(resp, &ctx, &next);
        json_decref(next);
        json_decref(resp);
    }

    ctx.stream = true;
    tg_buf out = {0};
    tg_stream *s = tg_stream_new(&ctx);
    void *u[2] = {s, &out};
    tg_sse p;
    tg_sse_init(&p, on_event, NULL, u);
    tg_sse_feed(&p, (const char *)data, size);
    tg_sse_finish(&p);
    json_t *next = NULL;
    tg_stream_end(s, false, &out, &next);
    json_decref(next);
    tg_stream_free(s);
    tg_sse_free(&p);
    tg_buf_free(&out);
    tg_ctx_clear(&ctx);
    return 0;
}
