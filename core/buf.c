/* buf.c -- growable byte buffer (see buf.h). Doubling growth; consume()
 * moves the tail down, which is cheap because readers drain whole events. */
#include "core/buf.h"
#include "core/alloc.h"

#include <stdint.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tg_buf_grow(tg_buf *b, size_t extra)
{
    if (extra > SIZE_MAX / 2 - b->len)
        tg_oom(SIZE_MAX);  /* no doubling reaches it */
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    b->data = tg_realloc(b->data, cap);
    b->cap = cap;
    b->data[b->len] = '\0';
}

void tg_buf_put_utf8(tg_buf *b, unsigned long cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    tg_buf_append(b, u, n);
}

void tg_buf_puts(tg_buf *b, const char *s)
{
    tg_buf_append(b, s, strlen(s));
}

int tg_buf_printf(tg_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    tg_buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

void tg_buf_consume(tg_buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
    } else {
        memmove(b->data, b->data + n, b->len - n);
        b->len -= n;
    }
    if (b->data)
        b->data[b->len] = '\0';
}

void tg_buf_reset(tg_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void tg_buf_free(tg_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int tg_buf_read_file(tg_buf *b, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char chunk[65536];
    size_t n;
    int rc = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        tg_buf_append(b, chunk, n);
    if (ferror(f))
        rc = -1;
    fclose(f);
    tg_buf_reserve(b, 0);
    return rc;
}

char *tg_buf_steal(tg_buf *b, size_t *len)
{
    tg_buf_reserve(b, 0);
    char *p = b->data;
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

size_t tg_utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* ASCII runs eight bytes at a time: most text is ASCII. */
bool tg_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *e = p + n;
    while (p < e) {
        uint64_t w;
        if (e - p >= 8 && (memcpy(&w, p, 8), !(w & 0x8080808080808080ull))) {
            p += 8;
            continue;
        }
        if (*p < 0x80) {
            p++;
            continue;
        }
        size_t l = tg_utf8_len(p, e);
        if (!l)
            return false;
        p += l;
    }
    return true;
}

size_t tg_buf_put_valid_utf8(tg_buf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t bad = 0, i = 0, run = 0;
    while (i < n) {
        size_t k = tg_utf8_len(u + i, u + n);
        if (k) {
            i += k;
            continue;
        }
        tg_buf_append(b, s + run, i - run);
        tg_buf_put_utf8(b, 0xFFFD);
        bad++;
        run = ++i;
    }
    tg_buf_append(b, s + run, n - run);
    return bad;
}
