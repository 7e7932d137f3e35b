/* The datapath ops table: what a datapath (src/io/udp, src/io/dpdk)
 * implements so the common loop (src/io/dp.c) can drive an engine over
 * it. The loop owns pacing, impairment and timers; a datapath only moves
 * buffers.
 *
 * Buffer ownership:
 * - rx_burst: on return, pkts[0..n) point at buffers the datapath owns;
 *   they stay valid until rx_release is called with them (the loop
 *   releases each burst before the next rx_burst).
 * - tx_alloc: on success the loop owns the buffers until it hands every
 *   one of them back, through tx_burst (sent or not) or tx_free.
 * - tx_burst: the datapath owns all n buffers on return, whatever it
 *   returns; those it could not send it frees and counts (tx_dropped).
 *   While dp->tx_more is set it may keep some of them for the next call
 *   (counted in dp->tx_held) instead of sending them now; a call with
 *   tx_more clear (n may be 0) sends everything it keeps.
 * - Zero-copy transmit (ops->tx_ref): a packet may refer to its payload
 *   in a memory region (pay_len > 0, mroce_ctx_tx_ref). That reference
 *   dies when the loop next calls the engine, so tx_burst must have
 *   handed such payloads to the kernel or device (which copies them)
 *   before it returns; a packet it keeps is flattened first
 *   (mroce_dp_pkt_flatten copies the payload into buf).
 */
#ifndef MROCE_IO_DP_H
#define MROCE_IO_DP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <mroce/mroce_dp.h>

/* One packet: the UDP payload (our headers and data) and its addressing.
 * `priv` is the datapath's (an mbuf, a slot index). With pay_len 0 the
 * packet is buf[0, len). With pay_len > 0 (zero-copy transmit) buf has a
 * hole: the packet is buf[0, hdr_len), then pay[0, pay_len) (registered
 * memory, see the lifetime rule above), then buf[hdr_len + pay_len, len)
 * (the trailer: ICRC or AEAD tag); len counts all of it. */
struct mroce_dp_pkt {
    uint8_t *buf;
    uint32_t len, cap;
    struct mroce_pkt_meta meta;
    void *priv;
    const uint8_t *pay;
    uint32_t hdr_len, pay_len;
};

/* Copies a referenced payload into the hole in buf: the packet becomes
 * buf[0, len), independent of the engine. */
static inline void mroce_dp_pkt_flatten(struct mroce_dp_pkt *p)
{
    if (!p->pay_len)
        return;
    memcpy(p->buf + p->hdr_len, p->pay, p->pay_len);
    p->pay = NULL;
    p->pay_len = 0;
}

struct mroce_dp_ops {
    const char *name;
    /* true: tx_burst takes packets with referenced payloads (pay_len > 0)
     * and the loop asks the engine for them (mroce_ctx_tx_ref); false:
     * every packet is whole in buf (mroce_ctx_tx) */
    bool tx_ref;
    /* Opens devices/sockets; sets dp->priv and fills dp->ctx_attr's
     * addr, udp_port and src_ports. Errors as mroce_dp_create. */
    int (*open)(struct mroce_dp *dp);
    void (*close)(struct mroce_dp *dp);
    /* Up to n received packets; 0 if none. Never blocks. */
    int (*rx_burst)(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n);
    void (*rx_release)(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n);
    /* Up to n empty buffers of at least `cap` bytes (cap set per pkt). */
    int (*tx_alloc)(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n,
                    size_t cap);
    void (*tx_free)(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n);
    /* Sends pkts[0..n) (len and meta set); returns how many left (or
     * were kept, see tx_more). */
    int (*tx_burst)(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n);
    /* Sleeps until input may be ready or timeout_ns; NULL: busy poll. */
    int (*wait)(struct mroce_dp *dp, uint64_t timeout_ns);
    /* Makes a wait in progress (or the next one) return at once; called
     * from another thread (mroce_dp_unlock while a polling thread
     * sleeps). NULL: wait is NULL or its timeouts are short. */
    int (*wake)(struct mroce_dp *dp);
};

/* A datapath instance. Datapaths read attr and ctx_attr, set priv and
 * add to cnt; the rest is the loop's (dp.c).
 * Counters: the loop counts rx_pkts/bytes/bursts, tx_pkts/bytes/bursts
 * (packets handed to tx_burst, so tx_pkts - tx_dropped left), rx_ce (from
 * meta.ecn), pace_waits and imp_*; a datapath counts gso_sends, gro_merged,
 * rx_bad_frame, tx_dropped and the *_fallback counters. If open fails it leaves
 * nothing open; close is then not called. */
struct mroce_dp {
    const struct mroce_dp_ops *ops;
    void *priv;
    struct mroce_dp_attr attr;      /* defaults resolved */
    struct mroce_ctx_attr ctx_attr; /* what the context is opened with */
    uint16_t src_ports[MROCE_MAX_SRC_PORTS]; /* ctx_attr.src_ports */
    struct mroce_ctx *ctx;
    struct mroce_dp_counters cnt;
    /* Set by the loop around tx_burst: the burst was cut by its size and
     * the loop sends again in its next pass, so a datapath may hold a
     * short GSO tail to grow it then (UDP). tx_held: packets a datapath
     * holds; the loop flushes them (tx_burst with tx_more clear) in any
     * pass that does not fill a whole burst. */
    bool tx_more;
    uint32_t tx_held;
    struct dp_loop *loop; /* dp.c: pacing, impairment, thread */
};

extern const struct mroce_dp_ops mroce_dp_udp_ops;
/* Defined when the build found DPDK (MROCE_HAVE_DPDK); without it
 * mroce_dp_create returns ESTATE for MROCE_DP_DPDK. */
extern const struct mroce_dp_ops mroce_dp_dpdk_ops;

#endif
