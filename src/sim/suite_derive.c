/* From the runs' records to results.json: each record gets the ratios
 * to its reference run of the same transport (the lossless collective
 * for loss and faults, the 4-plane run for a plane down, fewer planes
 * for more) and the targets that concern its scenario, with the
 * measured value, the threshold and PASS/FAIL. The thresholds are issue
 * 4's "Done when" and issue 5's targets; docs/suite.md lists them. */
#include <stdio.h>
#include <string.h>

#include "sim/suite_int.h"

enum { OP_GE, OP_LE };

struct target {
    const char *id;
    const char *issue;
    int kind;    /* -1: any */
    double loss; /* SK_LOSS: this loss rate only */
    int planes;  /* SK_PLANES: this plane count only */
    const char *field;
    int op;
    double threshold;
    const char *threshold_expr;
    const char *what;
    const char *plot;
    const char *suite;     /* the suite it belongs to [headline, quick] */
    const char *scenario;  /* only this scenario [any of the kind] */
    const char *transport; /* only this transport [any] */
};

static const struct target targets[] = {
    {"lossless_busbw", "4", SK_BASE, 0, 0, "busbw_vs_ideal", OP_GE, 0.95,
     "0.95", "busbw / ideal busbw, lossless", "busbw_vs_loss_allreduce", NULL,
     NULL, NULL},
    {"loss1_keep", "4", SK_LOSS, 0.01, 0, "busbw_vs_base", OP_GE, 0.90, "0.90",
     "busbw / lossless busbw at loss 0.01", "busbw_vs_loss_allreduce", NULL,
     NULL, NULL},
    {"loss10_keep", "4", SK_LOSS, 0.1, 0, "busbw_vs_base", OP_GE, 0.60, "0.60",
     "busbw / lossless busbw at loss 0.1", "busbw_vs_loss_allreduce", NULL,
     NULL, NULL},
    {"incast_jain", "5", SK_INCAST, 0, 0, "jain", OP_GE, 0.99, "0.99",
     "Jain index over the incast senders", "incast_fct_cdf", NULL, NULL, NULL},
    {"incast_converge", "5", SK_INCAST, 0, 0, "converge_rtts", OP_LE, 3,
     "3 base RTTs",
     "slowest sender's base RTTs to within 20% of its fair share",
     "incast_victim", NULL, NULL, NULL},
    {"incast_queue", "5", SK_INCAST, 0, 0, "queue_after_convergence_bdp", OP_LE,
     1, "1 BDP", "receiver's leaf queue after convergence / BDP",
     "incast_victim", NULL, NULL, NULL},
    {"incast_drops", "5", SK_INCAST, 0, 0, "drops_after_convergence", OP_LE, 0,
     "0", "drops after convergence", "incast_victim", NULL, NULL, NULL},
    {"incast_victim", "5", SK_INCAST, 0, 0, "victim_fraction", OP_GE, 0.95,
     "0.95", "victim flow throughput / its line rate", "incast_victim", NULL,
     NULL, NULL},
    {"degraded_link", "5", SK_DEGRADED, 0, 0, "jct_vs_base", OP_LE, 1.10,
     "1.10", "all-to-all JCT / no-fault JCT", "degraded_link", NULL, NULL,
     NULL},
    {"link_down_recovery", "5", SK_LINK_DOWN, 0, 0, "recovery_us", OP_LE, 100,
     "100 us", "recovery time after the link went down (us)", "link_down", NULL,
     NULL, NULL},
    {"plane_down", "5", SK_PLANE_DOWN, 0, 0, "after_fault_vs_base", OP_GE,
     0.675, "0.9 x 3/4 = 0.675",
     "throughput after the fault / 4-plane throughput", "plane_down", NULL,
     NULL, NULL},
    {"loss1", "5", SK_LOSS, 0.01, 0, "busbw_vs_base", OP_GE, 0.92, "0.92",
     "busbw / lossless busbw at loss 0.01", "busbw_vs_loss_allreduce", NULL,
     NULL, NULL},
    {"loss10", "5", SK_LOSS, 0.1, 0, "busbw_vs_base", OP_GE, 0.65, "0.65",
     "busbw / lossless busbw at loss 0.1", "busbw_vs_loss_allreduce", NULL,
     NULL, NULL},
    {"planes8", "5", SK_PLANES, 0, 8, "busbw_vs_base", OP_GE, 1.9, "1.9",
     "busbw on 8 planes / busbw on 4 planes", "planes", NULL, NULL, NULL},
    /* issue 18: the scale suite */
    {"scale_tail_fct", "18", SK_BASE, 0, 0, "tail_fct_us", OP_LE, 31, "31 us",
     "tail FCT of the 8,192-host permutation of 1,000,000-byte flows, 64 "
     "paths (htsim NSCC: 36.2 us)",
     "scale_tail_fct", "scale", "perm_1mb", "metaroce_64p"},
    {"scale_rss", "18", -1, 0, 0, "peak_rss_mb", OP_LE, 6144, "6144 MB",
     "peak RSS of the run", NULL, "scale", NULL, NULL},
    {"scale_rss", "18", -1, 0, 0, "peak_rss_mb", OP_LE, 6144, "6144 MB",
     "peak RSS of the run", NULL, "scale-mini", NULL, NULL},
};

struct sj *suite_find_run(const struct sj *results, const char *scen,
                          const char *transport)
{
    for (struct sj *r = results ? results->child : NULL; r; r = r->next) {
        const char *s = sj_str(r, "scenario"), *t = sj_str(r, "transport");
        if (s && t && !strcmp(s, scen) && !strcmp(t, transport))
            return r;
    }
    return NULL;
}

static bool is_ok(const struct sj *rec)
{
    const char *st = sj_str(rec, "status");
    return st && strcmp(st, "ok") == 0;
}

/* num(a)/num(b) into rec[key], null when either is missing or zero. */
static void ratio(struct sj *rec, const char *key, const struct sj *a,
                  const char *ka, const struct sj *b, const char *kb)
{
    double x = sj_num(a, ka, 0), y = sj_num(b, kb, 0);
    if (is_ok(a) && is_ok(b) && sj_has_num(a, ka) && y > 0)
        sj_add_num(rec, key, x / y);
    else
        sj_add_null(rec, key);
}

static void derive_base(struct sj *rec, const struct sj *results)
{
    const char *base = sj_str(rec, "base");
    const struct sj *b =
        base ? suite_find_run(results, base, sj_str(rec, "transport")) : NULL;
    if (!b) {
        sj_add_null(rec, "base_busbw_gbps");
        sj_add_null(rec, "busbw_vs_base");
        sj_add_null(rec, "jct_vs_base");
        sj_add_null(rec, "after_fault_vs_base");
        return;
    }
    if (sj_has_num(b, "busbw_gbps"))
        sj_add_num(rec, "base_busbw_gbps", sj_num(b, "busbw_gbps", 0));
    else
        sj_add_null(rec, "base_busbw_gbps");
    ratio(rec, "busbw_vs_base", rec, "busbw_gbps", b, "busbw_gbps");
    ratio(rec, "jct_vs_base", rec, "jct_us", b, "jct_us");
    ratio(rec, "after_fault_vs_base", rec, "after_fault_gbps", b, "mean_gbps");
}

static int kind_of(const char *s)
{
    for (int k = 0; k < SK_N; k++)
        if (s && strcmp(s, suite_kind_str(k)) == 0)
            return k;
    return -1;
}

static bool str_is(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

static bool target_matches(const struct target *t, const struct sj *rec)
{
    const struct sj *c = sj_get(rec, "config");
    const char *suite = sj_str(rec, "suite");
    if (t->suite ? !str_is(t->suite, suite)
                 : !str_is(suite, "headline") && !str_is(suite, "quick"))
        return false;
    if ((t->scenario && !str_is(t->scenario, sj_str(rec, "scenario"))) ||
        (t->transport && !str_is(t->transport, sj_str(rec, "transport"))))
        return false;
    if (t->kind >= 0 && kind_of(sj_str(rec, "kind")) != t->kind)
        return false;
    if (t->loss > 0 && sj_num(c, "loss", 0) != t->loss)
        return false;
    return !t->planes || sj_num(c, "planes", 0) == t->planes;
}

static void add_target(struct sj *arr, const struct target *t,
                       const struct sj *rec)
{
    struct sj *o = sj_add_obj(arr, NULL);
    if (!o)
        return;
    sj_add_str(o, "id", t->id);
    sj_add_str(o, "issue", t->issue);
    sj_add_str(o, "what", t->what);
    sj_add_str(o, "field", t->field);
    bool has = is_ok(rec) && sj_has_num(rec, t->field);
    double v = sj_num(rec, t->field, 0);
    if (has)
        sj_add_num(o, "value", v);
    else
        sj_add_null(o, "value");
    sj_add_str(o, "op", t->op == OP_GE ? ">=" : "<=");
    sj_add_num(o, "threshold", t->threshold);
    sj_add_str(o, "threshold_expr", t->threshold_expr);
    double thr = sj_num(o, "threshold", 0);
    v = sj_num(o, "value", 0); /* as written */
    sj_add_bool(o, "pass", has && (t->op == OP_GE ? v >= thr : v <= thr));
    if (t->plot)
        sj_add_str(o, "plot", t->plot);
    else
        sj_add_null(o, "plot");
}

static void derive_targets(struct sj *rec)
{
    struct sj *arr = sj_add_arr(rec, "targets");
    for (size_t i = 0; arr && i < sizeof(targets) / sizeof(targets[0]); i++)
        if (target_matches(&targets[i], rec))
            add_target(arr, &targets[i], rec);
}

static struct sj *load(const struct suite_job *j)
{
    char name[160], path[1024], err[160];
    suite_run_name(j, ".json", name, sizeof(name));
    snprintf(path, sizeof(path), "%s/runs/%s", j->o->out, name);
    struct sj *rec = sj_parse_file(path, err, sizeof(err));
    if (rec && rec->type == SJ_OBJ)
        return rec;
    sj_free(rec);
    rec = suite_rec_new(j);
    if (rec)
        suite_rec_status(rec, "error", err);
    return rec;
}

/* Against the published figure of the same run, if any. */
static void derive_ref(struct sj *rec)
{
    const struct sj *ref = sj_get(rec, "ref");
    if (!ref || ref->type != SJ_OBJ)
        return;
    double y = sj_num(ref, "tail_fct_us", 0);
    if (is_ok(rec) && sj_has_num(rec, "tail_fct_us") && y > 0)
        sj_add_num(rec, "tail_vs_ref", sj_num(rec, "tail_fct_us", 0) / y);
    else
        sj_add_null(rec, "tail_vs_ref");
}

struct sj *suite_collect(const struct suite_job *jobs, int n, double wall_s)
{
    struct sj *results = sj_new(SJ_ARR);
    for (int i = 0; results && i < n; i++)
        sj_add(results, NULL, load(&jobs[i]));
    for (struct sj *r = results ? results->child : NULL; r; r = r->next) {
        derive_base(r, results);
        derive_ref(r);
        derive_targets(r);
        sj_add_num(r, "suite_wall_s", wall_s);
    }
    return results;
}
