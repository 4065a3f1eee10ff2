#ifndef TANDEM_TLS_H
#define TANDEM_TLS_H

#include <stddef.h>
#include <stdint.h>

/* TLS from Debian's OpenSSL libssl, over memory buffers: the caller moves the bytes between the socket and the
 * connection (`tdm_tls_feed` what arrived, `tdm_tls_take` what to send), so the event loop's sockets stay its own.
 * OpenSSL's headers stay in the C file. TLS 1.2 and 1.3 only; no renegotiation, no compression.
 *
 * A context holds the configuration shared by many connections: a server's certificate chain and key, or a client's
 * way of checking the server (against trust roots, or not at all when the caller pins the certificate itself). */
typedef struct tdm_tls_context tdm_tls_context;
typedef struct tdm_tls tdm_tls;

/* A server's context from PEM files: the chain (the leaf first) and its private key. NULL on failure, with the
 * reason in `error` (`error_size` bytes at most, NUL-terminated). */
tdm_tls_context *tdm_tls_server_context(const char *chain_path, const char *key_path, char *error, size_t error_size);

/* A client's context. `verify` 1: the server's chain must lead to a trust root (those in the PEM file `roots_path`,
 * or the system's when NULL) and name the host the connection gives; 0: no check here (the caller compares the
 * certificate's digest after the handshake). NULL on failure, with the reason in `error`. */
tdm_tls_context *tdm_tls_client_context(int verify, const char *roots_path, char *error, size_t error_size);

/* The SHA-256 of the DER of a server context's leaf certificate, and whether it is self-signed (its subject is its
 * issuer). Returns 1, or 0 for a context without a certificate. */
int tdm_tls_context_leaf(const tdm_tls_context *context, uint8_t sha256[32], int *self_signed);

void tdm_tls_context_free(tdm_tls_context *context);

/* One connection on `context` (which it keeps alive): a server's, or a client's that checks (and names, by SNI)
 * `peer_name` — a host name or a literal IPv4/IPv6 address, NULL for none. NULL when out of memory. */
tdm_tls *tdm_tls_new(tdm_tls_context *context, int server, const char *peer_name);
void tdm_tls_free(tdm_tls *tls);

/* Bytes that arrived from the peer. Returns 1, 0 when out of memory. */
int tdm_tls_feed(tdm_tls *tls, const uint8_t *bytes, size_t count);

/* Advances the handshake with what was fed: 1 done, 0 needs more from the peer, -1 failed (`tdm_tls_error`). */
int tdm_tls_handshake(tdm_tls *tls);

/* Decrypted bytes into `buffer`: how many (> 0), 0 when none are complete yet, -1 on failure (`tdm_tls_error`), -2
 * when the peer ended the connection properly (its close_notify). */
long tdm_tls_read(tdm_tls *tls, uint8_t *buffer, size_t capacity);

/* Encrypts all `count` bytes (after the handshake): 1, or -1 on failure (`tdm_tls_error`). */
int tdm_tls_write(tdm_tls *tls, const uint8_t *bytes, size_t count);

/* Starts an orderly end (sends close_notify). */
void tdm_tls_shutdown(tdm_tls *tls);

/* How many bytes wait to be sent to the peer, and up to `capacity` of them taken into `buffer` (how many). */
size_t tdm_tls_pending(const tdm_tls *tls);
size_t tdm_tls_take(tdm_tls *tls, uint8_t *buffer, size_t capacity);

/* The SHA-256 of the DER of the certificate the peer showed: 1, or 0 when it showed none. */
int tdm_tls_peer_sha256(const tdm_tls *tls, uint8_t sha256[32]);

/* Why the last call that failed did (NUL-terminated, at most `size` bytes). */
void tdm_tls_error(const tdm_tls *tls, char *buffer, size_t size);

#endif
