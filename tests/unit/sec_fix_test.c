/* Correctness fixes of issue 15, each from the state that broke it:
 *
 * - message numbers wrap at any queue depth: with sq_depth 3 (not a
 *   power of two) the 32-bit MSN used to index its rings modulo 3, which
 *   jumps at 2^32 (2^32 mod 3 = 1): MSNs 0xFFFFFFFF and 0 shared a slot,
 *   so one request vanished and another completed twice, and an inbound
 *   message collided with the one before it. The sequence numbers start
 *   just before the wrap (mroce_conn_set_init_seq, R-CONN-5).
 * - a source port listed twice in mroce_ctx_attr.src_ports is refused
 *   (EINVAL): it used to make mroce_conn_connect search forever for a
 *   port no other path uses.
 * - a re-path moves the path to a port it does not use when a spare port
 *   exists (R-PATH-5): it used to draw among its own port too, so a path
 *   re-pathed off a dead route stayed on it with probability 1/(spares+1).
 * - every copy of a CLOSE is answered (R-CONN-9): copies that arrived in
 *   one receive burst used to share one CLOSE_ACK (a flag, not a count).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "support/peer.h"

#define MSG (2 * PEER_MTU) /* two packets per message */
#define DEPTH 3            /* not a power of two */

static int teardown(void **state)
{
    (void)state;
    peer_free_all();
    return 0;
}

static struct peer *wrap_peer(void)
{
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.attr.sq_depth = DEPTH;
    cfg.attr.rq_depth = DEPTH;
    cfg.fixed_init = true; /* the engine's MSNs: 2 before the wrap */
    cfg.init_psn = 0xFFFFFFF0u;
    cfg.init_dsn = 0xFFFFFFF8u;
    cfg.init_msn = 0xFFFFFFFEu;
    cfg.remote.init_msn = 0xFFFFFFFEu; /* the peer's too */
    cfg.remote.init_dsn = 0xFFFFFFF0u;
    cfg.remote.init_psn = 0xFFFFFF00u;
    return peer_new(&cfg);
}

/* The engine sends: 4 rounds of DEPTH two-packet WRITEs, their MSNs
 * crossing 0; each WR completes exactly once, with SUCCESS, in order. */
static void test_send_msn_wrap(void **state)
{
    (void)state;
    struct peer *p = wrap_peer();
    uint64_t next_wc = 1, wr = 1;
    for (int round = 0; round < 4; round++) {
        for (int k = 0; k < DEPTH; k++, wr++)
            assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, wr, 0, MSG), 0);
        assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, wr, 0, MSG),
                         MROCE_EAGAIN); /* DEPTH outstanding at most */
        assert_int_equal(peer_drain(p, NULL, 0), 2 * DEPTH);
        for (int i = 0; i < 2 * DEPTH; i++)
            assert_int_equal(p->out[i].h.msn,
                             peer_tmsn(p, (uint32_t)(round * DEPTH + i / 2)));
        peer_ack_all(p);
        struct mroce_wc wc[2 * DEPTH];
        int n = peer_poll(p->scq, wc, 2 * DEPTH);
        assert_int_equal(n, DEPTH);
        for (int i = 0; i < n; i++) {
            assert_int_equal(wc[i].wr_id, next_wc++);
            assert_int_equal(wc[i].status, MROCE_WC_SUCCESS);
            assert_int_equal(wc[i].byte_len, MSG);
        }
    }
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CONNECTED);
}

/* The peer sends: 4 rounds of DEPTH two-packet SENDs whose MSNs cross 0,
 * first packets of all, then second packets, so that DEPTH messages are
 * open at once; each lands in its own receive, completing in order. */
static void test_recv_msn_wrap(void **state)
{
    (void)state;
    struct peer *p = wrap_peer();
    uint8_t data[DEPTH][MSG];
    uint32_t ssn = 0;
    uint64_t next_wc = 1;
    for (int round = 0; round < 4; round++) {
        for (int k = 0; k < DEPTH; k++) {
            peer_post_recv(p, 0, next_wc + (uint64_t)k, (uint32_t)k * MSG, MSG);
            peer_pattern(data[k], MSG, (uint32_t)(round * DEPTH + k));
        }
        for (uint32_t pkt = 0; pkt < 2; pkt++)
            for (uint32_t k = 0; k < DEPTH; k++)
                assert_int_equal(peer_send(p, 0, p->psn[0]++, p->dsn++, 0,
                                           p->msn[0] + k, ssn + k,
                                           pkt * PEER_MTU, MSG,
                                           data[k] + pkt * PEER_MTU, PEER_MTU),
                                 0);
        p->msn[0] += DEPTH;
        ssn += DEPTH;
        struct mroce_wc wc[2 * DEPTH];
        int n = peer_poll(p->rcq, wc, 2 * DEPTH);
        assert_int_equal(n, DEPTH);
        for (int i = 0; i < n; i++) {
            assert_int_equal(wc[i].wr_id, next_wc++);
            assert_int_equal(wc[i].status, MROCE_WC_SUCCESS);
            assert_int_equal(wc[i].byte_len, MSG);
            assert_memory_equal(p->mem + i * MSG, data[i], MSG);
        }
        assert_int_equal(peer_count(p, MROCE_OP_NACK), 0);
        peer_drain(p, NULL, 0);
        assert_int_equal(peer_count(p, MROCE_OP_NACK), 0);
    }
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CONNECTED);
    assert_int_equal(peer_cnt(p).drop_bad_msg, 0);
}

/* R-ENC-3: source ports must be distinct; a duplicate is refused before
 * any connection can search forever for an unused one. */
static void test_src_ports_duplicate(void **state)
{
    (void)state;
    const uint16_t dup[3] = {50000, 50001, 50000};
    struct mroce_ctx_attr a = {.deterministic = 1, .seed = 1};
    a.addr.family = MROCE_AF_INET;
    a.src_ports = dup;
    a.n_src_ports = 3;
    struct mroce_ctx *ctx = NULL;
    assert_int_equal(mroce_ctx_open(&a, &ctx), MROCE_EINVAL);
    a.n_src_ports = 2; /* the first two are distinct */
    assert_int_equal(mroce_ctx_open(&a, &ctx), 0);
    mroce_ctx_close(ctx);
}

static struct peer *ports_peer(const uint16_t *ports, uint32_t n)
{
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.src_ports = ports;
    cfg.n_src_ports = n;
    return peer_new(&cfg);
}

/* The ports of the connection's paths: distinct, from the set. */
static void ports_check(struct peer *p, const uint16_t *ports, uint32_t n,
                        uint16_t *now)
{
    for (uint16_t i = 0; i < PEER_PATHS; i++) {
        struct mroce_path_info info;
        assert_int_equal(mroce_path_query(p->conn, i, &info), 0);
        now[i] = info.src_port;
        bool listed = false;
        for (uint32_t k = 0; k < n; k++)
            listed |= ports[k] == now[i];
        assert_true(listed);
        for (uint16_t j = 0; j < i; j++)
            assert_int_not_equal(now[j], now[i]);
    }
}

/* One spare port: every re-path of path 0 takes it, the old one is freed. */
static void test_repath_moves(void **state)
{
    (void)state;
    const uint16_t ports[PEER_PATHS + 1] = {50000, 50001, 50002, 50003, 50004};
    struct peer *p = ports_peer(ports, PEER_PATHS + 1);
    uint16_t before[PEER_PATHS], after[PEER_PATHS];
    ports_check(p, ports, PEER_PATHS + 1, before);
    for (int i = 0; i < 64; i++) {
        assert_int_equal(mroce_path_repath(p->conn, 0), 0);
        ports_check(p, ports, PEER_PATHS + 1, after);
        assert_int_not_equal(after[0], before[0]);
        assert_memory_equal(after + 1, before + 1, sizeof(after) - 2);
        before[0] = after[0];
    }
}

/* No spare port: a re-path keeps the path's port (and returns). */
static void test_repath_no_spare(void **state)
{
    (void)state;
    const uint16_t ports[PEER_PATHS] = {50000, 50001, 50002, 50003};
    struct peer *p = ports_peer(ports, PEER_PATHS);
    uint16_t before[PEER_PATHS], after[PEER_PATHS];
    ports_check(p, ports, PEER_PATHS, before);
    assert_int_equal(mroce_path_repath(p->conn, 2), 0);
    ports_check(p, ports, PEER_PATHS, after);
    assert_memory_equal(after, before, sizeof(after));
}

/* Three CLOSE copies, fed before the engine sends: three CLOSE_ACKs, each
 * naming the engine's next DSN (R-VAL-5); a fourth copy later, a fourth. */
static void test_close_copies(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    struct peer *p = peer_new(&cfg);
    struct mroce_hdr c = peer_hdr(p, MROCE_OP_CLOSE, 0, p->dsn);
    for (uint16_t i = 0; i < 3; i++) {
        c.path = i;
        assert_int_equal(peer_feed(p, &c, NULL, 0), 0);
    }
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CLOSED);
    assert_int_equal(peer_drain(p, NULL, 0), 3);
    assert_int_equal(peer_count(p, MROCE_OP_CLOSE_ACK), 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(peer_find(p, MROCE_OP_CLOSE_ACK, i)->h.psn,
                         p->local.init_dsn);
    assert_int_equal(peer_feed(p, &c, NULL, 0), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_int_equal(peer_count(p, MROCE_OP_CLOSE_ACK), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_send_msn_wrap, teardown),
        cmocka_unit_test_teardown(test_recv_msn_wrap, teardown),
        cmocka_unit_test_teardown(test_src_ports_duplicate, teardown),
        cmocka_unit_test_teardown(test_repath_moves, teardown),
        cmocka_unit_test_teardown(test_repath_no_spare, teardown),
        cmocka_unit_test_teardown(test_close_copies, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
