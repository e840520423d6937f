/* messages_deferred.h -- what messages_deferred.c (the tools Claude Code
 * defers, named only in its text) gives the request side
 * (messages_request.c). Private to the Messages bridge, apart from
 * messages_api_int.h so that the content blocks' file, which the deferred
 * tools' file uses, includes nothing of it. */
#ifndef TG_MESSAGES_DEFERRED_H
#define TG_MESSAGES_DEFERRED_H

#include "bridge/messages_api_int.h"

/* The tool names text lists as deferred (Claude Code's "The following
 * deferred tools are ...:" lists), set in names ({name: true}). */
void tg_msg_deferred_names(const char *text, size_t len, json_t *names);
/* On a discovery route, a catalog stub appended to tools (the chat
 * request's, converted) for each tool the request's system or user text
 * names as deferred and no tool of tools is; with discovery = auto only
 * when all of them are more than its threshold (else nothing would hide
 * the stubs from the model). */
void tg_msg_deferred_stubs(const json_t *body, json_t *tools, conv *cv);

#endif
