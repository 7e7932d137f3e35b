/* RoCEv2 wire format: the IBTA Base Transport Header and the RC extension
 * headers, carried in UDP to port 4791 (IBTA Vol. 1 ch. 9 and Annex A17
 * "RoCEv2"), as Linux Soft-RoCE (drivers/infiniband/sw/rxe) puts them on
 * the wire. Pure functions, no I/O. All multi-byte fields are big-endian
 * (IBTA ch. 9) except the ICRC, which goes out least significant byte first
 * like the Ethernet FCS (the byte order rxe and real NICs use).
 *
 * Packet layout (UDP payload):  BTH | RETH? | AETH? | ImmDt? | payload |
 * pad (0..3 bytes, BTH.PadCnt) | ICRC. A CNP is BTH | 16 reserved bytes |
 * ICRC (Annex Annex A17). */
#ifndef MROCE_WIRE_ROCE_H
#define MROCE_WIRE_ROCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#define ROCE_UDP_PORT 4791 /* IANA, Annex A17.2 */

#define ROCE_BTH_LEN 12
#define ROCE_RETH_LEN 16
#define ROCE_AETH_LEN 4
#define ROCE_IMMDT_LEN 4
#define ROCE_CNP_RSVD_LEN 16
#define ROCE_ICRC_LEN 4
/* Largest header stack: BTH + RETH + ImmDt (RDMA WRITE Only with Imm). */
#define ROCE_MAX_HDR_LEN (ROCE_BTH_LEN + ROCE_RETH_LEN + ROCE_IMMDT_LEN)
/* Most bytes a packet adds to its payload: headers, pad and ICRC. */
#define ROCE_MAX_OVERHEAD (ROCE_MAX_HDR_LEN + 3 + ROCE_ICRC_LEN)

#define ROCE_PSN_MASK 0xFFFFFFu /* PSNs and QPNs are 24 bits (IBTA ch. 9) */
#define ROCE_QPN_MASK 0xFFFFFFu
#define ROCE_PKEY_DEFAULT 0xFFFF /* full-member default partition */

/* RC opcodes (IBTA Table 38: transport 000 = RC) and the CNP (Annex A17). */
enum roce_opcode {
    ROCE_OP_SEND_FIRST = 0x00,
    ROCE_OP_SEND_MIDDLE = 0x01,
    ROCE_OP_SEND_LAST = 0x02,
    ROCE_OP_SEND_LAST_IMM = 0x03,
    ROCE_OP_SEND_ONLY = 0x04,
    ROCE_OP_SEND_ONLY_IMM = 0x05,
    ROCE_OP_WRITE_FIRST = 0x06,
    ROCE_OP_WRITE_MIDDLE = 0x07,
    ROCE_OP_WRITE_LAST = 0x08,
    ROCE_OP_WRITE_LAST_IMM = 0x09,
    ROCE_OP_WRITE_ONLY = 0x0A,
    ROCE_OP_WRITE_ONLY_IMM = 0x0B,
    ROCE_OP_READ_REQ = 0x0C,
    ROCE_OP_READ_RESP_FIRST = 0x0D,
    ROCE_OP_READ_RESP_MIDDLE = 0x0E,
    ROCE_OP_READ_RESP_LAST = 0x0F,
    ROCE_OP_READ_RESP_ONLY = 0x10,
    ROCE_OP_ACK = 0x11,
    ROCE_OP_CNP = 0x81,
};

/* Which headers follow the BTH (the opcode table, IBTA ch. 9). */
#define ROCE_H_RETH 0x01
#define ROCE_H_AETH 0x02
#define ROCE_H_IMMDT 0x04
#define ROCE_H_PAYLOAD 0x08 /* a payload may follow */
#define ROCE_H_CNP 0x10     /* 16 reserved bytes */

/* Position of a packet in its message (IBTA ch. 9). */
#define ROCE_P_FIRST 0x01
#define ROCE_P_MIDDLE 0x02
#define ROCE_P_LAST 0x04
#define ROCE_P_ONLY (ROCE_P_FIRST | ROCE_P_LAST)

/* What a packet is. */
enum roce_kind {
    ROCE_K_SEND,
    ROCE_K_WRITE,
    ROCE_K_READ_REQ,
    ROCE_K_READ_RESP,
    ROCE_K_ACK,
    ROCE_K_CNP,
};

struct roce_op_info {
    const char *name;
    uint8_t headers; /* ROCE_H_* */
    uint8_t pos;     /* ROCE_P_* (0 for ACK and CNP) */
    uint8_t kind;    /* enum roce_kind */
    uint8_t hdr_len; /* BTH + extension headers */
};

/* AETH syndrome (IBTA ch. 9, Table 41): bits 7..5 say ACK, RNR NAK or NAK;
 * bits 4..0 hold the credit count, the RNR timer code or the NAK code. */
#define ROCE_AETH_ACK 0x00
#define ROCE_AETH_RNR_NAK 0x20
#define ROCE_AETH_NAK 0x60
#define ROCE_AETH_TYPE_MASK 0xE0
#define ROCE_AETH_VALUE_MASK 0x1F
#define ROCE_AETH_CREDITS_INVALID 0x1F /* "unlimited", what rxe sends */

enum roce_nak_code {
    ROCE_NAK_PSN_SEQ = 0,       /* PSN sequence error */
    ROCE_NAK_INVALID_REQ = 1,   /* invalid request */
    ROCE_NAK_REMOTE_ACCESS = 2, /* remote access error */
    ROCE_NAK_REMOTE_OP = 3,     /* remote operational error */
    ROCE_NAK_INVALID_RD = 4,    /* invalid RD request */
};

/* Decoder results: negative reasons a packet is dropped. */
enum roce_wire_err {
    ROCE_WIRE_OK = 0,
    ROCE_WIRE_ETRUNC = -1,   /* shorter than its headers + pad + ICRC */
    ROCE_WIRE_EVERSION = -2, /* BTH.TVer is not 0 */
    ROCE_WIRE_EOPCODE = -3,  /* not an RC opcode this codec knows */
    ROCE_WIRE_ECRC = -4,     /* ICRC mismatch */
    ROCE_WIRE_EPAYLOAD = -5, /* payload where the opcode has none */
    ROCE_WIRE_ENOSPC = -6,   /* encoder: buffer too small */
};

/* One packet's headers. Fields a packet type does not carry are zero after
 * decode and ignored by encode. */
struct roce_hdr {
    /* BTH (IBTA ch. 9) */
    uint8_t opcode;
    uint8_t se;   /* solicited event */
    uint8_t mig;  /* MigReq (rxe sends 0) */
    uint8_t pad;  /* decode only: PadCnt (encode derives it) */
    uint8_t tver; /* transport header version, 0 */
    uint16_t pkey;
    uint8_t fecn, becn; /* byte 4 bits 7 and 6 */
    uint32_t dqpn;      /* destination QP, 24 bits */
    uint8_t ackreq;     /* A bit */
    uint32_t psn;       /* 24 bits */
    /* RETH (IBTA ch. 9) */
    uint64_t va;
    uint32_t rkey;
    uint32_t dma_len;
    /* AETH (IBTA ch. 9) */
    uint8_t syndrome;
    uint32_t msn; /* 24 bits */
    /* ImmDt (IBTA ch. 9) */
    uint32_t imm;
    /* payload (decode: points into the packet, pad excluded) */
    const uint8_t *payload;
    uint32_t payload_len;
};

/* The IP and UDP fields the ICRC covers (Annex A17). The codec stays
 * pure by taking them as arguments; lengths follow from the packet. */
#define ROCE_IP_DF 0x4000
struct roce_ip {
    struct mroce_addr src, dst; /* both INET or both INET6 */
    uint16_t src_port, dst_port;
    uint16_t ip_id;   /* IPv4 identification */
    uint16_t ip_frag; /* IPv4 flags + fragment offset */
};

/* IPv4 identification 0 and DF, what Linux puts on a DF datagram sent
 * without a socket (rxe) and what src/io/pcap writes. */
void roce_ip_from_meta(const struct mroce_pkt_meta *meta, struct roce_ip *ip);

/* NULL for an opcode this codec does not know. */
const struct roce_op_info *roce_op_info(uint8_t opcode);
const char *roce_op_name(uint8_t opcode);
const char *roce_nak_name(uint8_t code);

/* IEEE 802.3 CRC-32 (reflected 0xEDB88320, init and final xor all ones).
 * Chains: roce_crc32(roce_crc32(0, a), b) == roce_crc32(0, a || b). */
uint32_t roce_crc32(uint32_t crc, const void *buf, size_t len);

/* The ICRC of pkt[0..len) (BTH through pad, without the ICRC itself) sent
 * with the IP/UDP fields ip (Annex A17: a 64-bit all-ones LRH
 * placeholder, then the IP header with IPv4 ToS, TTL and checksum or IPv6
 * traffic class, flow label and hop limit as ones, the UDP header with the
 * checksum as ones, and the BTH with its reserved byte 4 (FECN, BECN) as
 * ones). Returns the CRC value; the wire holds it least significant byte
 * first. */
uint32_t roce_icrc(const struct roce_ip *ip, const uint8_t *pkt, size_t len);

/* Writes the BTH and extension headers (and a CNP's reserved bytes).
 * pad is taken from payload_len. Returns the header length or
 * ROCE_WIRE_ENOSPC / ROCE_WIRE_EOPCODE. */
int roce_write_hdr(const struct roce_hdr *h, uint32_t payload_len, uint8_t *buf,
                   size_t cap);

/* Headers, payload copy, pad and ICRC in one call. Returns the packet
 * length or a negative roce_wire_err. */
int roce_encode(const struct roce_hdr *h, const struct roce_ip *ip,
                const uint8_t *payload, uint32_t payload_len, uint8_t *buf,
                size_t cap);

/* Appends the ICRC over buf[0..len) at buf[len] (4 bytes of room are the
 * caller's duty). Returns len + 4. */
size_t roce_seal(const struct roce_ip *ip, uint8_t *buf, size_t len);

/* Validates and decodes one UDP payload: length, version, opcode, ICRC
 * (skipped when ip is NULL), payload rule. h->payload points into buf. */
int roce_decode(const struct roce_ip *ip, const uint8_t *buf, size_t len,
                struct roce_hdr *h);

/* PSN arithmetic on the 24-bit circle (IBTA ch. 9: half the space ahead
 * is "later"). */
static inline uint32_t roce_psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & ROCE_PSN_MASK;
}
/* Signed distance a - b, in [-2^23, 2^23). */
static inline int32_t roce_psn_diff(uint32_t a, uint32_t b)
{
    return (int32_t)((a - b) << 8) >> 8;
}

#endif
