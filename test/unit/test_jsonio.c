/* test_jsonio.c -- the fast JSON reader and writer against jansson, the
 * oracle. Vectors in test/vectors/json: "ok-*" must be read by the fast
 * reader itself, "bad-*" must be refused by both, "any-*" may go either way
 * but never disagree, "wide-*" (integers past int64) must be read by the
 * fast reader as the doubles jansson's JSON_DECODE_INT_AS_REAL gives. Then
 * the whole corpus (every tool file and request body) must read to a value
 * equal to jansson's and write back to the very bytes
 * json_dumps(JSON_COMPACT) writes -- except reals, which must be written as
 * the shortest text that reads back as the same double. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"
#include "core/tg.h"

static const char *shared_dir(void)
{
    const char *s = getenv("TG_SHARED");
    return s && *s ? s : "../shared";
}

static bool has_real(const json_t *v)
{
    if (json_is_real(v))
        return true;
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_object(v))
        json_object_foreach((json_t *)v, k, x) if (has_real(x))
            return true;
    if (json_is_array(v))
        json_array_foreach(v, i, x) if (has_real(x))
            return true;
    return false;
}

/* Numbers equal as doubles, whatever their type: the fast reader's wide
 * integers against jansson's JSON_DECODE_INT_AS_REAL. */
static bool same_value(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    if (json_typeof(a) != json_typeof(b))
        return false;
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b))
            return false;
        json_object_foreach((json_t *)a, k, x) if (!same_value(x, json_object_get(b, k)))
            return false;
        return true;
    }
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        json_array_foreach(a, i, x) if (!same_value(x, json_array_get(b, i)))
            return false;
        return true;
    }
    return json_equal(a, b);
}

/* Significant digits of a written number: sign, point, exponent and
 * leading and trailing zeros aside. */
static int sig_digits(const char *t)
{
    char m[400];
    size_t n = 0;
    for (; *t && *t != 'e' && n < sizeof m - 1; t++)
        if (*t >= '0' && *t <= '9')
            m[n++] = *t;
    size_t a = 0;
    while (a < n && m[a] == '0')
        a++;
    while (n > a && m[n - 1] == '0')
        n--;
    return (int)(n - a);
}

/* Every real is written with no more significant digits than the fewest
 * that read back as its double, and reads back as it. */
static void check_reals_shortest(const json_t *v, const char *what)
{
    if (json_is_real(v)) {
        double d = json_real_value(v);
        tg_buf out = {0};
        assert_int_equal(tg_json_dump(v, &out), 0);
        assert_true(strtod(out.data, NULL) == d);
        char t[400];
        int fewest = 17;
        for (int p = 1; p <= 17; p++) {
            snprintf(t, sizeof t, "%.*g", p, d);
            if (strtod(t, NULL) == d) {
                fewest = p;
                break;
            }
        }
        if (sig_digits(out.data) > (fewest > 1 ? fewest : 1)) {
            print_error("%s: %s is not the shortest text for %.17g (%d digits do)\n", what,
                        out.data, d, fewest);
            fail();
        }
        tg_buf_free(&out);
        return;
    }
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_object(v))
        json_object_foreach((json_t *)v, k, x) check_reals_shortest(x, what);
    if (json_is_array(v))
        json_array_foreach(v, i, x) check_reals_shortest(x, what);
}

/* The fast writer must write what jansson writes, reals aside; with reals,
 * what it writes must read back (by jansson) as an equal value. */
static void check_dump(const json_t *v, const char *what)
{
    tg_buf out = {0};
    assert_int_equal(tg_json_dump(v, &out), 0);
    if (has_real(v)) {
        json_t *back = json_loadb(out.data, out.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        if (!back || !json_equal(back, v)) {
            print_error("%s: written reals do not read back\ngot  %.200s\n", what, out.data);
            fail();
        }
        json_decref(back);
        check_reals_shortest(v, what);
        tg_buf_free(&out);
        return;
    }
    char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_non_null(want);
    if (strlen(want) != out.len || memcmp(want, out.data, out.len)) {
        print_error("%s: writer differs\nwant %.200s\ngot  %.200s\n", what, want, out.data);
        fail();
    }
    free(want);
    tg_buf_free(&out);
}

/* Reads s both ways under flags; returns whether the fast reader took it.
 * What jansson refuses the fast reader may take only when jansson refuses
 * it for an integer out of range, and then as the doubles jansson gives
 * with JSON_DECODE_INT_AS_REAL. */
static int check_read(const char *s, size_t n, size_t flags, const char *what)
{
    json_t *fast = tg_json_parse(s, n, flags);
    json_error_t je;
    json_t *slow = json_loadb(s, n, flags, &je);
    if (fast && !slow) {
        json_t *wide = (strstr(je.text, "too big integer") || strstr(je.text, "too big negative integer"))
                           ? json_loadb(s, n, flags | JSON_DECODE_INT_AS_REAL, NULL)
                           : NULL;
        if (!wide || !same_value(fast, wide)) {
            print_error("%s (flags %zu): fast reader accepted what jansson refuses (%s)\n", what,
                        flags, je.text);
            fail();
        }
        json_decref(wide);
    } else if (fast && !json_equal(fast, slow)) {
        print_error("%s (flags %zu): values differ\n", what, flags);
        fail();
    }
    if (fast)
        check_dump(fast, what);
    int took = fast != NULL;
    json_decref(fast);
    json_decref(slow);
    return took;
}

/* Calls fn on every *.json file in dir; returns how many. */
static int each_json(const char *dir, void (*fn)(const char *name, const char *s, size_t n))
{
    DIR *d = opendir(dir);
    if (!d) {
        print_error("no directory %s (corpus: set TG_SHARED)\n", dir);
        fail();
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".json"))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        tg_buf b = {0};
        assert_int_equal(tg_buf_read_file(&b, path), 0);
        fn(e->d_name, b.data ? b.data : "", b.len);
        tg_buf_free(&b);
        n++;
    }
    closedir(d);
    return n;
}

static void check_vector(const char *name, const char *s, size_t n)
{
    int took = check_read(s, n, 0, name);
    check_read(s, n, JSON_REJECT_DUPLICATES, name);
    if ((!strncmp(name, "ok-", 3) || !strncmp(name, "wide-", 5)) && !took) {
        print_error("%s: the fast reader declined a plain document\n", name);
        fail();
    }
    if (!strncmp(name, "bad-", 4) || !strncmp(name, "wide-", 5)) {
        json_t *j = json_loadb(s, n, 0, NULL);
        if (j || (took && name[0] == 'b')) {
            print_error("%s: a bad vector was accepted (or jansson reads a wide one)\n", name);
            fail();
        }
    }
}

static void test_vectors(void **state)
{
    (void)state;
    assert_true(each_json("test/vectors/json", check_vector) >= 40);
}

static void check_corpus_file(const char *name, const char *s, size_t n)
{
    if (!check_read(s, n, JSON_REJECT_DUPLICATES, name)) {
        print_error("%s: the fast reader declined a corpus file\n", name);
        fail();
    }
}

static void test_corpus(void **state)
{
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/corpus/tools", shared_dir());
    int n = each_json(dir, check_corpus_file);
    snprintf(dir, sizeof dir, "%s/corpus/requests", shared_dir());
    n += each_json(dir, check_corpus_file);
    assert_true(n >= 47);
}

/* Values no parse produces: built by hand, written both ways (reals:
 * test_real_text). */
static void test_writer_edges(void **state)
{
    (void)state;
    json_t *v = json_pack("{s:s, s:I, s:[], s:{}, s:b, s:n}", "ctl", "\x01\x1f\"\\/\b\f\n\r\t",
                          "i", (json_int_t)-42, "a", "o", "t", 1, "z");
    assert_non_null(v);
    json_object_set_new(v, "nul", json_stringn("a\0b", 3));
    json_object_setn_new(v, "k\0ey", 4, json_integer(1));
    /* integers are written by hand: the ends of the range and zero */
    json_object_set_new(v, "min", json_integer(INT64_MIN));
    json_object_set_new(v, "max", json_integer(INT64_MAX));
    json_object_set_new(v, "zero", json_integer(0));
    char ascii[130];  /* every ASCII byte (the writer's escape table), then UTF-8 */
    for (int c = 0; c < 128; c++)
        ascii[c] = (char)c;
    memcpy(ascii + 128, "\xc3\xa9", 2);
    json_object_set_new(v, "ascii", json_stringn(ascii, sizeof ascii));
    check_dump(v, "edges");
    json_decref(v);
}

/* Reals leave as they came: the shortest text for the double, ".0" kept
 * on an integral real, the exponent without "+" or leading zeros. */
static void test_real_text(void **state)
{
    (void)state;
    static const struct {
        double d;
        const char *text;
    } cases[] = {
        {0.1, "0.1"},     {0.95, "0.95"},     {1.0, "1.0"},        {-2.0, "-2.0"},
        {1e300, "1e300"}, {2.5e-7, "2.5e-7"}, {1e21, "1e21"},      {0.30000000000000004, "0.30000000000000004"},
        {100.0, "100.0"}, {-0.0, "-0.0"},     {5e-324, "5e-324"}, {2.2250738585072014e-308, "2.2250738585072014e-308"},
        {18446744073709551615.0, "1.8446744073709552e19"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *v = json_real(cases[i].d);
        tg_buf out = {0};
        assert_int_equal(tg_json_dump(v, &out), 0);
        assert_string_equal(out.data, cases[i].text);
        char *s = tg_json_dumps(v);
        assert_string_equal(s, cases[i].text);
        free(s);
        tg_buf_free(&out);
        json_decref(v);
    }
    /* big integers are read, and written as the nearest double */
    const char *wide = "{\"max\":18446744073709551615,\"min\":-9223372036854775809,\"ok\":9223372036854775807}";
    json_t *v = tg_json_parse(wide, strlen(wide), 0);
    assert_non_null(v);
    char *s = tg_json_dumps(v);
    assert_string_equal(s, "{\"max\":1.8446744073709552e19,\"min\":-9.223372036854776e18,\"ok\":9223372036854775807}");
    free(s);
    json_decref(v);
}

/* The reader's own depth limit counts levels as tg_json_depth_exceeds
 * does, so the request path can skip its separate scan. */
static void test_depth_limit(void **state)
{
    (void)state;
    const char *s = "{\"a\":[[1],{\"b\":[]}]}";  /* 4 levels */
    json_t *v = tg_json_parse_depth(s, strlen(s), 0, 4);
    assert_non_null(v);
    json_decref(v);
    assert_null(tg_json_parse_depth(s, strlen(s), 0, 3));
    assert_false(tg_json_depth_exceeds(s, strlen(s), 4));
    assert_true(tg_json_depth_exceeds(s, strlen(s), 3));
}

/* \u escapes: pairs joined, lone halves and \u0000 refused. */
static void test_u_escape(void **state)
{
    (void)state;
    unsigned long cp;
    assert_int_equal(tg_json_u_escape("00e9", "00e9" + 4, &cp), 4);
    assert_int_equal(cp, 0xe9);
    const char *pair = "d83d\\ude00";
    assert_int_equal(tg_json_u_escape(pair, pair + strlen(pair), &cp), 10);
    assert_int_equal(cp, 0x1f600);
    const char *bad[] = {"d83d", "de00", "0000", "12g4", "12", "d83d\\u0041"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(tg_json_u_escape(bad[i], bad[i] + strlen(bad[i]), &cp), -1);
}

/* Bytes that are not UTF-8 become U+FFFD one by one; valid text, including
 * 4-byte sequences, is copied as it is. */
static void test_valid_utf8(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
        size_t bad;
    } cases[] = {
        {"caf\xc3\xa9 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xf0\x9f\x98\x80", 0},
        {"Z\xfcrich", "Z\xef\xbf\xbdrich", 1},                   /* Latin-1 */
        {"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd", 2},             /* overlong */
        {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 3}, /* surrogate */
        {"ab\xe2\x82", "ab\xef\xbf\xbd\xef\xbf\xbd", 2},         /* cut */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tg_buf b = {0};
        assert_int_equal(tg_buf_put_valid_utf8(&b, cases[i].in, strlen(cases[i].in)), cases[i].bad);
        assert_int_equal(b.len, strlen(cases[i].out));
        assert_memory_equal(b.data, cases[i].out, b.len);
        tg_buf_free(&b);
    }
}

/* tg_json_pick gives what json_object_get gives, name by name: absent
 * names, a key that holds a NUL after a name's bytes, a key that is a
 * name's prefix, a non-object. */
static void test_pick(void **state)
{
    (void)state;
    json_t *o = json_object();
    json_object_set_new(o, "model", json_string("m"));
    json_object_setn_new(o, "n\0x", 3, json_integer(1));
    json_object_set_new(o, "to", json_true());
    json_object_set_new(o, "tools", json_array());
    json_object_set_new(o, "top_p", json_real(0.5));
    static const char *const names[] = {"model", "n", "tool", "tools", "top_p", "stop", "", NULL};
    json_t *out[7];
    tg_json_pick(o, names, out);
    for (int i = 0; names[i]; i++)
        assert_ptr_equal(out[i], json_object_get(o, names[i]));
    assert_null(out[1]);
    assert_non_null(out[3]);
    json_t *a = json_array();
    tg_json_pick(a, names, out);
    for (int i = 0; names[i]; i++)
        assert_null(out[i]);
    json_decref(a);
    json_decref(o);
}

/* The reader's word-at-a-time scan of strings (plain_run) against
 * jansson: each byte that needs care (a quote or backslash escaped, a raw
 * control byte, UTF-8, DEL, a cut sequence) at every place of strings of
 * 0 to 24 bytes, so every case lands in a word, across two, and in the
 * bytewise tail. */
static void test_string_scan(void **state)
{
    (void)state;
    static const char *const odd[] = {"\\\"", "\\\\", "\x1f", "\t", "\xc3\xa9", "\x7f",
                                      "\xc3", "\\u00e9", " ", "\xe2\x82\xac"};
    unsigned checked = 0;
    for (size_t len = 0; len <= 24; len++)
        for (size_t at = 0; at <= len; at++)
            for (size_t o = 0; o < sizeof odd / sizeof *odd; o++) {
                char doc[96];
                size_t n = 0;
                doc[n++] = '[';
                doc[n++] = '"';
                for (size_t i = 0; i < len; i++) {
                    if (i == at)
                        for (const char *c = odd[o]; *c; c++)
                            doc[n++] = *c;
                    doc[n++] = (char)('a' + i % 26);
                }
                if (at == len)
                    for (const char *c = odd[o]; *c; c++)
                        doc[n++] = *c;
                doc[n++] = '"';
                doc[n++] = ']';
                json_t *mine = tg_json_parse(doc, n, 0);
                json_t *theirs = json_loadb(doc, n, 0, NULL);
                if (!(mine ? theirs && json_equal(mine, theirs) : !theirs))
                    fail_msg("string scan differs from jansson on %.*s", (int)n, doc);
                json_decref(mine);
                json_decref(theirs);
                checked++;
            }
    assert_true(checked > 2000);
}

/* tg_json_get gives what json_object_get gives: on objects below and
 * above TG_GET_SCAN keys (the scan and the hash), absent keys, a key that
 * holds a NUL after a name's bytes, a key that is a name's prefix, the
 * empty key, a non-object and NULL. */
static void test_get(void **state)
{
    (void)state;
    static const char *const fill[] = {"a1", "a2", "a3", "a4", "a5", "a6"};
    for (int extra = 0; extra <= 6; extra++) {
        json_t *o = json_object();
        json_object_setn_new(o, "n\0x", 3, json_integer(1));
        json_object_set_new(o, "to", json_true());
        for (int i = 0; i < extra; i++)
            json_object_set_new(o, fill[i], json_integer(i));
        json_object_set_new(o, "", json_false());
        json_object_set_new(o, "tools", json_array());
        assert_ptr_equal(tg_json_get(o, "n"), json_object_get(o, "n"));
        assert_null(tg_json_get(o, "n"));
        assert_ptr_equal(tg_json_get(o, "n\0x"), json_object_getn(o, "n\0x", 3));
        assert_non_null(tg_json_get(o, "n\0x"));
        assert_ptr_equal(tg_json_get(o, "to"), json_object_get(o, "to"));
        assert_ptr_equal(tg_json_get(o, "tool"), NULL);
        assert_ptr_equal(tg_json_get(o, "tools"), json_object_get(o, "tools"));
        assert_ptr_equal(tg_json_get(o, ""), json_object_get(o, ""));
        assert_ptr_equal(tg_json_get(o, "a6"), json_object_get(o, "a6"));
        assert_ptr_equal(tg_json_get(o, "a1"), json_object_get(o, "a1"));
        json_decref(o);
    }
    json_t *a = json_array();
    assert_null(tg_json_get(a, "to"));
    assert_null(tg_json_get(NULL, "to"));
    json_decref(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get),
        cmocka_unit_test(test_string_scan),
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_writer_edges),
        cmocka_unit_test(test_real_text),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_u_escape),
        cmocka_unit_test(test_valid_utf8),
        cmocka_unit_test(test_pick),
    };
    return cmocka_run_group_tests_name("jsonio", tests, NULL, NULL);
}
