/* conf.c -- INI conf loading, validation and routing (see conf.h).
 *
 * inih does the lexing. We feed it through our own line reader so that every
 * key knows its line, which lets us report every problem as FILE:LINE:
 * message instead of stopping at the first. Keys are collected first and
 * resolved per section at the end, because `schema.*` overrides only mean
 * something once the route's dialect is known, whatever the key order.
 */
#include "conf/conf.h"
#include "core/alloc.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <errno.h>
#include <fnmatch.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/rules.h"

typedef struct kv {
    char *section;
    char *key;
    char *value;  /* after ${VAR} expansion */
    char *unset;  /* the first ${VAR} that expanded to "" (unset or empty, no default), or NULL */
    int line;
} kv;

typedef struct section_line {
    char *name;
    int line;
} section_line;

typedef struct parser {
    const char *name;  /* file name for messages */
    section_line *secs;
    int nsecs;
    const char *text;
    size_t pos;
    int line;
    kv *kvs;
    int n, cap;
    tg_buf *errors;
    int nerr;
    int metrics_auth;  /* -1 until the conf says */
} parser;

static void perr(parser *p, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void perr(parser *p, int line, const char *fmt, ...)
{
    va_list ap;
    tg_buf_printf(p->errors, "%s:%d: ", p->name, line);
    va_start(ap, fmt);
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tg_buf_puts(p->errors, msg);
    tg_buf_puts(p->errors, "\n");
    p->nerr++;
}

/* inih keeps at most 49 bytes of a section name (its MAX_SECTION is 50) and
 * cuts the rest silently: "[route " leaves a route name 43 characters. A
 * longer header reaches inih as a short stand-in, "[\x01N]" (N indexes
 * p->secs, which holds the whole name), and on_kv puts the whole name back,
 * so a route may have a name of any length. */
#define INI_SECTION_KEEP 49
#define LONG_SECTION '\x01'

/* Remember where each [section] starts, for messages about the section.
 * Returns the length of the name (0 when the line is no header). */
static size_t note_section(parser *p, const char *line)
{
    while (*line == ' ' || *line == '\t')
        line++;
    if (*line != '[')
        return 0;
    const char *end = strchr(line, ']');
    if (!end)
        return 0;
    const char *b = line + 1;
    while (b < end && (*b == ' ' || *b == '\t'))
        b++;
    const char *e = end;
    while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    p->secs = tg_realloc(p->secs, (size_t)(p->nsecs + 1) * sizeof *p->secs);
    p->secs[p->nsecs].name = tg_strndup(b, (size_t)(e - b));
    p->secs[p->nsecs].line = p->line;
    p->nsecs++;
    return (size_t)(e - b);
}

/* The whole name of a section inih saw as a stand-in (see LONG_SECTION). */
static const char *whole_section(const parser *p, const char *section)
{
    if (section[0] != LONG_SECTION)
        return section;
    int i = atoi(section + 1);
    return i >= 0 && i < p->nsecs ? p->secs[i].name : section;
}

static int section_line_of(const parser *p, const char *section, int fallback)
{
    for (int i = 0; i < p->nsecs; i++)
        if (!strcmp(p->secs[i].name, section))
            return p->secs[i].line;
    return fallback;
}

/* inih reader: fgets over a string, counting lines. */
static char *read_line(char *str, int num, void *stream)
{
    parser *p = stream;
    if (!p->text[p->pos])
        return NULL;
    int i = 0;
    while (i < num - 1 && p->text[p->pos]) {
        char ch = p->text[p->pos++];
        str[i++] = ch;
        if (ch == '\n')
            break;
    }
    str[i] = '\0';
    if (i == num - 1 && str[i - 1] != '\n') {
        /* An over-long line: skip its tail so it stays one line. */
        while (p->text[p->pos] && p->text[p->pos] != '\n')
            p->pos++;
        if (p->text[p->pos] == '\n')
            p->pos++;
        p->line++;
        perr(p, p->line, "line longer than %d characters", num - 2);
        str[0] = '\0';
        return str;
    }
    p->line++;
    if (note_section(p, str) > INI_SECTION_KEEP)
        snprintf(str, (size_t)num, "[%c%d]\n", LONG_SECTION, p->nsecs - 1);
    return str;
}

/* ${VAR} and ${VAR:-default} from the environment; unset VAR is "".
 * *unset gets the name of the first VAR without a default that gave ""
 * (a route's api_key then says which variable to set: tg_route.api_key_var;
 * ${VAR:-} marks a key as optional, for a local server that takes none). */
static char *expand_env(const char *v, char **unset)
{
    tg_buf out = {0};
    while (*v) {
        if (v[0] == '$' && v[1] == '{') {
            const char *end = strchr(v + 2, '}');
            if (end) {
                char name[256];
                size_t n = (size_t)(end - v - 2);
                if (n >= sizeof name)
                    n = sizeof name - 1;
                memcpy(name, v + 2, n);
                name[n] = '\0';
                const char *def = NULL;
                char *dash = strstr(name, ":-");
                if (dash) {
                    *dash = '\0';
                    def = dash + 2;
                }
                const char *val = getenv(name);
                if ((!val || !*val) && def)
                    val = def;
                if (val)
                    tg_buf_puts(&out, val);
                if ((!val || !*val) && !def && !*unset && *name)  /* ${VAR:-} is optional */
                    *unset = tg_strdup(name);
                v = end + 1;
                continue;
            }
        }
        tg_buf_append(&out, v, 1);
        v++;
    }
    return tg_buf_steal(&out, NULL);
}

static int on_kv(void *user, const char *section, const char *key, const char *value)
{
    parser *p = user;
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 32;
        p->kvs = tg_realloc(p->kvs, (size_t)p->cap * sizeof *p->kvs);
    }
    kv *k = &p->kvs[p->n++];
    k->section = tg_strdup(whole_section(p, section));
    k->key = tg_strdup(key);
    k->unset = NULL;
    k->value = expand_env(value, &k->unset);
    k->line = p->line;
    return 1;
}

/* ---- value parsers ---------------------------------------------------- */

int tg_parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno)
        return -1;
    unsigned long long mul = 1;
    switch (toupper((unsigned char)*end)) {
    case '\0': break;
    case 'K': mul = 1024ULL; end++; break;
    case 'M': mul = 1024ULL * 1024; end++; break;
    case 'G': mul = 1024ULL * 1024 * 1024; end++; break;
    default: return -1;
    }
    if (toupper((unsigned char)*end) == 'B')
        end++;
    if (*end)
        return -1;
    *out = (size_t)(v * mul);
    return 0;
}

int tg_parse_duration_ms(const char *s, long *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0)
        return -1;
    double mul = 1000;
    if (strcmp(end, "ms") == 0)
        mul = 1;
    else if (strcmp(end, "s") == 0 || *end == '\0')
        mul = 1000;
    else if (strcmp(end, "m") == 0)
        mul = 60000;
    else if (strcmp(end, "h") == 0)
        mul = 3600000;
    else
        return -1;
    *out = (long)(v * mul);
    return 0;
}

int tg_parse_redis_url(const char *s, tg_redis_url *u)
{
    memset(u, 0, sizeof *u);
    if (strncmp(s, "redis://", 8))
        return -1;
    s += 8;
    const char *at = strrchr(s, '@');
    if (at) {
        if (*s != ':' || (size_t)(at - s - 1) >= sizeof u->password)
            return -1;
        memcpy(u->password, s + 1, (size_t)(at - s - 1));
        s = at + 1;
    }
    const char *end = s + strcspn(s, "/");
    unsigned port = 6379;
    if (tg_split_host_port(s, (size_t)(end - s), u->host, sizeof u->host, &port))
        return -1;
    u->port = (int)port;
    if (*end == '/' && end[1]) {
        char *e;
        long db = strtol(end + 1, &e, 10);
        if (*e || e == end + 1 || db < 0 || db > 1000000)
            return -1;
        u->db = (int)db;
    }
    return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* A plain boolean key, read like a rule switch (core/rules.h) and refused
 * with the same words. */
static int parse_bool(parser *p, const kv *k, int *out)
{
    int on = tg_switch_parse(k->value);
    if (on < 0) {
        perr(p, k->line, "%s: expected on or off, got '%s'", k->key, k->value);
        return -1;
    }
    *out = on;
    return 0;
}

/* A key that takes one of a few words (NULL-terminated names), in any case
 * as the switches: its index, or -1 and a message listing the words. */
static int parse_choice(parser *p, const kv *k, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (!strcasecmp(k->value, names[i]))
            return i;
    tg_buf list = {0};
    for (int i = 0; names[i]; i++)
        tg_buf_printf(&list, "%s%s", i ? " | " : "", names[i]);
    perr(p, k->line, "%s: expected %s, got '%s'", k->key, list.data ? list.data : "", k->value);
    tg_buf_free(&list);
    return -1;
}

/* "a, b ,c" -> NULL-terminated array of trimmed, non-empty strings. */
static char **split_list(const char *s)
{
    int n = 0;
    char **out = tg_calloc(strlen(s) / 2 + 2, sizeof *out);
    const char *p = s;
    while (*p) {
        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        const char *start = p;
        while (*p && *p != ',')
            p++;
        const char *end = p;
        while (end > start && isspace((unsigned char)end[-1]))
            end--;
        if (end > start)
            out[n++] = tg_strndup(start, (size_t)(end - start));
    }
    out[n] = NULL;
    return out;
}

static void free_list(char **l)
{
    if (!l)
        return;
    for (char **p = l; *p; p++)
        free(*p);
    free(l);
}

static int parse_listen(const char *s, char **host, int *port)
{
    const char *colon;
    char *h;
    if (s[0] == '[') {
        const char *rb = strchr(s, ']');
        if (!rb || rb[1] != ':')
            return -1;
        h = tg_strndup(s + 1, (size_t)(rb - s - 1));
        colon = rb + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon) {
            h = tg_strdup("127.0.0.1");
            colon = s - 1;
        } else {
            h = colon == s ? tg_strdup("0.0.0.0") : tg_strndup(s, (size_t)(colon - s));
        }
    }
    if (parse_int(colon + 1, 0, 65535, port)) {
        free(h);
        return -1;
    }
    free(*host);
    *host = h;
    return 0;
}

/* ---- sections --------------------------------------------------------- */

static int server_key(parser *p, tg_conf *c, const kv *k)
{
    const char *key = k->key, *v = k->value;
    if (!strcmp(key, "listen")) {
        if (parse_listen(v, &c->listen_host, &c->listen_port))
            perr(p, k->line, "listen: expected HOST:PORT, got '%s'", v);
    } else if (!strcmp(key, "threads")) {
        if (parse_int(v, 0, 256, &c->threads))
            perr(p, k->line, "threads: expected 0..256, got '%s'", v);
    } else if (!strcmp(key, "max_body")) {
        if (tg_parse_size(v, &c->max_body) || c->max_body == 0)
            perr(p, k->line, "max_body: expected a size such as 32M, got '%s'", v);
    } else if (!strcmp(key, "responses_store")) {
        free(c->responses_redis);
        c->responses_redis = NULL;
        tg_redis_url u;
        if (!strncmp(v, "redis://", 8)) {
            if (tg_parse_redis_url(v, &u))
                perr(p, k->line, "responses_store: expected redis://[:PASSWORD@]HOST[:PORT][/DB], "
                                 "got '%s'", v);
            else
                c->responses_redis = tg_strdup(v);
        } else if (tg_parse_size(v, &c->responses_store))
            perr(p, k->line, "responses_store: expected a size such as 32M (0: keep none) or "
                             "redis://HOST:PORT/DB, got '%s'", v);
    } else if (!strcmp(key, "responses_per_owner")) {
        if (tg_parse_size(v, &c->responses_per_owner) || c->responses_per_owner == 0)
            perr(p, k->line, "responses_per_owner: expected a size such as 4M, got '%s'", v);
    } else if (!strcmp(key, "responses_ttl")) {
        if (tg_parse_duration_ms(v, &c->responses_ttl_ms) || c->responses_ttl_ms < 1000)
            perr(p, k->line, "responses_ttl: expected a duration of at least 1s such as 1h, got '%s'", v);
    } else if (!strcmp(key, "max_header")) {
        if (tg_parse_size(v, &c->max_header) || c->max_header < 1024)
            perr(p, k->line, "max_header: expected a size of at least 1K, got '%s'", v);
    } else if (!strcmp(key, "max_event")) {
        if (tg_parse_size(v, &c->max_event) || c->max_event < 1024)
            perr(p, k->line, "max_event: expected a size of at least 1K such as 4M, got '%s'", v);
    } else if (!strcmp(key, "max_answer")) {
        if (tg_parse_size(v, &c->max_answer) || c->max_answer < 1024)
            perr(p, k->line, "max_answer: expected a size of at least 1K such as 32M, got '%s'", v);
    } else if (!strcmp(key, "header_timeout")) {
        if (tg_parse_duration_ms(v, &c->header_timeout_ms) || c->header_timeout_ms <= 0)
            perr(p, k->line, "header_timeout: expected a duration such as 10s, got '%s'", v);
    } else if (!strcmp(key, "max_depth")) {
        if (parse_int(v, 4, 2000, &c->max_depth))
            perr(p, k->line, "max_depth: expected 4..2000, got '%s'", v);
    } else if (!strcmp(key, "max_tools")) {
        if (parse_int(v, 0, 1000000, &c->max_tools))
            perr(p, k->line, "max_tools: expected a count, got '%s'", v);
    } else if (!strcmp(key, "client_keys")) {
        free_list(c->client_keys);
        c->client_keys = split_list(v);
        if (!c->client_keys[0]) {
            free_list(c->client_keys);
            c->client_keys = NULL;
        }
    } else if (!strcmp(key, "metrics_auth")) {
        int b;
        if (!parse_bool(p, k, &b))
            p->metrics_auth = b;
    } else if (!strcmp(key, "max_body_memory")) {
        if (tg_parse_size(v, &c->max_body_memory) || c->max_body_memory == 0)
            perr(p, k->line, "max_body_memory: expected a size such as 256M, got '%s'", v);
    } else if (!strcmp(key, "max_conns_per_ip")) {
        if (parse_int(v, 0, 1000000, &c->max_conns_per_ip))
            perr(p, k->line, "max_conns_per_ip: expected a count (0: no limit), got '%s'", v);
    } else if (!strcmp(key, "forward_headers")) {
        free_list(c->forward_headers);
        c->forward_headers = split_list(v);
    } else if (!strcmp(key, "log_level")) {
        static const char *const lv[] = {"error", "warn", "info", "debug", NULL};
        int found = parse_choice(p, k, lv);
        if (found >= 0)
            c->log_level = (tg_log_level)found;
    } else if (!strcmp(key, "access_log")) {
        free(c->access_log);
        c->access_log = tg_strdup(v);
    } else if (!strcmp(key, "upstream_client")) {
        static const char *const cl[] = {"toolgate", "curl", NULL};
        int found = parse_choice(p, k, cl);
        if (found >= 0)
            c->curl_only = found == 1;
    } else if (!strcmp(key, "tls_ca_file") || !strcmp(key, "tls_ca_path")) {
        char **dst = key[7] == 'f' ? &c->tls_ca_file : &c->tls_ca_path;
        free(*dst);
        *dst = *v ? tg_strdup(v) : NULL;
    } else if (!strcmp(key, "shutdown_grace")) {
        if (tg_parse_duration_ms(v, &c->shutdown_grace_ms))
            perr(p, k->line, "shutdown_grace: expected a duration such as 30s, got '%s'", v);
    } else {
        perr(p, k->line, "unknown key '%s' in [server]", key);
    }
    return 0;
}

char *tg_url_redact(const char *url)
{
    tg_buf b = {0};
    const char *scheme = strstr(url, "://");
    const char *auth = scheme ? scheme + 3 : url;
    const char *path = auth + strcspn(auth, "/?#");
    const char *at = memchr(auth, '@', (size_t)(path - auth));
    if (at) {  /* the last '@' before the path ends the userinfo */
        for (const char *q = at; q < path; q++)
            if (*q == '@')
                at = q;
        tg_buf_append(&b, url, (size_t)(auth - url));
        tg_buf_puts(&b, "***@");
        tg_buf_append(&b, at + 1, (size_t)(path - at - 1));
    } else {
        tg_buf_append(&b, url, (size_t)(path - url));
    }
    size_t rest = strcspn(path, "?#");
    tg_buf_append(&b, path, rest);
    if (path[rest] == '?')
        tg_buf_puts(&b, "?***");
    if (!b.data)
        tg_buf_puts(&b, "");
    return tg_buf_steal(&b, NULL);
}

static int valid_url(const char *u)
{
    return (!strncmp(u, "http://", 7) && u[7]) || (!strncmp(u, "https://", 8) && u[8]);
}

static char *normalize_prefix(const char *v)
{
    tg_buf b = {0};
    if (v[0] != '/')
        tg_buf_puts(&b, "/");
    tg_buf_puts(&b, v);
    while (b.len > 1 && b.data[b.len - 1] == '/')
        b.data[--b.len] = '\0';
    return tg_buf_steal(&b, NULL);
}

/* discovery_embeddings = ROUTE:MODEL (the model may itself hold colons,
 * as Ollama's "nomic-embed-text:latest"); "" or off turns it off. That
 * ROUTE exists is checked once every route is read. */
static void set_embeddings(parser *p, tg_route *r, const kv *k)
{
    const char *v = k->value, *colon = strchr(v, ':');
    free(r->rules.disc.embed_route);
    free(r->rules.disc.embed_model);
    r->rules.disc.embed_route = r->rules.disc.embed_model = NULL;
    if (!*v || !strcasecmp(v, "off"))
        return;
    if (!colon || colon == v || !colon[1]) {
        perr(p, k->line, "discovery_embeddings: expected ROUTE:MODEL, got '%s'", v);
        return;
    }
    r->rules.disc.embed_route = tg_strndup(v, (size_t)(colon - v));
    r->rules.disc.embed_model = tg_strdup(colon + 1);
}

/* Keys of [route NAME] other than rule overrides. The dialect is already
 * applied to r->rules when this runs. */
static void route_key(parser *p, tg_route *r, const kv *k)
{
    const char *key = k->key, *v = k->value;
    char msg[1024];  /* room for a section's list of rule names */
    int b;
    if (!strcmp(key, "models")) {
        free_list(r->models);
        r->models = split_list(v);
    } else if (!strcmp(key, "prefix")) {
        free(r->prefix);
        r->prefix = normalize_prefix(v);
        if (!strcmp(r->prefix, "/") || !strcmp(r->prefix, "/v1") || !strncmp(r->prefix, "/v1/", 4))
            perr(p, k->line, "prefix: '%s' would shadow the /v1 API; pick a name such as /%s",
                 r->prefix, r->name);
    } else if (!strcmp(key, "upstream")) {
        free(r->upstream);
        r->upstream = tg_strdup(v);
        size_t n = strlen(r->upstream);
        while (n > 0 && r->upstream[n - 1] == '/')
            r->upstream[--n] = '\0';
        free(r->upstream_shown);
        r->upstream_shown = tg_url_redact(r->upstream);
        if (!valid_url(r->upstream))
            perr(p, k->line, "upstream: expected an http:// or https:// URL, got '%s'",
                 r->upstream_shown);
    } else if (!strcmp(key, "api_key")) {
        free(r->api_key);
        r->api_key = *v ? tg_strdup(v) : NULL;
        free(r->api_key_var);
        r->api_key_var = !*v && k->unset ? tg_strdup(k->unset) : NULL;
    } else if (!strcmp(key, "upstream_model")) {
        free(r->upstream_model);
        r->upstream_model = *v ? tg_strdup(v) : NULL;
    } else if (!strcmp(key, "strip_model_prefix")) {
        free_list(r->strip_model);
        r->strip_model = split_list(v);
    } else if (!strcmp(key, "dialect")) {
        /* resolved earlier */
    } else if (!strcmp(key, "strip_prefix")) {
        free(r->strip_prefix);
        r->strip_prefix = tg_strdup(v);
    } else if (!strcmp(key, "discovery")) {
        /* a switch (core/rules.h) with a third value */
        int on = tg_switch_parse(v);
        if (on >= 0)
            r->rules.disc.mode = on ? TG_DISC_ON : TG_DISC_OFF;
        else if (!strcasecmp(v, "auto"))
            r->rules.disc.mode = TG_DISC_AUTO;
        else
            perr(p, k->line, "discovery: expected off | auto | on, got '%s'", v);
    } else if (!strcmp(key, "discovery_threshold")) {
        if (parse_int(v, 0, 100000, &r->rules.disc.threshold))
            perr(p, k->line, "discovery_threshold: expected a tool count, got '%s'", v);
    } else if (!strcmp(key, "discovery_core")) {
        free_list(r->rules.disc.core);
        r->rules.disc.core = split_list(v);
    } else if (!strcmp(key, "discovery_schemas")) {
        if (parse_int(v, 0, 50, &r->rules.disc.search_schemas))
            perr(p, k->line, "discovery_schemas: expected 0..50, got '%s'", v);
    } else if (!strcmp(key, "discovery_rounds")) {
        if (parse_int(v, 1, 32, &r->rules.disc.max_rounds))
            perr(p, k->line, "discovery_rounds: expected 1..32, got '%s'", v);
    } else if (!strcmp(key, "discovery_list_names")) {
        parse_bool(p, k, &r->rules.disc.list_names);
    } else if (!strcmp(key, "discovery_embeddings")) {
        set_embeddings(p, r, k);
    } else if (!strcmp(key, "discovery_hints")) {
        parse_bool(p, k, &r->rules.disc.hints);
    } else if (!strcmp(key, "discovery_wordvec")) {
        parse_bool(p, k, &r->rules.disc.wordvec);
    } else if (!strcmp(key, "text_tool_calls")) {
        if (!parse_bool(p, k, &b))
            r->rules.repair.text_tool_calls = b;
    } else if (!strcmp(key, "connect_timeout") || !strcmp(key, "ttfb_timeout") ||
               !strcmp(key, "idle_timeout") || !strcmp(key, "timeout")) {
        long *dst = !strcmp(key, "connect_timeout") ? &r->connect_timeout_ms
                    : !strcmp(key, "ttfb_timeout")  ? &r->ttfb_timeout_ms
                    : !strcmp(key, "idle_timeout")  ? &r->idle_timeout_ms
                                                    : &r->total_timeout_ms;
        if (tg_parse_duration_ms(v, dst))
            perr(p, k->line, "%s: expected a duration such as 30s or 500ms, got '%s'", key, v);
    } else if (!strcmp(key, "retries")) {
        if (parse_int(v, 0, 10, &r->retries))
            perr(p, k->line, "retries: expected 0..10, got '%s'", v);
    } else if (!strcmp(key, "responses") || !strcmp(key, "messages") || !strcmp(key, "gemini")) {
        static const char *const how[] = {"bridge", "pass", NULL};
        int *dst = !strcmp(key, "responses") ? &r->responses
                   : !strcmp(key, "messages") ? &r->messages
                                              : &r->gemini;
        int i = parse_choice(p, k, how);
        if (i >= 0)
            *dst = i == 0;
    } else if (!strcmp(key, "hosted_tools")) {
        static const char *const hosted[] = {"drop", "refuse", NULL};
        int i = parse_choice(p, k, hosted);
        if (i >= 0)
            r->refuse_hosted = i == 1;
    } else if (!strcmp(key, "tls_ca_file") || !strcmp(key, "tls_ca_path") ||
               !strcmp(key, "tls_client_cert") || !strcmp(key, "tls_client_key")) {
        char **dst = !strcmp(key, "tls_ca_file")       ? &r->tls_ca_file
                     : !strcmp(key, "tls_ca_path")     ? &r->tls_ca_path
                     : !strcmp(key, "tls_client_cert") ? &r->tls_cert
                                                       : &r->tls_key;
        free(*dst);
        *dst = *v ? tg_strdup(v) : NULL;
    } else if (!strcmp(key, "drop_params")) {
        free_list(r->rules.msg.drop);
        r->rules.msg.drop = *v ? split_list(v) : NULL;
    } else if (!strcmp(key, "fallback")) {
        free(r->fallback);
        r->fallback = *v ? tg_strdup(v) : NULL;
    } else if (!strncmp(key, "schema.", 7)) {
        if (tg_schema_rules_set(&r->rules.schema, key + 7, v, msg, sizeof msg))
            perr(p, k->line, "%s", msg);
    } else if (!strncmp(key, "messages.", 9)) {
        if (tg_msg_rules_set(&r->rules.msg, key + 9, v, msg, sizeof msg))
            perr(p, k->line, "%s", msg);
    } else if (!strncmp(key, "repair.", 7)) {
        if (tg_repair_rules_set(&r->rules.repair, key + 7, v, msg, sizeof msg))
            perr(p, k->line, "%s", msg);
    } else {
        perr(p, k->line, "unknown key '%s' in [route %s]", key, r->name);
    }
}

static void route_init(tg_route *r, const char *name, int line)
{
    memset(r, 0, sizeof *r);
    r->name = tg_strdup(name);
    r->line = line;
    r->prefix = tg_strdup("");
    r->strip_prefix = tg_strdup("_");
    r->connect_timeout_ms = 10000;
    r->ttfb_timeout_ms = 300000;
    r->idle_timeout_ms = 300000;
    r->total_timeout_ms = 0;
    r->retries = 0;
    r->responses = -1;
    r->messages = -1;
    r->gemini = -1;
    tg_rules_preset(TG_D_OPENAI, &r->rules);
}

static void route_free(tg_route *r)
{
    free(r->name);
    free_list(r->models);
    free(r->prefix);
    free(r->upstream);
    free(r->upstream_shown);
    free(r->api_key);
    free(r->api_key_var);
    free(r->upstream_model);
    free(r->tls_ca_file);
    free(r->tls_ca_path);
    free(r->tls_cert);
    free(r->tls_key);
    free_list(r->strip_model);
    free(r->strip_prefix);
    free(r->fallback);
    free_list(r->rules.msg.drop);
    free_list(r->rules.disc.core);
    free(r->rules.disc.embed_route);
    free(r->rules.disc.embed_model);
}

/* "route NAME" -> NAME, or NULL when the section is something else. */
static const char *route_section_name(const char *section)
{
    if (strncmp(section, "route", 5) || !isspace((unsigned char)section[5]))
        return NULL;
    const char *n = section + 5;
    while (isspace((unsigned char)*n))
        n++;
    return *n ? n : NULL;
}

static int valid_route_name(const char *n)
{
    for (; *n; n++)
        if (!isalnum((unsigned char)*n) && *n != '-' && *n != '_' && *n != '.')
            return 0;
    return 1;
}

static void build_routes(parser *p, tg_conf *c)
{
    /* Sections in order of first appearance. */
    for (int i = 0; i < p->n; i++) {
        const kv *k = &p->kvs[i];
        if (!strcmp(k->section, "server"))
            continue;
        const char *name = route_section_name(k->section);
        if (!name) {
            bool seen = false;
            for (int j = 0; j < i; j++)
                if (!strcmp(p->kvs[j].section, k->section))
                    seen = true;
            if (!seen) {
                if (!*k->section)
                    perr(p, k->line, "key '%s' outside any section", k->key);
                else
                    perr(p, section_line_of(p, k->section, k->line),
                         "unknown section [%s] (expected [server] or [route NAME])", k->section);
            }
            continue;
        }
        if (tg_route_by_name(c, name))
            continue;
        bool first = true;
        for (int j = 0; j < i; j++)
            if (!strcmp(p->kvs[j].section, k->section))
                first = false;
        if (!first)
            continue;
        if (!valid_route_name(name))
            perr(p, k->line, "route name '%s': use letters, digits, '-', '_' or '.'", name);
        c->routes = tg_realloc(c->routes, (size_t)(c->n_routes + 1) * sizeof *c->routes);
        tg_route *r = &c->routes[c->n_routes++];
        route_init(r, name, section_line_of(p, k->section, k->line));

        /* The dialect first, so rule overrides apply to its preset. */
        for (int j = i; j < p->n; j++) {
            const kv *d = &p->kvs[j];
            if (strcmp(d->section, k->section) || strcmp(d->key, "dialect"))
                continue;
            int di = tg_dialect_from_name(d->value);
            if (di < 0)
                perr(p, d->line, "dialect: unknown dialect '%s' (expected %s)", d->value,
                     tg_dialect_list());
            else
                tg_rules_preset((tg_dialect)di, &r->rules);
        }
        for (int j = i; j < p->n; j++)
            if (!strcmp(p->kvs[j].section, k->section))
                route_key(p, r, &p->kvs[j]);

        if (!r->upstream)
            perr(p, r->line, "[route %s] needs an upstream", r->name);
        if ((!r->models || !r->models[0]) && !r->prefix[0])
            perr(p, r->line, "[route %s] needs models, prefix, or both", r->name);
    }
    for (int i = 0; i < c->n_routes; i++) {
        tg_route *r = &c->routes[i];
        if (r->fallback && (!tg_route_by_name(c, r->fallback) || !strcmp(r->fallback, r->name)))
            perr(p, r->line, "[route %s] fallback '%s' is not another route", r->name, r->fallback);
        if (r->rules.disc.embed_route && !tg_route_by_name(c, r->rules.disc.embed_route))
            perr(p, r->line, "[route %s] discovery_embeddings: no route '%s'", r->name,
                 r->rules.disc.embed_route);
        for (int j = 0; j < i; j++)
            if (r->prefix[0] && !strcmp(r->prefix, c->routes[j].prefix))
                perr(p, r->line, "[route %s] prefix %s is already used by [route %s]", r->name,
                     r->prefix, c->routes[j].name);
    }
}

/* Is path a PEM file holding at least one certificate? NULL, or why not:
 * a CA file that cannot be read or holds none would fail every https
 * round with a TLS error far from its cause, so load names it instead. */
static const char *pem_problem(const char *path, bool want_cert)
{
    struct stat st;
    if (stat(path, &st))
        return strerror(errno);
    if (!S_ISREG(st.st_mode) || st.st_size > (16 << 20))
        return "not a regular file of at most 16 MB";
    tg_buf b = {0};
    if (tg_buf_read_file(&b, path)) {
        tg_buf_free(&b);
        return strerror(errno);
    }
    bool ok = b.data && (want_cert ? strstr(b.data, "-----BEGIN CERTIFICATE-----") ||
                                         strstr(b.data, "-----BEGIN TRUSTED CERTIFICATE-----")
                                   : strstr(b.data, "-----BEGIN ") != NULL);
    tg_buf_free(&b);
    return ok ? NULL : want_cert ? "no PEM certificate in it" : "no PEM block in it";
}

static void check_dir(parser *p, int line, const char *what, const char *path)
{
    struct stat st;
    if (stat(path, &st) || !S_ISDIR(st.st_mode) || access(path, R_OK | X_OK))
        perr(p, line, "%s: '%s' is not a readable directory", what, path);
}

static int key_line(const parser *p, const char *section, const char *key, int fallback)
{
    for (int i = p->n - 1; i >= 0; i--)
        if (!strcmp(p->kvs[i].key, key) && !strcmp(p->kvs[i].section, section))
            return p->kvs[i].line;
    return fallback;
}

/* Each route's TLS trust: its own tls_ca_* keys, else [server]'s, else
 * the environment's SSL_CERT_FILE / SSL_CERT_DIR (OpenSSL's names; libcurl
 * 7.88 reads neither), else nothing (libcurl's built-in bundle). Every file
 * and directory named is checked here, so `toolgate check` reports it. */
static void resolve_tls(parser *p, tg_conf *c)
{
    const char *env_file = getenv("SSL_CERT_FILE"), *env_dir = getenv("SSL_CERT_DIR");
    env_file = env_file && *env_file ? env_file : NULL;
    env_dir = env_dir && *env_dir ? env_dir : NULL;
    for (int i = 0; i < c->n_routes; i++) {
        tg_route *r = &c->routes[i];
        char section[300];
        snprintf(section, sizeof section, "route %s", r->name);
        bool own = r->tls_ca_file || r->tls_ca_path, server = c->tls_ca_file || c->tls_ca_path;
        if (!own) {
            const char *f = server ? c->tls_ca_file : env_file, *d = server ? c->tls_ca_path : env_dir;
            r->tls_ca_file = f ? tg_strdup(f) : NULL;
            r->tls_ca_path = d ? tg_strdup(d) : NULL;
        }
        const char *whose = own ? section : server ? "server" : NULL;
        const char *why;
        if (r->tls_ca_file && (why = pem_problem(r->tls_ca_file, true))) {
            if (whose)
                perr(p, key_line(p, whose, "tls_ca_file", r->line), "tls_ca_file '%s': %s",
                     r->tls_ca_file, why);
            else
                perr(p, r->line, "[route %s] SSL_CERT_FILE '%s' (environment): %s", r->name,
                     r->tls_ca_file, why);
        }
        if (r->tls_ca_path)
            check_dir(p, whose ? key_line(p, whose, "tls_ca_path", r->line) : r->line,
                      whose ? "tls_ca_path" : "SSL_CERT_DIR (environment)", r->tls_ca_path);
        if (r->tls_key && !r->tls_cert)
            perr(p, key_line(p, section, "tls_client_key", r->line),
                 "tls_client_key needs tls_client_cert in [route %s]", r->name);
        if (r->tls_cert && (why = pem_problem(r->tls_cert, true)))
            perr(p, key_line(p, section, "tls_client_cert", r->line), "tls_client_cert '%s': %s",
                 r->tls_cert, why);
        if (r->tls_key && (why = pem_problem(r->tls_key, false)))
            perr(p, key_line(p, section, "tls_client_key", r->line), "tls_client_key '%s': %s",
                 r->tls_key, why);
    }
}

static tg_conf *conf_new(void)
{
    tg_conf *c = tg_calloc(1, sizeof *c);
    atomic_init(&c->refs, 1);
    c->listen_host = tg_strdup("127.0.0.1");
    c->listen_port = 8080;
    c->max_body = 32u << 20;
    c->responses_store = 32u << 20;
    c->responses_per_owner = 4u << 20;
    c->responses_ttl_ms = 3600L * 1000;
    c->max_depth = 512;
    c->max_tools = 4096;
    c->max_header = 8 * 1024;
    c->max_event = 4u << 20;
    c->max_answer = 32u << 20;
    c->header_timeout_ms = 10000;
    c->max_body_memory = 256u << 20;
    c->max_conns_per_ip = 1024;
    c->log_level = TG_LOG_INFO;
    c->access_log = tg_strdup("-");
    c->shutdown_grace_ms = 30000;
    return c;
}

static void conf_free(tg_conf *c)
{
    for (int i = 0; i < c->n_routes; i++)
        route_free(&c->routes[i]);
    free(c->routes);
    free(c->path);
    free(c->listen_host);
    free(c->access_log);
    free(c->responses_redis);
    free(c->tls_ca_file);
    free(c->tls_ca_path);
    free_list(c->client_keys);
    free_list(c->forward_headers);
    free(c);
}

tg_conf *tg_conf_load_string(const char *text, const char *name, tg_buf *errors)
{
    parser p = {.name = name, .text = text, .errors = errors, .metrics_auth = -1};
    int rc = ini_parse_stream(read_line, &p, on_kv, &p);
    if (rc > 0)
        perr(&p, rc, "syntax error (expected [section] or key = value)");
    else if (rc < 0)
        perr(&p, 0, "cannot parse");

    tg_conf *c = conf_new();
    c->path = tg_strdup(name);
    for (int i = 0; i < p.n; i++)
        if (!strcmp(p.kvs[i].section, "server"))
            server_key(&p, c, &p.kvs[i]);
    build_routes(&p, c);
    resolve_tls(&p, c);
    c->metrics_auth = p.metrics_auth < 0 ? c->client_keys != NULL : p.metrics_auth == 1;
    if (c->metrics_auth && !c->client_keys)
        perr(&p, 1, "metrics_auth = on needs client_keys: /metrics asks for one of them");
    if (c->max_body_memory < c->max_body)
        perr(&p, 1, "max_body_memory (%zu bytes) is smaller than max_body (%zu bytes): no body "
                    "of the largest size could be read", c->max_body_memory, c->max_body);
    if (c->n_routes == 0 && p.nerr == 0)
        perr(&p, p.line ? p.line : 1, "no [route NAME] section: toolgate has nowhere to send requests");
    if (c->threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        c->threads = n > 0 ? (int)n : 1;
    }
    for (int i = 0; i < p.n; i++) {
        free(p.kvs[i].section);
        free(p.kvs[i].key);
        free(p.kvs[i].value);
        free(p.kvs[i].unset);
    }
    free(p.kvs);
    for (int i = 0; i < p.nsecs; i++)
        free(p.secs[i].name);
    free(p.secs);
    if (p.nerr) {
        conf_free(c);
        return NULL;
    }
    return c;
}

tg_conf *tg_conf_load(const char *path, tg_buf *errors)
{
    tg_buf text = {0};
    if (tg_buf_read_file(&text, path)) {
        tg_buf_printf(errors, "%s:0: cannot open: %s\n", path, strerror(errno));
        tg_buf_free(&text);
        return NULL;
    }
    tg_conf *c = tg_conf_load_string(text.data ? text.data : "", path, errors);
    tg_buf_free(&text);
    return c;
}

tg_conf *tg_conf_ref(tg_conf *c)
{
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    return c;
}

void tg_conf_unref(tg_conf *c)
{
    if (c && atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1)
        conf_free(c);
}

/* ---- router ----------------------------------------------------------- */

const tg_route *tg_route_by_prefix(const tg_conf *c, const char *path, const char **rest)
{
    *rest = path;
    for (int i = 0; i < c->n_routes; i++) {
        const tg_route *r = &c->routes[i];
        size_t n = strlen(r->prefix);
        if (n && !strncmp(path, r->prefix, n) && (path[n] == '/' || path[n] == '\0')) {
            *rest = path + n;
            return r;
        }
    }
    return NULL;
}

/* A pattern that opens with a literal byte other than the model's first
 * cannot match it: fnmatch, a few hundred instructions a call, is asked
 * only of the others. */
static bool may_match(const char *glob, const char *model)
{
    char c = glob[0];
    return c == '*' || c == '?' || c == '[' || c == '\\' || c == model[0];
}

const tg_route *tg_route_by_model(const tg_conf *c, const char *model)
{
    for (int i = 0; i < c->n_routes; i++) {
        const tg_route *r = &c->routes[i];
        for (char **g = r->models; g && *g; g++)
            if (may_match(*g, model) && fnmatch(*g, model, 0) == 0)
                return r;
    }
    return NULL;
}

bool tg_route_rewrite_model(const tg_route *r, json_t *body)
{
    const char *model = json_string_value(json_object_get(body, "model"));
    const char *to = r->upstream_model;
    for (char **p = r->strip_model; !to && model && p && *p; p++) {
        size_t n = strlen(*p);
        if (n && !strncmp(model, *p, n) && model[n])
            to = model + n;
    }
    if (!to || (model && !strcmp(model, to)))
        return false;
    /* `to` may point into the string being replaced */
    json_object_set_new(body, "model", json_string(to));
    return true;
}

const tg_route *tg_route_by_name(const tg_conf *c, const char *name)
{
    for (int i = 0; i < c->n_routes; i++)
        if (!strcmp(c->routes[i].name, name))
            return &c->routes[i];
    return NULL;
}

bool tg_route_bridges_responses(const tg_route *r)
{
    if (r->responses >= 0)
        return r->responses == 1;
    return tg_dialect_has(r->rules.schema.dialect, TG_DF_REWRITE);
}

bool tg_route_bridges_messages(const tg_route *r)
{
    if (r->messages >= 0)
        return r->messages == 1;
    tg_dialect d = r->rules.schema.dialect;
    return tg_dialect_has(d, TG_DF_REWRITE) && !tg_dialect_has(d, TG_DF_NATIVE_MESSAGES);
}

bool tg_route_bridges_gemini(const tg_route *r)
{
    return r->gemini != 0;
}

static bool cut_tail(const char *s, size_t *n, const char *tail)
{
    size_t k = strlen(tail);
    if (*n < k || strncmp(s + *n - k, tail, k))
        return false;
    *n -= k;
    return true;
}

void tg_route_gemini_base(const tg_route *r, tg_buf *out)
{
    const char *u = r->upstream;
    size_t n = strlen(u);
    cut_tail(u, &n, "/openai");
    if (!cut_tail(u, &n, "/v1beta"))
        cut_tail(u, &n, "/v1");
    tg_buf_append(out, u, n);
}
