#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "support/coll_fix.h"

void coll_fix_open(struct coll_fix *f, const struct mroce_coll_cfg *cc,
                   double loss, uint64_t wire_seed)
{
    assert_int_equal(mroce_coll_comm_create(cc, &f->comm), 0);
    struct mroce_tw_cfg wc = {.seed = wire_seed,
                              .n_routes = 8,
                              .rate_bps = 100000000000ull,
                              .delay_ns = 1000,
                              .loss = loss,
                              .capacity = 16384};
    assert_int_equal(mroce_tw_create(&wc, &f->tw), 0);
    struct mroce_ctx *ctxs[16];
    struct mroce_addr addrs[16];
    assert_true(cc->n_ranks <= 16);
    mroce_coll_comm_endpoints(f->comm, ctxs, addrs);
    assert_int_equal(
        mroce_twloop_create(f->tw, ctxs, addrs, cc->n_ranks, NULL, &f->loop),
        0);
}

void coll_fix_close(struct coll_fix *f)
{
    mroce_twloop_destroy(f->loop);
    mroce_tw_destroy(f->tw);
    mroce_coll_comm_destroy(f->comm);
}
