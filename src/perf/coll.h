/* mroce-perf coll: the collectives of src/coll across N processes on one
 * host (docs/cm.md, "Multi-process collectives").
 *
 * coll.c forks one process per rank and watches them; coll_mesh.c gives
 * a rank its datapath (127.0.0.1, UDP port base + r), its one-rank
 * communicator (mroce_coll_comm_create_over) and a connection to every
 * other rank through the CM (rank r accepts the r lower ranks on its
 * listener, then dials every higher rank; the HELLO blob carries the rank,
 * the run's shape and the rank's three buffer descriptors); coll_run.c
 * runs the iterations, rank 0 leading them over the CM channels:
 *
 *   GO -> every rank runs the collective -> END      (warm-up, then -n)
 *   RUN -> check the last result, poison rbuf/scratch -> END
 *   GO(verify) -> run, check again -> RESULT (check, counters)
 *   QUIT
 *
 * Each barrier makes sure no rank writes into a peer's buffers for the
 * next iteration before that peer finished the previous one. Rank 0
 * times each iteration from its GO to the last END. */
#ifndef MROCE_PERF_COLL_H
#define MROCE_PERF_COLL_H

#include <mroce/mroce_cm.h>

#include "coll/comm.h"
#include "perf/perf.h"

#define COLL_MAX_RANKS 64
#define COLL_QD 128 /* send and receive WRs per stream */
#define COLL_WARMUP 1

enum coll_op { COLL_ALLREDUCE, COLL_ALLTOALL, COLL_ALLGATHER };

/* The shape of the run; every rank must agree (checked at set-up). */
struct coll_shape {
    int op, n, flavour;
    uint16_t channels;
    size_t bytes; /* S, as used: rounded to what the collective takes */
    size_t unit;  /* floats (all-reduce), block or bytes per rank */
    size_t slice; /* pipelined slice: floats or bytes */
};

struct coll_rank {
    const struct perf_opts *o;
    struct coll_shape sh;
    int r;
    struct mroce_dp *dp;
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    struct mroce_coll_comm *comm;
    struct mroce_conn *conn[COLL_MAX_RANKS];
    struct mroce_cm *cm[COLL_MAX_RANKS];
    uint64_t deadline; /* CLOCK_MONOTONIC ns */
};

/* Counters a rank sends rank 0 at the end (all its connections). */
struct coll_counts {
    uint64_t tx_data, retx, rto, tlp, rnr, ecn_ce, imp_lost;
};

void coll_shape_init(struct coll_shape *sh, const struct perf_opts *o);
/* 2(N-1)/N, (N-1)/N or (N-1)/N (metrics.md). */
double coll_busbw_factor(const struct coll_shape *sh);
const char *coll_op_name(int op);

/* coll_mesh.c: ports[] are the ranks' CM listener ports; l is this
 * rank's listener (closed here). Returns 0 or a MROCE_E* code. */
/* The CM policy of the mesh: no KEEPALIVEs (R-CM-12). A rank busy in a
 * long iteration does not look at every channel, and the parent
 * supervises the ranks: a dead rank closes its sockets, a frozen one
 * meets the run's --timeout. */
extern const struct mroce_cm_attr coll_cm_attr;

int coll_rank_open(struct coll_rank *k, const struct perf_opts *o, int r,
                   struct mroce_cm_listener *l, const uint16_t *ports);
void coll_rank_close(struct coll_rank *k);
int coll_rank_expired(const struct coll_rank *k);
void coll_rank_counts(const struct coll_rank *k, struct coll_counts *c);

/* coll_run.c: the iterations; process exit code. */
int coll_rank_main(struct coll_rank *k);

#endif
