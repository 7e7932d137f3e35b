/* Unit tests for the simulator's event list (src/sim/event.c): order by
 * time, ties by insertion, cancellation, clamping, stop, growth; plus a
 * micro-benchmark that prints events per second (never asserted). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/event.h"
#include "sim/event_int.h"
#include "sim/rng.h"

#define MAX_LOG 4096

struct log {
    struct mroce_sim_evlist *l;
    int n;
    uint64_t arg[MAX_LOG];
    uint64_t when[MAX_LOG];
};

static void rec(void *obj, uint64_t arg, uint64_t now)
{
    struct log *g = obj;
    assert_int_equal(now, mroce_sim_ev_now(g->l));
    assert_true(g->n < MAX_LOG);
    g->arg[g->n] = arg;
    g->when[g->n] = now;
    g->n++;
}

static struct log *log_new(void)
{
    struct log *g = calloc(1, sizeof(*g));
    assert_non_null(g);
    g->l = mroce_sim_ev_create(4); /* tiny: exercises growth */
    assert_non_null(g->l);
    return g;
}

static void log_free(struct log *g)
{
    mroce_sim_ev_destroy(g->l);
    free(g);
}

static void test_order_and_ties(void **state)
{
    (void)state;
    struct log *g = log_new();
    /* Times 30, 10, 20, 10, 30, 10: ties must keep insertion order. */
    const uint64_t t[] = {30, 10, 20, 10, 30, 10};
    for (uint64_t i = 0; i < 6; i++)
        assert_true(mroce_sim_ev_at(g->l, t[i], rec, g, i) != 0);
    assert_int_equal(mroce_sim_ev_pending(g->l), 6);
    assert_int_equal(mroce_sim_ev_next_time(g->l), 10);
    assert_int_equal(mroce_sim_ev_run(g->l, MROCE_SIM_NEVER), 6);
    const uint64_t want[] = {1, 3, 5, 2, 0, 4};
    for (int i = 0; i < 6; i++)
        assert_int_equal(g->arg[i], want[i]);
    assert_int_equal(mroce_sim_ev_now(g->l), 30);
    assert_false(mroce_sim_ev_step(g->l));
    log_free(g);
}

/* Many ties among many times: a heap that broke ties by anything but
 * insertion order would fail this. */
static void test_random_ties_stable(void **state)
{
    (void)state;
    struct log *g = log_new();
    struct mroce_sim_rng r;
    mroce_sim_rng_init(&r, 7);
    for (uint64_t i = 0; i < 3000; i++)
        mroce_sim_ev_at(g->l, mroce_sim_rng_next(&r) % 50, rec, g, i);
    mroce_sim_ev_run(g->l, MROCE_SIM_NEVER);
    assert_int_equal(g->n, 3000);
    for (int i = 1; i < g->n; i++) {
        assert_true(g->when[i - 1] <= g->when[i]);
        if (g->when[i - 1] == g->when[i])
            assert_true(g->arg[i - 1] < g->arg[i]);
    }
    log_free(g);
}

/* An event scheduled for now from a handler runs after the others
 * already due now; one scheduled in the past is clamped to now. */
static void chain(void *obj, uint64_t arg, uint64_t now)
{
    struct log *g = obj;
    rec(obj, arg, now);
    if (arg == 100)
        mroce_sim_ev_at(g->l, now, rec, g, 101);
    if (arg == 200)
        mroce_sim_ev_at(g->l, now - 5, rec, g, 201);
}

static void test_same_time_from_handler(void **state)
{
    (void)state;
    struct log *g = log_new();
    mroce_sim_ev_at(g->l, 10, chain, g, 100);
    mroce_sim_ev_at(g->l, 10, rec, g, 1);
    mroce_sim_ev_at(g->l, 20, chain, g, 200);
    mroce_sim_ev_run(g->l, MROCE_SIM_NEVER);
    const uint64_t want[] = {100, 1, 101, 200, 201};
    assert_int_equal(g->n, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(g->arg[i], want[i]);
    assert_int_equal(g->when[4], 20);
    log_free(g);
}

static void test_cancel(void **state)
{
    (void)state;
    struct log *g = log_new();
    mroce_sim_ev_handle h[10];
    for (uint64_t i = 0; i < 10; i++)
        h[i] = mroce_sim_ev_at(g->l, 100 - i * 7, rec, g, i);
    assert_true(mroce_sim_ev_cancel(g->l, h[3]));
    assert_false(mroce_sim_ev_cancel(g->l, h[3])); /* already gone */
    assert_true(mroce_sim_ev_cancel(g->l, h[9]));  /* the earliest */
    assert_false(mroce_sim_ev_cancel(g->l, 0));
    assert_int_equal(mroce_sim_ev_pending(g->l), 8);
    mroce_sim_ev_run(g->l, MROCE_SIM_NEVER);
    assert_int_equal(g->n, 8);
    for (int i = 0; i < g->n; i++)
        assert_true(g->arg[i] != 3 && g->arg[i] != 9);
    for (int i = 1; i < g->n; i++)
        assert_true(g->when[i - 1] <= g->when[i]);
    /* A fired event's handle is stale even after its slot is reused. */
    mroce_sim_ev_handle fresh = mroce_sim_ev_after(g->l, 1, rec, g, 77);
    for (int i = 0; i < 10; i++)
        assert_false(mroce_sim_ev_cancel(g->l, h[i]));
    assert_true(mroce_sim_ev_cancel(g->l, fresh));
    log_free(g);
}

static void stopper(void *obj, uint64_t arg, uint64_t now)
{
    struct log *g = obj;
    rec(obj, arg, now);
    mroce_sim_ev_stop(g->l);
}

static void test_run_until_and_stop(void **state)
{
    (void)state;
    struct log *g = log_new();
    mroce_sim_ev_at(g->l, 10, rec, g, 1);
    mroce_sim_ev_at(g->l, 20, stopper, g, 2);
    mroce_sim_ev_at(g->l, 30, rec, g, 3);
    mroce_sim_ev_at(g->l, 50, rec, g, 4);
    assert_int_equal(mroce_sim_ev_run(g->l, 15), 1);
    assert_int_equal(mroce_sim_ev_now(g->l), 15);     /* clock advanced */
    assert_int_equal(mroce_sim_ev_run(g->l, 100), 1); /* stopped at 20 */
    assert_int_equal(mroce_sim_ev_now(g->l), 20);
    assert_int_equal(mroce_sim_ev_run(g->l, 40), 1);
    assert_int_equal(mroce_sim_ev_now(g->l), 40);
    assert_int_equal(mroce_sim_ev_next_time(g->l), 50);
    assert_int_equal(mroce_sim_ev_count(g->l), 3);
    log_free(g);
}

/* The far heap (events beyond the wheel's reach: it starts at 1024
 * ticks of 1024 ps): a lone far event fires, after a run that ended
 * before it; a cancelled far event at the heap's top, earlier than
 * anything else, neither fires nor hides the events after it. */
static void test_far_heap(void **state)
{
    (void)state;
    struct log *g = log_new();
    const uint64_t ms = 1000 * MROCE_SIM_PS_PER_US;
    assert_true(mroce_sim_ev_post(g->l, ms, rec, g, 1));
    assert_int_equal(mroce_sim_ev_run(g->l, ms - 1), 0);
    assert_int_equal(mroce_sim_ev_run(g->l, MROCE_SIM_NEVER), 1);
    assert_int_equal(g->when[0], ms);
    mroce_sim_ev_handle h = mroce_sim_ev_at(g->l, 2 * ms, rec, g, 2);
    assert_true(mroce_sim_ev_post(g->l, 2 * ms + 5000, rec, g, 3));
    assert_true(mroce_sim_ev_post(g->l, 5 * ms, rec, g, 4));
    assert_true(mroce_sim_ev_cancel(g->l, h));
    assert_int_equal(mroce_sim_ev_next_time(g->l), 2 * ms + 5000);
    assert_int_equal(mroce_sim_ev_run(g->l, MROCE_SIM_NEVER), 2);
    assert_int_equal(g->n, 3);
    assert_true(g->arg[1] == 3 && g->when[1] == 2 * ms + 5000);
    assert_true(g->arg[2] == 4 && g->when[2] == 5 * ms);
    log_free(g);
}

/* Two lists in one process do not share anything. */
static void test_two_lists(void **state)
{
    (void)state;
    struct log *a = log_new(), *b = log_new();
    mroce_sim_ev_at(a->l, 5, rec, a, 1);
    mroce_sim_ev_at(b->l, 3, rec, b, 2);
    mroce_sim_ev_run(a->l, MROCE_SIM_NEVER);
    assert_int_equal(a->n, 1);
    assert_int_equal(b->n, 0);
    assert_int_equal(mroce_sim_ev_now(b->l), 0);
    log_free(a);
    log_free(b);
}

/* ---- Against a reference model ----
 *
 * Random schedules (dense ties, a few ps to milliseconds ahead, the far
 * future, the saturated NEVER), random cancels, events scheduled from
 * handlers and between runs, runs to random instants: the list must fire
 * exactly what a sorted array of (time, insertion number) fires, in that
 * order, whether events were scheduled with a handle or posted (through
 * the call or inline: emptied buckets take spare arrays there). This crosses
 * the list's resizes (ticks halving, the wheel growing) and its far heap. */
#define MODEL_MAX 200000

struct model {
    struct mroce_sim_evlist *l;
    struct mroce_sim_rng r;
    uint64_t t[MODEL_MAX]; /* time of event i */
    bool live[MODEL_MAX];  /* pending in the model */
    mroce_sim_ev_handle h[MODEL_MAX];
    uint64_t n; /* events scheduled */
    uint64_t fired, bad;
    uint64_t last_t, last_i;
};

static uint64_t model_delay(struct model *m)
{
    uint64_t x = mroce_sim_rng_next(&m->r);
    switch (x % 8) {
    case 0:
        return 0;
    case 1:
        return x >> 40 & 7; /* dense ties */
    case 2:
        return 1000000 + (x >> 20) % 83000; /* a link: 1 us + a frame */
    case 3:
        return (x >> 20) % 100000;
    case 4:
        return (x >> 20) % 3000000000ull; /* up to 3 ms: timers */
    case 5:
        return x % 16 == 5 ? MROCE_SIM_NEVER : (x >> 20) % 10000;
    default:
        return (x >> 20) % 2000000;
    }
}

static void model_ev(void *obj, uint64_t arg, uint64_t now);

static void model_add(struct model *m, uint64_t now)
{
    if (m->n >= MODEL_MAX)
        return;
    uint64_t d = model_delay(m);
    uint64_t t =
        d == MROCE_SIM_NEVER || now + d < now ? MROCE_SIM_NEVER : now + d;
    uint64_t i = m->n++;
    m->t[i] = t;
    m->live[i] = true;
    if (i % 3 == 0) { /* without a handle: cannot be cancelled */
        m->h[i] = 0;
        if (i % 2) /* the fabric's inline post (event_int.h) */
            assert_true(ev_post_inline(m->l, t, model_ev, m, i));
        else
            assert_true(mroce_sim_ev_post(m->l, t, model_ev, m, i));
        return;
    }
    m->h[i] = mroce_sim_ev_at(m->l, t, model_ev, m, i);
    assert_true(m->h[i] != 0);
}

/* Fires event i: it must be the earliest live one in the model. */
static void model_ev(void *obj, uint64_t arg, uint64_t now)
{
    struct model *m = obj;
    assert_true(m->live[arg]);
    assert_int_equal(m->t[arg], now);
    if (m->fired && (now < m->last_t || (now == m->last_t && arg < m->last_i)))
        m->bad++;
    m->live[arg] = false;
    m->fired++;
    m->last_t = now;
    m->last_i = arg;
    uint64_t x = mroce_sim_rng_next(&m->r);
    for (uint64_t k = 0; k < x % 3; k++)
        model_add(m, now);
    if (x % 5 == 0 && m->n) { /* cancel some pending one */
        uint64_t j = (x >> 8) % m->n;
        if (m->h[j]) {
            assert_int_equal(mroce_sim_ev_cancel(m->l, m->h[j]), m->live[j]);
            m->live[j] = false;
        }
    }
}

static uint64_t model_min(const struct model *m)
{
    uint64_t best = MROCE_SIM_NEVER;
    for (uint64_t i = 0; i < m->n; i++)
        if (m->live[i] && m->t[i] < best)
            best = m->t[i];
    return best;
}

static void test_against_model(void **state)
{
    (void)state;
    struct model *m = calloc(1, sizeof(*m));
    assert_non_null(m);
    m->l = mroce_sim_ev_create(16);
    mroce_sim_rng_init(&m->r, 42);
    for (int i = 0; i < 5000; i++)
        model_add(m, 0);
    for (int round = 0; round < 400 && m->n < MODEL_MAX; round++) {
        uint64_t now = mroce_sim_ev_now(m->l);
        assert_int_equal(mroce_sim_ev_next_time(m->l), model_min(m));
        uint64_t until = now + mroce_sim_rng_next(&m->r) % 20000000;
        mroce_sim_ev_run(m->l, until);
        for (uint64_t i = 0; i < m->n; i++) /* none due was left */
            assert_false(m->live[i] && m->t[i] <= until &&
                         m->t[i] != MROCE_SIM_NEVER);
        for (int k = 0; k < 50; k++) /* between runs, at the new now */
            model_add(m, mroce_sim_ev_now(m->l));
    }
    mroce_sim_ev_run(m->l, MROCE_SIM_NEVER);
    assert_int_equal(m->bad, 0);
    for (uint64_t i = 0; i < m->n; i++)
        assert_false(m->live[i]);
    assert_int_equal(mroce_sim_ev_pending(m->l), 0);
    assert_true(m->fired > 100000);
    mroce_sim_ev_destroy(m->l);
    free(m);
}

/* ---- Micro-benchmark: the classic hold model ---- */

struct hold {
    struct mroce_sim_evlist *l;
    struct mroce_sim_rng r;
    uint64_t left;
};

/* Each event schedules one more at a random delay (up to 100 ns), so the
 * number pending stays constant, as in a busy fabric. */
static void hold_ev(void *obj, uint64_t arg, uint64_t now)
{
    struct hold *h = obj;
    if (h->left == 0)
        return;
    h->left--;
    mroce_sim_ev_at(h->l, now + mroce_sim_rng_next(&h->r) % 100000, hold_ev, h,
                    arg);
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void bench_hold(size_t pending, uint64_t events)
{
    struct hold h = {.l = mroce_sim_ev_create(pending), .left = events};
    assert_non_null(h.l);
    mroce_sim_rng_init(&h.r, 1);
    for (size_t i = 0; i < pending; i++)
        mroce_sim_ev_at(h.l, mroce_sim_rng_next(&h.r) % 100000, hold_ev, &h, i);
    double t0 = wall_s();
    uint64_t n = mroce_sim_ev_run(h.l, MROCE_SIM_NEVER);
    double dt = wall_s() - t0;
    printf("[ bench    ] event list, %7zu pending: %llu events in %.3f s = "
           "%.1f M events/s\n",
           pending, (unsigned long long)n, dt, (double)n / dt / 1e6);
    mroce_sim_ev_destroy(h.l);
}

/* ---- Memory ---- */

/* Chains of events: each reposts itself a random 1..range ps later while
 * its id is below active. */
struct chains {
    struct mroce_sim_evlist *l;
    struct mroce_sim_rng rng;
    uint64_t range;
    uint32_t active;
};

static void chain_step(void *obj, uint64_t id, uint64_t now)
{
    struct chains *c = obj;
    if (id < c->active)
        assert_true(mroce_sim_ev_post(
            c->l, now + 1 + mroce_sim_rng_next(&c->rng) % c->range, chain_step,
            c, id));
}

/* The node storage follows the events pending, not the wheel's size or
 * how much of it the run has swept: 60,000 chains grow the wheel, then
 * 20,000 go on (at the same rate of events, so the tick stays) over many
 * turns of it: a bucket's array is at least 4 nodes, and spares are
 * kept, so about 6 nodes per event pending; buckets that kept their
 * arrays held 65. */
static void test_memory_follows_pending(void **state)
{
    (void)state;
    struct chains c = {.l = mroce_sim_ev_create(0),
                       .rng = {7},
                       .range = 60000,
                       .active = 60000};
    assert_non_null(c.l);
    for (uint32_t i = 0; i < c.active; i++)
        assert_true(mroce_sim_ev_post(c.l, 1 + i, chain_step, &c, i));
    mroce_sim_ev_run(c.l, 20 * c.range);
    c.active = 20000;
    c.range = 20000;
    uint64_t t = mroce_sim_ev_now(c.l);
    mroce_sim_ev_run(c.l, t + 60000); /* the others end */
    size_t pending = mroce_sim_ev_pending(c.l);
    assert_int_equal(pending, 20000);
    t = mroce_sim_ev_now(c.l);
    mroce_sim_ev_run(c.l, t + 100 * c.range);
    size_t bytes = mroce_sim_ev_node_bytes(c.l), node = 48;
    printf("[ memory   ] %zu events pending, %zu B of nodes (%.1f per event)\n",
           pending, bytes, (double)bytes / node / (double)pending);
    assert_true(bytes <
                8 * node * pending); /* 6.0; buckets keeping theirs: 65 */
    mroce_sim_ev_destroy(c.l);
}

static void test_bench(void **state)
{
    (void)state;
    bench_hold(1000, 5000000);
    bench_hold(10000, 5000000);
    bench_hold(100000, 5000000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_ties),
        cmocka_unit_test(test_random_ties_stable),
        cmocka_unit_test(test_same_time_from_handler),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_run_until_and_stop),
        cmocka_unit_test(test_far_heap),
        cmocka_unit_test(test_two_lists),
        cmocka_unit_test(test_against_model),
        cmocka_unit_test(test_memory_follows_pending),
        cmocka_unit_test(test_bench),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
