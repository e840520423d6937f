/* bridge.c -- see bridge.h. */
#include "bridge.h"

#include <string.h>

#include "jsonio.h"

int tg_bridge_bad(tg_error *err, const char *param, const char *fmt, const char *what)
{
    tg_error_set(err, 400, "invalid_request_error", "invalid_value", param, fmt, what);
    return -1;
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

const char *tg_bridge_reasoning(const json_t *msg)
{
    const char *r = json_string_value(json_object_get(msg, "reasoning_content"));
    if (!r || !*r)
        r = json_string_value(json_object_get(msg, "reasoning"));
    return r && *r ? r : NULL;
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

void tg_bridge_read_sse(tg_buf *pending, const char *sse, size_t n,
                        void (*on_data)(void *ud, const char *data, size_t len), void *ud)
{
    tg_buf_append(pending, sse, n);
    size_t off = 0;
    for (;;) {
        const char *s = pending->data + off;
        size_t left = pending->len - off;
        const char *end = left >= 2 ? memmem(s, left, "\n\n", 2) : NULL;
        if (!end)
            break;
        tg_buf data = {0};
        event_data(s, (size_t)(end - s), &data);
        if (data.len)
            on_data(ud, data.data, data.len);
        tg_buf_free(&data);
        off += (size_t)(end - s) + 2;
    }
    tg_buf_consume(pending, off);
}
