/* The mutation run (docs/conformance.md, "Mutation run"): for each fault
 * of the engine's fault table, which the agent lists in its hello and sets
 * with its "fault" request, run the suite until a test that passed on the
 * clean engine fails; that test caught the fault. The tests tagged with
 * the fault's rule run first (they are the likeliest to catch it; the
 * order changes only how long it takes), then every other test, then the
 * wire monitor's rules. A catch is confirmed twice, so that a test that
 * fails now and then under load (a timing check) catches nothing by
 * chance: it must fail again under the fault, then pass on the clean
 * engine.
 * Output: {"mutants","caught","score","survivors",...}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform/cf.h"

struct mut_state {
    const struct cf_opts *o;
    struct cf_agent *a;
    const struct cf_rules *rs;
    const struct cf_test *const *all;
    int n;
    int *base;           /* baseline verdict per test, -1 not selected */
    uint64_t *base_viol; /* monitor violations in the baseline, per rule */
};

/* Sets the fault (NULL: none); on a refusal, why in why[cap]. */
static int mut_fault_why(struct cf_agent *a, const char *name, char *why,
                         size_t cap)
{
    json_t *r = cf_agent_call(
        a, json_pack("{s:s, s:s?}", "cmd", "fault", "name", name));
    int rc = cf_reply_ok(r, NULL, 0) ? 0 : -1;
    if (rc < 0 && why) {
        const char *msg = json_string_value(json_object_get(r, "message"));
        snprintf(why, cap, "the agent refused the fault: %s",
                 msg ? msg
                 : r ? "no reason given"
                     : a->err);
    }
    json_decref(r);
    return rc;
}

static int mut_fault(struct cf_agent *a, const char *name)
{
    return mut_fault_why(a, name, NULL, 0);
}

static int mut_run(struct mut_state *m, int i)
{
    struct cf_result r;
    cf_run_one(m->all[i], m->a, m->o, m->rs, &r);
    free(r.msg);
    return r.verdict;
}

static void mut_baseline(struct mut_state *m)
{
    cf_mon_clear_all();
    for (int i = 0; i < m->n; i++) {
        m->base[i] = -1;
        if (cf_selected(m->all[i], m->o))
            m->base[i] = mut_run(m, i);
    }
    int nr;
    struct cf_mon_rule *mr = cf_mon_rules(&nr);
    for (int k = 0; k < nr; k++)
        m->base_viol[k] = mr[k].violated;
    /* a test that failed once on the clean engine (a timing check on a
     * busy host) gets two more tries: only one that keeps failing is
     * unable to catch anything */
    int bad = 0;
    for (int i = 0; i < m->n; i++) {
        for (int k = 0; k < 2 && m->base[i] == CF_FAIL; k++)
            m->base[i] = mut_run(m, i);
        if (m->base[i] == CF_FAIL) {
            bad++;
            fprintf(stderr, "mutants: %s fails on the clean engine\n",
                    m->all[i]->id);
        }
    }
    fprintf(stderr,
            "mutants: baseline done, %d tests fail on the clean "
            "engine and cannot catch anything\n",
            bad);
}

/* A test newly failing under the fault, twice, and passing on the clean
 * engine. */
static bool mut_caught_by(struct mut_state *m, int i, const char *fault)
{
    if (m->base[i] != CF_PASS || mut_run(m, i) != CF_FAIL ||
        mut_run(m, i) != CF_FAIL)
        return false;
    mut_fault(m->a, NULL);
    bool clean_pass = mut_run(m, i) == CF_PASS;
    mut_fault(m->a, fault);
    return clean_pass;
}

/* Whether name is one of the comma-separated list. */
static bool mut_listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n))
            return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

/* The wire monitor caught it: a rule violated now, never in the baseline. */
static const char *mut_mon_caught(struct mut_state *m)
{
    int nr;
    struct cf_mon_rule *mr = cf_mon_rules(&nr);
    for (int k = 0; k < nr; k++)
        if (mr[k].violated && !m->base_viol[k])
            return mr[k].rule;
    return NULL;
}

static json_t *mut_one(struct mut_state *m, const char *name, const char *rule)
{
    uint64_t t0 = cf_now();
    const char *by = NULL;
    char mon_by[64], why[512];
    if (mut_fault_why(m->a, name, why, sizeof(why)) < 0) {
        fprintf(stderr, "mutant %-28s %-10s NOT RUN: %s\n", name, rule, why);
        return json_pack("{s:s, s:s, s:b, s:s}", "name", name, "rule", rule,
                         "caught", 0, "error", why);
    }
    cf_mon_clear_all();
    for (int pass = 0; pass < 2 && !by; pass++) {
        for (int i = 0; i < m->n && !by; i++) {
            bool tagged = cf_test_has_rule(m->all[i], rule);
            if (m->base[i] < 0 || tagged != (pass == 0))
                continue;
            if (mut_caught_by(m, i, name))
                by = m->all[i]->id;
            const char *mon_rule = by ? NULL : mut_mon_caught(m);
            if (mon_rule) {
                snprintf(mon_by, sizeof(mon_by), "monitor %s", mon_rule);
                by = mon_by;
            }
        }
    }
    mut_fault(m->a, NULL);
    double s = (double)(cf_now() - t0) / 1e9;
    fprintf(stderr, "mutant %-28s %-10s %s (%.1f s)\n", name, rule,
            by ? by : "SURVIVED", s);
    json_t *o = json_pack("{s:s, s:s, s:b, s:f}", "name", name, "rule", rule,
                          "caught", by != NULL, "time_s", s);
    if (by)
        json_object_set_new(o, "by", json_string(by));
    return o;
}

int cf_mutants(const struct cf_opts *o, struct cf_agent *a,
               const struct cf_rules *rs)
{
    json_t *faults = json_object_get(a->hello, "faults");
    if (!cf_agent_has(a, "fault") || !json_array_size(faults)) {
        fprintf(stderr, "mroce-conform: the agent offers no faults\n");
        return 2;
    }
    faults = json_incref(faults);
    int nr;
    cf_mon_rules(&nr);
    struct mut_state m = {.o = o, .a = a, .rs = rs};
    m.all = cf_tests(&m.n);
    m.base = calloc((size_t)m.n, sizeof(*m.base));
    m.base_viol = calloc((size_t)nr, sizeof(*m.base_viol));
    mut_baseline(&m);
    json_t *res = json_array(), *surv = json_array();
    int tried = 0, caught = 0;
    size_t i;
    json_t *f;
    json_array_foreach(faults, i, f)
    {
        const char *name = json_string_value(json_object_get(f, "name"));
        const char *rule = json_string_value(json_object_get(f, "rule"));
        if (!name || !rule ||
            (o->only_mutant && !mut_listed(o->only_mutant, name)))
            continue;
        if (o->mutant_limit && tried >= o->mutant_limit)
            break;
        json_t *r = mut_one(&m, name, rule);
        tried++;
        if (json_is_true(json_object_get(r, "caught")))
            caught++;
        else
            json_array_append_new(surv, json_string(name));
        json_array_append_new(res, r);
    }
    json_t *doc =
        json_pack("{s:i, s:i, s:f, s:o, s:o}", "mutants", tried, "caught",
                  caught, "score", tried ? (double)caught / tried : 0.0,
                  "survivors", surv, "results", res);
    char *s = json_dumps(doc, JSON_INDENT(1));
    printf("%s\n", s ? s : "{}");
    free(s);
    if (o->mutants_json)
        json_dump_file(doc, o->mutants_json, JSON_INDENT(1));
    printf("mutants: %d caught of %d (%.1f%%)\n", caught, tried,
           tried ? 100.0 * caught / tried : 0.0);
    json_decref(doc);
    json_decref(faults);
    free(m.base);
    free(m.base_viol);
    return 0;
}
