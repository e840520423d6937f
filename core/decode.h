/* decode.h -- a request body's content coding undone (decode.c): gzip,
 * deflate and zstd, as agents send them (Codex's zstd bodies to the
 * Responses API), one coding or several in the order applied.
 */
#ifndef TG_DECODE_H
#define TG_DECODE_H

#include <stddef.h>

#include "core/buf.h"

enum {
    TG_DECODE_OK = 0,
    TG_DECODE_UNKNOWN = -1,  /* a coding toolgate does not know */
    TG_DECODE_CORRUPT = -2,  /* the bytes are not that coding */
    TG_DECODE_TOO_LARGE = -3 /* the decoded body would pass max */
};

/* Decodes the n bytes at in, sent with Content-Encoding `codings` (a
 * comma-separated list, "identity" ignored), into out (appended), at most
 * max bytes. Returns one of the values above; out holds the decoded body
 * only for TG_DECODE_OK. */
int tg_decode_body(const char *codings, const char *in, size_t n, size_t max, tg_buf *out);

#endif
