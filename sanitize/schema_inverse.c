/* schema_inverse.c -- the inverse tree: how the arguments a model writes
 * for a rewritten schema go back to what the agent's own schema says
 * (tg_schema_inverse_apply, the way back), and the way forth
 * (tg_schema_inverse_forward, for the tests that check that the pair
 * round-trips). The walk (schema_walk.c) builds the tree beside each
 * rewritten node; nothing here knows a dialect.
 *
 * While building node N the walker builds inv(N), an object with optional
 * members:
 *   "j": 1          N is a JSON-encoded stand-in: decode the string
 *   "e": {s: v}     N's enum was stringified: map string s back to value v
 *   "p": {k: inv}   inverse of property k
 *   "i": inv        inverse of array items
 *   "x": inv        inverse of an additionalProperties schema (not read yet)
 *   "o": [k...]     keys strict mode made required+nullable: drop when null
 *   "f": [k...]     same, for keys that already took null: kept as sent
 *   "a": [inv...]   inverses of anyOf branches; each has "t" (type the target
 *                   sends) and "ot" (type the agent expects), and an object
 *                   branch "k" (its keys), "d" (its single-valued
 *                   discriminators, {k: v}) and "r" (the keys the agent's
 *                   branch requires): what tells the branches apart
 *   "n": {u: k}     property keys renamed upstream (rule 87): u back to k,
 *                   after "p", "o" and "f" (which name the upstream keys)
 *   "R": "#/..."    a $ref left as a ref: apply the root's "D" entry for it
 *   "D": {ref: inv} (root only) the inverses of the definitions refs name
 */
#include <stdlib.h>
#include <string.h>

#include "sanitize/schema.h"
#include "core/jsonio.h"

static bool type_matches(const char *t, json_t *v)
{
    const char *vt = tg_json_type_name(v);
    if (!t)
        return false;
    return !strcmp(t, vt) || (!strcmp(t, "number") && !strcmp(vt, "integer"));
}

/* Does value v look like it was made for anyOf branch b (type `tkey`)? */
static bool branch_matches(json_t *b, const char *tkey, json_t *v)
{
    json_t *t = json_object_get(b, tkey);
    if (!t && !json_object_get(b, "a") && !json_object_get(b, "j"))
        return false;
    if (t && !type_matches(json_string_value(t), v))
        return false;
    if (!json_is_object(v))
        return true;
    json_t *keys = json_object_get(b, "k");
    const char *k;
    json_t *x;
    if (keys) {
        json_object_foreach(v, k, x) {
            bool in = false;
            size_t i;
            json_t *s;
            json_array_foreach(keys, i, s) in |= !strcmp(json_string_value(s), k);
            if (!in)
                return false;
        }
    }
    size_t i;
    json_array_foreach(json_object_get(b, "r"), i, x) {
        if (!json_object_get(v, json_string_value(x)))
            return false;
    }
    json_object_foreach(json_object_get(b, "d"), k, x) {
        json_t *have = json_object_get(v, k);
        if (have && !json_is_null(have) && !json_equal(have, x))
            return false;
    }
    return true;
}

/* Does inverse b (or one of its anyOf branches) hold v in a stringified
 * enum? Back: v is the string the target sent; forth: v is the agent's
 * value. Branches that each pin one number (z.union of z.literal) are all
 * strings upstream, so the type alone cannot pick the branch. */
static bool enum_maps(json_t *b, json_t *v, bool back, int depth)
{
    json_t *e = json_object_get(b, "e");
    if (back && json_is_string(v) && json_object_get(e, json_string_value(v)))
        return true;
    const char *k;
    json_t *m;
    if (!back)
        json_object_foreach(e, k, m) if (json_equal(m, v)) return true;
    size_t i;
    json_t *c;
    if (depth < 8)
        json_array_foreach(json_object_get(b, "a"), i, c) if (enum_maps(c, v, back, depth + 1)) return true;
    return false;
}

/* The way back of one node; root holds "D" for "R" nodes, and depth bounds
 * refs that name themselves (the value's own depth ends the walk too). */
typedef struct back {
    json_t *root;
    int *count;
} back;

static json_t *apply(const back *b, json_t *inv, json_t *v, int depth);

/* The inverse applied to one child: a replacement (new reference), or NULL
 * when the child was edited in place or left as it was. */
static json_t *inverse_child(const back *bk, json_t *inv, json_t *c, int depth)
{
    json_t *nc = apply(bk, inv, c, depth + 1);
    if (nc == c) {
        json_decref(nc);
        return NULL;
    }
    return nc;
}

/* Rule 87: the upstream keys of object v back to the agent's (map {u: k}).
 * A key the model sent under the agent's own name stays. */
static void rename_keys(json_t *map, json_t *v, int *count, bool forth)
{
    const char *u;
    json_t *k;
    json_object_foreach(map, u, k) {
        const char *from = forth ? json_string_value(k) : u;
        const char *to = forth ? u : json_string_value(k);
        json_t *x = json_object_get(v, from);
        if (!x || !to || json_object_get(v, to))
            continue;
        json_object_set(v, to, x);
        json_object_del(v, from);
        (*count)++;
    }
}

json_t *tg_schema_inverse_apply(json_t *inv, json_t *v, int *count)
{
    back b = {.root = inv, .count = count};
    return apply(&b, inv, v, 0);
}

static json_t *apply(const back *bk, json_t *inv, json_t *v, int depth)
{
    int *count = bk->count;
    if (!json_is_object(inv) || !v || depth > 256)
        return json_incref(v);
    const char *ref = json_string_value(json_object_get(inv, "R"));
    json_t *def = ref ? json_object_get(json_object_get(bk->root, "D"), ref) : NULL;
    if (def) {
        json_t *nv = apply(bk, def, v, depth + 1);
        json_t *rest = json_copy(inv);  /* the node's own members, after */
        json_object_del(rest, "R");
        json_t *out = apply(bk, rest, nv, depth + 1);
        json_decref(rest);
        json_decref(nv);
        return out;
    }
    if (json_object_get(inv, "j") && json_is_string(v)) {
        json_t *d = tg_json_load(json_string_value(v), json_string_length(v), JSON_DECODE_ANY, NULL);
        if (!d)
            return json_incref(v);  /* the model sent the bare text: keep it */
        (*count)++;
        return d;
    }
    json_t *e = json_object_get(inv, "e");
    if (e && json_is_string(v)) {
        json_t *m = json_object_get(e, json_string_value(v));
        if (m) {
            (*count)++;
            return json_deep_copy(m);
        }
    }
    json_t *p = json_object_get(inv, "p");
    if (json_is_object(v)) {
        const char *k;
        json_t *sub;
        json_object_foreach(p, k, sub) {
            json_t *c = json_object_get(v, k);
            if (!c)
                continue;
            json_t *nc = inverse_child(bk, sub, c, depth);
            if (nc)
                json_object_set_new(v, k, nc);
        }
        size_t i;
        json_t *o;
        json_array_foreach(json_object_get(inv, "o"), i, o) {
            const char *key = json_string_value(o);
            if (key && json_is_null(json_object_get(v, key))) {
                json_object_del(v, key);
                (*count)++;
            }
        }
        rename_keys(json_object_get(inv, "n"), v, count, false);
    }
    json_t *items = json_object_get(inv, "i");
    if (json_is_array(v) && items) {
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c) {
            json_t *nc = inverse_child(bk, items, c, depth);
            if (nc)
                json_array_set_new(v, i, nc);
        }
    }
    size_t i;
    json_t *b;
    json_t *branches = json_object_get(inv, "a");
    if (json_is_string(v)) {
        /* a JSON-encoded object/array is meant for a stand-in branch, even
         * when a plain string branch comes first */
        const char *s = json_string_value(v);
        while (*s == ' ' || *s == '\n' || *s == '\t')
            s++;
        if (*s == '{' || *s == '[') {
            json_array_foreach(branches, i, b) {
                if (json_object_get(b, "j"))
                    return apply(bk, b, v, depth + 1);
            }
        }
    }
    json_array_foreach(branches, i, b) {
        if (json_is_string(v) && enum_maps(b, v, true, 0))
            return apply(bk, b, v, depth + 1);
    }
    json_array_foreach(branches, i, b) {
        if (branch_matches(b, "t", v))
            return apply(bk, b, v, depth + 1);
    }
    return json_incref(v);
}

static json_t *forward(json_t *root, json_t *inv, json_t *v, int depth);

json_t *tg_schema_inverse_forward(json_t *inv, json_t *v)
{
    return forward(inv, inv, v, 0);
}

static json_t *forward(json_t *root, json_t *inv, json_t *v, int depth)
{
    if (!json_is_object(inv) || !v || depth > 256)
        return json_deep_copy(v);
    const char *ref = json_string_value(json_object_get(inv, "R"));
    json_t *def = ref ? json_object_get(json_object_get(root, "D"), ref) : NULL;
    if (def)
        return forward(root, def, v, depth + 1);
    if (json_object_get(inv, "j")) {
        char *s = tg_json_dumps(v);
        json_t *out = json_string(s ? s : "null");
        free(s);
        return out;
    }
    json_t *e = json_object_get(inv, "e");
    if (e) {
        const char *k;
        json_t *m;
        json_object_foreach(e, k, m) if (json_equal(m, v)) return json_string(k);
    }
    json_t *out = json_deep_copy(v);
    if (json_is_object(out)) {
        int renamed = 0;
        rename_keys(json_object_get(inv, "n"), out, &renamed, true);
        const char *k;
        json_t *sub;
        json_object_foreach(json_object_get(inv, "p"), k, sub) {
            json_t *c = json_object_get(out, k);
            if (c)
                json_object_set_new(out, k, forward(root, sub, c, depth + 1));
        }
        const char *lists[] = {"o", "f"};
        for (int l = 0; l < 2; l++) {
            size_t i;
            json_t *o;
            json_array_foreach(json_object_get(inv, lists[l]), i, o) {
                const char *key = json_string_value(o);
                if (key && !json_object_get(out, key))
                    json_object_set_new(out, key, json_null());
            }
        }
    }
    json_t *items = json_object_get(inv, "i");
    if (json_is_array(out) && items) {
        size_t i;
        json_t *c;
        json_array_foreach(out, i, c) json_array_set_new(out, i, forward(root, items, c, depth + 1));
    }
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(inv, "a"), i, b) {
        if (!json_is_object(v) && !json_is_array(v) && enum_maps(b, v, false, 0)) {
            json_decref(out);
            return forward(root, b, v, depth + 1);
        }
    }
    json_array_foreach(json_object_get(inv, "a"), i, b) {
        if (branch_matches(b, "ot", v)) {
            json_decref(out);
            return forward(root, b, v, depth + 1);
        }
    }
    return out;
}
