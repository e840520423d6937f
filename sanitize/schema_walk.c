/* schema_walk.c -- the one walker that rewrites a tool's parameters schema
 * into a dialect, driven by the TG_SR_* bits of a preset (schema.h). This
 * file is the walk itself: one node at a time (tg_sw_rewrite_node), the
 * tool's entry points, the request's budget (rule 62), and the stand-ins a
 * node becomes when the target cannot express it. The steps of a node that
 * live apart: normalising (schema_normalize.c), the combinators
 * (schema_anyof.c) and the emission of its keys (schema_emit.c); what these
 * files share is in schema_walk_int.h.
 *
 * The walk is functional: it reads the agent's schema (never edits it) and
 * builds a new one, node by node. Each node first goes through raw
 * normalisation on a shallow copy (non-schema values, bare property maps,
 * $ref inlining, allOf merging, oneOf->anyOf, const->enum, type unions), then
 * its keys are emitted one by one: kept, rewritten, or turned into a short
 * hint appended to the node's description, so nothing is lost silently.
 *
 * Termination: $ref expansion is cut when a reference is already open
 * REF_MAX_OPEN times on the current path, after NODE_BUDGET nodes, and any
 * node deeper than MAX_DEPTH becomes a JSON-encoded string stand-in. Size:
 * every node built is counted against the request's budget (rule 62), and
 * once it is spent the walk returns at once and the request is refused.
 *
 * While building node N the walker builds inv(N), the inverse tree that
 * undoes N's lossy rewrites on the way back: its format, and the code that
 * reads it, are schema_inverse.c's.
 */
#include "sanitize/schema_walk_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/jsonio.h"

/* ----------------------------------------------------- budget (rule 62) */

#define BUDGET_FLOOR_BYTES (1u << 20)  /* any request may grow to this, under schema.max_bytes */
#define BUDGET_FLOOR_NODES 250000      /* nodes walked, any request */

void tg_schema_budget_init(tg_schema_budget *b, const tg_schema_rules *r, size_t in_bytes)
{
    memset(b, 0, sizeof *b);
    size_t growth = r->max_growth > 0 ? (size_t)r->max_growth : 1;
    size_t cap = r->max_bytes > 0 ? (size_t)r->max_bytes : BUDGET_FLOOR_BYTES;
    size_t lim = in_bytes * growth;
    if (lim < BUDGET_FLOOR_BYTES)
        lim = BUDGET_FLOOR_BYTES;
    if (cap < 2 * in_bytes)  /* tools that big already: a rewrite near the identity fits */
        cap = 2 * in_bytes;
    b->max_bytes = lim < cap ? lim : cap;
    /* a schema node takes well over 4 bytes of the input: this is more than
     * twice the nodes the tools hold, and inlining's growth is what it stops */
    b->max_nodes = in_bytes / 4 > BUDGET_FLOOR_NODES ? in_bytes / 4 : BUDGET_FLOOR_NODES;
    b->ref_depth = -1;
}

static size_t value_bytes(json_t *v, int depth)
{
    size_t n = 0;
    const char *k;
    json_t *x;
    size_t i;
    switch (json_typeof(v)) {
    case JSON_STRING:
        return json_string_length(v) + 2;
    case JSON_OBJECT:
        if (depth > 64)
            return 2;
        json_object_foreach(v, k, x) n += strlen(k) + 4 + value_bytes(x, depth + 1);
        return n + 2;
    case JSON_ARRAY:
        if (depth > 64)
            return 2;
        json_array_foreach(v, i, x) n += value_bytes(x, depth + 1) + 1;
        return n + 2;
    default:
        return 6;
    }
}

size_t tg_schema_json_bytes(json_t *v)
{
    return v ? value_bytes(v, 0) : 0;
}

/* The bytes of node out itself: its child schema nodes count themselves
 * when they are built. */
static size_t own_bytes(json_t *out)
{
    size_t n = 2;
    const char *k, *pk;
    json_t *v, *pv;
    json_object_foreach(out, k, v) {
        n += strlen(k) + 4;
        bool map = json_is_object(v) && (!strcmp(k, "properties") || !strcmp(k, "$defs") ||
                                          !strcmp(k, "definitions"));
        bool child = json_is_object(v) && (!strcmp(k, "items") || !strcmp(k, "additionalProperties"));
        bool list = json_is_array(v) && (!strcmp(k, "anyOf") || !strcmp(k, "allOf") || !strcmp(k, "oneOf"));
        if (map)
            json_object_foreach(v, pk, pv) n += strlen(pk) + 4;
        else if (list)
            n += json_array_size(v) + 2;
        else if (!child)
            n += value_bytes(v, 0);
    }
    return n;
}

static void budget_spend(walk *w, json_t *out)
{
    w->budget->bytes += own_bytes(out);
    if (w->budget->bytes > w->budget->max_bytes)
        w->budget->over = true;
}

/* ---------------------------------------------------------------- helpers */

void tg_sw_note(walk *w, const char *ptr, const char *rule, json_t *before, json_t *after)
{
    w->changes++;
    tg_explain_add(w->explain, "schema", w->tool, ptr, rule, before, after);
}

void tg_sw_ptr_join(char *out, const char *base, const char *a, const char *b)
{
    /* JSON pointer escaping (~0, ~1) of the last segment; truncated when long. */
    size_t n = (size_t)snprintf(out, PTR_MAX, "%s/%s", base, a);
    if (!b || n >= PTR_MAX - 2)
        return;
    out[n++] = '/';
    for (; *b && n < PTR_MAX - 3; b++) {
        if (*b == '~' || *b == '/') {
            out[n++] = '~';
            out[n++] = *b == '~' ? '0' : '1';
        } else {
            out[n++] = *b;
        }
    }
    out[n] = '\0';
}

bool tg_sw_in_list(const char *const *list, const char *s)
{
    for (; *list; list++)
        if (strcmp(*list, s) == 0)
            return true;
    return false;
}

/* Append "key: value" to the node's hint list. */
void tg_sw_hint_add(json_t *hints, const char *key, json_t *v)
{
    char buf[HINT_VALUE_MAX + 64];
    char *s = json_is_string(v) ? NULL : tg_json_dumps(v);
    const char *val = json_is_string(v) ? json_string_value(v) : (s ? s : "?");
    int n = snprintf(buf, sizeof buf, "%s: %.*s%s", key, HINT_VALUE_MAX, val,
                     strlen(val) > HINT_VALUE_MAX ? "..." : "");
    free(s);
    if (n > 0)
        json_array_append_new(hints, json_string(buf));
}

void tg_sw_hint_text(json_t *hints, const char *text)
{
    json_array_append_new(hints, json_string(text));
}

/* description + " (h1; h2)" */
static void hints_flush(walk *w, json_t *out, json_t *hints, const char *ptr)
{
    size_t n = json_array_size(hints);
    if (!n)
        return;
    const char *d = json_string_value(json_object_get(out, "description"));
    size_t len = (d ? strlen(d) : 0) + 4;
    for (size_t i = 0; i < n; i++)
        len += json_string_length(json_array_get(hints, i)) + 2;
    char *buf = tg_malloc(len);
    size_t at = 0;
    if (d && *d)
        at += (size_t)sprintf(buf, "%s ", d);
    buf[at++] = '(';
    for (size_t i = 0; i < n; i++)
        at += (size_t)sprintf(buf + at, "%s%s", i ? "; " : "", json_string_value(json_array_get(hints, i)));
    buf[at++] = ')';
    buf[at] = '\0';
    json_t *nd = json_string(buf);
    free(buf);
    if (!nd)  /* not UTF-8 (cannot happen with jansson input), keep as was */
        return;
    tg_sw_note(w, ptr, "hint", json_object_get(out, "description"), nd);
    json_object_set_new(out, "description", nd);
}

int tg_sw_count_open_refs(const walk *w, const char *ref)
{
    int n = 0;
    for (int i = 0; i < w->nrefs; i++)
        if (!strcmp(w->refs[i], ref))
            n++;
    return n;
}

json_t *tg_schema_ref_peek(const json_t *root, const char *ref)
{
    if (!ref || ref[0] != '#')
        return NULL;
    json_t *cur = (json_t *)root;
    const char *p = ref + 1;
    char seg[256];
    while (*p == '/' && cur) {
        p++;
        size_t n = 0;
        while (*p && *p != '/' && n < sizeof seg - 1) {
            if (p[0] == '~' && (p[1] == '0' || p[1] == '1')) {
                seg[n++] = p[1] == '0' ? '~' : '/';
                p += 2;
            } else if (p[0] == '%' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2])) {
                /* a URI fragment: "#/$defs/x%20y" names $defs["x y"] */
                char hex[3] = {p[1], p[2], '\0'};
                seg[n++] = (char)strtol(hex, NULL, 16);
                p += 3;
            } else {
                seg[n++] = *p++;
            }
        }
        seg[n] = '\0';
        if (json_is_object(cur)) {
            cur = json_object_get(cur, seg);
        } else if (json_is_array(cur)) {
            char *end;
            long i = strtol(seg, &end, 10);
            cur = (*end || i < 0) ? NULL : json_array_get(cur, (size_t)i);
        } else {
            cur = NULL;
        }
    }
    return (*p == '\0') ? cur : NULL;
}

json_t *tg_sw_ref_peek(const walk *w, const char *ref)
{
    return tg_schema_ref_peek(w->root, ref);
}

const char *tg_sw_ref_short_name(const char *ref)
{
    const char *s = strrchr(ref, '/');
    return s ? s + 1 : ref;
}

bool tg_sw_array_has(json_t *arr, json_t *v)
{
    size_t i;
    json_t *x;
    json_array_foreach(arr, i, x) if (json_equal(x, v)) return true;
    return false;
}

/* ------------------------------------------------------------ stand-ins */

/* A node the target cannot express (free-form map, untyped value, cut
 * recursion, too deep) travels as a JSON-encoded string. */
static json_t *standin(walk *w, json_t *n, const char *what, const char *ptr, json_t **inv)
{
    const char *d = json_string_value(json_object_get(n, "description"));
    json_t *out = json_object();
    json_object_set_new(out, "type", json_string("string"));
    /* the keys the encoded object must hold stay readable (rule 5) */
    json_t *req = json_object_get(n, "required");
    char *rs = json_array_size(req) ? tg_json_dumps(req) : NULL;
    json_t *desc = json_sprintf("%s%s(%s%s%.*s, JSON-encoded)", d ? d : "", d && *d ? " " : "", what,
                                rs ? "; required keys: " : "", HINT_VALUE_MAX, rs ? rs : "");
    free(rs);
    json_object_set_new(out, "description", desc);
    tg_sw_note(w, ptr, "json-string-standin", n, out);
    *inv = json_pack("{s:i}", "j", 1);
    budget_spend(w, out);
    return out;
}

/* Rule 62, degraded: a $ref left out because inlining it would pass the
 * request's budget. The model writes its value as a JSON string (decoded
 * back on the way down, R15), told the definition's name, description and
 * keys, so it can still fill it. */
static json_t *budget_standin(walk *w, json_t *n, const char *ref, const char *ptr, json_t **inv)
{
    const json_t *t = tg_sw_ref_peek(w, ref);
    const char *d = json_string_value(json_object_get(t, "description"));
    tg_buf keys = {0};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)json_object_get(t, "properties"), k, v) {
        if (keys.len > HINT_VALUE_MAX)
            break;
        tg_buf_puts(&keys, keys.len ? ", " : "");
        tg_buf_puts(&keys, k);
    }
    char what[HINT_VALUE_MAX + 400];
    snprintf(what, sizeof what, "%.100s%s%.200s%s%.*s; its schema was left out to keep the "
             "request within toolgate's schema budget", tg_sw_ref_short_name(ref), d ? ": " : "",
             d ? d : "", keys.len ? "; an object with keys " : "", HINT_VALUE_MAX,
             keys.data ? keys.data : "");
    tg_buf_free(&keys);
    w->budget->standins++;
    json_t *use = json_copy(n);  /* the use site's description goes first */
    json_object_del(use, "$ref");
    json_t *out = standin(w, use, what, ptr, inv);
    json_decref(use);
    return out;
}

/* ------------------------------------------------------------- one node */

static void node_type_clear(node_type *nt)
{
    json_decref(nt->types);
    json_decref(nt->nonnull);
}

/* Is ptr a property's value (".../properties/NAME")? */
static bool is_property_ptr(const char *ptr)
{
    const char *p = strstr(ptr, "/properties/");
    if (!p)
        return false;
    for (const char *q; (q = strstr(p + 1, "/properties/"));)
        p = q;
    return !strchr(p + strlen("/properties/"), '/');
}

/* Why this node cannot be expressed in the target and must travel as a
 * JSON-encoded string, or NULL. Also books the node's properties against
 * the strict budget (rule 20). */
static const char *standin_reason(walk *w, json_t *n, const node_type *nt, bool root, int objdepth,
                                  const char *ptr)
{
    uint64_t f = w->flags;
    const char *single = tg_sw_single_type(nt);
    bool is_obj = single && !strcmp(single, "object");
    json_t *props = json_object_get(n, "properties");
    bool no_props = !json_is_object(props) || json_object_size(props) == 0;
    bool closed = json_is_false(json_object_get(n, "additionalProperties")) && json_is_object(props);
    bool untyped = !nt->union_split && json_array_size(nt->types) == 0 && !nt->has_any &&
                   !json_object_get(n, "enum") && !json_object_get(n, "const") &&
                   !json_object_get(n, "$ref") && !json_object_get(n, "oneOf") &&
                   !json_object_get(n, "allOf");
    if (root) {
        /* the root's own properties count too (rule 20); a root over the
         * budget by itself cannot be helped and goes as it is */
        w->props += json_is_object(props) ? (int)json_object_size(props) : 0;
        return NULL;
    }
    if (untyped && (f & (TG_SR_STRICT | TG_SR_FREEFORM_STRING | TG_SR_ADD_TYPE)))
        return "any JSON value";
    /* rule 72: Groq refuses an untyped property ("In context=('properties',
     * 'kwargs'), schema must have a 'type' key", livekit/agents#4610) */
    if (untyped && (f & TG_SR_TYPED_PROPS) && is_property_ptr(ptr))
        return "any JSON value";
    if (is_obj && no_props && !closed && (f & (TG_SR_STRICT | TG_SR_FREEFORM_STRING)))
        return "JSON-encoded object; any keys";
    if (is_obj && (f & TG_SR_STRICT) && w->props + (int)json_object_size(props) > STRICT_MAX_PROPS)
        return "object beyond the property budget";
    /* OpenAI counts array levels as well as object ones ("11 levels of
     * nesting exceeds limit of 10" for a schema of fewer object levels);
     * counting both is the stricter reading rule 20 allows */
    bool is_arr = single && !strcmp(single, "array");
    if ((is_obj || is_arr) && (f & TG_SR_STRICT) && objdepth + 1 > STRICT_MAX_OBJ)
        return is_obj ? "object nested too deep" : "array nested too deep";
    if (is_obj)
        w->props += (int)json_object_size(props);
    return NULL;
}

/* One schema node: normalise, decide, emit. Returns the new node; *inv gets
 * its inverse tree or NULL. */
json_t *tg_sw_rewrite_node(walk *w, json_t *in, const char *ptr, int depth, int objdepth, bool root,
                           json_t **inv)
{
    uint64_t f = w->flags;
    *inv = NULL;
    w->nodes++;
    if (w->budget->over || ++w->budget->nodes > w->budget->max_nodes) {
        /* rule 62: the request is refused; finish the walk without work */
        w->budget->over = true;
        return json_object();
    }
    node_in ni = tg_sw_normalize(w, in, ptr, root);
    json_t *n = ni.n;
    json_t *out = NULL;
    json_t *hints = json_array();
    json_t *node_inv = json_object();
    node_type nt = {0};

    if (ni.cut && root) {
        /* the root must stay an object (rule 3): an empty one, explained */
        json_decref(n);
        ni.n = n = json_pack("{s:s,s:s}", "type", "object", "description",
                             "(recursive root schema could not be expressed)");
        ni.cut = NULL;
    }
    if (ni.cut && ni.budget) {
        out = budget_standin(w, n, ni.cut, ptr, inv);
        goto done;
    }
    if (ni.cut) {
        char what[160];
        snprintf(what, sizeof what, "recursive %.100s, cut at depth %d", tg_sw_ref_short_name(ni.cut),
                 REF_MAX_OPEN);
        out = standin(w, n, what, ptr, inv);
        goto done;
    }
    if (!root && depth > MAX_DEPTH) {
        out = standin(w, n, "nested too deep", ptr, inv);
        goto done;
    }
    if (root && (f & TG_SR_ROOT_OBJECT))
        tg_sw_flatten_root(w, n, hints);
    if (json_is_array(json_object_get(n, "anyOf")) && (f & TG_SR_OPENAPI_SUBSET)) {
        json_t *one = tg_sw_collapse_null_branch(w, n, ptr);
        if (one) {
            out = tg_sw_rewrite_node(w, one, ptr, depth + 1, objdepth, root, inv);
            json_decref(one);
            goto done;
        }
    }
    tg_sw_normalize_enum(w, n, ptr, hints);
    nt.types = tg_sw_node_types(w, n, ptr, root, hints);
    tg_sw_resolve_unions(w, n, in, ptr, &nt, hints);
    const char *why = standin_reason(w, n, &nt, root, objdepth, ptr);
    if (why) {
        out = standin(w, n, why, ptr, inv);
        goto done;
    }

    out = json_object();
    tg_sw_emit_type(w, n, out, node_inv, &nt, ptr);
    const char *single = nt.enum_node ? "string" : tg_sw_single_type(&nt);
    bool is_object = single && !strcmp(single, "object");
    bool is_array = single && !strcmp(single, "array");
    int child_objdepth = objdepth + (is_object || is_array ? 1 : 0);  /* levels (rule 20) */
    tg_sw_emit_keys(w, n, out, node_inv, hints, &nt, ptr, depth, child_objdepth);
    if (nt.enum_node)
        tg_sw_retype_enum_keys(w, out, ptr);
    /* a type list with object in it ("object", "array") closes its object
     * case too (rule 16): the object keywords bind only objects; one with
     * array in it needs items like a plain array (rule 4) */
    bool may_be_object = is_object, may_be_array = is_array;
    size_t ti;
    json_t *tv;
    json_array_foreach(nt.enum_node ? NULL : nt.nonnull, ti, tv) {  /* an enum went out as strings */
        may_be_object |= !strcmp(json_string_value(tv), "object");
        may_be_array |= !strcmp(json_string_value(tv), "array");
    }
    if (!may_be_object && (json_array_size(nt.types) || nt.enum_node) && !root &&
        (f & TG_SR_REQUIRED) && (json_object_get(n, "properties") || json_object_get(n, "required"))) {
        /* Rule 59: properties and required bind only objects, so on a
         * string they say nothing, and Gemini refuses them ("properties:
         * only allowed for OBJECT type"); strict rules would even close the
         * string as an object. */
        tg_sw_note(w, ptr, "object-keywords-on-non-object (rule 59)", json_object_get(n, "properties"), NULL);
    } else if (is_object || json_object_get(n, "properties") || (root && (f & TG_SR_ROOT_OBJECT)) ||
               ((f & TG_SR_REQUIRED) && json_object_get(n, "required"))) {
        tg_sw_emit_properties(w, n, out, node_inv, hints, ptr, depth, child_objdepth);
    }
    tg_sw_finish_node(w, n, out, node_inv, may_be_object, may_be_array, root, ptr, depth, child_objdepth);
    hints_flush(w, out, hints, ptr);
    if (f & TG_SR_ANYOF_ALONE)
        tg_sw_anyof_alone(w, out, ptr);
    budget_spend(w, out);
    if (json_object_size(node_inv))
        *inv = json_incref(node_inv);

done:
    while (ni.pushed--)
        w->nrefs--;
    node_type_clear(&nt);
    json_decref(node_inv);
    json_decref(hints);
    json_decref(n);
    return out;
}

/* ------------------------------------------------------------- one tool */

/* The rules one tool is rewritten under: the route's, plus strict when the
 * agent asked for it on a dialect that honours per-tool strict. */
static uint64_t effective_flags(const tg_schema_rules *r, json_t *fn)
{
    uint64_t f = r->flags;
    if ((f & TG_SR_STRICT_PER_TOOL) && json_is_true(json_object_get(fn, "strict")))
        f |= TG_SR_STRICT | TG_SR_ALL_REQUIRED;
    if (f & TG_SR_STRICT)
        f |= TG_SR_ONEOF_ANYOF | TG_SR_MERGE_ALLOF | TG_SR_INLINE_REFS | TG_SR_ITEMS | TG_SR_REQUIRED;
    return f;
}

static void cut_description(walk *w, json_t *fn, json_t *ofn)
{
    json_t *d = json_object_get(fn, "description");
    if (!json_is_string(d)) {
        if (d)
            tg_sw_note(w, "/function/description", "drop-non-string-description", d, NULL);
        return;
    }
    size_t len = json_string_length(d);
    int max = w->rules->desc_max;
    if (max <= 3 || len <= (size_t)max) {
        json_object_set(ofn, "description", d);
        return;
    }
    const char *s = json_string_value(d);
    size_t cut = tg_utf8_cut(s, len, (size_t)max - 3);  /* keep UTF-8 whole */
    char *buf = tg_malloc(cut + 4);
    memcpy(buf, s, cut);
    memcpy(buf + cut, "...", 4);
    json_t *nd = json_string(buf);
    free(buf);
    tg_sw_note(w, "/function/description", "description-cut", NULL, nd);
    json_object_set_new(ofn, "description", nd);
}

json_t *tg_schema_rewrite_tool(const tg_schema_rules *r, json_t *tool, const char *upstream_name,
                               json_t *explain, json_t **inverse, bool *strict)
{
    tg_schema_budget b;
    tg_schema_budget_init(&b, r, tg_schema_json_bytes(tool));
    json_t *t = tg_schema_rewrite_tool_budget(r, tool, upstream_name, explain, inverse, strict, &b);
    if (b.over) {  /* not to be sent: the caller treats it as unusable */
        json_decref(t);
        if (inverse) {
            json_decref(*inverse);
            *inverse = NULL;
        }
        return NULL;
    }
    return t;
}

json_t *tg_schema_rewrite_tool_budget(const tg_schema_rules *r, json_t *tool, const char *upstream_name,
                                      json_t *explain, json_t **inverse, bool *strict,
                                      tg_schema_budget *budget)
{
    if (inverse)
        *inverse = NULL;
    if (strict)
        *strict = false;
    json_t *fn = json_object_get(tool, "function");
    const char *name = json_string_value(json_object_get(fn, "name"));
    if (!json_is_object(fn) || !name || !*name)
        return NULL;
    walk w = {.rules = r, .flags = effective_flags(r, fn), .explain = explain, .tool = name,
              .budget = budget};
    json_t *ofn = json_object();
    json_object_set_new(ofn, "name", json_string(upstream_name ? upstream_name : name));
    cut_description(&w, fn, ofn);
    json_t *params = json_object_get(fn, "parameters");
    json_t *inv = NULL, *added = NULL;
    if ((!params || json_is_null(params)) && (w.flags & TG_SR_NEED_PARAMS)) {
        /* rule 70: Mistral, xAI and MiniMax refuse a function without
         * parameters ("Field required", "missing field `parameters`",
         * "function parameters is empty (2013)"); OpenAI reads none as an
         * empty object, which is what goes, through the rules below (a
         * strict route closes it) */
        added = json_pack("{s:s,s:{}}", "type", "object", "properties");
        tg_sw_note(&w, "/function/parameters", "parameters-added", NULL, added);
        params = added;
    }
    json_t *freq = json_object_get(fn, "required");
    if (json_is_array(freq) && json_is_object(params) && !json_object_get(params, "required")) {
        /* `required` written beside parameters instead of in them: no
         * API reads it there (Mistral refuses the key, extra_forbidden,
         * mistralai/client-python#91), so it goes where it means what
         * the agent meant; rule 5 then keeps the names it can */
        json_t *moved = json_copy(params);
        json_object_set(moved, "required", freq);
        tg_sw_note(&w, "/function/required", "required-into-parameters", freq, NULL);
        json_decref(added);
        params = added = moved;
    }
    if (params) {
        w.root = params;
        json_t *p = tg_sw_rewrite_node(&w, params, "/function/parameters", 0, 0, true, &inv);
        bool empty = json_object_size(json_object_get(p, "properties")) == 0;
        if (empty && (w.flags & TG_SR_EMPTY_ROOT_OMIT)) {
            tg_sw_note(&w, "/function/parameters", "empty-root-omitted", p, NULL);
            json_decref(p);
        } else {
            json_object_set_new(ofn, "parameters", p);
        }
    }
    json_decref(added);
    bool st = (w.flags & TG_SR_STRICT) != 0;
    if (st)
        json_object_set_new(ofn, "strict", json_true());
    else if (json_object_get(fn, "strict") && !(w.flags & (TG_SR_MISTRAL_STRIP | TG_SR_OPENAPI_SUBSET | TG_SR_NAMES)))
        json_object_set(ofn, "strict", json_object_get(fn, "strict"));
    if (strict)
        *strict = st;
    if (w.defs_inv) {  /* rule 87: the definitions' inverses, for "R" */
        if (!inv)
            inv = json_object();
        json_object_set_new(inv, "D", w.defs_inv);
    }
    if (inverse)
        *inverse = inv;
    else
        json_decref(inv);
    return json_pack("{s:s,s:o}", "type", "function", "function", ofn);
}
