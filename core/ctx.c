/* ctx.c -- what the per-request context owns, and how it lets go (ctx.h). */
#include "core/ctx.h"

#include <string.h>

void tg_ctx_clear(tg_ctx *ctx)
{
    json_decref(ctx->explain);
    json_decref(ctx->tools);
    json_decref(ctx->name_map);
    json_decref(ctx->arg_inverse);
    json_decref(ctx->rf_inverse);
    json_decref(ctx->id_map);
    json_decref(ctx->dropped);
    json_decref(ctx->disc_state);
    json_decref(ctx->request);
    json_decref(ctx->custom_tools);
    json_decref(ctx->translated);
    ctx->custom_tools = ctx->translated = NULL;
    json_decref(ctx->opaque_out);
    ctx->opaque_out = NULL;
    ctx->explain = ctx->tools = ctx->name_map = ctx->arg_inverse = ctx->rf_inverse = NULL;
    ctx->id_map = ctx->dropped = ctx->disc_state = ctx->request = NULL;
}

bool tg_ctx_trim_request(tg_ctx *ctx)
{
    if (ctx->disc_state || !ctx->request)
        return false;
    /* what repair.c and repair_stream.c read from the request */
    static const char *const keep[] = {"model", "tool_choice"};
    json_t *slim = json_object();
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
        json_t *v = json_object_get(ctx->request, keep[i]);
        if (v)
            json_object_set(slim, keep[i], v);
    }
    json_decref(ctx->request);
    ctx->request = slim;
    return true;
}

void tg_ctx_translated(tg_ctx *ctx, const char *kind, const char *what)
{
    if (!ctx->translated)
        ctx->translated = json_object();
    json_t *list = json_object_get(ctx->translated, kind);
    if (!list)
        json_object_set_new(ctx->translated, kind, list = json_array());
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) if (!strcmp(json_string_value(v), what)) return;
    json_array_append_new(list, json_string(what));
}
