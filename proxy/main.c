/* main.c -- the toolgate command line: serve, check, rewrite, version.
 * `rewrite` runs exactly the request stages the proxy runs and prints the
 * body the proxy would send, so what a user sees is what upstream gets. */
#include <jansson.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "conf/conf.h"
#include "core/alloc.h"
#include "core/cache.h"
#include "pipeline/pipeline.h"
#include "core/jsonio.h"
#include "bridge/messages_api.h"
#include "bridge/responses_api.h"
#include "proxy/http.h"
#include "proxy/log.h"
#include "proxy/server.h"

#ifndef TG_VERSION
#define TG_VERSION "0.1.0"
#endif

static const char usage[] =
    "usage:\n"
    "  toolgate [serve] [-c FILE] [--listen HOST:PORT]    run the proxy (default conf: "
    "conf/toolgate.conf)\n"
    "  toolgate check -c FILE                             validate a conf, print its routes\n"
    "  toolgate rewrite -c FILE --route NAME [REQ.json] [--explain]\n"
    "                                                     print the request body as it would be "
    "sent upstream\n"
    "  toolgate rewrite --dialect D [REQ.json] [--explain]\n"
    "                                                     the same with a bare dialect preset\n"
    "  toolgate rewrite ... --responses [REQ.json]        REQ is a /v1/responses body: the chat\n"
    "                                                     body the bridge sends instead\n"
    "  toolgate rewrite ... --messages [REQ.json]         the same for an Anthropic /v1/messages body\n"
    "  toolgate version\n"
    "\n"
    "dialects: %s\n";

static void print_usage(FILE *f)
{
    fprintf(f, usage, tg_dialect_list());
}

static tg_conf *load_or_report(const char *path)
{
    tg_buf errs = {0};
    tg_conf *c = tg_conf_load(path, &errs);
    if (!c)
        fputs(errs.data ? errs.data : "invalid conf\n", stderr);
    tg_buf_free(&errs);
    return c;
}

static const char *disc_name(tg_disc_mode m)
{
    return m == TG_DISC_ON ? "on" : m == TG_DISC_AUTO ? "auto" : "off";
}

/* What would fail a route's first request, said before it is sent: an
 * api_key naming an unset variable (the server says so at start too) and
 * an upstream host that does not resolve (checked here only: a lookup can
 * take seconds, which `serve` must not wait for). */
static void warn_route(const tg_route *r)
{
    if (r->api_key_var)
        printf("  warn: route %s: api_key is ${%s}, which is unset or empty: requests to this "
               "route fail until it is set\n", r->name, r->api_key_var);
    const char *h = strstr(r->upstream, "://");
    h = h ? h + 3 : r->upstream;
    size_t auth = strcspn(h, "/?#");
    for (size_t i = auth; i-- > 0;)  /* past any userinfo */
        if (h[i] == '@') {
            h += i + 1;
            break;
        }
    char host[256];
    size_t len = *h == '[' ? strcspn(h + 1, "]") : strcspn(h, ":/?#");
    snprintf(host, sizeof host, "%.*s", (int)len, *h == '[' ? h + 1 : h);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc)
        printf("  warn: route %s: upstream host %s does not resolve (%s): requests to this "
               "route fail until it does\n", r->name, host, gai_strerror(rc));
    if (res)
        freeaddrinfo(res);
}

static int cmd_check(const char *path)
{
    tg_conf *c = load_or_report(path);
    if (!c)
        return 1;
    printf("%s: ok, listen %s:%d, %d threads, %d routes\n", path, c->listen_host,
           c->listen_port, c->threads, c->n_routes);
    for (int i = 0; i < c->n_routes; i++) {
        const tg_route *r = &c->routes[i];
        printf("  [route %s] dialect=%s upstream=%s", r->name,
               tg_dialect_name(r->rules.schema.dialect), r->upstream_shown);
        if (r->prefix[0])
            printf(" prefix=%s", r->prefix);
        if (r->models && r->models[0]) {
            printf(" models=");
            for (char **m = r->models; *m; m++)
                printf("%s%s", m == r->models ? "" : ",", *m);
        }
        if (r->upstream_model)
            printf(" upstream_model=%s", r->upstream_model);
        for (char **m = r->strip_model; m && *m; m++)
            printf("%s%s", m == r->strip_model ? " strip_model_prefix=" : ",", *m);
        printf(" api_key=%s discovery=%s", r->api_key ? "set" : "client",
               disc_name(r->rules.disc.mode));
        if (r->rules.disc.embed_route)
            printf(" discovery_embeddings=%s:%s", r->rules.disc.embed_route,
                   r->rules.disc.embed_model);
        printf("\n");
        warn_route(r);
    }
    tg_conf_unref(c);
    return 0;
}

/* The request's raw bytes, from the file or stdin. */
static int read_request(const char *file, tg_buf *raw)
{
    int rc = 0;
    if (file) {
        rc = tg_buf_read_file(raw, file);
    } else {
        char chunk[65536];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
            tg_buf_append(raw, chunk, n);
        rc = ferror(stdin) ? -1 : 0;
        tg_buf_reserve(raw, 0);
    }
    if (rc)
        fprintf(stderr, "toolgate: cannot read %s\n", file ? file : "<stdin>");
    return rc;
}

static void print_explain(json_t *explain)
{
    size_t i;
    json_t *rec;
    json_array_foreach(explain, i, rec) {
        const char *where = json_string_value(json_object_get(rec, "where"));
        const char *ptr = json_string_value(json_object_get(rec, "pointer"));
        char *before = json_object_get(rec, "before")
                           ? tg_json_dumps(json_object_get(rec, "before"))
                           : NULL;
        char *after = json_object_get(rec, "after")
                          ? tg_json_dumps(json_object_get(rec, "after"))
                          : NULL;
        fprintf(stderr, "%-9s %-28s %-40s %-24s %s -> %s\n",
                json_string_value(json_object_get(rec, "stage")), where ? where : "-",
                ptr ? ptr : "-", json_string_value(json_object_get(rec, "rule")),
                before ? before : "(none)", after ? after : "(removed)");
        free(before);
        free(after);
    }
    fprintf(stderr, "%zu change(s)\n", json_array_size(explain));
}

enum { BRIDGE_NONE, BRIDGE_RESPONSES, BRIDGE_MESSAGES };

/* A /v1/responses (bridge/responses_api.h) or /v1/messages body
 * (bridge/messages_api.h) in raw, replaced by the chat body the bridge
 * makes of it. 0, or -1 with the refusal printed. */
static int bridge_request(tg_buf *raw, int api)
{
    json_t *body = tg_json_load(raw->data ? raw->data : "", raw->len, 0, NULL);
    json_t *chat = NULL;
    tg_error err;
    int rc;
    if (api == BRIDGE_MESSAGES) {
        tg_msg_bridge *b = NULL;
        rc = tg_messages_to_chat(body, &chat, &b, &err);
        tg_msg_bridge_free(b);
    } else {
        tg_resp_bridge *b = NULL;
        rc = tg_responses_to_chat(body, &chat, &b, &err);
        tg_resp_bridge_free(b);
    }
    json_decref(body);
    if (rc) {
        char *e = tg_error_body(&err);
        fprintf(stderr, "toolgate: rejected (%d): %s\n", err.status, e);
        free(e);
        return -1;
    }
    tg_buf_reset(raw);
    tg_json_dump(chat, raw);
    json_decref(chat);
    return 0;
}

static int cmd_rewrite(const char *conf_path, const char *route_name, const char *dialect,
                       const char *file, int explain, int bridge)
{
    tg_conf *c = NULL;
    tg_rules_set bare;
    const tg_rules_set *rules;
    const char *strip = "_";
    const char *name = NULL;
    const tg_route *route = NULL;
    if (dialect) {
        int d = tg_dialect_from_name(dialect);
        if (d < 0) {
            fprintf(stderr, "toolgate: unknown dialect '%s' (expected %s)\n", dialect,
                    tg_dialect_list());
            return 2;
        }
        tg_rules_preset((tg_dialect)d, &bare);
        rules = &bare;
    } else {
        c = load_or_report(conf_path);
        if (!c)
            return 1;
        const tg_route *r = tg_route_by_name(c, route_name);
        if (!r) {
            fprintf(stderr, "toolgate: no [route %s] in %s\n", route_name, conf_path);
            tg_conf_unref(c);
            return 2;
        }
        rules = &r->rules;
        route = r;
        strip = r->strip_prefix;
        name = r->name;
    }
    tg_buf raw = {0};
    if (read_request(file, &raw) || (bridge && bridge_request(&raw, bridge))) {
        tg_buf_free(&raw);
        tg_conf_unref(c);
        return 1;
    }
    /* The proxy's own path (raw parse, stages, spliced serialization) with
     * a cache like a worker's, so the bytes printed are the bytes sent. */
    tg_cache *cache = tg_cache_new(16, 64u << 20);
    tg_ctx ctx;
    tg_ctx_init(&ctx, name, rules, strip);
    ctx.cache = cache;
    if (explain)
        ctx.explain = json_array();
    tg_error err;
    json_t *body = NULL;
    tg_buf out = {0};
    int rc = 0;
    /* serve's steps: one parse, the shape checks, the stages, the dump */
    size_t tools_bytes = 0;
    body = tg_request_parse(raw.data ? raw.data : "", raw.len, cache, c ? c->max_depth : 0,
                            &ctx.tools_hash, &tools_bytes, &err);
    ctx.stats.tools_bytes_in = tools_bytes;
    bool ok = body && !tg_validate_chat_request(body, c ? c->max_tools : 0, false, &err);
    if (ok && route)
        tg_route_rewrite_model(route, body);
    ok = ok && !tg_pipeline_request(body, &ctx, &err);
    if (ok)
        tg_request_dump(body, &ctx, &out);  /* an object: cannot fail */
    if (!ok) {
        char *e = tg_error_body(&err);
        fprintf(stderr, "toolgate: rejected (%d): %s\n", err.status, e);
        free(e);
        rc = 1;
    } else {
        puts(out.data);
        if (explain)
            print_explain(ctx.explain);
    }
    tg_buf_free(&out);
    tg_buf_free(&raw);
    tg_ctx_clear(&ctx);
    json_decref(body);
    tg_cache_free(cache);
    tg_conf_unref(c);
    return rc;
}

/* glibc keeps 7 freed chunks of each small size per thread (its tcache);
 * past that, malloc and free take the arena's slower bins. A worker with
 * 64 requests in flight frees and takes far more than 7 of a size between
 * two of its own (a request makes about 40 small allocations: jansson's
 * values, libmicrohttpd's response headers, the stream repair's buffers),
 * so _int_malloc alone was 3% of the small row's CPU. The count is a glibc
 * tunable, read at process start only: `serve` adds it to GLIBC_TUNABLES
 * and executes itself again, once (same pid), unless GLIBC_TUNABLES
 * already names it (the operator's value wins) or it runs under valgrind
 * (an exec would leave the tool). Callgrind, malloc's and free's
 * instructions a request at 64 connections: small 10,769 -> 7,411,
 * tool-call stream on a gemini route 27,708 -> 20,662 (docs/performance.md).
 * Nothing changes where the exec fails (no /proc): serve goes on untuned. */
#define TCACHE_TUNABLE "glibc.malloc.tcache_count="
#define TCACHE_COUNT "128"

static void tune_malloc(char **argv)
{
    const char *t = getenv("GLIBC_TUNABLES"), *pre = getenv("LD_PRELOAD");
    /* A setuid or file-capability binary (AT_SECURE) has glibc erase the
     * tunable, and the marker stops a second exec whatever happened to
     * the first one's tunable. */
    if ((t && strstr(t, TCACHE_TUNABLE)) || (pre && strstr(pre, "vgpreload")) ||
        getauxval(AT_SECURE) || getenv("TOOLGATE_MALLOC_TUNED"))
        return;
    char *old = t ? tg_strdup(t) : NULL;
    char v[2048];
    int n = snprintf(v, sizeof v, "%s%s" TCACHE_TUNABLE TCACHE_COUNT, old ? old : "",
                     old && *old ? ":" : "");
    char self[4096];  /* by its path: through /proc/self/exe its name would be "exe" */
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k > 0 && n > 0 && (size_t)n < sizeof v && !setenv("GLIBC_TUNABLES", v, 1) &&
        !setenv("TOOLGATE_MALLOC_TUNED", "1", 1)) {
        self[k] = '\0';
        execv(self, argv);
        if (old)  /* not executed: the environment as it was */
            setenv("GLIBC_TUNABLES", old, 1);
        else
            unsetenv("GLIBC_TUNABLES");
        unsetenv("TOOLGATE_MALLOC_TUNED");
    }
    free(old);
}

static int cmd_serve(const char *path, const char *listen)
{
    tg_conf *c = load_or_report(path);
    if (!c)
        return 1;
    tg_log_setup(c->log_level, c->access_log);
    int rc = tg_server_run(c, path, listen);
    tg_conf_unref(c);
    return rc;
}

int main(int argc, char **argv)
{
    const char *cmd = "serve";
    int i = 1;
    if (argc > 1 && argv[1][0] != '-') {
        cmd = argv[1];
        i = 2;
    }
    const char *conf = NULL, *listen = NULL, *route = NULL, *dialect = NULL, *file = NULL;
    int explain = 0, bridge = BRIDGE_NONE;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if ((!strcmp(a, "-c") || !strcmp(a, "--conf")) && next) {
            conf = next;
            i++;
        } else if (!strcmp(a, "--listen") && next) {
            listen = next;
            i++;
        } else if (!strcmp(a, "--route") && next) {
            route = next;
            i++;
        } else if (!strcmp(a, "--dialect") && next) {
            dialect = next;
            i++;
        } else if (!strcmp(a, "--explain")) {
            explain = 1;
        } else if (!strcmp(a, "--responses")) {
            bridge = BRIDGE_RESPONSES;
        } else if (!strcmp(a, "--messages")) {
            bridge = BRIDGE_MESSAGES;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            print_usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            cmd = "version";
        } else if (a[0] != '-' && !file) {
            file = a;
        } else {
            fprintf(stderr, "toolgate: unexpected argument '%s'\n", a);
            print_usage(stderr);
            return 2;
        }
    }
    if (!strcmp(cmd, "version")) {
        printf("toolgate %s\n", TG_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help")) {
        print_usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "check")) {
        if (!conf) {
            fprintf(stderr, "toolgate check: -c FILE is required\n");
            return 2;
        }
        return cmd_check(conf);
    }
    if (!strcmp(cmd, "rewrite")) {
        if (!dialect && !(conf && route)) {
            fprintf(stderr, "toolgate rewrite: give --dialect D, or -c FILE --route NAME\n");
            return 2;
        }
        return cmd_rewrite(conf, route, dialect, file, explain, bridge);
    }
    if (!strcmp(cmd, "serve")) {
        tune_malloc(argv);
        return cmd_serve(conf ? conf : "conf/toolgate.conf", listen);
    }
    fprintf(stderr, "toolgate: unknown command '%s'\n", cmd);
    print_usage(stderr);
    return 2;
}
