/* messages_api.h -- Anthropic's Messages API (/v1/messages) over chat
 * completions, for agents that speak only that API (Claude Code, the
 * Anthropic SDK, the AI SDK's Anthropic provider) to providers that have
 * chat completions.
 *
 *   Messages request -> tg_messages_to_chat -> (the whole chat pipeline)
 *   -> chat answer -> tg_messages_answer / tg_messages_stream -> Message
 *
 * Like the Responses bridge (responses_api.h) it is the outermost stage on
 * both sides: everything between sees an ordinary chat request and answer,
 * so hygiene, schema dialects, discovery and repair apply unchanged. What
 * only Anthropic's servers can do (server tools such as web_search, MCP
 * connectors, code execution containers) is left out and listed
 * (tg_msg_bridge_dropped_peek), or refused with a 400 naming the field when
 * the route says so (tg_bridge_opts); what the target takes in another
 * form (a PDF as its text where it takes no PDF, a search_result as text)
 * is translated and listed (tg_msg_bridge_translated_peek).
 * Errors in OpenAI's shape become Anthropic's (tg_messages_error_body).
 * Ownership follows core/tg.h.
 */
#ifndef TG_MESSAGES_API_H
#define TG_MESSAGES_API_H

#include "bridge/bridge.h"
#include "core/buf.h"
#include "core/tg.h"

typedef struct tg_msg_bridge tg_msg_bridge;

/* The Messages request body (borrowed) as a chat completions body (*chat,
 * new reference), and the bridge that will shape its answer (*bridge, owned
 * by the caller). 0, or -1 with err filled (400, param naming the field)
 * and nothing left behind. */
int tg_messages_to_chat(const json_t *body, json_t **chat, tg_msg_bridge **bridge,
                        tg_error *err);
/* The same with the route's choices (bridge.h); tg_messages_to_chat uses
 * the defaults (hosted tools dropped). */
int tg_messages_to_chat_opts(const json_t *body, const tg_bridge_opts *o, json_t **chat,
                             tg_msg_bridge **bridge, tg_error *err);
/* What the conversion left out, {kind: [name]} (borrowed; bridge.h). */
const json_t *tg_msg_bridge_dropped_peek(const tg_msg_bridge *b);
/* What it gave in another form than sent ({kind: [name]}, borrowed): a
 * PDF as its text, a search_result as text... (X-Toolgate-Translated). */
const json_t *tg_msg_bridge_translated_peek(const tg_msg_bridge *b);

/* A whole chat.completion (borrowed) as a Message object (new reference). */
json_t *tg_messages_answer(tg_msg_bridge *b, const json_t *completion);

/* A chat completion stream's SSE text, in pieces of any size, as the
 * Messages API's event stream (appended to out). The chat stream's [DONE]
 * ends the message (message_stop); tg_messages_stream_end ends it with an
 * error event when the chat stream stopped without one. */
void tg_messages_stream(tg_msg_bridge *b, const char *sse, size_t n, tg_buf *out);
void tg_messages_stream_end(tg_msg_bridge *b, tg_buf *out);

void tg_msg_bridge_free(tg_msg_bridge *b);

/* An estimate of the input tokens of a Messages request (borrowed), for
 * /v1/messages/count_tokens where the route's provider has no count
 * (messages_count.c says how it is made). */
json_int_t tg_messages_count_estimate(const json_t *body);

/* An error answer (status, body of n bytes) in Anthropic's shape
 * {"type":"error","error":{"type","message"}}: malloc'd text (*len set), or
 * NULL when the body is already in that shape or is no JSON error at all
 * (then it goes as it came). The error type comes from the status, as
 * Anthropic's does (400 invalid_request_error, 401 authentication_error,
 * 404 not_found_error, 429 rate_limit_error, 529 overloaded_error, ...). */
char *tg_messages_error_body(int status, const char *body, size_t n, size_t *len);

/* For a route that passes /v1/messages to a provider that has the API: the
 * agent's private keys (starting with prefix, "_" by default) go from the
 * body's top level, from every message and from its content blocks (and
 * the blocks of a tool_result); tool schemas, a tool_use's input (the
 * model's arguments) and metadata are left alone. Returns how many went. */
size_t tg_messages_strip_markers(json_t *body, const char *prefix);

#endif
