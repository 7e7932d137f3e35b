/* A simulated host: one sans-I/O endpoint (a MetaRoCE or RoCEv2 engine,
 * or a synthetic traffic source) driven through an ops table, and the NIC
 * it sends through.
 *
 * The host is the only place where engine time (nanoseconds) meets fabric
 * time (picoseconds): engines get now_ps / 1000, and an expiry of t ns is
 * scheduled at t x 1000 ps.
 *
 * Driving, after every interaction (a packet received, a timer fired, a
 * NIC slot freed, a kick):
 *   1. pull: while the NIC has room, call tx and hand the packet to the
 *      NIC, so the engine is paced by the line (nic.h); the engine writes
 *      straight into a pooled packet's buffer (no copy);
 *   2. re-arm: read next_expiry and keep at most one pending timer event,
 *      never later than the expiry: moved earlier, the event is cancelled
 *      and rescheduled; moved later, the event stays, fires early, sees
 *      nothing due (on_expiry is not called) and re-arms. If an on_expiry
 *      leaves the expiry in the past, the next call is made one nanosecond
 *      later, so an engine that never clears a due timer slows the
 *      simulation instead of hanging it.
 * Received packets are handed to rx, then returned to the pool (counted
 * delivered whether or not the engine accepts them: the engine counts its
 * own refusals).
 *
 * Priority: each packet's priority comes from a classifier (default:
 * UDP payloads up to MROCE_SIM_CTRL_MAX_PAYLOAD bytes are control), and
 * its destination host index from a resolver the topology provides.
 *
 * Thread-safety: none. The host does not own the endpoint.
 */
#ifndef MROCE_SIM_HOST_H
#define MROCE_SIM_HOST_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#include "sim/event.h"
#include "io/ep.h"
#include "sim/nic.h"
#include "sim/pkt.h"

/* Endpoints are driven through struct mroce_ep_ops (io/ep.h), the same
 * table as the test wire's loop; mroce_ep_ctx_ops adapts a mroce_ctx. */

/* Destination host index of an address, -1 if unknown. */
typedef int (*mroce_sim_resolve_fn)(void *ud, const struct mroce_addr *a);
/* Priority (MROCE_SIM_PRIO_*) of a packet about to be sent. */
typedef int (*mroce_sim_classify_fn)(void *ud,
                                     const struct mroce_pkt_meta *meta,
                                     const uint8_t *buf, size_t len);

/* Zero fields take the default in brackets. */
struct mroce_sim_host_cfg {
    int id;                       /* host index, pkt->src_host */
    uint32_t lp;                  /* the LP it belongs to (event.h) [0] */
    struct mroce_sim_nic_cfg nic; /* see nic.h */
    mroce_sim_resolve_fn resolve; /* required */
    void *resolve_ud;
    mroce_sim_classify_fn classify; /* [by payload size] */
    void *classify_ud;
};

struct mroce_sim_host_counters {
    uint64_t tx_pkts, tx_bytes; /* handed to the NIC (payload bytes) */
    uint64_t rx_pkts, rx_bytes; /* handed to the endpoint */
    uint64_t rx_refused;        /* rx returned an error */
    uint64_t rx_no_ep;          /* arrived with no endpoint attached */
    uint64_t tx_no_route;       /* resolver did not know the address */
    uint64_t tx_errors;         /* tx failed or the pool had no packet */
    uint64_t expiries;          /* on_expiry calls */
    uint64_t early_timers;      /* timer events that found nothing due */
    uint64_t pulls;             /* tx calls */
};

struct mroce_sim_host;

/* Creates the host and its NIC. ev and pool must outlive it. NULL on
 * allocation failure or bad config. */
struct mroce_sim_host *
mroce_sim_host_create(struct mroce_sim_evlist *ev, struct mroce_sim_pool *pool,
                      const struct mroce_sim_host_cfg *c);
void mroce_sim_host_destroy(struct mroce_sim_host *h);

/* The host's NIC, for wiring (mroce_sim_nic_attach). */
struct mroce_sim_nic *mroce_sim_host_nic(struct mroce_sim_host *h);
int mroce_sim_host_id(const struct mroce_sim_host *h);

/* Attaches the endpoint (ops and ep stay the caller's and must outlive
 * the host or be detached with ops NULL) and kicks it. Errors: EINVAL
 * (ops incomplete, or max_pkt above the pool's max payload), ENOMEM. */
int mroce_sim_host_attach(struct mroce_sim_host *h,
                          const struct mroce_ep_ops *ops, void *ep);

/* Schedules an interaction at the list's now: call after posting work
 * to the endpoint from outside the event loop. It is the host's LP
 * (cfg.lp) that schedules it, whatever the list's context. */
void mroce_sim_host_kick(struct mroce_sim_host *h);

void mroce_sim_host_get_counters(const struct mroce_sim_host *h,
                                 struct mroce_sim_host_counters *out);

#endif
