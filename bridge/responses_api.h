/* responses_api.h -- OpenAI's Responses API (/v1/responses) over chat
 * completions, for agents that speak the newer API (the AI SDK's default
 * OpenAI model, the Agents SDK, Codex) to providers that only have chat.
 *
 *   Responses request -> tg_responses_to_chat -> (the whole chat pipeline)
 *   -> chat answer -> tg_responses_answer / tg_responses_stream -> Response
 *
 * The bridge is the outermost stage on both sides: everything between sees
 * an ordinary chat request and answer, so hygiene, schema dialects,
 * discovery and repair apply unchanged. Stateless like the rest of
 * toolgate: what needs the provider's stored state (conversation, prompt)
 * is refused with a 400 naming the field, never guessed; tools only
 * OpenAI's servers run are left out and listed (tg_resp_bridge_dropped_peek),
 * or refused when the route says so; an item_reference and a
 * previous_response_id are answered from the caller's store of recent
 * items and responses (itemstore.h, tg_responses_record) when it holds
 * them, and refused with OpenAI's 400 when it does not.
 * Ownership follows core/tg.h.
 */
#ifndef TG_RESPONSES_API_H
#define TG_RESPONSES_API_H

#include "bridge/bridge.h"
#include "core/buf.h"
#include "core/tg.h"

typedef struct tg_resp_bridge tg_resp_bridge;

/* The Responses request body (borrowed) as a chat completions body (*chat,
 * new reference), and the bridge that will shape its answer (*bridge, owned
 * by the caller). 0, or -1 with err filled (400, param naming the field). */
int tg_responses_to_chat(const json_t *body, json_t **chat, tg_resp_bridge **bridge,
                         tg_error *err);

/* The same, with fn answering item_reference inputs: the item an id names
 * (new reference), or NULL when it does not hold it (then a 400), or NULL
 * with err filled (err->status set) when it cannot tell, such as a store
 * that cannot be reached: that error is the answer. */
typedef json_t *(*tg_resp_lookup)(void *ud, const char *id, tg_error *err);
int tg_responses_to_chat_with(const json_t *body, tg_resp_lookup fn, void *ud, json_t **chat,
                              tg_resp_bridge **bridge, tg_error *err);
/* The same with the route's choices (bridge.h); the two above use the
 * defaults (hosted tools dropped). */
int tg_responses_to_chat_opts(const json_t *body, const tg_bridge_opts *o, tg_resp_lookup fn,
                              void *ud, json_t **chat, tg_resp_bridge **bridge, tg_error *err);
/* What the conversion left out, {kind: [name]} (borrowed; bridge.h). */
const json_t *tg_resp_bridge_dropped_peek(const tg_resp_bridge *b);

/* Names the Response and its items from unique (at most 63 bytes), which a
 * store of items needs; without it ids come from the chat answer's id. */
void tg_resp_bridge_name(tg_resp_bridge *b, const char *unique);

/* The output items of the Response made so far (new reference), for the
 * caller to keep where item_reference can find them. */
json_t *tg_responses_items(const tg_resp_bridge *b);

/* What a later previous_response_id naming this Response needs, for the
 * caller to keep under the record's "id" beside the items: {type:
 * TG_RESP_RECORD, id, previous_response_id, input, output} (new reference),
 * or NULL when the request said store: false or no Response was made. */
#define TG_RESP_RECORD "toolgate.response"
json_t *tg_responses_record(const tg_resp_bridge *b);

/* The stored-response endpoints on a bridged route (responses_stored.c),
 * from a record (borrowed, parsed): the Response it holds (new reference;
 * encrypted: include[] asked for reasoning.encrypted_content), or NULL
 * when it is no record of a Response (a tombstone, an item). */
json_t *tg_responses_stored(const json_t *record, bool encrypted);
/* What DELETE leaves under a response's and its items' ids: an entry that
 * every lookup takes for a missing one (new reference). */
#define TG_RESP_DELETED "toolgate.deleted"
json_t *tg_responses_tombstone(const char *id);
/* GET /v1/responses/{id}/input_items's query (NULL: not given). */
typedef struct tg_resp_list_query {
    const char *after, *before, *order, *limit;
} tg_resp_list_query;
/* Its answer, a ResponseItemList (*list, new reference), or -1 with err
 * filled (400 naming the query parameter). The record's input as sent,
 * each item with an id (its own, else one made from the response's id). */
int tg_responses_input_list(const json_t *record, const tg_resp_list_query *q, json_t **list,
                            tg_error *err);
/* GET /v1/responses/{id}?stream=true: the stored Response (borrowed) as
 * the event stream that would have sent it, each text in one delta, the
 * events numbered past starting_after only (-1: all); appended to out. */
void tg_responses_replay(const json_t *response, json_int_t starting_after, tg_buf *out);

/* POST /v1/responses/compact (responses_compact.c): the CompactParams body
 * as a chat request asking the model for a summary of the conversation
 * (arguments as tg_responses_to_chat_opts), and its chat answer as the
 * CompactedResponse (new reference). */
int tg_responses_compact_to_chat(const json_t *body, const tg_bridge_opts *o, tg_resp_lookup fn,
                                 void *ud, json_t **chat, tg_resp_bridge **bridge, tg_error *err);
json_t *tg_responses_compacted(tg_resp_bridge *b, const json_t *completion);

/* A whole chat.completion (borrowed) as a Response object (new reference). */
json_t *tg_responses_answer(tg_resp_bridge *b, const json_t *completion);

/* A chat completion stream's SSE text, in pieces of any size, as the
 * Responses API's event stream (appended to out). The chat stream's
 * [DONE] ends the response; tg_responses_stream_end ends it when the chat
 * stream stopped without one. */
void tg_responses_stream(tg_resp_bridge *b, const char *sse, size_t n, tg_buf *out);
void tg_responses_stream_end(tg_resp_bridge *b, tg_buf *out);

void tg_resp_bridge_free(tg_resp_bridge *b);

/* For a route that passes /v1/responses to a provider that has the API:
 * the agent's private keys (starting with prefix, "_" by default) go from
 * the body's top level and from its input items at any depth, as hygiene
 * takes them from a chat request; tool schemas, whose property names are
 * the agent's data, and metadata are left alone. Returns how many went. */
size_t tg_responses_strip_markers(json_t *body, const char *prefix);

/* An estimate of the input tokens of a Responses request (borrowed), for
 * /v1/responses/input_tokens on a bridged route (responses_count.c). */
json_int_t tg_responses_count_estimate(const json_t *body);

#endif
