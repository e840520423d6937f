/* test_discovery.c -- lazy tool discovery, driven by a scripted mock model:
 * the stage and the rounds.
 *
 * The mock model follows the protocol the meta-tools describe: it searches,
 * asks for the schema of what it found, then calls it through call_tool.
 * Conversations run through the real pipeline (tg_pipeline_request /
 * tg_pipeline_response) for several dialects; the checks are what the
 * agent receives, what goes upstream on every round, and that the tools
 * array stays byte-identical from turn to turn. The catalog is the corpus'
 * big-100 / big-1000 request ($TG_SHARED, else ../shared). search_tools'
 * ranking is tested in test_discovery_search.c, successor hints in
 * test_discovery_hints.c; the fixtures are discovery_fixture.h.
 */
#include "discovery_fixture.h"

/* ---- full conversations, per dialect (data) --------------------------- */

static const tg_dialect dialects[] = { TG_D_OPENAI, TG_D_OPENAI_STRICT, TG_D_GEMINI, TG_D_VERTEX,
                                       TG_D_ANTHROPIC, TG_D_MISTRAL, TG_D_GROQ };

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

/* The whole answer's calls for the agent after one response (no round). */
static json_t *agent_calls(tg_ctx *ctx, json_t *calls)
{
    json_t *resp = mk_resp(NULL, calls), *next = NULL;
    json_object_set_new(ctx->disc_state, "rounds", json_integer(0));
    assert_int_equal(respond(ctx, resp, &next), 0);
    json_t *out = json_incref(json_object_get(json_object_get(json_array_get(
                                                                  json_object_get(resp, "choices"), 0),
                                                              "message"),
                                              "tool_calls"));
    json_decref(resp);
    return out;
}

static const char *arg_of(json_t *call, const char *key, json_t **keep)
{
    *keep = json_loads(json_string_value(json_object_get(json_object_get(call, "function"),
                                                         "arguments")),
                       0, NULL);
    return json_string_value(json_object_get(*keep, key));
}

/* What models write for the meta-tools' keys (tool_name, args, q, Query,
 * tool_names), call_tool's arguments written flat beside its name, and a
 * catalog tool called directly by a variant of its name, whole and
 * streamed: each reaches the tool meant, not an error. */
static void test_meta_aliases(void **state)
{
    (void)state;
    tg_rules_set r;
    rules_for(&r, TG_D_OPENAI);
    tg_ctx ctx;
    json_t *body = staged(&ctx, &r, 100);
    static const char *const query_keys[] = { "q", "Query", "search_query", "task", "keywords" };
    for (size_t i = 0; i < 5; i++) {
        json_t *ans = meta_answer(&ctx, mk_call("search_tools",
                                                json_pack("{ss}", query_keys[i],
                                                          "show the logs of a docker container")));
        assert_string_equal(json_string_value(json_object_get(
                                json_array_get(json_object_get(ans, "results"), 0), "name")),
                            "docker-logs");
        assert_null(json_object_get(ans, "message"));
        json_decref(ans);
    }
    json_t *ans = meta_answer(&ctx, mk_call("search_tools",
                                            json_pack("{sssi}", "query", "docker container logs",
                                                      "max_results", 2)));
    assert_int_equal(json_array_size(json_object_get(ans, "results")), 2);
    json_decref(ans);
    /* a group and no query (written "category"): the group's tools */
    ans = meta_answer(&ctx, mk_call("search_tools", json_pack("{ss}", "category", "Docker")));
    json_t *res = json_object_get(ans, "results");
    assert_true(json_array_size(res) >= 3);
    for (size_t i = 0; i < json_array_size(res); i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(res, i), "group")),
                            "docker");
    assert_non_null(strstr(json_string_value(json_object_get(ans, "message")), "No query given"));
    json_decref(ans);
    static const char *const names_keys[] = { "tool_names", "tools", "tool_name", "toolNames" };
    for (size_t i = 0; i < 4; i++) {
        ans = meta_answer(&ctx, mk_call("get_tool_schema",
                                        json_pack("{ss}", names_keys[i], "[\"docker-logs\"]")));
        assert_string_equal(first_tool(ans), "docker-logs");
        json_decref(ans);
    }

    /* call_tool: name and arguments under other keys, or the arguments flat */
    json_t *const calls[] = {
        json_pack("{sss{ss}}", "tool_name", "docker-logs", "args", "containerId", "web"),
        json_pack("{sss{ss}}", "tool", "docker-logs", "input", "containerId", "web"),
        json_pack("{ssss}", "toolName", "docker-logs", "parameters", "{\"containerId\":\"web\"}"),
        json_pack("{ssss}", "name", "docker-logs", "containerId", "web"),
    };
    for (size_t i = 0; i < 4; i++) {
        json_t *got = agent_calls(&ctx, json_pack("[o]", mk_call("call_tool", calls[i]))), *a;
        assert_int_equal(json_array_size(got), 1);
        assert_string_equal(fn_name(json_array_get(got, 0)), "docker-logs");
        assert_string_equal(arg_of(json_array_get(got, 0), "containerId", &a), "web");
        json_decref(a);
        json_decref(got);
    }

    /* a catalog tool called directly by a variant of its name */
    json_t *got = agent_calls(&ctx, json_pack("[o]", mk_call("Docker_Logs",
                                                             json_pack("{ss}", "containerId", "web")))),
           *a;
    assert_int_equal(json_array_size(got), 1);
    assert_string_equal(fn_name(json_array_get(got, 0)), "docker-logs");
    assert_string_equal(arg_of(json_array_get(got, 0), "containerId", &a), "web");
    json_decref(a);
    json_decref(got);
    json_t *emit = NULL, *next = NULL;
    json_t *msg = json_pack("{sssns[o]}", "role", "assistant", "content", "tool_calls",
                            mk_call("dockerLogs", json_pack("{ss}", "containerId", "web")));
    json_object_set_new(ctx.disc_state, "rounds", json_integer(0));
    assert_int_equal(tg_discovery_stream_round(&ctx, msg, &emit, &next), 0);
    assert_null(next);
    assert_string_equal(fn_name(json_array_get(emit, 0)), "docker-logs");
    json_decref(emit);
    json_decref(msg);
    /* a name no tool has loosely stays an unknown tool, answered in a round */
    ans = meta_answer(&ctx, mk_call("Docker_Logz", json_object()));
    assert_non_null(json_object_get(ans, "did_you_mean"));
    json_decref(ans);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conversations),
        cmocka_unit_test(test_modes),
        cmocka_unit_test(test_max_rounds),
        cmocka_unit_test(test_unknown_tool),
        cmocka_unit_test(test_meta_forgiving),
        cmocka_unit_test(test_meta_aliases),
        cmocka_unit_test(test_real_and_mixed_calls),
        cmocka_unit_test(test_name_collision),
        cmocka_unit_test(test_core_and_tool_choice),
        cmocka_unit_test(test_stream_hooks),
        cmocka_unit_test(test_stream_conversation),
        cmocka_unit_test(test_large_and_cached),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_replayed_opaque),
        cmocka_unit_test(test_history_signature),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
