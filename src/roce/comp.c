/* Completer (rxe_comp.c's role): consumes ACKs, NAKs and READ responses in
 * PSN order, retires WQEs, and runs the local ACK timeout and the RNR wait
 * (IBTA ch. 9). */
#include <string.h>

#include "roce/roce_int.h"

bool roce_comp_outstanding(const struct roce_qp *qp)
{
    return qp->sq_head != qp->sq_tail &&
           roce_psn_diff(qp->psn_hi, qp->comp_psn) > 0;
}

/* Forward progress resets both retry counters (IBTA ch. 9; rxe
 * reset_retry_counters) and restarts the local ACK timer. */
static void comp_progress(struct roce_qp *qp, uint64_t now)
{
    struct roce_conn *c = qp->conn;
    qp->retry_left = c->attr.retry_cnt;
    qp->rnr_left = c->attr.rnr_retry;
    qp->in_retry = false;
    qp->rto_at = ROCE_NEVER;
    if (roce_comp_outstanding(qp) && c->timeout_ns) {
        qp->rto_at = now + c->timeout_ns;
        roce_qp_arm(qp, qp->rto_at);
    }
}

/* Go-back-N from the oldest unacknowledged PSN (rxe req_retry). */
static void comp_retry(struct roce_qp *qp, uint64_t now)
{
    qp->in_retry = true;
    qp->cnt.retries++;
    roce_req_rewind(qp, qp->comp_psn);
    if (qp->conn->timeout_ns) {
        qp->rto_at = now + qp->conn->timeout_ns;
        roce_qp_arm(qp, qp->rto_at);
    }
}

/* A retry costs one of retry_cnt; none left: RETRY_EXC_ERR (IBTA
 * ch. 9). Unlike rxe, 7 means 7 retries, as the spec and hardware
 * say (rxe treats it as infinite). */
static void comp_error_retry(struct roce_qp *qp, uint64_t now)
{
    if (!qp->retry_left) {
        roce_conn_error(qp->conn, qp, roce_wqe_at(qp, qp->sq_head),
                        MROCE_WC_RETRY_EXC_ERR);
        return;
    }
    qp->retry_left--;
    comp_retry(qp, now);
}

/* If the requester is behind what was just acknowledged (a late ACK
 * during go-back-N), it skips ahead. */
static void comp_catch_up(struct roce_qp *qp)
{
    if (roce_psn_diff(qp->req_psn, qp->comp_psn) < 0)
        roce_req_rewind(qp, qp->comp_psn);
}

/* Retires WQEs wholly covered by an acknowledgement of PSNs up to psn.
 * Returns false when a READ was passed over: its responses were lost
 * (an implicit NAK, rxe check_psn), and the caller retries. */
static bool comp_ack_upto(struct roce_qp *qp, uint32_t psn)
{
    while (qp->sq_head != qp->sq_tail) {
        struct roce_wqe *w = roce_wqe_at(qp, qp->sq_head);
        if (w->state == WQE_POSTED || roce_psn_diff(psn, w->first_psn) < 0)
            break;
        if (w->op == RWR_READ)
            return roce_psn_diff(psn, w->last_psn) <= 0;
        if (roce_psn_diff(psn, w->last_psn) < 0) {
            if (roce_psn_diff(psn, qp->comp_psn) >= 0)
                qp->comp_psn = roce_psn_add(psn, 1);
            break;
        }
        qp->comp_psn = roce_psn_add(w->last_psn, 1);
        roce_complete_wqe(qp, w, MROCE_WC_SUCCESS);
    }
    return true;
}

/* An acknowledgement is valid only for PSNs that were sent. */
static bool comp_psn_valid(const struct roce_qp *qp, uint32_t psn)
{
    return roce_psn_diff(psn, qp->psn_hi) < 0 &&
           roce_psn_diff(psn, qp->comp_psn) >= -1;
}

static uint8_t comp_nak_status(uint8_t code)
{
    switch (code) {
    case ROCE_NAK_REMOTE_ACCESS:
        return MROCE_WC_REM_ACCESS_ERR;
    case ROCE_NAK_REMOTE_OP:
        return MROCE_WC_REM_OP_ERR;
    default:
        return MROCE_WC_REM_INV_REQ_ERR;
    }
}

/* RNR NAK: wait the timer it carries, then resend from its PSN; rnr_retry
 * 7 is infinite (IBTA ch. 9). */
static void comp_rnr(struct roce_qp *qp, uint64_t now, uint8_t code)
{
    qp->cnt.rx_rnr_naks++;
    if (!qp->rnr_left) {
        roce_conn_error(qp->conn, qp, roce_wqe_at(qp, qp->sq_head),
                        MROCE_WC_RNR_RETRY_EXC_ERR);
        return;
    }
    if (qp->rnr_left != 7)
        qp->rnr_left--;
    qp->rto_at = ROCE_NEVER;
    qp->rnr_at = now + roce_rnr_timer_ns(code);
    roce_req_rewind(qp, qp->comp_psn);
    roce_qp_arm(qp, qp->rnr_at);
}

static void comp_nak(struct roce_qp *qp, uint64_t now, const struct roce_hdr *h)
{
    uint8_t type = h->syndrome & ROCE_AETH_TYPE_MASK;
    uint8_t val = h->syndrome & ROCE_AETH_VALUE_MASK;
    if (type == ROCE_AETH_RNR_NAK) {
        comp_rnr(qp, now, val);
    } else if (val == ROCE_NAK_PSN_SEQ) {
        qp->cnt.rx_naks++;
        /* one go-back-N pass per NAK: a NAK from before the current pass
         * (no progress since) is stale (rxe started_retry) */
        if (!qp->in_retry && qp->rnr_at == ROCE_NEVER)
            comp_error_retry(qp, now);
    } else {
        qp->cnt.rx_fatal_naks++;
        roce_conn_error(qp->conn, qp, roce_wqe_at(qp, qp->sq_head),
                        comp_nak_status(val));
    }
}

static void comp_ack(struct roce_qp *qp, uint64_t now, const struct roce_hdr *h)
{
    bool nak = (h->syndrome & ROCE_AETH_TYPE_MASK) != ROCE_AETH_ACK;
    /* a NAK for PSN e acknowledges everything before e (IBTA ch. 9) */
    uint32_t upto = nak ? roce_psn_add(h->psn, ROCE_PSN_MASK) : h->psn;
    if (!comp_psn_valid(qp, upto) || qp->sq_head == qp->sq_tail) {
        qp->cnt.drop_bad_ack++;
        return;
    }
    uint32_t before = qp->comp_psn;
    bool ok = comp_ack_upto(qp, upto);
    if (roce_psn_diff(qp->comp_psn, before) > 0)
        comp_progress(qp, now);
    comp_catch_up(qp);
    if (!ok) {
        if (!qp->in_retry)
            comp_error_retry(qp, now);
    } else if (nak) {
        comp_nak(qp, now, h);
    }
}

static void comp_read_place(struct roce_qp *qp, uint64_t now,
                            struct roce_wqe *w, const struct roce_hdr *h)
{
    uint32_t mtu = qp->conn->mtu;
    uint32_t off = (uint32_t)roce_psn_diff(h->psn, w->first_psn) * mtu;
    uint32_t left = w->wr.sge.length - off;
    uint32_t want = left < mtu ? left : mtu;
    if (h->payload_len != want) {
        qp->cnt.drop_bad_ack++;
        return;
    }
    if (want)
        dev_mem_put(qp->conn->dev->mdev, w->laddr + off, h->payload, want);
    qp->cnt.rx_data_pkts++;
    qp->comp_psn = roce_psn_add(h->psn, 1);
    if (h->psn == w->last_psn)
        roce_complete_wqe(qp, w, MROCE_WC_SUCCESS);
    comp_progress(qp, now);
    comp_catch_up(qp);
}

/* READ response at the head READ, in PSN order; a gap means responses
 * were lost: go back (IBTA ch. 9; rxe COMPST_ERROR_RETRY). Responses
 * also acknowledge the requests before their READ. */
static void comp_read_resp(struct roce_qp *qp, uint64_t now,
                           const struct roce_hdr *h)
{
    uint32_t before = qp->comp_psn;
    if (!comp_psn_valid(qp, h->psn) || qp->sq_head == qp->sq_tail) {
        qp->cnt.drop_bad_ack++;
        return;
    }
    bool ok = comp_ack_upto(qp, roce_psn_add(h->psn, ROCE_PSN_MASK));
    if (roce_psn_diff(qp->comp_psn, before) > 0)
        comp_progress(qp, now);
    comp_catch_up(qp);
    if (!ok || qp->sq_head == qp->sq_tail) {
        if (!ok && !qp->in_retry)
            comp_error_retry(qp, now);
        return;
    }
    struct roce_wqe *w = roce_wqe_at(qp, qp->sq_head);
    int32_t d = roce_psn_diff(h->psn, qp->comp_psn);
    if (w->op != RWR_READ || w->state == WQE_POSTED ||
        roce_psn_diff(h->psn, w->first_psn) < 0 ||
        roce_psn_diff(h->psn, w->last_psn) > 0 || d < 0) {
        qp->cnt.rx_dup++;
        return;
    }
    if (d > 0) {
        if (!qp->in_retry)
            comp_error_retry(qp, now);
        return;
    }
    comp_read_place(qp, now, w, h);
}

void roce_comp_rx(struct roce_qp *qp, uint64_t now, const struct roce_hdr *h)
{
    if (qp->conn->state != MROCE_CONN_CONNECTED)
        return;
    if (h->opcode == ROCE_OP_ACK) {
        qp->cnt.rx_acks++;
        comp_ack(qp, now, h);
    } else {
        comp_read_resp(qp, now, h);
    }
}

/* The local ACK timeout fired with packets outstanding: go back to the
 * oldest unacknowledged PSN; the RNR wait ended: resend from it. */
void roce_comp_timers(struct roce_qp *qp, uint64_t now)
{
    if (qp->rnr_at <= now) {
        qp->rnr_at = ROCE_NEVER;
        roce_req_rewind(qp, qp->comp_psn);
    }
    if (qp->rto_at > now)
        return;
    qp->rto_at = ROCE_NEVER;
    if (!roce_comp_outstanding(qp))
        return;
    qp->cnt.timeouts++;
    comp_error_retry(qp, now);
}
