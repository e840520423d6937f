/* fuzz_messages.c -- libFuzzer target: the Messages API bridge. The input
 * is a request body (or a vector of test/vectors/messages_api, whose
 * "request" and "sse" are used) and the chat stream it answers; the stream
 * is converted whole and split at a point chosen by the input, and both
 * runs must give the same bytes, which must end in message_stop or an
 * error event. A whole answer parsed from the input goes through
 * tg_messages_answer too, and the input as an error body through
 * tg_messages_error_body. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem: the fuzz build has no -D_GNU_SOURCE */
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"
#include "bridge/messages_api.h"

static void convert(const json_t *request, const char *sse, size_t n, size_t cut, tg_buf *out)
{
    json_t *chat = NULL;
    tg_msg_bridge *b = NULL;
    tg_error err;
    if (tg_messages_to_chat(request, &chat, &b, &err)) {
        if (b || chat)
            abort();  /* a refusal leaves nothing behind */
        return;
    }
    if (!json_is_object(chat))
        abort();
    json_decref(chat);
    tg_messages_stream(b, sse, cut, out);
    tg_messages_stream(b, sse + cut, n - cut, out);
    tg_messages_stream_end(b, out);
    tg_msg_bridge_free(b);
}

static bool ends_with(const tg_buf *b, const char *s)
{
    size_t n = strlen(s);
    return b->len >= n && !memcmp(b->data + b->len - n, s, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *v = tg_json_load((const char *)data, size, 0, NULL);
    const json_t *request = json_object_get(v, "request") ? json_object_get(v, "request") : v;
    tg_buf sse = {0};
    const json_t *payloads = json_object_get(v, "sse");
    if (json_is_array(payloads)) {
        size_t i;
        const json_t *p;
        json_array_foreach(payloads, i, p) {
            tg_buf_puts(&sse, "data: ");
            if (json_is_string(p))
                tg_buf_puts(&sse, json_string_value(p));
            else
                tg_json_dump(p, &sse);
            tg_buf_puts(&sse, "\n\n");
        }
    } else {
        tg_buf_append(&sse, data, size);
    }
    json_t *req = request ? json_incref((json_t *)request) : json_object();
    tg_buf a = {0}, b = {0};
    size_t cut = size ? data[size - 1] % (sse.len + 1) : 0;
    convert(req, sse.data ? sse.data : "", sse.len, sse.len, &a);
    convert(req, sse.data ? sse.data : "", sse.len, cut, &b);
    if (a.len != b.len || (a.len && memcmp(a.data, b.data, a.len)))
        abort();
    if (a.len && !ends_with(&a, "{\"type\":\"message_stop\"}\n\n") &&
        !(a.len > 7 && memmem(a.data, a.len, "event: error\n", 13)))
        abort();
    const json_t *answer = json_object_get(v, "answer");
    json_t *chat = NULL;
    tg_msg_bridge *br = NULL;
    tg_error err;
    if (!tg_messages_to_chat(req, &chat, &br, &err)) {
        json_t *m = tg_messages_answer(br, answer ? answer : v);
        if (!json_is_object(m))
            abort();
        json_decref(m);
        json_decref(chat);
        tg_msg_bridge_free(br);
    }
    size_t len = 0;
    char *e = tg_messages_error_body(400 + (size ? data[0] % 200 : 0), (const char *)data, size, &len);
    if (e && (len == 0 || strlen(e) != len))
        abort();
    free(e);
    json_decref(req);
    json_decref(v);
    tg_buf_free(&a);
    tg_buf_free(&b);
    tg_buf_free(&sse);
    return 0;
}
