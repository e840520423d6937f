/* test_repair.c -- response repair, driven by the fixtures in
 * test/vectors/repair/ (one cmocka test per file, every file loaded).
 *
 * A fixture is a JSON object:
 *   quirk, dialect, tools, request, text_tool_calls, rules {name: on|off}
 *   response + expected [+ expected_return]          (whole answer)
 *   sse or sse_rounds + expected_sse [+ transport_error]
 *                                                    (stream; sse is a list
 *       of event payloads -- JSON values, "[DONE]", or raw strings prefixed
 *       "raw:" -- or one string of raw SSE bytes)
 *   cases: [[input, expected or null], ...]          (lenient JSON repair)
 *   prefix_cases: [[text, bytes accepted, complete], ...]
 *                                 (json_prefix.c: fed whole and byte by byte)
 *   conf_cases: [[key, value, expected return], ...] (repair.<key> = value)
 *   sse_rounds: several upstream rounds of one stream (lazy discovery; the
 *       fixture's "discovery" mode and "request" go through the request
 *       stages first).
 *   keepalive_ms + keepalives: the stream's keepalive interval, and how many
 *       ": keepalive" comments it must send (every replay alike).
 *   request_stages: true to run "request" through the request stages
 *       (what the response stages learn from it, e.g. response_format).
 *   allow_bad_args: true when a call's arguments are beyond repair.
 * Expected values match with json_equal, except that the string "<any>"
 * matches anything and "<id>" matches a synthesized call_ id.
 * Streams are replayed through the SSE parser whole, one byte at a time and
 * in random splits (several seeds); every replay must give the same events.
 * Every output is also checked against the rules of docs/dialects.md section 9
 * (8: well-formed calls, 9: finish_reason, 10: dense stream indexes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mask.h"
#include "vectors.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proxy/sse.h"
#include "core/jsonfix.h"
#include "core/jsonio.h"
#include "pipeline/pipeline.h"
#include "core/cache.h"
#include "repair/collect.h"
#include "repair/stream_calls.h"
#include "repair/json_prefix.h"
#include "repair/repair_int.h"

static char vec_dir[1024];
static int fuzz_rounds = 40;  /* TG_FUZZ_ROUNDS=n for a longer run */

/* --- matching ------------------------------------------------------------- */

static void expect_match(const json_t *exp, const json_t *got, const char *what)
{
    vector_expect(vector_match(exp, got, false), exp, got, what);
}

/* --- context -------------------------------------------------------------- */

typedef struct env {
    tg_rules_set rules;
    tg_ctx ctx;
} env;

/* One worker cache for all the runs of a fixture, as a worker keeps one
 * for every request: the replays after the first meet what the first left
 * there (repair_schema.c's memo of whether a schema needs repair) and must
 * give the same stream. */
static tg_cache *fixture_cache;

/* A fixture with "legacy_functions": the agent sent functions[], and the
 * answer's first call comes as function_call (rule 9's finish_reason is
 * then "function_call"). */
static bool legacy(const json_t *fx)
{
    return json_is_true(json_object_get(fx, "legacy_functions"));
}

static void env_init(env *e, const json_t *fx)
{
    const char *dn = json_string_value(json_object_get(fx, "dialect"));
    int d = dn ? tg_dialect_from_name(dn) : TG_D_OPENAI;
    assert_true(d >= 0);
    tg_rules_preset((tg_dialect)d, &e->rules);
    e->rules.repair.text_tool_calls = json_is_true(json_object_get(fx, "text_tool_calls"));
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(fx, "rules"), k, v) {
        char msg[256];
        assert_int_equal(tg_repair_rules_set(&e->rules.repair, k, json_string_value(v), msg,
                                             sizeof msg),
                         0);
    }
    const char *disc = json_string_value(json_object_get(fx, "discovery"));
    if (disc)
        e->rules.disc.mode = !strcmp(disc, "on") ? TG_DISC_ON : TG_DISC_AUTO;
    tg_ctx_init(&e->ctx, "test", &e->rules, NULL);
    e->ctx.cache = fixture_cache;
    e->ctx.explain = json_array();
    e->ctx.legacy_functions = legacy(fx);
    if (disc || json_is_true(json_object_get(fx, "request_stages"))) {
        /* the request stages set up tools, discovery state, response_format */
        json_t *body = json_deep_copy(json_object_get(fx, "request"));
        tg_error err;
        assert_int_equal(tg_pipeline_request(body, &e->ctx, &err), 0);
        json_decref(body);
        return;
    }
    json_t *tools = json_object_get(fx, "tools");
    if (json_is_array(tools))
        e->ctx.tools = json_incref(tools);
    e->ctx.request = json_incref(json_object_get(fx, "request"));
}

/* --- invariants (section 9) ------------------------------------------------ */

static bool declared(const json_t *fx, const char *name)
{
    const json_t *tools = json_object_get(fx, "tools");
    if (!json_is_array(tools))
        return true;  /* nothing declared: nothing to check against */
    return tg_tool_peek(tools, name) != NULL;
}

/* A chat custom tool's call given back (sanitize/custom.c, repair/
 * custom_calls.c): named for a custom tool the fixture declares, its input
 * a string, no function left. Returns whether tc is one. */
static bool custom_call(const json_t *fx, const json_t *tc)
{
    const char *type = json_string_value(json_object_get(tc, "type"));
    if (!type || strcmp(type, "custom"))
        return false;
    const json_t *cu = json_object_get(tc, "custom");
    const char *name = json_string_value(json_object_get(cu, "name"));
    assert_true(name && json_is_string(json_object_get(cu, "input")));
    assert_null(json_object_get(tc, "function"));
    bool found = false;
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(fx, "tools"), i, t) {
        const char *n = json_string_value(json_object_get(json_object_get(t, "custom"), "name"));
        found = found || (n && !strcmp(n, name));
    }
    assert_true(found);
    return true;
}

static void check_args(const json_t *fx, const char *args)
{
    assert_non_null(args);
    if (json_is_true(json_object_get(fx, "allow_bad_args")))
        return;
    json_t *a = tg_json_load(args, strlen(args), JSON_ALLOW_NUL, NULL);  /* wide integers too */
    if (!json_is_object(a))
        print_error("arguments do not parse to an object: %s\n", args);
    assert_true(json_is_object(a));
    json_decref(a);
}

static void check_finish(const json_t *fx, const char *f, size_t ncalls)
{
    if (f && (!strcmp(f, "length") || !strcmp(f, "content_filter")))
        return;
    if (ncalls)
        assert_string_equal(f ? f : "(null)", legacy(fx) ? "function_call" : "tool_calls");
    else
        assert_true(!f || (strcmp(f, "tool_calls") && strcmp(f, "function_call")));
}

static void check_message(const json_t *fx, const json_t *resp)
{
    size_t i;
    json_t *ch;
    json_array_foreach(json_object_get(resp, "choices"), i, ch) {
        const json_t *calls = json_object_get(json_object_get(ch, "message"), "tool_calls");
        if (calls)
            assert_true(json_is_array(calls) && json_array_size(calls) > 0);  /* rule 9 */
        json_t *ids = json_object();
        size_t j;
        json_t *c;
        json_array_foreach(calls, j, c) {
            const char *id = json_string_value(json_object_get(c, "id"));
            assert_true(id && *id);
            assert_null(json_object_get(ids, id));
            json_object_set_new(ids, id, json_true());
            if (custom_call(fx, c))
                continue;
            assert_string_equal(json_string_value(json_object_get(c, "type")), "function");
            const json_t *fn = json_object_get(c, "function");
            const char *name = json_string_value(json_object_get(fn, "name"));
            assert_true(name && *name && declared(fx, name));
            check_args(fx, json_string_value(json_object_get(fn, "arguments")));
        }
        json_decref(ids);
        const json_t *fc = json_object_get(json_object_get(ch, "message"), "function_call");
        if (fc) {
            assert_true(legacy(fx));
            const char *name = json_string_value(json_object_get(fc, "name"));
            assert_true(name && *name && declared(fx, name));
            check_args(fx, json_string_value(json_object_get(fc, "arguments")));
        }
        check_finish(fx, json_string_value(json_object_get(ch, "finish_reason")),
                     json_array_size(calls) + (fc != NULL));
    }
}

typedef struct scall_chk {
    char id[256];
    tg_buf args;
} scall_chk;

static void check_stream(const json_t *fx, const json_t *events)
{
    size_t n = json_array_size(events);
    assert_true(n > 0);
    assert_true(json_is_string(json_array_get(events, n - 1)));  /* [DONE] last, once */
    bool error = false;
    scall_chk calls[64];
    size_t ncalls = 0;
    const char *finish = NULL;
    for (size_t i = 0; i + 1 < n; i++) {
        const json_t *ev = json_array_get(events, i);
        assert_true(json_is_object(ev));
        const json_t *err = json_object_get(ev, "error");
        if (err && !json_is_null(err)) {  /* "error": null is no error */
            error = true;
            assert_int_equal(i + 2, n);  /* the error is the last event */
            continue;
        }
        size_t j;
        json_t *ch;
        json_array_foreach(json_object_get(ev, "choices"), j, ch) {
            if (json_integer_value(json_object_get(ch, "index")))
                continue;  /* n > 1: the rules are checked on choice 0 */
            assert_true(finish == NULL);  /* nothing after the finish */
            const json_t *fc = json_object_get(json_object_get(ch, "delta"), "function_call");
            if (fc) {  /* the legacy shape of call 0 */
                assert_true(legacy(fx));
                const char *name = json_string_value(json_object_get(fc, "name"));
                if (name) {  /* its first delta */
                    assert_int_equal(ncalls, 0);
                    assert_true(*name && declared(fx, name));
                    snprintf(calls[0].id, sizeof calls[0].id, "function_call");
                    memset(&calls[0].args, 0, sizeof(tg_buf));
                    ncalls = 1;
                }
                assert_true(ncalls > 0);
                const char *a = json_string_value(json_object_get(fc, "arguments"));
                if (a)
                    tg_buf_puts(&calls[0].args, a);
            }
            size_t k;
            json_t *tc;
            json_array_foreach(json_object_get(json_object_get(ch, "delta"), "tool_calls"), k, tc) {
                const json_t *ix = json_object_get(tc, "index");
                assert_true(json_is_integer(ix));  /* rule 10 */
                size_t at = (size_t)json_integer_value(ix);
                assert_true(at <= ncalls && at < 64);  /* dense, in order */
                const json_t *fn = json_object_get(tc, "function");
                const char *id = json_string_value(json_object_get(tc, "id"));
                const char *name = json_string_value(json_object_get(fn, "name"));
                if (at == ncalls && custom_call(fx, tc)) {  /* whole, in one delta */
                    assert_true(id && *id && strlen(id) < 256);
                    snprintf(calls[ncalls].id, sizeof calls[ncalls].id, "%s", id);
                    memset(&calls[ncalls].args, 0, sizeof(tg_buf));
                    tg_buf_puts(&calls[ncalls].args, "{}");  /* no arguments to check */
                    ncalls++;
                    continue;
                }
                if (at == ncalls) {  /* first delta: id, type, name */
                    assert_true(id && *id && strlen(id) < 256);
                    assert_string_equal(json_string_value(json_object_get(tc, "type")),
                                        "function");
                    assert_true(name && *name && declared(fx, name));
                    for (size_t m = 0; m < ncalls; m++)
                        assert_string_not_equal(calls[m].id, id);
                    snprintf(calls[ncalls].id, sizeof calls[ncalls].id, "%s", id);
                    memset(&calls[ncalls].args, 0, sizeof(tg_buf));
                    ncalls++;
                } else {  /* sent once */
                    assert_true(!id || !strcmp(id, calls[at].id));
                    assert_null(name);
                }
                const char *a = json_string_value(json_object_get(fn, "arguments"));
                if (a)
                    tg_buf_puts(&calls[at].args, a);
            }
            const char *f = json_string_value(json_object_get(ch, "finish_reason"));
            if (f)
                finish = f;
        }
    }
    if (!error) {
        assert_non_null(finish);
        check_finish(fx, finish, ncalls);
    }
    for (size_t m = 0; m < ncalls; m++) {
        /* a stream that ends in an error is no answer: a call relayed live
         * before it may be cut short, and the client raises the error */
        if (!error)
            check_args(fx, calls[m].args.data ? calls[m].args.data : "");
        tg_buf_free(&calls[m].args);
    }
}

/* --- replay ---------------------------------------------------------------- */

typedef struct sink {
    tg_stream *s;
    tg_buf out;
    json_t *events;
} sink;

static void to_stream(void *user, const char *event, const char *data, size_t len)
{
    (void)event;
    sink *k = user;
    tg_stream_event(k->s, data, len, &k->out);
}

static void to_list(void *user, const char *event, const char *data, size_t len)
{
    (void)event;
    sink *k = user;
    json_t *v = (len == 6 && !memcmp(data, "[DONE]", 6)) ? NULL : json_loadb(data, len, 0, NULL);
    json_array_append_new(k->events, v ? v : json_stringn(data, len));
}

static void sse_bytes(const json_t *sse, tg_buf *b)
{
    if (json_is_string(sse)) {
        tg_buf_append(b, json_string_value(sse), json_string_length(sse));
        return;
    }
    size_t i;
    json_t *e;
    json_array_foreach(sse, i, e) {
        const char *s = json_string_value(e);
        if (s && !strncmp(s, "raw:", 4)) {
            tg_buf_puts(b, s + 4);
            continue;
        }
        tg_buf_puts(b, "data: ");
        if (s) {
            tg_buf_puts(b, s);
        } else {
            char *t = json_dumps(e, JSON_COMPACT | JSON_ENCODE_ANY);
            tg_buf_puts(b, t);
            free(t);
        }
        tg_buf_puts(b, "\n\n");
    }
}

#define MAX_ROUNDS 4

/* Upstream rounds (one, or several with discovery) replayed into one
 * stream. split: 0 whole, 1 one byte at a time, else a PRNG seed. */
static json_t *replay(const json_t *fx, const tg_buf *in, size_t rounds, unsigned split,
                      unsigned no_scan, tg_buf *raw)
{
    env e;
    env_init(&e, fx);
    e.ctx.stream = true;
    sink k = {.s = tg_stream_new(&e.ctx)};
    assert_non_null(k.s);
    tg_stream_no_scan(k.s, no_scan);
    const json_t *ka = json_object_get(fx, "keepalive_ms");
    if (json_is_integer(ka))
        tg_stream_set_keepalive(k.s, (unsigned)json_integer_value(ka));
    const json_t *ahead = json_object_get(fx, "clock_ahead_ms");
    if (json_is_integer(ahead)) {  /* the caller's clock (tg_stream_clock), not the stream's */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        tg_stream_clock(k.s, (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u +
                                 (uint64_t)json_integer_value(ahead) * 1000u);
    }
    tg_sse p;
    uint64_t x = split * 0x9E3779B97F4A7C15ull + 1;
    for (size_t r = 0; r < rounds; r++) {
        tg_sse_init(&p, to_stream, NULL, &k);
        for (size_t at = 0; at < in[r].len;) {
            size_t step = in[r].len - at;
            if (split == 1) {
                step = 1;
            } else if (split > 1) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                size_t n = (size_t)(x % 23) + 1;
                step = n < step ? n : step;
            }
            tg_sse_feed(&p, in[r].data + at, step);
            at += step;
        }
        tg_sse_finish(&p);
        tg_sse_free(&p);
        json_t *next = NULL;
        int rc = tg_stream_end(k.s, json_is_true(json_object_get(fx, "transport_error")),
                               &k.out, &next);
        if (r + 1 < rounds) {  /* discovery asked for another upstream round */
            assert_int_equal(rc, 1);
            assert_non_null(next);
        } else {
            assert_int_equal(rc, 0);
            assert_null(next);
        }
        json_decref(next);
    }
    tg_stream_free(k.s);
    const json_t *want_ka = json_object_get(fx, "keepalives");
    if (want_ka) {
        long got = 0;
        for (const char *at = k.out.data; at && (at = memmem(at, k.out.len - (size_t)(at - k.out.data),
                                                             ": keepalive\n\n", 13));
             at++)
            got++;
        if (got != json_integer_value(want_ka))
            print_error("%ld keepalive comments, want %lld\n", got, (long long)json_integer_value(want_ka));
        assert_int_equal(got, json_integer_value(want_ka));
    }

    if (raw)
        tg_buf_append(raw, k.out.data ? k.out.data : "", k.out.len);
    k.events = json_array();
    tg_sse_init(&p, to_list, NULL, &k);
    tg_sse_feed(&p, k.out.data ? k.out.data : "", k.out.len);
    tg_sse_finish(&p);
    tg_sse_free(&p);
    tg_buf_free(&k.out);
    tg_ctx_clear(&e.ctx);
    return k.events;
}

/* The same for parsed events: every event's "created" becomes 0. */
static json_t *zero_created(json_t *events)
{
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        if (json_is_integer(json_object_get(ev, "created")))
            json_object_set_new(ev, "created", json_integer(0));
    }
    return events;
}

static void same_bytes(tg_buf *a, tg_buf *b, const char *what)
{
    mask_made(a);
    mask_made(b);
    if (a->len != b->len || (a->len && memcmp(a->data, b->data, a->len))) {
        print_error("%s differ:\n--- fast (%zu bytes)\n%.*s\n--- slow (%zu bytes)\n%.*s\n", what,
                    a->len, (int)a->len, a->data ? a->data : "", b->len, (int)b->len,
                    b->data ? b->data : "");
        fail();
    }
}

/* --- the tests --------------------------------------------------------------- */

static void run_whole(const json_t *fx)
{
    env e;
    env_init(&e, fx);
    json_t *resp = json_deep_copy(json_object_get(fx, "response"));
    int rc = tg_repair_response(resp, &e.ctx);
    const json_t *er = json_object_get(fx, "expected_return");
    assert_int_equal(rc, er ? (int)json_integer_value(er) : 0);
    /* Repairing twice changes nothing more. */
    json_t *again = json_deep_copy(resp);
    tg_repair_response(again, &e.ctx);
    expect_match(resp, again, "second repair");
    json_decref(again);
    if (legacy(fx) && rc != TG_REPAIR_NOW_SUCCESS)
        tg_repair_legacy_answer(resp);  /* the last stage of tg_pipeline_response */
    expect_match(json_object_get(fx, "expected"), resp, "response");
    if (json_object_get(resp, "choices"))
        check_message(fx, resp);
    json_decref(resp);
    tg_ctx_clear(&e.ctx);
}

static void run_stream(const json_t *fx)
{
    tg_buf in[MAX_ROUNDS] = {{0}};
    size_t rounds = 1;
    const json_t *multi = json_object_get(fx, "sse_rounds");
    if (multi) {
        rounds = json_array_size(multi);
        assert_true(rounds > 0 && rounds <= MAX_ROUNDS);
        for (size_t r = 0; r < rounds; r++)
            sse_bytes(json_array_get(multi, r), &in[r]);
    } else {
        sse_bytes(json_object_get(fx, "sse"), &in[0]);
    }
    json_t *first = replay(fx, in, rounds, 0, 0, NULL);
    expect_match(json_object_get(fx, "expected_sse"), first, "stream");
    check_stream(fx, first);
    json_t *first0 = zero_created(json_deep_copy(first));
    for (unsigned split = 1; split < 12; split++) {
        json_t *other = zero_created(replay(fx, in, rounds, split, 0, NULL));
        if (!json_equal(first0, other)) {
            print_error("split %u gives a different stream\n", split);
            expect_match(first0, other, "split replay");
        }
        json_decref(other);
    }
    json_decref(first0);
    /* The byte-scan fast paths (surely_plain, live_fragment, held_fragment,
     * relay_event) do what the full parse would: the same bytes, whole and
     * split. */
    for (unsigned split = 0; split < 3; split++) {
        tg_buf fast = {0}, slow = {0};
        json_decref(replay(fx, in, rounds, split, 0, &fast));
        json_decref(replay(fx, in, rounds, split,
                           TG_SCAN_ARGS | TG_SCAN_PLAIN | TG_SCAN_EVENT | TG_SCAN_HELD |
                               TG_SCAN_HELD_END,
                           &slow));
        same_bytes(&fast, &slow, "fast and slow paths");
        tg_buf_free(&slow);
        json_decref(replay(fx, in, rounds, split, TG_SCAN_RUN, &slow));
        same_bytes(&fast, &slow, "fragments with and without the run");
        tg_buf_free(&fast);
        tg_buf_free(&slow);
    }
    json_decref(first);
    for (size_t r = 0; r < rounds; r++)
        tg_buf_free(&in[r]);
}

static void to_collect(void *user, const char *event, const char *data, size_t len)
{
    (void)event;
    tg_collect_event(user, data, len);
}

static json_t *fold_bytes(const tg_buf *b)
{
    tg_collect *c = tg_collect_new();
    tg_sse p;
    tg_sse_init(&p, to_collect, NULL, c);
    tg_sse_feed(&p, b->data ? b->data : "", b->len);
    tg_sse_finish(&p);
    tg_sse_free(&p);
    return tg_collect_end(c);
}

/* What an agent reads of one choice: its text, its calls (names and
 * arguments as values) and its finish. */
static json_t *gist(const json_t *resp)
{
    json_t *ch = json_array_get(json_object_get(resp, "choices"), 0);
    json_t *msg = json_object_get(ch, "message");
    const char *text = json_string_value(json_object_get(msg, "content"));
    json_t *calls = json_array();
    size_t i;
    json_t *tc;
    json_t *list = json_object_get(msg, "tool_calls");
    json_t *fc = json_object_get(msg, "function_call");
    if (fc) {
        list = json_array();
        json_array_append_new(list, json_pack("{s:O}", "function", fc));
    } else {
        json_incref(list);
    }
    json_array_foreach(list, i, tc) {
        json_t *fn = json_object_get(tc, "custom");
        json_t *a = json_object_get(fn, "input");
        if (!fn) {
            fn = json_object_get(tc, "function");
            a = json_object_get(fn, "arguments");
        }
        json_t *args = json_is_string(a) ? json_loads(json_string_value(a), 0, NULL) : NULL;
        json_array_append_new(calls, json_pack("{s:O, s:o}", "name", json_object_get(fn, "name"),
                                               "arguments", args ? args : json_incref(a ? a : json_null())));
    }
    json_decref(list);
    /* the order calls went out in may differ (a stream sends each when it
     * is whole), and so may the white space around calls read from text */
    size_t n = json_array_size(calls);
    char **keys = calloc(n ? n : 1, sizeof *keys);
    json_t *sorted = json_array();
    for (i = 0; i < n; i++)
        keys[i] = json_dumps(json_array_get(calls, i), JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    qsort(keys, n, sizeof *keys, vector_names_cmp);
    for (i = 0; i < n; i++) {
        json_array_append_new(sorted, json_loads(keys[i], JSON_DECODE_ANY, NULL));
        free(keys[i]);
    }
    free(keys);
    json_decref(calls);
    const char *t = text ? text : "";
    size_t tl = strlen(t);
    while (tl && isspace((unsigned char)t[tl - 1]))
        tl--;
    while (tl && isspace((unsigned char)*t)) {
        t++;
        tl--;
    }
    return json_pack("{s:s%, s:o, s:O}", "content", t, tl, "calls", sorted, "finish",
                     json_object_get(ch, "finish_reason"));
}

/* The same stream asked for whole (a provider that streams what was asked
 * for whole, repair/collect.c): folded, then repaired as a whole answer, it
 * must give the agent what the stream repair gave, folded the same way. */
static void run_folded(const json_t *fx)
{
    if (json_object_get(fx, "sse_rounds") || json_object_get(fx, "transport_error") ||
        json_object_get(fx, "discovery") || json_object_get(fx, "keepalives") ||
        json_is_true(json_object_get(fx, "no_fold")))
        return;
    tg_buf in = {0}, out = {0};
    sse_bytes(json_object_get(fx, "sse"), &in);
    sse_bytes(json_object_get(fx, "expected_sse"), &out);
    json_t *whole = fold_bytes(&in), *streamed = fold_bytes(&out);
    tg_buf_free(&in);
    tg_buf_free(&out);
    if (whole && streamed && !json_object_get(whole, "error") && !json_object_get(streamed, "error")) {
        env e;
        env_init(&e, fx);
        e.ctx.stream = false;
        int rc = tg_repair_response(whole, &e.ctx);
        if (legacy(fx) && rc != TG_REPAIR_NOW_SUCCESS)
            tg_repair_legacy_answer(whole);  /* the last stage of tg_pipeline_response */
        if (rc != TG_REPAIR_NOW_SUCCESS && json_object_get(whole, "choices")) {
            check_message(fx, whole);
            json_t *a = gist(streamed), *b = gist(whole);
            expect_match(a, b, "the stream folded and repaired whole");
            json_decref(a);
            json_decref(b);
        }
        tg_ctx_clear(&e.ctx);
    }
    json_decref(whole);
    json_decref(streamed);
}

static void run_cases(const json_t *fx)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(fx, "cases"), i, c) {
        const char *in = json_string_value(json_array_get(c, 0));
        assert_non_null(in);
        json_t *got = tg_json_fix(in, strlen(in));
        const json_t *exp = json_array_get(c, 1);
        if (json_is_null(exp)) {
            if (got)
                print_error("case %zu: %s should not be repairable\n", i, in);
            assert_null(got);
        } else {
            expect_match(exp, got, in);
        }
        json_decref(got);
    }
}

static void run_prefix_cases(const json_t *fx)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(fx, "prefix_cases"), i, c) {
        const char *in = json_string_value(json_array_get(c, 0));
        assert_non_null(in);
        size_t want = (size_t)json_integer_value(json_array_get(c, 1));
        bool complete = json_is_true(json_array_get(c, 2));
        tg_jprefix whole = {0}, bytes = {0};
        tg_jprefix_feed(&whole, in, strlen(in));
        for (size_t k = 0; in[k]; k++)
            tg_jprefix_feed(&bytes, in + k, 1);
        if (whole.pos != want || tg_jprefix_complete(&whole) != complete)
            print_error("prefix case %zu: %s: accepted %zu (want %zu), complete %d\n", i, in,
                        whole.pos, want, tg_jprefix_complete(&whole));
        assert_int_equal(whole.pos, want);
        assert_int_equal(bytes.pos, want);
        assert_int_equal(tg_jprefix_complete(&whole), complete);
        assert_int_equal(tg_jprefix_complete(&bytes), complete);
    }
}

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* A copy of v with random nodes swapped for values of other shapes. */
static json_t *mutate_shape(const json_t *v, uint64_t *x)
{
    static const char *const repl[] = {
        "null", "0", "-1", "1e300", "\"\"", "\"x\"", "[]", "{}", "true", "[null, 1, \"a\"]",
        "{\"index\": \"0\"}", "\"<tool_call>{\\\"name\\\": \\\"get_weather\\\"\"", "{\"a\": {\"b\": []}}",
        "\"{\\\"location\\\": 1}{\"", "9223372036854775807", "[{\"function\": null}]"};
    if (rnd(x) % 9 == 0)
        return json_loads(repl[rnd(x) % (sizeof repl / sizeof *repl)], JSON_DECODE_ANY, NULL);
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        json_t *c;
        json_object_foreach((json_t *)v, k, c) {
            if (rnd(x) % 13 == 0)
                continue;  /* a key goes missing */
            json_t *m = mutate_shape(c, x);
            if (m)
                json_object_set_new(o, k, m);
        }
        return o;
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c) {
            json_t *m = mutate_shape(c, x);
            if (m)
                json_array_append_new(a, m);
        }
        return a;
    }
    return json_deep_copy(v);
}

static void stream_bytes_way(const json_t *fx, const char *b, size_t n, bool transport_error,
                             unsigned no_scan, tg_buf *raw)
{
    env e;
    env_init(&e, fx);
    sink k = {.s = tg_stream_new(&e.ctx)};
    tg_stream_no_scan(k.s, no_scan);
    tg_sse p;
    tg_sse_init(&p, to_stream, NULL, &k);
    tg_sse_feed(&p, b, n);
    tg_sse_finish(&p);
    json_t *next = NULL;
    tg_stream_end(k.s, transport_error, &k.out, &next);
    json_decref(next);
    tg_stream_free(k.s);
    tg_sse_free(&p);
    tg_buf_append(raw, k.out.data ? k.out.data : "", k.out.len);
    tg_buf_free(&k.out);
    tg_ctx_clear(&e.ctx);
}

/* Any bytes: never a crash, and the argument-fragment and event scans'
 * output is the full parse's, byte for byte (they are conservative on
 * every shape; the plain chunks' scan is so only on valid JSON, see
 * tg_stream_no_scan). */
static void stream_bytes(const json_t *fx, const char *b, size_t n, bool transport_error)
{
    tg_buf fast = {0}, slow = {0};
    stream_bytes_way(fx, b, n, transport_error, 0, &fast);
    stream_bytes_way(fx, b, n, transport_error,
                     TG_SCAN_ARGS | TG_SCAN_EVENT | TG_SCAN_HELD | TG_SCAN_HELD_END, &slow);
    same_bytes(&fast, &slow, "mutated stream: fast and slow paths");
    tg_buf_free(&slow);
    stream_bytes_way(fx, b, n, transport_error, TG_SCAN_RUN, &slow);
    same_bytes(&fast, &slow, "mutated stream: fragments with and without the run");
    tg_buf_free(&fast);
    tg_buf_free(&slow);
}

/* Random shapes in place of the fixture's values. */
static void run_shapes(const json_t *fx)
{
    uint64_t x = 0x2545F4914F6CDD1Dull;
    const json_t *resp = json_object_get(fx, "response");
    const json_t *sse = json_object_get(fx, "sse");
    for (int round = 0; round < fuzz_rounds; round++) {
        if (resp) {
            env e;
            env_init(&e, fx);
            json_t *m = mutate_shape(resp, &x);
            tg_repair_response(m, &e.ctx);
            json_decref(m);
            tg_ctx_clear(&e.ctx);
        }
        if (json_is_array(sse)) {
            json_t *m = mutate_shape(sse, &x);
            tg_buf b = {0};
            sse_bytes(m, &b);
            stream_bytes(fx, b.data ? b.data : "", b.len, round & 1);
            tg_buf_free(&b);
            json_decref(m);
        }
    }
}

/* Mutated fixtures: any bytes, any JSON shape, never a crash. */
static void run_mutations(const json_t *fx)
{
    tg_buf in = {0};
    sse_bytes(json_object_get(fx, "sse"), &in);
    char *whole = json_dumps(json_object_get(fx, "response"), JSON_COMPACT);
    uint64_t x = 88172645463325252ull;
    for (int round = 0; round < fuzz_rounds; round++) {
        for (int src = 0; src < 2; src++) {
            const char *b = src ? whole : in.data;
            size_t n = src ? (whole ? strlen(whole) : 0) : in.len;
            if (!b || !n)
                continue;
            char *m = malloc(n);
            memcpy(m, b, n);
            for (int f = 0; f < 3; f++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                m[x % n] = "{}[]\",:0 a<>\\"[(x >> 32) % 14];
            }
            env e;
            env_init(&e, fx);
            if (src) {
                json_t *r = json_loadb(m, n, 0, NULL);
                tg_repair_response(r, &e.ctx);
                json_decref(r);
            }
            tg_ctx_clear(&e.ctx);
            if (!src)
                stream_bytes(fx, m, n, round & 1);
            free(m);
        }
    }
    free(whole);
    tg_buf_free(&in);
}

/* conf_cases: [key, value, expected return of tg_repair_rules_set]. */
static void run_conf(const json_t *fx)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(fx, "conf_cases"), i, c) {
        tg_repair_rules r;
        tg_repair_rules_preset(TG_D_OPENAI, &r);
        char msg[256] = "";
        int rc = tg_repair_rules_set(&r, json_string_value(json_array_get(c, 0)),
                                     json_string_value(json_array_get(c, 1)), msg, sizeof msg);
        if (rc != (int)json_integer_value(json_array_get(c, 2)))
            print_error("repair.%s = %s: got %d (%s)\n", json_string_value(json_array_get(c, 0)),
                        json_string_value(json_array_get(c, 1)), rc, msg);
        assert_int_equal(rc, (int)json_integer_value(json_array_get(c, 2)));
        if (rc)
            assert_true(msg[0] != 0);
    }
}

static void test_fixture(void **state)
{
    const char *name = *state;
    json_t *fx = load_vector(vec_dir, name);
    bool any = false;
    fixture_cache = tg_cache_new(64, 0);
    if (json_object_get(fx, "response")) {
        run_whole(fx);
        any = true;
    }
    if (json_object_get(fx, "sse") || json_object_get(fx, "sse_rounds")) {
        run_stream(fx);
        run_folded(fx);
        any = true;
    }
    if (json_object_get(fx, "cases")) {
        run_cases(fx);
        any = true;
    }
    if (json_object_get(fx, "prefix_cases")) {
        run_prefix_cases(fx);
        any = true;
    }
    if (json_object_get(fx, "conf_cases")) {
        run_conf(fx);
        any = true;
    }
    assert_true(any);
    if (!json_object_get(fx, "discovery")) {
        run_mutations(fx);
        run_shapes(fx);
    }
    json_decref(fx);
    tg_cache_free(fixture_cache);
    fixture_cache = NULL;
}

/* A stream that opens a fresh call in every chunk: past TG_RS_MAX_CALLS a
 * message's new calls are dropped and counted, so a hostile upstream costs
 * no search that grows with the square (4.7 s of CPU for 20,000 before). */
static void test_stream_call_bound(void **state)
{
    (void)state;
    json_t *fx = json_pack("{s:s}", "dialect", "openai");
    env e;
    env_init(&e, fx);
    e.ctx.stream = true;
    tg_stream *s = tg_stream_new(&e.ctx);
    tg_buf out = {0};
    char ev[256];
    const unsigned n = TG_RS_MAX_CALLS + 76;
    for (unsigned i = 0; i < n; i++) {
        int len = snprintf(ev, sizeof ev,
                           "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%u,"
                           "\"id\":\"t%u\",\"type\":\"function\",\"function\":{\"name\":\"f\","
                           "\"arguments\":\"{}\"}}]}}]}",
                           i, i);
        tg_stream_event(s, ev, (size_t)len, &out);
    }
    const char *fin = "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}";
    tg_stream_event(s, fin, strlen(fin), &out);
    tg_stream_event(s, "[DONE]", 6, &out);
    json_t *next = NULL;
    tg_stream_end(s, false, &out, &next);
    json_decref(next);
    size_t calls = 0;
    for (const char *p = out.data; p && (p = strstr(p, "\"id\":\"t")); p++)
        calls++;
    assert_int_equal(calls, TG_RS_MAX_CALLS);
    assert_int_equal(e.ctx.stats.repair_failures, 76);
    tg_buf_free(&out);
    tg_stream_free(s);
    tg_ctx_clear(&e.ctx);
    json_decref(fx);
}

int main(void)
{
    const char *root = getenv("TG_ROOT");
    if (getenv("TG_FUZZ_ROUNDS"))
        fuzz_rounds = atoi(getenv("TG_FUZZ_ROUNDS"));
    snprintf(vec_dir, sizeof vec_dir, "%s/test/vectors/repair", root ? root : ".");
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_stream_call_bound)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    return rc | run_vector_files("repair", vec_dir, test_fixture);
}
