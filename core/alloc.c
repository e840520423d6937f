/* alloc.c -- the aborting allocator (see alloc.h) and jansson's hook.
 *
 * Why abort: a proxy out of memory half-way through building an answer
 * cannot answer anything sensible, and the checks that pretended it could
 * were most of the error paths, untested and mostly ignored. Every size a
 * client controls is bounded before it is allocated (max_body,
 * max_body_memory, the stream limits), so an abort here means the machine
 * is out of memory, not that a client asked for too much; the service
 * manager restarts the process (deploy/toolgate.service: Restart=on-failure).
 */
#include "core/alloc.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Noreturn void tg_oom(size_t n)
{
    /* no stdio: it may itself want memory */
    char line[80];
    int k = n == SIZE_MAX ? snprintf(line, sizeof line, "toolgate: out of memory (size overflow)\n")
                          : snprintf(line, sizeof line, "toolgate: out of memory (%zu bytes)\n", n);
    if (k > 0 && write(STDERR_FILENO, line, (size_t)k) < 0) {
        /* stderr is gone: nothing more to say */
    }
    abort();
}

void *tg_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);  /* malloc(0) may be NULL: never ours */
    if (!p)
        tg_oom(n);
    return p;
}

void *tg_calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        tg_oom(SIZE_MAX);
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        tg_oom(n * size);
    return p;
}

void *tg_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        tg_oom(n);
    return q;
}

char *tg_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = tg_malloc(len + 1);
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *tg_strdup(const char *s)
{
    return tg_strndup(s, SIZE_MAX);
}

/* Before main, so before any jansson value exists: jansson requires the
 * functions to be set before its first allocation. A constructor rather
 * than an init call in main because the unit tests and the fuzzers
 * (libFuzzer owns their main) use jansson too, and a forgotten call would
 * silently leave them on the NULL-returning malloc. */
__attribute__((constructor)) static void tg_alloc_hook_jansson(void)
{
    json_set_alloc_funcs(tg_malloc, free);
}
