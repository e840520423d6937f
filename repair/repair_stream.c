/* repair_stream.c -- response repair for streamed answers.
 *
 * Upstream tool-call deltas are untrustworthy (docs/dialects.md section 5): the
 * index is missing (R2, R3), reused for parallel calls (R4), sparse (R5);
 * the name arrives after the arguments (R6); continuations repeat empty
 * names (R7); ids are empty (R8) or repeated (R9); the whole call, finish
 * and usage come in one chunk (R17). So tool-call deltas are never
 * forwarded as they are: each upstream fragment is correlated to a call
 * (by id first, then index hint, then the most recent call), and the call's
 * arguments are buffered until the call is complete (the next call starts,
 * or finish_reason arrives). The call then goes to the agent in ONE delta:
 * dense index, id, type, name and the whole, repaired argument string.
 *
 * That holding is what a repair that needs the whole arguments costs (R4/
 * R20 splitting, R13, R15, R29, JSON fix, the schema stage's inverse
 * argument mapping), and only such a call pays it. Live calls: with
 * repair.stream_args on (openai, openai-strict, passthrough), a call of a
 * tool whose rewrite is the identity (its name unchanged, no inverse
 * argument mapping) and to whose schema neither R15 nor R29 can apply goes
 * to the agent as soon as it has a name, and each argument fragment after
 * it as it comes, as long as the arguments so far are the start of one
 * strict JSON object (json_prefix.c). From the first byte that is not, the
 * rest is held, and when the call ends it is repaired whole: the repair's
 * text goes out when it continues what was sent, a second object after the
 * first becomes its own call (R4/R20), and otherwise the rest goes as it
 * came and the failure is counted. Live arguments that never closed (cut
 * by "length") are closed by the same repair. One call of a choice is live
 * at a time, and what else the choice says while it is open (text,
 * reasoning) follows it, so a call's fragments are never split by other
 * output: readers that turn calls into items (the bridges) see them one
 * after the other. Whatever is held, the agent
 * sees an SSE comment (": keepalive") at least every TG_KEEPALIVE_MS, so
 * idle timeouts of clients and balancers do not cut a long held call.
 * A call with an explicit
 * index (or id) whose arguments are still open when another index (or id)
 * starts is kept until the finish (upstream may interleave); a fragment that still arrives
 * for a call already sent is forwarded as a plain continuation delta.
 *
 * Everything else is never held: a chunk without tool calls, finish or
 * anything to repair is forwarded as the very bytes that came (one parse to
 * know that, no re-serialization). Four kinds of event are judged on a
 * scan of their bytes instead of a parse (stream_scan.c), each only where
 * the parse would send the same bytes, anything unsure taking the parse:
 * plain text chunks (surely_plain), a live call's argument fragments
 * (live_fragment), and a live call's first chunk and a finish that no rule
 * changes (relay_event). Content is held only with R12 on, and
 * only from a byte that could start tool-call markup until that is decided
 * (repair_text.c).
 *
 * Ends: a finish_reason that comes while a call's arguments are still open
 * waits for them (some providers send fragments after it) or for the end of
 * the stream. It is made consistent with the calls sent (R10, R11) and
 * goes out after the last call; usage rides on the finish chunk (R22) or is
 * forwarded alone (R21). A stream that ends without a finish_reason gets an
 * error event and [DONE] (R26), never a fake stop; calls still pending then
 * are not delivered (they may be cut off: a truncated command must not run)
 * and are counted as failures. A transport error after the finish changes
 * nothing: the answer is complete, so only [DONE] is added. An upstream
 * error event is forwarded and not doubled by ours, except Groq's
 * tool_use_failed naming a declared tool (R27), which becomes the call.
 *
 * Lazy discovery: a round that called a meta-tool holds its finish, usage
 * and [DONE] for tg_stream_end, which asks the discovery hooks whether
 * another upstream round follows. Later rounds feed the same stream: their
 * role deltas are dropped, indexes continue, usage is summed over rounds,
 * so the agent sees one answer.
 */
#include "core/alloc.h"
#include "core/jsonio.h"
#include "repair/repair_int.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TG_KEEPALIVE_MS 3000

typedef struct scall {
    long up_index;  /* upstream index hint, -1 when none came */
    char *id;       /* upstream id, NULL until a non-empty one came */
    char *name;     /* upstream name, NULL until a non-empty one came */
    tg_buf args;
    json_t *extra;  /* other fields of the call (extra_content, R18) */
    int out;        /* the agent's index, -1 until sent */
    char *agent_id; /* the id the agent got (for the discovery hooks) */
    bool complete, sent, meta;
    bool live;      /* relayed as its fragments come (see "Live calls") */
    bool closed;    /* a live call's end was handled */
    tg_jprefix jp;  /* live: how far args are the start of one object;
                       jp.pos bytes of args are with the agent */
} scall;

typedef struct schoice {
    long index;
    scall *calls;
    size_t ncalls, cap;
    long cur;         /* the most recent call, -1 */
    size_t next_out;  /* the next dense index for the agent */
    json_t *ids;      /* ids the agent has seen in this message (a set) */
    uint64_t seed;
    bool any_sent;    /* something of this choice went to the agent */
    bool finished;
    const char *finish;  /* upstream finish_reason (static copy below) */
    char finish_buf[32];
    char deferred[32];   /* a finish that came while a call's arguments were
                            still open: applied when they close, or at the end */
    tg_buf held;      /* R12: content not decided yet */
    tg_buf structured;/* content for a rewritten response_format schema:
                         restored as a whole at the finish */
    bool at_start;
    tg_buf content;   /* this round's content, for discovery */
    json_t *opaque;   /* this round's reasoning fields as the provider sent
                         them ({reasoning_content: text, reasoning_details:
                         [...]}), for the discovery round that replays the
                         turn (the discovery intercept), or NULL */
    long live_open;   /* the call being relayed live, -1 */
    json_t *after;    /* chunks (text, reasoning) that came while it was
                         open: they follow it, so a call's fragments are
                         never split by other output (the bridges need
                         items one after the other) */
} schoice;

struct tg_stream {
    tg_ctx *ctx;
    schoice *ch;
    size_t nch;
    json_t *last;     /* the latest chunk: envelope for chunks we make */
    tg_buf first;     /* the latest chunk, when it went out unparsed (the
                         first plain one, or one relay_event took): parsed
                         into last only when an envelope is needed
                         (last_chunk), most streams never do */
    tg_frag_env env[TG_FRAG_ENV];  /* first's envelope as tg_scan_event read */
    int nenv;                      /* it (strings point into first.data), */
    size_t env_end;                /* its bytes' length in first, */
    bool env_ok;                   /* when relay_event kept it */
    bool r12;
    bool keep_content;
    bool finished;    /* a finish_reason came this round */
    bool done;        /* [DONE] (or the terminal error) went to the agent */
    bool saw_error;   /* upstream sent an error event */
    tg_buf bad_event; /* the first event that was not JSON (its start) */
    bool raw_sent;    /* a chunk went out unparsed: its choices had their role */
    bool hold;        /* discovery: finish and [DONE] wait for tg_stream_end */
    int live_open;    /* live calls not yet closed, over all choices */
    json_t *held_finish;  /* choice indexes whose finish is held */
    json_t *held_usage;   /* this round's usage, while held */
    json_t *usage_sum;    /* usage of the rounds before (discovery) */
    unsigned rounds;      /* upstream rounds finished before this one */
    char own_id[40];      /* chunk id when upstream sent no chunk (R27) */
    char *live_name;      /* the tool tool_is_live answered last, */
    bool live_last;       /* its answer (most streams call one tool), */
    json_t *live_tools;   /* and the others': {upstream name: true|false} */
    struct timespec last_out;  /* when the agent last got bytes */
    long keepalive_ms;    /* TG_KEEPALIVE_MS, or what tg_stream_set_keepalive set */
    const char *fail_code, *fail_msg;  /* tg_stream_fail's, for send_truncated */
    unsigned no_scan;     /* tests: TG_SCAN_* fast paths turned off */
    tg_buf scratch;       /* live_fragment's decoded arguments, reused */
    /* live_fragment's shape: the last event it took after a full scan, cut
     * around its arguments string (head: up to the string's opening quote;
     * then tail: from its closing quote), and what the scan read of it.
     * Valid while s->last is the chunk it was checked against. */
    tg_buf shape;
    size_t shape_head;
    long shape_choice, shape_index;
    bool shape_ok;
};

/* --- output --------------------------------------------------------------- */

static void send_json(tg_buf *out, const json_t *chunk)
{
    tg_buf_append(out, "data: ", 6);
    tg_json_dump(chunk, out);
    tg_buf_append(out, "\n\n", 2);
}

/* One event as it came: most of a stream's events, so written at once. */
static void send_raw(tg_buf *out, const char *data, size_t len)
{
    tg_buf_reserve(out, len + 8);
    char *d = out->data + out->len;
    memcpy(d, "data: ", 6);
    memcpy(d + 6, data, len);
    memcpy(d + 6 + len, "\n\n", 2);
    out->len += len + 8;
    out->data[out->len] = '\0';
}

/* The latest upstream chunk. A plain first chunk is relayed unparsed
 * (surely_plain) and parsed here the first time anything asks for it: the
 * same bytes give the same envelope as the parse it would have had. */
static json_t *last_chunk(tg_stream *s)
{
    if (!s->last && s->first.len) {
        s->last = tg_json_load_answer(s->first.data, s->first.len);
        if (!json_is_object(s->last)) {
            json_decref(s->last);
            s->last = NULL;
        }
        tg_buf_free(&s->first);
        s->env_ok = false;
    }
    return s->last;
}

/* A chunk for one choice, in the envelope (id, model, created ...) of the
 * latest upstream chunk. Steals delta. */
static json_t *make_chunk(tg_stream *s, long index, json_t *delta, const char *finish)
{
    json_t *c = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(last_chunk(s), k, v) {
        if (strcmp(k, "choices") && strcmp(k, "usage"))
            json_object_set(c, k, v);
    }
    if (!s->last) {  /* nothing came from upstream but an error (R27) */
        const char *model = json_string_value(json_object_get(s->ctx->request, "model"));
        json_object_set_new(c, "id", json_string(s->own_id[0] ? s->own_id : "chatcmpl-tg"));
        json_object_set_new(c, "created", json_integer((json_int_t)time(NULL)));
        json_object_set_new(c, "model", json_string(model ? model : "unknown"));
    }
    if (!json_object_get(c, "object"))
        json_object_set_new(c, "object", json_string("chat.completion.chunk"));
    if (s->ctx->legacy_functions) {
        if (delta)
            tg_rr_legacy_calls(delta);
        finish = tg_rr_legacy_finish(finish);
    }
    json_t *ch = json_object();
    json_object_set_new(ch, "index", json_integer(index));
    json_object_set_new(ch, "delta", delta ? delta : json_object());
    json_object_set_new(ch, "finish_reason", finish ? json_string(finish) : json_null());
    json_object_set_new(c, "choices", json_pack("[o]", ch));
    return c;
}

/* Queue a delta for the agent; the first thing of a choice carries the role
 * when upstream sent none (R25). Steals delta. */
static void queue_delta(tg_stream *s, schoice *c, json_t *events, json_t *delta,
                        const char *finish)
{
    if (!c->any_sent && !json_object_get(delta, "role")) {
        json_t *d = json_object();
        json_object_set_new(d, "role", json_string("assistant"));
        json_object_update(d, delta);
        json_decref(delta);
        delta = d;
    }
    c->any_sent = true;
    json_array_append_new(events, make_chunk(s, c->index, delta, finish));
}

/* --- per-choice state ----------------------------------------------------- */

static schoice *choice_find(tg_stream *s, long index)
{
    for (size_t i = 0; i < s->nch; i++)
        if (s->ch[i].index == index)
            return &s->ch[i];
    return NULL;
}

/* A new choice; its synthesized ids derive from the chunk id resp_id. */
static schoice *choice_add(tg_stream *s, long index, const char *resp_id)
{
    s->ch = tg_realloc(s->ch, (s->nch + 1) * sizeof *s->ch);
    schoice *c = &s->ch[s->nch++];
    memset(c, 0, sizeof *c);
    c->index = index;
    c->cur = -1;
    c->live_open = -1;
    c->at_start = true;
    c->any_sent = s->raw_sent;
    c->ids = json_object();
    c->after = json_array();
    c->seed = tg_rr_seed(resp_id, index);
    return c;
}

static schoice *choice_get(tg_stream *s, long index)
{
    schoice *c = choice_find(s, index);
    return c ? c : choice_add(s, index, json_string_value(json_object_get(last_chunk(s), "id")));
}

static void calls_clear(schoice *c)
{
    for (size_t i = 0; i < c->ncalls; i++) {
        free(c->calls[i].id);
        free(c->calls[i].name);
        tg_buf_free(&c->calls[i].args);
        json_decref(c->calls[i].extra);
        free(c->calls[i].agent_id);
    }
    c->ncalls = 0;
    c->cur = -1;
    c->live_open = -1;
}

static scall *call_new(schoice *c)
{
    if (c->ncalls == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 4;
        c->calls = tg_realloc(c->calls, cap * sizeof *c->calls);
        c->cap = cap;
    }
    scall *k = &c->calls[c->ncalls++];
    memset(k, 0, sizeof *k);
    k->up_index = -1;
    k->out = -1;
    return k;
}

static bool args_complete(const scall *k)
{
    if (!k->args.len)
        return false;
    json_t *v = tg_json_load(k->args.data, k->args.len, JSON_ALLOW_NUL, NULL);
    bool ok = v != NULL;
    json_decref(v);
    return ok;
}

/* --- sending calls -------------------------------------------------------- */

/* Queue calls already repaired (steals calls), next dense indexes. */
static void queue_fixed(tg_stream *s, schoice *c, json_t *calls, json_t *events)
{
    size_t i;
    json_t *tc;
    json_array_foreach(calls, i, tc) {
        json_t *o = json_object();  /* index first, for readers of raw streams */
        json_object_set_new(o, "index", json_integer((json_int_t)c->next_out++));
        json_object_update(o, tc);
        queue_delta(s, c, events, json_pack("{s:[o]}", "tool_calls", o), NULL);
    }
    json_decref(calls);
}

/* Repair and queue calls (OpenAI shape; steals calls). */
static void queue_calls(tg_stream *s, schoice *c, json_t *calls, json_t *events)
{
    tg_rr_fix_calls(s->ctx, calls, c->seed, c->next_out, c->ids);
    queue_fixed(s, c, calls, events);
}

static json_t *call_json(const scall *k)
{
    json_t *o = json_object();
    if (k->extra)
        json_object_update(o, k->extra);
    json_object_set_new(o, "id", json_string(k->id ? k->id : ""));
    json_object_set_new(o, "type", json_string("function"));
    json_t *a = json_stringn(k->args.data ? k->args.data : "", k->args.len);
    json_object_set_new(o, "function", json_pack("{s:s, s:o}", "name", k->name ? k->name : "",
                                                 "arguments", a ? a : json_string("")));
    return o;
}

/* --- live calls ---------------------------------------------------------- */

/* Is a call of upstream tool `name` relayed live? Decided once per tool
 * and stream: the rewrite is the identity and no schema rule applies. The
 * last answer is kept beside the map, which a stream of one tool (most)
 * then never makes. */
static bool tool_is_live(tg_stream *s, const char *name)
{
    tg_ctx *ctx = s->ctx;
    if (!tg_rr_on(ctx, TG_RR_STREAM_ARGS) || !name)
        return false;
    if (s->live_name && !strcmp(s->live_name, name))
        return s->live_last;
    const json_t *known = json_object_get(s->live_tools, name);
    bool live = known ? json_is_true(known)
                      : !strcmp(tg_schema_agent_name(ctx, name), name) &&
                            tg_rr_tool_peek(ctx, name) &&
                            !json_object_get(ctx->arg_inverse, name) &&
                            !tg_rr_is_custom(ctx, name) &&
                            !tg_rr_schema_repairs(ctx, name);
    if (s->live_name) {
        if (!s->live_tools)
            s->live_tools = json_object();
        json_object_set_new(s->live_tools, s->live_name, json_boolean(s->live_last));
        free(s->live_name);
    }
    s->live_name = tg_strdup(name);
    s->live_last = live;
    return live;
}

/* The arguments that came since the last relay and still keep them the
 * start of one object go out (with fields such as extra_content that came
 * beside them). */
static void relay_live(tg_stream *s, schoice *c, scall *k, json_t *extra, json_t *events)
{
    size_t from = k->jp.pos;
    tg_jprefix_feed(&k->jp, k->args.data + from, k->args.len - from);
    size_t n = k->jp.pos - from;
    if (!n && !extra)
        return;
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer(k->out));
    if (extra)
        json_object_update(o, extra);
    if (n)
        json_object_set_new(o, "function",
                            json_pack("{s:s%}", "arguments", k->args.data + from, n));
    queue_delta(s, c, events, json_pack("{s:[o]}", "tool_calls", o), NULL);
}

/* A live call starts: index, id, type and name now, with the arguments
 * so far (R6: they may have come before the name). */
static void open_live(tg_stream *s, schoice *c, scall *k, json_t *events)
{
    c->live_open = k - c->calls;
    s->live_open++;
    k->live = k->sent = true;
    k->out = (int)c->next_out++;
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer(k->out));
    if (k->extra)
        json_object_update(o, k->extra);
    json_object_set_new(o, "id", json_string(k->id ? k->id : ""));
    json_object_set_new(o, "type", json_string("function"));
    tg_rr_assign_id(s->ctx, o, c->seed, (size_t)k->out, k->name, "", c->ids);
    const char *id = json_string_value(json_object_get(o, "id"));
    k->agent_id = id ? tg_strdup(id) : NULL;
    size_t n = tg_jprefix_feed(&k->jp, k->args.data, k->args.len);
    json_object_set_new(o, "function", json_pack("{s:s, s:s%}", "name", k->name, "arguments",
                                                 k->args.data ? k->args.data : "", n));
    queue_delta(s, c, events, json_pack("{s:[o]}", "tool_calls", o), NULL);
}

static void queue_args(tg_stream *s, schoice *c, scall *k, const char *a, size_t n,
                       json_t *events)
{
    if (!n)
        return;
    json_t *o = json_pack("{s:i, s:{s:s%}}", "index", k->out, "function", "arguments", a, n);
    queue_delta(s, c, events, json_pack("{s:[o]}", "tool_calls", o), NULL);
}

/* R4/R20 after a live call: its object closed and more came. Objects
 * become calls of the same tool; anything else goes as it came. */
static void split_live(tg_stream *s, schoice *c, scall *k, json_t *events)
{
    const char *rest = k->args.data + k->jp.pos;
    size_t n = k->args.len - k->jp.pos;
    json_t *one = tg_json_load(rest, n, JSON_ALLOW_NUL, NULL);
    json_t *parts;
    if (json_is_object(one)) {
        parts = json_pack("[o]", one);
    } else {
        json_decref(one);
        parts = tg_json_split_objects(rest, n);
    }
    if (!parts || !tg_rr_on(s->ctx, TG_RR_SPLIT)) {
        json_decref(parts);
        tg_rr_fail(s->ctx, "json_fix_failed", k->name, NULL);
        queue_args(s, c, k, rest, n, events);
        return;
    }
    tg_rr_note(s->ctx, TG_R20, k->name, NULL, parts);
    json_t *calls = json_array();
    size_t i;
    json_t *o;
    json_array_foreach(parts, i, o) {
        char *t = tg_json_dumps(o);
        json_array_append_new(calls, json_pack("{s:s, s:{s:s, s:s}}", "type", "function",
                                               "function", "name", k->name, "arguments", t));
        free(t);
    }
    json_decref(parts);
    queue_calls(s, c, calls, events);
}

/* Where the repair's compact text r continues what was sent (p, the start
 * of an object as the provider wrote it): the length of r's part that p
 * already says, whitespace outside strings aside, or (size_t)-1. */
static size_t continues(const char *p, size_t n, const char *r, size_t rn)
{
    size_t j = 0;
    bool str = false, esc = false;
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        if (!str && (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'))
            continue;  /* the compact text has none there */
        if (j >= rn || r[j] != ch)
            return (size_t)-1;
        j++;
        if (esc)
            esc = false;
        else if (str && ch == '\\')
            esc = true;
        else if (ch == '"')
            str = !str;
    }
    return j;
}

/* Nothing to do when a live call's arguments were one whole object; else
 * what the agent lacks: "{}" for none (R14), the rest of the
 * whole-value repair where it continues what was sent, or the held bytes
 * as they came (counted as a failure). */
static void end_live(tg_stream *s, schoice *c, scall *k, json_t *events);

/* A live call has ended: what the agent lacks of it, then the output held
 * behind it. */
static void close_live(tg_stream *s, schoice *c, scall *k, json_t *events)
{
    if (k->closed)
        return;
    k->closed = true;
    end_live(s, c, k, events);
    c->live_open = -1;
    s->live_open--;
    json_array_extend(events, c->after);
    json_array_clear(c->after);
}

static void end_live(tg_stream *s, schoice *c, scall *k, json_t *events)
{
    if (k->jp.pos == k->args.len && tg_jprefix_complete(&k->jp))
        return;
    if (tg_jprefix_complete(&k->jp)) {
        split_live(s, c, k, events);
        return;
    }
    size_t sent = k->jp.pos;
    bool blank = true;
    for (size_t i = 0; i < k->args.len && blank; i++)
        blank = isspace((unsigned char)k->args.data[i]);
    if (blank) {
        if (tg_rr_on(s->ctx, TG_RR_ARGS)) {
            tg_rr_note(s->ctx, TG_R14, k->name, NULL, NULL);
            queue_args(s, c, k, "{}", 2, events);
        }
        return;
    }
    /* the held path's repair, on a copy: the agent's id is already given */
    json_t *one = json_pack("[o]", call_json(k));
    json_object_set_new(json_array_get(one, 0), "id", json_string(k->agent_id ? k->agent_id : "x"));
    json_t *scratch = json_object();
    tg_rr_fix_calls(s->ctx, one, c->seed, (size_t)k->out, scratch);
    json_decref(scratch);
    json_t *a = json_object_get(json_object_get(json_array_get(one, 0), "function"), "arguments");
    const char *r = json_string_value(a);
    size_t rn = json_string_length(a);
    size_t at = continues(k->args.data, sent, r, rn);
    if (r && at != (size_t)-1) {
        queue_args(s, c, k, r + at, rn - at, events);
    } else {
        tg_rr_fail(s->ctx, "json_fix_failed", k->name, a);
        queue_args(s, c, k, k->args.data + sent, k->args.len - sent, events);
    }
    json_decref(one);
}

/* Send call k if it is complete and named (meta calls stay with us). */
static void try_send(tg_stream *s, schoice *c, scall *k, json_t *events)
{
    if (k->live && k->complete)
        close_live(s, c, k, events);
    if (k->sent || !k->complete || !k->name)
        return;
    k->sent = true;
    if (k->meta)
        return;
    k->out = (int)c->next_out;
    json_t *arr = json_pack("[o]", call_json(k));
    queue_calls(s, c, json_incref(arr), events);
    const char *id = json_string_value(json_object_get(json_array_get(arr, 0), "id"));
    k->agent_id = id ? tg_strdup(id) : NULL;
    json_decref(arr);
}

static void complete_call(tg_stream *s, schoice *c, long i, json_t *events)
{
    if (i < 0 || (size_t)i >= c->ncalls)
        return;
    c->calls[i].complete = true;
    try_send(s, c, &c->calls[i], events);
}

/* Which call an upstream fragment belongs to: one state machine over every
 * id/index/name combination a provider has been seen to send. A fragment
 * carries an id (known: a call so far has it; new; or none), an index
 * (a call's; new; or none), a name (or none) and argument bytes; k is the
 * call the id or the index points at, cur the most recent call.
 *
 *  id      index     name / state                      -> call    vector
 *  ------  --------  --------------------------------  ---------  ---------------------------
 *  known   any       k finished and named; the name      dropped  R09-summary-repeat,
 *                    is k's or none; the arguments       (said)   R09-summary-with-finish
 *                    repeat k's or are none (a summary
 *                    of the call, BerriAI/litellm#20480)
 *  known   any       a name, k named and finished        new (R9: the id reused;
 *                                                        suffixed)  R09-duplicate-ids
 *  known   any       otherwise                           k          R02-mistral-split-noindex
 *  new     k's       none (same index, same call: a new  k          R04-new-id-every-chunk
 *  or none           id alone says nothing; OCI Llama
 *                    through LiteLLM, BerriAI/litellm#40040)
 *  new     k's       k unnamed (the name after the       k          R06-name-after-arguments
 *  or none           arguments, R6)
 *  new     k's       k's name, k open                    k          R07-empty-name-continuations
 *  or none
 *  new     k's       another name, or k finished (R4:    new        R04-index0-reused-ids,
 *  or none           the index reused for a second call)            R04-ids-continuations
 *  none    new       cur index-less, the name none or    cur (takes R16-indexless-args
 *                    cur unnamed                         the index)
 *  any     new       otherwise                           new        R05-interleaved-indexes
 *  new     none      a name (R5: interleaved ids)        new        R05-interleaved-ids-no-index
 *  new     none      none, cur open (a new id a chunk,   cur        R04-new-id-every-chunk-noindex
 *                    no index)
 *  new     none      none, cur finished or no cur        new (its name may follow, R6)
 *  none    none      a name other than cur's, or cur     new (Gemini: no index on
 *                    finished                            parallel calls, R2) R02-missing-index-gemini
 *  none    none      otherwise                           cur, or new R16-indexless-args,
 *                                                        when none   R02-mistral-split-noindex
 *
 * Mistral's missing "type" (R1) and empty names (R7) do not enter: type is
 * rebuilt when the call goes out, an empty name counts as none. Argument
 * bytes are never dropped silently: a call that never gets a name is
 * counted as a failure (call_dropped), and a summary is dropped only when
 * its arguments are the call's own. */
#define CALL_NEW (-1)
#define CALL_SUMMARY (-2)

/* Do the fragment's arguments (a, n bytes) repeat k's, byte for byte or as
 * the same JSON value? None repeat anything. */
static bool repeats_args(const scall *k, const char *a, size_t n)
{
    if (!n || (n == k->args.len && !memcmp(a, k->args.data, n)))
        return true;
    json_t *x = tg_json_load(a, n, JSON_ALLOW_NUL, NULL);
    json_t *y = x ? tg_json_load(k->args.data, k->args.len, JSON_ALLOW_NUL, NULL) : NULL;
    bool same = x && y && json_equal(x, y);
    json_decref(x);
    json_decref(y);
    return same;
}

/* k reached by its index, or as the current call: k, unless the
 * fragment's name says it is another call. */
static long unless_named_otherwise(const schoice *c, long at, const char *name)
{
    const scall *k = &c->calls[at];
    if (name && k->name && (strcmp(name, k->name) || args_complete(k)))
        return CALL_NEW;
    return at;
}

static long find_call(schoice *c, long idx, const char *id, const char *name, const char *a,
                      size_t alen)
{
    if (id) {
        for (long i = (long)c->ncalls - 1; i >= 0; i--) {
            const scall *k = &c->calls[i];
            if (!k->id || strcmp(k->id, id))
                continue;
            bool finished = k->name && args_complete(k);
            if (finished && (name || alen) && (!name || !strcmp(name, k->name)) &&
                repeats_args(k, a, alen))
                return CALL_SUMMARY;
            if (name && finished)
                return CALL_NEW;
            return i;
        }
    }
    if (idx >= 0) {
        for (long i = (long)c->ncalls - 1; i >= 0; i--)
            if (c->calls[i].up_index == idx)
                return unless_named_otherwise(c, i, name);
        if (c->cur >= 0 && c->calls[c->cur].up_index < 0 && !id &&
            !(name && c->calls[c->cur].name)) {
            c->calls[c->cur].up_index = idx;  /* index-less start, indexed rest */
            return c->cur;
        }
        return CALL_NEW;
    }
    if (c->cur < 0)
        return CALL_NEW;
    if (id)  /* a new id and no index */
        return name || args_complete(&c->calls[c->cur]) ? CALL_NEW : c->cur;
    return unless_named_otherwise(c, c->cur, name);
}

/* One element of delta.tool_calls. */
static void take_call_delta(tg_stream *s, schoice *c, const json_t *tc, json_t *events)
{
    if (!json_is_object(tc))
        return;
    const json_t *ix = json_object_get(tc, "index");
    long idx = json_is_integer(ix) && json_integer_value(ix) >= 0 ? (long)json_integer_value(ix)
                                                                  : -1;
    const char *id = json_string_value(json_object_get(tc, "id"));
    if (id && !*id)
        id = NULL;
    const json_t *fn = json_object_get(tc, "function");
    const char *name = json_string_value(json_object_get(fn, "name"));
    if (name && !*name)
        name = NULL;
    const json_t *a = json_object_get(fn, "arguments");

    long i = find_call(c, idx, id, name, json_string_value(a), json_string_length(a));
    if (i == CALL_SUMMARY) {  /* a finished call said again: nothing new */
        tg_rr_note_other(s->ctx, "stream-call-summary", name, NULL, NULL);
        return;
    }
    if (i < 0) {
        /* The previous call is complete, unless its index (or its id) is
         * explicit and different and its arguments are still open: upstream
         * may be interleaving parallel calls, so that one waits for the
         * finish (later fragments find it by id or index). */
        const scall *prev = c->cur >= 0 ? &c->calls[c->cur] : NULL;
        bool open = prev && !args_complete(prev);
        bool by_index = open && idx >= 0 && prev->up_index >= 0 && prev->up_index != idx;
        bool by_id = open && id && prev->id && strcmp(prev->id, id);
        if (!(by_index || by_id))
            complete_call(s, c, c->cur, events);
        scall *k = call_new(c);
        k->up_index = idx;
        i = (long)c->ncalls - 1;
    }
    c->cur = i;
    scall *k = &c->calls[i];
    if (id && !k->id)
        k->id = tg_strdup(id);
    if (name && !k->name) {
        k->name = tg_strdup(name);
        if (s->ctx->intercept && s->ctx->intercept->is_meta(s->ctx, name)) {
            k->meta = true;
            s->hold = true;
        } else if (s->ctx->intercept) {
            s->ctx->intercept->saw_call(s->ctx, name);
        }
    }
    json_t *piece = NULL;
    if (json_is_string(a)) {
        piece = json_incref((json_t *)a);
    } else if (json_is_object(a)) {  /* R13 in a stream */
        char *t = tg_json_dumps(a);
        piece = json_string(t);
        free(t);
        tg_rr_note(s->ctx, TG_R13, name, NULL, NULL);
    }
    json_t *extra = NULL;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)tc, key, v) {
        if (strcmp(key, "index") && strcmp(key, "id") && strcmp(key, "type") &&
            strcmp(key, "function")) {
            if (!extra)
                extra = json_object();
            json_object_set(extra, key, v);
        }
    }
    if (k->live && !k->closed) {
        if (piece)
            tg_buf_append(&k->args, json_string_value(piece), json_string_length(piece));
        relay_live(s, c, k, extra, events);
    } else if (k->sent) {  /* late fragment of a call already sent */
        if (!k->meta && k->out >= 0 && ((piece && json_string_length(piece)) || extra)) {
            json_t *o = json_object();
            json_object_set_new(o, "index", json_integer(k->out));
            if (extra)
                json_object_update(o, extra);
            if (piece && json_string_length(piece))
                json_object_set_new(o, "function", json_pack("{s:O}", "arguments", piece));
            queue_delta(s, c, events, json_pack("{s:[o]}", "tool_calls", o), NULL);
            tg_rr_fail(s->ctx, "late_fragment", k->name, piece);
        }
    } else {
        if (piece)
            tg_buf_append(&k->args, json_string_value(piece), json_string_length(piece));
        if (extra) {
            if (!k->extra)
                k->extra = json_object();
            json_object_update(k->extra, extra);
        }
        if (!k->meta && k->name && c->live_open < 0 && tool_is_live(s, k->name))
            open_live(s, c, k, events);  /* one at a time: fragments never interleave */
        try_send(s, c, k, events);  /* a late name for a completed call (R6) */
    }
    json_decref(piece);
    json_decref(extra);
}

/* --- content -------------------------------------------------------------- */

/* R12: content through the scanner; returns the text decided now (new ref,
 * or NULL when nothing), recovered calls appended to calls. */
/* The held text is a complete open tag waiting for its closer: every
 * closer ends in '>', so text without one cannot decide anything, and the
 * scan (which starts over at the tag) is skipped. Keeps a long held block
 * linear rather than quadratic in its deltas. */
static bool waits_for_closer(const tg_buf *held)
{
    if (!held->len || held->data[0] != '<')
        return false;
    const char *gt = memchr(held->data, '>', held->len < 64 ? held->len : 64);
    return gt != NULL;
}

static json_t *scan_content(tg_stream *s, schoice *c, const char *t, size_t n, bool final,
                            json_t *calls)
{
    bool skip = !final && waits_for_closer(&c->held) && !memchr(t, '>', n);
    tg_buf_append(&c->held, t, n);
    if (skip)
        return NULL;
    tg_buf text = {0};
    json_t *found = json_array();
    size_t used = tg_text_scan(s->ctx, c->held.data ? c->held.data : "", c->held.len, final,
                               &c->at_start, &text, found);
    tg_buf_consume(&c->held, used);
    size_t i;
    json_t *tc;
    json_array_foreach(found, i, tc) json_array_append_new(calls, tg_rr_call_from_text(tc));
    if (json_array_size(found))
        tg_rr_note(s->ctx, TG_R12, NULL, NULL, found);
    json_decref(found);
    json_t *out = text.len ? json_stringn(text.data, text.len) : NULL;
    tg_buf_free(&text);
    return out;
}

/* Structured content goes out whole, restored when the JSON is whole
 * (not cut by "length") and the inverse changes it, else as it came. */
static void flush_structured(tg_stream *s, schoice *c, json_t *events, bool cut)
{
    if (!c->structured.len)
        return;
    json_t *text = cut ? NULL
                       : tg_rr_structured_content(s->ctx, c->structured.data, c->structured.len);
    if (!text)
        text = json_stringn(c->structured.data, c->structured.len);
    queue_delta(s, c, events, json_pack("{s:o}", "content", text), NULL);
    tg_buf_reset(&c->structured);
}

/* Sends what the choice still holds. cut (finish "length"): markup that
 * never closed goes as the text it is, not as a call whose arguments may
 * be missing (a truncated command must not run). */
static void flush_choice(tg_stream *s, schoice *c, json_t *events, bool cut)
{
    flush_structured(s, c, events, cut);
    if (s->r12 && c->held.len) {
        json_t *calls = json_array();
        json_t *text = scan_content(s, c, "", 0, !cut, calls);
        if (text)
            queue_delta(s, c, events, json_pack("{s:o}", "content", text), NULL);
        if (cut && c->held.len) {
            queue_delta(s, c, events, json_pack("{s:s%}", "content", c->held.data, c->held.len),
                        NULL);
            tg_buf_reset(&c->held);
        }
        if (json_array_size(calls))
            queue_calls(s, c, calls, events);
        else
            json_decref(calls);
    }
    for (size_t i = 0; i < c->ncalls; i++) {
        scall *k = &c->calls[i];
        k->complete = true;
        try_send(s, c, k, events);
        if (!k->sent) {
            tg_rr_fail(s->ctx, "call_dropped", NULL, NULL);  /* never named */
            k->sent = true;
        }
    }
}

/* --- one upstream chunk --------------------------------------------------- */

/* A delta's reasoning fields, kept for the round's message: a provider
 * that reasons (DeepSeek's thinking mode, rule 52; OpenRouter's
 * reasoning_details) must get them back on the turn toolgate replays. */
static void keep_opaque(tg_stream *s, schoice *c, const json_t *delta)
{
    static const char *const keys[] = {"reasoning_content", "reasoning", "reasoning_details", NULL};
    if (!s->keep_content)
        return;
    for (const char *const *k = keys; *k; k++) {
        const json_t *v = json_object_get(delta, *k);
        if (!v || json_is_null(v))
            continue;
        if (!c->opaque)
            c->opaque = json_object();
        json_t *had = json_object_get(c->opaque, *k);
        if (json_is_string(v) && json_is_string(had)) {
            tg_buf t = {0};
            tg_buf_append(&t, json_string_value(had), json_string_length(had));
            tg_buf_append(&t, json_string_value(v), json_string_length(v));
            json_object_set_new(c->opaque, *k, json_stringn(t.data, t.len));
            tg_buf_free(&t);
        } else if (json_is_array(v) && json_is_array(had)) {
            json_array_extend(had, (json_t *)v);
        } else {
            json_object_set_new(c->opaque, *k, json_deep_copy(v));
        }
    }
}

/* Does a choice need more than forwarding? With commit (the chunk goes out
 * as it came), keeps the bookkeeping a forwarded chunk needs. */
static bool choice_needs_work(tg_stream *s, const json_t *ch, bool commit)
{
    if (!json_is_object(ch))
        return false;
    const json_t *f = json_object_get(ch, "finish_reason");
    if (f && !json_is_null(f))
        return true;
    const json_t *d = json_object_get(ch, "delta");
    if (!json_is_object(d))
        return false;
    if (json_object_get(d, "tool_calls"))
        return true;
    const json_t *role = json_object_get(d, "role");
    if (role && s->rounds)
        return true;  /* a later round's role delta: dropped */
    if (role && (!json_is_string(role) || !json_string_length(role)) &&
        tg_rr_on(s->ctx, TG_RR_ROLE))
        return true;
    const json_t *content = json_object_get(d, "content");
    if (json_is_array(content) &&
        (tg_rr_on(s->ctx, TG_RR_CONTENT_LIST) ||
         (!json_array_size(content) && tg_rr_on(s->ctx, TG_RR_CONTENT))))
        return true;  /* R23 parts, R24 [] */
    if (json_is_string(content) && s->ctx->rf_inverse)
        return true;
    const json_t *ix = json_object_get(ch, "index");
    long index = json_is_integer(ix) ? (long)json_integer_value(ix) : 0;
    schoice *c = choice_get(s, index);
    if (json_is_string(content) && s->r12) {
        const char *t = json_string_value(content);
        size_t n = json_string_length(content);
        if (c->held.len || memchr(t, '<', n) || memchr(t, '[', n))  /* '[': [TOOL_CALLS] */
            return true;
        if (c->at_start) {
            size_t i = 0;
            while (i < n && isspace((unsigned char)t[i]))
                i++;
            if (i < n && (t[i] == '{' || t[i] == '['))
                return true;
            if (i < n && commit)
                c->at_start = false;
        }
    }
    if (!commit)
        return false;
    if (json_is_string(content) && s->keep_content)
        tg_buf_append(&c->content, json_string_value(content), json_string_length(content));
    keep_opaque(s, c, d);
    c->any_sent = true;
    return false;
}

/* Role and content of a delta, in place (R25, R23, R12). Calls recovered
 * from content are appended to text_calls. */
static void fix_delta(tg_stream *s, schoice *c, json_t *delta, bool has_calls,
                      json_t *text_calls)
{
    if (s->rounds)  /* one stream for the agent: its role came in round one */
        json_object_del(delta, "role");
    keep_opaque(s, c, delta);
    json_t *role = json_object_get(delta, "role");
    if (role && (!json_is_string(role) || !json_string_length(role)) &&
        tg_rr_on(s->ctx, TG_RR_ROLE)) {
        tg_rr_note(s->ctx, TG_R25, NULL, role, NULL);
        if (c->any_sent)
            json_object_del(delta, "role");
        else
            json_object_set_new(delta, "role", json_string("assistant"));
    }
    json_t *list = json_object_get(delta, "content");
    bool empty_list = json_is_array(list) && !json_array_size(list);
    tg_rr_flatten_content(s->ctx, delta);
    json_t *content = json_object_get(delta, "content");
    if (empty_list && json_is_string(content)) {
        json_object_del(delta, "content");  /* R24: [] says nothing */
        content = NULL;
    }
    if (json_is_string(content)) {
        if (s->keep_content)
            tg_buf_append(&c->content, json_string_value(content), json_string_length(content));
        if (s->r12) {
            json_t *t = scan_content(s, c, json_string_value(content),
                                     json_string_length(content), false, text_calls);
            if (t)
                json_object_set_new(delta, "content", t);
            else
                json_object_del(delta, "content");
        }
        content = json_object_get(delta, "content");
    }
    if (json_is_string(content) && s->ctx->rf_inverse) {
        tg_buf_append(&c->structured, json_string_value(content), json_string_length(content));
        json_object_del(delta, "content");
        content = NULL;
    }
    /* R23/R24 in a stream: "" or [] beside tool calls says nothing. */
    if (has_calls && tg_rr_on(s->ctx, TG_RR_CONTENT) &&
        ((json_is_string(content) && !json_string_length(content)) ||
         (json_is_array(content) && !json_array_size(content)) || json_is_null(content)))
        json_object_del(delta, "content");
}

/* What remains of a delta goes out first, with logprobs and unknown fields
 * of the choice. */
static void queue_rest(tg_stream *s, schoice *c, const json_t *ch, json_t *delta,
                       json_t *events)
{
    json_t *rest = NULL;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)ch, k, v) {
        if (strcmp(k, "index") && strcmp(k, "delta") && strcmp(k, "finish_reason") &&
            !json_is_null(v)) {
            if (!rest)
                rest = json_object();
            json_object_set(rest, k, v);
        }
    }
    if (json_object_size(delta) || rest) {
        size_t at = json_array_size(events);
        queue_delta(s, c, events, json_incref(delta), NULL);
        if (rest)
            json_object_update(
                json_array_get(json_object_get(json_array_get(events, at), "choices"), 0), rest);
    }
    json_decref(rest);
}

/* finish_reason f arrived: every call goes out, then the finish (R10/R11),
 * or the finish waits for tg_stream_end (discovery). */
/* A call whose arguments have begun and are not yet whole JSON. */
static bool has_open_call(const schoice *c)
{
    for (size_t i = 0; i < c->ncalls; i++) {
        const scall *k = &c->calls[i];
        bool pending = !k->sent || (k->live && !k->closed);
        if (pending && k->args.len && !args_complete(k))
            return true;
    }
    return false;
}

static void finish_now(tg_stream *s, schoice *c, const char *f, json_t *events);

/* finish_reason f arrived. Some providers still send argument fragments
 * after it: while a call's arguments are open the finish waits (for them
 * to close, or for the end of the stream) instead of cutting the call. */
static void finish_choice(tg_stream *s, schoice *c, const char *f, json_t *events)
{
    if (has_open_call(c)) {
        snprintf(c->deferred, sizeof c->deferred, "%s", f);
        return;
    }
    finish_now(s, c, f, events);
}

/* The finishes still waiting: now (the stream ends), or where their calls
 * have closed (force false). */
static void release_finishes(tg_stream *s, bool force, json_t *events)
{
    for (size_t i = 0; i < s->nch; i++) {
        schoice *c = &s->ch[i];
        if (!c->deferred[0] || (!force && has_open_call(c)))
            continue;
        char f[32];
        snprintf(f, sizeof f, "%s", c->deferred);
        c->deferred[0] = '\0';
        finish_now(s, c, f, events);
    }
}

static void finish_now(tg_stream *s, schoice *c, const char *f, json_t *events)
{
    flush_choice(s, c, events, !strcmp(f, "length"));
    c->finished = true;
    s->finished = true;
    snprintf(c->finish_buf, sizeof c->finish_buf, "%s", f);
    c->finish = c->finish_buf;
    if (s->hold) {
        if (!s->held_finish)
            s->held_finish = json_array();
        json_array_append_new(s->held_finish, json_integer(c->index));
        return;
    }
    const char *nf = tg_rr_finish(s->ctx, f, c->next_out);
    if (strcmp(nf ? nf : "", f))
        tg_rr_note(s->ctx, c->next_out ? TG_R10 : TG_R11, "finish_reason", NULL, NULL);
    queue_delta(s, c, events, json_object(), nf);
}

static void do_choice(tg_stream *s, const json_t *ch, json_t *events)
{
    const json_t *ix = json_object_get(ch, "index");
    schoice *c = choice_get(s, json_is_integer(ix) ? (long)json_integer_value(ix) : 0);
    json_t *delta = json_is_object(json_object_get(ch, "delta"))
                        ? json_copy(json_object_get(ch, "delta"))
                        : json_object();
    json_t *tcs = json_incref(json_object_get(delta, "tool_calls"));
    json_object_del(delta, "tool_calls");
    json_t *text_calls = json_array();
    fix_delta(s, c, delta, tcs != NULL, text_calls);
    queue_rest(s, c, ch, delta, c->live_open >= 0 ? c->after : events);
    json_decref(delta);

    size_t i;
    json_t *tc;
    json_array_foreach(tcs, i, tc) take_call_delta(s, c, tc, events);
    json_decref(tcs);
    if (json_array_size(text_calls)) {
        complete_call(s, c, c->cur, events);
        queue_calls(s, c, text_calls, events);
    } else {
        json_decref(text_calls);
    }
    const char *f = json_string_value(json_object_get(ch, "finish_reason"));
    if (f && *f)  /* "" on every chunk (Ollama, sglang) means not finished */
        finish_choice(s, c, f, events);
}

/* sum + u, for the integer counters at the top of usage (new reference;
 * u itself when there is no sum). */
static json_t *usage_plus(const json_t *sum, json_t *u)
{
    if (!sum)
        return json_incref(u);
    json_t *r = json_deep_copy(u);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)sum, k, v) {
        json_t *x = json_object_get(r, k);
        if (json_is_integer(v) && (!x || json_is_integer(x)))
            json_object_set_new(r, k, json_integer(json_integer_value(v) + json_integer_value(x)));
    }
    return r;
}

/* Only these keys, each (but `must`) absent or null. */
static bool only_keys(const json_t *o, const char *must, const char *const *may)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        if (!strcmp(k, must))
            continue;
        bool ok = false;
        for (const char *const *m = may; *m && !ok; m++)
            ok = !strcmp(k, *m) && (json_is_null(v) || !strcmp(k, "index"));
        if (!ok)
            return false;
    }
    return json_object_get(o, must) != NULL;
}

/* The common chunk of a live call, {"choices":[{"index","delta":
 * {"tool_calls":[{"index","function":{"arguments"}}]}}]} with the agent's
 * own index, whose fragment keeps the arguments the start of an object:
 * it goes out as the very bytes that came (no re-serialization). */
static bool relay_raw(tg_stream *s, const json_t *chunk, const char *raw, size_t len,
                      tg_buf *out)
{
    static const char *const chunk_keys[] = {"id", "object", "created", "model",
                                             "system_fingerprint", "service_tier", "usage",
                                             "index", NULL};
    static const char *const choice_keys[] = {"index", "finish_reason", "logprobs", NULL};
    static const char *const call_keys[] = {"index", NULL};
    const json_t *choices = json_object_get(chunk, "choices");
    const json_t *ch = json_array_get(choices, 0);
    if (json_array_size(choices) != 1 || s->ctx->legacy_functions || s->hold ||
        !only_keys(ch, "delta", choice_keys))
        return false;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)chunk, k, v) {
        bool ok = !strcmp(k, "choices");
        for (const char *const *m = chunk_keys; *m && !ok; m++)
            ok = !strcmp(k, *m) && (strcmp(k, "usage") || json_is_null(v));
        if (!ok)
            return false;
    }
    const json_t *delta = json_object_get(ch, "delta");
    const json_t *tcs = json_object_get(delta, "tool_calls");
    const json_t *tc = json_array_get(tcs, 0);
    const json_t *fn = json_object_get(tc, "function");
    const json_t *a = json_object_get(fn, "arguments");
    const json_t *ix = json_object_get(tc, "index");
    const json_t *cix = json_object_get(ch, "index");
    if (json_object_size(delta) != 1 || json_array_size(tcs) != 1 || !only_keys(tc, "function", call_keys) ||
        json_object_size(fn) != 1 || !json_is_string(a) || !json_is_integer(ix) ||
        (cix && !json_is_integer(cix)))
        return false;
    schoice *c = choice_get(s, cix ? (long)json_integer_value(cix) : 0);
    if (c->live_open < 0 || !c->any_sent)
        return false;
    long idx = (long)json_integer_value(ix);
    scall *call = &c->calls[c->live_open];
    if (find_call(c, idx, NULL, NULL, NULL, 0) != c->live_open || call->out != idx)
        return false;
    tg_jprefix t = call->jp;
    size_t n = json_string_length(a);
    if (tg_jprefix_feed(&t, json_string_value(a), n) != n)
        return false;
    call->jp = t;
    tg_buf_append(&call->args, json_string_value(a), n);
    c->cur = c->live_open;
    send_raw(out, raw, len);
    return true;
}

/* The envelope the event carries is the one make_chunk would take from
 * it: the same keys in the same order with the same values as s->last's
 * (its choices and usage aside), so keeping s->last changes nothing. */
static bool same_envelope(const tg_stream *s, const tg_frag *f)
{
    if (!s->last) {  /* relay_event's: compared as the scans read both */
        if (!s->env_ok || s->nenv != f->nenv)
            return false;
        for (int i = 0; i < f->nenv; i++) {
            const tg_frag_env *a = &s->env[i], *b = &f->env[i];
            if (strcmp(a->key, b->key) || !a->str != !b->str ||
                (a->str ? a->len != b->len || memcmp(a->str, b->str, a->len) : a->num != b->num))
                return false;
        }
        return true;
    }
    const char *k;
    json_t *v;
    int i = 0;
    json_object_foreach(s->last, k, v) {
        if (!strcmp(k, "choices") || !strcmp(k, "usage"))
            continue;
        if (i == f->nenv || strcmp(k, f->env[i].key))
            return false;
        const tg_frag_env *e = &f->env[i++];
        if (e->str ? !json_is_string(v) || json_string_length(v) != e->len ||
                         memcmp(json_string_value(v), e->str, e->len)
                   : !json_is_integer(v) || json_integer_value(v) != e->num)
            return false;
    }
    return i == f->nenv;
}

/* relay_raw's decision taken on the scan of the event's bytes instead of a
 * parse (stream_scan.c): the event must be the plain fragment shape, need
 * no check_chunk change, and relay_raw must have relayed it. Only then is
 * its effect the same: the call's arguments and prefix state advance and
 * the bytes go out as they came. */
/* An event whose bytes before and after its arguments string are those of
 * the shape is the shape's chunk but for the arguments: the scan of it
 * would take the same steps up to the string and after it (it reads left
 * to right and keeps no other state), so it would accept it with the same
 * envelope, choice and call, and only the string needs decoding. Two
 * memcmp instead of a scan of every byte. */
static bool same_shape(const tg_stream *s, const char *d, size_t n, tg_frag *f)
{
    size_t head = s->shape_head, tail = s->shape.len - head, end;
    if (!s->shape_ok || n < s->shape.len || memcmp(d, s->shape.data, head) ||
        !tg_scan_args(d + head, n - head, f->args, &end) || n - head - end != tail ||
        memcmp(d + head + end, s->shape.data + head, tail))
        return false;
    f->choice = s->shape_choice;
    f->index = s->shape_index;
    return true;
}

static void keep_shape(tg_stream *s, const char *d, size_t n, const tg_frag *f)
{
    tg_buf_reset(&s->shape);
    tg_buf_append(&s->shape, d, f->args_at);
    tg_buf_append(&s->shape, d + f->args_end, n - f->args_end);
    s->shape_ok = true;
    s->shape_head = f->args_at;
    s->shape_choice = f->choice;
    s->shape_index = f->index;
}

/* The envelope relay_event kept, for the next scan to compare its bytes
 * with instead of reading them again (tg_frag_pre). */
static const tg_frag_pre *kept_envelope(const tg_stream *s, tg_frag_pre *pre)
{
    if (!s->env_ok)
        return NULL;
    *pre = (tg_frag_pre){s->first.data, s->env_end, s->env, s->nenv};
    return pre;
}

static bool live_fragment(tg_stream *s, const char *data, size_t len, tg_buf *out)
{
    if (s->ctx->legacy_functions || s->hold || !(s->env_ok || last_chunk(s)))
        return false;
    tg_buf_reset(&s->scratch);
    tg_frag_pre pre;
    tg_frag f;  /* not zeroed (a fifth of this function): the scans set what is read */
    f.args = &s->scratch;
    if (!same_shape(s, data, len, &f)) {
        tg_buf_reset(&s->scratch);
        f.pre = kept_envelope(s, &pre);
        /* no "tool_calls" key (the finish, text behind the call): no scan */
        if (!tg_rr_find(data, data + len, "_calls\":") || !tg_scan_fragment(data, len, &f) ||
            !same_envelope(s, &f))
            return false;
        keep_shape(s, data, len, &f);
    }
    schoice *c = choice_find(s, f.choice < 0 ? 0 : f.choice);
    if (!c || c->live_open < 0 || !c->any_sent)
        return false;
    scall *call = &c->calls[c->live_open];
    if (call->out != f.index)
        return false;
    tg_jprefix t = call->jp;
    if (tg_jprefix_feed(&t, s->scratch.data ? s->scratch.data : "", s->scratch.len) !=
        s->scratch.len)
        return false;
    if (find_call(c, f.index, NULL, NULL, NULL, 0) != c->live_open)
        return false;
    call->jp = t;
    tg_buf_append(&call->args, s->scratch.data, s->scratch.len);
    c->cur = c->live_open;
    send_raw(out, data, len);
    return true;
}

/* --- a call's start and a finish, relayed as they came ------------------- */

/* The event becomes the latest chunk as on_chunk would have made it, kept
 * as its bytes and the envelope the scan read: parsed only if a chunk of
 * ours ever needs the envelope (last_chunk), live_fragment compares the
 * envelope as read (same_envelope). */
static void keep_last_raw(tg_stream *s, const char *data, size_t len, const tg_frag *f)
{
    json_decref(s->last);
    s->last = NULL;
    tg_buf_reset(&s->first);
    tg_buf_append(&s->first, data, len);
    tg_frag_env_move(s->env, f->env, f->nenv, data, s->first.data);
    s->nenv = f->nenv;
    s->env_end = f->env_end;
    s->env_ok = true;
    s->shape_ok = false;  /* checked against the chunk before */
}

/* The choice the event is for, made as choice_get makes it from this
 * chunk (its id seeds the synthesized ids). */
static schoice *event_choice(tg_stream *s, const tg_frag *f)
{
    schoice *c = choice_find(s, f->choice);
    if (c)
        return c;
    char *id = NULL;
    for (int i = 0; i < f->nenv && !id; i++)
        if (!strcmp(f->env[i].key, "id"))
            id = tg_strndup(f->env[i].str, f->env[i].len);
    c = choice_add(s, f->choice, id);
    free(id);
    return c;
}

/* A live call's arguments are one whole object that jansson reads too
 * (args_complete, without the parse): tg_jprefix took them all and closed,
 * and nothing is in them that jansson may refuse where tg_jprefix does not
 * (a number out of range: a run of more than 15 digits or an exponent;
 * a \u escape, perhaps a lone surrogate). */
static bool live_args_whole(const scall *k)
{
    if (k->jp.pos != k->args.len || !tg_jprefix_complete(&k->jp))
        return false;
    size_t run = 0;
    for (size_t i = 0; i < k->args.len; i++) {
        char ch = k->args.data[i];
        if (ch >= '0' && ch <= '9') {
            if (++run > 15)
                return false;
            continue;
        }
        if (((ch == 'e' || ch == 'E') && run) || (ch == 'u' && i && k->args.data[i - 1] == '\\'))
            return false;
        run = 0;
    }
    return true;
}

/* The first chunk of a call that take_call_delta and open_live would
 * write back as it came: the choice's next call (upstream's index is the
 * agent's), its role already sent, a non-empty id the agent has not seen
 * (tg_rr_assign_id keeps it), a tool relayed live (its name unchanged, no
 * argument rule) and arguments so far the start of one object. Their
 * bookkeeping, without the chunk. */
static bool relay_start(tg_stream *s, const tg_frag *f, const char *data, size_t len,
                        tg_buf *out)
{
    schoice *c = choice_find(s, f->choice);
    if (c ? c->ncalls || c->live_open >= 0 || !c->any_sent || c->next_out != (size_t)f->index
          : !s->raw_sent || f->index != 0)
        return false;
    tg_jprefix jp = {0};
    const char *a = s->scratch.data ? s->scratch.data : "";
    if (tg_jprefix_feed(&jp, a, s->scratch.len) != s->scratch.len)
        return false;
    bool ids = tg_rr_on(s->ctx, TG_RR_IDS);
    char *name = tg_strndup(f->name, f->name_len);
    char *id = tg_strndup(f->id, f->id_len);
    if (!tool_is_live(s, name) || (ids && c && json_object_get(c->ids, id))) {
        free(name);
        free(id);
        return false;
    }
    keep_last_raw(s, data, len, f);
    c = event_choice(s, f);
    scall *k = call_new(c);
    c->cur = c->live_open = (long)c->ncalls - 1;
    s->live_open++;
    k->up_index = f->index;
    k->id = id;
    k->name = name;
    tg_buf_append(&k->args, a, s->scratch.len);
    k->jp = jp;
    k->live = k->sent = true;
    k->out = (int)c->next_out++;
    if (ids)
        json_object_set_new(c->ids, id, json_true());
    k->agent_id = tg_strdup(id);
    c->any_sent = true;
    send_raw(out, data, len);
    return true;
}

/* A finish that finish_now would write back as it came: every call of the
 * choice sent, a live one's arguments whole (close_live adds nothing),
 * nothing held (R12 markup, structured content, output behind a call),
 * the finish_reason one R10/R11 keep, the choice's role already sent. */
static bool relay_finish(tg_stream *s, const tg_frag *f, const char *data, size_t len,
                         tg_buf *out)
{
    schoice *c = choice_find(s, f->choice);
    char fr[sizeof c->finish_buf];
    if (!f->finish_len || f->finish_len >= sizeof fr ||
        (c ? c->finished || !c->any_sent || c->held.len || c->structured.len ||
                 json_array_size(c->after)
           : !s->raw_sent))
        return false;
    for (size_t i = 0; c && i < c->ncalls; i++) {
        const scall *k = &c->calls[i];
        if (!k->sent || k->meta || (k->live && !k->closed && !live_args_whole(k)))
            return false;
    }
    memcpy(fr, f->finish, f->finish_len);
    fr[f->finish_len] = '\0';
    const char *nf = tg_rr_finish(s->ctx, fr, c ? c->next_out : 0);
    if (!nf || strcmp(nf, fr))
        return false;
    keep_last_raw(s, data, len, f);
    c = event_choice(s, f);
    for (size_t i = 0; i < c->ncalls; i++) {
        scall *k = &c->calls[i];
        k->complete = true;
        if (k->live && !k->closed) {
            k->closed = true;
            c->live_open = -1;
            s->live_open--;
        }
    }
    c->finished = s->finished = true;
    memcpy(c->finish_buf, fr, sizeof fr);
    c->finish = c->finish_buf;
    c->any_sent = true;
    send_raw(out, data, len);
    return true;
}

/* A call's first chunk and a finish, the two of a tool-call stream that
 * the full parse would send on unchanged when no rule acts: recognised by
 * tg_scan_event (which accepts only what tg_stream itself would write),
 * then relay_start or relay_finish check what on_chunk would decide. No
 * other choice may have a finish waiting (release_finishes). */
static bool relay_event(tg_stream *s, const char *data, size_t len, tg_buf *out)
{
    if (s->ctx->legacy_functions || s->hold || s->rounds || s->ctx->intercept ||
        s->ctx->rf_inverse)
        return false;
    for (size_t i = 0; i < s->nch; i++)
        if (s->ch[i].deferred[0])
            return false;
    tg_buf_reset(&s->scratch);
    tg_frag_pre pre;
    tg_frag f = {.args = &s->scratch, .pre = kept_envelope(s, &pre)};
    if (!tg_scan_event(data, len, &f))
        return false;
    bool object = false;
    for (int i = 0; i < f.nenv; i++)
        object |= !strcmp(f.env[i].key, "object");
    if (!object)  /* make_chunk would add one */
        return false;
    if (f.call)
        return !f.finish && !s->live_open && relay_start(s, &f, data, len, out);
    return f.finish && relay_finish(s, &f, data, len, out);
}

static void on_chunk(tg_stream *s, json_t *chunk, const char *raw, size_t len, tg_buf *out)
{
    json_decref(s->last);
    s->last = json_incref(chunk);
    tg_buf_free(&s->first);
    s->env_ok = false;
    s->shape_ok = false;  /* checked against the chunk before */
    if (s->live_open && relay_raw(s, chunk, raw, len, out))
        return;
    const json_t *choices = json_object_get(chunk, "choices");
    bool work = false;
    size_t i;
    json_t *ch;
    json_array_foreach(choices, i, ch) if (choice_needs_work(s, ch, false)) work = true;
    json_t *usage = json_object_get(chunk, "usage");
    if (!json_is_object(usage))
        usage = NULL;
    if (usage && (s->hold || s->usage_sum))
        work = true;  /* held with the finish, or summed over rounds */
    if (s->live_open)
        work = true;  /* text waits behind a live call */
    if (!work) {
        json_array_foreach(choices, i, ch) choice_needs_work(s, ch, true);
        send_raw(out, raw, len);
        return;
    }
    json_t *events = json_array();
    json_array_foreach(choices, i, ch) if (json_is_object(ch)) do_choice(s, ch, events);
    release_finishes(s, false, events);
    if (usage && s->hold) {  /* goes out with the held finish */
        json_decref(s->held_usage);
        s->held_usage = json_incref(usage);
    } else if (usage) {
        json_t *u = usage_plus(s->usage_sum, usage);
        if (json_array_size(events)) {  /* R17/R22: on the last chunk */
            json_object_set(json_array_get(events, json_array_size(events) - 1), "usage", u);
        } else {  /* R21: a usage-only chunk */
            json_t *c = make_chunk(s, 0, NULL, NULL);
            json_object_set_new(c, "choices", json_array());
            json_object_set(c, "usage", u);
            json_array_append_new(events, c);
        }
        json_decref(u);
    }
    json_array_foreach(events, i, ch) send_json(out, ch);
    json_decref(events);
}

/* --- the API ------------------------------------------------------------- */

tg_stream *tg_stream_new(tg_ctx *ctx)
{
    tg_stream *s = tg_calloc(1, sizeof *s);
    s->ctx = ctx;
    s->r12 = tg_rr_text_calls_on(ctx);
    s->keep_content = ctx->intercept != NULL;
    clock_gettime(CLOCK_MONOTONIC, &s->last_out);
    s->keepalive_ms = TG_KEEPALIVE_MS;
    return s;
}

void tg_stream_set_keepalive(tg_stream *s, unsigned ms)
{
    s->keepalive_ms = ms;
}

void tg_stream_no_scan(tg_stream *s, unsigned which)
{
    s->no_scan = which;
}

static void send_truncated(tg_stream *s, bool transport_error, tg_buf *out)
{
    for (size_t i = 0; i < s->nch; i++) {
        schoice *c = &s->ch[i];
        json_t *events = json_array();
        json_array_extend(events, c->after);  /* what waited behind a live call */
        json_array_clear(c->after);
        flush_structured(s, c, events, true);  /* the answer so far, as it came */
        if (c->held.len) {  /* undecided text is still text */
            queue_delta(s, c, events, json_pack("{s:s%}", "content", c->held.data, c->held.len),
                        NULL);
            tg_buf_reset(&c->held);
        }
        size_t k;
        json_t *ev;
        json_array_foreach(events, k, ev) send_json(out, ev);
        json_decref(events);
        for (size_t j = 0; j < c->ncalls; j++)  /* a live one: the agent has part */
            if (!c->calls[j].sent || (c->calls[j].live && !c->calls[j].closed))
                tg_rr_fail(s->ctx, "R26", c->calls[j].name, NULL);
    }
    if (!s->saw_error) {
        tg_buf m = {0};
        tg_buf_puts(&m, s->fail_msg              ? s->fail_msg
                        : transport_error ? "upstream stream broke before it finished"
                                          : "upstream stream ended without a finish_reason");
        if (s->bad_event.len && !s->fail_msg) {  /* most likely the event it was cut in */
            tg_buf_puts(&m, "; it sent an event that is not JSON: ");
            tg_buf_append(&m, s->bad_event.data, s->bad_event.len);
        }
        json_t *e = json_pack("{s:{s:s%, s:s, s:n, s:s}}", "error", "message", m.data, m.len,
                              "type", "upstream_error", "param", "code",
                              s->fail_code ? s->fail_code : "stream_truncated");
        tg_buf_free(&m);
        send_json(out, e);
        json_decref(e);
    }
    tg_buf_puts(out, "data: [DONE]\n\n");
    s->done = true;
}

static const char *after_colon(const char *p, const char *e)
{
    while (p < e && isspace((unsigned char)*p))
        p++;
    if (p < e && *p == ':')
        p++;
    while (p < e && isspace((unsigned char)*p))
        p++;
    return p;
}

#define AT(p, e, lit) ((size_t)((e) - (p)) >= sizeof(lit) - 1 && !memcmp((p), (lit), sizeof(lit) - 1))

/* surely_plain's test of what follows a quote at p: no "error" key, every
 * finish_reason null, every content a string or null (R23 parts, R24 [],
 * or not text at all are check_chunk's), choices an array starting with an
 * object, deltas objects (anything else is check_chunk's), every role a
 * non-empty string; *choices and *delta: one of them came. */
static bool plain_key_ok(const char *p, const char *e, bool *choices, bool *delta)
{
    const char *v;
    if (e - p < 2)
        return true;
    switch (p[1]) {
    case 'e':
        return !AT(p, e, "\"error\"");
    case 'f':
        if (!AT(p, e, "\"finish_reason\""))
            return true;
        v = after_colon(p + 15, e);
        return e - v >= 4 && !memcmp(v, "null", 4);
    case 'c':
        if (AT(p, e, "\"content\"")) {
            v = after_colon(p + 9, e);
            return v >= e || *v == '"' || (e - v >= 4 && !memcmp(v, "null", 4));
        }
        if (!AT(p, e, "\"choices\""))
            return true;
        *choices = true;
        v = after_colon(p + 9, e);
        if (v >= e || *v != '[')
            return false;
        v = after_colon(v + 1, e);
        return v < e && *v == '{';
    case 'd':
        if (!AT(p, e, "\"delta\""))
            return true;
        *delta = true;
        v = after_colon(p + 7, e);
        return v < e && *v == '{';
    case 'r':
        if (!AT(p, e, "\"role\""))
            return true;
        v = after_colon(p + 6, e);
        return e - v >= 3 && v[0] == '"' && v[1] != '"';
    }
    return true;
}

/* "tool_calls" anywhere in [d, e), looked for at its '_': a byte search for it stops at
 * every 't' of a text chunk, and most events of a text stream ask. */
static bool has_tool_calls(const char *d, const char *e)
{
    if (e - d < 10)
        return false;
    for (const char *p = d + 4; p <= e - 6; p++) {
        p = memchr(p, '_', (size_t)(e - 6 - p) + 1);
        if (!p)
            return false;
        if (!memcmp(p - 4, "tool_calls", 10))
            return true;
    }
    return false;
}

/* The cheap test that lets most chunks through without a JSON parse: no
 * tool calls, no error, every finish_reason null, every role a non-empty
 * string, and no rule on that needs to see content. Anything unusual fails
 * the test and takes the full path, so it only has to be conservative. */
static bool surely_plain(const tg_stream *s, const char *d, size_t n)
{
    if (s->keep_content || s->hold || s->rounds || s->ctx->rf_inverse || s->live_open ||
        tg_rr_on(s->ctx, TG_RR_CONTENT_LIST))
        return false;
    const char *e = d + n;
    if (s->r12) {  /* R12: only past the message start, nothing held, no '<' or '[' */
        if (!s->nch || memchr(d, '<', n) || memchr(d, '[', n) || tg_rr_find(d, e, "\\u003c") ||
            tg_rr_find(d, e, "\\u003C") || tg_rr_find(d, e, "\\u005b") || tg_rr_find(d, e, "\\u005B"))
            return false;
        for (size_t i = 0; i < s->nch; i++)
            if (s->ch[i].held.len || s->ch[i].at_start)
                return false;
    }
    if (has_tool_calls(d, e))
        return false;
    /* an event cut short (the last of a broken stream) must take the
     * parse; one that still ends in a brace is left to the client */
    const char *first = d, *last = e - 1;
    while (first < e && (*first == ' ' || *first == '\t'))
        first++;
    while (last > first && (*last == ' ' || *last == '\t' || *last == '\r' || *last == '\n'))
        last--;
    if (first >= e || *first != '{' || *last != '}')
        return false;
    /* Every quoted key it looks at starts at a quote: one walk over the
     * quotes finds each of their occurrences (a search per key was most of
     * a text stream's instructions, issue 20). */
    bool choices = false, delta = false;
    for (const char *p = memchr(d, '"', n); p; p = memchr(p + 1, '"', (size_t)(e - p - 1)))
        if (!plain_key_ok(p, e, &choices, &delta))
            return false;
    return choices && delta;
}

/* R27 mid-stream: Groq ends a stream with a tool_use_failed error event
 * whose failed_generation holds the call; it goes to the agent as a call
 * and a finish, as if the provider had parsed it. */
static bool recover_error(tg_stream *s, const json_t *chunk, tg_buf *out)
{
    json_t *err = json_object_get(chunk, "error");
    if (!json_is_object(err))
        err = json_object_get(json_object_get(chunk, "x_groq"), "error");
    json_t *calls = json_is_object(err) ? tg_rr_failed_generation(s->ctx, err) : NULL;
    if (!calls)
        return false;
    schoice *c = choice_get(s, 0);
    if (!last_chunk(s)) {  /* no chunk came: derive ids from the generation */
        const char *gen = json_string_value(json_object_get(err, "failed_generation"));
        c->seed = tg_rr_seed(gen, 0);
        snprintf(s->own_id, sizeof s->own_id, "chatcmpl-tg%016llx", (unsigned long long)c->seed);
    }
    if (!tg_rr_fix_calls(s->ctx, calls, c->seed, c->next_out, c->ids)) {
        json_decref(calls);
        return false;
    }
    tg_rr_note(s->ctx, TG_R27, NULL, err, calls);
    json_t *events = json_array();
    flush_choice(s, c, events, false);
    queue_fixed(s, c, calls, events);
    queue_delta(s, c, events, json_object(), tg_rr_finish(s->ctx, "tool_calls", c->next_out));
    c->finished = s->finished = true;
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) send_json(out, e);
    json_decref(events);
    return true;
}

/* An upstream error event, in any provider's shape: {"error": {...}} (not
 * "error": null), Mistral's and vLLM's {"object": "error", "message"}, or
 * Gemini's [{"error": ...}] (an array, so not an object at all). */
static bool is_error_event(const json_t *chunk)
{
    const json_t *e = json_object_get(chunk, "error");
    if (e && !json_is_null(e))
        return true;
    const char *obj = json_string_value(json_object_get(chunk, "object"));
    return !json_object_get(chunk, "choices") &&
           ((obj && !strcmp(obj, "error")) || json_is_string(json_object_get(chunk, "message")));
}

/* Forwards an error event in OpenAI's shape, which is what clients raise
 * with the message (openai-node reads data.error.message); other data it
 * cannot judge goes as it came. */
static void send_error_event(tg_buf *out, const char *data, size_t len)
{
    size_t n = 0;
    char *norm = tg_upstream_error_body(data, len, 500, &n);
    if (!norm) {
        send_raw(out, data, len);
        return;
    }
    tg_buf_puts(out, "data: ");
    tg_buf_append(out, norm, n);
    tg_buf_puts(out, "\n\n");
    free(norm);
}

/* The stream ends: finishes still waiting for their calls go now. */
static void send_released(tg_stream *s, tg_buf *out)
{
    json_t *events = json_array();
    release_finishes(s, true, events);
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) send_json(out, e);
    json_decref(events);
}

/* Gemini's error events are arrays: [{"error": ...}]. */
static bool is_error_array(const json_t *v)
{
    return json_is_array(v) && json_object_get(json_array_get(v, 0), "error");
}

/* One delta's fields that clients read without looking: content text or
 * null (parts are R23's), role and the reasoning text strings, tool_calls
 * an array. A number or boolean for content has a clear text, which it
 * becomes; anything else of the wrong type goes. Returns the changes. */
static int check_delta(json_t *delta)
{
    int bad = 0;
    json_t *c = json_object_get(delta, "content");
    if (json_is_number(c) || json_is_boolean(c)) {
        char *text = tg_json_dumps(c);
        json_object_set_new(delta, "content", json_string(text));
        free(text);
        bad++;
    } else if (c && !json_is_string(c) && !json_is_null(c) && !json_is_array(c)) {
        json_object_del(delta, "content");
        bad++;
    }
    static const char *const strings[] = {"role", "reasoning_content", "reasoning", "refusal",
                                          NULL};
    for (int i = 0; strings[i]; i++) {
        json_t *v = json_object_get(delta, strings[i]);
        if (v && !json_is_string(v) && !json_is_null(v)) {
            json_object_del(delta, strings[i]);
            bad++;
        }
    }
    json_t *tc = json_object_get(delta, "tool_calls");
    if (tc && !json_is_array(tc) && !json_is_null(tc)) {
        json_object_del(delta, "tool_calls");
        bad++;
    }
    return bad;
}

/* A chunk's shape, checked before anything reads it, so a provider's bug
 * or a hostile upstream never reaches the agent as it came: choices an
 * array (null: none) of objects, each delta an object (null: an empty
 * one), finish_reason a string or null, then check_delta. Repaired in
 * place; returns the number of changes, or -1 when nothing of the chunk
 * can be kept (not an object, choices neither an array nor null). */
static int check_chunk(json_t *chunk)
{
    if (!json_is_object(chunk))
        return -1;
    json_t *choices = json_object_get(chunk, "choices");
    if (!choices)
        return 0;
    if (json_is_null(choices)) {
        json_object_set_new(chunk, "choices", json_array());
        return 1;
    }
    if (!json_is_array(choices))
        return -1;
    int bad = 0;
    for (size_t i = 0; i < json_array_size(choices);) {
        json_t *ch = json_array_get(choices, i);
        json_t *delta = json_object_get(ch, "delta");
        if (!json_is_object(ch) || (delta && !json_is_object(delta) && !json_is_null(delta))) {
            json_array_remove(choices, i);  /* a choice with no readable delta */
            bad++;
            continue;
        }
        json_t *f = json_object_get(ch, "finish_reason");
        if (f && !json_is_string(f) && !json_is_null(f)) {
            json_object_del(ch, "finish_reason");
            bad++;
        }
        if (json_is_object(delta))
            bad += check_delta(delta);
        i++;
    }
    return bad;
}

void tg_stream_fail(tg_stream *s, const char *code, const char *msg, tg_buf *out)
{
    if (s->done)
        return;
    send_released(s, out);
    if (s->finished && !s->hold) {  /* the answer is whole: it only lacked [DONE] */
        tg_buf_puts(out, "data: [DONE]\n\n");
        s->done = true;
        return;
    }
    s->fail_code = code;
    s->fail_msg = msg;
    send_truncated(s, true, out);
    s->fail_code = s->fail_msg = NULL;
}

static void stream_event(tg_stream *s, const char *data, size_t len, tg_buf *out)
{
    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        send_released(s, out);
        if (!s->finished) {
            send_truncated(s, false, out);  /* R26 */
        } else if (!s->hold) {
            tg_buf_puts(out, "data: [DONE]\n\n");
            s->done = true;
        }
        return;
    }
    if (!(s->no_scan & TG_SCAN_ARGS) && s->live_open && live_fragment(s, data, len, out))
        return;
    if (!(s->no_scan & TG_SCAN_PLAIN) && surely_plain(s, data, len)) {
        for (size_t i = 0; i < s->nch; i++)
            s->ch[i].any_sent = true;
        s->raw_sent = true;
        if (!s->last && !s->first.len)  /* the envelope, if one is needed */
            tg_buf_append(&s->first, data, len);
        send_raw(out, data, len);
        return;
    }
    if (!(s->no_scan & TG_SCAN_EVENT) && relay_event(s, data, len, out))
        return;
    json_t *chunk = tg_json_load_answer(data, len);
    if (json_is_object(chunk) && !s->finished && recover_error(s, chunk, out)) {
        json_decref(chunk);
        return;
    }
    if (!chunk) {
        /* Garbage, or the event a cut stream ended in: not relayed (a
         * client dies on half an object without saying why); an answer
         * that then finishes loses nothing, one that does not says it in
         * its truncation error. */
        s->ctx->stats.bad_chunks++;
        if (!s->bad_event.len)
            tg_buf_put_valid_utf8(&s->bad_event, data, len > 300 ? 300 : len);
        return;
    }
    if (is_error_array(chunk) || (json_is_object(chunk) && is_error_event(chunk))) {
        s->saw_error = true;
        send_error_event(out, data, len);
        json_decref(chunk);
        return;
    }
    int bad = check_chunk(chunk);
    if (bad) {  /* counted; the server logs it with the request */
        s->ctx->stats.bad_chunks++;
        char *fixed = bad > 0 ? tg_json_dumps(chunk) : NULL;
        if (fixed)
            on_chunk(s, chunk, fixed, strlen(fixed), out);
        free(fixed);
        json_decref(chunk);
        return;
    }
    on_chunk(s, chunk, data, len, out);
    json_decref(chunk);
}

static long ms_since(const struct timespec *then, const struct timespec *now)
{
    return (long)(now->tv_sec - then->tv_sec) * 1000 + (now->tv_nsec - then->tv_nsec) / 1000000;
}

/* An event that gave the agent nothing (a held call, held markup, a
 * discovery round) still shows the connection is alive, at most every
 * TG_KEEPALIVE_MS: an SSE comment, which every client ignores. */
void tg_stream_event(tg_stream *s, const char *data, size_t len, tg_buf *out)
{
    if (s->done)
        return;
    size_t before = out->len;
    stream_event(s, data, len, out);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (out->len == before && !s->done && ms_since(&s->last_out, &now) >= s->keepalive_ms)
        tg_buf_puts(out, ": keepalive\n\n");
    if (out->len != before)
        s->last_out = now;
}

/* The round's assistant message for the discovery hooks (upstream names). */
static json_t *round_message(tg_stream *s)
{
    schoice *c = s->nch ? &s->ch[0] : NULL;
    json_t *calls = json_array();
    for (size_t i = 0; c && i < c->ncalls; i++) {
        scall *k = &c->calls[i];
        if (!k->name)
            continue;
        json_t *o = call_json(k);
        char id[32];
        if (k->agent_id) {
            json_object_set_new(o, "id", json_string(k->agent_id));
        } else if (!k->id) {  /* a meta call upstream gave no id: the hooks need one */
            tg_rr_synth_id(id, c->seed, 1000 + i, k->name,
                           k->args.data ? k->args.data : "", 0);
            json_object_set_new(o, "id", json_string(id));
        }
        json_t *fn = json_object_get(o, "function");
        if (!json_string_length(json_object_get(fn, "arguments")))
            json_object_set_new(fn, "arguments", json_string("{}"));  /* R14 */
        json_array_append_new(calls, o);
    }
    json_t *msg = json_object();
    json_object_set_new(msg, "role", json_string("assistant"));
    json_object_set_new(msg, "content", c && c->content.len
                                            ? json_stringn(c->content.data, c->content.len)
                                            : json_null());
    if (c && c->opaque)
        json_object_update(msg, c->opaque);
    json_object_set_new(msg, "tool_calls", calls);
    return msg;
}

static void new_round(tg_stream *s)
{
    for (size_t i = 0; i < s->nch; i++) {
        calls_clear(&s->ch[i]);
        tg_buf_reset(&s->ch[i].content);
        tg_buf_reset(&s->ch[i].held);
        json_decref(s->ch[i].opaque);
        s->ch[i].opaque = NULL;
        s->ch[i].finished = false;
        s->ch[i].deferred[0] = '\0';
        s->ch[i].at_start = true;
    }
    s->finished = s->hold = false;
    s->live_open = 0;
    if (s->held_usage) {
        json_t *sum = usage_plus(s->usage_sum, s->held_usage);
        json_decref(s->usage_sum);
        s->usage_sum = sum;
    }
    json_decref(s->held_finish);
    json_decref(s->held_usage);
    s->held_finish = s->held_usage = NULL;
    s->rounds++;
}

json_t *tg_stream_round_message(tg_stream *s)
{
    return s->done || !s->finished || !s->hold ? NULL : round_message(s);
}

int tg_stream_end(tg_stream *s, bool transport_error, tg_buf *out, json_t **next_body)
{
    *next_body = NULL;
    if (s->done)
        return 0;
    send_released(s, out);
    if (!s->finished) {
        send_truncated(s, transport_error, out);
        return 0;
    }
    if (s->hold) {
        json_t *msg = round_message(s);
        json_t *emit = NULL;
        int again = s->ctx->intercept->stream_round(s->ctx, msg, &emit, next_body);
        json_decref(msg);
        json_t *events = json_array();
        schoice *c = s->nch ? &s->ch[0] : choice_get(s, 0);
        if (json_is_array(emit) && json_array_size(emit))
            queue_calls(s, c, json_incref(emit), events);
        json_decref(emit);
        if (again == 1 && *next_body) {
            size_t i;
            json_t *e;
            json_array_foreach(events, i, e) send_json(out, e);
            json_decref(events);
            new_round(s);
            return 1;
        }
        json_decref(*next_body);
        *next_body = NULL;
        const char *note = s->ctx->intercept ? s->ctx->intercept->final_note(s->ctx) : NULL;
        if (c && note && *note)  /* discovery gave up: the agent still gets an answer */
            queue_delta(s, c, events, json_pack("{s:s}", "content", note), NULL);
        size_t i;
        json_t *ix;
        json_array_foreach(s->held_finish, i, ix) {
            schoice *hc = choice_get(s, (long)json_integer_value(ix));
            queue_delta(s, hc, events, json_object(), tg_rr_finish(s->ctx, hc->finish, hc->next_out));
        }
        if (s->held_usage && json_array_size(events)) {
            json_t *u = usage_plus(s->usage_sum, s->held_usage);
            json_object_set(json_array_get(events, json_array_size(events) - 1), "usage", u);
            json_decref(u);
        }
        json_t *e;
        json_array_foreach(events, i, e) send_json(out, e);
        json_decref(events);
    }
    tg_buf_puts(out, "data: [DONE]\n\n");
    s->done = true;
    return 0;
}

void tg_stream_round_refused(tg_stream *s, long status, const char *body, size_t len,
                             tg_buf *out)
{
    if (s->done)
        return;
    size_t n = 0;
    char *norm = tg_upstream_error_body(body ? body : "", len, status, &n);
    json_t *e = norm ? tg_json_load(norm, n, 0, NULL) : tg_json_load(body ? body : "", len, 0, NULL);
    free(norm);
    if (!json_is_object(json_object_get(e, "error"))) {
        json_decref(e);
        e = json_pack("{s:{s:s, s:s, s:n, s:s}}", "error", "message",
                      "the provider refused the next round without a readable error", "type",
                      "upstream_error", "param", "code", "upstream_error");
    }
    json_object_set_new(json_object_get(e, "error"), "status", json_integer(status));
    send_json(out, e);  /* one line, whatever the provider's body looked like */
    json_decref(e);
    tg_buf_puts(out, "data: [DONE]\n\n");
    s->saw_error = s->done = true;
}

void tg_stream_free(tg_stream *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nch; i++) {
        calls_clear(&s->ch[i]);
        free(s->ch[i].calls);
        json_decref(s->ch[i].ids);
        json_decref(s->ch[i].after);
        tg_buf_free(&s->ch[i].held);
        tg_buf_free(&s->ch[i].structured);
        tg_buf_free(&s->ch[i].content);
        json_decref(s->ch[i].opaque);
    }
    free(s->ch);
    tg_buf_free(&s->bad_event);
    tg_buf_free(&s->scratch);
    tg_buf_free(&s->shape);
    tg_buf_free(&s->first);
    json_decref(s->last);
    json_decref(s->held_finish);
    json_decref(s->held_usage);
    json_decref(s->usage_sum);
    json_decref(s->live_tools);
    free(s->live_name);
    free(s);
}
