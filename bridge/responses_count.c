/* responses_count.c -- an estimate of a Responses request's input tokens,
 * for POST /v1/responses/input_tokens (openai 7.60's
 * client.responses.inputTokens.count) on a bridged route.
 *
 * As /v1/messages/count_tokens (messages_count.c): a chat provider counts
 * no tokens without generating, so the answer is an estimate, said to be
 * one (X-Toolgate-Estimate). The characters of what the model reads
 * (instructions, every string of the input items, the tools' definitions
 * as JSON, but deferred ones) at 4 a token, the ratio OpenAI gives for
 * English text; an image or a file part as a full-size image's 1,105
 * tokens (OpenAI's high-detail 1024 x 1024); a few tokens of framing an
 * item. The items a previous_response_id names are not counted: they live
 * in the store, which an estimate does not wait on.
 */
#include "bridge/responses_api.h"

#include <stdlib.h>
#include <string.h>

enum { IMAGE_TOKENS = 1105, ITEM_TOKENS = 4 };

typedef struct tally {
    size_t chars;      /* UTF-8 characters of text */
    json_int_t fixed;  /* tokens counted otherwise (images, framing) */
} tally;

static size_t utf8_chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

static bool is_type(const json_t *v, const char *type)
{
    const char *t = json_string_value(json_object_get(v, "type"));
    return t && !strcmp(t, type);
}

/* Every string under v but ids and types; an image or a file part counts
 * as an image whatever its bytes, which are no text. */
static void count_value(const json_t *v, tally *t)
{
    if (json_is_string(v)) {
        t->chars += utf8_chars(json_string_value(v), json_string_length(v));
        return;
    }
    if (is_type(v, "input_image") || is_type(v, "input_file")) {
        t->fixed += IMAGE_TOKENS;
        return;
    }
    size_t i;
    const char *k;
    json_t *x;
    if (json_is_array(v))
        json_array_foreach(v, i, x) count_value(x, t);
    else if (json_is_object(v))
        json_object_foreach((json_t *)v, k, x) if (strcmp(k, "type") && strcmp(k, "id") &&
                                                   strcmp(k, "call_id") && strcmp(k, "status"))
            count_value(x, t);
}

json_int_t tg_responses_count_estimate(const json_t *body)
{
    tally t = {0, 0};
    count_value(json_object_get(body, "instructions"), &t);
    const json_t *input = json_object_get(body, "input");
    size_t i;
    const json_t *item;
    if (json_is_string(input)) {
        count_value(input, &t);
        t.fixed += ITEM_TOKENS;
    }
    json_array_foreach(input, i, item) {
        count_value(item, &t);
        t.fixed += ITEM_TOKENS;
    }
    const json_t *tool;
    json_array_foreach(json_object_get(body, "tools"), i, tool) {
        if (json_is_true(json_object_get(tool, "defer_loading")))
            continue;  /* not in the prompt until a tool search loads it */
        char *text = json_dumps(tool, JSON_COMPACT);
        if (text)
            t.chars += utf8_chars(text, strlen(text));
        free(text);
    }
    return (json_int_t)((t.chars + 3) / 4) + t.fixed;
}
