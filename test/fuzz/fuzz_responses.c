/* fuzz_responses.c -- libFuzzer target: the Responses API bridge. The input
 * is a request body (or a vector of test/vectors/responses_api, whose
 * "request" and "sse" are used) and the chat stream it answers; the stream
 * is converted whole and split at a point chosen by the input, and both
 * runs must give the same bytes. A whole answer parsed from the input goes
 * through tg_responses_answer too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"
#include "bridge/responses_api.h"

static void convert(const json_t *request, const char *sse, size_t n, size_t cut, tg_buf *out)
{
    json_t *chat = NULL;
    tg_resp_bridge *b = NULL;
    tg_error err;
    if (tg_responses_to_chat(request, &chat, &b, &err)) {
        if (b || chat)
            abort();  /* a refusal leaves nothing behind */
        return;
    }
    json_decref(chat);
    tg_responses_stream(b, sse, cut, out);
    tg_responses_stream(b, sse + cut, n - cut, out);
    tg_responses_stream_end(b, out);
    tg_resp_bridge_free(b);
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
    /* Twice at most: a Response's created_at is the clock's when upstream
     * names no time, and a second may pass between two runs; a split that
     * changes the output does so every time. */
    for (int attempt = 0;; attempt++) {
        tg_buf_reset(&a);
        tg_buf_reset(&b);
        convert(req, sse.data ? sse.data : "", sse.len, sse.len, &a);
        convert(req, sse.data ? sse.data : "", sse.len, cut, &b);
        if (a.len == b.len && (!a.len || !memcmp(a.data, b.data, a.len)))
            break;
        if (attempt)
            abort();
    }
    const json_t *answer = json_object_get(v, "answer");
    json_t *chat = NULL;
    tg_resp_bridge *br = NULL;
    tg_error err;
    if (!tg_responses_to_chat(req, &chat, &br, &err)) {
        json_t *r = tg_responses_answer(br, answer ? answer : v);
        if (!json_is_object(r))
            abort();
        json_decref(r);
        json_decref(chat);
        tg_resp_bridge_free(br);
    }
    json_decref(req);
    json_decref(v);
    tg_buf_free(&a);
    tg_buf_free(&b);
    tg_buf_free(&sse);
    return 0;
}
