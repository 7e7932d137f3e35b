/* The secure modes end to end (docs/spec.md section 3.14): two engines
 * over the lossy test wire (loss, duplication, reordering, jitter) move
 * every operation -- WRITE, WRITE_IMM, SEND, SEND_IMM, READ and a
 * zero-length WRITE -- in the authenticated and the encrypted mode; the
 * data must arrive exactly, every packet on the wire must be sealed (and
 * encrypted, or not, as the mode says), duplicates are refused as
 * replays, and nothing else is dropped. The same run through
 * mroce_ctx_tx_ref gives the same bytes (R-AEAD-10). Key updates every
 * few hundred packets do not disturb a transfer (R-AEAD-7). */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <mroce/mroce_crypto.h>

#include "engine/seal.h"
#include "io/testwire/twloop.h"
#include "wire/aead.h"

#define LEN (64 * 1024)
#define MAX_LOG 20000

struct logged {
    int from;
    size_t len;
    uint8_t *buf;
};

struct world {
    int mode;
    struct mroce_twloop_pair *p;
    uint8_t *src, *dst, *rbuf, *rbuf2, *rd;
    struct mroce_mr *ms, *md, *mrb, *mrb2, *mrd;
    int done;
    struct logged *log;
    int n;
    const struct world *ref; /* compare with this world's log */
    uint64_t refs, whole;    /* how the by-reference world's packets came */
};

static struct world *cur; /* the world the tx_ref driver belongs to */

/* The datapath's part of zero-copy transmit: gathers the packet. */
static int ref_tx(void *ep, uint64_t now, uint8_t *buf, size_t cap,
                  struct mroce_pkt_meta *meta)
{
    struct mroce_tx_ref ref;
    int n = mroce_ctx_tx_ref(ep, now, buf, cap, meta, &ref);
    if (n <= 0)
        return n;
    if (!ref.payload_len) {
        cur->whole++;
        return n;
    }
    assert_int_equal(ref.trailer_len, MROCE_TAG_LEN);
    assert_int_equal(ref.hdr_len + ref.payload_len + ref.trailer_len, n);
    cur->refs++;
    memcpy(buf + ref.hdr_len, ref.payload, ref.payload_len);
    memcpy(buf + ref.hdr_len + ref.payload_len, ref.trailer, ref.trailer_len);
    return n;
}

static struct mroce_ep_ops ref_ops;

static void log_tap(void *ud, uint64_t now, int from,
                    const struct mroce_pkt_meta *meta, const uint8_t *buf,
                    size_t len)
{
    (void)now;
    (void)meta;
    struct world *w = ud;
    if (w->ref) { /* compare */
        assert_true(w->n < w->ref->n);
        const struct logged *l = &w->ref->log[w->n++];
        assert_int_equal(from, l->from);
        assert_int_equal(len, l->len);
        assert_memory_equal(buf, l->buf, len);
        return;
    }
    assert_true(w->n < MAX_LOG);
    struct logged *l = &w->log[w->n++];
    *l = (struct logged){.from = from, .len = len, .buf = malloc(len)};
    assert_non_null(l->buf);
    memcpy(l->buf, buf, len);
}

static uint8_t *bufs[6];

static uint8_t *world_buf(struct world *w, int side, unsigned acc,
                          struct mroce_mr **mr, int i)
{
    uint8_t *b = bufs[i];
    for (int k = 0; k < LEN; k++)
        b[k] = (uint8_t)(i ? 0 : k * 131 + 17);
    assert_int_equal(mroce_reg_mr(w->p->pd[side], b, LEN, acc, mr), 0);
    return b;
}

static void world_open(struct world *w, int mode, bool by_ref, double loss,
                       double dup)
{
    struct mroce_twloop_pair_cfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.wire.seed = 21;
    cfg.wire.n_routes = 8;
    cfg.wire.rate_bps = 10000000000ull;
    cfg.wire.delay_ns = 2000;
    cfg.wire.jitter_ns = 2000;
    cfg.wire.loss = loss;
    cfg.wire.dup = dup;
    cfg.wire.reorder = dup;
    cfg.wire.reorder_ns = 10000;
    cfg.wire.capacity = 8192;
    for (int i = 0; i < 2; i++) {
        cfg.ctx[i].seed = 5 + (uint64_t)i;
        cfg.ctx[i].mtu = 1024;
        cfg.conn[i].n_paths = 4;
        cfg.conn[i].min_rto_ns = 200000;
    }
    cfg.sec_mode = mode;
    for (int i = 0; i < MROCE_SECRET_LEN; i++)
        cfg.secret[i] = (uint8_t)(i * 7 + 1);
    if (by_ref) {
        ref_ops = mroce_ep_ctx_ops;
        ref_ops.tx = ref_tx;
        cfg.ops = &ref_ops;
    }
    w->mode = mode;
    assert_int_equal(mroce_twloop_pair_create(&cfg, &w->p), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(mroce_conn_sec_mode(w->p->conn[i]), mode);
    unsigned rw = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE;
    w->src = world_buf(w, 0, MROCE_ACCESS_REMOTE_READ, &w->ms, 0);
    w->dst = world_buf(w, 1, rw, &w->md, 1);
    w->rbuf = world_buf(w, 1, MROCE_ACCESS_LOCAL_WRITE, &w->mrb, 2);
    w->rbuf2 = world_buf(w, 1, MROCE_ACCESS_LOCAL_WRITE, &w->mrb2, 3);
    w->rd = world_buf(w, 1, MROCE_ACCESS_LOCAL_WRITE, &w->mrd, 4);
    cur = w;
}

static void world_recv(struct world *w, uint64_t id, uint8_t *b,
                       struct mroce_mr *mr)
{
    struct mroce_recv_wr r = {
        .wr_id = id, .sge = {(uint64_t)(uintptr_t)b, LEN, mroce_mr_lkey(mr)}};
    assert_int_equal(mroce_post_recv(w->p->conn[1], &r), 0);
}

/* From side 0: WRITE, SEND, SEND_IMM, WRITE_IMM (a third), a zero-length
 * WRITE; from side 1: a READ of side 0's memory. */
static void world_post(struct world *w)
{
    struct mroce_conn *c = w->p->conn[0];
    struct mroce_send_wr wr = {
        .wr_id = 1,
        .sge = {(uint64_t)(uintptr_t)w->src, LEN, mroce_mr_lkey(w->ms)},
        .remote_addr = (uint64_t)(uintptr_t)w->dst,
        .rkey = mroce_mr_rkey(w->md),
        .imm = 0xC0DE};
    world_recv(w, 10, w->rbuf, w->mrb);
    world_recv(w, 11, w->rbuf2, w->mrb2);
    world_recv(w, 12, w->rbuf2, w->mrb2); /* the WRITE_IMM's */
    assert_int_equal(mroce_post_write(c, &wr), 0);
    wr.wr_id = 2;
    assert_int_equal(mroce_post_send(c, &wr), 0);
    wr.wr_id = 3;
    wr.sge.length = LEN / 2;
    assert_int_equal(mroce_post_send_imm(c, &wr), 0);
    wr.wr_id = 4;
    wr.sge.length = LEN / 3;
    assert_int_equal(mroce_post_write_imm(c, &wr), 0);
    wr.wr_id = 5;
    wr.sge.length = 0;
    assert_int_equal(mroce_post_write(c, &wr), 0);
    struct mroce_send_wr rd = {
        .wr_id = 6,
        .sge = {(uint64_t)(uintptr_t)w->rd, LEN, mroce_mr_lkey(w->mrd)},
        .remote_addr = (uint64_t)(uintptr_t)w->src,
        .rkey = mroce_mr_rkey(w->ms)};
    assert_int_equal(mroce_post_read(w->p->conn[1], &rd), 0);
}

/* 5 send completions on side 0; 3 receives and the READ on side 1. */
static int world_pred(struct mroce_twloop *loop, void *arg)
{
    (void)loop;
    struct world *w = arg;
    struct mroce_wc wc[8];
    for (int s = 0; s < 2; s++) {
        int n = mroce_poll_cq(w->p->cq[s], 8, wc);
        for (int i = 0; i < n; i++) {
            assert_int_equal(wc[i].status, MROCE_WC_SUCCESS);
            if (wc[i].has_imm)
                assert_int_equal(wc[i].imm, 0xC0DE);
            w->done++;
        }
    }
    return w->done == 9;
}

static void world_run(struct world *w)
{
    world_post(w);
    int rc = mroce_twloop_run_until(w->p->loop, world_pred, w, 5000000000ull);
    assert_int_equal(rc, MROCE_TWLOOP_DONE);
    assert_memory_equal(w->src, w->dst, LEN);
    assert_memory_equal(w->src, w->rbuf, LEN);
    /* the SEND_IMM's half, then the WRITE_IMM's receive (no data) */
    assert_memory_equal(w->src, w->rbuf2, LEN / 2);
    assert_memory_equal(w->src, w->rd, LEN);
}

static void world_close(struct world *w)
{
    mroce_twloop_pair_destroy(w->p);
    for (int i = 0; w->log && i < w->n; i++)
        free(w->log[i].buf);
    free(w->log);
}

static struct mroce_conn_counters cnt(const struct world *w, int side)
{
    struct mroce_conn_counters c;
    mroce_conn_get_counters(w->p->conn[side], &c);
    return c;
}

/* Every logged packet is sealed; a data packet's payload on the wire is
 * the source's bytes in the authenticated mode and never in the
 * encrypted one. Returns how many data packets with a payload. */
static int check_log(const struct world *w)
{
    int data = 0;
    for (int i = 0; i < w->n; i++) {
        const uint8_t *b = w->log[i].buf;
        size_t len = w->log[i].len;
        assert_true(b[0] & MROCE_HF_SEAL);
        size_t hl = mroce_wire_hdr_len(b[1]);
        const struct mroce_op_info *oi = mroce_wire_op_info(b[1]);
        if (oi->headers & MROCE_H_DXH)
            assert_int_equal(b[MROCE_DXH_PROT_OFF] & MROCE_PROT_ENC,
                             w->mode == MROCE_SEC_ENCRYPT);
        if (b[1] != MROCE_OP_WRITE || len <= hl + MROCE_TAG_LEN)
            continue;
        uint32_t off = (uint32_t)b[16 + 16] << 24 | (uint32_t)b[16 + 17] << 16 |
                       (uint32_t)b[16 + 18] << 8 | b[16 + 19];
        size_t plen = len - hl - MROCE_TAG_LEN;
        bool clear = memcmp(b + hl, w->src + off, plen) == 0;
        assert_int_equal(clear, w->mode == MROCE_SEC_AUTH);
        data++;
    }
    return data;
}

static void run_mode(int mode)
{
    struct world a = {0}, b = {0};
    world_open(&a, mode, false, 0.03, 0.02);
    a.log = calloc(MAX_LOG, sizeof(*a.log));
    assert_non_null(a.log);
    mroce_twloop_set_tap(a.p->loop, log_tap, &a);
    world_run(&a);
    assert_true(check_log(&a) > 50);
    struct mroce_conn_counters c0 = cnt(&a, 0), c1 = cnt(&a, 1);
    /* the wire duplicated packets: refused as replays, nothing else */
    assert_true(c0.drop_replay + c1.drop_replay > 0);
    assert_int_equal(c0.drop_bad_tag + c1.drop_bad_tag, 0);
    assert_int_equal(c0.drop_sec_mode + c1.drop_sec_mode, 0);
    assert_true(c0.retx_pkts > 0);
    print_message("mode %d: %d packets, %llu + %llu replays refused, %llu "
                  "retransmitted\n",
                  mode, a.n, (unsigned long long)c0.drop_replay,
                  (unsigned long long)c1.drop_replay,
                  (unsigned long long)c0.retx_pkts);
    /* the same world through mroce_ctx_tx_ref: the same bytes */
    world_open(&b, mode, true, 0.03, 0.02);
    b.ref = &a;
    mroce_twloop_set_tap(b.p->loop, log_tap, &b);
    world_run(&b);
    assert_int_equal(b.n, a.n);
    if (mode == MROCE_SEC_AUTH)
        assert_true(b.refs > 50); /* payloads by reference, tag behind */
    else
        assert_int_equal(b.refs, 0); /* ciphertext exists only in buf */
    world_close(&b);
    world_close(&a);
}

static void test_auth(void **state)
{
    (void)state;
    run_mode(MROCE_SEC_AUTH);
}

static void test_encrypt(void **state)
{
    (void)state;
    run_mode(MROCE_SEC_ENCRYPT);
}

/* R-AEAD-7: keys updated every 40 packets in both directions, over a
 * lossy, jittery wire without duplicates (a duplicate delayed past two
 * updates would count as a bad tag): exact data, every update followed by
 * the receiver, no packet refused. */
static void run_rekey(int mode)
{
    struct world w = {0};
    world_open(&w, mode, false, 0.02, 0);
    for (int i = 0; i < 2; i++)
        mroce_conn_aead_limit(w.p->conn[i], 40, 0);
    world_run(&w);
    struct mroce_conn_counters c0 = cnt(&w, 0), c1 = cnt(&w, 1);
    assert_true(c0.key_updates_tx >= 5);
    assert_true(c1.key_updates_tx >= 2);
    /* the receivers followed (the last update may have gone unused) */
    assert_true(c1.key_updates_rx + 1 >= c0.key_updates_tx);
    assert_true(c0.key_updates_rx + 1 >= c1.key_updates_tx);
    assert_int_equal(c0.drop_bad_tag + c1.drop_bad_tag, 0);
    print_message("mode %d: %llu / %llu key updates\n", mode,
                  (unsigned long long)c0.key_updates_tx,
                  (unsigned long long)c1.key_updates_tx);
    world_close(&w);
}

static void test_rekey_auth(void **state)
{
    (void)state;
    run_rekey(MROCE_SEC_AUTH);
}

static void test_rekey_encrypt(void **state)
{
    (void)state;
    run_rekey(MROCE_SEC_ENCRYPT);
}

/* mroce_ctx_state_bytes counts the secure mode (sec_bytes): the
 * context's decrypt buffer (mtu 1024) and, per connection, its key
 * schedule, a 256-bit replay window per path (4 paths) and its key
 * objects (tx, rx, the next rx key: 3 before any update); and nothing
 * else differs from a plain connection. A forced key update on both
 * sides keeps the previous receive key too: one more. */
static void test_state_bytes(void **state)
{
    (void)state;
    struct world plain = {0}, sec = {0};
    world_open(&plain, MROCE_SEC_NONE, false, 0, 0);
    world_open(&sec, MROCE_SEC_ENCRYPT, false, 0, 0);
    const struct mroce_crypto *cr = mroce_crypto_default();
    struct mroce_state_bytes p, b;
    mroce_ctx_state_bytes(plain.p->ctx[0], &p);
    mroce_ctx_state_bytes(sec.p->ctx[0], &b);
    assert_int_equal(p.sec_bytes, 0); /* no provider, no buffer */
    assert_int_equal(b.total, b.conn_bytes + b.path_bytes + b.dsn_bytes +
                                  b.psn_bytes + b.ctx_bytes + b.sec_bytes);
    assert_int_equal(b.total - b.sec_bytes, p.total);
    uint64_t min = 1024 + 3 * cr->key_bytes + 4 * (4 + 32) + 2 * 32;
    assert_true(cr->key_bytes > 0);
    assert_true(b.sec_bytes >= min);
    assert_true(b.sec_bytes < min + 512); /* nothing large missed */
    for (int i = 0; i < 2; i++)
        mroce_conn_aead_limit(sec.p->conn[i], 40, 0);
    world_run(&sec);
    struct mroce_state_bytes a;
    mroce_ctx_state_bytes(sec.p->ctx[0], &a);
    assert_true(cnt(&sec, 0).key_updates_rx > 0);
    assert_int_equal(a.sec_bytes, b.sec_bytes + cr->key_bytes);
    world_close(&sec);
    world_close(&plain);
}

static int bufs_setup(void **state)
{
    (void)state;
    for (int i = 0; i < 6; i++)
        if (!(bufs[i] = malloc(LEN)))
            return -1;
    return 0;
}

static int bufs_teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 6; i++)
        free(bufs[i]);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auth),
        cmocka_unit_test(test_encrypt),
        cmocka_unit_test(test_rekey_auth),
        cmocka_unit_test(test_rekey_encrypt),
        cmocka_unit_test(test_state_bytes),
    };
    return cmocka_run_group_tests(tests, bufs_setup, bufs_teardown);
}
