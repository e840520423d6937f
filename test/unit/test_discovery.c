/* test_discovery.c -- lazy tool discovery, driven by a scripted mock model.
 *
 * The mock model follows the protocol the meta-tools describe: it searches,
 * asks for the schema of what it found, then calls it through call_tool.
 * Conversations run through the real pipeline (tg_pipeline_request /
 * tg_pipeline_response) for several dialects; the checks are what the
 * agent receives, what goes upstream on every round, and that the tools
 * array stays byte-identical from turn to turn. The catalog is the corpus'
 * big-100 / big-1000 request ($TG_SHARED, else ../shared).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/cache.h"
#include "pipeline/pipeline.h"
#include "discovery/groups.h"
#include "discovery/index.h"
#include "discovery/lexicon.h"

/* ---- fixtures --------------------------------------------------------- */

static json_t *load_shared(const char *rel)
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
static json_t *request(int n, json_t *messages)
{
    char rel[64];
    snprintf(rel, sizeof rel, "corpus/requests/big-%d.json", n);
    json_t *big = load_shared(rel);
    json_t *body = json_pack("{sssosO}", "model", "m", "messages", messages, "tools",
                             json_object_get(big, "tools"));
    json_decref(big);
    return body;
}

static json_t *user_turn(const char *text)
{
    return json_pack("[{ssss}]", "role", "user", "content", text);
}

static const char *fn_name(json_t *tool_or_call)
{
    return json_string_value(json_object_get(json_object_get(tool_or_call, "function"), "name"));
}

static char *tools_text(json_t *body)
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

static json_t *last_message(json_t *body)
{
    json_t *m = json_object_get(body, "messages");
    return json_array_get(m, json_array_size(m) - 1);
}

/* ---- the mock model ---------------------------------------------------- */

static int call_seq;

/* One tool call; ids are 9 alphanumerics, valid in every dialect. */
static json_t *mk_call(const char *name, json_t *args)
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
static json_t *mk_resp(const char *content, json_t *calls)
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
static json_t *model(json_t *body, const tg_ctx *ctx, const script *s)
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
static json_t *run_turn(tg_ctx *ctx, json_t *body, const script *s, int *rounds)
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

static void rules_for(tg_rules_set *r, tg_dialect d)
{
    tg_rules_preset(d, r);
    r->disc.mode = TG_DISC_AUTO;  /* threshold 40 < 100 tools */
}

/* ---- full conversations, per dialect (data) --------------------------- */

static const tg_dialect dialects[] = { TG_D_OPENAI, TG_D_OPENAI_STRICT, TG_D_GEMINI, TG_D_VERTEX,
                                       TG_D_ANTHROPIC, TG_D_MISTRAL, TG_D_GROQ };

static const script logs = { "show the logs of a docker container", "docker-logs",
                             "{\"containerId\":\"web\",\"tail\":20}" };

static void conversation(tg_dialect d)
{
    tg_rules_set rules;
    rules_for(&rules, d);
    tg_ctx ctx;
    tg_ctx_init(&ctx, "r", &rules, NULL);
    json_t *body = request(100, user_turn("Why does my web container crash? Check its logs."));
    int rounds;
    json_t *resp = run_turn(&ctx, body, &logs, &rounds);

    /* upstream saw 3 meta-tools instead of 100 tools */
    assert_int_equal(json_array_size(json_object_get(body, "tools")), 3);
    assert_int_equal(ctx.stats.tools_in, 100);
    assert_int_equal(ctx.stats.tools_out, 3);
    assert_true(ctx.stats.tools_bytes_out * 10 < ctx.stats.tools_bytes_in);
    assert_int_equal(rounds, 3);  /* search, schema, call */
    assert_int_equal(ctx.stats.discovery_rounds, 2);

    /* the agent gets an ordinary call of its own tool */
    json_t *choice = json_array_get(json_object_get(resp, "choices"), 0);
    json_t *calls = json_object_get(json_object_get(choice, "message"), "tool_calls");
    assert_int_equal(json_array_size(calls), 1);
    json_t *c = json_array_get(calls, 0);
    assert_string_equal(fn_name(c), "docker-logs");
    assert_string_equal(json_string_value(json_object_get(c, "type")), "function");
    assert_true(json_string_length(json_object_get(c, "id")) > 0);
    json_t *args = json_loads(json_string_value(json_object_get(json_object_get(c, "function"),
                                                                "arguments")),
                              0, NULL);
    assert_string_equal(json_string_value(json_object_get(args, "containerId")), "web");
    assert_int_equal((int)json_number_value(json_object_get(args, "tail")), 20);
    assert_string_equal(json_string_value(json_object_get(choice, "finish_reason")), "tool_calls");
    /* usage adds up the three rounds */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(resp, "usage"),
                                                        "total_tokens")),
                     330);

    /* turn 2: the agent sends the call and its result back */
    char *tools1 = tools_text(body);
    json_t *hist = json_pack("[{ssss}{sssns[O]}{ssss}]", "role", "user", "content", "check logs",
                             "role", "assistant", "content", "tool_calls", c, "role", "tool",
                             "tool_call_id", json_string_value(json_object_get(c, "id")),
                             "content", "OOM killed");
    json_t *body2 = request(100, hist);
    tg_ctx ctx2;
    tg_ctx_init(&ctx2, "r", &rules, NULL);
    tg_error err;
    assert_int_equal(tg_pipeline_request(body2, &ctx2, &err), 0);
    char *tools2 = tools_text(body2);
    assert_string_equal(tools1, tools2);  /* byte-identical: prompt caches stay warm */
    /* the history reads as the call_tool call the model made */
    json_t *hc = json_array_get(json_object_get(json_array_get(json_object_get(body2, "messages"),
                                                               1),
                                                "tool_calls"),
                                0);
    assert_string_equal(fn_name(hc), meta(body2, "call_tool"));
    json_t *wrapped = json_loads(json_string_value(json_object_get(json_object_get(hc, "function"),
                                                                   "arguments")),
                                 0, NULL);
    assert_string_equal(tg_schema_agent_name(&ctx2, json_string_value(json_object_get(wrapped,
                                                                                      "name"))),
                        "docker-logs");
    assert_non_null(json_object_get(wrapped, "arguments"));

    free(tools1);
    free(tools2);
    json_decref(wrapped);
    json_decref(args);
    json_decref(body2);
    json_decref(resp);
    json_decref(body);
    tg_ctx_clear(&ctx);
    tg_ctx_clear(&ctx2);
}

static void test_conversations(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof dialects / sizeof dialects[0]; i++) {
        print_message("dialect %s\n", tg_dialect_name(dialects[i]));
        conversation(dialects[i]);
    }
}

/* ---- single behaviours ------------------------------------------------- */

/* Stage a big-100 request with rules r; returns the body (ctx filled). */
static json_t *staged(tg_ctx *ctx, const tg_rules_set *r, int n)
{
    tg_error err;
    tg_ctx_init(ctx, "r", r, NULL);
    json_t *body = request(n, user_turn("hello"));
    assert_int_equal(tg_pipeline_request(body, ctx, &err), 0);
    return body;
}

/* The model's one response, through the pipeline: returns 0/1, *next. */
static int respond(tg_ctx *ctx, json_t *resp, json_t **next)
{
    int r = tg_pipeline_response(resp, ctx, next);
    return r;
}

static json_t *last_tool_answer(json_t *next)
{
    return json_loads(json_string_value(json_object_get(last_message(next), "content")), 0, NULL);
}

static void test_modes(void **state)
{
    (void)state;
    static const struct { tg_disc_mode mode; int threshold; int n; size_t want; } cases[] = {
        { TG_DISC_OFF, 40, 100, 100 },
        { TG_DISC_AUTO, 40, 100, 3 },
        { TG_DISC_AUTO, 100, 100, 100 },  /* not more than the threshold */
        { TG_DISC_AUTO, 99, 100, 3 },
        { TG_DISC_ON, 40, 50, 3 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tg_rules_set r;
        tg_rules_preset(TG_D_OPENAI, &r);
        r.disc.mode = cases[i].mode;
        r.disc.threshold = cases[i].threshold;
        tg_ctx ctx;
        json_t *body = staged(&ctx, &r, cases[i].n);
        assert_int_equal(json_array_size(json_object_get(body, "tools")), cases[i].want);
        assert_int_equal(ctx.stats.tools_out, cases[i].want);
        /* when collapsed, discovery reports the bytes it saved; otherwise
         * the pipeline's serializer measures them */
        if (cases[i].want == 3)
            assert_true(ctx.stats.tools_bytes_in > ctx.stats.tools_bytes_out &&
                        ctx.stats.tools_bytes_out > 0);
        if (cases[i].want != 3) {  /* off: intercept leaves answers alone */
            json_t *resp = mk_resp(NULL, json_pack("[o]", mk_call("search_tools",
                                                                  json_pack("{ss}", "query", "x"))));
            json_t *next = NULL;
            assert_int_equal(respond(&ctx, resp, &next), 0);
            assert_null(next);
            json_decref(resp);
        }
        json_decref(body);
        tg_ctx_clear(&ctx);
    }
}

static void test_max_rounds(void **state)
{
    (void)state;
    tg_rules_set r;
    rules_for(&r, TG_D_OPENAI);
    r.disc.max_rounds = 2;
    tg_ctx ctx;
    json_t *body = staged(&ctx, &r, 100);
    int answered = 0;
    for (int i = 0; i < 5; i++) {  /* a model that never stops searching */
        json_t *resp = mk_resp(NULL, json_pack("[o]", mk_call("search_tools",
                                                              json_pack("{ss}", "query", "logs"))));
        json_t *next = NULL;
        int again = respond(&ctx, resp, &next);
        json_decref(next);
        if (!again) {
            json_t *choice = json_array_get(json_object_get(resp, "choices"), 0);
            json_t *msg = json_object_get(choice, "message");
            assert_null(json_object_get(msg, "tool_calls"));
            assert_non_null(strstr(json_string_value(json_object_get(msg, "content")),
                                   "discovery"));
            assert_string_equal(json_string_value(json_object_get(choice, "finish_reason")),
                                "stop");
            assert_int_equal(json_integer_value(json_object_get(json_object_get(resp, "usage"),
                                                                "total_tokens")),
                             330);
            json_decref(resp);
            answered = i;
            break;
        }
        json_decref(resp);
    }
    assert_int_equal(answered, 2);  /* two inner rounds, then the agent gets an answer */
    assert_int_equal(ctx.stats.discovery_rounds, 2);
    json_decref(body);
    tg_ctx_clear(&ctx);
}

static void test_unknown_tool(void **state)
{
    (void)state;
    tg_rules_set r;
    rules_for(&r, TG_D_OPENAI);
    tg_ctx ctx;
    json_t *body = staged(&ctx, &r, 100);
    /* a tool that does not exist, called directly */
    json_t *resp = mk_resp(NULL, json_pack("[o]", mk_call("docker_logz", json_object())));
    json_t *next = NULL;
    assert_int_equal(respond(&ctx, resp, &next), 1);
    json_t *ans = last_tool_answer(next);
    assert_non_null(strstr(json_string_value(json_object_get(ans, "error")), "docker_logz"));
    json_t *dym = json_object_get(ans, "did_you_mean");
    int found = 0;
    for (size_t i = 0; i < json_array_size(dym); i++)
        found |= !strcmp(json_string_value(json_array_get(dym, i)), "docker-logs");
    assert_true(found);
    /* the round carries the assistant call and its answer, paired by id */
    json_t *msgs = json_object_get(next, "messages");
    json_t *asst = json_array_get(msgs, json_array_size(msgs) - 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(asst, "tool_calls"), 0), "id")),
                        json_string_value(json_object_get(last_message(next), "tool_call_id")));
    json_decref(ans);
    json_decref(next);
    json_decref(resp);

    /* call_tool naming an unknown tool, and get_tool_schema with bad names */
    resp = mk_resp(NULL, json_pack("[oo]",
                                   mk_call("call_tool", json_pack("{sss{}}", "name", "dockr-logs",
                                                                  "arguments")),
                                   mk_call("get_tool_schema", json_pack("{s[ss]}", "names",
                                                                        "docker-logs", "nope"))));
    assert_int_equal(respond(&ctx, resp, &next), 1);
    msgs = json_object_get(next, "messages");
    json_t *a1 = json_loads(json_string_value(json_object_get(
                                json_array_get(msgs, json_array_size(msgs) - 2), "content")),
                            0, NULL);
    json_t *a2 = last_tool_answer(next);
    assert_non_null(json_object_get(a1, "error"));
    assert_string_equal(json_string_value(json_array_get(json_object_get(a1, "did_you_mean"), 0)),
                        "docker-logs");
    assert_int_equal(json_array_size(json_object_get(a2, "tools")), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(a2, "unknown"), 0), "name")),
                        "nope");
    json_decref(a1);
    json_decref(a2);
    json_decref(next);
    json_decref(resp);

    /* names as one string, the way some models write lists */
    resp = mk_resp(NULL, json_pack("[o]", mk_call("get_tool_schema",
                                                  json_pack("{ss}", "names", "kv_get, kv_put"))));
    assert_int_equal(respond(&ctx, resp, &next), 1);
    ans = last_tool_answer(next);
    assert_int_equal(json_array_size(json_object_get(ans, "tools")), 2);
    json_decref(ans);
    json_decref(next);
    json_decref(resp);

    /* an empty name list is told what to pass */
    resp = mk_resp(NULL, json_pack("[o]", mk_call("get_tool_schema", json_pack("{s[]}", "names"))));
    assert_int_equal(respond(&ctx, resp, &next), 1);
    ans = last_tool_answer(next);
    assert_non_null(strstr(json_string_value(json_object_get(ans, "message")), "names"));
    json_decref(ans);
    json_decref(next);
    json_decref(resp);
    json_decref(body);
    tg_ctx_clear(&ctx);
}


/* The answer (parsed) to one meta call answered in a round. */
static json_t *meta_answer(tg_ctx *ctx, json_t *call)
{
    json_t *resp = mk_resp(NULL, json_pack("[o]", call)), *next = NULL;
    json_object_set_new(ctx->disc_state, "rounds", json_integer(0));  /* a fresh turn */
    assert_int_equal(respond(ctx, resp, &next), 1);
    json_t *ans = last_tool_answer(next);
    json_decref(next);
    json_decref(resp);
    return ans;
}

static const char *first_tool(json_t *ans)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(ans, "tools"), 0),
                                             "name"));
}

/* The meta-tools forgive what models write (issue 31): group an enum of the
 * catalog's groups (nullable and required on strict dialects); names as a
 * JSON-encoded string or one name; case and separator variants of a name,
 * in get_tool_schema and call_tool, whole and streamed. */
static void test_meta_forgiving(void **state)
{
    (void)state;
    static const tg_dialect ds[] = { TG_D_OPENAI, TG_D_OPENAI_STRICT };
    for (size_t i = 0; i < 2; i++) {
        tg_rules_set r;
        rules_for(&r, ds[i]);
        tg_ctx ctx;
        json_t *body = staged(&ctx, &r, 1000);
        json_t *params = json_object_get(
            json_object_get(json_array_get(json_object_get(body, "tools"), 0), "function"),
            "parameters");
        json_t *g = json_object_get(json_object_get(params, "properties"), "group");
        json_t *e = json_object_get(g, "enum");
        assert_true(json_array_size(e) > 10);
        assert_non_null(json_string_value(json_array_get(e, 0)));
        int strict = ds[i] == TG_D_OPENAI_STRICT;
        assert_int_equal(json_is_null(json_array_get(e, json_array_size(e) - 1)), strict);
        assert_int_equal(json_is_array(json_object_get(g, "type")), strict);
        json_decref(body);
        tg_ctx_clear(&ctx);
    }

    tg_rules_set r;
    rules_for(&r, TG_D_OPENAI);
    tg_ctx ctx;
    json_t *body = staged(&ctx, &r, 100);
    static const char *const variants[] = { "[\"docker-logs\"]", "Docker-Logs", "docker.logs",
                                            "DOCKER_LOGS", "dockerLogs" };
    for (size_t i = 0; i < 5; i++) {
        json_t *ans = meta_answer(&ctx, mk_call("get_tool_schema",
                                                json_pack("{ss}", "names", variants[i])));
        assert_string_equal(first_tool(ans), "docker-logs");
        assert_int_equal(json_array_size(json_object_get(ans, "unknown")), 0);
        json_decref(ans);
    }
    /* a list with a variant in it, and "name" for "names" */
    json_t *ans = meta_answer(&ctx, mk_call("get_tool_schema",
                                            json_pack("{s[s]}", "names", "Docker_Logs")));
    assert_string_equal(first_tool(ans), "docker-logs");
    json_decref(ans);
    ans = meta_answer(&ctx, mk_call("get_tool_schema", json_pack("{ss}", "name", "docker-logs")));
    assert_string_equal(first_tool(ans), "docker-logs");
    json_decref(ans);
    /* search_tools' queries and limit JSON-encoded */
    ans = meta_answer(&ctx, mk_call("search_tools",
                                    json_pack("{ssssss}", "query", "qwxzv", "queries",
                                              "[\"show the logs of a docker container\"]",
                                              "limit", "3")));
    assert_int_equal(json_array_size(json_object_get(ans, "results")), 3);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(ans, "results"), 0), "name")),
                        "docker-logs");
    json_decref(ans);

    /* call_tool with a variant of the name, whole and streamed: the real
     * tool reaches the agent */
    json_t *resp = mk_resp(NULL, json_pack("[o]", mk_call("call_tool",
                                                          json_pack("{ssss}", "name",
                                                                    "Docker.Logs", "arguments",
                                                                    "{\"containerId\":\"x\"}"))));
    json_t *next = NULL;
    assert_int_equal(respond(&ctx, resp, &next), 0);
    json_t *c = json_array_get(json_object_get(json_object_get(json_array_get(
                                                   json_object_get(resp, "choices"), 0),
                                               "message"),
                                               "tool_calls"),
                               0);
    assert_string_equal(fn_name(c), "docker-logs");
    json_decref(resp);
    json_t *emit = NULL;
    json_t *msg = json_pack("{sssns[o]}", "role", "assistant", "content", "tool_calls",
                            mk_call("call_tool", json_pack("{sss{ss}}", "name", "DOCKER-LOGS",
                                                           "arguments", "containerId", "x")));
    assert_int_equal(tg_discovery_stream_round(&ctx, msg, &emit, &next), 0);
    assert_string_equal(fn_name(json_array_get(emit, 0)), "docker-logs");
    json_decref(emit);
    json_decref(msg);
    msg = json_pack("{sssns[o]}", "role", "assistant", "content", "tool_calls",
                    mk_call("get_tool_schema", json_pack("{ss}", "names", "[\"Docker-Logs\"]")));
    json_object_set_new(ctx.disc_state, "rounds", json_integer(0));
    assert_int_equal(tg_discovery_stream_round(&ctx, msg, &emit, &next), 1);
    ans = last_tool_answer(next);
    assert_string_equal(first_tool(ans), "docker-logs");
    json_decref(ans);
    json_decref(next);
    json_decref(msg);
    json_decref(body);
    tg_ctx_clear(&ctx);
}

/* The round toolgate builds replays the model's turn with what the
 * provider put on it, where the route's dialect takes it: Gemini 3's
 * thought signature on the call (R18/R19), DeepSeek's reasoning_content on
 * the turn (rule 52); a strict validator (Groq, Mistral) gets neither. */
static void test_replayed_opaque(void **state)
{
    (void)state;
    static const struct {
        tg_dialect d;
        bool signature, reasoning;
    } cases[] = {
        {TG_D_GEMINI, true, false},   {TG_D_DEEPSEEK, false, true}, {TG_D_GROQ, false, false},
        {TG_D_MISTRAL, false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tg_rules_set r;
        rules_for(&r, cases[i].d);
        tg_ctx ctx;
        json_t *body = staged(&ctx, &r, 100);
        json_t *call = mk_call(meta(ctx.request, "search_tools"), json_pack("{ss}", "query", "logs"));
        json_object_set_new(call, "extra_content",
                            json_pack("{s:{s:s}}", "google", "thought_signature", "c2lnLTE="));
        json_t *resp = mk_resp(NULL, json_pack("[o]", call));
        json_object_set_new(json_object_get(json_array_get(json_object_get(resp, "choices"), 0),
                                            "message"),
                            "reasoning_content", json_string("the logs tool, then"));
        json_t *next = NULL;
        assert_int_equal(respond(&ctx, resp, &next), 1);
        json_t *msgs = json_object_get(next, "messages");
        json_t *asst = json_array_get(msgs, json_array_size(msgs) - 2);
        json_t *c0 = json_array_get(json_object_get(asst, "tool_calls"), 0);
        const char *sig = json_string_value(json_object_get(
            json_object_get(json_object_get(c0, "extra_content"), "google"), "thought_signature"));
        const char *why = json_string_value(json_object_get(asst, "reasoning_content"));
        if (cases[i].signature)
            assert_string_equal(sig ? sig : "(none)", "c2lnLTE=");
        else
            assert_null(json_object_get(c0, "extra_content"));
        if (cases[i].reasoning)
            assert_string_equal(why ? why : "(none)", "the logs tool, then");
        else
            assert_null(json_object_get(asst, "reasoning_content"));
        json_decref(next);
        json_decref(resp);
        json_decref(body);
        tg_ctx_clear(&ctx);
    }
}

/* The agent's call of a hidden tool, read back as the model's call_tool
 * call on the next turn, keeps the signature Gemini 3 put on it (or the
 * fill_signatures stand-in when the agent dropped it): Gemini 3 refuses a
 * replayed call without one (R19). */
static void test_history_signature(void **state)
{
    (void)state;
    static const char *const given[] = { "c2lnLTE=", NULL };
    static const char *const want[] = { "c2lnLTE=", "skip_thought_signature_validator" };
    for (size_t i = 0; i < 2; i++) {
        tg_rules_set r;
        rules_for(&r, TG_D_GEMINI);
        json_t *c = mk_call("docker-logs", json_pack("{ss}", "containerId", "web"));
        json_object_set_new(c, "id", json_string("call_1"));
        if (given[i])
            json_object_set_new(c, "extra_content",
                                json_pack("{s:{s:s}}", "google", "thought_signature", given[i]));
        json_t *hist = json_pack("[{ssss}{sssns[o]}{ssss}]", "role", "user", "content", "logs",
                                 "role", "assistant", "content", "tool_calls", c, "role", "tool",
                                 "tool_call_id", "call_1", "content", "OOM killed");
        json_t *body = request(100, hist);
        json_object_set_new(body, "model", json_string("gemini-3-pro-preview"));
        tg_ctx ctx;
        tg_ctx_init(&ctx, "r", &r, NULL);
        tg_error err;
        assert_int_equal(tg_pipeline_request(body, &ctx, &err), 0);
        json_t *hc = json_array_get(
            json_object_get(json_array_get(json_object_get(body, "messages"), 1), "tool_calls"), 0);
        assert_string_equal(fn_name(hc), meta(body, "call_tool"));
        assert_string_equal(json_string_value(json_object_get(hc, "id")), "call_1");
        const char *sig = json_string_value(json_object_get(
            json_object_get(json_object_get(hc, "extra_content"), "google"), "thought_signature"));
        assert_string_equal(sig ? sig : "(none)", want[i]);
        json_decref(body);
        tg_ctx_clear(&ctx);
    }
}

static void test_search_answer(void **state)
{
    (void)state;
    tg_rules_set r;
    rules_for(&r, TG_D_OPENAI);
    r.disc.search_schemas = 2;
    tg_ctx ctx;
    json_t *body = staged(&ctx, &r, 100);
    json_t *resp = mk_resp(NULL, json_pack("[o]", mk_call("search_tools",
                                                          json_pack("{sssi}", "query",
                                                                    "take a screenshot of the page",
                                                                    "limit", 4))));
    json_t *next = NULL;
    assert_int_equal(respond(&ctx, resp, &next), 1);
    json_t *ans = last_tool_answer(next);
    json_t *res = json_object_get(ans, "results");
    assert_int_equal(json_array_size(res), 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(res, 0), "name")),
                        "puppeteer_screenshot");
    for (size_t i = 0; i < 4; i++) {  /* the top 2 carry their schemas */
        json_t *e = json_array_get(res, i);
        assert_true(json_string_length(json_object_get(e, "description")) <= 160);
        assert_int_equal(json_object_get(e, "parameters") != NULL, i < 2);
    }
    assert_true(json_integer_value(json_object_get(ans, "more")) >= 0);
    json_decref(ans);
    json_decref(next);
    json_decref(resp);

    /* the description lists the catalog's names, unless turned off */
    const char *desc = json_string_value(json_object_get(
        json_object_get(json_array_get(json_object_get(body, "tools"), 0), "function"),
        "description"));
    assert_non_null(strstr(desc, "docker-logs"));
    json_decref(body);
    tg_ctx_clear(&ctx);
    r.disc.list_names = 0;
    body = staged(&ctx, &r, 100);
    desc = json_string_value(json_object_get(
        json_object_get(json_array_get(json_object_get(body, "tools"), 0), "function"),
        "description"));
    assert_null(strstr(desc, "docker-logs"));
    json_decref(body);
    tg_ctx_clear(&ctx);

    /* a dialect's description limit cuts the list, and says so */
    r.disc.list_names = 1;
    r.schema.desc_max = 600;
    body = staged(&ctx, &r, 100);
    desc = json_string_value(json_object_get(
        json_object_get(json_array_get(json_object_get(body, "tools"), 0), "function"),
        "description"));
    assert_true(strlen(desc) <= 600);
    assert_non_null(strstr(desc, "more."));
    json_decref(body);
    tg_ctx_clear(&ctx);
}

/* The index alone: Snowball stems ("generation" meets "generated"),
 * a group filter, adjacent words joined ("roll back" meets rollback), and
 * BM25F field weights applied at search time. */
static void test_index(void **state)
{
    (void)state;
    json_t *tools = json_pack(
        "[{ss ss}{ss ss}{ss ss}{ss ss}]",
        "name", "run_rollback_pipeline", "description", "Run a pipeline that restores the last release.",
        "name", "list_organizations", "description", "Lists the organizations of the user.",
        "name", "go_back", "description", "Go back to the previous browser page.",
        "name", "get_weather", "description", "Current weather of a city, generated hourly for the organization.");
    json_t *idx = tg_dindex_build(tools);
    size_t out[4];
    double sc[4];
    assert_true(tg_dindex_search(idx, "which organization am I in", out, sc, 4) >= 1);
    assert_int_equal(out[0], 1);
    /* Porter2 takes -ation and -ed to one stem, a suffix list did not */
    assert_int_equal(tg_dindex_search(idx, "generation", out, NULL, 4), 1);
    assert_int_equal(out[0], 3);
    /* "roll back" finds the rollback tool only through the joined word */
    assert_int_equal(tg_dindex_search(idx, "roll back", out, NULL, 4), 2);
    assert_true(out[0] == 0 || out[1] == 0);
    tg_dindex_params p = tg_dindex_defaults;
    p.joins = 0;
    p.prefix_weight = 0;  /* "roll" begins "rollback" too */
    assert_int_equal(tg_dindex_search_p(idx, "roll back", &p, out, NULL, 4), 1);
    assert_int_equal(out[0], 2);
    unsigned char allow[4] = { 0, 0, 0, 1 };
    assert_int_equal(tg_dindex_search_in(idx, "organizations", &tg_dindex_defaults, allow, out,
                                         NULL, 4), 1);
    assert_int_equal(out[0], 3);
    p = tg_dindex_defaults;
    p.w[TG_DF_NAME] = 0;  /* weights apply at search time: no name, no name match */
    p.w[TG_DF_DESC] = 0;
    p.name_bonus = 0;
    assert_int_equal(tg_dindex_search_p(idx, "weather", &p, out, NULL, 4), 0);
    json_decref(idx);
    json_decref(tools);
}

/* The WordNet table (discovery/lexicon_data.c): a word's stem leads to the
 * stems of its definition's first words; a word it does not hold, or a
 * kind not asked for, leads nowhere. In a search, only a written word the
 * catalog lacks pulls them in. */
static void test_lexicon(void **state)
{
    (void)state;
    const char *rel[32];
    size_t n = tg_lex_related("thermomet", TG_LEX_GLOSS, rel, 32), found = 0;
    for (size_t i = 0; i < n; i++)
        found += strcmp(rel[i], "temperatur") == 0;
    assert_int_equal(found, 1);
    assert_int_equal(tg_lex_related("thermomet", TG_LEX_SYN1_NOUN | TG_LEX_DERIV, rel, 32), 0);
    assert_int_equal(tg_lex_related("github", TG_LEX_GLOSS, rel, 32), 0);
    assert_int_equal(tg_lex_related("thermomet", TG_LEX_GLOSS, rel, 1), 1);

    json_t *tools = json_pack(
        "[{ss ss}{ss ss}{ss ss}]",
        "name", "get_temperature", "description", "Current temperature of a city.",
        "name", "get_wind", "description", "Wind speed and direction in a city.",
        "name", "get_weather", "description", "Weather report of a city.");
    json_t *idx = tg_dindex_build(tools);
    size_t out[4];
    /* no tool says "thermometer": its definition ("measuring temperature") does */
    assert_int_equal(tg_dindex_search(idx, "the thermometer", out, NULL, 4), 1);
    assert_int_equal(out[0], 0);
    tg_dindex_params p = tg_dindex_defaults;
    p.lex_weight = 0;
    assert_int_equal(tg_dindex_search_p(idx, "the thermometer", &p, out, NULL, 4), 0);
    /* "weather" is in the catalog: its definition (atmospheric conditions,
     * wind) is not pulled in, so the wind tool stays out */
    assert_int_equal(tg_dindex_search(idx, "weather", out, NULL, 4), 1);
    assert_int_equal(out[0], 2);
    json_decref(idx);
    json_decref(tools);
}

/* Groups from names: explicit namespaces always, a shared first word when
 * TG_GROUP_MIN_SHARE tools have it and it is not a verb. */
static void test_groups(void **state)
{
    (void)state;
    static const char *const in[][2] = {
        { "mcp__github__create_issue", "github" },
        { "mcp__github__list_issues", "github" },
        { "jira__get_issue", "jira" },
        { "linear.create_issue", "linear" },
        { "fs/read_file", "fs" },
        { "slack_post_message", "slack" },
        { "slack_list_channels", "slack" },
        { "Slack-get-users", "slack" },
        { "get_weather", NULL },    /* verbs are no group, however many */
        { "get_time", NULL },
        { "get_news", NULL },
        { "foo_bar", NULL },        /* two tools are not enough */
        { "foo_baz", NULL },
        { "mastraDocs", "mastra" }, /* a camelCase hump ends the first word */
        { "mastraExamples", "mastra" },
        { "mastraChanges", "mastra" },
        { "search", NULL },         /* one word: no prefix */
        { "x__", NULL },            /* nothing after the separator */
        { "mcp__", NULL },
    };
    size_t n = sizeof in / sizeof in[0];
    json_t *names = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(names, json_string(in[i][0]));
    json_t *g = tg_disc_groups(names);
    assert_int_equal(json_array_size(g), n);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(g, i);
        if (in[i][1])
            assert_string_equal(json_string_value(v), in[i][1]);
        else if (!json_is_null(v))
            fail_msg("%s: group %s, want none", in[i][0], json_string_value(v));
    }
    json_decref(g);
    json_decref(names);
    /* a namespace longer than a group keeps, cut where a character ends:
     * 63 ASCII bytes, then 'é' (2 bytes) across the 64-byte limit */
    char longns[160];
    memset(longns, 'a', 63);
    strcpy(longns + 63, "\xc3\xa9\xc3\xa9__tool");
    names = json_pack("[s, s]", longns, "github__x");
    g = tg_disc_groups(names);
    assert_non_null(g);
    const char *cut = json_string_value(json_array_get(g, 0));
    assert_non_null(cut);
    assert_int_equal(strlen(cut), 63);
    assert_string_equal(json_string_value(json_array_get(g, 1)), "github");
    json_decref(g);
    json_decref(names);
}

static long rank_of(json_t *answer, const char *name)
{
    json_t *res = json_object_get(answer, "results");
    for (size_t i = 0; i < json_array_size(res); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(res, i), "name")), name) == 0)
            return (long)i;
    return -1;
}

static json_t *search_with(tg_ctx *ctx, json_t *args)
{
    json_t *r = tg_discovery_search_args(ctx, args);
    json_decref(args);
    assert_non_null(r);
    return r;
}

/* search_tools: the groups in its description, a group filter, every
 * result naming its group, several phrasings at once. */
static void test_search_groups_and_queries(void **state)
{
    (void)state;
    tg_rules_set r;
    rules_for(&r, TG_D_OPENAI);
    tg_ctx ctx;
    json_t *body = staged(&ctx, &r, 1000);
    json_t *fn = json_object_get(json_array_get(json_object_get(body, "tools"), 0), "function");
    const char *desc = json_string_value(json_object_get(fn, "description"));
    assert_non_null(strstr(desc, "Groups ("));
    assert_non_null(strstr(desc, "docker (24)"));
    json_t *props = json_object_get(json_object_get(fn, "parameters"), "properties");
    assert_non_null(json_object_get(props, "queries"));
    assert_non_null(json_object_get(props, "group"));

    /* without a group "stop the container" may find any stop; with one,
     * only docker's tools come, each saying so */
    json_t *a = search_with(&ctx, json_pack("{ssss}", "query", "stop the container", "group",
                                            "Docker"));
    json_t *res = json_object_get(a, "results");
    assert_true(json_array_size(res) > 0);
    assert_string_equal(json_string_value(json_object_get(json_array_get(res, 0), "name")),
                        "docker-stop");
    for (size_t i = 0; i < json_array_size(res); i++)
        assert_string_equal(
            json_string_value(json_object_get(json_array_get(res, i), "group")), "docker");
    json_decref(a);

    /* a group that is none: all tools are searched, and the answer says so */
    a = search_with(&ctx, json_pack("{ssss}", "query", "stop the container", "group",
                                    "no-such-group"));
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(a, "results"), 0), "name")),
                        "docker-stop");
    assert_non_null(strstr(json_string_value(json_object_get(a, "note")), "no-such-group"));
    assert_null(json_object_get(a, "message"));
    json_decref(a);
    a = search_with(&ctx, json_pack("{ssss}", "query", "stop the container", "group", "none"));
    assert_true(json_array_size(json_object_get(a, "results")) > 0);
    assert_null(json_object_get(a, "note"));  /* "none" meant no group */
    json_decref(a);

    /* a phrasing that finds nothing is rescued by its alternative; one that
     * finds the tool alone keeps it on top */
    a = search_with(&ctx, json_pack("{sss[s]}", "query", "qwxzv", "queries",
                                    "take a screenshot of the phone"));
    res = json_object_get(a, "results");
    assert_true(json_array_size(res) > 0);
    assert_non_null(strstr(json_string_value(json_object_get(json_array_get(res, 0), "name")),
                           "screenshot"));
    json_decref(a);
    json_t *one = search_with(&ctx, json_pack("{ss}", "query", "take a screenshot of the phone"));
    json_t *two = search_with(&ctx, json_pack("{sss[ss]}", "query",
                                              "take a screenshot of the phone", "queries",
                                              "capture the mobile device screen", ""));
    /* "phone" alone is one word among several; the second phrasing agrees
     * on the mobile tool, which fusion puts first */
    long r1 = rank_of(one, "mobile_take_screenshot"), r2 = rank_of(two, "mobile_take_screenshot");
    assert_int_equal(r2, 0);
    assert_true(r1 != 0);
    json_decref(one);
    json_decref(two);
    json_decref(body);
    tg_ctx_clear(&ctx);
}

/* A model that calls a hidden tool by its real name, and one that mixes
 * meta calls with a real call in one turn. */
static void test_real_and_mixed_calls(void **state)
{
    (void)state;
    tg_rules_set r;
    rules_for(&r, TG_D_OPENAI);
    tg_ctx ctx;
    json_t *body = staged(&ctx, &r, 100);
    json_t *resp = mk_resp(NULL, json_pack("[oo]",
                                           mk_call("search_tools", json_pack("{ss}", "query", "x")),
                                           mk_call("docker-logs",
                                                   json_pack("{ss}", "containerId", "db"))));
    json_t *next = NULL;
    assert_int_equal(respond(&ctx, resp, &next), 0);
    assert_null(next);
    json_t *calls = json_object_get(json_object_get(json_array_get(json_object_get(resp, "choices"),
                                                                   0),
                                                    "message"),
                                    "tool_calls");
    assert_int_equal(json_array_size(calls), 1);  /* the real call only */
    assert_string_equal(fn_name(json_array_get(calls, 0)), "docker-logs");
    json_decref(resp);
    json_decref(body);
    tg_ctx_clear(&ctx);
}

/* The agent's own tool named like a meta-tool: the meta-tools move aside. */
static void test_name_collision(void **state)
{
    (void)state;
    tg_rules_set r;
    rules_for(&r, TG_D_OPENAI);
    tg_ctx ctx;
    tg_error err;
    tg_ctx_init(&ctx, "r", &r, NULL);
    json_t *body = request(100, user_turn("hi"));
    json_array_append_new(json_object_get(body, "tools"),
                          json_pack("{sss{sssss{ss}}}", "type", "function", "function", "name",
                                    "search_tools", "description", "the agent's own search",
                                    "parameters", "type", "object"));
    assert_int_equal(tg_pipeline_request(body, &ctx, &err), 0);
    assert_string_equal(meta(body, "search_tools"), "toolgate_search_tools");
    assert_string_equal(meta(body, "call_tool"), "toolgate_call_tool");
    /* the texts name the meta-tools as they are called here */
    const char *desc = json_string_value(json_object_get(
        json_object_get(json_array_get(json_object_get(body, "tools"), 0), "function"),
        "description"));
    assert_non_null(strstr(desc, "use toolgate_get_tool_schema or toolgate_call_tool"));
    /* the agent's search_tools is a catalog tool, callable as such */
    json_t *resp = mk_resp(NULL, json_pack("[o]", mk_call("search_tools",
                                                          json_pack("{ss}", "q", "x"))));
    json_t *next = NULL;
    assert_int_equal(respond(&ctx, resp, &next), 0);
    assert_string_equal(fn_name(json_array_get(json_object_get(json_object_get(
                                                                   json_array_get(json_object_get(
                                                                                      resp, "choices"),
                                                                                  0),
                                                                   "message"),
                                                               "tool_calls"),
                                               0)),
                        "search_tools");
    assert_false(tg_discovery_is_meta(&ctx, "search_tools"));
    assert_true(tg_discovery_is_meta(&ctx, "toolgate_search_tools"));
    json_decref(resp);
    json_decref(body);
    tg_ctx_clear(&ctx);
}

static void test_core_and_tool_choice(void **state)
{
    (void)state;
    static char *core[] = { "docker-*", "slack_post_message", NULL };
    tg_rules_set r;
    rules_for(&r, TG_D_OPENAI);
    r.disc.core = core;
    tg_ctx ctx;
    json_t *body = staged(&ctx, &r, 100);
    json_t *tools = json_object_get(body, "tools");
    /* docker-images, docker-containers, docker-logs, slack_post_message + 3 */
    assert_int_equal(json_array_size(tools), 7);
    assert_string_equal(fn_name(json_array_get(tools, 0)), "docker-images");
    assert_string_equal(fn_name(json_array_get(tools, 6)), "call_tool");
    json_decref(body);
    tg_ctx_clear(&ctx);

    /* tool_choice naming a hidden tool exposes it, after the fixed prefix */
    tg_error err;
    tg_ctx_init(&ctx, "r", &r, NULL);
    body = request(100, user_turn("hi"));
    json_object_set_new(body, "tool_choice",
                        json_pack("{sss{ss}}", "type", "function", "function", "name", "kv_get"));
    assert_int_equal(tg_pipeline_request(body, &ctx, &err), 0);
    tools = json_object_get(body, "tools");
    assert_int_equal(json_array_size(tools), 8);
    assert_string_equal(fn_name(json_array_get(tools, 7)), "kv_get");
    json_decref(body);
    tg_ctx_clear(&ctx);
}

static void test_stream_hooks(void **state)
{
    (void)state;
    tg_rules_set r;
    rules_for(&r, TG_D_OPENAI);
    tg_ctx ctx;
    json_t *body = staged(&ctx, &r, 100);
    assert_true(tg_discovery_is_meta(&ctx, "search_tools"));
    assert_true(tg_discovery_is_meta(&ctx, "call_tool"));
    assert_true(tg_discovery_is_meta(&ctx, "no_such_tool"));  /* answered by toolgate */
    assert_false(tg_discovery_is_meta(&ctx, "docker-logs"));

    json_t *emit = NULL, *next = NULL;
    json_t *msg = json_pack("{sssns[o]}", "role", "assistant", "content", "tool_calls",
                            mk_call("search_tools", json_pack("{ss}", "query", "logs")));
    assert_int_equal(tg_discovery_stream_round(&ctx, msg, &emit, &next), 1);
    assert_null(emit);
    assert_non_null(next);
    json_decref(next);
    json_decref(msg);

    msg = json_pack("{sssss[o]}", "role", "assistant", "content", "calling",
                    "tool_calls",
                    mk_call("call_tool", json_pack("{sss{ss}}", "name", "docker-logs",
                                                   "arguments", "containerId", "x")));
    assert_int_equal(tg_discovery_stream_round(&ctx, msg, &emit, &next), 0);
    assert_null(next);
    assert_int_equal(json_array_size(emit), 1);
    json_t *c = json_array_get(emit, 0);
    assert_string_equal(fn_name(c), "docker-logs");
    assert_string_equal(json_string_value(json_object_get(json_object_get(c, "function"),
                                                          "arguments")),
                        "{\"containerId\":\"x\"}");
    assert_null(tg_discovery_final_note(&ctx));
    json_decref(emit);
    json_decref(msg);
    json_decref(body);
    tg_ctx_clear(&ctx);
}

/* One upstream round as SSE data payloads: an optional content delta, one
 * tool call, the finish, [DONE]. */
static void feed_round(tg_stream *st, const char *content, const char *name, const char *args,
                       tg_buf *out)
{
    char ev[1024];
    json_t *call = json_pack("{sisssss{ssss}}", "index", 0, "id", "call00077", "type", "function",
                             "function", "name", name, "arguments", args);
    json_t *chunks[3];
    chunks[0] = json_pack("{sss[{sis{ssss}sn}]}", "id", "c1", "choices", "index", 0, "delta",
                          "role", "assistant", "content", content ? content : "",
                          "finish_reason");
    chunks[1] = json_pack("{sss[{sis{s[o]}sn}]}", "id", "c1", "choices", "index", 0, "delta",
                          "tool_calls", call, "finish_reason");
    chunks[2] = json_pack("{sss[{sis{}ss}]s{sisisi}}", "id", "c1", "choices", "index", 0, "delta",
                          "finish_reason", "tool_calls", "usage", "prompt_tokens", 10,
                          "completion_tokens", 1, "total_tokens", 11);
    for (int i = 0; i < 3; i++) {
        assert_non_null(chunks[i]);
        char *t = json_dumps(chunks[i], JSON_COMPACT);
        snprintf(ev, sizeof ev, "%s", t);
        tg_stream_event(st, ev, strlen(ev), out);
        free(t);
        json_decref(chunks[i]);
    }
    tg_stream_event(st, "[DONE]", 6, out);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* Through the stream repair: the agent sees one stream, the search round
 * is swallowed, call_tool arrives as the real call, one finish, one [DONE]. */
static void test_stream_conversation(void **state)
{
    (void)state;
    tg_rules_set r;
    rules_for(&r, TG_D_OPENAI);
    tg_ctx ctx;
    json_t *body = staged(&ctx, &r, 100);
    ctx.stream = true;
    tg_stream *st = tg_stream_new(&ctx);
    tg_buf out = { 0 };
    json_t *next = NULL;
    feed_round(st, "Looking. ", "search_tools", "{\"query\":\"docker container logs\"}", &out);
    assert_int_equal(tg_stream_end(st, false, &out, &next), 1);
    assert_non_null(next);
    assert_string_equal(json_string_value(json_object_get(last_message(next), "role")), "tool");
    json_decref(next);
    feed_round(st, NULL, "call_tool",
               "{\"name\":\"docker-logs\",\"arguments\":{\"containerId\":\"web\"}}", &out);
    assert_int_equal(tg_stream_end(st, false, &out, &next), 0);
    assert_null(next);
    const char *text = out.data;
    assert_non_null(text);
    assert_null(strstr(text, "search_tools"));
    assert_null(strstr(text, "call_tool"));
    assert_non_null(strstr(text, "Looking. "));
    assert_non_null(strstr(text, "\"docker-logs\""));
    assert_non_null(strstr(text, "containerId"));
    assert_int_equal(count(text, "\"finish_reason\":\"tool_calls\""), 1);
    assert_int_equal(count(text, "[DONE]"), 1);
    assert_non_null(strstr(text, "\"total_tokens\":22"));  /* both rounds */
    tg_buf_free(&out);
    tg_stream_free(st);
    json_decref(body);
    tg_ctx_clear(&ctx);
}

/* 1,000 tools; the derivation is cached and the cached path is identical. */
static void test_large_and_cached(void **state)
{
    (void)state;
    tg_rules_set r;
    rules_for(&r, TG_D_OPENAI);
    tg_cache *cache = tg_cache_new(16, 0);
    char *first = NULL;
    for (int turn = 0; turn < 3; turn++) {
        tg_ctx ctx;
        tg_error err;
        tg_ctx_init(&ctx, "r", &r, NULL);
        ctx.cache = cache;
        json_t *body = request(1000, user_turn("hi"));
        assert_int_equal(tg_pipeline_request(body, &ctx, &err), 0);
        assert_int_equal(json_array_size(json_object_get(body, "tools")), 3);
        char *t = tools_text(body);
        if (!first)
            first = t;
        else {
            assert_string_equal(first, t);
            free(t);
        }
        json_t *res = tg_discovery_search(&ctx, "which tests are flaky in our CI project", 5);
        assert_string_equal(json_string_value(json_object_get(
                                json_array_get(json_object_get(res, "results"), 0), "name")),
                            "find_flaky_tests");
        json_decref(res);
        json_decref(body);
        tg_ctx_clear(&ctx);
    }
    assert_true(tg_cache_entries(cache) >= 1);
    free(first);
    tg_cache_free(cache);
}

/* Bad input never crashes and never loses the agent's answer. */
static void test_bad_input(void **state)
{
    (void)state;
    tg_rules_set r;
    rules_for(&r, TG_D_OPENAI);
    r.disc.mode = TG_DISC_ON;
    tg_ctx ctx;
    tg_error err;
    static const char *const bodies[] = {
        "{\"messages\":[],\"tools\":{}}",
        "{\"messages\":[],\"tools\":[1,\"x\",null,{},{\"function\":{}}]}",
        "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[1,{\"function\":3}]}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a\"}}]}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        tg_ctx_init(&ctx, "r", &r, NULL);
        json_t *b = json_loads(bodies[i], 0, NULL);
        assert_non_null(b);
        tg_pipeline_request(b, &ctx, &err);
        json_decref(b);
        tg_ctx_clear(&ctx);
    }
    json_t *body = staged(&ctx, &r, 100);
    static const char *const resps[] = {
        "{}",
        "{\"choices\":[]}",
        "{\"choices\":[{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"search_tools\","
        "\"arguments\":\"{not json\"}}]}}]}",
        "{\"choices\":[{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"call_tool\","
        "\"arguments\":\"{\\\"name\\\":\\\"docker-logs\\\",\\\"arguments\\\":\\\"[1\\\"}\"}}]}}]}",
        "{\"choices\":[{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"get_tool_schema\","
        "\"arguments\":\"{\\\"names\\\":7}\"}},{\"id\":5}]}}]}",
    };
    for (size_t i = 0; i < sizeof resps / sizeof resps[0]; i++) {
        json_t *resp = json_loads(resps[i], 0, NULL), *next = NULL;
        assert_non_null(resp);
        int again = respond(&ctx, resp, &next);
        if (again) {  /* an error answer goes back to the model */
            json_t *m = last_message(next);
            assert_string_equal(json_string_value(json_object_get(m, "role")), "tool");
            assert_true(json_string_length(json_object_get(m, "content")) > 2);
        }
        json_decref(next);
        json_decref(resp);
    }
    json_decref(body);
    tg_ctx_clear(&ctx);
}

/* ---- successor hints (hints.c) ------------------------------------------ */

/* A small catalog: an issue tracker's group, a pull-request tool of the
 * same group, a tool of another group whose description points at
 * gh__list_issues, a core tool, and filler of other groups. */
static json_t *hint_catalog(void)
{
    static const char *const t[][3] = {
        { "gh__list_issues", "List issues of a repository.",
          "{\"type\":\"object\",\"properties\":{\"owner\":{\"type\":\"string\"},\"repo\":{\"type\":\"string\"}},\"required\":[\"owner\",\"repo\"]}" },
        { "gh__get_issue", "Get one issue by its number.",
          "{\"type\":\"object\",\"properties\":{\"owner\":{\"type\":\"string\"},\"repo\":{\"type\":\"string\"},\"issue_number\":{\"type\":\"integer\"}},\"required\":[\"owner\",\"repo\",\"issue_number\"]}" },
        { "gh__add_issue_comment", "Comment on an issue.",
          "{\"type\":\"object\",\"properties\":{\"owner\":{\"type\":\"string\"},\"repo\":{\"type\":\"string\"},\"issue_number\":{\"type\":\"integer\"},\"body\":{\"type\":\"string\"}},\"required\":[\"owner\",\"repo\",\"issue_number\",\"body\"]}" },
        { "gh__update_issue", "Change an issue's title, state or labels.",
          "{\"type\":\"object\",\"properties\":{\"owner\":{\"type\":\"string\"},\"repo\":{\"type\":\"string\"},\"issue_number\":{\"type\":\"integer\"},\"state\":{\"type\":\"string\"}},\"required\":[\"owner\",\"repo\",\"issue_number\"]}" },
        { "gh__merge_pull_request", "Merge a pull request.",
          "{\"type\":\"object\",\"properties\":{\"owner\":{\"type\":\"string\"},\"repo\":{\"type\":\"string\"},\"pull_number\":{\"type\":\"integer\"}},\"required\":[\"owner\",\"repo\",\"pull_number\"]}" },
        { "board__link_card", "Link a card to an issue found with gh__list_issues.",
          "{\"type\":\"object\",\"properties\":{\"card\":{\"type\":\"string\"},\"issue_url\":{\"type\":\"string\"}},\"required\":[\"card\",\"issue_url\"]}" },
        { "board__list_cards", "List the cards of a board.",
          "{\"type\":\"object\",\"properties\":{\"board\":{\"type\":\"string\"}},\"required\":[\"board\"]}" },
        { "board__archive_card", "Archive a card.",
          "{\"type\":\"object\",\"properties\":{\"card\":{\"type\":\"string\"}},\"required\":[\"card\"]}" },
        { "read_file", "Read a file from disk; mentions gh__get_issue never.",
          "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"]}" },
        { "chat__send_message", "Send a chat message about an issue.",
          "{\"type\":\"object\",\"properties\":{\"channel\":{\"type\":\"string\"},\"text\":{\"type\":\"string\"}},\"required\":[\"channel\",\"text\"]}" },
        { "chat__list_channels", "List chat channels.", "{\"type\":\"object\",\"properties\":{}}" },
        { "chat__read_history", "Read a channel's history.",
          "{\"type\":\"object\",\"properties\":{\"channel\":{\"type\":\"string\"}},\"required\":[\"channel\"]}" },
    };
    json_t *tools = json_array();
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        json_t *p = json_loads(t[i][2], 0, NULL);
        assert_non_null(p);
        json_array_append_new(tools, json_pack("{sss{sssssO}}", "type", "function", "function",
                                               "name", t[i][0], "description", t[i][1],
                                               "parameters", p));
        json_decref(p);
    }
    return tools;
}

/* A call of tool `name` with arguments `args` (JSON text), its result
 * `result`, appended to msgs as the agent sends them back. */
static void add_call_and_result(json_t *msgs, const char *id, const char *name, const char *args,
                                const char *result)
{
    json_array_append_new(msgs, json_pack("{sssns[{sssss{ssss}}]}", "role", "assistant", "content",
                                          "tool_calls", "id", id, "type", "function", "function",
                                          "name", name, "arguments", args));
    json_array_append_new(msgs, json_pack("{ssssss}", "role", "tool", "tool_call_id", id,
                                          "content", result));
}

/* a and b written out compactly are the same bytes */
static void assert_same_bytes(const json_t *a, const json_t *b)
{
    char *x = json_dumps(a, JSON_COMPACT), *y = json_dumps(b, JSON_COMPACT);
    assert_non_null(x);
    assert_non_null(y);
    assert_string_equal(x, y);
    free(x);
    free(y);
}

static json_t *hint_history(int turns)
{
    json_t *msgs = json_pack("[{ssss}]", "role", "user", "content", "what is open in acme/web?");
    add_call_and_result(msgs, "call1", "gh__list_issues", "{\"owner\":\"acme\",\"repo\":\"web\"}",
                        "[{\"number\":42,\"title\":\"login crash\",\"state\":\"open\"}]");
    if (turns > 1)
        add_call_and_result(msgs, "call2", "gh__get_issue",
                            "{\"owner\":\"acme\",\"repo\":\"web\",\"issue_number\":42}",
                            "{\"number\":42,\"body\":\"stack trace\"}");
    return msgs;
}

/* The request stages over a catalog and history (both stolen); ctx filled. */
static json_t *hint_request(tg_ctx *ctx, const tg_rules_set *r, json_t *tools, json_t *msgs)
{
    tg_error err;
    tg_ctx_init(ctx, "r", r, NULL);
    json_t *body = json_pack("{ssso so}", "model", "m", "messages", msgs, "tools", tools);
    assert_int_equal(tg_pipeline_request(body, ctx, &err), 0);
    return body;
}

static const char *msg_content(json_t *body, size_t i)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(body, "messages"), i),
                                             "content"));
}

/* The tools a note names, in order (a new array), or NULL without a note. */
static json_t *hinted_names(const char *content)
{
    const char *open = strstr(content, "<toolgate-next-tools>");
    if (!open)
        return NULL;
    const char *js = strchr(strstr(open, ".)\n"), '\n') + 1;
    const char *end = strstr(js, "\n</toolgate-next-tools>");
    assert_non_null(end);
    json_t *list = json_loadb(js, (size_t)(end - js), 0, NULL);
    assert_non_null(list);
    json_t *names = json_array();
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *e = json_array_get(list, i);
        assert_non_null(json_object_get(e, "parameters"));
        json_array_append(names, json_object_get(e, "name"));
    }
    json_decref(list);
    return names;
}

static int names_have(json_t *names, const char *n)
{
    for (size_t i = 0; i < json_array_size(names); i++)
        if (strcmp(json_string_value(json_array_get(names, i)), n) == 0)
            return 1;
    return 0;
}

static void hint_rules(tg_rules_set *r)
{
    static char *core[] = { "read_file", NULL };
    rules_for(r, TG_D_OPENAI);
    r->disc.mode = TG_DISC_ON;
    r->disc.core = core;
}

static void test_hints_note(void **state)
{
    (void)state;
    tg_rules_set r;
    hint_rules(&r);
    tg_ctx ctx;
    json_t *body = hint_request(&ctx, &r, hint_catalog(), hint_history(1));
    const char *c = msg_content(body, 2);
    /* the result first, as it came, then the note */
    assert_true(strncmp(c, "[{\"number\":42,", 14) == 0);
    json_t *names = hinted_names(c);
    assert_non_null(names);
    assert_true(json_array_size(names) >= 1 && json_array_size(names) <= 3);
    assert_true(names_have(names, "gh__get_issue"));
    assert_false(names_have(names, "gh__list_issues"));   /* not the tool itself */
    assert_false(names_have(names, "read_file"));          /* core: always visible */
    assert_false(names_have(names, "search_tools"));       /* meta-tools */
    assert_false(names_have(names, "call_tool"));
    assert_false(names_have(names, "gh__merge_pull_request"));  /* nothing links it */
    assert_true(strstr(c, "call_tool") != NULL);
    /* the tools array is the meta-tools and the core tool, no hint in it */
    assert_int_equal(json_array_size(json_object_get(body, "tools")), 4);
    assert_int_equal(ctx.stats.hints_given, 1);

    /* the model calls a hinted tool next: counted */
    json_t *resp = mk_resp(NULL, json_pack("[o]", mk_call("call_tool",
        json_pack("{sss{sssssi}}", "name", "gh__get_issue", "arguments", "owner", "acme", "repo",
                  "web", "issue_number", 42)))), *next = NULL;
    assert_int_equal(respond(&ctx, resp, &next), 0);
    assert_int_equal(ctx.stats.hints_followed, 1);
    json_decref(resp);
    json_decref(names);
    json_decref(body);
    tg_ctx_clear(&ctx);

    /* a call of a tool nobody hinted is not */
    body = hint_request(&ctx, &r, hint_catalog(), hint_history(1));
    resp = mk_resp(NULL, json_pack("[o]", mk_call("chat__list_channels", json_object())));
    assert_int_equal(respond(&ctx, resp, &next), 0);
    assert_int_equal(ctx.stats.hints_given, 1);
    assert_int_equal(ctx.stats.hints_followed, 0);
    json_decref(resp);
    json_decref(body);
    tg_ctx_clear(&ctx);
}

/* The same history gives the same bytes, and a later turn leaves the
 * earlier notes as they were (the prompt cache's prefix). */
static void test_hints_stable(void **state)
{
    (void)state;
    tg_rules_set r;
    hint_rules(&r);
    tg_cache *cache = tg_cache_new(64, 0);
    tg_ctx a, b, c2;
    json_t *b1 = hint_request(&a, &r, hint_catalog(), hint_history(1));
    json_t *b2 = hint_request(&b, &r, hint_catalog(), hint_history(1));
    tg_ctx_init(&c2, "r", &r, NULL);
    c2.cache = cache;
    tg_error err;
    json_t *b3 = json_pack("{sssoso}", "model", "m", "messages", hint_history(2), "tools",
                           hint_catalog());
    assert_int_equal(tg_pipeline_request(b3, &c2, &err), 0);
    assert_same_bytes(json_object_get(b1, "messages"), json_object_get(b2, "messages"));
    /* hints never touch the tools */
    assert_same_bytes(json_object_get(b1, "tools"), json_object_get(b3, "tools"));
    /* turn 2's first three messages are turn 1's, byte for byte */
    for (size_t i = 0; i < 3; i++)
        assert_same_bytes(json_array_get(json_object_get(b1, "messages"), i),
                          json_array_get(json_object_get(b3, "messages"), i));
    /* turn 2's new result has a note of its own; the pair list_issues ->
     * get_issue it saw does not hint get_issue again after get_issue */
    /* the same turn again, its notes recalled from the cache, and without
     * a cache at all: the same bytes */
    for (int k = 0; k < 2; k++) {
        tg_ctx c3;
        tg_ctx_init(&c3, "r", &r, NULL);
        c3.cache = k ? cache : NULL;
        json_t *b4 = json_pack("{sssoso}", "model", "m", "messages", hint_history(2), "tools",
                               hint_catalog());
        assert_int_equal(tg_pipeline_request(b4, &c3, &err), 0);
        assert_same_bytes(json_object_get(b3, "messages"), json_object_get(b4, "messages"));
        assert_int_equal(c3.stats.hints_given, 1);
        json_decref(b4);
        tg_ctx_clear(&c3);
    }
    json_t *names = hinted_names(msg_content(b3, 4));
    assert_non_null(names);
    assert_false(names_have(names, "gh__get_issue"));
    assert_true(json_array_size(names) <= 3);
    assert_int_equal(c2.stats.hints_given, 1);
    json_decref(names);
    json_decref(b1);
    json_decref(b2);
    json_decref(b3);
    tg_ctx_clear(&a);
    tg_ctx_clear(&b);
    tg_ctx_clear(&c2);
    tg_cache_free(cache);
}

/* Tools of another group come only when a description points at them. */
static void test_hints_links(void **state)
{
    (void)state;
    tg_rules_set r;
    hint_rules(&r);
    tg_ctx ctx;
    json_t *msgs = json_pack("[{ssss}]", "role", "user", "content", "link it");
    add_call_and_result(msgs, "call1", "gh__list_issues", "{\"owner\":\"acme\",\"repo\":\"web\"}",
                        "no issues");
    json_t *body = hint_request(&ctx, &r, hint_catalog(), msgs);
    json_t *names = hinted_names(msg_content(body, 2));
    assert_non_null(names);
    assert_true(names_have(names, "board__link_card"));
    assert_false(names_have(names, "board__list_cards"));
    assert_false(names_have(names, "chat__send_message"));
    json_decref(names);
    json_decref(body);
    tg_ctx_clear(&ctx);
}

/* Tools that score alike after A come in catalog order, the first
 * TG_HINTS_MAX of them, whatever the order (issue 28: ties broken at
 * random passed, since no other fixture ties). Five tools of A's group
 * share its noun and take the same parameters; asked several times, in
 * the catalog's order and reversed, the note names the first three. */
static json_t *tie_catalog(bool reversed)
{
    static const char *const names[] = {"svc__list_widgets", "svc__get_widget",
                                        "svc__delete_widget", "svc__update_widget",
                                        "svc__rename_widget", "svc__archive_widget"};
    json_t *tools = json_array();
    for (size_t k = 0; k < 6; k++) {
        size_t i = k == 0 || !reversed ? k : 6 - k;  /* list_widgets stays first */
        json_array_append_new(tools, json_pack("{sss{sssss{sss{s{ss}}s[s]}}}", "type",
                                               "function", "function", "name", names[i],
                                               "description", "A widget.", "parameters",
                                               "type", "object", "properties", "widget_id",
                                               "type", "string", "required", "widget_id"));
    }
    return tools;
}

static void test_hints_ties(void **state)
{
    (void)state;
    tg_rules_set r;
    hint_rules(&r);
    for (int round = 0; round < 16; round++) {
        bool reversed = round & 1;
        tg_ctx ctx;
        json_t *msgs = json_pack("[{ssss}]", "role", "user", "content", "go");
        add_call_and_result(msgs, "call1", "svc__list_widgets", "{}",
                            "[{\"widget_id\":\"w1\"},{\"widget_id\":\"w2\"}]");
        json_t *body = hint_request(&ctx, &r, tie_catalog(reversed), msgs);
        json_t *names = hinted_names(msg_content(body, 2));
        assert_non_null(names);
        char *got = json_dumps(names, JSON_COMPACT);
        assert_string_equal(got, reversed ? "[\"svc__archive_widget\",\"svc__rename_widget\","
                                            "\"svc__update_widget\"]"
                                          : "[\"svc__get_widget\",\"svc__delete_widget\","
                                            "\"svc__update_widget\"]");
        free(got);
        json_decref(names);
        json_decref(body);
        tg_ctx_clear(&ctx);
    }
}

/* Nothing without discovery, with hints off, or after a core tool. */
static void test_hints_none(void **state)
{
    (void)state;
    tg_rules_set r;
    tg_ctx ctx;
    static const char *const result = "[{\"number\":42,\"title\":\"login crash\",\"state\":\"open\"}]";
    for (int k = 0; k < 3; k++) {
        hint_rules(&r);
        if (k == 0)
            r.disc.mode = TG_DISC_OFF;
        else if (k == 1)
            r.disc.hints = 0;
        json_t *msgs = hint_history(1);
        if (k == 2) {
            json_decref(msgs);
            msgs = json_pack("[{ssss}]", "role", "user", "content", "read it");
            add_call_and_result(msgs, "call1", "read_file", "{\"path\":\"a\"}", result);
        }
        json_t *body = hint_request(&ctx, &r, hint_catalog(), msgs);
        assert_string_equal(msg_content(body, 2), result);
        assert_int_equal(ctx.stats.hints_given, 0);
        json_decref(body);
        tg_ctx_clear(&ctx);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conversations),
        cmocka_unit_test(test_modes),
        cmocka_unit_test(test_max_rounds),
        cmocka_unit_test(test_unknown_tool),
        cmocka_unit_test(test_meta_forgiving),
        cmocka_unit_test(test_search_answer),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_index),
        cmocka_unit_test(test_search_groups_and_queries),
        cmocka_unit_test(test_real_and_mixed_calls),
        cmocka_unit_test(test_name_collision),
        cmocka_unit_test(test_core_and_tool_choice),
        cmocka_unit_test(test_stream_hooks),
        cmocka_unit_test(test_stream_conversation),
        cmocka_unit_test(test_large_and_cached),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_replayed_opaque),
        cmocka_unit_test(test_history_signature),
        cmocka_unit_test(test_hints_note),
        cmocka_unit_test(test_hints_stable),
        cmocka_unit_test(test_hints_links),
        cmocka_unit_test(test_hints_ties),
        cmocka_unit_test(test_hints_none),
        cmocka_unit_test(test_lexicon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
