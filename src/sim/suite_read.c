/* report.md's section per scenario: what it is, its ideal (the formula
 * and the same with this run's numbers), a reading generated from the
 * numbers, and the details per transport. Everything from results.json. */
#include <stdio.h>
#include <string.h>

#include "sim/suite_int.h"

static bool ok(const struct sj *rec)
{
    const char *st = sj_str(rec, "status");
    return st && !strcmp(st, "ok");
}

static const char *F(const struct sj *r, const char *key, int dec)
{
    return sj_fmt(sj_get(r, key), dec);
}

/* One transport's clause of the reading, by the scenario's kind. */
static void clause(FILE *f, const struct sj *r, const char *kind)
{
    if (!ok(r)) {
        fprintf(f, "did not finish (%s: %s)", sj_str(r, "status"),
                sj_str(r, "why"));
    } else if (!strcmp(kind, "lossless")) {
        fprintf(f, "reaches %s of its ideal busbw (JCT %sx the ideal)",
                F(r, "busbw_vs_ideal", 3), F(r, "jct_ratio", 3));
    } else if (!strcmp(kind, "loss")) {
        fprintf(f, "keeps %s of its lossless busbw (retransmission rate %s)",
                F(r, "busbw_vs_base", 3), F(r, "retx_rate", 4));
    } else if (!strcmp(kind, "degraded_link")) {
        fprintf(f, "takes %sx its no-fault JCT", F(r, "jct_vs_base", 3));
    } else if (!strcmp(kind, "link_down") || !strcmp(kind, "plane_down")) {
        if (sj_has_num(r, "recovery_us"))
            fprintf(f, "recovers in %s us", F(r, "recovery_us", 3));
        else
            fprintf(f, "never recovers by the metric");
        fprintf(f,
                ", keeps %s of its no-fault busbw and moves %s of the "
                "no-fault throughput after the fault",
                F(r, "busbw_vs_base", 3), F(r, "after_fault_vs_base", 3));
    } else if (!strcmp(kind, "incast")) {
        fprintf(f,
                "Jain index %s, victim at %s of its line rate, FCT p99 %s "
                "us",
                F(r, "jain", 4), F(r, "victim_fraction", 3),
                sj_fmt(sj_path(r, "fct_us", "p99"), 3));
    } else if (sj_has_num(r, "busbw_vs_base")) {
        fprintf(f, "reaches %s Gb/s busbw, %sx the run it is compared with",
                F(r, "busbw_gbps", 2), F(r, "busbw_vs_base", 3));
    } else {
        fprintf(f, "reaches %s Gb/s busbw, %s of its ideal busbw",
                F(r, "busbw_gbps", 2), F(r, "busbw_vs_ideal", 3));
    }
}

static void reading(FILE *f, const struct sj *res, const char *scen,
                    const char *const *tr, int n_tr)
{
    const struct sj *r0 = suite_find_run(res, scen, tr[0]);
    const char *kind = sj_str(r0, "kind"), *base = sj_str(r0, "base");
    fprintf(f, "\n**Reading.** ");
    for (int t = 0; t < n_tr; t++) {
        const struct sj *r = suite_find_run(res, scen, tr[t]);
        if (!r)
            continue;
        fprintf(f, "%s`%s` ", t ? "; " : "", tr[t]);
        clause(f, r, kind ? kind : "");
    }
    fprintf(f, ".");
    if (base)
        fprintf(f, " Compared with `%s` of the same transport.", base);
    fprintf(f, "\n");
}

static void drops_cell(FILE *f, const struct sj *r)
{
    const struct sj *d = sj_get(r, "drops");
    fprintf(f, " %s", F(d, "total", 0));
    int k = 0;
    for (const struct sj *m = d ? d->child : NULL; m; m = m->next)
        if (strcmp(m->key, "total") && m->type == SJ_NUM && m->num > 0)
            fprintf(f, "%s%s %s", k++ ? ", " : " (", m->key, sj_fmt(m, 0));
    fprintf(f, "%s |", k ? ")" : "");
}

static void details(FILE *f, const struct sj *res, const char *scen,
                    const char *const *tr, int n_tr)
{
    fprintf(f, "\n| transport | status | busbw (Gb/s) | algbw (Gb/s) | "
               "JCT (us) | FCT p50/p99/max (us) | retx rate | "
               "out-of-order rate | ECN fraction | PFC pause (us) | drops | "
               "MMR | queue p95/max (B) |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int t = 0; t < n_tr; t++) {
        const struct sj *r = suite_find_run(res, scen, tr[t]);
        if (!r)
            continue;
        const struct sj *fct = sj_get(r, "fct_us");
        fprintf(f,
                "| %s | %s | %s | %s | %s | %s / %s / %s | %s | %s | %s | "
                "%s |",
                tr[t], sj_str(r, "status"), F(r, "busbw_gbps", 2),
                F(r, "algbw_gbps", 2), F(r, "jct_us", 3),
                sj_fmt(sj_get(fct, "p50"), 3), sj_fmt(sj_get(fct, "p99"), 3),
                sj_fmt(sj_get(fct, "max"), 3), F(r, "retx_rate", 4),
                F(r, "ooo_rate", 4), F(r, "ecn_fraction", 4),
                F(r, "pfc_pause_us", 3));
        drops_cell(f, r);
        fprintf(f, " %s | %s / %s |\n", F(r, "mmr", 3),
                F(r, "p95_queue_bytes", 0), F(r, "max_queue_bytes", 0));
    }
}

/* The ideal once per distinct formula: the RoCEv2 runs share theirs. */
static void ideals(FILE *f, const struct sj *res, const char *scen,
                   const char *const *tr, int n_tr)
{
    for (int t = 0; t < n_tr; t++) {
        const struct sj *r = suite_find_run(res, scen, tr[t]);
        const char *v = sj_str(r, "ideal_with_values");
        bool seen = false;
        for (int u = 0; v && u < t; u++) {
            const char *w =
                sj_str(suite_find_run(res, scen, tr[u]), "ideal_with_values");
            seen |= w && !strcmp(v, w);
        }
        if (!v || seen)
            continue;
        fprintf(f, "\nIdeal (`%s`", tr[t]);
        for (int u = t + 1; u < n_tr; u++) {
            const char *w =
                sj_str(suite_find_run(res, scen, tr[u]), "ideal_with_values");
            if (w && !strcmp(v, w))
                fprintf(f, ", `%s`", tr[u]);
        }
        fprintf(f, "): `%s`, with this fabric `%s`.\n",
                sj_str(r, "ideal_formula"), v);
    }
}

static void scenario(FILE *f, const struct sj *res, const char *scen,
                     const char *const *tr, int n_tr)
{
    const struct sj *r0 = suite_find_run(res, scen, tr[0]);
    fprintf(f, "\n### %s\n\n%s.\n", scen, sj_str(r0, "description"));
    ideals(f, res, scen, tr, n_tr);
    reading(f, res, scen, tr, n_tr);
    details(f, res, scen, tr, n_tr);
}

void suite_read_all(FILE *f, const struct sj *res, const char *const *sc,
                    int n_sc, const char *const *tr, int n_tr)
{
    fprintf(f, "\n## Scenarios\n\nEach scenario: what it runs, its ideal "
               "(metrics.md, with this fabric's N, S, B, eta and alpha; eta "
               "and alpha depend on the transport's header), a reading "
               "of the numbers, and the details.\n");
    for (int s = 0; s < n_sc; s++)
        scenario(f, res, sc[s], tr, n_tr);
}
