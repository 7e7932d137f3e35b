/* The experiment runner's shared state (exp.h is the API): exp.c runs
 * flow workloads and owns setup, faults and the run loops; exp_coll.c
 * runs the collectives; exp_meter.c accounts every received data packet
 * and samples the fabric over time; exp_metrics.c turns that into the
 * end-of-run metrics. Internal: only exp*.c include this. */
#ifndef MROCE_SIM_EXP_INT_H
#define MROCE_SIM_EXP_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <mroce/mroce.h>

#include "coll/comm.h"
#include "io/ep.h"
#include "sim/comm.h"
#include "sim/exp.h"
#include "sim/part.h"
#include "sim/perfctr.h"
#include "sim/prun.h"
#include "sim/topo.h"
#include "sim/trace.h"
#include "sim/vmem.h"

#define EXP_US MROCE_SIM_PS_PER_US
/* The run loops hand control back this often in simulated time, to
 * report progress; cheap (one clock read). */
#define EXP_SLICE_PS (20 * EXP_US)
/* What the driver decides on the state of all ranks (the end of a
 * collective, the flows settled) takes effect at most this long after
 * the event that made it true: the longest window of a parallel run
 * (sim/prun.h), so that no rank has run past it. */
#define EXP_QUANTUM_PS EXP_US

struct exp;
struct mroce_coll_allreduce;
struct mroce_coll_alltoall;
struct mroce_coll_allgather;

/* Data arriving at an endpoint from one sender: a flow's destination
 * end, or a collective's connection from one peer. Reorder accounting
 * keeps the next sequence number expected per sequence space (MetaRoCE:
 * the connection's DSN; RoCEv2: the PSN of each receiving QP). */
struct exp_rx {
    int src;                 /* sending host */
    int flow;                /* flow index; -1 for a collective's */
    struct mroce_conn *conn; /* the receiving end */
    bool victim;             /* the incast victim flow */
    uint64_t placed;         /* payload bytes placed (convergence) */
    uint16_t n_seq;
    uint32_t *qpn; /* RoCEv2: the receiving QPNs */
    uint32_t *next;
    uint8_t *seen;
};

/* One host's engine, driven by the host through an mroce_ep_ops. */
struct exp_ep {
    struct exp *x;
    int host;
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    uint32_t cq_depth;
    int n_rx;
    struct exp_rx *rx; /* sorted by src */
    /* the record the last data packet matched and its source's IPv4
     * address: a receiver's packets come from few senders in runs, and
     * resolving the address and searching cost ~45 instructions */
    struct exp_rx *last_rx;
    uint32_t last_ip4;
};

/* A flow at run time; pub is its reported record. In a parallel run a
 * rank holds only the ends on its hosts (the others NULL); what an end
 * needs of the other (its connection parameters, where its buffer is)
 * arrives by exchange (exp_par.c). */
struct exp_flow {
    struct mroce_sim_exp_flow *pub;
    struct exp_ep *src, *dst;
    struct exp_rx *rx; /* its record at the destination */
    struct mroce_conn *sc, *rc;
    struct mroce_conn_params sp, rp; /* both ends' parameters */
    uint64_t raddr;                  /* the destination buffer */
    uint32_t rkey;
    struct mroce_sim_exp_lost lost; /* the source's, at the end */
    struct mroce_mr *smr, *dmr;
    uint8_t *sbuf, *dbuf;
    struct mroce_sim_vbuf *sv, *dv; /* sv: free mode's source */
    uint32_t n_msgs, n_wc, n_recv;
};

/* Receive-side counters and the time series (exp_meter.c). */
struct exp_meter {
    uint64_t rx_data, rx_ce, ooo;   /* data packets at the receivers */
    uint64_t rx_wire;               /* their bytes on the wire */
    uint64_t placed, victim_placed; /* payload bytes placed, once each */
    uint64_t interval;              /* current sample interval */
    uint64_t last_t, last_placed, last_victim; /* at the last sample */
    uint64_t ticks;                            /* sampler events run */
    uint64_t *last_rx; /* per host: its last byte placed */
    uint64_t now_ps;   /* of the packet the engines are taking */
    uint64_t t0;       /* the series starts */
    bool armed;        /* a sampler event is pending */
    struct mroce_sim_exp_sample *s;
    /* per sample: payload placed in it, all and the victim's; gbps
     * follows from these once all ranks' are summed */
    uint64_t *sb, *svb;
    int n, cap;
};

/* Incast convergence (exp_converge.c): per sender, its recent samples. */
#define EXP_CONV_RING 64
struct exp_conv_flow {
    uint64_t t[EXP_CONV_RING], b[EXP_CONV_RING]; /* sample time, placed */
    int head, n;
    uint64_t first_ps, done_ps; /* first and last byte placed */
    uint64_t bad_ps;            /* last window outside the band */
};

struct exp_conv {
    struct exp_conv_flow *f;  /* per receive record of host 0 */
    int n, n_senders;         /* records, and those not the victim */
    uint64_t rtt_ps;          /* the base RTT */
    uint64_t window_ps;       /* judged windows: >= one base RTT */
    double cap_bps;           /* host 0's link, payload bits */
    uint64_t *drop_t, *drops; /* cumulative drops at each sample */
    int n_drops, cap_drops;
};

/* The state of all ranks as the driver sees it, reduced at the end of
 * windows and slices (exp_par.c); in a one-rank run the rank's own. */
struct exp_glob {
    uint64_t settled;      /* flows settled */
    uint64_t settle_ps;    /* the last one's settle time */
    uint64_t busy;         /* events pending other than the sampler's */
    uint64_t in_flight;    /* packets alive */
    uint64_t events;       /* run so far */
    uint64_t over_budget;  /* rank 0 ran out of wall time */
    uint64_t coll_done;    /* ranks whose part of the collective ended */
    uint64_t coll_done_ps; /* the last of them */
    uint64_t coll_fail_ps; /* the first that failed, NEVER if none */
};

/* Totals over all ranks of what exp_fabric cannot read from rank 0's
 * objects (exp_par_merge). */
struct exp_merged {
    uint64_t events; /* the fabric's: LP 0's once, without the sampler */
    struct mroce_state_bytes engine;
    struct mroce_conn_counters conn_cnt; /* exp_counters.c */
    struct mroce_ctx_counters ctx_cnt;
    struct mroce_sim_vmem_counters vmem;
    uint64_t vmem_bytes;
    int64_t insns;      /* summed over the ranks; -1 if one has none */
    double peak_rss_mb; /* the largest rank's */
};

struct exp {
    struct mroce_sim_perfctr pc; /* instructions of the run loops */
    struct mroce_sim_exp_cfg c;
    /* the partition (one rank: rank 0 of 1, part_comm NULL) */
    const struct mroce_sim_comm *part_comm;
    int rank, ranks;
    struct mroce_sim_part *part;
    struct mroce_sim_prun *run;
    uint64_t now;          /* the driver's time (exp_par_run) */
    uint64_t settle_ps;    /* this rank's last flow settled then */
    uint64_t coll_fail_ps; /* this rank's collective failed then */
    struct exp_glob g;
    struct exp_merged mg; /* exp_par_merge: all ranks' totals */
    struct mroce_sim_exp_result *res;
    struct mroce_sim_vmem *vm; /* every receiving region's memory */
    struct mroce_sim_topo *t;
    struct mroce_sim_evlist *ev;
    struct mroce_sim_trace *trace;
    struct exp_ep *eps; /* one per host; ctx NULL where idle */
    struct exp_flow *fl;
    int n_flows, n_settled;
    uint32_t msg, n_msgs; /* the split of every flow */
    uint8_t *pattern;     /* the sources' bytes */
    uint16_t n_streams;
    struct exp_meter m;
    struct exp_conv conv; /* incast only */
    /* collective workloads */
    struct mroce_coll_comm *comm;
    struct mroce_coll_allreduce *ar;
    struct mroce_coll_alltoall *a2a;
    struct mroce_coll_allgather *ag;
    struct mroce_sim_vbuf **cbuf; /* [rank * 3 + MROCE_COLL_*] */
    struct mroce_coll_mem cmem;
    struct mroce_conn_params **cpeer; /* [me * n + peer] (exp_par.c) */
    bool coll_active;
    int coll_err;
    uint64_t coll_t0_ps, coll_done_ps;
};

/* exp.c */
double exp_wall(void);
int exp_fail(struct exp *x, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int exp_check(struct exp *x);
void exp_add_lost(struct mroce_sim_exp_lost *l,
                  const struct mroce_conn_counters *cc);

/* exp_counters.c: every connection's and context's counters, summed over
 * this rank's and then over the ranks, into x->mg. */
int exp_counters_merge(struct exp *x);
int exp_topo(struct exp *x);
int exp_faults(struct exp *x);
int exp_trace(struct exp *x);
/* A link by name, or by decimal id; -1 if none. */
int exp_link_id(struct exp *x, const char *name);
uint32_t exp_hdr_bytes(const struct exp *x, uint32_t n_msgs);
double exp_msg_hdr(const struct exp *x, uint64_t msg, bool imm, bool send);
uint32_t exp_base_rtt_ns(const struct exp *x);
int exp_ep_open(struct exp *x, struct exp_ep *e);
int exp_attach(struct exp *x, const struct mroce_ep_ops *ops);
/* At a slice boundary, on every rank: reduces x->g, reports progress
 * (rank 0), and sets *over when the run must stop here, past the soft
 * deadline and out of rank 0's wall budget (res->wall_cut then). */
int exp_slice_end(struct exp *x, double t0, double *last, bool *over);
void exp_fabric(struct exp *x);
/* This rank's engines' state (mroce_ctx_state_bytes) into res->engine. */
void exp_engine_bytes(struct exp *x);
size_t exp_ep_max_pkt(const void *ep);
int exp_ep_tx(void *ep, uint64_t now, uint8_t *buf, size_t cap,
              struct mroce_pkt_meta *meta);
uint64_t exp_ep_next_expiry(const void *ep);
void exp_ep_set_tx_planes(void *ep, uint64_t planes);

/* exp_par.c: the partition and its exchanges */
/* Whether host h is simulated by this rank. */
bool exp_local(const struct exp *x, int h);
/* Partitions the topology and hooks its cut (after exp_topo). */
int exp_par_start(struct exp *x);
void exp_par_stop(struct exp *x);
/* Runs all ranks to until_ps; with `flows` (or `coll`) stops early once
 * every flow settled (every rank's collective ended): returns 1 then,
 * with x->g updated; 0 at until (x->now = until); MROCE_E* on failure. */
int exp_par_run(struct exp *x, uint64_t until_ps, bool flows, bool coll);
/* Every rank's err (0 if none) becomes everybody's: a rank whose own
 * is 0 gets MROCE_EPROTO ("another rank failed") if one failed. */
int exp_par_agree(struct exp *x, int err);
/* Reduces x->g over the ranks (every rank calls it). */
int exp_par_glob(struct exp *x);
/* Connection parameters and destination buffers of the flows whose ends
 * are on different ranks. Every rank calls it, with its error so far
 * (0 if none), and gets every rank's: no rank waits for a failed one. */
int exp_par_flows(struct exp *x, int err);
/* The same for a collective's connections and buffers: remote ranks'
 * descriptors land in the communicator, their connection halves in
 * x->cpeer: exp_par_coll_peer gives peer's half of the connection
 * me - peer (me this rank's host, peer another's; NULL if none). */
int exp_par_coll(struct exp *x, int err);
const struct mroce_conn_params *exp_par_coll_peer(const struct exp *x, int me,
                                                  int peer);
void exp_par_coll_free(struct exp *x);
/* Sums (and maxima) of every rank's counters into rank 0's objects and
 * records, before the results are computed there. */
int exp_par_merge(struct exp *x);
/* Reduces n values over the ranks: the first n_sum summed, the rest by
 * maximum. */
int exp_par_reduce(struct exp *x, uint64_t *v, size_t n_sum, size_t n_max);

/* exp_coll.c */
bool exp_is_coll(int workload);
int exp_coll_setup(struct exp *x);
int exp_coll_run(struct exp *x);
void exp_coll_free(struct exp *x);

/* exp.c: the payload mode and its vmem for buffers of `bytes` in all,
 * placed in granules of `granule` (a power of two). */
int exp_vmem(struct exp *x, uint64_t bytes, uint64_t granule);
/* The largest power of two dividing v (v > 0). */
uint64_t exp_pow2_of(uint64_t v);

/* exp_meter.c */
int exp_rx_init(struct exp_rx *r, struct mroce_conn *conn);
void exp_rx_free(struct exp_rx *r);
/* Feeds the packet to e's engine and accounts it; returns the engine's. */
int exp_meter_rx(struct exp_ep *e, uint64_t now_ns,
                 const struct mroce_pkt_meta *meta, const uint8_t *buf,
                 size_t len);
int exp_meter_start(struct exp *x);
/* The vmem's placement callback: payload placed (each byte once). */
void exp_meter_placed(void *ud, struct mroce_sim_vbuf *b, uint64_t off,
                      uint64_t len);
/* Events pending in the run other than the sampler's. */
size_t exp_meter_busy(const struct exp *x);
/* Closes the series (every rank: its last sample is taken if any rank
 * placed bytes after the one before) and hands it to the result. */
int exp_meter_finish(struct exp *x);
/* Rank 0, after exp_par_merge: the rates of the samples and the
 * receivers' counts in the result. */
void exp_meter_result(struct exp *x);

/* exp_metrics.c */
int exp_metrics(struct exp *x);

/* exp_converge.c */
int exp_conv_start(struct exp *x);
void exp_conv_placed(struct exp *x, struct exp_rx *r, uint32_t bytes,
                     uint64_t now_ps);
void exp_conv_tick(struct exp *x, uint64_t t_ps);
void exp_conv_finish(struct exp *x);

#endif
