/* test_itemstore.c -- the store of Responses items that answers
 * item_reference: what goes in comes out, a new text replaces an id's old
 * one, the oldest go first past the byte bound, threads may share it, an
 * owner finds only its own items, and one owner's flood evicts its own
 * items, never all of another's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/itemstore.h"

#define A 0xa11ceull
#define B 0xb0bull

static void expect_owned(tg_itemstore *s, uint64_t owner, const char *id, const char *want)
{
    char *got = tg_itemstore_get(s, owner, id);
    if (!want) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void expect_text(tg_itemstore *s, const char *id, const char *want)
{
    expect_owned(s, A, id, want);
}

static void test_put_get_replace(void **state)
{
    (void)state;
    tg_itemstore *s = tg_itemstore_new(1 << 20);
    tg_itemstore_put(s, A, "msg_1", "{\"a\":1}");
    tg_itemstore_put(s, A, "rs_1", "{\"b\":2}");
    expect_text(s, "msg_1", "{\"a\":1}");
    expect_text(s, "rs_1", "{\"b\":2}");
    expect_text(s, "msg_2", NULL);
    size_t before = tg_itemstore_bytes(s);
    tg_itemstore_put(s, A, "msg_1", "{\"a\":3}");
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
        tg_itemstore_put(s, A, id, text);
        assert_true(tg_itemstore_bytes(s) <= 4096);
    }
    expect_text(s, "id99", text);  /* the newest stay */
    expect_text(s, "id0", NULL);   /* the oldest went */
    int kept = 0;
    for (int i = 0; i < 100; i++) {
        snprintf(id, sizeof id, "id%d", i);
        char *t = tg_itemstore_get(s, A, id);
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
    tg_itemstore_put(s, A, "big", big);  /* larger than the store: not kept */
    expect_text(s, "big", NULL);
    expect_text(s, "id99", text);
    free(big);
    tg_itemstore_free(s);
    tg_itemstore *none = tg_itemstore_new(0);  /* responses_store = 0 */
    tg_itemstore_put(none, A, "a", "b");
    expect_text(none, "a", NULL);
    tg_itemstore_free(none);
}

static void *writer(void *arg)
{
    tg_itemstore *s = arg;
    char id[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(id, sizeof id, "t%p-%d", (void *)&id, i % 300);
        tg_itemstore_put(s, A, id, "{\"type\":\"message\"}");
        free(tg_itemstore_get(s, A, id));
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

/* Another owner's id is looked up as one that does not exist; the same id
 * under two owners is two items. */
static void test_owner_reads_only_its_own(void **state)
{
    (void)state;
    tg_itemstore *s = tg_itemstore_new(1 << 20);
    tg_itemstore_put(s, A, "msg_secret", "{\"text\":\"alice\"}");
    expect_owned(s, A, "msg_secret", "{\"text\":\"alice\"}");
    expect_owned(s, B, "msg_secret", NULL);
    tg_itemstore_put(s, B, "msg_secret", "{\"text\":\"bobby\"}");
    expect_owned(s, A, "msg_secret", "{\"text\":\"alice\"}");
    expect_owned(s, B, "msg_secret", "{\"text\":\"bobby\"}");
    assert_int_equal(tg_itemstore_owner_bytes(s, A), tg_itemstore_owner_bytes(s, B));
    tg_itemstore_free(s);
}

/* B writes fifty times the store's size: the owner holding the most gives
 * up its oldest, so B evicts B, and A's few items all stay. */
static void test_flood_evicts_the_flooder(void **state)
{
    (void)state;
    char id[32], text[200];
    memset(text, 'x', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    tg_itemstore *s = tg_itemstore_new(16 * 1024);
    for (int i = 0; i < 8; i++) {
        snprintf(id, sizeof id, "a%d", i);
        tg_itemstore_put(s, A, id, text);
    }
    size_t a_bytes = tg_itemstore_owner_bytes(s, A);
    for (int i = 0; i < 4000; i++) {
        snprintf(id, sizeof id, "b%d", i);
        tg_itemstore_put(s, B, id, text);
        assert_true(tg_itemstore_bytes(s) <= 16 * 1024);
    }
    for (int i = 0; i < 8; i++) {
        snprintf(id, sizeof id, "a%d", i);
        expect_owned(s, A, id, text);
    }
    assert_int_equal(tg_itemstore_owner_bytes(s, A), a_bytes);
    assert_true(tg_itemstore_owner_bytes(s, B) + a_bytes <= 16 * 1024);
    expect_owned(s, B, "b3999", text);  /* B keeps its newest */
    expect_owned(s, B, "b0", NULL);
    /* many owners: each keeps at least its fair share */
    for (uint64_t o = 100; o < 140; o++)
        for (int i = 0; i < 50; i++) {
            snprintf(id, sizeof id, "o%d", i);
            tg_itemstore_put(s, o, id, text);
        }
    size_t fair = 16 * 1024 / 42;
    for (uint64_t o = 100; o < 140; o++)
        assert_true(tg_itemstore_owner_bytes(s, o) + 300 >= fair);
    assert_true(tg_itemstore_bytes(s) <= 16 * 1024);
    tg_itemstore_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_replace),
        cmocka_unit_test(test_oldest_out_first),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_owner_reads_only_its_own),
        cmocka_unit_test(test_flood_evicts_the_flooder),
    };
    return cmocka_run_group_tests_name("itemstore", tests, NULL, NULL);
}
