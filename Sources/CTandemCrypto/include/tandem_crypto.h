#ifndef TANDEM_CRYPTO_H
#define TANDEM_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

/* The few primitives Tandem uses, from Debian's OpenSSL libcrypto (libssl-dev): SHA-256 and MD5, HMAC-SHA256,
 * AES-GCM, random bytes. OpenSSL's own headers stay in the C file, so that its names (SHA256, HMAC, MD5) do not
 * meet Swift's. Functions return 1 on success and 0 on failure unless they say otherwise. */

/* SHA-256 over several updates. A context from `tdm_sha256_new` or `tdm_sha256_copy` (NULL when out of memory),
 * freed with `tdm_sha256_free`. `tdm_sha256_digest` writes the 32-byte digest of what the context has seen so far
 * and leaves the context as it was. */
void *tdm_sha256_new(void);
void *tdm_sha256_copy(const void *context);
int tdm_sha256_update(void *context, const void *data, size_t count);
int tdm_sha256_digest(const void *context, uint8_t digest[32]);
void tdm_sha256_free(void *context);

/* One-shot digests: SHA-256 (32 bytes) and MD5 (16 bytes). */
int tdm_sha256(const void *data, size_t count, uint8_t digest[32]);
int tdm_md5(const void *data, size_t count, uint8_t digest[16]);

/* HMAC-SHA256 of `data` under `key` (any length, empty too): 32 bytes into `code`. */
int tdm_hmac_sha256(const void *key, size_t key_count, const void *data, size_t count, uint8_t code[32]);

/* AES-GCM with a 16-, 24- or 32-byte key (AES-128, -192, -256), a nonce of at least 1 byte (12 is GCM's own) and a
 * 16-byte tag. Seal: `count` bytes of `plaintext` into `ciphertext` (as many), and the tag. Open: returns 1 when the
 * tag authenticates the ciphertext and the additional data (the plaintext is then in `plaintext`), 0 when it does
 * not (`plaintext` is then zeroed), -1 on any other failure. */
int tdm_aes_gcm_seal(const uint8_t *key, size_t key_count, const uint8_t *nonce, size_t nonce_count,
                     const void *aad, size_t aad_count, const void *plaintext, size_t count,
                     uint8_t *ciphertext, uint8_t tag[16]);
int tdm_aes_gcm_open(const uint8_t *key, size_t key_count, const uint8_t *nonce, size_t nonce_count,
                     const void *aad, size_t aad_count, const void *ciphertext, size_t count,
                     const uint8_t tag[16], uint8_t *plaintext);

/* `count` bytes from OpenSSL's CSPRNG. */
int tdm_random(uint8_t *bytes, size_t count);

/* Zeroes `count` bytes in a way the compiler keeps (for keys no longer needed). */
void tdm_cleanse(void *bytes, size_t count);

#endif
