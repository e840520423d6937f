/* repair_int.h -- what the repair files share among themselves (repair.c,
 * repair_stream.c, repair_text.c, jsonfix.c). Not for other stages. */
#ifndef TG_REPAIR_INT_H
#define TG_REPAIR_INT_H

#include <stdint.h>
#include <string.h>

#include "core/ctx.h"
#include "core/jsonfix.h"
#include "repair/repair.h"
#include "sanitize/schema.h"

/* The first needle in [s, e), or NULL (also for s NULL or e before s):
 * the one byte search of the repair's scans. */
static inline const char *tg_rr_find(const char *s, const char *e, const char *needle)
{
    size_t n = strlen(needle);
    if (!s || !e || e < s || (size_t)(e - s) < n)
        return NULL;
    return memmem(s, (size_t)(e - s), needle, n);
}

/* repair.c --------------------------------------------------------------- */

static inline bool tg_rr_on(const tg_ctx *ctx, unsigned flag)
{
    return ctx->repair && (ctx->repair->flags & flag);
}
/* The declared tool (the agent's own tools entry, borrowed) for an agent
 * name, or NULL. */
const json_t *tg_rr_tool_peek(const tg_ctx *ctx, const char *agent_name);
/* Is the upstream name one the agent declared (after reverse renaming)? */
bool tg_rr_declared(const tg_ctx *ctx, const char *upstream_name);
/* R12 applies: text_tool_calls on, tools declared, tool_choice not "none". */
bool tg_rr_text_calls_on(const tg_ctx *ctx);
/* Seed for synthesized ids, from the response id and the choice index. */
uint64_t tg_rr_seed(const char *resp_id, long choice);
/* "call_" + 24 alphanumerics, from a hash of the arguments (R8). */
void tg_rr_synth_id(char out[32], uint64_t seed, size_t pos, const char *name,
                    const char *args, unsigned attempt);
/* Repair an array of OpenAI-shaped tool calls in place, for the message
 * whose ids so far are the keys of `ids` (a set, updated): R20 split, R1,
 * names reversed, R13/R14/R15/json fix/inverse arg mapping, R8/R9 ids.
 * first_pos is the position of calls[0] in the agent's message. Calls that
 * cannot be delivered (no name) are removed and counted as failures.
 * Returns the number of calls left. */
size_t tg_rr_fix_calls(tg_ctx *ctx, json_t *calls, uint64_t seed, size_t first_pos,
                       json_t *ids);

/* custom_calls.c: is agent_name a chat custom tool sent up as a function
 * (sanitize/custom.h)? And its calls among calls (repaired function calls)
 * turned back into custom calls, in place. */
bool tg_rr_is_custom(const tg_ctx *ctx, const char *agent_name);
bool tg_rr_custom_shaped(const json_t *call);  /* {"type":"custom","custom":{...}} */
void tg_rr_custom_calls(tg_ctx *ctx, json_t *calls);
/* R8/R9 for one call (its "id" set in place): a missing id is synthesized
 * from the agent name and args, one the message has already is made
 * unique; the result joins the `ids` set. */
void tg_rr_assign_id(tg_ctx *ctx, json_t *call, uint64_t seed, size_t pos, const char *agent,
                     const char *args, json_t *ids);
/* The finish_reason the agent must see for a choice with ncalls calls;
 * returns `f` itself when nothing changes (R10, R11). */
const char *tg_rr_finish(tg_ctx *ctx, const char *f, size_t ncalls);
/* Content written for a rewritten response_format schema, restored to the
 * agent's schema: a new string, or NULL (unparsable, or nothing to undo). */
json_t *tg_rr_structured_content(tg_ctx *ctx, const char *text, size_t n);
/* The legacy answer shape on a message or stream delta: its first call (a
 * delta's index 0) as function_call (see tg_repair_legacy_answer). */
void tg_rr_legacy_calls(json_t *holder);
const char *tg_rr_legacy_finish(const char *f);
/* Mistral content list -> text (and thinking into reasoning_content) on a
 * message or delta (R23). Returns 1 when changed. */
int tg_rr_flatten_content(tg_ctx *ctx, json_t *msg);
/* Count and record one repair: of quirk q (recorded under its name "Rn"),
 * or of a rule no R-number names (counted as TG_Q_OTHER). Then one failure. */
void tg_rr_note(tg_ctx *ctx, tg_quirk q, const char *where, json_t *before, json_t *after);
void tg_rr_note_other(tg_ctx *ctx, const char *rule, const char *where, json_t *before,
                      json_t *after);
void tg_rr_fail(tg_ctx *ctx, const char *rule, const char *where, json_t *before);
/* R27: the calls in a Groq tool_use_failed error's failed_generation that
 * name declared tools (new array of OpenAI calls, not yet fixed), or NULL. */
json_t *tg_rr_failed_generation(tg_ctx *ctx, const json_t *err);
/* A recovered text call {"name","arguments":object} -> OpenAI tool call
 * (new reference, empty id to be synthesized). */
json_t *tg_rr_call_from_text(const json_t *tc);
/* GLM argument markup inside a call's name (repair_text.c): the declared
 * name before it and the pairs as arguments. 0 when fn changed. */
int tg_rr_name_markup(const tg_ctx *ctx, json_t *fn);

/* json_prefix.c ---------------------------------------------------------- */

#define TG_JPREFIX_DEPTH 64
/* Incremental check that text is the start of one strict JSON object.
 * Zero-initialize; no resources. */
typedef struct tg_jprefix {
    char stack[TG_JPREFIX_DEPTH];
    char lit[40];
    unsigned char st, nlit, uhex;
    int depth;
    bool in_str, esc, key, bad;
    size_t pos;  /* bytes accepted so far */
} tg_jprefix;
/* Feed n more bytes: returns how many of them keep the text a prefix of
 * one object (n, or fewer once it stops being one; 0 ever after). */
size_t tg_jprefix_feed(tg_jprefix *j, const char *s, size_t n);
/* The object has closed (what came after it may have been refused: then
 * pos < the bytes fed). */
bool tg_jprefix_complete(const tg_jprefix *j);

/* stream_scan.c ---------------------------------------------------------- */

#define TG_FRAG_ENV 6
typedef struct tg_frag_env {
    const char *key;   /* static: "id", "object", "model", ... "created" */
    const char *str;   /* the string's bytes in the event (no escapes); NULL for created */
    size_t len;
    long long num;     /* created */
} tg_frag_env;

/* Copy n envelope entries read from bytes at from to the same bytes at to
 * (their strings point into them). */
static inline void tg_frag_env_move(tg_frag_env *dst, const tg_frag_env *src, int n,
                                    const char *from, const char *to)
{
    for (int i = 0; i < n; i++) {
        dst[i] = src[i];
        if (src[i].str)
            dst[i].str = to + (src[i].str - from);
    }
}
/* An envelope tg_scan_event read before: the event's bytes up to its
 * "choices" key and the envelope it made of them. An event that starts
 * with the very same bytes is read the same up to there (the scans go
 * left to right and keep nothing else), so a scan given it compares them
 * and starts at "choices". Only tg_scan_event's (compact) reading: the
 * fragment scan accepts those bytes alike, not the other way round. */
typedef struct tg_frag_pre {
    const char *bytes;
    size_t len;
    const tg_frag_env *env;  /* strings point into bytes */
    int nenv;
} tg_frag_pre;
/* What the scan read of a live argument fragment. args is the caller's
 * buffer (appended to: the decoded arguments text). */
typedef struct tg_frag {
    const tg_frag_pre *pre;        /* in: an envelope read before, or NULL */
    size_t env_end;                /* tg_scan_event: where "choices" starts */
    tg_frag_env env[TG_FRAG_ENV];  /* the envelope keys, in the event's order */
    int nenv;
    long choice;  /* choices[0].index, -1 when absent */
    long index;   /* the call's index */
    tg_buf *args;
    size_t args_at, args_end;  /* the arguments string's bytes in the event:
                                  after its opening quote, at its closing one */
    /* tg_scan_event only (the bytes in the event, no escapes): */
    bool call;                 /* the delta is one call's start, else {} */
    const char *id, *name;     /* the call's */
    size_t id_len, name_len;
    const char *finish;        /* finish_reason, NULL for null */
    size_t finish_len;
} tg_frag;
/* True when data is surely one chunk of exactly the argument-fragment
 * shape (stream_scan.c's design comment); false when unsure. */
bool tg_scan_fragment(const char *data, size_t len, tg_frag *f);
/* The arguments string's bytes after the opening quote, decoded into out
 * as tg_scan_fragment decodes them; *end: the offset of the closing quote.
 * False where tg_scan_fragment would refuse the string. */
bool tg_scan_args(const char *data, size_t len, tg_buf *out, size_t *end);
/* True when data is surely, byte for byte, a chunk as tg_stream writes
 * it (compact, canonical escapes, the envelope's keys before choices, no
 * usage) of one of two shapes: one choice whose delta starts one call
 * ({"index","id","type":"function","function":{"name","arguments"}},
 * finish_reason null), or whose delta is {} (any finish_reason). Whether
 * tg_stream would write these very bytes is the caller's to decide
 * (repair_stream.c relay_event); false when unsure. */
bool tg_scan_event(const char *data, size_t len, tg_frag *f);

/* repair_schema.c -------------------------------------------------------- */

/* R15: values of the agent tool's arguments that are strings where its
 * schema ($ref/$defs, unions followed) wants an object, array, number or
 * boolean, and that parse to exactly that, are replaced in place. Returns
 * the number replaced (each noted). */
int tg_rr_decode_values(tg_ctx *ctx, const char *agent_name, json_t *args);
/* R29: keys of an object the agent's schema closes (additionalProperties:
 * false, no patternProperties) that it does not declare are removed, at
 * every level. Returns the number removed (each noted). */
int tg_rr_drop_forbidden_keys(tg_ctx *ctx, const char *agent_name, json_t *args);
/* Could R15 or R29 (as switched on) change arguments of this agent tool?
 * False means its arguments need no whole-value repair from the schema. */
bool tg_rr_schema_repairs(const tg_ctx *ctx, const char *agent_name);

/* repair_text.c ---------------------------------------------------------- */

/* Scan s[0..n) for tool-call markup (R12): bare JSON {"name","arguments"}
 * at the start of the message, <tool_call>{json}</tool_call>, <tools>,
 * <function=NAME><parameter=K>v</parameter></function>, <invoke name=...>.
 * Text decided to be ordinary content is appended to `text`; calls whose
 * names were all declared are appended to `calls` as {"name","arguments"}
 * with arguments coerced by the declared schema, and their markup removed.
 * Returns the bytes decided; the caller keeps s[ret..n) and scans again with
 * more text. final: no more text will come (truncated markup is parsed as
 * far as it goes). *at_start: only whitespace so far in this message. */
size_t tg_text_scan(const tg_ctx *ctx, const char *s, size_t n, bool final,
                    bool *at_start, tg_buf *text, json_t *calls);

#endif
