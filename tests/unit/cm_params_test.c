/* What the engine does with the parameters the CM carries (R-CONN-3,
 * R-CONN-4, R-ENC-10, R-RX-2): mroce_conn_get_params announces one address
 * per plane and the timing values; mroce_conn_connect refuses announced
 * values out of range, a plane count other than ours and a delayed-ACK
 * bound not below our minimum RTO; packets are accepted only from the
 * peer's address of the plane they belong to (an ACK or NACK from any of
 * its planes); packets leave from our plane's address to the peer's. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "support/peer.h"

static const struct mroce_addr a_peer0 = {MROCE_AF_INET, {10, 0, 0, 2}};
static const struct mroce_addr a_peer1 = {MROCE_AF_INET, {10, 0, 1, 2}};
static const struct mroce_addr a_third = {MROCE_AF_INET, {10, 9, 9, 9}};

static void teardown_peers(void)
{
    peer_free_all();
}

/* ---- announcing ---- */

static void test_get_params_announces(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.attr.ack_every = 3;
    cfg.attr.ack_delay_ns = 7000;
    cfg.attr.min_rto_ns = 250000;
    cfg.attr.max_rto_ns = 9000000;
    cfg.attr.retry_cnt = 5;
    cfg.attr.rnr_retry = 2;
    cfg.attr.path_window = 128;
    struct peer *p = peer_new_unconnected(&cfg);
    const struct mroce_conn_params *l = &p->local;
    assert_int_equal(l->n_planes, 1);
    assert_memory_equal(&l->plane_addr[0], &l->addr, sizeof(l->addr));
    assert_int_equal(l->ack_every, 3);
    assert_int_equal(l->ack_delay_ns, 7000);
    assert_int_equal(l->min_rto_ns, 250000);
    assert_int_equal(l->max_rto_ns, 9000000);
    assert_int_equal(l->retry_cnt, 5);
    assert_int_equal(l->rnr_retry, 2);
    assert_int_equal(l->path_window, 128);
    assert_true(l->rnr_max_us > 0 && l->rnr_max_us <= MROCE_MAX_RNR_US);
    teardown_peers();
}

/* ---- checking (R-CONN-4) ---- */

static void expect_refused(struct mroce_conn_params bad)
{
    struct peer *p = peer_new_unconnected(NULL);
    assert_int_equal(mroce_conn_connect(p->conn, &bad), MROCE_EINVAL);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_INIT);
    peer_free(p);
}

static void test_connect_checks_announced(void **state)
{
    (void)state;
    struct peer *p = peer_new_unconnected(NULL);
    struct mroce_conn_params good = p->remote;
    peer_free(p);
    struct mroce_conn_params b;
#define REFUSE(field, value)                                                   \
    do {                                                                       \
        b = good;                                                              \
        b.field = value;                                                       \
        expect_refused(b);                                                     \
    } while (0)
    REFUSE(path_window, 100);     /* not a power of two */
    REFUSE(path_window, 512);     /* beyond the SACK bitmap */
    REFUSE(ack_delay_ns, 100000); /* = our min RTO (default) */
    REFUSE(min_rto_ns, 999);      /* below 1 us */
    REFUSE(max_rto_ns, MROCE_MAX_RTO_NS + 1);
    REFUSE(retry_cnt, 16); /* its backoff could not pass */
    REFUSE(rnr_retry, 8);  /* 7 means unlimited */
    REFUSE(rnr_max_us, MROCE_MAX_RNR_US + 1);
    REFUSE(n_planes, 2); /* we have one plane */
    b = good;
    b.min_rto_ns = 5000000, b.max_rto_ns = 4000000; /* min above max */
    expect_refused(b);
#undef REFUSE
    /* The boundary values pass. */
    b = good;
    b.path_window = 256, b.ack_delay_ns = 99999, b.min_rto_ns = 1000;
    b.max_rto_ns = MROCE_MAX_RTO_NS, b.retry_cnt = 15, b.rnr_retry = 7;
    b.rnr_max_us = MROCE_MAX_RNR_US;
    p = peer_new_unconnected(NULL);
    assert_int_equal(mroce_conn_connect(p->conn, &b), 0);
    teardown_peers();
}

static void test_create_checks_rto_range(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    struct peer *p = peer_new_unconnected(&cfg);
    struct mroce_conn_attr a = cfg.attr;
    a.send_cq = p->scq;
    a.recv_cq = p->rcq;
    struct mroce_conn *c;
    a.min_rto_ns = 500; /* what a peer would refuse is not announced */
    assert_int_equal(mroce_conn_create(p->pd, &a, &c), MROCE_EINVAL);
    a.min_rto_ns = 0;
    a.max_rto_ns = MROCE_MAX_RTO_NS + 1;
    assert_int_equal(mroce_conn_create(p->pd, &a, &c), MROCE_EINVAL);
    teardown_peers();
}

/* ---- per-plane addresses ---- */

static struct peer *two_plane_peer(void)
{
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.n_planes = 2;
    cfg.remote.n_planes = 2;
    cfg.remote.plane_addr[0] = a_peer0;
    cfg.remote.plane_addr[1] = a_peer1;
    cfg.remote.addr = a_peer0; /* what peer_meta stamps on every packet */
    return peer_new(&cfg);
}

/* A one-packet WRITE of the peer on `path`, from `src`. */
static int write_from(struct peer *p, const struct mroce_addr *src,
                      uint16_t path, uint32_t dsn)
{
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_WRITE, path, p->psn[path]);
    h.dsn = dsn;
    h.msg_len = 8;
    h.va = p->va;
    h.rkey = p->rkey;
    uint8_t buf[PEER_PKT_MAX];
    size_t n = peer_encode(&h, "12345678", 8, buf);
    struct mroce_pkt_meta m = peer_meta(p, path);
    m.src = *src;
    int rc = peer_rx_meta(p, &m, buf, n);
    if (rc == 0)
        p->psn[path]++;
    return rc;
}

static void test_plane_source_check(void **state)
{
    (void)state;
    struct peer *p = two_plane_peer();
    /* Path 1 is on plane 1: its packets must come from plane 1's
     * address, not from plane 0's or a third one. */
    assert_int_equal(write_from(p, &a_peer0, 1, 0), MROCE_EPROTO);
    assert_int_equal(write_from(p, &a_third, 1, 0), MROCE_EPROTO);
    assert_int_equal(write_from(p, &a_peer1, 0, 0), MROCE_EPROTO);
    assert_int_equal(peer_ctx_cnt(p).drop_bad_src, 3);
    assert_int_equal(peer_mem_dirty(p), 0);
    assert_int_equal(write_from(p, &a_peer1, 1, 0), 0);
    assert_int_equal(write_from(p, &a_peer0, 2, 1), 0);
    assert_int_equal(peer_ctx_cnt(p).drop_bad_src, 3);
    assert_memory_equal(p->mem, "12345678", 8);
    teardown_peers();
}

/* An ACK travels on a path of the acker's choosing (R-ACK-3): accepted
 * from either plane's address, never from a third one. */
static void test_ack_from_any_plane(void **state)
{
    (void)state;
    struct peer *p = two_plane_peer();
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_ACK, 0, 0);
    h.sack_high = 0xFFFFFFFFu; /* names nothing: a harmless ACK */
    uint8_t buf[PEER_PKT_MAX];
    size_t n = peer_encode(&h, NULL, 0, buf);
    struct mroce_pkt_meta m = peer_meta(p, 0);
    m.src = a_third;
    assert_int_equal(peer_rx_meta(p, &m, buf, n), MROCE_EPROTO);
    assert_int_equal(peer_ctx_cnt(p).drop_bad_src, 1);
    m.src = a_peer1;
    peer_rx_meta(p, &m, buf, n);
    m.src = a_peer0;
    peer_rx_meta(p, &m, buf, n);
    assert_int_equal(peer_ctx_cnt(p).drop_bad_src, 1);
    teardown_peers();
}

/* Packets of path p leave from our plane (p mod 2) address to the peer's
 * address of that plane. */
static void test_plane_tx_addresses(void **state)
{
    (void)state;
    struct mroce_addr mine[2] = {{MROCE_AF_INET, {10, 0, 0, 1}},
                                 {MROCE_AF_INET, {10, 0, 1, 1}}};
    struct mroce_ctx_attr ca = {.seed = 3, .mtu = 1024, .n_planes = 2};
    ca.addr = mine[0];
    ca.plane_addrs = mine;
    struct mroce_ctx *ctx;
    assert_int_equal(mroce_ctx_open(&ca, &ctx), 0);
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    assert_int_equal(mroce_pd_alloc(ctx, &pd), 0);
    assert_int_equal(mroce_cq_create(ctx, 64, &cq), 0);
    struct mroce_conn_attr a = {.send_cq = cq, .recv_cq = cq, .n_paths = 4};
    struct mroce_conn *c;
    assert_int_equal(mroce_conn_create(pd, &a, &c), 0);
    struct mroce_conn_params l, r;
    mroce_conn_get_params(c, &l);
    assert_int_equal(l.n_planes, 2);
    assert_memory_equal(&l.plane_addr[1], &mine[1], sizeof(mine[1]));
    r = l; /* a mirror peer at other addresses */
    r.conn_id = 0x5151;
    r.plane_addr[0] = a_peer0;
    r.plane_addr[1] = a_peer1;
    assert_int_equal(mroce_conn_connect(c, &r), 0);
    static uint8_t buf[64 * 1024];
    struct mroce_mr *mr;
    assert_int_equal(
        mroce_reg_mr(pd, buf, sizeof(buf), MROCE_ACCESS_LOCAL_WRITE, &mr), 0);
    struct mroce_send_wr wr = {
        .sge = {(uint64_t)(uintptr_t)buf, 8192, mroce_mr_lkey(mr)},
        .remote_addr = 0x1000,
        .rkey = 1};
    assert_int_equal(mroce_post_write(c, &wr), 0);
    uint8_t pkt[2048];
    struct mroce_pkt_meta m;
    int seen[2] = {0, 0};
    for (int i = 0; i < 8; i++) {
        int n = mroce_ctx_tx(ctx, 1000, pkt, sizeof(pkt), &m);
        assert_true(n > 0);
        struct mroce_hdr h;
        assert_int_equal(mroce_wire_decode(pkt, (size_t)n, &h), 0);
        assert_int_equal(m.plane, h.path % 2);
        assert_true(m.plane < 2);
        assert_memory_equal(&m.src, &mine[m.plane], sizeof(m.src));
        assert_memory_equal(&m.dst, m.plane ? &a_peer1 : &a_peer0,
                            sizeof(m.dst));
        seen[m.plane]++;
    }
    assert_true(seen[0] > 0 && seen[1] > 0);
    mroce_ctx_close(ctx);
}

static void test_ctx_plane_family(void **state)
{
    (void)state;
    struct mroce_addr mixed[2] = {{MROCE_AF_INET, {10, 0, 0, 1}},
                                  {MROCE_AF_INET6, {0xfd}}};
    struct mroce_ctx_attr ca = {.n_planes = 2, .plane_addrs = mixed};
    ca.addr = mixed[0];
    struct mroce_ctx *ctx = NULL;
    assert_int_equal(mroce_ctx_open(&ca, &ctx), MROCE_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_params_announces),
        cmocka_unit_test(test_connect_checks_announced),
        cmocka_unit_test(test_create_checks_rto_range),
        cmocka_unit_test(test_plane_source_check),
        cmocka_unit_test(test_ack_from_any_plane),
        cmocka_unit_test(test_plane_tx_addresses),
        cmocka_unit_test(test_ctx_plane_family),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
