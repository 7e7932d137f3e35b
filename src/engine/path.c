/* Paths: per-path RTT and timers, the path state machine, re-pathing,
 * probes, path choice, and the receiver's SACK bitmap (R-PATH-*, R-RTT-*,
 * R-SACK-4, R-SACK-5). */
#include "engine/eng.h"

#define PATH_MIN_PTO 10000 /* ns */

static bool path_port_used(const struct mroce_conn *c, uint16_t port)
{
    for (uint32_t p = 0; p < c->n_paths; p++)
        if (c->ptx[p].src_port == port)
            return true;
    return false;
}

/* R-PATH-5: a fresh source port, distinct from the connection's others. */
static uint16_t path_new_port(struct mroce_conn *c)
{
    uint16_t port;
    do
        port = eng_rand_port(c->ctx);
    while (path_port_used(c, port));
    return port;
}

void eng_path_init(struct mroce_conn *c, uint16_t p)
{
    struct path_tx *pt = &c->ptx[p];
    pt->src_port = MROCE_FAULT(c->ctx, PORT_SHARED) && p ? c->ptx[0].src_port
                                                         : path_new_port(c);
    pt->plane = (uint8_t)(p % c->ctx->dev.n_planes); /* R-ENC-10 */
    pt->state = PATH_ACTIVE;
    pt->rto = c->attr.min_rto_ns * 5;
    if (pt->rto > c->attr.max_rto_ns)
        pt->rto = c->attr.max_rto_ns;
    pt->rto_at = pt->probe_at = pt->pto_at = ENG_NEVER;
    pt->drain_ns = ENG_DRAIN_UNKNOWN;
    pt->next_psn = pt->una = c->local.init_psn; /* R-CONN-5 */
    c->prx[p].high = c->remote.init_psn - 1;    /* R-SACK-4 */
    eng_ptimer_init(c, p);
    eng_pset_update(c, p);
}

/* R-RTT-4: once the connection has its first RTT sample and its first
 * rate hint, paths that sent before them and have no sample of their own
 * trade the blind initial RTO (5 x min_rto) for the borrowed one plus the
 * drain time of what was ahead of their newest packet (R-RTT-7): a first
 * packet lost is not waited for 500 us, one queued behind an incast's
 * first burst is not declared lost. */
static void path_rearm_blind(struct mroce_conn *c)
{
    for (uint32_t p = 0; p < c->n_paths; p++) {
        struct path_tx *q = &c->ptx[p];
        if (q->srtt || q->una == q->next_psn || q->rto_at == ENG_NEVER ||
            q->drain_ns == ENG_DRAIN_UNKNOWN)
            continue;
        uint64_t t = q->last_progress + eng_path_rto(c, q) + q->drain_ns;
        if (t < q->rto_at)
            q->rto_at = t;
        eng_ptimer_set(c, (uint16_t)p);
    }
}

/* R-RTT-7: the probes of every path can be timed now (the connection's
 * first RTT sample or first rate hint): once per connection. */
static void path_pto_arm_all(struct mroce_conn *c)
{
    for (uint16_t p = 0; p < c->n_paths; p++)
        eng_path_pto_arm(c, p);
}

/* R-RTT-3, R-RTT-4: RFC 6298 estimator with the connection's RTO bounds. */
void eng_path_rtt_sample(struct mroce_conn *c, struct path_tx *pt, uint64_t rtt)
{
    if (!pt->srtt || MROCE_FAULT(c->ctx, SRTT_UNSMOOTHED)) {
        pt->srtt = rtt;
        pt->rttvar = rtt / 2;
    } else {
        uint64_t err = rtt > pt->srtt ? rtt - pt->srtt : pt->srtt - rtt;
        pt->rttvar = (3 * pt->rttvar + err) / 4;
        pt->srtt = (7 * pt->srtt + rtt) / 8;
    }
    if (!pt->min_rtt || rtt < pt->min_rtt)
        pt->min_rtt = rtt;
    pt->last_rtt = rtt;
    if (!c->rtt_floor || rtt < c->rtt_floor) {
        c->rtt_floor = rtt;
        eng_pset_floor(c); /* R-PATH-13: which paths are slow */
    }
    bool first = !c->rtt_hint;
    c->rtt_hint = pt->srtt;
    if (first && c->rate_hint_mbps)
        path_rearm_blind(c);
    if (first) /* other paths' probes can now be timed */
        path_pto_arm_all(c);
    uint64_t rto = pt->srtt + 4 * pt->rttvar;
    if (rto < c->attr.min_rto_ns && !MROCE_FAULT(c->ctx, RTO_NO_MIN))
        rto = c->attr.min_rto_ns;
    pt->rto = rto > c->attr.max_rto_ns && !MROCE_FAULT(c->ctx, RTO_NO_MAX)
                  ? c->attr.max_rto_ns
                  : rto;
}

/* R-RTT-4: a path that has no sample of its own yet but whose
 * connection has one uses SRTT + 4 x SRTT/2 of the connection's latest
 * sample rather than the blind initial RTO. */
static uint64_t path_base_rto(const struct mroce_conn *c,
                              const struct path_tx *pt)
{
    if (pt->srtt || !c->rtt_hint)
        return pt->rto;
    uint64_t rto = 3 * c->rtt_hint;
    if (rto < c->attr.min_rto_ns)
        rto = c->attr.min_rto_ns;
    return rto < pt->rto ? rto : pt->rto;
}

/* R-RTT-4: the effective RTO: the path's RTO doubled for every timeout
 * round the connection had since it last saw progress (R-RETRY-1), so the
 * retry limit is a bounded time when the peer is gone. A path on a fresh
 * port that has not answered yet keeps the undoubled RTO: each of its
 * timeouts tries another port, so a connection explores many routes before
 * its limit. */
uint64_t eng_path_rto(const struct mroce_conn *c, const struct path_tx *pt)
{
    if (pt->state == PATH_PROBING)
        return pt->rto; /* R-PATH-8: probing explores new ports quickly */
    uint64_t rto = path_base_rto(c, pt) << c->backoff;
    return rto > c->attr.max_rto_ns && !MROCE_FAULT(c->ctx, RTO_NO_MAX)
               ? c->attr.max_rto_ns
               : rto;
}

/* R-CC-4: the initial window is the connection's, split over its paths,
 * so that spraying over more paths does not make the first burst larger;
 * counted in whole packets (headers included, as windows are charged). */
uint32_t eng_path_init_cwnd(const struct mroce_conn *c)
{
    uint32_t pkts = c->attr.init_cwnd_pkts / (c->n_paths ? c->n_paths : 1);
    return (pkts ? pkts : 1) * (MROCE_MAX_HDR_LEN + c->mtu + MROCE_ICRC_LEN);
}

/* R-RTT-7, R-ACK-1: how long the peer may hold the ACK of p's newest
 * data packet: ack_delay if it asked for an ACK at once, else the hold
 * of in-order data at the granted rate. */
static uint64_t path_ack_hold(const struct mroce_conn *c,
                              const struct path_tx *pt)
{
    return pt->newest_ackreq ? c->peer_ack_delay_ns /* R-CONN-3 */
                             : eng_peer_hold(c);
}

/* eng_path_pto of pt whose newest packet has `d` ns of data ahead of it
 * to drain at the granted rate. A path without its own RTT sample
 * borrows the connection's latest. */
static inline uint64_t path_pto_d(const struct mroce_conn *c,
                                  const struct path_tx *pt, uint64_t d)
{
    uint64_t srtt = pt->srtt ? pt->srtt : c->rtt_hint;
    uint64_t pto = 2 * srtt + path_ack_hold(c, pt);
    /* R-RTT-7: never shorter than the latest or the recent highest data
     * RTT of p's plane: those queues are where p's packets wait now,
     * while PROBEs (served ahead of data) may have kept p's SRTT near
     * the fabric's base RTT, and p's route may cross the deepest */
    const struct eng_rack *w = &c->rack[pt->plane];
    if (pto < w->rtt)
        pto = w->rtt;
    if (pto < w->hi)
        pto = w->hi;
    /* ... plus the drain, but no longer than the plane's latest data
     * RTT, the wait of the whole queue: bytes ahead that the peer holds
     * delivered but not yet acknowledged (R-ACK-101) are not ahead of
     * anything */
    uint64_t rw = w->rtt;
    pto += rw && d > rw ? rw : d;
    return pto < PATH_MIN_PTO ? PATH_MIN_PTO : pto;
}

uint64_t eng_path_pto(const struct mroce_conn *c, const struct path_tx *pt)
{
    /* R-RTT-7: what was in flight before p's newest packet drains ahead
     * of it at the granted rate; silence before that is queueing */
    uint64_t d = 0;
    if (pt->drain_ns != ENG_DRAIN_UNKNOWN)
        d = pt->drain_ns;
    else if (c->rate_hint_mbps)
        d = eng_drain_ns(c, c->inflight);
    return path_pto_d(c, pt, d);
}

/* R-RTT-7: packets sent before the first rate hint get their drain time
 * now, from what the connection sent before them and still has in
 * flight; tail-loss probes can then be timed. */
void eng_path_first_hint(struct mroce_conn *c)
{
    for (uint32_t p = 0; p < c->n_paths; p++) {
        struct path_tx *pt = &c->ptx[p];
        if (pt->drain_ns != ENG_DRAIN_UNKNOWN)
            continue;
        pt->drain_ns =
            eng_drain_ns(c, (int32_t)(pt->ahead_mark - c->done_bytes));
    }
    if (c->rtt_hint)
        path_rearm_blind(c);
    path_pto_arm_all(c);
}

/* R-RTT-7: when p's tail-loss probe is due: PTO after its newest data
 * packet, while it has data unresolved, no probe pending and an RTT
 * estimate exists (else a PROBE's own RTO times it). */
static uint64_t path_pto_at(const struct mroce_conn *c,
                            const struct path_tx *pt)
{
    if (!pt->inflight || pt->tlp_done || !(pt->srtt || c->rtt_hint) ||
        MROCE_FAULT(c->ctx, TLP_OFF))
        return ENG_NEVER;
    return pt->last_send + eng_path_pto(c, pt);
}

/* R-RTT-7: p sent data or made progress: its probe timer restarts from
 * what is known now. The PTO's inputs change with every ACK of the
 * connection (the plane's data RTT, the rate hint), so the timer is
 * checked again when it expires rather than moved by each of them. */
void eng_path_pto_arm(struct mroce_conn *c, uint16_t p)
{
    c->ptx[p].pto_at = path_pto_at(c, &c->ptx[p]);
    eng_ptimer_set(c, p);
}

/* eng_path_pto_arm for p that has just sent a data packet (its only
 * caller, req_account, inlines it): p has data in flight, no probe
 * pending (eng_rack_sent), and its drain time is the one the send fixed,
 * or none before any rate hint (eng_path_pto finds the same then). */
void eng_path_pto_sent(struct mroce_conn *c, uint16_t p)
{
    struct path_tx *pt = &c->ptx[p];
    if (!(pt->srtt || c->rtt_hint) || MROCE_FAULT(c->ctx, TLP_OFF))
        pt->pto_at = ENG_NEVER;
    else
        pt->pto_at =
            pt->last_send +
            path_pto_d(c, pt,
                       pt->drain_ns == ENG_DRAIN_UNKNOWN ? 0 : pt->drain_ns);
    eng_ptimer_set(c, p);
}

/* R-PATH-5: a re-path leaves its own port too when a spare port exists
 * (a route that lost everything is left for certain, not with probability
 * spares / (spares + 1)); with none, the port is kept. */
void eng_path_repath(struct mroce_conn *c, uint16_t p)
{
    struct path_tx *pt = &c->ptx[p];
    if (MROCE_FAULT(c->ctx, REPATH_KEEPS_PORT))
        return;
    uint32_t n = c->ctx->n_src_ports;
    if (!n || n > c->n_paths)
        pt->src_port = path_new_port(c);
    pt->st.repaths++;
    c->cnt.repaths++;
}

/* R-RTT-7: a silent path becomes SUSPECT, everything unresolved on it is
 * sent again on other paths (a dead route loses all of it, and its RTO is
 * much later than the PTO), and a PROBE on the silent path itself makes
 * the receiver's next ACK for it reveal what was really lost. R-LOSS-8
 * (rack) calls it when the connection's other paths show p late. */
void eng_path_tlp(struct mroce_conn *c, uint16_t p, bool rack)
{
    struct path_tx *pt = &c->ptx[p];
    pt->tlp_done = true;
    pt->pto_at = ENG_NEVER;
    eng_ptimer_set(c, p);
    eng_rack_check(c, p);
    uint32_t i = eng_psn_slot(pt, pt->next_psn - 1);
    if (!pt->psn_len[i])
        return;
    c->cnt.tlp_pkts++;
    eng_plane_fail(c->ctx, pt->plane);
    if (pt->state == PATH_ACTIVE)
        pt->state = PATH_SUSPECT; /* no new data until it shows life */
    eng_pset_update(c, p);
    uint64_t *lost = rack ? &c->cnt.lost_rack : &c->cnt.lost_pto;
    for (uint32_t q = pt->una; q != pt->next_psn; q++) {
        uint32_t j = eng_psn_slot(pt, q);
        uint16_t len = pt->psn_len[j];
        if (!len || (len & ENG_PSN_PROBE))
            continue;
        *lost += !(len & ENG_PSN_RESENT); /* declared lost once */
        eng_comp_resent(c, pt, j);
    }
    if (!pt->probe_due) {
        pt->probe_due = true; /* and a PROBE on the silent path itself */
        pt->probe_retx = true;
        c->n_probe_due++;
    }
}

/* R-RETRY-1: timeouts of several paths within one backed-off RTO of the
 * first are one round; each round without progress doubles the RTO of the
 * paths that are not probing, and more than retry_cnt rounds end the
 * connection (the peer or the fabric is gone). */
static void path_backoff(struct mroce_conn *c, const struct path_tx *pt,
                         uint64_t now)
{
    if (now < c->round_end)
        return;
    if (c->backoff < ENG_MAX_BACKOFF)
        c->backoff++;
    uint64_t round = pt->rto << c->backoff;
    c->round_end =
        now + (round < c->attr.max_rto_ns ? round : c->attr.max_rto_ns);
    if (c->backoff > c->attr.retry_cnt && !MROCE_FAULT(c->ctx, RETRY_LIMIT_OFF))
        eng_comp_retry_exceeded(c);
}

/* R-RTT-6, R-PATH-3: all in flight is lost; a timeout means the route is
 * broken (or the peer is gone), so the path fails at once and moves to a
 * new source port, where only PROBEs test it (R-PATH-6, R-PATH-11). Each
 * further timeout moves it again. */
static void path_rto(struct mroce_conn *c, uint16_t p, uint64_t now)
{
    struct path_tx *pt = &c->ptx[p];
    for (uint32_t psn = pt->una; psn != pt->next_psn; psn++)
        eng_comp_resolve_psn(c, p, psn, ENG_TIMEOUT);
    eng_pset_update(c, p);
    pt->rto_at = ENG_NEVER;
    pt->st.timeouts++;
    c->cnt.rto_events++;
    if (!MROCE_FAULT(c->ctx, CC_NO_TIMEOUT))
        mroce_cc_aimd.on_timeout(&c->cc, &pt->cc, now);
    path_backoff(c, pt, now);
    if (c->state != MROCE_CONN_CONNECTED || pt->state == PATH_DISABLED)
        return;
    pt->state = PATH_FAILED;
    if (!MROCE_FAULT(c->ctx, NO_REPATH_ON_RTO))
        eng_path_repath(c, p);
    eng_plane_fail(c->ctx, pt->plane);
    pt->state = PATH_PROBING;
    pt->probe_at = now; /* path_expire turns it into a PROBE at once */
    eng_pset_update(c, p);
}

/* R-RTT-5: an RTO due while p's tail-loss probe is still to come waits
 * for it, one RTO past it: the probe's time includes the wait of the
 * queue p's packets are in (R-RTT-7), the RTO does not, and an RTO
 * fails the path. */
static bool path_rto_waits(struct mroce_conn *c, struct path_tx *pt,
                           uint64_t now)
{
    uint64_t tlp = path_pto_at(c, pt);
    if (tlp == ENG_NEVER || tlp <= now)
        return false;
    pt->rto_at = tlp + eng_path_rto(c, pt);
    return true;
}

/* R-RTT-7: a probe timer that expired fires if the PTO, computed now,
 * has passed; else it waits for that. */
static void path_pto_expired(struct mroce_conn *c, uint16_t p, uint64_t now)
{
    struct path_tx *pt = &c->ptx[p];
    uint64_t t = path_pto_at(c, pt);
    if (t <= now)
        eng_path_tlp(c, p, false);
    else
        pt->pto_at = t;
}

/* The timers of path p that are due (the earliest, eng_ptimer_due). */
static void path_expire(struct mroce_conn *c, uint16_t p, uint64_t now)
{
    struct path_tx *pt = &c->ptx[p];
    if (pt->rto_at <= now && !path_rto_waits(c, pt, now))
        path_rto(c, p, now);
    else if (pt->pto_at <= now)
        path_pto_expired(c, p, now);
    if (pt->probe_at <= now) { /* sent by the next eng_req_ctl_tx */
        pt->probe_at = ENG_NEVER;
        pt->probe_due = true;
        pt->probe_retx = true;
        c->n_probe_due++;
    }
    eng_ptimer_set(c, p);
}

/* Due path timers in deadline order, then paths late by R-LOSS-8. Each
 * expiry moves or clears the path's timers past `now` (a tail-loss probe
 * clears its PTO, an RTO its RTO), so the loop ends. */
void eng_path_timers(struct mroce_conn *c, uint64_t now)
{
    int p;
    while (c->state == MROCE_CONN_CONNECTED &&
           (p = eng_ptimer_due(c, now)) >= 0)
        path_expire(c, (uint16_t)p, now);
    if (c->state == MROCE_CONN_CONNECTED)
        eng_rack_fire(c, now);
}

/* ---- probes (R-PATH-7, R-PATH-8, R-RTT-7) ---- */

/* R-PATH-7: a PROBE occupies a PSN on its path but carries no data, so the
 * receiver's ACK for that path shows whatever before it was lost. */
static int path_probe_emit(struct mroce_conn *c, uint16_t p, uint64_t now,
                           uint8_t *buf, size_t cap,
                           struct mroce_pkt_meta *meta)
{
    struct path_tx *pt = &c->ptx[p];
    uint32_t i = eng_psn_slot(pt, pt->next_psn);
    /* RETX marks a probe sent because the path went silent (R-PATH-7) */
    uint8_t flags =
        (MROCE_FAULT(c->ctx, PROBE_NO_ACKREQ) ? 0 : MROCE_HF_ACKREQ) |
        (pt->probe_retx && !MROCE_FAULT(c->ctx, PROBE_NO_RETX) ? MROCE_HF_RETX
                                                               : 0);
    pt->probe_retx = false;
    struct mroce_hdr h = {.opcode = MROCE_OP_PROBE,
                          .flags = flags,
                          .path = p,
                          .conn = c->remote.conn_id,
                          .psn = pt->next_psn,
                          .ts = eng_ts(c, now)};
    pt->psn_dsn[i] = 0;
    pt->psn_len[i] = ENG_PSN_PROBE;
    eng_path_sent_ts(pt, i, h.ts);
    if (pt->next_psn++ == pt->una) {
        pt->rto_at = now + eng_path_rto(c, pt);
        eng_ptimer_set(c, p);
    }
    eng_pset_update(c, p);
    pt->st.probes++;
    eng_req_meta(c, p, meta);
    return eng_tx_ctl(c, &h, buf, cap);
}

int eng_path_probe_send(struct mroce_conn *c, uint64_t now, uint8_t *buf,
                        size_t cap, struct mroce_pkt_meta *meta)
{
    for (uint16_t p = 0; p < c->n_paths; p++) {
        struct path_tx *pt = &c->ptx[p];
        if (!pt->probe_due)
            continue;
        /* A full window defers the PROBE, it does not cancel it: a SUSPECT
         * path whose PSNs then all resolve without an ACK (RNR NACKs) would
         * otherwise never be tested again and carry nothing (R-PATH-8). */
        if (pt->state != PATH_DISABLED &&
            (pt->next_psn - pt->una >= c->path_window ||
             eng_mem_psn_room(c, pt)))
            continue;
        pt->probe_due = false;
        c->n_probe_due--;
        if (pt->state == PATH_DISABLED)
            continue;
        return path_probe_emit(c, p, now, buf, cap, meta);
    }
    return 0;
}

/* ---- path choice (R-PATH-13, R-LOSS-4, R-PATH-11) ---- */

static bool path_room(const struct mroce_conn *c, const struct path_tx *pt,
                      uint32_t bytes)
{
    if (pt->next_psn - pt->una >= c->path_window)
        return false;
    return !pt->inflight || pt->inflight + bytes <= pt->cc.cwnd;
}

/* Proven: acknowledged at least once, and nothing on it older than a PTO
 * without progress -- the safest place for a retransmission. */
bool eng_path_proven(const struct mroce_conn *c, const struct path_tx *pt,
                     uint64_t now)
{
    return pt->srtt && (pt->una == pt->next_psn ||
                        now - pt->last_progress < eng_path_pto(c, pt));
}

static bool path_usable(struct mroce_conn *c, uint32_t p, uint32_t bytes)
{
    struct path_tx *pt = &c->ptx[p];
    if ((pt->state != PATH_ACTIVE && !MROCE_FAULT(c->ctx, DATA_ON_UNUSABLE)) ||
        !path_room(c, pt, bytes) || eng_mem_psn_room(c, pt) ||
        eng_plane_down(c->ctx, pt->plane))
        return false; /* R-PATH-4, R-PATH-15 */
    if (!eng_plane_open(c, p)) {
        c->plane_held = true; /* R-PATH-14: its port is full */
        return false;
    }
    return true;
}

/* R-PATH-13 idle; R-PATH-17: the path of an open run is ranked as when
 * the run began, its own packets not counted, so that the run goes on
 * while no path of a better class turns up. */
static bool path_idle(const struct mroce_conn *c, uint32_t p)
{
    const struct path_tx *pt = &c->ptx[p];
    if (pt->una == pt->next_psn)
        return true;
    return p == c->run_path && eng_path_run_open(c) &&
           (int32_t)(pt->una - c->run_psn) >= 0;
}

/* R-PATH-13: the class of path p for a packet (the run's path,
 * R-PATH-17; pathset.c finds the others' from bitmaps). */
int eng_path_rank(struct mroce_conn *c, uint32_t p, int avoid, uint32_t bytes,
                  uint64_t now)
{
    const struct path_tx *pt = &c->ptx[p];
    if (!path_usable(c, p, bytes))
        return RANK_NONE;
    if ((int)p == avoid)
        return RANK_OWN;
    if (!eng_path_fast(c, pt))
        return RANK_SLOW;
    if (path_idle(c, p))
        return pt->srtt ? RANK_IDLE_KNOWN : RANK_IDLE;
    return avoid >= 0 && eng_path_proven(c, pt, now) ? RANK_PROVEN : RANK_FAST;
}

/* R-PATH-13: data goes round-robin to the best-ranked ACTIVE path with
 * room: an idle one first (one that has delivered before, then any), so
 * that a path never holds two packets of a small window -- R-LOSS-8 sees
 * only a lone packet's loss -- and a connection that needs few routes
 * keeps to known ones; then, for a retransmission (avoid = the path it
 * was lost on), a proven one; then fast, then slow paths; the lost
 * packet's own path last. Paths that are not ACTIVE carry only PROBEs
 * until an ACK clears them, so exploring new ports never spends a
 * packet's transmissions. */
int eng_path_pick(struct mroce_conn *c, int avoid, uint32_t bytes, uint64_t now)
{
    return eng_pset_pick(c, avoid, bytes, now);
}

/* R-PATH-17: a data packet is about to take the next PSN of path p: it
 * extends the open run on p or begins a new run. Counted here rather than
 * at the pick, which may find nothing to send. */
void eng_path_run_sent(struct mroce_conn *c, uint16_t p)
{
    if (c->ctx->spray_run <= 1)
        return; /* one packet per turn: no run, R-PATH-13 alone */
    if (p == c->run_path && eng_path_run_open(c)) {
        c->run_len++;
        return;
    }
    c->run_path = p;
    c->run_len = 1;
    c->run_psn = c->ptx[p].next_psn;
}

/* ---- receiver bitmap (R-SACK-4, R-SACK-5) ---- */

static void path_shift(uint64_t b[4], uint32_t d)
{
    if (d >= MROCE_SACK_BITS) {
        b[0] = b[1] = b[2] = b[3] = 0;
        return;
    }
    if (d < 64) { /* the usual case (d is 1 on a path that keeps order) */
        b[3] = (b[3] >> d) | (b[2] << (64 - d));
        b[2] = (b[2] >> d) | (b[1] << (64 - d));
        b[1] = (b[1] >> d) | (b[0] << (64 - d));
        b[0] >>= d;
        return;
    }
    uint32_t ws = d / 64, bs = d % 64;
    for (int w = 3; w >= 0; w--) {
        uint64_t hi = w - (int)ws >= 0 ? b[w - ws] : 0;
        uint64_t lo = w - (int)ws - 1 >= 0 ? b[w - ws - 1] : 0;
        b[w] = bs ? (hi >> bs) | (lo << (64 - bs)) : hi;
    }
}

/* R-VAL-2: whether a packet may be recorded on its path. Accepted new
 * data carries a DSN in the window, whatever its PSN (a path whose PSNs
 * drifted while its packets were lost or refused catches up); a
 * duplicate only near what the path recorded; a PROBE only as the next
 * PSN after it -- on a path that does not reorder, a sender's PROBE
 * arrives right after everything before it that arrived, and a PROBE
 * elsewhere could set the bit of a data packet that was lost. */
bool eng_path_rx_ok(const struct path_rx *pr, uint32_t psn, int kind)
{
    uint32_t ahead = psn - pr->high; /* 0: high itself */
    if (kind == ENG_REC_PROBE)
        return ahead == 1;
    if (kind == ENG_REC_NEAR)
        return ahead <= ENG_PSN_AHEAD || -ahead < MROCE_SACK_BITS;
    return true;
}

void eng_path_rx_record_any(struct path_rx *pr, uint32_t psn, bool *dup,
                            bool *gap, bool *stale)
{
    if (seq_lt(pr->high, psn)) { /* high starts just before init_psn */
        uint32_t d = psn - pr->high;
        path_shift(pr->bits, d);
        mroce_sack_set(pr->bits, 0);
        pr->high = psn;
        pr->any = true;
        *gap = d > 1;
        return;
    }
    uint32_t back = pr->high - psn;
    if (!pr->any || back >= MROCE_SACK_BITS) {
        *stale = true;
        return;
    }
    if (mroce_sack_test(pr->bits, back))
        *dup = true;
    else
        *gap = true; /* late on its own path: tell the sender at once */
    mroce_sack_set(pr->bits, back);
}

/* ---- extension API (R-PATH-12) ---- */

int eng_path_query(const struct mroce_conn *c, uint16_t path,
                   struct mroce_path_info *out)
{
    if (path >= c->n_paths)
        return MROCE_ENOENT;
    const struct path_tx *pt = &c->ptx[path];
    const struct path_cnt *n = &pt->st;
    *out = (struct mroce_path_info){.tx_pkts = n->tx_pkts,
                                    .tx_bytes = n->tx_bytes,
                                    .retx_pkts = n->retx_pkts,
                                    .acked_pkts = n->acked_pkts,
                                    .lost_pkts = n->lost_pkts,
                                    .ecn_marks = n->ecn_marks,
                                    .timeouts = n->timeouts,
                                    .repaths = n->repaths,
                                    .probes = n->probes};
    out->state = pt->state;
    out->src_port = pt->src_port;
    out->srtt_ns = pt->srtt;
    out->min_rtt_ns = pt->min_rtt;
    out->rto_ns = eng_path_rto(c, pt);
    out->cwnd_bytes = pt->cc.cwnd;
    out->inflight_bytes = pt->inflight;
    return 0;
}

int eng_path_move(struct mroce_conn *c, uint16_t path)
{
    if (path >= c->n_paths)
        return MROCE_ENOENT;
    eng_path_repath(c, path);
    eng_sched_ready(c);
    return 0;
}

int eng_path_enable(struct mroce_conn *c, uint16_t path, int on)
{
    if (path >= c->n_paths)
        return MROCE_ENOENT;
    struct path_tx *pt = &c->ptx[path];
    eng_sched_ready(c); /* a path back in service may carry data */
    if (on) {
        if (pt->state == PATH_DISABLED)
            pt->state = PATH_ACTIVE;
        eng_pset_update(c, path);
        return 0;
    }
    uint32_t enabled = 0;
    for (uint32_t p = 0; p < c->n_paths; p++)
        enabled += c->ptx[p].state != PATH_DISABLED;
    if (enabled <= 1 && pt->state != PATH_DISABLED)
        return MROCE_EINVAL;
    pt->state = PATH_DISABLED;
    eng_pset_update(c, path);
    return 0;
}
