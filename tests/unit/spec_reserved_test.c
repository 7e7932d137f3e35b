/* R-VER-4: the engine processes a packet whose reserved or defined-zero
 * fields are nonzero exactly as if they were zero: reserved flag bits and
 * the DXH reserved bytes on data, MTH psn and the ACKREQ/RETX flags on an
 * ACK (which is never acknowledged), the NKH reserved byte and `info` on a
 * fatal NACK, and MTH psn on a CLOSE. Each case also checks that nothing
 * was counted as a drop. The codec side of the same rule is checked on the
 * spec's negative vectors (spec_vectors_test). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "support/peer.h"

static int teardown(void **state)
{
    (void)state;
    peer_free_all();
    return 0;
}

/* Encodes h (+ payload), lets poke change the bytes, reseals the ICRC and
 * feeds the packet on h's path. */
static int feed_poked(struct peer *p, const struct mroce_hdr *h,
                      const void *payload, uint32_t len, size_t at,
                      uint8_t or_bits)
{
    uint8_t buf[PEER_PKT_MAX];
    size_t n = peer_encode(h, payload, len, buf);
    buf[at] |= or_bits;
    mroce_wire_seal(buf, n - MROCE_ICRC_LEN);
    struct mroce_pkt_meta m = peer_meta(p, h->path);
    return peer_rx_meta(p, &m, buf, n);
}

static struct mroce_hdr write_hdr(struct peer *p, uint32_t len)
{
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_WRITE, 1, 0);
    h.flags = MROCE_HF_ACKREQ;
    h.va = p->va;
    h.rkey = p->rkey;
    h.msg_len = len;
    return h;
}

/* Data: the reserved flag 0x1 (without SEAL, R-AEAD-1) and DXH bytes 6-7
 * nonzero, placed and ACKed. */
static void test_data_reserved_bits(void **state)
{
    (void)state;
    struct peer *p = peer_new(NULL);
    uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    struct mroce_hdr h = write_hdr(p, sizeof(data));
    assert_int_equal(feed_poked(p, &h, data, sizeof(data), 0, 0x1), 0);
    h.psn = 1;
    h.dsn = 1;
    h.msn = 1;
    h.va += sizeof(data);
    assert_int_equal(feed_poked(p, &h, data, sizeof(data), 16 + 6, 0xbe), 0);
    assert_memory_equal(p->mem, data, sizeof(data));
    assert_memory_equal(p->mem + sizeof(data), data, sizeof(data));
    peer_drain(p, NULL, 0);
    const struct peer_out *a = peer_find(p, MROCE_OP_ACK, 0);
    assert_non_null(a);
    assert_int_equal(a->h.dsn_cum, 2); /* both accepted */
    assert_int_equal(a->h.sack_high, 1);
    assert_true(mroce_sack_test(a->h.sack, 0) && mroce_sack_test(a->h.sack, 1));
    assert_int_equal(peer_drops(p), 0);
}

/* ACK: MTH psn nonzero and ACKREQ + RETX set: resolves the WRITE as
 * usual and is not itself acknowledged. */
static void test_ack_defined_zero(void **state)
{
    (void)state;
    struct peer *p = peer_new(NULL);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 5, 0, 64), 0);
    peer_drain(p, NULL, 0);
    const struct peer_out *w = peer_find(p, MROCE_OP_WRITE, 0);
    assert_non_null(w);
    struct mroce_hdr a = peer_hdr(p, MROCE_OP_ACK, w->h.path, 0xdeadbeef);
    a.flags = MROCE_HF_ACKREQ | MROCE_HF_RETX;
    a.sack_high = w->h.psn;
    a.dsn_cum = w->h.dsn + 1;
    a.echo_ts = w->h.ts;
    mroce_sack_set(a.sack, 0);
    assert_int_equal(peer_feed(p, &a, NULL, 0), 0);
    struct mroce_wc wc;
    assert_int_equal(peer_poll(p->scq, &wc, 1), 1);
    assert_int_equal(wc.wr_id, 5);
    assert_int_equal(wc.status, MROCE_WC_SUCCESS);
    peer_drain(p, NULL, 0);
    assert_int_equal(peer_count(p, MROCE_OP_ACK), 0);
    assert_int_equal(peer_count(p, MROCE_OP_PROBE), 0);
    assert_int_equal(peer_drops(p), 0);
}

/* Fatal NACK with the NKH reserved byte and info set: the same verdict as
 * without them (REM_ACCESS_ERR, ERROR). */
static void test_nack_reserved(void **state)
{
    (void)state;
    struct peer *p = peer_new(NULL);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 6, 0, 64), 0);
    peer_drain(p, NULL, 0);
    const struct peer_out *w = peer_find(p, MROCE_OP_WRITE, 0);
    assert_non_null(w);
    struct mroce_hdr n = peer_hdr(p, MROCE_OP_NACK, w->h.path, w->h.psn);
    n.dsn = w->h.dsn;
    n.stream = w->h.stream;
    n.msn = w->h.msn;
    n.nak_code = MROCE_NAK_REMOTE_ACCESS;
    n.nak_info = 0x12345678;
    assert_int_equal(feed_poked(p, &n, NULL, 0, 16 + 7, 0x5a), 0);
    struct mroce_wc wc;
    assert_int_equal(peer_poll(p->scq, &wc, 1), 1);
    assert_int_equal(wc.wr_id, 6);
    assert_int_equal(wc.status, MROCE_WC_REM_ACCESS_ERR);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_ERROR);
    assert_int_equal(peer_cnt(p).drop_stale, 0);
}

/* R-VAL-5: the MTH psn of a CLOSE is no longer defined zero but the
 * closer's next DSN: one outside the window (77 with W 64, the peer
 * having sent nothing) names nothing and is dropped, counted, unanswered;
 * the peer's true next DSN closes. */
static void test_close_defined_zero(void **state)
{
    (void)state;
    struct peer *p = peer_new(NULL);
    struct mroce_hdr c = peer_hdr(p, MROCE_OP_CLOSE, 0, 77);
    assert_int_equal(peer_feed(p, &c, NULL, 0), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CONNECTED);
    assert_int_equal(peer_cnt(p).drop_bad_close, 1);
    c.psn = p->dsn;
    assert_int_equal(peer_feed(p, &c, NULL, 0), 0);
    peer_drain(p, NULL, 0);
    assert_int_equal(peer_count(p, MROCE_OP_CLOSE_ACK), 1);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CLOSED);
    assert_int_equal(peer_drops(p), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_data_reserved_bits, teardown),
        cmocka_unit_test_teardown(test_ack_defined_zero, teardown),
        cmocka_unit_test_teardown(test_nack_reserved, teardown),
        cmocka_unit_test_teardown(test_close_defined_zero, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
