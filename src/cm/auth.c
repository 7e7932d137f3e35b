/* R-CM-10: the CM's key schedule and MACs over OpenSSL (see auth.h). */
#define _GNU_SOURCE
#include "cm/auth.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "wire/be.h"

#define AUTH_SALT "mroce-cm2"

/* One HKDF step (RFC 5869) in OpenSSL's EXTRACT_ONLY or EXPAND_ONLY mode:
 * key is the IKM (extract) or the PRK (expand). */
static int auth_hkdf(int mode, const uint8_t *key, size_t klen,
                     const uint8_t *salt, size_t slen, const uint8_t *info,
                     size_t ilen, uint8_t *out, size_t olen)
{
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    EVP_KDF_free(kdf);
    if (!ctx)
        return MROCE_ENOMEM;
    OSSL_PARAM p[6], *q = p;
    *q++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA256", 0);
    *q++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
    *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)key,
                                             klen);
    if (slen)
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
                                                 (void *)salt, slen);
    if (ilen)
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
                                                 (void *)info, ilen);
    *q = OSSL_PARAM_construct_end();
    int ok = EVP_KDF_derive(ctx, out, olen, p) > 0;
    EVP_KDF_CTX_free(ctx);
    return ok ? 0 : MROCE_ENOMEM;
}

static int auth_extract(const uint8_t *salt, size_t slen, const uint8_t *ikm,
                        size_t ilen, uint8_t prk[CM_HASH_LEN])
{
    return auth_hkdf(EVP_KDF_HKDF_MODE_EXTRACT_ONLY, ikm, ilen, salt, slen,
                     NULL, 0, prk, CM_HASH_LEN);
}

/* HKDF-Expand(prk, label || th, olen); th may be NULL (no context). */
static int auth_expand(const uint8_t prk[CM_HASH_LEN], const char *label,
                       const uint8_t *th, uint8_t *out, size_t olen)
{
    uint8_t info[64 + CM_HASH_LEN];
    size_t n = strlen(label);
    memcpy(info, label, n);
    if (th) {
        memcpy(info + n, th, CM_HASH_LEN);
        n += CM_HASH_LEN;
    }
    return auth_hkdf(EVP_KDF_HKDF_MODE_EXPAND_ONLY, prk, CM_HASH_LEN, NULL, 0,
                     info, n, out, olen);
}

/* HMAC-SHA256 over up to three parts. */
static int auth_hmac(const uint8_t *key, size_t klen, const uint8_t *a,
                     size_t alen, const uint8_t *b, size_t blen,
                     const uint8_t *c, size_t clen, uint8_t out[CM_HASH_LEN])
{
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
    EVP_MAC_free(mac);
    if (!ctx)
        return MROCE_ENOMEM;
    OSSL_PARAM p[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
        OSSL_PARAM_construct_end()};
    size_t n = 0;
    int ok = EVP_MAC_init(ctx, key, klen, p) > 0 &&
             (!alen || EVP_MAC_update(ctx, a, alen) > 0) &&
             (!blen || EVP_MAC_update(ctx, b, blen) > 0) &&
             (!clen || EVP_MAC_update(ctx, c, clen) > 0) &&
             EVP_MAC_final(ctx, out, &n, CM_HASH_LEN) > 0 && n == CM_HASH_LEN;
    EVP_MAC_CTX_free(ctx);
    return ok ? 0 : MROCE_ENOMEM;
}

int cm_auth_psk(const uint8_t *key, size_t len, struct cm_psk *out)
{
    if (!key || len < MROCE_CM_PSK_MIN || len > MROCE_CM_PSK_MAX)
        return MROCE_EINVAL;
    memset(out, 0, sizeof(*out));
    memcpy(out->key, key, len);
    out->len = len;
    uint8_t early[CM_HASH_LEN];
    int err = auth_extract((const uint8_t *)AUTH_SALT, strlen(AUTH_SALT), key,
                           len, early);
    if (!err)
        err = auth_expand(early, "mroce-cm2 psk id", NULL, out->psk_id,
                          CM_PSK_ID_LEN);
    if (!err)
        err = auth_expand(early, "mroce-cm2 hello", NULL, out->k_hello,
                          CM_HASH_LEN);
    cm_auth_wipe(early, sizeof(early));
    return err;
}

int cm_auth_hello_tag(const struct cm_psk *k, const uint8_t *prefix,
                      size_t prefix_len, const uint8_t *msg, size_t msg_len,
                      uint8_t tag[CM_TAG_LEN])
{
    return auth_hmac(k->k_hello, CM_HASH_LEN, prefix, prefix_len, msg, msg_len,
                     NULL, 0, tag);
}

int cm_auth_transcript(const uint8_t *hello_c, size_t lc,
                       const uint8_t *hello_s, size_t ls,
                       uint8_t th[CM_HASH_LEN])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned n = 0;
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) > 0 &&
             EVP_DigestUpdate(ctx, hello_c, lc) > 0 &&
             EVP_DigestUpdate(ctx, hello_s, ls) > 0 &&
             EVP_DigestFinal_ex(ctx, th, &n) > 0 && n == CM_HASH_LEN;
    EVP_MD_CTX_free(ctx);
    return ok ? 0 : MROCE_ENOMEM;
}

int cm_auth_session(const struct cm_psk *k, const uint8_t *nonce_c,
                    const uint8_t *nonce_s, const uint8_t th[CM_HASH_LEN],
                    struct cm_session *out)
{
    uint8_t salt[2 * CM_NONCE_LEN], master[CM_HASH_LEN];
    memcpy(salt, nonce_c, CM_NONCE_LEN);
    memcpy(salt + CM_NONCE_LEN, nonce_s, CM_NONCE_LEN);
    int err = auth_extract(salt, sizeof(salt), k->key, k->len, master);
    if (!err)
        err = auth_expand(master, "mroce-cm2 secret", th, out->secret,
                          MROCE_CM_SECRET_LEN);
    if (!err)
        err = auth_expand(master, "mroce-cm2 client ready", th, out->k_ready[0],
                          CM_HASH_LEN);
    if (!err)
        err = auth_expand(master, "mroce-cm2 server ready", th, out->k_ready[1],
                          CM_HASH_LEN);
    if (!err)
        err = auth_expand(master, "mroce-cm2 client msg", th, out->k_msg[0],
                          CM_HASH_LEN);
    if (!err)
        err = auth_expand(master, "mroce-cm2 server msg", th, out->k_msg[1],
                          CM_HASH_LEN);
    cm_auth_wipe(master, sizeof(master));
    return err;
}

int cm_auth_ready_mac(const struct cm_session *s, int dir,
                      const uint8_t th[CM_HASH_LEN], uint8_t mac[CM_TAG_LEN])
{
    return auth_hmac(s->k_ready[dir], CM_HASH_LEN, th, CM_HASH_LEN, NULL, 0,
                     NULL, 0, mac);
}

int cm_auth_msg_tag(const struct cm_session *s, int dir, uint64_t seq,
                    const uint8_t *hdr, const uint8_t *body, size_t body_len,
                    uint8_t tag[CM_MSG_TAG_LEN])
{
    uint8_t sq[8], full[CM_HASH_LEN];
    mroce_be64_put(sq, seq);
    int err = auth_hmac(s->k_msg[dir], CM_HASH_LEN, sq, 8, hdr, CM_HDR_LEN,
                        body, body_len, full);
    memcpy(tag, full, CM_MSG_TAG_LEN);
    return err;
}

bool cm_auth_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}

int cm_auth_random(uint8_t *buf, size_t len)
{
    while (len) {
        ssize_t n = getrandom(buf, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return MROCE_EAGAIN;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

void cm_auth_wipe(void *p, size_t n)
{
    OPENSSL_cleanse(p, n);
}
