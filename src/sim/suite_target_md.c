/* report.md's section per target: the measured value of every run the
 * target concerns, the threshold, PASS/FAIL and the plot that shows it,
 * all read from the runs' "targets" in results.json. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/suite_int.h"

#define MAX_TARGETS 32

/* Target ids in the order they first appear. */
static int target_ids(const struct sj *res, const char **ids, int max)
{
    int n = 0;
    for (const struct sj *r = res->child; r; r = r->next)
        for (const struct sj *t =
                 sj_get(r, "targets") ? sj_get(r, "targets")->child : NULL;
             t; t = t->next) {
            const char *id = sj_str(t, "id");
            bool seen = false;
            for (int i = 0; id && i < n; i++)
                seen |= !strcmp(ids[i], id);
            if (id && !seen && n < max)
                ids[n++] = id;
        }
    return n;
}

static const struct sj *target_in(const struct sj *rec, const char *id)
{
    const struct sj *arr = sj_get(rec, "targets");
    for (const struct sj *t = arr ? arr->child : NULL; t; t = t->next)
        if (!strcmp(sj_str(t, "id") ? sj_str(t, "id") : "", id))
            return t;
    return NULL;
}

static void target_head(FILE *f, const struct sj *t, const char *dir)
{
    char path[1200];
    struct stat st;
    const char *plot = sj_str(t, "plot");
    fprintf(f, "\n### %s (`%s`, issue %s)\n\nPASS when the value is %s %s. ",
            sj_str(t, "what"), sj_str(t, "id"), sj_str(t, "issue"),
            sj_str(t, "op"), sj_str(t, "threshold_expr"));
    snprintf(path, sizeof(path), "%s/plots/%s.svg", dir, plot ? plot : "");
    if (plot && stat(path, &st) == 0)
        fprintf(f, "Plot: [%s](plots/%s.svg).\n", suite_plot_title(plot), plot);
    else
        fprintf(f, "Plot: not rendered.\n");
    fprintf(f, "\n| scenario | transport | measured | threshold | result |\n"
               "|---|---|---|---|---|\n");
}

static void target_row(FILE *f, const struct sj *rec, const struct sj *t)
{
    const struct sj *v = sj_get(t, "value");
    const char *st = sj_str(rec, "status");
    fprintf(f, "| %s | %s | ", sj_str(rec, "scenario"),
            sj_str(rec, "transport"));
    if (v && v->type == SJ_NUM)
        fprintf(f, "%s", sj_fmt(v, 4));
    else
        fprintf(f, "none (%s)", st && strcmp(st, "ok") ? st : "not measured");
    fprintf(f, " | %s %s | **%s** |\n", sj_str(t, "op"),
            sj_fmt(sj_get(t, "threshold"), 3),
            sj_get(t, "pass") && sj_get(t, "pass")->b ? "PASS" : "FAIL");
}

void suite_targets_md(FILE *f, const struct sj *res, const char *dir)
{
    const char *ids[MAX_TARGETS];
    int n = target_ids(res, ids, MAX_TARGETS);
    fprintf(f, "\n## Targets\n\nThe MetaRoCE rows are the targets (issue "
               "\"Done when\" and the congestion-control and path-health "
               "targets); the RoCEv2 rows apply the same measure for "
               "comparison. `none` means the run did not produce the "
               "value (a failed run, or recovery never reached).\n");
    for (int i = 0; i < n; i++) {
        bool head = false;
        for (const struct sj *r = res->child; r; r = r->next) {
            const struct sj *t = target_in(r, ids[i]);
            if (!t)
                continue;
            if (!head)
                target_head(f, t, dir);
            head = true;
            target_row(f, r, t);
        }
    }
}
