/* messages_api_int.h -- what the files of the Messages bridge share:
 * messages_request.c (the request's frame and tools, which makes the
 * bridge), messages_content.c (content blocks: a user message, a
 * tool_result, documents, search results) and messages_answer.c (the
 * answer and its stream; messages_count.c estimates a request's tokens).
 * Private to the bridge. */
#ifndef TG_MESSAGES_API_INT_H
#define TG_MESSAGES_API_INT_H

#include <stdbool.h>

#include "bridge/bridge.h"
#include "core/buf.h"
#include "core/tg.h"

/* The kind of the stream's open content block. */
enum { BLK_NONE, BLK_TEXT, BLK_THINKING, BLK_TOOL };

/* The bridge: what the request side leaves for the answer (the model, the
 * stop sequences, what was dropped or translated) and the stream's state. */
struct tg_msg_bridge {
    json_t *model;         /* the request's model, when the answer names none */
    json_t *stops;         /* the request's stop_sequences, or NULL */
    /* stream state */
    tg_chat_reader rd;     /* the chat stream read so far (bridge.h) */
    int n_blocks;          /* blocks opened so far: the next one's index */
    int open;              /* BLK_* of the open block */
    json_t *call_key;      /* chat tool_calls index (as text) of the open tool block */
    tg_buf args;           /* its arguments so far, sent when the block closes */
    json_t *calls_done;    /* {index: true} of tool blocks closed */
    json_t *dropped;       /* {kind: [name]} left out upward (bridge.h) */
    json_t *translated;    /* {kind: [name]} given upward in another form */
};

/* What the request conversion reads and records besides the body. */
typedef struct conv {
    const tg_bridge_opts *o;
    json_t *dropped;       /* {kind: [name]} left out (X-Toolgate-Dropped) */
    json_t *translated;    /* {kind: [name]} given in another form (X-Toolgate-Translated) */
    json_t *loaded;        /* {name: true}: deferred tools a tool_reference loaded */
    json_t *added;         /* [tool]: definitions tool_addition blocks added */
    const json_t *tools;   /* the request's tools (borrowed), or NULL */
} conv;

bool tg_msg_is_type(const json_t *block, const char *type);
/* Blocks of tools only Anthropic runs (server_tool_use, *_tool_result...). */
bool tg_msg_is_server_block(const char *type);
/* Is type a content block the Messages API declares (a known one the
 * bridge drops rather than refuses)? */
bool tg_msg_is_declared_block(const char *type);
/* Text blocks (or a string) joined by blank lines into t; -1 naming the
 * first block that is not text. */
int tg_msg_join_text(const json_t *v, tg_buf *t, const char *path, tg_error *err);
/* A block's cache_control onto part when the target takes it, else the
 * drop said (an optimization hint only). */
void tg_msg_carry_cache(json_t *part, const json_t *blk, conv *cv);
/* A text block's citations, said as dropped (content text.citations). */
void tg_msg_note_citations(const json_t *blk, conv *cv);
/* Parts as chat content: a string when all are plain text, else the parts
 * as they are. Steals parts. */
json_t *tg_msg_content_of(json_t *parts);
/* The tool_reference blocks of a tool_search_tool_result's content, as
 * loaded tools. */
void tg_msg_note_references(const json_t *refs, conv *cv);
/* A tool_addition block: a reference loads a deferred tool, a definition
 * joins the tools (cv->added); true when it was one of those (said as
 * translated), false for what has no chat form (an MCP reference). */
bool tg_msg_tool_addition(const json_t *blk, conv *cv);
/* A compaction's tool_changes: each addition as a tool_addition block;
 * a removal, or an addition with no chat form, said as dropped. */
void tg_msg_tool_changes(const json_t *blk, conv *cv);
/* The tool of tools (an array of Messages tools) called name, or NULL. */
const json_t *tg_msg_tool_named(const json_t *tools, const char *name);
/* A user message's blocks as chat messages appended to messages: its
 * tool_results as tool messages, then one user message with the rest
 * (what a tool returned that a tool message cannot hold, first). */
int tg_msg_user_message(const json_t *content, const char *path, json_t *messages, conv *cv,
                        tg_error *err);

#endif
