/* h1.h -- an HTTP/1.1 response parser for the upstream's answers
 * (proxy/h1.c): bytes in, header lines and body bytes out, no sockets.
 *
 * The caller owns the input: tg_h1_feed takes what it can and says how
 * much; an incomplete line stays with the caller, who feeds it again with
 * the next read in front (so the parser holds no copy of anything, and the
 * caller's buffer is bounded by TG_H1_MAX_LINE plus one read). Header lines
 * go out as they came, line ending included, in libcurl's
 * CURLOPT_HEADERFUNCTION shape: the status line, each field, the empty line
 * ending the head (also for 1xx interim heads, which are skipped over).
 * Body bytes go out decoded from their framing (Content-Length, chunked,
 * or until the connection closes); a content coding is not decoded: a
 * head naming one other than identity ends the parse (TG_H1_E_CODING),
 * since toolgate's own client asks for none.
 */
#ifndef TG_H1_H
#define TG_H1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TG_H1_MAX_LINE (100u << 10)  /* one header line (libcurl's bound) */
#define TG_H1_MAX_HEAD (300u << 10)  /* a head, or the trailers (libcurl's) */
#define TG_H1_PAUSE ((size_t)-1)     /* body callback: not taken, come again */

typedef struct {
    /* one header line as it came (CRLF or LF included) */
    void (*line)(void *ud, const char *line, size_t n);
    /* body bytes: returns n when taken, 0 to stop the parse
     * (TG_H1_STOPPED), TG_H1_PAUSE to leave them (TG_H1_PAUSED: the
     * next tg_h1_feed offers the same bytes again) */
    size_t (*body)(void *ud, const char *data, size_t n);
} tg_h1_cb;

typedef enum {
    TG_H1_MORE,     /* everything offered was taken but a line's end; feed more */
    TG_H1_DONE,     /* the response is whole */
    TG_H1_PAUSED,   /* the body callback paused */
    TG_H1_STOPPED,  /* the body callback stopped it */
    TG_H1_ERROR,    /* see err */
} tg_h1_result;

typedef enum {
    TG_H1_E_NONE,
    TG_H1_E_SYNTAX,    /* not HTTP/1.x, a bad status line, field or chunk size */
    TG_H1_E_TOO_LARGE, /* a line or a head past its bound */
    TG_H1_E_CODING,    /* a Content-Encoding toolgate did not ask for */
    TG_H1_E_PARTIAL,   /* the connection closed before the body's end */
    TG_H1_E_NOTHING,   /* the connection closed before any byte */
} tg_h1_error;

typedef struct tg_h1 {
    int phase;           /* h1.c's P_* */
    int status;          /* of the head being read, then of the final one */
    int minor;           /* HTTP/1.minor of the final head */
    bool keep_alive;     /* the connection may carry another request after this */
    bool chunked;
    bool has_length;
    bool seen_any;       /* any byte came */
    bool no_body;        /* the request was a HEAD */
    uint64_t left;       /* of the Content-Length, or of the chunk */
    size_t head_bytes;   /* of the head or trailers being read */
    int flags;           /* h1.c's F_*: what the head's fields said so far */
    tg_h1_error err;
} tg_h1;

/* A parser for one response; no_body for the answer to a HEAD. */
void tg_h1_init(tg_h1 *p, bool no_body);

/* Parses buf[0..n): *used is set to the bytes taken (the rest, an
 * incomplete line or what follows a whole response, stays with the
 * caller). */
tg_h1_result tg_h1_feed(tg_h1 *p, const char *buf, size_t n, size_t *used, const tg_h1_cb *cb,
                        void *ud);

/* The connection closed: TG_H1_DONE when that ends the body (no length
 * given), else TG_H1_ERROR (E_PARTIAL, or E_NOTHING before any byte). */
tg_h1_result tg_h1_eof(tg_h1 *p);

/* The final head came (the body's framing is known). */
static inline bool tg_h1_head_done(const tg_h1 *p)
{
    return p->phase >= 2;
}

#endif
