/* http.h -- small HTTP and request helpers of the proxy: header lists,
 * header forwarding rules, request ids, cheap request checks. Pure
 * functions, testable without sockets. */
#ifndef TG_HTTP_H
#define TG_HTTP_H

#include <curl/curl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"
#include "core/tg.h"

typedef struct tg_header {
    char *name;   /* owns the block */
    char *value;  /* inside name's block: not freed on its own */
} tg_header;

typedef struct tg_header_list {
    tg_header *v;
    size_t n, cap;
} tg_header_list;

/* "Name: value\r\n" as curl hands it over. */
void tg_header_list_add_line(tg_header_list *l, const char *line, size_t n);
const char *tg_header_get(const tg_header_list *l, const char *name);
/* Removes every header of that name (any case). */
void tg_header_list_del(tg_header_list *l, const char *name);
void tg_header_list_free(tg_header_list *l);

/* Hop-by-hop and framing headers that never cross the proxy as they are. */
bool tg_header_is_hop(const char *name);

/* Headers that carry a provider key (Authorization, x-api-key, api-key,
 * x-goog-api-key). */
bool tg_header_is_credential(const char *name);
/* Is a client header that is not a credential forwarded upstream: on the
 * built-in allow-list (http.c) or named by extra (forward_headers; a name
 * ending in '*' is a prefix)? */
bool tg_header_forwarded(const char *name, char *const *extra);

/* MHD_KeyValueIterator: copies the client's headers worth forwarding. */
typedef struct tg_forward_ctx {
    struct curl_slist **list;
    bool drop_auth;          /* the route has its own api_key: no client key goes */
    const char *client_key;  /* the client_keys entry the request matched, or NULL:
                                it never goes upstream, in any header */
    const char *upstream_auth;  /* x-upstream-authorization, or NULL: sent as
                                   Authorization by the caller */
    char *const *extra;      /* forward_headers */
} tg_forward_ctx;
enum MHD_Result tg_forward_request_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                          const char *value);

/* Does a request path (as MHD hands it over, decoded once) hold a dot
 * segment, raw or percent-encoded? Such a path could name something
 * outside its route once a server normalizes it; toolgate refuses it. */
bool tg_path_has_dot_segment(const char *path);
/* Appends a decoded path to a URL, encoding again what a path cannot hold
 * as it is ('?', '#', '%', spaces, bytes past ASCII). */
void tg_append_path(tg_buf *url, const char *path);

/* Appends "?a=b&c" rebuilt from the request's query arguments, if any. */
void tg_append_query(struct MHD_Connection *conn, tg_buf *url);

bool tg_consttime_equal(const char *a, const char *b);
bool tg_header_value_safe(const char *v);
/* Appends the header line "name: value" to *list, every CR and LF of the
 * value written as a space (RFC 9110 5.5: a recipient replaces them or
 * rejects the message). A client's header may carry a bare CR that
 * libmicrohttpd keeps; sent as it came, an upstream that ends lines at CR
 * would read a header the client wrote. Every line toolgate sends upstream
 * from what a client sent is written here. */
void tg_header_line_append(struct curl_slist **list, const char *name, const char *value);
/* Random bytes from the kernel's CSPRNG (getrandom), drawn 4 KB at a time
 * so that an id costs no syscall of its own (an id: about 110 ns, against
 * 45 ns for the xorshift64* it replaces, measured 1M ids in a loop). One
 * tg_random per thread; start it with tg_random_init. */
typedef struct tg_random {
    unsigned char pool[4096];
    size_t off;
} tg_random;
void tg_random_init(tg_random *r);
void tg_random_bytes(tg_random *r, void *out, size_t n);
/* A new id, "tg-" and TG_ID_CHARS base32 characters (130 bits): request
 * ids, and the names of bridged Responses and their items. n >= 30. */
#define TG_ID_CHARS 26
void tg_request_id(char *out, size_t n, tg_random *r);

/* The shape checks a chat request must pass before any stage runs: an
 * object with a messages array, a string model, tools an array of at most
 * max_tools, stream a boolean... Fills err naming the field. tools_checked:
 * this very tools array passed before (the worker's cache knows it), so its
 * entries are not walked again. */
int tg_validate_chat_request(json_t *body, int max_tools, bool tools_checked, tg_error *err);

#endif
