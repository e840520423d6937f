/* test_collect.c -- a stream folded into the whole answer it stands for:
 * chat chunks (repair/collect.c, test/vectors/collect/) and Responses or
 * Messages events (bridge/api_fold.c, test/vectors/api_fold/, where
 * "failed" says the fold is the stream's error). One test a file:
 *   sse: the events' data, each a JSON value or a string ("[DONE]", or
 *        raw text that is not JSON)
 *   expected: the completion (or {"error": ...}), or null for "no chunk"
 * Matched whole (vectors.h: "<any>" matches anything). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "vectors.h"

#include "core/jsonio.h"
#include "bridge/api_fold.h"
#include "repair/collect.h"

#define VEC_DIR "test/vectors/collect"
#define API_DIR "test/vectors/api_fold"

/* Each event of the fixture's "sse" list to fn, as the data an SSE parser
 * hands on: a string as it is, any other value as its JSON text. */
static void feed(const json_t *fx, void (*fn)(void *, const char *, size_t), void *ud)
{
    json_t *sse = json_object_get(fx, "sse");
    assert_true(json_is_array(sse));
    size_t i;
    json_t *ev;
    json_array_foreach(sse, i, ev) {
        char *data = json_is_string(ev) ? strdup(json_string_value(ev))
                                        : json_dumps(ev, JSON_COMPACT | JSON_ENCODE_ANY);
        fn(ud, data, strlen(data));
        free(data);
    }
}

static void to_collect(void *c, const char *data, size_t len)
{
    tg_collect_event(c, data, len);
}

static void to_api_fold(void *f, const char *data, size_t len)
{
    tg_api_fold_event(f, data, len);
}

static void run_vector(void **state)
{
    json_t *fx = load_vector(VEC_DIR, *state);
    tg_collect *c = tg_collect_new();
    feed(fx, to_collect, c);
    json_t *got = tg_collect_end(c);
    json_t *exp = json_object_get(fx, "expected");
    if (json_is_null(exp))
        assert_null(got);
    else
        vector_expect(vector_match(exp, got, false), exp, got, *state);
    json_decref(got);
    json_decref(fx);
}

static void run_api_vector(void **state)
{
    json_t *fx = load_vector(API_DIR, *state);
    tg_api_fold *f = tg_api_fold_new();
    feed(fx, to_api_fold, f);
    int failed = -1;
    json_t *got = tg_api_fold_end(f, &failed);
    json_t *exp = json_object_get(fx, "expected");
    if (json_is_null(exp))
        assert_null(got);
    else
        vector_expect(vector_match(exp, got, false), exp, got, *state);
    assert_int_equal(failed, json_integer_value(json_object_get(fx, "failed")));
    json_decref(got);
    json_decref(fx);
}

/* Past MAX_CHOICES and MAX_CALLS nothing more is folded, and the fold
 * stays linear: 20,000 fresh indices of each kind. */
static void test_bounds(void **state)
{
    (void)state;
    tg_collect *c = tg_collect_new();
    char buf[256];
    for (int i = 0; i < 20000; i++) {
        int n = snprintf(buf, sizeof buf,
                         "{\"choices\":[{\"index\":%d,\"delta\":{\"content\":\"x\"}}]}", i);
        tg_collect_event(c, buf, (size_t)n);
        n = snprintf(buf, sizeof buf,
                     "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,"
                     "\"id\":\"c%d\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}",
                     i, i);
        tg_collect_event(c, buf, (size_t)n);
    }
    json_t *got = tg_collect_end(c);
    json_t *choices = json_object_get(got, "choices");
    assert_int_equal(json_array_size(choices), 128);
    json_t *calls = json_object_get(json_object_get(json_array_get(choices, 0), "message"), "tool_calls");
    assert_int_equal(json_array_size(calls), 1024);
    json_decref(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_bounds)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rc |= run_vector_files("collect vectors", VEC_DIR, run_vector);
    return rc | run_vector_files("api fold vectors", API_DIR, run_api_vector);
}
