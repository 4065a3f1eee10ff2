#include "tandem_tls.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

struct tdm_tls_context {
    SSL_CTX *ctx;
};

struct tdm_tls {
    SSL *ssl;
    BIO *in;   /* what the peer sent, fed by the caller; read by OpenSSL */
    BIO *out;  /* what OpenSSL wrote for the peer, taken by the caller */
    char error[256];
};

/* OpenSSL's reason for the last failure on this thread, after `what`; the queue is cleared. */
static void describe(char *error, size_t size, const char *what) {
    if (error == NULL || size == 0) return;
    unsigned long code = ERR_get_error();
    if (code == 0) {
        snprintf(error, size, "%s", what);
    } else {
        char reason[160];
        ERR_error_string_n(code, reason, sizeof reason);
        snprintf(error, size, "%s: %s", what, reason);
    }
    ERR_clear_error();
}

static SSL_CTX *common(int server) {
    SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    if (ctx == NULL) return NULL;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    if (server) SSL_CTX_set_num_tickets(ctx, 0);  /* nobody resumes: no tickets to send */
    return ctx;
}

tdm_tls_context *tdm_tls_server_context(const char *chain_path, const char *key_path, char *error, size_t error_size) {
    ERR_clear_error();
    SSL_CTX *ctx = common(1);
    if (ctx == NULL) {
        describe(error, error_size, "cannot make a TLS context");
        return NULL;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, chain_path) != 1) {
        describe(error, error_size, "cannot read the certificate chain (PEM)");
    } else if (SSL_CTX_use_PrivateKey_file(ctx, key_path, SSL_FILETYPE_PEM) != 1) {
        describe(error, error_size, "cannot read the private key (PEM)");
    } else if (SSL_CTX_check_private_key(ctx) != 1) {
        describe(error, error_size, "the private key does not match the certificate");
    } else {
        tdm_tls_context *context = calloc(1, sizeof *context);
        if (context != NULL) {
            context->ctx = ctx;
            return context;
        }
        describe(error, error_size, "out of memory");
    }
    SSL_CTX_free(ctx);
    return NULL;
}

tdm_tls_context *tdm_tls_client_context(int verify, const char *roots_path, char *error, size_t error_size) {
    ERR_clear_error();
    SSL_CTX *ctx = common(0);
    if (ctx == NULL) {
        describe(error, error_size, "cannot make a TLS context");
        return NULL;
    }
    if (verify) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        int loaded = roots_path != NULL ? SSL_CTX_load_verify_locations(ctx, roots_path, NULL)
                                        : SSL_CTX_set_default_verify_paths(ctx);
        if (loaded != 1) {
            describe(error, error_size, roots_path != NULL ? "cannot read the trust roots (PEM)"
                                                            : "cannot load the system's trust roots");
            SSL_CTX_free(ctx);
            return NULL;
        }
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    }
    tdm_tls_context *context = calloc(1, sizeof *context);
    if (context == NULL) {
        describe(error, error_size, "out of memory");
        SSL_CTX_free(ctx);
        return NULL;
    }
    context->ctx = ctx;
    return context;
}

static int digest(X509 *certificate, uint8_t sha256[32]) {
    unsigned int length = 0;
    return X509_digest(certificate, EVP_sha256(), sha256, &length) == 1 && length == 32;
}

int tdm_tls_context_leaf(const tdm_tls_context *context, uint8_t sha256[32], int *self_signed) {
    X509 *leaf = SSL_CTX_get0_certificate(context->ctx);
    if (leaf == NULL || !digest(leaf, sha256)) return 0;
    *self_signed = X509_NAME_cmp(X509_get_subject_name(leaf), X509_get_issuer_name(leaf)) == 0;
    return 1;
}

void tdm_tls_context_free(tdm_tls_context *context) {
    if (context == NULL) return;
    SSL_CTX_free(context->ctx);
    free(context);
}

tdm_tls *tdm_tls_new(tdm_tls_context *context, int server, const char *peer_name) {
    tdm_tls *tls = calloc(1, sizeof *tls);
    if (tls == NULL) return NULL;
    tls->ssl = SSL_new(context->ctx);
    tls->in = BIO_new(BIO_s_mem());
    tls->out = BIO_new(BIO_s_mem());
    if (tls->ssl == NULL || tls->in == NULL || tls->out == NULL) {
        SSL_free(tls->ssl);
        BIO_free(tls->in);
        BIO_free(tls->out);
        free(tls);
        return NULL;
    }
    /* An empty input means "more to come", not the end. */
    BIO_set_mem_eof_return(tls->in, -1);
    SSL_set_bio(tls->ssl, tls->in, tls->out);
    if (server) {
        SSL_set_accept_state(tls->ssl);
    } else {
        SSL_set_connect_state(tls->ssl);
        if (peer_name != NULL && peer_name[0] != '\0') {
            unsigned char address[16];
            int literal = inet_pton(AF_INET, peer_name, address) == 1 || inet_pton(AF_INET6, peer_name, address) == 1;
            int ok = 1;
            if (literal) {
                ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(tls->ssl), peer_name) == 1;
            } else if (strchr(peer_name, ':') != NULL) {
                /* An address with a zone (fe80::1%eth0): no server name to send, and no name a certificate has. */
                ok = SSL_set1_host(tls->ssl, peer_name) == 1;
            } else {
                ok = SSL_set_tlsext_host_name(tls->ssl, peer_name) == 1 && SSL_set1_host(tls->ssl, peer_name) == 1;
            }
            if (!ok) {
                tdm_tls_free(tls);
                return NULL;
            }
        }
    }
    return tls;
}

void tdm_tls_free(tdm_tls *tls) {
    if (tls == NULL) return;
    SSL_free(tls->ssl);  /* frees both BIOs */
    free(tls);
}

int tdm_tls_feed(tdm_tls *tls, const uint8_t *bytes, size_t count) {
    while (count > 0) {
        int chunk = count > (1 << 30) ? (1 << 30) : (int)count;
        int written = BIO_write(tls->in, bytes, chunk);
        if (written <= 0) return 0;
        bytes += written;
        count -= (size_t)written;
    }
    return 1;
}

/* Fills the connection's error after `result` of an SSL call, with the certificate check's reason when it failed. */
static void failed(tdm_tls *tls, int result, const char *what) {
    int code = SSL_get_error(tls->ssl, result);
    /* Without SSL_VERIFY_PEER the chain is still checked, and its result ignored: the caller pins. */
    long verified = (SSL_get_verify_mode(tls->ssl) & SSL_VERIFY_PEER) ? SSL_get_verify_result(tls->ssl) : X509_V_OK;
    if (verified != X509_V_OK) {
        snprintf(tls->error, sizeof tls->error, "%s: certificate verify failed: %s", what,
                 X509_verify_cert_error_string(verified));
        ERR_clear_error();
    } else if (code == SSL_ERROR_SSL) {
        describe(tls->error, sizeof tls->error, what);
    } else {
        snprintf(tls->error, sizeof tls->error, "%s (OpenSSL error %d)", what, code);
        ERR_clear_error();
    }
}

int tdm_tls_handshake(tdm_tls *tls) {
    ERR_clear_error();
    int result = SSL_do_handshake(tls->ssl);
    if (result == 1) return 1;
    int code = SSL_get_error(tls->ssl, result);
    if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) return 0;
    failed(tls, result, "TLS handshake failed");
    return -1;
}

long tdm_tls_read(tdm_tls *tls, uint8_t *buffer, size_t capacity) {
    ERR_clear_error();
    int want = capacity > (1 << 30) ? (1 << 30) : (int)capacity;
    int result = SSL_read(tls->ssl, buffer, want);
    if (result > 0) return result;
    int code = SSL_get_error(tls->ssl, result);
    if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) return 0;
    if (code == SSL_ERROR_ZERO_RETURN) return -2;
    failed(tls, result, "TLS failed");
    return -1;
}

int tdm_tls_write(tdm_tls *tls, const uint8_t *bytes, size_t count) {
    while (count > 0) {
        ERR_clear_error();
        int chunk = count > (1 << 30) ? (1 << 30) : (int)count;
        int result = SSL_write(tls->ssl, bytes, chunk);
        if (result <= 0) {
            failed(tls, result, "TLS write failed");
            return -1;
        }
        bytes += result;
        count -= (size_t)result;
    }
    return 1;
}

void tdm_tls_shutdown(tdm_tls *tls) {
    ERR_clear_error();
    (void)SSL_shutdown(tls->ssl);
    ERR_clear_error();
}

size_t tdm_tls_pending(const tdm_tls *tls) {
    return BIO_ctrl_pending(tls->out);
}

size_t tdm_tls_take(tdm_tls *tls, uint8_t *buffer, size_t capacity) {
    int want = capacity > (1 << 30) ? (1 << 30) : (int)capacity;
    int taken = BIO_read(tls->out, buffer, want);
    return taken > 0 ? (size_t)taken : 0;
}

int tdm_tls_peer_sha256(const tdm_tls *tls, uint8_t sha256[32]) {
    X509 *peer = SSL_get0_peer_certificate(tls->ssl);
    return peer != NULL && digest(peer, sha256);
}

void tdm_tls_error(const tdm_tls *tls, char *buffer, size_t size) {
    if (size == 0) return;
    snprintf(buffer, size, "%s", tls->error[0] != '\0' ? tls->error : "TLS failed");
}
