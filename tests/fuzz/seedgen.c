/* Writes the seed corpora of the fuzzers, so no generated file lives in
 * git: usage `mroce_fuzz_seedgen WIRE_DIR RX_DIR [CM_DIR]` (each must
 * exist).
 *
 * wire: one valid packet per opcode (the codec's own encoder), payloads
 * of several sizes, reserved bits set, and packets long enough for every
 * CRC32C lane size; ACKMs with 0, 1, 2 and 32 path records
 * (mroce_ackm_put), one with its reserved byte set, one whose count
 * does not match its length and one with 33 records.
 * rx: short record sequences (rx_records.h) for the main scenarios:
 * inbound WRITE/SEND/READ, ACKs of the engine's sends, NACKs, READ
 * responses, probes, close, timers, raw and mutated packets.
 * cm: CM message streams from src/cm's encoder: HELLOs (one and two
 * planes, IPv6, RoCEv2 QPs, a blob, extensions, the key's tag), READY,
 * APP, REJECT, a client's whole stream, a version 1 HELLO. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce.h>

#include "cm/msg.h"
#include "fuzz/rx_records.h"
#include "wire/ackm.h"
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
    MROCE_OP_WRITE,    MROCE_OP_WRITE_IMM, MROCE_OP_SEND,  MROCE_OP_SEND_IMM,
    MROCE_OP_READ_REQ, MROCE_OP_READ_RESP, MROCE_OP_ACK,   MROCE_OP_NACK,
    MROCE_OP_ACKM,     MROCE_OP_PROBE,     MROCE_OP_CLOSE, MROCE_OP_CLOSE_ACK};

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

/* ACKMs (section 3.15) with n records; variant 4 sets the reserved
 * byte, 5 a count that does not match the length, 6 has 33 records. */
static int gen_wire_ackm(const char *dir, int *n)
{
    static uint8_t pay[MROCE_ACKM_PRE_LEN +
                       (MROCE_ACKM_MAX_RECS + 1) * MROCE_ACKM_REC_LEN];
    static uint8_t buf[MROCE_MAX_HDR_LEN + sizeof(pay) + MROCE_ICRC_LEN];
    static const unsigned counts[] = {
        0, 1, 2, MROCE_ACKM_MAX_RECS, 2, 2, MROCE_ACKM_MAX_RECS};
    struct mroce_ackm_rec recs[MROCE_ACKM_MAX_RECS];
    for (unsigned i = 0; i < MROCE_ACKM_MAX_RECS; i++)
        recs[i] = (struct mroce_ackm_rec){
            .path = (uint16_t)(i + 1),
            .hold_ns = 8u * 125u * i,
            .sack_high = 300u + i,
            .echo_ts = 0xCAFEF000u + i,
            .ce_count = (uint16_t)i,
            .rx_count = (uint16_t)(40u + i),
            .sack = {0xF000000000000000ull >> (i % 8), 0, 0, i}};
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        struct mroce_hdr h;
        wire_hdr(&h, MROCE_OP_ACKM, (int)k);
        size_t plen = mroce_ackm_put(pay, 1000u * (uint32_t)k, recs, counts[k]);
        if (k == 4)
            pay[1] = 0xFF;
        if (k == 5)
            pay[0] = 3;
        if (k == 6) { /* one record too many, length and count agree */
            memcpy(pay + plen, pay + plen - MROCE_ACKM_REC_LEN,
                   MROCE_ACKM_REC_LEN);
            plen += MROCE_ACKM_REC_LEN;
            pay[0] = MROCE_ACKM_MAX_RECS + 1;
        }
        int len = mroce_wire_encode(&h, pay, (uint32_t)plen, buf, sizeof(buf));
        if (len < 0 || write_file(dir, "wire", (*n)++, buf, (size_t)len))
            return -1;
    }
    return 0;
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
    if (write_file(dir, "wire", n++, buf, (size_t)len) ||
        gen_wire_ackm(dir, &n))
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

    /* ACKMs to the engine: well formed with holds 0, 1000, 264, 128 ns,
     * then ones its sender must refuse whole (section 3.15) */
    REC(&s[n], RX_ACK_ALL, RX_AF_ACKM, 0, 0, 0, 0, 0, 0x7D, 0, 0x21, 0, 0x10);
    REC(&s[n], RX_TIME, 0);
    REC(&s[n], RX_ACK_ALL, RX_AF_ACKM, 0, RX_AM_DUP);
    REC(&s[n], RX_ACK_ALL, RX_AF_ACKM, 0, RX_AM_SELF);
    REC(&s[n], RX_ACK_ALL, RX_AF_ACKM, 0, RX_AM_COUNT);
    REC(&s[n++], RX_ACK_ALL, RX_AF_ACKM | RX_AF_HOLES, 0, RX_AM_FAR, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 9);

    /* a 2048-byte WRITE in 8 packets, reversed, one path after the other:
     * packets above a DSN hole, so the engine's ACKs wait as records and
     * leave as ACKMs (section 3.15), at once or when the hold bound expires */
    REC(&s[n], RX_DATA_MSG, 0, 0, 0, 13, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        RX_MF_REVERSE | RX_MF_SPREAD, 0);
    REC(&s[n], RX_TIME, 0);
    REC(&s[n++], RX_ACK_ALL, RX_AF_ACKM, 0, 0);

    for (int i = 0; i < n; i++)
        if (write_file(dir, "rx", i, s[i].buf, s[i].len))
            return -1;
    return 0;
}

/* ---- cm ---- */

static void cm_seed_hello(struct cm_hello *h, int variant)
{
    memset(h, 0, sizeof(*h));
    h->proto_min = h->proto_max = 1;
    h->modes = MROCE_CM_MODE_NONE;
    h->keepalive_ms = 1000;
    struct mroce_conn_params *p = &h->p;
    p->conn_id = 0xC0FFEE;
    p->udp_port = 4797;
    p->n_planes = variant == 1 ? 2 : 1;
    for (int i = 0; i < p->n_planes; i++) {
        p->plane_addr[i].family = variant == 2 ? MROCE_AF_INET6 : MROCE_AF_INET;
        p->plane_addr[i].ip[0] = variant == 2 ? 0xfd : 127;
        p->plane_addr[i].ip[3] = 1;
        p->plane_addr[i].ip[15] = (uint8_t)i;
    }
    p->addr = p->plane_addr[0];
    p->n_paths = 16, p->n_streams = 1, p->mtu = 4096, p->dsn_window = 4096;
    p->msg_window = 64, p->max_rd = 16, p->path_window = 256;
    p->ack_every = 1, p->ack_delay_ns = 2000, p->min_rto_ns = 100000;
    p->max_rto_ns = 100000000, p->retry_cnt = 7, p->rnr_retry = 7;
    p->rnr_max_us = 100;
    if (variant == 3) { /* the RoCEv2 baseline with queue pairs */
        h->transport = p->transport = MROCE_TRANSPORT_ROCEV2;
        p->n_qps = 4;
        for (int i = 0; i < 4; i++)
            p->qpn[i] = 0x100u + (uint32_t)i, p->psn[i] = 7u * (uint32_t)i;
    }
    static const uint8_t ext[] = {0x00, 0x01, 0x00, 0x02, 0xAB,
                                  0xCD, 0x80, 0x02, 0x00, 0x00};
    if (variant == 4)
        h->ext = ext, h->ext_len = sizeof(ext);
    if (variant == 5) {
        h->features = h->required = CM_FEAT_PSK;
        h->modes = 7;
        memset(h->psk_id, 0x5A, CM_PSK_ID_LEN);
    }
    h->blob = (const uint8_t *)"demo";
    h->blob_len = variant == 6 ? 4 : 0;
}

static int gen_cm(const char *dir)
{
    static uint8_t buf[4 * CM_MSG_MAX];
    int err = 0, k = 0;
    for (int v = 0; v < 7; v++) {
        struct cm_hello h;
        cm_seed_hello(&h, v);
        int n = cm_encode_hello(&h, buf, CM_MSG_MAX);
        err |= n <= 0 || write_file(dir, "cm", k++, buf, (size_t)n);
    }
    struct cm_hello h;
    cm_seed_hello(&h, 0);
    size_t n = (size_t)cm_encode_hello(&h, buf, CM_MSG_MAX);
    n += (size_t)cm_encode_simple(CM_READY, NULL, 0, buf + n, CM_MSG_MAX);
    n += (size_t)cm_encode_simple(CM_APP, "hello", 5, buf + n, CM_MSG_MAX);
    n += (size_t)cm_encode_simple(CM_KEEPALIVE, NULL, 0, buf + n, CM_MSG_MAX);
    n += (size_t)cm_encode_simple(CM_BYE, NULL, 0, buf + n, CM_MSG_MAX);
    err |= write_file(dir, "cm", k++, buf, n); /* a client's whole stream */
    int r =
        cm_encode_reject(MROCE_CM_REJ_ADDRESS, 1, "not yours", buf, CM_MSG_MAX);
    err |= write_file(dir, "cm", k++, buf, (size_t)r);
    r = cm_encode_simple(CM_READY, buf, CM_TAG_LEN, buf, CM_MSG_MAX);
    err |= write_file(dir, "cm", k++, buf, (size_t)r);
    buf[4] = 1; /* a version 1 peer */
    err |= write_file(dir, "cm", k++, buf, (size_t)r);
    return err;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s WIRE_DIR RX_DIR [CM_DIR]\n", argv[0]);
        return 2;
    }
    int err = gen_wire(argv[1]) || gen_rx(argv[2]);
    if (argc == 4)
        err |= gen_cm(argv[3]);
    return err ? 1 : 0;
}
