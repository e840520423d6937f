/* test_store.c -- the Responses item store behind its interface (store.h):
 * redis:// URLs read as documented, owners hashed the same way everywhere
 * (a replica must find another's items) and apart by kind and value, the
 * memory backend's owner scoping through the interface, and the Redis
 * backend with nothing listening: a get is DOWN (never MISSING, which
 * would be the wrong 400), a put fails, and what it would never keep or ask
 * for is decided without Redis. Redis itself: test/integration/replicas.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
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

static void test_redis_unreachable(void **state)
{
    (void)state;
    tg_redis_url u;
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/1", dead_port());
    assert_int_equal(tg_parse_redis_url(url, &u), 0);
    tg_store *s = tg_store_redis(&u, 2, 64, 60000, 200);
    assert_non_null(s);
    uint64_t a = tg_store_owner("key", "a");
    char *text = NULL;
    for (int i = 0; i < 3; i++) {  /* the first try, then within the backoff */
        assert_int_equal(tg_store_get(s, 0, a, "msg_1", &text), TG_STORE_DOWN);
        assert_null(text);
    }
    assert_int_equal(tg_store_get(s, 1, a, "msg_1", &text), TG_STORE_DOWN);
    assert_int_equal(tg_store_put(s, 1, a, "msg_1", "{\"x\":1}"), -1);
    /* larger than an owner may hold: not kept, which needs no Redis */
    char big[100];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(tg_store_put(s, 1, a, "msg_2", big), 0);
    /* an id no toolgate made is not asked for */
    char id[300];
    memset(id, 'i', sizeof id - 1);
    id[sizeof id - 1] = '\0';
    assert_int_equal(tg_store_get(s, 0, a, id, &text), TG_STORE_MISSING);
    assert_non_null(strstr(s->name, "redis 127.0.0.1:"));
    tg_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redis_urls),
        cmocka_unit_test(test_owner_stable),
        cmocka_unit_test(test_memory_backend),
        cmocka_unit_test(test_redis_unreachable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
