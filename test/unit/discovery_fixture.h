/* discovery_fixture.h -- what the discovery unit tests share: the corpus'
 * big-N requests as fixtures ($TG_SHARED, else ../shared), the scripted
 * mock model that follows the meta-tools' protocol (search, schema,
 * call_tool), and the helpers that run a turn or one response through the
 * real pipeline (tg_pipeline_request / tg_pipeline_response). Included by
 * test_discovery.c (the stage and the rounds), test_discovery_search.c
 * (search_tools, the index, groups) and test_discovery_hints.c. */
#ifndef TG_TEST_DISCOVERY_FIXTURE_H
#define TG_TEST_DISCOVERY_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/cache.h"
#include "pipeline/pipeline.h"

/* ---- fixtures --------------------------------------------------------- */

static inline json_t *load_shared(const char *rel)
{
    char path[2048];
    const char *env = getenv("TG_SHARED");
    snprintf(path, sizeof path, "%s/%s", env && *env ? env : "../shared", rel);
    json_t *v = json_load_file(path, 0, NULL);
    if (!v)
        fail_msg("cannot load %s (set TG_SHARED)", path);
    return v;
}

/* A request body: big-N's tools, the messages given (stolen). */
static inline json_t *request(int n, json_t *messages)
{
    char rel[64];
    snprintf(rel, sizeof rel, "corpus/requests/big-%d.json", n);
    json_t *big = load_shared(rel);
    json_t *body = json_pack("{sssosO}", "model", "m", "messages", messages, "tools",
                             json_object_get(big, "tools"));
    json_decref(big);
    return body;
}

static inline json_t *user_turn(const char *text)
{
    return json_pack("[{ssss}]", "role", "user", "content", text);
}

static const char *fn_name(json_t *tool_or_call)
{
    return json_string_value(json_object_get(json_object_get(tool_or_call, "function"), "name"));
}

static inline char *tools_text(json_t *body)
{
    return json_dumps(json_object_get(body, "tools"), JSON_COMPACT);
}

/* The upstream name of a meta-tool ("search_tools", ...) in body's tools. */
static const char *meta(json_t *body, const char *base)
{
    json_t *tools = json_object_get(body, "tools");
    for (size_t i = 0; i < json_array_size(tools); i++) {
        const char *n = fn_name(json_array_get(tools, i));
        size_t ln = strlen(n), lb = strlen(base);
        if (ln >= lb && strcmp(n + ln - lb, base) == 0)
            return n;
    }
    return NULL;
}

static inline json_t *last_message(json_t *body)
{
    json_t *m = json_object_get(body, "messages");
    return json_array_get(m, json_array_size(m) - 1);
}

/* ---- the mock model ---------------------------------------------------- */

static int call_seq;

/* One tool call; ids are 9 alphanumerics, valid in every dialect. */
static inline json_t *mk_call(const char *name, json_t *args)
{
    char id[16];
    snprintf(id, sizeof id, "call%05d", ++call_seq % 100000);
    char *text = json_dumps(args, JSON_COMPACT);
    json_t *c = json_pack("{sssss{ssss}}", "id", id, "type", "function", "function", "name", name,
                          "arguments", text);
    free(text);
    json_decref(args);
    return c;
}

/* A chat.completion with the given calls (stolen, may be NULL). */
static inline json_t *mk_resp(const char *content, json_t *calls)
{
    json_t *msg = json_pack("{ss}", "role", "assistant");
    json_object_set_new(msg, "content", content ? json_string(content) : json_null());
    if (calls)
        json_object_set_new(msg, "tool_calls", calls);
    return json_pack("{sssssss[{sisoss}]s{sisisi}}", "id", "chatcmpl-1", "object",
                     "chat.completion", "model", "m", "choices", "index", 0, "message", msg,
                     "finish_reason", calls ? "tool_calls" : "stop", "usage", "prompt_tokens",
                     100, "completion_tokens", 10, "total_tokens", 110);
}

typedef struct script {
    const char *query;  /* what the model searches for */
    const char *want;   /* agent name of the tool it means to call */
    const char *args;   /* the arguments it calls it with (JSON text) */
} script;

/* What a protocol-following model answers to `body`: search first, then
 * the schema of the wanted tool among the results, then call_tool. */
static inline json_t *model(json_t *body, const tg_ctx *ctx, const script *s)
{
    json_t *last = last_message(body);
    const char *role = json_string_value(json_object_get(last, "role"));
    if (strcmp(role, "tool") != 0)
        return mk_resp(NULL, json_pack("[o]", mk_call(meta(body, "search_tools"),
                                                      json_pack("{ss}", "query", s->query))));
    json_t *ans = json_loads(json_string_value(json_object_get(last, "content")), 0, NULL);
    assert_non_null(ans);
    json_t *results = json_object_get(ans, "results"), *tools = json_object_get(ans, "tools");
    json_t *r = NULL;
    if (results) {
        const char *pick = NULL;
        for (size_t i = 0; i < json_array_size(results); i++) {
            const char *n = json_string_value(json_object_get(json_array_get(results, i), "name"));
            if (strcmp(tg_schema_agent_name(ctx, n), s->want) == 0)
                pick = n;
        }
        if (!pick)
            fail_msg("search for '%s' did not find %s", s->query, s->want);
        r = mk_resp("Let me look at that tool.",
                    json_pack("[o]", mk_call(meta(body, "get_tool_schema"),
                                             json_pack("{s[s]}", "names", pick))));
    } else {
        json_t *tool = json_array_get(tools, 0);
        assert_non_null(json_object_get(tool, "parameters"));
        /* call_tool's `arguments` is an object, or a JSON string where the
         * dialect cannot express a free-form object */
        json_t *calltool = NULL;
        for (size_t i = 0; i < json_array_size(json_object_get(body, "tools")); i++)
            if (strcmp(fn_name(json_array_get(json_object_get(body, "tools"), i)),
                       meta(body, "call_tool")) == 0)
                calltool = json_array_get(json_object_get(body, "tools"), i);
        json_t *argtype = json_object_get(
            json_object_get(json_object_get(json_object_get(json_object_get(calltool, "function"),
                                                            "parameters"),
                                            "properties"),
                            "arguments"),
            "type");
        int as_string = json_is_string(argtype) && !strcmp(json_string_value(argtype), "string");
        json_t *a = as_string ? json_string(s->args) : json_loads(s->args, 0, NULL);
        r = mk_resp(NULL, json_pack("[o]", mk_call(meta(body, "call_tool"),
                                                   json_pack("{sOso}", "name",
                                                             json_object_get(tool, "name"),
                                                             "arguments", a))));
    }
    json_decref(ans);
    return r;
}

/* Run a turn: request stages, then model rounds until the agent gets the
 * answer. Returns the agent's response; *rounds = upstream calls made. */
static inline json_t *run_turn(tg_ctx *ctx, json_t *body, const script *s, int *rounds)
{
    tg_error err;
    assert_int_equal(tg_pipeline_request(body, ctx, &err), 0);
    json_t *up = json_incref(body);
    for (*rounds = 1;; (*rounds)++) {
        json_t *resp = model(up, ctx, s), *next = NULL;
        int again = tg_pipeline_response(resp, ctx, &next);
        if (!again) {
            json_decref(up);
            return resp;
        }
        assert_non_null(next);
        assert_ptr_equal(next, ctx->request);
        /* every round sends the same tools */
        char *a = tools_text(up), *b = tools_text(next);
        assert_string_equal(a, b);
        free(a);
        free(b);
        json_decref(resp);
        json_decref(up);
        up = next;
        assert_true(*rounds < 10);
    }
}

static inline void rules_for(tg_rules_set *r, tg_dialect d)
{
    tg_rules_preset(d, r);
    r->disc.mode = TG_DISC_AUTO;  /* threshold 40 < 100 tools */
}
/* The search most tests make: a docker container's logs. */
__attribute__((unused)) static const script logs = { "show the logs of a docker container", "docker-logs",
                             "{\"containerId\":\"web\",\"tail\":20}" };

/* ---- one request, one response ---------------------------------------- */

/* Stage a big-100 request with rules r; returns the body (ctx filled). */
static inline json_t *staged(tg_ctx *ctx, const tg_rules_set *r, int n)
{
    tg_error err;
    tg_ctx_init(ctx, "r", r, NULL);
    json_t *body = request(n, user_turn("hello"));
    assert_int_equal(tg_pipeline_request(body, ctx, &err), 0);
    return body;
}

/* The model's one response, through the pipeline: returns 0/1, *next. */
static inline int respond(tg_ctx *ctx, json_t *resp, json_t **next)
{
    int r = tg_pipeline_response(resp, ctx, next);
    return r;
}

static inline json_t *last_tool_answer(json_t *next)
{
    return json_loads(json_string_value(json_object_get(last_message(next), "content")), 0, NULL);
}

#endif
