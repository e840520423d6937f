/* bridge.h -- what the agent-API bridges share (responses_api.h for
 * OpenAI's Responses API, messages_api.h for Anthropic's Messages API,
 * gemini_api.h for Google's Gemini API; each a request side and an answer
 * side, <api>_request.c and <api>_answer.c): reading the repaired chat
 * stream they are fed, writing their own event stream, and the few JSON
 * helpers of both directions. Ownership follows core/tg.h. */
#ifndef TG_BRIDGE_H
#define TG_BRIDGE_H

#include <stdbool.h>

#include "core/buf.h"
#include "core/tg.h"

/* What a bridge does with what the chat upstream cannot carry: tools
 * that only the API's own servers run (web search, code execution, MCP
 * connectors...), their items in the history, server-side containers.
 * By default they are dropped and the drop is reported (tg_bridge_drop);
 * refuse_hosted (a route's `hosted_tools = refuse`) makes each a 400
 * naming it, as toolgate did before. */
typedef struct tg_bridge_opts {
    bool refuse_hosted;
    /* what the route's target takes (proxy/bridges.c reads its dialect) */
    bool file_parts;      /* chat `file` content parts holding a PDF (OpenAI) */
    bool cache_control;   /* cache_control on content parts and tools (Anthropic) */
    bool discovery;       /* the route collapses tools behind search_tools */
    int discovery_above;  /* with discovery = auto: only above this many tools
                             (0: always, discovery = on) */
    /* the worker's cache (core/cache.h; borrowed, may be NULL): a PDF in
     * a conversation's history is read once, not every turn */
    struct tg_cache *cache;
} tg_bridge_opts;

/* The kind of what is dropped that changes no answer, only its cost
 * (cache_control): said in the header, neither counted nor logged. */
#define TG_BRIDGE_HINTS "hints"

/* Records in dropped ({kind: [name, ...]}, borrowed) that name of kind
 * ("tools", "input", "fields"...) was left out; a name is listed once. */
void tg_bridge_drop(json_t *dropped, const char *kind, const char *name);
/* What a function gives back (schema, borrowed), told where a chat model
 * reads it: "It returns JSON of this schema: ..." after fn's description
 * (a Responses function's output_schema, a Gemini declaration's response
 * schema; chat's function has no field for it). */
void tg_bridge_describe_returns(json_t *fn, const json_t *schema);
/* dropped as one header line, "tools web_search, file_search; fields
 * container" (malloc'd), or NULL when nothing was dropped. */
char *tg_bridge_dropped_text(const json_t *dropped);
/* The number of names in dropped. */
size_t tg_bridge_dropped_count(const json_t *dropped);

/* A 400 invalid_value naming param; fmt has one %s, for what. Returns -1. */
int tg_bridge_bad(tg_error *err, const char *param, const char *fmt, const char *what);
/* Is k one of the NULL-terminated list? */
bool tg_bridge_is_one_of(const char *k, const char *const *list);
/* The integer at o[k1] (or o[k1][k2]), 0 when it is not one. */
json_int_t tg_bridge_int_at(const json_t *o, const char *k1, const char *k2);
/* A chat message's or delta's reasoning text (reasoning_content, or the
 * reasoning some providers send instead, or the texts of its
 * reasoning_details: MiniMax's reasoning_split sends only those), or NULL
 * when it has none. The details' texts are joined in *own, which the
 * caller frees; the string fields are borrowed from msg. */
const char *tg_bridge_reasoning(const json_t *msg, tg_buf *own);
/* A whole completion's finish_reason (choice 0's), or "content_filter"
 * for Azure OpenAI's answer to a prompt its filter blocked: no choice at
 * all, and a prompt_filter_results entry with a filtered category
 * (microsoft/agent-framework-go#473). NULL when neither says. */
const char *tg_bridge_finish(const json_t *completion);

/* A part a tool returned that a chat tool message cannot hold (an
 * image_url or file part, stolen): it joins media, the parts of the user
 * message that follows the tool messages, after a note naming the call
 * (once a call), and the tool's own text (*n_text parts so far) says
 * where it went. Both bridges move images this way (rule: a chat tool
 * message holds text only; OpenAI-compatible providers refuse the rest). */
void tg_bridge_tool_media(json_t *media, const char *call_id, json_t *part, tg_buf *text,
                          size_t *n_text);

/* Takes the keys of object o that start with prefix (plen bytes, not 0):
 * the agent's private markers, for a route that passes the API through
 * (tg_responses_strip_markers, tg_messages_strip_markers). How many went;
 * 0 when o is no object. */
size_t tg_bridge_strip_keys(json_t *o, const char *prefix, size_t plen);

/* Writes the event (stolen), an object whose "type" names it, as
 * "event: TYPE\ndata: JSON\n\n", the framing both APIs' streams use. */
void tg_bridge_emit(tg_buf *out, json_t *ev);

/* The repaired chat stream a bridge is fed, read into what it says, for
 * the bridge's callbacks (b is the bridge, out its event stream): start
 * first (chunk NULL when none came), then choice 0's deltas in order, then
 * finish at [DONE] or fail at an error event. Nothing follows those. call
 * is one tool_calls entry of a delta, with its key: its index as text, or
 * its place in the delta when a provider streams calls without one; it
 * returns false when the bridge itself had to end the stream (a call it
 * cannot send whole), after writing its own error. */
typedef struct tg_chat_events {
    void (*start)(void *b, const json_t *chunk, tg_buf *out);
    void (*reasoning)(void *b, const char *text, tg_buf *out);
    void (*text)(void *b, const char *text, const json_t *logprobs, tg_buf *out);
    void (*refusal)(void *b, const char *text, tg_buf *out);
    bool (*call)(void *b, const json_t *call, const char *key, tg_buf *out);
    void (*finish)(void *b, tg_buf *out);
    void (*fail)(void *b, const json_t *error, tg_buf *out);
} tg_chat_events;

/* What the reader keeps of the stream, for the bridge to read too. */
typedef struct tg_chat_reader {
    tg_buf pending;       /* SSE text short of a whole event */
    bool started, finished;
    bool quiet;           /* comments (keepalives) are not copied: the bridge's
                             stream is no SSE (Gemini's JSON array) */
    json_t *usage;        /* the latest chat usage, or NULL */
    char finish[32];      /* choice 0's finish_reason, or "" */
    json_t *stop_reason;  /* choice 0's stop_reason (vLLM names the stop string), or NULL */
} tg_chat_reader;

/* The chat stream's SSE text, in pieces of any size. */
void tg_chat_read(tg_chat_reader *rd, const tg_chat_events *ev, void *b, const char *sse,
                  size_t n, tg_buf *out);
/* The chat stream stopped: one that did not finish fails as truncated
 * (never a made-up end). */
void tg_chat_read_end(tg_chat_reader *rd, const tg_chat_events *ev, void *b, tg_buf *out);
void tg_chat_reader_free(tg_chat_reader *rd);

/* Token estimates (count_tokens, input_tokens on a bridged route: a chat
 * provider counts nothing without generating): the characters of every
 * string a request's parts hold, and tokens counted otherwise (images,
 * pages, framing). The walk skips the keys in `skip` (NULL-ended: ids,
 * types) and asks `leaf` first about each object, which counts a part
 * whose bytes are no text (an image, a PDF) and returns true to stop the
 * walk there; leaf may be NULL. */
typedef struct tg_tally {
    size_t chars;      /* UTF-8 characters of text */
    json_int_t fixed;  /* tokens counted otherwise */
} tg_tally;
typedef bool (*tg_tally_leaf)(const json_t *v, tg_tally *t);
size_t tg_utf8_chars(const char *s, size_t n);
void tg_tally_value(const json_t *v, tg_tally *t, tg_tally_leaf leaf, const char *const *skip);
/* The tools' definitions as compact JSON, but deferred ones (defer_loading:
 * not in the prompt until a tool search loads them). */
void tg_tally_tools(const json_t *tools, tg_tally *t);

#endif
