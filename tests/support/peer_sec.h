/* The test peer in the secure modes (docs/spec.md section 3.14): the
 * peer's own key schedule, written from the spec apart from the engine's
 * (src/engine/seal.c), over OpenSSL's backend of the provider (the
 * engine's context normally uses intel-ipsec-mb): every packet the peer
 * feeds is sealed, every packet the engine emits must open (peer_drain
 * asserts it) and comes back decrypted. Helpers for hostile tests seal
 * with a chosen key epoch, or another secret. */
#ifndef MROCE_TESTS_SUPPORT_PEER_SEC_H
#define MROCE_TESTS_SUPPORT_PEER_SEC_H

#include <stddef.h>
#include <stdint.h>

#include "support/peer.h"

#define PEER_SEC_EPOCHS 64 /* receive keys the peer derives ahead */

struct peer_sec {
    int mode; /* MROCE_SEC_AUTH or _ENCRYPT */
    const struct mroce_crypto *c;
    /* peer -> engine: D(e) of every epoch up to tx_max, the epoch used */
    uint8_t tx_ds[PEER_SEC_EPOCHS][32];
    uint32_t tx_epoch;
    uint32_t csn;
    /* engine -> peer: key objects and IVs per epoch */
    void *rx_key[PEER_SEC_EPOCHS];
    uint8_t rx_iv[PEER_SEC_EPOCHS][12];
    uint32_t rx_epoch_seen; /* highest epoch an engine packet used */
    uint64_t opened;
};

/* Before peer_connect: gives the engine's connection mode and secret
 * (asserting mroce_conn_set_secret succeeds) and derives the peer's keys
 * from the same secret and the two ids. The context must have a crypto
 * provider (peer_cfg.crypto). */
void peer_sec_setup(struct peer *p, int mode, const uint8_t *secret);
/* A key schedule for another secret, for a forger: seal with it. */
struct peer_sec *peer_sec_new(const struct peer *p, int mode,
                              const uint8_t *secret);
void peer_sec_delete(struct peer_sec *s);
/* Called by peer_free. */
void peer_sec_free(struct peer *p);

/* Encodes h + payload as a sealed packet of the peer under epoch
 * s->tx_epoch (a control packet takes the next CSN). Returns its length. */
size_t peer_sec_seal(struct peer_sec *s, const struct mroce_hdr *h,
                     const void *payload, uint32_t len, uint8_t *buf);
/* Opens a packet the engine sent (any epoch the peer holds), decrypting
 * its payload in place. 0 or -1. */
int peer_sec_open(struct peer_sec *s, uint8_t *buf, size_t len);

#endif
