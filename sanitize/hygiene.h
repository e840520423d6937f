/* hygiene.h -- the message-hygiene stage: strips internal markers and every
 * field the route's dialect rejects, and rebuilds what it requires.
 */
#ifndef TG_HYGIENE_H
#define TG_HYGIENE_H

#include "dialect.h"
#include "tg.h"

struct tg_ctx;

typedef struct tg_msg_rules {
    tg_dialect dialect;
    unsigned flags;  /* TG_MR_* bits, defined in hygiene.c */
} tg_msg_rules;

void tg_msg_rules_preset(tg_dialect d, tg_msg_rules *out);
int tg_msg_rules_set(tg_msg_rules *r, const char *key, const char *value,
                     char *msg, size_t msglen);

/* Request stage. Edits body in place. */
int tg_hygiene_stage(json_t *body, struct tg_ctx *ctx, tg_error *err);

#endif
