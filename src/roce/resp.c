/* Responder (rxe_resp.c's role): PSN check (IBTA ch. 9), opcode
 * sequence check (IBTA ch. 9), execution of SEND/WRITE/READ against the
 * shared MR table, and the ACK/NAK/READ response it owes (IBTA ch. 9). */
#include <string.h>

#include "roce/roce_int.h"

const char *const roce_resp_msg_names[RMSG_NSTATES] = {"NONE", "SEND", "WRITE"};

/* Implied expected PSN of a queued reply: ACK p says p + 1, a NAK says
 * its own PSN. */
static uint32_t ack_epsn(uint8_t syn, uint32_t psn)
{
    return (syn & ROCE_AETH_TYPE_MASK) == ROCE_AETH_ACK ? roce_psn_add(psn, 1)
                                                        : psn;
}

static bool ack_fatal(uint8_t syn)
{
    return (syn & ROCE_AETH_TYPE_MASK) == ROCE_AETH_NAK &&
           (syn & ROCE_AETH_VALUE_MASK) != ROCE_NAK_PSN_SEQ;
}

/* One reply slot: ACKs are cumulative, so the newest state wins; a NAK is
 * only replaced by news of progress past it, a fatal NAK never. */
void roce_resp_queue_ack(struct roce_qp *qp, uint8_t syn, uint32_t psn)
{
    struct resp_ack *a = &qp->ack;
    if (a->pending && !ack_fatal(syn)) {
        if (ack_fatal(a->syndrome))
            return;
        int32_t d =
            roce_psn_diff(ack_epsn(syn, psn), ack_epsn(a->syndrome, a->psn));
        bool is_ack = (syn & ROCE_AETH_TYPE_MASK) == ROCE_AETH_ACK;
        if (d < 0 || (d == 0 && is_ack))
            return;
    }
    *a = (struct resp_ack){.pending = true, .syndrome = syn, .psn = psn};
}

static void resp_ack(struct roce_qp *qp, uint32_t psn)
{
    roce_resp_queue_ack(qp, ROCE_AETH_ACK | ROCE_AETH_CREDITS_INVALID, psn);
}

static void resp_nak(struct roce_qp *qp, uint8_t code)
{
    roce_resp_queue_ack(qp, ROCE_AETH_NAK | code, qp->resp_psn);
}

/* Class C/D errors (IBTA ch. 9): NAK and the QP goes to Error. */
static void resp_fatal(struct roce_qp *qp, uint8_t code)
{
    resp_nak(qp, code);
    qp->cnt.tx_fatal_naks++;
    roce_conn_error(qp->conn, NULL, NULL, 0);
}

static void resp_rnr(struct roce_qp *qp, uint32_t psn)
{
    uint8_t t = qp->conn->attr.min_rnr_timer & ROCE_AETH_VALUE_MASK;
    roce_resp_queue_ack(qp, ROCE_AETH_RNR_NAK | t, psn);
    qp->cnt.tx_rnr_naks++;
    qp->nak_sent = true; /* the packets behind it are dropped silently */
}

static bool resp_has_rqe(const struct roce_qp *qp)
{
    return qp->rq_head != qp->rq_tail;
}

static struct roce_rqe *resp_rqe(struct roce_qp *qp)
{
    return &qp->rq[qp->rq_head % qp->conn->attr.rq_depth];
}

/* IBTA ch. 9: FIRST/ONLY only outside a message, MIDDLE/LAST only
 * inside one of the same kind. */
static bool resp_seq_ok(const struct roce_qp *qp, const struct roce_op_info *oi)
{
    if (qp->msg == RMSG_NONE)
        return oi->pos & ROCE_P_FIRST;
    uint8_t kind = qp->msg == RMSG_SEND ? ROCE_K_SEND : ROCE_K_WRITE;
    return oi->kind == kind && !(oi->pos & ROCE_P_FIRST);
}

/* Payload size rule (IBTA ch. 9): FIRST and MIDDLE packets carry
 * exactly one PMTU, LAST at most one and at least one byte. */
static bool resp_len_ok(const struct roce_qp *qp, const struct roce_op_info *oi,
                        uint32_t len)
{
    uint32_t mtu = qp->conn->mtu;
    if (oi->pos == ROCE_P_FIRST || oi->pos == ROCE_P_MIDDLE)
        return len == mtu;
    if (oi->pos == ROCE_P_LAST)
        return len >= 1 && len <= mtu;
    return len <= mtu;
}

static void resp_done_pkt(struct roce_qp *qp, const struct roce_hdr *h,
                          const struct roce_op_info *oi)
{
    qp->resp_psn = roce_psn_add(qp->resp_psn, 1);
    qp->cnt.rx_data_pkts++;
    if (oi->pos & ROCE_P_LAST) {
        qp->msg = RMSG_NONE;
        qp->resp_msn = (qp->resp_msn + 1) & ROCE_PSN_MASK;
        qp->cnt.msgs_rx++;
    }
    if (h->ackreq)
        resp_ack(qp, h->psn);
}

static void resp_send(struct roce_qp *qp, const struct roce_hdr *h,
                      const struct roce_op_info *oi)
{
    if ((oi->pos & ROCE_P_FIRST) && !resp_has_rqe(qp)) {
        resp_rnr(qp, h->psn); /* no receive WQE: RNR NAK */
        return;
    }
    struct roce_rqe *r = resp_rqe(qp);
    if (oi->pos & ROCE_P_FIRST)
        qp->recv_off = 0;
    if (h->payload_len > r->wr.sge.length - qp->recv_off) {
        roce_complete_recv(qp, MROCE_WC_LOC_LEN_ERR, MROCE_WC_RECV, 0, false,
                           0);
        resp_fatal(qp, ROCE_NAK_INVALID_REQ);
        return;
    }
    if (h->payload_len)
        dev_mem_put(qp->conn->dev->mdev, r->laddr + qp->recv_off, h->payload,
                    h->payload_len);
    qp->recv_off += h->payload_len;
    qp->msg = RMSG_SEND;
    if (oi->pos & ROCE_P_LAST)
        roce_complete_recv(qp, MROCE_WC_SUCCESS, MROCE_WC_RECV, qp->recv_off,
                           (oi->headers & ROCE_H_IMMDT) != 0, h->imm);
    resp_done_pkt(qp, h, oi);
}

/* RETH check once per message, over the whole DMA length (rxe
 * check_rkey): key, PD, access right, bounds. */
static bool resp_write_start(struct roce_qp *qp, const struct roce_hdr *h)
{
    int err = 0;
    struct roce_conn *c = qp->conn;
    qp->wr_dst = NULL;
    if (h->dma_len)
        qp->wr_dst = dev_mr_resolve(c->pd, h->rkey, h->va, h->dma_len,
                                    MROCE_ACCESS_REMOTE_WRITE, &err, NULL);
    if (h->dma_len && !qp->wr_dst) {
        resp_fatal(qp, ROCE_NAK_REMOTE_ACCESS);
        return false;
    }
    qp->wr_left = qp->wr_total = h->dma_len;
    qp->msg = RMSG_WRITE;
    return true;
}

static void resp_write(struct roce_qp *qp, const struct roce_hdr *h,
                       const struct roce_op_info *oi)
{
    bool imm = oi->headers & ROCE_H_IMMDT;
    if (imm && !resp_has_rqe(qp)) {
        resp_rnr(qp, h->psn); /* the immediate needs a receive WQE */
        return;
    }
    if ((oi->pos & ROCE_P_FIRST) && !resp_write_start(qp, h))
        return;
    if (h->payload_len > qp->wr_left ||
        ((oi->pos & ROCE_P_LAST) && h->payload_len != qp->wr_left)) {
        resp_fatal(qp, ROCE_NAK_INVALID_REQ);
        return;
    }
    if (h->payload_len) {
        dev_mem_put(qp->conn->dev->mdev, qp->wr_dst, h->payload,
                    h->payload_len);
        qp->wr_dst += h->payload_len;
    }
    qp->wr_left -= h->payload_len;
    if (imm)
        roce_complete_recv(qp, MROCE_WC_SUCCESS, MROCE_WC_RECV_RDMA_WITH_IMM,
                           qp->wr_total, true, h->imm);
    resp_done_pkt(qp, h, oi);
}

/* Queues a READ response stream starting at the request's PSN. A
 * duplicate request is re-executed the same way (IBTA ch. 9: the
 * responder answers a repeated READ again, from its PSN). */
static bool resp_read_job(struct roce_qp *qp, const struct roce_hdr *h)
{
    struct roce_conn *c = qp->conn;
    int err = 0;
    const uint8_t *src = NULL;
    if (h->dma_len)
        src = dev_mr_resolve(c->pd, h->rkey, h->va, h->dma_len,
                             MROCE_ACCESS_REMOTE_READ, &err, NULL);
    if (h->dma_len && !src) {
        resp_fatal(qp, ROCE_NAK_REMOTE_ACCESS);
        return false;
    }
    struct rd_job *j = &qp->rd[(qp->rd_head + qp->rd_count++) % c->rd_cap];
    j->first_psn = h->psn;
    j->npkts = h->dma_len ? (h->dma_len - 1) / c->mtu + 1 : 1;
    j->sent = 0;
    j->src = src;
    j->len = h->dma_len;
    return true;
}

static void resp_read(struct roce_qp *qp, const struct roce_hdr *h)
{
    /* the requester keeps at most max_rd READs outstanding and duplicates
     * take at most max_rd more slots: a full ring is a broken peer */
    if (qp->rd_count >= qp->conn->rd_cap) {
        resp_fatal(qp, ROCE_NAK_INVALID_REQ);
        return;
    }
    if (!resp_read_job(qp, h))
        return;
    uint32_t n =
        qp->rd[(qp->rd_head + qp->rd_count - 1) % qp->conn->rd_cap].npkts;
    qp->resp_psn = roce_psn_add(qp->resp_psn, n);
    qp->resp_msn = (qp->resp_msn + 1) & ROCE_PSN_MASK;
    qp->cnt.rx_data_pkts++;
    qp->cnt.msgs_rx++;
}

/* Duplicates (PSN before ePSN): SEND and WRITE are acknowledged again
 * (C9-105, rxe duplicate_request), a READ is executed again. */
static void resp_duplicate(struct roce_qp *qp, const struct roce_hdr *h,
                           const struct roce_op_info *oi)
{
    qp->cnt.rx_dup++;
    if (oi->kind != ROCE_K_READ_REQ) {
        resp_ack(qp, roce_psn_add(qp->resp_psn, ROCE_PSN_MASK));
        return;
    }
    uint32_t mtu = qp->conn->mtu;
    uint32_t n = h->dma_len ? (h->dma_len - 1) / mtu + 1 : 1;
    if (roce_psn_diff(roce_psn_add(h->psn, n), qp->resp_psn) > 0 ||
        qp->rd_count >= qp->conn->attr.max_rd)
        return; /* not a request we executed, or no room: let it time out */
    resp_read_job(qp, h);
}

/* PSN out of order: drop; only the first one of a gap gets a NAK
 * sequence error (IBTA ch. 9; rxe sent_psn_nak). */
static void resp_ooo(struct roce_qp *qp)
{
    qp->cnt.rx_ooo++;
    if (qp->nak_sent)
        return;
    qp->nak_sent = true;
    qp->cnt.tx_naks++;
    resp_nak(qp, ROCE_NAK_PSN_SEQ);
}

void roce_resp_rx(struct roce_qp *qp, uint64_t now,
                  const struct mroce_pkt_meta *meta, const struct roce_hdr *h)
{
    (void)now;
    (void)meta;
    if (qp->conn->state != MROCE_CONN_CONNECTED)
        return;
    const struct roce_op_info *oi = roce_op_info(h->opcode);
    int32_t d = roce_psn_diff(h->psn, qp->resp_psn);
    if (d > 0) {
        resp_ooo(qp);
        return;
    }
    if (d < 0) {
        resp_duplicate(qp, h, oi);
        return;
    }
    qp->nak_sent = false;
    if (!resp_seq_ok(qp, oi) ||
        (oi->kind != ROCE_K_READ_REQ && !resp_len_ok(qp, oi, h->payload_len)))
        resp_fatal(qp, ROCE_NAK_INVALID_REQ);
    else if (oi->kind == ROCE_K_SEND)
        resp_send(qp, h, oi);
    else if (oi->kind == ROCE_K_WRITE)
        resp_write(qp, h, oi);
    else
        resp_read(qp, h);
}

/* ---- transmit ---- */

static int resp_tx_cnp(struct roce_qp *qp, uint8_t *buf, size_t cap,
                       struct mroce_pkt_meta *meta)
{
    struct roce_hdr h = {.opcode = ROCE_OP_CNP,
                         .pkey = ROCE_PKEY_DEFAULT,
                         .becn = 1,
                         .dqpn = qp->dqpn};
    qp->cnp_due = false;
    qp->cnt.tx_cnps++;
    roce_qp_meta(qp, meta);
    meta->ecn = MROCE_ECN_NOT_ECT; /* CNPs are not congestion-controlled */
    int hl = roce_write_hdr(&h, 0, buf, cap);
    return roce_qp_finish(qp, meta, buf, (size_t)hl, NULL, 0);
}

static int resp_tx_ack(struct roce_qp *qp, uint8_t *buf, size_t cap,
                       struct mroce_pkt_meta *meta)
{
    struct roce_hdr h = {.opcode = ROCE_OP_ACK,
                         .pkey = ROCE_PKEY_DEFAULT,
                         .dqpn = qp->dqpn,
                         .psn = qp->ack.psn,
                         .syndrome = qp->ack.syndrome,
                         .msn = qp->resp_msn};
    qp->ack.pending = false;
    if ((h.syndrome & ROCE_AETH_TYPE_MASK) == ROCE_AETH_ACK)
        qp->cnt.tx_acks++;
    roce_qp_meta(qp, meta);
    int hl = roce_write_hdr(&h, 0, buf, cap);
    return roce_qp_finish(qp, meta, buf, (size_t)hl, NULL, 0);
}

/* CNPs first; an ACK or NAK only once no READ response is waiting, so it
 * never overtakes responses to earlier requests (responses leave in PSN
 * order, as from rxe's single responder task). */
int roce_resp_tx_ctl(struct roce_qp *qp, uint8_t *buf, size_t cap,
                     struct mroce_pkt_meta *meta)
{
    if (qp->cnp_due)
        return resp_tx_cnp(qp, buf, cap, meta);
    if (qp->ack.pending && !qp->rd_count)
        return resp_tx_ack(qp, buf, cap, meta);
    return 0;
}

static uint8_t resp_read_opcode(const struct rd_job *j)
{
    if (j->npkts == 1)
        return ROCE_OP_READ_RESP_ONLY;
    if (j->sent == 0)
        return ROCE_OP_READ_RESP_FIRST;
    return j->sent + 1 == j->npkts ? ROCE_OP_READ_RESP_LAST
                                   : ROCE_OP_READ_RESP_MIDDLE;
}

int roce_resp_tx_read(struct roce_qp *qp, uint8_t *buf, size_t cap,
                      struct mroce_pkt_meta *meta)
{
    if (!qp->rd_count)
        return 0;
    struct roce_conn *c = qp->conn;
    struct rd_job *j = &qp->rd[qp->rd_head % c->rd_cap];
    uint32_t off = j->sent * c->mtu, left = j->len - off;
    uint32_t plen = left < c->mtu ? left : c->mtu;
    struct roce_hdr h = {.opcode = resp_read_opcode(j),
                         .pkey = ROCE_PKEY_DEFAULT,
                         .dqpn = qp->dqpn,
                         .psn = roce_psn_add(j->first_psn, j->sent),
                         .syndrome = ROCE_AETH_ACK | ROCE_AETH_CREDITS_INVALID,
                         .msn = qp->resp_msn};
    roce_qp_meta(qp, meta);
    int hl = roce_write_hdr(&h, plen, buf, cap);
    int n = roce_qp_finish(qp, meta, buf, (size_t)hl,
                           plen ? j->src + off : NULL, plen);
    qp->cnt.tx_data_pkts++;
    if (++j->sent == j->npkts) {
        qp->rd_head = (qp->rd_head + 1) % c->rd_cap;
        qp->rd_count--;
    }
    return n;
}
