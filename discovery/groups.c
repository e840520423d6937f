/* groups.c -- a catalog's groups from its tool names (see groups.h).
 *
 * Two passes: the first takes each name's explicit namespace or its
 * candidate first word and counts the candidates; the second keeps a
 * candidate only where enough tools share it. Deterministic in the names
 * alone, so the groups, and search_tools' description that lists them, are
 * the same bytes on every turn.
 */
#include "discovery/groups.h"
#include "core/alloc.h"
#include "core/tg.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define GROUP_MAX 64  /* longer prefixes are cut */

/* Sorted (bsearch). Leading words that say what a tool does. */
static const char *const verbs[] = {
    "abort", "activate", "add", "analyze", "append", "apply", "approve", "archive", "assign",
    "attach", "batch", "build", "call", "cancel", "change", "check", "clear", "click", "clone",
    "close", "commit", "compare", "complete", "configure", "confirm", "connect", "convert",
    "copy", "count", "create", "deactivate", "delete", "deploy", "describe", "detach", "disable",
    "download", "drop", "duplicate", "edit", "enable", "evaluate", "execute", "export", "extract",
    "fetch", "fill", "find", "finish", "fork", "format", "generate", "get", "give", "import",
    "insert", "inspect", "install", "invoke", "is", "kill", "launch", "link", "list", "load",
    "lookup", "make", "manage", "mark", "merge", "modify", "move", "navigate", "new", "open",
    "patch", "pause", "perform", "post", "press", "publish", "pull", "push", "put", "query",
    "read", "rebuild", "refresh", "register", "reject", "release", "reload", "remove", "rename",
    "reorder", "replace", "reply", "reset", "resize", "resolve", "restart", "restore", "resume",
    "retrieve", "revert", "run", "save", "scale", "search", "select", "send", "set", "share",
    "show", "start", "stop", "submit", "switch", "sync", "take", "terminate", "test", "toggle",
    "trigger", "type", "undo", "uninstall", "unlink", "update", "upload", "upsert", "use",
    "validate", "verify", "view", "wait", "watch", "write",
};

int tg_disc_is_verb(const char *w)
{
    return TG_WORD_LISTED(verbs, w);
}

/* The first n bytes of src, lower-cased, cut at GROUP_MAX bytes on a
 * character's boundary: a cut inside a UTF-8 sequence would make the group
 * a string jansson refuses. */
static void lower_into(char *dst, const char *src, size_t n)
{
    n = tg_utf8_cut(src, n, GROUP_MAX);
    for (size_t i = 0; i < n; i++)
        dst[i] = (char)tolower((unsigned char)src[i]);
    dst[n] = '\0';
}

/* An explicit namespace: "mcp__S__x" -> S, "S__x" -> S, "S.x", "S/x",
 * "S:x" -> S. Returns 1 and fills g. */
static int explicit_group(const char *name, char *g)
{
    const char *p = name;
    if (strncmp(p, "mcp__", 5) == 0 && strstr(p + 5, "__"))
        p += 5;
    const char *dd = strstr(p, "__");
    size_t n = strcspn(p, "./:"), sep = 1;
    if (dd && (size_t)(dd - p) <= n) {
        n = (size_t)(dd - p);
        sep = 2;
    }
    if (n == 0 || p[n] == '\0' || p[n + sep] == '\0')
        return 0;
    lower_into(g, p, n);
    return 1;
}

/* The first word: up to _, - or a lower-to-upper hump ("mastraDocs"). */
static int first_word(const char *name, char *g)
{
    size_t n = 0;
    while (name[n] && name[n] != '_' && name[n] != '-' &&
           !(n > 0 && islower((unsigned char)name[n - 1]) && isupper((unsigned char)name[n])))
        n++;
    if (n < 2 || name[n] == '\0')
        return 0;
    lower_into(g, name, n);
    return !tg_disc_is_verb(g);
}

json_t *tg_disc_groups(json_t *names)
{
    size_t n = json_array_size(names);
    json_t *out = json_array(), *count = json_object();
    unsigned char *expl = tg_calloc(n ? n : 1, 1);
    char g[GROUP_MAX + 1];
    for (size_t i = 0; i < n; i++) {
        const char *name = json_string_value(json_array_get(names, i));
        json_t *v = json_null();
        if (name && explicit_group(name, g)) {
            expl[i] = 1;
            v = json_string(g);
        } else if (name && first_word(name, g)) {
            v = json_string(g);
            json_int_t c = json_integer_value(json_object_get(count, g));
            json_object_set_new(count, g, json_integer(c + 1));
        }
        if (!v)  /* a name that is not UTF-8 (jansson's strings always are) */
            goto fail;
        json_array_append_new(out, v);
    }
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(out, i);
        if (expl[i] || !json_is_string(v))
            continue;
        if (json_integer_value(json_object_get(count, json_string_value(v))) <
            TG_GROUP_MIN_SHARE)
            json_array_set_new(out, i, json_null());
    }
    json_decref(count);
    free(expl);
    return out;
fail:
    json_decref(out);
    json_decref(count);
    free(expl);
    return NULL;
}
