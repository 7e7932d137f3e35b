/* Incast convergence (issue 5's first target; docs/sim.md "Incast
 * convergence"). For each sender to host 0: its placed bytes over windows
 * of one base RTT, compared at every sample with its fair share of host
 * 0's link (the link's payload rate over the senders), until the first
 * sender is done (then the shares change: that is re-convergence, not
 * this target). A sender has converged from the end of its last window
 * outside +-20% of that share.
 * Then: host 0's leaf downlink queue and the fabric's drops after the
 * slowest sender converged. O(senders) per sample. */
#include <stdlib.h>
#include <string.h>

#include "sim/defaults.h"
#include "sim/exp_int.h"
#include "sim/pkt.h"
#include "sim/topo.h"

#define CONV_BAND 0.2
/* Packets of a window at the fair share: 63 senders interleaved in one
 * FIFO deliver +-2 packets around their share in any window, so a window
 * must hold 16 for +-20% to judge rates rather than packet jitter (with
 * 8, windows of 6 to 9 packets: -25% to +12%, on every sender, always). */
#define CONV_PKTS 16

static bool conv_on(const struct exp *x)
{
    return x->conv.f != NULL;
}

int exp_conv_start(struct exp *x)
{
    struct exp_conv *v = &x->conv;
    if (x->c.workload != MROCE_SIM_EXP_INCAST || !x->eps[0].n_rx)
        return 0;
    v->n = x->eps[0].n_rx;
    for (int k = 0; k < v->n; k++)
        v->n_senders += !x->eps[0].rx[k].victim;
    v->f = calloc((size_t)v->n, sizeof(*v->f));
    if (!v->f)
        return exp_fail(x, MROCE_ENOMEM, "out of memory");
    v->rtt_ps = (uint64_t)exp_base_rtt_ns(x) * MROCE_SIM_PS_PER_NS;
    double mtu = x->c.mtu;
    v->cap_bps =
        (double)x->c.link_bps * x->c.planes * mtu /
        (mtu + exp_hdr_bytes(x, x->n_msgs) + MROCE_SIM_WIRE_OVERHEAD_V4);
    /* a window holds at least CONV_PKTS packets at the fair share, or a
     * rate is too coarse to judge: 63 senders of 4 KiB packets get ~1.6
     * packets each per base RTT at 400G (so windows of ~10 base RTTs) */
    double pkts_ps = CONV_PKTS * mtu * 8e12 / (v->cap_bps / v->n_senders);
    v->window_ps = pkts_ps > (double)v->rtt_ps ? (uint64_t)pkts_ps : v->rtt_ps;
    return 0;
}

void exp_conv_placed(struct exp *x, struct exp_rx *r, uint32_t bytes,
                     uint64_t now_ps)
{
    r->placed += bytes;
    if (!conv_on(x) || r < x->eps[0].rx || r >= x->eps[0].rx + x->conv.n)
        return;
    struct exp_conv_flow *f = &x->conv.f[r - x->eps[0].rx];
    if (!f->first_ps)
        f->first_ps = now_ps;
    if (r->placed >= x->c.size)
        f->done_ps = now_ps;
}

/* The newest sample at least one window before t, or -1. */
static int conv_window_start(const struct exp_conv_flow *f, uint64_t t,
                             uint64_t w)
{
    for (int k = 1; k < f->n; k++) {
        int i = (f->head - 1 - k + 2 * EXP_CONV_RING) % EXP_CONV_RING;
        if (f->t[i] + w <= t)
            return i;
    }
    return -1;
}

static void conv_push(struct exp_conv_flow *f, uint64_t t, uint64_t b)
{
    f->t[f->head] = t;
    f->b[f->head] = b;
    f->head = (f->head + 1) % EXP_CONV_RING;
    f->n += f->n < EXP_CONV_RING;
}

/* Judges one sender's window ending at t against share (bit/s). */
static void conv_judge(struct exp_conv_flow *f, uint64_t t, uint64_t w,
                       double share)
{
    int i = conv_window_start(f, t, w);
    if (i < 0 || !f->first_ps || f->t[i] < f->first_ps ||
        (f->done_ps && f->done_ps <= t))
        return; /* from before its first byte, or to after its last */
    int now = (f->head - 1 + EXP_CONV_RING) % EXP_CONV_RING;
    double bps = (double)(f->b[now] - f->b[i]) * 8e12 / (double)(t - f->t[i]);
    if (bps < (1 - CONV_BAND) * share || bps > (1 + CONV_BAND) * share)
        f->bad_ps = t;
}

static void conv_drops(struct exp *x, uint64_t t)
{
    struct exp_conv *v = &x->conv;
    if (v->n_drops == v->cap_drops) {
        int cap = v->cap_drops ? 2 * v->cap_drops : 1024;
        uint64_t *a = realloc(v->drop_t, (size_t)cap * sizeof(*a));
        if (a)
            v->drop_t = a;
        uint64_t *b = a ? realloc(v->drops, (size_t)cap * sizeof(*b)) : NULL;
        if (!b)
            return; /* out of memory: drops after convergence unknown */
        v->drops = b;
        v->cap_drops = cap;
    }
    struct mroce_sim_pool_counters pc;
    mroce_sim_pool_get_counters(mroce_sim_topo_pool(x->t), &pc);
    v->drop_t[v->n_drops] = t;
    v->drops[v->n_drops++] = pc.dropped_total;
}

void exp_conv_tick(struct exp *x, uint64_t t_ps)
{
    struct exp_conv *v = &x->conv;
    if (!conv_on(x))
        return;
    int active = 0;
    for (int k = 0; k < v->n; k++) {
        struct exp_rx *r = &x->eps[0].rx[k];
        active += !r->victim && r->placed < x->c.size;
        conv_push(&v->f[k], t_ps, r->placed);
    }
    for (int k = 0; k < v->n && active == v->n_senders; k++)
        if (!x->eps[0].rx[k].victim)
            conv_judge(&v->f[k], t_ps, v->window_ps,
                       v->cap_bps / (active ? active : 1));
    conv_drops(x, t_ps);
}

/* The slowest sender's convergence time, and when it was. */
static uint64_t conv_slowest(const struct exp *x, uint64_t *at)
{
    const struct exp_conv *v = &x->conv;
    uint64_t worst = 0;
    *at = 0;
    for (int k = 0; k < v->n; k++) {
        const struct exp_conv_flow *f = &v->f[k];
        if (x->eps[0].rx[k].victim || !f->first_ps)
            continue;
        uint64_t end = f->bad_ps > f->first_ps ? f->bad_ps : f->first_ps;
        worst = end - f->first_ps > worst ? end - f->first_ps : worst;
        *at = end > *at ? end : *at;
    }
    return worst;
}

static int conv_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Host 0's leaf queue after `at`: its deepest sample, and its median
 * sample (the queue that stands once the first burst has drained). */
static void conv_queue(struct mroce_sim_exp_result *r, uint64_t at)
{
    uint64_t *q = malloc(sizeof(*q) * (size_t)(r->n_samples + 1));
    int n = 0;
    r->queue_after_conv_bytes = 0;
    r->queue_median_after_conv_bytes = 0;
    for (int i = 0; q && i < r->n_samples; i++)
        if (r->samples[i].t_ps > at)
            q[n++] = r->samples[i].q_dst_bytes;
    if (!q)
        r->queue_after_conv_bytes = r->queue_median_after_conv_bytes = -1;
    else if (n) {
        qsort(q, (size_t)n, sizeof(*q), conv_cmp_u64);
        r->queue_after_conv_bytes = (int64_t)q[n - 1];
        r->queue_median_after_conv_bytes = (int64_t)q[n / 2];
    }
    free(q);
}

static void conv_after(struct exp *x, uint64_t at)
{
    struct mroce_sim_exp_result *r = x->res;
    const struct exp_conv *v = &x->conv;
    conv_queue(r, at);
    uint64_t before = 0;
    for (int i = 0; i < v->n_drops && v->drop_t[i] <= at; i++)
        before = v->drops[i];
    r->drops_after_conv =
        v->n_drops ? (int64_t)(v->drops[v->n_drops - 1] - before) : -1;
}

void exp_conv_finish(struct exp *x)
{
    struct mroce_sim_exp_result *r = x->res;
    struct exp_conv *v = &x->conv;
    r->converge_rtts = -1;
    r->queue_after_conv_bytes = r->drops_after_conv = -1;
    r->queue_median_after_conv_bytes = -1;
    r->bdp_bytes = -1;
    if (conv_on(x) && v->rtt_ps) {
        uint64_t at;
        r->converge_rtts = (double)conv_slowest(x, &at) / (double)v->rtt_ps;
        r->conv_window_rtts = (double)v->window_ps / (double)v->rtt_ps;
        r->base_rtt_ps = v->rtt_ps;
        r->bdp_bytes = v->cap_bps / 8 * (double)v->rtt_ps / 1e12;
        conv_after(x, at);
    }
    free(v->f);
    free(v->drop_t);
    free(v->drops);
    memset(v, 0, sizeof(*v));
}
