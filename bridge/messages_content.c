/* messages_content.c -- a Messages request's content blocks as chat
 * content (messages_api_int.h).
 *
 * Every block type the Messages API takes in a request is carried,
 * translated or dropped and said; only a type the API itself refuses is a
 * 400. Carried: text, images (base64 as a data: URL, or a URL), and a PDF
 * as the chat `file` part where the target takes one (OpenAI). Translated
 * (X-Toolgate-Translated): a PDF elsewhere as its text (bridge/pdftext.h),
 * a plain-text or content document as its text, a document by URL as the
 * URL (the provider fetches no documents), a search_result as its text
 * with its source, a compaction as its summary, a browser_state as its
 * tabs, tool_reference blocks as a line naming the tools they loaded
 * (their definitions join the request's tools: messages_request.c; on a
 * discovery route, where they join the catalog, the line is followed by
 * their definitions). Dropped
 * (X-Toolgate-Dropped): what only Anthropic can read or run (files by
 * file_id, server tools' blocks, containers, tool changes) and thinking in
 * a user turn. A chat tool message holds text only, so what a
 * tool_result holds beyond text (images, PDF files) goes in the user
 * message that follows the tool messages, as the bridge did for images.
 */
#include "bridge/messages_api_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/pdftext.h"
#include "core/cache.h"
#include "core/jsonio.h"

bool tg_msg_is_type(const json_t *block, const char *type)
{
    const char *t = json_string_value(json_object_get(block, "type"));
    return t && !strcmp(t, type);
}

bool tg_msg_is_server_block(const char *type)
{
    static const char *const exact[] = {"server_tool_use", "mcp_tool_use", "mcp_tool_result",
                                        "container_upload", NULL};
    size_t n = strlen(type), k = strlen("_tool_result");
    return tg_bridge_is_one_of(type, exact) ||
           (n > k && !strcmp(type + n - k, "_tool_result") && strcmp(type, "tool_result"));
}

bool tg_msg_is_declared_block(const char *type)
{
    /* @anthropic-ai/sdk 1.14's ContentBlockParam and BetaContentBlockParam
     * (with the *_tool_result family tg_msg_is_server_block knows) */
    static const char *const declared[] = {
        "text", "image", "document", "search_result", "thinking", "redacted_thinking",
        "tool_use", "tool_result", "compaction", "tool_addition", "tool_removal",
        "mcp_tool_listing", "fallback", NULL};
    return tg_bridge_is_one_of(type, declared) || tg_msg_is_server_block(type);
}

int tg_msg_join_text(const json_t *v, tg_buf *t, const char *path, tg_error *err)
{
    if (json_is_string(v)) {
        tg_buf_append(t, json_string_value(v), json_string_length(v));
        return 0;
    }
    if (!v || json_is_null(v))
        return 0;
    char param[192];
    if (!json_is_array(v))
        return tg_bridge_bad(err, path, "%s: expected a string or an array of text blocks", path);
    size_t i;
    const json_t *blk;
    json_array_foreach(v, i, blk) {
        const json_t *text = json_object_get(blk, "text");
        if (!tg_msg_is_type(blk, "text") || !json_is_string(text)) {
            snprintf(param, sizeof param, "%.100s[%zu]", path, i);
            return tg_bridge_bad(err, param,
                                 "%s: expected a text block {\"type\": \"text\", \"text\": ...}",
                                 param);
        }
        if (t->len)
            tg_buf_puts(t, "\n\n");
        tg_buf_append(t, json_string_value(text), json_string_length(text));
    }
    return 0;
}

void tg_msg_carry_cache(json_t *part, const json_t *blk, conv *cv)
{
    const json_t *cc = json_object_get(blk, "cache_control");
    if (!json_is_object(cc))
        return;
    if (cv->o->cache_control)
        json_object_set(part, "cache_control", (json_t *)cc);
    else
        tg_bridge_drop(cv->dropped, TG_BRIDGE_HINTS, "cache_control");
}

/* A part that is nothing but {type: text, text}. */
static bool plain_text(const json_t *p)
{
    return tg_msg_is_type(p, "text") && json_object_size(p) == 2;
}

json_t *tg_msg_content_of(json_t *parts)
{
    tg_buf t = {0};
    size_t i;
    const json_t *p;
    json_array_foreach(parts, i, p) {
        if (!plain_text(p)) {
            tg_buf_free(&t);
            return parts;
        }
        if (i)
            tg_buf_puts(&t, "\n\n");
        tg_buf_puts(&t, json_string_value(json_object_get(p, "text")));
    }
    json_decref(parts);
    json_t *s = json_stringn(t.data ? t.data : "", t.len);
    tg_buf_free(&t);
    return s;
}

static json_t *text_part(const char *s, size_t n)
{
    return json_pack("{s:s, s:s%}", "type", "text", "text", s ? s : "", s ? n : 0);
}

/* An image block as a chat image_url part (new reference); one by file_id
 * (Anthropic's Files API, which no chat provider reads) as a line saying
 * so, dropped. NULL with err for a source the API refuses too. */
static json_t *image_part(const json_t *blk, const char *path, conv *cv, tg_error *err)
{
    char param[192];
    const json_t *src = json_object_get(blk, "source");
    const char *st = json_string_value(json_object_get(src, "type"));
    snprintf(param, sizeof param, "%.100s.source", path);
    json_t *part = NULL;
    if (st && !strcmp(st, "base64")) {
        const char *mt = json_string_value(json_object_get(src, "media_type"));
        const char *data = json_string_value(json_object_get(src, "data"));
        if (!mt || !data) {
            tg_bridge_bad(err, param, "%s: a base64 image needs media_type and data", param);
            return NULL;
        }
        tg_buf u = {0};
        tg_buf_printf(&u, "data:%s;base64,", mt);
        tg_buf_puts(&u, data);
        part = json_pack("{s:s, s:{s:s%}}", "type", "image_url", "image_url", "url", u.data, u.len);
        tg_buf_free(&u);
    } else if (st && !strcmp(st, "url") && json_is_string(json_object_get(src, "url"))) {
        part = json_pack("{s:s, s:{s:O}}", "type", "image_url", "image_url", "url",
                         json_object_get(src, "url"));
    } else if (st && !strcmp(st, "file") && json_is_string(json_object_get(src, "file_id"))) {
        tg_bridge_drop(cv->dropped, "content", "image:file_id");
        tg_buf t = {0};
        tg_buf_printf(&t, "[an image by file_id %.100s was here: it is held in Anthropic's Files "
                          "API, which this provider cannot read]",
                      json_string_value(json_object_get(src, "file_id")));
        part = text_part(t.data, t.len);
        tg_buf_free(&t);
        return part;
    } else {
        tg_bridge_bad(err, param, "%s: an image comes as base64 data, a URL or a file_id", param);
        return NULL;
    }
    tg_msg_carry_cache(part, blk, cv);
    return part;
}

/* A document's heading: its title and context, as the model would have
 * had them beside the document. */
static void doc_heading(const json_t *blk, tg_buf *t)
{
    const char *title = json_string_value(json_object_get(blk, "title"));
    const char *context = json_string_value(json_object_get(blk, "context"));
    if (title && *title) {
        tg_buf_puts(t, title);
        tg_buf_puts(t, "\n\n");
    }
    if (context && *context) {
        tg_buf_puts(t, context);
        tg_buf_puts(t, "\n\n");
    }
}

/* A base64 PDF's text as {text, pages, read, cut}, or {} when poppler
 * cannot open it (new reference): from the worker's cache when the same
 * PDF came before (an agent resends its history every turn). */
static json_t *pdf_read(const char *data, size_t n, conv *cv)
{
    uint64_t key = tg_hash64(data, n, 0);
    json_t *r = tg_cache_get(cv->o->cache, "pdftext", key);
    if (r)
        return r;
    tg_pdf_text info;
    tg_buf body = {0};
    if (tg_pdf_text_of_base64(data, n, &body, &info))
        r = json_object();
    else
        r = json_pack("{s:s%, s:i, s:i, s:b}", "text", body.data ? body.data : "", body.len,
                      "pages", info.pages, "read", info.pages_read, "cut", info.cut);
    tg_cache_put(cv->o->cache, "pdftext", key, r, body.len + 64);
    tg_buf_free(&body);
    return r;
}

/* A base64 PDF's text, said as such, into t. */
static void pdf_as_text(const char *data, size_t n, tg_buf *t, conv *cv)
{
    json_t *r = pdf_read(data, n, cv);
    const json_t *text = json_object_get(r, "text");
    int pages = (int)json_integer_value(json_object_get(r, "pages"));
    bool cut = json_is_true(json_object_get(r, "cut"));
    if (!json_is_string(text)) {
        tg_bridge_drop(cv->dropped, "content", "document:unreadable-pdf");
        tg_buf_puts(t, "[a PDF document was here; toolgate could not read its text, and this "
                       "provider takes no PDF]");
    } else {
        tg_bridge_drop(cv->translated, "content", "document:pdf-text");
        tg_buf_printf(t, "[the text of a %d-page PDF, extracted by toolgate: this provider takes "
                         "no PDF, so its layout and images are not here%s]\n\n",
                      pages, cut ? "; cut at toolgate's bound" : "");
        tg_buf_append(t, json_string_value(text), json_string_length(text));
        if (cut)
            tg_buf_printf(t, "\n\n[... %d of %d pages shown]",
                          (int)json_integer_value(json_object_get(r, "read")), pages);
    }
    json_decref(r);
}

/* A base64 PDF as the chat file part OpenAI takes (new reference). */
static json_t *pdf_file_part(const json_t *blk, const json_t *src)
{
    const char *title = json_string_value(json_object_get(blk, "title"));
    tg_buf u = {0};
    tg_buf_puts(&u, "data:application/pdf;base64,");
    tg_buf_puts(&u, json_string_value(json_object_get(src, "data")));
    json_t *p = json_pack("{s:s, s:{s:s, s:s%}}", "type", "file", "file", "filename",
                          title && *title ? title : "document.pdf", "file_data", u.data, u.len);
    tg_buf_free(&u);
    return p;
}

/* A content source's blocks (text and images): text into t, images as
 * parts into parts. */
static int content_source(const json_t *c, const char *path, tg_buf *t, json_t *parts, conv *cv,
                          tg_error *err)
{
    if (json_is_string(c)) {
        tg_buf_append(t, json_string_value(c), json_string_length(c));
        return 0;
    }
    if (!json_is_array(c))
        return tg_bridge_bad(err, path, "%s: expected a string or an array of blocks", path);
    size_t i;
    const json_t *b;
    char param[192];
    json_array_foreach(c, i, b) {
        snprintf(param, sizeof param, "%.100s[%zu]", path, i);
        if (tg_msg_is_type(b, "text") && json_is_string(json_object_get(b, "text"))) {
            if (t->len)
                tg_buf_puts(t, "\n\n");
            tg_buf_puts(t, json_string_value(json_object_get(b, "text")));
        } else if (tg_msg_is_type(b, "image")) {
            json_t *p = image_part(b, param, cv, err);
            if (!p)
                return -1;
            json_array_append_new(parts, p);
        } else {
            return tg_bridge_bad(err, param, "%s: a content source holds text and image blocks",
                                 param);
        }
    }
    return 0;
}

/* A document block as chat parts appended to parts: a PDF as a file part
 * where the target takes one, else every document as a text part (the
 * PDF's text, a URL as the URL, a file_id as a line saying it). */
static int document_parts(const json_t *blk, const char *path, json_t *parts, conv *cv,
                          tg_error *err)
{
    char param[192];
    const json_t *src = json_object_get(blk, "source");
    const char *st = json_string_value(json_object_get(src, "type"));
    const json_t *data = json_object_get(src, "data");
    snprintf(param, sizeof param, "%.100s.source", path);
    if (json_is_true(json_object_get(json_object_get(blk, "citations"), "enabled")))
        tg_bridge_drop(cv->dropped, "fields", "citations");
    if (st && !strcmp(st, "base64") && json_is_string(data) && cv->o->file_parts) {
        json_t *p = pdf_file_part(blk, src);
        tg_msg_carry_cache(p, blk, cv);
        json_array_append_new(parts, p);
        return 0;
    }
    tg_buf t = {0};
    json_t *images = json_array();
    doc_heading(blk, &t);
    int rc = 0;
    if (st && !strcmp(st, "text") && json_is_string(data)) {
        tg_buf_append(&t, json_string_value(data), json_string_length(data));
    } else if (st && !strcmp(st, "content")) {
        snprintf(param, sizeof param, "%.100s.source.content", path);
        tg_buf body = {0};  /* its own: its blocks are joined by blank lines */
        rc = content_source(json_object_get(src, "content"), param, &body, images, cv, err);
        tg_buf_append(&t, body.data ? body.data : "", body.len);
        tg_buf_free(&body);
    } else if (st && !strcmp(st, "base64") && json_is_string(data)) {
        pdf_as_text(json_string_value(data), json_string_length(data), &t, cv);
    } else if (st && !strcmp(st, "url") && json_is_string(json_object_get(src, "url"))) {
        tg_bridge_drop(cv->translated, "content", "document:url");
        tg_buf_printf(&t, "[a document at %s: this provider does not fetch documents; fetch it "
                          "with a tool if its content is needed]",
                      json_string_value(json_object_get(src, "url")));
    } else if (st && !strcmp(st, "file") && json_is_string(json_object_get(src, "file_id"))) {
        tg_bridge_drop(cv->dropped, "content", "document:file_id");
        tg_buf_printf(&t, "[a document by file_id %.100s was here: it is held in Anthropic's "
                          "Files API, which this provider cannot read]",
                      json_string_value(json_object_get(src, "file_id")));
    } else {
        rc = tg_bridge_bad(err, param,
                           "%s: a document comes as base64 PDF data, plain text, content "
                           "blocks, a URL or a file_id",
                           param);
    }
    if (!rc) {
        json_t *p = text_part(t.data, t.len);
        tg_msg_carry_cache(p, blk, cv);
        json_array_append_new(parts, p);
        json_array_extend(parts, images);
    }
    json_decref(images);
    tg_buf_free(&t);
    return rc;
}

/* A search_result as text with its source and title (new reference). */
static json_t *search_result_part(const json_t *blk, const char *path, conv *cv, tg_error *err)
{
    char param[192];
    tg_buf t = {0};
    const char *title = json_string_value(json_object_get(blk, "title"));
    const char *source = json_string_value(json_object_get(blk, "source"));
    tg_buf_printf(&t, "[search result: %s]\nSource: %s", title ? title : "",
                  source ? source : "");
    snprintf(param, sizeof param, "%.100s.content", path);
    tg_buf body = {0};
    int rc = tg_msg_join_text(json_object_get(blk, "content"), &body, param, err);
    if (body.len)
        tg_buf_printf(&t, "\n\n%.*s", (int)body.len, body.data);
    tg_buf_free(&body);
    if (rc) {
        tg_buf_free(&t);
        return NULL;
    }
    tg_bridge_drop(cv->translated, "content", "search_result");
    json_t *p = text_part(t.data, t.len);
    tg_msg_carry_cache(p, blk, cv);
    tg_buf_free(&t);
    return p;
}

void tg_msg_note_references(const json_t *refs, conv *cv)
{
    size_t i;
    const json_t *r;
    json_array_foreach(refs, i, r) {
        const char *name = json_string_value(json_object_get(r, "tool_name"));
        if (tg_msg_is_type(r, "tool_reference") && name && *name)
            json_object_set_new(cv->loaded, name, json_true());
    }
}

bool tg_msg_tool_addition(const json_t *blk, conv *cv)
{
    const json_t *tool = json_object_get(blk, "tool");
    const char *name = json_string_value(json_object_get(tool, "name"));
    const json_t *def = json_object_get(tool, "definition");
    if (tg_msg_is_type(tool, "tool_reference") && name && *name)
        json_object_set_new(cv->loaded, name, json_true());
    else if (tg_msg_is_type(tool, "tool_definition") && json_is_object(def))
        json_array_append(cv->added, (json_t *)def);
    else
        return false;
    tg_bridge_drop(cv->translated, "content", "tool_addition");
    return true;
}

void tg_msg_tool_changes(const json_t *blk, conv *cv)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(blk, "tool_changes"), i, c) {
        if (!(tg_msg_is_type(c, "tool_addition") && tg_msg_tool_addition(c, cv)))
            tg_bridge_drop(cv->dropped, "content", "compaction.tool_changes");
    }
}

/* What a tool_result holds, as text and parts: text blocks into t; images
 * and files into moved (for the user message after the tool messages). */
typedef struct result_acc {
    tg_buf t;
    size_t n_text;
    json_t *moved;
    json_t *refs;    /* the tool_reference blocks, named together in t */
} result_acc;

static void acc_text(result_acc *a, const char *s)
{
    if (a->n_text++)
        tg_buf_puts(&a->t, "\n\n");
    tg_buf_puts(&a->t, s);
}

/* One part that a chat tool message cannot hold, moved (one note per
 * call before its parts, as the Responses bridge does: bridge.c). */
static void acc_move(result_acc *a, json_t *part, const char *id)
{
    tg_bridge_tool_media(a->moved, id, part, &a->t, &a->n_text);
}

/* Parts (stolen): text ones into the tool message's text, others moved. */
static void acc_parts(result_acc *a, json_t *parts, const char *id)
{
    size_t i;
    json_t *p;
    json_array_foreach(parts, i, p) {
        if (tg_msg_is_type(p, "text"))
            acc_text(a, json_string_value(json_object_get(p, "text")));
        else
            acc_move(a, json_incref(p), id);
    }
    json_decref(parts);
}

/* A browser_state block: the tabs the browser has, as JSON text. */
static void browser_state(result_acc *a, const json_t *b, conv *cv)
{
    json_t *s = json_pack("{s:O?, s:O?}", "tabs", json_object_get(b, "tabs"), "state_changes",
                          json_object_get(b, "state_changes"));
    char *text = tg_json_dumps(s);
    tg_buf t = {0};
    tg_buf_printf(&t, "[browser state] %s", text ? text : "{}");
    acc_text(a, t.data);
    tg_buf_free(&t);
    free(text);
    json_decref(s);
    tg_bridge_drop(cv->translated, "content", "browser_state");
}

static int result_block(result_acc *a, const json_t *b, const char *param, const char *id,
                        conv *cv, tg_error *err)
{
    if (tg_msg_is_type(b, "text") && json_is_string(json_object_get(b, "text"))) {
        acc_text(a, json_string_value(json_object_get(b, "text")));
        return 0;
    }
    if (tg_msg_is_type(b, "tool_reference") && json_is_string(json_object_get(b, "tool_name"))) {
        json_array_append(a->refs, (json_t *)b);
        return 0;
    }
    if (tg_msg_is_type(b, "browser_state")) {
        browser_state(a, b, cv);
        return 0;
    }
    json_t *parts = json_array(), *p = NULL;
    int rc = 0;
    if (tg_msg_is_type(b, "image")) {
        if ((p = image_part(b, param, cv, err)))
            json_array_append_new(parts, p);
        rc = p ? 0 : -1;
    } else if (tg_msg_is_type(b, "document")) {
        rc = document_parts(b, param, parts, cv, err);
    } else if (tg_msg_is_type(b, "search_result")) {
        if ((p = search_result_part(b, param, cv, err)))
            json_array_append_new(parts, p);
        rc = p ? 0 : -1;
    } else {
        rc = tg_bridge_bad(err, param,
                           "%s: a tool_result holds text, image, document, search_result, "
                           "tool_reference or browser_state blocks",
                           param);
    }
    if (rc) {
        json_decref(parts);
        return -1;
    }
    acc_parts(a, parts, id);
    return 0;
}

/* On a discovery route the loaded tools stay in the catalog, out of the
 * model's sight: their definitions follow the line, one <function> line
 * each inside <functions>, the form Claude Code's ToolSearch promises
 * ("the same encoding as the tool list"), so the model can call_tool one
 * with the right arguments. */
static void loaded_definitions(tg_buf *t, const json_t *refs, conv *cv)
{
    size_t i, n = 0;
    const json_t *r;
    json_array_foreach(refs, i, r) {
        const char *name = json_string_value(json_object_get(r, "tool_name"));
        const json_t *def = tg_msg_tool_named(cv->tools, name);
        if (!def)
            continue;
        const json_t *schema = json_object_get(def, "input_schema");
        json_t *f = json_pack("{s:O?, s:O?, s:O?}", "description", json_object_get(def, "description"),
                              "name", json_object_get(def, "name"), "parameters", schema);
        char *text = tg_json_dumps(f);
        tg_buf_puts(t, n++ ? "\n<function>" : "\n<functions>\n<function>");
        tg_buf_puts(t, text ? text : "{}");
        tg_buf_puts(t, "</function>");
        free(text);
        json_decref(f);
    }
    if (n)
        tg_buf_puts(t, "\n</functions>");
}

/* The tools a tool_result's tool_reference blocks loaded, said in its text
 * as Anthropic's tool search makes them available: the tools join the
 * request's tools (messages_request.c reads cv->loaded), or on a discovery
 * route the catalog, with their definitions in the text. */
static void acc_references(result_acc *a, conv *cv)
{
    if (!json_array_size(a->refs))
        return;
    tg_msg_note_references(a->refs, cv);
    tg_buf t = {0};
    tg_buf_puts(&t, "Tools loaded, now callable:");
    size_t i;
    const json_t *r;
    json_array_foreach(a->refs, i, r) {
        tg_buf_puts(&t, i ? ", " : " ");
        tg_buf_puts(&t, json_string_value(json_object_get(r, "tool_name")));
    }
    if (cv->o->discovery && cv->tools)
        loaded_definitions(&t, a->refs, cv);
    acc_text(a, t.data);
    tg_buf_free(&t);
    tg_bridge_drop(cv->translated, "content", "tool_reference");
}

/* The tool message's content: its text, or one text part carrying the
 * result's cache_control where the target takes it. */
static json_t *result_content(result_acc *a, const json_t *blk, conv *cv)
{
    json_t *part = text_part(a->t.data, a->t.len);
    tg_msg_carry_cache(part, blk, cv);
    if (json_object_get(part, "cache_control"))
        return json_pack("[o]", part);
    json_decref(part);
    return json_stringn(a->t.data ? a->t.data : "", a->t.len);
}

/* A tool_result block as a chat tool message; what it holds beyond text
 * goes to moved (parts of the user message that follows). */
static int tool_result(const json_t *blk, const char *path, json_t *messages, json_t *moved,
                       conv *cv, tg_error *err)
{
    char param[192];
    const json_t *id = json_object_get(blk, "tool_use_id");
    if (!json_is_string(id) || !json_string_length(id)) {
        snprintf(param, sizeof param, "%.100s.tool_use_id", path);
        return tg_bridge_bad(err, param, "%s: a tool_result needs the tool_use_id it answers",
                             param);
    }
    result_acc a = {.moved = moved, .refs = json_array()};
    if (json_is_true(json_object_get(blk, "is_error")))
        tg_buf_puts(&a.t, "[tool error] ");
    const json_t *c = json_object_get(blk, "content");
    int rc = 0;
    if (json_is_string(c)) {
        tg_buf_append(&a.t, json_string_value(c), json_string_length(c));
    } else if (json_is_array(c)) {
        size_t i;
        const json_t *b;
        json_array_foreach(c, i, b) {
            snprintf(param, sizeof param, "%.100s.content[%zu]", path, i);
            if ((rc = result_block(&a, b, param, json_string_value(id), cv, err)))
                break;
        }
    } else if (c && !json_is_null(c)) {
        snprintf(param, sizeof param, "%.100s.content", path);
        rc = tg_bridge_bad(err, param, "%s: expected a string or an array of content blocks",
                           param);
    }
    if (!rc) {
        acc_references(&a, cv);
        json_array_append_new(messages, json_pack("{s:s, s:O, s:o}", "role", "tool",
                                                  "tool_call_id", id, "content",
                                                  result_content(&a, blk, cv)));
    }
    json_decref(a.refs);
    tg_buf_free(&a.t);
    return rc;
}

/* A block a user turn holds that no chat user message can: said, and
 * left out (the summary of a compaction is kept, as text). */
static int other_user_block(const json_t *blk, const char *type, const char *param,
                            json_t *parts, conv *cv, tg_error *err)
{
    if (!strcmp(type, "compaction")) {
        const char *c = json_string_value(json_object_get(blk, "content"));
        tg_msg_tool_changes(blk, cv);
        if (c && *c) {
            json_array_append_new(parts, text_part(c, strlen(c)));
            tg_bridge_drop(cv->translated, "content", "compaction");
        } else {
            tg_bridge_drop(cv->dropped, "content", "compaction");
        }
        return 0;
    }
    if (!strcmp(type, "tool_addition") && tg_msg_tool_addition(blk, cv))
        return 0;
    if (tg_msg_is_server_block(type) && cv->o->refuse_hosted)
        return tg_bridge_bad(err, param,
                             "%s: a block of a tool only Anthropic runs; the route refuses such "
                             "blocks (hosted_tools = refuse)",
                             param);
    if (tg_msg_is_declared_block(type)) {
        tg_bridge_drop(cv->dropped, "content", type);
        return 0;
    }
    return tg_bridge_bad(err, param, "%s: not a content block type of the Messages API", param);
}

/* A text block's citations (where Claude's cited answer points into a
 * document or a search result): chat text has no place for them, so the
 * text goes alone, said. */
void tg_msg_note_citations(const json_t *blk, conv *cv)
{
    if (json_array_size(json_object_get(blk, "citations")))
        tg_bridge_drop(cv->dropped, "content", "text.citations");
}

/* One block of a user message other than a tool_result, as parts. */
static int user_block(const json_t *blk, const char *type, const char *path, json_t *parts,
                      conv *cv, tg_error *err)
{
    char param[192];
    json_t *p = NULL;
    if (!strcmp(type, "text")) {
        const json_t *t = json_object_get(blk, "text");
        if (!json_is_string(t)) {
            snprintf(param, sizeof param, "%.100s.text", path);
            return tg_bridge_bad(err, param, "%s: a text block needs a string", param);
        }
        p = text_part(json_string_value(t), json_string_length(t));
        tg_msg_carry_cache(p, blk, cv);
        tg_msg_note_citations(blk, cv);
    } else if (!strcmp(type, "image")) {
        p = image_part(blk, path, cv, err);
    } else if (!strcmp(type, "document")) {
        return document_parts(blk, path, parts, cv, err);
    } else if (!strcmp(type, "search_result")) {
        p = search_result_part(blk, path, cv, err);
    } else {
        snprintf(param, sizeof param, "%.100s.type", path);
        return other_user_block(blk, type, param, parts, cv, err);
    }
    if (!p)
        return -1;
    json_array_append_new(parts, p);
    return 0;
}

/* Empty text parts out of parts: beside tool results (Claude Code's
 * empty block after them) they say nothing, and a user message of only
 * an empty text becomes an empty part Gemini refuses ("required oneof
 * field 'data'"). */
static void drop_empty_text(json_t *parts)
{
    for (size_t i = json_array_size(parts); i-- > 0;) {
        const json_t *p = json_array_get(parts, i);
        const json_t *t = json_object_get(p, "text");
        if (json_is_string(t) && !json_string_length(t) &&
            !json_object_get(p, "cache_control"))
            json_array_remove(parts, i);
    }
}

int tg_msg_user_message(const json_t *content, const char *path, json_t *messages, conv *cv,
                        tg_error *err)
{
    char param[192];
    json_t *parts = json_array(), *moved = json_array();
    size_t i, before = json_array_size(messages);
    const json_t *blk;
    int rc = 0;
    json_array_foreach(content, i, blk) {
        snprintf(param, sizeof param, "%.100s[%zu]", path, i);
        const char *type = json_string_value(json_object_get(blk, "type"));
        if (!type) {
            snprintf(param, sizeof param, "%.100s[%zu].type", path, i);
            rc = tg_bridge_bad(err, param, "%s: a content block names its type", param);
        } else if (!strcmp(type, "tool_result")) {
            rc = tool_result(blk, param, messages, moved, cv, err);
        } else {
            rc = user_block(blk, type, param, parts, cv, err);
        }
        if (rc)
            break;
    }
    if (!rc) {
        json_array_extend(moved, parts);
        if (json_array_size(messages) > before)
            drop_empty_text(moved);
        if (json_array_size(moved))
            json_array_append_new(messages, json_pack("{s:s, s:o}", "role", "user", "content",
                                                      tg_msg_content_of(json_incref(moved))));
    }
    json_decref(parts);
    json_decref(moved);
    return rc;
}

/* The tool of `tools` (Messages shape) named name, or NULL. */
const json_t *tg_msg_tool_named(const json_t *tools, const char *name)
{
    size_t i;
    const json_t *t;
    if (!name)
        return NULL;
    json_array_foreach(tools, i, t) {
        const char *n = json_string_value(json_object_get(t, "name"));
        if (n && !strcmp(n, name))
            return t;
    }
    return NULL;
}
