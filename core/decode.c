/* decode.c -- a request body's content coding undone.
 *
 * Codex (codex-rs http-client, request compression) and pi's Codex
 * Responses path send large /v1/responses bodies zstd-compressed with
 * Content-Encoding: zstd, and the APIs they talk to accept them; gateways
 * that read the body refused them (zyycn/codex-proxy-rs#66,
 * earendil-works/pi#8517). toolgate reads and rewrites every body, so it
 * decodes first: zstd with libzstd, gzip and deflate (zlib-wrapped or raw)
 * with zlib. Several codings are undone last first (RFC 9110 8.4).
 *
 * Bound: the decoded body is at most max bytes (the server's max_body),
 * checked as it grows, so a small bomb costs no more memory than the
 * largest body toolgate takes plain.
 */
#include "core/decode.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include <zlib.h>
#include <zstd.h>

#define CHUNK (64u << 10)
#define MAX_CODINGS 4

static int inflate_all(const char *in, size_t n, size_t max, tg_buf *out, bool gzip)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    /* gzip: its header; deflate: zlib's header, or raw when that fails */
    int bits = gzip ? 16 + MAX_WBITS : MAX_WBITS;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (inflateInit2(&z, bits) != Z_OK)
            return TG_DECODE_CORRUPT;
        z.next_in = (Bytef *)in;
        z.avail_in = (uInt)n;
        size_t start = out->len;
        int rc = Z_OK;
        while (rc == Z_OK) {
            tg_buf_reserve(out, CHUNK);
            z.next_out = (Bytef *)out->data + out->len;
            z.avail_out = CHUNK;
            rc = inflate(&z, Z_NO_FLUSH);
            out->len += CHUNK - z.avail_out;
            if (out->len - start > max) {
                inflateEnd(&z);
                return TG_DECODE_TOO_LARGE;
            }
            if (rc == Z_BUF_ERROR && z.avail_in == 0)
                break;  /* the input ended before the stream did */
        }
        inflateEnd(&z);
        if (rc == Z_STREAM_END)
            return TG_DECODE_OK;
        out->len = start;
        if (gzip || attempt)
            return TG_DECODE_CORRUPT;
        bits = -MAX_WBITS;  /* deflate sent raw, as some clients do */
        memset(&z, 0, sizeof z);
    }
    return TG_DECODE_CORRUPT;
}

static int unzstd(const char *in, size_t n, size_t max, tg_buf *out)
{
    ZSTD_DCtx *d = ZSTD_createDCtx();
    if (!d)
        return TG_DECODE_CORRUPT;
    ZSTD_inBuffer ib = {in, n, 0};
    size_t start = out->len, rc = 1;
    while (ib.pos < ib.size || rc) {
        tg_buf_reserve(out, CHUNK);
        ZSTD_outBuffer ob = {out->data + out->len, CHUNK, 0};
        size_t before = ib.pos;
        rc = ZSTD_decompressStream(d, &ob, &ib);
        out->len += ob.pos;
        if (ZSTD_isError(rc)) {
            ZSTD_freeDCtx(d);
            out->len = start;
            return TG_DECODE_CORRUPT;
        }
        if (out->len - start > max) {
            ZSTD_freeDCtx(d);
            return TG_DECODE_TOO_LARGE;
        }
        if (!ob.pos && ib.pos == before && ib.pos == ib.size)
            break;  /* no progress: the frame is cut short */
    }
    ZSTD_freeDCtx(d);
    if (rc) {  /* the last frame is not whole */
        out->len = start;
        return TG_DECODE_CORRUPT;
    }
    return TG_DECODE_OK;
}

static int one(const char *coding, size_t len, const char *in, size_t n, size_t max, tg_buf *out)
{
    if (len == 4 && !strncasecmp(coding, "zstd", 4))
        return unzstd(in, n, max, out);
    if ((len == 4 && !strncasecmp(coding, "gzip", 4)) || (len == 6 && !strncasecmp(coding, "x-gzip", 6)))
        return inflate_all(in, n, max, out, true);
    if (len == 7 && !strncasecmp(coding, "deflate", 7))
        return inflate_all(in, n, max, out, false);
    return TG_DECODE_UNKNOWN;
}

int tg_decode_body(const char *codings, const char *in, size_t n, size_t max, tg_buf *out)
{
    const char *at[MAX_CODINGS];
    size_t len[MAX_CODINGS], k = 0;
    for (const char *p = codings; p && *p;) {
        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        size_t l = 0;
        while (p[l] && p[l] != ',' && !isspace((unsigned char)p[l]))
            l++;
        if (l && !(l == 8 && !strncasecmp(p, "identity", 8))) {
            if (k == MAX_CODINGS)
                return TG_DECODE_UNKNOWN;
            at[k] = p;
            len[k++] = l;
        }
        p += l;
    }
    if (!k) {
        tg_buf_append(out, in, n);
        return TG_DECODE_OK;
    }
    tg_buf cur = {0};  /* the previous step's output, the next one's input */
    const char *src = in;
    size_t srcn = n;
    int rc = TG_DECODE_OK;
    while (k-- > 0 && rc == TG_DECODE_OK) {
        tg_buf next = {0};
        rc = one(at[k], len[k], src, srcn, max, k ? &next : out);
        tg_buf_free(&cur);
        cur = next;
        src = cur.data ? cur.data : "";
        srcn = cur.len;
    }
    tg_buf_free(&cur);
    return rc;
}
