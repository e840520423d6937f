/* fuzz_gemini.c -- libFuzzer target: the Gemini API bridge. The input is
 * a request body (or a vector of test/vectors/gemini_api, whose "request"
 * and "sse" are used) and the chat stream it answers; the stream is
 * converted whole and split at a point chosen by the input, both as SSE
 * and as the JSON array, and the two runs of each must give the same
 * bytes; the array must parse as one JSON array. A whole answer parsed
 * from the input goes through tg_gemini_answer, the input as an error
 * body through tg_gemini_error_body, and as a path through
 * tg_gemini_path. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/gemini_api.h"
#include "core/jsonio.h"

static void convert(const json_t *request, bool sse_out, const char *sse, size_t n, size_t cut,
                    tg_buf *out)
{
    json_t *chat = NULL;
    tg_gem_bridge *b = NULL;
    tg_error err;
    tg_gemini_call call = {.model = "m", .stream = true, .sse = sse_out};
    if (tg_gemini_to_chat(request, &call, NULL, &chat, &b, &err)) {
        if (b || chat)
            abort();  /* a refusal leaves nothing behind */
        return;
    }
    if (!json_is_object(chat))
        abort();
    json_decref(chat);
    tg_gemini_stream(b, sse, cut, out);
    tg_gemini_stream(b, sse + cut, n - cut, out);
    tg_gemini_stream_end(b, out);
    tg_gem_bridge_free(b);
}

static void same(const tg_buf *a, const tg_buf *b)
{
    if (a->len != b->len || (a->len && memcmp(a->data, b->data, a->len)))
        abort();
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
    size_t cut = size ? data[size - 1] % (sse.len + 1) : 0;
    const char *s = sse.data ? sse.data : "";
    for (int mode = 0; mode < 2; mode++) {
        tg_buf a = {0}, b = {0};
        convert(req, mode, s, sse.len, sse.len, &a);
        convert(req, mode, s, sse.len, cut, &b);
        same(&a, &b);
        if (!mode && a.len) {  /* the JSON array parses whole */
            json_t *arr = tg_json_load(a.data, a.len, 0, NULL);
            if (!json_is_array(arr))
                abort();
            json_decref(arr);
        }
        tg_buf_free(&a);
        tg_buf_free(&b);
    }
    const json_t *answer = json_object_get(v, "answer");
    json_t *chat = NULL;
    tg_gem_bridge *br = NULL;
    tg_error err;
    tg_gemini_call call = {.model = "m"};
    if (!tg_gemini_to_chat(req, &call, NULL, &chat, &br, &err)) {
        json_t *r = tg_gemini_answer(br, answer ? answer : v);
        if (!json_is_object(r))
            abort();
        json_decref(r);
        if (tg_gemini_count_estimate(chat) < 0)
            abort();
        json_decref(chat);
        tg_gem_bridge_free(br);
    }
    size_t len = 0;
    char *e = tg_gemini_error_body(400 + (size ? data[0] % 200 : 0), (const char *)data, size, &len);
    if (e && (len == 0 || strlen(e) != len))
        abort();
    free(e);
    char *path = strndup((const char *)data, size > 200 ? 200 : size);
    char model[64];
    tg_gemini_path(path, size && data[0] & 1, model, sizeof model);
    if (strlen(model) >= sizeof model)
        abort();
    free(path);
    json_decref(req);
    json_decref(v);
    tg_buf_free(&sse);
    return 0;
}
