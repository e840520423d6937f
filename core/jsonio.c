/* jsonio.c -- the fast JSON reader and writer (see jsonio.h).
 *
 * The reader is a recursive descent over the whole buffer. Strings are the
 * bulk of agent JSON (descriptions), so a string is scanned for its end and
 * for bytes that need care in one tight loop, and one without escapes is
 * handed to jansson straight from the input. Every rule jansson enforces is
 * enforced here too; where enforcing it would take a second implementation
 * of something subtle (number overflow rules, \u0000), the reader declines
 * and jansson decides.
 */
#include "core/jsonio.h"
#include "core/alloc.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 2000  /* under jansson's JSON_PARSER_MAX_DEPTH */

typedef struct {
    const char *p, *end;
    size_t flags;
    int depth, max_depth;
    tg_buf scratch;  /* decoded strings with escapes */
} reader;

static json_t *read_value(reader *r);

static void skip_ws(reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
        r->p++;
}

static int hex4(const char *p, unsigned long *out)
{
    unsigned long v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned long)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned long)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned long)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

int tg_json_u_escape(const char *p, const char *end, unsigned long *cp)
{
    unsigned long hi, lo;
    if (end - p < 4 || hex4(p, &hi) || hi == 0 || (hi >= 0xDC00 && hi <= 0xDFFF))
        return -1;
    if (hi < 0xD800 || hi > 0xDBFF) {
        *cp = hi;
        return 4;
    }
    if (end - p < 10 || p[4] != '\\' || p[5] != 'u' || hex4(p + 6, &lo) || lo < 0xDC00 ||
        lo > 0xDFFF)
        return -1;
    *cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
    return 10;
}

/* One escape at p (just past the backslash) into b; p moves past it. */
static bool read_escape(reader *r, tg_buf *b)
{
    if (r->p >= r->end)
        return false;
    char c = *r->p++;
    const char *simple = strchr("\"\\/bfnrt", c);
    if (c && simple) {
        static const char out[] = "\"\\/\b\f\n\r\t";
        tg_buf_append(b, &out[simple - "\"\\/bfnrt"], 1);
        return true;
    }
    unsigned long cp;
    int k = c == 'u' ? tg_json_u_escape(r->p, r->end, &cp) : -1;
    if (k < 0)
        return false;
    r->p += k;
    tg_buf_put_utf8(b, cp);
    return true;
}

/* p past the bytes a string holds as they are (printable ASCII but '"'
 * and '\\'): eight at a time while eight remain, then one by one. A word
 * with any other byte is left to the bytewise loop, which stops at it.
 * Strings are the bulk of agent JSON: a byte at a time took six
 * instructions a byte. */
static const unsigned char *plain_run(const unsigned char *p, const unsigned char *end)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    while (end - p >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
        /* each term's high bits are nonzero exactly when some byte is
         * below 0x20, at or above 0x80, a quote, a backslash */
        uint64_t odd = ((v - ones * 0x20) & ~v) | v | ((q - ones) & ~q) | ((b - ones) & ~b);
        if (odd & highs)
            break;
        p += 8;
    }
    while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
        p++;
    return p;
}

/* r->p at the opening quote. On success *s, *n name the decoded bytes
 * (in the input when there was no escape, else in r->scratch). */
static bool read_string_bytes(reader *r, const char **s, size_t *n)
{
    const unsigned char *p = (const unsigned char *)r->p + 1;
    const unsigned char *end = (const unsigned char *)r->end;
    const unsigned char *start = p;
    for (;;) {
        p = plain_run(p, end);
        if (p >= end || *p < 0x20)
            return false;
        if (*p == '"') {
            *s = (const char *)start;
            *n = (size_t)(p - start);
            r->p = (const char *)p + 1;
            return true;
        }
        if (*p == '\\')
            break;
        size_t k = tg_utf8_len(p, end);
        if (!k)
            return false;
        p += k;
    }
    /* Escapes: decode from here on into scratch. */
    tg_buf *b = &r->scratch;
    b->len = 0;
    tg_buf_append(b, start, (size_t)(p - start));
    r->p = (const char *)p;
    for (;;) {
        const unsigned char *q = (const unsigned char *)r->p;
        const unsigned char *run = q;
        q = plain_run(q, end);
        tg_buf_append(b, run, (size_t)(q - run));
        r->p = (const char *)q;
        if (q >= end || *q < 0x20)
            return false;
        if (*q == '"') {
            r->p++;
            *s = b->data ? b->data : "";
            *n = b->len;
            return true;
        }
        if (*q == '\\') {
            r->p++;
            if (!read_escape(r, b))
                return false;
            continue;
        }
        size_t k = tg_utf8_len(q, end);
        if (!k)
            return false;
        tg_buf_append(b, q, k);
        r->p += k;
    }
}

/* An integer past the int64 range is kept as the nearest double, the way a
 * JavaScript or Python client reads it, rather than refusing the whole
 * document over one "maximum": 18446744073709551615. A real that overflows
 * a double is refused, as jansson and the providers' parsers refuse it. */
static json_t *number_value(const char *num, bool real)
{
    errno = 0;
    if (!real) {
        long long v = strtoll(num, NULL, 10);
        if (errno != ERANGE)
            return json_integer((json_int_t)v);
        errno = 0;
    }
    double d = strtod(num, NULL);
    if (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL))
        return NULL;
    return json_real(d);
}

static json_t *read_number(reader *r)
{
    const char *s = r->p, *p = s;
    bool real = false;
    if (p < r->end && *p == '-')
        p++;
    if (p >= r->end)
        return NULL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < r->end && *p >= '0' && *p <= '9')
            p++;
    } else {
        return NULL;
    }
    if (p < r->end && *p == '.') {
        real = true;
        p++;
        if (p >= r->end || *p < '0' || *p > '9')
            return NULL;
        while (p < r->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < r->end && (*p == 'e' || *p == 'E')) {
        real = true;
        p++;
        if (p < r->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= r->end || *p < '0' || *p > '9')
            return NULL;
        while (p < r->end && *p >= '0' && *p <= '9')
            p++;
    }
    size_t len = (size_t)(p - s);
    char small[64], *num = len < sizeof small ? small : tg_malloc(len + 1);
    memcpy(num, s, len);
    num[len] = '\0';
    r->p = p;
    json_t *v = number_value(num, real);
    if (num != small)
        free(num);
    return v;
}

static bool take_word(reader *r, const char *w, size_t n)
{
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n))
        return false;
    r->p += n;
    return true;
}

/* After a member of an array or object: 0 at its closing bracket (consumed),
 * 1 at a comma (consumed, another member follows), -1 on anything else. */
static int after_member(reader *r, char close)
{
    skip_ws(r);
    if (r->p >= r->end)
        return -1;
    char c = *r->p++;
    if (c == close)
        return 0;
    if (c != ',')
        return -1;
    skip_ws(r);
    return 1;
}

static json_t *read_array(reader *r)
{
    json_t *a = json_array();
    r->p++;
    skip_ws(r);
    if (r->p < r->end && *r->p == ']') {
        r->p++;
        return a;
    }
    for (;;) {
        json_t *v = read_value(r);
        if (!v)
            break;
        json_array_append_new(a, v);
        int next = after_member(r, ']');
        if (next == 0)
            return a;
        if (next < 0)
            break;
    }
    json_decref(a);
    return NULL;
}

static json_t *read_object(reader *r)
{
    json_t *o = json_object();
    r->p++;
    skip_ws(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        return o;
    }
    char small[128];
    for (;;) {
        const char *k;
        size_t kn;
        if (r->p >= r->end || *r->p != '"' || !read_string_bytes(r, &k, &kn))
            break;
        /* the next string may reuse the scratch buffer: keep the key */
        char *key = kn < sizeof small ? small : tg_malloc(kn + 1);
        memcpy(key, k, kn);
        key[kn] = '\0';
        skip_ws(r);
        json_t *v = NULL;
        if (r->p < r->end && *r->p == ':') {
            r->p++;
            skip_ws(r);
            v = read_value(r);
        }
        /* A duplicate is seen by the size not growing: a key set again
         * replaces its value, and the whole object is thrown away then, so
         * no look-up (a hash of the key) before each set. */
        size_t had = json_object_size(o);
        bool ok = v && !json_object_setn_new_nocheck(o, key, kn, v) &&
                  (!(r->flags & JSON_REJECT_DUPLICATES) || json_object_size(o) > had);
        if (key != small)
            free(key);
        if (!ok)
            break;
        int next = after_member(r, '}');
        if (next == 0)
            return o;
        if (next < 0)
            break;
    }
    json_decref(o);
    return NULL;
}

static json_t *read_value(reader *r)
{
    if (r->p >= r->end)
        return NULL;
    json_t *v = NULL;
    switch (*r->p) {
    case '{':
    case '[':
        if (++r->depth > r->max_depth)
            return NULL;
        v = *r->p == '{' ? read_object(r) : read_array(r);
        r->depth--;
        return v;
    case '"': {
        const char *s;
        size_t n;
        return read_string_bytes(r, &s, &n) ? json_stringn_nocheck(s, n) : NULL;
    }
    case 't':
        return take_word(r, "true", 4) ? json_true() : NULL;
    case 'f':
        return take_word(r, "false", 5) ? json_false() : NULL;
    case 'n':
        return take_word(r, "null", 4) ? json_null() : NULL;
    default:
        return read_number(r);
    }
}

json_t *tg_json_parse(const char *s, size_t n, size_t flags)
{
    return tg_json_parse_depth(s, n, flags, MAX_DEPTH);
}

json_t *tg_json_parse_depth(const char *s, size_t n, size_t flags, int max_depth)
{
    reader r = {.p = s, .end = s + n, .flags = flags};
    r.max_depth = max_depth > 0 && max_depth < MAX_DEPTH ? max_depth : MAX_DEPTH;
    skip_ws(&r);
    json_t *v = NULL;
    if (r.p < r.end && (*r.p == '{' || *r.p == '[' || (flags & JSON_DECODE_ANY)))
        v = read_value(&r);
    skip_ws(&r);
    if (v && r.p != r.end) {
        json_decref(v);
        v = NULL;
    }
    tg_buf_free(&r.scratch);
    return v;
}

json_t *tg_json_load_answer(const char *s, size_t n)
{
    json_t *v = tg_json_load(s, n, JSON_ALLOW_NUL, NULL);
    if (v)
        return v;
    tg_buf fixed = {0};
    if (tg_buf_put_valid_utf8(&fixed, s, n))
        v = tg_json_load(fixed.data, fixed.len, JSON_ALLOW_NUL, NULL);
    tg_buf_free(&fixed);
    return v;
}

json_t *tg_json_load(const char *s, size_t n, size_t flags, json_error_t *err)
{
    json_t *v = tg_json_parse(s, n, flags);
    return v ? v : json_loadb(s, n, flags, err);
}

/* ---- the writer ------------------------------------------------------------ */

/* How a byte is written in a JSON string: 0 as it is, else the letter
 * after its backslash ('u': \u00XX, the controls without a short form). */
#define U_ 'u'
static const char escape_as[256] = {
    U_, U_, U_, U_, U_, U_, U_, U_, 'b', 't', 'n', U_, 'f', 'r', U_, U_,
    U_, U_, U_, U_, U_, U_, U_, U_, U_, U_, U_, U_, U_, U_, U_, U_,
    0, 0, '"', [92] = '\\',
};
#undef U_

/* A string with escapes (a call's arguments: every key's quotes) is sized
 * first, then written into the buffer directly: one reserve, no append a
 * run and an escape; a byte is classed by one table load. */
static void dump_string(const char *s, size_t n, tg_buf *out)
{
    static const char hex[] = "0123456789ABCDEF";
    tg_buf_reserve(out, n + 2);
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end && !escape_as[*p])
        p++;
    if (p == end) {  /* most keys and values: written at once */
        char *d = out->data + out->len;
        d[0] = '"';
        memcpy(d + 1, s, n);
        d[n + 1] = '"';
        d[n + 2] = '\0';
        out->len += n + 2;
        return;
    }
    size_t plain = (size_t)(p - (const unsigned char *)s), extra = 0;
    for (const unsigned char *q = p; q < end; q++) {
        char e = escape_as[*q];
        extra += e ? (e == 'u' ? 5 : 1) : 0;
    }
    tg_buf_reserve(out, n + extra + 2);
    char *d = out->data + out->len;
    *d++ = '"';
    memcpy(d, s, plain);
    d += plain;
    for (; p < end; p++) {
        unsigned char c = *p;
        char e = escape_as[c];
        if (!e) {
            *d++ = (char)c;
            continue;
        }
        *d++ = '\\';
        if (e != 'u') {
            *d++ = e;
            continue;
        }
        memcpy(d, "u00", 3);
        d[3] = hex[c >> 4];
        d[4] = hex[c & 15];
        d += 5;
    }
    *d++ = '"';
    *d = '\0';
    out->len = (size_t)(d - out->data);
}

void tg_json_dump_string(const char *s, size_t n, tg_buf *out)
{
    dump_string(s, n, out);
}

/* By hand: snprintf was a tenth of a stream chunk's writing. */
void tg_json_dump_int(json_int_t i, tg_buf *out)
{
    char num[24];
    unsigned long long u = i < 0 ? 0ull - (unsigned long long)i : (unsigned long long)i;
    char *d = num + sizeof num;
    do
        *--d = (char)('0' + u % 10);
    while (u /= 10);
    if (i < 0)
        *--d = '-';
    tg_buf_append(out, d, (size_t)(num + sizeof num - d));
}

/* The shortest text that reads back as the same double: a provider's 0.1
 * leaves as 0.1, not as the 0.10000000000000001 of jansson's %.17g. Like
 * jansson, it keeps a real looking real ("1.0") and writes the exponent
 * without "+" or leading zeros. -1 for inf and nan, which JSON cannot say. */
static int format_real(double d, char *buf, size_t size)
{
    if (!isfinite(d))
        return -1;
    /* 15 digits always read back exactly when fewer would (and %g drops
     * the zeros); a subnormal carries fewer digits, so search from 1. */
    int k = 0;
    for (int prec = fabs(d) < DBL_MIN ? 1 : 15; prec <= 17; prec++) {
        k = snprintf(buf, size, "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    char *e = strchr(buf, 'e');
    if (!e && !strchr(buf, '.'))
        return k + snprintf(buf + k, size - (size_t)k, ".0");
    if (e) {
        char *src = e + 1, *dst = e + 1;
        if (*src == '+')
            src++;
        else if (*src == '-')
            *dst++ = *src++;
        while (*src == '0' && src[1])
            src++;
        memmove(dst, src, strlen(src) + 1);
        k = (int)strlen(buf);
    }
    return k;
}

char *tg_json_dumps(const json_t *v)
{
    tg_buf b = {0};
    if (tg_json_dump(v, &b)) {
        tg_buf_free(&b);
        return NULL;
    }
    return tg_buf_steal(&b, NULL);
}

/* Whether name (NUL-terminated) is the key k of kl bytes (which may hold
 * a NUL): compared inline, the keys and names being a few bytes long. */
static bool key_is(const char *name, const char *k, size_t kl)
{
    for (size_t j = 0; j < kl; j++)
        if (name[j] != k[j] || !name[j])
            return false;
    return !name[kl];
}

void tg_json_pick(const json_t *obj, const char *const *names, json_t **out)
{
    size_t n = 0, left;
    while (names[n])
        out[n++] = NULL;
    left = json_is_object(obj) ? n : 0;
    for (void *it = json_object_iter((json_t *)obj); it && left;
         it = json_object_iter_next((json_t *)obj, it)) {
        const char *k = json_object_iter_key(it);
        size_t kl = json_object_iter_key_len(it);
        for (size_t i = 0; i < n; i++) {
            if (!out[i] && names[i][0] == k[0] && key_is(names[i], k, kl)) {
                out[i] = json_object_iter_value(it);
                left--;
                break;
            }
        }
    }
}

json_t *tg_json_getn(const json_t *obj, const char *key, size_t len)
{
    if (json_object_size(obj) > TG_GET_SCAN)  /* 0 for what is no object */
        return json_object_getn(obj, key, len);
    for (void *it = json_object_iter((json_t *)obj); it;
         it = json_object_iter_next((json_t *)obj, it)) {
        const char *k = json_object_iter_key(it);
        /* the length first: a key may hold a NUL */
        if (k[0] != key[0] || json_object_iter_key_len(it) != len)
            continue;
        size_t j = 1;
        while (j < len && k[j] == key[j])
            j++;
        if (j >= len)
            return json_object_iter_value(it);
    }
    return NULL;
}

int tg_json_dump(const json_t *v, tg_buf *out)
{
    char num[32];
    if (!v)
        return -1;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        tg_buf_append(out, "{", 1);
        bool first = true;
        for (void *it = json_object_iter((json_t *)v); it;
             it = json_object_iter_next((json_t *)v, it)) {
            if (!first)
                tg_buf_append(out, ",", 1);
            first = false;
            dump_string(json_object_iter_key(it), json_object_iter_key_len(it), out);
            tg_buf_append(out, ":", 1);
            if (tg_json_dump(json_object_iter_value(it), out))
                return -1;
        }
        tg_buf_append(out, "}", 1);
        return 0;
    }
    case JSON_ARRAY: {
        tg_buf_append(out, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                tg_buf_append(out, ",", 1);
            if (tg_json_dump(json_array_get(v, i), out))
                return -1;
        }
        tg_buf_append(out, "]", 1);
        return 0;
    }
    case JSON_STRING:
        dump_string(json_string_value(v), json_string_length(v), out);
        return 0;
    case JSON_INTEGER:
        tg_json_dump_int(json_integer_value(v), out);
        return 0;
    case JSON_REAL: {
        int k = format_real(json_real_value(v), num, sizeof num);
        if (k < 0)
            return -1;
        tg_buf_append(out, num, (size_t)k);
        return 0;
    }
    case JSON_TRUE:
        tg_buf_append(out, "true", 4);
        return 0;
    case JSON_FALSE:
        tg_buf_append(out, "false", 5);
        return 0;
    case JSON_NULL:
        tg_buf_append(out, "null", 4);
        return 0;
    }
    return -1;
}

const char *tg_json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    default: return "null";
    }
}

void tg_json_array_cut(json_t *arr, size_t n)
{
    while (json_array_size(arr) > n)
        json_array_remove(arr, json_array_size(arr) - 1);
}
