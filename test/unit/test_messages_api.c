/* test_messages_api.c -- the Messages API bridge, driven by the vectors in
 * test/vectors/messages_api/ (one cmocka test per file).
 *
 * A vector is a JSON object with "request" (a /v1/messages body) and any of:
 *   chat                 the chat body it must become (exact); "dropped" and
 *                        "translated" what X-Toolgate-Dropped and
 *                        X-Toolgate-Translated then say (absent: nothing),
 *                        "target" what the route's target takes
 *                        (bridge_vectors.h vector_opts)
 *   error_param          it must be refused: 400 naming this field
 *   answer + message     a chat.completion and the Message it must become
 *   sse + events [+ final]
 *                        chat stream payloads (JSON values or "[DONE]") and
 *                        the Anthropic events they must become: a list of
 *                        [type, fields] pairs (or bare types), fields matched
 *                        as a subset; final is matched against the message
 *                        the events build, as the Anthropic SDK builds it
 *   error + anthropic    an error answer {status, body} and the body it
 *                        must become (null: it goes as it came)
 * Expected objects match as subsets, arrays element by element with equal
 * lengths; "<any>" matches anything. Every stream is also replayed byte by
 * byte and in random splits, must give the same bytes, and must keep the
 * Messages invariants: message_start first; blocks indexed 0, 1, 2... and
 * sequential (one open at a time); every delta inside the open block and
 * of its kind; message_delta then message_stop last, or an error event
 * last with nothing after it.
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

#include "core/jsonio.h"
#include "bridge/messages_api.h"
#include "core/cache.h"

static char vec_dir[1024];

static void run_request(const json_t *v, tg_msg_bridge **bridge)
{
    json_t *chat = NULL;
    tg_error err;
    tg_bridge_opts o = vector_opts(v);
    int rc = tg_messages_to_chat_opts(json_object_get(v, "request"), &o, &chat, bridge, &err);
    const json_t *param = json_object_get(v, "error_param");
    if (param) {
        if (rc == 0)
            fprintf(stderr, "# accepted, but %s should have been refused\n", json_string_value(param));
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
    expect_dropped(v, tg_msg_bridge_dropped_peek(*bridge));
    expect_listed(v, "translated", tg_msg_bridge_translated_peek(*bridge));
    json_decref(chat);
}

static void convert_in_pieces(const json_t *request, const tg_buf *in, size_t piece, unsigned seed,
                              tg_buf *out)
{
    json_t *chat = NULL;
    tg_msg_bridge *b = NULL;
    tg_error err;
    assert_int_equal(tg_messages_to_chat(request, &chat, &b, &err), 0);
    json_decref(chat);
    size_t off = 0;
    while (off < in->len) {
        size_t n = piece ? piece : 1 + (size_t)(rand_r(&seed) % 40);
        if (n > in->len - off)
            n = in->len - off;
        tg_messages_stream(b, in->data + off, n, out);
        off += n;
    }
    tg_messages_stream_end(b, out);
    tg_msg_bridge_free(b);
}

static const char *delta_kind_for(const char *block)
{
    return !strcmp(block, "text")       ? "text_delta"
           : !strcmp(block, "thinking") ? "thinking_delta"
                                        : "input_json_delta";
}

/* Checks the invariants and builds the Message the events describe, as the
 * Anthropic SDK's accumulator does (tool_use input parsed from its
 * partial_json); an error stream gives {"error": ...}. New reference. */
static json_t *check_and_build(const json_t *evs)
{
    size_t n = json_array_size(evs);
    assert_true(n >= 2);
    assert_string_equal(json_string_value(json_array_get(json_array_get(evs, 0), 0)),
                        "message_start");
    json_t *msg = json_deep_copy(json_object_get(json_array_get(json_array_get(evs, 0), 1), "message"));
    assert_non_null(msg);
    assert_int_equal(json_array_size(json_object_get(msg, "content")), 0);
    json_t *content = json_object_get(msg, "content");
    long open = -1;
    bool delta_seen = false;
    tg_buf json = {0};
    for (size_t i = 1; i < n; i++) {
        const char *type = json_string_value(json_array_get(json_array_get(evs, i), 0));
        const json_t *d = json_array_get(json_array_get(evs, i), 1);
        const json_t *ix = json_object_get(d, "index");
        if (!strcmp(type, "error")) {
            assert_int_equal(i, n - 1);
            assert_non_null(json_string_value(json_object_get(json_object_get(d, "error"), "message")));
            json_object_set(msg, "error", json_object_get(d, "error"));
            break;
        }
        assert_false(delta_seen && strcmp(type, "message_stop"));
        if (!strcmp(type, "content_block_start")) {
            assert_int_equal(open, -1);
            assert_int_equal(json_integer_value(ix), (json_int_t)json_array_size(content));
            json_array_append_new(content, json_deep_copy(json_object_get(d, "content_block")));
            open = (long)json_integer_value(ix);
            tg_buf_reset(&json);
        } else if (!strcmp(type, "content_block_delta")) {
            assert_true(open >= 0);
            assert_int_equal(json_integer_value(ix), open);
            json_t *blk = json_array_get(content, (size_t)open);
            const json_t *delta = json_object_get(d, "delta");
            const char *kind = json_string_value(json_object_get(delta, "type"));
            assert_string_equal(kind, delta_kind_for(json_string_value(json_object_get(blk, "type"))));
            const char *field = !strcmp(kind, "text_delta")       ? "text"
                                : !strcmp(kind, "thinking_delta") ? "thinking"
                                                                  : "partial_json";
            const char *piece = json_string_value(json_object_get(delta, field));
            assert_non_null(piece);
            if (!strcmp(field, "partial_json")) {
                tg_buf_puts(&json, piece);
            } else {
                tg_buf t = {0};
                tg_buf_puts(&t, json_string_value(json_object_get(blk, field)));
                tg_buf_puts(&t, piece);
                json_object_set_new(blk, field, json_stringn(t.data, t.len));
                tg_buf_free(&t);
            }
        } else if (!strcmp(type, "content_block_stop")) {
            assert_int_equal(json_integer_value(ix), open);
            json_t *blk = json_array_get(content, (size_t)open);
            if (!strcmp(json_string_value(json_object_get(blk, "type")), "tool_use")) {
                /* an object, or the model's text as a string (never made up) */
                json_t *input = json.len ? tg_json_load(json.data, json.len, JSON_DECODE_ANY, NULL)
                                         : json_object();
                if (!json_is_object(input) && !json_is_string(input))
                    fprintf(stderr, "# tool_use input is not a JSON object or string: %.*s\n",
                            (int)json.len, json.data);
                assert_true(json_is_object(input) || json_is_string(input));
                json_object_set_new(blk, "input", input);
            }
            open = -1;
        } else if (!strcmp(type, "message_delta")) {
            assert_int_equal(open, -1);
            const json_t *delta = json_object_get(d, "delta");
            assert_non_null(json_string_value(json_object_get(delta, "stop_reason")));
            json_object_set(msg, "stop_reason", json_object_get(delta, "stop_reason"));
            json_object_set(msg, "stop_sequence", json_object_get(delta, "stop_sequence"));
            json_object_update(json_object_get(msg, "usage"), json_object_get(d, "usage"));
            delta_seen = true;
        } else if (!strcmp(type, "message_stop")) {
            assert_true(delta_seen);
            assert_int_equal(i, n - 1);
        } else {
            fprintf(stderr, "# unknown event %s\n", type);
            fail();
        }
    }
    tg_buf_free(&json);
    return msg;
}

static void run_stream(const json_t *v)
{
    const json_t *request = json_object_get(v, "request");
    tg_buf in = {0}, whole = {0};
    chat_sse(json_object_get(v, "sse"), &in);
    convert_in_pieces(request, &in, in.len, 0, &whole);
    for (unsigned seed = 0; seed < 12; seed++) {
        tg_buf split = {0};
        convert_in_pieces(request, &in, seed == 0 ? 1 : 0, seed, &split);
        if (split.len != whole.len || memcmp(split.data, whole.data, whole.len))
            fprintf(stderr, "# split %u gives other bytes\n", seed);
        assert_true(split.len == whole.len && !memcmp(split.data, whole.data, whole.len));
        tg_buf_free(&split);
    }
    check_comments(v, &whole);
    json_t *evs = parse_events(&whole);
    json_t *msg = check_and_build(evs);
    const json_t *want = json_object_get(v, "events");
    if (want) {
        json_t *types = json_array();
        size_t i;
        const json_t *ev;
        json_array_foreach(evs, i, ev) json_array_append(types, json_array_get(ev, 0));
        bool ok = json_array_size(want) == json_array_size(evs);
        for (i = 0; ok && i < json_array_size(want); i++) {
            const json_t *w = json_array_get(want, i), *g = json_array_get(evs, i);
            const json_t *wt = json_is_array(w) ? json_array_get(w, 0) : w;
            ok = json_equal(wt, json_array_get(g, 0)) &&
                 (!json_is_array(w) || subset(json_array_get(w, 1), json_array_get(g, 1)));
        }
        if (!ok) {
            char *all = json_dumps(evs, JSON_COMPACT);
            fprintf(stderr, "# events: %s\n", all);
            free(all);
        }
        expect(ok, want, types, "events (got: their types)");
        json_decref(types);
    }
    const json_t *final = json_object_get(v, "final");
    if (final)
        expect(subset(final, msg), final, msg, "final message");
    json_decref(msg);
    json_decref(evs);
    tg_buf_free(&in);
    tg_buf_free(&whole);
}

static void run_error(const json_t *v)
{
    const json_t *e = json_object_get(v, "error");
    const json_t *body = json_object_get(e, "body");
    char *text = json_is_string(body) ? strdup(json_string_value(body)) : tg_json_dumps(body);
    size_t len = 0;
    char *got = tg_messages_error_body((int)json_integer_value(json_object_get(e, "status")), text,
                                       strlen(text), &len);
    const json_t *want = json_object_get(v, "anthropic");
    if (json_is_null(want)) {
        assert_null(got);
    } else {
        assert_non_null(got);
        json_t *g = tg_json_load(got, len, 0, NULL);
        expect(json_equal(want, g), want, g, "anthropic error");
        json_decref(g);
    }
    free(got);
    free(text);
}

static void test_vector(void **state)
{
    json_t *v = load_vector(vec_dir, *state);
    bool any = false;
    if (json_object_get(v, "request")) {
        tg_msg_bridge *b = NULL;
        run_request(v, &b);
        any = json_object_get(v, "chat") || json_object_get(v, "error_param");
        const json_t *answer = json_object_get(v, "answer");
        if (answer) {
            json_t *m = tg_messages_answer(b, answer);
            const json_t *want = json_object_get(v, "message");
            expect(subset(want, m), want, m, "message");
            json_decref(m);
            any = true;
        }
        tg_msg_bridge_free(b);
        if (json_object_get(v, "sse")) {
            run_stream(v);
            any = true;
        }
    }
    if (json_object_get(v, "error")) {
        run_error(v);
        any = true;
    }
    assert_true(any);
    json_decref(v);
}

/* What a call's arguments must become: the object they hold, {} for none,
 * else their text as a string. */
static json_t *expected_input(const char *a)
{
    if (!a || !*a)
        return json_object();
    json_t *v = tg_json_load(a, strlen(a), 0, NULL);
    if (json_is_object(v))
        return v;
    json_decref(v);
    return json_string(a);
}

/* Every repaired chat stream of test/vectors/repair (the repair
 * fixtures' expected_sse) through the bridge: the Messages invariants
 * hold, and the message says what the chat stream said: the same text,
 * the same calls with the same names and input, in the same order. */
static void test_repair_fixture(void **state)
{
    json_t *fx = load_vector(vec_dir, *state);
    if (chat_agent_only(fx)) {  /* no bridge reads such an answer */
        json_decref(fx);
        return;
    }
    const json_t *payloads = json_object_get(fx, "expected_sse");
    assert_true(json_is_array(payloads));
    json_t *request = json_pack("{s:s, s:[{s:s, s:s}], s:i, s:b}", "model", "m", "messages",
                                "role", "user", "content", "x", "max_tokens", 100, "stream", 1);
    tg_buf in = {0}, out = {0}, text = {0};
    chat_sse(payloads, &in);
    convert_in_pieces(request, &in, in.len, 0, &out);
    json_t *evs = parse_events(&out);
    json_t *msg = check_and_build(evs);
    /* an error only where the chat stream failed: else the comparison
     * below would be skipped for a stream that never had to */
    bool failed = json_object_get(msg, "error") != NULL;
    assert_int_equal(failed, chat_stream_failed(payloads));
    if (!failed) {
        json_t *calls = json_array();
        assemble_chat(payloads, &text, calls);
        /* a Message's tool_use carries the arguments parsed, as input */
        size_t ci;
        json_t *tc;
        json_array_foreach(calls, ci, tc) {
            const char *a = json_string_value(json_object_get(tc, "arguments"));
            json_object_set_new(tc, "input", expected_input(a));
            json_object_del(tc, "arguments");
        }
        tg_buf got_text = {0};
        json_t *got_calls = json_array();
        size_t i;
        const json_t *blk;
        json_array_foreach(json_object_get(msg, "content"), i, blk) {
            const char *type = json_string_value(json_object_get(blk, "type"));
            if (!strcmp(type, "tool_use"))
                json_array_append_new(got_calls, json_pack("{s:O, s:O}", "name", json_object_get(blk, "name"),
                                                           "input", json_object_get(blk, "input")));
            else if (!strcmp(type, "text"))
                tg_buf_puts(&got_text, json_string_value(json_object_get(blk, "text")));
        }
        json_t *want_text = json_stringn(text.data ? text.data : "", text.len);
        json_t *have_text = json_stringn(got_text.data ? got_text.data : "", got_text.len);
        expect(json_equal(want_text, have_text), want_text, have_text, "text");
        expect(json_equal(calls, got_calls), calls, got_calls, "calls");
        const char *why = json_string_value(json_object_get(msg, "stop_reason"));
        if (json_array_size(calls) && strcmp(why, "max_tokens"))
            assert_string_equal(why, "tool_use");
        json_decref(want_text);
        json_decref(have_text);
        json_decref(calls);
        json_decref(got_calls);
        tg_buf_free(&got_text);
    }
    json_decref(msg);
    json_decref(evs);
    json_decref(request);
    json_decref(fx);
    tg_buf_free(&in);
    tg_buf_free(&out);
    tg_buf_free(&text);
}

/* Every repaired whole answer of the repair fixtures ("expected") as a
 * Message: its text and its calls (id, name, input), in order, as the chat
 * answer has them, and the stop_reason its finish_reason means. */
static void test_repair_answer(void **state)
{
    json_t *fx = load_vector(vec_dir, *state);
    if (chat_agent_only(fx)) {  /* no bridge reads such an answer */
        json_decref(fx);
        return;
    }
    const json_t *answer = json_object_get(fx, "expected");
    assert_true(json_is_object(answer));
    json_t *request = json_pack("{s:s, s:[{s:s, s:s}], s:i}", "model", "m", "messages", "role",
                                "user", "content", "x", "max_tokens", 100);
    json_t *chat = NULL;
    tg_msg_bridge *b = NULL;
    tg_error err;
    assert_int_equal(tg_messages_to_chat(request, &chat, &b, &err), 0);
    json_t *m = tg_messages_answer(b, answer);
    const json_t *choice = json_array_get(json_object_get(answer, "choices"), 0);
    const json_t *msg = json_object_get(choice, "message");
    json_t *want = json_array(), *got = json_array();
    size_t i;
    const json_t *tc, *blk;
    json_array_foreach(json_object_get(msg, "tool_calls"), i, tc) {
        const json_t *fn = json_object_get(tc, "function");
        json_t *input = expected_input(json_string_value(json_object_get(fn, "arguments")));
        json_array_append_new(want, json_pack("{s:O?, s:O?, s:o}", "id", json_object_get(tc, "id"),
                                              "name", json_object_get(fn, "name"), "input", input));
    }
    tg_buf text = {0};
    json_array_foreach(json_object_get(m, "content"), i, blk) {
        const char *type = json_string_value(json_object_get(blk, "type"));
        if (!strcmp(type, "tool_use"))
            json_array_append_new(got, json_pack("{s:O, s:O, s:O}", "id", json_object_get(blk, "id"),
                                                 "name", json_object_get(blk, "name"), "input",
                                                 json_object_get(blk, "input")));
        else if (!strcmp(type, "text"))
            tg_buf_puts(&text, json_string_value(json_object_get(blk, "text")));
    }
    expect(json_equal(want, got), want, got, "calls");
    const json_t *content = json_object_get(msg, "content");
    if (json_is_string(content)) {
        json_t *have = json_stringn(text.data ? text.data : "", text.len);
        expect(json_equal(content, have), content, have, "text");
        json_decref(have);
    }
    const char *finish = json_string_value(json_object_get(choice, "finish_reason"));
    const char *why = json_string_value(json_object_get(m, "stop_reason"));
    assert_string_equal(why, finish && !strcmp(finish, "length")           ? "max_tokens"
                             : finish && !strcmp(finish, "content_filter") ? "refusal"
                             : json_array_size(want)                       ? "tool_use"
                                                                           : "end_turn");
    assert_string_equal(json_string_value(json_object_get(m, "type")), "message");
    assert_true(json_is_integer(json_object_get(json_object_get(m, "usage"), "input_tokens")));
    tg_buf_free(&text);
    json_decref(want);
    json_decref(got);
    json_decref(m);
    json_decref(chat);
    tg_msg_bridge_free(b);
    json_decref(request);
    json_decref(fx);
}

/* A PDF in a conversation's history is read once per worker: the second
 * turn's conversion takes its text from the cache, the same bytes. */
static void test_pdf_read_once(void **state)
{
    (void)state;
    char path[1200];
    snprintf(path, sizeof path, "%s/test/vectors/messages_api/M53-tool-result-pdf-as-text.json",
             getenv("TG_ROOT") ? getenv("TG_ROOT") : ".");
    json_t *v = json_load_file(path, 0, NULL);
    assert_non_null(v);
    tg_cache *c = tg_cache_new(16, 1 << 20);
    tg_bridge_opts o = {.cache = c};
    char *text[2];
    for (int turn = 0; turn < 2; turn++) {
        json_t *chat = NULL;
        tg_msg_bridge *b = NULL;
        tg_error err;
        assert_int_equal(tg_messages_to_chat_opts(json_object_get(v, "request"), &o, &chat, &b, &err), 0);
        text[turn] = json_dumps(chat, JSON_COMPACT | JSON_SORT_KEYS);
        assert_int_equal(tg_cache_entries(c), 1);
        json_decref(chat);
        tg_msg_bridge_free(b);
    }
    assert_string_equal(text[0], text[1]);
    assert_non_null(strstr(text[0], "Quarterly report"));
    free(text[0]);
    free(text[1]);
    tg_cache_free(c);
    json_decref(v);
}

/* count_tokens' estimate: 3.5 characters a token and 4 a message; a
 * deferred tool is not in the prompt, an image is 1,600. */
static void test_count_estimate(void **state)
{
    (void)state;
    json_t *body = json_pack("{s:s, s:[{s:s, s:s}]}", "model", "m", "messages", "role", "user",
                             "content", "");
    char text[701];
    memset(text, 'x', 700);
    text[700] = '\0';
    json_object_set_new(json_array_get(json_object_get(body, "messages"), 0), "content",
                        json_string(text));
    assert_int_equal(tg_messages_count_estimate(body), 204);
    json_object_set_new(body, "tools", json_pack("[{s:s, s:b, s:{s:s}}]", "name", "deferred",
                                                 "defer_loading", 1, "input_schema", "type",
                                                 "object"));
    assert_int_equal(tg_messages_count_estimate(body), 204);
    json_array_append_new(json_object_get(body, "tools"),
                          json_pack("{s:s, s:{s:s}}", "name", "t", "input_schema", "type", "object"));
    assert_true(tg_messages_count_estimate(body) > 204);
    json_object_del(body, "tools");
    json_array_append_new(json_object_get(body, "messages"),
                          json_pack("{s:s, s:[{s:s, s:{s:s, s:s, s:s}}]}", "role", "user",
                                    "content", "type", "image", "source", "type", "base64",
                                    "media_type", "image/png", "data", "iVBORw0KGgo="));
    assert_int_equal(tg_messages_count_estimate(body), 204 + 4 + 1600);
    json_decref(body);
}

int main(void)
{
    const char *root = getenv("TG_ROOT");
    snprintf(vec_dir, sizeof vec_dir, "%s/test/vectors/messages_api", root ? root : ".");
    int rc = run_vector_files("messages_api", vec_dir, test_vector);
    snprintf(vec_dir, sizeof vec_dir, "%s/test/vectors/repair", root ? root : ".");
    const struct CMUnitTest once[] = {cmocka_unit_test(test_pdf_read_once),
                                      cmocka_unit_test(test_count_estimate)};
    rc |= cmocka_run_group_tests_name("messages_api pdf cache", once, NULL, NULL);
    rc |= run_vector_files_with("repaired streams through the Messages bridge", vec_dir,
                                test_repair_fixture, "\"expected_sse\"");
    return rc | run_vector_files_with("repaired answers through the Messages bridge", vec_dir,
                                      test_repair_answer, "\"expected\"");
}
