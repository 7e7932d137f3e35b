/* Spec v0.2 contradictions in congestion control, each checked against
 * the engine: R-CC-4's first burst is the connection's initial window
 * whatever the number of paths (it was broken at 256 paths: one packet per
 * path is 256 packets against a 128-packet window), and the defaults that
 * Appendix B and Appendix A (D25) state are the ones the engine uses. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "engine/cc.h"
#include "support/peer.h"

#define MTU 256u
#define FULL_PKT (MROCE_MAX_HDR_LEN + MTU + MROCE_ICRC_LEN)

static int teardown(void **state)
{
    (void)state;
    peer_free_all();
    return 0;
}

static struct peer *peer_paths(uint16_t n_paths)
{
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.mtu = MTU;
    cfg.attr.n_paths = n_paths;
    cfg.attr.dsn_window = 1024;
    return peer_new(&cfg);
}

/* Posts one WRITE of npkts full packets and returns how many data packets
 * the engine sends before any ACK; *first gets the first one's MTH. */
static int first_burst(struct peer *p, uint32_t npkts, struct mroce_hdr *first)
{
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, npkts * MTU), 0);
    int n = 0;
    while (peer_drain(p, NULL, 0) > 0) {
        const struct peer_out *o = peer_find(p, MROCE_OP_WRITE, 0);
        if (o && !n && first)
            *first = o->h;
        n += peer_count(p, MROCE_OP_WRITE);
    }
    return n;
}

/* R-CC-4: 256 paths, default init_cwnd_pkts 128: at most 128 packets
 * before the first ACK; the ACK opens the window. */
static void test_first_burst_256_paths(void **state)
{
    (void)state;
    struct peer *p = peer_paths(256);
    struct mroce_hdr h;
    assert_int_equal(first_burst(p, 200, &h), 128);
    assert_int_equal(peer_ack(p, h.path, h.psn, h.dsn + 1, &h.psn, 1), 0);
    assert_true(peer_drain(p, NULL, 0) > 0);
    assert_true(peer_count(p, MROCE_OP_WRITE) > 0);
}

/* R-CC-4 at the default 16 paths: the per-path split (8 packets each)
 * already gives exactly the connection's 128 packets; unchanged. */
static void test_first_burst_16_paths(void **state)
{
    (void)state;
    struct peer *p = peer_paths(16);
    assert_int_equal(first_burst(p, 200, NULL), 128);
}

/* R-CC-4 in packets: 3 paths get 42 full-size packets' bytes each, which
 * hold 44 WRITE packets (48-byte headers, not the 68 a window counts). */
static void test_first_burst_3_paths(void **state)
{
    (void)state;
    struct peer *p = peer_paths(3);
    assert_int_equal(first_burst(p, 200, NULL), 128);
}

/* Appendix B: the initial path window is init_cwnd_pkts / n_paths full
 * packets (8 at 16 paths), not 16 mtu. */
static void test_initial_path_window(void **state)
{
    (void)state;
    struct peer *p = peer_paths(16);
    for (uint16_t i = 0; i < 16; i++)
        assert_int_equal(peer_path(p, i).cwnd_bytes, 8 * FULL_PKT);
}

/* D25 and Appendix B: the hint caps the connection window at k x hint x
 * min RTT with k = 2, or 1.5 after a CE mark (R-CC-3), not 1. */
static void test_hint_cap_factor(void **state)
{
    (void)state;
    const struct cc_ops *cc = &mroce_cc_aimd;
    struct cc_params prm = {1000, 16000, 256000, 1000000, 0};
    struct cc_conn conn;
    struct cc_path path;
    cc->init(&conn, &path, 1, &prm);
    uint64_t t = 1000000, rtt = 100000;     /* 100 us */
    cc->on_rate_hint(&conn, 10000, rtt, t); /* BDP 125 kB */
    assert_int_equal(conn.cwnd, 2 * 125000);
    cc->on_ack(&conn, &path, 1000, true, 0, t);
    cc->on_rate_hint(&conn, 10000, rtt, t);
    assert_int_equal(conn.cwnd, 3 * 125000 / 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_first_burst_256_paths, teardown),
        cmocka_unit_test_teardown(test_first_burst_16_paths, teardown),
        cmocka_unit_test_teardown(test_first_burst_3_paths, teardown),
        cmocka_unit_test_teardown(test_initial_path_window, teardown),
        cmocka_unit_test(test_hint_cap_factor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
