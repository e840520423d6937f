/* repair_base.h -- what every file of the repair stage asks (repair_base.c):
 * is a rule on, is a tool the agent's, and the record of one repair or one
 * failure. The bottom of repair/: it calls no other repair file, so the
 * schema rules (repair_schema.c), the text parsers (repair_text.c) and the
 * repair itself (repair.c) all stand on it and none calls back up.
 * Private to repair/. */
#ifndef TG_REPAIR_BASE_H
#define TG_REPAIR_BASE_H

#include <stdbool.h>
#include <string.h>

#include "core/ctx.h"
#include "repair/repair_rules.h"

/* The first needle in [s, e), or NULL (also for s NULL or e before s):
 * the one byte search of the repair's scans. */
static inline const char *tg_rr_find(const char *s, const char *e, const char *needle)
{
    size_t n = strlen(needle);
    if (!s || !e || e < s || (size_t)(e - s) < n)
        return NULL;
    return memmem(s, (size_t)(e - s), needle, n);
}

static inline bool tg_rr_on(const tg_ctx *ctx, unsigned flag)
{
    return ctx->repair && (ctx->repair->flags & flag);
}
/* R12 applies: text_tool_calls on, tools declared, tool_choice not "none". */
bool tg_rr_text_calls_on(const tg_ctx *ctx);
/* The declared tool (the agent's own tools entry, borrowed) for an agent
 * name, or NULL. */
const json_t *tg_rr_tool_peek(const tg_ctx *ctx, const char *agent_name);
/* Is the upstream name one the agent declared (after reverse renaming)? */
bool tg_rr_declared(const tg_ctx *ctx, const char *upstream_name);
/* Count and record one repair: of quirk q (recorded under its name "Rn"),
 * or of a rule no R-number names (counted as TG_Q_OTHER). Then one failure. */
void tg_rr_note(tg_ctx *ctx, tg_quirk q, const char *where, json_t *before, json_t *after);
void tg_rr_note_other(tg_ctx *ctx, const char *rule, const char *where, json_t *before,
                      json_t *after);
void tg_rr_fail(tg_ctx *ctx, const char *rule, const char *where, json_t *before);

#endif
