/* A run's time series for the plots, written by the worker:
 *   DIR/series/SCENARIO.TRANSPORT.dat  t_us gbps victim_gbps qbytes
 *                                      q_dst_bytes, one sample a line;
 *   DIR/series/SCENARIO.TRANSPORT.fct  completed flows' FCTs (us),
 *                                      sorted, with their CDF (the
 *                                      incast's victim flow left out).
 * The first SERIES_FULL samples are written as they are; a longer run
 * (a RoCEv2 timeout lasts 67 ms) is summed up in at most SERIES_BINS
 * more lines (mean rates, largest queues). */
#include <stdio.h>
#include <stdlib.h>

#include "sim/event.h"
#include "sim/suite_int.h"

#define SERIES_FULL 10000
#define SERIES_BINS 2000

static void series_line(FILE *f, const struct mroce_sim_exp_sample *s, int n)
{
    double gbps = 0, victim = 0;
    uint64_t q = 0, qd = 0;
    for (int i = 0; i < n; i++) {
        gbps += s[i].gbps;
        victim += s[i].victim_gbps;
        q = s[i].qbytes > q ? s[i].qbytes : q;
        qd = s[i].q_dst_bytes > qd ? s[i].q_dst_bytes : qd;
    }
    fprintf(f, "%.6f %.3f %.3f %llu %llu\n",
            (double)s[n - 1].t_ps / MROCE_SIM_PS_PER_US, gbps / n, victim / n,
            (unsigned long long)q, (unsigned long long)qd);
}

static void series_samples(const char *path,
                           const struct mroce_sim_exp_result *r)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f, "# t_us gbps victim_gbps qbytes q_dst_bytes\n");
    int full = r->n_samples < SERIES_FULL ? r->n_samples : SERIES_FULL;
    for (int i = 0; i < full; i++)
        series_line(f, &r->samples[i], 1);
    int rest = r->n_samples - full;
    int bin = (rest + SERIES_BINS - 1) / SERIES_BINS;
    for (int i = full; i < r->n_samples; i += bin)
        series_line(f, &r->samples[i],
                    r->n_samples - i < bin ? r->n_samples - i : bin);
    fclose(f);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void series_fct(const char *path, const struct mroce_sim_exp_result *r)
{
    double *v = malloc(sizeof(*v) * (size_t)(r->n_flows + 1));
    int n = 0;
    for (int i = 0; v && i < r->n_flows; i++) {
        const struct mroce_sim_exp_flow *p = &r->flows[i];
        if (p->completed && p->fct_ps && !p->victim)
            v[n++] = (double)p->fct_ps / MROCE_SIM_PS_PER_US;
    }
    FILE *f = n ? fopen(path, "w") : NULL;
    if (f) {
        qsort(v, (size_t)n, sizeof(*v), cmp_double);
        fprintf(f, "# fct_us cdf\n");
        for (int i = 0; i < n; i++)
            fprintf(f, "%.6f %.6f\n", v[i], (double)(i + 1) / n);
        fclose(f);
    }
    free(v);
}

void suite_rec_series(const struct suite_job *j,
                      const struct mroce_sim_exp_result *r)
{
    char name[160], path[1024];
    if (r->n_samples > 0) {
        suite_run_name(j, ".dat", name, sizeof(name));
        snprintf(path, sizeof(path), "%s/series/%s", j->o->out, name);
        series_samples(path, r);
    }
    if (r->cfg.workload < MROCE_SIM_EXP_ALLREDUCE && r->n_flows > 0) {
        suite_run_name(j, ".fct", name, sizeof(name));
        snprintf(path, sizeof(path), "%s/series/%s", j->o->out, name);
        series_fct(path, r);
    }
}
