/* stream_live.h -- a streamed call relayed as its fragments come
 * (stream_live.c). Private to repair/. */
#ifndef TG_STREAM_LIVE_H
#define TG_STREAM_LIVE_H

#include "repair/stream_state.h"

/* Is the repair of a whole call of upstream tool `name`, its arguments one
 * strict object, the identity (decided once per tool)? */
bool tg_rs_tool_is_identity(tg_stream *s, const char *name);
/* Is a call of upstream tool `name` relayed live (stream_args and the
 * identity)? */
bool tg_rs_tool_is_live(tg_stream *s, const char *name);
/* The call starts live: index, id, type, name and the arguments so far. */
void tg_rs_open_live(tg_stream *s, schoice *c, scall *k, json_t *events);
/* Its arguments that came since and keep them one object's start go out. */
void tg_rs_relay_live(tg_stream *s, schoice *c, scall *k, json_t *extra, json_t *events);
/* The call has ended: what the agent lacks of it, then what waited. */
void tg_rs_close_live(tg_stream *s, schoice *c, scall *k, json_t *events);

#endif
