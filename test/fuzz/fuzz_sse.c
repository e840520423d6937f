/* fuzz_sse.c -- libFuzzer target: the SSE parser fed any bytes, whole and
 * split at a point chosen by the input; both runs must see the same events.
 * Half the inputs (by their last byte) run under a small max_event, whose
 * cut must not depend on the split either. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/sse.h"

static void on_event(void *u, const char *event, const char *data, size_t len)
{
    tg_buf *b = u;
    tg_buf_puts(b, event ? event : "-");
    tg_buf_append(b, "|", 1);
    tg_buf_append(b, data, len);
    tg_buf_append(b, "\n", 1);
}

static void run(const uint8_t *d, size_t n, size_t cut, size_t max, tg_buf *out)
{
    tg_sse p;
    tg_sse_init(&p, on_event, NULL, out);
    p.max_event = max;
    tg_sse_feed(&p, (const char *)d, cut);
    tg_sse_feed(&p, (const char *)d + cut, n - cut);
    tg_sse_finish(&p);
    tg_sse_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_buf a = {0}, b = {0};
    size_t max = size && data[size - 1] & 1 ? 24 + data[size - 1] % 40 : 0;
    run(data, size, size, max, &a);
    run(data, size, size ? data[0] % (size + 1) : 0, max, &b);
    if (a.len != b.len || (a.len && memcmp(a.data, b.data, a.len)))
        abort();
    tg_buf_free(&a);
    tg_buf_free(&b);
    return 0;
}
