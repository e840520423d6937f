/* schema.h -- the schema-dialect stage: rewrites `tools` (and every place
 * that names a tool) into the route's dialect, and keeps, in the ctx, what
 * the way back needs to undo it (see tg.h for the ownership rule).
 */
#ifndef TG_SCHEMA_H
#define TG_SCHEMA_H

#include "dialect.h"
#include "tg.h"

struct tg_ctx;

/* The schema rules a preset turns on; a route may override single rules
 * (conf keys `schema.<rule> = on|off`). Held by value in the route. */
typedef struct tg_schema_rules {
    tg_dialect dialect;
    unsigned flags;  /* TG_SR_* bits, defined in schema.c */
    int name_max;    /* tool-name length limit, 0 = none */
    int desc_max;    /* tool-description length limit, 0 = none */
    int max_tools;   /* 0 = no limit */
} tg_schema_rules;

void tg_schema_rules_preset(tg_dialect d, tg_schema_rules *out);
/* Apply one conf override (`key` without the "schema." prefix). Returns 0,
 * or -1 with a message in msg for an unknown rule or bad value. */
int tg_schema_rules_set(tg_schema_rules *r, const char *key, const char *value,
                        char *msg, size_t msglen);

/* Request stage. Edits body in place; fills ctx->name_map / ctx->arg_inverse. */
int tg_schema_stage(json_t *body, struct tg_ctx *ctx, tg_error *err);

/* Way back: the agent's own name for an upstream tool name (borrowed string,
 * valid while ctx lives); the input itself when nothing was renamed. */
const char *tg_schema_agent_name(const struct tg_ctx *ctx, const char *upstream_name);
/* Way back: undo lossy argument rewrites for a call of agent tool `name`
 * (args is the parsed arguments object, edited in place). Returns the number
 * of values changed. */
int tg_schema_restore_args(const struct tg_ctx *ctx, const char *name, json_t *args);

#endif
