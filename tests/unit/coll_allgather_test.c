/* Ring all-gather over the in-process test wire, on both transports, with
 * and without loss; every rank's rbuf is checked byte for byte. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "coll/allgather.h"
#include "io/testwire/twloop.h"
#include "support/coll_fix.h"

static void fix_open(struct coll_fix *f, int n, int transport,
                     uint16_t channels, double loss, size_t bytes)
{
    struct mroce_coll_cfg cc = {.n_ranks = n,
                                .transport = (uint8_t)transport,
                                .n_channels = channels,
                                .buf_bytes = bytes,
                                .seed = 17,
                                .rocev2_timeout = 8};
    coll_fix_open(f, &cc, loss, 5);
}

static void fix_close(struct coll_fix *f)
{
    coll_fix_close(f);
}

static int ag_pred(struct mroce_twloop *loop, void *arg)
{
    (void)loop;
    int rc = mroce_coll_allgather_progress(arg);
    assert_true(rc >= 0);
    return rc;
}

/* Runs one all-gather; returns its virtual duration in ns. */
static uint64_t run_ag(struct coll_fix *f, size_t bytes, size_t slice)
{
    mroce_coll_allgather_fill(f->comm, bytes);
    struct mroce_coll_allgather_args a = {.bytes = bytes, .slice_bytes = slice};
    struct mroce_coll_allgather *ag;
    uint64_t t0 = mroce_twloop_now(f->loop);
    assert_int_equal(mroce_coll_allgather_start(f->comm, &a, &ag), 0);
    int rc = mroce_twloop_run_until(f->loop, ag_pred, ag, t0 + 5000000000ull);
    assert_int_equal(rc, MROCE_TWLOOP_DONE);
    assert_true(mroce_coll_allgather_done(ag));
    mroce_coll_allgather_free(ag);
    assert_int_equal(mroce_coll_allgather_check(f->comm, bytes, NULL), -1);
    return mroce_twloop_now(f->loop) - t0;
}

/* Returns the packets the wire dropped, so the lossy runs can show that
 * they did lose some. */
static uint64_t one(int n, int transport, double loss)
{
    struct coll_fix f = {0};
    size_t bytes = 48000; /* 3 slices of 16000 bytes per chunk */
    fix_open(&f, n, transport, 2, loss, (size_t)n * bytes);
    run_ag(&f, bytes, 16000);
    struct mroce_tw_stats st;
    mroce_tw_stats(f.tw, &st);
    fix_close(&f);
    return st.lost_random;
}

static void matrix(int transport)
{
    static const int ns[] = {2, 4, 8};
    uint64_t lost = 0;
    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        assert_int_equal(one(ns[i], transport, 0), 0);
        lost += one(ns[i], transport, 0.01);
    }
    assert_true(lost > 0); /* the lossy runs did recover from drops */
}

static void test_metaroce(void **state)
{
    (void)state;
    matrix(MROCE_TRANSPORT_METAROCE);
}

static void test_rocev2(void **state)
{
    (void)state;
    matrix(MROCE_TRANSPORT_ROCEV2);
}

/* Runs twice on one communicator (the state is per collective), with an
 * odd rank count, a short last slice and more channels than slices. */
static void test_repeat_and_odd_slices(void **state)
{
    (void)state;
    struct coll_fix f = {0};
    fix_open(&f, 3, MROCE_TRANSPORT_METAROCE, 3, 0, 3 * 1001);
    run_ag(&f, 1001, 250); /* 5 slices, the last one byte */
    memset(f.comm->rank[1].rbuf, 0, 3 * 1001);
    run_ag(&f, 1001, 0); /* one slice per chunk: channels 1, 2 idle */
    fix_close(&f);
}

/* The checker is what the other tests rely on: it must see one bad byte,
 * in a chunk that travelled (not the rank's own). */
static void test_check_catches_corruption(void **state)
{
    (void)state;
    struct coll_fix f = {0};
    size_t bytes = 2048;
    fix_open(&f, 4, MROCE_TRANSPORT_METAROCE, 2, 0, 4 * bytes);
    run_ag(&f, bytes, 512);
    f.comm->rank[2].rbuf[3 * bytes + 5] ^= 0x10;
    int bad = -1;
    assert_int_equal(mroce_coll_allgather_check(f.comm, bytes, &bad),
                     (long)(3 * bytes + 5));
    assert_int_equal(bad, 2);
    fix_close(&f);
}

static void test_bad_args(void **state)
{
    (void)state;
    struct coll_fix f = {0};
    fix_open(&f, 3, MROCE_TRANSPORT_METAROCE, 1, 0, 3000);
    struct mroce_coll_allgather *ag = (void *)1;
    struct mroce_coll_allgather_args a = {.bytes = 0};
    assert_int_equal(mroce_coll_allgather_start(f.comm, &a, &ag), MROCE_EINVAL);
    assert_null(ag);
    a.bytes = 1001; /* 3 * 1001 above the buffers */
    assert_int_equal(mroce_coll_allgather_start(f.comm, &a, &ag), MROCE_EINVAL);
    assert_int_equal(mroce_coll_allgather_start(NULL, &a, &ag), MROCE_EINVAL);
    fix_close(&f);
}

/* busbw = S/t * (N-1)/N (shared guide, metrics.md); no assert. */
static void test_report_busbw(void **state)
{
    (void)state;
    const int n = 8;
    size_t bytes = 128 * 1024; /* S = 1 MiB */
    static const int tr[] = {MROCE_TRANSPORT_METAROCE, MROCE_TRANSPORT_ROCEV2};
    for (int i = 0; i < 2; i++) {
        struct coll_fix f = {0};
        fix_open(&f, n, tr[i], 4, 0, (size_t)n * bytes);
        uint64_t t = run_ag(&f, bytes, 16384);
        double s = (double)n * (double)bytes;
        double busbw = s * 8 / (double)t * (n - 1) / n; /* Gbit/s */
        print_message("all-gather %s N=%d S=%.0f B 4 channels, 100 Gbit/s "
                      "links: t=%.1f us busbw=%.1f Gbit/s\n",
                      i ? "RoCEv2" : "MetaRoCE", n, s, t / 1e3, busbw);
        fix_close(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metaroce),
        cmocka_unit_test(test_rocev2),
        cmocka_unit_test(test_repeat_and_odd_slices),
        cmocka_unit_test(test_check_catches_corruption),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_report_busbw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
