/* tg.c -- what all stages share (see tg.h): errors, the explain log, the
 * JSON byte scanner and the heap prefault. */
#include "core/tg.h"
#include "core/jsonio.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/mman.h>

void tg_error_set(tg_error *err, int status, const char *type, const char *code,
                  const char *param, const char *fmt, ...)
{
    if (!err)
        return;
    err->status = status;
    err->type = type ? type : "invalid_request_error";
    err->code = code;
    snprintf(err->param, sizeof err->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

/* The message and param quote what the client sent (a percent-decoded
 * path may hold any byte) and vsnprintf may cut a character in two:
 * invalid UTF-8 becomes U+FFFD, so the body is always made. */
static json_t *text_value(const char *s)
{
    tg_buf b = {0};
    tg_buf_put_valid_utf8(&b, s, strlen(s));
    json_t *v = json_stringn(b.data ? b.data : "", b.len);
    tg_buf_free(&b);
    return v;
}

char *tg_error_body(const tg_error *err)
{
    json_t *e = json_pack("{s:o, s:s, s:o, s:o}", "message", text_value(err->message),
                          "type", err->type ? err->type : "invalid_request_error",
                          "param", err->param[0] ? text_value(err->param) : json_null(),
                          "code", err->code ? json_string(err->code) : json_null());
    json_t *root = json_pack("{s:o}", "error", e);
    char *s = tg_json_dumps(root);
    json_decref(root);
    return s;
}

/* p at an opening quote: just past the closing one, or NULL. memchr finds
 * the candidates, so long strings cost little. */
static const char *string_end(const char *p, const char *e)
{
    for (p++; p < e;) {
        const char *q = memchr(p, '"', (size_t)(e - p));
        if (!q)
            return NULL;
        const char *b = q;
        while (b > p && b[-1] == '\\')
            b--;
        if ((q - b) % 2 == 0)
            return q + 1;
        p = q + 1;
    }
    return NULL;
}

const char *tg_json_value_end(const char *s, const char *e)
{
    int depth = 0;
    for (const char *p = s; p < e; p++) {
        char c = *p;
        if (c == '"') {
            p = string_end(p, e);
            if (!p)
                return NULL;
            p--;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if ((c == '}' || c == ']') && --depth == 0) {
            return p + 1;
        }
    }
    return NULL;
}

bool tg_json_depth_exceeds(const char *p, size_t n, int max)
{
    const char *e = p + n;
    int depth = 0;
    for (; p < e; p++) {
        char c = *p;
        if (c == '"') {
            p = string_end(p, e);
            if (!p)
                return false;  /* unterminated: the parser will say so */
            p--;
        } else if (c == '{' || c == '[') {
            if (++depth > max)
                return true;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return false;
}

void tg_explain_add(json_t *explain, const char *stage, const char *where,
                    const char *pointer, const char *rule,
                    json_t *before, json_t *after)
{
    if (!explain)
        return;
    json_t *rec = json_object();
    json_object_set_new(rec, "stage", json_string(stage));
    if (where)
        json_object_set_new(rec, "where", json_string(where));
    if (pointer)
        json_object_set_new(rec, "pointer", json_string(pointer));
    json_object_set_new(rec, "rule", json_string(rule));
    if (before)
        json_object_set_new(rec, "before", json_deep_copy(before));
    if (after)
        json_object_set_new(rec, "after", json_deep_copy(after));
    json_array_append_new(explain, rec);
}

void tg_heap_prefault(size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
    /* The block goes back to the heap at once; the next allocations are
     * carved from the same, now mapped, pages (the proxy keeps worker
     * heaps from being trimmed, see server.c). */
    char *p = malloc(bytes);  /* not tg_malloc: best effort, so no abort */
    if (!p)
        return;
    uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
    uintptr_t e = ((uintptr_t)p + bytes) & ~(uintptr_t)4095;
    if (e > a)
        madvise((void *)a, e - a, MADV_POPULATE_WRITE);
    free(p);
#else
    (void)bytes;
#endif
}

const json_t *tg_tool_peek(const json_t *tools, const char *name)
{
    size_t i;
    json_t *t;
    if (!name)
        return NULL;
    json_array_foreach(tools, i, t) {
        /* tg_json_get: a tool and its function have a few keys (jansson's
         * hashed look-up cost more than the walk, every stream's call) */
        const char *n = json_string_value(tg_json_get(tg_json_get(t, "function"), "name"));
        if (n && !strcmp(n, name))
            return t;
    }
    return NULL;
}

size_t tg_utf8_cut(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return max;
}

static int cmp_word(const void *k, const void *e)
{
    return strcmp(k, *(const char *const *)e);
}

bool tg_word_listed(const char *const *sorted, size_t n, const char *w)
{
    return bsearch(w, sorted, n, sizeof sorted[0], cmp_word) != NULL;
}

int tg_split_host_port(const char *a, size_t n, char *host, size_t cap, unsigned *port)
{
    const char *hs = a, *he, *p = NULL, *e = a + n;
    if (n && a[0] == '[') {
        const char *rb = memchr(a, ']', n);
        if (!rb)
            return -1;
        hs = a + 1;
        he = rb;
        if (rb + 1 < e) {
            if (rb[1] != ':')
                return -1;
            p = rb + 2;
        }
    } else {
        const char *c = memchr(a, ':', n);
        he = c ? c : e;
        p = c ? c + 1 : NULL;
    }
    if (he == hs || (size_t)(he - hs) >= cap)
        return -1;
    if (p) {
        unsigned v = 0;
        if (p == e)
            return -1;
        for (; p < e; p++)
            if (*p < '0' || *p > '9' || (v = v * 10 + (unsigned)(*p - '0')) > 65535)
                return -1;
        if (!v)
            return -1;
        *port = v;
    }
    memcpy(host, hs, (size_t)(he - hs));
    host[he - hs] = '\0';
    return 0;
}
