/* catalog.c -- discovery's derivation: what is derived from the agent's
 * tool list alone (discovery.c's design comment). The catalog in the
 * route's dialect, its names and loose forms, the core tools left exposed,
 * the three meta-tools' definitions (names free of the agent's, their
 * descriptions, strict or not), the search index; one immutable json
 * object, cached per worker by content and by the tools array's address. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/cache.h"
#include "core/ctx.h"
#include "core/jsonio.h"
#include "discovery/catalog.h"
#include "discovery/disc_conf.h"
#include "discovery/groups.h"
#include "discovery/index.h"
#include "sanitize/schema.h"

#define CACHE_KIND "discovery"
#define GROUPS_LISTED 40 /* groups named in search_tools' description, largest first */
#define GROUP_ENUM_MAX 100 /* groups in search_tools' group enum (OpenAI's strict mode
                              takes 500 enum values in a request) */

/* ---- small helpers --------------------------------------------------- */

static const char *tool_name(json_t *tool)
{
    return json_string_value(json_object_get(tg_dd_fn_peek(tool), "name"));
}

static const char *str_or(json_t *v, const char *dflt)
{
    const char *s = json_string_value(v);
    return s ? s : dflt;
}

/* Expand @S, @G, @C in a text to this request's meta-tool names (they take
 * a prefix when the agent has tools of those names). Into buf. */
const char *tg_dd_say(json_t *meta, const char *text, char *buf, size_t len)
{
    static const char *const keys[3] = { "search", "schema", "call" };
    size_t o = 0;
    for (const char *p = text; *p && o + 1 < len; p++) {
        const char *k = NULL;
        if (p[0] == '@' && (p[1] == 'S' || p[1] == 'G' || p[1] == 'C'))
            k = keys[p[1] == 'S' ? 0 : p[1] == 'G' ? 1 : 2];
        if (!k) {
            buf[o++] = *p;
            continue;
        }
        const char *n = json_string_value(json_object_get(meta, k));
        o += (size_t)snprintf(buf + o, len - o, "%s", n ? n : "");
        if (o >= len)
            o = len - 1;
        p++;
    }
    buf[o] = '\0';
    return buf;
}

/* A name's loose form: lower case, words split at any other character and
 * at camelCase humps, joined by one '_' ("Asana-Get-My-Tasks",
 * "asana.get_my_tasks" and "asanaGetMyTasks" are all asana_get_my_tasks).
 * Into buf, cut at len. */
const char *tg_dd_loose_form(const char *name, char *buf, size_t len)
{
    size_t o = 0;
    int sep = 0, lower = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p && o + 2 < len; p++) {
        int alnum = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || *p >= 0x80;
        int upper = *p >= 'A' && *p <= 'Z';
        if (!alnum) {
            sep = o > 0;
            lower = 0;
            continue;
        }
        if ((sep || (upper && lower)) && o > 0)
            buf[o++] = '_';
        buf[o++] = (char)(upper ? *p + ('a' - 'A') : *p);
        sep = 0;
        lower = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9');
    }
    buf[o] = '\0';
    return buf;
}

/* ---- deciding, and naming ------------------------------------------- */

static int matches_core(const tg_disc_conf *dc, const char *a, const char *b)
{
    for (char **g = dc->core; g && *g; g++)
        if ((a && fnmatch(*g, a, 0) == 0) || (b && fnmatch(*g, b, 0) == 0))
            return 1;
    return 0;
}

static int name_taken(json_t *lookup_obj, const char *prefix, const char *base)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s%s", prefix, base);
    return json_object_get(lookup_obj, buf) != NULL;
}

/* The meta-tools keep their plain names unless the agent already has a tool
 * of one of those names; then all three take the first free prefix, which
 * depends only on the tool list, so it is stable across turns. */
static json_t *choose_meta_names(json_t *lookup_obj)
{
    static const char *const base[3] = { "search_tools", "get_tool_schema", "call_tool" };
    char prefix[32] = "";
    for (int i = 1; i < 100; i++) {
        if (!name_taken(lookup_obj, prefix, base[0]) &&
            !name_taken(lookup_obj, prefix, base[1]) && !name_taken(lookup_obj, prefix, base[2]))
            break;
        if (i == 1)
            snprintf(prefix, sizeof prefix, "toolgate_");
        else
            snprintf(prefix, sizeof prefix, "toolgate%d_", i);
    }
    char s[3][128];
    for (int k = 0; k < 3; k++)
        snprintf(s[k], sizeof s[k], "%s%s", prefix, base[k]);
    return json_pack("{ssssss}", "search", s[0], "schema", s[1], "call", s[2]);
}

/* Whether call_tool's free-form `arguments` object must travel as a JSON
 * string: strict dialects demand additionalProperties:false on every object
 * and Gemini rejects an object without properties. */
static int args_as_string(const tg_ctx *ctx)
{
    uint64_t f = ctx->schema ? ctx->schema->flags : 0;
    return (f & (TG_SR_STRICT | TG_SR_FREEFORM_STRING | TG_SR_OPENAPI_SUBSET)) ||
           tg_dialect_has(ctx->dialect, TG_DF_ARGS_AS_STRING);
}

static int dialect_strict(const tg_ctx *ctx)
{
    uint64_t f = ctx->schema ? ctx->schema->flags : 0;
    return (f & TG_SR_STRICT) || tg_dialect_has(ctx->dialect, TG_DF_STRICT_TOOLS);
}

/* ---- the meta-tools' own definitions -------------------------------- */

static json_t *make_tool(const char *name, const char *desc, json_t *props, json_t *required,
                         int strict)
{
    json_t *params = json_pack("{sssoso}", "type", "object", "properties", props, "required",
                               required);
    if (strict)
        json_object_set_new(params, "additionalProperties", json_false());
    json_t *fn = json_pack("{sssssO}", "name", name, "description", desc, "parameters", params);
    if (strict)
        json_object_set_new(fn, "strict", json_true());
    json_decref(params);
    return json_pack("{ssso}", "type", "function", "function", fn);
}

static json_t *prop(const char *type, const char *desc)
{
    return json_pack("{ssss}", "type", type, "description", desc);
}

/* "github (26), slack (8), ..." for the description: the largest groups
 * first (ties by name), GROUPS_LISTED at most, groups of one tool left out
 * unless named explicitly (they narrow nothing). */
static void put_groups(tg_buf *b, json_t *counts, size_t limit)
{
    size_t n = json_array_size(counts), shown = 0;
    if (!n)
        return;
    tg_buf_puts(b, " Groups (pass one as \"group\" to search only its tools): ");
    for (size_t i = 0; i < n && shown < GROUPS_LISTED; i++) {
        json_t *e = json_array_get(counts, i);
        char item[128];
        snprintf(item, sizeof item, "%s%s (%lld)", shown ? ", " : "",
                 json_string_value(json_array_get(e, 0)),
                 (long long)json_integer_value(json_array_get(e, 1)));
        if (b->len + strlen(item) + 2 > limit)
            break;
        tg_buf_puts(b, item);
        shown++;
    }
    tg_buf_puts(b, ".");
}

/* search_tools' description, with the catalog's names when list_names is on,
 * cut to the dialect's description limit (the schema stage already ran). */
static char *search_description(const tg_ctx *ctx, json_t *meta, json_t *names, size_t ncat,
                                json_t *group_counts)
{
    tg_buf b = { 0 };
    char head[640], text[640];
    snprintf(head, sizeof head,
             "Find tools for a task in a catalog of %zu tools that are not listed "
             "separately. Describe what you want to do in a few words; the answer "
             "lists matching tools (name and description) and the best matches "
             "carry their full parameters, so you can call one right away with "
             "@C. If you already know a tool's name, use @G or @C directly.",
             ncat);
    tg_dd_say(meta, head, text, sizeof text);
    memcpy(head, text, sizeof head);
    tg_buf_puts(&b, head);
    size_t limit = ctx->schema && ctx->schema->desc_max > 0 ? (size_t)ctx->schema->desc_max
                                                           : (size_t)-1;
    put_groups(&b, group_counts, limit);
    if (ctx->disc->list_names && json_array_size(names)) {
        tg_buf_puts(&b, " Catalog: ");
        for (size_t i = 0; i < json_array_size(names); i++) {
            const char *n = json_string_value(json_array_get(names, i));
            char more[64];
            snprintf(more, sizeof more, " ... and %zu more.", json_array_size(names) - i);
            if (b.len + strlen(n) + 2 + 24 > limit) {
                tg_buf_puts(&b, more);
                break;
            }
            if (i)
                tg_buf_puts(&b, ", ");
            tg_buf_puts(&b, n);
            if (i + 1 == json_array_size(names))
                tg_buf_puts(&b, ".");
        }
    }
    char *s = tg_strndup(b.data ? b.data : "", b.len < limit ? b.len : limit);
    tg_buf_free(&b);
    return s;
}

/* A strict dialect wants every property required: the optional ones then
 * take null as well. */
static json_t *optional_prop(json_t *p, int strict, json_t *req, const char *name)
{
    if (strict) {
        json_t *t = json_object_get(p, "type");
        json_object_set_new(p, "type", json_pack("[Os]", t, "null"));
        json_array_append_new(req, json_string(name));
    }
    return p;
}

/* group: an enum of the catalog's groups (GROUP_ENUM_MAX, largest first),
 * so a strict dialect's constrained decoding can only write one of them or
 * null; a group past the cap is still taken where nothing constrains the
 * model. A nullable enum lists null too: OpenAI's strict mode checks the
 * value against the enum, type or not. */
static json_t *group_prop(json_t *group_counts, int strict)
{
    json_t *p = prop("string", "Search only the tools of this group (one of the groups "
                               "listed above); leave it out to search all tools.");
    json_t *e = json_array();
    for (size_t i = 0; i < json_array_size(group_counts) && i < GROUP_ENUM_MAX; i++)
        json_array_append(e, json_array_get(json_array_get(group_counts, i), 0));
    if (strict)
        json_array_append_new(e, json_null());
    json_object_set_new(p, "enum", e);
    return p;
}

static json_t *meta_search_tool(const tg_ctx *ctx, json_t *meta, json_t *names, size_t ncat,
                                json_t *group_counts, int strict)
{
    char *desc = search_description(ctx, meta, names, ncat, group_counts);
    json_t *props = json_object();
    json_t *req = json_pack("[s]", "query");
    json_object_set_new(props, "query",
                        prop("string", "The task in a few words, e.g. 'list open pull "
                                       "requests' or 'take a screenshot'."));
    json_t *alts = json_pack("{sss{ss}ss}", "type", "array", "items", "type", "string",
                             "description",
                             "Other ways to say the same task (synonyms, the service's own "
                             "terms), searched as well; the results are merged.");
    json_object_set_new(props, "queries", optional_prop(alts, strict, req, "queries"));
    if (json_array_size(group_counts))
        json_object_set_new(props, "group",
                            optional_prop(group_prop(group_counts, strict), strict, req, "group"));
    if (!strict)
        json_object_set_new(props, "limit",
                            prop("integer", "How many matches to return (default 8, at most 25)."));
    json_t *t = make_tool(json_string_value(json_object_get(meta, "search")), desc, props, req,
                          strict);
    free(desc);
    return t;
}

static json_t *meta_schema_tool(json_t *meta, int strict)
{
    char b1[256], b2[256];
    json_t *names = json_pack("{sss{ss}ss}", "type", "array", "items", "type", "string",
                              "description",
                              tg_dd_say(meta, "Exact tool names, as given by @S or its catalog list.",
                                  b1, sizeof b1));
    json_t *props = json_pack("{so}", "names", names);
    return make_tool(json_string_value(json_object_get(meta, "schema")),
                     tg_dd_say(meta, "Get the full parameter schemas of catalog tools by exact name, "
                               "before calling them with @C.", b2, sizeof b2),
                     props, json_pack("[s]", "names"), strict);
}

static json_t *meta_call_tool(json_t *meta, int strict, int as_string)
{
    json_t *props = json_object();
    json_object_set_new(props, "name", prop("string", "Exact name of the catalog tool to call."));
    json_object_set_new(
        props, "arguments",
        as_string ? prop("string", "The tool's arguments as a JSON-encoded object, e.g. "
                                   "\"{\\\"path\\\": \\\"a.txt\\\"}\"; \"{}\" when it takes none.")
                  : prop("object", "The tool's arguments, an object matching its parameters."));
    char b[256];
    return make_tool(json_string_value(json_object_get(meta, "call")),
                     tg_dd_say(meta, "Call a catalog tool (found with @S or @G) by name with its "
                               "arguments.", b, sizeof b),
                     props, json_pack("[ss]", "name", "arguments"), strict);
}

/* Pass a meta-tool through the schema engineer's single-tool rewrite when
 * it exists, so it obeys the route's dialect exactly like the agent's. */
static json_t *sanitize_meta(const tg_ctx *ctx, json_t *tool)
{
    if (!ctx->schema)
        return tool;
    bool strict = false;
    json_t *t = tg_schema_rewrite_tool(ctx->schema, tool, NULL, NULL, NULL, &strict);
    if (!t)
        return tool;
    json_decref(tool);
    return t;
}

/* ---- the derivation (cached) ----------------------------------------- */

/* The originals, by agent name, to index the agent's own wording. */
static json_t *originals_by_name(json_t *originals)
{
    json_t *by = json_object();
    for (size_t i = 0; i < json_array_size(originals); i++) {
        const char *n = tool_name(json_array_get(originals, i));
        if (n && !json_object_get(by, n))
            json_object_set(by, n, json_array_get(originals, i));
    }
    return by;
}

static int by_count_then_name(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t cx = json_integer_value(json_array_get(x, 1));
    json_int_t cy = json_integer_value(json_array_get(y, 1));
    if (cx != cy)
        return cx > cy ? -1 : 1;
    return strcmp(json_string_value(json_array_get(x, 0)), json_string_value(json_array_get(y, 0)));
}

/* [[group, tools], ...], the largest first (a new array). */
static json_t *count_groups(json_t *groups)
{
    json_t *count = json_object();
    for (size_t i = 0; i < json_array_size(groups); i++) {
        const char *g = json_string_value(json_array_get(groups, i));
        if (g)
            json_object_set_new(count, g,
                                json_integer(json_integer_value(json_object_get(count, g)) + 1));
    }
    size_t n = json_object_size(count), k = 0;
    json_t **rows = tg_malloc((n ? n : 1) * sizeof *rows);
    const char *key;
    json_t *v;
    json_object_foreach(count, key, v)
        rows[k++] = json_pack("[sO]", key, v);
    qsort(rows, k, sizeof *rows, by_count_then_name);
    json_t *out = json_array();
    for (size_t i = 0; i < k; i++)
        json_array_append_new(out, rows[i]);
    free(rows);
    json_decref(count);
    return out;
}

/* loose form -> catalog position; -1 when two tools share it (then only
 * the exact name finds either). */
static void add_loose(json_t *loose, const char *name, long at)
{
    char buf[256];
    const char *k = tg_dd_loose_form(name, buf, sizeof buf);
    json_t *v = json_object_get(loose, k);
    if (!*k || (v && json_integer_value(v) == at))
        return;
    json_object_set_new(loose, k, json_integer(v ? -1 : (json_int_t)at));
}

/* A meta-tool's parameters as toolgate declares them, before the dialect's
 * rewrite: what its arguments are repaired against (meta_args). */
static json_t *keep_params(json_t *params, const char *which, json_t *tool)
{
    json_object_set(params, which, json_object_get(tg_dd_fn_peek(tool), "parameters"));
    return tool;
}

static json_t *derive(const tg_ctx *ctx, json_t *catalog, json_t *originals)
{
    size_t n = json_array_size(catalog);
    json_t *names = json_array(), *agent = json_array(), *lk = json_object();
    json_t *exposed = json_object(), *text = json_array(), *listed = json_array();
    json_t *loose = json_object();
    json_t *by = originals_by_name(originals);
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_array_get(catalog, i);
        const char *u = str_or(json_object_get(tg_dd_fn_peek(t), "name"), "");
        const char *a = tg_schema_agent_name(ctx, u);
        json_t *orig = json_object_get(by, a);
        json_array_append_new(names, json_string(u));
        json_array_append_new(agent, json_string(a));
        json_array_append(text, orig ? orig : t);
        if (!json_object_get(lk, u))
            json_object_set_new(lk, u, json_integer((json_int_t)i));
        if (!json_object_get(lk, a))
            json_object_set_new(lk, a, json_integer((json_int_t)i));
        add_loose(loose, u, (long)i);
        add_loose(loose, a, (long)i);
        if (matches_core(ctx->disc, u, a))
            json_object_set_new(exposed, u, json_true());
        else
            json_array_append_new(listed, json_string(u));
    }
    json_decref(by);
    json_t *groups = tg_disc_groups(agent);
    if (!groups)
        groups = json_array();
    json_t *group_counts = count_groups(groups);

    json_t *meta = choose_meta_names(lk);
    int strict = dialect_strict(ctx), as_string = args_as_string(ctx);
    json_t *up = json_array();
    for (size_t i = 0; i < n; i++)
        if (json_object_get(exposed, json_string_value(json_array_get(names, i))))
            json_array_append(up, json_array_get(catalog, i));
    json_t *params = json_object();
    json_array_append_new(up, sanitize_meta(ctx, keep_params(params, "search",
                                                             meta_search_tool(ctx, meta, listed, n,
                                                                              group_counts, strict))));
    json_array_append_new(up, sanitize_meta(ctx, keep_params(params, "schema",
                                                             meta_schema_tool(meta, strict))));
    json_t *call = sanitize_meta(ctx, keep_params(params, "call",
                                                  meta_call_tool(meta, strict, as_string)));
    /* the rewrite may itself have turned the free-form object into a string */
    json_t *argt = json_object_get(
        json_object_get(json_object_get(json_object_get(tg_dd_fn_peek(call), "parameters"), "properties"),
                        "arguments"),
        "type");
    if (json_is_string(argt) && strcmp(json_string_value(argt), "string") == 0)
        as_string = 1;
    json_array_append_new(up, call);

    json_t *index = tg_dindex_build(text);
    json_decref(text);
    json_decref(listed);
    json_t *d = json_pack("{sosOsosososososbsososososo}", "names", names, "catalog", catalog,
                          "agent", agent, "lookup", lk, "exposed", exposed, "meta", meta, "up",
                          up, "args_string", as_string, "index", index ? index : json_object(),
                          "groups", groups, "group_counts", group_counts, "loose", loose,
                          "meta_params", params);
    return d;
}

static size_t derivation_cost(json_t *d, size_t tools_bytes)
{
    return tools_bytes * 3 + tg_dindex_cost(json_object_get(d, "index"));
}

/* Everything besides the tools that shapes a derivation. */
static uint64_t rules_key(const tg_ctx *ctx, uint64_t h)
{
    const tg_disc_conf *dc = ctx->disc;
    int nums[] = { (int)ctx->dialect, dc->list_names, ctx->schema ? ctx->schema->desc_max : 0,
                   ctx->schema ? ctx->schema->name_max : 0 };
    uint64_t flags = ctx->schema ? ctx->schema->flags : 0;
    h = tg_hash64(nums, sizeof nums, h);
    h = tg_hash64(&flags, sizeof flags, h);
    for (char **g = dc->core; g && *g; g++)
        h = tg_hash64(*g, strlen(*g) + 1, h);
    if (ctx->route_name)
        h = tg_hash64(ctx->route_name, strlen(ctx->route_name), h);
    return h;
}

static uint64_t content_key(const tg_ctx *ctx, const char *tools_text)
{
    return rules_key(ctx, tg_hash64(tools_text, strlen(tools_text), 0x7467646973630001ull));
}

/* On a schema-cache hit body["tools"] is the very array that an earlier
 * derivation holds as its catalog; that reference keeps the address from
 * being reused, so the address alone identifies the content and the agent's
 * 1,000 tools need not be serialized again. */
static uint64_t address_key(const tg_ctx *ctx, json_t *tools)
{
    uintptr_t a = (uintptr_t)tools;
    return rules_key(ctx, tg_hash64(&a, sizeof a, 0x7467646973630002ull));
}

static json_t *cached_by_address(const tg_ctx *ctx, json_t *tools)
{
    json_t *d = tg_cache_get(ctx->cache, CACHE_KIND, address_key(ctx, tools));
    if (d && json_object_get(d, "catalog") != tools) {
        json_decref(d);
        d = NULL;
    }
    return d;
}

/* The derivation for this request: by address, by content, or built. */
json_t *tg_dd_derivation_for(tg_ctx *ctx, json_t *tools, json_t *originals)
{
    json_t *d = cached_by_address(ctx, tools);
    if (d)
        return d;
    char *text = tg_json_dumps(originals);
    size_t len = strlen(text);
    uint64_t key = content_key(ctx, text);
    free(text);
    d = tg_cache_get(ctx->cache, CACHE_KIND, key);
    if (!d) {
        d = derive(ctx, tools, originals);
        json_object_set_new(d, "bytes_in", json_integer((json_int_t)len));
        json_object_set_new(d, "key", json_integer((json_int_t)key));  /* embed.c's and hints.c's */
        tg_cache_put(ctx->cache, CACHE_KIND, key, d, derivation_cost(d, len));
    }
    if (json_object_get(d, "catalog") != tools) {
        /* same content, another array: serve from this one from now on */
        json_t *d2 = json_copy(d);
        json_object_set(d2, "catalog", tools);
        json_decref(d);
        d = d2;
    }
    tg_cache_put(ctx->cache, CACHE_KIND, address_key(ctx, tools), d, 1024);
    return d;
}
