/* hash_embed.h -- a deterministic stand-in for an embedding model, for
 * tests only: a text becomes a hashed bag of its words (lower-cased, a
 * plural s cut, a few stop words left out) in HASH_EMBED_DIM dimensions,
 * where the words of a few synonym classes share their class's first word,
 * so that "hire an automobile" meets "rent_car" as a real model would.
 * It measures nothing: semantic recall needs a real model (README).
 * Header-only: the mock upstream and test_embed.c both include it.
 */
#ifndef TG_HASH_EMBED_H
#define TG_HASH_EMBED_H

#include <ctype.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define HASH_EMBED_DIM 64

static const char *const hash_embed_classes[][4] = {
    { "car", "automobile", "vehicle", NULL },
    { "rent", "hire", "lease", NULL },
    { NULL },
};

static uint64_t hash_embed_fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ^ (h >> 29);
}

static void hash_embed_word(const char *w, size_t n, float *v)
{
    static const char *const stop[] = { "a", "an", "the", "for", "on", "of", "from", "with", NULL };
    char s[64];
    if (n >= sizeof s)
        n = sizeof s - 1;
    for (size_t i = 0; i < n; i++)
        s[i] = (char)tolower((unsigned char)w[i]);
    s[n] = '\0';
    if (n > 3 && s[n - 1] == 's')
        s[--n] = '\0';
    for (size_t k = 0; stop[k]; k++)
        if (!strcmp(s, stop[k]))
            return;
    for (size_t c = 0; hash_embed_classes[c][0]; c++)
        for (size_t k = 0; hash_embed_classes[c][k]; k++)
            if (!strcmp(s, hash_embed_classes[c][k]))
                snprintf(s, sizeof s, "%s", hash_embed_classes[c][0]);
    v[hash_embed_fnv(s) % HASH_EMBED_DIM] += 1.0f;
}

/* v[HASH_EMBED_DIM] (zeroed by the caller) += the words of text. */
static void hash_embed(const char *t, float *v)
{
    while (t && *t) {
        while (*t && !isalnum((unsigned char)*t))
            t++;
        const char *b = t;
        while (isalnum((unsigned char)*t))
            t++;
        if (t > b)
            hash_embed_word(b, (size_t)(t - b), v);
    }
}

/* The vector as a JSON array of dim numbers (the HASH_EMBED_DIM values
 * again past HASH_EMBED_DIM, which makes vectors of a wrong size). */
static json_t *hash_embed_json(const char *text, size_t dim)
{
    float v[HASH_EMBED_DIM] = { 0 };
    hash_embed(text, v);
    json_t *a = json_array();
    for (size_t j = 0; j < dim; j++)
        json_array_append_new(a, json_real(v[j % HASH_EMBED_DIM]));
    return a;
}

#endif
