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
};

struct mroce_coll_comm {
    int n;
    uint16_t n_channels;
    size_t buf_bytes;
    struct mroce_coll_rank *rank; /* [n] */
};

/* Opens every context, connects every pair (exchanging mroce_conn_params
 * in-process) and registers the buffers with local write, remote write and
 * remote read access. Errors: EINVAL (bad cfg), ENOMEM, or any error of
 * the API calls. *out is NULL on failure. */
int mroce_coll_comm_create(const struct mroce_coll_cfg *cfg,
                           struct mroce_coll_comm **out);
/* Closes the contexts (freeing what hangs off them) and the buffers. NULL is
 * a no-op. */
void mroce_coll_comm_destroy(struct mroce_coll_comm *comm);

/* Copies rank r's context pointers into ctxs[0..n-1] and addresses into
 * addrs (either may be NULL), for a datapath such as mroce_twloop_create. */
void mroce_coll_comm_endpoints(const struct mroce_coll_comm *comm,
                               struct mroce_ctx **ctxs,
                               struct mroce_addr *addrs);

/* Bytes of [addr, addr+len) as an SGE of a registered region. */
struct mroce_sge mroce_coll_sge(const struct mroce_mr *mr, const void *addr,
                                size_t len);

#endif
