/* repair.c -- identity placeholder; response repair lands in its own issue.
 * The stream side already re-frames each upstream event as one SSE event and
 * turns a broken transfer into an error event (never a fake stop). */
#include "repair.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"

struct tg_stream {
    tg_ctx *ctx;
    bool done;  /* saw [DONE] */
};

void tg_repair_rules_preset(tg_dialect d, tg_repair_rules *out)
{
    memset(out, 0, sizeof *out);
    out->dialect = d;
}

int tg_repair_rules_set(tg_repair_rules *r, const char *key, const char *value,
                        char *msg, size_t msglen)
{
    (void)r;
    (void)value;
    snprintf(msg, msglen, "unknown repair rule '%s'", key);
    return -1;
}

int tg_repair_response(json_t *resp, tg_ctx *ctx)
{
    (void)resp;
    (void)ctx;
    return 0;
}

tg_stream *tg_stream_new(tg_ctx *ctx)
{
    tg_stream *s = calloc(1, sizeof *s);
    if (s)
        s->ctx = ctx;
    return s;
}

void tg_stream_event(tg_stream *s, const char *data, size_t len, tg_buf *out)
{
    if (len == 6 && memcmp(data, "[DONE]", 6) == 0)
        s->done = true;
    tg_buf_append(out, "data: ", 6);
    tg_buf_append(out, data, len);
    tg_buf_append(out, "\n\n", 2);
}

int tg_stream_end(tg_stream *s, bool transport_error, tg_buf *out, json_t **next_body)
{
    *next_body = NULL;
    if (s->done)
        return 0;
    tg_buf_puts(out, "data: {\"error\":{\"message\":\"");
    tg_buf_puts(out, transport_error ? "upstream stream broke before it finished"
                                     : "upstream stream ended without [DONE]");
    tg_buf_puts(out, "\",\"type\":\"upstream_error\",\"param\":null,"
                     "\"code\":\"stream_truncated\"}}\n\ndata: [DONE]\n\n");
    return 0;
}

void tg_stream_free(tg_stream *s)
{
    free(s);
}
