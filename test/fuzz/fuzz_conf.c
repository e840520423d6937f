/* fuzz_conf.c -- libFuzzer target: any bytes as a conf file. The loader
 * must either build a conf or report errors, never crash or leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    tg_buf errs = {0};
    tg_conf *c = tg_conf_load_string(text, "fuzz.conf", &errs);
    if (c) {
        const char *rest;
        tg_route_by_prefix(c, "/a/v1/chat/completions", &rest);
        tg_route_by_model(c, "gpt-4o");
    }
    tg_conf_unref(c);
    tg_buf_free(&errs);
    free(text);
    return 0;
}
