/* sse.h -- incremental Server-Sent Events parser.
 *
 * Feed it bytes as they arrive, split anywhere (one byte at a time works);
 * it calls on_event once per complete event with the event's data (data
 * lines joined by "\n", as the SSE spec says). Lines end in LF, CR or CRLF,
 * even when the CR and the LF arrive in different reads. Comment lines
 * (":...") go to on_comment when set, so keep-alives can be relayed.
 * The data handed to on_event is valid during the call only and is not
 * NUL-terminated (most often it is the line in the bytes fed, uncopied).
 */
#ifndef TG_SSE_H
#define TG_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"

typedef void (*tg_sse_event_fn)(void *user, const char *event, const char *data,
                                size_t len);
typedef void (*tg_sse_comment_fn)(void *user, const char *text, size_t len);

typedef struct tg_sse {
    tg_sse_event_fn on_event;
    tg_sse_comment_fn on_comment;  /* may be NULL */
    void *user;
    tg_buf line;   /* the current, unfinished line */
    tg_buf data;   /* data of the current event */
    const char *pend;  /* or its one data line, still in the bytes being fed */
    size_t pend_len;
    tg_buf event;  /* event name of the current event */
    bool has_data;
    bool last_cr;  /* previous byte was CR: a following LF is part of it */
    size_t max_event;  /* 0 = unlimited; larger events are an error */
    bool overflow;
} tg_sse;

void tg_sse_init(tg_sse *p, tg_sse_event_fn on_event, tg_sse_comment_fn on_comment,
                 void *user);
/* Returns 0, or -1 once a line or an event's data grew past max_event:
 * the parser then drops what it held and every later byte (finish
 * delivers nothing), and the caller ends the stream. */
int tg_sse_feed(tg_sse *p, const char *bytes, size_t n);
/* End of input: an event not closed by a blank line is still delivered
 * (providers often end on "data: [DONE]" with no blank line). */
void tg_sse_finish(tg_sse *p);
void tg_sse_free(tg_sse *p);

#endif
