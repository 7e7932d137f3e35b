/* Unit tests for the MetaRoCE header codec and CRC32C (docs/spec.md
 * sections 3 and 12). The byte vectors below are the test vectors of
 * spec section 12 (12.2-12.12 and the ACKM of 12.48), produced by an
 * independent generator (tests/vectors/metaroce_vectors.py); every test runs
 * under ASan/UBSan, and decoder inputs are copied into exact-size heap
 * buffers so that any read past the end is caught. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/ackm.h"
#include "wire/aead.h"
#include "wire/crc32c.h"
#include "wire/wire.h"

/* ---- Spec section 12 vectors --------------------------------------------- */

/* clang-format off */
/* WRITE (A to B): a whole 8-byte message in one packet */
static const uint8_t vec_write[60] = {
    0x18, 0x01, 0x00, 0x03, 0x1a, 0x2b, 0x3c, 0x4d, 0x00, 0x00, 0x03, 0xe8,
    0x07, 0x5b, 0xcd, 0x15, 0x00, 0x0a, 0x1b, 0x2c, 0x00, 0x01, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x7f, 0x3a, 0x12, 0x34, 0x50, 0x00, 0xc0, 0xff, 0xee, 0x01,
    0x4d, 0x65, 0x74, 0x61, 0x52, 0x6f, 0x43, 0x45, 0xe8, 0xbf, 0xe9, 0x9c,
};

/* WRITE_IMM (A to B): 8-byte message with immediate 0xDEADBEEF */
static const uint8_t vec_write_imm[68] = {
    0x18, 0x02, 0x00, 0x04, 0x1a, 0x2b, 0x3c, 0x4d, 0x00, 0x00, 0x00, 0x11,
    0x07, 0x5b, 0xd9, 0xa0, 0x00, 0x0a, 0x1b, 0x2d, 0x00, 0x01, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x7f, 0x3a, 0x12, 0x34, 0x51, 0x00, 0xc0, 0xff, 0xee, 0x01,
    0x00, 0x00, 0x00, 0x03, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x02, 0x03,
    0x04, 0x05, 0x06, 0x07, 0x9d, 0x60, 0xbd, 0xfb,
};

/* SEND (A to B): 8-byte message using receive 0 of stream 2 */
static const uint8_t vec_send[52] = {
    0x10, 0x03, 0x00, 0x00, 0x1a, 0x2b, 0x3c, 0x4d, 0x00, 0x00, 0x00, 0x00,
    0x07, 0x5c, 0x00, 0xb0, 0x00, 0x0a, 0x1b, 0x2e, 0x00, 0x02, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x4d, 0x65, 0x74, 0x61, 0x52, 0x6f, 0x43, 0x45,
    0x3a, 0x94, 0x3f, 0xc2,
};

/* SEND_IMM (A to B): a retransmission */
static const uint8_t vec_send_imm[56] = {
    0x1c, 0x04, 0x00, 0x07, 0x1a, 0x2b, 0x3c, 0x4d, 0xff, 0xff, 0xff, 0xfe,
    0x07, 0x5c, 0x27, 0xc0, 0x00, 0x0a, 0x1b, 0x2f, 0x00, 0x02, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x03, 0x04, 0x00, 0x01, 0x02, 0x03,
    0x04, 0x05, 0x06, 0x07, 0xea, 0xf3, 0xf3, 0x0d,
};

/* READ_REQ (A to B): read 4104 bytes */
static const uint8_t vec_read_req[52] = {
    0x18, 0x05, 0x00, 0x02, 0x1a, 0x2b, 0x3c, 0x4d, 0x00, 0x00, 0x04, 0xd2,
    0x07, 0x5c, 0x4e, 0xd0, 0x00, 0x0a, 0x1b, 0x30, 0x00, 0x01, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x10, 0x08, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x7f, 0x3a, 0x12, 0x34, 0x70, 0x00, 0xc0, 0xff, 0xee, 0x01,
    0x8b, 0x70, 0xf9, 0x0a,
};

/* READ_RESP (B to A): last packet of that read */
static const uint8_t vec_read_resp[48] = {
    0x18, 0x06, 0x00, 0x01, 0x00, 0xc0, 0xff, 0xee, 0x00, 0x00, 0x00, 0x4d,
    0x3a, 0xde, 0x68, 0xb1, 0x00, 0x00, 0x01, 0x01, 0x00, 0x01, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x10, 0x08, 0x00, 0x00, 0x10, 0x00,
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x6f, 0x54, 0x86, 0x67,
};

/* ACK (B to A) for A's path 3, with a non-trivial bitmap */
static const uint8_t vec_ack[72] = {
    0x10, 0x10, 0x00, 0x03, 0x00, 0xc0, 0xff, 0xee, 0x00, 0x00, 0x03, 0xe8,
    0x3a, 0xde, 0x7e, 0xe0, 0x00, 0x00, 0x03, 0xe8, 0x00, 0x0a, 0x1b, 0x2d,
    0x07, 0x5b, 0xcd, 0x15, 0x00, 0x00, 0xc3, 0x50, 0x00, 0x11, 0x02, 0xed,
    0xd0, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe2, 0xd4, 0x16, 0xa7,
};

/* NACK RNR (B to A) */
static const uint8_t vec_nack_rnr[36] = {
    0x10, 0x11, 0x00, 0x05, 0x00, 0xc0, 0xff, 0xee, 0x00, 0x00, 0x00, 0x2a,
    0x3a, 0xde, 0xa5, 0xf0, 0x00, 0x0a, 0x1b, 0x31, 0x00, 0x02, 0x01, 0x00,
    0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0xc8, 0xeb, 0x6b, 0x2f, 0xd2,
};

/* PROBE (A to B) on path 6, padded to the length of an ACK */
static const uint8_t vec_probe[72] = {
    0x18, 0x20, 0x00, 0x06, 0x1a, 0x2b, 0x3c, 0x4d, 0x00, 0x00, 0x00, 0x09,
    0x07, 0x5c, 0x75, 0xe0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xbb, 0x1a, 0x1d, 0x35,
};

/* CLOSE (A to B), carrying A's next DSN */
static const uint8_t vec_close[20] = {
    0x10, 0x30, 0x00, 0x00, 0x1a, 0x2b, 0x3c, 0x4d, 0x00, 0x0a, 0x1b, 0x32,
    0x07, 0x5c, 0x9c, 0xf0, 0x10, 0x5a, 0x56, 0x57,
};

/* CLOSE_ACK (B to A), carrying B's next DSN */
static const uint8_t vec_close_ack[20] = {
    0x10, 0x31, 0x00, 0x00, 0x00, 0xc0, 0xff, 0xee, 0x00, 0x00, 0x01, 0x02,
    0x3a, 0xde, 0xf4, 0x10, 0xd2, 0x8d, 0x3c, 0x87,
};

/* ACK (B to A) answering the PROBE of path 6: MTH psn 9 names it */
static const uint8_t vec_ack_echo[72] = {
    0x10, 0x10, 0x00, 0x06, 0x00, 0xc0, 0xff, 0xee, 0x00, 0x00, 0x00, 0x09,
    0x3a, 0xde, 0x9e, 0xa0, 0x00, 0x00, 0x00, 0x09, 0x00, 0x0a, 0x1b, 0x2d,
    0x07, 0x5c, 0x75, 0xe0, 0x00, 0x00, 0xc3, 0x50, 0x00, 0x00, 0x00, 0x0a,
    0xff, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc4, 0x8f, 0x71, 0xf6,
};

/* ACKM (B to A) for A's path 3 with two records (section 12.48): the
 * ACK above as opcode 0x12, with records for A's paths 5 and 9 */
static const uint8_t vec_ackm[172] = {
    0x10, 0x12, 0x00, 0x03, 0x00, 0xc0, 0xff, 0xee, 0x00, 0x00, 0x03, 0xe8,
    0x3a, 0xde, 0x80, 0x00, 0x00, 0x00, 0x03, 0xe8, 0x00, 0x0a, 0x1b, 0x2d,
    0x07, 0x5b, 0xcd, 0x15, 0x00, 0x00, 0xc3, 0x50, 0x00, 0x11, 0x02, 0xed,
    0xd0, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x00, 0x05, 0x00, 0x7d, 0x00, 0x00, 0x07, 0xd0, 0x07, 0x5b, 0xc9, 0xa0,
    0x00, 0x00, 0x07, 0xc6, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x09, 0x00, 0x21, 0x00, 0x01, 0x11, 0x70, 0x07, 0x5b, 0xcb, 0x00,
    0x00, 0x03, 0x04, 0xd2, 0xa0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
    0xdb, 0xdc, 0x5a, 0xc0,
};

/* clang-format on */

/* One vector: its bytes and every field value it was built from. */
struct vector {
    const char *name;
    const uint8_t *bytes;
    size_t len;
    struct mroce_hdr hdr; /* payload/payload_len unused here */
    const uint8_t *payload;
    uint32_t payload_len;
};

#define CONN_A 0x00c0ffeeu /* id chosen by endpoint A: packets to A */
#define CONN_B 0x1a2b3c4du /* id chosen by endpoint B: packets to B */
#define VA 0x00007f3a12345000ull
#define RKEY 0xc0ffee01u
#define AF MROCE_HF_ACKREQ
#define RT MROCE_HF_RETX

static const uint8_t pay_text[8] = {'M', 'e', 't', 'a', 'R', 'o', 'C', 'E'};
static const uint8_t pay_seq[8] = {0, 1, 2, 3, 4, 5, 6, 7};

#define VEC(nm) .name = #nm, .bytes = vec_##nm, .len = sizeof(vec_##nm)

static const struct vector vectors[] = {
    {VEC(write),
     .hdr = {.opcode = MROCE_OP_WRITE,
             .flags = AF,
             .path = 3,
             .conn = CONN_B,
             .psn = 1000,
             .ts = 0x075bcd15,
             .dsn = 0x000a1b2c,
             .stream = 1,
             .msn = 5,
             .msg_len = 8,
             .offset = 0,
             .va = VA,
             .rkey = RKEY},
     .payload = pay_text, .payload_len = 8},
    {VEC(write_imm),
     .hdr = {.opcode = MROCE_OP_WRITE_IMM,
             .flags = AF,
             .path = 4,
             .conn = CONN_B,
             .psn = 17,
             .ts = 0x075bd9a0,
             .dsn = 0x000a1b2d,
             .stream = 1,
             .msn = 6,
             .msg_len = 8,
             .offset = 0,
             .va = VA + 0x100,
             .rkey = RKEY,
             .ssn = 3,
             .imm = 0xdeadbeef},
     .payload = pay_seq, .payload_len = 8},
    {VEC(send),
     .hdr = {.opcode = MROCE_OP_SEND,
             .flags = 0,
             .path = 0,
             .conn = CONN_B,
             .psn = 0,
             .ts = 0x075c00b0,
             .dsn = 0x000a1b2e,
             .stream = 2,
             .msn = 0,
             .msg_len = 8,
             .offset = 0,
             .ssn = 0},
     .payload = pay_text, .payload_len = 8},
    {VEC(send_imm),
     .hdr = {.opcode = MROCE_OP_SEND_IMM,
             .flags = AF | RT,
             .path = 7,
             .conn = CONN_B,
             .psn = 0xfffffffe,
             .ts = 0x075c27c0,
             .dsn = 0x000a1b2f,
             .stream = 2,
             .msn = 1,
             .msg_len = 8,
             .offset = 0,
             .ssn = 1,
             .imm = 0x01020304},
     .payload = pay_seq, .payload_len = 8},
    {VEC(read_req), .hdr = {.opcode = MROCE_OP_READ_REQ,
                            .flags = AF,
                            .path = 2,
                            .conn = CONN_B,
                            .psn = 1234,
                            .ts = 0x075c4ed0,
                            .dsn = 0x000a1b30,
                            .stream = 1,
                            .msn = 7,
                            .msg_len = 4104,
                            .offset = 0,
                            .va = VA + 0x2000,
                            .rkey = RKEY}},
    {VEC(read_resp),
     .hdr = {.opcode = MROCE_OP_READ_RESP,
             .flags = AF,
             .path = 1,
             .conn = CONN_A,
             .psn = 77,
             .ts = 0x3ade68b1,
             .dsn = 0x00000101,
             .stream = 1,
             .msn = 7,
             .msg_len = 4104,
             .offset = 4096},
     .payload = pay_seq, .payload_len = 8},
    {VEC(ack), .hdr = {.opcode = MROCE_OP_ACK,
                       .flags = 0,
                       .path = 3,
                       .conn = CONN_A,
                       .psn = 1000, /* sack_high: no PROBE (R-VAL-4) */
                       .ts = 0x3ade7ee0,
                       .sack_high = 1000,
                       .dsn_cum = 0x000a1b2d,
                       .echo_ts = 0x075bcd15,
                       .rate_mbps = 50000,
                       .ce_count = 17,
                       .rx_count = 749,
                       /* bits 0, 1, 3, 10: PSNs 1000, 999, 997, 990 */
                       .sack = {0xd020000000000000ull, 0, 0, 0}}},
    {VEC(nack_rnr), .hdr = {.opcode = MROCE_OP_NACK,
                            .flags = 0,
                            .path = 5,
                            .conn = CONN_A,
                            .psn = 42,
                            .ts = 0x3adea5f0,
                            .dsn = 0x000a1b31,
                            .stream = 2,
                            .msn = 3,
                            .nak_code = MROCE_NAK_RNR,
                            .nak_info = 200}},
    {VEC(probe), .hdr = {.opcode = MROCE_OP_PROBE,
                         .flags = AF,
                         .path = 6,
                         .conn = CONN_B,
                         .psn = 9,
                         .ts = 0x075c75e0}},
    {VEC(close), .hdr = {.opcode = MROCE_OP_CLOSE,
                         .flags = 0,
                         .path = 0,
                         .conn = CONN_B,
                         .psn = 0x000a1b32,
                         .ts = 0x075c9cf0}},
    {VEC(close_ack), .hdr = {.opcode = MROCE_OP_CLOSE_ACK,
                             .flags = 0,
                             .path = 0,
                             .conn = CONN_A,
                             .psn = 0x00000102,
                             .ts = 0x3adef410}},
    {VEC(ack_echo), .hdr = {.opcode = MROCE_OP_ACK,
                            .flags = 0,
                            .path = 6,
                            .conn = CONN_A,
                            .psn = 9,
                            .ts = 0x3ade9ea0,
                            .sack_high = 9,
                            .dsn_cum = 0x000a1b2d,
                            .echo_ts = 0x075c75e0,
                            .rate_mbps = 50000,
                            .ce_count = 0,
                            .rx_count = 10,
                            .sack = {0xffc0000000000000ull}}},
    {VEC(ackm),
     .hdr = {.opcode = MROCE_OP_ACKM,
             .flags = 0,
             .path = 3,
             .conn = CONN_A,
             .psn = 1000,
             .ts = 0x3ade8000,
             .sack_high = 1000,
             .dsn_cum = 0x000a1b2d,
             .echo_ts = 0x075bcd15,
             .rate_mbps = 50000,
             .ce_count = 17,
             .rx_count = 749,
             .sack = {0xd020000000000000ull, 0, 0, 0}},
     /* the records, as mroce_ackm_put writes them: test_ackm_vector */
     .payload = vec_ackm + 68, .payload_len = 100},
};
#define N_VECTORS (sizeof(vectors) / sizeof(vectors[0]))
#define VEC_MAX 256 /* room for the longest vector (the ACKM's 172) */

/* The opcode table as the spec defines it (R-HDR-4), written out by hand
 * so that the codec's table is checked against an independent copy. */
struct op_expect {
    uint8_t opcode;
    const char *name;
    uint8_t headers;
};

static const struct op_expect op_expect[] = {
    {MROCE_OP_WRITE, "WRITE", MROCE_H_DXH | MROCE_H_RETH | MROCE_H_PAYLOAD},
    {MROCE_OP_WRITE_IMM, "WRITE_IMM",
     MROCE_H_DXH | MROCE_H_RETH | MROCE_H_SNH | MROCE_H_IMM | MROCE_H_PAYLOAD},
    {MROCE_OP_SEND, "SEND", MROCE_H_DXH | MROCE_H_SNH | MROCE_H_PAYLOAD},
    {MROCE_OP_SEND_IMM, "SEND_IMM",
     MROCE_H_DXH | MROCE_H_SNH | MROCE_H_IMM | MROCE_H_PAYLOAD},
    {MROCE_OP_READ_REQ, "READ_REQ", MROCE_H_DXH | MROCE_H_RETH},
    {MROCE_OP_READ_RESP, "READ_RESP", MROCE_H_DXH | MROCE_H_PAYLOAD},
    {MROCE_OP_ACK, "ACK", MROCE_H_AKH},
    {MROCE_OP_NACK, "NACK", MROCE_H_NKH},
    {MROCE_OP_ACKM, "ACKM", MROCE_H_AKH | MROCE_H_PAYLOAD},
    {MROCE_OP_PROBE, "PROBE", MROCE_H_PAD},
    {MROCE_OP_CLOSE, "CLOSE", 0},
    {MROCE_OP_CLOSE_ACK, "CLOSE_ACK", 0},
};
#define N_OPS (sizeof(op_expect) / sizeof(op_expect[0]))

/* ---- Helpers ------------------------------------------------------------- */

static const struct op_expect *find_op(unsigned opcode)
{
    for (size_t i = 0; i < N_OPS; i++)
        if (op_expect[i].opcode == opcode)
            return &op_expect[i];
    return NULL;
}

/* Header length from the spec's header sizes (section 3). */
static size_t spec_hdr_len(uint8_t headers)
{
    size_t len = MROCE_MTH_LEN;
    if (headers & MROCE_H_DXH)
        len += 20;
    if (headers & MROCE_H_RETH)
        len += 12;
    if (headers & MROCE_H_SNH)
        len += 4;
    if (headers & MROCE_H_IMM)
        len += 4;
    if (headers & MROCE_H_AKH)
        len += 52;
    if (headers & MROCE_H_NKH)
        len += 16;
    if (headers & MROCE_H_PAD)
        len += 52;
    return len;
}

static size_t vec_hdr_len(const struct vector *v)
{
    return spec_hdr_len(find_op(v->hdr.opcode)->headers);
}

/* An exact-size heap copy, so ASan flags any access past len. For len 0 it
 * returns a pointer one past a 1-byte block: valid, but not readable. */
static uint8_t *dup_exact(const uint8_t *src, size_t len, void **block)
{
    uint8_t *p = malloc(len ? len : 1);
    assert_non_null(p);
    *block = p;
    if (!len)
        return p + 1;
    memcpy(p, src, len);
    return p;
}

static int decode_copy(const uint8_t *buf, size_t len, struct mroce_hdr *h)
{
    void *block;
    uint8_t *p = dup_exact(buf, len, &block);
    int rc = mroce_wire_decode(p, len, h);
    free(block);
    return rc;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Recomputes the ICRC of a packet of len bytes (trailer included), so a
 * test can alter a field and still present a packet with a valid CRC. */
static void reseal(uint8_t *pkt, size_t len)
{
    put_be32(pkt + len - 4, mroce_crc32c(0, pkt, len - 4));
}

#define EXPECT_FIELD(name, got, want, f)                                       \
    do {                                                                       \
        if ((uint64_t)(got)->f != (uint64_t)(want)->f)                         \
            fail_msg("%s: field %s: got 0x%llx, want 0x%llx", (name), #f,      \
                     (unsigned long long)(got)->f,                             \
                     (unsigned long long)(want)->f);                           \
    } while (0)

/* Every header field of got equals want (fields a type does not carry are
 * zero in want, and must be zero after decode). */
static void expect_hdr(const char *name, const struct mroce_hdr *got,
                       const struct mroce_hdr *want)
{
    EXPECT_FIELD(name, got, want, opcode);
    EXPECT_FIELD(name, got, want, flags);
    EXPECT_FIELD(name, got, want, path);
    EXPECT_FIELD(name, got, want, conn);
    EXPECT_FIELD(name, got, want, psn);
    EXPECT_FIELD(name, got, want, ts);
    EXPECT_FIELD(name, got, want, dsn);
    EXPECT_FIELD(name, got, want, stream);
    EXPECT_FIELD(name, got, want, msn);
    EXPECT_FIELD(name, got, want, msg_len);
    EXPECT_FIELD(name, got, want, offset);
    EXPECT_FIELD(name, got, want, va);
    EXPECT_FIELD(name, got, want, rkey);
    EXPECT_FIELD(name, got, want, ssn);
    EXPECT_FIELD(name, got, want, imm);
    EXPECT_FIELD(name, got, want, sack_high);
    EXPECT_FIELD(name, got, want, dsn_cum);
    EXPECT_FIELD(name, got, want, echo_ts);
    EXPECT_FIELD(name, got, want, rate_mbps);
    EXPECT_FIELD(name, got, want, ce_count);
    EXPECT_FIELD(name, got, want, rx_count);
    EXPECT_FIELD(name, got, want, sack[0]);
    EXPECT_FIELD(name, got, want, sack[1]);
    EXPECT_FIELD(name, got, want, sack[2]);
    EXPECT_FIELD(name, got, want, sack[3]);
    EXPECT_FIELD(name, got, want, nak_code);
    EXPECT_FIELD(name, got, want, nak_info);
}

/* Fills every field a packet type does not carry with junk: the encoder
 * must ignore them (wire.h: "ignored by encode"). */
static void add_junk(struct mroce_hdr *h)
{
    const struct op_expect *op = find_op(h->opcode);
    if (!(op->headers & (MROCE_H_DXH | MROCE_H_NKH))) {
        h->dsn = 0x11111111;
        h->stream = 0x2222;
        h->msn = 0x33333333;
    }
    if (!(op->headers & MROCE_H_DXH)) {
        h->msg_len = 0x44444444;
        h->offset = 0x55555555;
    }
    if (!(op->headers & MROCE_H_RETH)) {
        h->va = 0x6666666666666666ull;
        h->rkey = 0x77777777;
    }
    if (!(op->headers & MROCE_H_SNH))
        h->ssn = 0x88888888;
    if (!(op->headers & MROCE_H_IMM))
        h->imm = 0x99999999;
    if (!(op->headers & MROCE_H_AKH)) {
        h->sack_high = 0xaaaaaaaa;
        h->dsn_cum = 0xbbbbbbbb;
        h->rate_mbps = 0xcccccccc;
        h->ce_count = 0xdddd;
        h->rx_count = 0xeeee;
        for (int i = 0; i < 4; i++)
            h->sack[i] = ~0ull;
    }
    if (!(op->headers & MROCE_H_AKH))
        h->echo_ts = 0xffffffff;
    if (!(op->headers & MROCE_H_NKH)) {
        h->nak_code = 0x5a;
        h->nak_info = 0x12345678;
    }
    h->payload = (const uint8_t *)"junk";
    h->payload_len = 4;
}

/* ---- (f) CRC32C ---------------------------------------------------------- */

static void test_crc32c_check_value(void **state)
{
    (void)state;
    static const char check[] = "123456789";
    assert_int_equal(mroce_crc32c(0, check, 9), 0xe3069283u);
    assert_int_equal(mroce_crc32c(0, check, 0), 0);
    /* Chaining: any split gives the same result (crc32c.h contract). */
    for (size_t k = 0; k <= 9; k++) {
        uint32_t c = mroce_crc32c(0, check, k);
        assert_int_equal(mroce_crc32c(c, check + k, 9 - k), 0xe3069283u);
    }
}

/* The iSCSI vectors of RFC 3720 appendix B.4 (values, not byte order). */
static void test_crc32c_rfc3720(void **state)
{
    (void)state;
    uint8_t buf[32];
    memset(buf, 0x00, sizeof(buf));
    assert_int_equal(mroce_crc32c(0, buf, 32), 0x8a9136aau);
    memset(buf, 0xff, sizeof(buf));
    assert_int_equal(mroce_crc32c(0, buf, 32), 0x62a8ab43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)i;
    assert_int_equal(mroce_crc32c(0, buf, 32), 0x46dd794eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)(31 - i);
    assert_int_equal(mroce_crc32c(0, buf, 32), 0x113fdb5cu);
}

/* The trailer of every vector is CRC32C of the rest, stored big-endian. */
static void test_vectors_icrc(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_VECTORS; i++) {
        const struct vector *v = &vectors[i];
        const uint8_t *t = v->bytes + v->len - 4;
        uint32_t stored = (uint32_t)t[0] << 24 | (uint32_t)t[1] << 16 |
                          (uint32_t)t[2] << 8 | t[3];
        assert_int_equal(mroce_crc32c(0, v->bytes, v->len - 4), stored);
    }
}

/* ---- (a) encode: R-HDR-1..R-HDR-15, R-CRC-1 ------------------------------ */

static void check_encode(const struct vector *v, const struct mroce_hdr *h)
{
    void *block;
    uint8_t *buf = dup_exact(v->bytes, v->len, &block);
    memset(buf, 0xa5, v->len);
    int n = mroce_wire_encode(h, v->payload, v->payload_len, buf, v->len);
    if (n != (int)v->len)
        fail_msg("%s: encode returned %d, want %zu", v->name, n, v->len);
    for (size_t k = 0; k < v->len; k++)
        if (buf[k] != v->bytes[k])
            fail_msg("%s: byte %zu: got 0x%02x, want 0x%02x", v->name, k,
                     buf[k], v->bytes[k]);
    free(block);
}

static void test_vectors_encode(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_VECTORS; i++) {
        const struct vector *v = &vectors[i];
        struct mroce_hdr h = v->hdr;
        check_encode(v, &h);
        add_junk(&h);
        check_encode(v, &h);
    }
}

/* write_hdr + payload + seal builds the same bytes as encode. */
static void test_vectors_write_hdr_seal(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_VECTORS; i++) {
        const struct vector *v = &vectors[i];
        size_t hl = vec_hdr_len(v);
        uint8_t buf[VEC_MAX];
        assert_true(v->len <= sizeof(buf));
        memset(buf, 0xa5, sizeof(buf));
        assert_int_equal(mroce_wire_write_hdr(&v->hdr, buf, hl), (int)hl);
        assert_memory_equal(buf, v->bytes, hl);
        if (v->payload_len)
            memcpy(buf + hl, v->payload, v->payload_len);
        assert_int_equal(mroce_wire_seal(buf, hl + v->payload_len), v->len);
        assert_memory_equal(buf, v->bytes, v->len);
        assert_int_equal(mroce_wire_hdr_len(v->hdr.opcode), hl);
    }
}

/* R-HDR-3: reserved flag bits are sent as zero, whatever the caller set. */
static void test_encode_masks_reserved_flags(void **state)
{
    (void)state;
    const struct vector *v = &vectors[2]; /* SEND, flags 0 */
    struct mroce_hdr h = v->hdr;
    uint8_t buf[64];
    h.flags = 0x0f;
    assert_int_equal(
        mroce_wire_encode(&h, v->payload, v->payload_len, buf, sizeof(buf)),
        (int)v->len);
    assert_int_equal(buf[0], 0x1c);
    h.flags = 0xf3;
    assert_int_equal(
        mroce_wire_encode(&h, v->payload, v->payload_len, buf, sizeof(buf)),
        (int)v->len);
    assert_memory_equal(buf, v->bytes, v->len);
}

static void test_encode_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_VECTORS; i++) {
        const struct vector *v = &vectors[i];
        /* Every buffer shorter than the packet: ENOSPC, no overflow. */
        for (size_t cap = 0; cap < v->len; cap++) {
            void *block;
            uint8_t *buf = dup_exact(v->bytes, cap, &block);
            int n = mroce_wire_encode(&v->hdr, v->payload, v->payload_len, buf,
                                      cap);
            if (n != MROCE_WIRE_ENOSPC)
                fail_msg("%s: cap %zu: encode returned %d, want ENOSPC",
                         v->name, cap, n);
            free(block);
        }
    }
    /* Unknown opcode. */
    struct mroce_hdr h = vectors[8].hdr;
    uint8_t buf[128];
    h.opcode = 0x07;
    assert_int_equal(mroce_wire_encode(&h, NULL, 0, buf, sizeof(buf)),
                     MROCE_WIRE_EOPCODE);
    assert_int_equal(mroce_wire_write_hdr(&h, buf, sizeof(buf)),
                     MROCE_WIRE_EOPCODE);
    /* A payload on a type without one is refused (R-HDR-6). */
    h = vectors[8].hdr; /* PROBE */
    assert_true(mroce_wire_encode(&h, pay_seq, 8, buf, sizeof(buf)) < 0);
}

/* ---- (b) decode ---------------------------------------------------------- */

static void test_vectors_decode(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_VECTORS; i++) {
        const struct vector *v = &vectors[i];
        size_t hl = vec_hdr_len(v);
        void *block;
        uint8_t *buf = dup_exact(v->bytes, v->len, &block);
        struct mroce_hdr h;
        memset(&h, 0xa5, sizeof(h)); /* decode must clear what it skips */
        int rc = mroce_wire_decode(buf, v->len, &h);
        if (rc != MROCE_WIRE_OK)
            fail_msg("%s: decode returned %d", v->name, rc);
        expect_hdr(v->name, &h, &v->hdr);
        assert_int_equal(h.payload_len, v->payload_len);
        if (v->payload_len) {
            assert_ptr_equal(h.payload, buf + hl);
            assert_memory_equal(h.payload, v->payload, v->payload_len);
        }
        free(block);
    }
}

/* Encode then decode gives back the same header, for zero-length data
 * messages too (R-MSG-2: one packet without payload). */
static void test_roundtrip_zero_length(void **state)
{
    (void)state;
    static const uint8_t ops[] = {MROCE_OP_WRITE, MROCE_OP_WRITE_IMM,
                                  MROCE_OP_SEND, MROCE_OP_SEND_IMM,
                                  MROCE_OP_READ_RESP};
    for (size_t i = 0; i < sizeof(ops); i++) {
        struct mroce_hdr in = vectors[1].hdr, out;
        uint8_t buf[128];
        in.opcode = ops[i];
        in.msg_len = 0;
        in.ssn = 4;
        int n = mroce_wire_encode(&in, NULL, 0, buf, sizeof(buf));
        size_t hl = spec_hdr_len(find_op(ops[i])->headers);
        assert_int_equal(n, (int)(hl + MROCE_ICRC_LEN));
        assert_int_equal(decode_copy(buf, (size_t)n, &out), MROCE_WIRE_OK);
        assert_int_equal(out.payload_len, 0);
        assert_int_equal(out.opcode, ops[i]);
        assert_int_equal(out.msg_len, 0);
        assert_int_equal(out.dsn, in.dsn);
        /* The SSN travels with every receive-consuming opcode, WRITE_IMM
         * included (R-MSG-7); others decode it as zero. */
        const uint8_t hs = find_op(ops[i])->headers;
        assert_int_equal(out.ssn, (hs & MROCE_H_SNH) ? in.ssn : 0);
        assert_int_equal(out.imm, (hs & MROCE_H_IMM) ? in.imm : 0);
    }
}

/* R-HDR-4, R-HDR-5: a WRITE_IMM carries DXH, RETH, SNH and IMM in that
 * order: the SNH at bytes 48-51, the IMM at 52-55, the payload from 56. */
static void test_write_imm_layout(void **state)
{
    (void)state;
    static const uint8_t ssn_be[4] = {0x01, 0x02, 0x03, 0x04};
    static const uint8_t imm_be[4] = {0xa1, 0xb2, 0xc3, 0xd4};
    const struct vector *v = &vectors[1];
    struct mroce_hdr h = v->hdr, back;
    uint8_t buf[128];
    assert_int_equal(h.opcode, MROCE_OP_WRITE_IMM);
    assert_int_equal(mroce_wire_hdr_len(MROCE_OP_WRITE_IMM), 56);
    /* The section 12.3 vector itself: SSN 3, then the immediate. */
    assert_int_equal(v->bytes[51], 3);
    assert_int_equal(v->bytes[52], 0xde);
    h.ssn = 0x01020304;
    h.imm = 0xa1b2c3d4;
    int n = mroce_wire_encode(&h, v->payload, v->payload_len, buf, sizeof(buf));
    assert_int_equal(n, 56 + 8 + MROCE_ICRC_LEN);
    assert_memory_equal(buf + 48, ssn_be, 4);
    assert_memory_equal(buf + 52, imm_be, 4);
    assert_memory_equal(buf + 56, v->payload, v->payload_len);
    assert_int_equal(decode_copy(buf, (size_t)n, &back), MROCE_WIRE_OK);
    assert_int_equal(back.ssn, h.ssn);
    assert_int_equal(back.imm, h.imm);
    assert_int_equal(back.payload_len, v->payload_len);
}

/* ---- (c) corruption ------------------------------------------------------ */

static void test_vectors_byte_flip(void **state)
{
    (void)state;
    static const uint8_t masks[] = {0x01, 0x02, 0x10, 0x80, 0xff};
    for (size_t i = 0; i < N_VECTORS; i++) {
        const struct vector *v = &vectors[i];
        uint8_t pkt[VEC_MAX];
        memcpy(pkt, v->bytes, v->len);
        for (size_t k = 0; k < v->len; k++) {
            for (size_t m = 0; m < sizeof(masks); m++) {
                struct mroce_hdr h;
                pkt[k] ^= masks[m];
                int rc = decode_copy(pkt, v->len, &h);
                pkt[k] ^= masks[m];
                /* Setting SEAL makes the last 16 bytes a tag, which the
                 * engine checks, not the codec (R-AEAD-8): only a packet
                 * long enough to hold headers and tag (the ACKM) decodes. */
                if (rc >= 0 && k == 0 && masks[m] == MROCE_HF_SEAL &&
                    (h.flags & MROCE_HF_SEAL) &&
                    v->len >= vec_hdr_len(v) + MROCE_TAG_LEN)
                    continue;
                if (rc >= 0)
                    fail_msg("%s: byte %zu ^ 0x%02x decoded OK", v->name, k,
                             masks[m]);
            }
        }
    }
}

/* ---- (d) truncation: R-RX-1 ---------------------------------------------- */

static void test_vectors_truncation(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_VECTORS; i++) {
        const struct vector *v = &vectors[i];
        size_t hl = vec_hdr_len(v);
        for (size_t len = 0; len < v->len; len++) {
            struct mroce_hdr h;
            int rc = decode_copy(v->bytes, len, &h);
            /* R-RX-1: too short for MTH or for the type's headers plus
             * trailer is ETRUNC; otherwise the trailer is wrong. */
            int want =
                len < hl + MROCE_ICRC_LEN ? MROCE_WIRE_ETRUNC : MROCE_WIRE_ECRC;
            if (rc != want)
                fail_msg("%s: length %zu: decode returned %d, want %d", v->name,
                         len, rc, want);
        }
    }
}

/* ---- (e) rejection codes ------------------------------------------------- */

static void test_reject_unknown_opcode(void **state)
{
    (void)state;
    for (unsigned op = 0; op < 256; op++) {
        if (find_op(op))
            continue;
        uint8_t pkt[sizeof(vec_ack)];
        struct mroce_hdr h;
        /* A 20-byte packet (CLOSE-sized) and a 72-byte one (ACK-sized). */
        memcpy(pkt, vec_close, sizeof(vec_close));
        pkt[1] = (uint8_t)op;
        reseal(pkt, sizeof(vec_close));
        assert_int_equal(decode_copy(pkt, sizeof(vec_close), &h),
                         MROCE_WIRE_EOPCODE);
        memcpy(pkt, vec_ack, sizeof(vec_ack));
        pkt[1] = (uint8_t)op;
        reseal(pkt, sizeof(vec_ack));
        assert_int_equal(decode_copy(pkt, sizeof(vec_ack), &h),
                         MROCE_WIRE_EOPCODE);
        /* Reserved atomics range 0x07-0x0F is unknown in 0.1 (R-MSG-15). */
        assert_null(mroce_wire_op_info((uint8_t)op));
    }
}

/* R-HDR-16, R-PATH-10: opcode 0x21 (PROBE_ACK in drafts of 0.1) is
 * reserved: the codec does not know it, will not encode it, and drops it
 * as an unknown opcode whatever its length and even with a good ICRC. */
static void test_reject_reserved_opcode_0x21(void **state)
{
    (void)state;
    /* The draft's PROBE_ACK vector: MTH + 4-byte PRH + ICRC. */
    static const uint8_t old_probe_ack[24] = {
        0x10, 0x21, 0x00, 0x06, 0x00, 0xc0, 0xff, 0xee, 0x00, 0x00, 0x00, 0x09,
        0x3a, 0xde, 0xcd, 0x00, 0x07, 0x5c, 0x75, 0xe0, 0x6c, 0x83, 0xc1, 0x10,
    };
    struct mroce_hdr h;
    uint8_t pkt[sizeof(vec_ack)];
    assert_int_equal(mroce_crc32c(0, old_probe_ack, 20), 0x6c83c110u);
    assert_int_equal(decode_copy(old_probe_ack, sizeof(old_probe_ack), &h),
                     MROCE_WIRE_EOPCODE);
    /* MTH-only (CLOSE-sized) and ACK-sized packets with opcode 0x21. */
    memcpy(pkt, vec_close, sizeof(vec_close));
    pkt[1] = 0x21;
    reseal(pkt, sizeof(vec_close));
    assert_int_equal(decode_copy(pkt, sizeof(vec_close), &h),
                     MROCE_WIRE_EOPCODE);
    memcpy(pkt, vec_ack, sizeof(vec_ack));
    pkt[1] = 0x21;
    reseal(pkt, sizeof(vec_ack));
    assert_int_equal(decode_copy(pkt, sizeof(vec_ack), &h), MROCE_WIRE_EOPCODE);
    /* Not in the opcode table, so never encoded. */
    assert_null(mroce_wire_op_info(0x21));
    assert_int_equal(mroce_wire_hdr_len(0x21), 0);
    assert_string_equal(mroce_wire_op_name(0x21), "UNKNOWN");
    h = vectors[8].hdr; /* PROBE */
    h.opcode = 0x21;
    h.echo_ts = 0x075c75e0;
    assert_int_equal(mroce_wire_encode(&h, NULL, 0, pkt, sizeof(pkt)),
                     MROCE_WIRE_EOPCODE);
    assert_int_equal(mroce_wire_write_hdr(&h, pkt, sizeof(pkt)),
                     MROCE_WIRE_EOPCODE);
}

static void test_reject_version(void **state)
{
    (void)state;
    for (unsigned ver = 0; ver < 16; ver++) {
        if (ver == MROCE_WIRE_VERSION)
            continue;
        for (size_t i = 0; i < N_VECTORS; i++) {
            const struct vector *v = &vectors[i];
            uint8_t pkt[VEC_MAX];
            struct mroce_hdr h;
            memcpy(pkt, v->bytes, v->len);
            pkt[0] = (uint8_t)(ver << 4 | (pkt[0] & 0x0f));
            reseal(pkt, v->len);
            int rc = decode_copy(pkt, v->len, &h);
            if (rc != MROCE_WIRE_EVERSION)
                fail_msg("%s: version %u: decode returned %d", v->name, ver,
                         rc);
        }
    }
}

/* R-HDR-6: a payload on a type without one is EPAYLOAD, even with a good
 * CRC over it. */
static void test_reject_payload_on_control(void **state)
{
    (void)state;
    static const size_t extra[] = {1, 4, 8, 100};
    for (size_t i = 0; i < N_VECTORS; i++) {
        const struct vector *v = &vectors[i];
        if (find_op(v->hdr.opcode)->headers & MROCE_H_PAYLOAD)
            continue;
        for (size_t e = 0; e < sizeof(extra) / sizeof(extra[0]); e++) {
            uint8_t pkt[256];
            struct mroce_hdr h;
            size_t body = v->len - MROCE_ICRC_LEN;
            memcpy(pkt, v->bytes, body);
            memset(pkt + body, 0x3c, extra[e]);
            size_t len = mroce_wire_seal(pkt, body + extra[e]);
            assert_int_equal(len, v->len + extra[e]);
            int rc = decode_copy(pkt, len, &h);
            if (rc != MROCE_WIRE_EPAYLOAD)
                fail_msg("%s + %zu bytes: decode returned %d", v->name,
                         extra[e], rc);
        }
    }
}

/* R-HDR-3, R-HDR-7: reserved bits and bytes are ignored on receipt: on
 * a packet without SEAL (0x2) the key phase bit 0x1 and the DXH
 * protection byte mean nothing (R-AEAD-1, R-AEAD-2). */
static void test_reserved_ignored(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_VECTORS; i++) {
        const struct vector *v = &vectors[i];
        const struct op_expect *op = find_op(v->hdr.opcode);
        uint8_t pkt[VEC_MAX];
        struct mroce_hdr h;
        uint32_t hold;
        memcpy(pkt, v->bytes, v->len);
        pkt[0] |= 0x01;
        if (v->hdr.opcode == MROCE_OP_ACKM) /* the preamble's byte 1 */
            pkt[vec_hdr_len(v) + 1] = 0xa5;
        if (op->headers & MROCE_H_PAD)
            pkt[MROCE_MTH_LEN + 9] = 0x5a; /* R-VAL-8: padding ignored */
        if (op->headers & MROCE_H_DXH) {
            pkt[MROCE_MTH_LEN + 6] = 0xab;
            pkt[MROCE_MTH_LEN + 7] = 0xcd;
        }
        if (op->headers & MROCE_H_NKH)
            pkt[MROCE_MTH_LEN + 7] = 0xef;
        reseal(pkt, v->len);
        assert_int_equal(decode_copy(pkt, v->len, &h), MROCE_WIRE_OK);
        assert_int_equal(h.flags & 0x3, 0);
        h.prot = 0;
        expect_hdr(v->name, &h, &v->hdr);
        if (v->hdr.opcode == MROCE_OP_ACKM) { /* h.payload was freed */
            assert_int_equal(mroce_wire_decode(pkt, v->len, &h), 0);
            assert_int_equal(mroce_ackm_check(&h, &hold), 2);
        }
    }
}

/* ---- (i) ACKM records: section 12.48 ------------------------------------- */

/* The two records of 12.48, as the receiver fills them in. */
static const struct mroce_ackm_rec ackm_recs[2] = {
    {.path = 5,
     .hold_ns = 1000, /* 125 units of 8 ns */
     .sack_high = 2000,
     .echo_ts = 0x075bc9a0,
     .ce_count = 0,
     .rx_count = 1990,
     .sack = {0xff00000000000000ull, 0, 0, 0}}, /* bits 0-7 */
    {.path = 9,
     .hold_ns = 264, /* 33 units */
     .sack_high = 70000,
     .echo_ts = 0x075bcb00,
     .ce_count = 3,
     .rx_count = 1234,
     /* bits 0, 2, 64, 255 */
     .sack = {0xa000000000000000ull, 0x8000000000000000ull, 0, 1}},
};

/* The codec builds 12.48 from its fields: mroce_ackm_put writes the
 * payload, mroce_wire_encode the packet; decoding it gives the fields
 * and records back (mroce_ackm_check, mroce_ackm_get). */
static void test_ackm_vector(void **state)
{
    (void)state;
    const struct vector *v = &vectors[N_VECTORS - 1];
    uint8_t pay[MROCE_ACKM_PRE_LEN + 2 * MROCE_ACKM_REC_LEN];
    uint8_t buf[sizeof(vec_ackm)];
    struct mroce_hdr h;
    struct mroce_ackm_rec r;
    uint32_t hold = 1;
    assert_int_equal(v->hdr.opcode, MROCE_OP_ACKM);
    assert_int_equal(MROCE_OP_ACKM, 0x12);
    memset(pay, 0xa5, sizeof(pay));
    assert_int_equal(mroce_ackm_put(pay, 0, ackm_recs, 2), sizeof(pay));
    assert_int_equal(mroce_ackm_len(2), sizeof(pay));
    assert_int_equal(
        mroce_wire_encode(&v->hdr, pay, sizeof(pay), buf, sizeof(buf)),
        (int)sizeof(vec_ackm));
    for (size_t k = 0; k < sizeof(vec_ackm); k++)
        if (buf[k] != vec_ackm[k])
            fail_msg("ackm: byte %zu: got 0x%02x, want 0x%02x", k, buf[k],
                     vec_ackm[k]);
    void *block; /* an exact-size copy, alive while h.payload is used */
    uint8_t *pkt = dup_exact(vec_ackm, sizeof(vec_ackm), &block);
    assert_int_equal(mroce_wire_decode(pkt, sizeof(vec_ackm), &h),
                     MROCE_WIRE_OK);
    expect_hdr("ackm", &h, &v->hdr);
    assert_int_equal(h.payload_len, sizeof(pay));
    assert_int_equal(mroce_ackm_check(&h, &hold), 2);
    assert_int_equal(hold, 0);
    for (unsigned i = 0; i < 2; i++) {
        memset(&r, 0xa5, sizeof(r));
        mroce_ackm_get(&h, i, &r);
        assert_int_equal(r.path, ackm_recs[i].path);
        assert_int_equal(r.hold_ns, ackm_recs[i].hold_ns);
        assert_int_equal(r.sack_high, ackm_recs[i].sack_high);
        assert_int_equal(r.echo_ts, ackm_recs[i].echo_ts);
        assert_int_equal(r.ce_count, ackm_recs[i].ce_count);
        assert_int_equal(r.rx_count, ackm_recs[i].rx_count);
        assert_memory_equal(r.sack, ackm_recs[i].sack, sizeof(r.sack));
    }
    /* Record bit i is PSN sack_high - i (R-HDR-14), as in the AKH. */
    mroce_ackm_get(&h, 1, &r);
    for (unsigned b = 0; b < MROCE_SACK_BITS; b++)
        assert_int_equal(mroce_sack_test(r.sack, b),
                         b == 0 || b == 2 || b == 64 || b == 255);
    free(block);
}

/* ---- (g) SACK bitmap layout: R-HDR-14 ------------------------------------ */

static void test_sack_helpers(void **state)
{
    (void)state;
    const struct vector *v = &vectors[6]; /* ACK, sack_high 1000 */
    struct mroce_hdr h;
    assert_int_equal(decode_copy(v->bytes, v->len, &h), MROCE_WIRE_OK);
    /* PSN p is bit (sack_high - p): 1000, 999, 997, 990 received. */
    for (unsigned b = 0; b < MROCE_SACK_BITS; b++) {
        uint32_t psn = h.sack_high - b;
        int want = psn == 1000 || psn == 999 || psn == 997 || psn == 990;
        assert_int_equal(mroce_sack_test(h.sack, b), want);
    }
    assert_int_equal(mroce_sack_test(h.sack, 0), 1); /* R-HDR-14 */
    /* Each bit alone: the helpers and the byte layout agree (bit i is
     * byte 20 + i / 8 of the AKH, MSB first). */
    for (unsigned b = 0; b < MROCE_SACK_BITS; b++) {
        struct mroce_hdr a = v->hdr, back;
        uint8_t pkt[sizeof(vec_ack)];
        memset(a.sack, 0, sizeof(a.sack));
        mroce_sack_set(a.sack, b);
        for (unsigned j = 0; j < MROCE_SACK_BITS; j++)
            assert_int_equal(mroce_sack_test(a.sack, j), j == b);
        assert_int_equal(mroce_wire_encode(&a, NULL, 0, pkt, sizeof(pkt)),
                         (int)sizeof(pkt));
        for (unsigned k = 0; k < 32; k++) {
            uint8_t want = k == b / 8 ? (uint8_t)(0x80u >> (b % 8)) : 0;
            assert_int_equal(pkt[MROCE_MTH_LEN + 20 + k], want);
        }
        assert_int_equal(decode_copy(pkt, sizeof(pkt), &back), MROCE_WIRE_OK);
        assert_memory_equal(back.sack, a.sack, sizeof(a.sack));
    }
    /* Setting is idempotent and cumulative. */
    uint64_t s[4] = {0, 0, 0, 0};
    mroce_sack_set(s, 0);
    mroce_sack_set(s, 1);
    mroce_sack_set(s, 3);
    mroce_sack_set(s, 10);
    mroce_sack_set(s, 10);
    assert_memory_equal(s, v->hdr.sack, sizeof(s));
}

/* ---- (g2) the per-packet fields of a data header: R-HDR-2 -------------- */

/* mroce_wire_patch_data over the header of one packet of a message gives
 * what mroce_wire_write_hdr writes for another packet of it, for every
 * opcode with a DXH (each vector's message fields), and writes nothing
 * past the DXH. */
static void test_patch_data(void **state)
{
    (void)state;
    static const uint8_t flags[] = {0, MROCE_HF_ACKREQ, MROCE_HF_RETX,
                                    MROCE_HF_ACKREQ | MROCE_HF_RETX, 0xf};
    int patched = 0;
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        const struct vector *v = &vectors[i];
        if (!(find_op(v->hdr.opcode)->headers & MROCE_H_DXH))
            continue;
        for (size_t k = 0; k < sizeof(flags); k++) {
            struct mroce_hdr h = v->hdr;
            h.flags = flags[k];
            h.path = (uint16_t)(0xa1b2 + k);
            h.psn = 0xc3d4e5f6u + (uint32_t)k;
            h.ts = 0x01234567u * (uint32_t)(k + 1);
            h.dsn = 0x89abcdefu - (uint32_t)k;
            h.offset = 0x00102000u + (uint32_t)k;
            uint8_t want[MROCE_MAX_HDR_LEN], got[MROCE_MAX_HDR_LEN];
            memset(want, 0x5a, sizeof(want));
            memset(got, 0x5a, sizeof(got));
            int hl = mroce_wire_write_hdr(&h, want, sizeof(want));
            assert_true(hl > 0 && hl <= MROCE_MAX_DATA_HDR_LEN);
            assert_int_equal(mroce_wire_write_hdr(&v->hdr, got, sizeof(got)),
                             hl);
            struct mroce_wire_pkt f = {.psn = h.psn,
                                       .ts = h.ts,
                                       .dsn = h.dsn,
                                       .offset = h.offset,
                                       .path = h.path,
                                       .flags = h.flags};
            mroce_wire_patch_data(got, &f);
            assert_memory_equal(got, want, sizeof(want));
            patched++;
        }
    }
    assert_true(patched >= 5 * 5); /* WRITE, WRITE_IMM, SEND, READ... */
}

/* ---- (h) opcode table: R-HDR-4 ------------------------------------------- */

static void test_op_table(void **state)
{
    (void)state;
    for (unsigned op = 0; op < 256; op++) {
        const struct op_expect *e = find_op(op);
        const struct mroce_op_info *oi = mroce_wire_op_info((uint8_t)op);
        assert_non_null(mroce_wire_op_name((uint8_t)op));
        if (!e) {
            assert_null(oi);
            assert_int_equal(mroce_wire_hdr_len((uint8_t)op), 0);
            continue;
        }
        assert_non_null(oi);
        assert_string_equal(oi->name, e->name);
        assert_string_equal(mroce_wire_op_name((uint8_t)op), e->name);
        assert_int_equal(oi->headers, e->headers);
        assert_int_equal(oi->hdr_len, spec_hdr_len(oi->headers));
        assert_int_equal(mroce_wire_hdr_len((uint8_t)op), oi->hdr_len);
        assert_true(oi->hdr_len <= MROCE_MAX_HDR_LEN);
    }
    /* R-ENC-9: the largest data headers are WRITE_IMM's 56 bytes. */
    size_t max_data = 0;
    for (unsigned op = MROCE_OP_WRITE; op <= MROCE_OP_READ_RESP; op++)
        if (mroce_wire_hdr_len((uint8_t)op) > max_data)
            max_data = mroce_wire_hdr_len((uint8_t)op);
    assert_int_equal(max_data, 56);
    assert_int_equal(MROCE_MAX_DATA_HDR_LEN, max_data);
    /* The header-length constants match spec section 3. */
    assert_int_equal(MROCE_MTH_LEN, 16);
    assert_int_equal(MROCE_DXH_LEN, 20);
    assert_int_equal(MROCE_RETH_LEN, 12);
    assert_int_equal(MROCE_SNH_LEN, 4);
    assert_int_equal(MROCE_IMM_LEN, 4);
    assert_int_equal(MROCE_AKH_LEN, 52);
    assert_int_equal(MROCE_NKH_LEN, 16);
    assert_int_equal(MROCE_ICRC_LEN, 4);
    assert_int_equal(MROCE_MAX_HDR_LEN, 68);
    assert_int_equal(MROCE_UDP_PORT_DEFAULT, 4797);
    for (uint8_t c = MROCE_NAK_RNR; c <= MROCE_NAK_CONN_CLOSED; c++)
        assert_non_null(mroce_wire_nak_name(c));
    assert_string_equal(mroce_wire_nak_name(MROCE_NAK_RNR), "RNR");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c_check_value),
        cmocka_unit_test(test_crc32c_rfc3720),
        cmocka_unit_test(test_vectors_icrc),
        cmocka_unit_test(test_vectors_encode),
        cmocka_unit_test(test_vectors_write_hdr_seal),
        cmocka_unit_test(test_encode_masks_reserved_flags),
        cmocka_unit_test(test_encode_errors),
        cmocka_unit_test(test_vectors_decode),
        cmocka_unit_test(test_roundtrip_zero_length),
        cmocka_unit_test(test_write_imm_layout),
        cmocka_unit_test(test_vectors_byte_flip),
        cmocka_unit_test(test_vectors_truncation),
        cmocka_unit_test(test_reject_unknown_opcode),
        cmocka_unit_test(test_reject_reserved_opcode_0x21),
        cmocka_unit_test(test_reject_version),
        cmocka_unit_test(test_reject_payload_on_control),
        cmocka_unit_test(test_reserved_ignored),
        cmocka_unit_test(test_sack_helpers),
        cmocka_unit_test(test_patch_data),
        cmocka_unit_test(test_op_table),
        cmocka_unit_test(test_ackm_vector),
    };
    return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
