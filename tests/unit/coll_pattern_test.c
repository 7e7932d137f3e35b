/* Incast and permutation over the in-process test wire, on both
 * transports, with and without loss: every flow's bytes must land in
 * place, and every flow must carry sane completion times. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "coll/pattern.h"
#include "io/testwire/twloop.h"
#include "support/coll_fix.h"

static void fix_open(struct coll_fix *f, int n, int transport, double loss,
                     size_t bytes)
{
    struct mroce_coll_cfg cc = {.n_ranks = n,
                                .transport = (uint8_t)transport,
                                .n_channels = 2,
                                .buf_bytes = (size_t)n * bytes,
                                .seed = 23,
                                .rocev2_timeout = 8};
    /* The wire's seed varies with N so the lossy runs draw different
     * drops. */
    coll_fix_open(f, &cc, loss, 6 + (uint64_t)n);
}

static void fix_close(struct coll_fix *f)
{
    coll_fix_close(f);
}

/* The loop's virtual time is the clock the flows are stamped with. */
static int pat_pred(struct mroce_twloop *loop, void *arg)
{
    int rc = mroce_coll_pattern_progress(arg, mroce_twloop_now(loop));
    assert_true(rc >= 0);
    return rc;
}

/* Every flow started at t0 and finished in (t0, t1]; a sender learns of
 * the delivery from the ACK, after the receiver, unless both are seen in
 * the same pass. */
static void check_times(const struct mroce_coll_pattern *p, uint64_t t0,
                        uint64_t t1)
{
    int nf;
    const struct mroce_coll_flow *fl = mroce_coll_pattern_flows(p, &nf);
    for (int i = 0; i < nf; i++) {
        assert_int_equal(fl[i].start, t0);
        assert_true(fl[i].rx_done > t0 && fl[i].rx_done <= t1);
        assert_true(fl[i].tx_done >= fl[i].rx_done && fl[i].tx_done <= t1);
    }
}

/* Runs one pattern and leaves it for the caller to inspect and free. */
static struct mroce_coll_pattern *run_pat(struct coll_fix *f, int kind,
                                          size_t bytes, uint64_t seed)
{
    mroce_coll_pattern_fill(f->comm, bytes);
    struct mroce_coll_pattern_args a = {
        .kind = kind, .bytes = bytes, .seed = seed};
    struct mroce_coll_pattern *p;
    uint64_t t0 = mroce_twloop_now(f->loop);
    assert_int_equal(mroce_coll_pattern_start(f->comm, &a, t0, &p), 0);
    int rc = mroce_twloop_run_until(f->loop, pat_pred, p, t0 + 5000000000ull);
    assert_int_equal(rc, MROCE_TWLOOP_DONE);
    assert_true(mroce_coll_pattern_done(p));
    assert_int_equal(mroce_coll_pattern_check(p, NULL), -1);
    check_times(p, t0, mroce_twloop_now(f->loop));
    return p;
}

/* Returns the packets the wire dropped, so the lossy runs can show that
 * they did lose some. */
static uint64_t one(int n, int transport, int kind, double loss)
{
    struct coll_fix f = {0};
    size_t bytes = 128000; /* about 32 packets of 4 KiB per flow */
    fix_open(&f, n, transport, loss, bytes);
    /* Three rounds on one communicator: the state is per pattern, and 1%
     * loss needs a few hundred packets to show. */
    for (uint64_t seed = 0; seed < 3; seed++)
        mroce_coll_pattern_free(run_pat(&f, kind, bytes, seed));
    struct mroce_tw_stats st;
    mroce_tw_stats(f.tw, &st);
    fix_close(&f);
    return st.lost_random;
}

static void matrix(int transport, int kind)
{
    static const int ns[] = {2, 4, 8};
    uint64_t lost = 0;
    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        assert_int_equal(one(ns[i], transport, kind, 0), 0);
        lost += one(ns[i], transport, kind, 0.01);
    }
    assert_true(lost > 0); /* the lossy runs did recover from drops */
}

static void test_meta_incast(void **state)
{
    (void)state;
    matrix(MROCE_TRANSPORT_METAROCE, MROCE_COLL_INCAST);
}

static void test_meta_permutation(void **state)
{
    (void)state;
    matrix(MROCE_TRANSPORT_METAROCE, MROCE_COLL_PERMUTATION);
}

static void test_rocev2_incast(void **state)
{
    (void)state;
    matrix(MROCE_TRANSPORT_ROCEV2, MROCE_COLL_INCAST);
}

static void test_rocev2_permutation(void **state)
{
    (void)state;
    matrix(MROCE_TRANSPORT_ROCEV2, MROCE_COLL_PERMUTATION);
}

/* Incast: senders 1..N-1 into rank 0, side by side. */
static void test_incast_flows(void **state)
{
    (void)state;
    struct coll_fix f = {0};
    fix_open(&f, 4, MROCE_TRANSPORT_METAROCE, 0, 1000);
    struct mroce_coll_pattern *p = run_pat(&f, MROCE_COLL_INCAST, 1000, 0);
    int nf;
    const struct mroce_coll_flow *fl = mroce_coll_pattern_flows(p, &nf);
    assert_int_equal(nf, 3);
    for (int i = 0; i < nf; i++) {
        assert_int_equal(fl[i].src, i + 1);
        assert_int_equal(fl[i].dst, 0);
    }
    mroce_coll_pattern_free(p);
    fix_close(&f);
}

/* A derangement: nobody sends to itself and everyone receives once; the
 * seed picks it, reproducibly. */
static void test_permutation_is_derangement(void **state)
{
    (void)state;
    struct coll_fix f = {0};
    fix_open(&f, 8, MROCE_TRANSPORT_METAROCE, 0, 256);
    int first[8], differs = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        struct mroce_coll_pattern *p =
            run_pat(&f, MROCE_COLL_PERMUTATION, 256, seed % 3);
        int nf, seen[8] = {0};
        const struct mroce_coll_flow *fl = mroce_coll_pattern_flows(p, &nf);
        assert_int_equal(nf, 8);
        for (int i = 0; i < nf; i++) {
            assert_int_equal(fl[i].src, i);
            assert_int_not_equal(fl[i].dst, i);
            seen[fl[i].dst]++;
            if (seed == 1)
                first[i] = fl[i].dst;
            else if (seed == 4) /* same seed as 1 */
                assert_int_equal(fl[i].dst, first[i]);
            else
                differs |= fl[i].dst != first[i];
        }
        for (int r = 0; r < 8; r++)
            assert_int_equal(seen[r], 1);
        mroce_coll_pattern_free(p);
    }
    assert_true(differs);
    fix_close(&f);
}

/* The checker must see one bad byte, for either pattern. */
static void test_check_catches_corruption(void **state)
{
    (void)state;
    struct coll_fix f = {0};
    size_t bytes = 2048;
    fix_open(&f, 4, MROCE_TRANSPORT_METAROCE, 0, bytes);
    struct mroce_coll_pattern *p = run_pat(&f, MROCE_COLL_INCAST, bytes, 0);
    f.comm->rank[0].rbuf[2 * bytes + 9] ^= 0x01; /* sender 3's flow */
    int bad = -1;
    assert_int_equal(mroce_coll_pattern_check(p, &bad), (long)(2 * bytes + 9));
    assert_int_equal(bad, 0);
    mroce_coll_pattern_free(p);

    p = run_pat(&f, MROCE_COLL_PERMUTATION, bytes, 5);
    int nf;
    const struct mroce_coll_flow *fl = mroce_coll_pattern_flows(p, &nf);
    f.comm->rank[fl[2].dst].rbuf[1500] ^= 0x80;
    bad = -1;
    assert_int_equal(mroce_coll_pattern_check(p, &bad), 1500);
    assert_int_equal(bad, fl[2].dst);
    mroce_coll_pattern_free(p);
    fix_close(&f);
}

static void test_bad_args(void **state)
{
    (void)state;
    struct coll_fix f = {0};
    fix_open(&f, 3, MROCE_TRANSPORT_METAROCE, 0, 1000); /* 3000 B buffers */
    struct mroce_coll_pattern *p = (void *)1;
    struct mroce_coll_pattern_args a = {.kind = MROCE_COLL_INCAST};
    assert_int_equal(mroce_coll_pattern_start(f.comm, &a, 0, &p), MROCE_EINVAL);
    assert_null(p);
    a.bytes = 1001; /* odd: not a multiple of the 2 channels */
    assert_int_equal(mroce_coll_pattern_start(f.comm, &a, 0, &p), MROCE_EINVAL);
    a.bytes = 1502; /* 2 flows of it above the buffers */
    assert_int_equal(mroce_coll_pattern_start(f.comm, &a, 0, &p), MROCE_EINVAL);
    a.kind = MROCE_COLL_PERMUTATION;
    a.bytes = 3002;
    assert_int_equal(mroce_coll_pattern_start(f.comm, &a, 0, &p), MROCE_EINVAL);
    a.kind = 7;
    a.bytes = 100;
    assert_int_equal(mroce_coll_pattern_start(f.comm, &a, 0, &p), MROCE_EINVAL);
    fix_close(&f);
}

/* Incast FCTs for the record (no assert). The test wire serializes at the
 * sender only, so the receiver's link is no bottleneck here: each flow
 * should take about bytes at line rate plus the delay and the ACK. The
 * real incast (a shared downlink) is for the simulator. */
static void test_report_fct(void **state)
{
    (void)state;
    const int n = 8;
    size_t bytes = 64 * 1024;
    static const int tr[] = {MROCE_TRANSPORT_METAROCE, MROCE_TRANSPORT_ROCEV2};
    for (int i = 0; i < 2; i++) {
        struct coll_fix f = {0};
        fix_open(&f, n, tr[i], 0, bytes);
        struct mroce_coll_pattern *p = run_pat(&f, MROCE_COLL_INCAST, bytes, 0);
        int nf;
        const struct mroce_coll_flow *fl = mroce_coll_pattern_flows(p, &nf);
        uint64_t lo = UINT64_MAX, hi = 0;
        for (int k = 0; k < nf; k++) {
            uint64_t fct = fl[k].tx_done - fl[k].start;
            lo = fct < lo ? fct : lo;
            hi = fct > hi ? fct : hi;
        }
        double ideal = (double)bytes * 8 / 100.0; /* ns at 100 Gbit/s */
        print_message("incast %s %d->1 %zu B/flow, 100 Gbit/s: FCT min %.1f "
                      "us max %.1f us (serialization %.1f us)\n",
                      i ? "RoCEv2" : "MetaRoCE", n - 1, bytes, lo / 1e3,
                      hi / 1e3, ideal / 1e3);
        mroce_coll_pattern_free(p);
        fix_close(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meta_incast),
        cmocka_unit_test(test_meta_permutation),
        cmocka_unit_test(test_rocev2_incast),
        cmocka_unit_test(test_rocev2_permutation),
        cmocka_unit_test(test_incast_flows),
        cmocka_unit_test(test_permutation_is_derangement),
        cmocka_unit_test(test_check_catches_corruption),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_report_fct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
