/* bridge.c -- what the three agent-API bridges share (bridge.h), so that
 * each bridge file holds only its own API's shapes:
 *  - the dropped-and-said list (tg_bridge_drop and its header text): every
 *    bridge names what it could not carry the same way, each name made
 *    header-safe here once;
 *  - the reader of the repaired chat stream (tg_chat_read): SSE events cut
 *    at blank lines, choice 0's reasoning, text, refusal and calls handed to
 *    the bridge's callbacks (tg_chat_events) in the order a client shows
 *    them; a call that ends the answer stops the reading;
 *  - the event writer and small JSON helpers both directions use (the
 *    finish of a whole answer, reasoning from reasoning_details, the
 *    character tallies of the token estimates).
 * One reader for three APIs keeps their answers alike: a chunk shape the
 * repair stage lets through is read the same by every bridge. */
#include "bridge/bridge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"

int tg_bridge_bad(tg_error *err, const char *param, const char *fmt, const char *what)
{
    tg_error_set(err, 400, "invalid_request_error", "invalid_value", param, fmt, what);
    return -1;
}

/* A name goes into a response header: only [A-Za-z0-9_.:-], at most 64
 * bytes, so a client's odd type cannot forge a header line. */
static void header_safe(const char *name, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = name ? name : ""; *p && n + 1 < cap; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == ':' || c == '-';
        out[n++] = ok ? c : '?';
    }
    out[n] = '\0';
    if (!n)
        snprintf(out, cap, "?");
}

void tg_bridge_drop(json_t *dropped, const char *kind, const char *raw)
{
    json_t *list = json_object_get(dropped, kind);
    char name[65];
    if (!json_is_object(dropped))
        return;
    header_safe(raw, name, sizeof name);
    if (!list) {
        list = json_array();
        json_object_set_new(dropped, kind, list);
    }
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v) if (!strcmp(json_string_value(v), name)) return;
    json_array_append_new(list, json_string(name));
}

char *tg_bridge_dropped_text(const json_t *dropped)
{
    tg_buf t = {0};
    const char *kind;
    const json_t *list;
    json_object_foreach((json_t *)dropped, kind, list) {
        if (!json_array_size(list))
            continue;
        if (t.len)
            tg_buf_puts(&t, "; ");
        tg_buf_puts(&t, kind);
        size_t i;
        const json_t *v;
        json_array_foreach(list, i, v) {
            tg_buf_puts(&t, i ? ", " : " ");
            tg_buf_puts(&t, json_string_value(v));
        }
    }
    size_t n;
    return t.len ? tg_buf_steal(&t, &n) : NULL;
}

size_t tg_bridge_dropped_count(const json_t *dropped)
{
    size_t n = 0;
    const char *kind;
    const json_t *list;
    json_object_foreach((json_t *)dropped, kind, list) n += json_array_size(list);
    return n;
}

bool tg_bridge_is_one_of(const char *k, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(k, *list))
            return true;
    return false;
}

json_int_t tg_bridge_int_at(const json_t *o, const char *k1, const char *k2)
{
    const json_t *v = json_object_get(o, k1);
    if (k2)
        v = json_object_get(v, k2);
    return json_is_integer(v) ? json_integer_value(v) : 0;
}

/* The readable texts of reasoning_details (OpenRouter's and MiniMax's
 * reasoning.text items, and the summaries of reasoning.summary ones) in
 * order; encrypted items are no text. */
static const char *details_text(const json_t *details, tg_buf *own)
{
    size_t i;
    const json_t *d;
    json_array_foreach(details, i, d) {
        const char *type = json_string_value(json_object_get(d, "type"));
        const json_t *t = json_object_get(d, type && !strcmp(type, "reasoning.summary")
                                                 ? "summary" : "text");
        if (!type || strncmp(type, "reasoning.", 10) || !json_is_string(t))
            continue;
        tg_buf_append(own, json_string_value(t), json_string_length(t));
    }
    return own->len ? own->data : NULL;
}

const char *tg_bridge_reasoning(const json_t *msg, tg_buf *own)
{
    const char *r = json_string_value(json_object_get(msg, "reasoning_content"));
    if (!r || !*r)
        r = json_string_value(json_object_get(msg, "reasoning"));
    if (r && *r)
        return r;
    return details_text(json_object_get(msg, "reasoning_details"), own);
}

/* Does any prompt_filter_results entry say a category was filtered? */
static bool prompt_filtered(const json_t *completion)
{
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(completion, "prompt_filter_results"), i, r) {
        const char *k;
        const json_t *cat;
        json_object_foreach((json_t *)json_object_get(r, "content_filter_results"), k, cat)
            if (json_is_true(json_object_get(cat, "filtered")))
                return true;
    }
    return false;
}

const char *tg_bridge_finish(const json_t *completion)
{
    const json_t *choices = json_object_get(completion, "choices");
    if (json_array_size(choices))
        return json_string_value(json_object_get(json_array_get(choices, 0), "finish_reason"));
    return prompt_filtered(completion) ? "content_filter" : NULL;
}

void tg_bridge_tool_media(json_t *media, const char *call_id, json_t *part, tg_buf *text,
                          size_t *n_text)
{
    const char *type = json_string_value(json_object_get(part, "type"));
    bool image = type && !strcmp(type, "image_url");
    char note[192];
    snprintf(note, sizeof note, "%s returned by tool call %.120s", image ? "Images" : "Files",
             call_id ? call_id : "");
    bool noted = false;
    size_t i;
    const json_t *p;
    json_array_foreach(media, i, p) {
        const char *t = json_string_value(json_object_get(p, "text"));
        if (t && !strcmp(t, note)) {
            noted = true;
            break;
        }
    }
    if (!noted)
        json_array_append_new(media, json_pack("{s:s, s:s}", "type", "text", "text", note));
    json_array_append_new(media, part);
    if ((*n_text)++)
        tg_buf_puts(text, "\n\n");
    tg_buf_puts(text, image ? "(image: see the next user message)" : "(file: see the next user message)");
}

size_t tg_bridge_strip_keys(json_t *o, const char *prefix, size_t plen)
{
    size_t n = 0;
    const char *k;
    json_t *val;
    void *tmp;
    if (!json_is_object(o))
        return 0;
    json_object_foreach_safe(o, tmp, k, val) {
        if (!strncmp(k, prefix, plen)) {
            json_object_del(o, k);
            n++;
        }
    }
    return n;
}

void tg_bridge_emit(tg_buf *out, json_t *ev)
{
    tg_buf_puts(out, "event: ");
    tg_buf_puts(out, json_string_value(json_object_get(ev, "type")));
    tg_buf_puts(out, "\ndata: ");
    tg_json_dump(ev, out);
    tg_buf_puts(out, "\n\n");
    json_decref(ev);
}

/* One SSE event's data lines, joined with newlines. */
static void event_data(const char *ev, size_t n, tg_buf *data)
{
    const char *p = ev, *e = ev + n;
    while (p < e) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        const char *le = nl ? nl : e;
        if (le - p >= 5 && !memcmp(p, "data:", 5)) {
            const char *d = p + 5;
            if (d < le && *d == ' ')
                d++;
            if (data->len)
                tg_buf_puts(data, "\n");
            tg_buf_append(data, d, (size_t)(le - d));
        }
        p = nl ? nl + 1 : e;
    }
}

static void start_once(tg_chat_reader *rd, const tg_chat_events *ev, void *b,
                       const json_t *chunk, tg_buf *out)
{
    if (rd->started)
        return;
    rd->started = true;
    ev->start(b, chunk, out);
}

static void keep(json_t **slot, const json_t *v)
{
    json_decref(*slot);
    *slot = json_incref((json_t *)v);
}

/* Choice 0's delta, in the order a client shows it. False when a call
 * ended the stream. */
static bool read_choice(tg_chat_reader *rd, const tg_chat_events *ev, void *b,
                        const json_t *choice, tg_buf *out)
{
    const json_t *delta = json_object_get(choice, "delta");
    tg_buf own = {0};
    const char *r = tg_bridge_reasoning(delta, &own);
    if (r)
        ev->reasoning(b, r, out);
    tg_buf_free(&own);
    const char *t = json_string_value(json_object_get(delta, "content"));
    if (t && *t)
        ev->text(b, t, json_object_get(json_object_get(choice, "logprobs"), "content"), out);
    t = json_string_value(json_object_get(delta, "refusal"));
    if (t && *t)
        ev->refusal(b, t, out);
    size_t j;
    const json_t *tc;
    json_array_foreach(json_object_get(delta, "tool_calls"), j, tc) {
        char key[32];  /* its index, or its place in the delta without one */
        const json_t *ix = json_object_get(tc, "index");
        snprintf(key, sizeof key, "%lld",
                 (long long)(json_is_integer(ix) ? json_integer_value(ix) : (json_int_t)j));
        if (!ev->call(b, tc, key, out))
            return false;
    }
    const char *f = json_string_value(json_object_get(choice, "finish_reason"));
    if (f && *f)
        snprintf(rd->finish, sizeof rd->finish, "%s", f);
    const json_t *sr = json_object_get(choice, "stop_reason");
    if (json_is_string(sr))
        keep(&rd->stop_reason, sr);
    return true;
}

static void read_chunk(tg_chat_reader *rd, const tg_chat_events *ev, void *b,
                       const json_t *chunk, tg_buf *out)
{
    start_once(rd, ev, b, chunk, out);
    const json_t *error = json_object_get(chunk, "error");
    if (json_is_object(error)) {
        rd->finished = true;
        ev->fail(b, error, out);
        return;
    }
    const json_t *usage = json_object_get(chunk, "usage");
    if (json_is_object(usage))
        keep(&rd->usage, usage);
    size_t i;
    const json_t *choice;
    json_array_foreach(json_object_get(chunk, "choices"), i, choice) {
        const json_t *ix = json_object_get(choice, "index");
        if (json_is_integer(ix) && json_integer_value(ix) != 0)
            continue;  /* both APIs have one answer */
        if (!read_choice(rd, ev, b, choice, out)) {
            rd->finished = true;
            return;
        }
    }
}

/* One event's data: [DONE] ends the answer, a chunk feeds it. */
static void read_data(tg_chat_reader *rd, const tg_chat_events *ev, void *b, const char *data,
                      size_t len, tg_buf *out)
{
    if (rd->finished)
        return;
    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        start_once(rd, ev, b, NULL, out);
        rd->finished = true;
        ev->finish(b, out);
        return;
    }
    json_t *chunk = tg_json_load(data, len, 0, NULL);
    if (json_is_object(chunk))
        read_chunk(rd, ev, b, chunk, out);
    json_decref(chunk);
}

void tg_chat_read(tg_chat_reader *rd, const tg_chat_events *ev, void *b, const char *sse,
                  size_t n, tg_buf *out)
{
    tg_buf_append(&rd->pending, sse, n);
    size_t off = 0;
    for (;;) {
        const char *s = rd->pending.data + off;
        size_t left = rd->pending.len - off;
        const char *end = left >= 2 ? memmem(s, left, "\n\n", 2) : NULL;
        if (!end)
            break;
        tg_buf data = {0};
        event_data(s, (size_t)(end - s), &data);
        if (data.len) {
            read_data(rd, ev, b, data.data, data.len, out);
        } else if (*s == ':' && !rd->finished && !rd->quiet) {
            /* the repair stage's keepalive while it holds a call: the
             * bridge's client and the balancers before it see it too */
            tg_buf_append(out, s, (size_t)(end - s));
            tg_buf_puts(out, "\n\n");
        }
        tg_buf_free(&data);
        off += (size_t)(end - s) + 2;
    }
    tg_buf_consume(&rd->pending, off);
}

void tg_chat_read_end(tg_chat_reader *rd, const tg_chat_events *ev, void *b, tg_buf *out)
{
    if (rd->finished)
        return;
    start_once(rd, ev, b, NULL, out);
    rd->finished = true;
    json_t *e = json_pack("{s:s, s:s, s:s}", "type", "api_error", "code", "stream_truncated",
                          "message", "upstream stream ended before it finished");
    ev->fail(b, e, out);
    json_decref(e);
}

void tg_chat_reader_free(tg_chat_reader *rd)
{
    tg_buf_free(&rd->pending);
    json_decref(rd->usage);
    json_decref(rd->stop_reason);
}

/* --- token estimates ---------------------------------------------------- */

size_t tg_utf8_chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

static bool skipped(const char *k, const char *const *skip)
{
    for (; skip && *skip; skip++)
        if (!strcmp(k, *skip))
            return true;
    return false;
}

void tg_tally_value(const json_t *v, tg_tally *t, tg_tally_leaf leaf, const char *const *skip)
{
    if (json_is_string(v)) {
        t->chars += tg_utf8_chars(json_string_value(v), json_string_length(v));
        return;
    }
    if (leaf && json_is_object(v) && leaf(v, t))
        return;
    size_t i;
    const char *k;
    json_t *x;
    if (json_is_array(v))
        json_array_foreach(v, i, x) tg_tally_value(x, t, leaf, skip);
    else if (json_is_object(v))
        json_object_foreach((json_t *)v, k, x) if (!skipped(k, skip))
            tg_tally_value(x, t, leaf, skip);
}

void tg_tally_tools(const json_t *tools, tg_tally *t)
{
    size_t i;
    const json_t *tool;
    json_array_foreach(tools, i, tool) {
        if (json_is_true(json_object_get(tool, "defer_loading")))
            continue;
        char *text = json_dumps(tool, JSON_COMPACT);
        if (text)
            t->chars += tg_utf8_chars(text, strlen(text));
        free(text);
    }
}

void tg_bridge_describe_returns(json_t *fn, const json_t *schema)
{
    char *text = tg_json_dumps(schema);
    const char *d = json_string_value(json_object_get(fn, "description"));
    tg_buf b = {0};
    if (d && *d) {
        tg_buf_puts(&b, d);
        tg_buf_puts(&b, "\n\n");
    }
    tg_buf_puts(&b, "It returns JSON of this schema: ");
    tg_buf_puts(&b, text ? text : "{}");
    json_object_set_new(fn, "description", json_stringn(b.data, b.len));
    tg_buf_free(&b);
    free(text);
}
