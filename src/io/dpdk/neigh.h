/* The DPDK datapath's neighbour table: static entries from configuration
 * plus what ARP/ND taught us, in a fixed array (no allocation). Lookups
 * try the last hit first: a burst mostly goes to one peer.
 *
 * Not thread-safe: it belongs to the thread polling its datapath.
 */
#ifndef MROCE_IO_DPDK_NEIGH_H
#define MROCE_IO_DPDK_NEIGH_H

#include <stdbool.h>
#include <stdint.h>

#include <mroce/mroce.h>

#define MROCE_DPDK_NEIGH_MAX 64

struct mroce_dpdk_neigh_ent {
    struct mroce_addr ip;
    uint8_t mac[6];
    bool resolved;   /* mac valid; else a resolution in progress */
    bool is_static;  /* from configuration: never replaced or evicted */
    uint64_t req_at; /* when the last ARP request/NS went out (caller's
                        clock) */
};

struct mroce_dpdk_neigh {
    struct mroce_dpdk_neigh_ent e[MROCE_DPDK_NEIGH_MAX];
    uint32_t n, hint, victim;
};

void mroce_dpdk_neigh_init(struct mroce_dpdk_neigh *t);
/* Learns or updates ip -> mac (a static entry keeps its MAC unless the
 * update is static too). Full table: evicts a dynamic entry round-robin.
 * Errors: ENOMEM (table full of static entries). */
int mroce_dpdk_neigh_add(struct mroce_dpdk_neigh *t,
                         const struct mroce_addr *ip, const uint8_t mac[6],
                         bool is_static);
/* The MAC for ip, or NULL. */
const uint8_t *mroce_dpdk_neigh_lookup(struct mroce_dpdk_neigh *t,
                                       const struct mroce_addr *ip);
/* For an unresolved ip: true if a request should go out now (none sent
 * within `interval` of `now`, any clock); records the time. */
bool mroce_dpdk_neigh_want_request(struct mroce_dpdk_neigh *t,
                                   const struct mroce_addr *ip, uint64_t now,
                                   uint64_t interval);

#endif
