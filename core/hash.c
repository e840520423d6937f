/* hash.c -- the two hashes of hash.h: tg_hash64 (wyhash's multiply-fold
 * mixing, 16 bytes a step) for keys that never leave the process, whose
 * values may change between versions, and FNV-1a 64 for ids an agent or a
 * provider sees and sends back, whose values must never change (the test
 * vectors pin them). Two functions, so that speeding up one cannot change
 * the ids the other makes. */
#include "core/hash.h"

#include <string.h>

/* 128-bit multiply folded to 64 bits: the mixing step of wyhash. */
static uint64_t mum(uint64_t a, uint64_t b)
{
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* 16 bytes a step, so hashing the 137 KB tool list of a big request costs
 * microseconds, not the ~0.1 ms a byte-at-a-time hash would. */
uint64_t tg_hash64(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *b = p;
    uint64_t h = seed ^ 0xa0761d6478bd642fULL ^ mum(n, 0xe7037ed1a0b428dbULL);
    size_t left = n;
    while (left >= 16) {
        uint64_t x, y;
        memcpy(&x, b, 8);
        memcpy(&y, b + 8, 8);
        h = mum(x ^ 0x8ebc6af09c88c6e3ULL ^ h, y ^ 0x589965cc75374cc3ULL);
        b += 16;
        left -= 16;
    }
    uint64_t x = 0, y = 0;
    memcpy(&x, b, left < 8 ? left : 8);
    if (left > 8)
        memcpy(&y, b + 8, left - 8);
    h = mum(x ^ 0x8ebc6af09c88c6e3ULL ^ h, y ^ 0x1d8e4e27c47d124fULL);
    return mum(h ^ 0xa0761d6478bd642fULL, n ^ 0xe7037ed1a0b428dbULL);
}

uint64_t tg_fnv1a64(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return h;
}
