/* Table-driven MetaRoCE header codec (spec section 3). */
#include "wire/wire.h"

#include <string.h>

#include "wire/decode.h"

#define OP(code, nm, hdrs, len)                                                \
    [code] = {.name = nm, .headers = (hdrs), .hdr_len = (len)}

/* R-HDR-4: the opcode table; hdr_len is MTH plus the extension headers
 * (the unit test checks the sums). */
static const struct mroce_op_info op_tab[256] = {
    OP(MROCE_OP_WRITE, "WRITE", MROCE_H_DXH | MROCE_H_RETH | MROCE_H_PAYLOAD,
       48),
    OP(MROCE_OP_WRITE_IMM, "WRITE_IMM",
       MROCE_H_DXH | MROCE_H_RETH | MROCE_H_SNH | MROCE_H_IMM | MROCE_H_PAYLOAD,
       56),
    OP(MROCE_OP_SEND, "SEND", MROCE_H_DXH | MROCE_H_SNH | MROCE_H_PAYLOAD, 40),
    OP(MROCE_OP_SEND_IMM, "SEND_IMM",
       MROCE_H_DXH | MROCE_H_SNH | MROCE_H_IMM | MROCE_H_PAYLOAD, 44),
    OP(MROCE_OP_READ_REQ, "READ_REQ", MROCE_H_DXH | MROCE_H_RETH, 48),
    OP(MROCE_OP_READ_RESP, "READ_RESP", MROCE_H_DXH | MROCE_H_PAYLOAD, 36),
    OP(MROCE_OP_ACK, "ACK", MROCE_H_AKH, 68),
    OP(MROCE_OP_NACK, "NACK", MROCE_H_NKH, 32),
    OP(MROCE_OP_ACKM, "ACKM", MROCE_H_AKH | MROCE_H_PAYLOAD, 68),
    OP(MROCE_OP_PROBE, "PROBE", MROCE_H_PAD, 68),
    OP(MROCE_OP_CLOSE, "CLOSE", 0, 16),
    OP(MROCE_OP_CLOSE_ACK, "CLOSE_ACK", 0, 16),
};

WIRE_INLINE void dxh_put(const struct mroce_hdr *h, uint8_t *p)
{
    mroce_be32_put(p, h->dsn);
    mroce_be16_put(p + 4, h->stream);
    mroce_be16_put(p + 6, 0);
    mroce_be32_put(p + 8, h->msn);
    mroce_be32_put(p + 12, h->msg_len);
    mroce_be32_put(p + 16, h->offset);
}

WIRE_INLINE void reth_put(const struct mroce_hdr *h, uint8_t *p)
{
    mroce_be64_put(p, h->va);
    mroce_be32_put(p + 8, h->rkey);
}

WIRE_INLINE void snh_put(const struct mroce_hdr *h, uint8_t *p)
{
    mroce_be32_put(p, h->ssn);
}

WIRE_INLINE void imm_put(const struct mroce_hdr *h, uint8_t *p)
{
    mroce_be32_put(p, h->imm);
}

WIRE_INLINE void akh_put(const struct mroce_hdr *h, uint8_t *p)
{
    mroce_be32_put(p, h->sack_high);
    mroce_be32_put(p + 4, h->dsn_cum);
    mroce_be32_put(p + 8, h->echo_ts);
    mroce_be32_put(p + 12, h->rate_mbps);
    mroce_be16_put(p + 16, h->ce_count);
    mroce_be16_put(p + 18, h->rx_count);
    for (int i = 0; i < 4; i++)
        mroce_be64_put(p + 20 + 8 * i, h->sack[i]);
}

WIRE_INLINE void nkh_put(const struct mroce_hdr *h, uint8_t *p)
{
    mroce_be32_put(p, h->dsn);
    mroce_be16_put(p + 4, h->stream);
    p[6] = h->nak_code;
    p[7] = 0;
    mroce_be32_put(p + 8, h->msn);
    mroce_be32_put(p + 12, h->nak_info);
}

/* R-VAL-8: sent as zeros, ignored on receipt (decode.h). */
WIRE_INLINE void pad_put(const struct mroce_hdr *h, uint8_t *p)
{
    (void)h;
    memset(p, 0, MROCE_PAD_LEN);
}

/* The extension headers present in `hdrs`, in wire order (R-HDR-5):
 * straight-line code, as a loop over a table of codecs cost more in
 * indirect calls and flag tests than the fields themselves. */
WIRE_INLINE void ext_put(const struct mroce_hdr *h, uint8_t *p, uint8_t hdrs)
{
    if (hdrs & MROCE_H_DXH) {
        dxh_put(h, p);
        p += MROCE_DXH_LEN;
    }
    if (hdrs & MROCE_H_RETH) {
        reth_put(h, p);
        p += MROCE_RETH_LEN;
    }
    if (hdrs & MROCE_H_SNH) {
        snh_put(h, p);
        p += MROCE_SNH_LEN;
    }
    if (hdrs & MROCE_H_IMM) {
        imm_put(h, p);
        p += MROCE_IMM_LEN;
    }
    if (hdrs & MROCE_H_AKH) {
        akh_put(h, p);
        p += MROCE_AKH_LEN;
    }
    if (hdrs & MROCE_H_NKH) {
        nkh_put(h, p);
        p += MROCE_NKH_LEN;
    }
    if (hdrs & MROCE_H_PAD) {
        pad_put(h, p);
        p += MROCE_PAD_LEN;
    }
}

const struct mroce_op_info *mroce_wire_op_info(uint8_t opcode)
{
    const struct mroce_op_info *oi = &op_tab[opcode];
    return oi->name ? oi : NULL;
}

const char *mroce_wire_op_name(uint8_t opcode)
{
    const struct mroce_op_info *oi = mroce_wire_op_info(opcode);
    return oi ? oi->name : "UNKNOWN";
}

const char *mroce_wire_nak_name(uint8_t code)
{
    static const char *const names[] = {
        "NONE",      "RNR",         "REMOTE_ACCESS", "INVALID_REQUEST",
        "REMOTE_OP", "CONN_CLOSED",
    };
    return code < sizeof(names) / sizeof(names[0]) ? names[code] : "UNKNOWN";
}

size_t mroce_wire_hdr_len(uint8_t opcode)
{
    const struct mroce_op_info *oi = mroce_wire_op_info(opcode);
    return oi ? oi->hdr_len : 0;
}

WIRE_INLINE void mth_put(const struct mroce_hdr *h, uint8_t *p)
{
    p[0] = (uint8_t)(MROCE_WIRE_VERSION << 4 | (h->flags & MROCE_HF_MASK));
    p[1] = h->opcode;
    mroce_be16_put(p + 2, h->path);
    mroce_be32_put(p + 4, h->conn);
    mroce_be32_put(p + 8, h->psn);
    mroce_be32_put(p + 12, h->ts);
}

WIRE_INLINE int wire_put_as(const struct mroce_hdr *h, uint8_t *buf, size_t cap,
                            uint8_t hdrs, uint8_t hdr_len)
{
    if (cap < hdr_len)
        return MROCE_WIRE_ENOSPC;
    mth_put(h, buf);
    ext_put(h, buf + MROCE_MTH_LEN, hdrs);
    return hdr_len;
}

/* WRITE and ACK, the opcodes of nearly every packet, in copies of their
 * own; the others through the table. */
int mroce_wire_write_hdr(const struct mroce_hdr *h, uint8_t *buf, size_t cap)
{
    switch (h->opcode) {
    case MROCE_OP_WRITE:
        return wire_put_as(h, buf, cap, WIRE_HDRS_WRITE, WIRE_LEN_WRITE);
    case MROCE_OP_ACK:
        return wire_put_as(h, buf, cap, WIRE_HDRS_ACK, WIRE_LEN_ACK);
    default:
        break;
    }
    const struct mroce_op_info *oi = mroce_wire_op_info(h->opcode);
    if (!oi)
        return MROCE_WIRE_EOPCODE;
    return wire_put_as(h, buf, cap, oi->headers, oi->hdr_len);
}

void mroce_wire_patch_data(uint8_t *buf, const struct mroce_wire_pkt *f)
{
    buf[0] = (uint8_t)(MROCE_WIRE_VERSION << 4 | (f->flags & MROCE_HF_MASK));
    mroce_be16_put(buf + 2, f->path);
    mroce_be32_put(buf + 8, f->psn);
    mroce_be32_put(buf + 12, f->ts);
    mroce_be32_put(buf + MROCE_MTH_LEN, f->dsn);
    mroce_be32_put(buf + MROCE_MTH_LEN + 16, f->offset);
}

size_t mroce_wire_seal(uint8_t *buf, size_t len)
{
    mroce_be32_put(buf + len, mroce_crc32c(0, buf, len)); /* R-CRC-1 */
    return len + MROCE_ICRC_LEN;
}

int mroce_wire_encode(const struct mroce_hdr *h, const uint8_t *payload,
                      uint32_t payload_len, uint8_t *buf, size_t cap)
{
    int hl = mroce_wire_write_hdr(h, buf, cap);
    if (hl < 0)
        return hl;
    if (payload_len &&
        !(mroce_wire_op_info(h->opcode)->headers & MROCE_H_PAYLOAD))
        return MROCE_WIRE_EPAYLOAD;
    if ((size_t)hl + payload_len + MROCE_ICRC_LEN > cap)
        return MROCE_WIRE_ENOSPC;
    if (payload_len && payload != buf + hl)
        memcpy(buf + hl, payload, payload_len);
    return (int)mroce_wire_seal(buf, (size_t)hl + payload_len);
}

/* R-RX-1 step 3 for the opcodes decode.h does not decode itself. */
int mroce_wire_decode_tab(const uint8_t *buf, size_t len, struct mroce_hdr *h,
                          bool check_crc)
{
    const struct mroce_op_info *oi = mroce_wire_op_info(buf[1]);
    if (!oi)
        return wire_refuse(h, MROCE_WIRE_EOPCODE);
    return wire_get_as(buf, len, h, check_crc, oi->headers, oi->hdr_len);
}

int mroce_wire_decode(const uint8_t *buf, size_t len, struct mroce_hdr *h)
{
    return mroce_wire_decode_inline(buf, len, h, true);
}

int mroce_wire_decode_nocrc(const uint8_t *buf, size_t len, struct mroce_hdr *h)
{
    return mroce_wire_decode_inline(buf, len, h, false);
}
