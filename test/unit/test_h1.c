/* test_h1.c -- the HTTP/1.1 response parser (proxy/h1.c) over a table of
 * responses, each run whole, split in two at every byte, one byte at a
 * time, and with the body callback pausing every offer once; every run
 * must give the table's result, status, keep_alive, header lines (as they
 * came, in "[...]" each), body bytes and unconsumed tail. The driver plays
 * the caller of tg_h1_feed's contract: what *used leaves is fed again with
 * the next bytes appended. Then the bounds (a line, a head, the trailers),
 * pausing and stopping in detail, and tg_h1_head_done. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "proxy/h1.h"

/* ---- the recording callbacks ---------------------------------------- */

typedef struct rec {
    tg_buf lines;         /* each line as "[" line "]" */
    tg_buf body;
    bool pause;           /* pause every offer once, take it when offered again */
    bool paused;          /* the last offer was paused */
    tg_buf offered;       /* its bytes */
    const char *off_at;   /* and where they were */
    size_t stop_with;     /* != 0: return this instead of taking (0 is spelled 1 + n) */
    int body_calls;
} rec;

static void on_line(void *ud, const char *line, size_t n)
{
    rec *r = ud;
    assert_true(n > 0);
    assert_int_equal(line[n - 1], '\n');  /* a whole line, its end included */
    tg_buf_append(&r->lines, "[", 1);
    tg_buf_append(&r->lines, line, n);
    tg_buf_append(&r->lines, "]", 1);
}

static size_t on_body(void *ud, const char *d, size_t n)
{
    rec *r = ud;
    assert_true(n > 0);
    r->body_calls++;
    if (r->stop_with)
        return r->stop_with - 1;
    if (r->pause && !r->paused) {
        r->paused = true;
        r->off_at = d;
        tg_buf_reset(&r->offered);
        tg_buf_append(&r->offered, d, n);
        return TG_H1_PAUSE;
    }
    if (r->paused) {
        /* offered again: the same bytes first (more may follow them) */
        assert_true(n >= r->offered.len);
        assert_memory_equal(d, r->offered.data, r->offered.len);
        r->paused = false;
    }
    tg_buf_append(&r->body, d, n);
    return n;
}

static const tg_h1_cb cbs = {on_line, on_body};

/* ---- the driver ------------------------------------------------------ */

typedef struct outcome {
    tg_h1_result res;
    tg_h1_error err;
    int status;
    bool keep_alive;
    char *lines;
    char *body;
    size_t consumed;  /* bytes tg_h1_feed took in all */
    size_t pending_max;  /* the most the caller had to hold at once */
} outcome;

/* Feeds in[0..n) in pieces ending at cuts[] (increasing) and at n, holding
 * what *used leaves for the next feed; at the end of the input, the
 * connection closes (tg_h1_eof) unless the parse ended already. */
static void drive(const char *in, size_t n, bool no_body, const size_t *cuts, size_t ncuts,
                  bool pause, outcome *o)
{
    tg_h1 p;
    rec r = {.pause = pause};
    tg_buf pend = {0};
    tg_h1_result res = TG_H1_MORE;
    size_t prev = 0, consumed = 0, pmax = 0;
    tg_h1_init(&p, no_body);
    for (size_t i = 0; i <= ncuts && res == TG_H1_MORE; i++) {
        size_t at = i < ncuts ? cuts[i] : n;
        if (at < prev)
            at = prev;
        tg_buf_append(&pend, in + prev, at - prev);
        prev = at;
        if (pend.len > pmax)
            pmax = pend.len;
        for (;;) {
            size_t used = (size_t)-1;
            res = tg_h1_feed(&p, pend.data, pend.len, &used, &cbs, &r);
            assert_true(used <= pend.len);
            consumed += used;
            if (res == TG_H1_PAUSED) {
                /* stopped right before the bytes it offered */
                assert_ptr_equal(r.off_at, pend.data + used);
                tg_buf_consume(&pend, used);
                res = TG_H1_MORE;
                continue;
            }
            if (res == TG_H1_MORE) {
                /* all it left is an unended line */
                assert_null(memchr(pend.data + used, '\n', pend.len - used));
                tg_buf_consume(&pend, used);
            }
            break;
        }
    }
    if (res == TG_H1_MORE)
        res = tg_h1_eof(&p);
    o->res = res;
    o->err = p.err;
    o->status = p.status;
    o->keep_alive = p.keep_alive;
    o->lines = tg_buf_steal(&r.lines, NULL);
    o->body = tg_buf_steal(&r.body, NULL);
    o->consumed = consumed;
    o->pending_max = pmax;
    assert_false(r.paused);  /* every paused offer came again */
    tg_buf_free(&pend);
    tg_buf_free(&r.offered);
}

static void outcome_free(outcome *o)
{
    free(o->lines);
    free(o->body);
}

/* ---- the table -------------------------------------------------------- */

typedef struct vec {
    const char *name;
    const char *in;    /* the response */
    const char *tail;  /* what follows it on the connection (left unconsumed) */
    bool no_body;      /* the answer to a HEAD */
    tg_h1_result res;
    tg_h1_error err;
    int status;        /* checked when DONE */
    bool keep_alive;   /* checked when DONE */
    const char *lines;
    const char *body;
} vec;

#define OK200 "HTTP/1.1 200 OK\r\n"
#define L_OK200 "[HTTP/1.1 200 OK\r\n]"
#define TE_CHUNKED "Transfer-Encoding: chunked\r\n"
#define L_TE_CHUNKED "[Transfer-Encoding: chunked\r\n]"
#define AZ "abcdefghijklmnopqrstuvwxyz"

static const vec vecs[] = {
    /* Content-Length */
    {"content-length", OK200 "Content-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello", "",
     false, TG_H1_DONE, TG_H1_E_NONE, 200, true,
     L_OK200 "[Content-Type: text/plain\r\n][Content-Length: 5\r\n][\r\n]", "hello"},
    {"content-length, next response after it", OK200 "Content-Length: 5\r\n\r\nhello",
     "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, TG_H1_DONE, TG_H1_E_NONE, 200, true,
     L_OK200 "[Content-Length: 5\r\n][\r\n]", "hello"},
    {"content-length 0", OK200 "Content-Length: 0\r\n\r\n", "junk", false, TG_H1_DONE,
     TG_H1_E_NONE, 200, true, L_OK200 "[Content-Length: 0\r\n][\r\n]", ""},
    {"content-length repeated alike", OK200 "Content-Length: 3, 3\r\ncontent-length:3\r\n\r\nabc",
     "x", false, TG_H1_DONE, TG_H1_E_NONE, 200, true,
     L_OK200 "[Content-Length: 3, 3\r\n][content-length:3\r\n][\r\n]", "abc"},
    {"status line without reason, bare LF",
     "HTTP/1.1 201\nContent-Length: 2\n\nok", "", false, TG_H1_DONE, TG_H1_E_NONE, 201, true,
     "[HTTP/1.1 201\n][Content-Length: 2\n][\n]", "ok"},
    {"mixed line ends, odd fields as they came",
     "HTTP/1.1 200 Fine Thanks\nX-Empty:\r\nX-Sp:   a b  \r\n folded\r\nNoColon\nContent-Length: 1\r\n\n!",
     "", false, TG_H1_DONE, TG_H1_E_NONE, 200, true,
     "[HTTP/1.1 200 Fine Thanks\n][X-Empty:\r\n][X-Sp:   a b  \r\n][ folded\r\n][NoColon\n]"
     "[Content-Length: 1\r\n][\n]",
     "!"},
    {"content-encoding identity", OK200 "Content-Encoding: identity\r\nContent-Length: 2\r\n\r\nok",
     "", false, TG_H1_DONE, TG_H1_E_NONE, 200, true,
     L_OK200 "[Content-Encoding: identity\r\n][Content-Length: 2\r\n][\r\n]", "ok"},

    /* chunked */
    {"chunked: extensions, upper and lower hex, trailers dropped",
     OK200 TE_CHUNKED "\r\n5;name=val\r\nhello\r\nA; a=\"b;c\"\r\n, world!!!\r\n1a\r\n" AZ
                      "\r\n1A \r\n" AZ "\r\n0\r\nX-Trailer: yes\r\nOther: 1\r\n\r\n",
     "HTTP/1.1", false, TG_H1_DONE, TG_H1_E_NONE, 200, true, L_OK200 L_TE_CHUNKED "[\r\n]",
     "hello, world!!!" AZ AZ},
    {"chunked, bare LF, any case", "HTTP/1.1 200 OK\nTransfer-Encoding: Chunked\n\n3\nabc\n0\n\n",
     "", false, TG_H1_DONE, TG_H1_E_NONE, 200, true,
     "[HTTP/1.1 200 OK\n][Transfer-Encoding: Chunked\n][\n]", "abc"},
    {"chunked, 16 hex digits", OK200 TE_CHUNKED "\r\n0000000000000003\r\nabc\r\n0\r\n\r\n", "", false,
     TG_H1_DONE, TG_H1_E_NONE, 200, true, L_OK200 L_TE_CHUNKED "[\r\n]", "abc"},
    {"chunked, last chunk with extension", OK200 TE_CHUNKED "\r\n2\r\nok\r\n0;x=y\r\n\r\n", "z",
     false, TG_H1_DONE, TG_H1_E_NONE, 200, true, L_OK200 L_TE_CHUNKED "[\r\n]", "ok"},

    /* until the connection closes */
    {"body until close", OK200 "Content-Type: text/event-stream\r\n\r\ndata: 1\n\ndata: 2\n\n", "",
     false, TG_H1_DONE, TG_H1_E_NONE, 200, false,
     L_OK200 "[Content-Type: text/event-stream\r\n][\r\n]", "data: 1\n\ndata: 2\n\n"},
    {"empty body until close", OK200 "\r\n", "", false, TG_H1_DONE, TG_H1_E_NONE, 200, false,
     L_OK200 "[\r\n]", ""},

    /* no body */
    {"204 with a Content-Length", "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
     "HTTP/1.1 200 OK\r\n", false, TG_H1_DONE, TG_H1_E_NONE, 204, true,
     "[HTTP/1.1 204 No Content\r\n][Content-Length: 5\r\n][\r\n]", ""},
    {"304 with chunked", "HTTP/1.1 304 Not Modified\r\n" TE_CHUNKED "\r\n", "0\r\n\r\n", false,
     TG_H1_DONE, TG_H1_E_NONE, 304, true, "[HTTP/1.1 304 Not Modified\r\n]" L_TE_CHUNKED "[\r\n]",
     ""},
    {"HEAD with a Content-Length", OK200 "Content-Length: 1000\r\n\r\n", "HTTP/1.1 200", true,
     TG_H1_DONE, TG_H1_E_NONE, 200, true, L_OK200 "[Content-Length: 1000\r\n][\r\n]", ""},
    {"HEAD without any length", OK200 "\r\n", "", true, TG_H1_DONE, TG_H1_E_NONE, 200, true,
     L_OK200 "[\r\n]", ""},

    /* interim heads */
    {"100 and 103 before the final head",
     "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n" OK200
     "Content-Length: 2\r\n\r\nok",
     "", false, TG_H1_DONE, TG_H1_E_NONE, 200, true,
     "[HTTP/1.1 100 Continue\r\n][\r\n][HTTP/1.1 103 Early Hints\r\n][Link: </s.css>; rel=preload\r\n]"
     "[\r\n]" L_OK200 "[Content-Length: 2\r\n][\r\n]",
     "ok"},
    {"an interim head's fields do not frame the final one",
     "HTTP/1.1 103 Early Hints\r\nContent-Length: 3\r\nConnection: close\r\n" TE_CHUNKED "\r\n" OK200
     "\r\nbody until close",
     "", false, TG_H1_DONE, TG_H1_E_NONE, 200, false,
     "[HTTP/1.1 103 Early Hints\r\n][Content-Length: 3\r\n][Connection: close\r\n]" L_TE_CHUNKED
     "[\r\n]" L_OK200 "[\r\n]",
     "body until close"},
    {"an interim Connection: close does not close", "HTTP/1.1 100 Continue\r\nConnection: close\r\n\r\n" OK200
     "Content-Length: 0\r\n\r\n",
     "", false, TG_H1_DONE, TG_H1_E_NONE, 200, true,
     "[HTTP/1.1 100 Continue\r\n][Connection: close\r\n][\r\n]" L_OK200 "[Content-Length: 0\r\n][\r\n]",
     ""},
    /* a head refused at its end: its empty line is not passed on (h1.c) */
    {"101 is an error", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", "", false,
     TG_H1_ERROR, TG_H1_E_SYNTAX, 0, false,
     "[HTTP/1.1 101 Switching Protocols\r\n][Upgrade: websocket\r\n]", ""},

    /* keep_alive */
    {"1.1 Connection: close", OK200 "Connection: close\r\nContent-Length: 2\r\n\r\nok", "", false,
     TG_H1_DONE, TG_H1_E_NONE, 200, false,
     L_OK200 "[Connection: close\r\n][Content-Length: 2\r\n][\r\n]", "ok"},
    {"1.1 Connection: Keep-Alive, CLOSE", OK200 "Connection: Keep-Alive, CLOSE\r\nContent-Length: 0\r\n\r\n",
     "", false, TG_H1_DONE, TG_H1_E_NONE, 200, false,
     L_OK200 "[Connection: Keep-Alive, CLOSE\r\n][Content-Length: 0\r\n][\r\n]", ""},
    {"1.1 Connection: upgrade (not close)", OK200 "Connection: upgrade, closed\r\nContent-Length: 0\r\n\r\n",
     "", false, TG_H1_DONE, TG_H1_E_NONE, 200, true,
     L_OK200 "[Connection: upgrade, closed\r\n][Content-Length: 0\r\n][\r\n]", ""},
    {"1.0 default", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", "", false, TG_H1_DONE,
     TG_H1_E_NONE, 200, false, "[HTTP/1.0 200 OK\r\n][Content-Length: 2\r\n][\r\n]", "ok"},
    {"1.0 Connection: keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
     "", false, TG_H1_DONE, TG_H1_E_NONE, 200, true,
     "[HTTP/1.0 200 OK\r\n][Connection: keep-alive\r\n][Content-Length: 2\r\n][\r\n]", "ok"},
    {"1.0 keep-alive, body until close", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\nall", "",
     false, TG_H1_DONE, TG_H1_E_NONE, 200, false,
     "[HTTP/1.0 200 OK\r\n][Connection: keep-alive\r\n][\r\n]", "all"},
    {"chunked and Content-Length: chunked frames, no reuse",
     OK200 "Content-Length: 100\r\n" TE_CHUNKED "\r\n2\r\nok\r\n0\r\n\r\n", "", false, TG_H1_DONE,
     TG_H1_E_NONE, 200, false, L_OK200 "[Content-Length: 100\r\n]" L_TE_CHUNKED "[\r\n]", "ok"},
    {"chunked and a bad Content-Length: no reuse either",
     OK200 "Content-Length: 1, 2\r\n" TE_CHUNKED "\r\n2\r\nok\r\n0\r\n\r\n", "", false, TG_H1_DONE,
     TG_H1_E_NONE, 200, false, L_OK200 "[Content-Length: 1, 2\r\n]" L_TE_CHUNKED "[\r\n]", "ok"},
    {"1.0 keep-alive with chunked: no reuse (RFC 9112 6.1)",
     "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n" TE_CHUNKED "\r\n2\r\nok\r\n0\r\n\r\n", "", false,
     TG_H1_DONE, TG_H1_E_NONE, 200, false,
     "[HTTP/1.0 200 OK\r\n][Connection: keep-alive\r\n]" L_TE_CHUNKED "[\r\n]", "ok"},

    /* errors */
    {"HTTP/2", "HTTP/2 200\r\n\r\n", "", false, TG_H1_ERROR, TG_H1_E_SYNTAX, 0, false, "", ""},
    {"HTTP/1.2", "HTTP/1.2 200 OK\r\n\r\n", "", false, TG_H1_ERROR, TG_H1_E_SYNTAX, 0, false, "", ""},
    {"lower-case http", "http/1.1 200 OK\r\n\r\n", "", false, TG_H1_ERROR, TG_H1_E_SYNTAX, 0, false,
     "", ""},
    {"no status line", "<html>\r\n\r\n", "", false, TG_H1_ERROR, TG_H1_E_SYNTAX, 0, false, "", ""},
    {"a blank line first", "\r\n" OK200 "\r\n", "", false, TG_H1_ERROR, TG_H1_E_SYNTAX, 0, false,
     "", ""},
    {"two-digit status", "HTTP/1.1 20 OK\r\n\r\n", "", false, TG_H1_ERROR, TG_H1_E_SYNTAX, 0, false,
     "", ""},
    {"four-digit status", "HTTP/1.1 2000 OK\r\n\r\n", "", false, TG_H1_ERROR, TG_H1_E_SYNTAX, 0,
     false, "", ""},
    {"status below 100", "HTTP/1.1 099 Low\r\n\r\n", "", false, TG_H1_ERROR, TG_H1_E_SYNTAX, 0, false,
     "", ""},
    {"status not digits", "HTTP/1.1 2x0 OK\r\n\r\n", "", false, TG_H1_ERROR, TG_H1_E_SYNTAX, 0, false,
     "", ""},
    {"chunk size not hex", OK200 TE_CHUNKED "\r\nxyz\r\n", "", false, TG_H1_ERROR, TG_H1_E_SYNTAX,
     0, false, L_OK200 L_TE_CHUNKED "[\r\n]", ""},
    {"chunk size with junk after it", OK200 TE_CHUNKED "\r\n5x\r\nhello\r\n0\r\n\r\n", "", false,
     TG_H1_ERROR, TG_H1_E_SYNTAX, 0, false, L_OK200 L_TE_CHUNKED "[\r\n]", ""},
    {"chunk size empty", OK200 TE_CHUNKED "\r\n\r\n", "", false, TG_H1_ERROR, TG_H1_E_SYNTAX, 0,
     false, L_OK200 L_TE_CHUNKED "[\r\n]", ""},
    {"chunk size of 17 hex digits", OK200 TE_CHUNKED "\r\n00000000000000003\r\nabc\r\n0\r\n\r\n", "",
     false, TG_H1_ERROR, TG_H1_E_SYNTAX, 0, false, L_OK200 L_TE_CHUNKED "[\r\n]", ""},
    {"junk after chunk data", OK200 TE_CHUNKED "\r\n3\r\nabcX\r\n0\r\n\r\n", "", false, TG_H1_ERROR,
     TG_H1_E_SYNTAX, 0, false, L_OK200 L_TE_CHUNKED "[\r\n]", "abc"},
    {"next chunk size right after the data", OK200 TE_CHUNKED "\r\n3\r\nabc0\r\n\r\n", "", false,
     TG_H1_ERROR, TG_H1_E_SYNTAX, 0, false, L_OK200 L_TE_CHUNKED "[\r\n]", "abc"},
    {"Content-Length: 5, 6", OK200 "Content-Length: 5, 6\r\n\r\nhello!", "", false, TG_H1_ERROR,
     TG_H1_E_SYNTAX, 0, false, L_OK200 "[Content-Length: 5, 6\r\n]", ""},
    {"two different Content-Length fields", OK200 "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
     "", false, TG_H1_ERROR, TG_H1_E_SYNTAX, 0, false,
     L_OK200 "[Content-Length: 5\r\n][Content-Length: 6\r\n]", ""},
    {"Content-Length not digits", OK200 "Content-Length: 5a\r\n\r\nhello", "", false, TG_H1_ERROR,
     TG_H1_E_SYNTAX, 0, false, L_OK200 "[Content-Length: 5a\r\n]", ""},
    {"Content-Length negative", OK200 "Content-Length: -1\r\n\r\n", "", false, TG_H1_ERROR,
     TG_H1_E_SYNTAX, 0, false, L_OK200 "[Content-Length: -1\r\n]", ""},
    {"Content-Length empty", OK200 "Content-Length: \r\n\r\n", "", false, TG_H1_ERROR,
     TG_H1_E_SYNTAX, 0, false, L_OK200 "[Content-Length: \r\n]", ""},
    {"Content-Length past 64 bits", OK200 "Content-Length: 99999999999999999999999\r\n\r\n", "", false,
     TG_H1_ERROR, TG_H1_E_SYNTAX, 0, false,
     L_OK200 "[Content-Length: 99999999999999999999999\r\n]", ""},
    {"Content-Encoding gzip", OK200 "Content-Encoding: gzip\r\nContent-Length: 2\r\n\r\nok", "",
     false, TG_H1_ERROR, TG_H1_E_CODING, 0, false,
     L_OK200 "[Content-Encoding: gzip\r\n][Content-Length: 2\r\n]", ""},
    {"Content-Encoding identity, br", OK200 "Content-Encoding: identity, br\r\n\r\nok", "", false,
     TG_H1_ERROR, TG_H1_E_CODING, 0, false, L_OK200 "[Content-Encoding: identity, br\r\n]",
     ""},
    {"Transfer-Encoding gzip, chunked", OK200 "Transfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
     "", false, TG_H1_ERROR, TG_H1_E_CODING, 0, false,
     L_OK200 "[Transfer-Encoding: gzip, chunked\r\n]", ""},
    {"EOF in a Content-Length body", OK200 "Content-Length: 10\r\n\r\nhello", "", false, TG_H1_ERROR,
     TG_H1_E_PARTIAL, 0, false, L_OK200 "[Content-Length: 10\r\n][\r\n]", "hello"},
    {"EOF in chunk data", OK200 TE_CHUNKED "\r\n5\r\nhel", "", false, TG_H1_ERROR, TG_H1_E_PARTIAL,
     0, false, L_OK200 L_TE_CHUNKED "[\r\n]", "hel"},
    {"EOF before the last chunk", OK200 TE_CHUNKED "\r\n5\r\nhello\r\n", "", false, TG_H1_ERROR,
     TG_H1_E_PARTIAL, 0, false, L_OK200 L_TE_CHUNKED "[\r\n]", "hello"},
    {"EOF in the trailers", OK200 TE_CHUNKED "\r\n0\r\nX-T: 1\r\n", "", false, TG_H1_ERROR,
     TG_H1_E_PARTIAL, 0, false, L_OK200 L_TE_CHUNKED "[\r\n]", ""},
    {"EOF in the head", OK200 "Content-Le", "", false, TG_H1_ERROR, TG_H1_E_PARTIAL, 0, false,
     L_OK200, ""},
    {"EOF after an interim head", "HTTP/1.1 100 Continue\r\n\r\n", "", false, TG_H1_ERROR,
     TG_H1_E_PARTIAL, 0, false, "[HTTP/1.1 100 Continue\r\n][\r\n]", ""},
    {"EOF in the status line", "HTTP/1.", "", false, TG_H1_ERROR, TG_H1_E_PARTIAL, 0, false, "", ""},
    {"EOF before any byte", "", "", false, TG_H1_ERROR, TG_H1_E_NOTHING, 0, false, "", ""},
};
#define NVECS (sizeof vecs / sizeof vecs[0])

/* mode and cut name the run in a failure's message */
static void check(const vec *v, const outcome *o, size_t n, const char *mode, size_t cut)
{
    size_t tl = strlen(v->tail);
#define EXPECT(cond)                                                                       \
    do {                                                                                   \
        if (!(cond))                                                                       \
            fail_msg("\"%s\" (%s, cut %zu): %s\n  lines %s\n  body %s", v->name, mode, cut,   \
                     #cond, o->lines, o->body);                                  \
    } while (0)
    EXPECT(o->res == v->res);
    EXPECT(o->err == v->err);
    EXPECT(!strcmp(o->lines, v->lines));
    EXPECT(!strcmp(o->body, v->body));
    if (v->res == TG_H1_DONE) {
        EXPECT(o->status == v->status);
        EXPECT(o->keep_alive == v->keep_alive);
        EXPECT(o->consumed == n - tl);  /* the tail is the next response's */
    }
#undef EXPECT
}

/* in + tail of vector v, malloc'd */
static char *input_of(const vec *v, size_t *n)
{
    size_t a = strlen(v->in), b = strlen(v->tail);
    char *s = malloc(a + b + 1);
    memcpy(s, v->in, a);
    memcpy(s + a, v->tail, b + 1);
    *n = a + b;
    return s;
}

static void run_vec(const vec *v, const size_t *cuts, size_t ncuts, bool pause, const char *mode,
                    size_t cut)
{
    size_t n;
    char *in = input_of(v, &n);
    outcome o;
    drive(in, n, v->no_body, cuts, ncuts, pause, &o);
    check(v, &o, n, mode, cut);
    outcome_free(&o);
    free(in);
}

static void test_whole(void **state)
{
    (void)state;
    for (size_t i = 0; i < NVECS; i++)
        run_vec(&vecs[i], NULL, 0, false, "whole", 0);
}

static void split_in_two(bool pause, const char *mode)
{
    for (size_t i = 0; i < NVECS; i++) {
        size_t n = strlen(vecs[i].in) + strlen(vecs[i].tail);
        for (size_t c = 0; c <= n; c++) {
            run_vec(&vecs[i], &c, 1, pause, mode, c);
        }
    }
}

static void byte_by_byte(bool pause, const char *mode)
{
    for (size_t i = 0; i < NVECS; i++) {
        size_t n = strlen(vecs[i].in) + strlen(vecs[i].tail);
        size_t *cuts = malloc((n + 1) * sizeof *cuts);
        for (size_t c = 0; c < n; c++)
            cuts[c] = c + 1;
        run_vec(&vecs[i], cuts, n, pause, mode, 0);
        free(cuts);
    }
}

static void test_split_in_two(void **state)
{
    (void)state;
    split_in_two(false, "two feeds");
}

static void test_byte_by_byte(void **state)
{
    (void)state;
    byte_by_byte(false, "byte by byte");
}

/* The body callback pauses every offer once: the same bytes come again. */
static void test_pause_everywhere(void **state)
{
    (void)state;
    for (size_t i = 0; i < NVECS; i++)
        run_vec(&vecs[i], NULL, 0, true, "whole, pausing", 0);
    split_in_two(true, "two feeds, pausing");
    byte_by_byte(true, "byte by byte, pausing");
}

/* ---- pausing and stopping in detail ---------------------------------- */

static void test_pause_content_length(void **state)
{
    (void)state;
    const char *head = OK200 "Content-Length: 5\r\n\r\n";
    char in[128];
    snprintf(in, sizeof in, "%shello%s", head, "HTTP/1.1 204 No Content\r\n\r\n");
    size_t n = strlen(in), used = 0;
    tg_h1 p;
    rec r = {.pause = true};
    tg_h1_init(&p, false);
    assert_int_equal(tg_h1_feed(&p, in, n, &used, &cbs, &r), TG_H1_PAUSED);
    assert_int_equal(used, strlen(head));       /* stopped before the body */
    assert_ptr_equal(r.off_at, in + used);
    assert_int_equal(r.offered.len, 5);
    assert_int_equal(r.body.len, 0);
    assert_true(tg_h1_head_done(&p));
    size_t used2 = 0;
    assert_int_equal(tg_h1_feed(&p, in + used, n - used, &used2, &cbs, &r), TG_H1_DONE);
    assert_int_equal(used2, 5);                 /* the body, not the next response */
    assert_int_equal(r.body.len, 5);
    assert_memory_equal(r.body.data, "hello", 5);
    assert_true(p.keep_alive);
    tg_buf_free(&r.lines);
    tg_buf_free(&r.body);
    tg_buf_free(&r.offered);
}

static void test_pause_second_chunk(void **state)
{
    (void)state;
    const char *in = OK200 TE_CHUNKED "\r\n3\r\nabc\r\n4;x\r\ndefg\r\n0\r\n\r\n";
    const char *second = strstr(in, "defg");
    size_t n = strlen(in), used = 0;
    tg_h1 p;
    rec r = {0};
    tg_h1_init(&p, false);
    /* the first chunk is taken, then pausing starts */
    size_t k = (size_t)(second - in) - 5;  /* up to the second chunk's size line "4;x\r\n" */
    assert_int_equal(tg_h1_feed(&p, in, k, &used, &cbs, &r), TG_H1_MORE);
    assert_int_equal(used, k);
    assert_int_equal(r.body.len, 3);
    r.pause = true;
    size_t off = used;
    assert_int_equal(tg_h1_feed(&p, in + off, n - off, &used, &cbs, &r), TG_H1_PAUSED);
    assert_ptr_equal(in + off + used, second);  /* stopped before "defg" */
    assert_int_equal(r.offered.len, 4);
    assert_memory_equal(r.offered.data, "defg", 4);
    off += used;
    assert_int_equal(tg_h1_feed(&p, in + off, n - off, &used, &cbs, &r), TG_H1_DONE);
    assert_int_equal(off + used, n);
    assert_int_equal(r.body.len, 7);
    assert_memory_equal(r.body.data, "abcdefg", 7);
    tg_buf_free(&r.lines);
    tg_buf_free(&r.body);
    tg_buf_free(&r.offered);
}

static void stop_with(const char *in, size_t ret, size_t calls)
{
    size_t used = 0;
    tg_h1 p;
    rec r = {.stop_with = ret + 1};
    tg_h1_init(&p, false);
    assert_int_equal(tg_h1_feed(&p, in, strlen(in), &used, &cbs, &r), TG_H1_STOPPED);
    assert_int_equal(r.body_calls, calls);
    tg_buf_free(&r.lines);
    tg_buf_free(&r.body);
}

static void test_stop(void **state)
{
    (void)state;
    stop_with(OK200 "Content-Length: 5\r\n\r\nhello", 0, 1);
    stop_with(OK200 "Content-Length: 5\r\n\r\nhello", 3, 1);  /* taking part is stopping */
    stop_with(OK200 TE_CHUNKED "\r\n5\r\nhello\r\n0\r\n\r\n", 0, 1);
    stop_with(OK200 "\r\nuntil close", 0, 1);
}

/* ---- bounds ------------------------------------------------------------ */

/* in fed in reads of `step` bytes under the *used contract */
static void drive_steps(const char *in, size_t n, size_t step, outcome *o)
{
    size_t nc = n / step + 1, *cuts = malloc(nc * sizeof *cuts);
    for (size_t i = 0; i < nc; i++)
        cuts[i] = (i + 1) * step < n ? (i + 1) * step : n;
    drive(in, n, false, cuts, nc, false, o);
    free(cuts);
}

static char *filled(const char *pre, size_t fill, const char *post, size_t *n)
{
    size_t a = strlen(pre), b = strlen(post);
    char *s = malloc(a + fill + b + 1);
    memcpy(s, pre, a);
    memset(s + a, 'a', fill);
    memcpy(s + a + fill, post, b + 1);
    *n = a + fill + b;
    return s;
}

static void test_line_bound(void **state)
{
    (void)state;
    outcome o;
    size_t n;
    /* a field of exactly TG_H1_MAX_LINE bytes, its CRLF included, passes */
    const char *pre = OK200 "X-Big: ";
    char *in = filled(pre, TG_H1_MAX_LINE - 7 - 2, "\r\nContent-Length: 2\r\n\r\nok", &n);
    drive_steps(in, n, 4096, &o);
    assert_int_equal(o.res, TG_H1_DONE);
    assert_string_equal(o.body, "ok");
    assert_int_equal(strlen(o.lines), n - 2 + 2 * 4);
    outcome_free(&o);
    free(in);
    /* one more byte is too large */
    in = filled(pre, TG_H1_MAX_LINE - 7 - 1, "\r\nContent-Length: 2\r\n\r\nok", &n);
    drive_steps(in, n, 4096, &o);
    assert_int_equal(o.res, TG_H1_ERROR);
    assert_int_equal(o.err, TG_H1_E_TOO_LARGE);
    assert_string_equal(o.lines, L_OK200);
    outcome_free(&o);
    free(in);
    /* a line that never ends: refused once the caller holds more than the
     * bound, so the caller never holds more than the bound and one read */
    in = filled(pre, 2 * TG_H1_MAX_LINE, "", &n);
    drive_steps(in, n, 4096, &o);
    assert_int_equal(o.res, TG_H1_ERROR);
    assert_int_equal(o.err, TG_H1_E_TOO_LARGE);
    assert_true(o.pending_max <= TG_H1_MAX_LINE + 4096);
    outcome_free(&o);
    free(in);
    /* the same in one read */
    in = filled(pre, TG_H1_MAX_LINE, "", &n);
    drive(in, n, false, NULL, 0, false, &o);
    assert_int_equal(o.res, TG_H1_ERROR);
    assert_int_equal(o.err, TG_H1_E_TOO_LARGE);
    outcome_free(&o);
    free(in);
    /* and a chunk-size line whose extension never ends */
    in = filled(OK200 TE_CHUNKED "\r\n5;", 2 * TG_H1_MAX_LINE, "", &n);
    drive_steps(in, n, 1000, &o);
    assert_int_equal(o.res, TG_H1_ERROR);
    assert_int_equal(o.err, TG_H1_E_TOO_LARGE);
    assert_true(o.pending_max <= TG_H1_MAX_LINE + 1000);
    outcome_free(&o);
    free(in);
}

/* A head of `total` bytes: the status line, small fields, Content-Length: 0
 * and the empty line. */
static char *head_of(size_t total, const char *after, size_t *n)
{
    tg_buf b = {0};
    const char *end = "Content-Length: 0\r\n\r\n";
    tg_buf_puts(&b, OK200);
    size_t fixed = strlen(end), field = strlen("X-F: 0123456789\r\n");
    while (b.len + fixed + field * 2 <= total)
        tg_buf_puts(&b, "X-F: 0123456789\r\n");
    /* one last field of the bytes that remain */
    size_t rest = total - b.len - fixed;
    tg_buf_puts(&b, "X-L: ");
    for (size_t i = 0; i < rest - 7; i++)
        tg_buf_append(&b, "b", 1);
    tg_buf_puts(&b, "\r\n");
    tg_buf_puts(&b, end);
    assert_int_equal(b.len, total);
    tg_buf_puts(&b, after);
    return tg_buf_steal(&b, n);
}

static void test_head_bound(void **state)
{
    (void)state;
    outcome o;
    size_t n;
    char *in = head_of(TG_H1_MAX_HEAD, "next", &n);
    drive_steps(in, n, 8192, &o);
    assert_int_equal(o.res, TG_H1_DONE);
    assert_int_equal(o.consumed, TG_H1_MAX_HEAD);
    outcome_free(&o);
    free(in);
    in = head_of(TG_H1_MAX_HEAD + 1, "", &n);
    drive_steps(in, n, 8192, &o);
    assert_int_equal(o.res, TG_H1_ERROR);
    assert_int_equal(o.err, TG_H1_E_TOO_LARGE);
    outcome_free(&o);
    free(in);
    /* the trailers have the same bound */
    tg_buf b = {0};
    tg_buf_puts(&b, OK200 TE_CHUNKED "\r\n2\r\nok\r\n0\r\n");
    while (b.len < TG_H1_MAX_HEAD * 2)
        tg_buf_puts(&b, "X-T: 0123456789\r\n");
    tg_buf_puts(&b, "\r\n");
    drive_steps(b.data, b.len, 8192, &o);
    assert_int_equal(o.res, TG_H1_ERROR);
    assert_int_equal(o.err, TG_H1_E_TOO_LARGE);
    assert_string_equal(o.body, "ok");
    outcome_free(&o);
    tg_buf_free(&b);
    /* interim heads without end count toward the same bound */
    tg_buf_puts(&b, "");
    while (b.len < TG_H1_MAX_HEAD * 2)
        tg_buf_puts(&b, "HTTP/1.1 100 Continue\r\n\r\n");
    tg_buf_puts(&b, OK200 "Content-Length: 2\r\n\r\nok");
    drive_steps(b.data, b.len, 8192, &o);
    assert_int_equal(o.res, TG_H1_ERROR);
    assert_int_equal(o.err, TG_H1_E_TOO_LARGE);
    outcome_free(&o);
    tg_buf_free(&b);
}

/* ---- the head's state --------------------------------------------------- */

static void test_head_done(void **state)
{
    (void)state;
    const char *parts[] = {"HTTP/1.1 100 Continue\r\n", "\r\n", OK200, "Content-Length: 3\r\n",
                           "\r\n", "abc"};
    const bool done_after[] = {false, false, false, false, true, true};
    const tg_h1_result res[] = {TG_H1_MORE, TG_H1_MORE, TG_H1_MORE, TG_H1_MORE, TG_H1_MORE,
                                TG_H1_DONE};
    tg_h1 p;
    rec r = {0};
    tg_h1_init(&p, false);
    assert_false(tg_h1_head_done(&p));
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        size_t used = 0;
        assert_int_equal(tg_h1_feed(&p, parts[i], strlen(parts[i]), &used, &cbs, &r), res[i]);
        assert_int_equal(used, strlen(parts[i]));
        assert_int_equal(tg_h1_head_done(&p), done_after[i]);
    }
    assert_int_equal(p.status, 200);
    assert_int_equal(p.minor, 1);
    /* nothing more is taken once the response is whole */
    size_t used = 1;
    assert_int_equal(tg_h1_feed(&p, "HTTP", 4, &used, &cbs, &r), TG_H1_DONE);
    assert_int_equal(used, 0);
    assert_int_equal(tg_h1_eof(&p), TG_H1_DONE);
    tg_buf_free(&r.lines);
    tg_buf_free(&r.body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole),
        cmocka_unit_test(test_split_in_two),
        cmocka_unit_test(test_byte_by_byte),
        cmocka_unit_test(test_pause_everywhere),
        cmocka_unit_test(test_pause_content_length),
        cmocka_unit_test(test_pause_second_chunk),
        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_line_bound),
        cmocka_unit_test(test_head_bound),
        cmocka_unit_test(test_head_done),
    };
    return cmocka_run_group_tests_name("h1", tests, NULL, NULL);
}
