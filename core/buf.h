/* buf.h -- a growable byte buffer, the one way bytes are accumulated. */
#ifndef TG_BUF_H
#define TG_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

typedef struct tg_buf {
    char *data;  /* malloc'd, always NUL-terminated when cap > 0 */
    size_t len;
    size_t cap;
} tg_buf;

/* Growing cannot fail (core/tg.h: out of memory aborts), so these return
 * nothing; the -1 that remains below means a real error. */
/* Room for extra more bytes (and the NUL): the slow half of the two
 * below, which inline the common case of a buffer that has the room (a
 * tool-call stream appends some 250 times a request). */
void tg_buf_grow(tg_buf *b, size_t extra);
static inline void tg_buf_reserve(tg_buf *b, size_t extra)
{
    if (extra >= b->cap - b->len)  /* cap is 0 or at least len + 1 */
        tg_buf_grow(b, extra);
}
static inline void tg_buf_append(tg_buf *b, const void *p, size_t n)
{
    tg_buf_reserve(b, n);
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}
void tg_buf_puts(tg_buf *b, const char *s);
/* Append code point cp (at most U+10FFFF) encoded as UTF-8. */
void tg_buf_put_utf8(tg_buf *b, unsigned long cp);
/* Length of the valid UTF-8 sequence at p (1 for ASCII), or 0 when the
 * bytes from p to end do not start one (overlong, surrogate, past
 * U+10FFFF, cut). */
size_t tg_utf8_len(const unsigned char *p, const unsigned char *end);
/* Is s[0..n) valid UTF-8 throughout (what json_stringn takes)? */
bool tg_utf8_valid(const char *s, size_t n);
/* Appends s[0..n) with every byte that is not part of a valid UTF-8
 * sequence (overlong, surrogate, past U+10FFFF, cut) replaced by U+FFFD;
 * returns how many were replaced. */
size_t tg_buf_put_valid_utf8(tg_buf *b, const char *s, size_t n);
/* 0, or -1 when vsnprintf cannot expand fmt (an encoding error, or output
 * past INT_MAX bytes); b is unchanged then. */
int tg_buf_printf(tg_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Drop the first n bytes (consumed by a reader). */
void tg_buf_consume(tg_buf *b, size_t n);
void tg_buf_reset(tg_buf *b);
void tg_buf_free(tg_buf *b);
/* Append a whole file. 0, or -1 (errno set) when it cannot be read. */
int tg_buf_read_file(tg_buf *b, const char *path);
/* Hand the bytes to the caller (malloc'd, NUL-terminated, never NULL: an
 * empty b gives ""); b becomes empty. */
char *tg_buf_steal(tg_buf *b, size_t *len);

#endif
