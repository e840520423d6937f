/* quirk.c -- the names of the quirk ids (quirk.h): "R1".."R29" and
 * "other", made from the same TG_QUIRK_NUMBERS list as the enum, so a new
 * R-number gets its name (in logs, /metrics and the repair.* conf keys)
 * without a second list to keep in step. */
#include "core/quirk.h"

#include <string.h>

#define TG_QUIRK_NAME(n) [TG_R##n] = "R" #n,
static const char *const names[TG_QUIRKS] = {[TG_Q_OTHER] = "other",
                                             TG_QUIRK_NUMBERS(TG_QUIRK_NAME)};
#undef TG_QUIRK_NAME

const char *tg_quirk_name(tg_quirk q)
{
    return (int)q >= 0 && q < TG_QUIRKS ? names[q] : NULL;
}

int tg_quirk_from_name(const char *name)
{
    for (int q = 0; name && q < TG_QUIRKS; q++)
        if (!strcmp(names[q], name))
            return q;
    return -1;
}
