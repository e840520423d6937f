/* hygiene_history.h -- the message-hygiene stage on the history as a
 * whole (hygiene_history.c), for hygiene.c; not for other stages. */
#ifndef TG_HYGIENE_HISTORY_H
#define TG_HYGIENE_HISTORY_H

#include "sanitize/hygiene_walk.h"

/* Rule 6: every tool call answered, every answer to an open call. */
void tg_hy_pair_tool_calls(walk *w, json_t *body);
/* Each message cleaned, the role order kept; messages[] rebuilt only when a
 * message goes or comes. */
void tg_hy_walk_messages(walk *w, json_t *body);

#endif
