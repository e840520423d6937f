/* responses_answer.h -- what responses_answer.c (the Response object and
 * its items) gives the event stream (responses_events.c). Private to the
 * Responses bridge; the request side needs none of it, so it includes only
 * responses_api_int.h and no include runs back from the request side to
 * the answer side. */
#ifndef TG_RESPONSES_ANSWER_H
#define TG_RESPONSES_ANSWER_H

#include "bridge/responses_api_int.h"

/* Chat usage in the Responses API's names, or null. */
json_t *tg_resp_usage(const json_t *u);
/* The Response object (new reference) around output (borrowed). status:
 * completed | incomplete | failed | in_progress, from the chat
 * finish_reason where it is done; usage and error are stolen (NULL: null). */
json_t *tg_resp_object(tg_resp_bridge *b, json_t *id, json_t *model, json_int_t created,
                       const char *status, const char *finish, json_t *output, json_t *usage,
                       json_t *error);
/* The reasoning item's encrypted_content, when asked for (see ENCRYPTED_TAG). */
/* Keeps response (borrowed) as the Response the record repeats. */
void tg_resp_keep_final(tg_resp_bridge *b, const json_t *response);
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
