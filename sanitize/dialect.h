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

typedef enum tg_dialect {
    TG_D_OPENAI = 0,
    TG_D_OPENAI_STRICT,
    TG_D_GEMINI,
    TG_D_ANTHROPIC,
    TG_D_MISTRAL,
    TG_D_GROQ,
    TG_D_FIREWORKS,
    TG_D_CEREBRAS,
    TG_D_DEEPSEEK,
    TG_D_XAI,
    TG_D_TOGETHER,
    TG_D_OLLAMA,
    TG_D_VLLM,
    TG_D_PASSTHROUGH,
    TG_D_COUNT
} tg_dialect;

/* Returns the dialect for a conf name, or -1. */
int tg_dialect_from_name(const char *name);
const char *tg_dialect_name(tg_dialect d);
/* "openai | openai-strict | ..." for error messages (static). */
const char *tg_dialect_list(void);

#endif
