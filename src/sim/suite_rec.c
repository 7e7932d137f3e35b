/* One run of the suite as a JSON record (built in the worker process)
 * and its time series files. Field names are those of results.json
 * (docs/suite.md). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/event.h"
#include "sim/exp_counters.h"
#include "sim/report.h"
#include "sim/suite_int.h"

#define US(ps) ((double)(ps) / MROCE_SIM_PS_PER_US)

void suite_run_name(const struct suite_job *j, const char *ext, char *buf,
                    size_t n)
{
    snprintf(buf, n, "%s.%s%s", j->s->id, j->t->id, ext);
}

static const char *onoff(int v)
{
    return v == MROCE_SIM_EXP_ON ? "on" : "off";
}

static void rec_faults(struct sj *cfg, const struct mroce_sim_exp_cfg *c)
{
    struct sj *a = sj_add_arr(cfg, "degrade");
    for (int i = 0; a && i < c->n_degrade; i++) {
        struct sj *o = sj_add_obj(a, NULL);
        sj_add_str(o, "link", c->degrade[i].link);
        sj_add_num(o, "fraction", c->degrade[i].fraction);
    }
    a = sj_add_arr(cfg, "fail");
    for (int i = 0; a && i < c->n_fail; i++) {
        struct sj *o = sj_add_obj(a, NULL);
        sj_add_str(o, "link", c->fail[i].link);
        sj_add_num(o, "t_us", US(c->fail[i].t_ps));
    }
    a = sj_add_arr(cfg, "fail_plane");
    for (int i = 0; a && i < c->n_fail_plane; i++) {
        struct sj *o = sj_add_obj(a, NULL);
        sj_add_int(o, "plane", c->fail_plane[i].plane);
        sj_add_num(o, "t_us", US(c->fail_plane[i].t_ps));
        sj_add_num(o, "up_us", US(c->fail_plane[i].up_ps));
    }
}

static void rec_cfg(struct sj *rec, const struct mroce_sim_exp_cfg *c)
{
    bool roce = c->transport == MROCE_TRANSPORT_ROCEV2;
    struct sj *o = sj_add_obj(rec, "config");
    if (!o)
        return;
    sj_add_int(o, "hosts", c->hosts);
    sj_add_int(o, "hosts_per_leaf", c->hosts_per_leaf);
    sj_add_int(o, "leaves", c->hosts / c->hosts_per_leaf);
    sj_add_int(o, "spines", c->spines);
    sj_add_int(o, "planes", c->planes);
    sj_add_num(o, "link_gbps", (double)c->link_bps / 1e9);
    sj_add_int(o, "mtu", c->mtu);
    if (roce)
        sj_add_int(o, "qps", c->qps);
    else
        sj_add_int(o, "paths", c->paths);
    sj_add_str(o, "pfc", onoff(c->pfc));
    sj_add_str(o, "dcqcn", roce ? onoff(c->dcqcn) : "n/a");
    sj_add_num(o, "loss", c->loss);
    sj_add_int(o, "seed", (long long)c->seed);
    sj_add_int(o, "size", (long long)c->size);
    sj_add_int(o, "iters", c->iters);
    sj_add_int(o, "channels", c->channels);
    sj_add_int(o, "senders", c->senders);
    sj_add_bool(o, "victim", c->victim != 0);
    sj_add_num(o, "reroute_us", US(c->reroute_ps));
    sj_add_str(o, "trim", onoff(c->trim));
    sj_add_int(o, "buffer_kb_per_port", (long long)(c->buf_per_port / 1024));
    sj_add_num(o, "deadline_us", US(c->deadline_ps));
    sj_add_num(o, "soft_deadline_us", US(c->soft_deadline_ps));
    sj_add_num(o, "wall_budget_s", c->wall_budget_s);
    sj_add_str(o, "topology", c->fat_k ? "fat-tree" : "leaf-spine");
    rec_faults(o, c);
}

/* A published figure for the same run (the scale suite: htsim's), with
 * where it was published. */
static void rec_ref(struct sj *rec, const struct suite_ref *r)
{
    if (!r) {
        sj_add_null(rec, "ref");
        return;
    }
    struct sj *o = sj_add_obj(rec, "ref");
    if (!o)
        return;
    sj_add_str(o, "what", "htsim NSCC (UEC htsim fork), as published");
    sj_add_num(o, "tail_fct_us", r->tail_us);
    sj_add_num(o, "min_fct_us", r->min_us);
    sj_add_num(o, "target_us", r->target_us);
    sj_add_str(o, "source", r->source);
}

struct sj *suite_rec_new(const struct suite_job *j)
{
    struct mroce_sim_exp_cfg c;
    char desc[256];
    suite_cfg(j, &c);
    suite_describe(j, &c, desc, sizeof(desc));
    struct sj *rec = sj_new(SJ_OBJ);
    if (!rec)
        return NULL;
    sj_add_str(rec, "scenario", j->s->id);
    sj_add_str(rec, "transport", j->t->id);
    sj_add_str(rec, "suite", j->o->def->name);
    sj_add_str(rec, "kind", suite_kind_str(j->s->kind));
    if (j->s->base)
        sj_add_str(rec, "base", j->s->base);
    else
        sj_add_null(rec, "base");
    sj_add_str(rec, "workload", mroce_sim_exp_workload_str(c.workload));
    sj_add_str(rec, "description", desc);
    sj_add_str(rec, "status", "error");
    sj_add_str(rec, "why", "not run");
    rec_cfg(rec, &c);
    rec_ref(rec, suite_ref_find(j->o->def, j->s->id, j->t->id));
    return rec;
}

void suite_rec_status(struct sj *rec, const char *status, const char *why)
{
    sj_set_str(rec, "status", status);
    sj_set_str(rec, "why", why);
}

/* ---- Results ---- */

static bool is_coll(const struct mroce_sim_exp_result *r)
{
    return r->cfg.workload >= MROCE_SIM_EXP_ALLREDUCE;
}

static void rec_num_or_null(struct sj *o, const char *key, bool ok, double v)
{
    if (ok)
        sj_add_num(o, key, v);
    else
        sj_add_null(o, key);
}

static void rec_pct(struct sj *rec, const char *key,
                    const struct mroce_sim_exp_pct *p, bool ok)
{
    struct sj *o = sj_add_obj(rec, key);
    if (!o)
        return;
    rec_num_or_null(o, "p50", ok, p->p50);
    rec_num_or_null(o, "p99", ok, p->p99);
    rec_num_or_null(o, "max", ok, p->max);
}

/* The ideal as metrics.md writes it, with this run's numbers. */
static void rec_formula(struct sj *rec, const struct mroce_sim_exp_result *r)
{
    char f[160], v[320];
    double n = r->cfg.hosts, b = r->line_gbps, a = US(r->alpha_ps);
    double s = (double)r->coll_bytes;
    double c = r->cfg.channels > 0 ? r->cfg.channels : 1;
    bool ar = r->cfg.workload == MROCE_SIM_EXP_ALLREDUCE;
    if (ar || r->cfg.workload == MROCE_SIM_EXP_ALLGATHER) {
        /* docs/sim.md: a ring of k steps over C channels; with C = 1 it is
         * k*alpha + factor*S/(eta*B), metrics.md's formula */
        const char *k = ar ? "2(N-1)" : "(N-1)";
        snprintf(f, sizeof(f),
                 "max(%s*(alpha + S/(N*C)/(eta*B)), %s/N * S/(eta*B)), "
                 "C channels",
                 k, k);
        double steps = ar ? 2 * (n - 1) : n - 1;
        snprintf(v, sizeof(v),
                 "max(%g * (%.6f us + %.0f B/(%g*%g) / (%.6f * %g Gb/s)), "
                 "%g/%g * %.0f B / (%.6f * %g Gb/s)) = %.6f us",
                 steps, a, s, n, c, r->eta, b, steps, n, s, r->eta, b,
                 US(r->ideal_ps));
    } else if (r->cfg.workload == MROCE_SIM_EXP_ALLTOALL) {
        double h = r->cfg.hosts_per_leaf, u = r->cfg.spines;
        snprintf(f, sizeof(f),
                 "max((N-1)/N * S/(eta*B) + alpha, o*(N-h)/N * S/(eta*B)), "
                 "o = h/u");
        snprintf(v, sizeof(v),
                 "max(%g/%g * %.0f B / (%.6f * %g Gb/s) + %.6f us, "
                 "%g/%g * %g/%g * %.0f B / (%.6f * %g Gb/s)) = %.6f us",
                 n - 1, n, s, r->eta, b, a, h, u, n - h, n, s, r->eta, b,
                 US(r->ideal_ps));
    } else {
        snprintf(f, sizeof(f),
                 "one flow of S alone, host 0 -> far leaf: bytes on wire/B + "
                 "base latency + store and forward");
        snprintf(v, sizeof(v), "S = %" PRIu64 " B: %.6f us", r->cfg.size,
                 US(r->ideal_ps));
    }
    sj_add_str(rec, "ideal_formula", f);
    sj_add_str(rec, "ideal_with_values", v);
}

static uint64_t rec_min_fct(const struct mroce_sim_exp_result *r)
{
    uint64_t m = UINT64_MAX;
    for (int i = 0; i < r->n_flows; i++)
        if (r->flows[i].completed && r->flows[i].fct_ps < m)
            m = r->flows[i].fct_ps;
    return m == UINT64_MAX ? 0 : m;
}

static void rec_bw(struct sj *rec, const struct mroce_sim_exp_result *r,
                   bool ok)
{
    bool coll = is_coll(r);
    rec_num_or_null(rec, "busbw_gbps", ok && coll, r->busbw_gbps);
    rec_num_or_null(rec, "ideal_busbw_gbps", coll, r->ideal_busbw_gbps);
    rec_num_or_null(rec, "fraction_of_ideal", ok, r->fraction_of_ideal);
    rec_num_or_null(rec, "jct_us", ok, US(r->jct_ps));
    sj_add_num(rec, "ideal_us", US(r->ideal_ps));
    rec_num_or_null(rec, "jct_ratio", ok && r->ideal_ps,
                    r->ideal_ps ? (double)r->jct_ps / r->ideal_ps : 0);
    rec_num_or_null(rec, "busbw_vs_ideal", ok && coll && r->ideal_busbw_gbps,
                    r->ideal_busbw_gbps ? r->busbw_gbps / r->ideal_busbw_gbps
                                        : 0);
    rec_num_or_null(rec, "algbw_gbps", ok && coll, r->algbw_gbps);
    sj_add_num(rec, "eta", r->eta);
    sj_add_num(rec, "eta_measured", r->eta_measured);
    sj_add_num(rec, "hdr_bytes", r->hdr_bytes);
    sj_add_num(rec, "alpha_us", US(r->alpha_ps));
    sj_add_num(rec, "line_gbps", r->line_gbps);
    sj_add_int(rec, "coll_bytes", (long long)r->coll_bytes);
    rec_formula(rec, r);
    /* a run stopped at the deadline (or out of wall budget past the soft
     * one): its JCT is above, its busbw below */
    bool cut = !ok && (r->end_ps >= r->cfg.deadline_ps || r->wall_cut);
    rec_num_or_null(rec, "jct_us_above", cut, US(r->end_ps));
    rec_num_or_null(rec, "busbw_gbps_below", cut && coll,
                    r->ideal_busbw_gbps * (double)r->ideal_ps / r->end_ps);
    bool flows = !coll && r->flows_completed > 0;
    rec_pct(rec, "fct_us", &r->fct_us, flows);
    rec_pct(rec, "fct_slowdown", &r->slowdown, flows);
    rec_num_or_null(rec, "tail_fct_us", flows && ok, r->fct_us.max);
    rec_num_or_null(rec, "min_fct_us", flows, US(rec_min_fct(r)));
}

static void rec_drop(void *ud, const char *name, uint64_t v)
{
    sj_add_int(ud, name, (long long)v);
}

/* The endpoints' ACKs per data packet and drops by reason (only those
 * that happened; sim/exp_counters.h). */
static void rec_endpoints(struct sj *rec, const struct mroce_sim_exp_result *r)
{
    const struct mroce_conn_counters *k = &r->conn_cnt;
    rec_num_or_null(rec, "acks_per_data_pkt", k->tx_data_pkts > 0,
                    (double)k->tx_acks / (double)k->tx_data_pkts);
    struct sj *d = sj_add_obj(rec, "endpoint_drops");
    if (d)
        sj_add_int(d, "total", (long long)mroce_sim_cnt_drops(r, rec_drop, d));
}

static void rec_health(struct sj *rec, const struct mroce_sim_exp_result *r)
{
    bool coll = is_coll(r);
    sj_add_int(rec, "data_pkts", (long long)r->data_pkts);
    sj_add_int(rec, "retx_pkts", (long long)r->retx_pkts);
    sj_add_int(rec, "timeouts", (long long)r->timeouts);
    struct sj *l = sj_add_obj(rec, "lost_by_rule");
    if (l) {
        sj_add_int(l, "sack", (long long)r->lost_by.sack);
        sj_add_int(l, "rack", (long long)r->lost_by.rack);
        sj_add_int(l, "pto", (long long)r->lost_by.pto);
        sj_add_int(l, "rto", (long long)r->lost_by.rto);
        sj_add_int(l, "rnr", (long long)r->lost_by.rnr);
    }
    sj_add_num(rec, "retx_rate", r->retx_rate);
    sj_add_num(rec, "ooo_rate", r->ooo_rate);
    sj_add_num(rec, "ecn_fraction", r->ecn_fraction);
    sj_add_int(rec, "ecn_marks", (long long)r->ecn_marks);
    sj_add_int(rec, "pfc_pauses", (long long)r->pfc_pauses);
    sj_add_num(rec, "pfc_pause_us", US(r->pfc_pause_ps));
    struct sj *d = sj_add_obj(rec, "drops");
    if (d) {
        sj_add_int(d, "total", (long long)r->drops);
        for (int i = 0; i < MROCE_SIM_DROP_N; i++)
            sj_add_int(d, mroce_sim_drop_str(i), (long long)r->drop[i]);
    }
    rec_endpoints(rec, r);
    sj_add_num(rec, "mmr", r->mmr);
    rec_num_or_null(rec, "jain", !coll, r->jain);
    rec_num_or_null(rec, "victim_fraction", r->victim_fraction >= 0,
                    r->victim_fraction);
    bool conv = r->converge_rtts >= 0;
    rec_num_or_null(rec, "converge_rtts", conv, r->converge_rtts);
    rec_num_or_null(rec, "queue_after_convergence_bdp",
                    conv && r->queue_after_conv_bytes >= 0,
                    (double)r->queue_after_conv_bytes / r->bdp_bytes);
    rec_num_or_null(rec, "queue_median_after_convergence_bdp",
                    conv && r->queue_median_after_conv_bytes >= 0,
                    (double)r->queue_median_after_conv_bytes / r->bdp_bytes);
    rec_num_or_null(rec, "drops_after_convergence",
                    conv && r->drops_after_conv >= 0,
                    (double)r->drops_after_conv);
    sj_add_int(rec, "max_queue_bytes", (long long)r->max_qbytes);
    sj_add_int(rec, "p95_queue_bytes", (long long)r->p95_qbytes);
    bool fault = r->cfg.n_fail || r->cfg.n_fail_plane || r->cfg.n_degrade;
    sj_add_bool(rec, "fault", fault);
    rec_num_or_null(rec, "recovery_us",
                    fault && r->recovery_ps != UINT64_MAX &&
                        (r->cfg.n_fail || r->cfg.n_fail_plane),
                    US(r->recovery_ps));
}

static uint64_t rec_fault_ps(const struct mroce_sim_exp_cfg *c)
{
    return c->n_fail         ? c->fail[0].t_ps
           : c->n_fail_plane ? c->fail_plane[0].t_ps
                             : 0;
}

/* Mean throughput (samples) over (from, to]; -1 without samples. */
static double rec_mean_gbps(const struct mroce_sim_exp_result *r, uint64_t from,
                            uint64_t to)
{
    double sum = 0;
    int n = 0;
    for (int i = 0; i < r->n_samples; i++)
        if (r->samples[i].t_ps > from && r->samples[i].t_ps <= to) {
            sum += r->samples[i].gbps;
            n++;
        }
    return n ? sum / n : -1;
}

static void rec_series(struct sj *rec, const struct mroce_sim_exp_result *r,
                       bool ok)
{
    uint64_t end = ok ? r->jct_ps : r->end_ps, at = rec_fault_ps(&r->cfg);
    double all = rec_mean_gbps(r, 0, end);
    double after = at ? rec_mean_gbps(r, at, end) : -1;
    rec_num_or_null(rec, "mean_gbps", all >= 0, all);
    rec_num_or_null(rec, "after_fault_gbps", after >= 0, after);
    rec_num_or_null(rec, "fault_us", at != 0, US(at));
    sj_add_int(rec, "samples", r->n_samples);
    sj_add_num(rec, "sample_us", US(r->cfg.sample_ps));
}

static void rec_cost(struct sj *rec, const struct mroce_sim_exp_result *r)
{
    sj_add_num(rec, "sim_time_us", US(r->end_ps));
    sj_add_int(rec, "events", (long long)r->events);
    sj_add_num(rec, "events_per_s", r->events_per_s);
    sj_add_num(rec, "pkts_per_s", r->pkts_per_s);
    sj_add_num(rec, "setup_s", r->setup_s);
    sj_add_num(rec, "wall_s", r->wall_s);
    sj_add_num(rec, "peak_rss_mb", r->peak_rss_mb);
    if (r->insns >= 0 && r->data_pkts)
        sj_add_num(rec, "insns_per_pkt", (double)r->insns / r->data_pkts);
    else
        sj_add_null(rec, "insns_per_pkt");
    sj_add_str(rec, "payload", r->payload_free ? "free" : "real");
    sj_add_int(rec, "buffer_bytes", (long long)r->buffer_bytes);
    sj_add_bool(rec, "wall_cut", r->wall_cut);
    const struct mroce_state_bytes *e = &r->engine;
    sj_add_int(rec, "engine_state_bytes", (long long)e->total);
    sj_add_int(rec, "engine_conns", (long long)e->conns);
    sj_add_int(rec, "engine_paths", (long long)e->paths);
    /* a run cut into partitions (--ranks): how they shared the work */
    sj_add_int(rec, "ranks", r->ranks);
    sj_add_num(rec, "sync_wait_s", r->sync_wait_s);
    sj_add_int(rec, "cut_msgs", (long long)r->cut_msgs);
}

static void rec_verdict(struct sj *rec, const struct mroce_sim_exp_result *r)
{
    char why[200];
    const char *how = r->wall_cut ? " (out of wall budget past the soft "
                                    "deadline)"
                                  : "";
    if (is_coll(r) && !r->coll_verified)
        snprintf(why, sizeof(why),
                 "%d of %d collective(s) completed and verified by %.3f us "
                 "simulated%s",
                 r->iters_done, r->cfg.iters, US(r->end_ps), how);
    else if (!is_coll(r) && (r->flows_failed || r->flows_corrupt))
        snprintf(why, sizeof(why),
                 "%d of %d flows failed, %d corrupt, by %.3f us simulated%s",
                 r->flows_failed, r->n_flows, r->flows_corrupt, US(r->end_ps),
                 how);
    else {
        suite_rec_status(rec, "ok", "");
        return;
    }
    suite_rec_status(rec, "failed", why);
}

void suite_rec_result(struct sj *rec, const struct mroce_sim_exp_result *r)
{
    bool ok =
        is_coll(r) ? r->coll_verified : !r->flows_failed && !r->flows_corrupt;
    rec_verdict(rec, r);
    sj_add_int(rec, "flows", r->n_flows);
    sj_add_int(rec, "flows_completed", r->flows_completed);
    sj_add_int(rec, "flows_failed", r->flows_failed);
    sj_add_int(rec, "flows_corrupt", r->flows_corrupt);
    rec_bw(rec, r, ok);
    rec_health(rec, r);
    rec_series(rec, r, ok);
    rec_cost(rec, r);
}
