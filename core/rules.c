/* rules.c -- the one reader of rule switches (rules.h): on/off values in
 * their accepted spellings, and a SECTION.NAME looked up in the section's
 * own table (tg_rule_section). Every stage's switches and the conf's plain
 * booleans go through here, so the spellings a user may write and the
 * error they get for an unknown name (the known ones listed from the same
 * table, cut to the message's bound) are the same in every section. */
#include "core/rules.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

int tg_switch_parse(const char *value)
{
    static const char *const on[] = {"on", "true", "yes", "1"};
    static const char *const off[] = {"off", "false", "no", "0"};
    if (!value)
        return -1;
    for (size_t i = 0; i < sizeof on / sizeof *on; i++) {
        if (!strcasecmp(value, on[i]))
            return 1;
        if (!strcasecmp(value, off[i]))
            return 0;
    }
    return -1;
}

/* Appends s to msg at *off, never past msglen (a long list is cut, not
 * overflowed). */
static void put(char *msg, size_t msglen, size_t *off, const char *s)
{
    if (*off >= msglen)
        return;
    int n = snprintf(msg + *off, msglen - *off, "%s", s);
    *off += n > 0 ? (size_t)n : 0;
}

static void unknown(const tg_rule_section *sec, const char *key, char *msg, size_t msglen)
{
    size_t off = 0;
    int n = snprintf(msg, msglen, "unknown %s rule '%s' (known: ", sec->name, key);
    off = n > 0 ? (size_t)n : 0;
    const char *sep = "";
    for (size_t i = 0; i < sec->n; i++, sep = ", ") {
        put(msg, msglen, &off, sep);
        put(msg, msglen, &off, sec->rules[i].name);
    }
    for (const char *const *o = sec->other; o && *o; o++, sep = ", ") {
        put(msg, msglen, &off, sep);
        put(msg, msglen, &off, *o);
    }
    put(msg, msglen, &off, ")");
}

const tg_rule_name *tg_rule_peek(const tg_rule_section *sec, const char *key, char *msg,
                                 size_t msglen)
{
    for (size_t i = 0; i < sec->n; i++)
        if (!strcmp(key, sec->rules[i].name))
            return &sec->rules[i];
    unknown(sec, key, msg, msglen);
    return NULL;
}

int tg_rule_switch(const tg_rule_section *sec, const char *key, const char *value, char *msg,
                   size_t msglen)
{
    int on = tg_switch_parse(value);
    if (on < 0)
        snprintf(msg, msglen, "%s.%s: expected on or off, got '%s'", sec->name, key,
                 value ? value : "");
    return on;
}

int tg_rule_apply(const tg_rule_section *sec, const char *key, const char *value,
                  uint64_t *flags, char *msg, size_t msglen)
{
    const tg_rule_name *row = tg_rule_peek(sec, key, msg, msglen);
    if (!row)
        return -1;
    int on = tg_rule_switch(sec, key, value, msg, msglen);
    if (on < 0)
        return -1;
    if (on)
        *flags |= row->bits;
    else
        *flags &= ~row->bits;
    return 0;
}
