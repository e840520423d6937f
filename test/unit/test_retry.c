/* test_retry.c -- the upstream transfer's decisions (proxy/retry.h)
 * without a socket: which answers are retried, the delay before a retry
 * (backoff and Retry-After), the fallback, and when an upstream is late. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "proxy/retry.h"

/* "not now" answers and transport failures before any answer are
 * retried; answers that a retry would only repeat are not; nor is a round
 * toolgate timed out itself. */
static void test_retryable(void **state)
{
    (void)state;
    static const long again[] = {429, 500, 502, 503, 504};
    for (size_t i = 0; i < sizeof again / sizeof again[0]; i++) {
        assert_true(tg_retryable(CURLE_OK, again[i], false));
        assert_false(tg_retryable(CURLE_OK, again[i], true));
    }
    static const long final[] = {200, 201, 301, 400, 401, 403, 404, 408, 413, 422, 501, 505, 529};
    for (size_t i = 0; i < sizeof final / sizeof final[0]; i++)
        assert_false(tg_retryable(CURLE_OK, final[i], false));
    assert_true(tg_retryable(CURLE_COULDNT_CONNECT, 0, false));
    assert_true(tg_retryable(CURLE_COULDNT_RESOLVE_HOST, 0, false));
    assert_true(tg_retryable(CURLE_GOT_NOTHING, 0, false));
    assert_true(tg_retryable(CURLE_SEND_ERROR, 0, false));
    assert_false(tg_retryable(CURLE_COULDNT_CONNECT, 0, true));
    /* the request may have reached a model: not sent twice */
    assert_false(tg_retryable(CURLE_RECV_ERROR, 0, false));
    assert_false(tg_retryable(CURLE_OPERATION_TIMEDOUT, 0, false));
    assert_false(tg_retryable(CURLE_PARTIAL_FILE, 503, false));
}

/* Backoff: in [base/2, base] with base = 100 ms << min(attempt, 7), every
 * value of the range reachable by the jitter, none outside it. */
static void test_backoff_range(void **state)
{
    (void)state;
    for (int attempt = 0; attempt < 10; attempt++) {
        long base = 100L << (attempt < 7 ? attempt : 7);
        long lo = -1, hi = -1;
        for (uint64_t j = 0; j < 20000; j++) {
            long d = tg_retry_delay_ms(attempt, 100, NULL, j);
            assert_true(d >= base / 2 && d <= base);
            if (lo < 0 || d < lo)
                lo = d;
            if (d > hi)
                hi = d;
        }
        assert_int_equal(lo, base / 2);
        assert_int_equal(hi, base);
    }
    assert_int_equal(tg_retry_delay_ms(0, 3, NULL, 0), 50);
    assert_int_equal(tg_retry_delay_ms(1, 3, NULL, 0), 100);
    assert_int_equal(tg_retry_delay_ms(2, 3, NULL, 0), 200);
    assert_int_equal(tg_retry_delay_ms(9, 10, NULL, 6400), 12800);
}

/* No retry left: -1 whatever the provider said. */
static void test_retries_spent(void **state)
{
    (void)state;
    assert_int_equal(tg_retry_delay_ms(0, 0, NULL, 7), -1);
    assert_int_equal(tg_retry_delay_ms(2, 2, "1", 7), -1);
    assert_int_equal(tg_retry_delay_ms(3, 2, NULL, 7), -1);
    assert_true(tg_retry_delay_ms(1, 2, NULL, 7) >= 0);
}

/* Retry-After in seconds wins over the backoff, up to 60 s; past that
 * the agent decides (-1); a value that is no number is ignored. */
static void test_retry_after(void **state)
{
    (void)state;
    assert_int_equal(tg_retry_delay_ms(0, 3, "2", 12345), 2000);
    assert_int_equal(tg_retry_delay_ms(0, 3, "0", 12345), 0);
    assert_int_equal(tg_retry_delay_ms(0, 3, "0.5", 12345), 500);
    assert_int_equal(tg_retry_delay_ms(2, 3, "60", 12345), 60000);
    assert_int_equal(tg_retry_delay_ms(0, 3, "61", 12345), -1);
    assert_int_equal(tg_retry_delay_ms(0, 3, "3600", 0), -1);
    /* an HTTP date or garbage: the backoff (attempt 0, jitter 0: 50 ms) */
    assert_int_equal(tg_retry_delay_ms(0, 3, "Wed, 21 Oct 2026 07:28:00 GMT", 0), 50);
    assert_int_equal(tg_retry_delay_ms(0, 3, "", 0), 50);
    assert_int_equal(tg_retry_delay_ms(0, 3, "-5", 0), 50);
}

/* The fallback: once, and only for chat requests. */
static void test_fallback(void **state)
{
    (void)state;
    assert_string_equal(tg_fallback_route("backup", false, true), "backup");
    assert_null(tg_fallback_route("backup", true, true));
    assert_null(tg_fallback_route("backup", false, false));
    assert_null(tg_fallback_route(NULL, false, true));
}

/* ttfb counts from the round's start until the first byte; idle from the
 * last byte after it; 0 is no limit; exactly at the limit is on time. */
static void test_late(void **state)
{
    (void)state;
    const uint64_t s = 1000000;  /* the round started at 1 s */
    assert_int_equal(tg_upstream_late(s + 2000000, s, 0, s, 2000, 0), TG_ON_TIME);
    assert_int_equal(tg_upstream_late(s + 2000001, s, 0, s, 2000, 0), TG_LATE_TTFB);
    assert_int_equal(tg_upstream_late(s + 9000000, s, 0, s, 0, 100), TG_ON_TIME);
    /* a clock behind the start (no wrap into a huge wait) */
    assert_int_equal(tg_upstream_late(s - 1, s, 0, s, 1, 1), TG_ON_TIME);
    /* after the first byte only idle counts, from the last byte */
    uint64_t first = s + 500000, last = s + 5000000;
    assert_int_equal(tg_upstream_late(last + 1000000, s, first, last, 1, 1000), TG_ON_TIME);
    assert_int_equal(tg_upstream_late(last + 1000001, s, first, last, 1, 1000), TG_LATE_IDLE);
    assert_int_equal(tg_upstream_late(last + 99000000, s, first, last, 1, 0), TG_ON_TIME);
}

static void test_timed_out(void **state)
{
    (void)state;
    assert_true(tg_upstream_timed_out(true, CURLE_OK));
    assert_true(tg_upstream_timed_out(false, CURLE_OPERATION_TIMEDOUT));
    assert_false(tg_upstream_timed_out(false, CURLE_COULDNT_CONNECT));
    assert_false(tg_upstream_timed_out(false, CURLE_OK));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retryable),      cmocka_unit_test(test_backoff_range),
        cmocka_unit_test(test_retries_spent),  cmocka_unit_test(test_retry_after),
        cmocka_unit_test(test_fallback),       cmocka_unit_test(test_late),
        cmocka_unit_test(test_timed_out),
    };
    return cmocka_run_group_tests_name("retry", tests, NULL, NULL);
}
