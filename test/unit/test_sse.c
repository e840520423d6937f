/* test_sse.c -- the SSE parser must give the same events however the bytes
 * are split: whole, byte by byte, and in random pieces; with LF, CRLF and
 * CR line ends (even a CR and its LF in different reads); with comments,
 * multi-line data, and a last event that has no closing blank line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/sse.h"

typedef struct rec {
    tg_buf out;  /* events as "E<name>|D<data>\n" and comments as "C<text>\n" */
} rec;

static void on_event(void *u, const char *event, const char *data, size_t len)
{
    rec *r = u;
    tg_buf_printf(&r->out, "E%s|D", event ? event : "");
    tg_buf_append(&r->out, data, len);
    tg_buf_puts(&r->out, "\n");
}

static void on_comment(void *u, const char *text, size_t len)
{
    rec *r = u;
    tg_buf_puts(&r->out, "C");
    tg_buf_append(&r->out, text, len);
    tg_buf_puts(&r->out, "\n");
}

/* Feed `in` split at the given cut points, with max_event (0: none);
 * return what was recorded. */
static char *run_split_max(const char *in, const size_t *cuts, size_t ncuts, size_t max)
{
    rec r = {0};
    tg_sse p;
    tg_sse_init(&p, on_event, on_comment, &r);
    p.max_event = max;
    size_t n = strlen(in), prev = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t at = i < ncuts ? cuts[i] : n;
        if (at > n)
            at = n;
        if (at > prev)
            tg_sse_feed(&p, in + prev, at - prev);
        prev = at;
    }
    tg_sse_finish(&p);
    tg_sse_free(&p);
    char *s = tg_buf_steal(&r.out, NULL);
    return s;
}

static char *run_split(const char *in, const size_t *cuts, size_t ncuts)
{
    return run_split_max(in, cuts, ncuts, 0);
}

static char *run_whole(const char *in)
{
    return run_split(in, NULL, 0);
}

static char *run_bytes(const char *in)
{
    size_t n = strlen(in);
    size_t *cuts = calloc(n + 1, sizeof *cuts);
    for (size_t i = 0; i < n; i++)
        cuts[i] = i + 1;
    char *s = run_split(in, cuts, n);
    free(cuts);
    return s;
}

static const char *const cases[][2] = {
    {"data: {\"a\":1}\n\ndata: [DONE]\n\n", "E|D{\"a\":1}\nE|D[DONE]\n"},
    {"data: one\r\n\r\ndata: two\r\n\r\n", "E|Done\nE|Dtwo\n"},
    {"data: one\r\rdata: two\r\r", "E|Done\nE|Dtwo\n"},
    {": keep-alive\n\ndata: x\n\n", "C: keep-alive\nE|Dx\n"},
    {"event: error\ndata: {\"e\":1}\n\n", "Eerror|D{\"e\":1}\n"},
    {"data: a\ndata: b\n\n", "E|Da\nb\n"},
    {"data:nospace\n\n", "E|Dnospace\n"},
    {"data: last-without-blank-line", "E|Dlast-without-blank-line\n"},
    {"id: 7\nretry: 10\ndata: x\n\n", "E|Dx\n"},
    {"\n\n\ndata: x\n\n\n", "E|Dx\n"},
    {"data: \n\n", "E|D\n"},
};

static void test_cases_whole(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = run_whole(cases[i][0]);
        assert_string_equal(got, cases[i][1]);
        free(got);
    }
}

static void test_cases_byte_by_byte(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = run_bytes(cases[i][0]);
        assert_string_equal(got, cases[i][1]);
        free(got);
    }
}

static void test_cases_random_splits(void **state)
{
    (void)state;
    unsigned seed = 12345;
    for (int round = 0; round < 300; round++) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            size_t n = strlen(cases[i][0]);
            size_t cuts[8];
            for (int k = 0; k < 8; k++) {
                seed = seed * 1103515245u + 12345u;
                cuts[k] = (seed >> 8) % (n + 1);
            }
            /* cut points must be increasing */
            for (int a = 0; a < 8; a++)
                for (int b = a + 1; b < 8; b++)
                    if (cuts[b] < cuts[a]) {
                        size_t t = cuts[a];
                        cuts[a] = cuts[b];
                        cuts[b] = t;
                    }
            char *got = run_split(cases[i][0], cuts, 8);
            assert_string_equal(got, cases[i][1]);
            free(got);
        }
    }
}

/* Line ends mixed in one read: LF lines before and after a CR line, CRLF
 * pairs, lone CRs, blank lines of each kind. tg_sse_feed looks for a CR
 * once a read and again once it is passed (find_eol); byte by byte each
 * read is one byte, the plain search. Generated texts, the two compared
 * (and with random splits). */
static void test_mixed_line_ends(void **state)
{
    (void)state;
    static const char *const ends[] = {"\n", "\r\n", "\r"};
    static const char *const lines[] = {"data: a", "data: {\"x\":2}", ": c", "event: e",
                                        "data:", ""};
    unsigned seed = 777;
    for (int round = 0; round < 2000; round++) {
        tg_buf in = {0};
        int nl = 1 + round % 23;
        for (int i = 0; i < nl; i++) {
            seed = seed * 1103515245u + 12345u;
            tg_buf_puts(&in, lines[(seed >> 8) % 6]);
            /* mostly LF, so a CR sits several lines ahead of the search */
            unsigned e = (seed >> 16) % 8;
            tg_buf_puts(&in, ends[e < 6 ? 0 : e - 5]);
        }
        char *whole = run_whole(in.data), *bytes = run_bytes(in.data);
        assert_string_equal(whole, bytes);
        size_t cuts[4];
        for (int k = 0; k < 4; k++) {
            seed = seed * 1103515245u + 12345u;
            cuts[k] = (size_t)k * in.len / 4 + (seed >> 8) % (in.len / 4 + 1);
        }
        char *split = run_split(in.data, cuts, 4);
        assert_string_equal(split, bytes);
        free(whole);
        free(bytes);
        free(split);
        tg_buf_free(&in);
    }
}

/* A CR at the very end of one read and its LF at the start of the next is
 * one line end, not two (which would dispatch an event early). */
/* The reader's buffer is reused (curl's is): an event whose data line
 * came in one read and its end in the next must not point into the bytes
 * of the first. Every split point, each read through one buffer that is
 * overwritten after the feed. */
static void test_data_outlives_read(void **state)
{
    (void)state;
    const char *in = "data: {\"a\":1}\n\ndata: one\ndata: two\r\n\r\nevent: e\ndata: x\n\n";
    size_t n = strlen(in);
    char *whole = run_split(in, NULL, 0);
    for (size_t cut = 1; cut < n; cut++) {
        rec r = {0};
        tg_sse p;
        tg_sse_init(&p, on_event, on_comment, &r);
        char buf[128];
        memcpy(buf, in, cut);
        tg_sse_feed(&p, buf, cut);
        memset(buf, 'X', sizeof buf);
        memcpy(buf, in + cut, n - cut);
        tg_sse_feed(&p, buf, n - cut);
        memset(buf, 'X', sizeof buf);
        tg_sse_finish(&p);
        tg_sse_free(&p);
        char *got = tg_buf_steal(&r.out, NULL);
        assert_string_equal(got, whole);
        free(got);
    }
    free(whole);
}

static void test_crlf_across_reads(void **state)
{
    (void)state;
    const char *in = "data: a\r\ndata: b\r\n\r\n";
    size_t cut[] = {8};  /* just after the first CR */
    char *got = run_split(in, cut, 1);
    assert_string_equal(got, "E|Da\nb\n");
    free(got);
}

static void test_large_event(void **state)
{
    (void)state;
    size_t n = 200000;
    char *in = malloc(n + 16);
    memcpy(in, "data: ", 6);
    memset(in + 6, 'x', n);
    memcpy(in + 6 + n, "\n\n", 3);
    char *got = run_bytes(in);
    assert_int_equal(strlen(got), n + 4); /* "E|D" + data + newline */
    free(got);
    free(in);
}

static void test_max_event_overflow(void **state)
{
    (void)state;
    rec r = {0};
    tg_sse p;
    tg_sse_init(&p, on_event, NULL, &r);
    p.max_event = 16;
    assert_int_equal(tg_sse_feed(&p, "data: 0123456789abcdefghij\n\n", 28), -1);
    tg_sse_free(&p);
    tg_buf_free(&r.out);
}

/* The two ways an upstream can make a parser hold without end: one line
 * that never ends, and data lines that never get their blank line. Either
 * way the parser stops at max_event (plus one read), lets go of what it
 * held and delivers nothing more, not even at the finish. */
static void feed_until_refused(const char *piece, size_t max)
{
    rec r = {0};
    tg_sse p;
    tg_sse_init(&p, on_event, NULL, &r);
    p.max_event = max;
    size_t fed = 0, n = strlen(piece);
    int rc = 0;
    while (rc == 0 && fed < 64 * max) {
        rc = tg_sse_feed(&p, piece, n);
        fed += n;
        assert_true(p.line.len <= max + 6 && p.data.len <= max);  /* 6: "data: " */
    }
    assert_int_equal(rc, -1);
    assert_null(p.line.data);
    assert_null(p.data.data);
    assert_int_equal(tg_sse_feed(&p, "\n\ndata: late\n\n", 16), -1);
    tg_sse_finish(&p);
    assert_null(r.out.data);  /* no event came out of it */
    tg_sse_free(&p);
}

static void test_max_event_endless_line(void **state)
{
    (void)state;
    feed_until_refused("data: {\"x\":\"", 1024);  /* first piece, then: */
    feed_until_refused("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 1024);
}

static void test_max_event_endless_data_lines(void **state)
{
    (void)state;
    feed_until_refused("data: yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\n", 1024);
    feed_until_refused("data: y\r\n", 1024);
}

/* An event just under the limit still goes through whole. */
static void test_max_event_fits(void **state)
{
    (void)state;
    rec r = {0};
    tg_sse p;
    tg_sse_init(&p, on_event, NULL, &r);
    p.max_event = 64;
    char in[128] = "data: ";
    memset(in + 6, 'z', 60);
    memcpy(in + 66, "\n\n", 3);
    assert_int_equal(tg_sse_feed(&p, in, strlen(in)), 0);
    assert_int_equal(r.out.len, 3 + 60 + 1);
    tg_sse_free(&p);
    tg_buf_free(&r.out);
}

/* Where the reads split the input never changes where a parser with
 * max_event stops: lines and events just under, at and over the limit,
 * fed whole and one byte at a time. */
static void test_max_event_split_invariant(void **state)
{
    (void)state;
    for (size_t len = 10; len <= 22; len++) {
        for (int shape = 0; shape < 4; shape++) {
            char in[256], v[64];
            memset(v, 'v', len);
            v[len] = '\0';
            if (shape == 0)  /* one data line of len */
                snprintf(in, sizeof in, "data: a\n\ndata: %s\n\ndata: z\n\n", v);
            else if (shape == 1)  /* two lines that join past it */
                snprintf(in, sizeof in, "data: a\n\ndata: %.*s\ndata: %s\n\ndata: z\n\n",
                         (int)(len / 2), v, v + len / 2);
            else if (shape == 2)  /* an event: line, which is no data */
                snprintf(in, sizeof in, "data: a\n\nevent: %s\ndata: b\n\n", v);
            else  /* "data:" without its space: the value one byte longer */
                snprintf(in, sizeof in, "data:a\n\ndata:%s\n\ndata:z\n\n", v);
            size_t n = strlen(in);
            size_t *cuts = calloc(n + 1, sizeof *cuts);
            for (size_t i = 0; i < n; i++)
                cuts[i] = i + 1;
            char *whole = run_split_max(in, NULL, 0, 16);
            char *bytes = run_split_max(in, cuts, n, 16);
            assert_string_equal(whole ? whole : "", bytes ? bytes : "");
            free(whole);
            free(bytes);
            free(cuts);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases_whole),
        cmocka_unit_test(test_cases_byte_by_byte),
        cmocka_unit_test(test_cases_random_splits),
        cmocka_unit_test(test_data_outlives_read),
        cmocka_unit_test(test_crlf_across_reads),
        cmocka_unit_test(test_mixed_line_ends),
        cmocka_unit_test(test_large_event),
        cmocka_unit_test(test_max_event_overflow),
        cmocka_unit_test(test_max_event_endless_line),
        cmocka_unit_test(test_max_event_endless_data_lines),
        cmocka_unit_test(test_max_event_fits),
        cmocka_unit_test(test_max_event_split_invariant),
    };
    return cmocka_run_group_tests_name("sse", tests, NULL, NULL);
}
