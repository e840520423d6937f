/* dialect.h -- the dialect identifiers a route can name.
 *
 * A dialect is only an id here. Each stage owns its own table of rules
 * indexed by this id (schema.c: schema rules, hygiene.c: message rules,
 * repair.c: response rules), so a preset is data spread over the stages that
 * use it, and a route's conf overrides are applied to a copy of that data
 * when the conf is loaded (never per request). The rules themselves, and
 * the numbers comments cite them by (rule N, R-numbers, section N), are
 * those of docs/dialects.md.
 */
#ifndef TG_DIALECT_H
#define TG_DIALECT_H

/* Every dialect once, in id order: the enum, the conf names and the list in
 * error messages are all made from this table, so they cannot disagree.
 * Each stage's preset table must have a row for each id: test_pipeline's
 * "every dialect has a row" checks it. */
#define TG_DIALECTS(X)                        \
    X(TG_D_OPENAI, "openai")                  \
    X(TG_D_OPENAI_STRICT, "openai-strict")    \
    X(TG_D_GEMINI, "gemini")                  \
    X(TG_D_VERTEX, "vertex")                  \
    X(TG_D_ANTHROPIC, "anthropic")            \
    X(TG_D_MISTRAL, "mistral")                \
    X(TG_D_GROQ, "groq")                      \
    X(TG_D_FIREWORKS, "fireworks")            \
    X(TG_D_CEREBRAS, "cerebras")              \
    X(TG_D_DEEPSEEK, "deepseek")              \
    X(TG_D_XAI, "xai")                        \
    X(TG_D_TOGETHER, "together")              \
    X(TG_D_OLLAMA, "ollama")                  \
    X(TG_D_VLLM, "vllm")                      \
    X(TG_D_PASSTHROUGH, "passthrough")

#define TG_DIALECT_ID(id, name) id,
typedef enum tg_dialect { TG_DIALECTS(TG_DIALECT_ID) TG_D_COUNT } tg_dialect;
#undef TG_DIALECT_ID

/* Returns the dialect for a conf name, or -1. */
int tg_dialect_from_name(const char *name);
const char *tg_dialect_name(tg_dialect d);
/* "openai | openai-strict | ..." for error messages (static). */
const char *tg_dialect_list(void);

#endif
