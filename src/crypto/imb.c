/* AES-128-GCM over intel-ipsec-mb (Debian libipsec-mb-dev), HKDF over
 * OpenSSL. The library's direct GCM API picks the best code for the CPU
 * (init_mb_mgr_auto: AVX-512 with VAES and VPCLMULQDQ here). An IMB_MGR
 * is not thread-safe (its job API queues per manager), but the direct
 * functions take no manager: it only dispatches to them. So the
 * functions are taken from a manager once, the manager is freed, and no
 * manager state exists for threads to share: every call works on its
 * key object and a context on the caller's stack (the library's only
 * global, its process-wide error status, is reset to 0 by every call).
 * A key object is the expanded key and GHASH table (struct gcm_key_data,
 * 64-byte aligned), read-only once made. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/crypto_int.h"

#if defined(MROCE_HAVE_IPSECMB) && defined(MROCE_HAVE_OPENSSL)

#include <intel-ipsec-mb.h>
#include <pthread.h>

/* The AES-128 functions init_mb_mgr_auto chose; written once (under
 * pthread_once) and only read after. */
static struct {
    pthread_once_t once;
    bool ok;
    aes_gcm_pre_t pre;
    aes_gcm_enc_dec_t enc, dec;
    aes_gmac_init_t gmac_init;
    aes_gmac_update_t gmac_update;
    aes_gmac_finalize_t gmac_final;
} imb = {.once = PTHREAD_ONCE_INIT};

static void imb_init(void)
{
    IMB_MGR *m = alloc_mb_mgr(0);
    if (!m)
        return;
    init_mb_mgr_auto(m, NULL);
    if (!imb_get_errno(m)) {
        imb.pre = m->gcm128_pre;
        imb.enc = m->gcm128_enc;
        imb.dec = m->gcm128_dec;
        imb.gmac_init = m->gmac128_init;
        imb.gmac_update = m->gmac128_update;
        imb.gmac_final = m->gmac128_finalize;
        imb.ok = imb.pre && imb.enc && imb.dec && imb.gmac_init &&
                 imb.gmac_update && imb.gmac_final;
    }
    free_mb_mgr(m);
}

/* C11: the size must be a multiple of the alignment (ASan checks) */
#define IMB_KEY_BYTES ((sizeof(struct gcm_key_data) + 63) & ~(size_t)63)

static void *imb_key_new(void *ud, const uint8_t *key)
{
    (void)ud;
    struct gcm_key_data *k = aligned_alloc(64, IMB_KEY_BYTES);
    if (!k)
        return NULL;
    imb.pre(key, k);
    return k;
}

static void imb_key_free(void *ud, void *key)
{
    (void)ud;
    if (!key)
        return;
    volatile uint8_t *p = key;
    for (size_t i = 0; i < sizeof(struct gcm_key_data); i++)
        p[i] = 0;
    free(key);
}

/* GMAC: the whole AAD in two updates, no text (the authenticated mode).
 * The update keeps a partial block across calls. */
static void imb_gmac(const struct gcm_key_data *k, const uint8_t *iv,
                     const uint8_t *aad, size_t aad_len, const uint8_t *aad2,
                     size_t aad2_len, uint8_t *tag)
{
    struct gcm_context_data x;
    imb.gmac_init(k, &x, iv, 12);
    if (aad_len)
        imb.gmac_update(k, &x, aad, aad_len);
    if (aad2_len)
        imb.gmac_update(k, &x, aad2, aad2_len);
    imb.gmac_final(k, &x, tag, 16);
}

/* Both an AAD in two pieces and text: the init call takes one AAD
 * string, so join them (the engine never asks for this). */
static int imb_join(const uint8_t *aad, size_t aad_len, const uint8_t *aad2,
                    size_t aad2_len, uint8_t **joined)
{
    *joined = malloc(aad_len + aad2_len);
    if (!*joined)
        return MROCE_ENOMEM;
    memcpy(*joined, aad, aad_len);
    memcpy(*joined + aad_len, aad2, aad2_len);
    return 0;
}

/* Encryption or decryption with a one-piece AAD; tag out. */
static int imb_gcm(const struct gcm_key_data *k, int enc, const uint8_t *iv,
                   const uint8_t *aad, size_t aad_len, const uint8_t *aad2,
                   size_t aad2_len, const uint8_t *in, uint8_t *out, size_t len,
                   uint8_t *tag)
{
    struct gcm_context_data x;
    uint8_t *joined = NULL;
    if (!len) {
        imb_gmac(k, iv, aad, aad_len, aad2, aad2_len, tag);
        return 0;
    }
    if (aad2_len) {
        if (imb_join(aad, aad_len, aad2, aad2_len, &joined))
            return MROCE_ENOMEM;
        aad = joined;
        aad_len += aad2_len;
    }
    (enc ? imb.enc : imb.dec)(k, &x, out, in, len, iv, aad, aad_len, tag, 16);
    free(joined);
    return 0;
}

static int imb_seal(void *ud, void *key, const uint8_t *iv, const uint8_t *aad,
                    size_t aad_len, const uint8_t *aad2, size_t aad2_len,
                    const uint8_t *in, uint8_t *out, size_t len, uint8_t *tag)
{
    (void)ud;
    return imb_gcm(key, 1, iv, aad, aad_len, aad2, aad2_len, in, out, len, tag);
}

static int imb_open(void *ud, void *key, const uint8_t *iv, const uint8_t *aad,
                    size_t aad_len, const uint8_t *aad2, size_t aad2_len,
                    const uint8_t *in, uint8_t *out, size_t len,
                    const uint8_t *tag)
{
    (void)ud;
    uint8_t t[16];
    int rc = imb_gcm(key, 0, iv, aad, aad_len, aad2, aad2_len, in, out, len, t);
    if (rc)
        return rc;
    return mroce_crypto_tag_cmp(t, tag) ? MROCE_EPROTO : 0;
}

static const struct mroce_crypto imb_provider = {
    .key_new = imb_key_new,
    .key_free = imb_key_free,
    .seal = imb_seal,
    .open = imb_open,
    .hkdf_expand = mroce_crypto_ossl_hkdf,
    .key_bytes = IMB_KEY_BYTES,
};

const struct mroce_crypto *mroce_crypto_imb(void)
{
    pthread_once(&imb.once, imb_init);
    return imb.ok ? &imb_provider : NULL;
}

#else

const struct mroce_crypto *mroce_crypto_imb(void)
{
    return NULL;
}

#endif
