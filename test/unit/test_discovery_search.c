/* test_discovery_search.c -- discovery's search: search_tools' answers
 * through the pipeline (limits, several phrasings fused, a group filter),
 * the BM25F index, the lexicon, and the groups a catalog falls into. The
 * fixtures (corpus requests, the scripted model) are discovery_fixture.h.
 */
#include "discovery_fixture.h"
#include "discovery/groups.h"
#include "discovery/index.h"
#include "discovery/lexicon.h"
#include "discovery/wordvec.h"

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
    /* "roll back" finds the rollback tool only through the joined word
     * (the words alone: the word vectors find more) */
    tg_dindex_params p = tg_dindex_defaults;
    p.vec_weight = 0;
    p.soft_weight = 0;
    assert_int_equal(tg_dindex_search_p(idx, "roll back", &p, out, NULL, 4), 2);
    assert_true(out[0] == 0 || out[1] == 0);
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
    p.vec_weight = 0;  /* the tools' vectors are made at build */
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

/* The word vector table linked in (discovery/wordvec.bin): the shape and
 * checksum wordvec_gen.py wrote (a file cut or changed in the repository
 * fails here), words that mean alike near each other. */
static void test_wordvec_table(void **state)
{
    (void)state;
    tg_wv_info info;
    assert_true(tg_wv_info_get(&info));
    assert_int_equal(info.count, 12824);
    assert_int_equal(info.dims, 100);
    assert_int_equal(info.bytes, 1526029);
    assert_int_equal(info.fnv, 0x6714bcfeu);
    assert_int_equal(tg_wv_checksum(), info.fnv);
    uint32_t sea = tg_wv_find("sea"), ocean = tg_wv_find("ocean"), key = tg_wv_find("keyboard");
    assert_int_not_equal(sea, TG_WV_NONE);
    assert_int_not_equal(ocean, TG_WV_NONE);
    assert_int_not_equal(key, TG_WV_NONE);
    assert_string_equal(tg_wv_stem(sea), "sea");
    assert_int_not_equal(tg_wv_find("elev"), TG_WV_NONE);  /* stems, as the index has */
    assert_int_equal(tg_wv_find("elevation"), TG_WV_NONE);
    assert_int_equal(tg_wv_find("zzqxv"), TG_WV_NONE);
    assert_true(tg_wv_cos(sea, ocean) > 0.7);
    assert_true(tg_wv_cos(sea, key) < 0.3);
    assert_true(tg_wv_cos(sea, TG_WV_NONE) == 0);
    assert_null(tg_wv_vec(info.count, NULL));
}

/* A query that shares no word with its tool finds it through the word
 * vectors, by each of their two ways (a written word pulls in the
 * catalog's nearest terms; the query's vector is near the tool's), and
 * nothing without them. */
static void test_wordvec_search(void **state)
{
    (void)state;
    json_t *tools = json_pack(
        "[{ss ss}{ss ss}{ss ss}{ss ss}]",
        "name", "get_elevation", "description", "Elevation of points on the earth.",
        "name", "add_reaction", "description", "Add an emoji reaction to a message.",
        "name", "get_weather", "description", "Weather report of a city.",
        "name", "send_invoice", "description", "Email an invoice to a customer.");
    json_t *idx = tg_dindex_build(tools);
    size_t out[4];
    assert_true(tg_dindex_search(idx, "how high is the mountain", out, NULL, 4) >= 1);
    assert_int_equal(out[0], 0);
    assert_true(tg_dindex_search(idx, "forecast rain", out, NULL, 4) >= 1);
    assert_int_equal(out[0], 2);
    tg_dindex_params off = tg_dindex_defaults;
    off.vec_weight = 0;
    off.soft_weight = 0;
    assert_int_equal(tg_dindex_search_p(idx, "how high is the mountain", &off, out, NULL, 4), 0);
    assert_int_equal(tg_dindex_search_p(idx, "forecast rain", &off, out, NULL, 4), 0);
    tg_dindex_params soft = off, vec = off;
    soft.soft_weight = tg_dindex_defaults.soft_weight;
    vec.vec_weight = tg_dindex_defaults.vec_weight;
    assert_true(tg_dindex_search_p(idx, "forecast rain", &soft, out, NULL, 4) >= 1);
    assert_int_equal(out[0], 2);
    assert_true(tg_dindex_search_p(idx, "forecast rain", &vec, out, NULL, 4) >= 1);
    assert_int_equal(out[0], 2);
    assert_true(tg_dindex_search_p(idx, "how high is the mountain", &vec, out, NULL, 4) >= 1);
    assert_int_equal(out[0], 0);
    json_decref(idx);
    json_decref(tools);
}

/* The tool's side expanded (issue 31): a tool matches, at a low weight,
 * the words WordNet defines its name's words with ("thermometer":
 * measuring, temperature), even where another tool has the word itself;
 * without it (exp_w 0) only that other tool matches. */
static void test_doc_expansion(void **state)
{
    (void)state;
    json_t *tools = json_pack(
        "[{ss ss}{ss ss}]",
        "name", "set_temperature_unit", "description", "Celsius or Fahrenheit.",
        "name", "read_thermometer", "description", "The reading of the device.");
    json_t *idx = tg_dindex_build(tools);
    size_t out[4];
    tg_dindex_params p = tg_dindex_defaults;
    p.vec_weight = 0;  /* the word vectors alone, not the expansion */
    p.soft_weight = 0;
    assert_int_equal(tg_dindex_search_p(idx, "temperature", &p, out, NULL, 4), 2);
    assert_int_equal(out[0], 0);  /* the tool that says it stays first */
    assert_int_equal(out[1], 1);
    p.exp_w = 0;
    assert_int_equal(tg_dindex_search_p(idx, "temperature", &p, out, NULL, 4), 1);
    assert_int_equal(out[0], 0);
    json_decref(idx);
    json_decref(tools);
}

/* A name's verb as the user says it (issue 31): WordNet's synonyms of the
 * first verb sense of a name's words match the tool ("mark" for tag_,
 * "halt" for stop_); without them (exp_syn_w 0) the tool whose name
 * says "commit" wins. */
static void test_verb_synonyms(void **state)
{
    (void)state;
    const char *rel[8];
    size_t n = tg_lex_related("tag", TG_LEX_SYN1_VERB, rel, 8), found = 0;
    for (size_t i = 0; i < n; i++)
        found += strcmp(rel[i], "mark") == 0;
    assert_int_equal(found, 1);
    json_t *tools = json_pack(
        "[{ss ss}{ss ss}{ss ss}]",
        "name", "git_commit", "description", "Record the staged changes as a new commit.",
        "name", "create_tag", "description", "Give a commit a version tag.",
        "name", "list_branches", "description", "List the branches.");
    json_t *idx = tg_dindex_build(tools);
    size_t out[4];
    assert_int_equal(tg_dindex_search(idx, "mark this commit as v1.2.0", out, NULL, 4), 2);
    assert_int_equal(out[0], 1);
    tg_dindex_params p = tg_dindex_defaults;
    p.vec_weight = 0;  /* the synonyms alone, not the word vectors or definitions */
    p.soft_weight = 0;
    p.lex_weight = 0;
    assert_int_equal(tg_dindex_search_p(idx, "mark this commit as v1.2.0", &p, out, NULL, 4), 2);
    assert_int_equal(out[0], 1);
    p.exp_syn_w = 0;
    assert_int_equal(tg_dindex_search_p(idx, "mark this commit as v1.2.0", &p, out, NULL, 4), 2);
    assert_int_equal(out[0], 0);
    json_decref(idx);
    json_decref(tools);
}

/* Two names the stemmer makes the same (add_cards_to_list, add_card_to_list)
 * and alike tools: the one whose name the query writes as it is goes first,
 * whichever comes first in the catalog; without it (exact_w 0) the tie
 * falls to catalog order. */
static void test_exact_name(void **state)
{
    (void)state;
    json_t *tools = json_pack(
        "[{ss ss}{ss ss}]",
        "name", "add_cards_to_list", "description", "Add cards to a list.",
        "name", "add_card_to_list", "description", "Add cards to a list.");
    json_t *idx = tg_dindex_build(tools);
    size_t out[4];
    assert_int_equal(tg_dindex_search(idx, "add a card to the list", out, NULL, 4), 2);
    assert_int_equal(out[0], 1);
    assert_int_equal(tg_dindex_search(idx, "add cards to the list", out, NULL, 4), 2);
    assert_int_equal(out[0], 0);
    tg_dindex_params p = tg_dindex_defaults;
    p.exact_w = 0;
    assert_int_equal(tg_dindex_search_p(idx, "add a card to the list", &p, out, NULL, 4), 2);
    assert_int_equal(out[0], 0);
    json_decref(idx);
    json_decref(tools);
}

/* A question wants to read (issue 31): "which cards are assigned to me"
 * puts the tool that lists cards over the one that assigns them, which
 * wins without it (ask_pen 0); an order ("assign ...") keeps the acting
 * tool first, and a name with a reading verb (get_or_create) is not one
 * that only acts. */
static void test_question(void **state)
{
    (void)state;
    json_t *tools = json_pack(
        "[{ss ss}{ss ss}{ss ss}{ss ss}{ss ss}]",
        "name", "assign_card", "description", "Assign a card to a member.",
        "name", "get_cards", "description", "The cards assigned to a member.",
        "name", "get_or_create_card", "description", "A card by its title, made if missing.",
        "name", "send_email", "description", "Send an email.",
        "name", "list_files", "description", "The files of a folder.");
    json_t *idx = tg_dindex_build(tools);
    size_t out[4];
    double sc[4], kept;
    tg_dindex_params p = tg_dindex_defaults;
    p.vec_weight = 0;
    assert_int_equal(tg_dindex_search_p(idx, "which cards are assigned to me", &p, out, sc, 4), 3);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[2], 2);
    kept = sc[2];
    assert_true(tg_dindex_search_p(idx, "cards assigned to me?", &p, out, NULL, 4) >= 2);
    assert_int_equal(out[0], 1);
    assert_true(tg_dindex_search_p(idx, "assign the card to Dana", &p, out, NULL, 4) >= 2);
    assert_int_equal(out[0], 0);
    p.ask_pen = 0;
    assert_int_equal(tg_dindex_search_p(idx, "which cards are assigned to me", &p, out, sc, 4), 3);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[2], 2);
    assert_true(sc[2] == kept);  /* get_or_create_card reads too: not lowered */
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

static int listed(json_t *arr, const char *name)
{
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *e = json_array_get(arr, i);
        const char *n = json_is_string(e) ? json_string_value(e)
                                          : json_string_value(json_object_get(e, "name"));
        if (n && strcmp(n, name) == 0)
            return 1;
    }
    return 0;
}

/* The agent's own tools stay in view beside the meta-tools: one that
 * matches takes no result slot from the catalog tools the model cannot
 * see (its name goes to in_view) unless it leads them clearly, and a task
 * that is its own still finds it ("run a shell command": Bash). */
/* A big-100 request with three tools of the agent's own beside it, in view
 * (core), staged with rules r. */
static json_t *own_staged(tg_ctx *ctx, tg_rules_set *r)
{
    static char *core[] = { "Snap", "Bash", "ScheduleWakeup", NULL };
    tg_error err;
    r->disc.core = core;
    tg_ctx_init(ctx, "r", r, NULL);
    json_t *body = request(100, user_turn("hello"));
    json_t *own = json_pack(
        "[{ss s{ssssso}}, {ss s{ssssso}}, {ss s{ssssso}}]", "type", "function", "function",
        "name", "Snap", "description", "Take a screenshot of the page.", "parameters",
        json_pack("{ss}", "type", "object"), "type", "function", "function", "name", "Bash",
        "description", "Run a shell command in a persistent bash session and return its output.",
        "parameters", json_pack("{ss}", "type", "object"), "type", "function", "function", "name",
        "ScheduleWakeup", "description",
        "Schedule a wakeup: resume this session later, at a delay you choose.", "parameters",
        json_pack("{ss}", "type", "object"));
    json_t *tools = json_deep_copy(json_object_get(body, "tools"));
    json_array_extend(tools, own);
    json_decref(own);
    json_object_set_new(body, "tools", tools);
    assert_int_equal(tg_pipeline_request(body, ctx, &err), 0);
    return body;
}

/* The agent's own tools stay in view beside the meta-tools: one that
 * matches takes no result slot from the catalog tools the model cannot
 * see (its name goes to in_view) unless it leads them clearly, and a task
 * that is its own still finds it ("run a shell command": Bash). */
static void test_in_view(void **state)
{
    (void)state;
    tg_rules_set r;
    rules_for(&r, TG_D_OPENAI);
    tg_ctx ctx;
    json_t *body = own_staged(&ctx, &r);

    /* matching about as well as the catalog's screenshot tool: listed apart,
     * and the results are the catalog's, as many as asked */
    json_t *a = search_with(&ctx, json_pack("{sssi}", "query", "take a screenshot of the page",
                                            "limit", 4));
    json_t *res = json_object_get(a, "results");
    assert_int_equal(json_array_size(res), 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(res, 0), "name")),
                        "puppeteer_screenshot");
    assert_false(listed(res, "Snap"));
    assert_true(listed(json_object_get(a, "in_view"), "Snap"));
    assert_non_null(strstr(json_string_value(json_object_get(a, "in_view_note")), "directly"));
    json_decref(a);

    /* nothing in the catalog comes close: it keeps its place, first */
    a = search_with(&ctx, json_pack("{ss}", "query", "wake up later and resume this session"));
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(a, "results"), 0), "name")),
                        "ScheduleWakeup");
    assert_false(listed(json_object_get(a, "in_view"), "ScheduleWakeup"));
    json_decref(a);

    /* the agent's own task still leads the model to its own tool */
    a = search_with(&ctx, json_pack("{ss}", "query", "run a shell command"));
    res = json_object_get(a, "results");
    assert_true(rank_of(a, "Bash") == 0 || listed(json_object_get(a, "in_view"), "Bash"));
    assert_true(rank_of(a, "Bash") <= 0);
    json_decref(a);
    json_decref(body);
    tg_ctx_clear(&ctx);
}

/* The same answer on every dialect, whole and streamed: it is built once
 * (tg_dd_search_answer) and goes back as the search round's tool message. */
static void test_in_view_rounds(void **state)
{
    (void)state;
    static const tg_dialect ds[] = { TG_D_OPENAI_STRICT, TG_D_GEMINI, TG_D_ANTHROPIC, TG_D_CEREBRAS };
    for (size_t i = 0; i < sizeof ds / sizeof *ds; i++)
        for (int streamed = 0; streamed < 2; streamed++) {
            tg_rules_set r;
            rules_for(&r, ds[i]);
            tg_ctx ctx;
            json_t *body = own_staged(&ctx, &r);
            json_t *call = mk_call(meta(body, "search_tools"),
                                   json_pack("{ssss}", "query", "take a screenshot of the page",
                                             "group", "null"));
            json_t *next = NULL, *emit = NULL, *resp = NULL;
            if (streamed) {
                ctx.stream = true;
                json_t *msg = json_pack("{sssns[o]}", "role", "assistant", "content",
                                        "tool_calls", call);
                assert_int_equal(tg_discovery_stream_round(&ctx, msg, &emit, &next), 1);
                json_decref(msg);
            } else {
                resp = mk_resp(NULL, json_pack("[o]", call));
                assert_int_equal(respond(&ctx, resp, &next), 1);
            }
            json_t *ans = last_tool_answer(next);
            assert_non_null(ans);
            assert_false(listed(json_object_get(ans, "results"), "Snap"));
            assert_true(listed(json_object_get(ans, "in_view"), "Snap"));
            json_decref(ans);
            json_decref(next);
            json_decref(emit);
            json_decref(resp);
            json_decref(body);
            tg_ctx_clear(&ctx);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_search_answer),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_index),
        cmocka_unit_test(test_search_groups_and_queries),
        cmocka_unit_test(test_in_view),
        cmocka_unit_test(test_in_view_rounds),
        cmocka_unit_test(test_lexicon),
        cmocka_unit_test(test_doc_expansion),
        cmocka_unit_test(test_exact_name),
        cmocka_unit_test(test_verb_synonyms),
        cmocka_unit_test(test_question),
        cmocka_unit_test(test_wordvec_table),
        cmocka_unit_test(test_wordvec_search),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
