/* The NIC's side of posting: work requests the application wrote into a
 * QP's rings go to the engine, in order. A full engine queue (EAGAIN)
 * leaves the rest in the ring for a later pass; a request the engine
 * refuses (a local key or range that does not check) stops the send
 * queue there, and nic_comp.c completes it with an error once every
 * request before it has completed (R-SOFT-5). */
#include "ibverbs/sv.h"

static int feed_send_one(struct sv_qp *q, const struct sv_swqe *e, uint32_t seq)
{
    struct mroce_send_wr wr = {
        .wr_id = sv_wr_id(q, seq),
        .stream = e->stream,
        .sge = {.addr = e->laddr, .length = e->length, .lkey = e->lkey},
        .remote_addr = e->raddr,
        .rkey = e->rkey,
        .imm = e->imm};
    switch (e->opcode) {
    case IBV_WR_RDMA_WRITE:
        return mroce_post_write(q->conn, &wr);
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return mroce_post_write_imm(q->conn, &wr);
    case IBV_WR_SEND:
        return mroce_post_send(q->conn, &wr);
    case IBV_WR_SEND_WITH_IMM:
        return mroce_post_send_imm(q->conn, &wr);
    case IBV_WR_RDMA_READ:
        return mroce_post_read(q->conn, &wr);
    default:
        return MROCE_EINVAL; /* post.c admits none other */
    }
}

static int feed_sq(struct sv_qp *q)
{
    struct sv_wq *w = &q->sq;
    uint32_t head = atomic_load_explicit(&w->head, memory_order_acquire);
    int n = 0;
    while (w->fed != head && !q->sq_failed) {
        int rc = feed_send_one(q, &q->sqe[w->fed & w->mask], w->fed);
        if (rc == MROCE_EAGAIN)
            break;
        if (rc) {
            q->sq_failed = true; /* R-SOFT-5 */
            q->sq_fail = w->fed;
            q->sq_fail_err = rc;
            break;
        }
        w->fed++;
        n++;
    }
    return n;
}

static int feed_rq(struct sv_qp *q)
{
    struct sv_wq *w = &q->rq;
    uint32_t head = atomic_load_explicit(&w->head, memory_order_acquire);
    int n = 0;
    while (w->fed != head) {
        const struct sv_rwqe *e = &q->rqe[w->fed & w->mask];
        struct mroce_recv_wr wr = {
            .wr_id = sv_wr_id(q, w->fed),
            .stream = e->stream,
            .sge = {.addr = e->addr, .length = e->length, .lkey = e->lkey}};
        int rc = mroce_post_recv(q->conn, &wr);
        if (rc == MROCE_EAGAIN)
            break;
        if (rc) {
            /* a receive buffer the engine refuses: the QP goes to error
             * and the request completes with LOC_PROT_ERR (R-SOFT-5) */
            q->rq_failed = true;
            break;
        }
        w->fed++;
        n++;
    }
    return n;
}

/* Receives go to the engine from INIT on; sends in RTS only (SQD holds
 * them). In ERR nothing goes: nic_comp.c flushes the rings. */
int sv_nic_feed(struct sv_ctx *c)
{
    int n = 0;
    for (uint32_t i = 0; i < c->n_qps; i++) {
        struct sv_qp *q = c->qps[i];
        if (!q || q->errored)
            continue;
        int st = atomic_load_explicit(&q->state, memory_order_relaxed);
        if (st == IBV_QPS_RESET || st == IBV_QPS_ERR)
            continue;
        if (!q->rq_failed)
            n += feed_rq(q);
        if (st == IBV_QPS_RTS)
            n += feed_sq(q);
    }
    return n;
}
