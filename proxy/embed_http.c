/* embed_http.c -- one embeddings call, bounded in time and size.
 *
 * A call is set up on an easy handle (tg_embed_call_set) and read when it
 * ends (tg_embed_call_end): the proxy runs a catalog's calls on the
 * worker's multi handle (proxy/embed_wait.c) while the worker serves
 * others; tg_embed_http runs one call to its end, blocking (the eval
 * tool's; never a worker's). Nothing of the answer is trusted: its
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

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    tg_embed_call *c = ud;
    size_t len = size * n;
    if (c->answer.len + len > TG_EMBED_ANSWER_MAX) {
        c->too_big = 1;
        return 0;  /* stops the transfer */
    }
    tg_buf_append(&c->answer, p, len);
    return len;
}

int tg_embed_call_set(tg_embed_call *c, CURL *e, const char *url, const char *auth,
                      long connect_ms, long timeout_ms, json_t *body)
{
    memset(c, 0, sizeof *c);
    c->easy = e;
    c->text = json_dumps(body, JSON_COMPACT);
    if (!e || !c->text)
        return -1;
    if (timeout_ms <= 0)
        timeout_ms = TG_EMBED_TIMEOUT_MAX_MS;
    if (connect_ms <= 0 || connect_ms > timeout_ms)
        connect_ms = timeout_ms;
    c->headers = curl_slist_append(NULL, "Content-Type: application/json");
    if (auth && *auth)
        c->headers = curl_slist_append(c->headers, auth);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_QUICK_EXIT, 1L);  /* never join a hung lookup (upstream.c) */
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, c->text);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    return 0;
}

json_t *tg_embed_call_end(tg_embed_call *c, CURLcode rc, tg_embed_fail *why)
{
    long status = 0;
    json_t *ans = NULL;
    if (c->easy)
        curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
    *why = TG_EMB_TRANSPORT;
    if (!c->easy || !c->text)
        *why = TG_EMB_TRANSPORT;
    else if (c->too_big)
        *why = TG_EMB_TOO_BIG;
    else if (rc == CURLE_OPERATION_TIMEDOUT)
        *why = TG_EMB_TIMEOUT;
    else if (rc != CURLE_OK)
        *why = TG_EMB_TRANSPORT;
    else if (status < 200 || status > 299)
        *why = TG_EMB_STATUS;
    else if (tg_json_depth_exceeds(c->answer.data ? c->answer.data : "", c->answer.len,
                                   EMBED_DEPTH_MAX) ||
             !(ans = tg_json_load(c->answer.data ? c->answer.data : "", c->answer.len, 0, NULL)))
        *why = TG_EMB_MALFORMED;
    tg_embed_call_free(c);
    return ans;
}

void tg_embed_call_free(tg_embed_call *c)
{
    curl_slist_free_all(c->headers);
    tg_buf_free(&c->answer);
    free(c->text);
    c->headers = NULL;
    c->text = NULL;
}

json_t *tg_embed_http(CURL **easy, const char *url, const char *auth, long connect_ms,
                      long timeout_ms, json_t *body, tg_embed_fail *why)
{
    if (!*easy)
        *easy = curl_easy_init();
    else
        curl_easy_reset(*easy);
    tg_embed_call c;
    if (tg_embed_call_set(&c, *easy, url, auth, connect_ms, timeout_ms, body)) {
        tg_embed_call_free(&c);
        *why = TG_EMB_TRANSPORT;
        return NULL;
    }
    return tg_embed_call_end(&c, curl_easy_perform(*easy), why);
}
