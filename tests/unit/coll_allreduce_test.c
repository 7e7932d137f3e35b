/* Ring all-reduce over the in-process test wire, on both transports and in
 * both flavours, with and without loss; every rank's result is checked
 * against the exact sums. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "coll/allreduce.h"
#include "io/testwire/twloop.h"
#include "support/coll_fix.h"

static void fix_open(struct coll_fix *f, int n, int transport,
                     uint16_t channels, double loss, size_t bytes)
{
    struct mroce_coll_cfg cc = {.n_ranks = n,
                                .transport = (uint8_t)transport,
                                .n_channels = channels,
                                .buf_bytes = bytes,
                                .seed = 11,
                                .rocev2_timeout = 8};
    coll_fix_open(f, &cc, loss, 3);
}

static void fix_close(struct coll_fix *f)
{
    coll_fix_close(f);
}

static int ar_pred(struct mroce_twloop *loop, void *arg)
{
    (void)loop;
    int rc = mroce_coll_allreduce_progress(arg);
    assert_true(rc >= 0);
    return rc;
}

/* Runs one all-reduce; returns its virtual duration in ns. */
static uint64_t run_ar(struct coll_fix *f, size_t count, size_t slice,
                       int flavour)
{
    mroce_coll_allreduce_fill(f->comm, count);
    struct mroce_coll_allreduce_args a = {
        .count = count, .slice_count = slice, .flavour = flavour};
    struct mroce_coll_allreduce *ar;
    uint64_t t0 = mroce_twloop_now(f->loop);
    assert_int_equal(mroce_coll_allreduce_start(f->comm, &a, &ar), 0);
    int rc = mroce_twloop_run_until(f->loop, ar_pred, ar, t0 + 5000000000ull);
    assert_int_equal(rc, MROCE_TWLOOP_DONE);
    assert_true(mroce_coll_allreduce_done(ar));
    mroce_coll_allreduce_free(ar);
    assert_int_equal(mroce_coll_allreduce_check(f->comm, count, NULL), -1);
    return mroce_twloop_now(f->loop) - t0;
}

static void one(int n, int transport, int flavour, double loss)
{
    struct coll_fix f = {0};
    size_t count = (size_t)n * 3000; /* 3 slices of 1000 floats per chunk */
    fix_open(&f, n, transport, 2, loss, count * sizeof(float));
    run_ar(&f, count, 1000, flavour);
    fix_close(&f);
}

static void matrix(int transport, int flavour)
{
    static const int ns[] = {2, 3, 4, 8};
    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        one(ns[i], transport, flavour, 0);
        one(ns[i], transport, flavour, 0.01);
    }
}

static void test_meta_write_imm(void **state)
{
    (void)state;
    matrix(MROCE_TRANSPORT_METAROCE, MROCE_COLL_WRITE_IMM);
}

static void test_meta_send(void **state)
{
    (void)state;
    matrix(MROCE_TRANSPORT_METAROCE, MROCE_COLL_SEND);
}

static void test_rocev2_write_imm(void **state)
{
    (void)state;
    matrix(MROCE_TRANSPORT_ROCEV2, MROCE_COLL_WRITE_IMM);
}

static void test_rocev2_send(void **state)
{
    (void)state;
    matrix(MROCE_TRANSPORT_ROCEV2, MROCE_COLL_SEND);
}

/* Runs twice on one communicator: the state is per collective. */
static void test_repeat_and_odd_slices(void **state)
{
    (void)state;
    struct coll_fix f = {0};
    fix_open(&f, 3, MROCE_TRANSPORT_METAROCE, 3, 0, 3 * 1001 * 4);
    run_ar(&f, 3 * 1001, 250, MROCE_COLL_WRITE_IMM); /* last slice short */
    run_ar(&f, 3 * 1001, 0, MROCE_COLL_SEND);        /* one slice/chunk */
    fix_close(&f);
}

/* The checker is what the other tests rely on: it must see one bad float. */
static void test_check_catches_corruption(void **state)
{
    (void)state;
    struct coll_fix f = {0};
    size_t count = 4 * 512;
    fix_open(&f, 4, MROCE_TRANSPORT_METAROCE, 1, 0, count * sizeof(float));
    run_ar(&f, count, 128, MROCE_COLL_WRITE_IMM);
    float *res = (float *)(void *)f.comm->rank[2].rbuf;
    res[777] += 1.0f;
    int bad = -1;
    assert_int_equal(mroce_coll_allreduce_check(f.comm, count, &bad), 777);
    assert_int_equal(bad, 2);
    fix_close(&f);
}

static void test_bad_args(void **state)
{
    (void)state;
    struct coll_fix f = {0};
    fix_open(&f, 3, MROCE_TRANSPORT_METAROCE, 1, 0, 4096);
    struct mroce_coll_allreduce *ar;
    struct mroce_coll_allreduce_args a = {.count = 100};
    assert_int_equal(mroce_coll_allreduce_start(f.comm, &a, &ar),
                     MROCE_EINVAL); /* not a multiple of 3 */
    a.count = 3 * 4096;
    assert_int_equal(mroce_coll_allreduce_start(f.comm, &a, &ar),
                     MROCE_EINVAL); /* larger than the buffers */
    a.count = 30;
    a.flavour = 9;
    assert_int_equal(mroce_coll_allreduce_start(f.comm, &a, &ar), MROCE_EINVAL);
    fix_close(&f);
}

/* busbw = S/t * 2(N-1)/N (docs: shared guide, metrics.md); no assert. */
static void test_report_busbw(void **state)
{
    (void)state;
    const int n = 8;
    size_t count = (size_t)n * 32768; /* 1 MiB */
    static const int tr[] = {MROCE_TRANSPORT_METAROCE, MROCE_TRANSPORT_ROCEV2};
    for (int i = 0; i < 2; i++) {
        struct coll_fix f = {0};
        fix_open(&f, n, tr[i], 4, 0, count * sizeof(float));
        uint64_t t = run_ar(&f, count, 4096, MROCE_COLL_WRITE_IMM);
        double s = (double)(count * sizeof(float));
        double busbw = s * 8 / (double)t * 2.0 * (n - 1) / n; /* Gbit/s */
        print_message("all-reduce %s N=%d S=%zu B 4 channels, 100 Gbit/s "
                      "links: t=%.1f us busbw=%.1f Gbit/s\n",
                      i ? "RoCEv2" : "MetaRoCE", n, (size_t)s, t / 1e3, busbw);
        fix_close(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meta_write_imm),
        cmocka_unit_test(test_meta_send),
        cmocka_unit_test(test_rocev2_write_imm),
        cmocka_unit_test(test_rocev2_send),
        cmocka_unit_test(test_repeat_and_odd_slices),
        cmocka_unit_test(test_check_catches_corruption),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_report_busbw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
