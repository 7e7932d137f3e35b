/* Requester (rxe_req.c's role): turns send WQEs into packets in PSN order,
 * within the PSN window and the READ initiator depth, and restarts from a
 * given PSN for go-back-N (IBTA ch. 9). */
#include "roce/roce_int.h"

/* Opcode of packet i of n of a message (IBTA ch. 9): FIRST, MIDDLE, LAST
 * or ONLY, with immediate on the last one of the _IMM kinds. */
static uint8_t req_opcode(uint8_t op, uint32_t i, uint32_t n)
{
    static const uint8_t tab[4][4] = {
        /* FIRST, MIDDLE, LAST, ONLY */
        [RWR_WRITE] = {0x06, 0x07, 0x08, 0x0A},
        [RWR_WRITE_IMM] = {0x06, 0x07, 0x09, 0x0B},
        [RWR_SEND] = {0x00, 0x01, 0x02, 0x04},
        [RWR_SEND_IMM] = {0x00, 0x01, 0x03, 0x05},
    };
    if (op == RWR_READ)
        return ROCE_OP_READ_REQ;
    int pos = n == 1 ? 3 : i == 0 ? 0 : i + 1 == n ? 2 : 1;
    return tab[op][pos];
}

/* Go-back-N: the next packet sent is `psn`, of the WQE that holds it
 * (rxe req_retry). A READ is asked again for its remaining bytes. */
void roce_req_rewind(struct roce_qp *qp, uint32_t psn)
{
    uint32_t w = qp->sq_head;
    qp->req_psn = psn;
    qp->req_pkt = 0;
    qp->noack_pkts = 0;
    for (; w != qp->sq_tail; w++) {
        struct roce_wqe *x = roce_wqe_at(qp, w);
        if (x->state == WQE_POSTED)
            break;
        if (roce_psn_diff(x->last_psn, psn) >= 0) {
            int32_t d = roce_psn_diff(psn, x->first_psn);
            qp->req_pkt = d > 0 ? (uint32_t)d : 0;
            break;
        }
    }
    qp->req_wqe = w;
    for (uint32_t i = w; i != qp->sq_tail; i++) {
        struct roce_wqe *x = roce_wqe_at(qp, i);
        if (x->state == WQE_PENDING)
            x->state = WQE_SENDING;
    }
}

static bool req_window_open(const struct roce_qp *qp)
{
    int32_t out = roce_psn_diff(qp->req_psn, qp->comp_psn);
    return out < (int32_t)qp->conn->attr.max_unacked_psns;
}

/* The WQE to send from now, or NULL when none may go yet. */
static struct roce_wqe *req_next(const struct roce_qp *qp)
{
    if (qp->req_wqe == qp->sq_tail || qp->rnr_at != ROCE_NEVER ||
        !req_window_open(qp))
        return NULL;
    struct roce_wqe *w = roce_wqe_at(qp, qp->req_wqe);
    if (w->op == RWR_READ && !w->rd_counted &&
        qp->rd_out >= qp->conn->peer_max_rd)
        return NULL;
    if (w->fence && w->state == WQE_POSTED && roce_fence_blocked(qp, w))
        return NULL;
    return w;
}

bool roce_req_has_work(const struct roce_qp *qp)
{
    return req_next(qp) != NULL;
}

static void req_start(struct roce_qp *qp, struct roce_wqe *w)
{
    if (w->state != WQE_POSTED)
        return;
    w->state = WQE_SENDING;
    w->first_psn = qp->req_psn;
    w->last_psn = roce_psn_add(qp->req_psn, w->npkts - 1);
    if (w->op == RWR_READ) {
        w->rd_counted = true;
        qp->rd_out++;
    }
}

/* rxe sets the A bit on the last packet of a message and after
 * RXE_MAX_PKT_PER_ACK packets without one; the responder acknowledges
 * exactly the packets that carry it. With a PSN window below twice that
 * (rxe's is 128 for 64), the A bit also comes every half window, or the
 * sender would stall until its timeout. */
static bool req_ackreq(struct roce_qp *qp, bool last)
{
    const struct roce_conn_attr *a = &qp->conn->attr;
    uint32_t every = a->ack_req_every;
    if (every > a->max_unacked_psns / 2)
        every = a->max_unacked_psns / 2 ? a->max_unacked_psns / 2 : 1;
    if (last || ++qp->noack_pkts >= every) {
        qp->noack_pkts = 0;
        return true;
    }
    return false;
}

/* Advances the send state past packet(s) of w; a READ request covers all
 * the PSNs of its responses (IBTA ch. 9). */
static void req_advance(struct roce_qp *qp, struct roce_wqe *w, uint32_t n)
{
    qp->req_psn = roce_psn_add(qp->req_psn, n);
    qp->req_pkt += n;
    if (qp->req_pkt == w->npkts) {
        w->state = WQE_PENDING;
        qp->req_wqe++;
        qp->req_pkt = 0;
    }
}

static void req_fill(const struct roce_qp *qp, const struct roce_wqe *w,
                     uint32_t off, struct roce_hdr *h)
{
    uint32_t len = w->wr.sge.length;
    h->va = w->wr.remote_addr + off;
    h->rkey = w->wr.rkey;
    h->dma_len = len - off;
    h->imm = w->wr.imm;
    h->pkey = ROCE_PKEY_DEFAULT;
    h->dqpn = qp->dqpn;
    h->psn = qp->req_psn;
}

int roce_req_tx(struct roce_qp *qp, uint64_t now, uint8_t *buf, size_t cap,
                struct mroce_pkt_meta *meta)
{
    struct roce_wqe *w = req_next(qp);
    if (!w)
        return 0;
    req_start(qp, w);
    uint32_t mtu = qp->conn->mtu, off = qp->req_pkt * mtu;
    uint32_t plen = 0, npsn = 1;
    struct roce_hdr h = {.opcode = req_opcode(w->op, qp->req_pkt, w->npkts)};
    req_fill(qp, w, off, &h);
    if (w->op == RWR_READ) {
        npsn = w->npkts - qp->req_pkt;
        h.ackreq = 1;
    } else {
        uint32_t left = w->wr.sge.length - off;
        plen = left < mtu ? left : mtu;
        h.ackreq = req_ackreq(qp, qp->req_pkt + 1 == w->npkts);
    }
    roce_qp_meta(qp, meta);
    int hl = roce_write_hdr(&h, plen, buf, cap);
    const uint8_t *src = plen ? w->laddr + off : NULL;
    int n = roce_qp_finish(qp, meta, buf, (size_t)hl, src, plen);
    if (roce_psn_diff(h.psn, qp->psn_hi) < 0)
        qp->cnt.retx_pkts++;
    else
        qp->psn_hi = roce_psn_add(h.psn, npsn);
    qp->cnt.tx_data_pkts++;
    req_advance(qp, w, npsn);
    /* rxe: the retransmit timer starts when a packet goes out and none is
     * pending; ACKs that make progress restart it (comp.c). */
    if (qp->rto_at == ROCE_NEVER && qp->conn->timeout_ns) {
        qp->rto_at = now + qp->conn->timeout_ns;
        roce_qp_arm(qp, qp->rto_at);
    }
    return n;
}
