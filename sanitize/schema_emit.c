/* schema_emit.c -- the last steps of a schema node (the walk is
 * schema_walk.c's): its keys written into the new node one by one, kept,
 * rewritten, or turned into a hint for its description. The type (or the
 * strings an enum becomes, Gemini rule 28), properties and required
 * (strict's every property required, draft 3's booleans), sub-schemas, the
 * keywords a target does not take (rules 18, 24, 40, 50), then the node
 * closed (rule 16) and given items (rule 4). Each lossy rewrite records
 * what undoes it in the node's inverse tree (schema_inverse.c).
 */
#include "sanitize/schema_walk_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"

/* Rule 24: what Gemini's OpenAPI Schema knows. */
static const char *const gemini_keys[] = {
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum",
    "maximum", NULL};

/* Rule 18: never in an OpenAI strict schema. */
static const char *const strict_forbidden[] = {
    "allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
    "dependencies" /* their draft-7 spelling */, "oneOf",
    "patternProperties", "propertyNames", "unevaluatedProperties", "default", "examples",
    "$schema", "$id", "nullable", "example", "$comment",
    /* pydantic's OpenAPI keyword; its mapping names $defs that inlining removes */
    "discriminator", NULL};

/* Rules 40 and 53: value constraints the strict decoders of Anthropic and
 * DeepSeek do not take. */
static const char *const constraint_keys[] = {
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
    "maxLength", "pattern", "minItems", "maxItems", "uniqueItems", "minProperties",
    "maxProperties", "patternProperties", NULL};

/* Rule 50: what Cerebras refuses (the whole request 400s, bisected in
 * elizaOS/eliza#11156); its numeric bounds are taken. */
static const char *const size_limit_keys[] = {
    "minLength", "maxLength", "pattern", "format", "minItems", "maxItems", "minProperties",
    "maxProperties", NULL};

/* Meta keys dropped without a hint: they constrain no value. */
static const char *const meta_keys[] = {"$schema", "$id", "$comment", "strict", "$anchor",
                                        "$dynamicAnchor", "$vocabulary", NULL};

static const char *const fmt_openai[] = {"date-time", "time", "date", "duration", "email",
                                         "hostname", "ipv4", "ipv6", "uuid", NULL};
static const char *const fmt_anthropic[] = {"date-time", "time", "date", "duration", "email",
                                            "hostname", "uri", "ipv4", "ipv6", "uuid", NULL};
static const char *const fmt_none[] = {NULL};
static const char *const fmt_g_string[] = {"enum", "date-time", NULL};
static const char *const fmt_g_number[] = {"float", "double", "enum", NULL};
static const char *const fmt_g_integer[] = {"int32", "int64", "enum", NULL};

/* The formats a node of type `type` may carry, or NULL for "any". */
static const char *const *format_allow(const walk *w, const char *type)
{
    if (w->flags & TG_SR_OPENAPI_SUBSET) {
        if (type && !strcmp(type, "number"))
            return fmt_g_number;
        if (type && !strcmp(type, "integer"))
            return fmt_g_integer;
        if (type && !strcmp(type, "string"))
            return fmt_g_string;
        return fmt_none;
    }
    if (!(w->flags & TG_SR_STRICT))
        return NULL;
    if (tg_dialect_has(w->rules->dialect, TG_DF_FORMATS_NONE))
        return fmt_none;
    if (tg_dialect_has(w->rules->dialect, TG_DF_FORMATS_ANTHROPIC))
        return fmt_anthropic;
    return fmt_openai;
}

/* Make a strict-mode optional property accept null (OpenAI's documented
 * optional form), in the shape the dialect takes. */
static json_t *make_nullable(walk *w, json_t *c)
{
    json_t *any = json_object_get(c, "anyOf");
    if (json_is_array(any) && !((w->flags & TG_SR_NULL_ANYOF) && json_array_size(any) >= ANYOF_MAX)) {
        size_t i;
        json_t *b;
        json_array_foreach(any, i, b) if (tg_sw_is_null_branch(b)) return json_incref(c);
        json_array_append_new(any, json_pack("{s:s}", "type", "null"));
        return json_incref(c);
    }
    json_t *t = json_object_get(c, "type");
    if (w->flags & TG_SR_NULL_ANYOF) {
        json_t *desc = json_incref(json_object_get(c, "description"));
        json_t *inner = json_copy(c);
        json_object_del(inner, "description");
        json_t *out = json_pack("{s:[o,{s:s}]}", "anyOf", inner, "type", "null");
        if (desc)
            json_object_set_new(out, "description", desc);
        return out;
    }
    if (json_is_string(t)) {
        if (strcmp(json_string_value(t), "null"))
            json_object_set_new(c, "type", json_pack("[O,s]", t, "null"));
    } else if (json_is_array(t)) {
        bool has = false;
        size_t i;
        json_t *v;
        json_array_foreach(t, i, v) has |= json_is_string(v) && !strcmp(json_string_value(v), "null");
        if (!has)
            json_array_append_new(t, json_string("null"));
    }
    json_t *cst = json_object_get(c, "const");
    if (cst && !json_is_null(cst)) {
        json_object_set_new(c, "enum", json_pack("[On]", cst));
        json_object_del(c, "const");
        return json_incref(c);
    }
    json_t *e = json_object_get(c, "enum");
    if (json_is_array(e)) {
        bool has = false;
        size_t i;
        json_t *v;
        json_array_foreach(e, i, v) has |= json_is_null(v);
        if (!has)
            json_array_append_new(e, json_null());
    }
    return json_incref(c);
}

static bool originally_nullable(json_t *src)
{
    if (!json_is_object(src))
        return true;  /* anything goes: null included */
    json_t *t = json_object_get(src, "type");
    if (json_is_true(json_object_get(src, "nullable")))
        return true;
    if (json_is_string(t))
        return !strcmp(json_string_value(t), "null");
    size_t i;
    json_t *v;
    json_array_foreach(t, i, v) if (json_is_string(v) && !strcmp(json_string_value(v), "null")) return true;
    json_array_foreach(json_object_get(src, "enum"), i, v) if (json_is_null(v)) return true;
    if (json_is_null(json_object_get(src, "const")))
        return true;  /* const: null (zod z.null(), pydantic None literal) */
    const char *combos[] = {"anyOf", "oneOf"};
    for (int c = 0; c < 2; c++)
        json_array_foreach(json_object_get(src, combos[c]), i, v) if (tg_sw_is_null_branch(v)) return true;
    return !t && !json_object_get(src, "$ref") && !json_object_get(src, "anyOf") &&
           !json_object_get(src, "oneOf") && !json_object_get(src, "allOf") &&
           !json_object_get(src, "enum") && !json_object_get(src, "const") &&
           !json_object_get(src, "properties");
}

/* Does the enum list vals hold the string s? */
static bool enum_has(json_t *vals, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(vals, i, v) if (json_is_string(v) && !strcmp(json_string_value(v), s)) return true;
    return false;
}

/* Non-string enum values become strings (Gemini rule 28); the inverse maps
 * each string back to the value the agent declared. */
static json_t *stringify_enum(walk *w, json_t *e, json_t *out, json_t *inv, const char *ptr)
{
    json_t *vals = json_array();
    json_t *map = json_object();
    bool had_null = false;
    size_t i;
    json_t *v;
    json_array_foreach(e, i, v) {
        if (json_is_null(v)) {
            had_null = true;
            continue;
        }
        if (json_is_string(v)) {
            if (!enum_has(vals, json_string_value(v)))
                json_array_append(vals, v);
            continue;
        }
        char *s = tg_json_dumps(v);
        if (!s)
            continue;
        /* 1 beside "1": one value upstream, and the agent's own string wins */
        if (!enum_has(vals, s) && !enum_has(e, s)) {
            json_array_append_new(vals, json_string(s));
            json_object_set(map, s, v);
        }
        free(s);
    }
    if (json_object_size(map)) {
        json_object_set_new(inv, "e", map);
        json_object_set_new(out, "format", json_string("enum"));
        tg_sw_note(w, ptr, "enum-to-strings", e, vals);
    } else {
        json_decref(map);
    }
    json_object_set_new(out, "type", json_string("string"));
    if (had_null)
        json_object_set_new(out, "nullable", json_true());
    return vals;
}

/* Rule 5 drops required names that are not properties (Gemini refuses
 * them, Groq refuses required without properties); the names still say
 * which keys the agent's tool needs, so they go into a hint. */
static void required_hint(walk *w, json_t *req_in, json_t *props, json_t *hints)
{
    if (!(w->flags & TG_SR_REQUIRED))
        return;
    json_t *lost = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(req_in, i, r) {
        if (json_is_string(r) && !json_object_get(props, json_string_value(r)) && !tg_sw_array_has(lost, r))
            json_array_append(lost, r);
    }
    if (json_array_size(lost))
        tg_sw_hint_add(hints, "required keys", lost);
    json_decref(lost);
}

/* Draft 3 wrote "required": true on the property itself; later drafts (and
 * every provider) read required only as the parent's list. Returns the
 * parent's list with those names added (new reference), or NULL when no
 * property carried a boolean. */
static json_t *draft3_required(walk *w, json_t *props, json_t *req_in, const char *ptr)
{
    if (!(w->flags & TG_SR_REQUIRED))
        return NULL;
    json_t *out = NULL;
    const char *k;
    json_t *v;
    json_object_foreach(props, k, v) {
        if (!json_is_true(json_object_get(v, "required")))
            continue;
        if (!out)
            out = req_in ? json_copy(req_in) : json_array();
        json_t *name = json_string(k);
        if (!tg_sw_array_has(out, name))
            json_array_append(out, name);
        json_decref(name);
    }
    if (out)
        tg_sw_note(w, ptr, "draft3-required-folded (rule 59)", req_in, out);
    return out;
}

/* properties (each one walked) and required of normalised node n into out;
 * under strict's all-required rule an optional property becomes required
 * and nullable, and the inverse's "o" and "f" lists say which. */
void tg_sw_emit_properties(walk *w, json_t *n, json_t *out, json_t *inv, json_t *hints,
                           const char *ptr, int depth, int objdepth)
{
    json_t *props = json_object_get(n, "properties");
    json_t *req_in = json_object_get(n, "required");
    if (props && !json_is_object(props)) {
        tg_sw_hint_add(hints, "properties", props);
        props = NULL;
    }
    if (!json_is_array(req_in))
        req_in = NULL;
    if (!props && !(w->flags & (TG_SR_STRICT)) && !json_object_get(n, "properties")) {
        required_hint(w, req_in, NULL, hints);
        return;
    }
    json_t *folded = draft3_required(w, props, req_in, ptr);
    if (folded)
        req_in = folded;
    json_t *names = tg_sw_key_names(w, props, ptr);  /* rule 87 */
    json_t *oprops = json_object();
    json_t *pinv = json_object();
    json_t *required = json_array();
    json_t *optional = json_array();
    json_t *fill = json_array();  /* optional but null was already allowed */
    bool strict_all = (w->flags & TG_SR_STRICT) && (w->flags & TG_SR_ALL_REQUIRED);
    const char *k;
    json_t *v;
    json_object_foreach(props, k, v) {
        char cptr[PTR_MAX];
        tg_sw_ptr_join(cptr, ptr, "properties", k);
        json_t *up = json_object_get(names, k);
        const char *uk = up ? json_string_value(up) : k;  /* the key upstream */
        json_t *cinv = NULL;
        json_t *c = tg_sw_rewrite_node(w, v, cptr, depth + 1, objdepth, false, &cinv);
        bool req = false;
        size_t i;
        json_t *r;
        json_array_foreach(req_in, i, r) req |= json_is_string(r) && !strcmp(json_string_value(r), k);
        if (strict_all && !req) {
            json_t *nc = make_nullable(w, c);
            json_decref(c);
            c = nc;
            json_array_append_new(originally_nullable(v) ? fill : optional, json_string(uk));
            tg_sw_note(w, cptr, "strict-optional-nullable", NULL, NULL);
        }
        if (req || strict_all)
            json_array_append_new(required, json_string(uk));
        json_object_set_new(oprops, uk, c);
        if (cinv)
            json_object_set_new(pinv, uk, cinv);
    }
    size_t before = json_array_size(req_in);
    if (json_is_array(req_in) && before != json_array_size(required) && !strict_all) {
        tg_sw_note(w, ptr, "required-not-in-properties", req_in, required);
    }
    if (json_is_array(req_in) && !props)
        tg_sw_note(w, ptr, "required-without-properties", req_in, NULL);
    required_hint(w, req_in, json_is_object(props) ? props : oprops, hints);
    json_decref(folded);
    json_object_set_new(out, "properties", oprops);
    if (json_array_size(required) || strict_all)
        json_object_set(out, "required", required);
    json_decref(required);
    if (json_object_size(pinv))
        json_object_set_new(inv, "p", pinv);
    else
        json_decref(pinv);
    if (json_array_size(optional))
        json_object_set_new(inv, "o", optional);
    else
        json_decref(optional);
    if (json_array_size(fill))
        json_object_set_new(inv, "f", fill);
    else
        json_decref(fill);
    if (names) {  /* the way back: {upstream: agent} */
        json_t *back = json_object();
        json_object_foreach(names, k, v) json_object_set_new(back, json_string_value(v), json_string(k));
        json_object_set_new(inv, "n", back);
        json_decref(names);
    }
}

/* Rule 88: DeepSeek reads every pattern as a regex and refuses one its
 * engine cannot parse; a NUL escape (\0) is one (`"^[^/\\\\\\0]+$" is not
 * a "regex"`, zed#64386). Rule 89: vLLM's structured-output backends refuse
 * propertyNames and patternProperties (xgrammar "features not supported",
 * then llguidance `Unimplemented keys: ["propertyNames"]`, a 500,
 * club-3090#45). Both constrain without shaping: the hint keeps them. */
static bool pattern_nul_escape(const char *s)
{
    for (; s && *s; s++) {
        if (*s != '\\')
            continue;
        if (s[1] == '0')
            return true;
        if (s[1])
            s++;
    }
    return false;
}

static bool refused_by_target(const walk *w, const char *k, json_t *v)
{
    if ((w->flags & TG_SR_PATTERN_NUL) && !strcmp(k, "pattern"))
        return pattern_nul_escape(json_string_value(v));
    if (w->flags & TG_SR_NO_KEY_SCHEMAS)
        return !strcmp(k, "propertyNames") || !strcmp(k, "patternProperties");
    return false;
}

/* One key that is neither structure nor type: keep, drop or hint. */
static void emit_other(walk *w, const char *k, json_t *v, json_t *out, json_t *hints,
                       const char *ptr, const char *type)
{
    uint64_t f = w->flags;
    if (tg_sw_in_list(meta_keys, k)) {
        if ((f & (TG_SR_OPENAPI_SUBSET | TG_SR_STRICT | TG_SR_MISTRAL_STRIP)) ||
            ((f & TG_SR_INLINE_REFS) && !strcmp(k, "$id"))) {
            tg_sw_note(w, ptr, "drop-meta", v, NULL);
            return;
        }
        json_object_set_new(out, k, json_deep_copy(v));
        return;
    }
    if ((f & TG_SR_NO_SIZE_LIMITS) && tg_sw_in_list(size_limit_keys, k)) {
        tg_sw_hint_add(hints, k, v);
        tg_sw_note(w, ptr, "constraint-to-hint", v, NULL);
        return;
    }
    if (!strcmp(k, "format")) {
        const char *const *allow = format_allow(w, type);
        if (allow && (!json_is_string(v) || !tg_sw_in_list(allow, json_string_value(v)))) {
            tg_sw_hint_add(hints, k, v);
            tg_sw_note(w, ptr, "format-narrowed", v, NULL);
            return;
        }
        json_object_set_new(out, k, json_deep_copy(v));
        return;
    }
    if ((f & TG_SR_OPENAPI_SUBSET) && !strcmp(k, "examples") && json_is_array(v) &&
        json_array_size(v) && !json_object_get(out, "example")) {
        json_object_set_new(out, "example", json_deep_copy(json_array_get(v, 0)));
        tg_sw_note(w, ptr, "examples-to-example", v, NULL);
        return;
    }
    bool drop = refused_by_target(w, k, v);
    if (f & TG_SR_OPENAPI_SUBSET)
        drop = !tg_sw_in_list(gemini_keys, k);
    if ((f & TG_SR_STRICT) && tg_sw_in_list(strict_forbidden, k))
        drop = true;
    if ((f & TG_SR_NO_CONSTRAINTS) && tg_sw_in_list(constraint_keys, k)) {
        /* Anthropic strict keeps minItems 0 or 1 (rule 40). */
        bool small_min = !strcmp(k, "minItems") &&
                         tg_dialect_has(w->rules->dialect, TG_DF_SMALL_MIN_ITEMS) &&
                         json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= 1;
        drop = !small_min;
    }
    if (!strncmp(k, "x-toolgate-hint", 15)) {
        tg_sw_hint_text(hints, json_string_value(v) ? json_string_value(v) : "?");
        return;
    }
    if (drop) {
        tg_sw_hint_add(hints, k, v);
        tg_sw_note(w, ptr, "constraint-to-hint", v, NULL);
        return;
    }
    json_object_set_new(out, k, json_deep_copy(v));
}

/* `type` (or the stringified enum that replaces it) into out. */
void tg_sw_emit_type(walk *w, json_t *n, json_t *out, json_t *inv, const node_type *nt, const char *ptr)
{
    uint64_t f = w->flags;
    const char *single = tg_sw_single_type(nt);
    if (nt->enum_node) {
        json_t *vals = stringify_enum(w, json_object_get(n, "enum"), out, inv, ptr);
        if (nt->has_null)
            json_object_set_new(out, "nullable", json_true());
        if (json_array_size(vals))  /* only null was allowed: nullable says it (rule 28) */
            json_object_set_new(out, "enum", vals);
        else
            json_decref(vals);
        return;
    }
    if (!json_array_size(nt->types))
        return;
    if ((f & TG_SR_OPENAPI_SUBSET) && single) {
        json_object_set_new(out, "type", json_string(single));
        if (nt->has_null)
            json_object_set_new(out, "nullable", json_true());
    } else if ((f & TG_SR_OPENAPI_SUBSET) && nt->has_null) {
        json_object_set_new(out, "type", json_string("null"));
    } else if (json_array_size(nt->types) == 1) {
        json_object_set(out, "type", json_array_get(nt->types, 0));
    } else {
        json_object_set(out, "type", nt->types);
    }
    if (json_is_array(json_object_get(n, "type")) && json_is_string(json_object_get(out, "type")))
        tg_sw_note(w, ptr, "type-array-to-nullable", json_object_get(n, "type"), json_object_get(out, "type"));
}

/* items / additionalProperties sub-schemas. */
static void emit_subschema(walk *w, const char *k, json_t *v, json_t *out, json_t *inv,
                           json_t *hints, const char *ptr, int depth, int objdepth)
{
    char cptr[PTR_MAX];
    json_t *cinv = NULL;
    json_t *tuple = NULL;
    if (json_is_array(v)) {  /* draft-04 tuple form */
        tuple = json_pack("{s:O}", "anyOf", v);
        v = tuple;
        tg_sw_hint_text(hints, "items were a tuple");
    }
    tg_sw_ptr_join(cptr, ptr, k, NULL);
    json_t *c = tg_sw_rewrite_node(w, v, cptr, depth + 1, objdepth, false, &cinv);
    json_decref(tuple);
    json_object_set_new(out, k, c);
    if (cinv)
        json_object_set_new(inv, !strcmp(k, "items") ? "i" : "x", cinv);
}

static void emit_additional(walk *w, json_t *v, json_t *out, json_t *hints, const char *ptr)
{
    uint64_t f = w->flags;
    if ((f & TG_SR_OPENAPI_SUBSET) || ((f & TG_SR_MISTRAL_STRIP) && json_is_false(v))) {
        if (json_is_object(v))
            tg_sw_hint_add(hints, "additional values", json_object_get(v, "type") ? json_object_get(v, "type") : v);
        tg_sw_note(w, ptr, "drop-additionalProperties", v, NULL);
    } else if (f & TG_SR_STRICT) {
        if (!json_is_false(v)) {
            tg_sw_hint_text(hints, "other keys not accepted");
            tg_sw_note(w, ptr, "strict-additionalProperties", v, json_false());
        }
    } else {
        json_object_set_new(out, "additionalProperties", json_deep_copy(v));
    }
}

static void emit_defs(walk *w, const char *k, json_t *v, json_t *out, const char *ptr, int depth)
{
    if ((w->flags & TG_SR_INLINE_REFS) || !json_is_object(v)) {
        tg_sw_note(w, ptr, "drop-defs", NULL, NULL);
        return;
    }
    json_t *defs = json_object();
    const char *dk;
    json_t *dv;
    json_object_foreach(v, dk, dv) {
        char dptr[PTR_MAX];
        json_t *dinv = NULL;
        tg_sw_ptr_join(dptr, ptr, k, dk);
        json_object_set_new(defs, dk, tg_sw_rewrite_node(w, dv, dptr, depth + 1, 0, false, &dinv));
        if (dinv && (w->flags & TG_SR_KEY_NAMES)) {
            /* rule 87: a use site's "R" finds this inverse by the $ref
             * that names it ("#" and the pointer below the parameters) */
            static const char top[] = "/function/parameters";
            char ref[PTR_MAX + 1];
            bool below = !strncmp(ptr, top, sizeof top - 1);
            snprintf(ref, sizeof ref, "#%s", below ? ptr + sizeof top - 1 : ptr);
            char rptr[PTR_MAX];
            tg_sw_ptr_join(rptr, ref, k, dk);
            if (!w->defs_inv)
                w->defs_inv = json_object();
            json_object_set(w->defs_inv, rptr, dinv);
        }
        json_decref(dinv);  /* other refs are not followed on the way back */
    }
    json_object_set_new(out, k, defs);
}

/* Every key of n but type/properties/required, in n's order. */
void tg_sw_emit_keys(walk *w, json_t *n, json_t *out, json_t *inv, json_t *hints, const node_type *nt,
                     const char *ptr, int depth, int objdepth)
{
    uint64_t f = w->flags;
    const char *k;
    json_t *v;
    json_object_foreach(n, k, v) {
        if (!strcmp(k, "type") || !strcmp(k, "properties") || !strcmp(k, "required")) {
            continue;
        } else if (!strcmp(k, "nullable")) {
            /* OpenAPI nullable became a "null" type, except on a typeless node */
            if (!(f & (TG_SR_OPENAPI_SUBSET | TG_SR_STRICT)) && json_is_boolean(v) && !json_object_get(n, "type"))
                json_object_set(out, k, v);
        } else if (!strcmp(k, "enum")) {
            if (!nt->enum_node)
                json_object_set_new(out, k, json_deep_copy(v));
        } else if (!strcmp(k, "items") || (!strcmp(k, "additionalProperties") && json_is_object(v) &&
                                           !(f & (TG_SR_OPENAPI_SUBSET | TG_SR_STRICT)))) {
            emit_subschema(w, k, v, out, inv, hints, ptr, depth, objdepth);
        } else if (!strcmp(k, "additionalProperties")) {
            emit_additional(w, v, out, hints, ptr);
        } else if (!strcmp(k, "anyOf") || !strcmp(k, "oneOf") || (!strcmp(k, "allOf") && !(f & TG_SR_STRICT))) {
            json_t *binv = NULL;
            json_object_set_new(out, k, tg_sw_rewrite_branches(w, v, ptr, k, depth, objdepth, &binv));
            if (binv && strcmp(k, "allOf"))
                json_object_set_new(inv, "a", binv);
            else
                json_decref(binv);
        } else if (!strcmp(k, "$defs") || !strcmp(k, "definitions")) {
            emit_defs(w, k, v, out, ptr, depth);
        } else if (!strcmp(k, "$ref")) {
            if (!(f & TG_SR_INLINE_REFS))
                json_object_set_new(out, k, json_deep_copy(v));
            /* rule 87: the definition's renamed keys go back by its inverse */
            if (!(f & TG_SR_INLINE_REFS) && (f & TG_SR_KEY_NAMES) && json_is_string(v) &&
                tg_sw_keys_to_rename(w, tg_sw_ref_peek(w, json_string_value(v)), 0))
                json_object_set(inv, "R", v);
        } else if (!strcmp(k, "const")) {
            json_object_set_new(out, k, json_deep_copy(v));
        } else if (!strcmp(k, "description") || !strcmp(k, "title")) {
            if (json_is_string(v))
                json_object_set(out, k, v);
        } else {
            emit_other(w, k, v, out, hints, ptr, tg_sw_single_type(nt));
        }
    }
    if ((f & TG_SR_OPENAPI_SUBSET) && json_is_true(json_object_get(n, "nullable")) && json_object_get(out, "anyOf"))
        json_object_set_new(out, "nullable", json_true());
}

/* After properties: rule 5 clean-up, strict closing (rule 16), xAI's quirk,
 * and items for arrays that had none (rule 4). */
void tg_sw_finish_node(walk *w, json_t *n, json_t *out, json_t *inv, bool is_object, bool is_array,
                       bool root, const char *ptr, int depth, int objdepth)
{
    uint64_t f = w->flags;
    json_t *props = json_object_get(out, "properties");
    if ((f & TG_SR_OPENAPI_SUBSET) && !root && json_is_object(props) && !json_object_size(props)) {
        /* Rule 58: Gemini refuses an empty properties at any depth
         * ("...properties[go_back].properties: should be non-empty for
         * OBJECT type"); {type: object} alone is its free-form object. The
         * root has rule 30. */
        tg_sw_note(w, ptr, "empty-properties (rule 58)", props, NULL);
        json_object_del(out, "properties");
    }
    json_t *req = json_object_get(out, "required");
    if (!(f & TG_SR_REQUIRED) && !json_object_get(out, "properties") && json_object_get(n, "required"))
        json_object_set(out, "required", json_object_get(n, "required"));
    req = json_object_get(out, "required");
    if (req && (!json_object_get(out, "properties") || (json_array_size(req) == 0 && !(f & TG_SR_STRICT))))
        json_object_del(out, "required");
    if (root && (f & TG_SR_ROOT_OBJECT) && !json_object_get(out, "properties")) {
        /* Rule 3: a tool without arguments still names its (empty)
         * properties; OpenAI refuses a bare root object: "In context=(),
         * object schema missing properties" (spring-ai#4776). Gemini's
         * empty root then goes whole (rule 30). */
        json_object_set_new(out, "properties", json_object());
        tg_sw_note(w, ptr, "root-properties-added (rule 3)", NULL, json_object_get(out, "properties"));
    }
    if (is_object && (f & TG_SR_STRICT)) {
        if (!json_object_get(out, "properties"))
            json_object_set_new(out, "properties", json_object());
        if (!json_object_get(out, "required"))
            json_object_set_new(out, "required", json_array());
        json_object_set_new(out, "additionalProperties", json_false());
    }
    json_t *named = json_object_get(json_object_get(out, "properties"), "properties");
    if ((f & TG_SR_XAI_PROPERTIES) && named) {
        /* xAI 2026-04..09 rejected /properties/properties/additionalProperties:
         * false; drop it there and beside it (it is xAI's default anyway) */
        if (json_is_false(json_object_get(named, "additionalProperties"))) {
            json_object_del(named, "additionalProperties");
            tg_sw_note(w, ptr, "xai-properties-quirk", json_false(), NULL);
        }
        if (json_is_false(json_object_get(out, "additionalProperties"))) {
            json_object_del(out, "additionalProperties");
            tg_sw_note(w, ptr, "xai-properties-quirk", json_false(), NULL);
        }
    }
    if (is_array && (f & TG_SR_ITEMS) && !json_is_object(json_object_get(out, "items"))) {
        json_t *cinv = NULL;
        char cptr[PTR_MAX];
        tg_sw_ptr_join(cptr, ptr, "items", NULL);
        json_t *empty = json_object();
        json_t *c = tg_sw_rewrite_node(w, empty, cptr, depth + 1, objdepth, false, &cinv);
        json_decref(empty);
        tg_sw_note(w, ptr, "add-items", json_object_get(n, "items"), c);
        json_object_set_new(out, "items", c);
        if (cinv)
            json_object_set_new(inv, "i", cinv);
    }
}

/* An enum sent as strings is a string node: number bounds no longer fit it
 * (their values are in the enum anyway), and a default that is not a
 * string is sent as the string the enum spells it with; a null default
 * (pydantic's Optional[...] = None) stays null, as nullable says. */
void tg_sw_retype_enum_keys(walk *w, json_t *out, const char *ptr)
{
    static const char *const numeric[] = {"minimum", "maximum", "exclusiveMinimum",
                                          "exclusiveMaximum", "multipleOf", NULL};
    for (const char *const *k = numeric; *k; k++) {
        json_t *v = json_object_get(out, *k);
        if (v) {
            tg_sw_note(w, ptr, "enum-as-strings-drops-bound", v, NULL);
            json_object_del(out, *k);
        }
    }
    json_t *d = json_object_get(out, "default");
    if (d && !json_is_string(d) && !json_is_null(d)) {  /* null: the node is nullable */
        char *t = tg_json_dumps(d);
        json_t *now = t ? json_string(t) : NULL;
        free(t);
        tg_sw_note(w, ptr, "enum-as-strings-default", d, now);
        if (now)
            json_object_set_new(out, "default", now);
        else
            json_object_del(out, "default");
    }
}
