#include "tandem_crypto.h"

#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

void *tdm_sha256_new(void) {
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    if (context == NULL) return NULL;
    if (EVP_DigestInit_ex(context, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(context);
        return NULL;
    }
    return context;
}

void *tdm_sha256_copy(const void *context) {
    EVP_MD_CTX *copy = EVP_MD_CTX_new();
    if (copy == NULL) return NULL;
    if (EVP_MD_CTX_copy_ex(copy, (const EVP_MD_CTX *)context) != 1) {
        EVP_MD_CTX_free(copy);
        return NULL;
    }
    return copy;
}

int tdm_sha256_update(void *context, const void *data, size_t count) {
    if (count == 0) return 1;
    return EVP_DigestUpdate((EVP_MD_CTX *)context, data, count) == 1;
}

int tdm_sha256_digest(const void *context, uint8_t digest[32]) {
    EVP_MD_CTX *copy = tdm_sha256_copy(context);
    if (copy == NULL) return 0;
    unsigned int length = 0;
    int ok = EVP_DigestFinal_ex(copy, digest, &length) == 1 && length == 32;
    EVP_MD_CTX_free(copy);
    return ok;
}

void tdm_sha256_free(void *context) { EVP_MD_CTX_free((EVP_MD_CTX *)context); }

static int digest(const EVP_MD *md, const void *data, size_t count, uint8_t *out, unsigned int expected) {
    static const uint8_t nothing = 0;
    unsigned int length = 0;
    return EVP_Digest(count ? data : &nothing, count, out, &length, md, NULL) == 1 && length == expected;
}

int tdm_sha256(const void *data, size_t count, uint8_t out[32]) { return digest(EVP_sha256(), data, count, out, 32); }

int tdm_md5(const void *data, size_t count, uint8_t out[16]) { return digest(EVP_md5(), data, count, out, 16); }

int tdm_hmac_sha256(const void *key, size_t key_count, const void *data, size_t count, uint8_t code[32]) {
    static const uint8_t nothing = 0;
    unsigned int length = 0;
    if (key_count > INT_MAX) return 0;
    return HMAC(EVP_sha256(), key_count ? key : &nothing, (int)key_count, count ? data : &nothing, count, code,
                &length) != NULL && length == 32;
}

/* The AES-GCM ciphers, fetched from OpenSSL's default provider once: OpenSSL 3 looks a cipher named by
 * EVP_aes_*_gcm() up again at every use, which would cost each datagram thousands of instructions more. */
static EVP_CIPHER *fetched[3];
static pthread_once_t fetching = PTHREAD_ONCE_INIT;

static void fetch_ciphers(void) {
    fetched[0] = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
    fetched[1] = EVP_CIPHER_fetch(NULL, "AES-192-GCM", NULL);
    fetched[2] = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
}

static const EVP_CIPHER *gcm(size_t key_count) {
    pthread_once(&fetching, fetch_ciphers);
    switch (key_count) {
    case 16: return fetched[0];
    case 24: return fetched[1];
    case 32: return fetched[2];
    default: return NULL;
    }
}

/* Sets up `context` for AES-GCM with `key` and `nonce`, and feeds it the additional data. */
static int start(EVP_CIPHER_CTX *context, int encrypt, const uint8_t *key, size_t key_count, const uint8_t *nonce,
                 size_t nonce_count, const void *aad, size_t aad_count) {
    const EVP_CIPHER *cipher = gcm(key_count);
    int length = 0;
    if (cipher == NULL || nonce_count == 0 || nonce_count > INT_MAX || aad_count > INT_MAX) return 0;
    if (EVP_CipherInit_ex(context, cipher, NULL, NULL, NULL, encrypt) != 1) return 0;
    if (EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, (int)nonce_count, NULL) != 1) return 0;
    if (EVP_CipherInit_ex(context, NULL, NULL, key, nonce, encrypt) != 1) return 0;
    if (aad_count > 0 && EVP_CipherUpdate(context, NULL, &length, aad, (int)aad_count) != 1) return 0;
    return 1;
}

int tdm_aes_gcm_seal(const uint8_t *key, size_t key_count, const uint8_t *nonce, size_t nonce_count,
                     const void *aad, size_t aad_count, const void *plaintext, size_t count,
                     uint8_t *ciphertext, uint8_t tag[16]) {
    EVP_CIPHER_CTX *context = EVP_CIPHER_CTX_new();
    uint8_t none[16];
    int length = 0, ok = 0;
    if (context == NULL || count > INT_MAX) goto done;
    if (!start(context, 1, key, key_count, nonce, nonce_count, aad, aad_count)) goto done;
    if (count > 0 && (EVP_EncryptUpdate(context, ciphertext, &length, plaintext, (int)count) != 1
                      || (size_t)length != count)) goto done;
    if (EVP_EncryptFinal_ex(context, count ? ciphertext + count : none, &length) != 1 || length != 0) goto done;
    if (EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, tag) != 1) goto done;
    ok = 1;
done:
    EVP_CIPHER_CTX_free(context);
    return ok;
}

int tdm_aes_gcm_open(const uint8_t *key, size_t key_count, const uint8_t *nonce, size_t nonce_count,
                     const void *aad, size_t aad_count, const void *ciphertext, size_t count,
                     const uint8_t tag[16], uint8_t *plaintext) {
    EVP_CIPHER_CTX *context = EVP_CIPHER_CTX_new();
    uint8_t expected[16], none[16];
    int length = 0, result = -1;
    if (context == NULL || count > INT_MAX) goto done;
    if (!start(context, 0, key, key_count, nonce, nonce_count, aad, aad_count)) goto done;
    if (count > 0 && (EVP_DecryptUpdate(context, plaintext, &length, ciphertext, (int)count) != 1
                      || (size_t)length != count)) goto done;
    memcpy(expected, tag, 16);
    if (EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, 16, expected) != 1) goto done;
    /* The tag is checked here: a mismatch fails the final step. */
    result = EVP_DecryptFinal_ex(context, count ? plaintext + count : none, &length) == 1 ? 1 : 0;
    if (result != 1 && count > 0) OPENSSL_cleanse(plaintext, count);
done:
    EVP_CIPHER_CTX_free(context);
    return result;
}

int tdm_random(uint8_t *bytes, size_t count) {
    if (count > INT_MAX) return 0;
    return count == 0 || RAND_bytes(bytes, (int)count) == 1;
}

void tdm_cleanse(void *bytes, size_t count) { if (count) OPENSSL_cleanse(bytes, count); }
