/* The parallel run: one partition of a simulation (sim/part.h), driven in
 * conservative windows with the other ranks (sim/comm.h).
 *
 * Every rank builds the whole topology (its skeleton: switches, links and
 * hosts without engines are a few hundred bytes each) but only its own
 * LPs ever get events: the runner hooks every cut link so that a frame or
 * a PFC signal that would be scheduled at the far end is written into an
 * outbox instead, stamped with its arrival time and its event key
 * (event.h), and scheduled by the far end's rank with that key.
 *
 * Synchronisation: windowed barriers (YAWNS-like), not null messages. Each
 * step every rank (1) hands its outboxes to the others (alltoallv) and
 * schedules what it receives, (2) joins one allreduce that gives the
 * earliest pending event T of all ranks (and whatever the driver asks
 * for: see struct mroce_sim_prun_sync), (3) runs its events up to
 * T + W - 1, W = min(lookahead, quantum). Every message of step (3) is
 * due at T + W or later, so it is in its receiver's list before the next
 * step runs: no rank ever runs an event out of order. docs/sim.md
 * ("Parallel runs") says why windows, not null messages.
 *
 * With one rank and no comm the same loop runs with nothing to exchange:
 * the single-process run is the one-rank case of the parallel one.
 *
 * Thread-safety: a runner belongs to its rank's thread.
 */
#ifndef MROCE_SIM_PRUN_H
#define MROCE_SIM_PRUN_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/comm.h"
#include "sim/part.h"
#include "sim/topo.h"

/* What the driver reduces with the runner's own value every window:
 * fill() writes n_sum values to be summed over the ranks, then n_max to
 * take the maximum of (at most MROCE_SIM_PRUN_MAX_SYNC in all); done()
 * reads the result and returns true to end the run there, before
 * until. */
#define MROCE_SIM_PRUN_MAX_SYNC 16
struct mroce_sim_prun_sync {
    int n_sum, n_max;
    void (*fill)(void *ud, uint64_t *v);
    bool (*done)(void *ud, const uint64_t *v);
    void *ud;
};

/* What the runner measured on this rank. */
struct mroce_sim_prun_stats {
    uint64_t windows;             /* steps */
    uint64_t msgs_out, bytes_out; /* sent across the cut */
    uint64_t msgs_in, bytes_in;
    double sync_s;    /* wall time in the comm's calls: waiting for the
                         slowest rank, and the transfer */
    double import_s;  /* CPU time scheduling what arrived */
    double run_s;     /* wall time running events (exports included) */
    double run_cpu_s; /* the same in this thread's CPU time: what the work
                         costs on a machine shared with other loads */
};

struct mroce_sim_prun;

/* Hooks the cut links of t for this rank (comm may be NULL: one rank,
 * then part must have one rank). quantum_ps bounds the window: the run
 * stops at no driver boundary later than that after a done() [1 us].
 * Errors: EINVAL (part and comm disagree), ENOMEM. */
int mroce_sim_prun_create(struct mroce_sim_topo *t,
                          const struct mroce_sim_part *part,
                          const struct mroce_sim_comm *comm,
                          uint64_t quantum_ps, struct mroce_sim_prun **out);
/* Unhooks the links and frees. NULL is a no-op. */
void mroce_sim_prun_destroy(struct mroce_sim_prun *p);

/* Runs every rank's events with time <= until_ps (all ranks call it with
 * the same until and sync). Returns 1 if sync->done ended it first (the
 * list's time is then that of the last window, within one window of
 * whatever the driver decided), 0 when it reached until (the list's now
 * is until), or a negative MROCE_E* (out of memory, a message that did
 * not parse, a comm error). sync may be NULL. */
int mroce_sim_prun_run(struct mroce_sim_prun *p, uint64_t until_ps,
                       const struct mroce_sim_prun_sync *sync);

/* The window in use: min(lookahead, quantum). */
uint64_t mroce_sim_prun_window(const struct mroce_sim_prun *p);
/* Tests only: forces the window, even beyond the lookahead, to see the
 * run refuse what then arrives too late (MROCE_EPROTO). */
void mroce_sim_prun_set_window(struct mroce_sim_prun *p, uint64_t window_ps);
void mroce_sim_prun_get_stats(const struct mroce_sim_prun *p,
                              struct mroce_sim_prun_stats *out);

#endif
