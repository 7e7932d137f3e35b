/* `mroce-sim --suite ...`: parses the options, runs the jobs (suite_run.c),
 * writes results.json (suite_derive.c), then reads it back to write the
 * plots and report.md and print the table. See suite.h. */
#define _POSIX_C_SOURCE 200809L /* mkdir */
#include "sim/suite.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "sim/suite_int.h"

#define MAX_RUNS 256

int suite_mkdirs(const char *path)
{
    char buf[1024];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof(buf))
        return -1;
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p)
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0755) && errno != EEXIST)
            return -1;
        if (!c)
            return 0;
        *p = c;
    }
}

static double suite_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- Options ---- */

static void usage(void)
{
    fprintf(
        stderr,
        "usage: mroce-sim --suite headline|quick|scale|scale-mini [--out DIR] "
        "[--jobs N]\n"
        "                 [--seed S] [--only ID,ID] "
        "[--transports ID,ID]\n"
        "                 [--timeout SECONDS] [--deadline-ms MS] "
        "[--wall-budget SECONDS] [--ranks N] [--quiet]\n"
        "       mroce-sim --suite report|check --out DIR\n");
}

static int opt_value(int argc, char **argv, int *i, const char **v)
{
    if (*i + 1 >= argc)
        return -1;
    *v = argv[++*i];
    return 0;
}

static int parse_opt(struct suite_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *v;
    if (!strcmp(a, "--quiet")) {
        o->quiet = true;
        return 0;
    }
    if (opt_value(argc, argv, i, &v))
        return -1;
    char *end = NULL;
    if (!strcmp(a, "--out"))
        o->out = v;
    else if (!strcmp(a, "--only"))
        o->only = v;
    else if (!strcmp(a, "--transports"))
        o->transports = v;
    else if (!strcmp(a, "--jobs"))
        o->jobs = (int)strtol(v, &end, 10);
    else if (!strcmp(a, "--timeout"))
        o->timeout_s = strtod(v, &end);
    else if (!strcmp(a, "--deadline-ms"))
        o->deadline_ms = strtod(v, &end);
    else if (!strcmp(a, "--wall-budget"))
        o->wall_budget_s = strtod(v, &end);
    else if (!strcmp(a, "--ranks"))
        o->ranks = (int)strtol(v, &end, 10);
    else if (!strcmp(a, "--seed")) {
        o->seed = strtoull(v, &end, 0);
        o->seed_set = true;
    } else
        return -1;
    return end && (*end || end == v) ? -1 : 0;
}

static int parse(struct suite_opts *o, const char **mode, int argc, char **argv)
{
    *o = (struct suite_opts){.jobs = 2, .timeout_s = 900, .wall_budget_s = -1};
    if (argc < 3)
        return -1;
    *mode = argv[2];
    for (int i = 3; i < argc; i++)
        if (parse_opt(o, argc, argv, &i))
            return -1;
    return o->jobs >= 1 && o->deadline_ms >= 0 && o->ranks >= 0 &&
                   o->ranks <= 256
               ? 0
               : -1;
}

/* ---- Jobs ---- */

/* A rough cost for the order of start: the longest runs first keep both
 * workers busy to the end. */
static double job_cost(const struct suite_job *j)
{
    double c = (double)j->s->size *
               (j->s->workload == MROCE_SIM_EXP_INCAST ? j->s->senders : 16);
    c *= 1 + 20 * j->s->loss;
    return j->t->qps ? c : 2 * c;
}

static int cmp_cost(const void *a, const void *b)
{
    double x = job_cost(a), y = job_cost(b);
    return (x < y) - (x > y);
}

static int cmp_table(const void *a, const void *b)
{
    const struct suite_job *x = a, *y = b;
    return x->scen != y->scen ? x->scen - y->scen : x->trans - y->trans;
}

static int make_jobs(const struct suite_opts *o, struct suite_job *jobs)
{
    int n_tr = o->def->n_tr, n = 0;
    const struct suite_transport *tr = o->def->tr;
    for (int s = 0; s < o->def->n_scen; s++)
        for (int t = 0; t < n_tr; t++) {
            const struct suite_scen *sc = &o->def->scen[s];
            if ((o->only && !suite_list_has(o->only, sc->id)) ||
                (o->transports && !suite_list_has(o->transports, tr[t].id)) ||
                (sc->only && !suite_list_has(sc->only, tr[t].id)) ||
                n == MAX_RUNS)
                continue;
            jobs[n++] = (struct suite_job){.scen = s,
                                           .trans = t,
                                           .s = &o->def->scen[s],
                                           .t = &tr[t],
                                           .o = o};
        }
    qsort(jobs, (size_t)n, sizeof(*jobs), cmp_cost);
    for (int i = 0; i < n; i++) {
        jobs[i].idx = i;
        jobs[i].n = n;
    }
    return n;
}

/* ---- Output ---- */

static int count_errors(const struct sj *res)
{
    int n = 0;
    for (const struct sj *r = res->child; r; r = r->next)
        n += !strcmp(sj_str(r, "status") ? sj_str(r, "status") : "", "error");
    return n;
}

/* results.json -> plots, report.md, the table on stdout. */
static int report(const char *dir)
{
    char path[1024], err[160], note[200];
    snprintf(path, sizeof(path), "%s/results.json", dir);
    struct sj *res = sj_parse_file(path, err, sizeof(err));
    if (!res || res->type != SJ_ARR) {
        fprintf(stderr, "mroce-sim: %s: %s\n", path,
                res ? "not an array" : err);
        sj_free(res);
        return 1;
    }
    bool scale = suite_is_scale(res);
    int rc = (scale ? suite_scale_plots(dir, res, note, sizeof(note))
                    : suite_plot_all(dir, res, note, sizeof(note)))
                 ? 1
                 : 0;
    if (note[0])
        fprintf(stderr, "mroce-sim: %s\n", note);
    if (scale ? suite_scale_md_write(dir, res, note)
              : suite_md_write(dir, res, note)) {
        fprintf(stderr, "mroce-sim: cannot write %s/report.md\n", dir);
        rc = 1;
    }
    if (scale)
        suite_scale_summary(stdout, res);
    else
        suite_md_summary(stdout, res);
    printf("\n%s/results.json, %s/report.md, %s/plots/\n", dir, dir, dir);
    if (count_errors(res))
        rc = 1;
    sj_free(res);
    return rc;
}

static int run_suite(const struct suite_opts *o)
{
    static struct suite_job jobs[MAX_RUNS];
    char sub[1100];
    snprintf(sub, sizeof(sub), "%s/runs", o->out);
    int bad = suite_mkdirs(sub);
    snprintf(sub, sizeof(sub), "%s/series", o->out);
    if (bad || suite_mkdirs(sub)) {
        fprintf(stderr, "mroce-sim: cannot create %s\n", sub);
        return 1;
    }
    int n = make_jobs(o, jobs);
    if (!n) {
        fprintf(stderr, "mroce-sim: no run matches --only/--transports\n");
        return 2;
    }
    fprintf(stderr, "suite: %s, %d runs, %d at a time, into %s\n", o->def->name,
            n, o->jobs, o->out);
    double t0 = suite_now_s();
    suite_run_all(o, jobs, n);
    qsort(jobs, (size_t)n, sizeof(*jobs), cmp_table);
    struct sj *res = suite_collect(jobs, n, suite_now_s() - t0);
    snprintf(sub, sizeof(sub), "%s/results.json", o->out);
    bad = !res || sj_write_file(sub, res);
    sj_free(res);
    if (bad) {
        fprintf(stderr, "mroce-sim: cannot write %s\n", sub);
        return 1;
    }
    return report(o->out);
}

int mroce_sim_suite_main(int argc, char **argv)
{
    struct suite_opts o;
    const char *mode = NULL;
    char why[300];
    if (parse(&o, &mode, argc, argv)) {
        usage();
        return 2;
    }
    if (!strcmp(mode, "report") || !strcmp(mode, "check")) {
        if (!o.out) {
            usage();
            return 2;
        }
        if (!strcmp(mode, "report"))
            return report(o.out);
        int rc = mroce_sim_suite_check(o.out, why, sizeof(why));
        fprintf(stderr, "mroce-sim: %s: %s\n", o.out, rc ? why : "ok");
        return rc ? 1 : 0;
    }
    if (!(o.def = suite_def_find(mode))) {
        usage();
        return 2;
    }
    char out[1024];
    if (!o.out) {
        snprintf(out, sizeof(out), "build/%s", mode);
        o.out = out;
    }
    return run_suite(&o);
}
