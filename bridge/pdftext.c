/* pdftext.c -- a PDF's text through poppler-glib (see pdftext.h).
 *
 * Why poppler: Debian's well-kept PDF library, with a small C (glib) API
 * for exactly this (poppler_document_new_from_bytes, poppler_page_get_text);
 * writing a PDF parser here would be a second, worse one. The document is
 * read from memory (GBytes over the decoded base64, never a file), page by
 * page, and the bounds of pdftext.h are checked between pages: a page is
 * the smallest unit poppler reads, so one huge page can pass the time
 * bound by its own cost, but never by a second page.
 */
#include "bridge/pdftext.h"

#include <glib.h>
#include <jansson.h>
#include <poppler.h>
#include <string.h>

#include "core/cache.h"
#include "core/hash.h"

/* Appends at most room bytes of s, cut at a UTF-8 boundary; true when all
 * of it went. */
static bool append_bounded(tg_buf *out, const char *s, size_t room)
{
    size_t n = strlen(s);
    if (n <= room) {
        tg_buf_append(out, s, n);
        return true;
    }
    while (room > 0 && ((unsigned char)s[room] & 0xC0) == 0x80)
        room--;
    tg_buf_append(out, s, room);
    return false;
}

static void read_pages(PopplerDocument *doc, long max_ms, tg_buf *out, tg_pdf_text *info)
{
    gint64 start = g_get_monotonic_time();
    size_t at = out->len;
    for (int i = 0; i < info->pages; i++) {
        if (i >= TG_PDF_MAX_PAGES ||
            (g_get_monotonic_time() - start) / 1000 > max_ms ||
            out->len - at >= TG_PDF_MAX_TEXT) {
            info->cut = true;
            return;
        }
        PopplerPage *page = poppler_document_get_page(doc, i);
        if (!page)
            continue;
        char *text = poppler_page_get_text(page);
        g_object_unref(page);
        if (i)
            tg_buf_puts(out, "\n\n");
        bool whole = append_bounded(out, text ? text : "", TG_PDF_MAX_TEXT - (out->len - at));
        g_free(text);
        info->pages_read++;
        if (!whole) {
            info->cut = true;
            return;
        }
    }
}

int tg_pdf_text_of_base64(const char *b64, size_t n, tg_buf *out, tg_pdf_text *info)
{
    return tg_pdf_text_within(b64, n, TG_PDF_MAX_MS, out, info);
}

int tg_pdf_text_within(const char *b64, size_t n, long max_ms, tg_buf *out, tg_pdf_text *info)
{
    memset(info, 0, sizeof *info);
    /* base64 is 4 bytes for 3: a longer text would decode past the bound */
    if (n / 4 * 3 > TG_PDF_MAX_BYTES || n < 8)  /* 8: more than "%PDF-" */
        return -1;
    char *text = g_strndup(b64, n);
    gsize len = 0;
    guchar *data = g_base64_decode_inplace(text, &len);
    GBytes *bytes = g_bytes_new_take(data, len);  /* owns text's memory now */
    GError *gerr = NULL;
    PopplerDocument *doc = poppler_document_new_from_bytes(bytes, NULL, &gerr);
    g_bytes_unref(bytes);
    if (!doc) {
        g_clear_error(&gerr);
        return -1;
    }
    info->pages = poppler_document_get_n_pages(doc);
    read_pages(doc, max_ms, out, info);
    g_object_unref(doc);
    return 0;
}

/* A base64 PDF's text as {text, pages, read, cut}, or {} when poppler
 * cannot open it (new reference), through the worker's cache. */
static json_t *read_cached(struct tg_cache *cache, const char *b64, size_t n)
{
    uint64_t key = tg_hash64(b64, n, 0);
    json_t *r = cache ? tg_cache_get(cache, "pdftext", key) : NULL;
    if (r)
        return r;
    tg_pdf_text info;
    tg_buf body = {0};
    if (tg_pdf_text_of_base64(b64, n, &body, &info))
        r = json_object();
    else
        r = json_pack("{s:s%, s:i, s:i, s:b}", "text", body.data ? body.data : "", body.len,
                      "pages", info.pages, "read", info.pages_read, "cut", info.cut);
    if (cache)
        tg_cache_put(cache, "pdftext", key, r, body.len + 64);
    tg_buf_free(&body);
    return r;
}

bool tg_pdf_as_text(struct tg_cache *cache, const char *b64, size_t n, const char *why, tg_buf *t)
{
    json_t *r = read_cached(cache, b64, n);
    const json_t *text = json_object_get(r, "text");
    if (!json_is_string(text)) {
        json_decref(r);
        return false;
    }
    int pages = (int)json_integer_value(json_object_get(r, "pages"));
    bool cut = json_is_true(json_object_get(r, "cut"));
    tg_buf_printf(t, "[the text of a %d-page PDF, extracted by toolgate: %s, so its layout and "
                     "images are not here%s]\n\n",
                  pages, why, cut ? "; cut at toolgate's bound" : "");
    tg_buf_append(t, json_string_value(text), json_string_length(text));
    if (cut)
        tg_buf_printf(t, "\n\n[... %d of %d pages shown]",
                      (int)json_integer_value(json_object_get(r, "read")), pages);
    json_decref(r);
    return true;
}
