/* mroce-perf coll: multi-process collectives (see perf.h). */
#include <stdio.h>

#include "perf/perf.h"

int perf_main_coll(struct perf_opts *o)
{
    (void)o;
    fprintf(stderr,
            "mroce-perf coll: not available yet: the collectives of "
            "src/coll drive every rank of a communicator in one process; "
            "see docs/cm.md, \"Multi-process collectives\"\n");
    return 1;
}
