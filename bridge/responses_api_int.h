/* responses_api_int.h -- what the three files of the Responses bridge
 * share: responses_request.c (the request side, which makes the bridge),
 * responses_answer.c (the Response object) and responses_events.c (the
 * event stream). Private to the bridge. */
#ifndef TG_RESPONSES_API_INT_H
#define TG_RESPONSES_API_INT_H

#include <stdbool.h>

#include "bridge/bridge.h"
#include "bridge/responses_api.h"
#include "core/buf.h"
#include "core/tg.h"

/* The bridge: what the request side leaves for the answer (the echoed
 * fields, the kinds of the tools, what was dropped, the record's input)
 * and the stream's state. */
struct tg_resp_bridge {
    json_t *echo;          /* request fields every Response repeats */
    bool encrypted;        /* include asked for reasoning.encrypted_content */
    /* stream state */
    tg_chat_reader rd;     /* the chat stream read so far (bridge.h) */
    json_int_t seq;        /* sequence_number of the next event */
    json_t *id;            /* the Response's id and envelope, from the first chunk */
    json_t *model;
    json_int_t created;
    json_int_t arrived;    /* when the request came: created_at when upstream names none */
    json_t *output;        /* every item so far, in output_index order */
    int msg_at, reason_at; /* output index of the open message / reasoning item, -1 */
    int part_kind;         /* the open part of the message: 0 none, 1 text, 2 refusal */
    tg_buf text;           /* the open part's or reasoning summary's text so far */
    json_t *logprobs;      /* the open output_text part's logprobs so far */
    tg_buf reason;
    json_t *calls;         /* {chat tool_calls index: output index} of open calls */
    unsigned n_items;      /* for item ids */
    char name[64];         /* the caller's unique name for ids, or "" */
    json_t *kinds;         /* {chat tool name: {kind, name[, namespace]}} of the
                              tools declared in another shape than a plain
                              function (see set_kind) */
    json_t *raw;           /* {output index: arguments so far} of such calls, streamed */
    json_t *dropped;       /* {kind: [name]} left out upward (bridge.h) */
    json_t *input;         /* the request's own input items, for its record,
                              or NULL when the request said store: false */
    json_t *previous;      /* previous_response_id as sent, or NULL */
};

/* A reasoning item's encrypted_content when the request includes
 * reasoning.encrypted_content: the reasoning text under this tag. Clients
 * treat it as opaque and send it back (the AI SDK with store:false drops
 * every reasoning item that has none), so a replayed item whose summary is
 * empty still gives its text back; OpenAI's own (untagged) stays opaque. */
#define ENCRYPTED_TAG "toolgate:"

/* The text of parts [{type, text}] (input_text, output_text, summary_text,
 * reasoning_text, refusal), joined onto out; -1 when a part carries no
 * text. */
int tg_resp_join_text(const json_t *parts, tg_buf *out);

/* Chat usage in the Responses API's names, or null. */
json_t *tg_resp_usage(const json_t *u);
/* The Response object (new reference) around output (borrowed). status:
 * completed | incomplete | failed | in_progress, from the chat
 * finish_reason where it is done; usage and error are stolen (NULL: null). */
json_t *tg_resp_object(tg_resp_bridge *b, json_t *id, json_t *model, json_int_t created,
                       const char *status, const char *finish, json_t *output, json_t *usage,
                       json_t *error);
/* The reasoning item's encrypted_content, when asked for (see ENCRYPTED_TAG). */
void tg_resp_set_encrypted(tg_resp_bridge *b, json_t *item, const char *text, size_t n);
/* The next item's id, "<kind>_<n>_<name>" (new reference). */
json_t *tg_resp_item_id(tg_resp_bridge *b, const char *kind);
/* The Response's id (new reference), "resp_<name>". */
json_t *tg_resp_response_id(const tg_resp_bridge *b, const json_t *chat_id);
/* An output_text part (with empty annotations and logprobs) or, type
 * "refusal", a refusal part, of text's n bytes (new reference). */
json_t *tg_resp_text_part(const char *type, const char *text, size_t n);
/* The kind a chat tool name stands for ("function" when it is a plain
 * function tool); *k the record (b->kinds) or NULL. */
const char *tg_resp_kind_of(const tg_resp_bridge *b, const char *name, const json_t **k);
/* A call of a tool declared in another shape than a function (kind, k
 * from tg_resp_kind_of), whole, from its arguments' text (id stolen). */
json_t *tg_resp_shaped_item(json_t *id, const char *kind, const json_t *k, const char *call_id,
                            const char *args, const char *status);
/* A chat tool call (borrowed) as the output item of its kind (id stolen). */
json_t *tg_resp_call_item(const tg_resp_bridge *b, json_t *id, const json_t *call,
                          const char *status);

#endif
