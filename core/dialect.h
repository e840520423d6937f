/* dialect.h -- the dialects a route can name: one table, one row each.
 *
 * A row says everything toolgate knows about a provider: its id, its conf
 * name, its features (TG_DF_* below, what code outside the preset tables
 * asks of a dialect), and the name of its preset in each stage's rule
 * table: the schema rules (sanitize/schema.c, SCHEMA_*), the message rules
 * (sanitize/hygiene.c, MSG_*) and the response rules (repair/repair_rules.c,
 * REPAIR_*). Each stage defines its presets as macros and builds its table
 * from these rows, so a row that names a preset a stage lacks does not
 * compile, and a new provider that behaves like a known one is one line
 * here. A route's conf overrides are applied to a copy of the presets when
 * the conf is loaded (never per request). The rules themselves, and the
 * numbers comments cite them by (rule N, R-numbers, section N), are those
 * of docs/dialects.md.
 */
#ifndef TG_DIALECT_H
#define TG_DIALECT_H

/* Features: what a dialect is, for the code that is not a preset table. */
enum {
    /* the request stages rewrite for the target (all but passthrough, whose
     * tools go as sent), and /v1/responses is bridged by default */
    TG_DF_REWRITE = 1u << 0,
    /* the provider speaks Anthropic's /v1/messages itself: passed through
     * by default instead of bridged */
    TG_DF_NATIVE_MESSAGES = 1u << 1,
    /* tool schemas are always held to the strict subset (rule 16), whatever
     * schema.strict says: the meta-tools are declared strict */
    TG_DF_STRICT_TOOLS = 1u << 2,
    /* a free-form object (no properties) is refused, so call_tool's
     * arguments travel as a JSON string */
    TG_DF_ARGS_AS_STRING = 1u << 3,
    /* which string formats strict mode keeps: none (deepseek), Anthropic's
     * list, or (neither) OpenAI's */
    TG_DF_FORMATS_NONE = 1u << 4,
    TG_DF_FORMATS_ANTHROPIC = 1u << 5,
    /* without constraints, minItems 0 or 1 is still taken (rule 40) */
    TG_DF_SMALL_MIN_ITEMS = 1u << 6,
    /* tool names must start with a letter and have at least 3 characters
     * (Moonshot: "function name is invalid, must start with a letter ...";
     * its tool-use page: ^[a-zA-Z_][a-zA-Z0-9-_]{2,63}$; rule 76) */
    TG_DF_NAME_LETTER = 1u << 7,
};

/* Every dialect once, in id order:
 *   X(id, conf name, features, schema preset, message preset, repair preset)
 * The enum, the names, the list in error messages and every stage's table
 * are made from it; test_pipeline's "every dialect has a row" checks that
 * no row but passthrough is empty. */
#define TG_DIALECTS(X)                                                                         \
    X(TG_D_OPENAI, "openai", TG_DF_REWRITE, SCHEMA_OPENAI, MSG_OPENAI, REPAIR_RELAYED)         \
    X(TG_D_OPENAI_STRICT, "openai-strict",                                                     \
      TG_DF_REWRITE | TG_DF_STRICT_TOOLS | TG_DF_ARGS_AS_STRING, SCHEMA_OPENAI_STRICT,         \
      MSG_OPENAI, REPAIR_RELAYED)                                                              \
    X(TG_D_GEMINI, "gemini", TG_DF_REWRITE | TG_DF_ARGS_AS_STRING, SCHEMA_GEMINI, MSG_GEMINI,  \
      REPAIR_ALL)                                                                              \
    X(TG_D_VERTEX, "vertex", TG_DF_REWRITE | TG_DF_ARGS_AS_STRING, SCHEMA_VERTEX, MSG_GEMINI,  \
      REPAIR_ALL)                                                                              \
    X(TG_D_ANTHROPIC, "anthropic",                                                             \
      TG_DF_REWRITE | TG_DF_NATIVE_MESSAGES | TG_DF_FORMATS_ANTHROPIC | TG_DF_SMALL_MIN_ITEMS, \
      SCHEMA_ANTHROPIC, MSG_ANTHROPIC, REPAIR_ALL)                                             \
    X(TG_D_MISTRAL, "mistral", TG_DF_REWRITE, SCHEMA_MISTRAL, MSG_MISTRAL, REPAIR_MISTRAL)     \
    X(TG_D_GROQ, "groq", TG_DF_REWRITE, SCHEMA_GROQ, MSG_GROQ, REPAIR_ALL)                     \
    X(TG_D_FIREWORKS, "fireworks", TG_DF_REWRITE, SCHEMA_FIREWORKS, MSG_FIREWORKS, REPAIR_ALL) \
    X(TG_D_CEREBRAS, "cerebras", TG_DF_REWRITE | TG_DF_STRICT_TOOLS | TG_DF_ARGS_AS_STRING,    \
      SCHEMA_CEREBRAS, MSG_CEREBRAS, REPAIR_ALL)                                               \
    X(TG_D_DEEPSEEK, "deepseek", TG_DF_REWRITE | TG_DF_FORMATS_NONE, SCHEMA_DEEPSEEK,          \
      MSG_DEEPSEEK, REPAIR_ALL)                                                                \
    X(TG_D_XAI, "xai", TG_DF_REWRITE, SCHEMA_XAI, MSG_XAI, REPAIR_ALL)                         \
    X(TG_D_TOGETHER, "together", TG_DF_REWRITE, SCHEMA_TOGETHER, MSG_LENIENT, REPAIR_ALL)      \
    X(TG_D_OLLAMA, "ollama", TG_DF_REWRITE, SCHEMA_LOCAL, MSG_OLLAMA, REPAIR_ALL)              \
    X(TG_D_VLLM, "vllm", TG_DF_REWRITE, SCHEMA_VLLM, MSG_VLLM, REPAIR_ALL)                    \
    X(TG_D_MOONSHOT, "moonshot", TG_DF_REWRITE | TG_DF_NAME_LETTER, SCHEMA_MOONSHOT,           \
      MSG_MOONSHOT, REPAIR_ALL)                                                                \
    X(TG_D_PASSTHROUGH, "passthrough", 0, SCHEMA_NONE, MSG_NONE, REPAIR_GUARANTEE)

#define TG_DIALECT_ID(id, name, features, schema, msg, repair) id,
typedef enum tg_dialect { TG_DIALECTS(TG_DIALECT_ID) TG_D_COUNT } tg_dialect;
#undef TG_DIALECT_ID

/* Returns the dialect for a conf name, or -1. */
int tg_dialect_from_name(const char *name);
const char *tg_dialect_name(tg_dialect d);
/* "openai | openai-strict | ..." for error messages (static). */
const char *tg_dialect_list(void);
/* The dialect's TG_DF_* features (0 for an id out of range). */
unsigned tg_dialect_features(tg_dialect d);
/* Does d have every feature of f? */
static inline int tg_dialect_has(tg_dialect d, unsigned f)
{
    return (tg_dialect_features(d) & f) == f;
}

#endif
