/* mask.h -- what two runs of one stream may differ in, masked before the
 * unit tests compare their bytes (test_repair: scans on and off; test_field:
 * the same for every field stream case). Ids made where upstream gave none
 * to derive them from take the clock (tg_rr_seed): "call_" and 24 letters or
 * digits, "chatcmpl-tg" and 16, become '#'s; so do the digits of every
 * "created" (R27 writes a chunk with nothing from upstream to copy).
 * Header-only: each test binary is one .c file. */
#ifndef TG_TEST_MASK_H
#define TG_TEST_MASK_H

#include <ctype.h>
#include <string.h>

#include "core/buf.h"

static void mask_made(tg_buf *b)
{
    static const struct { const char *at; size_t n; } made[] = {{"call_", 24}, {"chatcmpl-tg", 16}};
    for (size_t m = 0; m < 2; m++) {
        size_t k = strlen(made[m].at);
        for (char *p = b->data; p && (p = memmem(p, b->len - (size_t)(p - b->data), made[m].at, k));
             p += k) {
            size_t i = 0;
            while (p + k + i < b->data + b->len && isalnum((unsigned char)p[k + i]))
                i++;
            if (i == made[m].n)
                memset(p + k, '#', i);
        }
    }
    static const char key[] = "\"created\":";
    for (char *p = b->data; p && (p = memmem(p, b->len - (size_t)(p - b->data), key,
                                              sizeof key - 1));) {
        p += sizeof key - 1;
        while (p < b->data + b->len && isdigit((unsigned char)*p))
            *p++ = '#';
    }
}

#endif
