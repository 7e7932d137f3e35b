/* Traffic patterns for the experiments, WRITE_IMM flavour, one flow per
 * (src, dst) pair:
 *   - incast: ranks 1..N-1 each write `bytes` from their sbuf into rank
 *     0's rbuf at (src - 1) * bytes; all senders start at once;
 *   - permutation: a seeded random derangement (no rank sends to itself,
 *     every rank receives exactly one flow); rank r writes `bytes` from its
 *     sbuf into its partner's rbuf at offset 0.
 * A flow is cut in n_channels pieces, one per stream. It is done when the
 * receiver has every piece's immediate and the sender every piece's
 * completion; the pattern is done when every flow is.
 *
 * Flow completion times: the caller passes its clock (`now`, e.g. the
 * twloop's virtual time in ns) to start and to every progress call, and
 * each flow records when it started and the `now` of the progress call
 * that saw its last receive and its last send completion. The resolution
 * is thus the caller's polling interval (with a twloop predicate: every
 * pass, i.e. exact in virtual time).
 *
 * Sans-I/O like the other collectives: start, then progress from the
 * caller's loop until done. */
#ifndef MROCE_COLL_PATTERN_H
#define MROCE_COLL_PATTERN_H

#include "coll/comm.h"

#define MROCE_COLL_INCAST 0
#define MROCE_COLL_PERMUTATION 1

struct mroce_coll_pattern_args {
    int kind;      /* MROCE_COLL_INCAST or MROCE_COLL_PERMUTATION */
    size_t bytes;  /* per flow; a multiple of n_channels */
    uint64_t seed; /* permutation: the derangement drawn */
};

/* One flow; times are in the caller's clock, UINT64_MAX until reached. */
struct mroce_coll_flow {
    int src, dst;
    uint64_t start;   /* `now` given to start */
    uint64_t rx_done; /* receiver had every piece */
    uint64_t tx_done; /* sender had every completion */
};

struct mroce_coll_pattern;

/* Draws the flows and posts the first writes. Errors: EINVAL (bad kind,
 * bytes 0 or not a multiple of n_channels, the flows' bytes above the
 * buffers), ENOMEM, or a post error. */
int mroce_coll_pattern_start(struct mroce_coll_comm *comm,
                             const struct mroce_coll_pattern_args *args,
                             uint64_t now, struct mroce_coll_pattern **out);
/* Returns 1 when done, 0 if not yet; EPROTO on a failed or unexpected
 * completion, or a post error. `now` stamps what completes in this call. */
int mroce_coll_pattern_progress(struct mroce_coll_pattern *p, uint64_t now);
int mroce_coll_pattern_done(const struct mroce_coll_pattern *p);
void mroce_coll_pattern_free(struct mroce_coll_pattern *p);

/* The flows, valid until free; *n_flows gets their count (N-1 for an
 * incast, N for a permutation). FCT of flow f: max(rx_done, tx_done) -
 * start, or rx_done - start for the receiver's view. */
const struct mroce_coll_flow *
mroce_coll_pattern_flows(const struct mroce_coll_pattern *p, int *n_flows);

/* Test helpers: fill puts a pattern naming (src, offset) into the first
 * `bytes` of every sbuf; check returns -1 if every flow's bytes are in
 * place at its receiver, else the first bad byte offset in that rbuf (the
 * receiver in *bad_rank, if not NULL). */
void mroce_coll_pattern_fill(struct mroce_coll_comm *comm, size_t bytes);
long mroce_coll_pattern_check(const struct mroce_coll_pattern *p,
                              int *bad_rank);

#endif
