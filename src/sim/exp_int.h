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
#include "sim/exp.h"
#include "sim/perfctr.h"
#include "sim/topo.h"
#include "sim/trace.h"
#include "sim/vmem.h"

#define EXP_US MROCE_SIM_PS_PER_US
/* The run loops hand control back this often in simulated time, to
 * report progress; cheap (one clock read). */
#define EXP_SLICE_PS (20 * EXP_US)

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
};

/* A flow at run time; pub is its reported record. */
struct exp_flow {
    struct mroce_sim_exp_flow *pub;
    struct exp_ep *src, *dst;
    struct exp_rx *rx; /* its record at the destination */
    struct mroce_conn *sc, *rc;
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
    bool armed;        /* a sampler event is pending */
    struct mroce_sim_exp_sample *s;
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

struct exp {
    struct mroce_sim_perfctr pc; /* instructions of the run loops */
    struct mroce_sim_exp_cfg c;
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
void exp_progress(struct exp *x, double t0, double *last);
/* True if the run must stop here: past the soft deadline and out of its
 * wall budget (sets res->wall_cut). */
bool exp_over_budget(struct exp *x, double t0);
void exp_fabric(struct exp *x);
size_t exp_ep_max_pkt(const void *ep);
int exp_ep_tx(void *ep, uint64_t now, uint8_t *buf, size_t cap,
              struct mroce_pkt_meta *meta);
uint64_t exp_ep_next_expiry(const void *ep);
void exp_ep_set_tx_planes(void *ep, uint64_t planes);

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
/* Closes the series and hands it to the result. */
void exp_meter_finish(struct exp *x);

/* exp_metrics.c */
int exp_metrics(struct exp *x);

/* exp_converge.c */
int exp_conv_start(struct exp *x);
void exp_conv_placed(struct exp *x, struct exp_rx *r, uint32_t bytes,
                     uint64_t now_ps);
void exp_conv_tick(struct exp *x, uint64_t t_ps);
void exp_conv_finish(struct exp *x);

#endif
