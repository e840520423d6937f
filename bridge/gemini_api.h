/* gemini_api.h -- Google's Gemini API (/v1beta/models/MODEL:generateContent
 * and :streamGenerateContent) over chat completions, for agents that speak
 * only that API (Gemini CLI, the @google/genai SDK) to providers that have
 * chat completions.
 *
 *   GenerateContentRequest -> tg_gemini_to_chat -> (the whole chat pipeline)
 *   -> chat answer -> tg_gemini_answer / tg_gemini_stream
 *   -> GenerateContentResponse (whole, SSE events or a JSON array)
 *
 * Like the Responses and Messages bridges it is the outermost stage on
 * both sides, so hygiene, schema dialects, discovery and repair apply
 * unchanged. The model, and whether the answer streams and how, are in the
 * request's path and query, not its body: the caller reads them
 * (tg_gemini_path) and says them in a tg_gemini_call. Gemini's function
 * calls have no ids in the history an agent sends back (Gemini before 3.5
 * gives none): the bridge makes them from the call's place, and a
 * functionResponse takes the id of the first unanswered call of its name.
 * What only Google's servers run (googleSearch, codeExecution, urlContext,
 * cached contents...) is left out and listed (tg_gem_bridge_dropped_peek),
 * or refused with a 400 naming it when the route says hosted_tools =
 * refuse. Errors take Gemini's shape (tg_gemini_error_body). Ownership
 * follows core/tg.h.
 */
#ifndef TG_GEMINI_API_H
#define TG_GEMINI_API_H

#include <stdbool.h>

#include "bridge/bridge.h"
#include "core/buf.h"
#include "core/tg.h"

typedef struct tg_gem_bridge tg_gem_bridge;

/* What the request's path and query say. */
typedef struct tg_gemini_call {
    const char *model;  /* from the path, without "models/" */
    bool stream;        /* :streamGenerateContent */
    bool sse;           /* ?alt=sse: SSE events; else a JSON array of responses */
} tg_gemini_call;

/* The methods a path past the route prefix names. */
typedef enum {
    TG_GEM_NONE = 0,    /* not a Gemini API path */
    TG_GEM_LIST,        /* GET  /v1beta/models */
    TG_GEM_MODEL,       /* GET  /v1beta/models/MODEL */
    TG_GEM_GENERATE,    /* POST /v1beta/models/MODEL:generateContent */
    TG_GEM_STREAM,      /* POST ...:streamGenerateContent */
    TG_GEM_COUNT,       /* POST ...:countTokens */
    TG_GEM_OTHER,       /* another method (embedContent...): passed or refused */
} tg_gem_method;

/* The method rest names, and its model (copied into model, at most cap-1
 * bytes; "" for the list). /v1/models/MODEL:METHOD counts too (the SDK's
 * apiVersion 'v1', its default), and /v1/models and /v1/models/MODEL when
 * v1_models says the client is Gemini's (they are OpenAI's paths too). */
tg_gem_method tg_gemini_path(const char *rest, bool v1_models, char *model, size_t cap);

/* The request body (borrowed) as a chat completions body (*chat, new
 * reference) and the bridge that will shape its answer (*bridge, owned by
 * the caller). 0, or -1 with err filled (400, param naming the field) and
 * nothing left behind. */
int tg_gemini_to_chat(const json_t *body, const tg_gemini_call *call, const tg_bridge_opts *o,
                      json_t **chat, tg_gem_bridge **bridge, tg_error *err);
/* What the conversion left out, {kind: [name]} (borrowed; bridge.h). */
const json_t *tg_gem_bridge_dropped_peek(const tg_gem_bridge *b);

/* A whole chat.completion (borrowed) as a GenerateContentResponse (new
 * reference). */
json_t *tg_gemini_answer(tg_gem_bridge *b, const json_t *completion);

/* A chat completion stream's SSE text, in pieces of any size, as the
 * answer's stream (appended to out): "data: {response}" events with
 * alt=sse, else the pieces of one JSON array. tg_gemini_stream_end closes
 * it (the array's "]"; an error when the chat stream stopped unfinished). */
void tg_gemini_stream(tg_gem_bridge *b, const char *sse, size_t n, tg_buf *out);
void tg_gemini_stream_end(tg_gem_bridge *b, tg_buf *out);
/* A whole chat.completion to a request that asked for a stream (a
 * provider that answered whole): the stream, one response long. */
void tg_gemini_answer_stream(tg_gem_bridge *b, const json_t *completion, tg_buf *out);
/* Did the request ask for a stream? */
bool tg_gemini_streams(const tg_gem_bridge *b);
/* The stream's Content-Type: text/event-stream, or application/json for
 * the JSON array. */
const char *tg_gemini_stream_type(const tg_gem_bridge *b);

void tg_gem_bridge_free(tg_gem_bridge *b);

/* countTokens where the target counts none: an estimate from the chat
 * request's text (a token per 4 bytes of its messages and tools), which
 * the caller says is one. */
json_int_t tg_gemini_count_estimate(const json_t *chat);

/* A Model resource for name (without "models/"), new reference. */
json_t *tg_gemini_model_info(const char *name);

/* An error answer (status, body of n bytes) in Gemini's shape
 * {"error":{"code","message","status"}}: malloc'd text (*len set), or NULL
 * when the body is already in that shape or is no JSON error at all.
 * Gemini's OpenAI-compatible endpoint wraps its errors in an array; the
 * object inside is what the API's clients read. */
char *tg_gemini_error_body(int status, const char *body, size_t n, size_t *len);

#endif
