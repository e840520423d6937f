/* test_alloc.c -- the out-of-memory policy (core/tg.h, core/alloc.h):
 * jansson allocates through tg_malloc from before main, and a failed
 * allocation, ours or jansson's, ends the process with SIGABRT and the
 * one-line message instead of a NULL. Each failure is forced with a size no
 * allocator can give, in a forked child whose stderr the parent reads. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/buf.h"
#include "core/jsonio.h"

/* ASan answers an impossible size with a report of its own unless told to
 * return NULL like malloc does; this binary's children must see the NULL. */
#if defined(__SANITIZE_ADDRESS__)
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}
#endif

/* So the compiler cannot see the size and warn about it. */
static volatile size_t huge = SIZE_MAX - 1;

/* Runs fn in a child; returns the child's wait status, its stderr in err. */
static int run_child(void (*fn)(void), char *err, size_t n)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGABRT, SIG_DFL);
        dup2(fd[1], STDERR_FILENO);
        close(fd[0]);
        close(fd[1]);
        fn();
        _exit(0);  /* returned: the policy was not followed */
    }
    close(fd[1]);
    size_t got = 0;
    ssize_t k;
    while (got + 1 < n && (k = read(fd[0], err + got, n - 1 - got)) > 0)
        got += (size_t)k;
    err[got] = '\0';
    close(fd[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void assert_oom_abort(void (*fn)(void), const char *says)
{
    char err[4096];
    int status = run_child(fn, err, sizeof err);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
        fail_msg("child did not abort (status %d), stderr: %s", status, err);
    if (!strstr(err, says))
        fail_msg("stderr lacks \"%s\": %s", says, err);
}

static void test_jansson_uses_tg_malloc(void **state)
{
    (void)state;
    json_malloc_t m = NULL;
    json_free_t f = NULL;
    json_get_alloc_funcs(&m, &f);
    assert_ptr_equal(m, tg_malloc);
    assert_ptr_equal(f, free);
}

static void big_malloc(void) { free(tg_malloc(huge)); }
static void big_calloc(void) { free(tg_calloc(huge, 1)); }
static void overflow_calloc(void) { free(tg_calloc(huge, 16)); }
static void big_realloc(void) { free(tg_realloc(NULL, huge)); }

static void big_buf(void)
{
    tg_buf b = {0};
    tg_buf_puts(&b, "x");
    tg_buf_reserve(&b, huge);
    tg_buf_free(&b);
}

/* jansson copies a string into memory of its allocator: len + 1 bytes. */
static void big_json_string(void)
{
    json_decref(json_stringn_nocheck("x", huge));
}

static void test_failure_aborts(void **state)
{
    (void)state;
    char says[80];
    snprintf(says, sizeof says, "toolgate: out of memory (%zu bytes)\n", (size_t)huge);
    assert_oom_abort(big_malloc, says);
    assert_oom_abort(big_calloc, "toolgate: out of memory (");
    assert_oom_abort(overflow_calloc, "toolgate: out of memory (size overflow)\n");
    assert_oom_abort(big_realloc, "toolgate: out of memory (");
    assert_oom_abort(big_buf, "toolgate: out of memory (size overflow)\n");
    assert_oom_abort(big_json_string, "toolgate: out of memory (");
}

static void test_never_null(void **state)
{
    (void)state;
    /* zero sizes still give memory of our own to free */
    void *p = tg_malloc(0), *q = tg_calloc(0, 8), *r = tg_realloc(NULL, 0);
    assert_non_null(p);
    assert_non_null(q);
    assert_non_null(r);
    free(p);
    free(q);
    free(r);
    char *s = tg_strndup("abcdef", 3);
    assert_string_equal(s, "abc");
    free(s);
    s = tg_strndup("ab", 10);
    assert_string_equal(s, "ab");
    free(s);
    s = tg_strdup("");
    assert_string_equal(s, "");
    free(s);
    /* an empty buffer still hands over a string */
    tg_buf b = {0};
    size_t n = 1;
    s = tg_buf_steal(&b, &n);
    assert_non_null(s);
    assert_int_equal(n, 0);
    assert_string_equal(s, "");
    free(s);
    /* tg_json_dump's -1 is left for what is not memory: no value */
    assert_int_equal(tg_json_dump(NULL, &b), -1);
    assert_null(tg_json_dumps(NULL));
    tg_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jansson_uses_tg_malloc),
        cmocka_unit_test(test_failure_aborts),
        cmocka_unit_test(test_never_null),
    };
    return cmocka_run_group_tests_name("alloc", tests, NULL, NULL);
}
