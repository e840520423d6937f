/* http.c -- the proxy's small HTTP helpers (http.h), pure functions kept
 * out of the network files so the unit tests reach them without sockets:
 *  - header lists and what is forwarded upstream: hop-by-hop and
 *    toolgate's own headers never, credentials by the key rules, and of the
 *    rest only an allow-list of what providers read (plus forward_headers);
 *  - the upstream URL's path and query, and the dot-segment check that
 *    keeps a client from walking out of the route's upstream path;
 *  - request ids from a per-worker pool of getrandom bytes, and a
 *    constant-time compare for client keys;
 *  - the cheap checks of a chat request (tg_validate_chat_request): only
 *    what every provider refuses alike, as an error naming the field (the
 *    front door answers it in the API's own shape); what differs by
 *    provider is the dialect stages' job. */
#include "proxy/http.h"
#include "core/alloc.h"
#include "core/jsonio.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

void tg_header_list_add_line(tg_header_list *l, const char *line, size_t n)
{
    const char *colon = memchr(line, ':', n);
    if (!colon || colon == line)
        return;
    const char *v = colon + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        l->v = tg_realloc(l->v, cap * sizeof *l->v);
        l->cap = cap;
    }
    /* name and value in one allocation (the value after the name's NUL):
     * a response's ten headers cost ten mallocs, not twenty */
    size_t nl = (size_t)(colon - line), vl = (size_t)(end - v);
    char *p = tg_malloc(nl + vl + 2);
    memcpy(p, line, nl);
    p[nl] = '\0';
    memcpy(p + nl + 1, v, vl);
    p[nl + 1 + vl] = '\0';
    l->v[l->n].name = p;
    l->v[l->n].value = p + nl + 1;
    l->n++;
}

const char *tg_header_get(const tg_header_list *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcasecmp(l->v[i].name, name))
            return l->v[i].value;
    return NULL;
}

void tg_header_list_del(tg_header_list *l, const char *name)
{
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (strcasecmp(l->v[i].name, name))
            l->v[k++] = l->v[i];
        else
            free(l->v[i].name);
    }
    l->n = k;
}

void tg_header_list_free(tg_header_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].name);  /* the value lives in the same block */
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* Header names are matched against lists of some forty: the first
 * letter, compared first, spares nearly every strcasecmp (issue 20; an
 * agent sends ten to twenty headers a request). */
static bool same_first(const char *name, const char *entry)
{
    return tolower((unsigned char)name[0]) == tolower((unsigned char)entry[0]);
}

bool tg_header_is_hop(const char *name)
{
    static const char *const hop[] = {
        "connection", "keep-alive", "proxy-connection", "proxy-authenticate",
        "proxy-authorization", "te", "trailer", "trailers", "transfer-encoding", "upgrade",
        NULL};
    for (int i = 0; hop[i]; i++)
        if (same_first(name, hop[i]) && !strcasecmp(name, hop[i]))
            return true;
    return false;
}

/* Headers the proxy sets itself or that would break the re-encoded body. */
static bool header_is_ours(const char *name)
{
    static const char *const ours[] = {"host", "content-length", "expect", "accept-encoding",
                                       "x-request-id", "content-type",
                                       "x-upstream-authorization", NULL};
    for (int i = 0; ours[i]; i++)
        if (same_first(name, ours[i]) && !strcasecmp(name, ours[i]))
            return true;
    return false;
}

/* What a real client sends that a provider reads: content negotiation,
 * OpenAI's and Anthropic's account and version headers, OpenRouter's app
 * attribution, trace context, the SDKs' own (x-stainless-*). A name ending
 * in '*' is a prefix. Anything else (cookies, proxy and gateway headers,
 * whatever a browser adds) stays with toolgate unless forward_headers
 * names it. */
static const char *const allowed[] = {
    "accept", "accept-language", "user-agent", "idempotency-key",
    "openai-organization", "openai-project", "openai-beta",
    "anthropic-version", "anthropic-beta", "anthropic-dangerous-direct-browser-access",
    "http-referer", "x-title", "x-goog-user-project",
    "traceparent", "tracestate", "baggage", "x-stainless-*", NULL};

/* The headers that carry a provider key. */
static const char *const credentials[] = {"authorization", "x-api-key", "api-key",
                                          "x-goog-api-key", NULL};

static bool name_in(const char *name, const char *const *list)
{
    for (; list && *list; list++) {
        if (**list != '*' && !same_first(name, *list))  /* "*" alone: any name */
            continue;
        size_t n = strlen(*list);
        if (n && (*list)[n - 1] == '*' ? !strncasecmp(name, *list, n - 1)
                                       : !strcasecmp(name, *list))
            return true;
    }
    return false;
}

bool tg_header_is_credential(const char *name)
{
    return name_in(name, credentials);
}

bool tg_header_forwarded(const char *name, char *const *extra)
{
    return name_in(name, allowed) || name_in(name, (const char *const *)extra);
}

/* A provider key goes up only when it is the client's own for the
 * provider: never beside the route's api_key, never toolgate's client key
 * (in whatever header), and Authorization gives way to
 * x-upstream-authorization. */
static bool credential_forwarded(const tg_forward_ctx *f, const char *key, const char *value)
{
    if (f->drop_auth)
        return false;
    if (!strcasecmp(key, "authorization") && (f->client_key || f->upstream_auth))
        return false;
    return !(f->client_key && value && strstr(value, f->client_key));
}

enum MHD_Result tg_forward_request_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                          const char *value)
{
    tg_forward_ctx *f = cls;
    (void)kind;
    if (tg_header_is_hop(key) || header_is_ours(key))
        return MHD_YES;
    if (tg_header_is_credential(key) ? !credential_forwarded(f, key, value)
                                     : !tg_header_forwarded(key, f->extra))
        return MHD_YES;
    tg_header_line_append(f->list, key, value ? value : "");
    return MHD_YES;
}

void tg_header_line_append(struct curl_slist **list, const char *name, const char *value)
{
    /* "name: value" on the stack when it fits (curl copies it): a line
     * cost a malloc and a free besides curl's own two */
    char small[512];
    tg_buf b = {0};
    size_t nl = strlen(name), vl = strlen(value);
    char *line = small;
    if (nl + vl + 3 > sizeof small) {
        tg_buf_reserve(&b, nl + vl + 2);
        line = b.data;
    }
    memcpy(line, name, nl);
    memcpy(line + nl, ": ", 2);
    for (size_t i = 0; i < vl; i++)
        line[nl + 2 + i] = value[i] == '\r' || value[i] == '\n' ? ' ' : value[i];
    line[nl + 2 + vl] = '\0';
    struct curl_slist *l = curl_slist_append(*list, line);
    tg_buf_free(&b);
    if (!l)  /* curl is out of memory (core/tg.h) */
        tg_oom(sizeof *l);
    *list = l;
}

/* A segment's name as servers that take path parameters read it: up to a
 * ';' (Tomcat, Jetty and Spring read "..;x" as ".."), or up to a "%3b"
 * left after MHD's decoding (a client that encoded it twice). */
static size_t segment_name_len(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] == ';' || (p[i] == '%' && i + 2 < n && !strncasecmp(p + i + 1, "3b", 2)))
            return i;
    return n;
}

/* MHD hands over the path decoded once, so "%2e%2e" and "..%2f" arrive as
 * "..": a segment "." or ".." (between '/' or '\\', which some servers
 * take for '/'; its path parameters after a ';' aside) is one, and so is a
 * "%2e", "%2f" or "%5c" still there after that decoding (the client
 * encoded it twice, for a server that decodes again). */
bool tg_path_has_dot_segment(const char *path)
{
    const char *p = path;
    while (*p) {
        size_t n = strcspn(p, "/\\");
        size_t name = segment_name_len(p, n);
        if ((name == 1 && p[0] == '.') || (name == 2 && p[0] == '.' && p[1] == '.'))
            return true;
        p += n;
        if (*p)
            p++;
    }
    for (p = strchr(path, '%'); p; p = strchr(p + 1, '%'))
        if (p[1] && p[2] &&
            (!strncasecmp(p + 1, "2e", 2) || !strncasecmp(p + 1, "2f", 2) ||
             !strncasecmp(p + 1, "5c", 2)))
            return true;
    return false;
}

/* RFC 3986 pchar and '/': what a decoded path may hold as it is. */
static bool path_char(unsigned char c)
{
    return isalnum(c) || strchr("-._~!$&'()*+,;=:@/", c);
}

void tg_append_path(tg_buf *url, const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const char *s = path; *s; s++) {
        const char *run = s;  /* what goes as it is, in one append (not a byte each) */
        while (*s && path_char((unsigned char)*s))
            s++;
        tg_buf_append(url, run, (size_t)(s - run));
        if (!*s)
            break;
        unsigned char c = (unsigned char)*s;
        char e[3] = {'%', hex[c >> 4], hex[c & 15]};
        tg_buf_append(url, e, 3);
    }
}

typedef struct query_ctx {
    tg_buf *url;
    int n;
} query_ctx;

static void append_escaped(tg_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            tg_buf_append(b, s, 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            tg_buf_append(b, e, 3);
        }
    }
}

static enum MHD_Result add_query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    query_ctx *q = cls;
    (void)kind;
    tg_buf_append(q->url, q->n++ ? "&" : "?", 1);
    append_escaped(q->url, key);
    if (value) {
        tg_buf_append(q->url, "=", 1);
        append_escaped(q->url, value);
    }
    return MHD_YES;
}

void tg_append_query(struct MHD_Connection *conn, tg_buf *url)
{
    query_ctx q = {url, 0};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, add_query_arg, &q);
}

/* Compares every byte of the longer input, so the time taken does not
 * tell how much of a key was right. */
bool tg_consttime_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t n = la > lb ? la : lb;
    unsigned char diff = (unsigned char)(la != lb);
    for (size_t i = 0; i < n; i++) {
        unsigned char x = i < la ? (unsigned char)a[i] : 0;
        unsigned char y = i < lb ? (unsigned char)b[i] : 0;
        diff |= x ^ y;
    }
    return diff == 0;
}

bool tg_header_value_safe(const char *v)
{
    for (; *v; v++)
        if ((unsigned char)*v < 0x21 || (unsigned char)*v > 0x7e)
            return false;
    return true;
}

/* The kernel's CSPRNG, never a userspace generator: ids name stored items
 * and requests, and one id must not tell the next. getrandom blocks only
 * until the pool is first seeded at boot; it cannot otherwise fail short
 * of a broken kernel, where handing out guessable ids is worse than
 * stopping. */
static void fill_random(void *p, size_t n)
{
    unsigned char *b = p;
    while (n) {
        ssize_t k = getrandom(b, n, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            fprintf(stderr, "toolgate: getrandom: %s\n", strerror(errno));
            abort();
        }
        b += k;
        n -= (size_t)k;
    }
}

void tg_random_bytes(tg_random *r, void *out, size_t n)
{
    unsigned char *o = out;
    while (n) {
        if (r->off == sizeof r->pool) {
            fill_random(r->pool, sizeof r->pool);
            r->off = 0;
        }
        size_t k = sizeof r->pool - r->off;
        k = k < n ? k : n;
        memcpy(o, r->pool + r->off, k);
        /* bytes handed out are not kept: a later memory read shows no id */
        memset(r->pool + r->off, 0, k);
        r->off += k;
        o += k;
        n -= k;
    }
}

void tg_random_init(tg_random *r)
{
    r->off = sizeof r->pool;
}

/* "tg-" and 26 characters of base32, 130 bits from the CSPRNG (one
 * character per random byte, five of its bits: no modulo bias). */
void tg_request_id(char *out, size_t n, tg_random *r)
{
    static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567";
    unsigned char raw[TG_ID_CHARS];
    tg_random_bytes(r, raw, sizeof raw);
    if (n > 3 + sizeof raw) {  /* room for it all: no bound checked a byte */
        memcpy(out, "tg-", 3);
        for (size_t i = 0; i < sizeof raw; i++)
            out[3 + i] = b32[raw[i] & 31];
        out[3 + sizeof raw] = '\0';
        return;
    }
    size_t k = 0;
    for (; "tg-"[k] && k + 1 < n; k++)
        out[k] = "tg-"[k];
    for (size_t i = 0; i < sizeof raw && k + 1 < n; i++)
        out[k++] = b32[raw[i] & 31];
    out[k < n ? k : n - 1] = '\0';
}

static int wrong_type(tg_error *err, const char *field, const char *want)
{
    tg_error_set(err, 400, "invalid_request_error", "invalid_type", field,
                 "'%s' must be %s", field, want);
    return -1;
}

/* One message's fields that every provider types alike: content a string,
 * null or an array of typed parts; tool_calls an array of calls whose
 * function has a string name and string (or object: it is serialized
 * later) arguments; tool_call_id and name strings. */
enum { M_CONTENT, M_TOOL_CALL_ID, M_NAME, M_TOOL_CALLS, M_N };
static const char *const message_keys[] = {"content", "tool_call_id", "name", "tool_calls", NULL};
_Static_assert(sizeof message_keys / sizeof *message_keys == M_N + 1, "one name per slot");

static int validate_message(json_t *m, size_t i, tg_error *err)
{
    char f[96];
    json_t *k[M_N];
    tg_json_pick(m, message_keys, k);
    json_t *c = k[M_CONTENT];
    if (c && !json_is_string(c) && !json_is_array(c) && !json_is_null(c)) {
        snprintf(f, sizeof f, "messages[%zu].content", i);
        return wrong_type(err, f, "a string, null or an array of content parts");
    }
    size_t j;
    json_t *part;
    json_array_foreach(c, j, part) {
        if (!json_is_object(part) || !tg_json_is(tg_json_get(part, "type"), JSON_STRING)) {
            snprintf(f, sizeof f, "messages[%zu].content[%zu]", i, j);
            return wrong_type(err, f, "an object with a string 'type'");
        }
    }
    for (int s = M_TOOL_CALL_ID; s <= M_NAME; s++) {
        json_t *v = k[s];
        if (v && !json_is_string(v) && !json_is_null(v)) {
            snprintf(f, sizeof f, "messages[%zu].%s", i, message_keys[s]);
            return wrong_type(err, f, "a string");
        }
    }
    json_t *calls = k[M_TOOL_CALLS];
    if (calls && !json_is_array(calls) && !json_is_null(calls)) {
        snprintf(f, sizeof f, "messages[%zu].tool_calls", i);
        return wrong_type(err, f, "an array of tool call objects");
    }
    json_t *call;
    json_array_foreach(calls, j, call) {
        json_t *fn = tg_json_get(call, "function");
        const char *ct = json_string_value(tg_json_get(call, "type"));
        if (json_is_object(call) && ct && !strcmp(ct, "custom")) {
            /* a custom tool's call: {"custom": {"name", "input"}} (sanitize/custom.c) */
            json_t *cu = tg_json_get(call, "custom");
            snprintf(f, sizeof f, "messages[%zu].tool_calls[%zu].custom", i, j);
            if (!json_is_object(cu))
                return wrong_type(err, f, "an object with the tool's name and input");
            snprintf(f, sizeof f, "messages[%zu].tool_calls[%zu].custom.name", i, j);
            if (!tg_json_is(tg_json_get(cu, "name"), JSON_STRING))
                return wrong_type(err, f, "a string");
            snprintf(f, sizeof f, "messages[%zu].tool_calls[%zu].custom.input", i, j);
            if (!tg_json_is(tg_json_get(cu, "input"), JSON_STRING))
                return wrong_type(err, f, "a string");
            continue;
        }
        if (!json_is_object(call) || !json_is_object(fn)) {
            snprintf(f, sizeof f, "messages[%zu].tool_calls[%zu]%s", i, j,
                     json_is_object(call) ? ".function" : "");
            return wrong_type(err, f, "an object");
        }
        if (!tg_json_is(tg_json_get(fn, "name"), JSON_STRING)) {
            snprintf(f, sizeof f, "messages[%zu].tool_calls[%zu].function.name", i, j);
            return wrong_type(err, f, "a string");
        }
        json_t *args = tg_json_get(fn, "arguments");
        if (args && !json_is_string(args) && !json_is_object(args) && !json_is_null(args)) {
            snprintf(f, sizeof f, "messages[%zu].tool_calls[%zu].function.arguments", i, j);
            return wrong_type(err, f, "a string of JSON");
        }
    }
    return 0;
}

/* tools[i]: an object; a function tool (type "function" or none) has a
 * function object with a string name and, if any, object parameters. Tools
 * of other types (custom, built-ins) are the target's to judge. */
static int validate_tool(json_t *t, size_t i, tg_error *err)
{
    char f[64];
    snprintf(f, sizeof f, "tools[%zu]", i);
    if (!json_is_object(t))
        return wrong_type(err, f, "an object");
    json_t *type = tg_json_get(t, "type");
    if (type && !json_is_string(type)) {
        snprintf(f, sizeof f, "tools[%zu].type", i);
        return wrong_type(err, f, "a string");
    }
    if (type && strcmp(json_string_value(type), "function"))
        return 0;
    json_t *fn = tg_json_get(t, "function");
    if (!json_is_object(fn)) {
        snprintf(f, sizeof f, "tools[%zu].function", i);
        return wrong_type(err, f, "an object with the function's name and parameters");
    }
    if (!tg_json_is(tg_json_get(fn, "name"), JSON_STRING)) {
        snprintf(f, sizeof f, "tools[%zu].function.name", i);
        return wrong_type(err, f, "a string");
    }
    json_t *params = tg_json_get(fn, "parameters");
    if (params && !json_is_object(params) && !json_is_null(params)) {
        snprintf(f, sizeof f, "tools[%zu].function.parameters", i);
        return wrong_type(err, f, "a JSON Schema object");
    }
    return 0;
}

/* Rule 15: a tool_choice that names a function names a declared one. */
static bool chosen_tool_missing(json_t *tools, json_t *choice)
{
    const char *name = json_string_value(json_object_get(json_object_get(choice, "function"), "name"));
    return name && json_is_array(tools) && !tg_tool_peek(tools, name);
}

/* The body's keys checked here, picked in one pass (tg_json_pick). */
enum {
    B_MODEL, B_MESSAGES, B_TOOLS, B_STREAM, B_TOOL_CHOICE, B_STOP, B_NUMBERS,
    B_N = B_NUMBERS + 8
};
static const char *const body_keys[] = {
    "model", "messages", "tools", "stream", "tool_choice", "stop",
    /* B_NUMBERS.. */
    "temperature", "top_p", "max_tokens", "max_completion_tokens", "n", "presence_penalty",
    "frequency_penalty", "seed", NULL};
_Static_assert(sizeof body_keys / sizeof *body_keys == B_N + 1, "one name per slot");

int tg_validate_chat_request(json_t *body, int max_tools, bool tools_checked, tg_error *err)
{
    if (!json_is_object(body)) {
        tg_error_set(err, 400, "invalid_request_error", "invalid_type", NULL,
                     "request body must be a JSON object");
        return -1;
    }
    json_t *k[B_N];
    tg_json_pick(body, body_keys, k);
    json_t *v = k[B_MODEL];
    if (v && !json_is_string(v))
        return wrong_type(err, "model", "a string");
    v = k[B_MESSAGES];
    if (!v) {
        tg_error_set(err, 400, "invalid_request_error", "missing_required_parameter", "messages",
                     "missing required parameter: 'messages'");
        return -1;
    }
    if (!json_is_array(v))
        return wrong_type(err, "messages", "an array of message objects");
    size_t i;
    json_t *m;
    json_array_foreach(v, i, m) {
        if (!json_is_object(m) || !tg_json_is(tg_json_get(m, "role"), JSON_STRING)) {
            char f[64];
            snprintf(f, sizeof f, "messages[%zu]", i);
            return wrong_type(err, f, "an object with a string 'role'");
        }
        if (validate_message(m, i, err))
            return -1;
    }
    v = k[B_TOOLS];
    if (v && !json_is_array(v) && !json_is_null(v))
        return wrong_type(err, "tools", "an array of tool objects");
    if (json_is_array(v)) {
        if (max_tools && json_array_size(v) > (size_t)max_tools) {
            tg_error_set(err, 400, "invalid_request_error", "too_many_tools", "tools",
                         "'tools' has %zu entries; this toolgate accepts at most %d (max_tools)",
                         json_array_size(v), max_tools);
            return -1;
        }
        for (i = 0; !tools_checked && i < json_array_size(v); i++)  /* passed before: not walked */
            if (validate_tool(json_array_get(v, i), i, err))
                return -1;
    }
    v = k[B_STREAM];
    if (v && !json_is_boolean(v) && !json_is_null(v))
        return wrong_type(err, "stream", "a boolean");
    for (int n = B_NUMBERS; n < B_N; n++) {
        v = k[n];
        if (v && !json_is_number(v) && !json_is_null(v))
            return wrong_type(err, body_keys[n], "a number");
    }
    v = k[B_TOOL_CHOICE];
    if (v && !json_is_string(v) && !json_is_object(v) && !json_is_null(v))
        return wrong_type(err, "tool_choice", "a string or an object");
    if (chosen_tool_missing(k[B_TOOLS], v)) {
        tg_error_set(err, 400, "invalid_request_error", "invalid_value", "tool_choice",
                     "'tool_choice' names the tool '%.128s', which is not in 'tools'",
                     json_string_value(tg_json_get(tg_json_get(v, "function"), "name")));
        return -1;
    }
    v = k[B_STOP];
    if (v && !json_is_string(v) && !json_is_array(v) && !json_is_null(v))
        return wrong_type(err, "stop", "a string or an array of strings");
    return 0;
}
