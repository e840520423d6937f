/* test_store.c -- the Responses item store behind its interface (store.h):
 * redis:// URLs read as documented, owners hashed the same way everywhere
 * (a replica must find another's items) and apart by kind and value, the
 * memory backend's owner scoping through the interface, and the Redis
 * backend on a loop: with nothing listening a fetch is DOWN (never MISSING,
 * which would be the wrong 400), what it would never keep is decided
 * without Redis, and a reply larger than toolgate ever asks for is refused
 * before it is allocated. Redis itself: test/integration/replicas.sh and
 * test/adversary/store.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/store.h"

static void test_redis_urls(void **state)
{
    (void)state;
    tg_redis_url u;
    assert_int_equal(tg_parse_redis_url("redis://redis:6379/0", &u), 0);
    assert_string_equal(u.host, "redis");
    assert_int_equal(u.port, 6379);
    assert_int_equal(u.db, 0);
    assert_string_equal(u.password, "");
    assert_int_equal(tg_parse_redis_url("redis://10.0.0.7", &u), 0);
    assert_string_equal(u.host, "10.0.0.7");
    assert_int_equal(u.port, 6379);
    assert_int_equal(tg_parse_redis_url("redis://:pa@ss@[::1]:6380/12", &u), 0);
    assert_string_equal(u.password, "pa@ss");
    assert_string_equal(u.host, "::1");
    assert_int_equal(u.port, 6380);
    assert_int_equal(u.db, 12);
    assert_int_equal(tg_parse_redis_url("redis://h:7000/", &u), 0);
    assert_int_equal(u.port, 7000);
    static const char *bad[] = {"http://h:1/0", "redis://", "redis://:6379/0", "redis://h:0",
                                "redis://h:65536", "redis://h:x/0", "redis://h/x",
                                "redis://user@h/0", "redis://[::1/0", "redis://h:1:2/0"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (tg_parse_redis_url(bad[i], &u) == 0)
            fail_msg("%s was accepted", bad[i]);
}

/* The first 8 bytes of SHA-256("toolgate-owner\0key\0" SHA-256("abc")),
 * computed apart with Python's hashlib. */
static void test_owner_stable(void **state)
{
    (void)state;
    assert_true(tg_store_owner("key", "abc") == 0xf10e2289f85faf31ull);
    assert_true(tg_store_owner("key", "abc") == tg_store_owner("key", "abc"));
    assert_true(tg_store_owner("key", "abc") != tg_store_owner("credential", "abc"));
    assert_true(tg_store_owner("key", "abc") != tg_store_owner("key", "abd"));
    assert_true(tg_store_owner("route", "") != tg_store_owner("key", ""));
}

static void test_memory_backend(void **state)
{
    (void)state;
    tg_store *s = tg_store_memory(1 << 20);
    uint64_t a = tg_store_owner("key", "a"), b = tg_store_owner("key", "b");
    char *text = NULL;
    assert_int_equal(tg_store_put(s, 0, a, "msg_1", "{\"x\":1}"), 0);
    assert_int_equal(tg_store_get(s, 1, a, "msg_1", &text), TG_STORE_FOUND);
    assert_string_equal(text, "{\"x\":1}");
    free(text);
    assert_int_equal(tg_store_get(s, 0, b, "msg_1", &text), TG_STORE_MISSING);
    assert_null(text);
    assert_int_equal(tg_store_get(s, 0, a, "msg_2", &text), TG_STORE_MISSING);
    assert_true(tg_store_bytes(s) > 0);
    assert_string_equal(s->name, "memory");
    tg_store_free(s);
}

/* A loopback port nothing listens on (bound, then closed). */
static int dead_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t n = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &n), 0);
    close(fd);
    return ntohs(a.sin_port);
}

typedef struct got_log {
    int calls;
    tg_store_status status;
} got_log;

static void on_got(void *ud, const tg_store_got *got)
{
    got_log *g = ud;
    g->calls++;
    g->status = got->status;
}

static tg_store *redis_at(int port, size_t per_owner)
{
    tg_redis_url u;
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", port);
    assert_int_equal(tg_parse_redis_url(url, &u), 0);
    return tg_store_redis(&u, 2, per_owner, 60000, 200);
}

/* Nothing listening: a put fails, a fetch is DOWN (never MISSING, which
 * would be the wrong 400), told at once; what it would never keep is
 * decided without Redis. */
static void test_redis_unreachable(void **state)
{
    (void)state;
    tg_store *s = redis_at(dead_port(), 64);
    int ep = epoll_create1(0);
    tg_store_loop loop = {.epfd = ep, .tag = 7};
    s->ops->attach(s, 0, &loop);
    s->ops->attach(s, 1, &loop);
    uint64_t a = tg_store_owner("key", "a");
    const char *ids[] = {"msg_1"};
    for (int i = 0; i < 3; i++) {  /* the first try, then within the backoff */
        got_log g = {0};
        s->ops->fetch(s, 0, a, ids, 1, "resp_1", 16, UINT64_MAX, on_got, &g);
        struct epoll_event ev;
        for (int k = 0; k < 50 && !g.calls; k++)  /* the refused connect comes as an event */
            if (epoll_wait(ep, &ev, 1, 20) == 1)
                s->ops->event(s, 0, ev.events);
        assert_int_equal(g.calls, 1);
        assert_int_equal(g.status, TG_STORE_DOWN);
    }
    assert_int_equal(tg_store_put(s, 1, a, "msg_1", "{\"x\":1}") == 0 ||
                         tg_store_put(s, 1, a, "msg_1", "{\"x\":1}") == -1, 1);
    /* larger than an owner may hold: not kept, which needs no Redis */
    char big[100];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(tg_store_put(s, 1, a, "msg_2", big), 0);
    assert_non_null(strstr(s->name, "redis 127.0.0.1:"));
    s->ops->detach(s, 0);
    s->ops->detach(s, 1);
    tg_store_free(s);
    close(ep);
}

/* A Redis that answers "*999999999" (then elements): hiredis 0.14 would
 * allocate 8 GB; the reply is refused at its header and the fetch is DOWN
 * (issue 28 F2). A string that announces 1 GB and keeps coming: dropped
 * once what was read passes what any answer can be. */
static void test_redis_reply_caps(void **state)
{
    (void)state;
    static const char *const replies[] = {"*999999999\r\n:1\r\n:1\r\n",
                                          "*3\r\n$-1\r\n$999999999\r\n", NULL};
    for (int c = 0; replies[c]; c++) {
        int lfd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t n = sizeof sa;
        assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
        assert_int_equal(listen(lfd, 4), 0);
        assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &n), 0);
        tg_store *s = redis_at(ntohs(sa.sin_port), 1024);
        int ep = epoll_create1(0);
        tg_store_loop loop = {.epfd = ep, .tag = 7};
        s->ops->attach(s, 0, &loop);
        got_log g = {0};
        const char *ids[] = {"msg_1"};
        s->ops->fetch(s, 0, tg_store_owner("key", "a"), ids, 1, NULL, 0, UINT64_MAX, on_got, &g);
        assert_int_equal(g.calls, 0);  /* sent: told later */
        int cfd = -1;
        struct epoll_event ev;
        char buf[4096];
        for (int k = 0; k < 2000 && !g.calls; k++) {
            if (cfd < 0 && (cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                for (int w = 0; w < 50 && recv(cfd, buf, sizeof buf, 0) <= 0; w++)
                    if (epoll_wait(ep, &ev, 1, 10) == 1)
                        s->ops->event(s, 0, ev.events);
                assert_true(send(cfd, replies[c], strlen(replies[c]), 0) > 0);
            }
            /* the string's bytes keep coming: read until past what any
             * answer can be (2 x (per_owner + 4 MB)), then dropped */
            for (int w = 0; c == 1 && cfd >= 0 && w < 64; w++)
                send(cfd, memset(buf, 'y', sizeof buf), sizeof buf, MSG_NOSIGNAL);
            if (epoll_wait(ep, &ev, 1, 5) == 1)
                s->ops->event(s, 0, ev.events);
        }
        assert_int_equal(g.calls, 1);
        assert_int_equal(g.status, TG_STORE_DOWN);
        s->ops->detach(s, 0);
        tg_store_free(s);
        close(cfd);
        close(lfd);
        close(ep);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redis_urls),
        cmocka_unit_test(test_owner_stable),
        cmocka_unit_test(test_memory_backend),
        cmocka_unit_test(test_redis_unreachable),
        cmocka_unit_test(test_redis_reply_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
