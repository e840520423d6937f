/* test_rank.c -- the ranking steps issue 19 kept (discovery/index.c):
 * prefixes of stems (scraper/scrape), the second stage over the top 50
 * that counts the written words a tool covers, synonyms included, and the
 * values of a parameter's enum indexed. Each check fails without its step
 * (compared with the step turned off where it is a knob).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "discovery/index.h"

static json_t *catalog(const char *const (*t)[2], size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{sss{sssss{sss{}}}}", "type", "function", "function",
                                           "name", t[i][0], "description", t[i][1], "parameters",
                                           "type", "object", "properties"));
    return a;
}

static long top(json_t *idx, const char *q, const tg_dindex_params *p)
{
    size_t out[4];
    size_t m = tg_dindex_search_p(idx, q, p, out, NULL, 4);
    if (getenv("TG_RANK_DEBUG"))
        printf("# %s: %zu matched, first %ld\n", q, m, m ? (long)out[0] : -1L);
    return m ? (long)out[0] : -1;
}

static void test_prefixes(void **state)
{
    (void)state;
    static const char *const t[][2] = {
        { "scrape_page", "Scrape the text of a web page." },
        { "crawl_site", "Crawl every page of a site." },
        { "list_runs", "List the runs of an account." },
        { "get_weather", "The weather of a city." },
    };
    json_t *tools = catalog(t, 4), *idx = tg_dindex_build(tools);
    tg_dindex_params off = tg_dindex_defaults;
    off.prefix_weight = 0;
    assert_int_equal(top(idx, "scraper", &tg_dindex_defaults), 0);
    assert_int_equal(top(idx, "scraper", &off), -1);
    assert_int_equal(top(idx, "crawler", &tg_dindex_defaults), 1);
    assert_int_equal(top(idx, "weather", &tg_dindex_defaults), 3);  /* no prefix of another */
    json_decref(idx);
    json_decref(tools);
}

static void test_rerank(void **state)
{
    (void)state;
    static const char *const t[][2] = {
        { "board_stats", "Statistics: how many cards a board holds." },
        { "tidy_up", "Delete a card from its board." },
        { "show_weather", "The weather of a city." },
        { "list_items", "List the items." },
    };
    json_t *tools = catalog(t, 4), *idx = tg_dindex_build(tools);
    tg_dindex_params on = tg_dindex_defaults, off;
    on.vec_weight = 0;  /* the step alone: the word vectors move both tools */
    on.soft_weight = 0;
    on.exp_w = 0;       /* ... and so do the names' definitions (board_stats') */
    off = on;
    off.rerank = 0;
    /* "rid" is covered by tidy_up's "delete" (a synonym): three of the
     * written words against board_stats' two, which BM25 alone puts first */
    assert_int_equal(top(idx, "get rid of the card on the board", &on), 1);
    assert_int_equal(top(idx, "get rid of the card on the board", &off), 0);
    json_decref(idx);
    json_decref(tools);
}

/* A parameter's enum values are words of the tool: "archived" finds the
 * tool whose filter takes it, though neither name nor description says it. */
static void test_enum_values(void **state)
{
    (void)state;
    json_t *tools = json_pack(
        "[{sss{sssss{sss{s{sss[sss]}}}}}{sss{sssss{sss{}}}}]", "type", "function", "function",
        "name", "list_projects", "description", "List the projects of a team.", "parameters",
        "type", "object", "properties", "state", "type", "string", "enum", "active", "archived",
        "deleted", "type", "function", "function", "name", "list_teams", "description",
        "List the teams.", "parameters", "type", "object", "properties");
    json_t *idx = tg_dindex_build(tools);
    assert_int_equal(top(idx, "archived", &tg_dindex_defaults), 0);
    json_decref(idx);
    json_decref(tools);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_rerank),
        cmocka_unit_test(test_enum_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
