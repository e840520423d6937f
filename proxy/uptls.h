/* uptls.h -- TLS for toolgate's own upstream client (proxy/upconn.c): a
 * worker's OpenSSL contexts, one per trust identity (CA file and
 * directory, client certificate), each loading its CA store once, and the
 * TLS sessions kept per upstream so that a new connection resumes.
 *
 * Verification is as strict as libcurl's: the chain against the CA store,
 * the certificate's names against the host name (or its IP addresses
 * against an IP literal), SNI for names, TLS 1.2 at least. ALPN offers
 * http/1.1 alone: this client speaks nothing else.
 *
 * Ownership: the worker owns its uptls; an SSL from uptls_open is the
 * connection's and goes back through uptls_close.
 */
#ifndef TG_UPTLS_H
#define TG_UPTLS_H

#include <curl/curl.h>
#include <openssl/ssl.h>
#include <stddef.h>

/* Whom a route trusts and what it shows (conf/conf.h's tls_* fields;
 * ca_file is the built-in bundle when the route names neither). */
typedef struct {
    const char *ca_file, *ca_path, *cert, *key;
} tg_tls_id;

typedef struct uptls uptls;

uptls *uptls_new(void);
void uptls_free(uptls *t);

/* A client SSL for a connection to host, on fd, under id; its session is
 * resumed from (and later kept under) key. NULL with why filled when the
 * context cannot be made (an unreadable CA file, a bad client key). */
SSL *uptls_open(uptls *t, const tg_tls_id *id, const char *host, const char *key, int fd,
                char *why, size_t whylen);
void uptls_close(SSL *ssl);

/* A failed handshake or read (ret from SSL_connect/SSL_read): the CURLcode
 * libcurl gives the same failure, and its reason in why. */
CURLcode uptls_failure(SSL *ssl, int ret, char *why, size_t whylen);

#endif
