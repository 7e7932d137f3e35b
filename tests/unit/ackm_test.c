/* Unit tests for the ACKM payload codec (src/wire/ackm.[ch], docs/spec.md
 * section 3.15): round trips through mroce_wire_encode/decode with 0, 1
 * and 32 records, every malformed payload mroce_ackm_check must refuse,
 * the hold field's 8 ns unit and saturation, and the reserved preamble
 * byte. The byte vector of section 12.48 is checked in wire_test.
 * Decoder inputs are exact-size heap copies, so ASan sees any overread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/ackm.h"
#include "wire/aead.h"
#include "wire/wire.h"

#define PKT_MAX (MROCE_MTH_LEN + MROCE_AKH_LEN + 4 + 48 * 40 + MROCE_ICRC_LEN)

/* An ACK for path 3 of connection 0xC0FFEE, as 12.8's. */
static struct mroce_hdr ackm_hdr(void)
{
    struct mroce_hdr h = {.opcode = MROCE_OP_ACKM,
                          .path = 3,
                          .conn = 0x00c0ffee,
                          .psn = 1000,
                          .ts = 0x3ade8000,
                          .sack_high = 1000,
                          .dsn_cum = 0x000a1b2d,
                          .echo_ts = 0x075bcd15,
                          .rate_mbps = 50000,
                          .ce_count = 17,
                          .rx_count = 749,
                          .sack = {0xd020000000000000ull, 0, 0, 0}};
    return h;
}

/* Record i of a test ACKM: every field distinct and non-zero, holds in
 * 8 ns units below the maximum (so they travel exactly). */
static struct mroce_ackm_rec rec_of(unsigned i)
{
    struct mroce_ackm_rec r = {
        .path = (uint16_t)(4 + i),
        .hold_ns = 8u * (1u + 2047u * i),
        .sack_high = 0xfffffff0u + 3u * i, /* across the PSN wrap */
        .echo_ts = 0x075b0000u + 977u * i,
        .ce_count = (uint16_t)(i * 3),
        .rx_count = (uint16_t)(60000u + i),
        .sack = {0x8000000000000000ull | i, (uint64_t)i << 32, ~(uint64_t)i,
                 1ull << (i % 64)}};
    return r;
}

/* Encodes an ACKM with the given payload bytes into an exact-size heap
 * block and decodes it from there. Returns the block (free it). */
static uint8_t *encode_decode(const uint8_t *pay, uint32_t len,
                              struct mroce_hdr *out)
{
    struct mroce_hdr h = ackm_hdr();
    uint8_t tmp[PKT_MAX];
    int n = mroce_wire_encode(&h, pay, len, tmp, sizeof(tmp));
    assert_int_equal(n, MROCE_MTH_LEN + MROCE_AKH_LEN + len + MROCE_ICRC_LEN);
    uint8_t *pkt = malloc((size_t)n);
    assert_non_null(pkt);
    memcpy(pkt, tmp, (size_t)n);
    assert_int_equal(mroce_wire_decode(pkt, (size_t)n, out), MROCE_WIRE_OK);
    assert_int_equal(out->payload_len, len);
    return pkt;
}

static void expect_rec(const struct mroce_ackm_rec *got,
                       const struct mroce_ackm_rec *want)
{
    assert_int_equal(got->path, want->path);
    assert_int_equal(got->hold_ns, want->hold_ns);
    assert_int_equal(got->sack_high, want->sack_high);
    assert_int_equal(got->echo_ts, want->echo_ts);
    assert_int_equal(got->ce_count, want->ce_count);
    assert_int_equal(got->rx_count, want->rx_count);
    assert_memory_equal(got->sack, want->sack, sizeof(got->sack));
}

/* ---- round trips --------------------------------------------------------- */

/* n records and a hold of the MTH path: put, encode, decode, check, get
 * give back every field; the AKH is untouched by the payload. */
static void roundtrip(unsigned n, uint32_t hold_ns)
{
    static uint8_t pay[4 + 48 * MROCE_ACKM_MAX_RECS + 16];
    struct mroce_ackm_rec recs[MROCE_ACKM_MAX_RECS], r;
    struct mroce_hdr h, want = ackm_hdr();
    uint32_t hold = ~0u;
    for (unsigned i = 0; i < n; i++)
        recs[i] = rec_of(i);
    memset(pay, 0xa5, sizeof(pay));
    size_t len = mroce_ackm_put(pay, hold_ns, recs, n);
    assert_int_equal(len, 4 + 48 * n);
    assert_int_equal(mroce_ackm_len(n), len);
    for (size_t k = len; k < sizeof(pay); k++) /* nothing past len */
        assert_int_equal(pay[k], 0xa5);
    assert_int_equal(pay[0], n);
    assert_int_equal(pay[1], 0); /* reserved: sent as 0 */
    uint8_t *pkt = encode_decode(pay, (uint32_t)len, &h);
    assert_int_equal(h.opcode, MROCE_OP_ACKM);
    assert_int_equal(h.sack_high, want.sack_high);
    assert_int_equal(h.dsn_cum, want.dsn_cum);
    assert_int_equal(h.rate_mbps, want.rate_mbps);
    assert_memory_equal(h.sack, want.sack, sizeof(h.sack));
    assert_memory_equal(h.payload, pay, len);
    assert_int_equal(mroce_ackm_check(&h, &hold), (int)n);
    assert_int_equal(hold, hold_ns);
    for (unsigned i = 0; i < n; i++) {
        memset(&r, 0x5a, sizeof(r));
        mroce_ackm_get(&h, i, &r);
        expect_rec(&r, &recs[i]);
    }
    free(pkt);
}

static void test_roundtrip_0(void **state)
{
    (void)state;
    roundtrip(0, 0);
    roundtrip(0, 4096); /* n = 0: only the MTH path's acknowledgement */
}

static void test_roundtrip_1(void **state)
{
    (void)state;
    roundtrip(1, 0);
    roundtrip(1, 8);
}

static void test_roundtrip_32(void **state)
{
    (void)state;
    roundtrip(MROCE_ACKM_MAX_RECS, MROCE_ACKM_HOLD_MAX_NS);
    roundtrip(MROCE_ACKM_MAX_RECS - 1, 800);
}

/* Record i lies at payload offset 4 + 48 i, fields in the order of
 * section 3.15, big-endian. */
static void test_record_layout(void **state)
{
    (void)state;
    static const uint8_t want[48] = {
        0x12, 0x34, 0x00, 0x7d, 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04,
        0xab, 0xcd, 0xef, 0x01, 0x80, 0,    0,    0,    0,    0,    0,    0x01,
        0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,
        0,    0,    0,    0,    0x40, 0,    0,    0,    0,    0,    0,    0x02};
    struct mroce_ackm_rec recs[2] = {
        rec_of(0),
        {.path = 0x1234,
         .hold_ns = 1000,
         .sack_high = 0xdeadbeef,
         .echo_ts = 0x01020304,
         .ce_count = 0xabcd,
         .rx_count = 0xef01,
         .sack = {0x8000000000000001ull, 0, 0, 0x4000000000000002ull}}};
    uint8_t pay[4 + 2 * 48];
    assert_int_equal(mroce_ackm_put(pay, 1000, recs, 2), sizeof(pay));
    assert_memory_equal(pay, ((uint8_t[]){2, 0, 0x00, 0x7d}), 4);
    assert_memory_equal(pay + 4 + 48, want, 48);
}

/* ---- malformed payloads: R-ACKM-2 ---------------------------------------- */

/* mroce_ackm_check on an encoded ACKM whose payload is len bytes with
 * count byte `count` (len >= 1), the rest filled with records. */
static int check_raw(uint32_t len, uint8_t count)
{
    static uint8_t pay[4 + 48 * 40];
    struct mroce_hdr h;
    uint32_t hold = 0x5a5a5a5a;
    assert_true(len <= sizeof(pay));
    for (uint32_t k = 0; k < len; k++)
        pay[k] = (uint8_t)(k * 7 + 1);
    if (len)
        pay[0] = count;
    uint8_t *pkt = encode_decode(pay, len, &h);
    int rc = mroce_ackm_check(&h, &hold);
    if (rc < 0)
        assert_int_equal(hold, 0x5a5a5a5a); /* untouched on failure */
    free(pkt);
    return rc;
}

static void test_reject_length(void **state)
{
    (void)state;
    /* One byte more or less than 4 + 48 n, for the count n it names. */
    for (unsigned n = 0; n <= MROCE_ACKM_MAX_RECS; n++) {
        uint32_t good = 4 + 48 * n;
        assert_int_equal(check_raw(good, (uint8_t)n), (int)n);
        assert_int_equal(check_raw(good + 1, (uint8_t)n), MROCE_WIRE_EPAYLOAD);
        assert_int_equal(check_raw(good - 1, (uint8_t)n), MROCE_WIRE_EPAYLOAD);
        assert_int_equal(check_raw(good + 47, (uint8_t)n), MROCE_WIRE_EPAYLOAD);
    }
    /* Payloads of 1 to 3 bytes: shorter than the preamble. */
    for (uint32_t len = 1; len < 4; len++)
        assert_int_equal(check_raw(len, 0), MROCE_WIRE_EPAYLOAD);
}

/* The count must be the one the length gives, and at most 32. */
static void test_reject_count(void **state)
{
    (void)state;
    assert_int_equal(check_raw(4 + 48 * 2, 1), MROCE_WIRE_EPAYLOAD);
    assert_int_equal(check_raw(4 + 48 * 2, 3), MROCE_WIRE_EPAYLOAD);
    assert_int_equal(check_raw(4, 1), MROCE_WIRE_EPAYLOAD);
    assert_int_equal(check_raw(4 + 48, 0), MROCE_WIRE_EPAYLOAD);
    /* 33 records, length and count consistent: still too many. */
    assert_int_equal(check_raw(4 + 48 * 33, 33), MROCE_WIRE_EPAYLOAD);
    assert_int_equal(check_raw(4 + 48 * 34, 34), MROCE_WIRE_EPAYLOAD);
    assert_int_equal(check_raw(4, 255), MROCE_WIRE_EPAYLOAD);
}

/* Every payload length up to 34 records against every count byte: valid
 * exactly when the length is 4 + 48 count and count <= 32. */
static void test_reject_sweep(void **state)
{
    (void)state;
    for (uint32_t len = 1; len <= 4 + 48 * 34; len++) {
        for (unsigned c = 0; c < 256; c += (c < 40 ? 1 : 43)) {
            int want =
                len == 4 + 48 * c && c <= 32 ? (int)c : MROCE_WIRE_EPAYLOAD;
            if (check_raw(len, (uint8_t)c) != want)
                fail_msg("length %u count %u: want %d", len, c, want);
        }
    }
}

/* An ACK-length packet with opcode 0x12: the decoder accepts it (the
 * opcode allows a payload, of any length), the payload check does not. */
static void test_reject_no_payload(void **state)
{
    (void)state;
    struct mroce_hdr h;
    uint32_t hold = 7;
    uint8_t *pkt = encode_decode(NULL, 0, &h);
    assert_int_equal(mroce_wire_hdr_len(MROCE_OP_ACKM), 68);
    assert_int_equal(h.payload_len, 0);
    assert_int_equal(mroce_ackm_check(&h, &hold), MROCE_WIRE_EPAYLOAD);
    assert_int_equal(hold, 7);
    free(pkt);
    /* nor is a header without payload bytes read */
    h.payload = NULL;
    assert_int_equal(mroce_ackm_check(&h, &hold), MROCE_WIRE_EPAYLOAD);
}

/* ---- the hold field: R-ACKM-3 -------------------------------------------- */

struct hold_case {
    uint32_t ns;
    uint16_t units;
};

static const struct hold_case holds[] = {
    {0, 0},
    {7, 0}, /* rounds down: 8 ns units */
    {8, 1},
    {15, 1},
    {264, 33},
    {1000, 125},
    {524280, 0xffff}, /* the largest exact value */
    {524287, 0xffff},
    {524288, 0xffff}, /* saturates */
    {1000000, 0xffff},
    {UINT32_MAX, 0xffff},
};

static void test_hold(void **state)
{
    (void)state;
    assert_int_equal(MROCE_ACKM_HOLD_UNIT_NS, 8);
    assert_int_equal(MROCE_ACKM_HOLD_MAX_NS, 524280);
    for (size_t i = 0; i < sizeof(holds) / sizeof(holds[0]); i++) {
        struct mroce_ackm_rec rec = rec_of(1), got;
        struct mroce_hdr h;
        uint8_t pay[4 + 48];
        uint32_t hold;
        rec.hold_ns = holds[i].ns;
        mroce_ackm_put(pay, holds[i].ns, &rec, 1);
        uint16_t u = holds[i].units;
        assert_memory_equal(pay + 2, ((uint8_t[]){u >> 8, u & 0xff}), 2);
        assert_memory_equal(pay + 6, ((uint8_t[]){u >> 8, u & 0xff}), 2);
        uint8_t *pkt = encode_decode(pay, sizeof(pay), &h);
        assert_int_equal(mroce_ackm_check(&h, &hold), 1);
        assert_int_equal(hold, (uint32_t)u * 8);
        mroce_ackm_get(&h, 0, &got);
        assert_int_equal(got.hold_ns, (uint32_t)u * 8);
        free(pkt);
    }
}

/* ---- reserved byte and opcode -------------------------------------------- */

/* Preamble byte 1 is reserved: sent as 0, ignored on receipt. */
static void test_reserved_ignored(void **state)
{
    (void)state;
    struct mroce_ackm_rec recs[3] = {rec_of(0), rec_of(1), rec_of(2)}, r;
    uint8_t pay[4 + 3 * 48];
    memset(pay, 0xff, sizeof(pay));
    mroce_ackm_put(pay, 2048, recs, 3);
    assert_int_equal(pay[1], 0);
    for (unsigned v = 1; v < 256; v += 17) {
        struct mroce_hdr h;
        uint32_t hold;
        pay[1] = (uint8_t)v;
        uint8_t *pkt = encode_decode(pay, sizeof(pay), &h);
        assert_int_equal(mroce_ackm_check(&h, &hold), 3);
        assert_int_equal(hold, 2048);
        for (unsigned i = 0; i < 3; i++) {
            mroce_ackm_get(&h, i, &r);
            expect_rec(&r, &recs[i]);
        }
        free(pkt);
    }
}

/* Opcode 0x12 (R-ACKM-1): MTH + AKH, a payload allowed; a control packet
 * of the secure modes, nonce from the CSN (R-AEAD-4). */
static void test_opcode(void **state)
{
    (void)state;
    const struct mroce_op_info *oi = mroce_wire_op_info(0x12);
    assert_non_null(oi);
    assert_string_equal(oi->name, "ACKM");
    assert_int_equal(oi->headers, MROCE_H_AKH | MROCE_H_PAYLOAD);
    assert_int_equal(oi->hdr_len, MROCE_MTH_LEN + MROCE_AKH_LEN);
    assert_true(mroce_aead_is_ctl(0x12));
    assert_true(mroce_aead_is_ctl(MROCE_OP_ACK));
    assert_false(mroce_aead_is_ctl(MROCE_OP_PROBE));
    uint8_t mth[16] = {0x12, 0x12, 0, 3, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 5};
    assert_int_equal(mroce_aead_seq_off(mth), 12); /* the CSN in ts */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_0),
        cmocka_unit_test(test_roundtrip_1),
        cmocka_unit_test(test_roundtrip_32),
        cmocka_unit_test(test_record_layout),
        cmocka_unit_test(test_reject_length),
        cmocka_unit_test(test_reject_count),
        cmocka_unit_test(test_reject_sweep),
        cmocka_unit_test(test_reject_no_payload),
        cmocka_unit_test(test_hold),
        cmocka_unit_test(test_reserved_ignored),
        cmocka_unit_test(test_opcode),
    };
    return cmocka_run_group_tests_name("ackm", tests, NULL, NULL);
}
