/* repair_rules.h -- which repairs are on: the rule bits, each dialect's
 * preset and the conf's overrides (repair_rules.c). Public through
 * repair.h; the repair files below repair.c include it alone. */
#ifndef TG_REPAIR_RULES_H
#define TG_REPAIR_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "core/dialect.h"

/* Rule bits (conf: `repair.<name> = on|off`, or the R-number, e.g.
 * `repair.R15 = off`, read by core/rules.h). Each dialect's row in
 * core/dialect.h names its preset (REPAIR_* in repair_rules.c).
 * Not switchable, because rule 10 depends on them: stream correlation and
 * dense indexes (R2, R3, R5, R6, R7, R16, R17), R18 pass-through, R21/R22
 * usage handling and R26 (a truncated stream is an error). */
enum {
    TG_RR_TYPE = 1u << 0,          /* type:"function" (R1)                          */
    TG_RR_IDS = 1u << 2,           /* synthesize (R8) and de-duplicate (R9) ids     */
    TG_RR_FINISH = 1u << 3,        /* finish_reason consistent with calls (R10,R11) */
    TG_RR_ARGS = 1u << 4,          /* object / empty arguments (R13, R14)           */
    TG_RR_DECODE = 1u << 5,        /* schema-guided double-encoded values (R15)     */
    TG_RR_SPLIT = 1u << 6,         /* {...}{...} arguments split into calls (R4,R20)*/
    TG_RR_JSON_FIX = 1u << 7,      /* lenient JSON repair of arguments              */
    TG_RR_CONTENT = 1u << 8,       /* content "" / [] beside calls -> null (R23,R24)*/
    TG_RR_CONTENT_LIST = 1u << 9,  /* Mistral content lists, thinking moved (R23)   */
    TG_RR_ROLE = 1u << 10,         /* empty delta.role (R25)                        */
    TG_RR_TOOL_USE_FAILED = 1u << 11, /* Groq tool_use_failed recovered (R27)       */
    TG_RR_FORBIDDEN_KEYS = 1u << 12,  /* keys additionalProperties:false forbids (R29)*/
    TG_RR_STREAM_ARGS = 1u << 13,  /* relay a streamed call's arguments as they come
                                      where no rule needs them whole (stream_live.c) */
};

typedef struct tg_repair_rules {
    tg_dialect dialect;
    unsigned flags;        /* TG_RR_* bits */
    bool text_tool_calls;  /* R12: recover tool calls written into content */
} tg_repair_rules;

void tg_repair_rules_preset(tg_dialect d, tg_repair_rules *out);
/* Apply one conf override (`key` without the "repair." prefix). Returns 0,
 * or -1 with a message in msg. */
int tg_repair_rules_set(tg_repair_rules *r, const char *key, const char *value,
                        char *msg, size_t msglen);

#endif
