/* list.h -- the one doubly linked list: intrusive, header-only.
 *
 * A structure that lives on a list embeds a tg_list_node and the list is a
 * tg_list {head, tail}; TG_LIST_ITEM gets from the node back to the
 * structure (the kernel's list_entry, container_of). The list is linear,
 * NULL at both ends, not circular with a sentinel as the kernel's: an
 * all-zero tg_list is the empty list and an all-zero node is unlinked, so
 * the calloc'ed structures that hold them need no init. Nothing is
 * allocated here: the owner of a node is the owner of its structure, and
 * a node is on at most one list at a time (remove it before pushing it
 * elsewhere). O(1) push at either end and removal of any node.
 *
 * Users: the worker's LRU (core/cache.c, recency order), the item store's
 * per-owner FIFO (bridge/itemstore.c) and the connections waiting for a
 * request head (proxy/front.c, arrival order).
 */
#ifndef TG_LIST_H
#define TG_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tg_list_node {
    struct tg_list_node *prev, *next;
} tg_list_node;

typedef struct tg_list {
    tg_list_node *head, *tail;  /* both NULL when empty */
} tg_list;

/* The structure a node is embedded in, as `type *`; NULL for NULL. */
#define TG_LIST_ITEM(node, type, member) \
    ((type *)tg_list_item_((node), offsetof(type, member)))

static inline void *tg_list_item_(const tg_list_node *n, size_t off)
{
    return n ? (void *)((char *)(uintptr_t)n - off) : NULL;
}

static inline bool tg_list_empty(const tg_list *l)
{
    return l->head == NULL;
}

static inline void tg_list_push_front(tg_list *l, tg_list_node *n)
{
    n->prev = NULL;
    n->next = l->head;
    if (l->head)
        l->head->prev = n;
    else
        l->tail = n;
    l->head = n;
}

static inline void tg_list_push_back(tg_list *l, tg_list_node *n)
{
    n->next = NULL;
    n->prev = l->tail;
    if (l->tail)
        l->tail->next = n;
    else
        l->head = n;
    l->tail = n;
}

/* n must be on l; it leaves unlinked (both pointers NULL). */
static inline void tg_list_remove(tg_list *l, tg_list_node *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        l->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        l->tail = n->prev;
    n->prev = n->next = NULL;
}

/* n to the front of l, which it is on (an LRU's touch). */
static inline void tg_list_move_front(tg_list *l, tg_list_node *n)
{
    tg_list_remove(l, n);
    tg_list_push_front(l, n);
}

#endif
