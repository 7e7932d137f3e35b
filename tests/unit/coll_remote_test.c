/* The collectives with one local rank per communicator: N communicators
 * made with mroce_coll_comm_create_over, each holding one rank and seeing
 * the others only through their buffer descriptors, as N processes would.
 * They run together over the in-process test wire; every rank's result
 * must be exact, a late rank must not matter, and a wrong rkey in a
 * descriptor must end the collective with a clean error. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "coll/allgather.h"
#include "coll/allreduce.h"
#include "coll/alltoall.h"
#include "coll/pattern.h"
#include "io/testwire/twloop.h"

#define MAX_N 8
#define QD 64

enum op { OP_AR, OP_A2A, OP_AG };

struct half {
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    struct mroce_coll_comm *comm;
    struct mroce_conn *conn[MAX_N];
    void *coll; /* the running collective */
    int rc;     /* its last progress result */
};

struct world {
    int n;
    uint16_t ch;
    uint8_t transport;
    size_t bytes;
    struct half h[MAX_N];
    struct mroce_addr addr[MAX_N];
    struct mroce_tw *tw;
    struct mroce_twloop *loop;
    int op;
    int want_fail; /* stop once this many halves failed [1] */
};

static void half_open(struct world *w, int r)
{
    struct half *h = &w->h[r];
    w->addr[r] = (struct mroce_addr){.family = MROCE_AF_INET,
                                     .ip = {10, 0, 1, (uint8_t)(r + 1)}};
    struct mroce_ctx_attr ca = {.deterministic = 1,
                                .seed = 77 + (uint64_t)r,
                                .addr = w->addr[r],
                                .transport = w->transport};
    assert_int_equal(mroce_ctx_open(&ca, &h->ctx), 0);
    assert_int_equal(mroce_pd_alloc(h->ctx, &h->pd), 0);
    uint32_t depth = (uint32_t)(w->n - 1) * w->ch * 2 * QD + 64;
    assert_int_equal(mroce_cq_create(h->ctx, depth, &h->cq), 0);
    struct mroce_coll_over_cfg oc = {.n_ranks = w->n,
                                     .rank = r,
                                     .n_channels = w->ch,
                                     .buf_bytes = w->bytes,
                                     .ctx = h->ctx,
                                     .pd = h->pd,
                                     .cq = h->cq};
    assert_int_equal(mroce_coll_comm_create_over(&oc, &h->comm), 0);
}

static struct mroce_conn *conn_new(struct world *w, struct half *h)
{
    struct mroce_conn_attr at = {.send_cq = h->cq,
                                 .recv_cq = h->cq,
                                 .n_streams = w->ch,
                                 .sq_depth = QD,
                                 .rq_depth = QD,
                                 .rocev2_timeout = 8};
    struct mroce_conn *c;
    assert_int_equal(mroce_conn_create(h->pd, &at, &c), 0);
    return c;
}

/* What the CM does between two processes: swap parameters and the
 * buffer descriptors, connect both ends. */
static void pair_connect(struct world *w, int a, int b)
{
    struct half *x = &w->h[a], *y = &w->h[b];
    x->conn[b] = conn_new(w, x);
    y->conn[a] = conn_new(w, y);
    struct mroce_conn_params px, py;
    mroce_conn_get_params(x->conn[b], &px);
    mroce_conn_get_params(y->conn[a], &py);
    assert_int_equal(mroce_conn_connect(x->conn[b], &py), 0);
    assert_int_equal(mroce_conn_connect(y->conn[a], &px), 0);
    struct mroce_coll_buf_desc dx[MROCE_COLL_N_BUFS], dy[MROCE_COLL_N_BUFS];
    mroce_coll_comm_local_desc(x->comm, dx);
    mroce_coll_comm_local_desc(y->comm, dy);
    assert_int_equal(mroce_coll_comm_set_peer(x->comm, b, x->conn[b], dy), 0);
    assert_int_equal(mroce_coll_comm_set_peer(y->comm, a, y->conn[a], dx), 0);
}

static void world_open(struct world *w, int n, uint16_t ch, int transport,
                       size_t bytes, double loss)
{
    memset(w, 0, sizeof(*w));
    w->n = n;
    w->ch = ch;
    w->transport = (uint8_t)transport;
    w->bytes = bytes;
    struct mroce_ctx *ctxs[MAX_N];
    for (int r = 0; r < n; r++) {
        half_open(w, r);
        ctxs[r] = w->h[r].ctx;
    }
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            pair_connect(w, a, b);
    struct mroce_tw_cfg wc = {.seed = 5,
                              .n_routes = 8,
                              .rate_bps = 100000000000ull,
                              .delay_ns = 1000,
                              .loss = loss,
                              .capacity = 16384};
    assert_int_equal(mroce_tw_create(&wc, &w->tw), 0);
    assert_int_equal(
        mroce_twloop_create(w->tw, ctxs, w->addr, n, NULL, &w->loop), 0);
}

static void world_close(struct world *w)
{
    mroce_twloop_destroy(w->loop);
    mroce_tw_destroy(w->tw);
    for (int r = 0; r < w->n; r++) {
        mroce_coll_comm_destroy(w->h[r].comm); /* before its context */
        mroce_ctx_close(w->h[r].ctx);
    }
}

static int coll_progress(struct world *w, struct half *h)
{
    if (w->op == OP_AR)
        return mroce_coll_allreduce_progress(h->coll);
    if (w->op == OP_A2A)
        return mroce_coll_alltoall_progress(h->coll);
    return mroce_coll_allgather_progress(h->coll);
}

static void coll_free(struct world *w, struct half *h)
{
    if (w->op == OP_AR)
        mroce_coll_allreduce_free(h->coll);
    else if (w->op == OP_A2A)
        mroce_coll_alltoall_free(h->coll);
    else
        mroce_coll_allgather_free(h->coll);
    h->coll = NULL;
}

/* Done when every started half is done, or want_fail halves failed. */
static int all_pred(struct mroce_twloop *loop, void *arg)
{
    (void)loop;
    struct world *w = arg;
    int done = 1, failed = 0;
    for (int r = 0; r < w->n; r++) {
        struct half *h = &w->h[r];
        if (h->coll && h->rc == 0)
            h->rc = coll_progress(w, h);
        failed += h->rc < 0;
        done &= h->rc == 1;
    }
    return done || failed >= (w->want_fail ? w->want_fail : 1);
}

static int run_until(struct world *w, uint64_t span_ns)
{
    uint64_t t = mroce_twloop_now(w->loop) + span_ns;
    return mroce_twloop_run_until(w->loop, all_pred, w, t);
}

static int start_one(struct world *w, int r, const void *args)
{
    struct half *h = &w->h[r];
    struct mroce_coll_comm *c = h->comm;
    h->rc = 0;
    if (w->op == OP_AR)
        return mroce_coll_allreduce_start(
            c, args, (struct mroce_coll_allreduce **)&h->coll);
    if (w->op == OP_A2A)
        return mroce_coll_alltoall_start(
            c, args, (struct mroce_coll_alltoall **)&h->coll);
    return mroce_coll_allgather_start(c, args,
                                      (struct mroce_coll_allgather **)&h->coll);
}

/* Starts every half (the last one `late_ns` after the others, as a slow
 * process would) and runs until all are done; returns the first error. */
static int run_all(struct world *w, int op, const void *args, uint64_t late_ns)
{
    w->op = op;
    for (int r = 0; r < w->n; r++) {
        if (r == w->n - 1 && late_ns)
            assert_int_equal(run_until(w, late_ns), MROCE_TWLOOP_TIMEOUT);
        assert_int_equal(start_one(w, r, args), 0);
    }
    assert_int_equal(run_until(w, 5000000000ull), MROCE_TWLOOP_DONE);
    int err = 0;
    for (int r = 0; r < w->n; r++) {
        if (w->h[r].rc < 0 && !err)
            err = w->h[r].rc;
        coll_free(w, &w->h[r]);
    }
    return err;
}

static void poison(struct world *w)
{
    for (int r = 0; r < w->n; r++) {
        struct mroce_coll_rank *k = &w->h[r].comm->rank[r];
        memset(k->rbuf, 0xa5, w->bytes);
        memset(k->scratch, 0x5a, w->bytes);
    }
}

static void ar_case(int n, int transport, int flavour, double loss,
                    uint64_t late_ns)
{
    struct world w;
    size_t count = (size_t)n * 3000;
    world_open(&w, n, 2, transport, count * sizeof(float), loss);
    poison(&w);
    for (int r = 0; r < n; r++)
        mroce_coll_allreduce_fill(w.h[r].comm, count);
    struct mroce_coll_allreduce_args a = {
        .count = count, .slice_count = 1000, .flavour = flavour};
    assert_int_equal(run_all(&w, OP_AR, &a, late_ns), 0);
    for (int r = 0; r < n; r++)
        assert_int_equal(mroce_coll_allreduce_check(w.h[r].comm, count, NULL),
                         -1);
    world_close(&w);
}

static void test_allreduce(void **state)
{
    (void)state;
    static const int tr[] = {MROCE_TRANSPORT_METAROCE, MROCE_TRANSPORT_ROCEV2};
    for (int t = 0; t < 2; t++)
        for (int f = 0; f < 2; f++) {
            ar_case(4, tr[t], f, 0, 0);
            ar_case(3, tr[t], f, 0.01, 0);
        }
}

/* A rank that starts 200 us late: its peers' first messages find no
 * receive posted (RNR) and are retried. */
static void test_late_rank(void **state)
{
    (void)state;
    ar_case(4, MROCE_TRANSPORT_METAROCE, MROCE_COLL_WRITE_IMM, 0, 200000);
    ar_case(4, MROCE_TRANSPORT_METAROCE, MROCE_COLL_SEND, 0, 200000);
}

static void test_alltoall(void **state)
{
    (void)state;
    const size_t block = 20000;
    for (int s = 0; s < 2; s++) {
        struct world w;
        world_open(&w, 4, 2, MROCE_TRANSPORT_METAROCE, 4 * block, 0.01);
        poison(&w);
        for (int r = 0; r < 4; r++)
            mroce_coll_alltoall_fill(w.h[r].comm, block);
        struct mroce_coll_alltoall_args a = {.block = block, .schedule = s};
        assert_int_equal(run_all(&w, OP_A2A, &a, s ? 100000 : 0), 0);
        for (int r = 0; r < 4; r++)
            assert_int_equal(
                mroce_coll_alltoall_check(w.h[r].comm, block, NULL), -1);
        world_close(&w);
    }
}

/* Twice on the same communicators, the second time with odd slices. */
static void test_allgather(void **state)
{
    (void)state;
    const size_t bytes = 30001;
    struct world w;
    world_open(&w, 3, 3, MROCE_TRANSPORT_METAROCE, 3 * bytes, 0.01);
    struct mroce_coll_allgather_args a = {.bytes = bytes, .slice_bytes = 7000};
    for (int rep = 0; rep < 2; rep++) {
        poison(&w);
        for (int r = 0; r < 3; r++)
            mroce_coll_allgather_fill(w.h[r].comm, bytes);
        assert_int_equal(run_all(&w, OP_AG, &a, 0), 0);
        for (int r = 0; r < 3; r++)
            assert_int_equal(
                mroce_coll_allgather_check(w.h[r].comm, bytes, NULL), -1);
        a.slice_bytes = 4099;
    }
    world_close(&w);
}

/* Rank 1 is told a wrong rkey for rank 2's buffers: its writes are
 * refused by rank 2's engine (counted, nothing placed), rank 1's
 * completion says REM_ACCESS_ERR and the collective fails with EPROTO on
 * both ends instead of hanging or writing anywhere. */
static void test_wrong_rkey(void **state)
{
    (void)state;
    struct world w;
    size_t count = 4 * 1024;
    world_open(&w, 4, 1, MROCE_TRANSPORT_METAROCE, count * sizeof(float), 0);
    struct mroce_coll_buf_desc d[MROCE_COLL_N_BUFS];
    mroce_coll_comm_local_desc(w.h[2].comm, d);
    for (int i = 0; i < MROCE_COLL_N_BUFS; i++)
        d[i].rkey ^= 0x10001u;
    assert_int_equal(
        mroce_coll_comm_set_peer(w.h[1].comm, 2, w.h[1].conn[2], d), 0);
    poison(&w);
    for (int r = 0; r < 4; r++)
        mroce_coll_allreduce_fill(w.h[r].comm, count);
    struct mroce_coll_allreduce_args a = {.count = count};
    w.want_fail = 2;
    assert_int_equal(run_all(&w, OP_AR, &a, 0), MROCE_EPROTO);
    assert_int_equal(w.h[1].rc, MROCE_EPROTO); /* the writer */
    assert_int_equal(w.h[2].rc, MROCE_EPROTO); /* the target */
    assert_int_equal(w.h[1].comm->wc_status, MROCE_WC_REM_ACCESS_ERR);
    print_message("writer: %s, target: %s\n",
                  mroce_wc_status_str(w.h[1].comm->wc_status),
                  mroce_wc_status_str(w.h[2].comm->wc_status));
    struct mroce_conn_counters cc;
    mroce_conn_get_counters(w.h[2].conn[1], &cc);
    assert_true(cc.drop_bad_key > 0);
    const uint8_t *x = w.h[2].comm->rank[2].scratch;
    for (size_t i = 0; i < count * sizeof(float); i++)
        assert_int_equal(x[i], 0x5a); /* nothing placed */
    world_close(&w);
}

static void test_api_errors(void **state)
{
    (void)state;
    struct world w;
    world_open(&w, 3, 1, MROCE_TRANSPORT_METAROCE, 4096, 0);
    struct mroce_coll_comm *c = NULL;
    struct mroce_coll_over_cfg oc = {
        .n_ranks = 3, .rank = 3, .ctx = w.h[0].ctx, .pd = w.h[0].pd};
    oc.cq = w.h[0].cq;
    assert_int_equal(mroce_coll_comm_create_over(&oc, &c), MROCE_EINVAL);
    assert_null(c);
    oc.rank = 0;
    oc.pd = NULL;
    assert_int_equal(mroce_coll_comm_create_over(&oc, &c), MROCE_EINVAL);
    oc.pd = w.h[0].pd;
    assert_int_equal(mroce_coll_comm_create_over(&oc, &c), 0);
    /* Not connected yet: the collectives refuse to start. */
    struct mroce_coll_allreduce *ar;
    struct mroce_coll_allreduce_args a = {.count = 3};
    assert_int_equal(mroce_coll_allreduce_start(c, &a, &ar), MROCE_ESTATE);
    struct mroce_coll_allgather *ag;
    struct mroce_coll_allgather_args g = {.bytes = 16};
    assert_int_equal(mroce_coll_allgather_start(c, &g, &ag), MROCE_ESTATE);
    struct mroce_coll_buf_desc d[MROCE_COLL_N_BUFS];
    mroce_coll_comm_local_desc(w.h[1].comm, d);
    struct mroce_conn *cn = w.h[0].conn[1];
    assert_int_equal(mroce_coll_comm_set_peer(c, 0, cn, d), MROCE_EINVAL);
    assert_int_equal(mroce_coll_comm_set_peer(c, 1, NULL, d), MROCE_EINVAL);
    d[MROCE_COLL_RBUF].len = 100; /* shorter than our buffers */
    assert_int_equal(mroce_coll_comm_set_peer(c, 1, cn, d), MROCE_EINVAL);
    mroce_coll_comm_destroy(c);
    /* A complete one still refuses what drives every rank at once. */
    struct mroce_coll_pattern *p;
    struct mroce_coll_pattern_args pa = {.kind = MROCE_COLL_PERMUTATION,
                                         .bytes = 64};
    assert_int_equal(mroce_coll_pattern_start(w.h[0].comm, &pa, 0, &p),
                     MROCE_ESTATE);
    assert_int_equal(mroce_coll_comm_ready(w.h[0].comm), 1);
    world_close(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce),  cmocka_unit_test(test_late_rank),
        cmocka_unit_test(test_alltoall),   cmocka_unit_test(test_allgather),
        cmocka_unit_test(test_wrong_rkey), cmocka_unit_test(test_api_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
