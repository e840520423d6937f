/* stream_state.c -- the stream repair's state and what it writes: a chunk
 * in the envelope of the latest upstream one, each choice and its calls as
 * they are kept until they go out, and calls queued for the agent with the
 * next dense indexes (repair_stream.c's design comment says why calls are
 * held). */
#include "repair/stream_state.h"

#include "core/alloc.h"
#include "core/jsonio.h"
#include "repair/repair_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --- output --------------------------------------------------------------- */

void tg_rs_send_json(tg_buf *out, const json_t *chunk)
{
    tg_buf_append(out, "data: ", 6);
    tg_json_dump(chunk, out);
    tg_buf_append(out, "\n\n", 2);
}

/* One event as it came: most of a stream's events, so written at once. */
void tg_rs_send_raw(tg_buf *out, const char *data, size_t len)
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
 * (tg_rs_surely_plain) and parsed here the first time anything asks for it: the
 * same bytes give the same envelope as the parse it would have had. */
json_t *tg_rs_last_chunk(tg_stream *s)
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
json_t *tg_rs_make_chunk(tg_stream *s, long index, json_t *delta, const char *finish)
{
    json_t *c = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(tg_rs_last_chunk(s), k, v) {
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
void tg_rs_queue_delta(tg_stream *s, schoice *c, json_t *events, json_t *delta,
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
    json_array_append_new(events, tg_rs_make_chunk(s, c->index, delta, finish));
}

/* --- per-choice state ----------------------------------------------------- */

schoice *tg_rs_choice_find(tg_stream *s, long index)
{
    for (size_t i = 0; i < s->nch; i++)
        if (s->ch[i].index == index)
            return &s->ch[i];
    return NULL;
}

/* A new choice; its synthesized ids derive from the chunk id resp_id. */
schoice *tg_rs_choice_add(tg_stream *s, long index, const char *resp_id)
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
    c->seed = tg_rr_seed(resp_id, index);
    return c;
}

schoice *tg_rs_choice_get(tg_stream *s, long index)
{
    schoice *c = tg_rs_choice_find(s, index);
    return c ? c
             : tg_rs_choice_add(s, index,
                                json_string_value(json_object_get(tg_rs_last_chunk(s), "id")));
}

void tg_rs_calls_clear(schoice *c)
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

scall *tg_rs_call_new(schoice *c)
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

/* Feeds the bytes of args not scanned yet to k->ck: where the brackets
 * (outside strings) close the first object or array, and whether anything
 * but whitespace follows. */
static void args_scan(scall *k)
{
    const char *p = k->args.data;
    for (size_t i = k->ck.pos; i < k->args.len && k->ck.st != 3; i++) {
        char b = p[i];
        bool ws = b == ' ' || b == '\t' || b == '\n' || b == '\r';
        if (k->ck.st != 1) {  /* before the value, or after it */
            if (ws)
                continue;
            if (k->ck.st == 0 && (b == '{' || b == '[')) {
                k->ck.st = 1;
                k->ck.depth = 1;
            } else {
                k->ck.st = 3;  /* no object or array, or bytes after it */
            }
        } else if (k->ck.in_str) {
            if (k->ck.esc)
                k->ck.esc = false;
            else if (b == '\\')
                k->ck.esc = true;
            else if (b == '"')
                k->ck.in_str = false;
        } else if (b == '"') {
            k->ck.in_str = true;
        } else if (b == '{' || b == '[') {
            k->ck.depth++;
        } else if ((b == '}' || b == ']') && --k->ck.depth == 0) {
            k->ck.st = 2;
            json_t *v = tg_json_load(p, i + 1, JSON_ALLOW_NUL, NULL);
            k->ck.ok = v != NULL;
            json_decref(v);
        }
    }
    k->ck.pos = k->args.len;
}

/* Asked on every fragment of a call, so it must not parse all the
 * arguments each time (a 100 KB argument streamed a byte a chunk with its
 * id on each took seconds of a worker, and 100,000 chunks minutes): the
 * bytes are scanned once, and the one parse is made where the brackets
 * close. jansson takes an object or array, whitespace around it, and
 * nothing else, so until they close, or once a byte follows, the answer
 * is no. The scan is a cache of args, which only grow: k is otherwise
 * left as it is (hence the const). */
bool tg_rs_args_complete(const scall *k)
{
    scall *m = (scall *)k;
    if (m->args.len < m->ck.pos)
        memset(&m->ck, 0, sizeof m->ck);
    args_scan(m);
    return m->ck.st == 2 && m->ck.ok;
}

/* --- sending calls -------------------------------------------------------- */

/* Queue calls already repaired (steals calls), next dense indexes. */
void tg_rs_queue_fixed(tg_stream *s, schoice *c, json_t *calls, json_t *events)
{
    size_t i;
    json_t *tc;
    json_array_foreach(calls, i, tc) {
        json_t *o = json_object();  /* index first, for readers of raw streams */
        json_object_set_new(o, "index", json_integer((json_int_t)c->next_out++));
        json_object_update(o, tc);
        tg_rs_queue_delta(s, c, events, json_pack("{s:[o]}", "tool_calls", o), NULL);
    }
    json_decref(calls);
}

/* Repair and queue calls (OpenAI shape; steals calls). */
void tg_rs_queue_calls(tg_stream *s, schoice *c, json_t *calls, json_t *events)
{
    tg_rr_fix_calls(s->ctx, calls, c->seed, c->next_out, c->ids);
    tg_rs_queue_fixed(s, c, calls, events);
}

json_t *tg_rs_call_json(const scall *k)
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
