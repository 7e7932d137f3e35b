/* AES-128-GCM and HKDF-SHA256 over OpenSSL 3 (Debian libssl-dev). A key
 * object holds two EVP contexts, one per direction, each keyed once, so
 * a packet costs an IV reset and the update calls, not a key schedule. */
#include <stdlib.h>
#include <string.h>

#include "crypto/crypto_int.h"

#ifdef MROCE_HAVE_OPENSSL

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

struct ossl_key {
    EVP_CIPHER_CTX *enc, *dec;
};

static void ossl_key_free(void *ud, void *key)
{
    (void)ud;
    struct ossl_key *k = key;
    if (!k)
        return;
    EVP_CIPHER_CTX_free(k->enc); /* cleanses the key schedule */
    EVP_CIPHER_CTX_free(k->dec);
    free(k);
}

static void *ossl_key_new(void *ud, const uint8_t *key)
{
    struct ossl_key *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    k->enc = EVP_CIPHER_CTX_new();
    k->dec = EVP_CIPHER_CTX_new();
    if (!k->enc || !k->dec ||
        EVP_EncryptInit_ex(k->enc, EVP_aes_128_gcm(), NULL, key, NULL) != 1 ||
        EVP_DecryptInit_ex(k->dec, EVP_aes_128_gcm(), NULL, key, NULL) != 1) {
        ossl_key_free(ud, k);
        return NULL;
    }
    return k;
}

/* The IV, both pieces of AAD, then the text: one call sequence for both
 * directions (EVP_CipherUpdate follows the context's direction). */
static int ossl_run(EVP_CIPHER_CTX *x, const uint8_t *iv, const uint8_t *aad,
                    size_t aad_len, const uint8_t *aad2, size_t aad2_len,
                    const uint8_t *in, uint8_t *out, size_t len)
{
    int n;
    if (EVP_CipherInit_ex(x, NULL, NULL, NULL, iv, -1) != 1)
        return -1;
    if (aad_len && EVP_CipherUpdate(x, NULL, &n, aad, (int)aad_len) != 1)
        return -1;
    if (aad2_len && EVP_CipherUpdate(x, NULL, &n, aad2, (int)aad2_len) != 1)
        return -1;
    if (len &&
        (EVP_CipherUpdate(x, out, &n, in, (int)len) != 1 || (size_t)n != len))
        return -1;
    return 0;
}

static int ossl_seal(void *ud, void *key, const uint8_t *iv, const uint8_t *aad,
                     size_t aad_len, const uint8_t *aad2, size_t aad2_len,
                     const uint8_t *in, uint8_t *out, size_t len, uint8_t *tag)
{
    (void)ud;
    EVP_CIPHER_CTX *x = ((struct ossl_key *)key)->enc;
    uint8_t end[16];
    int n;
    if (len > INT32_MAX || aad_len > INT32_MAX || aad2_len > INT32_MAX ||
        ossl_run(x, iv, aad, aad_len, aad2, aad2_len, in, out, len) ||
        EVP_EncryptFinal_ex(x, end, &n) != 1 ||
        EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, 16, tag) != 1)
        return MROCE_EINVAL;
    return 0;
}

static int ossl_open(void *ud, void *key, const uint8_t *iv, const uint8_t *aad,
                     size_t aad_len, const uint8_t *aad2, size_t aad2_len,
                     const uint8_t *in, uint8_t *out, size_t len,
                     const uint8_t *tag)
{
    (void)ud;
    EVP_CIPHER_CTX *x = ((struct ossl_key *)key)->dec;
    uint8_t end[16], t[16];
    int n;
    memcpy(t, tag, 16);
    if (len > INT32_MAX || aad_len > INT32_MAX || aad2_len > INT32_MAX ||
        ossl_run(x, iv, aad, aad_len, aad2, aad2_len, in, out, len) ||
        EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, 16, t) != 1 ||
        EVP_DecryptFinal_ex(x, end, &n) != 1) /* compares in constant time */
        return MROCE_EPROTO;
    return 0;
}

int mroce_crypto_ossl_hkdf(void *ud, const uint8_t *prk, size_t prk_len,
                           const uint8_t *info, size_t info_len, uint8_t *out,
                           size_t out_len)
{
    (void)ud;
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, OSSL_KDF_NAME_HKDF, NULL);
    EVP_KDF_CTX *x = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
    OSSL_PARAM p[] = {
        OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode),
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA256", 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)prk,
                                          prk_len),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info,
                                          info_len),
        OSSL_PARAM_construct_end(),
    };
    int rc = x && EVP_KDF_derive(x, out, out_len, p) == 1 ? 0 : MROCE_EINVAL;
    EVP_KDF_CTX_free(x);
    EVP_KDF_free(kdf);
    return rc;
}

static const struct mroce_crypto ossl_provider = {
    .key_new = ossl_key_new,
    .key_free = ossl_key_free,
    .seal = ossl_seal,
    .open = ossl_open,
    .hkdf_expand = mroce_crypto_ossl_hkdf,
    /* ours only: OpenSSL does not say what its two contexts hold */
    .key_bytes = sizeof(struct ossl_key),
};

const struct mroce_crypto *mroce_crypto_ossl(void)
{
    return &ossl_provider;
}

#else /* built without OpenSSL: no provider (and no HKDF for ipsec-mb) */

int mroce_crypto_ossl_hkdf(void *ud, const uint8_t *prk, size_t prk_len,
                           const uint8_t *info, size_t info_len, uint8_t *out,
                           size_t out_len)
{
    (void)ud, (void)prk, (void)prk_len, (void)info, (void)info_len;
    (void)out, (void)out_len;
    return MROCE_ENOTSUP;
}

const struct mroce_crypto *mroce_crypto_ossl(void)
{
    return NULL;
}

#endif
