/* json_prefix.h -- is this text, so far, the start of one strict JSON
 * object? (json_prefix.c). Private to repair/. */
#ifndef TG_JSON_PREFIX_H
#define TG_JSON_PREFIX_H

#include <stdbool.h>
#include <stddef.h>

#define TG_JPREFIX_DEPTH 64
/* Incremental check that text is the start of one strict JSON object.
 * Zero-initialize; no resources. */
typedef struct tg_jprefix {
    char stack[TG_JPREFIX_DEPTH];
    char lit[40];
    unsigned char st, nlit, uhex;
    int depth;
    bool in_str, esc, key, bad;
    size_t pos;  /* bytes accepted so far */
    /* of those, the bytes that may go out: an escape not yet whole (a
     * `\` whose next byte has not come, or one that turned out invalid,
     * `\$`) is held back, so that what was sent stays continuable by a
     * repair (bionic-gpt#1041) */
    size_t safe;
} tg_jprefix;
/* Feed n more bytes: returns how many of them keep the text a prefix of
 * one object (n, or fewer once it stops being one; 0 ever after). */
size_t tg_jprefix_feed(tg_jprefix *j, const char *s, size_t n);
/* The object has closed (what came after it may have been refused: then
 * pos < the bytes fed). */
bool tg_jprefix_complete(const tg_jprefix *j);

#endif
