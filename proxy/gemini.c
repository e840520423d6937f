/* gemini.c -- Gemini's side endpoints (see gemini.h).
 *
 * generateContent and streamGenerateContent go the way of every bridged
 * API (proxy/prepare.c, bridge/gemini_api.h). What is left is answered
 * here: on a route that passes Gemini's API (`gemini = pass`) each goes
 * to Gemini as it came; on a route that bridges it, GET models lists the
 * models the conf names (a models glob without wildcards, upstream_model)
 * in Gemini's shape, GET models/MODEL describes the model when a route
 * takes it, countTokens is an estimate from the chat request the bridge
 * would send (chat completions count nothing without generating), said in
 * X-Toolgate-Estimate, and any other method (embedContent...) is a 404.
 * Errors are set in OpenAI's shape and leave in Gemini's
 * (api_error_shape).
 */
#include "proxy/gemini.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/gemini_api.h"
#include "core/jsonio.h"
#include "proxy/bridges.h"
#include "proxy/prepare.h"

static bool is_glob(const char *s)
{
    return strpbrk(s, "*?[") != NULL;
}

static void add_name(json_t *models, json_t *seen, const char *name)
{
    if (!name || !*name || is_glob(name) || json_object_get(seen, name))
        return;
    json_object_set_new(seen, name, json_true());
    json_array_append_new(models, tg_gemini_model_info(name));
}

/* The models route (or every route) names, as Gemini's ListModelsResponse. */
static void answer_list(tg_req *r, const tg_route *route)
{
    json_t *models = json_array(), *seen = json_object();
    for (int i = 0; i < r->conf->n_routes; i++) {
        const tg_route *t = &r->conf->routes[i];
        if (route && t != route)
            continue;
        for (char **m = t->models; m && *m; m++)
            add_name(models, seen, *m);
        add_name(models, seen, t->upstream_model);
    }
    json_t *a = json_pack("{s:o}", "models", models);
    char *text = tg_json_dumps(a);
    set_answer(r, 200, text, strlen(text), false);
    json_decref(a);
    json_decref(seen);
}

static void answer_json(tg_req *r, json_t *v)
{
    char *text = tg_json_dumps(v);
    set_answer(r, 200, text, strlen(text), false);
    json_decref(v);
}

/* countTokens on a route that bridges: the request made chat as the
 * bridge would make it, a token per 4 bytes of its messages and tools. */
static int answer_count(tg_req *r, const tg_route *route, const char *model)
{
    tg_error err;
    uint64_t hash;
    size_t bytes;
    const tg_buf *in = &r->client.body;
    json_t *body = tg_request_parse(in->data ? in->data : "", in->len, NULL, r->conf->max_depth,
                                    &hash, &bytes, &err);
    if (!body) {
        set_error_from(r, &err);
        return -1;
    }
    /* countTokens wraps a generateContentRequest, or sends its fields */
    const json_t *inner = json_object_get(body, "generateContentRequest");
    json_t *chat = NULL;
    tg_gem_bridge *b = NULL;
    tg_gemini_call call = {.model = model};
    tg_bridge_opts o = {.refuse_hosted = route->refuse_hosted};
    int rc = tg_gemini_to_chat(json_is_object(inner) ? inner : body, &call, &o, &chat, &b, &err);
    json_decref(body);
    if (rc) {
        set_error_from(r, &err);
        return -1;
    }
    answer_json(r, json_pack("{s:I}", "totalTokens", tg_gemini_count_estimate(chat)));
    r->prep.estimate = "countTokens: bytes/4 of the chat request (the route's chat completions "
                       "count no tokens)";
    json_decref(chat);
    tg_gem_bridge_free(b);
    return -1;
}

bool gemini_side(tg_req *r, const tg_route *by_prefix, int *rc)
{
    if (r->prep.api != &gemini_api)
        return false;
    char model[256];
    tg_gem_method m = tg_gemini_path(r->client.rest, gemini_sdk(r), model, sizeof model);
    bool get = m == TG_GEM_LIST || m == TG_GEM_MODEL;
    bool post = !strcmp(r->client.method, "POST");
    if ((m == TG_GEM_GENERATE || m == TG_GEM_STREAM) && post)
        return false;  /* the bridged way (prepare_bridged) */
    *rc = -1;
    if (get ? strcmp(r->client.method, "GET") : !post) {
        set_error(r, 405, "invalid_request_error", "method_not_allowed", NULL,
                  "%s %s: use %s", r->client.method, r->client.rest, get ? "GET" : "POST");
        return true;
    }
    const tg_route *route = by_prefix ? by_prefix
                            : *model  ? tg_route_by_model(r->conf, model)
                                      : NULL;
    if (route && !gemini_api.bridges(route)) {  /* gemini = pass: Gemini answers */
        r->route = route;
        prepare_plain(r);
        *rc = 0;
        return true;
    }
    if (m == TG_GEM_LIST) {
        answer_list(r, route);
        return true;
    }
    if (!route) {
        set_error(r, 404, "invalid_request_error", "model_not_found", "model",
                  "models/%s is not found: no route takes model '%s'", model, model);
        return true;
    }
    if (m == TG_GEM_MODEL) {
        answer_json(r, tg_gemini_model_info(model));
        return true;
    }
    if (m == TG_GEM_COUNT)
        return answer_count(r, route, model), true;
    set_error(r, 404, "invalid_request_error", "unsupported_endpoint", NULL,
              "%s: route '%s' bridges Gemini's API over the provider's chat completions, "
              "which have no such method; it is answered on routes with gemini = pass",
              r->client.rest, route->name);
    return true;
}
