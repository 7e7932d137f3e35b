/* A communicator for the collectives: N ranks, each a context with a PD, one
 * CQ and a connection to every other rank, plus three registered buffers.
 * Everything here uses the public API only (include/mroce/mroce.h), so the
 * collectives run on either transport and over any datapath: the caller
 * drives the contexts (mroce_ctx_tx/rx/on_expiry), e.g. with a twloop.
 *
 * Thread-safety: none; one thread drives a communicator. */
#ifndef MROCE_COLL_COMM_H
#define MROCE_COLL_COMM_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

/* How a collective moves data. */
#define MROCE_COLL_WRITE_IMM 0 /* WRITE_IMM into the peer; imm = tag */
#define MROCE_COLL_SEND 1      /* SEND into a pre-posted receive */

/* Zero fields take the default in brackets. */
struct mroce_coll_cfg {
    int n_ranks;             /* 2..256 */
    uint8_t transport;       /* MROCE_TRANSPORT_* [METAROCE] */
    uint16_t n_channels;     /* streams per connection [1] */
    uint16_t qps_per_stream; /* RoCEv2: QPs per stream [1] */
    size_t buf_bytes;        /* size of each of the 3 buffers [1 MiB] */
    uint32_t mtu;            /* [4096] */
    uint64_t seed;           /* contexts get seed + rank */
    uint32_t queue_depth;    /* send and receive WRs per stream [128] */
    uint8_t rocev2_timeout;  /* RoCEv2 ACK timeout exponent [14] */
};

/* The three buffers of a rank (index of mroce_coll_rank.desc). */
#define MROCE_COLL_SBUF 0
#define MROCE_COLL_RBUF 1
#define MROCE_COLL_SCRATCH 2
#define MROCE_COLL_N_BUFS 3

/* Where a rank's buffer is, as its peers address it. */
struct mroce_coll_buf_desc {
    uint64_t addr;
    uint32_t rkey;
    uint64_t len; /* bytes; 0: not known yet */
};

struct mroce_coll_rank {
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *cq;      /* every connection of the rank uses it */
    struct mroce_conn **conn; /* [n_ranks]; NULL for the rank itself */
    struct mroce_addr addr;   /* 10.0.(r / 250).(r % 250 + 1) */
    uint8_t *sbuf;            /* input */
    uint8_t *rbuf;            /* result */
    uint8_t *scratch;         /* where peers put partial data */
    struct mroce_mr *smr, *rmr, *xmr;
    /* Nonzero for a rank another process holds (mroce_coll_comm_create_
     * over): no context, connections or buffers here, only where its
     * buffers are (desc). Zero, the default, is a local rank. */
    int remote;
    struct mroce_coll_buf_desc desc[MROCE_COLL_N_BUFS];
};

/* Local operations on a rank's buffers, for buffers with no bytes
 * behind them (a payload-free simulation, docs/sim.md): a copy between
 * two of a rank's buffers (MROCE_COLL_SBUF ...) and the all-reduce's
 * float32 sum rbuf += scratch. NULL in the communicator: the buffers are
 * memory and the collectives use them directly. */
struct mroce_coll_mem {
    void (*copy)(void *ud, int rank, int dst_buf, size_t dst_off, int src_buf,
                 size_t src_off, size_t len);
    void (*sum_f32)(void *ud, int rank, size_t off, size_t len);
    void *ud;
};

struct mroce_coll_comm {
    int n;
    uint16_t n_channels;
    size_t buf_bytes;
    const struct mroce_coll_mem *mem; /* NULL: real buffers */
    struct mroce_coll_rank *rank;     /* [n] */
    /* Nonzero if made by mroce_coll_comm_create_over: the context, PD,
     * CQ and connections are the caller's. */
    int borrowed;
    /* Status (MROCE_WC_*) of the last failed completion a collective saw,
     * for diagnostics; 0 (SUCCESS) if none. */
    int wc_status;
};

/* Opens every context, connects every pair (exchanging mroce_conn_params
 * in-process) and registers the buffers with local write, remote write and
 * remote read access. Errors: EINVAL (bad cfg), ENOMEM, or any error of
 * the API calls. *out is NULL on failure. */
int mroce_coll_comm_create(const struct mroce_coll_cfg *cfg,
                           struct mroce_coll_comm **out);
/* Closes the contexts (freeing what hangs off them) and the buffers. NULL is
 * a no-op. A create_over communicator instead deregisters its buffers and
 * frees them; the context, PD, CQ and connections stay the caller's, so
 * destroy it before closing the context. */
void mroce_coll_comm_destroy(struct mroce_coll_comm *comm);

/* Copies rank r's context pointers into ctxs[0..n-1] and addresses into
 * addrs (either may be NULL), for a datapath such as mroce_twloop_create.
 * A remote rank has no context here: NULL. */
void mroce_coll_comm_endpoints(const struct mroce_coll_comm *comm,
                               struct mroce_ctx **ctxs,
                               struct mroce_addr *addrs);

/* ---- One rank per process ----
 *
 * A communicator whose rank `rank` is local and every other rank remote
 * (held by another process, or by another communicator in this one). The
 * caller brings the context, PD and CQ; the communicator allocates and
 * registers the local buffers on that PD. The caller then creates one
 * connection per peer on the PD (n_streams >= n_channels, both CQs
 * cfg->cq, whose depth must hold (n_ranks - 1) * n_channels * 2 *
 * queue depth completions), connects it by any means (e.g. the CM,
 * carrying mroce_coll_comm_local_desc in its blob), and hands it over
 * with the peer's descriptors (mroce_coll_comm_set_peer). The collectives
 * then post and poll for the local rank only, and address a peer's
 * buffers through its descriptors. */
struct mroce_coll_over_cfg {
    int n_ranks;         /* 2..256 */
    int rank;            /* the local rank, 0..n_ranks-1 */
    uint16_t n_channels; /* streams the collectives use [1] */
    size_t buf_bytes;    /* size of each of the 3 buffers [1 MiB] */
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *cq; /* every connection of the rank uses it */
};

/* Errors: EINVAL (bad cfg, NULL ctx/pd/cq), ENOMEM, or a mroce_reg_mr
 * error. *out is NULL on failure. */
int mroce_coll_comm_create_over(const struct mroce_coll_over_cfg *cfg,
                                struct mroce_coll_comm **out);
/* The local rank's buffers (the first local one's), for its peers:
 * out[MROCE_COLL_N_BUFS]. */
void mroce_coll_comm_local_desc(const struct mroce_coll_comm *comm,
                                struct mroce_coll_buf_desc *out);
/* Connection to `peer` (connected, on the communicator's PD and CQ; stays
 * the caller's) and the peer's buffers desc[MROCE_COLL_N_BUFS]. Errors:
 * EINVAL (not a create_over communicator, peer out of range or the local
 * rank, conn NULL, a buffer shorter than buf_bytes). */
int mroce_coll_comm_set_peer(struct mroce_coll_comm *comm, int peer,
                             struct mroce_conn *conn,
                             const struct mroce_coll_buf_desc *desc);
/* 1 if every local rank has a connection to every other rank and every
 * remote rank's buffers are known: the collectives may start (they
 * return ESTATE otherwise). Always 1 for mroce_coll_comm_create. */
int mroce_coll_comm_ready(const struct mroce_coll_comm *comm);

static inline int mroce_coll_is_local(const struct mroce_coll_comm *comm, int r)
{
    return !comm->rank[r].remote;
}

/* Rank r's buffer `which` (MROCE_COLL_*) as a peer addresses it: the
 * address of byte `off` and the rkey, from the MR for a local rank and
 * from the descriptor for a remote one. */
uint64_t mroce_coll_raddr(const struct mroce_coll_rank *k, int which,
                          size_t off);
uint32_t mroce_coll_rkey(const struct mroce_coll_rank *k, int which);

/* An empty communicator of n_ranks with defaults resolved (1 channel,
 * 1 MiB buffers); both creators start from it. NULL if out of memory. */
struct mroce_coll_comm *mroce_coll_comm_alloc(int n_ranks, uint16_t n_channels,
                                              size_t buf_bytes);

/* Allocates rank k's three buffers (zeroed, `bytes` each) and registers
 * them on k->pd with local write, remote write and remote read access.
 * Errors: ENOMEM, or those of mroce_reg_mr; what was made stays in k for
 * the communicator's destroy. */
int mroce_coll_rank_bufs(struct mroce_coll_rank *k, size_t bytes);

/* A local copy between rank r's buffers, and rbuf += scratch as float32
 * sums, through comm->mem when set. */
void mroce_coll_copy(const struct mroce_coll_comm *comm, int r, int dst_buf,
                     size_t dst_off, int src_buf, size_t src_off, size_t len);
void mroce_coll_sum_f32(const struct mroce_coll_comm *comm, int r, size_t off,
                        size_t len);

/* Bytes of [addr, addr+len) as an SGE of a registered region. */
struct mroce_sge mroce_coll_sge(const struct mroce_mr *mr, const void *addr,
                                size_t len);

#endif
