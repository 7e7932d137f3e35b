/* Posting work requests: the checks and errors of mroce_post_* (shared
 * PD/MR objects of src/device via dev_mr_resolve), then a copy into the chosen
 * QP's queue and a slot in the stream's completion order. */
#include "roce/roce_int.h"

static int post_local(struct roce_conn *c, const struct mroce_sge *sge,
                      unsigned access, uint8_t **laddr, struct mroce_mr **mrp)
{
    int err = 0;
    *mrp = NULL;
    *laddr = NULL;
    if (sge->length > (1u << 31))
        return MROCE_EINVAL;
    if (!sge->length)
        return 0; /* a zero-length message touches no memory */
    *laddr = dev_mr_resolve(c->pd, sge->lkey, sge->addr, sge->length, access,
                            &err, mrp);
    if (!*laddr)
        return err == MROCE_ENOENT ? MROCE_EACCES : err;
    return 0;
}

static bool post_consumes(uint8_t op)
{
    return op == RWR_SEND || op == RWR_SEND_IMM || op == RWR_WRITE_IMM;
}

/* Whole messages go round-robin over the stream's k QPs. Messages that
 * consume a receive follow their own counter so that the peer, which
 * posts its receives round-robin the same way, has the n-th receive of
 * the stream on the QP the n-th such message arrives on. */
static struct roce_qp *post_pick(struct roce_conn *c, uint16_t s, uint8_t op)
{
    struct roce_stream *st = &c->streams[s];
    uint32_t n = post_consumes(op) ? st->n_consume : st->n_msgs;
    return &c->qps[(uint32_t)s * c->k + n % c->k];
}

static void post_commit(struct roce_conn *c, struct roce_qp *qp,
                        struct roce_wqe *w)
{
    struct roce_stream *st = &c->streams[qp->stream];
    if (post_consumes(w->op))
        st->n_consume++;
    else
        st->n_msgs++;
    w->ord = st->s_tail;
    st->sord[st->s_tail++ % st->s_cap] =
        (struct ord_ent){.done = false, .qp = (uint16_t)qp->idx};
    w->fence = c->k > 1 && post_consumes(w->op);
    if (w->mr)
        w->mr->refs++;
    qp->sq_tail++;
    qp->cnt.msgs_tx++;
}

static int post_sq(struct roce_conn *c, uint8_t op,
                   const struct mroce_send_wr *wr)
{
    if (c->state != MROCE_CONN_CONNECTED)
        return MROCE_ESTATE;
    if (wr->stream >= c->attr.n_streams)
        return MROCE_ENOENT;
    struct roce_qp *qp = post_pick(c, wr->stream, op);
    if (qp->sq_tail - qp->sq_head >= c->attr.sq_depth)
        return MROCE_EAGAIN;
    unsigned access = op == RWR_READ ? MROCE_ACCESS_LOCAL_WRITE : 0;
    struct roce_wqe w = {.wr = *wr, .op = op, .state = WQE_POSTED};
    int err = post_local(c, &wr->sge, access, &w.laddr, &w.mr);
    if (err)
        return err;
    if (!dev_cq_reserve(c->scq))
        return MROCE_EAGAIN;
    uint32_t len = wr->sge.length;
    w.npkts = len ? (len - 1) / c->mtu + 1 : 1;
    *roce_wqe_at(qp, qp->sq_tail) = w;
    post_commit(c, qp, roce_wqe_at(qp, qp->sq_tail));
    roce_conn_ready(c);
    return 0;
}

int roce_post_write(struct roce_conn *c, const struct mroce_send_wr *wr)
{
    return post_sq(c, RWR_WRITE, wr);
}

int roce_post_write_imm(struct roce_conn *c, const struct mroce_send_wr *wr)
{
    return post_sq(c, RWR_WRITE_IMM, wr);
}

int roce_post_send(struct roce_conn *c, const struct mroce_send_wr *wr)
{
    return post_sq(c, RWR_SEND, wr);
}

int roce_post_send_imm(struct roce_conn *c, const struct mroce_send_wr *wr)
{
    return post_sq(c, RWR_SEND_IMM, wr);
}

int roce_post_read(struct roce_conn *c, const struct mroce_send_wr *wr)
{
    return post_sq(c, RWR_READ, wr);
}

int roce_post_recv(struct roce_conn *c, const struct mroce_recv_wr *wr)
{
    if (c->state != MROCE_CONN_CONNECTED && c->state != MROCE_CONN_INIT)
        return MROCE_ESTATE;
    if (wr->stream >= c->attr.n_streams)
        return MROCE_ENOENT;
    struct roce_stream *st = &c->streams[wr->stream];
    struct roce_qp *qp =
        &c->qps[(uint32_t)wr->stream * c->k + st->n_recv % c->k];
    if (qp->rq_tail - qp->rq_head >= c->attr.rq_depth)
        return MROCE_EAGAIN;
    struct roce_rqe r = {.wr = *wr, .ord = st->r_tail};
    int err =
        post_local(c, &wr->sge, MROCE_ACCESS_LOCAL_WRITE, &r.laddr, &r.mr);
    if (err)
        return err;
    if (!dev_cq_reserve(c->rcq))
        return MROCE_EAGAIN;
    st->rord[st->r_tail++ % st->r_cap] =
        (struct ord_ent){.done = false, .qp = (uint16_t)qp->idx};
    st->n_recv++;
    if (r.mr)
        r.mr->refs++;
    qp->rq[qp->rq_tail++ % c->attr.rq_depth] = r;
    roce_conn_ready(c);
    return 0;
}
