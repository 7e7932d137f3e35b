/* Experiments: the collective workloads (all-reduce, all-to-all,
 * all-gather of src/coll) over the simulated fabric; see exp.h and
 * docs/sim.md "Collectives". */
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce.h>

#include "coll/allgather.h"
#include "coll/allreduce.h"
#include "coll/alltoall.h"
#include "sim/defaults.h"
#include "sim/exp_int.h"
#include "sim/host.h"
#include "sim/topo.h"

bool exp_is_coll(int workload)
{
    return workload == MROCE_SIM_EXP_ALLREDUCE ||
           workload == MROCE_SIM_EXP_ALLTOALL ||
           workload == MROCE_SIM_EXP_ALLGATHER;
}

/* ---- A communicator on the simulator's hosts ---- */

/* mroce_coll_comm_create names its ranks 10.0.x.y and opens contexts with
 * default attributes, but the fabric routes on the topology's host
 * addresses and the engines should know the line rate. So this builds
 * the same communicator (comm.h's public struct, allocated the way
 * mroce_coll_comm_destroy frees it) with rank r's context opened as host
 * r's engine (exp_ep_open), connections as comm.c makes them. */
#define EXP_COLL_QD 128
#define EXP_COLL_QD_MIN 16

/* A rank's three buffers are vmem regions (sim/vmem.h): its sbuf a
 * source named by the rank, rbuf and scratch destinations; registered
 * through their hooks in both payload modes. */
static int exp_rank_bufs(struct exp *x, int r)
{
    struct mroce_coll_comm *c = x->comm;
    struct mroce_coll_rank *k = &c->rank[r];
    unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                   MROCE_ACCESS_REMOTE_READ;
    struct mroce_sim_vbuf **v = &x->cbuf[(size_t)r * MROCE_COLL_N_BUFS];
    struct mroce_mr **mr[MROCE_COLL_N_BUFS] = {&k->smr, &k->rmr, &k->xmr};
    uint8_t **p[MROCE_COLL_N_BUFS] = {&k->sbuf, &k->rbuf, &k->scratch};
    k->conn = calloc((size_t)c->n, sizeof(*k->conn));
    if (!k->conn)
        return MROCE_ENOMEM;
    for (int b = 0; b < MROCE_COLL_N_BUFS; b++) {
        v[b] = mroce_sim_vbuf_new(x->vm, c->buf_bytes, b == MROCE_COLL_SBUF,
                                  (uint64_t)r, r, NULL);
        if (!v[b])
            return MROCE_ENOMEM;
        *p[b] = mroce_sim_vbuf_addr(v[b]);
        int err = mroce_sim_vbuf_reg(v[b], k->pd, acc, mr[b]);
        if (err)
            return err;
    }
    return 0;
}

/* Host r's engine and buffers if this rank simulates it; else the
 * communicator's rank r is remote (its buffers' descriptors come with
 * exp_par_coll). */
static int exp_rank_open(struct exp *x, int r)
{
    struct mroce_coll_comm *c = x->comm;
    struct mroce_coll_rank *k = &c->rank[r];
    struct exp_ep *e = &x->eps[r];
    e->x = x;
    e->host = r;
    mroce_sim_topo_host_addr(x->t, r, &k->addr);
    if (!exp_local(x, r)) {
        k->remote = 1;
        return 0;
    }
    e->cq_depth = (uint32_t)(c->n - 1) * c->n_channels * 2 * EXP_COLL_QD + 64;
    int err = exp_ep_open(x, e);
    if (err)
        return err;
    k->ctx = e->ctx;
    k->pd = e->pd;
    k->cq = e->cq;
    err = exp_rank_bufs(x, r);
    return err ? exp_fail(x, err, "rank %d buffers: %s", r, mroce_strerror(err))
               : 0;
}

/* WRs per stream as the collectives' queues: the RoCEv2 engine gives
 * each of a stream's k QPs the depth asked (k x that per stream, and as
 * many WQEs allocated: 1.3 GB for the 64-host all-to-all with 8 QPs), so
 * it is asked for 1/k of it per QP, the same per stream as MetaRoCE. */
static uint32_t exp_coll_qd(const struct exp *x)
{
    uint32_t k =
        x->c.transport == MROCE_TRANSPORT_ROCEV2 ? (uint32_t)x->c.qps : 1;
    uint32_t d = (EXP_COLL_QD + k - 1) / k;
    return d < EXP_COLL_QD_MIN ? EXP_COLL_QD_MIN : d;
}

/* The ends of the connection a - b on this rank's hosts. */
static int exp_pair(struct exp *x, int a, int b)
{
    struct mroce_coll_rank *rk = x->comm->rank;
    int ends[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        struct mroce_coll_rank *k = &rk[ends[i]];
        if (k->remote)
            continue;
        struct mroce_conn_attr at = {.send_cq = k->cq,
                                     .recv_cq = k->cq,
                                     .n_streams = x->comm->n_channels,
                                     .n_paths = (uint16_t)x->c.paths,
                                     .sq_depth = exp_coll_qd(x),
                                     .rq_depth = exp_coll_qd(x),
                                     .qps_per_stream = (uint16_t)x->c.qps,
                                     .rocev2_timeout = x->c.rocev2_timeout};
        int err = mroce_conn_create(k->pd, &at, &k->conn[ends[1 - i]]);
        if (err)
            return err;
    }
    return 0;
}

/* me's end of me - peer, connected to the peer's half: from its
 * connection, or from the exchange when another rank holds it. */
static int exp_pair_connect(struct exp *x, int me, int peer)
{
    struct mroce_coll_rank *rk = x->comm->rank;
    if (rk[me].remote)
        return 0;
    struct mroce_conn_params p;
    const struct mroce_conn_params *pp = &p;
    if (!rk[peer].remote)
        mroce_conn_get_params(rk[peer].conn[me], &p);
    else if (!(pp = exp_par_coll_peer(x, me, peer)))
        return MROCE_EPROTO; /* the exchange brought none */
    return mroce_conn_connect(rk[me].conn[peer], pp);
}

/* S as the collective uses it: all-reduce floats a multiple of N;
 * all-to-all and all-gather blocks (S/N: per peer, per rank's
 * contribution) a multiple of the channels. */
static void exp_coll_sizes(struct exp *x)
{
    uint64_t n = (uint64_t)x->c.hosts, ch = (uint64_t)x->c.channels;
    uint64_t s;
    if (x->c.workload == MROCE_SIM_EXP_ALLREDUCE) {
        uint64_t count = x->c.size / sizeof(float) / n * n;
        s = (count ? count : n) * sizeof(float);
    } else {
        uint64_t block = x->c.size / n / ch * ch;
        s = (block ? block : ch) * n;
    }
    x->res->coll_bytes = s;
}

/* Every rank's receive records, one per peer in rank order (sorted by
 * sender, as exp_meter_rx looks them up). */
static int exp_coll_rx_records(struct exp *x)
{
    int n = x->c.hosts;
    for (int r = 0; r < n; r++) {
        struct exp_ep *e = &x->eps[r];
        if (!exp_local(x, r))
            continue;
        e->rx = calloc((size_t)n, sizeof(*e->rx));
        if (!e->rx)
            return exp_fail(x, MROCE_ENOMEM, "out of memory");
        for (int q = 0; q < n; q++) {
            if (q == r || !x->comm->rank[r].conn[q])
                continue;
            struct exp_rx *rx = &e->rx[e->n_rx++];
            rx->src = q;
            rx->flow = -1;
            if (exp_rx_init(rx, x->comm->rank[r].conn[q]))
                return exp_fail(x, MROCE_ENOMEM, "out of memory");
        }
    }
    return 0;
}

/* The rings (all-reduce, all-gather) talk to their neighbours only, as
 * NCCL connects a ring; a full mesh would give every RoCEv2 device
 * 63 x k idle QPs to scan for every packet. The all-to-all needs all. */
static bool exp_coll_needs(const struct exp *x, int a, int b)
{
    int n = x->c.hosts;
    if (x->c.workload == MROCE_SIM_EXP_ALLTOALL)
        return true;
    return b == a + 1 || (a == 0 && b == n - 1);
}

/* Connections are set up by ring distance, the neighbours first and the
 * farthest peers last, as a communicator connects its rings: each
 * engine's round-robin over its connections (newest first) then starts at
 * a different peer, and every step of it is a permutation. Set up in peer
 * order, every host sent its first packets to the same host: a
 * synchronized incast at the start of each all-to-all. */
/* In that order: every connection's ends made (connect false), then,
 * once their halves crossed between ranks, connected (connect true). */
static int exp_connect_all(struct exp *x, bool connect)
{
    int n = x->c.hosts;
    for (int d = 1; d <= n / 2; d++)
        for (int a = 0; a < n; a++) {
            int b = (a + d) % n;
            if (2 * d == n && a >= d)
                continue; /* the pair (b, a) is the same one */
            if (!exp_coll_needs(x, a < b ? a : b, a < b ? b : a))
                continue;
            int err = connect ? exp_pair_connect(x, a, b) : exp_pair(x, a, b);
            if (!err && connect)
                err = exp_pair_connect(x, b, a);
            if (err)
                return exp_fail(x, err, "connection %d - %d: %s", a, b,
                                mroce_strerror(err));
        }
    return 0;
}

/* The collectives' local operations, on the ranks' regions. */
static void exp_coll_copy(void *ud, int rank, int dst_buf, size_t dst_off,
                          int src_buf, size_t src_off, size_t len)
{
    struct exp *x = ud;
    struct mroce_sim_vbuf **v = &x->cbuf[(size_t)rank * MROCE_COLL_N_BUFS];
    mroce_sim_vbuf_copy(v[dst_buf], dst_off, v[src_buf], src_off, len);
}

static void exp_coll_sum(void *ud, int rank, size_t off, size_t len)
{
    struct exp *x = ud;
    struct mroce_sim_vbuf **v = &x->cbuf[(size_t)rank * MROCE_COLL_N_BUFS];
    mroce_sim_vbuf_add_f32(v[MROCE_COLL_RBUF], v[MROCE_COLL_SCRATCH], off, len);
}

static int exp_comm(struct exp *x)
{
    int n = x->c.hosts;
    x->comm = calloc(1, sizeof(*x->comm));
    x->eps = calloc((size_t)n, sizeof(*x->eps));
    if (!x->comm || !x->eps ||
        !(x->comm->rank = calloc((size_t)n, sizeof(*x->comm->rank))))
        return exp_par_coll(x, exp_fail(x, MROCE_ENOMEM, "out of memory"));
    x->comm->n = n;
    x->comm->n_channels = (uint16_t)x->c.channels;
    x->comm->buf_bytes = x->res->coll_bytes;
    x->cbuf = calloc((size_t)n * MROCE_COLL_N_BUFS, sizeof(*x->cbuf));
    if (!x->cbuf)
        return exp_par_coll(x, exp_fail(x, MROCE_ENOMEM, "out of memory"));
    x->cmem = (struct mroce_coll_mem){exp_coll_copy, exp_coll_sum, x};
    x->comm->mem = &x->cmem;
    int err = 0;
    for (int r = 0; !err && r < n; r++)
        err = exp_rank_open(x, r);
    if (!err)
        err = exp_connect_all(x, false);
    err = exp_par_coll(x, err); /* every rank, failed or not */
    if (!err)
        err = exp_connect_all(x, true);
    return err ? err : exp_coll_rx_records(x);
}

/* ---- Driving ---- */

/* Every rank (r < 0), or rank r alone. */
static int exp_coll_progress(struct exp *x, int r)
{
    if (x->ar)
        return r < 0 ? mroce_coll_allreduce_progress(x->ar)
                     : mroce_coll_allreduce_progress_rank(x->ar, r);
    if (x->a2a)
        return r < 0 ? mroce_coll_alltoall_progress(x->a2a)
                     : mroce_coll_alltoall_progress_rank(x->a2a, r);
    return r < 0 ? mroce_coll_allgather_progress(x->ag)
                 : mroce_coll_allgather_progress_rank(x->ag, r);
}

/* Called right after host r's engine took a packet or a timer (r < 0:
 * the periodic sweep, every local rank): that engine is the only one
 * whose completions can have changed, so only its rank is polled
 * (polling all 64 was 28% of a 64-host all-reduce's time, perf); what it
 * posts is on that host, which pulls it straight after the callback.
 * When this partition's part of the collective ends, the time is noted;
 * the run ends once every partition's has (exp_par_run), one quantum
 * later (exp_coll_loop). */
static void exp_coll_step(struct exp *x, int r)
{
    if (!x->coll_active)
        return;
    int rc = exp_coll_progress(x, r);
    if (rc == 0)
        return;
    x->coll_active = false;
    x->coll_err = rc < 0 ? rc : 0;
    x->coll_done_ps = mroce_sim_ev_now(x->ev);
    if (rc < 0)
        x->coll_fail_ps = x->coll_done_ps;
}

static int exp_coll_rx(void *ep, uint64_t now,
                       const struct mroce_pkt_meta *meta, const uint8_t *buf,
                       size_t len)
{
    struct exp_ep *e = ep;
    int rc = exp_meter_rx(e, now, meta, buf, len);
    exp_coll_step(e->x, e->host);
    return rc;
}

static void exp_coll_on_expiry(void *ep, uint64_t now)
{
    struct exp_ep *e = ep;
    mroce_ctx_on_expiry(e->ctx, now);
    exp_coll_step(e->x, e->host);
}

static const struct mroce_ep_ops exp_coll_ops = {
    .max_pkt = exp_ep_max_pkt,
    .tx = exp_ep_tx,
    .rx = exp_coll_rx,
    .next_expiry = exp_ep_next_expiry,
    .on_expiry = exp_coll_on_expiry,
    .set_tx_planes = exp_ep_set_tx_planes,
};

static void exp_kick_all(struct exp *x)
{
    for (int h = 0; h < x->c.hosts; h++)
        if (exp_local(x, h))
            mroce_sim_host_kick(mroce_sim_topo_host(x->t, h));
}

static int exp_allreduce_start(struct exp *x)
{
    struct mroce_coll_comm *cm = x->comm;
    uint64_t s = x->res->coll_bytes, n = (uint64_t)cm->n;
    size_t chunk = s / sizeof(float) / n;
    struct mroce_coll_allreduce_args a = {
        .count = s / sizeof(float),
        .slice_count = (chunk + cm->n_channels - 1) / cm->n_channels,
        .flavour = x->c.flavour == MROCE_SIM_EXP_FLAVOUR_SEND
                       ? MROCE_COLL_SEND
                       : MROCE_COLL_WRITE_IMM};
    return mroce_coll_allreduce_start(cm, &a, &x->ar);
}

/* Every iteration starts a placement epoch with rbuf and scratch
 * cleared: a stale block of the previous iteration must not pass the
 * check. (Fresh regions are zero already: nothing to clear the first
 * time.) */
static void exp_coll_epoch(struct exp *x)
{
    bool clear = x->res->iters_done > 0;
    for (size_t i = 0; i < (size_t)x->comm->n * MROCE_COLL_N_BUFS; i++)
        if (x->cbuf[i]) /* this rank's hosts' */
            mroce_sim_vbuf_epoch(x->cbuf[i], clear && i % MROCE_COLL_N_BUFS !=
                                                          MROCE_COLL_SBUF);
}

static int exp_alltoall_start(struct exp *x)
{
    struct mroce_coll_comm *cm = x->comm;
    struct mroce_coll_alltoall_args a = {
        .block = x->res->coll_bytes / (uint64_t)cm->n,
        .schedule =
            x->c.shifted ? MROCE_COLL_A2A_SHIFTED : MROCE_COLL_A2A_CONCURRENT};
    return mroce_coll_alltoall_start(cm, &a, &x->a2a);
}

/* One slice per channel, as the all-reduce cuts its chunks. */
static int exp_allgather_start(struct exp *x)
{
    struct mroce_coll_comm *cm = x->comm;
    size_t bytes = x->res->coll_bytes / (uint64_t)cm->n;
    struct mroce_coll_allgather_args a = {
        .bytes = bytes,
        .slice_bytes = (bytes + cm->n_channels - 1) / cm->n_channels};
    return mroce_coll_allgather_start(cm, &a, &x->ag);
}

static int exp_coll_start(struct exp *x)
{
    exp_coll_epoch(x);
    int err = x->c.workload == MROCE_SIM_EXP_ALLREDUCE ? exp_allreduce_start(x)
              : x->c.workload == MROCE_SIM_EXP_ALLTOALL
                  ? exp_alltoall_start(x)
                  : exp_allgather_start(x);
    if (err)
        return exp_fail(x, err, "collective start: %s", mroce_strerror(err));
    x->coll_active = true;
    x->coll_err = 0;
    x->coll_done_ps = 0;
    x->coll_fail_ps = MROCE_SIM_NEVER;
    x->g.coll_done = 0;
    x->g.coll_fail_ps = MROCE_SIM_NEVER;
    x->coll_t0_ps = x->now;
    exp_kick_all(x);
    return 0;
}

/* Until the collective is done (on every rank; or failed on one) or the
 * deadline; every slice, a sweep (progress, kick every host) in case a
 * completion appeared outside rx/timer callbacks. The end is acted on
 * one quantum after it happened (EXP_QUANTUM_PS): the next iteration
 * starts and the counters are read there, a boundary no rank has run
 * past. */
static int exp_coll_loop(struct exp *x)
{
    double t0 = exp_wall(), last = t0;
    uint64_t dl = x->c.deadline_ps;
    mroce_sim_perfctr_start(&x->pc);
    int err = 0;
    bool over = false;
    while (!err && !over && x->now < dl) {
        uint64_t until = x->now + EXP_SLICE_PS;
        int rc = exp_par_run(x, until < dl ? until : dl, false, true);
        if (rc == 1) {
            uint64_t end = x->g.coll_fail_ps < MROCE_SIM_NEVER
                               ? x->g.coll_fail_ps
                               : x->g.coll_done_ps;
            rc = exp_par_run(x, end + EXP_QUANTUM_PS, false, false);
            if (rc == 0)
                break;
        }
        if (rc < 0)
            err = exp_fail(x, rc, "parallel run: %s", mroce_strerror(rc));
        if (err)
            break;
        exp_coll_step(x, -1);
        exp_kick_all(x);
        err = exp_slice_end(x, t0, &last, &over);
    }
    mroce_sim_perfctr_stop(&x->pc);
    x->res->wall_s += exp_wall() - t0;
    return err;
}

/* What granule g of a block should hold in payload-free mode: the sum
 * of every rank's labels (all-reduce, precomputed in sum), or one rank's
 * source labels from granule g0 on (all-to-all, all-gather). */
struct exp_want {
    struct exp *x;
    uint64_t id, g0;
    const uint64_t *sum;
};

static uint64_t exp_want_label(void *ud, uint64_t g)
{
    const struct exp_want *w = ud;
    if (w->sum)
        return w->sum[g];
    return mroce_sim_vbuf_label(w->x->vm, w->id, w->g0 + g);
}

/* The all-reduce's result, granule by granule: every rank's labels. */
static uint64_t *exp_label_sums(struct exp *x, uint64_t n_gran)
{
    uint64_t *sum = calloc(n_gran ? n_gran : 1, sizeof(*sum));
    for (uint64_t g = 0; sum && g < n_gran; g++)
        for (int r = 0; r < x->comm->n; r++)
            sum[g] += mroce_sim_vbuf_label(x->vm, (uint64_t)r, g);
    return sum;
}

/* Payload-free: every rank's rbuf by labels, block by block. */
static long exp_coll_check_labels(struct exp *x)
{
    uint64_t n = (uint64_t)x->comm->n, s = x->res->coll_bytes;
    uint64_t gsz = mroce_sim_vmem_granule(x->vm), block = s / n;
    uint64_t *sum = x->ar ? exp_label_sums(x, (s + gsz - 1) / gsz) : NULL;
    if (x->ar && !sum)
        return 0; /* out of memory: cannot say it is right */
    long bad = -1;
    for (uint64_t q = 0; q < n && bad < 0; q++) {
        const struct mroce_sim_vbuf *rb =
            x->cbuf[q * MROCE_COLL_N_BUFS + MROCE_COLL_RBUF];
        if (!rb)
            continue; /* another rank's host */
        if (sum) {
            struct exp_want w = {x, 0, 0, sum};
            bad =
                (long)mroce_sim_vbuf_check_labels(rb, 0, s, exp_want_label, &w);
            continue;
        }
        for (uint64_t r = 0; r < n && bad < 0; r++) {
            struct exp_want w = {x, r, x->a2a ? q * block / gsz : 0, NULL};
            bad = (long)mroce_sim_vbuf_check_labels(rb, r * block, block,
                                                    exp_want_label, &w);
        }
    }
    free(sum);
    return bad;
}

/* Returns -1 if the result is right, else the first bad offset: no
 * granule placed twice in any buffer, and the content right (bytes or
 * labels; a missing placement leaves stale or zero content). */
static long exp_coll_check(struct exp *x)
{
    struct mroce_coll_comm *cm = x->comm;
    uint64_t s = x->res->coll_bytes, n = (uint64_t)cm->n;
    for (size_t i = 0; i < n * MROCE_COLL_N_BUFS; i++) {
        if (!x->cbuf[i])
            continue; /* another rank's host */
        int64_t bad = mroce_sim_vbuf_check_count(x->cbuf[i], 0, s, 0, 1);
        if (bad >= 0)
            return (long)bad;
    }
    if (mroce_sim_vmem_mode(x->vm) == MROCE_SIM_VMEM_FREE)
        return exp_coll_check_labels(x);
    if (x->ar)
        return mroce_coll_allreduce_check(cm, s / sizeof(float), NULL);
    if (x->a2a)
        return mroce_coll_alltoall_check(cm, s / n, NULL);
    return mroce_coll_allgather_check(cm, s / n, NULL);
}

static void exp_coll_release(struct exp *x)
{
    mroce_coll_allreduce_free(x->ar);
    mroce_coll_alltoall_free(x->a2a);
    mroce_coll_allgather_free(x->ag);
    x->ar = NULL;
    x->a2a = NULL;
    x->ag = NULL;
}

/* Frees the collective, verifies its result; returns its JCT, 0 if it
 * failed. */
static uint64_t exp_coll_finish(struct exp *x, int *err)
{
    bool ok = x->g.coll_done == (uint64_t)x->ranks &&
              x->g.coll_fail_ps == MROCE_SIM_NEVER;
    uint64_t bad = ok && exp_coll_check(x) >= 0; /* this rank's hosts */
    *err = exp_par_reduce(x, &bad, 0, 1);
    exp_coll_release(x);
    x->coll_active = false;
    x->res->flows_failed += !ok;
    x->res->flows_corrupt += ok && bad;
    if (!ok || bad || *err)
        return 0;
    x->res->flows_completed++;
    uint64_t jct = x->g.coll_done_ps - x->coll_t0_ps;
    return jct ? jct : 1;
}

/* ---- Results ---- */

/* Summed over this rank's connections, then over the ranks. */
static int exp_coll_counters(struct exp *x)
{
    struct mroce_sim_exp_result *r = x->res;
    struct mroce_sim_exp_lost l = {0};
    uint64_t v[8] = {0};
    for (int a = 0; a < x->comm->n; a++)
        for (int b = 0; b < x->comm->n; b++) {
            struct mroce_conn_counters cc;
            if (!x->comm->rank[a].conn || !x->comm->rank[a].conn[b])
                continue;
            mroce_conn_get_counters(x->comm->rank[a].conn[b], &cc);
            v[0] += cc.tx_data_pkts;
            v[1] += cc.retx_pkts;
            v[2] += cc.rto_events;
            exp_add_lost(&l, &cc);
        }
    v[3] = l.sack, v[4] = l.rack, v[5] = l.pto, v[6] = l.rto, v[7] = l.rnr;
    int err = exp_par_reduce(x, v, 8, 0);
    r->data_pkts = v[0];
    r->retx_pkts = v[1];
    r->timeouts = v[2];
    r->lost_by = (struct mroce_sim_exp_lost){v[3], v[4], v[5], v[6], v[7]};
    return err;
}

/* alpha: one MTU packet's ideal from a rank to its ring successor minus
 * its own serialization, i.e. the one-way base latency with store-and-
 * forward (the simulator has no endpoint overhead). The ring's chunks
 * cross every ring link in turn, so the rings (all-reduce, all-gather)
 * take the mean over the ring's links; in the all-to-all the farthest
 * pair bounds, so the maximum (across leaves when there are several). */
static uint64_t exp_coll_alpha(struct exp *x, uint32_t hdr, bool mean)
{
    uint64_t wire = (uint64_t)x->c.mtu + hdr + MROCE_SIM_WIRE_OVERHEAD_V4;
    uint64_t ser = wire * 8 * MROCE_SIM_PS_PER_S / x->c.link_bps;
    uint64_t sum = 0, max = 0;
    for (int h = 0; h < x->c.hosts; h++) {
        uint64_t t = mroce_sim_topo_ideal_fct_ps(x->t, x->c.mtu, x->c.mtu, hdr,
                                                 h, (h + 1) % x->c.hosts);
        t = t > ser ? t - ser : 0;
        sum += t;
        max = t > max ? t : max;
    }
    return mean ? sum / (uint64_t)x->c.hosts : max;
}

/* A ring of `steps` steps over C channels: each channel's chain of steps
 * (alpha + its chunk S/(N C) at line rate each) or the NIC's bytes,
 * whichever is longer. With one channel this is metrics.md's formula
 * exactly (steps x alpha + factor x S/bw); with C > 1 the channels' alpha
 * terms overlap each other's transfers, and the bound says so. */
static double exp_ring_ideal_t(double n, double c, double steps, double s,
                               double bw, double alpha, double factor)
{
    double chain = steps * (alpha + s / (n * c) / bw);
    double bytes = factor * s / bw;
    return chain > bytes ? chain : bytes;
}

/* metrics.md: the ideal JCT in seconds and the busbw factor. */
static double exp_coll_ideal_t(struct exp *x, double bw, double *factor)
{
    const struct mroce_sim_exp_cfg *c = &x->c;
    double n = c->hosts, s = (double)x->res->coll_bytes;
    double alpha = (double)x->res->alpha_ps / MROCE_SIM_PS_PER_S;
    double ch = c->channels > 0 ? c->channels : 1;
    if (c->workload == MROCE_SIM_EXP_ALLREDUCE) {
        *factor = 2 * (n - 1) / n;
        return exp_ring_ideal_t(n, ch, 2 * (n - 1), s, bw, alpha, *factor);
    }
    *factor = (n - 1) / n;
    if (c->workload == MROCE_SIM_EXP_ALLGATHER)
        return exp_ring_ideal_t(n, ch, n - 1, s, bw, alpha, *factor);
    double host = *factor * s / bw + alpha;
    double o = (double)c->hosts_per_leaf / c->spines;
    double fabric = o * (n - c->hosts_per_leaf) / n * s / bw;
    return host > fabric ? host : fabric;
}

/* The size of the messages the collective posts: the rings' slice, the
 * all-to-all's piece of a block per channel. */
static uint64_t exp_coll_msg_bytes(const struct exp *x)
{
    uint64_t n = (uint64_t)x->c.hosts, ch = (uint64_t)x->c.channels;
    uint64_t s = x->res->coll_bytes;
    if (x->c.workload == MROCE_SIM_EXP_ALLREDUCE) {
        uint64_t chunk = s / sizeof(float) / n;
        return (chunk + ch - 1) / ch * sizeof(float);
    }
    if (x->c.workload == MROCE_SIM_EXP_ALLTOALL)
        return s / n / ch;
    return (s / n + ch - 1) / ch;
}

static void exp_coll_ideal(struct exp *x)
{
    struct mroce_sim_exp_result *r = x->res;
    const struct mroce_sim_exp_cfg *c = &x->c;
    /* the frames the collective sends: messages of msg bytes, each a
     * WRITE_IMM (or a SEND), their headers from the wire tables */
    uint64_t msg = exp_coll_msg_bytes(x);
    bool send = c->workload == MROCE_SIM_EXP_ALLREDUCE &&
                c->flavour == MROCE_SIM_EXP_FLAVOUR_SEND;
    double mh = exp_msg_hdr(x, msg, !send, send);
    double pkts = (double)((msg + c->mtu - 1) / c->mtu);
    uint32_t hdr = (uint32_t)(mh + 0.5);
    r->hdr_bytes = mh;
    r->eta =
        (double)msg / ((double)msg + pkts * (mh + MROCE_SIM_WIRE_OVERHEAD_V4));
    r->line_gbps = (double)c->link_bps * c->planes / 1e9;
    r->alpha_ps = exp_coll_alpha(x, hdr, c->workload != MROCE_SIM_EXP_ALLTOALL);
    double bw = r->eta * r->line_gbps * 1e9 / 8; /* payload bytes/s */
    double factor, s = (double)r->coll_bytes;
    double t = exp_coll_ideal_t(x, bw, &factor);
    r->ideal_ps = (uint64_t)(t * MROCE_SIM_PS_PER_S + 0.5);
    r->ideal_busbw_gbps = factor * s * 8 / t / 1e9;
    if (!r->jct_ps)
        return;
    double jct = (double)r->jct_ps / MROCE_SIM_PS_PER_S;
    r->algbw_gbps = s * 8 / jct / 1e9;
    r->busbw_gbps = factor * r->algbw_gbps;
    r->fraction_of_ideal = r->busbw_gbps / (r->eta * r->line_gbps);
}

int exp_coll_run(struct exp *x)
{
    struct mroce_sim_exp_result *r = x->res;
    uint64_t sum = 0;
    x->n_flows = x->c.iters;
    int err = exp_meter_start(x);
    if (err)
        return err;
    for (int i = 0; i < x->c.iters; i++) {
        err = exp_par_agree(x, exp_coll_start(x));
        if (!err)
            err = exp_coll_loop(x);
        uint64_t jct = err ? 0 : exp_coll_finish(x, &err);
        if (!jct)
            break;
        sum += jct;
        r->jct_max_ps = jct > r->jct_max_ps ? jct : r->jct_max_ps;
        x->n_settled = ++r->iters_done;
    }
    if (err)
        return err;
    r->end_ps = x->now;
    r->coll_verified = r->iters_done == x->c.iters;
    r->jct_ps = r->iters_done ? sum / (uint64_t)r->iters_done : 0;
    err = exp_meter_finish(x);
    if (!err)
        err = exp_par_merge(x);
    if (!err)
        err = exp_coll_counters(x);
    exp_conv_finish(x); /* not an incast: the values say none */
    if (err || x->rank != 0)
        return err;
    exp_meter_result(x);
    exp_fabric(x);
    exp_coll_ideal(x);
    return exp_metrics(x);
}

/* Real mode: the collectives' own patterns; payload-free sources are
 * their labels already. */
static void exp_coll_fill(struct exp *x)
{
    uint64_t s = x->res->coll_bytes, n = (uint64_t)x->c.hosts;
    if (mroce_sim_vmem_mode(x->vm) == MROCE_SIM_VMEM_FREE)
        return;
    if (x->c.workload == MROCE_SIM_EXP_ALLREDUCE)
        mroce_coll_allreduce_fill(x->comm, s / sizeof(float));
    else if (x->c.workload == MROCE_SIM_EXP_ALLTOALL)
        mroce_coll_alltoall_fill(x->comm, s / n);
    else
        mroce_coll_allgather_fill(x->comm, s / n);
}

/* Every packet and every collective message starts on a multiple of
 * this: the MTU, the ring's chunk and slice, the all-to-all's block and
 * piece, as powers of two. */
static uint64_t exp_coll_granule(const struct exp *x)
{
    uint64_t n = (uint64_t)x->c.hosts, ch = (uint64_t)x->c.channels;
    uint64_t s = x->res->coll_bytes, g = exp_pow2_of(x->c.mtu);
    uint64_t v[2];
    if (x->c.workload == MROCE_SIM_EXP_ALLREDUCE) {
        uint64_t chunk = s / sizeof(float) / n;
        v[0] = chunk * sizeof(float);
        v[1] = (chunk + ch - 1) / ch * sizeof(float);
    } else if (x->c.workload == MROCE_SIM_EXP_ALLTOALL) {
        v[0] = s / n;
        v[1] = s / n / ch;
    } else {
        v[0] = s / n;
        v[1] = (s / n + ch - 1) / ch;
    }
    for (int i = 0; i < 2; i++)
        if (v[i] && exp_pow2_of(v[i]) < g)
            g = exp_pow2_of(v[i]);
    return g;
}

int exp_coll_setup(struct exp *x)
{
    int err = exp_check(x);
    if (err)
        return err;
    x->n_msgs = 2; /* header sizes as for a multi-message flow */
    x->n_streams = 1;
    exp_coll_sizes(x);
    err = exp_topo(x);
    if (!err)
        err = exp_par_start(x);
    if (!err)
        err = exp_vmem(
            x, MROCE_COLL_N_BUFS * x->res->coll_bytes * (uint64_t)x->c.hosts,
            exp_coll_granule(x));
    err = err ? exp_par_coll(x, err) : exp_comm(x);
    if (!err)
        exp_coll_fill(x);
    if (!err)
        err = exp_faults(x);
    if (!err)
        err = exp_trace(x);
    return err ? err : exp_attach(x, &exp_coll_ops);
}

/* After the engines are closed (they own the connections). */
void exp_coll_free(struct exp *x)
{
    exp_coll_release(x);
    exp_par_coll_free(x);
    for (int r = 0; x->comm && x->comm->rank && r < x->comm->n; r++) {
        struct mroce_coll_rank *k = &x->comm->rank[r];
        k->ctx = NULL;                         /* closed, as host r's engine */
        k->sbuf = k->rbuf = k->scratch = NULL; /* the vmem's */
    }
    mroce_coll_comm_destroy(x->comm);
    x->comm = NULL;
    free(x->cbuf);
    x->cbuf = NULL;
}
