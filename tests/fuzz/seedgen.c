/* Writes the seed corpora of the fuzzers, so no generated file lives in
 * git: usage `mroce_fuzz_seedgen WIRE_DIR RX_DIR` (both must exist).
 *
 * wire: one valid packet per opcode (the codec's own encoder), payloads
 * of several sizes, reserved bits set, and packets long enough for every
 * CRC32C lane size.
 * rx: short record sequences (rx_records.h) for the main scenarios:
 * inbound WRITE/SEND/READ, ACKs of the engine's sends, NACKs, READ
 * responses, probes, close, timers, raw and mutated packets. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce.h>

#include "fuzz/rx_records.h"
#include "wire/wire.h"

static int write_file(const char *dir, const char *name, int i,
                      const uint8_t *buf, size_t len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s-%02d", dir, name, i);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

/* ---- wire ---- */

static const uint8_t wire_ops[] = {
    MROCE_OP_WRITE,    MROCE_OP_WRITE_IMM, MROCE_OP_SEND,     MROCE_OP_SEND_IMM,
    MROCE_OP_READ_REQ, MROCE_OP_READ_RESP, MROCE_OP_ACK,      MROCE_OP_NACK,
    MROCE_OP_PROBE,    MROCE_OP_CLOSE,     MROCE_OP_CLOSE_ACK};

static void wire_hdr(struct mroce_hdr *h, uint8_t op, int variant)
{
    memset(h, 0, sizeof(*h));
    h->opcode = op;
    h->flags = variant & 1 ? MROCE_HF_ACKREQ : MROCE_HF_RETX;
    h->path = (uint16_t)variant;
    h->conn = 0x12345678u;
    h->psn = 7u + (uint32_t)variant;
    h->ts = 0xCAFEF00Du;
    h->dsn = 100;
    h->stream = 1;
    h->msn = 3;
    h->msg_len = 4096;
    h->offset = 1024;
    h->va = 0x7F0000001000ull;
    h->rkey = 0xABCDEF01u;
    h->ssn = 5;
    h->imm = 0x11223344u;
    h->sack_high = 300;
    h->dsn_cum = 90;
    h->echo_ts = 0xCAFEF000u;
    h->rate_mbps = 25000;
    h->ce_count = 2;
    h->rx_count = 40;
    h->sack[0] = 0xF0F0F0F0F0F0F0F0ull;
    h->sack[3] = 1;
    h->nak_code = MROCE_NAK_RNR;
    h->nak_info = 100;
}

static int gen_wire(const char *dir)
{
    static uint8_t pay[4200], buf[4400];
    static const uint32_t plens[] = {0, 1, 256, 4100};
    int n = 0;
    for (size_t i = 0; i < sizeof(pay); i++)
        pay[i] = (uint8_t)(i * 13 + 5);
    for (size_t o = 0; o < sizeof(wire_ops); o++) {
        const struct mroce_op_info *oi = mroce_wire_op_info(wire_ops[o]);
        size_t np = (oi->headers & MROCE_H_PAYLOAD) ? 4 : 1;
        for (size_t k = 0; k < np; k++) {
            struct mroce_hdr h;
            wire_hdr(&h, wire_ops[o], (int)k);
            int len = mroce_wire_encode(&h, pay, plens[k], buf, sizeof(buf));
            if (len < 0 || write_file(dir, "wire", n++, buf, (size_t)len))
                return -1;
        }
    }
    /* the reserved flag bit and reserved DXH bytes set: still accepted */
    struct mroce_hdr h;
    wire_hdr(&h, MROCE_OP_SEND, 0);
    int len = mroce_wire_encode(&h, pay, 10, buf, sizeof(buf));
    buf[0] |= 0x1;
    buf[MROCE_MTH_LEN + 6] = 0xFF;
    len = (int)mroce_wire_seal(buf, (size_t)len - MROCE_ICRC_LEN);
    if (write_file(dir, "wire", n++, buf, (size_t)len))
        return -1;
    /* sealed (R-AEAD-1): a 16-byte tag instead of the ICRC */
    memset(buf + len - MROCE_ICRC_LEN, 0xA5, 16);
    buf[0] |= 0x2;
    return write_file(dir, "wire", n, buf, (size_t)len + 12);
}

/* ---- rx ---- */

struct seed {
    uint8_t buf[512];
    size_t len;
};

static void rec(struct seed *s, int kind, const uint8_t *body, size_t n)
{
    s->buf[s->len++] = rx_sel_of_kind(kind);
    if (kind == RX_RAW || kind == RX_MUTATE)
        s->buf[s->len++] = (uint8_t)(n >> 8);
    s->buf[s->len++] = (uint8_t)n;
    memcpy(s->buf + s->len, body, n);
    s->len += n;
}

#define REC(s, kind, ...)                                                      \
    do {                                                                       \
        static const uint8_t b_[] = {__VA_ARGS__};                             \
        rec(s, kind, b_, sizeof(b_));                                          \
    } while (0)

static void seed_inbound(struct seed *s, uint8_t op, uint8_t len_idx)
{
    uint8_t b[] = {op, 0, 0, len_idx, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
    rec(s, RX_DATA_MSG, b, sizeof(b));
}

static int gen_rx(const char *dir)
{
    struct seed s[16];
    memset(s, 0, sizeof(s));
    int n = 0;

    seed_inbound(&s[n], 0, 9); /* WRITE 600 bytes, then ACKs */
    REC(&s[n], RX_ACK_ALL, 0, 0);
    REC(&s[n++], RX_TIME, 0);

    seed_inbound(&s[n], 1, 6); /* SEND 300 + SEND_IMM 1 */
    seed_inbound(&s[n], 4, 1);
    REC(&s[n++], RX_ACK_ALL, 0, 0);

    REC(&s[n], RX_ACK_ALL, 0, 0); /* READ_REQ, its response acked */
    seed_inbound(&s[n], 2, 9);
    REC(&s[n], RX_ACK_ALL, 0, 0);
    REC(&s[n++], RX_ACK_ALL, 0, 0);

    REC(&s[n], RX_READ_RESP, 0, 0, 0, 0); /* answer the engine's READs */
    REC(&s[n], RX_ACK_ALL, 0, 0);
    REC(&s[n], RX_READ_RESP, 1, 0, 0, 1);
    REC(&s[n++], RX_ACK_ALL, 0, 0);

    REC(&s[n], RX_NACK, 0, 0); /* RNR, wait, then everything acked */
    REC(&s[n], RX_TIME, 0);
    REC(&s[n], RX_ACK_ALL, 0, 0);
    REC(&s[n++], RX_NACK, 1, 1);

    REC(&s[n], RX_ACK_ALL, RX_AF_HOLES, 0, 2, 0, 1); /* SACK holes: loss */
    REC(&s[n], RX_TIME, 3);
    REC(&s[n++], RX_ACK_ALL, 0, 0);

    REC(&s[n], RX_PROBE, 0); /* probes, then the peer closes */
    REC(&s[n], RX_PROBE, 1);
    REC(&s[n], RX_CLOSE, 0);
    REC(&s[n++], RX_CLOSE, 1);

    REC(&s[n], RX_API, RX_API_DISCONNECT, RX_API_DISCONNECT_MAGIC);
    REC(&s[n++], RX_CLOSE, 1);

    seed_inbound(&s[n], 3, 2); /* WRITE_IMM out of order, duplicated */
    REC(&s[n], RX_DATA_MSG, 1, 1, 1, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        RX_MF_REVERSE | RX_MF_DUP, 0);
    REC(&s[n++], RX_TIME, 0);

    REC(&s[n], RX_MUTATE, 0, 1, 0, 1, 0x7F, 0x01, 0, 0); /* one byte */
    REC(&s[n], RX_RAW, 0x07, 0x10, 0x01, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0);
    REC(&s[n++], RX_DATA_PKT, 0, 0, 0, 0, 0, 0, 4, 0, 0);

    REC(&s[n], RX_API, RX_API_RECV, 1, 6); /* more posts, path changes */
    REC(&s[n], RX_API, RX_API_READ, 0, 9, 0, 0);
    REC(&s[n], RX_API, RX_API_PATH, 0x04);
    REC(&s[n], RX_API, RX_API_META, MROCE_ECN_CE);
    REC(&s[n++], RX_ACK_ALL, 0, 0);

    for (int i = 0; i < 4; i++) /* READs fill the response slots, */
        seed_inbound(&s[n], 2, 0);
    seed_inbound(&s[n], 2, 2); /* one waits; its region moves (R-MSG-17) */
    REC(&s[n], RX_API, RX_API_REREG, 0);
    REC(&s[n++], RX_ACK_ALL, 0, 0);

    REC(&s[n], RX_TIME, 2, 0, 0x98, 0x96, 0x80); /* 10 ms: timeouts */
    REC(&s[n], RX_TIME, 0);
    REC(&s[n++], RX_ACK_RAW, 0, 0, 0, 0, 0, 0);

    for (int i = 0; i < n; i++)
        if (write_file(dir, "rx", i, s[i].buf, s[i].len))
            return -1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s WIRE_DIR RX_DIR\n", argv[0]);
        return 2;
    }
    return gen_wire(argv[1]) || gen_rx(argv[2]) ? 1 : 0;
}
