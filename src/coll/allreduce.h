/* Ring all-reduce of float32 sums, bandwidth-optimal: a reduce-scatter and
 * an all-gather, 2(N-1) steps around the ring r -> r+1. The data (count
 * floats in each rank's sbuf) is split in N chunks; each chunk is pipelined
 * in slices, and slice j travels on channel (stream) j % n_channels, so a
 * slice moves on to the next step as soon as it arrived, not the whole
 * chunk. The result lands in every rank's rbuf.
 *
 * Sans-I/O: start posts what it can, progress polls the CQs and posts the
 * next steps; the caller's loop drives the contexts and calls progress. */
#ifndef MROCE_COLL_ALLREDUCE_H
#define MROCE_COLL_ALLREDUCE_H

#include "coll/comm.h"

struct mroce_coll_allreduce_args {
    size_t count;       /* floats; a multiple of n_ranks */
    size_t slice_count; /* floats per pipelined slice [count / n_ranks] */
    int flavour;        /* MROCE_COLL_WRITE_IMM or MROCE_COLL_SEND */
};

struct mroce_coll_allreduce;

/* Copies sbuf to rbuf on every rank and posts the first sends. Errors:
 * EINVAL (count 0 or not a multiple of n_ranks, buffers too small, bad
 * flavour), ENOMEM, or a post error. */
int mroce_coll_allreduce_start(struct mroce_coll_comm *comm,
                               const struct mroce_coll_allreduce_args *args,
                               struct mroce_coll_allreduce **out);
/* Returns 1 when done, 0 if not yet; EPROTO if a completion failed or a
 * message arrived out of its place, or a post error. */
int mroce_coll_allreduce_progress(struct mroce_coll_allreduce *ar);
/* The same for local rank r alone: for a caller that knows only r's
 * context took a packet or a timer (its completions appear nowhere else).
 * O(1) apart from r's own work. */
int mroce_coll_allreduce_progress_rank(struct mroce_coll_allreduce *ar, int r);
int mroce_coll_allreduce_done(const struct mroce_coll_allreduce *ar);
void mroce_coll_allreduce_free(struct mroce_coll_allreduce *ar);

/* Test helpers. fill puts small integers into every rank's sbuf, so float
 * sums are exact; check compares every rank's rbuf with the exact sums and
 * returns -1 if all match, else the first bad float index (and its rank in
 * *bad_rank, if not NULL). */
void mroce_coll_allreduce_fill(struct mroce_coll_comm *comm, size_t count);
long mroce_coll_allreduce_check(const struct mroce_coll_comm *comm,
                                size_t count, int *bad_rank);

#endif
