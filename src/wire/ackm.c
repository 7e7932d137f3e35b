/* ACKM path records (spec section 3.15). */
#include "wire/ackm.h"

#include <string.h>

#include "wire/be.h"

static uint16_t ackm_hold_units(uint32_t ns)
{
    uint32_t u = ns / MROCE_ACKM_HOLD_UNIT_NS;
    return u > 0xffff ? 0xffff : (uint16_t)u; /* R-ACKM-3: saturates */
}

static void ackm_rec_put(uint8_t *p, const struct mroce_ackm_rec *r)
{
    mroce_be16_put(p, r->path);
    mroce_be16_put(p + 2, ackm_hold_units(r->hold_ns));
    mroce_be32_put(p + 4, r->sack_high);
    mroce_be32_put(p + 8, r->echo_ts);
    mroce_be16_put(p + 12, r->ce_count);
    mroce_be16_put(p + 14, r->rx_count);
    for (int k = 0; k < 4; k++) /* R-HDR-14's layout */
        mroce_be64_put(p + 16 + 8 * k, r->sack[k]);
}

size_t mroce_ackm_put(uint8_t *p, uint32_t hold_ns,
                      const struct mroce_ackm_rec *recs, unsigned n)
{
    p[0] = (uint8_t)n;
    p[1] = 0;
    mroce_be16_put(p + 2, ackm_hold_units(hold_ns));
    for (unsigned i = 0; i < n; i++)
        ackm_rec_put(p + mroce_ackm_len(i), &recs[i]);
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
