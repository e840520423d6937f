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
#include <poppler.h>
#include <string.h>

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
