/* Comments of include/mroce/mroce.h that said something else than the
 * engine does, checked against it: the alloc hook is also called when a
 * connection's rings grow under traffic (the comment said: only when
 * objects are created), a memory region is busy while a READ response is
 * served from it, and mroce_ctx_rx returns 0 for packets a connection
 * took and then dropped. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "support/peer.h"

static int teardown(void **state)
{
    (void)state;
    peer_free_all();
    return 0;
}

struct counting {
    unsigned allocs;
};

static void *count_alloc(void *ud, size_t size)
{
    ((struct counting *)ud)->allocs++;
    return calloc(1, size);
}

static void count_free(void *ud, void *ptr)
{
    (void)ud;
    free(ptr);
}

static const struct mroce_addr addr_a = {MROCE_AF_INET, {10, 0, 0, 1}};
static const struct mroce_addr addr_b = {MROCE_AF_INET, {10, 0, 0, 2}};

/* The hooks: a 512-packet WRITE's first window (128 packets) outgrows the
 * DSN ring (64) and every path's PSN ring (8): alloc runs while sending,
 * a bounded number of times, far fewer than the packets. */
static void test_alloc_on_ring_growth(void **state)
{
    (void)state;
    enum { MTU = 1024, LEN = 512 * MTU };
    struct counting cnt = {0};
    struct mroce_ctx_attr a = {.mtu = MTU, .addr = addr_a, .seed = 3};
    a.hooks = (struct mroce_hooks){
        .ud = &cnt, .alloc = count_alloc, .free = count_free};
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    struct mroce_mr *mr;
    struct mroce_conn *conn;
    uint8_t *buf = calloc(1, LEN);
    assert_non_null(buf);
    assert_int_equal(mroce_ctx_open(&a, &ctx), 0);
    assert_int_equal(mroce_pd_alloc(ctx, &pd), 0);
    assert_int_equal(mroce_cq_create(ctx, 256, &cq), 0);
    assert_int_equal(mroce_reg_mr(pd, buf, LEN, MROCE_ACCESS_LOCAL_WRITE, &mr),
                     0);
    struct mroce_conn_attr ca = {.send_cq = cq, .recv_cq = cq};
    assert_int_equal(mroce_conn_create(pd, &ca, &conn), 0);
    struct mroce_conn_params r;
    mroce_conn_get_params(conn, &r);
    r.conn_id = 0x1234;
    r.addr = addr_b;
    assert_int_equal(mroce_conn_connect(conn, &r), 0);
    struct mroce_send_wr wr = {.wr_id = 1, .remote_addr = 0x10000, .rkey = 5};
    wr.sge = (struct mroce_sge){(uintptr_t)buf, LEN, mroce_mr_lkey(mr)};
    assert_int_equal(mroce_post_write(conn, &wr), 0);
    unsigned before = cnt.allocs;
    static uint8_t pkt[MTU + 128];
    struct mroce_pkt_meta meta;
    int sent = 0;
    while (mroce_ctx_tx(ctx, 1000, pkt, sizeof(pkt), &meta) > 0)
        sent++;
    assert_int_equal(sent, 128); /* R-CC-4: the first window */
    unsigned grown = cnt.allocs - before;
    assert_true(grown > 0);          /* rings grew while sending */
    assert_true(grown <= sent / 4u); /* but not per packet */
    mroce_ctx_close(ctx);
    free(buf);
}

/* mroce_dereg_mr: EBUSY while a READ response is served from the region
 * (no work request of the engine's side refers to it), 0 once the
 * response is acknowledged. */
static void test_dereg_busy_while_read_served(void **state)
{
    (void)state;
    struct peer *p = peer_new(NULL);
    struct mroce_mr *mr;
    assert_int_equal(mroce_reg_mr(p->pd, p->mem, PEER_MEM_LEN,
                                  MROCE_ACCESS_REMOTE_READ, &mr),
                     0);
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_READ_REQ, 0, 0);
    h.flags = MROCE_HF_ACKREQ;
    h.va = p->va;
    h.rkey = mroce_mr_rkey(mr);
    h.msg_len = 3 * PEER_MTU;
    assert_int_equal(peer_feed(p, &h, NULL, 0), 0);
    peer_drain(p, NULL, 0);
    peer_prove(p); /* R-VAL-7: the data follows the PROBE's ACK */
    assert_int_equal(peer_count(p, MROCE_OP_READ_RESP), 3);
    assert_int_equal(mroce_dereg_mr(mr), MROCE_EBUSY);
    peer_ack_all(p);
    peer_drain(p, NULL, 0);
    assert_int_equal(mroce_dereg_mr(mr), 0);
}

/* mroce_ctx_rx: EPROTO for drops before a connection takes the packet and
 * for a bad path id; 0 for a packet the connection takes and drops. */
static void test_rx_return_codes(void **state)
{
    (void)state;
    struct peer *p = peer_new(NULL);
    uint8_t b = 1;
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_PROBE, PEER_PATHS, 0);
    h.flags = MROCE_HF_ACKREQ;
    assert_int_equal(peer_feed(p, &h, NULL, 0), MROCE_EPROTO);
    assert_int_equal(peer_cnt(p).drop_bad_path, 1);
    h.conn ^= 1;
    h.path = 0;
    assert_int_equal(peer_feed(p, &h, NULL, 0), MROCE_EPROTO);
    assert_int_equal(peer_ctx_cnt(p).drop_unknown_conn, 1);
    /* DSN far beyond the window: counted by the connection, returns 0 */
    assert_int_equal(
        peer_write(p, 0, 0, 1u << 20, 0, 0, p->va, p->rkey, 0, 1, &b, 1), 0);
    assert_int_equal(peer_cnt(p).drop_dsn_window, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_on_ring_growth),
        cmocka_unit_test_teardown(test_dereg_busy_while_read_served, teardown),
        cmocka_unit_test_teardown(test_rx_return_codes, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
