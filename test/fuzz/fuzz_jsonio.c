/* fuzz_jsonio.c -- libFuzzer target: the fast JSON reader against jansson
 * on any bytes. The fast reader may decline, but what it accepts jansson
 * must accept as an equal value (integers past int64: as the doubles of
 * JSON_DECODE_INT_AS_REAL), and what its writer writes must read back as
 * the same value, in jansson's very bytes when there is no real in it. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonio.h"

static bool has_real(const json_t *v)
{
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_real(v))
        return true;
    if (json_is_object(v))
        json_object_foreach((json_t *)v, k, x) if (has_real(x))
            return true;
    if (json_is_array(v))
        json_array_foreach(v, i, x) if (has_real(x))
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t flags = size && (data[0] & 1) ? JSON_REJECT_DUPLICATES : 0;
    json_t *fast = tg_json_parse((const char *)data, size, flags);
    if (!fast)
        return 0;
    json_t *slow = json_loadb((const char *)data, size, flags, NULL);
    if (!slow)  /* only integers out of range: the reals jansson would make */
        slow = json_loadb((const char *)data, size, flags | JSON_DECODE_INT_AS_REAL, NULL);
    if (!slow || (!json_equal(fast, slow) && !has_real(fast)))
        abort();
    tg_buf out = {0};
    if (tg_json_dump(fast, &out))
        abort();
    json_t *back = json_loadb(out.data, out.len, flags | JSON_DECODE_INT_AS_REAL, NULL);
    if (!back)
        abort();
    if (!has_real(fast)) {
        char *want = json_dumps(fast, JSON_COMPACT);
        if (!want || strlen(want) != out.len || memcmp(want, out.data, out.len))
            abort();
        free(want);
    }
    json_decref(back);
    tg_buf_free(&out);
    json_decref(fast);
    json_decref(slow);
    return 0;
}
