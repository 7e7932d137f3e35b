/* An output-queued Ethernet switch: N ports, a shared buffer, two strict
 * priorities per egress port, ECMP, RED-style ECN marking, tail drop,
 * optional trimming, and PFC.
 *
 * Forwarding. A packet arriving on port i (through the port's sink) is
 * routed by its destination host (pkt->dst_host) to a group of
 * equal-cost egress ports that the topology installed; the member is
 * hash(5-tuple, per-switch seed) % n, so the UDP source port picks the
 * path as on real switches, and each switch draws a different seed to
 * avoid hash polarization. Ports can be taken out of ECMP (fast reroute
 * after a local link failure); the surviving members then split the
 * hash space. The packet is enqueued after `proc_ps` (switching latency,
 * default 0 so the store-and-forward ideal of metrics.md holds exactly).
 *
 * Queues. Each egress port has a FIFO per priority (MROCE_SIM_PRIO_DATA,
 * MROCE_SIM_PRIO_CTRL) served in strict priority, control first. All
 * queues share one buffer of buffer_bytes. Lossy admission per queue is
 * the dynamic threshold: queue + frame <= alpha x (buffer - used); or,
 * with buffer_static set, a static per-queue limit of port_limit bytes.
 * A packet is counted in the buffer from its admission until its egress
 * starts serializing it.
 *
 * ECN. At admission, an ECT packet is marked CE with probability 0 below
 * Kmin bytes of egress queue (its own priority, before the packet),
 * rising linearly to Pmax at Kmax, and 1 above Kmax (RED as DCQCN
 * configures it). Marking at enqueue follows RED (Floyd and Jacobson 1993)
 * and the DCQCN paper; the draw comes from the switch's own generator.
 *
 * Trimming. When a lossy data packet finds no room and trimming is on,
 * its payload is cut to trim_bytes and it goes to the control queue of
 * the same port (NDP); if even that is full it is dropped.
 *
 * PFC (IEEE 802.1Qbb). With pfc on, the priorities in pfc_mask are
 * lossless: admission ignores the egress thresholds and instead counts
 * bytes per (ingress port, priority). When that count exceeds xoff, the
 * switch sends a pause for the priority back through the ingress port's
 * link (mroce_sim_link_pause), and a resume when it falls to xon. Frames
 * that arrive after the pause still fit in `headroom` bytes; beyond xoff
 * + headroom, or if the whole buffer is full, they are dropped (reason
 * headroom/queue) -- a sign of mis-sized thresholds, never expected. An
 * egress port paused by its downstream neighbour finishes the frame on
 * the wire and then holds that priority; pause count and paused time are
 * counted per port and priority.
 *
 * Ownership: the switch owns packets from recv until it hands them to a
 * link or drops them. The switch does not own its links.
 * Thread-safety: none.
 */
#ifndef MROCE_SIM_SWITCH_H
#define MROCE_SIM_SWITCH_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/event.h"
#include "sim/link.h"
#include "sim/pkt.h"

/* Zero fields take the default in brackets (defaults.h). */
struct mroce_sim_switch_cfg {
    int n_ports;           /* required, 1..65535 */
    int n_hosts;           /* routing table size (host indices), required */
    uint64_t seed;         /* ECMP hash seed and ECN draws [0] */
    uint64_t proc_ps;      /* switching latency [0] */
    uint64_t buffer_bytes; /* shared pool [n_ports x 2 MB] */
    int buffer_static;     /* 1: static per-queue limits, not DT [0] */
    double dt_alpha;       /* dynamic threshold alpha [1.0] */
    uint64_t port_limit;   /* static limit per queue [buffer/n_ports] */
    int no_ecn;            /* 1: never mark [0] */
    uint32_t ecn_kmin;     /* bytes [5000] */
    uint32_t ecn_kmax;     /* bytes [200000] */
    double ecn_pmax;       /* [0.01] */
    int trim;              /* 1: trim instead of dropping data [0] */
    uint32_t trim_bytes;   /* payload kept [64] */
    int pfc;               /* 1: PFC on the priorities in pfc_mask [0] */
    unsigned pfc_mask;     /* bit per priority [both] */
    uint32_t pfc_headroom; /* bytes [mroce_sim_pfc_headroom(defaults)] */
    uint32_t pfc_xoff;     /* bytes [2 x headroom] */
    uint32_t pfc_xon;      /* bytes [xoff - 2 MTU frames] */
};

/* Headroom per ingress port and priority for a link of rate and one-way
 * delay carrying frames of up to mtu_wire bytes (see defaults.h):
 * 2 x rate x delay + 2 x mtu_wire + one pause frame. */
uint32_t mroce_sim_pfc_headroom(uint64_t rate_bps, uint64_t delay_ps,
                                uint32_t mtu_wire);

/* Per port; egress counters describe frames this port sent, ingress ones
 * frames it received. */
struct mroce_sim_port_counters {
    uint64_t tx_pkts, tx_bytes;         /* egress, wire bytes */
    uint64_t rx_pkts, rx_bytes;         /* ingress */
    uint64_t drops[MROCE_SIM_DROP_N];   /* queue at egress, headroom and
                                           no_route at ingress */
    uint64_t ecn_marks;                 /* egress */
    uint64_t trimmed;                   /* egress */
    uint64_t max_qbytes;                /* egress, both priorities */
    uint64_t pause_rx[MROCE_SIM_NPRIO]; /* egress paused by downstream */
    uint64_t pause_ps[MROCE_SIM_NPRIO]; /* time egress was paused */
    uint64_t pause_tx[MROCE_SIM_NPRIO]; /* pauses sent upstream */
};

struct mroce_sim_switch;

/* NULL on allocation failure or bad config (n_ports or n_hosts < 1, ECN
 * Kmin > Kmax, xon > xoff). ev and pool must outlive the switch. */
struct mroce_sim_switch *
mroce_sim_switch_create(struct mroce_sim_evlist *ev,
                        struct mroce_sim_pool *pool,
                        const struct mroce_sim_switch_cfg *cfg);
/* Drops (counted) every queued packet, then frees. NULL is a no-op. */
void mroce_sim_switch_destroy(struct mroce_sim_switch *sw);

/* Wires port: `out` carries its egress frames (the switch becomes its
 * pause sink), `in` brings frames to it (the switch becomes its
 * destination; pauses go back through it). Either may be NULL. */
void mroce_sim_switch_attach(struct mroce_sim_switch *sw, int port,
                             struct mroce_sim_link *out,
                             struct mroce_sim_link *in);
/* The sink that links deliver to for port. */
struct mroce_sim_sink mroce_sim_switch_sink(struct mroce_sim_switch *sw,
                                            int port);

/* Installs the equal-cost egress ports for dst_host (copied). Returns
 * false on a bad argument or out of memory. */
bool mroce_sim_switch_set_route(struct mroce_sim_switch *sw, int dst_host,
                                const int *ports, int n);
/* Takes a port out of (false) or back into (true) every ECMP group. */
void mroce_sim_switch_set_port_routable(struct mroce_sim_switch *sw, int port,
                                        bool on);
/* The egress a packet of that flow hash to dst_host would take now; -1
 * if no route. For tests and path tracing. */
int mroce_sim_switch_route(const struct mroce_sim_switch *sw, int dst_host,
                           uint64_t flow_hash);

int mroce_sim_switch_n_ports(const struct mroce_sim_switch *sw);
/* Bytes queued at port, both priorities. */
uint64_t mroce_sim_switch_qbytes(const struct mroce_sim_switch *sw, int port);
uint64_t mroce_sim_switch_buffer_used(const struct mroce_sim_switch *sw);
/* Packets held (queued, or waiting out proc_ps). */
uint64_t mroce_sim_switch_pkts_held(const struct mroce_sim_switch *sw);
/* Pause time includes a pause still in progress at the list's now. */
void mroce_sim_switch_get_port_counters(const struct mroce_sim_switch *sw,
                                        int port,
                                        struct mroce_sim_port_counters *out);
/* Replaces a port's counters (pause time in progress included): a
 * parallel run's totals over all ranks (sim/prun.h), once it is over. */
void mroce_sim_switch_load_port_counters(
    struct mroce_sim_switch *sw, int port,
    const struct mroce_sim_port_counters *c);
/* The sum over ports (max_qbytes: the largest). */
void mroce_sim_switch_get_counters(const struct mroce_sim_switch *sw,
                                   struct mroce_sim_port_counters *out);

#endif
