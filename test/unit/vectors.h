/* vectors.h -- what the vector-driven unit tests share: the runner (one
 * cmocka test per *.json file of a directory, in name order, each given the
 * file's name as its state; an empty or missing directory is a failure,
 * never a pass) and the matcher of expected against actual JSON.
 * Header-only: each test binary is one .c file. */
#ifndef TG_TEST_VECTORS_H
#define TG_TEST_VECTORS_H

#include <dirent.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A call id toolgate made up: call_ and 24 letters or digits. */
static bool is_synth_id(const char *s)
{
    if (!s || strlen(s) != 29 || strncmp(s, "call_", 5))
        return false;
    for (int i = 5; i < 29; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9')))
            return false;
    return true;
}

/* Does got match exp? Arrays element by element with equal lengths;
 * objects with the same keys, or with subset at least exp's; the string
 * "<any>" matches anything and "<id>" a made-up call id; the rest by
 * json_equal. */
static bool vector_match(const json_t *exp, const json_t *got, bool subset)
{
    if (json_is_string(exp)) {
        if (!strcmp(json_string_value(exp), "<any>"))
            return got != NULL;
        if (!strcmp(json_string_value(exp), "<id>"))
            return is_synth_id(json_string_value(got));
    }
    if (json_is_object(exp)) {
        if (!json_is_object(got) || (!subset && json_object_size(exp) != json_object_size(got)))
            return false;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)exp, k, v) if (!vector_match(v, json_object_get(got, k), subset))
            return false;
        return true;
    }
    if (json_is_array(exp)) {
        if (!json_is_array(got) || json_array_size(exp) != json_array_size(got))
            return false;
        for (size_t i = 0; i < json_array_size(exp); i++)
            if (!vector_match(json_array_get(exp, i), json_array_get(got, i), subset))
                return false;
        return true;
    }
    return json_equal(exp, got);
}

/* Fails the test when !ok, printing both sides whole (stdio, not
 * print_error: cmocka truncates long messages). */
static void vector_expect(bool ok, const json_t *exp, const json_t *got, const char *what)
{
    if (ok)
        return;
    char *e = json_dumps(exp, JSON_COMPACT | JSON_ENCODE_ANY);
    char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
    fprintf(stderr, "# %s differs\n--- expected\n%s\n--- got\n%s\n", what, e ? e : "NULL",
            g ? g : "NULL");
    free(e);
    free(g);
    fail();
}

/* The vector file `name` of dir, parsed; fails the test when it is not JSON. */
static json_t *load_vector(const char *dir, const char *name)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    json_error_t je;
    json_t *v = json_load_file(path, 0, &je);
    if (!v)
        fprintf(stderr, "# %s:%d: %s\n", path, je.line, je.text);
    assert_non_null(v);
    return v;
}

static int vector_names_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Does the file hold needle (NULL: any file does)? */
static bool vector_file_has(const char *dir, const char *name, const char *needle)
{
    if (!needle)
        return true;
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char *text = NULL;
    size_t cap = 0, len = 0, got;
    do {
        if (len + 4096 + 1 > cap)
            text = realloc(text, cap = (cap ? cap * 2 : 8192));
        got = fread(text + len, 1, cap - len - 1, f);
        len += got;
    } while (got > 0);
    fclose(f);
    text[len] = '\0';
    bool has = strstr(text, needle) != NULL;
    free(text);
    return has;
}

/* The files of dir that hold needle (all of them when NULL), one test each. */
static int run_vector_files_with(const char *group, const char *dir, CMUnitTestFunction fn,
                                 const char *needle)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "cannot open %s\n", dir);
        return 1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".json") || !vector_file_has(dir, de->d_name, needle))
            continue;
        names = realloc(names, (n + 1) * sizeof *names);
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, vector_names_cmp);
    struct CMUnitTest *tests = calloc(n ? n : 1, sizeof *tests);
    for (size_t i = 0; i < n; i++) {
        tests[i].name = names[i];
        tests[i].test_func = fn;
        tests[i].initial_state = names[i];
    }
    int rc = _cmocka_run_group_tests(group, tests, n, NULL, NULL);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(tests);
    return n ? rc : 1;
}

static int run_vector_files(const char *group, const char *dir, CMUnitTestFunction fn)
{
    return run_vector_files_with(group, dir, fn, NULL);
}

#endif
