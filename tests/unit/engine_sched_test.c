/* The context's scheduler (src/engine/sched.c) against a model of the
 * connection-list scan it replaced: the ready set's round-robin order,
 * the deadline heap's exact minimum, due timers in list order, removal on
 * destroy; the path timer tree (ptimer.c) against a scan; the memory
 * accounting of mroce_ctx_state_bytes (mem.c); and, over lossy transfers,
 * the deadline a data packet updates from what it moved against a full
 * recompute, and the connections a transmit call leaves out of its walk
 * against a try of each. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "engine/eng.h"
#include "io/ep.h"
#include "io/testwire/twloop.h"
#include "support/peer.h"

#define N_CONNS 1000

/* ---- fixture: bare connections registered with the scheduler ---- */

struct model {
    struct mroce_ctx *ctx;
    struct mroce_conn *list[N_CONNS]; /* list order: newest first */
    uint32_t n;
    struct mroce_conn *cursor; /* the old tx_cursor; NULL = head */
    bool ready[N_CONNS + 1];   /* by creation id */
    uint32_t ids;
    uint64_t rng;
};

static uint64_t rnd(struct model *m)
{
    m->rng = m->rng * 6364136223846793005ull + 1442695040888963407ull;
    return m->rng >> 33;
}

static struct mroce_ctx *ctx_new(void)
{
    struct mroce_ctx_attr a = {.deterministic = 1, .seed = 1};
    a.addr.family = MROCE_AF_INET;
    struct mroce_ctx *ctx = NULL;
    assert_int_equal(mroce_ctx_open(&a, &ctx), 0);
    return ctx;
}

/* A connection the scheduler knows, outside any list (the test's own). */
static struct mroce_conn *model_add(struct model *m)
{
    struct mroce_conn *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    c->ctx = m->ctx;
    c->deadline = ENG_NEVER;
    c->read_watch = ENG_NEVER;
    c->ack_at = ENG_NEVER;
    c->local.conn_id = ++m->ids; /* the test's id: creation order */
    c->state = MROCE_CONN_CONNECTED;
    c->rack = calloc(m->ctx->dev.n_planes, sizeof(*c->rack)); /* no paths */
    assert_non_null(c->rack);
    eng_rack_init(c);
    c->tt_leaves = eng_ptimer_leaves(0); /* an empty path timer tree */
    c->ttree = calloc(c->tt_leaves, sizeof(*c->ttree));
    assert_non_null(c->ttree);
    eng_ptimer_reset(c);
    assert_int_equal(eng_sched_add(m->ctx, c), 0);
    m->ctx->n_conns++;
    memmove(&m->list[1], &m->list[0], m->n * sizeof(m->list[0]));
    m->list[0] = c;
    m->n++;
    return c;
}

static uint32_t model_pos(const struct model *m, const struct mroce_conn *c)
{
    for (uint32_t i = 0; i < m->n; i++)
        if (m->list[i] == c)
            return i;
    fail();
    return 0;
}

static struct mroce_conn *model_next(const struct model *m,
                                     const struct mroce_conn *c)
{
    uint32_t i = model_pos(m, c) + 1;
    return i < m->n ? m->list[i] : NULL;
}

static void model_del(struct model *m, struct mroce_conn *c)
{
    if (m->cursor == c)
        m->cursor = model_next(m, c);
    eng_sched_del(m->ctx, c);
    m->ctx->n_conns--;
    uint32_t i = model_pos(m, c);
    memmove(&m->list[i], &m->list[i + 1], (m->n - i - 1) * sizeof(m->list[0]));
    m->n--;
    m->ready[c->local.conn_id] = false;
    free(c->rack);
    free(c->ttree);
    free(c);
}

/* The old eng_ctx_tx loop: from the cursor around the list once. */
static struct mroce_conn *model_pick(const struct model *m)
{
    uint32_t start = m->cursor ? model_pos(m, m->cursor) : 0;
    for (uint32_t k = 0; k < m->n; k++) {
        struct mroce_conn *c = m->list[(start + k) % m->n];
        if (m->ready[c->local.conn_id])
            return c;
    }
    return NULL;
}

static int model_setup(void **state)
{
    struct model *m = calloc(1, sizeof(*m));
    m->ctx = ctx_new();
    m->rng = 42;
    *state = m;
    return 0;
}

static int model_teardown(void **state)
{
    struct model *m = *state;
    while (m->n)
        model_del(m, m->list[0]);
    mroce_ctx_close(m->ctx);
    free(m);
    return 0;
}

/* ---- ready set ---- */

static void check_pick(struct model *m)
{
    struct mroce_conn *want = model_pick(m);
    assert_ptr_equal(eng_sched_pick(m->ctx), want);
}

static void ready_step(struct model *m)
{
    struct mroce_conn *c = m->list[rnd(m) % m->n];
    switch (rnd(m) % 4) {
    case 0:
    case 1:
        eng_sched_ready(c);
        m->ready[c->local.conn_id] = true;
        break;
    case 2: { /* the picked one sends, or turns out idle */
        struct mroce_conn *p = model_pick(m);
        if (!p)
            break;
        if (rnd(m) % 2) {
            eng_sched_sent(p);
            m->cursor = model_next(m, p);
        } else {
            eng_sched_idle(p);
            m->ready[p->local.conn_id] = false;
        }
        break;
    }
    default:
        eng_sched_idle(c);
        m->ready[c->local.conn_id] = false;
        break;
    }
}

static void test_ready_round_robin(void **state)
{
    struct model *m = *state;
    for (int i = 0; i < 300; i++)
        model_add(m);
    for (int i = 0; i < 20000; i++) {
        ready_step(m);
        check_pick(m);
    }
}

/* Destroying connections, the one under the cursor included, keeps the
 * order of the list scan; so do connections created meanwhile. */
static void test_ready_destroy(void **state)
{
    struct model *m = *state;
    for (int i = 0; i < 200; i++)
        model_add(m);
    for (int i = 0; i < 5000; i++) {
        ready_step(m);
        if (rnd(m) % 8 == 0 && m->n > 1) {
            struct mroce_conn *v =
                rnd(m) % 2 && m->cursor ? m->cursor : m->list[rnd(m) % m->n];
            model_del(m, v);
        }
        if (rnd(m) % 9 == 0)
            model_add(m);
        check_pick(m);
    }
    while (m->n) {
        model_del(m, m->list[rnd(m) % m->n]);
        check_pick(m);
    }
    assert_null(eng_sched_pick(m->ctx));
}

/* ---- deadline heap ---- */

static uint64_t model_min(const struct model *m)
{
    uint64_t t = ENG_NEVER;
    for (uint32_t i = 0; i < m->n; i++)
        if (m->list[i]->deadline < t)
            t = m->list[i]->deadline;
    return t;
}

/* Arms lower a deadline; recomputing may raise it or clear it. */
static void timer_step(struct model *m, uint64_t base)
{
    struct mroce_conn *c = m->list[rnd(m) % m->n];
    uint64_t t = base + rnd(m) % 100000;
    switch (rnd(m) % 3) {
    case 0:
        eng_conn_arm(c, t);
        break;
    case 1:
        c->read_watch = rnd(m) % 4 ? t : ENG_NEVER;
        eng_conn_update_deadline(c);
        assert_int_equal(c->deadline, c->read_watch);
        break;
    default:
        eng_conn_arm(c, base + rnd(m) % 1000); /* early: many equal keys */
        break;
    }
}

static void test_heap_exact(void **state)
{
    struct model *m = *state;
    for (int i = 0; i < N_CONNS; i++)
        model_add(m);
    assert_int_equal(mroce_ctx_next_expiry(m->ctx), ENG_NEVER);
    for (int i = 0; i < 50000; i++) {
        timer_step(m, 1000000);
        assert_int_equal(mroce_ctx_next_expiry(m->ctx), model_min(m));
        if (i % 1000 == 999)
            model_del(m, m->list[rnd(m) % m->n]);
    }
}

/* Every connection due at `now`, and only those, comes out, newest first
 * (the list order: port draws stay in the same order), and leaves the
 * heap; the rest keep their deadlines. */
static void test_heap_due_order(void **state)
{
    struct model *m = *state;
    for (int i = 0; i < 500; i++)
        model_add(m);
    for (int round = 0; round < 50; round++) {
        uint64_t base = 1000000 + round * 100000ull;
        for (int i = 0; i < 400; i++)
            timer_step(m, base);
        uint64_t now = base + rnd(m) % 100000;
        bool due[N_CONNS + 1] = {false};
        for (uint32_t i = 0; i < m->n; i++)
            due[m->list[i]->local.conn_id] = m->list[i]->deadline <= now;
        eng_sched_collect_due(m->ctx, now);
        uint32_t pos = 0;
        struct mroce_conn *c;
        while ((c = eng_sched_next_due(m->ctx))) {
            while (m->list[pos] != c) {
                assert_false(due[m->list[pos]->local.conn_id]);
                pos++;
            }
            assert_true(due[c->local.conn_id]);
            assert_int_equal(c->deadline, ENG_NEVER);
            pos++;
        }
        for (; pos < m->n; pos++)
            assert_false(due[m->list[pos]->local.conn_id]);
        assert_true(mroce_ctx_next_expiry(m->ctx) > now);
        assert_int_equal(mroce_ctx_next_expiry(m->ctx), model_min(m));
    }
}

/* ---- through the public API ---- */

static struct mroce_conn *api_conn(struct mroce_pd *pd, struct mroce_cq *cq,
                                   uint32_t id)
{
    struct mroce_conn_attr a = {.send_cq = cq, .recv_cq = cq, .n_paths = 4};
    struct mroce_conn *c;
    assert_int_equal(mroce_conn_create(pd, &a, &c), 0);
    struct mroce_conn_params r;
    mroce_conn_get_params(c, &r);
    r.conn_id = id;
    assert_int_equal(mroce_conn_connect(c, &r), 0);
    return c;
}

/* Many connections, idle ones never visited: after the ready ones have
 * sent what they had, tx returns 0 and next_expiry is the earliest of the
 * live connections' timers, also after destroying some. */
static void test_api_many_conns(void **state)
{
    (void)state;
    struct mroce_ctx *ctx = ctx_new();
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    assert_int_equal(mroce_pd_alloc(ctx, &pd), 0);
    assert_int_equal(mroce_cq_create(ctx, 4096, &cq), 0);
    static struct mroce_conn *cs[300];
    for (uint32_t i = 0; i < 300; i++)
        cs[i] = api_conn(pd, cq, i + 1);
    uint8_t buf[MROCE_MAX_HDR_LEN + 4096 + MROCE_ICRC_LEN];
    struct mroce_pkt_meta meta;
    int sent = 0;
    while (mroce_ctx_tx(ctx, 1000, buf, sizeof(buf), &meta) > 0)
        sent++;
    assert_int_equal(sent, 0); /* connected, nothing posted */
    assert_int_equal(mroce_ctx_next_expiry(ctx), ENG_NEVER);
    for (uint32_t i = 0; i < 300; i += 7)
        assert_int_equal(mroce_conn_disconnect(cs[i]), 0);
    while (mroce_ctx_tx(ctx, 1000, buf, sizeof(buf), &meta) > 0)
        sent++;
    assert_int_equal(sent, 43); /* one CLOSE each */
    uint64_t t = mroce_ctx_next_expiry(ctx);
    assert_true(t > 1000 && t != ENG_NEVER);
    for (uint32_t i = 0; i < 300; i += 7)
        mroce_conn_destroy(cs[i]);
    assert_int_equal(mroce_ctx_next_expiry(ctx), ENG_NEVER);
    mroce_ctx_close(ctx);
}

/* ---- state bytes ---- */

static void test_state_bytes(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.attr.n_paths = 64;
    cfg.attr.dsn_window = 4096;
    struct peer *p = peer_new(&cfg);
    struct mroce_state_bytes b;
    mroce_ctx_state_bytes(p->ctx, &b);
    assert_int_equal(b.conns, 1);
    assert_int_equal(b.paths, 64);
    assert_int_equal(b.path_bytes, 64 * b.per_path);
    assert_int_equal(b.dsn_bytes, 64 * b.per_dsn_slot); /* starts small */
    assert_int_equal(b.psn_bytes, 64 * 8 * b.per_psn_slot);
    assert_int_equal(b.total, b.conn_bytes + b.path_bytes + b.dsn_bytes +
                                  b.psn_bytes + b.ctx_bytes + b.sec_bytes);
    assert_true(b.per_path <= 512);
    assert_true(b.path_bytes + b.psn_bytes < 64 * 1024); /* 64 paths */
    /* 128 packets in flight: the DSN ring doubles once, the retransmit
     * FIFO (nothing lost) stays as it was */
    for (int i = 0; i < 9; i++)
        assert_int_equal(
            peer_post(p, MROCE_OP_WRITE, 0, (uint64_t)i, 0, 16 * PEER_MTU),
            i < 8 ? 0 : MROCE_EAGAIN);
    assert_int_equal(peer_drain(p, NULL, 0), 128);
    mroce_ctx_state_bytes(p->ctx, &b);
    assert_int_equal(b.dsn_bytes,
                     128 * sizeof(struct txp) + 64 * sizeof(uint32_t));
    assert_int_equal(b.total, b.conn_bytes + b.path_bytes + b.dsn_bytes +
                                  b.psn_bytes + b.ctx_bytes + b.sec_bytes);
    peer_free(p);
}

/* An unconnected connection holds no paths and no rings. */
static void test_state_bytes_lazy(void **state)
{
    (void)state;
    struct peer *p = peer_new_unconnected(NULL);
    struct mroce_state_bytes b;
    mroce_ctx_state_bytes(p->ctx, &b);
    assert_int_equal(b.conns, 1);
    assert_int_equal(b.paths, 0);
    assert_int_equal(b.dsn_bytes + b.psn_bytes + b.path_bytes, 0);
    peer_free(p);
}

/* A second connection in p's context, to another peer, with a WRITE of
 * 8 packets queued. */
static struct mroce_conn *second_conn_with_data(struct peer *p)
{
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    struct mroce_conn_attr a = cfg.attr;
    a.send_cq = p->scq;
    a.recv_cq = p->rcq;
    struct mroce_conn *c = NULL;
    assert_int_equal(mroce_conn_create(p->pd, &a, &c), 0);
    struct mroce_conn_params r = p->remote;
    r.conn_id = PEER_REMOTE_ID + 1;
    assert_int_equal(mroce_conn_connect(c, &r), 0);
    struct mroce_send_wr w = {.wr_id = 1, .remote_addr = 0x100000000ull};
    w.sge.addr = p->va;
    w.sge.length = 8 * PEER_MTU;
    w.sge.lkey = mroce_mr_lkey(p->mr);
    w.rkey = 0x5EED;
    assert_int_equal(mroce_post_write(c, &w), 0);
    return c;
}

/* R-ACK-9: an ACK owed by one connection leaves before the data of
 * another, even when the round-robin's turn is the other's (the newest
 * connection goes first). */
static void test_acks_first(void **state)
{
    (void)state;
    struct peer *p = peer_new(NULL);
    struct mroce_conn *c2 = second_conn_with_data(p);
    uint8_t data[16] = {0};
    assert_int_equal(peer_write(p, 0, 0, 0, 0, 0, p->va, p->rkey, 0,
                                sizeof(data), data, sizeof(data)),
                     0);
    uint8_t buf[PEER_PKT_MAX];
    struct mroce_pkt_meta m;
    struct mroce_hdr h;
    for (int i = 0; i < 9; i++) {
        int n = mroce_ctx_tx(p->ctx, p->now, buf, sizeof(buf), &m);
        assert_true(n > 0);
        assert_int_equal(mroce_wire_decode(buf, (size_t)n, &h), 0);
        assert_int_equal(h.opcode, i ? MROCE_OP_WRITE : MROCE_OP_ACK);
        assert_int_equal(h.conn, i ? PEER_REMOTE_ID + 1 : PEER_REMOTE_ID);
    }
    assert_int_equal(mroce_ctx_tx(p->ctx, p->now, buf, sizeof(buf), &m), 0);
    mroce_conn_destroy(c2);
    peer_free(p);
}

/* ---- held set (R-PATH-14) ---- */

static bool bit_of(const struct eng_bits *b, uint32_t r)
{
    return (b->w[r / 64] >> (r % 64)) & 1;
}

/* c is held: in a group, which transmit calls pass over. */
static void assert_held(const struct mroce_conn *c)
{
    assert_true(c->plane_held);
    assert_true(c->held_group < ENG_HELD_GROUPS);
    assert_true(bit_of(&c->ctx->sched.held[c->held_group].bits, c->rank));
    assert_true(bit_of(&c->ctx->sched.ready, c->rank)); /* passed over */
}

/* The held groups against a model: a ready connection is walked
 * (eng_sched_pick_held, eng_sched_after_held, in the ready set's order)
 * unless it is held and the open planes and the plane version are as
 * when it was held; a change (eng_sched_ready) ends its hold; more keys
 * than groups free a group of another key. */
struct hmodel {
    bool held[N_CONNS + 1];
    uint64_t planes[N_CONNS + 1];
    uint32_t pv[N_CONNS + 1];
};

static bool hmodel_key(const struct model *m, const struct hmodel *h,
                       uint32_t id)
{
    return h->planes[id] == m->ctx->dev.tx_planes &&
           h->pv[id] == m->ctx->plane_ver;
}

/* Members of a freed group are no longer held (they were of another
 * key); the groups' counts add up. */
static void hmodel_sync(struct model *m, struct hmodel *h)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->n; i++) {
        struct mroce_conn *c = m->list[i];
        uint32_t id = c->local.conn_id;
        if (h->held[id] && c->held_group == ENG_HELD_NONE) {
            assert_false(hmodel_key(m, h, id));
            h->held[id] = false;
        }
        assert_int_equal(c->held_group != ENG_HELD_NONE, h->held[id]);
        n += h->held[id];
    }
    assert_int_equal(m->ctx->sched.n_held, n);
}

static void hmodel_check_walk(struct model *m, const struct hmodel *h)
{
    struct mroce_conn *want[N_CONNS], *got[N_CONNS];
    uint32_t nw = 0, ng = 0;
    uint32_t start = m->cursor ? model_pos(m, m->cursor) : 0;
    for (uint32_t k = 0; k < m->n; k++) {
        struct mroce_conn *c = m->list[(start + k) % m->n];
        uint32_t id = c->local.conn_id;
        if (m->ready[id] && !(h->held[id] && hmodel_key(m, h, id)))
            want[nw++] = c;
    }
    eng_sched_held_begin(m->ctx);
    struct mroce_conn *c = eng_sched_pick_held(m->ctx);
    while (c && ng < N_CONNS && (!ng || c != got[0])) {
        got[ng++] = c;
        c = eng_sched_after_held(c);
    }
    assert_int_equal(ng, nw);
    for (uint32_t k = 0; k < nw; k++)
        assert_ptr_equal(got[k], want[k]);
}

static void held_step(struct model *m, struct hmodel *h)
{
    struct mroce_conn *c = m->list[rnd(m) % m->n];
    uint32_t id = c->local.conn_id;
    switch (rnd(m) % 6) {
    case 0: /* a ready one tried and held */
        if (!m->ready[id])
            break;
        if (c->held_group != ENG_HELD_NONE)
            eng_sched_unhold(c);
        c->plane_held = true;
        eng_sched_hold(c);
        h->held[id] = true;
        h->planes[id] = m->ctx->dev.tx_planes;
        h->pv[id] = m->ctx->plane_ver;
        break;
    case 1:
        eng_sched_ready(c);
        m->ready[id] = true;
        h->held[id] = false;
        break;
    case 2: /* tried, nothing to send */
        if (c->held_group != ENG_HELD_NONE)
            eng_sched_unhold(c);
        c->plane_held = false;
        eng_sched_idle(c);
        m->ready[id] = h->held[id] = false;
        break;
    case 3: /* six masks: more than the groups */
        mroce_ctx_set_tx_planes(m->ctx, 1 + rnd(m) % 6);
        break;
    case 4:
        if (rnd(m) % 8 == 0)
            m->ctx->plane_ver++;
        break;
    default:
        if (m->n > 2 && rnd(m) % 4 == 0) {
            h->held[id] = false;
            model_del(m, c);
            model_add(m);
        }
        break;
    }
    hmodel_sync(m, h);
}

static void test_held_groups(void **state)
{
    struct model *m = *state;
    struct hmodel *h = calloc(1, sizeof(*h));
    assert_non_null(h);
    for (int i = 0; i < 100; i++)
        model_add(m);
    for (int i = 0; i < 20000; i++) {
        held_step(m, h);
        if (rnd(m) % 4 == 0)
            hmodel_check_walk(m, h);
    }
    free(h);
}

/* A peer on `planes` planes, two paths on each, with tx_planes `open`
 * and a WRITE of 60 packets posted and sent as far as it goes. */
static struct peer *held_peer(uint32_t planes, uint64_t open)
{
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.n_planes = planes;
    cfg.remote.n_paths = 2 * planes;
    cfg.attr.n_paths = 2 * planes;
    struct peer *p = peer_new(&cfg);
    mroce_ctx_set_tx_planes(p->ctx, open);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, 60 * PEER_MTU), 0);
    return p;
}

/* R-PATH-14: a connection whose data waits for a closed plane's port is
 * held (the calls until something changes do not try it); a call after
 * the plane opens sends its data there. */
static void test_held_plane_opens(void **state)
{
    (void)state;
    struct peer *p = held_peer(3, UINT64_C(1) << 1);
    int n = peer_drain(p, NULL, 0);
    assert_true(n > 0 && n < 60);
    assert_held(p->conn);
    /* another closed set: tried again (the planes moved), still held */
    mroce_ctx_set_tx_planes(p->ctx, 0);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_held(p->conn);
    mroce_ctx_set_tx_planes(p->ctx, UINT64_C(1) << 2);
    n = peer_drain(p, NULL, 0);
    assert_true(n > 0);
    for (int k = 0; k < n; k++)
        assert_int_equal(p->out[k].meta.plane, 2);
    peer_free(p);
}

/* R-PATH-14, R-PATH-15: data held for a closed plane while the one open
 * plane is down goes there when that plane comes back (the open planes
 * unchanged: only the plane version moves). */
static void test_held_plane_up(void **state)
{
    (void)state;
    struct peer *p = held_peer(2, UINT64_MAX);
    for (int i = 0; i < 8; i++) /* plane.c: PLANE_FAILS_DOWN */
        eng_plane_fail(p->ctx, 1);
    assert_true(eng_plane_down(p->ctx, 1));
    mroce_ctx_set_tx_planes(p->ctx, UINT64_C(1) << 1);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_held(p->conn);
    assert_int_equal(mroce_ctx_tx(p->ctx, p->now, p->out[0].buf,
                                  sizeof(p->out[0].buf), &p->out[0].meta),
                     0);
    eng_plane_delivered(p->ctx, 1);
    int n = peer_drain(p, NULL, 0);
    assert_true(n > 0);
    for (int k = 0; k < n; k++)
        assert_int_equal(p->out[k].meta.plane, 1);
    peer_free(p);
}

/* A held connection that changes (a post; an ACK it sends, R-ACK-9,
 * which counts as a change) leaves the held set and is tried again at its
 * turn: noted as held at its latest version. */
static void test_held_changed(void **state)
{
    (void)state;
    struct peer *p = held_peer(3, UINT64_C(1) << 1);
    struct mroce_conn *c = p->conn;
    assert_true(peer_drain(p, NULL, 0) > 0);
    assert_held(c);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 2, 0, PEER_MTU), 0);
    assert_int_equal(c->held_group, ENG_HELD_NONE);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_held(c);
    assert_int_equal(c->held_ver, c->ver);
    uint8_t data[16] = {0};
    assert_int_equal(peer_write(p, 0, 0, 0, 0, 0, p->va, p->rkey, 0,
                                sizeof(data), data, sizeof(data)),
                     0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_int_equal(p->out[0].h.opcode, MROCE_OP_ACK);
    assert_held(c);
    assert_int_equal(c->held_ver, c->ver);
    peer_free(p);
}

/* ---- plane shares (R-PATH-100) ---- */

#define SH_PLANES 4
#define SH_CONNS 4

/* A peer on SH_PLANES planes, two paths on each, and SH_CONNS - 1 more
 * connections in its context to other remote ids (PEER_REMOTE_ID + i);
 * c[i] is connection i, c[0] the peer's own. Nothing posted. */
static struct peer *share_peer(struct mroce_conn **c)
{
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.n_planes = SH_PLANES;
    cfg.remote.n_paths = 2 * SH_PLANES;
    cfg.attr.n_paths = 2 * SH_PLANES;
    struct peer *p = peer_new(&cfg);
    c[0] = p->conn;
    for (uint32_t i = 1; i < SH_CONNS; i++) {
        struct mroce_conn_attr a = cfg.attr;
        a.send_cq = p->scq;
        a.recv_cq = p->rcq;
        assert_int_equal(mroce_conn_create(p->pd, &a, &c[i]), 0);
        struct mroce_conn_params r = p->remote;
        r.conn_id = PEER_REMOTE_ID + i;
        assert_int_equal(mroce_conn_connect(c[i], &r), 0);
    }
    return p;
}

/* A WRITE of n packets on c from p's memory. */
static void share_post(struct peer *p, struct mroce_conn *c, uint32_t n)
{
    struct mroce_send_wr w = {.wr_id = 1, .remote_addr = 0x100000000ull};
    w.sge.addr = p->va;
    w.sge.length = n * PEER_MTU;
    w.sge.lkey = mroce_mr_lkey(p->mr);
    w.rkey = 0x5EED;
    assert_int_equal(mroce_post_write(c, &w), 0);
}

/* One transmit call with only `plane` open: a data packet there (the
 * port never idles while a connection could fill it); returns the index
 * of its connection. */
static uint32_t share_tx(struct peer *p, uint32_t plane)
{
    struct peer_out *o = &p->out[0];
    mroce_ctx_set_tx_planes(p->ctx, UINT64_C(1) << plane);
    int n = mroce_ctx_tx(p->ctx, p->now, o->buf, sizeof(o->buf), &o->meta);
    assert_true(n > 0);
    assert_int_equal(mroce_wire_decode(o->buf, (size_t)n, &o->h), 0);
    assert_int_equal(o->h.opcode, MROCE_OP_WRITE);
    assert_int_equal(o->meta.plane, plane);
    assert_int_equal(o->h.path % SH_PLANES, plane);
    uint32_t i = o->h.conn - PEER_REMOTE_ID;
    assert_true(i < SH_CONNS);
    return i;
}

/* R-PATH-100: ports that open in turn, in step with the round-robin over
 * as many connections as planes, gave each connection one plane for all
 * its data (its receiver's downlink on that plane carried it all). Each
 * connection now ends with its share on every plane, still one packet
 * per round (its count at most 2 apart from any other's at any time). */
static void test_plane_share(void **state)
{
    (void)state;
    struct mroce_conn *c[SH_CONNS];
    struct peer *p = share_peer(c);
    for (uint32_t i = 0; i < SH_CONNS; i++)
        share_post(p, c[i], 32);
    uint32_t on[SH_CONNS][SH_PLANES] = {{0}}, sent[SH_CONNS] = {0};
    for (uint32_t t = 0; t < 32 * SH_CONNS; t++) {
        uint32_t i = share_tx(p, t % SH_PLANES);
        on[i][t % SH_PLANES]++;
        sent[i]++;
        for (uint32_t j = 0; j < SH_CONNS; j++)
            assert_true(sent[i] <= sent[j] + 2);
    }
    for (uint32_t i = 0; i < SH_CONNS; i++) {
        assert_int_equal(sent[i], 32);
        for (uint32_t k = 0; k < SH_PLANES; k++)
            assert_in_range(on[i][k], 7, 9);
    }
    for (uint32_t i = 1; i < SH_CONNS; i++)
        mroce_conn_destroy(c[i]);
    peer_free(p);
}

/* R-PATH-100: a connection far below its share on a plane sends out of
 * turn when that plane opens, but gives up its next turn: one packet per
 * round, not every turn of that plane. */
static void test_plane_share_fair(void **state)
{
    (void)state;
    struct mroce_conn *c[SH_CONNS];
    struct peer *p = share_peer(c);
    share_post(p, c[0], 48);
    for (uint32_t t = 0; t < 12; t++) /* c[0] alone, planes 1-3 */
        assert_int_equal(share_tx(p, 1 + t % 3), 0);
    for (uint32_t i = 1; i < SH_CONNS; i++)
        share_post(p, c[i], 32);
    uint32_t sent[SH_CONNS] = {0};
    for (uint32_t t = 0; t < 8 * SH_CONNS; t++) {
        sent[share_tx(p, 0)]++;
        if (t % SH_CONNS == SH_CONNS - 1)
            for (uint32_t i = 0; i < SH_CONNS; i++)
                assert_in_range(sent[i], t / SH_CONNS, t / SH_CONNS + 2);
    }
    for (uint32_t i = 1; i < SH_CONNS; i++)
        mroce_conn_destroy(c[i]);
    peer_free(p);
}

/* R-PATH-100 keeps R-PATH-14 work-conserving: the connection furthest
 * below its share on the open plane, which cannot send there (its paths
 * on that plane disabled), does not leave the port idle. */
static void test_plane_share_fallback(void **state)
{
    (void)state;
    struct mroce_conn *c[SH_CONNS];
    struct peer *p = share_peer(c);
    share_post(p, c[1], 16);
    for (uint32_t t = 0; t < 6; t++) /* c[1] alone, planes 1-3 */
        assert_int_equal(share_tx(p, 1 + t % 3), 1);
    assert_int_equal(mroce_path_enable(c[1], 0, 0), 0);
    assert_int_equal(mroce_path_enable(c[1], SH_PLANES, 0), 0);
    share_post(p, c[0], 16);
    assert_true(eng_plane_lag(c[1], 0) > eng_plane_lag(c[0], 0));
    for (uint32_t t = 0; t < 4; t++)
        assert_int_equal(share_tx(p, 0), 0);
    for (uint32_t i = 1; i < SH_CONNS; i++)
        mroce_conn_destroy(c[i]);
    peer_free(p);
}

/* R-PATH-100: a plane that is down (R-PATH-15) leaves the shares: what a
 * connection sent into it before says nothing about the planes up. Two
 * connections even over planes 1-3, one of which had also sent 6 packets
 * into plane 0, are as far from their share on each plane up. */
static void test_plane_share_down(void **state)
{
    (void)state;
    struct mroce_conn *c[SH_CONNS];
    struct peer *p = share_peer(c);
    share_post(p, c[0], 12);
    for (uint32_t t = 0; t < 12; t++)
        assert_int_equal(share_tx(p, t < 6 ? 0 : 1 + t % 3), 0);
    share_post(p, c[1], 6);
    for (uint32_t t = 0; t < 6; t++)
        assert_int_equal(share_tx(p, 1 + t % 3), 1);
    assert_true(eng_plane_lag(c[0], 1) > eng_plane_lag(c[1], 1));
    for (int i = 0; i < 8; i++) /* plane.c: PLANE_FAILS_DOWN */
        eng_plane_fail(p->ctx, 0);
    assert_true(eng_plane_down(p->ctx, 0));
    for (uint32_t k = 1; k < SH_PLANES; k++) {
        assert_int_equal(eng_plane_lag(c[0], k), 0);
        assert_int_equal(eng_plane_lag(c[1], k), 0);
    }
    for (uint32_t i = 1; i < SH_CONNS; i++)
        mroce_conn_destroy(c[i]);
    peer_free(p);
}

static int teardown_peers(void **state)
{
    (void)state;
    peer_free_all();
    return 0;
}

/* ---- path timer tree (ptimer.c) ---- */

struct pt_model {
    struct mroce_conn c;
    struct model m;
    uint32_t n;
};

static void pt_open(struct pt_model *t, uint32_t n, uint64_t seed)
{
    memset(t, 0, sizeof(*t));
    t->n = n;
    t->m.rng = seed;
    t->c.n_alloc_paths = n;
    t->c.ptx = calloc(n, sizeof(*t->c.ptx));
    t->c.tt_leaves = eng_ptimer_leaves(n);
    t->c.ttree = calloc(t->c.tt_leaves, sizeof(*t->c.ttree));
    assert_true(t->c.ptx && t->c.ttree);
    eng_ptimer_reset(&t->c);
    for (uint32_t p = 0; p < n; p++) {
        struct path_tx *q = &t->c.ptx[p];
        q->rto_at = q->pto_at = q->probe_at = ENG_NEVER;
        eng_ptimer_init(&t->c, (uint16_t)p);
    }
    assert_int_equal(eng_ptimer_next(&t->c), ENG_NEVER);
}

static void pt_close(struct pt_model *t)
{
    free(t->c.ptx);
    free(t->c.ttree);
}

/* The earliest path timer by a scan, and its path (the lowest on a tie)
 * in *at, -1 if none. */
static uint64_t pt_scan(const struct pt_model *t, int *at)
{
    uint64_t best = ENG_NEVER;
    *at = -1;
    for (uint32_t p = 0; p < t->n; p++) {
        const struct path_tx *q = &t->c.ptx[p];
        uint64_t d = q->rto_at < q->pto_at ? q->rto_at : q->pto_at;
        d = q->probe_at < d ? q->probe_at : d;
        if (d < best) {
            best = d;
            *at = (int)p;
        }
    }
    return best;
}

/* One of p's three timers to `t`, re-keyed. */
static void pt_move(struct pt_model *t, uint32_t p, uint64_t at)
{
    struct path_tx *q = &t->c.ptx[p];
    uint64_t *w[3] = {&q->rto_at, &q->pto_at, &q->probe_at};
    *w[rnd(&t->m) % 3] = at;
    eng_ptimer_set(&t->c, (uint16_t)p);
}

/* The earliest path timer and its path, the lowest path on a tie, for
 * path counts that are and are not a power of two, against a scan; keys
 * drawn from a narrow range so that ties are frequent. The root is only
 * a bound (never later than the earliest timer); the path due is exact. */
static void ptimer_run(uint32_t n, uint64_t seed)
{
    struct pt_model t;
    pt_open(&t, n, seed);
    for (int i = 0; i < 20000; i++) {
        pt_move(&t, rnd(&t.m) % n,
                rnd(&t.m) % 5 ? 1000 + rnd(&t.m) % 40 : ENG_NEVER);
        int at;
        uint64_t best = pt_scan(&t, &at);
        assert_true(eng_ptimer_next(&t.c) <= best);
        uint64_t now = 1000 + rnd(&t.m) % 48;
        assert_int_equal(eng_ptimer_due(&t.c, now), best <= now ? at : -1);
        assert_true(eng_ptimer_next(&t.c) <= best);
    }
    pt_close(&t);
}

static void test_ptimer_tree(void **state)
{
    (void)state;
    uint32_t sizes[] = {1, 2, 3, 13, 16, 64, 100, 256};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        ptimer_run(sizes[i], 7 + i);
}

/* A key for a timer re-armed at `now`: mostly later than now within a
 * short range (ties are frequent), sometimes cleared. */
static uint64_t pt_key(struct pt_model *t, uint64_t now)
{
    return rnd(&t->m) % 8 ? now + 1 + rnd(&t->m) % 64 : ENG_NEVER;
}

/* Time runs forward; timers move earlier and later at random (a send
 * pushes a path's probe out, an ACK restarts or clears its RTO, a loss
 * arms one sooner). A wakeup at the root's time, as the connection's
 * deadline is, expires paths while eng_ptimer_due names one: each must be
 * the earliest due by a scan (the lowest path on a tie), its expiry may
 * move other paths' timers too, and when the loop ends no timer is due.
 * No timer is ever found late: the root is never later than the earliest
 * timer, so the next wakeup is never after it. */
static void ptimer_expiry_run(uint32_t n, uint64_t seed)
{
    struct pt_model t;
    pt_open(&t, n, seed);
    uint64_t now = 1000, expired = 0, early = 0;
    for (int i = 0; i < 40000; i++) {
        pt_move(&t, rnd(&t.m) % n, pt_key(&t, now));
        int at;
        uint64_t best = pt_scan(&t, &at);
        uint64_t wake = eng_ptimer_next(&t.c);
        assert_true(wake <= best);
        if (rnd(&t.m) % 4 || wake == ENG_NEVER)
            continue;
        now = wake > now ? wake : now; /* the deadline fires */
        bool any = false;
        int p;
        while ((p = eng_ptimer_due(&t.c, now)) >= 0) {
            assert_true(pt_scan(&t, &at) <= now);
            assert_int_equal(p, at);
            struct path_tx *q = &t.c.ptx[p];
            q->rto_at = q->pto_at = q->probe_at = ENG_NEVER;
            pt_move(&t, (uint32_t)p, pt_key(&t, now));
            if (rnd(&t.m) % 3 == 0)        /* its data resent elsewhere; or a */
                pt_move(&t, rnd(&t.m) % n, /* PROBE due at once */
                        rnd(&t.m) % 5 ? pt_key(&t, now) : now);
            expired++;
            any = true;
        }
        early += !any;
        assert_true(pt_scan(&t, &at) > now);
        assert_true(eng_ptimer_next(&t.c) > now);
    }
    assert_true(expired > 1000);
    print_message("%u paths: %llu expiries, %llu wakeups found none due\n", n,
                  (unsigned long long)expired, (unsigned long long)early);
    pt_close(&t);
}

static void test_ptimer_expiry_order(void **state)
{
    (void)state;
    uint32_t sizes[] = {1, 2, 5, 16, 32, 100};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        ptimer_expiry_run(sizes[i], 11 + i);
}

/* c's earliest timer by a scan of its paths and its other timers. */
static uint64_t conn_true_min(const struct mroce_conn *c)
{
    uint64_t t = c->rack_min < c->dl_other ? c->rack_min : c->dl_other;
    for (uint32_t p = 0; p < c->n_paths; p++) {
        const struct path_tx *q = &c->ptx[p];
        uint64_t d = q->rto_at < q->pto_at ? q->rto_at : q->pto_at;
        d = q->probe_at < d ? q->probe_at : d;
        t = d < t ? d : t;
    }
    return t;
}

/* A connection's deadline holds only a bound of its path timers: moved
 * later, it is not re-keyed. Time jumps to the context's next expiry,
 * which is never after the earliest timer; the connection comes out of
 * the heap exactly when one of its timers is due, and a wakeup that found
 * none due leaves the deadline exact (eng_conn_due). */
static void test_conn_due_lazy(void **state)
{
    struct model *m = *state;
    struct mroce_conn *c = model_add(m);
    uint32_t n = 13;
    c->n_paths = c->n_alloc_paths = n;
    c->ptx = calloc(n, sizeof(*c->ptx));
    free(c->ttree);
    c->tt_leaves = eng_ptimer_leaves(n);
    c->ttree = calloc(c->tt_leaves, sizeof(*c->ttree));
    assert_true(c->ptx && c->ttree);
    eng_ptimer_reset(c);
    uint64_t now = 1000, runs = 0, early = 0;
    for (int i = 0; i < 30000; i++) {
        struct path_tx *q = &c->ptx[rnd(m) % n];
        uint64_t *w[3] = {&q->rto_at, &q->pto_at, &q->probe_at};
        *w[rnd(m) % 3] = rnd(m) % 8 ? now + 1 + rnd(m) % 64 : ENG_NEVER;
        eng_ptimer_set(c, (uint16_t)(q - c->ptx));
        if (rnd(m) % 2)
            eng_conn_data_sent(c);
        else
            eng_conn_update_deadline(c);
        uint64_t e = mroce_ctx_next_expiry(m->ctx);
        assert_true(e <= conn_true_min(c));
        if (rnd(m) % 3 || e == ENG_NEVER)
            continue;
        now = e > now ? e : now;
        bool due = conn_true_min(c) <= now;
        eng_sched_collect_due(m->ctx, now);
        assert_ptr_equal(eng_sched_next_due(m->ctx), due ? c : NULL);
        if (!due) { /* early: re-keyed, exact */
            assert_int_equal(c->deadline, conn_true_min(c));
            assert_int_equal(mroce_ctx_next_expiry(m->ctx), c->deadline);
            early++;
            continue;
        }
        for (uint32_t p = 0; p < n; p++) { /* the path timers run */
            struct path_tx *r = &c->ptx[p];
            uint64_t *v[3] = {&r->rto_at, &r->pto_at, &r->probe_at};
            for (int k = 0; k < 3; k++)
                if (*v[k] <= now)
                    *v[k] = rnd(m) % 2 ? now + 1 + rnd(m) % 64 : ENG_NEVER;
            eng_ptimer_set(c, (uint16_t)p);
        }
        eng_conn_update_deadline(c);
        runs++;
    }
    assert_true(runs > 1000 && early > 100);
    free(c->ptx);
    c->ptx = NULL;
    c->n_paths = c->n_alloc_paths = 0;
}

/* ---- over a lossy wire: what the transmit path keeps, checked ---- */

struct dl_run {
    struct mroce_twloop_pair *p;
    uint64_t data_checks, ctl_checks, idle_checks, done;
    uint64_t wakes, early_wakes;
};

static struct dl_run dl;

/* A data packet updates the deadline from the path timers' root, rack_min
 * and dl_other (eng_conn_data_sent), an ACK from those and the ACK timer
 * (eng_conn_ack_sent): all three are what a full update computes, which
 * then changes none of them. */
static void dl_check_deadline(struct mroce_conn *c)
{
    uint64_t d = c->deadline, r = c->rack_min, o = c->dl_other;
    eng_conn_update_deadline(c);
    assert_int_equal(c->rack_min, r);
    assert_int_equal(c->dl_other, o);
    assert_int_equal(c->deadline, d);
}

/* mroce_ctx_tx, then the checks: after a packet its connection's
 * deadline; after a call that sent nothing, no connection that a try
 * would make send is left out of the walk (eng_req_spent, the ready set)
 * and the context says it is not busy. */
static int dl_tx(void *ep, uint64_t now, uint8_t *buf, size_t cap,
                 struct mroce_pkt_meta *meta)
{
    struct mroce_ctx *ctx = ep;
    struct mroce_conn *c = dl.p->conn[ctx == dl.p->ctx[1]];
    uint64_t data = c->cnt.tx_data_pkts;
    int n = mroce_ctx_tx(ctx, now, buf, cap, meta);
    if (n > 0) {
        dl_check_deadline(c);
        dl.data_checks += c->cnt.tx_data_pkts != data;
        dl.ctl_checks += c->cnt.tx_data_pkts == data;
    }
    if (n == 0 && c->state == MROCE_CONN_CONNECTED) {
        assert_false(eng_sched_busy(ctx));
        struct mroce_pkt_meta m;
        assert_int_equal(eng_req_ctl_tx(c, now, buf, cap, &m), 0);
        assert_int_equal(eng_req_data_tx(c, now, buf, &m), 0);
        dl.idle_checks++;
    }
    return n;
}

/* The earliest of c's timers by a scan of its paths (ptimer.c keeps only
 * a bound of theirs in the deadline). */
static uint64_t dl_true_min(const struct mroce_conn *c)
{
    uint64_t t = c->rack_min < c->dl_other ? c->rack_min : c->dl_other;
    for (uint32_t p = 0; c->state == MROCE_CONN_CONNECTED && p < c->n_paths;
         p++) {
        const struct path_tx *q = &c->ptx[p];
        uint64_t d = q->rto_at < q->pto_at ? q->rto_at : q->pto_at;
        d = q->probe_at < d ? q->probe_at : d;
        t = d < t ? d : t;
    }
    return t;
}

/* The context asks to be woken no later than its connection's earliest
 * timer (never late), perhaps earlier (a path timer moved later since). */
static uint64_t dl_next_expiry(const void *ep)
{
    const struct mroce_ctx *ctx = ep;
    uint64_t e = mroce_ctx_next_expiry(ctx);
    assert_true(e <= dl_true_min(dl.p->conn[ctx == dl.p->ctx[1]]));
    return e;
}

/* A wakeup runs every path timer due (none is left at or before now);
 * one that was early finds none. */
static void dl_on_expiry(void *ep, uint64_t now)
{
    struct mroce_ctx *ctx = ep;
    struct mroce_conn *c = dl.p->conn[ctx == dl.p->ctx[1]];
    dl.early_wakes += dl_true_min(c) > now;
    mroce_ctx_on_expiry(ctx, now);
    dl.wakes++;
    for (uint32_t p = 0; c->state == MROCE_CONN_CONNECTED && p < c->n_paths;
         p++)
        assert_true(c->ptx[p].due > now);
}

static int dl_pred(struct mroce_twloop *loop, void *arg)
{
    (void)loop;
    (void)arg;
    struct mroce_wc wc;
    while (mroce_poll_cq(dl.p->cq[0], 1, &wc) == 1) {
        assert_int_equal(wc.status, MROCE_WC_SUCCESS);
        dl.done++;
    }
    return dl.done == 4;
}

#define DL_LEN (64 * 1024)
#define DL_ALL (7 * DL_LEN)

/* A READ (whose response is the other side's data) and three WRITEs on
 * four streams, the first WRITE 4 times as long, so that its stream is
 * the last with data to send, sprayed over the paths of a reordering
 * wire that loses `loss` of the packets (few paths: each holds several
 * packets, and a send often moves its plane's oldest, R-LOSS-8). */
static void dl_case(double loss, uint32_t n_planes, uint16_t n_paths)
{
    static uint8_t src[DL_ALL], dst[DL_ALL];
    struct mroce_ep_ops ops = mroce_ep_ctx_ops;
    ops.tx = dl_tx;
    ops.next_expiry = dl_next_expiry;
    ops.on_expiry = dl_on_expiry;
    struct mroce_twloop_pair_cfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.wire.seed = 11;
    cfg.wire.n_routes = 16;
    cfg.wire.rate_bps = 100000000000ull;
    cfg.wire.delay_ns = 1000;
    cfg.wire.jitter_ns = 3000;
    cfg.wire.capacity = 16384;
    cfg.wire.loss = loss;
    for (int i = 0; i < 2; i++) {
        cfg.ctx[i].seed = 5 + (uint64_t)i;
        cfg.ctx[i].mtu = 1024;
        cfg.ctx[i].n_planes = n_planes;
        cfg.conn[i].n_paths = n_paths;
        cfg.conn[i].n_streams = 4;
    }
    cfg.ops = &ops;
    memset(&dl, 0, sizeof(dl));
    assert_int_equal(mroce_twloop_pair_create(&cfg, &dl.p), 0);
    unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                   MROCE_ACCESS_REMOTE_READ;
    struct mroce_mr *ms, *md;
    assert_int_equal(mroce_reg_mr(dl.p->pd[0], src, sizeof(src), acc, &ms), 0);
    assert_int_equal(mroce_reg_mr(dl.p->pd[1], dst, sizeof(dst), acc, &md), 0);
    for (int i = 0; i < DL_ALL; i++) {
        src[i] = (uint8_t)(i * 29 + 1);
        dst[i] = (uint8_t)(i * 7 + 2);
    }
    for (int m = 3; m >= 0; m--) { /* the READ, then the long WRITE */
        uint32_t off = m ? (uint32_t)(m + 3) * DL_LEN : 0;
        uint32_t len = m ? DL_LEN : 4 * DL_LEN;
        struct mroce_send_wr wr = {
            .wr_id = (uint64_t)m,
            .stream = (uint16_t)m,
            .sge = {(uint64_t)(uintptr_t)src + off, len, mroce_mr_lkey(ms)},
            .remote_addr = (uint64_t)(uintptr_t)dst + off,
            .rkey = mroce_mr_rkey(md)};
        assert_int_equal(m == 3 ? mroce_post_read(dl.p->conn[0], &wr)
                                : mroce_post_write(dl.p->conn[0], &wr),
                         0);
    }
    assert_int_equal(
        mroce_twloop_run_until(dl.p->loop, dl_pred, NULL, 2000000000ull),
        MROCE_TWLOOP_DONE);
    assert_memory_equal(src, dst, sizeof(src));
    struct mroce_conn_counters c0, c1;
    mroce_conn_get_counters(dl.p->conn[0], &c0);
    mroce_conn_get_counters(dl.p->conn[1], &c1);
    assert_int_equal(dl.data_checks, c0.tx_data_pkts + c1.tx_data_pkts);
    assert_int_equal(dl.ctl_checks, c0.tx_pkts + c1.tx_pkts - dl.data_checks);
    assert_true(dl.idle_checks > 0);
    assert_int_equal(c0.retx_pkts > 0, loss > 0);
    assert_true(dl.wakes > 0);
    print_message(
        "loss %.2f, %u planes, %u paths: %llu data packets (%llu "
        "resent), %llu others, %llu idle calls checked, %llu "
        "wakeups (%llu early)\n",
        loss, n_planes, n_paths, (unsigned long long)dl.data_checks,
        (unsigned long long)(c0.retx_pkts + c1.retx_pkts),
        (unsigned long long)dl.ctl_checks, (unsigned long long)dl.idle_checks,
        (unsigned long long)dl.wakes, (unsigned long long)dl.early_wakes);
    mroce_twloop_pair_destroy(dl.p);
}

static void test_tx_keeps(void **state)
{
    (void)state;
    dl_case(0, 1, 16);
    dl_case(0.05, 1, 16);
    dl_case(0.05, 2, 16);
    dl_case(0.05, 1, 4);
    dl_case(0.02, 1, 2);
    dl_case(0.1, 1, 3);
}

#define M(f) cmocka_unit_test_setup_teardown(f, model_setup, model_teardown)
#define P(f) cmocka_unit_test_teardown(f, teardown_peers)

int main(void)
{
    const struct CMUnitTest tests[] = {
        M(test_ready_round_robin),
        M(test_ready_destroy),
        M(test_heap_exact),
        M(test_heap_due_order),
        P(test_api_many_conns),
        P(test_state_bytes),
        P(test_state_bytes_lazy),
        P(test_acks_first),
        P(test_held_plane_opens),
        P(test_held_plane_up),
        P(test_held_changed),
        cmocka_unit_test_teardown(test_plane_share, teardown_peers),
        cmocka_unit_test_teardown(test_plane_share_fair, teardown_peers),
        cmocka_unit_test_teardown(test_plane_share_fallback, teardown_peers),
        cmocka_unit_test_teardown(test_plane_share_down, teardown_peers),
        M(test_held_groups),
        cmocka_unit_test(test_ptimer_tree),
        cmocka_unit_test(test_ptimer_expiry_order),
        M(test_conn_due_lazy),
        cmocka_unit_test(test_tx_keeps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
