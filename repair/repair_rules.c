/* repair_rules.c -- the repair's rule table: one preset of TG_RR_* bits
 * per dialect (the REPAIR_* a row of core/dialect.h names), and the conf's
 * `repair.<name> = on|off` overrides by name or R-number (core/rules.h).
 * What each bit repairs is in repair.c and repair_stream.c (with its
 * stream_*.c). */
#include "repair/repair_rules.h"

#include "core/rules.h"

#include <stdio.h>
#include <string.h>

#define RR_ALL                                                                             \
    (TG_RR_TYPE | TG_RR_IDS | TG_RR_FINISH | TG_RR_ARGS | TG_RR_DECODE | TG_RR_SPLIT |     \
     TG_RR_JSON_FIX | TG_RR_CONTENT | TG_RR_ROLE | TG_RR_TOOL_USE_FAILED |                 \
     TG_RR_FORBIDDEN_KEYS)
/* passthrough still guarantees rules 8-10 (well-formed calls, finish, dense
 * indexes) but does not second-guess argument contents or content. */
#define RR_GUARANTEE (TG_RR_TYPE | TG_RR_IDS | TG_RR_FINISH | TG_RR_ARGS)
/* Streamed arguments are relayed as they come where the provider writes
 * well-formed argument JSON in order (OpenAI, and whatever passthrough
 * fronts); elsewhere R4/R13/R20 and broken JSON are common enough that a
 * call is held until it is whole (repair.stream_args turns it on). */
#define RR_STREAM TG_RR_STREAM_ARGS

/* The presets the rows of core/dialect.h name. */
#define REPAIR_ALL RR_ALL
#define REPAIR_RELAYED (RR_ALL | RR_STREAM)
#define REPAIR_MISTRAL (RR_ALL | TG_RR_CONTENT_LIST)
#define REPAIR_GUARANTEE (RR_GUARANTEE | RR_STREAM)

#define ROW(id, name, features, schema, msg, repair) [id] = repair,
static const unsigned preset_flags[TG_D_COUNT] = {TG_DIALECTS(ROW)};
#undef ROW

/* text_tool_calls (R12) is a switch of its own (tg_repair_rules), not a
 * flag; a row whose bits are 0 names a rule that is always on. */
#define RR_TEXT_CALLS (1u << 31)

static const tg_rule_name rule_names[] = {
    {"type", TG_RR_TYPE},         {"R1", TG_RR_TYPE},
    /* 0: always on (stream correlation and dense indexes, rule 10) */
    {"index", 0}, {"R2", 0}, {"R3", 0}, {"R5", 0}, {"R6", 0}, {"R7", 0}, {"R16", 0},
    {"R17", 0}, {"R18", 0}, {"R21", 0}, {"R22", 0}, {"R26", 0},
    {"ids", TG_RR_IDS},           {"R8", TG_RR_IDS},            {"R9", TG_RR_IDS},
    {"finish", TG_RR_FINISH},     {"R10", TG_RR_FINISH},        {"R11", TG_RR_FINISH},
    {"args", TG_RR_ARGS},         {"R13", TG_RR_ARGS},          {"R14", TG_RR_ARGS},
    {"decode_strings", TG_RR_DECODE}, {"R15", TG_RR_DECODE},
    {"split", TG_RR_SPLIT},       {"R4", TG_RR_SPLIT},          {"R20", TG_RR_SPLIT},
    {"json_fix", TG_RR_JSON_FIX},
    {"content", TG_RR_CONTENT},   {"R23", TG_RR_CONTENT},       {"R24", TG_RR_CONTENT},
    {"content_list", TG_RR_CONTENT_LIST},
    {"role", TG_RR_ROLE},         {"R25", TG_RR_ROLE},
    {"tool_use_failed", TG_RR_TOOL_USE_FAILED}, {"R27", TG_RR_TOOL_USE_FAILED},
    {"forbidden_keys", TG_RR_FORBIDDEN_KEYS}, {"R29", TG_RR_FORBIDDEN_KEYS},
    {"stream_args", TG_RR_STREAM_ARGS},
    {"text_tool_calls", RR_TEXT_CALLS}, {"R12", RR_TEXT_CALLS},
};
static const tg_rule_section section = {"repair", rule_names,
                                        sizeof rule_names / sizeof *rule_names, NULL};

void tg_repair_rules_preset(tg_dialect d, tg_repair_rules *out)
{
    memset(out, 0, sizeof *out);
    out->dialect = d;
    out->flags = (unsigned)d < TG_D_COUNT ? preset_flags[d] : RR_ALL;
}

int tg_repair_rules_set(tg_repair_rules *r, const char *key, const char *value,
                        char *msg, size_t msglen)
{
    const tg_rule_name *row = tg_rule_peek(&section, key, msg, msglen);
    if (!row)
        return -1;
    int on = tg_rule_switch(&section, key, value, msg, msglen);
    if (on < 0)
        return -1;
    if (row->bits == RR_TEXT_CALLS) {
        r->text_tool_calls = on;
        return 0;
    }
    if (!row->bits && !on) {
        snprintf(msg, msglen, "repair.%s cannot be turned off (the agent always gets "
                 "well-formed calls with dense indexes)", key);
        return -1;
    }
    if (on)
        r->flags |= row->bits;
    else
        r->flags &= ~row->bits;
    return 0;
}
