/* h1.c -- the HTTP/1.1 response parser of toolgate's own upstream client
 * (proxy/upconn.c): RFC 9112's message framing, and no more.
 *
 * A response is a head (status line, fields, empty line; 1xx interim heads
 * before it are passed on and skipped) and a body framed by chunked
 * transfer coding, by Content-Length, or by the connection's close. The
 * parser works in place over the caller's bytes and keeps only counters:
 * a line not yet ended is left to the caller (tg_h1_feed's *used stops
 * before it). Every length is bounded: a line by TG_H1_MAX_LINE, a head
 * and the trailers by TG_H1_MAX_HEAD, a chunk size by 16 hex digits; the
 * body's bound is the body callback's (max_event, max_answer upstream).
 * Trailers are read and dropped. What libcurl would refuse is refused
 * here too: a status line that is not HTTP/1.x, two different
 * Content-Lengths, a chunk size that is not hex.
 */
#include "proxy/h1.h"

#include <string.h>
#include <strings.h>

enum {
    P_STATUS,
    P_FIELDS,
    P_BODY_LEN,  /* tg_h1_head_done from here on */
    P_CLOSE,
    P_CHUNK_SIZE,
    P_CHUNK_DATA,
    P_CHUNK_END,
    P_TRAILERS,
    P_DONE,
};

/* field flags seen in the head being read */
enum { F_CODING = 1, F_TE_OTHER = 2, F_CLOSE = 4, F_KEEP = 8, F_BAD_LENGTH = 16 };

void tg_h1_init(tg_h1 *p, bool no_body)
{
    memset(p, 0, sizeof *p);
    p->no_body = no_body;
}

static tg_h1_result fail(tg_h1 *p, tg_h1_error e)
{
    p->err = e;
    return TG_H1_ERROR;
}

/* The value of a field line past "name:", without its whitespace. */
static void field_value(const char *line, size_t n, size_t name_len, const char **v, size_t *vn)
{
    const char *s = line + name_len + 1, *e = line + n;
    while (s < e && (*s == ' ' || *s == '\t'))
        s++;
    while (e > s && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t'))
        e--;
    *v = s;
    *vn = (size_t)(e - s);
}

/* Does the comma-separated list v hold token tok (any case)? With only set,
 * also whether it holds anything else. */
static bool list_has(const char *v, size_t vn, const char *tok, bool *other)
{
    size_t tl = strlen(tok);
    bool found = false;
    while (vn) {
        const char *c = memchr(v, ',', vn);
        size_t k = c ? (size_t)(c - v) : vn;
        const char *s = v, *e = v + k;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if ((size_t)(e - s) == tl && !strncasecmp(s, tok, tl))
            found = true;
        else if (e > s && other)
            *other = true;
        v += c ? k + 1 : k;
        vn -= c ? k + 1 : k;
    }
    return found;
}

/* Content-Length: digits, possibly repeated as "5, 5"; different ones, or
 * anything else, make the framing unknowable. */
static void read_length(tg_h1 *p, const char *v, size_t vn, int *flags)
{
    uint64_t len = 0;
    bool any = false, have = p->has_length;
    uint64_t prev = p->left;
    for (size_t i = 0; i <= vn; i++) {
        if (i == vn || v[i] == ',') {
            if (!any || (have && len != prev)) {
                *flags |= F_BAD_LENGTH;
                return;
            }
            prev = len;
            have = true;
            len = 0;
            any = false;
            while (i + 1 < vn && (v[i + 1] == ' ' || v[i + 1] == '\t'))
                i++;
        } else if (v[i] >= '0' && v[i] <= '9' && len <= (UINT64_MAX - 9) / 10) {
            len = len * 10 + (uint64_t)(v[i] - '0');
            any = true;
        } else {
            *flags |= F_BAD_LENGTH;
            return;
        }
    }
    p->has_length = true;
    p->left = prev;
}

/* One field of a head: the four that frame the body or the connection. */
static void read_field(tg_h1 *p, const char *line, size_t n, int *flags)
{
    const char *colon = memchr(line, ':', n);
    if (!colon || line[0] == ' ' || line[0] == '\t')
        return;  /* folded continuation, or no field at all: passed on, not read */
    size_t k = (size_t)(colon - line);
    const char *v;
    size_t vn;
#define IS(name) (k == sizeof name - 1 && !strncasecmp(line, name, k))
    if (IS("content-length")) {
        field_value(line, n, k, &v, &vn);
        read_length(p, v, vn, flags);
    } else if (IS("transfer-encoding")) {
        field_value(line, n, k, &v, &vn);
        bool other = false;
        if (list_has(v, vn, "chunked", &other))
            p->chunked = true;
        if (other)
            *flags |= F_TE_OTHER;
    } else if (IS("connection")) {
        field_value(line, n, k, &v, &vn);
        if (list_has(v, vn, "close", NULL))
            *flags |= F_CLOSE;
        if (list_has(v, vn, "keep-alive", NULL))
            *flags |= F_KEEP;
    } else if (IS("content-encoding")) {
        field_value(line, n, k, &v, &vn);
        bool other = false;
        list_has(v, vn, "identity", &other);
        if (other)
            *flags |= F_CODING;
    }
#undef IS
}

/* "HTTP/1.x NNN ...": the status and the minor version, or -1. */
static int read_status(tg_h1 *p, const char *line, size_t n)
{
    if (n < 12 || memcmp(line, "HTTP/1.", 7) || (line[7] != '0' && line[7] != '1') ||
        line[8] != ' ')
        return -1;
    int st = 0;
    for (int i = 9; i < 12; i++) {
        if (line[i] < '0' || line[i] > '9')
            return -1;
        st = st * 10 + (line[i] - '0');
    }
    if (st < 100 || (n > 12 && line[12] != ' ' && line[12] != '\r' && line[12] != '\n'))
        return -1;
    p->minor = line[7] - '0';
    return st;
}

/* The empty line after a head: an interim head starts the next; the
 * final one decides how the body is framed. */
static tg_h1_result end_head(tg_h1 *p, int flags)
{
    if (p->status < 200) {
        if (p->status == 101)  /* toolgate never asks to switch protocols */
            return fail(p, TG_H1_E_SYNTAX);
        /* interim heads count toward the final head's bound: an upstream
         * that sends 100 Continue without end is cut at TG_H1_MAX_HEAD */
        p->phase = P_STATUS;
        p->chunked = p->has_length = false;
        p->left = 0;
        return TG_H1_MORE;
    }
    p->keep_alive = p->minor == 1 ? !(flags & F_CLOSE) : (flags & F_KEEP) && !(flags & F_CLOSE);
    if (p->no_body || p->status == 204 || p->status == 304) {
        p->phase = P_DONE;
        return TG_H1_DONE;
    }
    if ((flags & (F_CODING | F_TE_OTHER)))
        return fail(p, TG_H1_E_CODING);
    if (p->chunked) {
        /* both framings: the connection must not be reused (RFC 9112 6.3);
         * a Content-Length field that did not parse is one too (has_length
         * alone missed "Content-Length: 1, 2" beside chunked); and
         * Transfer-Encoding in an HTTP/1.0 answer is a faulty framing whose
         * connection must be closed (RFC 9112 6.1) */
        if (p->has_length || (flags & F_BAD_LENGTH) || p->minor == 0)
            p->keep_alive = false;
        p->phase = P_CHUNK_SIZE;
        p->head_bytes = 0;
        return TG_H1_MORE;
    }
    if (flags & F_BAD_LENGTH)
        return fail(p, TG_H1_E_SYNTAX);
    if (p->has_length) {
        p->phase = p->left ? P_BODY_LEN : P_DONE;
        return p->left ? TG_H1_MORE : TG_H1_DONE;
    }
    p->keep_alive = false;
    p->phase = P_CLOSE;
    return TG_H1_MORE;
}

/* A chunk-size line: hex digits, then nothing, whitespace or ";ext". */
static bool read_chunk_size(tg_h1 *p, const char *line, size_t n)
{
    uint64_t v = 0;
    size_t i = 0;
    for (; i < n; i++) {
        char c = line[i];
        int d = c >= '0' && c <= '9' ? c - '0'
                : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10
                                                     : -1;
        if (d < 0)
            break;
        if (i >= 16)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    if (i == 0)
        return false;
    for (; i < n; i++)
        if (line[i] == ';')
            break;
        else if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r' && line[i] != '\n')
            return false;
    p->left = v;
    return true;
}

/* Hands body bytes to the callback; the result says whether to go on. */
static tg_h1_result give(const char *d, size_t k, const tg_h1_cb *cb, void *ud, size_t *taken)
{
    size_t r = cb->body(ud, d, k);
    if (r == TG_H1_PAUSE)
        return TG_H1_PAUSED;
    if (r != k)
        return TG_H1_STOPPED;
    *taken = k;
    return TG_H1_MORE;
}

tg_h1_result tg_h1_feed(tg_h1 *p, const char *buf, size_t n, size_t *used, const tg_h1_cb *cb,
                        void *ud)
{
    size_t at = 0;
    tg_h1_result res = TG_H1_MORE;
    if (n)
        p->seen_any = true;
    while (res == TG_H1_MORE && at < n) {
        const char *s = buf + at;
        size_t avail = n - at;
        if (p->phase == P_DONE) {
            res = TG_H1_DONE;
            break;
        }
        if (p->phase >= P_BODY_LEN && p->phase != P_CHUNK_SIZE && p->phase != P_CHUNK_END &&
            p->phase != P_TRAILERS) {
            size_t k = avail;
            if (p->phase != P_CLOSE && k > p->left)
                k = (size_t)p->left;
            size_t taken = 0;
            res = give(s, k, cb, ud, &taken);
            at += taken;
            if (p->phase != P_CLOSE)
                p->left -= taken;
            if (res == TG_H1_MORE && p->phase != P_CLOSE && !p->left)
                p->phase = p->phase == P_BODY_LEN ? P_DONE : P_CHUNK_END;
            continue;
        }
        /* a line */
        const char *nl = memchr(s, '\n', avail);
        if (!nl) {
            if (avail > TG_H1_MAX_LINE)
                res = fail(p, TG_H1_E_TOO_LARGE);
            break;
        }
        size_t ln = (size_t)(nl - s) + 1;
        if (ln > TG_H1_MAX_LINE) {
            res = fail(p, TG_H1_E_TOO_LARGE);
            break;
        }
        bool empty = ln == 1 || (ln == 2 && s[0] == '\r');
        switch (p->phase) {
        case P_STATUS:
        case P_FIELDS:
        case P_TRAILERS:
            p->head_bytes += ln;
            if (p->head_bytes > TG_H1_MAX_HEAD) {
                res = fail(p, TG_H1_E_TOO_LARGE);
                break;
            }
            if (p->phase == P_TRAILERS) {
                if (empty) {
                    p->phase = P_DONE;
                    res = TG_H1_DONE;
                }
                break;
            }
            if (p->phase == P_STATUS) {
                p->status = read_status(p, s, ln);
                if (p->status < 0) {
                    res = fail(p, TG_H1_E_SYNTAX);
                    break;
                }
                p->flags = 0;
                p->phase = P_FIELDS;
            } else if (!empty) {
                read_field(p, s, ln, &p->flags);
            }
            /* the head's end is judged before it is passed on: a head the
             * parser refuses (a coding, two lengths) never reaches the
             * caller as a whole one */
            if (empty && p->phase == P_FIELDS)
                res = end_head(p, p->flags);
            if (res != TG_H1_ERROR)
                cb->line(ud, s, ln);
            break;
        case P_CHUNK_SIZE:
            if (!read_chunk_size(p, s, ln)) {
                res = fail(p, TG_H1_E_SYNTAX);
                break;
            }
            p->phase = p->left ? P_CHUNK_DATA : P_TRAILERS;
            break;
        case P_CHUNK_END:
            if (!empty)
                res = fail(p, TG_H1_E_SYNTAX);
            else
                p->phase = P_CHUNK_SIZE;
            break;
        }
        if (res != TG_H1_ERROR)
            at += ln;
    }
    if (res == TG_H1_MORE && p->phase == P_DONE)
        res = TG_H1_DONE;
    *used = at;
    return res;
}

tg_h1_result tg_h1_eof(tg_h1 *p)
{
    if (p->phase == P_CLOSE || p->phase == P_DONE) {
        p->phase = P_DONE;
        return TG_H1_DONE;
    }
    return fail(p, p->seen_any ? TG_H1_E_PARTIAL : TG_H1_E_NOTHING);
}
