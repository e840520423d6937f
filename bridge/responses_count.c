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

#include <string.h>

#include "bridge/bridge.h"

enum { IMAGE_TOKENS = 1105, ITEM_TOKENS = 4 };

/* An image or a file part counts as an image whatever its bytes, which
 * are no text. */
static bool count_part(const json_t *v, tg_tally *t)
{
    const char *type = json_string_value(json_object_get(v, "type"));
    if (!type || (strcmp(type, "input_image") && strcmp(type, "input_file")))
        return false;
    t->fixed += IMAGE_TOKENS;
    return true;
}

/* Every string but ids and types. */
static const char *const skip[] = {"type", "id", "call_id", "status", NULL};

json_int_t tg_responses_count_estimate(const json_t *body)
{
    tg_tally t = {0, 0};
    tg_tally_value(json_object_get(body, "instructions"), &t, count_part, skip);
    const json_t *input = json_object_get(body, "input");
    size_t i;
    const json_t *item;
    if (json_is_string(input)) {
        tg_tally_value(input, &t, count_part, skip);
        t.fixed += ITEM_TOKENS;
    }
    json_array_foreach(input, i, item) {
        tg_tally_value(item, &t, count_part, skip);
        t.fixed += ITEM_TOKENS;
    }
    tg_tally_tools(json_object_get(body, "tools"), &t);
    return (json_int_t)((t.chars + 3) / 4) + t.fixed;
}
