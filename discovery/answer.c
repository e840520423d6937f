/* answer.c -- discovery's answers to the meta-tools, which toolgate gives
 * itself in inner rounds: search_tools (BM25F over the catalog, index.c,
 * several phrasings fused by reciprocal rank, a group filter, embeddings
 * when configured, embed.c; the agent's own tools in view named apart,
 * split_in_view), get_tool_schema (with did-you-mean for a
 * wrong name), and call_tool turned into an ordinary call of the tool it
 * names. The arguments of each are repaired like any tool's first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/ctx.h"
#include "core/hash.h"
#include "core/jsonio.h"
#include "discovery/answer.h"
#include "discovery/catalog.h"
#include "discovery/disc_conf.h"
#include "discovery/embed.h"
#include "discovery/index.h"
#include "repair/repair.h"

#define SEARCH_DEFAULT 8
#define SEARCH_MAX 25
#define FUSE_DEPTH 50    /* each phrasing's top that reciprocal rank fusion sees */
#define RRF_K 60.0       /* the usual constant of reciprocal rank fusion */
#define SUGGEST_MAX 3
#define LINE_MAX_BYTES 160
#define IN_VIEW_MAX 5     /* names of tools in view that a search answer lists apart */
#ifndef IN_VIEW_LEAD      /* how much more a tool in view must score than the best
                             catalog tool to keep a place among the results */
#define IN_VIEW_LEAD 1.5
#endif

/* lookup, then by loose form when exactly one tool has it: a model's
 * case and separator variants of a name in the meta-tools' arguments. */
static long lookup_loose(json_t *d, const char *name)
{
    long at = tg_dd_lookup(d, name);
    if (at >= 0 || !name)
        return at;
    char buf[256];
    json_t *v = json_object_get(json_object_get(d, "loose"), tg_dd_loose_form(name, buf, sizeof buf));
    return v ? (long)json_integer_value(v) : -1;
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
    json_t *fn = tg_dd_fn_peek(tg_dd_sanitized_peek(d, at));
    const char *desc = json_string_value(json_object_get(fn, "description"));
    json_t *e = json_object();
    json_object_set_new(e, "name", json_string(tg_dd_up_name(d, at)));
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
    const char *want = tg_dd_loose_form(group, wb, sizeof wb);
    for (size_t i = 0; i < n; i++) {
        const char *g = json_string_value(json_array_get(groups, i));
        if (g && (strcasecmp(g, group) == 0 ||
                  strcmp(tg_dd_loose_form(g, gb, sizeof gb), want) == 0)) {
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
size_t tg_dd_collect_queries(json_t *args, const char **q)
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
                           const unsigned char *mask, size_t *out, double *strength, size_t max)
{
    json_t *index = json_object_get(d, "index");
    size_t n = json_array_size(json_object_get(d, "names"));
    double *rrf = tg_calloc(n ? n : 1, sizeof *rrf);
    double *bm = tg_calloc(n ? n : 1, sizeof *bm);
    fused *all = tg_malloc((n ? n : 1) * sizeof *all);
    size_t matched = 0, got = 0;
    tg_dindex_params pr = tg_dindex_defaults;
    if (!ctx->disc->wordvec) {  /* discovery_wordvec = off */
        pr.vec_weight = 0;
        pr.soft_weight = 0;
    }
    for (size_t k = 0; k < nq; k++) {
        size_t hits[FUSE_DEPTH];
        double sc[FUSE_DEPTH];
        size_t m = tg_dindex_search_in(index, q[k], &pr, mask, hits, sc, FUSE_DEPTH);
        if (m > matched)
            matched = m;  /* a lower bound of the union, enough for "more" */
        for (size_t i = 0; i < m && i < FUSE_DEPTH; i++) {
            rrf[hits[i]] += 1.0 / (RRF_K + (double)i + 1.0);
            bm[hits[i]] += sc[i];
        }
    }
    tg_disc_embed_fuse(ctx, ctx->disc->embed_route, ctx->disc->embed_model, d, q, nq, mask,
                       FUSE_DEPTH, RRF_K, rrf);
    for (size_t i = 0; i < n; i++)
        if (rrf[i] > 0)
            all[got++] = (fused){ i, rrf[i] };
    qsort(all, got, sizeof *all, fused_better);
    if (got > matched)
        matched = got;
    for (size_t i = 0; i < got && i < max; i++) {
        out[i] = all[i].doc;
        strength[i] = bm[all[i].doc];
    }
    free(bm);
    free(rrf);
    free(all);
    return matched;
}

/* Whether the agent has this tool in view: a core tool, sent whole
 * beside the meta-tools. */
static int in_view(json_t *d, size_t doc)
{
    return json_object_get(json_object_get(d, "exposed"), tg_dd_up_name(d, (long)doc)) != NULL;
}

/* The ranked hits split in two: the catalog tools the model can reach only
 * through the search fill the results, and a tool already in view keeps a
 * place among them only when it outscores every catalog tool by
 * IN_VIEW_LEAD (BM25 over the phrasings, its strength); else its name goes
 * to in_view (if it ranked within the first `limit`), so the agent's own
 * tools (a scheduler, a report tool) take no slot from what it cannot see,
 * and a task that is theirs ("run a shell command", Bash) still finds
 * them. Returns how many results; in_view filled. */
static size_t split_in_view(const tg_ctx *ctx, json_t *d, const size_t *hits,
                            const double *strength, size_t m, size_t limit, json_t *results,
                            json_t *seen)
{
    double best = 0;
    for (size_t i = 0; i < m; i++)
        if (!in_view(d, hits[i]) && strength[i] > best)
            best = strength[i];
    size_t got = 0;
    for (size_t i = 0; i < m && got < limit; i++) {
        if (in_view(d, hits[i]) && strength[i] < IN_VIEW_LEAD * best) {
            if (i < limit && json_array_size(seen) < IN_VIEW_MAX)
                json_array_append_new(seen, json_string(tg_dd_up_name(d, (long)hits[i])));
            continue;
        }
        json_array_append_new(results, tool_entry(d, (long)hits[i],
                                                  (int)got < ctx->disc->search_schemas, 0));
        got++;
    }
    return got;
}

/* A group's tools in catalog order, for a search that names a group and
 * no query (a model browsing a group): all count, the first `cap` go to
 * hits, alike in strength. Returns how many the group has. */
static size_t group_tools(json_t *d, const unsigned char *mask, size_t *hits, double *strength,
                          size_t cap)
{
    size_t n = json_array_size(json_object_get(d, "groups")), m = 0;
    for (size_t i = 0; i < n; i++)
        if (mask[i]) {
            if (m < cap) {
                hits[m] = i;
                strength[m] = 1;
            }
            m++;
        }
    return m;
}

json_t *tg_dd_search_answer(const tg_ctx *ctx, json_t *d, json_t *args)
{
    json_int_t limit = json_integer_value(json_object_get(args, "limit"));
    if (limit <= 0)
        limit = SEARCH_DEFAULT;
    if (limit > SEARCH_MAX)
        limit = SEARCH_MAX;
    const char *q[QUERIES_MAX];
    size_t nq = tg_dd_collect_queries(args, q);
    const char *group = json_string_value(json_object_get(args, "group"));
    int unknown = 0;
    unsigned char *mask = group_mask(d, group, &unknown);
    if (unknown && means_no_group(group))
        unknown = 0;
    size_t hits[FUSE_DEPTH];
    double strength[FUSE_DEPTH];
    size_t matched = nq     ? fused_search(ctx, d, q, nq, mask, hits, strength, FUSE_DEPTH)
                     : mask ? group_tools(d, mask, hits, strength, FUSE_DEPTH)
                            : 0;
    int browsed = !nq && mask;
    free(mask);
    json_t *results = json_array(), *seen = json_array();
    size_t got = split_in_view(ctx, d, hits, strength, matched < FUSE_DEPTH ? matched : FUSE_DEPTH,
                               (size_t)limit, results, seen);
    size_t shown = got + json_array_size(seen);
    json_t *r = json_pack("{sosI}", "results", results, "more",
                          (json_int_t)(matched > shown ? matched - shown : 0));
    if (json_array_size(seen)) {
        json_object_set_new(r, "in_view", seen);
        json_object_set_new(r, "in_view_note",
                            json_string("in_view: tools that match as well and are already "
                                        "among your tools; call one directly by its name."));
    } else {
        json_decref(seen);
    }
    if (browsed)
        json_object_set_new(r, "message",
                            json_string("No query given: these are the group's tools in "
                                        "catalog order. Pass {\"query\": \"what you want to "
                                        "do\"} to rank them."));
    else if (!nq)
        json_object_set_new(r, "message",
                            json_string("Pass {\"query\": \"what you want to do\"}, e.g. "
                                        "{\"query\": \"create a calendar event\"}."));
    else if (!got && !json_array_size(json_object_get(r, "in_view")))
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
        json_array_append_new(out, json_string(tg_dd_up_name(d, at[i])));
    size_t hits[SUGGEST_MAX];
    size_t m = tg_dindex_search(json_object_get(d, "index"), name, hits, NULL, SUGGEST_MAX);
    for (size_t i = 0; i < m && i < SUGGEST_MAX && json_array_size(out) < SUGGEST_MAX; i++) {
        const char *s = tg_dd_up_name(d, (long)hits[i]);
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
                            json_string(tg_dd_say(json_object_get(d, "meta"),
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
    tg_dd_say(json_object_get(d, "meta"), fmt, text, sizeof text);
    snprintf(msg, sizeof msg, text, name ? name : "");
    json_t *r = json_pack("{ss}", "error", msg);
    if (name && *name)
        json_object_set_new(r, "did_you_mean", did_you_mean(d, name));
    return r;
}

/* ---- one meta call: its arguments, its answer ----------------------- */

json_t *tg_dd_parse_args(json_t *call)
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

/* What models write for the meta-tools' parameters: the other keys each
 * canonical one is met under ("tool_name" for call_tool's name, "args" or
 * "input" for its arguments, "q" or "task" for search_tools' query). A
 * row: which meta-tool, the canonical key, then its aliases. */
static const char *const aliases[][12] = {
    { "search", "query", "q", "search", "search_query", "query_text", "keywords", "keyword",
      "text", "task", "prompt", NULL },
    { "search", "queries", "alternatives", "alternative_queries", "other_queries", "synonyms",
      NULL },
    { "search", "group", "category", "server", "namespace", "group_name", "toolset", NULL },
    { "search", "limit", "max_results", "top_k", "k", "n", "count", "num_results", NULL },
    { "schema", "names", "name", "tool_names", "toolNames", "tools", "tool_name", "toolName", "tool",
      NULL },
    { "call", "name", "tool_name", "toolName", "tool", "function", "function_name", "tool_id",
      NULL },
    { "call", "arguments", "args", "parameters", "params", "input", "tool_input", "toolInput",
      "inputs", "kwargs", "arguments_json", NULL },
};

/* The key of args that is `key` but for case, or NULL. */
static const char *key_like(json_t *args, const char *key)
{
    const char *k;
    json_t *v;
    json_object_foreach(args, k, v)
        if (strcasecmp(k, key) == 0)
            return k;
    return NULL;
}

/* Rename an alias to its canonical key where the canonical one is not
 * there (case aside), so a model that wrote {"tool_name": ..., "args": ...}
 * or {"Query": ...} is understood. call_tool's arguments written flat
 * beside its name ({"name": "x", "path": "/a"}) become its arguments. */
static void canonical_keys(json_t *args, const char *which)
{
    for (size_t r = 0; r < sizeof aliases / sizeof aliases[0]; r++) {
        if (strcmp(aliases[r][0], which) || json_object_get(args, aliases[r][1]))
            continue;
        for (size_t a = 1; aliases[r][a]; a++) {
            const char *k = key_like(args, aliases[r][a]);
            if (!k)
                continue;
            json_t *v = json_incref(json_object_get(args, k));
            json_object_del(args, k);
            json_object_set_new(args, aliases[r][1], v);
            break;
        }
    }
    if (strcmp(which, "call") || json_object_get(args, "arguments") ||
        !json_is_string(json_object_get(args, "name")) || json_object_size(args) < 2)
        return;
    json_t *flat = json_deep_copy(args);
    json_object_del(flat, "name");
    json_object_set_new(args, "arguments", flat);
}

json_t *tg_dd_meta_parse(json_t *call, const char *which)
{
    json_t *args = tg_dd_parse_args(call);
    if (args)
        canonical_keys(args, which);
    return args;
}

/* A meta-tool call's arguments, repaired like any tool's against the
 * meta-tool's declared parameters (R15: "[\"a\"]" where names is an array,
 * "5" where limit is an integer), so a model's slip costs no round; NULL
 * when they are not an object. which: "search", "schema" or "call". */
static json_t *meta_args(tg_ctx *ctx, json_t *d, json_t *call, const char *which)
{
    json_t *args = tg_dd_meta_parse(call, which);
    json_t *params = json_object_get(json_object_get(d, "meta_params"), which);
    if (args && params)
        tg_repair_decode_args(ctx, params, args);
    return args;
}

/* A deterministic 9-character id: valid for every dialect's id rules. */
json_t *tg_dd_make_id(const char *seed, size_t n)
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
json_t *tg_dd_convert_call_tool(tg_ctx *ctx, json_t *d, json_t *call, json_t **err)
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
    } else if (at < 0 || tg_dd_kind_of(d, tg_dd_up_name(d, at)) != K_REAL) {
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
        text = tg_json_dumps(inner);
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
        json_object_set_new(out, "id", tg_dd_make_id(text, 0));
    json_object_set_new(out, "type", json_string("function"));
    json_object_set_new(out, "function",
                        json_pack("{ssss}", "name", tg_dd_up_name(d, at), "arguments", text));
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

/* A call of a catalog tool by a case or separator variant of its name
 * (`Docker_Logs` for `docker-logs`), made directly instead of through
 * call_tool: converted as that call_tool call would be, when exactly one
 * catalog tool has the name's loose form; NULL otherwise. */
json_t *tg_dd_convert_loose_call(tg_ctx *ctx, json_t *d, json_t *call)
{
    json_t *fn = json_object_get(call, "function");
    long at = lookup_loose(d, json_string_value(json_object_get(fn, "name")));
    if (at < 0 || tg_dd_kind_of(d, tg_dd_up_name(d, at)) != K_REAL)
        return NULL;
    json_t *raw = json_object_get(fn, "arguments");
    json_t *args = tg_dd_parse_args(call);
    if (!args && (!raw || json_is_null(raw) || (json_is_string(raw) && !json_string_length(raw))))
        args = json_object();  /* a tool without arguments */
    if (!args)
        return NULL;
    json_t *wrap = json_copy(call), *err = NULL;
    json_object_set_new(wrap, "function",
                        json_pack("{sss{sssO}}", "name", tg_dd_meta_name(d, "call"), "arguments",
                                  "name", tg_dd_up_name(d, at), "arguments", args));
    json_t *out = tg_dd_convert_call_tool(ctx, d, wrap, &err);
    json_decref(err);
    json_decref(wrap);
    json_decref(args);
    return out;
}

/* The answer to one meta (or unknown) call, as the tool message content. */
json_t *tg_dd_answer_call(tg_ctx *ctx, json_t *d, json_t *call, enum call_kind k)
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
        r = tg_dd_search_answer(ctx, d, args);
    else if (k == K_SCHEMA)
        r = schema_answer(d, json_object_get(args, "names"));  /* "name" and the rest: aliases */
    else {
        json_t *out = tg_dd_convert_call_tool(ctx, d, call, &r);
        json_decref(out);  /* convertible calls never get here */
        if (!r)
            r = json_object();
    }
    json_decref(args);
    return r;
}
