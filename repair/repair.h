/* repair.h -- the response-repair stage, for whole answers and for streams.
 * The rules are one table shared by both paths (repair_rules.h); whole
 * answers are repaired in repair.c, streams in repair_stream.c (with its
 * stream_*.c), the tool-calls-in-text parsers (R12, R27) are in
 * repair_text.c and the lenient JSON repair in core/jsonfix.c.
 *
 * What the agent is guaranteed (docs/dialects.md section 9, rules 8 to 11): every
 * tool call has a non-empty id unique in its message, type "function", the
 * agent's own tool name, and arguments as a string parsing to a JSON object
 * (unless even the bounded JSON repair failed: then the call is still
 * delivered, and the failure is counted in ctx->stats.repair_failures and
 * recorded in ctx->explain as rule "json_fix_failed"); finish_reason is
 * "tool_calls" exactly when the choice carries calls ("length" and
 * "content_filter" are kept); streamed calls have dense indexes from 0.
 */
#ifndef TG_REPAIR_H
#define TG_REPAIR_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/dialect.h"
#include "core/tg.h"
#include "repair/repair_rules.h"

struct tg_ctx;

/* Non-streamed: repair a parsed chat.completion in place. Also accepts error
 * bodies (any JSON shape). Returns:
 *   0  resp repaired (or left alone); the HTTP status stays as it was;
 *   TG_REPAIR_NOW_SUCCESS (2)  resp was a Groq tool_use_failed error whose
 *      failed_generation named a declared tool (R27): resp is now a normal
 *      chat.completion carrying that call, and the caller must answer 200. */
#define TG_REPAIR_NOW_SUCCESS 2
int tg_repair_response(json_t *resp, struct tg_ctx *ctx);

/* R15 against a schema the caller holds rather than one of the agent's
 * tools (discovery's meta-tools): in args, a JSON-encoded string where the
 * schema declares an array, object, number or boolean (and no string) is
 * replaced by its value, each noted in ctx. Returns how many were. */
int tg_repair_decode_args(struct tg_ctx *ctx, const json_t *params, json_t *args);

/* The agent sent the legacy functions[] (ctx->legacy_functions): its first
 * tool call becomes message.function_call and finish_reason "tool_calls"
 * becomes "function_call", in place. The last response stage. */
void tg_repair_legacy_answer(json_t *resp);

/* Byte-level look at a whole answer: true when it is surely a JSON object
 * that no rule would touch (no tool calls, no error, no content list, no
 * empty role, no discovery round or text recovery pending), so the caller
 * may relay it without parsing. False means "parse and repair". */
bool tg_repair_surely_plain(const struct tg_ctx *ctx, const char *body, size_t n);
/* Whether every choice of a whole answer ends with stop, length or
 * content_filter (R10): the other half of the shortcut's test. */
bool tg_repair_finish_plain(const char *body, size_t n);

/* A provider's error answer in the shape every OpenAI client reads,
 * {"error": {"message", "type", "param", "code"}}: NULL when the body has
 * that shape already (relay it as it came), else a new body (the caller
 * frees it, *outlen its length) whose message is the provider's message
 * (Gemini's [{"error": ...}], Mistral's and vLLM's top-level message,
 * FastAPI's detail, plain text) and whose error.provider_error keeps the
 * provider's whole JSON body. */
char *tg_upstream_error_body(const char *body, size_t len, long status, size_t *outlen);

/* A whole chat.completion (already repaired) as the stream it would have
 * been: per choice a role/content chunk, one chunk with all its tool calls,
 * a finish chunk (usage on the last), then [DONE]; appended to out as SSE
 * events. -1 (out untouched) when resp has no choices array. */
int tg_completion_sse(json_t *resp, tg_buf *out);

/* Streamed. One tg_stream per upstream response; the network code feeds it
 * each SSE event's data payload (without "data: ", not NUL-terminated; the
 * final "[DONE]" included) and writes out whatever it appends to `out`
 * (complete SSE events, "data: ...\n\n"). */
typedef struct tg_stream tg_stream;
tg_stream *tg_stream_new(struct tg_ctx *ctx);
void tg_stream_event(tg_stream *s, const char *data, size_t len, tg_buf *out);
/* An event that gives the agent nothing while it has had nothing for `ms`
 * (default 3000) is answered with an SSE comment, ": keepalive", so that
 * idle timeouts do not cut a stream whose tool call is held. 0: after every
 * such event (tests). */
void tg_stream_set_keepalive(tg_stream *s, unsigned ms);
/* The time (CLOCK_MONOTONIC, in µs) of the events fed until the next call,
 * for that keepalive: a caller that feeds the events of one read together
 * reads the clock once for all of them (a tool-call stream's 24 events
 * come in one read). 0: each event reads the clock. */
void tg_stream_clock(tg_stream *s, uint64_t now_us);
/* Tests: the events a byte scan would relay unparsed take the full parse
 * instead, to compare the two. TG_SCAN_ARGS: a live call's argument
 * fragments (byte for byte the same on any input); TG_SCAN_PLAIN: plain
 * text chunks (the same on valid JSON; an event cut short that still ends
 * in a brace goes to the client as it came); TG_SCAN_EVENT: a call's first
 * chunk and a finish written as toolgate would write them, and a held
 * call's first chunk so written (byte for byte the same on any input);
 * TG_SCAN_HELD: a held call's argument fragments
 * (byte for byte the same on any input); TG_SCAN_HELD_END: a finish that
 * releases held calls, the calls written from the scan (the same);
 * TG_SCAN_RUN: of a live or held call's fragments, one of the same shape
 * as the one just taken, taken without the checks again (the same). */
#define TG_SCAN_ARGS 1u
#define TG_SCAN_PLAIN 2u
#define TG_SCAN_EVENT 4u
#define TG_SCAN_HELD 8u
#define TG_SCAN_HELD_END 16u
#define TG_SCAN_RUN 32u
void tg_stream_no_scan(tg_stream *s, unsigned which);
/* Upstream ended. transport_error: the transfer broke (reset, timeout).
 * Flushes what is held back; a stream that never finished becomes an error
 * event followed by [DONE] (R26), never a fake stop.
 * Returns 1 with *next_body (new reference) when discovery needs another
 * upstream round: the network code then sends *next_body upstream and keeps
 * feeding the SAME tg_stream, so the agent sees one stream (one finish, one
 * [DONE]). Returns 0 when the agent's stream is complete. */
int tg_stream_end(tg_stream *s, bool transport_error, tg_buf *out, json_t **next_body);
/* The assistant message whose meta-tool calls tg_stream_end would answer
 * next (a new reference), or NULL when the stream holds none: the proxy
 * prepares what their answers need (a search's embeddings) before. */
json_t *tg_stream_round_message(tg_stream *s);
/* The provider refused the next upstream round (status, its body of len
 * bytes) while the agent's stream is open: the provider's error, in
 * OpenAI's shape with its status beside it (error.status), then [DONE],
 * end the stream. What was held back of the round before is dropped: it
 * was the meta-tool call the round answered. */
void tg_stream_round_refused(tg_stream *s, long status, const char *body, size_t len,
                             tg_buf *out);
/* The network code gives up on the stream (an event past max_event, a
 * shutdown): what is held goes out as for a cut stream, then an error
 * event {"error": {"message": msg, "code": code}} and [DONE]; a stream
 * whose finish already went gets only its [DONE]. No more rounds. */
void tg_stream_fail(tg_stream *s, const char *code, const char *msg, tg_buf *out);
void tg_stream_free(tg_stream *s);

#endif
