/* Connections: k RC QPs per stream, the parameter exchange (what the CM
 * carries), per-stream completion order across QPs, error and flush. */
#include <string.h>

#include "roce/roce_int.h"

const char *const roce_wqe_state_names[WQE_NSTATES] = {"POSTED", "SENDING",
                                                       "PENDING"};

#define DEF(v, d) ((v) ? (v) : (d))

static bool conn_mtu_ok(uint32_t m)
{
    return m >= ROCE_MTU_MIN && m <= ROCE_MTU_MAX && !(m & (m - 1));
}

static int conn_fill_attr(struct roce_conn_attr *a)
{
    a->n_streams = DEF(a->n_streams, 1);
    a->qps_per_stream = DEF(a->qps_per_stream, 1);
    a->sq_depth = DEF(a->sq_depth, 64);
    a->rq_depth = DEF(a->rq_depth, 64);
    a->mtu = DEF(a->mtu, 4096);
    a->max_rd = DEF(a->max_rd, 16);
    a->timeout = DEF(a->timeout, 14);
    a->retry_cnt = DEF(a->retry_cnt, 7);
    a->rnr_retry = DEF(a->rnr_retry, 7);
    a->min_rnr_timer = DEF(a->min_rnr_timer, 12);
    a->max_unacked_psns = DEF(a->max_unacked_psns, 128);
    a->ack_req_every = DEF(a->ack_req_every, 64);
    if (!a->send_cq || !a->recv_cq || !conn_mtu_ok(a->mtu) ||
        (uint32_t)a->n_streams * a->qps_per_stream > ROCE_MAX_QPS ||
        a->sq_depth > 65536 || a->rq_depth > 65536 || a->max_rd > 1024 ||
        a->timeout > 31 || a->retry_cnt > 7 || a->rnr_retry > 7 ||
        a->min_rnr_timer > 31 || a->max_unacked_psns > (1u << 22))
        return MROCE_EINVAL;
    return 0;
}

static int conn_alloc(struct roce_conn *c)
{
    struct mroce_dev *md = c->dev->mdev;
    const struct roce_conn_attr *a = &c->attr;
    c->qps = dev_alloc(md, c->n_qps * sizeof(*c->qps));
    c->streams = dev_alloc(md, a->n_streams * sizeof(*c->streams));
    if (!c->qps || !c->streams)
        return MROCE_ENOMEM;
    for (uint32_t i = 0; i < c->n_qps; i++) {
        struct roce_qp *qp = &c->qps[i];
        qp->sq = dev_alloc(md, a->sq_depth * sizeof(*qp->sq));
        qp->rq = dev_alloc(md, a->rq_depth * sizeof(*qp->rq));
        qp->rd = dev_alloc(md, c->rd_cap * sizeof(*qp->rd));
        if (!qp->sq || !qp->rq || !qp->rd)
            return MROCE_ENOMEM;
    }
    for (uint32_t s = 0; s < a->n_streams; s++) {
        struct roce_stream *st = &c->streams[s];
        st->s_cap = c->k * a->sq_depth;
        st->r_cap = c->k * a->rq_depth;
        st->sord = dev_alloc(md, st->s_cap * sizeof(*st->sord));
        st->rord = dev_alloc(md, st->r_cap * sizeof(*st->rord));
        if (!st->sord || !st->rord)
            return MROCE_ENOMEM;
    }
    return 0;
}

static void conn_free(struct roce_conn *c)
{
    struct mroce_dev *md = c->dev->mdev;
    for (uint32_t i = 0; c->qps && i < c->n_qps; i++) {
        dev_free(md, c->qps[i].sq);
        dev_free(md, c->qps[i].rq);
        dev_free(md, c->qps[i].rd);
    }
    for (uint32_t s = 0; c->streams && s < c->attr.n_streams; s++) {
        dev_free(md, c->streams[s].sord);
        dev_free(md, c->streams[s].rord);
    }
    dev_free(md, c->qps);
    dev_free(md, c->streams);
    dev_free(md, c);
}

static void conn_init_qp(struct roce_conn *c, uint32_t i)
{
    struct roce_qp *qp = &c->qps[i];
    qp->conn = c;
    qp->idx = i;
    qp->stream = (uint16_t)(i / c->k);
    qp->rto_at = qp->rnr_at = qp->pace_at = ROCE_NEVER;
    qp->deadline = ROCE_NEVER;
    qp->cnp_last = ROCE_NEVER;
    uint32_t psn = c->attr.psn_fixed ? c->attr.start_psn
                                     : (uint32_t)dev_rand(c->dev->mdev);
    psn &= ROCE_PSN_MASK;
    qp->req_psn = qp->comp_psn = qp->psn_hi = psn;
    c->local.qpn[i] = qp->qpn;
    c->local.psn[i] = psn;
}

static void conn_init_local(struct roce_conn *c)
{
    c->local.addr = c->dev->mdev->addr;
    c->local.n_streams = c->attr.n_streams;
    c->local.n_qps = (uint16_t)c->n_qps;
    c->local.mtu = c->attr.mtu;
    c->local.max_rd = c->attr.max_rd;
    for (uint32_t i = 0; i < c->n_qps; i++)
        conn_init_qp(c, i);
}

static void conn_link(struct roce_dev *dev, struct roce_conn *c)
{
    c->next = dev->conns;
    if (dev->conns)
        dev->conns->prev = c;
    dev->conns = c;
}

int roce_conn_create(struct roce_dev *dev, struct mroce_pd *pd,
                     const struct roce_conn_attr *attr, struct roce_conn **out)
{
    struct roce_conn_attr a = *attr;
    if (conn_fill_attr(&a) || pd->dev != dev->mdev ||
        a.send_cq->dev != dev->mdev || a.recv_cq->dev != dev->mdev)
        return MROCE_EINVAL;
    struct roce_conn *c = dev_alloc(dev->mdev, sizeof(*c));
    if (!c)
        return MROCE_ENOMEM;
    c->dev = dev;
    c->pd = pd;
    c->attr = a;
    c->k = a.qps_per_stream;
    c->n_qps = (uint32_t)a.n_streams * c->k;
    c->rd_cap = 2 * a.max_rd;
    if (conn_alloc(c) || roce_dev_add_qps(dev, c)) {
        conn_free(c);
        return MROCE_ENOMEM;
    }
    c->scq = a.send_cq;
    c->rcq = a.recv_cq;
    c->state = MROCE_CONN_INIT;
    conn_init_local(c);
    conn_link(dev, c);
    pd->refs++;
    c->scq->users++;
    c->rcq->users++;
    *out = c;
    return 0;
}

void roce_conn_get_params(const struct roce_conn *c,
                          struct roce_conn_params *out)
{
    *out = c->local;
}

static bool conn_params_ok(const struct roce_conn *c,
                           const struct roce_conn_params *r)
{
    if (r->n_qps != c->n_qps || r->n_streams != c->attr.n_streams ||
        !conn_mtu_ok(r->mtu) || !r->max_rd ||
        (r->addr.family != MROCE_AF_INET && r->addr.family != MROCE_AF_INET6))
        return false;
    for (uint32_t i = 0; i < c->n_qps; i++)
        if (r->qpn[i] < 2 || r->qpn[i] > ROCE_QPN_MASK ||
            r->psn[i] > ROCE_PSN_MASK)
            return false;
    return true;
}

/* RTR + RTS in one step (IBTA ch. 10): the responder expects the peer's
 * starting PSN, the PMTU is the smaller of the two, the initiator depth
 * is bounded by the peer's responder resources. */
int roce_conn_connect(struct roce_conn *c, const struct roce_conn_params *r)
{
    if (c->state != MROCE_CONN_INIT)
        return MROCE_ESTATE;
    if (!conn_params_ok(c, r))
        return MROCE_EINVAL;
    c->remote = *r;
    c->mtu = c->attr.mtu < r->mtu ? c->attr.mtu : r->mtu;
    c->peer_max_rd = c->attr.max_rd < r->max_rd ? c->attr.max_rd : r->max_rd;
    c->timeout_ns = roce_timeout_ns(c->attr.timeout);
    for (uint32_t i = 0; i < c->n_qps; i++) {
        struct roce_qp *qp = &c->qps[i];
        qp->dqpn = r->qpn[i];
        qp->resp_psn = r->psn[i];
        qp->retry_left = c->attr.retry_cnt;
        qp->rnr_left = c->attr.rnr_retry;
        roce_rp_init(qp);
    }
    c->state = MROCE_CONN_CONNECTED;
    roce_conn_ready(c);
    return 0;
}

int roce_conn_state(const struct roce_conn *c)
{
    return c->state;
}

uint32_t roce_conn_n_qps(const struct roce_conn *c)
{
    return c->n_qps;
}

static void conn_add(struct roce_qp_counters *s,
                     const struct roce_qp_counters *q)
{
    const uint64_t *a = (const uint64_t *)q;
    uint64_t *b = (uint64_t *)s;
    for (size_t i = 0; i < sizeof(*q) / sizeof(uint64_t); i++)
        b[i] += a[i];
}

void roce_conn_get_counters(const struct roce_conn *c,
                            struct roce_qp_counters *out)
{
    memset(out, 0, sizeof(*out));
    for (uint32_t i = 0; i < c->n_qps; i++)
        conn_add(out, &c->qps[i].cnt);
}

int roce_conn_qp_info(const struct roce_conn *c, uint32_t i,
                      struct roce_qp_info *out)
{
    if (i >= c->n_qps)
        return MROCE_ENOENT;
    const struct roce_qp *qp = &c->qps[i];
    *out = (struct roce_qp_info){
        .qpn = qp->qpn,
        .dest_qpn = qp->dqpn,
        .src_port = qp->sport,
        .sq_psn = qp->req_psn,
        .una_psn = qp->comp_psn,
        .rq_psn = qp->resp_psn,
        .rate_mbps = qp->rp.rc,
        .target_mbps = qp->rp.rt,
        .alpha = qp->rp.alpha,
        .cnt = qp->cnt,
    };
    return 0;
}

/* ---- completion order (R-ORD-4, R-ORD-7) ---- */

/* Pushes the stream's done completions from the head, in post order. */
static void conn_release(struct roce_conn *c, struct roce_stream *st)
{
    while (st->s_head != st->s_tail && st->sord[st->s_head % st->s_cap].done)
        dev_cq_push(c->scq, &st->sord[st->s_head++ % st->s_cap].wc);
    while (st->r_head != st->r_tail && st->rord[st->r_head % st->r_cap].done)
        dev_cq_push(c->rcq, &st->rord[st->r_head++ % st->r_cap].wc);
}

static uint8_t conn_wc_op(uint8_t op)
{
    switch (op) {
    case RWR_READ:
        return MROCE_WC_RDMA_READ;
    case RWR_SEND:
    case RWR_SEND_IMM:
        return MROCE_WC_SEND;
    default:
        return MROCE_WC_RDMA_WRITE;
    }
}

/* Retires the WQE at the head of the SQ: RC completes a QP's WRs in
 * order (IBTA ch. 10; rxe do_complete). */
void roce_complete_wqe(struct roce_qp *qp, struct roce_wqe *w, uint8_t status)
{
    struct roce_conn *c = qp->conn;
    struct roce_stream *st = &c->streams[qp->stream];
    struct ord_ent *e = &st->sord[w->ord % st->s_cap];
    e->wc = (struct mroce_wc){.wr_id = w->wr.wr_id,
                              .conn = c->attr.wc_conn,
                              .stream = qp->stream,
                              .status = status,
                              .opcode = conn_wc_op(w->op)};
    e->done = true;
    if (w->mr)
        w->mr->refs--;
    if (w->rd_counted)
        qp->rd_out--;
    if (qp->req_wqe == qp->sq_head)
        qp->req_wqe++;
    qp->sq_head++;
    conn_release(c, st);
}

void roce_complete_recv(struct roce_qp *qp, uint8_t status, uint8_t opcode,
                        uint32_t byte_len, bool has_imm, uint32_t imm)
{
    struct roce_conn *c = qp->conn;
    struct roce_stream *st = &c->streams[qp->stream];
    struct roce_rqe *r = &qp->rq[qp->rq_head % c->attr.rq_depth];
    struct ord_ent *e = &st->rord[r->ord % st->r_cap];
    e->wc = (struct mroce_wc){.wr_id = r->wr.wr_id,
                              .conn = c->attr.wc_conn,
                              .stream = qp->stream,
                              .status = status,
                              .opcode = opcode,
                              .has_imm = has_imm,
                              .byte_len = byte_len,
                              .imm = has_imm ? imm : 0};
    e->done = true;
    if (r->mr)
        r->mr->refs--;
    qp->rq_head++;
    conn_release(c, st);
}

/* With k > 1 a receive-consuming message must not overtake data of
 * earlier messages sent on other QPs of its stream (R-ORD-4 says a
 * receive completion vouches for them): it waits until they are
 * acknowledged, like a fenced WR (IBV_SEND_FENCE) spanning QPs. */
bool roce_fence_blocked(const struct roce_qp *qp, const struct roce_wqe *w)
{
    const struct roce_stream *st = &qp->conn->streams[qp->stream];
    for (uint32_t i = st->s_head; i != w->ord; i++) {
        const struct ord_ent *e = &st->sord[i % st->s_cap];
        if (!e->done && e->qp != qp->idx)
            return true;
    }
    return false;
}

/* ---- error and flush (IBTA ch. 10: QP to Error flushes its WRs) ---- */

static void conn_flush_qp(struct roce_qp *qp, struct roce_wqe *bad,
                          uint8_t status)
{
    while (qp->sq_head != qp->sq_tail) {
        struct roce_wqe *w = roce_wqe_at(qp, qp->sq_head);
        roce_complete_wqe(qp, w, w == bad ? status : MROCE_WC_WR_FLUSH_ERR);
    }
    while (qp->rq_head != qp->rq_tail)
        roce_complete_recv(qp, MROCE_WC_WR_FLUSH_ERR, MROCE_WC_RECV, 0, false,
                           0);
    qp->req_wqe = qp->sq_head;
    qp->rto_at = qp->rnr_at = ROCE_NEVER;
    qp->rd_count = 0;
    qp->cnp_due = false;
    qp->rp.limited = false; /* no more DCQCN timers either */
    qp->rp.alpha_at = qp->rp.rate_at = ROCE_NEVER;
    roce_qp_update_deadline(qp);
}

/* Every QP of the connection goes to Error: `bad` (on `qp`) completes
 * with status, everything else with WR_FLUSH_ERR. A fatal NAK already
 * queued by the responder still goes out. */
void roce_conn_error(struct roce_conn *c, struct roce_qp *qp,
                     struct roce_wqe *bad, uint8_t status)
{
    if (c->state != MROCE_CONN_CONNECTED)
        return;
    c->state = MROCE_CONN_ERROR;
    if (qp && bad)
        conn_flush_qp(qp, bad, status);
    for (uint32_t i = 0; i < c->n_qps; i++)
        conn_flush_qp(&c->qps[i], NULL, 0);
    roce_conn_ready(c);
}

/* Outstanding WRs vanish without completion: give back their CQ room. */
static void conn_drop_all(struct roce_conn *c)
{
    for (uint32_t i = 0; i < c->n_qps; i++) {
        struct roce_qp *qp = &c->qps[i];
        for (uint32_t j = qp->sq_head; j != qp->sq_tail; j++)
            if (roce_wqe_at(qp, j)->mr)
                roce_wqe_at(qp, j)->mr->refs--;
        for (uint32_t j = qp->rq_head; j != qp->rq_tail; j++)
            if (qp->rq[j % c->attr.rq_depth].mr)
                qp->rq[j % c->attr.rq_depth].mr->refs--;
    }
    for (uint32_t s = 0; s < c->attr.n_streams; s++) {
        struct roce_stream *st = &c->streams[s];
        c->scq->pending -= st->s_tail - st->s_head;
        c->rcq->pending -= st->r_tail - st->r_head;
    }
}

void roce_conn_destroy(struct roce_conn *c)
{
    struct roce_dev *dev = c->dev;
    conn_drop_all(c);
    roce_dev_del_qps(dev, c);
    if (c->prev)
        c->prev->next = c->next;
    else
        dev->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->pd->refs--;
    c->scq->users--;
    c->rcq->users--;
    conn_free(c);
}
