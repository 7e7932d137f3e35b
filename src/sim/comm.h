/* How the partitions of one parallel simulation talk (sim/prun.h): a rank,
 * a size, and two collective operations that every rank calls in the
 * same order. The simulator needs nothing else, so it stays free of any
 * message-passing library:
 *
 *   MPI      src/simmpi (Open MPI, one process per rank, any number of
 *            machines), built when CMake finds MPI;
 *   threads  mroce_sim_comm_threads_run below: N ranks as threads of one
 *            process, for tests without MPI and for --ranks N on one
 *            machine.
 *
 * A NULL comm everywhere means one partition: rank 0 of 1.
 *
 * Thread-safety: a rank calls its comm from one thread.
 */
#ifndef MROCE_SIM_COMM_H
#define MROCE_SIM_COMM_H

#include <stddef.h>
#include <stdint.h>

struct mroce_sim_comm {
    int rank, size;
    /* Every rank sends out_len[r] bytes at out[r] to rank r (out[rank] is
     * delivered to itself) and receives, from each rank q in order,
     * in_len[q] bytes that start at *in + the sum of in_len[0..q).
     * *in is the comm's memory, valid until the next call. Returns 0 or
     * a negative MROCE_E* code (every rank then gives up). */
    int (*alltoallv)(void *ud, const void *const *out, const size_t *out_len,
                     const void **in, size_t *in_len);
    /* v[0..n_sum) are summed and v[n_sum..n_sum + n_max) take their
     * maximum over the ranks; every rank gets the result in v. n_sum and
     * n_max are the same on every rank. Returns 0 or MROCE_E*. */
    int (*allreduce)(void *ud, uint64_t *v, size_t n_sum, size_t n_max);
    void *ud;
};

/* Runs fn(comm, arg) on n threads (ranks 0..n-1, 1 <= n <= 256) sharing
 * one comm in memory; returns when all have returned: 0, or
 * MROCE_EINVAL / ENOMEM if the threads could not be started. The
 * operations copy (no rank sees another's buffers after a call). */
int mroce_sim_comm_threads_run(
    int n, void (*fn)(const struct mroce_sim_comm *c, void *arg), void *arg);

/* Helpers over a comm that may be NULL (one rank). */
static inline int mroce_sim_comm_rank(const struct mroce_sim_comm *c)
{
    return c ? c->rank : 0;
}

static inline int mroce_sim_comm_size(const struct mroce_sim_comm *c)
{
    return c ? c->size : 1;
}

/* Allreduce that is a no-op for one rank. */
int mroce_sim_comm_allreduce(const struct mroce_sim_comm *c, uint64_t *v,
                             size_t n_sum, size_t n_max);

#endif
