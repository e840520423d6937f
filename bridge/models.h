/* models.h -- the model lists agents ask for (GET [prefix]/v1/models and
 * /v1/models/{id}), in each API's own shape: OpenAI's list
 * {"object":"list","data":[{id, object, created, owned_by}]}, which
 * OpenAI-compatible providers serve too, and Anthropic's
 * {"data":[{type, id, display_name, created_at}], has_more, first_id,
 * last_id}, which Claude Code and @anthropic-ai/sdk read. Pure functions
 * over JSON (proxy/bridges.c decides which list a request gets); ownership
 * follows core/tg.h. */
#ifndef TG_MODELS_H
#define TG_MODELS_H

#include <stdbool.h>

#include "core/tg.h"

/* OpenAI's list of the NULL-terminated names. New reference. */
json_t *tg_models_list(const char *const *names);
/* An OpenAI list (or one model object of it) in Anthropic's shape: each
 * model's id, its id again as display_name, its created time as
 * created_at (RFC 3339; the epoch when it has none). New reference, or NULL
 * when v is neither. */
json_t *tg_models_anthropic(const json_t *v);
/* The model of an OpenAI list named id (borrowed), or NULL. */
const json_t *tg_models_find_peek(const json_t *list, const char *id);

#endif
