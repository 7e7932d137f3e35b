/* Collectives on the fabric simulator (src/sim/exp.c, what mroce-sim
 * --workload allreduce|alltoall runs): a small all-reduce (both flavours)
 * and all-to-all (both schedules) over 8 hosts (2 leaves of 4, 4 spines)
 * on both transports. Asserted: every iteration completed and verified
 * (exact sums, every block), and the bandwidths are positive and at most
 * the line rate, and the ideal's eta is the delivered frames' own
 * payload / wire bytes; busbw and fraction of ideal are printed, not
 * asserted. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include <mroce/mroce.h>

#include "sim/exp.h"
#include "sim/report.h"

static struct mroce_sim_exp_cfg base(int transport, int workload)
{
    struct mroce_sim_exp_cfg c = {
        .transport = transport,
        .workload = workload,
        .hosts = 8,
        .hosts_per_leaf = 4,
        .spines = 4,
        .size = 256 * 1024,
        .iters = 2,
        .channels = 2,
        .seed = 5,
    };
    return c;
}

static void run(const struct mroce_sim_exp_cfg *c, const char *variant)
{
    struct mroce_sim_exp_result r;
    int err = mroce_sim_exp_run(c, &r);
    if (err)
        fprintf(stderr, "sim_coll: %s\n", r.error);
    assert_int_equal(err, 0);
    printf("  %-8s %-9s %-10s jct %8.3f us (ideal %8.3f), busbw %7.2f Gb/s "
           "(ideal %7.2f), fraction of ideal %.3f\n",
           mroce_sim_report_transport_str(c->transport),
           mroce_sim_exp_workload_str(c->workload), variant,
           (double)r.jct_ps / 1e6, (double)r.ideal_ps / 1e6, r.busbw_gbps,
           r.ideal_busbw_gbps, r.fraction_of_ideal);
    assert_true(r.coll_verified);
    assert_int_equal(r.iters_done, c->iters);
    assert_int_equal(r.flows_failed, 0);
    assert_int_equal(r.flows_corrupt, 0);
    assert_true(r.jct_ps > 0 && r.ideal_ps > 0);
    assert_true(r.busbw_gbps > 0 && r.busbw_gbps <= r.line_gbps);
    assert_true(r.ideal_busbw_gbps > 0);
    assert_true(r.fraction_of_ideal > 0 && r.fraction_of_ideal <= 1.0);
    assert_int_equal(r.pkts.in_flight + r.pkts.delivered + r.pkts.dropped_total,
                     r.pkts.injected);
    /* One source of truth for header sizes: the ideal's eta (from the wire
     * modules' opcode tables) is what the delivered frames carried. */
    printf("  eta %.6f, measured %.6f (%.3f B of header per packet, %llu "
           "retransmitted)\n",
           r.eta, r.eta_measured, r.hdr_bytes, (unsigned long long)r.retx_pkts);
    if (!r.retx_pkts)
        assert_true(fabs(r.eta - r.eta_measured) < 1e-6);
    mroce_sim_exp_result_free(&r);
}

static void allreduce(int transport)
{
    struct mroce_sim_exp_cfg c = base(transport, MROCE_SIM_EXP_ALLREDUCE);
    run(&c, "writeimm");
    c.flavour = MROCE_SIM_EXP_FLAVOUR_SEND;
    run(&c, "send");
}

static void alltoall(int transport)
{
    struct mroce_sim_exp_cfg c = base(transport, MROCE_SIM_EXP_ALLTOALL);
    run(&c, "concurrent");
    c.shifted = 1;
    run(&c, "shifted");
}

static void test_meta_allreduce(void **state)
{
    (void)state;
    allreduce(MROCE_TRANSPORT_METAROCE);
}

static void test_rocev2_allreduce(void **state)
{
    (void)state;
    allreduce(MROCE_TRANSPORT_ROCEV2);
}

static void test_meta_alltoall(void **state)
{
    (void)state;
    alltoall(MROCE_TRANSPORT_METAROCE);
}

static void test_rocev2_alltoall(void **state)
{
    (void)state;
    alltoall(MROCE_TRANSPORT_ROCEV2);
}

/* Bad collective configurations are refused with a reason. */
static void test_refused(void **state)
{
    (void)state;
    struct mroce_sim_exp_cfg c =
        base(MROCE_TRANSPORT_METAROCE, MROCE_SIM_EXP_ALLREDUCE);
    c.channels = 65;
    struct mroce_sim_exp_result r;
    assert_int_equal(mroce_sim_exp_run(&c, &r), MROCE_EINVAL);
    assert_true(r.error[0] != 0);
    mroce_sim_exp_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meta_allreduce),
        cmocka_unit_test(test_rocev2_allreduce),
        cmocka_unit_test(test_meta_alltoall),
        cmocka_unit_test(test_rocev2_alltoall),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
