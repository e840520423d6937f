/* itemstore.h -- the output items of recent bridged Responses, by id, so
 * that a client's item_reference can be answered.
 *
 * Clients of the Responses API that think the provider stores responses
 * (the AI SDK unless told store: false) send an earlier turn's assistant
 * text and reasoning back as {"type": "item_reference", "id": ...}. The
 * chat providers behind the bridge keep nothing, so toolgate keeps the
 * items it answered with: a bounded store, oldest out first, shared by the
 * workers of one process behind one mutex (the only lock, taken twice per
 * bridged request and never on the chat path). What it holds is JSON text,
 * never jansson values, so no value is shared between threads. A reference
 * it no longer holds (evicted, another replica, a restart) is refused by
 * the bridge with a 400 that says how to avoid it.
 */
#ifndef TG_ITEMSTORE_H
#define TG_ITEMSTORE_H

#include <stddef.h>

typedef struct tg_itemstore tg_itemstore;

/* max_bytes 0 gives a store that holds nothing. */
tg_itemstore *tg_itemstore_new(size_t max_bytes);
void tg_itemstore_free(tg_itemstore *s);
/* Keeps a copy of text under id (replacing what id held); evicts the oldest
 * entries past max_bytes. An entry larger than the whole store is not kept. */
void tg_itemstore_put(tg_itemstore *s, const char *id, const char *text);
/* A malloc'd copy of what id holds, or NULL. */
char *tg_itemstore_get(tg_itemstore *s, const char *id);
size_t tg_itemstore_bytes(tg_itemstore *s);

#endif
