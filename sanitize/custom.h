/* custom.h -- OpenAI chat's custom (freeform) tools, for upstreams that
 * take only function tools (docs/bridges.md, "Chat custom tools").
 *
 * A custom tool becomes a function taking one string, {"input": text}, its
 * format (free text, or a grammar) in the description; a tool_choice that
 * names it, and custom calls in the history, become their function forms.
 * The names so given are kept in ctx->custom_tools, which the repair stage
 * reads to give the model's calls of them back as custom calls, and what
 * was translated in ctx->translated (X-Toolgate-Translated).
 */
#ifndef TG_CUSTOM_H
#define TG_CUSTOM_H

#include "core/tg.h"

struct tg_ctx;

/* Rewrites body in place (new arrays; the tools it received are never
 * edited, they may be shared with the worker's cache). */
void tg_custom_stage(json_t *body, struct tg_ctx *ctx);

#endif
