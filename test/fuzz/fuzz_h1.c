/* fuzz_h1.c -- libFuzzer target: the HTTP/1.1 response parser fed any
 * bytes twice: whole in one feed, and as a caller with a bounded buffer
 * (TG_H1_MAX_LINE plus one read) would, in reads split at a point chosen by
 * the first byte, holding what *used leaves and feeding it again with the
 * next read appended, the body callback pausing now and then. Both runs
 * must end alike (result, error, header lines, body bytes, bytes taken),
 * a paused offer must come again, the bounded caller must never be left
 * with a full buffer the parser will not take from, and the body can never
 * be longer than the input. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "proxy/h1.h"

typedef struct rec {
    tg_buf lines;      /* each line as "<length>:<bytes>" */
    tg_buf body;
    unsigned pattern;  /* bit k % 8 set: pause the k-th offer once */
    unsigned calls;
    bool paused;
    tg_buf offered;    /* the paused offer's bytes */
} rec;

static void on_line(void *ud, const char *line, size_t n)
{
    rec *r = ud;
    if (!n || line[n - 1] != '\n')
        abort();  /* a line goes out whole, its end included */
    tg_buf_printf(&r->lines, "%zu:", n);
    tg_buf_append(&r->lines, line, n);
}

static size_t on_body(void *ud, const char *d, size_t n)
{
    rec *r = ud;
    if (!n)
        abort();
    if (!r->paused && (r->pattern >> (r->calls++ % 8) & 1)) {
        r->paused = true;
        tg_buf_reset(&r->offered);
        tg_buf_append(&r->offered, d, n);
        return TG_H1_PAUSE;
    }
    if (r->paused) {
        if (n < r->offered.len || memcmp(d, r->offered.data, r->offered.len))
            abort();  /* offered again: the same bytes first */
        r->paused = false;
    }
    tg_buf_append(&r->body, d, n);
    return n;
}

static const tg_h1_cb cbs = {on_line, on_body};

typedef struct outcome {
    tg_h1_result res;
    tg_h1_error err;
    size_t taken;
} outcome;

static outcome finish(tg_h1 *p, tg_h1_result res, size_t taken)
{
    if (res == TG_H1_MORE)
        res = tg_h1_eof(p);
    return (outcome){res, p->err, taken};
}

static outcome run_whole(const uint8_t *d, size_t n, bool no_body, rec *r)
{
    tg_h1 p;
    size_t used = 0;
    tg_h1_init(&p, no_body);
    tg_h1_result res = tg_h1_feed(&p, (const char *)d, n, &used, &cbs, r);
    if (used > n || res == TG_H1_PAUSED)
        abort();
    return finish(&p, res, used);
}

/* reads of rd bytes into a buffer of TG_H1_MAX_LINE + rd, the first read
 * ending at cut */
static outcome run_bounded(const uint8_t *d, size_t n, size_t cut, size_t rd, bool no_body,
                           bool refill_on_pause, rec *r)
{
    tg_h1 p;
    size_t cap = TG_H1_MAX_LINE + rd, plen = 0, pos = 0, taken = 0;
    char *pend = malloc(cap);
    tg_h1_result res = TG_H1_MORE;
    tg_h1_init(&p, no_body);
    while (res == TG_H1_MORE) {
        size_t end = pos < cut ? cut : n, k = end - pos;
        if (k > rd)
            k = rd;
        if (k > cap - plen)
            k = cap - plen;
        if (!k) {
            if (pos < n)
                abort();  /* a full buffer the parser would not take from */
            break;
        }
        memcpy(pend + plen, d + pos, k);
        plen += k;
        pos += k;
        for (;;) {
            size_t used = 0;
            res = tg_h1_feed(&p, pend, plen, &used, &cbs, r);
            if (used > plen)
                abort();
            memmove(pend, pend + used, plen - used);
            plen -= used;
            taken += used;
            if (res != TG_H1_PAUSED)
                break;
            if (!r->paused)
                abort();
            res = TG_H1_MORE;
            if (refill_on_pause && plen < cap && pos < n)
                break;  /* read more before offering them again */
        }
    }
    free(pend);
    return finish(&p, res, taken);
}

static void rec_free(rec *r)
{
    tg_buf_free(&r->lines);
    tg_buf_free(&r->body);
    tg_buf_free(&r->offered);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned f = size ? data[size - 1] * 31u + (unsigned)size : 0;
    size_t cut = size ? data[0] % (size + 1) : 0;
    size_t rd = f & 64 ? 4096 : 1 + (f >> 2) % 16;
    bool no_body = f & 1, refill = f & 2;
    rec a = {0}, b = {.pattern = (f >> 7) & 0xff};
    outcome wa = run_whole(data, size, no_body, &a);
    outcome wb = run_bounded(data, size, cut, rd, no_body, refill, &b);
    if (b.paused)
        abort();  /* every paused offer came again */
    if (a.body.len > size || b.body.len > size)
        abort();
    if (wa.res != wb.res || wa.err != wb.err)
        abort();
    if (a.lines.len != b.lines.len || (a.lines.len && memcmp(a.lines.data, b.lines.data, a.lines.len)))
        abort();
    if (a.body.len != b.body.len || (a.body.len && memcmp(a.body.data, b.body.data, a.body.len)))
        abort();
    if (wa.res == TG_H1_DONE && wa.taken != wb.taken)
        abort();
    rec_free(&a);
    rec_free(&b);
    return 0;
}
