/* hygiene.h -- the message-hygiene stage: strips internal markers and every
 * field the route's dialect rejects, and rebuilds what it requires.
 *
 * A route's message rules are one dialect id plus a set of TG_MR_* bits. The
 * preset gives the bits the dialect needs (MSG_* in hygiene.c, named by the
 * dialect's row in core/dialect.h); conf keys `messages.<rule> = on|off`
 * flip them (tg_msg_rules_set, read by core/rules.h). Internal markers
 * (keys starting with ctx->strip_prefix) are stripped whatever the bits say.
 */
#ifndef TG_HYGIENE_H
#define TG_HYGIENE_H

#include "core/dialect.h"
#include "core/tg.h"
#include "sanitize/msg_rules.h"

struct tg_ctx;

void tg_msg_rules_preset(tg_dialect d, tg_msg_rules *out);
/* Applies conf key `messages.<key> = <value>` (on|off|true|false|yes|no|1|0).
 * 0, or -1 with a one-line reason in msg. */
int tg_msg_rules_set(tg_msg_rules *r, const char *key, const char *value,
                     char *msg, size_t msglen);

/* Request stage. Edits body in place; refuses (-1, err filled) only legacy
 * functions[] it must turn into tools and cannot (not an array, an entry
 * without a name); otherwise 0.
 * Records every change in ctx->explain, counts removals in
 * ctx->stats.fields_stripped and rewritten tool-call ids in ctx->id_map
 * ({upstream id: agent id}). */
int tg_hygiene_stage(json_t *body, struct tg_ctx *ctx, tg_error *err);

/* One assistant turn toolgate built from the provider's answer (an inner
 * discovery round): the route's message rules applied to it alone, so
 * that the provider's opaque fields (thought signatures, R18; reasoning,
 * rule 52) go back where the dialect keeps them and nowhere else; its ids
 * are left as the provider gave them. Edits msg in place. */
void tg_hygiene_replayed(json_t *msg, struct tg_ctx *ctx);

#endif
