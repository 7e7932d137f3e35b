/* Unit tests for the test-wire driver loop (src/io/testwire/twloop.c):
 * real engines over a perfect wire, and fake endpoints that show how the
 * loop moves virtual time and when its livelock guard fires. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <mroce/mroce.h>

#include "io/testwire/testwire.h"
#include "io/testwire/twloop.h"

#define US 1000ull
#define MS 1000000ull

/* ---- Two real engines ---- */

struct pair_env {
    struct mroce_twloop_pair *p;
    uint8_t buf[2][8192];
    struct mroce_mr *mr[2];
};

static void env_open(struct pair_env *e)
{
    struct mroce_twloop_pair_cfg c;
    memset(&c, 0, sizeof(c));
    c.wire.seed = 1;
    c.wire.delay_ns = 2 * US;
    for (int s = 0; s < 2; s++) {
        c.ctx[s].mtu = 1024;
        c.conn[s].n_paths = 4;
    }
    assert_int_equal(mroce_twloop_pair_create(&c, &e->p), 0);
    unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE;
    for (int s = 0; s < 2; s++) {
        for (size_t i = 0; i < sizeof(e->buf[s]); i++)
            e->buf[s][i] = (uint8_t)(i * 7 + (size_t)s * 101);
        assert_int_equal(mroce_reg_mr(e->p->pd[s], e->buf[s], sizeof(e->buf[s]),
                                      acc, &e->mr[s]),
                         0);
    }
}

struct want_wc {
    struct mroce_cq *cq;
    struct mroce_wc wc;
    int n;
};

static int pred_wc(struct mroce_twloop *loop, void *arg)
{
    (void)loop;
    struct want_wc *w = arg;
    if (w->n == 0)
        w->n = mroce_poll_cq(w->cq, 1, &w->wc);
    return w->n > 0;
}

static void wait_wc(struct pair_env *e, int side, struct mroce_wc *out)
{
    struct want_wc w = {.cq = e->p->cq[side]};
    int rc = mroce_twloop_run_until(e->p->loop, pred_wc, &w, 100 * MS);
    assert_int_equal(rc, MROCE_TWLOOP_DONE);
    *out = w.wc;
}

static struct mroce_send_wr env_wr(struct pair_env *e, uint32_t len)
{
    struct mroce_send_wr wr;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = 42;
    wr.sge.addr = (uint64_t)(uintptr_t)e->buf[0];
    wr.sge.length = len;
    wr.sge.lkey = mroce_mr_lkey(e->mr[0]);
    wr.remote_addr = (uint64_t)(uintptr_t)(e->buf[1] + 100);
    wr.rkey = mroce_mr_rkey(e->mr[1]);
    return wr;
}

static int env_setup(void **state)
{
    struct pair_env *e = calloc(1, sizeof(*e));
    if (!e)
        return -1;
    env_open(e);
    *state = e;
    return 0;
}

static int env_teardown(void **state)
{
    struct pair_env *e = *state;
    mroce_twloop_pair_destroy(e->p);
    free(e);
    return 0;
}

static void test_write_perfect_wire(void **state)
{
    struct pair_env *e = *state;
    struct mroce_send_wr wr = env_wr(e, 5000);
    assert_int_equal(mroce_post_write(e->p->conn[0], &wr), 0);
    struct mroce_wc wc;
    wait_wc(e, 0, &wc);
    assert_int_equal(wc.wr_id, 42);
    assert_int_equal(wc.status, MROCE_WC_SUCCESS);
    assert_int_equal(wc.opcode, MROCE_WC_RDMA_WRITE);
    assert_memory_equal(e->buf[1] + 100, e->buf[0], 5000);
    /* Virtual time moved, by about one round trip, not by a timeout. */
    uint64_t now = mroce_twloop_now(e->p->loop);
    assert_true(now >= 4 * US);
    assert_true(now < 100 * US);
}

static void test_send_perfect_wire(void **state)
{
    struct pair_env *e = *state;
    struct mroce_recv_wr rw = {.wr_id = 7};
    rw.sge.addr = (uint64_t)(uintptr_t)(e->buf[1] + 2000);
    rw.sge.length = 3000;
    rw.sge.lkey = mroce_mr_lkey(e->mr[1]);
    assert_int_equal(mroce_post_recv(e->p->conn[1], &rw), 0);
    struct mroce_send_wr wr = env_wr(e, 2500);
    assert_int_equal(mroce_post_send(e->p->conn[0], &wr), 0);
    struct mroce_wc wc;
    wait_wc(e, 1, &wc);
    assert_int_equal(wc.wr_id, 7);
    assert_int_equal(wc.status, MROCE_WC_SUCCESS);
    assert_int_equal(wc.opcode, MROCE_WC_RECV);
    assert_int_equal(wc.byte_len, 2500);
    assert_memory_equal(e->buf[1] + 2000, e->buf[0], 2500);
    wait_wc(e, 0, &wc);
    assert_int_equal(wc.status, MROCE_WC_SUCCESS);
    assert_int_equal(wc.opcode, MROCE_WC_SEND);
}

/* ---- Fake endpoints ---- */

struct fake {
    struct mroce_addr self, peer;
    int to_send;        /* packets still to send; -1: forever */
    uint64_t timers[4]; /* expiry times, UINT64_MAX = unused */
    uint64_t fired[4];  /* when each fired */
    int always_due;     /* next_expiry stays 0: a broken engine */
    int received;
    uint64_t last_rx;
};

static size_t fake_max_pkt(const void *ep)
{
    (void)ep;
    return 64;
}

static int fake_tx(void *ep, uint64_t now, uint8_t *buf, size_t cap,
                   struct mroce_pkt_meta *meta)
{
    (void)now;
    (void)cap;
    struct fake *f = ep;
    if (f->to_send == 0)
        return 0;
    if (f->to_send > 0)
        f->to_send--;
    meta->src = f->self;
    meta->dst = f->peer;
    meta->src_port = 1000;
    meta->dst_port = MROCE_UDP_PORT;
    memset(buf, 0xab, 16);
    return 16;
}

static int fake_rx(void *ep, uint64_t now, const struct mroce_pkt_meta *meta,
                   const uint8_t *buf, size_t len)
{
    (void)meta;
    (void)buf;
    (void)len;
    struct fake *f = ep;
    f->received++;
    f->last_rx = now;
    return 0;
}

static unsigned long fake_expiry_reads; /* next_expiry calls, all fakes */

static uint64_t fake_next_expiry(const void *ep)
{
    const struct fake *f = ep;
    fake_expiry_reads++;
    if (f->always_due)
        return 0;
    uint64_t t = UINT64_MAX;
    for (int i = 0; i < 4; i++)
        t = f->timers[i] < t ? f->timers[i] : t;
    return t;
}

static void fake_on_expiry(void *ep, uint64_t now)
{
    struct fake *f = ep;
    for (int i = 0; i < 4; i++) {
        if (f->timers[i] <= now) {
            f->timers[i] = UINT64_MAX;
            f->fired[i] = now;
        }
    }
}

static const struct mroce_ep_ops fake_ops = {
    .max_pkt = fake_max_pkt,
    .tx = fake_tx,
    .rx = fake_rx,
    .next_expiry = fake_next_expiry,
    .on_expiry = fake_on_expiry,
};

static struct mroce_addr host(uint8_t h)
{
    struct mroce_addr a = {.family = MROCE_AF_INET, .ip = {10, 0, 0, h}};
    return a;
}

struct fake_env {
    struct mroce_tw *tw;
    struct mroce_twloop *loop;
    struct fake f[2];
};

static void fake_open(struct fake_env *e, const struct mroce_tw_cfg *wc,
                      const struct mroce_twloop_cfg *lc)
{
    memset(e->f, 0, sizeof(e->f));
    struct mroce_addr addrs[2] = {host(1), host(2)};
    for (int i = 0; i < 2; i++) {
        e->f[i].self = addrs[i];
        e->f[i].peer = addrs[1 - i];
        for (int t = 0; t < 4; t++)
            e->f[i].timers[t] = UINT64_MAX;
    }
    assert_int_equal(mroce_tw_create(wc, &e->tw), 0);
    const struct mroce_ep_ops *ops[2] = {&fake_ops, &fake_ops};
    void *eps[2] = {&e->f[0], &e->f[1]};
    assert_int_equal(
        mroce_twloop_create_ops(e->tw, ops, eps, addrs, 2, lc, &e->loop), 0);
}

static void fake_close(struct fake_env *e)
{
    mroce_twloop_destroy(e->loop);
    mroce_tw_destroy(e->tw);
}

static struct mroce_tw_cfg quiet_wire(void)
{
    struct mroce_tw_cfg c = {.seed = 9, .delay_ns = 5 * US, .max_pkt = 64};
    return c;
}

/* Time jumps straight to each event: timers fire at their exact times,
 * a packet arrives exactly one delay after it was sent. */
static void test_time_jumps_to_events(void **state)
{
    (void)state;
    struct fake_env e;
    struct mroce_tw_cfg wc = quiet_wire();
    fake_open(&e, &wc, NULL);
    e.f[0].timers[0] = 3 * US;
    e.f[1].timers[0] = 1 * MS;
    e.f[0].to_send = 1;
    int rc = mroce_twloop_run_until(e.loop, NULL, NULL, 10 * MS);
    assert_int_equal(rc, MROCE_TWLOOP_TIMEOUT);
    assert_int_equal(mroce_twloop_now(e.loop), 10 * MS);
    assert_int_equal(e.f[0].fired[0], 3 * US);
    assert_int_equal(e.f[1].fired[0], 1 * MS);
    assert_int_equal(e.f[1].received, 1);
    assert_int_equal(e.f[1].last_rx, 5 * US);
    struct mroce_twloop_stats st;
    mroce_twloop_get_stats(e.loop, &st);
    assert_int_equal(st.tx_pkts, 1);
    assert_int_equal(st.expiries, 2);
    assert_true(st.passes < 20); /* no busy waiting in between */
    fake_close(&e);
}

/* Arms a timer the way a post between passes moves an engine's expiry:
 * once, when the wire delivered the first packet. */
static int pred_arm(struct mroce_twloop *loop, void *arg)
{
    struct fake_env *e = arg;
    if (e->f[1].received && e->f[1].timers[1] == UINT64_MAX &&
        !e->f[1].fired[1])
        e->f[1].timers[1] = mroce_twloop_now(loop) + 15 * US;
    return 0;
}

/* Each pass reads an endpoint's expiry once (the time jump reuses what
 * the timer check read: nothing runs in between), and still sees a timer
 * armed between passes. */
static void test_expiry_read_once_per_pass(void **state)
{
    (void)state;
    struct fake_env e;
    struct mroce_tw_cfg wc = quiet_wire();
    fake_open(&e, &wc, NULL);
    e.f[0].timers[0] = 3 * US;
    e.f[1].timers[0] = 1 * MS;
    e.f[0].to_send = 1;
    fake_expiry_reads = 0;
    int rc = mroce_twloop_run_until(e.loop, pred_arm, &e, 10 * MS);
    assert_int_equal(rc, MROCE_TWLOOP_TIMEOUT);
    assert_int_equal(e.f[0].fired[0], 3 * US);
    assert_int_equal(e.f[1].last_rx, 5 * US);
    assert_int_equal(e.f[1].fired[1], 20 * US);
    assert_int_equal(e.f[1].fired[0], 1 * MS);
    struct mroce_twloop_stats st;
    mroce_twloop_get_stats(e.loop, &st);
    assert_true(fake_expiry_reads <= 2 * st.passes);
    fake_close(&e);
}

/* With pacing, a sender waits for its egress: 10 packets at 1 Gbit/s of
 * 16 + 84 bytes take 800 ns each, so the last arrives at 9 * 800 ns +
 * 800 ns + delay. */
static void test_pacing_follows_egress(void **state)
{
    (void)state;
    struct fake_env e;
    struct mroce_tw_cfg wc = quiet_wire();
    wc.rate_bps = 1000000000ull;
    wc.wire_overhead = 84;
    fake_open(&e, &wc, NULL);
    e.f[0].to_send = 10;
    mroce_twloop_run_until(e.loop, NULL, NULL, 1 * MS);
    assert_int_equal(e.f[1].received, 10);
    assert_int_equal(e.f[1].last_rx, 10 * 800 + 5 * US);
    fake_close(&e);
}

static void test_frozen_endpoint(void **state)
{
    (void)state;
    struct fake_env e;
    struct mroce_tw_cfg wc = quiet_wire();
    fake_open(&e, &wc, NULL);
    e.f[0].to_send = 3;
    e.f[1].to_send = 3;
    e.f[1].timers[0] = 1 * US;
    assert_int_equal(mroce_twloop_set_mode(e.loop, 1, MROCE_TWLOOP_FROZEN), 0);
    mroce_twloop_run_until(e.loop, NULL, NULL, 1 * MS);
    assert_int_equal(e.f[1].received, 0);
    assert_int_equal(e.f[1].to_send, 3);        /* never ran */
    assert_int_equal(e.f[1].timers[0], 1 * US); /* never fired */
    struct mroce_twloop_stats st;
    mroce_twloop_get_stats(e.loop, &st);
    assert_int_equal(st.discarded, 3);
    assert_int_equal(mroce_twloop_set_mode(e.loop, 2, MROCE_TWLOOP_LIVE),
                     MROCE_EINVAL);
    fake_close(&e);
}

/* An engine whose timer is always due, or that always has a packet at
 * the same instant, would hang a test: the guard stops it. */
static void test_livelock_guard(void **state)
{
    (void)state;
    struct mroce_twloop_cfg lc = {.max_stall = 1000};
    struct fake_env e;
    struct mroce_tw_cfg wc = quiet_wire();
    fake_open(&e, &wc, &lc);
    e.f[0].always_due = 1;
    int rc = mroce_twloop_run_until(e.loop, NULL, NULL, 1 * MS);
    assert_int_equal(rc, MROCE_EBUSY);
    assert_int_equal(mroce_twloop_now(e.loop), 0);
    fake_close(&e);

    /* Endless packets with no egress limit and no delay. */
    wc.delay_ns = 0;
    wc.capacity = 100000;
    lc.no_pace = 1;
    fake_open(&e, &wc, &lc);
    e.f[0].to_send = -1;
    rc = mroce_twloop_run_until(e.loop, NULL, NULL, 1 * MS);
    assert_int_equal(rc, MROCE_EBUSY);
    fake_close(&e);
}

/* The default guard allows long bursts at one instant: 5000 packets at
 * t = 0 take 79 passes of 64, far below it. */
static void test_guard_allows_bursts(void **state)
{
    (void)state;
    struct mroce_twloop_cfg lc = {.no_pace = 1};
    struct fake_env e;
    struct mroce_tw_cfg wc = quiet_wire();
    wc.capacity = 8192;
    fake_open(&e, &wc, &lc);
    e.f[0].to_send = 5000;
    int rc = mroce_twloop_run_until(e.loop, NULL, NULL, 1 * MS);
    assert_int_equal(rc, MROCE_TWLOOP_TIMEOUT);
    assert_int_equal(e.f[1].received, 5000);
    fake_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time_jumps_to_events),
        cmocka_unit_test(test_expiry_read_once_per_pass),
        cmocka_unit_test(test_pacing_follows_egress),
        cmocka_unit_test(test_frozen_endpoint),
        cmocka_unit_test(test_livelock_guard),
        cmocka_unit_test(test_guard_allows_bursts),
        cmocka_unit_test_setup_teardown(test_write_perfect_wire, env_setup,
                                        env_teardown),
        cmocka_unit_test_setup_teardown(test_send_perfect_wire, env_setup,
                                        env_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
