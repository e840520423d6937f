/* index.h -- discovery's search index: BM25F over a tool catalog.
 *
 * Internal to discovery/. The index is a json_t (an object holding packed
 * binary postings in json strings) so that it can live in the per-worker
 * cache (core/cache.h) like any other value and be shared read-only.
 */
#ifndef TG_DISC_INDEX_H
#define TG_DISC_INDEX_H

#include <jansson.h>
#include <stddef.h>

/* The ranker's knobs. tg_dindex_defaults is what search_tools uses; the
 * eval (test/tools/discovery_eval.c) fits them on the tune half. */
enum { TG_DF_NAME, TG_DF_DESC, TG_DF_PARAM, TG_DF_PDESC, TG_DF_COUNT };
typedef struct tg_dindex_params {
    double w[TG_DF_COUNT];  /* BM25F field weights */
    double k1, b;           /* BM25 saturation and length normalization */
    double name_bonus;      /* added (times idf) when a query word is in the name */
    double syn_weight;      /* weight of a synonym a query word pulled in */
    double verb_weight;     /* weight of a query word that is a generic verb */
    int synonyms;           /* expand query words with the synonym groups */
    double coverage;        /* boost by the share of the query's words a tool has */
    int joins;              /* adjacent query words also count joined ("roll back") */
    double name_cover;      /* boost by the share of the tool's name the query says */
    double prefix_weight;   /* a stem that begins another (scraper/scrape) pulls it in */
    double rerank;          /* second stage over the top 50: boost by the share of the
                               query's words (or their synonyms) a tool covers */
    double lex_weight;      /* weight of a word WordNet relates to a query word (0: off) */
    unsigned lex_kinds;     /* which of WordNet's links (TG_LEX_*, discovery/lexicon.h) */
    unsigned lex_max;       /* at most this many such words per query word */
    double vec_weight;      /* word vectors (discovery/wordvec.h): weight of the cosine
                               between the query's vector and a tool's, added to BM25's
                               score over its best (0: off) */
    double vec_min;         /* a tool's cosine counts from this on */
    double soft_weight;     /* a written word the catalog lacks pulls in the catalog's
                               terms nearest it by word vector, at this weight (0: off) */
    double soft_min;        /* ... whose cosine is at least this */
    double soft_max;        /* ... at most this many per written word */
    double exact_w;         /* boost by the share of a tool's name the query writes
                               exactly, unstemmed (add_card over add_cards) */
    double exp_w;           /* a tool also matches, at this weight, the words WordNet
                               defines its name's words with (0: off) */
    double exp_syn_w;       /* ... and the synonyms of its name's words' first verb
                               sense in WordNet (stop: halt, tag: mark; 0: off) */
    double ask_pen;         /* a question ("what ...", "which ...", "...?") wants to
                               read: a tool whose name only acts (create_, delete_)
                               loses this share of its score */
} tg_dindex_params;

extern const tg_dindex_params tg_dindex_defaults;

/* Build over `tools` (borrowed array of OpenAI tools; doc i = tools[i]).
 * Names, descriptions, parameter names and parameter descriptions are
 * indexed. Returns a new reference, or NULL when libstemmer cannot make
 * its stemmer. */
json_t *tg_dindex_build(json_t *tools);

/* Rank the catalog for a free-text query. Fills up to `max` doc numbers
 * (best first) into out[] and their scores into score[] (may be NULL).
 * Returns how many docs matched at all (may exceed max). */
size_t tg_dindex_search(json_t *index, const char *query, size_t *out, double *score,
                        size_t max);

/* The same with explicit knobs (borrowed). */
size_t tg_dindex_search_p(json_t *index, const char *query, const tg_dindex_params *params,
                          size_t *out, double *score, size_t max);

/* The same over the docs whose allow[doc] is set (allow NULL: all). */
size_t tg_dindex_search_in(json_t *index, const char *query, const tg_dindex_params *params,
                           const unsigned char *allow, size_t *out, double *score, size_t max);

/* Rough heap cost of an index, for the cache's byte bound. */
size_t tg_dindex_cost(json_t *index);

/* Edit distance between two names, case-insensitive (capped at 255). */
unsigned tg_dindex_distance(const char *a, const char *b);

#endif
