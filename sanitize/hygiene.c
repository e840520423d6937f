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
 */
#include "sanitize/hygiene.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/ctx.h"
#include "core/hash.h"
#include "core/jsonfix.h"
#include "core/jsonio.h"
#include "core/rules.h"

/* ---- the data ---------------------------------------------------------- */

typedef struct role_keys {
    const char *role;
    const char *const *keys;  /* NULL-terminated */
} role_keys;

/* Rule 47: the OpenAI message schema as Groq, Fireworks and Cerebras check
 * it. "function" is the legacy role with the same shape as user. */
static const char *const oa_plain[] = {"role", "content", "name", NULL};
static const char *const oa_assistant[] = {"role", "content", "name", "tool_calls", NULL};
static const char *const oa_tool[] = {"role", "content", "tool_call_id", NULL};
static const role_keys openai_roles[] = {
    {"system", oa_plain},  {"developer", oa_plain},       {"user", oa_plain},
    {"function", oa_plain}, {"assistant", oa_assistant}, {"tool", oa_tool},
    {NULL, NULL},
};
/* Rules 47, 49: Groq refuses `messages[].name` with a 400 on every role
 * (console.groq.com/docs/openai, "Currently Unsupported OpenAI Features",
 * checked 2026-12-06). */
static const char *const gq_plain[] = {"role", "content", NULL};
static const char *const gq_assistant[] = {"role", "content", "tool_calls", NULL};
static const role_keys groq_roles[] = {
    {"system", gq_plain},  {"developer", gq_plain},       {"user", gq_plain},
    {"function", gq_plain}, {"assistant", gq_assistant}, {"tool", oa_tool},
    {NULL, NULL},
};

/* Rule 43: Mistral's pydantic models (extra="forbid"); `name` only on tool. */
static const char *const mi_plain[] = {"role", "content", NULL};
static const char *const mi_assistant[] = {"role", "content", "tool_calls", "prefix", NULL};
static const char *const mi_tool[] = {"role", "content", "tool_call_id", "name", NULL};
static const role_keys mistral_roles[] = {
    {"system", mi_plain}, {"user", mi_plain}, {"assistant", mi_assistant},
    {"tool", mi_tool},    {NULL, NULL},
};

/* Section 4.1: message keys that are an agent's own records, never part of
 * any chat-completions message schema. */
static const char *const bookkeeping_keys[] = {
    "tool_name", "timestamp", "metadata", "status", "id", "api_content",
    "effect_disposition", "parsed", "codex_reasoning_items",
    "codex_message_items", NULL,
};
static const char *const reasoning_keys[] = {
    "reasoning", "reasoning_content", "reasoning_details", "reasoning_text", NULL,
};
/* Section 4.1: tool_calls[] fields from other APIs (Responses, Gemini). */
static const char *const call_extra_keys[] = {
    "extra_content", "call_id", "response_item_id", "index", "name", NULL,
};
static const char *const call_keys[] = {"id", "type", "function", NULL};
static const char *const function_keys[] = {"name", "arguments", NULL};

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
 * body) has no equivalent there and goes, said in X-Toolgate-Dropped. */
static const char *const openai_top[] = {
    "model", "messages", "tools", "tool_choice", "parallel_tool_calls", "functions",
    "function_call", "stream", "stream_options", "temperature", "top_p", "n", "max_tokens",
    "max_completion_tokens", "stop", "response_format", "seed", "presence_penalty",
    "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "user", "safety_identifier",
    "store", "metadata", "service_tier", "prompt_cache_key", "prompt_cache_retention",
    "reasoning_effort", "verbosity", "modalities", "audio", "prediction", "web_search_options",
    NULL,
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

typedef struct rename_rule {
    const char *from, *to;
} rename_rule;
/* Mistral names two OpenAI parameters differently; rebuilding keeps the
 * caller's intent where dropping would lose it. */
static const rename_rule mistral_renames[] = {
    {"seed", "random_seed"}, {"max_completion_tokens", "max_tokens"}, {NULL, NULL},
};

typedef struct dialect_row {
    unsigned flags;
    const role_keys *roles;        /* allow-lists for TG_MR_ALLOWLIST */
    const char *msg_rule;          /* rule the message checks cite */
    const char *const *top_allow;  /* NULL: no top-level allow-list */
    const char *const *top_deny;
    const rename_rule *top_rename;
    const char *top_rule;
} dialect_row;

/* Conservative dialects (no strict validation) lose only markers and what is
 * known to break: bookkeeping, foreign tool_calls fields, bad arguments. */
#define MR_LENIENT                                                             \
    (TG_MR_BOOKKEEPING | TG_MR_CALL_EXTRAS | TG_MR_FIX_CALLS | TG_MR_PAIR_CALLS |  \
     TG_MR_LEGACY_FUNCS)
/* OpenAI itself still serves the legacy function-calling turns. */
#define MR_OPENAI (MR_LENIENT & ~TG_MR_LEGACY_FUNCS)
#define MR_STRICT                                                              \
    (MR_LENIENT | TG_MR_ALLOWLIST | TG_MR_CALL_SHAPE | TG_MR_DROP_CACHE |      \
     TG_MR_FIX_CONTENT | TG_MR_TOP_LEVEL)

/* The presets the rows of core/dialect.h name. */
/* Rule 55: every dialect that is not a plain template turns a null content
 * into "" where the API wants a string (OpenAI: "expected a string, got
 * null" on an assistant turn without calls, vercel/ai#13744). */
#define MSG_OPENAI                                                                          \
    {MR_OPENAI | TG_MR_TOP_LEVEL | TG_MR_FIX_CONTENT, NULL, "section 4.1", openai_top, NULL, \
     NULL, "rule 67"}
/* Vertex's OpenAI-compatible endpoint fronts the same models as Gemini's:
 * the same thought signatures (R19) and top-level set (section 6, Vertex) */
#define MSG_GEMINI                                                                          \
    {MR_LENIENT | TG_MR_KEEP_SIGNATURE | TG_MR_FILL_SIGNATURE | TG_MR_DROP_REASONING |      \
         TG_MR_DROP_CACHE | TG_MR_TOP_LEVEL | TG_MR_SYSTEM_FIRST | TG_MR_FIX_CONTENT,       \
     NULL, "section 4.2", gemini_top, NULL, NULL, "rule 36"}
#define MSG_ANTHROPIC                                                                       \
    {MR_LENIENT | TG_MR_ANTHROPIC_IDS | TG_MR_EMPTY_TEXT | TG_MR_DROP_EMPTY, NULL,          \
     "section 4 anthropic", NULL, NULL, NULL, NULL}
#define MSG_MISTRAL                                                                         \
    {MR_STRICT | TG_MR_DROP_NULLS | TG_MR_MISTRAL_IDS | TG_MR_ROLE_ORDER | TG_MR_DROP_EMPTY | \
         TG_MR_DEVELOPER_ROLE | TG_MR_SYSTEM_FIRST,                                         \
     mistral_roles, "rule 43", mistral_top, NULL, mistral_renames, "section 4 mistral"}
#define MSG_GROQ                                                                            \
    {MR_STRICT | TG_MR_DROP_NULLS | TG_MR_JSON_MODE_TOOLS | TG_MR_STRING_CONTENT,           \
     groq_roles, "rule 47", groq_top, NULL, NULL, "rule 49"}
#define MSG_FIREWORKS                                                                       \
    {MR_STRICT, openai_roles, "rule 47", NULL, fireworks_deny, NULL, "section 4 fireworks"}
#define MSG_CEREBRAS                                                                        \
    {MR_STRICT | TG_MR_DROP_NULLS | TG_MR_STRING_CONTENT, openai_roles, "rule 47", NULL,    \
     cerebras_deny, NULL, "rule 49"}
#define MSG_DEEPSEEK                                                                        \
    {MR_LENIENT | TG_MR_KEEP_REASONING | TG_MR_FIX_CONTENT | TG_MR_STRING_CONTENT, NULL,    \
     "rule 52", NULL, NULL, NULL, NULL}
#define MSG_LENIENT {MR_LENIENT | TG_MR_FIX_CONTENT, NULL, "section 4.1", NULL, NULL, NULL, NULL}
#define MSG_XAI                                                                             \
    {MR_LENIENT | TG_MR_FIX_CONTENT | TG_MR_TOP_LEVEL | TG_MR_REASONING_PARAMS |           \
         TG_MR_ONE_TEXT,                                                                    \
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
 * tool-call turns like DeepSeek's (rule 79), fix their sampling (rule 77)
 * and take no forced tool_choice while thinking (rule 78). */
#define MSG_MOONSHOT                                                                        \
    {MR_LENIENT | TG_MR_KEEP_REASONING | TG_MR_FIX_CONTENT | TG_MR_TOP_LEVEL |              \
         TG_MR_FIXED_SAMPLING | TG_MR_THINKING_CHOICE,                                      \
     NULL, "rule 79", NULL, NULL, NULL, "rule 77"}
#define MSG_NONE {0, NULL, "markers", NULL, NULL, NULL, NULL}

#define ROW(id, name, features, schema, msg, repair) [id] = msg,
static const dialect_row presets[TG_D_COUNT] = {TG_DIALECTS(ROW)};
#undef ROW

/* The conf keys a user plausibly toggles, `messages.<name> = on|off`. */
static const tg_rule_name conf_rules[] = {
    {"strip_unknown", TG_MR_ALLOWLIST | TG_MR_CALL_SHAPE},
    {"bookkeeping", TG_MR_BOOKKEEPING | TG_MR_CALL_EXTRAS},
    {"drop_nulls", TG_MR_DROP_NULLS},
    {"drop_reasoning", TG_MR_DROP_REASONING},
    {"keep_reasoning", TG_MR_KEEP_REASONING},
    {"keep_signatures", TG_MR_KEEP_SIGNATURE},
    {"drop_cache_control", TG_MR_DROP_CACHE},
    {"fix_tool_calls", TG_MR_FIX_CALLS},
    {"fix_content", TG_MR_FIX_CONTENT},
    {"mistral_ids", TG_MR_MISTRAL_IDS},
    {"anthropic_ids", TG_MR_ANTHROPIC_IDS},
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
    {"one_system", TG_MR_ONE_SYSTEM},
    {"no_tool_parser", TG_MR_NO_AUTO_CHOICE},
    {"reasoning_params", TG_MR_REASONING_PARAMS},
    {"fixed_sampling", TG_MR_FIXED_SAMPLING},
    {"thinking_choice", TG_MR_THINKING_CHOICE},
    {"one_text_part", TG_MR_ONE_TEXT},
};
static const tg_rule_section section = {"messages", conf_rules,
                                        sizeof conf_rules / sizeof *conf_rules, NULL};

/* What Mistral's role order needs between a tool result and a user turn
 * (section 6, Mistral): the shortest assistant turn that says nothing new. */
static const char bridge_text[] = "Done.";

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

/* ---- the walker -------------------------------------------------------- */

/* A JSON pointer under construction (truncated, never overflowed, when a
 * key is absurdly long: it only feeds the explain log). */
typedef struct jptr {
    char s[512];
    size_t n;
} jptr;

static size_t jp_key(jptr *p, const char *key)
{
    size_t old = p->n;
    if (p->n + 1 < sizeof p->s)
        p->s[p->n++] = '/';
    for (; *key && p->n + 2 < sizeof p->s; key++) {
        if (*key == '~' || *key == '/') {  /* RFC 6901 escapes */
            p->s[p->n++] = '~';
            p->s[p->n++] = *key == '~' ? '0' : '1';
        } else {
            p->s[p->n++] = *key;
        }
    }
    p->s[p->n] = '\0';
    return old;
}

/* i in decimal at dst (room for 20 digits), its length returned: the
 * walk names every message it passes, and snprintf cost a thousand
 * instructions a name (three a message). */
static size_t put_index(char *dst, size_t i)
{
    char t[24];
    size_t n = 0;
    do {
        t[n++] = (char)('0' + i % 10);
        i /= 10;
    } while (i);
    for (size_t k = 0; k < n; k++)
        dst[k] = t[n - 1 - k];
    return n;
}

static size_t jp_idx(jptr *p, size_t i)
{
    size_t old = p->n;
    char t[24];
    t[0] = '/';
    size_t w = 1 + put_index(t + 1, i);
    if (w > sizeof p->s - p->n - 1)
        w = sizeof p->s - p->n - 1;
    memcpy(p->s + p->n, t, w);
    p->n += w;
    p->s[p->n] = '\0';
    return old;
}

/* "messages[i]" into where (40 bytes) */
static void message_where(char *where, size_t i)
{
    memcpy(where, "messages[", 9);
    size_t n = 9 + put_index(where + 9, i);
    where[n] = ']';
    where[n + 1] = '\0';
}

static void jp_pop(jptr *p, size_t n)
{
    p->n = n;
    p->s[n] = '\0';
}

typedef struct walk {
    tg_ctx *ctx;
    const dialect_row *row;
    unsigned f;           /* TG_MR_* in force */
    const char *prefix;   /* marker prefix, NULL when disabled */
    size_t plen;
    json_t *id_fwd;       /* agent id -> upstream id, this request */
    json_t *id_used;      /* upstream id -> agent id, this request */
    const char *where;    /* "messages[3]" or "body" */
    bool fill_signature;  /* TG_MR_FILL_SIGNATURE and a model that checks */
    bool last;            /* the message walked is the history's last */
    jptr ptr;
} walk;

/* Rule 43 says it for Mistral, rule 48 for Groq and the others. */
static const char *null_rule(const walk *w)
{
    return w->row->roles == mistral_roles ? "rule 43" : "rule 48";
}

static bool in_list(const char *const *list, const char *key)
{
    for (; list && *list; list++)
        if (!strcmp(*list, key))
            return true;
    return false;
}

static bool is_marker(const walk *w, const char *key)
{
    return w->prefix && !strncmp(key, w->prefix, w->plen);
}

static void note(walk *w, const char *pointer, const char *name, const char *ref,
                 json_t *before, json_t *after)
{
    if (!w->ctx->explain)
        return;
    char rule[96];
    snprintf(rule, sizeof rule, "%s (%s)", name, ref);
    tg_explain_add(w->ctx->explain, "hygiene", w->where, pointer, rule, before, after);
}

/* Removes obj[key] (val is its value), recording it. Safe inside
 * json_object_foreach_safe on obj. */
static void drop_key(walk *w, json_t *obj, const char *key, json_t *val,
                     const char *name, const char *ref)
{
    size_t mark = jp_key(&w->ptr, key);
    note(w, w->ptr.s, name, ref, val, NULL);
    jp_pop(&w->ptr, mark);
    w->ctx->stats.fields_stripped++;
    json_object_del(obj, key);
}

/* Replaces obj[key] by a new value (stolen), recording before and after. */
static void rebuild_key(walk *w, json_t *obj, const char *key, json_t *now,
                        const char *name, const char *ref)
{
    size_t mark = jp_key(&w->ptr, key);
    note(w, w->ptr.s, name, ref, json_object_get(obj, key), now);
    jp_pop(&w->ptr, mark);
    json_object_set_new(obj, key, now);
}

/* ---- tool-call ids (rules 39, 42; section 7) ---------------------------- */

/* Seen by the provider turn after turn: FNV-1a (core/hash.h), fixed. */
static uint64_t fnv1a(const char *s, unsigned salt)
{
    uint64_t h = tg_fnv1a64(TG_FNV1A_OFFSET, s, strlen(s));
    for (; salt; salt /= 10) {  /* a salted retry hashes differently */
        char digit = (char)('0' + salt % 10);
        h = tg_fnv1a64(h, &digit, 1);
    }
    return h;
}

static void base62(uint64_t h, char *out, size_t n)
{
    static const char digits[] =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    for (size_t i = 0; i < n; i++, h /= 62)
        out[i] = digits[h % 62];
    out[n] = '\0';
}

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool mistral_id_ok(const char *id)
{
    size_t n = 0;
    for (; id[n]; n++)
        if (!is_alnum(id[n]))
            return false;
    return n == 9;
}

static bool anthropic_id_ok(const char *id)
{
    if (!*id)
        return false;
    for (; *id; id++)
        if (!is_alnum(*id) && *id != '_' && *id != '-')
            return false;
    return true;
}

/* Candidate number `salt` for id. Anthropic keeps the readable part of a
 * foreign id and adds a hash so that "a.b" and "a:b" stay distinct. */
static const char *candidate_id(const walk *w, const char *id, unsigned salt,
                                char *buf, size_t len)
{
    if (w->f & TG_MR_MISTRAL_IDS) {
        if (!salt && mistral_id_ok(id))
            return id;
        base62(fnv1a(id, salt), buf, 9);
        return buf;
    }
    if (!salt && anthropic_id_ok(id))
        return id;
    size_t n = 0;
    for (; id[n] && n < 40 && n + 12 < len; n++)
        buf[n] = (is_alnum(id[n]) || id[n] == '-') ? id[n] : '_';
    buf[n++] = '_';
    base62(fnv1a(id, salt), buf + n, 9);
    return buf;
}

/* The upstream id for an agent id: the same within the request (table) and
 * across requests (pure function of the id, salted only on a collision). */
static const char *upstream_id(walk *w, const char *id)
{
    json_t *known = json_object_get(w->id_fwd, id);
    if (known)
        return json_string_value(known);
    char buf[64];
    for (unsigned salt = 0;; salt++) {
        const char *c = candidate_id(w, id, salt, buf, sizeof buf);
        json_t *owner = json_object_get(w->id_used, c);
        if (owner && strcmp(json_string_value(owner), id))
            continue;
        json_object_set_new(w->id_used, c, json_string(id));
        json_object_set_new(w->id_fwd, id, json_string(c));
        return json_string_value(json_object_get(w->id_fwd, id));
    }
}

static void map_id(walk *w, json_t *obj, const char *key)
{
    if (!(w->f & (TG_MR_MISTRAL_IDS | TG_MR_ANTHROPIC_IDS)))
        return;
    json_t *v = json_object_get(obj, key);
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
        return;  /* not an id we can map (embedded NUL): leave it alone */
    const char *id = json_string_value(v);
    const char *up = upstream_id(w, id);
    if (!strcmp(up, id))
        return;
    if (!w->ctx->id_map)
        w->ctx->id_map = json_object();
    json_object_set_new(w->ctx->id_map, up, json_string(id));
    bool mistral = w->f & TG_MR_MISTRAL_IDS;
    rebuild_key(w, obj, key, json_string(up), mistral ? "mistral-id" : "anthropic-id",
                mistral ? "rule 42" : "rule 39");
}

/* ---- tool calls (rules 7, 34, 43, 47; section 4.1) ---------------------- */

/* Rule 7: historical arguments must be a string holding a JSON object. A
 * double-encoded object is unwrapped; an object value is serialized; a
 * string that is almost JSON (cut short, single quotes, trailing commas:
 * what a model wrote and the agent kept) goes through the same lenient
 * repair as answers (jsonfix.c), so the model sees its own call again; only
 * what cannot be an object ("", null, a list, text beyond repair) becomes
 * "{}". *how names the change for the explain record. */
static json_t *fixed_arguments(json_t *args, const char **how)
{
    *how = "arguments-json";
    if (json_is_object(args)) {
        char *s = tg_json_dumps(args);
        json_t *out = json_string(s ? s : "{}");
        free(s);
        return out;
    }
    if (!json_is_string(args))
        return json_string("{}");
    const char *s = json_string_value(args);
    size_t n = json_string_length(args);
    json_t *v = tg_json_load(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    json_t *out = NULL;  /* NULL: an object already, keep the caller's bytes */
    if (json_is_string(v)) {
        json_t *inner = tg_json_load(json_string_value(v), json_string_length(v), JSON_ALLOW_NUL, NULL);
        out = json_is_object(inner) ? json_string(json_string_value(v)) : json_string("{}");
        json_decref(inner);
    } else if (!v && strspn(s, " \t\r\n") < n) {
        json_t *fixed = tg_json_fix(s, n);
        char *t = json_is_object(fixed) ? tg_json_dumps(fixed) : NULL;
        *how = t ? "arguments-json-fixed" : "arguments-json-lost";
        out = json_string(t ? t : "{}");
        free(t);
        json_decref(fixed);
    } else if (!json_is_object(v)) {
        out = json_string("{}");
    }
    json_decref(v);
    return out;
}

static void clean_function(walk *w, json_t *fn)
{
    const char *key;
    json_t *val;
    void *tmp;

    if (w->f & TG_MR_FIX_CALLS) {
        json_t *args = json_object_get(fn, "arguments");
        const char *how;
        json_t *fixed = fixed_arguments(args, &how);
        if (fixed)
            rebuild_key(w, fn, "arguments", fixed, how, "rule 7");
    }
    json_object_foreach_safe(fn, tmp, key, val) {
        if (is_marker(w, key))
            drop_key(w, fn, key, val, "marker", "section 4.1");
        else if ((w->f & TG_MR_CALL_SHAPE) && !in_list(function_keys, key))
            drop_key(w, fn, key, val, "call-shape", w->row->msg_rule);
        else if ((w->f & TG_MR_DROP_NULLS) && json_is_null(val))
            drop_key(w, fn, key, val, "null-key", null_rule(w));
    }
}

static void clean_call(walk *w, json_t *call, bool assistant)
{
    const char *key;
    json_t *val;
    void *tmp;

    json_object_foreach_safe(call, tmp, key, val) {
        bool signature = !strcmp(key, "extra_content");
        if (is_marker(w, key))
            drop_key(w, call, key, val, "marker", "section 4.1");
        else if (signature && (w->f & TG_MR_KEEP_SIGNATURE))
            continue;
        else if (signature && (w->f & (TG_MR_CALL_EXTRAS | TG_MR_CALL_SHAPE)))
            drop_key(w, call, key, val, "thought-signature", "rule 34");
        else if ((w->f & TG_MR_CALL_SHAPE) && !in_list(call_keys, key))
            drop_key(w, call, key, val, "call-shape", w->row->msg_rule);
        else if ((w->f & TG_MR_CALL_EXTRAS) && in_list(call_extra_keys, key))
            drop_key(w, call, key, val, "call-field", "section 4.1");
        else if ((w->f & TG_MR_DROP_NULLS) && json_is_null(val))
            drop_key(w, call, key, val, "null-key", null_rule(w));
    }
    if ((w->f & TG_MR_FIX_CALLS) && !json_object_get(call, "type"))
        rebuild_key(w, call, "type", json_string("function"), "call-type", "rule 43");
    json_t *fn = json_object_get(call, "function");
    if (json_is_object(fn)) {
        size_t mark = jp_key(&w->ptr, "function");
        clean_function(w, fn);
        jp_pop(&w->ptr, mark);
    }
    if (assistant)
        map_id(w, call, "id");
}

/* R19: Gemini 3 refuses a history whose tool-call turn lost its thought
 * signature ("Function call is missing a thought_signature", section 8),
 * and agents that rebuild messages from their own types drop the
 * extra_content that carried it (R18). toolgate keeps no state across
 * requests to put the real one back, so such a turn gets the value Google
 * documents for calls it did not sign, on its first call, which is where
 * Gemini puts a turn's signature. A turn that kept any signature is left as
 * it is. */
static const char skip_signature[] = "skip_thought_signature_validator";

static bool has_signature(const json_t *call)
{
    return json_is_string(json_object_get(
        json_object_get(json_object_get(call, "extra_content"), "google"), "thought_signature"));
}

static void fill_signature(walk *w, json_t *calls)
{
    size_t j;
    json_t *call;
    json_array_foreach(calls, j, call) if (has_signature(call)) return;
    call = json_array_get(calls, 0);
    if (!json_is_object(call) || json_object_get(call, "extra_content"))
        return;
    size_t mark = jp_idx(&w->ptr, 0);
    rebuild_key(w, call, "extra_content",
                json_pack("{s:{s:s}}", "google", "thought_signature", skip_signature),
                "thought-signature-fill", "R19");
    jp_pop(&w->ptr, mark);
}

/* Gemini 3 and later check signatures; 1.x and 2.x models do not, and a
 * name without a version (gemini-flash-latest) is taken as current. */
static bool model_checks_signatures(const char *model)
{
    const char *g = model ? strstr(model, "gemini-") : NULL;
    if (!g)
        return false;
    g += strlen("gemini-");
    if (*g < '0' || *g > '9')
        return true;
    return atoi(g) >= 3;
}

/* Cleans messages[i].tool_calls; true when calls remain. */
static bool clean_calls(walk *w, json_t *msg, bool assistant)
{
    json_t *calls = json_object_get(msg, "tool_calls");
    if (!json_is_array(calls))
        return false;
    if (json_array_size(calls) == 0) {
        if (w->f & TG_MR_FIX_CALLS)  /* [] is "too short" for OpenAI (rule 55) */
            drop_key(w, msg, "tool_calls", calls, "empty-tool-calls", "rule 55");
        return false;
    }
    size_t mark = jp_key(&w->ptr, "tool_calls");
    for (size_t j = 0; j < json_array_size(calls); j++) {
        json_t *call = json_array_get(calls, j);
        if (!json_is_object(call))
            continue;
        size_t m2 = jp_idx(&w->ptr, j);
        clean_call(w, call, assistant);
        jp_pop(&w->ptr, m2);
    }
    if (assistant && w->fill_signature)
        fill_signature(w, calls);
    jp_pop(&w->ptr, mark);
    return true;
}

/* ---- messages (rules 43-45, 47, 52, 55, 56) ----------------------------- */

typedef enum role {
    R_NONE, R_OTHER, R_SYSTEM, R_DEVELOPER, R_USER, R_ASSISTANT, R_TOOL
} role;

static role role_of(json_t *msg)
{
    const char *r = json_string_value(json_object_get(msg, "role"));
    if (!r)
        return R_NONE;
    return !strcmp(r, "system")      ? R_SYSTEM
           : !strcmp(r, "developer") ? R_DEVELOPER
           : !strcmp(r, "user")      ? R_USER
           : !strcmp(r, "assistant") ? R_ASSISTANT
           : !strcmp(r, "tool")      ? R_TOOL
                                     : R_OTHER;
}

/* The role's allow-list when TG_MR_ALLOWLIST is on; a dialect without its
 * own (a route that set messages.strip_unknown = on) gets rule 47's. */
static const char *const *allowed_keys(const walk *w, json_t *msg)
{
    if (!(w->f & TG_MR_ALLOWLIST))
        return NULL;
    const role_keys *roles = w->row->roles ? w->row->roles : openai_roles;
    const char *r = json_string_value(json_object_get(msg, "role"));
    for (const role_keys *rk = roles; r && rk->role; rk++)
        if (!strcmp(rk->role, r))
            return rk->keys;
    return NULL;  /* a role we know nothing about: left alone */
}

/* Rule 52: DeepSeek thinking mode needs reasoning_content back on every
 * assistant turn that called tools. An agent that kept it as `reasoning`
 * (OpenRouter style) gets it renamed; one that lost it sends "" rather than
 * a certain "Missing reasoning_content" 400. */
static void rebuild_reasoning(walk *w, json_t *msg)
{
    if (json_is_string(json_object_get(msg, "reasoning_content")))
        return;
    json_t *alt = json_object_get(msg, "reasoning");
    if (json_is_string(alt)) {
        rebuild_key(w, msg, "reasoning_content", json_copy(alt),
                    "reasoning-content", "rule 52");
        size_t mark = jp_key(&w->ptr, "reasoning");
        note(w, w->ptr.s, "reasoning-content", "rule 52", alt, NULL);
        jp_pop(&w->ptr, mark);
        json_object_del(msg, "reasoning");  /* moved, not removed: not counted */
    } else {
        rebuild_key(w, msg, "reasoning_content", json_string(""),
                    "reasoning-content", "rule 52");
    }
}

/* Rules 55, 56: null and [] content become what the target parses. An
 * assistant turn with tool calls may have null content (OpenAI's rule),
 * except where TG_MR_NULL_WITH_CALLS says the target refuses that too
 * (Ollama: "invalid message content type: <nil>"); nothing else may. */
static void fix_content(walk *w, json_t *msg, role r, bool has_calls)
{
    json_t *c = json_object_get(msg, "content");
    if (!(w->f & TG_MR_FIX_CONTENT))
        return;
    /* OpenAI's assistant message: content "Required unless tool_calls or
     * function_call is specified"; a refusal stands in for it too */
    bool beside = has_calls || json_object_get(msg, "function_call") ||
                  json_is_string(json_object_get(msg, "refusal"));
    bool null_ok = r == R_ASSISTANT && beside && !(w->f & TG_MR_NULL_WITH_CALLS);
    if (r == R_ASSISTANT && json_is_array(c) && json_array_size(c) == 0)
        rebuild_key(w, msg, "content", null_ok ? json_null() : json_string(""),
                    "empty-content", "rule 56");
    else if (!null_ok && r != R_OTHER && r != R_NONE && (!c || json_is_null(c)))
        rebuild_key(w, msg, "content", json_string(""), "null-content", "rule 55");
}

/* Rule 68: targets that take only a string as content (Groq: "'messages.0'
 * : for 'role:system' the following must be satisfied[('messages.0.content'
 * : value must be a string)]") get the text parts joined by a blank line,
 * as rule 63 joins system turns. User turns keep their lists (user content
 * may be a list there: images); on the other roles a part that is not text
 * cannot travel, and goes, said. Runs after the parts were cleaned, so a
 * marker inside a part is counted as one. */
static void parts_to_string(walk *w, json_t *msg, role r)
{
    json_t *c = json_object_get(msg, "content");
    if (!(w->f & TG_MR_STRING_CONTENT) || !json_is_array(c) || r == R_OTHER || r == R_NONE ||
        r == R_USER)
        return;
    size_t j;
    json_t *part;
    bool other = false;
    json_array_foreach(c, j, part) {
        const char *t = json_string_value(json_object_get(part, "type"));
        if (!t || strcmp(t, "text") || !json_is_string(json_object_get(part, "text")))
            other = true;
    }
    tg_buf t = {0};
    json_array_foreach(c, j, part) {
        const char *pt = json_string_value(json_object_get(part, "type"));
        json_t *text = json_object_get(part, "text");
        if (!pt || strcmp(pt, "text") || !json_is_string(text))
            continue;
        if (t.len && json_string_length(text))
            tg_buf_puts(&t, "\n\n");
        tg_buf_append(&t, json_string_value(text), json_string_length(text));
    }
    rebuild_key(w, msg, "content", json_stringn(t.data ? t.data : "", t.len),
                other ? "non-text-parts-dropped" : "parts-as-string", "rule 68");
    if (other)
        w->ctx->stats.fields_stripped++;
    tg_buf_free(&t);
}

/* Rule 80: xAI takes one text part a message ("The model expects a single
 * `text` element per message.", nocmt/LLMSearchPlus#2): the text parts of
 * a content list are joined by a blank line into the first one, the other
 * parts (images) keep their order; a list of text parts only becomes the
 * string. Nothing is lost. */
static void one_text_part(walk *w, json_t *msg)
{
    json_t *c = json_object_get(msg, "content");
    size_t j, texts = 0, first = 0;
    json_t *part;
    json_array_foreach(c, j, part) {
        const char *pt = json_string_value(json_object_get(part, "type"));
        if (pt && !strcmp(pt, "text") && json_is_string(json_object_get(part, "text")) && !texts++)
            first = j;
    }
    if (texts < 2)
        return;
    tg_buf t = {0};
    json_t *out = json_array();
    json_array_foreach(c, j, part) {
        const char *pt = json_string_value(json_object_get(part, "type"));
        json_t *text = json_object_get(part, "text");
        if (!pt || strcmp(pt, "text") || !json_is_string(text)) {
            json_array_append(out, part);
            continue;
        }
        if (t.len && json_string_length(text))
            tg_buf_puts(&t, "\n\n");
        tg_buf_append(&t, json_string_value(text), json_string_length(text));
        if (j == first)
            json_array_append_new(out, json_null());  /* its place */
    }
    json_t *joined = json_stringn(t.data ? t.data : "", t.len);
    tg_buf_free(&t);
    if (json_array_size(out) == 1) {
        json_decref(out);
        rebuild_key(w, msg, "content", joined, "one-text-part", "rule 80");
        return;
    }
    json_array_foreach(out, j, part) if (json_is_null(part)) {
        json_t *np = json_deep_copy(json_array_get(c, first));
        json_object_set_new(np, "text", joined);
        json_array_set_new(out, j, np);
        break;
    }
    rebuild_key(w, msg, "content", out, "one-text-part", "rule 80");
}

/* Section 4 (Anthropic row): text blocks must be non-empty, so the empty
 * text beside a tool call is sent as no text at all. */
static void empty_text_to_null(walk *w, json_t *msg)
{
    json_t *c = json_object_get(msg, "content");
    if ((json_is_string(c) && !json_string_length(c)) ||
        (json_is_array(c) && !json_array_size(c)))
        rebuild_key(w, msg, "content", json_null(), "empty-text", w->row->msg_rule);
}

/* Markers inside a part's own objects (image_url, input_audio, file...):
 * nothing below a content part is a schema, so every level is the agent's. */
static void strip_markers_deep(walk *w, json_t *v)
{
    const char *key;
    json_t *val;
    void *tmp;
    size_t j;
    if (json_is_array(v)) {
        json_array_foreach(v, j, val) {
            size_t mark = jp_idx(&w->ptr, j);
            strip_markers_deep(w, val);
            jp_pop(&w->ptr, mark);
        }
        return;
    }
    json_object_foreach_safe(v, tmp, key, val) {
        if (is_marker(w, key)) {
            drop_key(w, v, key, val, "marker", "section 4.1");
            continue;
        }
        size_t mark = jp_key(&w->ptr, key);
        strip_markers_deep(w, val);
        jp_pop(&w->ptr, mark);
    }
}

/* Section 4 (Anthropic row): a text part with no text is an empty text
 * block, which Anthropic rejects; it says nothing, so it goes. */
static void drop_empty_text_parts(walk *w, json_t *msg)
{
    json_t *c = json_object_get(msg, "content");
    size_t mark = jp_key(&w->ptr, "content");
    for (size_t j = json_array_size(c); j-- > 0;) {
        json_t *part = json_array_get(c, j);
        json_t *text = json_object_get(part, "text");
        const char *t = json_string_value(json_object_get(part, "type"));
        if (!t || strcmp(t, "text") || !json_is_string(text) || json_string_length(text))
            continue;
        size_t m2 = jp_idx(&w->ptr, j);
        note(w, w->ptr.s, "empty-text-part", w->row->msg_rule, part, NULL);
        jp_pop(&w->ptr, m2);
        w->ctx->stats.fields_stripped++;
        json_array_remove(c, j);
    }
    jp_pop(&w->ptr, mark);
}

/* A refusal is the assistant's text where the target has no refusal field:
 * moved into empty content rather than lost with the key. */
static void refusal_to_content(walk *w, json_t *msg, const char *const *allow)
{
    json_t *ref = json_object_get(msg, "refusal");
    json_t *c = json_object_get(msg, "content");
    bool drops = (allow && !in_list(allow, "refusal")) || (w->f & TG_MR_DROP_EMPTY);
    if (!drops || !json_is_string(ref) || !json_string_length(ref))
        return;
    if (c && !json_is_null(c) && !(json_is_string(c) && !json_string_length(c)) &&
        !(json_is_array(c) && !json_array_size(c)))
        return;
    rebuild_key(w, msg, "content", json_copy(ref), "refusal-as-content", w->row->msg_rule);
}

/* Content parts: markers, cache_control, and for strict targets only
 * {type, <type>} (a text part keeps "text", an image_url part "image_url"). */
static void clean_parts(walk *w, json_t *content)
{
    size_t mark = jp_key(&w->ptr, "content");
    for (size_t j = 0; j < json_array_size(content); j++) {
        json_t *part = json_array_get(content, j);
        if (!json_is_object(part))
            continue;
        /* copied: a prefix such as "t" could make "type" itself a marker */
        char type[64];
        const char *t = json_string_value(json_object_get(part, "type"));
        bool shaped = (w->f & TG_MR_ALLOWLIST) && t && strlen(t) < sizeof type &&
                      json_object_get(part, t);
        snprintf(type, sizeof type, "%s", shaped ? t : "");
        size_t m2 = jp_idx(&w->ptr, j);
        const char *key;
        json_t *val;
        void *tmp;
        json_object_foreach_safe(part, tmp, key, val) {
            if (is_marker(w, key))
                drop_key(w, part, key, val, "marker", "section 4.1");
            else if ((w->f & TG_MR_DROP_CACHE) && !strcmp(key, "cache_control"))
                drop_key(w, part, key, val, "cache-control", "section 4.1");
            else if (shaped && strcmp(key, "type") && strcmp(key, type))
                drop_key(w, part, key, val, "part-shape", w->row->msg_rule);
            else if (w->prefix && (json_is_object(val) || json_is_array(val))) {
                size_t m3 = jp_key(&w->ptr, key);
                strip_markers_deep(w, val);
                jp_pop(&w->ptr, m3);
            }
        }
        jp_pop(&w->ptr, m2);
    }
    jp_pop(&w->ptr, mark);
}

/* Why key must go, or NULL. Sets *ref to the rule it cites. */
static const char *message_key_verdict(const walk *w, const char *key, json_t *val,
                                       const char *const *allow, bool tool_turn,
                                       const char **ref)
{
    bool rc = !strcmp(key, "reasoning_content");
    *ref = w->row->msg_rule;
    if (is_marker(w, key))
        return *ref = "section 4.1", "marker";
    if (rc && (w->f & TG_MR_KEEP_REASONING))
        return tool_turn ? NULL : (*ref = "section 4.2", "reasoning-off-tool-turn");
    if (allow && !in_list(allow, key))
        return "role-allowlist";
    if ((w->f & TG_MR_BOOKKEEPING) && in_list(bookkeeping_keys, key))
        return *ref = "section 4.1", "bookkeeping";
    if ((w->f & TG_MR_DROP_REASONING) && in_list(reasoning_keys, key))
        return *ref = "section 4.2", "reasoning";
    if ((w->f & TG_MR_DROP_CACHE) && !strcmp(key, "cache_control"))
        return *ref = "section 4.1", "cache-control";
    if ((w->f & TG_MR_DROP_NULLS) && json_is_null(val))
        return *ref = null_rule(w), "null-key";
    return NULL;
}

static bool empty_content(json_t *msg)
{
    json_t *c = json_object_get(msg, "content");
    return !c || json_is_null(c) || (json_is_string(c) && !json_string_length(c)) ||
           (json_is_array(c) && !json_array_size(c));
}

/* Rule 45: an assistant turn with nothing in it. */
static bool empty_assistant(json_t *msg)
{
    return empty_content(msg) && !json_object_get(msg, "tool_calls") &&
           !json_is_true(json_object_get(msg, "prefix"));
}

/* Records that a whole message goes; false, for clean_message to return. */
static bool message_dropped(walk *w, json_t *msg, const char *name, const char *ref)
{
    note(w, w->ptr.s, name, ref, msg, NULL);
    w->ctx->stats.fields_stripped++;
    return false;
}

/* Cleans one message in place; false when the message must be dropped. */
static bool clean_message(walk *w, json_t *msg)
{
    role r = role_of(msg);
    if (r == R_DEVELOPER && (w->f & TG_MR_DEVELOPER_ROLE)) {
        rebuild_key(w, msg, "role", json_string("system"), "developer-role", "rule 43");
        r = R_SYSTEM;
    }
    bool has_calls = clean_calls(w, msg, r == R_ASSISTANT);
    bool tool_turn = r == R_ASSISTANT && has_calls;
    const char *const *allow = allowed_keys(w, msg);
    if (r == R_ASSISTANT)
        refusal_to_content(w, msg, allow);
    if ((w->f & TG_MR_EMPTY_TEXT) && json_is_array(json_object_get(msg, "content")))
        drop_empty_text_parts(w, msg);
    if (tool_turn && (w->f & TG_MR_KEEP_REASONING))
        rebuild_reasoning(w, msg);
    fix_content(w, msg, r, has_calls);
    if (tool_turn && (w->f & TG_MR_EMPTY_TEXT))
        empty_text_to_null(w, msg);
    if (json_is_array(json_object_get(msg, "content")))
        clean_parts(w, json_object_get(msg, "content"));
    parts_to_string(w, msg, r);
    if ((w->f & TG_MR_ONE_TEXT) && json_is_array(json_object_get(msg, "content")))
        one_text_part(w, msg);

    const char *key, *ref;
    json_t *val;
    void *tmp;
    json_object_foreach_safe(msg, tmp, key, val) {
        const char *why = message_key_verdict(w, key, val, allow, tool_turn, &ref);
        if (why)
            drop_key(w, msg, key, val, why, ref);
    }
    if (r == R_TOOL)
        map_id(w, msg, "tool_call_id");

    if (r == R_SYSTEM && (w->f & TG_MR_EMPTY_TEXT) && empty_content(msg))
        return message_dropped(w, msg, "empty-system", w->row->msg_rule);
    /* Anthropic: "text content blocks must be non-empty". An empty user
     * turn says nothing, so it goes, but not the last one: without it the
     * request would ask for something else (a continuation of the
     * assistant), and the provider's own error is the honest answer. */
    if (r == R_USER && (w->f & TG_MR_EMPTY_TEXT) && !w->last && empty_content(msg))
        return message_dropped(w, msg, "empty-user", w->row->msg_rule);
    if (r == R_ASSISTANT && (w->f & TG_MR_DROP_EMPTY) && empty_assistant(msg))
        return message_dropped(w, msg, "empty-assistant",
                               w->row->roles == mistral_roles ? "rule 45" : w->row->msg_rule);
    return true;
}

/* ---- tool-call pairing (rule 6) and legacy functions ------------------- */

static const char no_result_text[] = "No result: this tool call was not answered.";

/* An id for a call that came without one: a pure function of the call's
 * place in the history, so the next turn makes the same one. */
static json_t *made_call_id(size_t msg, size_t call)
{
    char id[48];
    snprintf(id, sizeof id, "call_%zu_%zu", msg, call);
    return json_string(id);
}

/* A legacy assistant turn {function_call: {name, arguments}} as the
 * tool_calls turn every current API reads. */
static void legacy_call_to_tool_calls(walk *w, json_t *msg, size_t i)
{
    json_t *fc = json_object_get(msg, "function_call");
    if (!json_is_object(fc) || json_object_get(msg, "tool_calls"))
        return;
    json_t *call = json_pack("{s:o, s:s, s:O}", "id", made_call_id(i, 0), "type", "function",
                             "function", fc);
    rebuild_key(w, msg, "tool_calls", json_pack("[o]", call), "legacy-function-call",
                "rule 43");
    json_object_del(msg, "function_call");
}

/* The index in open (a JSON array of [id, name, agent id]) of the call a
 * tool answer with this id and name answers, or -1. An id matches the
 * call's id, else the id the agent gave a call that rule 73 renamed. An
 * answer with no id takes the first open call of its name, else the first
 * open call. */
static long open_call(json_t *open, const char *id, const char *name)
{
    size_t k;
    json_t *e;
    if (id) {
        json_array_foreach(open, k, e)
            if (!strcmp(json_string_value(json_array_get(e, 0)), id))
                return (long)k;
        json_array_foreach(open, k, e) {
            const char *agent = json_string_value(json_array_get(e, 2));
            if (agent && !strcmp(agent, id))
                return (long)k;
        }
        return -1;
    }
    json_array_foreach(open, k, e) {
        const char *open_name = json_string_value(json_array_get(e, 1));
        if (name && open_name && !strcmp(open_name, name))
            return (long)k;
    }
    return json_array_size(open) ? 0 : -1;
}

/* Answers every call still open with a stated non-result. */
static void close_open_calls(walk *w, json_t *out, json_t *open)
{
    size_t k;
    json_t *e;
    json_array_foreach(open, k, e) {
        json_t *answer = json_pack("{s:s, s:O, s:s}", "role", "tool", "tool_call_id",
                                   json_array_get(e, 0), "content", no_result_text);
        note(w, w->ptr.s, "unanswered-call", "rule 6", NULL, answer);
        json_array_append_new(out, answer);
    }
    json_array_clear(open);
}

/* A tool answer that answers no open call, as a user turn that says whose
 * result it is; its content is kept as it was. */
static void orphan_to_user(walk *w, json_t *msg)
{
    const char *id = json_string_value(json_object_get(msg, "tool_call_id"));
    const char *name = json_string_value(json_object_get(msg, "name"));
    char head[160];
    snprintf(head, sizeof head, "Result of an earlier tool call (%s%s%.64s):", name ? name : "",
             name ? ", id " : "id ", id ? id : "unknown");
    json_t *before = json_deep_copy(msg);
    json_t *c = json_object_get(msg, "content");
    json_t *now;
    if (json_is_array(c)) {
        now = json_pack("[{s:s, s:s}]", "type", "text", "text", head);
        json_array_extend(now, c);
    } else {
        tg_buf b = {0};
        tg_buf_puts(&b, head);
        if (json_is_string(c) && json_string_length(c)) {
            tg_buf_puts(&b, "\n");
            tg_buf_append(&b, json_string_value(c), json_string_length(c));
        }
        now = json_stringn(b.data ? b.data : "", b.len);
        tg_buf_free(&b);
    }
    json_object_set_new(msg, "content", now);
    json_object_set_new(msg, "role", json_string("user"));
    json_object_del(msg, "tool_call_id");
    json_object_del(msg, "name");
    note(w, w->ptr.s, "orphan-tool-answer", "rule 6", before, msg);
    json_decref(before);
}

/* Rule 71: an id the history already used (an agent that numbers calls
 * per turn, call_0 every time, Switchyard#502; or two calls of one turn
 * under one id, claude-code#20901) gets the call's place in the history
 * as a suffix, the same on every later turn; Anthropic refuses the
 * repeat ("tool_use ids must be unique"), and rule 6 cannot pair it. */
static void unique_call_id(walk *w, json_t *call, size_t i, size_t j, json_t *seen)
{
    const char *id = json_string_value(json_object_get(call, "id"));
    if (!json_object_get(seen, id)) {
        json_object_set_new(seen, id, json_true());
        return;
    }
    char made[160];
    for (unsigned salt = 0;; salt++) {
        if (salt)
            snprintf(made, sizeof made, "%.100s_%zu_%zu_%u", id, i, j, salt);
        else
            snprintf(made, sizeof made, "%.100s_%zu_%zu", id, i, j);
        if (!json_object_get(seen, made))
            break;
    }
    json_object_set_new(seen, made, json_true());
    size_t mark = jp_key(&w->ptr, "tool_calls");
    jp_idx(&w->ptr, j);
    rebuild_key(w, call, "id", json_string(made), "repeated-call-id", "rule 73");
    jp_pop(&w->ptr, mark);
}

/* Gives the calls of an assistant turn ids where they have none, unique
 * ones where they repeat (rule 73), and opens them (after answering what
 * was still open). */
static void open_calls(walk *w, json_t *msg, size_t i, json_t *out, json_t *open, json_t *seen)
{
    close_open_calls(w, out, open);
    json_t *calls = json_object_get(msg, "tool_calls");
    size_t j;
    json_t *call;
    json_array_foreach(calls, j, call) {
        if (!json_is_object(call))
            continue;
        json_t *id = json_object_get(call, "id");
        if (!json_is_string(id) || !json_string_length(id)) {
            size_t mark = jp_key(&w->ptr, "tool_calls");
            jp_idx(&w->ptr, j);
            rebuild_key(w, call, "id", made_call_id(i, j), "missing-call-id", "rule 6");
            jp_pop(&w->ptr, mark);
        }
        json_t *agent = json_incref(json_object_get(call, "id"));
        unique_call_id(w, call, i, j, seen);
        id = json_object_get(call, "id");
        json_t *name = json_object_get(json_object_get(call, "function"), "name");
        json_array_append_new(open, json_pack("[O,O,o]", id, json_is_string(name) ? name : json_null(),
                                              json_equal(agent, id) ? json_null() : json_incref(agent)));
        json_decref(agent);
    }
}

/* Takes a tool (or legacy "function") answer: true when it answers an open
 * call, which it then closes; it gets that call's id if it had none. */
static bool answer_call(walk *w, json_t *msg, json_t *open)
{
    json_t *idv = json_object_get(msg, "tool_call_id");
    const char *id = json_is_string(idv) && json_string_length(idv) ? json_string_value(idv) : NULL;
    long k = open_call(open, id, json_string_value(json_object_get(msg, "name")));
    if (k < 0)
        return false;
    const char *call_id = json_string_value(json_array_get(json_array_get(open, (size_t)k), 0));
    if (!id)
        rebuild_key(w, msg, "tool_call_id", json_string(call_id), "missing-tool-call-id", "rule 6");
    else if (strcmp(id, call_id))  /* its call's id was made unique (rule 73) */
        rebuild_key(w, msg, "tool_call_id", json_string(call_id), "repeated-call-id", "rule 73");
    json_array_remove(open, (size_t)k);
    return true;
}

/* Rule 6 over the whole history, before the per-message pass. */
static void pair_tool_calls(walk *w, json_t *body)
{
    json_t *msgs = json_object_get(body, "messages");
    if (!json_is_array(msgs) || !(w->f & (TG_MR_PAIR_CALLS | TG_MR_LEGACY_FUNCS)))
        return;
    json_t *out = json_array(), *open = json_array(), *seen = json_object();
    char where[40];
    w->where = where;
    bool pair = w->f & TG_MR_PAIR_CALLS;
    size_t n_in = json_array_size(msgs);
    for (size_t i = 0; i < n_in; i++) {
        json_t *msg = json_array_get(msgs, i);
        message_where(where, i);
        jp_pop(&w->ptr, 0);
        jp_key(&w->ptr, "messages");
        jp_idx(&w->ptr, i);
        role r = json_is_object(msg) ? role_of(msg) : R_NONE;
        bool legacy_answer = r == R_OTHER && (w->f & TG_MR_LEGACY_FUNCS) &&
                             !strcmp(json_string_value(json_object_get(msg, "role")), "function");
        if (legacy_answer) {
            rebuild_key(w, msg, "role", json_string("tool"), "legacy-function-role", "rule 43");
            r = R_TOOL;
        }
        if (r == R_ASSISTANT && (w->f & TG_MR_LEGACY_FUNCS))
            legacy_call_to_tool_calls(w, msg, i);
        if (!pair) {
            json_array_append(out, msg);
            continue;
        }
        if (r == R_TOOL) {
            if (!answer_call(w, msg, open)) {
                close_open_calls(w, out, open);
                orphan_to_user(w, msg);
            }
        } else if (r == R_ASSISTANT && json_is_array(json_object_get(msg, "tool_calls"))) {
            open_calls(w, msg, i, out, open, seen);
        } else {
            close_open_calls(w, out, open);
        }
        json_array_append(out, msg);
    }
    message_where(where, n_in);
    close_open_calls(w, out, open);
    if (json_array_size(out) != n_in)
        json_object_set(body, "messages", out);
    json_decref(out);
    json_decref(open);
    json_decref(seen);
}

static json_t *bridge_message(void)
{
    return json_pack("{s:s, s:s}", "role", "assistant", "content", bridge_text);
}

/* Rule 44: Mistral serves only a conversation that ends on user or tool,
 * or on an assistant prefix to continue (what a trailing assistant turn,
 * e.g. a prefill, means). */
static void mark_prefix(walk *w, json_t *out)
{
    json_t *last = json_array_get(out, json_array_size(out) - 1);
    if (!json_is_object(last) || role_of(last) != R_ASSISTANT ||
        json_object_get(last, "tool_calls") || json_is_true(json_object_get(last, "prefix")))
        return;
    char where[40];  /* an upstream index: this message is the last one sent */
    message_where(where, json_array_size(out) - 1);
    w->where = where;
    jp_pop(&w->ptr, 0);
    jp_key(&w->ptr, "messages");
    jp_idx(&w->ptr, json_array_size(out) - 1);
    rebuild_key(w, last, "prefix", json_true(), "assistant-prefix", "rule 44");
}

/* Rule 63: Mistral's role order has system turns only before the
 * conversation ("Unexpected role 'system' after role 'tool'"); the chat
 * templates open models are served with say the same (Qwen's: "System
 * message must be at the beginning", on vLLM and Ollama), and Google's
 * SDKs take system text only as the system instruction [U for the compat
 * endpoint]. The Messages API, and so Claude Code, puts one after the
 * first user turn. A late system turn joins the leading one (its text
 * after a blank line), or goes to the end of the leading system block
 * when either is not plain text. */
/* content as a list of parts (a string becomes one text part); new */
static json_t *as_parts(json_t *c)
{
    if (json_is_array(c))
        return json_copy(c);
    json_t *parts = json_array();
    if (json_is_string(c) && json_string_length(c))
        json_array_append_new(parts, json_pack("{s:s,s:O}", "type", "text", "text", c));
    return parts;
}

static void system_to_front(walk *w, json_t *out, json_t *msg, const char *name, const char *ref)
{
    size_t lead = 0;
    while (lead < json_array_size(out) && role_of(json_array_get(out, lead)) == R_SYSTEM)
        lead++;
    note(w, w->ptr.s, name, ref, msg, NULL);
    json_t *first = lead ? json_array_get(out, lead - 1) : NULL;
    json_t *have = json_object_get(first, "content"), *add = json_object_get(msg, "content");
    if (first && (w->f & TG_MR_ONE_SYSTEM) && !(json_is_string(have) && json_is_string(add))) {
        /* rule 74: one system turn, whatever its shape */
        json_t *parts = as_parts(have), *more = as_parts(add);
        json_array_extend(parts, more);
        json_decref(more);
        json_object_set_new(first, "content", parts);
        return;
    }
    if (json_is_string(have) && json_is_string(add)) {
        tg_buf t = {0};
        tg_buf_append(&t, json_string_value(have), json_string_length(have));
        if (t.len && json_string_length(add))
            tg_buf_puts(&t, "\n\n");
        tg_buf_append(&t, json_string_value(add), json_string_length(add));
        json_object_set_new(first, "content", json_stringn(t.data ? t.data : "", t.len));
        tg_buf_free(&t);
        return;
    }
    json_array_insert(out, lead, msg);
}

static void walk_messages(walk *w, json_t *body)
{
    json_t *msgs = json_object_get(body, "messages");
    if (!json_is_array(msgs))
        return;
    json_t *out = json_array();
    bool rebuilt = false;
    role prev = R_NONE;
    char where[40];
    w->where = where;
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *msg = json_array_get(msgs, i);
        message_where(where, i);
        jp_pop(&w->ptr, 0);
        jp_key(&w->ptr, "messages");
        jp_idx(&w->ptr, i);
        if (!json_is_object(msg)) {  /* not ours to judge */
            json_array_append(out, msg);
            prev = R_NONE;
            continue;
        }
        w->last = i + 1 == json_array_size(msgs);
        if (!clean_message(w, msg)) {
            rebuilt = true;
            continue;
        }
        role r = role_of(msg);
        if ((w->f & TG_MR_SYSTEM_FIRST) && r == R_SYSTEM && prev != R_NONE && prev != R_SYSTEM) {
            system_to_front(w, out, msg, "system-first", "rule 63");
            rebuilt = true;
            continue;
        }
        /* rule 74: the chat templates of local servers take one system
         * turn ("System message must be at the beginning.", oh-my-pi#958
         * on Qwen; Gemma's "roles must alternate", conversations#197) */
        if ((w->f & TG_MR_ONE_SYSTEM) && r == R_SYSTEM && prev == R_SYSTEM) {
            system_to_front(w, out, msg, "one-system", "rule 74");
            rebuilt = true;
            continue;
        }
        if ((w->f & TG_MR_ROLE_ORDER) && r == R_USER && prev == R_TOOL) {
            json_t *bridge = bridge_message();
            note(w, w->ptr.s, "tool-user-bridge", "rule 44", NULL, bridge);
            json_array_append_new(out, bridge);
            rebuilt = true;
        }
        json_array_append(out, msg);
        prev = r;
    }
    if ((w->f & TG_MR_ROLE_ORDER) && json_array_size(out))
        mark_prefix(w, out);
    if (rebuilt)
        json_object_set_new(body, "messages", out);
    else
        json_decref(out);
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

/* Rule 77: a parameter a Kimi model refuses; reasoning_effort beside a
 * thinking object is refused on every model ("cannot specify both
 * 'thinking' and 'reasoning_effort'", HKUDS/nanobot#3939). */
static bool kimi_fixed(json_t *body, const char *key)
{
    if (!strcmp(key, "reasoning_effort"))
        return json_object_get(body, "thinking") != NULL;
    const char *model = json_string_value(json_object_get(body, "model"));
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
static void thinking_choice(walk *w, json_t *body)
{
    json_t *tc = json_object_get(body, "tool_choice");
    const char *mode = json_string_value(tc);
    const char *think = json_string_value(json_object_get(json_object_get(body, "thinking"), "type"));
    if (think && !strcmp(think, "disabled"))
        return;
    const char *named = json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
    if (!(mode && (!strcmp(mode, "required") || !strcmp(mode, "any"))) && !named)
        return;
    json_t *tools = json_object_get(body, "tools");
    if (named && json_is_array(tools)) {
        json_t *only = json_array();
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t) {
            const char *n = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
            if (n && !strcmp(n, named))
                json_array_append(only, t);
        }
        if (json_array_size(only))
            json_object_set_new(body, "tools", only);  /* a new array: tools may be shared */
        else
            json_decref(only);
    }
    if (!w->ctx->translated)
        w->ctx->translated = json_object();
    json_t *list = json_object_get(w->ctx->translated, "tool_choice");
    if (!list)
        json_object_set_new(w->ctx->translated, "tool_choice", list = json_array());
    json_array_append_new(list, json_string(named ? named : "required"));
    /* last: `named` lives in the tool_choice this replaces */
    rebuild_key(w, body, "tool_choice", json_string("auto"), "thinking-choice", "rule 78");
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
        !(json_is_object(val) && json_object_get(val, "google") && json_object_size(val) == 1))
        return "top-level";
    if ((w->f & TG_MR_REASONING_PARAMS) && in_list(xai_reasoning_deny, key) &&
        xai_reasoning_model(json_string_value(json_object_get(body, "model"))))
        return *ref = "rule 75", "reasoning-model-param";
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
    const char *t = json_string_value(json_object_get(val, "type"));
    return !strcmp(key, "response_format") && t && !strcmp(t, "json_object") &&
           json_array_size(json_object_get(body, "tools")) > 0;
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
    if (w->f & TG_MR_THINKING_CHOICE)
        thinking_choice(w, body);
    json_object_foreach_safe(body, tmp, key, val) {
        if (is_marker(w, key))
            drop_key(w, body, key, val, "marker", "section 4.1");
        else if (!strcmp(key, "messages"))
            continue;
        else if ((w->f & TG_MR_JSON_MODE_TOOLS) && json_only_beside_tools(body, key, val))
            /* Groq: "response_format json_object cannot be combined with
             * tool/function calling" (section 4): the tools win */
            drop_key(w, body, key, val, "json-object-with-tools", "section 4 groq");
        else if ((top || !strcmp(key, "tool_choice")) && (why = top_verdict(w, body, key, val, &ref)))
            drop_param(w, body, key, val, why, ref);
        else if ((w->f & TG_MR_DROP_NULLS) && json_is_null(val))
            drop_key(w, body, key, val, "null-key", null_rule(w));
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
        if (!json_is_string(json_object_get(f, "name"))) {
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
    json_t *fns = json_object_get(body, "functions");
    json_t *fc = json_object_get(body, "function_call");
    if (fns && bad_functions(fns, err))
        return -1;
    w->where = "body";
    jp_pop(&w->ptr, 0);
    if (json_is_array(fns) && json_array_size(fns)) {
        json_t *tools = json_object_get(body, "tools");
        json_t *now = json_is_array(tools) ? json_copy(tools) : json_array();
        size_t i;
        json_t *f;
        json_array_foreach(fns, i, f) {
            const char *name = json_string_value(json_object_get(f, "name"));
            if (tg_tool_peek(now, name))
                continue;  /* the same function declared both ways */
            json_array_append_new(now, json_pack("{s:s, s:O}", "type", "function", "function", f));
        }
        rebuild_key(w, body, "tools", now, "legacy-functions", "rule 43");
        json_object_del(body, "functions");
        if (!json_object_get(body, "parallel_tool_calls"))
            json_object_set_new(body, "parallel_tool_calls", json_false());
        w->ctx->legacy_functions = true;
    }
    if (fc && !json_object_get(body, "tool_choice") &&
        json_array_size(json_object_get(body, "tools"))) {
        json_t *choice = NULL;
        if (json_is_string(fc))  /* "none" and "auto" mean the same for tools */
            choice = json_incref(fc);
        else if (json_is_string(json_object_get(fc, "name")))
            choice = json_pack("{s:s, s:{s:O}}", "type", "function", "function", "name",
                               json_object_get(fc, "name"));
        if (choice)
            rebuild_key(w, body, "tool_choice", choice, "legacy-function-call", "rule 43");
    }
    if (fc)
        json_object_del(body, "function_call");
    return 0;
}

/* ---- the stage ---------------------------------------------------------- */

/* One assistant turn toolgate builds from the provider's own answer (a
 * discovery round, discovery.c): what it carried (thought signatures,
 * reasoning) goes back as it came where the dialect keeps it, and goes
 * where the dialect refuses it, by the same rules as the agent's turns.
 * Its ids are the provider's already: no mapping. */
/* A walk with the route's rules (its preset when the ctx has none). */
static walk walk_for(tg_ctx *ctx)
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
    walk w = {.ctx = ctx, .row = &presets[d], .f = rules->flags};
    if (ctx->strip_prefix && *ctx->strip_prefix) {
        w.prefix = ctx->strip_prefix;
        w.plen = strlen(ctx->strip_prefix);
    }
    return w;
}

void tg_hygiene_replayed(json_t *msg, tg_ctx *ctx)
{
    walk w = walk_for(ctx);
    w.f &= ~(TG_MR_MISTRAL_IDS | TG_MR_ANTHROPIC_IDS);
    w.fill_signature = (w.f & TG_MR_FILL_SIGNATURE) &&
                       model_checks_signatures(json_string_value(
                           json_object_get(ctx->request, "model")));
    w.where = "round";
    w.last = true;
    clean_message(&w, msg);
}

int tg_hygiene_stage(json_t *body, tg_ctx *ctx, tg_error *err)
{
    if (!json_is_object(body))
        return 0;
    walk w = walk_for(ctx);
    /* the one refusal: legacy functions that cannot become tools */
    if ((w.f & TG_MR_LEGACY_FUNCS) && legacy_functions_to_tools(&w, body, err))
        return -1;
    if (w.f & (TG_MR_MISTRAL_IDS | TG_MR_ANTHROPIC_IDS)) {
        w.id_fwd = json_object();
        w.id_used = json_object();
    }
    w.fill_signature = (w.f & TG_MR_FILL_SIGNATURE) &&
                       model_checks_signatures(json_string_value(json_object_get(body, "model")));
    clean_top(&w, body);
    pair_tool_calls(&w, body);
    walk_messages(&w, body);
    json_decref(w.id_fwd);
    json_decref(w.id_used);
    return 0;
}
