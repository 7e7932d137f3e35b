/* Unit tests for the event list's logical processes (src/sim/event.c,
 * event.h "Order of equal times"): keys by LP and the LP's own sequence,
 * handlers running as the LP an event names, keys taken in one list and
 * scheduled in another; and the property the parallel simulator rests
 * on: a toy system of LPs that draw their own random numbers and talk to
 * each other with at least a lookahead of delay runs event for event the
 * same in one list as cut into two lists that run in windows of the
 * lookahead and exchange what crosses the cut. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "sim/event.h"
#include "sim/rng.h"

#define MAX_LOG 64

struct tlog {
    struct mroce_sim_evlist *l;
    int n;
    uint64_t arg[MAX_LOG];
    uint32_t lp[MAX_LOG];
};

static void rec(void *obj, uint64_t arg, uint64_t now)
{
    (void)now;
    struct tlog *g = obj;
    assert_true(g->n < MAX_LOG);
    g->arg[g->n] = arg;
    g->lp[g->n++] = mroce_sim_ev_lp(g->l);
}

static struct mroce_sim_evlist *list_with_lps(uint32_t n)
{
    struct mroce_sim_evlist *l = mroce_sim_ev_create(4);
    assert_non_null(l);
    assert_true(mroce_sim_ev_set_lps(l, n));
    assert_int_equal(mroce_sim_ev_n_lps(l), n);
    return l;
}

/* Equal times pop by scheduling LP, then in that LP's order. */
static void test_ties_by_lp(void **state)
{
    (void)state;
    struct tlog g = {.l = list_with_lps(3)};
    const uint32_t by[] = {2, 1, 2, 0, 1, 2};
    for (uint64_t i = 0; i < 6; i++) {
        mroce_sim_ev_set_lp(g.l, by[i]);
        assert_true(mroce_sim_ev_at(g.l, 10, rec, &g, i) != 0);
    }
    mroce_sim_ev_set_lp(g.l, 0);
    mroce_sim_ev_run(g.l, MROCE_SIM_NEVER);
    const uint64_t want[] = {3, 1, 4, 0, 2, 5};
    assert_int_equal(g.n, 6);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(g.arg[i], want[i]);
        assert_int_equal(g.lp[i], by[want[i]]); /* ran as who scheduled */
    }
    assert_int_equal(mroce_sim_ev_count_lp0(g.l), 1);
    assert_int_equal(mroce_sim_ev_lp(g.l), 0); /* run kept the context */
    mroce_sim_ev_destroy(g.l);
}

/* at_to: the key is the scheduler's, the handler runs as run_lp; a key
 * taken and scheduled later with at_key takes the place ev_at would. */
static void test_run_as_and_keys(void **state)
{
    (void)state;
    struct tlog g = {.l = list_with_lps(4)};
    mroce_sim_ev_set_lp(g.l, 1);
    assert_true(mroce_sim_ev_post_to(g.l, 5, rec, &g, 0, 3));
    uint64_t k = mroce_sim_ev_take_key(g.l); /* LP 1's second key */
    assert_int_equal(k >> MROCE_SIM_EV_SEQ_BITS, 1);
    assert_true(mroce_sim_ev_at(g.l, 5, rec, &g, 2) != 0);
    mroce_sim_ev_set_lp(g.l, 2);
    assert_true(mroce_sim_ev_at(g.l, 5, rec, &g, 3) != 0);
    assert_true(mroce_sim_ev_post_key(g.l, 5, rec, &g, 1, k, 2));
    assert_false(mroce_sim_ev_post_key(g.l, 5, rec, &g, 9, k, 7));
    mroce_sim_ev_run(g.l, MROCE_SIM_NEVER);
    assert_int_equal(g.n, 4);
    for (uint64_t i = 0; i < 4; i++)
        assert_int_equal(g.arg[i], i);
    const uint32_t lps[] = {3, 2, 1, 2};
    for (int i = 0; i < 4; i++)
        assert_int_equal(g.lp[i], lps[i]);
    assert_int_equal(mroce_sim_ev_lp(g.l), 2);
    mroce_sim_ev_destroy(g.l);
}

/* ---- One list versus two ---- */

#define T_LPS 9
#define T_LOOK 1000
#define T_END 200000
#define T_TRACE 20000

/* LP i's state: its generator and what it ran, in order. */
struct t_lp {
    struct mroce_sim_rng r;
    uint64_t acc; /* a value every event folds in: order matters */
    int n;
    uint64_t trace[T_TRACE];
};

struct t_msg {
    uint64_t t, key, arg;
    uint32_t to;
};

struct t_sys {
    struct t_lp lp[T_LPS];
    struct mroce_sim_evlist *ev[2];
    const int *part; /* owner of each LP; NULL: one list */
    bool global;     /* key everything by LP 0: a per-list counter */
    struct t_msg out[2][4096];
    int n_out[2];
};

static struct t_sys *sys_of(void *obj, uint32_t *lp);
static void t_ev(void *obj, uint64_t arg, uint64_t now);

/* Handlers find the system through a table of LP objects. */
struct t_obj {
    struct t_sys *s;
    uint32_t lp;
};
static struct t_obj t_objs[T_LPS];

static struct t_sys *sys_of(void *obj, uint32_t *lp)
{
    struct t_obj *o = obj;
    *lp = o->lp;
    return o->s;
}

static struct mroce_sim_evlist *t_list(struct t_sys *s, uint32_t lp)
{
    return s->ev[s->part ? s->part[lp] : 0];
}

/* An event of LP `me` (its list's context) for LP `to` at t. */
static void t_send(struct t_sys *s, uint32_t me, uint32_t to, uint64_t t,
                   uint64_t arg)
{
    struct mroce_sim_evlist *l = t_list(s, me);
    uint32_t ctx = mroce_sim_ev_set_lp(l, s->global ? 0 : me);
    if (!s->part || s->part[me] == s->part[to]) {
        assert_true(mroce_sim_ev_post_to(l, t, t_ev, &t_objs[to], arg, to));
    } else {
        int p = s->part[me];
        assert_true(s->n_out[p] < 4096);
        s->out[p][s->n_out[p]++] =
            (struct t_msg){t, mroce_sim_ev_take_key(l), arg, to};
    }
    mroce_sim_ev_set_lp(l, ctx);
}

static void t_ev(void *obj, uint64_t arg, uint64_t now)
{
    uint32_t me;
    struct t_sys *s = sys_of(obj, &me);
    struct t_lp *p = &s->lp[me];
    assert_int_equal(mroce_sim_ev_lp(t_list(s, me)), me);
    p->acc = mroce_sim_mix64(p->acc ^ arg ^ now);
    if (p->n < T_TRACE)
        p->trace[p->n++] = p->acc;
    if (now > T_END)
        return;
    uint64_t x = mroce_sim_rng_next(&p->r);
    if (x % 3 == 0) { /* to another LP, never sooner than the lookahead */
        uint32_t to = 1 + (uint32_t)((x >> 8) % (T_LPS - 1));
        t_send(s, me, to, now + T_LOOK + (x >> 16) % 3, p->acc ^ me);
    } else { /* local: often at the same time (ties), or a little later */
        t_send(s, me, me, now + (x % 4 == 0 ? 0 : x % 97), p->acc);
    }
}

static void t_start(struct t_sys *s)
{
    for (uint32_t i = 1; i < T_LPS; i++) {
        t_objs[i] = (struct t_obj){s, i};
        mroce_sim_rng_init(&s->lp[i].r, 100 + i);
        struct mroce_sim_evlist *l = t_list(s, i);
        mroce_sim_ev_set_lp(l, i);
        for (uint64_t k = 0; k < 3; k++) /* equal start times */
            assert_true(mroce_sim_ev_at(l, k / 2, t_ev, &t_objs[i], k));
        mroce_sim_ev_set_lp(l, 0);
    }
}

static struct t_sys *t_new(const int *part)
{
    struct t_sys *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    s->part = part;
    for (int i = 0; i < (part ? 2 : 1); i++)
        s->ev[i] = list_with_lps(T_LPS);
    return s;
}

/* Windowed run: each list runs [T, T + lookahead), then what crossed
 * is scheduled on the other side with its key. */
static void t_run_split(struct t_sys *s)
{
    for (;;) {
        uint64_t a = mroce_sim_ev_next_time(s->ev[0]);
        uint64_t b = mroce_sim_ev_next_time(s->ev[1]);
        uint64_t t = a < b ? a : b;
        if (t == MROCE_SIM_NEVER)
            break;
        for (int p = 0; p < 2; p++)
            mroce_sim_ev_run(s->ev[p], t + T_LOOK - 1);
        for (int p = 0; p < 2; p++) {
            for (int k = 0; k < s->n_out[p]; k++) {
                const struct t_msg *m = &s->out[p][k];
                assert_true(m->t >= t + T_LOOK);
                assert_true(mroce_sim_ev_post_key(s->ev[1 - p], m->t, t_ev,
                                                  &t_objs[m->to], m->arg,
                                                  m->key, m->to));
            }
            s->n_out[p] = 0;
        }
    }
}

static void test_split_runs_like_whole(void **state)
{
    (void)state;
    static const int part[T_LPS] = {0, 0, 1, 0, 1, 1, 0, 1, 0};
    struct t_sys *whole = t_new(NULL), *split = t_new(part);
    t_start(whole);
    mroce_sim_ev_run(whole->ev[0], MROCE_SIM_NEVER);
    t_start(split);
    t_run_split(split);
    uint64_t total = 0;
    for (int i = 1; i < T_LPS; i++) {
        assert_int_equal(whole->lp[i].n, split->lp[i].n);
        assert_memory_equal(whole->lp[i].trace, split->lp[i].trace,
                            sizeof(uint64_t) * (size_t)whole->lp[i].n);
        total += (uint64_t)whole->lp[i].n;
    }
    assert_int_equal(mroce_sim_ev_count(whole->ev[0]),
                     mroce_sim_ev_count(split->ev[0]) +
                         mroce_sim_ev_count(split->ev[1]));
    print_message("[ lp       ] %llu events over %d LPs: one list and two "
                  "in windows ran them identically\n",
                  (unsigned long long)total, T_LPS - 1);
    for (int i = 0; i < 2; i++) {
        mroce_sim_ev_destroy(whole->ev[i]);
        mroce_sim_ev_destroy(split->ev[i]);
    }
    free(whole);
    free(split);
}

/* The checker above must be able to fail: keyed by one counter per list
 * (insertion order, as before LPs) the split run differs. */
static void test_split_differs_with_global_order(void **state)
{
    (void)state;
    static const int part[T_LPS] = {0, 0, 1, 0, 1, 1, 0, 1, 0};
    struct t_sys *whole = t_new(NULL), *split = t_new(part);
    whole->global = split->global = true;
    t_start(whole);
    mroce_sim_ev_run(whole->ev[0], MROCE_SIM_NEVER);
    t_start(split);
    t_run_split(split);
    bool same = true;
    for (int i = 1; i < T_LPS && same; i++)
        same = whole->lp[i].n == split->lp[i].n &&
               memcmp(whole->lp[i].trace, split->lp[i].trace,
                      sizeof(uint64_t) * (size_t)whole->lp[i].n) == 0;
    assert_false(same);
    for (int i = 0; i < 2; i++) {
        mroce_sim_ev_destroy(whole->ev[i]);
        mroce_sim_ev_destroy(split->ev[i]);
    }
    free(whole);
    free(split);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ties_by_lp),
        cmocka_unit_test(test_run_as_and_keys),
        cmocka_unit_test(test_split_runs_like_whole),
        cmocka_unit_test(test_split_differs_with_global_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
