/* The public API's documented errors (include/mroce/mroce.h), key
 * generation, the string tables, and connection teardown (R-CONN-6/7). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "engine/eng.h"
#include "support/peer.h"

static int setup(void **state)
{
    *state = peer_new(NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    peer_free_all(); /* the fixture's peer and any a failed test left */
    return 0;
}

static const uint8_t sq_ops[] = {MROCE_OP_WRITE, MROCE_OP_WRITE_IMM,
                                 MROCE_OP_SEND, MROCE_OP_SEND_IMM,
                                 MROCE_OP_READ_REQ};

/* Every send-queue post with this sge must fail with err. */
static void all_posts_fail(struct peer *p, uint16_t stream, uint64_t addr,
                           uint32_t len, uint32_t lkey, int err)
{
    for (size_t i = 0; i < sizeof(sq_ops); i++) {
        struct mroce_send_wr w = {.wr_id = 1, .stream = stream};
        w.sge = (struct mroce_sge){.addr = addr, .length = len, .lkey = lkey};
        int rc;
        switch (sq_ops[i]) {
        case MROCE_OP_WRITE:
            rc = mroce_post_write(p->conn, &w);
            break;
        case MROCE_OP_WRITE_IMM:
            rc = mroce_post_write_imm(p->conn, &w);
            break;
        case MROCE_OP_SEND:
            rc = mroce_post_send(p->conn, &w);
            break;
        case MROCE_OP_SEND_IMM:
            rc = mroce_post_send_imm(p->conn, &w);
            break;
        default:
            rc = mroce_post_read(p->conn, &w);
            break;
        }
        assert_int_equal(rc, err);
    }
}

static int post_recv(struct peer *p, uint16_t stream, uint64_t addr,
                     uint32_t len, uint32_t lkey)
{
    struct mroce_recv_wr r = {.wr_id = 1, .stream = stream};
    r.sge = (struct mroce_sge){.addr = addr, .length = len, .lkey = lkey};
    return mroce_post_recv(p->conn, &r);
}

static int nothing_posted(struct peer *p)
{
    struct mroce_wc wc[4];
    return p->scq->pending == 0 && p->rcq->pending == 0 &&
           peer_poll(p->scq, wc, 4) == 0 && peer_poll(p->rcq, wc, 4) == 0;
}

/* ---- posting ---- */

static void test_post_not_connected(void **state)
{
    (void)state;
    struct peer *p = peer_new_unconnected(NULL);
    uint32_t lk = mroce_mr_lkey(p->mr);
    all_posts_fail(p, 0, p->va, 64, lk, MROCE_ESTATE);
    assert_int_equal(post_recv(p, 0, p->va, 64, lk), 0); /* allowed */
    peer_connect(p);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, 64), 0);
    assert_int_equal(mroce_conn_disconnect(p->conn), 0);
    all_posts_fail(p, 0, p->va, 64, lk, MROCE_ESTATE);
    assert_int_equal(post_recv(p, 0, p->va, 64, lk), MROCE_ESTATE);
    peer_free(p);
}

static void test_post_bad_stream(void **state)
{
    struct peer *p = *state;
    uint32_t lk = mroce_mr_lkey(p->mr);
    all_posts_fail(p, 2, p->va, 64, lk, MROCE_ENOENT);
    all_posts_fail(p, 0xFFFF, p->va, 64, lk, MROCE_ENOENT);
    assert_int_equal(post_recv(p, 2, p->va, 64, lk), MROCE_ENOENT);
    assert_true(nothing_posted(p));
    /* the effective count is the smaller of both sides */
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.remote.n_streams = 1;
    struct peer *q = peer_new(&cfg);
    all_posts_fail(q, 1, q->va, 64, mroce_mr_lkey(q->mr), MROCE_ENOENT);
    peer_free(q);
}

static void test_post_bad_key(void **state)
{
    struct peer *p = *state;
    struct mroce_pd *pd2;
    struct mroce_mr *mr2, *ro;
    assert_int_equal(mroce_pd_alloc(p->ctx, &pd2), 0);
    assert_int_equal(
        mroce_reg_mr(pd2, p->mem, PEER_MEM_LEN, MROCE_ACCESS_LOCAL_WRITE, &mr2),
        0);
    all_posts_fail(p, 0, p->va, 64, mroce_mr_lkey(mr2), MROCE_EACCES);
    assert_int_equal(post_recv(p, 0, p->va, 64, mroce_mr_lkey(mr2)),
                     MROCE_EACCES);
    all_posts_fail(p, 0, p->va, 64, p->rkey ^ 0x5A5A, MROCE_EACCES);
    /* READ and receive destinations need LOCAL_WRITE */
    assert_int_equal(
        mroce_reg_mr(p->pd, p->mem, 4096, MROCE_ACCESS_REMOTE_READ, &ro), 0);
    struct mroce_send_wr w = {.sge = {p->va, 64, mroce_mr_lkey(ro)}};
    assert_int_equal(mroce_post_read(p->conn, &w), MROCE_EACCES);
    assert_int_equal(post_recv(p, 0, p->va, 64, mroce_mr_lkey(ro)),
                     MROCE_EACCES);
    assert_int_equal(mroce_post_send(p->conn, &w), 0); /* reading is fine */
    assert_int_equal(mroce_dereg_mr(mr2), 0);
    assert_int_equal(mroce_pd_free(pd2), 0);
}

static void test_post_out_of_range(void **state)
{
    struct peer *p = *state;
    uint32_t lk = mroce_mr_lkey(p->mr);
    uint64_t end = p->va + PEER_MEM_LEN;
    all_posts_fail(p, 0, end - 10, 11, lk, MROCE_ERANGE);
    all_posts_fail(p, 0, end, 1, lk, MROCE_ERANGE);
    all_posts_fail(p, 0, p->va - 1, 2, lk, MROCE_ERANGE);
    all_posts_fail(p, 0, UINT64_MAX - 5, 10, lk, MROCE_ERANGE);
    all_posts_fail(p, 0, p->va, PEER_MEM_LEN + 1, lk, MROCE_ERANGE);
    assert_int_equal(post_recv(p, 0, end - 10, 11, lk), MROCE_ERANGE);
    all_posts_fail(p, 0, p->va, 0x80000001u, lk, MROCE_EINVAL);
    assert_true(nothing_posted(p));
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, PEER_MEM_LEN - 10, 10),
                     0); /* the last bytes are fine */
}

static void test_queue_full(void **state)
{
    struct peer *p = *state;
    for (uint64_t i = 0; i < 8; i++) {
        assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, i, 0, 8), 0);
        assert_int_equal(post_recv(p, 0, p->va, 8, p->rkey), 0);
    }
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 9, 0, 8), MROCE_EAGAIN);
    assert_int_equal(post_recv(p, 0, p->va, 8, p->rkey), MROCE_EAGAIN);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 1, 9, 0, 8), 0);
    assert_int_equal(post_recv(p, 1, p->va, 8, p->rkey), 0);
    peer_drain(p, NULL, 0);
    peer_ack_all(p);
    struct mroce_wc wc[16];
    assert_int_equal(peer_poll(p->scq, wc, 16), 9);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 10, 0, 8), 0);
}

static void test_cq_full(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.cq_depth = 4;
    struct peer *p = peer_new(&cfg);
    for (uint64_t i = 0; i < 4; i++)
        assert_int_equal(peer_post(p, MROCE_OP_WRITE, i % 2, i, 0, 8), 0);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 5, 0, 8), MROCE_EAGAIN);
    assert_int_equal(peer_post(p, MROCE_OP_SEND, 1, 5, 0, 8), MROCE_EAGAIN);
    peer_drain(p, NULL, 0);
    peer_ack_all(p); /* completions wait in the CQ: still no room */
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 5, 0, 8), MROCE_EAGAIN);
    struct mroce_wc wc[8];
    assert_int_equal(peer_poll(p->scq, wc, 1), 1);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 5, 0, 8), 0);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 6, 0, 8), MROCE_EAGAIN);
    assert_int_equal(peer_poll(p->scq, wc, 8), 3);
    peer_free(p);
}

/* ---- object lifetimes ---- */

static void test_busy_objects(void **state)
{
    struct peer *p = *state;
    struct mroce_mr *mr, *rmr;
    assert_int_equal(
        mroce_reg_mr(p->pd, p->mem, 4096, MROCE_ACCESS_LOCAL_WRITE, &mr), 0);
    assert_int_equal(mroce_reg_mr(p->pd, p->mem + 4096, 4096,
                                  MROCE_ACCESS_LOCAL_WRITE, &rmr),
                     0);
    struct mroce_send_wr w = {.wr_id = 3, .sge = {p->va, 64, 0}};
    w.sge.lkey = mroce_mr_lkey(mr);
    assert_int_equal(mroce_post_write(p->conn, &w), 0);
    assert_int_equal(post_recv(p, 0, p->va + 4096, 64, mroce_mr_lkey(rmr)), 0);
    assert_int_equal(mroce_dereg_mr(mr), MROCE_EBUSY);
    assert_int_equal(mroce_dereg_mr(rmr), MROCE_EBUSY);
    assert_int_equal(mroce_pd_free(p->pd), MROCE_EBUSY);
    assert_int_equal(mroce_cq_destroy(p->scq), MROCE_EBUSY);
    assert_int_equal(mroce_cq_destroy(p->rcq), MROCE_EBUSY);
    peer_drain(p, NULL, 0);
    peer_ack_all(p);
    struct mroce_wc wc[2];
    assert_int_equal(peer_poll(p->scq, wc, 2), 1);
    assert_int_equal(mroce_dereg_mr(mr), 0); /* its WR completed */
    assert_int_equal(mroce_dereg_mr(rmr), MROCE_EBUSY);
    assert_int_equal(mroce_conn_disconnect(p->conn), 0); /* flushes */
    assert_int_equal(peer_poll(p->rcq, wc, 2), 1);
    assert_int_equal(mroce_dereg_mr(rmr), 0);
    assert_int_equal(mroce_dereg_mr(p->mr), 0);
    assert_int_equal(mroce_pd_free(p->pd), MROCE_EBUSY); /* the conn */
    mroce_conn_destroy(p->conn);
    assert_int_equal(mroce_cq_destroy(p->scq), 0);
    assert_int_equal(mroce_cq_destroy(p->rcq), 0);
    assert_int_equal(mroce_pd_free(p->pd), 0);
}

/* Destroying a connection with work outstanding gives its CQ room back
 * and drops its references without completions. */
static void test_destroy_with_work(void **state)
{
    struct peer *p = *state;
    for (uint64_t i = 0; i < 3; i++)
        assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, i, 0, 8), 0);
    assert_int_equal(post_recv(p, 1, p->va, 8, p->rkey), 0);
    peer_drain(p, NULL, 0);
    mroce_conn_destroy(p->conn);
    assert_int_equal(p->scq->pending, 0);
    assert_int_equal(p->rcq->pending, 0);
    struct mroce_wc wc[4];
    assert_int_equal(peer_poll(p->scq, wc, 4), 0);
    assert_int_equal(mroce_dereg_mr(p->mr), 0);
    assert_int_equal(mroce_ctx_tx(p->ctx, p->now, p->out[0].buf,
                                  sizeof(p->out[0].buf), &p->out[0].meta),
                     0);
    assert_int_equal(mroce_cq_destroy(p->scq), 0);
    assert_int_equal(mroce_cq_destroy(p->rcq), 0);
    assert_int_equal(mroce_pd_free(p->pd), 0);
}

/* ---- creation and connection ---- */

static void test_create_errors(void **state)
{
    struct peer *p = *state;
    struct mroce_ctx_attr ca = {.addr = p->local.addr};
    struct mroce_ctx *ctx;
    uint32_t mtus[] = {255, 9001, 100000};
    for (int i = 0; i < 3; i++) {
        ca.mtu = mtus[i];
        assert_int_equal(mroce_ctx_open(&ca, &ctx), MROCE_EINVAL);
    }
    ca.mtu = 0;
    ca.addr.family = MROCE_AF_NONE;
    assert_int_equal(mroce_ctx_open(&ca, &ctx), MROCE_EINVAL);
    struct mroce_cq *cq;
    assert_int_equal(mroce_cq_create(p->ctx, 0, &cq), MROCE_EINVAL);

    ca.addr = p->local.addr;
    assert_int_equal(mroce_ctx_open(&ca, &ctx), 0);
    struct mroce_cq *other;
    assert_int_equal(mroce_cq_create(ctx, 8, &other), 0);
    struct mroce_conn_attr ok = {.send_cq = p->scq, .recv_cq = p->rcq};
    struct mroce_conn_attr bad[8];
    for (int i = 0; i < 8; i++)
        bad[i] = ok;
    bad[0].send_cq = NULL;
    bad[1].recv_cq = NULL;
    bad[2].n_paths = 257;
    bad[3].dsn_window = 3000;
    bad[4].path_window = 512;
    bad[5].path_window = 100;
    bad[6].send_cq = other;
    bad[7].min_rto_ns = 2000000000ull;
    struct mroce_conn *c;
    for (int i = 0; i < 8; i++)
        assert_int_equal(mroce_conn_create(p->pd, &bad[i], &c), MROCE_EINVAL);
    assert_int_equal(other->users, 0);
    mroce_ctx_close(ctx);
}

static void test_connect_errors(void **state)
{
    (void)state;
    struct peer *p = peer_new_unconnected(NULL);
    struct mroce_conn_params good = p->remote, bad[8];
    for (int i = 0; i < 8; i++)
        bad[i] = good;
    bad[0].conn_id = 0;
    bad[1].n_paths = 0;
    bad[2].n_streams = 0;
    bad[3].mtu = 255;
    bad[4].dsn_window = 100;
    bad[5].dsn_window = 0;
    bad[6].msg_window = 0;
    bad[7].addr.family = MROCE_AF_NONE;
    for (int i = 0; i < 8; i++) {
        assert_int_equal(mroce_conn_connect(p->conn, &bad[i]), MROCE_EINVAL);
        assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_INIT);
    }
    assert_int_equal(mroce_conn_disconnect(p->conn), MROCE_ESTATE);
    peer_connect(p);
    assert_int_equal(mroce_conn_connect(p->conn, &good), MROCE_ESTATE);
    assert_int_equal(mroce_conn_disconnect(p->conn), 0);
    assert_int_equal(mroce_conn_disconnect(p->conn), MROCE_ESTATE);
    assert_int_equal(mroce_conn_connect(p->conn, &good), MROCE_ESTATE);
    uint8_t small[16];
    struct mroce_pkt_meta m;
    assert_int_equal(mroce_ctx_tx(p->ctx, p->now, small, sizeof(small), &m),
                     MROCE_ENOBUFS);
    peer_free(p);
}

/* The smaller side wins (R-CONN-3). */
static void test_connect_negotiates(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.remote.n_paths = 2;
    cfg.remote.mtu = 512;
    struct peer *p = peer_new(&cfg);
    struct mroce_path_info i;
    assert_int_equal(mroce_path_query(p->conn, 1, &i), 0);
    assert_int_equal(mroce_path_query(p->conn, 2, &i), MROCE_ENOENT);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, 2048), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 4); /* 512-byte packets */
    for (int k = 0; k < 4; k++) {
        assert_int_equal(p->out[k].h.payload_len, 512);
        assert_true(p->out[k].h.path < 2);
    }
    peer_free(p);
}

/* ---- paths ---- */

/* R-ENC-10: path p is on plane p mod P. R-PATH-14: with some planes
 * closed, data goes only to paths on the open ones, nothing is lost, and
 * the rest follows when the planes open again. */
static void test_planes(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.n_planes = 3;
    cfg.remote.n_paths = 6;
    cfg.attr.n_paths = 6;
    struct peer *p = peer_new(&cfg);
    mroce_ctx_set_tx_planes(p->ctx, UINT64_C(1) << 1);
    /* more than the two plane-1 paths' initial windows hold */
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, 60 * PEER_MTU), 0);
    int n = peer_drain(p, NULL, 0);
    assert_true(n > 0 && n < 60);
    for (int k = 0; k < n; k++) {
        assert_int_equal(p->out[k].h.path % 3, 1);
        assert_int_equal(p->out[k].meta.plane, 1);
    }
    mroce_ctx_set_tx_planes(p->ctx, 0);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    mroce_ctx_set_tx_planes(p->ctx, UINT64_MAX);
    int rest = peer_drain(p, NULL, 0);
    assert_int_equal(n + rest, 60);
    for (int k = 0; k < rest; k++)
        assert_int_equal(p->out[k].meta.plane, p->out[k].h.path % 3);
    peer_free(p);
}

static void test_planes_invalid(void **state)
{
    struct peer *p = *state;
    struct mroce_ctx_attr ca = {.addr = p->local.addr,
                                .n_planes = MROCE_MAX_PLANES + 1};
    struct mroce_ctx *ctx;
    assert_int_equal(mroce_ctx_open(&ca, &ctx), MROCE_EINVAL);
    ca.n_planes = MROCE_MAX_PLANES;
    assert_int_equal(mroce_ctx_open(&ca, &ctx), 0);
    mroce_ctx_close(ctx);
}

static void test_path_ops(void **state)
{
    struct peer *p = *state;
    struct mroce_path_info i;
    uint16_t bad[] = {4, 255, 256, 0xFFFF};
    for (int k = 0; k < 4; k++) {
        assert_int_equal(mroce_path_query(p->conn, bad[k], &i), MROCE_ENOENT);
        assert_int_equal(mroce_path_repath(p->conn, bad[k]), MROCE_ENOENT);
        assert_int_equal(mroce_path_enable(p->conn, bad[k], 0), MROCE_ENOENT);
        assert_int_equal(mroce_path_enable(p->conn, bad[k], 1), MROCE_ENOENT);
    }
    uint16_t port = peer_path(p, 2).src_port;
    assert_int_equal(mroce_path_repath(p->conn, 2), 0);
    uint16_t fresh = peer_path(p, 2).src_port;
    assert_int_not_equal(fresh, port);
    assert_true(fresh >= 49152); /* R-ENC-3, R-PATH-5 */
    for (uint16_t a = 0; a < 4; a++)
        if (a != 2)
            assert_int_not_equal(peer_path(p, a).src_port, fresh);
    assert_int_equal(peer_path(p, 2).repaths, 1);
    assert_int_equal(peer_path(p, 2).state, MROCE_PATH_ACTIVE);
    for (uint16_t a = 0; a < 3; a++)
        assert_int_equal(mroce_path_enable(p->conn, a, 0), 0);
    assert_int_equal(mroce_path_enable(p->conn, 3, 0), MROCE_EINVAL);
    assert_int_equal(mroce_path_enable(p->conn, 1, 0), 0); /* again: ok */
    assert_int_equal(peer_path(p, 0).state, MROCE_PATH_DISABLED);
    assert_int_equal(peer_path(p, 3).state, MROCE_PATH_ACTIVE);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, 4 * PEER_MTU), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 4);
    for (int k = 0; k < 4; k++)
        assert_int_equal(p->out[k].h.path, 3);
    assert_int_equal(mroce_path_enable(p->conn, 0, 1), 0);
    assert_int_equal(peer_path(p, 0).state, MROCE_PATH_ACTIVE);
    assert_int_equal(mroce_path_enable(p->conn, 3, 0), 0);
}

/* R-ENC-3: a datapath's fixed port set bounds the paths and is the only
 * source of ports, also after re-paths. */
static void test_src_port_set(void **state)
{
    struct peer *p = *state;
    const uint16_t set[3] = {40000, 40001, 40002};
    struct mroce_ctx_attr ca = {
        .addr = p->local.addr, .src_ports = set, .n_src_ports = 3};
    struct mroce_ctx *ctx;
    ca.n_src_ports = MROCE_MAX_SRC_PORTS + 1;
    assert_int_equal(mroce_ctx_open(&ca, &ctx), MROCE_EINVAL);
    ca.n_src_ports = 3;
    ca.src_ports = NULL;
    assert_int_equal(mroce_ctx_open(&ca, &ctx), MROCE_EINVAL);
    const uint16_t zero[2] = {40000, 0};
    ca.src_ports = zero;
    ca.n_src_ports = 2;
    assert_int_equal(mroce_ctx_open(&ca, &ctx), MROCE_EINVAL);
    ca.src_ports = set;
    ca.n_src_ports = 3;
    assert_int_equal(mroce_ctx_open(&ca, &ctx), 0);
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    assert_int_equal(mroce_pd_alloc(ctx, &pd), 0);
    assert_int_equal(mroce_cq_create(ctx, 8, &cq), 0);
    struct mroce_conn_attr a = {.send_cq = cq, .recv_cq = cq, .n_paths = 4};
    struct mroce_conn *c;
    assert_int_equal(mroce_conn_create(pd, &a, &c), MROCE_EINVAL);
    a.n_paths = 3;
    struct mroce_conn *other;
    assert_int_equal(mroce_conn_create(pd, &a, &c), 0);
    assert_int_equal(mroce_conn_create(pd, &a, &other), 0);
    struct mroce_conn_params r;
    mroce_conn_get_params(other, &r);
    assert_int_equal(mroce_conn_connect(c, &r), 0);
    for (int round = 0; round < 20; round++) {
        bool seen[3] = {false, false, false};
        for (uint16_t k = 0; k < 3; k++) {
            uint16_t port = c->ptx[k].src_port;
            assert_true(port >= 40000 && port <= 40002);
            assert_false(seen[port - 40000]); /* distinct */
            seen[port - 40000] = true;
        }
        assert_int_equal(mroce_path_repath(c, (uint16_t)(round % 3)), 0);
    }
    mroce_ctx_close(ctx);
}

/* ---- keys ---- */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

#define N_KEYS 10000

static void test_keys_unique(void **state)
{
    struct peer *p = *state;
    static struct mroce_mr *mrs[N_KEYS];
    static uint32_t keys[N_KEYS + 1];
    for (int i = 0; i < N_KEYS; i++) {
        assert_int_equal(mroce_reg_mr(p->pd, p->mem + i % 4096, 1,
                                      MROCE_ACCESS_LOCAL_WRITE, &mrs[i]),
                         0);
        keys[i] = mroce_mr_lkey(mrs[i]);
        assert_int_equal(keys[i], mroce_mr_rkey(mrs[i]));
        assert_int_not_equal(keys[i], 0);
    }
    keys[N_KEYS] = p->rkey;
    qsort(keys, N_KEYS + 1, sizeof(keys[0]), cmp_u32);
    for (int i = 1; i <= N_KEYS; i++)
        assert_int_not_equal(keys[i], keys[i - 1]);
    /* deleting from the key table keeps every other key findable */
    for (int i = 0; i < N_KEYS; i += 3)
        assert_int_equal(mroce_dereg_mr(mrs[i]), 0);
    for (int i = 0; i < N_KEYS; i++) {
        if (i % 3 == 0)
            continue;
        assert_ptr_equal(dev_mr_find(&p->ctx->dev, mroce_mr_lkey(mrs[i])),
                         mrs[i]);
        assert_int_equal(mroce_dereg_mr(mrs[i]), 0);
    }
    assert_ptr_equal(dev_mr_find(&p->ctx->dev, p->rkey), p->mr);
}

struct script {
    const uint64_t *v;
    size_t n, i;
};

static uint64_t script_rand(void *ud)
{
    struct script *s = ud;
    assert_true(s->i < s->n);
    return s->v[s->i++];
}

/* Zero and duplicate draws from the rand hook are redrawn (R-SEC-2). */
static void test_keys_redraw(void **state)
{
    (void)state;
    static const uint64_t v[] = {0, 0x100000000ull, 7, 0, 7, 7,
                                 9, 0x700000007ull, 9, 11};
    struct script s = {v, sizeof(v) / sizeof(v[0]), 0};
    struct mroce_ctx_attr a = {.addr = {.family = MROCE_AF_INET}};
    a.hooks.rand64 = script_rand;
    a.hooks.ud = &s;
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_mr *mr[3];
    static uint8_t buf[16];
    assert_int_equal(mroce_ctx_open(&a, &ctx), 0);
    assert_int_equal(mroce_pd_alloc(ctx, &pd), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(mroce_reg_mr(pd, buf, sizeof(buf), 0, &mr[i]), 0);
    assert_int_equal(mroce_mr_lkey(mr[0]), 7);
    assert_int_equal(mroce_mr_lkey(mr[1]), 9);
    assert_int_equal(mroce_mr_lkey(mr[2]), 11);
    assert_int_equal(s.i, s.n);
    mroce_ctx_close(ctx);
}

static void test_reg_mr_errors(void **state)
{
    struct peer *p = *state;
    struct mroce_mr *mr;
    assert_int_equal(mroce_reg_mr(p->pd, p->mem, 0, 0, &mr), MROCE_EINVAL);
    assert_int_equal(mroce_reg_mr(p->pd, NULL, 8, 0, &mr), MROCE_EINVAL);
    assert_int_equal(mroce_reg_mr(p->pd, p->mem, 8, 0x8, &mr), MROCE_EINVAL);
    assert_int_equal(
        mroce_reg_mr(p->pd, p->mem, 8, MROCE_ACCESS_REMOTE_WRITE, &mr),
        MROCE_EINVAL);
}

/* ---- strings ---- */

static void check_str(const char *s)
{
    assert_non_null(s);
    assert_true(strlen(s) > 0);
}

static void test_strings_never_null(void **state)
{
    (void)state;
    int edge[] = {INT_MIN, INT_MIN + 1, -65536, 65536, INT_MAX};
    for (int i = -1000; i <= 1000; i++) {
        check_str(mroce_strerror(i));
        check_str(mroce_wc_status_str(i));
        check_str(mroce_conn_state_str(i));
        check_str(mroce_path_state_str(i));
    }
    for (int i = 0; i < 5; i++) {
        check_str(mroce_strerror(edge[i]));
        check_str(mroce_wc_status_str(edge[i]));
        check_str(mroce_conn_state_str(edge[i]));
        check_str(mroce_path_state_str(edge[i]));
    }
    /* every defined code has its own text */
    for (int a = MROCE_EPROTO; a <= 0; a++)
        for (int b = MROCE_EPROTO; b < a; b++)
            assert_string_not_equal(mroce_strerror(a), mroce_strerror(b));
    for (int a = 0; a <= MROCE_WC_WR_FLUSH_ERR; a++)
        for (int b = 0; b < a; b++)
            assert_string_not_equal(mroce_wc_status_str(a),
                                    mroce_wc_status_str(b));
}

/* ---- teardown ---- */

static void post_mixed(struct peer *p)
{
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, 3000), 0);
    assert_int_equal(peer_post(p, MROCE_OP_SEND, 0, 2, 0, 10), 0);
    assert_int_equal(peer_post(p, MROCE_OP_READ_REQ, 1, 3, 0, 100), 0);
    peer_post_recv(p, 0, 4, 0, 64);
    peer_post_recv(p, 1, 5, 0, 64);
}

/* All five WRs of post_mixed flushed, each exactly once. */
static void assert_flushed(struct peer *p)
{
    struct mroce_wc wc[8];
    assert_int_equal(peer_poll(p->scq, wc, 8), 3);
    static const uint8_t ops[] = {MROCE_WC_RDMA_WRITE, MROCE_WC_SEND,
                                  MROCE_WC_RDMA_READ};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(wc[i].wr_id, (uint64_t)i + 1);
        assert_int_equal(wc[i].status, MROCE_WC_WR_FLUSH_ERR);
        assert_int_equal(wc[i].opcode, ops[i]);
    }
    assert_int_equal(peer_poll(p->rcq, wc, 8), 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(wc[i].wr_id, (uint64_t)i + 4);
        assert_int_equal(wc[i].status, MROCE_WC_WR_FLUSH_ERR);
    }
}

static void test_disconnect(void **state)
{
    struct peer *p = *state;
    post_mixed(p);
    assert_int_equal(peer_drain(p, NULL, 0), 5);
    assert_int_equal(mroce_conn_disconnect(p->conn), 0);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CLOSING);
    assert_flushed(p);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    const struct mroce_hdr *h = &p->out[0].h;
    assert_int_equal(h->opcode, MROCE_OP_CLOSE);
    assert_int_equal(h->path, 0);
    assert_int_equal(h->psn, peer_tdsn(p, 5)); /* R-VAL-5: our next DSN */
    assert_int_equal(p->out[0].len, MROCE_MTH_LEN + MROCE_ICRC_LEN);
    /* late ACKs for the flushed data change nothing */
    peer_ack_all(p);
    struct mroce_hdr close_ack = peer_hdr(p, MROCE_OP_CLOSE_ACK, 0, 0);
    assert_int_equal(peer_feed(p, &close_ack, NULL, 0), 0);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CLOSED);
    for (int i = 0; i < 10 && peer_fire(p); i++)
        assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_true(nothing_posted(p));
}

/* R-CONN-8: without CLOSE_ACK, retry_cnt more copies of CLOSE, then
 * CLOSED anyway. */
static void test_disconnect_unanswered(void **state)
{
    struct peer *p = *state;
    assert_int_equal(mroce_conn_disconnect(p->conn), 0);
    int closes = 0;
    for (int i = 0; i < 200; i++) {
        peer_drain(p, NULL, 0);
        closes += peer_count(p, MROCE_OP_CLOSE);
        assert_int_equal(p->n_out, peer_count(p, MROCE_OP_CLOSE));
        if (mroce_conn_state(p->conn) == MROCE_CONN_CLOSED)
            break;
        assert_true(peer_fire(p));
    }
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CLOSED);
    assert_int_equal(closes, 1 + 7);
    for (int i = 0; i < 4 && peer_fire(p); i++)
        assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_false(peer_fire(p)); /* no timer left */
}

/* R-CONN-8: the wait before each further CLOSE doubles, starting from
 * RTO(p). ENGINE BUG (minor, reported): req_close re-arms close_at =
 * now + ptx[0].rto every time, so CLOSE goes out every 500 us. Repro:
 * disconnect, no CLOSE_ACK, fire timers: intervals 500, 500, 500 us. */
static void test_close_backoff(void **state)
{
    struct peer *p = *state;
    assert_int_equal(mroce_conn_disconnect(p->conn), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    uint64_t last = p->now, wait = 0;
    for (int n = 1; n < 8; n++) {
        assert_int_equal(peer_fire_tx(p, 8), 1);
        assert_int_equal(p->out[0].h.opcode, MROCE_OP_CLOSE);
        uint64_t gap = p->now - last;
        if (n == 1)
            assert_int_equal(gap, peer_path(p, 0).rto_ns);
        else
            assert_int_equal(gap, 2 * wait);
        wait = gap;
        last = p->now;
    }
}

/* R-CONN-14: both sides close at once: each answers the other's CLOSE
 * and is CLOSED; a CLOSE_ACK arriving afterwards changes nothing. */
static void test_simultaneous_close(void **state)
{
    struct peer *p = *state;
    assert_int_equal(mroce_conn_disconnect(p->conn), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    struct mroce_hdr c = peer_hdr(p, MROCE_OP_CLOSE, 0, 0);
    assert_int_equal(peer_feed(p, &c, NULL, 0), 0);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CLOSED);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_int_equal(p->out[0].h.opcode, MROCE_OP_CLOSE_ACK);
    c.opcode = MROCE_OP_CLOSE_ACK;
    peer_feed(p, &c, NULL, 0);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CLOSED);
    for (int i = 0; i < 10 && peer_fire(p); i++)
        assert_int_equal(peer_drain(p, NULL, 0), 0);
}

static void test_peer_closes(void **state)
{
    struct peer *p = *state;
    post_mixed(p);
    peer_drain(p, NULL, 0);
    struct mroce_hdr c = peer_hdr(p, MROCE_OP_CLOSE, 0, 0);
    assert_int_equal(peer_feed(p, &c, NULL, 0), 0);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CLOSED);
    assert_flushed(p);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_int_equal(p->out[0].h.opcode, MROCE_OP_CLOSE_ACK);
    /* data after CLOSE: NACK CONN_CLOSED, nothing placed */
    uint8_t d[16] = {1};
    assert_int_equal(peer_write(p, 1, 0, 0, 0, 0, p->va, p->rkey, 0, 16, d, 16),
                     0);
    assert_int_equal(peer_mem_dirty(p), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_int_equal(p->out[0].h.opcode, MROCE_OP_NACK);
    assert_int_equal(p->out[0].h.nak_code, MROCE_NAK_CONN_CLOSED);
    assert_int_equal(peer_feed(p, &c, NULL, 0), 0); /* CLOSE again */
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_int_equal(p->out[0].h.opcode, MROCE_OP_CLOSE_ACK);
    assert_true(nothing_posted(p));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
        T(test_post_not_connected),
        T(test_post_bad_stream),
        T(test_post_bad_key),
        T(test_post_out_of_range),
        T(test_queue_full),
        T(test_cq_full),
        T(test_busy_objects),
        T(test_destroy_with_work),
        T(test_create_errors),
        T(test_connect_errors),
        T(test_connect_negotiates),
        T(test_path_ops),
        T(test_src_port_set),
        T(test_planes),
        T(test_planes_invalid),
        T(test_keys_unique),
        T(test_keys_redraw),
        T(test_reg_mr_errors),
        T(test_strings_never_null),
        T(test_disconnect),
        T(test_disconnect_unanswered),
        T(test_close_backoff),
        T(test_simultaneous_close),
        T(test_peer_closes),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
