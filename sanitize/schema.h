/* schema.h -- the schema-dialect stage: rewrites `tools` (and every place
 * that names a tool) into the route's dialect, and keeps, in the ctx, what
 * the way back needs to undo it (see tg.h for the ownership rule).
 *
 * A dialect's schema rules are data (a SCHEMA_* preset in schema.c, named by
 * the dialect's row in core/dialect.h): a set of TG_SR_* rule bits plus
 * limits. One walker (schema_walk.c) applies the rules the row
 * turns on. Every lossy rewrite records its inverse in a small tree that
 * mirrors the rewritten schema (the "inverse"; its format, and the code
 * that applies it on the way back, are in schema_inverse.c).
 *
 * The result for one (tools array, rules) pair is cached in ctx->cache, so
 * body["tools"] may be SHARED with the cache after the stage: later stages
 * must replace the array, never edit it in place.
 */
#ifndef TG_SCHEMA_H
#define TG_SCHEMA_H

#include "core/dialect.h"
#include "core/tg.h"

struct tg_ctx;

/* Rule bits (conf name in brackets, for `schema.<name> = on|off`). */
enum {
    TG_SR_ROOT_OBJECT = 1u << 0,    /* [root_object] root type:object, root combinators flattened (rule 3) */
    TG_SR_ITEMS = 1u << 1,          /* [items] arrays get an items schema (rule 4) */
    TG_SR_REQUIRED = 1u << 2,       /* [required] required names not in properties removed (rule 5) */
    TG_SR_NAMES = 1u << 3,          /* [names] tool names mapped into the target's alphabet (section 7) */
    TG_SR_NAMES_GEMINI = 1u << 4,   /* [names_gemini] gemini alphabet: `.` allowed, letter/_ first (rule 32) */
    TG_SR_INLINE_REFS = 1u << 5,    /* [inline_refs] $ref inlined, $defs removed, recursion cut */
    TG_SR_MERGE_ALLOF = 1u << 6,    /* [merge_allof] */
    TG_SR_ONEOF_ANYOF = 1u << 7,    /* [oneof_anyof] */
    TG_SR_TYPE_ARRAYS = 1u << 8,    /* [type_arrays] type arrays -> single type (+nullable / anyOf) */
    TG_SR_CONST_ENUM = 1u << 9,     /* [const_enum] const -> enum:[v] */
    TG_SR_ENUM_STRINGS = 1u << 10,  /* [enum_strings] non-string enums -> strings, format:enum */
    TG_SR_OPENAPI_SUBSET = 1u << 11,/* [openapi_subset] Gemini keyword allow-list, nullable, formats (rules 24-29) */
    TG_SR_ADD_TYPE = 1u << 12,      /* [add_type] every node gets a type (rule 27) */
    TG_SR_EMPTY_ROOT_OMIT = 1u << 13,/* [empty_root_omit] root without properties -> no parameters (rule 30) */
    TG_SR_STRICT = 1u << 14,        /* [strict] strict:true, additionalProperties:false, subset */
    TG_SR_ALL_REQUIRED = 1u << 15,  /* (with strict) every property required, optional ones nullable */
    TG_SR_NULL_ANYOF = 1u << 16,    /* (with strict) nullability and type unions as anyOf, never type arrays */
    TG_SR_NO_CONSTRAINTS = 1u << 17,/* [no_constraints] min/max/length/pattern... moved to hints */
    TG_SR_STRICT_BUDGET = 1u << 18, /* (with strict) Anthropic's 20 tools / 24 optional / 16 unions */
    TG_SR_FREEFORM_STRING = 1u << 19,/* [freeform_string] maps and untyped nodes -> JSON-encoded strings */
    TG_SR_XAI_PROPERTIES = 1u << 20,/* [xai_properties] no additionalProperties:false near a prop named `properties` */
    TG_SR_MISTRAL_STRIP = 1u << 21, /* [mistral_strip] drop $id, $schema, additionalProperties:false, strict */
    TG_SR_STRICT_PER_TOOL = 1u << 22,/* honour a tool's own strict:true (openai) */
    TG_SR_CHOICE_ANY = 1u << 23,    /* [choice_any] tool_choice object/"required" -> "any" + only that tool (rule 46) */
    TG_SR_NO_NULL_DESC = 1u << 24,  /* [no_null_desc] tools' null/non-string descriptions dropped (rule 48) */
    TG_SR_SERIAL_CALLS = 1u << 25,  /* [serial_calls] parallel_tool_calls:false unless the agent set it (rule 23) */
    TG_SR_EMPTY_TOOLS = 1u << 26,   /* [empty_tools] no tools: [], nor tool_choice / parallel_tool_calls without tools (rule 61) */
    TG_SR_ANYOF_ALONE = 1u << 27,   /* [anyof_alone] a node with anyOf holds nothing else (Vertex, rule 60) */
    TG_SR_NO_SIZE_LIMITS = 1u << 28,/* [no_size_limits] string/array/object size keywords, pattern, format -> hints (Cerebras, rule 50) */
    TG_SR_NEED_PARAMS = 1u << 29,   /* [need_parameters] a function without parameters gets an empty object (every dialect but gemini, vertex; rule 70) */
    TG_SR_ENUM_NO_NULL = 1u << 30,  /* [enum_no_null] null leaves an enum, the type list says it (xAI, rule 71) */
    TG_SR_TYPED_PROPS = 1u << 31,   /* [typed_properties] an untyped property travels JSON-encoded (Groq, rule 72) */
};
/* Past bit 31 the bits are macros: an enum constant must fit an int (C11). */
#define TG_SR_FLAT_UNIONS ((uint64_t)1 << 32) /* [flat_unions] anyOf directly in anyOf (oneOf in oneOf) spliced into one list (rule 82) */
#define TG_SR_PATTERN_NUL ((uint64_t)1 << 33) /* [pattern_nul] a pattern with a \0 escape -> hint (DeepSeek, rule 88) */
#define TG_SR_NO_KEY_SCHEMAS ((uint64_t)1 << 34) /* [no_key_schemas] propertyNames, patternProperties -> hints (vLLM, rule 89) */
#define TG_SR_CHOICE_REQUIRED ((uint64_t)1 << 36) /* [choice_required] a named tool_choice -> "required" + only that tool (Cerebras, rule 69) */
#define TG_SR_KEY_NAMES ((uint64_t)1 << 35) /* [key_names] property keys mapped into ^[a-zA-Z0-9_.-]{1,64}$, mapped back in answers (Anthropic, rule 87) */
#define TG_SR_HISTORY_TOOLS ((uint64_t)1 << 38) /* [history_tools] a history with tool calls and no tools declared gets the called names as tools, and tool_choice "none" (Anthropic, rule 93) */
#define TG_SR_RF_LIMITS ((uint64_t)1 << 37) /* [rf_size_limits] a response_format schema, strict or not, gets the tool rules and loses size keywords, pattern, format to hints (Groq, Cerebras; rule 92) */

/* The schema rules a preset turns on; a route may override single rules
 * (conf keys `schema.<rule> = on|off`). Held by value in the route. */
typedef struct tg_schema_rules {
    tg_dialect dialect;
    uint64_t flags;  /* TG_SR_* bits */
    int name_max;    /* tool-name length limit, 0 = none */
    int desc_max;    /* tool-description length limit, 0 = none */
    int max_tools;   /* 0 = no limit */
    int max_growth;  /* rule 62: rewritten schemas at most this many times the tools sent... */
    int max_bytes;   /* ...and at most this many bytes in all (a floor of 1 MiB always fits) */
} tg_schema_rules;

/* Rule 62: what the rewrite of one request may produce and cost. $ref
 * inlining can multiply a schema (a chain of references that each meet an
 * anyOf doubles or triples per level): the output is counted as it is built
 * and the walk stops at the first tool past the budget. */
typedef struct tg_schema_budget {
    size_t max_bytes, max_nodes;  /* limits for the whole request */
    size_t bytes, nodes;          /* spent so far: compact JSON bytes, nodes walked */
    bool over;
    /* the degraded walks (rule 62): a $ref is inlined only while fewer
     * than ref_depth refs are open on the path; deeper ones become
     * JSON-string stand-ins that describe them (-1: no limit) */
    int ref_depth;
    size_t standins;              /* refs stood in for */
} tg_schema_budget;

/* Limits for a request whose tools take in_bytes of compact JSON. */
void tg_schema_budget_init(tg_schema_budget *b, const tg_schema_rules *r, size_t in_bytes);
/* About the compact JSON size of v, without serializing it. */
size_t tg_schema_json_bytes(json_t *v);

void tg_schema_rules_preset(tg_dialect d, tg_schema_rules *out);
/* Apply one conf override (`key` without the "schema." prefix): a rule name
 * above with on|off, or desc_max / name_max / max_tools = N. Returns 0, or -1
 * with a message in msg for an unknown rule or bad value. */
int tg_schema_rules_set(tg_schema_rules *r, const char *key, const char *value,
                        char *msg, size_t msglen);

/* Request stage. Edits body in place; fills ctx->name_map / ctx->arg_inverse. */
int tg_schema_stage(json_t *body, struct tg_ctx *ctx, tg_error *err);

/* Way back: the agent's own name for an upstream tool name (borrowed string,
 * valid while ctx lives); the input itself when nothing was renamed. */
const char *tg_schema_agent_name(const struct tg_ctx *ctx, const char *upstream_name);
/* Way back: undo lossy argument rewrites for a call of agent tool `name`
 * (args is the parsed arguments object, edited in place). Returns the number
 * of values changed. */
int tg_schema_restore_args(const struct tg_ctx *ctx, const char *name, json_t *args);

/* ---- Pure pieces, for tests and the `rewrite` CLI. ---- */

/* Rewrite one OpenAI-shaped tool for the rules. upstream_name is the name to
 * give it (NULL keeps its own). explain (may be NULL) receives change
 * records. *inverse (may be NULL) gets a new reference to the tool's inverse
 * tree, or NULL when the rewrite lost nothing. Returns a new tool, or NULL
 * when `tool` is not a usable function tool. `strict` is set when the tool
 * was rewritten to a strict subset. */
json_t *tg_schema_rewrite_tool(const tg_schema_rules *r, json_t *tool, const char *upstream_name,
                               json_t *explain, json_t **inverse, bool *strict);
/* The same against a request's budget b (rule 62); when the budget runs out
 * b->over is set and the returned tool is not to be sent. */
json_t *tg_schema_rewrite_tool_budget(const tg_schema_rules *r, json_t *tool, const char *upstream_name,
                                      json_t *explain, json_t **inverse, bool *strict,
                                      tg_schema_budget *b);
/* Rewrite a whole tools array: {"tools": [...], "names": {upstream: agent},
 * "upstream": {agent: upstream}, "inverse": {agent: tree}, "changes": n},
 * plus "over": {"tool", "index", "bytes", "limit", "nodes"} when the
 * request's budget ran out (rule 62; the tools are then not to be sent). */
json_t *tg_schema_rewrite_tools(const tg_schema_rules *r, json_t *tools, json_t *explain);
/* A name in the target's alphabet/length (section 7), without collision
 * handling: writes at most outlen bytes (NUL included). */
void tg_schema_clean_name(const tg_schema_rules *r, const char *name, char *out, size_t outlen);
/* Resolve a local JSON pointer $ref ("#", "#/$defs/x", "#/definitions/x",
 * "#/properties/a", ~0 ~1 and %XX escapes) against root: a borrowed node,
 * or NULL. */
json_t *tg_schema_ref_peek(const json_t *root, const char *ref);
/* Apply an inverse tree to a value: returns the restored value (new
 * reference; may be the same object, edited) and adds the edits to *count. */
json_t *tg_schema_inverse_apply(json_t *inverse, json_t *value, int *count);
/* The opposite direction (agent value -> value valid for the rewritten
 * schema), used by tests to check that the pair round-trips. */
json_t *tg_schema_inverse_forward(json_t *inverse, json_t *value);

#endif
