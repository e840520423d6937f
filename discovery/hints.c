/* hints.c -- successor hints (see hints.h; issue 19 part 5).
 *
 * Which tools come next after a hidden tool A returned its result. Each
 * tool B of the catalog scores on what the request itself shows:
 *
 *   - the catalog says so: A's description names B, or B's names A
 *     ("use after list_issues");
 *   - the conversation did it before: earlier in the same history, a call
 *     of A was followed by a call of B (the same catalog, the same user);
 *   - the user asked for it: the words of B's name are in the user's
 *     latest message before the result ("... and comment on it");
 *   - A and B work on the same thing: the nouns of their names
 *     (list_issues, get_issue, add_issue_comment share "issue"; a name's
 *     leading verb is no noun, a later "list" in get_lists is);
 *   - the result names what B works on or takes: a noun of B's name, or a
 *     key parameter of B (issue_number), is a word of A's result,
 *     arguments or nouns ("issue", "number"); every key parameter of B
 *     that the result or arguments can fill counts.
 *
 * Only tools of A's group are candidates (or, when A has none, tools
 * without a group) unless the catalog or the history links them; a tool
 * without a group needs a shared noun, the user's words, a link or a pair,
 * since "no group" spans many servers. Never A itself, never a tool always
 * exposed (core) or already hinted or called in the same assistant turn;
 * the meta-tools are not in the catalog. At most TG_HINTS_MAX, best score first, ties by
 * catalog position: deterministic in the request alone.
 *
 * Pairs seen in other conversations on the same catalog would be another
 * source, but a note that changes with a worker's traffic changes bytes
 * already sent (the prompt cache's prefix) and differs between workers; the
 * same history must make the same request, so that source is left out.
 */
#include "discovery/hints.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/cache.h"
#include "core/hash.h"
#include "core/jsonio.h"
#include "core/tg.h"
#include "discovery/groups.h"

#define RESULT_SCAN 8192  /* bytes of a result read for the things it names */
#define ARGS_SCAN 2048
#define ASKED_SCAN 4096   /* bytes of the user's message read for what it asks */
#define WORD_MAX 48
#define PARAMS_MAX 8       /* key parameters of a tool considered */
#define NOTE_JSON_MAX 6144 /* bytes of schemas in one note */
#define DESC_MAX 300       /* bytes of a hinted tool's description */
#define MEMO_KIND "hints"
#define LINK_WEIGHT 16     /* a link or a pair, against 3 a shared noun, 2 a named entity */

/* The words of a tool name, and of each key parameter, lazily per tool. */
typedef struct tool_words {
    json_t *nouns;   /* set: the name's words but its group, its leading verb
                        (list_ in list_issues, not in get_lists) and generic ones */
    json_t *verb;    /* the leading verb, or NULL */
    json_t *params;  /* array of sets: each key parameter's words */
} tool_words;

typedef struct hinter {
    json_t *d;
    size_t n;
    tool_words *w;
    json_t *pairs;  /* set of "a b": b called in the turn after a call of a */
    json_t *asked;  /* set: the words of the user's latest message */
    uint64_t asked_hash;
    struct tg_cache *cache;
} hinter;

/* Sorted (bsearch). Words of parameter names that say nothing of what a
 * tool works on. */
static const char *const generic[] = {
    "after", "and", "before", "by", "content", "count", "data", "description", "for", "format",
    "from", "id", "in", "include", "item", "key", "limit", "max", "mcp", "min", "mode", "name",
    "of", "offset", "option", "order", "page", "per", "query", "result", "size", "sort", "text",
    "the", "to", "type", "value", "with",
};

static int is_generic(const char *w)
{
    return TG_WORD_LISTED(generic, w);
}

/* ---- words ------------------------------------------------------------ */

/* One word, lower-cased, a plural 's' dropped, into buf; 0 for what names
 * nothing (numbers, single letters, overlong runs). */
static int norm_word(const char *w, size_t n, char *buf)
{
    size_t digits = 0;
    if (n < 2 || n > WORD_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        buf[i] = (char)tolower((unsigned char)w[i]);
        digits += isdigit((unsigned char)w[i]) != 0;
    }
    if (digits == n)
        return 0;
    if (n > 3 && buf[n - 1] == 's' && buf[n - 2] != 's')
        n--;
    buf[n] = '\0';
    return 1;
}

/* The identifier words of s[0..n), in order, into the array list or (when
 * list is NULL) the set: split at anything but letters and digits and at
 * camelCase humps (issueNumber -> issue, number). */
static void split_words(json_t *set, json_t *list, const char *s, size_t n)
{
    size_t start = 0;
    int in = 0;
    char buf[WORD_MAX + 1];
    for (size_t i = 0; i <= n; i++) {
        int alnum = i < n && isalnum((unsigned char)s[i]);
        int hump = alnum && in && islower((unsigned char)s[i - 1]) && isupper((unsigned char)s[i]);
        if (in && (!alnum || hump)) {
            if (norm_word(s + start, i - start, buf)) {
                if (list)
                    json_array_append_new(list, json_string(buf));
                else
                    json_object_set_new(set, buf, json_true());
            }
            in = 0;
        }
        if (alnum && !in) {
            start = i;
            in = 1;
        }
    }
}

static void words_into(json_t *set, const char *s, size_t n)
{
    split_words(set, NULL, s, n);
}

static json_t *fn_peek(json_t *tool)
{
    json_t *fn = json_object_get(tool, "function");
    return json_is_object(fn) ? fn : tool;
}

static json_t *tool_peek(const hinter *h, long i)
{
    return fn_peek(json_array_get(json_object_get(h->d, "catalog"), (size_t)i));
}

static const char *agent_name(const hinter *h, long i)
{
    const char *s = json_string_value(json_array_get(json_object_get(h->d, "agent"), (size_t)i));
    return s ? s : "";
}

static const char *group_of(const hinter *h, long i)
{
    return json_string_value(json_array_get(json_object_get(h->d, "groups"), (size_t)i));
}

static long position(const hinter *h, const char *name)
{
    json_t *v = name ? json_object_get(json_object_get(h->d, "lookup"), name) : NULL;
    return v ? (long)json_integer_value(v) : -1;
}

static int exposed(const hinter *h, long i)
{
    const char *u = json_string_value(json_array_get(json_object_get(h->d, "names"), (size_t)i));
    return u && json_object_get(json_object_get(h->d, "exposed"), u) != NULL;
}

/* The key parameters: the required ones, or all when none is. */
static json_t *key_params(json_t *params)
{
    json_t *req = json_object_get(params, "required"), *out = json_array();
    if (json_array_size(req)) {
        for (size_t i = 0; i < json_array_size(req) && i < PARAMS_MAX; i++)
            if (json_is_string(json_array_get(req, i)))
                json_array_append(out, json_array_get(req, i));
        return out;
    }
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(params, "properties"), k, v) {
        if (json_array_size(out) >= PARAMS_MAX)
            break;
        json_array_append_new(out, json_string(k));
    }
    return out;
}

static tool_words *words_of(hinter *h, long i)
{
    tool_words *w = &h->w[i];
    if (w->nouns)
        return w;
    w->nouns = json_object();
    w->params = json_array();
    json_t *all = json_array();
    const char *name = agent_name(h, i), *g = group_of(h, i);
    split_words(NULL, all, name, strlen(name));
    int lead = 1;
    for (size_t k = 0; k < json_array_size(all); k++) {
        const char *word = json_string_value(json_array_get(all, k));
        if (g && strcmp(word, g) == 0)
            continue;
        if (lead && tg_disc_is_verb(word))
            w->verb = json_string(word);
        else if (!is_generic(word))
            json_object_set_new(w->nouns, word, json_true());
        lead = 0;
    }
    json_decref(all);
    json_t *keys = key_params(json_object_get(tool_peek(h, i), "parameters"));
    for (size_t p = 0; p < json_array_size(keys); p++) {
        json_t *set = json_object();
        const char *pn = json_string_value(json_array_get(keys, p));
        words_into(set, pn, strlen(pn));
        json_array_append_new(w->params, set);
    }
    json_decref(keys);
    return w;
}

/* ---- scoring ------------------------------------------------------------ */

/* Whether text names `name` as a word of its own (not inside a longer
 * identifier). Short names are too common to count. */
static int names_tool(const char *text, const char *name)
{
    size_t n = strlen(name);
    if (!text || n < 5)
        return 0;
    for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
        int before = p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '-');
        int after = !(isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '-');
        if (before && after)
            return 1;
    }
    return 0;
}

static const char *desc_of(const hinter *h, long i)
{
    return json_string_value(json_object_get(tool_peek(h, i), "description"));
}

static int same_scope(const hinter *h, long a, long b)
{
    const char *ga = group_of(h, a), *gb = group_of(h, b);
    return ga ? gb && strcmp(ga, gb) == 0 : gb == NULL;
}

static int pair_seen(const hinter *h, long a, long b)
{
    char key[48];
    snprintf(key, sizeof key, "%ld %ld", a, b);
    return json_object_get(h->pairs, key) != NULL;
}

/* B's score after A, with seen = the words of A's name, arguments and
 * result, and asked = those of the user's last message before the result;
 * 0 when B is no candidate. */
static int score(hinter *h, long a, long b, json_t *seen, json_t *asked)
{
    int ref = names_tool(desc_of(h, a), agent_name(h, b)) ||
              names_tool(desc_of(h, b), agent_name(h, a));
    int pair = pair_seen(h, a, b), scope = same_scope(h, a, b);
    if (!ref && !pair && !scope)
        return 0;
    tool_words *wa = words_of(h, a), *wb = words_of(h, b);
    int noun = 0, named = 0, said = 0, entity = 0, covered = 0;
    const char *k;
    json_t *v;
    json_object_foreach(wb->nouns, k, v) {
        if (json_object_get(wa->nouns, k))
            noun++;               /* both work on it */
        else if (json_object_get(seen, k))
            named++;              /* the result names it */
        said += json_object_get(asked, k) != NULL;
    }
    int verb_said = wb->verb && json_object_get(asked, json_string_value(wb->verb)) != NULL;
    size_t np = json_array_size(wb->params);
    for (size_t p = 0; p < np; p++) {
        int names = 0, fills = 0;
        json_object_foreach(json_array_get(wb->params, p), k, v) {
            if (!json_object_get(seen, k))
                continue;
            fills = 1;
            names |= !is_generic(k);
        }
        entity += names;
        covered += fills;
    }
    int grouped = group_of(h, a) != NULL;
    if (!ref && !pair && !noun && !said && !(grouped && (entity || named)))
        return 0;
    /* what the catalog or the conversation says outweighs any likeness;
     * what the user asked for, the likeness of names */
    return LINK_WEIGHT * (ref + pair) + 6 * said + verb_said + 3 * noun + 2 * (entity + named) +
           covered + (np && (size_t)covered == np ? 2 : 0);
}

/* The best TG_HINTS_MAX tools after A (positions into pick, best first),
 * leaving out those in skip. Returns how many. */
static size_t choose(hinter *h, long a, json_t *seen, json_t *asked, json_t *skip, long *pick)
{
    int best[TG_HINTS_MAX];
    size_t k = 0;
    for (long b = 0; b < (long)h->n; b++) {
        char key[24];
        snprintf(key, sizeof key, "%ld", b);
        if (b == a || exposed(h, b) || json_object_get(skip, key))
            continue;
        int s = score(h, a, b, seen, asked);
        if (s <= 0 || (k == TG_HINTS_MAX && s <= best[k - 1]))
            continue;
        size_t at = k < TG_HINTS_MAX ? k++ : k - 1;
        while (at > 0 && best[at - 1] < s) {  /* earlier positions win ties */
            best[at] = best[at - 1];
            pick[at] = pick[at - 1];
            at--;
        }
        best[at] = s;
        pick[at] = b;
    }
    return k;
}

/* ---- the note ----------------------------------------------------------- */

static json_t *cut_desc(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n > DESC_MAX) {
        n = DESC_MAX;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    json_t *r = json_stringn(s ? s : "", n);
    return r ? r : json_string("");
}

/* "\n\n<toolgate-next-tools>\n...\n</toolgate-next-tools>", malloc'd, or
 * NULL when not one schema fits. */
static char *note_text(hinter *h, const long *pick, size_t k)
{
    json_t *list = json_array();
    char *js = NULL;
    for (size_t i = 0; i < k; i++) {
        json_t *fn = tool_peek(h, pick[i]), *p = json_object_get(fn, "parameters");
        json_t *e = json_pack("{sOsoso}", "name", json_object_get(fn, "name"), "description",
                              cut_desc(json_string_value(json_object_get(fn, "description"))),
                              "parameters", p ? json_incref(p) : json_pack("{ss}", "type", "object"));
        json_array_append_new(list, e);
        char *t = tg_json_dumps(list);
        if (!t || strlen(t) > NOTE_JSON_MAX) {  /* does not fit, or cannot be said */
            free(t);
            json_array_remove(list, json_array_size(list) - 1);
            continue;
        }
        free(js);
        js = t;
    }
    json_decref(list);
    if (!js)
        return NULL;
    const char *call = json_string_value(json_object_get(json_object_get(h->d, "meta"), "call"));
    size_t len = strlen(js) + 512;
    char *out = tg_malloc(len);
    snprintf(out, len,
             "\n\n" TG_HINTS_OPEN "\n(toolgate's note, not part of the result: tools "
             "often called next, with their parameters; call one with %s directly, "
             "no search needed.)\n%s\n" TG_HINTS_CLOSE,
             call ? call : "call_tool", js);
    free(js);
    return out;
}

/* The words of a message's text (the first `budget` bytes; parts joined). */
static void text_words(json_t *content, json_t *seen, size_t budget)
{
    if (json_is_string(content)) {
        size_t n = json_string_length(content);
        words_into(seen, json_string_value(content), n < budget ? n : budget);
        return;
    }
    for (size_t i = 0; i < json_array_size(content) && budget; i++) {
        json_t *t = json_object_get(json_array_get(content, i), "text");
        size_t n = json_string_length(t) < budget ? json_string_length(t) : budget;
        words_into(seen, json_string_value(t) ? json_string_value(t) : "", n);
        budget -= n;
    }
}

static int has_note(json_t *content)
{
    if (json_is_string(content))
        return strstr(json_string_value(content), TG_HINTS_OPEN) != NULL;
    for (size_t i = 0; i < json_array_size(content); i++) {
        const char *t = json_string_value(json_object_get(json_array_get(content, i), "text"));
        if (t && strstr(t, TG_HINTS_OPEN))
            return 1;
    }
    return 0;
}

/* The note after the result: appended to a text content, a text part of
 * its own in a content of parts (hygiene already made the content what the
 * dialect takes). */
static void append_note(json_t *msg, const char *note)
{
    json_t *c = json_object_get(msg, "content");
    if (json_is_array(c)) {
        json_array_append_new(c, json_pack("{ssss}", "type", "text", "text", note + 2));
    } else if (json_is_string(c)) {
        size_t a = json_string_length(c), b = strlen(note);
        char *s = tg_malloc(a + b + 1);
        memcpy(s, json_string_value(c), a);
        memcpy(s + a, note, b + 1);
        json_object_set_new(msg, "content", json_stringn(s, a + b));
        free(s);
    } else {
        json_object_set_new(msg, "content", json_string(note + 2));
    }
}

/* ---- walking the history ------------------------------------------------ */

static const char *call_name(json_t *call)
{
    return json_string_value(json_object_get(json_object_get(call, "function"), "name"));
}

/* An assistant turn: its calls' positions (a new array), and the pairs
 * (each call of the turn before, each call of this one). */
static json_t *assistant_turn(hinter *h, json_t *msg, json_t *prev)
{
    json_t *calls = json_object_get(msg, "tool_calls"), *cur = json_array();
    for (size_t i = 0; i < json_array_size(calls); i++) {
        long b = position(h, call_name(json_array_get(calls, i)));
        if (b < 0)
            continue;
        json_array_append_new(cur, json_integer(b));
        for (size_t k = 0; k < json_array_size(prev); k++) {
            char key[48];
            snprintf(key, sizeof key, "%lld %ld",
                     (long long)json_integer_value(json_array_get(prev, k)), b);
            json_object_set_new(h->pairs, key, json_true());
        }
    }
    return cur;
}

static json_t *call_peek(json_t *calls, json_t *id)
{
    for (size_t i = 0; json_is_string(id) && i < json_array_size(calls); i++)
        if (json_equal(json_object_get(json_array_get(calls, i), "id"), id))
            return json_array_get(calls, i);
    return NULL;
}

static void skip_add(json_t *skip, long b)
{
    char key[24];
    snprintf(key, sizeof key, "%ld", b);
    json_object_set_new(skip, key, json_true());
}

/* A digest of a message text's first `budget` bytes (parts joined). */
static uint64_t text_hash(json_t *content, size_t budget, uint64_t seed)
{
    if (json_is_string(content)) {
        size_t n = json_string_length(content);
        return tg_hash64(json_string_value(content), n < budget ? n : budget, seed);
    }
    for (size_t i = 0; i < json_array_size(content) && budget; i++) {
        json_t *t = json_object_get(json_array_get(content, i), "text");
        size_t n = json_string_length(t) < budget ? json_string_length(t) : budget;
        seed = tg_hash64(json_string_value(t) ? json_string_value(t) : "", n, seed);
        budget -= n;
    }
    return seed;
}

/* Everything a note's choice depends on: the catalog (the derivation's
 * content key), the tool, what choose() reads of its arguments, result and
 * the user's words, the pairs after it and what the turn leaves out. */
static uint64_t memo_key(const hinter *h, long a, const char *args, json_t *content,
                         json_t *skip)
{
    json_int_t dk = json_integer_value(json_object_get(h->d, "key"));
    uint64_t k = tg_hash64(&dk, sizeof dk, 0x68696e7473000001ull);
    k = tg_hash64(&a, sizeof a, k);
    k = tg_hash64(&h->asked_hash, sizeof h->asked_hash, k);
    size_t an = args ? strlen(args) : 0;
    k = tg_hash64(args ? args : "", an < ARGS_SCAN ? an : ARGS_SCAN, k);
    k = text_hash(content, RESULT_SCAN, k);
    char pre[24];
    size_t pn = (size_t)snprintf(pre, sizeof pre, "%ld ", a);
    const char *key;
    json_t *v;
    json_object_foreach(h->pairs, key, v)
        if (strncmp(key, pre, pn) == 0)
            k = tg_hash64(key, strlen(key) + 1, k);
    k = tg_hash64("|", 1, k);
    json_object_foreach(skip, key, v)
        k = tg_hash64(key, strlen(key) + 1, k);
    return k;
}

/* The choice for one result, computed (and kept in the cache) or recalled. */
static size_t pick_for(hinter *h, long a, const char *args, json_t *content, json_t *skip,
                       long *pick)
{
    uint64_t key = json_object_get(h->d, "key") ? memo_key(h, a, args, content, skip) : 0;
    json_t *kept = key ? tg_cache_get(h->cache, MEMO_KIND, key) : NULL;
    size_t k = 0;
    if (kept) {
        for (; k < json_array_size(kept) && k < TG_HINTS_MAX; k++)
            pick[k] = (long)json_integer_value(json_array_get(kept, k));
        json_decref(kept);
        return k;
    }
    json_t *seen = json_object();
    if (args)
        words_into(seen, args, strlen(args) < ARGS_SCAN ? strlen(args) : ARGS_SCAN);
    const char *w;
    json_t *v;
    json_object_foreach(words_of(h, a)->nouns, w, v)  /* what A lists or gets */
        json_object_set_new(seen, w, json_true());
    text_words(content, seen, RESULT_SCAN);
    k = choose(h, a, seen, h->asked, skip, pick);
    json_decref(seen);
    if (key) {
        json_t *list = json_array();
        for (size_t i = 0; i < k; i++)
            json_array_append_new(list, json_integer(pick[i]));
        tg_cache_put(h->cache, MEMO_KIND, key, list, 64);
        json_decref(list);
    }
    return k;
}

/* One tool message answering call (of a hidden tool at a): its note.
 * Appends the hinted positions to out. */
static void hint_result(hinter *h, json_t *msg, json_t *call, long a, json_t *skip, json_t *out)
{
    json_t *content = json_object_get(msg, "content");
    if (has_note(content))
        return;
    const char *args = json_string_value(json_object_get(json_object_get(call, "function"),
                                                         "arguments"));
    long pick[TG_HINTS_MAX];
    size_t k = pick_for(h, a, args, content, skip, pick);
    char *note = k ? note_text(h, pick, k) : NULL;
    if (!note)
        return;
    append_note(msg, note);
    free(note);
    for (size_t i = 0; i < k; i++) {
        skip_add(skip, pick[i]);
        json_array_append_new(out, json_integer(pick[i]));
    }
}

json_t *tg_disc_hints_add(json_t *body, json_t *d, struct tg_cache *cache)
{
    json_t *msgs = json_object_get(body, "messages");
    hinter h = { d, json_array_size(json_object_get(d, "catalog")), NULL, json_object(),
                 json_object(), 0, cache };
    h.w = tg_calloc(h.n ? h.n : 1, sizeof *h.w);
    json_t *fresh = json_array(), *prev = json_array(), *skip = json_object();
    json_t *calls = NULL;
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *m = json_array_get(msgs, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        if (role && strcmp(role, "assistant") == 0) {
            json_t *cur = assistant_turn(&h, m, prev);
            json_decref(prev);
            prev = cur;
            calls = json_object_get(m, "tool_calls");
            json_object_clear(skip);  /* a new turn: what it called is known */
            for (size_t k = 0; k < json_array_size(cur); k++)
                skip_add(skip, (long)json_integer_value(json_array_get(cur, k)));
            json_array_clear(fresh);
        } else if (role && strcmp(role, "user") == 0) {
            json_object_clear(h.asked);
            text_words(json_object_get(m, "content"), h.asked, ASKED_SCAN);
            h.asked_hash = text_hash(json_object_get(m, "content"), ASKED_SCAN, 0);
        } else if (role && strcmp(role, "tool") == 0) {
            json_t *call = call_peek(calls, json_object_get(m, "tool_call_id"));
            long a = position(&h, call_name(call));
            if (a >= 0 && !exposed(&h, a))
                hint_result(&h, m, call, a, skip, fresh);
        }
    }
    for (size_t i = 0; i < h.n; i++) {
        json_decref(h.w[i].nouns);
        json_decref(h.w[i].verb);
        json_decref(h.w[i].params);
    }
    free(h.w);
    json_decref(h.pairs);
    json_decref(h.asked);
    json_decref(prev);
    json_decref(skip);
    return fresh;
}

int tg_disc_hints_followed(json_t *d, json_t *hinted, json_t *calls)
{
    hinter h = { d, 0, NULL, NULL, NULL, 0, NULL };
    for (size_t i = 0; i < json_array_size(calls); i++) {
        long b = position(&h, call_name(json_array_get(calls, i)));
        for (size_t k = 0; b >= 0 && k < json_array_size(hinted); k++)
            if (json_integer_value(json_array_get(hinted, k)) == b)
                return 1;
    }
    return 0;
}
