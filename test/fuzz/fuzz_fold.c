/* fuzz_fold.c -- libFuzzer target: an upstream's bytes as a provider that
 * streams what was asked whole would send them, through both folds (chat
 * chunks, repair/collect.c; Responses and Messages events,
 * bridge/api_fold.c), whole and split at a point the input chooses: the
 * two runs must fold to the same answer. The same bytes also go through
 * the request body decoder (core/decode.c) as zstd, gzip and deflate, with
 * a small bound, which must hold. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/api_fold.h"
#include "core/decode.h"
#include "core/jsonio.h"
#include "proxy/sse.h"
#include "repair/collect.h"

typedef struct {
    tg_collect *chat;
    tg_api_fold *api;
} folds;

static void on_event(void *u, const char *event, const char *data, size_t len)
{
    folds *f = u;
    (void)event;
    tg_collect_event(f->chat, data, len);
    tg_api_fold_event(f->api, data, len);
}

static char *run(const uint8_t *d, size_t n, size_t cut)
{
    folds f = {tg_collect_new(), tg_api_fold_new()};
    tg_sse p;
    tg_sse_init(&p, on_event, NULL, &f);
    tg_sse_feed(&p, (const char *)d, cut);
    tg_sse_feed(&p, (const char *)d + cut, n - cut);
    tg_sse_finish(&p);
    tg_sse_free(&p);
    int failed = 0;
    json_t *a = tg_collect_end(f.chat), *b = tg_api_fold_end(f.api, &failed);
    json_t *both = json_pack("[o?,o?,i]", a, b, failed);
    char *s = both ? json_dumps(both, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(both);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *x = run(data, size, size), *y = run(data, size, size ? data[0] % (size + 1) : 0);
    if ((x == NULL) != (y == NULL) || (x && strcmp(x, y)))
        abort();
    free(x);
    free(y);
    static const char *const codings[] = {"zstd", "gzip", "deflate", "gzip, zstd"};
    for (size_t i = 0; i < sizeof codings / sizeof *codings; i++) {
        tg_buf out = {0};
        int rc = tg_decode_body(codings[i], (const char *)data, size, 4096, &out);
        if (rc == TG_DECODE_OK && out.len > 4096)
            abort();
        tg_buf_free(&out);
    }
    return 0;
}
