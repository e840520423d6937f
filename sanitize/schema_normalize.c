/* schema_normalize.c -- the first steps of a schema node (the walk is
 * schema_walk.c's): from whatever the agent sent to a schema object the
 * walk can decide on, on a shallow copy of the node. Non-schema values and
 * bare property maps repaired, type names lower-cased, $ref inlined, allOf
 * merged, oneOf made anyOf, tuples made items; then const -> enum and the
 * enum budgets, and the node's type names, declared or inferred.
 *
 * Joining two schemas (allOf branches, keywords beside a $ref, a node's
 * keywords pushed into its anyOf branches) goes through merge_keyword, which
 * keeps both sides' constraints (the tighter bound, both items schemas) and
 * turns what one keyword cannot hold into a hint: a constraint may move,
 * never vanish.
 */
#include "sanitize/schema_walk_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/jsonio.h"

/* Keys that make a JSON object look like a schema (for the bare-map repair). */
static const char *const schema_words[] = {
    "type", "properties", "items", "anyOf", "oneOf", "allOf", "$ref", "enum", "const",
    "description", "title", "default", "required", "additionalProperties", "format",
    "$schema", "$defs", "definitions", "not", "nullable", "examples", "example", "pattern",
    "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "$id", NULL};

static const char *const type_names[] = {"string", "number", "integer", "boolean",
                                         "array", "object", "null", NULL};

/* A property whose value is a map of sub-schemas without any schema keyword
 * ({"a": {"type":"string"}, "b": {...}}) meant `properties`. */
static bool is_bare_map(json_t *n)
{
    if (!json_is_object(n) || json_object_size(n) == 0)
        return false;
    const char *k;
    json_t *v;
    json_object_foreach(n, k, v) {
        if (tg_sw_in_list(schema_words, k) || !json_is_object(v))
            return false;
    }
    return true;
}

static void merge_into(walk *w, json_t *dst, json_t *src, int depth);

/* Keywords that describe a value without constraining it: one writer wins. */
static const char *const annotation_keys[] = {"description", "title", "default", "examples",
                                              "example", "$comment", "nullable", NULL};
static const char *const lower_bounds[] = {"minimum", "exclusiveMinimum", "minLength", "minItems",
                                           "minProperties", NULL};
static const char *const upper_bounds[] = {"maximum", "exclusiveMaximum", "maxLength", "maxItems",
                                           "maxProperties", NULL};

/* The type names both sides allow ("integer" is a "number"), or an empty
 * array when they share none. */
static json_t *type_meet(json_t *a, json_t *b)
{
    json_t *la = json_is_string(a) ? json_pack("[O]", a) : json_incref(a);
    json_t *lb = json_is_string(b) ? json_pack("[O]", b) : json_incref(b);
    json_t *out = json_array();
    size_t i, j;
    json_t *x, *y;
    json_array_foreach(la, i, x) json_array_foreach(lb, j, y) {
        const char *sx = json_string_value(x), *sy = json_string_value(y);
        if (!sx || !sy)
            continue;
        const char *m = !strcmp(sx, sy) ? sx
                        : (!strcmp(sx, "integer") && !strcmp(sy, "number")) ||
                                  (!strcmp(sx, "number") && !strcmp(sy, "integer"))
                            ? "integer"
                            : NULL;
        json_t *ms = m ? json_string(m) : NULL;
        if (ms && !tg_sw_array_has(out, ms))
            json_array_append(out, ms);
        json_decref(ms);
    }
    json_decref(la);
    json_decref(lb);
    return out;
}

/* A constraint both sides set differently that one keyword cannot hold
 * (two patterns, two formats, two consts): the first stays, the other is
 * said in a hint, never dropped in silence. */
static void merge_hint(json_t *dst, const char *k, json_t *v)
{
    char key[96], *s = tg_json_dumps(v);
    snprintf(key, sizeof key, "x-toolgate-hint-also-%.60s", k);
    json_object_set_new(dst, key, json_sprintf("also %s: %.*s", k, HINT_VALUE_MAX, s ? s : "?"));
    free(s);
}

/* Key k of src applies to dst as well (allOf semantics: both hold). Writes
 * into dst what holds for both; src_wins gives src the last word on
 * annotations (a $ref's use site is more specific than its target). This is
 * the one place that joins two schemas' keywords: allOf merging, keywords
 * beside a $ref, and siblings pushed into anyOf branches (rule 27) all come
 * here, so none of them overwrites a constraint the other side set. */
void tg_sw_merge_keyword(json_t *dst, const char *k, json_t *v, bool src_wins)
{
    json_t *have = json_object_get(dst, k);
    if (!have) {
        json_object_set(dst, k, v);
        return;
    }
    if (have == v || json_equal(have, v))
        return;
    if (tg_sw_in_list(annotation_keys, k) || !strncmp(k, "x-toolgate-hint", 15)) {
        if (src_wins)
            json_object_set(dst, k, v);
        return;
    }
    if (!strcmp(k, "properties") && json_is_object(have) && json_is_object(v)) {
        json_t *props = json_copy(have);
        const char *pk;
        json_t *pv;
        json_object_foreach(v, pk, pv) {
            json_t *old = json_object_get(props, pk);
            if (!old)
                json_object_set(props, pk, pv);
            else if (old != pv && !json_equal(old, pv))
                /* both sides constrain it: an allOf the child walk merges */
                json_object_set_new(props, pk, json_pack("{s:[OO]}", "allOf", old, pv));
        }
        json_object_set_new(dst, "properties", props);
    } else if (!strcmp(k, "required") && json_is_array(have) && json_is_array(v)) {
        json_t *req = json_copy(have);
        size_t i;
        json_t *s;
        json_array_foreach(v, i, s) if (!tg_sw_array_has(req, s)) json_array_append(req, s);
        json_object_set_new(dst, "required", req);
    } else if (!strcmp(k, "items") || !strcmp(k, "additionalProperties")) {
        if (json_is_false(have) || json_is_true(v))
            return;
        if (json_is_false(v) || json_is_true(have))
            json_object_set(dst, k, v);
        else if (json_is_object(have) && json_is_object(v))
            json_object_set_new(dst, k, json_pack("{s:[OO]}", "allOf", have, v));
        else
            merge_hint(dst, k, v);
    } else if (tg_sw_in_list(lower_bounds, k) && json_is_number(have) && json_is_number(v)) {
        if (json_number_value(v) > json_number_value(have))
            json_object_set(dst, k, v);
    } else if (tg_sw_in_list(upper_bounds, k) && json_is_number(have) && json_is_number(v)) {
        if (json_number_value(v) < json_number_value(have))
            json_object_set(dst, k, v);
    } else if (!strcmp(k, "enum") && json_is_array(have) && json_is_array(v)) {
        json_t *both = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(have, i, x) if (tg_sw_array_has(v, x)) json_array_append(both, x);
        if (json_array_size(both))
            json_object_set_new(dst, k, both);
        else {
            json_decref(both);
            merge_hint(dst, k, v);
        }
    } else if (!strcmp(k, "type")) {
        json_t *m = type_meet(have, v);
        if (json_array_size(m) == 1)
            json_object_set(dst, k, json_array_get(m, 0));
        else if (json_array_size(m) > 1)
            json_object_set(dst, k, m);
        else
            merge_hint(dst, k, v);
        json_decref(m);
    } else if (!strcmp(k, "allOf") && json_is_array(have) && json_is_array(v)) {
        json_t *all = json_copy(have);
        json_array_extend(all, v);
        json_object_set_new(dst, k, all);
    } else {
        merge_hint(dst, k, v);
    }
}

/* One allOf branch, with a $ref on it resolved one level. */
void tg_sw_merge_branch(walk *w, json_t *dst, json_t *b, int depth)
{
    if (!json_is_object(b))
        return;
    const char *ref = json_string_value(json_object_get(b, "$ref"));
    if (ref && tg_sw_count_open_refs(w, ref) < REF_MAX_OPEN) {
        json_t *t = tg_sw_ref_peek(w, ref);
        if (json_is_object(t) && t != b) {
            merge_into(w, dst, t, depth + 1);
            json_t *rest = json_copy(b);
            json_object_del(rest, "$ref");
            merge_into(w, dst, rest, depth + 1);
            json_decref(rest);
            return;
        }
    }
    merge_into(w, dst, b, depth + 1);
}

/* allOf semantics: every branch's keywords hold at once (tg_sw_merge_keyword);
 * the node's own keywords were written first. */
static void merge_into(walk *w, json_t *dst, json_t *src, int depth)
{
    const char *k;
    json_t *v;
    if (depth > MERGE_MAX_DEPTH)
        return;
    json_object_foreach(src, k, v) {
        if (!strcmp(k, "allOf") && json_is_array(v)) {
            size_t i;
            json_t *b;
            json_array_foreach(v, i, b) tg_sw_merge_branch(w, dst, b, depth);
        } else {
            tg_sw_merge_keyword(dst, k, v, false);
        }
    }
}

/* The type names of a node, deduplicated: from `type` (string or array),
 * plus "null" for nullable:true. Unknown names are dropped. */
static json_t *collect_types(json_t *n)
{
    json_t *out = json_array();
    json_t *t = json_object_get(n, "type");
    json_t *one = json_is_string(t) ? json_pack("[O]", t) : json_incref(t);
    size_t i;
    json_t *v;
    json_array_foreach(one, i, v) {
        const char *s = json_string_value(v);
        if (!s || !tg_sw_in_list(type_names, s))
            continue;
        bool dup = false;
        size_t j;
        json_t *u;
        json_array_foreach(out, j, u) dup |= !strcmp(json_string_value(u), s);
        if (!dup)
            json_array_append_new(out, json_string(s));
    }
    json_decref(one);
    if (json_is_true(json_object_get(n, "nullable"))) {
        bool has = false;
        json_array_foreach(out, i, v) has |= !strcmp(json_string_value(v), "null");
        if (!has && json_array_size(out))
            json_array_append_new(out, json_string("null"));
    }
    return out;
}

/* The type an enum's (or const's) values imply, or NULL when mixed. */
static const char *type_of_values(json_t *vals)
{
    const char *t = NULL;
    size_t i;
    json_t *v;
    json_array_foreach(vals, i, v) {
        const char *vt = tg_json_type_name(v);
        if (!strcmp(vt, "null"))
            continue;
        if (!t || !strcmp(t, vt))
            t = vt;
        else if ((!strcmp(t, "integer") && !strcmp(vt, "number")) ||
                 (!strcmp(t, "number") && !strcmp(vt, "integer")))
            t = "number";
        else
            return NULL;
    }
    return t;
}

/* "STRING", "Integer": Gemini's SDKs write OpenAPI type names in capitals
 * and Gemini reads them case-insensitively (rule 26); every other target
 * knows only the lower-case JSON Schema names. */
static json_t *lower_type_name(json_t *t)
{
    static const char *const names[] = {"string", "number", "integer", "boolean",
                                        "object", "array", "null", NULL};
    const char *s = json_string_value(t);
    bool upper = false;  /* nearly every schema spells types in lower case */
    for (const char *c = s; c && *c && !upper; c++)
        upper = *c >= 'A' && *c <= 'Z';
    if (!upper)
        return NULL;
    for (const char *const *nm = names; *nm; nm++)
        if (strcmp(s, *nm) && !strcasecmp(s, *nm))
            return json_string(*nm);
    return NULL;
}

/* "fields": "object": a property written as its bare type name (hand-made
 * tool lists, some MCP servers) is not a schema, and every target refuses
 * it; the name says what was meant, so it becomes {"type": name} rather
 * than the "any value" stand-in a schema that says nothing gets. */
static bool is_type_name(json_t *in)
{
    const char *s = json_string_value(in);
    for (const char *const *nm = type_names; s && *nm; nm++)
        if (!strcasecmp(s, *nm))
            return true;
    return false;
}

static void lower_type_names(walk *w, json_t *n, const char *ptr)
{
    json_t *t = json_object_get(n, "type");
    json_t *now = NULL;
    if (json_is_string(t)) {
        now = lower_type_name(t);
    } else if (json_is_array(t)) {
        size_t i;
        json_t *e;
        json_array_foreach(t, i, e) {
            json_t *l = lower_type_name(e);
            if (l && !now)
                now = json_deep_copy(t);
            if (l)
                json_array_set_new(now, i, l);
        }
    }
    if (now) {
        tg_sw_note(w, ptr, "lower-case-type", t, now);
        json_object_set_new(n, "type", now);
    }
}

/* A draft 2020-12 tuple (zod v4 z.tuple, pydantic tuple[int, str]):
 * prefixItems, with items false, absent, or the schema of the rest. The
 * targets that rewrite every node (strict, Gemini, xAI) would get
 * prefixItems unrewritten (an object in it breaks rule 16) beside an items
 * stand-in that says "any JSON value"; they take it as the draft-04 tuple
 * form is taken: items is any of the positions, their order in a hint. */
static void tuple_to_items(walk *w, json_t *n, const char *ptr)
{
    json_t *pre = json_object_get(n, "prefixItems");
    if (!json_is_array(pre) || !(w->flags & (TG_SR_STRICT | TG_SR_OPENAPI_SUBSET | TG_SR_FREEFORM_STRING)))
        return;
    json_t *rest = json_object_get(n, "items");
    json_t *any = json_array();
    json_t *order = json_array();
    size_t i;
    json_t *b;
    json_array_foreach(pre, i, b) {
        json_t *t = json_object_get(b, "type");
        const char *ref = json_string_value(json_object_get(b, "$ref"));
        bool dup = false;
        size_t j;
        json_t *x;
        json_array_foreach(any, j, x) dup |= json_equal(x, b);
        if (!dup)
            json_array_append(any, b);
        json_array_append_new(order, json_is_string(t) ? json_incref(t)
                                     : json_string(ref ? tg_sw_ref_short_name(ref) : "value"));
    }
    if (json_is_true(rest) || json_is_object(rest)) {  /* the rest: more items may follow */
        json_t *r = json_is_true(rest) ? json_object() : json_incref(rest);
        bool dup = false;
        json_array_foreach(any, i, b) dup |= json_equal(b, r);
        if (!dup)
            json_array_append(any, r);
        json_decref(r);
    }
    char *o = tg_json_dumps(order);
    json_object_set_new(n, "x-toolgate-hint-tuple", json_sprintf("items in order: %.200s", o ? o : "?"));
    free(o);
    json_decref(order);
    tg_sw_note(w, ptr, "prefixItems-to-items", pre, NULL);
    json_object_del(n, "prefixItems");
    if (json_array_size(any) == 1)
        json_object_set(n, "items", json_array_get(any, 0));
    else if (json_array_size(any) > 1)
        json_object_set_new(n, "items", json_pack("{s:O}", "anyOf", any));
    else
        json_object_del(n, "items");
    json_decref(any);
}

/* Rule 86: draft 4's boolean exclusiveMinimum / exclusiveMaximum (a flag
 * on minimum / maximum, still written by old generators) is a number since
 * draft 6, and a draft 2020-12 validator refuses the whole schema (Mistral
 * "Invalid tool schema: ... is not valid under any of the given schemas",
 * SylphxAI/pdf-reader-mcp#63). true moves the bound into the exclusive
 * keyword; false, or true without a bound beside it, says nothing and goes. */
static void draft4_bounds(walk *w, json_t *n, const char *ptr)
{
    static const char *const pairs[][2] = {{"exclusiveMinimum", "minimum"},
                                           {"exclusiveMaximum", "maximum"}};
    for (size_t i = 0; i < 2; i++) {
        json_t *x = json_object_get(n, pairs[i][0]);
        if (!json_is_boolean(x))
            continue;
        json_t *b = json_object_get(n, pairs[i][1]);
        tg_sw_note(w, ptr, "draft4-exclusive-bound (rule 86)", x, NULL);
        if (json_is_true(x) && json_is_number(b)) {
            json_object_set(n, pairs[i][0], b);
            json_object_del(n, pairs[i][1]);
        } else {
            json_object_del(n, pairs[i][0]);
        }
    }
}

/* Step 1 of a node: from whatever the agent sent to a schema object. */
node_in tg_sw_normalize(walk *w, json_t *in, const char *ptr, bool root)
{
    node_in ni = {0};
    if (json_is_object(in)) {
        ni.n = json_copy(in);
    } else if (is_type_name(in)) {
        ni.n = json_pack("{s:O}", "type", in);
        tg_sw_note(w, ptr, "repair-bare-type-name", in, ni.n);
    } else {
        ni.n = json_object();
        if (in && !json_is_true(in))
            tg_sw_note(w, ptr, "repair-non-schema", in, ni.n);
    }
    json_t *n = ni.n;
    lower_type_names(w, n, ptr);
    if (is_bare_map(n)) {
        json_t *obj = json_pack("{s:s,s:O}", "type", "object", "properties", n);
        tg_sw_note(w, ptr, "repair-bare-map", n, obj);
        json_decref(n);
        ni.n = n = obj;
    }
    /* $ref and allOf alternate: a merged allOf branch may bring a $ref,
     * a resolved $ref may bring an allOf. A few passes settle real schemas. */
    for (int pass = 0; pass < 4; pass++) {
        bool again = false;
        /* $ref: inline when the dialect cannot take refs (and always at the root,
         * which must be a literal object, rule 3). */
        for (int guard = 0; guard < 16; guard++) {
            const char *ref = json_string_value(json_object_get(n, "$ref"));
            if (!ref || !((w->flags & TG_SR_INLINE_REFS) || root))
                break;
            if (tg_sw_count_open_refs(w, ref) >= REF_MAX_OPEN || w->nodes > NODE_BUDGET ||
                w->nrefs >= (int)(sizeof w->refs / sizeof w->refs[0])) {
                ni.cut = ref;
                return ni;
            }
            if (!root && w->budget->ref_depth >= 0 && w->nrefs >= w->budget->ref_depth) {
                ni.cut = ref;  /* rule 62, degraded: deeper refs stand in */
                ni.budget = true;
                return ni;
            }
            json_t *t = tg_sw_ref_peek(w, ref);
            json_t *merged = json_is_object(t) ? json_copy(t) : json_object();
            if (!t) {
                json_t *d = json_sprintf("unresolved $ref %s", ref);
                json_object_set_new(merged, "x-toolgate-hint", d);
            }
            /* Keywords beside a $ref apply too (allOf semantics): both
             * sides' constraints hold; the use site's description, title
             * and default win over the target's. */
            const char *k;
            json_t *v;
            json_object_foreach(n, k, v) {
                if (strcmp(k, "$ref"))
                    tg_sw_merge_keyword(merged, k, v, true);
            }
            tg_sw_note(w, ptr, "inline-ref", json_object_get(n, "$ref"), NULL);
            w->refs[w->nrefs++] = ref;
            ni.pushed++;
            json_decref(n);
            ni.n = n = merged;
        }
        if (json_is_array(json_object_get(n, "allOf")) && ((w->flags & TG_SR_MERGE_ALLOF) || root)) {
            json_t *all = json_incref(json_object_get(n, "allOf"));
            json_object_del(n, "allOf");
            json_t *src = json_pack("{s:O}", "allOf", all);
            merge_into(w, n, src, 0);
            tg_sw_note(w, ptr, "merge-allOf", all, NULL);
            json_decref(src);
            json_decref(all);
        }
        again = json_string_value(json_object_get(n, "$ref")) && ((w->flags & TG_SR_INLINE_REFS) || root);
        if (!again)
            break;
    }
    if (json_is_array(json_object_get(n, "oneOf")) && (w->flags & TG_SR_ONEOF_ANYOF)) {
        json_t *one = json_object_get(n, "oneOf");
        if (!json_object_get(n, "anyOf")) {
            json_object_set(n, "anyOf", one);
            tg_sw_note(w, ptr, "oneOf-to-anyOf", NULL, NULL);
        } else if (!json_object_get(n, "x-toolgate-hint")) {
            char *alt = tg_json_dumps(one);
            json_object_set_new(n, "x-toolgate-hint", json_sprintf("also one of: %.200s", alt ? alt : "?"));
            free(alt);
        }
        json_object_del(n, "oneOf");
    }
    if (w->flags & TG_SR_FLAT_UNIONS)
        tg_sw_flatten_unions(w, n, ptr);
    tuple_to_items(w, n, ptr);
    if (json_is_boolean(json_object_get(n, "required")) && (w->flags & TG_SR_REQUIRED)) {
        /* draft 3's "required": true on a property; its parent's walk
         * folds it into the parent's required list (rule 59) */
        tg_sw_note(w, ptr, "draft3-required (rule 59)", json_object_get(n, "required"), NULL);
        json_object_del(n, "required");
    }
    if (w->flags & TG_SR_REQUIRED)
        draft4_bounds(w, n, ptr);
    static const char *const combinators[] = {"anyOf", "oneOf", "allOf", NULL};
    for (const char *const *c = combinators; *c; c++) {
        json_t *v = json_object_get(n, *c);
        if (v && (!json_is_array(v) || json_array_size(v) == 0)) {
            tg_sw_note(w, ptr, "repair-empty-combinator", v, NULL);
            json_object_del(n, *c);
        }
    }
    return ni;
}

/* Rule 21 (strict): at most 1,000 enum values in a tool, and a string enum
 * of more than 250 values at most 15,000 characters. An enum past the
 * budget is not sent as a constraint; its values go into the description
 * (cut), so the model still sees what is allowed. */
static void enum_budget(walk *w, json_t *n, const char *ptr, json_t *hints)
{
    json_t *en = json_object_get(n, "enum");
    size_t count = json_array_size(en), chars = 0, i;
    json_t *v;
    json_array_foreach(en, i, v) chars += json_is_string(v) ? json_string_length(v) : 0;
    if (w->enums + count <= 1000 && (count <= 250 || chars <= 15000)) {
        w->enums += (int)count;
        return;
    }
    json_incref(en);
    json_object_del(n, "enum");
    tg_sw_note(w, ptr, "enum-budget (rule 21)", en, NULL);
    tg_sw_hint_add(hints, "one of", en);
    json_decref(en);
}

static bool type_listed(json_t *types, const char *t)
{
    size_t i;
    json_t *v;
    json_array_foreach(types, i, v) if (json_is_string(v) && !strcmp(json_string_value(v), t)) return true;
    return false;
}

/* Rule 69: xAI refuses null inside an enum ("Client specified an invalid
 * argument", forgecode#2809); the type list says it instead. An enum of
 * nothing but null becomes the type null. */
static void enum_null_to_type(walk *w, json_t *n, const char *ptr)
{
    json_t *en = json_object_get(n, "enum");
    size_t i, nulls = 0;
    json_t *v;
    json_array_foreach(en, i, v) nulls += json_is_null(v);
    if (!nulls)
        return;
    tg_sw_note(w, ptr, "enum-null-to-type", en, NULL);
    json_t *kept = json_array();
    json_array_foreach(en, i, v) if (!json_is_null(v)) json_array_append(kept, v);
    json_t *t = json_object_get(n, "type");
    json_t *types = json_is_array(t) ? json_copy(t) : json_array();
    if (json_is_string(t))
        json_array_append(types, t);
    else if (!t)  /* the values' own types, so that none is shut out */
        json_array_foreach(kept, i, v) if (!type_listed(types, tg_json_type_name(v)))
            json_array_append_new(types, json_string(tg_json_type_name(v)));
    if (!type_listed(types, "null"))
        json_array_append_new(types, json_string("null"));
    if (json_array_size(kept))
        json_object_set_new(n, "enum", kept);
    else {
        json_decref(kept);
        json_object_del(n, "enum");
    }
    json_object_set_new(n, "type", json_array_size(types) == 1 ? json_incref(json_array_get(types, 0)) : json_incref(types));
    json_decref(types);
}

/* const -> enum where the target wants it; an empty enum admits nothing, so
 * it is a broken schema, not a wish: removed. */
void tg_sw_normalize_enum(walk *w, json_t *n, const char *ptr, json_t *hints)
{
    json_t *cst = json_object_get(n, "const");
    if (cst && (w->flags & TG_SR_CONST_ENUM)) {
        if (!json_object_get(n, "enum"))
            json_object_set_new(n, "enum", json_pack("[O]", cst));
        tg_sw_note(w, ptr, "const-to-enum", cst, NULL);
        json_object_del(n, "const");
    }
    json_t *en = json_object_get(n, "enum");
    if (en && (!json_is_array(en) || json_array_size(en) == 0)) {
        tg_sw_note(w, ptr, "repair-empty-enum", en, NULL);
        json_object_del(n, "enum");
    }
    if (json_is_array(en) && (w->flags & TG_SR_ENUM_NO_NULL))
        enum_null_to_type(w, n, ptr);
    en = json_object_get(n, "enum");
    if (json_is_array(en) && (w->flags & TG_SR_STRICT))
        enum_budget(w, n, ptr, hints);
}

/* The node's types: declared, inferred where the target needs one, forced to
 * object at the root (rule 3). */
json_t *tg_sw_node_types(walk *w, json_t *n, const char *ptr, bool root, json_t *hints)
{
    json_t *types = collect_types(n);
    json_t *en = json_object_get(n, "enum");
    if (json_array_size(types) == 0 && !json_is_array(json_object_get(n, "anyOf")) &&
        (w->flags & (TG_SR_ADD_TYPE | TG_SR_STRICT | TG_SR_FREEFORM_STRING | TG_SR_TYPED_PROPS))) {
        /* the values an enum allows say more than the keywords that bind
         * only some types: {enum: ["a"], properties: {...}} is a string.
         * Rule 72's dialects too: a typeless {items: ...} is an array
         * there, not a JSON-encoded stand-in (oh-my-openagent#2961) */
        const char *t = en ? type_of_values(en) : NULL;
        if (t)
            ;
        else if (json_object_get(n, "properties"))
            t = "object";
        else if (json_object_get(n, "items"))
            t = "array";
        else if (json_object_get(n, "const")) {
            /* a typeless const (zod's z.literal() in some versions):
             * strict wants every node typed, like an enum's */
            json_t *one = json_pack("[O]", json_object_get(n, "const"));
            t = type_of_values(one);
            json_decref(one);
        }
        if (t) {
            json_array_append_new(types, json_string(t));
            tg_sw_note(w, ptr, "add-type", NULL, json_array_get(types, 0));
        }
    }
    if (root && (w->flags & TG_SR_ROOT_OBJECT)) {
        bool obj = json_array_size(types) == 1 && !strcmp(json_string_value(json_array_get(types, 0)), "object");
        if (!obj) {
            if (json_array_size(types))
                tg_sw_hint_add(hints, "root type was", json_object_get(n, "type"));
            json_array_clear(types);
            json_array_append_new(types, json_string("object"));
            tg_sw_note(w, ptr, "root-type-object", json_object_get(n, "type"), NULL);
        }
    }
    return types;
}
