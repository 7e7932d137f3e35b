/* The CPU's retired-instruction counter around a stretch of the run, from
 * the kernel's perf_event_open (counting this thread, user space only).
 * Where the kernel or the hypervisor does not expose it (`perf stat -e
 * instructions true` says "<not supported>"), opening fails and the
 * reports show null: the deterministic figure then comes from callgrind
 * (docs/sim.md "Cost per packet").
 *
 * Thread-safety: a counter belongs to the thread that opened it. */
#ifndef MROCE_SIM_PERFCTR_H
#define MROCE_SIM_PERFCTR_H

#include <stdbool.h>
#include <stdint.h>

struct mroce_sim_perfctr {
    int fd; /* -1: no counter */
    uint64_t total;
};

/* Opens a stopped counter; false (fd -1) if there is none. */
bool mroce_sim_perfctr_open(struct mroce_sim_perfctr *p);
/* Counting on / off; the counts of every on-off stretch add up. */
void mroce_sim_perfctr_start(struct mroce_sim_perfctr *p);
void mroce_sim_perfctr_stop(struct mroce_sim_perfctr *p);
/* Instructions counted so far, or -1 without a counter. */
int64_t mroce_sim_perfctr_read(const struct mroce_sim_perfctr *p);
void mroce_sim_perfctr_close(struct mroce_sim_perfctr *p);

#endif
