/* hash.h -- the two hashes toolgate uses, and which one is for what.
 *
 *   tg_hash64   for keys that live in this process only: cache keys, hash
 *               tables, the tool list's fingerprint. Fast (16 bytes a step,
 *               the multiply-fold mixing of wyhash); its outputs may change
 *               from one version to the next, so nothing that leaves the
 *               process for good may depend on them.
 *   tg_fnv1a64  for ids derived turn after turn, which an agent or a
 *               provider sees and sends back: the upstream ids of hygiene
 *               (sanitize/hygiene.c), the synthesized call ids of repair
 *               (repair/repair.c), the Messages bridge's stand-in for a
 *               long metadata.user_id (bridge/messages_request.c, from its own
 *               start value). Plain FNV-1a 64, byte at a time: its
 *               outputs are fixed forever (the test vectors pin them).
 */
#ifndef TG_HASH_H
#define TG_HASH_H

#include <stddef.h>
#include <stdint.h>

/* 64-bit hash of n bytes, chainable through seed:
 * tg_hash64(b, nb, tg_hash64(a, na, 0)). */
uint64_t tg_hash64(const void *p, size_t n, uint64_t seed);

/* FNV-1a 64 of n bytes continuing from h: start from TG_FNV1A_OFFSET, or
 * from a previous result to hash a sequence. */
#define TG_FNV1A_OFFSET 14695981039346656037ull
uint64_t tg_fnv1a64(uint64_t h, const void *p, size_t n);

#endif
