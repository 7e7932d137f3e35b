/* All-to-all, WRITE_IMM flavour: rank r's block p (sbuf + p * block) lands
 * in rank p's rbuf + r * block. Each block is cut in n_channels pieces,
 * one per stream. Two schedules:
 *   - concurrent: every pair at once (all writes posted at start);
 *   - shifted: N-1 serial steps; step k writes to r + k and waits for the
 *     block of r - k before the next step, so each rank has one peer at a
 *     time and no receiver is hit by all senders together.
 * Sans-I/O like the all-reduce: start, then progress from the caller's
 * loop until done. */
#ifndef MROCE_COLL_ALLTOALL_H
#define MROCE_COLL_ALLTOALL_H

#include "coll/comm.h"

#define MROCE_COLL_A2A_CONCURRENT 0
#define MROCE_COLL_A2A_SHIFTED 1

struct mroce_coll_alltoall_args {
    size_t block; /* bytes per (src, dst) pair; multiple of n_channels */
    int schedule; /* MROCE_COLL_A2A_* */
};

struct mroce_coll_alltoall;

/* Copies each rank's own block locally and posts the first writes.
 * Errors: EINVAL (block 0, not a multiple of n_channels, N * block above
 * the buffers, bad schedule), ENOMEM, or a post error. */
int mroce_coll_alltoall_start(struct mroce_coll_comm *comm,
                              const struct mroce_coll_alltoall_args *args,
                              struct mroce_coll_alltoall **out);
/* Returns 1 when done, 0 if not yet; EPROTO on a failed or unexpected
 * completion, or a post error. */
int mroce_coll_alltoall_progress(struct mroce_coll_alltoall *a2a);
/* The same for local rank r alone (see mroce_coll_allreduce_progress_
 * rank). */
int mroce_coll_alltoall_progress_rank(struct mroce_coll_alltoall *a2a, int r);
int mroce_coll_alltoall_done(const struct mroce_coll_alltoall *a2a);
void mroce_coll_alltoall_free(struct mroce_coll_alltoall *a2a);

/* Test helpers: fill writes a pattern that names (src, dst, offset) into
 * every sbuf; check returns -1 if every rbuf holds the right blocks, else
 * the first bad byte offset (rank in *bad_rank if not NULL). */
void mroce_coll_alltoall_fill(struct mroce_coll_comm *comm, size_t block);
long mroce_coll_alltoall_check(const struct mroce_coll_comm *comm, size_t block,
                               int *bad_rank);

#endif
