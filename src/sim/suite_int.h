/* The comparison suite's modules (suite.h is the public entry):
 *   suite_scen.c    the scenario tables (headline, quick) and transports,
 *                   one scenario + transport -> an experiment config;
 *   suite_run.c     the worker processes: one fork per run, at most
 *                   `jobs` at a time, each writing DIR/runs/ID.json;
 *   suite_rec.c     in the worker: an experiment result -> one JSON run
 *                   record and its time series (DIR/series/);
 *   suite_derive.c  the records -> results.json: cross-run ratios (vs
 *                   the lossless / no-fault / fewer-planes run) and the
 *                   targets with their thresholds;
 *   suite_md.c      report.md and the terminal table, from results.json;
 *   suite_plot.c    gnuplot scripts and SVGs, from results.json;
 *   suite_check.c   the checker: results.json parses, report.md names
 *                   every scenario and prints no number results.json
 *                   lacks.
 * Every number of the report is read back from results.json.
 */
#ifndef MROCE_SIM_SUITE_INT_H
#define MROCE_SIM_SUITE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/exp.h"
#include "sim/suite_json.h"

enum suite_kind {
    SK_BASE,       /* lossless, no fault: the reference */
    SK_LOSS,       /* end-to-end random loss */
    SK_DEGRADED,   /* one spine cable at a fraction of its rate */
    SK_LINK_DOWN,  /* one spine cable down mid-collective */
    SK_PLANE_DOWN, /* one plane down mid-collective */
    SK_INCAST,     /* N-to-1 with a victim flow */
    SK_PLANES,     /* the same all-to-all on more planes */
    SK_N
};

struct suite_scen {
    const char *id;   /* results.json "scenario": never change one */
    int kind;         /* suite_kind */
    const char *base; /* the reference scenario's id, or NULL */
    int workload;     /* MROCE_SIM_EXP_* */
    uint64_t size;    /* bytes per rank (collectives) or per flow */
    int planes;       /* [1] */
    double loss;      /* SK_LOSS */
    double degrade;   /* SK_DEGRADED: leaf0-spine0 at this fraction */
    double fault_at;  /* SK_LINK_DOWN, SK_PLANE_DOWN: the fault at this
                         fraction of the (estimated) ideal JCT */
    int senders;      /* SK_INCAST: hosts - 1 */
    uint64_t seed;    /* fixed per scenario; --seed overrides */
    int channels;     /* collective channels [1] */
    int spines;       /* overrides the suite's (oversubscribed) [0] */
    const char *only; /* comma list of the transports it runs [all] */
};

struct suite_transport {
    const char *id; /* results.json "transport" */
    int transport;  /* MROCE_TRANSPORT_* */
    int qps;        /* RoCEv2 QPs per peer pair; 0 for MetaRoCE */
    int paths;      /* MetaRoCE paths per connection [engine default] */
};

/* A published figure to print beside a run (scale suite: htsim's). */
struct suite_ref {
    const char *scenario, *transport;
    double tail_us, min_us, target_us;
    const char *source;
};

struct suite_def {
    const char *name;
    int hosts, hosts_per_leaf, spines;
    double deadline_ms;   /* simulated time limit; 0: exp's default */
    double wall_budget_s; /* past deadline_ms, wall time a run may use
                             before deadline_ms stops it; 0: none, the
                             run goes on to its end (docs/suite.md "The
                             deadline") */
    const struct suite_scen *scen;
    int n_scen;
    const struct suite_transport *tr;
    int n_tr;
    bool scale; /* flows at scale: FCT tables, refs (suite_scale.c) */
    const struct suite_ref *refs;
    int n_refs;
};

struct suite_opts {
    const struct suite_def *def;
    const char *out;
    int jobs;
    bool seed_set;
    uint64_t seed;
    const char *only;       /* comma list of scenario ids, or NULL */
    const char *transports; /* comma list of transport ids, or NULL */
    double timeout_s;       /* wall time per run */
    double deadline_ms;     /* a hard simulated deadline instead of the
                               suite's soft one; 0: none */
    double wall_budget_s;   /* --wall-budget, the suite's own if < 0 */
    int ranks;              /* each run cut into this many partitions, run
                               as threads (docs/sim.md "Parallel runs") */
    bool quiet;
};

struct suite_job {
    int idx, n;      /* run idx + 1 of n, in the order they start */
    int scen, trans; /* indices in the tables: results.json's order */
    const struct suite_scen *s;
    const struct suite_transport *t;
    const struct suite_opts *o;
};

/* suite_run.c: the memory a run needs (bytes, from above), and whether
 * it may start beside runs that need `used` within `budget` (0: none). */
uint64_t suite_job_mem(const struct suite_job *j);
bool suite_mem_fits(uint64_t used, uint64_t need, uint64_t budget);

/* suite_scen.c */
const struct suite_def *suite_def_find(const char *name);
/* The reference figure for a run, NULL if none. */
const struct suite_ref *suite_ref_find(const struct suite_def *d,
                                       const char *scen, const char *tr);
const char *suite_kind_str(int kind);
void suite_cfg(const struct suite_job *j, struct mroce_sim_exp_cfg *c);
/* Human description of a scenario with its numbers, into buf. */
/* The wall budget a run of j has past the soft deadline; 0: none. */
double suite_budget(const struct suite_job *j);
void suite_describe(const struct suite_job *j,
                    const struct mroce_sim_exp_cfg *c, char *buf, size_t n);
bool suite_list_has(const char *list, const char *id);

/* suite_rec.c */
/* A record with the scenario, transport and resolved config. */
struct sj *suite_rec_new(const struct suite_job *j);
void suite_rec_result(struct sj *rec, const struct mroce_sim_exp_result *r);
void suite_rec_status(struct sj *rec, const char *status, const char *why);
/* DIR/series/ID.dat (and .fct): written only when there is data. */
void suite_rec_series(const struct suite_job *j,
                      const struct mroce_sim_exp_result *r);
void suite_run_name(const struct suite_job *j, const char *ext, char *buf,
                    size_t n);

/* suite_run.c: runs every job; DIR/runs/ID.json for each, always. */
int suite_run_all(const struct suite_opts *o, struct suite_job *jobs, int n);

/* suite_derive.c: the run records (in the order of jobs) -> the
 * results array with cross-run fields and targets. */
struct sj *suite_collect(const struct suite_job *jobs, int n, double wall_s);

/* suite_md.c */
int suite_md_write(const char *dir, const struct sj *results,
                   const char *plot_note);
void suite_md_summary(FILE *f, const struct sj *results);

/* suite_scale.c: the scale suite's report.md, summary and plots. */
bool suite_is_scale(const struct sj *results);
int suite_scale_md_write(const char *dir, const struct sj *results,
                         const char *plot_note);
void suite_scale_summary(FILE *f, const struct sj *results);
int suite_scale_plots(const char *dir, const struct sj *results, char *note,
                      size_t n);

/* suite_read.c: the section per scenario; suite_target_md.c: the
 * section per target. */
void suite_read_all(FILE *f, const struct sj *res, const char *const *sc,
                    int n_sc, const char *const *tr, int n_tr);
void suite_targets_md(FILE *f, const struct sj *res, const char *dir);

/* suite_plot.c: renders what results.json allows; *note says why some
 * plot is missing (no gnuplot), empty if none. Returns 0 or -1. */
int suite_plot_all(const char *dir, const struct sj *results, char *note,
                   size_t n);
/* The plot files (without .svg) the report may link, in order. */
const char *const *suite_plot_names(int *n);
const char *suite_plot_title(const char *name);

/* Helpers shared by the writers (suite_md.c). */
struct sj *suite_find_run(const struct sj *results, const char *scen,
                          const char *transport);
int suite_mkdirs(const char *path);

#endif
