/* metrics.c -- see metrics.h. A worker appends a series the first time it
 * sees a (route, status, stream) triple; the slot is filled before the
 * count is published (release), so a concurrent render (acquire) only reads
 * finished slots. Histograms use fixed microsecond buckets. */
#include "proxy/metrics.h"
#include "core/alloc.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"

#define MAX_SERIES 256
static const uint64_t bucket_us[] = {100,    250,    500,     1000,    2500,    5000,
                                     10000,  25000,  50000,   100000,  250000,  500000,
                                     1000000, 2500000, 5000000, 10000000, 30000000, 60000000};
#define NB (sizeof bucket_us / sizeof bucket_us[0])

typedef struct hist {
    atomic_ullong b[NB + 1];
    atomic_ullong sum_us;
    atomic_ullong count;
} hist;

typedef struct series {
    char route[64];
    int status;
    bool stream;
    atomic_ullong n;
} series;

struct tg_metrics {
    series s[MAX_SERIES];
    atomic_int n_series;
    atomic_llong inflight;
    hist total, upstream_ttfb, added;
    atomic_ullong repairs, stripped, rewrites, disc_rounds, tools_in, tools_out, bytes_in,
        bytes_out, retries, dropped, translated, round_errors, store_put_err, store_get_err,
        sigs_restored;
    atomic_ullong hints_given, hints_followed;
    atomic_ullong up_err[6];
    atomic_ullong quirks[TG_QUIRKS];
    atomic_ullong repair_failures;  /* by status class: 0 = transport, 4 = 4xx, 5 = 5xx */
    atomic_ullong bad_chunks;
    atomic_ullong schema_standins;
    atomic_ullong limits[TG_LIMIT_N];
    atomic_ullong emb_calls, emb_fallbacks[TG_EMB_N];
};

struct tg_metrics_set {
    int n;
    tg_metrics *w;
};

tg_metrics_set *tg_metrics_new(int workers)
{
    tg_metrics_set *s = tg_calloc(1, sizeof *s);
    s->n = workers;
    s->w = tg_calloc((size_t)workers, sizeof *s->w);
    return s;
}

tg_metrics *tg_metrics_worker(tg_metrics_set *s, int i)
{
    return &s->w[i];
}

void tg_metrics_free(tg_metrics_set *s)
{
    if (!s)
        return;
    free(s->w);
    free(s);
}

#define ADD(x, v) atomic_fetch_add_explicit(&(x), (v), memory_order_relaxed)
/* A request's counts are mostly 0: adding 0 is a locked instruction all the
 * same (thirteen a request, about 20 cycles each). */
#define ADD_SOME(x, v)  \
    do {                \
        if (v)          \
            ADD(x, v);  \
    } while (0)
#define GET(x) atomic_load_explicit(&(x), memory_order_relaxed)

void tg_metrics_inflight(tg_metrics *m, int delta)
{
    ADD(m->inflight, delta);
}

void tg_metrics_upstream_error(tg_metrics *m, long status)
{
    int k = status >= 500 ? 5 : status >= 400 ? 4 : 0;
    ADD(m->up_err[k], 1);
}

void tg_metrics_retry(tg_metrics *m)
{
    ADD(m->retries, 1);
}

void tg_metrics_dropped(tg_metrics *m, size_t n)
{
    ADD(m->dropped, n);
}

void tg_metrics_translated(tg_metrics *m, size_t n)
{
    ADD(m->translated, n);
}

void tg_metrics_signatures_restored(tg_metrics *m, size_t n)
{
    ADD(m->sigs_restored, n);
}

void tg_metrics_round_error(tg_metrics *m)
{
    ADD(m->round_errors, 1);
}

void tg_metrics_embed(tg_metrics *m, unsigned calls, unsigned fallbacks, tg_embed_fail cause)
{
    ADD(m->emb_calls, calls);
    if (fallbacks && (unsigned)cause < TG_EMB_N)
        ADD(m->emb_fallbacks[cause], fallbacks);
}

void tg_metrics_store_error(tg_metrics *m, const char *op)
{
    if (!strcmp(op, "get"))
        ADD(m->store_get_err, 1);
    else
        ADD(m->store_put_err, 1);
}

static void observe(hist *h, uint64_t us)
{
    size_t i = 0;
    while (i < NB && us > bucket_us[i])
        i++;
    ADD(h->b[i], 1);
    ADD(h->sum_us, us);
    ADD(h->count, 1);
}

static series *find_series(tg_metrics *m, const char *route, int status, bool stream)
{
    int n = atomic_load_explicit(&m->n_series, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (m->s[i].status == status && m->s[i].stream == stream &&
            !strcmp(m->s[i].route, route))
            return &m->s[i];
    if (n == MAX_SERIES)
        return NULL;
    series *s = &m->s[n];
    snprintf(s->route, sizeof s->route, "%s", route);
    s->status = status;
    s->stream = stream;
    atomic_store_explicit(&m->n_series, n + 1, memory_order_release);
    return s;
}

void tg_metrics_request_done(tg_metrics *m, const char *route, int status, bool stream,
                             uint64_t t_start, uint64_t t_upstream, uint64_t t_first_byte,
                             uint64_t t_done, const tg_stats *st)
{
    series *s = find_series(m, route, status, stream);
    if (s)
        ADD(s->n, 1);
    if (t_done > t_start)
        observe(&m->total, t_done - t_start);
    if (t_upstream && t_first_byte > t_upstream) {
        observe(&m->upstream_ttfb, t_first_byte - t_upstream);
        /* What toolgate itself added before the upstream saw the request. */
        observe(&m->added, t_upstream - t_start);
    }
    if (st) {
        ADD_SOME(m->repairs, st->repairs);
        ADD_SOME(m->stripped, st->fields_stripped);
        ADD_SOME(m->rewrites, st->schema_rewrites);
        ADD_SOME(m->disc_rounds, st->discovery_rounds);
        ADD_SOME(m->hints_given, st->hints_given);
        ADD_SOME(m->hints_followed, st->hints_followed);
        ADD_SOME(m->tools_in, st->tools_in);
        ADD_SOME(m->tools_out, st->tools_out);
        ADD_SOME(m->bytes_in, st->tools_bytes_in);
        ADD_SOME(m->bytes_out, st->tools_bytes_out);
        ADD_SOME(m->repair_failures, st->repair_failures);
        ADD_SOME(m->bad_chunks, st->bad_chunks);
        ADD_SOME(m->schema_standins, st->schema_standins);
        for (int q = 0; q < TG_QUIRKS; q++)
            ADD_SOME(m->quirks[q], st->quirks[q]);
    }
}

void tg_metrics_limit(tg_metrics *m, tg_limit which)
{
    ADD(m->limits[which], 1);
}

static void render_hist(tg_buf *b, tg_metrics_set *s, size_t off, const char *name,
                        const char *help)
{
    tg_buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    unsigned long long cum = 0, sum = 0, count = 0;
    for (size_t i = 0; i <= NB; i++) {
        for (int w = 0; w < s->n; w++) {
            hist *h = (hist *)((char *)&s->w[w] + off);
            cum += GET(h->b[i]);
        }
        if (i < NB)
            tg_buf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, bucket_us[i] / 1e6, cum);
        else
            tg_buf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n", name, cum);
    }
    for (int w = 0; w < s->n; w++) {
        hist *h = (hist *)((char *)&s->w[w] + off);
        sum += GET(h->sum_us);
        count += GET(h->count);
    }
    tg_buf_printf(b, "%s_sum %g\n%s_count %llu\n", name, sum / 1e6, name, count);
}

#define SUM(field)                                                                           \
    ({                                                                                       \
        unsigned long long _t = 0;                                                           \
        for (int _w = 0; _w < s->n; _w++)                                                    \
            _t += GET(s->w[_w].field);                                                       \
        _t;                                                                                  \
    })

static void counter(tg_buf *b, const char *name, const char *help, unsigned long long v)
{
    tg_buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, v);
}

char *tg_metrics_render(tg_metrics_set *s, size_t *len)
{
    tg_buf b = {0};
    tg_buf_puts(&b, "# HELP toolgate_requests_total Requests answered, by route, status and mode.\n"
                    "# TYPE toolgate_requests_total counter\n");
    for (int w = 0; w < s->n; w++) {
        tg_metrics *m = &s->w[w];
        int n = atomic_load_explicit(&m->n_series, memory_order_acquire);
        for (int i = 0; i < n; i++)
            tg_buf_printf(&b,
                          "toolgate_requests_total{worker=\"%d\",route=\"%s\",status=\"%d\","
                          "stream=\"%s\"} %llu\n",
                          w, m->s[i].route, m->s[i].status, m->s[i].stream ? "true" : "false",
                          (unsigned long long)GET(m->s[i].n));
    }
    long long inflight = 0;
    for (int w = 0; w < s->n; w++)
        inflight += GET(s->w[w].inflight);
    tg_buf_printf(&b, "# HELP toolgate_inflight Requests in flight.\n# TYPE toolgate_inflight "
                      "gauge\ntoolgate_inflight %lld\n",
                  inflight);
    render_hist(&b, s, offsetof(tg_metrics, total), "toolgate_request_seconds",
                "Whole request time as the client sees it.");
    render_hist(&b, s, offsetof(tg_metrics, upstream_ttfb), "toolgate_upstream_ttfb_seconds",
                "Upstream time to first byte.");
    render_hist(&b, s, offsetof(tg_metrics, added), "toolgate_added_seconds",
                "Time toolgate spent before the request left for upstream.");
    counter(&b, "toolgate_repairs_total", "Response repairs applied.", SUM(repairs));
    tg_buf_puts(&b, "# HELP toolgate_repairs_by_quirk_total Repairs by quirk of docs/dialects.md section 5.\n"
                    "# TYPE toolgate_repairs_by_quirk_total counter\n");
    for (int q = 0; q < TG_QUIRKS; q++) {
        unsigned long long v = 0;
        for (int w = 0; w < s->n; w++)
            v += GET(s->w[w].quirks[q]);
        tg_buf_printf(&b, "toolgate_repairs_by_quirk_total{quirk=\"%s\"} %llu\n",
                      tg_quirk_name((tg_quirk)q), v);
    }
    counter(&b, "toolgate_repair_failures_total", "Calls delivered unrepaired (logged).",
            SUM(repair_failures));
    counter(&b, "toolgate_fields_stripped_total", "Markers and fields stripped upward.",
            SUM(stripped));
    counter(&b, "toolgate_schema_rewrites_total", "Schema rewrites applied.", SUM(rewrites));
    counter(&b, "toolgate_discovery_rounds_total", "Inner discovery rounds.", SUM(disc_rounds));
    counter(&b, "toolgate_discovery_hints_total",
            "Turns whose model read new successor hints beside a discovered tool's result.",
            SUM(hints_given));
    counter(&b, "toolgate_discovery_hints_followed_total",
            "Of those turns, the ones whose answer called a hinted tool.", SUM(hints_followed));
    counter(&b, "toolgate_tools_in_total", "Tools received from agents.", SUM(tools_in));
    counter(&b, "toolgate_tools_out_total", "Tools sent upstream.", SUM(tools_out));
    counter(&b, "toolgate_tools_bytes_in_total", "Bytes of tool definitions received.",
            SUM(bytes_in));
    counter(&b, "toolgate_tools_bytes_out_total", "Bytes of tool definitions sent upstream.",
            SUM(bytes_out));
    counter(&b, "toolgate_retries_total", "Upstream retries.", SUM(retries));
    counter(&b, "toolgate_bridge_dropped_total",
            "Tools, history items and fields a bridged request had that its chat upstream "
            "cannot run, left out (X-Toolgate-Dropped).",
            SUM(dropped));
    counter(&b, "toolgate_bridge_translated_total",
            "Content a bridged request had that its chat upstream takes in another form only "
            "(a PDF as its text...), translated (X-Toolgate-Translated).",
            SUM(translated));
    counter(&b, "toolgate_signatures_restored_total",
            "Replayed tool calls that came without the fields their provider put on them "
            "(Gemini 3's thought signature) and got them back from the item store.",
            SUM(sigs_restored));
    counter(&b, "toolgate_discovery_round_errors_total",
            "Inner discovery rounds the provider refused; the client got its error.",
            SUM(round_errors));
    counter(&b, "toolgate_discovery_embedding_calls_total",
            "Calls of a discovery_embeddings endpoint (the catalog's batches and queries).",
            SUM(emb_calls));
    tg_buf_puts(&b, "# HELP toolgate_discovery_embedding_fallbacks_total Searches ranked by BM25 "
                    "alone because the embeddings call failed, by cause.\n"
                    "# TYPE toolgate_discovery_embedding_fallbacks_total counter\n");
    for (int k = 0; k < TG_EMB_N; k++)
        tg_buf_printf(&b, "toolgate_discovery_embedding_fallbacks_total{cause=\"%s\"} %llu\n",
                      tg_embed_fail_name((tg_embed_fail)k), SUM(emb_fallbacks[k]));
    tg_buf_puts(&b, "# HELP toolgate_upstream_errors_total Upstream failures by class.\n"
                    "# TYPE toolgate_upstream_errors_total counter\n");
    static const char *cls[] = {"transport", "", "", "", "4xx", "5xx"};
    for (int k = 0; k < 6; k++)
        if (cls[k][0])
            tg_buf_printf(&b, "toolgate_upstream_errors_total{class=\"%s\"} %llu\n", cls[k],
                          SUM(up_err[k]));
    counter(&b, "toolgate_stream_chunks_invalid_total",
            "Upstream stream chunks repaired or dropped for their shape (logged).",
            SUM(bad_chunks));
    counter(&b, "toolgate_schema_budget_standins_total",
            "$refs stood in for by a described JSON string: inlining them would have passed "
            "the schema budget (rule 62, X-Toolgate-Degraded).",
            SUM(schema_standins));
    tg_buf_puts(&b, "# HELP toolgate_limits_total Requests and connections cut by a bound "
                    "(docs/security.md).\n# TYPE toolgate_limits_total counter\n");
    static const char *lim[TG_LIMIT_N] = {"max_event", "max_answer", "header_timeout",
                                          "shutdown_grace", "upstream_head"};
    for (int k = 0; k < TG_LIMIT_N; k++)
        tg_buf_printf(&b, "toolgate_limits_total{limit=\"%s\"} %llu\n", lim[k], SUM(limits[k]));
    tg_buf_puts(&b, "# HELP toolgate_store_errors_total Responses item store operations that "
                    "could not reach it.\n# TYPE toolgate_store_errors_total counter\n");
    tg_buf_printf(&b, "toolgate_store_errors_total{op=\"put\"} %llu\n", SUM(store_put_err));
    tg_buf_printf(&b, "toolgate_store_errors_total{op=\"get\"} %llu\n", SUM(store_get_err));
    return tg_buf_steal(&b, len);
}
