/* R-LOSS-8's per-plane order of paths (src/engine/rack.c) against a
 * model: after every data send, resolution, probe and probe answer, each
 * plane's list from its head is exactly its paths that have data
 * unresolved and no probe pending, oldest newest-send first, with every
 * link consistent both ways. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "engine/eng.h"

#define N_PATHS 13
#define N_PLANES 3
#define RK_NONE UINT16_MAX

struct fixture {
    struct mroce_ctx *ctx;
    struct mroce_conn c;
    struct path_tx ptx[N_PATHS];
    uint64_t clock, rng;
};

static uint64_t rnd(struct fixture *f)
{
    f->rng = f->rng * 6364136223846793005ull + 1442695040888963407ull;
    return f->rng >> 33;
}

static void fixture_init(struct fixture *f, uint32_t planes)
{
    memset(f, 0, sizeof(*f));
    struct mroce_addr addrs[N_PLANES] = {0};
    struct mroce_ctx_attr a = {.deterministic = 1,
                               .seed = 1,
                               .n_planes = planes,
                               .plane_addrs = addrs};
    for (uint32_t k = 0; k < N_PLANES; k++) {
        addrs[k].family = MROCE_AF_INET;
        addrs[k].ip[3] = (uint8_t)(k + 1);
    }
    a.addr = addrs[0];
    assert_int_equal(mroce_ctx_open(&a, &f->ctx), 0);
    assert_int_equal(f->ctx->dev.n_planes, planes);
    f->c.ctx = f->ctx;
    f->c.ptx = f->ptx;
    f->c.n_paths = f->c.n_alloc_paths = N_PATHS;
    f->c.rack = calloc(planes, sizeof(*f->c.rack)); /* no RTT: rack_min
                                                        stays ENG_NEVER */
    assert_non_null(f->c.rack);
    for (uint16_t p = 0; p < N_PATHS; p++)
        f->ptx[p].plane = (uint8_t)(p % planes);
    eng_rack_init(&f->c);
    f->rng = 12345;
}

static void fixture_fini(struct fixture *f)
{
    free(f->c.rack);
    mroce_ctx_close(f->ctx);
}

/* Whether the model puts p in its plane's order. */
static bool model_in(const struct path_tx *pt)
{
    return pt->inflight && !pt->tlp_done;
}

/* Each plane's list against the model. */
static void check_order(struct fixture *f)
{
    for (uint32_t k = 0; k < f->ctx->dev.n_planes; k++) {
        uint16_t want[N_PATHS];
        uint32_t n = 0;
        for (uint16_t p = 0; p < N_PATHS; p++)
            if (f->ptx[p].plane == k && model_in(&f->ptx[p]))
                want[n++] = p;
        for (uint32_t i = 1; i < n; i++) /* by newest send time */
            for (uint32_t j = i; j > 0 && f->ptx[want[j - 1]].last_send >
                                              f->ptx[want[j]].last_send;
                 j--) {
                uint16_t t = want[j];
                want[j] = want[j - 1];
                want[j - 1] = t;
            }
        uint16_t head = f->c.rack[k].head;
        if (!n) {
            assert_int_equal(head, RK_NONE);
            continue;
        }
        uint16_t q = head;
        for (uint32_t i = 0; i < n; i++) {
            assert_int_equal(q, want[i]);
            assert_true(f->ptx[q].rk_in);
            uint16_t next = f->ptx[q].rk_next;
            assert_int_equal(f->ptx[next].rk_prev, q);
            q = next;
        }
        assert_int_equal(q, head); /* the newest leads back to the oldest */
    }
    for (uint16_t p = 0; p < N_PATHS; p++)
        assert_int_equal(f->ptx[p].rk_in, model_in(&f->ptx[p]));
}

/* One random event on a random path, as the engine makes them: a data
 * send (eng_rack_sent), its data resolved, a tail-loss probe sent, or
 * the probe answered with data still out (eng_rack_check). */
static void step(struct fixture *f)
{
    uint16_t p = (uint16_t)(rnd(f) % N_PATHS);
    struct path_tx *pt = &f->ptx[p];
    switch (rnd(f) % 4) {
    case 0:
    case 1: /* sends are the common event */
        pt->last_send = ++f->clock;
        pt->inflight += 100;
        eng_rack_sent(&f->c, p);
        break;
    case 2:
        pt->inflight = 0;
        eng_rack_check(&f->c, p);
        break;
    default:
        pt->tlp_done = !pt->tlp_done;
        eng_rack_check(&f->c, p);
        break;
    }
}

static void run(uint32_t planes)
{
    struct fixture f;
    fixture_init(&f, planes);
    for (int i = 0; i < 20000; i++) {
        step(&f);
        check_order(&f);
    }
    fixture_fini(&f);
}

static void test_order_one_plane(void **state)
{
    (void)state;
    run(1);
}

static void test_order_planes(void **state)
{
    (void)state;
    run(N_PLANES);
}

/* Round-robin sending, the usual case: each send moves the oldest path
 * to the newest end, so the head walks round the paths in order. */
static void test_round_robin(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, 1);
    for (int i = 0; i < 5 * N_PATHS; i++) {
        uint16_t p = (uint16_t)(i % N_PATHS);
        f.ptx[p].last_send = ++f.clock;
        f.ptx[p].inflight = 100;
        eng_rack_sent(&f.c, p);
        check_order(&f);
        if (i >= N_PATHS - 1)
            assert_int_equal(f.c.rack[0].head, (i + 1) % N_PATHS);
    }
    fixture_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_one_plane),
        cmocka_unit_test(test_order_planes),
        cmocka_unit_test(test_round_robin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
