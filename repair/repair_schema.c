/* repair_schema.c -- the repairs that read the agent's own tool schema:
 * schema-guided decoding of double-encoded values (R15) and dropping keys
 * the schema forbids (R29), plus the question the stream side asks before a
 * call starts: does any of them apply to this tool at all?
 *
 * The schema is always the agent's own (ctx->tools as received), never the
 * rewritten one, so it may use everything the agent wrote: $ref into $defs
 * or definitions (pydantic, zod-to-json-schema), a lone allOf around a $ref
 * (pydantic v1), anyOf/oneOf unions such as Optional[Model] =
 * anyOf:[{$ref}, {type:null}]. A node is read through its $ref chain
 * (bounded), and a union is read through the branch that fits the value.
 * Where two object branches fit, R29 leaves the value alone: which keys
 * are "extra" is then not decidable.
 */
#include "core/cache.h"
#include "core/jsonio.h"
#include "repair/repair_base.h"
#include "repair/repair_schema.h"
#include "sanitize/schema.h"

#include <string.h>

#define SCHEMA_DEPTH_MAX 32
#define REF_HOPS_MAX 16

/* The keys of a schema node that the walks read, found in one pass over
 * its keys: a node has a handful, and a lookup of each of eight was most
 * of what each stream's first call of a tool cost (tg_rs_tool_is_live). */
enum { S_REF, S_ALL, S_TYPE, S_PROPS, S_AP, S_ITEMS, S_ANY, S_ONE, S_NKEYS };
typedef struct snode {
    const json_t *k[S_NKEYS];  /* NULL where absent */
} snode;

static void node_read(const json_t *n, snode *v)
{
    static const struct {
        const char *name;
        size_t len;
    } keys[S_NKEYS] = {{"$ref", 4},       {"allOf", 5},  {"type", 4},  {"properties", 10},
                       {"additionalProperties", 20}, {"items", 5}, {"anyOf", 5}, {"oneOf", 5}};
    memset(v, 0, sizeof *v);
    for (void *it = json_object_iter((json_t *)n); it; it = json_object_iter_next((json_t *)n, it)) {
        const char *k = json_object_iter_key(it);
        size_t kn = json_object_iter_key_len(it);
        for (int i = 0; i < S_NKEYS; i++)
            if (kn == keys[i].len && !memcmp(k, keys[i].name, kn))
                v->k[i] = json_object_iter_value(it);
    }
}

/* n with its $ref chain followed and a lone allOf member taken; v: the
 * keys of the node returned (all NULL when that is not an object). */
static const json_t *deref_read(const json_t *root, const json_t *n, snode *v)
{
    memset(v, 0, sizeof *v);
    for (int hops = 0; json_is_object(n) && hops < REF_HOPS_MAX; hops++) {
        node_read(n, v);
        const char *ref = json_string_value(v->k[S_REF]);
        if (ref) {
            const json_t *t = tg_schema_ref_peek(root, ref);
            if (!t || t == n)
                return n;
            n = t;
            continue;
        }
        if (json_array_size(v->k[S_ALL]) != 1 || v->k[S_TYPE] || v->k[S_PROPS])
            return n;
        n = json_array_get(v->k[S_ALL], 0);
    }
    if (json_is_object(n))  /* the hops ran out */
        node_read(n, v);
    else
        memset(v, 0, sizeof *v);
    return n;
}

static const json_t *deref_peek(const json_t *root, const json_t *n)
{
    snode v;
    return deref_read(root, n, &v);
}

/* anyOf, or else oneOf. */
static const json_t *union_of(const snode *v)
{
    return json_is_array(v->k[S_ANY]) ? v->k[S_ANY] : v->k[S_ONE];
}

static const json_t *union_peek(const json_t *n)
{
    const json_t *u = json_object_get(n, "anyOf");
    return json_is_array(u) ? u : json_object_get(n, "oneOf");
}

/* Does schema n (through refs and unions) allow JSON type t? */
static bool allows(const json_t *root, const json_t *n, const char *t, int depth)
{
    n = deref_peek(root, n);
    if (!json_is_object(n) || depth > SCHEMA_DEPTH_MAX)
        return false;
    const json_t *type = json_object_get(n, "type");
    if (json_is_string(type) && !strcmp(json_string_value(type), t))
        return true;
    size_t i;
    const json_t *x;
    json_array_foreach(type, i, x) if (json_is_string(x) && !strcmp(json_string_value(x), t))
        return true;
    if (!type && !strcmp(t, "object") && json_is_object(json_object_get(n, "properties")))
        return true;
    json_array_foreach(union_peek(n), i, x) if (allows(root, x, t, depth + 1))
        return true;
    return false;
}

static bool fits(const json_t *root, const json_t *n, const json_t *v)
{
    const char *t = tg_json_type_name(v);
    return allows(root, n, t, 0) || (json_is_integer(v) && allows(root, n, "number", 0));
}

/* The node that describes v: n itself, or the union branch v fits. NULL
 * when no branch fits; *several when more than one does. */
static const json_t *branch_for(const json_t *root, const json_t *n, const json_t *v,
                                bool *several)
{
    *several = false;
    n = deref_peek(root, n);
    const json_t *u = union_peek(n);
    if (!json_is_object(n) || !json_array_size(u))
        return n;
    const json_t *found = NULL;
    size_t i;
    const json_t *x;
    json_array_foreach(u, i, x) {
        if (!fits(root, x, v))
            continue;
        if (found)
            *several = true;
        else
            found = deref_peek(root, x);
    }
    return found;
}

/* --- R15: double-encoded values ----------------------------------------- */

/* A string that parses to a type the schema allows, where a string is not
 * allowed (then it is never second-guessed). */
static json_t *decode_string(const json_t *root, const json_t *schema, const char *s, size_t n)
{
    if (allows(root, schema, "string", 0))
        return NULL;
    json_t *v = tg_json_load(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (v && (json_is_string(v) || json_is_null(v) || !fits(root, schema, v))) {
        json_decref(v);
        return NULL;
    }
    return v;
}

static int decode_nested(tg_ctx *ctx, const json_t *root, json_t *v, const json_t *schema,
                         int depth);

/* R15 for one member or element x declared by ps: a decoded value (new
 * reference) when x is a double-encoded string, else NULL after walking
 * into x. *n counts the values replaced. */
static json_t *decode_slot(tg_ctx *ctx, const json_t *root, json_t *x, const json_t *ps,
                           const char *where, int depth, int *n)
{
    json_t *d = json_is_string(x) ? decode_string(root, ps, json_string_value(x),
                                                  json_string_length(x))
                                  : NULL;
    if (d) {
        tg_rr_note(ctx, TG_R15, where, x, d);
        *n += 1 + decode_nested(ctx, root, d, ps, depth + 1);
    } else {
        *n += decode_nested(ctx, root, x, ps, depth + 1);
    }
    return d;
}

static int decode_nested(tg_ctx *ctx, const json_t *root, json_t *v, const json_t *schema,
                         int depth)
{
    bool several;
    schema = branch_for(root, schema, v, &several);
    if (!json_is_object(schema) || depth > SCHEMA_DEPTH_MAX)
        return 0;
    int n = 0;
    if (json_is_object(v)) {
        const json_t *props = json_object_get(schema, "properties");
        const char *k;
        json_t *x;
        void *tmp;
        json_object_foreach_safe(v, tmp, k, x) {
            const json_t *ps = json_object_get(props, k);
            if (!ps)
                ps = json_object_get(schema, "additionalProperties");
            json_t *d = json_is_object(ps) ? decode_slot(ctx, root, x, ps, k, depth, &n) : NULL;
            if (d)
                json_object_set_new(v, k, d);
        }
    } else if (json_is_array(v)) {
        const json_t *is = json_object_get(schema, "items");
        if (!json_is_object(is))
            return 0;
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            json_t *d = decode_slot(ctx, root, x, is, NULL, depth, &n);
            if (d)
                json_array_set_new(v, i, d);
        }
    }
    return n;
}

static const json_t *params_peek(const tg_ctx *ctx, const char *agent_name)
{
    const json_t *tool = tg_rr_tool_peek(ctx, agent_name);
    return tg_json_get(tg_json_get(tool, "function"), "parameters");
}

int tg_rr_decode_values(tg_ctx *ctx, const char *agent_name, json_t *args)
{
    const json_t *root = params_peek(ctx, agent_name);
    return root ? decode_nested(ctx, root, args, root, 0) : 0;
}

int tg_rr_decode_schema(tg_ctx *ctx, const json_t *params, json_t *args)
{
    return json_is_object(params) ? decode_nested(ctx, params, args, params, 0) : 0;
}

/* --- R29: keys the schema forbids ---------------------------------------- */

static int drop_nested(tg_ctx *ctx, const json_t *root, json_t *v, const json_t *schema,
                       const char *name, int depth)
{
    if (depth > SCHEMA_DEPTH_MAX || !(json_is_object(v) || json_is_array(v)))
        return 0;
    bool several;
    schema = branch_for(root, schema, v, &several);
    if (!json_is_object(schema) || several)
        return 0;
    int n = 0;
    if (json_is_array(v)) {
        const json_t *is = json_object_get(schema, "items");
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) n += drop_nested(ctx, root, x, is, name, depth + 1);
        return n;
    }
    const json_t *props = json_object_get(schema, "properties");
    const json_t *ap = json_object_get(schema, "additionalProperties");
    /* patternProperties would need a regex engine to judge a key: such a
     * node keeps every key */
    bool closed = json_is_false(ap) && !json_object_get(schema, "patternProperties");
    const char *k;
    json_t *x;
    void *tmp;
    json_object_foreach_safe(v, tmp, k, x) {
        const json_t *ps = json_object_get(props, k);
        if (!ps && closed) {
            json_t *before = json_pack("{s:O}", k, x);
            tg_rr_note(ctx, TG_R29, name, before, NULL);
            json_decref(before);
            json_object_del(v, k);
            n++;
            continue;
        }
        if (!ps && json_is_object(ap))
            ps = ap;
        n += drop_nested(ctx, root, x, ps, name, depth + 1);
    }
    return n;
}

int tg_rr_drop_forbidden_keys(tg_ctx *ctx, const char *agent_name, json_t *args)
{
    const json_t *root = params_peek(ctx, agent_name);
    return root ? drop_nested(ctx, root, args, root, agent_name, 0) : 0;
}

/* --- does a rule need the whole value? ------------------------------------ */

/* Is t a type whose slot R15 fills from a string? */
static bool typed(const json_t *t)
{
    static const char *const names[] = {"object", "array", "integer", "number", "boolean"};
    const char *v = json_string_value(t);
    for (size_t i = 0; v && i < sizeof names / sizeof *names; i++)
        if (!strcmp(v, names[i]))
            return true;
    return false;
}

/* allows() of any of typed()'s types, in one walk instead of five (each
 * stream's first call of a tool asks, tg_rs_tool_is_live). */
static bool allows_typed(const json_t *root, const json_t *n, int depth)
{
    snode v;
    n = deref_read(root, n, &v);
    if (!json_is_object(n) || depth > SCHEMA_DEPTH_MAX)
        return false;
    const json_t *type = v.k[S_TYPE];
    if (typed(type))
        return true;
    size_t i;
    const json_t *x;
    json_array_foreach(type, i, x) if (typed(x))
        return true;
    if (!type && json_is_object(v.k[S_PROPS]))
        return true;
    json_array_foreach(union_of(&v), i, x) if (allows_typed(root, x, depth + 1))
        return true;
    return false;
}

/* Anything below n that R15 (a non-string scalar, array or object slot) or
 * R29 (additionalProperties:false) could act on. Follows refs; a cycle
 * ends at the depth bound. */
static bool schema_acts(const json_t *root, const json_t *n, bool r15, bool r29, int depth)
{
    snode v;
    n = deref_read(root, n, &v);
    if (!json_is_object(n) || depth > SCHEMA_DEPTH_MAX)
        return false;
    const json_t *ap = v.k[S_AP];
    if (r29 && json_is_false(ap))
        return true;
    if (r15 && depth > 0 && allows_typed(root, n, 0))
        return true;
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)v.k[S_PROPS], k, x)
        if (schema_acts(root, x, r15, r29, depth + 1))
            return true;
    if (json_is_object(ap) && schema_acts(root, ap, r15, r29, depth + 1))
        return true;
    if (schema_acts(root, v.k[S_ITEMS], r15, r29, depth + 1))
        return true;
    size_t i;
    json_array_foreach(union_of(&v), i, x) if (schema_acts(root, x, r15, r29, depth + 1))
        return true;
    return false;
}

/* The answer is kept in the worker's cache by the address of the schema
 * (every stream's first call of a tool asks, and the walk was a tenth of
 * a tool-call stream's own work). The tools array is cached and shared
 * across requests, so a resent tool list has the same schema objects;
 * the entry holds a reference to the schema, so while it lives the
 * address names that content (as tg_request_dump_split's does). */
bool tg_rr_schema_repairs(const tg_ctx *ctx, const char *agent_name)
{
    bool r15 = tg_rr_on(ctx, TG_RR_DECODE), r29 = tg_rr_on(ctx, TG_RR_FORBIDDEN_KEYS);
    if (!r15 && !r29)
        return false;
    const json_t *root = params_peek(ctx, agent_name);
    if (!root)
        return false;
    int rules = (r15 ? 1 : 0) | (r29 ? 2 : 0);
    uintptr_t a = (uintptr_t)root;
    uint64_t key = tg_hash64(&a, sizeof a, 0x61637473ULL + (uint64_t)rules);
    json_t *e = tg_cache_get(ctx->cache, "schemaacts", key);
    bool known = e && json_array_get(e, 0) == root &&
                 json_integer_value(json_array_get(e, 1)) == rules;
    bool acts = known ? json_is_true(json_array_get(e, 2))
                      : schema_acts(root, root, r15, r29, 0);
    json_decref(e);
    if (!known && ctx->cache) {
        e = json_pack("[O,i,b]", (json_t *)root, rules, acts);
        tg_cache_put(ctx->cache, "schemaacts", key, e, 64);
        json_decref(e);
    }
    return acts;
}
