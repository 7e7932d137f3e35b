/* The runner: options, the agent (started on loopback when no target is
 * named), one test at a time with a watchdog, grading by keyword, and the
 * reports. */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "conform/cf.h"

#ifndef MROCE_SPEC_PATH
#define MROCE_SPEC_PATH "docs/spec.md"
#endif

volatile int cf_timed_out;

static void runner_alarm(int sig)
{
    (void)sig;
    cf_timed_out = 1;
}

static void runner_watchdog(int ms)
{
    struct itimerval it = {
        .it_value = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000}};
    cf_timed_out = 0;
    setitimer(ITIMER_REAL, &it, NULL);
}

static void usage(void)
{
    fprintf(
        stderr,
        "usage: mroce-conform [--target HOST:PORT|unix:PATH] [--agent BIN]\n"
        "                     [--ip ADDR] [--spec FILE] [--filter GLOB]...\n"
        "                     [--json FILE] [--junit FILE] [--md FILE]\n"
        "                     [--fault NAME] [--stop-on-fail] [--slow X]\n"
        "                     [--xfail TEST-ID]... [--retry N]\n"
        "                     [--list] [-v]\n"
        "       mroce-conform --mutants [--mutants-json FILE] "
        "[--mutant NAME[,NAME...]]\n"
        "                     [--mutant-limit N] [options above]\n"
        "Without --target, mroce's UDP agent (mroce-agent next to this\n"
        "program) is started on 127.0.0.1. GLOB matches test ids or rule "
        "ids.\n");
}

static const char *runner_arg(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

static int runner_parse(int argc, char **argv, struct cf_opts *o)
{
    static const char *filters[64], *xfail[64];
    *o = (struct cf_opts){.spec = MROCE_SPEC_PATH,
                          .ip = "127.0.0.1",
                          .filters = filters,
                          .xfail = xfail,
                          .scale = 1.0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
#define OPT(name, field)                                                       \
    if (!strcmp(a, name)) {                                                    \
        if (!(v = runner_arg(argc, argv, &i)))                                 \
            return -1;                                                         \
        o->field = v;                                                          \
        continue;                                                              \
    }
        OPT("--target", target);
        OPT("--agent", agent_bin);
        OPT("--spec", spec);
        OPT("--ip", ip);
        OPT("--json", json);
        OPT("--junit", junit);
        OPT("--md", md);
        OPT("--fault", fault);
        OPT("--mutants-json", mutants_json);
        OPT("--mutant", only_mutant);
#undef OPT
        if (!strcmp(a, "--filter") && (v = runner_arg(argc, argv, &i)) &&
            o->n_filters < 64)
            filters[o->n_filters++] = v;
        else if (!strcmp(a, "--xfail") && (v = runner_arg(argc, argv, &i)) &&
                 o->n_xfail < 64)
            xfail[o->n_xfail++] = v;
        else if (!strcmp(a, "--slow") && (v = runner_arg(argc, argv, &i)))
            o->scale = atof(v) > 0 ? atof(v) : 1.0;
        else if (!strcmp(a, "--retry") && (v = runner_arg(argc, argv, &i)))
            o->retry = atoi(v);
        else if (!strcmp(a, "--mutant-limit") &&
                 (v = runner_arg(argc, argv, &i)))
            o->mutant_limit = atoi(v);
        else if (!strcmp(a, "--mutants"))
            o->mutants = true;
        else if (!strcmp(a, "--list"))
            o->list = true;
        else if (!strcmp(a, "--stop-on-fail"))
            o->stop_on_fail = true;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose"))
            o->verbose = true;
        else if (!strcmp(a, "-vv"))
            o->verbose = o->trace = true;
        else
            return -1;
    }
    if (o->only_mutant)
        o->mutants = true;
    return 0;
}

bool cf_selected(const struct cf_test *ts, const struct cf_opts *o)
{
    if (!o->n_filters)
        return true;
    for (int i = 0; i < o->n_filters; i++) {
        const char *f = o->filters[i];
        if (!fnmatch(f, ts->id, 0))
            return true;
        char rule[32];
        for (const char *s = ts->rules; *s;) {
            size_t n = strcspn(s, " ");
            snprintf(rule, sizeof(rule), "%.*s", (int)n, s);
            if (!fnmatch(f, rule, 0))
                return true;
            s += n + (s[n] == ' ');
        }
    }
    return false;
}

/* A test is graded by its own keyword, but never above what its rules
 * say: a test of a rule that only says SHOULD cannot fail the run. */
int cf_grade_kw(const struct cf_test *ts, const struct cf_rules *rs)
{
    int best = CF_KW_NONE;
    bool all_known = true;
    char rule[32];
    for (const char *s = ts->rules; *s;) {
        size_t n = strcspn(s, " ");
        snprintf(rule, sizeof(rule), "%.*s", (int)n, s);
        const struct cf_rule *r = cf_rule_find(rs, rule);
        if (!r || r->kw == CF_KW_NONE)
            all_known = false;
        else if (r->kw > best)
            best = r->kw;
        s += n + (s[n] == ' ');
    }
    return all_known && best < ts->kw ? best : ts->kw;
}

int cf_agent_check(struct cf_agent *a)
{
    if (a->fd >= 0)
        return 0;
    fprintf(stderr, "mroce-conform: the agent is gone (%s); %s\n", a->err,
            a->bin[0] ? "starting it again" : "reconnecting");
    return cf_agent_respawn(a);
}

void cf_run_one(const struct cf_test *ts, struct cf_agent *a,
                const struct cf_opts *o, const struct cf_rules *rs,
                struct cf_result *out)
{
    struct cf_t *t = calloc(1, sizeof(*t));
    jmp_buf jb;
    uint64_t t0 = cf_now();
    *out = (struct cf_result){.test = ts, .kw = cf_grade_kw(ts, rs)};
    if (!t) {
        out->verdict = CF_FAIL;
        out->msg = strdup("out of memory");
        return;
    }
    t->test = ts;
    t->agent = a;
    t->ip = o->ip;
    t->scale = o->scale;
    t->trace = o->trace;
    t->abort_jmp = &jb;
    if (cf_agent_check(a) < 0) {
        cf_fail(t, "no agent: %s", a->err);
    } else {
        runner_watchdog(
            (int)((ts->timeout_ms ? ts->timeout_ms : 20000) * o->scale));
        if (!setjmp(jb))
            ts->fn(t);
        runner_watchdog(0);
    }
    if (cf_timed_out)
        cf_fail(t, "timed out");
    if (!setjmp(jb))
        cf_close(t);
    out->verdict = t->skipped ? CF_SKIP : t->failed ? CF_FAIL : CF_PASS;
    for (int i = 0; i < o->n_xfail; i++)
        out->xfail |= !strcmp(o->xfail[i], ts->id);
    out->time_s = (double)(cf_now() - t0) / 1e9;
    out->msg = t->msg[0] ? strdup(t->msg) : NULL;
    free(t);
    cf_agent_check(a);
}

/* ---- the agent ---- */

static void runner_agent_bin(const struct cf_opts *o, char *out, size_t cap)
{
    if (o->agent_bin) {
        snprintf(out, cap, "%s", o->agent_bin);
        return;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[n > 0 ? n : 0] = 0;
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = 0;
    snprintf(out, cap, "%.4000s/mroce-agent", slash ? self : ".");
}

static int runner_agent(const struct cf_opts *o, struct cf_agent *a)
{
    memset(a, 0, sizeof(*a));
    a->fd = -1;
    if (o->fault)
        snprintf(a->fault, sizeof(a->fault), "%s", o->fault);
    int rc;
    if (o->target) {
        rc = cf_agent_connect(a, o->target);
        if (rc == 0 && o->fault) {
            json_t *r = cf_agent_call(
                a, json_pack("{s:s, s:s}", "cmd", "fault", "name", o->fault));
            rc = cf_reply_ok(r, NULL, 0) ? 0 : -1;
            json_decref(r);
        }
    } else {
        char bin[PATH_MAX];
        runner_agent_bin(o, bin, sizeof(bin));
        rc = cf_agent_spawn(a, bin, o->ip);
    }
    if (rc < 0)
        fprintf(stderr, "mroce-conform: %s\n", a->err);
    return rc;
}

/* ---- a whole run ---- */

static void runner_list(const struct cf_rules *rs)
{
    int n;
    const struct cf_test *const *all = cf_tests(&n);
    for (int i = 0; i < n; i++)
        printf("%-40s %-6s %-6s %s\n", all[i]->id, all[i]->section,
               cf_kw_name(cf_grade_kw(all[i], rs)), all[i]->rules);
    printf("%d test cases\n", n);
}

/* --retry N: a test that failed runs again, up to N times (a timing
 * check on a host too busy for it); one that then passes is reported as
 * passed with its first failure in the message and "retries" in the
 * JSON, so that a flaky rule still shows. */
static void runner_retry(const struct cf_test *ts, struct cf_agent *a,
                         const struct cf_opts *o, struct cf_run *run,
                         struct cf_result *r)
{
    char *first = r->msg;
    r->msg = NULL;
    while (r->verdict == CF_FAIL && !r->xfail && r->retries < o->retry) {
        struct cf_result again;
        cf_run_one(ts, a, o, &run->rules, &again);
        again.retries = r->retries + 1;
        free(r->msg);
        *r = again;
    }
    if (!r->retries) {
        r->msg = first;
        return;
    }
    char buf[1200];
    snprintf(buf, sizeof(buf), "%s on try %d; the first failed: %.900s",
             r->verdict == CF_PASS ? "passed" : "failed", r->retries + 1,
             first ? first : "");
    if (r->verdict != CF_PASS && r->msg)
        snprintf(buf, sizeof(buf), "%.1100s (failed %d times)", r->msg,
                 r->retries + 1);
    free(r->msg);
    free(first);
    r->msg = strdup(buf);
}

static int runner_suite(const struct cf_opts *o, struct cf_agent *a,
                        struct cf_run *run)
{
    int n;
    const struct cf_test *const *all = cf_tests(&n);
    run->res = calloc((size_t)n, sizeof(*run->res));
    if (!run->res)
        return -1;
    uint64_t t0 = cf_now();
    cf_mon_clear_all();
    for (int i = 0; i < n; i++) {
        if (!cf_selected(all[i], o))
            continue;
        struct cf_result *r = &run->res[run->n_res++];
        cf_run_one(all[i], a, o, &run->rules, r);
        runner_retry(all[i], a, o, run, r);
        cf_report_console_line(r, o->verbose);
        if (o->stop_on_fail && cf_must_fail(r) && !r->xfail)
            break;
    }
    run->time_s = (double)(cf_now() - t0) / 1e9;
    return 0;
}

static void runner_describe(struct cf_agent *a, struct cf_run *run)
{
    json_t *h = a->hello;
    snprintf(run->agent_desc, sizeof(run->agent_desc),
             "%.40s (%.40s, datapath %.20s) at %.100s",
             json_string_value(json_object_get(h, "agent")),
             json_string_value(json_object_get(h, "impl")),
             json_string_value(json_object_get(h, "datapath")), a->target);
}

static int runner_reports(const struct cf_opts *o, const struct cf_run *run)
{
    int rc = 0;
    cf_report_summary(run);
    if (o->json && cf_report_json(run, o->json) < 0)
        rc = -1;
    if (o->junit && cf_report_junit(run, o->junit) < 0)
        rc = -1;
    if (o->md && cf_report_md(run, o->md) < 0)
        rc = -1;
    if (rc < 0)
        fprintf(stderr, "mroce-conform: cannot write a report\n");
    return rc;
}

int cf_main(int argc, char **argv)
{
    struct cf_opts o;
    if (runner_parse(argc, argv, &o) < 0) {
        usage();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, runner_alarm);
    struct cf_run run = {0};
    if (cf_rules_load(&run.rules, o.spec) < 0) {
        fprintf(stderr, "mroce-conform: no rules in %s\n", o.spec);
        return 2;
    }
    if (o.list) {
        runner_list(&run.rules);
        return 0;
    }
    struct cf_agent a;
    if (runner_agent(&o, &a) < 0)
        return 2;
    int rc;
    if (o.mutants) {
        rc = cf_mutants(&o, &a, &run.rules);
    } else {
        runner_describe(&a, &run);
        rc = runner_suite(&o, &a, &run);
        if (rc == 0 && runner_reports(&o, &run) < 0)
            rc = 2;
        for (int i = 0; rc == 0 && i < run.n_res; i++)
            if (cf_must_fail(&run.res[i]) && !run.res[i].xfail)
                rc = 1;
    }
    cf_agent_close(&a);
    for (int i = 0; i < run.n_res; i++)
        free(run.res[i].msg);
    free(run.res);
    cf_rules_free(&run.rules);
    return rc;
}
