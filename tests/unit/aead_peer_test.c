/* The secure modes against a hostile peer (docs/spec.md section 3.14,
 * R-AEAD-*): the engine on one side, the test on the other with its own
 * key schedule (support/peer_sec.c). Every tampered, forged, unsealed or
 * replayed packet is dropped, counted by reason, changes no memory and
 * draws no reply; genuine traffic keeps working and lands exactly. Each
 * test runs in the authenticated and in the encrypted mode. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <mroce/mroce_crypto.h>

#include "engine/seal.h"
#include "support/peer.h"
#include "support/peer_sec.h"
#include "wire/aead.h"

#define PAYLOAD 200

static const uint8_t secret[32] = {0x5e, 0xc7, 0xe7, 1, 2, 3, 4, 5, 6, 7, 8};
static const uint8_t other[32] = {0x0f, 0xf0, 9, 9, 9};

static const int mode_auth = MROCE_SEC_AUTH;
static const int mode_enc = MROCE_SEC_ENCRYPT;

struct fx {
    int mode;
    struct peer *p;
};

static struct fx fx;

static struct peer *sec_peer(int mode)
{
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.crypto = mroce_crypto_default();
    struct peer *p = peer_new_unconnected(&cfg);
    peer_sec_setup(p, mode, secret);
    peer_connect(p);
    assert_int_equal(mroce_conn_sec_mode(p->conn), mode);
    return p;
}

static int setup(void **state)
{
    fx.mode = **(const int **)state;
    fx.p = sec_peer(fx.mode);
    *state = &fx;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    peer_free_all();
    return 0;
}

struct snap {
    struct mroce_conn_counters c;
    struct mroce_ctx_counters x;
    uint64_t drops;
};

static struct snap snap_of(const struct peer *p)
{
    return (struct snap){peer_cnt(p), peer_ctx_cnt(p), peer_drops(p)};
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

/* The next in-order WRITE of len bytes, sealed by s into buf. */
static size_t sealed_write(struct peer *p, struct peer_sec *s, uint8_t *buf,
                           const uint8_t *data, uint32_t len)
{
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_WRITE, 0, p->psn[0]);
    h.flags = MROCE_HF_ACKREQ;
    h.dsn = p->dsn;
    h.msn = p->msn[0];
    h.va = p->va;
    h.rkey = p->rkey;
    h.msg_len = len;
    return peer_sec_seal(s, &h, data, len, buf);
}

/* Accepts buf as the genuine next WRITE: placed, acknowledged. */
static void accept_write(struct peer *p, const uint8_t *buf, size_t n,
                         const uint8_t *data, uint32_t len)
{
    assert_int_equal(peer_rx_raw(p, buf, n), 0);
    assert_memory_equal(p->mem, data, len);
    p->psn[0]++;
    p->dsn++;
    p->msn[0]++;
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_non_null(peer_find(p, MROCE_OP_ACK, 0));
    peer_mem_reset(p);
}

/* ---- genuine traffic ---- */

static void test_genuine_write_and_alive(void **state)
{
    struct fx *f = *state;
    uint8_t data[PAYLOAD], buf[PEER_PKT_MAX];
    peer_pattern(data, sizeof(data), 1);
    size_t n = sealed_write(f->p, f->p->sec, buf, data, PAYLOAD);
    assert_int_equal(n, 48 + PAYLOAD + 16);
    assert_true(buf[0] & MROCE_HF_SEAL);
    accept_write(f->p, buf, n, data, PAYLOAD);
    peer_check_alive(f->p);
    struct mroce_conn_counters c = peer_cnt(f->p);
    assert_int_equal(c.drop_bad_tag + c.drop_replay + c.drop_sec_mode, 0);
    assert_true(f->p->sec->opened >= 2); /* the engine's ACKs opened */
}

/* ---- tampering: every bit position class ---- */

/* Flips `mask` in byte i of a valid sealed WRITE: always one drop, and
 * the reason is the AEAD's unless the byte decides something before the
 * tag is looked at (version, opcode, SEAL, conn id, path). */
static void tamper_byte(struct peer *p, const uint8_t *good, size_t n, size_t i,
                        uint8_t mask)
{
    uint8_t bad[PEER_PKT_MAX];
    memcpy(bad, good, n);
    bad[i] ^= mask;
    struct snap s = snap_of(p);
    assert_int_equal(peer_rx_raw(p, bad, n), MROCE_EPROTO);
    bool early = i < 8 && !(i == 0 && mask == MROCE_HF_KPHASE);
    if (!early)
        assert_int_equal(peer_cnt(p).drop_bad_tag, s.c.drop_bad_tag + 1);
    assert_quiet_drop(p, &s);
}

static void test_tamper_every_byte(void **state)
{
    struct fx *f = *state;
    uint8_t data[PAYLOAD], good[PEER_PKT_MAX];
    peer_pattern(data, sizeof(data), 2);
    size_t n = sealed_write(f->p, f->p->sec, good, data, PAYLOAD);
    for (size_t i = 0; i < n; i++) {
        tamper_byte(f->p, good, n, i, 0x01);
        tamper_byte(f->p, good, n, i, 0x80);
    }
    /* header bit, payload bit, tag bit: the reason is the tag's */
    static const uint8_t masks[] = {0x04, 0x10, 0x40};
    for (size_t k = 0; k < sizeof(masks); k++) {
        tamper_byte(f->p, good, n, 20, masks[k]);     /* DXH dsn */
        tamper_byte(f->p, good, n, 48 + 7, masks[k]); /* payload */
        tamper_byte(f->p, good, n, n - 1, masks[k]);  /* tag */
        tamper_byte(f->p, good, n, 12, masks[k]);     /* MTH ts */
    }
    /* a truncated tag, a shortened payload */
    struct snap s = snap_of(f->p);
    assert_int_equal(peer_rx_raw(f->p, good, n - 1), MROCE_EPROTO);
    assert_quiet_drop(f->p, &s);
    /* and the untouched packet is still the genuine one */
    accept_write(f->p, good, n, data, PAYLOAD);
    peer_check_alive(f->p);
}

/* ---- forgeries ---- */

static void test_wrong_key(void **state)
{
    struct fx *f = *state;
    uint8_t data[PAYLOAD], buf[PEER_PKT_MAX];
    peer_pattern(data, sizeof(data), 3);
    /* another secret; the same secret under the other mode's keys */
    struct peer_sec *forger[2] = {
        peer_sec_new(f->p, f->mode, other),
        peer_sec_new(f->p, MROCE_SEC_AUTH + MROCE_SEC_ENCRYPT - f->mode,
                     secret)};
    for (int k = 0; k < 2; k++) {
        forger[k]->mode = f->mode; /* frame it as this connection's mode */
        size_t n = sealed_write(f->p, forger[k], buf, data, PAYLOAD);
        struct snap s = snap_of(f->p);
        assert_int_equal(peer_rx_raw(f->p, buf, n), MROCE_EPROTO);
        assert_int_equal(peer_cnt(f->p).drop_bad_tag, s.c.drop_bad_tag + 1);
        assert_quiet_drop(f->p, &s);
        peer_sec_delete(forger[k]);
    }
    peer_check_alive(f->p);
}

/* R-AEAD-8 step A: a plain packet (valid ICRC) on a secure connection. */
static void test_unsealed_refused(void **state)
{
    struct fx *f = *state;
    struct peer *p = f->p;
    uint8_t data[PAYLOAD], buf[PEER_PKT_MAX];
    peer_pattern(data, sizeof(data), 4);
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_WRITE, 0, p->psn[0]);
    h.dsn = p->dsn;
    h.msn = p->msn[0];
    h.va = p->va;
    h.rkey = p->rkey;
    h.msg_len = PAYLOAD;
    size_t n = peer_encode(&h, data, PAYLOAD, buf);
    struct snap s = snap_of(p);
    assert_int_equal(peer_rx_raw(p, buf, n), MROCE_EPROTO);
    assert_int_equal(peer_cnt(p).drop_sec_mode, s.c.drop_sec_mode + 1);
    assert_quiet_drop(p, &s);
    /* the one-packet kills, unsealed: CLOSE, ACK sweeps */
    struct mroce_hdr c = peer_hdr(p, MROCE_OP_CLOSE, 0, 0);
    n = peer_encode(&c, NULL, 0, buf);
    s = snap_of(p);
    assert_int_equal(peer_rx_raw(p, buf, n), MROCE_EPROTO);
    assert_quiet_drop(p, &s);
    peer_check_alive(p);
}

/* R-AEAD-2: an authentic packet whose protection byte names the other
 * mode (a zero-length WRITE seals alike in both modes). */
static void test_protection_byte_checked(void **state)
{
    struct fx *f = *state;
    struct peer *p = f->p;
    uint8_t buf[PEER_PKT_MAX];
    p->sec->mode = MROCE_SEC_AUTH + MROCE_SEC_ENCRYPT - f->mode;
    size_t n = sealed_write(p, p->sec, buf, NULL, 0);
    p->sec->mode = f->mode;
    struct snap s = snap_of(p);
    assert_int_equal(peer_rx_raw(p, buf, n), MROCE_EPROTO);
    assert_int_equal(peer_cnt(p).drop_sec_mode, s.c.drop_sec_mode + 1);
    assert_quiet_drop(p, &s);
    peer_check_alive(p);
}

/* ---- replays (R-AEAD-9) ---- */

static void test_replayed_data(void **state)
{
    struct fx *f = *state;
    struct peer *p = f->p;
    uint8_t data[PAYLOAD], buf[PEER_PKT_MAX];
    peer_pattern(data, sizeof(data), 5);
    size_t n = sealed_write(p, p->sec, buf, data, PAYLOAD);
    accept_write(p, buf, n, data, PAYLOAD);
    /* the same bytes again: same (path, PSN) */
    struct snap s = snap_of(p);
    assert_int_equal(peer_rx_raw(p, buf, n), MROCE_EPROTO);
    assert_int_equal(peer_cnt(p).drop_replay, s.c.drop_replay + 1);
    assert_quiet_drop(p, &s);
    /* a PSN 300 ahead moves the window: the old one is now too old */
    struct mroce_hdr pr = peer_hdr(p, MROCE_OP_PROBE, 0, p->psn[0] + 300);
    pr.flags = MROCE_HF_ACKREQ;
    assert_int_equal(peer_feed(p, &pr, NULL, 0), 0);
    p->psn[0] += 301;
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    s = snap_of(p);
    assert_int_equal(peer_rx_raw(p, buf, n), MROCE_EPROTO);
    assert_int_equal(peer_cnt(p).drop_replay, s.c.drop_replay + 1);
    assert_quiet_drop(p, &s);
    /* authentic, never sent before, but before the path's first PSN
     * (R-CONN-5): the window starts there, so it is refused too */
    struct mroce_hdr old = peer_hdr(p, MROCE_OP_PROBE, 2, p->psn[2] - 3);
    n = peer_sec_seal(p->sec, &old, NULL, 0, buf);
    s = snap_of(p);
    assert_int_equal(peer_rx_raw(p, buf, n), MROCE_EPROTO);
    assert_int_equal(peer_cnt(p).drop_replay, s.c.drop_replay + 1);
    assert_quiet_drop(p, &s);
    peer_check_alive(p);
}

/* An ACK that completed a WRITE, replayed, and a PROBE replayed. */
static void test_replayed_ack_probe(void **state)
{
    struct fx *f = *state;
    struct peer *p = f->p;
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 77, 0, 100), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    const struct peer_out *w = peer_find(p, MROCE_OP_WRITE, 0);
    assert_non_null(w);
    struct mroce_hdr a = peer_hdr(p, MROCE_OP_ACK, w->h.path, 0);
    a.sack_high = w->h.psn;
    a.dsn_cum = w->h.dsn + 1;
    a.echo_ts = w->h.ts;
    mroce_sack_set(a.sack, 0);
    uint8_t ack[PEER_PKT_MAX];
    size_t n = peer_sec_seal(p->sec, &a, NULL, 0, ack);
    assert_int_equal(peer_rx_raw(p, ack, n), 0);
    struct mroce_wc wc;
    assert_int_equal(peer_poll(p->scq, &wc, 1), 1);
    assert_int_equal(wc.status, MROCE_WC_SUCCESS);
    struct snap s = snap_of(p);
    assert_int_equal(peer_rx_raw(p, ack, n), MROCE_EPROTO);
    assert_int_equal(peer_cnt(p).drop_replay, s.c.drop_replay + 1);
    assert_int_equal(peer_cnt(p).rx_acks, s.c.rx_acks);
    assert_quiet_drop(p, &s);
    /* a PROBE once recorded, then replayed: no second ACK */
    struct mroce_hdr pr = peer_hdr(p, MROCE_OP_PROBE, 1, p->psn[1]++);
    pr.flags = MROCE_HF_ACKREQ;
    uint8_t probe[PEER_PKT_MAX];
    n = peer_sec_seal(p->sec, &pr, NULL, 0, probe);
    assert_int_equal(peer_rx_raw(p, probe, n), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    s = snap_of(p);
    assert_int_equal(peer_rx_raw(p, probe, n), MROCE_EPROTO);
    assert_int_equal(peer_cnt(p).drop_replay, s.c.drop_replay + 1);
    assert_quiet_drop(p, &s);
}

/* A CLOSE is answered once; its replay changes nothing, draws nothing. */
static void test_replayed_close(void **state)
{
    struct fx *f = *state;
    struct peer *p = f->p;
    struct mroce_hdr c = peer_hdr(p, MROCE_OP_CLOSE, 0, 0);
    uint8_t buf[PEER_PKT_MAX];
    size_t n = peer_sec_seal(p->sec, &c, NULL, 0, buf);
    assert_int_equal(peer_rx_raw(p, buf, n), 0);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CLOSED);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_non_null(peer_find(p, MROCE_OP_CLOSE_ACK, 0));
    uint64_t replay = peer_cnt(p).drop_replay;
    assert_int_equal(peer_rx_raw(p, buf, n), MROCE_EPROTO);
    assert_int_equal(peer_cnt(p).drop_replay, replay + 1);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    /* a fresh CLOSE (next CSN) is still answered (R-CONN-13) */
    n = peer_sec_seal(p->sec, &c, NULL, 0, buf);
    assert_int_equal(peer_rx_raw(p, buf, n), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
}

/* ---- key updates (R-AEAD-7) ---- */

/* The peer moves to epoch 1: the engine follows; a late epoch-0 packet
 * still opens (previous key); epoch 2 next; then epoch 0 and epoch 4,
 * whose phase is the current one's, do not. */
static void test_rx_key_update(void **state)
{
    struct fx *f = *state;
    struct peer *p = f->p;
    uint8_t data[2 * PEER_MTU], late[PEER_PKT_MAX], buf[PEER_PKT_MAX];
    peer_pattern(data, sizeof(data), 6);
    /* a two-packet WRITE: the second packet sealed under epoch 0 on path
     * 1, arriving after the first, sealed under epoch 1 */
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_WRITE, 1, p->psn[1]++);
    h.dsn = p->dsn + 1;
    h.msn = p->msn[0];
    h.va = p->va;
    h.rkey = p->rkey;
    h.msg_len = 2 * PEER_MTU;
    h.offset = PEER_MTU;
    size_t nl = peer_sec_seal(p->sec, &h, data + PEER_MTU, PEER_MTU, late);
    p->sec->tx_epoch = 1;
    h.path = 0;
    h.psn = p->psn[0]++;
    h.dsn = p->dsn;
    h.offset = 0;
    size_t n = peer_sec_seal(p->sec, &h, data, PEER_MTU, buf);
    assert_int_equal(peer_rx_raw(p, buf, n), 0);
    assert_int_equal(peer_cnt(p).key_updates_rx, 1);
    assert_int_equal(peer_rx_raw(p, late, nl), 0); /* previous key */
    assert_memory_equal(p->mem, data, sizeof(data));
    p->dsn += 2;
    p->msn[0]++;
    peer_drain(p, NULL, 0);
    peer_mem_reset(p);
    p->sec->tx_epoch = 2;
    peer_check_alive(p);
    assert_int_equal(peer_cnt(p).key_updates_rx, 2);
    uint32_t bad_epochs[2] = {0, 4};
    for (int k = 0; k < 2; k++) {
        p->sec->tx_epoch = bad_epochs[k];
        n = sealed_write(p, p->sec, buf, data, PAYLOAD);
        struct snap s = snap_of(p);
        assert_int_equal(peer_rx_raw(p, buf, n), MROCE_EPROTO);
        assert_int_equal(peer_cnt(p).drop_bad_tag, s.c.drop_bad_tag + 1);
        assert_quiet_drop(p, &s);
    }
    p->sec->tx_epoch = 3;
    peer_check_alive(p);
    assert_int_equal(peer_cnt(p).key_updates_rx, 3);
}

/* The engine updates its own key every 4 packets: the peer opens every
 * packet under the epoch its phase and count say. */
static void test_tx_key_update(void **state)
{
    struct fx *f = *state;
    struct peer *p = f->p;
    mroce_conn_aead_limit(p->conn, 4, 0);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(
            peer_post(p, MROCE_OP_WRITE, 0, 100 + (uint64_t)i, 0, 3 * PEER_MTU),
            0);
        assert_true(peer_drain(p, NULL, 0) >= 3); /* each opened */
        peer_ack_all(p);
    }
    assert_true(peer_cnt(p).key_updates_tx >= 4);
    assert_true(p->sec->rx_epoch_seen >= 4);
}

/* A packet sealed under the nearly used-up key, then the update. */
static void test_near_exhaustion(void **state)
{
    struct fx *f = *state;
    struct peer *p = f->p;
    mroce_conn_aead_limit(p->conn, ENG_AEAD_KEY_PKTS, ENG_AEAD_KEY_PKTS - 2);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 5, 0, 5 * PEER_MTU), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 5);
    assert_int_equal(peer_cnt(p).key_updates_tx, 1);
    assert_int_equal(p->sec->rx_epoch_seen, 1);
    for (int i = 0; i < 5; i++) /* epochs 0, 0, 1, 1, 1 by phase */
        assert_int_equal(p->out[i].buf[0] & MROCE_HF_KPHASE, i >= 2);
    peer_ack_all(p);
    struct mroce_wc wc;
    assert_int_equal(peer_poll(p->scq, &wc, 1), 1);
    assert_int_equal(wc.status, MROCE_WC_SUCCESS);
}

/* ---- what the engine sends ---- */

/* Raw packets: sealed, phase 0, tag 16 bytes; the encrypted mode's
 * payload is not the memory's bytes on the wire, the authenticated
 * mode's is; both open to them. */
static void test_engine_output(void **state)
{
    struct fx *f = *state;
    struct peer *p = f->p;
    peer_pattern(p->mem, 3000, 9);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, 3000), 0);
    int got = 0;
    uint8_t buf[PEER_PKT_MAX];
    struct mroce_pkt_meta m;
    int n;
    while ((n = mroce_ctx_tx(p->ctx, p->now, buf, sizeof(buf), &m)) > 0) {
        assert_int_equal(buf[1], MROCE_OP_WRITE);
        assert_int_equal(buf[0] & 0x3, MROCE_HF_SEAL);
        uint32_t off = (uint32_t)got * PEER_MTU;
        uint32_t len = (uint32_t)n - 48 - 16;
        bool same = memcmp(buf + 48, p->mem + off, len) == 0;
        assert_int_equal(same, f->mode == MROCE_SEC_AUTH);
        assert_int_equal(buf[MROCE_DXH_PROT_OFF],
                         f->mode == MROCE_SEC_ENCRYPT ? MROCE_PROT_ENC : 0);
        assert_int_equal(peer_sec_open(p->sec, buf, (size_t)n), 0);
        assert_memory_equal(buf + 48, p->mem + off, len);
        got++;
    }
    assert_int_equal(got, 3);
}

/* ---- API ---- */

static void test_api_errors(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    struct peer *p = peer_new_unconnected(&cfg); /* no crypto provider */
    assert_int_equal(mroce_conn_set_secret(p->conn, MROCE_SEC_AUTH, secret, 32),
                     MROCE_ENOTSUP);
    assert_int_equal(mroce_conn_set_secret(p->conn, 3, secret, 32),
                     MROCE_EINVAL);
    assert_int_equal(mroce_conn_set_secret(p->conn, MROCE_SEC_NONE, NULL, 0),
                     0);
    peer_free(p);
    cfg.crypto = mroce_crypto_default();
    p = peer_new_unconnected(&cfg);
    assert_int_equal(mroce_conn_set_secret(p->conn, MROCE_SEC_AUTH, secret, 16),
                     MROCE_EINVAL);
    assert_int_equal(mroce_conn_set_secret(p->conn, MROCE_SEC_AUTH, NULL, 32),
                     MROCE_EINVAL);
    assert_int_equal(mroce_conn_set_secret(p->conn, -1, secret, 32),
                     MROCE_EINVAL);
    assert_int_equal(mroce_conn_sec_mode(p->conn), MROCE_SEC_NONE);
    /* the peer claims the engine's own id: one key for both ways */
    assert_int_equal(mroce_conn_set_secret(p->conn, MROCE_SEC_AUTH, secret, 32),
                     0);
    struct mroce_conn_params r = p->remote;
    r.conn_id = p->local.conn_id;
    assert_int_equal(mroce_conn_connect(p->conn, &r), MROCE_EINVAL);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_INIT);
    peer_connect(p); /* the real id works */
    assert_int_equal(mroce_conn_set_secret(p->conn, MROCE_SEC_NONE, NULL, 0),
                     MROCE_ESTATE);
    peer_free(p);
    /* a context whose provider lacks a function is refused */
    struct mroce_crypto half = *mroce_crypto_default();
    half.open = NULL;
    struct mroce_ctx_attr a = {.addr = {.family = MROCE_AF_INET},
                               .crypto = &half};
    struct mroce_ctx *ctx;
    assert_int_equal(mroce_ctx_open(&a, &ctx), MROCE_EINVAL);
    assert_string_equal(mroce_strerror(MROCE_ENOTSUP),
                        "not available here (no crypto provider)");
}

/* A plain connection drops a sealed packet unopened. */
static void test_sealed_on_plain(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.crypto = mroce_crypto_default();
    struct peer *p = peer_new(&cfg);
    struct peer_sec *s = peer_sec_new(p, MROCE_SEC_AUTH, secret);
    uint8_t data[PAYLOAD], buf[PEER_PKT_MAX];
    peer_pattern(data, sizeof(data), 8);
    size_t n = sealed_write(p, s, buf, data, PAYLOAD);
    struct snap sn = snap_of(p);
    assert_int_equal(peer_rx_raw(p, buf, n), MROCE_EPROTO);
    assert_int_equal(peer_cnt(p).drop_sec_mode, sn.c.drop_sec_mode + 1);
    assert_quiet_drop(p, &sn);
    peer_sec_delete(s);
    /* the context's larger buffers do not change plain packets */
    assert_int_equal(mroce_ctx_max_pkt(p->ctx), 68 + PEER_MTU + 16);
    peer_check_alive(p);
}

#define BOTH(t)                                                                \
    cmocka_unit_test_prestate_setup_teardown(t, setup, teardown,               \
                                             (void *)&mode_auth),              \
        cmocka_unit_test_prestate_setup_teardown(t, setup, teardown,           \
                                                 (void *)&mode_enc)

int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_genuine_write_and_alive),
        BOTH(test_tamper_every_byte),
        BOTH(test_wrong_key),
        BOTH(test_unsealed_refused),
        BOTH(test_protection_byte_checked),
        BOTH(test_replayed_data),
        BOTH(test_replayed_ack_probe),
        BOTH(test_replayed_close),
        BOTH(test_rx_key_update),
        BOTH(test_tx_key_update),
        BOTH(test_near_exhaustion),
        BOTH(test_engine_output),
        cmocka_unit_test_teardown(test_api_errors, teardown),
        cmocka_unit_test_teardown(test_sealed_on_plain, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
