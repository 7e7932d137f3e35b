/* Integration: two real MetaRoCE engines (struct mroce_ctx) on a small
 * simulated leaf-spine, driven by simulator hosts through the sans-I/O
 * ops table. A 1 MiB WRITE crosses host -> leaf -> spine -> leaf -> host
 * and must arrive intact; the test prints its completion time next to
 * the analytic ideal, and the simulator's events per second. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mroce/mroce.h>

#include "sim/defaults.h"
#include "sim/host.h"
#include "sim/topo.h"

#define US MROCE_SIM_PS_PER_US
#define MSG (4u << 20) /* buffer size; messages use a prefix */
#define WRITE_HDR 52u  /* MTH 16 + DXH 20 + RETH 12 + ICRC 4 */

/* An engine behind the ops table, watched: when did data last arrive,
 * when did the sender's completion appear. */
struct watched {
    struct mroce_ctx *ctx;
    struct mroce_cq *cq;
    struct mroce_sim_evlist *ev;
    uint64_t last_rx_ns;
    uint64_t rx_pkts;
    int got;
    struct mroce_wc wc;
    uint64_t wc_ns;
};

static size_t w_max_pkt(const void *ep)
{
    return mroce_ctx_max_pkt(((const struct watched *)ep)->ctx);
}

static int w_tx(void *ep, uint64_t now, uint8_t *buf, size_t cap,
                struct mroce_pkt_meta *meta)
{
    return mroce_ctx_tx(((struct watched *)ep)->ctx, now, buf, cap, meta);
}

/* Polls the CQ right after each packet, so the completion time is exact
 * to the packet that caused it; stops the run at the first completion. */
static int w_rx(void *ep, uint64_t now, const struct mroce_pkt_meta *meta,
                const uint8_t *buf, size_t len)
{
    struct watched *w = ep;
    int rc = mroce_ctx_rx(w->ctx, now, meta, buf, len);
    w->last_rx_ns = now;
    w->rx_pkts++;
    if (!w->got && mroce_poll_cq(w->cq, 1, &w->wc) == 1) {
        w->got = 1;
        w->wc_ns = now;
        mroce_sim_ev_stop(w->ev);
    }
    return rc;
}

static uint64_t w_next_expiry(const void *ep)
{
    return mroce_ctx_next_expiry(((const struct watched *)ep)->ctx);
}

static void w_on_expiry(void *ep, uint64_t now)
{
    mroce_ctx_on_expiry(((struct watched *)ep)->ctx, now);
}

static const struct mroce_ep_ops watched_ops = {
    .max_pkt = w_max_pkt,
    .tx = w_tx,
    .rx = w_rx,
    .next_expiry = w_next_expiry,
    .on_expiry = w_on_expiry,
};

struct side {
    struct watched w;
    struct mroce_pd *pd;
    struct mroce_conn *conn;
    struct mroce_mr *mr;
    uint8_t *buf;
};

static void side_open(struct side *s, struct mroce_sim_topo *t, int host,
                      uint64_t seed)
{
    struct mroce_ctx_attr a;
    memset(&a, 0, sizeof(a));
    mroce_sim_topo_host_addr(t, host, &a.addr);
    a.deterministic = 1;
    a.seed = seed;
    a.mtu = MROCE_SIM_MTU_PAYLOAD;
    a.link_mbps = 400000;
    assert_int_equal(mroce_ctx_open(&a, &s->w.ctx), 0);
    assert_int_equal(mroce_pd_alloc(s->w.ctx, &s->pd), 0);
    assert_int_equal(mroce_cq_create(s->w.ctx, 256, &s->w.cq), 0);
    struct mroce_conn_attr ca;
    memset(&ca, 0, sizeof(ca));
    ca.send_cq = ca.recv_cq = s->w.cq;
    ca.n_paths = 16;
    assert_int_equal(mroce_conn_create(s->pd, &ca, &s->conn), 0);
    s->buf = malloc(MSG);
    unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE;
    assert_int_equal(mroce_reg_mr(s->pd, s->buf, MSG, acc, &s->mr), 0);
    s->w.ev = mroce_sim_topo_ev(t);
    assert_int_equal(mroce_sim_host_attach(mroce_sim_topo_host(t, host),
                                           &watched_ops, &s->w),
                     0);
}

static void side_close(struct side *s)
{
    mroce_conn_destroy(s->conn);
    mroce_ctx_close(s->w.ctx);
    free(s->buf);
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct scenario {
    struct mroce_sim_topo *t;
    struct side s[2];
};

static void scen_open(struct scenario *sc)
{
    struct mroce_sim_topo_cfg c = {
        .hosts_per_leaf = 2, .leaves = 2, .spines = 2, .seed = 1};
    assert_int_equal(mroce_sim_topo_create(&c, &sc->t), 0);
    memset(sc->s, 0, sizeof(sc->s));
    side_open(&sc->s[0], sc->t, 0, 101); /* leaf 0 */
    side_open(&sc->s[1], sc->t, 2, 202); /* leaf 1 */
    struct mroce_conn_params p0, p1;
    mroce_conn_get_params(sc->s[0].conn, &p0);
    mroce_conn_get_params(sc->s[1].conn, &p1);
    assert_int_equal(mroce_conn_connect(sc->s[0].conn, &p1), 0);
    assert_int_equal(mroce_conn_connect(sc->s[1].conn, &p0), 0);
    for (uint32_t i = 0; i < MSG; i++)
        sc->s[0].buf[i] = (uint8_t)(i * 2654435761u >> 13);
    memset(sc->s[1].buf, 0, MSG);
}

static void scen_close(struct scenario *sc)
{
    assert_true(mroce_sim_pool_conserved(mroce_sim_topo_pool(sc->t)));
    mroce_sim_topo_destroy(sc->t);
    side_close(&sc->s[0]);
    side_close(&sc->s[1]);
}

/* Posts one WRITE of len bytes and runs until its completion (or 10 ms
 * of simulated time). Returns the wall-clock seconds the run took. */
static double scen_write(struct scenario *sc, uint32_t len)
{
    struct mroce_send_wr wr;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = 7;
    wr.sge.addr = (uint64_t)(uintptr_t)sc->s[0].buf;
    wr.sge.length = len;
    wr.sge.lkey = mroce_mr_lkey(sc->s[0].mr);
    wr.remote_addr = (uint64_t)(uintptr_t)sc->s[1].buf;
    wr.rkey = mroce_mr_rkey(sc->s[1].mr);
    assert_int_equal(mroce_post_write(sc->s[0].conn, &wr), 0);
    mroce_sim_host_kick(mroce_sim_topo_host(sc->t, 0));
    double w0 = wall_s();
    mroce_sim_ev_run(mroce_sim_topo_ev(sc->t), 10000 * US);
    double wall = wall_s() - w0;
    struct watched *w = &sc->s[0].w;
    assert_int_equal(w->got, 1);
    assert_int_equal(w->wc.status, MROCE_WC_SUCCESS);
    assert_int_equal(w->wc.wr_id, 7);
    assert_memory_equal(sc->s[1].buf, sc->s[0].buf, len);
    return wall;
}

static void report(struct scenario *sc, const char *what, uint32_t len,
                   double wall)
{
    struct mroce_sim_topo *t = sc->t;
    /* Ideal: the data's FCT, then one 72-byte ACK back over 4 links. */
    uint64_t ideal = mroce_sim_topo_ideal_fct_ps(t, len, MROCE_SIM_MTU_PAYLOAD,
                                                 WRITE_HDR, 0, 2);
    uint64_t ack = mroce_sim_topo_ideal_fct_ps(t, 72, 72, 0, 2, 0);
    double data_ps = (double)sc->s[1].w.last_rx_ns * 1000;
    double done_ps = (double)sc->s[0].w.wc_ns * 1000;
    struct mroce_sim_topo_counters tc;
    mroce_sim_topo_get_counters(t, &tc);
    struct mroce_conn_counters cc;
    mroce_conn_get_counters(sc->s[0].conn, &cc);
    printf("[ engine   ] %s: %u-byte WRITE host0->host2 (400G, 1 us):\n"
           "[ engine   ]   last data at %.3f us, ideal FCT %.3f us "
           "(ratio %.4f)\n"
           "[ engine   ]   completion at %.3f us, ideal + ACK %.3f us "
           "(ratio %.4f)\n"
           "[ engine   ]   data pkts %llu, retx %llu, ACKs rx %llu, ECN "
           "marks %llu, drops %llu, max queue %llu B\n"
           "[ engine   ]   %llu events in %.4f s wall = %.2f M events/s\n",
           what, len, data_ps / US, (double)ideal / US, data_ps / (double)ideal,
           done_ps / US, (double)(ideal + ack) / US,
           done_ps / (double)(ideal + ack), (unsigned long long)cc.tx_data_pkts,
           (unsigned long long)cc.retx_pkts, (unsigned long long)cc.rx_acks,
           (unsigned long long)tc.ecn_marks,
           (unsigned long long)tc.pkts.dropped_total,
           (unsigned long long)tc.max_qbytes, (unsigned long long)tc.events,
           wall, (double)tc.events / wall / 1e6);
    /* never faster than physics (1 ns slack: engine clocks are ns) */
    assert_true(data_ps >= (double)ideal - 1000);
    assert_true(done_ps >= (double)(ideal + ack) - 1000);
}

static void test_write_1mib_over_leaf_spine(void **state)
{
    (void)state;
    struct scenario sc;
    scen_open(&sc);
    double wall = scen_write(&sc, 1u << 20);
    report(&sc, "idle fabric", 1u << 20, wall);
    struct mroce_conn_counters cc;
    mroce_conn_get_counters(sc.s[0].conn, &cc);
    struct mroce_sim_topo_counters tc;
    mroce_sim_topo_get_counters(sc.t, &tc);
    assert_int_equal(cc.retx_pkts, 0);
    assert_int_equal(tc.pkts.dropped_total, 0);
    scen_close(&sc);
}

/* One leaf-spine cable fails 10 us into a 4 MiB WRITE and the switches
 * never reroute: packets sprayed onto it are lost until the engine stops
 * using the paths that hash there. The message must still complete
 * intact (the engine's timers run through the host's timer events). */
static void test_write_survives_link_down(void **state)
{
    (void)state;
    struct scenario sc;
    scen_open(&sc);
    int l = mroce_sim_topo_link_find(sc.t, "leaf0-spine1");
    assert_int_equal(mroce_sim_topo_link_down(sc.t, l, true, 10 * US), 0);
    double wall = scen_write(&sc, MSG);
    report(&sc, "leaf0-spine1 down at 10 us", MSG, wall);
    struct mroce_sim_topo_counters tc;
    mroce_sim_topo_get_counters(sc.t, &tc);
    assert_true(tc.pkts.dropped[MROCE_SIM_DROP_LINK_DOWN] > 0);
    struct mroce_conn_counters cc;
    mroce_conn_get_counters(sc.s[0].conn, &cc);
    assert_true(cc.retx_pkts > 0);
    scen_close(&sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_1mib_over_leaf_spine),
        cmocka_unit_test(test_write_survives_link_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
