/* MetaRoCE wire format: header codecs (docs/spec.md section 3).
 * Pure functions, no I/O. All multi-byte fields are big-endian (R-HDR-1). */
#ifndef MROCE_WIRE_WIRE_H
#define MROCE_WIRE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define MROCE_WIRE_VERSION 1
#define MROCE_UDP_PORT_DEFAULT 4797 /* R-ENC-2 */

/* Header lengths in bytes (spec section 3). */
#define MROCE_MTH_LEN 16  /* transport header, every packet */
#define MROCE_DXH_LEN 20  /* data extension: dsn, stream, msn, len, offset */
#define MROCE_RETH_LEN 12 /* remote address + key */
#define MROCE_SNH_LEN 4   /* receive index (send sequence number) */
#define MROCE_IMM_LEN 4   /* immediate data */
#define MROCE_AKH_LEN 52  /* ACK: SACK anchor, bitmap, echoes, rate hint */
#define MROCE_NKH_LEN 16  /* NACK */
#define MROCE_PAD_LEN 52  /* PROBE padding: a PROBE is as long as an ACK */
#define MROCE_ICRC_LEN 4  /* CRC32C trailer */
#define MROCE_MAX_HDR_LEN (MROCE_MTH_LEN + MROCE_AKH_LEN)

#define MROCE_SACK_BITS 256 /* R-SACK-1 */

/* Opcodes (R-HDR-4). */
enum mroce_op {
    MROCE_OP_WRITE = 0x01,
    MROCE_OP_WRITE_IMM = 0x02,
    MROCE_OP_SEND = 0x03,
    MROCE_OP_SEND_IMM = 0x04,
    MROCE_OP_READ_REQ = 0x05,
    MROCE_OP_READ_RESP = 0x06,
    MROCE_OP_ACK = 0x10,
    MROCE_OP_NACK = 0x11,
    MROCE_OP_ACKM = 0x12, /* feature ACKM (R-ACKM-1) */
    MROCE_OP_PROBE = 0x20,
    MROCE_OP_CLOSE = 0x30,
    MROCE_OP_CLOSE_ACK = 0x31,
};

/* MTH flags, low nibble of byte 0 (R-HDR-3). */
#define MROCE_HF_ACKREQ 0x8 /* receiver should acknowledge at once */
#define MROCE_HF_RETX 0x4   /* this is a retransmission */
#define MROCE_HF_MASK                                                          \
    0xC /* what the encoder writes; bits 0x2 (SEAL) and                        \
           0x1 (key phase) mark a sealed packet and are                        \
           set by the AEAD framing only (wire/aead.h) */

/* Which headers follow the MTH (bit per header, in wire order). */
#define MROCE_H_DXH 0x01
#define MROCE_H_RETH 0x02
#define MROCE_H_SNH 0x04
#define MROCE_H_IMM 0x08
#define MROCE_H_AKH 0x10
#define MROCE_H_NKH 0x20
#define MROCE_H_PAD 0x40     /* zeros, ignored on receipt (PROBE) */
#define MROCE_H_PAYLOAD 0x80 /* a payload may follow the headers */

/* NACK syndromes (R-NACK-2). */
enum mroce_nak {
    MROCE_NAK_RNR = 0x01,             /* no receive posted; retry later */
    MROCE_NAK_REMOTE_ACCESS = 0x02,   /* bad key, bounds or permission */
    MROCE_NAK_INVALID_REQUEST = 0x03, /* inconsistent or oversized message */
    MROCE_NAK_REMOTE_OP = 0x04,       /* responder could not execute */
    MROCE_NAK_CONN_CLOSED = 0x05,     /* connection closing or in error */
};

/* Decoder results: negative reasons a packet is dropped (R-RX-1). */
enum mroce_wire_err {
    MROCE_WIRE_OK = 0,
    MROCE_WIRE_ETRUNC = -1,   /* shorter than its headers + trailer */
    MROCE_WIRE_EVERSION = -2, /* unknown version */
    MROCE_WIRE_EOPCODE = -3,  /* unknown opcode */
    MROCE_WIRE_ECRC = -4,     /* CRC32C mismatch */
    MROCE_WIRE_EPAYLOAD = -5, /* payload on a packet type that has none */
    MROCE_WIRE_ENOSPC = -6,   /* encoder: buffer too small */
};

/* One packet's headers, decoded. Fields a packet type does not carry are
 * zero after decode and ignored by encode. */
struct mroce_hdr {
    /* MTH */
    uint8_t opcode;
    uint8_t flags;
    uint16_t path;
    uint32_t conn; /* destination connection id */
    uint32_t psn;  /* per-path sequence number, PROBEs too (R-SACK-2) */
    uint32_t ts;   /* sender timestamp, ns mod 2^32 */
    /* DXH (and NKH's copy of dsn/stream/msn) */
    uint32_t dsn;
    uint16_t stream;
    uint8_t prot; /* DXH byte 6: MROCE_PROT_ENC on a sealed packet whose
                     payload is encrypted (R-AEAD-2); decode only */
    uint32_t msn;
    uint32_t msg_len;
    uint32_t offset;
    /* RETH */
    uint64_t va;
    uint32_t rkey;
    /* SNH, IMM */
    uint32_t ssn;
    uint32_t imm;
    /* AKH */
    uint32_t sack_high; /* highest PSN received on the acknowledged path */
    uint32_t dsn_cum;   /* first DSN not yet received */
    uint32_t echo_ts;   /* AKH */
    uint32_t rate_mbps; /* receiver's fair-share grant, 0 = none */
    uint16_t ce_count;  /* CE-marked packets received on the path, mod 2^16 */
    uint16_t rx_count;  /* packets received on the path, mod 2^16 */
    uint64_t sack[4];   /* bit i (MSB of sack[0] is i=0) = PSN sack_high-i */
    /* NKH */
    uint8_t nak_code;
    uint32_t nak_info;
    /* payload (decode: points into the packet; encode: ignored) */
    const uint8_t *payload;
    uint32_t payload_len;
};

/* The opcode table: name and header set of each opcode (R-HDR-4). */
struct mroce_op_info {
    const char *name;
    uint8_t headers; /* MROCE_H_* */
    uint8_t hdr_len; /* MTH + extension headers */
};
/* NULL for an unknown opcode. */
const struct mroce_op_info *mroce_wire_op_info(uint8_t opcode);
const char *mroce_wire_op_name(uint8_t opcode);
const char *mroce_wire_nak_name(uint8_t code);

/* Headers length of a packet type, 0 for an unknown opcode. */
size_t mroce_wire_hdr_len(uint8_t opcode);

/* Writes the MTH and extension headers of h at buf (cap bytes).
 * Returns the header length or MROCE_WIRE_ENOSPC / MROCE_WIRE_EOPCODE. */
int mroce_wire_write_hdr(const struct mroce_hdr *h, uint8_t *buf, size_t cap);

/* The longest header of a data opcode (WRITE_IMM: MTH, DXH, RETH, SNH,
 * IMM; the unit test checks it against the opcode table). */
#define MROCE_MAX_DATA_HDR_LEN 56

/* The fields of a data packet's header that differ between the packets of
 * one message (R-HDR-2, R-HDR-9); every other field is the message's. */
struct mroce_wire_pkt {
    uint32_t psn, ts;     /* MTH */
    uint32_t dsn, offset; /* DXH */
    uint16_t path;        /* MTH */
    uint8_t flags;        /* MTH byte 0, low nibble (MROCE_HF_MASK bits only) */
};

/* Rewrites f's fields in buf, which holds the header that
 * mroce_wire_write_hdr wrote for another packet of the same message (an
 * opcode with a DXH, R-HDR-5: the DXH follows the MTH). The result is the
 * header mroce_wire_write_hdr would write with f's fields. No errors;
 * thread-safe; writes buf[0..MROCE_MTH_LEN + MROCE_DXH_LEN) only. */
void mroce_wire_patch_data(uint8_t *buf, const struct mroce_wire_pkt *f);

/* Appends the CRC32C trailer over buf[0..len) at buf[len] (R-CRC-1);
 * the caller guarantees 4 bytes of room. Returns len + 4. */
size_t mroce_wire_seal(uint8_t *buf, size_t len);

/* Headers + payload copy + trailer in one call; the payload may lie in
 * place already, right after the headers in buf. Returns the packet
 * length or a negative mroce_wire_err. */
int mroce_wire_encode(const struct mroce_hdr *h, const uint8_t *payload,
                      uint32_t payload_len, uint8_t *buf, size_t cap);

/* Validates and decodes one UDP payload (R-RX-1 order: length, version,
 * opcode, CRC, payload rule). Returns MROCE_WIRE_OK or a negative
 * mroce_wire_err; h->payload points into buf. A sealed packet (SEAL in
 * byte 0, R-AEAD-1) ends in a 16-byte tag instead of the ICRC: its
 * trailer is not checked here but by whoever holds the key (the engine,
 * R-AEAD-8), and h->flags keeps SEAL and the key phase. */
int mroce_wire_decode(const uint8_t *buf, size_t len, struct mroce_hdr *h);
/* The same without checking the ICRC: for a datapath that cannot corrupt
 * a packet and whose sender did not compute one (mroce_ctx_attr.no_icrc,
 * a simulator's fabric). */
int mroce_wire_decode_nocrc(const uint8_t *buf, size_t len,
                            struct mroce_hdr *h);

/* SACK bitmap helpers: bit i <-> PSN (sack_high - i) (R-HDR-14). */
static inline int mroce_sack_test(const uint64_t sack[4], unsigned i)
{
    return (int)((sack[i >> 6] >> (63 - (i & 63))) & 1);
}
static inline void mroce_sack_set(uint64_t sack[4], unsigned i)
{
    sack[i >> 6] |= (uint64_t)1 << (63 - (i & 63));
}

#endif
