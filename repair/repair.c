/* repair.c -- response repair for whole answers, and the pieces the stream
 * side (repair_stream.c) shares (repair_int.h): tool-call normalization,
 * ids, finish_reason, content normalization. It stands on the files below
 * it, which never call back: the rule table (repair_rules.c), the record of
 * a repair (repair_base.c), the schema rules (repair_schema.c), the text
 * parsers (repair_text.c) and custom calls (custom_calls.c).
 *
 * Order of work on one message (docs/dialects.md section 5):
 *   1. every tool call: split {...}{...} arguments (R4/R20), type (R1), the
 *      agent's own name (reverse name map), arguments to a JSON-object string
 *      (R13 object, R14 empty, whole-args double encoding, lenient JSON fix),
 *      schema-guided decoding of double-encoded values (R15), the inverse
 *      argument mapping of the schema stage, keys the agent's schema forbids
 *      dropped (R29; both schema rules in repair_schema.c), then ids (R8
 *      synthesize, R9 de-duplicate). A call without a name cannot be delivered: it is
 *      dropped, counted and recorded (never silently).
 *   2. calls written as text into content (R12, repair_text.c); when that
 *      and upstream's tool_calls give none, into the reasoning.
 *   3. content "" / [] beside calls -> null (R23, R24), Mistral content lists.
 *   4. finish_reason (R10, R11).
 * Arguments are re-serialized only when something changed; otherwise the
 * provider's string goes through byte for byte. Everything else in the
 * answer (text, reasoning, logprobs, usage, unknown fields) is not touched.
 *
 * Synthesized ids are "call_" + 24 alphanumerics, a hash of the response id,
 * the choice, the position, the name and the arguments: deterministic for a
 * given answer (tests), distinct across answers that have distinct ids.
 */
#include <strings.h>

#include "core/alloc.h"
#include "core/hash.h"
#include "core/jsonfix.h"
#include "core/jsonio.h"
#include "repair/custom_calls.h"
#include "repair/repair.h"
#include "repair/repair_base.h"
#include "repair/repair_int.h"
#include "repair/repair_schema.h"
#include "repair/repair_text.h"
#include "sanitize/schema.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --- synthesized ids ------------------------------------------------------ */

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Synthesized ids are seen by the agent and sent back turn after turn:
 * FNV-1a (core/hash.h), whose outputs never change. */
uint64_t tg_rr_seed(const char *resp_id, long choice)
{
    uint64_t h = TG_FNV1A_OFFSET;
    if (resp_id && *resp_id) {
        h = tg_fnv1a64(h, resp_id, strlen(resp_id));
    } else {  /* no id to derive from: make it differ per answer anyway */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        h = tg_fnv1a64(h, &ts, sizeof ts);
        h = tg_fnv1a64(h, &resp_id, sizeof resp_id);
    }
    return tg_fnv1a64(h, &choice, sizeof choice);
}

void tg_rr_synth_id(char out[32], uint64_t seed, size_t pos, const char *name,
                    const char *args, unsigned attempt)
{
    static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    uint64_t h = tg_fnv1a64(seed, &pos, sizeof pos);
    h = tg_fnv1a64(h, name, strlen(name));
    h = tg_fnv1a64(h, args, strlen(args));
    h = tg_fnv1a64(h, &attempt, sizeof attempt);
    memcpy(out, "call_", 5);
    for (int i = 0; i < 24; i++) {
        if (i % 8 == 0)
            h = mix(h + (uint64_t)i);
        out[5 + i] = alnum[h % 62];
        h /= 62;
    }
    out[29] = 0;
}

/* --- arguments ------------------------------------------------------------ */

/* The arguments value (any shape, may be NULL) as a parsed object, or NULL
 * when even the JSON fix gave up. *rewrote: the provider's string cannot be
 * kept as it was. */
static json_t *args_object(tg_ctx *ctx, const char *name, const json_t *a, bool *rewrote)
{
    if (json_is_object(a)) {
        tg_rr_note(ctx, TG_R13, name, NULL, NULL);
        *rewrote = true;
        return json_deep_copy(a);
    }
    const char *s = json_string_value(a);
    size_t n = json_string_length(a);
    if (!s || !json_is_string(a)) {
        if (a && !json_is_null(a))
            return NULL;
        tg_rr_note(ctx, TG_R14, name, NULL, NULL);
        *rewrote = true;
        return json_object();
    }
    const char *p = s, *e = s + n;
    while (p < e && isspace((unsigned char)*p))
        p++;
    if (p == e || (e - p == 4 && !memcmp(p, "null", 4))) {
        tg_rr_note(ctx, TG_R14, name, (json_t *)a, NULL);
        *rewrote = true;
        return json_object();
    }
    json_t *v = tg_json_load(s, n, JSON_ALLOW_NUL, NULL);
    if (json_is_object(v))
        return v;
    json_decref(v);
    v = tg_json_load(s, n, JSON_DECODE_ANY, NULL);
    if (json_is_string(v)) {  /* the whole object double-encoded */
        json_t *inner = tg_json_load(json_string_value(v), json_string_length(v), 0, NULL);
        json_decref(v);
        if (json_is_object(inner)) {
            tg_rr_note(ctx, TG_R15, name, (json_t *)a, inner);
            *rewrote = true;
            return inner;
        }
        json_decref(inner);
        return NULL;
    }
    if (v) {  /* valid JSON, but not an object: nothing safe to do */
        json_decref(v);
        return NULL;
    }
    if (!tg_rr_on(ctx, TG_RR_JSON_FIX))
        return NULL;
    v = tg_json_fix(s, n);
    if (!json_is_object(v)) {  /* "{...}}": the object, the stray bytes go */
        json_decref(v);
        v = tg_json_leading_object(s, n);
    }
    if (json_is_object(v)) {
        tg_rr_note_other(ctx, "json_fix", name, (json_t *)a, v);
        *rewrote = true;
        return v;
    }
    json_decref(v);
    return NULL;
}

/* function.arguments -> a string of a JSON object fitting the agent schema. */
static void fix_args(tg_ctx *ctx, const char *agent_name, json_t *fn)
{
    json_t *a = json_object_get(fn, "arguments");
    bool rewrote = false;
    if (!tg_rr_on(ctx, TG_RR_ARGS) && !json_is_string(a))
        return;
    json_t *obj = args_object(ctx, agent_name, a, &rewrote);
    if (!obj) {
        tg_rr_fail(ctx, "json_fix_failed", agent_name, a);
        if (!json_is_string(a)) {  /* still a string, as rule 8 wants */
            char *t = a ? tg_json_dumps(a) : NULL;
            json_object_set_new(fn, "arguments", json_string(t ? t : "{}"));
            free(t);
        }
        return;
    }
    int changed = 0;
    if (tg_rr_on(ctx, TG_RR_DECODE))
        changed += tg_rr_decode_values(ctx, agent_name, obj);
    changed += tg_schema_restore_args(ctx, agent_name, obj);
    /* after the inverse mapping: the keys are judged in the agent's shape */
    if (tg_rr_on(ctx, TG_RR_FORBIDDEN_KEYS))
        changed += tg_rr_drop_forbidden_keys(ctx, agent_name, obj);
    if (rewrote || changed) {
        char *t = tg_json_dumps(obj);
        json_object_set_new(fn, "arguments", json_string(t));
        free(t);
    }
    json_decref(obj);
}

/* R4/R20: one call whose arguments are {...}{...} becomes several. The
 * calls are laid out again in one pass once one splits (an insert in the
 * middle moved the whole tail, each time). */
static void split_calls(tg_ctx *ctx, json_t *calls)
{
    json_t *out = NULL;
    for (size_t i = 0; i < json_array_size(calls); i++) {
        json_t *c = json_array_get(calls, i);
        json_t *fn = json_object_get(c, "function");
        json_t *a = json_object_get(fn, "arguments");
        json_t *parts = json_is_string(a)
                            ? tg_json_split_objects(json_string_value(a), json_string_length(a))
                            : NULL;
        if (!parts) {
            if (out)
                json_array_append(out, c);
            continue;
        }
        if (!out) {
            out = json_array();
            for (size_t k = 0; k < i; k++)
                json_array_append(out, json_array_get(calls, k));
        }
        tg_rr_note(ctx, TG_R20, json_string_value(json_object_get(fn, "name")), a, parts);
        size_t j;
        json_t *o;
        json_array_foreach(parts, j, o) {
            json_t *nc = j ? json_deep_copy(c) : json_incref(c);
            if (j)
                json_object_del(nc, "id");  /* synthesized below */
            char *t = tg_json_dumps(o);
            json_object_set_new(json_object_get(nc, "function"), "arguments", json_string(t));
            free(t);
            json_array_append_new(out, nc);
        }
        json_decref(parts);
    }
    if (out) {
        json_array_clear(calls);
        json_array_extend(calls, out);
        json_decref(out);
    }
}

/* One call, in place. Returns -1 when it cannot be delivered. */
static int fix_call(tg_ctx *ctx, json_t *c, uint64_t seed, size_t pos, json_t *ids)
{
    if (!json_is_object(c))
        return -1;
    json_t *fn = json_object_get(c, "function");
    if (!json_is_object(fn)) {
        /* {"name":..,"arguments":..} at the top of the call */
        if (!json_is_string(json_object_get(c, "name")))
            return -1;
        fn = json_object();
        json_object_set(fn, "name", json_object_get(c, "name"));
        json_t *a = json_object_get(c, "arguments");
        if (a)
            json_object_set(fn, "arguments", a);
        json_object_del(c, "name");
        json_object_del(c, "arguments");
        json_object_set_new(c, "function", fn);
        tg_rr_note(ctx, TG_R1, NULL, NULL, NULL);
    }
    const char *up = json_string_value(json_object_get(fn, "name"));
    if (!up || !*up)
        return -1;
    if (strstr(up, "<arg_key>")) {
        json_t *before = json_deep_copy(fn);
        if (tg_rr_name_markup(ctx, fn) == 0)
            tg_rr_note_other(ctx, "name-markup (R12)", json_string_value(json_object_get(fn, "name")),
                             before, fn);
        json_decref(before);
        up = json_string_value(json_object_get(fn, "name"));
    }
    const char *type = json_string_value(json_object_get(c, "type"));
    if (tg_rr_on(ctx, TG_RR_TYPE) && (!type || strcmp(type, "function"))) {
        json_object_set_new(c, "type", json_string("function"));
        tg_rr_note(ctx, TG_R1, up, NULL, NULL);
    }
    const char *agent = tg_schema_agent_name(ctx, up);
    if (agent && strcmp(agent, up)) {
        json_t *an = json_string(agent);  /* agent may point into fn */
        json_object_set_new(fn, "name", an);
    }
    agent = json_string_value(json_object_get(fn, "name"));
    fix_args(ctx, agent, fn);

    tg_rr_assign_id(ctx, c, seed, pos, agent, json_string_value(json_object_get(fn, "arguments")),
                    ids);
    return 0;
}

void tg_rr_assign_id(tg_ctx *ctx, json_t *c, uint64_t seed, size_t pos, const char *agent,
                     const char *args, json_t *ids)
{
    if (!tg_rr_on(ctx, TG_RR_IDS))
        return;
    const char *id = json_string_value(json_object_get(c, "id"));
    char buf[32];
    if (!id || !*id) {
        unsigned att = 0;
        do
            tg_rr_synth_id(buf, seed, pos, agent, args ? args : "", att++);
        while (json_object_get(ids, buf));
        json_object_set_new(c, "id", json_string(buf));
        tg_rr_note(ctx, TG_R8, agent, NULL, NULL);
    } else if (json_object_get(ids, id)) {
        /* The id's entry keeps the next suffix to try: a provider that
         * repeats one id on every call made each copy walk all the
         * suffixes before it (25,000 calls took minutes of a worker). */
        json_t *seen = json_object_get(ids, id);
        json_int_t k = json_is_integer(seen) ? json_integer_value(seen) : 2;
        size_t len = strlen(id) + 24;
        char *nid = tg_malloc(len);
        for (;; k++) {
            snprintf(nid, len, "%s_%lld", id, (long long)k);
            if (!json_object_get(ids, nid))
                break;
        }
        json_object_set_new(ids, id, json_integer(k + 1));
        tg_rr_note(ctx, TG_R9, agent, json_object_get(c, "id"), NULL);
        json_object_set_new(c, "id", json_string(nid));
        free(nid);
    }
    json_object_set_new(ids, json_string_value(json_object_get(c, "id")), json_true());
}

/* The fields a provider put on a call beside id, type and function
 * (Gemini 3's extra_content with its thought signature), kept in
 * ctx->opaque_out under the id the agent gets, so that the proxy can put
 * them back when the agent replays the call without them (clients that
 * rebuild messages from their own types drop them; the Messages bridge
 * cannot carry them). Calls the discovery intercept answers itself are
 * not the agent's and are left out; OPAQUE_CALLS_MAX a request. */
#define OPAQUE_CALLS_MAX 64

static void keep_opaque(tg_ctx *ctx, json_t *c)
{
    const char *id = json_string_value(json_object_get(c, "id"));
    const char *name = json_string_value(json_object_get(json_object_get(c, "function"), "name"));
    if (!id || !*id || json_object_size(ctx->opaque_out) >= OPAQUE_CALLS_MAX)
        return;
    json_t *o = NULL;
    const char *k;
    json_t *v;
    json_object_foreach(c, k, v) {
        if (!strcmp(k, "id") || !strcmp(k, "type") || !strcmp(k, "function") ||
            !strcmp(k, "index") || json_is_null(v))
            continue;
        if (!o)
            o = json_object();
        json_object_set(o, k, v);
    }
    if (o && name && ctx->intercept && ctx->intercept->is_meta(ctx, name)) {
        json_decref(o);
        return;
    }
    if (!o)
        return;
    if (!ctx->opaque_out)
        ctx->opaque_out = json_object();
    json_object_set_new(ctx->opaque_out, id, o);
}

size_t tg_rr_fix_calls(tg_ctx *ctx, json_t *calls, uint64_t seed, size_t first_pos,
                       json_t *ids)
{
    if (tg_rr_on(ctx, TG_RR_SPLIT))
        split_calls(ctx, calls);
    size_t kept = 0;  /* the calls kept move down (tg_json_array_cut) */
    for (size_t i = 0; i < json_array_size(calls); i++) {
        json_t *c = json_array_get(calls, i);
        if (!tg_rr_custom_shaped(c)) {  /* one given back already needs nothing */
            if (fix_call(ctx, c, seed, first_pos + kept, ids)) {
                tg_rr_fail(ctx, "call_dropped", NULL, c);
                continue;
            }
            keep_opaque(ctx, c);
        }
        if (kept != i)
            json_array_set(calls, kept, c);
        kept++;
    }
    tg_json_array_cut(calls, kept);
    tg_rr_custom_calls(ctx, calls);
    return json_array_size(calls);
}

json_t *tg_rr_call_from_text(const json_t *tc)
{
    char *a = tg_json_dumps(json_object_get(tc, "arguments"));
    json_t *c = json_pack("{s:s, s:s, s:{s:O, s:s}}", "id", "", "type", "function", "function",
                          "name", json_object_get(tc, "name"), "arguments", a ? a : "{}");
    free(a);
    return c;
}

/* R10: finish_reason words outside OpenAI's vocabulary, as their OpenAI
 * word; typed clients refuse any other (openai-dotnet: "Unknown
 * ChatFinishReason value ... eos"). The class is every provider's own enum
 * leaking through an OpenAI-compatible layer (a gateway that relays it, a
 * server that forgets to map it), so each provider's whole enum is here,
 * matched in any case (Gemini's are upper case: "STOP" and "MAX_TOKENS"
 * from a gateway, QwenLM/qwen-code#9884; higress-group/higress#2408). A
 * word in none of them is kept as it came. */
static const char *const finish_words[][2] = {
    {"eos", "stop"},          /* Together's Llama models, openai/openai-dotnet#267 */
    {"eos_token", "stop"},    /* TGI before 2.2, watsonx: huggingface/text-generation-inference#2344 */
    {"model_length", "length"}, /* Mistral's context limit: camel-ai/camel#4266 */
    /* Anthropic's stop_reason (and Bedrock's Converse stopReason): through
     * LiteLLM, BerriAI/litellm#12481 */
    {"end_turn", "stop"},
    {"stop_sequence", "stop"},
    {"pause_turn", "stop"},
    {"max_tokens", "length"},
    {"model_context_window_exceeded", "length"},
    {"tool_use", "tool_calls"},
    {"refusal", "content_filter"},
    {"guardrail_intervened", "content_filter"},
    {"content_filtered", "content_filter"},
    /* Gemini's FinishReason enum (ai.google.dev, GenerateContentResponse) */
    {"finish_reason_unspecified", "stop"},
    {"other", "stop"},
    {"malformed_function_call", "stop"},
    {"unexpected_tool_call", "stop"},
    {"too_many_tool_calls", "stop"},
    {"safety", "content_filter"},
    {"recitation", "content_filter"},
    {"language", "content_filter"},
    {"blocklist", "content_filter"},
    {"prohibited_content", "content_filter"},
    {"spii", "content_filter"},
    {"image_safety", "content_filter"},
    {"image_prohibited_content", "content_filter"},
    {"image_recitation", "content_filter"},
    {"image_other", "content_filter"},
    /* Cohere's v2 finish_reason */
    {"complete", "stop"},
    {"tool_call", "tool_calls"},
    {"error_toxic", "content_filter"},
    {"error_limit", "length"},
    /* Zhipu's (z.ai's) documented words beside OpenAI's: a safety
     * interception (pydantic/pydantic-ai#7678, BerriAI/litellm#24373) */
    {"sensitive", "content_filter"},
};

/* Words that say the generation failed rather than ended: the answer is
 * cut, not finished, so the agent gets an error (R26), never a finish its
 * client would take for a whole answer. Mistral's "error"
 * (mistralai/client-python#74), Zhipu's "network_error" (inference
 * interrupted, pydantic/pydantic-ai#7678, BerriAI/litellm#23386), vLLM's
 * "abort" (an engine abort: scale-down, shutdown, sleep;
 * vllm-project/vllm#57082) and DeepSeek's "insufficient_system_resource"
 * (its API reference's finish_reason enum). */
static const char *const failed_words[] = {"error", "network_error", "abort",
                                           "insufficient_system_resource"};

bool tg_rr_finish_failed(const char *f)
{
    for (size_t i = 0; f && i < sizeof failed_words / sizeof *failed_words; i++)
        if (!strcasecmp(f, failed_words[i]))
            return true;
    return false;
}

/* OpenAI's own words, the form a typed client accepts. */
static const char *const openai_finish[] = {"stop", "length", "tool_calls", "content_filter",
                                             "function_call"};

const char *tg_rr_finish_word(const char *f)
{
    if (!f)
        return f;
    /* callers tell a changed word by its pointer: OpenAI's own, as it came,
     * is f itself */
    for (size_t i = 0; i < sizeof openai_finish / sizeof *openai_finish; i++)
        if (!strcasecmp(f, openai_finish[i]))
            return strcmp(f, openai_finish[i]) ? openai_finish[i] : f;
    for (size_t i = 0; i < sizeof finish_words / sizeof *finish_words; i++)
        if (!strcasecmp(f, finish_words[i][0]))
            return finish_words[i][1];
    return f;
}

/* The word the client gets for finish f of a choice that carries ncalls
 * calls: a call makes it tool_calls unless the answer was cut (length) or
 * filtered; tool_calls with no call left is a plain stop. */
const char *tg_rr_finish(tg_ctx *ctx, const char *f, size_t ncalls)
{
    if (!tg_rr_on(ctx, TG_RR_FINISH))
        return f;
    const char *w = tg_rr_finish_word(f);
    if (w && (!strcmp(w, "length") || !strcmp(w, "content_filter")))
        return w;
    if (ncalls > 0)
        return "tool_calls";
    if (w && !strcmp(w, "tool_calls"))
        return "stop";
    return w;
}

int tg_rr_flatten_content(tg_ctx *ctx, json_t *msg)
{
    json_t *content = json_object_get(msg, "content");
    if (json_is_array(content) && json_array_size(content) == 0 && tg_rr_on(ctx, TG_RR_CONTENT)) {
        /* R24: [] is no content (the OpenAI shape is string or null); beside
         * calls the "" then becomes null, in a delta it goes */
        tg_rr_note(ctx, TG_R24, "content", content, NULL);
        json_object_set_new(msg, "content", json_string(""));
        return 1;
    }
    if (!tg_rr_on(ctx, TG_RR_CONTENT_LIST) || !json_is_array(content) ||
        json_array_size(content) == 0)
        return 0;
    tg_buf text = {0}, think = {0};
    size_t i;
    json_t *part;
    json_array_foreach(content, i, part) {
        const char *t = json_string_value(json_object_get(part, "type"));
        if (!t)
            goto keep;
        if (!strcmp(t, "text")) {
            const char *s = json_string_value(json_object_get(part, "text"));
            if (s)
                tg_buf_puts(&text, s);
        } else if (!strcmp(t, "thinking")) {
            json_t *th = json_object_get(part, "thinking");
            if (json_is_string(th))
                tg_buf_puts(&think, json_string_value(th));
            size_t j;
            json_t *x;
            json_array_foreach(th, j, x) {
                const char *s = json_string_value(json_object_get(x, "text"));
                if (s)
                    tg_buf_puts(&think, s);
            }
        } else {
            goto keep;  /* images, audio...: not ours to flatten */
        }
    }
    tg_rr_note(ctx, TG_R23, "content", content, NULL);
    json_object_set_new(msg, "content", json_string(text.data ? text.data : ""));
    if (think.len) {
        const char *old = json_string_value(json_object_get(msg, "reasoning_content"));
        tg_buf all = {0};
        if (old)
            tg_buf_puts(&all, old);
        tg_buf_append(&all, think.data, think.len);
        json_object_set_new(msg, "reasoning_content", json_string(all.data));
        tg_buf_free(&all);
    }
    tg_buf_free(&text);
    tg_buf_free(&think);
    return 1;
keep:
    tg_buf_free(&text);
    tg_buf_free(&think);
    return 0;
}

/* --- whole answers -------------------------------------------------------- */

/* R12 over the string msg[key]: the calls written in it, fixed and
 * appended to calls, their markup taken out of it; returns how many. The
 * content reads from a message start (bare JSON counts there) and goes
 * as null when only blanks are left; the reasoning reads markup only and
 * keeps what is left as it is. An answer cut by the token limit (cut)
 * keeps a call whose markup never closed as the text it is: its arguments
 * may be missing, and a truncated command must not run. */
static size_t calls_in_text(tg_ctx *ctx, json_t *msg, const char *key, json_t *calls,
                            uint64_t seed, json_t *ids, bool cut)
{
    bool is_content = !strcmp(key, "content");
    json_t *str = json_object_get(msg, key);
    if (!json_is_string(str))
        return 0;
    tg_buf rest = {0};
    json_t *found = json_array();
    bool at_start = is_content;
    const char *text = json_string_value(str);
    size_t len = json_string_length(str);
    size_t used = tg_text_scan(ctx, text, len, !cut, &at_start, &rest, found);
    if (used < len)  /* cut: the unclosed tail, as it came */
        tg_buf_append(&rest, text + used, len - used);
    size_t n = 0;
    if (json_array_size(found)) {
        json_t *oc = json_array();
        size_t i;
        json_t *tc;
        json_array_foreach(found, i, tc) json_array_append_new(oc, tg_rr_call_from_text(tc));
        n = tg_rr_fix_calls(ctx, oc, seed, json_array_size(calls), ids);
        tg_rr_note(ctx, TG_R12, is_content ? NULL : key, str, oc);
        json_array_extend(calls, oc);
        json_decref(oc);
        const char *r = rest.data ? rest.data : "";
        bool blank = true;
        for (const char *p = r; *p && blank; p++)
            blank = isspace((unsigned char)*p);
        json_object_set_new(msg, key,
                            is_content && blank ? json_null() : json_stringn(r, rest.len));
    }
    json_decref(found);
    tg_buf_free(&rest);
    return n;
}

/* R12: calls written into content; returns how many were recovered. */
static size_t text_calls(tg_ctx *ctx, json_t *msg, json_t *calls, uint64_t seed, json_t *ids,
                         bool cut)
{
    if (!tg_rr_text_calls_on(ctx))
        return 0;
    return calls_in_text(ctx, msg, "content", calls, seed, ids, cut);
}

/* R12 in the reasoning: DeepSeek V3.1 on sglang writes its call tokens
 * inside reasoning_content and ends with empty content
 * (sgl-project/sglang#11764). Only when neither the content nor the
 * answer's tool_calls gave a call (the content's call wins) is the
 * reasoning (reasoning_content, or reasoning) read with the same table,
 * from no message start: markup only, never bare JSON a model thinks
 * aloud. The recovered markup leaves the reasoning; the rest is kept. */
static size_t reasoning_calls(tg_ctx *ctx, json_t *msg, json_t *calls, uint64_t seed,
                              json_t *ids, bool cut)
{
    static const char *const keys[] = {"reasoning_content", "reasoning"};
    if (!tg_rr_text_calls_on(ctx) || json_array_size(json_object_get(msg, "tool_calls")))
        return 0;
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        size_t n = calls_in_text(ctx, msg, keys[k], calls, seed, ids, cut);
        if (n)
            return n;
    }
    return 0;
}

/* The JSON a model wrote for a rewritten response_format schema, as the
 * agent's own schema says it (schema.c, rewrite_response_format): a new
 * string, or NULL when it does not parse or nothing changes. */
json_t *tg_rr_structured_content(tg_ctx *ctx, const char *text, size_t n)
{
    if (!ctx->rf_inverse || !n)
        return NULL;
    json_t *v = tg_json_load(text, n, JSON_ALLOW_NUL, NULL);
    if (!v)
        return NULL;
    int count = 0;
    json_t *restored = tg_schema_inverse_apply(ctx->rf_inverse, v, &count);
    json_decref(v);
    json_t *out = NULL;
    if (count > 0) {
        tg_buf b = {0};
        tg_json_dump(restored, &b);  /* v's own value or its replacement: not NULL */
        out = json_stringn(b.data ? b.data : "", b.len);
        tg_buf_free(&b);
        tg_rr_note_other(ctx, "structured-output", "content", NULL, NULL);
    }
    json_decref(restored);
    return out;
}

static void repair_choice(tg_ctx *ctx, json_t *choice, uint64_t seed)
{
    json_t *msg = json_object_get(choice, "message");
    if (!json_is_object(msg))
        return;
    json_t *text = json_object_get(msg, "content");
    if (ctx->rf_inverse && json_is_string(text)) {
        json_t *now = tg_rr_structured_content(ctx, json_string_value(text),
                                               json_string_length(text));
        if (now)
            json_object_set_new(msg, "content", now);
    }
    json_t *calls = json_object_get(msg, "tool_calls");
    json_t *ids = json_object();
    size_t n = 0;
    if (json_is_array(calls)) {
        json_incref(calls);
        n = tg_rr_fix_calls(ctx, calls, seed, 0, ids);
    } else {
        calls = json_array();
    }
    if (tg_rr_on(ctx, TG_RR_ROLE)) {
        const char *role = json_string_value(json_object_get(msg, "role"));
        if (!role || !*role) {
            json_object_set_new(msg, "role", json_string("assistant"));
            tg_rr_note(ctx, TG_R25, NULL, NULL, NULL);
        }
    }
    tg_rr_flatten_content(ctx, msg);
    const char *fin = tg_rr_finish_word(json_string_value(json_object_get(choice, "finish_reason")));
    n += text_calls(ctx, msg, calls, seed, ids, fin && !strcmp(fin, "length"));
    if (n == 0)
        n = reasoning_calls(ctx, msg, calls, seed, ids, fin && !strcmp(fin, "length"));
    if (n > 0) {
        json_object_set(msg, "tool_calls", calls);
        json_t *content = json_object_get(msg, "content");
        if (tg_rr_on(ctx, TG_RR_CONTENT) &&
            ((json_is_string(content) && json_string_length(content) == 0) ||
             (json_is_array(content) && json_array_size(content) == 0))) {
            tg_rr_note(ctx, json_is_array(content) ? TG_R24 : TG_R23, "content", content, NULL);
            json_object_set_new(msg, "content", json_null());
        }
    } else if (json_is_array(json_object_get(msg, "tool_calls")) && tg_rr_on(ctx, TG_RR_FINISH)) {
        tg_rr_note(ctx, TG_R11, "tool_calls", json_object_get(msg, "tool_calls"), NULL);
        json_object_del(msg, "tool_calls");
    }
    json_decref(calls);
    json_decref(ids);

    json_t *fr = json_object_get(choice, "finish_reason");
    const char *f = json_string_value(fr);
    const char *nf = tg_rr_finish(ctx, f, n);
    /* R10: a whole answer arrived complete, so a choice without a
     * finish_reason (Bifrost's Gemini adapter, maximhq/bifrost#1489) ended
     * naturally; a stream without one is R26's error instead */
    if (!nf && tg_rr_on(ctx, TG_RR_FINISH))
        nf = "stop";
    if (nf != f) {
        tg_rr_note(ctx, n ? TG_R10 : TG_R11, "finish_reason", fr, NULL);
        json_object_set_new(choice, "finish_reason", nf ? json_string(nf) : json_null());
    }
}

/* Groq's failed_generation of a Llama 3.x call may lack the "<function="
 * that opens it (the chat template wrote it): NAME{json}</function>
 * (huggingface/smolagents#1119). That text with its tag restored, or NULL. */
static char *restore_function_tag(const char *g, size_t n)
{
    size_t i = 0;
    while (i < n && i < 256 && (isalnum((unsigned char)g[i]) || g[i] == '_' || g[i] == '-' ||
                                g[i] == '.'))
        i++;
    static const char close[] = "</function>";
    size_t cl = sizeof close - 1;
    while (n && isspace((unsigned char)g[n - 1]))
        n--;
    if (!i || i >= n || g[i] != '{' || n < i + cl || memcmp(g + n - cl, close, cl))
        return NULL;
    tg_buf b = {0};
    tg_buf_puts(&b, "<function=");
    tg_buf_append(&b, g, i);
    tg_buf_puts(&b, ">");
    tg_buf_append(&b, g + i, n - i);
    return tg_buf_steal(&b, NULL);
}

/* R27: Groq's 400 tool_use_failed with a failed_generation naming a declared
 * tool becomes the chat.completion the model meant to send. */
json_t *tg_rr_failed_generation(tg_ctx *ctx, const json_t *err)
{
    const char *code = json_string_value(json_object_get(err, "code"));
    const json_t *g = json_object_get(err, "failed_generation");
    if (!code || strcmp(code, "tool_use_failed") || !json_is_string(g) ||
        !tg_rr_on(ctx, TG_RR_TOOL_USE_FAILED))
        return NULL;
    json_t *found = json_array();
    tg_buf rest = {0};
    bool at_start = true;
    tg_text_scan(ctx, json_string_value(g), json_string_length(g), true, &at_start, &rest, found);
    tg_buf_free(&rest);
    char *tagged = json_array_size(found) ? NULL
                                          : restore_function_tag(json_string_value(g),
                                                                 json_string_length(g));
    if (tagged) {
        at_start = true;
        tg_text_scan(ctx, tagged, strlen(tagged), true, &at_start, &rest, found);
        tg_buf_free(&rest);
        free(tagged);
    }
    json_t *calls = NULL;
    if (json_array_size(found)) {
        calls = json_array();
        size_t i;
        json_t *tc;
        json_array_foreach(found, i, tc) json_array_append_new(calls, tg_rr_call_from_text(tc));
    }
    json_decref(found);
    return calls;
}

static int recover_tool_use_failed(json_t *resp, tg_ctx *ctx)
{
    json_t *err = json_object_get(resp, "error");
    json_t *calls = tg_rr_failed_generation(ctx, err);
    if (!calls)
        return 0;
    const char *gen = json_string_value(json_object_get(err, "failed_generation"));
    json_t *ids = json_object();
    uint64_t seed = tg_rr_seed(gen, 0);
    tg_rr_fix_calls(ctx, calls, seed, 0, ids);
    json_decref(ids);
    if (!json_array_size(calls)) {
        json_decref(calls);
        return 0;
    }
    tg_rr_note(ctx, TG_R27, NULL, err, calls);
    char id[40];
    snprintf(id, sizeof id, "chatcmpl-tg%016llx", (unsigned long long)seed);
    const char *model = json_string_value(json_object_get(ctx->request, "model"));
    json_t *msg = json_pack("{s:s, s:n, s:o}", "role", "assistant", "content", "tool_calls",
                            calls);
    json_t *choice = json_pack("{s:i, s:o, s:s}", "index", 0, "message", msg, "finish_reason",
                               "tool_calls");
    json_object_clear(resp);
    json_object_set_new(resp, "id", json_string(id));
    json_object_set_new(resp, "object", json_string("chat.completion"));
    json_object_set_new(resp, "created", json_integer((json_int_t)time(NULL)));
    json_object_set_new(resp, "model", json_string(model ? model : "unknown"));
    json_object_set_new(resp, "choices", json_pack("[o]", choice));
    if (ctx->legacy_functions)  /* this answer skips the response stages */
        tg_repair_legacy_answer(resp);
    return TG_REPAIR_NOW_SUCCESS;
}

/* A counter of usage u, or -1 when absent, null or not a number. */
static json_int_t counter(const json_t *u, const char *key)
{
    const json_t *v = json_object_get(u, key);
    if (json_is_integer(v))
        return json_integer_value(v);
    return json_is_real(v) && json_real_value(v) >= 0 ? (json_int_t)json_real_value(v) : -1;
}

int tg_rr_usage_shape(json_t *holder)
{
    json_t *u = json_object_get(holder, "usage");
    if (!json_is_object(u))
        return 0;
    json_int_t p = counter(u, "prompt_tokens"), c = counter(u, "completion_tokens"),
               t = counter(u, "total_tokens");
    if (p < 0 && c < 0 && t < 0) {  /* "usage": {} (MiniMax, zed-industries/zed#42893) */
        json_object_del(holder, "usage");
        return 1;
    }
    if (p >= 0 && c >= 0 && t >= 0 && json_is_integer(json_object_get(u, "prompt_tokens")) &&
        json_is_integer(json_object_get(u, "completion_tokens")) &&
        json_is_integer(json_object_get(u, "total_tokens")))
        return 0;
    /* a counter left out is what the others imply (total = prompt +
     * completion), never below 0: typed clients require all three
     * (router-for-me/CLIProxyAPI#4498, vercel/ai#2763) */
    if (c < 0)
        c = p >= 0 && t > p ? t - p : 0;
    if (p < 0)
        p = t > c ? t - c : 0;
    if (t < 0)
        t = p + c;
    json_object_set_new(u, "prompt_tokens", json_integer(p));
    json_object_set_new(u, "completion_tokens", json_integer(c));
    json_object_set_new(u, "total_tokens", json_integer(t));
    return 1;
}

/* A whole answer that holds no answer becomes an error in OpenAI's shape
 * (the proxy sends it with 502, the bridges in their API's shape), the
 * provider's body kept beside it: the agent sees a failure to retry rather
 * than a cut or empty turn it would take for a whole one. */
static void answer_to_error(json_t *resp, const char *code, json_t *msg)
{
    json_t *provider = json_deep_copy(resp);
    json_object_clear(resp);
    json_object_set_new(resp, "error",
                        json_pack("{s:o, s:s, s:n, s:s, s:o}", "message", msg, "type",
                                  "upstream_error", "param", "code", code, "provider_answer",
                                  provider));
}

/* R26 on a whole answer: the first choice whose finish_reason says the
 * generation failed (tg_rr_finish_failed), or NULL. */
static const char *failed_finish(const json_t *choices)
{
    size_t i;
    json_t *c;
    json_array_foreach(choices, i, c) {
        const char *f = json_string_value(json_object_get(c, "finish_reason"));
        if (tg_rr_finish_failed(f))
            return f;
    }
    return NULL;
}

int tg_repair_response(json_t *resp, tg_ctx *ctx)
{
    if (!json_is_object(resp) || !ctx)
        return 0;
    if (json_is_object(json_object_get(resp, "error")))
        return recover_tool_use_failed(resp, ctx);
    json_t *choices = json_object_get(resp, "choices");
    if (!json_is_array(choices) && tg_rr_on(ctx, TG_RR_FINISH)) {
        /* "choices": null (MiniMax through a gateway, CherryHQ/cherry-studio#11287)
         * or none: a success status without a chat completion (section 8) */
        tg_rr_note_other(ctx, "section 8", "choices", choices, NULL);
        answer_to_error(resp, "bad_upstream_response",
                        json_string(choices ? "upstream answered without a chat completion: "
                                              "choices is not a list"
                                            : "upstream answered without a chat completion: "
                                              "no choices"));
        return 0;
    }
    const char *failed = tg_rr_on(ctx, TG_RR_FINISH) ? failed_finish(choices) : NULL;
    if (failed) {
        tg_rr_note(ctx, TG_R26, "finish_reason", NULL, NULL);
        answer_to_error(resp, "upstream_finish_error",
                        json_sprintf("upstream ended the answer with finish_reason \"%.40s\"",
                                     failed));
        return 0;
    }
    if (tg_rr_usage_shape(resp))
        tg_rr_note(ctx, TG_R22, "usage", NULL, NULL);
    const char *rid = json_string_value(json_object_get(resp, "id"));
    size_t i;
    json_t *c;
    json_array_foreach(choices, i, c) {
        if (!json_is_object(c))
            continue;
        json_t *ix = json_object_get(c, "index");
        repair_choice(ctx, c, tg_rr_seed(rid, json_is_integer(ix) ? (long)json_integer_value(ix)
                                                                  : (long)i));
    }
    return 0;
}

int tg_repair_decode_args(tg_ctx *ctx, const json_t *params, json_t *args)
{
    return tg_rr_decode_schema(ctx, params, args);
}

/* --- whole answers that need nothing -------------------------------------- */

/* The first non-blank byte after the colon that follows a key at p. */
static const char *value_after(const char *p, const char *e)
{
    while (p < e && *p != ':')
        p++;
    for (p++; p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'); p++)
        ;
    return p;
}

/* What a quote at p starts, as tg_repair_surely_plain's byte search would
 * find it: true when the answer needs a look (an "error" key, a content
 * list, an empty role). Any quote counts, inside a string or not: an
 * escaped one too, as a search of the bytes would. */
static bool quote_needs_look(const char *p, const char *e)
{
    size_t left = (size_t)(e - p);
    switch (p[1 < left ? 1 : 0]) {
    case 'e':
        return left >= 7 && !memcmp(p, "\"error\"", 7);
    case 'c':
        if (left >= 9 && !memcmp(p, "\"content\"", 9)) {
            const char *v = value_after(p + 9, e);
            return v < e && *v == '[';  /* R23: a list of parts */
        }
        return false;
    case 'r':
        if (left >= 6 && !memcmp(p, "\"role\"", 6)) {
            const char *v = value_after(p + 6, e);
            return e - v < 3 || v[0] != '"' || v[1] == '"';  /* R25 */
        }
        return false;
    default:
        return false;
    }
}

/* An underscore at p inside "tool_calls" or "function_call", anywhere. */
static bool underscore_in_call(const char *d, const char *p, const char *e)
{
    return (p - d >= 4 && e - (p - 4) >= 10 && !memcmp(p - 4, "tool_calls", 10)) ||
           (p - d >= 8 && e - (p - 8) >= 13 && !memcmp(p - 8, "function_call", 13));
}

/* A quote at q starts one of the words (its next byte says whether it may). */
static bool quote_hit(const char *q, const char *e)
{
    return e - q > 1 && (q[1] == 'e' || q[1] == 'c' || q[1] == 'r') && quote_needs_look(q, e);
}

/* Byte classes of plain_walk: what may start a needle, and what
 * tg_json_value_end's walk looks at. */
enum { B_QUOTE = 1, B_UNDER, B_OPEN, B_CLOSE, B_ESC };
static const unsigned char plain_class[256] = {
    ['"'] = B_QUOTE, ['_'] = B_UNDER, ['{'] = B_OPEN, ['['] = B_OPEN,
    ['}'] = B_CLOSE, [']'] = B_CLOSE, ['\\'] = B_ESC,
};

/* A quote or an underscore at p: true when it starts or is part of what
 * the answer needs a look for. */
static bool needs_look(const char *d, const char *p, const char *e)
{
    return *p == '"' ? quote_needs_look(p, e) : *p == '_' && underscore_in_call(d, p, e);
}

/* One walk over an answer d[0..e) that starts with '{', byte by byte:
 * true when it ends exactly at e as tg_json_value_end finds ends (strings
 * skipped, a quote after a backslash in a string escaped, brackets counted
 * outside strings) and holds none of what tg_repair_surely_plain looks
 * for. The same answer as that walk followed by a byte search (memmem)
 * for each word, which cost the bench's small answer 5,300 instructions
 * (seven scans); test_plain compares the two on generated answers. */
static bool plain_walk(const char *d, const char *e)
{
    int depth = 0;
    bool in_str = false;
    const unsigned char *c = plain_class;
    for (const char *p = d; p < e; p++) {
        unsigned char k = c[(unsigned char)*p];
        if (!k)
            continue;
        switch (k) {
        case B_QUOTE:
            if (quote_hit(p, e))
                return false;
            in_str = !in_str;
            break;
        case B_UNDER:
            if (underscore_in_call(d, p, e))
                return false;
            break;
        case B_ESC:  /* in a string, the next byte is escaped: looked at, passed */
            if (in_str && ++p < e && needs_look(d, p, e))
                return false;
            break;
        case B_OPEN:
            depth += !in_str;
            break;
        default: /* B_CLOSE */
            if (!in_str && --depth == 0)
                return p + 1 == e;
            break;
        }
    }
    return false;
}

/* plain_walk's answer, found by memchr: with no backslash in the answer
 * every quote opens or ends a string, so the walk goes from quote to
 * quote and looks at bytes only between strings (brackets); underscores
 * are found on their own. An answer's bytes are mostly in its strings:
 * the bench's small answer (266 bytes) takes 2,760 instructions so,
 * 3,320 byte by byte. An answer with a backslash is walked. */
static bool plain_scan(const char *d, const char *e)
{
    if (memchr(d, '\\', (size_t)(e - d)))
        return plain_walk(d, e);
    for (const char *u = memchr(d, '_', (size_t)(e - d)); u;
         u = memchr(u + 1, '_', (size_t)(e - u - 1)))
        if (underscore_in_call(d, u, e))
            return false;
    int depth = 0;
    for (const char *p = d;;) {
        const char *q = memchr(p, '"', (size_t)(e - p));
        for (const char *stop = q ? q : e; p < stop; p++) {  /* between strings */
            if (*p == '{' || *p == '[')
                depth++;
            else if ((*p == '}' || *p == ']') && --depth == 0)
                return p + 1 == e;
        }
        if (!q || quote_hit(q, e))
            return false;
        const char *end = memchr(q + 1, '"', (size_t)(e - q - 1));
        if (!end || quote_hit(end, e))
            return false;
        p = end + 1;
    }
}

/* R22 on the shortcut: usage, when an object, names OpenAI's three
 * counters with a number each (the first usage key: a whole answer has
 * one); anything else goes to the parse (tg_rr_usage_shape). */
bool tg_rr_usage_counters(const char *v, const char *e)
{
    static const char *const keys[] = {"\"prompt_tokens\"", "\"completion_tokens\"",
                                       "\"total_tokens\""};
    for (size_t k = 0; k < 3; k++) {
        const char *p = tg_rr_find(v, e, keys[k]);
        const char *x = p ? value_after(p + strlen(keys[k]), e) : e;
        if (x >= e || !isdigit((unsigned char)*x))
            return false;
    }
    return true;
}

static bool usage_plain(const char *d, const char *e)
{
    const char *u = tg_rr_find(d, e, "\"usage\"");
    const char *v = u ? value_after(u + 7, e) : e;
    return v >= e || *v != '{' || tg_rr_usage_counters(v, e);
}

/* R10 on the shortcut: every choice ends with one of OpenAI's own words
 * (tool_calls and function_call already send the answer to the parse).
 * An answer with a choice without finish_reason, or with another word
 * (`eos`, `end_turn`, null), needs repair_choice. A choice is counted by
 * its "message" key; a byte search, as the scan's words were. */
bool tg_repair_finish_plain(const char *d, size_t n)
{
    static const char *const ok[] = {"\"stop\"", "\"length\"", "\"content_filter\""};
    const char *e = d + n;
    size_t fins = 0, msgs = 0;
    for (const char *p = tg_rr_find(d, e, "\"finish_reason\""); p;
         p = tg_rr_find(p + 15, e, "\"finish_reason\""), fins++) {
        const char *v = value_after(p + 15, e);
        size_t i = 0;
        while (i < 3 && ((size_t)(e - v) < strlen(ok[i]) || memcmp(v, ok[i], strlen(ok[i]))))
            i++;
        if (i == 3)
            return false;
    }
    for (const char *p = tg_rr_find(d, e, "\"message\""); p; p = tg_rr_find(p + 9, e, "\"message\""))
        msgs++;
    /* choices not a list (null, or none at all): the parse says what it is */
    const char *c = tg_rr_find(d, e, "\"choices\"");
    const char *cv = c ? value_after(c + 9, e) : e;
    return cv < e && *cv == '[' && fins >= msgs && usage_plain(d, e);
}

bool tg_repair_surely_plain(const tg_ctx *ctx, const char *d, size_t n)
{
    const char *e = d + n;
    if (ctx->disc_state || ctx->rf_inverse ||
        (ctx->repair && ctx->repair->text_tool_calls && ctx->tools))
        return false;
    while (d < e && (*d == ' ' || *d == '\n' || *d == '\r' || *d == '\t'))
        d++;
    while (e > d && (e[-1] == ' ' || e[-1] == '\n' || e[-1] == '\r' || e[-1] == '\t'))
        e--;
    return d < e && *d == '{' && plain_scan(d, e);
}

/* ---- a whole answer as a stream ------------------------------------------ */

static json_t *chunk_of(json_t *resp, json_t *choice)
{
    json_t *ch = json_pack("{s:O?, s:s, s:O?, s:O?, s:[o]}", "id", json_object_get(resp, "id"),
                           "object", "chat.completion.chunk", "created",
                           json_object_get(resp, "created"), "model",
                           json_object_get(resp, "model"), "choices", choice);
    json_t *fp = json_object_get(resp, "system_fingerprint");
    if (ch && fp)
        json_object_set(ch, "system_fingerprint", fp);
    return ch;
}

static void send_chunk(tg_buf *out, json_t *chunk)
{
    tg_buf_puts(out, "data: ");
    tg_json_dump(chunk, out);
    tg_buf_puts(out, "\n\n");
    json_decref(chunk);
}

int tg_completion_sse(json_t *resp, tg_buf *out)
{
    json_t *choices = json_object_get(resp, "choices");
    if (!json_is_array(choices))
        return -1;
    static const char *const carried[] = {"content", "refusal", "reasoning_content", "reasoning",
                                          NULL};
    size_t i, n = json_array_size(choices);
    json_t *c;
    json_array_foreach(choices, i, c) {
        json_t *msg = json_object_get(c, "message");
        json_t *ix = json_object_get(c, "index");
        json_int_t index = json_is_integer(ix) ? json_integer_value(ix) : (json_int_t)i;
        json_t *role = json_object_get(msg, "role");
        json_t *delta = json_object();
        json_object_set_new(delta, "role", json_is_string(role) ? json_incref(role) : json_string("assistant"));
        for (const char *const *k = carried; *k; k++) {
            json_t *v = json_object_get(msg, *k);
            if (json_is_string(v))
                json_object_set(delta, *k, v);
        }
        send_chunk(out, chunk_of(resp, json_pack("{s:I, s:o, s:n}", "index", index, "delta", delta,
                                                 "finish_reason")));
        json_t *calls = json_object_get(msg, "tool_calls");
        if (json_array_size(calls)) {
            json_t *tcs = json_array();
            size_t j;
            json_t *tc;
            json_array_foreach(calls, j, tc) {
                json_t *t = json_deep_copy(tc);
                json_object_set_new(t, "index", json_integer((json_int_t)j));
                json_array_append_new(tcs, t);
            }
            send_chunk(out, chunk_of(resp, json_pack("{s:I, s:{s:o}, s:n}", "index", index, "delta",
                                                     "tool_calls", tcs, "finish_reason")));
        }
        json_t *fin = json_object_get(c, "finish_reason");
        json_t *last = chunk_of(resp, json_pack("{s:I, s:{}, s:O}", "index", index, "delta",
                                                "finish_reason", json_is_string(fin) ? fin : json_null()));
        json_t *usage = json_object_get(resp, "usage");
        if (i + 1 == n && usage)
            json_object_set(last, "usage", usage);
        send_chunk(out, last);
    }
    tg_buf_puts(out, "data: [DONE]\n\n");
    return 0;
}

/* ---- provider error bodies ---------------------------------------------- */

static const char *error_type_for(long status)
{
    switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    default: return status >= 400 && status < 500 ? "invalid_request_error" : "api_error";
    }
}

/* The provider's message, type and code, wherever its shape keeps them. */
static void find_error_parts(json_t *v, const char **msg, json_t **type, json_t **code,
                             json_t **param, int depth)
{
    if (depth > 3 || !v)
        return;
    if (json_is_array(v)) {  /* Gemini: [{"error": {...}}] */
        find_error_parts(json_array_get(v, 0), msg, type, code, param, depth + 1);
        return;
    }
    if (!json_is_object(v))
        return;
    json_t *e = json_object_get(v, "error");
    if (json_is_object(e)) {
        find_error_parts(e, msg, type, code, param, depth + 1);
    } else if (json_is_string(e) && !*msg) {
        *msg = json_string_value(e);
    }
    json_t *m = json_object_get(v, "message");
    if (!*msg && json_is_string(m))
        *msg = json_string_value(m);
    json_t *t = json_object_get(v, "type");
    if (!json_is_string(t))
        t = json_object_get(v, "status");  /* Gemini: "RESOURCE_EXHAUSTED" */
    if (!*type && json_is_string(t) && strcmp(json_string_value(t), "error"))
        *type = t;
    json_t *c = json_object_get(v, "code");
    if (!*code && (json_is_string(c) || json_is_integer(c)))
        *code = c;
    json_t *p = json_object_get(v, "param");
    if (!*param && json_is_string(p))
        *param = p;
}

char *tg_upstream_error_body(const char *body, size_t len, long status, size_t *outlen)
{
    json_t *v = tg_json_load(body ? body : "", len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    json_t *e = json_object_get(v, "error");
    if (json_is_object(e) && json_is_string(json_object_get(e, "message"))) {
        json_decref(v);
        return NULL;  /* OpenAI's shape already */
    }
    const char *msg = NULL;
    json_t *type = NULL, *code = NULL, *param = NULL;
    find_error_parts(v, &msg, &type, &code, &param, 0);
    char *text = NULL;
    json_t *detail = json_object_get(v, "detail");  /* FastAPI / pydantic */
    if (!msg && detail) {
        text = json_is_string(detail) ? tg_strdup(json_string_value(detail))
                                      : tg_json_dumps(detail);
        msg = text;
    }
    if (!msg && v) {
        text = tg_json_dumps(v);
        msg = text;
    }
    json_t *out_msg;
    if (msg && status >= 200 && status < 300) {
        out_msg = json_sprintf("upstream answered %ld without a chat completion: %.2000s", status, msg);
    } else if (msg) {
        out_msg = json_string(msg);
    } else {  /* not JSON: the provider's text (cut, made valid UTF-8) */
        tg_buf b = {0};
        tg_buf_printf(&b, "upstream answered %ld%s: ", status,
                      status >= 200 && status < 300 ? " without a chat completion" : "");
        size_t n = len > 2000 ? 2000 : len;
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = (unsigned char)body[i];
            char c = ch < 0x80 && (ch >= 0x20 || ch == '\n' || ch == '\t') ? (char)ch : '?';
            tg_buf_append(&b, &c, 1);
        }
        out_msg = json_stringn(b.data ? b.data : "", b.len);
        tg_buf_free(&b);
    }
    if (!out_msg)
        out_msg = json_sprintf("upstream answered %ld", status);
    bool ok_status = status >= 200 && status < 300;  /* a success with no answer in it */
    json_t *tp = type ? json_incref(type)
                      : json_string(ok_status ? "upstream_error" : error_type_for(status));
    json_t *cd = code ? json_incref(code)
                      : ok_status ? json_string("bad_upstream_response") : json_null();
    json_t *err = json_pack("{s:o, s:o, s:O, s:o}", "message", out_msg, "type", tp, "param",
                            param ? param : json_null(), "code", cd);
    if (v)
        json_object_set(err, "provider_error", v);
    json_t *wrap = json_pack("{s:o}", "error", err);
    free(text);
    json_decref(v);
    char *s = tg_json_dumps(wrap);
    json_decref(wrap);
    *outlen = strlen(s);
    return s;
}

/* --- the legacy answer shape ---------------------------------------------- */

/* An agent that declared functions[] (hygiene.c turned them into tools)
 * reads message.function_call and finish_reason "function_call". Its first
 * call becomes that: in a message the first entry, in a stream delta the
 * entry of index 0 (whole or a continuation of its arguments). That shape
 * holds one call; any after it stay in tool_calls, since an answer is never
 * cut. */
void tg_rr_legacy_calls(json_t *holder)
{
    json_t *calls = json_object_get(holder, "tool_calls");
    if (!json_is_array(calls) || !json_array_size(calls))
        return;
    size_t i, at = 0;
    json_t *c;
    if (json_object_get(json_array_get(calls, 0), "index")) {  /* a delta */
        at = (size_t)-1;
        json_array_foreach(calls, i, c) {
            json_t *ix = json_object_get(c, "index");
            if (json_is_integer(ix) && json_integer_value(ix) == 0) {
                at = i;
                break;
            }
        }
    }
    json_t *call = json_array_get(calls, at);
    if (!call)
        return;
    json_t *fn = json_object_get(call, "function");
    json_t *legacy = json_object();
    if (json_is_string(json_object_get(fn, "name")))
        json_object_set(legacy, "name", json_object_get(fn, "name"));
    if (json_is_string(json_object_get(fn, "arguments")))
        json_object_set(legacy, "arguments", json_object_get(fn, "arguments"));
    json_object_set_new(holder, "function_call", legacy);
    json_array_remove(calls, at);
    if (!json_array_size(calls))
        json_object_del(holder, "tool_calls");
}

const char *tg_rr_legacy_finish(const char *f)
{
    return f && !strcmp(f, "tool_calls") ? "function_call" : f;
}

void tg_repair_legacy_answer(json_t *resp)
{
    size_t i;
    json_t *ch;
    json_array_foreach(json_object_get(resp, "choices"), i, ch) {
        json_t *msg = json_object_get(ch, "message");
        if (json_is_object(msg))
            tg_rr_legacy_calls(msg);
        const char *f = json_string_value(json_object_get(ch, "finish_reason"));
        if (f && tg_rr_legacy_finish(f) != f)
            json_object_set_new(ch, "finish_reason", json_string(tg_rr_legacy_finish(f)));
    }
}
