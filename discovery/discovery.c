/* discovery.c -- lazy tool discovery (issue #6).
 *
 * A request with a large tool list goes upstream with only its core tools
 * plus three meta-tools: search_tools (BM25F over the catalog, index.c;
 * several phrasings fused by reciprocal rank, a group filter, groups.c),
 * get_tool_schema and call_tool. toolgate answers the first two itself in
 * inner rounds the agent never sees; call_tool, or a catalog tool called by
 * its real name, reaches the agent as an ordinary call of that tool.
 *
 * Stateless: everything comes from the request. What is derived from the
 * tool list alone (catalog, index, the upstream tools array) is one
 * immutable json object, "the derivation", cached per worker under
 * (kind "discovery", hash of the agent's tools and the route's rules). The
 * upstream tools array is therefore the same bytes on every turn, and the
 * agent's history is rewritten so that the calls it made of hidden tools
 * read as the call_tool calls the model made (see rewrite_history).
 *
 * Mixed turns: when one response calls meta-tools and real tools, the real
 * calls go to the agent at once and the meta calls are dropped. The model
 * has already decided what to do; holding its real calls back while we run
 * more rounds would need state across requests or risk duplicate calls. If
 * it still needs the search, it asks again on the next turn.
 *
 * ctx->disc_state (per request):
 *   {"d": derivation, "rounds": n, "usage": {...}, "note": "...", "forced": name}
 */
#include "discovery/discovery.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/cache.h"
#include "sanitize/hygiene.h"
#include "core/ctx.h"
#include "repair/repair.h"
#include "sanitize/schema.h"
#include "core/jsonio.h"
#include "discovery/embed.h"
#include "discovery/groups.h"
#include "discovery/hints.h"
#include "discovery/index.h"

#define CACHE_KIND "discovery"
#define SEARCH_DEFAULT 8
#define SEARCH_MAX 25
#define QUERIES_MAX 8    /* alternative phrasings merged in one search */
#define FUSE_DEPTH 50    /* each phrasing's top that reciprocal rank fusion sees */
#define RRF_K 60.0       /* the usual constant of reciprocal rank fusion */
#define GROUPS_LISTED 40 /* groups named in search_tools' description, largest first */
#define GROUP_ENUM_MAX 100 /* groups in search_tools' group enum (OpenAI's strict mode
                              takes 500 enum values in a request) */
#define SUGGEST_MAX 3
#define LINE_MAX_BYTES 160

/* ---- small helpers --------------------------------------------------- */

static json_t *fn_peek(json_t *tool)
{
    json_t *fn = json_object_get(tool, "function");
    return json_is_object(fn) ? fn : tool;
}

static const char *tool_name(json_t *tool)
{
    return json_string_value(json_object_get(fn_peek(tool), "name"));
}

static const char *str_or(json_t *v, const char *dflt)
{
    const char *s = json_string_value(v);
    return s ? s : dflt;
}

static char *dump(json_t *v)
{
    return tg_json_dumps(v);
}

static json_t *state_d_peek(const tg_ctx *ctx)
{
    return json_object_get(ctx->disc_state, "d");
}

static const char *meta_name(json_t *d, const char *which)
{
    return json_string_value(json_object_get(json_object_get(d, "meta"), which));
}

/* Expand @S, @G, @C in a text to this request's meta-tool names (they take
 * a prefix when the agent has tools of those names). Into buf. */
static const char *say(json_t *meta, const char *text, char *buf, size_t len)
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

/* Catalog position of a tool named by its upstream or agent name, or -1. */
static long lookup(json_t *d, const char *name)
{
    json_t *v = name ? json_object_get(json_object_get(d, "lookup"), name) : NULL;
    return v ? (long)json_integer_value(v) : -1;
}

/* A name's loose form: lower case, words split at any other character and
 * at camelCase humps, joined by one '_' ("Asana-Get-My-Tasks",
 * "asana.get_my_tasks" and "asanaGetMyTasks" are all asana_get_my_tasks).
 * Into buf, cut at len. */
static const char *loose_form(const char *name, char *buf, size_t len)
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

/* lookup, then by loose form when exactly one tool has it: a model's
 * case and separator variants of a name in the meta-tools' arguments. */
static long lookup_loose(json_t *d, const char *name)
{
    long at = lookup(d, name);
    if (at >= 0 || !name)
        return at;
    char buf[256];
    json_t *v = json_object_get(json_object_get(d, "loose"), loose_form(name, buf, sizeof buf));
    return v ? (long)json_integer_value(v) : -1;
}

static const char *up_name(json_t *d, long i)
{
    return json_string_value(json_array_get(json_object_get(d, "names"), (size_t)i));
}

static json_t *sanitized_peek(json_t *d, long i)
{
    return json_array_get(json_object_get(d, "catalog"), (size_t)i);
}

static int is_exposed(const tg_ctx *ctx, json_t *d, const char *upstream)
{
    const char *forced = json_string_value(json_object_get(ctx->disc_state, "forced"));
    return json_object_get(json_object_get(d, "exposed"), upstream) != NULL ||
           (forced && strcmp(forced, upstream) == 0);
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
    unsigned f = ctx->schema ? ctx->schema->flags : 0;
    return (f & (TG_SR_STRICT | TG_SR_FREEFORM_STRING | TG_SR_OPENAPI_SUBSET)) ||
           tg_dialect_has(ctx->dialect, TG_DF_ARGS_AS_STRING);
}

static int dialect_strict(const tg_ctx *ctx)
{
    unsigned f = ctx->schema ? ctx->schema->flags : 0;
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

/* search_tools' description, with the catalog's names when list_names is on,
 * cut to the dialect's description limit (the schema stage already ran). */
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
    say(meta, head, text, sizeof text);
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
                              say(meta, "Exact tool names, as given by @S or its catalog list.",
                                  b1, sizeof b1));
    json_t *props = json_pack("{so}", "names", names);
    return make_tool(json_string_value(json_object_get(meta, "schema")),
                     say(meta, "Get the full parameter schemas of catalog tools by exact name, "
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
                     say(meta, "Call a catalog tool (found with @S or @G) by name with its "
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
    const char *k = loose_form(name, buf, sizeof buf);
    json_t *v = json_object_get(loose, k);
    if (!*k || (v && json_integer_value(v) == at))
        return;
    json_object_set_new(loose, k, json_integer(v ? -1 : (json_int_t)at));
}

/* A meta-tool's parameters as toolgate declares them, before the dialect's
 * rewrite: what its arguments are repaired against (meta_args). */
static json_t *keep_params(json_t *params, const char *which, json_t *tool)
{
    json_object_set(params, which, json_object_get(fn_peek(tool), "parameters"));
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
        const char *u = str_or(json_object_get(fn_peek(t), "name"), "");
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
        json_object_get(json_object_get(json_object_get(fn_peek(call), "parameters"), "properties"),
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
    unsigned flags = ctx->schema ? ctx->schema->flags : 0;
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
static json_t *derivation_for(tg_ctx *ctx, json_t *tools, json_t *originals)
{
    json_t *d = cached_by_address(ctx, tools);
    if (d)
        return d;
    char *text = dump(originals);
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

/* ---- history: calls of hidden tools read as call_tool calls ---------- */

static json_t *call_tool_arguments(json_t *d, const char *upstream, const char *args_text)
{
    json_t *args = args_text ? tg_json_load(args_text, strlen(args_text), JSON_DECODE_ANY, NULL) : NULL;
    json_t *wrapped = json_object();
    json_object_set_new(wrapped, "name", json_string(upstream));
    if (json_is_true(json_object_get(d, "args_string")))
        json_object_set_new(wrapped, "arguments", json_string(args_text ? args_text : "{}"));
    else
        json_object_set_new(wrapped, "arguments",
                            json_is_object(args) ? json_incref(args) : json_object());
    json_decref(args);
    char *s = dump(wrapped);
    json_decref(wrapped);
    json_t *r = json_string(s ? s : "{}");
    free(s);
    return r;
}

static void rewrite_history(json_t *body, const tg_ctx *ctx, json_t *d)
{
    json_t *msgs = json_object_get(body, "messages");
    const char *call = meta_name(d, "call");
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *calls = json_object_get(json_array_get(msgs, i), "tool_calls");
        for (size_t k = 0; k < json_array_size(calls); k++) {
            json_t *c = json_array_get(calls, k);
            json_t *fn = json_object_get(c, "function");
            long at = lookup(d, json_string_value(json_object_get(fn, "name")));
            if (at < 0 || is_exposed(ctx, d, up_name(d, at)))
                continue;
            /* What else the call carries went through the route's hygiene
             * already and is the provider's (Gemini 3's thought signature,
             * or fill_signatures' stand-in): it stays on the call the model
             * made, which Gemini 3 refuses without it (R19). */
            json_t *nc = json_deep_copy(c);
            json_object_del(nc, "function");
            json_object_set_new(nc, "type", json_string("function"));
            json_object_set_new(
                nc, "function",
                json_pack("{ssso}", "name", call, "arguments",
                          call_tool_arguments(d, up_name(d, at),
                                              json_string_value(json_object_get(fn, "arguments")))));
            tg_explain_add(ctx->explain, "discovery", json_string_value(json_object_get(fn, "name")),
                           NULL, "history_call_tool", fn, json_object_get(nc, "function"));
            json_array_set_new(calls, k, nc);
        }
    }
}

/* tool_choice naming a hidden tool: expose that one tool for this turn, at
 * the end so that the common prefix of the tools array stays the same. */
static void honour_tool_choice(json_t *body, tg_ctx *ctx, json_t *d, json_t *tools)
{
    json_t *tc = json_object_get(body, "tool_choice");
    const char *n = json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
    long at = lookup(d, n);
    if (at < 0 || is_exposed(ctx, d, up_name(d, at)))
        return;
    json_object_set_new(ctx->disc_state, "forced", json_string(up_name(d, at)));
    json_array_append(tools, sanitized_peek(d, at));
}

/* Successor hints (hints.c) beside the results of hidden tools, before the
 * history's calls become call_tool calls; the tools the model reads of for
 * the first time this turn are kept to see whether it calls one next. */
static void note_hints(json_t *body, tg_ctx *ctx, json_t *d)
{
    json_t *fresh = tg_disc_hints_add(body, d, ctx->cache);
    if (json_array_size(fresh)) {
        json_object_set(ctx->disc_state, "hinted", fresh);
        ctx->stats.hints_given++;
    }
    json_decref(fresh);
}

/* The turn ends with these calls (real ones, and call_tool's unwrapped):
 * one of them is a tool hinted this turn. */
static void count_hint_followed(tg_ctx *ctx, json_t *d, json_t *calls, json_t *converted)
{
    json_t *hinted = json_object_get(ctx->disc_state, "hinted");
    if (hinted && (tg_disc_hints_followed(d, hinted, calls) ||
                   tg_disc_hints_followed(d, hinted, converted)))
        ctx->stats.hints_followed = 1;  /* once a turn, however many calls */
}

static int should_collapse(const tg_disc_conf *dc, size_t ntools)
{
    if (!dc || dc->mode == TG_DISC_OFF || ntools == 0)
        return 0;
    return dc->mode == TG_DISC_ON || (long)ntools > (long)dc->threshold;
}

int tg_discovery_stage(json_t *body, tg_ctx *ctx, tg_error *err)
{
    (void)err;
    json_t *tools = json_object_get(body, "tools");
    json_t *originals = ctx->tools ? ctx->tools : tools;
    if (!json_is_array(tools))
        return 0;
    size_t n = json_array_size(tools);
    ctx->stats.tools_in = (unsigned)json_array_size(originals);
    ctx->stats.tools_out = (unsigned)n;
    if (!should_collapse(ctx->disc, n))
        return 0;  /* bytes are measured where they are already at hand */

    json_t *d = derivation_for(ctx, tools, originals);
    size_t bytes_in = (size_t)json_integer_value(json_object_get(d, "bytes_in"));
    if (json_object_size(json_object_get(d, "exposed")) >= n) {
        json_decref(d);  /* every tool is core: nothing to hide */
        ctx->stats.tools_bytes_in = bytes_in;
        ctx->stats.tools_bytes_out = json_dumpb(tools, NULL, 0, JSON_COMPACT);
        return 0;
    }

    json_decref(ctx->disc_state);
    ctx->disc_state = json_pack("{sosi}", "d", d, "rounds", 0);
    json_t *up = json_copy(json_object_get(d, "up"));  /* shallow: tools are shared */
    honour_tool_choice(body, ctx, d, up);
    if (ctx->disc->hints)
        note_hints(body, ctx, d);
    rewrite_history(body, ctx, d);
    json_object_set_new(body, "tools", up);
    json_decref(ctx->request);
    ctx->request = json_incref(body);

    ctx->stats.tools_out = (unsigned)json_array_size(up);
    ctx->stats.tools_bytes_in = bytes_in;
    ctx->stats.tools_bytes_out = json_dumpb(up, NULL, 0, JSON_COMPACT);
    tg_explain_add(ctx->explain, "discovery", NULL, "/tools", "collapse", NULL, NULL);
    return 0;
}

/* ---- answering the meta-tools ---------------------------------------- */

/* The first line or sentence of a description, cut at a UTF-8 boundary. */
static json_t *one_line(const char *s)
{
    if (!s)
        return json_string("");
    while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
        s++;
    size_t n = strcspn(s, "\n");
    for (size_t i = 20; i + 1 < n; i++)
        if (s[i] == '.' && s[i + 1] == ' ') {
            n = i + 1;
            break;
        }
    json_t *r = json_stringn(s, tg_utf8_cut(s, n, LINE_MAX_BYTES));
    return r ? r : json_string("");
}

static json_t *tool_entry(json_t *d, long at, int with_params, int full_desc)
{
    json_t *fn = fn_peek(sanitized_peek(d, at));
    const char *desc = json_string_value(json_object_get(fn, "description"));
    json_t *e = json_object();
    json_object_set_new(e, "name", json_string(up_name(d, at)));
    json_t *g = json_array_get(json_object_get(d, "groups"), (size_t)at);
    if (json_is_string(g))
        json_object_set(e, "group", g);
    json_object_set_new(e, "description", full_desc ? json_string(desc ? desc : "") : one_line(desc));
    if (with_params) {
        json_t *p = json_object_get(fn, "parameters");
        json_object_set_new(e, "parameters",
                            p ? json_incref(p) : json_pack("{ss}", "type", "object"));
    }
    return e;
}

/* The tools of a group (case-insensitive, separators loose), as a per-tool
 * mask; NULL when no group was asked for, or when the group does not exist
 * (*unknown set): a group the model made up must not hide the tool it
 * looks for, so all tools are searched then, and the answer says so. */
static unsigned char *group_mask(json_t *d, const char *group, int *unknown)
{
    *unknown = 0;
    if (!group || !*group)
        return NULL;
    json_t *groups = json_object_get(d, "groups");
    size_t n = json_array_size(groups), hits = 0;
    unsigned char *m = tg_calloc(n ? n : 1, 1);
    char wb[128], gb[128];
    const char *want = loose_form(group, wb, sizeof wb);
    for (size_t i = 0; i < n; i++) {
        const char *g = json_string_value(json_array_get(groups, i));
        if (g && (strcasecmp(g, group) == 0 ||
                  strcmp(loose_form(g, gb, sizeof gb), want) == 0)) {
            m[i] = 1;
            hits++;
        }
    }
    *unknown = hits == 0;
    if (*unknown) {  /* then all tools are searched (search_answer) */
        free(m);
        m = NULL;
    }
    return m;
}

/* What a model writes in group when it means none (a strict dialect makes
 * it write something): searched as no group, without a note. */
static int means_no_group(const char *g)
{
    static const char *const words[] = { "null", "none", "all", "any", "*", "", NULL };
    for (const char *const *w = words; *w; w++)
        if (strcasecmp(g, *w) == 0)
            return 1;
    return 0;
}

/* The phrasings to search: query, then each string of queries (a lone
 * string counts as one), QUERIES_MAX at most, empty ones skipped. */
static size_t collect_queries(json_t *args, const char **q)
{
    size_t n = 0;
    json_t *query = json_object_get(args, "query");
    const char *one = json_string_value(query);
    if (one && *one)
        q[n++] = one;
    for (size_t i = 0; i < json_array_size(query) && n < QUERIES_MAX; i++) {
        const char *s = json_string_value(json_array_get(query, i));  /* a list given */
        if (s && *s)
            q[n++] = s;
    }
    json_t *more = json_object_get(args, "queries");
    if (json_is_string(more) && *json_string_value(more) && n < QUERIES_MAX)
        q[n++] = json_string_value(more);
    for (size_t i = 0; i < json_array_size(more) && n < QUERIES_MAX; i++) {
        const char *s = json_string_value(json_array_get(more, i));
        if (s && *s)
            q[n++] = s;
    }
    return n;
}

typedef struct fused {
    size_t doc;
    double score;
} fused;

static int fused_better(const void *a, const void *b)
{
    const fused *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->doc < y->doc ? -1 : x->doc > y->doc;
}

/* Rank for several phrasings at once: each phrasing's top FUSE_DEPTH (in
 * the group when one is given), merged by reciprocal rank fusion, which
 * needs no common scale between the phrasings' scores; a tool several
 * phrasings find goes up. One phrasing keeps its own order. With
 * discovery_embeddings, each phrasing's top by cosine joins the fusion
 * (embed.c). Fills out[] (best first), returns how many tools matched. */
static size_t fused_search(const tg_ctx *ctx, json_t *d, const char **q, size_t nq,
                           const unsigned char *mask, size_t *out, size_t max)
{
    json_t *index = json_object_get(d, "index");
    size_t n = json_array_size(json_object_get(d, "names"));
    double *rrf = tg_calloc(n ? n : 1, sizeof *rrf);
    fused *all = tg_malloc((n ? n : 1) * sizeof *all);
    size_t matched = 0, got = 0;
    for (size_t k = 0; k < nq; k++) {
        size_t hits[FUSE_DEPTH];
        size_t m = tg_dindex_search_in(index, q[k], &tg_dindex_defaults, mask, hits, NULL,
                                       FUSE_DEPTH);
        if (m > matched)
            matched = m;  /* a lower bound of the union, enough for "more" */
        for (size_t i = 0; i < m && i < FUSE_DEPTH; i++)
            rrf[hits[i]] += 1.0 / (RRF_K + (double)i + 1.0);
    }
    tg_disc_embed_fuse(ctx, ctx->disc->embed_route, ctx->disc->embed_model, d, q, nq, mask,
                       FUSE_DEPTH, RRF_K, rrf);
    for (size_t i = 0; i < n; i++)
        if (rrf[i] > 0)
            all[got++] = (fused){ i, rrf[i] };
    qsort(all, got, sizeof *all, fused_better);
    if (got > matched)
        matched = got;
    for (size_t i = 0; i < got && i < max; i++)
        out[i] = all[i].doc;
    free(rrf);
    free(all);
    return matched;
}

static json_t *search_answer(const tg_ctx *ctx, json_t *d, json_t *args)
{
    json_int_t limit = json_integer_value(json_object_get(args, "limit"));
    if (limit <= 0)
        limit = SEARCH_DEFAULT;
    if (limit > SEARCH_MAX)
        limit = SEARCH_MAX;
    const char *q[QUERIES_MAX];
    size_t nq = collect_queries(args, q);
    const char *group = json_string_value(json_object_get(args, "group"));
    int unknown = 0;
    unsigned char *mask = group_mask(d, group, &unknown);
    if (unknown && means_no_group(group))
        unknown = 0;
    size_t hits[SEARCH_MAX];
    size_t matched = nq ? fused_search(ctx, d, q, nq, mask, hits, (size_t)limit) : 0;
    free(mask);
    size_t got = matched < (size_t)limit ? matched : (size_t)limit;
    json_t *results = json_array();
    for (size_t i = 0; i < got; i++)
        json_array_append_new(results, tool_entry(d, (long)hits[i],
                                                  (int)i < ctx->disc->search_schemas, 0));
    json_t *r = json_pack("{sosI}", "results", results, "more", (json_int_t)(matched - got));
    if (!nq)
        json_object_set_new(r, "message",
                            json_string("Pass {\"query\": \"what you want to do\"}, e.g. "
                                        "{\"query\": \"create a calendar event\"}."));
    else if (!got)
        json_object_set_new(r, "message",
                            json_string("No tool matched. Try other words for the task; "
                                        "the catalog's names are listed in this tool's description."));
    if (unknown) {
        char note[256];
        snprintf(note, sizeof note,
                 "\"%.80s\" is not a group, so all tools were searched; the groups are listed "
                 "in this tool's description.", group);
        json_object_set_new(r, "note", json_string(note));
    }
    return r;
}

/* Close names for a wrong one: spelling neighbours first, then what a
 * search with the name's words finds. */
static json_t *did_you_mean(json_t *d, const char *name)
{
    json_t *out = json_array();
    json_t *names = json_object_get(d, "names");
    size_t n = json_array_size(names);
    unsigned best[SUGGEST_MAX];
    long at[SUGGEST_MAX];
    size_t k = 0;
    unsigned cap = (unsigned)strlen(name) / 3 + 2;
    for (size_t i = 0; i < n; i++) {
        unsigned dist = tg_dindex_distance(name, json_string_value(json_array_get(names, i)));
        if (dist > cap || (k == SUGGEST_MAX && dist >= best[k - 1]))
            continue;
        size_t j = k < SUGGEST_MAX ? k++ : k - 1;
        while (j > 0 && best[j - 1] > dist) {
            best[j] = best[j - 1];
            at[j] = at[j - 1];
            j--;
        }
        best[j] = dist;
        at[j] = (long)i;
    }
    for (size_t i = 0; i < k; i++)
        json_array_append_new(out, json_string(up_name(d, at[i])));
    size_t hits[SUGGEST_MAX];
    size_t m = tg_dindex_search(json_object_get(d, "index"), name, hits, NULL, SUGGEST_MAX);
    for (size_t i = 0; i < m && i < SUGGEST_MAX && json_array_size(out) < SUGGEST_MAX; i++) {
        const char *s = up_name(d, (long)hits[i]);
        int dup = 0;
        for (size_t j = 0; j < json_array_size(out); j++)
            dup |= strcmp(json_string_value(json_array_get(out, j)), s) == 0;
        if (!dup)
            json_array_append_new(out, json_string(s));
    }
    return out;
}

/* A model that passes "a, b" instead of ["a", "b"] still gets both. */
static json_t *split_names(const char *s)
{
    json_t *out = json_array();
    while (*s) {
        s += strspn(s, ", \t\n");
        size_t n = strcspn(s, ", \t\n");
        if (n)
            json_array_append_new(out, json_stringn(s, n));
        s += n;
    }
    return out;
}

static json_t *schema_answer(json_t *d, json_t *names)
{
    json_t *tools = json_array(), *unknown = json_array();
    json_t *list = json_is_string(names) ? split_names(json_string_value(names))
                                         : json_incref(names);
    for (size_t i = 0; i < json_array_size(list); i++) {
        const char *n = json_string_value(json_array_get(list, i));
        long at = lookup_loose(d, n);
        if (at >= 0)
            json_array_append_new(tools, tool_entry(d, at, 1, 1));
        else
            json_array_append_new(unknown, json_pack("{ssso}", "name", n ? n : "", "did_you_mean",
                                                     did_you_mean(d, n ? n : "")));
    }
    json_t *r = json_pack("{soso}", "tools", tools, "unknown", unknown);
    char b[256];
    if (!json_array_size(list))
        json_object_set_new(r, "message",
                            json_string(say(json_object_get(d, "meta"),
                                            "Pass the exact names of the tools to describe, e.g. "
                                            "{\"names\": [\"create_issue\"]}; @S finds names.",
                                            b, sizeof b)));
    json_decref(list);
    return r;
}

/* {"error": fmt with @-names expanded and %s = name, "did_you_mean": [...]} */
static json_t *error_answer(json_t *d, const char *fmt, const char *name)
{
    char text[512], msg[768];
    say(json_object_get(d, "meta"), fmt, text, sizeof text);
    snprintf(msg, sizeof msg, text, name ? name : "");
    json_t *r = json_pack("{ss}", "error", msg);
    if (name && *name)
        json_object_set_new(r, "did_you_mean", did_you_mean(d, name));
    return r;
}

/* ---- classifying one assistant message ------------------------------- */

enum call_kind { K_REAL, K_SEARCH, K_SCHEMA, K_CALL, K_UNKNOWN };

static enum call_kind kind_of(json_t *d, const char *name)
{
    if (!name)
        return K_UNKNOWN;
    if (strcmp(name, meta_name(d, "search")) == 0)
        return K_SEARCH;
    if (strcmp(name, meta_name(d, "schema")) == 0)
        return K_SCHEMA;
    if (strcmp(name, meta_name(d, "call")) == 0)
        return K_CALL;
    return lookup(d, name) >= 0 ? K_REAL : K_UNKNOWN;
}

static json_t *parse_args(json_t *call)
{
    json_t *a = json_object_get(json_object_get(call, "function"), "arguments");
    if (json_is_object(a))
        return json_deep_copy(a);  /* meta_args repairs it in place */
    json_t *v = json_string_value(a) ? tg_json_load(json_string_value(a), json_string_length(a), JSON_DECODE_ANY, NULL)
                                     : json_object();
    if (json_is_string(v)) {  /* the whole object encoded once more */
        json_t *inner = tg_json_load(json_string_value(v), json_string_length(v), 0, NULL);
        json_decref(v);
        v = inner;
    }
    if (json_is_object(v))
        return v;
    json_decref(v);
    return NULL;
}

/* A meta-tool call's arguments, repaired like any tool's against the
 * meta-tool's declared parameters (R15: "[\"a\"]" where names is an array,
 * "5" where limit is an integer), so a model's slip costs no round; NULL
 * when they are not an object. which: "search", "schema" or "call". */
static json_t *meta_args(tg_ctx *ctx, json_t *d, json_t *call, const char *which)
{
    json_t *args = parse_args(call);
    json_t *params = json_object_get(json_object_get(d, "meta_params"), which);
    if (args && params)
        tg_repair_decode_args(ctx, params, args);
    return args;
}

/* A deterministic 9-character id: valid for every dialect's id rules. */
static json_t *make_id(const char *seed, size_t n)
{
    static const char abc[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    uint64_t h = tg_hash64(seed, strlen(seed), 0x63616c6cull + n);
    char id[10];
    for (int i = 0; i < 9; i++) {
        id[i] = abc[h % 62];
        h = h / 62 + (uint64_t)i * 0x9e3779b97f4a7c15ull;
    }
    id[9] = '\0';
    return json_string(id);
}

/* call_tool(name, arguments) -> an ordinary call of that tool, with its
 * upstream name and the arguments as the model wrote them: the repair stage
 * then treats it like any call (agent name, arguments checked and coerced
 * against the real schema, id). NULL and *err set when it cannot be. */
static json_t *convert_call_tool(tg_ctx *ctx, json_t *d, json_t *call, json_t **err)
{
    json_t *args = meta_args(ctx, d, call, "call");
    const char *name = json_string_value(json_object_get(args, "name"));
    long at = lookup_loose(d, name);
    json_t *inner = json_object_get(args, "arguments");
    char *text = NULL;
    *err = NULL;
    if (!name) {
        *err = error_answer(d, "@C needs {\"name\": a catalog tool name, \"arguments\": "
                               "its arguments object}.%s", "");
    } else if (at < 0 || kind_of(d, up_name(d, at)) != K_REAL) {
        *err = error_answer(d, "Unknown tool \"%s\": it is not in the catalog. Use one of "
                               "did_you_mean, or @S to find the right one.", name);
    } else if (json_is_string(inner)) {
        json_t *obj = tg_json_load(json_string_value(inner), json_string_length(inner), 0, NULL);
        if (json_is_object(obj))
            text = tg_strdup(json_string_value(inner));
        else
            *err = error_answer(d, "@C: \"arguments\" must be a JSON object (encoded "
                                   "as a string here); got invalid JSON for %s.", name);
        json_decref(obj);
    } else if (json_is_object(inner)) {
        text = dump(inner);
    } else {
        text = tg_strdup("{}");  /* omitted or null: a tool without arguments */
    }
    if (*err) {
        free(text);
        json_decref(args);
        return NULL;
    }
    json_t *out = json_object();
    json_t *id = json_object_get(call, "id");
    if (json_string_length(id))
        json_object_set(out, "id", id);
    else
        json_object_set_new(out, "id", make_id(text, 0));
    json_object_set_new(out, "type", json_string("function"));
    json_object_set_new(out, "function",
                        json_pack("{ssss}", "name", up_name(d, at), "arguments", text));
    /* what the provider put on the call (Gemini 3's thought signature) goes
     * with it to the agent, which replays it on the call rewrite_history
     * turns back into this call_tool call */
    const char *k;
    json_t *v;
    json_object_foreach(call, k, v)
        if (strcmp(k, "id") && strcmp(k, "type") && strcmp(k, "function") && strcmp(k, "index") &&
            !json_object_get(out, k))
            json_object_set(out, k, v);
    free(text);
    json_decref(args);
    return out;
}

/* get_tool_schema's names, or what a model wrote instead: one "name". */
static json_t *names_arg(json_t *args)
{
    json_t *n = json_object_get(args, "names");
    return n ? n : json_object_get(args, "name");
}

/* The answer to one meta (or unknown) call, as the tool message content. */
static json_t *answer_call(tg_ctx *ctx, json_t *d, json_t *call, enum call_kind k)
{
    const char *name = json_string_value(json_object_get(json_object_get(call, "function"), "name"));
    json_t *args = meta_args(ctx, d, call, k == K_SEARCH ? "search" : k == K_SCHEMA ? "schema"
                                                                              : "call");
    json_t *r;
    if (k == K_UNKNOWN)
        r = error_answer(d, "Unknown tool \"%s\": no tool of that name exists here. See "
                            "did_you_mean, or use @S to find the right one, then call it "
                            "with @C.", name ? name : "(no name)");
    else if (!args)
        r = error_answer(d, "The arguments of %s are not a JSON object.", name);
    else if (k == K_SEARCH)
        r = search_answer(ctx, d, args);
    else if (k == K_SCHEMA)
        r = schema_answer(d, names_arg(args));
    else {
        json_t *out = convert_call_tool(ctx, d, call, &r);
        json_decref(out);  /* convertible calls never get here */
        if (!r)
            r = json_object();
    }
    json_decref(args);
    return r;
}

/* The upstream id of a call whose id the repair stage mapped to the agent's. */
static json_t *upstream_id(const tg_ctx *ctx, json_t *id, bool agent_ids)
{
    const char *k;
    json_t *v;
    if (agent_ids && json_is_string(id))
        json_object_foreach(ctx->id_map, k, v)
            if (json_equal(v, id))
                return json_string(k);
    return json_incref(id);
}

/* Next round: the upstream body so far + the assistant's meta calls + our
 * answers. ctx->request moves on to it, so rounds accumulate. */
static json_t *next_round(tg_ctx *ctx, json_t *d, json_t *msg, json_t *answerable, bool agent_ids)
{
    json_t *next = json_copy(ctx->request);
    json_t *msgs = json_copy(json_object_get(ctx->request, "messages"));
    json_t *calls = json_array(), *results = json_array();
    int round = (int)json_integer_value(json_object_get(ctx->disc_state, "rounds"));
    if (!msgs)
        msgs = json_array();
    for (size_t i = 0; i < json_array_size(answerable); i++) {
        json_t *c = json_array_get(answerable, i);
        enum call_kind k = kind_of(d, json_string_value(json_object_get(
                                          json_object_get(c, "function"), "name")));
        json_t *id = upstream_id(ctx, json_object_get(c, "id"), agent_ids);
        if (!json_string_length(id)) {
            char seed[64];
            snprintf(seed, sizeof seed, "round%d", round);
            json_decref(id);
            id = make_id(seed, i);
        }
        /* the call as the provider made it, opaque fields and all
         * (Gemini 3's thought signature, R18/R19), with its upstream id */
        json_t *call = json_deep_copy(c);
        json_object_del(call, "index");
        json_object_set(call, "id", id);
        json_object_set_new(call, "type", json_string("function"));
        json_array_append_new(calls, call);
        json_t *ans = answer_call(ctx, d, c, k);
        char *text = dump(ans);
        json_array_append_new(results, json_pack("{sssOss}", "role", "tool", "tool_call_id", id,
                                                 "content", text ? text : "{}"));
        free(text);
        json_decref(ans);
        json_decref(id);
    }
    /* no "content": null: some dialects reject null-valued keys, and every
     * dialect takes an assistant turn of tool calls without content */
    json_t *content = json_object_get(msg, "content");
    json_t *asst = json_pack("{ss}", "role", "assistant");
    if (json_string_length(content))
        json_object_set(asst, "content", content);
    /* the turn's reasoning as it came: DeepSeek's thinking mode refuses a
     * tool-call turn without it (rule 52); hygiene drops it where the
     * dialect does not take it */
    static const char *const opaque[] = {"reasoning_content", "reasoning", "reasoning_details", NULL};
    for (const char *const *k = opaque; *k; k++) {
        json_t *v = json_object_get(msg, *k);
        if (v && !json_is_null(v))
            json_object_set(asst, *k, v);
    }
    json_object_set_new(asst, "tool_calls", calls);
    tg_hygiene_replayed(asst, ctx);
    json_array_append_new(msgs, asst);
    for (size_t i = 0; i < json_array_size(results); i++)
        json_array_append(msgs, json_array_get(results, i));
    json_decref(results);
    json_object_set_new(next, "messages", msgs);
    json_object_set_new(ctx->disc_state, "rounds", json_integer(round + 1));
    ctx->stats.discovery_rounds++;
    json_decref(ctx->request);
    ctx->request = json_incref(next);
    return next;
}

typedef struct verdict {
    json_t *out_calls;   /* real calls for the agent, as they came */
    json_t *converted;   /* call_tool calls turned into real calls */
    json_t *answerable;  /* meta/unknown calls toolgate answers */
} verdict;

static void classify(tg_ctx *ctx, json_t *d, json_t *msg, verdict *v)
{
    json_t *calls = json_object_get(msg, "tool_calls");
    v->out_calls = json_array();
    v->converted = json_array();
    v->answerable = json_array();
    for (size_t i = 0; i < json_array_size(calls); i++) {
        json_t *c = json_array_get(calls, i), *err = NULL;
        enum call_kind k = kind_of(d, json_string_value(json_object_get(
                                          json_object_get(c, "function"), "name")));
        if (k == K_REAL) {
            json_array_append(v->out_calls, c);
        } else if (k == K_CALL) {
            json_t *conv = convert_call_tool(ctx, d, c, &err);
            if (conv) {
                json_array_append_new(v->converted, conv);
            } else {
                json_decref(err);
                json_array_append(v->answerable, c);
            }
        } else {
            json_array_append(v->answerable, c);
        }
    }
}

static void verdict_free(verdict *v)
{
    json_decref(v->out_calls);
    json_decref(v->converted);
    json_decref(v->answerable);
}

/* Non-streamed, the repair stage ran before us: converted calls get the
 * same treatment (agent name, arguments checked against the real schema,
 * ids) through a one-choice answer of their own. New reference. */
static json_t *repaired(tg_ctx *ctx, json_t *resp, json_t *calls)
{
    const char *rid = json_string_value(json_object_get(resp, "id"));
    json_t *one = json_pack("{sss[{sis{sssnsO}ss}]}", "id", rid ? rid : "discovery", "choices",
                            "index", 0, "message", "role", "assistant", "content", "tool_calls",
                            calls, "finish_reason", "tool_calls");
    if (!one)
        return json_incref(calls);
    tg_repair_response(one, ctx);
    json_t *msg = json_object_get(json_array_get(json_object_get(one, "choices"), 0), "message");
    json_t *out = json_object_get(msg, "tool_calls");
    json_t *r = json_incref(json_is_array(out) ? out : calls);
    json_decref(one);
    return r;
}

static void add_usage(tg_ctx *ctx, json_t *usage)
{
    static const char *const keys[] = { "prompt_tokens", "completion_tokens", "total_tokens" };
    if (!json_is_object(usage))
        return;
    json_t *sum = json_object_get(ctx->disc_state, "usage");
    if (!sum) {
        sum = json_object();
        json_object_set_new(ctx->disc_state, "usage", sum);
    }
    for (int i = 0; i < 3; i++)
        json_object_set_new(sum, keys[i],
                            json_integer(json_integer_value(json_object_get(sum, keys[i])) +
                                         json_integer_value(json_object_get(usage, keys[i]))));
}

static void set_note(tg_ctx *ctx, int max_rounds)
{
    char note[256];
    snprintf(note, sizeof note,
             "(toolgate: tool discovery stopped after %d rounds without choosing a tool. "
             "Try naming the task more precisely.)",
             max_rounds);
    json_object_set_new(ctx->disc_state, "note", json_string(note));
}

static int active(const tg_ctx *ctx)
{
    return ctx && state_d_peek(ctx) != NULL;
}

int tg_discovery_intercept(json_t *resp, tg_ctx *ctx, json_t **next_body)
{
    *next_body = NULL;
    if (!active(ctx))
        return 0;
    json_t *d = state_d_peek(ctx);
    json_t *choice = json_array_get(json_object_get(resp, "choices"), 0);
    json_t *msg = json_object_get(choice, "message");
    add_usage(ctx, json_object_get(resp, "usage"));
    if (!json_is_object(msg))
        return 0;

    verdict v;
    classify(ctx, d, msg, &v);
    int rounds = (int)json_integer_value(json_object_get(ctx->disc_state, "rounds"));
    int another = !json_array_size(v.out_calls) && !json_array_size(v.converted) &&
                  json_array_size(v.answerable);
    if (another && rounds < ctx->disc->max_rounds) {
        *next_body = next_round(ctx, d, msg, v.answerable, true);
        verdict_free(&v);
        return 1;
    }

    /* the turn ends here: the agent gets its real calls, or text */
    count_hint_followed(ctx, d, v.out_calls, v.converted);
    if (json_array_size(v.converted)) {
        json_t *fixed = repaired(ctx, resp, v.converted);
        json_array_extend(v.out_calls, fixed);
        json_decref(fixed);
    }
    if (json_array_size(v.converted) || json_array_size(v.answerable)) {
        if (json_array_size(v.out_calls)) {
            json_object_set(msg, "tool_calls", v.out_calls);
        } else {
            json_object_del(msg, "tool_calls");
            if (json_is_string(json_object_get(choice, "finish_reason")) &&
                strcmp(json_string_value(json_object_get(choice, "finish_reason")), "tool_calls") == 0)
                json_object_set_new(choice, "finish_reason", json_string("stop"));
        }
    }
    if (another) {
        set_note(ctx, ctx->disc->max_rounds);
        if (!json_string_length(json_object_get(msg, "content")))
            json_object_set(msg, "content", json_object_get(ctx->disc_state, "note"));
    }
    json_t *sum = json_object_get(ctx->disc_state, "usage");
    if (sum && rounds > 0) {  /* the last round's usage, with the totals of all */
        json_t *u = json_object_get(resp, "usage");
        u = json_is_object(u) ? json_deep_copy(u) : json_object();
        json_object_update(u, sum);
        json_object_set_new(resp, "usage", u);
    }
    verdict_free(&v);
    return 0;
}

bool tg_discovery_is_meta(const tg_ctx *ctx, const char *upstream_name)
{
    if (!active(ctx))
        return false;
    return kind_of(state_d_peek(ctx), upstream_name) != K_REAL;
}

void tg_discovery_saw_call(tg_ctx *ctx, const char *upstream_name)
{
    if (!active(ctx) || !json_object_get(ctx->disc_state, "hinted"))
        return;
    json_t *one = json_pack("[{s{ss}}]", "function", "name", upstream_name);
    count_hint_followed(ctx, state_d_peek(ctx), one, NULL);
    json_decref(one);
}

int tg_discovery_stream_round(tg_ctx *ctx, json_t *assistant_msg, json_t **emit,
                              json_t **next_body)
{
    *emit = NULL;
    *next_body = NULL;
    if (!active(ctx) || !json_is_object(assistant_msg))
        return 0;
    json_t *d = state_d_peek(ctx);
    verdict v;
    classify(ctx, d, assistant_msg, &v);
    int rounds = (int)json_integer_value(json_object_get(ctx->disc_state, "rounds"));
    int another = !json_array_size(v.out_calls) && !json_array_size(v.converted) &&
                  json_array_size(v.answerable);
    int r = 0;
    if (another && rounds < ctx->disc->max_rounds) {
        *next_body = next_round(ctx, d, assistant_msg, v.answerable, false);
        r = 1;
    } else {
        count_hint_followed(ctx, d, v.out_calls, v.converted);
        if (another)
            set_note(ctx, ctx->disc->max_rounds);
        if (json_array_size(v.converted))
            *emit = json_incref(v.converted);
    }
    verdict_free(&v);
    return r;
}

const char *tg_discovery_final_note(const tg_ctx *ctx)
{
    return ctx ? json_string_value(json_object_get(ctx->disc_state, "note")) : NULL;
}

json_t *tg_discovery_search(const tg_ctx *ctx, const char *query, int limit)
{
    if (!active(ctx))
        return NULL;
    json_t *args = json_pack("{sssI}", "query", query ? query : "", "limit", (json_int_t)limit);
    json_t *r = search_answer(ctx, state_d_peek(ctx), args);
    json_decref(args);
    return r;
}

json_t *tg_discovery_search_args(const tg_ctx *ctx, json_t *args)
{
    return active(ctx) ? search_answer(ctx, state_d_peek(ctx), args) : NULL;
}

json_t *tg_discovery_search_texts(const tg_ctx *ctx, json_t *completion)
{
    json_t *out = json_array(), *d = state_d_peek(ctx);
    json_t *msg = json_object_get(json_array_get(json_object_get(completion, "choices"), 0),
                                  "message");
    json_t *calls = json_object_get(msg, "tool_calls"), *c;
    size_t i;
    if (!d)
        return out;
    json_array_foreach(calls, i, c) {
        const char *name = json_string_value(json_object_get(json_object_get(c, "function"),
                                                             "name"));
        if (kind_of(d, name) != K_SEARCH)
            continue;
        json_t *args = parse_args(c);
        const char *q[QUERIES_MAX];
        size_t n = args ? collect_queries(args, q) : 0;
        json_t *texts = tg_disc_embed_query_texts(q, n);
        json_array_extend(out, texts);
        json_decref(texts);
        json_decref(args);
    }
    return out;
}
