/* dialect.c -- names of the dialect ids (see dialect.h). */
#include "dialect.h"

#include <string.h>

static const char *const names[TG_D_COUNT] = {
    [TG_D_OPENAI] = "openai",       [TG_D_OPENAI_STRICT] = "openai-strict",
    [TG_D_GEMINI] = "gemini",       [TG_D_ANTHROPIC] = "anthropic",
    [TG_D_MISTRAL] = "mistral",     [TG_D_GROQ] = "groq",
    [TG_D_FIREWORKS] = "fireworks", [TG_D_CEREBRAS] = "cerebras",
    [TG_D_DEEPSEEK] = "deepseek",   [TG_D_XAI] = "xai",
    [TG_D_TOGETHER] = "together",   [TG_D_OLLAMA] = "ollama",
    [TG_D_VLLM] = "vllm",           [TG_D_PASSTHROUGH] = "passthrough",
};

int tg_dialect_from_name(const char *name)
{
    for (int i = 0; i < TG_D_COUNT; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

const char *tg_dialect_name(tg_dialect d)
{
    return (d >= 0 && d < TG_D_COUNT) ? names[d] : "?";
}

const char *tg_dialect_list(void)
{
    return "openai | openai-strict | gemini | anthropic | mistral | groq | "
           "fireworks | cerebras | deepseek | xai | together | ollama | vllm | "
           "passthrough";
}
