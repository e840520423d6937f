/* conf.h -- the immutable configuration snapshot and the router.
 *
 * A tg_conf is built once from an INI file (inih), validated whole, and never
 * changed afterwards. Requests hold a reference for as long as they run; a
 * reload builds a new snapshot and swaps it in, and the old one is freed when
 * its last request lets go. Every string and table below belongs to the conf.
 */
#ifndef TG_CONF_H
#define TG_CONF_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"
#include "pipeline/pipeline.h"

typedef struct tg_route {
    char *name;
    int line;               /* where its section starts */
    char **models;          /* NULL-terminated globs on the request's "model" */
    char *prefix;           /* "" or "/seg[/seg]", no trailing slash */
    char *upstream;         /* base URL, no trailing slash */
    char *upstream_shown;   /* upstream for messages and logs: userinfo and
                               query replaced by "***" (tg_url_redact) */
    char *api_key;          /* NULL: forward the client's Authorization */
    char *api_key_var;      /* api_key was "${VAR}" and VAR unset or empty: VAR (a warn
                               at start, and a keyless request's 401 names it) */
    char *upstream_model;   /* NULL, or the model name sent upstream whatever the agent asked */
    char **strip_model;     /* NULL-terminated prefixes cut from the model name ("groq/") */
    char *strip_prefix;     /* marker prefix stripped upward; "" disables */
    tg_rules_set rules;     /* the dialect preset with this route's overrides */
    long connect_timeout_ms;
    long ttfb_timeout_ms;   /* time to the first response byte */
    long idle_timeout_ms;   /* between two reads of a stream */
    long total_timeout_ms;  /* 0 = none */
    int retries;
    char *fallback;         /* route name or NULL */
    int responses;          /* /v1/responses: 1 bridge to chat, 0 pass, -1 by dialect */
    int messages;           /* /v1/messages: 1 bridge to chat, 0 pass, -1 by dialect */
    int gemini;             /* Gemini's /v1beta/models/..: 1 bridge to chat, 0 pass, -1 default */
    bool refuse_hosted;     /* hosted_tools = refuse: a bridged request's tools that only
                               the API's own servers run are a 400, not dropped */
    /* TLS to an https upstream, resolved at load: the route's keys, else
     * [server]'s, else SSL_CERT_FILE / SSL_CERT_DIR; both CA fields NULL
     * means libcurl's built-in bundle file (never its CA directory, so
     * the parsed store is cached per worker: upstream.c). */
    char *tls_ca_file;
    char *tls_ca_path;
    char *tls_cert;         /* client certificate (PEM) for mTLS, or NULL */
    char *tls_key;          /* its private key (PEM), or NULL: in tls_cert */
} tg_route;

typedef enum { TG_LOG_ERROR = 0, TG_LOG_WARN, TG_LOG_INFO, TG_LOG_DEBUG } tg_log_level;

typedef struct tg_conf {
    atomic_int refs;
    char *path;
    char *listen_host;      /* "127.0.0.1", "::1", "0.0.0.0" ... */
    int listen_port;
    int threads;            /* resolved: never 0 after load */
    size_t max_body;
    size_t responses_store; /* bytes of Responses items kept for item_reference (read at start) */
    char *responses_redis;  /* "redis://HOST:PORT/DB" keeps them in Redis instead, or NULL */
    size_t responses_per_owner; /* bytes one owner keeps in Redis */
    long responses_ttl_ms;  /* how long Redis keeps an owner's items after its last answer */
    int max_depth;          /* JSON nesting limit of request bodies */
    int max_tools;          /* tools per request, 0 = none */
    size_t max_header;      /* request header bytes */
    size_t max_event;       /* one upstream SSE event (line or data lines) */
    size_t max_answer;      /* a whole upstream answer, counted decoded */
    long header_timeout_ms; /* from accept (or the previous answer) to a whole request head */
    char **client_keys;     /* NULL-terminated, or NULL when auth is off */
    bool metrics_auth;      /* /metrics asks for a client key (default: with client_keys) */
    size_t max_body_memory; /* all request bodies held at once, all workers */
    int max_conns_per_ip;   /* connections per client address, 0 = no limit */
    char **forward_headers; /* NULL-terminated names ("x-foo", "x-foo-*") forwarded
                               upstream besides the built-in list (http.h), or NULL */
    tg_log_level log_level;
    char *access_log;       /* "-" stdout, "off", or a file path */
    long shutdown_grace_ms;
    bool curl_only;         /* upstream_client = curl: no round on toolgate's own client */
    char *tls_ca_file;      /* [server] defaults for every route's tls_ca_* */
    char *tls_ca_path;
    tg_route *routes;
    int n_routes;
} tg_conf;

/* Parse and validate. On failure returns NULL and appends one
 * "FILE:LINE: message\n" per problem to errors. */
tg_conf *tg_conf_load(const char *path, tg_buf *errors);
tg_conf *tg_conf_load_string(const char *text, const char *name, tg_buf *errors);
tg_conf *tg_conf_ref(tg_conf *c);
/* Does the route answer /v1/responses itself, over the provider's chat
 * completions (bridge/responses_api.h)? Unless the conf says, every
 * dialect but passthrough: the bridge is what puts a Responses request
 * through the route's rules (OpenAI's own Responses API, with its hosted
 * tools and stored responses, is `responses = pass`). */
bool tg_route_bridges_responses(const tg_route *r);
/* Does the route answer Anthropic's /v1/messages itself, over the
 * provider's chat completions (bridge/messages_api.h)? Unless the conf
 * says, every dialect but anthropic and passthrough, whose providers speak
 * the Messages API themselves and get it passed through. */
bool tg_route_bridges_messages(const tg_route *r);
/* Does the route answer Gemini's API (/v1beta/models/MODEL:generateContent
 * ..., bridge/gemini_api.h) itself, over the provider's chat completions?
 * Unless the conf says `gemini = pass` (the request then goes to Gemini's
 * native API, tg_route_gemini_base), every route does. */
bool tg_route_bridges_gemini(const tg_route *r);
/* The base of Gemini's native API for a route that passes it (the path
 * /v1beta/... follows it): the upstream URL without the OpenAI-compatible
 * endpoint's tail ("/v1beta/openai", "/v1/openai", "/openai") and without
 * a trailing "/v1beta" or "/v1". Appended to out. */
void tg_route_gemini_base(const tg_route *r, tg_buf *out);
void tg_conf_unref(tg_conf *c);

/* Router. A route whose prefix is a whole-segment prefix of path wins,
 * whatever the model; *rest then points past the prefix. Otherwise *rest is
 * path and the route is NULL. */
const tg_route *tg_route_by_prefix(const tg_conf *c, const char *path, const char **rest);
/* First route, in file order, with a models glob matching model. */
const tg_route *tg_route_by_model(const tg_conf *c, const char *model);
const tg_route *tg_route_by_name(const tg_conf *c, const char *name);
/* The route stage's one edit of the body: the model the provider knows.
 * An agent names models the way its conf routes them ("groq/llama-3.3-70b",
 * an alias such as "fast"); the provider knows only its own names. Sets
 * body.model from upstream_model, or cuts the first strip_model prefix
 * that matches; returns whether the model changed. */
bool tg_route_rewrite_model(const tg_route *r, json_t *body);

/* url with its userinfo and query replaced by "***" (malloc'd), for every
 * message and log line that names an upstream: keys ride in either. */
char *tg_url_redact(const char *url);

/* Helpers shared with the CLI. */
int tg_parse_size(const char *s, size_t *out);
int tg_parse_duration_ms(const char *s, long *out);

/* redis://[:PASSWORD@]HOST[:PORT][/DB]; HOST may be [v6]. 0, or -1. */
typedef struct tg_redis_url {
    char host[256];
    int port;               /* 6379 when not given */
    int db;                 /* 0 when not given */
    char password[256];     /* "" when none */
} tg_redis_url;
int tg_parse_redis_url(const char *s, tg_redis_url *u);

#endif
