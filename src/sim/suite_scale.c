/* The scale suite's report.md, terminal summary and plots, from the
 * parsed results.json (suite_int.h): flow completion times per scenario
 * and transport next to each run's ideal and, where the UEC htsim fork
 * published the same run, htsim's NSCC figures; the targets; the runs'
 * cost and the suite's wall time. Every number printed is a results.json
 * value at a fixed number of decimals (suite_check.c verifies it). */
#define _POSIX_C_SOURCE 200809L /* stat */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/suite_int.h"

#define SC_MAX 64

struct sc {
    FILE *f;
    const struct sj *res;
    const char *dir;
    const char *sc[SC_MAX], *tr[SC_MAX];
    int n_sc, n_tr;
};

static void sc_add(const char **v, int *n, const char *s)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(v[i], s))
            return;
    if (*n < SC_MAX)
        v[(*n)++] = s;
}

static void sc_init(struct sc *m, FILE *f, const struct sj *res,
                    const char *dir)
{
    memset(m, 0, sizeof(*m));
    m->f = f;
    m->res = res;
    m->dir = dir;
    for (const struct sj *r = res->child; r; r = r->next)
        if (sj_str(r, "scenario") && sj_str(r, "transport")) {
            sc_add(m->sc, &m->n_sc, sj_str(r, "scenario"));
            sc_add(m->tr, &m->n_tr, sj_str(r, "transport"));
        }
}

bool suite_is_scale(const struct sj *results)
{
    const char *s =
        results && results->child ? sj_str(results->child, "suite") : NULL;
    return s && !strncmp(s, "scale", 5);
}

static bool ok(const struct sj *r)
{
    const char *st = sj_str(r, "status");
    return st && !strcmp(st, "ok");
}

/* ---- Tables ---- */

static void sc_head(const struct sc *m, const char *note)
{
    const struct sj *r0 = m->res->child, *c = sj_get(r0, "config");
    fprintf(m->f, "# Scale suite `%s`: MetaRoCE and RoCEv2 at scale\n\n",
            sj_str(r0, "suite"));
    fprintf(m->f,
            "Written by `mroce-sim --suite` from `results.json` in this "
            "folder: every number below is read from it. Definitions: "
            "`docs/suite.md` (\"The scale suite\").\n\n"
            "Fabric: %s hosts in %s leaves of %s, %s spines (the `_4to1` "
            "scenarios: 4:1 oversubscribed, fewer spines, see each run's "
            "config), %s Gb/s links of 1 us, MTU %s B; a random "
            "permutation (every host sends one flow and receives one); "
            "`_degraded`: cable leaf0-spine0 at 0.25 of its rate. "
            "Transports: `metaroce_Np` (N paths per connection, PFC off) "
            "and `rocev2_8qp` (PFC and DCQCN on, 8 QPs per connection). "
            "Payload: %s.\n",
            sj_fmt(sj_get(c, "hosts"), 0), sj_fmt(sj_get(c, "leaves"), 0),
            sj_fmt(sj_get(c, "hosts_per_leaf"), 0),
            sj_fmt(sj_get(c, "spines"), 0), sj_fmt(sj_get(c, "link_gbps"), 0),
            sj_fmt(sj_get(c, "mtu"), 0),
            sj_str(r0, "payload") && !strcmp(sj_str(r0, "payload"), "free")
                ? "payload-free (labels and tags, every byte accounted for)"
                : "real buffers");
    if (note && note[0])
        fprintf(m->f, "\n**Plots:** %s.\n", note);
}

static void row_head(const struct sc *m, const char *title)
{
    fprintf(m->f, "\n| %s | ideal (us) |", title);
    for (int t = 0; t < m->n_tr; t++)
        fprintf(m->f, " %s |", m->tr[t]);
    fprintf(m->f, "\n|---|---|");
    for (int t = 0; t < m->n_tr; t++)
        fprintf(m->f, "---|");
    fprintf(m->f, "\n");
}

static void fct_cell(FILE *f, const struct sj *r)
{
    if (!r)
        fprintf(f, " — |");
    else if (!ok(r) && sj_has_num(r, "jct_us_above"))
        fprintf(f, " %s, > %s |", sj_str(r, "status"),
                sj_fmt(sj_get(r, "jct_us_above"), 3));
    else if (!ok(r))
        fprintf(f, " %s |", sj_str(r, "status"));
    else
        fprintf(f, " %s / %s / %s / %s |", sj_fmt(sj_get(r, "min_fct_us"), 3),
                sj_fmt(sj_path(r, "fct_us", "p50"), 3),
                sj_fmt(sj_path(r, "fct_us", "p99"), 3),
                sj_fmt(sj_get(r, "tail_fct_us"), 3));
}

static void sc_fct(const struct sc *m)
{
    fprintf(m->f,
            "\n## Flow completion times\n\nmin / p50 / p99 / max (tail) FCT "
            "in us over the flows of each run; the ideal is one flow alone "
            "between leaves (metrics.md, \"Single flow\"). A run cut short "
            "shows the bound it proves.\n");
    row_head(m, "scenario");
    for (int s = 0; s < m->n_sc; s++) {
        const struct sj *r0 = NULL;
        for (int t = 0; t < m->n_tr && !r0; t++)
            r0 = suite_find_run(m->res, m->sc[s], m->tr[t]);
        fprintf(m->f, "| %s | %s |", m->sc[s],
                sj_fmt(sj_get(r0, "ideal_us"), 3));
        for (int t = 0; t < m->n_tr; t++)
            fct_cell(m->f, suite_find_run(m->res, m->sc[s], m->tr[t]));
        fprintf(m->f, "\n");
    }
}

static void sc_ref_row(FILE *f, const struct sj *r)
{
    const struct sj *ref = sj_get(r, "ref");
    double v = sj_num(r, "tail_fct_us", 0), tgt = sj_num(ref, "target_us", 0);
    fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
            sj_str(r, "scenario"), sj_str(r, "transport"),
            ok(r) ? sj_fmt(sj_get(r, "tail_fct_us"), 3) : sj_str(r, "status"),
            sj_fmt(sj_get(ref, "tail_fct_us"), 3),
            sj_fmt(sj_get(r, "tail_vs_ref"), 3),
            sj_fmt(sj_get(r, "min_fct_us"), 3),
            sj_fmt(sj_get(ref, "min_fct_us"), 3),
            sj_fmt(sj_get(ref, "target_us"), 0),
            !ok(r)     ? "—"
            : v <= tgt ? "below"
                       : "above");
}

static void sc_refs(const struct sc *m)
{
    int n = 0;
    for (const struct sj *r = m->res->child; r; r = r->next)
        n += sj_get(r, "ref") && sj_get(r, "ref")->type == SJ_OBJ;
    if (!n)
        return;
    const struct sj *ref = NULL;
    for (const struct sj *r = m->res->child; r && !ref; r = r->next)
        if (sj_get(r, "ref") && sj_get(r, "ref")->type == SJ_OBJ)
            ref = sj_get(r, "ref");
    fprintf(m->f,
            "\n## Side by side with htsim\n\nThe same runs by %s, from "
            "`uet-htsim`'s result files (each row's file in results.json "
            "`ref.source`; htsim's `-failed 1` slows the cable of spine 0 "
            "to every leaf, where ours slows one cable, and its switches "
            "have their own queue and ECN settings). Tail = max FCT; "
            "ratio = ours / htsim's; target = the pass line htsim's own "
            "result file states.\n\n"
            "| scenario | transport | tail FCT (us) | htsim tail (us) | ratio "
            "| min FCT (us) | htsim min (us) | htsim target (us) | ours vs "
            "target |\n|---|---|---|---|---|---|---|---|---|\n",
            sj_str(ref, "what"));
    for (const struct sj *r = m->res->child; r; r = r->next)
        if (sj_get(r, "ref") && sj_get(r, "ref")->type == SJ_OBJ)
            sc_ref_row(m->f, r);
}

static void sc_health(const struct sc *m)
{
    fprintf(m->f,
            "\n## Health\n\nretransmitted / data packets, out-of-order "
            "arrivals, drops in the fabric, ECN-marked fraction, ACK packets "
            "per data packet, packets the endpoints dropped (any reason: "
            "`endpoint_drops` in results.json says which).\n\n| scenario | "
            "transport | retx | out of order | drops | ECN-marked | PFC "
            "pauses | ACKs / data packet | endpoint drops |\n"
            "|---|---|---|---|---|---|---|---|---|\n");
    for (const struct sj *r = m->res->child; r; r = r->next)
        fprintf(m->f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                sj_str(r, "scenario"), sj_str(r, "transport"),
                sj_fmt(sj_get(r, "retx_rate"), 4),
                sj_fmt(sj_get(r, "ooo_rate"), 4),
                sj_fmt(sj_path(r, "drops", "total"), 0),
                sj_fmt(sj_get(r, "ecn_fraction"), 4),
                sj_fmt(sj_get(r, "pfc_pauses"), 0),
                sj_fmt(sj_get(r, "acks_per_data_pkt"), 3),
                sj_fmt(sj_path(r, "endpoint_drops", "total"), 0));
}

static void sc_runs(const struct sc *m)
{
    const struct sj *r0 = m->res->child;
    fprintf(m->f,
            "\n## Runs\n\nSimulator cost per run (wall-clock figures vary "
            "between runs and machines). The whole suite took %s s of "
            "wall time.\n\n| scenario | transport | status | events | "
            "events/s | peak RSS (MB) | setup (s) | wall (s) |\n"
            "|---|---|---|---|---|---|---|---|\n",
            sj_fmt(sj_get(r0, "suite_wall_s"), 1));
    for (const struct sj *r = m->res->child; r; r = r->next) {
        const char *why = sj_str(r, "why");
        fprintf(m->f, "| %s | %s | %s%s%s%s | %s | %s | %s | %s | %s |\n",
                sj_str(r, "scenario"), sj_str(r, "transport"),
                sj_str(r, "status"), why && why[0] ? " (" : "", why ? why : "",
                why && why[0] ? ")" : "", sj_fmt(sj_get(r, "events"), 0),
                sj_fmt(sj_get(r, "events_per_s"), 0),
                sj_fmt(sj_get(r, "peak_rss_mb"), 1),
                sj_fmt(sj_get(r, "setup_s"), 2),
                sj_fmt(sj_get(r, "wall_s"), 2));
    }
}

static void sc_plots(const struct sc *m)
{
    fprintf(m->f, "\n## Plots\n\n");
    char path[1200];
    struct stat st;
    snprintf(path, sizeof(path), "%s/plots/scale_tail_fct.svg", m->dir);
    if (stat(path, &st) == 0)
        fprintf(m->f, "- [tail FCT vs paths, with htsim's](plots/"
                      "scale_tail_fct.svg)\n");
    for (int s = 0; s < m->n_sc; s++) {
        snprintf(path, sizeof(path), "%s/plots/fct_cdf_%s.svg", m->dir,
                 m->sc[s]);
        if (stat(path, &st) == 0)
            fprintf(m->f, "- [%s: FCT CDF](plots/fct_cdf_%s.svg)\n", m->sc[s],
                    m->sc[s]);
    }
}

int suite_scale_md_write(const char *dir, const struct sj *results,
                         const char *plot_note)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/report.md", dir);
    FILE *f = fopen(path, "w");
    if (!f || !results->child) {
        if (f)
            fclose(f);
        return -1;
    }
    struct sc m;
    sc_init(&m, f, results, dir);
    sc_head(&m, plot_note);
    sc_fct(&m);
    sc_refs(&m);
    sc_health(&m);
    suite_targets_md(f, results, dir);
    sc_plots(&m);
    sc_runs(&m);
    return fclose(f) == 0 ? 0 : -1;
}

void suite_scale_summary(FILE *f, const struct sj *results)
{
    struct sc m;
    sc_init(&m, f, results, ".");
    sc_fct(&m);
    sc_refs(&m);
}

/* ---- Plots ---- */

static FILE *sc_file(const char *pdir, const char *name, const char *ext)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s/%s%s", pdir, name, ext);
    return fopen(path, "w");
}

static void sc_gp_head(FILE *f, const char *name, const char *title,
                       const char *xl, const char *yl)
{
    fprintf(f,
            "set terminal svg size 800,480 dynamic noenhanced background "
            "'#ffffff'\nset output '%s.svg'\nset title '%s'\n"
            "set xlabel '%s'\nset ylabel '%s'\nset grid\n"
            "set key outside right top\n",
            name, title, xl, yl);
}

/* The FCT CDF of every transport of one scenario, from DIR/series. */
static bool plot_cdf(const struct sc *m, const char *pdir, const char *scen)
{
    char name[160];
    snprintf(name, sizeof(name), "fct_cdf_%s", scen);
    FILE *f = NULL;
    int k = 0;
    for (int t = 0; t < m->n_tr; t++) {
        char rel[256], path[1400];
        struct stat st;
        snprintf(rel, sizeof(rel), "../series/%s.%s.fct", scen, m->tr[t]);
        snprintf(path, sizeof(path), "%s/%s", pdir, rel);
        if (stat(path, &st) != 0 || st.st_size < 16)
            continue;
        if (!f) {
            if (!(f = sc_file(pdir, name, ".gp")))
                return false;
            sc_gp_head(f, name, scen, "FCT (us)", "fraction of flows");
            fprintf(f, "plot ");
        }
        fprintf(f, "%s'%s' using 1:2 with lines lw 2 title '%s'",
                k++ ? ", " : "", rel, m->tr[t]);
    }
    if (f) {
        fprintf(f, "\n");
        fclose(f);
    }
    return f != NULL;
}

/* Tail FCT against paths for the 1 MB permutation, htsim's beside it. */
static bool plot_tail(const struct sc *m, const char *pdir)
{
    FILE *d = NULL;
    for (int t = 0; t < m->n_tr; t++) {
        const struct sj *r = suite_find_run(m->res, "perm_1mb", m->tr[t]);
        double paths = sj_num(sj_get(r, "config"), "paths", 0);
        if (!r || !paths || !sj_has_num(r, "tail_fct_us"))
            continue;
        if (!d && !(d = sc_file(pdir, "scale_tail_fct", ".dat")))
            return false;
        fprintf(d, "%g %s %s\n", paths, sj_fmt(sj_get(r, "tail_fct_us"), 3),
                sj_get(r, "ref") && sj_get(r, "ref")->type == SJ_OBJ
                    ? sj_fmt(sj_path(r, "ref", "tail_fct_us"), 3)
                    : "NaN");
    }
    if (!d)
        return false;
    fclose(d);
    FILE *f = sc_file(pdir, "scale_tail_fct", ".gp");
    if (!f)
        return false;
    sc_gp_head(f, "scale_tail_fct",
               "tail FCT of the permutation of 1,000,000-byte flows", "paths",
               "tail FCT (us)");
    fprintf(f, "set logscale x 2\nset yrange [0:*]\nplot "
               "'scale_tail_fct.dat' using 1:2 with linespoints lw 2 title "
               "'MetaRoCE (mroce-sim)', 'scale_tail_fct.dat' using 1:3 with "
               "linespoints lw 2 title 'htsim NSCC (published)'\n");
    fclose(f);
    return true;
}

static int sc_render(const char *pdir, const char *name)
{
    char cmd[1400];
    if (strchr(pdir, '\''))
        return -1;
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && gnuplot %s.gp >%s.log 2>&1 && rm -f %s.log", pdir,
             name, name, name);
    return system(cmd) == 0 ? 0 : -1;
}

int suite_scale_plots(const char *dir, const struct sj *results, char *note,
                      size_t n)
{
    char pdir[1024];
    snprintf(pdir, sizeof(pdir), "%s/plots", dir);
    note[0] = '\0';
    if (suite_mkdirs(pdir))
        return -1;
    struct sc m;
    sc_init(&m, NULL, results, dir);
    bool gp = system("command -v gnuplot >/dev/null 2>&1") == 0;
    int failed = 0;
    if (plot_tail(&m, pdir) && gp)
        failed += sc_render(pdir, "scale_tail_fct") != 0;
    for (int s = 0; s < m.n_sc; s++) {
        char name[160];
        snprintf(name, sizeof(name), "fct_cdf_%s", m.sc[s]);
        if (plot_cdf(&m, pdir, m.sc[s]) && gp)
            failed += sc_render(pdir, name) != 0;
    }
    if (!gp)
        snprintf(note, n,
                 "gnuplot is not installed: the plots were not rendered "
                 "(the scripts are in plots/*.gp)");
    else if (failed)
        snprintf(note, n, "gnuplot failed on some plots (see plots/*.log)");
    return 0;
}
