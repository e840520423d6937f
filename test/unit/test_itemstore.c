/* test_itemstore.c -- the store of Responses items that answers
 * item_reference: what goes in comes out, a new text replaces an id's old
 * one, the oldest go first past the byte bound, and threads may share it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sanitize/itemstore.h"

static void expect_text(tg_itemstore *s, const char *id, const char *want)
{
    char *got = tg_itemstore_get(s, id);
    if (!want) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_put_get_replace(void **state)
{
    (void)state;
    tg_itemstore *s = tg_itemstore_new(1 << 20);
    tg_itemstore_put(s, "msg_1", "{\"a\":1}");
    tg_itemstore_put(s, "rs_1", "{\"b\":2}");
    expect_text(s, "msg_1", "{\"a\":1}");
    expect_text(s, "rs_1", "{\"b\":2}");
    expect_text(s, "msg_2", NULL);
    size_t before = tg_itemstore_bytes(s);
    tg_itemstore_put(s, "msg_1", "{\"a\":3}");
    expect_text(s, "msg_1", "{\"a\":3}");
    assert_int_equal(tg_itemstore_bytes(s), before);  /* replaced, not added */
    tg_itemstore_free(s);
}

static void test_oldest_out_first(void **state)
{
    (void)state;
    char id[32], text[200];
    memset(text, 'x', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    tg_itemstore *s = tg_itemstore_new(4096);
    for (int i = 0; i < 100; i++) {
        snprintf(id, sizeof id, "id%d", i);
        tg_itemstore_put(s, id, text);
        assert_true(tg_itemstore_bytes(s) <= 4096);
    }
    expect_text(s, "id99", text);  /* the newest stay */
    expect_text(s, "id0", NULL);   /* the oldest went */
    int kept = 0;
    for (int i = 0; i < 100; i++) {
        snprintf(id, sizeof id, "id%d", i);
        char *t = tg_itemstore_get(s, id);
        if (t)
            kept++;
        else
            assert_true(kept == 0);  /* what is kept is a run of the newest */
        free(t);
    }
    assert_true(kept > 5 && kept < 100);
    char *big = malloc(8192);
    memset(big, 'y', 8191);
    big[8191] = '\0';
    tg_itemstore_put(s, "big", big);  /* larger than the store: not kept */
    expect_text(s, "big", NULL);
    expect_text(s, "id99", text);
    free(big);
    tg_itemstore_free(s);
    tg_itemstore *none = tg_itemstore_new(0);  /* responses_store = 0 */
    tg_itemstore_put(none, "a", "b");
    expect_text(none, "a", NULL);
    tg_itemstore_free(none);
}

static void *writer(void *arg)
{
    tg_itemstore *s = arg;
    char id[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(id, sizeof id, "t%p-%d", (void *)&id, i % 300);
        tg_itemstore_put(s, id, "{\"type\":\"message\"}");
        free(tg_itemstore_get(s, id));
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    tg_itemstore *s = tg_itemstore_new(64 * 1024);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, writer, s);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_true(tg_itemstore_bytes(s) <= 64 * 1024);
    tg_itemstore_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_replace),
        cmocka_unit_test(test_oldest_out_first),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests_name("itemstore", tests, NULL, NULL);
}
