/* test_field.c -- the field corpus: cases rebuilt from public issue threads
 * (the JSON files of test/field/, schema in docs/testing.md), run through the same
 * pipeline functions the proxy calls, without sockets.
 *
 * A request case runs the request stages for its dialect and then judges
 * the upstream body three ways: the mock's strict validator of that
 * provider (test/mock/mock_strict.c, included here so the unit run and the
 * wire run share one validator), the referee of docs/dialects.md section 9
 * (test/unit/referee.c), and the case's own `expect` (JSON pointers that
 * must hold a value, be absent, or have a type): the validators only know
 * the documented checks, the case knows the one its thread is about. An
 * answer or stream case runs the request stages on its tools first (what
 * the answer is repaired against), then the whole answer or the SSE events
 * through the repair stages, and compares the calls the agent gets.
 *
 * The output is TAP, one line per case, printed here rather than by
 * cmocka: a case marked `known` (a break waiting for its fix) is printed
 * with "# TODO <reason>", which test/run.sh counts neither way but lists,
 * so the pass rate shown is the real one. TG_FIELD_DIR overrides the
 * directory; TG_FIELD_ONLY=substring runs the cases whose id holds it.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/cache.h"
#include "core/jsonio.h"
#include "bridge/messages_api.h"
#include "bridge/responses_api.h"
#include "proxy/sse.h"
#include "pipeline/pipeline.h"

/* The mock's validators and the referee both name a helper "violation":
 * and both a "check_gemini": the mock's get their own spelling here. */
#define violation ms_violation
#define check_gemini ms_check_gemini
#include "test/mock/mock_strict.c"
#undef violation
#undef check_gemini
#include "referee.c"
#include "mask.h"

/* --- small helpers ---------------------------------------------------------- */

/* RFC 6901 pointer into v (borrowed), or NULL when a step is missing. */
static json_t *at_pointer(json_t *v, const char *ptr)
{
    if (!*ptr)
        return v;
    if (*ptr != '/')
        return NULL;
    char step[256];
    while (v && *ptr == '/') {
        ptr++;
        size_t n = 0;
        while (*ptr && *ptr != '/' && n + 1 < sizeof step) {
            if (ptr[0] == '~' && ptr[1] == '1') {
                step[n++] = '/';
                ptr += 2;
            } else if (ptr[0] == '~' && ptr[1] == '0') {
                step[n++] = '~';
                ptr += 2;
            } else {
                step[n++] = *ptr++;
            }
        }
        step[n] = '\0';
        if (json_is_array(v)) {
            char *end;
            long i = strtol(step, &end, 10);
            v = (*step && !*end && i >= 0) ? json_array_get(v, (size_t)i) : NULL;
        } else {
            v = json_object_get(v, step);
        }
    }
    return v;
}

/* Does got match exp? Objects by exp's keys (subset), arrays element by
 * element with equal lengths, "<any>" anything present, the rest equal. */
static bool match(const json_t *exp, const json_t *got)
{
    if (json_is_string(exp) && !strcmp(json_string_value(exp), "<any>"))
        return got != NULL;
    if (json_is_object(exp)) {
        if (!json_is_object(got))
            return false;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)exp, k, v) if (!match(v, json_object_get(got, k)))
            return false;
        return true;
    }
    if (json_is_array(exp)) {
        if (!json_is_array(got) || json_array_size(exp) != json_array_size(got))
            return false;
        for (size_t i = 0; i < json_array_size(exp); i++)
            if (!match(json_array_get(exp, i), json_array_get(got, i)))
                return false;
        return true;
    }
    return got && json_equal(exp, got);
}

/* The reasons a case failed, one line each ("# " prefixed when printed). */
typedef struct why {
    tg_buf b;
    int n;
} why;

static void say(why *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(why *w, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    tg_buf_printf(&w->b, "#   %s\n", line);
    w->n++;
}

static void say_json(why *w, const char *what, const json_t *v)
{
    char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    say(w, "%s: %.600s", what, t ? t : "(none)");
    free(t);
}

/* --- expectations on a JSON document (request body, answer) ------------------ */

/* Every (pointer, value) a pointer names: a step "*" stands for each
 * element of an array (or member of an object). Missing steps name none;
 * a pointer without "*" names itself, present or not (value NULL). */
static void expand(json_t *v, const char *done, const char *rest, json_t *out)
{
    const char *star = strstr(rest, "/*");
    while (star && star[2] && star[2] != '/')
        star = strstr(star + 2, "/*");
    if (!star) {
        char p[1024];
        snprintf(p, sizeof p, "%s%s", done, rest);
        json_t *got = at_pointer(v, rest);
        json_array_append_new(out, got ? json_pack("[s,O]", p, got) : json_pack("[s]", p));
        return;
    }
    char head[512];
    snprintf(head, sizeof head, "%.*s", (int)(star - rest), rest);
    json_t *base = at_pointer(v, head);
    char here[1024];
    if (json_is_array(base)) {
        for (size_t i = 0; i < json_array_size(base); i++) {
            snprintf(here, sizeof here, "%s%s/%zu", done, head, i);
            expand(json_array_get(base, i), here, star + 2, out);
        }
    } else if (json_is_object(base)) {
        const char *k;
        json_t *m;
        json_object_foreach(base, k, m) {
            snprintf(here, sizeof here, "%s%s/%s", done, head, k);
            expand(m, here, star + 2, out);
        }
    }
}

static bool want_type_ok(const json_t *want, const json_t *got)
{
    const char *have = got ? tg_json_type_name(got) : "absent";
    if (json_is_string(want))
        return !strcmp(json_string_value(want), have);
    size_t j;
    json_t *t;
    json_array_foreach(want, j, t) if (!strcmp(json_string_value(t), have))
        return true;
    return false;
}

/* expect.has {pointer: value}, expect.absent [pointer], expect.not
 * {pointer: value} (present, it must not match), expect.types
 * {pointer: type name or [names]} ("absent" is a type name too); each
 * pointer may hold "*" steps, and then holds for every element. */
static void check_pointers(const json_t *expect, json_t *doc, why *w)
{
    const char *k;
    json_t *v;
    size_t i;
    json_t *hit;
    json_object_foreach(json_object_get(expect, "has"), k, v) {
        json_t *hits = json_array();
        expand(doc, "", k, hits);
        json_array_foreach(hits, i, hit) {
            json_t *got = json_array_get(hit, 1);
            if (!match(v, got)) {
                say_json(w, json_string_value(json_array_get(hit, 0)), got);
                say_json(w, "  want", v);
            }
        }
        json_decref(hits);
    }
    json_array_foreach(json_object_get(expect, "absent"), i, v) {
        json_t *hits = json_array();
        expand(doc, "", json_string_value(v) ? json_string_value(v) : "", hits);
        size_t j;
        json_array_foreach(hits, j, hit) if (json_array_get(hit, 1))
            say_json(w, json_string_value(json_array_get(hit, 0)), json_array_get(hit, 1));
        json_decref(hits);
    }
    json_object_foreach(json_object_get(expect, "not"), k, v) {
        json_t *hits = json_array();
        expand(doc, "", k, hits);
        json_array_foreach(hits, i, hit) {
            json_t *got = json_array_get(hit, 1);
            if (got && match(v, got)) {
                say_json(w, json_string_value(json_array_get(hit, 0)), got);
                say_json(w, "  want anything but", v);
            }
        }
        json_decref(hits);
    }
    json_object_foreach(json_object_get(expect, "types"), k, v) {
        json_t *hits = json_array();
        expand(doc, "", k, hits);
        json_array_foreach(hits, i, hit) {
            json_t *got = json_array_get(hit, 1);
            if (!want_type_ok(v, got)) {
                say(w, "%s is %s", json_string_value(json_array_get(hit, 0)),
                    got ? tg_json_type_name(got) : "absent");
                say_json(w, "  want", v);
            }
        }
        json_decref(hits);
    }
}

/* expect.unique_call_ids: every replayed call id is non-empty, of
 * [A-Za-z0-9_-] only (Anthropic's tool_use.id pattern) and unique over the
 * conversation; every tool message answers one of them, and every call is
 * answered before the next message that is not a tool result (rules 6, 39). */
static void check_call_ids(json_t *body, why *w)
{
    json_t *seen = json_object();
    json_t *pending = json_object();
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(body, "messages"), i, m) {
        const char *role = json_string_value(json_object_get(m, "role"));
        if (role && strcmp(role, "tool") && json_object_size(pending)) {
            say(w, "/messages/%zu: %zu call(s) before it have no tool result", i,
                json_object_size(pending));
            json_object_clear(pending);
        }
        size_t j;
        json_t *c;
        json_array_foreach(json_object_get(m, "tool_calls"), j, c) {
            const char *id = json_string_value(json_object_get(c, "id"));
            bool ok = id && *id && !json_object_get(seen, id);
            for (const char *p = id; ok && *p; p++)
                ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '_' || *p == '-';
            if (!ok)
                say(w, "/messages/%zu/tool_calls/%zu/id %s is empty, repeated or out of pattern", i,
                    j, id ? id : "(none)");
            else
                json_object_set_new(seen, id, json_true());
            if (id)
                json_object_set_new(pending, id, json_true());
        }
        const char *tid = json_string_value(json_object_get(m, "tool_call_id"));
        if (tid && !json_object_get(seen, tid))
            say(w, "/messages/%zu/tool_call_id %s answers no call", i, tid);
        if (tid)
            json_object_del(pending, tid);
    }
    json_decref(seen);
    json_decref(pending);
}

/* --- request cases ---------------------------------------------------------- */

/* The mock validator that judges a dialect's body, or NULL. */
static const char *validator_for(const char *dialect)
{
    static const char *const known[] = {"mistral", "groq",   "fireworks", "cerebras",
                                        "gemini",  "vertex", "openai",    "anthropic", NULL};
    if (!strcmp(dialect, "openai-strict"))
        return "openai";
    for (const char *const *k = known; *k; k++)
        if (!strcmp(dialect, *k))
            return *k;
    return NULL;
}

static bool ctx_setup(const json_t *c, tg_dialect d, tg_rules_set *rules, tg_ctx *ctx, why *w)
{
    tg_rules_preset(d, rules);
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(c, "conf"), k, v) {
        char msg[256];
        const char *val = json_string_value(v);
        if (!strcmp(k, "text_tool_calls")) {
            rules->repair.text_tool_calls = val && !strcmp(val, "on");
        } else if (!strncmp(k, "schema.", 7)) {
            if (tg_schema_rules_set(&rules->schema, k + 7, val, msg, sizeof msg)) {
                say(w, "conf %s: %s", k, msg);
                return false;
            }
        } else if (!strncmp(k, "messages.", 9)) {
            if (tg_msg_rules_set(&rules->msg, k + 9, val, msg, sizeof msg)) {
                say(w, "conf %s: %s", k, msg);
                return false;
            }
        } else if (tg_repair_rules_set(&rules->repair, k, val, msg, sizeof msg)) {
            say(w, "conf %s: %s", k, msg);
            return false;
        }
    }
    tg_ctx_init(ctx, "field", rules, "_");
    return true;
}

/* The request stages' outcome judged: err (NULL: the body went upstream)
 * against expect.status, else the body by the strict validator, the
 * referee and the case's pointers. */
static void judge_request(const json_t *expect, tg_dialect d, const tg_error *err, json_t *body,
                          why *w)
{
    json_int_t want_status = json_integer_value(json_object_get(expect, "status"));
    if (err) {
        if (!want_status || want_status != err->status)
            say(w, "toolgate refused: %d %s (param %s)", err->status, err->message, err->param);
        return;
    }
    if (want_status) {
        say(w, "sent upstream, but the case wants toolgate's %lld", (long long)want_status);
        return;
    }
    const char *dn = tg_dialect_name(d);
    const char *prov = validator_for(dn);
    if (prov && !json_is_false(json_object_get(expect, "strict"))) {
        verdict v = strict_check(prov, body);
        if (v.body)
            say(w, "strict %s validator: %u %.700s", prov, v.status, v.body);
        free(v.body);
    }
    if (!json_is_false(json_object_get(expect, "referee"))) {
        json_t *reasons = json_array();
        if (referee_check(dn, body, reasons))
            say_json(w, "referee (section 9)", reasons);
        json_decref(reasons);
    }
    check_pointers(expect, body, w);
    if (json_is_true(json_object_get(expect, "unique_call_ids")))
        check_call_ids(body, w);
    if (w->n)
        say_json(w, "upstream body", body);
}

static void run_request(const json_t *c, tg_dialect d, why *w)
{
    tg_rules_set rules;
    tg_ctx ctx;
    if (!ctx_setup(c, d, &rules, &ctx, w))
        return;
    const json_t *expect = json_object_get(c, "expect");
    json_t *body = json_deep_copy(json_object_get(c, "input"));
    tg_error err;
    memset(&err, 0, sizeof err);
    int rc = tg_pipeline_request(body, &ctx, &err);
    judge_request(expect, d, rc ? &err : NULL, body, w);
    /* expect.translated: {kind: [names]} that X-Toolgate-Translated says */
    const json_t *tr = json_object_get(expect, "translated");
    if (tr && !json_equal((json_t *)tr, ctx.translated)) {
        char *got = ctx.translated ? json_dumps(ctx.translated, JSON_COMPACT) : NULL;
        say(w, "translated: %s, want the request's X-Toolgate-Translated to say so", got ? got : "(nothing)");
        free(got);
    }
    json_decref(body);
    tg_ctx_clear(&ctx);
}

/* --- answers and streams ----------------------------------------------------- */

/* What the agent gets: the calls, finish_reason and content of choice 0. */
typedef struct outcome {
    json_t *calls;   /* [{id, name, arguments (text)}] */
    json_t *finish;  /* string or null */
    json_t *content; /* string or null */
    bool error;      /* an error object (whole) or event (stream) */
    json_t *tools;   /* the tools the agent declared, chat-shaped (bridged
                        cases; NULL: the case's "tools") */
} outcome;

static void outcome_free(outcome *o)
{
    json_decref(o->calls);
    json_decref(o->finish);
    json_decref(o->content);
    json_decref(o->tools);
}

/* The request stages over the case's tools (and tool_choice): what the
 * repair learns from them (declared names, renames, schemas). */
static bool answer_ctx(const json_t *c, tg_dialect d, tg_rules_set *rules, tg_ctx *ctx, why *w,
                       bool stream)
{
    if (!ctx_setup(c, d, rules, ctx, w))
        return false;
    json_t *req = json_deep_copy(json_object_get(c, "request"));
    if (!req) {
        req = json_pack("{s:s,s:[{s:s,s:s}]}", "model", "m", "messages", "role", "user",
                        "content", "go");
        json_t *tools = json_object_get(c, "tools");
        if (tools)
            json_object_set(req, "tools", tools);
        json_t *tc = json_object_get(c, "tool_choice");
        if (tc)
            json_object_set(req, "tool_choice", tc);
    }
    if (stream)
        json_object_set_new(req, "stream", json_true());
    ctx->stream = stream;
    tg_error err;
    int rc = tg_pipeline_request(req, ctx, &err);
    json_decref(req);
    if (rc)
        say(w, "request stages refused the case's tools: %s", err.message);
    return rc == 0;
}

/* Rule 8: every call well formed; names declared when tools were. */
static void check_calls_shape(const json_t *tools, const outcome *o, why *w)
{
    json_t *seen = json_object();
    size_t i;
    json_t *call;
    json_array_foreach(o->calls, i, call) {
        const char *id = json_string_value(json_object_get(call, "id"));
        const char *name = json_string_value(json_object_get(call, "name"));
        const char *args = json_string_value(json_object_get(call, "arguments"));
        if (!id || !*id || json_object_get(seen, id))
            say(w, "rule 8: call %zu has an empty or repeated id", i);
        else
            json_object_set_new(seen, id, json_true());
        const char *type = json_string_value(json_object_get(call, "type"));
        if (!type || strcmp(type, "function"))
            say(w, "rule 8: call %zu has type %s, not \"function\"", i, type ? type : "(none)");
        if (!name || !*name)
            say(w, "rule 8: call %zu has no name", i);
        else if (json_is_array(tools) && !tg_tool_peek(tools, name))
            say(w, "rule 8: call %zu names %s, not a declared tool", i, name);
        json_t *a = args ? json_loads(args, JSON_DECODE_ANY, NULL) : NULL;
        if (!json_is_object(a))
            say(w, "rule 8: call %zu arguments are not a JSON object: %.200s", i,
                args ? args : "(none)");
        json_decref(a);
    }
    json_decref(seen);
}

/* expect.calls [{name, arguments}], expect.finish_reason, expect.content,
 * expect.error (bool). */
static void check_outcome(const json_t *c, const outcome *o, why *w)
{
    const json_t *expect = json_object_get(c, "expect");
    const json_t *want = json_object_get(expect, "calls");
    if (!o->error)
        check_calls_shape(o->tools ? o->tools : json_object_get(c, "tools"), o, w);
    if (want) {
        bool ok = json_array_size(want) == json_array_size(o->calls);
        for (size_t i = 0; ok && i < json_array_size(want); i++) {
            json_t *wc = json_array_get(want, i), *gc = json_array_get(o->calls, i);
            if (!json_equal(json_object_get(wc, "name"), json_object_get(gc, "name")))
                ok = false;
            json_t *wa = json_object_get(wc, "arguments");
            if (ok && wa) {
                const char *t = json_string_value(json_object_get(gc, "arguments"));
                json_t *ga = t ? json_loads(t, JSON_DECODE_ANY, NULL) : NULL;
                ok = ga && match(wa, ga) && (!json_is_object(wa) ||
                                             json_object_size(wa) == json_object_size(ga));
                json_decref(ga);
            }
        }
        if (!ok) {
            say_json(w, "calls", o->calls);
            say_json(w, "  want", want);
        }
    }
    json_t *f = json_object_get(expect, "finish_reason");
    if (f && !json_equal(f, o->finish)) {
        say_json(w, "finish_reason", o->finish);
        say_json(w, "  want", f);
    }
    json_t *ct = json_object_get(expect, "content");
    if (ct && !match(ct, o->content)) {
        say_json(w, "content", o->content);
        say_json(w, "  want", ct);
    }
    json_t *ctn = json_object_get(expect, "content_lacks");
    if (ctn && json_is_string(o->content) &&
        strstr(json_string_value(o->content), json_string_value(ctn)))
        say(w, "content still holds %s", json_string_value(ctn));
    json_t *e = json_object_get(expect, "error");
    if (e && json_is_true(e) != o->error)
        say(w, "error: got %s, want %s", o->error ? "an error" : "none",
            json_is_true(e) ? "an error" : "none");
    if (!e && o->error)
        say(w, "the agent got an error");
}

/* OpenAI's CompletionUsage, as typed clients read it (Rust serde, zod):
 * the three counters are integers, whenever usage is there at all
 * (router-for-me/CLIProxyAPI#4498, zed-industries/zed#42893). */
static void check_usage(const json_t *u, why *w)
{
    static const char *const keys[] = {"prompt_tokens", "completion_tokens", "total_tokens"};
    if (!u || json_is_null(u))
        return;
    for (size_t k = 0; k < 3; k++)
        if (!json_is_integer(json_object_get(u, keys[k])))
            say(w, "usage without an integer %s", keys[k]);
}

static void run_answer(const json_t *c, tg_dialect d, why *w)
{
    tg_rules_set rules;
    tg_ctx ctx;
    if (!answer_ctx(c, d, &rules, &ctx, w, false)) {
        tg_ctx_clear(&ctx);
        return;
    }
    json_t *resp = json_deep_copy(json_object_get(c, "input"));
    json_t *next = NULL;
    int rc = tg_pipeline_response(resp, &ctx, &next);
    json_decref(next);
    outcome o = {.calls = json_array()};
    if (rc)
        say(w, "the answer asked for another upstream round (%d)", rc);
    json_t *msg = at_pointer(resp, "/choices/0/message");
    o.error = json_object_get(resp, "error") != NULL;
    if (!o.error)
        check_usage(json_object_get(resp, "usage"), w);
    o.finish = json_incref(at_pointer(resp, "/choices/0/finish_reason"));
    o.content = json_incref(json_object_get(msg, "content"));
    size_t i;
    json_t *call;
    json_array_foreach(json_object_get(msg, "tool_calls"), i, call) {
        json_t *fn = json_object_get(call, "function");
        json_array_append_new(o.calls, json_pack("{s:O?,s:O?,s:O?,s:O?}", "id",
                                                 json_object_get(call, "id"), "type",
                                                 json_object_get(call, "type"), "name",
                                                 json_object_get(fn, "name"), "arguments",
                                                 json_object_get(fn, "arguments")));
    }
    check_outcome(c, &o, w);
    if (w->n)
        say_json(w, "answer", resp);
    outcome_free(&o);
    json_decref(resp);
    tg_ctx_clear(&ctx);
}

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

/* The case's events as SSE bytes: JSON values, "[DONE]", or "raw:..." text. */
static void sse_bytes(const json_t *events, tg_buf *b)
{
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
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

/* The agent's view of the stream: calls assembled by index, with rule 10
 * checked on the way (integer indexes, dense from 0 in order of first
 * appearance, never two ids on one index). */
/* Each event the agent reads is a chunk: an object (or [DONE]) whose
 * choices is a list of choices that each carry a delta object. */
static void check_chunk_shape(const json_t *ev, size_t i, why *w)
{
    if (json_is_string(ev)) {
        if (strcmp(json_string_value(ev), "[DONE]"))
            say(w, "event %zu is not a chunk: %.60s", i, json_string_value(ev));
        return;
    }
    if (!json_is_object(ev) || json_object_get(ev, "error"))
        return;
    const json_t *choices = json_object_get(ev, "choices");
    if (!json_is_array(choices)) {
        say(w, "event %zu: choices is not a list", i);
        return;
    }
    size_t j;
    const json_t *ch;
    json_array_foreach(choices, j, ch)
        if (!json_is_object(json_object_get(ch, "delta")))
            say(w, "event %zu: choice %zu without a delta object", i, j);
    check_usage(json_object_get(ev, "usage"), w);
}

static void assemble(json_t *events, outcome *o, why *w)
{
    size_t i;
    json_t *ev;
    tg_buf text = {0};
    bool any_text = false;
    json_array_foreach(events, i, ev) {
        check_chunk_shape(ev, i, w);
        if (!json_is_object(ev))
            continue;
        if (json_object_get(ev, "error"))
            o->error = true;
        json_t *ch = json_array_get(json_object_get(ev, "choices"), 0);
        json_t *delta = json_object_get(ch, "delta");
        json_t *f = json_object_get(ch, "finish_reason");
        if (json_is_string(f)) {
            json_decref(o->finish);
            o->finish = json_incref(f);
        }
        const char *t = json_string_value(json_object_get(delta, "content"));
        if (t) {
            tg_buf_puts(&text, t);
            any_text = any_text || *t;
        }
        size_t j;
        json_t *tc;
        json_array_foreach(json_object_get(delta, "tool_calls"), j, tc) {
            json_t *ix = json_object_get(tc, "index");
            if (!json_is_integer(ix)) {
                say(w, "rule 10: a tool_calls delta without an integer index");
                continue;
            }
            json_int_t n = json_integer_value(ix);
            if (n < 0 || (size_t)n > json_array_size(o->calls)) {
                say(w, "rule 10: index %lld is not dense", (long long)n);
                continue;
            }
            if ((size_t)n == json_array_size(o->calls))
                json_array_append_new(o->calls, json_pack("{s:s}", "arguments", ""));
            json_t *call = json_array_get(o->calls, (size_t)n);
            json_t *fn = json_object_get(tc, "function");
            const char *id = json_string_value(json_object_get(tc, "id"));
            const char *have = json_string_value(json_object_get(call, "id"));
            if (id && *id) {
                if (have && strcmp(have, id))
                    say(w, "rule 10: index %lld carries ids %s and %s", (long long)n, have, id);
                else if (!have)
                    json_object_set_new(call, "id", json_string(id));
            }
            const char *name = json_string_value(json_object_get(fn, "name"));
            if (name && *name && !json_object_get(call, "name"))
                json_object_set_new(call, "name", json_string(name));
            const char *type = json_string_value(json_object_get(tc, "type"));
            if (type && *type && !json_object_get(call, "type"))
                json_object_set_new(call, "type", json_string(type));
            const char *a = json_string_value(json_object_get(fn, "arguments"));
            if (a) {
                tg_buf args = {0};
                tg_buf_puts(&args, json_string_value(json_object_get(call, "arguments")));
                tg_buf_puts(&args, a);
                json_object_set_new(call, "arguments", json_string(args.data ? args.data : ""));
                tg_buf_free(&args);
            }
        }
    }
    o->content = any_text ? json_string(text.data) : json_null();
    tg_buf_free(&text);
}

/* The upstream events (a case's list) through the stream repair: what
 * toolgate writes into *out; tg_stream_end's code (non-zero: another
 * upstream round asked for). */
static int relay_events(const json_t *events, tg_ctx *ctx, unsigned no_scan, tg_buf *out)
{
    tg_buf in = {0};
    sse_bytes(events, &in);
    sink k = {.s = tg_stream_new(ctx)};
    tg_stream_no_scan(k.s, no_scan);
    tg_sse p;
    tg_sse_init(&p, to_stream, NULL, &k);
    tg_sse_feed(&p, in.data ? in.data : "", in.len);
    tg_sse_finish(&p);
    tg_sse_free(&p);
    json_t *next = NULL;
    int rc = tg_stream_end(k.s, false, &k.out, &next);
    json_decref(next);
    tg_stream_free(k.s);
    tg_buf_free(&in);
    *out = k.out;
    return rc;
}

/* The stream toolgate writes for the case's input (no_scan: the
 * tg_stream_no_scan switches); false when the case cannot run. */
static bool stream_out(const json_t *c, tg_dialect d, unsigned no_scan, tg_buf *out, why *w)
{
    tg_rules_set rules;
    tg_ctx ctx;
    if (!answer_ctx(c, d, &rules, &ctx, w, true)) {
        tg_ctx_clear(&ctx);
        return false;
    }
    int rc = relay_events(json_object_get(c, "input"), &ctx, no_scan, out);
    if (rc)
        say(w, "the stream asked for another upstream round (%d)", rc);
    tg_ctx_clear(&ctx);
    return true;
}

/* The stream, judged by what the agent assembles from it; and the byte
 * scans (stream_relay.c) give the bytes the full parse gives (the plain
 * chunks' scan aside: it is so only on valid JSON, tg_stream_no_scan). */
static void run_stream(const json_t *c, tg_dialect d, why *w)
{
    sink k = {0};
    tg_buf slow = {0};
    if (!stream_out(c, d, 0, &k.out, w))
        return;
    if (stream_out(c, d, TG_SCAN_ARGS | TG_SCAN_EVENT | TG_SCAN_HELD | TG_SCAN_HELD_END, &slow,
                   w)) {
        tg_buf fast = {0};
        tg_buf_append(&fast, k.out.data ? k.out.data : "", k.out.len);
        mask_made(&fast);
        mask_made(&slow);
        if (fast.len != slow.len || (fast.len && memcmp(fast.data, slow.data, fast.len)))
            say(w, "the byte scans' stream differs from the full parse's:\n%.*s\n---\n%.*s",
                (int)fast.len, fast.data ? fast.data : "", (int)slow.len,
                slow.data ? slow.data : "");
        tg_buf_free(&fast);
    }
    tg_buf_free(&slow);
    tg_sse p;
    k.events = json_array();
    tg_sse_init(&p, to_list, NULL, &k);
    tg_sse_feed(&p, k.out.data ? k.out.data : "", k.out.len);
    tg_sse_finish(&p);
    tg_sse_free(&p);
    outcome o = {.calls = json_array(), .finish = json_null()};
    assemble(k.events, &o, w);
    check_outcome(c, &o, w);
    if (w->n)
        say_json(w, "events", k.events);
    outcome_free(&o);
    json_decref(k.events);
    tg_buf_free(&k.out);
}

/* --- bridged cases: the Messages and Responses APIs ------------------------- */

/* A bridged case's request goes through its API's bridge (as
 * proxy/bridges.c calls it, with what the dialect's target takes) and then
 * the request stages, and is judged as a request case; the provider's
 * answer or stream, when the case has one, goes back through the response
 * stages and the bridge, and what the agent gets is judged in its API's
 * shape (expect.reply). */
typedef struct bridged {
    bool messages; /* else the Responses API */
    tg_msg_bridge *mb;
    tg_resp_bridge *rb;
} bridged;

/* The case's `store` ({id: item or record}) answers item_reference and
 * previous_response_id, as the proxy's item store would. */
static json_t *case_store(void *ud, const char *id, tg_error *err)
{
    (void)err;
    return json_incref(json_object_get(ud, id));
}

static int bridge_in(bridged *g, const json_t *c, tg_dialect d, json_t **chat, tg_error *err)
{
    tg_bridge_opts o = {.file_parts = d == TG_D_OPENAI || d == TG_D_OPENAI_STRICT,
                        .cache_control = d == TG_D_ANTHROPIC};
    const json_t *input = json_object_get(c, "input");
    if (g->messages)
        return tg_messages_to_chat_opts(input, &o, chat, &g->mb, err);
    return tg_responses_to_chat_opts(input, &o, case_store, json_object_get(c, "store"), chat,
                                     &g->rb, err);
}

static const json_t *bridge_dropped(const bridged *g)
{
    return g->messages ? tg_msg_bridge_dropped_peek(g->mb) : tg_resp_bridge_dropped_peek(g->rb);
}

/* The tools the agent declared, as chat tools by name (what a call the
 * agent gets may name): Messages tools, Responses function and custom
 * tools and those inside a namespace. */
static void declared_names(const json_t *tools, json_t *out)
{
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (name)
            json_array_append_new(out, json_pack("{s:s,s:{s:s}}", "type", "function", "function",
                                                 "name", name));
        declared_names(json_object_get(t, "tools"), out);
    }
}

static const char *tg_str_or(const char *s) { return s ? s : ""; }

/* Is id of Anthropic's tool_use.id pattern, [A-Za-z0-9_-]+? */
static bool anthropic_id(const char *id)
{
    if (!id || !*id)
        return false;
    for (; *id; id++)
        if (!isalnum((unsigned char)*id) && *id != '_' && *id != '-')
            return false;
    return true;
}

static void add_call(outcome *o, const char *id, const char *name, const json_t *args)
{
    char *text = json_is_string(args) ? NULL : json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
    json_array_append_new(o->calls, json_pack("{s:s?,s:s,s:s?,s:s?}", "id", id, "type", "function",
                                              "name", name, "arguments",
                                              text ? text : json_string_value(args)));
    free(text);
}

/* A Message as the agent's outcome: its text, tool_use blocks as calls
 * (their ids of Anthropic's pattern), stop_reason tool_use when it has
 * calls. */
static void message_outcome(const json_t *msg, outcome *o, why *w)
{
    if (json_object_get(msg, "error") || strcmp(tg_str_or(json_string_value(json_object_get(msg, "type"))), "message")) {
        o->error = true;
        return;
    }
    tg_buf text = {0};
    bool any = false;
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(msg, "content"), i, b) {
        const char *type = json_string_value(json_object_get(b, "type"));
        if (type && !strcmp(type, "text")) {
            tg_buf_puts(&text, json_string_value(json_object_get(b, "text")));
            any = true;
        } else if (type && !strcmp(type, "tool_use")) {
            const char *id = json_string_value(json_object_get(b, "id"));
            if (!anthropic_id(id))
                say(w, "/content/%zu/id %s is not of tool_use.id's pattern", i, id ? id : "(none)");
            add_call(o, id, json_string_value(json_object_get(b, "name")),
                     json_object_get(b, "input"));
        }
    }
    o->content = any ? json_string(text.data ? text.data : "") : json_null();
    tg_buf_free(&text);
    o->finish = json_incref(json_object_get(msg, "stop_reason"));
    /* max_tokens too: Anthropic's own shape for a turn the limit cut in a
     * tool_use block ("an incomplete tool use block", stop_reason
     * max_tokens), which the agent retries with a higher limit */
    const char *stop = json_string_value(o->finish);
    if (json_array_size(o->calls) && (!stop || (strcmp(stop, "tool_use") && strcmp(stop, "max_tokens"))))
        say(w, "tool_use blocks, but stop_reason %s", stop ? stop : "(none)");
}

/* A Response as the agent's outcome: output_text parts, function_call and
 * custom_tool_call items as calls (a custom call's input as {"input"}),
 * the status as the finish. */
static void response_outcome(const json_t *resp, outcome *o, why *w)
{
    const char *status = json_string_value(json_object_get(resp, "status"));
    if (json_object_get(resp, "error") && !json_is_null(json_object_get(resp, "error")))
        o->error = true;
    if (!status || !strcmp(status, "failed"))
        o->error = true;
    tg_buf text = {0};
    bool any = false;
    size_t i, j;
    json_t *it, *part;
    json_array_foreach(json_object_get(resp, "output"), i, it) {
        const char *type = json_string_value(json_object_get(it, "type"));
        const char *call_id = json_string_value(json_object_get(it, "call_id"));
        if (!type)
            continue;
        if (!strcmp(type, "message")) {
            json_array_foreach(json_object_get(it, "content"), j, part) {
                const char *t = json_string_value(json_object_get(part, "text"));
                if (t) {
                    tg_buf_puts(&text, t);
                    any = true;
                }
            }
        } else if (!strcmp(type, "function_call") || !strcmp(type, "custom_tool_call")) {
            if (!call_id || !*call_id)
                say(w, "/output/%zu has no call_id", i);
            const char *name = json_string_value(json_object_get(it, "name"));
            if (!strcmp(type, "function_call")) {
                json_t *a = json_object_get(it, "arguments");
                if (!json_is_string(a))
                    say(w, "/output/%zu/arguments is not a string", i);
                add_call(o, call_id, name, a);
            } else {
                json_t *a = json_pack("{s:O?}", "input", json_object_get(it, "input"));
                add_call(o, call_id, name, a);
                json_decref(a);
            }
        }
    }
    o->content = any ? json_string(text.data ? text.data : "") : json_null();
    tg_buf_free(&text);
    o->finish = status ? json_string(status) : json_null();
}

/* Anthropic's event stream as the Message it builds, as the Anthropic
 * SDK's accumulator does, with the order checked on the way (message_start
 * first, blocks one at a time with dense indexes, deltas of the open
 * block's kind, message_delta then message_stop; or an error event last).
 * New reference; {"error"} for an error. */
static json_t *build_message(const json_t *events, why *w)
{
    json_t *msg = NULL;
    long open = -1;
    tg_buf args = {0};
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        if (!type)
            continue;
        if (!strcmp(type, "error")) {
            json_decref(msg);
            tg_buf_free(&args);
            if (i + 1 != json_array_size(events))
                say(w, "events after the error event");
            return json_pack("{s:O}", "error", json_object_get(ev, "error"));
        }
        if (!strcmp(type, "message_start")) {
            if (msg || i)
                say(w, "message_start is event %zu", i);
            json_decref(msg);
            msg = json_deep_copy(json_object_get(ev, "message"));
            continue;
        }
        if (!msg) {
            say(w, "%s before message_start", type);
            return json_object();
        }
        json_t *content = json_object_get(msg, "content");
        json_int_t ix = json_integer_value(json_object_get(ev, "index"));
        if (!strcmp(type, "content_block_start")) {
            if (open >= 0 || ix != (json_int_t)json_array_size(content))
                say(w, "content_block_start %lld with block %ld open, %zu before", (long long)ix,
                    open, json_array_size(content));
            json_array_append(content, json_object_get(ev, "content_block"));
            open = (long)json_array_size(content) - 1;
            tg_buf_reset(&args);
        } else if (!strcmp(type, "content_block_delta")) {
            json_t *blk = json_array_get(content, (size_t)(open < 0 ? 0 : open));
            const json_t *d = json_object_get(ev, "delta");
            const char *dk = json_string_value(json_object_get(d, "type"));
            const char *bk = json_string_value(json_object_get(blk, "type"));
            if (open < 0 || ix != open || !dk || !bk) {
                say(w, "a delta outside its block (index %lld, open %ld)", (long long)ix, open);
                continue;
            }
            const char *field = !strcmp(dk, "text_delta")       ? "text"
                                : !strcmp(dk, "thinking_delta") ? "thinking"
                                : !strcmp(dk, "signature_delta") ? "signature"
                                                                  : "partial_json";
            if (!strcmp(field, "partial_json") != !strcmp(bk, "tool_use"))
                say(w, "a %s in a %s block", dk, bk);
            const char *piece = json_string_value(json_object_get(d, field));
            if (!strcmp(field, "partial_json")) {
                tg_buf_puts(&args, piece ? piece : "");
            } else {
                tg_buf t = {0};
                tg_buf_puts(&t, json_string_value(json_object_get(blk, field)));
                tg_buf_puts(&t, piece ? piece : "");
                json_object_set_new(blk, field, json_string(t.data ? t.data : ""));
                tg_buf_free(&t);
            }
        } else if (!strcmp(type, "content_block_stop")) {
            json_t *blk = json_array_get(content, (size_t)(open < 0 ? 0 : open));
            if (open < 0 || ix != open)
                say(w, "content_block_stop %lld, block %ld open", (long long)ix, open);
            else if (!strcmp(tg_str_or(json_string_value(json_object_get(blk, "type"))), "tool_use")) {
                json_t *in = args.len ? json_loadb(args.data, args.len, JSON_DECODE_ANY, NULL)
                                      : json_object();
                json_object_set_new(blk, "input",
                                    in ? in : json_stringn(args.data, args.len));
            }
            open = -1;
        } else if (!strcmp(type, "message_delta")) {
            if (open >= 0)
                say(w, "message_delta with block %ld open", open);
            json_object_update(msg, json_object_get(ev, "delta"));
            /* the SDK's accumulator: the event's usage counts over the
             * message_start one, key by key */
            json_t *u = json_object_get(ev, "usage"), *mu = json_object_get(msg, "usage");
            if (json_is_object(u) && json_is_object(mu))
                json_object_update(mu, u);
            else if (json_is_object(u))
                json_object_set(msg, "usage", u);
        } else if (!strcmp(type, "message_stop")) {
            if (i + 1 != json_array_size(events))
                say(w, "events after message_stop");
        }
    }
    tg_buf_free(&args);
    return msg ? msg : json_object();
}

/* The Responses event stream's final Response (response.completed,
 * .incomplete or .failed), new reference; {"error"} for an error event. */
static json_t *build_response(const json_t *events, why *w)
{
    size_t i;
    json_t *ev, *last = NULL;
    json_array_foreach(events, i, ev) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        if (type && !strcmp(type, "error"))
            return json_pack("{s:s,s:O}", "status", "failed", "error", ev);
        if (type && (!strcmp(type, "response.completed") || !strcmp(type, "response.incomplete") ||
                     !strcmp(type, "response.failed")))
            last = json_object_get(ev, "response");
        else if (last)
            say(w, "%s after the response ended", type ? type : "(untyped)");
    }
    if (!last)
        say(w, "the stream never ends its response");
    return last ? json_incref(last) : json_pack("{s:s}", "status", "failed");
}

/* The provider's stream (the case's "events") through the stream repair
 * and the bridge: the events the agent gets, as JSON values. */
static json_t *bridged_stream(bridged *g, const json_t *c, tg_ctx *ctx, why *w)
{
    tg_buf chat = {0};
    if (relay_events(json_object_get(c, "events"), ctx, 0, &chat))
        say(w, "the stream asked for another upstream round");
    tg_buf api = {0};
    if (g->messages) {
        tg_messages_stream(g->mb, chat.data ? chat.data : "", chat.len, &api);
        tg_messages_stream_end(g->mb, &api);
    } else {
        tg_responses_stream(g->rb, chat.data ? chat.data : "", chat.len, &api);
        tg_responses_stream_end(g->rb, &api);
    }
    sink l = {.events = json_array()};
    tg_sse p;
    tg_sse_init(&p, to_list, NULL, &l);
    tg_sse_feed(&p, api.data ? api.data : "", api.len);
    tg_sse_finish(&p);
    tg_sse_free(&p);
    tg_buf_free(&chat);
    tg_buf_free(&api);
    return l.events;
}

/* The provider's whole answer (the case's "answer") through the response
 * stages and the bridge: the Message or Response the agent gets. */
static json_t *bridged_answer(bridged *g, const json_t *c, tg_ctx *ctx, why *w)
{
    json_t *chat = json_deep_copy(json_object_get(c, "answer"));
    json_t *next = NULL;
    if (tg_pipeline_response(chat, ctx, &next))
        say(w, "the answer asked for another upstream round");
    json_decref(next);
    if (json_is_object(json_object_get(chat, "error"))) {
        /* an answer the response stages made an error (no choices, a failed
         * generation): the proxy sends it with 502, in the API's error
         * shape (the Responses API's is OpenAI's own) */
        json_t *out = chat;
        if (g->messages) {
            char *s = json_dumps(chat, JSON_COMPACT);
            size_t n = 0;
            char *body = tg_messages_error_body(502, s, strlen(s), &n);
            out = body ? json_loadb(body, n, 0, NULL) : json_incref(chat);
            free(body);
            free(s);
            json_decref(chat);
        }
        return out;
    }
    json_t *out = g->messages ? tg_messages_answer(g->mb, chat) : tg_responses_answer(g->rb, chat);
    json_decref(chat);
    return out;
}

/* What the agent got, judged by expect.reply: the outcome's keys (calls,
 * finish_reason: stop_reason or the Response's status, content, error)
 * and pointers (has, absent, types) into the Message or Response. */
static void judge_reply(bridged *g, const json_t *c, json_t *reply, why *w)
{
    const json_t *want = json_object_get(json_object_get(c, "expect"), "reply");
    outcome o = {.calls = json_array(), .tools = json_array()};
    declared_names(json_object_get(json_object_get(c, "input"), "tools"), o.tools);
    if (!json_array_size(o.tools)) {
        json_decref(o.tools);
        o.tools = json_null();
    }
    if (g->messages)
        message_outcome(reply, &o, w);
    else
        response_outcome(reply, &o, w);
    json_t *as_case = json_pack("{s:O}", "expect", want ? want : json_object());
    check_outcome(as_case, &o, w);
    if (want)
        check_pointers(want, reply, w);
    json_decref(as_case);
    outcome_free(&o);
}

static void run_bridged(const json_t *c, tg_dialect d, bool messages, why *w)
{
    bridged g = {.messages = messages};
    tg_rules_set rules;
    tg_ctx ctx;
    if (!ctx_setup(c, d, &rules, &ctx, w))
        return;
    const json_t *expect = json_object_get(c, "expect");
    json_t *chat = NULL;
    tg_error err;
    memset(&err, 0, sizeof err);
    int rc = bridge_in(&g, c, d, &chat, &err);
    if (!rc) {
        ctx.stream = json_is_true(json_object_get(chat, "stream"));
        rc = tg_pipeline_request(chat, &ctx, &err);
    }
    judge_request(expect, d, rc ? &err : NULL, chat, w);
    const json_t *dropped = json_object_get(expect, "dropped");
    if (!rc && dropped) {
        char *text = tg_bridge_dropped_text(bridge_dropped(&g));
        if (!text || !json_is_string(dropped) || !strstr(text, json_string_value(dropped)))
            say(w, "dropped: %s, want it to hold %s", text ? text : "(nothing)",
                json_string_value(dropped));
        free(text);
    }
    json_t *reply = NULL;
    if (!rc && json_object_get(c, "events")) {
        json_t *events = bridged_stream(&g, c, &ctx, w);
        reply = messages ? build_message(events, w) : build_response(events, w);
        judge_reply(&g, c, reply, w);
        if (w->n)
            say_json(w, "events", events);
        json_decref(events);
    } else if (!rc && json_object_get(c, "answer")) {
        reply = bridged_answer(&g, c, &ctx, w);
        judge_reply(&g, c, reply, w);
        if (w->n)
            say_json(w, "reply", reply);
    }
    json_decref(reply);
    json_decref(chat);
    tg_msg_bridge_free(g.mb);
    tg_resp_bridge_free(g.rb);
    tg_ctx_clear(&ctx);
}

/* --- the corpus ---------------------------------------------------------------- */

static const char *const kinds[] = {"request", "answer", "stream", "messages", "responses", NULL};

/* A case inherits url, title and source from its file. Returns false when
 * the case itself is malformed (a corpus error, never a pass). */
static bool case_valid(const json_t *c, why *w)
{
    const char *dn = json_string_value(json_object_get(c, "dialect"));
    const char *kind = json_string_value(json_object_get(c, "kind"));
    const char *url = json_string_value(json_object_get(c, "url"));
    if (!dn || tg_dialect_from_name(dn) < 0)
        say(w, "corpus: unknown dialect %s", dn ? dn : "(none)");
    if (!kind || !in_list(kind, kinds))
        say(w, "corpus: kind must be request, answer, stream, messages or responses");
    if (!url || strncmp(url, "https://", 8))
        say(w, "corpus: no url");
    if (!json_object_get(c, "input") || !json_is_object(json_object_get(c, "expect")))
        say(w, "corpus: no input or expect");
    if (!json_object_get(c, "upstream_error") && !json_object_get(c, "failure"))
        say(w, "corpus: neither upstream_error nor failure");
    if (!json_object_get(c, "rule"))
        say(w, "corpus: no rule");
    return w->n == 0;
}

static int tap_n;
static int tap_failed;

static void run_case(json_t *c, const char *file, size_t idx)
{
    why w = {0};
    const char *id = json_string_value(json_object_get(c, "id"));
    char name[512];
    snprintf(name, sizeof name, "%s#%s", file, id ? id : "?");
    (void)idx;
    const char *only = getenv("TG_FIELD_ONLY");
    if (only && *only && !strstr(name, only))
        return;
    if (case_valid(c, &w)) {
        tg_dialect d = (tg_dialect)tg_dialect_from_name(json_string_value(json_object_get(c, "dialect")));
        const char *kind = json_string_value(json_object_get(c, "kind"));
        if (!strcmp(kind, "request"))
            run_request(c, d, &w);
        else if (!strcmp(kind, "answer"))
            run_answer(c, d, &w);
        else if (!strcmp(kind, "messages") || !strcmp(kind, "responses"))
            run_bridged(c, d, !strcmp(kind, "messages"), &w);
        else
            run_stream(c, d, &w);
    }
    const char *known = json_string_value(json_object_get(c, "known"));
    tap_n++;
    if (w.n && !known)
        tap_failed++;
    printf("%s %d - %s%s%s\n", w.n ? "not ok" : "ok", tap_n, name, known ? " # TODO " : "",
           known ? known : "");
    if (w.n) {
        printf("#   %s (rule %s)\n", json_string_value(json_object_get(c, "url")),
               json_string_value(json_object_get(c, "rule")));
        fputs(w.b.data, stdout);
    } else if (known) {
        printf("#   passes now: drop its known mark\n");
    }
    tg_buf_free(&w.b);
}

static void run_file(const char *dir, const char *file)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (!doc) {
        printf("not ok %d - %s: %s (line %d)\n", ++tap_n, file, je.text, je.line);
        tap_failed++;
        return;
    }
    json_t *cases = json_object_get(doc, "cases");
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        static const char *const inherit[] = {"url", "title", "source", "dialect", "tools", NULL};
        for (const char *const *k = inherit; *k; k++)
            if (!json_object_get(c, *k) && json_object_get(doc, *k))
                json_object_set(c, *k, json_object_get(doc, *k));
        run_case(c, file, i);
    }
    if (!json_array_size(cases)) {
        printf("not ok %d - %s: no cases\n", ++tap_n, file);
        tap_failed++;
    }
    json_decref(doc);
}

static int names_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
    const char *dir = getenv("TG_FIELD_DIR");
    if (!dir || !*dir)
        dir = "test/field";
    DIR *dh = opendir(dir);
    if (!dh) {
        printf("1..1\nnot ok 1 - cannot open %s\n", dir);
        return 1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(dh))) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".json"))
            continue;
        names = realloc(names, (n + 1) * sizeof *names);
        names[n++] = strdup(de->d_name);
    }
    closedir(dh);
    qsort(names, n, sizeof *names, names_cmp);
    for (size_t i = 0; i < n; i++) {
        run_file(dir, names[i]);
        free(names[i]);
    }
    free(names);
    printf("1..%d\n", tap_n);
    if (!tap_n) {
        printf("not ok 1 - no cases in %s\n", dir);
        return 1;
    }
    return tap_failed ? 1 : 0;
}
