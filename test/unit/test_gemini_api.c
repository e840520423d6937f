/* test_gemini_api.c -- the Gemini API bridge, driven by the vectors in
 * test/vectors/gemini_api/ (one cmocka test per file).
 *
 * A vector is a JSON object with "request" (a GenerateContentRequest),
 * optionally "call" ({model, stream, sse}: what the path and query say;
 * model "gemini-x", not streamed by default) and any of:
 *   chat                 the chat body it must become (exact)
 *   error_param          it must be refused: 400 naming this field
 *   dropped              what X-Toolgate-Dropped must say (absent: nothing)
 *   answer + response    a chat.completion and the GenerateContentResponse
 *                        it must become (subset)
 *   sse + stream         chat stream payloads (JSON values, "[DONE]" or
 *                        "raw:TEXT") and the responses they must become,
 *                        element by element (subsets)
 *   path + method        a path past the prefix, and what tg_gemini_path
 *                        makes of it: [method, model]
 *   error + gemini       an error answer {status, body} and the body it
 *                        must become (null: it goes as it came)
 * Every stream is run both ways the API streams (SSE events and the JSON
 * array without alt=sse): both must give the same responses, the array
 * must parse as one JSON array, and every stream is also replayed byte by
 * byte and in random splits and must give the same bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bridge_vectors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/gemini_api.h"
#include "core/jsonio.h"

static char vec_dir[1024];

static tg_gemini_call call_of(const json_t *v, bool stream, bool sse)
{
    const json_t *c = json_object_get(v, "call");
    const char *model = json_string_value(json_object_get(c, "model"));
    tg_gemini_call call = {.model = model ? model : "gemini-x", .stream = stream, .sse = sse};
    if (json_is_true(json_object_get(c, "stream")))
        call.stream = true;
    return call;
}

static void run_request(const json_t *v, tg_gem_bridge **bridge)
{
    json_t *chat = NULL;
    tg_error err;
    tg_bridge_opts o = vector_opts(v);
    tg_gemini_call call = call_of(v, false, false);
    int rc = tg_gemini_to_chat(json_object_get(v, "request"), &call, &o, &chat, bridge, &err);
    const json_t *param = json_object_get(v, "error_param");
    if (param) {
        if (rc == 0)
            fprintf(stderr, "# accepted, but %s should have been refused\n",
                    json_string_value(param));
        assert_int_equal(rc, -1);
        assert_int_equal(err.status, 400);
        json_t *got = json_string(err.param);
        expect(json_equal(param, got), param, got, "error param");
        json_decref(got);
        assert_null(*bridge);
        assert_null(chat);
        return;
    }
    if (rc)
        fprintf(stderr, "# refused: %s\n", err.message);
    assert_int_equal(rc, 0);
    const json_t *want = json_object_get(v, "chat");
    if (want)
        expect(json_equal(want, chat), want, chat, "chat body");
    expect_dropped(v, tg_gem_bridge_dropped_peek(*bridge));
    json_decref(chat);
}

static void convert_in_pieces(const json_t *v, bool sse, const tg_buf *in, size_t piece,
                              unsigned seed, tg_buf *out)
{
    json_t *chat = NULL;
    tg_gem_bridge *b = NULL;
    tg_error err;
    tg_gemini_call call = call_of(v, true, sse);
    assert_int_equal(tg_gemini_to_chat(json_object_get(v, "request"), &call, NULL, &chat, &b, &err), 0);
    json_decref(chat);
    assert_string_equal(tg_gemini_stream_type(b), sse ? "text/event-stream" : "application/json");
    size_t off = 0;
    while (off < in->len) {
        size_t n = piece ? piece : 1 + (size_t)(rand_r(&seed) % 40);
        if (n > in->len - off)
            n = in->len - off;
        tg_gemini_stream(b, in->data + off, n, out);
        off += n;
    }
    tg_gemini_stream_end(b, out);
    tg_gem_bridge_free(b);
}

/* The responses of an SSE stream ("data: JSON\r\n\r\n" each; comments
 * skipped), as the SDK reads them. */
static json_t *sse_responses(const tg_buf *s)
{
    json_t *all = json_array();
    const char *p = s->data, *e = s->data + s->len;
    while (p && p < e) {
        const char *end = memmem(p, (size_t)(e - p), "\r\n\r\n", 4);
        const char *end2 = memmem(p, (size_t)(e - p), "\n\n", 2);
        size_t skip = 4;
        if (!end || (end2 && end2 < end && *p == ':')) {
            end = end2;
            skip = 2;
        }
        assert_non_null(end);
        if (*p != ':') {
            assert_memory_equal(p, "data: ", 6);
            json_t *d = tg_json_load(p + 6, (size_t)(end - p - 6), 0, NULL);
            assert_non_null(d);
            json_array_append_new(all, d);
        }
        p = end + skip;
    }
    return all;
}

/* A stream must end in a response with a finishReason, or an error. */
static void check_end(const json_t *rs)
{
    const json_t *last = json_array_get(rs, json_array_size(rs) - 1);
    assert_non_null(last);
    bool err = json_is_object(json_object_get(last, "error"));
    const json_t *fin = json_object_get(json_array_get(json_object_get(last, "candidates"), 0),
                                        "finishReason");
    assert_true(err || json_is_string(fin));
    for (size_t i = 0; i + 1 < json_array_size(rs); i++)
        assert_null(json_object_get(json_array_get(rs, i), "error"));
}

static void run_stream(const json_t *v)
{
    tg_buf in = {0}, whole = {0}, arr = {0};
    chat_sse(json_object_get(v, "sse"), &in);
    convert_in_pieces(v, true, &in, in.len, 0, &whole);
    convert_in_pieces(v, false, &in, in.len, 0, &arr);
    for (unsigned seed = 0; seed < 12; seed++) {
        tg_buf split = {0};
        convert_in_pieces(v, seed & 1, &in, seed == 0 ? 1 : 0, seed, &split);
        const tg_buf *ref = seed & 1 ? &whole : &arr;
        if (split.len != ref->len || memcmp(split.data, ref->data, ref->len))
            fprintf(stderr, "# split %u gives other bytes\n", seed);
        assert_true(split.len == ref->len && !memcmp(split.data, ref->data, ref->len));
        tg_buf_free(&split);
    }
    json_t *rs = sse_responses(&whole);
    json_t *ra = tg_json_load(arr.data, arr.len, 0, NULL);
    if (!json_is_array(ra))
        fprintf(stderr, "# not a JSON array: %.*s\n", (int)arr.len, arr.data);
    assert_true(json_is_array(ra));
    expect(json_equal(rs, ra), rs, ra, "SSE and JSON-array responses");
    check_end(rs);
    const json_t *want = json_object_get(v, "stream");
    if (want) {
        bool ok = json_array_size(want) == json_array_size(rs);
        for (size_t i = 0; ok && i < json_array_size(want); i++)
            ok = subset(json_array_get(want, i), json_array_get(rs, i));
        expect(ok, want, rs, "stream responses");
    }
    json_decref(rs);
    json_decref(ra);
    tg_buf_free(&in);
    tg_buf_free(&whole);
    tg_buf_free(&arr);
}

static void run_error(const json_t *v)
{
    const json_t *e = json_object_get(v, "error");
    const json_t *body = json_object_get(e, "body");
    char *text = json_is_string(body) ? strdup(json_string_value(body)) : tg_json_dumps(body);
    size_t len = 0;
    char *got = tg_gemini_error_body((int)json_integer_value(json_object_get(e, "status")), text,
                                     strlen(text), &len);
    const json_t *want = json_object_get(v, "gemini");
    if (json_is_null(want)) {
        assert_null(got);
    } else {
        assert_non_null(got);
        json_t *g = tg_json_load(got, len, 0, NULL);
        expect(json_equal(want, g), want, g, "gemini error");
        json_decref(g);
    }
    free(got);
    free(text);
}

static void run_paths(const json_t *paths)
{
    const char *names[] = {"none", "list", "model", "generate", "stream", "count", "other"};
    const char *path;
    const json_t *want;
    json_object_foreach((json_t *)paths, path, want) {
        char model[64];
        bool sdk = !strncmp(path, "sdk:", 4);  /* the client is Gemini's SDK */
        tg_gem_method m = tg_gemini_path(path + (sdk ? 4 : 0), sdk, model, sizeof model);
        json_t *got = json_pack("[s, s]", names[m], model);
        if (m == TG_GEM_NONE)
            json_array_set_new(got, 1, json_string(""));
        expect(json_equal(want, got), want, got, path);
        json_decref(got);
    }
}

/* A whole answer to a request that asked for a stream (a provider that
 * answered whole) is the stream one response long, in both forms. */
static void run_answer_streams(const json_t *v, const json_t *answer, const json_t *want)
{
    for (int sse = 0; sse < 2; sse++) {
        json_t *chat = NULL;
        tg_gem_bridge *b = NULL;
        tg_error err;
        tg_gemini_call call = call_of(v, true, sse);
        assert_int_equal(tg_gemini_to_chat(json_object_get(v, "request"), &call, NULL, &chat, &b, &err), 0);
        assert_true(tg_gemini_streams(b));
        tg_buf out = {0};
        tg_gemini_answer_stream(b, answer, &out);
        json_t *rs = sse ? sse_responses(&out) : tg_json_load(out.data, out.len, 0, NULL);
        assert_int_equal(json_array_size(rs), 1);
        expect(subset(want, json_array_get(rs, 0)), want, rs, "the answer as a stream");
        json_decref(rs);
        json_decref(chat);
        tg_buf_free(&out);
        tg_gem_bridge_free(b);
    }
}

static void test_vector(void **state)
{
    json_t *v = load_vector(vec_dir, *state);
    bool any = false;
    if (json_object_get(v, "request")) {
        tg_gem_bridge *b = NULL;
        run_request(v, &b);
        any = json_object_get(v, "chat") || json_object_get(v, "error_param") ||
              json_object_get(v, "dropped");
        const json_t *answer = json_object_get(v, "answer");
        if (answer) {
            json_t *r = tg_gemini_answer(b, answer);
            const json_t *want = json_object_get(v, "response");
            expect(subset(want, r), want, r, "response");
            json_decref(r);
            run_answer_streams(v, answer, want);
            any = true;
        }
        tg_gem_bridge_free(b);
        if (json_object_get(v, "sse")) {
            run_stream(v);
            any = true;
        }
    }
    if (json_object_get(v, "paths")) {
        run_paths(json_object_get(v, "paths"));
        any = true;
    }
    if (json_object_get(v, "error")) {
        run_error(v);
        any = true;
    }
    assert_true(any);
    json_decref(v);
}

/* Every repaired chat stream of test/vectors/repair through the bridge:
 * the responses say what the chat stream said, the same text and the
 * same calls (names, arguments as objects), in the same order. */
static void test_repair_fixture(void **state)
{
    json_t *fx = load_vector(vec_dir, *state);
    if (chat_agent_only(fx)) {  /* no bridge reads such an answer */
        json_decref(fx);
        return;
    }
    const json_t *payloads = json_object_get(fx, "expected_sse");
    assert_true(json_is_array(payloads));
    json_t *v = json_pack("{s:{s:[{s:s, s:[{s:s}]}]}}", "request", "contents", "role", "user",
                          "parts", "text", "x");
    tg_buf in = {0}, out = {0}, text = {0};
    chat_sse(payloads, &in);
    convert_in_pieces(v, true, &in, in.len, 0, &out);
    json_t *rs = sse_responses(&out);
    check_end(rs);
    if (!json_object_get(json_array_get(rs, json_array_size(rs) - 1), "error")) {
        json_t *calls = json_array();
        assemble_chat(payloads, &text, calls);
        size_t i, j;
        const json_t *tc, *r, *p;
        json_array_foreach(calls, i, tc) {
            const char *a = json_string_value(json_object_get(tc, "arguments"));
            json_t *args = a && *a ? tg_json_load(a, strlen(a), 0, NULL) : json_object();
            if (!json_is_object(args)) {
                json_decref(args);
                args = json_string(a);
            }
            json_object_set_new((json_t *)tc, "args", args);
            json_object_del((json_t *)tc, "arguments");
        }
        tg_buf got_text = {0};
        json_t *got_calls = json_array();
        json_array_foreach(rs, i, r) {
            const json_t *parts = json_object_get(
                json_object_get(json_array_get(json_object_get(r, "candidates"), 0), "content"),
                "parts");
            json_array_foreach(parts, j, p) {
                const json_t *fc = json_object_get(p, "functionCall");
                if (fc)
                    json_array_append_new(got_calls,
                                          json_pack("{s:O, s:O}", "name", json_object_get(fc, "name"),
                                                    "args", json_object_get(fc, "args")));
                else if (!json_is_true(json_object_get(p, "thought")))
                    tg_buf_puts(&got_text, json_string_value(json_object_get(p, "text")));
            }
        }
        json_t *want_text = json_stringn(text.data ? text.data : "", text.len);
        json_t *have_text = json_stringn(got_text.data ? got_text.data : "", got_text.len);
        expect(json_equal(want_text, have_text), want_text, have_text, "text");
        expect(json_equal(calls, got_calls), calls, got_calls, "calls");
        json_decref(want_text);
        json_decref(have_text);
        json_decref(calls);
        json_decref(got_calls);
        tg_buf_free(&got_text);
    }
    json_decref(rs);
    json_decref(v);
    json_decref(fx);
    tg_buf_free(&in);
    tg_buf_free(&out);
    tg_buf_free(&text);
}

/* propertyOrdering is the order of the chat schema's properties (a
 * vector's "chat" is compared as JSON, where an object has no order). */
static void test_property_ordering(void **state)
{
    (void)state;
    json_t *req = json_loads("{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"x\"}]}],"
                             "\"tools\":[{\"functionDeclarations\":[{\"name\":\"f\",\"parameters\":"
                             "{\"type\":\"OBJECT\",\"properties\":{\"zeta\":{\"type\":\"STRING\"},"
                             "\"alpha\":{\"type\":\"STRING\"},\"mid\":{\"type\":\"STRING\"}},"
                             "\"propertyOrdering\":[\"alpha\",\"zeta\"]}}]}]}", 0, NULL);
    tg_gemini_call call = {.model = "gemini-x"};
    json_t *chat = NULL;
    tg_gem_bridge *b = NULL;
    tg_error err;
    assert_int_equal(tg_gemini_to_chat(req, &call, NULL, &chat, &b, &err), 0);
    char *text = tg_json_dumps(json_object_get(json_object_get(json_object_get(
        json_array_get(json_object_get(chat, "tools"), 0), "function"), "parameters"), "properties"));
    assert_non_null(text);
    const char *a = strstr(text, "alpha"), *z = strstr(text, "zeta"), *m = strstr(text, "mid");
    assert_true(a && z && m && a < z && z < m);
    free(text);
    json_decref(chat);
    tg_gem_bridge_free(b);
    json_decref(req);
}

int main(void)
{
    const struct CMUnitTest own[] = {cmocka_unit_test(test_property_ordering)};
    if (cmocka_run_group_tests_name("schema conversion", own, NULL, NULL))
        return 1;
    (void)parse_events;  /* bridge_vectors.h's readers of event: streams */
    (void)check_comments;
    const char *root = getenv("TG_ROOT");
    snprintf(vec_dir, sizeof vec_dir, "%s/test/vectors/gemini_api", root ? root : ".");
    int rc = run_vector_files("gemini_api", vec_dir, test_vector);
    snprintf(vec_dir, sizeof vec_dir, "%s/test/vectors/repair", root ? root : ".");
    return rc | run_vector_files_with("repaired streams through the Gemini bridge", vec_dir,
                                      test_repair_fixture, "\"expected_sse\"");
}
