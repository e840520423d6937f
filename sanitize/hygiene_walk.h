/* hygiene_walk.h -- what the message-hygiene files share among themselves
 * (hygiene.c, hygiene_message.c, hygiene_history.c): a dialect's row of
 * rules, the walk (its state and the JSON pointer it keeps for the explain
 * log), and the small steps every rule takes (drop a key, rebuild one,
 * note it). The steps are static inline: the walk takes them for every key
 * of every message. Not for other stages. */
#ifndef TG_HYGIENE_WALK_H
#define TG_HYGIENE_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/ctx.h"
#include "sanitize/msg_rules.h"

/* ---- a dialect's row ---------------------------------------------------- */

typedef struct role_keys {
    const char *role;
    const char *const *keys;  /* NULL-terminated */
} role_keys;

typedef struct rename_rule {
    const char *from, *to;
} rename_rule;

/* One dialect's preset (hygiene.c's presets[], MSG_*). */
typedef struct dialect_row {
    uint64_t flags;
    const role_keys *roles;        /* allow-lists for TG_MR_ALLOWLIST */
    const char *msg_rule;          /* rule the message checks cite */
    const char *const *top_allow;  /* NULL: no top-level allow-list */
    const char *const *top_deny;
    const rename_rule *top_rename;
    const char *top_rule;
} dialect_row;

/* ---- the walker -------------------------------------------------------- */

/* A JSON pointer under construction (truncated, never overflowed, when a
 * key is absurdly long: it only feeds the explain log). */
typedef struct jptr {
    char s[512];
    size_t n;
} jptr;

static inline size_t jp_key(jptr *p, const char *key)
{
    size_t old = p->n;
    if (p->n + 1 < sizeof p->s)
        p->s[p->n++] = '/';
    for (; *key && p->n + 2 < sizeof p->s; key++) {
        if (*key == '~' || *key == '/') {  /* RFC 6901 escapes */
            p->s[p->n++] = '~';
            p->s[p->n++] = *key == '~' ? '0' : '1';
        } else {
            p->s[p->n++] = *key;
        }
    }
    p->s[p->n] = '\0';
    return old;
}

/* i in decimal at dst (room for 20 digits), its length returned: the
 * walk names every message it passes, and snprintf cost a thousand
 * instructions a name (three a message). */
static inline size_t put_index(char *dst, size_t i)
{
    char t[24];
    size_t n = 0;
    do {
        t[n++] = (char)('0' + i % 10);
        i /= 10;
    } while (i);
    for (size_t k = 0; k < n; k++)
        dst[k] = t[n - 1 - k];
    return n;
}

static inline size_t jp_idx(jptr *p, size_t i)
{
    size_t old = p->n;
    char t[24];
    t[0] = '/';
    size_t w = 1 + put_index(t + 1, i);
    if (w > sizeof p->s - p->n - 1)
        w = sizeof p->s - p->n - 1;
    memcpy(p->s + p->n, t, w);
    p->n += w;
    p->s[p->n] = '\0';
    return old;
}

/* "messages[i]" into where (40 bytes) */
static inline void message_where(char *where, size_t i)
{
    memcpy(where, "messages[", 9);
    size_t n = 9 + put_index(where + 9, i);
    where[n] = ']';
    where[n + 1] = '\0';
}

static inline void jp_pop(jptr *p, size_t n)
{
    p->n = n;
    p->s[n] = '\0';
}

typedef struct walk {
    tg_ctx *ctx;
    const dialect_row *row;
    uint64_t f;           /* TG_MR_* in force */
    char *const *drop;    /* the route's drop_params, or NULL */
    const char *prefix;   /* marker prefix, NULL when disabled */
    size_t plen;
    json_t *id_fwd;       /* agent id -> upstream id, this request */
    json_t *id_used;      /* upstream id -> agent id, this request */
    const char *where;    /* "messages[3]" or "body" */
    bool fill_signature;  /* TG_MR_FILL_SIGNATURE and a model that checks */
    bool last;            /* the message walked is the history's last */
    int role;             /* the role (hygiene_message.h) of the message
                             tg_hy_clean_message cleaned last, as it left */
    jptr ptr;
} walk;

/* The first bytes compared inline: most keys match no entry, and a call
 * of strcmp for each entry was most of the walk's cost on a short message. */
static inline bool in_list(const char *const *list, const char *key)
{
    for (; list && *list; list++)
        if ((*list)[0] == key[0] && !strcmp(*list, key))
            return true;
    return false;
}

static inline bool is_marker(const walk *w, const char *key)
{
    return w->prefix && !strncmp(key, w->prefix, w->plen);
}

static inline void note(walk *w, const char *pointer, const char *name, const char *ref,
                        json_t *before, json_t *after)
{
    if (!w->ctx->explain)
        return;
    char rule[96];
    snprintf(rule, sizeof rule, "%s (%s)", name, ref);
    tg_explain_add(w->ctx->explain, "hygiene", w->where, pointer, rule, before, after);
}

/* Removes obj[key] (val is its value), recording it. Safe inside
 * json_object_foreach_safe on obj. */
static inline void drop_key(walk *w, json_t *obj, const char *key, json_t *val,
                            const char *name, const char *ref)
{
    size_t mark = jp_key(&w->ptr, key);
    note(w, w->ptr.s, name, ref, val, NULL);
    jp_pop(&w->ptr, mark);
    w->ctx->stats.fields_stripped++;
    json_object_del(obj, key);
}

/* Replaces obj[key] by a new value (stolen), recording before and after. */
static inline void rebuild_key(walk *w, json_t *obj, const char *key, json_t *now,
                               const char *name, const char *ref)
{
    size_t mark = jp_key(&w->ptr, key);
    note(w, w->ptr.s, name, ref, json_object_get(obj, key), now);
    jp_pop(&w->ptr, mark);
    json_object_set_new(obj, key, now);
}

#endif
