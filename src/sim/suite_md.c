/* report.md (and the terminal table) from the parsed results.json: the
 * side-by-side tables (rows scenarios, columns transports), each
 * scenario's ideal and reading, a section per target, the plots and the
 * runs' cost. Every number printed is a results.json value at a fixed
 * number of decimals (suite_check.c verifies it). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/suite_int.h"

#define MD_MAX_SCEN 64
#define MD_MAX_TR 8

struct md {
    FILE *f;
    const struct sj *res;
    const char *dir;
    const char *sc[MD_MAX_SCEN];
    int n_sc;
    const char *tr[MD_MAX_TR];
    int n_tr;
};

static void add_unique(const char **v, int *n, int max, const char *s)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(v[i], s))
            return;
    if (*n < max)
        v[(*n)++] = s;
}

static void md_init(struct md *m, FILE *f, const struct sj *res,
                    const char *dir)
{
    memset(m, 0, sizeof(*m));
    m->f = f;
    m->res = res;
    m->dir = dir;
    for (const struct sj *r = res->child; r; r = r->next) {
        const char *s = sj_str(r, "scenario"), *t = sj_str(r, "transport");
        if (s && t) {
            add_unique(m->sc, &m->n_sc, MD_MAX_SCEN, s);
            add_unique(m->tr, &m->n_tr, MD_MAX_TR, t);
        }
    }
}

static bool ok(const struct sj *rec)
{
    const char *st = sj_str(rec, "status");
    return st && !strcmp(st, "ok");
}

static void row_head(const struct md *m, const char *first, const char *extra)
{
    fprintf(m->f, "\n| %s |%s", first, extra ? extra : "");
    for (int t = 0; t < m->n_tr; t++)
        fprintf(m->f, " %s |", m->tr[t]);
    fprintf(m->f, "\n|---|%s", extra ? "---|" : "");
    for (int t = 0; t < m->n_tr; t++)
        fprintf(m->f, "---|");
    fprintf(m->f, "\n");
}

/* A cell: "A (B)" of two fields; a run not ok shows its status and, if
 * it stopped at the deadline, the bound it proves ("failed, < 0.39"). */
static void cell2(FILE *f, const struct sj *r, const char *a, int da,
                  const char *b, int db, const char *unit_b)
{
    const char *bound =
        !strcmp(a, "jct_us") ? "jct_us_above" : "busbw_gbps_below";
    if (!r)
        fprintf(f, " — |");
    else if (!ok(r) && sj_has_num(r, bound))
        fprintf(f, " %s, %s %s |", sj_str(r, "status"),
                !strcmp(a, "jct_us") ? ">" : "<", sj_fmt(sj_get(r, bound), da));
    else if (!ok(r))
        fprintf(f, " %s |", sj_str(r, "status"));
    else
        fprintf(f, " %s (%s%s) |", sj_fmt(sj_get(r, a), da),
                sj_fmt(sj_get(r, b), db), unit_b);
}

static void md_busbw(const struct md *m)
{
    fprintf(m->f, "\n## Bus bandwidth\n\nbusbw in Gb/s and, in brackets, "
                  "`fraction_of_ideal` = busbw / (eta*B) (metrics.md); the "
                  "ideal busbw is the busbw at the ideal JCT (RoCEv2's "
                  "smaller header makes its own ideal slightly higher: see "
                  "the scenarios). A run stopped at the deadline shows the "
                  "bound it proves.\n");
    char extra[80];
    snprintf(extra, sizeof(extra), " ideal busbw (`%s`) |", m->tr[0]);
    row_head(m, "scenario", extra);
    for (int s = 0; s < m->n_sc; s++) {
        const struct sj *r0 = suite_find_run(m->res, m->sc[s], m->tr[0]);
        if (!sj_has_num(r0, "ideal_busbw_gbps"))
            continue;
        fprintf(m->f, "| %s | %s |", m->sc[s],
                sj_fmt(sj_get(r0, "ideal_busbw_gbps"), 2));
        for (int t = 0; t < m->n_tr; t++)
            cell2(m->f, suite_find_run(m->res, m->sc[s], m->tr[t]),
                  "busbw_gbps", 2, "fraction_of_ideal", 3, "");
        fprintf(m->f, "\n");
    }
}

static void md_jct(const struct md *m)
{
    fprintf(m->f, "\n## Completion time vs ideal\n\nJCT in us (collectives: "
                  "the collective; incast: the last flow) and, in "
                  "brackets, JCT / ideal JCT.\n");
    char extra[80];
    snprintf(extra, sizeof(extra), " ideal (`%s`, us) |", m->tr[0]);
    row_head(m, "scenario", extra);
    for (int s = 0; s < m->n_sc; s++) {
        const struct sj *r0 = suite_find_run(m->res, m->sc[s], m->tr[0]);
        fprintf(m->f, "| %s | %s |", m->sc[s],
                sj_fmt(sj_get(r0, "ideal_us"), 3));
        for (int t = 0; t < m->n_tr; t++)
            cell2(m->f, suite_find_run(m->res, m->sc[s], m->tr[t]), "jct_us", 3,
                  "jct_ratio", 3, "x");
        fprintf(m->f, "\n");
    }
}

static void health_cell(FILE *f, const struct sj *r)
{
    if (!r) {
        fprintf(f, " — |");
        return;
    }
    fprintf(f, " %s", sj_fmt(sj_get(r, "retx_rate"), 4));
    if (sj_get(r, "fault") && sj_get(r, "fault")->b && sj_get(r, "fault_us"))
        fprintf(f, "; recovery %s",
                sj_has_num(r, "recovery_us")
                    ? sj_fmt(sj_get(r, "recovery_us"), 3)
                    : "never");
    fprintf(f, "%s%s |", ok(r) ? "" : "; ", ok(r) ? "" : sj_str(r, "status"));
}

static void md_health(const struct md *m)
{
    fprintf(m->f, "\n## Retransmissions and recovery\n\nRetransmission "
                  "rate (retransmitted / data packets); for a link or plane "
                  "failure, the recovery time in us (metrics.md: from the "
                  "failure until throughput stays at or above the "
                  "surviving capacity's share), `never` if it did not.\n");
    row_head(m, "scenario", NULL);
    for (int s = 0; s < m->n_sc; s++) {
        fprintf(m->f, "| %s |", m->sc[s]);
        for (int t = 0; t < m->n_tr; t++)
            health_cell(m->f, suite_find_run(m->res, m->sc[s], m->tr[t]));
        fprintf(m->f, "\n");
    }
}

static void md_head(const struct md *m, const char *note)
{
    const struct sj *r0 = m->res->child, *c = sj_get(r0, "config");
    fprintf(m->f, "# Comparison suite `%s`: MetaRoCE vs RoCEv2\n\n",
            sj_str(r0, "suite") ? sj_str(r0, "suite") : "?");
    fprintf(m->f, "Written by `mroce-sim --suite` from `results.json` in this "
                  "folder: every number below is read from it. Definitions: "
                  "`docs/suite.md` and the metrics guide.\n\n");
    fprintf(m->f,
            "Fabric: %s hosts in %s leaves of %s, %s spines, %s Gb/s "
            "links, MTU %s B. Transports: `metaroce` (PFC off, %s paths "
            "per connection), `rocev2_1qp` and `rocev2_8qp` (the RoCEv2 "
            "production configuration: PFC on, DCQCN on, one or eight QPs "
            "per peer pair).\n",
            sj_fmt(sj_get(c, "hosts"), 0), sj_fmt(sj_get(c, "leaves"), 0),
            sj_fmt(sj_get(c, "hosts_per_leaf"), 0),
            sj_fmt(sj_get(c, "spines"), 0), sj_fmt(sj_get(c, "link_gbps"), 0),
            sj_fmt(sj_get(c, "mtu"), 0),
            sj_fmt(sj_path(suite_find_run(m->res, sj_str(r0, "scenario"),
                                          "metaroce"),
                           "config", "paths"),
                   0));
    if (note && note[0])
        fprintf(m->f, "\n**Plots:** %s.\n", note);
}

static void md_plots(const struct md *m)
{
    int n;
    const char *const *names = suite_plot_names(&n);
    fprintf(m->f, "\n## Plots\n\n");
    for (int i = 0; i < n; i++) {
        char path[1200];
        struct stat st;
        snprintf(path, sizeof(path), "%s/plots/%s.svg", m->dir, names[i]);
        if (stat(path, &st) == 0)
            fprintf(m->f, "- [%s](plots/%s.svg)\n", suite_plot_title(names[i]),
                    names[i]);
    }
}

static void md_runs(const struct md *m)
{
    fprintf(m->f,
            "\n## Runs\n\nSimulator cost per run (wall-clock "
            "figures vary between runs and machines).\n\n"
            "| scenario | transport | status | events | events/s | "
            "peak RSS (MB) | wall (s) |\n|---|---|---|---|---|---|---|\n");
    for (const struct sj *r = m->res->child; r; r = r->next) {
        const char *why = sj_str(r, "why");
        fprintf(m->f, "| %s | %s | %s%s%s%s | %s | %s | %s | %s |\n",
                sj_str(r, "scenario"), sj_str(r, "transport"),
                sj_str(r, "status"), why && why[0] ? " (" : "", why ? why : "",
                why && why[0] ? ")" : "", sj_fmt(sj_get(r, "events"), 0),
                sj_fmt(sj_get(r, "events_per_s"), 0),
                sj_fmt(sj_get(r, "peak_rss_mb"), 1),
                sj_fmt(sj_get(r, "wall_s"), 2));
    }
}

void suite_md_summary(FILE *f, const struct sj *results)
{
    struct md m;
    md_init(&m, f, results, ".");
    md_busbw(&m);
    md_jct(&m);
}

int suite_md_write(const char *dir, const struct sj *results,
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
    struct md m;
    md_init(&m, f, results, dir);
    md_head(&m, plot_note);
    md_busbw(&m);
    md_jct(&m);
    md_health(&m);
    suite_read_all(f, results, m.sc, m.n_sc, m.tr, m.n_tr);
    suite_targets_md(f, results, dir);
    md_plots(&m);
    md_runs(&m);
    return fclose(f) == 0 ? 0 : -1;
}
