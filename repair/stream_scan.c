/* stream_scan.c -- recognise a live call's argument fragment, first chunk
 * and finish by a scan of their bytes, without a JSON parse (issue 20).
 *
 * Most events of a tool-call stream are one shape:
 *   {"id":..,"object":..,"created":N,"model":..,"choices":[{"index":0,
 *    "delta":{"tool_calls":[{"index":0,"function":{"arguments":".."}}]},
 *    "finish_reason":null}]}
 * and on a live call (stream_live.c, "Live calls") such an event goes out
 * as the very bytes that came. Parsing it with jansson only to learn that
 * was most of toolgate's CPU on such a stream. This scan accepts exactly
 * that shape and nothing else: known keys, each at most once, in any order;
 * the envelope's values plain ASCII strings without escapes (created: a
 * plain integer); usage, finish_reason and logprobs null; one choice, one
 * call, one key in delta and in function. Anything it is unsure of (an
 * unknown key, an escape in a key, a byte past ASCII, a number that is not
 * a small plain integer, a \u escape outside the Basic Multilingual Plane
 * or a NUL) makes it answer false, and the event takes the full parse, so
 * the scan only has to be conservative, never complete. The caller checks
 * what the parse would have decided (stream_relay.c tg_rs_live_fragment), and
 * keeps where the arguments string of an accepted event starts and ends:
 * the next fragments of a call are most often the same bytes around other
 * arguments, and then two memcmp and tg_scan_args stand for the scan
 * (stream_relay.c same_shape).
 *
 * tg_scan_event does the same for the two other events of such a stream
 * that usually need no change: the call's first chunk (index, id, type,
 * name, the arguments' start) and the finish ({} delta, a finish_reason).
 * These the full path does not relay but writes anew, so the scan accepts
 * only the bytes it would write: compact (no whitespace), keys in
 * tg_stream's order (the envelope, then choices last; index, delta,
 * finish_reason; index, id, type, function; name, arguments), no usage,
 * and strings escaped as tg_json_dump escapes them (no \/, no \u). Then
 * relaying the bytes and writing the parse back out are the same, and
 * stream_relay.c tg_rs_relay_event decides, as for a fragment, whether the
 * full path would have changed anything. */
#include "repair/stream_scan.h"

#include <string.h>

typedef struct scan {
    const char *p, *e;
    const char *b;  /* the event's first byte */
    bool compact;   /* tg_scan_event: no whitespace, canonical escapes only */
} scan;

static void ws(scan *s)
{
    if (s->compact)
        return;
    while (s->p < s->e && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static bool eat(scan *s, char c)
{
    ws(s);
    if (s->p < s->e && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* Bytes a plain string runs over: printable ASCII but the quote and the
 * backslash. One load a byte instead of four compares (plain_string read
 * every key and envelope value of the events it scans). */
static const unsigned char plain_byte[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* A key or envelope string: printable ASCII, no escape. */
static bool plain_string(scan *s, const char **v, size_t *n)
{
    if (!eat(s, '"'))
        return false;
    const char *b = s->p;
    while (s->p < s->e && plain_byte[(unsigned char)*s->p])
        s->p++;
    if (s->p >= s->e || *s->p != '"')
        return false;
    *v = b;
    *n = (size_t)(s->p - b);
    s->p++;
    return true;
}

/* A plain non-negative integer of at most 18 digits, no leading zero. */
static bool plain_int(scan *s, long long *out)
{
    ws(s);
    const char *b = s->p;
    long long v = 0;
    while (s->p < s->e && *s->p >= '0' && *s->p <= '9' && s->p - b < 19)
        v = v * 10 + (*s->p++ - '0');
    size_t n = (size_t)(s->p - b);
    if (!n || n > 18 || (n > 1 && *b == '0'))
        return false;
    if (s->p < s->e && (*s->p == '.' || *s->p == 'e' || *s->p == 'E' || (*s->p >= '0' && *s->p <= '9')))
        return false;
    *out = v;
    return true;
}

static bool null_value(scan *s)
{
    ws(s);
    if (s->e - s->p >= 4 && !memcmp(s->p, "null", 4)) {
        s->p += 4;
        return true;
    }
    return false;
}

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    return v;
}

/* The arguments string after its opening quote, decoded into out, up to
 * and with its closing quote: ASCII and the usual escapes; a \u escape of
 * the BMP outside the surrogates, not NUL. */
static bool args_body(scan *s, tg_buf *out)
{
    for (;;) {
        const char *b = s->p;
        while (s->p < s->e && *s->p != '"' && *s->p != '\\') {
            unsigned char c = (unsigned char)*s->p;
            if (c < 0x20 || c >= 0x80)
                return false;
            s->p++;
        }
        if (s->p > b)
            tg_buf_append(out, b, (size_t)(s->p - b));
        if (s->p >= s->e)
            return false;
        if (*s->p++ == '"')
            return true;
        if (s->p >= s->e)
            return false;
        char c = *s->p++, d;
        if (s->compact && (c == '/' || c == 'u'))
            return false;  /* tg_json_dump writes neither */
        switch (c) {
        case '"': case '\\': case '/': d = c; break;
        case 'b': d = '\b'; break;
        case 'f': d = '\f'; break;
        case 'n': d = '\n'; break;
        case 'r': d = '\r'; break;
        case 't': d = '\t'; break;
        case 'u': {
            int cp = s->e - s->p >= 4 ? hex4(s->p) : -1;
            if (cp <= 0 || (cp >= 0xD800 && cp <= 0xDFFF))
                return false;
            s->p += 4;
            tg_buf_put_utf8(out, (unsigned long)cp);
            continue;
        }
        default: return false;
        }
        tg_buf_append(out, &d, 1);
    }
}

/* The arguments string; where its bytes start and end is kept for the
 * caller's shape check (same_shape, stream_relay.c). */
static bool args_string(scan *s, tg_frag *f)
{
    if (!eat(s, '"'))
        return false;
    f->args_at = (size_t)(s->p - s->b);
    if (!args_body(s, f->args))
        return false;
    f->args_end = (size_t)(s->p - s->b) - 1;
    return true;
}

bool tg_scan_args(const char *d, size_t len, tg_buf *out, size_t *end)
{
    scan s = {d, d + len, d, false};
    if (!args_body(&s, out))
        return false;
    *end = (size_t)(s.p - d) - 1;
    return true;
}

#define KEY_IS(k, n, lit) ((n) == sizeof(lit) - 1 && !memcmp((k), (lit), (n)))

/* A key and its colon. */
static bool key(scan *s, const char **k, size_t *n)
{
    return plain_string(s, k, n) && eat(s, ':');
}

/* An index: a plain integer, not absurd. */
static bool small_index(scan *s, long *out)
{
    long long v;
    if (!plain_int(s, &v) || v > 1000000)
        return false;
    *out = (long)v;
    return true;
}

static bool function_obj(scan *s, tg_frag *f)
{
    const char *k;
    size_t n;
    return eat(s, '{') && key(s, &k, &n) && KEY_IS(k, n, "arguments") && args_string(s, f) &&
           eat(s, '}');
}

static bool call_obj(scan *s, tg_frag *f)
{
    bool idx = false, fn = false;
    if (!eat(s, '{'))
        return false;
    do {
        const char *k;
        size_t n;
        if (!key(s, &k, &n))
            return false;
        if (KEY_IS(k, n, "index") && !idx) {
            if (!small_index(s, &f->index))
                return false;
            idx = true;
        } else if (KEY_IS(k, n, "function") && !fn) {
            if (!function_obj(s, f))
                return false;
            fn = true;
        } else {
            return false;
        }
    } while (eat(s, ','));
    return idx && fn && eat(s, '}');
}

static bool delta_obj(scan *s, tg_frag *f)
{
    const char *k;
    size_t n;
    return eat(s, '{') && key(s, &k, &n) && KEY_IS(k, n, "tool_calls") && eat(s, '[') &&
           call_obj(s, f) && eat(s, ']') && eat(s, '}');
}

static bool choice_obj(scan *s, tg_frag *f)
{
    unsigned seen = 0;
    if (!eat(s, '{'))
        return false;
    do {
        const char *k;
        size_t n;
        if (!key(s, &k, &n))
            return false;
        unsigned bit = KEY_IS(k, n, "index")           ? 1u
                       : KEY_IS(k, n, "delta")         ? 2u
                       : KEY_IS(k, n, "finish_reason") ? 4u
                       : KEY_IS(k, n, "logprobs")      ? 8u
                                                       : 0u;
        if (!bit || (seen & bit))
            return false;
        seen |= bit;
        if (bit == 1u) {
            if (!small_index(s, &f->choice))
                return false;
        } else if (bit == 2u) {
            if (!delta_obj(s, f))
                return false;
        } else if (!null_value(s)) {
            return false;
        }
    } while (eat(s, ','));
    return (seen & 2u) && eat(s, '}');
}

/* One envelope key and its value, for both scans: known keys, each once;
 * strings plain, created a plain integer. */
static bool env_pair(scan *s, const char *k, size_t n, tg_frag *f)
{
    static const struct {
        const char *key;
        size_t len;
    } env_keys[] = {{"id", 2}, {"object", 6}, {"model", 5}, {"system_fingerprint", 18},
                    {"service_tier", 12}, {"created", 7}};
    const size_t created = 5, nkeys = sizeof env_keys / sizeof *env_keys;
    size_t which = 0;
    while (which < nkeys && (n != env_keys[which].len || memcmp(k, env_keys[which].key, n)))
        which++;
    if (which == nkeys || f->nenv == TG_FRAG_ENV)
        return false;
    for (int i = 0; i < f->nenv; i++)
        if (f->env[i].key == env_keys[which].key)
            return false;  /* a key twice */
    tg_frag_env *v = &f->env[f->nenv++];
    v->key = env_keys[which].key;
    if (which == created) {
        v->str = NULL;
        return plain_int(s, &v->num);
    }
    return plain_string(s, &v->str, &v->len);
}

/* The envelope read before (tg_frag_pre) when the event starts with its
 * bytes: f's envelope is then its, with the strings in this event, and
 * the scan goes on at the "choices" key. */
static bool known_envelope(scan *s, tg_frag *f)
{
    const tg_frag_pre *pre = f->pre;
    if (!pre || !pre->len || (size_t)(s->e - s->p) < pre->len || memcmp(s->p, pre->bytes, pre->len))
        return false;
    tg_frag_env_move(f->env, pre->env, pre->nenv, pre->bytes, s->p);
    f->nenv = pre->nenv;
    s->p += pre->len;
    return true;
}

bool tg_scan_fragment(const char *d, size_t len, tg_frag *f)
{
    scan s = {d, d + len, d, false};
    bool choices = false, usage = false;
    f->nenv = 0;
    f->choice = -1;
    f->index = -1;
    if (!known_envelope(&s, f) && !eat(&s, '{'))
        return false;
    do {
        const char *k;
        size_t n;
        if (!key(&s, &k, &n))
            return false;
        if (KEY_IS(k, n, "choices")) {
            if (choices || !eat(&s, '[') || !choice_obj(&s, f) || !eat(&s, ']'))
                return false;
            choices = true;
            continue;
        }
        if (KEY_IS(k, n, "usage")) {
            if (usage || !null_value(&s))
                return false;
            usage = true;
            continue;
        }
        if (!env_pair(&s, k, n, f))
            return false;
    } while (eat(&s, ','));
    if (!choices || !eat(&s, '}'))
        return false;
    ws(&s);
    return s.p == s.e;
}

/* --- tg_scan_event: a call's first chunk and a finish ----------------------- */

/* The literal bytes lit at the cursor. */
static bool lit(scan *s, const char *l, size_t n)
{
    if ((size_t)(s->e - s->p) < n || memcmp(s->p, l, n))
        return false;
    s->p += n;
    return true;
}
#define LIT(s, l) lit((s), (l), sizeof(l) - 1)

/* {"index":N,"id":"..","type":"function","function":{"name":"..",
 * "arguments":".."}}: the order and keys tg_stream's open_live writes. */
static bool start_call(scan *s, tg_frag *f)
{
    const char *k;
    size_t n;
    return LIT(s, "{\"index\":") && small_index(s, &f->index) && LIT(s, ",") &&
           key(s, &k, &n) && KEY_IS(k, n, "id") && plain_string(s, &f->id, &f->id_len) &&
           f->id_len && LIT(s, ",\"type\":\"function\",\"function\":{") && key(s, &k, &n) &&
           KEY_IS(k, n, "name") && plain_string(s, &f->name, &f->name_len) && f->name_len &&
           LIT(s, ",") && key(s, &k, &n) && KEY_IS(k, n, "arguments") && args_string(s, f) &&
           LIT(s, "}}");
}

bool tg_scan_event(const char *d, size_t len, tg_frag *f)
{
    scan s = {d, d + len, d, true};
    f->nenv = 0;
    f->choice = f->index = -1;
    f->id = f->name = f->finish = NULL;
    f->id_len = f->name_len = f->finish_len = 0;
    f->call = false;
    if (!known_envelope(&s, f) && !LIT(&s, "{"))
        return false;
    for (;;) {  /* the envelope, then choices last */
        const char *k;
        size_t n;
        f->env_end = (size_t)(s.p - d);
        if (!key(&s, &k, &n))
            return false;
        if (KEY_IS(k, n, "choices"))
            break;
        if (!env_pair(&s, k, n, f) || !LIT(&s, ","))
            return false;
    }
    if (!LIT(&s, "[{\"index\":") || !small_index(&s, &f->choice) || !LIT(&s, ",\"delta\":{"))
        return false;
    if (LIT(&s, "\"tool_calls\":[")) {
        if (!start_call(&s, f) || !LIT(&s, "]}"))
            return false;
        f->call = true;
    } else if (!LIT(&s, "}")) {
        return false;
    }
    if (!LIT(&s, ",\"finish_reason\":"))
        return false;
    if (!null_value(&s) && !plain_string(&s, &f->finish, &f->finish_len))
        return false;
    return LIT(&s, "}]}") && s.p == s.e;
}
