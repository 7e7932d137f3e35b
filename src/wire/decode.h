/* The header decoder (R-RX-1 steps 1-6), inline: the engine decodes
 * every packet it receives through mroce_wire_decode_inline, the two
 * opcodes of nearly every packet (WRITE, ACK) without a call, straight
 * into the header on its stack (the call cost ~32 instructions per data
 * packet in the loss sweep: the decoder's registers saved and restored,
 * the engine's around the call, the arguments). wire.c's
 * mroce_wire_decode is the same code out of line; other opcodes go
 * through its table (mroce_wire_decode_tab). Pure functions. */
#ifndef MROCE_WIRE_DECODE_H
#define MROCE_WIRE_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/aead.h"
#include "wire/be.h"
#include "wire/crc32c.h"
#include "wire/wire.h"

/* Inlined where the opcode is a constant, so that those copies keep
 * only their own headers' fields. */
#define WIRE_INLINE static inline __attribute__((always_inline))

/* The header sets and lengths of the opcodes nearly every packet has
 * (the table's entries; wire_test's vectors fail if they differ). */
#define WIRE_HDRS_WRITE (MROCE_H_DXH | MROCE_H_RETH | MROCE_H_PAYLOAD)
#define WIRE_LEN_WRITE 48
#define WIRE_HDRS_ACK MROCE_H_AKH
#define WIRE_LEN_ACK 68

WIRE_INLINE void wire_dxh_get(struct mroce_hdr *h, const uint8_t *p)
{
    h->dsn = mroce_be32_get(p);
    h->stream = mroce_be16_get(p + 4);
    h->prot = p[6];
    h->msn = mroce_be32_get(p + 8);
    h->msg_len = mroce_be32_get(p + 12);
    h->offset = mroce_be32_get(p + 16);
}

WIRE_INLINE void wire_reth_get(struct mroce_hdr *h, const uint8_t *p)
{
    h->va = mroce_be64_get(p);
    h->rkey = mroce_be32_get(p + 8);
}

WIRE_INLINE void wire_akh_get(struct mroce_hdr *h, const uint8_t *p)
{
    h->sack_high = mroce_be32_get(p);
    h->dsn_cum = mroce_be32_get(p + 4);
    h->echo_ts = mroce_be32_get(p + 8);
    h->rate_mbps = mroce_be32_get(p + 12);
    h->ce_count = mroce_be16_get(p + 16);
    h->rx_count = mroce_be16_get(p + 18);
    for (int i = 0; i < 4; i++)
        h->sack[i] = mroce_be64_get(p + 20 + 8 * i);
}

WIRE_INLINE void wire_nkh_get(struct mroce_hdr *h, const uint8_t *p)
{
    h->dsn = mroce_be32_get(p);
    h->stream = mroce_be16_get(p + 4);
    h->nak_code = p[6];
    h->msn = mroce_be32_get(p + 8);
    h->nak_info = mroce_be32_get(p + 12);
}

/* The extension headers present in `hdrs`, in wire order (R-HDR-5);
 * PAD is ignored on receipt (R-VAL-8). The fields of a header that is
 * absent are zeroed here, group by group, rather than the whole header
 * first. NKH comes after DXH and sets its copy of dsn, stream and msn. */
WIRE_INLINE void wire_ext_get(struct mroce_hdr *h, const uint8_t *p,
                              uint8_t hdrs)
{
    if (hdrs & MROCE_H_DXH) {
        wire_dxh_get(h, p);
        p += MROCE_DXH_LEN;
    } else {
        h->dsn = h->msn = h->msg_len = h->offset = 0;
        h->stream = 0;
        h->prot = 0;
    }
    if (hdrs & MROCE_H_RETH) {
        wire_reth_get(h, p);
        p += MROCE_RETH_LEN;
    } else {
        h->va = 0;
        h->rkey = 0;
    }
    if (hdrs & MROCE_H_SNH) {
        h->ssn = mroce_be32_get(p);
        p += MROCE_SNH_LEN;
    } else {
        h->ssn = 0;
    }
    if (hdrs & MROCE_H_IMM) {
        h->imm = mroce_be32_get(p);
        p += MROCE_IMM_LEN;
    } else {
        h->imm = 0;
    }
    if (hdrs & MROCE_H_AKH) {
        wire_akh_get(h, p);
        p += MROCE_AKH_LEN;
    } else {
        h->sack_high = h->dsn_cum = h->echo_ts = h->rate_mbps = 0;
        h->ce_count = h->rx_count = 0;
        h->sack[0] = h->sack[1] = h->sack[2] = h->sack[3] = 0;
    }
    if (hdrs & MROCE_H_NKH) {
        wire_nkh_get(h, p);
    } else {
        h->nak_code = 0;
        h->nak_info = 0;
    }
}

/* A packet refused: a header of zeros (as before any field is read). */
WIRE_INLINE int wire_refuse(struct mroce_hdr *h, int err)
{
    *h = (struct mroce_hdr){0};
    return err;
}

/* R-RX-1 steps 4-6 and the fields, for an opcode whose header set and
 * length are hdrs and hdr_len: length of its headers and trailer, CRC
 * (plain packets only: a sealed one's tag is the engine's to check,
 * R-AEAD-8), then the payload rule. */
WIRE_INLINE int wire_get_as(const uint8_t *buf, size_t len, struct mroce_hdr *h,
                            bool check_crc, uint8_t hdrs, uint8_t hdr_len)
{
    bool sealed = buf[0] & MROCE_HF_SEAL;
    size_t tl = mroce_aead_trailer_len(buf[0]);
    if (len < (size_t)hdr_len + tl)
        return wire_refuse(h, MROCE_WIRE_ETRUNC);
    size_t body = len - tl;
    if (check_crc && !sealed &&
        mroce_crc32c(0, buf, body) != mroce_be32_get(buf + body))
        return wire_refuse(h, MROCE_WIRE_ECRC);
    if (body > hdr_len && !(hdrs & MROCE_H_PAYLOAD))
        return wire_refuse(h, MROCE_WIRE_EPAYLOAD);
    /* R-HDR-3: the key phase bit means something on sealed packets only */
    h->flags =
        buf[0] & (sealed ? MROCE_HF_MASK | MROCE_HF_SEAL | MROCE_HF_KPHASE
                         : MROCE_HF_MASK);
    h->opcode = buf[1];
    h->path = mroce_be16_get(buf + 2);
    h->conn = mroce_be32_get(buf + 4);
    h->psn = mroce_be32_get(buf + 8);
    h->ts = mroce_be32_get(buf + 12);
    wire_ext_get(h, buf + MROCE_MTH_LEN, hdrs);
    h->payload = buf + hdr_len;
    h->payload_len = (uint32_t)(body - hdr_len);
    return MROCE_WIRE_OK;
}

/* R-RX-1 steps 3-6 for the opcodes other than WRITE and ACK, through
 * the opcode table (wire.c). */
int mroce_wire_decode_tab(const uint8_t *buf, size_t len, struct mroce_hdr *h,
                          bool check_crc);

/* mroce_wire_decode (check_crc) or mroce_wire_decode_nocrc, inline. */
WIRE_INLINE int mroce_wire_decode_inline(const uint8_t *buf, size_t len,
                                         struct mroce_hdr *h, bool check_crc)
{
    if (len < MROCE_MTH_LEN + MROCE_ICRC_LEN)
        return wire_refuse(h, MROCE_WIRE_ETRUNC);
    if (buf[0] >> 4 != MROCE_WIRE_VERSION)
        return wire_refuse(h, MROCE_WIRE_EVERSION);
    switch (buf[1]) { /* as in mroce_wire_write_hdr */
    case MROCE_OP_WRITE:
        return wire_get_as(buf, len, h, check_crc, WIRE_HDRS_WRITE,
                           WIRE_LEN_WRITE);
    case MROCE_OP_ACK:
        return wire_get_as(buf, len, h, check_crc, WIRE_HDRS_ACK, WIRE_LEN_ACK);
    default:
        return mroce_wire_decode_tab(buf, len, h, check_crc);
    }
}

#endif
