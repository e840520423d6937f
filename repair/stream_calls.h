/* stream_calls.h -- which call an upstream tool-call fragment belongs to,
 * and a call sent once it is whole (stream_calls.c). Private to repair/. */
#ifndef TG_STREAM_CALLS_H
#define TG_STREAM_CALLS_H

#include "repair/stream_state.h"

/* The call a fragment (index idx or -1, id, name, arguments a) belongs to:
 * its position in c->calls, or negative for a new call or a repeated
 * summary of a finished one (the table is at its definition). */
long tg_rs_find_call(schoice *c, long idx, const char *id, const char *name, const char *a,
                     size_t alen);
/* One element of delta.tool_calls. */
void tg_rs_take_call_delta(tg_stream *s, schoice *c, const json_t *tc, json_t *events);
/* Send call k if it is complete and named (meta calls stay with us). */
void tg_rs_try_send(tg_stream *s, schoice *c, scall *k, json_t *events);
/* Call i (or none, -1) is complete: it goes out if it can. */
void tg_rs_complete_call(tg_stream *s, schoice *c, long i, json_t *events);

#endif
