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

#include "../sanitize/buf.h"
#include "../sanitize/tg.h"

typedef struct tg_header {
    char *name;
    char *value;
} tg_header;

typedef struct tg_header_list {
    tg_header *v;
    size_t n, cap;
} tg_header_list;

/* "Name: value\r\n" as curl hands it over. */
void tg_header_list_add_line(tg_header_list *l, const char *line, size_t n);
const char *tg_header_get(const tg_header_list *l, const char *name);
void tg_header_list_free(tg_header_list *l);

/* Hop-by-hop and framing headers that never cross the proxy as they are. */
bool tg_header_is_hop(const char *name);

/* MHD_KeyValueIterator: copies the client's headers worth forwarding. */
typedef struct tg_forward_ctx {
    struct curl_slist **list;
    bool drop_auth;  /* the route has its own api_key */
    const char *key_header;  /* NULL, or a header that also carries a key
                                (x-api-key), dropped with drop_auth */
} tg_forward_ctx;
enum MHD_Result tg_forward_request_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                          const char *value);

/* Appends "?a=b&c" rebuilt from the request's query arguments, if any. */
void tg_append_query(struct MHD_Connection *conn, tg_buf *url);

bool tg_consttime_equal(const char *a, const char *b);
bool tg_header_value_safe(const char *v);
/* A new request id from the caller's PRNG state (seed it with
 * tg_random_seed; one state per thread). */
void tg_request_id(char *out, size_t n, uint64_t *state);
uint64_t tg_random_seed(void);

/* The shape checks a chat request must pass before any stage runs: an
 * object with a messages array, a string model, tools an array of at most
 * max_tools, stream a boolean... Fills err naming the field. tools_checked:
 * this very tools array passed before (the worker's cache knows it), so its
 * entries are not walked again. */
int tg_validate_chat_request(json_t *body, int max_tools, bool tools_checked, tg_error *err);

#endif
