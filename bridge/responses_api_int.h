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
    bool stored;           /* the request did not say store: false */
    json_t *final;         /* the last Response object made (whole or the
                              stream's last event's), for its record */
    json_t *compact_users; /* /responses/compact: the conversation's user
                              messages as items (responses_compact.c) */
};

/* A reasoning item's encrypted_content when the request includes
 * reasoning.encrypted_content: the reasoning text under this tag. Clients
 * treat it as opaque and send it back (the AI SDK with store:false drops
 * every reasoning item that has none), so a replayed item whose summary is
 * empty still gives its text back; OpenAI's own (untagged) stays opaque. */
#define ENCRYPTED_TAG "toolgate:"

/* The text of parts [{type, text}] (input_text, output_text, summary_text,
 * reasoning_text, refusal), joined onto out; -1 when a part carries no
 * text (responses_params.c, the leaf every other file reads text by). */
int tg_resp_join_text(const json_t *parts, tg_buf *out);
/* A part's text (its "text", else its "refusal"), or NULL: borrowed. */
const json_t *tg_resp_part_text(const json_t *part);

/* The request's top-level parameters beside its conversation and tools
 * into chat (borrowed body, chat gains keys), what has no chat form
 * recorded in dropped (responses_params.c). */
void tg_resp_params(json_t *chat, const json_t *body, json_t *dropped);
/* A function tool's output_schema, which chat's function has no field
 * for, appended to fn's description (responses_params.c). */
void tg_resp_output_schema(json_t *fn, const json_t *t);

#endif
