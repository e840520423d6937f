/* stream_relay.h -- events that go out as the very bytes that came
 * (stream_relay.c). Each answers true when it relayed the event (appended
 * to out) with the bookkeeping the full parse would have done; false when
 * the event must take the parse. Private to repair/. */
#ifndef TG_STREAM_RELAY_H
#define TG_STREAM_RELAY_H

#include "repair/stream_state.h"

/* A parsed chunk that is a live call's plain argument fragment. */
bool tg_rs_relay_raw(tg_stream *s, const json_t *chunk, const char *raw, size_t len,
                     tg_buf *out);
/* The same judged on a scan of the event's bytes (no parse). run: s->run
 * as it was before this event (the caller clears it for every event). */
bool tg_rs_live_fragment(tg_stream *s, const char *data, size_t len, tg_buf *out,
                         unsigned run);
/* A held call's plain argument fragment, on the same scan: its arguments
 * are kept and nothing goes out (out is not touched). run: as above. */
bool tg_rs_held_fragment(tg_stream *s, const char *data, size_t len, unsigned run);
/* A call's first chunk or a finish that no rule changes, on a scan. */
bool tg_rs_relay_event(tg_stream *s, const char *data, size_t len, tg_buf *out);
/* A chunk surely without anything to repair: a cheap, conservative test
 * (the caller relays it). */
bool tg_rs_surely_plain(const tg_stream *s, const char *d, size_t n);

#endif
