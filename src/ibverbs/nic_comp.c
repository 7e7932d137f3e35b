/* The NIC's side of completions: the engine's work completions become
 * struct ibv_wc in the CQ rings; unsignaled successful sends free their
 * slot silently. A QP whose connection failed, or that the application
 * moved to ERR, is flushed: every request the engine still holds comes
 * back from it (WR_FLUSH_ERR, or the status of the one that failed), then
 * the requests never handed to it complete here, in posting order. */
#include <string.h>

#include "ibverbs/sv.h"

#define COMP_BATCH 64

static enum ibv_wc_status comp_status(uint8_t s)
{
    static const enum ibv_wc_status t[] = {
        [MROCE_WC_SUCCESS] = IBV_WC_SUCCESS,
        [MROCE_WC_LOC_LEN_ERR] = IBV_WC_LOC_LEN_ERR,
        [MROCE_WC_LOC_PROT_ERR] = IBV_WC_LOC_PROT_ERR,
        [MROCE_WC_REM_ACCESS_ERR] = IBV_WC_REM_ACCESS_ERR,
        [MROCE_WC_REM_INV_REQ_ERR] = IBV_WC_REM_INV_REQ_ERR,
        [MROCE_WC_REM_OP_ERR] = IBV_WC_REM_OP_ERR,
        [MROCE_WC_RETRY_EXC_ERR] = IBV_WC_RETRY_EXC_ERR,
        [MROCE_WC_RNR_RETRY_EXC_ERR] = IBV_WC_RNR_RETRY_EXC_ERR,
        [MROCE_WC_WR_FLUSH_ERR] = IBV_WC_WR_FLUSH_ERR,
    };
    return s < sizeof(t) / sizeof(t[0]) ? t[s] : IBV_WC_GENERAL_ERR;
}

static enum ibv_wc_opcode comp_send_op(uint8_t op)
{
    switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
        return IBV_WC_RDMA_READ;
    default:
        return IBV_WC_SEND;
    }
}

/* ---- the ring (the NIC is its only producer) ---- */

bool sv_cq_room(const struct sv_cq *cq)
{
    uint32_t t = atomic_load_explicit(&cq->tail, memory_order_relaxed);
    uint32_t h = atomic_load_explicit(&cq->head, memory_order_acquire);
    return t - h <= cq->mask;
}

bool sv_cq_push(struct sv_cq *cq, const struct ibv_wc *wc)
{
    if (!sv_cq_room(cq)) {
        atomic_store(&cq->nic_waits, true);
        return false;
    }
    uint32_t t = atomic_load_explicit(&cq->tail, memory_order_relaxed);
    cq->ring[t & cq->mask] = *wc;
    atomic_store_explicit(&cq->tail, t + 1, memory_order_release);
    cq->pushed = true;
    return true;
}

/* After a pass wrote completions: an armed CQ gets its event. The fence
 * pairs with the application's arm-then-poll (one of the two sees the
 * other's store). Every completion counts as solicited: the wire has no
 * solicited-event bit (R-SOFT-5). */
static void comp_notify(struct sv_cq *cq)
{
    if (!cq->pushed)
        return;
    cq->pushed = false;
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_exchange(&cq->armed, 0))
        sv_chan_push(cq);
}

/* ---- retiring ring entries ---- */

static void comp_retire(struct sv_wq *w, uint32_t seq)
{
    w->done[seq & w->mask] = 1;
    uint32_t r = atomic_load_explicit(&w->retired, memory_order_relaxed);
    while (r != w->fed && w->done[r & w->mask]) {
        w->done[r & w->mask] = 0;
        r++;
    }
    atomic_store_explicit(&w->retired, r, memory_order_release);
}

void sv_nic_retire_send(struct sv_qp *q, uint32_t seq)
{
    comp_retire(&q->sq, seq);
}

void sv_nic_retire_recv(struct sv_qp *q, uint32_t seq)
{
    comp_retire(&q->rq, seq);
}

/* ---- engine completions ---- */

/* The entry is retired before its completion is pushed: an application
 * on another core that polls the completion may post again at once, and
 * must find the entry free (verbs: a polled request's queue entry is the
 * application's again). Pushed first, a queue of depth 1 refused that
 * post with ENOMEM now and then (perftest's ib_write_lat: "Couldn't post
 * send"). The completion is built before the entry can be reused. */
static void comp_send(struct sv_qp *q, const struct mroce_wc *w, uint32_t seq)
{
    const struct sv_swqe *e = &q->sqe[seq & q->sq.mask];
    bool push = w->status != MROCE_WC_SUCCESS || (e->flags & SV_WR_SIGNALED);
    struct ibv_wc wc = {.wr_id = e->wr_id,
                        .status = comp_status(w->status),
                        .opcode = comp_send_op(e->opcode),
                        .byte_len = e->length,
                        .qp_num = q->ibv.qp_num};
    comp_retire(&q->sq, seq);
    if (push)
        sv_cq_push(q->scq, &wc); /* room was checked for the batch */
}

static void comp_recv(struct sv_qp *q, const struct mroce_wc *w, uint32_t seq)
{
    const struct sv_rwqe *e = &q->rqe[seq & q->rq.mask];
    struct ibv_wc wc = {
        .wr_id = e->wr_id,
        .status = comp_status(w->status),
        .opcode = w->opcode == MROCE_WC_RECV_RDMA_WITH_IMM
                      ? IBV_WC_RECV_RDMA_WITH_IMM
                      : IBV_WC_RECV,
        .byte_len = w->byte_len,
        .qp_num = q->ibv.qp_num,
        .src_qp = q->attr.dest_qp_num,
        .slid = q->attr.ah_attr.dlid,
    };
    if (w->has_imm) {
        wc.imm_data = w->imm; /* as posted: network byte order */
        wc.wc_flags = IBV_WC_WITH_IMM;
    }
    comp_retire(&q->rq, seq); /* before the push, as comp_send */
    sv_cq_push(q->rcq, &wc);
}

static void comp_one(struct sv_ctx *c, const struct mroce_wc *w)
{
    uint32_t slot = (uint32_t)(w->wr_id >> 32) & 0xFFFF;
    uint16_t gen = (uint16_t)(w->wr_id >> 48);
    struct sv_qp *q = slot < c->n_qps ? c->qps[slot] : NULL;
    if (!q || q->gen != gen)
        return; /* a destroyed or reset QP's leftover */
    if (w->status != MROCE_WC_SUCCESS)
        q->conn_failed = true;
    if (w->opcode == MROCE_WC_RECV || w->opcode == MROCE_WC_RECV_RDMA_WITH_IMM)
        comp_recv(q, w, (uint32_t)w->wr_id);
    else
        comp_send(q, w, (uint32_t)w->wr_id);
}

static uint32_t comp_room(const struct sv_cq *cq)
{
    uint32_t t = atomic_load_explicit(&cq->tail, memory_order_relaxed);
    uint32_t h = atomic_load_explicit(&cq->head, memory_order_acquire);
    return cq->mask + 1 - (t - h);
}

/* The device CQ's completions into the ring, while it has room. */
static int comp_drain(struct sv_ctx *c, struct sv_cq *cq)
{
    struct mroce_wc w[COMP_BATCH];
    int total = 0;
    for (;;) {
        uint32_t room = comp_room(cq);
        if (!room) {
            atomic_store(&cq->nic_waits, true);
            break;
        }
        int k = mroce_poll_cq(cq->cq,
                              room < COMP_BATCH ? (int)room : COMP_BATCH, w);
        for (int i = 0; i < k; i++)
            comp_one(c, &w[i]);
        total += k;
        if (k < COMP_BATCH)
            break;
    }
    return total;
}

/* ---- errors and flushes ---- */

/* The QP enters ERR. A connection the engine put in error has flushed
 * its requests into the device CQ with their statuses; a healthy one is
 * replaced (qp.c, R-SOFT-6) and its requests are flushed from the rings.
 * `async`: the NIC found the error, so IBV_EVENT_QP_FATAL reports it (not
 * when the application asked for ERR). */
void sv_nic_qp_error(struct sv_qp *q, bool async)
{
    if (q->errored)
        return;
    q->errored = true;
    int st = q->conn ? mroce_conn_state(q->conn) : MROCE_CONN_ERROR;
    if (st == MROCE_CONN_CONNECTED || st == MROCE_CONN_INIT) {
        comp_drain(q->ctx, q->scq); /* what completed keeps its status */
        comp_drain(q->ctx, q->rcq);
        sv_qp_drop_engine(q);
    }
    sv_qp_set_state(q, IBV_QPS_ERR);
    if (async && !q->async_sent) {
        q->async_sent = true;
        sv_async_qp(q->ctx, q, IBV_EVENT_QP_FATAL);
    }
}

/* R-SOFT-5: the request the engine refused completes with the matching
 * local error once every request before it has. */
static enum ibv_wc_status comp_local_status(int err)
{
    return err == MROCE_EINVAL ? IBV_WC_LOC_LEN_ERR : IBV_WC_LOC_PROT_ERR;
}

static bool comp_refused_send(struct sv_qp *q)
{
    struct sv_wq *w = &q->sq;
    if (atomic_load(&w->retired) != q->sq_fail)
        return false;
    const struct sv_swqe *e = &q->sqe[q->sq_fail & w->mask];
    struct ibv_wc wc = {.wr_id = e->wr_id,
                        .status = comp_local_status(q->sq_fail_err),
                        .opcode = comp_send_op(e->opcode),
                        .qp_num = q->ibv.qp_num};
    if (!sv_cq_push(q->scq, &wc))
        return false;
    w->fed++;
    comp_retire(w, q->sq_fail);
    q->sq_failed = false;
    return true;
}

static bool comp_refused_recv(struct sv_qp *q)
{
    struct sv_wq *w = &q->rq;
    if (atomic_load(&w->retired) != w->fed)
        return false;
    const struct sv_rwqe *e = &q->rqe[w->fed & w->mask];
    struct ibv_wc wc = {.wr_id = e->wr_id,
                        .status = IBV_WC_LOC_PROT_ERR,
                        .opcode = IBV_WC_RECV,
                        .qp_num = q->ibv.qp_num};
    if (!sv_cq_push(q->rcq, &wc))
        return false;
    w->fed++;
    comp_retire(w, w->fed - 1);
    q->rq_failed = false;
    return true;
}

/* Requests never handed to the engine, once all that were have come
 * back: WR_FLUSH_ERR, signaled or not (error completions always are). */
static int comp_flush_wq(struct sv_qp *q, struct sv_wq *w, struct sv_cq *cq,
                         bool send)
{
    uint32_t head = atomic_load_explicit(&w->head, memory_order_acquire);
    int n = 0;
    if (atomic_load(&w->retired) != w->fed)
        return 0;
    while (w->fed != head) {
        uint32_t s = w->fed & w->mask;
        if (w->done[s]) { /* completed already, behind an earlier one */
            w->fed++;
            comp_retire(w, w->fed - 1);
            continue;
        }
        struct ibv_wc wc = {.wr_id = send ? q->sqe[s].wr_id : q->rqe[s].wr_id,
                            .status = IBV_WC_WR_FLUSH_ERR,
                            .opcode = send ? comp_send_op(q->sqe[s].opcode)
                                           : IBV_WC_RECV,
                            .qp_num = q->ibv.qp_num};
        if (!sv_cq_push(cq, &wc))
            break;
        w->fed++;
        comp_retire(w, w->fed - 1);
        n++;
    }
    return n;
}

static void comp_sqd(struct sv_qp *q)
{
    if (q->sqd_notify && atomic_load(&q->sq.retired) == q->sq.fed) {
        q->sqd_notify = false;
        sv_async_qp(q->ctx, q, IBV_EVENT_SQ_DRAINED);
    }
}

static int comp_qp(struct sv_qp *q)
{
    int n = 0;
    if (q->sq_failed && comp_refused_send(q))
        sv_nic_qp_error(q, true), n++;
    if (q->rq_failed && comp_refused_recv(q))
        sv_nic_qp_error(q, true), n++;
    int es = q->conn ? mroce_conn_state(q->conn) : MROCE_CONN_INIT;
    if (!q->errored &&
        (es == MROCE_CONN_ERROR || es == MROCE_CONN_CLOSED || q->conn_failed))
        sv_nic_qp_error(q, true);
    if (atomic_load(&q->state) == IBV_QPS_SQD)
        comp_sqd(q);
    if (!q->errored)
        return n;
    n += comp_flush_wq(q, &q->sq, q->scq, true);
    n += comp_flush_wq(q, &q->rq, q->rcq, false);
    return n;
}

int sv_nic_complete(struct sv_ctx *c)
{
    int n = 0;
    for (struct sv_cq *cq = c->cqs; cq; cq = cq->next)
        n += comp_drain(c, cq);
    for (uint32_t i = 0; i < c->n_qps; i++)
        if (c->qps[i])
            n += comp_qp(c->qps[i]);
    for (struct sv_cq *cq = c->cqs; cq; cq = cq->next)
        comp_notify(cq);
    return n;
}
