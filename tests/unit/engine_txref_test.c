/* Zero-copy transmit (mroce_ctx_tx_ref, src/engine/txref.c): two
 * identical worlds, each two engines over a lossy test wire, run the same
 * work; one drives its engines through mroce_ctx_tx, the other through
 * mroce_ctx_tx_ref, gathering headers, payload and ICRC as a datapath
 * would. Every packet of the second world must equal the first's byte for
 * byte, with the same addressing and time: WRITE, SEND, READ responses,
 * retransmissions, ACKs and the rest. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "io/testwire/twloop.h"
#include "wire/wire.h"

#define LEN (96 * 1024)
#define MAX_LOG 40000

struct logged {
    uint64_t now;
    int from;
    struct mroce_pkt_meta meta;
    size_t len;
    uint8_t *buf;
};

/* One world: the pair, its memory, and (world 0) the log of what it sent
 * or (world 1) how far the comparison got. */
struct world {
    struct mroce_twloop_pair *p;
    uint8_t *src, *dst, *rbuf, *rd;
    struct mroce_mr *ms, *md, *mrb, *mrd;
    int done;
    struct logged *log;
    int n;
    const struct world *ref; /* world 1: the world it must equal */
};

/* What the gathering driver saw, over the whole test. */
static struct {
    const struct world *w; /* the world being driven by refs */
    uint64_t refs, whole, read_resp_refs;
} g;

/* True if [p, p + len) lies in one of the world's registered buffers. */
static int in_region(const struct world *w, const uint8_t *p, uint32_t len)
{
    const uint8_t *r[4] = {w->src, w->dst, w->rbuf, w->rd};
    for (int i = 0; i < 4; i++)
        if (p >= r[i] && p + len <= r[i] + LEN)
            return 1;
    return 0;
}

/* The datapath's part: headers, then the payload where it lies, then the
 * ICRC, gathered into buf before the engine is called again. */
static int ref_tx(void *ep, uint64_t now, uint8_t *buf, size_t cap,
                  struct mroce_pkt_meta *meta)
{
    struct mroce_tx_ref ref;
    int n = mroce_ctx_tx_ref(ep, now, buf, cap, meta, &ref);
    if (n <= 0)
        return n;
    if (!ref.payload_len) {
        assert_int_equal(ref.hdr_len, n);
        assert_null(ref.payload);
        g.whole++;
        return n;
    }
    assert_int_equal(ref.trailer_len, MROCE_TX_ICRC_LEN);
    assert_int_equal(ref.hdr_len + ref.payload_len + MROCE_TX_ICRC_LEN, n);
    assert_true(in_region(g.w, ref.payload, ref.payload_len));
    g.refs++;
    g.read_resp_refs += buf[1] == MROCE_OP_READ_RESP;
    memcpy(buf + ref.hdr_len, ref.payload, ref.payload_len);
    memcpy(buf + ref.hdr_len + ref.payload_len, ref.trailer, ref.trailer_len);
    return n;
}

static struct mroce_ep_ops ref_ops;

static void log_tap(void *ud, uint64_t now, int from,
                    const struct mroce_pkt_meta *meta, const uint8_t *buf,
                    size_t len)
{
    struct world *w = ud;
    assert_true(w->n < MAX_LOG);
    struct logged *l = &w->log[w->n++];
    *l = (struct logged){.now = now, .from = from, .meta = *meta, .len = len};
    l->buf = malloc(len);
    assert_non_null(l->buf);
    memcpy(l->buf, buf, len);
}

static void cmp_tap(void *ud, uint64_t now, int from,
                    const struct mroce_pkt_meta *meta, const uint8_t *buf,
                    size_t len)
{
    struct world *w = ud;
    assert_true(w->n < w->ref->n);
    const struct logged *l = &w->ref->log[w->n++];
    assert_int_equal(now, l->now);
    assert_int_equal(from, l->from);
    assert_memory_equal(meta, &l->meta, sizeof(*meta));
    assert_int_equal(len, l->len);
    assert_memory_equal(buf, l->buf, len);
}

static void world_cfg(struct mroce_twloop_pair_cfg *cfg, int transport)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->wire.seed = 11;
    cfg->wire.n_routes = 8;
    cfg->wire.rate_bps = 10000000000ull;
    cfg->wire.delay_ns = 2000;
    cfg->wire.jitter_ns = 3000;
    cfg->wire.loss = 0.03;
    cfg->wire.dup = 0.01;
    cfg->wire.reorder = 0.03;
    cfg->wire.reorder_ns = 20000;
    cfg->wire.capacity = 8192;
    for (int i = 0; i < 2; i++) {
        cfg->ctx[i].seed = 3 + (uint64_t)i;
        cfg->ctx[i].mtu = 1024;
        cfg->ctx[i].transport = (uint8_t)transport;
        cfg->conn[i].n_paths = 4;
        cfg->conn[i].min_rto_ns = 200000;
        cfg->conn[i].rocev2_timeout = 8; /* 1 ms: keep the test short */
    }
}

/* The memory both worlds use, one after the other: virtual addresses
 * travel in RETHs, so the worlds must use the same buffers. */
static uint8_t *bufs[4];

/* Registers buffer i, refilled, on `side`. */
static uint8_t *world_buf(struct world *w, int side, unsigned acc,
                          struct mroce_mr **mr, int i)
{
    uint8_t *b = bufs[i];
    for (int k = 0; k < LEN; k++)
        b[k] = (uint8_t)(i ? 0 : k * 31 + 7);
    assert_int_equal(mroce_reg_mr(w->p->pd[side], b, LEN, acc, mr), 0);
    return b;
}

static void world_open(struct world *w, int transport, int by_ref)
{
    struct mroce_twloop_pair_cfg cfg;
    world_cfg(&cfg, transport);
    if (by_ref) {
        ref_ops = mroce_ep_ctx_ops;
        ref_ops.tx = ref_tx;
        cfg.ops = &ref_ops;
    }
    assert_int_equal(mroce_twloop_pair_create(&cfg, &w->p), 0);
    unsigned rw = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE;
    w->src = world_buf(w, 0, MROCE_ACCESS_REMOTE_READ, &w->ms, 0);
    w->dst = world_buf(w, 1, rw, &w->md, 1);
    w->rbuf = world_buf(w, 1, MROCE_ACCESS_LOCAL_WRITE, &w->mrb, 2);
    w->rd = world_buf(w, 1, MROCE_ACCESS_LOCAL_WRITE, &w->mrd, 3);
    g.w = w;
}

/* WRITE, WRITE_IMM, SEND and a zero-length WRITE from side 0; a READ of
 * side 0's memory from side 1 (so side 0 sends READ responses). */
static void world_post(struct world *w)
{
    struct mroce_sge s = {(uint64_t)(uintptr_t)w->src, LEN,
                          mroce_mr_lkey(w->ms)};
    struct mroce_recv_wr rw = {
        .wr_id = 9,
        .sge = {(uint64_t)(uintptr_t)w->rbuf, LEN, mroce_mr_lkey(w->mrb)}};
    struct mroce_send_wr wr = {.wr_id = 1,
                               .sge = s,
                               .remote_addr = (uint64_t)(uintptr_t)w->dst,
                               .rkey = mroce_mr_rkey(w->md)};
    struct mroce_send_wr rd = {
        .wr_id = 3,
        .sge = {(uint64_t)(uintptr_t)w->rd, LEN, mroce_mr_lkey(w->mrd)},
        .remote_addr = (uint64_t)(uintptr_t)w->src,
        .rkey = mroce_mr_rkey(w->ms)};
    assert_int_equal(mroce_post_recv(w->p->conn[1], &rw), 0);
    rw.wr_id = 10; /* for the WRITE_IMM */
    assert_int_equal(mroce_post_recv(w->p->conn[1], &rw), 0);
    assert_int_equal(mroce_post_write(w->p->conn[0], &wr), 0);
    wr.wr_id = 2;
    assert_int_equal(mroce_post_send(w->p->conn[0], &wr), 0);
    assert_int_equal(mroce_post_read(w->p->conn[1], &rd), 0);
    wr.wr_id = 4;
    wr.sge.length = LEN / 3;
    assert_int_equal(mroce_post_write_imm(w->p->conn[0], &wr), 0);
    wr.wr_id = 5;
    wr.sge.length = 0;
    assert_int_equal(mroce_post_write(w->p->conn[0], &wr), 0);
}

/* Every work request completed: 4 on side 0; on side 1 the two receives
 * (the SEND's, the WRITE_IMM's) and the READ. */
static int world_pred(struct mroce_twloop *loop, void *arg)
{
    (void)loop;
    struct world *w = arg;
    struct mroce_wc wc[8];
    for (int s = 0; s < 2; s++) {
        int n = mroce_poll_cq(w->p->cq[s], 8, wc);
        for (int i = 0; i < n; i++) {
            assert_int_equal(wc[i].status, MROCE_WC_SUCCESS);
            w->done++;
        }
    }
    return w->done == 7;
}

static void world_run(struct world *w)
{
    world_post(w);
    int rc = mroce_twloop_run_until(w->p->loop, world_pred, w, 2000000000ull);
    assert_int_equal(rc, MROCE_TWLOOP_DONE);
    assert_memory_equal(w->src, w->dst, LEN);
    assert_memory_equal(w->src, w->rbuf, LEN);
    assert_memory_equal(w->src, w->rd, LEN);
}

static void world_close(struct world *w)
{
    mroce_twloop_pair_destroy(w->p);
    for (int i = 0; w->log && i < w->n; i++)
        free(w->log[i].buf);
    free(w->log);
}

/* Data packets of world 0's log with this opcode; `retx`: only those
 * flagged as retransmissions. */
static int log_count(const struct world *w, uint8_t op, int retx)
{
    int n = 0;
    for (int i = 0; i < w->n; i++) {
        const uint8_t *b = w->log[i].buf;
        n += b[1] == op && (!retx || (b[0] & MROCE_HF_RETX));
    }
    return n;
}

/* Runs both worlds; returns world 0's retransmissions (side 0). */
static uint64_t run_both(int transport, struct world *a)
{
    struct world b = {0};
    memset(&g, 0, sizeof(g));
    world_open(a, transport, 0);
    a->log = calloc(MAX_LOG, sizeof(*a->log));
    assert_non_null(a->log);
    mroce_twloop_set_tap(a->p->loop, log_tap, a);
    world_run(a);
    world_open(&b, transport, 1);
    b.ref = a;
    mroce_twloop_set_tap(b.p->loop, cmp_tap, &b);
    world_run(&b);
    assert_int_equal(b.n, a->n);
    struct mroce_conn_counters c;
    mroce_conn_get_counters(a->p->conn[0], &c);
    world_close(&b);
    return c.retx_pkts;
}

static void test_metaroce_same_bytes(void **state)
{
    (void)state;
    struct world a = {0};
    uint64_t retx = run_both(MROCE_TRANSPORT_METAROCE, &a);
    /* every kind of packet was compared, data went by reference */
    assert_true(retx > 0);
    assert_true(log_count(&a, MROCE_OP_WRITE, 1) > 0);
    assert_true(log_count(&a, MROCE_OP_SEND, 0) > 0);
    assert_true(log_count(&a, MROCE_OP_WRITE_IMM, 0) > 0);
    assert_true(log_count(&a, MROCE_OP_READ_RESP, 0) > 0);
    assert_true(log_count(&a, MROCE_OP_ACK, 0) > 0);
    assert_true(g.read_resp_refs > 0);
    assert_true(g.whole > 0);
    /* all data packets but the zero-length WRITE went by reference */
    int data = log_count(&a, MROCE_OP_WRITE, 0) +
               log_count(&a, MROCE_OP_WRITE_IMM, 0) +
               log_count(&a, MROCE_OP_SEND, 0) +
               log_count(&a, MROCE_OP_READ_RESP, 0);
    assert_int_equal(g.refs, data - 1);
    print_message("%d packets equal, %llu by reference (%llu READ "
                  "responses), %d retransmitted WRITEs\n",
                  a.n, (unsigned long long)g.refs,
                  (unsigned long long)g.read_resp_refs,
                  log_count(&a, MROCE_OP_WRITE, 1));
    world_close(&a);
}

/* The RoCEv2 baseline answers tx_ref with whole packets. */
static void test_rocev2_whole(void **state)
{
    (void)state;
    struct world a = {0};
    run_both(MROCE_TRANSPORT_ROCEV2, &a);
    assert_int_equal(g.refs, 0);
    assert_int_equal(g.whole, a.n);
    world_close(&a);
}

static void test_small_buffer(void **state)
{
    (void)state;
    struct world w = {0};
    world_open(&w, MROCE_TRANSPORT_METAROCE, 0);
    uint8_t buf[64];
    struct mroce_pkt_meta meta;
    struct mroce_tx_ref ref;
    assert_int_equal(
        mroce_ctx_tx_ref(w.p->ctx[0], 0, buf, sizeof(buf), &meta, &ref),
        MROCE_ENOBUFS);
    assert_int_equal(ref.payload_len, 0);
    world_close(&w);
}

static int bufs_setup(void **state)
{
    (void)state;
    for (int i = 0; i < 4; i++)
        if (!(bufs[i] = malloc(LEN)))
            return -1;
    return 0;
}

static int bufs_teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 4; i++)
        free(bufs[i]);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metaroce_same_bytes),
        cmocka_unit_test(test_rocev2_whole),
        cmocka_unit_test(test_small_buffer),
    };
    return cmocka_run_group_tests(tests, bufs_setup, bufs_teardown);
}
