/* tg.h -- the shared vocabulary of every toolgate stage.
 *
 * The pipeline, as the code runs it:
 *
 *   request -> route -> hygiene -> schema dialect -> discovery -> upstream
 *           -> repair -> discovery intercept -> agent
 *
 * Every stage is a plain function over jansson values plus a tg_ctx, so each
 * one is testable without sockets; the network code (proxy/) only moves bytes
 * and calls tg_pipeline_* (pipeline/pipeline.h).
 *
 * OWNERSHIP RULE (stated once, followed everywhere, as in jq's jv.h):
 *   - A function that takes a json_t * BORROWS it. The caller keeps its
 *     reference; the callee increfs if it wants to keep the value.
 *   - A function that returns a json_t * returns a NEW reference; the caller
 *     must json_decref it. Functions returning a borrowed pointer say so in
 *     their comment and end in _peek.
 *   - Stages edit the body they are given IN PLACE.
 *   - Inside our code, jansson's reference-stealing calls are used only
 *     through their _new variants (json_object_set_new, json_array_append_new)
 *     and only with a value created on the same line or just above it.
 *
 * OUT-OF-MEMORY POLICY (as redis and jq): a failed allocation aborts the
 *   process with a one-line message. Our code allocates through core/alloc.h
 *   (tg_malloc, tg_calloc, tg_realloc, tg_strdup, tg_strndup) and jansson
 *   through the same tg_malloc (json_set_alloc_funcs, before main), so no
 *   function returns -1 or NULL for out-of-memory and nothing checks for it:
 *   a -1 or NULL that remains means a real error (bad input, a size bound,
 *   an I/O failure), and each is handled. Sizes a client controls are
 *   bounded before they are allocated. libcurl and libmicrohttpd allocate on
 *   their own and report their failures as errors.
 *
 * Errors: a stage that refuses a request fills a tg_error (OpenAI error
 * shape) and returns -1. Stages never print; they record changes in
 * ctx->explain when it is non-NULL.
 */
#ifndef TG_H
#define TG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* OpenAI-shaped error: {"error":{"message","type","param","code"}}. */
typedef struct tg_error {
    int status;            /* HTTP status to answer with */
    const char *type;      /* "invalid_request_error", ... (static string) */
    const char *code;      /* static string or NULL */
    char param[128];       /* "" when none */
    char message[1024];
} tg_error;

void tg_error_set(tg_error *err, int status, const char *type, const char *code,
                  const char *param, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Serialize as the OpenAI error body. Returns malloc'd NUL-terminated text,
 * never NULL: bytes of message or param that are not UTF-8 become U+FFFD. */
char *tg_error_body(const tg_error *err);

/* Record one change for --explain and the debug log: stage ("schema",
 * "hygiene", "repair", "discovery"), where (tool name or message index, may
 * be NULL), JSON pointer, rule id, and before/after values (borrowed, may be
 * NULL). No-op when explain is NULL. */
void tg_explain_add(json_t *explain, const char *stage, const char *where,
                    const char *pointer, const char *rule,
                    json_t *before, json_t *after);

/* The entry of an OpenAI tools[] array whose function is called name
 * (borrowed), or NULL; NULL tools or name find nothing. */
const json_t *tg_tool_peek(const json_t *tools, const char *name);

/* Is w in sorted, a strcmp-sorted array of n words? (bsearch; the word
 * lists of discovery: stop words, verbs, generic parameter words). */
bool tg_word_listed(const char *const *sorted, size_t n, const char *w);
#define TG_WORD_LISTED(arr, w) tg_word_listed((arr), sizeof(arr) / sizeof((arr)[0]), (w))

/* Where the JSON container ({...} or [...]) starting at s ends: just past
 * its closing bracket, or NULL when it does not close before e. Strings
 * (with escapes) are skipped, so brackets inside them do not count. One
 * scanner for every place that must find a value's bytes without parsing. */
const char *tg_json_value_end(const char *s, const char *e);
/* The length of s[0..n) cut to at most max bytes, backed up to the start
 * of a UTF-8 character so that no character is split. */
size_t tg_utf8_cut(const char *s, size_t n, size_t max);
/* Cheap pre-parse scan: does the JSON text nest deeper than max? Run
 * before jansson, whose parser recurses. */
bool tg_json_depth_exceeds(const char *p, size_t n, int max);

/* The host and port of a URL's authority a[0..n) ("h", "h:p", "[v6]:p"):
 * the host, without brackets, copied NUL-terminated into host[cap]; *port
 * set only when a port is given (digits, 1..65535). -1 when malformed or
 * the host does not fit. For the upstream and redis:// URLs alike. */
int tg_split_host_port(const char *a, size_t n, char *host, size_t cap, unsigned *port);

/* About to build `bytes` of new JSON values (an unseen tool list): have the
 * heap's pages mapped in one system call instead of one page fault each,
 * which on virtual machines costs microseconds a page. Best effort. */
void tg_heap_prefault(size_t bytes);

#endif
