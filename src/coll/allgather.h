/* Ring all-gather, WRITE_IMM flavour: rank r contributes `bytes` (= S/N)
 * from the start of its sbuf; afterwards every rank's rbuf holds all N
 * contributions, rank r's at rbuf + r * bytes. N-1 steps around the ring
 * r -> r+1: at step s rank r forwards chunk (r - s) mod N, writing it
 * straight into the right neighbour's rbuf at the chunk's final place, so
 * nothing is copied on arrival. Each chunk is pipelined in slices, and
 * slice j travels on channel (stream) j % n_channels: a slice moves on to
 * the next step as soon as it arrived, not the whole chunk (the same
 * schedule as the all-gather phase of the ring all-reduce).
 *
 * Sans-I/O like the all-reduce: start, then progress from the caller's
 * loop until done. */
#ifndef MROCE_COLL_ALLGATHER_H
#define MROCE_COLL_ALLGATHER_H

#include "coll/comm.h"

struct mroce_coll_allgather_args {
    size_t bytes;       /* per rank (S/N); N * bytes fits the buffers */
    size_t slice_bytes; /* bytes per pipelined slice [bytes] */
};

struct mroce_coll_allgather;

/* Copies each rank's contribution into its own rbuf and posts the first
 * writes. Errors: EINVAL (bytes 0, N * bytes above the buffers, a chunk
 * above 4 GiB), ENOMEM, or a post error. */
int mroce_coll_allgather_start(struct mroce_coll_comm *comm,
                               const struct mroce_coll_allgather_args *args,
                               struct mroce_coll_allgather **out);
/* Returns 1 when done, 0 if not yet; EPROTO if a completion failed or a
 * message arrived out of its place, or a post error. */
int mroce_coll_allgather_progress(struct mroce_coll_allgather *ag);
/* The same for local rank r alone (see mroce_coll_allreduce_progress_
 * rank). */
int mroce_coll_allgather_progress_rank(struct mroce_coll_allgather *ag, int r);
int mroce_coll_allgather_done(const struct mroce_coll_allgather *ag);
void mroce_coll_allgather_free(struct mroce_coll_allgather *ag);

/* Test helpers: fill puts a pattern naming (rank, offset) into the first
 * `bytes` of every sbuf; check returns -1 if every rank's rbuf holds all
 * N contributions, else the first bad byte offset (its rank in *bad_rank,
 * if not NULL). */
void mroce_coll_allgather_fill(struct mroce_coll_comm *comm, size_t bytes);
long mroce_coll_allgather_check(const struct mroce_coll_comm *comm,
                                size_t bytes, int *bad_rank);

#endif
