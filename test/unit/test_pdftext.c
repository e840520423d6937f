/* test_pdftext.c -- a PDF's text for the Messages bridge (bridge/pdftext.h):
 * every page's text in order; the page and text bounds cut the text and
 * say so, never fail; data that is no PDF, or base64 past the byte bound,
 * is refused without a crash. The PDFs are written here, page by page,
 * with their cross-reference table, as a PDF writer would. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/pdftext.h"
#include "core/buf.h"

/* A PDF of n pages, page i showing text(i), as base64 in out. */
static void make_pdf(int n, const char *(*text)(int i, char *scratch), tg_buf *out)
{
    tg_buf pdf = {0};
    size_t *offs = calloc((size_t)(2 * n + 3), sizeof *offs);
    int obj = 0;
    tg_buf_puts(&pdf, "%PDF-1.4\n");
    offs[obj++] = pdf.len;
    tg_buf_puts(&pdf, "1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n");
    offs[obj++] = pdf.len;
    tg_buf_printf(&pdf, "2 0 obj\n<< /Type /Pages /Count %d /Kids [", n);
    for (int i = 0; i < n; i++)
        tg_buf_printf(&pdf, " %d 0 R", 3 + 2 * i);
    tg_buf_puts(&pdf, " ] >>\nendobj\n");
    int font = 3 + 2 * n;
    for (int i = 0; i < n; i++) {
        char scratch[64];
        const char *t = text(i, scratch);
        offs[obj++] = pdf.len;
        /* the largest page PDF allows: poppler gives only the text on it */
        tg_buf_printf(&pdf,
                      "%d 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 14400 14400] "
                      "/Contents %d 0 R /Resources << /Font << /F1 %d 0 R >> >> >>\nendobj\n",
                      3 + 2 * i, 4 + 2 * i, font);
        tg_buf content = {0};  /* a line of text a line of t */
        tg_buf_puts(&content, "BT /F1 10 Tf 12 TL 10 14380 Td\n");
        for (const char *l = t; *l;) {
            size_t k = strcspn(l, "\n");
            tg_buf_puts(&content, "(");
            tg_buf_append(&content, l, k);
            tg_buf_puts(&content, ") '\n");
            l += k + (l[k] == '\n');
        }
        tg_buf_puts(&content, "ET");
        offs[obj++] = pdf.len;
        tg_buf_printf(&pdf, "%d 0 obj\n<< /Length %zu >>\nstream\n%.*s\nendstream\nendobj\n",
                      4 + 2 * i, content.len, (int)content.len, content.data);
        tg_buf_free(&content);
    }
    offs[obj++] = pdf.len;
    tg_buf_printf(&pdf, "%d 0 obj\n<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>\nendobj\n",
                  font);
    size_t xref = pdf.len;
    tg_buf_printf(&pdf, "xref\n0 %d\n0000000000 65535 f \n", obj + 1);
    for (int i = 0; i < obj; i++)
        tg_buf_printf(&pdf, "%010zu 00000 n \n", offs[i]);
    tg_buf_printf(&pdf, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%zu\n%%%%EOF\n", obj + 1,
                  xref);
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = (const unsigned char *)pdf.data;
    for (size_t i = 0; i < pdf.len; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < pdf.len ? (unsigned)p[i + 1] << 8 : 0) |
                     (i + 2 < pdf.len ? p[i + 2] : 0);
        char q[4] = {b64[v >> 18 & 63], b64[v >> 12 & 63],
                     i + 1 < pdf.len ? b64[v >> 6 & 63] : '=', i + 2 < pdf.len ? b64[v & 63] : '='};
        tg_buf_append(out, q, 4);
    }
    tg_buf_free(&pdf);
    free(offs);
}

static const char *page_name(int i, char *scratch)
{
    snprintf(scratch, 64, "page %d here", i + 1);
    return scratch;
}

static void test_every_page_in_order(void **state)
{
    (void)state;
    tg_buf b = {0}, out = {0};
    make_pdf(3, page_name, &b);
    tg_pdf_text info;
    assert_int_equal(tg_pdf_text_of_base64(b.data, b.len, &out, &info), 0);
    assert_int_equal(info.pages, 3);
    assert_int_equal(info.pages_read, 3);
    assert_false(info.cut);
    tg_buf_append(&out, "", 1);
    char *one = strstr(out.data, "page 1 here"), *three = strstr(out.data, "page 3 here");
    assert_non_null(one);
    assert_non_null(three);
    assert_true(one < strstr(out.data, "page 2 here") && strstr(out.data, "page 2 here") < three);
    tg_buf_free(&b);
    tg_buf_free(&out);
}

static void test_page_bound_cuts(void **state)
{
    (void)state;
    tg_buf b = {0}, out = {0};
    make_pdf(TG_PDF_MAX_PAGES + 5, page_name, &b);
    tg_pdf_text info;
    assert_int_equal(tg_pdf_text_within(b.data, b.len, 600000, &out, &info), 0);
    assert_int_equal(info.pages, TG_PDF_MAX_PAGES + 5);
    assert_int_equal(info.pages_read, TG_PDF_MAX_PAGES);
    assert_true(info.cut);
    tg_buf_append(&out, "", 1);
    assert_non_null(strstr(out.data, "page 100 here"));
    assert_null(strstr(out.data, "page 101 here"));
    tg_buf_free(&b);
    tg_buf_free(&out);
}

/* pages of 40 KB of words each: the text bound falls inside page 7 */
static const char *long_page(int i, char *scratch)
{
    (void)i;
    (void)scratch;
    static char text[40 * 1024 + 1];
    if (!text[0])
        for (size_t k = 0; k + 1 < sizeof text; k++)
            text[k] = k % 200 == 199 ? '\n' : k % 8 == 7 ? ' ' : "abcdefg"[k % 8];
    return text;
}

static void test_text_bound_cuts(void **state)
{
    (void)state;
    tg_buf b = {0}, out = {0};
    make_pdf(9, long_page, &b);
    tg_pdf_text info;
    /* the text bound, not the time bound: ten minutes of room (under ASan
     * on a loaded machine the 2 s bound came first) */
    assert_int_equal(tg_pdf_text_within(b.data, b.len, 600000, &out, &info), 0);
    assert_true(info.cut);
    assert_true(info.pages_read < 9);
    assert_true(out.len <= TG_PDF_MAX_TEXT);
    assert_true(out.len > TG_PDF_MAX_TEXT - 1024);
    tg_buf_free(&b);
    tg_buf_free(&out);
}

/* the time bound, spent before the first page: the read stops, cut, and
 * the document still answers (no failure) */
static void test_time_bound_cuts(void **state)
{
    (void)state;
    tg_buf b = {0}, out = {0};
    make_pdf(3, page_name, &b);
    tg_pdf_text info;
    assert_int_equal(tg_pdf_text_within(b.data, b.len, -1, &out, &info), 0);
    assert_int_equal(info.pages, 3);
    assert_int_equal(info.pages_read, 0);
    assert_true(info.cut);
    tg_buf_free(&b);
    tg_buf_free(&out);
}

static void test_no_pdf_refused(void **state)
{
    (void)state;
    tg_buf out = {0};
    tg_pdf_text info;
    assert_int_equal(tg_pdf_text_of_base64("aGVsbG8gd29ybGQ=", 16, &out, &info), -1);
    assert_int_equal(tg_pdf_text_of_base64("", 0, &out, &info), -1);
    assert_int_equal(tg_pdf_text_of_base64("JVBERi0=", 8, &out, &info), -1);  /* "%PDF-" */
    assert_int_equal(tg_pdf_text_of_base64("!!!not base64!!!", 16, &out, &info), -1);
    assert_int_equal(out.len, 0);
    /* past the byte bound: refused before a byte of it is read */
    assert_int_equal(tg_pdf_text_of_base64("", (size_t)TG_PDF_MAX_BYTES / 3 * 4 + 8, &out, &info),
                     -1);
    tg_buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_page_in_order),
        cmocka_unit_test(test_page_bound_cuts),
        cmocka_unit_test(test_text_bound_cuts),
        cmocka_unit_test(test_time_bound_cuts),
        cmocka_unit_test(test_no_pdf_refused),
    };
    return cmocka_run_group_tests_name("pdftext", tests, NULL, NULL);
}
