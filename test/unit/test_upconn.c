/* test_upconn.c -- where the own client sends a round (upconn_target):
 * a plain-http URL is parsed once and remembered by the worker's pool,
 * so each URL here is asked for as a stranger (more URLs than the pool
 * remembers come between) and then again, remembered: both answers must
 * be the same, field by field, also as what is known of the host's
 * address changes (upconn_learn, upconn_avoid). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <string.h>

#include "proxy/upconn.h"

static const char *const urls[] = {
    "http://127.0.0.1:8080/v1/chat/completions",
    "http://127.0.0.1/v1/chat/completions?x=1",
    "http://[::1]:9000/v1/chat/completions",
    "http://10.1.2.3:81",
    "http://model.internal:8000/v1/chat/completions",
    "http://model.internal/v1",
    "http://user@127.0.0.1/v1",
    "http://127.0.0.1/v1/a b",
    "http://127.0.0.1/v1#frag",
    "http://127.0.0.1:99999/v1",
    "http://127.0.0.1?q",
    "ftp://127.0.0.1/v1",
    "https://127.0.0.1:8443/v1/chat/completions",
};
#define N_URLS (sizeof urls / sizeof urls[0])

typedef struct {
    bool ok;
    tg_uptarget t;
} answer;

static answer ask(worker *w, const char *url)
{
    static const tg_tls_id id = {"/etc/ca.pem", NULL, NULL, NULL};
    answer a;
    memset(&a, 0, sizeof a);
    a.ok = upconn_target(w, url, &id, &a.t);
    return a;
}

static void same(const char *url, const answer *x, const answer *y)
{
    assert_int_equal(x->ok, y->ok);
    if (!x->ok)
        return;
    assert_string_equal(x->t.authority, y->t.authority);
    assert_string_equal(x->t.key, y->t.key);
    assert_string_equal(x->t.host, y->t.host);
    assert_string_equal(x->t.target, y->t.target);
    for (const answer *a = x; a; a = a == x ? y : NULL)  /* into url, or "/" */
        assert_true(a->t.target == url + strlen(url) - strlen(a->t.target) ||
                    !strcmp(a->t.target, "/"));
    assert_int_equal(x->t.alen, y->t.alen);
    assert_memory_equal(&x->t.addr, &y->t.addr, x->t.alen);
    assert_int_equal(x->t.tls, y->t.tls);
    assert_memory_equal(&x->t.id, &y->t.id, sizeof x->t.id);
}

/* Every URL twice in a row, the first time after all the others. */
static void round_of_asks(worker *w, unsigned *known)
{
    for (size_t i = 0; i < N_URLS; i++) {
        answer first = ask(w, urls[i]);
        answer again = ask(w, urls[i]);
        same(urls[i], &first, &again);
        *known += first.ok;
    }
}

static void test_remembered_urls_answer_as_parsed(void **state)
{
    (void)state;
    worker w;
    memset(&w, 0, sizeof w);
    unsigned known = 0;
    upconn_avoid(&w, "http://elsewhere:1/");  /* the pool exists from here */
    round_of_asks(&w, &known);
    assert_int_equal(known, 5);  /* the literals, https with a trust */
    /* a host name's address, once learnt, is the round's */
    upconn_learn(&w, "http://model.internal:8000/v1/chat/completions", "10.9.8.7", 8000);
    upconn_learn(&w, "http://model.internal/v1", "10.9.8.6", 80);
    known = 0;
    round_of_asks(&w, &known);
    assert_int_equal(known, 7);
    answer a = ask(&w, urls[4]);
    assert_true(a.ok);
    assert_int_equal(a.t.addr.ss_family, AF_INET);
    /* an upstream to avoid goes through libcurl, remembered or not */
    upconn_avoid(&w, urls[0]);
    known = 0;
    round_of_asks(&w, &known);
    assert_int_equal(known, 6);
    assert_false(ask(&w, urls[0]).ok);
    upconn_free_all(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_remembered_urls_answer_as_parsed),
    };
    return cmocka_run_group_tests_name("upconn", tests, NULL, NULL);
}
