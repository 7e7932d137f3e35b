/* Unit tests for the simulated switch (src/sim/switch.c), one switch with
 * hand-fed packets: RED/ECN marking thresholds, tail drop with a static
 * limit and with the dynamic threshold, trimming, strict priority, PFC
 * XOFF/XON and headroom, ECMP over routable ports, proc latency. */
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
#include "sim/pkt.h"
#include "sim/switch.h"

#define US MROCE_SIM_PS_PER_US
#define MAXCAP 4096
#define PAY 1000u /* UDP payload of the test packets */
#define WIRE (PAY + MROCE_SIM_WIRE_OVERHEAD_V4)

struct got {
    uint32_t seq;
    uint8_t ecn, trimmed, prio;
    uint64_t at;
};

struct cap {
    struct mroce_sim_pool *pool;
    int n;
    struct got g[MAXCAP];
    int pauses, resumes;
};

static void cap_recv(void *obj, int port, struct mroce_sim_pkt *p, uint64_t now)
{
    (void)port;
    struct cap *c = obj;
    assert_true(c->n < MAXCAP);
    uint32_t seq;
    memcpy(&seq, p->data, sizeof(seq));
    c->g[c->n++] = (struct got){seq, p->meta.ecn, p->trimmed, p->prio, now};
    mroce_sim_pkt_deliver(c->pool, p);
}

static void cap_pause(void *obj, int port, int prio, bool on, uint64_t now)
{
    (void)port;
    (void)prio;
    (void)now;
    struct cap *c = obj;
    if (on)
        c->pauses++;
    else
        c->resumes++;
}

struct env {
    struct mroce_sim_evlist *ev;
    struct mroce_sim_pool *pool;
    struct mroce_sim_switch *sw;
    struct mroce_sim_link *out; /* port 1 -> capture, slow */
    struct mroce_sim_link *in;  /* test sender -> port 0 */
    struct cap *cap;
};

static void env_open(struct env *e, struct mroce_sim_switch_cfg *sc)
{
    memset(e, 0, sizeof(*e));
    e->ev = mroce_sim_ev_create(0);
    e->pool = mroce_sim_pool_create(9000, 0);
    e->cap = calloc(1, sizeof(*e->cap));
    e->cap->pool = e->pool;
    sc->n_ports = 3;
    sc->n_hosts = 1;
    e->sw = mroce_sim_switch_create(e->ev, e->pool, sc);
    assert_non_null(e->sw);
    struct mroce_sim_link_cfg slow = {.rate_bps = 10000000000ull};
    struct mroce_sim_link_cfg fast = {0};
    e->out = mroce_sim_link_create(e->ev, e->pool, &slow);
    e->in = mroce_sim_link_create(e->ev, e->pool, &fast);
    struct mroce_sim_sink s = {.recv = cap_recv, .obj = e->cap};
    struct mroce_sim_pause_sink ps = {.pause = cap_pause, .obj = e->cap};
    mroce_sim_link_set_dst(e->out, &s);
    mroce_sim_link_set_src(e->in, &ps);
    mroce_sim_switch_attach(e->sw, 1, e->out, NULL);
    mroce_sim_switch_attach(e->sw, 0, NULL, e->in);
    int port = 1;
    assert_true(mroce_sim_switch_set_route(e->sw, 0, &port, 1));
}

static void env_close(struct env *e)
{
    mroce_sim_ev_run(e->ev, MROCE_SIM_NEVER);
    assert_int_equal(mroce_sim_switch_pkts_held(e->sw), 0);
    assert_int_equal(mroce_sim_switch_buffer_used(e->sw), 0);
    struct mroce_sim_pool_counters c;
    mroce_sim_pool_get_counters(e->pool, &c);
    assert_int_equal(c.in_flight, 0);
    assert_true(mroce_sim_pool_conserved(e->pool));
    mroce_sim_switch_destroy(e->sw);
    mroce_sim_link_destroy(e->out);
    mroce_sim_link_destroy(e->in);
    mroce_sim_pool_destroy(e->pool);
    mroce_sim_ev_destroy(e->ev);
    free(e->cap);
}

static struct mroce_sim_pkt *mk(struct env *e, uint32_t seq, uint8_t ecn,
                                uint32_t len)
{
    uint8_t buf[PAY] = {0};
    memcpy(buf, &seq, sizeof(seq));
    struct mroce_pkt_meta m;
    memset(&m, 0, sizeof(m));
    m.src.family = m.dst.family = MROCE_AF_INET;
    m.src_port = (uint16_t)seq;
    m.ecn = ecn;
    struct mroce_sim_pkt *p = mroce_sim_pkt_inject(e->pool, &m, buf, len, 0);
    assert_non_null(p);
    p->dst_host = 0;
    return p;
}

/* Feeds n packets into port 0 at time 0, straight into the switch. */
static void burst(struct env *e, int n, uint8_t ecn)
{
    struct mroce_sim_sink s = mroce_sim_switch_sink(e->sw, 0);
    for (int i = 0; i < n; i++)
        s.recv(s.obj, s.port, mk(e, (uint32_t)i, ecn, PAY), 0);
}

/* Packet i (i >= 1) joins a queue of i - 1 packets (packet 0 went straight
 * to the wire). With Kmin = 10 and Kmax = 40 packets' worth: nothing at or
 * below Kmin is marked, everything from Kmax on is, and the fraction in
 * between rises. Pmax 1 makes the ramp visible. */
static void test_ecn_thresholds(void **state)
{
    (void)state;
    struct mroce_sim_switch_cfg sc = {
        .ecn_kmin = 10 * WIRE, .ecn_kmax = 40 * WIRE, .ecn_pmax = 1.0};
    struct env e;
    env_open(&e, &sc);
    burst(&e, 200, MROCE_ECN_ECT0);
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER);
    assert_int_equal(e.cap->n, 200);
    int low = 0, high = 0, mid = 0;
    for (int i = 0; i < e.cap->n; i++) {
        const struct got *g = &e.cap->g[i];
        assert_int_equal(g->seq, (uint32_t)i); /* FIFO */
        uint32_t q = g->seq ? g->seq - 1 : 0;  /* packets seen queued */
        bool ce = g->ecn == MROCE_ECN_CE;
        if (q <= 10)
            low += ce;
        else if (q >= 40)
            high += !ce;
        else
            mid += ce;
    }
    assert_int_equal(low, 0);
    assert_int_equal(high, 0);
    assert_in_range(mid, 5, 25); /* mean ~14.5 of 29 */
    struct mroce_sim_port_counters c;
    mroce_sim_switch_get_port_counters(e.sw, 1, &c);
    assert_int_equal(c.ecn_marks, (uint64_t)(mid + 159)); /* seq >= 41 */
    assert_int_equal(c.max_qbytes, 199 * WIRE);
    env_close(&e);
}

/* Not-ECT packets are never marked, however long the queue. */
static void test_ecn_not_ect(void **state)
{
    (void)state;
    struct mroce_sim_switch_cfg sc = {0};
    struct env e;
    env_open(&e, &sc);
    burst(&e, 500, MROCE_ECN_NOT_ECT); /* 500 KB: far above Kmax */
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER);
    for (int i = 0; i < e.cap->n; i++)
        assert_int_equal(e.cap->g[i].ecn, MROCE_ECN_NOT_ECT);
    env_close(&e);
}

/* A static limit of 10 frames per queue: 1 on the wire, 10 queued, the
 * rest tail-dropped and counted at the egress port. */
static void test_tail_drop_static(void **state)
{
    (void)state;
    struct mroce_sim_switch_cfg sc = {
        .buffer_static = 1, .port_limit = 10 * WIRE, .no_ecn = 1};
    struct env e;
    env_open(&e, &sc);
    burst(&e, 30, MROCE_ECN_ECT0);
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER);
    assert_int_equal(e.cap->n, 11);
    struct mroce_sim_port_counters c;
    mroce_sim_switch_get_port_counters(e.sw, 1, &c);
    assert_int_equal(c.drops[MROCE_SIM_DROP_QUEUE], 19);
    assert_int_equal(c.tx_pkts, 11);
    struct mroce_sim_pool_counters pc;
    mroce_sim_pool_get_counters(e.pool, &pc);
    assert_int_equal(pc.dropped[MROCE_SIM_DROP_QUEUE], 19);
    env_close(&e);
}

/* Dynamic threshold, alpha 1: one queue alone takes half the buffer. */
static void test_tail_drop_dynamic(void **state)
{
    (void)state;
    struct mroce_sim_switch_cfg sc = {.buffer_bytes = 100 * WIRE, .no_ecn = 1};
    struct env e;
    env_open(&e, &sc);
    burst(&e, 100, MROCE_ECN_ECT0);
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER);
    assert_int_equal(e.cap->n, 51); /* 1 on the wire + 50 queued */
    env_close(&e);
}

/* With trimming, what would be dropped is cut to a header and sent on the
 * control priority, which overtakes the queued data. */
static void test_trim(void **state)
{
    (void)state;
    struct mroce_sim_switch_cfg sc = {
        .buffer_static = 1, .port_limit = 10 * WIRE, .no_ecn = 1, .trim = 1};
    struct env e;
    env_open(&e, &sc);
    burst(&e, 30, MROCE_ECN_ECT0);
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER);
    assert_int_equal(e.cap->n, 30);
    int trimmed = 0;
    for (int i = 0; i < 30; i++) {
        const struct got *g = &e.cap->g[i];
        trimmed += g->trimmed;
        /* after the first frame, the 19 trimmed headers come first */
        if (i >= 1 && i <= 19) {
            assert_int_equal(g->trimmed, 1);
            assert_int_equal(g->prio, MROCE_SIM_PRIO_CTRL);
            assert_int_equal(g->seq, (uint32_t)(i + 10));
        }
    }
    assert_int_equal(trimmed, 19);
    struct mroce_sim_port_counters c;
    mroce_sim_switch_get_port_counters(e.sw, 1, &c);
    assert_int_equal(c.trimmed, 19);
    assert_int_equal(c.drops[MROCE_SIM_DROP_QUEUE], 0);
    env_close(&e);
}

/* PFC: a sender that keeps sending into port 0 at 400G while the egress
 * drains at 10G. The switch pauses it once the ingress holds xoff bytes;
 * a sender that ignores the pause overflows the headroom (dropped and
 * counted as headroom); once drained, the switch resumes it. */
static void test_pfc_xoff_headroom(void **state)
{
    (void)state;
    struct mroce_sim_switch_cfg sc = {.pfc = 1,
                                      .pfc_xoff = 20 * WIRE,
                                      .pfc_xon = 10 * WIRE,
                                      .pfc_headroom = 30 * WIRE,
                                      .no_ecn = 1};
    struct env e;
    env_open(&e, &sc);
    uint64_t t = 0;
    for (int i = 0; i < 200; i++)
        t = mroce_sim_link_send(e.in, mk(&e, (uint32_t)i, 0, PAY), t);
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER);
    struct mroce_sim_port_counters in, out;
    mroce_sim_switch_get_port_counters(e.sw, 0, &in);
    mroce_sim_switch_get_port_counters(e.sw, 1, &out);
    assert_int_equal(in.pause_tx[MROCE_SIM_PRIO_DATA], 1);
    assert_int_equal(e.cap->pauses, 1);
    assert_int_equal(e.cap->resumes, 1);
    /* xoff + headroom = 50 frames held at most, plus the few the egress
     * drained during the 4.3 us the burst took to arrive (one per 0.85 us
     * at 10G) */
    assert_in_range(e.cap->n, 51, 57);
    assert_int_equal(in.drops[MROCE_SIM_DROP_HEADROOM] + (uint64_t)e.cap->n,
                     200);
    assert_int_equal(out.drops[MROCE_SIM_DROP_QUEUE], 0);
    env_close(&e);
}

/* ECMP: the member is a function of the flow hash and the switch seed;
 * ports taken out of ECMP get no flows, the others share them. */
static void test_ecmp_routable(void **state)
{
    (void)state;
    struct mroce_sim_evlist *ev = mroce_sim_ev_create(0);
    struct mroce_sim_pool *pool = mroce_sim_pool_create(9000, 0);
    struct mroce_sim_switch_cfg sc = {.n_ports = 4, .n_hosts = 2, .seed = 9};
    struct mroce_sim_switch *sw = mroce_sim_switch_create(ev, pool, &sc);
    const int group[] = {0, 1, 2, 3};
    assert_true(mroce_sim_switch_set_route(sw, 1, group, 4));
    assert_false(mroce_sim_switch_set_route(sw, 2, group, 4)); /* no host */
    assert_int_equal(mroce_sim_switch_route(sw, 0, 1), -1);    /* no route */
    int n[4] = {0};
    for (uint64_t f = 0; f < 4000; f++) {
        int e = mroce_sim_switch_route(sw, 1, f * 0x9e3779b97f4a7c15ull);
        assert_int_equal(
            e, mroce_sim_switch_route(sw, 1, f * 0x9e3779b97f4a7c15ull));
        n[e]++;
    }
    for (int i = 0; i < 4; i++)
        assert_in_range(n[i], 850, 1150);
    mroce_sim_switch_set_port_routable(sw, 2, false);
    memset(n, 0, sizeof(n));
    for (uint64_t f = 0; f < 3000; f++)
        n[mroce_sim_switch_route(sw, 1, f * 0x9e3779b97f4a7c15ull)]++;
    assert_int_equal(n[2], 0);
    for (int i = 0; i < 4; i++)
        if (i != 2)
            assert_in_range(n[i], 850, 1150);
    mroce_sim_switch_destroy(sw);
    mroce_sim_pool_destroy(pool);
    mroce_sim_ev_destroy(ev);
}

/* Switching latency delays every frame by proc_ps; unknown destinations
 * are dropped as no_route. */
static void test_proc_and_no_route(void **state)
{
    (void)state;
    struct mroce_sim_switch_cfg sc = {.proc_ps = 500000};
    struct env e;
    env_open(&e, &sc);
    burst(&e, 1, MROCE_ECN_ECT0);
    struct mroce_sim_pkt *p = mk(&e, 7, 0, PAY);
    p->dst_host = -1;
    struct mroce_sim_sink s = mroce_sim_switch_sink(e.sw, 0);
    s.recv(s.obj, 0, p, 0);
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER);
    assert_int_equal(e.cap->n, 1);
    uint64_t ser = (uint64_t)WIRE * 8 * 100; /* 10G: 800 ps per byte */
    assert_int_equal(e.cap->g[0].at, 500000 + ser + US);
    struct mroce_sim_port_counters c;
    mroce_sim_switch_get_port_counters(e.sw, 0, &c);
    assert_int_equal(c.drops[MROCE_SIM_DROP_NO_ROUTE], 1);
    env_close(&e);
}

/* A port that freed with an empty queue schedules nothing; a packet that
 * arrives at the instant its link frees starts then, with no gap, and one
 * that arrives while the link is busy waits for the frame on the wire. */
static void test_port_frees_idle(void **state)
{
    (void)state;
    struct mroce_sim_switch_cfg sc = {0};
    struct env e;
    env_open(&e, &sc);
    uint64_t ser = (uint64_t)WIRE * 8 * 100;         /* 10G: 800 ps per byte */
    burst(&e, 1, 0);                                 /* on the wire until ser */
    assert_int_equal(mroce_sim_ev_pending(e.ev), 1); /* its arrival only */
    struct mroce_sim_sink s = mroce_sim_switch_sink(e.sw, 0);
    mroce_sim_ev_run(e.ev, ser); /* nothing due: the clock moves to ser */
    s.recv(s.obj, 0, mk(&e, 1, 0, PAY), ser);
    s.recv(s.obj, 0, mk(&e, 2, 0, PAY), ser);
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER);
    assert_int_equal(e.cap->n, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(e.cap->g[i].seq, (uint32_t)i);
        assert_int_equal(e.cap->g[i].at, (uint64_t)(i + 1) * ser + US);
    }
    env_close(&e);
}

/* A port is its link's only sender and keeps the end of the frame on the
 * wire; attaching a link that is still busy must hand the port that end.
 * Data queued before it frees is then still overtaken by control. */
static void test_attach_busy_link(void **state)
{
    (void)state;
    struct mroce_sim_switch_cfg sc = {0};
    struct env e;
    env_open(&e, &sc);
    uint64_t end = mroce_sim_link_send(e.out, mk(&e, 9, 0, PAY), 0);
    mroce_sim_switch_attach(e.sw, 1, e.out, NULL);
    struct mroce_sim_sink s = mroce_sim_switch_sink(e.sw, 0);
    s.recv(s.obj, 0, mk(&e, 1, 0, PAY), 0);
    struct mroce_sim_pkt *c = mk(&e, 2, 0, 64);
    c->prio = MROCE_SIM_PRIO_CTRL;
    s.recv(s.obj, 0, c, 0);
    mroce_sim_ev_run(e.ev, MROCE_SIM_NEVER);
    assert_int_equal(e.cap->n, 3);
    assert_int_equal(e.cap->g[0].seq, 9);
    assert_int_equal(e.cap->g[1].seq, 2); /* control first, from end */
    assert_int_equal(e.cap->g[2].seq, 1);
    uint64_t ser_c = mroce_sim_link_ser_ps(e.out, 64 + (WIRE - PAY));
    assert_int_equal(e.cap->g[1].at, end + ser_c + US);
    env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ecn_thresholds),
        cmocka_unit_test(test_ecn_not_ect),
        cmocka_unit_test(test_tail_drop_static),
        cmocka_unit_test(test_tail_drop_dynamic),
        cmocka_unit_test(test_trim),
        cmocka_unit_test(test_pfc_xoff_headroom),
        cmocka_unit_test(test_ecmp_routable),
        cmocka_unit_test(test_proc_and_no_route),
        cmocka_unit_test(test_port_frees_idle),
        cmocka_unit_test(test_attach_busy_link),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
