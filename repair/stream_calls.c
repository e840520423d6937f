/* stream_calls.c -- which call an upstream tool-call fragment belongs to:
 * one state machine over every id/index/name combination providers send
 * (the table at tg_rs_find_call), then the fragment's arguments appended
 * to its call, and the call sent to the agent in one delta once it is
 * complete, or relayed live (stream_live.c). */
#include "repair/stream_calls.h"

#include "core/alloc.h"
#include "core/jsonio.h"
#include "repair/repair_base.h"
#include "repair/stream_live.h"

#include <stdlib.h>
#include <string.h>

/* Send call k if it is complete and named (meta calls stay with us). */
void tg_rs_try_send(tg_stream *s, schoice *c, scall *k, json_t *events)
{
    if (k->live && k->complete)
        tg_rs_close_live(s, c, k, events);
    if (k->sent || !k->complete || !k->name)
        return;
    k->sent = true;
    if (k->meta)
        return;
    k->out = (int)c->next_out;
    json_t *arr = json_pack("[o]", tg_rs_call_json(k));
    tg_rs_queue_calls(s, c, json_incref(arr), events);
    const char *id = json_string_value(json_object_get(json_array_get(arr, 0), "id"));
    k->agent_id = id ? tg_strdup(id) : NULL;
    json_decref(arr);
}

void tg_rs_complete_call(tg_stream *s, schoice *c, long i, json_t *events)
{
    if (i < 0 || (size_t)i >= c->ncalls)
        return;
    c->calls[i].complete = true;
    tg_rs_try_send(s, c, &c->calls[i], events);
}

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
    if (name && k->name && (strcmp(name, k->name) || tg_rs_args_complete(k)))
        return TG_RS_CALL_NEW;
    return at;
}

/* Was call at opened on an index an earlier call holds (R4), its
 * arguments still open? Its rest may come on an index of its own
 * (deepseek-v4-flash behind a gateway, agno-agi/agno#8880). */
static bool reused_open(const schoice *c, long at)
{
    const scall *k = &c->calls[at];
    if (k->up_index < 0 || tg_rs_args_complete(k))
        return false;
    for (long i = 0; i < at; i++)
        if (c->calls[i].up_index == k->up_index)
            return true;
    return false;
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
 *  none    new       cur opened on a reused index (R4),  cur (takes R04-reused-index-tail
 *                    its arguments open, the name none   the index)
 *                    or cur unnamed (agno-agi/agno#8880)
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
long tg_rs_find_call(schoice *c, long idx, const char *id, const char *name, const char *a,
                     size_t alen)
{
    if (id) {
        for (long i = (long)c->ncalls - 1; i >= 0; i--) {
            const scall *k = &c->calls[i];
            if (!k->id || strcmp(k->id, id))
                continue;
            bool finished = k->name && tg_rs_args_complete(k);
            if (finished && (name || alen) && (!name || !strcmp(name, k->name)) &&
                repeats_args(k, a, alen))
                return TG_RS_CALL_SUMMARY;
            if (name && finished)
                return TG_RS_CALL_NEW;
            return i;
        }
    }
    if (idx >= 0) {
        for (long i = (long)c->ncalls - 1; i >= 0; i--)
            if (c->calls[i].up_index == idx)
                return unless_named_otherwise(c, i, name);
        if (c->cur >= 0 && !id && !(name && c->calls[c->cur].name) &&
            (c->calls[c->cur].up_index < 0 || reused_open(c, c->cur))) {
            c->calls[c->cur].up_index = idx;  /* index-less or reused start, own rest */
            return c->cur;
        }
        return TG_RS_CALL_NEW;
    }
    if (c->cur < 0)
        return TG_RS_CALL_NEW;
    if (id)  /* a new id and no index */
        return name || tg_rs_args_complete(&c->calls[c->cur]) ? TG_RS_CALL_NEW : c->cur;
    return unless_named_otherwise(c, c->cur, name);
}

/* One element of delta.tool_calls. */
void tg_rs_take_call_delta(tg_stream *s, schoice *c, const json_t *tc, json_t *events)
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

    long i = tg_rs_find_call(c, idx, id, name, json_string_value(a), json_string_length(a));
    if (i == TG_RS_CALL_SUMMARY) {  /* a finished call said again: nothing new */
        tg_rr_note_other(s->ctx, "stream-call-summary", name, NULL, NULL);
        return;
    }
    if (i < 0 && c->ncalls >= TG_RS_MAX_CALLS) {
        tg_rr_fail(s->ctx, "call_dropped", name, NULL);
        return;
    }
    if (i < 0) {
        /* The previous call is complete, unless its index (or its id) is
         * explicit and different and its arguments are still open: upstream
         * may be interleaving parallel calls, so that one waits for the
         * finish (later fragments find it by id or index). */
        const scall *prev = c->cur >= 0 ? &c->calls[c->cur] : NULL;
        bool open = prev && !tg_rs_args_complete(prev);
        bool by_index = open && idx >= 0 && prev->up_index >= 0 && prev->up_index != idx;
        bool by_id = open && id && prev->id && strcmp(prev->id, id);
        if (!(by_index || by_id))
            tg_rs_complete_call(s, c, c->cur, events);
        scall *k = tg_rs_call_new(c);
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
        tg_rs_relay_live(s, c, k, extra, events);
    } else if (k->sent) {  /* late fragment of a call already sent */
        if (!k->meta && k->out >= 0 && ((piece && json_string_length(piece)) || extra)) {
            json_t *o = json_object();
            json_object_set_new(o, "index", json_integer(k->out));
            if (extra)
                json_object_update(o, extra);
            if (piece && json_string_length(piece))
                json_object_set_new(o, "function", json_pack("{s:O}", "arguments", piece));
            tg_rs_queue_delta(s, c, events, json_pack("{s:[o]}", "tool_calls", o), NULL);
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
        if (!k->meta && k->name && c->live_open < 0 && tg_rs_tool_is_live(s, k->name))
            tg_rs_open_live(s, c, k, events);  /* one at a time: fragments never interleave */
        tg_rs_try_send(s, c, k, events);  /* a late name for a completed call (R6) */
    }
    json_decref(piece);
    json_decref(extra);
}
