/* answer.h -- discovery's answers to the meta-tool calls (answer.c), for
 * the stage and the rounds (discovery.c); not for other stages. */
#ifndef TG_DISC_ANSWER_H
#define TG_DISC_ANSWER_H

#include <stddef.h>

#include "core/ctx.h"
#include "discovery/catalog.h"

#define QUERIES_MAX 8    /* alternative phrasings merged in one search */

/* search_tools' phrasings in args, QUERIES_MAX at most, into q. */
size_t tg_dd_collect_queries(json_t *args, const char **q);
/* The answer to search_tools' arguments (new reference). */
json_t *tg_dd_search_answer(const tg_ctx *ctx, json_t *d, json_t *args);
/* A call's arguments as an object (new reference), or NULL. */
json_t *tg_dd_parse_args(json_t *call);
/* A meta-tool call's arguments with what models write for its keys put
 * under the declared ones (which: "search", "schema", "call"); new
 * reference, or NULL when they are not an object. */
json_t *tg_dd_meta_parse(json_t *call, const char *which);
/* A deterministic 9-character id from a seed. */
json_t *tg_dd_make_id(const char *seed, size_t n);
/* call_tool(name, arguments) as an ordinary call of that tool, or NULL
 * with *err (new reference) when it cannot be. */
json_t *tg_dd_convert_call_tool(tg_ctx *ctx, json_t *d, json_t *call, json_t **err);
/* A direct call of a catalog tool by a variant of its name, converted as
 * its call_tool call would be (new reference), or NULL. */
json_t *tg_dd_convert_loose_call(tg_ctx *ctx, json_t *d, json_t *call);
/* The answer to one meta (or unknown) call (new reference). */
json_t *tg_dd_answer_call(tg_ctx *ctx, json_t *d, json_t *call, enum call_kind k);

#endif
