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

/* Each thread keeps a cipher context for sealing and one for opening, set up for a cipher once and given a new key
 * and nonce for each message: a context made and freed for each (allocated, its cipher's provider context set up,
 * zeroed when freed) cost a datagram several thousand instructions more. Freed when the thread ends. */
typedef struct {
    EVP_CIPHER_CTX *context;
    const EVP_CIPHER *cipher;
    size_t nonce_count;
} cached_context;

static pthread_key_t contexts_key;
static pthread_once_t contexts_once = PTHREAD_ONCE_INIT;
static int contexts_ready = 0;

static void free_contexts(void *pointer) {
    cached_context *cached = pointer;
    for (int i = 0; i < 2; i++) EVP_CIPHER_CTX_free(cached[i].context);
    OPENSSL_free(cached);
}

static void make_contexts_key(void) { contexts_ready = pthread_key_create(&contexts_key, free_contexts) == 0; }

/* This thread's context for sealing (`encrypt` 1) or opening (0), set up for AES-GCM with `key` and `nonce`, the
 * additional data fed to it; NULL on any failure. */
static EVP_CIPHER_CTX *start(int encrypt, const uint8_t *key, size_t key_count, const uint8_t *nonce,
                             size_t nonce_count, const void *aad, size_t aad_count) {
    const EVP_CIPHER *cipher = gcm(key_count);
    int length = 0;
    if (cipher == NULL || nonce_count == 0 || nonce_count > INT_MAX || aad_count > INT_MAX) return NULL;
    pthread_once(&contexts_once, make_contexts_key);
    if (!contexts_ready) return NULL;
    cached_context *cached = pthread_getspecific(contexts_key);
    if (cached == NULL) {
        cached = OPENSSL_zalloc(2 * sizeof(cached_context));
        if (cached == NULL) return NULL;
        if (pthread_setspecific(contexts_key, cached) != 0) { OPENSSL_free(cached); return NULL; }
    }
    cached_context *mine = &cached[encrypt ? 1 : 0];
    if (mine->context == NULL && (mine->context = EVP_CIPHER_CTX_new()) == NULL) return NULL;
    EVP_CIPHER_CTX *context = mine->context;
    if (mine->cipher != cipher) {
        mine->cipher = NULL;
        if (EVP_CipherInit_ex(context, cipher, NULL, NULL, NULL, encrypt) != 1) return NULL;
        mine->cipher = cipher;
        mine->nonce_count = 12;  /* GCM's own, which a cipher is set up with */
    }
    if (mine->nonce_count != nonce_count) {
        mine->nonce_count = 0;
        if (EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, (int)nonce_count, NULL) != 1) return NULL;
        mine->nonce_count = nonce_count;
    }
    if (EVP_CipherInit_ex(context, NULL, NULL, key, nonce, encrypt) != 1) { mine->cipher = NULL; return NULL; }
    if (aad_count > 0 && EVP_CipherUpdate(context, NULL, &length, aad, (int)aad_count) != 1) {
        mine->cipher = NULL;
        return NULL;
    }
    return context;
}

int tdm_aes_gcm_seal(const uint8_t *key, size_t key_count, const uint8_t *nonce, size_t nonce_count,
                     const void *aad, size_t aad_count, const void *plaintext, size_t count,
                     uint8_t *ciphertext, uint8_t tag[16]) {
    uint8_t none[16];
    int length = 0;
    if (count > INT_MAX) return 0;
    EVP_CIPHER_CTX *context = start(1, key, key_count, nonce, nonce_count, aad, aad_count);
    if (context == NULL) return 0;
    if (count > 0 && (EVP_EncryptUpdate(context, ciphertext, &length, plaintext, (int)count) != 1
                      || (size_t)length != count)) return 0;
    if (EVP_EncryptFinal_ex(context, count ? ciphertext + count : none, &length) != 1 || length != 0) return 0;
    return EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1;
}

int tdm_aes_gcm_open(const uint8_t *key, size_t key_count, const uint8_t *nonce, size_t nonce_count,
                     const void *aad, size_t aad_count, const void *ciphertext, size_t count,
                     const uint8_t tag[16], uint8_t *plaintext) {
    uint8_t expected[16], none[16];
    int length = 0, result;
    if (count > INT_MAX) return -1;
    EVP_CIPHER_CTX *context = start(0, key, key_count, nonce, nonce_count, aad, aad_count);
    if (context == NULL) return -1;
    if (count > 0 && (EVP_DecryptUpdate(context, plaintext, &length, ciphertext, (int)count) != 1
                      || (size_t)length != count)) return -1;
    memcpy(expected, tag, 16);
    if (EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, 16, expected) != 1) return -1;
    /* The tag is checked here: a mismatch fails the final step. */
    result = EVP_DecryptFinal_ex(context, count ? plaintext + count : none, &length) == 1 ? 1 : 0;
    if (result != 1 && count > 0) OPENSSL_cleanse(plaintext, count);
    return result;
}

int tdm_random(uint8_t *bytes, size_t count) {
    if (count > INT_MAX) return 0;
    return count == 0 || RAND_bytes(bytes, (int)count) == 1;
}

void tdm_cleanse(void *bytes, size_t count) { if (count) OPENSSL_cleanse(bytes, count); }
