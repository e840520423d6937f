/* bridge_vectors.h -- what the unit tests of the agent-API bridges
 * (test_responses_api.c, test_messages_api.c) share: the chat stream a
 * vector's payloads make, the event stream a bridge writes read back, and
 * a chat stream assembled as a client would. Header-only, like vectors.h. */
#ifndef TG_TEST_BRIDGE_VECTORS_H
#define TG_TEST_BRIDGE_VECTORS_H

#include "bridge/bridge.h"
#include "core/buf.h"
#include "core/jsonio.h"
#include "vectors.h"

static bool subset(const json_t *exp, const json_t *got)
{
    return vector_match(exp, got, true);
}

static void expect(bool ok, const json_t *exp, const json_t *got, const char *what)
{
    vector_expect(ok, exp, got, what);
}

/* A vector's "hosted_tools": "refuse" as the bridge's options. */
/* The route's choices a vector names: "hosted_tools": "refuse", and
 * "target": {"file_parts", "cache_control", "discovery"} (booleans: what
 * the route's target takes, proxy/bridges.c; "discovery_above": auto's
 * threshold). */
static tg_bridge_opts vector_opts(const json_t *v)
{
    const char *h = json_string_value(json_object_get(v, "hosted_tools"));
    const json_t *t = json_object_get(v, "target");
    tg_bridge_opts o = {.refuse_hosted = h && !strcmp(h, "refuse"),
                        .file_parts = json_is_true(json_object_get(t, "file_parts")),
                        .cache_control = json_is_true(json_object_get(t, "cache_control")),
                        .discovery = json_is_true(json_object_get(t, "discovery")),
                        .discovery_above = (int)json_integer_value(
                            json_object_get(t, "discovery_above"))};
    return o;
}

/* What the bridge left out, as X-Toolgate-Dropped says it, against the
 * vector's "dropped" (absent or null: nothing); expect_listed does the
 * same for another key (X-Toolgate-Translated's "translated"). */
static void expect_listed(const json_t *v, const char *key, const json_t *dropped)
{
    char *text = tg_bridge_dropped_text(dropped);
    const json_t *want = json_object_get(v, key);
    json_t *got = text ? json_string(text) : json_null();
    json_t *w = json_is_string(want) ? json_incref((json_t *)want) : json_null();
    expect(json_equal(w, got), w, got, key);
    json_decref(got);
    json_decref(w);
    free(text);
}

static void expect_dropped(const json_t *v, const json_t *dropped)
{
    expect_listed(v, "dropped", dropped);
}

/* The chat stream as SSE text, as the repair stage writes it. */
static void chat_sse(const json_t *payloads, tg_buf *out)
{
    size_t i;
    const json_t *p;
    json_array_foreach(payloads, i, p) {
        const char *raw = json_string_value(p);
        if (raw && !strncmp(raw, "raw:", 4)) {  /* e.g. "raw:: keepalive" */
            tg_buf_puts(out, raw + 4);
            tg_buf_puts(out, "\n\n");
            continue;
        }
        tg_buf_puts(out, "data: ");
        if (json_is_string(p))
            tg_buf_puts(out, json_string_value(p));
        else
            tg_json_dump(p, out);
        tg_buf_puts(out, "\n\n");
    }
}

/* A repair fixture marked "chat_agent_only" gives a chat custom call back
 * (repair/custom_calls.c), which only a chat agent that declared a custom
 * tool receives: no bridge declares one (the Responses bridge sends its
 * custom tools up as functions and turns their calls back itself), so
 * the bridges' replays pass it by (cmocka's skip counts as a failure in
 * test/run.sh). */
static inline bool chat_agent_only(const json_t *fx)
{
    return json_is_true(json_object_get(fx, "chat_agent_only"));
}

/* Whether the chat stream ends in an error: one of its payloads is an
 * object with an "error" that is not null (a stream the repair stage cut,
 * or the upstream's error event). A bridged stream fails exactly then. */
static inline bool chat_stream_failed(const json_t *payloads)
{
    size_t i;
    const json_t *p;
    bool failed = false;
    json_array_foreach(payloads, i, p) {
        json_t *j = json_is_string(p) ? json_loads(json_string_value(p), 0, NULL)
                                      : json_incref((json_t *)p);
        const json_t *e = json_is_object(j) ? json_object_get(j, "error") : NULL;
        failed |= e && !json_is_null(e);
        json_decref(j);
    }
    return failed;
}

/* The events a bridge wrote ("event: TYPE" and one data line each), as
 * [type, data] pairs. */
static json_t *parse_events(const tg_buf *sse)
{
    json_t *evs = json_array();
    const char *p = sse->data, *e = sse->data + sse->len;
    while (p < e) {
        const char *end = memmem(p, (size_t)(e - p), "\n\n", 2);
        assert_non_null(end);
        if (*p == ':') {  /* a comment (keepalive): no event */
            p = end + 2;
            continue;
        }
        const char *data = memmem(p, (size_t)(end - p), "\ndata: ", 7);
        assert_non_null(data);
        assert_memory_equal(p, "event: ", 7);
        json_t *d = tg_json_load(data + 7, (size_t)(end - data - 7), 0, NULL);
        assert_non_null(d);
        json_t *type = json_stringn(p + 7, (size_t)(data - p - 7));
        assert_true(json_equal(type, json_object_get(d, "type")));
        json_array_append_new(evs, json_pack("[o, o]", type, d));
        p = end + 2;
    }
    return evs;
}

/* A vector's "comments": how many comment blocks (": keepalive", the
 * repair stage's while it holds a call) the bridge must have passed on. */
static void check_comments(const json_t *v, const tg_buf *sse)
{
    const json_t *want = json_object_get(v, "comments");
    if (!want)
        return;
    long n = 0;
    const char *p = sse->data, *e = sse->data + sse->len;
    while (p && p < e) {
        if (*p == ':')
            n++;
        const char *end = memmem(p, (size_t)(e - p), "\n\n", 2);
        p = end ? end + 2 : NULL;
    }
    if (n != json_integer_value(want))
        fprintf(stderr, "# %ld comments, want %lld\n", n, (long long)json_integer_value(want));
    assert_int_equal(n, json_integer_value(want));
}

/* The chat stream a repair fixture expects, assembled as a client would:
 * the text of choice 0 and its calls in the order they began. */
static void assemble_chat(const json_t *payloads, tg_buf *text, json_t *calls)
{
    json_t *by_index = json_object();
    size_t i, j;
    const json_t *p, *ch, *tc;
    json_array_foreach(payloads, i, p) {
        json_array_foreach(json_object_get(p, "choices"), j, ch) {
            const json_t *ix = json_object_get(ch, "index");
            if (json_is_integer(ix) && json_integer_value(ix) != 0)
                continue;
            const json_t *delta = json_object_get(ch, "delta");
            const char *c = json_string_value(json_object_get(delta, "content"));
            if (c)
                tg_buf_puts(text, c);
            size_t k;
            json_array_foreach(json_object_get(delta, "tool_calls"), k, tc) {
                char key[32];
                snprintf(key, sizeof key, "%lld", (long long)json_integer_value(json_object_get(tc, "index")));
                json_t *call = json_object_get(by_index, key);
                if (!call) {
                    call = json_pack("{s:s, s:s}", "name", "", "arguments", "");
                    json_object_set_new(by_index, key, call);
                    json_array_append(calls, call);
                }
                const json_t *fn = json_object_get(tc, "function");
                const char *name = json_string_value(json_object_get(fn, "name"));
                const char *args = json_string_value(json_object_get(fn, "arguments"));
                if (name && *name && !*json_string_value(json_object_get(call, "name")))
                    json_object_set_new(call, "name", json_string(name));
                if (args) {
                    tg_buf a = {0};
                    tg_buf_puts(&a, json_string_value(json_object_get(call, "arguments")));
                    tg_buf_puts(&a, args);
                    json_object_set_new(call, "arguments", json_stringn(a.data, a.len));
                    tg_buf_free(&a);
                }
            }
        }
    }
    json_decref(by_index);
}

#endif
