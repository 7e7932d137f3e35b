/* The suites' scenario tables and transports (docs/suite.md says why
 * each size). A scenario + a transport -> one experiment config. */
#include <mroce/mroce.h>
#include <stdio.h>
#include <string.h>

#include "sim/defaults.h"
#include "sim/event.h"
#include "sim/suite_int.h"

#define KIB 1024ull
#define MIB (1024ull * 1024ull)
#define AR MROCE_SIM_EXP_ALLREDUCE
#define A2A MROCE_SIM_EXP_ALLTOALL
#define INC MROCE_SIM_EXP_INCAST
#define THIRD (1.0 / 3.0)

/* 64 hosts, 4 leaves x 16, 16 spines (non-blocking), 400G, MTU 4096.
 * All-to-all 16 MiB per rank (256 KiB per peer: at 64 KiB the job is 12
 * base RTTs and one tail loss costs two, docs/suite.md); the plane
 * scenarios 64 MiB (the ideal 8-plane / 4-plane ratio is 1.91 at 16 MiB,
 * 1.98 at 64: the fixed alpha must not decide a scaling target); incast
 * 1 MiB per sender. */
static const struct suite_scen headline[] = {
    /* All-reduce as NCCL runs it on one NIC: 4 channels, 32 MiB per rank
     * (a 128 KiB chunk per channel and step); with one channel or smaller
     * chunks every step waits for any loss on the ring (docs/design.md). */
    {"allreduce", SK_BASE, NULL, AR, 32 * MIB, 1, 0, 0, 0, 0, 1, 4, 0, NULL},
    {"alltoall", SK_BASE, NULL, A2A, 16 * MIB, 1, 0, 0, 0, 0, 1, 1, 0, NULL},
    {"allreduce_loss0.1pct", SK_LOSS, "allreduce", AR, 32 * MIB, 1, 0.001, 0, 0,
     0, 1, 4, 0, NULL},
    {"allreduce_loss1pct", SK_LOSS, "allreduce", AR, 32 * MIB, 1, 0.01, 0, 0, 0,
     1, 4, 0, NULL},
    {"allreduce_loss10pct", SK_LOSS, "allreduce", AR, 32 * MIB, 1, 0.1, 0, 0, 0,
     1, 4, 0, NULL},
    {"alltoall_loss1pct", SK_LOSS, "alltoall", A2A, 16 * MIB, 1, 0.01, 0, 0, 0,
     1, 1, 0, NULL},
    {"alltoall_loss10pct", SK_LOSS, "alltoall", A2A, 16 * MIB, 1, 0.1, 0, 0, 0,
     1, 1, 0, NULL},
    {"alltoall_degraded_link", SK_DEGRADED, "alltoall", A2A, 16 * MIB, 1, 0,
     0.25, 0, 0, 1, 1, 0, NULL},
    {"allreduce_link_down", SK_LINK_DOWN, "allreduce", AR, 32 * MIB, 1, 0, 0,
     THIRD, 0, 1, 4, 0, NULL},
    {"alltoall_plane_down", SK_PLANE_DOWN, "alltoall_planes4", A2A, 64 * MIB, 4,
     0, 0, THIRD, 0, 1, 1, 0, NULL},
    {"incast_63to1", SK_INCAST, NULL, INC, 1 * MIB, 1, 0, 0, 0, 63, 1, 1, 0,
     NULL},
    {"alltoall_planes1", SK_PLANES, NULL, A2A, 64 * MIB, 1, 0, 0, 0, 0, 1, 1, 0,
     NULL},
    {"alltoall_planes4", SK_PLANES, "alltoall_planes1", A2A, 64 * MIB, 4, 0, 0,
     0, 0, 1, 1, 0, NULL},
    {"alltoall_planes8", SK_PLANES, "alltoall_planes4", A2A, 64 * MIB, 8, 0, 0,
     0, 0, 1, 1, 0, NULL},
};

/* 16 hosts, 4 leaves x 4, 4 spines: one of each kind but the planes,
 * small enough for CI (under 30 s for the three transports). */
static const struct suite_scen quick[] = {
    {"allreduce", SK_BASE, NULL, AR, 256 * KIB, 1, 0, 0, 0, 0, 1, 2, 0, NULL},
    {"alltoall", SK_BASE, NULL, A2A, 1 * MIB, 1, 0, 0, 0, 0, 1, 1, 0, NULL},
    {"allreduce_loss1pct", SK_LOSS, "allreduce", AR, 256 * KIB, 1, 0.01, 0, 0,
     0, 1, 2, 0, NULL},
    {"alltoall_loss10pct", SK_LOSS, "alltoall", A2A, 1 * MIB, 1, 0.1, 0, 0, 0,
     1, 1, 0, NULL},
    {"alltoall_degraded_link", SK_DEGRADED, "alltoall", A2A, 1 * MIB, 1, 0,
     0.25, 0, 0, 1, 1, 0, NULL},
    {"allreduce_link_down", SK_LINK_DOWN, "allreduce", AR, 256 * KIB, 1, 0, 0,
     THIRD, 0, 1, 2, 0, NULL},
    {"incast_15to1", SK_INCAST, NULL, INC, 256 * KIB, 1, 0, 0, 0, 15, 1, 1, 0,
     NULL},
};

/* The scale suite (issue 18): the UEC htsim fork's leaf_spine_8192_400g
 * built here (128 leaves x 64 hosts, 64 spines, 400G, 1 us links;
 * `_4to1`: 16 spines), a random permutation of 1,000,000- and
 * 2,000,000-byte flows as its perm_8192n_8192c_{1,2}MB matrices (every
 * host sends one flow and receives one), and one leaf-spine cable at a
 * quarter of its rate (`_degraded`). 2 MB runs only with 32 paths, as
 * htsim published them. docs/suite.md "The scale suite". */
#define MB1 1000000ull
#define MB2 2000000ull
#define PERM MROCE_SIM_EXP_PERMUTATION
#define TWO "metaroce_32p,rocev2_8qp"
#define SCALE_SCEN(id, kind, size, degrade, spines, only)                      \
    {                                                                          \
        id, kind, NULL, PERM, size, 1, 0, degrade, 0, 0, 1, 1, spines, only    \
    }

static const struct suite_scen scale[] = {
    SCALE_SCEN("perm_1mb", SK_BASE, MB1, 0, 0, NULL),
    SCALE_SCEN("perm_2mb", SK_BASE, MB2, 0, 0, TWO),
    SCALE_SCEN("perm_1mb_degraded", SK_DEGRADED, MB1, 0.25, 0, NULL),
    SCALE_SCEN("perm_2mb_degraded", SK_DEGRADED, MB2, 0.25, 0, TWO),
    SCALE_SCEN("perm_1mb_4to1", SK_BASE, MB1, 0, 16, NULL),
    SCALE_SCEN("perm_2mb_4to1", SK_BASE, MB2, 0, 16, TWO),
    SCALE_SCEN("perm_1mb_4to1_degraded", SK_DEGRADED, MB1, 0.25, 16, NULL),
    SCALE_SCEN("perm_2mb_4to1_degraded", SK_DEGRADED, MB2, 0.25, 16, TWO),
};

/* make test's end-to-end check of the same suite: 256 hosts (16 leaves x
 * 16, 16 spines; 4:1 with 4), 250,000-byte flows. */
static const struct suite_scen scale_mini[] = {
    SCALE_SCEN("perm_1mb", SK_BASE, 250000, 0, 0, NULL),
    SCALE_SCEN("perm_1mb_degraded", SK_DEGRADED, 250000, 0.25, 0, NULL),
    SCALE_SCEN("perm_1mb_4to1", SK_BASE, 250000, 0, 4, NULL),
};

static const struct suite_transport scale_tr[] = {
    {"metaroce_32p", MROCE_TRANSPORT_METAROCE, 0, 32},
    {"metaroce_64p", MROCE_TRANSPORT_METAROCE, 0, 64},
    {"metaroce_128p", MROCE_TRANSPORT_METAROCE, 0, 128},
    {"rocev2_8qp", MROCE_TRANSPORT_ROCEV2, 8, 0},
};

static const struct suite_transport scale_mini_tr[] = {
    {"metaroce_64p", MROCE_TRANSPORT_METAROCE, 0, 64},
    {"rocev2_8qp", MROCE_TRANSPORT_ROCEV2, 8, 0},
};

/* htsim's NSCC on the same runs, as published by the UEC htsim fork
 * (github.com/ultraethernet/uet-htsim, commit 40ccb05): tail and min FCT
 * (its "FCT Spread") and the pass target each result file states. Its
 * "-failed 1" sets the link of spine 0 to every leaf to 25% of its rate
 * (fat_tree_topology.cpp), where ours degrades one cable. */
#define NSCC "htsim/sim/datacenter/results/400g_nscc.txt"
#define NSCC_F "htsim/sim/datacenter/results/400g_nscc_fail1.txt"
#define NSCC_4 "htsim/sim/datacenter/results/400g_nscc_4_to_1.txt"
#define NSCC_4F "htsim/sim/datacenter/results/400g_nscc_4_to_1_fail1.txt"
static const struct suite_ref scale_refs[] = {
    {"perm_1mb", "metaroce_32p", 38.7065, 24.4542, 34, NSCC},
    {"perm_1mb", "metaroce_64p", 36.1797, 24.4555, 34, NSCC},
    {"perm_1mb", "metaroce_128p", 35.3925, 24.4568, 34, NSCC},
    {"perm_2mb", "metaroce_32p", 58.9671, 44.8644, 58, NSCC},
    {"perm_1mb_degraded", "metaroce_32p", 41.9739, 24.4935, 34, NSCC_F},
    {"perm_1mb_degraded", "metaroce_64p", 44.6124, 24.4849, 34, NSCC_F},
    {"perm_1mb_degraded", "metaroce_128p", 45.3936, 24.4862, 34, NSCC_F},
    {"perm_2mb_degraded", "metaroce_32p", 69.376, 45.0161, 58, NSCC_F},
    {"perm_1mb_4to1", "metaroce_32p", 188.805, 24.5707, 139, NSCC_4},
    {"perm_1mb_4to1", "metaroce_64p", 177.107, 24.5924, 139, NSCC_4},
    {"perm_1mb_4to1", "metaroce_128p", 188.297, 24.5921, 139, NSCC_4},
    {"perm_2mb_4to1", "metaroce_32p", 260.49, 45.0008, 235, NSCC_4},
    {"perm_1mb_4to1_degraded", "metaroce_32p", 248.433, 24.5899, 140, NSCC_4F},
    {"perm_1mb_4to1_degraded", "metaroce_64p", 236.021, 24.5758, 140, NSCC_4F},
    {"perm_1mb_4to1_degraded", "metaroce_128p", 235.252, 24.5809, 140, NSCC_4F},
    {"perm_2mb_4to1_degraded", "metaroce_32p", 396.729, 44.9726, 237, NSCC_4F},
};

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The headline stops every run at 20 ms of simulated time (62x the
 * all-reduce's ideal JCT, 224x the all-to-all's): a RoCEv2 run that waits
 * for its 67 ms ACK timeout is reported as not done by then, with the
 * bounds that follow (JCT above, busbw below), instead of simulating up
 * to 537 ms of timers at 0.02-0.1 M events/s. --deadline-ms 2000 runs
 * the experiment's default. The quick suite is small enough for it. */
/* RoCEv2 in its production configuration: PFC and DCQCN on (the
 * experiment's defaults for RoCEv2), 1 or 8 QPs per peer pair. */
static const struct suite_transport transports[] = {
    {"metaroce", MROCE_TRANSPORT_METAROCE, 0, 0},
    {"rocev2_1qp", MROCE_TRANSPORT_ROCEV2, 1, 0},
    {"rocev2_8qp", MROCE_TRANSPORT_ROCEV2, 8, 0},
};

static const struct suite_def defs[] = {
    /* headline: no wall budget, so which runs finish does not depend on
     * the machine's speed or load (every RoCEv2 run ends on its own within
     * a minute here); at scale a RoCEv2 run waiting out its timeouts to
     * 2 s simulated would take hours: 60 s */
    {"headline", 64, 16, 16, 20, 0, headline, N_OF(headline), transports,
     N_OF(transports), false, NULL, 0},
    {"quick", 16, 4, 4, 0, 0, quick, N_OF(quick), transports, N_OF(transports),
     false, NULL, 0},
    {"scale", 8192, 64, 64, 20, 60, scale, N_OF(scale), scale_tr,
     N_OF(scale_tr), true, scale_refs, N_OF(scale_refs)},
    {"scale-mini", 256, 16, 16, 20, 60, scale_mini, N_OF(scale_mini),
     scale_mini_tr, N_OF(scale_mini_tr), true, NULL, 0},
};

const struct suite_ref *suite_ref_find(const struct suite_def *d,
                                       const char *scen, const char *tr)
{
    for (int i = 0; d && i < d->n_refs; i++)
        if (!strcmp(d->refs[i].scenario, scen) &&
            !strcmp(d->refs[i].transport, tr))
            return &d->refs[i];
    return NULL;
}

const struct suite_def *suite_def_find(const char *name)
{
    for (int i = 0; i < N_OF(defs); i++)
        if (strcmp(defs[i].name, name) == 0)
            return &defs[i];
    return NULL;
}

const char *suite_kind_str(int kind)
{
    static const char *const names[SK_N] = {
        "lossless",   "loss",   "degraded_link", "link_down",
        "plane_down", "incast", "planes"};
    return kind >= 0 && kind < SK_N ? names[kind] : "?";
}

bool suite_list_has(const char *list, const char *id)
{
    size_t n = strlen(id);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, id, n) == 0)
            return true;
        p = end ? end + 1 : NULL;
    }
    return false;
}

/* The ideal JCT of metrics.md, estimated before the run to place a
 * fault: alpha from the propagation delays alone (store and forward of
 * one packet is ~1% of it), eta with the largest transport header. The
 * run reports the exact ideal (exp.c). */
static double suite_ideal_estimate_s(const struct mroce_sim_exp_cfg *c)
{
    double n = c->hosts, h = c->hosts_per_leaf, leaves = n / h;
    double eta = (double)c->mtu / (c->mtu + MROCE_SIM_TRANSPORT_HDR_MAX +
                                   MROCE_SIM_WIRE_OVERHEAD_V4);
    double bw = eta * (double)c->link_bps * c->planes / 8;
    double s = (double)c->size, delay = (double)MROCE_SIM_LINK_DELAY_PS / 1e12;
    if (c->workload == MROCE_SIM_EXP_ALLREDUCE) {
        double alpha = delay * (2 + 2 * leaves / n);
        return 2 * (n - 1) / n * s / bw + 2 * (n - 1) * alpha;
    }
    double host = (n - 1) / n * s / bw + (leaves > 1 ? 4 : 2) * delay;
    double fabric = h / c->spines * (n - h) / n * s / bw;
    return host > fabric ? host : fabric;
}

static void suite_faults(const struct suite_scen *s,
                         struct mroce_sim_exp_cfg *c)
{
    uint64_t at = (uint64_t)(s->fault_at * suite_ideal_estimate_s(c) * 1e12);
    at -= at % MROCE_SIM_PS_PER_US; /* whole microseconds */
    if (s->kind == SK_DEGRADED) {
        snprintf(c->degrade[0].link, sizeof(c->degrade[0].link),
                 "leaf0-spine0");
        c->degrade[0].fraction = s->degrade;
        c->n_degrade = 1;
    } else if (s->kind == SK_LINK_DOWN) {
        snprintf(c->fail[0].link, sizeof(c->fail[0].link), "leaf0-spine0");
        c->fail[0].t_ps = at;
        c->n_fail = 1;
    } else if (s->kind == SK_PLANE_DOWN) {
        c->fail_plane[0].plane = 1;
        c->fail_plane[0].t_ps = at;
        c->n_fail_plane = 1;
    }
}

void suite_cfg(const struct suite_job *j, struct mroce_sim_exp_cfg *c)
{
    const struct suite_def *d = j->o->def;
    const struct suite_scen *s = j->s;
    struct mroce_sim_exp_cfg in = {
        .transport = j->t->transport,
        .hosts = d->hosts,
        .hosts_per_leaf = d->hosts_per_leaf,
        .spines = s->spines ? s->spines : d->spines,
        .planes = s->planes,
        .qps = j->t->qps,
        .paths = j->t->paths,
        .loss = s->loss,
        .seed = j->o->seed_set ? j->o->seed : s->seed,
        .workload = s->workload,
        .size = s->size,
        .senders = s->senders,
        .channels = s->channels,
        .victim = s->kind == SK_INCAST,
        .ranks = j->o->ranks,
    };
    /* --deadline-ms: a hard limit; else the suite's limit is soft: a run
     * goes past it to the experiment's 2 s while within its wall budget
     * (--wall-budget; none by default: every run goes on to its end) */
    if (j->o->deadline_ms > 0) {
        in.deadline_ps = (uint64_t)(j->o->deadline_ms * 1e9);
    } else if (d->deadline_ms > 0 && suite_budget(j) > 0) {
        in.soft_deadline_ps = (uint64_t)(d->deadline_ms * 1e9);
        in.wall_budget_s = suite_budget(j);
    }
    mroce_sim_exp_cfg_resolve(&in, c);
    suite_faults(s, c);
}

double suite_budget(const struct suite_job *j)
{
    return j->o->wall_budget_s >= 0 ? j->o->wall_budget_s
                                    : j->o->def->wall_budget_s;
}

void suite_describe(const struct suite_job *j,
                    const struct mroce_sim_exp_cfg *c, char *buf, size_t n)
{
    const struct suite_scen *s = j->s;
    const char *w = mroce_sim_exp_workload_str(c->workload);
    double at = c->n_fail         ? (double)c->fail[0].t_ps / 1e6
                : c->n_fail_plane ? (double)c->fail_plane[0].t_ps / 1e6
                                  : 0;
    switch (s->kind) {
    case SK_LOSS:
        snprintf(buf, n, "%s with random loss %g on every packet", w, c->loss);
        break;
    case SK_DEGRADED:
        snprintf(buf, n, "%s with cable %s at %g of its rate", w,
                 c->degrade[0].link, c->degrade[0].fraction);
        break;
    case SK_LINK_DOWN:
        snprintf(buf, n, "%s with cable %s down at %g us, no reroute", w,
                 c->fail[0].link, at);
        break;
    case SK_PLANE_DOWN:
        snprintf(buf, n, "%s on %d planes, plane %d down at %g us", w,
                 c->planes, c->fail_plane[0].plane, at);
        break;
    case SK_INCAST:
        snprintf(buf, n,
                 "%d senders to host 0, and a victim flow from host %d to "
                 "host 1",
                 c->senders, c->hosts - 1);
        break;
    default:
        snprintf(buf, n, "%s, lossless, no fault, %d plane(s)", w, c->planes);
    }
}
