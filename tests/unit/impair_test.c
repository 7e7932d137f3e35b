/* The impairment layer (src/io/impair.c) on its own, in virtual time:
 * its statistics over 100k packets (loss rate, Gilbert-Elliott burst
 * lengths, duplicates, reordering, delay), its queue order, its limits
 * and its determinism. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "io/impair.h"

#define N_PKTS 100000
#define STEP_NS 1000 /* one packet every microsecond */
#define PKT_LEN 64

static struct mroce_impair_q *g_q;

static int teardown(void **state)
{
    (void)state;
    mroce_impair_free(g_q);
    g_q = NULL;
    return 0;
}

static struct mroce_impair_q *mk(const struct mroce_impair *c, uint32_t slots)
{
    assert_int_equal(mroce_impair_new(c, slots, PKT_LEN, &g_q), 0);
    return g_q;
}

/* Packet i carries i in its first 4 bytes and its meta.src_port. */
static void pkt(uint32_t i, uint8_t *buf, struct mroce_pkt_meta *m)
{
    memset(buf, 0, PKT_LEN);
    memcpy(buf, &i, sizeof(i));
    memset(m, 0, sizeof(*m));
    m->src_port = (uint16_t)i;
}

struct run {
    int fate[N_PKTS];
    uint32_t out[2 * N_PKTS]; /* packet numbers in the order they left */
    int n_out;
};

static struct run g_run;

static void pop_due(struct mroce_impair_q *q, uint64_t now, struct run *r)
{
    uint8_t buf[PKT_LEN];
    struct mroce_pkt_meta m;
    int len;
    while ((len = mroce_impair_pop(q, now, buf, sizeof(buf), &m)) > 0) {
        uint32_t i;
        assert_int_equal(len, PKT_LEN);
        memcpy(&i, buf, sizeof(i));
        assert_int_equal(m.src_port, (uint16_t)i); /* meta travels along */
        r->out[r->n_out++] = i;
    }
    assert_int_equal(len, 0);
}

/* Offers N_PKTS packets, one per STEP_NS, then drains the queue. */
static struct run *drive(struct mroce_impair_q *q)
{
    struct run *r = &g_run;
    memset(r, 0, sizeof(*r));
    uint64_t now = 0;
    for (uint32_t i = 0; i < N_PKTS; i++, now += STEP_NS) {
        pop_due(q, now, r);
        uint8_t buf[PKT_LEN];
        struct mroce_pkt_meta m;
        pkt(i, buf, &m);
        r->fate[i] = mroce_impair_apply(q, now, buf, PKT_LEN, &m);
        if (r->fate[i] == MROCE_IMPAIR_PASS)
            r->out[r->n_out++] = i;
    }
    pop_due(q, UINT64_MAX, r);
    assert_int_equal(mroce_impair_next_due(q), UINT64_MAX);
    return r;
}

static int count_fate(const struct run *r, int fate)
{
    int n = 0;
    for (int i = 0; i < N_PKTS; i++)
        n += r->fate[i] == fate;
    return n;
}

static void assert_near(double got, double want, double tol)
{
    double d = got > want ? got - want : want - got;
    if (d > tol)
        fail_msg("got %f, want %f +- %f", got, want, tol);
}

static void test_off(void **state)
{
    (void)state;
    struct mroce_impair c;
    memset(&c, 0, sizeof(c));
    assert_false(mroce_impair_active(&c));
    c.delay_ns = 1;
    assert_true(mroce_impair_active(&c));
}

static void test_bad_config(void **state)
{
    (void)state;
    struct mroce_impair c;
    memset(&c, 0, sizeof(c));
    struct mroce_impair_q *q;
    c.loss = 1.5;
    assert_int_equal(mroce_impair_new(&c, 8, 64, &q), MROCE_EINVAL);
    assert_null(q);
    c.loss = -0.1;
    assert_int_equal(mroce_impair_new(&c, 8, 64, &q), MROCE_EINVAL);
    c.loss = 0;
    assert_int_equal(mroce_impair_new(&c, 0, 64, &q), MROCE_EINVAL);
    assert_int_equal(mroce_impair_new(&c, 8, 0, &q), MROCE_EINVAL);
}

/* 5% independent loss: within 0.5% absolute (about 7 sigma). */
static void test_loss_rate(void **state)
{
    (void)state;
    struct mroce_impair c = {.loss = 0.05, .seed = 1};
    struct run *r = drive(mk(&c, 16));
    int lost = count_fate(r, MROCE_IMPAIR_DROP);
    assert_near((double)lost / N_PKTS, 0.05, 0.005);
    assert_int_equal(r->n_out, N_PKTS - lost);
    struct mroce_impair_stats st;
    mroce_impair_get_stats(g_q, &st);
    assert_int_equal(st.lost, (uint64_t)lost);
    assert_int_equal(st.packets, N_PKTS);
    /* order kept: nothing is held */
    for (int i = 1; i < r->n_out; i++)
        assert_true(r->out[i] > r->out[i - 1]);
}

/* Gilbert-Elliott: mean burst 1/exit, loss enter/(enter+exit). */
static void test_burst_loss(void **state)
{
    (void)state;
    struct mroce_impair c = {
        .burst_enter = 0.01, .burst_exit = 0.25, .seed = 2};
    struct run *r = drive(mk(&c, 16));
    int bursts = 0, lost = 0;
    for (int i = 0; i < N_PKTS; i++) {
        bool l = r->fate[i] == MROCE_IMPAIR_DROP;
        lost += l;
        bursts += l && (i == 0 || r->fate[i - 1] != MROCE_IMPAIR_DROP);
    }
    assert_true(bursts > 500);
    assert_near((double)lost / bursts, 4.0, 0.4);
    assert_near((double)lost / N_PKTS, 0.01 / 0.26, 0.006);
    struct mroce_impair_stats st;
    mroce_impair_get_stats(g_q, &st);
    assert_int_equal(st.burst_lost, (uint64_t)lost);
    /* a burst can start right where another ended */
    assert_true(st.bursts >= (uint64_t)bursts);
}

/* 10% duplicates: each comes out once more, right after. */
static void test_duplicate(void **state)
{
    (void)state;
    struct mroce_impair c = {.duplicate = 0.1, .seed = 3};
    struct run *r = drive(mk(&c, 64));
    assert_int_equal(count_fate(r, MROCE_IMPAIR_PASS), N_PKTS);
    int dups = r->n_out - N_PKTS;
    assert_near((double)dups / N_PKTS, 0.1, 0.01);
    struct mroce_impair_stats st;
    mroce_impair_get_stats(g_q, &st);
    assert_int_equal(st.dup, (uint64_t)dups);
    static uint8_t seen[N_PKTS];
    memset(seen, 0, sizeof(seen));
    for (int i = 0; i < r->n_out; i++)
        assert_true(++seen[r->out[i]] <= 2);
}

/* 10% held back 5 us: they leave after the next ~5 packets. */
static void test_reorder(void **state)
{
    (void)state;
    struct mroce_impair c = {
        .reorder = 0.1, .reorder_ns = 5 * STEP_NS, .seed = 4};
    struct run *r = drive(mk(&c, 64));
    int held = count_fate(r, MROCE_IMPAIR_HELD);
    assert_near((double)held / N_PKTS, 0.1, 0.01);
    assert_int_equal(r->n_out, N_PKTS);
    int late = 0; /* packets that left after a higher-numbered one */
    uint32_t hi = 0;
    for (int i = 0; i < r->n_out; i++) {
        late += i > 0 && r->out[i] < hi;
        hi = r->out[i] > hi ? r->out[i] : hi;
    }
    /* all but the rare one whose successors were all held too */
    assert_true(late <= held && late >= held - held / 100);
    struct mroce_impair_stats st;
    mroce_impair_get_stats(g_q, &st);
    assert_int_equal(st.reordered, (uint64_t)held);
}

/* Delay on every packet: order kept, nothing leaves early. */
static void test_delay(void **state)
{
    (void)state;
    struct mroce_impair c = {.delay_ns = 20 * STEP_NS, .seed = 5};
    struct mroce_impair_q *q = mk(&c, 64);
    uint8_t buf[PKT_LEN];
    struct mroce_pkt_meta m;
    for (uint32_t i = 0; i < 10; i++) {
        pkt(i, buf, &m);
        assert_int_equal(mroce_impair_apply(q, 100, buf, PKT_LEN, &m),
                         MROCE_IMPAIR_HELD);
    }
    assert_int_equal(mroce_impair_next_due(q), 100 + 20 * STEP_NS);
    assert_int_equal(mroce_impair_pop(q, 99 + 20 * STEP_NS, buf, PKT_LEN, &m),
                     0);
    for (uint32_t i = 0; i < 10; i++) {
        assert_int_equal(
            mroce_impair_pop(q, 100 + 20 * STEP_NS, buf, PKT_LEN, &m), PKT_LEN);
        uint32_t got;
        memcpy(&got, buf, sizeof(got));
        assert_int_equal(got, i); /* equal due times: queue order */
    }
    struct run *r = drive(q);
    assert_int_equal(r->n_out, N_PKTS);
    for (int i = 0; i < N_PKTS; i++)
        assert_int_equal(r->out[i], (uint32_t)i);
}

/* A full queue sends at once (counted); a short buffer leaves the
 * packet queued. */
static void test_limits(void **state)
{
    (void)state;
    struct mroce_impair c = {.delay_ns = 1000, .seed = 6};
    struct mroce_impair_q *q = mk(&c, 2);
    uint8_t buf[PKT_LEN];
    struct mroce_pkt_meta m;
    pkt(0, buf, &m);
    assert_int_equal(mroce_impair_apply(q, 0, buf, PKT_LEN, &m),
                     MROCE_IMPAIR_HELD);
    assert_int_equal(mroce_impair_apply(q, 0, buf, PKT_LEN, &m),
                     MROCE_IMPAIR_HELD);
    assert_int_equal(mroce_impair_apply(q, 0, buf, PKT_LEN, &m),
                     MROCE_IMPAIR_PASS);
    uint8_t big[PKT_LEN + 1] = {0};
    assert_int_equal(mroce_impair_apply(q, 0, big, sizeof(big), &m),
                     MROCE_IMPAIR_PASS);
    struct mroce_impair_stats st;
    mroce_impair_get_stats(q, &st);
    assert_int_equal(st.overflow, 2);
    assert_int_equal(mroce_impair_pop(q, 5000, buf, PKT_LEN - 1, &m),
                     MROCE_ENOBUFS);
    assert_int_equal(mroce_impair_pop(q, 5000, buf, PKT_LEN, &m), PKT_LEN);
}

/* The same seed gives the same fates; another seed others. */
static void test_deterministic(void **state)
{
    (void)state;
    static int first[N_PKTS];
    struct mroce_impair c = {.loss = 0.1,
                             .reorder = 0.1,
                             .reorder_ns = 3000,
                             .duplicate = 0.1,
                             .seed = 42};
    memcpy(first, drive(mk(&c, 64))->fate, sizeof(first));
    teardown(NULL);
    assert_memory_equal(first, drive(mk(&c, 64))->fate, sizeof(first));
    teardown(NULL);
    c.seed = 43;
    assert_memory_not_equal(first, drive(mk(&c, 64))->fate, sizeof(first));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_teardown(f, teardown)
        T(test_off),        T(test_bad_config), T(test_loss_rate),
        T(test_burst_loss), T(test_duplicate),  T(test_reorder),
        T(test_delay),      T(test_limits),     T(test_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
