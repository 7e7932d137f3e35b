/* libFuzzer target for the secure modes' receive path (docs/spec.md
 * section 3.14, R-AEAD-8, R-AEAD-9).
 *
 * One engine context with two connections to an invented peer, one
 * authenticated and one encrypted, set up once and rebuilt every 64
 * inputs. The fuzzer plays the peer and holds its keys (derived with the
 * engine's own schedule, eng_seal_derive, whose output the vectors of
 * spec 12.43-12.46 pin down), so most records are authentic packets whose
 * fields it bends: they reach the engine's checks behind the tag. Records:
 *
 *   0: an authentic sealed packet (any opcode, path, PSN near the window,
 *      DSN, lengths, payload, key epoch 0-2, CSN);
 *   1: the same with one bit flipped: MUST be refused;
 *   2: the last accepted packet again: MUST be refused (a replay);
 *   3: raw bytes;  4: time passes, timers run;  5: the engine posts a
 *      WRITE or a receive.
 *
 * Oracles (abort): mroce_ctx_rx returns 0 or MROCE_EPROTO; tampered and
 * replayed packets return MROCE_EPROTO; every packet the engine sends
 * opens under the peer's key for its epoch (the one before, or the next);
 * the guard bytes around each registered region never change. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce.h>
#include <mroce/mroce_crypto.h>

#include "engine/seal.h"
#include "fuzz/fuzz_rd.h"
#include "wire/aead.h"

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "aead_rx_fuzz: %s:%d: %s\n", __FILE__, __LINE__,   \
                    #cond);                                                    \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define T0 1000000ull
#define MTU 512
#define N_PATHS 4
#define REGION 8192
#define GUARD 1024
#define INIT_PSN 1000u
#define RESET_EVERY 64
#define PKT_MAX (MROCE_MAX_HDR_LEN + MTU + 64)

static const uint8_t secret[MROCE_SECRET_LEN] = {0xa5, 1, 2, 3, 4, 5};
static const uint8_t ops[] = {
    MROCE_OP_WRITE,    MROCE_OP_WRITE_IMM, MROCE_OP_SEND,     MROCE_OP_SEND_IMM,
    MROCE_OP_READ_REQ, MROCE_OP_READ_RESP, MROCE_OP_ACK,      MROCE_OP_NACK,
    MROCE_OP_PROBE,    MROCE_OP_CLOSE,     MROCE_OP_CLOSE_ACK};

struct side {
    int mode;
    struct mroce_conn *conn;
    struct mroce_mr *mr;
    uint8_t *arena; /* GUARD | REGION | GUARD */
    uint32_t local_id, peer_id;
    uint32_t rx_epoch; /* highest epoch an engine packet opened in */
    uint8_t last[PKT_MAX];
    size_t last_len;
};

static struct {
    uint64_t accepted; /* authentic packets through R-AEAD-8 */
    const struct mroce_crypto *cr;
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    struct side s[2];
    uint64_t now;
    int inputs;
} g;

static void side_open(struct side *s, int mode, uint32_t peer_id)
{
    s->mode = mode;
    s->peer_id = peer_id;
    s->arena = malloc(REGION + 2 * GUARD);
    CHECK(s->arena);
    memset(s->arena, 0xA5, REGION + 2 * GUARD);
    CHECK(mroce_reg_mr(g.pd, s->arena + GUARD, REGION,
                       MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                           MROCE_ACCESS_REMOTE_READ,
                       &s->mr) == 0);
    struct mroce_conn_attr a = {.send_cq = g.cq,
                                .recv_cq = g.cq,
                                .n_paths = N_PATHS,
                                .n_streams = 2,
                                .sq_depth = 8,
                                .rq_depth = 8,
                                .dsn_window = 64};
    CHECK(mroce_conn_create(g.pd, &a, &s->conn) == 0);
    CHECK(mroce_conn_set_secret(s->conn, mode, secret, sizeof(secret)) == 0);
    struct mroce_conn_params mine, peer;
    mroce_conn_get_params(s->conn, &mine);
    s->local_id = mine.conn_id;
    peer = mine;
    peer.conn_id = peer_id;
    peer.addr.ip[3] = 2;
    peer.n_planes = 0; /* addr on every plane */
    peer.init_psn = INIT_PSN;
    CHECK(mroce_conn_connect(s->conn, &peer) == 0);
    mroce_conn_aead_limit(s->conn, 24, 0); /* key updates happen */
    s->rx_epoch = 0;
    s->last_len = 0;
}

static void setup(void)
{
    uint64_t accepted = g.accepted;
    memset(&g, 0, sizeof(g));
    g.accepted = accepted;
    g.cr = mroce_crypto_default();
    CHECK(g.cr);
    struct mroce_ctx_attr a = {.seed = 7, .mtu = MTU, .crypto = g.cr};
    a.addr.family = MROCE_AF_INET;
    a.addr.ip[0] = 10;
    a.addr.ip[3] = 1;
    CHECK(mroce_ctx_open(&a, &g.ctx) == 0);
    CHECK(mroce_pd_alloc(g.ctx, &g.pd) == 0);
    CHECK(mroce_cq_create(g.ctx, 256, &g.cq) == 0);
    side_open(&g.s[0], MROCE_SEC_AUTH, 0x11111111);
    side_open(&g.s[1], MROCE_SEC_ENCRYPT, 0x22222222);
    g.now = T0;
}

static void check_guards(const struct side *s)
{
    for (int i = 0; i < GUARD; i++) {
        CHECK(s->arena[i] == 0xA5);
        CHECK(s->arena[GUARD + REGION + i] == 0xA5);
    }
}

static void teardown(void)
{
    for (int i = 0; i < 2; i++)
        check_guards(&g.s[i]);
    mroce_ctx_close(g.ctx);
    for (int i = 0; i < 2; i++)
        free(g.s[i].arena);
}

/* ---- the peer's keys (the engine's schedule, R-AEAD-6) ---- */

static void *key_of(int mode, uint32_t dst, uint32_t src, uint32_t epoch,
                    uint8_t *iv)
{
    uint8_t key[16];
    CHECK(eng_seal_derive(g.cr, mode, secret, dst, src, epoch, key, iv) == 0);
    void *k = g.cr->key_new(g.cr->ud, key);
    CHECK(k);
    return k;
}

/* Seals buf[0, hl) + payload as the peer under epoch e. */
static size_t peer_seal(const struct side *s, uint8_t *buf, size_t hl,
                        const uint8_t *payload, size_t plen, uint32_t e,
                        uint32_t csn)
{
    bool enc = s->mode == MROCE_SEC_ENCRYPT;
    mroce_aead_frame(buf, e & 1, csn, enc);
    memcpy(buf + hl, payload, plen);
    uint8_t iv[12], nonce[12];
    void *k = key_of(s->mode, s->local_id, s->peer_id, e, iv);
    mroce_aead_nonce(iv, buf, nonce);
    int rc = enc ? g.cr->seal(g.cr->ud, k, nonce, buf, hl, NULL, 0, buf + hl,
                              buf + hl, plen, buf + hl + plen)
                 : g.cr->seal(g.cr->ud, k, nonce, buf, hl + plen, NULL, 0, NULL,
                              NULL, 0, buf + hl + plen);
    g.cr->key_free(g.cr->ud, k);
    CHECK(rc == 0);
    return hl + plen + MROCE_TAG_LEN;
}

/* An engine packet must open in the epoch it says (R-AEAD-7). */
static bool engine_opens(struct side *s, const uint8_t *buf, size_t len)
{
    const struct mroce_op_info *oi = mroce_wire_op_info(buf[1]);
    CHECK(oi && (buf[0] & MROCE_HF_SEAL) && len >= oi->hdr_len + 16u);
    size_t hl = oi->hdr_len, plen = len - hl - MROCE_TAG_LEN;
    static uint8_t out[PKT_MAX];
    for (uint32_t e = s->rx_epoch; e <= s->rx_epoch + 1; e++) {
        if ((e & 1) != (buf[0] & MROCE_HF_KPHASE))
            continue;
        uint8_t iv[12], nonce[12];
        void *k = key_of(s->mode, s->peer_id, s->local_id, e, iv);
        mroce_aead_nonce(iv, buf, nonce);
        int rc = s->mode == MROCE_SEC_ENCRYPT
                     ? g.cr->open(g.cr->ud, k, nonce, buf, hl, NULL, 0,
                                  buf + hl, out, plen, buf + len - 16)
                     : g.cr->open(g.cr->ud, k, nonce, buf, hl + plen, NULL, 0,
                                  NULL, NULL, 0, buf + len - 16);
        g.cr->key_free(g.cr->ud, k);
        if (rc == 0) {
            s->rx_epoch = e;
            return true;
        }
    }
    return false;
}

static void drain(void)
{
    static uint8_t buf[PKT_MAX + 64];
    struct mroce_pkt_meta m;
    struct mroce_wc wc[16];
    for (int n = 0; n < 4096; n++) {
        int len = mroce_ctx_tx(g.ctx, g.now, buf, sizeof(buf), &m);
        CHECK(len >= 0);
        if (!len)
            break;
        uint32_t conn = (uint32_t)buf[4] << 24 | (uint32_t)buf[5] << 16 |
                        (uint32_t)buf[6] << 8 | buf[7];
        struct side *s = conn == g.s[0].peer_id ? &g.s[0] : &g.s[1];
        CHECK(conn == s->peer_id);
        CHECK(engine_opens(s, buf, (size_t)len));
    }
    while (mroce_poll_cq(g.cq, 16, wc) > 0)
        ;
}

static int feed(const uint8_t *buf, size_t len)
{
    struct mroce_pkt_meta m = {
        .src = {.family = MROCE_AF_INET, .ip = {10, 0, 0, 2}},
        .dst = {.family = MROCE_AF_INET, .ip = {10, 0, 0, 1}},
        .src_port = 50000,
        .dst_port = MROCE_UDP_PORT};
    int rc = mroce_ctx_rx(g.ctx, g.now, &m, buf, len);
    CHECK(rc == 0 || rc == MROCE_EPROTO);
    return rc;
}

/* ---- records ---- */

static size_t build(struct rd *r, struct side *s, uint8_t *buf)
{
    struct mroce_hdr h = {0};
    h.opcode = ops[rd_u8(r) % sizeof(ops)];
    h.flags = rd_u8(r) & MROCE_HF_MASK;
    h.path = (uint16_t)(rd_u8(r) % (N_PATHS + 1));
    h.conn = s->local_id;
    h.psn = INIT_PSN + rd_u16(r) % 512 - 16;
    h.ts = rd_u32(r);
    h.dsn = rd_u8(r) % 80;
    h.stream = (uint16_t)(rd_u8(r) % 3);
    h.msn = rd_u8(r) % 12;
    h.msg_len = rd_u16(r) % 3000;
    h.offset = (rd_u8(r) % 6) * MTU;
    h.va = (uint64_t)(uintptr_t)(s->arena + GUARD) + rd_u16(r) % (REGION + 64);
    h.rkey = rd_u8(r) & 1 ? mroce_mr_rkey(s->mr) : rd_u32(r);
    h.ssn = rd_u8(r) % 4;
    h.sack_high = rd_u32(r);
    h.dsn_cum = rd_u32(r);
    h.nak_code = rd_u8(r) % 7;
    uint32_t epoch = rd_u8(r) % 3, csn = rd_u16(r) % 300;
    const struct mroce_op_info *oi = mroce_wire_op_info(h.opcode);
    size_t plen = (oi->headers & MROCE_H_PAYLOAD) ? rd_u16(r) % (MTU + 1) : 0;
    uint8_t pay[MTU];
    for (size_t i = 0; i < plen; i++)
        pay[i] = rd_u8(r);
    int hl = mroce_wire_write_hdr(&h, buf, PKT_MAX);
    CHECK(hl > 0);
    return peer_seal(s, buf, (size_t)hl, pay, plen, epoch, csn);
}

static void record(struct rd *r)
{
    uint8_t kind = rd_u8(r) % 6;
    struct side *s = &g.s[rd_u8(r) & 1];
    static uint8_t buf[PKT_MAX];
    size_t n;
    switch (kind) {
    case 0:
        n = build(r, s, buf);
        if (feed(buf, n) == 0) {
            g.accepted++;
            memcpy(s->last, buf, n);
            s->last_len = n;
        }
        break;
    case 1: {
        n = build(r, s, buf);
        size_t bit = rd_u16(r) % (8 * n);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        CHECK(feed(buf, n) == MROCE_EPROTO); /* R-AEAD-8 */
        break;
    }
    case 2:
        if (s->last_len)
            CHECK(feed(s->last, s->last_len) == MROCE_EPROTO); /* R-AEAD-9 */
        break;
    case 3:
        n = rd_u16(r) % (PKT_MAX + 1);
        for (size_t i = 0; i < n; i++)
            buf[i] = rd_u8(r);
        feed(buf, n);
        break;
    case 4:
        g.now += rd_u32(r) % 5000000;
        mroce_ctx_on_expiry(g.ctx, g.now);
        break;
    default: {
        uint32_t len = rd_u16(r) % 3000;
        struct mroce_send_wr w = {
            .wr_id = 1,
            .stream = (uint16_t)(rd_u8(r) % 2),
            .sge = {(uint64_t)(uintptr_t)(s->arena + GUARD), len,
                    mroce_mr_lkey(s->mr)},
            .remote_addr = 0x7f0000000000ull,
            .rkey = 0x1234};
        if (rd_u8(r) & 1) {
            struct mroce_recv_wr rw = {
                .wr_id = 2, .stream = w.stream, .sge = w.sge};
            mroce_post_recv(s->conn, &rw);
        } else {
            mroce_post_write(s->conn, &w);
        }
        break;
    }
    }
    drain();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g.ctx)
        setup();
    struct rd r = {data, size};
    while (r.n)
        record(&r);
    for (int i = 0; i < 2; i++)
        check_guards(&g.s[i]);
    if (++g.inputs % RESET_EVERY == 0) {
        teardown();
        setup();
    }
    return 0;
}
