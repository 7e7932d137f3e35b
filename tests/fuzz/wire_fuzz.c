/* libFuzzer target for the header codec (tier 5, docs/spec.md section 3).
 *
 * Every input is used three ways:
 *  1. as a received UDP payload, as is and with a valid ICRC put over its
 *     last 4 bytes (so the checks after the CRC see arbitrary bytes too):
 *     mroce_wire_decode must return exactly the verdict of R-RX-1,
 *     computed here independently (own opcode table, own CRC32C from the
 *     polynomial); an accepted packet must re-encode to the same bytes
 *     (reserved bits, R-HDR-7, are the only thing allowed to differ: they
 *     are ignored on receipt and sent as zero), and its payload must lie
 *     inside the input;
 *  2. as header fields + payload for mroce_wire_encode into a buffer of a
 *     fuzzer-chosen size: errors as documented, never a byte past `cap`,
 *     and a successful encoding decodes back to the same fields;
 *  3. as a CRC32C buffer: the accelerated mroce_crc32c (three lanes joined
 *     by carry-less shifts) against a bitwise reference, whole and chained;
 *  4. an accepted ACKM's payload (section 3.15): mroce_ackm_check must give
 *     this file's verdict (length 4 + 48 count, count <= 32), every record
 *     mroce_ackm_get reads must be the bytes' fields, and mroce_ackm_put of
 *     those records must give back the payload (its reserved byte zeroed,
 *     the only thing allowed to differ).
 * Any mismatch aborts. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/ackm.h"
#include "wire/crc32c.h"
#include "wire/wire.h"
#include "fuzz/fuzz_rd.h"

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "wire_fuzz: %s:%d: check failed: %s\n", __FILE__,  \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* ---- an independent model of the format (spec R-HDR-4, R-HDR-5) ---- */

#define H_DXH 0x01
#define H_RETH 0x02
#define H_SNH 0x04
#define H_IMM 0x08
#define H_AKH 0x10
#define H_NKH 0x20
#define H_PAD 0x40 /* PROBE padding: zeros, ignored on receipt (R-VAL-8) */
#define H_PAYLOAD 0x80

struct model_op {
    uint8_t opcode, headers, hdr_len;
};

static const struct model_op model_ops[] = {
    {0x01, H_DXH | H_RETH | H_PAYLOAD, 48},
    {0x02, H_DXH | H_RETH | H_SNH | H_IMM | H_PAYLOAD, 56},
    {0x03, H_DXH | H_SNH | H_PAYLOAD, 40},
    {0x04, H_DXH | H_SNH | H_IMM | H_PAYLOAD, 44},
    {0x05, H_DXH | H_RETH, 48},
    {0x06, H_DXH | H_PAYLOAD, 36},
    {0x10, H_AKH, 68},
    {0x11, H_NKH, 32},
    {0x12, H_AKH | H_PAYLOAD, 68}, /* ACKM: path records as payload */
    {0x20, H_PAD, 68},
    {0x30, 0, 16},
    {0x31, 0, 16},
};
#define N_MODEL_OPS (sizeof(model_ops) / sizeof(model_ops[0]))

static const struct model_op *model_op(uint8_t opcode)
{
    for (size_t i = 0; i < N_MODEL_OPS; i++)
        if (model_ops[i].opcode == opcode)
            return &model_ops[i];
    return NULL;
}

/* CRC32C, reflected polynomial 0x82F63B78 (R-CRC-2), byte table built
 * here bit by bit from the polynomial. */
static uint32_t ref_crc32c(uint32_t crc, const uint8_t *p, size_t len)
{
    static uint32_t tab[256];
    if (!tab[1]) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
            tab[i] = c;
        }
    }
    crc = ~crc;
    while (len--)
        crc = (crc >> 8) ^ tab[(crc ^ *p++) & 0xFF];
    return ~crc;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* A sealed packet (byte 0 bit 0x2, R-AEAD-1) ends in a 16-byte tag that
 * the decoder does not check; any other in the 4-byte ICRC. */
static bool model_sealed(const uint8_t *buf)
{
    return buf[0] & 0x2;
}

static size_t model_trailer(const uint8_t *buf)
{
    return model_sealed(buf) ? 16 : 4;
}

/* R-RX-1, steps 1-6 in order. */
static int model_verdict(const uint8_t *buf, size_t len)
{
    if (len < 20)
        return MROCE_WIRE_ETRUNC;
    if (buf[0] >> 4 != 1)
        return MROCE_WIRE_EVERSION;
    const struct model_op *op = model_op(buf[1]);
    if (!op)
        return MROCE_WIRE_EOPCODE;
    size_t tl = model_trailer(buf);
    if (len < (size_t)op->hdr_len + tl)
        return MROCE_WIRE_ETRUNC;
    if (!model_sealed(buf) &&
        ref_crc32c(0, buf, len - 4) != get32(buf + len - 4))
        return MROCE_WIRE_ECRC;
    if (len - tl > op->hdr_len && !(op->headers & H_PAYLOAD))
        return MROCE_WIRE_EPAYLOAD;
    return MROCE_WIRE_OK;
}

/* The decoded fields a packet of this header set carries; the rest must
 * be zero after decode. A sealed packet keeps its SEAL and key phase
 * bits (R-AEAD-1); the DXH's protection byte is decoded as it is. */
static void model_mask(struct mroce_hdr *h, uint8_t headers, bool sealed)
{
    struct mroce_hdr m = {0};
    m.opcode = h->opcode;
    m.flags = h->flags & (sealed ? 0xF : MROCE_HF_MASK);
    m.path = h->path;
    m.conn = h->conn;
    m.psn = h->psn;
    m.ts = h->ts;
    if (headers & (H_DXH | H_NKH)) {
        m.dsn = h->dsn;
        m.stream = h->stream;
        m.msn = h->msn;
    }
    if (headers & H_DXH) {
        m.msg_len = h->msg_len;
        m.offset = h->offset;
        m.prot = h->prot;
    }
    if (headers & H_RETH) {
        m.va = h->va;
        m.rkey = h->rkey;
    }
    if (headers & H_SNH)
        m.ssn = h->ssn;
    if (headers & H_IMM)
        m.imm = h->imm;
    if (headers & H_AKH) {
        m.sack_high = h->sack_high;
        m.dsn_cum = h->dsn_cum;
        m.echo_ts = h->echo_ts;
        m.rate_mbps = h->rate_mbps;
        m.ce_count = h->ce_count;
        m.rx_count = h->rx_count;
        memcpy(m.sack, h->sack, sizeof(m.sack));
    }
    if (headers & H_NKH) {
        m.nak_code = h->nak_code;
        m.nak_info = h->nak_info;
    }
    m.payload = h->payload;
    m.payload_len = h->payload_len;
    *h = m;
}

static bool hdr_eq(const struct mroce_hdr *a, const struct mroce_hdr *b)
{
    return a->opcode == b->opcode && a->flags == b->flags &&
           a->prot == b->prot && a->path == b->path && a->conn == b->conn &&
           a->psn == b->psn && a->ts == b->ts && a->dsn == b->dsn &&
           a->stream == b->stream && a->msn == b->msn &&
           a->msg_len == b->msg_len && a->offset == b->offset &&
           a->va == b->va && a->rkey == b->rkey && a->ssn == b->ssn &&
           a->imm == b->imm && a->sack_high == b->sack_high &&
           a->dsn_cum == b->dsn_cum && a->echo_ts == b->echo_ts &&
           a->rate_mbps == b->rate_mbps && a->ce_count == b->ce_count &&
           a->rx_count == b->rx_count &&
           memcmp(a->sack, b->sack, sizeof(a->sack)) == 0 &&
           a->nak_code == b->nak_code && a->nak_info == b->nak_info &&
           a->payload_len == b->payload_len;
}

/* ---- 4. ACKM payload ---- */

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* Section 3.15: a 4-byte preamble (count, reserved, hold) and count
 * records of 48 bytes, at most 32. Returns the count or -1. */
static int model_ackm_count(const uint8_t *pay, uint32_t len)
{
    if (len < 4 || pay[0] > 32 || len != 4u + 48u * pay[0])
        return -1;
    return pay[0];
}

static void fuzz_ackm(const struct mroce_hdr *h)
{
    uint32_t hold = 0xA5A5A5A5u;
    int n = mroce_ackm_check(h, &hold);
    int want = model_ackm_count(h->payload, h->payload_len);
    CHECK(n == (want < 0 ? MROCE_WIRE_EPAYLOAD : want));
    if (n < 0) {
        CHECK(hold == 0xA5A5A5A5u);
        return;
    }
    CHECK(hold == 8u * get16(h->payload + 2)); /* units of 8 ns */
    struct mroce_ackm_rec recs[32];
    for (int i = 0; i < n; i++) {
        const uint8_t *q = h->payload + 4 + 48 * i;
        struct mroce_ackm_rec *r = &recs[i];
        mroce_ackm_get(h, (unsigned)i, r);
        CHECK(r->path == get16(q) && r->hold_ns == 8u * get16(q + 2));
        CHECK(r->sack_high == get32(q + 4) && r->echo_ts == get32(q + 8));
        CHECK(r->ce_count == get16(q + 12) && r->rx_count == get16(q + 14));
        for (int k = 0; k < 4; k++)
            CHECK(r->sack[k] == get64(q + 16 + 8 * k));
    }
    uint8_t *out = malloc(h->payload_len); /* exact: ASan sees overruns */
    CHECK(out);
    CHECK(mroce_ackm_put(out, hold, recs, (unsigned)n) == h->payload_len);
    CHECK(out[1] == 0);
    out[1] = h->payload[1];
    CHECK(memcmp(out, h->payload, h->payload_len) == 0);
    free(out);
}

/* ---- 1. decode, then re-encode ---- */

/* The input with its reserved fields cleared (R-HDR-7) and, if that
 * changed anything, its ICRC recomputed: what a conforming encoder sends
 * for the header the decoder saw. */
static void canonical(uint8_t *c, const uint8_t *buf, size_t len,
                      const struct model_op *op)
{
    memcpy(c, buf, len);
    c[0] &= 0xF0 | MROCE_HF_MASK;
    if (op->headers & H_DXH)
        c[16 + 6] = c[16 + 7] = 0;
    if (op->headers & H_NKH)
        c[16 + 7] = 0;
    if (op->headers & H_PAD) /* the encoder writes zeros */
        memset(c + 16, 0, (size_t)op->hdr_len - 16);
    if (memcmp(c, buf, len - 4) != 0)
        put32(c + len - 4, ref_crc32c(0, c, len - 4));
}

static void fuzz_decode(const uint8_t *buf, size_t len)
{
    struct mroce_hdr h;
    int err = mroce_wire_decode(buf, len, &h);
    CHECK(err == model_verdict(buf, len));
    if (err != MROCE_WIRE_OK)
        return;
    const struct model_op *op = model_op(buf[1]);
    CHECK(op && h.opcode == op->opcode);
    CHECK(mroce_wire_hdr_len(h.opcode) == op->hdr_len);
    /* the payload lies inside the input, right after the headers */
    size_t tl = model_trailer(buf);
    CHECK(h.payload == buf + op->hdr_len);
    CHECK((size_t)op->hdr_len + h.payload_len + tl == len);
    CHECK(h.payload >= buf && h.payload + h.payload_len <= buf + len - tl);
    struct mroce_hdr m = h;
    model_mask(&m, op->headers, model_sealed(buf));
    CHECK(hdr_eq(&m, &h)); /* fields the type lacks are zero */
    if (op->headers & H_DXH)
        CHECK(h.prot == buf[16 + 6]);
    if (h.opcode == MROCE_OP_ACKM)
        fuzz_ackm(&h);
    if (model_sealed(buf)) /* the encoder writes plain packets only */
        return;
    h.prot = 0; /* ignored on a plain packet (R-HDR-7); encoded as 0 */

    uint8_t *out = malloc(len);
    uint8_t *want = malloc(len);
    CHECK(out && want);
    int n = mroce_wire_encode(&h, h.payload, h.payload_len, out, len);
    CHECK(n >= 0 && (size_t)n == len);
    canonical(want, buf, len, op);
    CHECK(memcmp(out, want, len) == 0);

    struct mroce_hdr h2;
    CHECK(mroce_wire_decode(out, len, &h2) == MROCE_WIRE_OK);
    CHECK(hdr_eq(&h, &h2));
    CHECK(h2.payload == out + op->hdr_len);
    free(want);
    free(out);
}

/* ---- 2. encode from fuzzer-chosen fields ---- */

static void read_fields(struct rd *r, struct mroce_hdr *h)
{
    uint8_t sel = (uint8_t)rd_n(r, 1);
    /* mostly a valid opcode; sometimes any byte (unknown opcodes) */
    h->opcode =
        sel < 0xF0 ? model_ops[sel % N_MODEL_OPS].opcode : (uint8_t)rd_n(r, 1);
    h->flags = (uint8_t)rd_n(r, 1); /* reserved bits must not leak out */
    h->path = (uint16_t)rd_n(r, 2);
    h->conn = (uint32_t)rd_n(r, 4);
    h->psn = (uint32_t)rd_n(r, 4);
    h->ts = (uint32_t)rd_n(r, 4);
    h->dsn = (uint32_t)rd_n(r, 4);
    h->stream = (uint16_t)rd_n(r, 2);
    h->msn = (uint32_t)rd_n(r, 4);
    h->msg_len = (uint32_t)rd_n(r, 4);
    h->offset = (uint32_t)rd_n(r, 4);
    h->va = rd_n(r, 8);
    h->rkey = (uint32_t)rd_n(r, 4);
    h->ssn = (uint32_t)rd_n(r, 4);
    h->imm = (uint32_t)rd_n(r, 4);
    h->sack_high = (uint32_t)rd_n(r, 4);
    h->dsn_cum = (uint32_t)rd_n(r, 4);
    h->echo_ts = (uint32_t)rd_n(r, 4);
    h->rate_mbps = (uint32_t)rd_n(r, 4);
    h->ce_count = (uint16_t)rd_n(r, 2);
    h->rx_count = (uint16_t)rd_n(r, 2);
    for (int i = 0; i < 4; i++)
        h->sack[i] = rd_n(r, 8);
    h->nak_code = (uint8_t)rd_n(r, 1);
    h->nak_info = (uint32_t)rd_n(r, 4);
}

static void fuzz_encode(const uint8_t *data, size_t size)
{
    struct rd r = {data, size};
    struct mroce_hdr h = {0};
    read_fields(&r, &h);
    uint8_t cap_sel = (uint8_t)rd_n(&r, 1);
    uint16_t cap_raw = (uint16_t)rd_n(&r, 2);
    const uint8_t *payload = r.p;
    uint32_t plen = (uint32_t)r.n;
    /* garbage in the output pointer must not be trusted by the encoder */
    h.payload = (const uint8_t *)(uintptr_t)0x1;
    h.payload_len = 0xFFFFFFFFu;

    const struct model_op *op = model_op(h.opcode);
    size_t need = op ? (size_t)op->hdr_len + plen + 4 : 0;
    size_t cap = cap_sel < 0xC0 ? need : (size_t)cap_raw % (need + 64);
    uint8_t *buf = malloc(cap ? cap : 1); /* ASan: nothing past cap */
    CHECK(buf);
    int n = mroce_wire_encode(&h, payload, plen, buf, cap);
    if (!op) {
        CHECK(n == MROCE_WIRE_EOPCODE);
        free(buf);
        return;
    }
    bool bad_payload = plen && !(op->headers & H_PAYLOAD);
    bool no_room = cap < need;
    if (bad_payload || no_room) {
        CHECK((bad_payload && n == MROCE_WIRE_EPAYLOAD) ||
              (no_room && n == MROCE_WIRE_ENOSPC));
        free(buf);
        return;
    }
    CHECK(n >= 0 && (size_t)n == need);
    CHECK((buf[0] & 0x3) == 0 && buf[0] >> 4 == MROCE_WIRE_VERSION);
    struct mroce_hdr d;
    CHECK(mroce_wire_decode(buf, need, &d) == MROCE_WIRE_OK);
    struct mroce_hdr want = h;
    want.payload = buf + op->hdr_len;
    want.payload_len = plen;
    model_mask(&want, op->headers, false);
    CHECK(hdr_eq(&d, &want));
    CHECK(d.payload == buf + op->hdr_len);
    CHECK(plen == 0 || memcmp(d.payload, payload, plen) == 0);
    free(buf);
}

/* ---- 3. CRC32C against the bitwise reference ---- */

static void fuzz_crc(const uint8_t *data, size_t size)
{
    uint32_t want = ref_crc32c(0, data, size);
    CHECK(mroce_crc32c(0, data, size) == want);
    size_t cut = size ? data[0] % (size + 1) : 0;
    uint32_t a = mroce_crc32c(0, data, cut);
    CHECK(mroce_crc32c(a, data + cut, size - cut) == want);
    /* unaligned starts exercise the 8-byte loads */
    if (size > 3)
        CHECK(mroce_crc32c(0, data + 3, size - 3) ==
              ref_crc32c(0, data + 3, size - 3));
}

/* The table accessors take any byte. */
static void fuzz_names(uint8_t b)
{
    CHECK(mroce_wire_op_name(b) != NULL);
    CHECK(mroce_wire_nak_name(b) != NULL);
    const struct mroce_op_info *oi = mroce_wire_op_info(b);
    const struct model_op *op = model_op(b);
    CHECK(!oi == !op);
    CHECK(!oi || (oi->headers == op->headers && oi->hdr_len == op->hdr_len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input with a valid ICRC: reaches everything after R-RX-1 step 5. */
static void fuzz_decode_sealed(const uint8_t *data, size_t size)
{
    if (size < MROCE_ICRC_LEN)
        return;
    uint8_t *buf = malloc(size); /* exact size: ASan sees over-reads */
    CHECK(buf);
    memcpy(buf, data, size);
    put32(buf + size - 4, ref_crc32c(0, buf, size - 4));
    fuzz_decode(buf, size);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_decode(data, size);
    fuzz_decode_sealed(data, size);
    fuzz_encode(data, size);
    fuzz_crc(data, size);
    if (size)
        fuzz_names(data[size - 1]);
    return 0;
}
