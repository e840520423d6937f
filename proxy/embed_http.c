/* embed_http.c -- one embeddings call, blocking, bounded in time and size.
 *
 * The call runs on the worker thread, inside the discovery stage that
 * answers search_tools: the worker serves nothing else meanwhile, so the
 * proxy cuts its time short (TG_EMBED_TIMEOUT_MAX_MS at most, the route's
 * own timeouts when shorter) and the catalog's vectors are cached, so a
 * catalog costs its calls once per worker. Nothing of the answer is trusted: its
 * bytes stop at TG_EMBED_ANSWER_MAX and discovery checks its shape.
 */
#include "proxy/embed_http.h"

#include <string.h>

#include "core/buf.h"
#include "core/jsonio.h"
#include "core/tg.h"

/* {data: [{embedding: [...]}]} is 4 levels; what nests deeper is not an
 * answer, and is not handed to a recursive parser */
#define EMBED_DEPTH_MAX 8

typedef struct sink {
    tg_buf b;
    int too_big;
} sink;

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    sink *s = ud;
    size_t len = size * n;
    if (s->b.len + len > TG_EMBED_ANSWER_MAX) {
        s->too_big = 1;
        return 0;  /* stops the transfer */
    }
    tg_buf_append(&s->b, p, len);
    return len;
}

json_t *tg_embed_http(CURL **easy, const char *url, const char *auth, long connect_ms,
                      long timeout_ms, json_t *body, tg_embed_fail *why)
{
    char *text = json_dumps(body, JSON_COMPACT);
    if (!*easy)
        *easy = curl_easy_init();
    else
        curl_easy_reset(*easy);
    CURL *e = *easy;
    *why = TG_EMB_TRANSPORT;
    if (!e || !text) {
        free(text);
        return NULL;
    }
    if (timeout_ms <= 0)
        timeout_ms = TG_EMBED_TIMEOUT_MAX_MS;
    if (connect_ms <= 0 || connect_ms > timeout_ms)
        connect_ms = timeout_ms;
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (auth && *auth)
        h = curl_slist_append(h, auth);
    sink s = { { 0 }, 0 };
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, text);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    CURLcode rc = curl_easy_perform(e);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    json_t *ans = NULL;
    if (s.too_big)
        *why = TG_EMB_TOO_BIG;
    else if (rc == CURLE_OPERATION_TIMEDOUT)
        *why = TG_EMB_TIMEOUT;
    else if (rc != CURLE_OK)
        *why = TG_EMB_TRANSPORT;
    else if (status < 200 || status > 299)
        *why = TG_EMB_STATUS;
    else if (tg_json_depth_exceeds(s.b.data ? s.b.data : "", s.b.len, EMBED_DEPTH_MAX) ||
             !(ans = tg_json_load(s.b.data ? s.b.data : "", s.b.len, 0, NULL)))
        *why = TG_EMB_MALFORMED;
    curl_slist_free_all(h);
    tg_buf_free(&s.b);
    free(text);
    return ans;
}
