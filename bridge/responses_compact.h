/* responses_compact.h -- what responses_compact.c gives the request side
 * of the Responses bridge: a compaction item it made, read back in a later
 * input. Private to the bridge. Its own header, not responses_api_int.h,
 * so that the request side's dependence on the compact side is an include
 * layers.py sees, and nothing runs back: compact reads text and the
 * Response object (responses_params.c, responses_answer.c), never the
 * request side. */
#ifndef TG_RESPONSES_COMPACT_H
#define TG_RESPONSES_COMPACT_H

#include <stdbool.h>

#include "core/tg.h"

/* A compaction item the bridge made: its summary as an assistant message
 * onto messages, true; false for OpenAI's own (opaque to another model). */
bool tg_resp_input_compaction(const json_t *item, json_t *messages);

#endif
