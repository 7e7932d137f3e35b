/* Hostile input to the engine's receive path (R-RX-1, R-SEC-*). Every
 * packet here is one an attacker or a broken peer could send. After each
 * we check that exactly one drop was counted (by its reason), that not a
 * byte of registered memory changed (the arena is filled with a guard
 * pattern), that no completion appeared, and that the connection still
 * works -- or, for the fatal cases, that it NACKed and went to ERROR. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "engine/eng.h"
#include "support/peer.h"

#define PAYLOAD 64

struct snap {
    struct mroce_ctx_counters x;
    struct mroce_conn_counters c;
    uint64_t drops;
};

static struct snap snap_of(const struct peer *p)
{
    struct snap s = {peer_ctx_cnt(p), peer_cnt(p), peer_drops(p)};
    return s;
}

static int setup(void **state)
{
    *state = peer_new(NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    peer_free_all(); /* the fixture's peer and any a failed test left */
    return 0;
}

static int cq_count(struct mroce_cq *cq)
{
    struct mroce_wc wc[64];
    return peer_poll(cq, wc, 64);
}

/* One silent drop: counted once, nothing placed, completed or sent. */
static void assert_quiet_drop(struct peer *p, const struct snap *s)
{
    assert_int_equal(peer_drops(p), s->drops + 1);
    assert_int_equal(peer_mem_dirty(p), 0);
    assert_int_equal(cq_count(p->scq), 0);
    assert_int_equal(cq_count(p->rcq), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CONNECTED);
}

/* A WRITE with the next in-order numbers; not fed. */
static struct mroce_hdr next_write(const struct peer *p, uint32_t len)
{
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_WRITE, 0, p->psn[0]);
    h.dsn = p->dsn;
    h.msn = p->msn[0];
    h.va = p->va;
    h.rkey = p->rkey;
    h.msg_len = len;
    return h;
}

/* A valid packet of any opcode (data ones with PAYLOAD bytes). */
static size_t valid_pkt(const struct peer *p, uint8_t op, uint8_t *buf)
{
    uint8_t data[PAYLOAD];
    peer_pattern(data, sizeof(data), op);
    struct mroce_hdr h = next_write(p, PAYLOAD);
    h.opcode = op;
    const struct mroce_op_info *oi = mroce_wire_op_info(op);
    assert_non_null(oi);
    if (op == MROCE_OP_READ_REQ || !(oi->headers & MROCE_H_DXH))
        h.msg_len = 0;
    bool pl = (oi->headers & MROCE_H_PAYLOAD) && op != MROCE_OP_READ_REQ;
    return peer_encode(&h, data, pl ? PAYLOAD : 0, buf);
}

static const uint8_t all_ops[] = {
    MROCE_OP_WRITE,    MROCE_OP_WRITE_IMM, MROCE_OP_SEND,     MROCE_OP_SEND_IMM,
    MROCE_OP_READ_REQ, MROCE_OP_READ_RESP, MROCE_OP_ACK,      MROCE_OP_NACK,
    MROCE_OP_PROBE,    MROCE_OP_CLOSE,     MROCE_OP_CLOSE_ACK};

#define N_OPS (sizeof(all_ops) / sizeof(all_ops[0]))

/* ---- wire-level garbage ---- */

static void test_truncated(void **state)
{
    struct peer *p = *state;
    uint8_t buf[PEER_PKT_MAX];
    for (size_t k = 0; k < N_OPS; k++) {
        size_t full = valid_pkt(p, all_ops[k], buf);
        size_t hl = mroce_wire_hdr_len(all_ops[k]);
        for (size_t len = 0; len <= hl + 3 && len < full; len++) {
            struct snap s = snap_of(p);
            assert_int_equal(peer_rx_raw(p, buf, len), MROCE_EPROTO);
            assert_int_equal(peer_ctx_cnt(p).drop_truncated,
                             s.x.drop_truncated + 1);
            assert_quiet_drop(p, &s);
        }
    }
    peer_check_alive(p);
}

static void test_bad_version(void **state)
{
    struct peer *p = *state;
    uint8_t buf[PEER_PKT_MAX];
    for (unsigned v = 0; v < 16; v++) {
        if (v == MROCE_WIRE_VERSION)
            continue;
        size_t n = valid_pkt(p, MROCE_OP_WRITE, buf);
        buf[0] = (uint8_t)(v << 4 | (buf[0] & 0xF));
        n = mroce_wire_seal(buf, n - MROCE_ICRC_LEN); /* only the version */
        struct snap s = snap_of(p);
        assert_int_equal(peer_rx_raw(p, buf, n), MROCE_EPROTO);
        assert_int_equal(peer_ctx_cnt(p).drop_bad_version,
                         s.x.drop_bad_version + 1);
        assert_quiet_drop(p, &s);
    }
    peer_check_alive(p);
}

static void test_unknown_opcode(void **state)
{
    struct peer *p = *state;
    int tried = 0;
    for (unsigned op = 0; op < 256; op++) {
        if (mroce_wire_op_info((uint8_t)op))
            continue;
        uint8_t buf[128] = {MROCE_WIRE_VERSION << 4, (uint8_t)op};
        uint32_t id = p->local.conn_id;
        for (int i = 0; i < 4; i++)
            buf[4 + i] = (uint8_t)(id >> (24 - 8 * i));
        size_t n = mroce_wire_seal(buf, 80);
        struct snap s = snap_of(p);
        assert_int_equal(peer_rx_raw(p, buf, n), MROCE_EPROTO);
        assert_int_equal(peer_ctx_cnt(p).drop_bad_opcode,
                         s.x.drop_bad_opcode + 1);
        assert_quiet_drop(p, &s);
        tried++;
    }
    assert_true(tried >= 256 - 12);
    peer_check_alive(p);
}

/* R-PATH-10: PROBE_ACK (0x21) is reserved in 0.1 and dropped. An earlier
 * engine handed it to the data path, which recorded a bogus message 0
 * and killed the connection at the next real packet of msn 0. */
static void test_reserved_probe_ack(void **state)
{
    struct peer *p = *state;
    uint8_t buf[MROCE_MTH_LEN + 4 + MROCE_ICRC_LEN] = {MROCE_WIRE_VERSION << 4,
                                                       0x21};
    uint32_t id = p->local.conn_id;
    for (int i = 0; i < 4; i++)
        buf[4 + i] = (uint8_t)(id >> (24 - 8 * i));
    size_t n = mroce_wire_seal(buf, MROCE_MTH_LEN + 4);
    struct snap s = snap_of(p);
    assert_int_equal(peer_rx_raw(p, buf, n), MROCE_EPROTO);
    assert_quiet_drop(p, &s);
    peer_check_alive(p);
}

/* R-HDR-7: the reserved flag bit is ignored on receipt: without SEAL,
 * bit 0x1 (the key phase of a sealed packet, R-AEAD-1) means nothing. */
static void test_reserved_flags_ignored(void **state)
{
    struct peer *p = *state;
    uint8_t data[PAYLOAD];
    peer_pattern(data, sizeof(data), 2);
    struct mroce_hdr h = next_write(p, PAYLOAD);
    uint8_t buf[PEER_PKT_MAX];
    size_t n = peer_encode(&h, data, PAYLOAD, buf);
    buf[0] |= 0x1;
    n = mroce_wire_seal(buf, n - MROCE_ICRC_LEN);
    assert_int_equal(peer_rx_raw(p, buf, n), 0);
    assert_memory_equal(p->mem, data, PAYLOAD);
    p->psn[0]++;
    p->dsn++;
    p->msn[0]++;
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    peer_mem_reset(p);
    peer_check_alive(p);
}

static void crc_sweep(struct peer *p, uint8_t mask, bool exact_reason)
{
    uint8_t good[PEER_PKT_MAX], bad[PEER_PKT_MAX];
    size_t n = valid_pkt(p, MROCE_OP_WRITE, good);
    for (size_t i = 0; i < n; i++) {
        memcpy(bad, good, n);
        bad[i] ^= mask;
        struct snap s = snap_of(p);
        assert_int_equal(peer_rx_raw(p, bad, n), MROCE_EPROTO);
        if (exact_reason && i == 0) /* SEAL set on a plain connection */
            assert_int_equal(peer_cnt(p).drop_sec_mode, s.c.drop_sec_mode + 1);
        else if (exact_reason)
            assert_int_equal(peer_ctx_cnt(p).drop_bad_crc,
                             s.x.drop_bad_crc + 1);
        assert_quiet_drop(p, &s);
    }
}

/* Bit 0x02 keeps the version and maps WRITE to SEND (same size class),
 * so every single flip must fail the CRC, but in byte 0, where it is
 * SEAL (R-AEAD-1): a plain connection drops a sealed packet unopened
 * (R-AEAD-8). A full byte inversion may hit version/opcode first: one
 * drop either way. */
static void test_bad_crc_each_byte(void **state)
{
    struct peer *p = *state;
    crc_sweep(p, 0x02, true);
    crc_sweep(p, 0xFF, false);
    peer_check_alive(p);
}

/* mroce_ctx_attr.no_icrc (a simulator's fabric, which cannot corrupt):
 * the engine sends data and ACKs with a zero ICRC and accepts a packet whatever
 * its ICRC; the same packet with a wrong ICRC is dropped without it. A
 * data packet shorter than its place in the message is dropped. */
static void test_no_icrc(void **state)
{
    struct peer *p = *state;
    uint8_t bad[PEER_PKT_MAX];
    size_t n = valid_pkt(p, MROCE_OP_WRITE, bad);
    bad[n - 1] ^= 0x5A;
    struct snap s = snap_of(p);
    assert_int_equal(peer_rx_raw(p, bad, n), MROCE_EPROTO);
    assert_int_equal(peer_ctx_cnt(p).drop_bad_crc, s.x.drop_bad_crc + 1);

    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.no_icrc = 1;
    struct peer *q = peer_new(&cfg);
    n = valid_pkt(q, MROCE_OP_WRITE, bad);
    bad[n - 1] ^= 0x5A;
    assert_int_equal(peer_rx_raw(q, bad, n), 0);
    assert_int_equal(peer_ctx_cnt(q).drop_bad_crc, 0);
    uint8_t data[PAYLOAD];
    peer_pattern(data, sizeof(data), MROCE_OP_WRITE);
    assert_memory_equal(q->mem, data, PAYLOAD); /* placed */
    /* a packet cut short on the way (a trimming switch) is dropped as
     * one whose ICRC would fail, not taken for a protocol violation */
    n = valid_pkt(q, MROCE_OP_WRITE, bad);
    assert_int_equal(peer_rx_raw(q, bad, n - 10), MROCE_EPROTO);
    assert_int_equal(peer_ctx_cnt(q).drop_bad_crc, 1);
    assert_int_equal(mroce_conn_state(q->conn), MROCE_CONN_CONNECTED);
    assert_int_equal(peer_post(q, MROCE_OP_WRITE, 0, 7, 0, 100), 0);
    peer_drain(q, NULL, 0);
    const struct peer_out *o = peer_find(q, MROCE_OP_WRITE, 0);
    assert_non_null(o);
    for (size_t i = o->len - MROCE_ICRC_LEN; i < o->len; i++)
        assert_int_equal(o->buf[i], 0);
    o = peer_find(q, MROCE_OP_ACK, 0); /* control packets too */
    assert_non_null(o);
    for (size_t i = o->len - MROCE_ICRC_LEN; i < o->len; i++)
        assert_int_equal(o->buf[i], 0);
    peer_free(q);
}

static void test_payload_on_control(void **state)
{
    static const uint8_t ops[] = {MROCE_OP_ACK,       MROCE_OP_NACK,
                                  MROCE_OP_PROBE,     MROCE_OP_CLOSE,
                                  MROCE_OP_CLOSE_ACK, MROCE_OP_READ_REQ};
    struct peer *p = *state;
    uint8_t extra[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (size_t k = 0; k < sizeof(ops); k++) {
        for (uint32_t len = 1; len <= sizeof(extra); len += 3) {
            struct mroce_hdr h = next_write(p, 0);
            h.opcode = ops[k];
            uint8_t buf[PEER_PKT_MAX];
            size_t n = peer_encode(&h, extra, len, buf);
            struct snap s = snap_of(p);
            assert_int_equal(peer_rx_raw(p, buf, n), MROCE_EPROTO);
            assert_int_equal(peer_ctx_cnt(p).drop_bad_payload,
                             s.x.drop_bad_payload + 1);
            assert_quiet_drop(p, &s);
        }
    }
    peer_check_alive(p);
}

/* ---- not for this connection ---- */

static void test_unknown_conn(void **state)
{
    struct peer *p = *state;
    struct mroce_conn *idle;
    struct mroce_conn_attr a = {.send_cq = p->scq, .recv_cq = p->rcq};
    assert_int_equal(mroce_conn_create(p->pd, &a, &idle), 0);
    struct mroce_conn_params ip;
    mroce_conn_get_params(idle, &ip);
    uint32_t id = p->local.conn_id;
    uint32_t ids[] = {id + 1, id ^ 0x80000000u, 0, PEER_REMOTE_ID,
                      ip.conn_id /* exists, but not connected */};
    uint8_t ops[] = {MROCE_OP_WRITE, MROCE_OP_CLOSE, MROCE_OP_PROBE,
                     MROCE_OP_READ_REQ};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        for (size_t k = 0; k < sizeof(ops); k++) {
            struct mroce_hdr h = next_write(p, 0);
            h.opcode = ops[k];
            h.conn = ids[i];
            struct snap s = snap_of(p);
            assert_int_equal(peer_feed(p, &h, NULL, 0), MROCE_EPROTO);
            if (ids[i] != ip.conn_id) /* INIT: R-CONN-7 says `state` */
                assert_int_equal(peer_ctx_cnt(p).drop_unknown_conn,
                                 s.x.drop_unknown_conn + 1);
            assert_int_equal(peer_ctx_cnt(p).drop_bad_src, s.x.drop_bad_src);
            assert_quiet_drop(p, &s); /* R-CONN-2: no reply at all */
        }
    }
    assert_int_equal(mroce_conn_state(idle), MROCE_CONN_INIT);
    peer_check_alive(p);
}

static void test_wrong_source(void **state)
{
    struct peer *p = *state;
    struct mroce_addr srcs[3] = {p->remote.addr, p->remote.addr,
                                 p->remote.addr};
    srcs[0].ip[3] ^= 1;
    srcs[1].family = MROCE_AF_INET6; /* same first bytes, other family */
    srcs[2] = p->local.addr;         /* our own address */
    uint8_t data[PAYLOAD];
    peer_pattern(data, sizeof(data), 3);
    for (size_t i = 0; i < 3; i++) {
        for (int close = 0; close < 2; close++) {
            struct mroce_hdr h = next_write(p, close ? 0 : PAYLOAD);
            if (close)
                h.opcode = MROCE_OP_CLOSE;
            uint8_t buf[PEER_PKT_MAX];
            size_t n = peer_encode(&h, data, close ? 0 : PAYLOAD, buf);
            struct mroce_pkt_meta m = peer_meta(p, 0);
            m.src = srcs[i];
            struct snap s = snap_of(p);
            assert_int_equal(peer_rx_meta(p, &m, buf, n), MROCE_EPROTO);
            assert_int_equal(peer_ctx_cnt(p).drop_bad_src,
                             s.x.drop_bad_src + 1);
            assert_quiet_drop(p, &s);
        }
    }
    peer_check_alive(p);
}

/* ENGINE BUG (reported): mroce_ctx_rx skips the source check when
 * meta->src.family is MROCE_AF_NONE, so a datapath that does not fill the
 * source lets anyone past R-RX-2 step 8 ("IP source address is one of the
 * peer's announced addresses"). Repro: a valid WRITE with a zeroed
 * meta.src is placed. */
static void test_source_unknown_family(void **state)
{
    struct peer *p = *state;
    uint8_t data[PAYLOAD];
    peer_pattern(data, sizeof(data), 3);
    struct mroce_hdr h = next_write(p, PAYLOAD);
    uint8_t buf[PEER_PKT_MAX];
    size_t n = peer_encode(&h, data, PAYLOAD, buf);
    struct mroce_pkt_meta m = peer_meta(p, 0);
    memset(&m.src, 0, sizeof(m.src));
    struct snap s = snap_of(p);
    assert_int_equal(peer_rx_meta(p, &m, buf, n), MROCE_EPROTO);
    assert_int_equal(peer_ctx_cnt(p).drop_bad_src, s.x.drop_bad_src + 1);
    assert_quiet_drop(p, &s);
}

static void test_bad_path(void **state)
{
    struct peer *p = *state;
    uint16_t paths[] = {4, 5, 255, 0xFFFF};
    uint8_t ops[] = {MROCE_OP_WRITE, MROCE_OP_ACK, MROCE_OP_PROBE,
                     MROCE_OP_NACK};
    uint8_t data[PAYLOAD];
    peer_pattern(data, sizeof(data), 4);
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        for (size_t k = 0; k < sizeof(ops); k++) {
            struct mroce_hdr h = next_write(p, PAYLOAD);
            h.opcode = ops[k];
            h.path = paths[i];
            bool pl = ops[k] == MROCE_OP_WRITE;
            struct snap s = snap_of(p);
            assert_int_equal(peer_feed(p, &h, data, pl ? PAYLOAD : 0),
                             MROCE_EPROTO);
            assert_int_equal(peer_cnt(p).drop_bad_path, s.c.drop_bad_path + 1);
            assert_quiet_drop(p, &s);
        }
    }
    peer_check_alive(p);
}

/* ---- outside the windows: dropped, not acknowledged ---- */

static void feed_dsn(struct peer *p, uint32_t dsn, uint32_t msn)
{
    uint8_t data[PAYLOAD];
    peer_pattern(data, sizeof(data), dsn);
    struct mroce_hdr h = next_write(p, PAYLOAD);
    h.dsn = dsn;
    h.msn = msn;
    h.flags = MROCE_HF_ACKREQ;
    struct snap s = snap_of(p);
    peer_feed(p, &h, data, PAYLOAD);
    assert_int_equal(peer_cnt(p).drop_dsn_window, s.c.drop_dsn_window + 1);
    assert_quiet_drop(p, &s);
}

static void test_dsn_beyond_window(void **state)
{
    struct peer *p = *state;
    uint32_t w = p->local.dsn_window;
    assert_int_equal(w, 64);
    feed_dsn(p, w, 0);
    feed_dsn(p, w + 1, 0);
    feed_dsn(p, 3 * w + 5, 0);
    peer_check_alive(p); /* dsn 0; the window moves to [1, 1 + w) */
    feed_dsn(p, 1 + w, 1);
    peer_check_alive(p);
}

/* ENGINE BUG (reported): the DSN dedup bitmap is tested before the window
 * check, and a DSN beyond the window aliases a received one (same bit,
 * dsn & (W-1)). Repro: receive dsn 1 while dsn 0 is missing, then send
 * dsn 1 + W: it is taken as a duplicate and acknowledged at path level
 * instead of dropped as out-of-window (R-DSN-3, R-DSN-6). */
static void test_dsn_window_alias(void **state)
{
    struct peer *p = *state;
    uint32_t w = p->local.dsn_window;
    uint8_t data[PAYLOAD];
    peer_pattern(data, sizeof(data), 1);
    struct mroce_hdr h = next_write(p, PAYLOAD);
    h.dsn = 1; /* dsn 0 is still missing: dsn_cum stays 0 */
    assert_int_equal(peer_feed(p, &h, data, PAYLOAD), 0);
    p->psn[0]++;
    p->msn[0]++;
    assert_int_equal(peer_drain(p, NULL, 0), 1); /* its ACK */
    peer_mem_reset(p);
    feed_dsn(p, 1 + w, 1);
}

static void test_msn_beyond_window(void **state)
{
    struct peer *p = *state;
    uint32_t mw = p->local.msg_window;
    uint32_t msns[] = {mw, mw + 1, 1000, 0x7FFFFFFFu};
    uint8_t data[PAYLOAD];
    peer_pattern(data, sizeof(data), 9);
    for (size_t i = 0; i < sizeof(msns) / sizeof(msns[0]); i++) {
        struct mroce_hdr h = next_write(p, PAYLOAD);
        h.msn = msns[i];
        h.flags = MROCE_HF_ACKREQ;
        struct snap s = snap_of(p);
        peer_feed(p, &h, data, PAYLOAD);
        assert_int_equal(peer_cnt(p).drop_msn_window, s.c.drop_msn_window + 1);
        assert_quiet_drop(p, &s);
    }
    peer_check_alive(p);
}

/* ---- fatal: NACK, connection to ERROR, later data refused ---- */

static void assert_nack_for(const struct mroce_hdr *n,
                            const struct mroce_hdr *d, uint8_t code)
{
    assert_int_equal(n->opcode, MROCE_OP_NACK);
    assert_int_equal(n->nak_code, code);
    assert_int_equal(n->path, d->path);
    assert_int_equal(n->psn, d->psn);
    assert_int_equal(n->dsn, d->dsn);
    assert_int_equal(n->stream, d->stream);
    assert_int_equal(n->msn, d->msn);
}

/* After the refused packet `bad`: one drop, the NACK, ERROR; `dirty` bytes
 * were legitimately written before. A later good packet gets CONN_CLOSED
 * and changes nothing. */
static void assert_fatal(struct peer *p, const struct snap *s,
                         const struct mroce_hdr *bad, uint8_t code,
                         size_t dirty)
{
    assert_int_equal(peer_drops(p), s->drops + 1);
    assert_int_equal(peer_mem_dirty(p), dirty);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_nack_for(&p->out[0].h, bad, code);
    assert_int_equal(peer_cnt(p).tx_nacks, s->c.tx_nacks + 1);
    assert_int_equal(peer_cnt(p).tx_acks, s->c.tx_acks);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_ERROR);

    uint8_t data[PAYLOAD];
    peer_pattern(data, sizeof(data), 77);
    struct mroce_hdr h = next_write(p, PAYLOAD);
    h.dsn = p->dsn + 1;
    h.psn = p->psn[0] + 1;
    h.msn = p->msn[0] + 1;
    struct snap s2 = snap_of(p);
    peer_feed(p, &h, data, PAYLOAD);
    assert_int_equal(peer_cnt(p).drop_state, s2.c.drop_state + 1);
    assert_int_equal(peer_mem_dirty(p), dirty);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_nack_for(&p->out[0].h, &h, MROCE_NAK_CONN_CLOSED);
}

static uint64_t cnt_at(const struct mroce_conn_counters *c, size_t off)
{
    uint64_t v;
    memcpy(&v, (const uint8_t *)c + off, sizeof(v));
    return v;
}

/* Runs `bad` against a fresh peer and checks the fatal outcome; `off` is
 * the offset of the drop counter that must go up. */
static void fatal_case(struct mroce_hdr bad, const void *payload, uint32_t len,
                       uint8_t code, size_t off)
{
    struct peer *p = peer_new(NULL);
    bad.conn = p->local.conn_id;
    if (!bad.rkey)
        bad.rkey = p->rkey;
    if (bad.va == 1)
        bad.va = p->va;
    struct snap s = snap_of(p);
    peer_feed(p, &bad, payload, len);
    struct mroce_conn_counters c = peer_cnt(p);
    assert_int_equal(cnt_at(&c, off), cnt_at(&s.c, off) + 1);
    assert_fatal(p, &s, &bad, code, 0);
    assert_int_equal(cq_count(p->scq) + cq_count(p->rcq), 0);
    peer_free(p);
}

#define CNT(field) offsetof(struct mroce_conn_counters, field)

static struct mroce_hdr write_hdr(uint32_t len)
{
    struct mroce_hdr h = {.opcode = MROCE_OP_WRITE, .msg_len = len};
    h.va = 1; /* replaced by the peer's region base */
    return h;
}

static void test_bad_stream(void **state)
{
    (void)state;
    uint8_t data[PAYLOAD] = {0};
    uint16_t streams[] = {2, 3, 0xFFFF};
    for (size_t i = 0; i < 3; i++) {
        struct mroce_hdr h = write_hdr(PAYLOAD);
        h.stream = streams[i];
        fatal_case(h, data, PAYLOAD, MROCE_NAK_INVALID_REQUEST,
                   CNT(drop_bad_msg));
    }
}

static void test_wrong_rkey(void **state)
{
    struct peer *p = *state;
    /* a valid key of a region in another protection domain */
    struct mroce_pd *pd2;
    struct mroce_mr *mr2;
    assert_int_equal(mroce_pd_alloc(p->ctx, &pd2), 0);
    assert_int_equal(
        mroce_reg_mr(pd2, p->mem, PEER_MEM_LEN,
                     MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                     &mr2),
        0);
    uint32_t foreign = mroce_mr_rkey(mr2);
    uint8_t data[PAYLOAD] = {0};
    uint32_t keys[] = {0xFFFFFFFFu, 0x12345678u, foreign};
    for (size_t i = 0; i < 3; i++) {
        struct peer *q = peer_new(NULL);
        struct mroce_hdr h = next_write(q, PAYLOAD);
        h.rkey = i == 2 ? q->rkey ^ 1 : keys[i];
        if (h.rkey == q->rkey)
            h.rkey ^= 2;
        struct snap s = snap_of(q);
        peer_feed(q, &h, data, PAYLOAD);
        assert_int_equal(peer_cnt(q).drop_bad_key, s.c.drop_bad_key + 1);
        assert_fatal(q, &s, &h, MROCE_NAK_REMOTE_ACCESS, 0);
        peer_free(q);
    }
    /* the same context: a key of pd2 is not valid for pd1's connection */
    struct mroce_hdr h = next_write(p, PAYLOAD);
    h.rkey = foreign;
    struct snap s = snap_of(p);
    peer_feed(p, &h, data, PAYLOAD);
    assert_int_equal(peer_cnt(p).drop_bad_key, s.c.drop_bad_key + 1);
    assert_fatal(p, &s, &h, MROCE_NAK_REMOTE_ACCESS, 0);
    assert_int_equal(mroce_dereg_mr(mr2), 0);
    assert_int_equal(mroce_pd_free(pd2), 0);
}

static void bounds_case(uint64_t va_off, uint64_t abs_va, uint32_t offset,
                        uint32_t msg_len, uint32_t len)
{
    struct peer *p = peer_new(NULL);
    uint8_t data[PEER_MTU];
    peer_pattern(data, sizeof(data), 5);
    struct mroce_hdr h = next_write(p, msg_len);
    h.va = abs_va ? abs_va : p->va + va_off;
    h.offset = offset;
    struct snap s = snap_of(p);
    peer_feed(p, &h, data, len);
    assert_int_equal(peer_cnt(p).drop_bad_bounds, s.c.drop_bad_bounds + 1);
    assert_fatal(p, &s, &h, MROCE_NAK_REMOTE_ACCESS, 0);
    peer_free(p);
}

static void test_va_out_of_bounds(void **state)
{
    struct peer *p = *state;
    /* control: the last PAYLOAD bytes of the region are fine */
    uint8_t data[PAYLOAD];
    peer_pattern(data, sizeof(data), 6);
    struct mroce_hdr h = next_write(p, PAYLOAD);
    h.va = p->va + PEER_MEM_LEN - PAYLOAD;
    assert_int_equal(peer_feed(p, &h, data, PAYLOAD), 0);
    assert_memory_equal(p->mem + PEER_MEM_LEN - PAYLOAD, data, PAYLOAD);
    assert_int_equal(peer_mem_dirty(p), PAYLOAD);

    bounds_case(PEER_MEM_LEN - PAYLOAD + 1, 0, 0, PAYLOAD, PAYLOAD);
    bounds_case(PEER_MEM_LEN, 0, 0, PAYLOAD, PAYLOAD);
    bounds_case((uint64_t)-1, 0, 0, PAYLOAD, PAYLOAD); /* va = base - 1 */
    bounds_case(0, UINT64_MAX - 10, 0, PAYLOAD, PAYLOAD);
    /* va + offset wraps past 2^64 onto the region */
    bounds_case(0, UINT64_MAX - PEER_MTU + 1, PEER_MTU, 2 * PEER_MTU, PEER_MTU);
    /* second packet runs past the end of the region */
    bounds_case(PEER_MEM_LEN - PEER_MTU, 0, PEER_MTU, 2 * PEER_MTU, PEER_MTU);
}

/* A second registration of the first page with limited rights. */
static uint32_t reg_limited(struct peer *p, unsigned access)
{
    struct mroce_mr *mr;
    assert_int_equal(mroce_reg_mr(p->pd, p->mem, 4096, access, &mr), 0);
    return mroce_mr_rkey(mr);
}

static void test_no_remote_write(void **state)
{
    struct peer *p = *state;
    uint32_t key =
        reg_limited(p, MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_READ);
    uint8_t data[PAYLOAD] = {1};
    struct mroce_hdr h = next_write(p, PAYLOAD);
    h.rkey = key;
    struct snap s = snap_of(p);
    peer_feed(p, &h, data, PAYLOAD);
    assert_int_equal(peer_cnt(p).drop_bad_access, s.c.drop_bad_access + 1);
    assert_fatal(p, &s, &h, MROCE_NAK_REMOTE_ACCESS, 0);
}

static void test_read_no_remote_read(void **state)
{
    struct peer *p = *state;
    uint32_t key =
        reg_limited(p, MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE);
    struct mroce_hdr h = next_write(p, 128);
    h.opcode = MROCE_OP_READ_REQ;
    h.rkey = key;
    struct snap s = snap_of(p);
    peer_feed(p, &h, NULL, 0);
    assert_int_equal(peer_cnt(p).drop_bad_access, s.c.drop_bad_access + 1);
    assert_fatal(p, &s, &h, MROCE_NAK_REMOTE_ACCESS, 0);
}

static void post_recv_at(struct peer *p, uint64_t wr_id, uint32_t off,
                         uint32_t len)
{
    peer_post_recv(p, 0, wr_id, off, len);
}

/* R-MSG-6: a SEND longer than its receive is refused with NACK
 * INVALID_REQUEST; R-NACK-6/R-CONN-12: the receiver goes to ERROR and
 * flushes its receives. */
static void test_send_longer_than_recv(void **state)
{
    struct peer *p = *state;
    post_recv_at(p, 41, 0, 100);
    uint8_t data[200];
    peer_pattern(data, sizeof(data), 8);
    struct mroce_hdr h = next_write(p, sizeof(data));
    h.opcode = MROCE_OP_SEND;
    struct snap s = snap_of(p);
    peer_feed(p, &h, data, sizeof(data));
    assert_int_equal(peer_mem_dirty(p), 0);
    struct mroce_wc wc[4];
    assert_int_equal(peer_poll(p->rcq, wc, 4), 1);
    assert_int_equal(wc[0].wr_id, 41);
    assert_int_equal(wc[0].status, MROCE_WC_WR_FLUSH_ERR);
    assert_int_equal(peer_cnt(p).drop_bad_msg, s.c.drop_bad_msg + 1);
    assert_fatal(p, &s, &h, MROCE_NAK_INVALID_REQUEST, 0);
}

static void test_bad_chunking(void **state)
{
    (void)state;
    uint8_t data[PEER_MTU] = {0};
    struct {
        uint32_t msg_len, offset, len;
    } c[] = {
        {2 * PEER_MTU, 100, PEER_MTU},          /* offset not k*mtu */
        {2 * PEER_MTU, PEER_MTU / 2, 100},      /* ditto, short */
        {2 * PEER_MTU, 0, PEER_MTU - 1},        /* short payload */
        {2 * PEER_MTU, PEER_MTU, PEER_MTU - 1}, /* short last */
        {PEER_MTU + 10, PEER_MTU, 9},           /* last chunk too short */
        {100, 0, 99},                           /* single, short */
        {100, 0, 101},                          /* single, long */
        {2 * PEER_MTU, 2 * PEER_MTU, 0},        /* offset == msg_len */
        {2 * PEER_MTU, 4 * PEER_MTU, PEER_MTU}, /* offset > msg_len */
        {0, 0, 10},                             /* zero-length + data */
        {0, PEER_MTU, 0},                       /* zero-length, offset */
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        struct mroce_hdr h = write_hdr(c[i].msg_len);
        h.offset = c[i].offset;
        fatal_case(h, data, c[i].len, MROCE_NAK_INVALID_REQUEST,
                   CNT(drop_bad_msg));
    }
    struct mroce_hdr r = write_hdr(64);
    r.opcode = MROCE_OP_READ_REQ;
    r.offset = PEER_MTU; /* READ_REQ: offset must be 0 */
    fatal_case(r, NULL, 0, MROCE_NAK_INVALID_REQUEST, CNT(drop_bad_msg));
}

/* A READ_RESP of `len` bytes for the engine's first MSN of stream 0
 * while a READ of 100 bytes is outstanding there (if `read`). */
static void read_resp_case(bool read, uint32_t len)
{
    struct peer *p = peer_new(NULL);
    if (read) {
        assert_int_equal(peer_post(p, MROCE_OP_READ_REQ, 0, 1, 0, 100), 0);
        assert_int_equal(peer_drain(p, NULL, 0), 1);
    }
    uint8_t data[128] = {0};
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_READ_RESP, 0, 0);
    h.msn = peer_tmsn(p, 0);
    h.msg_len = len;
    struct snap s = snap_of(p);
    peer_feed(p, &h, data, len);
    if (!read) { /* R-VAL-3: names no READ at all: a silent drop */
        assert_int_equal(peer_cnt(p).drop_msn_window, s.c.drop_msn_window + 1);
        assert_quiet_drop(p, &s);
        assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CONNECTED);
        peer_free(p);
        return;
    }
    assert_int_equal(peer_cnt(p).drop_bad_msg, s.c.drop_bad_msg + 1);
    assert_fatal(p, &s, &h, MROCE_NAK_INVALID_REQUEST, 0);
    struct mroce_wc wc[2];
    assert_int_equal(peer_poll(p->scq, wc, 2), 1);
    assert_int_equal(wc[0].status, MROCE_WC_WR_FLUSH_ERR);
    peer_free(p);
}

/* R-MSG-11: a READ_RESP naming an outstanding READ by (stream, MSN) must
 * have the requested length, else NACK INVALID_REQUEST; R-VAL-3: one
 * that names no READ sent and not completed is dropped silently. */
static void test_read_resp_unsolicited(void **state)
{
    (void)state;
    read_resp_case(false, 64);
    read_resp_case(true, 99);
    read_resp_case(true, 101);
}

/* Packet 0 of a 2-packet message is fine; packet 1 changes a field that
 * must be constant per message. */
static void inconsistent_case(int which)
{
    struct peer *p = peer_new(NULL);
    post_recv_at(p, 1, 8192, 4096);
    uint8_t data[PEER_MTU];
    peer_pattern(data, sizeof(data), 10);
    struct mroce_hdr h = next_write(p, 2 * PEER_MTU);
    h.opcode = which == 3 ? MROCE_OP_SEND : MROCE_OP_WRITE;
    assert_int_equal(peer_feed(p, &h, data, PEER_MTU), 0);
    size_t dirty = peer_mem_dirty(p);
    assert_int_equal(dirty, PEER_MTU);
    assert_int_equal(peer_drain(p, NULL, 0), 1); /* its ACK */
    h.psn++;
    h.dsn++;
    h.offset = PEER_MTU;
    if (which == 0)
        h.msg_len = 3 * PEER_MTU;
    else if (which == 1)
        h.va += 4096;
    else if (which == 2)
        h.opcode = MROCE_OP_WRITE_IMM;
    else
        h.ssn = 1;
    struct snap s = snap_of(p);
    peer_feed(p, &h, data, PEER_MTU);
    assert_int_equal(peer_cnt(p).drop_bad_msg, s.c.drop_bad_msg + 1);
    assert_fatal(p, &s, &h, MROCE_NAK_INVALID_REQUEST, dirty);
    peer_free(p);
}

static void test_inconsistent_message(void **state)
{
    (void)state;
    for (int which = 0; which < 4; which++)
        inconsistent_case(which);
}

/* ENGINE BUG (reported): receive completion in MSN order takes rq_head
 * without checking the message's SSN. Two messages claiming the same
 * receive, the later one first, complete two receives when one was
 * posted: the second completion reports a receive that was never posted
 * (wr_id 0), rq_head passes rq_tail and the CQ's reservation count
 * underflows. Repro: post 1 receive; SEND msn 1 ssn 0 len 0; SEND msn 0
 * ssn 0 len 0. */
static void test_duplicate_ssn(void **state)
{
    struct peer *p = *state;
    post_recv_at(p, 77, 0, 256);
    assert_int_equal(peer_send(p, 0, 0, 0, 0, 1, 0, 0, 0, NULL, 0), 0);
    peer_send(p, 0, 1, 1, 0, 0, 0, 0, 0, NULL, 0);
    struct mroce_wc wc[8];
    int n = peer_poll(p->rcq, wc, 8);
    struct stream *st = &p->conn->streams[0];
    bool broken = seq_lt(st->rq_tail, st->rq_head);
    if (broken) /* else teardown walks the queue 2^32 times */
        st->rq_head = st->rq_tail;
    assert_false(broken);
    assert_true(n >= 1);
    assert_int_equal(wc[0].wr_id, 77);
    assert_int_equal(wc[0].status, MROCE_WC_SUCCESS);
    assert_int_equal(n, 1); /* one receive posted: one completion */
    assert_int_equal(p->rcq->pending, 0);
}

/* ENGINE BUG (reported): a READ whose execution is deferred (an earlier
 * message of the stream is incomplete) resolves its source only when it
 * starts (R-MSG-10). If the region was deregistered meanwhile,
 * resp_start_read keeps src == NULL and the requester memcpy's from
 * NULL + offset: a crash. The READ_REQ is already acknowledged, so the
 * spec leaves a local fatal error (R-CONN-12) -- ERROR and/or a fatal
 * NACK -- but never a READ_RESP and never a crash. Repro: WRITE msn 0
 * packet 1 of 2; READ_REQ msn 1 on region R; dereg R; WRITE msn 0 packet
 * 2; mroce_ctx_tx. */
static void test_read_region_gone(void **state)
{
    struct peer *p = *state;
    struct mroce_mr *mr;
    assert_int_equal(
        mroce_reg_mr(p->pd, p->mem + 4096, 4096, MROCE_ACCESS_REMOTE_READ, &mr),
        0);
    uint8_t data[PEER_MTU];
    peer_pattern(data, sizeof(data), 11);
    assert_int_equal(peer_write(p, 0, 0, 0, 0, 0, p->va, p->rkey, 0,
                                2 * PEER_MTU, data, PEER_MTU),
                     0);
    struct mroce_hdr r = peer_hdr(p, MROCE_OP_READ_REQ, 1, 0);
    r.dsn = 1;
    r.msn = 1;
    r.va = p->va + 4096;
    r.rkey = mroce_mr_rkey(mr);
    r.msg_len = 2000;
    assert_int_equal(peer_feed(p, &r, NULL, 0), 0);
    peer_drain(p, NULL, 0);
    assert_int_equal(peer_count(p, MROCE_OP_READ_RESP), 0);
    assert_int_equal(mroce_dereg_mr(mr), 0);
    assert_int_equal(peer_write(p, 2, 0, 2, 0, 0, p->va, p->rkey, PEER_MTU,
                                2 * PEER_MTU, data, PEER_MTU),
                     0);
    for (uint32_t i = 0; i < p->conn->attr.max_rd; i++)
        if (p->conn->resp[i].used && !p->conn->resp[i].src)
            fail_msg("READ response started with no source buffer");
    peer_drain(p, NULL, 0);
    assert_int_equal(peer_count(p, MROCE_OP_READ_RESP), 0);
    assert_true(peer_count(p, MROCE_OP_NACK) == 1 ||
                mroce_conn_state(p->conn) == MROCE_CONN_ERROR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
        T(test_truncated),
        T(test_bad_version),
        T(test_unknown_opcode),
        T(test_reserved_probe_ack),
        T(test_reserved_flags_ignored),
        T(test_bad_crc_each_byte),
        T(test_no_icrc),
        T(test_payload_on_control),
        T(test_unknown_conn),
        T(test_wrong_source),
        T(test_source_unknown_family),
        T(test_bad_path),
        T(test_dsn_beyond_window),
        T(test_dsn_window_alias),
        T(test_msn_beyond_window),
        T(test_bad_stream),
        T(test_wrong_rkey),
        T(test_va_out_of_bounds),
        T(test_no_remote_write),
        T(test_read_no_remote_read),
        T(test_send_longer_than_recv),
        T(test_bad_chunking),
        T(test_read_resp_unsolicited),
        T(test_inconsistent_message),
        T(test_duplicate_ssn),
        T(test_read_region_gone),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
