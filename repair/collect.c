/* collect.c -- a chat completion stream folded into the whole answer.
 *
 * Some providers and gateways stream whatever the request says (a backend
 * that always streams, a gateway that forces SSE: BerriAI/litellm#34095);
 * the agent that asked for one answer then gets "data:" lines its client
 * cannot parse. toolgate folds the chunks into the chat.completion they
 * stand for, which then goes through the whole answer's repair like any
 * other, so the fold only has to keep what the chunks said, not fix it:
 *
 *  - top-level keys: the first value wins (id, model, created, ...), usage
 *    the last non-null one;
 *  - a choice by its index; its string fields (content, refusal, reasoning,
 *    reasoning_content and any other) are concatenated in buffers (a long
 *    answer in thousands of chunks costs linear time), role first-wins,
 *    arrays appended, the rest last-wins;
 *  - tool calls placed by the stream repair's own table (tg_rs_find_call:
 *    index, id, name, reused indices, Gemini's missing index, summaries
 *    that repeat a finished call), so a fold groups fragments as the
 *    stream repair does;
 *  - a custom tool's call (custom: name, input) and the legacy
 *    function_call fold the same way;
 *  - logprobs' content and refusal arrays appended; finish_reason the last
 *    non-null one.
 *
 * Bounds: at most MAX_CHOICES choices and TG_RS_MAX_CALLS calls a choice are
 * folded (what comes past them is left out), so a hostile stream of fresh
 * indices costs no quadratic search.
 *
 * An {"error": ...} event ends the fold: the answer failed, and that error
 * is what the caller relays. Memory is linear in the body, which the caller
 * has already bounded (max_answer).
 */
#include "repair/collect.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/buf.h"
#include "core/jsonio.h"
#include "repair/stream_calls.h"

#define MAX_TEXTS 16     /* string keys of a delta joined; past them, the last value */
#define MAX_CHOICES 128  /* OpenAI's largest n; more indices are not folded */

typedef struct {
    char *key;
    tg_buf b;
} ctext;

typedef struct {
    json_int_t index;
    ctext text[MAX_TEXTS];  /* content first when it came */
    size_t ntext;
    json_t *msg;     /* the delta's other keys */
    json_t *choice;  /* the choice's other keys (logprobs, finish_reason, ...) */
    schoice calls;   /* only its calls and cur: the stream repair's call table */
    char *fc_name;   /* the legacy function_call */
    tg_buf fc_args;
    bool has_fc;
} cchoice;

struct tg_collect {
    json_t *top;    /* the chunks' top-level keys but choices */
    json_t *error;  /* the first error event */
    cchoice *ch;
    size_t nch, cap;
    bool chat;      /* an event had a choices array: a chat stream */
};

tg_collect *tg_collect_new(void)
{
    tg_collect *c = tg_calloc(1, sizeof *c);
    c->top = json_object();
    return c;
}

static cchoice *choice_at(tg_collect *c, json_int_t index)
{
    for (size_t i = 0; i < c->nch; i++)
        if (c->ch[i].index == index)
            return &c->ch[i];
    if (c->nch == MAX_CHOICES)
        return NULL;
    if (c->nch == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 2;
        c->ch = tg_realloc(c->ch, c->cap * sizeof *c->ch);
    }
    cchoice *k = &c->ch[c->nch++];
    memset(k, 0, sizeof *k);
    k->index = index;
    k->msg = json_object();
    k->choice = json_object();
    k->calls.cur = -1;
    return k;
}

/* A key that is not folded as text: arrays grow, the rest is replaced
 * (first_wins keeps the first: role). */
static void keep_key(json_t *into, const char *key, json_t *v, bool first_wins)
{
    json_t *have = json_object_get(into, key);
    if (json_is_null(v))
        return;
    if (!have)
        json_object_set_new(into, key, json_deep_copy(v));
    else if (json_is_array(have) && json_is_array(v))
        json_array_extend(have, v);
    else if (!first_wins)
        json_object_set_new(into, key, json_deep_copy(v));
}

/* The buffer a delta's string key joins into, or NULL past MAX_TEXTS. */
static tg_buf *text_of(cchoice *k, const char *key)
{
    for (size_t i = 0; i < k->ntext; i++)
        if (!strcmp(k->text[i].key, key))
            return &k->text[i].b;
    if (k->ntext == MAX_TEXTS)
        return NULL;
    ctext *t = &k->text[k->ntext++];
    t->key = tg_strdup(key);
    memset(&t->b, 0, sizeof t->b);
    return &t->b;
}

/* One element of delta.tool_calls, placed by the stream repair's own
 * table (tg_rs_find_call), so that a fold and a stream group the same
 * fragments into the same calls. */
static void take_call(cchoice *k, json_t *tc)
{
    if (!json_is_object(tc))
        return;
    json_t *ix = json_object_get(tc, "index");
    long idx = json_is_integer(ix) && json_integer_value(ix) >= 0 ? (long)json_integer_value(ix) : -1;
    const char *id = json_string_value(json_object_get(tc, "id"));
    if (id && !*id)
        id = NULL;
    json_t *fn = json_object_get(tc, "function");
    json_t *custom = json_object_get(tc, "custom");  /* a custom tool's call: name, input */
    if (json_is_object(custom))
        fn = custom;
    const char *name = json_string_value(json_object_get(fn, "name"));
    if (name && !*name)
        name = NULL;
    json_t *a = json_object_get(fn, custom == fn ? "input" : "arguments");
    char *adump = json_is_object(a) ? tg_json_dumps(a) : NULL;  /* R13: an object */
    const char *args = adump ? adump : json_string_value(a);
    size_t alen = adump ? strlen(adump) : json_string_length(a);
    schoice *c = &k->calls;
    long i = tg_rs_find_call(c, idx, id, name, args, alen);
    if (i == TG_RS_CALL_SUMMARY) {
        free(adump);  /* a finished call said again: nothing new */
        return;
    }
    if (i < 0) {
        if (c->ncalls == TG_RS_MAX_CALLS) {
            free(adump);
            return;
        }
        tg_rs_call_new(c)->up_index = idx;
        i = (long)c->ncalls - 1;
    }
    c->cur = i;
    scall *x = &c->calls[i];
    if (id && !x->id)
        x->id = tg_strdup(id);
    if (name && !x->name)
        x->name = tg_strdup(name);
    if (args)
        tg_buf_append(&x->args, args, alen);
    free(adump);
    const char *key;
    json_t *v;
    json_object_foreach(tc, key, v) {
        if (strcmp(key, "index") && strcmp(key, "id") && strcmp(key, "function") &&
            strcmp(key, "custom")) {
            if (!x->extra)
                x->extra = json_object();
            keep_key(x->extra, key, v, false);
        }
    }
}

/* A delta key folded as text: any string but role; the text fields' numbers
 * and booleans too (invalid, but the stream repair sends them as text). */
static bool is_text(const char *key, const json_t *v)
{
    if (json_is_string(v))
        return strcmp(key, "role") != 0;
    static const char *const texts[] = {"content", "refusal", "reasoning_content", "reasoning", NULL};
    if (!json_is_number(v) && !json_is_boolean(v))
        return false;
    for (const char *const *t = texts; *t; t++)
        if (!strcmp(key, *t))
            return true;
    return false;
}

/* The legacy functions API's one call (delta.function_call): its name and
 * its arguments in pieces. */
static void take_function_call(cchoice *k, json_t *fc)
{
    const char *name = json_string_value(json_object_get(fc, "name"));
    json_t *a = json_object_get(fc, "arguments");
    if (name && *name && !k->fc_name)
        k->fc_name = tg_strdup(name);
    if (json_is_string(a))
        tg_buf_append(&k->fc_args, json_string_value(a), json_string_length(a));
    k->has_fc = true;
}

static void take_delta(cchoice *k, json_t *d)
{
    const char *key;
    json_t *v;
    json_object_foreach(d, key, v) {
        tg_buf *t = is_text(key, v) ? text_of(k, key) : NULL;
        if (t && json_is_string(v)) {
            tg_buf_append(t, json_string_value(v), json_string_length(v));
        } else if (t) {  /* 5, true: their text, as the stream repair sends them */
            tg_json_dump(v, t);
        } else if (!strcmp(key, "function_call") && json_is_object(v)) {
            take_function_call(k, v);
        } else if (!strcmp(key, "tool_calls") && json_is_array(v)) {
            size_t i;
            json_t *tc;
            json_array_foreach(v, i, tc) take_call(k, tc);
        } else {
            keep_key(k->msg, key, v, !strcmp(key, "role"));
        }
    }
}

static void take_choice(tg_collect *c, json_t *ch, size_t pos)
{
    json_t *ix = json_object_get(ch, "index");
    cchoice *k = choice_at(c, json_is_integer(ix) ? json_integer_value(ix) : (json_int_t)pos);
    if (!k)
        return;
    json_t *d = json_object_get(ch, "delta");
    if (!json_is_object(d))
        d = json_object_get(ch, "message");  /* a whole message in a chunk */
    if (json_is_object(d))
        take_delta(k, d);
    const char *key;
    json_t *v;
    json_object_foreach(ch, key, v) {
        if (!strcmp(key, "logprobs") && json_is_object(v)) {
            json_t *have = json_object_get(k->choice, key);
            if (!have)
                json_object_set_new(k->choice, key, have = json_object());
            const char *lk;
            json_t *lv;
            json_object_foreach(v, lk, lv) keep_key(have, lk, lv, false);
        } else if (strcmp(key, "index") && strcmp(key, "delta") && strcmp(key, "message")) {
            keep_key(k->choice, key, v, false);
        }
    }
}

void tg_collect_event(tg_collect *c, const char *data, size_t len)
{
    if (c->error)
        return;
    json_t *v = tg_json_load_answer(data, len);
    if (!json_is_object(v)) {
        json_decref(v);  /* [DONE], a keep-alive, garbage: nothing to fold */
        return;
    }
    if (json_object_get(v, "error")) {
        c->error = v;
        return;
    }
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val) {
        if (!strcmp(key, "choices") && json_is_array(val)) {
            c->chat = true;
            size_t i;
            json_t *ch;
            json_array_foreach(val, i, ch) {
                if (json_is_object(ch))
                    take_choice(c, ch, i);
            }
        } else if (!strcmp(key, "usage")) {
            if (json_is_object(val))
                json_object_set(c->top, key, val);
        } else if (strcmp(key, "choices") && !json_object_get(c->top, key)) {
            json_object_set(c->top, key, val);
        }
    }
    json_decref(v);
}

static json_t *call_json(const scall *x)
{
    json_t *t = json_object();
    json_object_set_new(t, "id", json_string(x->id ? x->id : ""));
    json_object_set_new(t, "type", json_string("function"));
    if (x->extra)
        json_object_update(t, x->extra);  /* a "type" the provider gave wins */
    const char *type = json_string_value(json_object_get(t, "type"));
    bool custom = type && !strcmp(type, "custom");
    json_object_set_new(t, custom ? "custom" : "function",
                        json_pack("{s:s, s:s%}", "name", x->name ? x->name : "",
                                  custom ? "input" : "arguments", x->args.data ? x->args.data : "",
                                  x->args.len));
    return t;
}

static void free_choice(cchoice *k)
{
    for (size_t t = 0; t < k->ntext; t++) {
        free(k->text[t].key);
        tg_buf_free(&k->text[t].b);
    }
    for (size_t i = 0; i < k->calls.ncalls; i++) {
        scall *x = &k->calls.calls[i];
        free(x->id);
        free(x->name);
        tg_buf_free(&x->args);
        json_decref(x->extra);
    }
    free(k->calls.calls);
    free(k->fc_name);
    tg_buf_free(&k->fc_args);
    json_decref(k->msg);
    json_decref(k->choice);
}

static json_t *choice_json(cchoice *k)
{
    json_t *msg = json_object();
    json_object_set_new(msg, "role", json_string("assistant"));
    json_object_set_new(msg, "content", json_null());  /* none came: null, as with calls */
    json_object_update(msg, k->msg);
    for (size_t t = 0; t < k->ntext; t++)
        json_object_set_new(msg, k->text[t].key,
                            json_stringn(k->text[t].b.data ? k->text[t].b.data : "", k->text[t].b.len));
    if (k->has_fc)
        json_object_set_new(msg, "function_call",
                            json_pack("{s:s, s:s%}", "name", k->fc_name ? k->fc_name : "", "arguments",
                                      k->fc_args.data ? k->fc_args.data : "", k->fc_args.len));
    if (k->calls.ncalls) {
        json_t *calls = json_array();
        for (size_t i = 0; i < k->calls.ncalls; i++)
            json_array_append_new(calls, call_json(&k->calls.calls[i]));
        json_object_set_new(msg, "tool_calls", calls);
    }
    json_t *ch = json_pack("{s:I, s:o}", "index", k->index, "message", msg);
    json_object_update(ch, k->choice);
    if (!json_object_get(ch, "finish_reason"))
        json_object_set_new(ch, "finish_reason", json_null());
    return ch;
}

static int by_index(const void *a, const void *b)
{
    json_int_t x = ((const cchoice *)a)->index, y = ((const cchoice *)b)->index;
    return (x > y) - (x < y);
}

json_t *tg_collect_end(tg_collect *c)
{
    json_t *out = NULL;
    if (c->error) {
        out = c->error;
    } else if (c->chat) {
        out = c->top;
        c->top = NULL;
        json_object_set_new(out, "object", json_string("chat.completion"));
        json_t *choices = json_array();
        qsort(c->ch, c->nch, sizeof *c->ch, by_index);
        for (size_t j = 0; j < c->nch; j++)
            json_array_append_new(choices, choice_json(&c->ch[j]));
        json_object_set_new(out, "choices", choices);
    }
    for (size_t i = 0; i < c->nch; i++)
        free_choice(&c->ch[i]);
    free(c->ch);
    json_decref(c->top);
    free(c);
    return out;
}
