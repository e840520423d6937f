/* schema_keys.c -- property keys mapped into a target's key alphabet
 * (rule 87, TG_SR_KEY_NAMES): Anthropic refuses a `properties` key outside
 * ^[a-zA-Z0-9_.-]{1,64}$ at any depth (`uids[]`, `filter[id]`), and the
 * whole request with it. The walk asks here for one properties map's new
 * keys; the node's inverse keeps them ("n": {upstream: agent}) so the
 * arguments the model writes get the agent's keys back (schema_inverse.c).
 *
 * A key becomes its bytes with every run outside the alphabet written as
 * one `_` (a UTF-8 character is one run), a trailing `_` that a run made
 * dropped, cut to 64 bytes; a key taken already (by a valid key of the same
 * map or an earlier rename) gets `_2`, `_3`, ... Pure: same map, same keys.
 */
#include <stdio.h>
#include <string.h>

#include "sanitize/schema_walk_int.h"

#define KEY_MAX 64

static bool key_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
}

bool tg_sw_key_ok(const char *k)
{
    size_t n = strlen(k);
    if (n == 0 || n > KEY_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!key_char((unsigned char)k[i]))
            return false;
    return true;
}

/* The key in the alphabet, before collisions: out holds KEY_MAX + 1. */
static void clean_key(const char *k, char *out)
{
    size_t n = 0;
    bool run = false, last_made = false;
    for (const unsigned char *p = (const unsigned char *)k; *p && n < KEY_MAX; p++) {
        if (key_char(*p)) {
            out[n++] = (char)*p;
            run = last_made = false;
        } else if (!run) {
            out[n++] = '_';
            run = last_made = true;
        }
    }
    if (last_made && n > 1)
        n--;
    if (n == 0)
        out[n++] = '_';
    out[n] = '\0';
}

/* Is name taken in the output map being built (valid keys of props kept as
 * they are, renames so far)? */
static bool taken(json_t *props, json_t *names, const char *name)
{
    const char *k;
    json_t *v;
    if (tg_sw_key_ok(name) && json_object_get(props, name))
        return true;
    json_object_foreach(names, k, v) if (!strcmp(json_string_value(v), name)) return true;
    return false;
}

json_t *tg_sw_key_names(walk *w, json_t *props, const char *ptr)
{
    if (!(w->flags & TG_SR_KEY_NAMES) || !json_is_object(props))
        return NULL;
    json_t *names = NULL;
    const char *k;
    json_t *v;
    json_object_foreach(props, k, v) {
        if (tg_sw_key_ok(k))
            continue;
        if (!names)
            names = json_object();
        char base[KEY_MAX + 1], cand[KEY_MAX + 1];
        clean_key(k, base);
        memcpy(cand, base, sizeof cand);
        for (int i = 2; taken(props, names, cand) && i < 100000; i++) {
            char suf[16];
            int sl = snprintf(suf, sizeof suf, "_%d", i);
            size_t keep = strlen(base);
            if (keep + (size_t)sl > KEY_MAX)
                keep = KEY_MAX - (size_t)sl;
            snprintf(cand, sizeof cand, "%.*s%s", (int)keep, base, suf);
        }
        json_object_set_new(names, k, json_string(cand));
        char cptr[PTR_MAX];
        tg_sw_ptr_join(cptr, ptr, "properties", k);
        json_t *to = json_string(cand);
        tg_sw_note(w, cptr, "property-key-renamed (rule 87)", NULL, to);
        json_decref(to);
    }
    return names;
}

bool tg_sw_keys_to_rename(walk *w, json_t *n, int depth)
{
    if (depth > 16 || !json_is_object(n))
        return false;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(n, "properties"), k, v) {
        if (!tg_sw_key_ok(k) || tg_sw_keys_to_rename(w, v, depth + 1))
            return true;
    }
    const char *ref = json_string_value(json_object_get(n, "$ref"));
    if (ref && tg_sw_keys_to_rename(w, tg_sw_ref_peek(w, ref), depth + 1))
        return true;
    const char *subs[] = {"items", "additionalProperties"};
    for (int i = 0; i < 2; i++)
        if (tg_sw_keys_to_rename(w, json_object_get(n, subs[i]), depth + 1))
            return true;
    const char *lists[] = {"anyOf", "oneOf", "allOf", "prefixItems"};
    for (int l = 0; l < 4; l++) {
        size_t i;
        json_t *b;
        json_array_foreach(json_object_get(n, lists[l]), i, b) {
            if (tg_sw_keys_to_rename(w, b, depth + 1))
                return true;
        }
    }
    return false;
}
