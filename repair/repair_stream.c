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
 * know that, no re-serialization). Six kinds of event are judged on a
 * scan of their bytes instead of a parse (stream_scan.c), each only where
 * the parse would do the same, anything unsure taking the parse: plain
 * text chunks, a live call's argument fragments, a held call's argument
 * fragments and its first chunk (kept, nothing sent: most events of a
 * stream on a route that holds calls), a live call's first chunk and a
 * finish that no rule changes, and a finish that releases held calls
 * whose repair is the identity (the calls written from the scan)
 * (stream_relay.c, the raw relay). Content is held only with R12 on, and only from a byte that
 * could start tool-call markup until that is decided (repair_text.c); the
 * reasoning (reasoning_content, reasoning) likewise, its calls going out at
 * the finish only when the choice has no other call (scan_reasoning).
 *
 * Ends: a finish_reason that comes while a call's arguments are still open
 * waits for them (some providers send fragments after it) or for the end of
 * the stream. It is made consistent with the calls sent (R10, R11) and
 * goes out after the last call; usage rides on the finish chunk (R22) or is
 * forwarded alone (R21). A stream that ends without a finish_reason gets an
 * error event and [DONE] (R26), never a fake stop (but [DONE] after calls
 * that are all whole is their tool_calls finish); calls still pending then
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
 *
 * The files, each calling only those after it: this one (the events, the
 * content, the finish, the ends and rounds, the API), stream_relay.c (the
 * raw relay), stream_calls.c (which call a fragment belongs to, and sending
 * a call once it is whole), stream_live.c (live calls), stream_state.c (the
 * state they share, stream_state.h, and the chunks written from it).
 */
#include "core/alloc.h"
#include "core/jsonio.h"
#include "repair/repair.h"
#include "repair/repair_base.h"
#include "repair/repair_int.h"
#include "repair/repair_text.h"
#include "repair/stream_calls.h"
#include "repair/stream_relay.h"
#include "repair/stream_state.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TG_KEEPALIVE_MS 3000

/* The monotonic clock in microseconds (the proxy's tg_stream_clock is
 * the same clock). */
static uint64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* --- content -------------------------------------------------------------- */

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

/* R12: held text (content, or reasoning) through the scanner; returns the
 * text decided now (new ref, or NULL when nothing), recovered calls
 * appended to calls, their markup to markup (NULL: not kept). */
static json_t *scan_held(tg_stream *s, tg_buf *held, bool *at_start, const char *t, size_t n,
                         bool final, json_t *calls, tg_buf *markup)
{
    bool skip = !final && waits_for_closer(held) && !memchr(t, '>', n);
    tg_buf_append(held, t, n);
    if (skip)
        return NULL;
    tg_buf text = {0};
    json_t *found = json_array();
    size_t used = tg_text_scan_markup(s->ctx, held->data ? held->data : "", held->len, final,
                                      at_start, &text, found, markup);
    tg_buf_consume(held, used);
    size_t i;
    json_t *tc;
    json_array_foreach(found, i, tc) json_array_append_new(calls, tg_rr_call_from_text(tc));
    if (json_array_size(found) && !markup)
        tg_rr_note(s->ctx, TG_R12, NULL, NULL, found);
    json_decref(found);
    json_t *out = text.len ? json_stringn(text.data, text.len) : NULL;
    tg_buf_free(&text);
    return out;
}

static json_t *scan_content(tg_stream *s, schoice *c, const char *t, size_t n, bool final,
                            json_t *calls)
{
    return scan_held(s, &c->held, &c->at_start, t, n, final, calls, NULL);
}

/* R12 in the reasoning (sgl-project/sglang#11764: DeepSeek V3.1 writes its
 * call tokens inside reasoning_content, content empty). The reasoning
 * (reasoning_content, or reasoning) is streamed as it comes and held the
 * way content is: from the first byte that could open a call until that is
 * decided, read from no message start (markup only, never bare JSON
 * thought aloud). A call read there is held with its markup until the
 * finish: it goes out as a call only when the choice has no other (the
 * content's call, or upstream's tool_calls, wins); otherwise its markup
 * goes out as the reasoning it was, late. */
static const char *const reasoning_keys[] = {"reasoning_content", "reasoning"};

static bool reasoning_markup(const json_t *delta, const schoice *c)
{
    for (size_t k = 0; k < 2; k++) {
        const json_t *v = json_object_get(delta, reasoning_keys[k]);
        if (json_is_string(v) &&
            (c->rheld.len || memchr(json_string_value(v), '<', json_string_length(v)) ||
             memchr(json_string_value(v), '[', json_string_length(v))))
            return true;
    }
    return false;
}

static void scan_reasoning(tg_stream *s, schoice *c, json_t *delta)
{
    if (!s->r12)
        return;
    for (size_t k = 0; k < 2; k++) {
        const char *key = reasoning_keys[k];
        json_t *v = json_object_get(delta, key);
        if (!json_is_string(v) || !reasoning_markup(delta, c))
            continue;
        bool at_start = false;
        json_t *found = json_array();
        json_t *t = scan_held(s, &c->rheld, &at_start, json_string_value(v),
                              json_string_length(v), false, found, &c->rmarkup);
        c->rkey = key;
        if (json_array_size(found)) {
            if (!c->rcalls)
                c->rcalls = json_array();
            json_array_extend(c->rcalls, found);
        }
        json_decref(found);
        if (t)
            json_object_set_new(delta, key, t);
        else
            json_object_del(delta, key);
    }
}

/* What the reasoning still holds goes out as reasoning (the finish, or cut
 * markup); a stream cut short also gives back the markup of calls held. */
static void flush_reasoning_text(tg_stream *s, schoice *c, json_t *events, bool cut, bool all)
{
    if (c->rheld.len) {
        bool at_start = false;
        json_t *found = json_array();
        json_t *t = cut ? NULL
                        : scan_held(s, &c->rheld, &at_start, "", 0, true, found, &c->rmarkup);
        if (t)
            tg_rs_queue_delta(s, c, events, json_pack("{s:o}", c->rkey, t), NULL);
        if (json_array_size(found)) {
            if (!c->rcalls)
                c->rcalls = json_array();
            json_array_extend(c->rcalls, found);
        }
        json_decref(found);
    }
    if (all && c->rmarkup.len) {
        tg_buf_append(&c->rmarkup, c->rheld.data, c->rheld.len);
        tg_buf_reset(&c->rheld);
    }
    tg_buf *out = all && c->rmarkup.len ? &c->rmarkup : &c->rheld;
    if (out->len)
        tg_rs_queue_delta(s, c, events, json_pack("{s:s%}", c->rkey, out->data, out->len), NULL);
    tg_buf_reset(&c->rheld);
    if (all) {
        tg_buf_reset(&c->rmarkup);
        json_decref(c->rcalls);
        c->rcalls = NULL;
    }
}

/* At the finish: the reasoning's calls join calls when the choice has no
 * other call; else their markup goes out as reasoning. */
static void flush_reasoning_calls(tg_stream *s, schoice *c, json_t *events, json_t *calls)
{
    if (!c->rcalls)
        return;
    if (!c->ncalls && !c->next_out && !json_array_size(calls)) {
        tg_rr_note(s->ctx, TG_R12, c->rkey, NULL, c->rcalls);
        json_array_extend(calls, c->rcalls);
    } else if (c->rmarkup.len) {
        tg_rs_queue_delta(s, c, events,
                          json_pack("{s:s%}", c->rkey, c->rmarkup.data, c->rmarkup.len), NULL);
    }
    tg_buf_reset(&c->rmarkup);
    json_decref(c->rcalls);
    c->rcalls = NULL;
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
    tg_rs_queue_delta(s, c, events, json_pack("{s:o}", "content", text), NULL);
    tg_buf_reset(&c->structured);
}

/* Sends what the choice still holds. cut (finish "length"): markup that
 * never closed goes as the text it is, not as a call whose arguments may
 * be missing (a truncated command must not run). */
static void flush_choice(tg_stream *s, schoice *c, json_t *events, bool cut)
{
    flush_structured(s, c, events, cut);
    flush_reasoning_text(s, c, events, cut, false);
    json_t *calls = json_array();
    if (s->r12 && c->held.len) {
        json_t *text = scan_content(s, c, "", 0, !cut, calls);
        if (text)
            tg_rs_queue_delta(s, c, events, json_pack("{s:o}", "content", text), NULL);
        if (cut && c->held.len) {
            tg_rs_queue_delta(s, c, events,
                              json_pack("{s:s%}", "content", c->held.data, c->held.len), NULL);
            tg_buf_reset(&c->held);
        }
    }
    flush_reasoning_calls(s, c, events, calls);
    if (json_array_size(calls))
        tg_rs_queue_calls(s, c, calls, events);
    else
        json_decref(calls);
    for (size_t i = 0; i < c->ncalls; i++) {
        scall *k = &c->calls[i];
        k->complete = true;
        tg_rs_try_send(s, c, k, events);
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
    schoice *c = tg_rs_choice_get(s, index);
    if (s->r12 && reasoning_markup(d, c))
        return true;  /* R12 in the reasoning: kept from here on */
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
    scan_reasoning(s, c, delta);
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
        tg_rs_queue_delta(s, c, events, json_incref(delta), NULL);
        if (rest)
            json_object_update(
                json_array_get(json_object_get(json_array_get(events, at), "choices"), 0), rest);
    }
    json_decref(rest);
}

/* A call whose arguments have begun and are not yet whole JSON; with
 * unbegun too, also a call whose arguments have not begun (for a finish
 * "stop": a relay that sends an empty "stop" chunk after every chunk
 * finishes a call before its first fragment, 1jehuang/jcode#1326; a call
 * that never gets arguments is R14's {} at the end of the stream). */
static bool has_open_call(const schoice *c, bool unbegun)
{
    for (size_t i = 0; i < c->ncalls; i++) {
        const scall *k = &c->calls[i];
        bool pending = !k->sent || (k->live && !k->closed);
        if (pending && (k->args.len || unbegun) && !tg_rs_args_complete(k))
            return true;
    }
    return false;
}

/* The finish f goes out now: every call of the choice first, then the
 * finish (R10/R11), or it waits for tg_stream_end (discovery). */
static void finish_now(tg_stream *s, schoice *c, const char *f, json_t *events)
{
    flush_choice(s, c, events, !strcmp(tg_rr_finish_word(f), "length"));
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
    tg_rs_queue_delta(s, c, events, json_object(), nf);
}

/* finish_reason f arrived. Some providers still send argument fragments
 * after it: while a call's arguments are open the finish waits (for them
 * to close, or for the end of the stream) instead of cutting the call. */
static void finish_choice(tg_stream *s, schoice *c, const char *f, bool with_calls,
                          json_t *events)
{
    if (c->finished)  /* said again (a relay's "stop" after every chunk): once is enough */
        return;
    if (tg_rr_finish_failed(f)) {  /* a failed generation (Mistral's "error", vLLM's
                                    * "abort", ...): the choice stays unfinished, the
                                    * end is R26's error */
        s->fail_code = "upstream_finish_error";
        snprintf(s->fail_buf, sizeof s->fail_buf,
                 "upstream ended the answer with finish_reason \"%.40s\"", f);
        s->fail_msg = s->fail_buf;
        return;
    }
    if (has_open_call(c, !strcmp(f, "stop"))) {
        snprintf(c->deferred, sizeof c->deferred, "%s", f);
        return;
    }
    if (with_calls && (!strcmp(f, "tool_calls") || !strcmp(f, "stop"))) {
        /* a finish on the chunk that carries a call may not be the last
         * word: a gateway that closes every call chunk (litellm#31634, in
         * front of Gemini) sends the next call after it; the finish waits
         * for a chunk of the choice without calls, or the end */
        snprintf(c->deferred, sizeof c->deferred, "%s", f);
        c->wait_next = true;
        return;
    }
    finish_now(s, c, f, events);
}

/* R16: a chunk without calls for a choice whose finish waits on calls lets
 * that finish go (release_finishes, after the chunk's own deltas). */
static void end_waits(tg_stream *s, const json_t *choices)
{
    for (size_t i = 0; i < s->nch; i++) {
        schoice *c = &s->ch[i];
        if (!c->wait_next)
            continue;
        bool calls = false;
        size_t j;
        json_t *ch;
        json_array_foreach(choices, j, ch) {
            const json_t *ix = json_object_get(ch, "index");
            long n = json_is_integer(ix) ? (long)json_integer_value(ix) : 0;
            const json_t *tcs = json_object_get(json_object_get(ch, "delta"), "tool_calls");
            calls |= n == c->index && json_array_size(tcs) > 0;
        }
        c->wait_next = calls;
    }
}

/* Does a finish wait for the next chunk? Such a chunk is worked on, so the
 * finish goes out before whatever follows it. */
static bool waits_next(const tg_stream *s)
{
    for (size_t i = 0; i < s->nch; i++)
        if (s->ch[i].wait_next)
            return true;
    return false;
}

/* The finishes still waiting: now (the stream ends), or where their calls
 * have closed (force false). */
static void release_finishes(tg_stream *s, bool force, json_t *events)
{
    for (size_t i = 0; i < s->nch; i++) {
        schoice *c = &s->ch[i];
        if (!c->deferred[0] ||
            (!force && (c->wait_next || has_open_call(c, !strcmp(c->deferred, "stop")))))
            continue;
        c->wait_next = false;
        char f[32];
        snprintf(f, sizeof f, "%s", c->deferred);
        c->deferred[0] = '\0';
        finish_now(s, c, f, events);
    }
}

static void do_choice(tg_stream *s, const json_t *ch, json_t *events)
{
    const json_t *ix = json_object_get(ch, "index");
    schoice *c = tg_rs_choice_get(s, json_is_integer(ix) ? (long)json_integer_value(ix) : 0);
    json_t *delta = json_is_object(json_object_get(ch, "delta"))
                        ? json_copy(json_object_get(ch, "delta"))
                        : json_object();
    json_t *tcs = json_incref(json_object_get(delta, "tool_calls"));
    json_object_del(delta, "tool_calls");
    json_t *text_calls = json_array();
    fix_delta(s, c, delta, tcs != NULL, text_calls);
    if (c->live_open >= 0 && !c->after)  /* made when first needed: most choices never wait */
        c->after = json_array();
    queue_rest(s, c, ch, delta, c->live_open >= 0 ? c->after : events);
    json_decref(delta);

    size_t i;
    json_t *tc;
    json_array_foreach(tcs, i, tc) tg_rs_take_call_delta(s, c, tc, events);
    json_decref(tcs);
    if (json_array_size(text_calls)) {
        tg_rs_complete_call(s, c, c->cur, events);
        tg_rs_queue_calls(s, c, text_calls, events);
    } else {
        json_decref(text_calls);
    }
    const char *f = json_string_value(json_object_get(ch, "finish_reason"));
    const json_t *sent = json_object_get(json_object_get(ch, "delta"), "tool_calls");
    if (f && *f)  /* "" on every chunk (Ollama, sglang) means not finished */
        finish_choice(s, c, f, json_array_size(sent) > 0, events);
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

static void on_chunk(tg_stream *s, json_t *chunk, const char *raw, size_t len, tg_buf *out)
{
    json_decref(s->last);
    s->last = json_incref(chunk);
    tg_buf_free(&s->first);
    s->env_ok = false;
    s->shape_ok = false;  /* checked against the chunk before */
    if (s->live_open && tg_rs_relay_raw(s, chunk, raw, len, out))
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
    if (s->live_open || waits_next(s))
        work = true;  /* text waits behind a live call; a finish waits on this chunk */
    if (!work) {
        json_array_foreach(choices, i, ch) choice_needs_work(s, ch, true);
        tg_rs_send_raw(out, raw, len);
        return;
    }
    json_t *events = json_array();
    end_waits(s, choices);
    json_array_foreach(choices, i, ch) if (json_is_object(ch)) do_choice(s, ch, events);
    release_finishes(s, false, events);
    json_t *waited = NULL;  /* usage kept for a finish that has gone now */
    if (!usage && s->wait_usage && !waits_next(s))
        usage = waited = s->wait_usage;
    if (usage && s->hold) {  /* goes out with the held finish */
        json_decref(s->held_usage);
        s->held_usage = json_incref(usage);
    } else if (usage && waits_next(s)) {  /* goes out with the waiting finish */
        json_t *keep = json_incref(usage);
        json_decref(s->wait_usage);
        s->wait_usage = keep;
        usage = NULL;
    } else if (usage) {
        json_t *u = usage_plus(s->usage_sum, usage);
        if (json_array_size(events)) {  /* R17/R22: on the last chunk */
            json_object_set(json_array_get(events, json_array_size(events) - 1), "usage", u);
        } else {  /* R21: a usage-only chunk */
            json_t *c = tg_rs_make_chunk(s, 0, NULL, NULL);
            json_object_set_new(c, "choices", json_array());
            json_object_set(c, "usage", u);
            json_array_append_new(events, c);
        }
        json_decref(u);
    }
    if (waited) {
        json_decref(s->wait_usage);
        s->wait_usage = NULL;
    }
    json_array_foreach(events, i, ch) tg_rs_send_json(out, ch);
    json_decref(events);
}

/* --- the API ------------------------------------------------------------- */

tg_stream *tg_stream_new(tg_ctx *ctx)
{
    tg_stream *s = tg_calloc(1, sizeof *s);
    s->ctx = ctx;
    s->r12 = tg_rr_text_calls_on(ctx);
    s->keep_content = ctx->intercept != NULL;
    s->last_out_us = mono_us();
    s->keepalive_ms = TG_KEEPALIVE_MS;
    return s;
}

void tg_stream_set_keepalive(tg_stream *s, unsigned ms)
{
    s->keepalive_ms = ms;
}

void tg_stream_clock(tg_stream *s, uint64_t now_us)
{
    s->clock_us = now_us;
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
        flush_reasoning_text(s, c, events, true, true);
        if (c->held.len) {  /* undecided text is still text */
            tg_rs_queue_delta(s, c, events,
                              json_pack("{s:s%}", "content", c->held.data, c->held.len), NULL);
            tg_buf_reset(&c->held);
        }
        size_t k;
        json_t *ev;
        json_array_foreach(events, k, ev) tg_rs_send_json(out, ev);
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
        tg_rs_send_json(out, e);
        json_decref(e);
    }
    tg_buf_puts(out, "data: [DONE]\n\n");
    s->done = true;
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
    schoice *c = tg_rs_choice_get(s, 0);
    if (!tg_rs_last_chunk(s)) {  /* no chunk came: derive ids from the generation */
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
    tg_rs_queue_fixed(s, c, calls, events);
    tg_rs_queue_delta(s, c, events, json_object(),
                      tg_rr_finish(s->ctx, "tool_calls", c->next_out));
    c->finished = s->finished = true;
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) tg_rs_send_json(out, e);
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
        tg_rs_send_raw(out, data, len);
        return;
    }
    tg_buf_puts(out, "data: ");
    tg_buf_append(out, norm, n);
    tg_buf_puts(out, "\n\n");
    free(norm);
}

/* The stream ends: finishes still waiting for their calls go now. */
/* R26's one exception: [DONE] came with no finish_reason, but the choice
 * carries calls, each named and with arguments that are one whole value
 * (or none at all: a tool without parameters). NVIDIA NIM's GLM-5.1 ends
 * its streams of calls so (earendil-works/pi#6225, where the agent's own
 * fix is the same); llm-d's simulator wrote no finish chunk but for stop
 * (llm-d/llm-d-inference-sim#545). The provider ended the stream as the
 * protocol says and no call is cut, so the finish is tool_calls (R10), as
 * a whole answer without one gets stop; text alone, a call cut short, or
 * a stream that broke stays R26's error. */
static void infer_call_finishes(tg_stream *s)
{
    if (s->fail_code || !tg_rr_on(s->ctx, TG_RR_FINISH))
        return;
    for (size_t i = 0; i < s->nch; i++) {
        schoice *c = &s->ch[i];
        if (c->finished || c->deferred[0] || !c->ncalls)
            continue;
        bool whole = true;
        for (size_t j = 0; j < c->ncalls && whole; j++) {
            const scall *k = &c->calls[j];
            whole = k->name && (!k->args.len || tg_rs_args_complete(k));
        }
        if (whole) {
            snprintf(c->deferred, sizeof c->deferred, "tool_calls");
            tg_rr_note(s->ctx, TG_R10, "finish_reason", NULL, NULL);
        }
    }
}

static void send_released(tg_stream *s, tg_buf *out)
{
    json_t *events = json_array();
    release_finishes(s, true, events);
    if (s->wait_usage) {  /* R17: on the finish that waited for it */
        json_t *u = usage_plus(s->usage_sum, s->wait_usage);
        if (json_array_size(events)) {
            json_object_set(json_array_get(events, json_array_size(events) - 1), "usage", u);
        } else {
            json_t *c = tg_rs_make_chunk(s, 0, NULL, NULL);
            json_object_set_new(c, "choices", json_array());
            json_object_set(c, "usage", u);
            json_array_append_new(events, c);
        }
        json_decref(u);
        json_decref(s->wait_usage);
        s->wait_usage = NULL;
    }
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) tg_rs_send_json(out, e);
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
    int bad = tg_rr_usage_shape(chunk);  /* R22: OpenAI's usage shape */
    json_t *choices = json_object_get(chunk, "choices");
    if (!choices)
        return bad;
    if (json_is_null(choices)) {
        json_object_set_new(chunk, "choices", json_array());
        return 1;
    }
    if (!json_is_array(choices))
        return -1;
    size_t kept = 0;  /* the choices kept move down (tg_json_array_cut) */
    for (size_t i = 0; i < json_array_size(choices); i++) {
        json_t *ch = json_array_get(choices, i);
        json_t *delta = json_object_get(ch, "delta");
        if (!json_is_object(ch) || (delta && !json_is_object(delta) && !json_is_null(delta))) {
            bad++;  /* a choice with no readable delta */
            continue;
        }
        if (kept != i)
            json_array_set(choices, kept, ch);
        kept++;
        json_t *f = json_object_get(ch, "finish_reason");
        if (f && !json_is_string(f) && !json_is_null(f)) {
            json_object_del(ch, "finish_reason");
            bad++;
        }
        if (json_is_object(delta))
            bad += check_delta(delta);
        json_t *u = json_object_get(ch, "usage");
        if (u) {
            /* usage inside the choice (Moonshot, earendil-works/pi#2017):
             * OpenAI's place is the chunk's, where clients and the bridges
             * read it (R22) */
            if (json_is_object(u) && !json_is_object(json_object_get(chunk, "usage")))
                json_object_set(chunk, "usage", u);
            json_object_del(ch, "usage");
            bad++;
        }
    }
    tg_json_array_cut(choices, kept);
    return bad + tg_rr_usage_shape(chunk);  /* a choice's, moved up */
}

void tg_stream_fail(tg_stream *s, const char *code, const char *msg, tg_buf *out)
{
    s->run = 0;
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
    unsigned run = s->run;  /* only the fragments' scans set it again */
    s->run = 0;
    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        if (!s->finished)
            infer_call_finishes(s);
        send_released(s, out);
        if (!s->finished) {
            send_truncated(s, false, out);  /* R26 */
        } else if (!s->hold) {
            tg_buf_puts(out, "data: [DONE]\n\n");
            s->done = true;
        }
        return;
    }
    if (!(s->no_scan & TG_SCAN_ARGS) && s->live_open &&
        tg_rs_live_fragment(s, data, len, out, run))
        return;
    if (!(s->no_scan & TG_SCAN_HELD) && !s->live_open && s->nch &&
        tg_rs_held_fragment(s, data, len, run))
        return;
    if (!(s->no_scan & TG_SCAN_PLAIN) && tg_rs_surely_plain(s, data, len)) {
        for (size_t i = 0; i < s->nch; i++)
            s->ch[i].any_sent = true;
        s->raw_sent = true;
        if (!s->last && !s->first.len)  /* the envelope, if one is needed */
            tg_buf_append(&s->first, data, len);
        tg_rs_send_raw(out, data, len);
        return;
    }
    if (!(s->no_scan & TG_SCAN_EVENT) && tg_rs_relay_event(s, data, len, out))
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

/* An event that gave the agent nothing (a held call, held markup, a
 * discovery round) still shows the connection is alive, at most every
 * TG_KEEPALIVE_MS: an SSE comment, which every client ignores. The time is
 * the caller's (tg_stream_clock) in microseconds, compared as such: no
 * conversion an event. */
void tg_stream_event(tg_stream *s, const char *data, size_t len, tg_buf *out)
{
    if (s->done)
        return;
    size_t before = out->len;
    stream_event(s, data, len, out);
    uint64_t now = s->clock_us ? s->clock_us : mono_us();
    if (out->len != before)
        s->last_out_us = now;
    else if (!s->done && now >= s->last_out_us &&
             now - s->last_out_us >= (uint64_t)s->keepalive_ms * 1000u) {
        tg_buf_puts(out, ": keepalive\n\n");
        s->last_out_us = now;
    }
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
        json_t *o = tg_rs_call_json(k);
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
        tg_rs_calls_clear(&s->ch[i]);
        tg_buf_reset(&s->ch[i].content);
        tg_buf_reset(&s->ch[i].held);
        tg_buf_reset(&s->ch[i].rheld);
        tg_buf_reset(&s->ch[i].rmarkup);
        json_decref(s->ch[i].rcalls);
        s->ch[i].rcalls = NULL;
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
    s->run = 0;
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
        schoice *c = s->nch ? &s->ch[0] : tg_rs_choice_get(s, 0);
        if (json_is_array(emit) && json_array_size(emit))
            tg_rs_queue_calls(s, c, json_incref(emit), events);
        json_decref(emit);
        if (again == 1 && *next_body) {
            size_t i;
            json_t *e;
            json_array_foreach(events, i, e) tg_rs_send_json(out, e);
            json_decref(events);
            new_round(s);
            return 1;
        }
        json_decref(*next_body);
        *next_body = NULL;
        const char *note = s->ctx->intercept ? s->ctx->intercept->final_note(s->ctx) : NULL;
        if (c && note && *note)  /* discovery gave up: the agent still gets an answer */
            tg_rs_queue_delta(s, c, events, json_pack("{s:s}", "content", note), NULL);
        size_t i;
        json_t *ix;
        json_array_foreach(s->held_finish, i, ix) {
            schoice *hc = tg_rs_choice_get(s, (long)json_integer_value(ix));
            tg_rs_queue_delta(s, hc, events, json_object(),
                              tg_rr_finish(s->ctx, hc->finish, hc->next_out));
        }
        if (s->held_usage && json_array_size(events)) {
            json_t *u = usage_plus(s->usage_sum, s->held_usage);
            json_object_set(json_array_get(events, json_array_size(events) - 1), "usage", u);
            json_decref(u);
        }
        json_t *e;
        json_array_foreach(events, i, e) tg_rs_send_json(out, e);
        json_decref(events);
    }
    tg_buf_puts(out, "data: [DONE]\n\n");
    s->done = true;
    return 0;
}

void tg_stream_round_refused(tg_stream *s, long status, const char *body, size_t len,
                             tg_buf *out)
{
    s->run = 0;
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
    tg_rs_send_json(out, e);  /* one line, whatever the provider's body looked like */
    json_decref(e);
    tg_buf_puts(out, "data: [DONE]\n\n");
    s->saw_error = s->done = true;
}

void tg_stream_free(tg_stream *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nch; i++) {
        tg_rs_calls_clear(&s->ch[i]);
        free(s->ch[i].calls);
        json_decref(s->ch[i].ids);
        json_decref(s->ch[i].after);
        tg_buf_free(&s->ch[i].held);
        tg_buf_free(&s->ch[i].rheld);
        tg_buf_free(&s->ch[i].rmarkup);
        json_decref(s->ch[i].rcalls);
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
    json_decref(s->wait_usage);
    json_decref(s->usage_sum);
    json_decref(s->live_tools);
    free(s->live_name);
    free(s);
}
