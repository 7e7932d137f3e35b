/* Requester: turns work requests, READ responses and retransmissions into
 * packets, choosing a path for each (R-MSG-*, R-LOSS-3). */
#include <string.h>

#include "engine/eng.h"

void eng_req_meta(struct mroce_conn *c, uint16_t path,
                  struct mroce_pkt_meta *meta)
{
    uint8_t plane = c->ptx[path].plane;
    meta->src = c->ctx->dev.plane_addr[plane]; /* R-ENC-10 */
    meta->dst = c->peer_addr[plane];
    meta->src_port = c->ptx[path].src_port;
    meta->dst_port = c->remote.udp_port;
    meta->ecn = MROCE_FAULT(c->ctx, ECN_NOT_ECT) ? MROCE_ECN_NOT_ECT
                                                 : MROCE_ECN_ECT0; /* R-ENC-6 */
    meta->plane = plane;
}

/* x's send-queue slot; NULL for a READ response's packet. */
static const struct sq_slot *req_slot(const struct mroce_conn *c,
                                      const struct txp *x)
{
    if (x->kind == TXK_RESP)
        return NULL;
    return eng_sq(c, &c->streams[x->stream], x->msn);
}

/* What goes next: a DSN, its slot (req_slot), its path and its header
 * flags (req_emit); `cut`: a packet just cut from a message of more than
 * one packet, whose header its stream's tx_hdr holds (req_hdr). */
struct req_pick {
    struct txp *x;
    const struct sq_slot *q;
    uint16_t p;
    uint8_t flags;
    bool cut;
};

/* Fills the DXH and the opcode's own headers; returns the payload. */
static const uint8_t *req_fill(struct mroce_conn *c, const struct req_pick *k,
                               struct mroce_hdr *h)
{
    const struct txp *x = k->x;
    h->dsn = x->dsn;
    h->stream = x->stream;
    h->offset = x->offset;
    const struct sq_slot *q = k->q;
    if (!q) {
        const struct rd_resp *r = &c->resp[x->msn];
        h->opcode = MROCE_OP_READ_RESP;
        h->msn = r->msn;
        h->msg_len = r->len;
        return r->src ? r->src + x->offset : NULL;
    }
    h->opcode = q->op;
    h->msn = q->msn + (q->op == MROCE_OP_READ_REQ &&
                       MROCE_FAULT(c->ctx, MSN_READ_SHIFT));
    h->msg_len = q->wr.sge.length;
    h->va = q->wr.remote_addr;
    h->rkey = q->wr.rkey;
    h->ssn = q->ssn;
    h->imm = q->wr.imm;
    if (q->op == MROCE_OP_READ_REQ || !x->len)
        return NULL;
    return (const uint8_t *)(uintptr_t)q->wr.sge.addr + x->offset;
}

/* R-RTT-7: the time the connection's bytes already in flight take to
 * drain at the receiver's granted rate; unknown before a hint. */
static uint32_t req_drain(const struct mroce_conn *c)
{
    return c->rate_hint_mbps ? eng_drain_ns(c, c->inflight) : ENG_DRAIN_UNKNOWN;
}

static void req_account(struct mroce_conn *c, struct txp *x, uint16_t p,
                        uint32_t charge, uint64_t now)
{
    struct path_tx *pt = &c->ptx[p];
    uint32_t i = eng_psn_slot(pt, pt->next_psn);
    if (c->ctx->spray_run > 1) /* else no runs (R-PATH-17): no call */
        eng_path_run_sent(c, p);
    pt->psn_dsn[i] = x->dsn;
    pt->psn_len[i] = (uint16_t)charge;
    eng_path_sent_ts(pt, i, eng_ts(c, now));
    if (pt->next_psn == pt->una) {
        pt->last_progress = now;
        pt->rto_at = now + eng_path_rto(c, pt);
    }
    pt->drain_ns = req_drain(c);
    pt->ahead_mark = c->sent_bytes;
    pt->next_psn += 1 + MROCE_FAULT(c->ctx, PSN_SKIP);
    pt->last_send = now;
    pt->inflight += charge;
    c->inflight += charge;
    c->sent_bytes += charge;
    pt->st.tx_pkts++;
    pt->st.tx_bytes += charge;
    x->last_path = p;
    x->last_psn = pt->next_psn - 1;
    x->state = TXP_OUT;
    x->tx_count++;
    x->copies++;
    c->cnt.tx_data_pkts++;
    eng_rack_sent(c, p);     /* R-LOSS-8: p is its plane's newest */
    eng_path_pto_sent(c, p); /* R-RTT-7; re-keys p's timers */
    eng_pset_sent(c, p);     /* R-PATH-13: no longer idle, less room */
}

static uint32_t req_charge(const struct mroce_conn *c, uint32_t len)
{
    (void)c;
    return MROCE_MAX_HDR_LEN + len + MROCE_ICRC_LEN;
}

/* R-ACK-1: ask for an ACK at once when the path's PSN window or the
 * connection's window will have no room for another packet: the peer
 * would otherwise hold the ACK that reopens it (R-ACK-101). */
static bool req_window_closing(const struct mroce_conn *c,
                               const struct path_tx *pt, const struct txp *x)
{
    uint32_t in = c->inflight + req_charge(c, x->len);
    return pt->next_psn - pt->una + 2 >= c->path_window ||
           in + eng_pkt_charge(c) > c->cc.cwnd;
}

/* Writes k's header, whose per-packet fields are f's, at dst (cap bytes);
 * returns its length and (payload) where the payload lies. */
static int req_write_hdr(struct mroce_conn *c, const struct req_pick *k,
                         const struct mroce_wire_pkt *f, uint8_t *dst,
                         size_t cap, const uint8_t **payload)
{
    /* Not zeroed (136 bytes per packet): req_fill and the lines below set
     * every field mroce_wire_write_hdr reads for a data opcode (MTH, DXH,
     * RETH, SNH, IMM); nothing else reads h. */
    struct mroce_hdr h;
    *payload = req_fill(c, k, &h);
    h.flags = f->flags;
    h.path = f->path;
    h.conn = c->remote.conn_id;
    h.psn = f->psn;
    h.ts = f->ts;
    return mroce_wire_write_hdr(&h, dst, cap);
}

/* R-HDR-2: the packets of one message differ in their header only in f's
 * fields, so the first one's header (its stream's tx_hdr) serves the
 * others, patched, instead of writing every field again. Returns the
 * header's length, written at buf (the copy is the longest data header's:
 * bytes past this one's are the payload's, written next). */
static int req_hdr(struct mroce_conn *c, const struct req_pick *k,
                   const struct mroce_wire_pkt *f, uint8_t *buf,
                   const uint8_t **payload)
{
    if (!k->cut)
        return req_write_hdr(c, k, f, buf, MROCE_MAX_HDR_LEN, payload);
    struct stream *s = &c->streams[k->x->stream];
    if (!k->x->offset) /* the message's first packet */
        s->tx_hdr_len = (uint8_t)req_write_hdr(c, k, f, s->tx_hdr,
                                               sizeof(s->tx_hdr), payload);
    memcpy(buf, s->tx_hdr, sizeof(s->tx_hdr));
    mroce_wire_patch_data(buf, f);
    *payload = (const uint8_t *)(uintptr_t)k->q->wr.sge.addr + k->x->offset;
    return s->tx_hdr_len;
}

/* Writes the packet for DSN k->x on path k->p (R-SACK-2: fresh PSN each
 * time). */
static int req_emit(struct mroce_conn *c, const struct req_pick *k,
                    uint64_t now, uint8_t *buf, struct mroce_pkt_meta *meta)
{
    struct txp *x = k->x;
    uint16_t p = k->p;
    struct path_tx *pt = &c->ptx[p];
    struct mroce_wire_pkt f = {
        .psn = pt->next_psn,
        .ts = MROCE_FAULT(c->ctx, TS_FROZEN) ? c->ts_off : eng_ts(c, now),
        .dsn = x->dsn,
        .offset = x->offset,
        .path = p,
        .flags = k->flags};
    if (req_window_closing(c, pt, x))
        f.flags |= MROCE_HF_ACKREQ;
    pt->newest_ackreq = f.flags & (MROCE_HF_ACKREQ | MROCE_HF_RETX);
    const uint8_t *payload;
    int hl = req_hdr(c, k, &f, buf, &payload);
    size_t n = eng_tx_payload(c, buf, (size_t)hl, payload, x->len);
    req_account(c, x, p, (uint32_t)n, now);
    if (k->q && k->q->op == MROCE_OP_READ_REQ) /* its READ watch moved too */
        eng_conn_update_deadline(c);
    else
        eng_conn_data_sent(c);
    eng_req_meta(c, p, meta);
    return (int)n;
}

/* ---- retransmissions first (R-LOSS-6, R-LOSS-3, R-RETRY-1) ---- */

static void req_retx_pop(struct mroce_conn *c)
{
    c->retx_head = (c->retx_head + 1) & c->retx_mask;
    c->retx_count--;
}

static bool req_has_new(struct mroce_conn *c);

static bool req_retx(struct mroce_conn *c, uint64_t now, struct req_pick *k)
{
    if (MROCE_FAULT(c->ctx, RETX_AFTER_NEW) && req_has_new(c))
        return false;
    while (c->retx_count) {
        uint32_t dsn = c->retx[c->retx_head];
        struct txp *x = eng_txp(c, dsn);
        bool dup = x->dsn == dsn && x->dup_due && x->state == TXP_OUT;
        if (x->dsn != dsn || (x->state != TXP_LOST && !dup &&
                              !MROCE_FAULT(c->ctx, ACKED_RESENT))) {
            if (x->dsn == dsn) /* acknowledged meanwhile: no second copy */
                x->dup_due = 0;
            req_retx_pop(c);
            continue;
        }
        int p = eng_path_pick(c, x->last_path, req_charge(c, x->len), now);
        if (dup && (p < 0 || p == x->last_path)) { /* no second path */
            x->dup_due = 0;
            req_retx_pop(c);
            continue;
        }
        if (p < 0)
            return false;
        if (x->tx_count >= ENG_MAX_TX && /* R-RETRY-1 */
            !MROCE_FAULT(c->ctx, TX_CAP_OFF)) {
            req_retx_pop(c);
            eng_comp_fail_txp(c, x, MROCE_WC_RETRY_EXC_ERR);
            return false;
        }
        /* R-LOSS-7: from its third transmission on, or at the connection's
         * tail, a DSN goes out twice */
        x->dup_due =
            !dup && !MROCE_FAULT(c->ctx, THIRD_ONCE) &&
            (x->tx_count >= 2 || (c->attr.tail_copies == 2 && !req_has_new(c)));
        if (!x->dup_due)
            req_retx_pop(c);
        c->cnt.retx_pkts++;
        c->ptx[p].st.retx_pkts++;
        *k = (struct req_pick){
            x, req_slot(c, x), (uint16_t)p,
            MROCE_FAULT(c->ctx, RETX_NO_FLAG) ? 0 : MROCE_HF_RETX, false};
        return true;
    }
    return false;
}

/* ---- new data ---- */

static struct txp *req_new_txp(struct mroce_conn *c, uint8_t kind,
                               uint16_t stream, uint32_t msn, uint32_t off,
                               uint32_t len)
{
    /* each field set (struct txp), not the whole slot zeroed first: a
     * string store of 48 bytes per packet */
    struct txp *x = eng_txp(c, c->snd_next);
    x->dsn = c->snd_next;
    x->state = TXP_FREE;
    x->kind = kind;
    x->tx_count = x->rnr_retries = x->copies = x->dup_due = 0;
    x->stream = stream;
    x->last_path = 0;
    x->last_psn = 0;
    x->tlp_gens = 0;
    x->tlp_epoch = 0;
    x->msn = msn;
    x->offset = off;
    x->len = len;
    x->rnr_at = 0;
    c->snd_next++;
    return x;
}

static uint32_t req_chunk(const struct mroce_conn *c, uint32_t len,
                          uint32_t off)
{
    uint32_t left = len - off;
    return left < c->mtu ? left : c->mtu;
}

/* Next READ response packet, round-robin over the responses in service. */
static struct txp *req_next_resp(struct mroce_conn *c)
{
    if (!c->n_resp) /* the common case: no READ in service, no slot scan */
        return NULL;
    for (uint32_t i = 0; i < c->attr.max_rd; i++) {
        uint32_t k = (c->rr_resp + i) % c->attr.max_rd;
        struct rd_resp *r = &c->resp[k];
        if (!r->used || r->sent_pkts >= r->npkts)
            continue; /* R-MSG-10: a zero-length READ gets one packet too */
        if (!r->len && MROCE_FAULT(c->ctx, ZERO_READ_UNANSWERED))
            continue;
        if (r->len && !c->established)
            continue; /* R-VAL-7: no data for a READ before proof */
        c->rr_resp = k + 1;
        uint32_t off = r->sent_pkts++ * c->mtu;
        uint32_t n = req_chunk(c, r->len, off);
        c->unsent -= n;
        struct txp *x = req_new_txp(c, TXK_RESP, r->stream, k, off, n);
        return x;
    }
    return NULL;
}

static inline bool req_stream_ready(struct mroce_conn *c, struct stream *s)
{
    if (s->sq_next == s->sq_tail)
        return false;
    if (s->sq_next - s->msn_una >= c->peer_msg_window && /* R-MSG-14 */
        !MROCE_FAULT(c->ctx, MSG_WINDOW_SENDER))
        return false;
    const struct sq_slot *q = eng_sq(c, s, s->sq_next);
    return q->op != MROCE_OP_READ_REQ || c->reads_out < c->peer_max_rd ||
           MROCE_FAULT(c->ctx, MAX_RD_SENDER);
}

/* The next packet of stream sid and (qp) its slot. */
static struct txp *req_from_stream(struct mroce_conn *c, uint16_t sid,
                                   const struct sq_slot **qp)
{
    struct stream *s = &c->streams[sid];
    struct sq_slot *q = eng_sq(c, s, s->sq_next);
    *qp = q;
    uint32_t n = q->op == MROCE_OP_READ_REQ
                     ? 0
                     : req_chunk(c, q->wr.sge.length, q->sent_bytes);
    struct txp *x = req_new_txp(c, TXK_MSG, sid, q->msn, q->sent_bytes, n);
    if (!q->sent_bytes)
        q->first_dsn = x->dsn;
    q->last_dsn = x->dsn; /* R-VAL-6 */
    q->sent_bytes += n;
    c->unsent -= n; /* R-TAIL-100 (a READ_REQ carries none) */
    if (q->op == MROCE_OP_READ_REQ || q->sent_bytes >= q->wr.sge.length) {
        if (q->op == MROCE_OP_READ_REQ)
            c->reads_out++;
        s->sq_next++;
    }
    return x;
}

/* The stream whose message goes next, round-robin; -1 if none may. */
static int req_next_stream(struct mroce_conn *c)
{
    for (uint32_t i = 0; i < c->n_streams; i++) {
        uint32_t sid = (c->rr_stream + i) % c->n_streams;
        if (req_stream_ready(c, &c->streams[sid]))
            return (int)sid;
    }
    return -1;
}

/* The next packet, and (qp) its slot, of stream sid (req_next_stream's)
 * or, for -1, of the next stream that may send. */
static struct txp *req_next_msg(struct mroce_conn *c, int sid,
                                const struct sq_slot **qp)
{
    if (sid < 0)
        sid = req_next_stream(c);
    if (sid < 0)
        return NULL;
    c->rr_stream = (uint32_t)sid + 1;
    return req_from_stream(c, (uint16_t)sid, qp);
}

/* Anything new to send: a READ response or a stream with a message that
 * may go. */
static bool req_has_new(struct mroce_conn *c)
{
    for (uint32_t i = 0; c->n_resp && i < c->attr.max_rd; i++)
        if (c->resp[i].used && c->resp[i].sent_pkts < c->resp[i].npkts &&
            (!c->resp[i].len || c->established))
            return true;
    for (uint32_t i = 0; i < c->n_streams; i++)
        if (req_stream_ready(c, &c->streams[i]))
            return true;
    return false;
}

/* R-ACK-1: the last ENG_ACKREQ_TAIL packets of a message (a READ_REQ is
 * its only packet): the last one's ACK completes the message, and those
 * before it let the ACK clock of R-LOSS-8 see a lost one late even when
 * an ACK is lost too. */
static bool req_tail_pkt(const struct mroce_conn *c, const struct txp *x,
                         const struct sq_slot *q)
{
    uint32_t n = q ? q->npkts : c->resp[x->msn].npkts;
    return x->offset / c->mtu + ENG_ACKREQ_TAIL >= n;
}

/* R-CC-4: until the connection's first ACK arrives, at most
 * init_cwnd_pkts data packets in all. The paths' byte windows alone allow
 * more: each path may always send one packet (256 paths, 256 packets)
 * and packets shorter than the mtu fit more per window. */
static bool req_first_window_full(const struct mroce_conn *c)
{
    return !c->cnt.rx_acks && c->cnt.tx_data_pkts >= c->attr.init_cwnd_pkts &&
           !MROCE_FAULT(c->ctx, INIT_WINDOW_OFF);
}

static bool req_new(struct mroce_conn *c, uint64_t now, struct req_pick *k)
{
    if (c->snd_next - c->snd_una >= c->dsn_window) /* R-DSN-7 */
        return false;
    if (req_first_window_full(c))
        return false;
    if (c->inflight >= c->cc.cwnd)
        return false; /* cheap checks first: idle connections skip the path scan
                       */
    /* Without READ responses in service, anything new is a stream's, and
     * the one found here is the one that sends (the path pick changes no
     * stream): one scan of the streams instead of two. */
    int sid = -1;
    if (c->n_resp ? !req_has_new(c) : (sid = req_next_stream(c)) < 0)
        return false;
    if (eng_mem_txp_room(c))
        return false; /* out of memory: as if the window were full */
    int p = eng_path_pick(c, -1, req_charge(c, c->mtu), now);
    if (p < 0)
        return false;
    const struct sq_slot *q = NULL; /* a READ response's packet has none */
    struct txp *x = req_next_resp(c);
    if (!x)
        x = req_next_msg(c, sid, &q);
    if (!x)
        return false;
    uint8_t flags = req_tail_pkt(c, x, q) && !MROCE_FAULT(c->ctx, ACKREQ_NEVER)
                        ? MROCE_HF_ACKREQ
                        : 0; /* R-ACK-1 */
    if (q && q->op == MROCE_OP_READ_REQ)
        eng_comp_read_watch(c, now);
    *k = (struct req_pick){x, q, (uint16_t)p, flags, q && q->npkts > 1};
    return true;
}

/* ---- connection control packets (R-CONN-8, R-CONN-10) ---- */

static uint64_t req_close_wait(const struct mroce_conn *c)
{
    uint32_t k = c->close_tries - 1u < 16 ? c->close_tries - 1u : 16;
    uint64_t w = c->ptx[0].rto << k;
    return w < c->attr.max_rto_ns ? w : c->attr.max_rto_ns;
}

static int req_close(struct mroce_conn *c, uint64_t now, uint8_t *buf,
                     struct mroce_pkt_meta *meta)
{
    /* R-VAL-5: our next DSN, which the peer finds within its window */
    struct mroce_hdr h = {
        .conn = c->remote.conn_id,
        .psn = MROCE_FAULT(c->ctx, CLOSE_PSN_ZERO) ? 0 : c->snd_next};
    if (c->close_acks) {
        c->close_acks--;
        h.opcode = MROCE_OP_CLOSE_ACK;
    } else if (c->close_pending && c->close_due) {
        c->close_due = false;
        if (c->close_tries++ > c->attr.retry_cnt ||
            (c->close_tries > 1 && MROCE_FAULT(c->ctx, CLOSE_NO_RETRY))) {
            c->close_pending = false;
            c->state = MROCE_CONN_CLOSED;
            return 0;
        }
        /* R-CONN-8: the wait doubles with every CLOSE sent */
        c->close_at = now + req_close_wait(c);
        eng_conn_arm(c, c->close_at);
        h.opcode = MROCE_OP_CLOSE;
    } else {
        return 0;
    }
    h.ts = eng_ts(c, now);
    eng_req_meta(c, 0, meta);
    return eng_tx_ctl(c, &h, buf, eng_ctx_max_pkt(c->ctx));
}

/* Whether c has nothing to send but the ACKs and NACKs it owes, which
 * the transmit walk sends first through the ACK set (R-ACK-9): no CLOSE
 * or PROBE due, nothing to resend, no READ response in service and no
 * posted message left to send. eng_req_ctl_tx and eng_req_data_tx, once
 * those ACKs are gone, would return 0 and change nothing (they test
 * exactly these first). False when unsure. */
bool eng_req_spent(const struct mroce_conn *c)
{
    for (uint32_t i = 0; i < c->n_streams; i++)
        if (c->streams[i].sq_next != c->streams[i].sq_tail)
            return false;
    return !c->retx_count && !c->n_resp && !c->n_probe_due && !c->close_acks &&
           !c->close_pending;
}

/* What c sends before data, if anything: the NACK or ACK it owes
 * (R-ACK-9), a CLOSE or CLOSE_ACK (R-CONN-8), a PROBE due (R-PATH-8). */
int eng_req_ctl_tx(struct mroce_conn *c, uint64_t now, uint8_t *buf, size_t cap,
                   struct mroce_pkt_meta *meta)
{
    int n = eng_resp_ack_tx(c, now, buf, cap, meta);
    if (!n && (c->close_acks || c->close_pending))
        n = req_close(c, now, buf, meta);
    if (!n)
        n = eng_path_probe_tx(c, now, buf, cap, meta);
    return n;
}

/* c's next data packet: retransmissions first; one place writes it (its
 * only call: inlined here). 0 if none may go. */
int eng_req_data_tx(struct mroce_conn *c, uint64_t now, uint8_t *buf,
                    struct mroce_pkt_meta *meta)
{
    if (c->state != MROCE_CONN_CONNECTED)
        return 0;
    struct req_pick k;
    bool data = req_retx(c, now, &k);
    if (!data && c->state == MROCE_CONN_CONNECTED)
        data = req_new(c, now, &k);
    return data ? req_emit(c, &k, now, buf, meta) : 0;
}
