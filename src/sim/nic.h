/* A host's NIC: P ports (one per plane), each serializing at its link's
 * line rate from a small two-priority TX queue, and honouring PFC pauses
 * from the switch it is attached to.
 *
 * Plane choice: a packet leaves on port meta.plane % P. The engine
 * decides it (R-ENC-10: MetaRoCE path p on plane p mod P, a RoCEv2 QP on
 * its source port mod P); for an endpoint that does not, the host sets it
 * to the UDP source port % P.
 *
 * Room: whenever a frame starts, the NIC calls `room` and the owner may
 * hand it the next packet, so the endpoint is paced by the line. An
 * endpoint that can choose planes (R-PATH-14) is asked for packets for
 * the ports with fewer than txq_pkts frames waiting (room_mask), as a
 * NIC with a queue per port schedules; one that cannot is asked while
 * all ports together hold fewer than txq_pkts x P (has_room), and a
 * full port then holds back the others.
 *
 * Received frames are handed to the owner's `rx` callback, which takes
 * ownership of the packet. The NIC never sends PFC pauses itself (its
 * host consumes at once).
 *
 * Thread-safety: none.
 */
#ifndef MROCE_SIM_NIC_H
#define MROCE_SIM_NIC_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/event.h"
#include "sim/link.h"
#include "sim/pkt.h"

/* What the NIC tells its owner. rx owns p. */
struct mroce_sim_nic_owner {
    void (*rx)(void *ud, int port, struct mroce_sim_pkt *p, uint64_t now_ps);
    void (*room)(void *ud, uint64_t now_ps);
    void *ud;
};

/* Zero fields take the default in brackets. */
struct mroce_sim_nic_cfg {
    int n_ports;       /* planes [1] */
    uint32_t txq_pkts; /* frames waiting per port, shared [2] */
};

struct mroce_sim_nic_port_counters {
    uint64_t tx_pkts, tx_bytes; /* wire bytes */
    uint64_t rx_pkts, rx_bytes;
    uint64_t pause_rx[MROCE_SIM_NPRIO]; /* pauses received */
    uint64_t pause_ps[MROCE_SIM_NPRIO]; /* time held, incl. one ongoing */
};

struct mroce_sim_nic;

/* NULL on allocation failure or n_ports outside 1..256. */
struct mroce_sim_nic *mroce_sim_nic_create(struct mroce_sim_evlist *ev,
                                           const struct mroce_sim_nic_cfg *cfg,
                                           const struct mroce_sim_nic_owner *o);
/* Queued packets stay in their pool. NULL is a no-op. */
void mroce_sim_nic_destroy(struct mroce_sim_nic *nic);

/* Wires port: frames leave on out (the NIC becomes its pause sink) and
 * arrive from in (the NIC becomes its destination). */
void mroce_sim_nic_attach(struct mroce_sim_nic *nic, int port,
                          struct mroce_sim_link *out,
                          struct mroce_sim_link *in);

int mroce_sim_nic_n_ports(const struct mroce_sim_nic *nic);
/* The port a packet with this UDP source port leaves on. */
int mroce_sim_nic_port_of(const struct mroce_sim_nic *nic, uint16_t src_port);
/* True if the NIC accepts another frame now (shared allowance). */
bool mroce_sim_nic_has_room(const struct mroce_sim_nic *nic);
/* Bit i: port i (i < 64) is linked and holds fewer than txq_pkts frames
 * not yet serializing. */
uint64_t mroce_sim_nic_room_mask(const struct mroce_sim_nic *nic);
/* Frames waiting (not yet serializing), all ports. */
uint32_t mroce_sim_nic_queued(const struct mroce_sim_nic *nic);

/* Queues p on port p->meta.plane % P at p->prio and starts it if the port is
 * idle. Takes p. Accepts even without room (the limit is the owner's to
 * respect); a port with no link drops p (no_route) into pool. */
void mroce_sim_nic_send(struct mroce_sim_nic *nic, struct mroce_sim_pool *pool,
                        struct mroce_sim_pkt *p, uint64_t now_ps);

void mroce_sim_nic_get_port_counters(const struct mroce_sim_nic *nic, int port,
                                     struct mroce_sim_nic_port_counters *out);

/* Replaces a port's counters, as mroce_sim_switch_load_port_counters. */
void mroce_sim_nic_load_port_counters(
    struct mroce_sim_nic *nic, int port,
    const struct mroce_sim_nic_port_counters *c);

#endif
