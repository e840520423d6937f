/* schema.c -- identity placeholder; the dialect rewrite lands in its own issue. */
#include "schema.h"

#include <stdio.h>
#include <string.h>

#include "pipeline.h"

void tg_schema_rules_preset(tg_dialect d, tg_schema_rules *out)
{
    memset(out, 0, sizeof *out);
    out->dialect = d;
}

int tg_schema_rules_set(tg_schema_rules *r, const char *key, const char *value,
                        char *msg, size_t msglen)
{
    (void)r;
    (void)value;
    snprintf(msg, msglen, "unknown schema rule '%s'", key);
    return -1;
}

int tg_schema_stage(json_t *body, tg_ctx *ctx, tg_error *err)
{
    (void)body;
    (void)ctx;
    (void)err;
    return 0;
}

const char *tg_schema_agent_name(const tg_ctx *ctx, const char *upstream_name)
{
    (void)ctx;
    return upstream_name;
}

int tg_schema_restore_args(const tg_ctx *ctx, const char *name, json_t *args)
{
    (void)ctx;
    (void)name;
    (void)args;
    return 0;
}
