/* repair_base.c -- the questions every repair file asks and the record it
 * leaves (repair_base.h): whether a rule is on, whether a name is one of
 * the agent's tools, and one repair or failure counted in the request's
 * stats and written into its explain record. Nothing here repairs. */
#include "repair/repair_base.h"

#include "core/jsonio.h"
#include "sanitize/schema.h"

static void note(tg_ctx *ctx, tg_quirk q, const char *rule, const char *where, json_t *before,
                 json_t *after)
{
    ctx->stats.repairs++;
    ctx->stats.quirks[q]++;
    tg_explain_add(ctx->explain, "repair", where, NULL, rule, before, after);
}

void tg_rr_note(tg_ctx *ctx, tg_quirk q, const char *where, json_t *before, json_t *after)
{
    const char *rule = tg_quirk_name(q);
    note(ctx, rule ? q : TG_Q_OTHER, rule ? rule : "other", where, before, after);
}

void tg_rr_note_other(tg_ctx *ctx, const char *rule, const char *where, json_t *before,
                      json_t *after)
{
    note(ctx, TG_Q_OTHER, rule, where, before, after);
}

void tg_rr_fail(tg_ctx *ctx, const char *rule, const char *where, json_t *before)
{
    ctx->stats.repair_failures++;
    tg_explain_add(ctx->explain, "repair", where, NULL, rule, before, NULL);
}

const json_t *tg_rr_tool_peek(const tg_ctx *ctx, const char *agent_name)
{
    return tg_tool_peek(ctx->tools, agent_name);
}

bool tg_rr_declared(const tg_ctx *ctx, const char *upstream_name)
{
    if (!upstream_name || !*upstream_name)
        return false;
    return tg_rr_tool_peek(ctx, tg_schema_agent_name(ctx, upstream_name)) != NULL;
}

bool tg_rr_text_calls_on(const tg_ctx *ctx)
{
    if (!ctx->repair || !ctx->repair->text_tool_calls)
        return false;
    if (!json_is_array(ctx->tools) || json_array_size(ctx->tools) == 0)
        return false;
    const char *tc = json_string_value(json_object_get(ctx->request, "tool_choice"));
    return !(tc && !strcmp(tc, "none"));
}
