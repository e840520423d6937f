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

#include <stdlib.h>
#include <string.h>

#include "bridge/messages_api_int.h"
#include "bridge/pdftext.h"

enum { IMAGE_TOKENS = 1600, MESSAGE_TOKENS = 4 };

typedef struct tally {
    size_t chars;      /* UTF-8 characters of text */
    json_int_t fixed;  /* tokens counted otherwise (images, pages, framing) */
} tally;

static size_t utf8_chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* A base64 PDF: its text's characters, and a page image a page. */
static void count_pdf(const json_t *data, tally *t)
{
    tg_buf text = {0};
    tg_pdf_text info;
    if (!tg_pdf_text_of_base64(json_string_value(data), json_string_length(data), &text, &info)) {
        t->chars += utf8_chars(text.data ? text.data : "", text.len);
        t->fixed += (json_int_t)info.pages * IMAGE_TOKENS;
    }
    tg_buf_free(&text);
}

/* Every string under v, but base64 data, which counts by what it holds. */
static void count_value(const json_t *v, tally *t)
{
    if (json_is_string(v)) {
        t->chars += utf8_chars(json_string_value(v), json_string_length(v));
        return;
    }
    const json_t *src = json_object_get(v, "source");
    const json_t *data = json_object_get(src, "data");
    if (tg_msg_is_type(src, "base64") && json_is_string(data)) {
        if (tg_msg_is_type(v, "document"))
            count_pdf(data, t);
        else
            t->fixed += IMAGE_TOKENS;
        return;
    }
    if (tg_msg_is_type(v, "image")) {  /* by URL or file_id */
        t->fixed += IMAGE_TOKENS;
        return;
    }
    size_t i;
    const char *k;
    json_t *x;
    if (json_is_array(v))
        json_array_foreach(v, i, x) count_value(x, t);
    else if (json_is_object(v))
        json_object_foreach((json_t *)v, k, x) if (strcmp(k, "type") && strcmp(k, "cache_control"))
            count_value(x, t);
}

json_int_t tg_messages_count_estimate(const json_t *body)
{
    tally t = {0, 0};
    count_value(json_object_get(body, "system"), &t);
    const json_t *msgs = json_object_get(body, "messages");
    size_t i;
    const json_t *m;
    json_array_foreach(msgs, i, m) {
        count_value(json_object_get(m, "content"), &t);
        t.fixed += MESSAGE_TOKENS;
    }
    const json_t *tool;
    json_array_foreach(json_object_get(body, "tools"), i, tool) {
        if (json_is_true(json_object_get(tool, "defer_loading")))
            continue;  /* not in the prompt until a tool_reference loads it */
        char *text = json_dumps(tool, JSON_COMPACT);
        if (text)
            t.chars += utf8_chars(text, strlen(text));
        free(text);
    }
    return (json_int_t)((t.chars * 2 + 6) / 7) + t.fixed;
}
