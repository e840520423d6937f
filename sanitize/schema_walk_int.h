/* schema_walk_int.h -- what the files of the schema walker share among
 * themselves (schema_walk.c, schema_normalize.c, schema_anyof.c,
 * schema_emit.c): the walk's limits, its state, and the steps one file calls
 * in another. Not for other stages: they see schema.h. */
#ifndef TG_SCHEMA_WALK_INT_H
#define TG_SCHEMA_WALK_INT_H

#include <stdbool.h>

#include "sanitize/schema.h"

#define MAX_DEPTH 40         /* schema nodes on one path */
#define STRICT_MAX_OBJ 10    /* object and array levels allowed by OpenAI strict (rule 20) */
#define STRICT_MAX_PROPS 4000 /* OpenAI strict allows 5000 in all (rule 20); keep a margin */
#define REF_MAX_OPEN 2       /* a $ref may be open twice on a path: recursion unrolled once */
#define NODE_BUDGET 20000    /* nodes emitted per tool before refs are cut */
#define MERGE_MAX_DEPTH 6    /* nested allOf levels merged */
#define HINT_VALUE_MAX 120   /* bytes of one hint value */
#define PTR_MAX 512
#define ANYOF_MAX 5          /* Cerebras strict: branches per anyOf (rule 50) */

/* One tool's walk. */
typedef struct walk {
    const tg_schema_rules *rules;
    uint64_t flags;       /* effective flags for this tool */
    json_t *root;         /* the agent's parameters, for $ref (borrowed) */
    json_t *explain;      /* NULL or change records */
    const char *tool;
    const char *refs[MAX_DEPTH * 4];  /* the $refs open on the current path */
    int nrefs;
    int nodes;            /* nodes walked (NODE_BUDGET) */
    int props;            /* object properties emitted (rule 20 budget) */
    int enums;            /* enum values emitted (rule 21 budget) */
    int changes;
    tg_schema_budget *budget;  /* the request's (rule 62), never NULL */
    json_t *defs_inv;     /* rule 87: {"#/$defs/x": inverse} of definitions left as refs (owned) */
} walk;

/* A node after step 1 (tg_sw_normalize). */
typedef struct node_in {
    json_t *n;      /* normalised shallow copy (owned) */
    int pushed;     /* refs pushed on w->refs while walking it */
    const char *cut;/* non-NULL: recursive ref cut here */
    bool budget;    /* the cut is the budget's (rule 62), not recursion */
} node_in;

/* What the walk decided about one node's type, shared by the steps after
 * it. */
typedef struct node_type {
    json_t *types;    /* type names, "null" included */
    json_t *nonnull;  /* the same without "null" */
    bool has_null, has_any, enum_node, union_split;
} node_type;

/* The node's one non-null type, or NULL. */
static inline const char *tg_sw_single_type(const node_type *nt)
{
    return json_array_size(nt->nonnull) == 1 ? json_string_value(json_array_get(nt->nonnull, 0)) : NULL;
}

/* schema_walk.c ----------------------------------------------------------- */

/* One change at ptr, under its rule's name: counted, and recorded for
 * --explain. */
void tg_sw_note(walk *w, const char *ptr, const char *rule, json_t *before, json_t *after);
/* out = base/a/b as a JSON pointer (b escaped; NULL for none), at most
 * PTR_MAX bytes. */
void tg_sw_ptr_join(char *out, const char *base, const char *a, const char *b);
/* Is s in list (NULL-terminated)? */
bool tg_sw_in_list(const char *const *list, const char *s);
/* Append "key: value" to a node's hint list (said in its description
 * when the node is done). */
void tg_sw_hint_add(json_t *hints, const char *key, json_t *v);
/* Append text as it is to a node's hint list. */
void tg_sw_hint_text(json_t *hints, const char *text);
/* How many times ref is open on the path walked. */
int tg_sw_count_open_refs(const walk *w, const char *ref);
/* ref resolved in the tool's parameters (borrowed), or NULL. */
json_t *tg_sw_ref_peek(const walk *w, const char *ref);
/* The last segment of a $ref: the name of its definition. */
const char *tg_sw_ref_short_name(const char *ref);
/* Does JSON array arr hold a value equal to v? */
bool tg_sw_array_has(json_t *arr, json_t *v);
/* One schema node: normalise, decide, emit. in is borrowed; returns the
 * new node, and *inv gets its inverse tree (new reference) or NULL. depth
 * counts the nodes on the path (MAX_DEPTH), objdepth its object and array
 * levels (rule 20); root: in is the tool's parameters. */
json_t *tg_sw_rewrite_node(walk *w, json_t *in, const char *ptr, int depth, int objdepth, bool root,
                           json_t **inv);

/* schema_normalize.c ------------------------------------------------------ */

/* Key k (value v) of another schema applies to dst too (allOf semantics:
 * both hold): dst keeps what holds for both, and what one keyword cannot
 * hold goes into a hint key. src_wins gives v the last word on annotations. */
void tg_sw_merge_keyword(json_t *dst, const char *k, json_t *v, bool src_wins);
/* One allOf branch b merged into dst, a $ref on it resolved one level. */
void tg_sw_merge_branch(walk *w, json_t *dst, json_t *b, int depth);
/* Step 1 of a node: a shallow copy of in made a schema object the walk
 * can decide on. The caller owns .n and pops .pushed refs off w->refs when
 * done with the node; .cut names a $ref left out (recursion, or the budget
 * when .budget). */
node_in tg_sw_normalize(walk *w, json_t *in, const char *ptr, bool root);
/* const -> enum where the target wants it, empty enums removed, null out
 * of enums (xAI), strict's enum budget (rule 21). Edits n. */
void tg_sw_normalize_enum(walk *w, json_t *n, const char *ptr, json_t *hints);
/* The node's type names (new array): declared, inferred where the target
 * needs one, object at the root (rule 3). */
json_t *tg_sw_node_types(walk *w, json_t *n, const char *ptr, bool root, json_t *hints);

/* schema_anyof.c ---------------------------------------------------------- */

/* Is b an anyOf branch that admits only null? */
bool tg_sw_is_null_branch(json_t *b);
/* The root's anyOf/oneOf merged into the one object it must be (rule 3),
 * the alternatives said in hints. Edits n. */
void tg_sw_flatten_root(walk *w, json_t *n, json_t *hints);
/* The branches of an anyOf, oneOf or allOf, each walked (new array);
 * *inv_list gets their inverses when any branch has one. */
json_t *tg_sw_rewrite_branches(walk *w, json_t *arr, const char *ptr, const char *key,
                               int depth, int objdepth, json_t **inv_list);
/* Rule 82: an anyOf branch that is itself only an anyOf (a oneOf in a
 * oneOf; a oneOf in an anyOf once oneof_anyof makes it one) is spliced into
 * its parent's list, at every level. Edits n (a shallow copy). */
void tg_sw_flatten_unions(walk *w, json_t *n, const char *ptr);
/* Gemini: anyOf [X, {type:null}] -> X + nullable. Returns the node that
 * replaces n (to be walked afresh), or NULL after editing n in place. */
json_t *tg_sw_collapse_null_branch(walk *w, json_t *n, const char *ptr);
/* Type unions made anyOf branches where the target takes no type arrays,
 * type keywords pushed into the branches (rule 27). Edits n, fills nt. */
void tg_sw_resolve_unions(walk *w, json_t *n, json_t *in, const char *ptr, node_type *nt,
                          json_t *hints);
/* Vertex (rule 60): what sits beside an anyOf in out moves into its
 * branches. */
void tg_sw_anyof_alone(walk *w, json_t *out, const char *ptr);

/* schema_emit.c ----------------------------------------------------------- */

/* properties (each walked) and required into out; strict's optional
 * properties made required and nullable (the inverse's "o" and "f"). */
void tg_sw_emit_properties(walk *w, json_t *n, json_t *out, json_t *inv, json_t *hints,
                           const char *ptr, int depth, int objdepth);
/* type, or the strings a stringified enum becomes (rule 28), into out. */
void tg_sw_emit_type(walk *w, json_t *n, json_t *out, json_t *inv, const node_type *nt, const char *ptr);
/* Every key of n but type, properties and required into out, in n's
 * order: kept, rewritten or hinted; sub-schemas walked. */
void tg_sw_emit_keys(walk *w, json_t *n, json_t *out, json_t *inv, json_t *hints, const node_type *nt,
                     const char *ptr, int depth, int objdepth);
/* After the keys: rule 5's clean-up, strict closing (rule 16), xAI's
 * properties quirk, items for an array without (rule 4). */
void tg_sw_finish_node(walk *w, json_t *n, json_t *out, json_t *inv, bool is_object, bool is_array,
                       bool root, const char *ptr, int depth, int objdepth);
/* An enum sent as strings: number bounds dropped, a non-string default
 * said as a string. */
/* schema_keys.c (rule 87) ------------------------------------------------ */

/* Is k a key of the target's alphabet (^[a-zA-Z0-9_.-]{1,64}$)? */
bool tg_sw_key_ok(const char *k);
/* The new keys of a properties map, {agent: upstream} (new reference), or
 * NULL when the rule is off or every key is fine. */
json_t *tg_sw_key_names(walk *w, json_t *props, const char *ptr);
/* Does schema n (following $refs, bounded) hold a key to rename? */
bool tg_sw_keys_to_rename(walk *w, json_t *n, int depth);

void tg_sw_retype_enum_keys(walk *w, json_t *out, const char *ptr);

#endif
