/* catalog.h -- discovery's derivation (catalog.c), for the discovery files
 * above it (answer.c, discovery.c); not for other stages. The derivation
 * is the immutable json object of discovery.c's design comment: catalog,
 * names, lookup, loose forms, meta-tools, index. The accessors below read
 * one. */
#ifndef TG_DISC_CATALOG_H
#define TG_DISC_CATALOG_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/ctx.h"

/* ---- reading a derivation ------------------------------------------- */

static inline json_t *tg_dd_fn_peek(json_t *tool)
{
    json_t *fn = json_object_get(tool, "function");
    return json_is_object(fn) ? fn : tool;
}

static inline const char *tg_dd_meta_name(json_t *d, const char *which)
{
    return json_string_value(json_object_get(json_object_get(d, "meta"), which));
}

/* Catalog position of a tool named by its upstream or agent name, or -1. */
static inline long tg_dd_lookup(json_t *d, const char *name)
{
    json_t *v = name ? json_object_get(json_object_get(d, "lookup"), name) : NULL;
    return v ? (long)json_integer_value(v) : -1;
}

static inline const char *tg_dd_up_name(json_t *d, long i)
{
    return json_string_value(json_array_get(json_object_get(d, "names"), (size_t)i));
}

static inline json_t *tg_dd_sanitized_peek(json_t *d, long i)
{
    return json_array_get(json_object_get(d, "catalog"), (size_t)i);
}

/* What one call of the model's is: a catalog tool, one of the three
 * meta-tools, or a name neither knows. */
enum call_kind { K_REAL, K_SEARCH, K_SCHEMA, K_CALL, K_UNKNOWN };

static inline enum call_kind tg_dd_kind_of(json_t *d, const char *name)
{
    if (!name)
        return K_UNKNOWN;
    if (strcmp(name, tg_dd_meta_name(d, "search")) == 0)
        return K_SEARCH;
    if (strcmp(name, tg_dd_meta_name(d, "schema")) == 0)
        return K_SCHEMA;
    if (strcmp(name, tg_dd_meta_name(d, "call")) == 0)
        return K_CALL;
    return tg_dd_lookup(d, name) >= 0 ? K_REAL : K_UNKNOWN;
}

/* ---- built here -------------------------------------------------------- */

/* Expand @S, @G, @C in a text to this request's meta-tool names. Into buf. */
const char *tg_dd_say(json_t *meta, const char *text, char *buf, size_t len);
/* A name's loose form (lower case, words joined by '_'). Into buf. */
const char *tg_dd_loose_form(const char *name, char *buf, size_t len);
/* The derivation for this request (new reference): cached or built. */
json_t *tg_dd_derivation_for(tg_ctx *ctx, json_t *tools, json_t *originals);

#endif
