/* referee.c -- section 9 of docs/dialects.md as code, plus a structural
 * validator, an instance generator and a random-schema generator for the
 * schema tests (see referee.h). Written from the spec, not from the stage:
 * nothing here includes sanitize/ headers.
 */
#include "referee.h"

#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ref_ctx {
    const char *dialect;
    const char *tool;
    json_t *why;
    json_t *root;
    int violations;
    bool strict;      /* tool carries strict:true */
    int props_total;  /* rule 20 */
    int enum_total;   /* rule 21 */
    long string_total;
} ref_ctx;

static void violation(ref_ctx *c, const char *rule, const char *ptr, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->violations++;
    if (c->why && json_array_size(c->why) < 50)
        json_array_append_new(c->why, json_sprintf("%s %s %s: %s", rule, c->tool ? c->tool : "-",
                                                   ptr[0] ? ptr : "/", msg));
}

static bool is(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

static bool any_of(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (is(s, *list))
            return true;
    return false;
}

static bool matches(const char *re, const char *s)
{
    regex_t rx;
    if (regcomp(&rx, re, REG_EXTENDED | REG_NOSUB))
        return false;
    bool ok = regexec(&rx, s, 0, NULL, 0) == 0;
    regfree(&rx);
    return ok;
}

static bool type_has(json_t *node, const char *t)
{
    json_t *ty = json_object_get(node, "type");
    if (json_is_string(ty))
        return is(json_string_value(ty), t);
    size_t i;
    json_t *v;
    json_array_foreach(ty, i, v) if (is(json_string_value(v), t)) return true;
    return false;
}

static bool dialect_is(ref_ctx *c, const char *d)
{
    /* Vertex's endpoint takes what the Gemini API takes (section 6), plus
     * rule 60 */
    if (is(d, "gemini") && is(c->dialect, "vertex"))
        return true;
    return is(c->dialect, d);
}

/* ---------------------------------------------------------- node checks */

static const char *const gemini_allowed[] = {
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum",
    "maximum", NULL};
static const char *const gemini_banned[] = {
    "additionalProperties", "$ref", "$defs", "definitions", "$schema", "$id", "const",
    "examples", "oneOf", "allOf", "not", "propertyNames", "patternProperties", "multipleOf",
    "exclusiveMinimum", "exclusiveMaximum", "strict", NULL};
static const char *const strict_banned[] = {
    "allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "oneOf",
    "patternProperties", "propertyNames", "unevaluatedProperties", "default", "examples",
    "$schema", "$id", "nullable", NULL};
static const char *const strict_formats[] = {"date-time", "time", "date", "duration", "email",
                                             "hostname", "ipv4", "ipv6", "uuid", NULL};
static const char *const anth_formats[] = {"date-time", "time", "date", "duration", "email",
                                           "hostname", "uri", "ipv4", "ipv6", "uuid", NULL};
static const char *const anth_banned[] = {
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
    "maxLength", "maxItems", "uniqueItems", "minProperties", "maxProperties", "not", NULL};
static const char *const deepseek_banned[] = {
    "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "multipleOf",
    "patternProperties", "minItems", "maxItems", NULL};
static const char *const type_set[] = {"string", "number", "integer", "boolean", "array",
                                       "object", "null", NULL};

/* rule 59: properties / required only on a node that may be an object */
static void check_object_keywords(ref_ctx *c, json_t *n, const char *ptr)
{
    json_t *t = json_object_get(n, "type");
    if (t && !type_has(n, "object") && (json_object_get(n, "properties") || json_object_get(n, "required")))
        violation(c, "R59", ptr, "properties/required on a non-object type");
}

static void check_common(ref_ctx *c, json_t *n, const char *ptr)
{
    /* rule 4 */
    if (type_has(n, "array") && !json_is_object(json_object_get(n, "items")))
        violation(c, "R4", ptr, "array without object items");
    /* rule 5 */
    json_t *req = json_object_get(n, "required");
    json_t *props = json_object_get(n, "properties");
    if (req && !props)
        violation(c, "R5", ptr, "required without properties");
    size_t i;
    json_t *r;
    json_array_foreach(req, i, r) {
        if (!json_is_string(r) || !json_object_get(props, json_string_value(r)))
            violation(c, "R5", ptr, "required '%s' is not a property", json_string_value(r));
    }
}

static void check_strict_object(ref_ctx *c, json_t *n, const char *ptr, const char *rule)
{
    if (!type_has(n, "object"))
        return;
    if (!json_is_false(json_object_get(n, "additionalProperties")))
        violation(c, rule, ptr, "object without additionalProperties:false");
    if (is(rule, "R40"))
        return;
    json_t *props = json_object_get(n, "properties");
    json_t *req = json_object_get(n, "required");
    if (json_array_size(req) != json_object_size(props))
        violation(c, rule, ptr, "required != keys(properties)");
    const char *k;
    json_t *v;
    json_object_foreach(props, k, v) {
        bool in = false;
        size_t i;
        json_t *r;
        json_array_foreach(req, i, r) in |= is(json_string_value(r), k);
        if (!in)
            violation(c, rule, ptr, "property '%s' not required", k);
    }
}

static void check_openai_strict(ref_ctx *c, json_t *n, const char *ptr, int objdepth)
{
    check_strict_object(c, n, ptr, "R16/17");
    const char *k;
    json_t *v;
    json_object_foreach(n, k, v) {
        if (any_of(k, strict_banned))
            violation(c, "R18", ptr, "keyword %s", k);
    }
    json_t *f = json_object_get(n, "format");
    if (f && !any_of(json_string_value(f), strict_formats))
        violation(c, "R19", ptr, "format %s", json_string_value(f));
    if ((type_has(n, "object") || type_has(n, "array")) && objdepth > 10)
        violation(c, "R20", ptr, "nesting %d > 10", objdepth);
    if (type_has(n, "object")) {
        c->props_total += (int)json_object_size(json_object_get(n, "properties"));
        json_object_foreach(json_object_get(n, "properties"), k, v) c->string_total += (long)strlen(k);
    }
    json_t *e = json_object_get(n, "enum");
    c->enum_total += (int)json_array_size(e);
    size_t i;
    long elen = 0;
    json_array_foreach(e, i, v) if (json_is_string(v)) elen += (long)json_string_length(v);
    c->string_total += elen;
    if (json_array_size(e) > 250 && elen > 15000)
        violation(c, "R21", ptr, "large enum too long");
    const char *ref = json_string_value(json_object_get(n, "$ref"));
    if (ref && !is(ref, "#") && strncmp(ref, "#/$defs/", 8) && strncmp(ref, "#/definitions/", 14))
        violation(c, "R22", ptr, "$ref %s", ref);
    if (ref && !is(ref, "#")) {
        const char *name = strchr(ref + 2, '/') + 1;
        json_t *defs = json_object_get(c->root, !strncmp(ref, "#/$defs/", 8) ? "$defs" : "definitions");
        if (!json_object_get(defs, name))
            violation(c, "R22", ptr, "$ref %s unresolved", ref);
    }
}

static void check_gemini(ref_ctx *c, json_t *n, const char *ptr)
{
    const char *k;
    json_t *v;
    json_object_foreach(n, k, v) {
        if (!any_of(k, gemini_allowed))
            violation(c, "R24", ptr, "keyword %s", k);
        if (any_of(k, gemini_banned))
            violation(c, "R25", ptr, "keyword %s", k);
    }
    json_t *t = json_object_get(n, "type");
    if (t && (!json_is_string(t) || !any_of(json_string_value(t), type_set)))
        violation(c, "R26", ptr, "type is not a single known name");
    json_t *any = json_object_get(n, "anyOf");
    if (!any && !t)
        violation(c, "R27", ptr, "node without type");
    if (any && (json_object_get(n, "items") || json_object_get(n, "properties") ||
                json_object_get(n, "enum") || json_object_get(n, "format")))
        violation(c, "R27", ptr, "type-specific siblings beside anyOf");
    /* rule 60 (Vertex): anyOf is the only field of its node */
    if (is(c->dialect, "vertex") && json_object_get(n, "anyOf") && json_object_size(n) > 1)
        violation(c, "R60", ptr, "fields beside anyOf");
    /* rule 58: no empty properties below the root (rule 30 has the root) */
    json_t *props = json_object_get(n, "properties");
    if (*ptr && json_is_object(props) && json_object_size(props) == 0)
        violation(c, "R58", ptr, "empty properties below the root");
    json_t *e = json_object_get(n, "enum");
    if (e) {
        if (!json_is_array(e) || json_array_size(e) == 0)
            violation(c, "R28", ptr, "empty enum");
        size_t i;
        json_array_foreach(e, i, v) if (!json_is_string(v)) violation(c, "R28", ptr, "non-string enum value");
        if (!is(json_string_value(t), "string") && !is(json_string_value(json_object_get(n, "format")), "enum"))
            violation(c, "R28", ptr, "enum on non-string type without format:enum");
    }
    json_t *f = json_object_get(n, "format");
    if (f) {
        const char *fs = json_string_value(f);
        const char *ts = json_string_value(t);
        bool ok = is(fs, "enum") && e;
        if (is(ts, "string"))
            ok |= is(fs, "enum") || is(fs, "date-time");
        else if (is(ts, "number"))
            ok |= is(fs, "float") || is(fs, "double");
        else if (is(ts, "integer"))
            ok |= is(fs, "int32") || is(fs, "int64");
        if (!ok)
            violation(c, "R29", ptr, "format %s on %s", fs ? fs : "?", ts ? ts : "?");
    }
}

static void check_anthropic_strict(ref_ctx *c, json_t *n, const char *ptr)
{
    check_strict_object(c, n, ptr, "R40");
    const char *k;
    json_t *v;
    json_object_foreach(n, k, v) if (any_of(k, anth_banned)) violation(c, "R40", ptr, "keyword %s", k);
    json_t *mi = json_object_get(n, "minItems");
    if (mi && !(json_is_integer(mi) && json_integer_value(mi) >= 0 && json_integer_value(mi) <= 1))
        violation(c, "R40", ptr, "minItems not 0/1");
    json_t *f = json_object_get(n, "format");
    if (f && !any_of(json_string_value(f), anth_formats))
        violation(c, "R40", ptr, "format %s", json_string_value(f));
}

static void check_cerebras_strict(ref_ctx *c, json_t *n, const char *ptr)
{
    check_strict_object(c, n, ptr, "R50");
    if (json_is_array(json_object_get(n, "type")))
        violation(c, "R50", ptr, "type array");
    if (json_array_size(json_object_get(n, "anyOf")) > 5)
        violation(c, "R50", ptr, "anyOf with more than 5 branches");
    if (json_is_true(json_object_get(n, "items")))
        violation(c, "R50", ptr, "items: true");
}

static void check_node(ref_ctx *c, json_t *n, const char *ptr, int depth, int objdepth);

static void visit_children(ref_ctx *c, json_t *n, const char *ptr, int depth, int objdepth)
{
    char cp[1024];
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(n, "properties"), k, v) {
        snprintf(cp, sizeof cp, "%s/properties/%s", ptr, k);
        check_node(c, v, cp, depth + 1, objdepth);
    }
    json_t *items = json_object_get(n, "items");
    if (json_is_object(items)) {
        snprintf(cp, sizeof cp, "%s/items", ptr);
        check_node(c, items, cp, depth + 1, objdepth);
    }
    const char *arrs[] = {"prefixItems", "anyOf", "oneOf", "allOf"};
    for (int a = 0; a < 4; a++) {
        size_t i;
        json_array_foreach(json_object_get(n, arrs[a]), i, v) {
            snprintf(cp, sizeof cp, "%s/%s/%zu", ptr, arrs[a], i);
            check_node(c, v, cp, depth + 1, objdepth);
        }
    }
    json_t *ap = json_object_get(n, "additionalProperties");
    if (json_is_object(ap)) {
        snprintf(cp, sizeof cp, "%s/additionalProperties", ptr);
        check_node(c, ap, cp, depth + 1, objdepth);
    }
    const char *defs[] = {"$defs", "definitions"};
    for (int d = 0; d < 2; d++) {
        json_object_foreach(json_object_get(n, defs[d]), k, v) {
            snprintf(cp, sizeof cp, "%s/%s/%s", ptr, defs[d], k);
            check_node(c, v, cp, depth + 1, 0);
        }
    }
}

static void check_node(ref_ctx *c, json_t *n, const char *ptr, int depth, int objdepth)
{
    if (!json_is_object(n)) {
        if (dialect_is(c, "gemini") || c->strict)
            violation(c, "R24", ptr, "schema node is not an object");
        return;
    }
    if (depth > 200) {
        violation(c, "R20", ptr, "runaway nesting");
        return;
    }
    /* rule 20: object and array levels both count (the stricter reading,
     * which OpenAI's "11 levels of nesting" error for objects in arrays
     * shows it uses) */
    if (type_has(n, "object") || type_has(n, "array"))
        objdepth++;
    check_common(c, n, ptr);
    if (dialect_is(c, "gemini") || c->strict)
        check_object_keywords(c, n, ptr);
    if (dialect_is(c, "gemini"))
        check_gemini(c, n, ptr);
    if (c->strict && (dialect_is(c, "openai-strict") || dialect_is(c, "openai")))
        check_openai_strict(c, n, ptr, objdepth);
    if (c->strict && dialect_is(c, "anthropic"))
        check_anthropic_strict(c, n, ptr);
    if (c->strict && dialect_is(c, "cerebras"))
        check_cerebras_strict(c, n, ptr);
    if (c->strict && dialect_is(c, "deepseek")) {
        const char *k;
        json_t *v;
        json_object_foreach(n, k, v) if (any_of(k, deepseek_banned)) violation(c, "R53", ptr, "keyword %s", k);
    }
    if (dialect_is(c, "xai")) {
        if (json_array_size(json_object_get(n, "allOf")) > 1)
            violation(c, "R51", ptr, "allOf with more than one subschema");
        if (json_object_get(n, "$ref"))
            violation(c, "R51", ptr, "$ref left (recursion cannot be excluded)");
        json_t *named = json_object_get(json_object_get(n, "properties"), "properties");
        if (named && (json_is_false(json_object_get(n, "additionalProperties")) ||
                      json_is_false(json_object_get(named, "additionalProperties"))))
            violation(c, "R51", ptr, "additionalProperties:false at or beside a property named properties");
    }
    if (dialect_is(c, "mistral")) {
        if (json_object_get(n, "$id") || json_object_get(n, "$schema") ||
            json_is_false(json_object_get(n, "additionalProperties")))
            violation(c, "S6", ptr, "mistral: $id/$schema/additionalProperties:false left");
    }
    visit_children(c, n, ptr, depth, objdepth);
}

/* ---------------------------------------------------------- tool checks */

static const char *name_pattern(ref_ctx *c)
{
    if (dialect_is(c, "gemini"))
        return "^[A-Za-z_][A-Za-z0-9_.-]{0,63}$";  /* rule 32 */
    if (dialect_is(c, "moonshot"))
        return "^[A-Za-z][A-Za-z0-9_-]{0,63}$";  /* rule 76 */
    if (dialect_is(c, "ollama") || dialect_is(c, "vllm") || dialect_is(c, "passthrough"))
        return NULL;
    return "^[a-zA-Z0-9_-]{1,64}$";  /* rules 12, 37; section 7 */
}

static int max_tools(ref_ctx *c)
{
    if (dialect_is(c, "openai") || dialect_is(c, "openai-strict") || dialect_is(c, "gemini"))
        return 128;  /* rules 13, 33 */
    return 0;
}

static bool strict_dialect(ref_ctx *c, json_t *fn)
{
    if (dialect_is(c, "openai-strict"))
        return true;  /* rule 16 note: every tool */
    if (dialect_is(c, "openai") || dialect_is(c, "anthropic") || dialect_is(c, "cerebras") ||
        dialect_is(c, "deepseek"))
        return json_is_true(json_object_get(fn, "strict"));
    return false;
}

static void check_tool(ref_ctx *c, json_t *tool, size_t i, json_t *seen)
{
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/tools/%zu", i);
    json_t *fn = json_object_get(tool, "function");
    const char *name = json_string_value(json_object_get(fn, "name"));
    c->tool = name;
    if (!is(json_string_value(json_object_get(tool, "type")), "function") || !name || !*name) {
        violation(c, "R1", ptr, "not a named function tool");
        return;
    }
    if (json_object_get(seen, name))
        violation(c, "R2", ptr, "duplicate name %s", name);
    json_object_set_new(seen, name, json_true());
    const char *pat = name_pattern(c);
    if (pat && !matches(pat, name))
        violation(c, dialect_is(c, "gemini") ? "R32" : "R12", ptr, "name %s", name);
    if (dialect_is(c, "groq") && json_is_null(json_object_get(fn, "description")))
        violation(c, "R48", ptr, "null description");
    if (dialect_is(c, "mistral") && json_object_get(fn, "strict"))
        violation(c, "S6", ptr, "mistral: strict key left");
    c->strict = strict_dialect(c, fn);
    if (dialect_is(c, "openai-strict") && !json_is_true(json_object_get(fn, "strict")))
        violation(c, "R16", ptr, "openai-strict tool without strict:true");
    json_t *p = json_object_get(fn, "parameters");
    c->root = p;
    c->props_total = c->enum_total = 0;
    c->string_total = 0;
    if (!p)
        return;
    if (!json_is_object(p)) {
        violation(c, "R3", ptr, "parameters not an object");
        return;
    }
    /* rules 3, 38 */
    if (!is(json_string_value(json_object_get(p, "type")), "object"))
        violation(c, "R3", ptr, "root type is not \"object\"");
    if (json_object_get(p, "anyOf") || json_object_get(p, "oneOf") || json_object_get(p, "allOf"))
        violation(c, "R3", ptr, "combinator at the root");
    if (dialect_is(c, "gemini") && json_object_size(json_object_get(p, "properties")) == 0)
        violation(c, "R30", ptr, "root without properties must be omitted");
    check_node(c, p, "", 0, 0);
    if (c->strict && (dialect_is(c, "openai-strict") || dialect_is(c, "openai"))) {
        if (c->props_total > 5000)
            violation(c, "R20", ptr, "%d properties", c->props_total);
        if (c->enum_total > 1000 || c->string_total > 120000)
            violation(c, "R21", ptr, "enum/string budget");
    }
}

static void check_strict_uniform(ref_ctx *c, json_t *tools)
{
    /* rule 50: Cerebras takes one strict value for all tools */
    int strict = -1;
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        int s = json_is_true(json_object_get(json_object_get(t, "function"), "strict"));
        if (strict >= 0 && s != strict)
            violation(c, "R50", "/tools", "mixed strict values");
        strict = s;
    }
}

static void check_anthropic_budget(ref_ctx *c, json_t *tools)
{
    /* rule 41 */
    int nstrict = 0, optional = 0, unions = 0;
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *fn = json_object_get(t, "function");
        if (!json_is_true(json_object_get(fn, "strict")))
            continue;
        nstrict++;
        /* count over every object node of the schema */
        json_t *stack = json_array();
        json_array_append(stack, json_object_get(fn, "parameters"));
        while (json_array_size(stack)) {
            json_t *n = json_incref(json_array_get(stack, json_array_size(stack) - 1));
            json_array_remove(stack, json_array_size(stack) - 1);
            json_t *req = json_object_get(n, "required");
            const char *k;
            json_t *v;
            json_object_foreach(json_object_get(n, "properties"), k, v) {
                bool in = false;
                size_t j;
                json_t *r;
                json_array_foreach(req, j, r) in |= is(json_string_value(r), k);
                optional += !in;
                unions += json_object_get(v, "anyOf") || json_is_array(json_object_get(v, "type"));
                json_array_append(stack, v);
            }
            if (json_is_object(json_object_get(n, "items")))
                json_array_append(stack, json_object_get(n, "items"));
            size_t j;
            json_array_foreach(json_object_get(n, "anyOf"), j, v) json_array_append(stack, v);
            json_decref(n);
        }
        json_decref(stack);
    }
    if (nstrict > 20 || optional > 24 || unions > 16)
        violation(c, "R41", "/tools", "strict budget: %d tools, %d optional, %d unions", nstrict, optional, unions);
}

static void check_history_names(ref_ctx *c, json_t *body)
{
    const char *pat = name_pattern(c);
    if (!pat)
        return;
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(body, "messages"), i, m) {
        size_t j;
        json_t *call;
        json_array_foreach(json_object_get(m, "tool_calls"), j, call) {
            const char *n = json_string_value(json_object_get(json_object_get(call, "function"), "name"));
            char ptr[96];
            snprintf(ptr, sizeof ptr, "/messages/%zu/tool_calls/%zu", i, j);
            if (n && !matches(pat, n))
                violation(c, "R12", ptr, "history name %s", n);
        }
    }
    json_t *tc = json_object_get(body, "tool_choice");
    if (json_is_object(tc) && !strcmp(c->dialect, "mistral")) {
        violation(c, "R46", "/tool_choice", "object form (Mistral takes auto | none | any)");
    } else if (json_is_object(tc)) {
        const char *n = json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
        bool declared = false;
        size_t j;
        json_t *t;
        json_array_foreach(json_object_get(body, "tools"), j, t)
            declared |= is(json_string_value(json_object_get(json_object_get(t, "function"), "name")), n);
        if (!declared)
            violation(c, "R15", "/tool_choice", "names an undeclared tool %s", n ? n : "?");
    } else if (tc && !strcmp(c->dialect, "mistral")) {
        /* rule 46: Mistral's own set; the object form is rewritten to "any" */
        if (!any_of(json_string_value(tc), (const char *const[]){"none", "auto", "any", "required", NULL}))
            violation(c, "R46", "/tool_choice", "not auto | none | any | required");
    } else if (tc && !any_of(json_string_value(tc), (const char *const[]){"none", "auto", "required", NULL})) {
        violation(c, "R15", "/tool_choice", "unknown form");
    }
}

int referee_check(const char *dialect, json_t *body, json_t *why)
{
    ref_ctx c = {.dialect = dialect, .why = why};
    json_t *tools = json_object_get(body, "tools");
    json_t *seen = json_object();
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) check_tool(&c, t, i, seen);
    json_decref(seen);
    c.tool = NULL;
    /* rule 61: no empty tools list, nor a choice with no tool to choose */
    if (tools && (!json_is_array(tools) || !json_array_size(tools)))
        violation(&c, "R61", "/tools", "empty or null tools");
    if (!json_array_size(tools) && !json_array_size(json_object_get(body, "functions")) &&
        (json_object_get(body, "tool_choice") || json_object_get(body, "parallel_tool_calls")))
        violation(&c, "R61", "/tool_choice", "tool_choice or parallel_tool_calls without tools");
    int mt = max_tools(&c);
    if (mt && json_array_size(tools) > (size_t)mt)
        violation(&c, "R13", "/tools", "%zu tools", json_array_size(tools));
    if (dialect_is(&c, "cerebras"))
        check_strict_uniform(&c, tools);
    if (dialect_is(&c, "anthropic"))
        check_anthropic_budget(&c, tools);
    check_history_names(&c, body);
    return c.violations;
}

/* ------------------------------------------------------------- validator */

static json_t *resolve(json_t *root, const char *ref)
{
    if (!ref || ref[0] != '#')
        return NULL;
    if (!ref[1])
        return root;
    json_t *cur = root;
    char *dup = strdup(ref + 2);
    for (char *save = NULL, *seg = strtok_r(dup, "/", &save); seg && cur; seg = strtok_r(NULL, "/", &save))
        cur = json_object_get(cur, seg);
    free(dup);
    return cur;
}

static bool valid_at(json_t *root, json_t *s, json_t *v, int depth);

static bool type_ok(const char *t, json_t *v)
{
    if (is(t, "string")) return json_is_string(v);
    if (is(t, "integer")) return json_is_integer(v) || (json_is_real(v) && json_real_value(v) == (double)(long long)json_real_value(v));
    if (is(t, "number")) return json_is_number(v);
    if (is(t, "boolean")) return json_is_boolean(v);
    if (is(t, "null")) return json_is_null(v);
    if (is(t, "array")) return json_is_array(v);
    if (is(t, "object")) return json_is_object(v);
    return true;
}

static bool valid_at(json_t *root, json_t *s, json_t *v, int depth)
{
    if (depth > 64)
        return true;
    if (json_is_false(s))
        return false;
    if (!json_is_object(s))
        return true;
    const char *ref = json_string_value(json_object_get(s, "$ref"));
    if (ref) {
        json_t *t = resolve(root, ref);
        if (t && !valid_at(root, t, v, depth + 1))
            return false;
    }
    if (json_is_null(v) && json_is_true(json_object_get(s, "nullable")))
        return true;
    json_t *ty = json_object_get(s, "type");
    if (json_is_string(ty) && !type_ok(json_string_value(ty), v))
        return false;
    if (json_is_array(ty)) {
        bool ok = false;
        size_t i;
        json_t *t;
        json_array_foreach(ty, i, t) ok |= type_ok(json_string_value(t), v);
        if (!ok)
            return false;
    }
    json_t *e = json_object_get(s, "enum");
    if (json_is_array(e) && json_array_size(e)) {
        bool ok = false;
        size_t i;
        json_t *x;
        json_array_foreach(e, i, x) ok |= json_equal(x, v);
        if (!ok)
            return false;
    }
    json_t *cst = json_object_get(s, "const");
    if (cst && !json_equal(cst, v))
        return false;
    const char *combos[] = {"anyOf", "oneOf"};
    for (int k = 0; k < 2; k++) {
        json_t *br = json_object_get(s, combos[k]);
        if (!json_is_array(br) || !json_array_size(br))
            continue;
        bool ok = false;
        size_t i;
        json_t *b;
        json_array_foreach(br, i, b) ok |= valid_at(root, b, v, depth + 1);
        if (!ok)
            return false;
    }
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(s, "allOf"), i, b) if (!valid_at(root, b, v, depth + 1)) return false;
    if (json_is_object(v)) {
        json_t *props = json_object_get(s, "properties");
        json_array_foreach(json_object_get(s, "required"), i, b) {
            if (json_is_string(b) && json_object_get(props, json_string_value(b)) &&
                !json_object_get(v, json_string_value(b)))
                return false;
        }
        json_t *ap = json_object_get(s, "additionalProperties");
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            json_t *ps = json_object_get(props, k);
            if (ps) {
                if (!valid_at(root, ps, x, depth + 1))
                    return false;
            } else if (json_is_false(ap) && json_is_object(props)) {
                return false;
            } else if (json_is_object(ap) && !valid_at(root, ap, x, depth + 1)) {
                return false;
            }
        }
    }
    /* tuples: prefixItems (2020-12; items then binds the rest, false
     * closes it) or the draft-04 items array */
    json_t *items = json_object_get(s, "items");
    json_t *pre = json_object_get(s, "prefixItems");
    size_t from = json_is_array(pre) ? json_array_size(pre) : 0;
    if (!json_is_array(pre))
        pre = json_is_array(items) ? items : NULL;
    if (json_is_array(v)) {
        json_array_foreach(v, i, b) {
            json_t *at = i < json_array_size(pre) ? json_array_get(pre, i) : i >= from ? items : NULL;
            if ((json_is_object(at) || json_is_false(at)) && !valid_at(root, at, b, depth + 1))
                return false;
        }
    }
    return true;
}

bool referee_valid(json_t *schema, json_t *inst)
{
    return valid_at(schema, schema, inst, 0);
}

/* ------------------------------------------------------------- generator */

static unsigned rnd(unsigned *seed, unsigned n)
{
    *seed = *seed * 1103515245u + 12345u;
    return n ? ((*seed >> 16) & 0x7fff) % n : 0;
}

static json_t *gen_at(json_t *root, json_t *s, unsigned *seed, int depth);

static json_t *gen_object(json_t *root, json_t *s, unsigned *seed, int depth)
{
    json_t *o = json_object();
    json_t *props = json_object_get(s, "properties");
    json_t *req = json_object_get(s, "required");
    const char *k;
    json_t *ps;
    json_object_foreach(props, k, ps) {
        bool r = false;
        size_t i;
        json_t *x;
        json_array_foreach(req, i, x) r |= is(json_string_value(x), k);
        if (!r && (depth > 4 || rnd(seed, 2)))
            continue;
        json_t *v = gen_at(root, ps, seed, depth + 1);
        if (!v) {
            if (r) {
                json_decref(o);
                return NULL;
            }
            continue;
        }
        json_object_set_new(o, k, v);
    }
    return o;
}

static json_t *gen_typed(json_t *root, json_t *s, const char *t, unsigned *seed, int depth)
{
    if (is(t, "string"))
        return json_sprintf("s%u", rnd(seed, 1000));
    if (is(t, "integer"))
        return json_integer(rnd(seed, 10));
    if (is(t, "number"))
        return json_real(rnd(seed, 100) / 4.0);
    if (is(t, "boolean"))
        return json_boolean(rnd(seed, 2));
    if (is(t, "null"))
        return json_null();
    if (is(t, "array")) {
        json_t *a = json_array();
        json_t *items = json_object_get(s, "items");
        json_t *pre = json_object_get(s, "prefixItems");
        if (!json_is_array(pre))
            pre = json_is_array(items) ? items : NULL;
        size_t at;
        json_t *p;
        json_array_foreach(pre, at, p) {  /* a tuple: every position, in order */
            json_t *v = gen_at(root, p, seed, depth + 1);
            if (!v) {
                json_decref(a);
                return NULL;
            }
            json_array_append_new(a, v);
        }
        if (pre)
            return a;
        unsigned n = depth > 4 ? 0 : rnd(seed, 3);
        for (unsigned i = 0; i < n; i++) {
            json_t *v = json_is_object(items) ? gen_at(root, items, seed, depth + 1) : json_string("x");
            if (v)
                json_array_append_new(a, v);
        }
        return a;
    }
    return gen_object(root, s, seed, depth);
}

static json_t *gen_at(json_t *root, json_t *s, unsigned *seed, int depth)
{
    if (depth > 12)
        return NULL;
    if (!json_is_object(s) || json_object_size(s) == 0)
        return json_sprintf("any%u", rnd(seed, 100));
    const char *ref = json_string_value(json_object_get(s, "$ref"));
    if (ref) {
        json_t *t = resolve(root, ref);
        return t ? gen_at(root, t, seed, depth + 1) : NULL;
    }
    json_t *cst = json_object_get(s, "const");
    if (cst)
        return json_deep_copy(cst);
    json_t *e = json_object_get(s, "enum");
    if (json_is_array(e) && json_array_size(e))
        return json_deep_copy(json_array_get(e, rnd(seed, (unsigned)json_array_size(e))));
    json_t *all = json_object_get(s, "allOf");
    if (json_is_array(all) && json_array_size(all)) {
        /* merge the branches' object parts; the validator has the last word */
        json_t *m = json_object();
        json_t *props = json_object();
        json_t *req = json_array();
        size_t i;
        json_t *b;
        json_array_foreach(all, i, b) {
            json_t *bb = json_is_string(json_object_get(b, "$ref")) ? resolve(root, json_string_value(json_object_get(b, "$ref"))) : b;
            json_object_update_missing(props, json_object_get(bb, "properties"));
            json_array_extend(req, json_object_get(bb, "required"));
        }
        json_object_update_missing(props, json_object_get(s, "properties"));
        json_object_set_new(m, "type", json_string("object"));
        json_object_set_new(m, "properties", props);
        json_object_set_new(m, "required", req);
        json_t *v = gen_object(root, m, seed, depth);
        json_decref(m);
        return v;
    }
    const char *combos[] = {"anyOf", "oneOf"};
    for (int k = 0; k < 2; k++) {
        json_t *br = json_object_get(s, combos[k]);
        if (json_is_array(br) && json_array_size(br))
            return gen_at(root, json_array_get(br, rnd(seed, (unsigned)json_array_size(br))), seed, depth + 1);
    }
    json_t *ty = json_object_get(s, "type");
    if (json_is_array(ty) && json_array_size(ty))
        return gen_typed(root, s, json_string_value(json_array_get(ty, rnd(seed, (unsigned)json_array_size(ty)))), seed, depth);
    if (json_is_string(ty))
        return gen_typed(root, s, json_string_value(ty), seed, depth);
    if (json_object_get(s, "properties"))
        return gen_object(root, s, seed, depth);
    if (json_object_get(s, "items"))
        return gen_typed(root, s, "array", seed, depth);
    return json_sprintf("any%u", rnd(seed, 100));
}

json_t *referee_instance(json_t *schema, unsigned *seed)
{
    return gen_at(schema, schema, seed, 0);
}

/* ----------------------------------------------------- random schemas */

static json_t *rand_node(unsigned *seed, int depth, int ndefs);

static json_t *rand_props(unsigned *seed, int depth, int ndefs, json_t **req)
{
    json_t *props = json_object();
    *req = json_array();
    unsigned n = rnd(seed, 5);
    for (unsigned i = 0; i < n; i++) {
        char k[32];
        snprintf(k, sizeof k, "%s%u", rnd(seed, 8) ? "p" : "properties", i);
        json_object_set_new(props, k, rand_node(seed, depth + 1, ndefs));
        if (rnd(seed, 2))
            json_array_append_new(*req, json_string(k));
    }
    if (rnd(seed, 6) == 0)
        json_array_append_new(*req, json_string("missing"));  /* broken: rule 5 */
    return props;
}

static json_t *rand_leaf(unsigned *seed)
{
    switch (rnd(seed, 14)) {
    case 0: return json_pack("{s:s,s:s}", "type", "string", "format", rnd(seed, 2) ? "uuid" : "uri");
    case 1: return json_pack("{s:s,s:i,s:i}", "type", "integer", "minimum", 1, "maximum", 9);
    case 2: return json_pack("{s:[ss]}", "type", "string", "null");
    case 3: return json_pack("{s:[sss]}", "type", "string", "number", "boolean");
    case 4: return json_pack("{s:[i,i,n]}", "enum", 1, 2);
    case 5: return json_pack("{s:s,s:[]}", "type", "string", "enum");  /* empty enum */
    case 6: return json_pack("{s:i}", "const", 3);
    case 7: return json_pack("{s:s}", "type", "array");  /* items missing */
    case 8: return json_pack("{s:s}", "description", "anything");
    case 9: return json_integer(5);  /* not a schema at all */
    case 10: return json_pack("{s:s,s:b}", "type", "number", "nullable", 1);
    case 11: return json_pack("{s:{s:s},s:{s:s}}", "a", "type", "string", "b", "type", "integer");  /* bare map */
    case 12: return json_pack("{s:s,s:{s:s}}", "type", "object", "additionalProperties", "type", "string");
    default: return json_pack("{s:s,s:s,s:[s]}", "type", "string", "pattern", "^a", "examples", "ab");
    }
}

static json_t *rand_node(unsigned *seed, int depth, int ndefs)
{
    if (depth > 7 || rnd(seed, 4) == 0)
        return rand_leaf(seed);
    json_t *n = json_object();
    json_t *req;
    switch (rnd(seed, 9)) {
    case 0:
    case 1:
        json_object_set_new(n, "type", json_string("object"));
        json_object_set_new(n, "properties", rand_props(seed, depth, ndefs, &req));
        json_object_set_new(n, "required", req);
        if (rnd(seed, 2))
            json_object_set_new(n, "additionalProperties", json_boolean(rnd(seed, 2)));
        break;
    case 2:
        json_object_set_new(n, "type", json_string("array"));
        json_object_set_new(n, "items", rand_node(seed, depth + 1, ndefs));
        break;
    case 3:
    case 4: {
        const char *k = (const char *[]){"anyOf", "oneOf", "allOf"}[rnd(seed, 3)];
        json_t *br = json_array();
        unsigned nb = 1 + rnd(seed, 3);
        for (unsigned i = 0; i < nb; i++)
            json_array_append_new(br, rand_node(seed, depth + 1, ndefs));
        if (rnd(seed, 3) == 0)
            json_array_append_new(br, json_pack("{s:s}", "type", "null"));
        json_object_set_new(n, k, br);
        if (rnd(seed, 3) == 0)
            json_object_set_new(n, "type", json_string("object"));
        break;
    }
    case 5:
    case 6:
        if (ndefs) {
            json_object_set_new(n, "$ref", json_sprintf("#/$defs/d%u", rnd(seed, (unsigned)ndefs)));
            break;
        }
        /* fall through */
    case 7:
        json_object_set_new(n, "$ref", json_string(rnd(seed, 2) ? "#" : "#/$defs/nowhere"));
        break;
    default:
        json_object_set_new(n, "type", json_pack("[ss]", "object", "null"));
        json_object_set_new(n, "properties", rand_props(seed, depth, ndefs, &req));
        json_object_set_new(n, "required", req);
        json_object_set_new(n, "not", json_pack("{s:s}", "type", "string"));
        break;
    }
    if (rnd(seed, 3) == 0)
        json_object_set_new(n, "description", json_string("random node"));
    return n;
}

json_t *referee_random_schema(unsigned *seed)
{
    int ndefs = (int)rnd(seed, 4);
    json_t *root;
    switch (rnd(seed, 6)) {
    case 0: root = rand_node(seed, 0, ndefs); break;  /* anything at the root */
    case 1: root = json_pack("{s:s}", "$schema", "http://json-schema.org/draft-07/schema#"); break;
    default: {
        json_t *req;
        root = json_object();
        json_object_set_new(root, "type", json_string("object"));
        json_object_set_new(root, "properties", rand_props(seed, 0, ndefs, &req));
        json_object_set_new(root, "required", req);
    }
    }
    if (!json_is_object(root)) {
        json_decref(root);
        root = json_object();
    }
    if (ndefs) {
        json_t *defs = json_object();
        for (int i = 0; i < ndefs; i++) {
            char k[32];
            snprintf(k, sizeof k, "d%d", i);
            json_object_set_new(defs, k, rand_node(seed, 2, ndefs));  /* may refer to each other: cycles */
        }
        json_object_set_new(root, "$defs", defs);
    }
    return root;
}
