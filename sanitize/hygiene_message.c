/* hygiene_message.c -- the message-hygiene stage on one message: the keys
 * a role may carry (allow-lists, bookkeeping, nulls, reasoning), content
 * in the shape the target takes, tool calls cleaned (arguments a JSON-object
 * string, foreign fields, Gemini's thought signatures) and their ids
 * rewritten statelessly for Mistral and Anthropic (hygiene.c's design
 * comment). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bridge/pdftext.h"
#include "core/cache.h"
#include "core/ctx.h"
#include "core/hash.h"
#include "core/jsonfix.h"
#include "core/jsonio.h"
#include "sanitize/hygiene_message.h"

/* Rule 47: the OpenAI message schema as Groq, Fireworks and Cerebras check
 * it. "function" is the legacy role with the same shape as user. */
static const char *const oa_plain[] = {"role", "content", "name", NULL};
static const char *const oa_assistant[] = {"role", "content", "name", "tool_calls", NULL};
static const char *const oa_tool[] = {"role", "content", "tool_call_id", NULL};
const role_keys tg_hy_openai_roles[] = {
    {"system", oa_plain},  {"developer", oa_plain},       {"user", oa_plain},
    {"function", oa_plain}, {"assistant", oa_assistant}, {"tool", oa_tool},
    {NULL, NULL},
};
/* Rules 47, 49: Groq refuses `messages[].name` with a 400 on every role
 * (console.groq.com/docs/openai, "Currently Unsupported OpenAI Features",
 * checked 2026-12-06). */
static const char *const gq_plain[] = {"role", "content", NULL};
static const char *const gq_assistant[] = {"role", "content", "tool_calls", NULL};
const role_keys tg_hy_groq_roles[] = {
    {"system", gq_plain},  {"developer", gq_plain},       {"user", gq_plain},
    {"function", gq_plain}, {"assistant", gq_assistant}, {"tool", oa_tool},
    {NULL, NULL},
};

/* Rule 43: Mistral's pydantic models (extra="forbid"); `name` only on tool. */
static const char *const mi_plain[] = {"role", "content", NULL};
static const char *const mi_assistant[] = {"role", "content", "tool_calls", "prefix", NULL};
static const char *const mi_tool[] = {"role", "content", "tool_call_id", "name", NULL};
const role_keys tg_hy_mistral_roles[] = {
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

/* Rule 43 says it for Mistral, rule 48 for Groq and the others. */
const char *tg_hy_null_rule(const walk *w)
{
    if (!(w->f & TG_MR_DROP_NULLS))
        return "rule 95";
    return w->row->roles == tg_hy_mistral_roles ? "rule 43" : "rule 48";
}

/* Groq and Mistral refuse every null; Gemini's OpenAI-compatible endpoint
 * every null it reads into a typed field ("Value is not a string: null":
 * refusal, github/copilot-sdk#2061; name, lastmile-ai/mcp-agent#121; stop,
 * floneum/kalosm#354), while an assistant's content null beside its calls
 * is OpenAI's own shape, which it takes. */
bool tg_hy_drop_null(const walk *w, const char *key, const json_t *val)
{
    if (!json_is_null(val))
        return false;
    return (w->f & TG_MR_DROP_NULLS) || ((w->f & TG_MR_NULL_KEYS) && strcmp(key, "content"));
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

/* Rule 84: OpenAI takes ids of at most 40 characters ("string too long.
 * Expected a string with maximum length 40"). */
#define SHORT_ID_MAX 40

/* Candidate number `salt` for id. Anthropic keeps the readable part of a
 * foreign id and adds a hash so that "a.b" and "a:b" stay distinct; a
 * short id (rule 84) keeps its first 28 characters and adds the hash. */
static const char *candidate_id(const walk *w, const char *id, unsigned salt,
                                char *buf, size_t len)
{
    if (w->f & TG_MR_MISTRAL_IDS) {
        if (!salt && mistral_id_ok(id))
            return id;
        base62(fnv1a(id, salt), buf, 9);
        return buf;
    }
    bool anthropic = w->f & TG_MR_ANTHROPIC_IDS;
    if (!salt && (anthropic ? anthropic_id_ok(id) : strlen(id) <= SHORT_ID_MAX))
        return id;
    size_t n = 0, keep = anthropic ? 40 : SHORT_ID_MAX - 12;
    for (; id[n] && n < keep && n + 12 < len; n++)
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
        if (!w->id_fwd) {  /* made at the first id: most requests carry none */
            w->id_fwd = json_object();
            w->id_used = json_object();
        }
        json_object_set_new(w->id_used, c, json_string(id));
        json_object_set_new(w->id_fwd, id, json_string(c));
        return json_string_value(json_object_get(w->id_fwd, id));
    }
}

static void map_id(walk *w, json_t *obj, const char *key)
{
    if (!(w->f & (TG_MR_MISTRAL_IDS | TG_MR_ANTHROPIC_IDS | TG_MR_SHORT_IDS)))
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
    bool mistral = w->f & TG_MR_MISTRAL_IDS, anthropic = w->f & TG_MR_ANTHROPIC_IDS;
    rebuild_key(w, obj, key, json_string(up),
                mistral ? "mistral-id" : anthropic ? "anthropic-id" : "short-id",
                mistral ? "rule 42" : anthropic ? "rule 39" : "rule 84");
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
        json_t *parts = json_is_object(fixed) ? NULL : tg_json_split_objects(s, n);
        bool merged = parts != NULL;
        if (merged) {
            /* several calls merged into one by a client that keyed a
             * stream's calls on an index the server wrote 0 for each
             * (litellm#33678: `{"path": "a.rs"}{"path": "b.rs"}`): the
             * first object is the call the turn's result answers first */
            json_decref(fixed);
            fixed = json_incref(json_array_get(parts, 0));
            json_decref(parts);
        }
        bool trailing = false;
        if (!json_is_object(fixed)) {
            /* a whole object and then stray bytes (`{"command": "ls"}}`,
             * Python's "Extra data", Cogtrix#2289): the object is the call */
            json_decref(fixed);
            fixed = tg_json_leading_object(s, n);
            trailing = fixed != NULL;
        }
        char *t = json_is_object(fixed) ? tg_json_dumps(fixed) : NULL;
        *how = !t         ? "arguments-json-lost"
               : merged   ? "arguments-json-first-of-merged"
               : trailing ? "arguments-json-trailing-data"
                          : "arguments-json-fixed";
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
        json_t *args = tg_json_get(fn, "arguments");
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
        else if (tg_hy_drop_null(w, key, val))
            drop_key(w, fn, key, val, "null-key", tg_hy_null_rule(w));
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
        else if (signature && (w->f & TG_MR_KEEP_SIGNATURE) && !json_is_null(val))
            continue;
        else if (signature && (w->f & (TG_MR_CALL_EXTRAS | TG_MR_CALL_SHAPE)))
            drop_key(w, call, key, val, "thought-signature", "rule 34");
        else if ((w->f & TG_MR_CALL_SHAPE) && !in_list(call_keys, key))
            drop_key(w, call, key, val, "call-shape", w->row->msg_rule);
        else if ((w->f & TG_MR_CALL_EXTRAS) && in_list(call_extra_keys, key))
            drop_key(w, call, key, val, "call-field", "section 4.1");
        else if (tg_hy_drop_null(w, key, val))
            drop_key(w, call, key, val, "null-key", tg_hy_null_rule(w));
    }
    if ((w->f & TG_MR_FIX_CALLS) && !tg_json_get(call, "type"))
        rebuild_key(w, call, "type", json_string("function"), "call-type", "rule 43");
    json_t *fn = tg_json_get(call, "function");
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
    json_t *google = tg_json_get(tg_json_get(call, "extra_content"), "google");
    return tg_json_is(tg_json_get(google, "thought_signature"), JSON_STRING);
}

static void fill_signature(walk *w, json_t *calls)
{
    size_t j;
    json_t *call;
    json_array_foreach(calls, j, call) if (has_signature(call)) return;
    call = json_array_get(calls, 0);
    if (!json_is_object(call) || tg_json_get(call, "extra_content"))
        return;
    size_t mark = jp_idx(&w->ptr, 0);
    rebuild_key(w, call, "extra_content",
                json_pack("{s:{s:s}}", "google", "thought_signature", skip_signature),
                "thought-signature-fill", "R19");
    jp_pop(&w->ptr, mark);
}

/* Gemini 3 and later check signatures; 1.x and 2.x models do not, and a
 * name without a version (gemini-flash-latest) is taken as current. */
bool tg_hy_model_checks_signatures(const char *model)
{
    const char *g = model ? strstr(model, "gemini-") : NULL;
    if (!g)
        return false;
    g += strlen("gemini-");
    if (*g < '0' || *g > '9')
        return true;
    return atoi(g) >= 3;
}

/* A replayed call without a function name calls nothing: LM Studio answered
 * `{"id": "", "type": "function"}` and refused it back (`Invalid 'messages'
 * in payload`, lmstudio-bug-tracker#830); no target takes a nameless call.
 * It goes (its result, left without a call, is the pairing's, section 9).
 * True when no call is left, and tool_calls went too. */
static bool drop_nameless_calls(walk *w, json_t *msg, json_t *calls)
{
    for (size_t j = json_array_size(calls); j-- > 0;) {
        json_t *fn = tg_json_get(json_array_get(calls, j), "function");
        const char *name = json_string_value(tg_json_get(fn, "name"));
        if (name && *name)
            continue;
        size_t m1 = jp_key(&w->ptr, "tool_calls"), m2 = jp_idx(&w->ptr, j);
        note(w, w->ptr.s, "nameless-call", "rule 8", json_array_get(calls, j), NULL);
        jp_pop(&w->ptr, m2);
        jp_pop(&w->ptr, m1);
        w->ctx->stats.fields_stripped++;
        json_array_remove(calls, j);
    }
    if (json_array_size(calls) > 0)
        return false;
    json_object_del(msg, "tool_calls");
    return true;
}

/* Cleans messages[i].tool_calls; true when calls remain. */
static bool clean_calls(walk *w, json_t *msg, bool assistant)
{
    json_t *calls = tg_json_get(msg, "tool_calls");
    if (!json_is_array(calls))
        return false;
    if (json_array_size(calls) == 0) {
        if (w->f & TG_MR_FIX_CALLS)  /* [] is "too short" for OpenAI (rule 55) */
            drop_key(w, msg, "tool_calls", calls, "empty-tool-calls", "rule 55");
        return false;
    }
    if (assistant && (w->f & TG_MR_FIX_CALLS) && drop_nameless_calls(w, msg, calls))
        return false;
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

role tg_hy_role_of(json_t *msg)
{
    const char *r = json_string_value(tg_json_get(msg, "role"));
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
    const role_keys *roles = w->row->roles ? w->row->roles : tg_hy_openai_roles;
    const char *r = json_string_value(tg_json_get(msg, "role"));
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
    if (tg_json_is(tg_json_get(msg, "reasoning_content"), JSON_STRING))
        return;
    json_t *alt = tg_json_get(msg, "reasoning");
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
    if (!(w->f & TG_MR_FIX_CONTENT))
        return;
    json_t *c = tg_json_get(msg, "content");
    /* OpenAI's assistant message: content "Required unless tool_calls or
     * function_call is specified"; a refusal stands in for it too (looked
     * up on assistant turns only: the others cannot have null content) */
    bool null_ok = r == R_ASSISTANT && !(w->f & TG_MR_NULL_WITH_CALLS) &&
                   (has_calls || tg_json_get(msg, "function_call") ||
                    tg_json_is(tg_json_get(msg, "refusal"), JSON_STRING));
    if (r == R_ASSISTANT && json_is_array(c) && json_array_size(c) == 0)
        rebuild_key(w, msg, "content", null_ok ? json_null() : json_string(""),
                    "empty-content", "rule 56");
    else if (!null_ok && r != R_OTHER && r != R_NONE && (!c || json_is_null(c)))
        rebuild_key(w, msg, "content", json_string(""), "null-content", "rule 55");
}

/* A base64 PDF's text as {text, pages, read, cut}, or {} when poppler
 * cannot open it (new reference), from the worker's cache under the kind
 * the Messages bridge keys it with, so an agent that resends its history
 * costs one read. */
static json_t *pdf_read(walk *w, const char *b64, size_t n)
{
    uint64_t key = tg_hash64(b64, n, 0);
    json_t *r = tg_cache_get(w->ctx->cache, "pdftext", key);  /* NULL cache: a miss */
    if (r)
        return r;
    tg_pdf_text info;
    tg_buf body = {0};
    if (tg_pdf_text_of_base64(b64, n, &body, &info))
        r = json_object();
    else
        r = json_pack("{s:s%, s:i, s:i, s:b}", "text", body.data ? body.data : "", body.len,
                      "pages", info.pages, "read", info.pages_read, "cut", info.cut);
    tg_cache_put(w->ctx->cache, "pdftext", key, r, body.len + 64);
    tg_buf_free(&body);
    return r;
}

/* Rule 99: a chat `file` part holding a base64 PDF, on a target that takes
 * no such part (DeepSeek: "file must have a file_id or file_data",
 * danny-avila/LibreChat#16235; OpenAI's own API is the one that does),
 * goes as a text part with the PDF's text, as the Messages bridge sends a
 * document block: the model reads the words rather than nothing. */
static void pdf_parts_text(walk *w, json_t *msg)
{
    static const char pre[] = "data:application/pdf;base64,";
    json_t *c = tg_json_get(msg, "content");
    size_t j;
    json_t *part;
    json_array_foreach(c, j, part) {
        const char *t = json_string_value(tg_json_get(part, "type"));
        const char *d = json_string_value(tg_json_get(tg_json_get(part, "file"), "file_data"));
        if (!t || strcmp(t, "file") || !d || strncmp(d, pre, sizeof pre - 1))
            continue;
        json_t *r = pdf_read(w, d + sizeof pre - 1, strlen(d + sizeof pre - 1));
        const json_t *text = json_object_get(r, "text");
        if (json_is_string(text)) {
            bool cut = json_is_true(json_object_get(r, "cut"));
            int pages = (int)json_integer_value(json_object_get(r, "pages"));
            tg_buf b = {0};
            tg_buf_printf(&b, "[the text of a %d-page PDF, extracted by toolgate: this provider "
                              "takes no PDF, so its layout and images are not here%s]\n\n",
                          pages, cut ? "; cut at toolgate's bound" : "");
            tg_buf_append(&b, json_string_value(text), json_string_length(text));
            if (cut)
                tg_buf_printf(&b, "\n\n[... %d of %d pages shown]",
                              (int)json_integer_value(json_object_get(r, "read")), pages);
            size_t mark = jp_idx(&w->ptr, j);
            note(w, w->ptr.s, "pdf-as-text", "rule 99", NULL, NULL);
            jp_pop(&w->ptr, mark);
            json_array_set_new(c, j, json_pack("{s:s, s:s%}", "type", "text", "text",
                                               b.data ? b.data : "", b.len));
            tg_buf_free(&b);
            tg_ctx_translated(w->ctx, "file part", "PDF as its text");
        }
        json_decref(r);
    }
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
    bool user = r == R_USER && (w->f & TG_MR_TEXT_ONLY);
    if (!(w->f & TG_MR_STRING_CONTENT) || r == R_OTHER || r == R_NONE || (r == R_USER && !user))
        return;
    json_t *c = tg_json_get(msg, "content");
    if (!json_is_array(c))
        return;
    size_t j;
    json_t *part;
    bool other = false;
    json_array_foreach(c, j, part) {
        const char *t = json_string_value(tg_json_get(part, "type"));
        if (!t || strcmp(t, "text") || !tg_json_is(tg_json_get(part, "text"), JSON_STRING))
            other = true;
    }
    if (user && !other)
        return;  /* a user turn's text parts are taken as a list */
    tg_buf t = {0};
    json_array_foreach(c, j, part) {
        const char *pt = json_string_value(tg_json_get(part, "type"));
        json_t *text = tg_json_get(part, "text");
        if (user && (!pt || strcmp(pt, "text") || !json_is_string(text))) {
            /* rule 90: the model learns a part was there, not what it held */
            tg_buf_printf(&t, "%s[%s not sent: this model reads text only]", t.len ? "\n\n" : "",
                          pt ? pt : "part");
            continue;
        }
        if (!pt || strcmp(pt, "text") || !json_is_string(text))
            continue;
        if (t.len && json_string_length(text))
            tg_buf_puts(&t, "\n\n");
        tg_buf_append(&t, json_string_value(text), json_string_length(text));
    }
    const char *how = user && other ? "non-text-parts-as-notes"
                      : other       ? "non-text-parts-dropped"
                                    : "parts-as-string";
    rebuild_key(w, msg, "content", json_stringn(t.data ? t.data : "", t.len), how,
                user && other ? "rule 90" : "rule 68");
    if (user && other) {  /* X-Toolgate-Translated: "image as text" */
        tg_ctx_translated(w->ctx, "non-text parts", "as text notes");
    } else if (other) {
        w->ctx->stats.fields_stripped++;
    }
    tg_buf_free(&t);
}

/* Rule 80: xAI takes one text part a message ("The model expects a single
 * `text` element per message.", nocmt/LLMSearchPlus#2): the text parts of
 * a content list are joined by a blank line into the first one, the other
 * parts (images) keep their order; a list of text parts only becomes the
 * string. Nothing is lost. */
static void one_text_part(walk *w, json_t *msg)
{
    json_t *c = tg_json_get(msg, "content");
    size_t j, texts = 0, first = 0;
    json_t *part;
    json_array_foreach(c, j, part) {
        const char *pt = json_string_value(tg_json_get(part, "type"));
        if (pt && !strcmp(pt, "text") && tg_json_is(tg_json_get(part, "text"), JSON_STRING) &&
            !texts++)
            first = j;
    }
    if (texts < 2)
        return;
    tg_buf t = {0};
    json_t *out = json_array();
    json_array_foreach(c, j, part) {
        const char *pt = json_string_value(tg_json_get(part, "type"));
        json_t *text = tg_json_get(part, "text");
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
    json_t *c = tg_json_get(msg, "content");
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
    json_t *c = tg_json_get(msg, "content");
    size_t mark = jp_key(&w->ptr, "content");
    for (size_t j = json_array_size(c); j-- > 0;) {
        json_t *part = json_array_get(c, j);
        json_t *text = tg_json_get(part, "text");
        const char *t = json_string_value(tg_json_get(part, "type"));
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
    json_t *ref = tg_json_get(msg, "refusal");
    json_t *c = tg_json_get(msg, "content");
    bool drops = (allow && !in_list(allow, "refusal")) || (w->f & TG_MR_DROP_EMPTY);
    if (!drops || !json_is_string(ref) || !json_string_length(ref))
        return;
    if (c && !json_is_null(c) && !(json_is_string(c) && !json_string_length(c)) &&
        !(json_is_array(c) && !json_array_size(c)))
        return;
    rebuild_key(w, msg, "content", json_copy(ref), "refusal-as-content", w->row->msg_rule);
}

/* A prompt-cache hint on a message or a part: Anthropic's cache_control, and
 * OpenAI's prompt_cache_breakpoint (openai 7.60: text, image, audio and file
 * parts); a target that refuses the one is not told the other. */
static bool is_cache_hint(const char *key)
{
    return !strcmp(key, "cache_control") || !strcmp(key, "prompt_cache_breakpoint");
}

/* Content parts: markers, cache hints, and for strict targets only
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
        const char *t = json_string_value(tg_json_get(part, "type"));
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
            else if ((w->f & TG_MR_DROP_CACHE) && is_cache_hint(key))
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
                                       const char *const *allow, role r, bool tool_turn,
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
    if ((w->f & TG_MR_DROP_CACHE) && is_cache_hint(key))
        return *ref = "section 4.1", "cache-control";
    if (tg_hy_drop_null(w, key, val))
        return *ref = tg_hy_null_rule(w), "null-key";
    /* Rule 81: xAI, "Only messages of role 'user' can have a name."
     * (BerriAI/litellm#9720); the name is the agent's label of a turn, not
     * words the model reads, so nothing the model sees is lost. */
    if ((w->f & TG_MR_NAME_USER_ONLY) && r != R_USER && !strcmp(key, "name"))
        return *ref = "rule 81", "name-not-user";
    return NULL;
}

static bool empty_content(json_t *msg)
{
    json_t *c = tg_json_get(msg, "content");
    return !c || json_is_null(c) || (json_is_string(c) && !json_string_length(c)) ||
           (json_is_array(c) && !json_array_size(c));
}

/* Rule 83: no content, or only text parts without text: nothing the model
 * reads. */
static bool no_words(json_t *msg)
{
    json_t *c = tg_json_get(msg, "content");
    if (!json_is_array(c))
        return empty_content(msg);
    size_t i;
    json_t *p;
    json_array_foreach(c, i, p) {
        const char *type = json_string_value(tg_json_get(p, "type"));
        json_t *t = tg_json_get(p, "text");
        if (!type || strcmp(type, "text") || !json_is_string(t) || json_string_length(t))
            return false;
    }
    return true;
}

/* Rule 45: an assistant turn with nothing in it. */
static bool empty_assistant(json_t *msg)
{
    return empty_content(msg) && !tg_json_get(msg, "tool_calls") &&
           !tg_json_is(tg_json_get(msg, "prefix"), JSON_TRUE);
}

/* Records that a whole message goes; false, for clean_message to return. */
static bool message_dropped(walk *w, json_t *msg, const char *name, const char *ref)
{
    note(w, w->ptr.s, name, ref, msg, NULL);
    w->ctx->stats.fields_stripped++;
    return false;
}

/* Cleans one message in place; false when the message must be dropped. */
bool tg_hy_clean_message(walk *w, json_t *msg)
{
    role r = tg_hy_role_of(msg);
    if (r == R_DEVELOPER && (w->f & TG_MR_DEVELOPER_ROLE)) {
        rebuild_key(w, msg, "role", json_string("system"), "developer-role", "rule 43");
        r = R_SYSTEM;
    }
    w->role = r;  /* R_NONE below when the role key goes */
    bool has_calls = clean_calls(w, msg, r == R_ASSISTANT);
    bool tool_turn = r == R_ASSISTANT && has_calls;
    const char *const *allow = allowed_keys(w, msg);
    if (r == R_ASSISTANT)
        refusal_to_content(w, msg, allow);
    if ((w->f & TG_MR_EMPTY_TEXT) && tg_json_is(tg_json_get(msg, "content"), JSON_ARRAY))
        drop_empty_text_parts(w, msg);
    if (tool_turn && (w->f & TG_MR_KEEP_REASONING))
        rebuild_reasoning(w, msg);
    fix_content(w, msg, r, has_calls);
    if (tool_turn && (w->f & TG_MR_EMPTY_TEXT))
        empty_text_to_null(w, msg);
    json_t *content = tg_json_get(msg, "content");
    if (json_is_array(content))
        clean_parts(w, content);
    if ((w->f & TG_MR_PDF_TEXT) && tg_json_is(tg_json_get(msg, "content"), JSON_ARRAY))
        pdf_parts_text(w, msg);
    parts_to_string(w, msg, r);
    if ((w->f & TG_MR_ONE_TEXT) && tg_json_is(tg_json_get(msg, "content"), JSON_ARRAY))
        one_text_part(w, msg);

    const char *key, *ref;
    json_t *val;
    void *tmp;
    json_object_foreach_safe(msg, tmp, key, val) {
        const char *why = message_key_verdict(w, key, val, allow, r, tool_turn, &ref);
        if (why && !strcmp(key, "role"))
            w->role = R_NONE;  /* a marker prefix such as "r" */
        if (why)
            drop_key(w, msg, key, val, why, ref);
    }
    if (r == R_TOOL)
        map_id(w, msg, "tool_call_id");

    if (r == R_SYSTEM && (w->f & TG_MR_EMPTY_TEXT) && empty_content(msg))
        return message_dropped(w, msg, "empty-system", w->row->msg_rule);
    /* Rule 83: xAI, "Each message must have at least one content element."
     * (n8n-io/n8n#14797): an empty system, developer or earlier user turn
     * says nothing, so it goes; the history's last turn stays, as below. */
    if ((r == R_SYSTEM || r == R_DEVELOPER || r == R_USER) && !w->last &&
        (w->f & TG_MR_EMPTY_TURNS) && no_words(msg))
        return message_dropped(w, msg, r == R_USER ? "empty-user" : "empty-system", "rule 83");
    /* the same refusal of an assistant turn with neither words nor calls
     * (a turn cut before its first token, charmbracelet/crush#964): the
     * next answer is asked for with or without it, so it goes anywhere */
    if (r == R_ASSISTANT && (w->f & TG_MR_EMPTY_TURNS) && no_words(msg) &&
        !json_array_size(tg_json_get(msg, "tool_calls")) &&
        !tg_json_is(tg_json_get(msg, "prefix"), JSON_TRUE))
        return message_dropped(w, msg, "empty-assistant", "rule 83");
    /* Anthropic: "text content blocks must be non-empty". An empty user
     * turn says nothing, so it goes, but not the last one: without it the
     * request would ask for something else (a continuation of the
     * assistant), and the provider's own error is the honest answer. */
    if (r == R_USER && (w->f & TG_MR_EMPTY_TEXT) && !w->last && empty_content(msg))
        return message_dropped(w, msg, "empty-user", w->row->msg_rule);
    if (r == R_ASSISTANT && (w->f & TG_MR_DROP_EMPTY) && empty_assistant(msg))
        return message_dropped(w, msg, "empty-assistant",
                               w->row->roles == tg_hy_mistral_roles ? "rule 45" : w->row->msg_rule);
    return true;
}
