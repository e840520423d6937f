/* jsonfix.h -- lenient readers for the almost-JSON models write (jsonfix.c).
 * Message hygiene uses them on replayed history, the repair on answers. */
#ifndef TG_JSONFIX_H
#define TG_JSONFIX_H

#include <jansson.h>
#include <stddef.h>

/* Bounded, conservative repair of almost-JSON: single quotes, trailing
 * commas, Python literals, bare keys, code fences, truncation (open strings
 * and containers closed, a dangling key dropped). Returns a new value or
 * NULL when the text is not repairable. */
json_t *tg_json_fix(const char *s, size_t n);

/* "{...}{...}" (several top-level objects, whitespace between): returns a
 * new array of the parsed objects when there are at least two and every one
 * parses strictly; NULL otherwise. */
json_t *tg_json_split_objects(const char *s, size_t n);

/* "{...}}" (one whole object, then stray bytes that open no other object:
 * Python's "Extra data"): the object, new reference; NULL otherwise. */
json_t *tg_json_leading_object(const char *s, size_t n);

#endif
