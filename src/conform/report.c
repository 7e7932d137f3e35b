/* Reports of a run: a console line per test and a closing line, JUnit
 * XML, JSON (docs/conformance.md, "Reports") and a markdown report that
 * lists every rule of the spec with its tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform/cf.h"

const char *cf_outcome(const struct cf_result *r)
{
    if (r->verdict == CF_SKIP)
        return "skip";
    if (r->verdict == CF_PASS)
        return "pass";
    if (r->kw == CF_KW_SHOULD)
        return "warn";
    if (r->kw == CF_KW_MAY || r->kw == CF_KW_NONE)
        return "info";
    return "fail";
}

bool cf_must_fail(const struct cf_result *r)
{
    return r->verdict == CF_FAIL && r->kw == CF_KW_MUST;
}

void cf_report_console_line(const struct cf_result *r, bool verbose)
{
    static const char *const tag[] = {"PASS", "FAIL", "SKIP"};
    const char *o = cf_outcome(r);
    const char *label = !strcmp(o, "warn")   ? "WARN"
                        : !strcmp(o, "info") ? "INFO"
                                             : tag[r->verdict];
    printf("%-4s %-42s %-6s %6.3fs  %s%s\n", label, r->test->id,
           cf_kw_name(r->kw), r->time_s, r->test->rules,
           r->xfail && r->verdict == CF_FAIL ? "  (known failure)" : "");
    if (r->msg && (r->verdict != CF_PASS || verbose))
        printf("       %s\n", r->msg);
    fflush(stdout);
}

/* ---- coverage (docs/conformance.md, "Testable rules") ---- */

static bool report_ran(const struct cf_run *run, const char *rule)
{
    for (int i = 0; i < run->n_res; i++)
        if (run->res[i].verdict != CF_SKIP &&
            cf_test_has_rule(run->res[i].test, rule))
            return true;
    return false;
}

void cf_coverage(const struct cf_run *run, struct cf_cov *cov)
{
    *cov = (struct cf_cov){.total = run->rules.n};
    for (int i = 0; i < run->rules.n; i++) {
        const struct cf_rule *r = &run->rules.r[i];
        if (r->untestable)
            continue;
        cov->testable++;
        cov->covered += report_ran(run, r->id);
    }
}

static void report_counts(const struct cf_run *run, int c[5])
{
    memset(c, 0, 5 * sizeof(int));
    for (int i = 0; i < run->n_res; i++) {
        const char *o = cf_outcome(&run->res[i]);
        c[!strcmp(o, "pass")   ? 0
          : !strcmp(o, "fail") ? 1
          : !strcmp(o, "skip") ? 2
          : !strcmp(o, "warn") ? 3
                               : 4]++;
    }
}

void cf_report_summary(const struct cf_run *run)
{
    int c[5];
    report_counts(run, c);
    struct cf_cov cov;
    cf_coverage(run, &cov);
    printf("\nagent: %s\n", run->agent_desc);
    printf("rules: %d in %s, %d testable, %d covered (%.1f%%)\n", cov.total,
           run->rules.path, cov.testable, cov.covered,
           cov.testable ? 100.0 * cov.covered / cov.testable : 0.0);
    printf("%d tests in %.1f s; SHOULD failures (warnings): %d, MAY failures "
           "(informational): %d\n",
           run->n_res, run->time_s, c[3], c[4]);
    int known = 0;
    for (int i = 0; i < run->n_res; i++)
        known += run->res[i].xfail && cf_must_fail(&run->res[i]);
    if (known)
        printf("%d of the MUST failures are known failures (--xfail)\n", known);
    printf("%d passed, %d failed, %d skipped\n", c[0], c[1], c[2]);
}

/* ---- JSON ---- */

static json_t *report_rules_arr(const char *rules)
{
    json_t *arr = json_array();
    char rule[32];
    for (const char *s = rules; *s;) {
        size_t n = strcspn(s, " ");
        snprintf(rule, sizeof(rule), "%.*s", (int)n, s);
        json_array_append_new(arr, json_string(rule));
        s += n + (s[n] == ' ');
    }
    return arr;
}

int cf_report_json(const struct cf_run *run, const char *path)
{
    static const char *const verdict[] = {"pass", "fail", "skip"};
    json_t *tests = json_array(), *uncovered = json_array(),
           *untestable = json_object();
    for (int i = 0; i < run->n_res; i++) {
        const struct cf_result *r = &run->res[i];
        json_t *o = json_pack(
            "{s:s, s:o, s:s, s:s, s:s, s:f, s:s}", "id", r->test->id, "rules",
            report_rules_arr(r->test->rules), "keyword", cf_kw_name(r->kw),
            "verdict", verdict[r->verdict], "outcome", cf_outcome(r), "time_s",
            r->time_s, "section", r->test->section);
        if (r->msg)
            json_object_set_new(o, "message", json_string(r->msg));
        if (r->xfail)
            json_object_set_new(o, "known_failure", json_true());
        if (r->retries)
            json_object_set_new(o, "retries", json_integer(r->retries));
        json_array_append_new(tests, o);
    }
    for (int i = 0; i < run->rules.n; i++) {
        const struct cf_rule *r = &run->rules.r[i];
        if (r->untestable)
            json_object_set_new(untestable, r->id, json_string(r->untestable));
        else if (!report_ran(run, r->id))
            json_array_append_new(uncovered, json_string(r->id));
    }
    struct cf_cov cov;
    cf_coverage(run, &cov);
    int c[5];
    report_counts(run, c);
    json_t *doc = json_pack(
        "{s:o, s:i, s:i, s:i, s:o, s:o, s:{s:i, s:i, s:i, s:i, s:i}, s:s, "
        "s:f}",
        "tests", tests, "rules_total", cov.total, "rules_testable",
        cov.testable, "rules_covered", cov.covered, "rules_uncovered",
        uncovered, "rules_untestable", untestable, "summary", "passed", c[0],
        "failed", c[1], "skipped", c[2], "warnings", c[3], "informational",
        c[4], "agent", run->agent_desc, "time_s", run->time_s);
    int rc = json_dump_file(doc, path, JSON_INDENT(1));
    json_decref(doc);
    return rc;
}

/* ---- JUnit XML ---- */

static void report_xml(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

static void report_rule_texts(FILE *f, const struct cf_run *run,
                              const char *rules)
{
    char rule[32];
    for (const char *s = rules; *s;) {
        size_t n = strcspn(s, " ");
        snprintf(rule, sizeof(rule), "%.*s", (int)n, s);
        const struct cf_rule *r = cf_rule_find(&run->rules, rule);
        report_xml(f, r ? r->text : rule);
        fputc('\n', f);
        s += n + (s[n] == ' ');
    }
}

int cf_report_junit(const struct cf_run *run, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int c[5];
    report_counts(run, c);
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f,
            "<testsuite name=\"mroce-conform\" tests=\"%d\" failures=\"%d\" "
            "skipped=\"%d\" time=\"%.3f\">\n",
            run->n_res, c[1], c[2], run->time_s);
    for (int i = 0; i < run->n_res; i++) {
        const struct cf_result *r = &run->res[i];
        fprintf(f, "  <testcase classname=\"spec.%s\" name=\"",
                r->test->section);
        report_xml(f, r->test->id);
        fprintf(f, "\" time=\"%.3f\">\n", r->time_s);
        const char *o = cf_outcome(r);
        if (!strcmp(o, "fail")) {
            fprintf(f, "    <failure message=\"");
            report_xml(f, r->msg);
            fprintf(f, "\"/>\n");
        } else if (!strcmp(o, "skip")) {
            fprintf(f, "    <skipped message=\"");
            report_xml(f, r->msg);
            fprintf(f, "\"/>\n");
        }
        fprintf(f, "    <system-out>%s %s: ", cf_kw_name(r->kw), o);
        report_xml(f, r->test->title);
        fprintf(f, "\n");
        if (r->msg && strcmp(o, "fail"))
            report_xml(f, r->msg);
        fprintf(f, "\n");
        report_rule_texts(f, run, r->test->rules);
        fprintf(f, "</system-out>\n  </testcase>\n");
    }
    fprintf(f, "</testsuite>\n");
    return fclose(f);
}

/* ---- markdown: every rule with its tests ---- */

static void report_md_rule(FILE *f, const struct cf_run *run,
                           const struct cf_rule *rule)
{
    fprintf(f, "| %s | %s | %s | ", rule->id, rule->section,
            cf_kw_name(rule->kw));
    int shown = 0;
    for (int i = 0; i < run->n_res; i++) {
        const struct cf_result *r = &run->res[i];
        if (!cf_test_has_rule(r->test, rule->id))
            continue;
        fprintf(f, "%s`%s` %s", shown++ ? "<br>" : "", r->test->id,
                cf_outcome(r));
    }
    if (rule->untestable)
        fprintf(f, "%suntestable: %s", shown ? "<br>" : "", rule->untestable);
    else if (!report_ran(run, rule->id))
        fprintf(f, "%s**uncovered**", shown ? "<br>" : "");
    fprintf(f, " |\n");
}

int cf_report_md(const struct cf_run *run, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    struct cf_cov cov;
    cf_coverage(run, &cov);
    int c[5];
    report_counts(run, c);
    fprintf(f, "# mroce-conform report\n\n");
    fprintf(f, "Agent: %s. Rules: %s.\n\n", run->agent_desc, run->rules.path);
    fprintf(f,
            "%d tests: %d passed, %d failed (MUST), %d warnings (SHOULD), %d "
            "informational (MAY), %d skipped.\n\n",
            run->n_res, c[0], c[1], c[3], c[4], c[2]);
    fprintf(f, "%d rules, %d testable, %d covered (%.1f%%).\n\n", cov.total,
            cov.testable, cov.covered,
            cov.testable ? 100.0 * cov.covered / cov.testable : 0.0);
    fprintf(f, "| rule | section | keyword | tests |\n|---|---|---|---|\n");
    for (int i = 0; i < run->rules.n; i++)
        report_md_rule(f, run, &run->rules.r[i]);
    fprintf(f, "\n## Failures and warnings\n\n");
    for (int i = 0; i < run->n_res; i++) {
        const struct cf_result *r = &run->res[i];
        if (r->verdict == CF_FAIL)
            fprintf(f, "- `%s` (%s, %s): %s\n", r->test->id, r->test->rules,
                    cf_outcome(r), r->msg ? r->msg : "");
    }
    return fclose(f);
}
