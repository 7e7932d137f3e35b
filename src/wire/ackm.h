/* ACKM path records: the payload of an ACKM (spec section 3.15,
 * R-ACKM-1..). An ACKM is an ACK (MTH + AKH, R-ACK-2) for its MTH path
 * whose payload acknowledges further paths of the connection, one
 * 48-byte record each, with the time the receiver held each one. */
#ifndef MROCE_WIRE_ACKM_H
#define MROCE_WIRE_ACKM_H

#include <stddef.h>
#include <stdint.h>

#include "wire/wire.h"

#define MROCE_ACKM_PRE_LEN 4  /* count, reserved, hold of the MTH path */
#define MROCE_ACKM_REC_LEN 48 /* path, hold, AKH fields but dsn_cum, rate */
#define MROCE_ACKM_MAX_RECS 32
#define MROCE_ACKM_HOLD_UNIT_NS 8
#define MROCE_ACKM_HOLD_MAX_NS (0xffffu * MROCE_ACKM_HOLD_UNIT_NS)

/* One path's acknowledgement: the AKH fields of an ACK for `path`
 * without dsn_cum and rate_mbps, which the ACKM carries once. */
struct mroce_ackm_rec {
    uint16_t path;
    uint32_t hold_ns; /* from receipt of PSN sack_high to the ACKM's ts */
    uint32_t sack_high;
    uint32_t echo_ts;
    uint16_t ce_count, rx_count;
    uint64_t sack[4];
};

/* Payload length of an ACKM with n records. */
static inline size_t mroce_ackm_len(unsigned n)
{
    return MROCE_ACKM_PRE_LEN + (size_t)n * MROCE_ACKM_REC_LEN;
}

/* Writes the payload (hold of the MTH path, n records) at p, which has
 * room for mroce_ackm_len(n) bytes; holds beyond the field's range are
 * sent as its maximum. Returns the length written. */
size_t mroce_ackm_put(uint8_t *p, uint32_t hold_ns,
                      const struct mroce_ackm_rec *recs, unsigned n);

/* R-ACKM-2: checks a decoded ACKM's payload (length and count; the
 * reserved byte is ignored). Returns the record count (0 to
 * MROCE_ACKM_MAX_RECS) and the MTH path's hold, or MROCE_WIRE_EPAYLOAD. */
int mroce_ackm_check(const struct mroce_hdr *h, uint32_t *hold_ns);

/* Record i (< the count mroce_ackm_check returned) of a checked ACKM. */
void mroce_ackm_get(const struct mroce_hdr *h, unsigned i,
                    struct mroce_ackm_rec *r);

#endif
