/* Communicator setup: contexts, connections, buffers (see comm.h). */
#include "coll/comm.h"

#include <stdlib.h>
#include <string.h>

#define DEF_BUF (1u << 20)
#define DEF_QD 128

struct mroce_sge mroce_coll_sge(const struct mroce_mr *mr, const void *addr,
                                size_t len)
{
    struct mroce_sge s = {(uint64_t)(uintptr_t)addr, (uint32_t)len,
                          len ? mroce_mr_lkey(mr) : 0};
    return s;
}

static struct mroce_addr rank_addr(int r)
{
    struct mroce_addr a = {.family = MROCE_AF_INET};
    a.ip[0] = 10;
    a.ip[2] = (uint8_t)(r / 250);
    a.ip[3] = (uint8_t)(r % 250 + 1);
    return a;
}

static int rank_open(struct mroce_coll_comm *c,
                     const struct mroce_coll_cfg *cfg, int r, uint32_t qd)
{
    struct mroce_coll_rank *k = &c->rank[r];
    struct mroce_ctx_attr ca = {.deterministic = 1, /* in-process: tests */
                                .seed = cfg->seed + (uint64_t)r,
                                .addr = rank_addr(r),
                                .mtu = cfg->mtu,
                                .transport = cfg->transport};
    k->addr = ca.addr;
    int err = mroce_ctx_open(&ca, &k->ctx);
    if (!err)
        err = mroce_pd_alloc(k->ctx, &k->pd);
    /* Each connection reserves CQ room for every WR it may have posted. */
    uint32_t depth = (uint32_t)(c->n - 1) * c->n_channels * 2 * qd + 64;
    if (!err)
        err = mroce_cq_create(k->ctx, depth, &k->cq);
    k->conn = calloc((size_t)c->n, sizeof(*k->conn));
    if (!err && !k->conn)
        err = MROCE_ENOMEM;
    return err ? err : mroce_coll_rank_bufs(k, c->buf_bytes);
}

int mroce_coll_rank_bufs(struct mroce_coll_rank *k, size_t bytes)
{
    k->sbuf = calloc(1, bytes);
    k->rbuf = calloc(1, bytes);
    k->scratch = calloc(1, bytes);
    if (!k->sbuf || !k->rbuf || !k->scratch)
        return MROCE_ENOMEM;
    unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                   MROCE_ACCESS_REMOTE_READ;
    int err = mroce_reg_mr(k->pd, k->sbuf, bytes, acc, &k->smr);
    if (!err)
        err = mroce_reg_mr(k->pd, k->rbuf, bytes, acc, &k->rmr);
    if (!err)
        err = mroce_reg_mr(k->pd, k->scratch, bytes, acc, &k->xmr);
    return err;
}

static int pair_connect(struct mroce_coll_comm *c,
                        const struct mroce_coll_cfg *cfg, int a, int b,
                        uint32_t qd)
{
    int ends[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        struct mroce_coll_rank *k = &c->rank[ends[i]];
        struct mroce_conn_attr at = {.send_cq = k->cq,
                                     .recv_cq = k->cq,
                                     .n_streams = c->n_channels,
                                     .sq_depth = qd,
                                     .rq_depth = qd,
                                     .qps_per_stream = cfg->qps_per_stream,
                                     .rocev2_timeout = cfg->rocev2_timeout};
        int err = mroce_conn_create(k->pd, &at, &k->conn[ends[1 - i]]);
        if (err)
            return err;
    }
    struct mroce_conn *x = c->rank[a].conn[b], *y = c->rank[b].conn[a];
    struct mroce_conn_params px, py;
    mroce_conn_get_params(x, &px);
    mroce_conn_get_params(y, &py);
    int err = mroce_conn_connect(x, &py);
    return err ? err : mroce_conn_connect(y, &px);
}

static int comm_build(struct mroce_coll_comm *c,
                      const struct mroce_coll_cfg *cfg)
{
    uint32_t qd = cfg->queue_depth ? cfg->queue_depth : DEF_QD;
    for (int r = 0; r < c->n; r++) {
        int err = rank_open(c, cfg, r, qd);
        if (err)
            return err;
    }
    for (int a = 0; a < c->n; a++)
        for (int b = a + 1; b < c->n; b++) {
            int err = pair_connect(c, cfg, a, b, qd);
            if (err)
                return err;
        }
    return 0;
}

struct mroce_coll_comm *mroce_coll_comm_alloc(int n_ranks, uint16_t n_channels,
                                              size_t buf_bytes)
{
    struct mroce_coll_comm *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->n = n_ranks;
    c->n_channels = n_channels ? n_channels : 1;
    c->buf_bytes = buf_bytes ? buf_bytes : DEF_BUF;
    return c;
}

int mroce_coll_comm_create(const struct mroce_coll_cfg *cfg,
                           struct mroce_coll_comm **out)
{
    if (!out)
        return MROCE_EINVAL;
    *out = NULL;
    if (!cfg || cfg->n_ranks < 2 || cfg->n_ranks > 256)
        return MROCE_EINVAL;
    struct mroce_coll_comm *c =
        mroce_coll_comm_alloc(cfg->n_ranks, cfg->n_channels, cfg->buf_bytes);
    if (!c)
        return MROCE_ENOMEM;
    c->rank = calloc((size_t)c->n, sizeof(*c->rank));
    int err = c->rank ? comm_build(c, cfg) : MROCE_ENOMEM;
    if (err) {
        mroce_coll_comm_destroy(c);
        return err;
    }
    *out = c;
    return 0;
}

static void comm_release_mrs(struct mroce_coll_rank *k)
{
    struct mroce_mr *mrs[3] = {k->smr, k->rmr, k->xmr};
    for (int i = 0; i < 3; i++)
        if (mrs[i])
            mroce_dereg_mr(mrs[i]);
}

void mroce_coll_comm_destroy(struct mroce_coll_comm *comm)
{
    if (!comm)
        return;
    for (int r = 0; comm->rank && r < comm->n; r++) {
        struct mroce_coll_rank *k = &comm->rank[r];
        /* Closing the context frees its PD, CQ, MRs and connections; a
         * borrowed context stays the caller's, only our MRs go. */
        if (comm->borrowed)
            comm_release_mrs(k);
        else if (k->ctx)
            mroce_ctx_close(k->ctx);
        free(k->conn);
        free(k->sbuf);
        free(k->rbuf);
        free(k->scratch);
    }
    free(comm->rank);
    free(comm);
}

void mroce_coll_comm_endpoints(const struct mroce_coll_comm *comm,
                               struct mroce_ctx **ctxs,
                               struct mroce_addr *addrs)
{
    for (int r = 0; r < comm->n; r++) {
        if (ctxs)
            ctxs[r] = comm->rank[r].ctx;
        if (addrs)
            addrs[r] = comm->rank[r].addr;
    }
}

static uint8_t *comm_buf(const struct mroce_coll_rank *k, int which)
{
    return which == MROCE_COLL_SBUF   ? k->sbuf
           : which == MROCE_COLL_RBUF ? k->rbuf
                                      : k->scratch;
}

void mroce_coll_copy(const struct mroce_coll_comm *comm, int r, int dst_buf,
                     size_t dst_off, int src_buf, size_t src_off, size_t len)
{
    if (comm->mem) {
        comm->mem->copy(comm->mem->ud, r, dst_buf, dst_off, src_buf, src_off,
                        len);
        return;
    }
    const struct mroce_coll_rank *k = &comm->rank[r];
    memcpy(comm_buf(k, dst_buf) + dst_off, comm_buf(k, src_buf) + src_off, len);
}

void mroce_coll_sum_f32(const struct mroce_coll_comm *comm, int r, size_t off,
                        size_t len)
{
    if (comm->mem) {
        comm->mem->sum_f32(comm->mem->ud, r, off, len);
        return;
    }
    const struct mroce_coll_rank *me = &comm->rank[r];
    float *acc = (float *)(void *)(me->rbuf + off);
    const float *in = (const float *)(void *)(me->scratch + off);
    for (size_t i = 0; i < len / sizeof(float); i++)
        acc[i] += in[i];
}
