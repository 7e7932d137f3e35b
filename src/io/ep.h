/* An endpoint as drivers see it: the five sans-I/O calls (max_pkt, tx, rx,
 * next_expiry, on_expiry), and optionally set_tx_planes, on an opaque
 * object. The test wire's loop and
 * the simulator's hosts drive endpoints through this table, so a real
 * engine, a fake or a hostile peer run under either driver. */
#ifndef MROCE_IO_EP_H
#define MROCE_IO_EP_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

struct mroce_ep_ops {
    size_t (*max_pkt)(const void *ep);
    int (*tx)(void *ep, uint64_t now_ns, uint8_t *buf, size_t cap,
              struct mroce_pkt_meta *meta);
    int (*rx)(void *ep, uint64_t now_ns, const struct mroce_pkt_meta *meta,
              const uint8_t *buf, size_t len);
    uint64_t (*next_expiry)(const void *ep);
    void (*on_expiry)(void *ep, uint64_t now_ns);
    /* optional: the planes tx may send to (mroce_ctx_set_tx_planes); a
     * driver with a queue per port calls it before tx when set */
    void (*set_tx_planes)(void *ep, uint64_t planes);
};

/* The mroce_ctx_* calls as ops (ep is a struct mroce_ctx *). */
extern const struct mroce_ep_ops mroce_ep_ctx_ops;

#endif
