/* wordvec.c -- look-ups in the word vector table (see wordvec.h).
 *
 * The table is read in place where the linker put it: a header, fixed-size
 * entries sorted by stem (one binary search a look-up), then the int8
 * vectors and the stems. Every read checks the header first, so a table
 * that is not one (a truncated file) only makes the vectors find nothing. */
#include "discovery/wordvec.h"

#include <math.h>
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

/* A soft match scans a catalog's whole vocabulary, so this loop is most of
 * a search's time: GCC's -O2 cost model leaves it scalar, and vectorized it
 * runs several times faster (clang vectorizes it at -O2 as it is).
 * |x·y| <= 1024 * 127 * 127 fits. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("vect-cost-model=dynamic")))
#endif
int32_t tg_wv_dot8(const int8_t *x, const int8_t *y, uint32_t d)
{
    int32_t dot = 0;
    for (uint32_t i = 0; i < d; i++)
        dot += (int32_t)x[i] * (int32_t)y[i];
    return dot;
}

float tg_wv_quantize(const float *v, uint32_t d, int8_t *out)
{
    float m = 0;
    double s = 0;
    for (uint32_t i = 0; i < d; i++)
        m = fabsf(v[i]) > m ? fabsf(v[i]) : m;
    for (uint32_t i = 0; i < d; i++) {
        out[i] = m > 0 ? (int8_t)lrintf(v[i] * 127.0f / m) : 0;
        s += (double)out[i] * out[i];
    }
    return (float)sqrt(s);
}

void tg_wv_cos_rows(uint32_t a, const uint32_t *rows, size_t n, float *out)
{
    uint32_t c, d;
    size_t s;
    float na = 0;
    const int8_t *x = shape(&c, &d, &s) && a < c ? tg_wv_vec(a, &na) : NULL;
    const unsigned char *entries = tg_wordvec_bin + HEAD;
    const int8_t *vecs = (const int8_t *)(tg_wordvec_bin + HEAD + (size_t)c * ENTRY);
    for (size_t k = 0; k < n; k++) {
        float nb;
        if (!x || na <= 0 || rows[k] >= c) {
            out[k] = -2;
            continue;
        }
        memcpy(&nb, entries + (size_t)rows[k] * ENTRY + 8, sizeof nb);
        out[k] = nb > 0 ? (float)tg_wv_dot8(x, vecs + (size_t)rows[k] * d, d) / (na * nb) : 0;
    }
}

double tg_wv_cos(uint32_t a, uint32_t b)
{
    uint32_t c, d;
    size_t s;
    float na, nb;
    if (!shape(&c, &d, &s) || a >= c || b >= c)
        return 0;
    const int8_t *x = tg_wv_vec(a, &na), *y = tg_wv_vec(b, &nb);
    return na > 0 && nb > 0 ? (double)tg_wv_dot8(x, y, d) / ((double)na * nb) : 0;
}
