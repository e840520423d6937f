/* api_fold.c -- a Responses or Messages event stream folded into the whole
 * answer, for a passed-through API whose provider streams although the
 * agent asked for one answer (free-claude-code#486: an Anthropic-style
 * gateway that always streamed; LiteLLM#34095: a Responses provider that
 * forces SSE). The client's SDK would fail to parse "event:" lines as JSON.
 *
 * Responses: the terminal event (response.completed, .incomplete, .failed)
 * carries the whole Response; without one (a stream cut short) the last
 * Response seen gets the items of response.output_item.done in order.
 *
 * Messages: message_start's message, then each content block by its index
 * (content_block_start), grown by its deltas: text_delta, thinking_delta,
 * signature_delta, citations_delta, input_json_delta (joined, then parsed
 * as the tool_use's input at the end); message_delta's delta and usage
 * merged in.
 *
 * An "error" event (either API) makes the answer that error. Memory is
 * linear in the body, which the caller bounded (max_answer); text deltas
 * are joined in buffers, so a long answer costs linear time.
 */
#include "bridge/api_fold.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/buf.h"
#include "core/jsonio.h"

#define MAX_BLOCKS 4096  /* content blocks of one message; later ones are not folded */

typedef struct {
    json_t *block;  /* content_block_start's block */
    tg_buf text, thinking, json;
    bool has_text, has_thinking, has_json;
} fblock;

struct tg_api_fold {
    json_t *error;     /* the error event's body */
    json_t *response;  /* Responses: the last Response seen */
    json_t *items;     /* its output items, from output_item.done */
    bool terminal;     /* response came on a terminal event */
    json_t *message;   /* Messages: message_start's message */
    fblock *blocks;
    size_t nblocks;
};

tg_api_fold *tg_api_fold_new(void)
{
    tg_api_fold *f = tg_calloc(1, sizeof *f);
    f->items = json_array();
    return f;
}

static fblock *block_at(tg_api_fold *f, json_t *ix)
{
    if (!json_is_integer(ix) || json_integer_value(ix) < 0 ||
        json_integer_value(ix) >= MAX_BLOCKS)
        return NULL;
    size_t i = (size_t)json_integer_value(ix);
    if (i >= f->nblocks) {
        f->blocks = tg_realloc(f->blocks, (i + 1) * sizeof *f->blocks);
        memset(f->blocks + f->nblocks, 0, (i + 1 - f->nblocks) * sizeof *f->blocks);
        f->nblocks = i + 1;
    }
    return &f->blocks[i];
}

static void append_str(tg_buf *b, bool *has, json_t *s)
{
    if (json_is_string(s)) {
        tg_buf_append(b, json_string_value(s), json_string_length(s));
        *has = true;
    }
}

static void messages_delta(tg_api_fold *f, json_t *ev)
{
    fblock *b = block_at(f, json_object_get(ev, "index"));
    json_t *d = json_object_get(ev, "delta");
    if (!b || !json_is_object(d))
        return;
    const char *t = json_string_value(json_object_get(d, "type"));
    if (!t)
        return;
    if (!strcmp(t, "text_delta")) {
        append_str(&b->text, &b->has_text, json_object_get(d, "text"));
    } else if (!strcmp(t, "thinking_delta")) {
        append_str(&b->thinking, &b->has_thinking, json_object_get(d, "thinking"));
    } else if (!strcmp(t, "input_json_delta")) {
        append_str(&b->json, &b->has_json, json_object_get(d, "partial_json"));
    } else if (!strcmp(t, "signature_delta") && b->block) {
        json_object_set(b->block, "signature", json_object_get(d, "signature"));
    } else if (!strcmp(t, "citations_delta") && b->block) {
        json_t *cites = json_object_get(b->block, "citations");
        if (!json_is_array(cites))
            json_object_set_new(b->block, "citations", cites = json_array());
        json_array_append(cites, json_object_get(d, "citation"));
    }
}

static void messages_event(tg_api_fold *f, const char *type, json_t *ev)
{
    if (!strcmp(type, "message_start")) {
        json_t *m = json_object_get(ev, "message");
        if (json_is_object(m) && !f->message)
            f->message = json_deep_copy(m);
    } else if (!strcmp(type, "content_block_start")) {
        fblock *b = block_at(f, json_object_get(ev, "index"));
        json_t *cb = json_object_get(ev, "content_block");
        if (b && json_is_object(cb) && !b->block)
            b->block = json_deep_copy(cb);
    } else if (!strcmp(type, "content_block_delta")) {
        messages_delta(f, ev);
    } else if (!strcmp(type, "message_delta") && f->message) {
        json_t *d = json_object_get(ev, "delta");
        if (json_is_object(d))
            json_object_update(f->message, d);
        json_t *u = json_object_get(ev, "usage");
        json_t *have = json_object_get(f->message, "usage");
        if (json_is_object(u) && json_is_object(have))
            json_object_update(have, u);
        else if (json_is_object(u))
            json_object_set(f->message, "usage", u);
    }
}

static void responses_event(tg_api_fold *f, const char *type, json_t *ev)
{
    json_t *resp = json_object_get(ev, "response");
    if (json_is_object(resp) && !f->terminal) {
        json_decref(f->response);
        f->response = json_incref(resp);
        f->terminal = !strcmp(type, "response.completed") || !strcmp(type, "response.incomplete") ||
                      !strcmp(type, "response.failed");
    }
    if (!strcmp(type, "response.output_item.done") && json_is_object(json_object_get(ev, "item")))
        json_array_append(f->items, json_object_get(ev, "item"));
}

void tg_api_fold_event(tg_api_fold *f, const char *data, size_t len)
{
    if (f->error)
        return;
    json_t *ev = tg_json_load_answer(data, len);
    const char *type = json_string_value(json_object_get(ev, "type"));
    if (type && !strcmp(type, "error")) {
        f->error = ev;
        return;
    }
    if (type && !strncmp(type, "response.", 9))
        responses_event(f, type, ev);
    else if (type)
        messages_event(f, type, ev);
    json_decref(ev);
}

static json_t *block_json(fblock *b)
{
    json_t *out = b->block ? json_incref(b->block) : json_object();
    if (b->has_text)
        json_object_set_new(out, "text", json_stringn(b->text.data ? b->text.data : "", b->text.len));
    if (b->has_thinking)
        json_object_set_new(out, "thinking",
                            json_stringn(b->thinking.data ? b->thinking.data : "", b->thinking.len));
    if (b->has_json || json_object_get(out, "input")) {
        /* a tool_use's input comes whole as partial_json pieces; none: {} */
        json_t *in = b->json.len ? tg_json_load(b->json.data, b->json.len, 0, NULL) : NULL;
        if (!in && b->json.len)  /* what the pieces made is not JSON: kept as text */
            in = json_stringn(b->json.data, b->json.len);
        json_object_set_new(out, "input", in ? in : json_object());
    }
    return out;
}

json_t *tg_api_fold_end(tg_api_fold *f, int *failed)
{
    json_t *out = NULL;
    *failed = 0;
    if (f->error) {
        out = json_incref(f->error);
        *failed = 1;
    } else if (f->message) {
        out = json_incref(f->message);
        json_t *content = json_array();
        for (size_t i = 0; i < f->nblocks; i++)
            if (f->blocks[i].block || f->blocks[i].has_text)
                json_array_append_new(content, block_json(&f->blocks[i]));
        json_object_set_new(out, "content", content);
    } else if (f->response) {
        out = json_deep_copy(f->response);
        if (!f->terminal || !json_array_size(json_object_get(out, "output")))
            if (json_array_size(f->items))
                json_object_set(out, "output", f->items);
    }
    for (size_t i = 0; i < f->nblocks; i++) {
        json_decref(f->blocks[i].block);
        tg_buf_free(&f->blocks[i].text);
        tg_buf_free(&f->blocks[i].thinking);
        tg_buf_free(&f->blocks[i].json);
    }
    free(f->blocks);
    json_decref(f->error);
    json_decref(f->response);
    json_decref(f->items);
    json_decref(f->message);
    free(f);
    return out;
}
