/* The DPDK poll-mode datapath (MROCE_DP_DPDK): shared state of its files
 * and the calls it adds to mroce_dp.h.
 *
 * One datapath = one ethdev port, queue 0, one mempool, polled by one
 * thread (an lcore or the application's thread). More lcores scale out
 * by connection: one datapath (and context) per lcore and port.
 *
 * The EAL is process-wide: the first datapath starts it from its
 * mroce_dpdk_attr.eal_argv; later ones (and an application that started
 * it itself) reuse it and pass no EAL arguments. It is never stopped:
 * DPDK cannot start twice in one process. Mempools stay too (mbufs may
 * sit in a peer's ring) and are reused when a port is opened again.
 *
 * Hot path (rx_burst, tx_alloc, tx_burst, release): no allocation beyond
 * the mempool, no locks, no system calls. Not thread-safe: one thread
 * polls a datapath at a time (mroce_dp.h).
 */
#ifndef MROCE_IO_DPDK_DPDK_H
#define MROCE_IO_DPDK_DPDK_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_cycles.h>

#include "io/dp.h"
#include "io/dpdk/hdr.h"
#include "io/dpdk/neigh.h"

#define MROCE_DPDK_BURST_MAX 64
#define MROCE_DPDK_CTL_MAX 16
/* Frames the port refused, kept (in order) for the next pass: the deeper
 * transmit queue a NIC would have. Power of two. */
#define MROCE_DPDK_BACKLOG 512
/* Transmit mbufs handed back unused, kept for the next tx_alloc. */
#define MROCE_DPDK_STASH 64

/* Where the polling thread's time goes, in TSC cycles, told apart by the
 * ops the loop (io/dp.c) calls: the time inside an op is its own phase,
 * the time between two ops is what the loop did there (mroce_dpdk_prof). */
enum mroce_dpdk_phase {
    MROCE_DPDK_PH_RX,     /* rx_burst: device receive, frame checks, ARP/ND */
    MROCE_DPDK_PH_ENG_RX, /* rx_burst -> rx_release: mroce_ctx_rx per packet */
    MROCE_DPDK_PH_POOL,   /* rx_release, tx_alloc, tx_free: mbufs */
    MROCE_DPDK_PH_TIMERS, /* receive done -> first transmit op: timers */
    MROCE_DPDK_PH_ENG_TX, /* between transmit ops: mroce_ctx_tx per packet */
    MROCE_DPDK_PH_TX,     /* tx_burst: headers, device send */
    MROCE_DPDK_PH_APP,    /* last op -> next rx_burst: the application */
    MROCE_DPDK_PH_N
};

/* The ops, for telling the gaps between them apart. */
enum mroce_dpdk_op {
    MROCE_DPDK_OP_RX,
    MROCE_DPDK_OP_RELEASE,
    MROCE_DPDK_OP_ALLOC,
    MROCE_DPDK_OP_FREE,
    MROCE_DPDK_OP_TX,
};

/* What the DPDK datapath did beyond struct mroce_dp_counters. */
struct mroce_dpdk_counters {
    uint64_t drop[MROCE_DPDK_DROP_N]; /* rx frames by enum mroce_dpdk_drop;
                                         their sum is cnt.rx_bad_frame */
    uint64_t rx_csum_partial;         /* UDP checksum left to offload (hdr.c) */
    uint64_t arp_rx, arp_tx; /* ARP frames in, requests + replies out */
    uint64_t nd_rx, nd_tx;   /* NS/NA in and out */
    uint64_t icmp6_ignored;  /* other ICMPv6 to us */
    uint64_t tx_no_neigh;    /* dropped: peer MAC unknown (resolving) */
    uint64_t tx_ring_full;   /* dropped: port and backlog both full */
    uint64_t tx_backlogged;  /* frames that waited in the backlog */
    uint64_t tx_alloc_fail;  /* mempool empty */
    uint64_t pcap_frames, pcap_dropped;
    /* Zero-copy transmit (zc.c): frames sent as headers + the payload
     * attached from registered memory + the ICRC; frames built so and
     * then kept (backlog), whose payload had to be copied after all;
     * payloads copied because the slots or the zc pool ran out; slots a
     * PMD still held after tx_burst (zero-copy then turned off). */
    uint64_t tx_zc, tx_zc_flattened, tx_zc_short, tx_zc_async;
    uint64_t passes;               /* rx_burst calls */
    uint64_t cyc[MROCE_DPDK_PH_N]; /* TSC cycles by enum mroce_dpdk_phase */
};

struct mroce_dpdk {
    uint16_t port, pcap_port;
    bool pcap;
    struct rte_mempool *mp;
    uint8_t mac[6];
    struct mroce_dpdk_local local;
    uint32_t hdr_len; /* Ethernet + IP + UDP */
    uint32_t room;    /* bytes from the data start to the buffer end */
    uint64_t tsc_hz;
    struct mroce_dpdk_neigh neigh;
    struct mroce_dpdk_counters cnt;
    struct rte_mbuf *ctl[MROCE_DPDK_CTL_MAX]; /* ARP/ND frames to send */
    uint16_t n_ctl;
    struct rte_mbuf *cap[MROCE_DPDK_BURST_MAX]; /* frames to capture */
    uint16_t n_cap;
    struct rte_mbuf *backlog[MROCE_DPDK_BACKLOG];
    uint32_t bl_head, bl_tail; /* free-running; head - tail frames */
    struct rte_mbuf *stash[MROCE_DPDK_STASH]; /* as allocated, LIFO */
    uint16_t n_stash;
    struct mroce_dpdk_zc *zc; /* zc.c; NULL: never on for this port */
    bool zc_on;               /* attach payloads (zc.c decides) */
    uint64_t prof_at;         /* TSC at the last op's exit; 0: no op yet */
    int prof_op;              /* the last op (enum mroce_dpdk_op) */
};

/* ---- Phase profile: one TSC read at each op's entry and exit ---- */

/* The phase of the gap that ends when `op` is entered. */
static inline int mroce_dpdk_gap_phase(int last, int op)
{
    if (op == MROCE_DPDK_OP_RX)
        return MROCE_DPDK_PH_APP;
    if (op == MROCE_DPDK_OP_RELEASE)
        return MROCE_DPDK_PH_ENG_RX;
    if (last == MROCE_DPDK_OP_ALLOC || last == MROCE_DPDK_OP_FREE)
        return MROCE_DPDK_PH_ENG_TX;
    return MROCE_DPDK_PH_TIMERS;
}

/* The first op only starts the clock: set-up before it is nobody's. */
static inline void mroce_dpdk_prof_enter(struct mroce_dpdk *p, int op)
{
    uint64_t t = rte_rdtsc();
    if (p->prof_at)
        p->cnt.cyc[mroce_dpdk_gap_phase(p->prof_op, op)] += t - p->prof_at;
    p->prof_at = t;
}

static inline void mroce_dpdk_prof_exit(struct mroce_dpdk *p, int op, int phase)
{
    uint64_t t = rte_rdtsc();
    p->cnt.cyc[phase] += t - p->prof_at;
    p->prof_at = t;
    p->prof_op = op;
}

/* eal.c: EAL, port, mempool and capture port start-up and shut-down.
 * Errors as mroce_dp_create, with the reason logged. */
int mroce_dpdk_start(struct mroce_dp *dp, struct mroce_dpdk *p);
void mroce_dpdk_stop(struct mroce_dpdk *p);
/* Logs through the context's log hook, or to stderr without one. */
void mroce_dpdk_log(const struct mroce_dp *dp, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ctl.c: ARP/ND answered and asked; capture. */
void mroce_dpdk_ctl_rx(struct mroce_dpdk *p, const uint8_t *frame,
                       const struct mroce_dpdk_rx_info *info);
void mroce_dpdk_resolve(struct mroce_dpdk *p, const struct mroce_addr *ip);
void mroce_dpdk_ctl_flush(struct mroce_dpdk *p);
void mroce_dpdk_capture(struct mroce_dpdk *p, struct rte_mbuf *m);
void mroce_dpdk_capture_flush(struct mroce_dpdk *p);

/* zc.c: zero-copy transmit. open decides whether the port may use it
 * (p->zc_on) and logs why not; close forgets the port's slots (they stay
 * for the process: a PMD may still hold some). attach chains m0 (headers
 * written, the ICRC behind the hole in pkt->buf) with the payload and
 * the ICRC; false: send a copy (the payload is too short for it to pay
 * off, or the slots or mbufs ran out: tx_zc_short). flatten undoes a
 * chain into one mbuf (for a frame the datapath keeps). check, after a
 * burst whose unsent chains were all flattened: a slot still out is held
 * by the PMD, so zero-copy goes off (tx_zc_async). */
struct mroce_dpdk_zc;
void mroce_dpdk_zc_open(struct mroce_dp *dp, struct mroce_dpdk *p);
void mroce_dpdk_zc_close(struct mroce_dpdk *p);
bool mroce_dpdk_zc_attach(struct mroce_dpdk *p, struct rte_mbuf *m0,
                          const struct mroce_dp_pkt *pkt);
void mroce_dpdk_zc_flatten(struct mroce_dpdk *p, struct rte_mbuf *m0);
void mroce_dpdk_zc_check(struct mroce_dp *dp, struct mroce_dpdk *p);
/* Slots attached payloads hold now (0 between bursts on a PMD that
 * copies during tx_burst). */
unsigned mroce_dpdk_zc_held(const struct mroce_dpdk *p);
/* Tests: zero-copy on whatever the port (the async check on net_ring,
 * which holds frames in its ring). false: no memory for the pool. */
bool mroce_dpdk_zc_force(struct mroce_dpdk *p);

/* ---- Extension calls (datapaths of kind MROCE_DP_DPDK only) ---- */

/* Copies the datapath's counters. Errors: EINVAL (not a DPDK datapath). */
int mroce_dpdk_get_counters(const struct mroce_dp *dp,
                            struct mroce_dpdk_counters *out);
/* The port's MAC address. Errors: EINVAL. */
int mroce_dpdk_mac(const struct mroce_dp *dp, uint8_t mac[6]);
/* The ethdev port id (for tests that inject frames). Errors: EINVAL. */
int mroce_dpdk_port_id(const struct mroce_dp *dp);
/* Short name of a drop reason ("ethertype", "ip_csum", ...). */
const char *mroce_dpdk_drop_str(int reason);

#endif
