/* The experiment driver over partitions (src/sim/exp_par.c), with ranks
 * as threads (no MPI needed): a scenario run on 2 and 4 ranks writes
 * byte for byte the results JSON of the one-rank run (wall-clock and
 * rank fields aside, which the JSON leaves out without REPORT_WALL), its
 * ranks' events add up to the run's, and what crossed the cut is counted.
 * Scenarios: a permutation with a failing leaf-spine cable, an all-to-all
 * with 1% loss, a fat-tree whose agg-core cable fails, RoCEv2 with PFC
 * pauses. tests/mpi/sim_identical.sh checks the same over MPI at 256 hosts;
 * sim_prun_test checks the runner below the driver. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce.h>

#include "sim/event.h"
#include "sim/exp.h"
#include "sim/link.h"
#include "sim/report.h"

static char *json_of(const struct mroce_sim_exp_result *r)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    assert_non_null(f);
    assert_int_equal(mroce_sim_report_json(f, r, false), 0);
    fclose(f);
    return s;
}

static void run(const struct mroce_sim_exp_cfg *c, int ranks,
                struct mroce_sim_exp_result *r)
{
    struct mroce_sim_exp_cfg rc = *c;
    rc.ranks = ranks;
    int err = mroce_sim_exp_run(&rc, r);
    if (err)
        fail_msg("%d ranks refused: %s (%s)", ranks, r->error,
                 mroce_strerror(err));
}

/* 1, 2 and 4 ranks: the same JSON; events add up; the cut is used. */
static void check_identical(const char *what, const struct mroce_sim_exp_cfg *c)
{
    struct mroce_sim_exp_result one;
    run(c, 1, &one);
    assert_int_equal(one.flows_failed, 0);
    assert_int_equal(one.flows_corrupt, 0);
    char *a = json_of(&one);
    for (int ranks = 2; ranks <= 4; ranks *= 2) {
        struct mroce_sim_exp_result r;
        run(c, ranks, &r);
        char *b = json_of(&r);
        assert_string_equal(a, b);
        assert_int_equal(r.ranks, ranks);
        uint64_t sum = 0;
        for (int i = 0; i < ranks; i++) {
            assert_true(r.rank_events[i] > 0);
            sum += r.rank_events[i];
        }
        assert_int_equal(sum, r.events);
        assert_true(r.cut_msgs > 0 && r.windows > 0);
        assert_int_equal(r.lookahead_ps, MROCE_SIM_PS_PER_US);
        print_message("[ part     ] %-38s %d ranks: %zu identical bytes of "
                      "JSON, %llu events, %llu cut messages\n",
                      what, ranks, strlen(b), (unsigned long long)r.events,
                      (unsigned long long)r.cut_msgs);
        free(b);
        mroce_sim_exp_result_free(&r);
    }
    assert_int_equal(one.ranks, 1);
    assert_int_equal(one.cut_msgs, 0);
    free(a);
    mroce_sim_exp_result_free(&one);
}

static struct mroce_sim_exp_cfg leaf_spine(int workload)
{
    struct mroce_sim_exp_cfg c = {
        .hosts = 64, .hosts_per_leaf = 8, .workload = workload, .seed = 3};
    return c;
}

static void test_permutation_link_failure(void **state)
{
    (void)state;
    struct mroce_sim_exp_cfg c = leaf_spine(MROCE_SIM_EXP_PERMUTATION);
    c.size = 128 * 1024;
    c.n_fail = 1;
    strcpy(c.fail[0].link, "leaf0-spine1");
    c.fail[0].t_ps = 2 * MROCE_SIM_PS_PER_US;
    check_identical("permutation, leaf0-spine1 fails", &c);
}

static void test_alltoall_loss(void **state)
{
    (void)state;
    struct mroce_sim_exp_cfg c = leaf_spine(MROCE_SIM_EXP_ALLTOALL);
    c.size = 256 * 1024;
    c.paths = 4;
    c.loss = 0.01;
    c.iters = 2;
    check_identical("all-to-all x2, 1% loss", &c);
}

static void test_fat_tree_link_failure(void **state)
{
    (void)state;
    struct mroce_sim_exp_cfg c = {.fat_k = 4,
                                  .oversub = 2,
                                  .workload = MROCE_SIM_EXP_PERMUTATION,
                                  .size = 128 * 1024,
                                  .seed = 5,
                                  .n_fail = 1};
    strcpy(c.fail[0].link, "agg0-core1");
    c.fail[0].t_ps = 3 * MROCE_SIM_PS_PER_US;
    check_identical("fat-tree, agg0-core1 fails", &c);
}

/* RoCEv2 with PFC: pause frames cross the cut too. */
static void test_rocev2_pfc(void **state)
{
    (void)state;
    struct mroce_sim_exp_cfg c = leaf_spine(MROCE_SIM_EXP_PERMUTATION);
    c.transport = MROCE_TRANSPORT_ROCEV2;
    c.qps = 2;
    c.spines = 2; /* 4:1 oversubscribed: queues fill, PFC pauses */
    c.size = 128 * 1024;
    check_identical("RoCEv2, PFC, 4:1 oversubscribed", &c);
}

/* More ranks than leaf groups, or a cut without delay: a clear refusal. */
static void test_refused(void **state)
{
    (void)state;
    struct mroce_sim_exp_cfg c = leaf_spine(MROCE_SIM_EXP_PERMUTATION);
    struct mroce_sim_exp_result r;
    c.ranks = 16;
    assert_int_equal(mroce_sim_exp_run(&c, &r), MROCE_EINVAL);
    assert_non_null(strstr(r.error, "leaf group"));
    mroce_sim_exp_result_free(&r);
    c.ranks = 2;
    c.delay_ps = MROCE_SIM_ZERO_DELAY;
    assert_int_equal(mroce_sim_exp_run(&c, &r), MROCE_EINVAL);
    assert_non_null(strstr(r.error, "no lookahead"));
    mroce_sim_exp_result_free(&r);
    c.ranks = 1; /* one rank needs no lookahead */
    assert_int_equal(mroce_sim_exp_run(&c, &r), 0);
    assert_int_equal(r.flows_failed, 0);
    mroce_sim_exp_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_permutation_link_failure),
        cmocka_unit_test(test_alltoall_loss),
        cmocka_unit_test(test_fat_tree_link_failure),
        cmocka_unit_test(test_rocev2_pfc),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
