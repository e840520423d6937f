/* dialect.c -- the names, feature bits and printed list of the dialect
 * table (dialect.h). Each is expanded from the one TG_DIALECTS list, so a
 * new dialect is one row there and its name, features and place in the
 * usage text and conf errors cannot drift apart. */
#include "core/dialect.h"

#include <string.h>

#define NAME(id, name, features, schema, msg, repair) [id] = name,
static const char *const names[TG_D_COUNT] = {TG_DIALECTS(NAME)};
#undef NAME

#define FEATURES(id, name, features, schema, msg, repair) [id] = features,
static const unsigned features_of[TG_D_COUNT] = {TG_DIALECTS(FEATURES)};
#undef FEATURES

/* " | openai | openai-strict | ...": the first separator is skipped. */
#define LISTED(id, name, features, schema, msg, repair) " | " name
static const char list[] = TG_DIALECTS(LISTED);
#undef LISTED

int tg_dialect_from_name(const char *name)
{
    for (int i = 0; i < TG_D_COUNT; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

const char *tg_dialect_name(tg_dialect d)
{
    return (d >= 0 && d < TG_D_COUNT) ? names[d] : "?";
}

const char *tg_dialect_list(void)
{
    return list + 3;
}

unsigned tg_dialect_features(tg_dialect d)
{
    return (d >= 0 && d < TG_D_COUNT) ? features_of[d] : 0;
}
