/* gemini_request.c -- the Gemini bridge's request side (see gemini_api.h):
 * the path that names the model and the method, and a
 * GenerateContentRequest as a chat completions request, with the bridge
 * that will shape its answer (gemini_answer.c).
 *
 * Each content becomes chat messages: a "model" content's text
 * parts its content, its thought parts its reasoning_content, its
 * functionCall parts its tool_calls (args as the arguments' JSON text, a
 * part's thoughtSignature in the call's extra_content.google, where
 * Gemini's OpenAI-compatible endpoint reads it back); a "user" content's
 * functionResponse parts become tool messages, in order, before a user
 * message with the rest (and with the media of their own parts). Calls without an id get one from their place in
 * the history (gc_CONTENT_PART: the same every turn, since the agent sends
 * the same history), and a response without one answers the first
 * unanswered call of its name, as Gemini pairs them. Gemini's tool
 * schemas (an OpenAPI subset with upper-case types) become JSON Schema;
 * parametersJsonSchema already is. toolConfig and generationConfig take
 * their chat spellings; what has none, and what only Google runs, is
 * dropped and listed.
 */
#include "bridge/gemini_api.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/bridge.h"
#include "bridge/gemini_api_int.h"
#include "core/alloc.h"
#include "core/jsonio.h"

/* What the request conversion reads and records besides the body. */
typedef struct conv {
    const tg_bridge_opts *o;
    json_t *dropped;       /* {kind: [name]} */
    json_t *pending;       /* [[name, id]] calls not answered yet */
} conv;

/* ---- the path ------------------------------------------------------------- */

static tg_gem_method method_of(const char *m)
{
    return !strcmp(m, "generateContent")         ? TG_GEM_GENERATE
           : !strcmp(m, "streamGenerateContent") ? TG_GEM_STREAM
           : !strcmp(m, "countTokens")           ? TG_GEM_COUNT
                                                 : TG_GEM_OTHER;
}

tg_gem_method tg_gemini_path(const char *rest, bool v1_models, char *model, size_t cap)
{
    const char *p;
    if (cap)
        model[0] = '\0';
    if (!strncmp(rest, "/v1beta/models", 14))
        p = rest + 14;
    else if (!strncmp(rest, "/v1/models", 10) && (v1_models || strchr(rest + 10, ':')))
        p = rest + 10;
    else
        return TG_GEM_NONE;
    if (!*p || !strcmp(p, "/"))
        return TG_GEM_LIST;
    if (*p != '/' || !p[1])
        return TG_GEM_NONE;
    p++;
    const char *colon = strchr(p, ':');
    size_t n = colon ? (size_t)(colon - p) : strlen(p);
    if (!n || memchr(p, '/', n))
        return TG_GEM_NONE;
    snprintf(model, cap, "%.*s", (int)n, p);
    return colon ? method_of(colon + 1) : TG_GEM_MODEL;
}

/* ---- request: parts ------------------------------------------------------- */

static int bad(tg_error *err, const char *param, const char *what)
{
    return tg_bridge_bad(err, param, "%s", what);
}

/* The base64 text of inline data, decoded (text documents); false when
 * it is not base64. */
static bool base64_decode(const char *s, size_t n, tg_buf *out)
{
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i], v;
        if (c >= 'A' && c <= 'Z')
            v = c - 'A';
        else if (c >= 'a' && c <= 'z')
            v = c - 'a' + 26;
        else if (c >= '0' && c <= '9')
            v = c - '0' + 52;
        else if (c == '+' || c == '-')
            v = 62;
        else if (c == '/' || c == '_')
            v = 63;
        else if (c == '=' || c == '\n' || c == '\r')
            continue;
        else
            return false;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            char b = (char)((acc >> bits) & 0xff);
            tg_buf_append(out, &b, 1);
        }
    }
    return true;
}

static json_t *data_uri(const char *mime, const char *data)
{
    tg_buf u = {0};
    tg_buf_printf(&u, "data:%s;base64,%s", mime, data);
    json_t *s = json_stringn(u.data, u.len);
    tg_buf_free(&u);
    return s;
}

/* inlineData {mimeType, data} as a chat content part, in the form chat
 * has for its kind: images as image_url, wav/mp3 as input_audio, PDF as
 * a file part, text as text; NULL (dropped and said) for the rest. */
static json_t *inline_part(const json_t *d, conv *cv)
{
    const char *mime = json_string_value(json_object_get(d, "mimeType"));
    const char *data = json_string_value(json_object_get(d, "data"));
    if (!mime || !data)
        return NULL;
    if (!strncmp(mime, "image/", 6))
        return json_pack("{s:s, s:{s:o}}", "type", "image_url", "image_url", "url",
                         data_uri(mime, data));
    if (!strcmp(mime, "audio/wav") || !strcmp(mime, "audio/x-wav") || !strcmp(mime, "audio/mp3") ||
        !strcmp(mime, "audio/mpeg"))
        return json_pack("{s:s, s:{s:s, s:s}}", "type", "input_audio", "input_audio", "data", data,
                         "format", strstr(mime, "wav") ? "wav" : "mp3");
    if (!strcmp(mime, "application/pdf"))
        return json_pack("{s:s, s:{s:s, s:o}}", "type", "file", "file", "filename",
                         "document.pdf", "file_data", data_uri(mime, data));
    tg_buf t = {0};
    if ((!strncmp(mime, "text/", 5) || !strcmp(mime, "application/json")) &&
        base64_decode(data, strlen(data), &t)) {
        json_t *p = json_pack("{s:s, s:s%}", "type", "text", "text", t.data ? t.data : "", t.len);
        tg_buf_free(&t);
        if (p)
            return p;
    }
    tg_buf_free(&t);
    char name[80];  /* a header names it: no '/' there (bridge.c) */
    snprintf(name, sizeof name, "inlineData:%.60s", mime);
    for (char *c = name; *c; c++)
        if (*c == '/')
            *c = '-';
    tg_bridge_drop(cv->dropped, "parts", name);
    return NULL;
}

/* fileData {mimeType, fileUri}: an image's URL is chat's image_url; other
 * files live where only Google's servers read them (the Files API). */
static json_t *file_part(const json_t *d, conv *cv)
{
    const char *mime = json_string_value(json_object_get(d, "mimeType"));
    const char *uri = json_string_value(json_object_get(d, "fileUri"));
    if (uri && mime && !strncmp(mime, "image/", 6))
        return json_pack("{s:s, s:{s:s}}", "type", "image_url", "image_url", "url", uri);
    tg_bridge_drop(cv->dropped, "parts", "fileData");
    return NULL;
}

/* Parts a chat request has no place for (executableCode and
 * codeExecutionResult are Google's code execution; videoMetadata...). */
static void drop_part_keys(const json_t *part, conv *cv)
{
    static const char *const known[] = {"text", "inlineData", "fileData", "functionCall",
                                        "functionResponse", "thought", "thoughtSignature",
                                        "partMetadata", "mediaResolution", NULL};
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)part, k, v) {
        if (!tg_bridge_is_one_of(k, known))
            tg_bridge_drop(cv->dropped, "parts", k);
    }
}

/* The user message's content: a string when it is all text, else parts. */
static json_t *content_of(json_t *parts)
{
    size_t i;
    json_t *p;
    tg_buf t = {0};
    bool text_only = true;
    json_array_foreach(parts, i, p) {
        if (strcmp(json_string_value(json_object_get(p, "type")), "text")) {
            text_only = false;
            break;
        }
        tg_buf_puts(&t, json_string_value(json_object_get(p, "text")));
    }
    if (!text_only) {
        tg_buf_free(&t);
        return json_incref(parts);
    }
    json_t *s = json_stringn(t.data ? t.data : "", t.len);
    tg_buf_free(&t);
    return s;
}

/* A functionResponse's id: its own, else the first unanswered call of its
 * name, else one from its place (a response to no call: hygiene judges). */
static json_t *response_id(const json_t *fr, const char *name, size_t ci, size_t pi, conv *cv)
{
    const char *own = json_string_value(json_object_get(fr, "id"));
    size_t i;
    json_t *pc;
    json_array_foreach(cv->pending, i, pc) {
        const char *id = json_string_value(json_array_get(pc, 1));
        bool match = own ? !strcmp(own, id) : !strcmp(name, json_string_value(json_array_get(pc, 0)));
        if (match) {
            json_t *r = json_string(id);
            json_array_remove(cv->pending, i);
            return r;
        }
    }
    if (own && *own)
        return json_string(own);
    char gen[48];
    snprintf(gen, sizeof gen, "gr_%zu_%zu", ci, pi);
    return json_string(gen);
}

/* functionResponse {name, response, id?} as a chat tool message: the
 * response object's JSON text (Gemini's is {"output": ...} or {"error":
 * ...} by convention; the model reads it as it came). Its parts (a Gemini
 * 3 multimodal function response: inlineData, fileData, as Gemini CLI's
 * read_file of an image sends it) cannot go in a chat tool message: they
 * go in media, the user message after the tool messages, the tool text
 * pointing there (their metadata said, as a part's). scheduling and
 * willContinue steer the Live API's non-blocking calls, which a turn of
 * generateContent has none of. */
static json_t *tool_message(const json_t *fr, size_t ci, size_t pi, conv *cv, json_t *media,
                            tg_error *err)
{
    const char *name = json_string_value(json_object_get(fr, "name"));
    if (!name) {
        char param[128];
        snprintf(param, sizeof param, "contents[%zu].parts[%zu].functionResponse.name", ci, pi);
        bad(err, param, "a functionResponse names the function it answers");
        return NULL;
    }
    const json_t *resp = json_object_get(fr, "response");
    char *text = resp ? tg_json_dumps(resp) : NULL;
    json_t *id = response_id(fr, name, ci, pi, cv);
    tg_buf t = {0};
    size_t n_text = 1;
    tg_buf_puts(&t, text ? text : "{}");
    free(text);
    size_t i;
    const json_t *p, *v;
    json_array_foreach(json_object_get(fr, "parts"), i, p) {
        json_t *part = NULL;
        drop_part_keys(p, cv);
        if ((v = json_object_get(p, "inlineData")))
            part = inline_part(v, cv);
        else if ((v = json_object_get(p, "fileData")))
            part = file_part(v, cv);
        else
            tg_bridge_drop(cv->dropped, "parts", "functionResponse part");
        const char *pt = json_string_value(json_object_get(part, "type"));
        if (pt && !strcmp(pt, "text")) {  /* a text file, decoded: the tool's own text */
            tg_buf_printf(&t, "\n\n%s", json_string_value(json_object_get(part, "text")));
            json_decref(part);
        } else if (part) {
            tg_bridge_tool_media(media, json_string_value(id), part, &t, &n_text);
        }
    }
    json_t *m = json_pack("{s:s, s:o, s:s%}", "role", "tool", "tool_call_id", id, "content",
                          t.data ? t.data : "", t.len);
    tg_buf_free(&t);
    return m;
}

static int user_content(const json_t *parts, size_t ci, json_t *messages, conv *cv,
                        tg_error *err)
{
    json_t *rest = json_array();
    size_t i;
    const json_t *p;
    json_array_foreach(parts, i, p) {
        drop_part_keys(p, cv);
        const json_t *v;
        json_t *part = NULL;
        if ((v = json_object_get(p, "functionResponse"))) {
            json_t *m = tool_message(v, ci, i, cv, rest, err);
            if (!m) {
                json_decref(rest);
                return -1;
            }
            json_array_append_new(messages, m);
        } else if (json_is_true(json_object_get(p, "thought"))) {
            continue;  /* a thought is the model's, never the user's */
        } else if ((v = json_object_get(p, "text")) && json_is_string(v)) {
            part = json_pack("{s:s, s:O}", "type", "text", "text", v);
        } else if ((v = json_object_get(p, "inlineData"))) {
            part = inline_part(v, cv);
        } else if ((v = json_object_get(p, "fileData"))) {
            part = file_part(v, cv);
        } else if (json_object_get(p, "functionCall")) {
            tg_bridge_drop(cv->dropped, "parts", "user functionCall");
        }
        if (part)
            json_array_append_new(rest, part);
    }
    if (json_array_size(rest))
        json_array_append_new(messages, json_pack("{s:s, s:o}", "role", "user", "content",
                                                  content_of(rest)));
    json_decref(rest);
    return 0;
}

/* functionCall {name, args, id?} (and its part's thoughtSignature) as a
 * chat tool call. */
static json_t *tool_call(const json_t *part, const json_t *fc, size_t ci, size_t pi, conv *cv,
                         tg_error *err)
{
    const char *name = json_string_value(json_object_get(fc, "name"));
    if (!name) {
        char param[128];
        snprintf(param, sizeof param, "contents[%zu].parts[%zu].functionCall.name", ci, pi);
        bad(err, param, "a functionCall names its function");
        return NULL;
    }
    const char *own = json_string_value(json_object_get(fc, "id"));
    char id[48];
    if (own && *own)
        snprintf(id, sizeof id, "%.47s", own);
    else
        snprintf(id, sizeof id, "gc_%zu_%zu", ci, pi);
    const json_t *args = json_object_get(fc, "args");
    if ((!args || json_is_null(args)) && json_array_size(json_object_get(fc, "partialArgs")))
        tg_bridge_drop(cv->dropped, "parts", "functionCall.partialArgs");  /* a stream's pieces */
    char *text = args && !json_is_null(args) ? tg_json_dumps(args) : NULL;
    json_t *call = json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", id, "type", "function",
                             "function", "name", name, "arguments", text ? text : "{}");
    free(text);
    const json_t *sig = json_object_get(part, "thoughtSignature");
    if (json_is_string(sig))
        json_object_set_new(call, "extra_content",
                            json_pack("{s:{s:O}}", "google", "thought_signature", sig));
    json_array_append_new(cv->pending, json_pack("[s, s]", name, id));
    return call;
}

static int model_content(const json_t *parts, size_t ci, json_t *messages, conv *cv,
                         tg_error *err)
{
    tg_buf text = {0}, thought = {0};
    json_t *calls = json_array();
    size_t i;
    const json_t *p;
    json_array_foreach(parts, i, p) {
        drop_part_keys(p, cv);
        const json_t *v = json_object_get(p, "functionCall");
        if (v) {
            json_t *call = tool_call(p, v, ci, i, cv, err);
            if (!call) {
                tg_buf_free(&text);
                tg_buf_free(&thought);
                json_decref(calls);
                return -1;
            }
            json_array_append_new(calls, call);
        } else if (json_is_string((v = json_object_get(p, "text")))) {
            tg_buf *to = json_is_true(json_object_get(p, "thought")) ? &thought : &text;
            tg_buf_append(to, json_string_value(v), json_string_length(v));
        } else if (json_object_get(p, "inlineData") || json_object_get(p, "fileData")) {
            tg_bridge_drop(cv->dropped, "parts", "model inlineData");
        }
    }
    json_t *m = json_pack("{s:s}", "role", "assistant");
    json_object_set_new(m, "content", text.len ? json_stringn(text.data, text.len) : json_null());
    if (thought.len)
        json_object_set_new(m, "reasoning_content", json_stringn(thought.data, thought.len));
    if (json_array_size(calls))
        json_object_set(m, "tool_calls", calls);
    json_decref(calls);
    if (text.len || thought.len || json_object_get(m, "tool_calls"))
        json_array_append_new(messages, m);
    else
        json_decref(m);
    tg_buf_free(&text);
    tg_buf_free(&thought);
    return 0;
}

static int convert_contents(const json_t *contents, json_t *messages, conv *cv, tg_error *err)
{
    if (!contents || json_is_null(contents))
        return 0;
    if (!json_is_array(contents))
        return bad(err, "contents", "contents: expected an array of Content objects");
    size_t i;
    const json_t *c;
    json_array_foreach(contents, i, c) {
        char param[48];
        snprintf(param, sizeof param, "contents[%zu]", i);
        const json_t *parts = json_object_get(c, "parts");
        if (!json_is_object(c) || (parts && !json_is_array(parts)))
            return bad(err, param, "a content is {role, parts: [...]}");
        const char *role = json_string_value(json_object_get(c, "role"));
        int rc = role && !strcmp(role, "model") ? model_content(parts, i, messages, cv, err)
                                                : user_content(parts, i, messages, cv, err);
        if (rc)
            return -1;
    }
    return 0;
}

/* systemInstruction: a Content (its text parts joined), or a string; a
 * part of another kind (an image) has no place in a chat system message:
 * said. */
static void convert_system(const json_t *si, json_t *messages, conv *cv)
{
    tg_buf t = {0};
    if (json_is_string(si))
        tg_buf_puts(&t, json_string_value(si));
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(si, "parts"), i, p) {
        const char *s = json_string_value(json_object_get(p, "text"));
        if (!s) {
            tg_bridge_drop(cv->dropped, "parts", "systemInstruction.media");
            continue;
        }
        if (t.len)
            tg_buf_puts(&t, "\n");
        tg_buf_puts(&t, s);
    }
    if (t.len)
        json_array_append_new(messages, json_pack("{s:s, s:s%}", "role", "system", "content",
                                                  t.data, t.len));
    tg_buf_free(&t);
}

/* ---- request: tools and configs ------------------------------------------- */

/* propertyOrdering (the order Gemini writes the object's properties in)
 * as the order of the properties themselves, the one models read them in;
 * names it does not list follow, as they were. */
static void order_properties(json_t *o, const json_t *order)
{
    json_t *props = json_object_get(o, "properties");
    if (!json_is_object(props) || !json_array_size(order))
        return;
    json_t *sorted = json_object();
    size_t i;
    const json_t *n;
    json_array_foreach(order, i, n) {
        json_t *v = json_is_string(n) ? json_object_get(props, json_string_value(n)) : NULL;
        if (v)
            json_object_set(sorted, json_string_value(n), v);
    }
    const char *k;
    json_t *v;
    json_object_foreach(props, k, v) {
        if (!json_object_get(sorted, k))
            json_object_set(sorted, k, v);
    }
    json_object_set_new(o, "properties", sorted);
}

/* Gemini's Schema (an OpenAPI 3.0 subset: upper-case types, nullable,
 * propertyOrdering, example, int64 bounds as strings) as JSON Schema:
 * nullable a "null" type beside the type, propertyOrdering the order of
 * the properties, example JSON Schema's examples; the rest is kept for the
 * schema stage to judge. */
static json_t *json_schema_of(const json_t *s)
{
    static const char *const int64_keys[] = {"minItems",  "maxItems",      "minLength",
                                             "maxLength", "minProperties", "maxProperties",
                                             NULL};
    if (!json_is_object(s))
        return json_deep_copy(s);
    json_t *o = json_object();
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        if (!strcmp(k, "type") && json_is_string(v)) {
            char t[32];
            snprintf(t, sizeof t, "%s", json_string_value(v));
            for (char *c = t; *c; c++)
                *c = (char)tolower((unsigned char)*c);
            if (strcmp(t, "type_unspecified"))
                json_object_set_new(o, k, json_string(t));
        } else if (!strcmp(k, "properties") && json_is_object(v)) {
            json_t *props = json_object();
            const char *pk;
            const json_t *pv;
            json_object_foreach((json_t *)v, pk, pv) json_object_set_new(props, pk, json_schema_of(pv));
            json_object_set_new(o, k, props);
        } else if (!strcmp(k, "items")) {
            json_object_set_new(o, k, json_schema_of(v));
        } else if (!strcmp(k, "anyOf") && json_is_array(v)) {
            json_t *any = json_array();
            size_t i;
            const json_t *a;
            json_array_foreach(v, i, a) json_array_append_new(any, json_schema_of(a));
            json_object_set_new(o, k, any);
        } else if (!strcmp(k, "example")) {  /* JSON Schema's word: examples */
            json_object_set_new(o, "examples", json_pack("[O]", v));
        } else if (!strcmp(k, "nullable") || !strcmp(k, "propertyOrdering")) {
            continue;  /* nullable joins type below; the order is the properties' */
        } else if (json_is_string(v) && tg_bridge_is_one_of(k, int64_keys)) {
            /* proto's int64 in JSON is a string ("3"); JSON Schema's a number */
            char *end;
            long long n = strtoll(json_string_value(v), &end, 10);
            json_object_set_new(o, k, *end || end == json_string_value(v) ? json_deep_copy(v)
                                                                          : json_integer(n));
        } else {
            json_object_set(o, k, (json_t *)v);
        }
    }
    order_properties(o, json_object_get(s, "propertyOrdering"));
    const json_t *t = json_object_get(o, "type");
    if (json_is_true(json_object_get(s, "nullable")) && json_is_string(t))
        json_object_set_new(o, "type", json_pack("[O, s]", t, "null"));
    return o;
}

/* A declaration's response schema (responseJsonSchema, or response in
 * Gemini's Schema form): what the function gives back, which chat's
 * function has no field for; in the description, where the model reads
 * it, as the Responses bridge puts a function's output_schema. */
static void response_schema_into(json_t *fn, const json_t *fd)
{
    const json_t *js = json_object_get(fd, "responseJsonSchema"), *rs = json_object_get(fd, "response");
    json_t *schema = json_is_object(js) ? json_incref((json_t *)js)
                     : json_is_object(rs) ? json_schema_of(rs) : NULL;
    if (!schema)
        return;
    char *text = tg_json_dumps(schema);
    const char *d = json_string_value(json_object_get(fn, "description"));
    tg_buf b = {0};
    if (d && *d) {
        tg_buf_puts(&b, d);
        tg_buf_puts(&b, "\n\n");
    }
    tg_buf_puts(&b, "It returns JSON of this schema: ");
    tg_buf_puts(&b, text ? text : "{}");
    json_object_set_new(fn, "description", json_stringn(b.data, b.len));
    tg_buf_free(&b);
    free(text);
    json_decref(schema);
}

static json_t *function_tool(const json_t *fd, size_t ti, size_t fi, tg_error *err)
{
    const char *name = json_string_value(json_object_get(fd, "name"));
    if (!name || !*name) {
        char param[128];
        snprintf(param, sizeof param, "tools[%zu].functionDeclarations[%zu].name", ti, fi);
        bad(err, param, "a function declaration needs a name");
        return NULL;
    }
    const json_t *js = json_object_get(fd, "parametersJsonSchema");
    const json_t *ps = json_object_get(fd, "parameters");
    json_t *params = json_is_object(js)   ? json_deep_copy(js)
                     : json_is_object(ps) ? json_schema_of(ps)
                                          : json_pack("{s:s, s:{}}", "type", "object", "properties");
    json_t *fn = json_pack("{s:s, s:o}", "name", name, "parameters", params);
    const json_t *d = json_object_get(fd, "description");
    if (json_is_string(d))
        json_object_set(fn, "description", (json_t *)d);
    response_schema_into(fn, fd);
    return json_pack("{s:s, s:o}", "type", "function", "function", fn);
}

/* tools[]: functionDeclarations become function tools; every other kind
 * (googleSearch, codeExecution, urlContext, fileSearch, googleMaps,
 * computerUse, retrieval, mcpServers...) runs on Google's servers. */
static json_t *convert_tools(const json_t *tools, conv *cv, tg_error *err)
{
    json_t *out = json_array();
    if (!json_is_array(tools)) {
        json_decref(out);
        bad(err, "tools", "tools: expected an array of Tool objects");
        return NULL;
    }
    size_t i;
    const json_t *t;
    json_array_foreach(tools, i, t) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)t, k, v) {
            if (strcmp(k, "functionDeclarations")) {
                if (cv->o->refuse_hosted) {
                    char param[96];
                    snprintf(param, sizeof param, "tools[%zu].%.40s", i, k);
                    tg_error_set(err, 400, "invalid_request_error", "unsupported_parameter",
                                 param,
                                 "%s: this tool runs on Google's servers, which the bridge to "
                                 "chat completions cannot reach (a route to Gemini can pass the "
                                 "API through: gemini = pass)",
                                 param);
                    json_decref(out);
                    return NULL;
                }
                tg_bridge_drop(cv->dropped, "tools", k);
                continue;
            }
            size_t j;
            const json_t *fd;
            json_array_foreach(v, j, fd) {
                json_t *ft = function_tool(fd, i, j, err);
                if (!ft) {
                    json_decref(out);
                    return NULL;
                }
                json_array_append_new(out, ft);
            }
        }
    }
    return out;
}

/* toolConfig.functionCallingConfig: AUTO and VALIDATED (calls checked
 * against the schema, which the schema stage's strictness does where the
 * dialect has it) are auto, NONE none, ANY required; allowedFunctionNames
 * narrows the tools offered, and one name is a named choice. */
static void convert_tool_config(json_t *chat, const json_t *body, conv *cv)
{
    const json_t *tc = json_object_get(body, "toolConfig");
    const json_t *fcc = json_object_get(tc, "functionCallingConfig");
    /* retrievalConfig (the location Google's Maps and Search grounding
     * use) and includeServerSideToolInvocations are for tools only
     * Google runs; a streamed call goes whole, never as partialArgs */
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)tc, k, v) {
        char name[96];
        snprintf(name, sizeof name, "toolConfig.%.70s", k);
        if (strcmp(k, "functionCallingConfig") && !json_is_null(v) && !json_is_false(v))
            tg_bridge_drop(cv->dropped, "fields", name);
    }
    if (json_is_true(json_object_get(fcc, "streamFunctionCallArguments")))
        tg_bridge_drop(cv->dropped, "fields",
                       "toolConfig.functionCallingConfig.streamFunctionCallArguments");
    const char *mode = json_string_value(json_object_get(fcc, "mode"));
    const json_t *allowed = json_object_get(fcc, "allowedFunctionNames");
    json_t *tools = json_object_get(chat, "tools");
    if (!mode || !tools)
        return;
    if (!strcmp(mode, "NONE")) {
        json_object_set_new(chat, "tool_choice", json_string("none"));
        return;
    }
    if (strcmp(mode, "ANY")) {
        if (strcmp(mode, "AUTO") && strcmp(mode, "VALIDATED") && strcmp(mode, "MODE_UNSPECIFIED"))
            tg_bridge_drop(cv->dropped, "fields", "toolConfig.functionCallingConfig.mode");
        return;
    }
    json_object_set_new(chat, "tool_choice", json_string("required"));
    if (!json_array_size(allowed))
        return;
    json_t *kept = json_array();
    size_t i, j;
    const json_t *t, *n;
    json_array_foreach(tools, i, t) {
        const char *name = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
        json_array_foreach(allowed, j, n) if (json_is_string(n) && !strcmp(name, json_string_value(n)))
        {
            json_array_append(kept, (json_t *)t);
            break;
        }
    }
    if (!json_array_size(kept)) {  /* names no declared function: left to the model */
        json_decref(kept);
        tg_bridge_drop(cv->dropped, "fields", "toolConfig.functionCallingConfig.allowedFunctionNames");
        return;
    }
    if (json_array_size(kept) == 1)
        json_object_set_new(chat, "tool_choice",
                            json_pack("{s:s, s:{s:O}}", "type", "function", "function", "name",
                                      json_object_get(json_object_get(json_array_get(kept, 0), "function"), "name")));
    json_object_set_new(chat, "tools", kept);
}

/* thinkingConfig as chat's reasoning_effort: a thinkingLevel named wins;
 * else the budget's order of magnitude (0 turns thinking off, -1 leaves it
 * to the model). OpenAI's models that do not reason refuse the key;
 * other providers' are left to the route's hygiene (rule 36). */
static void convert_thinking(json_t *chat, const json_t *tc, const char *model, conv *cv)
{
    if (!json_is_object(tc))
        return;
    const char *level = json_string_value(json_object_get(tc, "thinkingLevel"));
    const json_t *b = json_object_get(tc, "thinkingBudget");
    const char *effort = NULL;
    if (level) {
        static const char *const lv[][2] = {{"MINIMAL", "minimal"}, {"LOW", "low"},
                                            {"MEDIUM", "medium"},   {"HIGH", "high"},
                                            {"XHIGH", "xhigh"}};
        for (size_t i = 0; i < sizeof lv / sizeof lv[0]; i++)
            if (!strcmp(level, lv[i][0]))
                effort = lv[i][1];
    } else if (json_is_integer(b) && json_integer_value(b) > 0) {
        json_int_t n = json_integer_value(b);
        effort = n < 4096 ? "low" : n < 16384 ? "medium" : "high";
    }
    if (!effort)
        return;
    const char *slash = model ? strrchr(model, '/') : NULL;
    const char *m = slash ? slash + 1 : model ? model : "";
    if (!strncmp(m, "gpt-4", 5) || !strncmp(m, "gpt-3", 5) || !strncmp(m, "chatgpt-", 8)) {
        tg_bridge_drop(cv->dropped, "fields", "generationConfig.thinkingConfig");
        return;
    }
    json_object_set_new(chat, "reasoning_effort", json_string(effort));
}

/* text/x.enum: Gemini answers one of the schema's enum values as plain
 * text. Chat has no such mode, and a json_schema would have the answer
 * quoted (and a string root, which OpenAI's structured outputs refuse):
 * the values are told the model in the leading system message instead. */
static void enum_instruction(json_t *chat, const json_t *schema)
{
    const json_t *vals = json_object_get(schema, "enum");
    if (!json_array_size(vals))
        return;
    tg_buf t = {0};
    tg_buf_puts(&t, "Answer with exactly one of these values, as plain text and nothing else: ");
    size_t i;
    const json_t *v;
    json_array_foreach(vals, i, v) {
        if (i)
            tg_buf_puts(&t, ", ");
        tg_buf_puts(&t, json_is_string(v) ? json_string_value(v) : "");
    }
    json_t *msgs = json_object_get(chat, "messages");
    json_t *first = json_array_get(msgs, 0);
    const char *role = json_string_value(json_object_get(first, "role"));
    const char *had = json_string_value(json_object_get(first, "content"));
    if (role && !strcmp(role, "system") && had) {
        tg_buf all = {0};
        tg_buf_puts(&all, had);
        tg_buf_puts(&all, "\n\n");
        tg_buf_append(&all, t.data, t.len);
        json_object_set_new(first, "content", json_stringn(all.data, all.len));
        tg_buf_free(&all);
    } else {
        json_array_insert_new(msgs, 0, json_pack("{s:s, s:s%}", "role", "system", "content",
                                                 t.data, t.len));
    }
    tg_buf_free(&t);
}

/* responseMimeType with responseSchema / responseJsonSchema as chat's
 * response_format (text/x.enum: enum_instruction). */
static void convert_format(json_t *chat, const json_t *gc, conv *cv)
{
    const char *mime = json_string_value(json_object_get(gc, "responseMimeType"));
    const json_t *js = json_object_get(gc, "responseJsonSchema");
    if (!js)
        js = json_object_get(gc, "_responseJsonSchema");
    const json_t *s = json_object_get(gc, "responseSchema");
    json_t *schema = json_is_object(js) ? json_deep_copy(js) : json_is_object(s) ? json_schema_of(s) : NULL;
    if (schema && mime && !strcmp(mime, "text/x.enum")) {
        enum_instruction(chat, schema);
        json_decref(schema);
        return;
    }
    if (schema) {
        json_object_set_new(chat, "response_format",
                            json_pack("{s:s, s:{s:s, s:o}}", "type", "json_schema", "json_schema",
                                      "name", "response", "schema", schema));
        return;
    }
    if (mime && !strcmp(mime, "application/json"))
        json_object_set_new(chat, "response_format", json_pack("{s:s}", "type", "json_object"));
    else if (mime && strcmp(mime, "text/plain"))
        tg_bridge_drop(cv->dropped, "fields", "generationConfig.responseMimeType");
}

/* responseLogprobs as chat's logprobs, and logprobs (the top candidates
 * a step, which Gemini takes only beside responseLogprobs) as its
 * top_logprobs, within chat's 0..20; the answer's logprobs come back as
 * the candidate's logprobsResult (gemini_answer.c). logprobs alone asks
 * for nothing (as on Gemini): said. */
static void convert_logprobs(json_t *chat, const json_t *gc, conv *cv)
{
    const json_t *top = json_object_get(gc, "logprobs");
    bool on = json_is_true(json_object_get(gc, "responseLogprobs"));
    if (on)
        json_object_set_new(chat, "logprobs", json_true());
    if (!json_is_integer(top))
        return;
    if (!on) {
        tg_bridge_drop(cv->dropped, "fields", "generationConfig.logprobs");
        return;
    }
    json_int_t n = json_integer_value(top);
    json_object_set_new(chat, "top_logprobs", json_integer(n < 0 ? 0 : n > 20 ? 20 : n));
}

static void convert_generation(json_t *chat, const json_t *gc, const char *model, conv *cv)
{
    static const char *const same[][2] = {
        {"temperature", "temperature"},      {"topP", "top_p"},
        {"topK", "top_k"},                   {"maxOutputTokens", "max_tokens"},
        {"stopSequences", "stop"},           {"seed", "seed"},
        {"presencePenalty", "presence_penalty"}, {"frequencyPenalty", "frequency_penalty"}};
    if (!json_is_object(gc))
        return;
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        const json_t *v = json_object_get(gc, same[i][0]);
        if (v && !json_is_null(v) && !(json_is_array(v) && !json_array_size(v)))
            json_object_set(chat, same[i][1], (json_t *)v);
    }
    convert_thinking(chat, json_object_get(gc, "thinkingConfig"), model, cv);
    convert_format(chat, gc, cv);
    convert_logprobs(chat, gc, cv);
    static const char *const known[] = {
        "temperature",       "topP",           "topK",           "maxOutputTokens",
        "stopSequences",     "seed",           "presencePenalty", "frequencyPenalty",
        "thinkingConfig",    "responseMimeType", "responseSchema", "responseJsonSchema",
        "_responseJsonSchema", "responseLogprobs", "logprobs", NULL};
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)gc, k, v) {
        if (tg_bridge_is_one_of(k, known) || json_is_null(v))
            continue;
        /* one candidate is what a bridge answers; a chat answer's choice 0 */
        if (!strcmp(k, "candidateCount") && json_is_integer(v) && json_integer_value(v) <= 1)
            continue;
        char name[96];
        snprintf(name, sizeof name, "generationConfig.%.70s", k);
        tg_bridge_drop(cv->dropped, "fields", name);
    }
}

/* Top-level keys Gemini defines with no chat counterpart: the safety
 * filters and cached contents are Google's; labels are billing tags. */
static void drop_top_keys(const json_t *body, conv *cv)
{
    static const char *const known[] = {"contents", "systemInstruction", "system_instruction",
                                        "tools", "toolConfig", "generationConfig", "model", NULL};
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)body, k, v) {
        if (!tg_bridge_is_one_of(k, known) && !json_is_null(v))
            tg_bridge_drop(cv->dropped, "fields", k);
    }
}

static int convert_request(const json_t *body, const tg_gemini_call *call, json_t *chat, conv *cv,
                           tg_error *err)
{
    json_t *messages = json_array();
    json_object_set_new(chat, "model", json_string(call->model ? call->model : ""));
    json_object_set_new(chat, "messages", messages);
    const json_t *si = json_object_get(body, "systemInstruction");
    convert_system(si ? si : json_object_get(body, "system_instruction"), messages, cv);
    if (convert_contents(json_object_get(body, "contents"), messages, cv, err))
        return -1;
    const json_t *v = json_object_get(body, "tools");
    if (v && !json_is_null(v)) {
        json_t *tools = convert_tools(v, cv, err);
        if (!tools)
            return -1;
        if (json_array_size(tools))
            json_object_set_new(chat, "tools", tools);
        else
            json_decref(tools);
    }
    convert_tool_config(chat, body, cv);
    convert_generation(chat, json_object_get(body, "generationConfig"), call->model, cv);
    drop_top_keys(body, cv);
    if (call->stream) {
        json_object_set_new(chat, "stream", json_true());
        /* usageMetadata comes from the chat stream's last chunk */
        json_object_set_new(chat, "stream_options", json_pack("{s:b}", "include_usage", 1));
    }
    return 0;
}

int tg_gemini_to_chat(const json_t *body, const tg_gemini_call *call, const tg_bridge_opts *o,
                      json_t **chat, tg_gem_bridge **bridge, tg_error *err)
{
    static const tg_bridge_opts dflt = {0};
    *chat = NULL;
    *bridge = NULL;
    if (!json_is_object(body)) {
        tg_error_set(err, 400, "invalid_request_error", "invalid_type", NULL,
                     "request body must be a JSON object (a GenerateContentRequest)");
        return -1;
    }
    json_t *c = json_object();
    conv cv = {o ? o : &dflt, json_object(), json_array()};
    int rc = convert_request(body, call, c, &cv, err);
    json_decref(cv.pending);
    if (rc) {
        json_decref(c);
        json_decref(cv.dropped);
        return -1;
    }
    tg_gem_bridge *b = tg_calloc(1, sizeof *b);
    b->model = json_string(call->model ? call->model : "");
    b->stream = call->stream;
    b->sse = call->sse;
    b->rd.quiet = call->stream && !call->sse;  /* no SSE comments inside a JSON array */
    b->calls_done = json_object();
    b->dropped = cv.dropped;
    *chat = c;
    *bridge = b;
    return 0;
}

const json_t *tg_gem_bridge_dropped_peek(const tg_gem_bridge *b)
{
    return b ? b->dropped : NULL;
}

void tg_gem_bridge_free(tg_gem_bridge *b)
{
    if (!b)
        return;
    json_decref(b->model);
    json_decref(b->id);
    json_decref(b->version);
    json_decref(b->call);
    json_decref(b->calls_done);
    json_decref(b->dropped);
    tg_chat_reader_free(&b->rd);
    tg_buf_free(&b->args);
    free(b);
}
