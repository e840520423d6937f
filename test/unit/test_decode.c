/* test_decode.c -- request bodies' content codings undone (core/decode.c):
 * each coding, raw and zlib-wrapped deflate, codings chained, and what must
 * fail: an unknown coding, bytes that are not their coding, a stream cut
 * short, a bomb past the bound. The compressed inputs are made here with
 * zlib and libzstd, the libraries the decoder uses the other way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "core/decode.h"

static const char body[] = "{\"model\":\"m\",\"input\":\"hello hello hello hello\"}";

/* wbits: 31 gzip, 15 zlib, -15 raw deflate */
static tg_buf deflated(const char *in, size_t n, int wbits)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY), Z_OK);
    tg_buf b = {0};
    tg_buf_reserve(&b, deflateBound(&z, (uLong)n));
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    z.next_out = (Bytef *)b.data;
    z.avail_out = (uInt)deflateBound(&z, (uLong)n);
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    b.len = z.total_out;
    deflateEnd(&z);
    return b;
}

static tg_buf zstded(const char *in, size_t n)
{
    tg_buf b = {0};
    size_t cap = ZSTD_compressBound(n);
    tg_buf_reserve(&b, cap);
    b.len = ZSTD_compress(b.data, cap, in, n, 3);
    assert_false(ZSTD_isError(b.len));
    return b;
}

static void expect_body(const char *coding, const tg_buf *in)
{
    tg_buf out = {0};
    assert_int_equal(tg_decode_body(coding, in->data, in->len, 1 << 20, &out), TG_DECODE_OK);
    assert_int_equal(out.len, strlen(body));
    assert_memory_equal(out.data, body, out.len);
    tg_buf_free(&out);
}

static void test_each_coding(void **state)
{
    (void)state;
    tg_buf g = deflated(body, strlen(body), 31), z = deflated(body, strlen(body), 15),
           raw = deflated(body, strlen(body), -15), s = zstded(body, strlen(body));
    expect_body("gzip", &g);
    expect_body("x-gzip", &g);
    expect_body("deflate", &z);
    expect_body("deflate", &raw);  /* sent raw, as some clients do */
    expect_body("zstd", &s);
    expect_body("ZSTD", &s);
    tg_buf plain = {0};
    tg_buf_puts(&plain, body);
    expect_body("identity", &plain);
    expect_body("", &plain);
    tg_buf_free(&g);
    tg_buf_free(&z);
    tg_buf_free(&raw);
    tg_buf_free(&s);
    tg_buf_free(&plain);
}

/* "zstd, gzip": zstd applied first, so gzip is undone first. */
static void test_chained(void **state)
{
    (void)state;
    tg_buf s = zstded(body, strlen(body));
    tg_buf gs = deflated(s.data, s.len, 31);
    expect_body("zstd, gzip", &gs);
    tg_buf out = {0};
    assert_int_equal(tg_decode_body("gzip, zstd", gs.data, gs.len, 1 << 20, &out), TG_DECODE_CORRUPT);
    tg_buf_free(&out);
    tg_buf_free(&s);
    tg_buf_free(&gs);
}

static void test_refused(void **state)
{
    (void)state;
    tg_buf g = deflated(body, strlen(body), 31), s = zstded(body, strlen(body)), out = {0};
    assert_int_equal(tg_decode_body("br", g.data, g.len, 1 << 20, &out), TG_DECODE_UNKNOWN);
    assert_int_equal(tg_decode_body("zstd", g.data, g.len, 1 << 20, &out), TG_DECODE_CORRUPT);
    assert_int_equal(tg_decode_body("gzip", s.data, s.len, 1 << 20, &out), TG_DECODE_CORRUPT);
    assert_int_equal(tg_decode_body("gzip", g.data, g.len - 6, 1 << 20, &out), TG_DECODE_CORRUPT);
    assert_int_equal(tg_decode_body("zstd", s.data, s.len - 3, 1 << 20, &out), TG_DECODE_CORRUPT);
    assert_int_equal(tg_decode_body("deflate", body, strlen(body), 1 << 20, &out), TG_DECODE_CORRUPT);
    tg_buf_free(&out);
    tg_buf_free(&g);
    tg_buf_free(&s);
}

/* 64 MB of zeros is a few KB compressed: stopped at the bound, each way. */
static void test_bomb(void **state)
{
    (void)state;
    size_t n = 64u << 20;
    char *zeros = calloc(1, n);
    tg_buf g = deflated(zeros, n, 31), s = zstded(zeros, n), out = {0};
    free(zeros);
    assert_true(g.len < (1u << 20) && s.len < (1u << 20));
    assert_int_equal(tg_decode_body("gzip", g.data, g.len, 1u << 20, &out), TG_DECODE_TOO_LARGE);
    assert_true(out.len <= (1u << 20) + (64u << 10));
    tg_buf_free(&out);
    assert_int_equal(tg_decode_body("zstd", s.data, s.len, 1u << 20, &out), TG_DECODE_TOO_LARGE);
    assert_true(out.len <= (1u << 20) + (64u << 10));
    tg_buf_free(&out);
    tg_buf_free(&g);
    tg_buf_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_coding),
        cmocka_unit_test(test_chained),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_bomb),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
