/* repair.h -- the response-repair stage, for whole answers and for streams.
 * The rules are one table shared by both paths (repair.c).
 */
#ifndef TG_REPAIR_H
#define TG_REPAIR_H

#include <stdbool.h>

#include "buf.h"
#include "dialect.h"
#include "tg.h"

struct tg_ctx;

typedef struct tg_repair_rules {
    tg_dialect dialect;
    unsigned flags;        /* TG_RR_* bits, defined in repair.c */
    bool text_tool_calls;  /* R12: recover tool calls written into content */
} tg_repair_rules;

void tg_repair_rules_preset(tg_dialect d, tg_repair_rules *out);
int tg_repair_rules_set(tg_repair_rules *r, const char *key, const char *value,
                        char *msg, size_t msglen);

/* Non-streamed: repair a parsed chat.completion in place. */
int tg_repair_response(json_t *resp, struct tg_ctx *ctx);

/* Streamed. One tg_stream per upstream response; the network code feeds it
 * each SSE event's data payload (without "data: ", not NUL-terminated; the
 * final "[DONE]" included) and writes out whatever it appends to `out`
 * (complete SSE events, "data: ...\n\n"). */
typedef struct tg_stream tg_stream;
tg_stream *tg_stream_new(struct tg_ctx *ctx);
void tg_stream_event(tg_stream *s, const char *data, size_t len, tg_buf *out);
/* Upstream ended. transport_error: the transfer broke (reset, timeout).
 * Flushes what is held back; a stream that never finished becomes an error
 * event followed by [DONE] (R26), never a fake stop.
 * Returns 1 with *next_body (new reference) when discovery needs another
 * upstream round: the network code then sends *next_body upstream and keeps
 * feeding the SAME tg_stream, so the agent sees one stream (one finish, one
 * [DONE], usage summed). Returns 0 when the agent's stream is complete. */
int tg_stream_end(tg_stream *s, bool transport_error, tg_buf *out, json_t **next_body);
void tg_stream_free(tg_stream *s);

#endif
