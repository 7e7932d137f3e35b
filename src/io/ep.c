/* The mroce_ctx adapter of struct mroce_ep_ops. */
#include "io/ep.h"

static size_t ep_ctx_max_pkt(const void *ep)
{
    return mroce_ctx_max_pkt(ep);
}

static int ep_ctx_tx(void *ep, uint64_t now, uint8_t *buf, size_t cap,
                     struct mroce_pkt_meta *meta)
{
    return mroce_ctx_tx(ep, now, buf, cap, meta);
}

static int ep_ctx_rx(void *ep, uint64_t now, const struct mroce_pkt_meta *meta,
                     const uint8_t *buf, size_t len)
{
    return mroce_ctx_rx(ep, now, meta, buf, len);
}

static uint64_t ep_ctx_next_expiry(const void *ep)
{
    return mroce_ctx_next_expiry(ep);
}

static void ep_ctx_on_expiry(void *ep, uint64_t now)
{
    mroce_ctx_on_expiry(ep, now);
}

static void ep_ctx_set_tx_planes(void *ep, uint64_t planes)
{
    mroce_ctx_set_tx_planes(ep, planes);
}

const struct mroce_ep_ops mroce_ep_ctx_ops = {
    .max_pkt = ep_ctx_max_pkt,
    .tx = ep_ctx_tx,
    .rx = ep_ctx_rx,
    .next_expiry = ep_ctx_next_expiry,
    .on_expiry = ep_ctx_on_expiry,
    .set_tx_planes = ep_ctx_set_tx_planes,
};
