/* ACKM path records: the payload of an ACKM (spec section 3.15,
 * R-ACKM-1..). An ACKM is an ACK (MTH + AKH, R-ACK-2) for its MTH path
 * whose payload acknowledges further paths of the connection, one
 * 48-byte record each, with the time the receiver held each one. */
#ifndef MROCE_WIRE_ACKM_H
#define MROCE_WIRE_ACKM_H

#include <stddef.h>
#include <stdint.h>

#include "wire/be.h"
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

/* A hold in the field's units; beyond its range, its maximum (R-ACKM-3:
 * saturates). */
static inline uint16_t mroce_ackm_hold_units(uint32_t ns)
{
    uint32_t u = ns / MROCE_ACKM_HOLD_UNIT_NS;
    return u > 0xffff ? 0xffff : (uint16_t)u;
}

/* The payload's first bytes at p: the count n and the MTH path's hold. */
static inline void mroce_ackm_pre_put(uint8_t *p, unsigned n, uint32_t hold_ns)
{
    p[0] = (uint8_t)n;
    p[1] = 0;
    mroce_be16_put(p + 2, mroce_ackm_hold_units(hold_ns));
}

/* Record r as record i of the payload at p (R-HDR-14's layout). Inline:
 * a sender that fills r just before writes its fields straight out. */
static inline void mroce_ackm_rec_put(uint8_t *p, unsigned i,
                                      const struct mroce_ackm_rec *r)
{
    p += mroce_ackm_len(i);
    mroce_be16_put(p, r->path);
    mroce_be16_put(p + 2, mroce_ackm_hold_units(r->hold_ns));
    mroce_be32_put(p + 4, r->sack_high);
    mroce_be32_put(p + 8, r->echo_ts);
    mroce_be16_put(p + 12, r->ce_count);
    mroce_be16_put(p + 14, r->rx_count);
    for (int k = 0; k < 4; k++)
        mroce_be64_put(p + 16 + 8 * k, r->sack[k]);
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
