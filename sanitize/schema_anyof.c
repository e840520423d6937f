/* schema_anyof.c -- the combinators of a schema node (the walk is
 * schema_walk.c's): a root's anyOf/oneOf flattened into the one object a
 * root must be (rule 3); a type union split into anyOf branches (Gemini,
 * Cerebras strict); a node's type keywords pushed into its branches
 * (Gemini rule 27); a null branch made nullable (Gemini); the branches
 * walked, with what tells them apart on the way back, and folded five at a
 * time (Cerebras, rule 50); last, the anyOf left alone in its node (Vertex,
 * rule 60).
 */
#include "sanitize/schema_walk_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"

/* The keywords that bind values of one type only. */
static const char *const array_words[] = {"items", "minItems", "maxItems", "uniqueItems", "prefixItems", NULL};
static const char *const object_words[] = {"properties", "required", "additionalProperties",
                                           "minProperties", "maxProperties", NULL};
static const char *const string_words[] = {"minLength", "maxLength", "pattern", "format", NULL};
static const char *const number_words[] = {"minimum", "maximum", "exclusiveMinimum",
                                           "exclusiveMaximum", "multipleOf", "format", NULL};

static const char *const *words_for(const char *t)
{
    if (!strcmp(t, "array"))
        return array_words;
    if (!strcmp(t, "object"))
        return object_words;
    if (!strcmp(t, "string"))
        return string_words;
    if (!strcmp(t, "number") || !strcmp(t, "integer"))
        return number_words;
    return NULL;
}

/* Split a multi-type node into anyOf branches, each taking the keywords of
 * its own type (Gemini rule 26/27, Cerebras strict rule 50). */
static void split_types(json_t *n, json_t *types)
{
    json_t *any = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(types, i, t) {
        const char *ts = json_string_value(t);
        json_t *b = json_pack("{s:s}", "type", ts);
        const char *const *words = words_for(ts);
        for (; words && *words; words++) {
            json_t *v = json_object_get(n, *words);
            if (v)
                json_object_set(b, *words, v);
        }
        json_array_append_new(any, b);
    }
    const char *const *all[] = {array_words, object_words, string_words, number_words};
    for (size_t g = 0; g < 4; g++)
        for (const char *const *wd = all[g]; *wd; wd++)
            json_object_del(n, *wd);
    json_object_del(n, "type");
    json_object_del(n, "nullable");
    json_object_set_new(n, "anyOf", any);
}

bool tg_sw_is_null_branch(json_t *b)
{
    json_t *t = json_object_get(b, "type");
    return json_is_string(t) && !strcmp(json_string_value(t), "null") && json_object_size(b) <= 2;
}

/* Whether a property schema only pins values: {const} or {enum}, with at
 * most a type, a title and a description beside. */
static bool pins_values(json_t *v)
{
    if (!json_is_object(v) || !(json_object_get(v, "const") || json_is_array(json_object_get(v, "enum"))))
        return false;
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
        if (strcmp(k, "const") && strcmp(k, "enum") && strcmp(k, "type") && strcmp(k, "title") &&
            strcmp(k, "description"))
            return false;
    }
    return true;
}

/* One property that several branches of a flattened root declare apiece
 * (a discriminated union's `kind`, a field typed per variant): the merged
 * schema must accept what any branch accepted. Pinned values merge into one
 * enum; anything else becomes an anyOf of the variants, which the child
 * walk rewrites for the target like any other. */
static json_t *merge_variants(json_t *vs)
{
    size_t i;
    json_t *v;
    bool pinned = true;
    json_t *type = NULL;
    json_array_foreach(vs, i, v) {
        pinned &= pins_values(v);
        json_t *t = json_object_get(v, "type");
        if (i == 0)
            type = t;
        else if (!(t && type && json_equal(t, type)))
            type = NULL;
    }
    if (!pinned)
        return json_pack("{s:O}", "anyOf", vs);
    json_t *vals = json_array();
    json_array_foreach(vs, i, v) {
        json_t *c = json_object_get(v, "const");
        json_t *e = json_object_get(v, "enum");
        json_t *one = c ? json_pack("[O]", c) : json_incref(e);
        size_t j, m;
        json_t *x, *y;
        json_array_foreach(one, j, x) {
            bool dup = false;
            json_array_foreach(vals, m, y) dup |= json_equal(x, y);
            if (!dup)
                json_array_append(vals, x);
        }
        json_decref(one);
    }
    json_t *out = json_pack("{s:o}", "enum", vals);
    if (type)
        json_object_set(out, "type", type);
    json_t *d = json_object_get(json_array_get(vs, 0), "description");
    if (d)
        json_object_set(out, "description", d);
    return out;
}

/* Root-level anyOf/oneOf: the root must be one object (rule 3), so the
 * branches' properties are merged and only what all branches require stays
 * required; the alternatives are spelled out in the description. */
void tg_sw_flatten_root(walk *w, json_t *n, json_t *hints)
{
    const char *keys[] = {"anyOf", "oneOf"};
    for (int k = 0; k < 2; k++) {
        json_t *br = json_object_get(n, keys[k]);
        if (!json_is_array(br))
            continue;
        json_incref(br);
        json_object_del(n, keys[k]);
        json_t *props = json_object_get(n, "properties");
        props = json_is_object(props) ? json_copy(props) : json_object();
        json_t *common = NULL;
        json_t *alts = json_array();
        json_t *variants = json_object();  /* property -> its distinct schemas */
        size_t i;
        json_t *b;
        json_array_foreach(br, i, b) {
            json_t *tmp = json_object();
            tg_sw_merge_branch(w, tmp, b, 0);
            json_t *bp = json_object_get(tmp, "properties");
            const char *pk;
            json_t *pv;
            json_object_foreach(bp, pk, pv) {
                if (json_object_get(props, pk) && !json_object_get(variants, pk))
                    continue;  /* the root's own declaration wins */
                json_t *vs = json_object_get(variants, pk);
                if (!vs) {
                    json_object_set(props, pk, pv);
                    json_object_set_new(variants, pk, json_pack("[O]", pv));
                    continue;
                }
                size_t m;
                json_t *x;
                bool dup = false;
                json_array_foreach(vs, m, x) dup |= json_equal(x, pv);
                if (!dup)
                    json_array_append(vs, pv);
            }
            json_t *req = json_object_get(tmp, "required");
            json_array_append_new(alts, json_is_array(req) ? json_copy(req) : json_array());
            if (!common) {
                common = json_is_array(req) ? json_copy(req) : json_array();
            } else {
                json_t *keep = json_array();
                size_t j;
                json_t *s;
                json_array_foreach(common, j, s) {
                    size_t m;
                    json_t *r2;
                    bool in = false;
                    json_array_foreach(req, m, r2) in |= json_equal(s, r2);
                    if (in)
                        json_array_append(keep, s);
                }
                json_decref(common);
                common = keep;
            }
            json_decref(tmp);
        }
        const char *vk;
        json_t *vs;
        json_object_foreach(variants, vk, vs) {
            if (json_array_size(vs) > 1)
                json_object_set_new(props, vk, merge_variants(vs));
        }
        json_decref(variants);
        json_object_set_new(n, "properties", props);
        if (common && json_array_size(common)) {
            json_t *req = json_object_get(n, "required");
            json_t *all = json_is_array(req) ? json_copy(req) : json_array();
            json_array_extend(all, common);
            json_object_set_new(n, "required", all);
        }
        json_decref(common);
        tg_sw_hint_add(hints, "one of these required sets", alts);
        tg_sw_note(w, "/function/parameters", "flatten-root-combinator", br, NULL);
        json_decref(alts);
        json_decref(br);
    }
}

/* The first non-null type name of a type or type list (borrowed), or NULL. */
static json_t *first_type_peek(json_t *t)
{
    if (json_is_string(t))
        return t;
    size_t i;
    json_t *v;
    json_array_foreach(t, i, v) if (json_is_string(v) && strcmp(json_string_value(v), "null")) return v;
    return NULL;
}

/* Did the branch go as a JSON-encoded string? */
static bool branch_is_standin(json_t *inv)
{
    return inv && json_object_get(inv, "j");
}

/* Cerebras strict takes at most 5 anyOf branches (rule 50): fold the tail
 * into nested anyOf wrappers, which accept exactly the same values. */
static void fold_branches(json_t *out, json_t *invs)
{
    while (json_array_size(out) > ANYOF_MAX) {
        size_t n = json_array_size(out);
        size_t from = n - ANYOF_MAX;  /* the last 5 go into one wrapper */
        if (from < ANYOF_MAX - 1)
            from = ANYOF_MAX - 1;
        json_t *sub = json_array(), *subinv = json_array();
        while (json_array_size(out) > from) {
            json_array_append(sub, json_array_get(out, from));
            json_array_remove(out, from);
            if (invs) {
                json_array_append(subinv, json_array_get(invs, from));
                json_array_remove(invs, from);
            }
        }
        json_array_append_new(out, json_pack("{s:o}", "anyOf", sub));
        if (invs)
            json_array_append_new(invs, json_pack("{s:o}", "a", subinv));
        else
            json_decref(subinv);
    }
}

/* What tells anyOf branches of objects apart on the way back: their keys
 * ("k") and single-valued discriminators ("d"). */
static void branch_shape(json_t *c, json_t *meta)
{
    json_t *props = json_object_get(c, "properties");
    if (!json_is_object(props))
        return;
    json_t *keys = json_array();
    json_t *disc = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(props, k, v) {
        json_array_append_new(keys, json_string(k));
        json_t *e = json_object_get(v, "enum");
        if (json_object_get(v, "const"))
            json_object_set(disc, k, json_object_get(v, "const"));
        else if (json_array_size(e) == 1)
            json_object_set(disc, k, json_array_get(e, 0));
    }
    json_object_set_new(meta, "k", keys);
    json_object_set_new(meta, "d", disc);
    /* keys the agent's branch requires: strict-made-required ones excluded */
    json_t *req = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(c, "required"), i, r) {
        bool added = false;
        const char *lists[] = {"o", "f"};
        for (int l = 0; l < 2; l++) {
            size_t j;
            json_t *o;
            json_array_foreach(json_object_get(meta, lists[l]), j, o) added |= json_equal(o, r);
        }
        if (!added)
            json_array_append(req, r);
    }
    json_object_set_new(meta, "r", req);
}

/* The branches of an anyOf, oneOf or allOf, each walked; *inv_list gets
 * their inverses (with the types and shapes that tell them apart on the
 * way back) when any branch has one. */
json_t *tg_sw_rewrite_branches(walk *w, json_t *arr, const char *ptr, const char *key,
                               int depth, int objdepth, json_t **inv_list)
{
    json_t *out = json_array();
    json_t *invs = json_array();
    bool any_inv = false;
    size_t i;
    json_t *b;
    json_array_foreach(arr, i, b) {
        char cptr[PTR_MAX], idx[24];
        snprintf(idx, sizeof idx, "%zu", i);
        tg_sw_ptr_join(cptr, ptr, key, idx);
        json_t *binv = NULL;
        json_t *c = tg_sw_rewrite_node(w, b, cptr, depth + 1, objdepth, false, &binv);
        json_t *meta = binv ? binv : json_object();
        any_inv |= binv != NULL;
        json_t *ot = json_is_object(b) ? json_object_get(b, "type") : NULL;
        json_t *t = first_type_peek(json_object_get(c, "type"));
        if (json_is_string(ot))
            json_object_set(meta, "ot", ot);
        else if (t && !branch_is_standin(binv))
            json_object_set(meta, "ot", t);  /* a $ref branch: same type as its output */
        if (t)
            json_object_set(meta, "t", t);
        branch_shape(c, meta);
        json_array_append_new(invs, meta);
        json_array_append_new(out, c);
    }
    if ((w->flags & TG_SR_STRICT) && (w->flags & TG_SR_NULL_ANYOF) && json_array_size(out) > ANYOF_MAX)
        fold_branches(out, invs);
    if (any_inv)
        *inv_list = invs;
    else
        json_decref(invs);
    return out;
}

/* anyOf branches that only add to their parent ({required: [k]}, {properties:
 * {...}} with no type): on strict targets each branch must stand alone. */
static bool partial_branches(json_t *n)
{
    size_t i;
    json_t *b;
    if (!json_object_get(n, "type"))
        return false;
    json_array_foreach(json_object_get(n, "anyOf"), i, b) {
        if (json_is_object(b) && !json_object_get(b, "type") && !json_object_get(b, "$ref") &&
            !json_object_get(b, "anyOf") && !json_object_get(b, "enum") && !json_object_get(b, "const"))
            return true;
    }
    return false;
}

/* Gemini rule 27: a node with anyOf carries nothing type-specific; push
 * those keys into each branch. */
static void push_into_branches(walk *w, json_t *n, const char *ptr)
{
    static const char *const pushed[] = {"type", "items", "properties", "required", "enum",
                                         "format", "minimum", "maximum", "minLength",
                                         "maxLength", "pattern", "minItems", "maxItems",
                                         "additionalProperties", "const", NULL};
    json_t *moving = json_object();
    for (const char *const *k = pushed; *k; k++) {
        json_t *v = json_object_get(n, *k);
        if (v)
            json_object_set(moving, *k, v);
    }
    if (!json_object_size(moving)) {
        json_decref(moving);
        return;
    }
    /* Each branch must hold the parent's constraints as well as its own
     * (rule 27): merged, never overwritten (a branch's own items and the
     * parent's both bind it). Beside a $ref they merge with its target when
     * the reference is inlined. n is a shallow copy: its anyOf array is
     * still the agent's, copy it. */
    json_t *any = json_copy(json_object_get(n, "anyOf"));
    json_object_set_new(n, "anyOf", any);
    size_t i;
    json_t *b;
    json_array_foreach(any, i, b) {
        if (!json_is_object(b))
            continue;
        json_t *nb = json_copy(b);
        const char *k;
        json_t *v;
        json_object_foreach(moving, k, v) tg_sw_merge_keyword(nb, k, v, false);
        json_array_set_new(any, i, nb);
    }
    const char *k;
    json_t *v;
    json_object_foreach(moving, k, v) json_object_del(n, k);
    tg_sw_note(w, ptr, "anyOf-siblings-into-branches", moving, NULL);
    json_decref(moving);
}

/* Rule 82: the list key of a branch that only wraps another union whose
 * values are the same as its branches' spliced in (annotations beside it
 * say nothing about the values), or NULL. anyOf in anyOf is always that;
 * oneOf in anyOf once oneof_anyof reads oneOf as anyOf; oneOf in oneOf
 * differs only for a value three branches all match. */
static const char *wrapped_union(walk *w, json_t *b, const char *outer)
{
    if (!json_is_object(b))
        return NULL;
    const char *inner = NULL;
    const char *k;
    json_t *v;
    json_object_foreach(b, k, v) {
        bool any = !strcmp(k, "anyOf"), one = !strcmp(k, "oneOf");
        bool same = !strcmp(k, outer) || (any && !strcmp(outer, "anyOf")) ||
                    (one && !strcmp(outer, "anyOf") && (w->flags & TG_SR_ONEOF_ANYOF));
        if ((any || one) && same && !inner && json_array_size(v))
            inner = k;
        else if (strcmp(k, "description") && strcmp(k, "title") && strcmp(k, "$comment"))
            return NULL;
    }
    return inner;
}

/* The branches of arr into flat, wrappers opened; a wrapper's description
 * goes to those of its branches that have none. */
static void splice_union(walk *w, json_t *arr, const char *outer, json_t *flat, const char *desc, int depth)
{
    size_t i;
    json_t *b;
    json_array_foreach(arr, i, b) {
        const char *inner = depth < MAX_DEPTH ? wrapped_union(w, b, outer) : NULL;
        if (inner) {
            const char *d = json_string_value(json_object_get(b, "description"));
            splice_union(w, json_object_get(b, inner), outer, flat, d ? d : desc, depth + 1);
        } else if (desc && json_is_object(b) && !json_object_get(b, "description")) {
            json_t *c = json_copy(b);
            json_object_set_new(c, "description", json_string(desc));
            json_array_append_new(flat, c);
        } else {
            json_array_append(flat, b);
        }
    }
}

void tg_sw_flatten_unions(walk *w, json_t *n, const char *ptr)
{
    static const char *const keys[] = {"anyOf", "oneOf"};
    for (int k = 0; k < 2; k++) {
        json_t *arr = json_object_get(n, keys[k]);
        size_t i;
        json_t *b;
        bool wraps = false;
        json_array_foreach(arr, i, b) wraps |= wrapped_union(w, b, keys[k]) != NULL;
        if (!wraps)
            continue;
        json_t *flat = json_array();
        splice_union(w, arr, keys[k], flat, NULL, 0);
        tg_sw_note(w, ptr, "flatten-nested-union (rule 82)", arr, NULL);
        json_object_set_new(n, keys[k], flat);  /* n is a shallow copy: arr stays the agent's */
    }
}

/* Gemini: anyOf [X, {type:null}] -> X + nullable (section 3.2 step 2).
 * Returns the node that replaces n when one real branch is left (walked
 * afresh by the caller, so the branch's own $ref/allOf get normalised), or
 * NULL after editing n in place. */
json_t *tg_sw_collapse_null_branch(walk *w, json_t *n, const char *ptr)
{
    json_t *any = json_object_get(n, "anyOf");
    json_t *keep = json_array();
    json_t *replacement = NULL;
    bool nul = false;
    size_t i;
    json_t *b;
    json_array_foreach(any, i, b) {
        if (tg_sw_is_null_branch(b))
            nul = true;
        else
            json_array_append(keep, b);
    }
    if (nul) {
        tg_sw_note(w, ptr, "anyOf-null-to-nullable", NULL, NULL);
        json_object_set_new(n, "nullable", json_true());
        if (json_array_size(keep) == 1 && json_is_object(json_array_get(keep, 0))) {
            replacement = json_copy(json_array_get(keep, 0));
            const char *k;
            json_t *v;
            /* the node's keywords bind the branch too (merged, rule 27) */
            json_object_foreach(n, k, v) if (strcmp(k, "anyOf") && strcmp(k, "description"))
                tg_sw_merge_keyword(replacement, k, v, false);
            if (!json_object_get(replacement, "description") && json_object_get(n, "description"))
                json_object_set(replacement, "description", json_object_get(n, "description"));
            json_object_set_new(replacement, "nullable", json_true());
            /* the property's description and the value's both say
             * something (zod: .describe() before and after .nullable()) */
            const char *outer = json_string_value(json_object_get(n, "description"));
            const char *inner = json_string_value(json_object_get(replacement, "description"));
            if (outer && inner && *outer && strcmp(outer, inner))
                json_object_set_new(replacement, "description",
                                    json_sprintf("%s%s%s", outer, *inner ? " " : "", inner));
        } else if (json_array_size(keep) == 0) {
            json_object_del(n, "anyOf");
            json_object_del(n, "nullable");
            json_object_set_new(n, "type", json_string("null"));
        } else {
            json_object_set(n, "anyOf", keep);
        }
    }
    json_decref(keep);
    return replacement;
}

/* Type unions: Gemini and Cerebras-strict take no type arrays; Gemini takes
 * no type-specific keys beside anyOf (rule 27). Edits n, fills nt. */
void tg_sw_resolve_unions(walk *w, json_t *n, json_t *in, const char *ptr, node_type *nt,
                          json_t *hints)
{
    uint64_t f = w->flags;
    size_t ntypes = json_array_size(nt->types);
    size_t i;
    json_t *t;
    nt->nonnull = json_array();
    json_array_foreach(nt->types, i, t) {
        if (!strcmp(json_string_value(t), "null"))
            nt->has_null = true;
        else
            json_array_append(nt->nonnull, t);
    }
    nt->has_any = json_is_array(json_object_get(n, "anyOf"));
    nt->enum_node = json_object_get(n, "enum") && (f & TG_SR_ENUM_STRINGS);
    nt->union_split = !nt->enum_node && !nt->has_any &&
                      (((f & TG_SR_TYPE_ARRAYS) && json_array_size(nt->nonnull) > 1) ||
                       ((f & TG_SR_STRICT) && (f & TG_SR_NULL_ANYOF) && ntypes > 1));
    if (nt->union_split) {
        split_types(n, (f & TG_SR_TYPE_ARRAYS) ? nt->nonnull : nt->types);
        if ((f & TG_SR_OPENAPI_SUBSET) && nt->has_null)
            json_object_set_new(n, "nullable", json_true());
        tg_sw_note(w, ptr, "type-array-to-anyOf", json_object_get(in, "type"), NULL);
        json_array_clear(nt->types);
        json_array_clear(nt->nonnull);
        nt->has_any = true;
    } else if (nt->has_any && ntypes > 1 && (f & TG_SR_STRICT) && (f & TG_SR_NULL_ANYOF)) {
        /* a type union beside anyOf: the branches already say what goes */
        tg_sw_hint_add(hints, "type", json_object_get(n, "type"));
        json_object_del(n, "type");
        json_array_clear(nt->types);
        json_array_clear(nt->nonnull);
    }
    if (nt->has_any && ((f & TG_SR_OPENAPI_SUBSET) || ((f & TG_SR_STRICT) && partial_branches(n)))) {
        push_into_branches(w, n, ptr);
        json_array_clear(nt->types);
        json_array_clear(nt->nonnull);
        nt->enum_node = json_object_get(n, "enum") && (f & TG_SR_ENUM_STRINGS) && !json_object_get(n, "anyOf");
    }
}

/* One branch gets the fields its anyOf parent may not keep; a branch that
 * is itself an anyOf passes them on to its own branches. */
static void give_to_branch(json_t *b, json_t *moved, const char *d, const char *ds, int depth)
{
    json_t *sub = json_object_get(b, "anyOf");
    if (json_is_array(sub) && depth < 2 * MAX_DEPTH) {  /* deeper became a stand-in */
        size_t i;
        json_t *c;
        json_array_foreach(sub, i, c) if (json_is_object(c)) give_to_branch(c, moved, d, ds, depth + 1);
        return;
    }
    const char *bd = json_string_value(json_object_get(b, "description"));
    if (d || ds) {
        json_t *nd = json_sprintf("%s%s%s%s%.*s%s", d ? d : "", d && bd ? " " : "", bd ? bd : "",
                                  ds ? ((d || bd) ? " (default: " : "(default: ") : "", HINT_VALUE_MAX,
                                  ds ? ds : "", ds ? ")" : "");
        if (nd)
            json_object_set_new(b, "description", nd);
    }
    const char *k;
    json_t *v;
    json_object_foreach(moved, k, v) {
        if (strcmp(k, "description") && strcmp(k, "default") && !json_object_get(b, k))
            json_object_set(b, k, v);
    }
}

/* Rule 60 (Vertex): "When using any_of, it must be the only field set". What
 * rule 27 left beside the anyOf (description, title, default, nullable...)
 * moves into every branch: the description is prefixed to each branch's own,
 * a default is said in it, nullable and the rest go as they are. Values keep
 * their shape, so the inverse tree is unchanged. */
void tg_sw_anyof_alone(walk *w, json_t *out, const char *ptr)
{
    json_t *any = json_object_get(out, "anyOf");
    if (!json_is_array(any) || json_object_size(out) < 2)
        return;
    const char *d = json_string_value(json_object_get(out, "description"));
    json_t *dflt = json_object_get(out, "default");
    char *ds = dflt ? tg_json_dumps(dflt) : NULL;
    json_t *moved = json_copy(out);
    json_object_del(moved, "anyOf");
    size_t i;
    json_t *b;
    json_array_foreach(any, i, b) if (json_is_object(b)) give_to_branch(b, moved, d, ds, 0);
    free(ds);
    json_incref(any);
    json_object_clear(out);
    json_object_set_new(out, "anyOf", any);
    tg_sw_note(w, ptr, "anyOf-alone (rule 60)", moved, NULL);
    json_decref(moved);
}
