/* alloc.h -- the one allocator: it never returns NULL.
 *
 * The out-of-memory policy (core/tg.h states it) as code: each function is
 * its libc namesake, except that a failed allocation prints one line on
 * stderr and aborts the process, as redis's zmalloc and jq's jv_mem_alloc
 * do. Memory they return is freed with plain free(). jansson allocates
 * through tg_malloc too: json_set_alloc_funcs is called before main (a
 * constructor in alloc.c), so the binary, the unit tests and the fuzzers,
 * which all link this file, get it without a call of their own.
 */
#ifndef TG_ALLOC_H
#define TG_ALLOC_H

#include <stddef.h>

void *tg_malloc(size_t n) __attribute__((malloc, alloc_size(1), returns_nonnull));
void *tg_calloc(size_t n, size_t size)
    __attribute__((malloc, alloc_size(1, 2), returns_nonnull));
void *tg_realloc(void *p, size_t n) __attribute__((alloc_size(2), returns_nonnull));
char *tg_strdup(const char *s) __attribute__((malloc, returns_nonnull));
char *tg_strndup(const char *s, size_t n) __attribute__((malloc, returns_nonnull));

/* Print "toolgate: out of memory (N bytes)" and abort. For a size that
 * cannot even be computed (it overflows size_t), pass SIZE_MAX. */
_Noreturn void tg_oom(size_t n);

#endif
