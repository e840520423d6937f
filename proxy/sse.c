/* sse.c -- incremental SSE parser (see sse.h). Work is per line: bytes are
 * scanned with memchr for the next line end, a line is only copied when it
 * straddles two reads, and fields other than data/event are ignored. An
 * event's one data line is not copied either while it is in the bytes
 * being fed (pend): most events are one line that ends in the same read.
 * max_event bounds both things an upstream can make it keep: an unfinished
 * line and the data of an unfinished event. Past it the parser lets go of
 * both and takes no more input, so it never holds more than max_event
 * plus one read. A line is measured whole as well as while it is still
 * open, against the same limit (with room for "data: "), so where the
 * reads split the input never changes where the parser stops. */

#define LINE_SLACK 6  /* "data: ": a line may be this much longer than its value */
#include "proxy/sse.h"

#include <string.h>

void tg_sse_init(tg_sse *p, tg_sse_event_fn on_event, tg_sse_comment_fn on_comment,
                 void *user)
{
    memset(p, 0, sizeof *p);
    p->on_event = on_event;
    p->on_comment = on_comment;
    p->user = user;
}

static void dispatch(tg_sse *p)
{
    const char *ev = p->event.len ? p->event.data : NULL;
    if (p->pend)
        p->on_event(p->user, ev, p->pend, p->pend_len);
    else if (p->has_data)
        p->on_event(p->user, ev, p->data.data ? p->data.data : "", p->data.len);
    p->pend = NULL;
    if (p->data.len)
        tg_buf_reset(&p->data);
    if (p->event.len)
        tg_buf_reset(&p->event);
    p->has_data = false;
}

/* The pending data line goes into data: its bytes are about to go. */
static void keep_pending(tg_sse *p)
{
    if (p->pend)
        tg_buf_append(&p->data, p->pend, p->pend_len);
    p->pend = NULL;
}

/* One whole line, without its terminator; fed: it is in the bytes being
 * fed (not the parser's own copy of a line split over two reads). */
static void on_line(tg_sse *p, const char *s, size_t n, bool fed)
{
    if (p->max_event && n > p->max_event + LINE_SLACK) {
        p->overflow = true;
        return;
    }
    if (n == 0) {
        dispatch(p);
        return;
    }
    if (s[0] == ':') {
        if (p->on_comment)
            p->on_comment(p->user, s, n);
        return;
    }
    /* "data:" (nearly every line) is known without a search */
    const char *colon = n >= 5 && s[4] == ':' && !memcmp(s, "data", 4) ? s + 4 : memchr(s, ':', n);
    size_t flen = colon ? (size_t)(colon - s) : n;
    const char *v = colon ? colon + 1 : s + n;
    size_t vlen = colon ? n - flen - 1 : 0;
    if (vlen && *v == ' ') {
        v++;
        vlen--;
    }
    if (flen == 4 && memcmp(s, "data", 4) == 0) {
        size_t held = p->pend ? p->pend_len : p->data.len;
        if (p->max_event && held + (p->has_data ? 1 : 0) + vlen > p->max_event) {
            p->overflow = true;
            return;
        }
        if (!p->has_data && fed) {
            p->pend = v;
            p->pend_len = vlen;
            p->has_data = true;
            return;
        }
        keep_pending(p);
        if (p->has_data)
            tg_buf_append(&p->data, "\n", 1);
        tg_buf_append(&p->data, v, vlen);
        p->has_data = true;
    } else if (flen == 5 && memcmp(s, "event", 5) == 0) {
        tg_buf_reset(&p->event);
        tg_buf_append(&p->event, v, vlen);
    }
}

/* The first CR or LF at s: memchr for the LF; *cr is the first CR at or
 * after s (end: none), found once for a read and again only once passed,
 * so a stream of LF lines (every provider's) is searched for CRs once a
 * read instead of once a line (a byte loop here was a tenth of a tool-call
 * stream's instructions; a CR memchr a line, 1,500 of its 125,000). */
static const char *find_eol(const char *s, const char *end, const char **cr)
{
    if (!*cr || *cr < s)
        *cr = memchr(s, '\r', (size_t)(end - s));
    if (!*cr)
        *cr = end;
    const char *lf = memchr(s, '\n', (size_t)(end - s));
    if (*cr < (lf ? lf : end))
        return *cr;
    return lf;
}

/* Most events are one "data:" line and the blank line after it, whole in
 * the bytes being fed: dispatched here, as the two lines would be by
 * on_line (nothing pending before it, the same bounds), without their
 * two calls and dispatch's. b: the line's start, eol its LF or CR. */
static bool whole_event(tg_sse *p, const char *b, const char *eol, const char *end)
{
    size_t n = (size_t)(eol - b);
    if (*eol != '\n' || end - eol < 2 || eol[1] != '\n' || n < 5 || memcmp(b, "data:", 5) ||
        p->line.len || p->has_data || p->event.len)
        return false;
    const char *v = b + 5;
    size_t vlen = n - 5;
    if (vlen && *v == ' ') {
        v++;
        vlen--;
    }
    if (p->max_event && (n > p->max_event + LINE_SLACK || vlen > p->max_event))
        return false;  /* on_line's to refuse */
    p->on_event(p->user, NULL, v, vlen);
    return true;
}

/* Past max_event: what was kept goes, and so does what comes after. */
static int overflowed(tg_sse *p)
{
    tg_buf_free(&p->line);
    tg_buf_free(&p->data);
    tg_buf_free(&p->event);
    p->pend = NULL;
    p->has_data = false;
    return -1;
}

int tg_sse_feed(tg_sse *p, const char *b, size_t n)
{
    const char *end = b + n;
    if (p->overflow)
        return -1;
    if (p->last_cr && b < end && *b == '\n')
        b++;
    p->last_cr = false;
    const char *cr = NULL;  /* not searched yet (find_eol) */
    while (b < end && !p->overflow) {
        /* an event's closing blank line: its LF is the first line end */
        const char *eol = *b == '\n' ? b : find_eol(b, end, &cr);
        if (!eol) {
            if (p->max_event && p->line.len + (size_t)(end - b) > p->max_event + LINE_SLACK)
                p->overflow = true;
            else
                tg_buf_append(&p->line, b, (size_t)(end - b));
            break;
        }
        if (whole_event(p, b, eol, end)) {
            b = eol + 2;
            continue;
        }
        if (p->line.len) {
            tg_buf_append(&p->line, b, (size_t)(eol - b));
            on_line(p, p->line.data, p->line.len, false);
            tg_buf_reset(&p->line);
        } else {
            on_line(p, b, (size_t)(eol - b), true);
        }
        if (*eol == '\r') {
            if (eol + 1 == end)
                p->last_cr = true;
            else if (eol[1] == '\n')
                eol++;
        }
        b = eol + 1;
    }
    if (p->overflow)
        return overflowed(p);
    keep_pending(p);
    return 0;
}

void tg_sse_finish(tg_sse *p)
{
    if (p->overflow)
        return;
    if (p->line.len) {
        on_line(p, p->line.data, p->line.len, false);
        tg_buf_reset(&p->line);
    }
    dispatch(p);
}

void tg_sse_free(tg_sse *p)
{
    tg_buf_free(&p->line);
    tg_buf_free(&p->data);
    tg_buf_free(&p->event);
}
