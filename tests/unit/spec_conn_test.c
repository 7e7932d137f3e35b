/* Spec v0.2 contradictions in connection teardown and state, checked
 * against the engine: R-CONN-8's CLOSE wait doubles and is capped at
 * max_rto (the spec's mroce default said it was not capped), and the
 * counter drop_state counts every packet type a state does not take (its
 * comment in mroce.h said: data only). */
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

/* min_rto 100 us (initial RTO 5 x = 500 us), max_rto 1 ms, retry_cnt 3:
 * CLOSEs at 0, 500, 1500, 2500 us (the third wait, 2 ms, is capped at
 * 1 ms), CLOSED 1 ms after the fourth, with no CLOSE_ACK. */
static void test_close_wait_capped(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.attr.min_rto_ns = 100 * US;
    cfg.attr.max_rto_ns = 1000 * US;
    cfg.attr.retry_cnt = 3;
    struct peer *p = peer_new(&cfg);
    assert_int_equal(mroce_conn_disconnect(p->conn), 0);
    uint64_t t0 = p->now, at[8];
    int n = 0;
    peer_drain(p, NULL, 0);
    assert_int_equal(peer_count(p, MROCE_OP_CLOSE), 1);
    at[n++] = p->now;
    while (mroce_conn_state(p->conn) == MROCE_CONN_CLOSING && n < 8) {
        if (!peer_fire(p))
            break;
        peer_drain(p, NULL, 0);
        if (peer_count(p, MROCE_OP_CLOSE))
            at[n++] = p->now;
    }
    assert_int_equal(n, 4); /* 1 + retry_cnt */
    assert_int_equal(at[1] - at[0], 500 * US);
    assert_int_equal(at[2] - at[1], 1000 * US);
    assert_int_equal(at[3] - at[2], 1000 * US); /* 2 ms, capped */
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CLOSED);
    assert_int_equal(p->now - t0, 3500 * US); /* the last wait, capped */
}

/* drop_state: an ACK and a NACK in CLOSING are dropped and counted, and so
 * is a data packet (which also gets NACK CONN_CLOSED, R-CONN-11). */
static void test_drop_state_counts_control(void **state)
{
    (void)state;
    struct peer *p = peer_new(NULL);
    assert_int_equal(mroce_conn_disconnect(p->conn), 0);
    peer_drain(p, NULL, 0);
    uint64_t before = peer_cnt(p).drop_state;
    uint32_t psn = 0;
    assert_int_equal(peer_ack(p, 0, psn, 0, &psn, 1), 0);
    assert_int_equal(peer_cnt(p).drop_state, before + 1);
    struct mroce_hdr d = peer_hdr(p, MROCE_OP_WRITE, 0, 0);
    assert_int_equal(peer_nak(p, &d, MROCE_NAK_REMOTE_ACCESS, 0), 0);
    assert_int_equal(peer_cnt(p).drop_state, before + 2);
    uint8_t b = 1;
    assert_int_equal(peer_write(p, 1, 0, 0, 0, 0, p->va, p->rkey, 0, 1, &b, 1),
                     0);
    assert_int_equal(peer_cnt(p).drop_state, before + 3);
    peer_drain(p, NULL, 0);
    const struct peer_out *n = peer_find(p, MROCE_OP_NACK, 0);
    assert_non_null(n);
    assert_int_equal(n->h.nak_code, MROCE_NAK_CONN_CLOSED);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CLOSING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_close_wait_capped, teardown),
        cmocka_unit_test_teardown(test_drop_state_counts_control, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
