/* uptls.c -- the own client's TLS (uptls.h): contexts per trust identity,
 * sessions per upstream, libcurl's verification and its error words.
 *
 * Why not libcurl for https: a round through libcurl costs about twice
 * nginx's CPU on the bench's https rows (its multi state machine, its
 * head formatting, two polls a request), while the own client's rounds
 * cost 1.5x on plain http; the crypto itself is a few percent
 * (bench/README.md). The contexts are the worker's, so one CA store is
 * parsed once per worker and identity, never per connection.
 */
#include "proxy/uptls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

#define N_CTX 16
#define N_SESS 64

typedef struct {
    char *ca_file, *ca_path, *cert, *key;
    SSL_CTX *ctx;
} ctx_slot;

typedef struct {
    char key[300];
    SSL_SESSION *sess;
} sess_slot;

struct uptls {
    ctx_slot ctx[N_CTX];
    int next_ctx;
    sess_slot sess[N_SESS];
    int next_sess;
};

/* What an SSL carries (its app data): where its new sessions go. */
typedef struct {
    uptls *t;
    char key[300];
} conn_note;

uptls *uptls_new(void)
{
    return tg_calloc(1, sizeof(uptls));
}

static void ctx_clear(ctx_slot *s)
{
    free(s->ca_file);
    free(s->ca_path);
    free(s->cert);
    free(s->key);
    if (s->ctx)
        SSL_CTX_free(s->ctx);
    memset(s, 0, sizeof *s);
}

void uptls_free(uptls *t)
{
    if (!t)
        return;
    for (int i = 0; i < N_CTX; i++)
        ctx_clear(&t->ctx[i]);
    for (int i = 0; i < N_SESS; i++)
        if (t->sess[i].sess)
            SSL_SESSION_free(t->sess[i].sess);
    free(t);
}

static bool same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static sess_slot *sess_find(uptls *t, const char *key, bool make)
{
    for (int i = 0; i < N_SESS; i++)
        if (t->sess[i].key[0] && !strcmp(t->sess[i].key, key))
            return &t->sess[i];
    if (!make)
        return NULL;
    sess_slot *s = &t->sess[t->next_sess];
    t->next_sess = (t->next_sess + 1) % N_SESS;
    if (s->sess)
        SSL_SESSION_free(s->sess);
    s->sess = NULL;
    snprintf(s->key, sizeof s->key, "%s", key);
    return s;
}

/* OpenSSL hands over a session it may resume (TLS 1.3 sends them after
 * the handshake): the upstream's slot keeps the newest. */
static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
    conn_note *n = SSL_get_app_data(ssl);
    if (!n || !n->key[0])
        return 0;
    sess_slot *s = sess_find(n->t, n->key, true);
    if (s->sess)
        SSL_SESSION_free(s->sess);
    s->sess = sess;
    return 1;  /* the reference is ours */
}

static void openssl_why(const char *what, char *why, size_t whylen)
{
    unsigned long e = ERR_get_error();
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    snprintf(why, whylen, "%s: %s", what, e ? buf : "unknown error");
    ERR_clear_error();
}

static SSL_CTX *ctx_make(const tg_tls_id *id, char *why, size_t whylen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        openssl_why("SSL_CTX_new", why, whylen);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    /* buffers kept while a connection idles: releasing them costs a
     * malloc and free of 16 KB and more every request */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* an upstream that closes without close_notify ends an until-close
     * answer as libcurl reads it, not as a read error */
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_COMPRESSION);
    /* read what the socket has in one call, not a record's 5-byte header
     * and then its body: one read a small answer instead of two. Bytes read
     * ahead are pending in OpenSSL (SSL_has_pending), which upconn.c asks
     * before it waits on the socket again. */
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, on_new_session);
    static const unsigned char alpn[] = "\x08http/1.1";
    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn - 1);
    if ((id->ca_file || id->ca_path) &&
        SSL_CTX_load_verify_locations(ctx, id->ca_file, id->ca_path) != 1) {
        openssl_why("error setting certificate verify locations", why, whylen);
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (id->cert && (SSL_CTX_use_certificate_chain_file(ctx, id->cert) != 1 ||
                     SSL_CTX_use_PrivateKey_file(ctx, id->key ? id->key : id->cert,
                                                 SSL_FILETYPE_PEM) != 1 ||
                     SSL_CTX_check_private_key(ctx) != 1)) {
        openssl_why("unable to use client certificate", why, whylen);
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static SSL_CTX *ctx_for(uptls *t, const tg_tls_id *id, char *why, size_t whylen)
{
    for (int i = 0; i < N_CTX; i++) {
        ctx_slot *s = &t->ctx[i];
        if (s->ctx && same(s->ca_file, id->ca_file) && same(s->ca_path, id->ca_path) &&
            same(s->cert, id->cert) && same(s->key, id->key))
            return s->ctx;
    }
    SSL_CTX *ctx = ctx_make(id, why, whylen);
    if (!ctx)
        return NULL;
    ctx_slot *s = &t->ctx[t->next_ctx];  /* SSLs still open hold their own reference */
    t->next_ctx = (t->next_ctx + 1) % N_CTX;
    ctx_clear(s);
    s->ca_file = id->ca_file ? tg_strdup(id->ca_file) : NULL;
    s->ca_path = id->ca_path ? tg_strdup(id->ca_path) : NULL;
    s->cert = id->cert ? tg_strdup(id->cert) : NULL;
    s->key = id->key ? tg_strdup(id->key) : NULL;
    s->ctx = ctx;
    return ctx;
}

SSL *uptls_open(uptls *t, const tg_tls_id *id, const char *host, const char *key, int fd,
                char *why, size_t whylen)
{
    SSL_CTX *ctx = ctx_for(t, id, why, whylen);
    if (!ctx)
        return NULL;
    SSL *ssl = SSL_new(ctx);
    if (!ssl) {
        openssl_why("SSL_new", why, whylen);
        return NULL;
    }
    unsigned char ip[16];
    bool literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    int ok = SSL_set_fd(ssl, fd);
    if (literal) {  /* IP literals: checked against the IP SANs, no SNI (RFC 6066) */
        ok = ok && X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host);
    } else {
        ok = ok && SSL_set_tlsext_host_name(ssl, host) && SSL_set1_host(ssl, host);
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    }
    if (!ok) {
        openssl_why("setting the peer's name", why, whylen);
        SSL_free(ssl);
        return NULL;
    }
    conn_note *n = tg_calloc(1, sizeof *n);
    n->t = t;
    snprintf(n->key, sizeof n->key, "%s", key);
    SSL_set_app_data(ssl, n);
    sess_slot *s = sess_find(t, key, false);
    if (s && s->sess)
        SSL_set_session(ssl, s->sess);
    SSL_set_connect_state(ssl);
    return ssl;
}

/* A connection closed without close_notify (the upstream's close, the
 * pool's, an answer cut) keeps its session resumable: OpenSSL otherwise
 * takes SSL_free of an SSL that sent no shutdown for a "bad" session
 * and marks it not resumable -- the very object the upstream's slot
 * holds, so every later connection made a full handshake (the bench's
 * closing upstream: 1,205 bytes of server handshake each time, no
 * resumption). RFC 5246 (7.2.1) no longer asks that a session be
 * dropped for an unclean close; a fatal alert still drops it inside
 * OpenSSL. */
void uptls_close(SSL *ssl)
{
    if (!ssl)
        return;
    if (SSL_is_init_finished(ssl))
        SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    free(SSL_get_app_data(ssl));
    SSL_set_app_data(ssl, NULL);
    SSL_free(ssl);
}

CURLcode uptls_failure(SSL *ssl, int ret, char *why, size_t whylen)
{
    long v = SSL_get_verify_result(ssl);
    int e = SSL_get_error(ssl, ret);
    if (v != X509_V_OK && !SSL_is_init_finished(ssl)) {
        if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH)
            snprintf(why, whylen, "SSL: no alternative certificate subject name matches target "
                                  "host name (%s)", X509_verify_cert_error_string(v));
        else
            snprintf(why, whylen, "SSL certificate problem: %s", X509_verify_cert_error_string(v));
        ERR_clear_error();
        return CURLE_PEER_FAILED_VERIFICATION;
    }
    if (e == SSL_ERROR_SYSCALL && !ERR_peek_error()) {
        snprintf(why, whylen, "TLS connection closed by the upstream");
        return SSL_is_init_finished(ssl) ? CURLE_RECV_ERROR : CURLE_SSL_CONNECT_ERROR;
    }
    openssl_why(SSL_is_init_finished(ssl) ? "OpenSSL SSL_read" : "OpenSSL SSL_connect", why,
                whylen);
    return SSL_is_init_finished(ssl) ? CURLE_RECV_ERROR : CURLE_SSL_CONNECT_ERROR;
}
