/* All-to-all (concurrent and shifted) over the test wire on both
 * transports: every block must land in the right place. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "coll/alltoall.h"
#include "io/testwire/twloop.h"
#include "support/coll_fix.h"

static void fix_open(struct coll_fix *f, int n, int transport, double loss,
                     size_t block)
{
    struct mroce_coll_cfg cc = {.n_ranks = n,
                                .transport = (uint8_t)transport,
                                .n_channels = 2,
                                .buf_bytes = (size_t)n * block,
                                .seed = 21,
                                .rocev2_timeout = 8};
    coll_fix_open(f, &cc, loss, 4);
}

static void fix_close(struct coll_fix *f)
{
    coll_fix_close(f);
}

static int a2a_pred(struct mroce_twloop *loop, void *arg)
{
    (void)loop;
    int rc = mroce_coll_alltoall_progress(arg);
    assert_true(rc >= 0);
    return rc;
}

static uint64_t run_a2a(struct coll_fix *f, size_t block, int schedule)
{
    mroce_coll_alltoall_fill(f->comm, block);
    for (int r = 0; r < f->comm->n; r++)
        memset(f->comm->rank[r].rbuf, 0, f->comm->buf_bytes);
    struct mroce_coll_alltoall_args a = {.block = block, .schedule = schedule};
    struct mroce_coll_alltoall *x;
    uint64_t t0 = mroce_twloop_now(f->loop);
    assert_int_equal(mroce_coll_alltoall_start(f->comm, &a, &x), 0);
    int rc = mroce_twloop_run_until(f->loop, a2a_pred, x, t0 + 5000000000ull);
    assert_int_equal(rc, MROCE_TWLOOP_DONE);
    mroce_coll_alltoall_free(x);
    assert_int_equal(mroce_coll_alltoall_check(f->comm, block, NULL), -1);
    return mroce_twloop_now(f->loop) - t0;
}

static void matrix(int transport, double loss)
{
    static const int ns[] = {4, 8};
    const size_t block = 20000;
    for (int i = 0; i < 2; i++) {
        struct coll_fix f = {0};
        fix_open(&f, ns[i], transport, loss, block);
        uint64_t tc = run_a2a(&f, block, MROCE_COLL_A2A_CONCURRENT);
        uint64_t ts = run_a2a(&f, block, MROCE_COLL_A2A_SHIFTED);
        print_message("all-to-all %s N=%d block=%zu loss=%.2f: concurrent "
                      "%.1f us, shifted %.1f us\n",
                      transport ? "RoCEv2" : "MetaRoCE", ns[i], block, loss,
                      tc / 1e3, ts / 1e3);
        fix_close(&f);
    }
}

static void test_meta(void **state)
{
    (void)state;
    matrix(MROCE_TRANSPORT_METAROCE, 0);
    matrix(MROCE_TRANSPORT_METAROCE, 0.01);
}

static void test_rocev2(void **state)
{
    (void)state;
    matrix(MROCE_TRANSPORT_ROCEV2, 0);
    matrix(MROCE_TRANSPORT_ROCEV2, 0.01);
}

static void test_check_catches_misplaced_block(void **state)
{
    (void)state;
    struct coll_fix f = {0};
    const size_t block = 1000;
    fix_open(&f, 4, MROCE_TRANSPORT_METAROCE, 0, block);
    run_a2a(&f, block, MROCE_COLL_A2A_CONCURRENT);
    uint8_t *rb = f.comm->rank[3].rbuf;
    rb[2 * block + 5] ^= 0x40; /* the block from rank 2 */
    int bad = -1;
    assert_int_equal(mroce_coll_alltoall_check(f.comm, block, &bad),
                     (long)(2 * block + 5));
    assert_int_equal(bad, 3);
    fix_close(&f);
}

static void test_bad_args(void **state)
{
    (void)state;
    struct coll_fix f = {0};
    fix_open(&f, 4, MROCE_TRANSPORT_METAROCE, 0, 1000);
    struct mroce_coll_alltoall *x;
    struct mroce_coll_alltoall_args a = {.block = 999}; /* odd, 2 channels */
    assert_int_equal(mroce_coll_alltoall_start(f.comm, &a, &x), MROCE_EINVAL);
    a.block = 2000; /* 4 * 2000 > buffers */
    assert_int_equal(mroce_coll_alltoall_start(f.comm, &a, &x), MROCE_EINVAL);
    a.block = 1000;
    a.schedule = 5;
    assert_int_equal(mroce_coll_alltoall_start(f.comm, &a, &x), MROCE_EINVAL);
    fix_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meta),
        cmocka_unit_test(test_rocev2),
        cmocka_unit_test(test_check_catches_misplaced_block),
        cmocka_unit_test(test_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
