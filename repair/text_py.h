/* text_py.h -- tool calls written as Python (text_py.c): pythonic call
 * lists and Gemma 4's call:NAME(...) for R12's format table. Private to
 * repair/. */
#ifndef TG_TEXT_PY_H
#define TG_TEXT_PY_H

#include <jansson.h>

/* Does a pythonic call list, [NAME(, start at p? 1 yes, 0 the text ends
 * before it can be told, -1 no. */
int tg_py_list_at(const char *p, const char *e);

/* The end of the bracketed list at p ('['), just after its ']', strings
 * skipped; NULL when the text ends first. */
const char *tg_py_list_end(const char *p, const char *e);

/* [NAME(k=v, ...), ...] (the brackets may be left out) between s and e:
 * appends {"name","arguments"} per call; 0 only when all of it parsed. */
int tg_py_calls(json_t *calls, const char *s, const char *e);

/* Gemma 4: call:NAME(k: v, ...) or call:NAME{k: v, ...}, one or more,
 * strings also quoted with <|"|>; 0 only when all of it parsed. */
int tg_py_gemma_calls(json_t *calls, const char *s, const char *e);

#endif
