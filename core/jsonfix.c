/* jsonfix.c -- bounded, conservative repair of almost-JSON tool arguments.
 *
 * Models write arguments that are nearly JSON: single-quoted strings,
 * trailing commas, Python's True/False/None, bare keys, a ```json fence, or
 * text cut off by max_tokens. This is a small recursive-descent reader that
 * accepts exactly those deviations and builds the jansson value directly.
 * It is conservative: anything else (missing commas, garbage after the
 * value, NaN, invalid UTF-8) fails rather than guess. Bounded: input size
 * and nesting depth are capped, and every step consumes input, so the work
 * is linear in the input.
 */
#include "core/jsonfix.h"

#include <stdbool.h>

#include "core/jsonio.h"
#include "core/tg.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FIX_MAX_BYTES (4u << 20)
#define FIX_MAX_DEPTH 64

typedef struct rd {
    const char *p, *end;
    int depth;
    bool eof;  /* input ended inside a value: the caller may drop the member */
} rd;

static json_t *read_value(rd *r);

static void skip_ws(rd *r)
{
    while (r->p < r->end && isspace((unsigned char)*r->p))
        r->p++;
}

/* A string in ' or " quotes. Unknown escapes keep the character; a string
 * cut off by the end of input is closed. */
static json_t *read_string(rd *r)
{
    char q = *r->p++;
    tg_buf b = {0};
    json_t *out = NULL;
    for (;;) {
        if (r->p >= r->end) {
            r->eof = true;
            break;
        }
        char c = *r->p++;
        if (c == q)
            break;
        if (c != '\\') {
            tg_buf_append(&b, &c, 1);
            continue;
        }
        if (r->p >= r->end) {
            r->eof = true;
            break;
        }
        c = *r->p++;
        switch (c) {
        case 'n': tg_buf_append(&b, "\n", 1); break;
        case 't': tg_buf_append(&b, "\t", 1); break;
        case 'r': tg_buf_append(&b, "\r", 1); break;
        case 'b': tg_buf_append(&b, "\b", 1); break;
        case 'f': tg_buf_append(&b, "\f", 1); break;
        case 'u': {
            unsigned long cp;
            int k = tg_json_u_escape(r->p, r->end, &cp);
            if (k < 0)
                goto fail;
            r->p += k;
            tg_buf_put_utf8(&b, cp);
            break;
        }
        default: tg_buf_append(&b, &c, 1); break;
        }
    }
    out = json_stringn(b.data ? b.data : "", b.len);  /* NULL on invalid UTF-8 */
fail:
    tg_buf_free(&b);
    return out;
}

static json_t *read_number(rd *r)
{
    const char *s = r->p;
    bool real = false;
    if (r->p < r->end && (*r->p == '-' || *r->p == '+'))
        r->p++;
    while (r->p < r->end && (isdigit((unsigned char)*r->p) || (*r->p && strchr(".eE+-", *r->p)))) {
        if (!isdigit((unsigned char)*r->p))
            real = true;
        r->p++;
    }
    size_t n = (size_t)(r->p - s);
    if (n == 0 || n > 64)
        return NULL;
    char tmp[72];
    memcpy(tmp, s, n);
    tmp[n] = 0;
    char *e;
    errno = 0;
    if (!real) {
        long long v = strtoll(tmp, &e, 10);
        if (*e == 0 && e != tmp && errno == 0)
            return json_integer(v);
    }
    double d = strtod(tmp, &e);
    if (e == tmp || d != d)
        return NULL;
    if (*e) {  /* "1." or "1e" cut off at the end: keep what parses */
        if (r->p < r->end)
            return NULL;
        r->eof = true;
    }
    return json_real(d);
}

static bool word(rd *r, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n) != 0)
        return false;
    if ((size_t)(r->end - r->p) > n && (isalnum((unsigned char)r->p[n]) || r->p[n] == '_'))
        return false;
    r->p += n;
    return true;
}

static json_t *read_literal(rd *r)
{
    if (word(r, "true") || word(r, "True"))
        return json_true();
    if (word(r, "false") || word(r, "False"))
        return json_false();
    if (word(r, "null") || word(r, "None"))
        return json_null();
    /* A literal cut off at the end ("tru"): nothing to keep. */
    const char *s = r->p;
    while (r->p < r->end && isalpha((unsigned char)*r->p))
        r->p++;
    if (r->p == r->end && r->p > s) {
        static const char *const lits[] = {"true", "false", "null", "True", "False", "None"};
        for (size_t i = 0; i < sizeof lits / sizeof *lits; i++)
            if (!strncmp(lits[i], s, (size_t)(r->p - s)))
                r->eof = true;
    }
    return NULL;
}

/* A key: quoted, or a bare identifier. A quoted key that lost its closing
 * quote, {"selected: ["A"]} (deepseek-ai/DeepSeek-V3#1069), reads as a
 * string that ends at the next quote and is not followed by ':'; when it
 * starts with an identifier and a ':', that identifier is the key. */
static json_t *read_key(rd *r)
{
    if (*r->p == '"' || *r->p == '\'') {
        const char *open = r->p;
        json_t *k = read_string(r);
        const char *after = r->p;
        while (after < r->end && isspace((unsigned char)*after))
            after++;
        if (k && !r->eof && after < r->end && *after != ':') {
            const char *c = open + 1;
            while (c < r->end && (isalnum((unsigned char)*c) || *c == '_' || *c == '-'))
                c++;
            if (c > open + 1 && c < r->end && *c == ':') {
                json_decref(k);
                r->p = c;
                return json_stringn(open + 1, (size_t)(c - open - 1));
            }
        }
        return k;
    }
    const char *s = r->p;
    while (r->p < r->end && (isalnum((unsigned char)*r->p) || *r->p == '_'))
        r->p++;
    if (r->p == s)
        return NULL;
    if (r->p == r->end)
        r->eof = true;
    return json_stringn(s, (size_t)(r->p - s));
}

static json_t *read_object(rd *r)
{
    json_t *o = json_object();
    r->p++;
    for (;;) {
        skip_ws(r);
        if (r->p >= r->end) {
            r->eof = true;
            return o;
        }
        if (*r->p == '}') {
            r->p++;
            return o;
        }
        if (*r->p == ',') {  /* trailing or doubled comma */
            r->p++;
            continue;
        }
        json_t *k = read_key(r);
        if (!k)
            break;
        if (r->eof) {  /* "{"ke  -> drop the key */
            json_decref(k);
            return o;
        }
        skip_ws(r);
        if (r->p >= r->end) {
            json_decref(k);
            r->eof = true;
            return o;
        }
        if (*r->p != ':') {
            json_decref(k);
            break;
        }
        r->p++;
        skip_ws(r);
        if (r->p >= r->end) {
            json_decref(k);
            r->eof = true;
            return o;
        }
        json_t *v = read_value(r);
        if (!v) {
            json_decref(k);
            if (r->eof)
                return o;
            break;
        }
        json_object_set_new(o, json_string_value(k), v);
        json_decref(k);
        if (r->eof)
            return o;
        skip_ws(r);
        if (r->p >= r->end) {
            r->eof = true;
            return o;
        }
        if (*r->p == ',')
            r->p++;
        else if (*r->p != '}')
            break;  /* missing comma: too much guessing */
    }
    json_decref(o);
    return NULL;
}

static json_t *read_array(rd *r)
{
    json_t *a = json_array();
    r->p++;
    for (;;) {
        skip_ws(r);
        if (r->p >= r->end) {
            r->eof = true;
            return a;
        }
        if (*r->p == ']') {
            r->p++;
            return a;
        }
        if (*r->p == ',') {
            r->p++;
            continue;
        }
        json_t *v = read_value(r);
        if (!v) {
            if (r->eof)
                return a;
            break;
        }
        json_array_append_new(a, v);
        if (r->eof)
            return a;
        skip_ws(r);
        if (r->p >= r->end) {
            r->eof = true;
            return a;
        }
        if (*r->p == ',')
            r->p++;
        else if (*r->p != ']')
            break;
    }
    json_decref(a);
    return NULL;
}

static json_t *read_value(rd *r)
{
    skip_ws(r);
    if (r->p >= r->end) {
        r->eof = true;
        return NULL;
    }
    if (++r->depth > FIX_MAX_DEPTH)
        return NULL;
    json_t *v;
    char c = *r->p;
    if (c == '{')
        v = read_object(r);
    else if (c == '[')
        v = read_array(r);
    else if (c == '"' || c == '\'')
        v = read_string(r);
    else if (c == '-' || c == '+' || isdigit((unsigned char)c))
        v = read_number(r);
    else
        v = read_literal(r);
    r->depth--;
    return v;
}

/* ```json ... ``` around the value. */
static void strip_fence(const char **s, const char **end)
{
    const char *p = *s, *e = *end;
    while (p < e && isspace((unsigned char)*p))
        p++;
    while (e > p && isspace((unsigned char)e[-1]))
        e--;
    if (e - p >= 3 && !memcmp(p, "```", 3)) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        if (!nl)
            return;
        p = nl + 1;
        if (e - p >= 3 && !memcmp(e - 3, "```", 3))
            e -= 3;
    }
    *s = p;
    *end = e;
}

json_t *tg_json_fix(const char *s, size_t n)
{
    if (!s || n == 0 || n > FIX_MAX_BYTES)
        return NULL;
    rd r = {.p = s, .end = s + n};
    strip_fence(&r.p, &r.end);
    skip_ws(&r);
    if (r.p >= r.end)
        return NULL;
    json_t *v = read_value(&r);
    if (!v)
        return NULL;
    skip_ws(&r);
    if (r.p < r.end) {  /* garbage after the value */
        json_decref(v);
        return NULL;
    }
    return v;
}

json_t *tg_json_split_objects(const char *s, size_t n)
{
    json_t *out = json_array();
    size_t i = 0;
    while (i < n) {
        while (i < n && isspace((unsigned char)s[i]))
            i++;
        if (i == n)
            break;
        if (s[i] != '{')
            goto fail;
        size_t start = i;
        const char *end = tg_json_value_end(s + i, s + n);
        if (!end)
            goto fail;
        i = (size_t)(end - s);
        json_t *o = tg_json_load(s + start, i - start, 0, NULL);
        if (!json_is_object(o)) {
            json_decref(o);
            goto fail;
        }
        json_array_append_new(out, o);
    }
    if (json_array_size(out) >= 2)
        return out;
fail:
    json_decref(out);
    return NULL;
}

json_t *tg_json_leading_object(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && isspace((unsigned char)s[i]))
        i++;
    if (i >= n || s[i] != '{')
        return NULL;
    const char *end = tg_json_value_end(s + i, s + n);
    if (!end || memchr(end, '{', (size_t)(s + n - end)))
        return NULL;
    json_t *o = tg_json_load(s + i, (size_t)(end - (s + i)), 0, NULL);
    if (json_is_object(o))
        return o;
    json_decref(o);
    return NULL;
}
