/* fold.c -- an answer in the other mode than the agent asked for (fold.h).
 *
 * A provider that streams what was asked for whole (a backend that always
 * streams, a gateway forcing SSE) has its events folded into the answer
 * they stand for: chat chunks by repair/collect.c, a passed-through
 * Responses or Messages stream by bridge/api_fold.c. The folded answer
 * replaces the collected body as JSON, and the whole answer's path goes on
 * with it. Either way of changing the mode is said (tg_answer_mode_said).
 */
#include "proxy/fold.h"

#include <stdlib.h>
#include <string.h>

#include "bridge/api_fold.h"
#include "core/jsonio.h"
#include "proxy/log.h"
#include "proxy/sse.h"
#include "repair/collect.h"

/* The provider answered in the other mode than asked, and toolgate gave
 * the agent the mode it asked for: said as a translation of the answer
 * (X-Toolgate-Translated, the metric, an info line). */
void tg_answer_mode_said(tg_req *r, const char *what)
{
    tg_buf t = {0};
    if (r->prep.translated)
        tg_buf_printf(&t, "%s; ", r->prep.translated);
    tg_buf_printf(&t, "answer %s", what);
    free(r->prep.translated);
    r->prep.translated = tg_buf_steal(&t, NULL);
    tg_metrics_translated(r->w->metrics, 1);
    tg_log(TG_LOG_INFO, "request %s: upstream %s answered %s than asked: %s", r->id,
           r->route->upstream, r->ctx.stream ? "whole rather" : "a stream rather", what);
}

/* Each event of the collected body to fn. */
static void each_event(const tg_req *r, tg_sse_event_fn fn, void *ud)
{
    tg_sse sse;
    tg_sse_init(&sse, fn, NULL, ud);
    tg_sse_feed(&sse, r->up.resp.data ? r->up.resp.data : "", r->up.resp.len);
    tg_sse_finish(&sse);
    tg_sse_free(&sse);
}

static void on_fold_event(void *user, const char *event, const char *data, size_t len)
{
    (void)event;
    tg_collect_event(user, data, len);
}

/* A provider that streamed although the agent asked for one answer (a
 * backend that always streams, a gateway that forces SSE: BerriAI/litellm
 * #34095): its chunks become the completion they stand for (collect.c),
 * which goes on like any whole answer. Told by the type, or by a body that
 * opens with "data:" under another type. The collected body is bounded by
 * max_answer already. */
static bool answered_sse(const tg_req *r)
{
    const char *ct = tg_header_get(&r->up.hdrs, "content-type");
    const char *p = r->up.resp.data ? r->up.resp.data : "";
    size_t n = r->up.resp.len, i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\r' || p[i] == '\n'))
        i++;
    return (ct && strstr(ct, "event-stream")) || (n - i >= 5 && !memcmp(p + i, "data:", 5)) ||
           (n - i >= 6 && !memcmp(p + i, "event:", 6));
}

/* The folded answer replaces the body, as JSON. */
static void folded_body(tg_req *r, json_t *v)
{
    tg_buf_reset(&r->up.resp);
    tg_json_dump(v, &r->up.resp);
    json_decref(v);
    tg_header_list_del(&r->up.hdrs, "content-type");
    tg_header_list_add_line(&r->up.hdrs, "Content-Type: application/json", 30);
}

static void on_api_fold_event(void *user, const char *event, const char *data, size_t len)
{
    (void)event;
    tg_api_fold_event(user, data, len);
}

/* The same for a Responses or Messages request passed through
 * (bridge/api_fold.c): the Response or Message, or the stream's error
 * event as a 502 in the API's own error shape. */
void tg_fold_api_stream(tg_req *r)
{
    if (!r->prep.api || r->client.stream || r->up.status < 200 || r->up.status >= 300 ||
        !answered_sse(r))
        return;
    tg_api_fold *f = tg_api_fold_new();
    each_event(r, on_api_fold_event, f);
    int failed = 0;
    json_t *v = tg_api_fold_end(f, &failed);
    if (!v)
        return;
    folded_body(r, v);
    if (failed)
        r->up.status = 502;
    tg_answer_mode_said(r, "stream-folded");
}

void tg_fold_chat_stream(tg_req *r)
{
    if (!answered_sse(r))
        return;
    tg_collect *c = tg_collect_new();
    each_event(r, on_fold_event, c);
    json_t *v = tg_collect_end(c);
    if (!v)
        return;  /* no chunk in it: relayed as what it is */
    folded_body(r, v);
    tg_answer_mode_said(r, "stream-folded");
}

