/* custom_calls.c -- calls of a chat custom tool given back in its shape.
 *
 * sanitize/custom.c sent each custom tool up as a function taking
 * {"input": text}; a model's call of one comes back here, already repaired
 * as a function call (tg_rr_fix_calls, its last step), and leaves as the
 * custom call the agent declared: {"id","type":"custom","custom":{"name",
 * "input"}}. Streams hold such a call whole (tg_rs_tool_is_live refuses
 * it), so one delta carries it, as OpenAI's own custom calls come. A model
 * that wrote the text itself rather than {"input": ...} meant the text.
 */
#include "repair/custom_calls.h"

#include "core/jsonio.h"

bool tg_rr_is_custom(const tg_ctx *ctx, const char *agent_name)
{
    return ctx->custom_tools && agent_name && json_object_get(ctx->custom_tools, agent_name);
}

bool tg_rr_custom_shaped(const json_t *call)
{
    const char *t = json_string_value(json_object_get(call, "type"));
    return t && !strcmp(t, "custom") && json_is_object(json_object_get(call, "custom"));
}

static void as_custom(json_t *call)
{
    json_t *fn = json_object_get(call, "function");
    const json_t *name = json_object_get(fn, "name");
    const char *args = json_string_value(json_object_get(fn, "arguments"));
    json_t *a = args ? tg_json_load(args, strlen(args), 0, NULL) : NULL;
    const json_t *in = json_object_get(a, "input");
    json_t *custom = json_pack("{s:O, s:o}", "name", name, "input",
                               json_is_string(in) ? json_incref((json_t *)in)
                                                  : json_string(args ? args : ""));
    json_decref(a);
    json_object_set_new(call, "type", json_string("custom"));
    json_object_set_new(call, "custom", custom);
    json_object_del(call, "function");
}

void tg_rr_custom_calls(tg_ctx *ctx, json_t *calls)
{
    if (!ctx->custom_tools)
        return;
    size_t i;
    json_t *c;
    json_array_foreach(calls, i, c) {
        const json_t *name = json_object_get(json_object_get(c, "function"), "name");
        if (tg_rr_is_custom(ctx, json_string_value(name)))
            as_custom(c);
    }
}
