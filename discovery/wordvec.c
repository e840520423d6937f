/* wordvec.c -- look-ups in the word vector table (see wordvec.h).
 *
 * The table is read in place where the linker put it: a header, fixed-size
 * entries sorted by stem (one binary search a look-up), then the int8
 * vectors and the stems. Every read checks the header first, so a table
 * that is not one (a truncated file) only makes the vectors find nothing. */
#include "discovery/wordvec.h"

#include <string.h>

extern const unsigned char tg_wordvec_bin[];
extern const uint64_t tg_wordvec_bin_size;

#define HEAD 24  /* "TGWV", version, count, dims, strings bytes, fnv */
#define ENTRY 12 /* u32 str, u32 rank, f32 norm */

static uint32_t u32_at(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The layout, checked once per call (a few compares): 0 when malformed. */
static int shape(uint32_t *count, uint32_t *dims, size_t *strings_at)
{
    size_t size = (size_t)tg_wordvec_bin_size;
    const unsigned char *b = tg_wordvec_bin;
    if (size < HEAD || memcmp(b, "TGWV", 4) || u32_at(b + 4) != 1)
        return 0;
    uint64_t c = u32_at(b + 8), d = u32_at(b + 12), s = u32_at(b + 16);
    if (!c || !d || d > 1024 || HEAD + c * (ENTRY + d) + s != size || tg_wordvec_bin[size - 1] != 0)
        return 0;
    *count = (uint32_t)c;
    *dims = (uint32_t)d;
    *strings_at = HEAD + (size_t)(c * (ENTRY + d));
    return 1;
}

int tg_wv_info_get(tg_wv_info *out)
{
    uint32_t c, d;
    size_t s;
    memset(out, 0, sizeof *out);
    if (!shape(&c, &d, &s))
        return 0;
    out->count = c;
    out->dims = d;
    out->fnv = u32_at(tg_wordvec_bin + 20);
    out->bytes = (size_t)tg_wordvec_bin_size;
    return 1;
}

uint32_t tg_wv_checksum(void)
{
    uint32_t h = 0x811C9DC5u;
    for (const unsigned char *p = tg_wordvec_bin + HEAD; p < tg_wordvec_bin + tg_wordvec_bin_size; p++)
        h = (h ^ *p) * 0x01000193u;
    return h;
}

const char *tg_wv_stem(uint32_t row)
{
    uint32_t c, d;
    size_t s;
    if (!shape(&c, &d, &s) || row >= c)
        return NULL;
    uint32_t off = u32_at(tg_wordvec_bin + HEAD + (size_t)row * ENTRY);
    return s + off < (size_t)tg_wordvec_bin_size ?
               (const char *)tg_wordvec_bin + s + off : NULL;
}

uint32_t tg_wv_find(const char *stem)
{
    uint32_t c, d;
    size_t s;
    if (!stem || !shape(&c, &d, &s))
        return TG_WV_NONE;
    size_t lo = 0, hi = c, lim = (size_t)tg_wordvec_bin_size;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        size_t off = s + u32_at(tg_wordvec_bin + HEAD + mid * ENTRY);
        int cmp = off < lim ? strcmp((const char *)tg_wordvec_bin + off, stem) : 1;
        if (cmp == 0)
            return (uint32_t)mid;
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return TG_WV_NONE;
}

const int8_t *tg_wv_vec(uint32_t row, float *norm)
{
    uint32_t c, d;
    size_t s;
    if (!shape(&c, &d, &s) || row >= c)
        return NULL;
    if (norm)
        memcpy(norm, tg_wordvec_bin + HEAD + (size_t)row * ENTRY + 8, sizeof *norm);
    return (const int8_t *)(tg_wordvec_bin + HEAD + (size_t)c * ENTRY + (size_t)row * d);
}

double tg_wv_cos(uint32_t a, uint32_t b)
{
    uint32_t c, d;
    size_t s;
    float na, nb;
    if (!shape(&c, &d, &s) || a >= c || b >= c)
        return 0;
    const int8_t *x = tg_wv_vec(a, &na), *y = tg_wv_vec(b, &nb);
    long dot = 0;
    for (uint32_t i = 0; i < d; i++)
        dot += (long)x[i] * y[i];
    return na > 0 && nb > 0 ? (double)dot / ((double)na * nb) : 0;
}
