/* text_py.c -- tool calls written as Python, for R12's format table
 * (repair_text.c): the pythonic call list of Llama 3.2/4 and LFM2
 * ([get_weather(city="Paris"), get_time(tz="CET")], vLLM's pythonic and
 * llama4_pythonic parsers, vllm-project/vllm#22917, lmstudio-bug-tracker
 * #1979), and Gemma 4's call:NAME(k: v) / call:NAME{k:<|"|>v<|"|>}
 * (NousResearch/hermes-agent#7449, waybarrios/vllm-mlx#274).
 *
 * Arguments are Python literals read into JSON: strings in either quote
 * with their escapes (and Gemma's <|"|> quote token, raw), numbers,
 * True/False/None (and JSON's spellings), lists, tuples, dicts. Anything
 * else (a positional argument, a variable, an expression) makes the whole
 * text no call: prose that merely looks like a call stays text. Whether
 * the names are declared tools is the table's check (parse_block).
 * Nesting is bounded (PY_DEPTH_MAX), so hostile text cannot run the stack.
 */
#include "repair/text_py.h"

#include "core/buf.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define PY_DEPTH_MAX 64
#define PY_NAME_MAX 256
#define GQ "<|\"|>" /* Gemma 4's string quote token */
#define GQ_LEN 5

typedef struct {
    const char *p, *e;
} py_rd;

static void ws(py_rd *r)
{
    while (r->p < r->e && isspace((unsigned char)*r->p))
        r->p++;
}

static bool ident_char(char c, bool first)
{
    return isalpha((unsigned char)c) || c == '_' || (!first && (isdigit((unsigned char)c) || c == '-' || c == '.'));
}

/* An identifier (tool names also take '-' and '.'); its length, 0 none. */
static size_t ident(const char *p, const char *e)
{
    size_t n = 0;
    while (p + n < e && ident_char(p[n], n == 0))
        n++;
    return n;
}

static int hexval(char c)
{
    if (isdigit((unsigned char)c))
        return c - '0';
    c = (char)tolower((unsigned char)c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A quoted string, r->p at its quote ('"', '\'', or <|"|>). */
static json_t *py_string(py_rd *r)
{
    tg_buf b = {0};
    if ((size_t)(r->e - r->p) >= GQ_LEN && !memcmp(r->p, GQ, GQ_LEN)) {
        const char *s = r->p + GQ_LEN, *q = s;
        while (q + GQ_LEN <= r->e && memcmp(q, GQ, GQ_LEN))
            q++;
        if (q + GQ_LEN > r->e)
            return NULL;
        r->p = q + GQ_LEN;
        return json_stringn(s, (size_t)(q - s));
    }
    char quote = *r->p++;
    while (r->p < r->e && *r->p != quote) {
        char c = *r->p++;
        if (c != '\\') {
            tg_buf_append(&b, &c, 1);
            continue;
        }
        if (r->p >= r->e)
            break;
        char x = *r->p++;
        unsigned long cp = 0;
        int digits = x == 'x' ? 2 : x == 'u' ? 4 : x == 'U' ? 8 : 0;
        if (digits) {
            for (int i = 0; i < digits; i++) {
                int h = r->p < r->e ? hexval(*r->p) : -1;
                if (h < 0) {
                    tg_buf_free(&b);
                    return NULL;
                }
                cp = cp * 16 + (unsigned long)h;
                r->p++;
            }
            tg_buf_put_utf8(&b, cp);
            continue;
        }
        const char *from = "ntr0\\'\"", *to = "\n\t\r\0\\'\"";
        const char *f = memchr(from, x, 7);
        if (f) {
            tg_buf_append(&b, &to[f - from], 1);
        } else {  /* Python keeps an unknown escape as written */
            tg_buf_append(&b, "\\", 1);
            tg_buf_append(&b, &x, 1);
        }
    }
    if (r->p >= r->e) {
        tg_buf_free(&b);
        return NULL;
    }
    r->p++;
    json_t *s = json_stringn(b.len ? b.data : "", b.len);
    tg_buf_free(&b);
    return s;
}

static json_t *py_number(py_rd *r)
{
    const char *s = r->p;
    char tmp[64];
    size_t n = 0;
    while (s + n < r->e && n < sizeof tmp - 1 &&
           (isdigit((unsigned char)s[n]) || strchr("+-.eE_", s[n])))
        n++;
    size_t k = 0;
    bool real = false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '_')
            continue;  /* 1_000 */
        if (strchr(".eE", s[i]))
            real = true;
        tmp[k++] = s[i];
    }
    tmp[k] = 0;
    char *end;
    if (!real) {
        long long v = strtoll(tmp, &end, 10);
        if (end != tmp && !*end) {
            r->p += n;
            return json_integer(v);
        }
    }
    double d = strtod(tmp, &end);
    if (end == tmp || *end)
        return NULL;
    r->p += n;
    return json_real(d);
}

static json_t *py_value(py_rd *r, int depth);

/* Items up to `close`, comma separated (a trailing comma allowed); for a
 * dict, key: value pairs whose keys are strings or bare names (Gemma). */
static json_t *py_items(py_rd *r, char close, bool dict, int depth)
{
    json_t *out = dict ? json_object() : json_array();
    for (;;) {
        ws(r);
        if (r->p < r->e && *r->p == close) {
            r->p++;
            return out;
        }
        json_t *k = NULL;
        if (dict) {
            size_t n = ident(r->p, r->e);
            if (n && n < PY_NAME_MAX) {
                k = json_stringn(r->p, n);
                r->p += n;
            } else {
                k = py_value(r, depth + 1);
            }
            ws(r);
            if (!json_is_string(k) || r->p >= r->e || *r->p != ':') {
                json_decref(k);
                break;
            }
            r->p++;
        }
        json_t *v = py_value(r, depth + 1);
        if (!v) {
            json_decref(k);
            break;
        }
        if (dict)
            json_object_set_new(out, json_string_value(k), v);
        else
            json_array_append_new(out, v);
        json_decref(k);
        ws(r);
        if (r->p < r->e && *r->p == ',')
            r->p++;
        else if (r->p >= r->e || *r->p != close)
            break;
    }
    json_decref(out);
    return NULL;
}

static json_t *py_value(py_rd *r, int depth)
{
    ws(r);
    if (r->p >= r->e || depth > PY_DEPTH_MAX)
        return NULL;
    char c = *r->p;
    if (c == '"' || c == '\'' || ((size_t)(r->e - r->p) >= GQ_LEN && !memcmp(r->p, GQ, GQ_LEN)))
        return py_string(r);
    if (c == '[' || c == '(' || c == '{') {
        r->p++;
        return py_items(r, c == '[' ? ']' : c == '(' ? ')' : '}', c == '{', depth);
    }
    if (isdigit((unsigned char)c) || c == '-' || c == '+' || c == '.')
        return py_number(r);
    static const struct {
        const char *w;
        int type;
    } words[] = {{"True", JSON_TRUE}, {"False", JSON_FALSE}, {"None", JSON_NULL},
                 {"true", JSON_TRUE}, {"false", JSON_FALSE}, {"null", JSON_NULL}};
    size_t n = ident(r->p, r->e);
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (n == strlen(words[i].w) && !memcmp(r->p, words[i].w, n)) {
            r->p += n;
            return words[i].type == JSON_TRUE    ? json_true()
                   : words[i].type == JSON_FALSE ? json_false()
                                                 : json_null();
        }
    return NULL;  /* a variable, an expression: not a literal */
}

/* NAME( k=v, ... ) or, for Gemma, NAME(k: v) / NAME{k: v}: one call at
 * r->p appended to calls; 0 when it parsed. */
static int py_call(py_rd *r, json_t *calls, bool gemma)
{
    ws(r);
    size_t n = ident(r->p, r->e);
    if (!n || n > PY_NAME_MAX)
        return -1;
    const char *name = r->p;
    r->p += n;
    ws(r);
    char close = r->p < r->e && *r->p == '(' ? ')' : gemma && r->p < r->e && *r->p == '{' ? '}' : 0;
    if (!close)
        return -1;
    r->p++;
    json_t *args = json_object();
    for (;;) {
        ws(r);
        if (r->p < r->e && *r->p == close) {
            r->p++;
            break;
        }
        size_t kn = ident(r->p, r->e);
        const char *k = r->p;
        json_t *qk = NULL;
        if (!kn && r->p < r->e && (*r->p == '"' || *r->p == '\'')) {
            qk = py_string(r);  /* Gemma may quote a key */
            if (!qk) {
                json_decref(args);
                return -1;
            }
        }
        r->p += kn;
        ws(r);
        char sep = r->p < r->e ? *r->p : 0;
        if ((!kn && !qk) || kn >= PY_NAME_MAX || !(sep == '=' || (gemma && sep == ':'))) {
            json_decref(qk);
            json_decref(args);
            return -1;  /* a positional argument: no call */
        }
        r->p++;
        json_t *v = py_value(r, 1);
        if (!v) {
            json_decref(qk);
            json_decref(args);
            return -1;
        }
        if (qk) {
            json_object_set_new(args, json_string_value(qk), v);
            json_decref(qk);
        } else {
            char key[PY_NAME_MAX];
            memcpy(key, k, kn);
            key[kn] = 0;
            json_object_set_new(args, key, v);
        }
        ws(r);
        if (r->p < r->e && *r->p == ',')
            r->p++;
        else if (r->p >= r->e || *r->p != close) {
            json_decref(args);
            return -1;
        }
    }
    json_t *c = json_object();
    json_object_set_new(c, "name", json_stringn(name, n));
    json_object_set_new(c, "arguments", args);
    json_array_append_new(calls, c);
    return 0;
}

int tg_py_list_at(const char *p, const char *e)
{
    if (p >= e || *p != '[')
        return -1;
    p++;
    while (p < e && isspace((unsigned char)*p))
        p++;
    size_t n = ident(p, e);
    if (p + n >= e)
        return n <= PY_NAME_MAX && (p + n == e) ? 0 : -1;
    if (!n)
        return -1;
    p += n;
    while (p < e && isspace((unsigned char)*p))
        p++;
    if (p == e)
        return 0;
    return *p == '(' ? 1 : -1;
}

const char *tg_py_list_end(const char *p, const char *e)
{
    int depth = 0;
    while (p < e) {
        char c = *p;
        if ((size_t)(e - p) >= GQ_LEN && !memcmp(p, GQ, GQ_LEN)) {
            p += GQ_LEN;
            while (p + GQ_LEN <= e && memcmp(p, GQ, GQ_LEN))
                p++;
            if (p + GQ_LEN > e)
                return NULL;
            p += GQ_LEN;
            continue;
        }
        if (c == '"' || c == '\'') {
            for (p++; p < e && *p != c; p++)
                if (*p == '\\')
                    p++;
            if (p >= e)
                return NULL;
        } else if (c == '[' || c == '(' || c == '{') {
            depth++;
        } else if (c == ']' || c == ')' || c == '}') {
            if (--depth == 0)
                return p + 1;
        }
        p++;
    }
    return NULL;
}

int tg_py_calls(json_t *calls, const char *s, const char *e)
{
    py_rd r = {s, e};
    ws(&r);
    bool bracket = r.p < r.e && *r.p == '[';
    if (bracket)
        r.p++;
    for (;;) {
        if (py_call(&r, calls, false))
            return -1;
        ws(&r);
        if (r.p < r.e && *r.p == ',') {
            r.p++;
            continue;
        }
        break;
    }
    if (bracket) {
        if (r.p >= r.e || *r.p != ']')
            return -1;
        r.p++;
    }
    ws(&r);
    return r.p == r.e ? 0 : -1;
}

int tg_py_gemma_calls(json_t *calls, const char *s, const char *e)
{
    py_rd r = {s, e};
    int n = 0;
    for (;;) {
        ws(&r);
        if (r.p == r.e)
            return n ? 0 : -1;
        if ((size_t)(r.e - r.p) < 5 || memcmp(r.p, "call:", 5))
            return -1;
        r.p += 5;
        if (py_call(&r, calls, true))
            return -1;
        n++;
        ws(&r);
        if (r.p < r.e && *r.p == ',')
            r.p++;
    }
}
