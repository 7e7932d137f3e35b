/* Completer: consumes ACKs and NACKs, detects loss from the per-path SACK,
 * retires work requests in stream order (R-SACK-*, R-LOSS-*, R-ORD-*). */
#include "engine/eng.h"
#include "wire/ackm.h"

static struct txp *comp_txp(struct mroce_conn *c, uint32_t dsn)
{
    if (seq_lt(dsn, c->snd_una) || !seq_lt(dsn, c->snd_next))
        return NULL;
    struct txp *x = eng_txp(c, dsn);
    return x->dsn == dsn ? x : NULL;
}

static uint8_t comp_wc_opcode(uint8_t op)
{
    switch (op) {
    case MROCE_OP_READ_REQ:
        return MROCE_WC_RDMA_READ;
    case MROCE_OP_SEND:
    case MROCE_OP_SEND_IMM:
        return MROCE_WC_SEND;
    default:
        return MROCE_WC_RDMA_WRITE;
    }
}

/* R-ORD-6: every DSN acknowledged; a READ also has all its response. */
static bool comp_done(const struct mroce_conn *c, const struct sq_slot *q)
{
    if (q->acked + MROCE_FAULT(c->ctx, COMPLETE_EARLY) < q->npkts)
        return false;
    return q->op != MROCE_OP_READ_REQ ||
           q->read_got + MROCE_FAULT(c->ctx, READ_DONE_EARLY) >=
               eng_npkts(q->wr.sge.length, c->mtu);
}

/* R-ORD-7: sender completions in post order per stream. */
void eng_comp_retire(struct mroce_conn *c, struct stream *s)
{
    while (s->msn_una != s->sq_next &&
           eng_sq(c, s, s->msn_una)->acked >= eng_sq(c, s, s->msn_una)->npkts)
        s->msn_una++;
    while (s->sq_head != s->sq_next && comp_done(c, eng_sq(c, s, s->sq_head))) {
        struct sq_slot *q = eng_sq(c, s, s->sq_head);
        struct mroce_wc wc = {.wr_id = q->wr.wr_id,
                              .conn = c,
                              .stream = (uint16_t)(s - c->streams),
                              .opcode = comp_wc_opcode(q->op),
                              .byte_len = q->wr.sge.length};
        if (q->op == MROCE_OP_READ_REQ)
            c->reads_out--;
        if (q->mr)
            q->mr->refs--;
        s->sq_head++;
        dev_cq_push(c->scq, &wc);
    }
}

static void comp_resp_acked(struct mroce_conn *c, struct rd_resp *r)
{
    if (++r->acked < r->npkts)
        return;
    eng_resp_release(c, r);
    /* a deferred READ may now start (R-MSG-13) */
    for (uint32_t i = 0; i < c->n_streams; i++)
        eng_resp_retire(c, &c->streams[i]);
}

/* Ends the connection because of packet x: its WR gets `status`; a READ
 * response being served fails no WR of ours, so everything flushes. */
void eng_comp_fail_txp(struct mroce_conn *c, const struct txp *x,
                       uint8_t status)
{
    if (x->kind == TXK_MSG)
        eng_conn_error(c, x->stream, x->msn, status);
    else
        eng_conn_error(c, 0, 0, 0);
}

/* R-RETRY-1: the oldest unacknowledged packet names the failed WR. */
void eng_comp_retry_exceeded(struct mroce_conn *c)
{
    struct txp *x = comp_txp(c, c->snd_una);
    if (x)
        eng_comp_fail_txp(c, x, MROCE_WC_RETRY_EXC_ERR);
    else
        eng_conn_error(c, 0, 0, 0);
}

/* x (comp_txp's, NULL: not outstanding) was acknowledged. */
static void comp_acked(struct mroce_conn *c, struct txp *x)
{
    if (!x || x->state == TXP_ACKED || x->state == TXP_FREE)
        return;
    if (x->state == TXP_RNR)
        c->n_rnr--;
    x->state = TXP_ACKED;
    if (x->kind == TXK_RESP) {
        comp_resp_acked(c, &c->resp[x->msn]);
    } else {
        struct stream *s = &c->streams[x->stream];
        struct sq_slot *q = eng_sq(c, s, x->msn);
        /* retiring moves only past messages whose last DSN (or, with
         * COMPLETE_EARLY, last but one) was acknowledged, and a READ's
         * response retires it itself (resp_after): a message still short
         * of that changes nothing (every packet of a long one came here) */
        if (++q->acked + 1 >= q->npkts)
            eng_comp_retire(c, s);
    }
    while (c->snd_una != c->snd_next &&
           eng_txp(c, c->snd_una)->state == TXP_ACKED)
        eng_txp(c, c->snd_una++)->state = TXP_FREE;
}

void eng_comp_dsn_acked(struct mroce_conn *c, uint32_t dsn)
{
    comp_acked(c, comp_txp(c, dsn));
}

/* R-LOSS-5: a lost packet is queued for retransmission with its DSN. */
void eng_comp_lost(struct mroce_conn *c, uint32_t dsn)
{
    struct txp *x = comp_txp(c, dsn);
    if (!x || x->state != TXP_OUT)
        return;
    if (eng_mem_retx_room(c)) { /* out of memory: nothing to resend with */
        eng_conn_error(c, 0, 0, 0);
        return;
    }
    x->state = TXP_LOST;
    c->retx[(c->retx_head + c->retx_count++) & c->retx_mask] = dsn;
}

static void comp_advance_una(struct path_tx *pt)
{
    while (pt->una != pt->next_psn && !pt->psn_len[eng_psn_slot(pt, pt->una)])
        pt->una++;
}

/* A transmission stops being in flight: off its path's bytes, and off the
 * connection's bytes and its DSN's live copies unless a tail-loss probe
 * took it off those already (R-RTT-7, R-LOSS-5). */
static void comp_release(struct mroce_conn *c, struct path_tx *pt,
                         uint32_t slot, struct txp *x)
{
    pt->inflight -= ENG_PSN_BYTES(slot);
    if (slot & ENG_PSN_RESENT)
        return;
    eng_conn_uncharge(c, ENG_PSN_BYTES(slot));
    if (x && x->copies)
        x->copies--;
}

/* R-RTT-7: PSN slot i of pt goes silent and its DSN is sent again
 * elsewhere; it stays unresolved on pt but stops counting in the
 * connection's window and as a copy that may still arrive (R-LOSS-5), so
 * the loss of the new copy resends the DSN at once. */
void eng_comp_resent(struct mroce_conn *c, struct path_tx *pt, uint32_t i)
{
    uint16_t len = pt->psn_len[i];
    struct txp *x = comp_txp(c, pt->psn_dsn[i]);
    if (!(len & ENG_PSN_RESENT)) {
        eng_conn_uncharge(c, ENG_PSN_BYTES(len));
        if (x && x->copies)
            x->copies--;
        pt->psn_len[i] = (uint16_t)(len | ENG_PSN_RESENT);
    }
    /* R-RTT-7: at most ENG_TLP_GENS times per DSN until an ACK shows the
     * peer alive: when the peer itself is silent (a stalled process)
     * copies cannot help, and each copy's own probe would send the next */
    if (!x || x->state != TXP_OUT)
        return;
    if (x->tlp_epoch != c->alive + 1) {
        x->tlp_epoch = c->alive + 1;
        x->tlp_gens = 0;
    }
    if (x->tlp_gens >= ENG_TLP_GENS)
        return;
    x->tlp_gens++;
    eng_comp_lost(c, pt->psn_dsn[i]);
}

/* The data transmission in slot i of path p, unresolved with psn_len
 * `slot`, resolves with `fate`; x is its DSN's (comp_txp's). */
static inline void comp_resolve_data(struct mroce_conn *c, uint16_t p,
                                     struct path_tx *pt, uint32_t i,
                                     uint32_t slot, struct txp *x, int fate)
{
    pt->psn_len[i] = 0;
    comp_release(c, pt, slot, x);
    if (!pt->inflight)
        eng_rack_check(c, p); /* no data left unresolved (R-LOSS-8) */
    if (fate == ENG_ACKED) {
        pt->st.acked_pkts++;
        comp_acked(c, x);
    } else {
        pt->st.lost_pkts++;
        if (!(slot & ENG_PSN_RESENT)) /* else a tail-loss probe counted it */
            ++*(fate == ENG_TIMEOUT ? &c->cnt.lost_rto : &c->cnt.lost_sack);
        if (x && !x->copies) /* R-LOSS-5: not while a copy may arrive */
            eng_comp_lost(c, pt->psn_dsn[i]);
    }
    comp_advance_una(pt); /* the caller updates p's bits (pathset.c) */
}

/* Slot i of path p, an unresolved PSN in [una, next_psn) with psn_len
 * `slot`, resolves with `fate`. */
static inline void comp_resolve_slot(struct mroce_conn *c, uint16_t p,
                                     struct path_tx *pt, uint32_t i,
                                     uint32_t slot, int fate)
{
    if (slot & ENG_PSN_PROBE) {
        pt->psn_len[i] = 0;
        comp_advance_una(pt);
        return;
    }
    comp_resolve_data(c, p, pt, i, slot, comp_txp(c, pt->psn_dsn[i]), fate);
}

void eng_comp_resolve_psn(struct mroce_conn *c, uint16_t p, uint32_t psn,
                          int fate)
{
    struct path_tx *pt = &c->ptx[p];
    uint32_t i = eng_psn_slot(pt, psn);
    uint32_t slot = pt->psn_len[i];
    if (!slot || seq_lt(psn, pt->una) || !seq_lt(psn, pt->next_psn))
        return;
    comp_resolve_slot(c, p, pt, i, slot, fate);
}

/* ---- ACK processing ---- */

struct ack_sum {
    uint32_t bytes, pkts;
    bool lost, high_new, high_data;
    bool lost_data; /* a data transmission resolved as lost */
    bool overtaken; /* ... and a PROBE sent after it delivered (R-PATH-16) */
};

/* R-VAL-1: the SACK part of an ACK is evidence only if sack_high is a PSN
 * of the path we sent (among the last ring_fill, whose ts we still hold),
 * its bit 0 is set, and echo_ts is the ts we sent that PSN with: a blind
 * forger must guess a PSN in flight and a ts with a random offset. */
static bool comp_sack_valid(const struct mroce_conn *c,
                            const struct path_tx *pt, const struct mroce_hdr *h)
{
    uint32_t back = pt->next_psn - 1 - h->sack_high;
    return back < pt->ring_fill &&
           (mroce_sack_test(h->sack, 0) ||
            MROCE_FAULT(c->ctx, BIT0_UNCHECKED)) &&
           (*eng_psn_ts(pt, eng_psn_slot(pt, h->sack_high)) == h->echo_ts ||
            MROCE_FAULT(c->ctx, ECHO_UNCHECKED));
}

/* R-VAL-4: an ACK's MTH psn names the PROBE it answers (else its
 * sack_high): evidence for that PROBE if the PROBE is ours and
 * unresolved. */
static bool comp_echo_valid(const struct path_tx *pt, const struct mroce_hdr *h)
{
    if (seq_lt(h->psn, pt->una) || !seq_lt(h->psn, pt->next_psn))
        return false;
    return pt->psn_len[eng_psn_slot(pt, h->psn)] & ENG_PSN_PROBE;
}

/* Slot i of path p, an unresolved PSN of it with psn_len `slot` that the
 * ACK shows delivered (`got`) or lost, resolves and counts in sum; `high`:
 * it is the ACK's sack_high. */
static inline void comp_sum(struct mroce_conn *c, uint16_t p, uint32_t i,
                            uint32_t slot, bool got, bool high,
                            struct ack_sum *sum)
{
    bool probe = slot & ENG_PSN_PROBE;
    if (got) {
        sum->bytes += probe ? 0 : ENG_PSN_BYTES(slot);
        sum->pkts++;
        sum->high_new |= high;
        sum->high_data |= high && !probe;
        sum->overtaken |= probe && sum->lost_data; /* PSNs ascend */
    } else {
        sum->lost = true;
        sum->lost_data |= !probe;
    }
    comp_resolve_slot(c, p, &c->ptx[p], i, slot, got ? ENG_ACKED : ENG_LOST);
}

/* R-LOSS-1: every unresolved PSN at or below sack_high whose bit is clear
 * is lost, because a path does not reorder. The SACK part is evidence,
 * so sack_high is below next_psn (comp_sack_valid). */
static void comp_sack(struct mroce_conn *c, uint16_t p,
                      const struct mroce_hdr *h, struct ack_sum *sum)
{
    struct path_tx *pt = &c->ptx[p];
    for (uint32_t psn = pt->una; seq_le(psn, h->sack_high); psn++) {
        uint32_t back = h->sack_high - psn, i = eng_psn_slot(pt, psn);
        uint32_t slot = pt->psn_len[i];
        if (!slot)
            continue;
        bool got = (back < MROCE_SACK_BITS && mroce_sack_test(h->sack, back)) ||
                   MROCE_FAULT(c->ctx, SACK_HOLES_DELIVERED);
        if (!got && MROCE_FAULT(c->ctx, SACK_HOLES_WAIT))
            continue;
        comp_sum(c, p, i, slot, got, back == 0, sum);
    }
}

/* R-VAL-4: the echoed PROBE arrived, so every transmission of its path
 * sent before it that the SACK part did not resolve was lost (a path
 * does not reorder). The echo is evidence: h->psn is below next_psn. */
static void comp_echo(struct mroce_conn *c, uint16_t p,
                      const struct mroce_hdr *h, struct ack_sum *sum)
{
    struct path_tx *pt = &c->ptx[p];
    for (uint32_t psn = pt->una; seq_le(psn, h->psn); psn++) {
        uint32_t i = eng_psn_slot(pt, psn), slot = pt->psn_len[i];
        if (slot)
            comp_sum(c, p, i, slot, psn == h->psn, false, sum);
    }
}

/* R-VAL-4: an echo shows the peer holding a PSN of ours never sent (a
 * forged packet was recorded there): once nothing of ours is unresolved
 * on the path, its PSNs go on after it, so that the peer records them. */
static void comp_resync(struct mroce_conn *c, struct path_tx *pt,
                        const struct mroce_hdr *h)
{
    uint32_t ahead = h->sack_high - pt->next_psn;
    if (ahead >= ENG_RESYNC_MAX || pt->una != pt->next_psn)
        return;
    pt->una = pt->next_psn = h->sack_high + 1;
    pt->ring_fill = 0; /* no slot holds one of the new PSNs' ts yet */
    c->cnt.psn_resyncs++;
}

static void comp_path_progress(struct mroce_conn *c, uint16_t p, uint64_t now);

/* R-ACK-100: a DSN that dsn_cum acknowledges and whose latest
 * transmission is its only copy resolves that transmission as delivered;
 * the path made progress and its controller hears of the bytes (no RTT
 * sample: the ACK echoes another packet). Other copies (a retransmission
 * with a second copy out, one resent by a tail-loss probe) are left to
 * their paths' own ACKs, which the RETX flag or the probe's PROBE ask
 * for. The path joins `progressed` (its pathset bits, comp_cum). */
static void comp_cum_resolve(struct mroce_conn *c, struct txp *x, uint32_t dsn,
                             uint64_t now, uint64_t *progressed)
{
    if (!x || x->state != TXP_OUT || x->copies != 1)
        return;
    struct path_tx *pt = &c->ptx[x->last_path];
    uint32_t psn = x->last_psn, i = eng_psn_slot(pt, psn);
    uint16_t len = pt->psn_len[i];
    if (!len || (len & (ENG_PSN_PROBE | ENG_PSN_RESENT)) ||
        pt->psn_dsn[i] != dsn || seq_lt(psn, pt->una) ||
        !seq_lt(psn, pt->next_psn))
        return;
    comp_resolve_data(c, x->last_path, pt, i, len, x, ENG_ACKED);
    comp_path_progress(c, x->last_path, now);
    mroce_cc_aimd.on_ack(&c->cc, &pt->cc, ENG_PSN_BYTES(len), false, 0, now);
    progressed[x->last_path / 64] |= (uint64_t)1 << (x->last_path % 64);
}

/* R-ACK-7 step 2. The paths whose packets dsn_cum resolved (R-ACK-100)
 * get their state and window bits (R-PATH-13) once, after the walk: only
 * a path choice reads them, and none happens while an ACK is processed. */
static void comp_cum(struct mroce_conn *c, uint32_t dsn_cum, uint64_t now)
{
    if (!seq_lt(c->snd_una, dsn_cum))
        return; /* most ACKs: nothing new below dsn_cum */
    uint64_t progressed[ENG_MAX_PATHS / 64] = {0};
    for (uint32_t d = c->snd_una;
         seq_lt(d, dsn_cum) && c->state == MROCE_CONN_CONNECTED; d++) {
        struct txp *x = comp_txp(c, d);
        comp_cum_resolve(c, x, d, now, progressed);
        comp_acked(c, x); /* comp_txp(c, d) would find x or nothing */
    }
    eng_pset_acked_paths(c, progressed);
}

/* R-ACK-7 step 3: a PSN of the path was acknowledged: it is alive (R-PATH-3),
 * the connection progresses (R-RETRY-1) and the timer restarts (R-RTT-5). */
static void comp_path_progress(struct mroce_conn *c, uint16_t p, uint64_t now)
{
    struct path_tx *pt = &c->ptx[p];
    c->established = true; /* R-VAL-7 */
    pt->last_progress = now;
    pt->tlp_done = false;
    c->backoff = MROCE_FAULT(c->ctx, BACKOFF_KEPT) ? c->backoff : 0;
    c->alive++;
    eng_path_alive(c, pt);
    eng_plane_good(c->ctx, pt->plane);
    pt->rto_at =
        pt->una != pt->next_psn ? now + eng_path_rto(c, pt) : ENG_NEVER;
    eng_rack_check(c, p);
    eng_path_pto_arm(c, p); /* re-keys all of p's timers */
}

/* R-ACK-7: ACKs are sprayed and may arrive out of order; only an ACK that
 * reports more received packets than any before may report new CE marks. */
static uint16_t comp_new_ce(const struct mroce_conn *c, struct path_tx *pt,
                            const struct mroce_hdr *h)
{
    if ((int16_t)(h->rx_count - pt->rx_seen) <= 0 &&
        !MROCE_FAULT(c->ctx, CE_OLD_ACK))
        return 0;
    uint16_t ce = (uint16_t)(h->ce_count - pt->ce_seen);
    pt->rx_seen = h->rx_count;
    pt->ce_seen = h->ce_count;
    pt->st.ecn_marks += ce;
    return ce;
}

/* R-CC-3: the path's min RTT (else SRTT), at most the fabric's base RTT
 * when one is configured: a first sample taken behind a queue would
 * otherwise size the window to keep that queue. */
static uint64_t comp_hint_rtt(const struct mroce_conn *c,
                              const struct path_tx *pt)
{
    uint64_t r = pt->min_rtt ? pt->min_rtt : pt->srtt;
    uint64_t base = c->ctx->base_rtt_ns;
    return base && (!r || r > base) ? base : r;
}

/* R-LOSS-8: how much longer than `ack_delay` the peer may have held the
 * ACK of the sack_high packet (R-ACK-1 case 3, a hold scaled to the
 * granted rate): nothing if that packet, the path's newest, asked for an
 * ACK at once. A hold of `ack_delay` is within the spread R-LOSS-8's
 * window allows for. */
static uint64_t comp_held(const struct mroce_conn *c, const struct path_tx *pt,
                          const struct mroce_hdr *h)
{
    if (h->sack_high == pt->next_psn - 1 && pt->newest_ackreq)
        return 0;
    return eng_peer_hold(c) - c->peer_ack_delay_ns;
}

/* R-RTT-1, R-ACKM-6: the RTT sample of an ACK (0: none), and the path's
 * own, less the time the peer held a record; R-LOSS-8 takes the whole
 * sample, as the ACK's arrival shows when the next will come. */
static uint64_t comp_rtt(struct mroce_conn *c, struct path_tx *pt, uint64_t now,
                         const struct mroce_hdr *h, const struct ack_sum *sum,
                         uint32_t hold)
{
    uint32_t d = eng_ts(c, now) - h->echo_ts; /* R-RTT-1 */
    if (d >= 0x80000000u || !d)               /* a bogus echo: no sample */
        return 0;
    if (hold >= d) /* R-ACKM-6: a hold longer than the RTT is no sample */
        return 0;
    eng_path_rtt_sample(c, pt, d - hold);
    if (sum->high_data) /* PROBEs may overtake data (R-LOSS-8) */
        eng_rack_delivered(c, pt->plane, now, d,
                           hold ? 0 : comp_held(c, pt, h));
    return d - hold;
}

/* R-CC-3: the peer grants `mbps` now; the hold it gives (eng_conn_hint)
 * changes only with it. */
static void comp_hint(struct mroce_conn *c, uint32_t mbps)
{
    if (mbps == c->rate_hint_mbps)
        return;
    bool first = !c->rate_hint_mbps;
    eng_conn_hint(c, mbps);
    if (first)
        eng_path_first_hint(c);
}

static void comp_cc(struct mroce_conn *c, struct path_tx *pt, uint64_t now,
                    const struct mroce_hdr *h, const struct ack_sum *sum,
                    uint32_t hold)
{
    uint64_t rtt = 0;
    if (sum->high_new || MROCE_FAULT(c->ctx, RTT_ANY_ACK))
        rtt = comp_rtt(c, pt, now, h, sum, hold);
    uint16_t ce = comp_new_ce(c, pt, h);
    if (sum->lost)
        mroce_cc_aimd.on_loss(&c->cc, &pt->cc, now);
    if (sum->bytes || ce)
        mroce_cc_aimd.on_ack(&c->cc, &pt->cc, sum->bytes, ce != 0, rtt, now);
    if (h->rate_mbps != c->rate_hint_mbps || rtt) { /* R-CC-3 */
        comp_hint(c, h->rate_mbps);
        mroce_cc_aimd.on_rate_hint(&c->cc, h->rate_mbps, comp_hint_rtt(c, pt),
                                   now);
    }
}

/* R-VAL-1, R-VAL-4: what the ACK for h->path is evidence of: its SACK
 * part (COMP_EV_SACK), the PROBE it echoes (COMP_EV_ECHO); 0: nothing of
 * ours. Found once, when the ACK (or ACKM) is checked: processing it
 * (one part of an ACKM before the next) changes neither for the parts
 * still to come, which name other paths (R-ACKM-5). Inline: every ACK
 * and every ACKM record asks. */
enum { COMP_EV_SACK = 1, COMP_EV_ECHO = 2 };

static inline __attribute__((always_inline)) unsigned
comp_ack_ev(const struct mroce_conn *c, const struct mroce_hdr *h)
{
    const struct path_tx *pt = &c->ptx[h->path];
    return (comp_sack_valid(c, pt, h) ? COMP_EV_SACK : 0) |
           (comp_echo_valid(pt, h) ? COMP_EV_ECHO : 0);
}

/* R-ACK-7 for the path of h, evidence `ev` (comp_ack_ev); the ACK's
 * dsn_cum (step 2) only if `cum` (an ACKM's records leave it to the
 * ACKM's own path, R-ACKM-5). */
static void comp_ack_path(struct mroce_conn *c, uint64_t now,
                          const struct mroce_hdr *h, unsigned ev, uint32_t hold,
                          bool cum)
{
    struct path_tx *pt = &c->ptx[h->path];
    struct ack_sum sum = {0};
    bool sack = ev & COMP_EV_SACK, echo = ev & COMP_EV_ECHO;
    if (sack)
        comp_sack(c, h->path, h, &sum);
    if (echo)
        comp_echo(c, h->path, h, &sum);
    if (echo && !sack && seq_lt(pt->next_psn - 1, h->sack_high))
        comp_resync(c, pt, h);
    if (cum)
        comp_cum(c, h->dsn_cum, now);
    if (sum.pkts)
        comp_path_progress(c, h->path, now);
    if (sum.overtaken) /* R-PATH-16: data held back where PROBEs pass */
        eng_path_repath(c, h->path);
    comp_cc(c, pt, now, h, &sum, hold);
    eng_pset_update(c, h->path); /* its state, window and RTT */
}

/* R-ACK-6: an ACK that is no evidence is dropped whole. Returns its
 * evidence (comp_ack_ev), 0 when it is dropped. */
static unsigned comp_ack_start(struct mroce_conn *c, const struct mroce_hdr *h)
{
    c->cnt.rx_acks++;
    if (c->state != MROCE_CONN_CONNECTED) {
        c->cnt.drop_state++;
        return 0;
    }
    unsigned ev = comp_ack_ev(c, h);
    if (!ev || (seq_lt(c->snd_next, h->dsn_cum) &&
                !MROCE_FAULT(c->ctx, DSN_CUM_TRUSTED))) {
        c->cnt.drop_bad_ack++; /* R-VAL-1: names nothing of ours */
        return 0;
    }
    return ev;
}

void eng_comp_ack(struct mroce_conn *c, uint64_t now, const struct mroce_hdr *h)
{
    unsigned ev = comp_ack_start(c, h);
    if (ev)
        comp_ack_path(c, now, h, ev, 0, true);
}

/* The ACKs an ACKM's records stand for (R-ACKM-5), decoded once, and
 * what record i is evidence of (comp_ack_ev; 0: stale). */
struct ackm_parts {
    struct mroce_ackm_rec rec[MROCE_ACKM_MAX_RECS];
    uint8_t ev[MROCE_ACKM_MAX_RECS];
};

/* r, the ACKM as an ACK (its dsn_cum and rate_mbps are the records'
 * too), becomes the ACK for record rec's path that rec stands for. */
static void comp_rec_hdr(const struct mroce_ackm_rec *rec, struct mroce_hdr *r)
{
    r->path = rec->path;
    r->psn = rec->sack_high; /* a record answers no PROBE */
    r->sack_high = rec->sack_high;
    r->echo_ts = rec->echo_ts;
    r->ce_count = rec->ce_count;
    r->rx_count = rec->rx_count;
    memcpy(r->sack, rec->sack, sizeof(r->sack));
}

/* R-ACKM-5: a part of an ACKM overtaken by later ones: all its path's
 * PSNs up to sack_high resolved, and sack_high's ts no longer held. It
 * tells nothing and is skipped, not taken as a forgery. */
static bool comp_rec_stale(const struct mroce_conn *c,
                           const struct mroce_hdr *r)
{
    const struct path_tx *pt = &c->ptx[r->path];
    return seq_lt(r->sack_high, pt->una) &&
           pt->next_psn - 1 - r->sack_high >= pt->ring_fill;
}

/* R-ACKM-5: every record names a path of the connection other than the
 * ACKM's own, once, and is evidence as an ACK for it would be, or
 * stale; `own`: the ACKM's own path is evidence. At least one part must
 * be evidence, or the ACKM proves nothing about the peer (R-VAL-1). */
static bool comp_ackm_ok(const struct mroce_conn *c, const struct mroce_hdr *h,
                         unsigned n, bool own, struct ackm_parts *parts)
{
    uint64_t seen[4] = {0};
    bool evidence = own;
    seen[h->path >> 6] |= (uint64_t)1 << (h->path & 63);
    struct mroce_hdr r = *h;
    r.opcode = MROCE_OP_ACK;
    for (unsigned i = 0; i < n; i++) {
        mroce_ackm_get(h, i, &parts->rec[i]);
        comp_rec_hdr(&parts->rec[i], &r);
        if (r.path >= c->n_paths)
            return false;
        if ((seen[r.path >> 6] >> (r.path & 63)) & 1 &&
            !MROCE_FAULT(c->ctx, ACKM_PATH_UNCHECKED))
            return false;
        unsigned ev = comp_ack_ev(c, &r);
        if (!ev &&
            (MROCE_FAULT(c->ctx, ACKM_STALE_DROPS) || !comp_rec_stale(c, &r)) &&
            !MROCE_FAULT(c->ctx, ACKM_PARTIAL_CHECK))
            return false;
        evidence |= ev != 0;
        parts->ev[i] = (uint8_t)ev;
        seen[r.path >> 6] |= (uint64_t)1 << (r.path & 63);
    }
    return evidence;
}

/* R-ACKM-5: the whole ACKM is checked before any part of it acts.
 * Returns its record count, or -1 when it is dropped. */
static int comp_ackm_check(struct mroce_conn *c, const struct mroce_hdr *h,
                           uint32_t *hold, unsigned *own,
                           struct ackm_parts *parts)
{
    c->cnt.rx_acks++;
    if (c->state != MROCE_CONN_CONNECTED) {
        c->cnt.drop_state++;
        return -1;
    }
    int n = mroce_ackm_check(h, hold);
    *own = comp_ack_ev(c, h);
    if (n < 0 || (!*own && !comp_rec_stale(c, h)) ||
        (seq_lt(c->snd_next, h->dsn_cum) &&
         !MROCE_FAULT(c->ctx, DSN_CUM_TRUSTED)) ||
        !comp_ackm_ok(c, h, (unsigned)n, *own, parts)) {
        c->cnt.drop_bad_ack++; /* nothing of it acts */
        return -1;
    }
    return n;
}

void eng_comp_ackm(struct mroce_conn *c, uint64_t now,
                   const struct mroce_hdr *h)
{
    if (!c->ackm && !MROCE_FAULT(c->ctx, ACKM_RX_UNNEGOTIATED)) {
        /* R-VER-5: not in effect, an unknown opcode */
        c->ctx->cnt.drop_bad_opcode++;
        return;
    }
    uint32_t hold;
    unsigned own;
    struct ackm_parts parts;
    int n = comp_ackm_check(c, h, &hold, &own, &parts);
    struct mroce_hdr r = *h;
    r.opcode = MROCE_OP_ACK;
    /* R-ACKM-5: the records first, so that the ACKM's dsn_cum does not
     * resolve their packets without their RTT samples (R-ACK-100) */
    for (int i = 0; i < n && c->state == MROCE_CONN_CONNECTED; i++) {
        if (!parts.ev[i]) { /* stale: not even its CE marks */
            c->cnt.drop_stale++;
            continue;
        }
        comp_rec_hdr(&parts.rec[i], &r);
        comp_ack_path(c, now, &r, parts.ev[i], parts.rec[i].hold_ns, false);
        c->cnt.rx_ackm_recs++;
    }
    if (n < 0 || c->state != MROCE_CONN_CONNECTED)
        return;
    if (own) {
        comp_ack_path(c, now, h, own, hold, true);
        return;
    }
    c->cnt.drop_stale++; /* its own path stale: only dsn_cum acts */
    comp_cum(c, h->dsn_cum, now);
}

/* ---- NACK processing (R-NACK-*, R-RETRY-4) ---- */

static uint8_t comp_nak_status(const struct mroce_conn *c, uint8_t code)
{
    switch (code) {
    case MROCE_NAK_REMOTE_ACCESS:
        return MROCE_FAULT(c->ctx, NACK_STATUS_SWAP) ? MROCE_WC_REM_OP_ERR
                                                     : MROCE_WC_REM_ACCESS_ERR;
    case MROCE_NAK_INVALID_REQUEST:
        return MROCE_WC_REM_INV_REQ_ERR;
    default:
        return MROCE_WC_REM_OP_ERR;
    }
}

/* R-RETRY-4: the NACK's delay (0: ours), but no longer than the peer
 * announced it would ask (rnr_max, R-CONN-3) nor than max_rto: a longer
 * one is capped and counted. */
static uint64_t comp_rnr_wait(struct mroce_conn *c, uint32_t delay_us)
{
    uint64_t cap = c->attr.max_rto_ns;
    if (!delay_us) /* the NACK asks nothing: our own default */
        return (uint64_t)ENG_RNR_DELAY_US * 1000 < cap
                   ? (uint64_t)ENG_RNR_DELAY_US * 1000
                   : cap;
    uint64_t peer = (uint64_t)c->peer_rnr_max_us * 1000;
    if (peer && peer < cap)
        cap = peer;
    uint64_t wait = (uint64_t)delay_us * 1000;
    if (wait <= cap || MROCE_FAULT(c->ctx, RNR_UNCAPPED))
        return wait;
    c->cnt.rnr_capped++;
    return cap;
}

static void comp_rnr(struct mroce_conn *c, struct txp *x, uint64_t now,
                     uint32_t delay_us)
{
    if (c->attr.rnr_retry != 7 && ++x->rnr_retries > c->attr.rnr_retry &&
        !MROCE_FAULT(c->ctx, RNR_LIMIT_OFF)) {
        eng_comp_fail_txp(c, x, MROCE_WC_RNR_RETRY_EXC_ERR);
        return;
    }
    if (x->tx_count && /* R-RETRY-4: not counted toward R-RETRY-1's 64 */
        !MROCE_FAULT(c->ctx, RNR_COUNTED))
        x->tx_count--;
    c->cnt.lost_rnr++;
    x->state = TXP_RNR;
    uint64_t wait = comp_rnr_wait(c, delay_us);
    x->rnr_at = now + (MROCE_FAULT(c->ctx, RNR_NO_WAIT) ? 0 : wait);
    eng_conn_arm(c, x->rnr_at);
    c->n_rnr++;
}

/* R-NACK-5: the refused PSN was not acknowledged: stop counting it in
 * flight, and stop the path's timer if nothing else is outstanding on it. */
static void comp_nak_release(struct mroce_conn *c, const struct mroce_hdr *h)
{
    struct path_tx *pt = &c->ptx[h->path];
    uint32_t i = eng_psn_slot(pt, h->psn);
    if (!seq_lt(h->psn, pt->next_psn) || seq_lt(h->psn, pt->una) ||
        pt->psn_dsn[i] != h->dsn || !pt->psn_len[i] ||
        (pt->psn_len[i] & ENG_PSN_PROBE))
        return;
    comp_release(c, pt, pt->psn_len[i], comp_txp(c, h->dsn));
    pt->psn_len[i] = 0;
    comp_advance_una(pt);
    if (pt->una == pt->next_psn) {
        pt->rto_at = ENG_NEVER;
        eng_ptimer_set(c, h->path);
    }
    eng_rack_check(c, h->path);
    eng_pset_update(c, h->path);
}

/* R-NACK-4: the DSN must be outstanding and belong to the named message. */
static struct txp *comp_nak_txp(struct mroce_conn *c, const struct mroce_hdr *h)
{
    struct txp *x = comp_txp(c, h->dsn);
    if (!x || x->state == TXP_ACKED || x->state == TXP_RNR)
        return NULL;
    const struct rd_resp *r = &c->resp[x->msn];
    if ((x->kind == TXK_MSG ? x->stream != h->stream || x->msn != h->msn
                            : r->stream != h->stream || r->msn != h->msn) &&
        !MROCE_FAULT(c->ctx, NACK_MSN_UNCHECKED))
        return NULL; /* R-VAL-6: a READ response names its READ */
    return x;
}

/* R-NACK-4: a fatal NACK for a message whose packets are all sent (a
 * READ the responder could not execute, R-MSG-17) names it by stream and
 * MSN. */
static bool comp_nak_wr(struct mroce_conn *c, const struct mroce_hdr *h)
{
    if (h->stream >= c->n_streams)
        return false;
    struct stream *s = &c->streams[h->stream];
    if (seq_lt(h->msn, s->sq_head) || !seq_lt(h->msn, s->sq_next))
        return false;
    /* R-VAL-6: and it carries a DSN the message's packets took */
    const struct sq_slot *q = eng_sq(c, s, h->msn);
    if ((seq_lt(h->dsn, q->first_dsn) || seq_lt(q->last_dsn, h->dsn)) &&
        !MROCE_FAULT(c->ctx, NACK_WR_DSN_UNCHECKED))
        return false;
    eng_conn_error(c, h->stream, h->msn, comp_nak_status(c, h->nak_code));
    return true;
}

void eng_comp_nak(struct mroce_conn *c, uint64_t now, const struct mroce_hdr *h)
{
    c->cnt.rx_nacks++;
    if (c->state != MROCE_CONN_CONNECTED) {
        c->cnt.drop_state++;
        return;
    }
    if ((h->nak_code < MROCE_NAK_RNR || h->nak_code > MROCE_NAK_CONN_CLOSED) &&
        !MROCE_FAULT(c->ctx, RESERVED_NACK_FATAL)) {
        c->cnt.drop_stale++; /* R-NACK-2: reserved syndrome, ignored */
        return;
    }
    struct txp *x = comp_nak_txp(c, h);
    if (x && !MROCE_FAULT(c->ctx, NACK_NO_RELEASE))
        comp_nak_release(c, h);
    if (h->nak_code == MROCE_NAK_RNR && x)
        comp_rnr(c, x, now, h->nak_info);
    else if (h->nak_code != MROCE_NAK_RNR && x)
        eng_comp_fail_txp(c, x, comp_nak_status(c, h->nak_code));
    else if (h->nak_code == MROCE_NAK_RNR || !comp_nak_wr(c, h))
        c->cnt.drop_stale++;
}

/* R-VAL-7: a READ response waits until the peer has shown that it holds
 * this connection (an ACK resolving one of our transmissions); when
 * nothing of ours is in flight to draw one, a PROBE does. */
void eng_comp_prove(struct mroce_conn *c)
{
    c->established |= MROCE_FAULT(c->ctx, READ_BEFORE_PROOF);
    if (c->established || c->n_probe_due || c->state != MROCE_CONN_CONNECTED ||
        MROCE_FAULT(c->ctx, NO_PROOF_PROBE))
        return;
    for (uint32_t p = 0; p < c->n_paths; p++)
        if (c->ptx[p].una != c->ptx[p].next_psn)
            return; /* its ACK, or its RTO's PROBE, will do */
    for (uint32_t i = 0; i < c->n_paths; i++) {
        struct path_tx *pt = &c->ptx[(c->rr_path + i) % c->n_paths];
        if (pt->state == PATH_ACTIVE) {
            pt->probe_due = true;
            c->n_probe_due++;
            return;
        }
    }
}

/* R-RETRY-6: a READ whose request was acknowledged waits for the
 * responder's data with nothing of ours in flight, so no timer would
 * notice a peer that vanished. While READs wait, the connection checks
 * the peer every two RTOs: a PROBE on an active path, which either is
 * acknowledged or ends in an RTO and the usual retry rounds. */
void eng_comp_read_watch(struct mroce_conn *c, uint64_t now)
{
    if (MROCE_FAULT(c->ctx, READ_WATCH_OFF))
        return;
    c->read_watch = now + 2 * eng_path_rto(c, &c->ptx[0]);
    eng_conn_arm(c, c->read_watch);
}

static void comp_read_watch_fire(struct mroce_conn *c, uint64_t now)
{
    if (!c->reads_out || c->state != MROCE_CONN_CONNECTED) {
        c->read_watch = ENG_NEVER;
        return;
    }
    for (uint32_t i = 0; i < c->n_paths && c->snd_una == c->snd_next; i++) {
        struct path_tx *pt = &c->ptx[(c->rr_path + i) % c->n_paths];
        if (pt->state != PATH_ACTIVE || pt->probe_due)
            continue;
        pt->probe_due = true;
        c->n_probe_due++;
        break;
    }
    eng_comp_read_watch(c, now);
}

/* RNR waits that are over go back to the retransmission queue. */
void eng_comp_timers(struct mroce_conn *c, uint64_t now)
{
    if (c->read_watch <= now)
        comp_read_watch_fire(c, now);
    for (uint32_t d = c->snd_una; c->n_rnr && d != c->snd_next; d++) {
        struct txp *x = eng_txp(c, d);
        if (x->state != TXP_RNR || x->rnr_at > now)
            continue;
        c->n_rnr--;
        x->state = TXP_OUT;
        eng_comp_lost(c, d);
    }
}
