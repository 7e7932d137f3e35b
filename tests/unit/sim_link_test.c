/* Unit tests for simulated links (src/sim/link.c): serialization and
 * propagation timing, degraded rate, down/up (at send and in flight),
 * seeded random loss, PFC signal delay; a NIC's room over its links. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "sim/defaults.h"
#include "sim/event.h"
#include "sim/link.h"
#include "sim/nic.h"
#include "sim/pkt.h"

#define US MROCE_SIM_PS_PER_US
#define MAXCAP 20000

/* A sink that records arrival times and frees the packets. */
struct cap {
    struct mroce_sim_pool *pool;
    int n;
    uint64_t at[MAXCAP];
    uint32_t len[MAXCAP];
    int pauses;
    int last_prio;
    bool last_on;
    uint64_t pause_at;
};

static void cap_recv(void *obj, int port, struct mroce_sim_pkt *p, uint64_t now)
{
    struct cap *c = obj;
    assert_int_equal(port, 3);
    assert_true(c->n < MAXCAP);
    c->at[c->n] = now;
    c->len[c->n] = p->len;
    c->n++;
    mroce_sim_pkt_deliver(c->pool, p);
}

static void cap_pause(void *obj, int port, int prio, bool on, uint64_t now)
{
    struct cap *c = obj;
    assert_int_equal(port, 5);
    c->pauses++;
    c->last_prio = prio;
    c->last_on = on;
    c->pause_at = now;
}

struct env {
    struct mroce_sim_evlist *ev;
    struct mroce_sim_pool *pool;
    struct mroce_sim_link *l;
    struct cap *cap;
};

static void env_open(struct env *e, double loss, uint64_t seed)
{
    e->ev = mroce_sim_ev_create(0);
    e->pool = mroce_sim_pool_create(9000, 0);
    struct mroce_sim_link_cfg c = {.loss = loss, .seed = seed};
    e->l = mroce_sim_link_create(e->ev, e->pool, &c); /* 400G, 1 us */
    assert_non_null(e->l);
    e->cap = calloc(1, sizeof(*e->cap));
    e->cap->pool = e->pool;
    struct mroce_sim_sink s = {.recv = cap_recv, .obj = e->cap, .port = 3};
    struct mroce_sim_pause_sink ps = {
        .pause = cap_pause, .obj = e->cap, .port = 5};
    mroce_sim_link_set_dst(e->l, &s);
    mroce_sim_link_set_src(e->l, &ps);
}

static void env_close(struct env *e)
{
    assert_true(mroce_sim_pool_conserved(e->pool));
    mroce_sim_link_destroy(e->l);
    mroce_sim_pool_destroy(e->pool);
    mroce_sim_ev_destroy(e->ev);
    free(e->cap);
}

static struct mroce_sim_pkt *mk(struct env *e, uint32_t len)
{
    static uint8_t buf[9000];
    struct mroce_pkt_meta m;
    memset(&m, 0, sizeof(m));
    m.src.family = m.dst.family = MROCE_AF_INET;
    struct mroce_sim_pkt *p = mroce_sim_pkt_inject(e->pool, &m, buf, len, 0);
    assert_non_null(p);
    return p;
}

/* 400 Gb/s is 20 ps per byte; frames queue back to back on the wire. */
static void test_timing(void **state)
{
    (void)state;
    struct env e;
    env_open(&e, 0.0, 1);
    uint64_t wire = 4096 + MROCE_SIM_WIRE_OVERHEAD_V4;
    assert_int_equal(mroce_sim_link_ser_ps(e.l, 1), 20);
    uint64_t end1 = mroce_sim_link_send(e.l, mk(&e, 4096), 0);
    uint64_t end2 = mroce_sim_link_send(e.l, mk(&e, 4096), 0);
    assert_int_equal(end1, wire * 20);
    assert_int_equal(end2, 2 * wire * 20);
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER);
    assert_int_equal(e.cap->n, 2);
    assert_int_equal(e.cap->at[0], wire * 20 + US);
    assert_int_equal(e.cap->at[1], 2 * wire * 20 + US);
    /* At 37% of the rate a frame takes 1/0.37 as long (rounded up). */
    assert_true(mroce_sim_link_set_rate_fraction(e.l, 0.37));
    assert_false(mroce_sim_link_set_rate_fraction(e.l, 0.0));
    uint64_t ser = mroce_sim_link_ser_ps(e.l, (uint32_t)wire);
    assert_in_range(ser, wire * 8 * 1000 / 148, wire * 8 * 1000 / 148 + 1);
    struct mroce_sim_link_counters c;
    mroce_sim_link_get_counters(e.l, &c);
    assert_int_equal(c.tx_pkts, 2);
    assert_int_equal(c.rx_pkts, 2);
    assert_int_equal(c.busy_ps, 2 * wire * 20);
    assert_int_equal(c.in_flight, 0);
    env_close(&e);
}

static void down_ev(void *obj, uint64_t arg, uint64_t now)
{
    (void)now;
    mroce_sim_link_set_up(obj, arg != 0);
}

static void test_down_up(void **state)
{
    (void)state;
    struct env e;
    env_open(&e, 0.0, 1);
    /* Down before sending: dropped at once, time still spent. */
    mroce_sim_link_set_up(e.l, false);
    uint64_t end = mroce_sim_link_send(e.l, mk(&e, 1000), 0);
    assert_int_equal(end, (1000 + MROCE_SIM_WIRE_OVERHEAD_V4) * 20);
    mroce_sim_link_set_up(e.l, true);
    /* In flight when the link fails, then back up before it lands: a
     * flap loses what was on the wire. */
    mroce_sim_link_send(e.l, mk(&e, 1000), end);
    mroce_sim_ev_at(e.ev, end + US / 2, down_ev, e.l, 0);
    mroce_sim_ev_at(e.ev, end + US / 2 + 1, down_ev, e.l, 1);
    mroce_sim_ev_run(e.ev, 10 * US);
    /* After the flap, frames pass again. */
    mroce_sim_link_send(e.l, mk(&e, 1000), 10 * US);
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER);
    assert_int_equal(e.cap->n, 1);
    struct mroce_sim_link_counters c;
    mroce_sim_link_get_counters(e.l, &c);
    assert_int_equal(c.drop_down, 2);
    struct mroce_sim_pool_counters pc;
    mroce_sim_pool_get_counters(e.pool, &pc);
    assert_int_equal(pc.dropped[MROCE_SIM_DROP_LINK_DOWN], 2);
    assert_int_equal(pc.delivered, 1);
    env_close(&e);
}

static int lossy_run(uint64_t seed)
{
    struct env e;
    env_open(&e, 0.1, seed);
    uint64_t t = 0;
    for (int i = 0; i < 10000; i++)
        t = mroce_sim_link_send(e.l, mk(&e, 64), t);
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER);
    struct mroce_sim_link_counters c;
    mroce_sim_link_get_counters(e.l, &c);
    assert_int_equal(c.drop_loss + (uint64_t)e.cap->n, 10000);
    int lost = (int)c.drop_loss;
    env_close(&e);
    return lost;
}

/* 10% loss: about 1000 of 10000 (4 sigma = 120), the same count for the
 * same seed, a different pattern for another. */
static void test_loss(void **state)
{
    (void)state;
    int a = lossy_run(42), b = lossy_run(42), c = lossy_run(43);
    assert_in_range(a, 880, 1120);
    assert_int_equal(a, b);
    assert_in_range(c, 880, 1120);
    assert_true(a != c);
}

static void count_tap(void *ud, const struct mroce_sim_pkt *p, uint64_t now)
{
    (void)p;
    (void)now;
    (*(int *)ud)++;
}

/* Loss, a tap and down set after creation apply from the next frame,
 * and clearing them makes the link plain again (link.c's fast path). */
static void test_loss_tap_later(void **state)
{
    (void)state;
    struct env e;
    env_open(&e, 0.0, 1);
    int taps = 0;
    uint64_t t = mroce_sim_link_send(e.l, mk(&e, 64), 0);
    assert_true(mroce_sim_link_set_loss(e.l, 1.0));
    t = mroce_sim_link_send(e.l, mk(&e, 64), t);
    assert_true(mroce_sim_link_set_loss(e.l, 0.0));
    mroce_sim_link_set_tap(e.l, count_tap, &taps);
    t = mroce_sim_link_send(e.l, mk(&e, 64), t);
    mroce_sim_link_set_tap(e.l, NULL, NULL);
    t = mroce_sim_link_send(e.l, mk(&e, 64), t);
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER); /* land before the cut */
    struct mroce_sim_link_counters c;
    t = mroce_sim_ev_now(e.ev);
    mroce_sim_link_set_up(e.l, false); /* dropped as it starts */
    t = mroce_sim_link_send(e.l, mk(&e, 64), t);
    mroce_sim_link_get_counters(e.l, &c);
    assert_int_equal(c.drop_down, 1);
    mroce_sim_link_set_up(e.l, true);
    mroce_sim_link_send(e.l, mk(&e, 64), t + US);
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER);
    mroce_sim_link_get_counters(e.l, &c);
    assert_int_equal(c.drop_loss, 1);
    assert_int_equal(c.drop_down, 1);
    assert_int_equal(e.cap->n, 4);
    assert_int_equal(taps, 1);
    env_close(&e);
}

static void test_pause_signal(void **state)
{
    (void)state;
    struct env e;
    env_open(&e, 0.0, 1);
    mroce_sim_link_pause(e.l, 1, true, 5 * US);
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER);
    assert_int_equal(e.cap->pauses, 1);
    assert_int_equal(e.cap->last_prio, 1);
    assert_true(e.cap->last_on);
    assert_int_equal(e.cap->pause_at,
                     5 * US + US + MROCE_SIM_MIN_FRAME_WIRE * 20);
    mroce_sim_link_pause(e.l, 1, false, 7 * US);
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER);
    assert_false(e.cap->last_on);
    struct mroce_sim_link_counters c;
    mroce_sim_link_get_counters(e.l, &c);
    assert_int_equal(c.pause_sent, 1);
    assert_int_equal(c.resume_sent, 1);
    env_close(&e);
}

static void nic_rx(void *ud, int port, struct mroce_sim_pkt *p, uint64_t now)
{
    (void)ud;
    (void)port;
    (void)p;
    (void)now;
    fail(); /* nothing arrives at the NIC here */
}

static void nic_room(void *ud, uint64_t now)
{
    (void)now;
    (*(int *)ud)++;
}

/* The room mask follows each port's frames waiting (txq 2) as they are
 * queued and start, and only linked ports have room: port 1 has none. */
static void test_nic_room_mask(void **state)
{
    (void)state;
    struct env e;
    env_open(&e, 0.0, 0);
    struct mroce_sim_link *l2 = mroce_sim_link_create(e.ev, e.pool, NULL);
    struct mroce_sim_sink s = {.recv = cap_recv, .obj = e.cap, .port = 3};
    mroce_sim_link_set_dst(l2, &s);
    int rooms = 0;
    struct mroce_sim_nic_owner o = {
        .rx = nic_rx, .room = nic_room, .ud = &rooms};
    struct mroce_sim_nic_cfg nc = {.n_ports = 3, .txq_pkts = 2};
    struct mroce_sim_nic *nic = mroce_sim_nic_create(e.ev, &nc, &o);
    assert_non_null(nic);
    assert_int_equal(mroce_sim_nic_room_mask(nic), 0);
    mroce_sim_nic_attach(nic, 0, e.l, NULL);
    mroce_sim_nic_attach(nic, 2, l2, NULL);
    assert_int_equal(mroce_sim_nic_room_mask(nic), 5);
    for (int i = 0; i < 3; i++) { /* one starts, two wait */
        struct mroce_sim_pkt *p = mk(&e, 1000);
        p->meta.plane = 0;
        mroce_sim_nic_send(nic, e.pool, p, 0);
    }
    assert_int_equal(mroce_sim_nic_queued(nic), 2);
    assert_int_equal(mroce_sim_nic_room_mask(nic), 4);
    assert_true(mroce_sim_nic_has_room(nic)); /* 2 of 3 x 2 */
    uint64_t ser =
        mroce_sim_link_ser_ps(e.l, 1000 + MROCE_SIM_WIRE_OVERHEAD_V4);
    mroce_sim_ev_run(e.ev, ser); /* the second starts: room again */
    assert_int_equal(mroce_sim_nic_room_mask(nic), 5);
    assert_int_equal(rooms, 2);
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER);
    assert_int_equal(e.cap->n, 3);
    assert_int_equal(e.cap->at[2], 3 * ser + US);
    assert_int_equal(mroce_sim_nic_room_mask(nic), 5);
    mroce_sim_nic_destroy(nic);
    mroce_sim_link_destroy(l2);
    env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timing),
        cmocka_unit_test(test_down_up),
        cmocka_unit_test(test_loss),
        cmocka_unit_test(test_loss_tap_later),
        cmocka_unit_test(test_pause_signal),
        cmocka_unit_test(test_nic_room_mask),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
