/* Posting work requests: validation against local keys and bounds, then a
 * copy into the stream's queue (R-ORD-1, R-MSG-1). */
#include "engine/eng.h"

static int post_check_conn(struct mroce_conn *c, uint16_t stream)
{
    if (c->state != MROCE_CONN_CONNECTED)
        return MROCE_ESTATE;
    if (stream >= c->n_streams)
        return MROCE_ENOENT;
    return 0;
}

static int post_local(struct mroce_conn *c, const struct mroce_sge *sge,
                      unsigned access, struct mroce_mr **mrp)
{
    int err = 0;
    *mrp = NULL;
    if (sge->length > (1u << 31))
        return MROCE_EINVAL;
    if (!sge->length)
        return 0; /* a zero-length message touches no memory */
    if (!dev_mr_resolve(c->pd, sge->lkey, sge->addr, sge->length, access, &err,
                        mrp))
        return err == MROCE_ENOENT ? MROCE_EACCES : err;
    return 0;
}

static int post_sq(struct mroce_conn *c, uint8_t op,
                   const struct mroce_send_wr *wr)
{
    int err = post_check_conn(c, wr->stream);
    if (err)
        return err;
    struct stream *s = &c->streams[wr->stream];
    if (s->sq_tail - s->sq_head >= c->attr.sq_depth)
        return MROCE_EAGAIN;
    unsigned access = op == MROCE_OP_READ_REQ ? MROCE_ACCESS_LOCAL_WRITE : 0;
    struct mroce_mr *mr;
    err = post_local(c, &wr->sge, access, &mr);
    if (err)
        return err;
    if (!dev_cq_reserve(c->scq))
        return MROCE_EAGAIN;
    struct sq_slot *q = eng_sq(c, s, s->sq_tail);
    *q = (struct sq_slot){.wr = *wr, .op = op, .msn = s->sq_tail, .mr = mr};
    q->npkts = op == MROCE_OP_READ_REQ ? 1 : eng_npkts(wr->sge.length, c->mtu);
    if (op != MROCE_OP_WRITE && op != MROCE_OP_READ_REQ)
        q->ssn = s->next_ssn++; /* R-MSG-7: consumes a receive */
    if (mr)
        mr->refs++;
    if (op != MROCE_OP_READ_REQ)
        c->unsent += wr->sge.length; /* R-TAIL-100 */
    s->sq_tail++;
    c->cnt.msgs_tx++;
    eng_sched_ready(c);
    return 0;
}

int eng_post_write(struct mroce_conn *c, const struct mroce_send_wr *wr)
{
    return post_sq(c, MROCE_OP_WRITE, wr);
}

int eng_post_write_imm(struct mroce_conn *c, const struct mroce_send_wr *wr)
{
    return post_sq(c, MROCE_OP_WRITE_IMM, wr);
}

int eng_post_send(struct mroce_conn *c, const struct mroce_send_wr *wr)
{
    return post_sq(c, MROCE_OP_SEND, wr);
}

int eng_post_send_imm(struct mroce_conn *c, const struct mroce_send_wr *wr)
{
    return post_sq(c, MROCE_OP_SEND_IMM, wr);
}

int eng_post_read(struct mroce_conn *c, const struct mroce_send_wr *wr)
{
    return post_sq(c, MROCE_OP_READ_REQ, wr);
}

int eng_post_recv(struct mroce_conn *c, const struct mroce_recv_wr *wr)
{
    if (c->state != MROCE_CONN_CONNECTED && c->state != MROCE_CONN_INIT)
        return MROCE_ESTATE;
    if (wr->stream >= c->attr.n_streams)
        return MROCE_ENOENT;
    struct stream *s = &c->streams[wr->stream];
    if (s->rq_tail - s->rq_head >= c->attr.rq_depth)
        return MROCE_EAGAIN;
    struct mroce_mr *mr;
    int err = post_local(c, &wr->sge, MROCE_ACCESS_LOCAL_WRITE, &mr);
    if (err)
        return err;
    if (!dev_cq_reserve(c->rcq))
        return MROCE_EAGAIN;
    uint32_t i = eng_rq(c, s->rq_tail);
    s->rq[i] = *wr;
    s->rq_mr[i] = mr;
    if (mr)
        mr->refs++;
    s->rq_tail++;
    eng_sched_ready(c);
    return 0;
}
