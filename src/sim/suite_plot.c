/* The suite's plots: a gnuplot script (and its data, from results.json
 * or the runs' series) per plot in DIR/plots/, rendered to SVG when
 * gnuplot is installed. Scenarios are found by kind, so the quick suite
 * gets the plots its scenarios allow. */
#define _POSIX_C_SOURCE 200809L /* stat */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/suite_int.h"

struct plot {
    const char *name, *title;
};

static const struct plot plots[] = {
    {"busbw_vs_loss_allreduce", "all-reduce busbw vs random loss"},
    {"busbw_vs_loss_alltoall", "all-to-all busbw vs random loss"},
    {"link_down", "all-reduce throughput through a spine cable failure"},
    {"plane_down", "all-to-all throughput through a plane failure"},
    {"degraded_link", "all-to-all throughput with a degraded spine cable"},
    {"incast_fct_cdf", "incast FCT CDF"},
    {"incast_queue", "incast: queue of the receiver leaf downlink over time"},
    {"incast_victim", "incast: victim flow throughput over time"},
    {"planes", "all-to-all busbw vs planes (400G per plane)"},
};

#define N_PLOTS ((int)(sizeof(plots) / sizeof(plots[0])))

const char *const *suite_plot_names(int *n)
{
    static const char *names[N_PLOTS];
    for (int i = 0; i < N_PLOTS; i++)
        names[i] = plots[i].name;
    *n = N_PLOTS;
    return names;
}

const char *suite_plot_title(const char *name)
{
    for (int i = 0; i < N_PLOTS; i++)
        if (strcmp(plots[i].name, name) == 0)
            return plots[i].title;
    return name;
}

struct pctx {
    const char *dir; /* DIR/plots */
    const struct sj *res;
    const char *const *tr;
    int n_tr;
};

static FILE *pfile(const struct pctx *p, const char *name, const char *ext)
{
    char path[1024];
    if (snprintf(path, sizeof(path), "%s/%s%s", p->dir, name, ext) >=
        (int)sizeof(path))
        return NULL;
    return fopen(path, "w");
}

static void gp_head(FILE *f, const char *name, const char *xl, const char *yl)
{
    fprintf(f,
            "set terminal svg size 800,480 dynamic noenhanced background "
            "'#ffffff'\n"
            "set output '%s.svg'\nset title '%s'\nset xlabel '%s'\n"
            "set ylabel '%s'\nset grid\nset key outside right top\n",
            name, suite_plot_title(name), xl, yl);
}

/* The first scenario id of a kind (and base, if given). */
static const char *scen_of(const struct pctx *p, const char *kind,
                           const char *base)
{
    for (const struct sj *r = p->res->child; r; r = r->next) {
        const char *b = sj_str(r, "base");
        if (!strcmp(sj_str(r, "kind") ? sj_str(r, "kind") : "", kind) &&
            (!base || (b && !strcmp(b, base))))
            return sj_str(r, "scenario");
    }
    return NULL;
}

static void put_num(FILE *f, const struct sj *rec, const char *key)
{
    const struct sj *v = sj_get(rec, key);
    const char *st = sj_str(rec, "status");
    if (v && v->type == SJ_NUM && st && !strcmp(st, "ok"))
        fprintf(f, " %s", v->str);
    else
        fprintf(f, " NaN");
}

/* ---- busbw vs loss, busbw vs planes: from results.json ---- */

static void gp_lines(FILE *f, const struct pctx *p, const char *dat,
                     const char *xtic)
{
    fprintf(f, "plot ");
    for (int t = 0; t < p->n_tr; t++)
        fprintf(f,
                "%s'%s' using 0:%d:xtic(%s) with linespoints lw 2 title '%s'",
                t ? ", " : "", dat, t + 2, xtic, p->tr[t]);
    fprintf(f, "\n");
}

static bool plot_loss(const struct pctx *p, const char *name, const char *base)
{
    FILE *d = scen_of(p, "loss", base) ? pfile(p, name, ".dat") : NULL;
    if (!d)
        return false;
    fprintf(d, "# loss_pct busbw_gbps per transport\n");
    for (const struct sj *r = p->res->child; r; r = r->next) {
        const char *s = sj_str(r, "scenario"), *b = sj_str(r, "base");
        bool mine =
            (s && !strcmp(s, base)) ||
            (b && !strcmp(b, base) && !strcmp(sj_str(r, "kind"), "loss"));
        if (!mine || strcmp(sj_str(r, "transport"), p->tr[0]))
            continue;
        fprintf(d, "%g", 100 * sj_num(sj_get(r, "config"), "loss", 0));
        for (int t = 0; t < p->n_tr; t++)
            put_num(d, suite_find_run(p->res, s, p->tr[t]), "busbw_gbps");
        fprintf(d, "\n");
    }
    fclose(d);
    FILE *f = pfile(p, name, ".gp");
    if (!f)
        return false;
    gp_head(f, name, "end-to-end random loss (%)", "busbw (Gb/s)");
    fprintf(f, "set yrange [0:*]\n");
    char dat[256];
    snprintf(dat, sizeof(dat), "%s.dat", name);
    gp_lines(f, p, dat, "1");
    fclose(f);
    return true;
}

static bool plot_planes(const struct pctx *p)
{
    FILE *d = scen_of(p, "planes", NULL) ? pfile(p, "planes", ".dat") : NULL;
    if (!d)
        return false;
    fprintf(d, "# planes busbw_gbps per transport\n");
    for (const struct sj *r = p->res->child; r; r = r->next) {
        const char *s = sj_str(r, "scenario");
        if (strcmp(sj_str(r, "kind"), "planes") ||
            strcmp(sj_str(r, "transport"), p->tr[0]))
            continue;
        fprintf(d, "%g", sj_num(sj_get(r, "config"), "planes", 0));
        for (int t = 0; t < p->n_tr; t++)
            put_num(d, suite_find_run(p->res, s, p->tr[t]), "busbw_gbps");
        fprintf(d, "\n");
    }
    fclose(d);
    FILE *f = pfile(p, "planes", ".gp");
    if (!f)
        return false;
    gp_head(f, "planes", "planes", "busbw (Gb/s)");
    fprintf(f, "set yrange [0:*]\n");
    gp_lines(f, p, "planes.dat", "1");
    fclose(f);
    return true;
}

/* ---- Over time: from DIR/series ---- */

static bool series_ok(const struct pctx *p, const char *scen, const char *tr,
                      const char *ext, char *rel, size_t n)
{
    char path[1200];
    struct stat st;
    snprintf(rel, n, "../series/%s.%s%s", scen, tr, ext);
    snprintf(path, sizeof(path), "%s/%s", p->dir, rel);
    return stat(path, &st) == 0 && st.st_size > 64;
}

/* x range: the runs that finished near their ideal, not a 67 ms RoCEv2
 * timeout. */
static double x_max(const struct pctx *p, const char *scen)
{
    double ideal = 0, x = 0;
    for (int t = 0; t < p->n_tr; t++) {
        const struct sj *r = suite_find_run(p->res, scen, p->tr[t]);
        ideal = sj_num(r, "ideal_us", ideal);
        double j = sj_num(r, "jct_us", 0);
        x = j > x ? j : x;
    }
    x = x > 5 * ideal ? 5 * ideal : x;
    return 1.05 * (x > 1.5 * ideal ? x : 1.5 * ideal);
}

/* The incast's ideal is one flow's, no scale for the whole incast: the
 * slowest run that finished, and a little after it (a run stopped at the
 * deadline would squeeze the others into the first pixels). */
static double x_max_ok(const struct pctx *p, const char *scen)
{
    double x = 0;
    for (int t = 0; t < p->n_tr; t++) {
        const struct sj *r = suite_find_run(p->res, scen, p->tr[t]);
        const char *st = r ? sj_str(r, "status") : NULL;
        double j = sj_num(r, "jct_us", 0);
        if (st && strcmp(st, "ok") == 0 && j > x)
            x = j;
    }
    return x > 0 ? 1.2 * x : 1.0;
}

static bool plot_time(const struct pctx *p, const char *name, const char *kind,
                      const char *ext, const char *cols, const char *yl)
{
    const char *scen = scen_of(p, kind, NULL);
    char rel[512];
    int n = 0;
    for (int t = 0; scen && t < p->n_tr; t++)
        n += series_ok(p, scen, p->tr[t], ext, rel, sizeof(rel));
    FILE *f = n ? pfile(p, name, ".gp") : NULL;
    if (!f)
        return false;
    bool over_time = strcmp(ext, ".dat") == 0;
    gp_head(f, name, over_time ? "time (us)" : "FCT (us)", yl);
    const struct sj *r0 = suite_find_run(p->res, scen, p->tr[0]);
    if (over_time)
        fprintf(f, "set xrange [0:%.3f]\n",
                strcmp(kind, "incast") ? x_max(p, scen) : x_max_ok(p, scen));
    if (sj_has_num(r0, "fault_us"))
        fprintf(f, "set arrow from %s, graph 0 to %s, graph 1 nohead dt 2\n",
                sj_get(r0, "fault_us")->str, sj_get(r0, "fault_us")->str);
    fprintf(f, "plot ");
    for (int t = 0, k = 0; t < p->n_tr; t++)
        if (series_ok(p, scen, p->tr[t], ext, rel, sizeof(rel)))
            fprintf(f, "%s'%s' using %s with lines lw 2 title '%s'",
                    k++ ? ", " : "", rel, cols, p->tr[t]);
    fprintf(f, "\n");
    fclose(f);
    return true;
}

/* ---- Rendering ---- */

static bool have_gnuplot(void)
{
    return system("command -v gnuplot >/dev/null 2>&1") == 0;
}

static int render(const struct pctx *p, const char *name)
{
    char cmd[1400];
    if (strchr(p->dir, '\''))
        return -1;
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && gnuplot %s.gp >%s.log 2>&1 && rm -f %s.log", p->dir,
             name, name, name);
    return system(cmd) == 0 ? 0 : -1;
}

static int transports_of(const struct sj *res, const char **tr, int max)
{
    int n = 0;
    for (const struct sj *r = res->child; r; r = r->next) {
        const char *t = sj_str(r, "transport");
        bool seen = false;
        for (int i = 0; t && i < n; i++)
            seen |= !strcmp(tr[i], t);
        if (t && !seen && n < max)
            tr[n++] = t;
    }
    return n;
}

static bool make_script(const struct pctx *p, int i)
{
    const char *nm = plots[i].name;
    switch (i) {
    case 0:
        return plot_loss(p, nm, "allreduce");
    case 1:
        return plot_loss(p, nm, "alltoall");
    case 2:
        return plot_time(p, nm, "link_down", ".dat", "1:2", "Gb/s delivered");
    case 3:
        return plot_time(p, nm, "plane_down", ".dat", "1:2", "Gb/s delivered");
    case 4:
        return plot_time(p, nm, "degraded_link", ".dat", "1:2",
                         "Gb/s delivered");
    case 5:
        return plot_time(p, nm, "incast", ".fct", "1:2", "fraction of flows");
    case 6:
        return plot_time(p, nm, "incast", ".dat", "1:($5/1000)", "queue (KB)");
    case 7:
        return plot_time(p, nm, "incast", ".dat", "1:3", "victim Gb/s");
    default:
        return plot_planes(p);
    }
}

int suite_plot_all(const char *dir, const struct sj *results, char *note,
                   size_t n)
{
    char pdir[1024];
    const char *tr[8];
    snprintf(pdir, sizeof(pdir), "%s/plots", dir);
    note[0] = '\0';
    if (suite_mkdirs(pdir))
        return -1;
    struct pctx p = {pdir, results, tr, transports_of(results, tr, 8)};
    bool gp = have_gnuplot();
    int failed = 0;
    for (int i = 0; p.n_tr && i < N_PLOTS; i++)
        if (make_script(&p, i) && gp)
            failed += render(&p, plots[i].name) != 0;
    if (!gp)
        snprintf(note, n,
                 "gnuplot is not installed: the plots were not rendered "
                 "(the scripts are in plots/*.gp)");
    else if (failed)
        snprintf(note, n, "gnuplot failed on some plots (see plots/*.log)");
    return 0;
}
