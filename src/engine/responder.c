/* Responder: validates every data packet, places it directly in memory,
 * completes inbound messages in stream order and generates ACKs and
 * NACKs (R-RX-*, R-MSG-*, R-ORD-*, R-ACK-*). */
#include <string.h>

#include "engine/eng.h"
#include "engine/fault.h"
#include "wire/ackm.h"
#include "wire/aead.h"

/* ---- NACK queue (R-NACK-1) ---- */

static void resp_nak(struct mroce_conn *c, const struct mroce_hdr *h,
                     uint8_t code, uint32_t info)
{
    if (c->nak_count == sizeof(c->naks) / sizeof(c->naks[0]))
        return; /* the sender's timers recover a NACK we could not queue */
    struct nak_entry *e = &c->naks[(c->nak_head + c->nak_count++) % 16];
    *e = (struct nak_entry){.path = h->path,
                            .stream = h->stream,
                            .code = code,
                            .psn =
                                MROCE_FAULT(c->ctx, NACK_PSN_ZERO) ? 0 : h->psn,
                            .dsn = h->dsn,
                            .msn = h->msn,
                            .info = info};
    eng_sched_ack(c);
}

/* ---- ACK scheduling (R-ACK-1) ---- */

static void resp_ack_now(struct mroce_conn *c, uint16_t p)
{
    if (c->ack_pending[p] == ENG_ACK_QUEUED)
        return;
    c->ack_pending[p] = ENG_ACK_QUEUED; /* a record no more */
    eng_sched_ack(c);
    c->ack_queue[(c->ack_q_head + c->ack_q_count++) % c->n_paths] = p;
}

/* R-ACKM-4: the next ACK goes at `due` at the latest (the oldest
 * record's bound). */
static void resp_rec_arm(struct mroce_conn *c, uint64_t due)
{
    if (due < c->ack_at) {
        c->ack_at = due;
        eng_conn_arm(c, due);
    }
}

/* R-ACKM-4: the ACK that R-ACK-1 case 2 alone asks for waits, as a
 * record, for the connection's next ACK, at most half our ack_delay
 * (the peer allows for ack_delay); as many records as an ACKM carries
 * make that ACK go at once. */
static void resp_ack_record(struct mroce_conn *c, uint64_t now, uint16_t p)
{
    uint64_t due = now + c->attr.ack_delay_ns / 2;
    if (c->ack_pending[p])
        return;
    c->ack_pending[p] = ENG_ACK_RECORD;
    c->prx[p].rec_held = 1;
    c->rec_queue[c->rec_count++] = p;
    if (c->rec_count >= MROCE_ACKM_MAX_RECS + 1) {
        c->rec_count--; /* the newest becomes the ACKM's own path */
        resp_ack_now(c, p);
        return;
    }
    if (!MROCE_FAULT(c->ctx, ACKM_REC_UNBOUNDED))
        resp_rec_arm(c, due);
}

/* R-ACK-1 case 3: in-order data that dsn_cum covers is acknowledged by
 * whichever ACK of the connection goes next (R-ACK-100): one for every
 * ack_every such packets, else once they have waited the hold time. */
static void resp_ack_coalesce(struct mroce_conn *c, uint64_t now, uint16_t p)
{
    c->ack_path = p; /* the latest: its ACK gives a fresh RTT sample */
    if (++c->ack_count >= c->attr.ack_every &&
        !MROCE_FAULT(c->ctx, ACK_EVERY_OFF)) {
        resp_ack_now(c, p);
        return;
    }
    /* the hold the sender expects: from the hint it last heard from us */
    if (c->ack_at == ENG_NEVER && !MROCE_FAULT(c->ctx, ACK_DELAY_OFF))
        eng_conn_arm(c, c->ack_at = now + eng_ack_hold(c, c->ack_mbps,
                                                       c->attr.ack_every,
                                                       c->attr.ack_delay_ns));
}

/* What every packet recorded on its path counts (R-SACK-7) and where it
 * arrived (R-ACK-3); true for an ACKREQ or RETX flag or a CE mark, which
 * call for an ACK at once (R-ACK-1 case 1). */
static inline __attribute__((always_inline)) bool
resp_count(struct mroce_conn *c, struct path_rx *pr,
           const struct mroce_pkt_meta *meta, const struct mroce_hdr *h)
{
    pr->rx_count += !(MROCE_FAULT(c->ctx, RX_COUNT_NO_PROBE) &&
                      h->opcode == MROCE_OP_PROBE);
    pr->plane = meta->plane < c->ctx->dev.n_planes ? meta->plane : 0;
    bool ce = meta->ecn == MROCE_ECN_CE && !MROCE_FAULT(c->ctx, CE_NOT_COUNTED);
    if (ce) {
        pr->ce_count++;
        c->cnt.rx_ecn_ce++;
    }
    bool ackreq = (h->flags & (MROCE_HF_ACKREQ | MROCE_HF_RETX)) &&
                  !MROCE_FAULT(c->ctx, ACK_IGNORE_ACKREQ);
    return ackreq || ce;
}

/* Records the packet on its path and counts it (R-SACK-5, R-SACK-7);
 * true when that alone calls for an ACK of its path at once (R-ACK-1
 * case 1: ACKREQ or RETX, a CE mark, not IN_ORDER). Inlined into its
 * callers, resp_data's for every data packet (GCC does not for four
 * callers: the call cost 15 instructions a packet). The path's next PSN,
 * nearly every packet, is neither a duplicate nor a gap nor stale, and
 * is the path's highest: its own branch needs no flags. */
static inline __attribute__((always_inline)) bool
resp_record(struct mroce_conn *c, uint64_t now,
            const struct mroce_pkt_meta *meta, const struct mroce_hdr *h)
{
    struct path_rx *pr = &c->prx[h->path];
    if (h->psn - pr->high == 1) {
        eng_path_rx_next(pr, h->psn);
        pr->echo_ts = h->ts;
        pr->high_at = now;
        return resp_count(c, pr, meta, h);
    }
    bool dup = false, gap = false, stale = false;
    eng_path_rx_record_any(pr, h->psn, &dup, &gap, &stale);
    if (MROCE_FAULT(c->ctx, SACK_LATE_BIT) && gap && pr->high != h->psn &&
        pr->high - h->psn < MROCE_SACK_BITS) /* the late bit cleared */
        pr->bits[(pr->high - h->psn) >> 6] &=
            ~((uint64_t)1 << (63 - ((pr->high - h->psn) & 63)));
    bool now_ack = resp_count(c, pr, meta, h);
    if (!dup && !stale &&
        (pr->high == h->psn || MROCE_FAULT(c->ctx, ECHO_TS_LATEST))) {
        pr->echo_ts = h->ts;
        pr->high_at = now;
    }
    return now_ack || dup ||
           ((gap || stale) && !MROCE_FAULT(c->ctx, ACK_GAP_LATE));
}

/* ---- DSN dedup window (R-DSN-2) ---- */

static bool resp_dsn_test(const struct mroce_conn *c, uint32_t dsn)
{
    uint32_t i = dsn & (c->dsn_window - 1);
    return (c->rcv_bits[i >> 6] >> (i & 63)) & 1;
}

/* dsn_cum moves past the run of marked DSNs from it, a word of the map at
 * a time, and unmarks them. A run stops at the end of a word and at the
 * end of the window (bits beyond it are never set): the next turn takes
 * it on. */
static void resp_dsn_advance(struct mroce_conn *c)
{
    for (;;) {
        uint32_t i = c->rcv_cum & (c->dsn_window - 1);
        uint64_t *w = &c->rcv_bits[i >> 6];
        uint64_t clear = ~(*w >> (i & 63)); /* 0 where marked */
        if (clear & 1)
            return;
        unsigned n = clear ? (unsigned)__builtin_ctzll(clear) : 64;
        *w &= n == 64 ? 0 : ~((((uint64_t)1 << n) - 1) << (i & 63));
        c->rcv_cum += n;
    }
}

/* A DSN accepted: marked in the map, unless it is dsn_cum's own (the
 * map holds only DSNs above dsn_cum, whose own bit is clear between
 * calls), which moves dsn_cum past it and the run marked after it. */
static void resp_dsn_mark(struct mroce_conn *c, uint32_t dsn)
{
    uint32_t mask = c->dsn_window - 1, i = dsn & mask;
    if (i != (c->rcv_cum & mask)) {
        c->rcv_bits[i >> 6] |= (uint64_t)1 << (i & 63);
        return;
    }
    c->rcv_cum++;
    resp_dsn_advance(c);
}

/* ---- inbound message tracking (R-MSG-3, R-MSG-14) ---- */

/* What the checks decide for a data packet. ACCESS and INVALID are fatal
 * (R-NACK-6): the packet is refused and both sides go to ERROR. */
enum resp_verdict { RV_OK, RV_DUP, RV_RNR, RV_DROP, RV_ACCESS, RV_INVALID };

static int resp_invalid(struct mroce_conn *c)
{
    c->cnt.drop_bad_msg++;
    return RV_INVALID;
}

static bool resp_same_msg(const struct in_msg *m, const struct mroce_hdr *h)
{
    return m->op == h->opcode && m->len == h->msg_len && m->ssn == h->ssn &&
           m->va == h->va && m->rkey == h->rkey && m->imm == h->imm;
}

static bool resp_chunk_ok(const struct mroce_conn *c,
                          const struct mroce_hdr *h);

/* R-MSG-14, R-VAL-3: the MSN must lie in the stream's window; a new DSN
 * for a message completed within the last window is a protocol
 * violation; anything further away names no message (a blind guess) and
 * is dropped like an MSN beyond the window. Then the packet's place in
 * its message (R-MSG-1). */
static struct in_msg *resp_in_msg(struct mroce_conn *c, struct stream *s,
                                  const struct mroce_hdr *h, int *v)
{
    uint32_t window = c->attr.sq_depth, ahead = h->msn - s->in_base;
    if (ahead >= window && -ahead <= window &&
        !MROCE_FAULT(c->ctx, OLD_MSN_DROPPED)) {
        *v = resp_invalid(c);
        return NULL;
    }
    if (ahead >= window && !MROCE_FAULT(c->ctx, MSN_WINDOW_IGNORED)) {
        c->cnt.drop_msn_window++;
        *v = RV_DROP;
        return NULL;
    }
    if (!resp_chunk_ok(c, h)) {
        *v = resp_invalid(c);
        return NULL;
    }
    struct in_msg *m = eng_in(c, s, h->msn);
    if (!m->used) {
        *m = (struct in_msg){.used = true,
                             .op = h->opcode,
                             .msn = h->msn,
                             .len = h->msg_len,
                             .imm = h->imm,
                             .ssn = h->ssn,
                             .va = h->va,
                             .rkey = h->rkey};
        m->dsn = h->dsn;
        m->npkts =
            h->opcode == MROCE_OP_READ_REQ ? 1 : eng_npkts(h->msg_len, c->mtu);
    } else if (!resp_same_msg(m, h) &&
               !MROCE_FAULT(c->ctx, MSG_FIELDS_UNCHECKED)) {
        *v = resp_invalid(c); /* R-MSG-3: fields constant per message */
        return NULL;
    }
    *v = RV_OK;
    return m;
}

/* R-MSG-1: packet i of a message carries bytes [i*mtu, min(len,(i+1)*mtu))
 * so byte counts are exact and no two packets overlap. */
static bool resp_chunk_ok(const struct mroce_conn *c, const struct mroce_hdr *h)
{
    if (MROCE_FAULT(c->ctx, CHUNK_UNCHECKED))
        return true;
    if (h->opcode == MROCE_OP_READ_REQ)
        return h->offset == 0 && h->payload_len == 0;
    if (h->msg_len == 0)
        return h->offset == 0 && h->payload_len == 0;
    if (h->offset % c->mtu || h->offset >= h->msg_len)
        return false;
    uint32_t left = h->msg_len - h->offset;
    return h->payload_len == (left < c->mtu ? left : c->mtu);
}

/* mroce_ctx_attr.no_icrc: without an ICRC, a data packet cut short on
 * the way (a switch that trims, NDP-style) shows only as a payload
 * shorter than its place in the message: dropped like a packet whose
 * ICRC fails, not taken for a protocol violation. */
bool eng_resp_cut(const struct mroce_conn *c, const struct mroce_hdr *h)
{
    const struct mroce_op_info *oi = mroce_wire_op_info(h->opcode);
    if (!(oi->headers & MROCE_H_DXH) || h->opcode == MROCE_OP_READ_REQ)
        return false;
    uint32_t left = h->offset < h->msg_len ? h->msg_len - h->offset : 0;
    return h->payload_len < (left < c->mtu ? left : c->mtu);
}

static int resp_access_verdict(struct mroce_conn *c, int err)
{
    if (err == MROCE_ENOENT)
        c->cnt.drop_bad_key++;
    else if (err == MROCE_EACCES)
        c->cnt.drop_bad_access++;
    else
        c->cnt.drop_bad_bounds++;
    return RV_ACCESS;
}

static void resp_copy(struct mroce_conn *c, uint8_t *dst,
                      const struct mroce_hdr *h)
{
    if (!h->payload_len)
        return;
    struct mroce_dev *d = &c->ctx->dev;
    if (c->ctx->fault & MROCE_FAULT_PLACE_FLIP) { /* the first byte flipped */
        uint8_t b0 = h->payload[0] ^ 1;
        dev_mem_put(d, dst, &b0, 1);
        dev_mem_put(d, dst + 1, h->payload + 1, h->payload_len - 1u);
        c->ctx->fault &= ~MROCE_FAULT_PLACE_FLIP;
        return;
    }
    dev_mem_put(d, dst, h->payload, h->payload_len);
}

/* R-SEC-4: resolve the target before a byte is written; R-MSG-2: a
 * zero-length message touches no memory but its key and address are
 * checked all the same (va inside the region, its end included).
 * Inlined into resp_place, for every WRITE packet (the call and its
 * saved registers cost 8 instructions a packet). */
static inline __attribute__((always_inline)) int
resp_place_write(struct mroce_conn *c, const struct mroce_hdr *h)
{
    int err;
    if (MROCE_FAULT(c->ctx, ZERO_LEN_UNCHECKED) && !h->msg_len)
        return RV_OK;
    if (h->va > UINT64_MAX - h->offset)
        return resp_access_verdict(c, MROCE_ERANGE);
    unsigned right = MROCE_FAULT(c->ctx, WRITE_RIGHT_UNCHECKED)
                         ? 0
                         : MROCE_ACCESS_REMOTE_WRITE;
    uint8_t *dst = dev_mr_resolve(c->pd, h->rkey, h->va + h->offset,
                                  h->payload_len, right, &err, NULL);
    if (!dst && err == MROCE_ERANGE && MROCE_FAULT(c->ctx, BOUNDS_ACKED))
        return RV_OK;
    if (!dst)
        return resp_access_verdict(c, err);
    resp_copy(c, dst, h);
    return RV_OK;
}

/* R-MSG-6, R-MSG-8: the SSN names the receive; RNR if it is not posted. */
static int resp_recv(struct mroce_conn *c, struct stream *s,
                     const struct mroce_hdr *h, struct mroce_recv_wr **rwr)
{
    if (h->ssn - s->rq_head >= s->rq_tail - s->rq_head)
        return RV_RNR;
    *rwr = &s->rq[eng_rq(c, h->ssn)];
    return RV_OK;
}

static int resp_place_send(struct mroce_conn *c, struct stream *s,
                           const struct mroce_hdr *h)
{
    struct mroce_recv_wr *r;
    int v = resp_recv(c, s, h, &r);
    if (v != RV_OK)
        return v;
    if (h->msg_len > r->sge.length)
        return MROCE_FAULT(c->ctx, RECV_SMALL_RNR) ? RV_RNR : resp_invalid(c);
    resp_copy(c, (uint8_t *)(uintptr_t)r->sge.addr + h->offset, h);
    return RV_OK;
}

/* R-MSG-9: a READ_REQ is checked on arrival, a zero-length one too
 * (R-MSG-2). */
static int resp_check_read(struct mroce_conn *c, const struct mroce_hdr *h)
{
    int err;
    if (MROCE_FAULT(c->ctx, READ_RIGHT_LATE) ||
        dev_mr_resolve(c->pd, h->rkey, h->va, h->msg_len,
                       MROCE_ACCESS_REMOTE_READ, &err, NULL))
        return RV_OK;
    return resp_access_verdict(c, err);
}

/* R-MSG-11: response data lands in the READ's own local buffer. R-VAL-3:
 * a response naming no READ sent and not completed names nothing that
 * exists (a blind guess): dropped, not fatal. */
static int resp_place_read_resp(struct mroce_conn *c, const struct mroce_hdr *h)
{
    struct stream *s = &c->streams[h->stream];
    if (!seq_lt(h->msn, s->sq_next) || seq_lt(h->msn, s->sq_head)) {
        if (MROCE_FAULT(c->ctx, READ_RESP_UNKNOWN_FATAL))
            return resp_invalid(c);
        c->cnt.drop_msn_window++;
        return RV_DROP;
    }
    struct sq_slot *q = eng_sq(c, s, h->msn);
    if (q->op != MROCE_OP_READ_REQ || q->wr.sge.length != h->msg_len ||
        !resp_chunk_ok(c, h))
        return MROCE_FAULT(c->ctx, READ_RESP_LEN_DROPPED) ? RV_DROP
                                                          : resp_invalid(c);
    resp_copy(c, (uint8_t *)(uintptr_t)q->wr.sge.addr + h->offset, h);
    q->read_got++; /* DSN dedup makes each packet count once */
    return RV_OK;
}

static int resp_place(struct mroce_conn *c, struct stream *s,
                      const struct mroce_hdr *h)
{
    struct mroce_recv_wr *r;
    int v;
    switch (h->opcode) {
    case MROCE_OP_WRITE_IMM:
        v = resp_recv(c, s, h, &r);
        if (v != RV_OK)
            return v;
        /* fall through - placed like a WRITE */
    case MROCE_OP_WRITE:
        return resp_place_write(c, h);
    case MROCE_OP_SEND:
    case MROCE_OP_SEND_IMM:
        return resp_place_send(c, s, h);
    case MROCE_OP_READ_REQ:
        return resp_check_read(c, h);
    }
    return resp_invalid(c);
}

/* ---- receive-side completion in MSN order (R-ORD-3, R-ORD-4) ---- */

static void resp_complete_recv(struct mroce_conn *c, struct stream *s,
                               uint16_t sid, const struct in_msg *m);

void eng_resp_release(struct mroce_conn *c, struct rd_resp *r)
{
    if (r->used && r->mr)
        r->mr->refs--;
    if (r->used)
        c->n_resp--;
    r->used = false;
    r->mr = NULL;
}

/* R-MSG-10, R-MSG-13: a READ executes in MSN order when a slot is free.
 * 1 = started, 0 = no response slot free (retried when one frees), -1 =
 * the region is gone or changed since the request arrived (R-MSG-17). */
static int resp_start_read(struct mroce_conn *c, uint16_t sid,
                           const struct in_msg *m)
{
    int err = 0;
    struct mroce_mr *mr = NULL;
    uint8_t *src = dev_mr_resolve(c->pd, m->rkey, m->va, m->len,
                                  MROCE_ACCESS_REMOTE_READ, &err, &mr);
    if (!src)
        return -1;
    for (uint32_t i = 0; i < c->attr.max_rd; i++) {
        struct rd_resp *r = &c->resp[i];
        if (r->used)
            continue;
        *r = (struct rd_resp){.used = true,
                              .stream = sid,
                              .msn = m->msn,
                              .len = m->len,
                              .src = src,
                              .mr = mr,
                              .npkts = eng_npkts(m->len, c->mtu)};
        if (mr) /* the region stays registered while we read it */
            mr->refs++;
        c->n_resp++;
        c->unsent += m->len; /* R-TAIL-100 */
        if (m->len)
            eng_comp_prove(c); /* R-VAL-7 */
        eng_sched_ready(c);    /* it has a response to send */
        return 1;
    }
    return 0;
}

/* A message found invalid only when it retires (R-MSG-16, R-MSG-17): NACK
 * it by stream and MSN, which the requester matches (R-NACK-4), and end the
 * connection (R-NACK-6). */
static void resp_fatal_msg(struct mroce_conn *c, uint16_t sid,
                           const struct in_msg *m, uint8_t code)
{
    struct mroce_hdr h = {.stream = sid, .msn = m->msn, .dsn = m->dsn};
    if (code == MROCE_NAK_REMOTE_ACCESS)
        c->cnt.drop_bad_key++;
    else
        c->cnt.drop_bad_msg++;
    resp_nak(c, &h, code, 0);
    eng_conn_error(c, 0, 0, 0);
}

/* Executes a retiring message; false if it cannot retire (yet). */
static bool resp_execute(struct mroce_conn *c, struct stream *s, uint16_t sid,
                         const struct in_msg *m)
{
    if (m->op == MROCE_OP_READ_REQ) {
        int r = resp_start_read(c, sid, m);
        if (r < 0)
            resp_fatal_msg(c, sid, m, MROCE_NAK_REMOTE_ACCESS);
        return r > 0;
    }
    if (m->op == MROCE_OP_WRITE)
        return true;
    if (m->ssn != s->rq_head && /* R-MSG-16: receives are used in order */
        !MROCE_FAULT(c->ctx, SSN_ORDER_OFF)) {
        resp_fatal_msg(c, sid, m, MROCE_NAK_INVALID_REQUEST);
        return false;
    }
    resp_complete_recv(c, s, sid, m);
    return true;
}

static void resp_complete_recv(struct mroce_conn *c, struct stream *s,
                               uint16_t sid, const struct in_msg *m)
{
    uint32_t i = eng_rq(c, s->rq_head);
    struct mroce_wc wc = {.wr_id = s->rq[i].wr_id,
                          .conn = c,
                          .stream = sid,
                          .byte_len = m->len,
                          .imm = MROCE_FAULT(c->ctx, IMM_LOST) ? 0 : m->imm};
    wc.opcode = m->op == MROCE_OP_WRITE_IMM ? MROCE_WC_RECV_RDMA_WITH_IMM
                                            : MROCE_WC_RECV;
    wc.has_imm = m->op != MROCE_OP_SEND;
    if (s->rq_mr[i])
        s->rq_mr[i]->refs--;
    s->rq_head++;
    dev_cq_push(c->rcq, &wc);
}

/* Whether the stream's oldest inbound message has all its packets. */
static inline bool resp_head_done(const struct mroce_conn *c,
                                  const struct stream *s)
{
    const struct in_msg *m = eng_in(c, s, s->in_base);
    return m->used && m->msn == s->in_base &&
           m->got + MROCE_FAULT(c->ctx, RECV_EARLY) >= m->npkts;
}

void eng_resp_retire(struct mroce_conn *c, struct stream *s)
{
    if (c->state != MROCE_CONN_CONNECTED)
        return; /* flushed: nothing may start or complete any more */
    uint16_t sid = (uint16_t)(s - c->streams);
    for (;;) {
        struct in_msg *m = eng_in(c, s, s->in_base);
        if (!resp_head_done(c, s))
            return;
        if (!resp_execute(c, s, sid, m))
            return; /* a READ resumes when a response slot frees */
        m->used = false;
        s->in_base++;
        c->cnt.msgs_rx++;
    }
}

/* ---- the data path ---- */

/* R-DSN-3, R-VAL-3: a DSN is new in [dsn_cum, dsn_cum + W) unless
 * marked, a duplicate when marked or in the W before dsn_cum (a sender's
 * DSNs never lie further back), and names nothing otherwise. */
static int resp_dsn_class(const struct mroce_conn *c, uint32_t dsn)
{
    uint32_t k = dsn - c->rcv_cum;
    if (!k) /* in order: dsn_cum's own DSN is never marked */
        return RV_OK;
    if (k < c->dsn_window || /* the map is read only inside the window */
        (MROCE_FAULT(c->ctx, DSN_MAP_FIRST) && resp_dsn_test(c, dsn)))
        return resp_dsn_test(c, dsn) ? RV_DUP : RV_OK;
    if (MROCE_FAULT(c->ctx, DSN_WINDOW_IGNORED) && k < 0x80000000u)
        return RV_OK;
    return -k <= c->dsn_window ? RV_DUP : RV_DROP;
}

/* R-RX-3 steps 11-13, R-VAL-3: the DSN first, so that a packet whose
 * DSN names nothing is dropped whatever else it says; then the stream.
 * A duplicate with a stream that does not exist is dropped too: no
 * sender resends what it never sent. */
static int resp_validate(struct mroce_conn *c, const struct mroce_hdr *h)
{
    if (MROCE_FAULT(c->ctx, STREAM_BEFORE_DSN) && h->stream >= c->n_streams)
        return resp_invalid(c);
    int v = resp_dsn_class(c, h->dsn);
    if (v == RV_DROP) {
        c->cnt.drop_dsn_window++;
        return RV_DROP;
    }
    if (h->stream < c->n_streams)
        return v;
    if (v == RV_OK)
        return resp_invalid(c);
    c->cnt.drop_bad_msg++;
    return RV_DROP;
}

static int resp_accept(struct mroce_conn *c, const struct mroce_hdr *h)
{
    int v = resp_validate(c, h);
    if (v != RV_OK && !(v == RV_DUP && MROCE_FAULT(c->ctx, DUP_PLACED)))
        return v;
    if (h->opcode == MROCE_OP_READ_RESP)
        return resp_place_read_resp(c, h);
    struct stream *s = &c->streams[h->stream];
    struct in_msg *m = resp_in_msg(c, s, h, &v);
    if (!m)
        return v;
    v = resp_place(c, s, h);
    if (v == RV_OK)
        m->got++; /* DSN dedup makes each packet count once */
    return v;
}

static void resp_after(struct mroce_conn *c, uint64_t now,
                       const struct mroce_hdr *h)
{
    struct stream *s = &c->streams[h->stream];
    if (h->opcode == MROCE_OP_READ_RESP) {
        eng_comp_read_watch(c, now); /* the responder is alive */
        eng_comp_retire(c, s);
        return;
    }
    if (h->opcode == MROCE_OP_READ_REQ) {
        struct in_msg *m = eng_in(c, s, h->msn);
        m->got = m->npkts; /* a READ request is complete on arrival */
    }
    if (resp_head_done(c, s)) /* else nothing retires: no call (most) */
        eng_resp_retire(c, s);
}

/* R-ACK-8: a PROBE sent because its path went silent, or a
 * retransmission of data we already hold, means our ACKs may not get
 * through. ACKs are not acknowledged, so the receiver tests the
 * path that carried the last ACK for that forward path like a sender
 * tests a silent path: SUSPECT (no ACKs routed over it while another path
 * is active) and a PROBE without RETX (so the peer does not react in
 * turn), whose ACK clears it or whose RTO re-paths it. */
static void resp_ack_route_suspect(struct mroce_conn *c, uint16_t p)
{
    struct path_tx *via = &c->ptx[c->prx[p].ack_via];
    if (via->state != PATH_ACTIVE)
        return;
    via->state = PATH_SUSPECT;
    eng_pset_update(c, c->prx[p].ack_via);
    if (!via->probe_due) {
        via->probe_due = true;
        c->n_probe_due++;
    }
    eng_sched_ready(c); /* the PROBE goes out */
}

/* R-DSN-5: a duplicate is recorded and acknowledged, not placed; R-VAL-2:
 * only near what its path recorded. */
static void resp_dup(struct mroce_conn *c, uint64_t now,
                     const struct mroce_pkt_meta *meta,
                     const struct mroce_hdr *h)
{
    c->cnt.rx_dup_pkts++;
    if (MROCE_FAULT(c->ctx, DUP_NOT_RECORDED) ||
        (!eng_path_rx_ok(&c->prx[h->path], h->psn, ENG_REC_NEAR) &&
         !MROCE_FAULT(c->ctx, DUP_RECORDED_ANYWHERE))) {
        c->cnt.drop_psn_window++;
        return;
    }
    resp_record(c, now, meta, h);
    resp_ack_now(c, h->path); /* R-ACK-1 case 1: a duplicate */
    if (h->flags & MROCE_HF_RETX)
        resp_ack_route_suspect(c, h->path);
}

static void resp_data(struct mroce_conn *c, uint64_t now,
                      const struct mroce_pkt_meta *meta,
                      const struct mroce_hdr *h)
{
    if (c->state != MROCE_CONN_CONNECTED &&
        !MROCE_FAULT(c->ctx, CLOSED_TAKES_DATA)) {
        c->cnt.drop_state++;
        if (!MROCE_FAULT(c->ctx, NO_CONN_CLOSED_NACK))
            resp_nak(c, h, MROCE_NAK_CONN_CLOSED, 0);
        return;
    }
    c->cnt.rx_data_pkts++;
    eng_share_note(c, now);
    int v = resp_accept(c, h);
    if (v == RV_DROP)
        return;
    if (v == RV_RNR) { /* R-RETRY-3: not acked, NACKed with a delay */
        c->cnt.rnr_naks++;
        if (MROCE_FAULT(c->ctx, REFUSED_RECORDED)) {
            resp_record(c, now, meta, h);
            resp_ack_now(c, h->path); /* not covered: at once */
        }
        if (!MROCE_FAULT(c->ctx, RNR_SILENT))
            resp_nak(c, h, MROCE_NAK_RNR, ENG_RNR_DELAY_US);
        return;
    }
    if (v == RV_ACCESS || v == RV_INVALID) { /* R-NACK-6: not acked */
        resp_nak(c, h,
                 v == RV_ACCESS && !MROCE_FAULT(c->ctx, NACK_CODE_SWAP)
                     ? MROCE_NAK_REMOTE_ACCESS
                     : MROCE_NAK_INVALID_REQUEST,
                 0);
        if (!MROCE_FAULT(c->ctx, FATAL_NACK_NO_ERROR))
            eng_conn_error(c, 0, 0, 0);
        return;
    }
    if (v == RV_DUP) {
        resp_dup(c, now, meta, h);
        return;
    }
    bool now_ack = resp_record(c, now, meta, h);
    uint32_t cum = c->rcv_cum;
    resp_dsn_mark(c, h->dsn);
    /* R-ACK-1 case 2: above a hole (dsn_cum does not cover it), or it
     * filled one (dsn_cum moved past DSNs accepted before it) */
    bool hole = c->rcv_cum - cum != 1;
    if (now_ack)
        resp_ack_now(c, h->path);
    else if (hole && (c->ackm || MROCE_FAULT(c->ctx, ACKM_TX_UNNEGOTIATED)))
        resp_ack_record(c, now, h->path); /* R-ACKM-4 */
    else if (hole)
        resp_ack_now(c, h->path);
    else
        resp_ack_coalesce(c, now, h->path);
    resp_after(c, now, h);
}

/* ---- control packets ---- */

/* R-VAL-5: a CLOSE or CLOSE_ACK carries its sender's next DSN, which
 * lies at most W after our dsn_cum: one that does not names nothing. */
static bool resp_close_ok(struct mroce_conn *c, const struct mroce_hdr *h)
{
    if (h->psn - c->rcv_cum <= c->dsn_window ||
        MROCE_FAULT(c->ctx, CLOSE_PSN_UNCHECKED))
        return true;
    c->cnt.drop_bad_close++;
    return false;
}

static void resp_close(struct mroce_conn *c, const struct mroce_hdr *h)
{
    if (!resp_close_ok(c, h) ||
        (c->state == MROCE_CONN_CLOSED && MROCE_FAULT(c->ctx, CLOSED_SILENT)))
        return;
    /* R-CONN-9: answer every copy, those of one receive burst too (a
     * CLOSE_ACK is no larger than its CLOSE; 255 owed at most) */
    if (c->close_acks < UINT8_MAX)
        c->close_acks++;
    if ((c->state == MROCE_CONN_CONNECTED || c->state == MROCE_CONN_CLOSING) &&
        !MROCE_FAULT(c->ctx, CLOSE_NO_FLUSH))
        eng_conn_close(c);
}

/* R-PATH-9, R-VAL-4: every PROBE is answered by an ACK that echoes its
 * PSN (the PROBE is as long as the ACK: no amplification); it is recorded
 * only as its path's next PSN (R-VAL-2). Its RETX flag makes us doubt our
 * ACK route (R-ACK-8) only if its PSN is near where the path is: a blind
 * PROBE must not take our paths out of service. */
static void resp_probe(struct mroce_conn *c, uint64_t now,
                       const struct mroce_pkt_meta *meta,
                       const struct mroce_hdr *h)
{
    struct path_rx *pr = &c->prx[h->path];
    if ((h->flags & MROCE_HF_RETX) && !MROCE_FAULT(c->ctx, ROUTE_CHECK_OFF) &&
        eng_path_rx_ok(pr, h->psn, ENG_REC_NEAR)) /* its sender hears nothing */
        resp_ack_route_suspect(c, h->path);
    if (eng_path_rx_ok(pr, h->psn, ENG_REC_PROBE) ||
        MROCE_FAULT(c->ctx, PROBE_RECORDED_ANYWHERE))
        resp_record(c, now, meta, h);
    else
        c->cnt.drop_psn_window++;
    pr->echo_due = true;
    pr->echo_psn = h->psn;
    resp_ack_now(c, h->path);
}

static void resp_close_ack(struct mroce_conn *c, const struct mroce_hdr *h)
{
    if ((c->state == MROCE_CONN_CLOSING ||
         (c->state == MROCE_CONN_CONNECTED &&
          MROCE_FAULT(c->ctx, CLOSE_ACK_CONNECTED))) &&
        resp_close_ok(c, h)) {
        c->close_pending = false;
        c->state = MROCE_CONN_CLOSED;
    }
}

/* Data, or PROBE, CLOSE, CLOSE_ACK (0x20 and up, R-HDR-4; the decoder
 * lets no other opcode through): a data packet passes with one test, not
 * the three of a switch over the others. */
void eng_resp_rx(struct mroce_conn *c, uint64_t now,
                 const struct mroce_pkt_meta *meta, const struct mroce_hdr *h)
{
    if (h->opcode < MROCE_OP_PROBE)
        resp_data(c, now, meta, h);
    else if (h->opcode == MROCE_OP_CLOSE)
        resp_close(c, h);
    else if (h->opcode == MROCE_OP_CLOSE_ACK)
        resp_close_ack(c, h);
    else if (h->opcode == MROCE_OP_PROBE && c->state == MROCE_CONN_CONNECTED &&
             !MROCE_FAULT(c->ctx, PROBE_DROPPED))
        resp_probe(c, now, meta, h);
}

/* ---- ACK and NACK emission ---- */

/* R-ACK-3: how good our path q is for an ACK of data arriving on
 * `plane`: 0 fast and ACTIVE on that plane, 1 ACTIVE on it, 2 fast and
 * ACTIVE elsewhere, 3 ACTIVE, 4 enabled, 5 not usable. A slow path is
 * queued behind a slow link, and so would be the ACK. */
static int resp_ack_rank(const struct mroce_conn *c, uint16_t q, int plane)
{
    const struct path_tx *pt = &c->ptx[q];
    if (pt->state == PATH_DISABLED)
        return 5;
    if (pt->state != PATH_ACTIVE)
        return 4;
    int other = c->ctx->dev.n_planes > 1 && pt->plane != plane;
    return 2 * other + !eng_path_fast(c, pt);
}

/* resp_ack_path with one plane and up to 64 paths: the ranks of ACTIVE
 * paths are then 0 (fast) and 1 (slow), which the path bits hold
 * (pathset.c): the first fast one from the round-robin position, else the
 * first slow one; -1 when none is ACTIVE (the scan decides). */
static int resp_ack_bits(const struct mroce_conn *c)
{
    const struct eng_pset *s = &c->pset;
    uint64_t all = c->n_paths < 64 ? ((uint64_t)1 << c->n_paths) - 1 : ~0ull;
    uint64_t act = s->b[PS_ACT][0] & all;
    if (!act)
        return -1;
    uint64_t fast = act & ~s->b[PS_SLOW][0];
    uint64_t m = fast ? fast : act;
    uint64_t at = m & (~(uint64_t)0 << (c->rr_ack % c->n_paths));
    return __builtin_ctzll(at ? at : m);
}

/* resp_ack_path by ranking every path; out of line, so that the path
 * bits' answer (nearly every ACK) saves no registers for its loop. */
static __attribute__((noinline)) uint16_t resp_ack_scan(struct mroce_conn *c,
                                                        uint16_t acked)
{
    int plane = c->prx[acked].plane, best = -1, best_rank = 5;
    for (uint32_t i = 0; i < c->n_paths && best_rank; i++) {
        uint16_t q = (uint16_t)((c->rr_ack + i) % c->n_paths);
        int r = resp_ack_rank(c, q, plane);
        if (r < best_rank) {
            best = q;
            best_rank = r;
        }
    }
    if (best < 0)
        return 0;
    c->rr_ack = (uint32_t)best + 1u;
    return (uint16_t)best;
}

/* R-ACK-3: the ACK of path `acked` goes round-robin over our own paths,
 * the best ranked first (an ACK must go somewhere: path 0 at worst). */
static uint16_t resp_ack_path(struct mroce_conn *c, uint16_t acked)
{
    if (MROCE_FAULT(c->ctx, ACK_PATH_FIXED))
        return 0;
    int b =
        c->ctx->dev.n_planes == 1 && c->n_paths <= 64 ? resp_ack_bits(c) : -1;
    if (b < 0)
        return resp_ack_scan(c, acked);
    c->rr_ack = (uint32_t)b + 1u;
    return (uint16_t)b;
}

/* An ACK, ACKM or NACK out through our path `via` (R-ACK-3); pl, len:
 * an ACKM's payload. */
static int resp_emit(struct mroce_conn *c, uint64_t now, struct mroce_hdr *h,
                     uint16_t via, const uint8_t *pl, uint32_t len,
                     uint8_t *buf, size_t cap, struct mroce_pkt_meta *meta)
{
    h->conn = c->remote.conn_id;
    h->ts = eng_ts(c, now);
    eng_req_meta(c, via, meta);
    return eng_tx_ctl_pl(c, h, pl, len, buf, cap);
}

static int resp_nak_tx(struct mroce_conn *c, uint64_t now, uint8_t *buf,
                       size_t cap, struct mroce_pkt_meta *meta)
{
    const struct nak_entry *e = &c->naks[c->nak_head];
    struct mroce_hdr h = {.opcode = MROCE_OP_NACK,
                          .path = e->path,
                          .psn = e->psn,
                          .dsn = e->dsn,
                          .stream = e->stream,
                          .msn = e->msn,
                          .nak_code = e->code,
                          .nak_info = e->info};
    c->nak_head = (c->nak_head + 1) % 16;
    c->nak_count--;
    c->cnt.tx_nacks++;
    return resp_emit(c, now, &h, resp_ack_path(c, e->path), NULL, 0, buf, cap,
                     meta);
}

/* R-ACKM-3: how long a path's acknowledgement waited as a record; 0 for
 * one that R-ACK-1 sent at once or held for case 3. */
static uint32_t resp_rec_hold(struct path_rx *pr, uint64_t now)
{
    if (!pr->rec_held)
        return 0;
    pr->rec_held = 0;
    uint64_t d = now - pr->high_at;
    return d > MROCE_ACKM_HOLD_MAX_NS ? MROCE_ACKM_HOLD_MAX_NS : (uint32_t)d;
}

/* Path q's acknowledgement as record i of the ACKM payload at pl. */
static void resp_rec_put(struct mroce_conn *c, uint16_t q, uint64_t now,
                         uint16_t via, uint8_t *pl, unsigned i)
{
    struct path_rx *pr = &c->prx[q];
    struct mroce_ackm_rec r = {.path = q,
                               .hold_ns = resp_rec_hold(pr, now),
                               .sack_high = pr->high,
                               .echo_ts = pr->echo_ts,
                               .ce_count = pr->ce_count,
                               .rx_count = pr->rx_count};
    memcpy(r.sack, pr->bits, sizeof(r.sack));
    mroce_ackm_rec_put(pl, i, &r);
    pr->ack_via = via; /* R-ACK-8 */
    c->ack_pending[q] = 0;
}

/* R-ACKM-2: records an ACKM of the connection may carry: never longer
 * than its longest data packet, nor than the caller's buffer. */
static unsigned resp_rec_fit(const struct mroce_conn *c, size_t cap)
{
    size_t room = MROCE_MAX_HDR_LEN + mroce_ackm_len(0) + MROCE_TAG_LEN;
    size_t fit = cap > room ? (cap - room) / MROCE_ACKM_REC_LEN : 0;
    size_t by_mtu = c->mtu > 16 ? (c->mtu - 16) / MROCE_ACKM_REC_LEN : 0;
    if (by_mtu < fit)
        fit = by_mtu;
    return fit < MROCE_ACKM_MAX_RECS ? (unsigned)fit : MROCE_ACKM_MAX_RECS;
}

/* R-ACKM-4: the waiting records, oldest first, as many as fit; those
 * that do not go in the next ACK, which goes at once (rule 2: the bound
 * holds for them too). */
static unsigned resp_rec_take(struct mroce_conn *c, uint64_t now, uint16_t via,
                              size_t cap, uint8_t *pl)
{
    unsigned fit = resp_rec_fit(c, cap);
    unsigned n = 0, kept = 0;
    for (uint32_t i = 0; i < c->rec_count; i++) {
        uint16_t q = c->rec_queue[i];
        if (c->ack_pending[q] != ENG_ACK_RECORD && /* queued for its own */
            !MROCE_FAULT(c->ctx, ACKM_OWN_RECORD))
            continue;
        if (n < fit)
            resp_rec_put(c, q, now, via, pl, n++);
        else
            c->rec_queue[kept++] = q;
    }
    c->rec_count = kept;
    if (kept) /* the newest left over is the next ACK's own path */
        resp_ack_now(c, c->rec_queue[--c->rec_count]);
    return n;
}

/* R-ACKM-2: the ACK h as an ACKM: its path's own hold and the records
 * of the paths waiting for it. The payload is written where it goes,
 * after the ACKM's headers: buf holds the longest packet (eng_ctx_tx),
 * and resp_rec_fit keeps the ACKM shorter. Out of line, as it was
 * before it wrote in place: inlined, it made GCC stop inlining the
 * requester's transmit into the transmit loop (+19 instructions a data
 * packet, measured before ctx_turns). */
static __attribute__((noinline)) int
resp_ackm(struct mroce_conn *c, uint64_t now, struct mroce_hdr *h, uint8_t *buf,
          size_t cap, struct mroce_pkt_meta *meta)
{
    uint8_t *pl = buf + MROCE_MTH_LEN + MROCE_AKH_LEN;
    uint16_t via = c->prx[h->path].ack_via;
    uint32_t hold = resp_rec_hold(&c->prx[h->path], now);
    unsigned n = resp_rec_take(c, now, via, cap, pl);
    mroce_ackm_pre_put(pl, n, hold);
    size_t len = mroce_ackm_len(n);
    h->opcode = MROCE_OP_ACKM;
    c->cnt.tx_ackm_recs += n;
    return resp_emit(c, now, h, via, pl, (uint32_t)len, buf, cap, meta);
}

/* R-ACK-2, R-ACK-4: every ACK is self-contained. */
static int resp_ack_one(struct mroce_conn *c, uint64_t now, uint8_t *buf,
                        size_t cap, struct mroce_pkt_meta *meta)
{
    uint16_t p = c->ack_queue[c->ack_q_head];
    c->ack_q_head = (c->ack_q_head + 1) % c->n_paths;
    c->ack_q_count--;
    c->ack_pending[p] = 0;
    struct path_rx *pr = &c->prx[p];
    /* Not zeroed (136 bytes per ACK): every field mroce_wire_write_hdr
     * reads for an ACK (MTH, AKH) is set here or by resp_emit. */
    struct mroce_hdr h;
    h.opcode = MROCE_OP_ACK;
    h.flags = MROCE_FAULT(c->ctx, ACK_FLAGS_SET) ? MROCE_HF_ACKREQ : 0;
    h.path = p;
    h.sack_high = pr->high;
    h.dsn_cum = c->rcv_cum - MROCE_FAULT(c->ctx, DSN_CUM_LAG);
    h.echo_ts = pr->echo_ts;
    h.rate_mbps =
        MROCE_FAULT(c->ctx, RATE_HINT_ZERO) ? 0 : eng_rate_hint(c->ctx, now);
    h.ce_count = pr->ce_count;
    h.rx_count = pr->rx_count;
    memcpy(h.sack, pr->bits, sizeof(h.sack));
    if (MROCE_FAULT(c->ctx, SACK_WORDS_SWAPPED))
        h.sack[1] = pr->bits[2], h.sack[2] = pr->bits[1];
    h.psn = pr->echo_due && !MROCE_FAULT(c->ctx, PROBE_ANSWER_HIGH)
                ? pr->echo_psn
                : pr->high; /* R-VAL-4 */
    pr->echo_due = false;
    c->ack_count = 0; /* its dsn_cum covers all in-order data (R-ACK-100) */
    c->ack_mbps = h.rate_mbps;
    c->ack_at = ENG_NEVER;
    pr->ack_via = resp_ack_path(c, p);
    c->cnt.tx_acks++;
    bool ackm = c->ackm || MROCE_FAULT(c->ctx, ACKM_TX_UNNEGOTIATED);
    if (ackm && (c->rec_count || pr->rec_held) &&
        !MROCE_FAULT(c->ctx, ACKM_REC_LEFT))
        return resp_ackm(c, now, &h, buf, cap, meta);
    return resp_emit(c, now, &h, pr->ack_via, NULL, 0, buf, cap, meta);
}

int eng_resp_ack_send(struct mroce_conn *c, uint64_t now, uint8_t *buf,
                      size_t cap, struct mroce_pkt_meta *meta)
{
    if (c->nak_count)
        return resp_nak_tx(c, now, buf, cap, meta);
    if (c->ack_q_count)
        return resp_ack_one(c, now, buf, cap, meta);
    return 0;
}

/* A coalesced ACK that is due (R-ACK-1 case 3). */
void eng_resp_timers(struct mroce_conn *c, uint64_t now)
{
    if (c->ack_at > now)
        return;
    c->ack_at = ENG_NEVER;
    if (c->ack_count || !c->rec_count) {
        resp_ack_now(c, c->ack_path); /* the records go with it */
        return;
    }
    /* R-ACKM-4: the oldest record has waited the bound; the newest one's
     * path is the ACK's own */
    uint16_t p = c->rec_queue[--c->rec_count];
    resp_ack_now(c, p);
}
