/* discovery.c -- lazy tool discovery (issue #6).
 *
 * A request with a large tool list goes upstream with only its core tools
 * plus three meta-tools: search_tools (BM25F over the catalog, index.c;
 * several phrasings fused by reciprocal rank, a group filter, groups.c),
 * get_tool_schema and call_tool. toolgate answers the first two itself in
 * inner rounds the agent never sees; call_tool, or a catalog tool called by
 * its real name, reaches the agent as an ordinary call of that tool.
 *
 * Stateless: everything comes from the request. What is derived from the
 * tool list alone (catalog, index, the upstream tools array) is one
 * immutable json object, "the derivation", cached per worker under
 * (kind "discovery", hash of the agent's tools and the route's rules). The
 * upstream tools array is therefore the same bytes on every turn, and the
 * agent's history is rewritten so that the calls it made of hidden tools
 * read as the call_tool calls the model made (see rewrite_history).
 *
 * Mixed turns: when one response calls meta-tools and real tools, the real
 * calls go to the agent at once and the meta calls are dropped. The model
 * has already decided what to do; holding its real calls back while we run
 * more rounds would need state across requests or risk duplicate calls. If
 * it still needs the search, it asks again on the next turn.
 *
 * ctx->disc_state (per request):
 *   {"d": derivation, "rounds": n, "usage": {...}, "note": "...", "forced": name}
 *
 * Three files, each calling only the ones before it: catalog.c builds the
 * derivation (catalog.h), answer.c answers the meta-tools (answer.h), this
 * file is the request stage (the history rewritten) and the rounds (a
 * response's calls classified, answered, sent up again).
 */
#include "discovery/discovery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx.h"
#include "core/jsonio.h"
#include "discovery/answer.h"
#include "discovery/catalog.h"
#include "discovery/embed.h"
#include "discovery/hints.h"
#include "repair/repair.h"
#include "sanitize/hygiene.h"

/* ---- small helpers --------------------------------------------------- */

static json_t *state_d_peek(const tg_ctx *ctx)
{
    return json_object_get(ctx->disc_state, "d");
}

static int is_exposed(const tg_ctx *ctx, json_t *d, const char *upstream)
{
    const char *forced = json_string_value(json_object_get(ctx->disc_state, "forced"));
    return json_object_get(json_object_get(d, "exposed"), upstream) != NULL ||
           (forced && strcmp(forced, upstream) == 0);
}

/* ---- history: calls of hidden tools read as call_tool calls ---------- */

static json_t *call_tool_arguments(json_t *d, const char *upstream, const char *args_text)
{
    json_t *args = args_text ? tg_json_load(args_text, strlen(args_text), JSON_DECODE_ANY, NULL) : NULL;
    json_t *wrapped = json_object();
    json_object_set_new(wrapped, "name", json_string(upstream));
    if (json_is_true(json_object_get(d, "args_string")))
        json_object_set_new(wrapped, "arguments", json_string(args_text ? args_text : "{}"));
    else
        json_object_set_new(wrapped, "arguments",
                            json_is_object(args) ? json_incref(args) : json_object());
    json_decref(args);
    char *s = tg_json_dumps(wrapped);
    json_decref(wrapped);
    json_t *r = json_string(s ? s : "{}");
    free(s);
    return r;
}

static void rewrite_history(json_t *body, const tg_ctx *ctx, json_t *d)
{
    json_t *msgs = json_object_get(body, "messages");
    const char *call = tg_dd_meta_name(d, "call");
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *calls = json_object_get(json_array_get(msgs, i), "tool_calls");
        for (size_t k = 0; k < json_array_size(calls); k++) {
            json_t *c = json_array_get(calls, k);
            json_t *fn = json_object_get(c, "function");
            long at = tg_dd_lookup(d, json_string_value(json_object_get(fn, "name")));
            if (at < 0 || is_exposed(ctx, d, tg_dd_up_name(d, at)))
                continue;
            /* What else the call carries went through the route's hygiene
             * already and is the provider's (Gemini 3's thought signature,
             * or fill_signatures' stand-in): it stays on the call the model
             * made, which Gemini 3 refuses without it (R19). */
            json_t *nc = json_deep_copy(c);
            json_object_del(nc, "function");
            json_object_set_new(nc, "type", json_string("function"));
            json_object_set_new(
                nc, "function",
                json_pack("{ssso}", "name", call, "arguments",
                          call_tool_arguments(d, tg_dd_up_name(d, at),
                                              json_string_value(json_object_get(fn, "arguments")))));
            tg_explain_add(ctx->explain, "discovery", json_string_value(json_object_get(fn, "name")),
                           NULL, "history_call_tool", fn, json_object_get(nc, "function"));
            json_array_set_new(calls, k, nc);
        }
    }
}

/* tool_choice naming a hidden tool: expose that one tool for this turn, at
 * the end so that the common prefix of the tools array stays the same. */
static void honour_tool_choice(json_t *body, tg_ctx *ctx, json_t *d, json_t *tools)
{
    json_t *tc = json_object_get(body, "tool_choice");
    const char *n = json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
    long at = tg_dd_lookup(d, n);
    if (at < 0 || is_exposed(ctx, d, tg_dd_up_name(d, at)))
        return;
    json_object_set_new(ctx->disc_state, "forced", json_string(tg_dd_up_name(d, at)));
    json_array_append(tools, tg_dd_sanitized_peek(d, at));
}

/* Successor hints (hints.c) beside the results of hidden tools, before the
 * history's calls become call_tool calls; the tools the model reads of for
 * the first time this turn are kept to see whether it calls one next. */
static void note_hints(json_t *body, tg_ctx *ctx, json_t *d)
{
    json_t *fresh = tg_disc_hints_add(body, d, ctx->cache);
    if (json_array_size(fresh)) {
        json_object_set(ctx->disc_state, "hinted", fresh);
        ctx->stats.hints_given++;
    }
    json_decref(fresh);
}

/* The turn ends with these calls (real ones, and call_tool's unwrapped):
 * one of them is a tool hinted this turn. */
static void count_hint_followed(tg_ctx *ctx, json_t *d, json_t *calls, json_t *converted)
{
    json_t *hinted = json_object_get(ctx->disc_state, "hinted");
    if (hinted && (tg_disc_hints_followed(d, hinted, calls) ||
                   tg_disc_hints_followed(d, hinted, converted)))
        ctx->stats.hints_followed = 1;  /* once a turn, however many calls */
}

static int should_collapse(const tg_disc_conf *dc, size_t ntools)
{
    if (!dc || dc->mode == TG_DISC_OFF || ntools == 0)
        return 0;
    return dc->mode == TG_DISC_ON || (long)ntools > (long)dc->threshold;
}

int tg_discovery_stage(json_t *body, tg_ctx *ctx, tg_error *err)
{
    (void)err;
    json_t *tools = json_object_get(body, "tools");
    json_t *originals = ctx->tools ? ctx->tools : tools;
    if (!json_is_array(tools))
        return 0;
    size_t n = json_array_size(tools);
    ctx->stats.tools_in = (unsigned)json_array_size(originals);
    ctx->stats.tools_out = (unsigned)n;
    if (!should_collapse(ctx->disc, n))
        return 0;  /* bytes are measured where they are already at hand */

    json_t *d = tg_dd_derivation_for(ctx, tools, originals);
    size_t bytes_in = (size_t)json_integer_value(json_object_get(d, "bytes_in"));
    if (json_object_size(json_object_get(d, "exposed")) >= n) {
        json_decref(d);  /* every tool is core: nothing to hide */
        ctx->stats.tools_bytes_in = bytes_in;
        ctx->stats.tools_bytes_out = json_dumpb(tools, NULL, 0, JSON_COMPACT);
        return 0;
    }

    json_decref(ctx->disc_state);
    ctx->disc_state = json_pack("{sosi}", "d", d, "rounds", 0);
    json_t *up = json_copy(json_object_get(d, "up"));  /* shallow: tools are shared */
    honour_tool_choice(body, ctx, d, up);
    if (ctx->disc->hints)
        note_hints(body, ctx, d);
    rewrite_history(body, ctx, d);
    json_object_set_new(body, "tools", up);
    json_decref(ctx->request);
    ctx->request = json_incref(body);

    ctx->stats.tools_out = (unsigned)json_array_size(up);
    ctx->stats.tools_bytes_in = bytes_in;
    ctx->stats.tools_bytes_out = json_dumpb(up, NULL, 0, JSON_COMPACT);
    tg_explain_add(ctx->explain, "discovery", NULL, "/tools", "collapse", NULL, NULL);
    return 0;
}

/* ---- the rounds ------------------------------------------------------ */

/* The upstream id of a call whose id the repair stage mapped to the agent's. */
static json_t *upstream_id(const tg_ctx *ctx, json_t *id, bool agent_ids)
{
    const char *k;
    json_t *v;
    if (agent_ids && json_is_string(id))
        json_object_foreach(ctx->id_map, k, v)
            if (json_equal(v, id))
                return json_string(k);
    return json_incref(id);
}

/* Next round: the upstream body so far + the assistant's meta calls + our
 * answers. ctx->request moves on to it, so rounds accumulate. */
static json_t *next_round(tg_ctx *ctx, json_t *d, json_t *msg, json_t *answerable, bool agent_ids)
{
    json_t *next = json_copy(ctx->request);
    json_t *msgs = json_copy(json_object_get(ctx->request, "messages"));
    json_t *calls = json_array(), *results = json_array();
    int round = (int)json_integer_value(json_object_get(ctx->disc_state, "rounds"));
    if (!msgs)
        msgs = json_array();
    for (size_t i = 0; i < json_array_size(answerable); i++) {
        json_t *c = json_array_get(answerable, i);
        enum call_kind k = tg_dd_kind_of(d, json_string_value(json_object_get(
                                          json_object_get(c, "function"), "name")));
        json_t *id = upstream_id(ctx, json_object_get(c, "id"), agent_ids);
        if (!json_string_length(id)) {
            char seed[64];
            snprintf(seed, sizeof seed, "round%d", round);
            json_decref(id);
            id = tg_dd_make_id(seed, i);
        }
        /* the call as the provider made it, opaque fields and all
         * (Gemini 3's thought signature, R18/R19), with its upstream id */
        json_t *call = json_deep_copy(c);
        json_object_del(call, "index");
        json_object_set(call, "id", id);
        json_object_set_new(call, "type", json_string("function"));
        json_array_append_new(calls, call);
        json_t *ans = tg_dd_answer_call(ctx, d, c, k);
        char *text = tg_json_dumps(ans);
        json_array_append_new(results, json_pack("{sssOss}", "role", "tool", "tool_call_id", id,
                                                 "content", text ? text : "{}"));
        free(text);
        json_decref(ans);
        json_decref(id);
    }
    /* no "content": null: some dialects reject null-valued keys, and every
     * dialect takes an assistant turn of tool calls without content */
    json_t *content = json_object_get(msg, "content");
    json_t *asst = json_pack("{ss}", "role", "assistant");
    if (json_string_length(content))
        json_object_set(asst, "content", content);
    /* the turn's reasoning as it came: DeepSeek's thinking mode refuses a
     * tool-call turn without it (rule 52); hygiene drops it where the
     * dialect does not take it */
    static const char *const opaque[] = {"reasoning_content", "reasoning", "reasoning_details", NULL};
    for (const char *const *k = opaque; *k; k++) {
        json_t *v = json_object_get(msg, *k);
        if (v && !json_is_null(v))
            json_object_set(asst, *k, v);
    }
    json_object_set_new(asst, "tool_calls", calls);
    tg_hygiene_replayed(asst, ctx);
    json_array_append_new(msgs, asst);
    for (size_t i = 0; i < json_array_size(results); i++)
        json_array_append(msgs, json_array_get(results, i));
    json_decref(results);
    json_object_set_new(next, "messages", msgs);
    json_object_set_new(ctx->disc_state, "rounds", json_integer(round + 1));
    ctx->stats.discovery_rounds++;
    json_decref(ctx->request);
    ctx->request = json_incref(next);
    return next;
}

typedef struct verdict {
    json_t *out_calls;   /* real calls for the agent, as they came */
    json_t *converted;   /* call_tool calls turned into real calls */
    json_t *answerable;  /* meta/unknown calls toolgate answers */
} verdict;

static void classify(tg_ctx *ctx, json_t *d, json_t *msg, verdict *v)
{
    json_t *calls = json_object_get(msg, "tool_calls");
    v->out_calls = json_array();
    v->converted = json_array();
    v->answerable = json_array();
    for (size_t i = 0; i < json_array_size(calls); i++) {
        json_t *c = json_array_get(calls, i), *err = NULL, *conv;
        enum call_kind k = tg_dd_kind_of(d, json_string_value(json_object_get(
                                          json_object_get(c, "function"), "name")));
        if (k == K_REAL) {
            json_array_append(v->out_calls, c);
        } else if (k == K_CALL) {
            conv = tg_dd_convert_call_tool(ctx, d, c, &err);
            if (conv) {
                json_array_append_new(v->converted, conv);
            } else {
                json_decref(err);
                json_array_append(v->answerable, c);
            }
        } else if (k == K_UNKNOWN && (conv = tg_dd_convert_loose_call(ctx, d, c))) {
            json_array_append_new(v->converted, conv);
        } else {
            json_array_append(v->answerable, c);
        }
    }
}

static void verdict_free(verdict *v)
{
    json_decref(v->out_calls);
    json_decref(v->converted);
    json_decref(v->answerable);
}

/* Non-streamed, the repair stage ran before us: converted calls get the
 * same treatment (agent name, arguments checked against the real schema,
 * ids) through a one-choice answer of their own. New reference. */
static json_t *repaired(tg_ctx *ctx, json_t *resp, json_t *calls)
{
    const char *rid = json_string_value(json_object_get(resp, "id"));
    json_t *one = json_pack("{sss[{sis{sssnsO}ss}]}", "id", rid ? rid : "discovery", "choices",
                            "index", 0, "message", "role", "assistant", "content", "tool_calls",
                            calls, "finish_reason", "tool_calls");
    if (!one)
        return json_incref(calls);
    tg_repair_response(one, ctx);
    json_t *msg = json_object_get(json_array_get(json_object_get(one, "choices"), 0), "message");
    json_t *out = json_object_get(msg, "tool_calls");
    json_t *r = json_incref(json_is_array(out) ? out : calls);
    json_decref(one);
    return r;
}

static void add_usage(tg_ctx *ctx, json_t *usage)
{
    static const char *const keys[] = { "prompt_tokens", "completion_tokens", "total_tokens" };
    if (!json_is_object(usage))
        return;
    json_t *sum = json_object_get(ctx->disc_state, "usage");
    if (!sum) {
        sum = json_object();
        json_object_set_new(ctx->disc_state, "usage", sum);
    }
    for (int i = 0; i < 3; i++)
        json_object_set_new(sum, keys[i],
                            json_integer(json_integer_value(json_object_get(sum, keys[i])) +
                                         json_integer_value(json_object_get(usage, keys[i]))));
}

static void set_note(tg_ctx *ctx, int max_rounds)
{
    char note[256];
    snprintf(note, sizeof note,
             "(toolgate: tool discovery stopped after %d rounds without choosing a tool. "
             "Try naming the task more precisely.)",
             max_rounds);
    json_object_set_new(ctx->disc_state, "note", json_string(note));
}

static int active(const tg_ctx *ctx)
{
    return ctx && state_d_peek(ctx) != NULL;
}

int tg_discovery_intercept(json_t *resp, tg_ctx *ctx, json_t **next_body)
{
    *next_body = NULL;
    if (!active(ctx))
        return 0;
    json_t *d = state_d_peek(ctx);
    json_t *choice = json_array_get(json_object_get(resp, "choices"), 0);
    json_t *msg = json_object_get(choice, "message");
    add_usage(ctx, json_object_get(resp, "usage"));
    if (!json_is_object(msg))
        return 0;

    verdict v;
    classify(ctx, d, msg, &v);
    int rounds = (int)json_integer_value(json_object_get(ctx->disc_state, "rounds"));
    int another = !json_array_size(v.out_calls) && !json_array_size(v.converted) &&
                  json_array_size(v.answerable);
    if (another && rounds < ctx->disc->max_rounds) {
        *next_body = next_round(ctx, d, msg, v.answerable, true);
        verdict_free(&v);
        return 1;
    }

    /* the turn ends here: the agent gets its real calls, or text */
    count_hint_followed(ctx, d, v.out_calls, v.converted);
    if (json_array_size(v.converted)) {
        json_t *fixed = repaired(ctx, resp, v.converted);
        json_array_extend(v.out_calls, fixed);
        json_decref(fixed);
    }
    if (json_array_size(v.converted) || json_array_size(v.answerable)) {
        if (json_array_size(v.out_calls)) {
            json_object_set(msg, "tool_calls", v.out_calls);
        } else {
            json_object_del(msg, "tool_calls");
            if (json_is_string(json_object_get(choice, "finish_reason")) &&
                strcmp(json_string_value(json_object_get(choice, "finish_reason")), "tool_calls") == 0)
                json_object_set_new(choice, "finish_reason", json_string("stop"));
        }
    }
    if (another) {
        set_note(ctx, ctx->disc->max_rounds);
        if (!json_string_length(json_object_get(msg, "content")))
            json_object_set(msg, "content", json_object_get(ctx->disc_state, "note"));
    }
    json_t *sum = json_object_get(ctx->disc_state, "usage");
    if (sum && rounds > 0) {  /* the last round's usage, with the totals of all */
        json_t *u = json_object_get(resp, "usage");
        u = json_is_object(u) ? json_deep_copy(u) : json_object();
        json_object_update(u, sum);
        json_object_set_new(resp, "usage", u);
    }
    verdict_free(&v);
    return 0;
}

bool tg_discovery_is_meta(const tg_ctx *ctx, const char *upstream_name)
{
    if (!active(ctx))
        return false;
    return tg_dd_kind_of(state_d_peek(ctx), upstream_name) != K_REAL;
}

void tg_discovery_saw_call(tg_ctx *ctx, const char *upstream_name)
{
    if (!active(ctx) || !json_object_get(ctx->disc_state, "hinted"))
        return;
    json_t *one = json_pack("[{s{ss}}]", "function", "name", upstream_name);
    count_hint_followed(ctx, state_d_peek(ctx), one, NULL);
    json_decref(one);
}

int tg_discovery_stream_round(tg_ctx *ctx, json_t *assistant_msg, json_t **emit,
                              json_t **next_body)
{
    *emit = NULL;
    *next_body = NULL;
    if (!active(ctx) || !json_is_object(assistant_msg))
        return 0;
    json_t *d = state_d_peek(ctx);
    verdict v;
    classify(ctx, d, assistant_msg, &v);
    int rounds = (int)json_integer_value(json_object_get(ctx->disc_state, "rounds"));
    int another = !json_array_size(v.out_calls) && !json_array_size(v.converted) &&
                  json_array_size(v.answerable);
    int r = 0;
    if (another && rounds < ctx->disc->max_rounds) {
        *next_body = next_round(ctx, d, assistant_msg, v.answerable, false);
        r = 1;
    } else {
        count_hint_followed(ctx, d, v.out_calls, v.converted);
        if (another)
            set_note(ctx, ctx->disc->max_rounds);
        if (json_array_size(v.converted))
            *emit = json_incref(v.converted);
    }
    verdict_free(&v);
    return r;
}

const char *tg_discovery_final_note(const tg_ctx *ctx)
{
    return ctx ? json_string_value(json_object_get(ctx->disc_state, "note")) : NULL;
}

json_t *tg_discovery_search(const tg_ctx *ctx, const char *query, int limit)
{
    if (!active(ctx))
        return NULL;
    json_t *args = json_pack("{sssI}", "query", query ? query : "", "limit", (json_int_t)limit);
    json_t *r = tg_dd_search_answer(ctx, state_d_peek(ctx), args);
    json_decref(args);
    return r;
}

json_t *tg_discovery_search_args(const tg_ctx *ctx, json_t *args)
{
    return active(ctx) ? tg_dd_search_answer(ctx, state_d_peek(ctx), args) : NULL;
}

json_t *tg_discovery_search_texts(const tg_ctx *ctx, json_t *completion)
{
    json_t *out = json_array(), *d = state_d_peek(ctx);
    json_t *msg = json_object_get(json_array_get(json_object_get(completion, "choices"), 0),
                                  "message");
    json_t *calls = json_object_get(msg, "tool_calls"), *c;
    size_t i;
    if (!d)
        return out;
    json_array_foreach(calls, i, c) {
        const char *name = json_string_value(json_object_get(json_object_get(c, "function"),
                                                             "name"));
        if (tg_dd_kind_of(d, name) != K_SEARCH)
            continue;
        json_t *args = tg_dd_meta_parse(c, "search");
        const char *q[QUERIES_MAX];
        size_t n = args ? tg_dd_collect_queries(args, q) : 0;
        json_t *texts = tg_disc_embed_query_texts(q, n);
        json_array_extend(out, texts);
        json_decref(texts);
        json_decref(args);
    }
    return out;
}
