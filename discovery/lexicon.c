/* lexicon.c -- look-ups in the WordNet table (see lexicon.h).
 *
 * The table is sorted by stem, so a look-up is one binary search; the
 * pairs of a word follow one another, those of its first sense first. */
#include "discovery/lexicon.h"

#include <string.h>

size_t tg_lex_related(const char *stem, unsigned kinds, const char **out, size_t max)
{
    size_t lo = 0, hi = tg_lex_nwords, got = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(tg_lex_strings + tg_lex_words[mid].str, stem);
        if (c == 0) {
            size_t end = mid + 1 < tg_lex_nwords ? tg_lex_words[mid + 1].first : tg_lex_npairs;
            for (size_t p = tg_lex_words[mid].first; p < end && got < max; p++)
                if (tg_lex_pairs[p] & kinds & 0xff)
                    out[got++] = tg_lex_strings + (tg_lex_pairs[p] >> 8);
            return got;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}
