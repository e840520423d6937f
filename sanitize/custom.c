/* custom.c -- chat custom tools as function tools (custom.h).
 *
 * The same translation the Responses bridge makes of its custom tools
 * (bridge/responses_request.c, custom_function), here for chat requests: one
 * pass over tools, tool_choice and the assistant messages' tool_calls,
 * ahead of every other stage, so hygiene, the schema dialect and repair
 * see only function tools and calls. Nothing is allocated when the request
 * has no custom tool or call (the common case costs one look per entry).
 */
#include "sanitize/custom.h"

#include <string.h>

#include "core/buf.h"
#include "core/cache.h"
#include "core/ctx.h"
#include "core/jsonio.h"

static bool is_custom(const json_t *o)
{
    const char *t = json_string_value(tg_json_get(o, "type"));
    return t && !strcmp(t, "custom") && tg_json_is(tg_json_get(o, "custom"), JSON_OBJECT);
}

/* The description a model reads: the tool's own, then what its input is
 * (the grammar whole, so that the model writes what the tool parses). */
static char *describe(const json_t *c)
{
    tg_buf d = {0};
    const char *desc = json_string_value(tg_json_get(c, "description"));
    const json_t *fmt = tg_json_get(c, "format");
    const char *ft = json_string_value(tg_json_get(fmt, "type"));
    const json_t *g = tg_json_get(fmt, "grammar");
    const char *syntax = json_string_value(tg_json_get(g, "syntax"));
    const char *def = json_string_value(tg_json_get(g, "definition"));
    tg_buf_puts(&d, desc ? desc : "");
    if (ft && !strcmp(ft, "grammar") && def && *def) {
        tg_buf_printf(&d, "%sThe input must follow this %s grammar:\n", d.len ? "\n\n" : "",
                      syntax ? syntax : "");
        tg_buf_puts(&d, def);
    } else {
        tg_buf_printf(&d, "%sThe input is free text, passed to the tool as it is.",
                      d.len ? "\n\n" : "");
    }
    size_t n;
    return tg_buf_steal(&d, &n);
}

/* A custom tool as a function tool taking {"input": text}. New reference. */
static json_t *as_function(tg_ctx *ctx, const json_t *c)
{
    const json_t *name = tg_json_get(c, "name");
    if (!json_is_string(name))
        return NULL;
    char *desc = describe(c);
    json_t *fn = json_pack("{s:O, s:s, s:{s:s, s:{s:{s:s, s:s}}, s:[s]}}", "name", name,
                           "description", desc, "parameters", "type", "object", "properties",
                           "input", "type", "string", "description",
                           "the tool's whole input text", "required", "input");
    free(desc);
    if (!ctx->custom_tools)
        ctx->custom_tools = json_object();
    json_object_set_new(ctx->custom_tools, json_string_value(name), json_true());
    tg_ctx_translated(ctx, "custom_tool", json_string_value(name));
    return json_pack("{s:s, s:o}", "type", "function", "function", fn);
}

/* An agent resends its tool list every turn (ctx->tools_hash names its
 * bytes, pipeline.c): a list found without custom tools is not walked
 * again (a look per tool, 19,000 instructions a request for a hundred). */
static bool known_plain(const tg_ctx *ctx)
{
    if (!ctx->cache || !ctx->tools_hash || ctx->no_shortcuts)
        return false;
    json_t *seen = tg_cache_get(ctx->cache, "nocustom", ctx->tools_hash);
    json_decref(seen);
    return seen != NULL;
}

static void tools(json_t *body, tg_ctx *ctx, json_t *in)
{
    size_t i;
    json_t *t;
    bool any = false;
    if (!json_array_size(in) || known_plain(ctx))
        return;
    json_array_foreach(in, i, t) any = any || is_custom(t);
    if (!any) {
        if (ctx->cache && ctx->tools_hash)
            tg_cache_put(ctx->cache, "nocustom", ctx->tools_hash, json_true(), 16);
        return;
    }
    json_t *out = json_array();
    json_array_foreach(in, i, t) {
        json_t *f = is_custom(t) ? as_function(ctx, tg_json_get(t, "custom")) : NULL;
        json_array_append_new(out, f ? f : json_incref(t));
    }
    json_object_set_new(body, "tools", out);
}

/* {"type":"custom","custom":{"name"}} as the function choice; a new
 * reference, or NULL when c is no custom choice. */
static json_t *function_choice(tg_ctx *ctx, const json_t *c)
{
    if (!is_custom(c))
        return NULL;
    const json_t *name = tg_json_get(tg_json_get(c, "custom"), "name");
    if (!json_is_string(name))
        return NULL;
    tg_ctx_translated(ctx, "tool_choice", json_string_value(name));
    return json_pack("{s:s, s:{s:O}}", "type", "function", "function", "name", name);
}

static void choice(json_t *body, tg_ctx *ctx, json_t *tc)
{
    if (!tc)
        return;
    json_t *f = function_choice(ctx, tc);
    if (f) {
        json_object_set_new(body, "tool_choice", f);
        return;
    }
    /* allowed_tools: {"type":"allowed_tools","allowed_tools":{"mode","tools":[...]}} */
    json_t *at = tg_json_get(tc, "allowed_tools");
    json_t *list = tg_json_get(at, "tools");
    size_t i;
    json_t *e;
    bool any = false;
    json_array_foreach(list, i, e) any = any || is_custom(e);
    if (!any)
        return;
    json_t *out = json_array();
    json_array_foreach(list, i, e) {
        json_t *g = function_choice(ctx, e);
        json_array_append_new(out, g ? g : json_incref(e));
    }
    json_t *nat = json_copy(at);
    json_object_set_new(nat, "tools", out);
    json_t *ntc = json_copy(tc);
    json_object_set_new(ntc, "allowed_tools", nat);
    json_object_set_new(body, "tool_choice", ntc);
}

/* A custom call of the history as the function call the model would have
 * made of the tool's function form. New reference. */
static json_t *function_call(tg_ctx *ctx, const json_t *call)
{
    const json_t *c = tg_json_get(call, "custom");
    const json_t *in = tg_json_get(c, "input");
    json_t *args = json_pack("{s:s}", "input", json_is_string(in) ? json_string_value(in) : "");
    char *a = tg_json_dumps(args);
    json_decref(args);
    const char *name = json_string_value(tg_json_get(c, "name"));
    json_t *f = json_copy((json_t *)call);
    json_object_del(f, "custom");
    json_object_set_new(f, "type", json_string("function"));
    json_object_set_new(f, "function",
                        json_pack("{s:s, s:s}", "name", name ? name : "", "arguments", a ? a : "{}"));
    free(a);
    tg_ctx_translated(ctx, "custom_tool_call", name ? name : "");
    return f;
}

static void history(json_t *msgs, tg_ctx *ctx)
{
    size_t i, j;
    json_t *m, *call;
    json_array_foreach(msgs, i, m) {
        json_t *calls = tg_json_get(m, "tool_calls");
        bool any = false;
        json_array_foreach(calls, j, call) any = any || is_custom(call);
        if (!any)
            continue;
        json_t *out = json_array();
        json_array_foreach(calls, j, call) json_array_append_new(
            out, is_custom(call) ? function_call(ctx, call) : json_incref(call));
        /* the message may be shared with a cache too: a copy holds the change */
        json_t *nm = json_copy(m);
        json_object_set_new(nm, "tool_calls", out);
        json_array_set_new(msgs, i, nm);
    }
}

void tg_custom_stage(json_t *body, tg_ctx *ctx)
{
    if (!tg_dialect_has(ctx->dialect, TG_DF_REWRITE))
        return;  /* passthrough: nothing is rewritten, custom tools go as sent */
    /* one pass over the body's keys: each step sets only its own key */
    static const char *const keys[] = {"tools", "tool_choice", "messages", NULL};
    json_t *k[3];
    tg_json_pick(body, keys, k);
    tools(body, ctx, k[0]);
    choice(body, ctx, k[1]);
    history(k[2], ctx);
}
