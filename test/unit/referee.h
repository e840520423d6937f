/* referee.h -- the tests' own checker for docs/dialects.md section 9.
 *
 * Independent of the stage on purpose: it shares no code or table with
 * sanitize/, and reads only the request body the proxy would send. Each
 * violation is appended to `why` as "R<rule> <tool> <pointer>: <text>".
 *
 * Dialect ids are those of section 0 as toolgate names them; a route asking
 * for strict on anthropic / cerebras / deepseek is judged by the strict rules
 * on every tool that carries strict:true.
 */
#ifndef REFEREE_H
#define REFEREE_H

#include <jansson.h>
#include <stdbool.h>

/* Returns the number of violations found in body (tools, tool_choice,
 * history names). why may be NULL. */
int referee_check(const char *dialect, json_t *body, json_t *why);

/* Structural JSON-Schema validation (types, enum/const, required,
 * properties, additionalProperties, items, anyOf/oneOf/allOf, local $ref,
 * OpenAPI nullable). Value constraints (minimum, pattern...) are ignored:
 * they travel as hints. Returns true when inst is valid for schema. */
bool referee_valid(json_t *schema, json_t *inst);

/* A pseudo-random instance of schema (deterministic in *seed), or NULL
 * when the generator gives up (deep recursion). */
json_t *referee_instance(json_t *schema, unsigned *seed);

/* A pseudo-random, often broken, JSON schema: deep nesting, every
 * combinator, $ref cycles through $defs, type arrays, odd enums. */
json_t *referee_random_schema(unsigned *seed);

#endif
