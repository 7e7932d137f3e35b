/* A synthetic endpoint: sends fixed-size packets for a list of flows as
 * fast as its host's NIC takes them, with no transport (no ACKs, no
 * retransmissions, no congestion control), and counts what it receives.
 * It plugs into a host through the same ops table as a real engine
 * (mroce_sim_blast_ops), so fabric tests and raw-fabric experiments
 * (ideal FCT, ECMP spread, ECN, PFC incast) need no engine.
 *
 * Each flow has a destination address, UDP ports (the source port is its
 * ECMP entropy), a byte count cut into packets of `pkt_bytes` UDP payload,
 * an ECN codepoint, and a start time. Active flows share the NIC
 * round-robin, one packet each. A packet starts with a 16-byte header
 * (magic, flow id, sequence number, flow length in packets); the rest is
 * a filler pattern.
 *
 * Thread-safety: none.
 */
#ifndef MROCE_SIM_BLAST_H
#define MROCE_SIM_BLAST_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#include "sim/host.h"

#define MROCE_SIM_BLAST_HDR 16u

struct mroce_sim_blast_flow {
    struct mroce_addr dst;
    uint16_t src_port;
    uint16_t dst_port;  /* 0: MROCE_UDP_PORT */
    uint64_t bytes;     /* payload bytes to send, > 0 */
    uint32_t pkt_bytes; /* UDP payload per packet, >= 16 [max_pkt] */
    uint8_t ecn;        /* MROCE_ECN_* */
    uint64_t start_ns;  /* not before */
};

struct mroce_sim_blast_counters {
    uint64_t tx_pkts, tx_bytes; /* UDP payload bytes */
    uint64_t rx_pkts, rx_bytes;
    uint64_t rx_ce;       /* arrived CE-marked */
    uint64_t rx_bad;      /* too short or wrong magic (e.g. trimmed) */
    uint64_t first_rx_ns; /* UINT64_MAX until a packet arrives */
    uint64_t last_rx_ns;
    uint64_t flows_done_tx; /* flows whose last packet was sent */
    uint64_t last_tx_ns;
};

/* Called for every packet received, e.g. to record per-flow arrival. */
typedef void (*mroce_sim_blast_rx_fn)(void *ud, uint64_t now_ns,
                                      const struct mroce_pkt_meta *meta,
                                      uint32_t flow, uint32_t seq,
                                      uint32_t n_pkts);

struct mroce_sim_blast;

/* An endpoint at addr whose packets are at most max_pkt bytes (>= 16).
 * NULL on allocation failure or bad argument. */
struct mroce_sim_blast *mroce_sim_blast_create(const struct mroce_addr *addr,
                                               uint32_t max_pkt);
void mroce_sim_blast_destroy(struct mroce_sim_blast *b);

/* Adds a flow; returns its id (>= 0). Errors: EINVAL, ENOMEM. Call
 * mroce_sim_host_kick afterwards if the endpoint is already attached. */
int mroce_sim_blast_add_flow(struct mroce_sim_blast *b,
                             const struct mroce_sim_blast_flow *f);

void mroce_sim_blast_set_rx_hook(struct mroce_sim_blast *b,
                                 mroce_sim_blast_rx_fn fn, void *ud);
void mroce_sim_blast_get_counters(const struct mroce_sim_blast *b,
                                  struct mroce_sim_blast_counters *out);

/* ep is a struct mroce_sim_blast *. */
extern const struct mroce_ep_ops mroce_sim_blast_ops;

#endif
