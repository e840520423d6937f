/* hygiene_message.h -- the message-hygiene stage on one message
 * (hygiene_message.c), for the files above it (hygiene_history.c,
 * hygiene.c); not for other stages. */
#ifndef TG_HYGIENE_MESSAGE_H
#define TG_HYGIENE_MESSAGE_H

#include <stdbool.h>

#include "sanitize/hygiene_walk.h"

typedef enum role {
    R_NONE, R_OTHER, R_SYSTEM, R_DEVELOPER, R_USER, R_ASSISTANT, R_TOOL
} role;

/* The role allow-lists (rules 43, 47), which the dialects' rows name. */
extern const role_keys tg_hy_openai_roles[];
extern const role_keys tg_hy_groq_roles[];
extern const role_keys tg_hy_mistral_roles[];

/* A message's role. */
role tg_hy_role_of(json_t *msg);
/* Cleans one message in place; false when it is to be dropped. */
bool tg_hy_clean_message(walk *w, json_t *msg);
/* Gemini 3 and later check thought signatures (R19). */
bool tg_hy_model_checks_signatures(const char *model);
/* The rule a dropped null-valued key cites: 43 for Mistral, 48 else. */
const char *tg_hy_null_rule(const walk *w);
/* Does the route drop key's null value (rules 43, 48, 95)? */
bool tg_hy_drop_null(const walk *w, const char *key, const json_t *val);

#endif
