/* repair_text.c -- tool calls written into content (R12), and Groq's
 * failed_generation (R27), which is the same text.
 *
 * Models served without a matching tool-call parser write their calls as
 * text. What is recognised is one table, formats[] below: each row is the
 * tag that opens a block, the one that closes it (none: a marker, whose
 * calls end with the JSON value after it, see marker_end), the parser of
 * the block, and the public source its sample was taken from. Besides the
 * table, bare JSON {"name":..,"arguments":{..}} (or a list of them) is a
 * call only as the first thing in the message, so prose that quotes JSON is
 * safe; also wrapped the way the model saw its tools declared,
 * {"type":"function","function":{"name","parameters"}} (Llama 3.x through
 * vLLM, vllm-project/vllm#11786), or with "type" first beside the name; a
 * final brace the model left off is added.
 * A block becomes calls only when every call in it names a declared tool;
 * otherwise it stays text, untouched. XML parameter values are strings;
 * they are coerced by the declared schema (no schema or a string type: kept
 * as the string).
 *
 * The scanner is incremental (tg_text_scan): it decides text up to the
 * first byte that could start markup, holds the rest until the markup is
 * complete or ruled out, and at the end parses what it holds as far as it
 * goes (truncated markup, missing closers). A block that never closes is
 * held at most TEXT_HOLD_MAX bytes.
 */
#include "core/jsonfix.h"
#include "core/jsonio.h"
#include "repair/repair_base.h"
#include "repair/repair_text.h"
#include "sanitize/schema.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_HOLD_MAX (256u * 1024u)

typedef struct tag tag;
/* Parses one block, from its open tag (s) up to its closer or end (e), into
 * calls ({"name","arguments"} each); 0 when it gave calls. */
typedef int (*block_parser)(const tg_ctx *ctx, const tag *t, json_t *calls, const char *s,
                            const char *e);
struct tag {
    const char *open, *close;  /* close NULL: a marker, see marker_end */
    block_parser parse;
};

static void trim(const char **s, const char **e)
{
    while (*s < *e && isspace((unsigned char)**s))
        (*s)++;
    while (*e > *s && isspace((unsigned char)(*e)[-1]))
        (*e)--;
}

/* --- schema-guided coercion of XML parameter strings -------------------- */

static bool type_allows(const json_t *schema, const char *t)
{
    const json_t *type = json_object_get(schema, "type");
    if (json_is_string(type))
        return !strcmp(json_string_value(type), t);
    if (json_is_array(type)) {
        size_t i;
        json_t *x;
        json_array_foreach(type, i, x) if (json_is_string(x) && !strcmp(json_string_value(x), t))
            return true;
    }
    return false;
}

static bool fits(const json_t *schema, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return type_allows(schema, "object");
    case JSON_ARRAY: return type_allows(schema, "array");
    case JSON_INTEGER: return type_allows(schema, "integer") || type_allows(schema, "number");
    case JSON_REAL: return type_allows(schema, "number");
    case JSON_TRUE:
    case JSON_FALSE: return type_allows(schema, "boolean");
    case JSON_NULL: return type_allows(schema, "null");
    default: return false;
    }
}

static json_t *coerce_param(const json_t *prop, const char *v, size_t n)
{
    /* Qwen writes the value on its own line(s). */
    if (n && v[0] == '\n') {
        v++;
        n--;
    }
    if (n && v[n - 1] == '\n')
        n--;
    if (json_is_object(prop) && json_object_get(prop, "type") && !type_allows(prop, "string")) {
        const char *s = v, *e = v + n;
        trim(&s, &e);
        json_t *j = tg_json_load(s, (size_t)(e - s), JSON_DECODE_ANY, NULL);
        if (!j)
            j = tg_json_fix(s, (size_t)(e - s));
        if (j && fits(prop, j))
            return j;
        json_decref(j);
    }
    json_t *str = json_stringn(v, n);
    return str ? str : json_string("");
}

static const json_t *param_schema_peek(const tg_ctx *ctx, const char *name, const char *key)
{
    const json_t *tool = tg_rr_tool_peek(ctx, tg_schema_agent_name(ctx, name));
    const json_t *params = json_object_get(json_object_get(tool, "function"), "parameters");
    return json_object_get(json_object_get(params, "properties"), key);
}

/* --- block parsers; each appends {"name","arguments"} to calls ----------- */

/* The object n bytes of JSON text hold (new reference), or NULL: as
 * written, written twice (a JSON string holding the object: Kimi K2 on
 * sglang, MoonshotAI/Kimi-K2#26, as tool_calls' arguments are in
 * repair.c), or repaired by the lenient fix. */
static json_t *object_text(const char *s, size_t n)
{
    json_t *a = tg_json_load(s, n, JSON_DECODE_ANY, NULL);
    if (json_is_string(a)) {
        json_t *inner = tg_json_load(json_string_value(a), json_string_length(a), 0, NULL);
        json_decref(a);
        a = inner;
    } else if (!a) {
        a = tg_json_fix(s, n);
    }
    if (!json_is_object(a)) {
        json_decref(a);
        return NULL;
    }
    return a;
}

static void add_call(json_t *calls, const char *name, size_t nlen, json_t *args)
{
    json_t *c = json_object();
    json_object_set_new(c, "name", json_stringn(name, nlen));
    json_object_set_new(c, "arguments", args ? args : json_object());
    if (!json_string_value(json_object_get(c, "name")))
        json_object_set_new(c, "name", json_string(""));
    json_array_append_new(calls, c);
}

/* A JSON call object in any of the usual spellings. */
static int json_call(json_t *calls, const json_t *o)
{
    if (!json_is_object(o))
        return -1;
    /* {"type":"function",...} is a tool object; any other type (a schema,
     * {"type":"object",...}) is data that happens to carry a name */
    const char *type = json_string_value(json_object_get(o, "type"));
    if (type && strcmp(type, "function"))
        return -1;
    const json_t *fn = json_object_get(o, "function");
    const json_t *name = json_object_get(o, "name");
    if (!json_is_string(name))
        name = json_object_get(fn, "name");
    if (!json_is_string(name))
        name = json_is_string(fn) ? fn : json_object_get(o, "tool_name");
    if (!json_is_string(name) || !json_string_length(name))
        return -1;
    static const char *const keys[] = {"arguments", "parameters", "args", "input"};
    const json_t *a = NULL;
    for (size_t i = 0; i < 4 && !a; i++) {
        a = json_object_get(o, keys[i]);
        if (!a && json_is_object(fn))
            a = json_object_get(fn, keys[i]);
    }
    json_t *args = NULL;
    if (json_is_object(a)) {
        args = json_deep_copy(a);
    } else if (json_is_string(a)) {
        args = object_text(json_string_value(a), json_string_length(a));
        if (!args)
            return -1;
    } else if (a && !json_is_null(a)) {
        return -1;
    }
    add_call(calls, json_string_value(name), json_string_length(name), args);
    return 0;
}

static int parse_json_calls(json_t *calls, const char *s, const char *e)
{
    trim(&s, &e);
    if (s >= e)
        return -1;
    json_t *v = tg_json_load(s, (size_t)(e - s), 0, NULL);
    if (!v)
        v = tg_json_split_objects(s, (size_t)(e - s));
    if (!v)
        v = tg_json_fix(s, (size_t)(e - s));
    int rc = -1;
    if (json_is_object(v)) {
        rc = json_call(calls, v);
    } else if (json_is_array(v) && json_array_size(v)) {
        size_t i;
        json_t *x;
        rc = 0;
        json_array_foreach(v, i, x) if (json_call(calls, x))
            rc = -1;
    }
    json_decref(v);
    return rc;
}

/* Arguments written as JSON text between s and e: an object (new
 * reference; {} for nothing but blanks), repaired if need be, or NULL. */
static json_t *args_text(const char *s, const char *e)
{
    trim(&s, &e);
    if (s == e)
        return json_object();
    return object_text(s, (size_t)(e - s));
}

/* <parameter=K>v</parameter> ... (Qwen) or <parameter name="K">v</parameter>
 * (invoke); `eq` says which. Values end at </parameter>, at the next
 * <parameter or at the end (missing closers). */
static json_t *parse_params(const tg_ctx *ctx, const char *name, const char *s,
                            const char *e, bool eq)
{
    json_t *args = json_object();
    const char *open = eq ? "<parameter=" : "<parameter";
    for (const char *p = tg_rr_find(s, e, open); p; p = tg_rr_find(p, e, open)) {
        p += strlen(open);
        const char *gt = memchr(p, '>', (size_t)(e - p));
        if (!gt)
            break;
        const char *ks = p, *ke = gt;
        if (!eq) {  /* name="K" */
            const char *nm = tg_rr_find(p, gt, "name=");
            if (!nm)
                break;
            ks = nm + 5;
        }
        trim(&ks, &ke);
        if (ke > ks && (*ks == '"' || *ks == '\'')) {
            /* name="K": the key ends at its quote (DSML adds string="true") */
            const char *q = memchr(ks + 1, *ks, (size_t)(ke - ks - 1));
            ks++;
            if (q)
                ke = q;
        }
        if (ke > ks && (ke[-1] == '"' || ke[-1] == '\''))
            ke--;
        const char *vs = gt + 1;
        const char *ve = tg_rr_find(vs, e, "</parameter>");
        const char *next = tg_rr_find(vs, e, "<parameter");
        if (!ve || (next && next < ve))
            ve = next ? next : e;
        char key[256];
        size_t kl = (size_t)(ke - ks) < sizeof key - 1 ? (size_t)(ke - ks) : sizeof key - 1;
        memcpy(key, ks, kl);
        key[kl] = 0;
        if (kl)
            json_object_set_new(args, key, coerce_param(param_schema_peek(ctx, name, key), vs,
                                                        (size_t)(ve - vs)));
        p = ve;
    }
    return args;
}

/* <function=NAME> body </function>, one or more. */
static int parse_function_xml(const tg_ctx *ctx, json_t *calls, const char *s, const char *e)
{
    int n = 0;
    for (const char *p = tg_rr_find(s, e, "<function="); p; p = tg_rr_find(p, e, "<function=")) {
        p += 10;
        const char *ns = p;
        while (p < e && *p != '>' && *p != '{' && !isspace((unsigned char)*p) && *p != '<')
            p++;
        size_t nlen = (size_t)(p - ns);
        if (!nlen || nlen > 256)
            return -1;
        char name[260];
        memcpy(name, ns, nlen);
        name[nlen] = 0;
        if (p < e && *p == '>')
            p++;
        const char *be = tg_rr_find(p, e, "</function>");
        if (!be)
            be = e;
        json_t *args = tg_rr_find(p, be, "<parameter=") ? parse_params(ctx, name, p, be, true)
                                                   : args_text(p, be);
        if (!args)
            return -1;
        add_call(calls, name, nlen, args);
        n++;
        p = be;
    }
    return n ? 0 : -1;
}

/* <invoke name="NAME"> <parameter name="K">v</parameter> </invoke> */
static int parse_invoke(const tg_ctx *ctx, json_t *calls, const char *s, const char *e)
{
    int n = 0;
    for (const char *p = tg_rr_find(s, e, "<invoke"); p; p = tg_rr_find(p, e, "<invoke")) {
        p += 7;
        const char *gt = memchr(p, '>', (size_t)(e - p));
        const char *nm = gt ? tg_rr_find(p, gt, "name=") : NULL;
        if (!nm)
            return -1;
        const char *ns = nm + 5, *ne = gt;
        if (ne > ns && ne[-1] == '/')
            ne--;
        trim(&ns, &ne);
        if (ne > ns && (*ns == '"' || *ns == '\''))
            ns++;
        const char *q = ns;
        while (q < ne && *q != '"' && *q != '\'' && !isspace((unsigned char)*q))
            q++;
        ne = q;
        size_t nlen = (size_t)(ne - ns);
        if (!nlen || nlen > 256)
            return -1;
        char name[260];
        memcpy(name, ns, nlen);
        name[nlen] = 0;
        const char *be = tg_rr_find(gt, e, "</invoke>");
        if (!be)
            be = e;
        add_call(calls, name, nlen, parse_params(ctx, name, gt + 1, be, false));
        n++;
        p = be;
    }
    return n ? 0 : -1;
}

/* Kimi K2: <|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>
 * {json}<|tool_call_end|>, one or more (closers may be missing at the end). */
static int parse_kimi(json_t *calls, const char *s, const char *e)
{
    static const char begin[] = "<|tool_call_begin|>", argb[] = "<|tool_call_argument_begin|>",
                      end[] = "<|tool_call_end|>";
    int n = 0;
    for (const char *p = tg_rr_find(s, e, begin); p; p = tg_rr_find(p, e, begin)) {
        p += sizeof begin - 1;
        const char *a = tg_rr_find(p, e, argb);
        if (!a)
            return -1;
        const char *ns = p, *ne = a;
        trim(&ns, &ne);
        if ((size_t)(ne - ns) > 10 && !memcmp(ns, "functions.", 10))
            ns += 10;
        const char *colon = ne;
        while (colon > ns && isdigit((unsigned char)colon[-1]))
            colon--;
        if (colon > ns && colon < ne && colon[-1] == ':')
            ne = colon - 1;
        if (ne <= ns || ne - ns > 256)
            return -1;
        const char *as = a + sizeof argb - 1, *ae = tg_rr_find(as, e, end);
        if (!ae)
            ae = e;
        json_t *args = args_text(as, ae);
        if (!args)
            return -1;
        add_call(calls, ns, (size_t)(ne - ns), args);
        n++;
        p = ae;
    }
    return n ? 0 : -1;
}

/* What follows a marker ([TOOL_CALLS], <|tool_call|>): JSON calls, or
 * Mistral's NAME[ARGS]{json}. */
static int parse_marked(json_t *calls, const char *s, const char *e)
{
    trim(&s, &e);
    if (s < e && (*s == '{' || *s == '['))
        return parse_json_calls(calls, s, e);
    const char *args = tg_rr_find(s, e, "[ARGS]");
    if (!args || args == s || args - s > 256)
        return -1;
    json_t *a = args_text(args + 6, e);
    if (!a)
        return -1;
    const char *ne = args;
    trim(&s, &ne);
    add_call(calls, s, (size_t)(ne - s), a);
    return 0;
}

/* GLM-4.5/4.6/4.7 inside <tool_call>: NAME, then <arg_key>K</arg_key>
 * <arg_value>V</arg_value> pairs (values coerced by the schema, as XML
 * parameters are). A bare NAME is a call without arguments. */
static int parse_glm(const tg_ctx *ctx, json_t *calls, const char *s, const char *e)
{
    const char *ne = s;
    while (ne < e && *ne != '<' && *ne != '\n' && *ne != '{')
        ne++;
    const char *ns = s, *nend = ne;
    trim(&ns, &nend);
    size_t nlen = (size_t)(nend - ns);
    if (!nlen || nlen > 256)
        return -1;
    for (const char *q = ns; q < nend; q++)
        if (isspace((unsigned char)*q))
            return -1;  /* prose, not a name */
    char name[260];
    memcpy(name, ns, nlen);
    name[nlen] = 0;
    json_t *args = json_object();
    const char *p = ne;
    for (const char *k = tg_rr_find(p, e, "<arg_key>"); k; k = tg_rr_find(p, e, "<arg_key>")) {
        const char *ks = k + 9, *ke = tg_rr_find(ks, e, "</arg_key>");
        if (!ke)
            break;
        const char *v = tg_rr_find(ke, e, "<arg_value>");
        if (!v)
            break;
        const char *vs = v + 11, *ve = tg_rr_find(vs, e, "</arg_value>");
        if (!ve)
            ve = e;
        trim(&ks, &ke);
        char key[256];
        size_t kl = (size_t)(ke - ks) < sizeof key - 1 ? (size_t)(ke - ks) : sizeof key - 1;
        memcpy(key, ks, kl);
        key[kl] = 0;
        if (kl)
            json_object_set_new(args, key, coerce_param(param_schema_peek(ctx, name, key), vs,
                                                        (size_t)(ve - vs)));
        p = ve;
    }
    if (!json_object_size(args)) {  /* JSON arguments after the name (GLM-4 0414) */
        const char *a = ne, *ae = e;
        trim(&a, &ae);
        if (a < ae && *a == '{') {
            json_decref(args);
            args = args_text(a, ae);
            if (!args)
                return -1;
        } else if (a < ae && !tg_rr_find(a, ae, "<arg_key>")) {
            json_decref(args);
            return -1;  /* something else follows the name */
        }
    }
    add_call(calls, name, nlen, args);
    return 0;
}

/* GLM's argument markup written into a call's name by a server whose GLM
 * parser stopped early: "read<arg_key>filePath</arg_key><arg_value>/a
 * </arg_value>" with arguments "{}" (zai-org/GLM-5#84). When the name
 * before the markup is declared, the call takes it, and the pairs join its
 * arguments (those already there win). 0 when it changed fn. */
int tg_rr_name_markup(const tg_ctx *ctx, json_t *fn)
{
    const char *n = json_string_value(json_object_get(fn, "name"));
    if (!n || !strstr(n, "<arg_key>") || tg_rr_declared(ctx, n))
        return -1;
    json_t *got = json_array();
    int rc = parse_glm(ctx, got, n, n + strlen(n));
    json_t *c = json_array_get(got, 0);
    const char *name = json_string_value(json_object_get(c, "name"));
    if (rc || !name || !tg_rr_declared(ctx, name)) {
        json_decref(got);
        return -1;
    }
    json_t *args = json_object_get(c, "arguments");
    json_t *a = json_object_get(fn, "arguments");
    json_t *had = json_is_string(a) ? tg_json_load(json_string_value(a), json_string_length(a), 0, NULL)
                                    : json_incref(a);
    if (json_is_object(had))
        json_object_update(args, had);
    json_decref(had);
    char *s = tg_json_dumps(args);
    json_object_set_new(fn, "arguments", json_string(s ? s : "{}"));
    free(s);
    json_object_set(fn, "name", json_object_get(c, "name"));
    json_decref(got);
    return 0;
}

/* The inside of a <tool_call>/<tools>/<function_calls> block. */
static int parse_body(const tg_ctx *ctx, json_t *calls, const char *s, const char *e)
{
    const char *t = s, *te = e;
    trim(&t, &te);
    if (t < te && (*t == '{' || *t == '['))
        return parse_json_calls(calls, t, te);
    if (tg_rr_find(t, te, "<function="))
        return parse_function_xml(ctx, calls, t, te);
    if (tg_rr_find(t, te, "<invoke"))
        return parse_invoke(ctx, calls, t, te);
    return parse_glm(ctx, calls, t, te);
}

/* DeepSeek's call tokens (fullwidth bars, U+2581 for spaces):
 *   V3, R1:     <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{json}\n```<｜tool▁call▁end｜>
 *   V3.1, V3.2: <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>
 * one or more, inside <｜tool▁calls▁begin｜>..<｜tool▁calls▁end｜> or not.
 * Told apart by what follows the separator: a JSON object (V3.1), or a
 * name and fenced JSON (V3). */
#define DS_CALL_BEGIN "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_CALL_END "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DS_SEP "<\xef\xbd\x9ctool\xe2\x96\x81" "sep\xef\xbd\x9c>"
#define DS_CALLS_BEGIN "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_CALLS_END "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DSML "\xef\xbd\x9c" "DSML\xef\xbd\x9c"

static int deepseek_call(json_t *calls, const char *p, const char *sep, const char *ce)
{
    const char *bs = p, *be = sep;
    trim(&bs, &be);
    const char *a = sep + sizeof DS_SEP - 1, *ae = ce;
    trim(&a, &ae);
    json_t *args;
    if (a < ae && *a == '{') {  /* V3.1: the name before the separator */
        if (be == bs || be - bs > 256)
            return -1;
        args = args_text(a, ae);
        if (!args)
            return -1;
        add_call(calls, bs, (size_t)(be - bs), args);
        return 0;
    }
    /* V3: the type before the separator, NAME then fenced JSON after it */
    const char *ns = a, *ne = a;
    while (ne < ae && *ne != '\n' && *ne != '`' && !isspace((unsigned char)*ne))
        ne++;
    if (ne == ns || ne - ns > 256)
        return -1;
    const char *js = ne, *je = ae;
    const char *fence = tg_rr_find(js, je, "```");
    if (fence) {
        js = fence + 3;
        while (js < je && *js != '\n' && !isspace((unsigned char)*js))
            js++;  /* the fence's language, "json" */
        const char *close = tg_rr_find(js, je, "```");
        if (close)
            je = close;
    }
    args = args_text(js, je);
    if (!args)
        return -1;
    add_call(calls, ns, (size_t)(ne - ns), args);
    return 0;
}

static int blk_deepseek(const tg_ctx *ctx, const tag *t, json_t *calls, const char *s,
                        const char *e)
{
    int n = 0;
    for (const char *p = tg_rr_find(s, e, DS_CALL_BEGIN); p; p = tg_rr_find(p, e, DS_CALL_BEGIN)) {
        p += sizeof DS_CALL_BEGIN - 1;
        const char *ce = tg_rr_find(p, e, DS_CALL_END);
        if (!ce)
            ce = e;
        const char *sep = tg_rr_find(p, ce, DS_SEP);
        if (!sep || deepseek_call(calls, p, sep, ce))
            return -1;
        n++;
        p = ce;
    }
    return n ? 0 : -1;
}

/* DeepSeek V3.2's DSML: <｜DSML｜function_calls><｜DSML｜invoke name="N">
 * <｜DSML｜parameter name="K" string="true">V</｜DSML｜parameter>...: the
 * invoke form with a prefix in every tag, parsed without it. */
static int blk_dsml(const tg_ctx *ctx, const tag *t, json_t *calls, const char *s,
                    const char *e)
{
    tg_buf plain = {0};
    const char *p = s;
    for (const char *d = tg_rr_find(p, e, DSML); d; d = tg_rr_find(p, e, DSML)) {
        tg_buf_append(&plain, p, (size_t)(d - p));
        p = d + sizeof DSML - 1;
    }
    tg_buf_append(&plain, p, (size_t)(e - p));
    int rc = plain.len ? parse_invoke(ctx, calls, plain.data, plain.data + plain.len) : -1;
    tg_buf_free(&plain);
    return rc;
}

/* gpt-oss's harmony format: <|channel|>commentary to=functions.NAME
 * <|constrain|>json<|message|>{json}<|call|> (also with the recipient in
 * the header, <|start|>assistant to=functions.NAME<|channel|>commentary
 * json<|message|>...). */
static int blk_harmony(const tg_ctx *ctx, const tag *t, json_t *calls, const char *s,
                       const char *e)
{
    const char *msg = tg_rr_find(s, e, "<|message|>");
    const char *to = tg_rr_find(s, msg ? msg : e, "to=");
    if (!msg || !to)
        return -1;
    const char *ns = to + 3;
    if ((size_t)(msg - ns) > 10 && !memcmp(ns, "functions.", 10))
        ns += 10;
    const char *ne = ns;
    while (ne < msg && (isalnum((unsigned char)*ne) || *ne == '_' || *ne == '-' || *ne == '.'))
        ne++;
    if (ne == ns || ne - ns > 256)
        return -1;
    json_t *args = args_text(msg + 11, e);
    if (!args)
        return -1;
    add_call(calls, ns, (size_t)(ne - ns), args);
    return 0;
}

/* Pythonic calls: NAME(key=value, ...) or Gemma 4's NAME(key: value, ...),
 * one or several in [..., ...], the values Python or JSON literals:
 * vllm pythonic_tool_parser.py (Llama 3.2/4, vllm-project/vllm#22917), LFM2
 * (lmstudio-ai/lmstudio-bug-tracker#1979), Gemma 4's call:NAME(...)
 * (NousResearch/hermes-agent#7449). */
#define PY_NAME_MAX 256

static const char *py_space(const char *p, const char *e)
{
    while (p < e && isspace((unsigned char)*p))
        p++;
    return p;
}

/* The end of one value: the first ',' or ')' (or ']' closing the list)
 * outside strings and brackets; NULL when the text ends first. */
static const char *py_value_end(const char *p, const char *e)
{
    int depth = 0;
    for (; p < e; p++) {
        if (*p == '"' || *p == '\'') {
            char q = *p;
            for (p++; p < e && *p != q; p++)
                if (*p == '\\' && p + 1 < e)
                    p++;
            if (p >= e)
                return NULL;
        } else if (*p == '(' || *p == '[' || *p == '{') {
            depth++;
        } else if (*p == ')' || *p == ']' || *p == '}') {
            if (depth == 0)
                return p;
            depth--;
        } else if (*p == ',' && depth == 0) {
            return p;
        }
    }
    return NULL;
}

/* The ')' closing the '(' just before p, a stray ']' or '}' (no call), or
 * NULL when the text ends first. */
static const char *py_paren_end(const char *p, const char *e)
{
    for (;;) {
        const char *v = py_value_end(p, e);
        if (!v || *v != ',')
            return v;
        p = v + 1;
    }
}

static const char *py_name_end(const char *p, const char *e)
{
    const char *n = p;
    if (n < e && (isalpha((unsigned char)*n) || *n == '_'))
        while (n < e && (isalnum((unsigned char)*n) || *n == '_' || *n == '-' || *n == '.') &&
               n - p < PY_NAME_MAX)
            n++;
    return n;
}

/* Gemma 4 quotes strings with a token, <|"|>text<|"|> (its own form,
 * call:NAME{key:<|"|>v<|"|>}, waybarrios/vllm-mlx#274): a value holding
 * it is read with each quoted run as a JSON string. New reference or NULL. */
#define GQ "<|\"|>"
static json_t *gemma_value(const char *s, const char *e)
{
    tg_buf b = {0};
    const char *p = s;
    for (const char *q = tg_rr_find(p, e, GQ); q; q = tg_rr_find(p, e, GQ)) {
        const char *c = tg_rr_find(q + 5, e, GQ);
        if (!c)
            break;
        tg_buf_append(&b, p, (size_t)(q - p));
        json_t *str = json_stringn(q + 5, (size_t)(c - q - 5));
        char *enc = str ? json_dumps(str, JSON_ENCODE_ANY) : NULL;
        if (enc)
            tg_buf_puts(&b, enc);
        free(enc);
        json_decref(str);
        p = c + 5;
    }
    tg_buf_append(&b, p, (size_t)(e - p));
    json_t *v = b.len ? tg_json_load(b.data, b.len, JSON_DECODE_ANY, NULL) : NULL;
    if (!v && b.len)
        v = tg_json_fix(b.data, b.len);
    tg_buf_free(&b);
    return v;
}

/* One NAME(args) at p (Gemma 4 also call:NAME{args}); *end after its
 * closer. 0 when it gave a call. */
static int py_call(json_t *calls, const char *p, const char *e, const char **end)
{
    bool gemma = e - p > 5 && !memcmp(p, "call:", 5);
    if (gemma)
        p += 5;
    const char *ne = py_name_end(p, e);
    if (ne == p)
        return -1;
    const char *q = py_space(ne, e);
    char close = q < e && *q == '(' ? ')' : gemma && q < e && *q == '{' ? '}' : 0;
    if (!close)
        return -1;
    json_t *args = json_object();
    q = py_space(q + 1, e);
    while (q < e && *q != close) {
        const char *ke = py_name_end(q, e);
        const char *sep = py_space(ke, e);
        if (ke == q || sep >= e || (*sep != '=' && *sep != ':'))
            break;
        const char *vs = py_space(sep + 1, e);
        const char *ve = py_value_end(vs, e);
        if (!ve || (*ve != ',' && *ve != close))
            break;
        const char *vt = ve;
        while (vt > vs && isspace((unsigned char)vt[-1]))
            vt--;
        json_t *v = tg_rr_find(vs, vt, GQ) ? gemma_value(vs, vt)
                                           : tg_json_load(vs, (size_t)(vt - vs), JSON_DECODE_ANY, NULL);
        if (!v)
            v = tg_json_fix(vs, (size_t)(vt - vs));
        if (!v)
            break;
        json_object_setn_new(args, q, (size_t)(ke - q), v);
        q = py_space(ve + (*ve == ','), e);
    }
    if (q >= e || *q != close) {
        json_decref(args);
        return -1;
    }
    add_call(calls, p, (size_t)(ne - p), args);
    *end = q + 1;
    return 0;
}

/* A list of calls, or one call, filling s..e (blanks around allowed). */
static int parse_pythonic(json_t *calls, const char *s, const char *e)
{
    trim(&s, &e);
    bool list = s < e && *s == '[';
    if (list) {
        if (e[-1] != ']')
            return -1;
        s++;
        e--;
    }
    const char *p = py_space(s, e);
    while (p < e) {
        if (py_call(calls, p, e, &p))
            return -1;
        p = py_space(p, e);
        if (p < e && *p == ',' && list)
            p = py_space(p + 1, e);
        else if (p < e)
            return -1;
    }
    return json_array_size(calls) ? 0 : -1;
}

static int blk_pythonic(const tg_ctx *ctx, const tag *t, json_t *calls, const char *s,
                        const char *e)
{
    return parse_pythonic(calls, s + strlen(t->open), e);
}

static int blk_pylist(const tg_ctx *ctx, const tag *t, json_t *calls, const char *s,
                      const char *e)
{
    return parse_pythonic(calls, s, e);
}

/* A pythonic list of calls at the start of a line, outside any tag (vLLM
 * serving Llama 3.2/4 or LFM2 without its parser, vllm-project/vllm#22917):
 * "[NAME(" opens it. 1: a complete list, *end after it; 0: still coming;
 * -1: not one. Whether its calls are ours is parse_block's question. */
static int pythonic_list_at(const char *p, const char *e, const char **end)
{
    const char *q = py_space(p + 1, e);
    const char *ne = py_name_end(q, e);
    if (ne == e || (ne > q && py_space(ne, e) == e))
        return 0;
    if (ne == q || *py_space(ne, e) != '(')
        return -1;
    for (const char *r = ne; r < e;) {  /* calls, commas, up to the ']' */
        r = py_space(r, e);
        if (r < e && *r == '(') {
            const char *c = py_paren_end(r + 1, e);
            if (!c)
                return 0;
            if (*c != ')')
                return -1;
            r = c + 1;
        } else if (r < e && *r == ']') {
            *end = r + 1;
            return 1;
        } else if (r < e && (*r == ',' || isalpha((unsigned char)*r) || *r == '_')) {
            r = *r == ',' ? r + 1 : py_name_end(r, e);
        } else if (r < e) {
            return -1;
        }
    }
    return 0;
}

/* The table's other parsers, over the parsers above. */
static int blk_body(const tg_ctx *ctx, const tag *t, json_t *calls, const char *s,
                    const char *e)
{
    return parse_body(ctx, calls, s + strlen(t->open), e);
}

static int blk_function(const tg_ctx *ctx, const tag *t, json_t *calls, const char *s,
                        const char *e)
{
    return parse_function_xml(ctx, calls, s, e);
}

static int blk_invoke(const tg_ctx *ctx, const tag *t, json_t *calls, const char *s,
                      const char *e)
{
    return parse_invoke(ctx, calls, s, e);
}

static int blk_kimi(const tg_ctx *ctx, const tag *t, json_t *calls, const char *s,
                    const char *e)
{
    return parse_kimi(calls, s, e);
}

static int blk_marked(const tg_ctx *ctx, const tag *t, json_t *calls, const char *s,
                      const char *e)
{
    return parse_marked(calls, s + strlen(t->open), e);
}

/* The formats. Samples (and the servers' own parsers) are at the sources
 * named; each row has a vector in test/vectors/repair/R12-*.json, whole and
 * streamed. Order matters only where one open tag starts another. */
static const tag formats[] = {
    /* Hermes, Qwen 2.5/3 JSON; Qwen3-Coder XML; GLM-4.5 <arg_key> pairs:
     * vllm/entrypoints/openai/tool_parsers/{hermes,qwen3coder,glm4_moe}_tool_parser.py */
    {"<tool_call>", "</tool_call>", blk_body},
    /* Jamba and MiniMax-M1 (JSON list or lines): {jamba,minimax}_tool_parser.py */
    {"<tool_calls>", "</tool_calls>", blk_body},
    {"<tools>", "</tools>", blk_body},
    /* Claude-style XML written as text: openclaw/openclaw#44959 */
    {"<function_calls>", "</function_calls>", blk_body},
    /* MiniMax-M2: minimax_m2_tool_parser.py; Seed-OSS: seed_oss_tool_parser.py */
    {"<minimax:tool_call>", "</minimax:tool_call>", blk_body},
    {"<seed:tool_call>", "</seed:tool_call>", blk_body},
    /* Qwen3-Coder bare, Llama 3.1 <function=NAME>{json} (Groq's failed_generation) */
    {"<function=", "</function>", blk_function},
    {"<invoke", "</invoke>", blk_invoke},
    /* Kimi K2: kimi_k2_tool_parser.py, moonshotai/Kimi-K2-Instruct docs/tool_call_guidance.md */
    {"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", blk_kimi},
    {"<|tool_call_begin|>", "<|tool_call_end|>", blk_kimi},
    /* DeepSeek V3/R1 and V3.1/V3.2: deepseekv3_tool_parser.py,
     * deepseekv31_tool_parser.py; google/adk-python#5654, sgl-project/sglang#17320 */
    {DS_CALLS_BEGIN, DS_CALLS_END, blk_deepseek},
    {DS_CALL_BEGIN, DS_CALL_END, blk_deepseek},
    /* DeepSeek V3.2 DSML: sglang/srt/function_call/deepseekv32_detector.py */
    {"<" DSML "function_calls>", "</" DSML "function_calls>", blk_dsml},
    /* gpt-oss harmony: https://cookbook.openai.com/articles/openai-harmony,
     * vllm openai_tool_parser.py */
    {"<|start|>assistant<|channel|>commentary to=", "<|call|>", blk_harmony},
    {"<|channel|>commentary to=", "<|call|>", blk_harmony},
    {"<|start|>assistant to=", "<|call|>", blk_harmony},
    /* Mistral [TOOL_CALLS][{json}] (tokenizer up to v3) and
     * [TOOL_CALLS]NAME[ARGS]{json} (v11 on): mistral_tool_parser.py */
    {"[TOOL_CALLS]", NULL, blk_marked},
    /* Granite 3.x: granite_tool_parser.py */
    {"<|tool_call|>", NULL, blk_marked},
    /* Llama 3.1-3.3 custom tools after <|python_tag|>: llama_tool_parser.py,
     * the model card's "JSON based tool calling" */
    {"<|python_tag|>", NULL, blk_marked},
    /* Llama 4's JSON tool calls between <|python_start|> and <|python_end|>
     * (vllm-project/vllm#16214) */
    {"<|python_start|>", "<|python_end|>", blk_body},
    /* InternLM2 / Intern-S1: <|action_start|><|plugin|>\n{json}<|action_end|>
     * (sgl-project/sglang#14866, internlm_detector.py) */
    {"<|action_start|><|plugin|>", "<|action_end|>", blk_body},
    /* LFM2 (Liquid): a pythonic list between its tokens,
     * lmstudio-ai/lmstudio-bug-tracker#1979 */
    {"<|tool_call_start|>", "<|tool_call_end|>", blk_pythonic},
    /* Gemma 4: <|tool_call>call:NAME(key: value)<tool_call|>,
     * NousResearch/hermes-agent#7449 */
    {"<|tool_call>", "<tool_call|>", blk_pythonic},
    /* a call object in a fenced JSON block, as DeepSeek writes it without
     * its tool parser (deepseek-ai/DeepSeek-V2#84): a call only when the
     * block's JSON is a call naming a declared tool (parse_block) */
    {"```json", "```", blk_body},
    /* a model's end-of-message tokens that servers without the model's
     * parser leave in the text after a call (Llama 3.1 ends a tool call
     * with <|eom_id|>): never the agent's text, dropped */
    {"<|eom_id|>", NULL, NULL},
    {"<|eot_id|>", NULL, NULL},
};
#define NTAGS (sizeof formats / sizeof *formats)

/* Parse one block (from its open tag up to, not including, e) into calls;
 * 0 only when it gave calls that all name declared tools. */
static int parse_block(const tg_ctx *ctx, const tag *t, const char *s, const char *e,
                       json_t *calls)
{
    json_t *got = json_array();
    int rc = t->parse(ctx, t, got, s, e);
    if (rc == 0 && json_array_size(got) == 0)
        rc = -1;
    size_t i;
    json_t *c;
    json_array_foreach(got, i, c) if (!tg_rr_declared(ctx, json_string_value(json_object_get(c, "name"))))
        rc = -1;
    if (rc == 0)
        json_array_extend(calls, got);
    json_decref(got);
    return rc;
}

/* --- bare JSON at the start of the message ------------------------------ */

/* Could the unfinished JSON at s still be a call? Decided on its first key
 * ("type": the OpenAI tool object, {"type":"function","function":{..}}). */
static bool json_call_possible(const char *s, const char *e)
{
    static const char *const keys[] = {"name", "function", "tool_name", "arguments", "parameters",
                                       "type"};
    const char *p = s;
    if (p < e && *p == '[') {
        p++;
        while (p < e && isspace((unsigned char)*p))
            p++;
    }
    if (p >= e)
        return true;
    if (*p++ != '{')
        return false;
    while (p < e && isspace((unsigned char)*p))
        p++;
    if (p >= e)
        return true;
    if (*p++ != '"')
        return false;
    const char *k = p;
    while (p < e && *p != '"')
        p++;
    size_t kl = (size_t)(p - k);
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (p < e ? (strlen(keys[i]) == kl && !memcmp(keys[i], k, kl))
                  : (strlen(keys[i]) >= kl && !memcmp(keys[i], k, kl)))
            return true;
    return false;
}

/* --- the scanner --------------------------------------------------------- */

/* Where the calls after a marker end: after the JSON value, or after
 * NAME[ARGS]{json}. NULL: not known yet (the text ends first); p itself:
 * what follows is no call. */
static const char *marker_end(const char *p, const char *e)
{
    const char *q = p;
    while (q < e && isspace((unsigned char)*q))
        q++;
    if (q == e)
        return NULL;
    if (*q == '{' || *q == '[')
        return tg_json_value_end(q, e);
    const char *n = q;
    while (n < e && (isalnum((unsigned char)*n) || *n == '_' || *n == '-' || *n == '.'))
        n++;
    if (n - q > 256 || n == q)
        return p;
    if (e - n < 6)
        return memcmp(n, "[ARGS]", (size_t)(e - n)) ? p : NULL;
    if (memcmp(n, "[ARGS]", 6))
        return p;
    n += 6;
    while (n < e && isspace((unsigned char)*n))
        n++;
    if (n == e)
        return NULL;
    return *n == '{' ? tg_json_value_end(n, e) : p;
}

/* The next byte that may open a tag: '<', or '[' of [TOOL_CALLS]. */
static const char *next_open(const char *p, const char *e)
{
    for (; p < e; p++)
        if (*p == '<' || *p == '[' || *p == '`')  /* the first bytes of formats[]' tags */
            return p;
    return NULL;
}

/* Which tag starts at p: 1 = complete open tag (*t set), 0 = could still be
 * one (the text ends first), -1 = no tag. */
static int tag_at(const char *p, const char *e, const tag **t)
{
    size_t avail = (size_t)(e - p);
    int partial = 0;
    for (size_t i = 0; i < NTAGS; i++) {
        size_t n = strlen(formats[i].open);
        if (avail < n) {
            if (!memcmp(p, formats[i].open, avail))
                partial = 1;
            continue;
        }
        if (memcmp(p, formats[i].open, n))
            continue;
        if (!strcmp(formats[i].open, "<invoke")) {  /* not "<invoked" */
            if (avail == n) {
                partial = 1;
                continue;
            }
            if (!isspace((unsigned char)p[n]) && p[n] != '>')
                continue;
        }
        *t = &formats[i];
        return 1;
    }
    return partial ? 0 : -1;
}

size_t tg_text_scan(const tg_ctx *ctx, const char *s, size_t n, bool final,
                    bool *at_start, tg_buf *text, json_t *calls)
{
    return tg_text_scan_markup(ctx, s, n, final, at_start, text, calls, NULL);
}

size_t tg_text_scan_markup(const tg_ctx *ctx, const char *s, size_t n, bool final,
                           bool *at_start, tg_buf *text, json_t *calls, tg_buf *markup)
{
    const char *p = s, *e = s + n;
    bool msg_start = *at_start;  /* s is the message's first byte */
    while (p < e) {
        if (*at_start) {
            const char *q = p;
            while (q < e && isspace((unsigned char)*q))
                q++;
            tg_buf_append(text, p, (size_t)(q - p));
            p = q;
            if (p == e)
                break;
            if (*p == '{' || *p == '[') {
                const char *je = tg_json_value_end(p, e);
                if (!je && !final && json_call_possible(p, e) &&
                    (size_t)(e - p) < TEXT_HOLD_MAX)
                    return (size_t)(p - s);  /* undecided: hold */
                if (!je && final)
                    je = e;
                *at_start = false;
                if (je && json_call_possible(p, je)) {
                    json_t *got = json_array();
                    int rc = parse_json_calls(got, p, je);
                    size_t i;
                    json_t *c;
                    json_array_foreach(got, i, c) if (!tg_rr_declared(ctx, json_string_value(json_object_get(c, "name"))))
                        rc = -1;
                    if (rc == 0 && json_array_size(got)) {
                        json_array_extend(calls, got);
                        json_decref(got);
                        if (markup)
                            tg_buf_append(markup, p, (size_t)(je - p));
                        p = je;
                        continue;
                    }
                    json_decref(got);
                }
            }
            *at_start = false;
        }
        const char *lt = next_open(p, e);
        if (!lt) {
            tg_buf_append(text, p, (size_t)(e - p));
            return n;
        }
        tg_buf_append(text, p, (size_t)(lt - p));
        p = lt;
        /* a line's start: after a newline, or the message's start; a list
         * still coming is held with its newline, so the next call sees it
         * at a line's start again */
        if (*p == '[' && (p > s ? p[-1] == '\n' : msg_start)) {
            static const tag pythonic = {"[", "]", blk_pylist};
            const char *le = NULL;
            int pk = pythonic_list_at(p, e, &le);
            if (pk == 0 && !final && (size_t)(e - p) < TEXT_HOLD_MAX) {
                if (p > s) {  /* the newline was the last byte given to text */
                    text->len--;
                    text->data[text->len] = '\0';
                    p--;
                } else {
                    *at_start = true;  /* still the message's start next time */
                }
                return (size_t)(p - s);  /* "[NAME(" ... still coming */
            }
            if (pk == 1 && parse_block(ctx, &pythonic, p, le, calls) == 0) {
                if (markup)
                    tg_buf_append(markup, p, (size_t)(le - p));
                p = le;
                continue;
            }
        }
        const tag *t = NULL;
        int k = tag_at(p, e, &t);
        if (k == 0 && !final)
            return (size_t)(p - s);
        if (k != 1) {
            tg_buf_append(text, p, 1);
            p++;
            continue;
        }
        if (!t->parse) {  /* an end token: dropped */
            if (markup)
                tg_buf_append(markup, p, strlen(t->open));
            p += strlen(t->open);
            continue;
        }
        const char *close, *be;
        if (t->close) {
            close = tg_rr_find(p + strlen(t->open), e, t->close);
            be = close ? close + strlen(t->close) : NULL;
        } else {
            const char *after = p + strlen(t->open);
            close = be = marker_end(after, e);
            if (close == after) {  /* no call follows: the marker is text */
                tg_buf_append(text, p, 1);
                p++;
                continue;
            }
        }
        if (!close) {
            if (!final && (size_t)(e - p) < TEXT_HOLD_MAX)
                return (size_t)(p - s);  /* the block is still coming */
            close = be = e;
        }
        if (parse_block(ctx, t, p, close, calls) == 0) {
            if (markup)
                tg_buf_append(markup, p, (size_t)(be - p));
            p = be;
            continue;
        }
        /* Not a call of ours: the block is text. Scan on after its '<'. */
        tg_buf_append(text, p, 1);
        p++;
    }
    return (size_t)(p - s);
}
