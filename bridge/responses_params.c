/* responses_params.c -- the Responses request's top-level parameters
 * that are neither the conversation nor its tools (responses_request.c
 * does those): what chat has under the same name goes up as it came, for
 * the route's hygiene to keep or drop-and-say as its provider takes it;
 * text.verbosity and prompt_cache_options go in their chat form; what
 * only steers OpenAI's service is said as a hint, and what would change
 * the conversation server-side as a dropped field. The list follows
 * openai 7.60's ResponseCreateParams (test/conformance's responses.param
 * rows hold each key to it). A function tool's output_schema, the one
 * field of a tool chat has no place for but the description, is here too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/responses_api_int.h"
#include "core/jsonio.h"

/* Keys chat completions has under the same name and meaning (openai
 * 7.60's ChatCompletionCreateParams): they go up as they came, and the
 * route's hygiene leaves out, and says, what its provider does not take. */
static const char *const chat_same_keys[] = {
    "temperature", "top_p", "parallel_tool_calls", "user", "safety_identifier",
    "prompt_cache_key", "prompt_cache_retention", "service_tier", "moderation", NULL};
/* Keys that steer only how OpenAI's service runs a response (its access
 * programs, its background queue, compressing images of the context, the
 * limit on calls of the tools it hosts, which the bridge never runs): no
 * chat form, and the answer is the same without them, so hints. */
static const char *const service_hint_keys[] = {"access_programs", "background_options", "image",
                                                "max_tool_calls", NULL};
/* Keys that change what OpenAI's service does with the conversation
 * (server-side compaction, truncating the context): left out, and said. */
static const char *const behaviour_keys[] = {"context_management", "truncation", NULL};

/* prompt_cache_options as chat's, which has its mode and a ttl of 30m
 * only; the rest (a longer ttl, prewarming, a response to compare the
 * cache with) changes the cost, not the answer: hints. */
static void cache_options(json_t *chat, const json_t *opts, json_t *dropped)
{
    char name[96];
    const char *k;
    json_t *v, *out = json_object();
    json_object_foreach((json_t *)opts, k, v) {
        if (json_is_null(v))
            continue;
        if (!strcmp(k, "mode") || (!strcmp(k, "ttl") && json_is_string(v) &&
                                   !strcmp(json_string_value(v), "30m"))) {
            json_object_set(out, k, v);
        } else {
            snprintf(name, sizeof name, "prompt_cache_options.%.60s", k);
            tg_bridge_drop(dropped, TG_BRIDGE_HINTS, name);
        }
    }
    if (json_object_size(out))
        json_object_set_new(chat, "prompt_cache_options", out);
    else
        json_decref(out);
}

void tg_resp_params(json_t *chat, const json_t *body, json_t *dropped)
{
    const json_t *v;
    for (const char *const *k = chat_same_keys; *k; k++) {
        v = json_object_get(body, *k);
        if (v && !json_is_null(v))
            json_object_set(chat, *k, (json_t *)v);
    }
    v = json_object_get(json_object_get(body, "text"), "verbosity");
    if (json_is_string(v))
        json_object_set(chat, "verbosity", (json_t *)v);
    v = json_object_get(body, "prompt_cache_options");
    if (json_is_object(v))
        cache_options(chat, v, dropped);
    for (const char *const *k = service_hint_keys; *k; k++) {
        v = json_object_get(body, *k);
        if (v && !json_is_null(v))
            tg_bridge_drop(dropped, TG_BRIDGE_HINTS, *k);
    }
    for (const char *const *k = behaviour_keys; *k; k++) {
        v = json_object_get(body, *k);
        const char *s = json_string_value(v);
        if (v && !json_is_null(v) && !(json_is_array(v) && !json_array_size(v)) &&
            !(s && !strcmp(s, "disabled")))
            tg_bridge_drop(dropped, "fields", *k);
    }
}

const json_t *tg_resp_part_text(const json_t *part)
{
    const json_t *t = json_object_get(part, "text");
    if (!json_is_string(t))
        t = json_object_get(part, "refusal");
    return json_is_string(t) ? t : NULL;
}

int tg_resp_join_text(const json_t *parts, tg_buf *out)
{
    size_t i;
    const json_t *p, *t;
    json_array_foreach(parts, i, p) {
        if (!(t = tg_resp_part_text(p)))
            return -1;
        tg_buf_append(out, json_string_value(t), json_string_length(t));
    }
    return 0;
}

/* output_schema tells the model what the function gives back (its
 * programs read the result by it): where the model reads it, in the
 * description, as Anthropic's bridge puts input_examples. */
void tg_resp_output_schema(json_t *fn, const json_t *t)
{
    const json_t *os = json_object_get(t, "output_schema");
    if (json_is_object(os))
        tg_bridge_describe_returns(fn, os);
}
