/* discovery.c -- identity placeholder; lazy discovery lands in its own issue. */
#include "discovery.h"

#include "../sanitize/pipeline.h"

int tg_discovery_stage(json_t *body, tg_ctx *ctx, tg_error *err)
{
    (void)body;
    (void)ctx;
    (void)err;
    return 0;
}

bool tg_discovery_is_meta(const tg_ctx *ctx, const char *upstream_name)
{
    (void)ctx;
    (void)upstream_name;
    return false;
}

int tg_discovery_stream_round(tg_ctx *ctx, json_t *assistant_msg, json_t **emit,
                              json_t **next_body)
{
    (void)ctx;
    (void)assistant_msg;
    *emit = NULL;
    *next_body = NULL;
    return 0;
}

int tg_discovery_intercept(json_t *resp, tg_ctx *ctx, json_t **next_body)
{
    (void)resp;
    (void)ctx;
    *next_body = NULL;
    return 0;
}
