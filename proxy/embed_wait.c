/* embed_wait.c -- a catalog's embeddings on the worker's loop (issue 28
 * part 2, F1).
 *
 * Embedding a 4,096-tool catalog takes 64 calls; made one after another on
 * the worker thread they froze every other client of that worker for as
 * long as they took. Here they are transfers on the worker's own multi
 * handle (the one its upstream rounds run on): EMBED_PARALLEL calls at a
 * time, each a batch of TG_EMBED_BATCH texts, every one bounded by what is
 * left of the starting request's budget. The request is suspended before
 * it goes upstream (front.c's dispatch) and resumed when the vectors are
 * in the cache and in its own discovery state (a catalog too large for the
 * cache is kept for its waiting requests alone), or when a call failed:
 * then its searches are ranked by BM25 with the call's cause, as before.
 *
 * One job a (catalog, route, model) key at a time: a request that finds
 * its catalog's job running waits on it (w->embed_jobs), so a catalog is
 * never embedded twice at once. The job holds a reference on each waiting
 * request; a waiter whose client left is let go without a resume.
 *
 * A search's phrasings are embedded the same way when the round's answer
 * is whole: before it is read, the texts its search_tools calls will send
 * go out as one job of their own (embed_wait_queries), kept in the
 * request's discovery state ("qv") when they are in, and the round's end
 * runs again (upstream.c); the search finds them there (embed_known_answer)
 * and makes no call. A streamed round's searches are embedded the same way
 * once its stream has ended, before the stream repair answers them
 * (embed_wait_stream). No embeddings call is ever made on the worker
 * thread: a search whose texts were not embedded so ranks by BM25.
 */
#include "proxy/embed_wait.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/cache.h"
#include "core/jsonio.h"
#include "discovery/discovery.h"
#include "repair/repair.h"
#include "proxy/embed_http.h"

#define EMBED_PARALLEL 8 /* a catalog's calls out at once */
/* a round's search phrasings embedded on the loop: one wave of calls
 * (a turn of 64 searches of 8 phrasings); a search past it falls back */
#define QUERY_TEXTS_MAX (EMBED_PARALLEL * TG_EMBED_BATCH)

typedef struct embed_slot {
    CURL *easy;
    tg_embed_call call;
    size_t at, m;        /* the batch: texts [at, at + m) */
    bool busy;
} embed_slot;

struct embed_job {
    worker *w;
    uint64_t key;
    json_t *texts;       /* one per catalog tool */
    char *url, *auth, *model;
    long connect_ms;
    uint64_t deadline;   /* the starting request's budget ends (now_us) */
    size_t n, dim, next, left;  /* texts, dimension, next to send, batches not in */
    float *all;          /* n * dim, once the first batch is in */
    tg_embedder *counter;  /* the starter's: counts the calls made (NULL: a
                              search's texts, counted when the search reads them) */
    void (*cont)(tg_req *r);  /* a search's texts: what runs when they are in */
    embed_slot slot[EMBED_PARALLEL];
    tg_req **waiters;
    size_t n_waiters, cap;
    struct embed_job *next_job;
};

/* ---- the request's budget and target ------------------------------------ */

static long budget_ms(const tg_route *e)
{
    long t = e->ttfb_timeout_ms;
    if (e->total_timeout_ms > 0 && e->total_timeout_ms < t)
        t = e->total_timeout_ms;
    return t <= 0 || t > TG_EMBED_TIMEOUT_MAX_MS ? TG_EMBED_TIMEOUT_MAX_MS : t;
}

const tg_route *embed_target(tg_req *r, tg_buf *url, tg_buf *auth)
{
    const tg_route *from = r->prep.embed_from;
    const tg_route *e = tg_route_by_name(r->conf, from->rules.disc.embed_route);
    if (!e)
        return NULL;
    tg_buf_printf(url, "%s/embeddings", e->upstream);
    const char *up_auth = client_header(r, "x-upstream-authorization");
    const char *client_auth = r->client.key ? NULL : client_header(r, "authorization");
    if (e->api_key)
        tg_buf_printf(auth, "Authorization: Bearer %s", e->api_key);
    else if (e == from && up_auth && *up_auth)
        tg_buf_printf(auth, "Authorization: %s", up_auth);
    else if (e == from && client_auth && *client_auth)
        tg_buf_printf(auth, "Authorization: %s", client_auth);
    return e;
}

long embed_budget_left_ms(tg_req *r)
{
    uint64_t t = now_us();
    if (!r->prep.embed_deadline) {
        const tg_route *e = tg_route_by_name(r->conf, r->prep.embed_from->rules.disc.embed_route);
        r->prep.embed_deadline = t + (uint64_t)(e ? budget_ms(e) : TG_EMBED_TIMEOUT_MAX_MS) * 1000;
    }
    return r->prep.embed_deadline > t ? (long)((r->prep.embed_deadline - t) / 1000) : 0;
}

/* A failure seen before any search: each search of r then falls back
 * with it (discovery/embed.c counts it there). */
static void mark_failed(tg_req *r, tg_embed_fail why)
{
    tg_embedder *e = &r->prep.embedder;
    e->failed = true;
    e->cause = why;
    e->causes |= 1u << why;
}

/* ---- the job ---------------------------------------------------------------- */

static void slot_stop(embed_job *j, embed_slot *s)
{
    if (s->busy)
        curl_multi_remove_handle(j->w->multi, s->easy);
    s->busy = false;
    tg_embed_call_free(&s->call);
}

/* A search's texts are in (ok) or failed: their vectors kept in r's
 * discovery state, "qv": {text: [numbers]}, where embed_post finds them;
 * then the round's end runs again (upstream.c). */
static void queries_in(embed_job *j, tg_req *r, bool ok, tg_embed_fail why)
{
    if (ok && r->ctx_live && r->ctx.disc_state) {
        json_t *qv = json_object_get(r->ctx.disc_state, "qv");
        if (!qv)
            json_object_set_new(r->ctx.disc_state, "qv", qv = json_object());
        for (size_t i = 0; i < j->n; i++) {
            json_t *v = json_array();
            for (size_t k = 0; k < j->dim; k++)
                json_array_append_new(v, json_real(j->all[i * j->dim + k]));
            json_object_set_new(qv, json_string_value(json_array_get(j->texts, i)), v);
        }
    } else if (!ok) {
        r->prep.embedder.calls++;  /* the search, which counts its call, makes none */
        mark_failed(r, why);
    }
    r->prep.embed_waiting = false;
    j->cont(r);
    req_unref(r);
}

/* The job ends: off the table, its calls stopped, its waiters given the
 * vectors (cv, or NULL with why) and resumed. */
static void job_end(embed_job *j, json_t *cv, tg_embed_fail why)
{
    worker *w = j->w;
    for (embed_job **p = &w->embed_jobs; *p; p = &(*p)->next_job)
        if (*p == j) {
            *p = j->next_job;
            break;
        }
    for (int i = 0; i < EMBED_PARALLEL; i++) {
        slot_stop(j, &j->slot[i]);
        if (j->slot[i].easy)
            curl_easy_cleanup(j->slot[i].easy);
    }
    if (cv && !j->cont)
        tg_cache_put(w->cache, TG_EMBED_CACHE_KIND, j->key, cv,
                     json_string_length(json_object_get(cv, "v")) + 256);
    for (size_t i = 0; i < j->n_waiters; i++) {
        tg_req *r = j->waiters[i];
        if (j->cont) {
            queries_in(j, r, cv != NULL, why);
            continue;
        }
        if (cv && r->ctx_live && r->ctx.disc_state)
            json_object_set(r->ctx.disc_state, "embed", cv);
        else if (!cv)
            mark_failed(r, why);
        r->prep.embed_waiting = false;
        if (!r->client.gone)
            req_resume(r);  /* no-op while it is not suspended yet */
        req_unref(r);
    }
    json_decref(cv);
    json_decref(j->texts);
    free(j->waiters);
    free(j->all);
    free(j->url);
    free(j->auth);
    free(j->model);
    free(j);
}

/* The next batch on slot s: 0, or -1 with *why when it could not go. */
static int send_next(embed_job *j, embed_slot *s, tg_embed_fail *why)
{
    uint64_t t = now_us();
    long left = j->deadline > t ? (long)((j->deadline - t) / 1000) : 0;
    *why = TG_EMB_TIMEOUT;
    if (left <= 0)
        return -1;
    size_t at = j->next, m = j->n - at < TG_EMBED_BATCH ? j->n - at : TG_EMBED_BATCH;
    json_t *in = json_array();
    for (size_t i = at; i < at + m; i++)
        json_array_append(in, json_array_get(j->texts, i));
    json_t *body = json_pack("{ssso}", "model", j->model, "input", in);
    *why = body ? TG_EMB_TRANSPORT : TG_EMB_MALFORMED;  /* a model name not UTF-8 */
    if (!body)
        return -1;
    if (!s->easy)
        s->easy = curl_easy_init();
    else
        curl_easy_reset(s->easy);
    int rc = tg_embed_call_set(&s->call, s->easy, j->url, j->auth, j->connect_ms, left, body);
    json_decref(body);  /* the call holds its text */
    if (rc || curl_multi_add_handle(j->w->multi, s->easy) != CURLM_OK) {
        tg_embed_call_free(&s->call);
        return -1;
    }
    s->busy = true;
    s->at = at;
    s->m = m;
    j->next += m;
    if (j->counter)
        j->counter->calls++;
    return 0;
}

/* One batch is in: its vectors into place, the next batch on its slot,
 * or the job's end. */
static void batch_in(embed_job *j, embed_slot *s, CURLcode rc)
{
    curl_multi_remove_handle(j->w->multi, s->easy);
    s->busy = false;
    tg_embed_fail why = TG_EMB_MALFORMED;
    size_t dim = 0;
    json_t *ans = tg_embed_call_end(&s->call, rc, &why);
    float *v = ans ? tg_disc_embed_parse(ans, s->m, j->dim, &dim, &why) : NULL;
    json_decref(ans);
    if (!v) {
        job_end(j, NULL, why);
        return;
    }
    if (!j->all) {
        j->dim = dim;
        j->all = tg_malloc(j->n * dim * sizeof *j->all);  /* bounded: TG_EMBED_CATALOG_MAX, DIM_MAX */
    }
    memcpy(j->all + s->at * j->dim, v, s->m * j->dim * sizeof *v);
    free(v);
    if (--j->left == 0) {
        job_end(j, tg_disc_embed_pack(j->all, j->n, j->dim), TG_EMB_N);
        return;
    }
    if (j->next < j->n && send_next(j, s, &why))
        job_end(j, NULL, why);
}

bool embed_wait_done(worker *w, CURL *easy, CURLcode rc)
{
    for (embed_job *j = w->embed_jobs; j; j = j->next_job)
        for (int i = 0; i < EMBED_PARALLEL; i++)
            if (j->slot[i].busy && j->slot[i].easy == easy) {
                batch_in(j, &j->slot[i], rc);
                return true;
            }
    return false;
}

static void add_waiter(embed_job *j, tg_req *r)
{
    if (j->n_waiters == j->cap) {
        j->cap = j->cap ? 2 * j->cap : 4;
        j->waiters = tg_realloc(j->waiters, j->cap * sizeof *j->waiters);
    }
    j->waiters[j->n_waiters++] = req_ref(r);
    r->prep.embed_waiting = true;
}

/* A new job for texts (taken) under key, its first calls out; it may have
 * ended already (a call that could not go: r is marked failed). */
static void job_start(tg_req *r, uint64_t key, json_t *texts, void (*cont)(tg_req *))
{
    tg_buf url = {0}, auth = {0};
    const tg_route *e = embed_target(r, &url, &auth);
    if (!e) {
        tg_buf_free(&url);
        tg_buf_free(&auth);
        json_decref(texts);
        mark_failed(r, TG_EMB_NO_ROUTE);
        return;
    }
    embed_job *j = tg_calloc(1, sizeof *j);
    j->w = r->w;
    j->key = key;
    j->texts = texts;
    j->cont = cont;
    j->n = json_array_size(j->texts);
    j->left = (j->n + TG_EMBED_BATCH - 1) / TG_EMBED_BATCH;
    j->url = tg_buf_steal(&url, NULL);
    j->auth = auth.len ? tg_buf_steal(&auth, NULL) : NULL;
    tg_buf_free(&auth);
    j->model = tg_strdup(r->prep.embed_from->rules.disc.embed_model);
    j->connect_ms = e->connect_timeout_ms;
    j->deadline = now_us() + (uint64_t)embed_budget_left_ms(r) * 1000;
    j->counter = cont ? NULL : &r->prep.embedder;
    j->next_job = r->w->embed_jobs;
    r->w->embed_jobs = j;
    add_waiter(j, r);
    tg_embed_fail why = TG_EMB_TRANSPORT;
    for (int i = 0; i < EMBED_PARALLEL && j->next < j->n; i++)
        if (send_next(j, &j->slot[i], &why)) {
            job_end(j, NULL, why);
            return;
        }
}

int embed_wait_catalog(tg_req *r)
{
    if (r->prep.embed_ready || !r->prep.embed_from || !r->ctx_live)
        return 0;
    r->prep.embed_ready = true;  /* whatever comes of it, once a request */
    json_t *d = json_object_get(r->ctx.disc_state, "d");
    size_t n = json_array_size(json_object_get(d, "catalog"));
    if (!d || !n)
        return 0;  /* no catalog hidden: no search to rank */
    const tg_disc_conf *dr = &r->prep.embed_from->rules.disc;
    uint64_t key = tg_disc_embed_catalog_key(dr->embed_route, dr->embed_model, d);
    json_t *cv = tg_cache_get(r->w->cache, TG_EMBED_CACHE_KIND, key);
    if (cv) {  /* kept in the request's state: evicted later, it is still there */
        json_object_set_new(r->ctx.disc_state, "embed", cv);
        return 0;
    }
    if (n > TG_EMBED_CATALOG_MAX) {
        mark_failed(r, TG_EMB_TOO_BIG);
        return 0;
    }
    embed_budget_left_ms(r);  /* the budget begins */
    embed_job *j = r->w->embed_jobs;
    while (j && (j->cont || j->key != key))
        j = j->next_job;
    if (j)
        add_waiter(j, r);
    else
        job_start(r, key, tg_disc_embed_catalog_texts(d), NULL);
    return r->prep.embed_waiting ? 1 : 0;
}

/* The texts of `all` (taken) not embedded yet for r, QUERY_TEXTS_MAX at
 * most, go out as one job of their own; 1 when r waits for them. */
static int wait_texts(tg_req *r, json_t *all, void (*cont)(tg_req *r))
{
    json_t *qv = json_object_get(r->ctx.disc_state, "qv"), *texts = json_array(), *t;
    size_t i;
    json_array_foreach(all, i, t) {
        bool seen = json_object_get(qv, json_string_value(t)) != NULL;
        for (size_t k = 0; !seen && k < json_array_size(texts); k++)
            seen = json_equal(t, json_array_get(texts, k));
        if (!seen && json_array_size(texts) < QUERY_TEXTS_MAX)
            json_array_append(texts, t);
    }
    json_decref(all);
    if (!json_array_size(texts) || embed_budget_left_ms(r) <= 0) {
        json_decref(texts);
        return 0;
    }
    job_start(r, 0, texts, cont);
    return r->prep.embed_waiting ? 1 : 0;
}

static bool may_search(tg_req *r)
{
    return r->prep.embed_from && r->ctx_live && r->ctx.disc_state && !r->prep.embedder.failed;
}

int embed_wait_queries(tg_req *r, void (*cont)(tg_req *r))
{
    if (!may_search(r) || r->up.status < 200 || r->up.status > 299 || !r->up.resp.len)
        return 0;
    json_t *resp = tg_json_load_answer(r->up.resp.data, r->up.resp.len);
    json_t *all = json_is_object(resp) ? tg_discovery_search_texts(&r->ctx, resp) : NULL;
    json_decref(resp);
    return all ? wait_texts(r, all, cont) : 0;
}

int embed_wait_stream(tg_req *r, void (*cont)(tg_req *r))
{
    json_t *msg = may_search(r) && r->stream.repair ? tg_stream_round_message(r->stream.repair)
                                                    : NULL;
    if (!msg)
        return 0;
    json_t *as = json_pack("{s[{so}]}", "choices", "message", msg);
    json_t *all = tg_discovery_search_texts(&r->ctx, as);
    json_decref(as);
    return wait_texts(r, all, cont);
}

json_t *embed_known_answer(tg_req *r, json_t *body)
{
    json_t *qv = r->ctx_live ? json_object_get(r->ctx.disc_state, "qv") : NULL;
    json_t *in = json_object_get(body, "input"), *t;
    size_t i;
    if (!qv || !json_array_size(in))
        return NULL;
    json_t *data = json_array();
    json_array_foreach(in, i, t) {
        json_t *v = json_object_get(qv, json_string_value(t));
        if (!v) {
            json_decref(data);
            return NULL;
        }
        json_array_append_new(data, json_pack("{sIsO}", "index", (json_int_t)i, "embedding", v));
    }
    return json_pack("{so}", "data", data);
}

void embed_wait_free(worker *w)
{
    while (w->embed_jobs) {
        embed_job *j = w->embed_jobs;
        for (size_t i = 0; i < j->n_waiters; i++)
            j->waiters[i]->client.gone = true;  /* no resume: the daemon is stopped */
        job_end(j, NULL, TG_EMB_TRANSPORT);
    }
}
