/* The comparison suite end to end (src/sim/suite*.c): `--suite quick`
 * in-process into a temporary folder, then
 *   - results.json parses: one run per scenario and transport, each with
 *     its status, and the lossless MetaRoCE all-reduce measured;
 *   - the checker passes: report.md names every scenario and prints no
 *     number that results.json lacks;
 *   - the checker catches a hand-edited number and a missing scenario;
 *   - the JSON model keeps number literals through a round trip. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/suite.h"
#include "sim/suite_int.h"

static char dir[64];
static int suite_rc = -1;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/mroce_suite_XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char *argv[] = {"mroce-sim", "--suite", "quick", "--out", dir, "--quiet"};
    suite_rc = mroce_sim_suite_main(6, argv);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_results_parse(void **state)
{
    (void)state;
    assert_int_equal(suite_rc, 0); /* no run crashed or was refused */
    char path[128], err[160];
    snprintf(path, sizeof(path), "%s/results.json", dir);
    struct sj *res = sj_parse_file(path, err, sizeof(err));
    assert_non_null(res);
    assert_int_equal(res->type, SJ_ARR);
    const struct suite_def *d = suite_def_find("quick");
    int n_tr = d->n_tr;
    assert_int_equal(sj_len(res), d->n_scen * n_tr);
    for (const struct sj *r = res->child; r; r = r->next) {
        assert_non_null(sj_str(r, "status"));
        assert_non_null(sj_get(r, "config"));
        assert_non_null(sj_get(r, "targets"));
        assert_true(sj_has_num(r, "ideal_us"));
    }
    const struct sj *ar = suite_find_run(res, "allreduce", "metaroce");
    assert_string_equal(sj_str(ar, "status"), "ok");
    assert_true(sj_num(ar, "busbw_gbps", 0) > 0);
    assert_true(sj_num(ar, "ideal_busbw_gbps", 0) > 0);
    sj_free(res);
}

static void test_check_passes(void **state)
{
    (void)state;
    char why[300];
    int rc = mroce_sim_suite_check(dir, why, sizeof(why));
    if (rc)
        print_message("check: %s\n", why);
    assert_int_equal(rc, 0);
}

/* Replaces the first number after `after` in report.md with `with`. */
static char *edit_number(const char *md, const char *after, const char *with)
{
    const char *p = strstr(md, after);
    assert_non_null(p);
    p += strlen(after);
    while (*p && !(*p >= '0' && *p <= '9'))
        p++;
    const char *e = p;
    while ((*e >= '0' && *e <= '9') || *e == '.')
        e++;
    char *out = malloc(strlen(md) + strlen(with) + 1);
    assert_non_null(out);
    memcpy(out, md, (size_t)(p - md));
    strcpy(out + (p - md), with);
    strcat(out, e);
    return out;
}

static void test_check_catches_edits(void **state)
{
    (void)state;
    char path[128], why[300];
    snprintf(path, sizeof(path), "%s/report.md", dir);
    char *md = slurp(path);
    /* a busbw in the first table, edited by hand */
    char *edited = edit_number(md, "\n| allreduce | ", "98765.43");
    spit(path, edited);
    assert_int_equal(mroce_sim_suite_check(dir, why, sizeof(why)), -1);
    print_message("edited number: %s\n", why);
    assert_non_null(strstr(why, "98765.43"));
    free(edited);
    /* a scenario left out */
    char *cut = strdup(md);
    for (char *p = strstr(cut, "incast_15to1"); p;
         p = strstr(p, "incast_15to1"))
        memcpy(p, "incast_xxtox", 12);
    spit(path, cut);
    assert_int_equal(mroce_sim_suite_check(dir, why, sizeof(why)), -1);
    print_message("missing scenario: %s\n", why);
    free(cut);
    spit(path, md);
    assert_int_equal(mroce_sim_suite_check(dir, why, sizeof(why)), 0);
    free(md);
}

static void test_json_round_trip(void **state)
{
    (void)state;
    const char *text = "[{\"a\": 0.100000, \"b\": [1, 2.5e3, null], "
                       "\"s\": \"x\\\"y\", \"t\": true}]";
    char err[80];
    struct sj *v = sj_parse(text, err, sizeof(err));
    assert_non_null(v);
    const struct sj *o = v->child;
    assert_string_equal(sj_get(o, "a")->str, "0.100000");
    assert_true(sj_get(o, "b")->child->next->num == 2500);
    assert_string_equal(sj_str(o, "s"), "x\"y");
    assert_true(sj_get(o, "t")->b);
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_int_equal(sj_write(f, v), 0);
    fclose(f);
    assert_non_null(strstr(buf, "0.100000"));
    assert_non_null(strstr(buf, "2.5e3"));
    struct sj *w = sj_parse(buf, err, sizeof(err));
    assert_non_null(w);
    sj_free(w);
    free(buf);
    sj_free(v);
    assert_null(sj_parse("[1, 2", err, sizeof(err)));
    assert_true(err[0] != '\0');
}

/* A 64 MiB all-to-all on 64 hosts runs payload-free (12 GiB of buffers
 * otherwise): about 1 GiB; an 8,192-host run about 4 GiB, two of them
 * do not run side by side in 6 GiB; a run bigger than the budget still
 * runs alone. */
static void test_mem_gate(void **state)
{
    (void)state;
    const struct suite_def *d = suite_def_find("headline");
    const struct suite_scen *big = NULL;
    for (int i = 0; i < d->n_scen; i++)
        if (!strcmp(d->scen[i].id, "alltoall_planes8"))
            big = &d->scen[i];
    assert_non_null(big);
    struct suite_opts o = {.def = d};
    struct suite_job j = {.s = big, .o = &o};
    uint64_t gib = 1ull << 30, need = suite_job_mem(&j);
    assert_true(need >= gib && need <= 2 * gib);
    const struct suite_def *sd = suite_def_find("scale");
    struct suite_opts so = {.def = sd};
    struct suite_job sj = {.s = &sd->scen[0], .o = &so};
    uint64_t scale = suite_job_mem(&sj);
    assert_true(scale >= 3 * gib && scale <= 6 * gib);
    assert_false(suite_mem_fits(scale, scale, 6 * gib));
    assert_true(suite_mem_fits(scale, scale, 12 * gib));
    assert_true(suite_mem_fits(0, 64 * gib, 16 * gib));
    assert_true(suite_mem_fits(need, need, 0));
}

/* The scale suite end to end at 256 hosts (make test's reduced version):
 * every run ok with its tail FCT, the checker passes; a published figure
 * added to a record appears side by side in the regenerated report. */
static void test_scale_mini(void **state)
{
    (void)state;
    char sdir[64], path[128], err[160], why[300];
    snprintf(sdir, sizeof(sdir), "/tmp/mroce_scale_XXXXXX");
    assert_non_null(mkdtemp(sdir));
    char *argv[] = {"mroce-sim", "--suite", "scale-mini",
                    "--out",     sdir,      "--quiet"};
    assert_int_equal(mroce_sim_suite_main(6, argv), 0);
    snprintf(path, sizeof(path), "%s/results.json", sdir);
    struct sj *res = sj_parse_file(path, err, sizeof(err));
    assert_non_null(res);
    const struct suite_def *d = suite_def_find("scale-mini");
    assert_int_equal(sj_len(res), d->n_scen * d->n_tr);
    for (const struct sj *r = res->child; r; r = r->next) {
        assert_string_equal(sj_str(r, "status"), "ok");
        assert_true(sj_num(r, "tail_fct_us", 0) > sj_num(r, "min_fct_us", 0));
        assert_true(sj_has_num(r, "suite_wall_s"));
        /* the endpoints' counters: ACKs flowed; the non-degraded runs
         * are lossless and clean (degraded: late copies are dropped) */
        assert_true(sj_num(r, "acks_per_data_pkt", 0) > 0);
        assert_true(sj_has_num(sj_get(r, "endpoint_drops"), "total"));
        if (!strstr(sj_str(r, "scenario"), "degraded"))
            assert_true(sj_num(sj_get(r, "endpoint_drops"), "total", -1) == 0);
    }
    assert_int_equal(mroce_sim_suite_check(sdir, why, sizeof(why)), 0);
    struct sj *r0 = res->child, *ref = sj_get(r0, "ref");
    assert_int_equal(ref->type, SJ_NULL); /* scale-mini has no figures */
    ref->type = SJ_OBJ;
    sj_add_str(ref, "what", "a test figure");
    sj_add_num(ref, "tail_fct_us", 12.5);
    sj_add_num(ref, "min_fct_us", 7.25);
    sj_add_num(ref, "target_us", 11);
    sj_set_num(r0, "tail_vs_ref", sj_num(r0, "tail_fct_us", 0) / 12.5);
    assert_int_equal(sj_write_file(path, res), 0);
    sj_free(res);
    char *rep[] = {"mroce-sim", "--suite", "report", "--out", sdir};
    assert_int_equal(mroce_sim_suite_main(5, rep), 0);
    snprintf(path, sizeof(path), "%s/report.md", sdir);
    char *md = slurp(path);
    assert_non_null(strstr(md, "Side by side with htsim"));
    assert_non_null(strstr(md, "| 12.500 |"));
    free(md);
    assert_int_equal(mroce_sim_suite_check(sdir, why, sizeof(why)), 0);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sdir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_mem_gate),
        cmocka_unit_test(test_results_parse),
        cmocka_unit_test(test_check_passes),
        cmocka_unit_test(test_check_catches_edits),
        cmocka_unit_test(test_scale_mini),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
