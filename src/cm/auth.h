/* The CM's cryptography (R-CM-10): a key schedule from a pre-shared key
 * with HKDF-SHA256, HMAC-SHA256 tags and MACs, SHA-256 transcripts, and
 * fresh nonces. OpenSSL's libcrypto does the primitives (EVP_KDF "HKDF",
 * EVP_MAC "HMAC", EVP_Digest); getrandom(2) gives the nonces.
 *
 * Labels, inputs and lengths are those of docs/spec.md 4.5 (R-CM-10);
 * tests/cm/mrcm.py implements the same schedule independently. */
#ifndef MROCE_CM_AUTH_H
#define MROCE_CM_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce_cm.h>

#include "cm/msg.h"

#define CM_HASH_LEN 32

/* What a PSK gives before any HELLO: its identity and the HELLO key. */
struct cm_psk {
    uint8_t key[MROCE_CM_PSK_MAX];
    size_t len;
    uint8_t psk_id[CM_PSK_ID_LEN];
    uint8_t k_hello[CM_HASH_LEN];
};

/* What both HELLOs give: the connection secret and the keys of READY and
 * of the later messages, per direction (index 0 client, 1 server). */
struct cm_session {
    uint8_t secret[MROCE_CM_SECRET_LEN];
    uint8_t k_ready[2][CM_HASH_LEN];
    uint8_t k_msg[2][CM_HASH_LEN];
};

/* 0, or EINVAL for a key of the wrong length, ENOMEM if OpenSSL fails. */
int cm_auth_psk(const uint8_t *key, size_t len, struct cm_psk *out);
/* HMAC-SHA256(k_hello, prefix || msg): the tag of a HELLO whose first
 * msg_len bytes (header included, tag excluded) are msg; prefix is the
 * client's whole HELLO for the server's tag, empty for the client's. */
int cm_auth_hello_tag(const struct cm_psk *k, const uint8_t *prefix,
                      size_t prefix_len, const uint8_t *msg, size_t msg_len,
                      uint8_t tag[CM_TAG_LEN]);
/* th = SHA-256(hello_c || hello_s), both whole messages. */
int cm_auth_transcript(const uint8_t *hello_c, size_t lc,
                       const uint8_t *hello_s, size_t ls,
                       uint8_t th[CM_HASH_LEN]);
int cm_auth_session(const struct cm_psk *k, const uint8_t *nonce_c,
                    const uint8_t *nonce_s, const uint8_t th[CM_HASH_LEN],
                    struct cm_session *out);
/* READY's MAC of side `dir` (0 client, 1 server): HMAC(k_ready, th). */
int cm_auth_ready_mac(const struct cm_session *s, int dir,
                      const uint8_t th[CM_HASH_LEN], uint8_t mac[CM_TAG_LEN]);
/* Tag of a message after READY: the first CM_MSG_TAG_LEN bytes of
 * HMAC(k_msg[dir], seq (8 bytes, big-endian) || hdr || body). */
int cm_auth_msg_tag(const struct cm_session *s, int dir, uint64_t seq,
                    const uint8_t *hdr, const uint8_t *body, size_t body_len,
                    uint8_t tag[CM_MSG_TAG_LEN]);
/* Constant-time comparison. */
bool cm_auth_equal(const uint8_t *a, const uint8_t *b, size_t n);
/* Fresh random bytes from getrandom(2); EAGAIN if it fails. */
int cm_auth_random(uint8_t *buf, size_t len);
/* Overwrites secrets. */
void cm_auth_wipe(void *p, size_t n);

#endif
