/* Section 3: the packet format. Every opcode the IUT sends, byte by byte
 * at the offsets of the field tables; reserved and defined-zero fields
 * ignored on receipt; the SACK bitmap layout across its 64-bit words;
 * MTH ts; the ICRC's parameters. */
#include <string.h>

#include "conform/cf.h"
#include "wire/be.h"
#include "wire/crc32c.h"

#define BE16(p, o) mroce_be16_get((p)->buf + (o))
#define BE32(p, o) mroce_be32_get((p)->buf + (o))
#define BE64(p, o) mroce_be64_get((p)->buf + (o))

/* The MTH of an IUT packet: version 1, flags as given, opcode, conn. */
static void hdr_mth(struct cf_t *t, const struct cf_pkt *pk, uint8_t op)
{
    const uint8_t *b = pk->buf;
    CF_CHECK(t, b[0] >> 4 == 1 && !(b[0] & 3), "byte 0 is 0x%02x", b[0]);
    CF_CHECK(t, b[1] == op, "opcode 0x%02x, expected 0x%02x", b[1], op);
    CF_CHECK(t, BE16(pk, 2) < t->p->n_paths, "path %u", BE16(pk, 2));
    CF_CHECK(t, BE32(pk, 4) == t->p->my_id, "conn 0x%08x, expected 0x%08x",
             BE32(pk, 4), t->p->my_id);
    uint32_t crc = mroce_crc32c(0, b, pk->len - 4);
    CF_CHECK(t, BE32(pk, pk->len - 4) == crc, "ICRC 0x%08x, expected 0x%08x",
             BE32(pk, pk->len - 4), crc);
}

static const struct cf_pkt *hdr_iut_data(struct cf_t *t, const struct cf_wr *w)
{
    cf_post(t, w);
    const struct cf_pkt *pk = cf_wait(t, cf_is_data, NULL, cf_ms(t, 2000));
    CF_REQUIRE(t, pk, "the IUT sent no data packet for its %s", w->op);
    return pk;
}

/* The DXH of the first packet of a message the IUT posted. */
static void hdr_dxh(struct cf_t *t, const struct cf_pkt *pk, uint16_t stream,
                    uint32_t msg_len)
{
    CF_CHECK(t, BE32(pk, 16) == cf_iut_dsn(t, 0),
             "first DSN %u, expected init_dsn %u", BE32(pk, 16),
             cf_iut_dsn(t, 0));
    CF_CHECK(t, BE16(pk, 20) == stream, "stream %u, expected %u", BE16(pk, 20),
             stream);
    CF_CHECK(t, BE16(pk, 22) == 0, "DXH reserved 0x%04x", BE16(pk, 22));
    CF_CHECK(t, BE32(pk, 24) == cf_iut_msn(t, 0),
             "first MSN %u, expected init_msn %u", BE32(pk, 24),
             cf_iut_msn(t, 0));
    CF_CHECK(t, BE32(pk, 28) == msg_len, "msg_len %u, expected %u",
             BE32(pk, 28), msg_len);
    CF_CHECK(t, BE32(pk, 32) == 0, "offset %u, expected 0", BE32(pk, 32));
}

static void hdr_payload(struct cf_t *t, const struct cf_pkt *pk, size_t at,
                        const uint8_t *want, size_t n)
{
    CF_CHECK(t, pk->len == at + n + 4, "%zu bytes, expected %zu", pk->len,
             at + n + 4);
    CF_CHECK(t, pk->len < at + 4 || !memcmp(pk->buf + at, want, n),
             "payload differs from the posted buffer");
}

static void hdr_write(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[100];
    cf_pattern(d, sizeof(d), 11);
    cf_iut_write(t, 0, d, sizeof(d));
    const struct cf_pkt *pk = hdr_iut_data(t, &(struct cf_wr){.op = "write",
                                                              .wr_id = 1,
                                                              .stream = 1,
                                                              .len = sizeof(d),
                                                              .roff = 0x1230});
    hdr_mth(t, pk, MROCE_OP_WRITE);
    hdr_dxh(t, pk, 1, sizeof(d));
    CF_CHECK(t, BE64(pk, 36) == t->p->mem_va + 0x1230, "RETH va 0x%llx",
             (unsigned long long)BE64(pk, 36));
    CF_CHECK(t, BE32(pk, 44) == t->p->mem_rkey, "RETH rkey 0x%08x",
             BE32(pk, 44));
    hdr_payload(t, pk, 48, d, sizeof(d));
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
    CF_CHECK(t, !memcmp(t->p->mem + 0x1230, d, sizeof(d)),
             "the suite's copy of the WRITE differs");
}

static void hdr_write_imm(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[24];
    cf_pattern(d, sizeof(d), 12);
    cf_iut_write(t, 0, d, sizeof(d));
    cf_peer_recv(t, 0, 0, 64);
    const struct cf_pkt *pk =
        hdr_iut_data(t, &(struct cf_wr){.op = "write_imm",
                                        .wr_id = 1,
                                        .len = sizeof(d),
                                        .roff = 64,
                                        .imm = 0xA1B2C3D4u});
    hdr_mth(t, pk, MROCE_OP_WRITE_IMM);
    hdr_dxh(t, pk, 0, sizeof(d));
    CF_CHECK(
        t, BE64(pk, 36) == t->p->mem_va + 64 && BE32(pk, 44) == t->p->mem_rkey,
        "RETH differs from the work request");
    CF_CHECK(t, BE32(pk, 48) == 0, "SNH (bytes 48-51) is %u, expected 0",
             BE32(pk, 48));
    CF_CHECK(t, BE32(pk, 52) == 0xA1B2C3D4u,
             "IMM (bytes 52-55) is 0x%08x, expected 0xa1b2c3d4", BE32(pk, 52));
    hdr_payload(t, pk, 56, d, sizeof(d));
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
}

static void hdr_send(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[40];
    cf_pattern(d, sizeof(d), 13);
    cf_iut_write(t, 0, d, sizeof(d));
    cf_peer_recv(t, 1, 0, 64);
    const struct cf_pkt *pk = hdr_iut_data(
        t, &(struct cf_wr){
               .op = "send", .wr_id = 1, .stream = 1, .len = sizeof(d)});
    hdr_mth(t, pk, MROCE_OP_SEND);
    hdr_dxh(t, pk, 1, sizeof(d));
    CF_CHECK(t, BE32(pk, 36) == 0, "SNH (bytes 36-39) is %u", BE32(pk, 36));
    hdr_payload(t, pk, 40, d, sizeof(d));
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
}

static void hdr_send_imm(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[8];
    cf_pattern(d, sizeof(d), 14);
    cf_iut_write(t, 0, d, sizeof(d));
    cf_peer_recv(t, 0, 0, 64);
    const struct cf_pkt *pk = hdr_iut_data(
        t,
        &(struct cf_wr){
            .op = "send_imm", .wr_id = 1, .len = sizeof(d), .imm = 0x01020304});
    hdr_mth(t, pk, MROCE_OP_SEND_IMM);
    hdr_dxh(t, pk, 0, sizeof(d));
    CF_CHECK(t, BE32(pk, 36) == 0 && BE32(pk, 40) == 0x01020304,
             "SNH %u IMM 0x%08x", BE32(pk, 36), BE32(pk, 40));
    hdr_payload(t, pk, 44, d, sizeof(d));
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
}

static void hdr_read_req(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_pattern(t->p->mem + 0x2000, 5000, 15);
    const struct cf_pkt *pk = hdr_iut_data(
        t,
        &(struct cf_wr){.op = "read", .wr_id = 1, .len = 5000, .roff = 0x2000});
    hdr_mth(t, pk, MROCE_OP_READ_REQ);
    hdr_dxh(t, pk, 0, 5000);
    CF_CHECK(t,
             BE64(pk, 36) == t->p->mem_va + 0x2000 &&
                 BE32(pk, 44) == t->p->mem_rkey,
             "RETH differs from the work request");
    CF_CHECK(t, pk->len == 52, "READ_REQ of %zu bytes, expected 52", pk->len);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
    uint8_t got[5000];
    cf_iut_read(t, 0, got, sizeof(got));
    CF_CHECK(t, !memcmp(got, t->p->mem + 0x2000, sizeof(got)),
             "the READ did not return the suite's bytes");
}

/* R-HDR-11, R-MSG-10: READ_RESP carries the request's stream, MSN and
 * msg_len, the responder's own DSNs and the offsets of its bytes. */
static void hdr_read_resp(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[2500];
    cf_pattern(d, sizeof(d), 16);
    cf_iut_write(t, 0x400, d, sizeof(d));
    struct cf_msg m = {.op = MROCE_OP_READ_REQ,
                       .stream = 1,
                       .roff = 0x400,
                       .len = sizeof(d),
                       .path = 0};
    cf_send_msg(t, &m);
    const struct cf_pkt *r[3];
    for (int i = 0; i < 3; i++) {
        uint8_t op = MROCE_OP_READ_RESP;
        r[i] = cf_wait(t, cf_is_op, &op, cf_ms(t, 2000));
        CF_REQUIRE(t, r[i], "READ_RESP %d of 3 missing", i);
        hdr_mth(t, r[i], MROCE_OP_READ_RESP);
        CF_CHECK(t, BE32(r[i], 16) == cf_iut_dsn(t, (uint32_t)i),
                 "READ_RESP DSN %u, expected %u (the responder's own DSNs)",
                 BE32(r[i], 16), cf_iut_dsn(t, (uint32_t)i));
        CF_CHECK(t,
                 BE16(r[i], 20) == 1 && BE32(r[i], 24) == m.msn &&
                     BE32(r[i], 28) == sizeof(d) && BE16(r[i], 22) == 0,
                 "READ_RESP stream %u msn %u msg_len %u", BE16(r[i], 20),
                 BE32(r[i], 24), BE32(r[i], 28));
        uint32_t off = BE32(r[i], 32), n = off == 2048 ? 452 : 1024;
        CF_CHECK(t, off == (uint32_t)i * 1024, "offset %u", off);
        hdr_payload(t, r[i], 36, d + off, off < sizeof(d) ? n : 0);
    }
}

static void hdr_ack(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[16] = {1};
    struct cf_msg m = {.op = MROCE_OP_WRITE, .data = d, .len = 16, .path = 2};
    uint32_t ts0 = (uint32_t)cf_now();
    cf_send_msg(t, &m);
    uint16_t path = 2;
    const struct cf_pkt *pk = cf_wait(t, cf_is_ack_for, &path, cf_ms(t, 2000));
    CF_REQUIRE(t, pk, "no ACK for a WRITE on path 2");
    hdr_mth(t, pk, MROCE_OP_ACK);
    CF_CHECK(t, pk->len == 72, "ACK of %zu bytes, expected 72", pk->len);
    CF_CHECK(t, (pk->buf[0] & 0xF) == 0, "ACK flags 0x%x", pk->buf[0] & 0xF);
    CF_CHECK(t, BE16(pk, 2) == 2, "ACK path %u, expected 2 (the acked path)",
             BE16(pk, 2));
    CF_CHECK(t, BE32(pk, 8) == 0, "ACK psn %u", BE32(pk, 8));
    CF_CHECK(t, BE32(pk, 16) == 0, "sack_high %u, expected 0", BE32(pk, 16));
    CF_CHECK(t, BE32(pk, 20) == 1, "dsn_cum %u, expected 1", BE32(pk, 20));
    uint32_t echo = BE32(pk, 24);
    CF_CHECK(t, echo - ts0 < 1000000000u, "echo_ts %u is not the WRITE's ts",
             echo);
    CF_CHECK(t, BE16(pk, 32) == 0 && BE16(pk, 34) == 1,
             "ce_count %u rx_count %u, expected 0 and 1", BE16(pk, 32),
             BE16(pk, 34));
    CF_CHECK(t, pk->buf[36] == 0x80, "SACK byte 20 is 0x%02x, expected 0x80",
             pk->buf[36]);
    for (int i = 37; i < 68; i++)
        if (!CF_CHECK(t, pk->buf[i] == 0, "SACK byte %d is 0x%02x", i - 16,
                      pk->buf[i]))
            break;
}

static void hdr_nack(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[16] = {2};
    t->p->psn[1] = 5; /* not 0: the NACK must name this PSN (R-HDR-9) */
    struct cf_msg m = {.op = MROCE_OP_WRITE,
                       .stream = 1,
                       .data = d,
                       .len = 16,
                       .path = 1,
                       .rkey = t->iut.rkey ^ 0x80000001u,
                       .rkey_set = true};
    cf_send_msg(t, &m);
    const struct cf_pkt *pk = cf_wait_nack(t, cf_ms(t, 2000));
    CF_REQUIRE(t, pk, "no NACK for a WRITE with a bad rkey");
    hdr_mth(t, pk, MROCE_OP_NACK);
    CF_CHECK(t, pk->len == 36, "NACK of %zu bytes, expected 36", pk->len);
    CF_CHECK(t, BE16(pk, 2) == 1 && BE32(pk, 8) == m.psn[0],
             "NACK path %u psn %u, expected 1 and %u", BE16(pk, 2), BE32(pk, 8),
             m.psn[0]);
    CF_CHECK(t,
             BE32(pk, 16) == m.first_dsn && BE16(pk, 20) == 1 &&
                 BE32(pk, 24) == m.msn,
             "NKH dsn %u stream %u msn %u, expected %u 1 %u", BE32(pk, 16),
             BE16(pk, 20), BE32(pk, 24), m.first_dsn, m.msn);
    CF_CHECK(t, pk->buf[22] == MROCE_NAK_REMOTE_ACCESS,
             "syndrome %u, expected 2", pk->buf[22]);
    CF_CHECK(t, pk->buf[23] == 0 && BE32(pk, 28) == 0,
             "reserved byte %u info %u, expected 0 0", pk->buf[23],
             BE32(pk, 28));
}

/* The IUT sends n one-packet WRITEs, all acknowledged: its next DSN is
 * then init_dsn + n. */
static void hdr_iut_writes(struct cf_t *t, int n)
{
    for (int i = 0; i < n; i++)
        cf_post(t, &(struct cf_wr){.op = "write",
                                   .wr_id = (uint64_t)i + 1,
                                   .len = 16,
                                   .roff = (uint32_t)i * 16});
    cf_wc_is(t, cf_wait_wc(t, "send", n, cf_ms(t, 2000)), n, "SUCCESS");
}

/* R-CONN-10, R-HDR-9, R-VAL-5: MTH only, psn = the closer's next DSN. */
static void hdr_close(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_need(t, "conn.disconnect");
    hdr_iut_writes(t, 3);
    json_decref(cf_call(t, json_pack("{s:s, s:i}", "cmd", "conn_disconnect",
                                     "conn", t->iut.conn)));
    const struct cf_pkt *pk = cf_wait_op(t, MROCE_OP_CLOSE, cf_ms(t, 2000));
    CF_REQUIRE(t, pk, "no CLOSE after a disconnect");
    hdr_mth(t, pk, MROCE_OP_CLOSE);
    CF_CHECK(t, pk->len == 20 && BE32(pk, 8) == cf_iut_dsn(t, 3),
             "CLOSE of %zu bytes, psn %u, expected 20 bytes and the next "
             "DSN %u",
             pk->len, BE32(pk, 8), cf_iut_dsn(t, 3));
}

static void hdr_close_ack(struct cf_t *t)
{
    cf_open(t, NULL);
    hdr_iut_writes(t, 2);
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_CLOSE, 1);
    cf_send(t, &h, NULL, 0);
    const struct cf_pkt *pk = cf_wait_op(t, MROCE_OP_CLOSE_ACK, cf_ms(t, 2000));
    CF_REQUIRE(t, pk, "no CLOSE_ACK for a CLOSE");
    hdr_mth(t, pk, MROCE_OP_CLOSE_ACK);
    CF_CHECK(t, pk->len == 20 && BE32(pk, 8) == cf_iut_dsn(t, 2),
             "CLOSE_ACK of %zu bytes, psn %u, expected 20 bytes and the "
             "next DSN %u",
             pk->len, BE32(pk, 8), cf_iut_dsn(t, 2));
}

/* ---- receipt: reserved and defined-zero fields are ignored ---- */

static void hdr_write_patched(struct cf_t *t, struct cf_tx *x, const char *what)
{
    uint8_t d[32], got[32];
    cf_pattern(d, sizeof(d), 21);
    struct mroce_hdr h = cf_data_hdr(t, MROCE_OP_WRITE, 0);
    h.msn = t->p->msn[0]++;
    h.msg_len = sizeof(d);
    h.va = t->iut.va + 0x800;
    h.rkey = t->iut.rkey;
    h.flags = MROCE_HF_ACKREQ;
    x->ecn = 2;
    cf_send_x(t, &h, d, sizeof(d), x);
    CF_CHECK(t, cf_wait_cum(t, h.dsn, cf_ms(t, 2000)),
             "a WRITE with %s was not acknowledged", what);
    cf_iut_read(t, 0x800, got, sizeof(got));
    CF_CHECK(t, !memcmp(got, d, sizeof(d)), "a WRITE with %s did not land",
             what);
}

static void hdr_flags_ignored(struct cf_t *t)
{
    cf_open(t, NULL);
    hdr_write_patched(t, &(struct cf_tx){.byte0 = 0x19},
                      "the reserved flag bit 0x1 set (SEAL clear)");
}

static void hdr_dxh_res_ignored(struct cf_t *t)
{
    cf_open(t, NULL);
    static const uint8_t ff[2] = {0xFF, 0xA5};
    hdr_write_patched(
        t, &(struct cf_tx){.patch = ff, .patch_off = 22, .patch_len = 2},
        "DXH reserved bytes 0xFFA5");
}

/* The IUT writes; the suite acknowledges with a nonzero MTH psn. */
static void hdr_ack_psn_ignored(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    CF_REQUIRE(t, cf_wait(t, cf_is_data, NULL, cf_ms(t, 2000)),
               "the IUT sent no WRITE");
    struct mroce_hdr a;
    cf_ack_fill(t, 0, &a);
    a.psn = 0x12345678;
    cf_send(t, &a, NULL, 0);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
}

static void hdr_nack_res_ignored(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    const struct cf_pkt *pk = cf_wait(t, cf_is_data, NULL, cf_ms(t, 2000));
    CF_REQUIRE(t, pk, "the IUT sent no WRITE");
    struct mroce_hdr n = cf_hdr(t, MROCE_OP_NACK, pk->h.path);
    n.psn = pk->h.psn;
    n.dsn = pk->h.dsn;
    n.stream = pk->h.stream;
    n.msn = pk->h.msn;
    n.nak_code = MROCE_NAK_REMOTE_ACCESS;
    n.nak_info = 77; /* defined zero for this syndrome: ignored */
    static const uint8_t res = 0xFF;
    cf_send_x(t, &n, NULL, 0,
              &(struct cf_tx){
                  .ecn = 2, .patch = &res, .patch_off = 23, .patch_len = 1});
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "REM_ACCESS_ERR");
}

static void hdr_close_psn_ignored(struct cf_t *t)
{
    cf_open(t, NULL);
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_CLOSE, 0);
    h.psn = 99;
    cf_send(t, &h, NULL, 0);
    CF_CHECK(t, cf_wait_op(t, MROCE_OP_CLOSE_ACK, cf_ms(t, 2000)) != NULL,
             "a CLOSE with psn 99 was not answered");
}

/* R-VER-4: ACKREQ and RETX on control packets are ignored. */
static void hdr_control_flags(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    CF_REQUIRE(t, cf_wait(t, cf_is_data, NULL, cf_ms(t, 2000)),
               "the IUT sent no WRITE");
    struct mroce_hdr a;
    cf_ack_fill(t, 0, &a);
    cf_send_x(t, &a, NULL, 0, &(struct cf_tx){.ecn = 2, .byte0 = 0x1D});
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
    struct mroce_hdr c = cf_hdr(t, MROCE_OP_CLOSE, 0);
    cf_send_x(t, &c, NULL, 0, &(struct cf_tx){.ecn = 2, .byte0 = 0x1C});
    CF_CHECK(t, cf_wait_op(t, MROCE_OP_CLOSE_ACK, cf_ms(t, 1000)) != NULL,
             "a CLOSE with ACKREQ and RETX set was not answered");
}

/* ---- SACK bitmap layout (R-HDR-14) ---- */

static void hdr_sack_layout(struct cf_t *t)
{
    cf_open(t, NULL);
    static const uint32_t psns[] = {0, 3, 64, 65, 127, 128, 191, 200, 255};
    for (size_t i = 0; i < sizeof(psns) / sizeof(psns[0]); i++)
        cf_write_at(t, 1, psns[i], (uint32_t)cf_now(), 2);
    t->p->psn[1] = 256;
    uint8_t want[32] = {0};
    for (size_t i = 0; i < sizeof(psns) / sizeof(psns[0]); i++) {
        uint32_t bit = 255 - psns[i];
        want[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
    }
    const struct cf_pkt *last = NULL, *pk;
    uint16_t path = 1;
    while ((pk = cf_wait(t, cf_is_ack_for, &path, cf_ms(t, 300))))
        last = pk;
    CF_REQUIRE(t, last, "no ACK for WRITEs on path 1");
    CF_CHECK(t, last->h.sack_high == 255, "sack_high %u, expected 255",
             last->h.sack_high);
    for (int i = 0; i < 32; i++)
        if (!CF_CHECK(t, last->buf[36 + i] == want[i],
                      "AKH byte %d is 0x%02x, expected 0x%02x", 20 + i,
                      last->buf[36 + i], want[i]))
            break;
}

/* ---- MTH ts (R-HDR-10) ---- */

static void hdr_ts_clock(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 8});
    const struct cf_pkt *a = cf_wait(t, cf_is_data, NULL, cf_ms(t, 2000));
    CF_REQUIRE(t, a, "no first WRITE");
    cf_pump(t, 50);
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 2, .len = 8});
    const struct cf_pkt *b = cf_wait(t, cf_is_data, NULL, cf_ms(t, 2000));
    CF_REQUIRE(t, b, "no second WRITE");
    double dts = (double)(uint32_t)(b->h.ts - a->h.ts) / 1e6;
    double dt = (double)(b->t - a->t) / 1e6;
    CF_CHECK(t, dts > dt * 0.8 - 3 && dts < dt * 1.2 + 3,
             "ts moved %.2f ms while %.2f ms passed: not a ns clock", dts, dt);
}

/* R-CRC-2: the suite's CRC32C against the spec's check values, then a
 * packet sealed with it is accepted. */
static void hdr_crc_values(struct cf_t *t)
{
    static const struct {
        uint8_t fill;
        int step;
        uint32_t crc;
    } v[] = {{0x00, 0, 0x8A9136AA},
             {0xFF, 0, 0x62A8AB43},
             {0x00, 1, 0x46DD794E},
             {0x1F, -1, 0x113FDB5C}};
    CF_CHECK(t, mroce_crc32c(0, "123456789", 9) == 0xE3069283u,
             "the suite's CRC32C of 123456789 is wrong");
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        uint8_t b[32];
        for (int k = 0; k < 32; k++)
            b[k] = (uint8_t)(v[i].fill + v[i].step * k);
        CF_CHECK(t, mroce_crc32c(0, b, 32) == v[i].crc,
                 "the suite's CRC32C of vector %zu is wrong", i);
    }
    cf_open(t, NULL);
    CF_CHECK(t, cf_barrier(t, 0, cf_ms(t, 2000)),
             "a PROBE with a CRC32C ICRC was not acknowledged");
}

const struct cf_test cf_t_hdr[] = {
    CF_TEST("hdr.write.layout", "3.5",
            "R-HDR-1 R-HDR-2 R-HDR-4 R-HDR-11 R-HDR-12", MUST,
            "a WRITE, byte by byte", hdr_write),
    CF_TEST("hdr.write_imm.layout", "3.2", "R-HDR-5 R-HDR-13", MUST,
            "a WRITE_IMM: SNH at bytes 48-51, IMM at 52-55", hdr_write_imm),
    CF_TEST("hdr.send.layout", "3.6", "R-HDR-4 R-HDR-5", MUST,
            "a SEND, byte by byte", hdr_send),
    CF_TEST("hdr.send_imm.layout", "3.7", "R-HDR-5 R-HDR-13", MUST,
            "a SEND_IMM, byte by byte", hdr_send_imm),
    CF_TEST("hdr.read_req.layout", "3.5", "R-HDR-6 R-HDR-12 R-MSG-1", MUST,
            "a READ_REQ: 52 bytes, no payload", hdr_read_req),
    CF_TEST("hdr.read_resp.layout", "3.4", "R-HDR-11 R-MSG-10 R-CONN-6", MUST,
            "READ_RESPs: the request's stream, MSN, msg_len; own DSNs",
            hdr_read_resp),
    CF_TEST("hdr.ack.layout", "3.8", "R-HDR-8 R-HDR-9 R-HDR-14 R-ACK-2", MUST,
            "an ACK, byte by byte", hdr_ack),
    CF_TEST("hdr.nack.layout", "3.9", "R-HDR-15 R-HDR-8 R-HDR-9 R-NACK-1", MUST,
            "a NACK, byte by byte", hdr_nack),
    CF_TEST("hdr.close.layout", "4.4", "R-CONN-10 R-HDR-9", MUST,
            "a CLOSE: MTH only, psn 0", hdr_close),
    CF_TEST("hdr.close_ack.layout", "4.4", "R-CONN-10 R-HDR-9", MUST,
            "a CLOSE_ACK: MTH only, psn 0", hdr_close_ack),
    CF_TEST("hdr.flags.reserved_ignored", "3.2", "R-HDR-3 R-HDR-7", MUST,
            "reserved flag bits ignored on receipt", hdr_flags_ignored),
    CF_TEST("hdr.dxh.reserved_ignored", "3.4", "R-HDR-7", MUST,
            "DXH reserved bytes ignored on receipt", hdr_dxh_res_ignored),
    CF_TEST("hdr.ack.psn_ignored", "3.3", "R-HDR-7 R-HDR-9", MUST,
            "an ACK's MTH psn ignored on receipt", hdr_ack_psn_ignored),
    CF_TEST("hdr.nack.reserved_ignored", "3.9", "R-HDR-7", MUST,
            "NKH reserved byte and info of a fatal NACK ignored",
            hdr_nack_res_ignored),
    CF_TEST("hdr.close.psn_ignored", "4.4", "R-HDR-7 R-CONN-10", MUST,
            "a CLOSE's MTH psn ignored on receipt", hdr_close_psn_ignored),
    CF_TEST("hdr.control_flags_ignored", "3.12", "R-VER-4 R-HDR-7", MUST,
            "ACKREQ and RETX on an ACK and a CLOSE are ignored",
            hdr_control_flags),
    CF_TEST("hdr.sack.layout", "3.8", "R-HDR-14 R-SACK-5", MUST,
            "SACK bits across all four 64-bit words", hdr_sack_layout),
    CF_TEST("hdr.ts.clock", "3.3", "R-HDR-10", MUST,
            "MTH ts is a nanosecond clock", hdr_ts_clock),
    CF_TEST("hdr.crc.values", "3.10", "R-CRC-2 R-CRC-1", MUST,
            "CRC32C check values; an ICRC of that CRC accepted",
            hdr_crc_values),
    {0},
};
