/* custom_calls.h -- calls of a chat custom tool given back in its shape
 * (custom_calls.c). Private to repair/. */
#ifndef TG_CUSTOM_CALLS_H
#define TG_CUSTOM_CALLS_H

#include <stdbool.h>

#include "core/ctx.h"

/* Is agent_name a chat custom tool sent up as a function (sanitize/custom.h)?
 * And its calls among calls (repaired function calls) turned back into
 * custom calls, in place. */
bool tg_rr_is_custom(const tg_ctx *ctx, const char *agent_name);
bool tg_rr_custom_shaped(const json_t *call);  /* {"type":"custom","custom":{...}} */
void tg_rr_custom_calls(tg_ctx *ctx, json_t *calls);

#endif
