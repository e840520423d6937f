/* test_responses_api.c -- the Responses API bridge, driven by the vectors
 * in test/vectors/responses_api/ (one cmocka test per file).
 *
 * A vector is a JSON object with "request" (a /v1/responses body), an
 * optional "store" ({id: item}, what answers its item_references), and any of:
 *   chat                 the chat body it must become (exact)
 *   error_param          it must be refused: 400 naming this field
 *   answer + response    a chat.completion and the Response it must become
 *   sse + events [+ final]
 *                        chat stream payloads (JSON values or "[DONE]") and
 *                        the Responses events they must become: a list of
 *                        [type, fields] pairs, fields matched as a subset;
 *                        final is matched against the last event's response
 * Expected objects match as subsets (keys not named are not checked),
 * arrays element by element with equal lengths; "<any>" matches anything.
 * Every stream is also replayed byte by byte and in random splits, must give
 * the same bytes, and must keep the Responses invariants: sequence numbers
 * 0, 1, 2..., every item event refers to an item announced before and not
 * yet done, and the final response's output is the items as they were done.
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
#include "bridge/responses_api.h"

static char vec_dir[1024];

/* The vector's "store" ({id: item}) answers item_reference. */
static json_t *vector_store(void *store, const char *id, tg_error *err)
{
    json_t *item = json_object_get(store, id);
    return item ? json_deep_copy(item) : NULL;
}

static void run_request(const json_t *v, tg_resp_bridge **bridge)
{
    json_t *chat = NULL;
    tg_error err;
    tg_bridge_opts o = vector_opts(v);
    int rc = tg_responses_to_chat_opts(json_object_get(v, "request"), &o, vector_store,
                                       json_object_get(v, "store"), &chat, bridge, &err);
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
        return;
    }
    if (rc)
        fprintf(stderr, "# refused: %s\n", err.message);
    assert_int_equal(rc, 0);
    const json_t *want = json_object_get(v, "chat");
    if (want)
        expect(json_equal(want, chat), want, chat, "chat body");
    expect_dropped(v, tg_resp_bridge_dropped_peek(*bridge));
    json_decref(chat);
}

static void convert_in_pieces(const json_t *request, const tg_buf *in, size_t piece, unsigned seed,
                              tg_buf *out)
{
    json_t *chat = NULL;
    tg_resp_bridge *b = NULL;
    tg_error err;
    assert_int_equal(tg_responses_to_chat(request, &chat, &b, &err), 0);
    json_decref(chat);
    size_t off = 0;
    while (off < in->len) {
        size_t n = piece ? piece : 1 + (size_t)(rand_r(&seed) % 40);
        if (n > in->len - off)
            n = in->len - off;
        tg_responses_stream(b, in->data + off, n, out);
        off += n;
    }
    tg_responses_stream_end(b, out);
    tg_resp_bridge_free(b);
}

static void check_invariants(const json_t *evs)
{
    json_t *open = json_object(), *done = json_array();
    size_t i;
    const json_t *ev;
    json_array_foreach(evs, i, ev) {
        const char *type = json_string_value(json_array_get(ev, 0));
        const json_t *d = json_array_get(ev, 1);
        assert_int_equal(json_integer_value(json_object_get(d, "sequence_number")), (json_int_t)i);
        const json_t *item = json_object_get(d, "item");
        const char *id = json_string_value(json_object_get(item ? item : d, item ? "id" : "item_id"));
        if (!strcmp(type, "response.output_item.added")) {
            assert_null(json_object_get(open, id));
            assert_int_equal(json_integer_value(json_object_get(d, "output_index")),
                             (json_int_t)(json_array_size(done) + json_object_size(open)));
            json_object_set(open, id, json_object_get(d, "output_index"));
        } else if (id) {
            if (!json_object_get(open, id))
                fprintf(stderr, "# %s refers to item %s, which is not open\n", type, id);
            assert_non_null(json_object_get(open, id));
            if (!strcmp(type, "response.output_item.done")) {
                json_array_append(done, (json_t *)item);
                json_object_del(open, id);
            }
        }
    }
    assert_int_equal(json_object_size(open), 0);
    const json_t *last = json_array_get(json_array_get(evs, json_array_size(evs) - 1), 1);
    const char *lt = json_string_value(json_object_get(last, "type"));
    assert_true(!strcmp(lt, "response.completed") || !strcmp(lt, "response.incomplete") ||
                !strcmp(lt, "response.failed"));
    const json_t *out = json_object_get(json_object_get(last, "response"), "output");
    expect(json_equal(done, out), done, out, "final output against the items done");
    json_decref(open);
    json_decref(done);
}

/* GET /v1/responses/{id}?stream=true: a Response (borrowed) replayed
 * keeps the stream's invariants, ends with the Response itself, its text
 * deltas make its text, and starting_after leaves out the events up to it. */
static void check_replay(const json_t *resp)
{
    tg_buf out = {0}, tail = {0};
    tg_responses_replay(resp, -1, &out);
    json_t *evs = parse_events(&out);
    check_invariants(evs);
    const json_t *last = json_array_get(json_array_get(evs, json_array_size(evs) - 1), 1);
    expect(json_equal(json_object_get(last, "response"), resp), resp, last, "replayed Response");
    tg_buf text = {0}, want = {0};
    size_t i;
    const json_t *ev, *item;
    json_array_foreach(evs, i, ev) {
        const json_t *d = json_array_get(ev, 1);
        if (!strcmp(json_string_value(json_array_get(ev, 0)), "response.output_text.delta"))
            tg_buf_puts(&text, json_string_value(json_object_get(d, "delta")));
    }
    json_array_foreach(json_object_get(resp, "output"), i, item) {
        size_t j;
        const json_t *part;
        json_array_foreach(json_object_get(item, "content"), j, part) {
            if (!strcmp(json_string_value(json_object_get(part, "type")), "output_text"))
                tg_buf_puts(&want, json_string_value(json_object_get(part, "text")));
        }
    }
    assert_int_equal(text.len, want.len);
    assert_true(!text.len || !memcmp(text.data, want.data, text.len));
    tg_responses_replay(resp, 1, &tail);
    json_t *tevs = parse_events(&tail);
    assert_int_equal(json_array_size(tevs) + 2, json_array_size(evs));
    json_decref(tevs);
    json_decref(evs);
    tg_buf_free(&out);
    tg_buf_free(&tail);
    tg_buf_free(&text);
    tg_buf_free(&want);
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
        if (split.len != whole.len || memcmp(split.data, whole.data, whole.len)) {
            /* created_at is the clock's when no chunk names a time, and a
             * second may have passed: once more, both of them */
            tg_buf_reset(&whole);
            tg_buf_reset(&split);
            convert_in_pieces(request, &in, in.len, 0, &whole);
            convert_in_pieces(request, &in, seed == 0 ? 1 : 0, seed, &split);
        }
        /* the response ids and sequence are the same whatever the split */
        if (split.len != whole.len || memcmp(split.data, whole.data, whole.len))
            fprintf(stderr, "# split %u gives other bytes\n", seed);
        assert_true(split.len == whole.len && !memcmp(split.data, whole.data, whole.len));
        tg_buf_free(&split);
    }
    check_comments(v, &whole);
    json_t *evs = parse_events(&whole);
    check_invariants(evs);
    const json_t *want = json_object_get(v, "events");
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
    expect(ok, want, types, "events (got: their types)");
    json_decref(types);
    const json_t *final = json_object_get(v, "final");
    if (final) {
        const json_t *r = json_object_get(json_array_get(json_array_get(evs, json_array_size(evs) - 1), 1),
                                          "response");
        expect(subset(final, r), final, r, "final response");
    }
    check_replay(json_object_get(json_array_get(json_array_get(evs, json_array_size(evs) - 1), 1),
                                 "response"));
    json_decref(evs);
    tg_buf_free(&in);
    tg_buf_free(&whole);
}

static void test_vector(void **state)
{
    json_t *v = load_vector(vec_dir, *state);
    tg_resp_bridge *b = NULL;
    run_request(v, &b);
    bool any = json_object_get(v, "chat") || json_object_get(v, "error_param");
    const json_t *answer = json_object_get(v, "answer");
    if (answer) {
        json_t *r = tg_responses_answer(b, answer);
        const json_t *want = json_object_get(v, "response");
        expect(subset(want, r), want, r, "response");
        json_t *rec = tg_responses_record(b);  /* what GET /v1/responses/{id} reads */
        json_t *again = tg_responses_stored(rec, false);
        if (rec)
            expect(json_equal(again, r), r, again, "stored Response");
        check_replay(r);
        json_decref(again);
        json_decref(rec);
        json_decref(r);
        any = true;
    }
    tg_resp_bridge_free(b);
    if (json_object_get(v, "sse")) {
        run_stream(v);
        any = true;
    }
    assert_true(any);
    json_decref(v);
}

/* Every repaired chat stream of test/vectors/repair (the repair
 * fixtures' expected_sse) through the bridge: the Responses invariants
 * hold, and the Response says what the chat stream said: the same text,
 * the same calls with the same names and arguments, in the same order. */
static void test_repair_fixture(void **state)
{
    json_t *fx = load_vector(vec_dir, *state);
    if (chat_agent_only(fx)) {  /* no bridge reads such an answer */
        json_decref(fx);
        return;
    }
    const json_t *payloads = json_object_get(fx, "expected_sse");
    assert_true(json_is_array(payloads));
    json_t *request = json_pack("{s:s, s:s, s:b}", "model", "m", "input", "x", "stream", 1);
    tg_buf in = {0}, out = {0}, text = {0};
    chat_sse(payloads, &in);
    convert_in_pieces(request, &in, in.len, 0, &out);
    json_t *evs = parse_events(&out);
    check_invariants(evs);
    const json_t *last = json_array_get(json_array_get(evs, json_array_size(evs) - 1), 1);
    const json_t *resp = json_object_get(last, "response");
    /* a failed Response only where the chat stream failed: else the
     * comparison below would be skipped for a stream that never had to */
    bool failed = !strcmp(json_string_value(json_object_get(last, "type")), "response.failed");
    assert_int_equal(failed, chat_stream_failed(payloads));
    if (!failed) {
        json_t *calls = json_array();
        assemble_chat(payloads, &text, calls);
        tg_buf got_text = {0};
        json_t *got_calls = json_array();
        size_t i, j;
        const json_t *item, *part;
        json_array_foreach(json_object_get(resp, "output"), i, item) {
            const char *type = json_string_value(json_object_get(item, "type"));
            if (!strcmp(type, "function_call"))
                json_array_append_new(got_calls, json_pack("{s:O, s:O}", "name", json_object_get(item, "name"),
                                                           "arguments", json_object_get(item, "arguments")));
            json_array_foreach(json_object_get(item, "content"), j, part) {
                const char *t = json_string_value(json_object_get(part, "text"));
                if (t)
                    tg_buf_puts(&got_text, t);
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
    json_decref(evs);
    json_decref(request);
    json_decref(fx);
    tg_buf_free(&in);
    tg_buf_free(&out);
    tg_buf_free(&text);
}

/* Every repaired whole answer of the repair fixtures ("expected") as a
 * Response: its message text and its calls, in order, as the chat answer
 * has them, and the status its finish_reason means. */
static void test_repair_answer(void **state)
{
    json_t *fx = load_vector(vec_dir, *state);
    if (chat_agent_only(fx)) {  /* no bridge reads such an answer */
        json_decref(fx);
        return;
    }
    const json_t *answer = json_object_get(fx, "expected");
    assert_true(json_is_object(answer));
    json_t *request = json_pack("{s:s, s:s}", "model", "m", "input", "x");
    json_t *chat = NULL;
    tg_resp_bridge *b = NULL;
    tg_error err;
    assert_int_equal(tg_responses_to_chat(request, &chat, &b, &err), 0);
    json_t *r = tg_responses_answer(b, answer);
    const json_t *choice = json_array_get(json_object_get(answer, "choices"), 0);
    const json_t *msg = json_object_get(choice, "message");
    json_t *want = json_array(), *got = json_array();
    size_t i, j;
    const json_t *tc, *item, *part;
    json_array_foreach(json_object_get(msg, "tool_calls"), i, tc) {
        const json_t *fn = json_object_get(tc, "function");
        json_array_append_new(want, json_pack("{s:O?, s:O?, s:O?}", "call_id", json_object_get(tc, "id"),
                                              "name", json_object_get(fn, "name"), "arguments",
                                              json_object_get(fn, "arguments")));
    }
    tg_buf text = {0};
    json_array_foreach(json_object_get(r, "output"), i, item) {
        if (!strcmp(json_string_value(json_object_get(item, "type")), "function_call"))
            json_array_append_new(got, json_pack("{s:O, s:O, s:O}", "call_id", json_object_get(item, "call_id"),
                                                 "name", json_object_get(item, "name"), "arguments",
                                                 json_object_get(item, "arguments")));
        json_array_foreach(json_object_get(item, "content"), j, part) {
            const char *t = json_string_value(json_object_get(part, "text"));
            if (t)
                tg_buf_puts(&text, t);
        }
    }
    expect(json_equal(want, got), want, got, "calls");
    const json_t *content = json_object_get(msg, "content");
    if (json_is_string(content)) {
        json_t *have = json_stringn(text.data ? text.data : "", text.len);
        expect(json_equal(content, have), content, have, "text");
        json_decref(have);
    }
    const char *finish = json_string_value(json_object_get(choice, "finish_reason"));
    const char *status = json_string_value(json_object_get(r, "status"));
    /* cut or filtered: OpenAI's incomplete_details reasons max_output_tokens
     * and content_filter */
    bool incomplete = finish && (!strcmp(finish, "length") || !strcmp(finish, "content_filter"));
    assert_string_equal(status, incomplete ? "incomplete" : "completed");
    tg_buf_free(&text);
    json_decref(want);
    json_decref(got);
    json_decref(r);
    json_decref(chat);
    tg_resp_bridge_free(b);
    json_decref(request);
    json_decref(fx);
}

/* A store that cannot answer (store.h: DOWN) fills the error itself: that
 * error is the answer, not the 400 of an item toolgate does not hold. */
static json_t *store_down(void *ud, const char *id, tg_error *err)
{
    tg_error_set(err, 503, "api_error", "store_unavailable", "input", "store away");
    return NULL;
}

static void test_store_down(void **state)
{
    json_t *req = json_pack("{s:s, s:[{s:s, s:s}]}", "model", "m", "input", "type",
                            "item_reference", "id", "msg_1");
    json_t *chat = NULL;
    tg_resp_bridge *b = NULL;
    tg_error err;
    assert_int_equal(tg_responses_to_chat_with(req, store_down, NULL, &chat, &b, &err), -1);
    assert_int_equal(err.status, 503);
    assert_string_equal(err.code, "store_unavailable");
    assert_null(b);
    json_t *empty = json_object();
    assert_int_equal(tg_responses_to_chat_with(req, vector_store, empty, &chat, &b, &err), -1);
    assert_int_equal(err.status, 400);  /* a store that answers "not held" */
    json_decref(empty);
    json_decref(req);
}

/* The record a later previous_response_id needs: kept for a chaining
 * client, not for store: false nor for one that sends its whole history. */
static json_t *record_after(const char *request)
{
    json_t *req = json_loads(request, 0, NULL);
    json_t *chat = NULL;
    tg_resp_bridge *b = NULL;
    tg_error err;
    assert_int_equal(tg_responses_to_chat(req, &chat, &b, &err), 0);
    json_t *completion = json_loads("{\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,"
                                    "\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},"
                                    "\"finish_reason\":\"stop\"}]}", 0, NULL);
    tg_resp_bridge_name(b, "u1");
    json_t *resp = tg_responses_answer(b, completion);
    json_t *rec = tg_responses_record(b);
    if (rec) {
        assert_true(json_equal(json_object_get(rec, "id"), json_object_get(resp, "id")));
        assert_true(json_equal(json_object_get(rec, "output"), json_object_get(resp, "output")));
        assert_true(json_equal(json_object_get(rec, "previous_response_id"),
                               json_object_get(resp, "previous_response_id")));
        json_t *again = tg_responses_stored(rec, false);  /* GET /v1/responses/{id} */
        expect(json_equal(again, resp), resp, again, "stored Response");
        json_decref(again);
    }
    json_decref(resp);
    json_decref(completion);
    json_decref(chat);
    tg_resp_bridge_free(b);
    json_decref(req);
    return rec;
}

static void test_record(void **state)
{
    json_t *rec = record_after("{\"model\":\"m\",\"input\":\"hi\"}");
    assert_non_null(rec);
    assert_string_equal(json_string_value(json_object_get(rec, "type")), TG_RESP_RECORD);
    assert_int_equal(json_array_size(json_object_get(rec, "input")), 1);
    json_decref(rec);
    assert_null(record_after("{\"model\":\"m\",\"input\":\"hi\",\"store\":false}"));
    /* a whole history (an assistant turn in the input): not a chain, so
     * no input kept; the Response is, for GET /v1/responses/{id} */
    rec = record_after("{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":\"a\"},"
                       "{\"role\":\"assistant\",\"content\":\"b\"},"
                       "{\"role\":\"user\",\"content\":\"c\"}]}");
    assert_non_null(rec);
    assert_null(json_object_get(rec, "input"));
    json_t *resp = tg_responses_stored(rec, false);
    assert_non_null(resp);
    assert_true(json_is_true(json_object_get(resp, "store")));
    json_decref(resp);
    json_decref(rec);
    /* a tombstone is no Response */
    json_t *t = tg_responses_tombstone("resp_x");
    assert_null(tg_responses_stored(t, false));
    json_decref(t);
}

/* POST /v1/responses/compact: the conversation and a request for its
 * summary go to chat; the answer is its user messages and a compaction
 * item, which a later request turns back into the summary. */
static void test_compact(void **state)
{
    json_t *body = json_loads("{\"model\":\"m\",\"image\":{\"context_compression\":\"auto\"},"
                              "\"input\":[{\"role\":\"user\",\"content\":\"a\"},"
                              "{\"role\":\"assistant\",\"content\":\"b\"},"
                              "{\"role\":\"user\",\"content\":[{\"type\":\"input_text\","
                              "\"text\":\"c\"}]}]}", 0, NULL);
    json_t *chat = NULL;
    tg_resp_bridge *b = NULL;
    tg_error err;
    tg_bridge_opts o = {0};
    assert_int_equal(tg_responses_compact_to_chat(body, &o, NULL, NULL, &chat, &b, &err), 0);
    const json_t *msgs = json_object_get(chat, "messages");
    assert_int_equal(json_array_size(msgs), 4);
    const json_t *ask = json_array_get(msgs, 3);
    assert_string_equal(json_string_value(json_object_get(ask, "role")), "user");
    assert_non_null(strstr(json_string_value(json_object_get(ask, "content")), "Summarize"));
    assert_null(json_object_get(chat, "image"));
    char *said = tg_bridge_dropped_text(tg_resp_bridge_dropped_peek(b));
    assert_string_equal(said, "fields image");
    free(said);
    json_t *completion = json_loads("{\"id\":\"c1\",\"created\":7,\"choices\":[{\"index\":0,"
                                    "\"message\":{\"role\":\"assistant\",\"content\":\"S.\"},"
                                    "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,"
                                    "\"completion_tokens\":2}}", 0, NULL);
    json_t *r = tg_responses_compacted(b, completion);
    assert_string_equal(json_string_value(json_object_get(r, "object")), "response.compaction");
    assert_int_equal(json_integer_value(json_object_get(r, "created_at")), 7);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "usage"), "total_tokens")), 11);
    const json_t *out = json_object_get(r, "output");
    assert_int_equal(json_array_size(out), 3);
    const json_t *c = json_array_get(out, 2);
    assert_string_equal(json_string_value(json_object_get(c, "type")), "compaction");
    assert_string_equal(json_string_value(json_object_get(c, "encrypted_content")), "toolgate:S.");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(
                            json_array_get(out, 1), "content"), 0), "text")), "c");
    /* the compacted output, and a new turn, as the next request's input */
    json_t *next = json_pack("{s:s, s:O}", "model", "m", "input", out);
    json_array_append_new(json_object_get(next, "input"),
                          json_pack("{s:s, s:s}", "role", "user", "content", "d"));
    json_t *chat2 = NULL;
    tg_resp_bridge *b2 = NULL;
    assert_int_equal(tg_responses_to_chat(next, &chat2, &b2, &err), 0);
    const json_t *m2 = json_object_get(chat2, "messages");
    assert_int_equal(json_array_size(m2), 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(m2, 2), "content")),
                        "Summary of the conversation so far:\nS.");
    json_decref(chat2);
    tg_resp_bridge_free(b2);
    json_decref(next);
    json_decref(r);
    json_decref(completion);
    json_decref(chat);
    tg_resp_bridge_free(b);
    json_decref(body);
    (void)state;
}

int main(void)
{
    const char *root = getenv("TG_ROOT");
    const struct CMUnitTest store[] = {cmocka_unit_test(test_store_down),
                                       cmocka_unit_test(test_record),
                                       cmocka_unit_test(test_compact)};
    if (cmocka_run_group_tests_name("item_reference lookups", store, NULL, NULL))
        return 1;
    snprintf(vec_dir, sizeof vec_dir, "%s/test/vectors/responses_api", root ? root : ".");
    int rc = run_vector_files("responses_api", vec_dir, test_vector);
    snprintf(vec_dir, sizeof vec_dir, "%s/test/vectors/repair", root ? root : ".");
    rc |= run_vector_files_with("repaired streams through the bridge", vec_dir,
                                test_repair_fixture, "\"expected_sse\"");
    return rc | run_vector_files_with("repaired answers through the bridge", vec_dir,
                                      test_repair_answer, "\"expected\"");
}
