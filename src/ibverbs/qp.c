/* RC queue pairs: one MetaRoCE connection each (R-SOFT-2), created with
 * the QP so receives can be posted from INIT on, and connected when the
 * QP reaches RTR (modify.c). UD, UC, XRC, raw packet QPs and SRQs are
 * refused with EOPNOTSUPP. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ibverbs/sv.h"

#define QP_ID_TRIES 16

static uint32_t qp_pow2(uint32_t v)
{
    uint32_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

static int qp_check(struct ibv_pd *pd, const struct ibv_qp_init_attr *a)
{
    if (a->qp_type != IBV_QPT_RC || a->srq)
        return EOPNOTSUPP;
    if (!a->send_cq || !a->recv_cq || a->send_cq->context != pd->context ||
        a->recv_cq->context != pd->context)
        return EINVAL;
    const struct ibv_qp_cap *c = &a->cap;
    if (c->max_send_wr > SV_MAX_QP_WR || c->max_recv_wr > SV_MAX_QP_WR ||
        c->max_send_sge > 1 || c->max_recv_sge > 1 ||
        c->max_inline_data > SV_MAX_INLINE)
        return EINVAL;
    return 0;
}

static int qp_wq(struct sv_wq *w, uint32_t max_wr)
{
    uint32_t n = qp_pow2(max_wr ? max_wr : 1);
    w->mask = n - 1;
    w->max_wr = n;
    w->done = calloc(n, 1);
    atomic_flag_clear(&w->lock);
    return w->done ? 0 : ENOMEM;
}

static int qp_rings(struct sv_qp *q, const struct ibv_qp_cap *cap)
{
    if (qp_wq(&q->sq, cap->max_send_wr) || qp_wq(&q->rq, cap->max_recv_wr))
        return ENOMEM;
    q->sqe = calloc(q->sq.max_wr, sizeof(*q->sqe));
    q->rqe = calloc(q->rq.max_wr, sizeof(*q->rqe));
    if (!q->sqe || !q->rqe)
        return ENOMEM;
    q->cap = (struct ibv_qp_cap){.max_send_wr = q->sq.max_wr,
                                 .max_recv_wr = q->rq.max_wr,
                                 .max_send_sge = 1,
                                 .max_recv_sge = 1,
                                 .max_inline_data = cap->max_inline_data};
    if (!cap->max_inline_data)
        return 0;
    q->cap.max_inline_data = SV_MAX_INLINE;
    q->inl = calloc(q->sq.max_wr, SV_MAX_INLINE);
    return q->inl ? 0 : ENOMEM;
}

static void qp_free(struct sv_qp *q)
{
    free(q->sq.done);
    free(q->rq.done);
    free(q->sqe);
    free(q->rqe);
    free(q->inl);
    free(q);
}

/* The engine connection; ctl held. R-SOFT-2: the QPN is its id. */
int sv_qp_conn(struct sv_qp *q, struct mroce_pd *pd, uint32_t qpn)
{
    const struct sv_profile *p = &q->ctx->prof;
    uint32_t sq = q->sq.max_wr > sv_addr_msg_window() ? q->sq.max_wr
                                                      : sv_addr_msg_window();
    struct mroce_conn_attr a = {.send_cq = q->scq->cq,
                                .recv_cq = q->rcq->cq,
                                .n_streams = q->n_streams,
                                .n_paths = q->n_paths,
                                .sq_depth = sq,
                                .rq_depth = q->rq.max_wr,
                                .max_rd = SV_MAX_RD,
                                .retry_cnt = p->retry_cnt,
                                .min_rto_ns = p->min_rto_ns,
                                .conn_id = qpn};
    int rc = MROCE_EBUSY;
    for (int i = 0; i < QP_ID_TRIES && rc == MROCE_EBUSY; i++) {
        a.conn_id = qpn ? qpn : sv_addr_qpn(q->ctx);
        rc = mroce_conn_create(pd, &a, &q->conn);
        if (qpn)
            break; /* a reset QP keeps its number */
    }
    if (rc)
        return sv_errno(rc);
    q->ibv.qp_num = a.conn_id;
    return 0;
}

static int qp_inline_mr(struct sv_qp *q, struct mroce_pd *pd)
{
    if (!q->inl)
        return 0;
    int rc = mroce_reg_mr(pd, q->inl, (size_t)q->sq.max_wr * SV_MAX_INLINE,
                          MROCE_ACCESS_LOCAL_WRITE, &q->inl_mr);
    return rc ? sv_errno(rc) : 0;
}

int sv_qp_table_add(struct sv_ctx *c, struct sv_qp *q)
{
    uint32_t i = 0;
    while (i < c->n_qps && c->qps[i])
        i++;
    if (i == c->qps_cap) {
        uint32_t cap = c->qps_cap ? 2 * c->qps_cap : 16;
        if (cap > SV_MAX_QP)
            return ENOMEM;
        struct sv_qp **t = realloc(c->qps, cap * sizeof(*t));
        if (!t)
            return ENOMEM;
        memset(t + c->qps_cap, 0, (cap - c->qps_cap) * sizeof(*t));
        c->qps = t;
        c->qps_cap = cap;
    }
    if (i == c->n_qps)
        c->n_qps++;
    c->qps[i] = q;
    q->slot = i;
    q->gen = ++c->qp_gen;
    return 0;
}

static int qp_setup(struct sv_ctx *c, struct sv_qp *q, struct ibv_pd *pd)
{
    struct mroce_pd *mpd = ((struct sv_pd *)(void *)pd)->pd;
    sv_ctl_lock(c);
    int err = sv_qp_conn(q, mpd, 0);
    if (!err && (err = qp_inline_mr(q, mpd)))
        mroce_conn_destroy(q->conn);
    if (!err && (err = sv_qp_table_add(c, q))) {
        mroce_conn_destroy(q->conn);
        if (q->inl_mr)
            mroce_dereg_mr(q->inl_mr);
    }
    if (!err) {
        q->scq->users++;
        q->rcq->users++;
    }
    sv_ctl_unlock(c);
    return err;
}

static void qp_fill(struct sv_qp *q, struct ibv_pd *pd,
                    const struct ibv_qp_init_attr *a)
{
    q->ibv.context = pd->context;
    q->ibv.qp_context = a->qp_context;
    q->ibv.pd = pd;
    q->ibv.send_cq = a->send_cq;
    q->ibv.recv_cq = a->recv_cq;
    q->ibv.handle = q->slot;
    q->ibv.state = IBV_QPS_RESET;
    q->ibv.qp_type = IBV_QPT_RC;
    pthread_mutex_init(&q->ibv.mutex, NULL);
    pthread_cond_init(&q->ibv.cond, NULL);
    q->attr.qp_state = IBV_QPS_RESET;
    q->attr.port_num = 1;
    q->attr.path_mtu = IBV_MTU_4096;
    q->sq_sig_all = a->sq_sig_all;
}

struct ibv_qp *ibv_create_qp_1_1(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
    struct sv_ctx *c = sv_ctx_of(pd->context);
    int err = qp_check(pd, a);
    struct sv_qp *q = err ? NULL : calloc(1, sizeof(*q));
    if (!err && !q)
        err = ENOMEM;
    if (!err) {
        q->ctx = c;
        q->scq = sv_cq_of(a->send_cq);
        q->rcq = sv_cq_of(a->recv_cq);
        q->n_paths = c->prof.paths;
        q->n_streams = c->prof.streams;
        err = qp_rings(q, &a->cap);
    }
    if (!err)
        err = qp_setup(c, q, pd);
    if (err) {
        if (q)
            qp_free(q);
        errno = err;
        return NULL;
    }
    qp_fill(q, pd, a);
    a->cap = q->cap; /* the actual sizes, as providers report them */
    return &q->ibv;
}
SV_1_1(ibv_create_qp);

void sv_wq_reset(struct sv_wq *w)
{
    uint32_t head = atomic_load(&w->head);
    w->fed = head;
    memset(w->done, 0, w->mask + 1);
    atomic_store(&w->retired, head);
}

/* The QP enters ERR while its connection is fine (the application asked,
 * or a request was refused locally): the connection is replaced (same
 * QPN, R-SOFT-2; the peer is not told, R-SOFT-6) and what it held goes
 * back to the rings, which nic_comp.c flushes in order. Entries already
 * completed (done, waiting behind an earlier one) are not completed
 * again. ctl held. */
void sv_qp_drop_engine(struct sv_qp *q)
{
    struct mroce_pd *pd = ((struct sv_pd *)(void *)q->ibv.pd)->pd;
    mroce_conn_destroy(q->conn);
    q->conn = NULL;
    if (sv_qp_conn(q, pd, q->ibv.qp_num))
        q->conn = NULL; /* out of memory: the QP stays in ERR, empty */
    q->gen = ++q->ctx->qp_gen;
    q->sq.fed = atomic_load(&q->sq.retired);
    q->rq.fed = atomic_load(&q->rq.retired);
}

void sv_qp_set_state(struct sv_qp *q, enum ibv_qp_state s)
{
    q->attr.qp_state = s;
    atomic_store(&q->state, (int)s);
    __atomic_store_n(&q->ibv.state, s, __ATOMIC_RELEASE);
}

/* R-SOFT-6: as in IB, the peer is not told: a QP that goes away (or
 * into ERR) simply stops answering, and a peer that still sends runs out
 * of retries (RETRY_EXC_ERR). The engine's CLOSE is not used. */
static void qp_drop_conn(struct sv_qp *q)
{
    if (q->conn)
        mroce_conn_destroy(q->conn);
    q->conn = NULL;
}

int ibv_destroy_qp_1_1(struct ibv_qp *qp)
{
    struct sv_qp *q = sv_qp_of(qp);
    struct sv_ctx *c = q->ctx;
    sv_ctl_lock(c);
    qp_drop_conn(q);
    if (q->inl_mr)
        mroce_dereg_mr(q->inl_mr);
    q->scq->users--;
    q->rcq->users--;
    c->qps[q->slot] = NULL;
    sv_ctl_unlock(c);
    sv_async_forget(c, q);
    pthread_mutex_lock(&qp->mutex);
    while (qp->events_completed != q->events_delivered)
        pthread_cond_wait(&qp->cond, &qp->mutex);
    pthread_mutex_unlock(&qp->mutex);
    pthread_mutex_destroy(&qp->mutex);
    pthread_cond_destroy(&qp->cond);
    qp_free(q);
    return 0;
}
SV_1_1(ibv_destroy_qp);

int ibv_query_qp_1_1(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
                     struct ibv_qp_init_attr *init)
{
    struct sv_qp *q = sv_qp_of(qp);
    struct sv_ctx *c = q->ctx;
    (void)mask; /* every attribute is returned, as providers do */
    sv_ctl_lock(c);
    *attr = q->attr;
    attr->qp_state = (enum ibv_qp_state)atomic_load(&q->state);
    attr->cur_qp_state = attr->qp_state;
    attr->path_mig_state = IBV_MIG_MIGRATED;
    attr->cap = q->cap;
    attr->sq_draining = attr->qp_state == IBV_QPS_SQD &&
                        atomic_load(&q->sq.retired) != q->sq.fed;
    sv_ctl_unlock(c);
    if (init) {
        memset(init, 0, sizeof(*init));
        init->qp_context = qp->qp_context;
        init->send_cq = qp->send_cq;
        init->recv_cq = qp->recv_cq;
        init->cap = q->cap;
        init->qp_type = IBV_QPT_RC;
        init->sq_sig_all = q->sq_sig_all;
    }
    return 0;
}
SV_1_1(ibv_query_qp);
