/* libFuzzer target for the RoCEv2 codec (src/wire/roce.h).
 *
 * Every input is used four ways:
 *  1. as a received UDP payload, decoded without ICRC check (ip NULL) and
 *     with one (IP/UDP fields taken from the input's first bytes), as is
 *     and with a valid ICRC computed here independently (bitwise CRC-32
 *     over an own Annex A17 pseudo header): the verdict must match an own
 *     model of the checks; an accepted packet has its payload inside the
 *     input, fields the opcode lacks are zero, and it re-encodes to the
 *     same bytes up to what the decoder drops (BTH byte 4 reserved bits,
 *     pad contents and a pad count other than the one the encoder
 *     derives), and the re-encoding decodes to the same fields;
 *  2. as header fields + payload for roce_encode into a buffer of a
 *     fuzzer-chosen size: errors as documented, never a byte past `cap`
 *     (ASan), and a successful encoding decodes back (with ICRC check);
 *  3. roce_write_hdr alone into a short buffer;
 *  4. as a CRC-32 buffer: roce_crc32 (slicing by 8) against a bitwise
 *     reference, whole and chained, and roce_icrc against the reference.
 * Any mismatch aborts. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/roce.h"
#include "fuzz/fuzz_rd.h"

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "roce_wire_fuzz: %s:%d: check failed: %s\n",       \
                    __FILE__, __LINE__, #cond);                                \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* ---- an independent model of the format (IBTA ch. 9, Annex A17) ---- */

#define M_RETH 0x01
#define M_AETH 0x02
#define M_IMM 0x04
#define M_PAY 0x08
#define M_CNP 0x10

/* header set per opcode 0x00..0x11, and the CNP */
static const uint8_t model_hdrs[0x12] = {
    M_PAY,          M_PAY,          M_PAY,          M_PAY | M_IMM,
    M_PAY,          M_PAY | M_IMM,  M_PAY | M_RETH, M_PAY,
    M_PAY,          M_PAY | M_IMM,  M_PAY | M_RETH, M_PAY | M_RETH | M_IMM,
    M_RETH,         M_PAY | M_AETH, M_PAY,          M_PAY | M_AETH,
    M_PAY | M_AETH, M_AETH,
};

static bool model_known(uint8_t op)
{
    return op <= 0x11 || op == 0x81;
}

static uint8_t model_headers(uint8_t op)
{
    return op == 0x81 ? M_CNP : model_hdrs[op];
}

static size_t model_hdr_len(uint8_t op)
{
    uint8_t hs = model_headers(op);
    return 12 + (hs & M_RETH ? 16 : 0) + (hs & M_AETH ? 4 : 0) +
           (hs & M_IMM ? 4 : 0) + (hs & M_CNP ? 16 : 0);
}

/* IEEE CRC-32 bit by bit, without the final inversion handling of
 * callers: state in, state out (init ~0, final ~ done by the caller). */
static uint32_t ref_crc_raw(uint32_t c, const uint8_t *p, size_t n)
{
    while (n--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c;
}

static uint32_t ref_crc32(uint32_t crc, const uint8_t *p, size_t n)
{
    return ~ref_crc_raw(~crc, p, n);
}

static void be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* Annex A17 ICRC over pkt[0..len), written from the spec text. */
static uint32_t ref_icrc(const struct roce_ip *ip, const uint8_t *pkt,
                         size_t len)
{
    uint8_t ph[64];
    size_t n = 0;
    uint16_t udp_len = (uint16_t)(8 + len + 4);
    memset(ph, 0xFF, 8); /* LRH placeholder */
    n = 8;
    if (ip->src.family == MROCE_AF_INET) {
        ph[n++] = 0x45;
        ph[n++] = 0xFF; /* ToS */
        be16(ph + n, (uint16_t)(20 + udp_len));
        be16(ph + n + 2, ip->ip_id);
        be16(ph + n + 4, ip->ip_frag);
        n += 6;
        ph[n++] = 0xFF; /* TTL */
        ph[n++] = 17;
        ph[n++] = 0xFF; /* checksum */
        ph[n++] = 0xFF;
        memcpy(ph + n, ip->src.ip, 4);
        memcpy(ph + n + 4, ip->dst.ip, 4);
        n += 8;
    } else {
        ph[n++] = 0x6F;
        ph[n++] = 0xFF;
        ph[n++] = 0xFF;
        ph[n++] = 0xFF;
        be16(ph + n, udp_len);
        n += 2;
        ph[n++] = 17;
        ph[n++] = 0xFF;
        memcpy(ph + n, ip->src.ip, 16);
        memcpy(ph + n + 16, ip->dst.ip, 16);
        n += 32;
    }
    be16(ph + n, ip->src_port);
    be16(ph + n + 2, ip->dst_port);
    be16(ph + n + 4, udp_len);
    ph[n + 6] = ph[n + 7] = 0xFF;
    n += 8;
    uint32_t c = ref_crc_raw(0xFFFFFFFFu, ph, n);
    for (size_t i = 0; i < len; i++) {
        uint8_t b = i == 4 ? 0xFF : pkt[i]; /* BTH resv8a masked */
        c = ref_crc_raw(c, &b, 1);
    }
    return ~c;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static int model_verdict(const struct roce_ip *ip, const uint8_t *b, size_t len)
{
    if (len < 16)
        return ROCE_WIRE_ETRUNC;
    if ((b[1] & 0xF) != 0)
        return ROCE_WIRE_EVERSION;
    if (!model_known(b[0]))
        return ROCE_WIRE_EOPCODE;
    size_t pad = (b[1] >> 4) & 3;
    size_t hl = model_hdr_len(b[0]);
    if (len < hl + pad + 4)
        return ROCE_WIRE_ETRUNC;
    if (ip && ref_icrc(ip, b, len - 4) != le32(b + len - 4))
        return ROCE_WIRE_ECRC;
    if (len - 4 > hl && !(model_headers(b[0]) & M_PAY))
        return ROCE_WIRE_EPAYLOAD;
    return ROCE_WIRE_OK;
}

static bool hdr_eq(const struct roce_hdr *a, const struct roce_hdr *b)
{
    return a->opcode == b->opcode && a->se == b->se && a->mig == b->mig &&
           a->tver == b->tver && a->pkey == b->pkey && a->fecn == b->fecn &&
           a->becn == b->becn && a->dqpn == b->dqpn && a->ackreq == b->ackreq &&
           a->psn == b->psn && a->va == b->va && a->rkey == b->rkey &&
           a->dma_len == b->dma_len && a->syndrome == b->syndrome &&
           a->msn == b->msn && a->imm == b->imm &&
           a->payload_len == b->payload_len;
}

/* IP/UDP fields from up to 44 input bytes (zeros past the end). */
static void read_ip(const uint8_t *d, size_t n, struct roce_ip *ip)
{
    uint8_t b[44] = {0};
    if (n)
        memcpy(b, d, n < sizeof(b) ? n : sizeof(b));
    memset(ip, 0, sizeof(*ip));
    uint8_t fam = b[0] & 1 ? MROCE_AF_INET6 : MROCE_AF_INET;
    ip->src.family = ip->dst.family = fam;
    memcpy(ip->src.ip, b + 1, 16);
    memcpy(ip->dst.ip, b + 17, 16);
    if (fam == MROCE_AF_INET) { /* unused bytes stay zero */
        memset(ip->src.ip + 4, 0, 12);
        memset(ip->dst.ip + 4, 0, 12);
    }
    ip->src_port = (uint16_t)(b[33] << 8 | b[34]);
    ip->dst_port = b[35] & 1 ? (uint16_t)(b[36] << 8 | b[37]) : ROCE_UDP_PORT;
    ip->ip_id = (uint16_t)(b[38] << 8 | b[39]);
    ip->ip_frag = b[40] & 1 ? (uint16_t)(b[41] << 8 | b[42]) : ROCE_IP_DF;
}

/* ---- 1. decode, then re-encode ---- */

static void fuzz_decode(const struct roce_ip *ip, const uint8_t *buf,
                        size_t len)
{
    struct roce_hdr h;
    int err = roce_decode(ip, buf, len, &h);
    CHECK(err == model_verdict(ip, buf, len));
    if (err != ROCE_WIRE_OK)
        return;
    uint8_t op = buf[0];
    uint8_t hs = model_headers(op);
    size_t hl = model_hdr_len(op);
    const struct roce_op_info *oi = roce_op_info(op);
    CHECK(oi && oi->hdr_len == hl && oi->headers == hs);
    CHECK(h.opcode == op && h.tver == 0 && h.pad == ((buf[1] >> 4) & 3));
    CHECK(h.dqpn <= ROCE_QPN_MASK && h.psn <= ROCE_PSN_MASK &&
          h.msn <= ROCE_PSN_MASK);
    /* the payload lies inside the input, right after the headers */
    CHECK(h.payload == buf + hl);
    CHECK(hl + h.payload_len + h.pad + 4 == len);
    CHECK(h.payload + h.payload_len <= buf + len - 4);
    if (!(hs & M_RETH))
        CHECK(h.va == 0 && h.rkey == 0 && h.dma_len == 0);
    if (!(hs & M_AETH))
        CHECK(h.syndrome == 0 && h.msn == 0);
    if (!(hs & M_IMM))
        CHECK(h.imm == 0);
    if (!(hs & M_PAY))
        CHECK(h.payload_len == 0);

    /* re-encode: the encoder derives the pad from payload_len */
    size_t pad = -h.payload_len & 3u;
    size_t olen = hl + h.payload_len + pad + 4;
    uint8_t *out = malloc(olen);
    CHECK(out);
    struct roce_ip any_ip;
    const struct roce_ip *eip = ip;
    if (!eip) {
        read_ip(NULL, 0, &any_ip);
        eip = &any_ip;
    }
    int n = roce_encode(&h, eip, h.payload, h.payload_len, out, olen);
    CHECK(n >= 0 && (size_t)n == olen);
    /* same headers, except byte 1's pad and byte 4's reserved bits */
    CHECK(out[0] == buf[0]);
    CHECK((out[1] & 0xCF) == (buf[1] & 0xCF));
    CHECK(((out[1] >> 4) & 3) == pad);
    CHECK(memcmp(out + 2, buf + 2, 2) == 0);
    CHECK(out[4] == (buf[4] & 0xC0));
    CHECK(memcmp(out + 5, buf + 5, 3) == 0);
    CHECK(out[8] == (buf[8] & 0x80)); /* A bit; resv7 is sent as zero */
    /* a CNP's 16 reserved bytes are ignored on receipt, sent as zero */
    size_t keep = hs & M_CNP ? ROCE_BTH_LEN : hl;
    CHECK(memcmp(out + 9, buf + 9, keep - 9) == 0);
    bool same_rsvd = true;
    for (size_t i = keep; i < hl; i++) {
        CHECK(out[i] == 0);
        same_rsvd = same_rsvd && buf[i] == 0;
    }
    CHECK(h.payload_len == 0 ||
          memcmp(out + hl, h.payload, h.payload_len) == 0);
    for (size_t i = 0; i < pad; i++)
        CHECK(out[hl + h.payload_len + i] == 0);
    CHECK(le32(out + olen - 4) == ref_icrc(eip, out, olen - 4));
    /* with a valid ICRC, zero pad bytes and the derived pad, the whole
     * packet comes back byte for byte (byte 4 is outside the ICRC) */
    if (ip && pad == h.pad && olen == len && (buf[8] & 0x7F) == 0 &&
        same_rsvd) {
        bool zero_pad = true;
        for (size_t i = 0; i < pad; i++)
            zero_pad = zero_pad && buf[hl + h.payload_len + i] == 0;
        if (zero_pad)
            CHECK(memcmp(out + olen - 4, buf + len - 4, 4) == 0);
    }
    struct roce_hdr h2;
    CHECK(roce_decode(eip, out, olen, &h2) == ROCE_WIRE_OK);
    CHECK(hdr_eq(&h, &h2) && h2.pad == pad);
    CHECK(h2.payload == out + hl);
    free(out);
}

/* The input with a valid ICRC over the given IP fields. */
static void fuzz_decode_sealed(const struct roce_ip *ip, const uint8_t *data,
                               size_t size)
{
    if (size < 4)
        return;
    uint8_t *buf = malloc(size); /* exact size: ASan sees over-reads */
    CHECK(buf);
    memcpy(buf, data, size);
    uint32_t c = ref_icrc(ip, buf, size - 4);
    CHECK(roce_icrc(ip, buf, size - 4) == c);
    put_le32(buf + size - 4, c);
    fuzz_decode(ip, buf, size);
    fuzz_decode(NULL, buf, size);
    free(buf);
}

/* ---- 2. encode from fuzzer-chosen fields ---- */

static void fuzz_encode(const uint8_t *data, size_t size)
{
    struct rd r = {data, size};
    struct roce_hdr h = {0};
    uint8_t sel = (uint8_t)rd_n(&r, 1);
    h.opcode = sel < 0xE0 ? (uint8_t)(sel % 0x13 == 0x12 ? 0x81 : sel % 0x13)
                          : (uint8_t)rd_n(&r, 1);
    uint8_t bits = (uint8_t)rd_n(&r, 1);
    h.se = bits & 1;
    h.mig = (bits >> 1) & 1;
    h.fecn = (bits >> 2) & 1;
    h.becn = (bits >> 3) & 1;
    h.ackreq = (bits >> 4) & 1;
    h.pad = (uint8_t)rd_n(&r, 1); /* decode only: ignored by encode */
    h.tver = 0;
    h.pkey = (uint16_t)rd_n(&r, 2);
    h.dqpn = (uint32_t)rd_n(&r, 4) & ROCE_QPN_MASK;
    h.psn = (uint32_t)rd_n(&r, 4) & ROCE_PSN_MASK;
    h.va = rd_n(&r, 8);
    h.rkey = (uint32_t)rd_n(&r, 4);
    h.dma_len = (uint32_t)rd_n(&r, 4);
    h.syndrome = (uint8_t)rd_n(&r, 1);
    h.msn = (uint32_t)rd_n(&r, 4) & ROCE_PSN_MASK;
    h.imm = (uint32_t)rd_n(&r, 4);
    struct roce_ip ip;
    read_ip(r.p, r.n, &ip);
    uint8_t cap_sel = (uint8_t)rd_n(&r, 1);
    uint16_t cap_raw = (uint16_t)rd_n(&r, 2);
    const uint8_t *payload = r.p;
    uint32_t plen = (uint32_t)r.n;
    /* garbage in the output fields must not be trusted by the encoder */
    h.payload = (const uint8_t *)(uintptr_t)0x1;
    h.payload_len = 0xFFFFFFFFu;

    bool known = model_known(h.opcode);
    size_t need = known ? model_hdr_len(h.opcode) + plen + (-plen & 3u) + 4 : 0;
    size_t cap = cap_sel < 0xC0 ? need : (size_t)cap_raw % (need + 64);
    uint8_t *buf = malloc(cap ? cap : 1); /* ASan: nothing past cap */
    CHECK(buf);
    int n = roce_encode(&h, &ip, payload, plen, buf, cap);
    if (!known) {
        CHECK(n == ROCE_WIRE_EOPCODE);
        CHECK(roce_write_hdr(&h, plen, buf, cap) == ROCE_WIRE_EOPCODE);
        free(buf);
        return;
    }
    uint8_t hs = model_headers(h.opcode);
    bool bad_payload = plen && !(hs & M_PAY);
    bool no_room = cap < need;
    if (bad_payload || no_room) {
        CHECK((bad_payload && n == ROCE_WIRE_EPAYLOAD) ||
              (!bad_payload && no_room && n == ROCE_WIRE_ENOSPC));
        /* 3. the header writer alone obeys cap too */
        int w = roce_write_hdr(&h, plen, buf, cap);
        CHECK(cap < model_hdr_len(h.opcode)
                  ? w == ROCE_WIRE_ENOSPC
                  : w == (int)model_hdr_len(h.opcode));
        free(buf);
        return;
    }
    CHECK(n >= 0 && (size_t)n == need);
    struct roce_hdr d;
    CHECK(roce_decode(&ip, buf, need, &d) == ROCE_WIRE_OK);
    struct roce_hdr want = h;
    want.payload_len = plen;
    want.pad = (uint8_t)(-plen & 3u);
    if (!(hs & M_RETH))
        want.va = want.rkey = want.dma_len = 0;
    if (!(hs & M_AETH))
        want.syndrome = 0, want.msn = 0;
    if (!(hs & M_IMM))
        want.imm = 0;
    CHECK(hdr_eq(&d, &want) && d.pad == want.pad);
    CHECK(d.payload == buf + model_hdr_len(h.opcode));
    CHECK(plen == 0 || memcmp(d.payload, payload, plen) == 0);
    if (hs & M_CNP)
        for (size_t i = 12; i < 28; i++)
            CHECK(buf[i] == 0);
    free(buf);
}

/* ---- 4. CRC-32 against the bitwise reference ---- */

static void fuzz_crc(const uint8_t *data, size_t size)
{
    uint32_t want = ref_crc32(0, data, size);
    CHECK(roce_crc32(0, data, size) == want);
    size_t cut = size ? data[0] % (size + 1) : 0;
    uint32_t a = roce_crc32(0, data, cut);
    CHECK(roce_crc32(a, data + cut, size - cut) == want);
    if (size > 3)
        CHECK(roce_crc32(0, data + 3, size - 3) ==
              ref_crc32(0, data + 3, size - 3));
}

static void fuzz_names(uint8_t b)
{
    CHECK(roce_op_name(b) != NULL);
    CHECK(roce_nak_name(b) != NULL);
    CHECK(!roce_op_info(b) == !model_known(b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct roce_ip ip;
    /* the IP fields come from the input's tail: the head stays a packet */
    size_t tail = size < 44 ? size : 44;
    read_ip(data + size - tail, tail, &ip);
    fuzz_decode(NULL, data, size);
    fuzz_decode(&ip, data, size);
    fuzz_decode_sealed(&ip, data, size);
    fuzz_encode(data, size);
    fuzz_crc(data, size);
    if (size)
        fuzz_names(data[size - 1]);
    return 0;
}
