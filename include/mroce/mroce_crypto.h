/* mroce's crypto provider (src/crypto): the struct mroce_crypto that the
 * authenticated and encrypted modes need (docs/spec.md R-AEAD-*), over
 * Debian's libraries: AES-128-GCM from intel-ipsec-mb (libipsec-mb-dev,
 * its AVX-512/VAES code where the CPU has it) or OpenSSL 3's EVP
 * (libssl-dev), HKDF-SHA256 from OpenSSL. The engine itself never links
 * a crypto library: the application (or a datapath, by default) passes
 * one of these in mroce_ctx_attr.crypto. */
#ifndef MROCE_CRYPTO_H
#define MROCE_CRYPTO_H

#include <mroce/mroce.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MROCE_CRYPTO_IPSECMB "ipsec-mb"
#define MROCE_CRYPTO_OPENSSL "openssl"

/* The fastest backend that works here: the one the environment variable
 * MROCE_CRYPTO names if it is available, else intel-ipsec-mb when it was
 * built in and passes its known-answer test on this CPU (about 4x
 * OpenSSL 3.0 on 4 KiB packets, docs/datapath.md), else OpenSSL. NULL
 * when mroce was built without OpenSSL (no HKDF: no secure modes). The
 * provider is static: never freed. Thread-safe. */
const struct mroce_crypto *mroce_crypto_default(void);

/* One backend by name (MROCE_CRYPTO_*), NULL if it was not built in or
 * failed its known-answer test at first use. Thread-safe. */
const struct mroce_crypto *mroce_crypto_get(const char *name);

/* The backend name of a provider returned above; "other" for any other
 * provider, "none" for NULL. */
const char *mroce_crypto_name(const struct mroce_crypto *c);

#ifdef __cplusplus
}
#endif
#endif
