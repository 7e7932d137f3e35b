/* The test wire: a lossy, deterministic, in-process network in virtual time.
 *
 * It joins several sans-I/O engines inside one process. A driver loop takes
 * the packets an engine wants to send (UDP payload + struct mroce_pkt_meta),
 * hands them to mroce_tw_send(), later pops the ones that are due with
 * mroce_tw_pop() and feeds them to the destination engine. Time is a
 * uint64_t nanosecond count supplied by the caller; the wire never reads a
 * clock. Every random choice comes from a generator seeded by cfg.seed and
 * owned by the wire, so the same cfg and the same call sequence give the
 * same output, bit for bit.
 *
 * Model of one packet (src endpoint -> dst endpoint), in this order:
 *   1. egress serialization at the sender: starts at max(now, free_at) and
 *      takes (len + wire_overhead) * 8e9 / rate_bps ns (exact long-run: the
 *      fractional nanosecond is carried to the next packet);
 *   2. ECN: marked CE if the sender's backlog in front of it exceeds
 *      ecn_threshold_bytes and the packet is ECT;
 *   3. drops, first reason wins: blackhole, Gilbert-Elliott burst, random
 *      loss, pool overflow. A dropped packet still used its serialization
 *      time (it was transmitted and lost in the network);
 *   4. arrival = end of serialization + delay_ns + route jitter (+ reorder_ns
 *      with probability reorder); corruption flips one payload byte; with
 *      probability dup a second copy arrives dup_ns later.
 *
 * Errors are negative errno values (<errno.h>): -EINVAL, -ENOMEM, -ENOENT,
 * -EEXIST, -ENOSPC, -EMSGSIZE.
 * Thread-safety: none; one wire belongs to one thread at a time. Read-only
 * calls (next_time, route_of, stats) may run concurrently with each other.
 */
#ifndef MROCE_IO_TESTWIRE_TESTWIRE_H
#define MROCE_IO_TESTWIRE_TESTWIRE_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Blackhole rules that can be on at the same time. */
#define MROCE_TW_MAX_HOLES 64

/* Fields left 0 get the defaults named below. Probabilities are in [0, 1]. */
struct mroce_tw_cfg {
    uint64_t seed;
    /* ECMP routes between any two endpoints (0 = 1). A packet's route is a
     * seeded hash of (src addr, dst addr, src_port, dst_port) % n_routes, so
     * changing the UDP source port can move a flow to another route. */
    uint32_t n_routes;
    uint64_t rate_bps;      /* egress rate per endpoint, 0 = infinite */
    uint32_t wire_overhead; /* framing bytes per packet, e.g. 66 */
    uint64_t delay_ns;      /* base one-way propagation delay */
    /* Constant extra delay per (src, dst, route), uniform in [0, jitter_ns]:
     * routes differ, so packets on different routes reorder, while each
     * route stays FIFO. */
    uint64_t jitter_ns;
    double loss; /* independent random loss per packet */
    /* Gilbert-Elliott, one chain for the whole wire, stepped once per sent
     * packet: probability to enter the bad state, to leave it, and to lose
     * a packet while in it. All 0 = off. */
    double burst_enter, burst_exit, burst_loss;
    double dup;      /* a delivered packet is delivered twice */
    uint64_t dup_ns; /* the copy arrives this much later (0 = 1 ns) */
    double corrupt;  /* one random payload byte is flipped */
    double reorder;  /* extra delay reorder_ns: breaks FIFO within a route */
    uint64_t reorder_ns;
    /* If > 0: mark CE (only ECT packets) when the sender's egress backlog,
     * (free_at - now) * rate_bps / 8e9 bytes, exceeds this. Needs rate_bps.
     * At most 2^31. */
    uint32_t ecn_threshold_bytes;
    uint32_t max_pkt; /* largest payload accepted (0 = 9000) */
    /* Packets held in flight, duplicates included (0 = 1024); one more is
     * the packet lent out by the last pop. Memory: (capacity + 1) *
     * max_pkt bytes of payload storage. */
    uint32_t capacity;
    uint32_t max_endpoints; /* attach() limit (0 = 64) */
};

struct mroce_tw; /* opaque */

/* A delivered packet. buf points into the wire's storage and stays valid
 * until the next call to mroce_tw_pop, mroce_tw_send or mroce_tw_destroy. */
struct mroce_tw_pkt {
    int dst_ep; /* index returned by mroce_tw_attach for meta.dst */
    struct mroce_pkt_meta meta;
    const uint8_t *buf;
    size_t len;
    uint64_t time; /* virtual arrival time, ns */
};

/* Counters. Dropped packets count in sent and in one lost_* reason;
 * delivered and bytes_delivered count at pop, duplicates included. */
struct mroce_tw_stats {
    uint64_t sent, delivered, lost_random, lost_burst, lost_blackhole,
        lost_overflow, duplicated, corrupted, reordered, ecn_marked,
        bytes_delivered;
};

/* Allocates every buffer the wire will use (see capacity); send and pop
 * never allocate.
 * Errors: -EINVAL (NULL argument, probability outside [0, 1] or NaN, value
 * out of range), -ENOMEM. The caller owns *out; free with mroce_tw_destroy.
 */
int mroce_tw_create(const struct mroce_tw_cfg *cfg, struct mroce_tw **out);

/* Frees the wire and every packet in it. NULL is a no-op. */
void mroce_tw_destroy(struct mroce_tw *tw);

/* Registers an endpoint address; returns its index (0, 1, 2, ... in attach
 * order). Errors: -EINVAL (NULL, family not INET/INET6), -EEXIST (address
 * already attached), -ENOSPC (max_endpoints reached). */
int mroce_tw_attach(struct mroce_tw *tw, const struct mroce_addr *addr);

/* Hands one packet to the wire, which copies it (the caller keeps buf; it
 * may be the buffer the last pop lent out, for a relay that re-sends).
 * meta->src and meta->dst must be attached addresses. Returns 0 when the
 * packet was accepted, even if an impairment dropped it (see stats).
 * Errors: -EINVAL (NULL tw/meta, or NULL buf with len > 0), -ENOENT (src or
 * dst not attached), -EMSGSIZE (len > max_pkt). A rejected packet uses no
 * serialization time and no random numbers. `now` should not go backwards.
 */
int mroce_tw_send(struct mroce_tw *tw, uint64_t now,
                  const struct mroce_pkt_meta *meta, const uint8_t *buf,
                  size_t len);

/* Earliest arrival time of a held packet, UINT64_MAX if the wire is empty. */
uint64_t mroce_tw_next_time(const struct mroce_tw *tw);

/* Pops the earliest packet due at or before now (equal times: send order;
 * a duplicate counts as sent right after its original). Returns 1 and
 * fills *out, 0 if none is due, -EINVAL if tw or out is NULL. */
int mroce_tw_pop(struct mroce_tw *tw, uint64_t now, struct mroce_tw_pkt *out);

/* While on, every packet from src_ep to dst_ep whose route (see
 * mroce_tw_route_of) is `route` is dropped at send time. -1 for src_ep or
 * dst_ep means any endpoint. Rules match exactly: turning off (0, -1, r)
 * does not turn off (0, 1, r). Turning on a rule that is on, or off one
 * that is off, is a no-op. Packets already in flight are not affected.
 * Returns 0; errors: -EINVAL (NULL, endpoint not attached, route >=
 * n_routes), -ENOSPC (MROCE_TW_MAX_HOLES rules on). */
int mroce_tw_blackhole(struct mroce_tw *tw, int src_ep, int dst_ep,
                       uint32_t route, int on);

/* The route, in [0, n_routes), that packets with this meta take. Depends on
 * addresses, ports and cfg.seed only. */
uint32_t mroce_tw_route_of(const struct mroce_tw *tw,
                           const struct mroce_pkt_meta *meta);

/* Changes the random loss probability from the next send on. Values outside
 * [0, 1] are clamped; NaN leaves it unchanged. */
void mroce_tw_set_loss(struct mroce_tw *tw, double loss);

/* Time at which endpoint ep's egress is free again (<= now means idle);
 * 0 for an unknown endpoint. Lets a driver pace itself like a NIC would. */
uint64_t mroce_tw_egress_free_at(const struct mroce_tw *tw, int ep);

void mroce_tw_stats(const struct mroce_tw *tw, struct mroce_tw_stats *out);

#ifdef __cplusplus
}
#endif
#endif
