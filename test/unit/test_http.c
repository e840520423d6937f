/* test_http.c -- the proxy's pure helpers: request shape checks (every
 * top-level field with a wrong type gets a 400 naming it), nesting limits,
 * constant-time key compare, header lists and hop-by-hop rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/http.h"

static int validate(const char *json, tg_error *err)
{
    json_t *j = json_loads(json, 0, NULL);
    assert_non_null(j);
    int rc = tg_validate_chat_request(j, 3, false, err);
    json_decref(j);
    return rc;
}

static void test_valid_requests(void **state)
{
    (void)state;
    tg_error err;
    assert_int_equal(validate("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", &err), 0);
    assert_int_equal(validate("{\"messages\":[],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a\"}},"
                              "{\"type\":\"custom\",\"custom\":{\"name\":\"b\"}}],\"stream\":true,\"temperature\":0.5,"
                              "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"a\"}},\"stop\":[\"x\"]}",
                              &err), 0);
    /* what agents send and toolgate repairs is not refused: null content
     * beside calls, arguments as an object, parts of any type */
    assert_int_equal(validate("{\"messages\":[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":"
                              "[{\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}}]},"
                              "{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":[{\"type\":\"text\","
                              "\"text\":\"x\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"u\"}}]}]}",
                              &err), 0);
}

static void test_wrong_types_name_the_field(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"[]", ""},
        {"{\"model\":\"m\"}", "messages"},
        {"{\"messages\":{}}", "messages"},
        {"{\"messages\":[1]}", "messages[0]"},
        {"{\"messages\":[{\"content\":\"x\"}]}", "messages[0]"},
        {"{\"messages\":[],\"model\":5}", "model"},
        {"{\"messages\":[],\"tools\":{}}", "tools"},
        {"{\"messages\":[],\"tools\":[1]}", "tools[0]"},
        {"{\"messages\":[],\"tools\":[{\"type\":\"function\"}]}", "tools[0].function"},
        {"{\"messages\":[],\"tools\":[{\"type\":\"function\",\"function\":\"f\"}]}", "tools[0].function"},
        {"{\"messages\":[],\"tools\":[{\"type\":5,\"function\":{\"name\":\"f\"}}]}", "tools[0].type"},
        {"{\"messages\":[],\"tools\":[{\"function\":{\"name\":7}}]}", "tools[0].function.name"},
        {"{\"messages\":[],\"tools\":[{\"function\":{\"name\":\"f\",\"parameters\":\"{}\"}}]}",
         "tools[0].function.parameters"},
        {"{\"messages\":[],\"tools\":[{\"function\":{\"name\":\"f\"}}],\"tool_choice\":"
         "{\"type\":\"function\",\"function\":{\"name\":\"g\"}}}", "tool_choice"},
        {"{\"messages\":[],\"tools\":[{},{},{},{}]}", "tools"},
        {"{\"messages\":[],\"stream\":\"yes\"}", "stream"},
        {"{\"messages\":[],\"temperature\":\"hot\"}", "temperature"},
        {"{\"messages\":[],\"max_tokens\":[]}", "max_tokens"},
        {"{\"messages\":[],\"tool_choice\":3}", "tool_choice"},
        {"{\"messages\":[],\"stop\":3}", "stop"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":5}]}", "messages[0].content"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":{}}]}", "messages[0].content"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":[\"hi\"]}]}", "messages[0].content[0]"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"hi\"}]}]}",
         "messages[0].content[0]"},
        {"{\"messages\":[{\"role\":\"user\",\"name\":7}]}", "messages[0].name"},
        {"{\"messages\":[{\"role\":\"tool\",\"tool_call_id\":1}]}", "messages[0].tool_call_id"},
        {"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":{}}]}", "messages[0].tool_calls"},
        {"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[\"x\"]}]}",
         "messages[0].tool_calls[0]"},
        {"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":\"f\"}]}]}",
         "messages[0].tool_calls[0].function"},
        {"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{}}]}]}",
         "messages[0].tool_calls[0].function.name"},
        {"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":"
         "{\"name\":\"f\",\"arguments\":5}}]}]}",
         "messages[0].tool_calls[0].function.arguments"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tg_error err;
        memset(&err, 0, sizeof err);
        assert_int_equal(validate(cases[i][0], &err), -1);
        assert_int_equal(err.status, 400);
        assert_string_equal(err.param, cases[i][1]);
        assert_true(strlen(err.message) > 0);
        char *body = tg_error_body(&err);
        json_t *j = json_loads(body, 0, NULL);
        assert_non_null(json_object_get(json_object_get(j, "error"), "message"));
        assert_non_null(json_object_get(json_object_get(j, "error"), "type"));
        json_decref(j);
        free(body);
    }
}

static void test_depth(void **state)
{
    (void)state;
    assert_false(tg_json_depth_exceeds("{\"a\":[1,{\"b\":2}]}", 17, 3));
    assert_true(tg_json_depth_exceeds("{\"a\":[1,{\"b\":2}]}", 17, 2));
    /* brackets inside strings do not count, escaped quotes do not end them */
    const char *s = "{\"a\":\"[[[[\\\"[[[[\"}";
    assert_false(tg_json_depth_exceeds(s, strlen(s), 1));
    size_t n = 100000;
    char *deep = malloc(n);
    memset(deep, '[', n);
    assert_true(tg_json_depth_exceeds(deep, n, 512));
    free(deep);
}

static void test_consttime_equal(void **state)
{
    (void)state;
    assert_true(tg_consttime_equal("sk-abc", "sk-abc"));
    assert_false(tg_consttime_equal("sk-abc", "sk-abd"));
    assert_false(tg_consttime_equal("sk-abc", "sk-ab"));
    assert_false(tg_consttime_equal("", "x"));
    assert_true(tg_consttime_equal("", ""));
}

static void test_header_list(void **state)
{
    (void)state;
    tg_header_list l = {0};
    tg_header_list_add_line(&l, "Content-Type: text/event-stream\r\n", 33);
    tg_header_list_add_line(&l, "X-Foo:bar  \r\n", 13);
    tg_header_list_add_line(&l, "garbage-without-colon\r\n", 23);
    assert_int_equal(l.n, 2);
    assert_string_equal(tg_header_get(&l, "content-type"), "text/event-stream");
    assert_string_equal(tg_header_get(&l, "x-foo"), "bar");
    assert_null(tg_header_get(&l, "x-bar"));
    tg_header_list_free(&l);
    assert_true(tg_header_is_hop("Connection"));
    assert_true(tg_header_is_hop("transfer-encoding"));
    assert_false(tg_header_is_hop("Authorization"));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* Ids come from the kernel's CSPRNG: 26 base32 characters (130 bits)
 * after "tg-", all distinct, every position spread over the alphabet, and
 * two generators (two workers) share no sequence. */
static void test_request_id(void **state)
{
    (void)state;
    enum { N = 1000, LEN = 3 + TG_ID_CHARS };
    static char ids[2 * N][32];
    tg_random r1, r2;
    tg_random_init(&r1);
    tg_random_init(&r2);
    for (int i = 0; i < 2 * N; i++)
        tg_request_id(ids[i], sizeof ids[i], i < N ? &r1 : &r2);
    int seen[TG_ID_CHARS][32] = {{0}};
    for (int i = 0; i < 2 * N; i++) {
        assert_int_equal(strlen(ids[i]), LEN);
        assert_memory_equal(ids[i], "tg-", 3);
        assert_true(tg_header_value_safe(ids[i]));
        for (int k = 0; k < TG_ID_CHARS; k++) {
            const char *p = strchr("abcdefghijklmnopqrstuvwxyz234567", ids[i][3 + k]);
            assert_non_null(p);
            seen[k][p - "abcdefghijklmnopqrstuvwxyz234567"]++;
        }
    }
    for (int k = 0; k < TG_ID_CHARS; k++)  /* 2000 draws of 32 values: each ~62 times */
        for (int c = 0; c < 32; c++)
            assert_true(seen[k][c] > 20 && seen[k][c] < 130);
    qsort(ids, 2 * N, sizeof ids[0], cmp_str);
    for (int i = 1; i < 2 * N; i++)
        assert_string_not_equal(ids[i - 1], ids[i]);
    char small[8];  /* a short buffer is cut, never overrun */
    tg_request_id(small, sizeof small, &r1);
    assert_int_equal(strlen(small), 7);
    assert_false(tg_header_value_safe("bad\r\nX-Injected: 1"));
}

/* Paths as MHD hands them over (decoded once). */
static void test_dot_segments(void **state)
{
    (void)state;
    static const char *const bad[] = {"/v1/../admin", "/v1/./models", "/v1/models/..",
                                      "/..", "/v1/a\\..\\b", "/v1/%2e%2e/x", "/v1/%2F",
                                      "/v1/..%5cx", "/v1/%2E", "/raw/v1/..;/admin",
                                      "/v1/..;x=1/admin", "/v1/.;/models", "/v1/..%3b/admin",
                                      "/v1/..%3B/admin", "/v1/a\\..;\\b", "/v1/..;", NULL};
    static const char *const good[] = {"/v1/models", "/v1/files/file-abc.jsonl", "/v1/...",
                                       "/v1/a..b", "/v1/.well-known", "/v1/100%", "/",
                                       "/v1/a;b", "/v1/...;x", "/v1/x..;", NULL};
    for (int i = 0; bad[i]; i++)
        assert_true(tg_path_has_dot_segment(bad[i]));
    for (int i = 0; good[i]; i++)
        assert_false(tg_path_has_dot_segment(good[i]));
    tg_buf u = {0};
    tg_append_path(&u, "/v1/a b?c#d%e/\xc3\xa9:@");
    assert_string_equal(u.data, "/v1/a%20b%3Fc%23d%25e/%C3%A9:@");
    tg_buf_free(&u);
}

/* The allow-list, a prefix in forward_headers, and the credentials. */
static void test_forwarded_headers(void **state)
{
    (void)state;
    char *extra[] = {"x-mine", "x-gw-*", NULL};
    assert_true(tg_header_forwarded("Anthropic-Version", NULL));
    assert_true(tg_header_forwarded("OpenAI-Organization", NULL));
    assert_true(tg_header_forwarded("x-stainless-os", NULL));
    assert_false(tg_header_forwarded("Cookie", extra));
    assert_false(tg_header_forwarded("X-Forwarded-For", extra));
    assert_false(tg_header_forwarded("x-mine", NULL));
    assert_true(tg_header_forwarded("X-Mine", extra));
    assert_true(tg_header_forwarded("x-gw-trace", extra));
    assert_false(tg_header_forwarded("x-gw", extra));
    /* the first-letter shortcut folds case and lets "*" alone match all */
    char *upper[] = {"X-Upper", NULL}, *star[] = {"*", NULL};
    assert_true(tg_header_forwarded("x-upper", upper));
    assert_true(tg_header_forwarded("Cookie", star));
    assert_true(tg_header_is_hop("TE"));
    assert_true(tg_header_is_credential("X-Api-Key"));
    assert_true(tg_header_is_credential("authorization"));
    assert_false(tg_header_is_credential("x-upstream-authorization"));
    /* a line is "name: value" with CR and LF made spaces, short (written
     * on the stack) or long */
    struct curl_slist *l = NULL;
    tg_header_line_append(&l, "X-Short", "a\r\nb");
    char longv[700];
    memset(longv, 'v', sizeof longv - 1);
    longv[sizeof longv - 1] = '\0';
    longv[300] = '\n';
    tg_header_line_append(&l, "X-Long", longv);
    tg_header_line_append(&l, "X-Empty", "");
    assert_string_equal(l->data, "X-Short: a  b");
    assert_int_equal(strlen(l->next->data), strlen("X-Long: ") + sizeof longv - 1);
    assert_memory_equal(l->next->data, "X-Long: vvv", 11);
    assert_int_equal(l->next->data[8 + 300], ' ');
    assert_string_equal(l->next->next->data, "X-Empty: ");
    curl_slist_free_all(l);
}

/* An error that quotes bytes which are not UTF-8 (a percent-decoded path,
 * a message cut inside a character) still has a body: it was NULL, and the
 * server's strlen of it took the process down on GET /%FF. */
static void test_error_body_not_utf8(void **state)
{
    (void)state;
    char long_path[1500];
    memset(long_path, 'a', sizeof long_path);
    for (size_t i = 1001; i + 1 < sizeof long_path; i += 2)
        memcpy(long_path + i, "\xc3\xa9", 2);  /* e-acute, cut somewhere by the 1 KB message */
    long_path[sizeof long_path - 1] = '\0';
    long_path[0] = '/';
    const char *paths[] = {"/\xff", "/ok\xc3", long_path};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        tg_error err;
        tg_error_set(&err, 404, "invalid_request_error", "unknown_url", paths[i],
                     "unknown path %s: nothing here", paths[i]);
        char *body = tg_error_body(&err);
        assert_non_null(body);
        json_t *j = json_loads(body, 0, NULL);
        assert_non_null(j);
        const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
        assert_non_null(msg);
        assert_non_null(strstr(msg, "unknown path /"));
        assert_non_null(strstr(msg, "\xef\xbf\xbd"));  /* U+FFFD */
        assert_non_null(json_string_value(json_object_get(json_object_get(j, "error"), "param")));
        json_decref(j);
        free(body);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_requests), cmocka_unit_test(test_wrong_types_name_the_field),
        cmocka_unit_test(test_depth),          cmocka_unit_test(test_consttime_equal),
        cmocka_unit_test(test_header_list),    cmocka_unit_test(test_request_id),
        cmocka_unit_test(test_dot_segments),   cmocka_unit_test(test_forwarded_headers),
        cmocka_unit_test(test_error_body_not_utf8),
    };
    return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
