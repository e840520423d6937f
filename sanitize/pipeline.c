/* pipeline.c -- the stage order (see pipeline.h). This file is the one place
 * that says which stage runs after which; each stage lives in its own file. */
#include "pipeline.h"

#include <string.h>

void tg_rules_preset(tg_dialect d, tg_rules_set *out)
{
    memset(out, 0, sizeof *out);
    tg_schema_rules_preset(d, &out->schema);
    tg_msg_rules_preset(d, &out->msg);
    tg_repair_rules_preset(d, &out->repair);
    out->disc.mode = TG_DISC_OFF;
    out->disc.threshold = 40;
    out->disc.search_schemas = 3;
    out->disc.max_rounds = 4;
    out->disc.list_names = 1;
}

void tg_ctx_init(tg_ctx *ctx, const char *route_name, const tg_rules_set *rules,
                 const char *strip_prefix)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->route_name = route_name;
    ctx->dialect = rules->schema.dialect;
    ctx->schema = &rules->schema;
    ctx->msg = &rules->msg;
    ctx->repair = &rules->repair;
    ctx->disc = &rules->disc;
    ctx->strip_prefix = strip_prefix ? strip_prefix : "_";
}

void tg_ctx_clear(tg_ctx *ctx)
{
    json_decref(ctx->explain);
    json_decref(ctx->tools);
    json_decref(ctx->name_map);
    json_decref(ctx->arg_inverse);
    json_decref(ctx->id_map);
    json_decref(ctx->disc_state);
    json_decref(ctx->request);
    ctx->explain = ctx->tools = ctx->name_map = ctx->arg_inverse = NULL;
    ctx->id_map = ctx->disc_state = ctx->request = NULL;
}

int tg_pipeline_request(json_t *body, tg_ctx *ctx, tg_error *err)
{
    json_t *tools = json_object_get(body, "tools");
    if (json_is_array(tools)) {
        ctx->tools = json_incref(tools);
        ctx->stats.tools_in = (unsigned)json_array_size(tools);
    }
    ctx->stream = json_is_true(json_object_get(body, "stream"));

    if (tg_hygiene_stage(body, ctx, err))
        return -1;
    if (tg_schema_stage(body, ctx, err))
        return -1;
    if (tg_discovery_stage(body, ctx, err))
        return -1;

    tools = json_object_get(body, "tools");
    ctx->stats.tools_out = json_is_array(tools) ? (unsigned)json_array_size(tools) : 0;
    return 0;
}

int tg_pipeline_response(json_t *resp, tg_ctx *ctx, json_t **next_body)
{
    *next_body = NULL;
    tg_repair_response(resp, ctx);
    return tg_discovery_intercept(resp, ctx, next_body);
}
