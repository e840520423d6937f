/* itemstore.h -- the output items of recent bridged Responses, by owner and
 * id, so that a client's item_reference can be answered.
 *
 * Clients of the Responses API that think the provider stores responses
 * (the AI SDK unless told store: false) send an earlier turn's assistant
 * text and reasoning back as {"type": "item_reference", "id": ...}. The
 * chat providers behind the bridge keep nothing, so toolgate keeps the
 * items it answered with: a bounded store shared by the workers of one
 * process behind one mutex (the only lock, taken twice per bridged request
 * and never on the chat path). What it holds is JSON text, never jansson
 * values, so no value is shared between threads.
 *
 * Every item belongs to an owner (a 64-bit key the server derives from the
 * client key, or the upstream credential, or the route: proxy/bridges.c
 * item_owner) and only its owner finds it: another owner's id is looked up
 * as if it did not exist, so a client learns nothing from the answer.
 *
 * Eviction is by owner: past max_bytes, the owner that holds the most bytes
 * gives up its oldest item. An owner that holds no more than its fair share
 * (max_bytes divided by the owners holding items) therefore keeps its items
 * whatever another owner sends; a flood evicts the flooder's own items. A
 * reference the store no longer holds (evicted, another replica, a restart)
 * is refused by the bridge with a 400 that says how to avoid it.
 */
#ifndef TG_ITEMSTORE_H
#define TG_ITEMSTORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tg_itemstore tg_itemstore;

/* max_bytes 0 gives a store that holds nothing. */
tg_itemstore *tg_itemstore_new(size_t max_bytes);
void tg_itemstore_free(tg_itemstore *s);
/* Keeps a copy of text under (owner, id), replacing what it held; evicts
 * past max_bytes as above. An entry larger than the whole store is not
 * kept. */
void tg_itemstore_put(tg_itemstore *s, uint64_t owner, const char *id, const char *text);
/* A malloc'd copy of what (owner, id) holds, or NULL: an id that another
 * owner holds is NULL too. */
char *tg_itemstore_get(tg_itemstore *s, uint64_t owner, const char *id);
size_t tg_itemstore_bytes(tg_itemstore *s);
/* Bytes held by one owner. */
size_t tg_itemstore_owner_bytes(tg_itemstore *s, uint64_t owner);

#endif
