/* test_discovery_hints.c -- discovery's successor hints (hints.c): the
 * note beside a hidden tool's result that names the tool an agent likely
 * calls next, stable from turn to turn, its links, ties and when there is
 * none. The fixtures are discovery_fixture.h.
 */
#include "discovery_fixture.h"

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
        cmocka_unit_test(test_hints_note),
        cmocka_unit_test(test_hints_stable),
        cmocka_unit_test(test_hints_links),
        cmocka_unit_test(test_hints_ties),
        cmocka_unit_test(test_hints_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
