/* hygiene_history.c -- the message-hygiene stage on the history as a
 * whole: tool calls paired with their answers (rule 6: ids made, open calls
 * closed with a stated "no result", orphan answers turned into user turns,
 * legacy function turns into tool turns), then the walk over messages[]
 * that cleans each one (hygiene_message.c) and keeps the role order a
 * target demands (system turns first, one system turn, Mistral's bridge
 * between a tool and a user turn). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/bridge.h"
#include "core/alloc.h"
#include "core/ctx.h"
#include "core/jsonio.h"
#include "sanitize/hygiene_history.h"
#include "sanitize/hygiene_message.h"

/* What Mistral's role order needs between a tool result and a user turn
 * (section 6, Mistral): the shortest assistant turn that says nothing new. */
static const char bridge_text[] = "Done.";

/* ---- tool-call pairing (rule 6) and legacy functions ------------------- */

static const char no_result_text[] = "No result: this tool call was not answered.";

/* An id for a call that came without one: a pure function of the call's
 * place in the history, so the next turn makes the same one. */
static json_t *made_call_id(size_t msg, size_t call)
{
    char id[48];
    snprintf(id, sizeof id, "call_%zu_%zu", msg, call);
    return json_string(id);
}

/* A legacy assistant turn {function_call: {name, arguments}} as the
 * tool_calls turn every current API reads. */
static void legacy_call_to_tool_calls(walk *w, json_t *msg, size_t i)
{
    json_t *fc = tg_json_get(msg, "function_call");
    if (!json_is_object(fc) || tg_json_get(msg, "tool_calls"))
        return;
    json_t *call = json_pack("{s:o, s:s, s:O}", "id", made_call_id(i, 0), "type", "function",
                             "function", fc);
    rebuild_key(w, msg, "tool_calls", json_pack("[o]", call), "legacy-function-call",
                "rule 43");
    json_object_del(msg, "function_call");
}

/* The index in open (a JSON array of [id, name, agent id]) of the call a
 * tool answer with this id and name answers, or -1. An id matches the
 * call's id, else the id the agent gave a call that rule 73 renamed. An
 * answer with no id takes the first open call of its name, else the first
 * open call. */
static long open_call(json_t *open, const char *id, const char *name)
{
    size_t k;
    json_t *e;
    if (id) {
        json_array_foreach(open, k, e)
            if (!strcmp(json_string_value(json_array_get(e, 0)), id))
                return (long)k;
        json_array_foreach(open, k, e) {
            const char *agent = json_string_value(json_array_get(e, 2));
            if (agent && !strcmp(agent, id))
                return (long)k;
        }
        return -1;
    }
    json_array_foreach(open, k, e) {
        const char *open_name = json_string_value(json_array_get(e, 1));
        if (name && open_name && !strcmp(open_name, name))
            return (long)k;
    }
    return json_array_size(open) ? 0 : -1;
}

/* Answers every call still open with a stated non-result. */
static void close_open_calls(walk *w, json_t *out, json_t *open)
{
    size_t k;
    json_t *e;
    json_array_foreach(open, k, e) {
        json_t *answer = json_pack("{s:s, s:O, s:s}", "role", "tool", "tool_call_id",
                                   json_array_get(e, 0), "content", no_result_text);
        note(w, w->ptr.s, "unanswered-call", "rule 6", NULL, answer);
        json_array_append_new(out, answer);
    }
    json_array_clear(open);
}

/* A tool answer that answers no open call, as a user turn that says whose
 * result it is; its content is kept as it was. */
static void orphan_to_user(walk *w, json_t *msg)
{
    const char *id = json_string_value(tg_json_get(msg, "tool_call_id"));
    const char *name = json_string_value(tg_json_get(msg, "name"));
    char head[160];
    snprintf(head, sizeof head, "Result of an earlier tool call (%s%s%.64s):", name ? name : "",
             name ? ", id " : "id ", id ? id : "unknown");
    json_t *before = json_deep_copy(msg);
    json_t *c = tg_json_get(msg, "content");
    json_t *now;
    if (json_is_array(c)) {
        now = json_pack("[{s:s, s:s}]", "type", "text", "text", head);
        json_array_extend(now, c);
    } else {
        tg_buf b = {0};
        tg_buf_puts(&b, head);
        if (json_is_string(c) && json_string_length(c)) {
            tg_buf_puts(&b, "\n");
            tg_buf_append(&b, json_string_value(c), json_string_length(c));
        }
        now = json_stringn(b.data ? b.data : "", b.len);
        tg_buf_free(&b);
    }
    json_object_set_new(msg, "content", now);
    json_object_set_new(msg, "role", json_string("user"));
    json_object_del(msg, "tool_call_id");
    json_object_del(msg, "name");
    note(w, w->ptr.s, "orphan-tool-answer", "rule 6", before, msg);
    json_decref(before);
}

/* Rule 71: an id the history already used (an agent that numbers calls
 * per turn, call_0 every time, Switchyard#502; or two calls of one turn
 * under one id, claude-code#20901) gets the call's place in the history
 * as a suffix, the same on every later turn; Anthropic refuses the
 * repeat ("tool_use ids must be unique"), and rule 6 cannot pair it. */
static void unique_call_id(walk *w, json_t *call, size_t i, size_t j, json_t *seen)
{
    const char *id = json_string_value(tg_json_get(call, "id"));
    if (!json_object_get(seen, id)) {
        json_object_set_new(seen, id, json_true());
        return;
    }
    char made[160];
    for (unsigned salt = 0;; salt++) {
        if (salt)
            snprintf(made, sizeof made, "%.100s_%zu_%zu_%u", id, i, j, salt);
        else
            snprintf(made, sizeof made, "%.100s_%zu_%zu", id, i, j);
        if (!json_object_get(seen, made))
            break;
    }
    json_object_set_new(seen, made, json_true());
    size_t mark = jp_key(&w->ptr, "tool_calls");
    jp_idx(&w->ptr, j);
    rebuild_key(w, call, "id", json_string(made), "repeated-call-id", "rule 73");
    jp_pop(&w->ptr, mark);
}

/* Gives the calls of an assistant turn ids where they have none, unique
 * ones where they repeat (rule 73), and opens them (after answering what
 * was still open). */
static void open_calls(walk *w, json_t *msg, size_t i, json_t *out, json_t *open, json_t *seen)
{
    close_open_calls(w, out, open);
    json_t *calls = tg_json_get(msg, "tool_calls");
    size_t j;
    json_t *call;
    json_array_foreach(calls, j, call) {
        if (!json_is_object(call))
            continue;
        json_t *id = tg_json_get(call, "id");
        if (!json_is_string(id) || !json_string_length(id)) {
            size_t mark = jp_key(&w->ptr, "tool_calls");
            jp_idx(&w->ptr, j);
            rebuild_key(w, call, "id", made_call_id(i, j), "missing-call-id", "rule 6");
            jp_pop(&w->ptr, mark);
        }
        json_t *agent = json_incref(tg_json_get(call, "id"));
        unique_call_id(w, call, i, j, seen);
        id = tg_json_get(call, "id");
        json_t *name = tg_json_get(tg_json_get(call, "function"), "name");
        json_array_append_new(open, json_pack("[O,O,o]", id, json_is_string(name) ? name : json_null(),
                                              json_equal(agent, id) ? json_null() : json_incref(agent)));
        json_decref(agent);
    }
}

/* Takes a tool (or legacy "function") answer: true when it answers an open
 * call, which it then closes; it gets that call's id if it had none. */
static bool answer_call(walk *w, json_t *msg, json_t *open)
{
    json_t *idv = tg_json_get(msg, "tool_call_id");
    const char *id = json_is_string(idv) && json_string_length(idv) ? json_string_value(idv) : NULL;
    long k = open_call(open, id, json_string_value(tg_json_get(msg, "name")));
    if (k < 0)
        return false;
    const char *call_id = json_string_value(json_array_get(json_array_get(open, (size_t)k), 0));
    if (!id)
        rebuild_key(w, msg, "tool_call_id", json_string(call_id), "missing-tool-call-id", "rule 6");
    else if (strcmp(id, call_id))  /* its call's id was made unique (rule 73) */
        rebuild_key(w, msg, "tool_call_id", json_string(call_id), "repeated-call-id", "rule 73");
    json_array_remove(open, (size_t)k);
    return true;
}

/* A history with no call, no answer and no turn of an unknown role (the
 * legacy "function" answer among them) has nothing to pair: the pass
 * below would leave it as it is, after three allocations. Most requests
 * of a conversation's first turn are such. */
static bool nothing_to_pair(json_t *msgs)
{
    size_t i;
    json_t *msg;
    json_array_foreach(msgs, i, msg) {
        if (!json_is_object(msg))
            continue;
        role r = tg_hy_role_of(msg);
        if (r == R_TOOL || r == R_OTHER ||
            (r == R_ASSISTANT && (tg_json_get(msg, "tool_calls") ||
                                  tg_json_get(msg, "function_call"))))
            return false;
    }
    return true;
}

/* Rule 6 over the whole history, before the per-message pass. */
void tg_hy_pair_tool_calls(walk *w, json_t *body)
{
    json_t *msgs = tg_json_get(body, "messages");
    if (!json_is_array(msgs) || !(w->f & (TG_MR_PAIR_CALLS | TG_MR_LEGACY_FUNCS)))
        return;
    if (!w->ctx->no_shortcuts && nothing_to_pair(msgs))
        return;
    json_t *out = json_array(), *open = json_array(), *seen = json_object();
    char where[40];
    w->where = where;
    bool pair = w->f & TG_MR_PAIR_CALLS;
    size_t n_in = json_array_size(msgs);
    for (size_t i = 0; i < n_in; i++) {
        json_t *msg = json_array_get(msgs, i);
        message_where(where, i);
        jp_pop(&w->ptr, 0);
        jp_key(&w->ptr, "messages");
        jp_idx(&w->ptr, i);
        role r = json_is_object(msg) ? tg_hy_role_of(msg) : R_NONE;
        bool legacy_answer = r == R_OTHER && (w->f & TG_MR_LEGACY_FUNCS) &&
                             !strcmp(json_string_value(tg_json_get(msg, "role")), "function");
        if (legacy_answer) {
            rebuild_key(w, msg, "role", json_string("tool"), "legacy-function-role", "rule 43");
            r = R_TOOL;
        }
        if (r == R_ASSISTANT && (w->f & TG_MR_LEGACY_FUNCS))
            legacy_call_to_tool_calls(w, msg, i);
        if (!pair) {
            json_array_append(out, msg);
            continue;
        }
        if (r == R_TOOL) {
            if (!answer_call(w, msg, open)) {
                close_open_calls(w, out, open);
                orphan_to_user(w, msg);
            }
        } else if (r == R_ASSISTANT && tg_json_is(tg_json_get(msg, "tool_calls"), JSON_ARRAY)) {
            open_calls(w, msg, i, out, open, seen);
        } else {
            close_open_calls(w, out, open);
        }
        json_array_append(out, msg);
    }
    message_where(where, n_in);
    close_open_calls(w, out, open);
    if (json_array_size(out) != n_in)
        json_object_set(body, "messages", out);
    json_decref(out);
    json_decref(open);
    json_decref(seen);
}

static json_t *bridge_message(void)
{
    return json_pack("{s:s, s:s}", "role", "assistant", "content", bridge_text);
}

/* Rule 44: Mistral serves only a conversation that ends on user or tool,
 * or on an assistant prefix to continue (what a trailing assistant turn,
 * e.g. a prefill, means). */
static void mark_prefix(walk *w, json_t *out)
{
    json_t *last = json_array_get(out, json_array_size(out) - 1);
    if (!json_is_object(last) || tg_hy_role_of(last) != R_ASSISTANT ||
        tg_json_get(last, "tool_calls") || tg_json_is(tg_json_get(last, "prefix"), JSON_TRUE))
        return;
    char where[40];  /* an upstream index: this message is the last one sent */
    message_where(where, json_array_size(out) - 1);
    w->where = where;
    jp_pop(&w->ptr, 0);
    jp_key(&w->ptr, "messages");
    jp_idx(&w->ptr, json_array_size(out) - 1);
    rebuild_key(w, last, "prefix", json_true(), "assistant-prefix", "rule 44");
}

/* Rule 63: Mistral's role order has system turns only before the
 * conversation ("Unexpected role 'system' after role 'tool'"); the chat
 * templates open models are served with say the same (Qwen's: "System
 * message must be at the beginning", on vLLM and Ollama), and Google's
 * SDKs take system text only as the system instruction [U for the compat
 * endpoint]. The Messages API, and so Claude Code, puts one after the
 * first user turn. A late system turn joins the leading one (its text
 * after a blank line), or goes to the end of the leading system block
 * when either is not plain text. */
/* content as a list of parts (a string becomes one text part); new */
static json_t *as_parts(json_t *c)
{
    if (json_is_array(c))
        return json_copy(c);
    json_t *parts = json_array();
    if (json_is_string(c) && json_string_length(c))
        json_array_append_new(parts, json_pack("{s:s,s:O}", "type", "text", "text", c));
    return parts;
}

static void system_to_front(walk *w, json_t *out, json_t *msg, const char *name, const char *ref)
{
    size_t lead = 0;
    while (lead < json_array_size(out) && tg_hy_role_of(json_array_get(out, lead)) == R_SYSTEM)
        lead++;
    note(w, w->ptr.s, name, ref, msg, NULL);
    json_t *first = lead ? json_array_get(out, lead - 1) : NULL;
    json_t *have = tg_json_get(first, "content"), *add = tg_json_get(msg, "content");
    if (first && (w->f & TG_MR_ONE_SYSTEM) && !(json_is_string(have) && json_is_string(add))) {
        /* rule 74: one system turn, whatever its shape */
        json_t *parts = as_parts(have), *more = as_parts(add);
        json_array_extend(parts, more);
        json_decref(more);
        json_object_set_new(first, "content", parts);
        return;
    }
    if (json_is_string(have) && json_is_string(add)) {
        tg_buf t = {0};
        tg_buf_append(&t, json_string_value(have), json_string_length(have));
        if (t.len && json_string_length(add))
            tg_buf_puts(&t, "\n\n");
        tg_buf_append(&t, json_string_value(add), json_string_length(add));
        json_object_set_new(first, "content", json_stringn(t.data ? t.data : "", t.len));
        tg_buf_free(&t);
        return;
    }
    json_array_insert(out, lead, msg);
}

/* The new messages array, made when the walk first changes the history:
 * until then it would hold messages[0..i), which msgs itself is. */
static json_t *rebuilding(json_t **out, json_t *msgs, size_t i)
{
    if (!*out) {
        *out = json_array();
        for (size_t k = 0; k < i; k++)
            json_array_append(*out, json_array_get(msgs, k));
    }
    return *out;
}

/* Rule 96: a chat tool message holds text (OpenAI's tool message content is
 * a string or text parts; vLLM: "tool message content only supports text
 * content", vllm-project/vllm#43203): an image or file part of a tool turn
 * moves to media, for a user turn after the tool turns, and a note in the
 * tool turn says where it went, as the Responses bridge does with Codex's
 * view_image (tg_bridge_tool_media). */
static void tool_media_out(walk *w, json_t *msg, json_t **media)
{
    json_t *c = tg_json_get(msg, "content");
    if (!json_is_array(c))
        return;
    bool other = false;
    size_t j;
    json_t *part;
    json_array_foreach(c, j, part) {
        const char *t = json_string_value(tg_json_get(part, "type"));
        other |= !t || strcmp(t, "text");
    }
    if (!other)
        return;
    const char *id = json_string_value(tg_json_get(msg, "tool_call_id"));
    tg_buf text = {0};
    size_t n_text = 0;
    json_array_foreach(c, j, part) {
        const char *t = json_string_value(tg_json_get(part, "type"));
        json_t *tx = tg_json_get(part, "text");
        if (t && !strcmp(t, "text")) {
            if (json_is_string(tx) && n_text++)
                tg_buf_puts(&text, "\n\n");
            if (json_is_string(tx))
                tg_buf_append(&text, json_string_value(tx), json_string_length(tx));
        } else if (json_is_object(part)) {
            if (!*media)
                *media = json_array();
            tg_bridge_tool_media(*media, id, json_incref(part), &text, &n_text);
        }
    }
    rebuild_key(w, msg, "content", json_stringn(text.data ? text.data : "", text.len),
                "tool-media-to-user", "rule 96");
    tg_buf_free(&text);
    tg_ctx_translated(w->ctx, "tool result media", "in a user turn");
}

/* The notes of media[from..] name the tool call by the id the target sees
 * (Mistral's and Anthropic's ids are rewritten when the turn is cleaned). */
static void media_ids(json_t *media, size_t from, const char *before, const char *now)
{
    if (!before || !now || !strcmp(before, now))
        return;
    for (size_t k = from; k < json_array_size(media); k++) {
        json_t *p = json_array_get(media, k);
        const char *t = json_string_value(json_object_get(p, "text"));
        size_t tl = t ? strlen(t) : 0, bl = strlen(before);
        if (tl > bl && !strcmp(t + tl - bl, before) && t[tl - bl - 1] == ' ') {
            tg_buf b = {0};
            tg_buf_append(&b, t, tl - bl);
            tg_buf_puts(&b, now);
            json_object_set_new(p, "text", json_stringn(b.data, b.len));
            tg_buf_free(&b);
        }
    }
}

/* The user turn that carries the tool turns' media (rule 96), cleaned as
 * any turn for the target (rule 90 makes its image a note where the model
 * reads text only), with Mistral's bridge before it (rule 44). */
static void media_turn(walk *w, json_t *out, json_t *media, role *prev)
{
    if (!json_array_size(media))
        return;
    json_t *user = json_pack("{s:s, s:o}", "role", "user", "content", json_copy(media));
    json_array_clear(media);
    if ((w->f & TG_MR_ROLE_ORDER) && *prev == R_TOOL) {
        json_t *bridge = bridge_message();
        note(w, w->ptr.s, "tool-user-bridge", "rule 44", NULL, bridge);
        json_array_append_new(out, bridge);
    }
    note(w, w->ptr.s, "tool-media-turn", "rule 96", NULL, user);
    if (tg_hy_clean_message(w, user))
        json_array_append(out, user);
    json_decref(user);
    *prev = R_USER;
}

void tg_hy_walk_messages(walk *w, json_t *body)
{
    json_t *msgs = tg_json_get(body, "messages");
    if (!json_is_array(msgs))
        return;
    json_t *out = NULL;  /* NULL: the history unchanged so far (rebuilding) */
    json_t *media = NULL;  /* rule 96: the tool turns' images, files (made when one comes) */
    role prev = R_NONE;
    char where[40];
    w->where = where;
    size_t n = json_array_size(msgs);
    for (size_t i = 0; i < n; i++) {
        json_t *msg = json_array_get(msgs, i);
        message_where(where, i);
        jp_pop(&w->ptr, 0);
        jp_key(&w->ptr, "messages");
        jp_idx(&w->ptr, i);
        if (!json_is_object(msg)) {  /* not ours to judge */
            if (out)
                json_array_append(out, msg);
            prev = R_NONE;
            continue;
        }
        w->last = i + 1 == n;
        bool tool = tg_hy_role_of(msg) == R_TOOL;
        if (json_array_size(media) && !tool)
            media_turn(w, rebuilding(&out, msgs, i), media, &prev);
        size_t from = json_array_size(media);
        char *id = NULL;  /* the call's id before the turn is cleaned, when it moved media */
        if ((w->f & TG_MR_TOOL_MEDIA) && tool) {  /* before rule 68 drops the parts */
            tool_media_out(w, msg, &media);
            const char *cid = json_string_value(tg_json_get(msg, "tool_call_id"));
            if (json_array_size(media) > from && cid)
                id = tg_strdup(cid);
        }
        bool kept = tg_hy_clean_message(w, msg);
        if (id)
            media_ids(media, from, id, json_string_value(tg_json_get(msg, "tool_call_id")));
        free(id);
        if (!kept) {
            rebuilding(&out, msgs, i);
            continue;
        }
        role r = (role)w->role;
        if ((w->f & TG_MR_SYSTEM_FIRST) && r == R_SYSTEM && prev != R_NONE && prev != R_SYSTEM) {
            system_to_front(w, rebuilding(&out, msgs, i), msg, "system-first", "rule 63");
            continue;
        }
        /* rule 74: the chat templates of local servers take one system
         * turn ("System message must be at the beginning.", oh-my-pi#958
         * on Qwen; Gemma's "roles must alternate", conversations#197) */
        if ((w->f & TG_MR_ONE_SYSTEM) && r == R_SYSTEM && prev == R_SYSTEM) {
            system_to_front(w, rebuilding(&out, msgs, i), msg, "one-system", "rule 74");
            continue;
        }
        if ((w->f & TG_MR_ROLE_ORDER) && r == R_USER && prev == R_TOOL) {
            json_t *bridge = bridge_message();
            note(w, w->ptr.s, "tool-user-bridge", "rule 44", NULL, bridge);
            json_array_append_new(rebuilding(&out, msgs, i), bridge);
        }
        if (out)
            json_array_append(out, msg);
        prev = r;
    }
    if (json_array_size(media))  /* the history ends in tool turns */
        media_turn(w, rebuilding(&out, msgs, n), media, &prev);
    json_decref(media);
    json_t *now = out ? out : msgs;
    if ((w->f & TG_MR_ROLE_ORDER) && json_array_size(now))
        mark_prefix(w, now);
    if (out)
        json_object_set_new(body, "messages", out);
}
