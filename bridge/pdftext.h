/* pdftext.h -- the text of a PDF, for a bridge whose target takes no PDF
 * (a chat provider without `file` content parts): the model gets the
 * document's words rather than nothing, and the agent is told (the bridge
 * says it in X-Toolgate-Translated). Poppler (Debian's libpoppler-glib)
 * reads the PDF; every read is bounded in input bytes, pages, text bytes
 * and time, and a bound reached cuts the text (said in it), never fails
 * the request. Ownership follows core/tg.h. */
#ifndef TG_PDFTEXT_H
#define TG_PDFTEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"

/* The bounds of one document's read. */
enum {
    TG_PDF_MAX_BYTES = 32 * 1024 * 1024,  /* decoded PDF bytes read at all */
    TG_PDF_MAX_PAGES = 100,               /* pages whose text is taken */
    TG_PDF_MAX_TEXT = 256 * 1024,         /* text bytes given to the model */
    TG_PDF_MAX_MS = 2000,                 /* time spent on one document */
};

typedef struct tg_pdf_text {
    int pages;        /* pages in the document */
    int pages_read;   /* pages whose text was taken */
    bool cut;         /* a bound stopped the read before the end */
} tg_pdf_text;

/* The text of the PDF whose base64 is b64 (n bytes), pages separated by
 * form feeds' places as blank lines, appended to out; what was read in
 * *info. 0, or -1 when the data is no PDF poppler can open (out then holds
 * nothing new). */
int tg_pdf_text_of_base64(const char *b64, size_t n, tg_buf *out, tg_pdf_text *info);

/* The same with a time bound of max_ms instead of TG_PDF_MAX_MS (tests
 * of the other bounds give it room a loaded machine needs). */
int tg_pdf_text_within(const char *b64, size_t n, long max_ms, tg_buf *out, tg_pdf_text *info);

#endif
