/* Unit tests for the test wire (src/io/testwire). Every test runs in
 * virtual time with fixed seeds, so a failure replays exactly. Statistical
 * checks use bounds of 5 standard deviations around the expected count. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/testwire/testwire.h"
#include <mroce/mroce.h>

#define PAYLOAD 64 /* bytes per test packet unless a test says otherwise */

/* One popped packet, copied out (the wire's buffer is only lent). */
struct got {
    int dst_ep;
    struct mroce_pkt_meta meta;
    uint8_t buf[1024]; /* the first 1024 bytes; len is the real length */
    size_t len;
    uint64_t time;
    uint32_t id; /* first 4 payload bytes: the test's send index */
};

static struct mroce_addr v4(uint8_t host)
{
    struct mroce_addr a = {.family = MROCE_AF_INET, .ip = {10, 0, 0, host}};
    return a;
}

static struct mroce_pkt_meta meta_of(uint8_t src, uint8_t dst, uint16_t sport,
                                     uint8_t ecn)
{
    struct mroce_pkt_meta m = {.src = v4(src), .dst = v4(dst)};
    m.src_port = sport;
    m.dst_port = 4797;
    m.ecn = ecn;
    return m;
}

/* A small, quiet wire: tests switch on what they exercise. */
static struct mroce_tw_cfg base_cfg(void)
{
    struct mroce_tw_cfg c = {.seed = 42, .n_routes = 1, .max_pkt = 256};
    c.capacity = 4096;
    return c;
}

/* Creates a wire and attaches hosts 1..n as endpoints 0..n-1. */
static struct mroce_tw *make_wire(const struct mroce_tw_cfg *c, int n)
{
    struct mroce_tw *tw = NULL;
    assert_int_equal(mroce_tw_create(c, &tw), 0);
    assert_non_null(tw);
    for (int i = 0; i < n; i++) {
        struct mroce_addr a = v4((uint8_t)(i + 1));
        assert_int_equal(mroce_tw_attach(tw, &a), i);
    }
    return tw;
}

/* Payload: the send index in the first 4 bytes, then a fixed pattern. */
static void fill(uint8_t *buf, size_t len, uint32_t id)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(i * 7 + 3);
    if (len >= 4)
        memcpy(buf, &id, 4);
}

static void send_id(struct mroce_tw *tw, uint64_t now,
                    const struct mroce_pkt_meta *m, uint32_t id, size_t len)
{
    uint8_t buf[4096];
    assert_true(len <= sizeof(buf));
    fill(buf, len, id);
    assert_int_equal(mroce_tw_send(tw, now, m, buf, len), 0);
}

static int pop_one(struct mroce_tw *tw, uint64_t now, struct got *g)
{
    struct mroce_tw_pkt p;
    int rc = mroce_tw_pop(tw, now, &p);
    if (rc != 1)
        return rc;
    g->dst_ep = p.dst_ep;
    g->meta = p.meta;
    memcpy(g->buf, p.buf, p.len < sizeof(g->buf) ? p.len : sizeof(g->buf));
    g->len = p.len;
    g->time = p.time;
    g->id = UINT32_MAX;
    if (p.len >= 4)
        memcpy(&g->id, p.buf, 4);
    return 1;
}

/* Pops everything due at or before now into out[]; returns the count. */
static size_t drain(struct mroce_tw *tw, uint64_t now, struct got *out,
                    size_t max)
{
    size_t n = 0;
    struct got g = {0};
    while (pop_one(tw, now, &g) == 1) {
        assert_true(n < max);
        out[n++] = g;
    }
    return n;
}

static size_t bytes_differing(const uint8_t *a, const uint8_t *b, size_t n)
{
    size_t d = 0;
    for (size_t i = 0; i < n; i++)
        d += a[i] != b[i];
    return d;
}

/* Source port (from 1000 up) whose packets src -> dst take `route`, or
 * avoid it when `want` is 0. */
static uint16_t port_for(const struct mroce_tw *tw, uint8_t src, uint8_t dst,
                         uint32_t route, int want)
{
    for (uint16_t p = 1000; p < 60000; p++) {
        struct mroce_pkt_meta m = meta_of(src, dst, p, 0);
        if ((mroce_tw_route_of(tw, &m) == route) == (want != 0))
            return p;
    }
    fail_msg("no port found for route %u", route);
    return 0;
}

/* ---- Ordering ---- */

/* Equal arrival times come out in send order; earlier times first even
 * when sent later; nothing comes out before its time. */
static void test_order_and_ties(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.delay_ns = 100;
    c.rate_bps = 8000000000ull; /* 1 byte per ns */
    struct mroce_tw *tw = make_wire(&c, 3);
    struct mroce_pkt_meta a = meta_of(1, 2, 1000, 0);
    struct mroce_pkt_meta b = meta_of(3, 2, 1000, 0);

    assert_int_equal(mroce_tw_next_time(tw), UINT64_MAX);
    send_id(tw, 0, &a, 0, 200);  /* ep0 ends at 200: arrives 300 */
    send_id(tw, 0, &b, 1, 50);   /* ep2 ends at 50: arrives 150, first */
    send_id(tw, 100, &b, 2, 50); /* ep2 idle again: ends 150, arrives 250 */
    send_id(tw, 250, &b, 3, 50); /* arrives 400, ties with... */
    send_id(tw, 250, &a, 4, 50); /* ...this one, sent later */
    assert_int_equal(mroce_tw_next_time(tw), 150);

    struct got g = {0};
    assert_int_equal(pop_one(tw, 149, &g), 0);
    const uint32_t want_id[] = {1, 2, 0, 3, 4};
    const uint64_t want_t[] = {150, 250, 300, 400, 400};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(pop_one(tw, 1000, &g), 1);
        assert_int_equal(g.id, want_id[i]);
        assert_int_equal(g.time, want_t[i]);
        assert_int_equal(g.dst_ep, 1);
    }
    assert_int_equal(pop_one(tw, UINT64_MAX, &g), 0);
    assert_int_equal(mroce_tw_next_time(tw), UINT64_MAX);
    mroce_tw_destroy(tw);
}

/* Heap stress: many arrival times, many equal ones. The output must be
 * sorted by time, and by send index within a time. */
static void test_heap_order_random(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.n_routes = 8;
    c.jitter_ns = 30; /* few distinct values: many ties */
    struct mroce_tw *tw = make_wire(&c, 2);
    enum { N = 3000 };
    static struct got out[N];
    for (uint32_t i = 0; i < N; i++) {
        struct mroce_pkt_meta m = meta_of(1, 2, (uint16_t)(i * 37 % 101), 0);
        send_id(tw, i / 50, &m, i, 8);
    }
    assert_int_equal(drain(tw, UINT64_MAX, out, N), N);
    for (size_t i = 1; i < N; i++) {
        assert_true(out[i - 1].time <= out[i].time);
        if (out[i - 1].time == out[i].time)
            assert_true(out[i - 1].id < out[i].id);
    }
    mroce_tw_destroy(tw);
}

/* ---- Routes ---- */

/* With route jitter, each route delivers in send order, the per-route
 * extra delay is constant and within [0, jitter_ns], and packets on
 * different routes overtake each other. */
static void test_route_fifo_and_cross_route_reorder(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.n_routes = 16;
    c.delay_ns = 1000;
    c.jitter_ns = 50000;
    struct mroce_tw *tw = make_wire(&c, 2);
    enum { N = 4000 };
    static struct got out[N];
    uint32_t route_of_id[N];
    for (uint32_t i = 0; i < N; i++) {
        struct mroce_pkt_meta m = meta_of(1, 2, (uint16_t)(2000 + i % 64), 0);
        route_of_id[i] = mroce_tw_route_of(tw, &m);
        send_id(tw, (uint64_t)i * 100, &m, i, 16);
    }
    assert_int_equal(drain(tw, UINT64_MAX, out, N), N);

    int64_t last_id[16], extra[16];
    for (int r = 0; r < 16; r++)
        last_id[r] = extra[r] = -1;
    size_t inversions = 0, routes_seen = 0;
    for (size_t i = 0; i < N; i++) {
        uint32_t id = out[i].id, r = route_of_id[id];
        int64_t x = (int64_t)(out[i].time - (uint64_t)id * 100 - 1000);
        assert_true(x >= 0 && x <= 50000);
        if (extra[r] < 0)
            routes_seen++;
        else
            assert_int_equal(x, extra[r]);
        extra[r] = x;
        assert_true((int64_t)id > last_id[r]); /* FIFO per route */
        last_id[r] = id;
        inversions += i > 0 && out[i].id < out[i - 1].id;
    }
    assert_true(routes_seen >= 8);
    assert_true(inversions > 100);
    mroce_tw_destroy(tw);
}

/* ---- Serialization ---- */

static void test_serialization_exact(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.rate_bps = 3000000000ull; /* 1000 wire bytes = 2666.67 ns */
    c.wire_overhead = 66;
    c.delay_ns = 500;
    c.max_pkt = 1000;
    struct mroce_tw *tw = make_wire(&c, 2);
    struct mroce_pkt_meta m = meta_of(1, 2, 1000, 0);
    struct got g = {0};

    for (uint32_t i = 0; i < 3; i++)
        send_id(tw, 0, &m, i, 934);
    assert_int_equal(mroce_tw_egress_free_at(tw, 0), 8000);
    send_id(tw, 100000, &m, 3, 934); /* idle link: no carried fraction */
    const uint64_t want[] = {2666 + 500, 5333 + 500, 8000 + 500, 102666 + 500};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pop_one(tw, UINT64_MAX, &g), 1);
        assert_int_equal(g.time, want[i]);
    }
    mroce_tw_destroy(tw);
}

/* A long back-to-back train does not drift: packet k ends exactly at
 * floor(k * bits * 1e9 / rate). */
static void test_serialization_no_drift(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.rate_bps = 100000000000ull; /* 100 Gbit/s */
    c.wire_overhead = 66;
    c.max_pkt = 4096;
    c.delay_ns = 7;
    struct mroce_tw *tw = make_wire(&c, 2);
    struct mroce_pkt_meta m = meta_of(1, 2, 1000, 0);
    uint8_t buf[4096] = {0};
    struct mroce_tw_pkt p;

    for (uint64_t k = 1; k <= 1000; k++) {
        assert_int_equal(mroce_tw_send(tw, 0, &m, buf, 4096), 0);
        assert_int_equal(mroce_tw_pop(tw, UINT64_MAX, &p), 1);
        /* 4162 bytes = 33296 bits = 332.96 ns each */
        assert_int_equal(p.time, k * 33296 / 100 + 7);
    }
    assert_int_equal(mroce_tw_egress_free_at(tw, 0), 332960);
    mroce_tw_destroy(tw);
}

/* Lost packets were transmitted: they hold the egress like any other. */
static void test_dropped_packets_use_egress_time(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.rate_bps = 8000000000ull;
    c.loss = 1.0;
    struct mroce_tw *tw = make_wire(&c, 2);
    struct mroce_pkt_meta m = meta_of(1, 2, 1000, 0);
    struct got g = {0};

    send_id(tw, 0, &m, 0, 100);
    send_id(tw, 0, &m, 1, 100);
    mroce_tw_set_loss(tw, 0.0);
    send_id(tw, 0, &m, 2, 100);
    assert_int_equal(pop_one(tw, UINT64_MAX, &g), 1);
    assert_int_equal(g.id, 2);
    assert_int_equal(g.time, 300);
    struct mroce_tw_stats st;
    mroce_tw_stats(tw, &st);
    assert_int_equal(st.sent, 3);
    assert_int_equal(st.lost_random, 2);
    assert_int_equal(st.delivered, 1);
    mroce_tw_destroy(tw);
}

/* ---- Loss ---- */

static void check_loss_rate(double p, uint64_t lo, uint64_t hi)
{
    struct mroce_tw_cfg c = base_cfg();
    c.loss = p;
    struct mroce_tw *tw = make_wire(&c, 2);
    struct mroce_pkt_meta m = meta_of(1, 2, 1000, 0);
    struct got g = {0};
    uint64_t got = 0;
    for (uint32_t i = 0; i < 100000; i++) {
        send_id(tw, i, &m, i, 8);
        got += (uint64_t)pop_one(tw, i, &g);
    }
    struct mroce_tw_stats st;
    mroce_tw_stats(tw, &st);
    assert_in_range(st.lost_random, lo, hi);
    assert_int_equal(st.lost_random + got, 100000);
    assert_int_equal(st.delivered, got);
    assert_int_equal(st.lost_burst + st.lost_blackhole + st.lost_overflow, 0);
    mroce_tw_destroy(tw);
}

static void test_loss_rate_1pct(void **state)
{
    (void)state;
    check_loss_rate(0.01, 1000 - 158, 1000 + 158); /* sigma 31.5 */
}

static void test_loss_rate_10pct(void **state)
{
    (void)state;
    check_loss_rate(0.1, 10000 - 475, 10000 + 475); /* sigma 94.9 */
}

/* Mean length of runs of consecutive losses in a 100k-packet stream. */
static double mean_loss_run(const struct mroce_tw_cfg *c, uint64_t *lost)
{
    struct mroce_tw *tw = make_wire(c, 2);
    struct mroce_pkt_meta m = meta_of(1, 2, 1000, 0);
    struct got g = {0};
    uint64_t runs = 0, n_lost = 0;
    int prev_lost = 0;
    for (uint32_t i = 0; i < 100000; i++) {
        send_id(tw, i, &m, i, 8);
        int is_lost = pop_one(tw, i, &g) == 0;
        runs += is_lost && !prev_lost;
        n_lost += (uint64_t)is_lost;
        prev_lost = is_lost;
    }
    mroce_tw_destroy(tw);
    *lost = n_lost;
    return runs ? (double)n_lost / (double)runs : 0;
}

/* Gilbert-Elliott losses come in runs (mean 1 / burst_exit = 5 packets),
 * unlike independent losses at a similar rate (mean about 1.05). */
static void test_burst_loss_runs(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.burst_enter = 0.01;
    c.burst_exit = 0.2;
    c.burst_loss = 1.0;
    uint64_t lost;
    double run = mean_loss_run(&c, &lost);
    assert_true(run > 4.0 && run < 6.0);
    /* stationary bad share: 0.01 / 0.21 = 4.8% */
    assert_in_range(lost, 2500, 7500);
    struct mroce_tw *tw = make_wire(&c, 2); /* counted as burst, not random */
    struct mroce_pkt_meta m = meta_of(1, 2, 1000, 0);
    struct got g = {0};
    for (uint32_t i = 0; i < 10000; i++) {
        send_id(tw, i, &m, i, 8);
        while (pop_one(tw, i, &g) == 1)
            ;
    }
    struct mroce_tw_stats st;
    mroce_tw_stats(tw, &st);
    assert_true(st.lost_burst > 0);
    assert_int_equal(st.lost_random, 0);
    mroce_tw_destroy(tw);

    struct mroce_tw_cfg iid = base_cfg();
    iid.loss = 0.048;
    run = mean_loss_run(&iid, &lost);
    assert_true(run < 1.2);
}

/* ---- Routes ---- */

/* Ports spread flows over all routes; bytes past an IPv4 address are not
 * part of it, neither for the route nor for finding the endpoint. */
static void test_route_of(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.n_routes = 8;
    struct mroce_tw *tw = make_wire(&c, 2);
    uint32_t count[8] = {0};
    for (uint16_t p = 0; p < 1000; p++) {
        struct mroce_pkt_meta m = meta_of(1, 2, p, 0);
        uint32_t r = mroce_tw_route_of(tw, &m);
        assert_true(r < 8);
        count[r]++;
        memset(m.src.ip + 4, 0xee, 12);
        assert_int_equal(mroce_tw_route_of(tw, &m), r);
    }
    for (int r = 0; r < 8; r++)
        assert_in_range(count[r], 125 - 55, 125 + 55); /* sigma 10.5 */
    struct mroce_pkt_meta m = meta_of(1, 2, 1000, 0);
    m.dst.ip[12] = 0x77;
    uint8_t buf[8] = {0};
    assert_int_equal(mroce_tw_send(tw, 0, &m, buf, 8), 0);
    mroce_tw_destroy(tw);
}

/* ---- Blackholes ---- */

static uint64_t delivered_after(struct mroce_tw *tw, uint64_t now,
                                const struct mroce_pkt_meta *m)
{
    struct mroce_tw_stats st;
    struct got g = {0};
    send_id(tw, now, m, 7, 8);
    while (pop_one(tw, UINT64_MAX, &g) == 1)
        ;
    mroce_tw_stats(tw, &st);
    return st.delivered;
}

/* A blackhole drops exactly its (src, dst, route); moving the flow to
 * another source port escapes it; -1 widens it to any destination. */
static void test_blackhole(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.n_routes = 8;
    struct mroce_tw *tw = make_wire(&c, 3);
    uint16_t bad = port_for(tw, 1, 2, 3, 1), good = port_for(tw, 1, 2, 3, 0);
    struct mroce_pkt_meta m_bad = meta_of(1, 2, bad, 0);
    struct mroce_pkt_meta m_good = meta_of(1, 2, good, 0);
    struct mroce_pkt_meta m_other_src =
        meta_of(3, 2, port_for(tw, 3, 2, 3, 1), 0);
    struct mroce_pkt_meta m_other_dst =
        meta_of(1, 3, port_for(tw, 1, 3, 3, 1), 0);
    struct mroce_tw_stats st;

    assert_int_equal(mroce_tw_blackhole(tw, 0, 1, 3, 1), 0);
    assert_int_equal(delivered_after(tw, 0, &m_bad), 0);
    assert_int_equal(delivered_after(tw, 1, &m_good), 1);
    assert_int_equal(delivered_after(tw, 2, &m_other_src), 2);
    assert_int_equal(delivered_after(tw, 3, &m_other_dst), 3);
    assert_int_equal(mroce_tw_blackhole(tw, 0, -1, 3, 1), 0);
    assert_int_equal(delivered_after(tw, 4, &m_other_dst), 3);
    assert_int_equal(mroce_tw_blackhole(tw, 0, 1, 3, 0), 0);
    assert_int_equal(delivered_after(tw, 5, &m_bad), 3); /* -1 rule still on */
    assert_int_equal(mroce_tw_blackhole(tw, 0, -1, 3, 0), 0);
    assert_int_equal(delivered_after(tw, 6, &m_bad), 4);
    assert_int_equal(mroce_tw_blackhole(tw, 0, -1, 3, 0), 0); /* idempotent */
    mroce_tw_stats(tw, &st);
    assert_int_equal(st.lost_blackhole, 3);
    assert_int_equal(st.sent, 7);
    mroce_tw_destroy(tw);
}

static void test_blackhole_errors(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.n_routes = 8;
    struct mroce_tw *tw = make_wire(&c, 3);
    assert_int_equal(mroce_tw_blackhole(NULL, 0, 1, 0, 1), -EINVAL);
    assert_int_equal(mroce_tw_blackhole(tw, 0, 1, 8, 1), -EINVAL);
    assert_int_equal(mroce_tw_blackhole(tw, 3, 1, 0, 1), -EINVAL);
    assert_int_equal(mroce_tw_blackhole(tw, 0, -2, 0, 1), -EINVAL);
    int n = 0;
    for (int s = -1; s < 3; s++)
        for (int d = -1; d < 3; d++)
            for (uint32_t r = 0; r < 8; r++) {
                int want = n++ < MROCE_TW_MAX_HOLES ? 0 : -ENOSPC;
                assert_int_equal(mroce_tw_blackhole(tw, s, d, r, 1), want);
            }
    assert_int_equal(mroce_tw_blackhole(tw, -1, -1, 0, 1), 0); /* already on */
    assert_int_equal(mroce_tw_blackhole(tw, -1, -1, 0, 0), 0);
    assert_int_equal(mroce_tw_blackhole(tw, 2, 2, 7, 1), 0); /* room again */
    mroce_tw_destroy(tw);
}

/* ---- Duplication, corruption, reordering ---- */

static void test_dup_all(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.dup = 1.0;
    c.dup_ns = 25;
    c.delay_ns = 1000;
    struct mroce_tw *tw = make_wire(&c, 2);
    struct mroce_pkt_meta m = meta_of(1, 2, 1000, MROCE_ECN_ECT0);
    struct got a, b;
    uint8_t sent[PAYLOAD];
    for (uint32_t i = 0; i < 100; i++) {
        send_id(tw, i * 1000, &m, i, PAYLOAD);
        fill(sent, PAYLOAD, i);
        assert_int_equal(pop_one(tw, UINT64_MAX, &a), 1);
        assert_int_equal(pop_one(tw, UINT64_MAX, &b), 1);
        assert_int_equal(a.time, i * 1000 + 1000);
        assert_int_equal(b.time, a.time + 25);
        assert_memory_equal(a.buf, sent, PAYLOAD);
        assert_memory_equal(b.buf, sent, PAYLOAD);
        assert_memory_equal(&a.meta, &b.meta, sizeof(a.meta));
    }
    struct mroce_tw_stats st;
    mroce_tw_stats(tw, &st);
    assert_int_equal(st.duplicated, 100);
    assert_int_equal(st.delivered, 200);
    assert_int_equal(st.bytes_delivered, 200 * PAYLOAD);
    mroce_tw_destroy(tw);
}

static void test_dup_rate(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.dup = 0.3;
    struct mroce_tw *tw = make_wire(&c, 2);
    struct mroce_pkt_meta m = meta_of(1, 2, 1000, 0);
    struct got g = {0};
    uint64_t extra = 0;
    for (uint32_t i = 0; i < 10000; i++) {
        send_id(tw, i * 10, &m, i, 8);
        uint64_t n = 0;
        while (pop_one(tw, UINT64_MAX, &g) == 1) {
            assert_int_equal(g.id, i);
            n++;
        }
        assert_true(n == 1 || n == 2);
        extra += n - 1;
    }
    struct mroce_tw_stats st;
    mroce_tw_stats(tw, &st);
    assert_int_equal(st.duplicated, extra);
    assert_in_range(extra, 3000 - 230, 3000 + 230); /* sigma 45.8 */
    mroce_tw_destroy(tw);
}

/* Every delivered packet equals the sent one, or differs in exactly one
 * byte; the number of differing packets is the corrupted counter. */
static uint64_t count_corrupted(double p, uint32_t n)
{
    struct mroce_tw_cfg c = base_cfg();
    c.corrupt = p;
    struct mroce_tw *tw = make_wire(&c, 2);
    struct mroce_pkt_meta m = meta_of(1, 2, 1000, 0);
    struct got g = {0};
    uint8_t sent[PAYLOAD];
    uint64_t changed = 0;
    for (uint32_t i = 0; i < n; i++) {
        send_id(tw, i, &m, i, PAYLOAD);
        fill(sent, PAYLOAD, i);
        assert_int_equal(pop_one(tw, UINT64_MAX, &g), 1);
        assert_int_equal(g.len, PAYLOAD);
        size_t d = bytes_differing(g.buf, sent, PAYLOAD);
        assert_true(d <= 1);
        changed += d;
    }
    struct mroce_tw_stats st;
    mroce_tw_stats(tw, &st);
    assert_int_equal(st.corrupted, changed);
    mroce_tw_destroy(tw);
    return changed;
}

static void test_corrupt(void **state)
{
    (void)state;
    assert_int_equal(count_corrupted(1.0, 1000), 1000);
    assert_in_range(count_corrupted(0.2, 10000), 2000 - 200, 2000 + 200);
    assert_int_equal(count_corrupted(0.0, 1000), 0);
}

/* A reordered packet arrives exactly reorder_ns late and overtakes
 * nothing that was not sent after it. */
static void test_reorder(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.delay_ns = 100;
    c.reorder = 0.1;
    c.reorder_ns = 10000;
    c.capacity = 10000;
    struct mroce_tw *tw = make_wire(&c, 2);
    enum { N = 10000 };
    static struct got out[N];
    struct mroce_pkt_meta m = meta_of(1, 2, 1000, 0);
    for (uint32_t i = 0; i < N; i++)
        send_id(tw, (uint64_t)i * 10, &m, i, 8);
    assert_int_equal(drain(tw, UINT64_MAX, out, N), N);
    uint64_t late = 0, inversions = 0;
    for (size_t i = 0; i < N; i++) {
        uint64_t lat = out[i].time - (uint64_t)out[i].id * 10;
        assert_true(lat == 100 || lat == 10100);
        late += lat == 10100;
        inversions += i > 0 && out[i].id < out[i - 1].id;
    }
    struct mroce_tw_stats st;
    mroce_tw_stats(tw, &st);
    assert_int_equal(st.reordered, late);
    assert_in_range(late, 1000 - 150, 1000 + 150); /* sigma 30 */
    assert_true(inversions > 500);
    mroce_tw_destroy(tw);
}

/* ---- ECN ---- */

/* At 1 byte/ns with no overhead, packet k of a burst at t=0 sees k * 1000
 * bytes in front of it. */
static uint32_t first_marked(uint32_t threshold, uint8_t ecn)
{
    struct mroce_tw_cfg c = base_cfg();
    c.rate_bps = 8000000000ull;
    c.max_pkt = 1000;
    c.ecn_threshold_bytes = threshold;
    struct mroce_tw *tw = make_wire(&c, 2);
    struct mroce_pkt_meta m = meta_of(1, 2, 1000, ecn);
    struct got g = {0};
    uint32_t first = UINT32_MAX;
    for (uint32_t k = 0; k < 8; k++)
        send_id(tw, 0, &m, k, 1000);
    for (uint32_t k = 0; k < 8; k++) {
        assert_int_equal(pop_one(tw, UINT64_MAX, &g), 1);
        int ce = g.meta.ecn == MROCE_ECN_CE;
        if (first == UINT32_MAX && ce)
            first = g.id;
        assert_true(ce == (first != UINT32_MAX)); /* marked from then on */
        if (!ce)
            assert_int_equal(g.meta.ecn, ecn);
    }
    struct mroce_tw_stats st;
    mroce_tw_stats(tw, &st);
    uint32_t want = first == UINT32_MAX ? 0 : 8 - first;
    assert_int_equal(st.ecn_marked, ecn == MROCE_ECN_CE ? 0 : want);
    mroce_tw_destroy(tw);
    return first;
}

static void test_ecn_threshold(void **state)
{
    (void)state;
    assert_int_equal(first_marked(2500, MROCE_ECN_ECT0), 3);
    assert_int_equal(first_marked(2500, MROCE_ECN_ECT1), 3);
    assert_int_equal(first_marked(3000, MROCE_ECN_ECT0), 4); /* > not >= */
    assert_int_equal(first_marked(2999, MROCE_ECN_ECT0), 3);
    assert_int_equal(first_marked(2500, MROCE_ECN_NOT_ECT), UINT32_MAX);
    assert_int_equal(first_marked(0, MROCE_ECN_ECT0), UINT32_MAX); /* off */
    /* CE stays CE and is not counted as a new mark. */
    assert_int_equal(first_marked(100000, MROCE_ECN_CE), 0);
}

/* Once the queue drains, packets go through unmarked again. */
static void test_ecn_after_idle(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.rate_bps = 8000000000ull;
    c.ecn_threshold_bytes = 150;
    struct mroce_tw *tw = make_wire(&c, 2);
    struct mroce_pkt_meta m = meta_of(1, 2, 1000, MROCE_ECN_ECT0);
    struct got g = {0};
    for (uint32_t k = 0; k < 3; k++)
        send_id(tw, 0, &m, k, 100); /* third sees 200 bytes: marked */
    send_id(tw, 250, &m, 3, 100);   /* sees 50 bytes: not marked */
    const uint8_t want[] = {MROCE_ECN_ECT0, MROCE_ECN_ECT0, MROCE_ECN_CE,
                            MROCE_ECN_ECT0};
    for (int k = 0; k < 4; k++) {
        assert_int_equal(pop_one(tw, UINT64_MAX, &g), 1);
        assert_int_equal(g.meta.ecn, want[k]);
    }
    mroce_tw_destroy(tw);
}

/* ---- Determinism ---- */

static struct mroce_tw_cfg noisy_cfg(uint64_t seed)
{
    struct mroce_tw_cfg c = base_cfg();
    c.seed = seed;
    c.n_routes = 4;
    c.rate_bps = 25000000000ull;
    c.wire_overhead = 66;
    c.delay_ns = 2000;
    c.jitter_ns = 3000;
    c.loss = 0.05;
    c.burst_enter = 0.01;
    c.burst_exit = 0.3;
    c.burst_loss = 0.7;
    c.dup = 0.05;
    c.corrupt = 0.05;
    c.reorder = 0.05;
    c.reorder_ns = 5000;
    c.ecn_threshold_bytes = 300;
    c.capacity = 64;
    return c;
}

/* Runs a fixed mixed workload; returns the popped packets in out[]. */
static size_t run_noisy(uint64_t seed, struct got *out, size_t max,
                        struct mroce_tw_stats *st)
{
    struct mroce_tw_cfg c = noisy_cfg(seed);
    struct mroce_tw *tw = make_wire(&c, 3);
    size_t n = 0;
    for (uint32_t i = 0; i < 5000; i++) {
        uint8_t src = (uint8_t)(1 + i % 3), dst = (uint8_t)(1 + (i + 1) % 3);
        struct mroce_pkt_meta m =
            meta_of(src, dst, (uint16_t)(1000 + i % 17), MROCE_ECN_ECT0);
        uint64_t now = (uint64_t)(i / 12) * 600; /* bursts build queues */
        send_id(tw, now, &m, i, 4 + i % 200);
        n += drain(tw, now, out + n, max - n);
    }
    n += drain(tw, UINT64_MAX, out + n, max - n);
    mroce_tw_stats(tw, st);
    mroce_tw_destroy(tw);
    return n;
}

static int same_got(const struct got *a, const struct got *b)
{
    return a->dst_ep == b->dst_ep && a->time == b->time && a->len == b->len &&
           memcmp(&a->meta, &b->meta, sizeof(a->meta)) == 0 &&
           memcmp(a->buf, b->buf, a->len < 1024 ? a->len : 1024) == 0;
}

static void test_determinism(void **state)
{
    (void)state;
    enum { MAX = 12000 };
    struct got *a = calloc(MAX, sizeof(*a)), *b = calloc(MAX, sizeof(*b));
    assert_non_null(a);
    assert_non_null(b);
    struct mroce_tw_stats sa, sb;
    size_t na = run_noisy(7, a, MAX, &sa), nb = run_noisy(7, b, MAX, &sb);
    assert_int_equal(na, nb);
    for (size_t i = 0; i < na; i++)
        assert_true(same_got(&a[i], &b[i]));
    assert_memory_equal(&sa, &sb, sizeof(sa));
    /* Every impairment fired, so all of them were compared above. */
    assert_true(sa.lost_random && sa.lost_burst && sa.lost_overflow &&
                sa.duplicated && sa.corrupted && sa.reordered && sa.ecn_marked);

    nb = run_noisy(8, b, MAX, &sb);
    int differ = na != nb;
    for (size_t i = 0; !differ && i < na; i++)
        differ = !same_got(&a[i], &b[i]);
    assert_true(differ);
    free(a);
    free(b);
}

/* ---- Capacity ---- */

static void test_capacity_overflow(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.capacity = 4;
    struct mroce_tw *tw = make_wire(&c, 2);
    struct mroce_pkt_meta m = meta_of(1, 2, 1000, 0);
    struct mroce_tw_stats st;
    struct got g = {0};
    for (uint32_t i = 0; i < 6; i++)
        send_id(tw, 0, &m, i, 8);
    mroce_tw_stats(tw, &st);
    assert_int_equal(st.lost_overflow, 2);
    assert_int_equal(pop_one(tw, 0, &g), 1);
    assert_int_equal(g.id, 0);
    send_id(tw, 0, &m, 6, 8); /* room again */
    send_id(tw, 0, &m, 7, 8); /* full again */
    mroce_tw_stats(tw, &st);
    assert_int_equal(st.lost_overflow, 3);
    const uint32_t want[] = {1, 2, 3, 6};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pop_one(tw, 0, &g), 1);
        assert_int_equal(g.id, want[i]);
    }
    assert_int_equal(pop_one(tw, 0, &g), 0);
    mroce_tw_destroy(tw);
}

/* A duplicate that does not fit is skipped, not counted as a loss. */
static void test_capacity_skips_dup(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.capacity = 1;
    c.dup = 1.0;
    struct mroce_tw *tw = make_wire(&c, 2);
    struct mroce_pkt_meta m = meta_of(1, 2, 1000, 0);
    struct mroce_tw_stats st;
    struct got g = {0};
    send_id(tw, 0, &m, 0, 8);
    assert_int_equal(pop_one(tw, 0, &g), 1);
    assert_int_equal(pop_one(tw, 0, &g), 0);
    mroce_tw_stats(tw, &st);
    assert_int_equal(st.duplicated, 0);
    assert_int_equal(st.lost_overflow, 0);
    mroce_tw_destroy(tw);
}

/* ---- Buffer lending ---- */

/* A relay may re-send the buffer it just popped (the slot is released only
 * after the copy), over IPv6 endpoints as well. */
static void test_resend_popped_buffer(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.capacity = 1;
    struct mroce_tw *tw = NULL;
    assert_int_equal(mroce_tw_create(&c, &tw), 0);
    struct mroce_addr a = {.family = MROCE_AF_INET6, .ip = {0xfd, [15] = 1}};
    struct mroce_addr b = a, r = a;
    b.ip[15] = 2;
    r.ip[15] = 3;
    assert_int_equal(mroce_tw_attach(tw, &a), 0);
    assert_int_equal(mroce_tw_attach(tw, &b), 1);
    assert_int_equal(mroce_tw_attach(tw, &r), 2);
    struct mroce_pkt_meta m = {.src = a, .dst = r, .src_port = 5};
    send_id(tw, 0, &m, 99, PAYLOAD);
    struct mroce_tw_pkt p;
    for (int hop = 0; hop < 3; hop++) {
        assert_int_equal(mroce_tw_pop(tw, UINT64_MAX, &p), 1);
        struct mroce_pkt_meta fwd = p.meta;
        fwd.src = hop % 2 ? b : r;
        fwd.dst = hop % 2 ? r : b;
        assert_int_equal(mroce_tw_send(tw, p.time, &fwd, p.buf, p.len), 0);
    }
    assert_int_equal(mroce_tw_pop(tw, UINT64_MAX, &p), 1);
    uint8_t want[PAYLOAD];
    fill(want, PAYLOAD, 99);
    assert_memory_equal(p.buf, want, PAYLOAD);
    assert_int_equal(p.dst_ep, 1);
    mroce_tw_destroy(tw);
}

/* ---- Misuse ---- */

static void test_create_errors(void **state)
{
    (void)state;
    struct mroce_tw *tw = (struct mroce_tw *)&tw;
    struct mroce_tw_cfg c = base_cfg();
    assert_int_equal(mroce_tw_create(NULL, &tw), -EINVAL);
    assert_int_equal(mroce_tw_create(&c, NULL), -EINVAL);
    double bad[] = {-0.1, 1.5, NAN};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        c = base_cfg();
        c.loss = bad[i];
        assert_int_equal(mroce_tw_create(&c, &tw), -EINVAL);
        assert_null(tw);
        c = base_cfg();
        c.burst_exit = bad[i];
        assert_int_equal(mroce_tw_create(&c, &tw), -EINVAL);
    }
    c = base_cfg();
    c.ecn_threshold_bytes = UINT32_MAX;
    assert_int_equal(mroce_tw_create(&c, &tw), -EINVAL);
    c = base_cfg();
    c.max_pkt = UINT32_MAX;
    assert_int_equal(mroce_tw_create(&c, &tw), -EINVAL);
    c = base_cfg();
    c.delay_ns = UINT64_MAX;
    assert_int_equal(mroce_tw_create(&c, &tw), -EINVAL);
    struct mroce_tw_cfg zero = {0}; /* all defaults */
    assert_int_equal(mroce_tw_create(&zero, &tw), 0);
    mroce_tw_destroy(tw);
    mroce_tw_destroy(NULL);
}

static void test_attach_errors(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.max_endpoints = 2;
    struct mroce_tw *tw = make_wire(&c, 2);
    struct mroce_addr none = {0}, dup = v4(2), third = v4(3);
    struct mroce_addr v6 = {.family = MROCE_AF_INET6};
    assert_int_equal(mroce_tw_attach(tw, NULL), -EINVAL);
    assert_int_equal(mroce_tw_attach(tw, &none), -EINVAL);
    assert_int_equal(mroce_tw_attach(tw, &dup), -EEXIST);
    assert_int_equal(mroce_tw_attach(tw, &third), -ENOSPC);
    assert_int_equal(mroce_tw_attach(tw, &v6), -ENOSPC);
    /* Bytes beyond an IPv4 address are not part of it. */
    dup.ip[9] = 0x55;
    assert_int_equal(mroce_tw_attach(tw, &dup), -EEXIST);
    mroce_tw_destroy(tw);
}

static void test_send_errors(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    c.rate_bps = 8000000000ull;
    struct mroce_tw *tw = make_wire(&c, 2);
    struct mroce_pkt_meta ok = meta_of(1, 2, 1000, 0);
    struct mroce_pkt_meta no_dst = meta_of(1, 9, 1000, 0);
    struct mroce_pkt_meta no_src = meta_of(9, 2, 1000, 0);
    uint8_t buf[300] = {0};
    struct mroce_tw_pkt p;
    assert_int_equal(mroce_tw_send(NULL, 0, &ok, buf, 8), -EINVAL);
    assert_int_equal(mroce_tw_send(tw, 0, NULL, buf, 8), -EINVAL);
    assert_int_equal(mroce_tw_send(tw, 0, &ok, NULL, 8), -EINVAL);
    assert_int_equal(mroce_tw_send(tw, 0, &no_dst, buf, 8), -ENOENT);
    assert_int_equal(mroce_tw_send(tw, 0, &no_src, buf, 8), -ENOENT);
    assert_int_equal(mroce_tw_send(tw, 0, &ok, buf, 257), -EMSGSIZE);
    assert_int_equal(mroce_tw_pop(tw, 0, NULL), -EINVAL);
    assert_int_equal(mroce_tw_pop(NULL, 0, &p), -EINVAL);
    /* Rejected sends leave no trace: no count, no egress time. */
    struct mroce_tw_stats st;
    mroce_tw_stats(tw, &st);
    assert_int_equal(st.sent, 0);
    assert_int_equal(mroce_tw_egress_free_at(tw, 0), 0);
    assert_int_equal(mroce_tw_send(tw, 0, &ok, NULL, 0), 0);
    assert_int_equal(mroce_tw_send(tw, 0, &ok, buf, 256), 0);
    assert_int_equal(mroce_tw_egress_free_at(tw, 0), 256);
    assert_int_equal(mroce_tw_pop(tw, 0, &p), 1);
    assert_int_equal(p.len, 0);
    mroce_tw_destroy(tw);
}

static void test_set_loss_clamps(void **state)
{
    (void)state;
    struct mroce_tw_cfg c = base_cfg();
    struct mroce_tw *tw = make_wire(&c, 2);
    struct mroce_pkt_meta m = meta_of(1, 2, 1000, 0);
    struct mroce_tw_stats st;
    mroce_tw_set_loss(tw, 7.0); /* clamped to 1 */
    for (uint32_t i = 0; i < 100; i++)
        send_id(tw, 0, &m, i, 8);
    mroce_tw_set_loss(tw, NAN); /* ignored: still 1 */
    send_id(tw, 0, &m, 100, 8);
    mroce_tw_set_loss(tw, -3.0); /* clamped to 0 */
    send_id(tw, 0, &m, 101, 8);
    mroce_tw_stats(tw, &st);
    assert_int_equal(st.lost_random, 101);
    assert_int_equal(mroce_tw_next_time(tw), 0);
    mroce_tw_destroy(tw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_ties),
        cmocka_unit_test(test_heap_order_random),
        cmocka_unit_test(test_route_fifo_and_cross_route_reorder),
        cmocka_unit_test(test_serialization_exact),
        cmocka_unit_test(test_serialization_no_drift),
        cmocka_unit_test(test_dropped_packets_use_egress_time),
        cmocka_unit_test(test_loss_rate_1pct),
        cmocka_unit_test(test_loss_rate_10pct),
        cmocka_unit_test(test_burst_loss_runs),
        cmocka_unit_test(test_route_of),
        cmocka_unit_test(test_blackhole),
        cmocka_unit_test(test_blackhole_errors),
        cmocka_unit_test(test_dup_all),
        cmocka_unit_test(test_dup_rate),
        cmocka_unit_test(test_corrupt),
        cmocka_unit_test(test_reorder),
        cmocka_unit_test(test_ecn_threshold),
        cmocka_unit_test(test_ecn_after_idle),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_capacity_overflow),
        cmocka_unit_test(test_capacity_skips_dup),
        cmocka_unit_test(test_resend_popped_buffer),
        cmocka_unit_test(test_create_errors),
        cmocka_unit_test(test_attach_errors),
        cmocka_unit_test(test_send_errors),
        cmocka_unit_test(test_set_loss_clamps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
