/* Backends of the crypto provider (mroce_crypto.h). Each returns its
 * static provider, or NULL when it was not built in or cannot run. */
#ifndef MROCE_CRYPTO_CRYPTO_INT_H
#define MROCE_CRYPTO_CRYPTO_INT_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

const struct mroce_crypto *mroce_crypto_ossl(void);
const struct mroce_crypto *mroce_crypto_imb(void);

/* HKDF-Expand with SHA-256 over OpenSSL, shared by both backends; the
 * hkdf_expand member of a provider. */
int mroce_crypto_ossl_hkdf(void *ud, const uint8_t *prk, size_t prk_len,
                           const uint8_t *info, size_t info_len, uint8_t *out,
                           size_t out_len);

/* Known-answer tests of a provider: AES-128-GCM test case 4 of the GCM
 * specification (McGrew and Viega), sealed and opened with its AAD in
 * one piece and in two, a forged tag refused, and RFC 5869 test case 1
 * (expand step). 0 if all pass. */
int mroce_crypto_selftest(const struct mroce_crypto *c);

/* Constant-time comparison of two tags: 0 if equal. */
int mroce_crypto_tag_cmp(const uint8_t *a, const uint8_t *b);

#endif
