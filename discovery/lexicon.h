/* lexicon.h -- related words from WordNet, for search_tools' queries.
 *
 * Internal to discovery/. A read-only table compiled into toolgate
 * (discovery/lexicon_data.c, written by discovery/lexicon_gen.py from
 * WordNet 3.0): for a word's Snowball stem, the stems of its synonyms in
 * its most common senses and of its derivational forms. Immutable, so
 * any thread may read it.
 */
#ifndef TG_DISC_LEXICON_H
#define TG_DISC_LEXICON_H

#include <stddef.h>
#include <stdint.h>

/* What links two words, one bit each (a pair may have several). The
 * shipped table holds TG_LEX_GLOSS pairs and TG_LEX_SYN1_VERB pairs (the
 * synonyms of a word's first verb sense, which a tool name's words are
 * matched by); the other synonyms and derivations did not help
 * search_tools (docs/discovery_quality.md); lexicon_gen.py
 * --flags writes them. */
enum {
    TG_LEX_SYN1_NOUN = 1,   /* same synset, the word's first (most common) sense */
    TG_LEX_SYN1_VERB = 2,
    TG_LEX_SYN1_ADJ = 4,    /* adjectives and adverbs */
    TG_LEX_SYNK_NOUN = 8,   /* same synset, one of its next senses */
    TG_LEX_SYNK_VERB = 16,
    TG_LEX_SYNK_ADJ = 32,
    TG_LEX_DERIV = 64,      /* derivationally related (elevation, elevate) */
    TG_LEX_GLOSS = 128,     /* a content word of the first sense's definition */
};

typedef struct tg_lex_word {
    uint32_t str;    /* offset of the stem in tg_lex_strings */
    uint32_t first;  /* its first pair in tg_lex_pairs; the next word's ends them */
} tg_lex_word;

/* A pair is one uint32_t: the related stem's offset in tg_lex_strings
 * << 8 | its TG_LEX_* kinds. */
extern const char tg_lex_strings[];
extern const tg_lex_word tg_lex_words[];
extern const uint32_t tg_lex_pairs[];
extern const size_t tg_lex_nwords, tg_lex_npairs;

/* The stems related to `stem` by a link of `kinds` (a mask of TG_LEX_*),
 * synonyms of its first sense first, the others in sort order: fills up to max pointers into the table (never
 * freed) and returns how many. */
size_t tg_lex_related(const char *stem, unsigned kinds, const char **out, size_t max);

#endif
