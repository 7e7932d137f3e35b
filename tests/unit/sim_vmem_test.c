/* Payload-free runs (src/sim/vmem.c through mroce_sim_exp_run): the
 * same scenario gives the same results with real buffers and without
 * them, and a misplaced, a missing and a duplicated placement is caught
 * in both modes, for flows and for each collective, on both transports. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "sim/exp.h"
#include "sim/vmem.h"

static struct mroce_sim_exp_cfg base_cfg(int workload, int transport)
{
    struct mroce_sim_exp_cfg c = {
        .transport = transport,
        .workload = workload,
        .hosts = 8,
        .hosts_per_leaf = 4,
        .size = 256 * 1024,
        .seed = 3,
        .loss = 0.003,
        .channels = workload == MROCE_SIM_EXP_ALLREDUCE ? 2 : 1,
        .deadline_ps = 2000000000000ull, /* 2 s: RoCEv2 may time out */
    };
    return c;
}

/* 0: ran, every flow or iteration verified; 1: ran, something wrong. */
static int run(struct mroce_sim_exp_cfg c, int payload, int fault,
               struct mroce_sim_exp_result *out)
{
    c.payload = payload;
    c.place_fault = fault;
    c.place_fault_at = 37;
    struct mroce_sim_exp_result r;
    assert_int_equal(mroce_sim_exp_run(&c, &r), 0);
    int bad = r.flows_corrupt + r.flows_failed > 0;
    if (bad && !fault)
        printf("[ error    ] %s %s payload %d: %d corrupt, %d failed\n",
               c.transport ? "rocev2" : "metaroce",
               mroce_sim_exp_workload_str(c.workload), payload, r.flows_corrupt,
               r.flows_failed);
    if (out)
        *out = r;
    else
        mroce_sim_exp_result_free(&r);
    return bad;
}

static const int workloads[] = {MROCE_SIM_EXP_PERMUTATION,
                                MROCE_SIM_EXP_ALLREDUCE, MROCE_SIM_EXP_ALLTOALL,
                                MROCE_SIM_EXP_ALLGATHER};

/* Same events, same times, same counters: only the payload fields
 * differ between the modes. */
static void test_modes_agree(void **state)
{
    (void)state;
    for (int t = 0; t < 2; t++)
        for (size_t w = 0; w < sizeof(workloads) / sizeof(*workloads); w++) {
            int tr = t ? MROCE_TRANSPORT_ROCEV2 : MROCE_TRANSPORT_METAROCE;
            struct mroce_sim_exp_cfg c = base_cfg(workloads[w], tr);
            struct mroce_sim_exp_result a, b;
            assert_int_equal(run(c, MROCE_SIM_EXP_PAYLOAD_REAL, 0, &a), 0);
            assert_int_equal(run(c, MROCE_SIM_EXP_PAYLOAD_FREE, 0, &b), 0);
            assert_false(a.payload_free);
            assert_true(b.payload_free);
            assert_int_equal(a.events, b.events);
            assert_int_equal(a.jct_ps, b.jct_ps);
            assert_int_equal(a.retx_pkts, b.retx_pkts);
            assert_int_equal(a.placed_bytes, b.placed_bytes);
            assert_int_equal(a.vmem.placements, b.vmem.placements);
            assert_int_equal(
                b.vmem.misaligned + b.vmem.bad_tags + b.vmem.duplicates, 0);
            assert_true(b.buffer_bytes * 50 < a.buffer_bytes);
            mroce_sim_exp_result_free(&a);
            mroce_sim_exp_result_free(&b);
        }
}

/* Each fault on placement 37, in each mode: the run must say the data is
 * wrong. Without the fault (above) it is right, so the check can fail
 * only because of the fault. */
static void test_faults_caught(void **state)
{
    (void)state;
    static const int faults[] = {MROCE_SIM_VMEM_FAULT_MISPLACE,
                                 MROCE_SIM_VMEM_FAULT_SKIP,
                                 MROCE_SIM_VMEM_FAULT_TWICE};
    static const char *const fname[] = {"", "misplaced", "missing",
                                        "duplicated"};
    for (int t = 0; t < 2; t++)
        for (size_t w = 0; w < sizeof(workloads) / sizeof(*workloads); w++)
            for (int m = 0; m < 2; m++)
                for (int f = 0; f < 3; f++) {
                    int tr =
                        t ? MROCE_TRANSPORT_ROCEV2 : MROCE_TRANSPORT_METAROCE;
                    struct mroce_sim_exp_cfg c = base_cfg(workloads[w], tr);
                    int mode = m ? MROCE_SIM_EXP_PAYLOAD_FREE
                                 : MROCE_SIM_EXP_PAYLOAD_REAL;
                    struct mroce_sim_exp_result r;
                    int bad = run(c, mode, faults[f], &r);
                    printf("[ fault    ] %-9s %-11s %-4s %-10s: %s\n",
                           t ? "rocev2" : "metaroce",
                           mroce_sim_exp_workload_str(workloads[w]),
                           m ? "free" : "real", fname[faults[f]],
                           bad ? "caught" : "MISSED");
                    assert_int_equal(r.vmem.faults, 1);
                    assert_int_equal(bad, 1);
                    mroce_sim_exp_result_free(&r);
                }
}

/* auto picks payload-free above the threshold only. */
static void test_auto(void **state)
{
    (void)state;
    struct mroce_sim_exp_cfg c =
        base_cfg(MROCE_SIM_EXP_PERMUTATION, MROCE_TRANSPORT_METAROCE);
    c.loss = 0;
    struct mroce_sim_exp_result r;
    run(c, MROCE_SIM_EXP_PAYLOAD_AUTO, 0, &r);
    assert_false(r.payload_free);
    mroce_sim_exp_result_free(&r);
    c.size = 48ull << 20; /* 8 x 48 MiB > 256 MiB */
    c.hosts = 8;
    run(c, MROCE_SIM_EXP_PAYLOAD_AUTO, 0, &r);
    assert_true(r.payload_free);
    assert_int_equal(r.flows_completed, 8);
    mroce_sim_exp_result_free(&r);
    /* a granule below 64 bytes cannot carry tags: forced free refuses */
    c.size = 256 * 1024;
    c.mtu = 1000;
    c.payload = MROCE_SIM_EXP_PAYLOAD_FREE;
    assert_int_equal(mroce_sim_exp_run(&c, &r), MROCE_EINVAL);
    mroce_sim_exp_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modes_agree),
        cmocka_unit_test(test_faults_caught),
        cmocka_unit_test(test_auto),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
