/* rules.h -- one way to declare a rule switch.
 *
 * A route turns a stage's rules on and off with `SECTION.NAME = VALUE`
 * (schema., messages., repair.), and plain booleans of the conf
 * (text_tool_calls, metrics_auth...) are the same kind of value. Every one
 * of them is read here, so the spellings a user may write and the errors
 * they get are the same in every section:
 *   - values: on | off, true | false, yes | no, 1 | 0, in any case;
 *   - names: exact, as every other conf key ("R12", never "r12");
 *   - an unknown name: "unknown SECTION rule 'NAME' (known: a, b, ...)",
 *     the list made from the section's own table;
 *   - a bad value: "SECTION.NAME: expected on or off, got 'VALUE'".
 * Each stage keeps its table (the bits are its own); this file only reads.
 */
#ifndef TG_RULES_H
#define TG_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One switchable name and the rule bits it sets or clears (64 bits: the
 * schema section outgrew 32). */
typedef struct tg_rule_name {
    const char *name;
    uint64_t bits;
} tg_rule_name;

/* A conf section of rule switches. `other` names the section's keys that
 * are not switches (limits such as schema.name_max), listed in the unknown
 * name error too; NULL-terminated, or NULL. */
typedef struct tg_rule_section {
    const char *name;           /* "schema", "messages", "repair" */
    const tg_rule_name *rules;
    size_t n;
    const char *const *other;
} tg_rule_section;

/* 1 for on, 0 for off, -1 for anything else (NULL too). */
int tg_switch_parse(const char *value);

/* The row of key in sec (borrowed from the table), or NULL with msg set to
 * the unknown name error. */
const tg_rule_name *tg_rule_peek(const tg_rule_section *sec, const char *key, char *msg,
                                 size_t msglen);

/* value as a switch of sec's key: 1 on, 0 off, or -1 with msg set. */
int tg_rule_switch(const tg_rule_section *sec, const char *key, const char *value, char *msg,
                   size_t msglen);

/* Looks key up and applies value to *flags: sets or clears the row's bits.
 * 0, or -1 with msg set (unknown name or bad value). */
int tg_rule_apply(const tg_rule_section *sec, const char *key, const char *value,
                  uint64_t *flags, char *msg, size_t msglen);

#endif
