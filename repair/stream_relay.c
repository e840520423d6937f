/* stream_relay.c -- the raw relay: the events of a stream that go out as
 * the very bytes that came, without re-serialization, each only where the
 * full parse (repair_stream.c) would have sent the same bytes, anything
 * unsure taking the parse. Plain text chunks (tg_rs_surely_plain, a byte
 * test), a live call's argument fragments (tg_rs_relay_raw after a parse,
 * tg_rs_live_fragment on a scan, stream_scan.c), a held call's argument
 * fragments (tg_rs_held_fragment: nothing goes out, the arguments are
 * kept, on the same scan), and a live call's first
 * chunk and a finish that no rule changes (tg_rs_relay_event on a scan;
 * a held call's first chunk on that scan is kept, nothing sent; a finish
 * that releases held calls whose repair is the identity goes out as it
 * came, after those calls written from the scan as the parse writes them,
 * held_finish). Each keeps the bookkeeping the parse would have kept.
 * A fragment of the same shape as the one just taken, with nothing else
 * run on the stream between them, is that call's too (run_fragment). */
#include "repair/stream_relay.h"

#include "core/alloc.h"
#include "core/jsonio.h"
#include "repair/repair.h"
#include "repair/repair_base.h"
#include "repair/repair_int.h"
#include "repair/stream_calls.h"
#include "repair/stream_live.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

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
bool tg_rs_relay_raw(tg_stream *s, const json_t *chunk, const char *raw, size_t len,
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
    schoice *c = tg_rs_choice_get(s, cix ? (long)json_integer_value(cix) : 0);
    if (c->live_open < 0 || !c->any_sent)
        return false;
    long idx = (long)json_integer_value(ix);
    scall *call = &c->calls[c->live_open];
    if (tg_rs_find_call(c, idx, NULL, NULL, NULL, 0) != c->live_open || call->out != idx)
        return false;
    tg_jprefix t = call->jp;
    size_t n = json_string_length(a);
    if (tg_jprefix_feed(&t, json_string_value(a), n) != n)
        return false;
    call->jp = t;
    tg_buf_append(&call->args, json_string_value(a), n);
    c->cur = c->live_open;
    tg_rs_send_raw(out, raw, len);
    return true;
}

/* The envelope the event carries is the one tg_rs_make_chunk would take from
 * it: the same keys in the same order with the same values as s->last's
 * (its choices and usage aside), so keeping s->last changes nothing. */
static bool same_envelope(const tg_stream *s, const tg_frag *f)
{
    if (!s->last) {  /* tg_rs_relay_event's: compared as the scans read both */
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

/* `_calls":` in [d, e), looked for at its '_' (memmem's search of the
 * whole needle cost 400 instructions an event; an event has few '_'). */
static bool has_calls_key(const char *d, const char *e)
{
    for (const char *p = d; e - p >= 8; p++) {
        p = memchr(p, '_', (size_t)(e - p) - 7);
        if (!p)
            return false;
        if (!memcmp(p, "_calls\":", 8))
            return true;
    }
    return false;
}

/* The envelope tg_rs_relay_event kept, for the next scan to compare its bytes
 * with instead of reading them again (tg_frag_pre). */
static const tg_frag_pre *kept_envelope(const tg_stream *s, tg_frag_pre *pre)
{
    if (!s->env_ok)
        return NULL;
    *pre = (tg_frag_pre){s->first.data, s->env_end, s->env, s->nenv};
    return pre;
}

/* The event read, without a parse, as a plain argument fragment in the
 * envelope of the latest chunk (so keeping s->last changes nothing): the
 * bytes around its arguments those of the fragment read before
 * (same_shape), or a scan of all of them (stream_scan.c), whose shape is
 * then kept. The decoded arguments are in s->scratch. */
static bool read_fragment(tg_stream *s, const char *data, size_t len, tg_frag *f)
{
    if (s->ctx->legacy_functions || s->hold || !(s->env_ok || tg_rs_last_chunk(s)))
        return false;
    tg_buf_reset(&s->scratch);
    f->args = &s->scratch;  /* f not zeroed (a fifth of the time): the scans set what is read */
    if (same_shape(s, data, len, f))
        return true;
    tg_buf_reset(&s->scratch);
    tg_frag_pre pre;
    f->pre = kept_envelope(s, &pre);
    /* no "tool_calls" key (the finish, text behind the call): no scan */
    bool ok = has_calls_key(data, data + len) && tg_scan_fragment(data, len, f) &&
              same_envelope(s, f);
    f->pre = NULL;
    if (ok)
        keep_shape(s, data, len, f);
    return ok;
}

/* The next fragment of a run (s->run): the event before was taken below
 * for choice run_ch's live or current call, in the shape kept, and nothing
 * has changed the stream since. An event of the same shape has the same
 * envelope, choice and index, so every check below would answer as it did
 * (tg_rs_find_call included: the index is the call's by now) and only its
 * arguments are new: a live call's must still keep them the start of one
 * object. 19 of the bench's 20 fragments. */
static bool run_fragment(tg_stream *s, const char *data, size_t len, unsigned run, tg_buf *out)
{
    tg_frag f;
    s->scratch.len = 0;
    f.args = &s->scratch;
    if (!same_shape(s, data, len, &f))
        return false;
    schoice *c = &s->ch[s->run_ch];
    const char *a = s->scratch.data ? s->scratch.data : "";
    if (run == TG_RUN_HELD) {
        tg_buf_append(&c->calls[c->cur].args, a, s->scratch.len);
    } else {
        scall *call = &c->calls[c->live_open];
        tg_jprefix t = call->jp;
        if (tg_jprefix_feed(&t, a, s->scratch.len) != s->scratch.len)
            return false;
        call->jp = t;
        tg_buf_append(&call->args, a, s->scratch.len);
        tg_rs_send_raw(out, data, len);
    }
    s->run = (unsigned char)run;
    return true;
}

/* tg_rs_relay_raw's decision taken on the scan of the event's bytes instead of
 * a parse (stream_scan.c): the event must be the plain fragment shape, need no
 * check_chunk change, and tg_rs_relay_raw must have relayed it. Only then is
 * its effect the same: the call's arguments and prefix state advance and the
 * bytes go out as they came. */
bool tg_rs_live_fragment(tg_stream *s, const char *data, size_t len, tg_buf *out,
                         unsigned run)
{
    if (run == TG_RUN_LIVE && !(s->no_scan & TG_SCAN_RUN) &&
        run_fragment(s, data, len, run, out))
        return true;
    tg_frag f;
    if (!read_fragment(s, data, len, &f))
        return false;
    schoice *c = tg_rs_choice_find(s, f.choice < 0 ? 0 : f.choice);
    if (!c || c->live_open < 0 || !c->any_sent)
        return false;
    scall *call = &c->calls[c->live_open];
    if (call->out != f.index)
        return false;
    tg_jprefix t = call->jp;
    if (tg_jprefix_feed(&t, s->scratch.data ? s->scratch.data : "", s->scratch.len) !=
        s->scratch.len)
        return false;
    if (tg_rs_find_call(c, f.index, NULL, NULL, NULL, 0) != c->live_open)
        return false;
    call->jp = t;
    tg_buf_append(&call->args, s->scratch.data, s->scratch.len);
    c->cur = c->live_open;
    tg_rs_send_raw(out, data, len);
    s->run = TG_RUN_LIVE;  /* the shape kept is this event's (read_fragment) */
    s->run_ch = (size_t)(c - s->ch);
    return true;
}

/* What on_chunk and do_choice do with a plain fragment of the call a
 * choice holds (not live: its arguments are repaired whole), without the
 * parse: tg_rs_take_call_delta finds the current call by the index (no id
 * or name to change that), appends the arguments, opens nothing live and
 * sends nothing (the call is not complete), and no finish waits to be
 * released. So the arguments are appended and nothing goes out. */
bool tg_rs_held_fragment(tg_stream *s, const char *data, size_t len, unsigned run)
{
    if (s->live_open)
        return false;
    if (run == TG_RUN_HELD && !(s->no_scan & TG_SCAN_RUN) &&
        run_fragment(s, data, len, run, NULL))
        return true;
    for (size_t i = 0; i < s->nch; i++)
        if (s->ch[i].deferred[0])  /* release_finishes would look */
            return false;
    tg_frag f;
    if (!read_fragment(s, data, len, &f))
        return false;
    schoice *c = tg_rs_choice_find(s, f.choice < 0 ? 0 : f.choice);
    if (!c || c->cur < 0 || c->live_open >= 0)
        return false;
    scall *k = &c->calls[c->cur];
    if (k->live || k->sent || k->complete || k->meta ||
        (k->name && tg_rs_tool_is_live(s, k->name)))
        return false;
    /* last: it may give an index-less call this index, as the parse would */
    if (tg_rs_find_call(c, f.index, NULL, NULL, NULL, 0) != c->cur)
        return false;
    tg_buf_append(&k->args, s->scratch.data, s->scratch.len);
    s->run = TG_RUN_HELD;  /* the shape kept is this event's (read_fragment) */
    s->run_ch = (size_t)(c - s->ch);
    return true;
}

/* --- a call's start and a finish, relayed as they came ------------------- */

/* The event becomes the latest chunk as on_chunk would have made it, kept
 * as its bytes and the envelope the scan read: parsed only if a chunk of
 * ours ever needs the envelope (tg_rs_last_chunk), tg_rs_live_fragment
 * compares the envelope as read (same_envelope). */
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

/* The choice the event is for, made as tg_rs_choice_get makes it from this
 * chunk (its id seeds the synthesized ids). */
static schoice *event_choice(tg_stream *s, const tg_frag *f)
{
    schoice *c = tg_rs_choice_find(s, f->choice);
    if (c)
        return c;
    char *id = NULL;
    for (int i = 0; i < f->nenv && !id; i++)
        if (!strcmp(f->env[i].key, "id"))
            id = tg_strndup(f->env[i].str, f->env[i].len);
    c = tg_rs_choice_add(s, f->choice, id);
    free(id);
    return c;
}

/* A live call's arguments are one whole object that jansson reads too
 * (tg_rs_args_complete, without the parse): tg_jprefix took them all and
 * closed, and nothing is in them that jansson may refuse where tg_jprefix
 * does not (a number out of range: a run of more than 15 digits or an
 * exponent; a \u escape, perhaps a lone surrogate). */
static bool args_whole(const char *a, size_t n, const tg_jprefix *jp)
{
    if (jp->pos != n || !tg_jprefix_complete(jp))
        return false;
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = a[i];
        if (ch >= '0' && ch <= '9') {
            if (++run > 15)
                return false;
            continue;
        }
        if (((ch == 'e' || ch == 'E') && run) || (ch == 'u' && i && a[i - 1] == '\\'))
            return false;
        run = 0;
    }
    return true;
}

static bool live_args_whole(const scall *k)
{
    return args_whole(k->args.data, k->args.len, &k->jp);
}

/* The first chunk of a call that tg_rs_take_call_delta and tg_rs_open_live
 * would write back as it came: the choice's next call (upstream's index is the
 * agent's), its role already sent, a non-empty id the agent has not seen
 * (tg_rr_assign_id keeps it), a tool relayed live (its name unchanged, no
 * argument rule) and arguments so far the start of one object. Their
 * bookkeeping, without the chunk. */
static bool relay_start(tg_stream *s, const tg_frag *f, const char *data, size_t len,
                        tg_buf *out)
{
    schoice *c = tg_rs_choice_find(s, f->choice);
    if (c ? c->ncalls || c->live_open >= 0 || !c->any_sent || c->next_out != (size_t)f->index
          : !s->raw_sent || f->index != 0)
        return false;
    if (!tg_rr_on(s->ctx, TG_RR_STREAM_ARGS))  /* no tool is live: tg_rs_tool_is_live below */
        return false;
    tg_jprefix jp = {0};
    const char *a = s->scratch.data ? s->scratch.data : "";
    if (tg_jprefix_feed(&jp, a, s->scratch.len) != s->scratch.len)
        return false;
    bool ids = tg_rr_on(s->ctx, TG_RR_IDS);
    char *name = tg_strndup(f->name, f->name_len);
    char *id = tg_strndup(f->id, f->id_len);
    if (!tg_rs_tool_is_live(s, name) || (ids && c && json_object_get(c->ids, id))) {
        free(name);
        free(id);
        return false;
    }
    keep_last_raw(s, data, len, f);
    c = event_choice(s, f);
    scall *k = tg_rs_call_new(c);
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
    tg_rs_send_raw(out, data, len);
    return true;
}

/* The first chunk of a call that the choice holds (its tool not relayed
 * live: a name to map back, an argument rule, or no repair.stream_args):
 * what tg_rs_take_call_delta does with it, without the parse. The choice's
 * first call (nothing to complete before it), the id and name non-empty,
 * no discovery hooks to tell; the call is made and its arguments kept,
 * nothing goes out. */
static bool hold_start(tg_stream *s, const tg_frag *f, const char *data, size_t len)
{
    schoice *c = tg_rs_choice_find(s, f->choice);
    if (c && (c->ncalls || c->live_open >= 0 || c->cur >= 0))
        return false;
    char *name = tg_strndup(f->name, f->name_len);
    if (tg_rs_tool_is_live(s, name)) {  /* relay_start's, or the parse's */
        free(name);
        return false;
    }
    keep_last_raw(s, data, len, f);
    c = event_choice(s, f);
    scall *k = tg_rs_call_new(c);
    c->cur = (long)c->ncalls - 1;
    k->up_index = f->index;
    k->id = tg_strndup(f->id, f->id_len);
    k->name = name;
    tg_buf_append(&k->args, s->scratch.data ? s->scratch.data : "", s->scratch.len);
    return true;
}

/* A finish that finish_now would write back as it came: every call of the
 * choice sent, a live one's arguments whole (tg_rs_close_live adds nothing),
 * nothing held (R12 markup, structured content, output behind a call),
 * the finish_reason one R10/R11 keep, the choice's role already sent. */
static bool relay_finish(tg_stream *s, const tg_frag *f, const char *data, size_t len,
                         tg_buf *out)
{
    schoice *c = tg_rs_choice_find(s, f->choice);
    char fr[sizeof c->finish_buf];
    if (!f->finish_len || f->finish_len >= sizeof fr ||
        (c ? c->finished || !c->any_sent || c->held.len || c->rheld.len || c->rcalls ||
                 c->structured.len ||
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
    if (!nf || strcmp(nf, fr) || tg_rr_finish_failed(fr))  /* R26's error, by the parse */
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
    tg_rs_send_raw(out, data, len);
    return true;
}

/* --- a held call's finish, written without the parse -------------------- */

/* A held call that tg_rs_try_send would repair and write back as it is:
 * named, with an id the agent has not seen (tg_rr_assign_id keeps it; nor
 * an earlier call sent with it now, at is its place), no other fields
 * (keep_opaque has nothing to keep), a tool whose repair is the identity
 * (tg_rs_tool_is_identity: no name to map back, no argument rule), and
 * arguments that are one strict object jansson reads too (args_whole:
 * split_calls finds one object, fix_args rewrites nothing). Names, ids and
 * arguments come decoded from JSON strings, so in UTF-8; json_string would
 * drop a field that is not, hence the check. A call held is never live
 * (tg_rs_open_live sends it) nor meta (no discovery hooks here). */
static bool held_call_kept(tg_stream *s, const schoice *c, const scall *k, size_t at)
{
    if (!k->name || !k->id || k->extra || strstr(k->name, "<arg_key>") ||
        !tg_utf8_valid(k->name, strlen(k->name)) || !tg_utf8_valid(k->id, strlen(k->id)))
        return false;
    tg_jprefix jp = {0};
    const char *a = k->args.data ? k->args.data : "";
    tg_jprefix_feed(&jp, a, k->args.len);
    if (!args_whole(a, k->args.len, &jp) || !tg_utf8_valid(a, k->args.len) ||
        !tg_rs_tool_is_identity(s, k->name))
        return false;
    if (tg_rr_on(s->ctx, TG_RR_IDS)) {
        if (json_object_get(c->ids, k->id))
            return false;  /* R9 */
        for (size_t i = 0; i < at; i++)
            if (!c->calls[i].sent && !strcmp(c->calls[i].id, k->id))
                return false;
    }
    return true;
}

#define PUT_LIT(out, lit) tg_buf_append((out), (lit), sizeof(lit) - 1)

/* The chunk tg_rs_queue_fixed makes of such a call, in the envelope of the
 * finish event (env_end bytes of data, which the scan read as compact),
 * as tg_rs_send_json writes it: the choice's role was sent before. */
static void write_held_call(tg_buf *out, const schoice *c, const scall *k, const char *data,
                            size_t env_end)
{
    tg_buf_reserve(out, env_end + k->args.len + 160);
    PUT_LIT(out, "data: ");
    tg_buf_append(out, data, env_end);
    PUT_LIT(out, "\"choices\":[{\"index\":");
    tg_json_dump_int(c->index, out);
    PUT_LIT(out, ",\"delta\":{\"tool_calls\":[{\"index\":");
    tg_json_dump_int(k->out, out);
    PUT_LIT(out, ",\"id\":");
    tg_json_dump_string(k->id, strlen(k->id), out);
    PUT_LIT(out, ",\"type\":\"function\",\"function\":{\"name\":");
    tg_json_dump_string(k->name, strlen(k->name), out);
    PUT_LIT(out, ",\"arguments\":");
    tg_json_dump_string(k->args.data ? k->args.data : "", k->args.len, out);
    PUT_LIT(out, "}}]},\"finish_reason\":null}]}\n\n");
}

/* A finish that releases held calls (relay_finish's is a choice whose calls
 * all went out), where finish_now would write each held call back as it
 * came (held_call_kept) and then the finish as it came: no live call open
 * (nothing waits behind one), no R12 text or reasoning held and no call
 * read in the reasoning (tg_rs_relay_event has no structured content), the
 * finish_reason one R10/R11 keep once the calls are counted, the choice's
 * role already sent. The calls' chunks are written from the scan and the
 * finish goes out as its bytes; the bookkeeping is try_send's and
 * finish_now's. */
static bool held_finish(tg_stream *s, const tg_frag *f, const char *data, size_t len,
                        tg_buf *out)
{
    schoice *c = tg_rs_choice_find(s, f->choice);
    char fr[sizeof c->finish_buf];
    if (!c || s->live_open || !c->any_sent || c->held.len || c->rheld.len || c->rcalls ||
        !f->finish_len || f->finish_len >= sizeof fr)
        return false;
    size_t held = 0;
    for (size_t i = 0; i < c->ncalls; i++) {
        const scall *k = &c->calls[i];
        if (!k->sent && !held_call_kept(s, c, k, i))
            return false;
        held += !k->sent;
    }
    if (!held)
        return false;
    memcpy(fr, f->finish, f->finish_len);
    fr[f->finish_len] = '\0';
    const char *nf = tg_rr_finish(s->ctx, fr, c->next_out + held);
    if (!nf || strcmp(nf, fr))
        return false;
    keep_last_raw(s, data, len, f);
    for (size_t i = 0; i < c->ncalls; i++) {
        scall *k = &c->calls[i];
        k->complete = true;
        if (k->sent)
            continue;
        k->sent = true;
        k->out = (int)c->next_out++;
        if (tg_rr_on(s->ctx, TG_RR_IDS))
            json_object_set_new(c->ids, k->id, json_true());
        k->agent_id = tg_strdup(k->id);
        write_held_call(out, c, k, s->first.data, f->env_end);
    }
    c->finished = s->finished = true;
    memcpy(c->finish_buf, fr, sizeof fr);
    c->finish = c->finish_buf;
    tg_rs_send_raw(out, data, len);
    return true;
}

/* A call's first chunk and a finish, the two of a tool-call stream that
 * the full parse would send on unchanged when no rule acts: recognised by
 * tg_scan_event (which accepts only what tg_stream itself would write),
 * then relay_start or relay_finish check what on_chunk would decide; a
 * call's first chunk that the parse would hold is kept (hold_start). No
 * other choice may have a finish waiting (release_finishes). */
bool tg_rs_relay_event(tg_stream *s, const char *data, size_t len, tg_buf *out)
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
        object |= f.env[i].key[0] == 'o' && !strcmp(f.env[i].key, "object");
    if (!object)  /* tg_rs_make_chunk would add one */
        return false;
    if (f.call)
        return !f.finish && !s->live_open &&
               (relay_start(s, &f, data, len, out) || hold_start(s, &f, data, len));
    return f.finish && (relay_finish(s, &f, data, len, out) ||
                        (!(s->no_scan & TG_SCAN_HELD_END) && held_finish(s, &f, data, len, out)));
}

/* --- plain text chunks ---------------------------------------------------- */

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

/* tg_rs_surely_plain's test of what follows a quote at p: no "error" key, every
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
    case 'u':  /* R22: usage in OpenAI's shape, or the parse makes it so */
        if (!AT(p, e, "\"usage\""))
            return true;
        v = after_colon(p + 7, e);
        return (e - v >= 4 && !memcmp(v, "null", 4)) ||
               (v < e && *v == '{' && tg_rr_usage_counters(v, e));
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
bool tg_rs_surely_plain(const tg_stream *s, const char *d, size_t n)
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
            if (s->ch[i].held.len || s->ch[i].at_start || s->ch[i].rheld.len)
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
