/* messages_request.c -- the Messages bridge's request side (see
 * messages_api.h): an Anthropic Messages request as a chat completions
 * request, and the bridge that will shape its answer (messages_answer.c).
 *
 * Each Anthropic message becomes chat messages: an assistant
 * message's text blocks its content, its tool_use blocks its tool_calls
 * (input as the arguments' JSON text) and its thinking its
 * reasoning_content (hygiene keeps or drops it per dialect); a user
 * message's tool_result blocks become tool messages, in order, before a
 * user message with the rest (images a tool returned ride there, since a
 * chat tool message holds text only; every content block type is
 * messages_content.c's). `system` is the first message; a
 * system message inside messages (Claude Code sends one after the first
 * user turn, and Anthropic takes it) stays at its place, for hygiene to
 * move where a dialect wants system turns first (rule 63).
 * Tools, tool_choice, sampling keys and the thinking budget take their
 * chat spellings; thinking and output_config.effort become
 * reasoning_effort where the model takes one; keys the Messages API
 * defines but chat lacks are dropped; keys it does not define (a
 * provider's own) and top_k go up as they came, for hygiene's allow-lists
 * to judge. What only Anthropic's servers run (server tools, their blocks
 * in the history, MCP servers, containers) is dropped and listed in
 * b->dropped, or refused when the route says hosted_tools = refuse;
 * Anthropic's client tools (bash, text_editor, computer, memory), which
 * the agent runs, become function tools with the schema Anthropic's
 * models know them by. Tools with defer_loading wait, as on Anthropic's
 * API, for a tool_reference (or tool_addition) in the conversation to
 * load them; the messages are converted first, so the tools know which.
 * On a discovery route the tools Claude Code only names as deferred join
 * the catalog as stubs (messages_deferred.c).
 * cache_control goes where the route's target takes it (tg_bridge_opts),
 * else it is a hint said in the header; so are the keys that steer only
 * Anthropic's service.
 */
#include "bridge/messages_api.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bridge/bridge.h"
#include "bridge/messages_deferred.h"
#include "core/alloc.h"
#include "core/hash.h"
#include "core/jsonio.h"

/* ---- request ---------------------------------------------------------- */

/* Keys the Messages API defines; anything else is a provider's extra and
 * goes up as it came. top_k is not here: chat has no top_k, but several
 * providers take it, so hygiene judges it like any extra. */
static const char *const messages_keys[] = {
    "model", "messages", "system", "max_tokens", "stop_sequences", "temperature", "top_p",
    "metadata", "stream", "tools", "tool_choice", "thinking", "service_tier", "container",
    "mcp_servers", "context_management", "output_format", "output_config", "cache_control",
    "diagnostics", "inference_geo", "speed", "user_profile_id", "workspace_id",
    "billing_policy", "fallback_credit_token", "betas", "compaction", "fallbacks", "thread",
    NULL};

/* Keys of @anthropic-ai/sdk 1.14's MessageCreateParams (and the beta's)
 * that steer only Anthropic's own service (where and how fast it runs,
 * its billing, its diagnostics): a chat provider has none, and the answer
 * is the same without them, so they are hints, said in the header only. */
static const char *const service_keys[] = {
    "service_tier", "diagnostics", "inference_geo", "speed", "user_profile_id", "workspace_id",
    "billing_policy", "fallback_credit_token", "betas", NULL};
/* Keys that change what Anthropic's service does with the conversation
 * (context editing, server-side compaction, model fallbacks, threads):
 * left out, and said. */
static const char *const behaviour_keys[] = {"context_management", "compaction", "fallbacks",
                                             "thread", NULL};

/* What of the keys above has no chat form: said (top-level cache_control,
 * automatic caching, goes where the target takes it). */
static void service_fields(json_t *chat, const json_t *body, conv *cv)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)body, k, v) {
        if (json_is_null(v))
            continue;
        if (tg_bridge_is_one_of(k, service_keys))
            tg_bridge_drop(cv->dropped, TG_BRIDGE_HINTS, k);
        else if (tg_bridge_is_one_of(k, behaviour_keys))
            tg_bridge_drop(cv->dropped, "fields", k);
    }
    tg_msg_carry_cache(chat, body, cv);
}

static int assistant_message(const json_t *content, const char *path, json_t *messages,
                             conv *cv, tg_error *err)
{
    char param[192];
    tg_buf text = {0}, thinking = {0};
    json_t *calls = json_array();
    size_t i, n_text = 0;
    const json_t *blk;
    int rc = 0;
    json_array_foreach(content, i, blk) {
        const char *type = json_string_value(json_object_get(blk, "type"));
        if (json_is_object(json_object_get(blk, "cache_control")))  /* no part to put it on */
            tg_bridge_drop(cv->dropped, TG_BRIDGE_HINTS, "cache_control");
        if (type && !strcmp(type, "text") && json_is_string(json_object_get(blk, "text"))) {
            tg_msg_note_citations(blk, cv);
            /* an empty block says nothing, and Gemini refuses the empty
             * part it would become beside the calls */
            if (!json_string_length(json_object_get(blk, "text")))
                continue;
            if (n_text++)
                tg_buf_puts(&text, "\n\n");
            tg_buf_puts(&text, json_string_value(json_object_get(blk, "text")));
        } else if (type && !strcmp(type, "thinking")) {
            const char *t = json_string_value(json_object_get(blk, "thinking"));
            if (t && *t) {
                if (thinking.len)
                    tg_buf_puts(&thinking, "\n\n");
                tg_buf_puts(&thinking, t);
            }
        } else if (type && !strcmp(type, "redacted_thinking")) {
            /* encrypted for Anthropic's models alone: left out, and said */
            tg_bridge_drop(cv->dropped, "content", type);
        } else if (type && tg_msg_is_server_block(type) && !cv->o->refuse_hosted) {
            tg_bridge_drop(cv->dropped, "content", type);  /* what Anthropic ran */
            /* the tools Anthropic's tool search loaded stay loaded */
            if (!strcmp(type, "tool_search_tool_result"))
                tg_msg_note_references(json_object_get(json_object_get(blk, "content"),
                                                       "tool_references"),
                                       cv);
        } else if (type && !strcmp(type, "compaction") &&
                   json_is_string(json_object_get(blk, "content"))) {
            tg_msg_tool_changes(blk, cv);
            if (n_text++)  /* the summary of what came before */
                tg_buf_puts(&text, "\n\n");
            tg_buf_puts(&text, json_string_value(json_object_get(blk, "content")));
            tg_bridge_drop(cv->translated, "content", "compaction");
        } else if (type && !strcmp(type, "tool_use")) {
            const json_t *id = json_object_get(blk, "id"), *name = json_object_get(blk, "name");
            const json_t *input = json_object_get(blk, "input");
            if (!json_is_string(id) || !json_string_length(id) || !json_is_string(name)) {
                snprintf(param, sizeof param, "%.100s[%zu]", path, i);
                rc = tg_bridge_bad(err, param, "%s: a tool_use block needs its id and name", param);
                break;
            }
            char *args = input && !json_is_null(input) ? tg_json_dumps(input) : NULL;
            json_array_append_new(calls, json_pack("{s:O, s:s, s:{s:O, s:s}}", "id", id, "type",
                                                   "function", "function", "name", name,
                                                   "arguments", args ? args : "{}"));
            free(args);
        } else if (type && !strcmp(type, "tool_addition") && tg_msg_tool_addition(blk, cv)) {
            continue;  /* the tools it added join the request's */
        } else if (type && tg_msg_is_declared_block(type) && !tg_msg_is_server_block(type)) {
            tg_bridge_drop(cv->dropped, "content", type);  /* no chat assistant form */
        } else {
            snprintf(param, sizeof param, "%.100s[%zu].type", path, i);
            rc = tg_bridge_bad(err, param,
                     "%s: not a content block of an assistant message (server tool blocks "
                     "come from tools only Anthropic runs; the route refuses them: "
                     "hosted_tools = refuse)",
                     param);
            break;
        }
    }
    if (!rc) {
        json_t *m = json_pack("{s:s}", "role", "assistant");
        if (n_text || !json_array_size(calls))
            json_object_set_new(m, "content", json_stringn(text.data ? text.data : "", text.len));
        else
            json_object_set_new(m, "content", json_null());
        if (thinking.len)
            json_object_set_new(m, "reasoning_content", json_stringn(thinking.data, thinking.len));
        if (json_array_size(calls))
            json_object_set(m, "tool_calls", calls);
        json_array_append_new(messages, m);
    }
    json_decref(calls);
    tg_buf_free(&text);
    tg_buf_free(&thinking);
    return rc;
}

/* System text blocks (or a string) as a chat system message's content:
 * one string, or, where a block's cache_control is carried, text parts
 * (new reference; NULL with err). */
static json_t *system_content(const json_t *v, const char *path, conv *cv, tg_error *err)
{
    tg_buf t = {0};
    if (tg_msg_join_text(v, &t, path, err)) {
        tg_buf_free(&t);
        return NULL;
    }
    json_t *parts = json_array();
    size_t i;
    const json_t *blk;
    json_array_foreach(v, i, blk) {
        json_t *p = json_pack("{s:s, s:O}", "type", "text", "text", json_object_get(blk, "text"));
        tg_msg_carry_cache(p, blk, cv);
        json_array_append_new(parts, p);
    }
    json_t *c = tg_msg_content_of(parts);
    if (json_is_string(c)) {  /* joined as tg_msg_join_text joins, a string or not */
        json_decref(c);
        c = json_stringn(t.data ? t.data : "", t.len);
    }
    tg_buf_free(&t);
    return c;
}

/* Whether a user message follows message i: a system message with
 * clear_at "next_user_message" is shown only until one does. */
static bool str_is(const json_t *v, const char *s)
{
    return json_is_string(v) && !strcmp(json_string_value(v), s);
}

static bool user_after(const json_t *msgs, size_t i)
{
    for (size_t j = i + 1; j < json_array_size(msgs); j++)
        if (str_is(json_object_get(json_array_get(msgs, j), "role"), "user"))
            return true;
    return false;
}

/* A system message inside messages (the beta's role "system"), as a chat
 * system message: its text blocks; a tool_addition among them adds its
 * tool as one in a user turn does, a tool_removal has no chat form (said);
 * one cleared by a later user turn (clear_at) is left out, as Anthropic
 * hides it then; its per-turn output_config has no chat form (said). */
static int system_message(const json_t *msgs, size_t i, const char *path, json_t *messages,
                          conv *cv, tg_error *err)
{
    const json_t *m = json_array_get(msgs, i), *content = json_object_get(m, "content");
    if (json_is_object(json_object_get(m, "output_config")))
        tg_bridge_drop(cv->dropped, "fields", "messages.output_config");
    if (str_is(json_object_get(m, "clear_at"), "next_user_message") && user_after(msgs, i)) {
        tg_bridge_drop(cv->translated, "content", "system.clear_at");
        return 0;
    }
    json_t *texts = json_is_array(content) ? json_array() : NULL;
    size_t k;
    const json_t *blk;
    json_array_foreach(content, k, blk) {
        if (tg_msg_is_type(blk, "tool_addition") && tg_msg_tool_addition(blk, cv))
            continue;
        if (tg_msg_is_type(blk, "tool_addition") || tg_msg_is_type(blk, "tool_removal")) {
            tg_bridge_drop(cv->dropped, "content", json_string_value(json_object_get(blk, "type")));
            continue;
        }
        json_array_append(texts, (json_t *)blk);  /* the rest: text, or refused below */
    }
    json_t *c = system_content(texts ? texts : content, path, cv, err);
    json_decref(texts);
    if (!c)
        return -1;
    if (json_is_string(c) && !json_string_length(c))
        json_decref(c);  /* nothing to say (a message of output_config alone) */
    else
        json_array_append_new(messages, json_pack("{s:s, s:o}", "role", "system", "content", c));
    return 0;
}

static int convert_messages(const json_t *msgs, json_t *messages, conv *cv, tg_error *err)
{
    if (!json_is_array(msgs))
        return tg_bridge_bad(err, "messages", "%s: required, an array of messages", "messages");
    size_t i;
    const json_t *m;
    json_array_foreach(msgs, i, m) {
        char path[64], param[96];
        snprintf(path, sizeof path, "messages[%zu]", i);
        if (!json_is_object(m))
            return tg_bridge_bad(err, path, "%s: expected a message object", path);
        const char *role = json_string_value(json_object_get(m, "role"));
        snprintf(param, sizeof param, "%s.role", path);
        if (!role || (strcmp(role, "user") && strcmp(role, "assistant") && strcmp(role, "system")))
            return tg_bridge_bad(err, param, "%s: expected user, assistant or system", param);
        const json_t *content = json_object_get(m, "content");
        snprintf(param, sizeof param, "%s.content", path);
        if (!strcmp(role, "system")) {
            if (system_message(msgs, i, param, messages, cv, err))
                return -1;
            continue;
        }
        if (json_is_string(content)) {
            json_array_append_new(messages,
                                  json_pack("{s:s, s:O}", "role", role, "content", content));
            continue;
        }
        if (!json_is_array(content))
            return tg_bridge_bad(err, param, "%s: expected a string or an array of content blocks", param);
        if (!strcmp(role, "user") ? tg_msg_user_message(content, param, messages, cv, err)
                                  : assistant_message(content, param, messages, cv, err))
            return -1;
    }
    return 0;
}

/* Anthropic's client tools: typed, but run by the agent, so the model is
 * told their schema as a function tool's (the one Anthropic documents for
 * each; the model knows them by it). Every other typed tool
 * (web_search_..., web_fetch_..., code_execution_..., tool_search_...,
 * mcp_toolset) runs on Anthropic's servers. */
static const struct client_tool {
    const char *prefix;
    const char *schema;
} client_tools[] = {
    {"bash_", "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"},"
              "\"restart\":{\"type\":\"boolean\"}}}"},
    {"text_editor_",
     "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\",\"enum\":[\"view\","
     "\"create\",\"str_replace\",\"insert\",\"undo_edit\"]},\"path\":{\"type\":\"string\"},"
     "\"file_text\":{\"type\":\"string\"},\"old_str\":{\"type\":\"string\"},\"new_str\":"
     "{\"type\":\"string\"},\"insert_line\":{\"type\":\"integer\"},\"view_range\":{\"type\":"
     "\"array\",\"items\":{\"type\":\"integer\"}}},\"required\":[\"command\",\"path\"]}"},
    {"memory_",
     "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\",\"enum\":[\"view\","
     "\"create\",\"str_replace\",\"insert\",\"delete\",\"rename\"]},\"path\":{\"type\":"
     "\"string\"},\"file_text\":{\"type\":\"string\"},\"old_str\":{\"type\":\"string\"},"
     "\"new_str\":{\"type\":\"string\"},\"insert_line\":{\"type\":\"integer\"},\"insert_text\":"
     "{\"type\":\"string\"},\"old_path\":{\"type\":\"string\"},\"new_path\":{\"type\":"
     "\"string\"},\"view_range\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}},"
     "\"required\":[\"command\"]}"},
    {"computer_",
     "{\"type\":\"object\",\"properties\":{\"action\":{\"type\":\"string\"},\"coordinate\":"
     "{\"type\":\"array\",\"items\":{\"type\":\"integer\"}},\"start_coordinate\":{\"type\":"
     "\"array\",\"items\":{\"type\":\"integer\"}},\"text\":{\"type\":\"string\"},"
     "\"scroll_direction\":{\"type\":\"string\"},\"scroll_amount\":{\"type\":\"integer\"},"
     "\"duration\":{\"type\":\"number\"},\"key\":{\"type\":\"string\"}},\"required\":"
     "[\"action\"]}"},
    {NULL, NULL},
};

static const struct client_tool *client_tool(const char *type)
{
    for (const struct client_tool *c = client_tools; c->prefix; c++)
        if (!strncmp(type, c->prefix, strlen(c->prefix)))
            return c;
    return NULL;
}

/* A client tool of Anthropic's as a chat function tool (new reference). */
static json_t *client_function(const json_t *t, const char *type, const struct client_tool *c)
{
    const json_t *name = json_object_get(t, "name");
    json_t *fn = json_pack("{s:O, s:s+}", "name", name, "description", "Anthropic's ", type);
    json_object_set_new(fn, "parameters", json_loads(c->schema, 0, NULL));
    const json_t *w = json_object_get(t, "display_width_px"), *h = json_object_get(t, "display_height_px");
    if (json_is_integer(w) && json_is_integer(h)) {
        char d[160];
        snprintf(d, sizeof d, "Anthropic's %.40s: a display of %lld x %lld pixels", type,
                 (long long)json_integer_value(w), (long long)json_integer_value(h));
        json_object_set_new(fn, "description", json_string(d));
    }
    return json_pack("{s:s, s:o}", "type", "function", "function", fn);
}

/* A tool's input_examples (inputs that show how to call it), which
 * Anthropic shows the model beside the schema: appended to the chat
 * function's description, where any model reads them; said. */
static void examples_into_description(json_t *f, const json_t *t, conv *cv)
{
    const json_t *ex = json_object_get(t, "input_examples");
    json_t *fn = json_object_get(f, "function");
    if (!json_array_size(ex) || !json_is_object(fn))
        return;
    tg_buf d = {0};
    const char *own = json_string_value(json_object_get(fn, "description"));
    if (own && *own) {
        tg_buf_puts(&d, own);
        tg_buf_puts(&d, "\n\n");
    }
    tg_buf_puts(&d, "Examples of input:");
    size_t i;
    const json_t *e;
    json_array_foreach(ex, i, e) {
        char *s = tg_json_dumps(e);
        tg_buf_puts(&d, "\n");
        tg_buf_puts(&d, s ? s : "{}");
        free(s);
    }
    json_object_set_new(fn, "description", json_stringn(d.data, d.len));
    tg_buf_free(&d);
    tg_bridge_drop(cv->translated, "tools", "input_examples");
}

/* Does the request hold Anthropic's own tool search (a server tool)? */
static bool has_server_search(const json_t *tools)
{
    size_t i;
    const json_t *t;
    json_array_foreach(tools, i, t) {
        const char *ty = json_string_value(json_object_get(t, "type"));
        if (ty && !strncmp(ty, "tool_search_tool_", 17))
            return true;
    }
    return false;
}

/* A tool with defer_loading, as Anthropic's tool search has it: not shown
 * to the model until a tool_reference loads it. Shown anyway where the
 * search that would load it runs nowhere (Anthropic's own search tool,
 * dropped on a route without discovery), and on a discovery route, whose
 * catalog (search_tools) it joins from the first turn. */
static bool deferred_hidden(const json_t *t, conv *cv, bool server_search)
{
    const char *name = json_string_value(json_object_get(t, "name"));
    if (!json_is_true(json_object_get(t, "defer_loading")) || !name ||
        json_object_get(cv->loaded, name))
        return false;
    if (cv->o->discovery) {
        tg_bridge_drop(cv->translated, "tools", "defer_loading:catalog");
        return false;
    }
    if (server_search) {
        tg_bridge_drop(cv->translated, "tools", "defer_loading:sent");
        return false;
    }
    return true;
}

/* A custom tool has no type, or "custom"; client tools are translated;
 * server tools are dropped (listed in cv->dropped) or refused; deferred
 * tools wait for their tool_reference (deferred_hidden). */
static json_t *convert_tools(const json_t *tools, conv *cv, tg_error *err)
{
    if (!json_is_array(tools)) {
        tg_bridge_bad(err, "tools", "%s: expected an array of tools", "tools");
        return NULL;
    }
    json_t *out = json_array();
    bool server_search = has_server_search(tools);
    size_t i;
    const json_t *t;
    json_array_foreach(tools, i, t) {
        char param[64];
        const json_t *type = json_object_get(t, "type");
        const json_t *name = json_object_get(t, "name");
        if (deferred_hidden(t, cv, server_search))
            continue;
        if (type && !json_is_null(type) &&
            (!json_is_string(type) || strcmp(json_string_value(type), "custom"))) {
            const char *ty = json_is_string(type) ? json_string_value(type) : "?";
            const struct client_tool *c = client_tool(ty);
            if (c && json_is_string(name)) {
                json_t *f = client_function(t, ty, c);
                tg_msg_carry_cache(f, t, cv);
                examples_into_description(f, t, cv);
                json_array_append_new(out, f);
                continue;
            }
            if (!cv->o->refuse_hosted) {
                tg_bridge_drop(cv->dropped, "tools", ty);
                continue;
            }
            snprintf(param, sizeof param, "tools[%zu].type", i);
            tg_error_set(err, 400, "invalid_request_error", "unsupported_value", param,
                         "%s: '%.64s' is a tool that Anthropic runs on its own servers; the "
                         "route refuses such tools (hosted_tools = refuse) rather than "
                         "leave them out",
                         param, ty);
            json_decref(out);
            return NULL;
        }
        if (!json_is_string(name)) {
            snprintf(param, sizeof param, "tools[%zu].name", i);
            tg_bridge_bad(err, param, "%s: a tool needs a name", param);
            json_decref(out);
            return NULL;
        }
        json_t *fn = json_pack("{s:O}", "name", name);
        const json_t *v = json_object_get(t, "description");
        if (json_is_string(v))
            json_object_set(fn, "description", (json_t *)v);
        v = json_object_get(t, "input_schema");
        json_object_set_new(fn, "parameters",
                            json_is_object(v) ? json_incref((json_t *)v)
                                              : json_pack("{s:s, s:{}}", "type", "object",
                                                          "properties"));
        v = json_object_get(t, "strict");
        if (json_is_boolean(v))
            json_object_set(fn, "strict", (json_t *)v);
        json_t *f = json_pack("{s:s, s:o}", "type", "function", "function", fn);
        tg_msg_carry_cache(f, t, cv);
        examples_into_description(f, t, cv);
        json_array_append_new(out, f);
    }
    return out;
}

static int convert_tool_choice(json_t *chat, const json_t *choice, tg_error *err)
{
    if (!choice || json_is_null(choice))
        return 0;
    const char *type = json_string_value(json_object_get(choice, "type"));
    if (!type)
        return tg_bridge_bad(err, "tool_choice.type", "%s: expected auto, any, tool or none",
                   "tool_choice.type");
    if (!strcmp(type, "auto") || !strcmp(type, "none")) {
        json_object_set_new(chat, "tool_choice", json_string(type));
    } else if (!strcmp(type, "any")) {
        json_object_set_new(chat, "tool_choice", json_string("required"));
    } else if (!strcmp(type, "tool")) {
        const json_t *name = json_object_get(choice, "name");
        if (!json_is_string(name))
            return tg_bridge_bad(err, "tool_choice.name", "%s: a tool choice names its tool",
                       "tool_choice.name");
        json_object_set_new(chat, "tool_choice", json_pack("{s:s, s:{s:O}}", "type", "function",
                                                           "function", "name", name));
    } else {
        return tg_bridge_bad(err, "tool_choice.type", "%s: expected auto, any, tool or none",
                   "tool_choice.type");
    }
    if (json_is_true(json_object_get(choice, "disable_parallel_tool_use")) &&
        strcmp(type, "none"))
        json_object_set_new(chat, "parallel_tool_calls", json_false());
    return 0;
}

/* Models that take reasoning_effort. OpenAI refuses it on its models that
 * do not reason (gpt-4o, gpt-4.1: "Unrecognized request argument" or
 * "not supported with this model"); other providers' names are left to
 * the route's hygiene (rule 36's allow-list keeps it for Gemini, Mistral's
 * drops it). */
static bool model_takes_effort(const char *model)
{
    static const char *const plain[] = {"gpt-4", "gpt-3", "chatgpt-", "o1-mini", "o1-preview",
                                        NULL};
    const char *slash = model ? strrchr(model, '/') : NULL;
    const char *m = slash ? slash + 1 : model;
    for (const char *const *p = plain; m && *p; p++)
        if (!strncmp(m, *p, strlen(*p)))
            return false;
    return true;
}

/* Anthropic's effort (low, medium, high, xhigh, max) in chat's words:
 * the two levels above high (xhigh since Opus 4.7) become high, the top
 * every chat reasoning model takes, rather than the model's default. */
static const char *chat_effort(const char *effort)
{
    if (!strcmp(effort, "low") || !strcmp(effort, "medium") || !strcmp(effort, "high"))
        return effort;
    return !strcmp(effort, "xhigh") || !strcmp(effort, "max") ? "high" : NULL;
}

/* thinking {type: enabled, budget_tokens} and output_config {effort} as
 * chat's reasoning_effort: an effort named wins; else the budget's order
 * of magnitude (Anthropic's minimum is 1024; Claude Code's "think" /
 * "think hard" / "ultrathink" ask about 4k, 10k and 32k). thinking
 * adaptive without an effort leaves the choice to the model, as it does
 * on Anthropic's. */
static void convert_effort(json_t *chat, const json_t *body, conv *cv)
{
    const json_t *thinking = json_object_get(body, "thinking");
    const char *type = json_string_value(json_object_get(thinking, "type"));
    const char *named = json_string_value(json_object_get(json_object_get(body, "output_config"),
                                                          "effort"));
    const char *effort = named ? chat_effort(named) : NULL;
    if (named && !effort)
        tg_bridge_drop(cv->dropped, "fields", "output_config.effort");
    if (!effort && type && !strcmp(type, "enabled")) {
        const json_t *b = json_object_get(thinking, "budget_tokens");
        json_int_t budget = json_is_integer(b) ? json_integer_value(b) : 0;
        effort = budget <= 0 ? "medium" : budget < 4096 ? "low" : budget < 16384 ? "medium" : "high";
    }
    if (type && !strcmp(type, "disabled"))
        effort = NULL;
    if (!effort)
        return;
    if (!model_takes_effort(json_string_value(json_object_get(body, "model")))) {
        tg_bridge_drop(cv->dropped, "fields", named ? "output_config.effort" : "thinking");
        return;
    }
    json_object_set_new(chat, "reasoning_effort", json_string(effort));
}

/* metadata.user_id as chat's user. OpenAI takes at most 64 characters
 * there and Claude Code's is a JSON text of about 150, so a longer one
 * goes as a stable hash of it: the same user, the same value. */
static void convert_user(json_t *chat, const json_t *body)
{
    const json_t *v = json_object_get(json_object_get(body, "metadata"), "user_id");
    if (!json_is_string(v) || !json_string_length(v))
        return;
    if (json_string_length(v) <= 64) {
        json_object_set(chat, "user", (json_t *)v);
        return;
    }
    /* FNV-1a (core/hash.h) from a start one digit short of its offset
     * basis, as it was first written: kept, so a user keeps its value */
    uint64_t h = tg_fnv1a64(1469598103934665603ull, json_string_value(v), json_string_length(v));
    char u[32];
    snprintf(u, sizeof u, "tg-%016llx", (unsigned long long)h);
    json_object_set_new(chat, "user", json_string(u));
}

/* MCP connectors and code execution containers run on Anthropic's
 * servers: left out with a word, or refused. */
static int servers(const json_t *body, conv *cv, tg_error *err)
{
    static const char *const keys[] = {"mcp_servers", "container", NULL};
    for (const char *const *k = keys; *k; k++) {
        const json_t *v = json_object_get(body, *k);
        if (!v || json_is_null(v) || (json_is_array(v) && !json_array_size(v)))
            continue;
        if (!cv->o->refuse_hosted) {
            tg_bridge_drop(cv->dropped, "fields", *k);
            continue;
        }
        tg_error_set(err, 400, "invalid_request_error", "unsupported_parameter", *k,
                     "%s: MCP connectors and code execution containers run on Anthropic's "
                     "servers, which the bridge to chat completions cannot reach (a route "
                     "to Anthropic itself can pass /v1/messages through: messages = pass)",
                     *k);
        return -1;
    }
    return 0;
}

/* structured outputs: output_format, or output_config.format as the API
 * now spells it, {type: json_schema, schema} */
static int convert_format(json_t *chat, const json_t *body, tg_error *err)
{
    const char *param = "output_format";
    const json_t *v = json_object_get(body, param);
    if (!v || json_is_null(v)) {
        param = "output_config.format";
        v = json_object_get(json_object_get(body, "output_config"), "format");
    }
    if (!v || json_is_null(v))
        return 0;
    const char *t = json_string_value(json_object_get(v, "type"));
    const json_t *schema = json_object_get(v, "schema");
    if (!t || strcmp(t, "json_schema") || !json_is_object(schema))
        return tg_bridge_bad(err, param, "%s: expected {\"type\": \"json_schema\", \"schema\": {...}}",
                             param);
    json_object_set_new(chat, "response_format",
                        json_pack("{s:s, s:{s:s, s:O, s:b}}", "type", "json_schema",
                                  "json_schema", "name", "output", "schema", schema, "strict", 1));
    return 0;
}

/* A tool_choice that names a tool left out (a server tool) means nothing
 * the upstream can do: it goes too. */
static void choice_of_dropped(json_t *chat, conv *cv)
{
    const char *name = json_string_value(json_object_get(
        json_object_get(json_object_get(chat, "tool_choice"), "function"), "name"));
    if (!name || tg_tool_peek(json_object_get(chat, "tools"), name))
        return;
    json_object_del(chat, "tool_choice");
    tg_bridge_drop(cv->dropped, "fields", "tool_choice");
}

static int convert_request(const json_t *body, json_t *chat, conv *cv, tg_error *err)
{
    if (servers(body, cv, err))
        return -1;
    json_t *messages = json_array();
    json_object_set_new(chat, "messages", messages);
    const json_t *v = json_object_get(body, "model");
    if (v)
        json_object_set(chat, "model", (json_t *)v);
    v = json_object_get(body, "system");
    if (v && !json_is_null(v)) {
        json_t *c = system_content(v, "system", cv, err);
        if (!c)
            return -1;
        if (json_is_string(c) && !json_string_length(c))
            json_decref(c);
        else
            json_array_append_new(messages, json_pack("{s:s, s:o}", "role", "system", "content", c));
    }
    if (convert_messages(json_object_get(body, "messages"), messages, cv, err))
        return -1;
    v = json_object_get(body, "tools");
    json_t *all = json_array_size(cv->added) ? json_array() : NULL;  /* with tool_addition's */
    if (all) {
        if (json_is_array(v))
            json_array_extend(all, (json_t *)v);
        json_array_extend(all, cv->added);
        v = all;
    }
    json_t *tools = v && !json_is_null(v) ? convert_tools(v, cv, err) : json_array();
    json_decref(all);
    if (!tools)
        return -1;
    tg_msg_deferred_stubs(body, tools, cv);
    if (json_array_size(tools))
        json_object_set_new(chat, "tools", tools);
    else
        json_decref(tools);
    if (convert_tool_choice(chat, json_object_get(body, "tool_choice"), err))
        return -1;
    choice_of_dropped(chat, cv);
    v = json_object_get(body, "stop_sequences");
    if (json_is_array(v) && json_array_size(v))
        json_object_set(chat, "stop", (json_t *)v);
    else if (v && !json_is_null(v) && !json_is_array(v))
        return tg_bridge_bad(err, "stop_sequences", "%s: expected an array of strings", "stop_sequences");
    static const char *const same[] = {"max_tokens", "temperature", "top_p", NULL};
    for (const char *const *k = same; *k; k++) {
        v = json_object_get(body, *k);
        if (v && !json_is_null(v))
            json_object_set(chat, *k, (json_t *)v);
    }
    convert_user(chat, body);
    convert_effort(chat, body, cv);
    if (convert_format(chat, body, err))
        return -1;
    if (json_is_true(json_object_get(body, "stream"))) {
        json_object_set_new(chat, "stream", json_true());
        /* the message's usage comes from the chat stream's last chunk */
        json_object_set_new(chat, "stream_options", json_pack("{s:b}", "include_usage", 1));
    }
    const char *k;
    json_t *extra;
    json_object_foreach((json_t *)body, k, extra) {
        if (!tg_bridge_is_one_of(k, messages_keys))
            json_object_set(chat, k, extra);
    }
    service_fields(chat, body, cv);
    return 0;
}

int tg_messages_to_chat(const json_t *body, json_t **chat, tg_msg_bridge **bridge,
                        tg_error *err)
{
    static const tg_bridge_opts dflt = {0};
    return tg_messages_to_chat_opts(body, &dflt, chat, bridge, err);
}

int tg_messages_to_chat_opts(const json_t *body, const tg_bridge_opts *o, json_t **chat,
                             tg_msg_bridge **bridge, tg_error *err)
{
    *chat = NULL;
    *bridge = NULL;
    if (!json_is_object(body)) {
        tg_error_set(err, 400, "invalid_request_error", "invalid_type", NULL,
                     "request body must be a JSON object");
        return -1;
    }
    json_t *c = json_object();
    const json_t *tools = json_object_get(body, "tools");
    conv cv = {o, json_object(), json_object(), json_object(), json_array(),
               json_is_array(tools) ? tools : NULL};
    int rc = convert_request(body, c, &cv, err);
    json_decref(cv.loaded);
    json_decref(cv.added);
    if (rc) {
        json_decref(c);
        json_decref(cv.dropped);
        json_decref(cv.translated);
        return -1;
    }
    tg_msg_bridge *b = tg_calloc(1, sizeof *b);
    const json_t *m = json_object_get(body, "model");
    b->model = json_is_string(m) ? json_incref((json_t *)m) : json_string("");
    const json_t *stops = json_object_get(body, "stop_sequences");
    b->stops = json_is_array(stops) ? json_incref((json_t *)stops) : NULL;
    b->calls_done = json_object();
    b->dropped = cv.dropped;
    b->translated = cv.translated;
    *chat = c;
    *bridge = b;
    return 0;
}

const json_t *tg_msg_bridge_dropped_peek(const tg_msg_bridge *b)
{
    return b ? b->dropped : NULL;
}

const json_t *tg_msg_bridge_translated_peek(const tg_msg_bridge *b)
{
    return b ? b->translated : NULL;
}

void tg_msg_bridge_free(tg_msg_bridge *b)
{
    if (!b)
        return;
    json_decref(b->model);
    json_decref(b->stops);
    json_decref(b->call_key);
    json_decref(b->calls_done);
    json_decref(b->dropped);
    json_decref(b->translated);
    tg_chat_reader_free(&b->rd);
    tg_buf_free(&b->args);
    free(b);
}

size_t tg_messages_strip_markers(json_t *body, const char *prefix)
{
    size_t plen = prefix ? strlen(prefix) : 0;
    if (!plen || !json_is_object(body))
        return 0;
    size_t n = tg_bridge_strip_keys(body, prefix, plen), i, j, l;
    json_t *m, *blk, *inner;
    json_array_foreach(json_object_get(body, "messages"), i, m) {
        n += tg_bridge_strip_keys(m, prefix, plen);
        json_array_foreach(json_object_get(m, "content"), j, blk) {
            n += tg_bridge_strip_keys(blk, prefix, plen);
            if (tg_msg_is_type(blk, "tool_result"))
                json_array_foreach(json_object_get(blk, "content"), l, inner)
                    n += tg_bridge_strip_keys(inner, prefix, plen);
        }
    }
    return n;
}

