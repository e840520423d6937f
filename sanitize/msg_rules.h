/* msg_rules.h -- a route's message rules: one dialect id plus TG_MR_*
 * bits (hygiene.h says how they are set). Apart from hygiene.h so that
 * the files below the stage (hygiene_message.c, hygiene_history.c) read
 * them without including the stage that calls them. */
#ifndef TG_MSG_RULES_H
#define TG_MSG_RULES_H

#include <stdint.h>

#include "core/dialect.h"

/* What the walker may do; each bit names the docs/dialects.md rule it serves. */
enum {
    TG_MR_BOOKKEEPING    = 1u << 0,  /* message bookkeeping of section 4.1 */
    TG_MR_ALLOWLIST      = 1u << 1,  /* per-role key allow-list, content part
                                        shape (rules 43, 47) */
    TG_MR_CALL_SHAPE     = 1u << 2,  /* tool_calls[] exactly {id,type,function
                                        {name,arguments}} (rules 43, 47) */
    TG_MR_CALL_EXTRAS    = 1u << 3,  /* tool_calls[] extra_content, call_id,
                                        response_item_id, index, name (4.1) */
    TG_MR_KEEP_SIGNATURE = 1u << 4,  /* keep tool_calls[].extra_content
                                        (Gemini thought signatures, rule 34) */
    TG_MR_DROP_REASONING = 1u << 5,  /* reasoning* message keys (4.2) */
    TG_MR_KEEP_REASONING = 1u << 6,  /* reasoning_content kept/rebuilt on
                                        tool-call turns, dropped elsewhere
                                        (rule 52) */
    TG_MR_DROP_CACHE     = 1u << 7,  /* cache_control on messages and parts */
    TG_MR_DROP_NULLS     = 1u << 8,  /* null-valued keys (rules 43, 48) */
    TG_MR_FIX_CALLS      = 1u << 9,  /* arguments a JSON-object string, type
                                        "function", no empty tool_calls
                                        (rules 7, 55) */
    TG_MR_FIX_CONTENT    = 1u << 10, /* content null/[] to what the target
                                        accepts (rules 55, 56) */
    TG_MR_MISTRAL_IDS    = 1u << 11, /* ids ^[a-zA-Z0-9]{9}$ (rule 42) */
    TG_MR_ANTHROPIC_IDS  = 1u << 12, /* ids ^[a-zA-Z0-9_-]+$ (rule 39) */
    TG_MR_ROLE_ORDER     = 1u << 13, /* Mistral bridge after a tool turn,
                                        trailing assistant prefix (rule 44) */
    TG_MR_DROP_EMPTY     = 1u << 14, /* empty assistant message (rule 45,
                                        Anthropic non-empty content) */
    TG_MR_DEVELOPER_ROLE = 1u << 15, /* developer -> system (rule 43) */
    TG_MR_TOP_LEVEL      = 1u << 16, /* top-level parameters (rules 36, 49) */
    TG_MR_EMPTY_TEXT     = 1u << 17, /* "" beside tool calls -> null, empty
                                        text parts, system turns and user
                                        turns but the last dropped
                                        (section 4: Anthropic text blocks
                                        non-empty) */
    TG_MR_PAIR_CALLS     = 1u << 18, /* rule 6: every call answered once, in
                                        its tool block; missing ids made */
    TG_MR_LEGACY_FUNCS   = 1u << 19, /* history's function_call / role
                                        "function" as tool_calls / "tool" */
    TG_MR_JSON_MODE_TOOLS = 1u << 20, /* response_format json_object goes when
                                        tools are sent (Groq, section 4) */
    TG_MR_FILL_SIGNATURE = 1u << 21, /* Gemini 3: a tool-call turn replayed
                                        without any thought signature gets
                                        Google's validator-skipping one (R19) */
    TG_MR_SYSTEM_FIRST   = 1u << 22, /* a system turn after the conversation
                                        started joins the leading one (rule
                                        63; Qwen's chat template, Gemini) */
    TG_MR_NULL_WITH_CALLS = 1u << 23, /* content null beside tool_calls is
                                        "" too (rule 55: Ollama since
                                        2026 refuses <nil>) */
    TG_MR_STRING_CONTENT = 1u << 24, /* a content list of text parts is sent
                                        as one string (rule 68: Groq,
                                        DeepSeek, Cerebras) */
    TG_MR_ONE_SYSTEM     = 1u << 25, /* consecutive system turns become one
                                        (rule 74; chat templates of local
                                        servers take a single one) */
    TG_MR_NO_AUTO_CHOICE = 1u << 26, /* the server has no tool parser:
                                        tool_choice "auto" is not sent
                                        (rule 56, vLLM) */
    TG_MR_REASONING_PARAMS = 1u << 27, /* reasoning models: the sampling
                                        parameters they refuse go (rule 75,
                                        xAI) */
    TG_MR_FIXED_SAMPLING = 1u << 28, /* Kimi models: the sampling parameters
                                        the platform fixes go, and
                                        reasoning_effort beside thinking
                                        (rule 77, Moonshot) */
    TG_MR_THINKING_CHOICE = 1u << 29, /* a forced tool_choice is "auto" while
                                        thinking is on (rule 78, Moonshot,
                                        DeepSeek's thinking models) */
    TG_MR_ONE_TEXT       = 1u << 30, /* several text parts in one message
                                        become one (rule 80, xAI) */
    TG_MR_NAME_USER_ONLY = 1u << 31, /* `name` only on user turns (rule 81,
                                        xAI) */
};
/* Past bit 31 the bits are macros: an enum constant must fit an int (C11). */
#define TG_MR_EMPTY_TURNS ((uint64_t)1 << 32) /* an empty system or developer
                                        turn, and an empty user turn but the
                                        last, dropped (rule 83, xAI) */
#define TG_MR_SHORT_IDS ((uint64_t)1 << 33)   /* call ids at most 40 characters
                                        (rule 84, OpenAI) */
#define TG_MR_TEXT_ONLY ((uint64_t)1 << 35) /* user turns too go as one string:
                                        an image or other non-text part
                                        becomes a note in the text, said in
                                        X-Toolgate-Translated (rule 90,
                                        DeepSeek) */
#define TG_MR_EFFORT_TOP ((uint64_t)1 << 36) /* reasoning_effort above high
                                        (xhigh, max) sent as high (rule 91,
                                        Moonshot) */
#define TG_MR_NULL_KEYS ((uint64_t)1 << 37) /* null-valued keys but a
                                        message's content dropped (rule 95,
                                        Gemini: "Value is not a string:
                                        null") */
#define TG_MR_TOOL_MEDIA ((uint64_t)1 << 38) /* an image or file part in a
                                        tool turn moves to a user turn after
                                        the tool turns (rule 96: a chat tool
                                        message holds text) */
#define TG_MR_SCHEMA_AS_OBJECT ((uint64_t)1 << 39) /* a json_schema
                                        response_format sent as json_object,
                                        the schema in the system turn (rule
                                        97, DeepSeek) */
#define TG_MR_EFFORT_FLOOR ((uint64_t)1 << 40) /* reasoning_effort below low
                                        (none, minimal) sent as low to gpt-oss
                                        (rule 98, Groq) */
#define TG_MR_PDF_TEXT ((uint64_t)1 << 41) /* a chat file part holding a
                                        PDF goes as its text (rule 99: every
                                        target but OpenAI's, which takes it,
                                        and Anthropic's, which reads PDFs) */
#define TG_MR_COMPLETION_TOKENS ((uint64_t)1 << 34) /* max_tokens as
                                        max_completion_tokens on OpenAI's
                                        reasoning models (rule 85) */

typedef struct tg_msg_rules {
    tg_dialect dialect;
    uint64_t flags;  /* TG_MR_* bits */
    /* the route's drop_params: top-level keys its provider refuses though
     * the dialect keeps them (NULL-terminated, owned by the conf), or NULL */
    char **drop;
} tg_msg_rules;

#endif
