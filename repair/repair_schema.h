/* repair_schema.h -- the repairs that read the agent's own tool schema
 * (repair_schema.c): R15 and R29, and whether either can apply to a tool.
 * Private to repair/. */
#ifndef TG_REPAIR_SCHEMA_H
#define TG_REPAIR_SCHEMA_H

#include <stdbool.h>

#include "core/ctx.h"

/* R15: values of the agent tool's arguments that are strings where its
 * schema ($ref/$defs, unions followed) wants an object, array, number or
 * boolean, and that parse to exactly that, are replaced in place. Returns
 * the number replaced (each noted). */
int tg_rr_decode_values(tg_ctx *ctx, const char *agent_name, json_t *args);
/* R15 against a schema the caller holds (tg_repair_decode_args). */
int tg_rr_decode_schema(tg_ctx *ctx, const json_t *params, json_t *args);
/* R29: keys of an object the agent's schema closes (additionalProperties:
 * false, no patternProperties) that it does not declare are removed, at
 * every level. Returns the number removed (each noted). */
int tg_rr_drop_forbidden_keys(tg_ctx *ctx, const char *agent_name, json_t *args);
/* Could R15 or R29 (as switched on) change arguments of this agent tool?
 * False means its arguments need no whole-value repair from the schema. */
bool tg_rr_schema_repairs(const tg_ctx *ctx, const char *agent_name);

#endif
