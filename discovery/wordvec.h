/* wordvec.h -- word vectors compiled into toolgate, for search_tools.
 *
 * Internal to discovery/. A read-only table (discovery/wordvec.bin, written
 * by discovery/wordvec_gen.py from GloVe's 100-dimension vectors, linked in
 * by discovery/wordvec_data.c): for a word's Snowball stem, the int8
 * direction of its unit vector. Words that mean alike point alike
 * ("elevation" and "altitude", "reaction" and "emoji"), so a query and a
 * tool that share no word can still meet. Immutable, so any thread may read
 * it; the layout is described in wordvec_gen.py.
 */
#ifndef TG_DISC_WORDVEC_H
#define TG_DISC_WORDVEC_H

#include <stddef.h>
#include <stdint.h>

#define TG_WV_NONE UINT32_MAX

typedef struct tg_wv_info {
    uint32_t count, dims, fnv;  /* stems, dimensions, the header's checksum */
    size_t bytes;               /* the whole table */
} tg_wv_info;

/* The table's shape; 0 when the embedded copy is not a well-formed table
 * (then every look-up finds nothing and search_tools ranks without it). */
int tg_wv_info_get(tg_wv_info *out);

/* FNV-1a 32 over the table's body, to compare with info.fnv (tests). */
uint32_t tg_wv_checksum(void);

/* The row of `stem`, or TG_WV_NONE. One binary search. */
uint32_t tg_wv_find(const char *stem);

/* Row `row`'s int8 components (dims of them) and their norm. */
const int8_t *tg_wv_vec(uint32_t row, float *norm);

/* The stem of row `row` (tests, the eval). */
const char *tg_wv_stem(uint32_t row);

/* Cosine of two rows (0 when either is TG_WV_NONE). */
double tg_wv_cos(uint32_t a, uint32_t b);

/* The dot product of two int8 vectors of d components (vectorized). */
int32_t tg_wv_dot8(const int8_t *x, const int8_t *y, uint32_t d);

/* v[0..d) as int8 into out[] (its largest component to 127); returns the
 * norm of out (0 for a zero vector). */
float tg_wv_quantize(const float *v, uint32_t d, int8_t *out);

/* The cosines of row `a` with each of rows[0..n) into out[] (-2 for
 * TG_WV_NONE): one check of the table for a whole vocabulary. */
void tg_wv_cos_rows(uint32_t a, const uint32_t *rows, size_t n, float *out);

#endif
