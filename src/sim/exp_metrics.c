/* Experiments: the health, fairness and recovery metrics of a finished
 * run (metrics.md; definitions in docs/sim.md "Health metrics" and
 * "Recovery"). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce.h>

#include "sim/exp_int.h"
#include "sim/link.h"
#include "sim/topo.h"

/* Recovery: throughput smoothed over this trailing window (two ring
 * steps of a 64-rank all-reduce at 4 MiB) must stay at or above this
 * fraction of the target. */
#define EXP_SMOOTH_PS (10 * EXP_US)
#define EXP_RECOVERED 0.9

static double exp_ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

/* ---- MMR ---- */

/* Per leaf, its uplinks in every plane are one equal-cost group; the
 * byte-weighted mean of the groups' max/mean, sum_l n_l max_l / sum_l
 * bytes_l, so a leaf that carries only acknowledgements weighs little.
 * A link that carried nothing and is down at the end was down all run
 * and is left out. 0 if no bytes crossed a spine. */
static double exp_mmr(struct exp *x)
{
    int leaves = x->c.hosts / x->c.hosts_per_leaf;
    uint64_t *max = calloc((size_t)leaves, sizeof(*max));
    uint64_t *n = calloc((size_t)leaves, sizeof(*n));
    double num = 0, den = 0;
    for (int i = 0; max && n && i < mroce_sim_topo_n_links(x->t); i++) {
        const struct mroce_sim_link_info *li =
            mroce_sim_topo_link_info(x->t, i);
        struct mroce_sim_link_counters lc;
        if (li->kind != MROCE_SIM_LINK_SPINE_UP)
            continue;
        mroce_sim_link_get_counters(li->link, &lc);
        if (!lc.rx_bytes && !mroce_sim_link_is_up(li->link))
            continue;
        n[li->leaf]++;
        max[li->leaf] =
            lc.rx_bytes > max[li->leaf] ? lc.rx_bytes : max[li->leaf];
        den += (double)lc.rx_bytes;
    }
    for (int l = 0; max && n && l < leaves; l++)
        num += (double)n[l] * (double)max[l];
    free(max);
    free(n);
    return den > 0 ? num / den : 0.0;
}

/* ---- Fairness ---- */

static double exp_tput(const struct mroce_sim_exp_flow *p, uint64_t size)
{
    return p->completed && p->fct_ps ? (double)size / (double)p->fct_ps : 0.0;
}

/* Jain's index over size/FCT of every flow but the victim; a flow that
 * did not complete counts 0. 0 for collectives. */
static double exp_jain(struct exp *x)
{
    const struct mroce_sim_exp_result *r = x->res;
    double sum = 0, sum2 = 0;
    int n = 0;
    for (int i = 0; !exp_is_coll(x->c.workload) && i < r->n_flows; i++) {
        if (r->flows[i].victim)
            continue;
        double v = exp_tput(&r->flows[i], x->c.size);
        sum += v;
        sum2 += v * v;
        n++;
    }
    return sum2 > 0 ? sum * sum / (n * sum2) : 0.0;
}

/* The victim's throughput as a fraction of what it gets alone on the
 * idle fabric at line rate (its ideal FCT / its FCT); -1 without one. */
static double exp_victim(struct exp *x)
{
    const struct mroce_sim_exp_result *r = x->res;
    for (int i = 0; i < r->n_flows; i++) {
        const struct mroce_sim_exp_flow *p = &r->flows[i];
        if (p->victim)
            return p->completed ? exp_ratio(p->ideal_ps, p->fct_ps) : 0.0;
    }
    return -1.0;
}

static int exp_p95(struct exp *x)
{
    struct mroce_sim_exp_result *r = x->res;
    double *v = malloc(((size_t)r->n_samples + 1) * sizeof(*v));
    if (!v)
        return exp_fail(x, MROCE_ENOMEM, "out of memory");
    for (int i = 0; i < r->n_samples; i++)
        v[i] = (double)r->samples[i].qbytes;
    r->p95_qbytes = (uint64_t)mroce_sim_exp_percentile(v, r->n_samples, 95);
    free(v);
    return 0;
}

/* ---- Recovery: the capacity the faults leave ---- */

enum { EXP_CH_LINK, EXP_CH_RATE, EXP_CH_PLANE };

/* One scheduled change of the fabric. */
struct exp_change {
    uint64_t t;
    int kind, id; /* link id or plane */
    double val;   /* rate fraction; plane: 1 up, 0 down */
};

/* The fluid model: resources (each host's uplinks and downlinks, each
 * leaf's uplinks and downlinks over all planes) with a capacity in host
 * line rates; the workload as pairs (sender, receiver, rate in line
 * rates) and their demand on the resources. */
struct exp_cap {
    int n_res, n_links, n_ch, n_pairs, cap_pairs;
    double *dem, *cap, *up, *frac; /* per resource; per link */
    int *ps, *pd;                  /* per pair */
    double *pw;
    struct exp_change ch[4 * MROCE_SIM_EXP_MAX_FAULTS];
    double base;                             /* the fluid bound, no change */
    double fv[4 * MROCE_SIM_EXP_MAX_FAULTS]; /* after changes 0..i */
};

static int exp_res_of(struct exp *x, const struct mroce_sim_link_info *li)
{
    int n = x->c.hosts, leaves = n / x->c.hosts_per_leaf;
    switch (li->kind) {
    case MROCE_SIM_LINK_HOST_UP:
        return li->host;
    case MROCE_SIM_LINK_HOST_DOWN:
        return n + li->host;
    case MROCE_SIM_LINK_SPINE_UP:
        return 2 * n + li->leaf;
    case MROCE_SIM_LINK_SPINE_DOWN:
        return 2 * n + leaves + li->leaf;
    default: /* a fat-tree's core tier: not a resource of the bound */
        return -1;
    }
}

/* The resources a pair crosses: sender's uplinks, receiver's
 * downlinks, and across leaves both leaves' spine links. */
static int exp_pair_res(struct exp *x, int s, int d, int *res)
{
    int n = x->c.hosts, hpl = x->c.hosts_per_leaf, leaves = n / hpl;
    res[0] = s;
    res[1] = n + d;
    if (s / hpl == d / hpl)
        return 2;
    res[2] = 2 * n + s / hpl;
    res[3] = 2 * n + leaves + d / hpl;
    return 4;
}

static int exp_add_pair(struct exp *x, struct exp_cap *k, int s, int d,
                        double w)
{
    if (k->n_pairs == k->cap_pairs) {
        int cap = k->cap_pairs ? 2 * k->cap_pairs : 64;
        int *ps = realloc(k->ps, (size_t)cap * sizeof(int));
        k->ps = ps ? ps : k->ps;
        int *pd = realloc(k->pd, (size_t)cap * sizeof(int));
        k->pd = pd ? pd : k->pd;
        double *pw = realloc(k->pw, (size_t)cap * sizeof(double));
        k->pw = pw ? pw : k->pw;
        if (!ps || !pd || !pw)
            return MROCE_ENOMEM;
        k->cap_pairs = cap;
    }
    k->ps[k->n_pairs] = s;
    k->pd[k->n_pairs] = d;
    k->pw[k->n_pairs++] = w;
    int res[4], nr = exp_pair_res(x, s, d, res);
    for (int i = 0; i < nr; i++)
        k->dem[res[i]] += w;
    return 0;
}

/* Flows share their sender's and their receiver's line rate equally. */
static int exp_flow_demand(struct exp *x, struct exp_cap *k, const int *out,
                           const int *in)
{
    int err = 0;
    for (int i = 0; !err && i < x->n_flows; i++) {
        int s = x->res->flows[i].src, d = x->res->flows[i].dst;
        err = exp_add_pair(x, k, s, d, 1.0 / (out[s] > in[d] ? out[s] : in[d]));
    }
    return err;
}

static int exp_demand(struct exp *x, struct exp_cap *k)
{
    int n = x->c.hosts, err = 0;
    if (x->c.workload == MROCE_SIM_EXP_ALLTOALL) {
        for (int s = 0; s < n; s++)
            for (int d = 0; !err && d < n; d++)
                if (s != d)
                    err = exp_add_pair(x, k, s, d, 1.0 / (n - 1));
        return err;
    }
    if (exp_is_coll(x->c.workload)) { /* the rings: r -> r + 1 */
        for (int s = 0; !err && s < n; s++)
            err = exp_add_pair(x, k, s, (s + 1) % n, 1.0);
        return err;
    }
    int *out = calloc((size_t)n, sizeof(int)),
        *in = calloc((size_t)n, sizeof(int));
    err = out && in ? 0 : MROCE_ENOMEM;
    for (int i = 0; !err && i < x->n_flows; i++) {
        out[x->res->flows[i].src]++;
        in[x->res->flows[i].dst]++;
    }
    if (!err)
        err = exp_flow_demand(x, k, out, in);
    free(out);
    free(in);
    return err;
}

static void exp_change_add(struct exp_cap *k, uint64_t t, int kind, int id,
                           double val)
{
    k->ch[k->n_ch++] = (struct exp_change){t, kind, id, val};
}

/* The configured faults in time order (stable: as exp_faults scheduled
 * them). Returns the first fault instant, UINT64_MAX if none. */
static uint64_t exp_changes(struct exp *x, struct exp_cap *k)
{
    const struct mroce_sim_exp_cfg *c = &x->c;
    uint64_t first = UINT64_MAX;
    for (int i = 0; i < c->n_degrade; i++) {
        exp_change_add(k, c->degrade[i].t_ps, EXP_CH_RATE,
                       exp_link_id(x, c->degrade[i].link),
                       c->degrade[i].fraction);
        if (c->degrade[i].t_ps && c->degrade[i].t_ps < first)
            first = c->degrade[i].t_ps;
    }
    for (int i = 0; i < c->n_fail; i++) {
        exp_change_add(k, c->fail[i].t_ps, EXP_CH_LINK,
                       exp_link_id(x, c->fail[i].link), 0);
        first = c->fail[i].t_ps < first ? c->fail[i].t_ps : first;
    }
    for (int i = 0; i < c->n_fail_plane; i++) {
        const struct mroce_sim_exp_plane_fault *f = &c->fail_plane[i];
        exp_change_add(k, f->t_ps, EXP_CH_PLANE, f->plane, 0);
        if (f->up_ps)
            exp_change_add(k, f->up_ps, EXP_CH_PLANE, f->plane, 1);
        first = f->t_ps < first ? f->t_ps : first;
    }
    for (int i = 1; i < k->n_ch; i++) /* insertion sort: stable */
        for (int j = i; j > 0 && k->ch[j].t < k->ch[j - 1].t; j--) {
            struct exp_change tmp = k->ch[j];
            k->ch[j] = k->ch[j - 1];
            k->ch[j - 1] = tmp;
        }
    return first;
}

static void exp_apply(struct exp *x, struct exp_cap *k,
                      const struct exp_change *ch)
{
    if (ch->kind == EXP_CH_PLANE) {
        for (int i = 0; i < k->n_links; i++)
            if (mroce_sim_topo_link_info(x->t, i)->plane == ch->id)
                k->up[i] = ch->val;
        return;
    }
    if (ch->id < 0)
        return;
    int rev = mroce_sim_topo_link_info(x->t, ch->id)->reverse;
    double *v = ch->kind == EXP_CH_RATE ? k->frac : k->up;
    v[ch->id] = v[rev] = ch->val;
}

/* The workload's aggregate rate in the link states k->up and k->frac:
 * each pair gets its rate scaled by its tightest resource's
 * min(1, capacity / demand) (a fluid bound that shares each resource in
 * proportion to demand). */
static double exp_fluid(struct exp *x, struct exp_cap *k)
{
    memset(k->cap, 0, (size_t)k->n_res * sizeof(*k->cap));
    for (int i = 0; i < k->n_links; i++) {
        int r = exp_res_of(x, mroce_sim_topo_link_info(x->t, i));
        if (r >= 0)
            k->cap[r] += k->up[i] * k->frac[i] / x->c.planes;
    }
    double sum = 0;
    for (int p = 0; p < k->n_pairs; p++) {
        int res[4], nr = exp_pair_res(x, k->ps[p], k->pd[p], res);
        double f = 1.0;
        for (int i = 0; i < nr; i++)
            if (k->cap[res[i]] < f * k->dem[res[i]])
                f = k->cap[res[i]] / k->dem[res[i]];
        sum += k->pw[p] * f;
    }
    return sum;
}

/* The fluid bound after each change, applied in time order. */
static void exp_fluid_table(struct exp *x, struct exp_cap *k)
{
    for (int i = 0; i < k->n_links; i++)
        k->up[i] = k->frac[i] = 1.0;
    k->base = exp_fluid(x, k);
    for (int i = 0; i < k->n_ch; i++) {
        exp_apply(x, k, &k->ch[i]);
        k->fv[i] = exp_fluid(x, k);
    }
}

/* The bound with every change before t (and at t if incl) applied. */
static double exp_fluid_at(const struct exp_cap *k, uint64_t t, bool incl)
{
    double f = k->base;
    for (int i = 0;
         i < k->n_ch && (k->ch[i].t < t || (incl && k->ch[i].t == t)); i++)
        f = k->fv[i];
    return f;
}

static void exp_cap_free(struct exp_cap *k)
{
    free(k->dem);
    free(k->cap);
    free(k->up);
    free(k->frac);
    free(k->ps);
    free(k->pd);
    free(k->pw);
}

static int exp_cap_init(struct exp *x, struct exp_cap *k)
{
    int leaves = x->c.hosts / x->c.hosts_per_leaf;
    k->n_res = 2 * x->c.hosts + 2 * leaves;
    k->n_links = mroce_sim_topo_n_links(x->t);
    k->dem = calloc((size_t)k->n_res, sizeof(double));
    k->cap = calloc((size_t)k->n_res, sizeof(double));
    k->up = calloc((size_t)k->n_links, sizeof(double));
    k->frac = calloc((size_t)k->n_links, sizeof(double));
    if (!k->dem || !k->cap || !k->up || !k->frac)
        return MROCE_ENOMEM;
    return exp_demand(x, k);
}

/* ---- Recovery: the flows still at work ---- */

/* What the flows unfinished at t can deliver, in receiver line rates:
 * each sender shares its rate among its unfinished flows, each receiver
 * takes at most its line rate. Collectives: 1 (every rank works until
 * the end). */
static double exp_active(struct exp *x, uint64_t t, double *acc, int *out)
{
    if (exp_is_coll(x->c.workload))
        return 1.0;
    const struct mroce_sim_exp_result *r = x->res;
    int n = x->c.hosts;
    memset(out, 0, (size_t)n * sizeof(*out));
    memset(acc, 0, (size_t)n * sizeof(*acc));
    for (int i = 0; i < r->n_flows; i++)
        if (!r->flows[i].completed || r->flows[i].fct_ps > t)
            out[r->flows[i].src]++;
    for (int i = 0; i < r->n_flows; i++)
        if (!r->flows[i].completed || r->flows[i].fct_ps > t)
            acc[r->flows[i].dst] += 1.0 / out[r->flows[i].src];
    double d = 0;
    for (int h = 0; h < n; h++)
        d += acc[h] < 1.0 ? acc[h] : 1.0;
    return d;
}

/* ---- Recovery: the series ---- */

struct exp_series {
    const struct mroce_sim_exp_sample *s;
    int n, w;        /* samples, smoothing window in samples */
    double pre;      /* mean Gb/s before the fault */
    uint64_t t_stop; /* end of the judged part */
    double total;    /* bytes the work placed in all, if it completed;
                        0: it did not (judged to t_stop) */
};

/* Mean over the samples at or before t_f, from the second one with
 * traffic (the first is partial); 0 if no traffic before the fault. */
static double exp_pre(const struct exp_series *v, uint64_t t_f)
{
    int first = -1, n = 0;
    double sum = 0, only = 0;
    for (int i = 0; i < v->n && v->s[i].t_ps <= t_f; i++) {
        if (first < 0 && v->s[i].gbps > 0) {
            first = i;
            only = v->s[i].gbps;
            continue;
        }
        if (first >= 0) {
            sum += v->s[i].gbps;
            n++;
        }
    }
    return n ? sum / n : only;
}

/* The end of the judged part: when the first participant runs out of
 * work. Collectives: the first rank to receive its last byte; flows: the
 * first flow (victim aside) to complete. After it the aggregate falls
 * because work runs out unevenly (stragglers of ECMP collisions, ranks
 * out of step after a stall), not for lack of capacity. If work never
 * completed, the whole run is judged (with flows: to the first
 * completion). */
static uint64_t exp_t_stop(struct exp *x)
{
    const struct mroce_sim_exp_result *r = x->res;
    uint64_t t = UINT64_MAX;
    if (exp_is_coll(x->c.workload)) {
        for (int h = 0; !r->flows_failed && h < x->c.hosts; h++)
            if (x->m.last_rx && x->m.last_rx[h] && x->m.last_rx[h] < t)
                t = x->m.last_rx[h];
        return t;
    }
    for (int i = 0; i < r->n_flows; i++) {
        const struct mroce_sim_exp_flow *p = &r->flows[i];
        if (p->completed && !p->victim && p->fct_ps < t)
            t = p->fct_ps;
    }
    return t;
}

static double exp_smooth(const struct exp_series *v, int i)
{
    int lo = i - v->w + 1 < 0 ? 0 : i - v->w + 1;
    double sum = 0;
    for (int j = lo; j <= i; j++)
        sum += v->s[j].gbps;
    return sum / (i - lo + 1);
}

/* The last judged sample below target, -1 if none; sets *last to the
 * last judged sample. */
static int exp_last_bad(struct exp *x, struct exp_cap *k,
                        const struct exp_series *v, uint64_t t_f, int *last)
{
    int n = x->c.hosts, bad = -1;
    double *acc = calloc((size_t)n, sizeof(double));
    int *out = calloc((size_t)n, sizeof(int));
    if (!acc || !out) {
        free(acc);
        free(out);
        return -2;
    }
    double f0 = exp_fluid_at(k, t_f, false), d0 = exp_active(x, t_f, acc, out);
    double left = v->total; /* bytes still to place after sample i */
    for (int i = 0; i < v->n && v->s[i].t_ps <= v->t_stop; i++) {
        uint64_t dt = v->s[i].t_ps - (i ? v->s[i - 1].t_ps : 0);
        left -= v->s[i].gbps * (double)dt / 8e3;
        if (v->s[i].t_ps <= t_f)
            continue;
        double f = f0 > 0 ? exp_fluid_at(k, v->s[i].t_ps, true) / f0 : 0;
        double d = d0 > 0 ? exp_active(x, v->s[i].t_ps, acc, out) / d0 : 0;
        double target = EXP_RECOVERED * v->pre * (f < 1 ? f : 1) * d;
        /* the work left cannot fill one smoothing window at the target:
         * the rest is the job's tail, not the fault's */
        if (v->total > 0 && f > 0 &&
            left < target * (double)EXP_SMOOTH_PS / 8e3)
            break;
        *last = i;
        if (f <= 0 || exp_smooth(v, i) < target)
            bad = i;
    }
    free(acc);
    free(out);
    return bad;
}

/* docs/sim.md "Recovery". */
static int exp_recovery(struct exp *x, struct exp_cap *k)
{
    struct mroce_sim_exp_result *r = x->res;
    uint64_t t_f = exp_changes(x, k);
    r->recovery_ps = 0;
    r->fault_ps = t_f == UINT64_MAX ? 0 : t_f;
    if (t_f == UINT64_MAX)
        return 0;
    exp_fluid_table(x, k);
    uint64_t iv = x->m.interval ? x->m.interval : x->c.sample_ps;
    struct exp_series v = {.s = r->samples, .n = r->n_samples};
    v.w = (int)((EXP_SMOOTH_PS + iv / 2) / iv);
    v.w = v.w < 1 ? 1 : v.w;
    v.pre = exp_pre(&v, t_f);
    v.t_stop = exp_t_stop(x);
    bool done =
        exp_is_coll(x->c.workload) ? r->coll_verified : r->flows_failed == 0;
    v.total = done ? (double)r->placed_bytes : 0;
    if (v.pre <= 0 || v.t_stop <= t_f)
        return 0; /* no traffic before the fault, or none left after */
    int last = -1, bad = exp_last_bad(x, k, &v, t_f, &last);
    if (bad == -2)
        return exp_fail(x, MROCE_ENOMEM, "out of memory");
    if (bad >= 0)
        r->recovery_ps = bad == last ? UINT64_MAX : v.s[bad].t_ps - t_f;
    return 0;
}

int exp_metrics(struct exp *x)
{
    struct mroce_sim_exp_result *r = x->res;
    r->retx_rate = exp_ratio(r->retx_pkts, r->data_pkts);
    r->ooo_rate = exp_ratio(r->ooo_pkts, r->rx_data_pkts);
    r->ecn_fraction = exp_ratio(r->rx_ce_pkts, r->rx_data_pkts);
    r->mmr = exp_mmr(x);
    r->jain = exp_jain(x);
    r->victim_fraction = exp_victim(x);
    int err = exp_p95(x);
    if (err)
        return err;
    struct exp_cap k = {0};
    err = exp_cap_init(x, &k);
    if (!err)
        err = exp_recovery(x, &k);
    exp_cap_free(&k);
    if (err && !r->error[0])
        exp_fail(x, err, "out of memory");
    return err;
}
