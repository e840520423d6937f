/* repair_text.h -- tool calls written into content (repair_text.c, R12).
 * Private to repair/. */
#ifndef TG_REPAIR_TEXT_H
#define TG_REPAIR_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"
#include "core/ctx.h"

/* Scan s[0..n) for tool-call markup (R12): bare JSON {"name","arguments"}
 * at the start of the message, <tool_call>{json}</tool_call>, <tools>,
 * <function=NAME><parameter=K>v</parameter></function>, <invoke name=...>.
 * Text decided to be ordinary content is appended to `text`; calls whose
 * names were all declared are appended to `calls` as {"name","arguments"}
 * with arguments coerced by the declared schema, and their markup removed.
 * Returns the bytes decided; the caller keeps s[ret..n) and scans again with
 * more text. final: no more text will come (truncated markup is parsed as
 * far as it goes). *at_start: only whitespace so far in this message. */
size_t tg_text_scan(const tg_ctx *ctx, const char *s, size_t n, bool final,
                    bool *at_start, tg_buf *text, json_t *calls);

/* tg_text_scan, with the bytes it removed (the markup of the calls, and the
 * end tokens dropped) appended to markup: the stream holds them until it
 * knows whether calls read in the reasoning go out (repair_stream.c). */
size_t tg_text_scan_markup(const tg_ctx *ctx, const char *s, size_t n, bool final,
                           bool *at_start, tg_buf *text, json_t *calls, tg_buf *markup);

#endif
