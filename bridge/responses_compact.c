/* responses_compact.c -- POST /v1/responses/compact on a bridged route
 * (openai 7.60's client.responses.compact, CompactedResponse).
 *
 * OpenAI compacts a conversation into "all user messages, followed by a
 * single compaction item" whose encrypted_content is its own opaque state.
 * A chat provider has no such call, so the bridge asks the route's model
 * for a summary: the conversation (input, after its previous_response_id
 * chain, converted as any Responses request) then one user message asking
 * for it. The answer is the conversation's user messages and a compaction
 * item whose encrypted_content is that summary under the bridge's tag
 * (responses_api_int.h); sent back in a later input, the bridge gives the
 * model the summary in its place (responses_request.c). A client that
 * gives OpenAI's own compaction items to a bridged route has them dropped
 * and said, as before: they mean nothing to another model.
 */
#include "bridge/responses_api.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bridge/bridge.h"
#include "bridge/responses_answer.h"
#include "bridge/responses_api_int.h"
#include "bridge/responses_compact.h"
#include "core/jsonio.h"

#define COMPACT_ASK                                                                          \
    "Summarize the conversation so far for your own later use: the task, what was done "    \
    "and decided, the facts, names, paths and values found, and what remains to do. Write " \
    "only the summary."

/* The body keys CompactParams declares that a chat request carries; the
 * rest (image, prompt_cache_options, prompt_cache_retention) are said. */
static const char *const compact_keys[] = {"model", "input", "instructions",
                                           "previous_response_id", "prompt_cache_key",
                                           "service_tier", NULL};

/* A chat user message as the Responses message item the compacted output
 * lists (new reference). */
static json_t *user_item(const json_t *msg)
{
    const json_t *c = json_object_get(msg, "content");
    json_t *parts = json_array();
    if (json_is_string(c))
        json_array_append_new(parts, json_pack("{s:s, s:O}", "type", "input_text", "text", c));
    size_t i;
    const json_t *p;
    json_array_foreach(c, i, p) {
        const char *type = json_string_value(json_object_get(p, "type"));
        const json_t *url = json_object_get(json_object_get(p, "image_url"), "url");
        if (type && !strcmp(type, "text"))
            json_array_append_new(parts, json_pack("{s:s, s:O?}", "type", "input_text", "text",
                                                   json_object_get(p, "text")));
        else if (type && !strcmp(type, "image_url") && json_is_string(url))
            json_array_append_new(parts, json_pack("{s:s, s:O, s:s}", "type", "input_image",
                                                   "image_url", url, "detail", "auto"));
    }
    return json_pack("{s:s, s:s, s:o}", "type", "message", "role", "user", "content", parts);
}

int tg_responses_compact_to_chat(const json_t *body, const tg_bridge_opts *o, tg_resp_lookup fn,
                                 void *ud, json_t **chat, tg_resp_bridge **bridge, tg_error *err)
{
    if (!json_is_object(body))
        return tg_responses_to_chat_opts(body, o, fn, ud, chat, bridge, err);
    json_t *req = json_object(), *said = json_array();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)body, k, v) {
        if (tg_bridge_is_one_of(k, compact_keys))
            json_object_set(req, k, v);
        else if (!json_is_null(v))
            json_array_append_new(said, json_string(k));
    }
    json_object_set_new(req, "store", json_false());  /* a summary call leaves no record */
    int rc = tg_responses_to_chat_opts(req, o, fn, ud, chat, bridge, err);
    json_decref(req);
    if (rc) {
        json_decref(said);
        return -1;
    }
    tg_resp_bridge *b = *bridge;
    size_t i;
    json_array_foreach(said, i, v) tg_bridge_drop(b->dropped, "fields", json_string_value(v));
    json_decref(said);
    json_t *messages = json_object_get(*chat, "messages");
    b->compact_users = json_array();
    json_array_foreach(messages, i, v) {
        const char *role = json_string_value(json_object_get(v, "role"));
        if (role && !strcmp(role, "user"))
            json_array_append_new(b->compact_users, user_item(v));
    }
    json_array_append_new(messages, json_pack("{s:s, s:s}", "role", "user", "content",
                                              COMPACT_ASK));
    json_object_del(*chat, "stream");  /* CompactParams has no stream */
    json_object_del(*chat, "stream_options");
    return 0;
}

json_t *tg_responses_compacted(tg_resp_bridge *b, const json_t *completion)
{
    const json_t *choice = json_array_get(json_object_get(completion, "choices"), 0);
    const json_t *content = json_object_get(json_object_get(choice, "message"), "content");
    tg_buf t = {0};
    tg_buf_puts(&t, ENCRYPTED_TAG);
    if (json_is_string(content))
        tg_buf_append(&t, json_string_value(content), json_string_length(content));
    else
        tg_resp_join_text(content, &t);
    json_t *id = tg_resp_response_id(b, json_object_get(completion, "id"));
    json_t *output = b->compact_users ? json_deep_copy(b->compact_users) : json_array();
    json_array_append_new(output, json_pack("{s:s, s:o, s:s%}", "type", "compaction", "id",
                                            tg_resp_item_id(b, "cmp"), "encrypted_content",
                                            t.data, t.len));
    tg_buf_free(&t);
    const json_t *created = json_object_get(completion, "created");
    return json_pack("{s:o, s:s, s:I, s:o, s:o}", "id", id, "object", "response.compaction",
                     "created_at",
                     json_is_integer(created) ? json_integer_value(created)
                                              : (json_int_t)time(NULL),
                     "output", output, "usage", tg_resp_usage(json_object_get(completion, "usage")));
}

/* A compaction item that /v1/responses/compact on a bridged route made
 * (responses_compact.c): its summary, as an assistant message in its
 * place. true when it was one; OpenAI's own (opaque) is not. */
bool tg_resp_input_compaction(const json_t *item, json_t *messages)
{
    const char *enc = json_string_value(json_object_get(item, "encrypted_content"));
    size_t tag = strlen(ENCRYPTED_TAG);
    if (!enc || strncmp(enc, ENCRYPTED_TAG, tag) || !enc[tag])
        return false;
    tg_buf t = {0};
    tg_buf_puts(&t, "Summary of the conversation so far:\n");
    tg_buf_puts(&t, enc + tag);
    json_array_append_new(messages, json_pack("{s:s, s:s%}", "role", "assistant", "content",
                                              t.data, t.len));
    tg_buf_free(&t);
    return true;
}
