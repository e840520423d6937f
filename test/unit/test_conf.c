/* test_conf.c -- conf loading as data (every .conf file under test/vectors/conf
 * says what it expects in "; expect: ..." lines: "ok", or substrings that
 * must all appear in the FILE:LINE: messages), then the router and the
 * value parsers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"

#define VEC_DIR "test/vectors/conf"

static char *slurp(const char *path)
{
    tg_buf b = {0};
    if (tg_buf_read_file(&b, path)) {
        tg_buf_free(&b);
        return NULL;
    }
    return tg_buf_steal(&b, NULL);
}

static int check_vector(const char *path)
{
    char *text = slurp(path);
    if (!text) {
        print_error("cannot read %s\n", path);
        return 1;
    }
    tg_buf errs = {0};
    tg_conf *c = tg_conf_load_string(text, path, &errs);
    int bad = 0, expectations = 0;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (!strncmp(line, "; expect: ", 10)) {
            const char *want = line + 10;
            expectations++;
            if (!strcmp(want, "ok")) {
                if (!c) {
                    print_error("%s: expected ok, got:\n%s", path, errs.data);
                    bad = 1;
                }
            } else if (c) {
                print_error("%s: expected an error containing '%s', conf loaded\n", path, want);
                bad = 1;
            } else if (!errs.data || !strstr(errs.data, want)) {
                print_error("%s: expected '%s' in:\n%s", path, want, errs.data ? errs.data : "");
                bad = 1;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    if (!expectations) {
        print_error("%s: no '; expect:' line\n", path);
        bad = 1;
    }
    /* Every message names the file and a line. */
    if (!c && errs.data && strncmp(errs.data, path, strlen(path))) {
        print_error("%s: message does not start with FILE:LINE: %s", path, errs.data);
        bad = 1;
    }
    tg_conf_unref(c);
    tg_buf_free(&errs);
    free(text);
    return bad;
}

static void test_conf_vectors(void **state)
{
    (void)state;
    setenv("TG_TEST_UPSTREAM", "http://127.0.0.1:9/v1", 1);
    unsetenv("TG_UNSET");
    unsetenv("TG_UNSET_KEY");
    DIR *d = opendir(VEC_DIR);
    assert_non_null(d);
    struct dirent *e;
    int n = 0, failed = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".conf"))
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", VEC_DIR, e->d_name);
        failed += check_vector(path);
        n++;
    }
    closedir(d);
    assert_true(n >= 20);
    assert_int_equal(failed, 0);
}

static tg_conf *load(const char *text)
{
    tg_buf errs = {0};
    tg_conf *c = tg_conf_load_string(text, "t.conf", &errs);
    if (!c)
        print_error("%s", errs.data);
    tg_buf_free(&errs);
    return c;
}

static void test_values_resolved(void **state)
{
    (void)state;
    tg_conf *c = load("[server]\nlisten = [::1]:8081\nmax_body = 2M\nclient_keys = a, b ,c\n"
                      "[route r]\nmodels = x\nprefix = p/\nupstream = http://h/v1/\n"
                      "idle_timeout = 1.5s\nconnect_timeout = 250ms\n");
    assert_non_null(c);
    assert_string_equal(c->listen_host, "::1");
    assert_int_equal(c->listen_port, 8081);
    assert_int_equal(c->max_body, 2u << 20);
    assert_string_equal(c->client_keys[0], "a");
    assert_string_equal(c->client_keys[1], "b");
    assert_string_equal(c->client_keys[2], "c");
    assert_null(c->client_keys[3]);
    assert_true(c->threads >= 1);
    /* the Security bounds, when the conf does not name them (docs/security.md) */
    assert_int_equal(c->max_event, 4u << 20);
    assert_int_equal(c->max_answer, 32u << 20);
    assert_int_equal(c->header_timeout_ms, 10000);
    const tg_route *r = &c->routes[0];
    assert_string_equal(r->prefix, "/p");
    assert_string_equal(r->upstream, "http://h/v1");
    assert_int_equal(r->idle_timeout_ms, 1500);
    assert_int_equal(r->connect_timeout_ms, 250);
    assert_null(r->api_key);
    assert_string_equal(r->strip_prefix, "_");
    tg_conf_unref(c);
}

static void test_env_expansion(void **state)
{
    (void)state;
    setenv("TG_T_KEY", "sk-123", 1);
    unsetenv("TG_T_NONE");
    tg_conf *c = load("[route r]\nmodels = ${TG_T_NONE:-m-*}\nupstream = http://h\n"
                      "api_key = ${TG_T_KEY}\n[route s]\nmodels = y\nupstream = http://h\n"
                      "api_key = ${TG_T_NONE}\n");
    assert_non_null(c);
    assert_string_equal(c->routes[0].models[0], "m-*");
    assert_string_equal(c->routes[0].api_key, "sk-123");
    assert_null(c->routes[1].api_key);  /* empty expansion = forward the client's key */
    tg_conf_unref(c);
}

static void test_router(void **state)
{
    (void)state;
    tg_conf *c = load("[route gem]\nmodels = gemini-*, google/*\nprefix = /gemini\nupstream = http://g\n"
                      "[route oai]\nmodels = gpt-*, *\nupstream = http://o\n"
                      "[route late]\nmodels = gemini-pro\nupstream = http://l\n"
                      "[route deep]\nprefix = /team/a\nupstream = http://d\n");
    assert_non_null(c);
    const char *rest;
    /* model globs, in file order: the first match wins */
    assert_string_equal(tg_route_by_model(c, "gemini-2.5-pro")->name, "gem");
    assert_string_equal(tg_route_by_model(c, "google/gemma")->name, "gem");
    assert_string_equal(tg_route_by_model(c, "gpt-4o")->name, "oai");
    assert_string_equal(tg_route_by_model(c, "gemini-pro")->name, "gem");
    assert_string_equal(tg_route_by_model(c, "anything")->name, "oai");
    /* prefixes match whole path segments only */
    assert_string_equal(tg_route_by_prefix(c, "/gemini/v1/chat/completions", &rest)->name, "gem");
    assert_string_equal(rest, "/v1/chat/completions");
    assert_null(tg_route_by_prefix(c, "/geminix/v1/chat/completions", &rest));
    assert_string_equal(rest, "/geminix/v1/chat/completions");
    assert_null(tg_route_by_prefix(c, "/v1/chat/completions", &rest));
    assert_string_equal(tg_route_by_prefix(c, "/team/a/v1/models", &rest)->name, "deep");
    assert_string_equal(rest, "/v1/models");
    assert_null(tg_route_by_prefix(c, "/team/ab/v1/models", &rest));
    assert_string_equal(tg_route_by_prefix(c, "/gemini", &rest)->name, "gem");
    assert_string_equal(rest, "");
    assert_string_equal(tg_route_by_name(c, "late")->name, "late");
    assert_null(tg_route_by_name(c, "nope"));
    tg_conf_unref(c);
}

static void test_no_model_match(void **state)
{
    (void)state;
    tg_conf *c = load("[route a]\nmodels = gpt-*\nupstream = http://o\n");
    assert_non_null(c);
    assert_null(tg_route_by_model(c, "claude-3"));
    tg_conf_unref(c);
}

/* The route stage's model edit: an alias is replaced, a routing prefix is
 * cut (the first listed that matches), anything else is left alone. */
static const char *rewritten(const tg_conf *c, const char *route, const char *model)
{
    static char out[128];
    json_t *body = json_pack("{s:s}", "model", model);
    tg_route_rewrite_model(tg_route_by_name(c, route), body);
    snprintf(out, sizeof out, "%s", json_string_value(json_object_get(body, "model")));
    json_decref(body);
    return out;
}

static void test_model_rewrite(void **state)
{
    (void)state;
    tg_conf *c = load("[route groq]\nmodels = groq/*, g/*\nstrip_model_prefix = groq/, g/\n"
                      "upstream = http://g\n"
                      "[route fast]\nmodels = fast\nupstream_model = llama-3.3-70b\n"
                      "strip_model_prefix = groq/\nupstream = http://f\n"
                      "[route plain]\nmodels = *\nupstream = http://p\n");
    assert_non_null(c);
    assert_string_equal(rewritten(c, "groq", "groq/llama-3.3-70b"), "llama-3.3-70b");
    assert_string_equal(rewritten(c, "groq", "g/openai/gpt-oss-120b"), "openai/gpt-oss-120b");
    assert_string_equal(rewritten(c, "groq", "llama-3.3-70b"), "llama-3.3-70b");
    assert_string_equal(rewritten(c, "groq", "groq/"), "groq/");  /* nothing would be left */
    assert_string_equal(rewritten(c, "fast", "fast"), "llama-3.3-70b");
    assert_string_equal(rewritten(c, "fast", "groq/x"), "llama-3.3-70b");  /* the alias wins */
    assert_string_equal(rewritten(c, "plain", "groq/x"), "groq/x");
    json_t *none = json_object();  /* a body without a model gets the alias only */
    assert_false(tg_route_rewrite_model(tg_route_by_name(c, "groq"), none));
    assert_true(tg_route_rewrite_model(tg_route_by_name(c, "fast"), none));
    json_decref(none);
    tg_conf_unref(c);
}

static void test_parsers(void **state)
{
    (void)state;
    size_t z;
    long ms;
    assert_int_equal(tg_parse_size("32M", &z), 0);
    assert_int_equal(z, 32u << 20);
    assert_int_equal(tg_parse_size("10kb", &z), 0);
    assert_int_equal(z, 10240);
    assert_int_equal(tg_parse_size("7", &z), 0);
    assert_int_equal(z, 7);
    assert_int_equal(tg_parse_size("x", &z), -1);
    assert_int_equal(tg_parse_size("5T", &z), -1);
    assert_int_equal(tg_parse_duration_ms("2m", &ms), 0);
    assert_int_equal(ms, 120000);
    assert_int_equal(tg_parse_duration_ms("15", &ms), 0);
    assert_int_equal(ms, 15000);
    assert_int_equal(tg_parse_duration_ms("-1s", &ms), -1);
    assert_int_equal(tg_parse_duration_ms("3 weeks", &ms), -1);
}

static void test_conf_refcount(void **state)
{
    (void)state;
    tg_conf *c = load("[route a]\nmodels = x\nupstream = http://o\n");
    assert_non_null(c);
    tg_conf *d = tg_conf_ref(c);
    assert_ptr_equal(c, d);
    tg_conf_unref(c);
    assert_string_equal(d->routes[0].name, "a");  /* still alive: one ref left */
    tg_conf_unref(d);
}

static void test_missing_file(void **state)
{
    (void)state;
    tg_buf errs = {0};
    assert_null(tg_conf_load("/nonexistent/toolgate.conf", &errs));
    assert_non_null(strstr(errs.data, "/nonexistent/toolgate.conf:0: cannot open"));
    tg_buf_free(&errs);
}

/* /v1/responses is bridged over chat on every dialect but passthrough,
 * unless the conf says otherwise. */
static void test_responses_default(void **state)
{
    (void)state;
    tg_conf *c = load("[route o]\nprefix = /o\nupstream = http://h\n"
                      "[route s]\nprefix = /s\nupstream = http://h\ndialect = openai-strict\n"
                      "[route g]\nprefix = /g\nupstream = http://h\ndialect = gemini\n"
                      "[route m]\nprefix = /m\nupstream = http://h\ndialect = mistral\nresponses = pass\n"
                      "[route b]\nprefix = /b\nupstream = http://h\nresponses = bridge\n"
                      "[route p]\nprefix = /p\nupstream = http://h\ndialect = passthrough\n");
    assert_non_null(c);
    assert_true(tg_route_bridges_responses(tg_route_by_name(c, "o")));
    assert_true(tg_route_bridges_responses(tg_route_by_name(c, "s")));
    assert_true(tg_route_bridges_responses(tg_route_by_name(c, "g")));
    assert_false(tg_route_bridges_responses(tg_route_by_name(c, "m")));
    assert_true(tg_route_bridges_responses(tg_route_by_name(c, "b")));
    assert_false(tg_route_bridges_responses(tg_route_by_name(c, "p")));
    tg_conf_unref(c);
}

/* The security keys: /metrics asks for a key by default once there are
 * client keys; metrics_auth without client keys and a body budget under
 * max_body are errors; upstream URLs are shown without userinfo and
 * query. */
static void test_security_keys(void **state)
{
    (void)state;
    const char *route = "[route o]\nprefix = /o\nupstream = http://u:pw@h:1/v1?key=sk\n";
    char text[512];
    snprintf(text, sizeof text, "[server]\nclient_keys = a, b\n%s", route);
    tg_conf *c = load(text);
    assert_non_null(c);
    assert_true(c->metrics_auth);
    assert_int_equal(c->max_body_memory, 256u << 20);
    assert_int_equal(c->max_conns_per_ip, 1024);
    assert_string_equal(c->routes[0].upstream_shown, "http://***@h:1/v1?***");
    tg_conf_unref(c);
    snprintf(text, sizeof text, "[server]\nclient_keys = a\nmetrics_auth = off\n"
             "forward_headers = x-a, x-b-*\nmax_conns_per_ip = 0\n%s", route);
    c = load(text);
    assert_non_null(c);
    assert_false(c->metrics_auth);
    assert_string_equal(c->forward_headers[1], "x-b-*");
    tg_conf_unref(c);
    tg_buf errs = {0};
    snprintf(text, sizeof text, "[server]\nmetrics_auth = on\n%s", route);
    assert_null(tg_conf_load_string(text, "t.conf", &errs));
    assert_non_null(strstr(errs.data, "metrics_auth = on needs client_keys"));
    tg_buf_reset(&errs);
    snprintf(text, sizeof text, "[server]\nmax_body = 8M\nmax_body_memory = 4M\n%s", route);
    assert_null(tg_conf_load_string(text, "t.conf", &errs));
    assert_non_null(strstr(errs.data, "max_body_memory"));
    tg_buf_free(&errs);
    static const char *const urls[][2] = {
        {"https://api.x.ai/v1", "https://api.x.ai/v1"},
        {"https://user:p@ss@h/v1/", "https://***@h/v1/"},
        {"http://h:8/v1?key=a&b=c", "http://h:8/v1?***"},
        {"http://h?k=1", "http://h?***"},
        {"http://h/p#frag", "http://h/p"},
    };
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        char *r = tg_url_redact(urls[i][0]);
        assert_string_equal(r, urls[i][1]);
        free(r);
    }
}

/* /v1/messages is bridged over chat on every dialect but anthropic and
 * passthrough (whose providers speak it), unless the conf says otherwise. */
static void test_messages_default(void **state)
{
    (void)state;
    tg_conf *c = load("[route o]\nprefix = /o\nupstream = http://h\n"
                      "[route g]\nprefix = /g\nupstream = http://h\ndialect = gemini\n"
                      "[route a]\nprefix = /a\nupstream = http://h\ndialect = anthropic\n"
                      "[route ab]\nprefix = /ab\nupstream = http://h\ndialect = anthropic\nmessages = bridge\n"
                      "[route m]\nprefix = /m\nupstream = http://h\ndialect = mistral\nmessages = pass\n"
                      "[route p]\nprefix = /p\nupstream = http://h\ndialect = passthrough\n");
    assert_non_null(c);
    assert_true(tg_route_bridges_messages(tg_route_by_name(c, "o")));
    assert_true(tg_route_bridges_messages(tg_route_by_name(c, "g")));
    assert_false(tg_route_bridges_messages(tg_route_by_name(c, "a")));
    assert_true(tg_route_bridges_messages(tg_route_by_name(c, "ab")));
    assert_false(tg_route_bridges_messages(tg_route_by_name(c, "m")));
    assert_false(tg_route_bridges_messages(tg_route_by_name(c, "p")));
    /* the two keys are independent */
    assert_true(tg_route_bridges_responses(tg_route_by_name(c, "m")));
    tg_conf_unref(c);
}

/* Gemini's API is bridged on every route unless it says gemini = pass;
 * a passed request goes to the native API's base, the upstream without
 * the OpenAI-compatible endpoint's tail. */
static void test_gemini_key(void **state)
{
    (void)state;
    tg_conf *c = load("[route o]\nprefix = /o\nupstream = http://h/v1\n"
                      "[route g]\nprefix = /g\nupstream = https://generativelanguage.googleapis.com/v1beta/openai\ndialect = gemini\ngemini = pass\n"
                      "[route a]\nprefix = /a\nupstream = http://h\ndialect = anthropic\n"
                      "[route p]\nprefix = /p\nupstream = http://h/v1\ndialect = passthrough\ngemini = bridge\n");
    assert_non_null(c);
    assert_true(tg_route_bridges_gemini(tg_route_by_name(c, "o")));
    assert_false(tg_route_bridges_gemini(tg_route_by_name(c, "g")));
    assert_true(tg_route_bridges_gemini(tg_route_by_name(c, "a")));
    assert_true(tg_route_bridges_gemini(tg_route_by_name(c, "p")));
    assert_true(tg_route_bridges_messages(tg_route_by_name(c, "g")));
    const char *const want[][2] = {{"g", "https://generativelanguage.googleapis.com"},
                                   {"o", "http://h"},
                                   {"a", "http://h"}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        tg_buf b = {0};
        tg_route_gemini_base(tg_route_by_name(c, want[i][0]), &b);
        assert_string_equal(b.data, want[i][1]);
        tg_buf_free(&b);
    }
    tg_conf_unref(c);
}

/* hosted_tools: drop by default, refuse when asked, nothing else. */
static void test_hosted_tools(void **state)
{
    (void)state;
    tg_conf *c = load("[route d]\nprefix = /d\nupstream = http://h\n"
                      "[route r]\nprefix = /r\nupstream = http://h\nhosted_tools = refuse\n"
                      "[route x]\nprefix = /x\nupstream = http://h\nhosted_tools = drop\n");
    assert_non_null(c);
    assert_false(tg_route_by_name(c, "d")->refuse_hosted);
    assert_true(tg_route_by_name(c, "r")->refuse_hosted);
    assert_false(tg_route_by_name(c, "x")->refuse_hosted);
    tg_conf_unref(c);
    tg_buf errs = {0};
    c = tg_conf_load_string("[route b]\nupstream = http://h\nhosted_tools = maybe\n", "t", &errs);
    assert_null(c);
    assert_non_null(strstr(errs.data, "hosted_tools: expected drop | refuse"));
    tg_buf_free(&errs);
}

/* One way to declare a rule switch (core/rules.h): every section takes the
 * same spellings in any case, and refuses the same way, naming the valid
 * names of the section (the whole list, its last name included). */
typedef struct switch_case {
    const char *key;         /* as written in [route NAME] */
    const char *section;     /* in the unknown-name error, or NULL for a plain key */
    const char *last_name;   /* the section table's last name */
} switch_case;

static bool switch_is_on(const tg_route *r, const char *key)
{
    if (!strcmp(key, "schema.items"))
        return r->rules.schema.flags & TG_SR_ITEMS;
    if (!strcmp(key, "messages.drop_nulls"))
        return r->rules.msg.flags & TG_MR_DROP_NULLS;
    if (!strcmp(key, "schema.flat_unions"))
        return (r->rules.schema.flags & TG_SR_FLAT_UNIONS) != 0;
    if (!strcmp(key, "messages.empty_turns"))
        return (r->rules.msg.flags & TG_MR_EMPTY_TURNS) != 0;
    if (!strcmp(key, "messages.effort_top"))  /* bit 36 */
        return (r->rules.msg.flags & TG_MR_EFFORT_TOP) != 0;
    if (!strcmp(key, "messages.tool_media"))  /* bit 38 */
        return (r->rules.msg.flags & TG_MR_TOOL_MEDIA) != 0;
    if (!strcmp(key, "repair.json_fix"))
        return r->rules.repair.flags & TG_RR_JSON_FIX;
    if (!strcmp(key, "repair.R12") || !strcmp(key, "text_tool_calls"))
        return r->rules.repair.text_tool_calls;
    if (!strcmp(key, "discovery_list_names"))
        return r->rules.disc.list_names;
    if (!strcmp(key, "discovery_wordvec"))
        return r->rules.disc.wordvec;
    fail_msg("no check for %s", key);
    return false;
}

/* The messages of a route whose fourth line is `line`, which must refuse
 * it with want among them (malloc'd). */
static char *refused(const char *line, const char *want)
{
    char text[512];
    snprintf(text, sizeof text, "[route r]\nprefix = /r\nupstream = http://h\n%s\n", line);
    tg_buf errs = {0};
    assert_null(tg_conf_load_string(text, "t.conf", &errs));
    if (!errs.data || !strstr(errs.data, want))
        fail_msg("want '%s' in %s", want, errs.data ? errs.data : "");
    return tg_buf_steal(&errs, NULL);
}

static void test_rule_switches(void **state)
{
    (void)state;
    static const switch_case keys[] = {
        {"schema.items", "schema", "max_bytes"},
        {"messages.drop_nulls", "messages", "pdf_text"},
        {"schema.flat_unions", "schema", "max_bytes"},      /* bit 32: the word is 64 bits */
        {"messages.empty_turns", "messages", "pdf_text"},
        {"messages.effort_top", "messages", "pdf_text"},
        {"messages.tool_media", "messages", "pdf_text"},
        {"repair.json_fix", "repair", "R12"},
        {"repair.R12", "repair", "R12"},
        {"text_tool_calls", NULL, NULL},
        {"discovery_list_names", NULL, NULL},
        {"discovery_wordvec", NULL, NULL},
    };
    static const struct {
        const char *v;
        bool on;
    } spellings[] = {
        {"on", true},   {"On", true},     {"ON", true},  {"true", true},  {"TRUE", true},
        {"yes", true},  {"Yes", true},    {"1", true},   {"off", false},  {"Off", false},
        {"false", false}, {"False", false}, {"no", false}, {"NO", false}, {"0", false},
    };
    char text[512], want[256];
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        for (size_t j = 0; j < sizeof spellings / sizeof *spellings; j++) {
            snprintf(text, sizeof text, "[route r]\nprefix = /r\nupstream = http://h\n"
                     "dialect = mistral\n%s = %s\n", keys[i].key, spellings[j].v);
            tg_conf *c = load(text);
            if (!c)
                fail_msg("%s = %s refused", keys[i].key, spellings[j].v);
            if (switch_is_on(&c->routes[0], keys[i].key) != spellings[j].on)
                fail_msg("%s = %s not applied", keys[i].key, spellings[j].v);
            tg_conf_unref(c);
        }
        snprintf(text, sizeof text, "%s = maybe", keys[i].key);
        snprintf(want, sizeof want, "t.conf:4: %s: expected on or off, got 'maybe'", keys[i].key);
        free(refused(text, want));
        if (!keys[i].section)
            continue;
        snprintf(text, sizeof text, "%s.bogus = on", keys[i].section);
        snprintf(want, sizeof want, "t.conf:4: unknown %s rule 'bogus' (known: ", keys[i].section);
        char *errs = refused(text, want);
        snprintf(want, sizeof want, ", %s)\n", keys[i].last_name);
        if (!strstr(errs, want))
            fail_msg("the list of %s names is cut: %s", keys[i].section, errs);
        free(errs);
    }
}

/* Keys that take one of a few words read them in any case too, and refuse
 * the same way, listing the words. */
static void test_choices_any_case(void **state)
{
    (void)state;
    tg_conf *c = load("[server]\nlog_level = Debug\n"
                      "[route r]\nprefix = /r\nupstream = http://h\nresponses = PASS\n"
                      "messages = Bridge\nhosted_tools = Refuse\ndiscovery = Auto\n"
                      "[route s]\nprefix = /s\nupstream = http://h\ndiscovery = ON\n");
    assert_non_null(c);
    assert_int_equal(c->log_level, TG_LOG_DEBUG);
    const tg_route *r = tg_route_by_name(c, "r");
    assert_int_equal(r->responses, 0);
    assert_int_equal(r->messages, 1);
    assert_true(r->refuse_hosted);
    assert_int_equal(r->rules.disc.mode, TG_DISC_AUTO);
    assert_int_equal(tg_route_by_name(c, "s")->rules.disc.mode, TG_DISC_ON);
    tg_conf_unref(c);
    free(refused("responses = bridged", "t.conf:4: responses: expected bridge | pass, got 'bridged'"));
    free(refused("hosted_tools = keep", "t.conf:4: hosted_tools: expected drop | refuse, got 'keep'"));
    free(refused("discovery = maybe", "t.conf:4: discovery: expected off | auto | on, got 'maybe'"));
}

/* docs/configuration.md lists the dialects by hand: it names every row
 * of core/dialect.h's table, in the table's order. */
static void test_readme_lists_dialects(void **state)
{
    (void)state;
    char *readme = slurp("docs/configuration.md");
    assert_non_null(readme);
    const char *at = strstr(readme, "\ndialect = ");
    assert_non_null(at);
    const char *end = strstr(at, "\nstrip_prefix");
    assert_non_null(end);
    for (int d = 0; d < TG_D_COUNT; d++) {
        const char *name = tg_dialect_name((tg_dialect)d), *hit = at;
        size_t n = strlen(name);
        /* the name as a word: "openai" is not found inside "openai-strict" */
        while ((hit = strstr(hit + 1, name)) && hit < end &&
               (hit[-1] != ' ' || (hit[n] != ' ' && hit[n] != '\n')))
            ;
        if (!hit || hit > end)
            fail_msg("docs/configuration.md.s dialect line lacks '%s' (or not in the table's order)", name);
        at = hit;
    }
    free(readme);
}

static void test_shipped_conf(void **state)
{
    (void)state;
    tg_buf errs = {0};
    tg_conf *c = tg_conf_load("conf/toolgate.conf", &errs);
    if (!c)
        print_error("%s", errs.data);
    assert_non_null(c);
    const char *want[] = {"openai", "gemini", "anthropic", "groq", "mistral", "deepseek", "xai",
                          "openrouter", "together", "fireworks", "cerebras", "ollama"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        assert_non_null(tg_route_by_name(c, want[i]));
    assert_string_equal(c->listen_host, "127.0.0.1");
    tg_conf_unref(c);
    tg_buf_free(&errs);
}

/* drop_params: a list, after the dialect's preset whatever the order of
 * the keys; empty is none. */
static void test_drop_params(void **state)
{
    (void)state;
    tg_conf *c = load("[route az]\nmodels = *\ndrop_params = prompt_cache_key, safety_identifier\n"
                      "upstream = http://a\ndialect = openai\n"
                      "[route none]\nprefix = /n\ndrop_params =\nupstream = http://n\n");
    assert_non_null(c);
    char **d = tg_route_by_name(c, "az")->rules.msg.drop;
    assert_non_null(d);
    assert_string_equal(d[0], "prompt_cache_key");
    assert_string_equal(d[1], "safety_identifier");
    assert_null(d[2]);
    assert_null(tg_route_by_name(c, "none")->rules.msg.drop);
    tg_conf_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conf_vectors),    cmocka_unit_test(test_values_resolved),
        cmocka_unit_test(test_env_expansion),   cmocka_unit_test(test_router),
        cmocka_unit_test(test_no_model_match),  cmocka_unit_test(test_parsers),
        cmocka_unit_test(test_conf_refcount),   cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_shipped_conf),    cmocka_unit_test(test_model_rewrite),
        cmocka_unit_test(test_drop_params),
        cmocka_unit_test(test_responses_default),
        cmocka_unit_test(test_messages_default),
        cmocka_unit_test(test_gemini_key),
        cmocka_unit_test(test_hosted_tools),
        cmocka_unit_test(test_security_keys),
        cmocka_unit_test(test_rule_switches),
        cmocka_unit_test(test_readme_lists_dialects),
        cmocka_unit_test(test_choices_any_case),
    };
    return cmocka_run_group_tests_name("conf", tests, NULL, NULL);
}
