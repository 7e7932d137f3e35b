/* The secure modes of a connection (docs/spec.md section 3.14,
 * R-AEAD-*): key schedule, sealing on transmit, opening and replay
 * windows on receive. Sans-I/O: AES-GCM and HKDF come through the
 * context's crypto provider (mroce_ctx_attr.crypto). */
#ifndef MROCE_ENGINE_SEAL_H
#define MROCE_ENGINE_SEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#include "wire/wire.h"

/* R-AEAD-7: packets sealed under one key before the next key update: the
 * confidentiality limit QUIC uses for AES-128-GCM (RFC 9001, 6.6). */
#define ENG_AEAD_KEY_PKTS (UINT64_C(1) << 23)
#define ENG_AEAD_WIN 256 /* R-AEAD-9: replay window, PSNs or CSNs */

struct eng_aead;

/* mroce_conn_set_secret's engine side (same contract). */
int eng_conn_set_secret(struct mroce_conn *c, int mode, const uint8_t *secret,
                        size_t len);
int eng_conn_sec_mode(const struct mroce_conn *c);
/* At connect: derives both directions' first keys (R-AEAD-6) from the
 * secret and the two ids, and sets up the n_paths replay windows just
 * before the peer's first PSN (R-AEAD-9). EINVAL if the ids are equal,
 * ENOMEM, or the provider's error. No-op for a plain connection. */
int eng_seal_connect(struct mroce_conn *c, const struct mroce_conn_params *r,
                     uint32_t n_paths);
/* After a successful connect: wipes the secret (R-AEAD-6). */
void eng_seal_connected(struct mroce_conn *c);
/* Frees the keys (wiping them) and windows. */
void eng_seal_free(struct mroce_conn *c);
/* What the connection's secure mode holds (mroce_ctx_state_bytes). */
size_t eng_seal_bytes(const struct mroce_conn *c);

/* Transmit: the packet's headers are buf[0, hl); the payload (len bytes,
 * or none) lies at payload, which may be buf + hl (already in place) and
 * must be readable memory (never a payload-free region: the caller
 * copies such a payload in first). Frames, seals and appends the tag;
 * with ref set on an authenticated connection, leaves the payload where
 * it lies and fills ref (R-AEAD-10). Returns the wire length. */
size_t eng_seal(struct mroce_conn *c, uint8_t *buf, size_t hl,
                const uint8_t *payload, uint32_t len, struct mroce_tx_ref *ref);

/* Receive, after R-RX-2 step 9 and before anything changes state
 * (R-AEAD-8): checks the packet's protection against the connection's
 * mode, opens it (h->payload then points at the plaintext, in the
 * context's scratch buffer when it was encrypted) and checks its replay
 * window. 0: go on; MROCE_EPROTO: dropped and counted. */
int eng_open(struct mroce_conn *c, const uint8_t *buf, size_t len,
             struct mroce_hdr *h);

/* R-AEAD-6, R-AEAD-7: key(epoch) and iv(epoch) of the direction whose
 * packets carry conn id dst, sent by the endpoint with id src: the
 * schedule seal.c follows step by step, in one call (test vectors). */
int eng_seal_derive(const struct mroce_crypto *cr, int mode,
                    const uint8_t *secret, uint32_t dst, uint32_t src,
                    uint32_t epoch, uint8_t *key, uint8_t *iv);

/* Test hook (not public API): packets per key before an update, and how
 * many the current transmit key has sealed already, to force updates
 * without sealing 2^23 packets. */
void mroce_conn_aead_limit(struct mroce_conn *c, uint64_t key_pkts,
                           uint64_t used);

#endif
