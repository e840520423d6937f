/* stream_live.c -- live calls: with repair.stream_args on, a call of a
 * tool no rule needs whole goes to the agent as soon as it has a name, and
 * each argument fragment after it as it comes, while the arguments so far
 * are the start of one strict JSON object (json_prefix.c); from the first
 * byte that is not, the rest is held and repaired whole when the call ends
 * (repair_stream.c's design comment, "Live calls"). One call of a choice
 * is live at a time; what the choice says meanwhile waits behind it. */
#include "repair/stream_live.h"

#include "core/alloc.h"
#include "core/jsonfix.h"
#include "core/jsonio.h"
#include "repair/custom_calls.h"
#include "repair/repair_base.h"
#include "repair/repair_int.h"
#include "repair/repair_schema.h"
#include "sanitize/schema.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Is toolgate's repair of a whole call of upstream tool `name` the
 * identity, for arguments that are one strict object? Decided once per
 * tool and stream: the rewrite is the identity (its name unchanged, no
 * inverse argument mapping, not a custom tool) and neither R15 nor R29 can
 * apply to its schema. The last answer is kept beside the map, which a
 * stream of one tool (most) then never makes. */
bool tg_rs_tool_is_identity(tg_stream *s, const char *name)
{
    tg_ctx *ctx = s->ctx;
    if (!name)
        return false;
    if (s->live_name && !strcmp(s->live_name, name))
        return s->live_last;
    const json_t *known = json_object_get(s->live_tools, name);
    bool live = known ? json_is_true(known)
                      : !strcmp(tg_schema_agent_name(ctx, name), name) &&
                            tg_rr_tool_peek(ctx, name) &&
                            !json_object_get(ctx->arg_inverse, name) &&
                            !tg_rr_is_custom(ctx, name) &&
                            !tg_rr_schema_repairs(ctx, name);
    if (s->live_name) {
        if (!s->live_tools)
            s->live_tools = json_object();
        json_object_set_new(s->live_tools, s->live_name, json_boolean(s->live_last));
        free(s->live_name);
    }
    s->live_name = tg_strdup(name);
    s->live_last = live;
    return live;
}

/* Is a call of upstream tool `name` relayed live? With repair.stream_args,
 * a tool whose repair is the identity. */
bool tg_rs_tool_is_live(tg_stream *s, const char *name)
{
    return tg_rr_on(s->ctx, TG_RR_STREAM_ARGS) && tg_rs_tool_is_identity(s, name);
}

/* The arguments that came since the last relay and still keep them the
 * start of one object go out (with fields such as extra_content that came
 * beside them). */
void tg_rs_relay_live(tg_stream *s, schoice *c, scall *k, json_t *extra, json_t *events)
{
    size_t from = k->jp.pos, out = k->jp.safe;
    tg_jprefix_feed(&k->jp, k->args.data + from, k->args.len - from);
    size_t n = k->jp.safe - out;
    if (!n && !extra)
        return;
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer(k->out));
    if (extra)
        json_object_update(o, extra);
    if (n)
        json_object_set_new(o, "function",
                            json_pack("{s:s%}", "arguments", k->args.data + out, n));
    tg_rs_queue_delta(s, c, events, json_pack("{s:[o]}", "tool_calls", o), NULL);
}

/* A live call starts: index, id, type and name now, with the arguments
 * so far (R6: they may have come before the name). */
void tg_rs_open_live(tg_stream *s, schoice *c, scall *k, json_t *events)
{
    c->live_open = k - c->calls;
    s->live_open++;
    k->live = k->sent = true;
    k->out = (int)c->next_out++;
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer(k->out));
    if (k->extra)
        json_object_update(o, k->extra);
    json_object_set_new(o, "id", json_string(k->id ? k->id : ""));
    json_object_set_new(o, "type", json_string("function"));
    tg_rr_assign_id(s->ctx, o, c->seed, (size_t)k->out, k->name, "", c->ids);
    const char *id = json_string_value(json_object_get(o, "id"));
    k->agent_id = id ? tg_strdup(id) : NULL;
    tg_jprefix_feed(&k->jp, k->args.data, k->args.len);
    size_t n = k->jp.safe;
    json_object_set_new(o, "function", json_pack("{s:s, s:s%}", "name", k->name, "arguments",
                                                 k->args.data ? k->args.data : "", n));
    tg_rs_queue_delta(s, c, events, json_pack("{s:[o]}", "tool_calls", o), NULL);
}

static void queue_args(tg_stream *s, schoice *c, scall *k, const char *a, size_t n,
                       json_t *events)
{
    if (!n)
        return;
    json_t *o = json_pack("{s:i, s:{s:s%}}", "index", k->out, "function", "arguments", a, n);
    tg_rs_queue_delta(s, c, events, json_pack("{s:[o]}", "tool_calls", o), NULL);
}

/* R4/R20 after a live call: its object closed and more came. Objects
 * become calls of the same tool; anything else goes as it came. */
static void split_live(tg_stream *s, schoice *c, scall *k, json_t *events)
{
    const char *rest = k->args.data + k->jp.pos;
    size_t n = k->args.len - k->jp.pos;
    json_t *one = tg_json_load(rest, n, JSON_ALLOW_NUL, NULL);
    json_t *parts;
    if (json_is_object(one)) {
        parts = json_pack("[o]", one);
    } else {
        json_decref(one);
        parts = tg_json_split_objects(rest, n);
    }
    if (!parts && tg_rr_on(s->ctx, TG_RR_JSON_FIX) && !memchr(rest, '{', n)) {
        /* stray bytes after the whole object ("{...}}", Cogtrix#2289):
         * what went out is the call; they go */
        tg_rr_note_other(s->ctx, "json_fix", k->name, NULL, NULL);
        return;
    }
    if (!parts || !tg_rr_on(s->ctx, TG_RR_SPLIT)) {
        json_decref(parts);
        tg_rr_fail(s->ctx, "json_fix_failed", k->name, NULL);
        queue_args(s, c, k, rest, n, events);
        return;
    }
    tg_rr_note(s->ctx, TG_R20, k->name, NULL, parts);
    json_t *calls = json_array();
    size_t i;
    json_t *o;
    json_array_foreach(parts, i, o) {
        char *t = tg_json_dumps(o);
        json_array_append_new(calls, json_pack("{s:s, s:{s:s, s:s}}", "type", "function",
                                               "function", "name", k->name, "arguments", t));
        free(t);
    }
    json_decref(parts);
    tg_rs_queue_calls(s, c, calls, events);
}

/* Where the repair's compact text r continues what was sent (p, the start
 * of an object as the provider wrote it): the length of r's part that p
 * already says, whitespace outside strings aside, or (size_t)-1. */
static size_t continues(const char *p, size_t n, const char *r, size_t rn)
{
    size_t j = 0;
    bool str = false, esc = false;
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        if (!str && (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'))
            continue;  /* the compact text has none there */
        if (j >= rn || r[j] != ch)
            return (size_t)-1;
        j++;
        if (esc)
            esc = false;
        else if (str && ch == '\\')
            esc = true;
        else if (ch == '"')
            str = !str;
    }
    return j;
}

/* Nothing to do when a live call's arguments were one whole object; else
 * what the agent lacks: "{}" for none (R14), the rest of the
 * whole-value repair where it continues what was sent, or the held bytes
 * as they came (counted as a failure). */
static void end_live(tg_stream *s, schoice *c, scall *k, json_t *events)
{
    if (k->jp.pos == k->args.len && tg_jprefix_complete(&k->jp))
        return;
    if (tg_jprefix_complete(&k->jp)) {
        split_live(s, c, k, events);
        return;
    }
    size_t sent = k->jp.safe;
    bool blank = true;
    for (size_t i = 0; i < k->args.len && blank; i++)
        blank = isspace((unsigned char)k->args.data[i]);
    if (blank) {
        if (tg_rr_on(s->ctx, TG_RR_ARGS)) {
            tg_rr_note(s->ctx, TG_R14, k->name, NULL, NULL);
            queue_args(s, c, k, "{}", 2, events);
        }
        return;
    }
    /* the held path's repair, on a copy: the agent's id is already given */
    json_t *one = json_pack("[o]", tg_rs_call_json(k));
    json_object_set_new(json_array_get(one, 0), "id", json_string(k->agent_id ? k->agent_id : "x"));
    json_t *scratch = json_object();
    tg_rr_fix_calls(s->ctx, one, c->seed, (size_t)k->out, scratch);
    json_decref(scratch);
    json_t *a = json_object_get(json_object_get(json_array_get(one, 0), "function"), "arguments");
    const char *r = json_string_value(a);
    size_t rn = json_string_length(a);
    size_t at = continues(k->args.data, sent, r, rn);
    if (r && at != (size_t)-1) {
        queue_args(s, c, k, r + at, rn - at, events);
    } else {
        tg_rr_fail(s->ctx, "json_fix_failed", k->name, a);
        queue_args(s, c, k, k->args.data + sent, k->args.len - sent, events);
    }
    json_decref(one);
}

/* A live call has ended: what the agent lacks of it, then the output held
 * behind it. */
void tg_rs_close_live(tg_stream *s, schoice *c, scall *k, json_t *events)
{
    if (k->closed)
        return;
    k->closed = true;
    end_live(s, c, k, events);
    c->live_open = -1;
    s->live_open--;
    json_array_extend(events, c->after);
    json_array_clear(c->after);
}
