/* schema.c -- the schema-dialect request stage (see schema.h).
 *
 * What lives here: the dialect presets (data: which TG_SR_* rules each
 * provider needs, docs/dialects.md sections 1, 3, 6, 7), the conf overrides, the
 * reversible tool renamer, the array-level pass (names, Anthropic's strict
 * budget), the cache in front of it, and the way-back lookups. The per-schema
 * walker is schema_walk.c, the inverse trees schema_inverse.c.
 *
 * Stateless across requests: the name map and inverses are derived from the
 * request's own tools each time (or found in the worker's cache under a hash
 * of exactly those tools and rules).
 */
#include "sanitize/schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/cache.h"
#include "core/ctx.h"
#include "core/jsonio.h"
#include "core/rules.h"
#include "sanitize/msg_rules.h"

/* Rule 70 is on wherever a tool without parameters would go without them:
 * Mistral, xAI and MiniMax (an `openai` route) refuse it, and the empty
 * object is what OpenAI reads its absence as. Gemini and Vertex leave an
 * empty root out instead (rule 30), so their base lacks it. */
#define BASE_SHAPE (TG_SR_ROOT_OBJECT | TG_SR_ITEMS | TG_SR_REQUIRED | TG_SR_EMPTY_TOOLS)
#define BASE (BASE_SHAPE | TG_SR_NEED_PARAMS)
#define GEMINI_RULES                                                                       \
    (BASE_SHAPE | TG_SR_NAMES | TG_SR_NAMES_GEMINI | TG_SR_INLINE_REFS | TG_SR_MERGE_ALLOF |     \
     TG_SR_ONEOF_ANYOF | TG_SR_TYPE_ARRAYS | TG_SR_CONST_ENUM | TG_SR_ENUM_STRINGS |       \
     TG_SR_OPENAPI_SUBSET | TG_SR_ADD_TYPE | TG_SR_EMPTY_ROOT_OMIT)

/* Rule 62 defaults: real schemas grow at most about 5 times when their
 * references are inlined (the corpus: 1.06 times in all); a request may
 * always grow to 1 MiB (schema_walk.c), and never past 16 MiB. */
#define SCHEMA_MAX_GROWTH 10
#define SCHEMA_MAX_BYTES (16 << 20)

/* Anthropic strict limits (rule 41). */
#define ANTH_STRICT_TOOLS 20
#define ANTH_STRICT_OPTIONAL 24
#define ANTH_STRICT_UNIONS 16

typedef struct preset {
    uint64_t flags;
    uint64_t strict_extra;  /* what `schema.strict = on` adds; 0 = strict unsupported */
    int name_max;
    int max_tools;
} preset;

/* The presets the rows of core/dialect.h name. */
#define SCHEMA_OPENAI {BASE | TG_SR_NAMES | TG_SR_STRICT_PER_TOOL, TG_SR_ALL_REQUIRED, 64, 128}
#define SCHEMA_OPENAI_STRICT                                                                \
    {BASE | TG_SR_NAMES | TG_SR_STRICT | TG_SR_ALL_REQUIRED | TG_SR_SERIAL_CALLS,          \
     TG_SR_ALL_REQUIRED, 64, 128}
#define SCHEMA_GEMINI {GEMINI_RULES, 0, 64, 128}
#define SCHEMA_VERTEX {GEMINI_RULES | TG_SR_ANYOF_ALONE, 0, 64, 128}
/* Rule 87: Anthropic refuses a property key outside ^[a-zA-Z0-9_.-]{1,64}$
 * (`uids[]`, `filter[id]`: claude-code#92648, appstore-connect-mcp#2). */
#define SCHEMA_ANTHROPIC                                                                    \
    {BASE | TG_SR_NAMES | TG_SR_KEY_NAMES | TG_SR_HISTORY_TOOLS,                           \
     TG_SR_NO_CONSTRAINTS | TG_SR_STRICT_BUDGET | TG_SR_ONEOF_ANYOF, 64, 0}
#define SCHEMA_MISTRAL                                                                      \
    {BASE | TG_SR_NAMES | TG_SR_MISTRAL_STRIP | TG_SR_CHOICE_ANY | TG_SR_NO_NULL_DESC, 0, 64, 0}
/* Rule 92: Groq's and Cerebras' structured outputs refuse size keywords in
 * a response_format schema ("minItems is not supported", beeai-framework#1215;
 * "Unsupported JSON schema fields: {'minItems', 'items'}",
 * claude-code-router#708), strict or not. */
#define SCHEMA_GROQ                                                                         \
    {BASE | TG_SR_NAMES | TG_SR_NO_NULL_DESC | TG_SR_TYPED_PROPS | TG_SR_RF_LIMITS, 0, 64, 128}
/* Fireworks refuses an untyped property as Groq does ("JSON Schema not
 * supported: could not understand the instance", docker/mcp-gateway#234). */
#define SCHEMA_FIREWORKS {BASE | TG_SR_NAMES | TG_SR_NO_NULL_DESC | TG_SR_TYPED_PROPS, 0, 64, 0}
/* Rule 50: Cerebras documents anyOf (not oneOf) and no size or pattern
 * keywords; a request with them is refused whole (eliza#11156, #17484). */
#define SCHEMA_CEREBRAS                                                                     \
    {BASE | TG_SR_NAMES | TG_SR_NO_NULL_DESC | TG_SR_ONEOF_ANYOF | TG_SR_NO_SIZE_LIMITS |   \
         TG_SR_CHOICE_REQUIRED | TG_SR_RF_LIMITS,                                           \
     TG_SR_ALL_REQUIRED | TG_SR_NULL_ANYOF | TG_SR_CONST_ENUM, 64, 0}
/* Rule 82: DeepSeek V4 refuses a branch without a type ("field `anyOf`:
 * missing field `type`", can1357/oh-my-pi#2270). */
#define SCHEMA_DEEPSEEK                                                                     \
    {BASE | TG_SR_NAMES | TG_SR_FLAT_UNIONS | TG_SR_PATTERN_NUL,                              \
     TG_SR_ALL_REQUIRED | TG_SR_NO_CONSTRAINTS | TG_SR_CONST_ENUM, 64, 128}
#define SCHEMA_XAI                                                                          \
    {BASE | TG_SR_NAMES | TG_SR_INLINE_REFS | TG_SR_MERGE_ALLOF | TG_SR_FREEFORM_STRING |   \
         TG_SR_XAI_PROPERTIES | TG_SR_ENUM_NO_NULL,                                         \
     0, 64, 0}
#define SCHEMA_TOGETHER {BASE | TG_SR_NAMES, 0, 64, 0}
/* Moonshot (Kimi): OpenAI's JSON Schema handling, names that start with a
 * letter (rule 76, TG_DF_NAME_LETTER), no strict mode; its "moonshot
 * flavored json schema" wants a type on every property as Groq does
 * ("At path 'properties.source': type is not defined", pi#4138, rule 72). */
#define SCHEMA_MOONSHOT {BASE | TG_SR_NAMES | TG_SR_TYPED_PROPS, 0, 64, 128}
#define SCHEMA_LOCAL {BASE, 0, 0, 0}
/* Rule 89: vLLM's structured-output backends (xgrammar, llguidance) refuse
 * propertyNames and patternProperties (club-3090#45). */
#define SCHEMA_VLLM {BASE | TG_SR_NO_KEY_SCHEMAS, 0, 0, 0}
#define SCHEMA_NONE {0, 0, 0, 0}

#define ROW(id, name, features, schema, msg, repair) [id] = schema,
static const preset presets[TG_D_COUNT] = {TG_DIALECTS(ROW)};
#undef ROW

/* `schema.<name> = on|off`; "strict" (bits 0 here) adds what the dialect's
 * strict mode needs, see tg_schema_rules_set. */
static const tg_rule_name rule_names[] = {
    {"root_object", TG_SR_ROOT_OBJECT},       {"items", TG_SR_ITEMS},
    {"required", TG_SR_REQUIRED},             {"names", TG_SR_NAMES},
    {"names_gemini", TG_SR_NAMES_GEMINI},     {"inline_refs", TG_SR_INLINE_REFS},
    {"merge_allof", TG_SR_MERGE_ALLOF},       {"oneof_anyof", TG_SR_ONEOF_ANYOF},
    {"type_arrays", TG_SR_TYPE_ARRAYS},       {"const_enum", TG_SR_CONST_ENUM},
    {"enum_strings", TG_SR_ENUM_STRINGS},     {"openapi_subset", TG_SR_OPENAPI_SUBSET},
    {"add_type", TG_SR_ADD_TYPE},             {"empty_root_omit", TG_SR_EMPTY_ROOT_OMIT},
    {"no_constraints", TG_SR_NO_CONSTRAINTS}, {"freeform_string", TG_SR_FREEFORM_STRING},
    {"xai_properties", TG_SR_XAI_PROPERTIES}, {"mistral_strip", TG_SR_MISTRAL_STRIP},
    {"choice_any", TG_SR_CHOICE_ANY},         {"no_null_desc", TG_SR_NO_NULL_DESC},
    {"serial_calls", TG_SR_SERIAL_CALLS},     {"empty_tools", TG_SR_EMPTY_TOOLS},
    {"anyof_alone", TG_SR_ANYOF_ALONE},       {"no_size_limits", TG_SR_NO_SIZE_LIMITS},
    {"need_parameters", TG_SR_NEED_PARAMS},   {"enum_no_null", TG_SR_ENUM_NO_NULL},
    {"typed_properties", TG_SR_TYPED_PROPS},  {"flat_unions", TG_SR_FLAT_UNIONS},
    {"pattern_nul", TG_SR_PATTERN_NUL},       {"no_key_schemas", TG_SR_NO_KEY_SCHEMAS},
    {"key_names", TG_SR_KEY_NAMES},           {"choice_required", TG_SR_CHOICE_REQUIRED},
    {"rf_size_limits", TG_SR_RF_LIMITS},      {"history_tools", TG_SR_HISTORY_TOOLS},
    {"strict", 0},
};
static const char *const limit_names[] = {"desc_max", "name_max", "max_tools", "max_growth",
                                          "max_bytes", NULL};
static const tg_rule_section section = {"schema", rule_names,
                                        sizeof rule_names / sizeof *rule_names, limit_names};

void tg_schema_rules_preset(tg_dialect d, tg_schema_rules *out)
{
    memset(out, 0, sizeof *out);
    out->dialect = d;
    if (d < 0 || d >= TG_D_COUNT)
        return;
    out->flags = presets[d].flags;
    out->name_max = presets[d].name_max;
    out->max_tools = presets[d].max_tools;
    out->max_growth = SCHEMA_MAX_GROWTH;
    out->max_bytes = SCHEMA_MAX_BYTES;
}

static int set_limit(int *dst, const char *key, const char *value, int hi, char *msg, size_t msglen)
{
    char *end;
    long n = strtol(value, &end, 10);
    if (!*value || *end || n < 0 || n > hi) {
        snprintf(msg, msglen, "schema.%s: expected 0..%d, got '%s'", key, hi, value);
        return -1;
    }
    *dst = (int)n;
    return 0;
}

int tg_schema_rules_set(tg_schema_rules *r, const char *key, const char *value,
                        char *msg, size_t msglen)
{
    if (!strcmp(key, "desc_max"))
        return set_limit(&r->desc_max, key, value, 1 << 20, msg, msglen);
    if (!strcmp(key, "name_max"))
        return set_limit(&r->name_max, key, value, 256, msg, msglen);
    if (!strcmp(key, "max_tools"))
        return set_limit(&r->max_tools, key, value, 100000, msg, msglen);
    if (!strcmp(key, "max_growth"))
        return set_limit(&r->max_growth, key, value, 100000, msg, msglen);
    if (!strcmp(key, "max_bytes"))
        return set_limit(&r->max_bytes, key, value, 1 << 30, msg, msglen);
    if (tg_rule_apply(&section, key, value, &r->flags, msg, msglen))
        return -1;
    if (strcmp(key, "strict"))
        return 0;
    int on = tg_switch_parse(value);
    uint64_t extra = (r->dialect >= 0 && r->dialect < TG_D_COUNT) ? presets[r->dialect].strict_extra : 0;
    if (on && !extra) {
        snprintf(msg, msglen, "schema.strict: dialect %s has no strict mode ('%s')",
                 tg_dialect_name(r->dialect), value);
        return -1;
    }
    if (on)
        r->flags |= TG_SR_STRICT | extra;
    else
        r->flags &= ~(TG_SR_STRICT | extra);
    return 0;
}

/* ---------------------------------------------------------------- names */

static bool name_char_ok(const tg_schema_rules *r, unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
        c == '-')
        return true;
    return c == '.' && (r->flags & TG_SR_NAMES_GEMINI);
}

void tg_schema_clean_name(const tg_schema_rules *r, const char *name, char *out, size_t outlen)
{
    size_t max = outlen - 1;
    if (r->name_max > 0 && (size_t)r->name_max < max)
        max = (size_t)r->name_max;
    if (!(r->flags & TG_SR_NAMES)) {
        snprintf(out, max + 1, "%s", *name ? name : "tool");
        return;
    }
    size_t n = 0;
    bool letter = (name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z');
    size_t cap = strlen(name) + 4;
    char *tmp = tg_malloc(cap);
    if ((r->flags & TG_SR_NAMES_GEMINI) && !letter && name[0] != '_')
        tmp[n++] = '_';
    /* rule 76: Moonshot takes only a letter first and at least 3
     * characters; "fn_" keeps the rest readable and the reverse map gives
     * the agent its own name back */
    if ((!letter || strlen(name) < 3) && *name && tg_dialect_has(r->dialect, TG_DF_NAME_LETTER)) {
        memcpy(tmp + n, "fn_", 3);
        n += 3;
    }
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        if (name_char_ok(r, *p)) {
            tmp[n++] = (char)*p;
        } else if ((*p & 0xC0) != 0x80) {  /* one '_' per UTF-8 character */
            tmp[n++] = '_';
        }
    }
    tmp[n] = '\0';
    if (n == 0 || (n == 1 && tmp[0] == '_' && !*name)) {
        snprintf(out, outlen, "tool");
    } else if (n <= max) {
        memcpy(out, tmp, n + 1);
    } else {
        /* too long: keep a prefix and a hash of the whole, so two long names
         * sharing a prefix stay apart */
        uint64_t h = tg_hash64(name, strlen(name), 0);
        size_t keep = max > 9 ? max - 9 : 0;
        snprintf(out, outlen, "%.*s_%08x", (int)keep, tmp, (unsigned)(h & 0xffffffffu));
        out[max] = '\0';
    }
    free(tmp);
}

/* A unique upstream name: the cleaned name, or with a suffix derived from the
 * agent's name (stable whatever the tool order), then a counter. */
static void unique_name(const tg_schema_rules *r, const char *agent, json_t *used, char *out,
                        size_t outlen)
{
    char base[300];
    tg_schema_clean_name(r, agent, base, sizeof base);
    if (!json_object_get(used, base)) {
        snprintf(out, outlen, "%s", base);
        return;
    }
    size_t max = r->name_max > 0 ? (size_t)r->name_max : 64;
    unsigned h = (unsigned)(tg_hash64(agent, strlen(agent), 7) & 0xffff);
    for (unsigned k = 0; k < 100000; k++) {
        char suffix[24];
        if (k == 0)
            snprintf(suffix, sizeof suffix, "_%04x", h);
        else
            snprintf(suffix, sizeof suffix, "_%04x%u", h, k);
        size_t keep = strlen(base);
        if (keep + strlen(suffix) > max)
            keep = max > strlen(suffix) ? max - strlen(suffix) : 0;
        snprintf(out, outlen, "%.*s%s", (int)keep, base, suffix);
        if (!json_object_get(used, out))
            return;
    }
}

/* ------------------------------------------------ Anthropic strict budget */

static void count_strict_load(json_t *node, int depth, int *optional, int *unions)
{
    if (!json_is_object(node) || depth > 64)
        return;
    json_t *props = tg_json_get(node, "properties");
    json_t *req = tg_json_get(node, "required");
    const char *k;
    json_t *v;
    json_object_foreach(props, k, v) {
        bool r = false;
        size_t i;
        json_t *s;
        json_array_foreach(req, i, s) r |= json_is_string(s) && !strcmp(json_string_value(s), k);
        if (!r)
            (*optional)++;
        if (tg_json_get(v, "anyOf") || tg_json_is(tg_json_get(v, "type"), JSON_ARRAY))
            (*unions)++;
        count_strict_load(v, depth + 1, optional, unions);
    }
    count_strict_load(tg_json_get(node, "items"), depth + 1, optional, unions);
    size_t i;
    json_t *b;
    json_array_foreach(tg_json_get(node, "anyOf"), i, b) count_strict_load(b, depth + 1, optional, unions);
}

/* Rule 41: strict:true only while the request stays inside the budget;
 * the tools past it are still sent, with the same (strict-subset) schema. */
static void apply_strict_budget(json_t *tools, json_t *explain)
{
    int ntools = 0, opt = 0, uni = 0;
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *fn = tg_json_get(t, "function");
        if (!tg_json_is(tg_json_get(fn, "strict"), JSON_TRUE))
            continue;
        int o = 0, u = 0;
        count_strict_load(tg_json_get(fn, "parameters"), 0, &o, &u);
        if (ntools + 1 <= ANTH_STRICT_TOOLS && opt + o <= ANTH_STRICT_OPTIONAL &&
            uni + u <= ANTH_STRICT_UNIONS) {
            ntools++;
            opt += o;
            uni += u;
        } else {
            json_object_del(fn, "strict");
            tg_explain_add(explain, "schema", json_string_value(tg_json_get(fn, "name")),
                           "/function/strict", "strict-budget", json_true(), NULL);
        }
    }
}

/* --------------------------------------------------------- array rewrite */

/* What one pass over the tools makes (rewrite_pass). */
typedef struct pass_out {
    json_t *out, *names, *upstream, *inverse, *over;
    size_t changes;   /* without explain: renamed, dropped or lossy tools */
    size_t standins;  /* degraded: refs stood in for */
    int min_depth;    /* degraded: the shallowest ref depth a tool needed */
    unsigned degraded_tools;
} pass_out;

/* Rule 62, degraded: the ref depths a tool is tried at, whole first, each
 * attempt bounded by the tool's share of the request's budget. */
static const int degraded_depths[] = {-1, 4, 2, 1, 0};
#define NDEPTHS (sizeof degraded_depths / sizeof *degraded_depths)

/* Tool i rewritten within its share of b (its part of the tools' bytes):
 * the deepest inlining that fits, or NULL with tb->over set. */
static json_t *rewrite_degraded(const tg_schema_rules *r, json_t *tool, const char *name,
                                json_t *explain, json_t **inv, const tg_schema_budget *b,
                                size_t in_bytes, tg_schema_budget *tb)
{
    size_t own = tg_schema_json_bytes(tool);
    double part = in_bytes ? (double)own / (double)in_bytes : 1.0;
    size_t mark = explain ? json_array_size(explain) : 0;
    for (size_t d = 0; d < NDEPTHS; d++) {
        memset(tb, 0, sizeof *tb);
        tb->max_bytes = (size_t)((double)b->max_bytes * part);
        tb->max_nodes = (size_t)((double)b->max_nodes * part);
        tb->ref_depth = degraded_depths[d];
        bool strict = false;
        *inv = NULL;
        json_t *nt = tg_schema_rewrite_tool_budget(r, tool, name, explain, inv, &strict, tb);
        if (!tb->over)
            return nt;
        json_decref(nt);
        json_decref(*inv);
        *inv = NULL;
        while (explain && json_array_size(explain) > mark)  /* the attempt that did not fit */
            json_array_remove(explain, json_array_size(explain) - 1);
    }
    return NULL;
}

/* One rewrite of every tool under budget b: the tools into out, the names
 * and inverse trees into their maps. false when the budget ran out (the
 * maps then hold a part of the tools, and *over says where). */
static bool rewrite_pass(const tg_schema_rules *r, json_t *tools, char **assigned, json_t *explain,
                         tg_schema_budget *budget, bool degrade, size_t in_bytes, pass_out *po)
{
    size_t n = json_array_size(tools);
    memset(po, 0, sizeof *po);
    po->out = json_array();
    po->names = json_object();     /* upstream -> agent, renamed only */
    po->upstream = json_object();  /* agent -> upstream */
    po->inverse = json_object();   /* agent -> tree */
    po->min_depth = -1;
    for (size_t i = 0; i < n; i++) {
        json_t *tool = json_array_get(tools, i);
        json_t *inv = NULL;
        bool strict = false;
        tg_schema_budget tb = {0};
        json_t *nt = NULL;
        if (assigned[i] && degrade) {
            nt = rewrite_degraded(r, tool, assigned[i], explain, &inv, budget, in_bytes, &tb);
            budget->over = tb.over;
            budget->bytes += tb.bytes;
            budget->nodes += tb.nodes;
            if (!tb.over && tb.ref_depth >= 0) {
                po->degraded_tools++;
                po->standins += tb.standins;
                if (po->min_depth < 0 || tb.ref_depth < po->min_depth)
                    po->min_depth = tb.ref_depth;
            }
        } else if (assigned[i]) {
            nt = tg_schema_rewrite_tool_budget(r, tool, assigned[i], explain, &inv, &strict, budget);
        }
        if (budget->over) {  /* rule 62: this tool spent what was left */
            po->over = json_pack("{s:s,s:I,s:I,s:I,s:I}", "tool", assigned[i], "index", (json_int_t)i,
                                 "bytes", (json_int_t)budget->bytes, "limit",
                                 (json_int_t)budget->max_bytes, "nodes", (json_int_t)budget->nodes);
            json_decref(nt);
            json_decref(inv);
            return false;
        }
        if (!nt) {
            if (!tg_dialect_has(r->dialect, TG_DF_REWRITE)) {
                json_array_append(po->out, tool);
            } else {
                tg_explain_add(explain, "schema", NULL, "/tools", "drop-unusable-tool", tool, NULL);
                po->changes++;
            }
            continue;
        }
        const char *agent = json_string_value(tg_json_get(tg_json_get(tool, "function"), "name"));
        if (strcmp(agent, assigned[i])) {
            json_object_set_new(po->names, assigned[i], json_string(agent));
            tg_explain_add(explain, "schema", agent, "/function/name", "rename-tool",
                           tg_json_get(tg_json_get(tool, "function"), "name"),
                           tg_json_get(tg_json_get(nt, "function"), "name"));
            po->changes++;
        }
        if (!json_object_get(po->upstream, agent))
            json_object_set_new(po->upstream, agent, json_string(assigned[i]));
        if (inv)
            po->changes++;
        if (inv && !json_object_get(po->inverse, agent))
            json_object_set(po->inverse, agent, inv);
        json_decref(inv);
        json_array_append_new(po->out, nt);
    }
    return true;
}

static void pass_clear(pass_out *po)
{
    json_decref(po->out);
    json_decref(po->names);
    json_decref(po->upstream);
    json_decref(po->inverse);
    json_decref(po->over);
    memset(po, 0, sizeof *po);
}

json_t *tg_schema_rewrite_tools(const tg_schema_rules *r, json_t *tools, json_t *explain)
{
    size_t n = json_array_size(tools);
    json_t *used = json_object();
    char **assigned = tg_calloc(n ? n : 1, sizeof *assigned);
    size_t first = explain ? json_array_size(explain) : 0;
    tg_schema_budget budget;
    size_t in_bytes = tg_schema_json_bytes(tools);
    tg_schema_budget_init(&budget, r, in_bytes);

    /* Names already valid keep their name first, so renaming one tool never
     * renames another that was fine. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            const char *agent =
                json_string_value(tg_json_get(tg_json_get(json_array_get(tools, i), "function"), "name"));
            if (!agent || !*agent || assigned[i])
                continue;
            char clean[300];
            tg_schema_clean_name(r, agent, clean, sizeof clean);
            bool valid = !strcmp(clean, agent) && !json_object_get(used, agent);
            if (pass == 0 && !valid)
                continue;
            if (pass == 1)
                unique_name(r, agent, used, clean, sizeof clean);
            assigned[i] = tg_strdup(clean);
            json_object_set_new(used, clean, json_true());
        }
    }
    /* Rule 62: when inlining every $ref passes the budget, the request is
     * rewritten again tool by tool, each within its share of the budget
     * (its part of the tools' bytes), at the deepest inlining that fits:
     * whole, or refs inlined only so many deep on a path, the deeper ones
     * standing in as described JSON strings (schema_walk.c's
     * budget_standin). Each attempt is bounded by the tool's share, so the
     * whole stays within a few times one pass; only when a tool does not
     * fit its share even without inlining (its own shape passes the
     * budget) is the request refused. */
    pass_out po;
    bool fits = rewrite_pass(r, tools, assigned, explain, &budget, false, in_bytes, &po);
    json_t *degraded = NULL;
    if (!fits) {
        json_t *over = json_incref(po.over);
        pass_clear(&po);
        while (explain && json_array_size(explain) > first)  /* the pass that did not fit */
            json_array_remove(explain, json_array_size(explain) - 1);
        tg_schema_budget_init(&budget, r, in_bytes);
        fits = rewrite_pass(r, tools, assigned, explain, &budget, true, in_bytes, &po);
        if (fits) {
            degraded = json_pack("{s:i,s:I,s:I,s:O}", "ref_depth", po.min_depth, "tools",
                                 (json_int_t)po.degraded_tools, "standins",
                                 (json_int_t)po.standins, "over", over);
            tg_explain_add(explain, "schema", json_string_value(tg_json_get(over, "tool")),
                           "/function/parameters", "schema-budget-degraded (rule 62)", over,
                           degraded);
        }
        json_decref(over);
    }
    json_t *out = po.out;
    if ((r->flags & TG_SR_STRICT) && (r->flags & TG_SR_STRICT_BUDGET))
        apply_strict_budget(out, explain);

    for (size_t i = 0; i < n; i++)
        free(assigned[i]);
    free(assigned);
    json_decref(used);
    size_t changes = explain ? json_array_size(explain) - first : po.changes;
    json_t *res = json_pack("{s:o,s:o,s:o,s:o,s:I}", "tools", out, "names", po.names, "upstream",
                            po.upstream, "inverse", po.inverse, "changes", (json_int_t)changes);
    if (po.over)
        json_object_set_new(res, "over", po.over);
    if (degraded)
        json_object_set_new(res, "degraded", degraded);
    return res;
}

/* ---------------------------------------------------------------- stage */

static uint64_t rules_hash(const tg_schema_rules *r, uint64_t seed)
{
    int32_t v[8] = {(int32_t)r->dialect, (int32_t)(uint32_t)r->flags, (int32_t)(uint32_t)(r->flags >> 32),
                    r->name_max, r->desc_max, r->max_tools, r->max_growth, r->max_bytes};
    return tg_hash64(v, sizeof v, seed);
}

/* A hash of a JSON value's content, walked in place: serializing 200 KB of
 * tools just to hash them would cost more than the cache saves. Objects keep
 * insertion order in jansson, so equal requests hash equally. *bytes gets
 * roughly the compact size (for the cache's byte budget). */
static uint64_t hash_json(json_t *v, uint64_t h, int depth, size_t *bytes)
{
    unsigned char tag = (unsigned char)json_typeof(v);
    h = tg_hash64(&tag, 1, h);
    if (depth > 64) {  /* absurdly deep: hash its text, still exact */
        char *s = tg_json_dumps(v);
        size_t n = s ? strlen(s) : 0;
        *bytes += n;
        h = tg_hash64(s ? s : "", n, h);
        free(s);
        return h;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            size_t n = strlen(k);
            *bytes += n + 4;
            h = tg_hash64(k, n + 1, h);
            h = hash_json(x, h, depth + 1, bytes);
        }
        return tg_hash64("}", 1, h);
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) h = hash_json(x, h, depth + 1, bytes);
        *bytes += 2;
        return tg_hash64("]", 1, h);
    }
    case JSON_STRING:
        *bytes += json_string_length(v) + 2;
        return tg_hash64(json_string_value(v), json_string_length(v), h);
    case JSON_INTEGER: {
        json_int_t i = json_integer_value(v);
        *bytes += 8;
        return tg_hash64(&i, sizeof i, h);
    }
    case JSON_REAL: {
        double d = json_real_value(v);
        *bytes += 8;
        return tg_hash64(&d, sizeof d, h);
    }
    default:
        *bytes += 4;
        return h;
    }
}

/* The rewrite of these tools under these rules: from the worker's cache or
 * computed (and cached). NULL on allocation failure. */
static json_t *rewrite_cached(const tg_schema_rules *r, json_t *tools, tg_ctx *ctx)
{
    if (ctx->explain || !ctx->cache)
        return tg_schema_rewrite_tools(r, tools, ctx->explain);
    size_t len = ctx->stats.tools_bytes_in;
    /* The proxy already hashed the tools' raw bytes: no walk needed. */
    uint64_t key = ctx->tools_hash ? rules_hash(r, ctx->tools_hash ^ 0x5c4e3a)
                                   : rules_hash(r, hash_json(tools, 0x5c4e3a, 0, &len));
    ctx->stats.tools_bytes_in = len;
    json_t *res = tg_cache_get(ctx->cache, "schema", key);
    if (res)
        return res;
    res = tg_schema_rewrite_tools(r, tools, NULL);
    tg_cache_put(ctx->cache, "schema", key, res, len * 3);
    return res;
}

/* The upstream name for a name the agent used: its declared tool's, or, for
 * a name no tool declares (history of an earlier tool list), the same
 * deterministic cleaning, remembered in ctx->name_map for the way back. */
static const char *upstream_for(tg_ctx *ctx, json_t *upstream, const char *agent, char *buf,
                                size_t buflen)
{
    const char *u = json_string_value(json_object_get(upstream, agent));
    if (u)
        return u;
    tg_schema_clean_name(ctx->schema, agent, buf, buflen);
    if (strcmp(buf, agent)) {
        /* name_map may be shared with the cache: copy before adding */
        json_t *m = ctx->name_map ? json_copy(ctx->name_map) : json_object();
        if (!json_object_get(m, buf))
            json_object_set_new(m, buf, json_string(agent));
        json_decref(ctx->name_map);
        ctx->name_map = m;
    }
    return buf;
}

static void rename_at(tg_ctx *ctx, json_t *upstream, json_t *holder, const char *key, const char *where,
                      const char *ptr)
{
    const char *agent = json_string_value(json_object_get(holder, key));
    if (!agent || !*agent)
        return;
    char buf[300];
    const char *u = upstream_for(ctx, upstream, agent, buf, sizeof buf);
    if (!strcmp(u, agent))
        return;
    json_t *nu = json_string(u);
    tg_explain_add(ctx->explain, "schema", where, ptr, "rename-tool", json_object_get(holder, key), nu);
    json_object_set_new(holder, key, nu);
}

/* tool_choice and the history name tools; the target validates those names
 * too (OpenAI checks messages[i].tool_calls[j].function.name, section 6). */
static void rename_references(json_t *tc, json_t *msgs, tg_ctx *ctx, json_t *upstream)
{
    if (!(ctx->schema->flags & TG_SR_NAMES) && !json_object_size(upstream))
        return;
    if (json_is_object(tc)) {
        rename_at(ctx, upstream, tg_json_get(tc, "function"), "name", "tool_choice",
                  "/tool_choice/function/name");
        rename_at(ctx, upstream, tc, "name", "tool_choice", "/tool_choice/name");
    }
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        char ptr[96];
        size_t j;
        json_t *call, *calls = tg_json_get(m, "tool_calls");
        json_array_foreach(calls, j, call) {
            snprintf(ptr, sizeof ptr, "/messages/%zu/tool_calls/%zu/function/name", i, j);
            rename_at(ctx, upstream, tg_json_get(call, "function"), "name", "messages", ptr);
        }
        const char *role = json_string_value(tg_json_get(m, "role"));
        if (role && !strcmp(role, "tool")) {
            snprintf(ptr, sizeof ptr, "/messages/%zu/name", i);
            rename_at(ctx, upstream, m, "name", "messages", ptr);
        }
    }
}

/* Rule 48: a tool whose description is null (or not a string) loses the
 * key where the target says so (nulls); rule 94: an empty description
 * goes on every rewriting dialect, as it says nothing and Bedrock's
 * Converse refuses it ("Member must have length greater than or equal to
 * 1", pydantic-ai#1071). The tools array is shared with the cache, so edit
 * copies. */
static void drop_void_descriptions(json_t *body, tg_ctx *ctx, bool nulls)
{
    json_t *tools = tg_json_get(body, "tools");
    json_t *copy = NULL;
    for (size_t i = 0; i < json_array_size(tools); i++) {
        json_t *fn = tg_json_get(json_array_get(tools, i), "function");
        json_t *d = tg_json_get(fn, "description");
        bool empty = json_is_string(d) && !json_string_length(d);
        if (!d || (json_is_string(d) && !empty) || (!empty && !nulls))
            continue;
        if (!copy)
            copy = json_copy(tools);
        json_t *tool = json_copy(json_array_get(copy, i));
        json_t *f2 = json_copy(fn);
        json_object_del(f2, "description");
        json_object_set_new(tool, "function", f2);
        json_array_set_new(copy, i, tool);
        tg_explain_add(ctx->explain, "schema", json_string_value(tg_json_get(fn, "name")),
                       "/function/description",
                       empty ? "empty_desc (rule 94)" : "no_null_desc (rule 48)", d, NULL);
    }
    if (copy)
        json_object_set_new(body, "tools", copy);
}

/* Rule 46: Mistral takes tool_choice "auto" | "none" | "any"; naming one
 * tool becomes "any" over a tools list holding only that tool, and
 * "required" is spelled "any". Rule 69: Cerebras' gpt-oss refuses the
 * named form ("Unsupported tool_choice: type='function' ... Expected 'auto'
 * or 'none'", instructor#1766); the same narrowing under "required" keeps
 * its meaning, said in X-Toolgate-Translated (`word` is the mode sent). */
static void tool_choice_narrow(json_t *body, tg_ctx *ctx, const char *word)
{
    bool any = !strcmp(word, "any");
    const char *rule = any ? "choice_any (rule 46)" : "choice_required (rule 69)";
    json_t *tc = tg_json_get(body, "tool_choice");
    if (any && json_is_string(tc) && !strcmp(json_string_value(tc), "required")) {
        tg_explain_add(ctx->explain, "schema", NULL, "/tool_choice", "choice_any (rule 46)", tc,
                       NULL);
        json_object_set_new(body, "tool_choice", json_string("any"));
        return;
    }
    const char *name = json_string_value(tg_json_get(tg_json_get(tc, "function"), "name"));
    if (!json_is_object(tc) || !name)
        return;
    const json_t *one = tg_tool_peek(tg_json_get(body, "tools"), name);
    if (!one)  /* names no tool: leave it to the provider to say so */
        return;
    json_t *only = json_pack("[O]", one);
    tg_explain_add(ctx->explain, "schema", name, "/tool_choice", rule, tc, NULL);
    if (!any) {
        tg_ctx_translated(ctx, "tool_choice", name);
    }
    json_object_set_new(body, "tools", only);  /* `name` lives in tc: set tool_choice last */
    json_object_set_new(body, "tool_choice", json_string(word));
}

/* Rule 15: a named tool_choice in the Responses API's shape
 * {"type":"function","name":X} (sent by clients that speak both APIs) is
 * written in the chat-completions shape every target parses,
 * {"type":"function","function":{"name":X}}; Mistral's rule 46 then
 * applies to it like to any other. */
static void tool_choice_chat_shape(json_t *body, tg_ctx *ctx)
{
    json_t *tc = tg_json_get(body, "tool_choice");
    if (json_is_string(tc) && !strcmp(json_string_value(tc), "any") &&
        !(ctx->schema->flags & TG_SR_CHOICE_ANY)) {
        /* Mistral's spelling of "required", which agents written for
         * Mistral (or Anthropic's native API) send; rule 15's targets take
         * only "required" */
        tg_explain_add(ctx->explain, "schema", NULL, "/tool_choice", "tool_choice any (rule 15)",
                       tc, NULL);
        json_object_set_new(body, "tool_choice", json_string("required"));
        return;
    }
    json_t *name = tg_json_get(tc, "name");
    if (!json_is_object(tc) || !json_is_string(name) || tg_json_get(tc, "function"))
        return;
    json_t *nu = json_pack("{s:s, s:{s:O}}", "type", "function", "function", "name", name);
    tg_explain_add(ctx->explain, "schema", json_string_value(name), "/tool_choice",
                   "tool_choice chat shape (rule 15)", tc, nu);
    json_object_set_new(body, "tool_choice", nu);
}

/* Rule 61: an empty tools list, and a tool_choice or parallel_tool_calls
 * with no tool to apply to, mean nothing; Mistral refuses the list (422
 * extra_forbidden at body.tools) and OpenAI-style validators refuse the
 * other two without tools. They go, said in --explain and the count. A
 * legacy functions list still gives tool_choice something to choose. */
static void drop_empty_tools(json_t *body, tg_ctx *ctx)
{
    json_t *tools = tg_json_get(body, "tools");
    if (tools && (json_is_null(tools) || (json_is_array(tools) && !json_array_size(tools)))) {
        tg_explain_add(ctx->explain, "schema", NULL, "/tools", "empty_tools (rule 61)", tools, NULL);
        json_object_del(body, "tools");
        ctx->stats.schema_rewrites++;
    }
    if (tg_json_get(body, "tools") || json_array_size(tg_json_get(body, "functions")))
        return;
    static const char *const orphans[] = {"tool_choice", "parallel_tool_calls"};
    for (size_t i = 0; i < sizeof orphans / sizeof orphans[0]; i++) {
        json_t *v = json_object_get(body, orphans[i]);
        if (!v)
            continue;
        char ptr[32];
        snprintf(ptr, sizeof ptr, "/%s", orphans[i]);
        tg_explain_add(ctx->explain, "schema", NULL, ptr, "empty_tools (rule 61)", v, NULL);
        json_object_del(body, orphans[i]);
        ctx->stats.schema_rewrites++;
    }
}

/* Request-level rules that ride on the tools: each one a preset bit. */
static void apply_request_rules(json_t *body, tg_ctx *ctx)
{
    uint64_t f = ctx->schema->flags;
    if (f)
        tool_choice_chat_shape(body, ctx);
    if (f && tg_json_is(tg_json_get(body, "tools"), JSON_ARRAY))
        drop_void_descriptions(body, ctx, f & TG_SR_NO_NULL_DESC);
    if (f & TG_SR_CHOICE_ANY)
        tool_choice_narrow(body, ctx, "any");
    else if (f & TG_SR_CHOICE_REQUIRED)
        tool_choice_narrow(body, ctx, "required");
    /* Rule 23: strict decoding and parallel calls do not mix; the agent's
     * own choice, when it made one, stands. */
    if ((f & TG_SR_SERIAL_CALLS) && json_array_size(tg_json_get(body, "tools")) &&
        !tg_json_get(body, "parallel_tool_calls")) {
        json_object_set_new(body, "parallel_tool_calls", json_false());
        tg_explain_add(ctx->explain, "schema", NULL, "/parallel_tool_calls",
                       "serial_calls (rule 23)", NULL, json_false());
    }
    if (f & TG_SR_EMPTY_TOOLS)
        drop_empty_tools(body, ctx);
}

/* A tool survives a strict rewrite that narrows what it can receive; an
 * answer does not: a root that is not an object, or a map (an object of
 * any keys), would come back as an object the agent did not ask for, or an
 * empty one. Such a schema goes as it came, and the provider says why. */
static bool answer_shape_lost(const json_t *changes)
{
    static const char *const lossy[] = {"root-type-object", "repair-bare-map"};
    size_t i;
    json_t *c;
    json_array_foreach(changes, i, c) {
        const char *rule = json_string_value(tg_json_get(c, "rule"));
        for (size_t k = 0; rule && k < sizeof lossy / sizeof lossy[0]; k++)
            if (!strncmp(rule, lossy[k], strlen(lossy[k])))
                return true;
        /* additionalProperties was a schema (or true): a map, now closed */
        static const char closed[] = "strict-additionalProperties";
        json_t *before = tg_json_get(c, "before");
        if (rule && !strncmp(rule, closed, sizeof closed - 1) &&
            (json_is_object(before) || json_is_true(before)))
            return true;
    }
    return false;
}

/* A response_format schema's rewrite, as its callers answer it: [the
 * rewritten parameters, their inverse or null] when keep (the changes then
 * go to explain), else [null, null]. Takes inv. */
static json_t *rewritten_pair(bool keep, json_t *params, json_t *inv, json_t *changes,
                              json_t *explain)
{
    if (!keep) {
        json_decref(inv);
        return json_pack("[n,n]");
    }
    if (explain)
        json_array_extend(explain, changes);
    return json_pack("[O,o]", params, inv ? inv : json_null());
}

/* [the strict form of schema, its inverse or null], or [null, null] when
 * it stays as it came (new reference). explain (may be NULL) gets the
 * changes when the form is used. */
static json_t *strict_response_schema(const tg_schema_rules *r, json_t *schema, bool asked,
                                      json_t *explain)
{
    json_t *tool = json_pack("{s:s, s:{s:s, s:O, s:b}}", "type", "function", "function", "name",
                             "response_format", "parameters", schema, "strict", 1);
    json_t *inv = NULL, *changes = json_array();
    bool strict = false;
    json_t *out = tool ? tg_schema_rewrite_tool(r, tool, NULL, changes, &inv, &strict) : NULL;
    json_decref(tool);
    json_t *params = tg_json_get(tg_json_get(out, "function"), "parameters");
    json_t *res = rewritten_pair(strict && json_is_object(params) &&
                                     (!asked || !json_equal(params, schema)) &&
                                     !answer_shape_lost(changes),
                                 params, inv, changes, explain);
    json_decref(out);
    json_decref(changes);
    return res;
}

/* Rule 92: [the schema with the dialect's tool rules and its size keywords,
 * pattern and format moved into hints, its inverse or null], or [null,
 * null] when nothing changes. Not strict: the agent's strict stays as sent. */
static json_t *limited_response_schema(const tg_schema_rules *r, json_t *schema, json_t *explain)
{
    tg_schema_rules lr = *r;
    lr.flags = (lr.flags | TG_SR_NO_SIZE_LIMITS) & ~(TG_SR_STRICT | TG_SR_STRICT_PER_TOOL);
    json_t *tool = json_pack("{s:s, s:{s:s, s:O}}", "type", "function", "function", "name",
                             "response_format", "parameters", schema);
    json_t *inv = NULL, *changes = json_array();
    json_t *out = tool ? tg_schema_rewrite_tool(&lr, tool, NULL, changes, &inv, NULL) : NULL;
    json_decref(tool);
    json_t *params = tg_json_get(tg_json_get(out, "function"), "parameters");
    json_t *res = rewritten_pair(json_is_object(params) && !json_equal(params, schema), params,
                                 inv, changes, explain);
    json_decref(out);
    json_decref(changes);
    return res;
}

/* response_format {type: json_schema, json_schema: {name, schema, strict}}
 * is held to the rules of a strict tool's parameters (docs/dialects.md section
 * 0: openai-strict covers response_format.json_schema.strict), and schemas
 * written for other models break them: optional properties, no
 * additionalProperties:false (section 2's errors quote "Invalid schema for
 * response_format"). On a strict route, or on openai when the agent asked
 * for strict, it is rewritten as a tool's parameters are; a lossy rewrite
 * leaves its inverse in ctx->rf_inverse, and the repair stage applies it
 * to the JSON the model writes in content, so the agent gets what its own
 * schema says (no null for a property it made optional). On Groq and
 * Cerebras (rule 92) it is rewritten, strict or not, as a tool's
 * parameters with the size keywords as hints. Other targets
 * take JSON Schema there (Gemini since 2025-11) or ignore it (Anthropic). */
static void rewrite_response_format(json_t *body, tg_ctx *ctx)
{
    const tg_schema_rules *r = ctx->schema;
    json_t *rf = tg_json_get(body, "response_format");
    json_t *js = tg_json_get(rf, "json_schema");
    json_t *schema = tg_json_get(js, "schema");
    const char *type = json_string_value(tg_json_get(rf, "type"));
    if (!type || strcmp(type, "json_schema") || !json_is_object(schema))
        return;
    bool asked = tg_json_is(tg_json_get(js, "strict"), JSON_TRUE);
    bool strict = (r->flags & TG_SR_STRICT) || (asked && (r->flags & TG_SR_STRICT_PER_TOOL));
    if (!strict && !(r->flags & TG_SR_RF_LIMITS))
        return;
    /* an agent sends the same schema every turn: rewritten once a worker */
    json_t *res = NULL;
    uint64_t key = 0;
    size_t len = 0;
    if (ctx->cache && !ctx->explain) {
        key = rules_hash(r, hash_json(schema, asked ? 0x72662dULL : 0x726600ULL, 0, &len));
        res = tg_cache_get(ctx->cache, "rfschema", key);
    }
    if (!res) {
        res = strict ? strict_response_schema(r, schema, asked, ctx->explain)
                     : limited_response_schema(r, schema, ctx->explain);
        if (res && key)
            tg_cache_put(ctx->cache, "rfschema", key, res, len * 3 + 64);
    }
    json_t *params = json_array_get(res, 0);
    if (json_is_object(params)) {
        json_t *njs = json_copy(js);
        json_object_set(njs, "schema", params);  /* shared with the cache */
        if (strict)
            json_object_set_new(njs, "strict", json_true());
        json_t *nrf = json_copy(rf);
        json_object_set_new(nrf, "json_schema", njs);
        json_object_set_new(body, "response_format", nrf);
        json_t *inv = json_array_get(res, 1);
        json_decref(ctx->rf_inverse);
        ctx->rf_inverse = json_is_null(inv) ? NULL : json_incref(inv);
        ctx->stats.schema_rewrites++;
    }
    json_decref(res);
}

/* Rule 93: Anthropic refuses a history with tool_use or tool_result blocks
 * and no tools ("Requests which include `tool_use` or `tool_result` blocks
 * must define tools.", browser-use#1243: a planner call replaying an
 * agent's history). The request asked for no tool, so each name the history
 * calls is declared with an open schema, and tool_choice "none" keeps the
 * model from calling one; the rest of the stage then treats them as the
 * agent's tools (names mapped, history renamed alike). */
static const char history_tool_text[] =
    "Called earlier in this conversation; not offered for this turn.";

static void history_tools(json_t *body, tg_ctx *ctx)
{
    if (json_array_size(tg_json_get(body, "tools")) > 0)
        return;
    json_t *decl = json_array();
    size_t i, j, k;
    json_t *m, *call, *t;
    json_array_foreach(tg_json_get(body, "messages"), i, m) {
        json_array_foreach(tg_json_get(m, "tool_calls"), j, call) {
            json_t *name = tg_json_get(tg_json_get(call, "function"), "name");
            bool seen = !json_is_string(name) || !json_string_length(name);
            json_array_foreach(decl, k, t) seen = seen || json_equal(
                tg_json_get(tg_json_get(t, "function"), "name"), name);
            if (!seen)
                json_array_append_new(
                    decl, json_pack("{s:s, s:{s:O, s:s, s:{s:s, s:{}}}}", "type", "function",
                                    "function", "name", name, "description", history_tool_text,
                                    "parameters", "type", "object", "properties"));
        }
    }
    if (json_array_size(decl) == 0) {
        json_decref(decl);
        return;
    }
    json_t *none = json_string("none");
    tg_explain_add(ctx->explain, "schema", "body", "/tools", "history-tools (rule 93)",
                   tg_json_get(body, "tools"), decl);
    tg_explain_add(ctx->explain, "schema", "body", "/tool_choice", "history-tools (rule 93)",
                   tg_json_get(body, "tool_choice"), none);
    json_object_set_new(body, "tools", decl);
    json_object_set_new(body, "tool_choice", none);
}

/* Anthropic's cache_control on a tool (the breakpoint after the tools)
 * where the route keeps cache hints (its message rules do not drop them):
 * the rewrite makes each tool anew, {type, function}, and its array is
 * shared with the cache, so a copy of it carries each hint to the tool the
 * agent's tool became (by name). NULL: nothing to carry. */
static json_t *carry_tool_cache(const json_t *orig, json_t *out, const tg_ctx *ctx)
{
    if (!ctx->msg || (ctx->msg->flags & TG_MR_DROP_CACHE))
        return NULL;
    json_t *res = NULL;
    size_t i, j;
    json_t *o, *t;
    json_array_foreach(orig, i, o) {
        json_t *cc = json_object_get(o, "cache_control");
        const char *name = json_string_value(tg_json_get(tg_json_get(o, "function"), "name"));
        if (!json_is_object(cc) || !name)
            continue;
        if (!res)
            res = json_copy(out);
        json_array_foreach(res, j, t) {
            const char *up = json_string_value(tg_json_get(tg_json_get(t, "function"), "name"));
            if (up && !strcmp(tg_schema_agent_name(ctx, up), name)) {
                json_t *c = json_copy(t);
                json_object_set(c, "cache_control", cc);
                json_array_set_new(res, j, c);
            }
        }
    }
    return res;
}

int tg_schema_stage(json_t *body, tg_ctx *ctx, tg_error *err)
{
    const tg_schema_rules *r = ctx->schema;
    if (!r || !tg_dialect_has(r->dialect, TG_DF_REWRITE) || !json_is_object(body))
        return 0;
    if (r->flags & TG_SR_HISTORY_TOOLS)
        history_tools(body, ctx);
    /* A body with none of these (a chat without tools) leaves the rules
     * below nothing to do but the tool names of its history: one pass
     * over its keys, not a dozen look-ups of keys it does not have. */
    static const char *const keys[] = {"tools", "tool_choice", "response_format",
                                       "parallel_tool_calls", "messages", NULL};
    json_t *k0[5];
    tg_json_pick(body, keys, k0);
    if (!k0[0] && !k0[1] && !k0[2] && !k0[3] && !ctx->no_shortcuts) {
        rename_references(NULL, k0[4], ctx, NULL);
        return 0;
    }
    json_t *tools = k0[0];
    json_t *upstream = NULL;
    if (json_is_array(tools)) {
        size_t n = json_array_size(tools);
        bool discovery = ctx->intercept != NULL;  /* discovery is on (core/ctx.h) */
        if (r->max_tools > 0 && n > (size_t)r->max_tools && !discovery) {
            tg_error_set(err, 400, "invalid_request_error", "array_above_max_length", "tools",
                         "Invalid 'tools': array too long. Expected an array with maximum length %d, "
                         "but got an array with length %zu instead (dialect %s%s%s; turn on "
                         "discovery on this route to serve more tools).",
                         r->max_tools, n, tg_dialect_name(r->dialect),
                         ctx->route_name ? ", route " : "", ctx->route_name ? ctx->route_name : "");
            return -1;
        }
        json_t *res = rewrite_cached(r, tools, ctx);
        /* its six keys in one pass (tg_json_pick) */
        enum { R_OVER, R_TOOLS, R_NAMES, R_INVERSE, R_CHANGES, R_UPSTREAM, R_DEGRADED, R_N };
        static const char *const res_keys[] = {"over", "tools", "names", "inverse",
                                               "changes", "upstream", "degraded", NULL};
        json_t *k[R_N];
        tg_json_pick(res, res_keys, k);
        json_t *over = k[R_OVER];
        if (over) {
            /* rule 62: a 400 naming the tool, not a body of many MB */
            json_int_t idx = json_integer_value(tg_json_get(over, "index"));
            json_t *fn = tg_json_get(json_array_get(tools, (size_t)idx), "function");
            const char *name = json_string_value(tg_json_get(fn, "name"));
            char param[64];
            snprintf(param, sizeof param, "tools[%lld].function.parameters", (long long)idx);
            tg_error_set(err, 400, "invalid_request_error", "schema_too_large", param,
                         "Tool '%s' (tools[%lld]): rewriting the tools' parameters for dialect %s "
                         "passed toolgate's budget at this tool (%lld bytes or %lld schema nodes; "
                         "limit %lld bytes, schema.max_growth = %d times the %zu bytes of tools "
                         "sent, at most schema.max_bytes = %d): its $ref / anyOf structure "
                         "multiplies when references are inlined.",
                         name ? name : "?", (long long)idx, tg_dialect_name(r->dialect),
                         (long long)json_integer_value(tg_json_get(over, "bytes")),
                         (long long)json_integer_value(tg_json_get(over, "nodes")),
                         (long long)json_integer_value(tg_json_get(over, "limit")), r->max_growth,
                         tg_schema_json_bytes(tools), r->max_bytes);
            json_decref(res);
            return -1;
        }
        json_t *out = k[R_TOOLS];
        json_t *names = k[R_NAMES];
        json_t *inv = k[R_INVERSE];
        json_decref(ctx->name_map);
        json_decref(ctx->arg_inverse);
        ctx->name_map = json_object_size(names) ? json_incref(names) : NULL;
        ctx->arg_inverse = json_object_size(inv) ? json_incref(inv) : NULL;
        json_t *cached = carry_tool_cache(tools, out, ctx);
        /* shared with the cache: see schema.h */
        json_object_set_new(body, "tools", cached ? cached : json_incref(out));
        ctx->stats.schema_rewrites += (unsigned)json_integer_value(k[R_CHANGES]);
        /* rule 62, degraded: said in X-Toolgate-Degraded, the access log
         * and toolgate_schema_budget_standins_total */
        ctx->stats.schema_standins +=
            (unsigned)json_integer_value(tg_json_get(k[R_DEGRADED], "standins"));
        upstream = json_incref(k[R_UPSTREAM]);
        json_decref(res);
    }
    /* tool_choice and messages as picked: the tools' rewrite above set
     * only "tools" */
    rename_references(k0[1], k0[4], ctx, upstream);
    json_decref(upstream);
    rewrite_response_format(body, ctx);
    apply_request_rules(body, ctx);
    return 0;
}

const char *tg_schema_agent_name(const tg_ctx *ctx, const char *upstream_name)
{
    if (!ctx || !upstream_name)
        return upstream_name;
    const char *a = json_string_value(json_object_get(ctx->name_map, upstream_name));
    return a ? a : upstream_name;
}

int tg_schema_restore_args(const tg_ctx *ctx, const char *name, json_t *args)
{
    if (!ctx || !name || !json_is_object(args))
        return 0;
    json_t *inv = json_object_get(ctx->arg_inverse, name);
    if (!inv)
        return 0;
    int count = 0;
    json_t *res = tg_schema_inverse_apply(inv, args, &count);
    json_decref(res);  /* an object root is always edited in place */
    return count;
}
