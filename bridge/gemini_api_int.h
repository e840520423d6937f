/* gemini_api_int.h -- what the two files of the Gemini bridge share:
 * gemini_request.c (the request side, which makes the bridge) and
 * gemini_answer.c (the answer and its stream). Private to the bridge. */
#ifndef TG_GEMINI_API_INT_H
#define TG_GEMINI_API_INT_H

#include <stdbool.h>

#include "bridge/bridge.h"
#include "core/buf.h"
#include "core/tg.h"

/* The bridge: what the request side leaves for the answer (the path's
 * model, how it streams, what was dropped) and the stream's state. */
struct tg_gem_bridge {
    json_t *model;         /* the path's model, when the answer names none */
    bool stream, sse;
    tg_chat_reader rd;     /* the chat stream read so far (bridge.h) */
    size_t n_out;          /* responses written (the array's commas) */
    bool closed;           /* the JSON array's ] is written */
    json_t *id, *version;  /* the stream's responseId and modelVersion */
    json_t *call;          /* the call being gathered: {key, id, name, sig}, or NULL */
    tg_buf args;           /* its arguments so far */
    json_t *calls_done;    /* {key: true} of calls sent */
    json_t *dropped;       /* {kind: [name]} left out upward (bridge.h) */
};

#endif
