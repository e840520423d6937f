/* responses_request.c -- the Responses bridge's request side (see
 * responses_api.h): a Responses request as a chat completions request,
 * and the bridge that will shape its answer (responses_answer.c, and
 * responses_events.c for a stream).
 *
 * Input items become chat messages: a message item becomes a
 * message, consecutive function_call items join the assistant turn before
 * them as its tool_calls, a function_call_output becomes a tool message and
 * a reasoning item's text rides on the next assistant turn as
 * reasoning_content (hygiene then keeps or drops it per dialect). Function
 * tools are unflattened, tool_choice and text.format take their chat
 * spellings. The tools Codex runs itself but declares in other shapes
 * become function tools too: a namespace's tools each (named
 * "<namespace>__<name>"), a custom (freeform) tool one taking {input}, and
 * local_shell and a client tool_search theirs; their calls come back in
 * the shape each is declared in (a function_call with its namespace, a
 * custom_tool_call, a local_shell_call, a tool_search_call), through
 * b->kinds; so do OpenAI's shell (local) and apply_patch tools, which the
 * agent runs. The tools of an additional_tools input item (where Codex
 * puts them for the models of its own catalog) join those of `tools`.
 * Images and files a tool returned leave its tool message (chat's hold
 * text only) for a user message after the tool messages (flush_media).
 * Tools only OpenAI's servers run (web_search, file_search,
 * code_interpreter, image_generation, computer_use, mcp...) and their
 * items in the history are dropped and listed in b->dropped, or refused
 * when the route says hosted_tools = refuse. Keys the Responses API defines but chat lacks are dropped;
 * keys it does not define (a provider's own, such as top_k) go up as they
 * came, for hygiene's allow-lists to judge like any chat request's.
 *
 * previous_response_id is answered from the caller's store like
 * item_reference: each bridged answer leaves a record (tg_responses_record:
 * its request's input items, its output items, and the id of the response
 * it continued), and a request that names one has the chain of records
 * before its own input, oldest first, as OpenAI does. Instructions are not
 * carried over, as with OpenAI.
 */
#include "bridge/responses_api.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bridge/bridge.h"
#include "bridge/responses_api_int.h"
#include "bridge/responses_compact.h"
#include "core/alloc.h"
#include "core/jsonio.h"

/* What the request conversion reads and records besides the body. */
typedef struct conv {
    const tg_bridge_opts *o;
    json_t *dropped;       /* {kind: [name]} */
    json_t *kinds;         /* as tg_resp_bridge's */
    json_t *tools;         /* the chat tools of additional_tools items so far */
    json_t *media;         /* images and files of the tool outputs so far, for
                              the user message after them (flush_media) */
} conv;

/* ---- request ---------------------------------------------------------- */

/* Keys the Responses API defines; anything else is the agent's or a
 * provider's extra and goes up as it came. */
static const char *const responses_keys[] = {
    "background", "conversation", "include", "input", "instructions", "max_output_tokens",
    "max_tool_calls", "metadata", "model", "parallel_tool_calls", "previous_response_id",
    "prompt", "prompt_cache_key", "prompt_cache_retention", "reasoning", "safety_identifier",
    "service_tier", "store", "stream", "stream_options", "temperature", "text", "tool_choice",
    "tools", "top_logprobs", "top_p", "truncation", "user", "context_management",
    "access_programs", "background_options", "image", "moderation", "prompt_cache_options", NULL};

/* What the Response object repeats from its request. */
static const char *const echoed_keys[] = {"instructions", "max_output_tokens", "metadata",
                                          "parallel_tool_calls", "reasoning", "temperature",
                                          "text", "tool_choice", "tools", "top_p", "user",
                                          "model", "max_tool_calls", "prompt_cache_key",
                                          "safety_identifier", "service_tier", "top_logprobs",
                                          NULL};

/* What stands for a part that names something only OpenAI can read (a
 * file_id of its file store) or that chat has no part for (a file_url):
 * a text saying so, and the drop said (X-Toolgate-Dropped: content ...). */
static json_t *part_note(json_t *dropped, const char *what, const char *text, const char *v)
{
    tg_bridge_drop(dropped, "content", what);
    json_t *t = json_pack("{s:s, s:s++}", "type", "text", "text", text, v, ")");
    return t;
}

static json_t *chat_part_of(const json_t *p, const char *path, json_t *dropped, tg_error *err);

/* One input content part as a chat content part (new reference), with its
 * prompt_cache_breakpoint (openai 7.60: chat's text, image and file parts
 * take the same {mode, ttl}), for the route's hygiene to keep where the
 * provider takes it. */
static json_t *chat_part(const json_t *p, const char *path, json_t *dropped, tg_error *err)
{
    json_t *c = chat_part_of(p, path, dropped, err);
    const json_t *bp = json_object_get(p, "prompt_cache_breakpoint");
    if (c && json_is_object(bp) && json_is_object(c))
        json_object_set(c, "prompt_cache_breakpoint", (json_t *)bp);
    return c;
}

static json_t *chat_part_of(const json_t *p, const char *path, json_t *dropped, tg_error *err)
{
    char param[128];
    const char *type = json_string_value(json_object_get(p, "type"));
    snprintf(param, sizeof param, "%.100s.type", path);
    if (!type) {
        tg_bridge_bad(err, param, "%s: every content part needs a type (input_text, input_image, ...)", path);
        return NULL;
    }
    if (!strcmp(type, "input_text") || !strcmp(type, "output_text") || !strcmp(type, "text")) {
        const json_t *t = json_object_get(p, "text");
        if (!json_is_string(t)) {
            snprintf(param, sizeof param, "%.100s.text", path);
            tg_bridge_bad(err, param, "%s: a text part needs a string", param);
            return NULL;
        }
        return json_pack("{s:s, s:O}", "type", "text", "text", t);
    }
    if (!strcmp(type, "input_image")) {
        const json_t *url = json_object_get(p, "image_url");
        const char *fid = json_string_value(json_object_get(p, "file_id"));
        if (!json_is_string(url) && fid)
            return part_note(dropped, "input_image.file_id",
                             "(an image from OpenAI's file store was left out, which the route's "
                             "provider cannot read: file_id ", fid);
        if (!json_is_string(url)) {
            snprintf(param, sizeof param, "%.100s.image_url", path);
            tg_bridge_bad(err, param,
                "%s: an image must come as a URL or a data: URL (a file_id names OpenAI's file "
                "store, which the route's provider cannot read)",
                param);
            return NULL;
        }
        json_t *img = json_pack("{s:O}", "url", url);
        const json_t *detail = json_object_get(p, "detail");
        if (json_is_string(detail))
            json_object_set(img, "detail", (json_t *)detail);
        return json_pack("{s:s, s:o}", "type", "image_url", "image_url", img);
    }
    if (!strcmp(type, "input_file")) {
        json_t *file = json_object();
        static const char *const keys[] = {"file_data", "file_id", "filename", NULL};
        for (const char *const *k = keys; *k; k++) {
            const json_t *v = json_object_get(p, *k);
            if (json_is_string(v))
                json_object_set(file, *k, (json_t *)v);
        }
        const char *furl = json_string_value(json_object_get(p, "file_url"));
        if (!json_object_size(file) && furl) {
            json_decref(file);
            return part_note(dropped, "input_file.file_url",
                             "(a file chat completions cannot attach by URL: ", furl);
        }
        if (!json_object_size(file)) {
            json_decref(file);
            tg_bridge_bad(err, path, "%s: a file part needs file_data or file_id (file_url has no chat form)",
                path);
            return NULL;
        }
        return json_pack("{s:s, s:o}", "type", "file", "file", file);
    }
    if (!strcmp(type, "input_audio")) {
        const json_t *a = json_object_get(p, "input_audio");
        if (json_is_object(a))
            return json_pack("{s:s, s:O}", "type", "input_audio", "input_audio", a);
    }
    tg_bridge_bad(err, param, "%s: content part type not understood by the chat bridge", param);
    return NULL;
}

/* The text of a message in a role whose chat content is text only
 * (assistant, system, developer); its other parts (an image in a
 * developer message) go to media, for a user message after it. */
static json_t *text_only_content(const json_t *content, const char *path, json_t *media,
                                 json_t *dropped, tg_error *err)
{
    tg_buf t = {0};
    size_t i;
    const json_t *p;
    json_array_foreach(content, i, p) {
        const json_t *text = tg_resp_part_text(p);
        if (text) {
            tg_buf_append(&t, json_string_value(text), json_string_length(text));
            continue;
        }
        char sub[128];
        snprintf(sub, sizeof sub, "%.100s[%zu]", path, i);
        json_t *c = chat_part(p, sub, dropped, err);
        if (!c) {
            tg_buf_free(&t);
            return NULL;
        }
        json_array_append_new(media, c);
    }
    json_t *v = json_stringn(t.data ? t.data : "", t.len);
    tg_buf_free(&t);
    return v;
}

/* A message's content: strings stay strings; parts become chat parts,
 * joined into one string where chat wants text only (assistant, system,
 * developer; their other parts go to media) or where all of them are
 * text. */
static json_t *chat_content(const char *role, const json_t *content, const char *path,
                            json_t *media, json_t *dropped, tg_error *err)
{
    if (json_is_string(content))
        return json_incref((json_t *)content);
    if (json_is_null(content) || !content)
        return json_string("");
    if (!json_is_array(content)) {
        tg_bridge_bad(err, path, "%s: expected a string or an array of content parts", path);
        return NULL;
    }
    bool text_only = strcmp(role, "user") != 0;
    size_t i;
    const json_t *p;
    json_array_foreach(content, i, p)  /* a replayed answer's citations: no chat form, said */
        if (json_array_size(json_object_get(p, "annotations")))
            tg_bridge_drop(dropped, "content", "output_text.annotations");
    tg_buf t = {0};
    if (tg_resp_join_text(content, &t) == 0) {
        json_t *s = json_stringn(t.data ? t.data : "", t.len);
        tg_buf_free(&t);
        return s;
    }
    tg_buf_free(&t);
    if (text_only)
        return text_only_content(content, path, media, dropped, err);
    json_t *parts = json_array();
    json_array_foreach(content, i, p) {
        char sub[128];
        snprintf(sub, sizeof sub, "%.100s[%zu]", path, i);
        json_t *c = chat_part(p, sub, dropped, err);
        if (!c) {
            json_decref(parts);
            return NULL;
        }
        json_array_append_new(parts, c);
    }
    return parts;
}

/* A tool output's parts as the text of a chat tool message: text parts
 * joined; an image or a file (Codex's view_image answers with an
 * input_image) goes to media, for the user message after the tool
 * messages, since a chat tool message holds text only
 * (tg_bridge_tool_media). New reference, or NULL with err set. */
static json_t *tool_parts(const json_t *output, const char *call_id, const char *path,
                          json_t *media, json_t *dropped, tg_error *err)
{
    tg_buf t = {0};
    size_t i, n_text = 0;
    const json_t *p;
    json_array_foreach(output, i, p) {
        char sub[128];
        snprintf(sub, sizeof sub, "%.100s[%zu]", path, i);
        json_t *c = chat_part(p, sub, dropped, err);
        if (!c) {
            tg_buf_free(&t);
            return NULL;
        }
        const char *type = json_string_value(json_object_get(c, "type"));
        if (!strcmp(type, "text")) {
            if (n_text++)
                tg_buf_puts(&t, "\n\n");
            tg_buf_puts(&t, json_string_value(json_object_get(c, "text")));
            json_decref(c);
        } else {
            tg_bridge_tool_media(media, call_id, c, &t, &n_text);
        }
    }
    json_t *v = json_stringn(t.data ? t.data : "", t.len);
    tg_buf_free(&t);
    return v;
}

/* A function_call_output's output as a tool message's text (see
 * tool_parts). */
static json_t *tool_content(const json_t *output, const char *call_id, const char *path,
                            json_t *media, json_t *dropped, tg_error *err)
{
    if (json_is_string(output))
        return json_incref((json_t *)output);
    if (json_is_array(output))
        return tool_parts(output, call_id, path, media, dropped, err);
    if (!output || json_is_null(output))
        return json_string("");
    /* some agents put the tool's JSON result here as it is */
    char *s = tg_json_dumps(output);
    json_t *v = json_string(s);
    free(s);
    return v;
}

static json_t *last_assistant_peek(json_t *messages)
{
    size_t n = json_array_size(messages);
    json_t *m = n ? json_array_get(messages, n - 1) : NULL;
    const char *role = json_string_value(json_object_get(m, "role"));
    return role && !strcmp(role, "assistant") ? m : NULL;
}

static json_t *assistant_turn(json_t *messages, json_t **reasoning)
{
    json_t *m = json_pack("{s:s, s:n}", "role", "assistant", "content");
    if (*reasoning) {
        json_object_set_new(m, "reasoning_content", *reasoning);
        *reasoning = NULL;
    }
    json_array_append_new(messages, m);
    return m;
}

/* A namespaced tool's chat name: "<namespace>__<name>", or the two as
 * they are when the namespace already ends in "_" (Codex's MCP
 * namespaces, "mcp__server__"). New reference. */
static json_t *flat_name(const char *ns, const char *name)
{
    tg_buf t = {0};
    tg_buf_puts(&t, ns);
    size_t n = strlen(ns);
    if (!n || ns[n - 1] != '_')
        tg_buf_puts(&t, "__");
    tg_buf_puts(&t, name);
    json_t *v = json_stringn(t.data, t.len);
    tg_buf_free(&t);
    return v;
}

/* JSON text of v (a string stays itself), "{}" for none. New reference. */
static json_t *args_text(const json_t *v)
{
    if (json_is_string(v))
        return json_incref((json_t *)v);
    if (!v || json_is_null(v))
        return json_string("{}");
    char *s = tg_json_dumps(v);
    json_t *a = json_string(s);
    free(s);
    return a;
}

/* A call of the history as a tool call of the assistant turn before it
 * (a new one when a reasoning item came between). Steals name and args. */
static void add_call(json_t *messages, json_t **reasoning, const json_t *call_id, json_t *name,
                     json_t *args)
{
    json_t *m = last_assistant_peek(messages);
    if (!m || *reasoning)
        m = assistant_turn(messages, reasoning);
    /* an empty message before its calls says nothing: null, not the
     * empty part Gemini refuses (as the Messages bridge, kittors/CliRelay#264) */
    const json_t *text = json_object_get(m, "content");
    if (json_is_string(text) && !json_string_length(text))
        json_object_set_new(m, "content", json_null());
    json_t *calls = json_object_get(m, "tool_calls");
    if (!calls) {
        calls = json_array();
        json_object_set_new(m, "tool_calls", calls);
    }
    json_array_append_new(calls, json_pack("{s:O, s:s, s:{s:o, s:o}}", "id", call_id, "type",
                                           "function", "function", "name", name, "arguments",
                                           args));
}

/* function_call, custom_tool_call, local_shell_call and tool_search_call
 * items: the call of the chat tool each was declared as (convert_tools). */
static int input_call(const json_t *item, const char *type, const char *path, json_t *messages,
                      json_t **reasoning, tg_error *err)
{
    char param[128];
    const json_t *call_id = json_object_get(item, "call_id");
    const json_t *name = json_object_get(item, "name");
    if (!json_is_string(call_id))
        call_id = json_object_get(item, "id");
    if (!json_is_string(call_id) || !json_string_length(call_id)) {
        snprintf(param, sizeof param, "%.100s.call_id", path);
        return tg_bridge_bad(err, param, "%s: a tool call needs its call_id", param);
    }
    json_t *nm, *args;
    if (!strcmp(type, "local_shell_call")) {
        json_t *action = json_deep_copy(json_object_get(item, "action"));
        if (!json_is_object(action)) {
            json_decref(action);
            action = json_object();
        }
        json_object_del(action, "type");
        nm = json_string("local_shell");
        args = args_text(action);
        json_decref(action);
    } else if (!strcmp(type, "tool_search_call")) {
        nm = json_string("tool_search");
        args = args_text(json_object_get(item, "arguments"));
    } else if (!strcmp(type, "shell_call")) {
        nm = json_string("shell");
        args = args_text(json_object_get(item, "action"));
    } else if (!strcmp(type, "apply_patch_call")) {
        nm = json_string("apply_patch");
        args = args_text(json_object_get(item, "operation"));
    } else {
        if (!json_is_string(name)) {
            snprintf(param, sizeof param, "%.100s.name", path);
            return tg_bridge_bad(err, param, "%s: a tool call needs the tool's name", param);
        }
        const char *ns = json_string_value(json_object_get(item, "namespace"));
        nm = ns && *ns ? flat_name(ns, json_string_value(name)) : json_incref((json_t *)name);
        if (!strcmp(type, "custom_tool_call")) {
            const json_t *input = json_object_get(item, "input");
            json_t *in = json_is_string(input) ? json_pack("{s:O}", "input", input)
                                               : json_pack("{s:s}", "input", "");
            args = args_text(in);
            json_decref(in);
        } else {
            args = args_text(json_object_get(item, "arguments"));
        }
    }
    add_call(messages, reasoning, call_id, nm, args);
    return 0;
}

static int input_message(const json_t *item, const char *path, json_t *messages,
                         json_t **reasoning, json_t *dropped, tg_error *err)
{
    char param[128];
    const char *role = json_string_value(json_object_get(item, "role"));
    snprintf(param, sizeof param, "%.100s.role", path);
    if (!role || (strcmp(role, "user") && strcmp(role, "assistant") && strcmp(role, "system") &&
                  strcmp(role, "developer")))
        return tg_bridge_bad(err, param, "%s: expected user, assistant, system or developer", param);
    snprintf(param, sizeof param, "%.100s.content", path);
    json_t *media = json_array();
    json_t *content = chat_content(role, json_object_get(item, "content"), param, media, dropped,
                                   err);
    if (!content) {
        json_decref(media);
        return -1;
    }
    if (!strcmp(role, "assistant")) {
        json_t *m = assistant_turn(messages, reasoning);
        json_object_set_new(m, "content", content);
    } else {
        json_array_append_new(messages, json_pack("{s:s, s:o}", "role", role, "content", content));
    }
    if (json_array_size(media)) {  /* parts chat takes from a user only */
        char note[64];
        snprintf(note, sizeof note, "(the parts of the %s message before)", role);
        json_array_insert_new(media, 0, json_pack("{s:s, s:s}", "type", "text", "text", note));
        json_array_append_new(messages, json_pack("{s:s, s:O}", "role", "user", "content", media));
    }
    json_decref(media);
    return 0;
}

/* Who answers item_reference (tg_responses_to_chat_with), and the
 * conversion's choices and records. */
typedef struct lookup {
    tg_resp_lookup fn;
    void *ud;
    conv *cv;
} lookup;

/* Items the calls of the history are (input_call). */
static bool is_call_item(const char *type)
{
    static const char *const calls[] = {"function_call",    "custom_tool_call", "local_shell_call",
                                        "tool_search_call", "shell_call",       "apply_patch_call",
                                        NULL};
    return tg_bridge_is_one_of(type, calls);
}

/* Items that answer them: tool messages. */
static bool is_output_item(const char *type)
{
    static const char *const outs[] = {"function_call_output",    "custom_tool_call_output",
                                       "local_shell_call_output", "tool_search_output",
                                       "shell_call_output",       "apply_patch_call_output",
                                       NULL};
    return tg_bridge_is_one_of(type, outs);
}

/* An apply_patch_call_output: its output text, after "[failed] " when
 * the patch did not apply. New reference. */
static json_t *patch_output(const json_t *item)
{
    const char *status = json_string_value(json_object_get(item, "status"));
    const char *out = json_string_value(json_object_get(item, "output"));
    bool failed = status && !strcmp(status, "failed");
    tg_buf t = {0};
    tg_buf_puts(&t, failed ? "[failed] " : "");
    tg_buf_puts(&t, out ? out : "");
    json_t *v = json_stringn(t.data ? t.data : "", t.len);
    tg_buf_free(&t);
    return v;
}

static int input_item(const json_t *item, size_t i, json_t *messages, json_t **reasoning,
                      const lookup *lk, tg_error *err);
static int add_tools(const json_t *tools, const char *at, json_t *out, conv *cv, tg_error *err);

/* An item_reference: the item it names, from the store, converted in its
 * place; a reference to a reference is not followed. */
static int input_reference(const json_t *item, size_t i, const char *path, json_t *messages,
                           json_t **reasoning, const lookup *lk, tg_error *err)
{
    const char *id = json_string_value(json_object_get(item, "id"));
    err->status = 0;
    json_t *found = id && lk->fn ? lk->fn(lk->ud, id, err) : NULL;
    if (!found && err->status)
        return -1;
    const char *type = json_string_value(json_object_get(found, "type"));
    if (!found || !type || !strcmp(type, "item_reference")) {
        json_decref(found);
        tg_error_set(err, 400, "invalid_request_error", "item_not_found", path,
                     "%s: item_reference '%.80s' names an item toolgate does not hold (it keeps "
                     "the items of recent answers for a while, [server] responses_store); send the "
                     "item itself, as clients do with store: false (the AI SDK: "
                     "providerOptions.openai.store = false)",
                     path, id ? id : "");
        return -1;
    }
    int rc = input_item(found, i, messages, reasoning, lk, err);
    json_decref(found);
    return rc;
}

/* Whether a tool message after messages[from] answers the call id. */
static bool answered(const json_t *messages, size_t from, const char *id)
{
    for (size_t k = from + 1; k < json_array_size(messages); k++) {
        const char *t = json_string_value(json_object_get(json_array_get(messages, k),
                                                          "tool_call_id"));
        if (t && !strcmp(t, id))
            return true;
    }
    return false;
}

/* An output without its call_id (openai 7.60 types it optional beside the
 * tool's name and namespace): the call it answers is the latest call of
 * that tool still unanswered. Borrowed from messages, or NULL. */
static const json_t *call_id_by_name(const json_t *messages, const json_t *item)
{
    const char *name = json_string_value(json_object_get(item, "name"));
    const char *ns = json_string_value(json_object_get(item, "namespace"));
    char joined[256];
    if (!name)
        return NULL;
    snprintf(joined, sizeof joined, "%.120s__%.120s", ns ? ns : "", name);
    for (size_t m = json_array_size(messages); m-- > 0;) {
        const json_t *calls = json_object_get(json_array_get(messages, m), "tool_calls");
        for (size_t c = json_array_size(calls); c-- > 0;) {
            const json_t *call = json_array_get(calls, c);
            const char *fn =
                json_string_value(json_object_get(json_object_get(call, "function"), "name"));
            const json_t *id = json_object_get(call, "id");
            if (fn && json_is_string(id) && (!strcmp(fn, name) || (ns && !strcmp(fn, joined))) &&
                !answered(messages, m, json_string_value(id)))
                return id;
        }
    }
    return NULL;
}

static int input_item(const json_t *item, size_t i, json_t *messages, json_t **reasoning,
                      const lookup *lk, tg_error *err)
{
    char path[64], param[80];
    snprintf(path, sizeof path, "input[%zu]", i);
    if (!json_is_object(item))
        return tg_bridge_bad(err, path, "%s: expected an input item object", path);
    const char *type = json_string_value(json_object_get(item, "type"));
    if (!type && json_object_get(item, "role"))
        type = "message";
    else if (!type && json_is_string(json_object_get(item, "id")))
        type = "item_reference";  /* its type is optional */
    snprintf(param, sizeof param, "%.100s.type", path);
    if (!type)
        return tg_bridge_bad(err, param, "%s: an input item needs a type", param);
    if (!strcmp(type, "message"))
        return input_message(item, path, messages, reasoning, lk->cv->dropped, err);
    const char *exec = json_string_value(json_object_get(item, "execution"));
    bool hosted = exec && !strcmp(exec, "server");  /* a tool search OpenAI ran */
    if (is_call_item(type) && !hosted)
        return input_call(item, type, path, messages, reasoning, err);
    if (is_output_item(type) && !hosted) {
        const json_t *call_id = json_object_get(item, "call_id");
        /* OpenAI's local_shell_call_output names its call by `id` (the
         * call's call_id, as its SDK types declare); Codex sends call_id */
        if (!json_is_string(call_id) && !strcmp(type, "local_shell_call_output"))
            call_id = json_object_get(item, "id");
        if (!json_is_string(call_id))
            call_id = call_id_by_name(messages, item);
        if (!json_is_string(call_id)) {
            snprintf(param, sizeof param, "%.100s.call_id", path);
            return tg_bridge_bad(err, param,
                                 "%s: a tool call's output needs the call_id it answers, or the "
                                 "name of a tool called before it and not yet answered",
                                 param);
        }
        snprintf(param, sizeof param, "%.100s.output", path);
        /* a search's answer is the tools it loaded, as JSON text */
        json_t *c = !strcmp(type, "tool_search_output")
                        ? args_text(json_object_get(item, "tools"))
                    : !strcmp(type, "shell_call_output")
                        ? args_text(json_object_get(item, "output"))
                        : !strcmp(type, "apply_patch_call_output")
                            ? patch_output(item)
                            : tool_content(json_object_get(item, "output"),
                                           json_string_value(call_id), param, lk->cv->media,
                                           lk->cv->dropped, err);
        if (!c)
            return -1;
        json_array_append_new(messages, json_pack("{s:s, s:O, s:o}", "role", "tool",
                                                  "tool_call_id", call_id, "content", c));
        return 0;
    }
    if (!strcmp(type, "reasoning")) {
        /* Encrypted reasoning is OpenAI's alone; its readable text is what
         * other providers can be given back. */
        tg_buf t = {0};
        if (*reasoning)
            tg_buf_puts(&t, json_string_value(*reasoning));
        size_t before = t.len;
        static const char *const keys[] = {"summary", "content", NULL};
        for (const char *const *k = keys; *k; k++) {
            const json_t *parts = json_object_get(item, *k);
            if (json_is_array(parts) && json_array_size(parts)) {
                if (t.len)
                    tg_buf_puts(&t, "\n");
                tg_resp_join_text(parts, &t);
            }
        }
        const char *enc = json_string_value(json_object_get(item, "encrypted_content"));
        size_t tag = strlen(ENCRYPTED_TAG);
        /* toolgate's own encrypted_content holds the whole text: it speaks
         * when the item's summary and content said nothing */
        if (t.len == before && enc && !strncmp(enc, ENCRYPTED_TAG, tag) && enc[tag]) {
            if (t.len)
                tg_buf_puts(&t, "\n");
            tg_buf_puts(&t, enc + tag);
        } else if (enc && *enc && strncmp(enc, ENCRYPTED_TAG, tag)) {  /* OpenAI's: opaque */
            tg_bridge_drop(lk->cv->dropped, "content", "reasoning.encrypted_content");
        }
        json_decref(*reasoning);
        *reasoning = t.len ? json_stringn(t.data, t.len) : NULL;
        tg_buf_free(&t);
        return 0;
    }
    if (!strcmp(type, "item_reference"))
        return input_reference(item, i, path, messages, reasoning, lk, err);
    if (!strcmp(type, "compaction") && tg_resp_input_compaction(item, messages))
        return 0;
    if (!strcmp(type, "additional_tools")) {  /* Codex's tools, in the input (add_tools) */
        char tpath[80];
        snprintf(tpath, sizeof tpath, "%.60s.tools", path);
        const json_t *tools = json_object_get(item, "tools");
        if (!tools || json_is_null(tools))
            return 0;
        return add_tools(tools, tpath, lk->cv->tools, lk->cv, err);
    }
    if (!lk->cv->o->refuse_hosted) {  /* what OpenAI's servers did: nothing to replay */
        tg_bridge_drop(lk->cv->dropped, "input", type);
        return 0;
    }
    tg_error_set(err, 400, "invalid_request_error", "unsupported_value", param,
                 "%s: '%.64s' items belong to tools that OpenAI runs, which the route "
                 "refuses rather than leave out (hosted_tools = refuse; a route to OpenAI "
                 "itself can pass /v1/responses through: responses = pass)",
                 param, type);
    return -1;
}

/* The images and files of the tool outputs just before, as one user
 * message after their tool messages (a user message between two tool
 * messages would part them from their assistant turn). */
static void flush_media(json_t *messages, json_t *media)
{
    if (!json_array_size(media))
        return;
    json_array_append_new(messages, json_pack("{s:s, s:o}", "role", "user", "content",
                                               json_copy(media)));
    json_array_clear(media);
}

static int convert_input(const json_t *input, json_t *messages, const lookup *lk, tg_error *err)
{
    if (json_is_string(input)) {
        json_array_append_new(messages, json_pack("{s:s, s:O}", "role", "user", "content", input));
        return 0;
    }
    if (!json_is_array(input))
        return tg_bridge_bad(err, "input", "%s: expected a string or an array of input items", "input");
    json_t *reasoning = NULL;
    size_t i;
    const json_t *item;
    json_array_foreach(input, i, item) {
        const char *type = json_string_value(json_object_get(item, "type"));
        if (!type || !is_output_item(type))
            flush_media(messages, lk->cv->media);
        if (input_item(item, i, messages, &reasoning, lk, err)) {
            json_decref(reasoning);
            return -1;
        }
    }
    flush_media(messages, lk->cv->media);
    json_decref(reasoning);
    return 0;
}

/* A function tool of the Responses API (or of a namespace) as a chat
 * tool named name (new reference). */
static json_t *chat_function(const json_t *t, json_t *name)
{
    json_t *fn = json_pack("{s:o}", "name", name);
    static const char *const keys[] = {"description", "parameters", "strict", NULL};
    for (const char *const *k = keys; *k; k++) {
        const json_t *v = json_object_get(t, *k);
        if (v && !json_is_null(v))
            json_object_set(fn, *k, (json_t *)v);
    }
    tg_resp_output_schema(fn, t);
    return json_pack("{s:s, s:o}", "type", "function", "function", fn);
}

/* A custom (freeform) tool, Codex's apply_patch for one, as a function
 * taking its text as {input}; the grammar goes into the description so
 * the model writes what the tool parses. New reference. */
static json_t *custom_function(const json_t *t, json_t *name)
{
    tg_buf d = {0};
    const char *desc = json_string_value(json_object_get(t, "description"));
    const json_t *fmt = json_object_get(t, "format");
    const char *syntax = json_string_value(json_object_get(fmt, "syntax"));
    const char *def = json_string_value(json_object_get(fmt, "definition"));
    tg_buf_puts(&d, desc ? desc : "");
    if (def && *def) {
        tg_buf_printf(&d, "%sThe input must follow this %s grammar:\n", d.len ? "\n\n" : "",
                      syntax ? syntax : "");
        tg_buf_puts(&d, def);
    }
    json_t *fn = json_pack("{s:o, s:s%, s:{s:s, s:{s:{s:s, s:s}}, s:[s]}}", "name", name,
                           "description", d.data ? d.data : "", d.len, "parameters", "type",
                           "object", "properties", "input", "type", "string", "description",
                           "the tool's whole input text", "required", "input");
    tg_buf_free(&d);
    return json_pack("{s:s, s:o}", "type", "function", "function", fn);
}

/* local_shell: the exec action Codex runs, as a function's parameters. */
static json_t *local_shell_function(void)
{
    return json_pack(
        "{s:s, s:{s:s, s:s, s:{s:s, s:{s:{s:s, s:{s:s}}, s:{s:s}, s:{s:s}}, s:[s]}}}", "type",
        "function", "function", "name", "local_shell", "description",
        "Runs a command on the user's machine (argv, not a shell line).", "parameters", "type",
        "object", "properties", "command", "type", "array", "items", "type", "string",
        "timeout_ms", "type", "integer", "working_directory", "type", "string", "required",
        "command");
}

/* OpenAI's shell tool run where the agent is (environment local or
 * none; a container is OpenAI's): its action as a function's parameters. */
static json_t *shell_function(void)
{
    return json_pack(
        "{s:s, s:{s:s, s:s, s:{s:s, s:{s:{s:s, s:{s:s}}, s:{s:s}, s:{s:s}}, s:[s]}}}", "type",
        "function", "function", "name", "shell", "description",
        "Runs shell commands on the user's machine, one after another; each gives its stdout, "
        "stderr and exit code.",
        "parameters", "type", "object", "properties", "commands", "type", "array", "items",
        "type", "string", "timeout_ms", "type", "integer", "max_output_length", "type",
        "integer", "required", "commands");
}

/* OpenAI's apply_patch tool, which the agent runs: one file operation
 * (create_file and update_file with a V4A diff, delete_file) as a
 * function's parameters. */
static json_t *apply_patch_function(void)
{
    return json_pack(
        "{s:s, s:{s:s, s:s, s:{s:s, s:{s:{s:s, s:[s,s,s]}, s:{s:s}, s:{s:s, s:s}}, s:[s,s]}}}",
        "type", "function", "function", "name", "apply_patch", "description",
        "Creates, updates or deletes one file of the user's workspace.", "parameters", "type",
        "object", "properties", "type", "type", "string", "enum", "create_file", "update_file",
        "delete_file", "path", "type", "string", "diff", "type", "string", "description",
        "the V4A diff: the whole file for create_file, the changes for update_file", "required",
        "type", "path");
}

/* Records that the chat tool name stands for a tool of another shape. */
static void set_kind(conv *cv, json_t *chat_name, const char *kind, const json_t *name,
                     const char *ns)
{
    json_t *k = json_pack("{s:s, s:O}", "kind", kind, "name", name);
    if (ns)
        json_object_set_new(k, "namespace", json_string(ns));
    json_object_set_new(cv->kinds, json_string_value(chat_name), k);
}

/* One tool of a namespace (function or custom), appended to out. */
static int namespaced_tool(const json_t *t, const char *ns, const char *path, json_t *out,
                           conv *cv, tg_error *err)
{
    char param[128];
    const char *type = json_string_value(json_object_get(t, "type"));
    const json_t *name = json_object_get(t, "name");
    if (!json_is_string(name)) {
        snprintf(param, sizeof param, "%.100s.name", path);
        return tg_bridge_bad(err, param, "%s: a tool needs a name", param);
    }
    json_t *flat = flat_name(ns, json_string_value(name));
    bool custom = type && !strcmp(type, "custom");
    set_kind(cv, flat, custom ? "custom" : "function", name, ns);
    json_array_append_new(out, custom ? custom_function(t, flat) : chat_function(t, flat));
    return 0;
}

/* function tools as they are; Codex's own tool shapes as functions
 * (namespaces flattened, custom, local_shell, a client tool_search); the
 * rest runs on OpenAI's servers: dropped (cv->dropped) or refused. The
 * tools of `tools` and of additional_tools items (where Codex puts them
 * for the models of its own catalog) alike, appended to out; at is where
 * they stand, for errors. */
static int add_tools(const json_t *tools, const char *at, json_t *out, conv *cv, tg_error *err)
{
    if (!json_is_array(tools))
        return tg_bridge_bad(err, at, "%s: expected an array of tools", at);
    size_t i;
    const json_t *t;
    json_array_foreach(tools, i, t) {
        char param[128], path[112];
        const char *type = json_string_value(json_object_get(t, "type"));
        const json_t *name = json_object_get(t, "name");
        const char *exec = json_string_value(json_object_get(t, "execution"));
        snprintf(path, sizeof path, "%.80s[%zu]", at, i);
        snprintf(param, sizeof param, "%s.type", path);
        bool named = json_is_string(name);
        if (type && !strcmp(type, "namespace") && named) {
            size_t j;
            const json_t *inner;
            json_array_foreach(json_object_get(t, "tools"), j, inner) {
                char ipath[160];
                snprintf(ipath, sizeof ipath, "%s.tools[%zu]", path, j);
                if (namespaced_tool(inner, json_string_value(name), ipath, out, cv, err))
                    return -1;
            }
            continue;
        }
        if (type && !strcmp(type, "custom") && named) {
            set_kind(cv, (json_t *)name, "custom", name, NULL);
            json_array_append_new(out, custom_function(t, json_incref((json_t *)name)));
            continue;
        }
        if (type && !strcmp(type, "local_shell")) {
            json_t *ls = json_string("local_shell");
            set_kind(cv, ls, "local_shell", ls, NULL);
            json_decref(ls);
            json_array_append_new(out, local_shell_function());
            continue;
        }
        const json_t *env = json_object_get(t, "environment");
        const char *env_type = json_string_value(json_object_get(env, "type"));
        if (type && ((!strcmp(type, "shell") && (!env_type || !strcmp(env_type, "local"))) ||
                     !strcmp(type, "apply_patch"))) {  /* tools the agent runs */
            json_t *nm = json_string(type);
            set_kind(cv, nm, type, nm, NULL);
            json_decref(nm);
            json_array_append_new(out, !strcmp(type, "shell") ? shell_function()
                                                               : apply_patch_function());
            continue;
        }
        if (type && !strcmp(type, "tool_search") && exec && !strcmp(exec, "client")) {
            json_t *ts = json_string("tool_search");
            set_kind(cv, ts, "tool_search", ts, NULL);
            json_array_append_new(out, chat_function(t, ts));
            continue;
        }
        if (type && strcmp(type, "function")) {
            if (!cv->o->refuse_hosted) {
                tg_bridge_drop(cv->dropped, "tools", type);
                continue;
            }
            tg_error_set(err, 400, "invalid_request_error", "unsupported_value", param,
                         "%s: '%.64s' is a tool that OpenAI runs on its own servers; the "
                         "route refuses such tools (hosted_tools = refuse) rather than leave "
                         "them out (a route to OpenAI itself can pass /v1/responses through: "
                         "responses = pass)",
                         param, type);
            return -1;
        }
        if (!type)
            return tg_bridge_bad(err, param, "%s: every tool needs a type (function, ...)", param);
        if (!named) {
            snprintf(param, sizeof param, "%s.name", path);
            return tg_bridge_bad(err, param, "%s: a function tool needs a name", param);
        }
        json_array_append_new(out, chat_function(t, json_incref((json_t *)name)));
    }
    return 0;
}

/* The request's chat tools: those of `tools`, then those of its
 * additional_tools items (cv->tools); a name declared twice is sent once,
 * as first declared (chat providers refuse a list that repeats one).
 * New reference, or NULL with err set. */
static json_t *convert_tools(const json_t *tools, conv *cv, tg_error *err)
{
    json_t *all = json_array();
    if (tools && !json_is_null(tools) && add_tools(tools, "tools", all, cv, err)) {
        json_decref(all);
        return NULL;
    }
    json_array_extend(all, cv->tools);
    json_t *out = json_array(), *seen = json_object();
    size_t i;
    json_t *t;
    json_array_foreach(all, i, t) {
        const char *name = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
        if (name && json_object_get(seen, name))
            continue;
        if (name)
            json_object_set_new(seen, name, json_true());
        json_array_append(out, t);
    }
    json_decref(seen);
    json_decref(all);
    return out;
}

/* The chat name of an allowed_tools entry: a function's or custom tool's
 * name (flattened with its namespace), or shell and apply_patch, whose
 * functions have their type's name. New reference, or NULL. */
static json_t *allowed_name(const json_t *a)
{
    const char *type = json_string_value(json_object_get(a, "type"));
    const char *name = json_string_value(json_object_get(a, "name"));
    const char *ns = json_string_value(json_object_get(a, "namespace"));
    if (name)
        return ns && *ns ? flat_name(ns, name) : json_string(name);
    if (type && (!strcmp(type, "shell") || !strcmp(type, "apply_patch") ||
                 !strcmp(type, "local_shell")))
        return json_string(type);
    return NULL;
}

/* allowed_tools has no chat form every provider takes: the tools it does
 * not allow are left out of the list, which is what it means. */
static int allowed_tools_only(json_t *chat, const json_t *choice, tg_error *err)
{
    const json_t *allowed = json_object_get(choice, "tools");
    json_t *tools = json_object_get(chat, "tools");
    if (!json_is_array(allowed))
        return tg_bridge_bad(err, "tool_choice.tools", "%s: expected the allowed tools", "tool_choice.tools");
    json_t *kept = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        const char *name = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
        size_t j;
        const json_t *a;
        json_array_foreach(allowed, j, a) {
            json_t *an = allowed_name(a);
            bool same = name && an && !strcmp(name, json_string_value(an));
            json_decref(an);
            if (same) {
                json_array_append(kept, t);
                break;
            }
        }
    }
    json_object_set_new(chat, "tools", kept);
    const char *mode = json_string_value(json_object_get(choice, "mode"));
    json_object_set_new(chat, "tool_choice", json_string(mode && !strcmp(mode, "required")
                                                             ? "required"
                                                             : "auto"));
    return 0;
}

static int convert_tool_choice(json_t *chat, const json_t *choice, conv *cv, tg_error *err)
{
    if (!choice || json_is_null(choice))
        return 0;
    if (json_is_string(choice)) {
        json_object_set(chat, "tool_choice", (json_t *)choice);
        return 0;
    }
    const char *type = json_string_value(json_object_get(choice, "type"));
    const json_t *name = json_object_get(choice, "name");
    if (type && (!strcmp(type, "function") || !strcmp(type, "custom")) && json_is_string(name)) {
        const char *ns = json_string_value(json_object_get(choice, "namespace"));
        json_t *nm = ns && *ns ? flat_name(ns, json_string_value(name)) : json_incref((json_t *)name);
        json_object_set_new(chat, "tool_choice",
                            json_pack("{s:s, s:{s:o}}", "type", "function", "function", "name", nm));
        return 0;
    }
    if (type && !strcmp(type, "allowed_tools"))
        return allowed_tools_only(chat, choice, err);
    if (type && (!strcmp(type, "shell") || !strcmp(type, "apply_patch")) &&
        json_object_get(cv->kinds, type)) {  /* declared above as a function of that name */
        json_object_set_new(chat, "tool_choice", json_pack("{s:s, s:{s:s}}", "type", "function",
                                                           "function", "name", type));
        return 0;
    }
    if (!cv->o->refuse_hosted) {  /* a hosted tool, left out with its choice */
        tg_bridge_drop(cv->dropped, "fields", "tool_choice");
        return 0;
    }
    tg_error_set(err, 400, "invalid_request_error", "unsupported_value", "tool_choice",
                 "tool_choice: '%.64s' names a tool OpenAI runs; the chat bridge takes auto, "
                 "none, required, a function or allowed_tools",
                 type ? type : "(no type)");
    return -1;
}

static int convert_text_format(json_t *chat, const json_t *text, tg_error *err)
{
    const json_t *format = json_object_get(text, "format");
    const char *type = json_string_value(json_object_get(format, "type"));
    if (!format || json_is_null(format) || (type && !strcmp(type, "text")))
        return 0;
    if (type && !strcmp(type, "json_object")) {
        json_object_set_new(chat, "response_format", json_pack("{s:s}", "type", "json_object"));
        return 0;
    }
    if (!type || strcmp(type, "json_schema"))
        return tg_bridge_bad(err, "text.format.type", "%s: expected text, json_object or json_schema",
                   "text.format.type");
    json_t *js = json_object();
    static const char *const keys[] = {"name", "description", "schema", "strict", NULL};
    for (const char *const *k = keys; *k; k++) {
        const json_t *v = json_object_get(format, *k);
        if (v && !json_is_null(v))
            json_object_set(js, *k, (json_t *)v);
    }
    if (!json_object_get(js, "name"))
        json_object_set_new(js, "name", json_string("response"));
    json_object_set_new(chat, "response_format",
                        json_pack("{s:s, s:o}", "type", "json_schema", "json_schema", js));
    return 0;
}

/* The input as an array of items: a string is one user message. New
 * reference, or NULL when it is neither. */
static json_t *input_items(const json_t *input)
{
    if (json_is_string(input))
        return json_pack("[{s:s, s:s, s:O}]", "type", "message", "role", "user", "content", input);
    return json_is_array(input) ? json_incref((json_t *)input) : NULL;
}

/* The conversation before this request when it names previous_response_id:
 * the records of the chain (tg_responses_record), oldest first, each its
 * input then its output. A chain longer than TG_RESP_CHAIN_MAX, or one that
 * loops, is cut there with the same 400 as a record toolgate does not hold.
 * New reference, or NULL with err filled. */
#define TG_RESP_CHAIN_MAX 4096
static json_t *chain_history(const char *first, const lookup *lk, tg_error *err)
{
    json_t *records = json_array();  /* newest first */
    const char *id = first;
    for (unsigned hops = 0; id; hops++) {
        err->status = 0;
        json_t *rec = hops < TG_RESP_CHAIN_MAX && lk->fn ? lk->fn(lk->ud, id, err) : NULL;
        const char *type = json_string_value(json_object_get(rec, "type"));
        /* a record kept without its input (a client that sends the whole
         * history each turn, keeps_record) cannot continue a chain */
        if (!rec || !type || strcmp(type, TG_RESP_RECORD) ||
            !json_is_array(json_object_get(rec, "input"))) {
            json_decref(rec);
            if (!err->status)  /* OpenAI's words for it */
                tg_error_set(err, 400, "invalid_request_error", "previous_response_not_found",
                             "previous_response_id",
                             "Previous response with id '%.80s' not found. (toolgate keeps recent "
                             "responses for a while, [server] responses_store; the first one "
                             "named here is '%.80s')", id, first);
            json_decref(records);  /* id may point into the last record */
            return NULL;
        }
        json_array_append_new(records, rec);
        id = json_string_value(json_object_get(rec, "previous_response_id"));
    }
    json_t *history = json_array();
    for (size_t i = json_array_size(records); i-- > 0;) {
        const json_t *rec = json_array_get(records, i);
        json_array_extend(history, json_object_get(rec, "input"));
        json_array_extend(history, json_object_get(rec, "output"));
    }
    json_decref(records);
    return history;
}

/* Whether a later previous_response_id may name this request's Response:
 * not with store: false (OpenAI's default is true), and only for a client
 * that chains, one naming previous_response_id itself or starting a
 * conversation (its input holds the user's side only). A client that sends
 * the whole history every turn (the AI SDK) never chains, and a record of
 * that history each turn would fill the store at the square of the
 * conversation's length. */
static bool keeps_record(const json_t *body)
{
    if (json_is_false(json_object_get(body, "store")))
        return false;
    const json_t *prev = json_object_get(body, "previous_response_id");
    const json_t *input = json_object_get(body, "input");
    if (json_is_string(prev) || json_is_string(input))
        return true;
    size_t i;
    const json_t *item;
    json_array_foreach(input, i, item) {
        const char *type = json_string_value(json_object_get(item, "type"));
        const char *role = json_string_value(json_object_get(item, "role"));
        if ((type && strcmp(type, "message")) || !role || !strcmp(role, "assistant"))
            return false;
    }
    return true;
}

static int refuse_stateful(const json_t *body, tg_error *err)
{
    static const char *const stateful[] = {"conversation", "prompt", NULL};
    for (const char *const *k = stateful; *k; k++) {
        const json_t *v = json_object_get(body, *k);
        if (v && !json_is_null(v)) {
            tg_error_set(err, 400, "invalid_request_error", "unsupported_parameter", *k,
                         "%s: toolgate's bridge to chat completions keeps no conversations "
                         "or prompts, so send the whole conversation in input (a route to "
                         "OpenAI itself can "
                         "pass /v1/responses through: responses = pass)",
                         *k);
            return -1;
        }
    }
    if (json_is_true(json_object_get(body, "background"))) {
        tg_error_set(err, 400, "invalid_request_error", "unsupported_parameter", "background",
                     "background: responses run in the background need a stored response, "
                     "which the chat bridge cannot keep");
        return -1;
    }
    return 0;
}

/* The input, after the chain of previous_response_id when it names one,
 * as messages. */
static int convert_all_input(const json_t *v, const json_t *prev, json_t *messages,
                             const lookup *lk, tg_error *err)
{
    if (!prev || json_is_null(prev))
        return convert_input(v, messages, lk, err);
    if (!json_is_string(prev))
        return tg_bridge_bad(err, "previous_response_id", "%s: expected a string",
                             "previous_response_id");
    json_t *all = chain_history(json_string_value(prev), lk, err);
    json_t *own = all ? input_items(v) : NULL;
    if (all && !own) {
        json_decref(all);
        return tg_bridge_bad(err, "input", "%s: expected a string or an array of input items",
                             "input");
    }
    if (!all)
        return -1;
    json_array_extend(all, own);
    json_decref(own);
    int rc = convert_input(all, messages, lk, err);
    json_decref(all);
    return rc;
}

static int convert_request(const json_t *body, json_t *chat, const lookup *lk, tg_error *err)
{
    if (refuse_stateful(body, err))
        return -1;
    json_t *messages = json_array();
    json_object_set_new(chat, "messages", messages);
    const json_t *v = json_object_get(body, "model");
    if (v)
        json_object_set(chat, "model", (json_t *)v);
    v = json_object_get(body, "instructions");
    if (json_is_string(v) && json_string_length(v))
        json_array_append_new(messages, json_pack("{s:s, s:O}", "role", "system", "content", v));
    else if (v && !json_is_null(v) && !json_is_string(v))
        return tg_bridge_bad(err, "instructions", "%s: expected a string", "instructions");
    v = json_object_get(body, "input");
    const json_t *prev = json_object_get(body, "previous_response_id");
    json_t *none = NULL;  /* input is optional beside instructions or a previous response */
    if ((!v || json_is_null(v)) && (json_array_size(messages) || json_is_string(prev)))
        v = none = json_array();
    if (!v)
        return tg_bridge_bad(err, "input",
                             "%s: required without instructions or previous_response_id (a string "
                             "or an array of input items)",
                             "input");
    int rc = convert_all_input(v, prev, messages, lk, err);
    json_decref(none);
    if (rc)
        return -1;
    json_t *tools = convert_tools(json_object_get(body, "tools"), lk->cv, err);
    if (!tools)
        return -1;
    if (json_array_size(tools))
        json_object_set_new(chat, "tools", tools);
    else
        json_decref(tools);
    if (convert_tool_choice(chat, json_object_get(body, "tool_choice"), lk->cv, err))
        return -1;
    v = json_object_get(body, "text");
    if (json_is_object(v) && convert_text_format(chat, v, err))
        return -1;
    v = json_object_get(json_object_get(body, "reasoning"), "effort");
    if (json_is_string(v))
        json_object_set(chat, "reasoning_effort", (json_t *)v);
    v = json_object_get(body, "max_output_tokens");
    if (v && !json_is_null(v))
        json_object_set(chat, "max_tokens", (json_t *)v);
    /* logprobs come when include names them (top_logprobs alone returns
     * none, and chat refuses top_logprobs without logprobs); what it asks
     * of the items of tools OpenAI runs, which the bridge leaves out, is
     * said */
    static const char *const own[] = {"reasoning.encrypted_content",
                                      "message.output_text.logprobs",
                                      "message.input_image.image_url", NULL};
    size_t i;
    json_array_foreach(json_object_get(body, "include"), i, v) {
        if (json_is_string(v) && !tg_bridge_is_one_of(json_string_value(v), own))
            tg_bridge_drop(lk->cv->dropped, "include", json_string_value(v));
    }
    json_array_foreach(json_object_get(body, "include"), i, v) {
        const char *s = json_string_value(v);
        if (s && !strcmp(s, "message.output_text.logprobs")) {
            json_object_set_new(chat, "logprobs", json_true());
            v = json_object_get(body, "top_logprobs");
            if (json_is_integer(v))
                json_object_set(chat, "top_logprobs", (json_t *)v);
            break;
        }
    }
    tg_resp_params(chat, body, lk->cv->dropped);
    if (json_is_true(json_object_get(body, "stream"))) {
        json_object_set_new(chat, "stream", json_true());
        /* the Response's usage comes from the chat stream's last chunk */
        json_object_set_new(chat, "stream_options", json_pack("{s:b}", "include_usage", 1));
    }
    const char *k;
    json_t *extra;
    json_object_foreach((json_t *)body, k, extra) {
        if (!tg_bridge_is_one_of(k, responses_keys))
            json_object_set(chat, k, extra);
    }
    return 0;
}

int tg_responses_to_chat(const json_t *body, json_t **chat, tg_resp_bridge **bridge,
                         tg_error *err)
{
    return tg_responses_to_chat_with(body, NULL, NULL, chat, bridge, err);
}

int tg_responses_to_chat_with(const json_t *body, tg_resp_lookup fn, void *ud, json_t **chat,
                              tg_resp_bridge **bridge, tg_error *err)
{
    static const tg_bridge_opts dflt = {0};
    return tg_responses_to_chat_opts(body, &dflt, fn, ud, chat, bridge, err);
}

int tg_responses_to_chat_opts(const json_t *body, const tg_bridge_opts *o, tg_resp_lookup fn,
                              void *ud, json_t **chat, tg_resp_bridge **bridge, tg_error *err)
{
    conv cv = {o, NULL, NULL, NULL, NULL};
    lookup lk = {fn, ud, &cv};
    *chat = NULL;
    *bridge = NULL;
    if (!json_is_object(body)) {
        tg_error_set(err, 400, "invalid_request_error", "invalid_type", NULL,
                     "request body must be a JSON object");
        return -1;
    }
    json_t *c = json_object();
    cv.dropped = json_object();
    cv.kinds = json_object();
    cv.tools = json_array();
    cv.media = json_array();
    int rc = convert_request(body, c, &lk, err);
    json_decref(cv.tools);
    json_decref(cv.media);
    if (rc) {
        json_decref(c);
        json_decref(cv.dropped);
        json_decref(cv.kinds);
        return -1;
    }
    tg_resp_bridge *b = tg_calloc(1, sizeof *b);
    b->echo = json_object();
    for (const char *const *k = echoed_keys; *k; k++) {
        json_t *v = json_object_get(body, *k);
        if (v)
            json_object_set(b->echo, *k, v);
    }
    size_t i;
    const json_t *inc;
    json_array_foreach(json_object_get(body, "include"), i, inc) {
        const char *s = json_string_value(inc);
        if (s && !strcmp(s, "reasoning.encrypted_content"))
            b->encrypted = true;
    }
    const json_t *prev = json_object_get(body, "previous_response_id");
    if (json_is_string(prev))
        b->previous = json_incref((json_t *)prev);
    b->stored = !json_is_false(json_object_get(body, "store"));
    if (keeps_record(body))
        b->input = input_items(json_object_get(body, "input"));
    b->msg_at = b->reason_at = -1;
    b->dropped = cv.dropped;
    b->kinds = cv.kinds;
    b->raw = json_object();
    b->arrived = (json_int_t)time(NULL);
    *chat = c;
    *bridge = b;
    return 0;
}

const json_t *tg_resp_bridge_dropped_peek(const tg_resp_bridge *b)
{
    return b ? b->dropped : NULL;
}

void tg_resp_bridge_free(tg_resp_bridge *b)
{
    if (!b)
        return;
    json_decref(b->echo);
    json_decref(b->id);
    json_decref(b->model);
    json_decref(b->output);
    json_decref(b->calls);
    json_decref(b->logprobs);
    json_decref(b->kinds);
    json_decref(b->raw);
    json_decref(b->dropped);
    json_decref(b->input);
    json_decref(b->previous);
    json_decref(b->final);
    json_decref(b->compact_users);
    tg_chat_reader_free(&b->rd);
    tg_buf_free(&b->text);
    tg_buf_free(&b->reason);
    free(b);
}

static size_t strip_markers_deep(json_t *v, const char *prefix, size_t plen)
{
    size_t n = 0, i;
    const char *k;
    json_t *val;
    void *tmp;
    if (json_is_array(v)) {
        json_array_foreach(v, i, val) n += strip_markers_deep(val, prefix, plen);
        return n;
    }
    json_object_foreach_safe(v, tmp, k, val) {
        if (!strncmp(k, prefix, plen)) {
            json_object_del(v, k);
            n++;
        } else {
            n += strip_markers_deep(val, prefix, plen);
        }
    }
    return n;
}

size_t tg_responses_strip_markers(json_t *body, const char *prefix)
{
    size_t plen = prefix ? strlen(prefix) : 0;
    if (!plen || !json_is_object(body))
        return 0;
    size_t n = tg_bridge_strip_keys(body, prefix, plen);
    return n + strip_markers_deep(json_object_get(body, "input"), prefix, plen);
}

