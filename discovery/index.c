/* index.c -- a small BM25F ranker for tool catalogs.
 *
 * A tool is a document with four fields: its name (split on camelCase,
 * snake_case, dots and dashes), its description, its parameter names and
 * their descriptions (with the values of their enums). Words are
 * lower-cased, stop words dropped and stemmed
 * with Snowball's English stemmer (libstemmer), so "deleting", "deleted"
 * and "delete" meet. Each field keeps its own term counts and lengths, and
 * the field weights are applied at search time (proper BM25F: every field
 * normalized by its own mean length), so that the eval can fit them
 * (tg_dindex_params) without rebuilding an index. Queries are written the
 * way a user talks ("show me", "get rid of"), so query words also pull in a
 * few generic synonyms (list/show/get, create/add/new, ...) and the terms
 * their stems begin or are begun by (scraper/scrape) at a lower weight,
 * and a word the catalog lacks pulls in the words WordNet defines it with
 * (discovery/lexicon.h) and the catalog's words nearest it by word vector
 * (discovery/wordvec.h); a second stage lifts, among the first 50, the
 * tools that cover more of the written words, and the cosine between the
 * query's mean word vector and each tool's is added last. A tool's side is
 * expanded too: its name's words' WordNet definitions and the synonyms
 * of their first verb sense match at a lower weight, and a name the query writes as it is (unstemmed) goes a little
 * up among names the stemmer makes alike. Nothing here
 * knows any particular tool.
 *
 * Layout (all in one json object, shareable through the cache):
 *   "n": docs, "avg": packed float[F_COUNT] mean field lengths,
 *   "dl": packed float[n][F_COUNT] field lengths,
 *   "t": {term: packed posting[] = {uint32 doc; float tf[F_COUNT]}}  (docs ascending),
 *   "sv", "so": the terms sorted (NUL-ended, one after another) and packed
 *   uint32 offsets of each, "syn": the synonym groups stemmed,
 *   "wv", "wn", "wm", "wr": the word vectors' (word_vectors()),
 *   "x", "xs", "nr", "va": what the tools' names give (store_name_side())
 * Packed data are json strings made with json_stringn_nocheck: binary,
 * never dumped, and malloc-aligned, so they are read in place.
 */
#include "discovery/index.h"
#include "discovery/groups.h"
#include "discovery/lexicon.h"
#include "discovery/wordvec.h"
#include "core/alloc.h"
#include "core/tg.h"

#include <ctype.h>
#include <libstemmer.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TOK_MAX 48          /* longer words are cut; they are ids, not words */
#define DESC_TOKENS_MAX 240 /* the head of a long description says what it is */

enum { F_NAME = TG_DF_NAME, F_DESC, F_PARAM, F_PDESC, F_COUNT = TG_DF_COUNT };

const tg_dindex_params tg_dindex_defaults = {
    .w = { 1.5, 1.0, 2.0, 0.4 },
    .k1 = 1.2,
    .b = 0.9,
    .name_bonus = 0.5,
    .syn_weight = 0.45,
    .verb_weight = 0.8,
    .synonyms = 1,
    .joins = 1,
    .coverage = 0.0,
    .name_cover = 0.25,
    .prefix_weight = 0.2,
    .rerank = 0.5,
    .lex_weight = 0.45,
    .lex_kinds = TG_LEX_GLOSS,
    .lex_max = 8,
    .vec_weight = 0.1,
    .vec_min = 0.3,
    .soft_weight = 0.3,
    .soft_min = 0.5,
    .soft_max = 4,
    .exact_w = 0.05,
    .exp_w = 0.2,
    .exp_syn_w = 0.6,
    .ask_pen = 0.6,
};

typedef struct posting {
    uint32_t doc;
    float tf[F_COUNT];  /* occurrences per field */
} posting;

/* ---- words ---------------------------------------------------------- */

/* Sorted (bsearch): this runs for every word of 1,000 tool descriptions. */
static const char *const stop_words[] = {
    "a", "about", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "by",
    "can", "could", "currently", "do", "does", "e", "eg", "etc", "for", "from", "g", "has",
    "have", "here", "how", "i", "if", "im", "in", "into", "is", "it", "its", "just", "let",
    "lets", "like", "me", "my", "need", "now", "of", "on", "or", "our", "out", "please",
    "should", "so", "some", "than", "that", "the", "their", "them", "then", "there", "these",
    "they", "this", "those", "to", "up", "us", "via", "want", "was", "we", "were", "what",
    "when", "where", "which", "who", "will", "with", "would", "you", "your",
};

static int is_stop(const char *w)
{
    return TG_WORD_LISTED(stop_words, w);
}

/* Words go through Snowball's English (Porter2) stemmer: it is the
 * stemmer IR systems use, handles -ational/-ization/-ness and irregular
 * plurals a hand-written suffix list missed, and its tables are kept by
 * Snowball upstream. One stemmer object per build or search (it holds a
 * buffer, so it is never shared between threads). */
typedef struct words_ctx {
    struct sb_stemmer *st;
    json_t *memo;  /* word -> stem, when set: a catalog says "the" 10,000 times */
    void (*fn)(const char *word, void *ud);
    void *ud;
} words_ctx;

static void stem_into(struct sb_stemmer *st, char *w)
{
    size_t n = strlen(w);
    const sb_symbol *r = st ? sb_stemmer_stem(st, (const sb_symbol *)w, (int)n) : NULL;
    if (!r)
        return;
    int len = sb_stemmer_length(st);
    if (len > 0 && (size_t)len <= n) {
        memcpy(w, r, (size_t)len);
        w[len] = '\0';
    }
}

static void emit_piece(const char *p, size_t n, words_ctx *wc)
{
    char w[TOK_MAX + 1];
    if (n > TOK_MAX)
        n = TOK_MAX;
    for (size_t i = 0; i < n; i++)
        w[i] = (char)tolower((unsigned char)p[i]);
    w[n] = '\0';
    if (n < 2 || is_stop(w))
        return;
    json_t *m = wc->memo ? json_object_get(wc->memo, w) : NULL;
    if (m) {
        wc->fn(json_string_value(m), wc->ud);
        return;
    }
    char raw[TOK_MAX + 1];
    memcpy(raw, w, n + 1);
    stem_into(wc->st, w);
    if (wc->memo)
        json_object_set_new_nocheck(wc->memo, raw, json_string_nocheck(w));
    wc->fn(w, wc->ud);
}

/* Split one alphanumeric run on camelCase: "listPullRequests" -> list, Pull,
 * Requests; "HTTPServer" -> HTTP, Server; digits stay with their letters. */
static void split_camel(const char *s, size_t n, words_ctx *wc)
{
    size_t start = 0, pieces = 0;
    for (size_t i = 1; i < n; i++) {
        int lo_up = islower((unsigned char)s[i - 1]) && isupper((unsigned char)s[i]);
        int up_up_lo = i + 1 < n && isupper((unsigned char)s[i - 1]) &&
                       isupper((unsigned char)s[i]) && islower((unsigned char)s[i + 1]);
        if (lo_up || up_up_lo) {
            emit_piece(s + start, i - start, wc);
            start = i;
            pieces++;
        }
    }
    emit_piece(s + start, n - start, wc);
    /* brands are camelCase too: "GitHub" must also meet "github" */
    if (pieces >= 1 && pieces <= 2)
        emit_piece(s, n, wc);
}

/* Every non-alphanumeric byte (space, _, -, ., /, UTF-8) separates words. */
static void words(const char *s, words_ctx *wc)
{
    if (!s)
        return;
    while (*s) {
        while (*s && !isalnum((unsigned char)*s))
            s++;
        const char *b = s;
        while (*s && isalnum((unsigned char)*s))
            s++;
        if (s > b)
            split_camel(b, (size_t)(s - b), wc);
    }
}

/* ---- building -------------------------------------------------------- */

typedef struct builder {
    words_ctx wc;
    json_t *vocab;      /* term -> id (integer) */
    float *tf;          /* per term id and field, counts in the current doc */
    uint32_t *seen;     /* per term id, 1 + last doc that touched it */
    size_t cap;         /* terms tf/seen have room for */
    uint32_t *touched;  /* term ids of the current doc */
    size_t ntouched, touched_cap;
    uint32_t doc;
    int field;          /* being read */
    unsigned budget;    /* words of the field still counted */
    float dl[F_COUNT];  /* field lengths of the current doc */
    /* collected (term, doc, tf[]) */
    struct trip { uint32_t term; posting p; } *trips;
    size_t ntrips, trips_cap;
} builder;

static void grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap * 2 : 256;
    while (c < need)
        c *= 2;
    *p = tg_realloc(*p, c * elem);
    *cap = c;
}

static void grow_terms(builder *b, size_t id)
{
    if (id < b->cap)
        return;
    size_t c = b->cap ? b->cap * 2 : 256;
    while (c <= id)
        c *= 2;
    b->tf = tg_realloc(b->tf, c * F_COUNT * sizeof *b->tf);
    b->seen = tg_realloc(b->seen, c * sizeof *b->seen);
    memset(b->seen + b->cap, 0, (c - b->cap) * sizeof *b->seen);
    b->cap = c;
}

static void add_word(const char *w, void *ud)
{
    builder *b = ud;
    if (b->budget == 0)
        return;
    b->budget--;
    json_t *idv = json_object_get(b->vocab, w);
    size_t id;
    if (idv) {
        id = (size_t)json_integer_value(idv);
    } else {
        id = json_object_size(b->vocab);
        json_object_set_new(b->vocab, w, json_integer((json_int_t)id));
    }
    grow_terms(b, id);
    if (b->seen[id] != b->doc + 1) {
        b->seen[id] = b->doc + 1;
        memset(b->tf + id * F_COUNT, 0, F_COUNT * sizeof *b->tf);
        grow((void **)&b->touched, &b->touched_cap, b->ntouched + 1, sizeof *b->touched);
        b->touched[b->ntouched++] = (uint32_t)id;
    }
    b->tf[id * F_COUNT + (size_t)b->field] += 1.0f;
    b->dl[b->field] += 1.0f;
}

static void read_field(builder *b, int field, const char *text, unsigned budget)
{
    b->field = field;
    b->budget = budget;
    words(text, &b->wc);
}

/* The values a parameter takes ("open", "closed", "merged") say what the
 * tool works on: counted with the parameter descriptions, 16 at most. */
static void read_enum(builder *b, json_t *values)
{
    for (size_t i = 0; i < json_array_size(values) && i < 16; i++)
        read_field(b, F_PDESC, json_string_value(json_array_get(values, i)), 4);
}

/* Parameter names and descriptions, one level into nested objects/arrays:
 * deeper levels are detail a user does not phrase a task in. */
static void read_params(builder *b, json_t *schema, int depth)
{
    json_t *props = json_object_get(schema, "properties");
    const char *key;
    json_t *p;
    if (!json_is_object(props))
        return;
    json_object_foreach(props, key, p) {
        read_field(b, F_PARAM, key, 64);
        read_field(b, F_PDESC, json_string_value(json_object_get(p, "description")), 48);
        read_enum(b, json_object_get(p, "enum"));
        if (depth < 1) {
            read_params(b, p, depth + 1);
            read_params(b, json_object_get(p, "items"), depth + 1);
        }
    }
}

static void read_tool(builder *b, json_t *tool)
{
    json_t *fn = json_object_get(tool, "function");
    if (!json_is_object(fn))
        fn = tool;  /* tolerate a bare {name, description, parameters} */
    read_field(b, F_NAME, json_string_value(json_object_get(fn, "name")), 64);
    read_field(b, F_DESC, json_string_value(json_object_get(fn, "description")),
               DESC_TOKENS_MAX);
    read_params(b, json_object_get(fn, "parameters"), 0);
}

static void end_doc(builder *b, float *dl)
{
    memcpy(dl + (size_t)b->doc * F_COUNT, b->dl, sizeof b->dl);
    grow((void **)&b->trips, &b->trips_cap, b->ntrips + b->ntouched, sizeof *b->trips);
    for (size_t i = 0; i < b->ntouched; i++) {
        uint32_t t = b->touched[i];
        struct trip *tr = &b->trips[b->ntrips++];
        tr->term = t;
        tr->p.doc = b->doc;
        memcpy(tr->p.tf, b->tf + (size_t)t * F_COUNT, sizeof tr->p.tf);
    }
    b->ntouched = 0;
    memset(b->dl, 0, sizeof b->dl);
}

/* Group the (term, doc, tf) triples by term with a counting sort: docs stay
 * ascending inside each posting list because they were collected in order. */
static json_t *pack_postings(builder *b)
{
    size_t nterms = json_object_size(b->vocab);
    size_t *start = tg_calloc(nterms + 1, sizeof *start);
    posting *all = tg_malloc((b->ntrips ? b->ntrips : 1) * sizeof *all);
    json_t *terms = json_object();
    for (size_t i = 0; i < b->ntrips; i++)
        start[b->trips[i].term + 1]++;
    for (size_t t = 0; t < nterms; t++)
        start[t + 1] += start[t];
    size_t *fill = tg_calloc(nterms + 1, sizeof *fill);
    for (size_t i = 0; i < b->ntrips; i++) {
        struct trip *tr = &b->trips[i];
        all[start[tr->term] + fill[tr->term]++] = tr->p;
    }
    free(fill);
    const char *key;
    json_t *idv;
    json_object_foreach(b->vocab, key, idv) {
        size_t t = (size_t)json_integer_value(idv);
        json_object_set_new_nocheck(
            terms, key,
            json_stringn_nocheck((const char *)(all + start[t]),
                                 (start[t + 1] - start[t]) * sizeof *all));
    }
    free(start);
    free(all);
    return terms;
}

static json_t *stemmed_synonyms(struct sb_stemmer *st);

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The vocabulary sorted, for prefix look-ups: "sv" the terms one after
 * another, each ended by a NUL, "so" a packed uint32 offset of each. */
static void sorted_vocab(json_t *idx, json_t *terms)
{
    size_t n = json_object_size(terms), k = 0, bytes = 0;
    const char **w = tg_malloc((n ? n : 1) * sizeof *w);
    uint32_t *off = tg_malloc((n ? n : 1) * sizeof *off);
    const char *key;
    json_t *v;
    json_object_foreach(terms, key, v) {
        w[k++] = key;
        bytes += strlen(key) + 1;
    }
    qsort(w, k, sizeof *w, cmp_str);
    char *blob = tg_malloc(bytes ? bytes : 1);
    bytes = 0;
    for (size_t i = 0; i < k; i++) {
        off[i] = (uint32_t)bytes;
        size_t l = strlen(w[i]) + 1;
        memcpy(blob + bytes, w[i], l);
        bytes += l;
    }
    json_object_set_new(idx, "sv", json_stringn_nocheck(blob, bytes));
    json_object_set_new(idx, "so", json_stringn_nocheck((const char *)off, k * sizeof *off));
    free(blob);
    free(w);
    free(off);
}

/* ---- word vectors ------------------------------------------------------ */

/* BM25's idf of a term that df of n tools say: the weight BM25 gives it,
 * and each word vector's weight in a tool's and the query's mean. */
static double idf_of(size_t n, size_t df)
{
    return log(1.0 + ((double)n - (double)df + 0.5) / ((double)df + 0.5));
}

/* Add weight times row's unit vector to acc[dims]. */
static void add_vec(float *acc, uint32_t row, uint32_t dims, double weight)
{
    float norm = 0;
    const int8_t *v = tg_wv_vec(row, &norm);
    if (!v || norm <= 0)
        return;
    float k = (float)(weight / norm);
    for (uint32_t i = 0; i < dims; i++)
        acc[i] += k * (float)v[i];
}

static void unit(float *v, uint32_t dims)
{
    double s = 0;
    for (uint32_t i = 0; i < dims; i++)
        s += (double)v[i] * v[i];
    double inv = s > 0 ? 1.0 / sqrt(s) : 0;
    for (uint32_t i = 0; inv > 0 && i < dims; i++)
        v[i] = (float)(v[i] * inv);
}

/* Takes the catalog's mean direction out of each tool's vector (every tool
 * of a catalog says "return", "list", "id"; what is left tells them apart)
 * and stores them: "wm" the mean (packed float[dims]), "wv" the vectors
 * quantized as the table is (packed int8[n][dims]), "wn" their norms
 * (packed float[n], 0 for a tool none of whose words the table has). */
static void store_doc_vectors(json_t *idx, float *dv, size_t n, uint32_t dims)
{
    float *mean = tg_calloc(dims, sizeof *mean), *norm = tg_malloc(n * sizeof *norm);
    int8_t *q8 = tg_malloc(n * dims);
    for (size_t d = 0; d < n; d++)
        for (uint32_t i = 0; i < dims; i++)
            mean[i] += dv[d * dims + i] / (float)n;
    for (size_t d = 0; d < n; d++) {
        float *v = dv + d * dims;
        int none = 1;
        for (uint32_t i = 0; i < dims && none; i++)
            none = v[i] == 0;
        for (uint32_t i = 0; i < dims && !none; i++)
            v[i] -= mean[i];
        unit(v, dims);
        norm[d] = tg_wv_quantize(v, dims, q8 + d * dims);
    }
    json_object_set_new(idx, "wm", json_stringn_nocheck((const char *)mean, dims * sizeof *mean));
    json_object_set_new(idx, "wv", json_stringn_nocheck((const char *)q8, n * dims));
    json_object_set_new(idx, "wn", json_stringn_nocheck((const char *)norm, n * sizeof *norm));
    free(mean);
    free(norm);
    free(q8);
}

/* Each tool's vector: the mean of its terms' word vectors, each weighted
 * by its idf and (saturated) how often the tool says it in its name
 * (counted three times) or description (parameters left out: on the tune
 * half they made it worse), made unit length, then store_doc_vectors; and
 * the table row of each term of the sorted vocabulary ("wr": packed
 * uint32, in "so"'s order, TG_WV_NONE for a word the table lacks), for
 * the soft matches. */
static void word_vectors(json_t *idx, json_t *terms, size_t n)
{
    static const double fw[F_COUNT] = { 3.0, 1.0, 0.0, 0.0 };
    tg_wv_info info;
    const char *sv = json_string_value(json_object_get(idx, "sv"));
    json_t *soj = json_object_get(idx, "so");
    const uint32_t *so = (const uint32_t *)json_string_value(soj);
    size_t nv = json_string_length(soj) / sizeof *so;
    if (!tg_wv_info_get(&info) || !n || !sv)
        return;
    float *dv = tg_calloc(n * info.dims, sizeof *dv);
    uint32_t *rows = tg_malloc((nv ? nv : 1) * sizeof *rows);
    for (size_t k = 0; k < nv; k++) {
        const char *t = sv + so[k];
        rows[k] = tg_wv_find(t);
        if (rows[k] == TG_WV_NONE)
            continue;
        json_t *pl = json_object_get(terms, t);
        const posting *p = (const posting *)json_string_value(pl);
        size_t df = json_string_length(pl) / sizeof *p;
        double idf = idf_of(n, df);
        for (size_t j = 0; j < df; j++) {
            double tf = 0;
            for (int f = 0; f < F_COUNT; f++)
                tf += fw[f] * p[j].tf[f];
            if (tf > 0)
                add_vec(dv + (size_t)p[j].doc * info.dims, rows[k], info.dims, idf * log1p(tf));
        }
    }
    for (size_t d = 0; d < n; d++)
        unit(dv + d * info.dims, info.dims);
    store_doc_vectors(idx, dv, n, info.dims);
    json_object_set_new(idx, "wr", json_stringn_nocheck((const char *)rows, nv * sizeof *rows));
    free(dv);
    free(rows);
}

static const char *tool_name(json_t *tool)
{
    json_t *fn = json_object_get(tool, "function");
    const char *name = json_string_value(json_object_get(json_is_object(fn) ? fn : tool, "name"));
    return name ? name : "";
}

typedef struct stems {
    char w[32][TOK_MAX + 1];
    size_t n;
} stems;

static void collect_stem(const char *w, void *ud)
{
    stems *s = ud;
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->w[i], w) == 0)
            return;
    if (s->n < sizeof s->w / sizeof s->w[0])
        snprintf(s->w[s->n++], sizeof s->w[0], "%s", w);
}

/* Docs per word, collected as (word id, doc) pairs and packed like the
 * postings (pack_postings): {word: packed uint32 docs}. */
typedef struct doclists {
    json_t *ids;  /* word -> id */
    struct dlp { uint32_t id, doc; } *p;
    size_t n, cap;
} doclists;

static void dl_add(doclists *d, const char *w, uint32_t doc)
{
    json_t *v = json_object_get(d->ids, w);
    size_t id = v ? (size_t)json_integer_value(v) : json_object_size(d->ids);
    if (!v)
        json_object_set_new(d->ids, w, json_integer((json_int_t)id));
    grow((void **)&d->p, &d->cap, d->n + 1, sizeof *d->p);
    d->p[d->n++] = (struct dlp){ (uint32_t)id, doc };
}

static json_t *dl_pack(doclists *d)
{
    size_t nw = json_object_size(d->ids);
    size_t *start = tg_calloc(nw + 1, sizeof *start), *fill = tg_calloc(nw + 1, sizeof *fill);
    uint32_t *all = tg_malloc((d->n ? d->n : 1) * sizeof *all);
    json_t *packed = json_object();
    for (size_t i = 0; i < d->n; i++)
        start[d->p[i].id + 1]++;
    for (size_t t = 0; t < nw; t++)
        start[t + 1] += start[t];
    for (size_t i = 0; i < d->n; i++)
        all[start[d->p[i].id] + fill[d->p[i].id]++] = d->p[i].doc;
    const char *key;
    json_t *idv;
    json_object_foreach(d->ids, key, idv) {
        size_t t = (size_t)json_integer_value(idv);
        json_object_set_new_nocheck(packed, key,
                                    json_stringn_nocheck((const char *)(all + start[t]),
                                                         (start[t + 1] - start[t]) * sizeof *all));
    }
    free(start);
    free(fill);
    free(all);
    free(d->p);
    json_decref(d->ids);
    return packed;
}

/* Sorted (bsearch). Leading verbs of tool names (groups.h) that read. */
static const char *const read_verbs[] = {
    "check", "count", "describe", "fetch", "find", "get", "inspect", "list", "lookup", "query",
    "read", "retrieve", "search", "show", "view", "watch",
};

/* Whether a name (its words as written) only acts: it says a verb
 * (groups.h) that does not read (create, delete, run, ...) and none that
 * does. */
static unsigned char only_acts(const stems *raw)
{
    int acts = 0, reads = 0;
    for (size_t k = 0; k < raw->n; k++) {
        int r = TG_WORD_LISTED(read_verbs, raw->w[k]);
        reads |= r;
        acts |= !r && (tg_disc_is_verb(raw->w[k]) || strcmp(raw->w[k], "exec") == 0);
    }
    return acts && !reads;
}

/* The words WordNet links a name's stems with by a link of `kinds`: the
 * words of their definitions ("elevation": distance, above, ...), or the
 * synonyms of their first verb sense ("stop": halt, block, ...); at most 8
 * a stem, each once a tool. */
static void add_related(doclists *x, const stems *st, uint32_t doc, unsigned kinds)
{
    const char *done[64];
    size_t nd = 0;
    for (size_t k = 0; k < st->n; k++) {
        const char *rel[8];
        size_t m = tg_lex_related(st->w[k], kinds, rel, 8);
        for (size_t r = 0; r < m; r++) {
            size_t j = 0;
            while (j < nd && strcmp(done[j], rel[r]) != 0)
                j++;
            if (j < nd)
                continue;
            if (nd < sizeof done / sizeof done[0])
                done[nd++] = rel[r];
            dl_add(x, rel[r], doc);
        }
    }
}

/* What the names alone give, apart from the tools' fields (so that their
 * lengths and what the catalog "has" stay the same):
 *   "x": {term: packed uint32 docs}, document expansion: the words WordNet
 *        defines each name's words with;
 *   "xs": the same for the synonyms of the first verb sense of each
 *        name's words: a user says "halt" or "mark" for stop_ and tag_;
 *   "nr": {word: packed uint32 docs}, each name's words as written
 *        (lower-cased, unstemmed);
 *   "va": packed uint8[n], 1 for a tool whose name only acts. */
static void store_name_side(json_t *idx, json_t *tools, size_t n, words_ctx *wc)
{
    doclists x = { .ids = json_object() }, nr = { .ids = json_object() };
    doclists xs = { .ids = json_object() };
    unsigned char *va = tg_calloc(n ? n : 1, 1);
    for (size_t i = 0; i < n; i++) {
        const char *name = tool_name(json_array_get(tools, i));
        stems raw = { .n = 0 }, st = { .n = 0 };
        words_ctx rc = { NULL, NULL, collect_stem, &raw }, sc = { wc->st, wc->memo, collect_stem, &st };
        words(name, &rc);
        words(name, &sc);
        for (size_t k = 0; k < raw.n; k++)
            dl_add(&nr, raw.w[k], (uint32_t)i);
        add_related(&x, &st, (uint32_t)i, TG_LEX_GLOSS);
        add_related(&xs, &st, (uint32_t)i, TG_LEX_SYN1_VERB);
        va[i] = only_acts(&raw);
    }
    json_object_set_new(idx, "x", dl_pack(&x));
    json_object_set_new(idx, "xs", dl_pack(&xs));
    json_object_set_new(idx, "nr", dl_pack(&nr));
    json_object_set_new(idx, "va", json_stringn_nocheck((const char *)va, n));
    free(va);
}

json_t *tg_dindex_build(json_t *tools)
{
    size_t n = json_array_size(tools);
    builder b = { .vocab = json_object() };
    float *dl = tg_calloc((n ? n : 1) * F_COUNT, sizeof *dl);
    float avg[F_COUNT] = { 0 };
    json_t *idx = NULL, *terms = NULL;
    b.wc = (words_ctx){ sb_stemmer_new("english", NULL), json_object(), add_word, &b };
    if (!b.wc.st)  /* libstemmer allocates with its own malloc */
        goto out;
    for (size_t i = 0; i < n; i++) {
        b.doc = (uint32_t)i;
        read_tool(&b, json_array_get(tools, i));
        end_doc(&b, dl);
        for (int f = 0; f < F_COUNT; f++)
            avg[f] += dl[i * F_COUNT + (size_t)f];
    }
    terms = pack_postings(&b);
    for (int f = 0; f < F_COUNT; f++)
        avg[f] = n && avg[f] > 0 ? avg[f] / (float)n : 1.0f;
    idx = json_object();
    json_object_set_new(idx, "n", json_integer((json_int_t)n));
    json_object_set_new(idx, "avg", json_stringn_nocheck((const char *)avg, sizeof avg));
    json_object_set_new(idx, "dl",
                        json_stringn_nocheck((const char *)dl, n * F_COUNT * sizeof *dl));
    sorted_vocab(idx, terms);
    word_vectors(idx, terms, n);
    json_object_set_new(idx, "t", terms);
    json_object_set_new(idx, "syn", stemmed_synonyms(b.wc.st));
    store_name_side(idx, tools, n, &b.wc);
    terms = NULL;
out:
    json_decref(b.wc.memo);
    if (b.wc.st)
        sb_stemmer_delete(b.wc.st);
    json_decref(terms);
    json_decref(b.vocab);
    free(b.tf);
    free(b.seen);
    free(b.touched);
    free(b.trips);
    free(dl);
    return idx;
}

size_t tg_dindex_cost(json_t *index)
{
    json_t *terms = json_object_get(index, "t");
    size_t cost = json_string_length(json_object_get(index, "dl")) + 256;
    const char *key;
    json_t *v;
    json_object_foreach(terms, key, v)
        cost += strlen(key) + json_string_length(v) + 96;  /* + jansson overhead */
    cost += json_string_length(json_object_get(index, "wv")) +
            json_string_length(json_object_get(index, "wn")) +
            json_string_length(json_object_get(index, "wr")) + 512;
    cost += json_string_length(json_object_get(index, "sv")) +
            json_string_length(json_object_get(index, "so")) + 192;
    const char *ks[] = { "x", "xs", "nr" };
    for (size_t i = 0; i < 3; i++)
        json_object_foreach(json_object_get(index, ks[i]), key, v)
            cost += strlen(key) + json_string_length(v) + 96;
    json_t *syn = json_object_get(index, "syn");
    for (size_t g = 0; g < json_array_size(syn); g++)
        cost += 96 * (json_array_size(json_array_get(syn, g)) + 1);
    return cost;
}

/* ---- querying -------------------------------------------------------- */

/* Generic synonyms of how users phrase tasks. Groups are matched after
 * stemming; a query word pulls in the others of its group at syn_weight.
 * The first VERB_GROUPS groups are verbs; a query's verb counts
 * verb_weight ("find", "show" say little about which of 1,000 tools is
 * meant). */
#define VERB_GROUPS 8
static const char *const synonyms[][10] = {
    { "list", "show", "get", "fetch", "retrieve", "view", "display", "see", "read", NULL },
    { "create", "add", "new", "make", "insert", "generate", "open", NULL },
    { "delete", "remove", "destroy", "erase", "drop", "trash", "discard", "rid", NULL },
    { "update", "edit", "modify", "change", "set", "patch", "rename", NULL },
    { "search", "find", "query", "lookup", "look", "locate", "filter", NULL },
    { "run", "execute", "start", "trigger", "launch", "invoke", "exec", NULL },
    { "stop", "kill", "halt", "terminate", "cancel", "abort", NULL },
    { "send", "post", "publish", "reply", NULL },
    { "file", "document", "doc", NULL },
    { "folder", "directory", "dir", NULL },
    { "repo", "repository", "project", NULL },
    { "pr", "pull", "merge", NULL },
    { "issue", "ticket", "bug", "task", NULL },
    { "email", "mail", "message", "inbox", NULL },
    { "image", "picture", "photo", "screenshot", NULL },
    { "db", "database", "sql", "table", NULL },
    { "k8s", "kubernetes", "cluster", "pod", NULL },
    { "log", "logs", "output", NULL },
    { "download", "fetch", "save", NULL },
    { "upload", "push", "attach", NULL },
    { "chart", "graph", "plot", "diagram", "visualize", NULL },
    { "url", "link", "page", "website", "site", "web", NULL },
    { "click", "press", "tap", NULL },
    { "type", "write", "enter", "fill", NULL },
    { "config", "configuration", "configure", NULL },
    { "user", "member", "person", "people", "account", NULL },
    { "comment", "note", "reply", NULL },
    { "schedule", "calendar", "event", "meeting", NULL },
    { "move", "transfer", "relocate", NULL },
    { "copy", "duplicate", "clone", NULL },
    { "close", "resolve", "complete", "finish", "done", NULL },
    { "vm", "droplet", "server", "instance", NULL },
    { "domain", "dns", "record", NULL },
    { "build", "pipeline", "workflow", "ci", NULL },
    { NULL },
};

typedef struct qterm {
    char w[TOK_MAX + 1];
    double weight;
    int direct;  /* written in the query, not pulled in as a synonym */
    int origin;  /* the written word it stands for (its index), -1 none */
} qterm;

#define ORIGIN_SELF (-2)

typedef struct query {
    qterm t[64];
    size_t n;
    double weight;  /* for the words being added */
    int origin;     /* for the words being added; ORIGIN_SELF: their own */
} query;

static void add_qword(const char *w, void *ud)
{
    query *q = ud;
    for (size_t i = 0; i < q->n; i++)
        if (strcmp(q->t[i].w, w) == 0) {
            if (q->t[i].weight < q->weight)
                q->t[i].weight = q->weight;
            return;
        }
    if (q->n < sizeof q->t / sizeof q->t[0]) {
        strcpy(q->t[q->n].w, w);
        q->t[q->n].direct = q->weight >= 1.0;
        q->t[q->n].origin = q->origin == ORIGIN_SELF ? (int)q->n : q->origin;
        q->t[q->n++].weight = q->weight;
    }
}

/* The synonym groups as the index's stemmer writes them, stored in the
 * index at build: a search then stems only its own words. */
static json_t *stemmed_synonyms(struct sb_stemmer *st)
{
    json_t *all = json_array();
    char s[TOK_MAX + 1];
    for (size_t g = 0; synonyms[g][0]; g++) {
        json_t *grp = json_array();
        for (size_t k = 0; synonyms[g][k]; k++) {
            snprintf(s, sizeof s, "%s", synonyms[g][k]);
            stem_into(st, s);
            json_array_append_new(grp, json_string(s));
        }
        json_array_append_new(all, grp);
    }
    return all;
}

static int in_group(json_t *grp, const char *w)
{
    for (size_t k = 0; k < json_array_size(grp); k++)
        if (strcmp(json_string_value(json_array_get(grp, k)), w) == 0)
            return 1;
    return 0;
}

static void expand_synonyms(query *q, json_t *syn, const tg_dindex_params *pr)
{
    size_t direct = q->n;
    for (size_t g = 0; g < json_array_size(syn); g++) {
        json_t *grp = json_array_get(syn, g);
        int hit = 0;
        for (size_t i = 0; i < direct && !hit; i++)
            hit = q->t[i].weight >= 1.0 && in_group(grp, q->t[i].w);
        if (!hit)
            continue;
        q->origin = -1;
        for (size_t i = 0; i < direct && q->origin < 0; i++)
            if (q->t[i].weight >= 1.0 && in_group(grp, q->t[i].w))
                q->origin = q->t[i].origin;
        if (g < VERB_GROUPS)  /* the action is a weaker clue than its object */
            for (size_t i = 0; i < direct; i++)
                if (in_group(grp, q->t[i].w) && q->t[i].weight > pr->verb_weight)
                    q->t[i].weight = pr->verb_weight;
        q->weight = pr->syn_weight;
        for (size_t k = 0; k < json_array_size(grp); k++)
            add_qword(json_string_value(json_array_get(grp, k)), q);
    }
}

/* "roll back", "check in", "sign up": two words a user writes apart that
 * a tool writes as one (rollback, checkin, signup). Each pair of adjacent
 * words of the query, stop words included, joins into a query word when the
 * catalog has the joined word. */
static void add_joins(const char *text, json_t *terms, struct sb_stemmer *st, query *q)
{
    char prev[TOK_MAX + 1] = "", cur[TOK_MAX + 1], joined[2 * TOK_MAX + 1];
    while (text && *text) {
        while (*text && !isalnum((unsigned char)*text))
            text++;
        size_t n = 0;
        while (isalnum((unsigned char)text[n]))
            n++;
        if (!n)
            break;
        size_t k = n > TOK_MAX ? TOK_MAX : n;
        for (size_t i = 0; i < k; i++)
            cur[i] = (char)tolower((unsigned char)text[i]);
        cur[k] = '\0';
        text += n;
        if (*prev && strlen(prev) + k <= TOK_MAX) {
            snprintf(joined, sizeof joined, "%s%s", prev, cur);
            stem_into(st, joined);
            if (json_object_get(terms, joined)) {
                q->weight = 1.0;
                q->origin = ORIGIN_SELF;
                add_qword(joined, q);
            }
        }
        memcpy(prev, cur, k + 1);
    }
}

typedef struct hit {
    size_t doc;
    double score;
} hit;

static int better(const hit *a, const hit *b)
{
    return a->score > b->score || (a->score == b->score && a->doc < b->doc);
}

/* Insert h into top[0..*kept), best first, keeping at most max. */
static void keep_best(hit *top, size_t *kept, size_t max, hit h)
{
    if (*kept == max && !better(&h, &top[*kept - 1]))
        return;
    size_t i = *kept < max ? (*kept)++ : *kept - 1;
    while (i > 0 && better(&h, &top[i - 1])) {
        top[i] = top[i - 1];
        i--;
    }
    top[i] = h;
}

/* BM25F: the fields' counts, each normalized by its own length, are summed
 * with the field weights and saturated once; a query word in the tool's name
 * adds name_bonus on top (it says more than any count in a description). */
static void score_terms(json_t *index, const query *q, const tg_dindex_params *pr,
                        const unsigned char *allow, double *acc, uint64_t *cover,
                        double *namehit, uint64_t *concepts)
{
    size_t n = (size_t)json_integer_value(json_object_get(index, "n"));
    json_t *terms = json_object_get(index, "t");
    const float *dl = (const float *)json_string_value(json_object_get(index, "dl"));
    const float *avg = (const float *)json_string_value(json_object_get(index, "avg"));
    for (size_t i = 0; i < q->n; i++) {
        json_t *pl = json_object_get(terms, q->t[i].w);
        if (!pl)
            continue;
        const posting *p = (const posting *)json_string_value(pl);
        size_t df = json_string_length(pl) / sizeof *p;
        double idf = idf_of(n, df);
        for (size_t j = 0; j < df; j++) {
            if (allow && !allow[p[j].doc])
                continue;
            const float *len = dl + (size_t)p[j].doc * F_COUNT;
            double tf = 0;
            for (int f = 0; f < F_COUNT; f++)
                if (p[j].tf[f] > 0)
                    tf += pr->w[f] * p[j].tf[f] /
                          (1.0 - pr->b + pr->b * len[f] / (avg[f] > 0 ? avg[f] : 1.0));
            if (q->t[i].direct && i < 64)
                cover[p[j].doc] |= 1ull << i;
            if (concepts && q->t[i].origin >= 0 && q->t[i].origin < 64)
                concepts[p[j].doc] |= 1ull << q->t[i].origin;
            if (p[j].tf[F_NAME] > 0 && namehit)
                namehit[p[j].doc] += p[j].tf[F_NAME] * (q->t[i].weight < 1.0 ? q->t[i].weight : 1.0);
            acc[p[j].doc] += q->t[i].weight * idf *
                             (tf * (pr->k1 + 1.0) / (tf + pr->k1) +
                              (p[j].tf[F_NAME] > 0 ? pr->name_bonus : 0.0));
        }
    }
}

/* Second stage: a tool that has more of the words the user wrote (in any
 * field) goes up, whatever their idf: "delete a label from a board" wants
 * the tool with label and board and delete, not the one with "label" ten
 * times. */
static void apply_coverage(const query *q, const tg_dindex_params *pr, double *acc,
                           const uint64_t *cover, size_t n)
{
    unsigned direct = 0;
    for (size_t i = 0; i < q->n && i < 64; i++)
        direct += q->t[i].direct != 0;
    if (pr->coverage <= 0 || direct < 2)
        return;
    for (size_t d = 0; d < n; d++)
        if (acc[d] > 0)
            acc[d] *= 1.0 + pr->coverage * (double)__builtin_popcountll(cover[d]) / direct;
}

/* Every stage of scoring into acc[] (zeroed here); concepts (may be NULL)
 * gets, per tool, the written words it has or has a synonym of. */
static void score_all(json_t *index, const query *q, const tg_dindex_params *pr,
                      const unsigned char *allow, double *acc, size_t n, uint64_t *concepts)
{
    memset(acc, 0, n * sizeof *acc);
    if (concepts)
        memset(concepts, 0, n * sizeof *concepts);
    uint64_t *cover = tg_calloc(n, sizeof *cover);
    double *namehit = pr->name_cover > 0 ? tg_calloc(n, sizeof *namehit) : NULL;
    score_terms(index, q, pr, allow, acc, cover, namehit, concepts);
    apply_coverage(q, pr, acc, cover, n);
    if (namehit) {
        /* a tool whose name the query says in full ("delete the label" for
         * delete_label) over one that shares a word of a longer name */
        const float *dl = (const float *)json_string_value(json_object_get(index, "dl"));
        for (size_t d = 0; d < n; d++) {
            double len = dl[d * F_COUNT + F_NAME];
            if (acc[d] > 0 && len > 0)
                acc[d] *= 1.0 + pr->name_cover * (namehit[d] > len ? 1.0 : namehit[d] / len);
        }
        free(namehit);
    }
    free(cover);
}

/* A written word whose stem begins another term of the catalog, or that
 * another begins ("scraper" and "scrape", "crawler" and "crawl"): the
 * stemmer leaves agent nouns and some derivations apart. Both at least
 * PREFIX_MIN letters; the terms it begins come from the sorted vocabulary
 * (the first PREFIX_MAX in sort order), the terms that begin it are its
 * own prefixes looked up; all at prefix_weight. */
#define PREFIX_MIN 4
#define PREFIX_MAX 4

static void expand_prefixes(query *q, json_t *index, double weight)
{
    json_t *terms = json_object_get(index, "t"), *svj = json_object_get(index, "sv");
    const char *sv = json_string_value(svj);
    const uint32_t *so = (const uint32_t *)json_string_value(json_object_get(index, "so"));
    size_t nv = json_string_length(json_object_get(index, "so")) / sizeof *so;
    size_t direct = q->n;
    for (size_t i = 0; i < direct; i++) {
        char w[TOK_MAX + 1];
        memcpy(w, q->t[i].w, sizeof w);
        size_t lw = strlen(w);
        if (!q->t[i].direct || lw < PREFIX_MIN)
            continue;
        q->weight = weight;
        q->origin = q->t[i].origin;
        for (size_t l = PREFIX_MIN; l < lw; l++) {  /* terms that begin w */
            char pre[TOK_MAX + 1];
            memcpy(pre, w, l);
            pre[l] = '\0';
            if (json_object_get(terms, pre))
                add_qword(pre, q);
        }
        size_t lo = 0, hi = nv, added = 0;  /* terms w begins: from the first >= w */
        while (sv && lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (strcmp(sv + so[mid], w) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t k = lo; sv && k < nv && added < PREFIX_MAX; k++) {
            const char *t = sv + so[k];
            if (strncmp(t, w, lw) != 0)
                break;
            if (t[lw]) {
                add_qword(t, q);
                added++;
            }
        }
    }
}

/* A written word the catalog does not have at all ("thermometer" against
 * tools that say "temperature") would score nothing: it pulls in
 * WordNet's words for it (discovery/lexicon.h; lex_kinds says which: the
 * shipped table holds the first words of the definition of its common
 * sense), those the catalog has, at most lex_max, at lex_weight. A word
 * the catalog has is left alone: its own matches say more. They count for
 * the word they stand for in the second stage, like a synonym group's. */
static void expand_lexicon(query *q, json_t *index, const tg_dindex_params *pr)
{
    json_t *terms = json_object_get(index, "t");
    size_t direct = q->n;
    for (size_t i = 0; i < direct; i++) {
        const char *rel[32];
        if (!q->t[i].direct || json_object_get(terms, q->t[i].w))
            continue;
        size_t n = tg_lex_related(q->t[i].w, pr->lex_kinds, rel, 32), used = 0;
        q->weight = pr->lex_weight;
        q->origin = q->t[i].origin;
        for (size_t k = 0; k < n && used < pr->lex_max; k++)
            if (json_object_get(terms, rel[k])) {
                add_qword(rel[k], q);
                used++;
            }
    }
}

#define RERANK_DEPTH 50

/* Second stage over the first RERANK_DEPTH: a tool that covers more of the
 * written words (each, or a synonym of it, in any field) goes up by
 * rerank times the share it covers. Unlike `coverage` (any tool, written
 * words only), "remove the card" counts for a tool that says "delete" and
 * "card". */
static void rerank_top(const query *q, const tg_dindex_params *pr, double *acc,
                       const uint64_t *concepts, size_t n)
{
    unsigned written = 0;
    for (size_t i = 0; i < q->n && i < 64; i++)
        written += q->t[i].direct && q->t[i].origin == (int)i;
    if (written < 2)
        return;
    hit top[RERANK_DEPTH];
    size_t kept = 0;
    for (size_t d = 0; d < n; d++)
        if (acc[d] > 0)
            keep_best(top, &kept, RERANK_DEPTH, (hit){ d, acc[d] });
    for (size_t k = 0; k < kept; k++) {
        size_t d = top[k].doc;
        double frac = (double)__builtin_popcountll(concepts[d]) / written;
        acc[d] *= 1.0 + pr->rerank * (frac > 1 ? 1 : frac);
    }
}

/* A written word the catalog lacks ("forecast" for a tool that says
 * "weather") pulls in the catalog's terms whose word vectors are nearest
 * its own (cosine at least soft_min, soft_max at most) at soft_weight;
 * they count for the word they stand for, like the lexicon's. */
static void expand_soft(query *q, json_t *index, const tg_dindex_params *pr)
{
    json_t *terms = json_object_get(index, "t"), *wrj = json_object_get(index, "wr");
    const uint32_t *rows = (const uint32_t *)json_string_value(wrj);
    const char *sv = json_string_value(json_object_get(index, "sv"));
    const uint32_t *so = (const uint32_t *)json_string_value(json_object_get(index, "so"));
    size_t nv = json_string_length(wrj) / sizeof *rows, direct = q->n;
    size_t want = pr->soft_max < 1 ? 1 : pr->soft_max > 16 ? 16 : (size_t)pr->soft_max;
    if (!rows || !sv || !so || json_string_length(json_object_get(index, "so")) != nv * sizeof *so)
        return;
    float *sim = NULL;
    for (size_t i = 0; i < direct; i++) {
        uint32_t r;
        if (!q->t[i].direct || json_object_get(terms, q->t[i].w) ||
            (r = tg_wv_find(q->t[i].w)) == TG_WV_NONE)
            continue;
        hit top[16];
        size_t kept = 0;
        if (!sim)
            sim = tg_malloc((nv ? nv : 1) * sizeof *sim);
        tg_wv_cos_rows(r, rows, nv, sim);
        for (size_t k = 0; k < nv; k++)
            if (sim[k] >= pr->soft_min)
                keep_best(top, &kept, want, (hit){ k, sim[k] });
        q->origin = q->t[i].origin;
        for (size_t k = 0; k < kept; k++) {
            q->weight = pr->soft_weight;
            add_qword(sv + so[top[k].doc], q);
        }
    }
    free(sim);
}

#define VEC_DEPTH 50

/* The query's vector: its written words' word vectors weighted by their
 * idf in the catalog (a word the catalog lacks: the highest). Returns 0
 * when no written word has one. */
static int query_vector(json_t *index, const query *q, size_t n, float *qv, uint32_t dims)
{
    json_t *terms = json_object_get(index, "t");
    int any = 0;
    memset(qv, 0, dims * sizeof *qv);
    for (size_t i = 0; i < q->n; i++) {
        uint32_t r;
        if (!q->t[i].direct || (r = tg_wv_find(q->t[i].w)) == TG_WV_NONE)
            continue;
        json_t *pl = json_object_get(terms, q->t[i].w);
        add_vec(qv, r, dims, q->t[i].weight * idf_of(n, json_string_length(pl) / sizeof(posting)));
        any = 1;
    }
    return any;
}

/* Add to BM25's score (acc[], over its best: 1 for the top tool) vec_weight
 * times the cosine between the query's vector and each tool's, for the first
 * VEC_DEPTH tools by cosine whose cosine is at least vec_min: a tool that
 * shares no word with the query ("how high is the mountain" for
 * get_elevation) can so come up, and of two tools BM25 scores alike, the one that means the query goes
 * first. Added scores, not reciprocal ranks: on the tune half ranks fused
 * (constant 10 to 60) lost to BM25 alone at every weight, as they flatten
 * BM25's confident first places. */
static void fuse_vectors(json_t *index, const query *q, const tg_dindex_params *pr,
                         const unsigned char *allow, double *acc, size_t n)
{
    tg_wv_info info;
    json_t *wvj = json_object_get(index, "wv"), *wnj = json_object_get(index, "wn");
    const int8_t *dv = (const int8_t *)json_string_value(wvj);
    const float *dn = (const float *)json_string_value(wnj);
    const float *mean = (const float *)json_string_value(json_object_get(index, "wm"));
    if (!dv || !dn || !mean || !tg_wv_info_get(&info) || json_string_length(wvj) != n * info.dims ||
        json_string_length(wnj) != n * sizeof *dn)
        return;
    float *qv = tg_malloc(info.dims * sizeof *qv);
    int8_t *q8 = tg_malloc(info.dims);
    hit top[VEC_DEPTH];
    size_t kept = 0;
    if (query_vector(index, q, n, qv, info.dims)) {
        /* the catalog's common direction out, as from the tools' vectors */
        unit(qv, info.dims);
        for (uint32_t i = 0; i < info.dims; i++)
            qv[i] -= mean[i];
        float qn = tg_wv_quantize(qv, info.dims, q8);
        for (size_t d = 0; qn > 0 && d < n; d++) {
            if ((allow && !allow[d]) || dn[d] <= 0)
                continue;
            double c = tg_wv_dot8(q8, dv + d * info.dims, info.dims) / ((double)qn * dn[d]);
            if (c > 0 && c >= pr->vec_min)
                keep_best(top, &kept, VEC_DEPTH, (hit){ d, c });
        }
    }
    free(qv);
    free(q8);
    if (!kept)
        return;
    double best = 0;
    for (size_t d = 0; d < n; d++)
        best = acc[d] > best ? acc[d] : best;
    for (size_t d = 0; best > 0 && d < n; d++)
        acc[d] /= best;
    for (size_t r = 0; r < kept; r++)
        acc[top[r].doc] += pr->vec_weight * top[r].score;
}

/* Document expansion's matches: a query word among the words WordNet
 * relates to a tool's name's words (postings `key`) adds w times its
 * weight and idf (the idf among those postings). */
static void score_expansion(json_t *index, const char *key, double w, const query *q,
                            const unsigned char *allow, double *acc, size_t n)
{
    json_t *x = json_object_get(index, key);
    for (size_t i = 0; x && i < q->n; i++) {
        json_t *pl = json_object_get(x, q->t[i].w);
        if (!pl)
            continue;
        const uint32_t *docs = (const uint32_t *)json_string_value(pl);
        size_t df = json_string_length(pl) / sizeof *docs;
        double add = w * q->t[i].weight * idf_of(n, df);
        for (size_t j = 0; j < df; j++)
            if (docs[j] < n && (!allow || allow[docs[j]]))
                acc[docs[j]] += add;
    }
}

/* Of two tools that match alike, the one whose name the query writes as
 * it is (add_card_to_list for "add a card", not add_cards_to_list, which
 * the stemmer makes the same): a tool gains exact_w times the share of
 * its name's words the query has unstemmed. */
static void apply_exact(json_t *index, const char *text, const tg_dindex_params *pr,
                        double *acc, size_t n)
{
    json_t *nr = json_object_get(index, "nr");
    const float *dl = (const float *)json_string_value(json_object_get(index, "dl"));
    stems s = { .n = 0 };
    words_ctx c = { NULL, NULL, collect_stem, &s };
    if (!nr || !dl)
        return;
    words(text, &c);
    float *said = tg_calloc(n, sizeof *said);
    for (size_t k = 0; k < s.n; k++) {
        json_t *pl = json_object_get(nr, s.w[k]);
        const uint32_t *docs = (const uint32_t *)json_string_value(pl);
        for (size_t j = 0; docs && j < json_string_length(pl) / sizeof *docs; j++)
            if (docs[j] < n)
                said[docs[j]] += 1.0f;
    }
    for (size_t d = 0; d < n; d++) {
        double len = dl[d * F_COUNT + F_NAME];
        if (said[d] > 0 && acc[d] > 0 && len > 0)
            acc[d] *= 1.0 + pr->exact_w * (said[d] > len ? 1.0 : said[d] / len);
    }
    free(said);
}

/* Sorted (bsearch). A query that opens with one of these asks. */
static const char *const ask_words[] = {
    "any", "are", "did", "do", "does", "has", "have", "is", "was", "were", "what", "where",
    "which", "who", "whom", "whose",
};

static int is_question(const char *text)
{
    char w[16];
    size_t n = 0, len = strlen(text);
    while (len && isspace((unsigned char)text[len - 1]))
        len--;
    if (len && text[len - 1] == '?')
        return 1;
    while (*text && !isalpha((unsigned char)*text))
        text++;
    while (n + 1 < sizeof w && isalpha((unsigned char)text[n])) {
        w[n] = (char)tolower((unsigned char)text[n]);
        n++;
    }
    w[n] = '\0';
    return n && !isalpha((unsigned char)text[n]) && TG_WORD_LISTED(ask_words, w);
}

/* A question wants to read ("what cards are assigned to me" wants
 * get_my_cards, not assign_member_to_card): tools whose names only act
 * lose ask_pen of their score. */
static void apply_question(json_t *index, const char *text, const tg_dindex_params *pr,
                           double *acc, size_t n)
{
    json_t *vaj = json_object_get(index, "va");
    const unsigned char *va = (const unsigned char *)json_string_value(vaj);
    if (!va || json_string_length(vaj) != n || !is_question(text))
        return;
    for (size_t d = 0; d < n; d++)
        if (va[d])
            acc[d] *= 1.0 - pr->ask_pen;
}

size_t tg_dindex_search_in(json_t *index, const char *query_text, const tg_dindex_params *pr,
                           const unsigned char *allow, size_t *out, double *score, size_t max)
{
    size_t n = (size_t)json_integer_value(json_object_get(index, "n"));
    query q = { .weight = 1.0, .origin = ORIGIN_SELF };
    if (!n || !json_string_value(json_object_get(index, "dl")) ||
        json_string_length(json_object_get(index, "avg")) != F_COUNT * sizeof(float) ||
        !json_is_object(json_object_get(index, "t")))
        return 0;
    words_ctx wc = { sb_stemmer_new("english", NULL), NULL, add_qword, &q };
    if (!wc.st)
        return 0;
    words(query_text, &wc);
    if (pr->joins)
        add_joins(query_text, json_object_get(index, "t"), wc.st, &q);
    if (pr->synonyms)
        expand_synonyms(&q, json_object_get(index, "syn"), pr);
    sb_stemmer_delete(wc.st);
    if (pr->lex_weight > 0 && pr->lex_kinds)
        expand_lexicon(&q, index, pr);
    if (pr->prefix_weight > 0)
        expand_prefixes(&q, index, pr->prefix_weight);
    if (pr->soft_weight > 0)
        expand_soft(&q, index, pr);

    double *acc = tg_calloc(n, sizeof *acc);
    uint64_t *concepts = pr->rerank > 0 ? tg_calloc(n, sizeof *concepts) : NULL;
    score_all(index, &q, pr, allow, acc, n, concepts);
    if (pr->exp_w > 0)
        score_expansion(index, "x", pr->exp_w, &q, allow, acc, n);
    if (pr->exp_syn_w > 0)
        score_expansion(index, "xs", pr->exp_syn_w, &q, allow, acc, n);
    if (pr->exact_w > 0)
        apply_exact(index, query_text, pr, acc, n);
    if (pr->ask_pen > 0)
        apply_question(index, query_text, pr, acc, n);
    if (concepts)
        rerank_top(&q, pr, acc, concepts, n);
    free(concepts);
    if (pr->vec_weight > 0)
        fuse_vectors(index, &q, pr, allow, acc, n);

    /* top `max` by insertion into a short sorted list */
    size_t matched = 0, kept = 0;
    hit *top = max ? tg_malloc(max * sizeof *top) : NULL;
    for (size_t d = 0; d < n; d++) {
        if (acc[d] <= 0)
            continue;
        matched++;
        if (top)
            keep_best(top, &kept, max, (hit){ d, acc[d] });
    }
    for (size_t i = 0; i < kept; i++) {
        out[i] = top[i].doc;
        if (score)
            score[i] = top[i].score;
    }
    free(top);
    free(acc);
    return matched;
}

size_t tg_dindex_search_p(json_t *index, const char *query_text, const tg_dindex_params *pr,
                          size_t *out, double *score, size_t max)
{
    return tg_dindex_search_in(index, query_text, pr, NULL, out, score, max);
}

size_t tg_dindex_search(json_t *index, const char *query_text, size_t *out, double *score,
                        size_t max)
{
    return tg_dindex_search_p(index, query_text, &tg_dindex_defaults, out, score, max);
}

unsigned tg_dindex_distance(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    unsigned row[129];
    if (na > 128)
        na = 128;
    if (nb > 128)
        nb = 128;
    for (size_t j = 0; j <= nb; j++)
        row[j] = (unsigned)j;
    for (size_t i = 1; i <= na; i++) {
        unsigned diag = row[0];
        row[0] = (unsigned)i;
        for (size_t j = 1; j <= nb; j++) {
            unsigned up = row[j];
            int same = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]);
            unsigned best = diag + (same ? 0 : 1);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb] > 255 ? 255 : row[nb];
}
