/* DCQCN (Zhu et al., SIGCOMM 2015): the notification point (NP) at the
 * receiver turns CE marks into CNPs, at most one per QP per N; the
 * reaction point (RP) at the sender cuts its rate on a CNP and recovers
 * by timer and byte counter: fast recovery, additive, hyper increase.
 * Packets of a rate-limited QP are paced (dev.c asks roce_rp_may_send). */
#include "roce/roce_int.h"

#define DEF(v, d) ((v) ? (v) : (d))

void roce_dcqcn_fill(struct roce_dcqcn_cfg *c)
{
    c->g = DEF(c->g, 1.0 / 256);
    c->alpha_timer_ns = DEF(c->alpha_timer_ns, 55000);
    c->rate_timer_ns = DEF(c->rate_timer_ns, 55000);
    c->byte_counter = DEF(c->byte_counter, 10000000);
    c->f = DEF(c->f, 5);
    c->rai_mbps = DEF(c->rai_mbps, 40);
    c->rhai_mbps = DEF(c->rhai_mbps, 400);
    c->min_rate_mbps = DEF(c->min_rate_mbps, 1);
    c->cnp_interval_ns = DEF(c->cnp_interval_ns, 50000);
}

void roce_dcqcn_cfg_mlx5(struct roce_dcqcn_cfg *c)
{
    *c = (struct roce_dcqcn_cfg){
        .g = 5.0 / 1024, /* dce_tcp_g 1019: alpha keeps 1019/1024 */
        .rate_timer_ns = 300000,
        .byte_counter = 32767,
        .f = 1,
        .rai_mbps = 5,
        .rhai_mbps = 50,
        .min_rate_mbps = 1,
        .min_dec_factor = 0.5,
    };
    roce_dcqcn_fill(c);
}

static const struct roce_dcqcn_cfg *rp_cfg(const struct roce_qp *qp)
{
    return &qp->conn->dev->attr.dcqcn_cfg;
}

static double rp_line(const struct roce_qp *qp)
{
    return qp->conn->dev->attr.link_mbps;
}

static bool rp_on(const struct roce_qp *qp)
{
    return qp->conn->dev->attr.dcqcn;
}

/* Flows start at line rate with alpha 1 (the paper's initial value). */
void roce_rp_init(struct roce_qp *qp)
{
    qp->rp = (struct dcqcn_rp){.rc = rp_line(qp),
                               .rt = rp_line(qp),
                               .alpha = 1.0,
                               .alpha_at = ROCE_NEVER,
                               .rate_at = ROCE_NEVER};
}

/* NP: a CE-marked packet arrived for this QP; a CNP goes back to the
 * sending QP unless one went less than N ago (the paper's 50 us). */
void roce_np_on_ce(struct roce_qp *qp, uint64_t now)
{
    qp->cnt.rx_ecn_ce++;
    if (!rp_on(qp))
        return;
    uint64_t n = rp_cfg(qp)->cnp_interval_ns;
    if (qp->cnp_last != ROCE_NEVER && now - qp->cnp_last < n)
        return;
    qp->cnp_last = now;
    qp->cnp_due = true;
}

static void rp_arm(struct roce_qp *qp)
{
    roce_qp_arm(qp, qp->rp.alpha_at);
    roce_qp_arm(qp, qp->rp.rate_at);
}

/* RP on a CNP: Rt = Rc, Rc *= (1 - alpha/2), alpha moves toward 1,
 * counters and timers restart (paper section 3.3, Algorithm 1). */
void roce_rp_on_cnp(struct roce_qp *qp, uint64_t now)
{
    const struct roce_dcqcn_cfg *c = rp_cfg(qp);
    struct dcqcn_rp *r = &qp->rp;
    if (!rp_on(qp) || qp->conn->state != MROCE_CONN_CONNECTED)
        return;
    double f = 1.0 - r->alpha / 2;
    if (f < c->min_dec_factor)
        f = c->min_dec_factor;
    r->rt = r->rc;
    r->rc *= f;
    if (r->rc < c->min_rate_mbps)
        r->rc = c->min_rate_mbps;
    r->alpha = (1.0 - c->g) * r->alpha + c->g;
    r->t_stage = r->bc_stage = 0;
    r->bytes = 0;
    r->limited = true;
    r->alpha_at = now + c->alpha_timer_ns;
    r->rate_at = now + c->rate_timer_ns;
    qp->cnt.rate_decreases++;
    rp_arm(qp);
}

/* One increase event: fast recovery while both stages are below F,
 * hyper increase once both passed F, additive in between. */
static void rp_increase(struct roce_qp *qp)
{
    const struct roce_dcqcn_cfg *c = rp_cfg(qp);
    struct dcqcn_rp *r = &qp->rp;
    uint32_t hi = r->t_stage > r->bc_stage ? r->t_stage : r->bc_stage;
    uint32_t lo = r->t_stage < r->bc_stage ? r->t_stage : r->bc_stage;
    if (lo > c->f)
        r->rt += c->rhai_mbps;
    else if (hi >= c->f)
        r->rt += c->rai_mbps;
    if (r->rt > rp_line(qp))
        r->rt = rp_line(qp);
    r->rc = (r->rt + r->rc) / 2;
    qp->cnt.rate_increases++;
    if (rp_line(qp) - r->rc < 1e-6 * rp_line(qp)) {
        r->rc = r->rt = rp_line(qp); /* back at line rate: stop */
        r->limited = false;
        r->alpha_at = r->rate_at = ROCE_NEVER;
    }
}

void roce_rp_on_sent(struct roce_qp *qp, uint64_t now, uint32_t bytes)
{
    struct dcqcn_rp *r = &qp->rp;
    if (!r->limited)
        return;
    double ns = (bytes + ROCE_FRAME_OVERHEAD) * 8000.0 / r->rc;
    qp->pace_at =
        (qp->pace_at > now && qp->pace_at != ROCE_NEVER ? qp->pace_at : now) +
        (uint64_t)ns;
    r->bytes += bytes;
    if (r->bytes >= rp_cfg(qp)->byte_counter) {
        r->bytes = 0;
        r->bc_stage++;
        rp_increase(qp);
    }
}

bool roce_rp_may_send(const struct roce_qp *qp, uint64_t now)
{
    return !qp->rp.limited || qp->pace_at == ROCE_NEVER || qp->pace_at <= now;
}

void roce_rp_timers(struct roce_qp *qp, uint64_t now)
{
    const struct roce_dcqcn_cfg *c = rp_cfg(qp);
    struct dcqcn_rp *r = &qp->rp;
    if (r->alpha_at <= now) {
        r->alpha *= 1.0 - c->g;
        r->alpha_at = now + c->alpha_timer_ns;
    }
    if (r->rate_at <= now) {
        r->t_stage++;
        r->rate_at = now + c->rate_timer_ns;
        rp_increase(qp);
    }
}

uint64_t roce_rp_deadline(const struct roce_qp *qp)
{
    const struct dcqcn_rp *r = &qp->rp;
    if (!r->limited)
        return ROCE_NEVER;
    return r->alpha_at < r->rate_at ? r->alpha_at : r->rate_at;
}
