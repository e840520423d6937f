/* jsonio.h -- a fast reader and writer for the JSON on the request path.
 *
 * jansson builds the values every stage works on, but its reader takes a
 * byte at a time through a stream and its writer escapes through a callback
 * per piece: about 160 and 80 instructions per byte, which is most of the
 * cost of the first sight of a 184 KB tool list. These two do the same job
 * over a whole buffer, producing and consuming ordinary jansson values.
 *
 * They are exact, not lenient: tg_json_parse accepts what json_loadb
 * accepts and builds an equal value; anything it is not sure of (invalid
 * input, \u0000, nesting past jansson's limit) makes it return NULL, and
 * the caller then asks jansson, which accepts or explains. Two departures,
 * both about numbers, both so that a provider's or an agent's numbers pass
 * through as they were: an integer past int64 (which jansson refuses) reads
 * as the nearest double, and a real is written as the shortest text that
 * reads back as the same double (jansson writes 0.1 as 0.10000000000000001).
 * Otherwise tg_json_dump writes the bytes json_dumps(v, JSON_COMPACT)
 * writes. test/unit/test_jsonio.c checks both against jansson on the whole
 * corpus and on edge cases; the fuzz target fuzz_jsonio does it on noise.
 * Every JSON this project writes goes through tg_json_dump.
 *
 * Ownership follows core/tg.h: tg_json_parse returns a NEW reference;
 * tg_json_dump and tg_json_dumps borrow v.
 */
#ifndef TG_JSONIO_H
#define TG_JSONIO_H

#include <jansson.h>
#include <stddef.h>

#include "core/buf.h"

/* flags: JSON_REJECT_DUPLICATES, JSON_DECODE_ANY (without it the top level
 * must be an object or an array, as for json_loadb). */
json_t *tg_json_parse(const char *s, size_t n, size_t flags);

/* The same, declining past max_depth levels of nesting (<= 0: jansson's
 * limit), so that a caller with its own limit needs no pre-scan. */
json_t *tg_json_parse_depth(const char *s, size_t n, size_t flags, int max_depth);

/* The same, falling back to json_loadb (and its error) when the fast reader
 * declines. */
json_t *tg_json_load(const char *s, size_t n, size_t flags, json_error_t *err);

/* A provider's answer or event: tg_json_load with \u0000 allowed, and when
 * that fails on bytes that are not UTF-8 (a provider's Latin-1), once more
 * with U+FFFD in their place, so that such a byte costs no repair. */
json_t *tg_json_load_answer(const char *s, size_t n);

/* A \uXXXX escape, p just past the "u": the code point, surrogate pairs
 * joined. Returns the bytes read from p (4, or 10 for a pair), or -1 for
 * bad hex digits, a lone surrogate, or \u0000 (which jansson refuses by
 * default and no request of ours needs). */
int tg_json_u_escape(const char *p, const char *end, unsigned long *cp);

/* Appends the compact serialization of v to out. 0, or -1 when v is NULL
 * or holds what JSON cannot say (an infinite or NaN real, which jansson's
 * json_real refuses to make); out may then hold part of the text. */
int tg_json_dump(const json_t *v, tg_buf *out);

/* The string s[0..n) (valid UTF-8) as tg_json_dump writes a string
 * value: quoted, escaped as json_dumps escapes it. */
void tg_json_dump_string(const char *s, size_t n, tg_buf *out);

/* The integer i as tg_json_dump writes an integer value. */
void tg_json_dump_int(json_int_t i, tg_buf *out);

/* The same as a malloc'd NUL-terminated string (json_dumps's contract with
 * JSON_COMPACT | JSON_ENCODE_ANY), or NULL when tg_json_dump says -1. */
char *tg_json_dumps(const json_t *v);

/* JSON Schema's name for v's type: "object", "array", "string",
 * "integer", "number", "boolean" or "null" (static text). */
const char *tg_json_type_name(const json_t *v);

/* The values of the keys `names` (NULL-terminated) of obj, in
 * out[i] for names[i], NULL where absent or when obj is not an object:
 * what as many json_object_get calls give, in one pass over obj's keys and
 * without hashing each name (a chat body is checked for some fifteen keys
 * it mostly lacks). out is borrowed from obj. */
void tg_json_pick(const json_t *obj, const char *const *names, json_t **out);

/* obj[key] as json_object_get gives it (NULL when absent or obj is no
 * object), for a key given as a string literal (its length is known at
 * compile time: a pointer does not compile). An object of up to
 * TG_GET_SCAN keys (a message: role, content, perhaps a name or calls) is
 * looked through in order, the first byte compared inline, without
 * jansson's strlen and hash of the key (about 150 instructions, most of
 * the cost of the walks over messages, whose look-ups mostly miss). */
#define TG_GET_SCAN 5
json_t *tg_json_getn(const json_t *obj, const char *key, size_t len);
#define tg_json_get(obj, key) tg_json_getn((obj), "" key, sizeof("" key) - 1)

/* Drops arr's elements from n on (from the end, each O(1)). A loop that
 * leaves out some elements keeps the others by moving each down to its
 * place (json_array_set) and cuts the rest once: json_array_remove(i)
 * inside the loop moved the whole tail every time, so a hostile upstream's
 * 400,000 bad choices in one 800 KB event held a worker for minutes. */
void tg_json_array_cut(json_t *arr, size_t n);

/* jansson's json_is_object(x) and its kin name x twice, so
 * json_is_array(json_object_get(m, "content")) looked the key up twice
 * whenever it was there: this names it once. */
static inline int tg_json_is(const json_t *v, json_type t)
{
    return v && json_typeof(v) == t;
}

#endif
