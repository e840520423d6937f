/* hygiene.c -- identity placeholder; message hygiene lands in its own issue. */
#include "hygiene.h"

#include <stdio.h>
#include <string.h>

#include "pipeline.h"

void tg_msg_rules_preset(tg_dialect d, tg_msg_rules *out)
{
    memset(out, 0, sizeof *out);
    out->dialect = d;
}

int tg_msg_rules_set(tg_msg_rules *r, const char *key, const char *value,
                     char *msg, size_t msglen)
{
    (void)r;
    (void)value;
    snprintf(msg, msglen, "unknown messages rule '%s'", key);
    return -1;
}

int tg_hygiene_stage(json_t *body, tg_ctx *ctx, tg_error *err)
{
    (void)body;
    (void)ctx;
    (void)err;
    return 0;
}
