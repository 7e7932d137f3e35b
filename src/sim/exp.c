/* Experiments: one scenario from configuration to results; see exp.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, getrusage under c11 */
#include "sim/exp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <mroce/mroce.h>

#include "sim/defaults.h"
#include "sim/exp_int.h"
#include "sim/host.h"
#include "sim/rng.h"
#include "sim/topo.h"
#include "sim/trace.h"
#include "wire/roce.h"
#include "wire/wire.h"

#define EXP_MIB (1024u * 1024u)
/* After the last flow settles, run on until the fabric is empty (no
 * packet alive) for conservation to end at zero in flight, at most this
 * long, in steps of EXP_DRAIN_STEP_PS. */
#define EXP_DRAIN_PS (1000 * EXP_US)
#define EXP_DRAIN_STEP_PS (1 * EXP_US)
/* wr_id: flow index in the high half; receives are tagged in the low. */
#define EXP_RECV_TAG 0xFFFFFFFFu
#define EXP_MAX_MSG (1u << 30)
#define EXP_MAX_HOSTS 65536

/* ---- Small helpers ---- */

double exp_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int exp_fail(struct exp *x, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->res->error, sizeof(x->res->error), fmt, ap);
    va_end(ap);
    return err;
}

const char *mroce_sim_exp_workload_str(int workload)
{
    static const char *const n[] = {"single",    "permutation", "incast",
                                    "allreduce", "alltoall",    "allgather"};
    return workload >= 0 && workload < 6 ? n[workload] : "unknown";
}

static int exp_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double mroce_sim_exp_percentile(double *v, int n, double p)
{
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof(*v), exp_cmp_double);
    /* nearest rank: the smallest value with at least p% at or below it */
    double r = p / 100.0 * n;
    int k = (int)r;
    if ((double)k < r)
        k++;
    k = k < 1 ? 1 : k > n ? n : k;
    return v[k - 1];
}

/* ---- Configuration ---- */

#define EXP_DEF(v, d) ((v) ? (v) : (d))

void mroce_sim_exp_cfg_resolve(const struct mroce_sim_exp_cfg *in,
                               struct mroce_sim_exp_cfg *o)
{
    *o = *in;
    if (o->fat_k > 0) { /* k-ary: everything follows from k (topo.h) */
        o->oversub = EXP_DEF(o->oversub, 1);
        o->hosts_per_leaf = o->oversub * (o->fat_k / 2);
        o->spines = o->fat_k / 2;
        o->hosts = o->fat_k * (o->fat_k / 2) * o->hosts_per_leaf;
    }
    o->hosts = EXP_DEF(o->hosts, 16);
    o->hosts_per_leaf = EXP_DEF(o->hosts_per_leaf, o->hosts < 8 ? o->hosts : 8);
    o->spines = EXP_DEF(o->spines, o->hosts_per_leaf);
    o->planes = EXP_DEF(o->planes, 1);
    o->link_bps = EXP_DEF(o->link_bps, MROCE_SIM_LINK_BPS);
    o->delay_ps = EXP_DEF(o->delay_ps, MROCE_SIM_LINK_DELAY_PS);
    o->mtu = EXP_DEF(o->mtu, MROCE_SIM_MTU_PAYLOAD);
    o->paths = EXP_DEF(o->paths, 16); /* mroce_conn_attr.n_paths */
    o->qps = EXP_DEF(o->qps, 1);
    bool roce = o->transport == MROCE_TRANSPORT_ROCEV2;
    o->pfc = EXP_DEF(o->pfc, roce ? MROCE_SIM_EXP_ON : MROCE_SIM_EXP_OFF);
    o->dcqcn = EXP_DEF(o->dcqcn, MROCE_SIM_EXP_ON);
    o->trim = EXP_DEF(o->trim, MROCE_SIM_EXP_OFF);
    o->buf_per_port = EXP_DEF(o->buf_per_port, MROCE_SIM_BUF_PER_PORT);
    o->size = EXP_DEF(o->size, EXP_MIB);
    o->msg_bytes = EXP_DEF(o->msg_bytes, 4 * EXP_MIB);
    o->senders = EXP_DEF(o->senders, 4);
    o->rocev2_timeout = EXP_DEF(o->rocev2_timeout, 14);
    o->deadline_ps = EXP_DEF(o->deadline_ps, 2 * MROCE_SIM_PS_PER_S);
    o->iters = EXP_DEF(o->iters, 1);
    o->channels = EXP_DEF(o->channels, 1);
    o->sample_ps = EXP_DEF(o->sample_ps, EXP_US);
    o->payload = EXP_DEF(o->payload, MROCE_SIM_EXP_PAYLOAD_AUTO);
    if (o->progress_every_s <= 0)
        o->progress_every_s = 0.25;
}

static int exp_check_faults(struct exp *x)
{
    const struct mroce_sim_exp_cfg *c = &x->c;
    if (c->n_degrade < 0 || c->n_degrade > MROCE_SIM_EXP_MAX_FAULTS ||
        c->n_fail < 0 || c->n_fail > MROCE_SIM_EXP_MAX_FAULTS)
        return exp_fail(x, MROCE_EINVAL, "at most %d faults of each kind",
                        MROCE_SIM_EXP_MAX_FAULTS);
    for (int i = 0; i < c->n_degrade; i++)
        if (!(c->degrade[i].fraction > 0 && c->degrade[i].fraction <= 1))
            return exp_fail(x, MROCE_EINVAL,
                            "degrade fraction must be in (0, 1]");
    if (!(c->loss >= 0 && c->loss < 1))
        return exp_fail(x, MROCE_EINVAL, "loss must be in [0, 1)");
    if (c->n_fail_plane < 0 || c->n_fail_plane > MROCE_SIM_EXP_MAX_FAULTS)
        return exp_fail(x, MROCE_EINVAL, "at most %d plane faults",
                        MROCE_SIM_EXP_MAX_FAULTS);
    for (int i = 0; i < c->n_fail_plane; i++) {
        const struct mroce_sim_exp_plane_fault *f = &c->fail_plane[i];
        if (f->plane < 0 || f->plane >= c->planes ||
            (f->up_ps && f->up_ps <= f->t_ps))
            return exp_fail(x, MROCE_EINVAL,
                            "plane fault: plane 0..%d, up after down",
                            c->planes - 1);
    }
    return 0;
}

int exp_check(struct exp *x)
{
    const struct mroce_sim_exp_cfg *c = &x->c;
    if (c->transport != MROCE_TRANSPORT_METAROCE &&
        c->transport != MROCE_TRANSPORT_ROCEV2)
        return exp_fail(x, MROCE_EINVAL, "unknown transport %d", c->transport);
    if (c->fat_k < 0 || c->fat_k % 2 || c->fat_k > 64 || c->oversub < 0 ||
        (c->fat_k && (c->fat_k < 4 || c->hosts_per_leaf > 254)))
        return exp_fail(x, MROCE_EINVAL,
                        "a fat-tree's k is even, 4..64, with at most 254 "
                        "hosts per leaf");
    if (c->hosts < 2 || c->hosts > EXP_MAX_HOSTS || c->hosts_per_leaf < 1 ||
        c->hosts % c->hosts_per_leaf)
        return exp_fail(x, MROCE_EINVAL,
                        "hosts (%d) must be >= 2 and a multiple of "
                        "hosts-per-leaf (%d)",
                        c->hosts, c->hosts_per_leaf);
    if (c->paths < 1 || c->paths > 256 || c->qps < 1 || c->qps > MROCE_MAX_QPS)
        return exp_fail(x, MROCE_EINVAL, "paths and qps must be 1..256");
    if (c->workload < MROCE_SIM_EXP_SINGLE ||
        c->workload > MROCE_SIM_EXP_ALLGATHER)
        return exp_fail(x, MROCE_EINVAL, "unknown workload");
    if (c->victim && (c->workload != MROCE_SIM_EXP_INCAST ||
                      c->hosts_per_leaf < 2 || c->hosts < 3))
        return exp_fail(x, MROCE_EINVAL,
                        "a victim flow needs an incast and host 1 on the "
                        "receiver's leaf");
    if (exp_is_coll(c->workload) &&
        (c->hosts > 256 || c->iters < 1 || c->channels < 1 ||
         c->channels > 64 || c->flavour < 0 || c->flavour > 1))
        return exp_fail(x, MROCE_EINVAL,
                        "collectives: at most 256 hosts, iters >= 1, "
                        "channels 1..64");
    if (c->workload == MROCE_SIM_EXP_INCAST &&
        (c->senders < 1 || c->senders >= c->hosts))
        return exp_fail(x, MROCE_EINVAL, "incast senders must be 1..%d",
                        c->hosts - 1);
    if (c->transport == MROCE_TRANSPORT_ROCEV2 &&
        (c->mtu < 256 || c->mtu > 4096 || (c->mtu & (c->mtu - 1))))
        return exp_fail(x, MROCE_EINVAL,
                        "a RoCEv2 MTU is a power of 2 in 256..4096");
    if (c->msg_bytes > EXP_MAX_MSG || c->size / c->msg_bytes >= 65536)
        return exp_fail(x, MROCE_EINVAL,
                        "messages of at most 1 GiB, at most 65536 of them");
    return exp_check_faults(x);
}

/* ---- Payload ---- */

uint64_t exp_pow2_of(uint64_t v)
{
    return v & (~v + 1);
}

/* Real buffers up to the auto threshold, payload-free above it (or as
 * forced); payload-free needs granules that hold a tag (vmem.h). */
int exp_vmem(struct exp *x, uint64_t bytes, uint64_t granule)
{
    int p = x->c.payload;
    bool can_free = granule >= 64;
    if (p == MROCE_SIM_EXP_PAYLOAD_FREE && !can_free)
        return exp_fail(x, MROCE_EINVAL,
                        "payload-free needs every message and packet to "
                        "start on a multiple of 64 bytes (granule %llu)",
                        (unsigned long long)granule);
    bool free_mode = p == MROCE_SIM_EXP_PAYLOAD_FREE ||
                     (p == MROCE_SIM_EXP_PAYLOAD_AUTO && can_free &&
                      bytes > MROCE_SIM_EXP_PAYLOAD_AUTO_BYTES);
    struct mroce_sim_vmem_cfg vc = {
        .mode = free_mode ? MROCE_SIM_VMEM_FREE : MROCE_SIM_VMEM_REAL,
        .granule = granule,
        .seed = x->c.seed,
        .placed = exp_meter_placed,
        .placed_ud = x,
        .fault = x->c.place_fault,
        .fault_at = x->c.place_fault_at,
    };
    x->vm = mroce_sim_vmem_create(&vc);
    if (!x->vm)
        return exp_fail(x, MROCE_ENOMEM, "out of memory");
    struct mroce_sim_squeeze sq; /* a traced run keeps whole packets */
    if (!x->c.pcap && !x->c.whole_pkts && mroce_sim_vmem_squeezer(x->vm, &sq) &&
        mroce_sim_pool_set_squeeze(mroce_sim_topo_pool(x->t), &sq) < 0)
        return exp_fail(x, MROCE_ENOMEM, "out of memory");
    x->res->payload_free = free_mode;
    x->res->granule = granule;
    return 0;
}

/* ---- Topology, faults and trace ---- */

/* The largest UDP payload the engines emit at this MTU, read from a
 * throwaway context: the packet pool's big buffers take this size, not
 * the 9216-byte jumbo default, so the run touches half the memory. */
static uint32_t exp_max_payload(const struct mroce_sim_exp_cfg *c)
{
    struct mroce_ctx_attr a = {.deterministic = 1,
                               .mtu = c->mtu,
                               .transport = (uint8_t)c->transport,
                               .addr = {.family = MROCE_AF_INET}};
    struct mroce_ctx *ctx;
    if (mroce_ctx_open(&a, &ctx))
        return 0; /* the topology's default */
    size_t n = mroce_ctx_max_pkt(ctx);
    mroce_ctx_close(ctx);
    return (uint32_t)n;
}

int exp_topo(struct exp *x)
{
    const struct mroce_sim_exp_cfg *c = &x->c;
    struct mroce_sim_topo_cfg tc = {
        .max_payload = exp_max_payload(c),
        .hosts_per_leaf = c->hosts_per_leaf,
        .leaves = c->hosts / c->hosts_per_leaf,
        .spines = c->spines,
        .pods = c->fat_k,
        .core_per_agg = c->fat_k / 2,
        .planes = c->planes,
        .link_bps = c->link_bps,
        .delay_ps = c->delay_ps,
        .mtu = c->mtu,
        .seed = c->seed,
        .reroute_ps = c->reroute_ps,
        .buf_per_port = c->buf_per_port,
        .sw = {.pfc = c->pfc == MROCE_SIM_EXP_ON,
               .trim = c->trim == MROCE_SIM_EXP_ON},
    };
    int err = mroce_sim_topo_create(&tc, &x->t);
    if (err)
        return exp_fail(x, err, "topology refused (%s)", mroce_strerror(err));
    x->ev = mroce_sim_topo_ev(x->t);
    return 0;
}

/* A link by name, or by decimal id. */
int exp_link_id(struct exp *x, const char *name)
{
    int id = mroce_sim_topo_link_find(x->t, name);
    if (id >= 0)
        return id;
    char *end;
    errno = 0;
    long v = strtol(name, &end, 10);
    if (errno || end == name || *end || v < 0 ||
        v >= mroce_sim_topo_n_links(x->t))
        return -1;
    return (int)v;
}

/* Loss on every host uplink: each packet, data or ACK, crosses exactly
 * one, so every packet is lost end to end with probability p whatever
 * its path (metrics.md "Loss"; ACKs lose too). */
static int exp_loss(struct exp *x)
{
    if (x->c.loss <= 0)
        return 0;
    for (int i = 0; i < mroce_sim_topo_n_links(x->t); i++) {
        const struct mroce_sim_link_info *li =
            mroce_sim_topo_link_info(x->t, i);
        if (li->kind == MROCE_SIM_LINK_HOST_UP &&
            mroce_sim_topo_link_loss(x->t, i, false, x->c.loss, 0))
            return exp_fail(x, MROCE_ENOMEM, "cannot schedule loss");
    }
    return 0;
}

int exp_faults(struct exp *x)
{
    const struct mroce_sim_exp_cfg *c = &x->c;
    for (int i = 0; i < c->n_degrade; i++) {
        int id = exp_link_id(x, c->degrade[i].link);
        if (id < 0)
            return exp_fail(x, MROCE_EINVAL, "unknown link '%s'",
                            c->degrade[i].link);
        if (mroce_sim_topo_link_degrade(x->t, id, true, c->degrade[i].fraction,
                                        c->degrade[i].t_ps))
            return exp_fail(x, MROCE_ENOMEM, "cannot schedule degrade");
    }
    for (int i = 0; i < c->n_fail; i++) {
        int id = exp_link_id(x, c->fail[i].link);
        if (id < 0)
            return exp_fail(x, MROCE_EINVAL, "unknown link '%s'",
                            c->fail[i].link);
        if (mroce_sim_topo_link_down(x->t, id, true, c->fail[i].t_ps))
            return exp_fail(x, MROCE_ENOMEM, "cannot schedule failure");
    }
    for (int i = 0; i < c->n_fail_plane; i++) {
        const struct mroce_sim_exp_plane_fault *f = &c->fail_plane[i];
        if (mroce_sim_topo_plane_set(x->t, f->plane, false, f->t_ps) ||
            (f->up_ps &&
             mroce_sim_topo_plane_set(x->t, f->plane, true, f->up_ps)))
            return exp_fail(x, MROCE_ENOMEM, "cannot schedule plane fault");
    }
    return exp_loss(x);
}

/* Host 0's cable in every plane, both directions, in one capture (by
 * the rank that simulates host 0). */
int exp_trace(struct exp *x)
{
    if (!x->c.pcap || !exp_local(x, 0))
        return 0;
    int err = mroce_sim_trace_open(x->c.pcap, &x->trace);
    if (err)
        return exp_fail(x, err, "cannot open pcap file '%s'", x->c.pcap);
    for (int i = 0; i < mroce_sim_topo_n_links(x->t); i++) {
        const struct mroce_sim_link_info *li =
            mroce_sim_topo_link_info(x->t, i);
        if (li->host == 0)
            mroce_sim_trace_add_link(x->trace, li->link);
    }
    return 0;
}

/* ---- Workload ---- */

/* A uniformly random derangement: Fisher-Yates, redrawn while any host
 * maps to itself (about e tries on average). */
static void exp_derangement(int *to, int n, uint64_t seed)
{
    struct mroce_sim_rng r;
    mroce_sim_rng_init(&r, mroce_sim_seed(seed, 0x7065726dull));
    for (bool fixed = true; fixed;) {
        for (int i = 0; i < n; i++)
            to[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(mroce_sim_rng_next(&r) % (uint64_t)(i + 1));
            int tmp = to[i];
            to[i] = to[j];
            to[j] = tmp;
        }
        fixed = false;
        for (int i = 0; i < n && !fixed; i++)
            fixed = to[i] == i;
    }
}

static int exp_pairs(struct exp *x, int *src, int *dst)
{
    const struct mroce_sim_exp_cfg *c = &x->c;
    int n = c->hosts;
    if (c->workload == MROCE_SIM_EXP_SINGLE) {
        src[0] = 0;
        dst[0] = n - 1;
        return 1;
    }
    if (c->workload == MROCE_SIM_EXP_INCAST) {
        for (int i = 0; i < c->senders; i++) {
            src[i] = n - 1 - i;
            dst[i] = 0;
        }
        if (!c->victim)
            return c->senders;
        src[c->senders] = n - 1; /* the victim, on the receiver's leaf */
        dst[c->senders] = 1;
        return c->senders + 1;
    }
    exp_derangement(dst, n, c->seed);
    for (int i = 0; i < n; i++)
        src[i] = i;
    return n;
}

/* Transport header bytes per data packet, the mean over the packets of
 * a message of msg bytes of the workload's kind (imm: it carries an
 * immediate; send: SEND, else WRITE), summed from the wire modules' own
 * opcode tables (mroce_wire_hdr_len, roce_op_info), so the ideals use
 * what the frames carry. MetaRoCE repeats its headers in every packet
 * (MTH+DXH, RETH for a WRITE, SNH and IMM as needed, and the CRC); a
 * RoCEv2 message has a RETH in its first packet, the immediate in its
 * last, the BTH and ICRC in all, and pads each to 4 bytes. */
double exp_msg_hdr(const struct exp *x, uint64_t msg, bool imm, bool send)
{
    uint64_t mtu = x->c.mtu, n = msg ? (msg + mtu - 1) / mtu : 1;
    if (x->c.transport != MROCE_TRANSPORT_ROCEV2) {
        uint8_t op = send ? (imm ? MROCE_OP_SEND_IMM : MROCE_OP_SEND)
                          : (imm ? MROCE_OP_WRITE_IMM : MROCE_OP_WRITE);
        return (double)(mroce_wire_hdr_len(op) + MROCE_ICRC_LEN);
    }
    uint8_t first = send ? ROCE_OP_SEND_FIRST : ROCE_OP_WRITE_FIRST;
    uint8_t mid = send ? ROCE_OP_SEND_MIDDLE : ROCE_OP_WRITE_MIDDLE;
    uint8_t last = send ? (imm ? ROCE_OP_SEND_LAST_IMM : ROCE_OP_SEND_LAST)
                        : (imm ? ROCE_OP_WRITE_LAST_IMM : ROCE_OP_WRITE_LAST);
    uint8_t only = send ? (imm ? ROCE_OP_SEND_ONLY_IMM : ROCE_OP_SEND_ONLY)
                        : (imm ? ROCE_OP_WRITE_ONLY_IMM : ROCE_OP_WRITE_ONLY);
    uint64_t pad = -msg & 3, sum;
    if (n == 1)
        sum = roce_op_info(only)->hdr_len;
    else
        sum = roce_op_info(first)->hdr_len + roce_op_info(last)->hdr_len +
              (n - 2) * roce_op_info(mid)->hdr_len;
    return (double)(sum + pad + n * ROCE_ICRC_LEN) / (double)n;
}

/* A flow's messages: WRITEs, the last of each stream with an immediate
 * (exp_post); the mean over the flow's packets. */
uint32_t exp_hdr_bytes(const struct exp *x, uint32_t n_msgs)
{
    uint64_t m = x->msg ? x->msg : x->c.mtu;
    if (n_msgs <= 1)
        return (uint32_t)(exp_msg_hdr(x, m, true, false) + 0.5);
    double h = exp_msg_hdr(x, m, false, false),
           hi = exp_msg_hdr(x, m, true, false);
    double k = x->n_streams ? x->n_streams : 1;
    return (uint32_t)(((n_msgs - k) * h + k * hi) / n_msgs + 0.5);
}

/* The ideal FCT of a flow alone; with P planes its packets are shared
 * equally among them, so each plane carries ceil(packets / P). */
static uint64_t exp_ideal(const struct exp *x, uint64_t size, int src, int dst)
{
    const struct mroce_sim_exp_cfg *c = &x->c;
    uint64_t pkts = (size + c->mtu - 1) / c->mtu;
    uint64_t per_plane = (pkts + (uint64_t)c->planes - 1) / c->planes;
    uint64_t bytes = per_plane * c->mtu < size ? per_plane * c->mtu : size;
    return mroce_sim_topo_ideal_fct_ps(x->t, bytes, c->mtu,
                                       exp_hdr_bytes(x, x->n_msgs), src, dst);
}

/* With k > 1 RoCEv2 QPs a flow is cut into at least k messages and its
 * connection has k streams of one QP each; message m goes on stream
 * m % k and the last message of each stream carries an immediate. So
 * every QP carries a share and notifies on its own, as NCCL posts a
 * WRITE_IMM per QP when it splits data over QPs; one stream of k QPs
 * would fence each receive-consuming message behind the other QPs'
 * acknowledgements (src/roce/README.md) and serialize the tail. */
static void exp_split(struct exp *x)
{
    const struct mroce_sim_exp_cfg *c = &x->c;
    uint64_t k = c->transport == MROCE_TRANSPORT_ROCEV2 ? (uint64_t)c->qps : 1;
    uint64_t share = (c->size + k - 1) / k;
    share = (share + c->mtu - 1) / c->mtu * c->mtu;
    x->msg = (uint32_t)(share < c->msg_bytes ? share : c->msg_bytes);
    x->n_msgs = (uint32_t)((c->size + x->msg - 1) / x->msg);
    x->n_streams = (uint16_t)(x->n_msgs < k ? x->n_msgs : k);
}

static int exp_flows(struct exp *x)
{
    int n = x->c.hosts;
    int *src = calloc((size_t)n, sizeof(int));
    int *dst = calloc((size_t)n, sizeof(int));
    x->fl = calloc((size_t)n, sizeof(*x->fl));
    x->res->flows = calloc((size_t)n, sizeof(*x->res->flows));
    if (!src || !dst || !x->fl || !x->res->flows) {
        free(src);
        free(dst);
        return exp_fail(x, MROCE_ENOMEM, "out of memory");
    }
    x->n_flows = x->res->n_flows = exp_pairs(x, src, dst);
    for (int i = 0; i < x->n_flows; i++) {
        struct exp_flow *f = &x->fl[i];
        f->pub = &x->res->flows[i];
        f->pub->src = src[i];
        f->pub->dst = dst[i];
        f->pub->victim = x->c.victim && i == x->n_flows - 1;
        /* the victim moves as many bytes as the whole incast, so it runs
         * for all of it: its buffer `senders` times over */
        uint32_t rounds = f->pub->victim ? (uint32_t)x->c.senders : 1;
        f->n_msgs = x->n_msgs * rounds;
        f->pub->ideal_ps = exp_ideal(x, x->c.size * rounds, src[i], dst[i]);
    }
    free(src);
    free(dst);
    return 0;
}

/* ---- Engines ---- */

/* The fabric's base RTT as the engines are told it (R-CC-3): a packet to
 * the farthest host and its ACK back, each one packet alone (an ACK is
 * smaller, so this is slightly above). */
uint32_t exp_base_rtt_ns(const struct exp *x)
{
    uint64_t one_way = mroce_sim_topo_ideal_fct_ps(
        x->t, x->c.mtu, x->c.mtu, exp_hdr_bytes(x, 1), 0, x->c.hosts - 1);
    return (uint32_t)(2 * one_way / MROCE_SIM_PS_PER_NS);
}

int exp_ep_open(struct exp *x, struct exp_ep *e)
{
    const struct mroce_sim_exp_cfg *c = &x->c;
    struct mroce_ctx_attr a = {
        .deterministic = 1, /* R-SEC-7: simulation repeats exactly */
        .seed = mroce_sim_seed(c->seed, 0x656e67ull << 32 | (uint64_t)e->host),
        .mtu = c->mtu,
        .link_mbps = (uint32_t)(c->link_bps * (uint64_t)c->planes / 1000000),
        .transport = (uint8_t)c->transport,
        .rocev2_no_dcqcn = c->dcqcn == MROCE_SIM_EXP_OFF,
        /* the fabric never corrupts, so the RoCEv2 ICRC (half of its CPU
         * here) changes nothing but speed; a traced run keeps it so tshark
         * sees valid packets */
        .no_icrc = !c->pcap,
        .base_rtt_ns = exp_base_rtt_ns(x),
        .n_planes = (uint32_t)c->planes, /* a NIC port per plane */
    };
    mroce_sim_topo_host_addr(x->t, e->host, &a.addr);
    int err = mroce_ctx_open(&a, &e->ctx);
    if (!err)
        err = mroce_pd_alloc(e->ctx, &e->pd);
    if (!err)
        err = mroce_cq_create(e->ctx, e->cq_depth, &e->cq);
    if (err)
        return exp_fail(x, err, "engine of host %d: %s", e->host,
                        mroce_strerror(err));
    return 0;
}

static int exp_cmp_rx(const void *a, const void *b)
{
    int x = ((const struct exp_rx *)a)->src,
        y = ((const struct exp_rx *)b)->src;
    return (x > y) - (x < y);
}

/* Each destination's receive records, sorted by sender; every flow
 * points to its own. */
static void exp_rx_records(struct exp *x)
{
    for (int i = 0; i < x->n_flows; i++) {
        struct exp_flow *f = &x->fl[i];
        struct exp_rx *r = &f->dst->rx[f->dst->n_rx++];
        r->src = f->pub->src;
        r->flow = i;
        r->victim = f->pub->victim;
    }
    for (int h = 0; h < x->c.hosts; h++) {
        struct exp_ep *e = &x->eps[h];
        if (e->n_rx > 1)
            qsort(e->rx, (size_t)e->n_rx, sizeof(*e->rx), exp_cmp_rx);
        for (int k = 0; k < e->n_rx; k++)
            x->fl[e->rx[k].flow].rx = &e->rx[k];
    }
}

/* Sizes each taking part host's CQ and receive records, then opens it. */
static int exp_eps(struct exp *x)
{
    int n = x->c.hosts;
    x->eps = calloc((size_t)n, sizeof(*x->eps));
    if (!x->eps)
        return exp_fail(x, MROCE_ENOMEM, "out of memory");
    for (int i = 0; i < x->n_flows; i++) {
        struct exp_flow *f = &x->fl[i];
        f->src = &x->eps[f->pub->src];
        f->dst = &x->eps[f->pub->dst];
        f->src->cq_depth += f->n_msgs;
        f->dst->cq_depth += x->n_streams;
        f->dst->n_rx++;
    }
    for (int h = 0; h < n; h++) {
        struct exp_ep *e = &x->eps[h];
        e->x = x;
        e->host = h;
        if (!e->cq_depth)
            continue;
        e->cq_depth += 16;
        e->rx = calloc((size_t)e->n_rx + 1, sizeof(*e->rx));
        if (!e->rx)
            return exp_fail(x, MROCE_ENOMEM, "out of memory");
        e->n_rx = 0;
        if (!exp_local(x, h))
            continue; /* another rank's engine */
        int err = exp_ep_open(x, e);
        if (err)
            return err;
    }
    exp_rx_records(x);
    return 0;
}

/* Every source is a window of one random pattern, flow i's starting
 * EXP_SRC_STRIDE x i bytes in: each flow sends different bytes (data
 * delivered to the wrong flow or offset is caught, unless shifted by
 * exactly a multiple of the stride across flows) while the sources cost
 * one buffer instead of one per flow. */
#define EXP_SRC_STRIDE 8u

static int exp_pattern(struct exp *x)
{
    if (mroce_sim_vmem_mode(x->vm) == MROCE_SIM_VMEM_FREE)
        return 0; /* sources are labels (vmem.h) */
    uint64_t n = x->c.size + (uint64_t)EXP_SRC_STRIDE * x->n_flows;
    x->pattern = malloc(n);
    if (!x->pattern)
        return exp_fail(x, MROCE_ENOMEM, "cannot allocate %llu bytes",
                        (unsigned long long)n);
    struct mroce_sim_rng r;
    mroce_sim_rng_init(&r, mroce_sim_seed(x->c.seed, 0x66696c6cull));
    for (uint64_t i = 0; i < n; i += 8) {
        uint64_t v = mroce_sim_rng_next(&r);
        memcpy(x->pattern + i, &v, n - i < 8 ? n - i : 8);
    }
    return 0;
}

/* Destinations are vmem regions in both modes (placements counted per
 * granule; real: calloc'd bytes, no memset: a memset here was ~4,200
 * instructions per data packet of the 64-host permutation, callgrind).
 * Sources: real mode, a window of the pattern; payload-free, a region
 * whose labels name flow idx. The victim writes its destination `rounds`
 * times over. */
static int exp_dst_buf(struct exp *x, struct exp_flow *f, int idx)
{
    unsigned rw = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE;
    f->dv = mroce_sim_vbuf_new(x->vm, x->c.size, false, (uint64_t)idx,
                               f->pub->dst, f->rx);
    if (!f->dv)
        return exp_fail(x, MROCE_ENOMEM, "cannot allocate %llu bytes",
                        (unsigned long long)x->c.size);
    mroce_sim_vbuf_set_expect(f->dv, (uint8_t)(f->n_msgs / x->n_msgs));
    f->dbuf = mroce_sim_vbuf_addr(f->dv);
    int err = mroce_sim_vbuf_reg(f->dv, f->dst->pd, rw, &f->dmr);
    if (err)
        return exp_fail(x, err, "cannot register %llu bytes: %s",
                        (unsigned long long)x->c.size, mroce_strerror(err));
    f->raddr = (uint64_t)(uintptr_t)f->dbuf;
    f->rkey = mroce_mr_rkey(f->dmr);
    return 0;
}

static int exp_src_buf(struct exp *x, struct exp_flow *f, int idx)
{
    int err;
    if (mroce_sim_vmem_mode(x->vm) == MROCE_SIM_VMEM_FREE) {
        f->sv = mroce_sim_vbuf_new(x->vm, x->c.size, true, (uint64_t)idx,
                                   f->pub->src, NULL);
        if (!f->sv)
            return exp_fail(x, MROCE_ENOMEM, "cannot allocate %llu bytes",
                            (unsigned long long)x->c.size);
        f->sbuf = mroce_sim_vbuf_addr(f->sv);
        err = mroce_sim_vbuf_reg(f->sv, f->src->pd, MROCE_ACCESS_LOCAL_WRITE,
                                 &f->smr);
    } else {
        f->sbuf = x->pattern + (uint64_t)EXP_SRC_STRIDE * idx;
        err = mroce_reg_mr(f->src->pd, f->sbuf, x->c.size,
                           MROCE_ACCESS_LOCAL_WRITE, &f->smr);
    }
    return err ? exp_fail(x, err, "cannot register %llu bytes: %s",
                          (unsigned long long)x->c.size, mroce_strerror(err))
               : 0;
}

static int exp_conn(struct exp *x, struct exp_ep *e, uint32_t n_msgs,
                    struct mroce_conn **out)
{
    uint32_t sq = (n_msgs + x->n_streams - 1) / x->n_streams;
    struct mroce_conn_attr ca = {
        .send_cq = e->cq,
        .recv_cq = e->cq,
        .n_streams = x->n_streams,
        .n_paths = (uint16_t)x->c.paths,
        .sq_depth = sq > 64 ? sq : 0,
        .rocev2_timeout = x->c.rocev2_timeout,
    };
    return mroce_conn_create(e->pd, &ca, out);
}

/* The destination end: its buffer, its connection and one receive per
 * stream for its closing WRITE_IMM. */
static int exp_dst_open(struct exp *x, struct exp_flow *f, int idx)
{
    int err = exp_dst_buf(x, f, idx);
    if (err)
        return err;
    err = exp_conn(x, f->dst, f->n_msgs, &f->rc);
    for (uint16_t s = 0; !err && s < x->n_streams; s++) {
        struct mroce_recv_wr rw = {
            .wr_id = (uint64_t)idx << 32 | EXP_RECV_TAG,
            .stream = s,
            .sge = {(uint64_t)(uintptr_t)f->dbuf, 0, mroce_mr_lkey(f->dmr)},
        };
        err = mroce_post_recv(f->rc, &rw);
    }
    if (!err)
        mroce_conn_get_params(f->rc, &f->rp);
    return err;
}

/* The ends this rank holds, made and described (f->sp, f->rp, raddr,
 * rkey) for the other end; connected by exp_flow_connect once the
 * other rank's halves are known (exp_par_flows). */
static int exp_flow_open(struct exp *x, int idx)
{
    struct exp_flow *f = &x->fl[idx];
    int err = 0;
    if (exp_local(x, f->pub->dst))
        err = exp_dst_open(x, f, idx);
    if (!err && exp_local(x, f->pub->src)) {
        err = exp_src_buf(x, f, idx);
        if (!err)
            err = exp_conn(x, f->src, f->n_msgs, &f->sc);
        if (!err)
            mroce_conn_get_params(f->sc, &f->sp);
    }
    if (err && !x->res->error[0])
        return exp_fail(x, err, "connection %d -> %d: %s", f->pub->src,
                        f->pub->dst, mroce_strerror(err));
    return err;
}

static int exp_flow_connect(struct exp *x, int idx)
{
    struct exp_flow *f = &x->fl[idx];
    int err = 0;
    if (f->sc)
        err = mroce_conn_connect(f->sc, &f->rp);
    if (!err && f->rc)
        err = mroce_conn_connect(f->rc, &f->sp);
    if (!err && f->rc)
        err = exp_rx_init(f->rx, f->rc);
    if (err)
        return exp_fail(x, err, "connection %d -> %d: %s", f->pub->src,
                        f->pub->dst, mroce_strerror(err));
    return 0;
}

/* The flow's messages back to back, round-robin over the streams; the
 * last of each stream with an immediate that completes at the
 * destination. */
static int exp_post(struct exp *x, int idx)
{
    struct exp_flow *f = &x->fl[idx];
    for (uint32_t m = 0; f->sc && m < f->n_msgs; m++) {
        uint64_t off = (uint64_t)(m % x->n_msgs) * x->msg;
        uint64_t len = x->c.size - off;
        len = len > x->msg ? x->msg : len;
        struct mroce_send_wr wr = {
            .wr_id = (uint64_t)idx << 32 | m,
            .stream = (uint16_t)(m % x->n_streams),
            .sge = {(uint64_t)(uintptr_t)(f->sbuf + off), (uint32_t)len,
                    mroce_mr_lkey(f->smr)},
            .remote_addr = f->raddr + off,
            .rkey = f->rkey,
            .imm = (uint32_t)idx,
        };
        bool last = m + x->n_streams >= f->n_msgs;
        int err = last ? mroce_post_write_imm(f->sc, &wr)
                       : mroce_post_write(f->sc, &wr);
        if (err)
            return exp_fail(x, err, "post on flow %d: %s", idx,
                            mroce_strerror(err));
    }
    return 0;
}

/* ---- Driving: the ops the hosts call ---- */

static void exp_on_wc(struct exp *x, const struct mroce_wc *wc, uint64_t now)
{
    struct exp_flow *f = &x->fl[wc->wr_id >> 32];
    if ((uint32_t)wc->wr_id == EXP_RECV_TAG) {
        if (wc->status == MROCE_WC_SUCCESS && ++f->n_recv == x->n_streams)
            f->pub->fct_ps = now;
        return;
    }
    if (wc->status != MROCE_WC_SUCCESS && !f->pub->status)
        f->pub->status = wc->status;
    if (++f->n_wc < f->n_msgs)
        return;
    f->pub->settle_ps = now;
    x->settle_ps = now > x->settle_ps ? now : x->settle_ps;
    x->n_settled++; /* the run stops when all ranks' add up (exp_par_run) */
}

/* Right after every packet and timer, so completion times are exact to
 * the event that caused them (to the engine's 1 ns clock). */
static void exp_poll(struct exp_ep *e, uint64_t now_ns)
{
    struct mroce_wc wc[16];
    int n;
    while ((n = mroce_poll_cq(e->cq, 16, wc)) > 0)
        for (int i = 0; i < n; i++)
            exp_on_wc(e->x, &wc[i], now_ns * MROCE_SIM_PS_PER_NS);
}

size_t exp_ep_max_pkt(const void *ep)
{
    return mroce_ctx_max_pkt(((const struct exp_ep *)ep)->ctx);
}

int exp_ep_tx(void *ep, uint64_t now, uint8_t *buf, size_t cap,
              struct mroce_pkt_meta *meta)
{
    return mroce_ctx_tx(((struct exp_ep *)ep)->ctx, now, buf, cap, meta);
}

void exp_ep_set_tx_planes(void *ep, uint64_t planes)
{
    mroce_ctx_set_tx_planes(((struct exp_ep *)ep)->ctx, planes);
}

static int exp_ep_rx(void *ep, uint64_t now, const struct mroce_pkt_meta *meta,
                     const uint8_t *buf, size_t len)
{
    struct exp_ep *e = ep;
    int rc = exp_meter_rx(e, now, meta, buf, len);
    exp_poll(e, now);
    return rc;
}

uint64_t exp_ep_next_expiry(const void *ep)
{
    return mroce_ctx_next_expiry(((const struct exp_ep *)ep)->ctx);
}

static void exp_ep_on_expiry(void *ep, uint64_t now)
{
    struct exp_ep *e = ep;
    mroce_ctx_on_expiry(e->ctx, now);
    exp_poll(e, now);
}

static const struct mroce_ep_ops exp_ep_ops = {
    .max_pkt = exp_ep_max_pkt,
    .tx = exp_ep_tx,
    .rx = exp_ep_rx,
    .next_expiry = exp_ep_next_expiry,
    .on_expiry = exp_ep_on_expiry,
    .set_tx_planes = exp_ep_set_tx_planes,
};

int exp_attach(struct exp *x, const struct mroce_ep_ops *ops)
{
    for (int h = 0; h < x->c.hosts; h++) {
        if (!x->eps[h].ctx)
            continue;
        int err = mroce_sim_host_attach(mroce_sim_topo_host(x->t, h), ops,
                                        &x->eps[h]);
        if (err)
            return exp_fail(x, err, "attach host %d: %s", h,
                            mroce_strerror(err));
    }
    return 0;
}

/* ---- Running ---- */

/* On rank 0 (the only one with a progress callback): where all ranks
 * are, from the last reduction. */
static void exp_progress(struct exp *x, double t0, double *last)
{
    double now = exp_wall();
    if (!x->c.progress || now - *last < x->c.progress_every_s)
        return;
    *last = now;
    struct mroce_sim_exp_progress p = {
        .now_ps = x->now,
        .events = x->g.events,
        .wall_s = now - t0,
        .flows_settled = (int)x->g.settled,
        .flows = x->n_flows,
    };
    x->c.progress(x->c.progress_ud, &p);
}

/* Whether this rank is past the soft deadline and out of its wall
 * budget (rank 0 decides for all: wall time differs between ranks). */
static bool exp_budget_spent(struct exp *x, double t0)
{
    const struct mroce_sim_exp_cfg *c = &x->c;
    return x->rank == 0 && c->soft_deadline_ps && c->wall_budget_s > 0 &&
           x->now >= c->soft_deadline_ps && exp_wall() - t0 >= c->wall_budget_s;
}

int exp_slice_end(struct exp *x, double t0, double *last, bool *over)
{
    x->g.over_budget = exp_budget_spent(x, t0);
    int err = exp_par_glob(x);
    if (err)
        return exp_fail(x, err, "parallel run: %s", mroce_strerror(err));
    exp_progress(x, t0, last);
    *over = x->g.over_budget != 0;
    if (*over)
        x->res->wall_cut = true;
    return 0;
}

static int exp_run_err(struct exp *x, int err)
{
    return exp_fail(x, err, "parallel run: %s", mroce_strerror(err));
}

/* Until every flow settled or the deadline; then, if all settled, until
 * the fabric is empty (bounded), so the conservation count ends with
 * nothing alive. A run cut by the deadline stops there. Every test is on
 * all ranks' state at a slice or drain step boundary, or, for the flows
 * settled, at the end of a window: the run then goes on from the last
 * settle time, which no rank has run a drain step past. */
static int exp_loop(struct exp *x)
{
    double t0 = exp_wall(), last = t0;
    uint64_t dl = x->c.deadline_ps;
    int err = exp_meter_start(x);
    if (!err)
        err = exp_conv_start(x);
    if (!err)
        err = exp_par_glob(x);
    if (err)
        return err;
    mroce_sim_perfctr_start(&x->pc);
    bool over = false;
    while (!err && x->g.settled < (uint64_t)x->n_flows && x->now < dl &&
           x->g.busy && !over) {
        uint64_t until = x->now + EXP_SLICE_PS;
        int rc = exp_par_run(x, until < dl ? until : dl, true, false);
        if (rc < 0)
            return exp_run_err(x, rc);
        if (rc == 1)
            x->now = x->g.settle_ps;
        err = exp_slice_end(x, t0, &last, &over);
    }
    x->res->end_ps = x->now;
    uint64_t stop = x->res->end_ps + EXP_DRAIN_PS;
    bool drain = !err && x->g.settled == (uint64_t)x->n_flows;
    while (drain && x->now < stop) {
        int rc = exp_par_run(x, x->now + EXP_DRAIN_STEP_PS, false, false);
        if (rc < 0)
            return exp_run_err(x, rc);
        if ((err = exp_par_glob(x)) != 0)
            return exp_run_err(x, err);
        drain = x->g.in_flight > 0;
    }
    mroce_sim_perfctr_stop(&x->pc);
    x->res->wall_s = exp_wall() - t0;
    return exp_meter_finish(x);
}

/* ---- Results ---- */

void exp_add_lost(struct mroce_sim_exp_lost *l,
                  const struct mroce_conn_counters *cc)
{
    l->sack += cc->lost_sack;
    l->rack += cc->lost_rack;
    l->pto += cc->lost_pto;
    l->rto += cc->lost_rto;
    l->rnr += cc->lost_rnr;
}

static uint64_t exp_flow_label(void *ud, uint64_t g)
{
    const struct exp_flow *f = ud;
    return mroce_sim_vbuf_label(f->src->x->vm, (uint64_t)(f - f->src->x->fl),
                                g);
}

/* Every granule placed as often as the flow writes it, with the right
 * content: the source's bytes (real) or its labels (payload-free). */
static bool exp_flow_data_ok(struct exp *x, struct exp_flow *f)
{
    uint8_t rounds = (uint8_t)(f->n_msgs / x->n_msgs);
    if (mroce_sim_vbuf_check_count(f->dv, 0, x->c.size, rounds, rounds) >= 0)
        return false;
    if (mroce_sim_vmem_mode(x->vm) == MROCE_SIM_VMEM_REAL)
        return memcmp(x->pattern + (uint64_t)EXP_SRC_STRIDE * (f - x->fl),
                      f->dbuf, x->c.size) == 0;
    return mroce_sim_vbuf_check_labels(f->dv, 0, x->c.size, exp_flow_label, f) <
           0;
}

/* What this rank's end of the flow knows: the source's counters, the
 * destination's data (exp_par_merge brings both ends to rank 0). */
static void exp_flow_local(struct exp *x, struct exp_flow *f)
{
    struct mroce_sim_exp_flow *p = f->pub;
    if (f->sc) {
        struct mroce_conn_counters cc;
        mroce_conn_get_counters(f->sc, &cc);
        p->retx_pkts = cc.retx_pkts;
        p->data_pkts = cc.tx_data_pkts;
        p->timeouts = cc.rto_events;
        exp_add_lost(&f->lost, &cc);
    }
    if (f->dv)
        p->data_ok = exp_flow_data_ok(x, f);
}

static void exp_flow_result(struct exp *x, struct exp_flow *f)
{
    struct mroce_sim_exp_flow *p = f->pub;
    p->completed = f->n_wc == f->n_msgs && !p->status && p->fct_ps;
    struct mroce_sim_exp_result *r = x->res;
    r->data_pkts += p->data_pkts;
    r->retx_pkts += p->retx_pkts;
    r->timeouts += p->timeouts;
    r->lost_by.sack += f->lost.sack;
    r->lost_by.rack += f->lost.rack;
    r->lost_by.pto += f->lost.pto;
    r->lost_by.rto += f->lost.rto;
    r->lost_by.rnr += f->lost.rnr;
    r->flows_completed += p->completed;
    r->flows_failed += !p->completed;
    r->flows_corrupt += p->completed && !p->data_ok;
    if (p->completed && p->fct_ps > r->jct_ps)
        r->jct_ps = p->fct_ps;
}

static int exp_stats(struct exp *x)
{
    struct mroce_sim_exp_result *r = x->res;
    double *fct = calloc((size_t)x->n_flows + 1, sizeof(double));
    double *sd = calloc((size_t)x->n_flows + 1, sizeof(double));
    if (!fct || !sd) {
        free(fct);
        free(sd);
        return exp_fail(x, MROCE_ENOMEM, "out of memory");
    }
    int n = 0;
    for (int i = 0; i < x->n_flows; i++) {
        const struct mroce_sim_exp_flow *p = &r->flows[i];
        if (!p->completed)
            continue;
        fct[n] = (double)p->fct_ps / EXP_US;
        sd[n++] = (double)p->fct_ps / (double)p->ideal_ps;
    }
    r->fct_us.p50 = mroce_sim_exp_percentile(fct, n, 50);
    r->fct_us.p99 = mroce_sim_exp_percentile(fct, n, 99);
    r->fct_us.max = mroce_sim_exp_percentile(fct, n, 100);
    r->slowdown.p50 = mroce_sim_exp_percentile(sd, n, 50);
    r->slowdown.p99 = mroce_sim_exp_percentile(sd, n, 99);
    r->slowdown.max = mroce_sim_exp_percentile(sd, n, 100);
    free(fct);
    free(sd);
    return 0;
}

/* Issue 5 asks what the engines keep per connection and per path: the
 * sum over the hosts of what each context reports. */
void exp_engine_bytes(struct exp *x)
{
    struct mroce_state_bytes *t = &x->res->engine;
    memset(t, 0, sizeof(*t));
    for (int h = 0; x->eps && h < x->c.hosts; h++) {
        if (!x->eps[h].ctx)
            continue;
        struct mroce_state_bytes b;
        mroce_ctx_state_bytes(x->eps[h].ctx, &b);
        t->conns += b.conns;
        t->paths += b.paths;
        t->per_conn = b.per_conn;
        t->per_path = b.per_path;
        t->per_dsn_slot = b.per_dsn_slot;
        t->per_psn_slot = b.per_psn_slot;
        t->conn_bytes += b.conn_bytes;
        t->path_bytes += b.path_bytes;
        t->dsn_bytes += b.dsn_bytes;
        t->psn_bytes += b.psn_bytes;
        t->ctx_bytes += b.ctx_bytes;
        t->sec_bytes += b.sec_bytes;
        t->total += b.total;
    }
}

/* How the hosts spread their bytes over the planes. */
static void exp_plane_bytes(struct exp *x)
{
    for (int h = 0; h < x->c.hosts; h++) {
        struct mroce_sim_nic *nic =
            mroce_sim_host_nic(mroce_sim_topo_host(x->t, h));
        int n = mroce_sim_nic_n_ports(nic);
        for (int p = 0; p < n && p < MROCE_SIM_EXP_MAX_PLANES; p++) {
            struct mroce_sim_nic_port_counters pc;
            mroce_sim_nic_get_port_counters(nic, p, &pc);
            x->res->plane_tx_bytes[p] += pc.tx_bytes;
        }
    }
}

void exp_fabric(struct exp *x)
{
    struct mroce_sim_exp_result *r = x->res;
    struct mroce_sim_topo_counters tc;
    mroce_sim_topo_get_counters(x->t, &tc);
    r->pkts = tc.pkts;
    r->drops = tc.pkts.dropped_total;
    memcpy(r->drop, tc.pkts.dropped, sizeof(r->drop));
    r->ecn_marks = tc.ecn_marks;
    r->trimmed = tc.trimmed;
    r->pfc_pauses = tc.pfc_pauses;
    r->pfc_pause_ps = tc.pfc_pause_ps;
    r->max_qbytes = tc.max_qbytes;
    static const int kinds[3] = {MROCE_SIM_LINK_HOST_DOWN,
                                 MROCE_SIM_LINK_SPINE_UP,
                                 MROCE_SIM_LINK_SPINE_DOWN};
    for (int i = 0; i < 3; i++) {
        r->where_ecn[i] = tc.kind_ecn[kinds[i]];
        r->where_max_qbytes[i] = tc.kind_max_qbytes[kinds[i]];
    }
    exp_plane_bytes(x);
    r->events = x->mg.events; /* the fabric's, not the sampler's */
    r->ooo_pkts = x->m.ooo;
    r->ideal_ps = exp_ideal(x, x->c.size, 0, x->c.hosts - 1);
    if (r->wall_s > 0) {
        r->events_per_s = (double)r->events / r->wall_s;
        r->pkts_per_s = (double)r->pkts.injected / r->wall_s;
    }
    r->insns = x->mg.insns;
    r->peak_rss_mb = x->mg.peak_rss_mb;
    r->engine = x->mg.engine;
    r->conn_cnt = x->mg.conn_cnt;
    r->ctx_cnt = x->mg.ctx_cnt;
    if (x->vm) {
        r->vmem = x->mg.vmem;
        r->buffer_bytes = x->mg.vmem_bytes;
        if (x->pattern)
            r->buffer_bytes +=
                x->c.size + (uint64_t)EXP_SRC_STRIDE * x->n_flows;
    }
}

/* Every rank's part goes to rank 0, which computes the results; the
 * other ranks are done (their result says only how they ran). */
static int exp_results(struct exp *x)
{
    for (int i = 0; i < x->n_flows; i++)
        exp_flow_local(x, &x->fl[i]);
    int err = exp_par_merge(x);
    if (err)
        return exp_fail(x, err, "merging the ranks' results: %s",
                        mroce_strerror(err));
    exp_conv_finish(x);
    if (x->rank != 0)
        return 0;
    exp_meter_result(x);
    for (int i = 0; i < x->n_flows; i++)
        exp_flow_result(x, &x->fl[i]);
    exp_fabric(x);
    struct mroce_sim_exp_result *r = x->res;
    r->fraction_of_ideal =
        r->jct_ps && !r->flows_failed ? (double)r->ideal_ps / r->jct_ps : 0;
    err = exp_stats(x);
    return err ? err : exp_metrics(x);
}

/* ---- Setup and teardown ---- */

static int exp_setup(struct exp *x)
{
    int err = exp_check(x);
    if (!err) {
        exp_split(x);
        err = exp_topo(x);
    }
    if (!err)
        err = exp_par_start(x);
    if (!err)
        err = exp_flows(x);
    if (!err)
        err = exp_eps(x);
    if (!err) { /* packets and messages start on multiples of these */
        uint64_t g = exp_pow2_of(x->c.mtu), m = exp_pow2_of(x->msg);
        err =
            exp_vmem(x, x->c.size * (uint64_t)(x->n_flows + 1), g < m ? g : m);
    }
    if (!err)
        err = exp_pattern(x);
    for (int i = 0; !err && i < x->n_flows; i++)
        err = exp_flow_open(x, i);
    err = exp_par_flows(x, err); /* every rank, failed or not */
    for (int i = 0; !err && i < x->n_flows; i++)
        err = exp_flow_connect(x, i);
    if (!err)
        err = exp_faults(x);
    if (!err)
        err = exp_trace(x);
    for (int i = 0; !err && i < x->n_flows; i++)
        err = exp_post(x, i);
    return err ? err : exp_attach(x, &exp_ep_ops);
}

/* Frees everything; returns nonzero if the trace lost frames. */
static int exp_teardown(struct exp *x)
{
    exp_par_stop(x);              /* unhooks the topology's cut links */
    mroce_sim_topo_destroy(x->t); /* hosts first: they drive the engines */
    int err = 0;
    if (x->trace) {
        x->res->pcap_frames = mroce_sim_trace_count(x->trace);
        if (mroce_sim_trace_close(x->trace))
            err = MROCE_EINVAL;
        if (err && !x->res->error[0])
            exp_fail(x, err, "pcap: frames not written");
    }
    for (int h = 0; x->eps && h < x->c.hosts; h++) {
        struct exp_ep *e = &x->eps[h];
        mroce_ctx_close(e->ctx); /* its conns, MRs, CQ, PD */
        for (int k = 0; k < e->n_rx; k++)
            exp_rx_free(&e->rx[k]);
        free(e->rx);
    }
    exp_coll_free(x);
    mroce_sim_vmem_destroy(x->vm); /* after the engines: regions first */
    free(x->m.s);
    free(x->m.sb);
    free(x->m.svb);
    free(x->m.last_rx);
    free(x->eps);
    free(x->fl);
    free(x->pattern);
    return err;
}

/* One rank's run (comm NULL: the only one). Every step that needs the
 * other ranks is taken by all of them, failed or not, so a failure on
 * one rank ends all of them instead of leaving them waiting. */
static int exp_run_rank(const struct mroce_sim_exp_cfg *cfg,
                        const struct mroce_sim_comm *comm,
                        struct mroce_sim_exp_result *res)
{
    memset(res, 0, sizeof(*res));
    struct exp x = {.res = res,
                    .part_comm = comm,
                    .rank = mroce_sim_comm_rank(comm),
                    .ranks = mroce_sim_comm_size(comm)};
    mroce_sim_perfctr_open(&x.pc);
    mroce_sim_exp_cfg_resolve(cfg, &x.c);
    res->cfg = x.c;
    if (x.rank != 0)
        x.c.progress = NULL; /* rank 0 reports for all */
    double t0 = exp_wall();
    bool coll = exp_is_coll(x.c.workload);
    int err = coll ? exp_coll_setup(&x) : exp_setup(&x);
    err = exp_par_agree(&x, err);
    res->setup_s = exp_wall() - t0;
    if (!err && coll)
        err = exp_coll_run(&x);
    if (!err && !coll)
        err = exp_loop(&x);
    if (!err && !coll)
        err = exp_results(&x);
    int terr = exp_teardown(&x);
    mroce_sim_perfctr_close(&x.pc);
    return err ? err : terr;
}

struct exp_thr {
    const struct mroce_sim_exp_cfg *cfg;
    struct mroce_sim_exp_result *res; /* [ranks] */
    int *err;
};

static void exp_thr_rank(const struct mroce_sim_comm *c, void *arg)
{
    struct exp_thr *t = arg;
    t->err[c->rank] = exp_run_rank(t->cfg, c, &t->res[c->rank]);
}

/* cfg->ranks ranks as threads of this process; rank 0's result. */
static int exp_run_threads(const struct mroce_sim_exp_cfg *cfg,
                           struct mroce_sim_exp_result *res)
{
    int n = cfg->ranks;
    memset(res, 0, sizeof(*res));
    struct exp_thr t = {cfg, calloc((size_t)n, sizeof(*t.res)),
                        calloc((size_t)n, sizeof(int))};
    int err = t.res && t.err ? mroce_sim_comm_threads_run(n, exp_thr_rank, &t)
                             : MROCE_ENOMEM;
    if (err) {
        snprintf(res->error, sizeof(res->error),
                 "cannot start %d ranks as threads: %s", n,
                 mroce_strerror(err));
        mroce_sim_exp_cfg_resolve(cfg, &res->cfg);
    } else {
        *res = t.res[0];
        err = t.err[0];
        for (int i = 1; i < n; i++) {
            if (!err && t.err[i]) { /* rank 0 followed another's failure */
                err = t.err[i];
                memcpy(res->error, t.res[i].error, sizeof(res->error));
            }
            mroce_sim_exp_result_free(&t.res[i]);
        }
    }
    free(t.res);
    free(t.err);
    return err;
}

int mroce_sim_exp_run(const struct mroce_sim_exp_cfg *cfg,
                      struct mroce_sim_exp_result *res)
{
    if (!cfg->comm && cfg->ranks > 1)
        return exp_run_threads(cfg, res);
    return exp_run_rank(cfg, cfg->comm, res);
}

void mroce_sim_exp_result_free(struct mroce_sim_exp_result *res)
{
    free(res->flows);
    res->flows = NULL;
    res->n_flows = 0;
    free(res->samples);
    res->samples = NULL;
    res->n_samples = 0;
    free(res->rank_events);
    res->rank_events = NULL;
    free(res->rank_sync_s);
    res->rank_sync_s = NULL;
    free(res->rank_run_s);
    res->rank_run_s = NULL;
    free(res->rank_import_s);
    res->rank_import_s = NULL;
    free(res->rank_run_cpu_s);
    res->rank_run_cpu_s = NULL;
}
