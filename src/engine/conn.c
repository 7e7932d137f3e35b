/* Connection life cycle: create, parameter exchange, connect, close,
 * error (R-CONN-*). */
#include <string.h>

#include "engine/eng.h"
#include "engine/fault.h"
#include "engine/seal.h"

#define DEF(v, d) ((v) ? (v) : (d))

static bool conn_pow2(uint32_t v)
{
    return v && !(v & (v - 1));
}

static int conn_fill_attr(struct mroce_conn_attr *a)
{
    a->n_streams = DEF(a->n_streams, 1);
    a->n_paths = DEF(a->n_paths, 16);
    a->sq_depth = DEF(a->sq_depth, 64);
    a->rq_depth = DEF(a->rq_depth, 64);
    a->dsn_window = DEF(a->dsn_window, 4096);
    a->path_window = DEF(a->path_window, MROCE_SACK_BITS);
    a->max_rd = DEF(a->max_rd, 16);
    a->retry_cnt = DEF(a->retry_cnt, 7);
    if (a->retry_cnt >= ENG_MAX_BACKOFF) /* the backoff must exceed it */
        return MROCE_EINVAL;
    a->rnr_retry = DEF(a->rnr_retry, 7);
    a->min_rto_ns = DEF(a->min_rto_ns, 100000);
    a->max_rto_ns = DEF(a->max_rto_ns, 100000000);
    a->ack_every = DEF(a->ack_every, ENG_ACK_EVERY);
    a->ack_delay_ns = DEF(a->ack_delay_ns, 2000);
    a->init_cwnd_pkts = DEF(a->init_cwnd_pkts, 128);
    a->max_conn_cwnd_pkts = DEF(a->max_conn_cwnd_pkts, a->dsn_window);
    a->tail_copies = DEF(a->tail_copies, 2);
    if (!a->send_cq || !a->recv_cq || a->n_paths > ENG_MAX_PATHS ||
        a->tail_copies > 2 || !conn_pow2(a->dsn_window) ||
        a->dsn_window > (1u << 20) || !conn_pow2(a->path_window) ||
        a->path_window > MROCE_SACK_BITS || a->sq_depth > 65536 ||
        a->rq_depth > 65536 || a->max_rd > 1024 ||
        a->min_rto_ns > a->max_rto_ns || a->min_rto_ns < 1000 ||
        a->max_rto_ns > MROCE_MAX_RTO_NS) /* R-CONN-3: announced */
        return MROCE_EINVAL;
    return 0;
}

/* The smallest power of two >= v (v <= 65536). */
static uint32_t conn_pow2_ceil(uint32_t v)
{
    uint32_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

static int conn_alloc_streams(struct mroce_conn *c)
{
    struct mroce_ctx *ctx = c->ctx;
    c->streams = eng_alloc(ctx, c->attr.n_streams * sizeof(*c->streams));
    if (!c->streams)
        return MROCE_ENOMEM;
    uint32_t sq = c->sq_mask + 1, rq = c->rq_mask + 1;
    for (uint32_t i = 0; i < c->attr.n_streams; i++) {
        struct stream *s = &c->streams[i];
        s->sq = eng_alloc(ctx, sq * sizeof(*s->sq));
        s->rq = eng_alloc(ctx, rq * sizeof(*s->rq));
        s->rq_mr = eng_alloc(ctx, rq * sizeof(*s->rq_mr));
        s->in = eng_alloc(ctx, sq * sizeof(*s->in));
        if (!s->sq || !s->rq || !s->rq_mr || !s->in)
            return MROCE_ENOMEM;
    }
    return 0;
}

/* Paths and the sender's rings wait for connect (mem.c): their size
 * depends on what both sides negotiate. */
static int conn_alloc(struct mroce_conn *c)
{
    struct mroce_ctx *ctx = c->ctx;
    c->sq_mask = conn_pow2_ceil(c->attr.sq_depth) - 1;
    c->rq_mask = conn_pow2_ceil(c->attr.rq_depth) - 1;
    c->rcv_bits = eng_alloc(ctx, c->attr.dsn_window / 8 + 8);
    c->resp = eng_alloc(ctx, c->attr.max_rd * sizeof(*c->resp));
    if (!c->rcv_bits || !c->resp)
        return MROCE_ENOMEM;
    return conn_alloc_streams(c);
}

static void conn_free(struct mroce_conn *c)
{
    struct mroce_ctx *ctx = c->ctx;
    for (uint32_t i = 0; c->streams && i < c->attr.n_streams; i++) {
        eng_free(ctx, c->streams[i].sq);
        eng_free(ctx, c->streams[i].rq);
        eng_free(ctx, c->streams[i].rq_mr);
        eng_free(ctx, c->streams[i].in);
    }
    eng_mem_free(c);
    eng_seal_free(c);
    eng_free(ctx, c->streams);
    eng_free(ctx, c->rcv_bits);
    eng_free(ctx, c->resp);
    eng_free(ctx, c);
}

static void conn_init_local(struct mroce_conn *c)
{
    struct mroce_ctx *ctx = c->ctx;
    c->local.addr = ctx->dev.addr;
    c->local.udp_port = ctx->udp_port;
    c->local.n_paths = c->attr.n_paths;
    c->local.n_streams = c->attr.n_streams;
    c->local.mtu = ctx->mtu;
    c->local.dsn_window = c->attr.dsn_window;
    c->local.msg_window = c->attr.sq_depth;
    c->local.max_rd = c->attr.max_rd;
    c->n_streams = c->attr.n_streams;
    c->deadline = c->rack_min = c->dl_other = ENG_NEVER;
    c->read_watch = ENG_NEVER;
    c->ack_at = ENG_NEVER;
}

int eng_conn_create(struct mroce_pd *pd, const struct mroce_conn_attr *attr,
                    struct mroce_conn **out)
{
    struct mroce_ctx *ctx = eng_ctx_of(pd->dev);
    struct mroce_conn_attr a = *attr;
    if (conn_fill_attr(&a) || a.send_cq->dev != pd->dev ||
        a.recv_cq->dev != pd->dev ||
        (ctx->n_src_ports && a.n_paths > ctx->n_src_ports)) /* R-ENC-3 */
        return MROCE_EINVAL;
    struct mroce_conn *c = eng_alloc(ctx, sizeof(*c));
    if (!c)
        return MROCE_ENOMEM;
    c->ctx = ctx;
    c->pd = pd;
    c->attr = a;
    if (conn_alloc(c)) {
        conn_free(c);
        return MROCE_ENOMEM;
    }
    c->scq = a.send_cq;
    c->rcq = a.recv_cq;
    conn_init_local(c);
    int err = eng_conn_link(ctx, c, a.conn_id);
    if (err) {
        conn_free(c);
        return err;
    }
    /* R-CONN-5, R-SEC-7: where this side's sequence numbers start, each
     * its own draw of the context's random source */
    c->local.init_psn = (uint32_t)eng_rand(ctx);
    c->local.init_dsn = (uint32_t)eng_rand(ctx);
    c->local.init_msn = (uint32_t)eng_rand(ctx);
    if (MROCE_FAULT(ctx, INIT_SEQ_FIXED))
        c->local.init_psn = c->local.init_dsn = c->local.init_msn = 0;
    c->ts_off = MROCE_FAULT(ctx, TS_NO_OFFSET) ? 0 : (uint32_t)eng_rand(ctx);
    pd->refs++;
    c->scq->users++;
    c->rcq->users++;
    *out = c;
    return 0;
}

/* R-CONN-3: what the peer's behaviour depends on, announced. */
static void conn_get_timing(const struct mroce_conn *c,
                            struct mroce_conn_params *out)
{
    const struct mroce_conn_attr *a = &c->attr;
    out->path_window = (uint16_t)a->path_window;
    out->ack_every =
        a->ack_every > UINT16_MAX ? UINT16_MAX : (uint16_t)a->ack_every;
    out->ack_delay_ns =
        a->ack_delay_ns > UINT32_MAX ? UINT32_MAX : (uint32_t)a->ack_delay_ns;
    out->min_rto_ns = a->min_rto_ns;
    out->max_rto_ns = a->max_rto_ns;
    out->retry_cnt = a->retry_cnt;
    out->rnr_retry = a->rnr_retry;
    out->rnr_max_us = ENG_RNR_DELAY_US;
    out->features = a->ackm_off ? 0 : MROCE_FEAT_ACKM;
}

void eng_conn_get_params(const struct mroce_conn *c,
                         struct mroce_conn_params *out)
{
    const struct eng_params *l = &c->local;
    const struct mroce_ctx *ctx = c->ctx;
    memset(out, 0, sizeof(*out));
    out->conn_id = l->conn_id;
    out->init_psn = l->init_psn;
    out->init_dsn = l->init_dsn;
    out->init_msn = l->init_msn;
    out->addr = ctx->dev.plane_addr[0];
    out->n_planes = (uint8_t)ctx->dev.n_planes;
    memcpy(out->plane_addr, ctx->dev.plane_addr,
           ctx->dev.n_planes * sizeof(*ctx->dev.plane_addr));
    out->udp_port = l->udp_port;
    out->n_paths = l->n_paths;
    out->n_streams = l->n_streams;
    out->mtu = l->mtu;
    out->dsn_window = l->dsn_window;
    out->msg_window = l->msg_window;
    out->max_rd = l->max_rd;
    conn_get_timing(c, out);
}

int mroce_conn_set_init_seq(struct mroce_conn *c, uint32_t psn, uint32_t dsn,
                            uint32_t msn)
{
    if (c->state != MROCE_CONN_INIT)
        return MROCE_ESTATE;
    c->local.init_psn = psn;
    c->local.init_dsn = dsn;
    c->local.init_msn = msn;
    return 0;
}

static uint32_t conn_min(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

static bool conn_af_ok(uint8_t family)
{
    return family == MROCE_AF_INET || family == MROCE_AF_INET6;
}

/* R-CONN-4, R-ENC-10: as many planes as ours, one family. */
static bool conn_planes_ok(const struct mroce_conn *c,
                           const struct mroce_conn_params *r)
{
    if (!r->n_planes)
        return conn_af_ok(r->addr.family);
    if (r->n_planes != c->ctx->dev.n_planes)
        return false;
    for (uint32_t i = 0; i < r->n_planes; i++)
        if (!conn_af_ok(r->plane_addr[i].family) ||
            r->plane_addr[i].family != r->plane_addr[0].family)
            return false;
    return true;
}

/* R-CONN-4: the announced timing values in range (0: not announced), and
 * the peer's delayed ACKs due before our shortest RTO. */
static bool conn_timing_ok(const struct mroce_conn *c,
                           const struct mroce_conn_params *r)
{
    uint64_t lo = r->min_rto_ns, hi = r->max_rto_ns;
    return (!r->path_window ||
            (conn_pow2(r->path_window) && r->path_window <= MROCE_SACK_BITS)) &&
           r->ack_delay_ns < c->attr.min_rto_ns && (!lo || lo >= 1000) &&
           (!hi || hi <= MROCE_MAX_RTO_NS) && (!lo || !hi || lo <= hi) &&
           r->retry_cnt < ENG_MAX_BACKOFF && r->rnr_retry <= 7 &&
           r->rnr_max_us <= MROCE_MAX_RNR_US;
}

/* R-CONN-4: every peer value in its range, so no minimum can be 0. */
static bool conn_params_ok(const struct mroce_conn *c,
                           const struct mroce_conn_params *r)
{
    if (MROCE_FAULT(c->ctx, PARAMS_UNCHECKED))
        return r->n_paths && r->n_streams && r->dsn_window && r->mtu;
    return r->conn_id && r->udp_port && r->n_paths &&
           r->n_paths <= ENG_MAX_PATHS && r->n_streams && r->mtu >= 256 &&
           r->mtu <= 9000 && conn_pow2(r->dsn_window) &&
           r->dsn_window <= (1u << 20) && r->msg_window && r->max_rd &&
           conn_planes_ok(c, r) && conn_timing_ok(c, r);
}

/* R-ENC-10: the peer's address of every plane. */
static void conn_set_peer_addrs(struct mroce_conn *c,
                                const struct mroce_conn_params *r)
{
    for (uint32_t i = 0; i < c->ctx->dev.n_planes; i++)
        c->peer_addr[i] = r->n_planes ? r->plane_addr[i] : r->addr;
}

/* R-CONN-5: each direction's sequence numbers start where its sender
 * announced: ours at local.init_*, the peer's at remote.init_*. */
static void conn_init_seq(struct mroce_conn *c)
{
    c->snd_una = c->snd_next = c->local.init_dsn;
    c->rcv_cum = c->remote.init_dsn;
    for (uint32_t i = 0; i < c->attr.n_streams; i++) {
        struct stream *s = &c->streams[i];
        s->sq_head = s->sq_next = s->sq_tail = s->msn_una = c->local.init_msn;
        s->in_base = c->remote.init_msn;
    }
}

/* R-CONN-3: effective values are the minimum of both sides, except the
 * message window: each side announces what it accepts (R-MSG-14). */
int eng_conn_connect(struct mroce_conn *c, const struct mroce_conn_params *r)
{
    if (c->state != MROCE_CONN_INIT)
        return MROCE_ESTATE;
    if (!conn_params_ok(c, r))
        return MROCE_EINVAL;
    uint32_t n_paths = conn_min(c->attr.n_paths, r->n_paths);
    uint32_t dsn_window = conn_min(c->attr.dsn_window, r->dsn_window);
    int rc = eng_seal_connect(c, r, n_paths); /* R-AEAD-6 */
    if (rc)
        return rc;
    if (eng_mem_connect(c, n_paths, dsn_window, c->attr.path_window))
        return MROCE_ENOMEM;
    conn_set_peer_addrs(c, r);
    /* R-RTT-7: 0 (not announced): assume the peer delays as we do */
    c->peer_ack_delay_ns =
        r->ack_delay_ns ? r->ack_delay_ns : c->attr.ack_delay_ns;
    c->peer_ack_every = r->ack_every ? r->ack_every : c->attr.ack_every;
    c->peer_rnr_max_us = r->rnr_max_us;
    /* R-VER-5: in effect when both announce it */
    c->ackm = !c->attr.ackm_off && (r->features & MROCE_FEAT_ACKM);
    c->remote = (struct eng_params){.conn_id = r->conn_id,
                                    .init_psn = r->init_psn,
                                    .init_dsn = r->init_dsn,
                                    .init_msn = r->init_msn,
                                    .addr = c->peer_addr[0],
                                    .udp_port = r->udp_port,
                                    .n_paths = r->n_paths,
                                    .n_streams = r->n_streams,
                                    .mtu = r->mtu,
                                    .dsn_window = r->dsn_window,
                                    .msg_window = r->msg_window,
                                    .max_rd = r->max_rd};
    c->n_paths = n_paths;
    c->n_streams = conn_min(c->attr.n_streams, r->n_streams);
    c->mtu = MROCE_FAULT(c->ctx, MTU_NOT_MIN) ? c->ctx->mtu
                                              : conn_min(c->ctx->mtu, r->mtu);
    c->dsn_window = dsn_window;
    c->path_window = c->attr.path_window;
    c->peer_msg_window = r->msg_window;
    c->peer_max_rd = conn_min(c->attr.max_rd, r->max_rd);
    c->ack_slack = (c->peer_ack_every - 1) * eng_pkt_charge(c); /* R-ACK-101 */
    eng_conn_hint(c, c->rate_hint_mbps); /* the peer's ACK hold */
    conn_init_seq(c);
    for (uint16_t p = 0; p < c->n_paths; p++)
        eng_path_init(c, p);
    struct cc_params prm = {
        .mtu = c->mtu,
        .init_cwnd = eng_path_init_cwnd(c),
        .max_path = c->path_window * c->mtu,
        .max_conn =
            conn_min(c->attr.max_conn_cwnd_pkts, c->dsn_window) * c->mtu,
        .ack_slack = c->ack_slack,
    };
    mroce_cc_aimd.init(&c->cc, NULL, 0, &prm);
    for (uint16_t p = 0; p < c->n_paths; p++)
        mroce_cc_aimd.init(&c->cc, &c->ptx[p].cc, 1, &prm);
    eng_rack_init(c);
    c->state = MROCE_CONN_CONNECTED;
    eng_seal_connected(c);
    eng_sched_ready(c);
    return 0;
}

int eng_conn_state(const struct mroce_conn *c)
{
    return c->state;
}

void eng_conn_get_counters(const struct mroce_conn *c,
                           struct mroce_conn_counters *out)
{
    *out = c->cnt;
}

/* ---- error and flush (R-CONN-12, R-ORD-9) ---- */

static void conn_flush_stream(struct mroce_conn *c, struct stream *s,
                              uint16_t sid, uint32_t bad_msn, uint8_t status)
{
    for (uint32_t m = s->sq_head; m != s->sq_tail; m++) {
        struct sq_slot *q = eng_sq(c, s, m);
        struct mroce_wc wc = {.wr_id = q->wr.wr_id, .conn = c, .stream = sid};
        wc.status = (status && m == bad_msn) ? status : MROCE_WC_WR_FLUSH_ERR;
        wc.opcode = q->op == MROCE_OP_READ_REQ ? MROCE_WC_RDMA_READ
                    : q->op == MROCE_OP_SEND || q->op == MROCE_OP_SEND_IMM
                        ? MROCE_WC_SEND
                        : MROCE_WC_RDMA_WRITE;
        if (q->mr)
            q->mr->refs--;
        dev_cq_push(c->scq, &wc);
    }
    s->sq_head = s->sq_next = s->sq_tail;
    for (uint32_t n = s->rq_head; n != s->rq_tail; n++) {
        uint32_t i = eng_rq(c, n);
        struct mroce_wc wc = {.wr_id = s->rq[i].wr_id,
                              .conn = c,
                              .stream = sid,
                              .opcode = MROCE_WC_RECV,
                              .status = MROCE_WC_WR_FLUSH_ERR};
        if (s->rq_mr[i])
            s->rq_mr[i]->refs--;
        dev_cq_push(c->rcq, &wc);
    }
    s->rq_head = s->rq_tail;
}

/* Moves the connection to `state` and completes every outstanding WR:
 * the one at (stream, msn) with `status`, the others with FLUSH_ERR. */
static void conn_flush(struct mroce_conn *c, uint8_t state, uint16_t stream,
                       uint32_t msn, uint8_t status)
{
    c->state = state;
    for (uint32_t i = 0; i < c->attr.n_streams; i++)
        conn_flush_stream(c, &c->streams[i], (uint16_t)i, msn,
                          i == stream ? status : 0);
    for (uint32_t i = 0; i < c->attr.max_rd; i++)
        eng_resp_release(c, &c->resp[i]);
    c->retx_count = 0;
    c->n_rnr = 0;
    for (uint32_t p = 0; p < c->n_paths; p++)
        c->ptx[p].rto_at = ENG_NEVER;
}

void eng_conn_error(struct mroce_conn *c, uint16_t stream, uint32_t msn,
                    uint8_t status)
{
    if (c->state == MROCE_CONN_ERROR || c->state == MROCE_CONN_CLOSED)
        return;
    conn_flush(c, MROCE_CONN_ERROR, stream, msn, status);
}

/* The peer closed: flush and stop (R-CONN-9). */
void eng_conn_close(struct mroce_conn *c)
{
    conn_flush(c, MROCE_CONN_CLOSED, 0, 0, 0);
    c->close_pending = false;
}

/* R-CONN-8: abortive: flush everything, then CLOSE until CLOSE_ACK. */
int eng_conn_disconnect(struct mroce_conn *c)
{
    if (c->state != MROCE_CONN_CONNECTED)
        return MROCE_ESTATE;
    conn_flush(c, MROCE_CONN_CLOSING, 0, 0, 0);
    c->close_pending = true;
    c->close_due = true;
    c->close_at = ENG_NEVER;
    eng_sched_ready(c);
    return 0;
}

/* Outstanding WRs vanish without completion: give back their CQ room. */
static void conn_release(struct mroce_conn *c)
{
    for (uint32_t i = 0; i < c->attr.n_streams; i++) {
        struct stream *s = &c->streams[i];
        for (uint32_t m = s->sq_head; m != s->sq_tail; m++) {
            struct sq_slot *q = eng_sq(c, s, m);
            if (q->mr)
                q->mr->refs--;
            c->scq->pending--;
        }
        for (uint32_t n = s->rq_head; n != s->rq_tail; n++) {
            struct mroce_mr *mr = s->rq_mr[eng_rq(c, n)];
            if (mr)
                mr->refs--;
            c->rcq->pending--;
        }
    }
    for (uint32_t i = 0; i < c->attr.max_rd; i++)
        eng_resp_release(c, &c->resp[i]);
}

void eng_conn_destroy(struct mroce_conn *c)
{
    conn_release(c);
    eng_conn_unlink(c->ctx, c);
    c->pd->refs--;
    c->scq->users--;
    c->rcq->users--;
    conn_free(c);
}

/* Timers are armed cheaply by lowering the cached deadline (O(log n) in
 * the context's heap, sched.c); a deadline
 * left early by a disarmed timer only costs one on_expiry call, which
 * recomputes it exactly with eng_conn_update_deadline. Every timer armed
 * here is one of dl_other's. */
void eng_conn_arm(struct mroce_conn *c, uint64_t t)
{
    if (t < c->dl_other)
        c->dl_other = t;
    if (t >= c->deadline)
        return;
    c->deadline = t;
    eng_sched_timer(c);
}

/* The coalesced ACK, RNR waits, CLOSE and the READ watch. */
static uint64_t conn_other(const struct mroce_conn *c)
{
    uint64_t t = c->ack_at;
    if (c->n_rnr) {
        for (uint32_t d = c->snd_una; d != c->snd_next; d++) {
            struct txp *x = eng_txp(c, d);
            if (x->state == TXP_RNR && x->rnr_at < t)
                t = x->rnr_at;
        }
    }
    if (c->close_pending && c->close_at < t)
        t = c->close_at;
    if (c->read_watch < t)
        t = c->read_watch;
    return t;
}

/* The earliest of the path timers (O(1), ptimer.c), R-LOSS-8's and the
 * others. */
static void conn_set_deadline(struct mroce_conn *c, uint64_t paths)
{
    uint64_t t = c->rack_min < paths ? c->rack_min : paths;
    if (c->dl_other < t)
        t = c->dl_other;
    if (t == c->deadline)
        return;
    c->deadline = t;
    eng_sched_timer(c);
}

/* c's deadline came due at `now` (sched.c): whether one of its timers
 * is. The path timers' part of it is only a bound (ptimer.c): when that
 * alone came due and no path timer is, the deadline is set again from the
 * tree made exact (so that it does not come early again until a path
 * timer moves later) and c is not run: what runs at each instant is what
 * an exact deadline would run. The path timers are those of its last
 * setting: every change of them ends in one (eng_conn_data_sent,
 * eng_conn_update_deadline). */
bool eng_conn_due(struct mroce_conn *c, uint64_t now)
{
    uint64_t paths =
        c->state == MROCE_CONN_CONNECTED ? eng_ptimer_exact(c) : ENG_NEVER;
    if (c->dl_other <= now || c->rack_min <= now || paths <= now)
        return true;
    conn_set_deadline(c, paths);
    return false;
}

/* The exact earliest timer: path timers, R-LOSS-8 per plane (O(1) each,
 * rack.c), the coalesced ACK and the rarer ones. */
void eng_conn_update_deadline(struct mroce_conn *c)
{
    if (c->state != MROCE_CONN_CONNECTED) {
        c->rack_min = ENG_NEVER; /* neither counts */
        c->dl_other = conn_other(c);
        conn_set_deadline(c, ENG_NEVER);
        return;
    }
    eng_rack_update(c);
    c->dl_other = conn_other(c);
    conn_set_deadline(c, eng_ptimer_next(c));
}

/* An ACK or NACK went out: of the deadline's timers only the coalesced
 * ACK's can have moved (resp_ack_one clears it), and R-LOSS-8's inputs
 * are the sender's (rack_min is as the last update left it). */
void eng_conn_ack_sent(struct mroce_conn *c)
{
    if (c->state != MROCE_CONN_CONNECTED) {
        eng_conn_update_deadline(c);
        return;
    }
    c->dl_other = conn_other(c);
    conn_set_deadline(c, eng_ptimer_next(c));
}

/* A data packet went out on a path p of connected c: of the deadline's
 * timers only p's moved (the tree's root, O(1)) and R-LOSS-8's, which
 * eng_rack_sent keeps. dl_other is still exact: every entry point that
 * moves one of its timers later (an ACK sent, a timer run, a received
 * ACK or READ response) ends in eng_conn_update_deadline, and
 * eng_conn_arm lowers it; so is rack_min, whose other inputs (what is
 * acknowledged, the RTTs and the rate hint) change only there. */
void eng_conn_data_sent(struct mroce_conn *c)
{
    conn_set_deadline(c, eng_ptimer_next(c));
}
