/* fuzz_jsonio.c -- libFuzzer target: the fast JSON reader against jansson
 * on any bytes. The fast reader may decline, but what it accepts jansson
 * must accept as an equal value, and its writer must write jansson's bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../sanitize/jsonio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t flags = size && (data[0] & 1) ? JSON_REJECT_DUPLICATES : 0;
    json_t *fast = tg_json_parse((const char *)data, size, flags);
    if (!fast)
        return 0;
    json_t *slow = json_loadb((const char *)data, size, flags, NULL);
    if (!slow || !json_equal(fast, slow))
        abort();
    tg_buf out = {0};
    char *want = json_dumps(fast, JSON_COMPACT);
    if (tg_json_dump(fast, &out) || !want || strlen(want) != out.len ||
        memcmp(want, out.data, out.len))
        abort();
    free(want);
    tg_buf_free(&out);
    json_decref(fast);
    json_decref(slow);
    return 0;
}
