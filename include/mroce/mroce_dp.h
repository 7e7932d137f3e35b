/* mroce datapaths: an engine (struct mroce_ctx) on a real network.
 *
 * A datapath owns one context and moves its packets: UDP sockets on any
 * Linux host (MROCE_DP_UDP, src/io/udp) or DPDK poll-mode ports
 * (MROCE_DP_DPDK, src/io/dpdk). The application creates the datapath,
 * takes its context with mroce_dp_ctx() and uses the verbs API of
 * mroce.h on it as usual; mroce_progress() does the I/O.
 *
 * Progress model: nothing happens unless somebody calls mroce_progress()
 * (it never blocks) -- the application in its own loop, or a polling
 * thread started with mroce_dp_thread_start(). While a polling thread
 * runs, every other call on the context or its objects must hold
 * mroce_dp_lock()/mroce_dp_unlock(). mroce_dp_wait() sleeps until a
 * packet or a timer is due (UDP; DPDK returns at once).
 */
#ifndef MROCE_DP_H
#define MROCE_DP_H

#include <stdbool.h>
#include <stdint.h>

#include <mroce/mroce.h>

#define MROCE_DP_UDP 1
#define MROCE_DP_DPDK 2

/* Test impairments applied to packets the datapath sends, after the
 * engine built them and before the wire. All zero: off (the default).
 * Probabilities are per packet; the generator is seeded by `seed`. */
struct mroce_impair {
    double loss;        /* independent random loss */
    double burst_enter; /* Gilbert-Elliott: P(good -> bad) per packet */
    double burst_exit;  /* P(bad -> good); every packet in bad is lost */
    double reorder;     /* P(a packet is held back reorder_ns) */
    uint64_t reorder_ns;
    double duplicate;  /* P(a packet is sent twice) */
    uint64_t delay_ns; /* added to every packet */
    uint64_t seed;
};

/* A static neighbour (DPDK has no ARP cache of ours to fill). */
struct mroce_dp_neigh {
    struct mroce_addr ip;
    uint8_t mac[6];
};

/* DPDK specifics. EAL arguments as rte_eal_init takes them (argv[0]
 * included). `port` names the ethdev ("net_memif0", "net_ring0"; NULL:
 * the first port). The local MAC is the port's; neighbours not in the
 * table are resolved by ARP/ND. `pcap`: also write every frame sent and
 * received to this file (net_pcap format tshark reads). `no_zc`: copy
 * every payload into the frame instead of attaching it from registered
 * memory where the port allows that (docs/dpdk.md, zero-copy transmit). */
struct mroce_dpdk_attr {
    int eal_argc;
    char **eal_argv;
    const char *port;
    const struct mroce_dp_neigh *neigh;
    int n_neigh;
    uint32_t n_mbufs;          /* [8192] */
    uint16_t rx_ring, tx_ring; /* descriptors [1024] */
    const char *pcap;
    bool no_zc;
};

struct mroce_dp_attr {
    int kind;             /* MROCE_DP_* */
    const char *local_ip; /* IPv4 or IPv6 literal to bind/own; NULL: ctx.addr
                             as given */
    uint16_t port;        /* UDP port to listen on [4797] */
    uint32_t n_src_ports; /* path source ports [64] (UDP: one socket each) */
    uint64_t pace_bps;    /* sender pacing, IP bytes/s * 8 [0: off] */
    uint32_t batch;       /* packets per burst [256] */
    bool no_gso, no_gro;  /* UDP: turn the offloads off */
    struct mroce_impair impair;
    const struct mroce_dpdk_attr *dpdk; /* MROCE_DP_DPDK only */
    /* The context the datapath opens. addr, udp_port and src_ports are
     * set by the datapath; everything else is the caller's, but a NULL
     * crypto gets mroce_crypto_default() (the secure modes' provider,
     * mroce_crypto.h). */
    struct mroce_ctx_attr ctx;
};

struct mroce_dp;

/* Opens the datapath and its context. Errors: EINVAL (bad attr, e.g.
 * ctx.spray_run above MROCE_MAX_SPRAY_RUN, an address that is not local, a
 * RoCEv2 context: the RoCEv2 baseline sends from per-QP ports to UDP 4791 and
 * runs in the simulator only), ENOMEM, ESTATE
 * (the datapath cannot start: port in use, DPDK EAL failure; the log hook of
 * attr->ctx says why). Not thread-safe. */
int mroce_dp_create(const struct mroce_dp_attr *attr, struct mroce_dp **out);
/* Stops a polling thread, closes the context (outstanding work requests
 * are dropped, as mroce_ctx_close does) and frees everything. A DPDK
 * port is stopped on the EAL interrupt thread (docs/dpdk.md, Teardown).
 * net_memif: do not poll a port while its peer may stop it (memif
 * unmaps the rings under a running burst); wait for the link to go down
 * instead. */
void mroce_dp_destroy(struct mroce_dp *dp);
struct mroce_ctx *mroce_dp_ctx(struct mroce_dp *dp);

/* One pass: receive a burst, run due timers, send what the engine has
 * (within pacing). Returns packets moved (0: idle) or a negative error. */
int mroce_progress(struct mroce_dp *dp);
/* mroce_progress in two halves, for a caller that acts between them (the
 * soft NIC delivers completions and feeds new work before sending):
 * _rx receives a burst and runs due timers, _tx sends what the engine has.
 * Same returns and locking as mroce_progress. */
int mroce_progress_rx(struct mroce_dp *dp);
int mroce_progress_tx(struct mroce_dp *dp);
/* Sleeps until a packet arrives, a timer is due, or timeout_ns passed. */
int mroce_dp_wait(struct mroce_dp *dp, uint64_t timeout_ns);
/* Makes a mroce_dp_wait in progress in another thread return at once (or
 * the next one, if none sleeps now): the doorbell of a thread that owns
 * the datapath (the soft NIC of src/ibverbs). Thread-safe; touches no
 * engine state. Errors: ESTATE (the wake-up could not be sent). */
int mroce_dp_wake(struct mroce_dp *dp);

int mroce_dp_thread_start(struct mroce_dp *dp);
void mroce_dp_thread_stop(struct mroce_dp *dp);
void mroce_dp_lock(struct mroce_dp *dp);
void mroce_dp_unlock(struct mroce_dp *dp);

/* What the datapath did (the engine's own counters are in
 * mroce_ctx_counters). */
struct mroce_dp_counters {
    uint64_t rx_pkts, rx_bytes, rx_bursts;
    uint64_t tx_pkts, tx_bytes, tx_bursts;
    uint64_t gso_sends, gro_merged; /* UDP offloads used */
    uint64_t rx_ce;                 /* packets that arrived CE-marked */
    uint64_t rx_bad_frame;          /* not ours: bad Ethernet/IP/UDP */
    uint64_t tx_dropped;            /* the device refused (ring full) */
    uint64_t pace_waits;
    uint64_t imp_lost, imp_dup, imp_reordered, imp_delayed;
    /* UDP: an offload asked for but refused by the kernel (1 per socket
     * setup), so the datapath runs without it */
    uint64_t gso_fallback, gro_fallback;
};
void mroce_dp_get_counters(const struct mroce_dp *dp,
                           struct mroce_dp_counters *out);

/* Parses an IPv4 or IPv6 literal ("10.0.0.1", "fd00::1") into *out.
 * Errors: EINVAL (NULL or not a literal; *out is then zeroed). */
int mroce_addr_parse(const char *s, struct mroce_addr *out);

/* Wall-clock nanoseconds (CLOCK_MONOTONIC): the `now` every datapath
 * gives its engine. */
uint64_t mroce_dp_now_ns(void);

#endif
