/* mroce-perf: perftest-style benchmarks of mroce over a real datapath.
 *
 *   mroce-perf server write_bw [options]          (or: mroce-perf write_bw)
 *   mroce-perf client HOST write_bw [options]     (or: mroce-perf write_bw
 * HOST) mroce-perf --loopback write_bw [options]      (both sides, one process)
 *   mroce-perf udp_pingpong [server|client HOST|--loopback] -s 8
 *   mroce-perf coll allreduce -N 4
 *
 * The work is in src/perf (perf.h); the set-up uses the CM (mroce_cm.h).
 * Exit status 0 on success (data verified with --check), 1 otherwise. */
#include <signal.h>
#include <stdio.h>

#include "perf/perf.h"

int main(int argc, char **argv)
{
    struct perf_opts o;
    int rc = perf_opts_parse(&o, argc, argv);
    if (rc) {
        perf_usage();
        return rc > 0 ? 0 : 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (o.test == PERF_UDP_PINGPONG)
        return perf_main_pingpong(&o);
    if (o.test == PERF_COLL)
        return perf_main_coll(&o);
    switch (o.mode) {
    case PERF_LOOPBACK:
        return perf_main_loopback(&o);
    case PERF_SERVER:
        return perf_main_server(&o);
    default:
        return perf_main_client(&o);
    }
}
