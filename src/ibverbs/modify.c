/* ibv_modify_qp for RC QPs: the IB state machine (RESET, INIT, RTR, RTS,
 * SQD, SQE, ERR) with each transition's required and optional attribute
 * masks checked as rdma-core providers and the kernel check them (IBTA
 * vol. 1, "QP state transition properties"): a missing required or an
 * unexpected attribute is EINVAL, and so is a value the device cannot
 * take. What each transition does to the engine:
 *   INIT -> RTR   connects the MetaRoCE connection (R-SOFT-3);
 *   RTS -> SQD    stops feeding the send queue;
 *   * -> ERR      flushes (nic_comp.c), CLOSE to a connected peer;
 *   * -> RESET    a fresh connection with the same QPN, rings emptied. */
#include <errno.h>
#include <string.h>

#include "ibverbs/sv.h"

#define M(x) IBV_QP_##x

struct mod_rule {
    uint8_t cur, next;
    int req, opt;
};

static const struct mod_rule mod_rules[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT, M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS), 0},
    {IBV_QPS_INIT, IBV_QPS_INIT, 0, M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS)},
    {IBV_QPS_INIT, IBV_QPS_RTR,
     M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) | M(MAX_DEST_RD_ATOMIC) |
         M(MIN_RNR_TIMER),
     M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX)},
    {IBV_QPS_RTR, IBV_QPS_RTS,
     M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) | M(SQ_PSN) | M(MAX_QP_RD_ATOMIC),
     M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) |
         M(PATH_MIG_STATE)},
    {IBV_QPS_RTS, IBV_QPS_RTS, 0,
     M(CUR_STATE) | M(ACCESS_FLAGS) | M(ALT_PATH) | M(PATH_MIG_STATE) |
         M(MIN_RNR_TIMER)},
    {IBV_QPS_RTS, IBV_QPS_SQD, 0, M(EN_SQD_ASYNC_NOTIFY)},
    {IBV_QPS_SQD, IBV_QPS_RTS, 0,
     M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) |
         M(PATH_MIG_STATE)},
    {IBV_QPS_SQD, IBV_QPS_SQD, 0,
     M(PKEY_INDEX) | M(PORT) | M(AV) | M(ALT_PATH) | M(ACCESS_FLAGS) |
         M(MIN_RNR_TIMER) | M(PATH_MIG_STATE) | M(TIMEOUT) | M(RETRY_CNT) |
         M(RNR_RETRY) | M(MAX_QP_RD_ATOMIC) | M(MAX_DEST_RD_ATOMIC)},
    {IBV_QPS_SQE, IBV_QPS_RTS, 0, M(CUR_STATE) | M(ACCESS_FLAGS)},
};

/* Whether cur -> next is a transition, and its masks. Any state may go to
 * RESET or ERR with no attributes. */
static int mod_rule(int cur, int next, int *req, int *opt)
{
    *req = *opt = 0;
    if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
        return 0;
    for (size_t i = 0; i < sizeof(mod_rules) / sizeof(mod_rules[0]); i++)
        if (mod_rules[i].cur == cur && mod_rules[i].next == next) {
            *req = mod_rules[i].req;
            *opt = mod_rules[i].opt;
            return 0;
        }
    return -1;
}

static bool mod_av_ok(const struct ibv_ah_attr *ah)
{
    return (!ah->port_num || ah->port_num == 1) &&
           (!ah->is_global || ah->grh.sgid_index == 0);
}

/* Values the device cannot take (its limits: query.c). */
static int mod_values(const struct ibv_qp_attr *a, int mask)
{
    unsigned acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    if (((mask & M(PKEY_INDEX)) && a->pkey_index != 0) ||
        ((mask & M(PORT)) && a->port_num != 1) ||
        ((mask & M(ACCESS_FLAGS)) && (a->qp_access_flags & ~acc)) ||
        ((mask & M(PATH_MTU)) &&
         (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096)) ||
        ((mask & M(DEST_QPN)) && (a->dest_qp_num > 0xFFFFFF)) ||
        ((mask & M(MAX_DEST_RD_ATOMIC)) && a->max_dest_rd_atomic > SV_MAX_RD) ||
        ((mask & M(MAX_QP_RD_ATOMIC)) && a->max_rd_atomic > SV_MAX_RD) ||
        ((mask & M(MIN_RNR_TIMER)) && a->min_rnr_timer > 31) ||
        ((mask & M(TIMEOUT)) && a->timeout > 31) ||
        ((mask & M(RETRY_CNT)) && a->retry_cnt > 7) ||
        ((mask & M(RNR_RETRY)) && a->rnr_retry > 7) ||
        ((mask & M(AV)) && !mod_av_ok(&a->ah_attr)) ||
        ((mask & M(ALT_PATH)) && a->alt_port_num != 1))
        return EINVAL;
    return 0;
}

static void mod_store(struct sv_qp *q, const struct ibv_qp_attr *a, int mask)
{
    struct ibv_qp_attr *s = &q->attr;
    if (mask & M(ACCESS_FLAGS))
        s->qp_access_flags = a->qp_access_flags;
    if (mask & M(PKEY_INDEX))
        s->pkey_index = a->pkey_index;
    if (mask & M(PORT))
        s->port_num = a->port_num;
    if (mask & M(AV))
        s->ah_attr = a->ah_attr;
    if (mask & M(PATH_MTU))
        s->path_mtu = a->path_mtu;
    if (mask & M(DEST_QPN))
        s->dest_qp_num = a->dest_qp_num;
    if (mask & M(RQ_PSN))
        s->rq_psn = a->rq_psn & 0xFFFFFF;
    if (mask & M(SQ_PSN))
        s->sq_psn = a->sq_psn & 0xFFFFFF;
    if (mask & M(MAX_DEST_RD_ATOMIC))
        s->max_dest_rd_atomic = a->max_dest_rd_atomic;
    if (mask & M(MAX_QP_RD_ATOMIC))
        s->max_rd_atomic = a->max_rd_atomic;
    if (mask & M(MIN_RNR_TIMER))
        s->min_rnr_timer = a->min_rnr_timer;
    if (mask & M(TIMEOUT))
        s->timeout = a->timeout;
    if (mask & M(RETRY_CNT))
        s->retry_cnt = a->retry_cnt;
    if (mask & M(RNR_RETRY))
        s->rnr_retry = a->rnr_retry;
    if (mask & M(EN_SQD_ASYNC_NOTIFY))
        s->en_sqd_async_notify = a->en_sqd_async_notify;
}

/* R-SOFT-3: INIT -> RTR connects the engine connection. */
static int mod_rtr(struct sv_qp *q)
{
    struct mroce_conn_params r;
    if (!q->conn || sv_addr_remote(q, &q->attr.ah_attr, &r))
        return EINVAL;
    uint32_t psn, dsn, msn;
    sv_addr_init_seq(q->ibv.qp_num, r.conn_id, &psn, &dsn, &msn);
    int rc = mroce_conn_set_init_seq(q->conn, psn, dsn, msn);
    if (!rc)
        rc = mroce_conn_connect(q->conn, &r);
    return rc ? sv_errno(rc) : 0;
}

/* * -> RESET: a fresh connection with the same number; everything posted
 * is dropped without completion, as IB's reset does. */
static int mod_reset(struct sv_qp *q)
{
    struct mroce_pd *pd = ((struct sv_pd *)(void *)q->ibv.pd)->pd;
    uint32_t qpn = q->ibv.qp_num;
    if (q->conn)
        mroce_conn_destroy(q->conn);
    q->conn = NULL;
    int err = sv_qp_conn(q, pd, qpn);
    q->gen = ++q->ctx->qp_gen; /* completions of the old one are dropped */
    sv_wq_reset(&q->sq);
    sv_wq_reset(&q->rq);
    q->sq_failed = q->rq_failed = q->errored = q->async_sent = false;
    struct ibv_qp_attr keep = {.port_num = 1, .path_mtu = IBV_MTU_4096};
    q->attr = keep;
    return err;
}

static int mod_apply(struct sv_qp *q, int cur, int next)
{
    if (next == IBV_QPS_RESET)
        return mod_reset(q);
    if (next == IBV_QPS_ERR) {
        sv_nic_qp_error(q, false);
        return 0;
    }
    if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR)
        return mod_rtr(q);
    if (next == IBV_QPS_SQD)
        q->sqd_notify = q->attr.en_sqd_async_notify;
    return 0;
}

static int mod_check(struct sv_qp *q, const struct ibv_qp_attr *a, int mask,
                     int *next)
{
    int cur = atomic_load(&q->state), req, opt;
    if ((mask & M(CUR_STATE)) && a->cur_qp_state != (enum ibv_qp_state)cur)
        return EINVAL;
    *next = mask & M(STATE) ? (int)a->qp_state : cur;
    if (*next < IBV_QPS_RESET || *next > IBV_QPS_ERR ||
        mod_rule(cur, *next, &req, &opt))
        return EINVAL;
    int given = mask & ~(M(STATE) | M(CUR_STATE));
    if ((given & req) != req || (given & ~(req | opt)))
        return EINVAL;
    return mod_values(a, mask);
}

int ibv_modify_qp_1_1(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
    struct sv_qp *q = sv_qp_of(qp);
    struct sv_ctx *c = q->ctx;
    int next;
    sv_ctl_lock(c);
    int cur = atomic_load(&q->state);
    int err = mod_check(q, attr, mask, &next);
    if (!err) {
        struct ibv_qp_attr saved = q->attr;
        mod_store(q, attr, mask);
        err = mod_apply(q, cur, next);
        if (err)
            q->attr = saved;
        else
            sv_qp_set_state(q, (enum ibv_qp_state)next);
    }
    sv_ctl_unlock(c);
    if (!err)
        sv_nic_doorbell(c); /* sends may be waiting for RTS */
    return err;
}
SV_1_1(ibv_modify_qp);
