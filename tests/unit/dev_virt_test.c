/* Unit tests for payload-free memory regions (mroce_reg_mr_virt,
 * src/device/mr.c): both engines move the bytes of WRITE, SEND and READ
 * through the region's hooks and never touch its addresses; the offsets
 * and lengths the hooks see are those of the message; registration
 * refuses overlaps; a deregistered region is forgotten. The same holds
 * in the authenticated and encrypted modes, with the engine asked for
 * packets by copy or by reference (mroce_ctx_tx_ref): a payload-free
 * region's bytes are never sealed, encrypted or referenced in place. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce.h>
#include <mroce/mroce_crypto.h>

#include "io/testwire/twloop.h"

#define US 1000ull
#define MS 1000000ull
#define REGION 65536u
/* Addresses nothing is mapped at: the engines must never dereference a
 * payload-free region (a read or write there would crash the test). */
#define VA_SRC 0x100000000000ull
#define VA_DST 0x200000000000ull

/* A region's view: what fill produced and what place received. */
struct vreg {
    uint8_t seed;
    uint8_t got[REGION];   /* bytes placed */
    uint8_t count[REGION]; /* times each byte was placed */
    uint64_t fills, places;
};

static uint8_t pat(uint8_t seed, uint64_t off)
{
    return (uint8_t)(off * 31 + seed + (off >> 8));
}

static void v_fill(void *ud, uint64_t off, uint8_t *dst, size_t len)
{
    struct vreg *r = ud;
    assert_true(off + len <= REGION);
    for (size_t i = 0; i < len; i++)
        dst[i] = pat(r->seed, off + i);
    r->fills++;
}

static void v_place(void *ud, uint64_t off, const uint8_t *src, size_t len)
{
    struct vreg *r = ud;
    assert_true(off + len <= REGION);
    for (size_t i = 0; i < len; i++) {
        r->got[off + i] = src[i];
        r->count[off + i]++;
    }
    r->places++;
}

struct env {
    struct mroce_twloop_pair *p;
    struct vreg src, dst;
    struct mroce_mr *smr, *dmr;
};

/* A datapath that takes references (mroce_ctx_tx_ref) and gathers the
 * packet: a reference into a payload-free region would crash here. */
static int ref_tx(void *ep, uint64_t now, uint8_t *buf, size_t cap,
                  struct mroce_pkt_meta *meta)
{
    struct mroce_tx_ref ref;
    int n = mroce_ctx_tx_ref(ep, now, buf, cap, meta, &ref);
    if (n <= 0 || !ref.payload_len)
        return n;
    memcpy(buf + ref.hdr_len, ref.payload, ref.payload_len);
    memcpy(buf + ref.hdr_len + ref.payload_len, ref.trailer, ref.trailer_len);
    return n;
}

static struct mroce_ep_ops ref_ops;

/* sec_mode: MROCE_SEC_*; by_ref: the loop asks for packets by reference. */
static void env_open_sec(struct env *e, uint8_t transport, int sec_mode,
                         bool by_ref)
{
    struct mroce_twloop_pair_cfg c;
    memset(&c, 0, sizeof(c));
    c.wire.seed = 3;
    c.wire.delay_ns = 2 * US;
    for (int s = 0; s < 2; s++) {
        c.ctx[s].mtu = 1024;
        c.ctx[s].transport = transport;
        c.conn[s].n_paths = 4;
    }
    c.sec_mode = sec_mode;
    memset(c.secret, 0x5a, sizeof(c.secret));
    if (by_ref) {
        ref_ops = mroce_ep_ctx_ops;
        ref_ops.tx = ref_tx;
        c.ops = &ref_ops;
    }
    assert_int_equal(mroce_twloop_pair_create(&c, &e->p), 0);
    unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                   MROCE_ACCESS_REMOTE_READ;
    e->src.seed = 11;
    e->dst.seed = 77;
    struct mroce_mr_virt vs = {v_place, v_fill, &e->src};
    struct mroce_mr_virt vd = {v_place, v_fill, &e->dst};
    assert_int_equal(
        mroce_reg_mr_virt(e->p->pd[0], VA_SRC, REGION, acc, &vs, &e->smr), 0);
    assert_int_equal(
        mroce_reg_mr_virt(e->p->pd[1], VA_DST, REGION, acc, &vd, &e->dmr), 0);
}

static void env_open(struct env *e, uint8_t transport)
{
    env_open_sec(e, transport, MROCE_SEC_NONE, false);
}

struct want_wc {
    struct mroce_cq *cq;
    struct mroce_wc wc;
    int n;
};

static int pred_wc(struct mroce_twloop *loop, void *arg)
{
    (void)loop;
    struct want_wc *w = arg;
    if (w->n == 0)
        w->n = mroce_poll_cq(w->cq, 1, &w->wc);
    return w->n > 0;
}

static struct mroce_wc wait_wc(struct env *e, int side)
{
    struct want_wc w = {.cq = e->p->cq[side]};
    assert_int_equal(mroce_twloop_run_until(e->p->loop, pred_wc, &w, 100 * MS),
                     MROCE_TWLOOP_DONE);
    assert_int_equal(w.wc.status, MROCE_WC_SUCCESS);
    return w.wc;
}

/* dst[at, at+len) holds src's bytes from sat, each placed once, and no
 * other byte was placed. */
static void check_placed(const struct vreg *dst, uint64_t at, uint8_t seed,
                         uint64_t sat, size_t len)
{
    for (uint64_t i = 0; i < REGION; i++) {
        bool in = i >= at && i < at + len;
        assert_int_equal(dst->count[i], in ? 1 : 0);
        if (in)
            assert_int_equal(dst->got[i], pat(seed, sat + (i - at)));
    }
}

static void run_write_send_sec(uint8_t transport, int sec_mode, bool by_ref)
{
    struct env *e = calloc(1, sizeof(*e));
    env_open_sec(e, transport, sec_mode, by_ref);
    struct mroce_send_wr wr = {
        .wr_id = 1,
        .sge = {VA_SRC + 300, 5000, mroce_mr_lkey(e->smr)},
        .remote_addr = VA_DST + 1000,
        .rkey = mroce_mr_rkey(e->dmr)};
    assert_int_equal(mroce_post_write(e->p->conn[0], &wr), 0);
    wait_wc(e, 0);
    check_placed(&e->dst, 1000, e->src.seed, 300, 5000);
    assert_true(e->src.fills >= 5); /* 1024-byte packets */
    memset(e->dst.count, 0, sizeof(e->dst.count));
    struct mroce_recv_wr rw = {
        .wr_id = 2, .sge = {VA_DST + 20000, 3000, mroce_mr_lkey(e->dmr)}};
    assert_int_equal(mroce_post_recv(e->p->conn[1], &rw), 0);
    wr.sge.addr = VA_SRC + 7;
    wr.sge.length = 2500;
    assert_int_equal(mroce_post_send(e->p->conn[0], &wr), 0);
    struct mroce_wc wc = wait_wc(e, 1);
    assert_int_equal(wc.byte_len, 2500);
    check_placed(&e->dst, 20000, e->src.seed, 7, 2500);
    mroce_twloop_pair_destroy(e->p);
    free(e);
}

static void run_write_send(uint8_t transport)
{
    run_write_send_sec(transport, MROCE_SEC_NONE, false);
}

static void test_metaroce(void **state)
{
    (void)state;
    run_write_send(MROCE_TRANSPORT_METAROCE);
}

static void test_rocev2(void **state)
{
    (void)state;
    run_write_send(MROCE_TRANSPORT_ROCEV2);
}

/* READ: the responder fills from its payload-free region, the requester
 * places into its own. */
static void run_read_sec(uint8_t transport, int sec_mode, bool by_ref)
{
    struct env *e = calloc(1, sizeof(*e));
    env_open_sec(e, transport, sec_mode, by_ref);
    struct mroce_send_wr wr = {
        .wr_id = 3,
        .sge = {VA_SRC + 64, 4100, mroce_mr_lkey(e->smr)},
        .remote_addr = VA_DST + 9,
        .rkey = mroce_mr_rkey(e->dmr)};
    assert_int_equal(mroce_post_read(e->p->conn[0], &wr), 0);
    wait_wc(e, 0);
    check_placed(&e->src, 64, e->dst.seed, 9, 4100);
    mroce_twloop_pair_destroy(e->p);
    free(e);
}

static void run_read(uint8_t transport)
{
    run_read_sec(transport, MROCE_SEC_NONE, false);
}

static void test_read(void **state)
{
    (void)state;
    run_read(MROCE_TRANSPORT_METAROCE);
    run_read(MROCE_TRANSPORT_ROCEV2);
}

/* The secure modes read the payload to seal or encrypt it: through the
 * region's fill hook, never at its address, whether the datapath copies
 * or takes references (a crash before the fix). */
static void test_secure(void **state)
{
    (void)state;
    if (!mroce_crypto_default())
        skip();
    int modes[] = {MROCE_SEC_AUTH, MROCE_SEC_ENCRYPT};
    for (int m = 0; m < 2; m++) {
        for (int by_ref = 0; by_ref < 2; by_ref++) {
            run_write_send_sec(MROCE_TRANSPORT_METAROCE, modes[m], by_ref);
            run_read_sec(MROCE_TRANSPORT_METAROCE, modes[m], by_ref);
        }
    }
}

static void test_register(void **state)
{
    (void)state;
    struct env *e = calloc(1, sizeof(*e));
    env_open(e, MROCE_TRANSPORT_METAROCE);
    struct mroce_mr_virt v = {v_place, v_fill, &e->src};
    struct mroce_mr *mr;
    unsigned acc = MROCE_ACCESS_LOCAL_WRITE;
    struct mroce_pd *pd = e->p->pd[0];
    /* overlaps with the source region, either end */
    assert_int_equal(
        mroce_reg_mr_virt(pd, VA_SRC + REGION - 1, 16, acc, &v, &mr),
        MROCE_EINVAL);
    assert_int_equal(mroce_reg_mr_virt(pd, VA_SRC - 8, 9, acc, &v, &mr),
                     MROCE_EINVAL);
    assert_int_equal(mroce_reg_mr_virt(pd, UINT64_MAX - 4, 16, acc, &v, &mr),
                     MROCE_EINVAL);
    struct mroce_mr_virt nohook = {v_place, NULL, NULL};
    assert_int_equal(mroce_reg_mr_virt(pd, 1ull << 40, 16, acc, &nohook, &mr),
                     MROCE_EINVAL);
    /* adjacent is fine; after deregistration the range is free again */
    assert_int_equal(mroce_reg_mr_virt(pd, VA_SRC + REGION, 16, acc, &v, &mr),
                     0);
    assert_int_equal(mroce_dereg_mr(mr), 0);
    assert_int_equal(mroce_dereg_mr(e->smr), 0);
    assert_int_equal(mroce_reg_mr_virt(pd, VA_SRC + 8, 16, acc, &v, &mr), 0);
    mroce_twloop_pair_destroy(e->p);
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metaroce), cmocka_unit_test(test_rocev2),
        cmocka_unit_test(test_read),     cmocka_unit_test(test_secure),
        cmocka_unit_test(test_register),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
