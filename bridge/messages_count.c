/* messages_count.c -- an estimate of a Messages request's input tokens,
 * for /v1/messages/count_tokens on a bridged route (messages_api.h).
 *
 * A chat provider counts no tokens without generating, so the answer is
 * an estimate, and said to be one (proxy/prepare.c sets X-Toolgate-
 * Estimate): the characters of the text the model reads (system, the
 * messages' strings, the tools' definitions as JSON, but deferred ones)
 * at 3.5 a token, the
 * ratio Anthropic gives for English text and code; an image as the 1,600
 * tokens of a full-size one; a PDF as its text plus a page image a page,
 * as Anthropic counts PDFs (bridge/pdftext.h reads it, within its
 * bounds); a few tokens of framing a message. Agents use the count to
 * decide when to compact a conversation, where an estimate within tens of
 * percent does the job.
 */
#include "bridge/messages_api.h"

#include <string.h>

#include "bridge/bridge.h"
#include "bridge/messages_api_int.h"
#include "bridge/pdftext.h"

enum { IMAGE_TOKENS = 1600, MESSAGE_TOKENS = 4 };

/* A base64 PDF: its text's characters, and a page image a page. */
static void count_pdf(const json_t *data, tg_tally *t)
{
    tg_buf text = {0};
    tg_pdf_text info;
    if (!tg_pdf_text_of_base64(json_string_value(data), json_string_length(data), &text, &info)) {
        t->chars += tg_utf8_chars(text.data ? text.data : "", text.len);
        t->fixed += (json_int_t)info.pages * IMAGE_TOKENS;
    }
    tg_buf_free(&text);
}

/* Base64 data counts by what it holds, an image by URL or file_id as a
 * full-size one. */
static bool count_part(const json_t *v, tg_tally *t)
{
    const json_t *src = json_object_get(v, "source");
    const json_t *data = json_object_get(src, "data");
    if (tg_msg_is_type(src, "base64") && json_is_string(data)) {
        if (tg_msg_is_type(v, "document"))
            count_pdf(data, t);
        else
            t->fixed += IMAGE_TOKENS;
        return true;
    }
    if (tg_msg_is_type(v, "image")) {
        t->fixed += IMAGE_TOKENS;
        return true;
    }
    return false;
}

/* Every string but types and cache hints. */
static const char *const skip[] = {"type", "cache_control", NULL};

json_int_t tg_messages_count_estimate(const json_t *body)
{
    tg_tally t = {0, 0};
    tg_tally_value(json_object_get(body, "system"), &t, count_part, skip);
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(body, "messages"), i, m) {
        tg_tally_value(json_object_get(m, "content"), &t, count_part, skip);
        t.fixed += MESSAGE_TOKENS;
    }
    tg_tally_tools(json_object_get(body, "tools"), &t);
    return (json_int_t)((t.chars * 2 + 6) / 7) + t.fixed;
}
