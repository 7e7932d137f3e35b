/* One API, two transports: the same program runs over MetaRoCE and over
 * the RoCEv2 baseline by changing mroce_ctx_attr.transport only. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "io/testwire/twloop.h"

#define LEN (256 * 1024)

struct run {
    struct mroce_twloop_pair *p;
    uint8_t *src, *dst, *rbuf, *rd;
    struct mroce_mr *ms, *md, *mrb, *mrd;
    int done;
};

static int run_pred(struct mroce_twloop *loop, void *arg)
{
    (void)loop;
    struct run *r = arg;
    struct mroce_wc wc[8];
    for (int s = 0; s < 2; s++) {
        int n = mroce_poll_cq(r->p->cq[s], 8, wc);
        for (int i = 0; i < n; i++) {
            assert_int_equal(wc[i].status, MROCE_WC_SUCCESS);
            r->done++;
        }
    }
    return r->done == 4; /* WRITE, SEND, its receive, READ */
}

static void run_open(struct run *r, int transport, double loss)
{
    struct mroce_twloop_pair_cfg cfg = {0};
    cfg.wire.seed = 5;
    cfg.wire.n_routes = 8;
    cfg.wire.rate_bps = 25000000000ull;
    cfg.wire.delay_ns = 2000;
    cfg.wire.loss = loss;
    cfg.wire.capacity = 8192;
    for (int i = 0; i < 2; i++) {
        cfg.ctx[i].seed = 7 + (uint64_t)i;
        cfg.ctx[i].transport = (uint8_t)transport;
        cfg.conn[i].rocev2_timeout = 8; /* 1 ms: keep the test short */
    }
    assert_int_equal(mroce_twloop_pair_create(&cfg, &r->p), 0);
    r->src = malloc(LEN);
    r->dst = calloc(1, LEN);
    r->rbuf = calloc(1, LEN);
    r->rd = calloc(1, LEN);
    for (int i = 0; i < LEN; i++)
        r->src[i] = (uint8_t)(i * 31 + 7);
    unsigned rw = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE;
    assert_int_equal(mroce_reg_mr(r->p->pd[0], r->src, LEN,
                                  MROCE_ACCESS_REMOTE_READ, &r->ms),
                     0);
    assert_int_equal(mroce_reg_mr(r->p->pd[1], r->dst, LEN, rw, &r->md), 0);
    assert_int_equal(mroce_reg_mr(r->p->pd[1], r->rbuf, LEN,
                                  MROCE_ACCESS_LOCAL_WRITE, &r->mrb),
                     0);
    assert_int_equal(mroce_reg_mr(r->p->pd[1], r->rd, LEN,
                                  MROCE_ACCESS_LOCAL_WRITE, &r->mrd),
                     0);
}

static void run_post(struct run *r)
{
    struct mroce_sge s = {(uint64_t)(uintptr_t)r->src, LEN,
                          mroce_mr_lkey(r->ms)};
    struct mroce_recv_wr rw = {
        .wr_id = 9,
        .sge = {(uint64_t)(uintptr_t)r->rbuf, LEN, mroce_mr_lkey(r->mrb)}};
    struct mroce_send_wr w = {.wr_id = 1,
                              .sge = s,
                              .remote_addr = (uint64_t)(uintptr_t)r->dst,
                              .rkey = mroce_mr_rkey(r->md)};
    struct mroce_send_wr rd = {
        .wr_id = 3,
        .sge = {(uint64_t)(uintptr_t)r->rd, LEN, mroce_mr_lkey(r->mrd)},
        .remote_addr = (uint64_t)(uintptr_t)r->src,
        .rkey = mroce_mr_rkey(r->ms)};
    assert_int_equal(mroce_post_recv(r->p->conn[1], &rw), 0);
    assert_int_equal(mroce_post_write(r->p->conn[0], &w), 0);
    w.wr_id = 2;
    assert_int_equal(mroce_post_send(r->p->conn[0], &w), 0);
    assert_int_equal(mroce_post_read(r->p->conn[1], &rd), 0);
}

static void run_close(struct run *r)
{
    mroce_twloop_pair_destroy(r->p);
    free(r->src);
    free(r->dst);
    free(r->rbuf);
    free(r->rd);
}

/* Moves the data, checks it, returns retransmitted packets of side 0. */
static uint64_t run_transfer(int transport, double loss)
{
    struct run r = {0};
    run_open(&r, transport, loss);
    run_post(&r);
    int rc = mroce_twloop_run_until(r.p->loop, run_pred, &r, 2000000000ull);
    assert_int_equal(rc, MROCE_TWLOOP_DONE);
    assert_memory_equal(r.src, r.dst, LEN);
    assert_memory_equal(r.src, r.rbuf, LEN);
    assert_memory_equal(r.src, r.rd, LEN);
    struct mroce_conn_counters c;
    mroce_conn_get_counters(r.p->conn[0], &c);
    run_close(&r);
    return c.retx_pkts;
}

static void test_both_transports_move_data(void **state)
{
    (void)state;
    run_transfer(MROCE_TRANSPORT_METAROCE, 0);
    run_transfer(MROCE_TRANSPORT_ROCEV2, 0);
}

/* At 1% loss go-back-N resends everything after each hole; selective
 * repeat resends about the lost packets only. */
static void test_rocev2_goes_back_n(void **state)
{
    (void)state;
    uint64_t meta = run_transfer(MROCE_TRANSPORT_METAROCE, 0.01);
    uint64_t roce = run_transfer(MROCE_TRANSPORT_ROCEV2, 0.01);
    print_message("retransmitted at 1%% loss: MetaRoCE %llu, RoCEv2 %llu\n",
                  (unsigned long long)meta, (unsigned long long)roce);
    assert_true(roce > 3 * meta);
}

static void test_transport_specific_calls(void **state)
{
    (void)state;
    struct run r = {0};
    run_open(&r, MROCE_TRANSPORT_ROCEV2, 0);
    struct mroce_path_info pi;
    assert_int_equal(mroce_path_query(r.p->conn[0], 0, &pi), MROCE_ENOENT);
    assert_int_equal(mroce_path_repath(r.p->conn[0], 0), MROCE_ENOENT);
    assert_int_equal(mroce_conn_disconnect(r.p->conn[0]), MROCE_EINVAL);
    struct mroce_conn_params par;
    mroce_conn_get_params(r.p->conn[0], &par);
    assert_int_equal(par.transport, MROCE_TRANSPORT_ROCEV2);
    assert_true(par.n_qps >= 1);
    run_close(&r);
}

static void test_mixed_transports_refused(void **state)
{
    (void)state;
    struct mroce_ctx_attr a = {
        .seed = 1, .addr = {.family = MROCE_AF_INET, .ip = {192, 0, 2, 1}}};
    struct mroce_ctx_attr b = a;
    b.transport = MROCE_TRANSPORT_ROCEV2;
    b.addr.ip[3] = 2;
    struct mroce_ctx *ca, *cb;
    assert_int_equal(mroce_ctx_open(&a, &ca), 0);
    assert_int_equal(mroce_ctx_open(&b, &cb), 0);
    struct mroce_pd *pa, *pb;
    struct mroce_cq *qa, *qb;
    assert_int_equal(mroce_pd_alloc(ca, &pa), 0);
    assert_int_equal(mroce_pd_alloc(cb, &pb), 0);
    assert_int_equal(mroce_cq_create(ca, 1024, &qa), 0);
    assert_int_equal(mroce_cq_create(cb, 1024, &qb), 0);
    struct mroce_conn_attr ata = {.send_cq = qa, .recv_cq = qa};
    struct mroce_conn_attr atb = {.send_cq = qb, .recv_cq = qb};
    struct mroce_conn *x, *y;
    assert_int_equal(mroce_conn_create(pa, &ata, &x), 0);
    assert_int_equal(mroce_conn_create(pb, &atb, &y), 0);
    struct mroce_conn_params px, py;
    mroce_conn_get_params(x, &px);
    mroce_conn_get_params(y, &py);
    assert_int_equal(mroce_conn_connect(x, &py), MROCE_EINVAL);
    assert_int_equal(mroce_conn_connect(y, &px), MROCE_EINVAL);
    struct mroce_ctx_attr bad = a;
    bad.transport = 7;
    struct mroce_ctx *cz;
    assert_int_equal(mroce_ctx_open(&bad, &cz), MROCE_EINVAL);
    mroce_ctx_close(ca);
    mroce_ctx_close(cb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_transports_move_data),
        cmocka_unit_test(test_rocev2_goes_back_n),
        cmocka_unit_test(test_transport_specific_calls),
        cmocka_unit_test(test_mixed_transports_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
