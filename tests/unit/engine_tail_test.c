/* The last data of a connection goes to paths that deliver it in time
 * (R-TAIL-100): when the bytes still to send drain at the granted rate in
 * less than the RTT floor, a path whose latest RTT sample exceeds the
 * fastest path's (with room) by more than that drain time carries none
 * of them, so that the message does not end on a queue. */
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

/* An ACK of PSN psn on path, alone, with the rate hint mbps. */
static void ack_one(struct peer *p, uint16_t path, uint32_t psn,
                    uint32_t dsn_cum, uint32_t mbps, uint16_t rx)
{
    struct mroce_hdr a = peer_hdr(p, MROCE_OP_ACK, path, 0);
    a.sack_high = psn;
    a.dsn_cum = dsn_cum;
    a.echo_ts = peer_sent_ts(p, path, psn);
    a.rate_mbps = mbps;
    a.rx_count = rx;
    mroce_sack_set(a.sack, 0);
    assert_int_equal(peer_feed(p, &a, NULL, 0), 0);
}

/* One message of four packets, one per path (asserted), each path's
 * packet acknowledged us[path] microseconds after it left, alone, the
 * last ACK completing the message; every ACK carries the hint mbps. */
static void round_trip(struct peer *p, uint64_t wr_id, const uint64_t us[4],
                       uint32_t mbps)
{
    peer_pattern(p->mem, 4 * PEER_MTU, (uint32_t)wr_id);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, wr_id, 0, 4 * PEER_MTU),
                     0);
    assert_int_equal(peer_drain(p, NULL, 0), 4);
    uint32_t psn[4], dsn0 = p->out[0].h.dsn, seen = 0;
    for (int k = 0; k < 4; k++) {
        uint16_t path = p->out[k].h.path;
        assert_true(path < 4 && !(seen & 1u << path));
        seen |= 1u << path;
        psn[path] = p->out[k].h.psn;
    }
    uint64_t t0 = p->now;
    uint16_t last = 0; /* the latest ACK, which carries dsn_cum */
    for (uint16_t k = 1; k < 4; k++)
        last = us[k] >= us[last] ? k : last;
    for (uint64_t t = 1; t <= us[last]; t++) {
        peer_advance(p, t0 + t * US - p->now);
        for (uint16_t k = 0; k < 4; k++)
            if (us[k] == t && k != last)
                ack_one(p, k, psn[k], dsn0, mbps, (uint16_t)wr_id);
    }
    ack_one(p, last, psn[last], dsn0 + 4, mbps, (uint16_t)wr_id);
    struct mroce_wc wc[2];
    assert_int_equal(peer_poll(p->scq, wc, 2), 1);
    assert_int_equal(wc[0].status, MROCE_WC_SUCCESS);
}

/* Packets of the next message of four on path `path`. */
static int next_on(struct peer *p, uint64_t wr_id, uint16_t path)
{
    peer_pattern(p->mem, 4 * PEER_MTU, (uint32_t)wr_id);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, wr_id, 0, 4 * PEER_MTU),
                     0);
    assert_int_equal(peer_drain(p, NULL, 0), 4);
    int n = 0;
    for (int k = 0; k < 4; k++) {
        assert_int_equal(p->out[k].h.opcode, MROCE_OP_WRITE);
        n += p->out[k].h.path == path;
    }
    return n;
}

static const uint64_t slow1[4] = {10, 18, 10, 10}; /* path 1 queued */
static const uint64_t even[4] = {10, 10, 10, 10};

/* At 100 Gb/s the next message's 4 KiB drain in 0.33 us, far below the
 * 10 us floor: none of its packets takes path 1 (18 us), though path 1
 * is idle and R-PATH-13 alone gives it one (the next tests). */
static void test_tail_avoids_slow_path(void **state)
{
    (void)state;
    struct peer *p = peer_new(NULL);
    round_trip(p, 1, slow1, 100000);
    assert_int_equal(peer_path(p, 1).srtt_ns, 18 * US);
    assert_int_equal(next_on(p, 2, 1), 0);
}

/* At 1 Gb/s the same 4 KiB take 33 us to drain, more than the 10 us
 * floor: the rule does not apply and path 1, idle and still "fast" for
 * R-PATH-13 (below twice the floor), takes its turn. */
static void test_slow_path_in_time_is_used(void **state)
{
    (void)state;
    struct peer *p = peer_new(NULL);
    round_trip(p, 1, slow1, 1000);
    assert_int_equal(next_on(p, 2, 1), 1);
}

/* Without a rate hint the drain time is unknown: R-PATH-13 alone. */
static void test_no_hint_no_rule(void **state)
{
    (void)state;
    struct peer *p = peer_new(NULL);
    round_trip(p, 1, slow1, 0);
    assert_int_equal(next_on(p, 2, 1), 1);
}

/* The latest sample counts, not the SRTT: path 1, 18 us behind a queue
 * and then back to 10 us, keeps an SRTT of 17 us but takes its turn in
 * the next message's tail. */
static void test_latest_sample_counts(void **state)
{
    (void)state;
    struct peer *p = peer_new(NULL);
    round_trip(p, 1, slow1, 1000);
    round_trip(p, 2, even, 100000);
    assert_int_equal(peer_path(p, 1).srtt_ns, 17 * US);
    assert_int_equal(next_on(p, 3, 1), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_tail_avoids_slow_path, teardown),
        cmocka_unit_test_teardown(test_slow_path_in_time_is_used, teardown),
        cmocka_unit_test_teardown(test_no_hint_no_rule, teardown),
        cmocka_unit_test_teardown(test_latest_sample_counts, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
