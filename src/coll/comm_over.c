/* A communicator with one local rank and remote peers (see comm.h, "One
 * rank per process"). */
#include <stdlib.h>
#include <string.h>

#include "coll/comm.h"

static int over_build(struct mroce_coll_comm *c,
                      const struct mroce_coll_over_cfg *cfg)
{
    c->rank = calloc((size_t)c->n, sizeof(*c->rank));
    if (!c->rank)
        return MROCE_ENOMEM;
    for (int r = 0; r < c->n; r++)
        c->rank[r].remote = r != cfg->rank;
    struct mroce_coll_rank *k = &c->rank[cfg->rank];
    k->ctx = cfg->ctx;
    k->pd = cfg->pd;
    k->cq = cfg->cq;
    k->conn = calloc((size_t)c->n, sizeof(*k->conn));
    if (!k->conn)
        return MROCE_ENOMEM;
    int err = mroce_coll_rank_bufs(k, c->buf_bytes);
    if (!err)
        mroce_coll_comm_local_desc(c, k->desc);
    return err;
}

int mroce_coll_comm_create_over(const struct mroce_coll_over_cfg *cfg,
                                struct mroce_coll_comm **out)
{
    if (!out)
        return MROCE_EINVAL;
    *out = NULL;
    if (!cfg || cfg->n_ranks < 2 || cfg->n_ranks > 256 || cfg->rank < 0 ||
        cfg->rank >= cfg->n_ranks || !cfg->ctx || !cfg->pd || !cfg->cq)
        return MROCE_EINVAL;
    struct mroce_coll_comm *c =
        mroce_coll_comm_alloc(cfg->n_ranks, cfg->n_channels, cfg->buf_bytes);
    if (!c)
        return MROCE_ENOMEM;
    c->borrowed = 1;
    int err = over_build(c, cfg);
    if (err) {
        mroce_coll_comm_destroy(c);
        return err;
    }
    *out = c;
    return 0;
}

static const struct mroce_coll_rank *over_local(const struct mroce_coll_comm *c)
{
    for (int r = 0; r < c->n; r++)
        if (!c->rank[r].remote)
            return &c->rank[r];
    return NULL;
}

void mroce_coll_comm_local_desc(const struct mroce_coll_comm *comm,
                                struct mroce_coll_buf_desc *out)
{
    const struct mroce_coll_rank *k = over_local(comm);
    for (int i = 0; i < MROCE_COLL_N_BUFS; i++) {
        out[i].addr = k ? mroce_coll_raddr(k, i, 0) : 0;
        out[i].rkey = k ? mroce_coll_rkey(k, i) : 0;
        out[i].len = k ? comm->buf_bytes : 0;
    }
}

int mroce_coll_comm_set_peer(struct mroce_coll_comm *comm, int peer,
                             struct mroce_conn *conn,
                             const struct mroce_coll_buf_desc *desc)
{
    if (!comm || !comm->borrowed || peer < 0 || peer >= comm->n ||
        !comm->rank[peer].remote || !conn || !desc)
        return MROCE_EINVAL;
    for (int i = 0; i < MROCE_COLL_N_BUFS; i++)
        if (desc[i].len < comm->buf_bytes)
            return MROCE_EINVAL;
    struct mroce_coll_rank *me = (struct mroce_coll_rank *)over_local(comm);
    me->conn[peer] = conn;
    memcpy(comm->rank[peer].desc, desc, MROCE_COLL_N_BUFS * sizeof(*desc));
    return 0;
}

static int rank_ready(const struct mroce_coll_comm *c, int r)
{
    const struct mroce_coll_rank *k = &c->rank[r];
    if (k->remote)
        return k->desc[MROCE_COLL_SBUF].len != 0;
    for (int p = 0; p < c->n; p++)
        if (p != r && (!k->conn || !k->conn[p]))
            return 0;
    return 1;
}

int mroce_coll_comm_ready(const struct mroce_coll_comm *comm)
{
    if (!comm->borrowed)
        return 1;
    for (int r = 0; r < comm->n; r++)
        if (!rank_ready(comm, r))
            return 0;
    return 1;
}

static const struct mroce_mr *rank_mr(const struct mroce_coll_rank *k,
                                      int which)
{
    return which == MROCE_COLL_SBUF   ? k->smr
           : which == MROCE_COLL_RBUF ? k->rmr
                                      : k->xmr;
}

uint64_t mroce_coll_raddr(const struct mroce_coll_rank *k, int which,
                          size_t off)
{
    if (k->remote)
        return k->desc[which].addr + off;
    const uint8_t *b = which == MROCE_COLL_SBUF   ? k->sbuf
                       : which == MROCE_COLL_RBUF ? k->rbuf
                                                  : k->scratch;
    return (uint64_t)(uintptr_t)(b + off);
}

uint32_t mroce_coll_rkey(const struct mroce_coll_rank *k, int which)
{
    return k->remote ? k->desc[which].rkey : mroce_mr_rkey(rank_mr(k, which));
}
