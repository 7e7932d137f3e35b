/* The application's side of posting: a work request is checked, written
 * into its QP's ring, and the doorbell rung. No lock is shared with the
 * NIC thread; concurrent posters on one queue take the queue's spinlock,
 * as providers lock a QP. Errors are returned as errno values with *bad
 * set to the first request not posted (verbs semantics). */
#include <errno.h>
#include <string.h>

#include "ibverbs/sv.h"

static void post_lock(struct sv_wq *w)
{
    while (atomic_flag_test_and_set_explicit(&w->lock, memory_order_acquire))
        ;
}

static void post_unlock(struct sv_wq *w)
{
    atomic_flag_clear_explicit(&w->lock, memory_order_release);
}

static bool post_full(struct sv_wq *w, uint32_t head)
{
    uint32_t retired = atomic_load_explicit(&w->retired, memory_order_acquire);
    return head - retired >= w->max_wr;
}

static bool post_send_op(enum ibv_wr_opcode op)
{
    return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
           op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
           op == IBV_WR_RDMA_READ; /* atomics, MW, LSO, invalidate: no */
}

static uint64_t post_sge_len(const struct ibv_sge *sg, int n)
{
    return n ? sg->length : 0;
}

/* Inline data is copied now into the slot's area of the QP's inline
 * region, so the buffer is the caller's again when this returns. */
static int post_inline(struct sv_qp *q, const struct ibv_send_wr *wr,
                       struct sv_swqe *e, uint32_t slot)
{
    uint64_t len = post_sge_len(wr->sg_list, wr->num_sge);
    if (!q->inl || len > SV_MAX_INLINE || wr->opcode == IBV_WR_RDMA_READ)
        return EINVAL;
    uint8_t *dst = q->inl + (size_t)slot * SV_MAX_INLINE;
    if (len)
        memcpy(dst, (const void *)(uintptr_t)wr->sg_list->addr, len);
    e->laddr = (uint64_t)(uintptr_t)dst;
    e->length = (uint32_t)len;
    e->lkey = mroce_mr_lkey(q->inl_mr);
    return 0;
}

static int post_swqe(struct sv_qp *q, const struct ibv_send_wr *wr,
                     uint32_t head)
{
    if (!post_send_op(wr->opcode) || wr->num_sge < 0 ||
        wr->num_sge > (int)q->cap.max_send_sge)
        return EINVAL;
    if (post_full(&q->sq, head))
        return ENOMEM;
    struct sv_swqe *e = &q->sqe[head & q->sq.mask];
    *e = (struct sv_swqe){.wr_id = wr->wr_id,
                          .raddr = wr->wr.rdma.remote_addr,
                          .rkey = wr->wr.rdma.rkey,
                          .imm = wr->imm_data,
                          .opcode = (uint8_t)wr->opcode,
                          .stream = q->stream};
    if ((wr->send_flags & IBV_SEND_SIGNALED) || q->sq_sig_all)
        e->flags |= SV_WR_SIGNALED;
    if (wr->send_flags & IBV_SEND_SOLICITED)
        e->flags |= SV_WR_SOLICITED;
    if (wr->send_flags & IBV_SEND_INLINE)
        return post_inline(q, wr, e, head & q->sq.mask);
    if (wr->num_sge) {
        e->laddr = wr->sg_list->addr;
        e->length = wr->sg_list->length;
        e->lkey = wr->sg_list->lkey;
    }
    return 0;
}

/* Sends are taken in RTS, SQD (held) and ERR (flushed); any other state
 * is EINVAL, as providers answer. */
int sv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                 struct ibv_send_wr **bad)
{
    struct sv_qp *q = sv_qp_of(qp);
    int st = atomic_load_explicit(&q->state, memory_order_acquire), err = 0;
    if (st != IBV_QPS_RTS && st != IBV_QPS_SQD && st != IBV_QPS_ERR) {
        *bad = wr;
        return EINVAL;
    }
    post_lock(&q->sq);
    uint32_t head = atomic_load_explicit(&q->sq.head, memory_order_relaxed);
    for (; wr; wr = wr->next, head++)
        if ((err = post_swqe(q, wr, head)))
            break;
    atomic_store_explicit(&q->sq.head, head, memory_order_release);
    post_unlock(&q->sq);
    if (err)
        *bad = wr;
    sv_nic_doorbell(q->ctx);
    return err;
}

static int post_rwqe(struct sv_qp *q, const struct ibv_recv_wr *wr,
                     uint32_t head)
{
    if (wr->num_sge < 0 || wr->num_sge > (int)q->cap.max_recv_sge)
        return EINVAL;
    if (post_full(&q->rq, head))
        return ENOMEM;
    struct sv_rwqe *e = &q->rqe[head & q->rq.mask];
    *e = (struct sv_rwqe){.wr_id = wr->wr_id, .stream = q->stream};
    if (wr->num_sge) {
        e->addr = wr->sg_list->addr;
        e->length = wr->sg_list->length;
        e->lkey = wr->sg_list->lkey;
    }
    return 0;
}

/* Receives are taken in every state but RESET. */
int sv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                 struct ibv_recv_wr **bad)
{
    struct sv_qp *q = sv_qp_of(qp);
    int err = 0;
    if (atomic_load_explicit(&q->state, memory_order_acquire) ==
        IBV_QPS_RESET) {
        *bad = wr;
        return EINVAL;
    }
    post_lock(&q->rq);
    uint32_t head = atomic_load_explicit(&q->rq.head, memory_order_relaxed);
    for (; wr; wr = wr->next, head++)
        if ((err = post_rwqe(q, wr, head)))
            break;
    atomic_store_explicit(&q->rq.head, head, memory_order_release);
    post_unlock(&q->rq);
    if (err)
        *bad = wr;
    sv_nic_doorbell(q->ctx);
    return err;
}

int sv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
                     struct ibv_recv_wr **bad)
{
    (void)srq;
    *bad = wr;
    return EOPNOTSUPP; /* no SRQ can exist */
}
