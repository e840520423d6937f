/* hygiene.c -- the message-hygiene request stage (issue #4).
 *
 * Makes messages[] and the top-level body acceptable to the route's dialect,
 * following docs/dialects.md sections 4, 4.1, 4.2, 6, 7 and rules 7, 34, 36, 39,
 * 42-49, 52, 55, 56, 63, 67, 73-75:
 *
 *   - internal markers (keys starting with ctx->strip_prefix) are removed
 *     wherever an agent's bookkeeping can hide: the top level, every message,
 *     every tool_calls entry and its function, every content part;
 *   - what a strict validator rejects is removed: keys outside a role's
 *     allow-list, null-valued keys, foreign tool_calls fields, top-level
 *     parameters the target does not know (listed in ctx->dropped, for
 *     X-Toolgate-Dropped);
 *   - what a target needs is kept or rebuilt: DeepSeek's reasoning_content on
 *     tool-call turns, Gemini's thought signatures, Mistral and Anthropic
 *     tool-call ids, arguments that are JSON-object strings, content shapes,
 *     the assistant bridge Mistral wants between a tool and a user turn;
 *   - before all that, a first pass pairs tool calls with their answers
 *     (rule 6, which every provider enforces): a call without an id gets
 *     one, an answer without tool_call_id answers the first open call, a call
 *     left unanswered when the next non-tool turn (or the end) comes gets a
 *     stated "no result" answer, and an answer to no open call (its call was
 *     trimmed from the history, or it answers twice) becomes a user turn
 *     that says whose result it is. Legacy function_call / role "function"
 *     turns become tool_calls / "tool" turns on targets that reject them.
 *
 * Rules are data: presets[] holds one row per dialect (TG_MR_* bits, the
 * role allow-lists, the top-level tables); the walker applies what the row
 * and the route's overrides turn on. It walks messages[] once and edits the
 * body in place: deleting a jansson key keeps the order of the others, so an
 * untouched message leaves byte for byte as it came. A new messages array is
 * built only to drop or insert a whole message.
 *
 * Tool-call ids are rewritten statelessly: the new id is a pure function of
 * the old one (FNV-1a 64, base62), so turn N+1 maps every id of turn N to
 * the same value; collisions inside one request are resolved in order of
 * first appearance, which is stable because a history only grows.
 *
 * Three files: this one holds the rules as data, the top level and the
 * stage; hygiene_message.c cleans one message (its keys, role allow-lists,
 * content, tool calls and their ids); hygiene_history.c works on the
 * history as a whole (tool calls paired with their answers, role order,
 * system turns first) through it. hygiene_walk.h is the walker all three
 * share. The calls go one way: hygiene.c -> hygiene_history.c ->
 * hygiene_message.c.
 */
#include "sanitize/hygiene.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/ctx.h"
#include "core/jsonio.h"
#include "core/rules.h"
#include "sanitize/hygiene_history.h"
#include "sanitize/hygiene_message.h"
#include "sanitize/hygiene_walk.h"

/* ---- the data ---------------------------------------------------------- */

/* Rule 36: what Gemini's OpenAI-compat endpoint maps at the top level: the
 * OpenAI chat set minus storage/Responses parameters (store,
 * prompt_cache_key, metadata, service_tier, verbosity, reasoning...) and
 * the legacy ones it has no field for (functions, function_call,
 * logit_bias). */
static const char *const gemini_top[] = {
    "model", "messages", "tools", "tool_choice", "parallel_tool_calls",
    "stream", "stream_options", "temperature", "top_p", "n", "max_tokens",
    "max_completion_tokens", "stop", "response_format", "seed",
    "presence_penalty", "frequency_penalty", "logprobs", "top_logprobs",
    "reasoning_effort", "modalities", "audio", "user", "web_search_options",
    "extra_body", NULL,
};
/* Section 4 (Mistral row): the chat request model, extra="forbid". `n` and
 * `frequency_penalty` were observed rejected (422) and are left out although
 * Mistral's current reference lists them; `messages.top_level = off` sends
 * them anyway. */
static const char *const mistral_top[] = {
    "model", "messages", "tools", "tool_choice", "parallel_tool_calls",
    "stream", "temperature", "top_p", "max_tokens", "stop", "random_seed",
    "response_format", "presence_penalty", "prediction", "prompt_mode",
    "safe_prompt", NULL,
};
/* Rule 49 and section 4 rows for Groq, Fireworks, Cerebras. `metadata` only
 * means something together with `store`; `reasoning` is the OpenRouter
 * object, unknown to these validators [U]. */
static const char *const fireworks_deny[] = {
    "store", "prompt_cache_key", "verbosity", "service_tier", "metadata",
    "reasoning", "stream_options", "vl_high_resolution_images",
    "safety_identifier", NULL,
};
static const char *const cerebras_deny[] = {
    "store", "prompt_cache_key", "verbosity", "service_tier", "metadata",
    "reasoning", "parallel_tool_calls", "logit_bias", "frequency_penalty",
    "presence_penalty", NULL,
};

/* Rules 67, 73: OpenAI's chat endpoint refuses every field it does not
 * define ("Unrecognized request argument supplied: top_k", "...: thinking",
 * llm_wiki#336). What it defines (API reference, chat/create, checked
 * 2026-12-06); the rest (Anthropic's thinking and top_k, vLLM's min_p,
 * repetition_penalty and chat_template_kwargs, SDK extra_body left in a
 * body) has no equivalent there and goes, said in X-Toolgate-Dropped.
 * moderation and prompt_cache_options: openai 7.60's ChatCompletionCreateParams. */
static const char *const openai_top[] = {
    "model", "messages", "tools", "tool_choice", "parallel_tool_calls", "functions",
    "function_call", "stream", "stream_options", "temperature", "top_p", "n", "max_tokens",
    "max_completion_tokens", "stop", "response_format", "seed", "presence_penalty",
    "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "user", "safety_identifier",
    "store", "metadata", "service_tier", "prompt_cache_key", "prompt_cache_retention",
    "reasoning_effort", "verbosity", "modalities", "audio", "prediction", "web_search_options",
    "moderation", "prompt_cache_options", NULL,
};
/* Rule 73: Groq's chat/create request body (console.groq.com/docs/api-
 * reference, checked 2026-12-06), less what rule 49 saw refused (store,
 * metadata, and an OpenAI service_tier, whose values Groq does not take)
 * and what its OpenAI-compatibility page says 400s (logprobs, logit_bias,
 * top_logprobs: console.groq.com/docs/openai, checked 2026-12-06).
 * Groq answers any other key with "property 'X' is unsupported"
 * (immersive-translate#3016: chat_template_kwargs). */
static const char *const groq_top[] = {
    "model", "messages", "tools", "tool_choice", "parallel_tool_calls", "functions",
    "function_call", "stream", "stream_options", "temperature", "top_p", "n", "max_tokens",
    "max_completion_tokens", "stop", "response_format", "seed", "presence_penalty",
    "frequency_penalty", "user", "reasoning_effort", "reasoning_format", "include_reasoning",
    "citation_options", "compound_custom", "disable_tool_validation", "documents",
    "search_settings", "exclude_domains", "include_domains", NULL,
};
/* Rule 49: Cerebras validates the body as strictly as each message and
 * answers any key it does not define with "property 'body.X' is
 * unsupported" (opencode#6648: body.maxTokens, body.thinking). Its API
 * reference (inference-docs.cerebras.ai/api-reference/chat-completions,
 * read in a 2026 copy) defines model, messages, tools, tool_choice,
 * parallel_tool_calls, stream, temperature, top_p, stop, seed,
 * response_format, logprobs, top_logprobs, user, max_completion_tokens,
 * prediction and reasoning_effort; its SDKs add max_tokens, min_tokens,
 * min_completion_tokens, n and stream_options, and its reasoning guide
 * reasoning_format, disable_reasoning and clear_thinking. cerebras_deny
 * still drops what some of its models refuse. */
static const char *const cerebras_top[] = {
    "model", "messages", "tools", "tool_choice", "parallel_tool_calls", "stream",
    "stream_options", "temperature", "top_p", "stop", "seed", "response_format", "logprobs",
    "top_logprobs", "user", "max_tokens", "max_completion_tokens", "min_tokens",
    "min_completion_tokens", "n", "prediction", "reasoning_effort", "reasoning_format",
    "disable_reasoning", "clear_thinking", NULL,
};
/* Rule 73: xAI's reasoning models refuse three sampling parameters
 * ("Model grok-4.3 does not support parameter presencePenalty",
 * NativeTavern#83; docs.x.ai, reasoning guide, checked 2026-12-06). */
static const char *const xai_reasoning_deny[] = {
    "presence_penalty", "frequency_penalty", "stop", NULL,
};

/* Rule 77: Kimi models (kimi-k2.x, k3) run with sampling the platform fixes
 * and refuse other values ("invalid temperature: only 1 is allowed for this
 * model", tinyhumansai/openhuman#2082, countbot-ai/CountBot#61; k2.6
 * without thinking wants 0.6, HKUDS/nanobot#4967); left out, the API picks
 * the right one. moonshot-v1 models keep them. */
static const char *const kimi_fixed_params[] = {
    "temperature", "top_p", "n", "presence_penalty", "frequency_penalty", NULL,
};

/* Mistral names two OpenAI parameters differently; rebuilding keeps the
 * caller's intent where dropping would lose it. */
static const rename_rule mistral_renames[] = {
    {"seed", "random_seed"}, {"max_completion_tokens", "max_tokens"}, {NULL, NULL},
};

/* Conservative dialects (no strict validation) lose only markers and what is
 * known to break: bookkeeping, foreign tool_calls fields, bad arguments. */
#define MR_LENIENT                                                             \
    (TG_MR_BOOKKEEPING | TG_MR_CALL_EXTRAS | TG_MR_FIX_CALLS | TG_MR_PAIR_CALLS |  \
     TG_MR_LEGACY_FUNCS | TG_MR_TOOL_MEDIA | TG_MR_PDF_TEXT)
/* OpenAI itself still serves the legacy function-calling turns. */
#define MR_OPENAI (MR_LENIENT & ~(TG_MR_LEGACY_FUNCS | TG_MR_PDF_TEXT))
#define MR_STRICT                                                              \
    (MR_LENIENT | TG_MR_ALLOWLIST | TG_MR_CALL_SHAPE | TG_MR_DROP_CACHE |      \
     TG_MR_FIX_CONTENT | TG_MR_TOP_LEVEL)

/* The presets the rows of core/dialect.h name. */
/* Rule 55: every dialect that is not a plain template turns a null content
 * into "" where the API wants a string (OpenAI: "expected a string, got
 * null" on an assistant turn without calls, vercel/ai#13744). */
#define MSG_OPENAI                                                                          \
    {MR_OPENAI | TG_MR_TOP_LEVEL | TG_MR_FIX_CONTENT | TG_MR_SHORT_IDS |                    \
         TG_MR_COMPLETION_TOKENS,                                                           \
     NULL, "section 4.1", openai_top, NULL, \
     NULL, "rule 67"}
/* Vertex's OpenAI-compatible endpoint fronts the same models as Gemini's:
 * the same thought signatures (R19) and top-level set (section 6, Vertex) */
#define MSG_GEMINI                                                                          \
    {MR_LENIENT | TG_MR_KEEP_SIGNATURE | TG_MR_FILL_SIGNATURE | TG_MR_DROP_REASONING |      \
         TG_MR_DROP_CACHE | TG_MR_TOP_LEVEL | TG_MR_SYSTEM_FIRST | TG_MR_FIX_CONTENT |      \
         TG_MR_NULL_KEYS,                                                                   \
     NULL, "section 4.2", gemini_top, NULL, NULL, "rule 36"}
#define MSG_ANTHROPIC                                                                       \
    {(MR_LENIENT & ~TG_MR_PDF_TEXT) | TG_MR_ANTHROPIC_IDS | TG_MR_EMPTY_TEXT |             \
         TG_MR_DROP_EMPTY, NULL,                                                            \
     "section 4 anthropic", NULL, NULL, NULL, NULL}
#define MSG_MISTRAL                                                                         \
    {MR_STRICT | TG_MR_DROP_NULLS | TG_MR_MISTRAL_IDS | TG_MR_ROLE_ORDER | TG_MR_DROP_EMPTY | \
         TG_MR_DEVELOPER_ROLE | TG_MR_SYSTEM_FIRST,                                         \
     tg_hy_mistral_roles, "rule 43", mistral_top, NULL, mistral_renames, "section 4 mistral"}
#define MSG_GROQ                                                                            \
    {MR_STRICT | TG_MR_DROP_NULLS | TG_MR_JSON_MODE_TOOLS | TG_MR_STRING_CONTENT |          \
         TG_MR_EFFORT_TOP | TG_MR_EFFORT_FLOOR,                                             \
     tg_hy_groq_roles, "rule 47", groq_top, NULL, NULL, "rule 49"}
#define MSG_FIREWORKS                                                                       \
    {MR_STRICT, tg_hy_openai_roles, "rule 47", NULL, fireworks_deny, NULL, "section 4 fireworks"}
#define MSG_CEREBRAS                                                                        \
    {MR_STRICT | TG_MR_DROP_NULLS | TG_MR_STRING_CONTENT, tg_hy_openai_roles, "rule 47",          \
     cerebras_top, cerebras_deny, NULL, "rule 49"}
/* Rule 78 on DeepSeek: its thinking models refuse a forced tool_choice. */
#define MSG_DEEPSEEK                                                                        \
    {MR_LENIENT | TG_MR_KEEP_REASONING | TG_MR_FIX_CONTENT | TG_MR_STRING_CONTENT |         \
         TG_MR_THINKING_CHOICE | TG_MR_TEXT_ONLY | TG_MR_SCHEMA_AS_OBJECT,                  \
     NULL, "rule 52", NULL, NULL, NULL, NULL}
#define MSG_LENIENT {MR_LENIENT | TG_MR_FIX_CONTENT, NULL, "section 4.1", NULL, NULL, NULL, NULL}
#define MSG_XAI                                                                             \
    {MR_LENIENT | TG_MR_FIX_CONTENT | TG_MR_TOP_LEVEL | TG_MR_REASONING_PARAMS |           \
         TG_MR_ONE_TEXT | TG_MR_NAME_USER_ONLY | TG_MR_EMPTY_TURNS | TG_MR_NULL_WITH_CALLS, \
     NULL,                                                                                  \
     "section 4.1", NULL, NULL, NULL, "rule 75"}
#define MSG_OLLAMA                                                                          \
    {MR_LENIENT | TG_MR_FIX_CONTENT | TG_MR_NULL_WITH_CALLS | TG_MR_SYSTEM_FIRST |          \
         TG_MR_ONE_SYSTEM | TG_MR_STRING_CONTENT,                                           \
     NULL, "rule 55", NULL, NULL, NULL, NULL}
/* Rule 55: the local servers this dialect stands for take "" beside calls,
 * and LM Studio refuses null there (lmstudio-bug-tracker#261). */
#define MSG_VLLM                                                                            \
    {MR_LENIENT | TG_MR_FIX_CONTENT | TG_MR_NULL_WITH_CALLS | TG_MR_SYSTEM_FIRST |           \
         TG_MR_ONE_SYSTEM,                                                                  \
     NULL, "rule 56", NULL, NULL, NULL, "rule 56"}
/* Moonshot (Kimi): thinking models want their reasoning_content back on
 * tool-call turns like DeepSeek's (rule 79), fix their sampling (rule 77),
 * take no forced tool_choice while thinking (rule 78) and no effort above
 * high (rule 91). */
#define MSG_MOONSHOT                                                                        \
    {MR_LENIENT | TG_MR_KEEP_REASONING | TG_MR_FIX_CONTENT | TG_MR_TOP_LEVEL |              \
         TG_MR_FIXED_SAMPLING | TG_MR_THINKING_CHOICE | TG_MR_EFFORT_TOP,                   \
     NULL, "rule 79", NULL, NULL, NULL, "rule 77"}
#define MSG_NONE {0, NULL, "markers", NULL, NULL, NULL, NULL}

#define ROW(id, name, features, schema, msg, repair) [id] = msg,
static const dialect_row presets[TG_D_COUNT] = {TG_DIALECTS(ROW)};
#undef ROW

/* The conf keys a user plausibly toggles, `messages.<name> = on|off`. */
static const tg_rule_name conf_rules[] = {
    {"strip_unknown", TG_MR_ALLOWLIST | TG_MR_CALL_SHAPE},
    {"bookkeeping", TG_MR_BOOKKEEPING | TG_MR_CALL_EXTRAS},
    {"drop_nulls", TG_MR_DROP_NULLS | TG_MR_NULL_KEYS},
    {"drop_reasoning", TG_MR_DROP_REASONING},
    {"keep_reasoning", TG_MR_KEEP_REASONING},
    {"keep_signatures", TG_MR_KEEP_SIGNATURE},
    {"drop_cache_control", TG_MR_DROP_CACHE},
    {"fix_tool_calls", TG_MR_FIX_CALLS},
    {"fix_content", TG_MR_FIX_CONTENT},
    {"mistral_ids", TG_MR_MISTRAL_IDS},
    {"anthropic_ids", TG_MR_ANTHROPIC_IDS},
    {"short_ids", TG_MR_SHORT_IDS},
    {"completion_tokens", TG_MR_COMPLETION_TOKENS},
    {"role_order", TG_MR_ROLE_ORDER},
    {"drop_empty_assistant", TG_MR_DROP_EMPTY},
    {"empty_text", TG_MR_EMPTY_TEXT},
    {"developer_role", TG_MR_DEVELOPER_ROLE},
    {"top_level", TG_MR_TOP_LEVEL},
    {"pair_tool_calls", TG_MR_PAIR_CALLS},
    {"legacy_functions", TG_MR_LEGACY_FUNCS},
    {"json_mode_with_tools", TG_MR_JSON_MODE_TOOLS},
    {"fill_signatures", TG_MR_FILL_SIGNATURE},
    {"system_first", TG_MR_SYSTEM_FIRST},
    {"null_with_calls", TG_MR_NULL_WITH_CALLS},
    {"string_content", TG_MR_STRING_CONTENT},
    {"text_only", TG_MR_TEXT_ONLY},
    {"one_system", TG_MR_ONE_SYSTEM},
    {"no_tool_parser", TG_MR_NO_AUTO_CHOICE},
    {"reasoning_params", TG_MR_REASONING_PARAMS},
    {"fixed_sampling", TG_MR_FIXED_SAMPLING},
    {"thinking_choice", TG_MR_THINKING_CHOICE},
    {"one_text_part", TG_MR_ONE_TEXT},
    {"name_user_only", TG_MR_NAME_USER_ONLY},
    {"empty_turns", TG_MR_EMPTY_TURNS},
    {"effort_top", TG_MR_EFFORT_TOP},
    {"tool_media", TG_MR_TOOL_MEDIA},
    {"schema_as_object", TG_MR_SCHEMA_AS_OBJECT},
    {"effort_floor", TG_MR_EFFORT_FLOOR},
    {"pdf_text", TG_MR_PDF_TEXT},
};
static const tg_rule_section section = {"messages", conf_rules,
                                        sizeof conf_rules / sizeof *conf_rules, NULL};

/* ---- rules from the conf ----------------------------------------------- */

void tg_msg_rules_preset(tg_dialect d, tg_msg_rules *out)
{
    memset(out, 0, sizeof *out);
    if (d < 0 || d >= TG_D_COUNT)
        d = TG_D_PASSTHROUGH;
    out->dialect = d;
    out->flags = presets[d].flags;
}

int tg_msg_rules_set(tg_msg_rules *r, const char *key, const char *value,
                     char *msg, size_t msglen)
{
    return tg_rule_apply(&section, key, value, &r->flags, msg, msglen);
}

/* ---- top level (rules 36, 48, 49) --------------------------------------- */

static void apply_renames(walk *w, json_t *body)
{
    for (const rename_rule *rn = w->row->top_rename; rn && rn->from; rn++) {
        json_t *v = json_object_get(body, rn->from);
        if (!v)
            continue;
        if (json_object_get(body, rn->to)) {  /* the target's own key wins */
            drop_key(w, body, rn->from, v, "top-level", w->row->top_rule);
            continue;
        }
        rebuild_key(w, body, rn->to, json_incref(v), "rename", w->row->top_rule);
        size_t mark = jp_key(&w->ptr, rn->from);
        note(w, w->ptr.s, "rename", w->row->top_rule, v, NULL);
        jp_pop(&w->ptr, mark);
        json_object_del(body, rn->from);  /* moved, not removed: not counted */
    }
}

/* A top-level parameter the target refuses goes, and the agent is told:
 * its name is listed in X-Toolgate-Dropped (ctx->dropped). */
static void drop_param(walk *w, json_t *body, const char *key, json_t *val, const char *name,
                       const char *ref)
{
    if (!w->ctx->dropped)
        w->ctx->dropped = json_array();
    json_array_append_new(w->ctx->dropped, json_string(key));
    drop_key(w, body, key, val, name, ref);
}

/* Rule 85: OpenAI's reasoning models (o1, o3, o4, the gpt-5 family, under
 * a gateway's "openai/" too) refuse max_tokens ("Unsupported parameter:
 * 'max_tokens' is not supported with this model. Use
 * 'max_completion_tokens' instead."); the limit goes under the name they
 * read. Older models keep max_tokens, which every OpenAI-compatible
 * server reads. */
static bool openai_reasoning_model(const char *model)
{
    static const char *const families[] = {"o1", "o3", "o4", "gpt-5", NULL};
    const char *slash = model ? strrchr(model, '/') : NULL;
    const char *m = slash ? slash + 1 : model;
    for (const char *const *f = families; m && *f; f++) {
        size_t n = strlen(*f);
        if (!strncmp(m, *f, n) && (!m[n] || m[n] == '-' || m[n] == '.'))
            return true;
    }
    return false;
}

static void completion_tokens(walk *w, json_t *body)
{
    json_t *v = json_object_get(body, "max_tokens");
    if (!v || !openai_reasoning_model(json_string_value(json_object_get(body, "model"))))
        return;
    if (!json_object_get(body, "max_completion_tokens"))
        rebuild_key(w, body, "max_completion_tokens", json_incref(v), "rename", "rule 85");
    size_t mark = jp_key(&w->ptr, "max_tokens");
    note(w, w->ptr.s, "rename", "rule 85", v, NULL);
    jp_pop(&w->ptr, mark);
    json_object_del(body, "max_tokens");  /* moved, not removed: not counted */
}

/* Rule 73 (xAI): Grok's reasoning models, which are all current ones but
 * those named non-reasoning, grok-2 and grok-3 without mini. */
static bool xai_reasoning_model(const char *model)
{
    if (!model || strstr(model, "non-reasoning") || !strncmp(model, "grok-2", 6))
        return false;
    if (!strncmp(model, "grok-3", 6) && !strstr(model, "mini"))
        return false;
    return strstr(model, "grok") != NULL;
}

/* Rule 75: reasoning_effort is taken by grok-3-mini and the dotted Grok 4
 * releases from 4.3 on (grok-4.3, grok-4.5: docs.x.ai reasoning guide);
 * grok-4, grok-4-fast, grok-4-1-fast and grok-code-fast, which pick
 * reasoning by model id, refuse it ("Argument not supported on this model:
 * reasoningEffort", charmbracelet/crush#386), as do the models that do not
 * reason at all. */
static bool xai_effort_refused(const char *model)
{
    const char *g = model ? strstr(model, "grok") : NULL;
    if (!g)
        return false;
    if (strstr(g, "grok-3-mini"))
        return false;
    /* an id that names its reasoning mode picks it by itself, a dotted
     * release too: "Model grok-4.20-0309-reasoning does not support
     * parameter reasoningEffort." (chenyme/grok2api#814) */
    if (strstr(g, "reasoning"))
        return true;
    const char *four = strstr(g, "grok-4.");
    if (!four || four[7] < '0' || four[7] > '9')
        return true;
    long minor = strtol(four + 7, NULL, 10);  /* 4.3, 4.5, 4.20 take it */
    return minor < 3;
}

/* Rule 77: a parameter a Kimi model refuses; reasoning_effort beside a
 * thinking object is refused on every model ("cannot specify both
 * 'thinking' and 'reasoning_effort'", HKUDS/nanobot#3939). */
static bool kimi_fixed(json_t *body, const char *key)
{
    if (!strcmp(key, "reasoning_effort"))
        return tg_json_get(body, "thinking") != NULL;
    const char *model = json_string_value(tg_json_get(body, "model"));
    return model && !strncmp(model, "kimi-", 5) && in_list(kimi_fixed_params, key);
}

/* Rule 78: with thinking on (the default of every Kimi model; only an
 * explicit {"type": "disabled"} turns it off) Moonshot refuses a forced
 * choice: "tool_choice 'required' is incompatible with thinking enabled"
 * (AstrBotDevs/AstrBot#7805), "tool_choice specified is incompatible ..."
 * for a named tool (can1357/oh-my-pi#1077). The nearest choice it takes is
 * "auto", with only the named tool offered when one was named; the model
 * may then answer without a call, so the change is said in
 * X-Toolgate-Translated and the explain log. */
/* Is thinking on? An explicit {"type": ...} says; without one every Kimi
 * model thinks, and of DeepSeek's models those that think by default:
 * deepseek-reasoner and the V4 models (deepseek-v4-flash, -pro), whose
 * forced choice is "Thinking mode does not support this tool_choice" or
 * "deepseek-reasoner does not support this tool_choice" (oh-my-pi#7315,
 * #945); deepseek-chat is the non-thinking mode. */
static bool thinking_on(json_t *body)
{
    const char *think = json_string_value(tg_json_get(tg_json_get(body, "thinking"), "type"));
    if (think)
        return strcmp(think, "disabled") != 0;
    const char *model = json_string_value(tg_json_get(body, "model"));
    const char *ds = model ? strstr(model, "deepseek") : NULL;  /* also "deepseek/..." ids */
    if (!ds)
        return true;
    return strstr(ds, "reasoner") || strstr(ds, "v4") || strstr(ds, "V4") || strstr(ds, "-r1");
}

static void thinking_choice(walk *w, json_t *body)
{
    json_t *tc = tg_json_get(body, "tool_choice");
    const char *mode = json_string_value(tc);
    if (!thinking_on(body))
        return;
    const char *named = json_string_value(tg_json_get(tg_json_get(tc, "function"), "name"));
    if (!(mode && (!strcmp(mode, "required") || !strcmp(mode, "any"))) && !named)
        return;
    const json_t *one = named ? tg_tool_peek(tg_json_get(body, "tools"), named) : NULL;
    if (one)  /* a new array: tools may be shared */
        json_object_set_new(body, "tools", json_pack("[O]", one));
    tg_ctx_translated(w->ctx, "tool_choice", named ? named : "required");
    /* last: `named` lives in the tool_choice this replaces */
    rebuild_key(w, body, "tool_choice", json_string("auto"), "thinking-choice", "rule 78");
}

/* Rule 91: OpenAI's and Anthropic's levels above high (xhigh, max) on a
 * target whose reasoning_effort tops out at high: "expected one of 'low' |
 * 'medium' | 'high', received 'xhigh'" (Kimi, router-for-me/CLIProxyAPI#1307).
 * The nearest level it takes is high; said in X-Toolgate-Translated. */
static void effort_top(walk *w, json_t *body)
{
    const char *e = json_string_value(tg_json_get(body, "reasoning_effort"));
    const char *model = json_string_value(tg_json_get(body, "model"));
    /* rule 98: gpt-oss on Groq takes low, medium and high only ("none"
     * fails validation, DataTalksClub/llm-zoomcamp#184): OpenAI's levels
     * below low go as low */
    bool floor = (w->f & TG_MR_EFFORT_FLOOR) && model && strstr(model, "gpt-oss") && e &&
                 (!strcmp(e, "none") || !strcmp(e, "minimal"));
    if (!e || (!floor && strcmp(e, "xhigh") && strcmp(e, "max")))
        return;
    tg_ctx_translated(w->ctx, "reasoning_effort", e);
    /* last: `e` lives in the value this replaces */
    if (floor)
        rebuild_key(w, body, "reasoning_effort", json_string("low"), "effort-below-low", "rule 98");
    else
        rebuild_key(w, body, "reasoning_effort", json_string("high"), "effort-above-high",
                    "rule 91");
}

/* Rule 97: DeepSeek's response_format is text or json_object ("This
 * response_format type is unavailable now", llm-exe/llm-exe#662): a
 * json_schema goes as json_object, and its schema, which the model then
 * follows only by being told, joins the leading system turn (the word
 * JSON that DeepSeek's JSON mode wants in the prompt comes with it). */
static void schema_as_object(walk *w, json_t *body)
{
    json_t *rf = tg_json_get(body, "response_format");
    const char *t = json_string_value(tg_json_get(rf, "type"));
    if (!t || strcmp(t, "json_schema"))
        return;
    json_t *schema = tg_json_get(tg_json_get(rf, "json_schema"), "schema");
    char *text = json_is_object(schema) ? tg_json_dumps(schema) : NULL;
    tg_buf b = {0};
    tg_buf_printf(&b, "Answer with one JSON object%s%s", text ? " that matches this JSON Schema: " : ".",
                  text ? text : "");
    free(text);
    json_t *msgs = tg_json_get(body, "messages");
    json_t *first = json_array_get(msgs, 0);
    json_t *c = tg_json_get(first, "content");
    const char *who = json_string_value(tg_json_get(first, "role"));
    if (who && !strcmp(who, "system") && json_is_string(c)) {
        json_t *now = json_sprintf("%s\n\n%s", json_string_value(c), b.data);
        note(w, "/messages/0/content", "json-schema-in-system", "rule 97", c, now);
        json_object_set_new(first, "content", now);
    } else if (json_is_array(msgs)) {
        json_t *sys = json_pack("{s:s, s:s}", "role", "system", "content", b.data);
        note(w, "/messages/0", "json-schema-in-system", "rule 97", NULL, sys);
        json_array_insert_new(msgs, 0, sys);
    }
    tg_buf_free(&b);
    tg_ctx_translated(w->ctx, "response_format", "json_object, the schema in the system turn");
    rebuild_key(w, body, "response_format", json_pack("{s:s}", "type", "json_object"),
                "json-schema-as-object", "rule 97");
}

/* Why a top-level key goes (NULL: it stays); *ref gets the rule. */
static const char *top_verdict(const walk *w, json_t *body, const char *key, json_t *val,
                               const char **ref)
{
    *ref = w->row->top_rule;
    if (w->row->top_allow && !in_list(w->row->top_allow, key))
        return "top-level";
    if (in_list(w->row->top_deny, key))
        return "top-level";
    /* Gemini's compat endpoint reads extra_body only as Google's own
     * extension, {"google": {...}}; anything else in it (an SDK's
     * extra_body left in the body) is "Unknown name" (SkyrimNet#77) */
    if (w->row->top_allow == gemini_top && !strcmp(key, "extra_body") &&
        !(json_is_object(val) && tg_json_get(val, "google") && json_object_size(val) == 1))
        return "top-level";
    if ((w->f & TG_MR_REASONING_PARAMS) && in_list(xai_reasoning_deny, key) &&
        xai_reasoning_model(json_string_value(tg_json_get(body, "model"))))
        return *ref = "rule 75", "reasoning-model-param";
    if ((w->f & TG_MR_REASONING_PARAMS) && !strcmp(key, "reasoning_effort") &&
        xai_effort_refused(json_string_value(tg_json_get(body, "model"))))
        return *ref = "rule 75", "reasoning-effort-refused";
    if ((w->f & TG_MR_FIXED_SAMPLING) && kimi_fixed(body, key))
        return *ref = "rule 77", "fixed-sampling";
    if ((w->f & TG_MR_NO_AUTO_CHOICE) && !strcmp(key, "tool_choice") && json_is_string(val) &&
        !strcmp(json_string_value(val), "auto"))
        /* vLLM: "\"auto\" tool choice requires --enable-auto-tool-choice
         * and --tool-call-parser to be set"; without it the tools still
         * reach the template and R12 reads calls from the text */
        return *ref = "rule 56", "auto-choice-without-parser";
    return NULL;
}

static bool json_only_beside_tools(json_t *body, const char *key, json_t *val)
{
    const char *t = json_string_value(tg_json_get(val, "type"));
    return !strcmp(key, "response_format") && t && !strcmp(t, "json_object") &&
           json_array_size(tg_json_get(body, "tools")) > 0;
}

static void clean_top(walk *w, json_t *body)
{
    const char *key, *why, *ref;
    json_t *val;
    void *tmp;

    w->where = "body";
    jp_pop(&w->ptr, 0);
    bool top = (w->f & TG_MR_TOP_LEVEL) != 0;
    if (top)
        apply_renames(w, body);
    if (w->f & TG_MR_COMPLETION_TOKENS)
        completion_tokens(w, body);
    if (w->f & TG_MR_THINKING_CHOICE)
        thinking_choice(w, body);
    if (w->f & (TG_MR_EFFORT_TOP | TG_MR_EFFORT_FLOOR))
        effort_top(w, body);
    if (w->f & TG_MR_SCHEMA_AS_OBJECT)
        schema_as_object(w, body);
    json_object_foreach_safe(body, tmp, key, val) {
        if (is_marker(w, key))
            drop_key(w, body, key, val, "marker", "section 4.1");
        else if (!strcmp(key, "messages"))
            continue;
        else if ((w->f & TG_MR_JSON_MODE_TOOLS) && json_only_beside_tools(body, key, val))
            /* Groq: "response_format json_object cannot be combined with
             * tool/function calling" (section 4): the tools win */
            drop_key(w, body, key, val, "json-object-with-tools", "section 4 groq");
        else if (w->drop && in_list((const char *const *)w->drop, key))
            /* the conf's word: a provider that refuses what its dialect
             * keeps (Azure AI Foundry's DeepSeek and prompt_cache_key) */
            drop_param(w, body, key, val, "drop-params", "route drop_params");
        else if ((top || !strcmp(key, "tool_choice")) && (why = top_verdict(w, body, key, val, &ref)))
            drop_param(w, body, key, val, why, ref);
        else if (tg_hy_drop_null(w, key, val))
            drop_key(w, body, key, val, "null-key", tg_hy_null_rule(w));
    }
}

/* ---- legacy functions at the top level ---------------------------------- */

/* The function-calling API before tools: functions[] and function_call.
 * Only OpenAI still reads them; Gemini has no field for them (rule 36) and
 * Mistral's model forbids them (rule 43), so an allow-list would drop the
 * agent's every tool without a word. On a route that rewrites the legacy
 * history (TG_MR_LEGACY_FUNCS) they become tools[] and tool_choice before
 * anything else runs, so the schema, name and discovery stages treat them
 * as any tool, and ctx->legacy_functions has the response stages answer in
 * the shape such an agent reads (tg_repair_legacy_answer). One call
 * per turn is all that shape can say: parallel_tool_calls goes false. */

/* Functions that cannot become tools are the stage's one refusal. */
static int bad_functions(json_t *fns, tg_error *err)
{
    if (!json_is_array(fns)) {
        tg_error_set(err, 400, "invalid_request_error", "invalid_type", "functions",
                     "'functions' must be an array of function objects");
        return -1;
    }
    size_t i;
    json_t *f;
    json_array_foreach(fns, i, f) {
        if (!tg_json_is(tg_json_get(f, "name"), JSON_STRING)) {
            char param[64];
            snprintf(param, sizeof param, "functions[%zu].name", i);
            tg_error_set(err, 400, "invalid_request_error", "invalid_type", param,
                         "'%s' must be a string", param);
            return -1;
        }
    }
    return 0;
}

static int legacy_functions_to_tools(walk *w, json_t *body, tg_error *err)
{
    json_t *fns = tg_json_get(body, "functions");
    json_t *fc = tg_json_get(body, "function_call");
    if (fns && bad_functions(fns, err))
        return -1;
    w->where = "body";
    jp_pop(&w->ptr, 0);
    if (json_is_array(fns) && json_array_size(fns)) {
        json_t *tools = tg_json_get(body, "tools");
        json_t *now = json_is_array(tools) ? json_copy(tools) : json_array();
        size_t i;
        json_t *f;
        json_array_foreach(fns, i, f) {
            const char *name = json_string_value(tg_json_get(f, "name"));
            if (tg_tool_peek(now, name))
                continue;  /* the same function declared both ways */
            json_array_append_new(now, json_pack("{s:s, s:O}", "type", "function", "function", f));
        }
        rebuild_key(w, body, "tools", now, "legacy-functions", "rule 43");
        json_object_del(body, "functions");
        if (!tg_json_get(body, "parallel_tool_calls"))
            json_object_set_new(body, "parallel_tool_calls", json_false());
        w->ctx->legacy_functions = true;
    }
    if (fc && !tg_json_get(body, "tool_choice") &&
        json_array_size(tg_json_get(body, "tools"))) {
        json_t *choice = NULL;
        if (json_is_string(fc))  /* "none" and "auto" mean the same for tools */
            choice = json_incref(fc);
        else if (tg_json_is(tg_json_get(fc, "name"), JSON_STRING))
            choice = json_pack("{s:s, s:{s:O}}", "type", "function", "function", "name",
                               tg_json_get(fc, "name"));
        if (choice)
            rebuild_key(w, body, "tool_choice", choice, "legacy-function-call", "rule 43");
    }
    if (fc)
        json_object_del(body, "function_call");
    return 0;
}

/* ---- the stage ---------------------------------------------------------- */

/* A walk with the route's rules (its preset when the ctx has none). Field
 * by field: the pointer's 512 bytes need only their first (an initializer
 * zeroed and copied them all, a tenth of a short message's walk). */
static void walk_init(walk *w, tg_ctx *ctx)
{
    tg_msg_rules fallback;
    const tg_msg_rules *rules = ctx->msg;
    if (!rules) {
        tg_msg_rules_preset(ctx->dialect, &fallback);
        rules = &fallback;
    }
    tg_dialect d = rules->dialect;
    if (d < 0 || d >= TG_D_COUNT)
        d = TG_D_PASSTHROUGH;
    w->ctx = ctx;
    w->row = &presets[d];
    w->f = rules->flags;
    w->drop = rules->drop;
    w->prefix = NULL;
    w->plen = 0;
    w->id_fwd = w->id_used = NULL;
    w->where = NULL;
    w->fill_signature = w->last = false;
    w->role = 0;
    w->ptr.n = 0;
    w->ptr.s[0] = '\0';
    if (ctx->strip_prefix && *ctx->strip_prefix) {
        w->prefix = ctx->strip_prefix;
        w->plen = strlen(ctx->strip_prefix);
    }
}

/* One assistant turn toolgate builds from the provider's own answer (a
 * discovery round, discovery.c): what it carried (thought signatures,
 * reasoning) goes back as it came where the dialect keeps it, and goes
 * where the dialect refuses it, by the same rules as the agent's turns.
 * Its ids are the provider's already: no mapping. */
void tg_hygiene_replayed(json_t *msg, tg_ctx *ctx)
{
    walk w;
    walk_init(&w, ctx);
    w.f &= ~(TG_MR_MISTRAL_IDS | TG_MR_ANTHROPIC_IDS | TG_MR_SHORT_IDS);
    w.fill_signature = (w.f & TG_MR_FILL_SIGNATURE) &&
                       tg_hy_model_checks_signatures(json_string_value(
                           tg_json_get(ctx->request, "model")));
    w.where = "round";
    w.last = true;
    tg_hy_clean_message(&w, msg);
}

int tg_hygiene_stage(json_t *body, tg_ctx *ctx, tg_error *err)
{
    if (!json_is_object(body))
        return 0;
    walk w;
    walk_init(&w, ctx);
    /* the one refusal: legacy functions that cannot become tools */
    if ((w.f & TG_MR_LEGACY_FUNCS) && legacy_functions_to_tools(&w, body, err))
        return -1;
    w.fill_signature = (w.f & TG_MR_FILL_SIGNATURE) &&
                       tg_hy_model_checks_signatures(json_string_value(tg_json_get(body, "model")));
    clean_top(&w, body);
    tg_hy_pair_tool_calls(&w, body);
    tg_hy_walk_messages(&w, body);
    json_decref(w.id_fwd);
    json_decref(w.id_used);
    return 0;
}
