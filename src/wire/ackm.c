/* ACKM path records (spec section 3.15). */
#include "wire/ackm.h"

size_t mroce_ackm_put(uint8_t *p, uint32_t hold_ns,
                      const struct mroce_ackm_rec *recs, unsigned n)
{
    mroce_ackm_pre_put(p, n, hold_ns);
    for (unsigned i = 0; i < n; i++)
        mroce_ackm_rec_put(p, i, &recs[i]);
    return mroce_ackm_len(n);
}

int mroce_ackm_check(const struct mroce_hdr *h, uint32_t *hold_ns)
{
    const uint8_t *p = h->payload;
    if (h->payload_len < mroce_ackm_len(0) || p[0] > MROCE_ACKM_MAX_RECS ||
        h->payload_len != mroce_ackm_len(p[0]))
        return MROCE_WIRE_EPAYLOAD;
    *hold_ns = (uint32_t)mroce_be16_get(p + 2) * MROCE_ACKM_HOLD_UNIT_NS;
    return p[0];
}

void mroce_ackm_get(const struct mroce_hdr *h, unsigned i,
                    struct mroce_ackm_rec *r)
{
    const uint8_t *p = h->payload + mroce_ackm_len(i);
    r->path = mroce_be16_get(p);
    r->hold_ns = (uint32_t)mroce_be16_get(p + 2) * MROCE_ACKM_HOLD_UNIT_NS;
    r->sack_high = mroce_be32_get(p + 4);
    r->echo_ts = mroce_be32_get(p + 8);
    r->ce_count = mroce_be16_get(p + 12);
    r->rx_count = mroce_be16_get(p + 14);
    for (int k = 0; k < 4; k++)
        r->sack[k] = mroce_be64_get(p + 16 + 8 * k);
}
