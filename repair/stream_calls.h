/* stream_calls.h -- which call an upstream tool-call fragment belongs to,
 * and a call sent once it is whole (stream_calls.c). Private to repair/. */
#ifndef TG_STREAM_CALLS_H
#define TG_STREAM_CALLS_H

#include "repair/stream_state.h"

/* Calls of one message at most: a fragment that would open one more is
 * dropped and counted (call_dropped). No model sends a thousand calls in
 * one message; a hostile upstream that sends a fresh index or id in every
 * chunk would otherwise make each fragment's search longer (20,000 calls
 * took 4.7 s of one worker's CPU, growing as the square). */
#define TG_RS_MAX_CALLS 1024

#define TG_RS_CALL_NEW (-1)      /* the fragment opens a new call */
#define TG_RS_CALL_SUMMARY (-2)  /* it repeats a finished call: nothing new */

/* The call a fragment (index idx or -1, id, name, arguments a) belongs to:
 * its position in c->calls, or TG_RS_CALL_NEW or TG_RS_CALL_SUMMARY (the
 * table is at its definition). The stream repair and the fold of a stream
 * into a whole answer (collect.c) both place fragments by it. */
long tg_rs_find_call(schoice *c, long idx, const char *id, const char *name, const char *a,
                     size_t alen);
/* One element of delta.tool_calls. */
void tg_rs_take_call_delta(tg_stream *s, schoice *c, const json_t *tc, json_t *events);
/* Send call k if it is complete and named (meta calls stay with us). */
void tg_rs_try_send(tg_stream *s, schoice *c, scall *k, json_t *events);
/* Call i (or none, -1) is complete: it goes out if it can. */
void tg_rs_complete_call(tg_stream *s, schoice *c, long i, json_t *events);

#endif
