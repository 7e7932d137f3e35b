/* Runs of packets on one path (R-PATH-17 on top of R-PATH-13): with
 * spray_run N the round-robin keeps up to N consecutive data packets on
 * one path while that path stays the best-ranked one with room; with 1
 * (the default) every packet goes to the next path. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "support/peer.h"

#define US 1000ull

static int teardown(void **state)
{
    (void)state;
    peer_free_all();
    return 0;
}

static struct peer *peer_run(uint32_t spray_run, uint32_t init_cwnd_pkts)
{
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.spray_run = spray_run;
    cfg.attr.init_cwnd_pkts = init_cwnd_pkts;
    return peer_new(&cfg);
}

static void post_write(struct peer *p, uint64_t wr_id, uint32_t pkts)
{
    peer_pattern(p->mem, pkts * PEER_MTU, (uint32_t)wr_id);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, wr_id, 0, pkts * PEER_MTU),
                     0);
}

/* Every packet of the last drain is data with DSN first + k, on path
 * path_of(k) with that path's PSNs in order from the first, from its
 * port. */
static void assert_paths(const struct peer *p, const uint16_t *paths, int n)
{
    assert_int_equal(p->n_out, n);
    uint32_t next[PEER_PATHS];
    for (int k = 0; k < PEER_PATHS; k++)
        next[k] = peer_tpsn(p, 0);
    for (int k = 0; k < n; k++) {
        const struct peer_out *o = &p->out[k];
        assert_int_equal(o->h.opcode, MROCE_OP_WRITE);
        assert_int_equal(o->h.path, paths[k]);
        assert_int_equal(o->h.psn, next[o->h.path]++);
        assert_int_equal(o->meta.src_port, peer_path(p, o->h.path).src_port);
    }
}

/* spray_run 4: 16 packets go four to a path, paths in turn. */
static void test_run_of_four(void **state)
{
    (void)state;
    struct peer *p = peer_run(4, 0);
    post_write(p, 1, 16);
    assert_int_equal(peer_drain(p, NULL, 0), 16);
    uint16_t want[16];
    for (int k = 0; k < 16; k++)
        want[k] = (uint16_t)(k / 4);
    assert_paths(p, want, 16);
    for (int k = 0; k < 16; k++)
        assert_int_equal(p->out[k].h.dsn, peer_tdsn(p, (uint32_t)k));
    peer_ack_all(p);
    struct mroce_wc wc[2];
    assert_int_equal(peer_poll(p->scq, wc, 2), 1);
    assert_int_equal(wc[0].status, MROCE_WC_SUCCESS);
}

/* spray_run 1 and 0 (the default): a different path for every packet,
 * exactly R-PATH-13's round-robin. */
static void test_run_of_one(void **state)
{
    (void)state;
    for (uint32_t run = 0; run <= 1; run++) {
        struct peer *p = peer_run(run, 0);
        post_write(p, 1, 10);
        assert_int_equal(peer_drain(p, NULL, 0), 10);
        uint16_t want[10];
        for (int k = 0; k < 10; k++)
            want[k] = (uint16_t)(k % 4);
        assert_paths(p, want, 10);
        peer_free(p);
    }
}

/* A run ends early when its path has no room: with a window of two
 * packets per path (8 split over 4) a run of 4 stops at 2 and the next
 * path takes over; once a path's packets are acknowledged it has room
 * again and takes the next packet. */
static void test_run_ends_without_room(void **state)
{
    (void)state;
    struct peer *p = peer_run(4, 8);
    post_write(p, 1, 12);
    assert_int_equal(peer_drain(p, NULL, 0), 8);
    const uint16_t want[8] = {0, 0, 1, 1, 2, 2, 3, 3};
    assert_paths(p, want, 8);
    peer_advance(p, 10 * US);
    assert_int_equal(
        peer_ack_range(p, 2, peer_tpsn(p, 0), peer_tpsn(p, 1), peer_tdsn(p, 0)),
        0);
    assert_true(peer_drain(p, NULL, 0) >= 1);
    for (int k = 0; k < p->n_out; k++)
        assert_int_equal(p->out[k].h.path, 2);
}

/* The run's own packets do not count against its path (it is ranked as
 * when the run began), but a path of a better class ends the run: path 0,
 * idle again and with an RTT sample, beats the open run on path 1, which
 * has none. */
static void test_run_yields_to_better_class(void **state)
{
    (void)state;
    struct peer *p = peer_run(4, 0);
    post_write(p, 1, 6);
    assert_int_equal(peer_drain(p, NULL, 0), 6);
    const uint16_t want[6] = {0, 0, 0, 0, 1, 1};
    assert_paths(p, want, 6);
    peer_advance(p, 10 * US);
    assert_int_equal(
        peer_ack_range(p, 0, peer_tpsn(p, 0), peer_tpsn(p, 3), peer_tdsn(p, 4)),
        0);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    post_write(p, 2, 2);
    assert_int_equal(peer_drain(p, NULL, 0), 2);
    assert_int_equal(p->out[0].h.path, 0);
    assert_int_equal(p->out[1].h.path, 0); /* its new run */
}

/* A retransmission does not continue a run on the path it was lost on
 * (R-PATH-13): DSN 0, lost on path 0 in the middle of path 0's run, goes
 * out on another path. */
static void test_retx_leaves_run_path(void **state)
{
    (void)state;
    struct peer *p = peer_run(8, 0);
    post_write(p, 1, 4);
    assert_int_equal(peer_drain(p, NULL, 0), 4);
    const uint16_t want[4] = {0, 0, 0, 0};
    assert_paths(p, want, 4);
    peer_advance(p, 10 * US);
    assert_int_equal(
        peer_ack_range(p, 0, peer_tpsn(p, 1), peer_tpsn(p, 3), peer_tdsn(p, 0)),
        0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    const struct peer_out *o = &p->out[0];
    assert_int_equal(o->h.dsn, peer_tdsn(p, 0));
    assert_true(o->h.flags & MROCE_HF_RETX);
    assert_int_not_equal(o->h.path, 0);
}

/* spray_run above MROCE_MAX_SPRAY_RUN is refused. */
static void test_run_limit(void **state)
{
    (void)state;
    struct mroce_ctx_attr a = {
        .deterministic = 1, .seed = 1, .spray_run = MROCE_MAX_SPRAY_RUN};
    a.addr.family = MROCE_AF_INET;
    struct mroce_ctx *ctx;
    assert_int_equal(mroce_ctx_open(&a, &ctx), 0);
    mroce_ctx_close(ctx);
    a.spray_run++;
    assert_int_equal(mroce_ctx_open(&a, &ctx), MROCE_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_run_of_four, teardown),
        cmocka_unit_test_teardown(test_run_of_one, teardown),
        cmocka_unit_test_teardown(test_run_ends_without_room, teardown),
        cmocka_unit_test_teardown(test_run_yields_to_better_class, teardown),
        cmocka_unit_test_teardown(test_retx_leaves_run_path, teardown),
        cmocka_unit_test_teardown(test_run_limit, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
