/* models.c -- see models.h. Anthropic's list pages (has_more, first_id,
 * last_id); toolgate's lists are short and whole, so one page, first_id
 * and last_id its ends. */
#include "bridge/models.h"

#include <string.h>
#include <time.h>

json_t *tg_models_list(const char *const *names)
{
    json_t *data = json_array();
    for (const char *const *n = names; n && *n; n++)
        json_array_append_new(data, json_pack("{s:s, s:s, s:i, s:s}", "id", *n, "object", "model",
                                              "created", 0, "owned_by", "toolgate"));
    return json_pack("{s:s, s:o}", "object", "list", "data", data);
}

/* One OpenAI model object as Anthropic's. */
static json_t *anthropic_model(const json_t *m)
{
    const char *id = json_string_value(json_object_get(m, "id"));
    if (!id)
        return NULL;
    const json_t *c = json_object_get(m, "created");
    time_t t = json_is_integer(c) && json_integer_value(c) > 0 ? (time_t)json_integer_value(c) : 0;
    struct tm tm;
    char at[32];
    gmtime_r(&t, &tm);
    strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_pack("{s:s, s:s, s:s, s:s}", "type", "model", "id", id, "display_name", id,
                     "created_at", at);
}

json_t *tg_models_anthropic(const json_t *v)
{
    const json_t *data = json_object_get(v, "data");
    if (!json_is_array(data))
        return json_is_object(v) ? anthropic_model(v) : NULL;
    json_t *out = json_array();
    size_t i;
    const json_t *m;
    json_array_foreach(data, i, m) {
        json_t *a = anthropic_model(m);
        if (a)
            json_array_append_new(out, a);
    }
    size_t n = json_array_size(out);
    json_t *first = n ? json_object_get(json_array_get(out, 0), "id") : NULL;
    json_t *last = n ? json_object_get(json_array_get(out, n - 1), "id") : NULL;
    return json_pack("{s:o, s:b, s:O, s:O}", "data", out, "has_more", 0, "first_id",
                     first ? first : json_null(), "last_id", last ? last : json_null());
}

const json_t *tg_models_find_peek(const json_t *list, const char *id)
{
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(list, "data"), i, m) {
        const char *mid = json_string_value(json_object_get(m, "id"));
        if (mid && id && !strcmp(mid, id))
            return m;
    }
    return NULL;
}
