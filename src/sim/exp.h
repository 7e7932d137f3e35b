/* Experiments: one fabric scenario from a flat configuration to its
 * results. This is what `mroce-sim` runs and what the validation tests
 * run, so the numbers a test checks are the numbers the CLI prints.
 *
 * A scenario: a leaf-spine (or multiplane) topology, one real engine per
 * host that takes part (MetaRoCE or RoCEv2, through the public verbs API
 * and mroce_ep_ctx_ops-style driving), a workload of flows that all
 * start at time 0, optional faults, and a run until every flow settled.
 *
 * A flow moves `size` bytes from a source host to a destination host over
 * its own connection, as RDMA WRITEs of at most `msg_bytes` posted back to
 * back; the last one carries an immediate, so the destination learns that
 * all the data is in place (completions of a stream come in order). The
 * flow completion time (FCT) is when that receive completion appears at
 * the destination: the moment the data is usable there, which is what
 * the analytic ideal (topo.h) measures. A flow settles when its sender
 * has a completion for every WRITE; it fails if any completion is an
 * error or it has not settled by the deadline. Every destination buffer
 * is compared with its source after the run.
 *
 * Times are picoseconds, as everywhere in the simulator. Wall-clock
 * fields (wall_s, events_per_s, peak_rss_mb, setup_s) are the only ones
 * that differ between two runs of the same configuration.
 *
 * Thread-safety: a run uses no globals; runs in different threads are
 * independent.
 */
#ifndef MROCE_SIM_EXP_H
#define MROCE_SIM_EXP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/comm.h"
#include "sim/pkt.h"
#include "sim/vmem.h"

#define MROCE_SIM_EXP_MAX_PLANES 16 /* the topology's limit */

#define MROCE_SIM_EXP_MAX_FAULTS 16
/* The time series keeps at most this many samples: when full, pairs of
 * samples merge and the interval doubles (docs/sim.md "Time series"). */
#define MROCE_SIM_EXP_MAX_SAMPLES 65536
#define MROCE_SIM_EXP_LINK_NAME 64

/* Payload: real buffers, or payload-free regions (sim/vmem.h) with every
 * byte still accounted for; AUTO takes payload-free when the buffers
 * would exceed MROCE_SIM_EXP_PAYLOAD_AUTO_BYTES. */
#define MROCE_SIM_EXP_PAYLOAD_AUTO 0
#define MROCE_SIM_EXP_PAYLOAD_REAL 1
#define MROCE_SIM_EXP_PAYLOAD_FREE 2
#define MROCE_SIM_EXP_PAYLOAD_AUTO_BYTES (256ull << 20)

/* Switches: 0 takes the default. */
#define MROCE_SIM_EXP_DEFAULT 0
#define MROCE_SIM_EXP_ON 1
#define MROCE_SIM_EXP_OFF 2

enum mroce_sim_exp_workload {
    MROCE_SIM_EXP_SINGLE,      /* host 0 -> the last host (far leaf) */
    MROCE_SIM_EXP_PERMUTATION, /* every host -> a random partner, no self */
    MROCE_SIM_EXP_INCAST,      /* the last `senders` hosts -> host 0 */
    MROCE_SIM_EXP_ALLREDUCE,   /* ring all-reduce over every host (coll/) */
    MROCE_SIM_EXP_ALLTOALL,    /* all-to-all over every host (coll/) */
    MROCE_SIM_EXP_ALLGATHER,   /* ring all-gather over every host (coll/) */
};

/* Collective workloads (allreduce, alltoall, allgather) run src/coll
 * over the fabric: one rank per host, `size` bytes S (all-reduce: each
 * rank's float32 array; all-to-all: each rank's whole send buffer,
 * size / hosts per peer; all-gather: the whole gathered array, size /
 * hosts from each rank, as NCCL-tests and metrics.md count it), `iters`
 * collectives back to back, each verified (exact sums, every block). The
 * collective's progress is called from the host callbacks, right after the
 * engine took a packet or a timer (the only events that add completions), so
 * steps chain at the exact simulated time; a sweep every 20 us of simulated
 * time is the safety net. JCT is the mean time per collective; the ideal
 * follows metrics.md. */
#define MROCE_SIM_EXP_FLAVOUR_WRITE_IMM 0
#define MROCE_SIM_EXP_FLAVOUR_SEND 1

/* A link fault: the link by name (topo.h: "leaf0-spine1", "p1.host3-leaf0")
 * or by decimal id. Faults hit the cable, both directions. */
struct mroce_sim_exp_fault {
    char link[MROCE_SIM_EXP_LINK_NAME];
    double fraction; /* degrade: rate fraction, 0 < f <= 1 */
    uint64_t t_ps;   /* fail: when the cable goes down; degrade: when it
                        slows down (0: from the start) */
};

/* A whole plane down (every cable of plane `plane`) at t_ps, back up at
 * up_ps (0: stays down). */
struct mroce_sim_exp_plane_fault {
    int plane;
    uint64_t t_ps, up_ps;
};

/* One point of the time series, sampled every cfg.sample_ps: what
 * happened in (t_ps - sample_ps, t_ps] (the interval doubles each time
 * the series fills MROCE_SIM_EXP_MAX_SAMPLES; the last sample holds the
 * bytes placed after the one before, its queues read when the run
 * stopped). Payload counts once per byte, data packets only. */
struct mroce_sim_exp_sample {
    uint64_t t_ps;
    double gbps;          /* payload bytes placed at all receivers, as Gbit/s */
    double victim_gbps;   /* the incast victim flow's placed bytes */
    uint64_t qbytes;      /* largest switch egress queue at t_ps */
    uint64_t q_dst_bytes; /* host 0's leaf downlink queue at t_ps */
};

struct mroce_sim_exp_progress {
    uint64_t now_ps;
    uint64_t events;
    double wall_s;
    int flows_settled, flows;
};

/* Zero fields take the default in brackets. */
struct mroce_sim_exp_cfg {
    int transport;      /* MROCE_TRANSPORT_* [METAROCE] */
    int hosts;          /* [16] */
    int hosts_per_leaf; /* must divide hosts [min(8, hosts)] */
    int spines;         /* [hosts_per_leaf: non-blocking] */
    int planes;         /* [1] */
    int fat_k;          /* > 0: a 3-tier k-ary fat-tree (topo.h) instead
                           of the leaf-spine: k pods of k/2 leaves and k/2
                           aggregation switches, (k/2)^2 cores; hosts,
                           hosts_per_leaf and spines follow from k [0] */
    int oversub;        /* fat-tree: hosts per leaf = oversub x k/2 [1] */
    uint64_t link_bps;  /* every link [400G] */
    uint64_t delay_ps;  /* every link's propagation delay [1 us];
                           MROCE_SIM_ZERO_DELAY (sim/link.h): none */
    uint32_t mtu;       /* payload bytes per packet [4096] */
    int paths;          /* MetaRoCE paths per connection [engine: 16] */
    int qps;            /* RoCEv2 QPs per connection [1] */
    int pfc;            /* MROCE_SIM_EXP_ON/OFF [production default: on
                           for RoCEv2, off for MetaRoCE] */
    int dcqcn;          /* RoCEv2 only: MROCE_SIM_EXP_ON/OFF [on] */
    double loss;        /* end-to-end random loss, on host uplinks */
    struct mroce_sim_exp_fault degrade[MROCE_SIM_EXP_MAX_FAULTS];
    int n_degrade;
    struct mroce_sim_exp_fault fail[MROCE_SIM_EXP_MAX_FAULTS];
    int n_fail;
    int trim;               /* MROCE_SIM_EXP_ON/OFF: switches cut the
                               payload of data they cannot queue and
                               forward the header at control priority
                               (NDP) instead of dropping it [off] */
    uint64_t buf_per_port;  /* switch shared buffer per port, bytes
                               [MROCE_SIM_BUF_PER_PORT, 2 MiB] */
    uint64_t reroute_ps;    /* switches drop a dead link from ECMP after
                               this long; 0 never [0] */
    uint64_t seed;          /* topology, engines and workload derive from it */
    const char *pcap;       /* trace host 0's links to this file [none] */
    int workload;           /* mroce_sim_exp_workload [SINGLE] */
    uint64_t size;          /* bytes per flow [1 MiB] */
    uint32_t msg_bytes;     /* largest WRITE [4 MiB] */
    int senders;            /* incast fan-in [4] */
    uint8_t rocev2_timeout; /* RoCEv2 ACK timeout 4.096 us x 2^t [14] */
    uint64_t deadline_ps;   /* simulated time limit [2 s] */
    /* A softer limit: past soft_deadline_ps of simulated time the run
     * also stops as soon as it has used wall_budget_s (> 0) of wall time
     * (a run that is cheap enough goes on to deadline_ps) [none] */
    uint64_t soft_deadline_ps;
    double wall_budget_s;
    int iters;    /* collectives back to back [1] */
    int channels; /* collective channels (streams) [1] */
    int flavour;  /* all-reduce: MROCE_SIM_EXP_FLAVOUR_* */
    int shifted;  /* all-to-all: shifted schedule, not concurrent */
    struct mroce_sim_exp_plane_fault fail_plane[MROCE_SIM_EXP_MAX_FAULTS];
    int n_fail_plane;
    int victim;         /* incast: add a victim flow from the last
                           host to host 1 (receiver's leaf), writing its
                           buffer `senders` times over [0] */
    uint64_t sample_ps; /* time-series interval [1 us] */
    int payload;        /* MROCE_SIM_EXP_PAYLOAD_* [AUTO] */
    bool whole_pkts;    /* payload-free: keep packets whole in the pool
                           rather than squeezed (sim/pkt.h; comparisons
                           and tests: results are the same) [false] */
    int place_fault;    /* tests: MROCE_SIM_VMEM_FAULT_* on placement
                           number place_fault_at (sim/vmem.h) [none] */
    uint64_t place_fault_at;
    /* A parallel run (docs/sim.md "Parallel runs"): comm, if set, is this
     * process's rank of a communicator (sim/comm.h; MPI: src/simmpi) and
     * every rank runs the same configuration; otherwise `ranks` > 1 runs
     * that many ranks as threads here. The result is rank 0's and equal
     * to one rank's but for the fields that say how it ran. [1 rank] */
    const struct mroce_sim_comm *comm;
    int ranks;
    /* Called from the run loop at most every progress_every_s of wall
     * time (if set) [0.25 s]; on rank 0 only. */
    void (*progress)(void *ud, const struct mroce_sim_exp_progress *p);
    void *progress_ud;
    double progress_every_s;
};

struct mroce_sim_exp_flow {
    int src, dst;
    uint64_t ideal_ps;  /* this flow alone on the idle fabric */
    uint64_t fct_ps;    /* destination's completion; 0 if none */
    uint64_t settle_ps; /* sender's last completion; 0 if none */
    int status;         /* first failed completion, or MROCE_WC_SUCCESS */
    bool completed;     /* every WRITE succeeded and the data arrived */
    bool data_ok;       /* destination equals source */
    bool victim;        /* the incast's victim flow (cfg.victim) */
    uint64_t retx_pkts, data_pkts, timeouts;
};

/* Data transmissions declared lost, by the rule that declared them
 * (struct mroce_conn_counters lost_*; RoCEv2 counts none). */
struct mroce_sim_exp_lost {
    uint64_t sack, rack, pto, rto, rnr;
};

struct mroce_sim_exp_pct {
    double p50, p99, max;
};

struct mroce_sim_exp_result {
    char error[160]; /* why mroce_sim_exp_run refused the scenario */
    struct mroce_sim_exp_cfg cfg; /* with defaults resolved */
    int n_flows;
    struct mroce_sim_exp_flow *flows; /* n_flows, owned */
    int flows_completed, flows_failed, flows_corrupt;
    uint64_t ideal_ps;        /* one flow of `size` host 0 -> far leaf;
                                 collectives: the ideal JCT */
    uint64_t jct_ps;          /* last FCT; collectives: mean JCT */
    double fraction_of_ideal; /* ideal / jct; collectives: busbw/(eta B) */
    struct mroce_sim_exp_pct fct_us;   /* over completed flows */
    struct mroce_sim_exp_pct slowdown; /* FCT / the flow's ideal */
    uint64_t data_pkts, retx_pkts, ooo_pkts, timeouts;
    struct mroce_sim_exp_lost lost_by; /* over every connection */
    uint64_t drops, drop[MROCE_SIM_DROP_N];
    uint64_t ecn_marks, trimmed, pfc_pauses, pfc_pause_ps, max_qbytes;
    /* by where the queue is: leaf->host, leaf->spine, spine->leaf */
    uint64_t where_ecn[3], where_max_qbytes[3];
    /* wire bytes the hosts' NIC ports sent, by plane (first 16) */
    uint64_t plane_tx_bytes[MROCE_SIM_EXP_MAX_PLANES];
    struct mroce_sim_pool_counters pkts; /* conservation, at the end */
    uint64_t end_ps;      /* simulated time when the run stopped */
    bool wall_cut;        /* stopped past the soft deadline, out of wall
                             budget (cfg.wall_budget_s) */
    uint64_t pcap_frames; /* frames written to the trace */
    uint64_t events;
    /* collectives (zero for flow workloads) */
    bool coll_verified;  /* every iteration ran and checked exact */
    int iters_done;      /* collectives that completed */
    uint64_t coll_bytes; /* S: bytes per rank actually used */
    uint64_t jct_max_ps; /* slowest iteration (jct_ps is the mean) */
    uint64_t alpha_ps;   /* per-step latency in the ideal */
    double eta;          /* payload / wire bytes of the messages sent */
    double hdr_bytes;    /* their transport header per packet, the mean
                            (wire opcode tables) */
    double eta_measured; /* payload placed / wire bytes of the data
                            packets delivered (the frames' own count) */
    double line_gbps;    /* B: host line rate, all planes */
    double algbw_gbps, busbw_gbps, ideal_busbw_gbps;
    /* health and fairness (metrics.md) */
    double retx_rate;       /* retransmitted / data packets */
    double ooo_rate;        /* out-of-order arrivals / data packets received */
    double ecn_fraction;    /* CE-marked / data packets delivered */
    double mmr;             /* max/mean bytes over equal-cost leaf->spine
                               links: per leaf (its uplinks in every
                               plane), weighted by bytes; 0 if none */
    double jain;            /* over flow throughputs size/FCT (flow
                               workloads, victim excluded, a flow that did
                               not complete counts 0); 0 for collectives */
    double victim_fraction; /* victim throughput / its throughput alone at
                               line rate (its ideal FCT / its FCT); -1 none */
    /* incast (else negative): the slowest sender's time from its first
     * byte to staying within 20% of its fair share of the receiver's link
     * (windows of >= 1 base RTT), in base RTTs; host 0's leaf queue (max,
     * and the median sample: the queue that stands) and the drops after
     * that */
    double converge_rtts;
    int64_t queue_after_conv_bytes, drops_after_conv;
    int64_t queue_median_after_conv_bytes;
    double bdp_bytes;        /* host 0's link x base RTT */
    double conv_window_rtts; /* the windows judged, in base RTTs */
    uint64_t base_rtt_ps;    /* the engines' base RTT (R-CC-3) */
    uint64_t recovery_ps;    /* first fault -> throughput stays >= 90% of
                                what survives (metrics.md; docs/sim.md
                                "Recovery"); UINT64_MAX never; 0 without
                                faults */
    uint64_t p95_qbytes;     /* over samples of qbytes */
    uint64_t rx_data_pkts;   /* data packets delivered to the receivers */
    uint64_t rx_ce_pkts;     /* of which CE-marked */
    uint64_t placed_bytes;   /* payload placed at the receivers, once each */
    uint64_t fault_ps;       /* the first fault instant; 0 without faults */
    int n_samples;
    struct mroce_sim_exp_sample *samples; /* owned */
    /* wall clock: the only fields that differ between identical runs */
    double setup_s, wall_s, events_per_s, pkts_per_s, peak_rss_mb;
    /* How the run was split over ranks (cfg.ranks, cfg.comm; docs/sim.md
     * "Parallel runs"). Like the wall-clock fields these differ between
     * runs of one scenario on different numbers of ranks; nothing else
     * does. */
    int ranks;
    uint64_t *rank_events;  /* [ranks], owned: events each rank ran (LP
                               0's counted on rank 0); they sum to events */
    double *rank_sync_s;    /* [ranks], owned: wall time each rank spent
                               in the exchanges at window ends (waiting
                               for the others, transferring) */
    double sync_wait_s;     /* their mean */
    double *rank_run_s;     /* [ranks], owned: running its events */
    double *rank_import_s;  /* [ranks], owned: scheduling what came in (CPU
                               time) */
    double *rank_run_cpu_s; /* [ranks], owned: running its events, in
                               CPU time (the work without the machine's
                               other loads) */
    uint64_t cut_msgs;      /* frames and PFC signals across the cut */
    uint64_t cut_bytes;     /* their bytes in the messages */
    uint64_t windows;       /* synchronisation steps */
    uint64_t lookahead_ps;  /* the cut's; MROCE_SIM_NEVER with one rank */
    uint64_t window_ps;     /* min(lookahead, 1 us) */
    /* instructions the run loops retired (perf_event_open, sim/perfctr.h),
     * -1 where the machine has no counter */
    int64_t insns;
    /* the engines' own state at the end of the run, summed over the hosts
     * (mroce_ctx_state_bytes; unit sizes as one engine reports them) */
    struct mroce_state_bytes engine;
    /* the endpoints' counters at the end of the run: every connection's
     * (both ends) and every context's, summed (sim/exp_counters.h) */
    struct mroce_conn_counters conn_cnt;
    struct mroce_ctx_counters ctx_cnt;
    /* payload accounting (sim/vmem.h): the mode run, its granule, the
     * memory the buffers took, and what the checks counted */
    bool payload_free;
    uint64_t granule, buffer_bytes;
    struct mroce_sim_vmem_counters vmem;
};

/* Prints how `ranks` ranks split the scenario's fabric (sim/part.h: per
 * rank its hosts, switches and cut links sent on; the cut and its
 * lookahead) without running it. Returns 0, or MROCE_EINVAL with
 * res->error set (a bad configuration, or one that cannot be
 * partitioned: more ranks than leaf groups, no lookahead), ENOMEM. res
 * holds nothing else; release it with mroce_sim_exp_result_free. */
int mroce_sim_exp_partition(const struct mroce_sim_exp_cfg *cfg, int ranks,
                            FILE *f, struct mroce_sim_exp_result *res);

/* Runs the scenario. Returns 0 if it ran (flows may still have failed:
 * see flows_failed/flows_corrupt), or MROCE_EINVAL with res->error set
 * (bad configuration, unknown link), MROCE_ENOMEM. Release the result
 * with mroce_sim_exp_result_free either way. */
int mroce_sim_exp_run(const struct mroce_sim_exp_cfg *cfg,
                      struct mroce_sim_exp_result *res);
void mroce_sim_exp_result_free(struct mroce_sim_exp_result *res);

/* The configuration with defaults resolved (what a run reports). */
void mroce_sim_exp_cfg_resolve(const struct mroce_sim_exp_cfg *in,
                               struct mroce_sim_exp_cfg *out);

/* Nearest-rank percentile (p in 0..100) of n values; sorts v. 0 if n 0. */
double mroce_sim_exp_percentile(double *v, int n, double p);

const char *mroce_sim_exp_workload_str(int workload);

#endif
