/* A communicator over the in-process test wire, for the collectives'
 * tests: N engines on one lossy 100 Gbit/s wire with 1 us delay and 8
 * ECMP routes, driven by a twloop. Failures end the test (cmocka). */
#ifndef MROCE_TESTS_COLL_FIX_H
#define MROCE_TESTS_COLL_FIX_H

#include <stdint.h>

#include "coll/comm.h"
#include "io/testwire/twloop.h"

struct coll_fix {
    struct mroce_coll_comm *comm;
    struct mroce_tw *tw;
    struct mroce_twloop *loop;
};

void coll_fix_open(struct coll_fix *f, const struct mroce_coll_cfg *cc,
                   double loss, uint64_t wire_seed);
void coll_fix_close(struct coll_fix *f);

#endif
