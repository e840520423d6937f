/* test_list.c -- core/list.h, the one doubly linked list: an all-zero list
 * is empty, pushes at either end, removal of the only, first, middle and
 * last node, an LRU's move to the front, and TG_LIST_ITEM back to the
 * structure (NULL for NULL). After every step the list is checked whole,
 * both ways: what head..tail reads, tail..head reads reversed, and every
 * removed node is unlinked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "core/list.h"

typedef struct item {
    int value;
    tg_list_node node;  /* not first: TG_LIST_ITEM must subtract its offset */
} item;

/* The values head to tail as "1,2,3", checked against the walk tail to head. */
static void expect(const tg_list *l, const char *want)
{
    char fwd[64] = "";
    int vals[16], n = 0;
    for (const tg_list_node *p = l->head; p; p = p->next) {
        assert_true(n < 16);
        if (p->next)
            assert_ptr_equal(p->next->prev, p);
        vals[n++] = TG_LIST_ITEM(p, item, node)->value;
    }
    for (int i = 0; i < n; i++)
        snprintf(fwd + strlen(fwd), sizeof fwd - strlen(fwd), "%s%d", i ? "," : "", vals[i]);
    int k = 0;
    for (const tg_list_node *p = l->tail; p; p = p->prev, k++) {
        assert_true(k < n);
        assert_int_equal(TG_LIST_ITEM(p, item, node)->value, vals[n - 1 - k]);
    }
    assert_int_equal(k, n);  /* the same nodes, read from the tail */
    assert_string_equal(fwd, want);
    assert_int_equal(tg_list_empty(l), n == 0);
    if (n) {
        assert_null(l->head->prev);
        assert_null(l->tail->next);
    } else {
        assert_null(l->tail);
    }
}

static void test_zero_is_empty(void **state)
{
    (void)state;
    tg_list l;
    memset(&l, 0, sizeof l);
    expect(&l, "");
    assert_null(TG_LIST_ITEM(l.head, item, node));
}

static void test_push_both_ends(void **state)
{
    (void)state;
    tg_list l = {0};
    item it[4] = {{1, {0}}, {2, {0}}, {3, {0}}, {4, {0}}};
    tg_list_push_back(&l, &it[1].node);
    expect(&l, "2");
    tg_list_push_back(&l, &it[2].node);
    tg_list_push_front(&l, &it[0].node);
    tg_list_push_back(&l, &it[3].node);
    expect(&l, "1,2,3,4");
    assert_ptr_equal(TG_LIST_ITEM(l.head, item, node), &it[0]);
    assert_ptr_equal(TG_LIST_ITEM(l.tail, item, node), &it[3]);
}

static void test_remove_anywhere(void **state)
{
    (void)state;
    tg_list l = {0};
    item it[5] = {{1, {0}}, {2, {0}}, {3, {0}}, {4, {0}}, {5, {0}}};
    for (int i = 0; i < 5; i++)
        tg_list_push_back(&l, &it[i].node);
    tg_list_remove(&l, &it[2].node);  /* middle */
    expect(&l, "1,2,4,5");
    tg_list_remove(&l, &it[0].node);  /* head */
    expect(&l, "2,4,5");
    tg_list_remove(&l, &it[4].node);  /* tail */
    expect(&l, "2,4");
    tg_list_remove(&l, &it[1].node);
    tg_list_remove(&l, &it[3].node);  /* the only one */
    expect(&l, "");
    for (int i = 0; i < 5; i++) {
        assert_null(it[i].node.prev);
        assert_null(it[i].node.next);
    }
    tg_list_push_front(&l, &it[2].node);  /* a removed node goes on again */
    expect(&l, "3");
}

static void test_move_front(void **state)
{
    (void)state;
    tg_list l = {0};
    item it[3] = {{1, {0}}, {2, {0}}, {3, {0}}};
    for (int i = 0; i < 3; i++)
        tg_list_push_back(&l, &it[i].node);
    tg_list_move_front(&l, &it[2].node);  /* the tail */
    expect(&l, "3,1,2");
    tg_list_move_front(&l, &it[0].node);  /* a middle one */
    expect(&l, "1,3,2");
    tg_list_move_front(&l, &it[0].node);  /* already the head */
    expect(&l, "1,3,2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero_is_empty),
        cmocka_unit_test(test_push_both_ends),
        cmocka_unit_test(test_remove_anywhere),
        cmocka_unit_test(test_move_front),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
