/* json_prefix.c -- is this text, so far, the start of one strict JSON
 * object? An incremental check, fed the argument fragments of a streamed
 * tool call as they come, so that stream_live.c can relay them at once
 * and stop relaying at the first byte a repair would have to change
 * (single quotes, a trailing comma, Python literals, text after the object).
 *
 * A state machine over bytes, constant memory (nesting is counted up to
 * TG_JPREFIX_DEPTH and fails beyond), no allocation, each byte looked at
 * once. Literals (true, false, null, numbers) are checked as whole tokens
 * when they end; a token cut by the end of the text is not judged.
 */
#include "repair/json_prefix.h"

#include <string.h>

enum { J_START, J_OBJ_FIRST, J_KEY, J_COLON, J_VALUE, J_ARR_FIRST, J_AFTER, J_DONE };

static bool ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_lit_char(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           c == '.' || c == '+' || c == '-';
}

static bool number_ok(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0') {
        i++;
    } else if (i < n && s[i] >= '1' && s[i] <= '9') {
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    } else {
        return false;
    }
    if (i < n && s[i] == '.') {
        size_t d = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return false;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return false;
    }
    return i == n;
}

static bool literal_ok(const tg_jprefix *j)
{
    size_t n = j->nlit;
    return (n == 4 && !memcmp(j->lit, "true", 4)) || (n == 5 && !memcmp(j->lit, "false", 5)) ||
           (n == 4 && !memcmp(j->lit, "null", 4)) || number_ok(j->lit, n);
}

/* A value is complete: what may follow depends on the container. */
static void value_done(tg_jprefix *j)
{
    j->st = j->depth ? J_AFTER : J_DONE;
}

static bool step(tg_jprefix *j, unsigned char c)
{
    if (j->in_str) {
        if (j->uhex) {
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
                return false;
            j->uhex--;
        } else if (j->esc) {
            if (!strchr("\"\\/bfnrtu", c) || !c)
                return false;
            j->esc = false;
            if (c == 'u')
                j->uhex = 4;
        } else if (c == '\\') {
            j->esc = true;
        } else if (c == '"') {
            j->in_str = false;
            if (j->key)
                j->st = J_COLON;
            else
                value_done(j);
        } else if (c < 0x20) {
            return false;
        }
        return true;
    }
    if (j->nlit) {  /* inside true / false / null / a number */
        if (is_lit_char(c)) {
            if (j->nlit >= sizeof j->lit)
                return false;
            j->lit[j->nlit++] = (char)c;
            return true;
        }
        if (!literal_ok(j))
            return false;
        j->nlit = 0;
        value_done(j);
    }
    if (ws(c))
        return true;
    switch (j->st) {
    case J_START:
        if (c != '{')
            return false;
        j->depth = 1;
        j->stack[0] = '{';
        j->st = J_OBJ_FIRST;
        return true;
    case J_OBJ_FIRST:
    case J_KEY:
        if (c == '}' && j->st == J_OBJ_FIRST)
            break;  /* {} */
        if (c != '"')
            return false;
        j->in_str = j->key = true;
        return true;
    case J_COLON:
        if (c != ':')
            return false;
        j->st = J_VALUE;
        return true;
    case J_ARR_FIRST:
        if (c == ']')
            break;
        /* fall through */
    case J_VALUE:
        if (c == '"') {
            j->in_str = true;
            j->key = false;
            return true;
        }
        if (c == '{' || c == '[') {
            if (j->depth >= TG_JPREFIX_DEPTH)
                return false;
            j->stack[j->depth++] = (char)c;
            j->st = c == '{' ? J_OBJ_FIRST : J_ARR_FIRST;
            return true;
        }
        if (c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n') {
            j->lit[0] = (char)c;
            j->nlit = 1;
            return true;
        }
        return false;
    case J_AFTER:
        if (c == ',') {
            j->st = j->stack[j->depth - 1] == '{' ? J_KEY : J_VALUE;
            return true;
        }
        if (c == '}' || c == ']')
            break;
        return false;
    default:  /* J_DONE: nothing after the object */
        return false;
    }
    /* a closer */
    if (j->stack[j->depth - 1] != (c == '}' ? '{' : '['))
        return false;
    j->depth--;
    value_done(j);
    return true;
}

size_t tg_jprefix_feed(tg_jprefix *j, const char *s, size_t n)
{
    if (j->bad)
        return 0;
    size_t i = 0;
    for (; i < n; i++) {
        if (!step(j, (unsigned char)s[i])) {
            j->bad = true;
            break;
        }
    }
    j->pos += i;
    /* an open escape: `\`, or `\u` and its hex digits so far */
    size_t open = !j->in_str ? 0 : j->uhex ? 2u + 4u - j->uhex : j->esc ? 1 : 0;
    j->safe = j->pos - open;
    return i;
}

bool tg_jprefix_complete(const tg_jprefix *j)
{
    return j->st == J_DONE;  /* bytes refused after it leave it complete */
}
