/* Per-path SACK and recovery (R-SACK-*, R-LOSS-*, R-RTT-*, R-PATH-*,
 * R-RETRY-*): the receiver's bitmap and ACK policy, and the sender's
 * reaction to ACKs, NACKs, silence and RNR. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "support/peer.h"

#define US 1000ull

/* This file's sender tests read the engine's PSNs, DSNs and MSNs from 0:
 * its first ones are fixed there (R-CONN-5 otherwise draws them). */
static void sack_cfg(struct peer_cfg *cfg)
{
    peer_default_cfg(cfg);
    cfg->fixed_init = true;
}

static struct peer *sack_peer(void)
{
    struct peer_cfg cfg;
    sack_cfg(&cfg);
    return peer_new(&cfg);
}

static int setup(void **state)
{
    *state = sack_peer();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    peer_free_all(); /* the fixture's peer and any a failed test left */
    return 0;
}

static struct peer *peer_with(uint32_t ack_every, uint8_t rnr_retry)
{
    struct peer_cfg cfg;
    sack_cfg(&cfg);
    cfg.attr.ack_every = ack_every;
    cfg.attr.rnr_retry = rnr_retry;
    return peer_new(&cfg);
}

/* A one-packet WRITE from the peer at (path, psn) carrying dsn/msn. */
static void rx_write(struct peer *p, uint16_t path, uint32_t psn, uint32_t dsn,
                     uint32_t msn, uint8_t ecn)
{
    uint8_t data[64];
    peer_pattern(data, sizeof(data), dsn);
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_WRITE, path, psn);
    h.dsn = dsn;
    h.msn = msn;
    h.va = p->va + 64 * (dsn % 512);
    h.rkey = p->rkey;
    h.msg_len = sizeof(data);
    uint8_t buf[PEER_PKT_MAX];
    size_t n = peer_encode(&h, data, sizeof(data), buf);
    struct mroce_pkt_meta m = peer_meta(p, path);
    m.ecn = ecn;
    assert_int_equal(peer_rx_meta(p, &m, buf, n), 0);
}

/* Exactly these bits of the ACK's bitmap are set. */
static void assert_bits(const struct mroce_hdr *a, const unsigned *bits, int n)
{
    uint64_t want[4] = {0};
    for (int i = 0; i < n; i++)
        mroce_sack_set(want, bits[i]);
    for (unsigned i = 0; i < MROCE_SACK_BITS; i++)
        if (mroce_sack_test(a->sack, i) != mroce_sack_test(want, i))
            fail_msg("SACK bit %u is %d", i, mroce_sack_test(a->sack, i));
}

static const struct mroce_hdr *only_ack(struct peer *p)
{
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_int_equal(p->out[0].h.opcode, MROCE_OP_ACK);
    return &p->out[0].h;
}

/* The data transmissions declared lost by each rule: R-LOSS-1 (SACK),
 * R-LOSS-8 (RACK), R-RTT-7 (PTO), R-RTT-6 (RTO), R-RETRY-4 (RNR). */
static void assert_lost_by(const struct peer *p, uint64_t sack, uint64_t rack,
                           uint64_t pto, uint64_t rto, uint64_t rnr)
{
    struct mroce_conn_counters c = peer_cnt(p);
    assert_int_equal(c.lost_sack, sack);
    assert_int_equal(c.lost_rack, rack);
    assert_int_equal(c.lost_pto, pto);
    assert_int_equal(c.lost_rto, rto);
    assert_int_equal(c.lost_rnr, rnr);
}

/* ---- the receiver ---- */

static void test_rx_sack_bitmap(void **state)
{
    struct peer *p = *state;
    static const uint32_t psns[] = {0, 1, 2, 4, 5};
    uint32_t ts5 = 0;
    for (int i = 0; i < 5; i++) {
        peer_advance(p, 1000);
        ts5 = (uint32_t)p->now;
        rx_write(p, 0, psns[i], psns[i], (uint32_t)i,
                 psns[i] == 4 ? MROCE_ECN_CE : MROCE_ECN_ECT0);
    }
    const struct mroce_hdr *a = only_ack(p); /* coalesced on path 0 */
    assert_int_equal(a->path, 0);
    assert_int_equal(a->psn, 5); /* R-VAL-4: sack_high, no PROBE answered */
    assert_int_equal(a->sack_high, 5);
    static const unsigned bits[] = {0, 1, 3, 4, 5};
    assert_bits(a, bits, 5);
    assert_int_equal(a->dsn_cum, 3);
    assert_int_equal(a->rx_count, 5);
    assert_int_equal(a->ce_count, 1);
    assert_int_equal(a->echo_ts, ts5);
    assert_int_equal(peer_cnt(p).rx_ecn_ce, 1);
    /* other paths have their own bitmap */
    rx_write(p, 3, 7, 3, 5, MROCE_ECN_ECT0);
    a = only_ack(p);
    assert_int_equal(a->path, 3);
    assert_int_equal(a->sack_high, 7);
    assert_bits(a, (const unsigned[]){0}, 1);
    assert_int_equal(a->dsn_cum, 6);
    assert_int_equal(a->rx_count, 1);
    assert_int_equal(a->ce_count, 0);
}

/* R-SACK-4: 255 below high still fits the bitmap; 256 below is stale:
 * the data is taken by DSN, the bitmap is unchanged, an ACK goes out. */
static void test_rx_stale_psn(void **state)
{
    struct peer *p = *state;
    for (uint32_t i = 0; i < 3; i++)
        rx_write(p, 0, i, i, i, MROCE_ECN_ECT0);
    rx_write(p, 0, 303, 3, 3, MROCE_ECN_ECT0);
    peer_drain(p, NULL, 0);
    rx_write(p, 0, 303 - 255, 4, 4, MROCE_ECN_ECT0);
    const struct mroce_hdr *a = only_ack(p);
    assert_bits(a, (const unsigned[]){0, 255}, 2);
    size_t dirty = peer_mem_dirty(p);
    rx_write(p, 0, 303 - 256, 5, 5, MROCE_ECN_ECT0); /* 256 below */
    a = only_ack(p);
    assert_int_equal(a->sack_high, 303);
    assert_bits(a, (const unsigned[]){0, 255}, 2);
    assert_int_equal(a->dsn_cum, 6);
    assert_int_equal(peer_mem_dirty(p), dirty + 64); /* placed */
    rx_write(p, 0, 303 - 300, 6, 6, MROCE_ECN_ECT0); /* 300 below */
    a = only_ack(p);
    assert_bits(a, (const unsigned[]){0, 255}, 2);
    assert_int_equal(a->dsn_cum, 7);
    assert_int_equal(peer_cnt(p).rx_dup_pkts, 0);
}

/* R-ACK-1: every ack_every packets, at once on ACKREQ, a gap or a
 * duplicate, else after ack_delay. */
static void test_rx_ack_policy(void **state)
{
    (void)state;
    struct peer *p = peer_with(4, 0);
    uint64_t t0 = p->now;
    for (uint32_t i = 0; i < 3; i++)
        rx_write(p, 0, i, i, i, MROCE_ECN_ECT0);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_true(mroce_ctx_next_expiry(p->ctx) <= t0 + 2000);
    assert_int_equal(peer_fire_tx(p, 8), 1);
    assert_int_equal(p->now, t0 + 2000); /* ack_delay */
    assert_int_equal(p->out[0].h.opcode, MROCE_OP_ACK);
    assert_int_equal(p->out[0].h.sack_high, 2);
    for (uint32_t i = 3; i < 7; i++) {
        assert_int_equal(peer_drain(p, NULL, 0), 0);
        rx_write(p, 0, i, i, i, MROCE_ECN_ECT0);
    }
    assert_int_equal(only_ack(p)->sack_high, 6); /* the 4th */
    rx_write(p, 0, 9, 7, 7, MROCE_ECN_ECT0);     /* gap */
    assert_int_equal(only_ack(p)->sack_high, 9);
    rx_write(p, 0, 9, 7, 7, MROCE_ECN_ECT0); /* duplicate */
    assert_int_equal(only_ack(p)->dsn_cum, 8);
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_WRITE, 0, 10);
    h.flags = MROCE_HF_ACKREQ;
    h.dsn = 8;
    h.msn = 8;
    h.va = p->va;
    h.rkey = p->rkey;
    assert_int_equal(peer_feed(p, &h, NULL, 0), 0);
    assert_int_equal(only_ack(p)->sack_high, 10);
    peer_free(p);
}

/* R-ACK-1 (ack_every 16, the default): in-order data on any paths is
 * acknowledged once per 16 packets of the connection, by an ACK whose
 * dsn_cum covers them all (R-ACK-100); a packet above a DSN hole and the
 * one that fills it are acknowledged at once, and so is a CE mark. */
static void test_rx_ack_coalesced(void **state)
{
    (void)state;
    struct peer *p = peer_with(16, 0);
    uint32_t psn[4] = {0};
    for (uint32_t i = 0; i < 15; i++) {
        rx_write(p, (uint16_t)(i % 4), psn[i % 4]++, i, i, MROCE_ECN_ECT0);
        assert_int_equal(peer_drain(p, NULL, 0), 0);
    }
    rx_write(p, 3, psn[3]++, 15, 15, MROCE_ECN_ECT0);
    const struct mroce_hdr *a = only_ack(p);
    assert_int_equal(a->dsn_cum, 16);
    assert_int_equal(a->path, 3); /* the latest packet's path */
    rx_write(p, 1, psn[1]++, 17, 17, MROCE_ECN_ECT0); /* above a hole */
    a = only_ack(p);
    assert_int_equal(a->path, 1);
    assert_int_equal(a->dsn_cum, 16);
    rx_write(p, 2, psn[2]++, 16, 16, MROCE_ECN_ECT0); /* fills it */
    a = only_ack(p);
    assert_int_equal(a->path, 2);
    assert_int_equal(a->dsn_cum, 18);
    rx_write(p, 0, psn[0]++, 18, 18, MROCE_ECN_CE); /* in order, CE */
    assert_int_equal(only_ack(p)->path, 0);
    /* in order again: held until ack_delay (no rate granted yet to
     * scale the hold by) */
    uint64_t t0 = p->now;
    rx_write(p, 1, psn[1]++, 19, 19, MROCE_ECN_ECT0);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_int_equal(peer_fire_tx(p, 8), 1);
    assert_true(p->now <= t0 + 2000);
    assert_int_equal(p->out[0].h.dsn_cum, 20);
    peer_free(p);
}

/* ---- the sender ---- */

/* Posts one WRITE of len bytes from mem (filled with a pattern). */
static void post_write(struct peer *p, uint64_t wr_id, uint32_t len)
{
    peer_pattern(p->mem, len, (uint32_t)wr_id);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, wr_id, 0, len), 0);
}

static void assert_one_wc(struct mroce_cq *cq, uint64_t wr_id, uint8_t status)
{
    struct mroce_wc wc[4];
    assert_int_equal(peer_poll(cq, wc, 4), 1);
    assert_int_equal(wc[0].wr_id, wr_id);
    assert_int_equal(wc[0].status, status);
}

static int no_wc(struct mroce_cq *cq)
{
    struct mroce_wc wc[4];
    return peer_poll(cq, wc, 4) == 0;
}

static void test_tx_spray(void **state)
{
    struct peer *p = *state;
    post_write(p, 1, 10 * PEER_MTU);
    assert_int_equal(peer_drain(p, NULL, 0), 10);
    for (uint32_t k = 0; k < 10; k++) {
        const struct peer_out *o = &p->out[k];
        assert_int_equal(o->h.opcode, MROCE_OP_WRITE);
        assert_int_equal(o->h.dsn, k);
        assert_int_equal(o->h.msn, 0);
        assert_int_equal(o->h.offset, k * PEER_MTU);
        assert_int_equal(o->h.msg_len, 10 * PEER_MTU);
        assert_int_equal(o->h.path, k % 4);
        assert_int_equal(o->h.psn, k / 4);
        assert_int_equal(o->h.rkey, 0x5EED);
        assert_true(o->h.va == 0x100000000ull);
        /* R-ACK-1: the last three packets of the message */
        assert_int_equal(!!(o->h.flags & MROCE_HF_ACKREQ), k >= 7);
        assert_int_equal(o->h.flags & MROCE_HF_RETX, 0);
        assert_int_equal(o->h.payload_len, PEER_MTU);
        assert_memory_equal(o->h.payload, p->mem + k * PEER_MTU, PEER_MTU);
        assert_int_equal(o->meta.src_port, peer_path(p, o->h.path).src_port);
    }
    for (uint16_t a = 0; a < 4; a++)
        for (uint16_t b = 0; b < a; b++)
            assert_int_not_equal(peer_path(p, a).src_port,
                                 peer_path(p, b).src_port);
    assert_true(no_wc(p->scq));
    peer_ack_all(p);
    struct mroce_wc wc[2];
    assert_int_equal(peer_poll(p->scq, wc, 2), 1);
    assert_int_equal(wc[0].wr_id, 1);
    assert_int_equal(wc[0].status, MROCE_WC_SUCCESS);
    assert_int_equal(wc[0].opcode, MROCE_WC_RDMA_WRITE);
    assert_int_equal(wc[0].byte_len, 10 * PEER_MTU);
    for (uint16_t a = 0; a < 4; a++)
        assert_int_equal(peer_path(p, a).inflight_bytes, 0);
}

/* The 10 packets of a WRITE of 10 MTU, sprayed; next[] gets each path's
 * next PSN and dsn[][] the DSN at each (path, PSN). */
static void spray10(struct peer *p, uint32_t next[4], uint32_t dsn[4][4])
{
    post_write(p, 1, 10 * PEER_MTU);
    assert_int_equal(peer_drain(p, NULL, 0), 10);
    for (int k = 0; k < 10; k++) {
        const struct mroce_hdr *h = &p->out[k].h;
        assert_true(h->psn < 4);
        dsn[h->path][h->psn] = h->dsn;
        if (h->psn + 1 > next[h->path])
            next[h->path] = h->psn + 1;
    }
}

/* R-LOSS-1/4: PSN 0 of path `lp` is missing below sack_high: it is lost
 * at once and its DSN goes out again with the RETX flag, the same bytes,
 * on another path with that path's next PSN (R-SACK-2, R-LOSS-3). */
static void sack_loss_case(uint16_t lp)
{
    struct peer *p = sack_peer();
    uint32_t next[4] = {0}, dsn[4][4] = {{0}};
    spray10(p, next, dsn);
    assert_true(next[lp] >= 2);
    assert_int_equal(peer_ack_range(p, lp, 1, next[lp] - 1, 0), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    const struct mroce_hdr *r = &p->out[0].h;
    uint32_t d = dsn[lp][0];
    assert_int_equal(r->opcode, MROCE_OP_WRITE);
    assert_int_equal(r->dsn, d);
    assert_int_equal(r->offset, d * PEER_MTU);
    assert_true(r->flags & MROCE_HF_RETX);
    assert_int_not_equal(r->path, lp);
    assert_int_equal(r->psn, next[r->path]);
    assert_memory_equal(r->payload, p->mem + d * PEER_MTU, PEER_MTU);
    assert_int_equal(peer_path(p, lp).lost_pkts, 1);
    assert_int_equal(peer_path(p, lp).acked_pkts, next[lp] - 1);
    assert_int_equal(peer_cnt(p).retx_pkts, 1);
    assert_lost_by(p, 1, 0, 0, 0, 0);
    assert_int_equal(peer_path(p, r->path).retx_pkts, 1);
    assert_true(no_wc(p->scq));
    next[r->path]++;
    for (uint16_t a = 0; a < 4; a++)
        if (a != lp)
            assert_int_equal(peer_ack_range(p, a, 0, next[a] - 1, 10), 0);
    assert_one_wc(p->scq, 1, MROCE_WC_SUCCESS);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    for (uint16_t a = 0; a < 4; a++)
        assert_int_equal(peer_path(p, a).inflight_bytes, 0);
    assert_true(no_wc(p->scq)); /* exactly once */
    peer_free(p);
}

static void test_tx_sack_loss_retx(void **state)
{
    (void)state;
    for (uint16_t lp = 0; lp < 4; lp++)
        sack_loss_case(lp);
}

/* Nothing in the sender moved: no PSN resolved, nothing completed. */
static void assert_untouched(struct peer *p, uint32_t inflight0)
{
    uint32_t inflight = 0;
    for (uint16_t a = 0; a < 4; a++) {
        inflight += peer_path(p, a).inflight_bytes;
        assert_int_equal(peer_path(p, a).acked_pkts, 0);
        assert_int_equal(peer_path(p, a).lost_pkts, 0);
    }
    assert_int_equal(inflight, inflight0);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_true(no_wc(p->scq));
}

static uint32_t total_inflight(const struct peer *p)
{
    uint32_t n = 0;
    for (uint16_t a = 0; a < 4; a++)
        n += peer_path(p, a).inflight_bytes;
    return n;
}

static void test_tx_ack_never_sent(void **state)
{
    struct peer *p = *state;
    post_write(p, 1, 10 * PEER_MTU);
    assert_int_equal(peer_drain(p, NULL, 0), 10);
    uint32_t inflight = total_inflight(p);
    assert_true(inflight > 0);
    /* path 0 sent PSN 0..2; path 3 sent PSN 0..1 */
    assert_int_equal(peer_ack_range(p, 0, 0, 3, 0), 0);
    assert_int_equal(peer_ack_range(p, 3, 0, 2, 0), 0);
    assert_int_equal(peer_ack_range(p, 0, 1000, 1000, 0), 0);
    assert_int_equal(peer_ack_range(p, 1, 0x7FFFFFF0u, 0x7FFFFFFFu, 0), 0);
    assert_untouched(p, inflight);
    assert_int_equal(peer_cnt(p).rx_acks, 4);
}

/* R-VAL-1: an ACK whose SACK part names no PSN of ours is dropped whole,
 * dsn_cum included (a dsn_cum alone is no evidence of anything); one
 * whose dsn_cum is after snd_nxt too, whatever its SACK part. */
static void test_tx_ack_cum_beyond(void **state)
{
    struct peer *p = *state;
    post_write(p, 1, 10 * PEER_MTU);
    assert_int_equal(peer_drain(p, NULL, 0), 10);
    uint32_t inflight = total_inflight(p);
    uint32_t never = 3, sent = 2; /* path 0 sent PSN 0..2 */
    assert_int_equal(peer_ack(p, 0, never, 10, &never, 1), 0);
    assert_int_equal(peer_ack(p, 0, never, 4096, &never, 1), 0);
    assert_int_equal(peer_ack(p, 0, sent, 11, NULL, 0), 0); /* no bit 0 */
    assert_int_equal(peer_ack(p, 0, sent, 11, &sent, 1), 0);
    assert_int_equal(peer_ack(p, 0, sent, 0x7FFFFFFFu, &sent, 1), 0);
    assert_untouched(p, inflight);
    assert_int_equal(peer_cnt(p).drop_bad_ack, 5);
    assert_int_equal(peer_ack(p, 0, sent, 10, &sent, 1), 0); /* control */
    assert_one_wc(p->scq, 1, MROCE_WC_SUCCESS);
}

/* Feeds one bogus ACK and checks that drop_bad_ack, and no other drop
 * counter, went up by exactly one. */
static void bogus_ack(struct peer *p, uint16_t path, uint32_t sack_high,
                      uint32_t dsn_cum)
{
    uint64_t bad0 = peer_cnt(p).drop_bad_ack, d0 = peer_drops(p);
    assert_int_equal(peer_ack(p, path, sack_high, dsn_cum, &sack_high, 1), 0);
    assert_int_equal(peer_cnt(p).drop_bad_ack, bad0 + 1);
    assert_int_equal(peer_drops(p), d0 + 1);
}

/* R-ACK-6, R-VAL-1: an ACK whose SACK part names a PSN never sent on its
 * path, or whose dsn_cum is after snd_nxt, is dropped whole and counted
 * once in drop_bad_ack; nothing of it acts. */
static void test_tx_bogus_ack_counted(void **state)
{
    struct peer *p = *state;
    post_write(p, 1, 10 * PEER_MTU);
    assert_int_equal(peer_drain(p, NULL, 0), 10);
    uint32_t inflight = total_inflight(p);
    /* paths 0 and 1 sent PSN 0..2, paths 2 and 3 PSN 0..1; DSNs 0..9 */
    bogus_ack(p, 0, 3, 0);           /* the next PSN, never sent */
    bogus_ack(p, 3, 2, 0);           /* likewise on another path */
    bogus_ack(p, 1, 0x7FFFFFFFu, 0); /* far ahead */
    /* a SACK part that names nothing unresolved, and a bogus dsn_cum */
    bogus_ack(p, 2, 0xFFFFFFFFu, 11);
    bogus_ack(p, 2, 0xFFFFFFFFu, 0x7FFFFFFFu);
    assert_untouched(p, inflight);
    assert_int_equal(peer_cnt(p).rx_acks, 5);
    /* valid ACKs are not counted */
    uint64_t bad0 = peer_cnt(p).drop_bad_ack, d0 = peer_drops(p);
    assert_int_equal(peer_ack_range(p, 0, 0, 2, 0), 0);
    assert_int_equal(peer_cnt(p).drop_bad_ack, bad0);
    assert_int_equal(peer_path(p, 0).acked_pkts, 3);
    /* a bogus SACK part takes its valid dsn_cum down with it */
    bogus_ack(p, 1, 3, 10);
    assert_int_equal(peer_drops(p), d0 + 1);
    assert_true(no_wc(p->scq));
    for (uint16_t a = 1; a < 4; a++)
        assert_int_equal(peer_path(p, a).acked_pkts, 0);
}

/* R-RTT-1, R-VAL-1: an echo_ts that is not the ts the PSN was sent with
 * (one from the future, 2^32 - 1000 ns ahead, or any other) makes the
 * whole ACK no evidence: no sample, nothing resolved or completed; the
 * true echo, 10 us later, gives a 10 us sample. */
static void test_rtt_sample_bounds(void **state)
{
    struct peer *p = *state;
    post_write(p, 1, 100);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    struct mroce_hdr d = p->out[0].h;
    struct mroce_hdr a = peer_hdr(p, MROCE_OP_ACK, d.path, 0);
    a.sack_high = d.psn;
    a.dsn_cum = peer_tdsn(p, 1);
    a.echo_ts = d.ts + 1000; /* sample = 2^32 - 1000 ns */
    a.rx_count = 1;
    mroce_sack_set(a.sack, 0);
    assert_int_equal(peer_feed(p, &a, NULL, 0), 0);
    assert_true(no_wc(p->scq));
    assert_int_equal(peer_cnt(p).drop_bad_ack, 1);
    struct mroce_path_info i = peer_path(p, d.path);
    assert_int_equal(i.srtt_ns, 0);
    assert_int_equal(i.rto_ns, 500 * US);
    peer_advance(p, 10 * US);
    a.echo_ts = d.ts;
    assert_int_equal(peer_feed(p, &a, NULL, 0), 0);
    assert_one_wc(p->scq, 1, MROCE_WC_SUCCESS);
    assert_int_equal(peer_path(p, d.path).srtt_ns, 10 * US);
}

/* ---- silence: RTO, SUSPECT, re-path, PROBING, probes ---- */

/* Runs timers until an RTO has happened (spurious expiries skipped). */
static void fire_until_rto(struct peer *p)
{
    uint64_t rtos = peer_cnt(p).rto_events;
    for (int i = 0; i < 8 && peer_cnt(p).rto_events == rtos; i++)
        assert_true(peer_fire(p));
    assert_true(peer_cnt(p).rto_events > rtos);
}

static int count_retx(const struct peer *p, uint32_t dsn)
{
    int n = 0;
    for (int i = 0; i < p->n_out; i++)
        n += p->out[i].h.opcode == MROCE_OP_WRITE &&
             (p->out[i].h.flags & MROCE_HF_RETX) && p->out[i].h.dsn == dsn;
    return n;
}

/* The data packets (opcodes WRITE..READ_RESP) of the last drain. */
static int count_data(const struct peer *p)
{
    int n = 0;
    for (int i = 0; i < p->n_out; i++)
        n += p->out[i].h.opcode <= MROCE_OP_READ_RESP;
    return n;
}

/* The PROBE of the last drain on `path`, or NULL. */
static const struct peer_out *probe_on(const struct peer *p, uint16_t path)
{
    const struct peer_out *o;
    for (int j = 0; (o = peer_find(p, MROCE_OP_PROBE, j)); j++)
        if (o->h.path == path)
            return o;
    return NULL;
}

/* A PROBE sent because its path went silent (R-PATH-7): RETX and ACKREQ,
 * no payload, the path's next PSN, from its current source port. */
static void assert_silent_probe(const struct peer *p, const struct peer_out *o,
                                uint32_t psn)
{
    assert_non_null(o);
    assert_int_equal(o->h.flags, MROCE_HF_ACKREQ | MROCE_HF_RETX);
    assert_int_equal(o->h.payload_len, 0);
    assert_int_equal(o->h.psn, psn);
    assert_int_equal(o->meta.src_port, peer_path(p, o->h.path).src_port);
}

/* Every path has its own source port, from the dynamic range (R-ENC-3). */
static void assert_ports_distinct(const struct peer *p, uint16_t n_paths)
{
    for (uint16_t a = 0; a < n_paths; a++) {
        assert_true(peer_path(p, a).src_port >= 49152);
        for (uint16_t b = 0; b < a; b++)
            assert_int_not_equal(peer_path(p, a).src_port,
                                 peer_path(p, b).src_port);
    }
}

/* An ACK for (path, psn) at the instant psn was sent: the path is
 * acknowledged but the sample, 0 ns, is none (R-RTT-1, mroce default), so
 * no tail-loss probe can be timed anywhere. The caller must not have
 * moved the clock since the engine sent psn. */
static void ack_no_sample(struct peer *p, uint16_t path, uint32_t psn,
                          uint32_t dsn_cum)
{
    struct mroce_hdr a = peer_hdr(p, MROCE_OP_ACK, path, 0);
    a.sack_high = psn;
    a.dsn_cum = dsn_cum;
    a.echo_ts = peer_sent_ts(p, path, psn);
    a.rx_count = 1;
    mroce_sack_set(a.sack, 0);
    assert_int_equal(peer_feed(p, &a, NULL, 0), 0);
}

/* R-RTT-6, R-PATH-3, R-PATH-6, R-PATH-4, R-PATH-11: an RTO loses every
 * unresolved PSN of the path, fails it, re-paths it (new source port) to
 * PROBING and sends a PROBE there at once. No data goes to a path that is
 * not ACTIVE: with every path PROBING only PROBEs leave, until the ACK of
 * one makes its path ACTIVE; then the lost data goes there. */
static void test_rto_retransmits(void **state)
{
    struct peer *p = *state;
    uint16_t port0[4];
    for (uint16_t a = 0; a < 4; a++)
        port0[a] = peer_path(p, a).src_port;
    post_write(p, 1, 4 * PEER_MTU);
    uint64_t t0 = p->now;
    assert_int_equal(peer_drain(p, NULL, 0), 4); /* DSN a on path a, PSN 0 */
    for (int k = 0; k < 4; k++)
        assert_int_equal(p->out[k].h.path, p->out[k].h.dsn);
    assert_int_equal(peer_path(p, 0).rto_ns, 500 * US); /* 5 x min_rto */
    assert_true(mroce_ctx_next_expiry(p->ctx) <= t0 + 500 * US);
    peer_advance(p, 499 * US);
    mroce_ctx_on_expiry(p->ctx, p->now);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_int_equal(peer_cnt(p).rto_events, 0);
    fire_until_rto(p);
    assert_int_equal(p->now, t0 + 500 * US);
    assert_int_equal(peer_cnt(p).rto_events, 4);
    assert_lost_by(p, 0, 0, 0, 4, 0);
    assert_int_equal(peer_cnt(p).repaths, 4);
    for (uint16_t a = 0; a < 4; a++) {
        struct mroce_path_info i = peer_path(p, a);
        assert_int_equal(i.state, MROCE_PATH_PROBING); /* no threshold */
        assert_int_equal(i.timeouts, 1);
        assert_int_equal(i.repaths, 1);
        assert_int_not_equal(i.src_port, port0[a]);
        assert_int_equal(i.lost_pkts, 1);
        assert_int_equal(i.cwnd_bytes, PEER_MTU); /* R-CC-1: RTO -> 1 MTU */
        assert_int_equal(i.rto_ns, 500 * US);     /* PROBING: no backoff */
    }
    assert_ports_distinct(p, 4);
    /* only PROBEs, one per path on its new port; no data at all */
    assert_int_equal(peer_drain(p, NULL, 0), 4);
    assert_int_equal(count_data(p), 0);
    for (uint16_t a = 0; a < 4; a++)
        assert_silent_probe(p, probe_on(p, a), 1);
    assert_int_equal(peer_cnt(p).retx_pkts, 0);
    /* still nothing but PROBEs while no path is ACTIVE */
    peer_advance(p, 10 * US);
    uint32_t psn2 = probe_on(p, 2)->h.psn;
    for (int r = 0; r < 3; r++) {
        mroce_ctx_on_expiry(p->ctx, p->now);
        assert_int_equal(peer_drain(p, NULL, 0), 0);
        peer_advance(p, 100 * US);
    }
    /* the PROBE of path 2 is answered: path 2 is ACTIVE on its new port,
     * with the initial window, and the four lost DSNs all go there */
    assert_int_equal(peer_ack(p, 2, psn2, 0, &psn2, 1), 0);
    assert_int_equal(peer_path(p, 2).state, MROCE_PATH_ACTIVE);
    assert_int_equal(peer_path(p, 2).cwnd_bytes, PEER_INIT_CWND);
    assert_int_equal(peer_drain(p, NULL, 0), 4);
    bool sent[4] = {false};
    for (int k = 0; k < 4; k++) {
        const struct mroce_hdr *h = &p->out[k].h;
        assert_int_equal(h->opcode, MROCE_OP_WRITE);
        assert_true(h->flags & MROCE_HF_RETX);
        assert_int_equal(h->path, 2);
        assert_int_equal(h->psn, psn2 + 1 + (uint32_t)k);
        assert_true(h->dsn < 4 && !sent[h->dsn]);
        sent[h->dsn] = true;
        assert_memory_equal(h->payload, p->mem + h->dsn * PEER_MTU, PEER_MTU);
    }
    assert_int_equal(peer_cnt(p).retx_pkts, 4);
    for (uint16_t a = 0; a < 4; a++)
        if (a != 2)
            assert_int_equal(peer_path(p, a).state, MROCE_PATH_PROBING);
    /* new data too goes only to the ACTIVE path */
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 1, 2, 0, 2 * PEER_MTU), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 2);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(p->out[k].h.path, 2);
        assert_int_equal(p->out[k].h.dsn, 4 + (uint32_t)k);
    }
    assert_int_equal(peer_ack_range(p, 2, psn2 + 1, psn2 + 6, 6), 0);
    struct mroce_wc wc[4];
    assert_int_equal(peer_poll(p->scq, wc, 4), 2);
    assert_true(wc[0].wr_id == 1 && wc[0].status == MROCE_WC_SUCCESS);
    assert_true(wc[1].wr_id == 2 && wc[1].status == MROCE_WC_SUCCESS);
    assert_int_equal(peer_path(p, 2).inflight_bytes, 0);
}

/* R-LOSS-4, R-PATH-4: with another path still ACTIVE, the data an RTO
 * loses goes out on that path at once, and the timed-out path, now
 * PROBING, carries only its PROBE. */
static void test_rto_retransmits_active(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    sack_cfg(&cfg);
    cfg.attr.n_paths = 2;
    struct peer *p = peer_new(&cfg);
    post_write(p, 1, 2 * PEER_MTU);
    uint64_t t0 = p->now;
    assert_int_equal(peer_drain(p, NULL, 0), 2);
    ack_no_sample(p, 1, 0, 0); /* DSN 1 arrived; path 1 stays ACTIVE */
    assert_int_equal(peer_path(p, 1).acked_pkts, 1);
    assert_int_equal(peer_path(p, 1).srtt_ns, 0);
    fire_until_rto(p);
    assert_int_equal(p->now, t0 + 500 * US);
    assert_int_equal(peer_path(p, 0).state, MROCE_PATH_PROBING);
    assert_int_equal(peer_path(p, 1).state, MROCE_PATH_ACTIVE);
    assert_int_equal(peer_drain(p, NULL, 0), 2);
    assert_silent_probe(p, probe_on(p, 0), 1);
    const struct peer_out *r = peer_find(p, MROCE_OP_WRITE, 0);
    assert_non_null(r);
    assert_int_equal(r->h.dsn, 0);
    assert_int_equal(r->h.path, 1);
    assert_int_equal(r->h.psn, 1);
    assert_true(r->h.flags & MROCE_HF_RETX);
    assert_int_equal(peer_path(p, 0).tx_pkts, 1); /* the data never went back */
    assert_int_equal(peer_ack_range(p, 1, 0, 1, 2), 0);
    assert_one_wc(p->scq, 1, MROCE_WC_SUCCESS);
    peer_free(p);
}

/* R-PATH-3, R-PATH-5, R-PATH-6, R-PATH-8: the first RTO already fails the
 * path and moves it to a fresh source port (PROBING); a PROBING path is
 * timed by its own RTO, without the connection's backoff, so each
 * unanswered PROBE moves it to yet another port one RTO later; the ACK of
 * a PROBE makes it ACTIVE with the initial window. */
static void test_rto_repath_probe(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    sack_cfg(&cfg);
    cfg.attr.n_paths = 2;
    struct peer *p = peer_new(&cfg);
    uint16_t port0 = peer_path(p, 0).src_port;
    post_write(p, 1, 2 * PEER_MTU);
    assert_int_equal(peer_drain(p, NULL, 0), 2);
    uint64_t t0 = p->now;
    fire_until_rto(p);
    uint64_t t1 = p->now;
    assert_int_equal(t1, t0 + 500 * US);
    struct mroce_path_info i = peer_path(p, 0);
    assert_int_equal(i.state, MROCE_PATH_PROBING);
    assert_int_equal(i.timeouts, 1);
    assert_int_equal(i.repaths, 1);
    assert_int_not_equal(i.src_port, port0);
    assert_ports_distinct(p, 2);
    assert_int_equal(peer_cnt(p).repaths, 2);
    assert_int_equal(peer_drain(p, NULL, 0), 2);
    assert_int_equal(count_data(p), 0);
    assert_silent_probe(p, probe_on(p, 0), 1);
    assert_int_equal(probe_on(p, 0)->meta.src_port, i.src_port);
    /* unanswered: the next RTO comes RTO (not 2 RTO) later and re-paths */
    uint16_t port1 = i.src_port;
    fire_until_rto(p);
    assert_int_equal(p->now, t1 + 500 * US);
    i = peer_path(p, 0);
    assert_int_equal(i.state, MROCE_PATH_PROBING);
    assert_int_equal(i.timeouts, 2);
    assert_int_equal(i.repaths, 2);
    assert_int_equal(i.lost_pkts, 1); /* PROBEs are not data */
    assert_int_not_equal(i.src_port, port1);
    assert_ports_distinct(p, 2);
    assert_int_equal(peer_drain(p, NULL, 0), 2);
    const struct peer_out *pr = probe_on(p, 0);
    assert_silent_probe(p, pr, 2);
    assert_int_equal(pr->meta.src_port, i.src_port);
    assert_int_equal(count_data(p), 0);
    /* its ACK: ACTIVE with the initial window; path 1 still probing */
    peer_advance(p, 10 * US);
    uint32_t psn = pr->h.psn;
    assert_int_equal(peer_ack(p, 0, psn, 0, &psn, 1), 0);
    i = peer_path(p, 0);
    assert_int_equal(i.state, MROCE_PATH_ACTIVE);
    assert_int_equal(i.cwnd_bytes,
                     128 / 2 * (MROCE_MAX_HDR_LEN + PEER_MTU + MROCE_ICRC_LEN));
    assert_int_equal(i.srtt_ns, 10 * US);
    assert_int_equal(i.src_port, probe_on(p, 0)->meta.src_port);
    assert_int_equal(peer_path(p, 1).state, MROCE_PATH_PROBING);
    /* the two lost DSNs now go on path 0 */
    assert_int_equal(peer_drain(p, NULL, 0), 2);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(p->out[k].h.opcode, MROCE_OP_WRITE);
        assert_int_equal(p->out[k].h.path, 0);
        assert_int_equal(p->out[k].h.psn, 3 + (uint32_t)k);
    }
    peer_free(p);
}

static int conn_down(struct peer *p)
{
    return mroce_conn_state(p->conn) != MROCE_CONN_CONNECTED;
}

/* One run of test_retry_limit: 3 one-packet WRITEs on 4 paths and a
 * receive, then silence. */
static void retry_limit_case(uint8_t retry_cnt)
{
    struct peer_cfg cfg;
    sack_cfg(&cfg);
    cfg.attr.retry_cnt = retry_cnt;
    struct peer *p = peer_new(&cfg);
    uint64_t rto = peer_path(p, 0).rto_ns;
    assert_int_equal(rto, 500 * US);
    for (uint64_t w = 1; w <= 3; w++)
        assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, w, 0, 100), 0);
    peer_post_recv(p, 0, 9, 0, 64);
    uint64_t t0 = p->now;
    assert_int_equal(peer_drain(p, NULL, 0), 3); /* paths 0..2; 3 idle */
    int data = 0, probes = 0, rounds = 0;
    for (; rounds < 100000 && !conn_down(p); rounds++) {
        assert_true(peer_fire(p));
        peer_drain(p, NULL, 0);
        probes += peer_count(p, MROCE_OP_PROBE);
        for (int i = 0; i < p->n_out; i++) {
            if (p->out[i].h.opcode > MROCE_OP_READ_RESP)
                continue;
            /* only path 3, never timed out, was ACTIVE after t0 */
            assert_int_equal(p->out[i].h.path, 3);
            assert_int_equal(p->now, t0 + rto);
            data++;
        }
    }
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_ERROR);
    assert_int_equal(data, 3); /* the lost DSNs, once, on the ACTIVE path */
    assert_true(probes > 0);
    /* R-RETRY-1: rounds of RTO x 2^b for b = 1..retry_cnt after the first
     * RTO, each starting at the first (probing) RTO at or after the end of
     * the previous one: ERROR at the start of round retry_cnt + 1. */
    unsigned rc = retry_cnt ? retry_cnt : 7;
    uint64_t lo = rto * ((2ull << rc) - 1);
    uint64_t took = p->now - t0;
    if (took < lo || took > lo + rto)
        fail_msg("retry_cnt %u: ERROR after %llu ns, expected %llu..%llu", rc,
                 (unsigned long long)took, (unsigned long long)lo,
                 (unsigned long long)(lo + rto));
    /* the oldest unacknowledged DSN's WR fails, everything else flushes */
    struct mroce_wc wc[8];
    assert_int_equal(peer_poll(p->scq, wc, 8), 3);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(wc[k].wr_id, (uint64_t)k + 1);
        assert_int_equal(wc[k].opcode, MROCE_WC_RDMA_WRITE);
        assert_int_equal(wc[k].status, k == 0 ? MROCE_WC_RETRY_EXC_ERR
                                              : MROCE_WC_WR_FLUSH_ERR);
    }
    assert_one_wc(p->rcq, 9, MROCE_WC_WR_FLUSH_ERR);
    for (int i = 0; i < 10 && peer_fire(p); i++)
        assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_true(mroce_ctx_next_expiry(p->ctx) == UINT64_MAX);
    assert_true(no_wc(p->scq) && no_wc(p->rcq));
    peer_free(p);
}

/* R-RETRY-1: progress (an ACK resolving a PSN, here a PROBE's) resets the
 * count: after it the connection again needs retry_cnt + 1 rounds. */
static void retry_limit_progress(void)
{
    struct peer_cfg cfg;
    sack_cfg(&cfg);
    cfg.attr.retry_cnt = 3;
    struct peer *p = peer_new(&cfg);
    uint64_t rto = peer_path(p, 0).rto_ns;
    for (uint64_t w = 1; w <= 3; w++)
        assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, w, 0, 100), 0);
    uint64_t t0 = p->now;
    assert_int_equal(peer_drain(p, NULL, 0), 3);
    /* rounds start at t0 + R, + 3R, + 7R; at t0 + 5R (in the second round)
     * path 0's fresh PROBE is answered, without an RTT sample, so that
     * every path keeps RTO R */
    while (p->now < t0 + 5 * rto) {
        assert_true(peer_fire(p));
        peer_drain(p, NULL, 0);
        assert_false(conn_down(p));
    }
    assert_int_equal(p->now, t0 + 5 * rto);
    const struct peer_out *pr = probe_on(p, 0);
    assert_non_null(pr);
    ack_no_sample(p, 0, pr->h.psn, 0);
    assert_int_equal(peer_path(p, 0).state, MROCE_PATH_ACTIVE);
    uint64_t t1 = p->now;
    for (int i = 0; i < 100000 && !conn_down(p); i++) {
        assert_true(peer_fire(p));
        peer_drain(p, NULL, 0);
    }
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_ERROR);
    /* without the reset it would end at t0 + 15R; with it, no earlier
     * than R x (2^4 - 1) after the ACK */
    uint64_t took = p->now - t1;
    if (took < 15 * rto || took > 30 * rto)
        fail_msg("ERROR %llu ns after progress, expected %llu..%llu",
                 (unsigned long long)took, (unsigned long long)(15 * rto),
                 (unsigned long long)(30 * rto));
    struct mroce_wc wc[8];
    assert_int_equal(peer_poll(p->scq, wc, 8), 3);
    assert_int_equal(wc[0].status, MROCE_WC_RETRY_EXC_ERR);
    peer_free(p);
}

/* R-RETRY-1, R-RETRY-5: a silent peer ends the connection after
 * retry_cnt + 1 timeout rounds without progress, at a time fixed by the
 * RTO and the doubling backoff (127.5 ms with the defaults); meanwhile
 * only PROBEs go to the paths that timed out. */
static void test_retry_limit(void **state)
{
    (void)state;
    retry_limit_case(0); /* 0 selects the default, 7 */
    retry_limit_case(3);
    retry_limit_progress();
}

/* Loses the copy of DSN 0 last sent (on path *q, PSN *s): new WRITEs until
 * one lands on that path after it, then an ACK for only that one (R-LOSS-1);
 * the engine's answer is in p->out. */
static void lose_dsn0_copy(struct peer *p, uint16_t q, uint32_t s)
{
    for (int k = 0; k < 8; k++) {
        assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 100 + k, 0, 100), 0);
        int n = peer_drain(p, NULL, 0);
        for (int i = 0; i < n; i++) {
            const struct mroce_hdr *h = &p->out[i].h;
            if (h->path == q && h->psn != s && h->dsn != 0) {
                uint32_t psn = h->psn;
                assert_int_equal(peer_ack(p, q, psn, 0, &psn, 1), 0);
                peer_drain(p, NULL, 0);
                return;
            }
        }
    }
    fail_msg("no WRITE landed on path %u", q);
}

/* R-LOSS-7: a DSN lost twice is sent twice the third time, on two
 * different paths; once otherwise. */
static void test_third_copy_twice(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    sack_cfg(&cfg);
    cfg.attr.n_paths = 2;
    cfg.remote.n_paths = 2;
    cfg.attr.sq_depth = 64;
    struct peer *p = peer_new(&cfg);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, 100), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    uint16_t q = p->out[0].h.path;
    uint32_t s = p->out[0].h.psn;
    lose_dsn0_copy(p, q, s);
    assert_int_equal(count_retx(p, 0), 1); /* second transmission: once */
    for (int i = 0; i < p->n_out; i++)
        if (p->out[i].h.dsn == 0) {
            q = p->out[i].h.path;
            s = p->out[i].h.psn;
        }
    lose_dsn0_copy(p, q, s);
    assert_int_equal(count_retx(p, 0), 2); /* third: twice */
    int first = -1;
    for (int i = 0; i < p->n_out; i++)
        if (p->out[i].h.dsn == 0 && first < 0)
            first = p->out[i].h.path;
        else if (p->out[i].h.dsn == 0)
            assert_int_not_equal(p->out[i].h.path, first);
    peer_free(p);
}

/* R-RETRY-1: no DSN is transmitted more than 64 times, whatever finds it
 * lost: here the SACK rule, each time a later PSN of the path arrives
 * without it (no RTO, so no timeout round). The 64th loss ends the
 * connection with RETRY_EXC_ERR for the DSN's WR. */
static void test_tx_cap_64(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    sack_cfg(&cfg);
    cfg.attr.n_paths = 1;
    cfg.attr.sq_depth = 128;
    cfg.attr.dsn_window = 256;
    struct peer *p = peer_new(&cfg);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, 100), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1); /* DSN 0, PSN 0 */
    int tx = 1;
    for (uint64_t k = 1; k < 100 && !conn_down(p); k++) {
        /* one more WRITE; its ACK shows the previous PSN (DSN 0) lost */
        assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1 + k, 0, 100), 0);
        assert_int_equal(peer_drain(p, NULL, 0), 1);
        assert_int_equal(p->out[0].h.dsn, (uint32_t)k);
        uint32_t psn = p->out[0].h.psn;
        assert_int_equal(peer_ack(p, 0, psn, 0, &psn, 1), 0);
        int n = peer_drain(p, NULL, 0);
        if (conn_down(p))
            break;
        assert_int_equal(n, 1);
        assert_int_equal(count_retx(p, 0), 1);
        tx++;
    }
    assert_int_equal(tx, 64);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_ERROR);
    assert_int_equal(peer_cnt(p).rto_events, 0);
    struct mroce_wc wc[128];
    int n = peer_poll(p->scq, wc, 128);
    assert_int_equal(n, 1 + 64); /* WR 1 and the 64 WRITEs posted after */
    for (int k = 0; k < n; k++) {
        assert_int_equal(wc[k].wr_id, (uint64_t)k + 1);
        assert_int_equal(wc[k].status, k == 0 ? MROCE_WC_RETRY_EXC_ERR
                                              : MROCE_WC_WR_FLUSH_ERR);
    }
    peer_free(p);
}

/* ---- NACKs ---- */

/* Posts a 100-byte SEND; returns its first transmission. */
static struct mroce_hdr send_one(struct peer *p)
{
    peer_post_recv(p, 0, 8, 0, 16); /* unrelated, must not matter */
    assert_int_equal(peer_post(p, MROCE_OP_SEND, 0, 1, 0, 100), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    return p->out[0].h;
}

/* RNR: the packet waits `info` us, then goes again with the same DSN and
 * a new (path, PSN); rnr_retry 7 means forever (R-RETRY-4): refused
 * transmissions do not count toward the 64 of R-RETRY-1. */
static void test_rnr_retries(void **state)
{
    struct peer *p = *state;
    struct mroce_hdr h = send_one(p);
    for (int round = 0; round < 70; round++) {
        assert_int_equal(peer_nak(p, &h, MROCE_NAK_RNR, 50), 0);
        uint64_t t = p->now;
        assert_int_equal(peer_drain(p, NULL, 0), 0);
        peer_advance(p, 49 * US);
        mroce_ctx_on_expiry(p->ctx, p->now);
        assert_int_equal(peer_drain(p, NULL, 0), 0);
        assert_int_equal(peer_fire_tx(p, 8), 1);
        assert_int_equal(p->now, t + 50 * US);
        const struct mroce_hdr *r = &p->out[0].h;
        assert_int_equal(r->opcode, MROCE_OP_SEND);
        assert_int_equal(r->dsn, h.dsn);
        assert_true(r->flags & MROCE_HF_RETX);
        assert_true(r->path != h.path || r->psn != h.psn);
        h = *r;
        assert_true(no_wc(p->scq));
        assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CONNECTED);
    }
    assert_int_equal(peer_cnt(p).rx_nacks, 70);
    assert_lost_by(p, 0, 0, 0, 0, 70);
    assert_int_equal(peer_ack(p, h.path, h.psn, 1, &h.psn, 1), 0);
    assert_one_wc(p->scq, 1, MROCE_WC_SUCCESS);
}

/* RNR NACKs must not look like timeouts: no RTO, no SUSPECT path. */
static void test_rnr_no_spurious_rto(void **state)
{
    struct peer *p = *state;
    struct mroce_hdr h = send_one(p);
    for (int round = 0; round < 20; round++) {
        assert_int_equal(peer_nak(p, &h, MROCE_NAK_RNR, 50), 0);
        assert_int_equal(peer_fire_tx(p, 8), 1);
        h = p->out[0].h;
    }
    assert_int_equal(peer_cnt(p).rto_events, 0);
    for (uint16_t a = 0; a < 4; a++) {
        assert_int_equal(peer_path(p, a).state, MROCE_PATH_ACTIVE);
        assert_int_equal(peer_path(p, a).timeouts, 0);
    }
}

/* The four packets of a 4-packet message, one per path, then 10 us. */
static void drain_one_per_path(struct peer *p, struct mroce_hdr h[4])
{
    assert_int_equal(peer_drain(p, NULL, 0), 4);
    for (int k = 0; k < 4; k++)
        h[k] = p->out[k].h;
    peer_advance(p, 10 * US);
}

/* R-PATH-13: new data skips a path whose SRTT is more than twice the
 * connection's smallest sample (queued behind a slow link) while a fast
 * path has room. */
static void test_slow_path_skipped(void **state)
{
    struct peer *p = *state;
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, 4 * PEER_MTU), 0);
    struct mroce_hdr h[4];
    drain_one_per_path(p, h);
    for (int k = 0; k < 4; k++)
        if (h[k].path != 0)
            assert_int_equal(peer_ack(p, h[k].path, h[k].psn, 0, &h[k].psn, 1),
                             0);
    peer_advance(p, 90 * US);
    for (int k = 0; k < 4; k++)
        if (h[k].path == 0)
            assert_int_equal(peer_ack(p, 0, h[k].psn, 4, &h[k].psn, 1), 0);
    assert_true(peer_path(p, 0).srtt_ns > 2 * peer_path(p, 1).srtt_ns);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 2, 0, 6 * PEER_MTU), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 6);
    for (int k = 0; k < 6; k++)
        assert_int_not_equal(p->out[k].h.path, 0);
}

/* A tail-loss PROBE that falls due while its path's window is full waits
 * for room instead of being dropped: when every PSN of the path then
 * resolves without an ACK (RNR NACKs), the PROBE still goes and the
 * SUSPECT path is tested again. Dropping it left a one-path connection
 * SUSPECT, idle and silent forever (chaos seed 61955). */
static void test_probe_waits_for_room(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    sack_cfg(&cfg);
    cfg.attr.n_paths = 1;
    cfg.attr.path_window = 4;
    struct peer *p = peer_new(&cfg);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, 100), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    struct mroce_hdr w = p->out[0].h;
    peer_advance(p, 10 * US);
    assert_int_equal(peer_ack(p, 0, w.psn, w.dsn + 1, &w.psn, 1), 0);
    assert_int_equal(peer_post(p, MROCE_OP_SEND, 0, 2, 0, 4 * PEER_MTU), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 4); /* the path window */
    struct mroce_hdr sent[4];
    for (int k = 0; k < 4; k++)
        sent[k] = p->out[k].h;
    peer_advance(p, 30 * US); /* past the PTO, before the RTO */
    mroce_ctx_on_expiry(p->ctx, p->now);
    assert_int_equal(peer_path(p, 0).state, MROCE_PATH_SUSPECT);
    assert_int_equal(peer_drain(p, NULL, 0), 0); /* no room for the PROBE */
    for (int k = 0; k < 4; k++)
        assert_int_equal(peer_nak(p, &sent[k], MROCE_NAK_RNR, 50), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_silent_probe(p, probe_on(p, 0), sent[3].psn + 1);
    peer_free(p);
}

static void test_rnr_retry_exceeded(void **state)
{
    (void)state;
    struct peer *p = peer_with(0, 2);
    struct mroce_hdr h = send_one(p);
    for (int round = 0; round < 2; round++) {
        assert_int_equal(peer_nak(p, &h, MROCE_NAK_RNR, 10), 0);
        assert_int_equal(peer_fire_tx(p, 8), 1);
        h = p->out[0].h;
        assert_true(no_wc(p->scq));
    }
    assert_int_equal(peer_nak(p, &h, MROCE_NAK_RNR, 10), 0);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_ERROR);
    assert_one_wc(p->scq, 1, MROCE_WC_RNR_RETRY_EXC_ERR);
    assert_one_wc(p->rcq, 8, MROCE_WC_WR_FLUSH_ERR);
    peer_free(p);
}

static void fatal_nak_case(uint8_t code, uint8_t status)
{
    struct peer *p = sack_peer();
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, 100), 0);
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 2, 0, 100), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 2);
    struct mroce_hdr h = p->out[0].h;
    assert_int_equal(peer_nak(p, &h, code, 0), 0);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_ERROR);
    struct mroce_wc wc[4];
    assert_int_equal(peer_poll(p->scq, wc, 4), 2);
    assert_int_equal(wc[0].wr_id, 1);
    assert_int_equal(wc[0].status, status);
    assert_int_equal(wc[1].wr_id, 2);
    assert_int_equal(wc[1].status, MROCE_WC_WR_FLUSH_ERR);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    peer_free(p);
}

static void test_fatal_nacks(void **state)
{
    (void)state;
    fatal_nak_case(MROCE_NAK_REMOTE_ACCESS, MROCE_WC_REM_ACCESS_ERR);
    fatal_nak_case(MROCE_NAK_INVALID_REQUEST, MROCE_WC_REM_INV_REQ_ERR);
    fatal_nak_case(MROCE_NAK_REMOTE_OP, MROCE_WC_REM_OP_ERR);
    fatal_nak_case(MROCE_NAK_CONN_CLOSED, MROCE_WC_REM_OP_ERR);
}

static void test_stale_nack(void **state)
{
    struct peer *p = *state;
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, 100), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    struct mroce_hdr h = p->out[0].h;
    peer_ack_all(p);
    assert_one_wc(p->scq, 1, MROCE_WC_SUCCESS);
    assert_int_equal(peer_nak(p, &h, MROCE_NAK_REMOTE_ACCESS, 0), 0);
    h.dsn = 77; /* never sent */
    assert_int_equal(peer_nak(p, &h, MROCE_NAK_RNR, 0), 0);
    assert_int_equal(peer_cnt(p).drop_stale, 2);
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CONNECTED);
    assert_true(no_wc(p->scq));
}

/* R-NACK-4: a NACK whose stream and MSN differ from those of the message
 * owning its DSN matches nothing: ignored, counted `stale`. R-NACK-2: so
 * is a NACK with a reserved syndrome. */
static void test_nack_mismatch_is_stale(void **state)
{
    (void)state;
    for (int k = 0; k < 3; k++) {
        struct peer *p = sack_peer();
        assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, 100), 0);
        assert_int_equal(peer_drain(p, NULL, 0), 1);
        struct mroce_hdr h = p->out[0].h;
        uint8_t code = MROCE_NAK_REMOTE_ACCESS;
        if (k == 0)
            h.msn = 5;
        else if (k == 1)
            h.stream = 1;
        else
            code = 0x07;
        assert_int_equal(peer_nak(p, &h, code, 0), 0);
        assert_int_equal(peer_cnt(p).drop_stale, 1);
        assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CONNECTED);
        assert_true(no_wc(p->scq));
        peer_free(p);
    }
}

/* WR 1 of 4 packets, one per path, acknowledged 10 us later: an RTT
 * sample of 10 us on every path. */
static void rtt_10us_everywhere(struct peer *p)
{
    post_write(p, 1, 4 * PEER_MTU);
    assert_int_equal(peer_drain(p, NULL, 0), 4);
    peer_advance(p, 10 * US);
    peer_ack_all(p);
    assert_one_wc(p->scq, 1, MROCE_WC_SUCCESS);
}

/* R-LOSS-5: a DSN resolved lost is not sent again while another
 * transmission of it (here the tail-loss probe's copy) is unresolved:
 * the SACK loss of the original on the silent path re-queues nothing. */
static void test_tlp_no_double_retx(void **state)
{
    struct peer *p = *state;
    rtt_10us_everywhere(p);
    post_write(p, 2, 100);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    struct mroce_hdr lost = p->out[0].h;
    assert_true(peer_fire_tx(p, 8) > 0);
    assert_int_equal(count_retx(p, lost.dsn), 1);
    const struct peer_out *pr = peer_find(p, MROCE_OP_PROBE, 0);
    assert_non_null(pr);
    assert_int_equal(peer_ack(p, lost.path, pr->h.psn, lost.dsn, &pr->h.psn, 1),
                     0);
    assert_int_equal(peer_path(p, lost.path).lost_pkts, 1);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_int_equal(peer_cnt(p).retx_pkts, 1);
}

/* R-LOSS-8's set-up: WRITE wr (x) goes out on one path, WRITE wr + 1 (y)
 * 1 us later on another, and 10 us later an ACK shows y delivered (not x:
 * dsn_cum stays at x). Returns when x was sent. */
static uint64_t x_then_y_acked(struct peer *p, uint64_t wr, struct mroce_hdr *x)
{
    post_write(p, wr, 100);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    *x = p->out[0].h;
    uint64_t t = p->now;
    peer_advance(p, 1 * US);
    post_write(p, wr + 1, 100);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    struct mroce_hdr y = p->out[0].h;
    assert_int_not_equal(x->path, y.path);
    peer_advance(p, 10 * US);
    assert_int_equal(peer_ack(p, y.path, y.psn, x->dsn, &y.psn, 1), 0);
    return t;
}

/* R-LOSS-8: x goes out on one path, y 1 us later on another; when y's
 * ACK shows it delivered, x is late a reorder window (max RTT / 4 + 1 us)
 * after its send plus the RTT: probed then, 13.5 us after its send,
 * not at the PTO (2 x SRTT + ack_delay = 22 us). */
static void test_rack_across_paths(void **state)
{
    struct peer *p = *state;
    rtt_10us_everywhere(p);
    struct mroce_hdr x;
    uint64_t t = x_then_y_acked(p, 2, &x);
    assert_true(peer_fire_tx(p, 8) > 0);
    assert_int_equal(p->now, t + 10 * US + 10 * US / 4 + 1 * US);
    assert_int_equal(peer_cnt(p).tlp_pkts, 1);
    assert_lost_by(p, 0, 1, 0, 0, 0);
    assert_int_equal(count_retx(p, x.dsn), 1);
    const struct peer_out *pr = peer_find(p, MROCE_OP_PROBE, 0);
    assert_non_null(pr);
    assert_int_equal(pr->h.path, x.path);
}

/* R-ACK-100: an ACK of one path whose dsn_cum covers DSNs sent on other
 * paths resolves those transmissions as delivered (their paths' bytes
 * leave the window), without an RTT sample for them. */
static void test_tx_cum_resolves(void **state)
{
    struct peer *p = *state;
    post_write(p, 1, 4 * PEER_MTU);
    assert_int_equal(peer_drain(p, NULL, 0), 4); /* paths 0..3, DSN 0..3 */
    peer_advance(p, 10 * US);
    uint32_t psn = p->out[3].h.psn;
    assert_int_equal(peer_ack(p, p->out[3].h.path, psn, 4, &psn, 1), 0);
    assert_one_wc(p->scq, 1, MROCE_WC_SUCCESS);
    assert_int_equal(total_inflight(p), 0);
    for (uint16_t a = 0; a < 4; a++) {
        assert_int_equal(peer_path(p, a).acked_pkts, 1);
        assert_int_equal(peer_path(p, a).srtt_ns, a == 3 ? 10 * US : 0);
    }
}

/* R-ACK-100, R-PATH-13: a path whose only packet dsn_cum resolved is idle
 * again. Of four paths with a packet each, path 1's ACK resolves its own
 * (an RTT sample) and, by dsn_cum, path 0's: the next new packet goes to
 * path 1 (idle with a sample), the one after it to path 0 (idle), not on
 * round-robin to busy path 2. */
static void test_tx_cum_path_idle(void **state)
{
    struct peer *p = *state;
    post_write(p, 1, 4 * PEER_MTU);
    assert_int_equal(peer_drain(p, NULL, 0), 4);
    for (uint16_t k = 0; k < 4; k++)
        assert_int_equal(p->out[k].h.path, k); /* DSN k on path k */
    peer_advance(p, 10 * US);
    uint32_t psn = p->out[1].h.psn;
    assert_int_equal(peer_ack(p, 1, psn, 2, &psn, 1), 0);
    assert_int_equal(peer_path(p, 0).acked_pkts, 1);
    assert_int_equal(peer_path(p, 0).srtt_ns, 0);
    post_write(p, 2, 2 * PEER_MTU);
    assert_int_equal(peer_drain(p, NULL, 0), 2);
    assert_int_equal(p->out[0].h.path, 1);
    assert_int_equal(p->out[1].h.path, 0);
}

/* R-LOSS-8: a packet of the plane took 40 us (a queue on its route), so
 * x, sent before y, is not late 10 us + R after y's delivery but only
 * once the plane's recent highest RTT has passed: cross-path reordering
 * within what the plane's queues have shown is no loss. */
static void test_rack_waits_recent_highest(void **state)
{
    struct peer *p = *state;
    rtt_10us_everywhere(p);
    post_write(p, 2, 100);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    struct mroce_hdr w = p->out[0].h;
    peer_advance(p, 40 * US); /* timers not run: w is answered first */
    assert_int_equal(peer_ack(p, w.path, w.psn, w.dsn + 1, &w.psn, 1), 0);
    assert_one_wc(p->scq, 2, MROCE_WC_SUCCESS);
    struct mroce_hdr x;
    uint64_t t = x_then_y_acked(p, 3, &x);
    assert_true(peer_fire_tx(p, 8) > 0);
    /* 13.5 us with y's RTT alone; h after y's sample is 40 - 30/64 us */
    assert_true(p->now >= t + 39 * US);
    assert_int_equal(peer_cnt(p).tlp_pkts, 1);
    assert_int_equal(count_retx(p, x.dsn), 1);
}

/* Every path's SRTT is 10 us (as PROBEs, served ahead of data, keep it),
 * then the connection's data packet w takes `rtt_w` (a receiver's queue,
 * as in a 63-to-1 incast), then x goes out alone on an idle path. */
static struct mroce_hdr send_behind_queue(struct peer *p, uint64_t rtt_w)
{
    rtt_10us_everywhere(p);
    post_write(p, 2, 100);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    struct mroce_hdr w = p->out[0].h;
    peer_advance(p, rtt_w); /* timers not run: w is answered first */
    assert_int_equal(peer_ack(p, w.path, w.psn, w.dsn + 1, &w.psn, 1), 0);
    assert_one_wc(p->scq, 2, MROCE_WC_SUCCESS);
    post_write(p, 3, 100);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    struct mroce_hdr x = p->out[0].h;
    assert_int_not_equal(x.path, w.path);
    assert_int_equal(peer_path(p, x.path).srtt_ns, 10 * US);
    assert_int_equal(peer_path(p, x.path).rto_ns, 100 * US);
    return x;
}

/* Runs the timers due before `until`: nothing is sent, nothing declared
 * lost. */
static void quiet_until(struct peer *p, uint64_t until)
{
    while (mroce_ctx_next_expiry(p->ctx) < until) {
        assert_true(peer_fire(p));
        assert_int_equal(peer_drain(p, NULL, 0), 0);
        assert_lost_by(p, 0, 0, 0, 0, 0);
    }
    assert_int_equal(peer_cnt(p).tlp_pkts, 0);
}

/* R-RTT-7: a packet sent while the connection's data waits 90 us in a
 * queue waits there too: it is not probed at 2 x SRTT + ack_delay
 * = 22 us but once that latest data RTT has passed without an ACK. */
static void test_no_tlp_behind_queue(void **state)
{
    struct peer *p = *state;
    struct mroce_hdr x = send_behind_queue(p, 90 * US);
    uint64_t t = p->now;
    quiet_until(p, t + 90 * US);
    assert_true(peer_fire_tx(p, 8) > 0);
    assert_int_equal(p->now, t + 90 * US);
    assert_int_equal(peer_cnt(p).tlp_pkts, 1);
    assert_int_equal(count_retx(p, x.dsn), 1);
    assert_lost_by(p, 0, 0, 1, 0, 0);
}

/* R-RTT-5: behind a 200 us queue the probe is due after the 100 us RTO;
 * the RTO waits for it and comes one RTO after it, if nothing answers. */
static void test_no_rto_before_tlp(void **state)
{
    struct peer *p = *state;
    struct mroce_hdr x = send_behind_queue(p, 200 * US);
    uint64_t t = p->now;
    quiet_until(p, t + 200 * US);
    assert_int_equal(peer_cnt(p).rto_events, 0);
    assert_true(peer_fire_tx(p, 8) > 0);
    assert_int_equal(p->now, t + 200 * US);
    assert_int_equal(peer_cnt(p).tlp_pkts, 1);
    assert_lost_by(p, 0, 0, 1, 0, 0);
    for (int i = 0; i < 8 && !peer_path(p, x.path).timeouts; i++)
        assert_true(peer_fire(p));
    assert_int_equal(peer_path(p, x.path).timeouts, 1);
    assert_int_equal(p->now, t + 300 * US);
}

/* R-RTT-7: a path with only a PROBE out (here the ACK-route check's,
 * R-ACK-8) gets no tail-loss probe: the PROBE's own RTO times it. A
 * probe on every probe's ACK once made a connection probe its paths over
 * and over. */
static void test_no_tlp_for_probe_alone(void **state)
{
    struct peer *p = *state;
    rtt_10us_everywhere(p);
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_PROBE, 0, 0);
    h.flags = MROCE_HF_RETX | MROCE_HF_ACKREQ;
    assert_int_equal(peer_feed(p, &h, NULL, 0), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 2); /* the ACK and our PROBE */
    assert_int_equal(peer_count(p, MROCE_OP_PROBE), 1);
    uint64_t t = p->now;
    while (peer_fire(p) && p->now < t + 60 * US)
        assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_int_equal(peer_cnt(p).tlp_pkts, 0);
}

/* R-RTT-7: a silent peer (a stalled process) gets each DSN again from
 * tail-loss probes at most ENG_TLP_GENS times until an ACK shows it alive,
 * however many paths there are: each copy's own probe used to send the
 * next, 60 copies of one DSN in 0.9 ms of silence on loopback, reaching
 * the 64-transmission cap of R-RETRY-1 and ending a live connection. */
static void test_tlp_copies_silent_peer(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    sack_cfg(&cfg);
    cfg.attr.n_paths = 32;
    cfg.attr.min_rto_ns = 10000 * US; /* only probes in the window */
    struct peer *p = peer_new(&cfg);
    rtt_10us_everywhere(p);
    post_write(p, 2, 100);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    uint32_t dsn = p->out[0].h.dsn;
    int copies = 0;
    uint64_t t = p->now;
    while (peer_fire(p) && p->now < t + 900 * US) {
        peer_drain(p, NULL, 0);
        copies += count_retx(p, dsn);
    }
    assert_true(peer_cnt(p).tlp_pkts > 3);
    assert_in_range(copies, 3, 3 * 2); /* ENG_TLP_GENS, up to 2 copies each */
    assert_int_equal(mroce_conn_state(p->conn), MROCE_CONN_CONNECTED);
}

/* R-LOSS-7: with nothing new to send (the connection's tail), a DSN found
 * lost goes out twice, on two paths; tail_copies 1 sends it once. */
static void tail_copies_case(uint8_t copies)
{
    struct peer_cfg cfg;
    sack_cfg(&cfg);
    cfg.attr.tail_copies = copies;
    struct peer *p = peer_new(&cfg);
    uint32_t next[4] = {0}, dsn[4][4] = {{0}};
    spray10(p, next, dsn);
    assert_int_equal(peer_ack_range(p, 0, 1, next[0] - 1, 0), 0);
    int n = peer_drain(p, NULL, 0);
    assert_int_equal(n, copies ? copies : 2);
    assert_int_equal(count_retx(p, dsn[0][0]), n);
    if (n == 2)
        assert_int_not_equal(p->out[0].h.path, p->out[1].h.path);
    peer_free(p);
}

static void test_tail_copies(void **state)
{
    (void)state;
    tail_copies_case(0); /* the default */
    tail_copies_case(2);
    tail_copies_case(1);
}

/* R-RTT-7: with an RTT sample, a silent path's newest
 * packet is resent on another path after PTO, and a PROBE goes on the
 * silent path; its ACK showing the hole resolves the lost PSN. */
static void test_tail_loss_probe(void **state)
{
    struct peer *p = *state;
    rtt_10us_everywhere(p);
    for (uint16_t a = 0; a < 4; a++)
        assert_int_equal(peer_path(p, a).srtt_ns, 10 * US);
    post_write(p, 2, 100);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    struct mroce_hdr lost = p->out[0].h;
    uint64_t t = p->now;
    assert_true(peer_fire_tx(p, 8) > 0);
    /* PTO = max(10 us, 2 * srtt + ack_delay) on that path */
    assert_int_equal(p->now, t + 2 * 10 * US + 2 * US);
    assert_int_equal(peer_cnt(p).tlp_pkts, 1);
    assert_lost_by(p, 0, 0, 1, 0, 0);
    assert_int_equal(count_retx(p, lost.dsn), 1);
    const struct peer_out *pr = peer_find(p, MROCE_OP_PROBE, 0);
    assert_non_null(pr);
    assert_int_equal(pr->h.path, lost.path);
    assert_int_equal(pr->h.psn, lost.psn + 1);
    assert_int_equal(
        peer_ack(p, lost.path, pr->h.psn, lost.dsn + 1, &pr->h.psn, 1), 0);
    assert_int_equal(peer_path(p, lost.path).lost_pkts, 1);
    assert_lost_by(p, 0, 0, 1, 0, 0); /* the PROBE's SACK: counted once */
    assert_one_wc(p->scq, 2, MROCE_WC_SUCCESS); /* dsn_cum covered it */
}

/* R-PATH-13: data goes to an idle path that has delivered before rather
 * than to the next path in round-robin order that still has a packet
 * out (here paths 0 and 3 wait, paths 1 and 2 are answered). */
static void test_idle_path_first(void **state)
{
    struct peer *p = *state;
    post_write(p, 1, 4 * PEER_MTU);
    struct mroce_hdr h[4];
    drain_one_per_path(p, h);
    for (int k = 0; k < 4; k++)
        if (h[k].path == 1 || h[k].path == 2)
            assert_int_equal(peer_ack(p, h[k].path, h[k].psn, 0, &h[k].psn, 1),
                             0);
    post_write(p, 2, 2 * PEER_MTU);
    assert_int_equal(peer_drain(p, NULL, 0), 2);
    assert_true(p->out[0].h.path == 1 || p->out[0].h.path == 2);
    assert_true(p->out[1].h.path == 1 || p->out[1].h.path == 2);
    assert_int_not_equal(p->out[0].h.path, p->out[1].h.path);
}

/* R-PATH-16: a PROBE that arrives while the data sent before it on its
 * path does not (here the tail-loss probe's) moves the path to a new
 * source port; a PROBE that arrives after its data leaves the port. */
static void overtaken_case(struct peer *p, bool data_arrives)
{
    post_write(p, 1, 4 * PEER_MTU); /* an RTT sample on every path */
    assert_int_equal(peer_drain(p, NULL, 0), 4);
    peer_advance(p, 10 * US);
    peer_ack_all(p);
    assert_one_wc(p->scq, 1, MROCE_WC_SUCCESS);
    post_write(p, 2, 100);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    struct mroce_hdr x = p->out[0].h;
    uint16_t port = peer_path(p, x.path).src_port;
    assert_true(peer_fire_tx(p, 8) > 0); /* PTO: resend elsewhere, PROBE */
    const struct peer_out *pr = peer_find(p, MROCE_OP_PROBE, 0);
    assert_non_null(pr);
    uint32_t got[2] = {pr->h.psn, x.psn};
    assert_int_equal(
        peer_ack(p, x.path, pr->h.psn, x.dsn + 1, got, data_arrives ? 2 : 1),
        0);
    assert_int_equal(peer_path(p, x.path).state, MROCE_PATH_ACTIVE);
    assert_int_equal(peer_path(p, x.path).repaths, data_arrives ? 0 : 1);
    if (data_arrives)
        assert_int_equal(peer_path(p, x.path).src_port, port);
    else
        assert_int_not_equal(peer_path(p, x.path).src_port, port);
}

static void test_overtaken_repath(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        struct peer *p = sack_peer();
        overtaken_case(p, k == 1);
        peer_free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
        T(test_rx_sack_bitmap),
        T(test_rx_stale_psn),
        T(test_rx_ack_policy),
        T(test_rx_ack_coalesced),
        T(test_tx_cum_resolves),
        T(test_tx_cum_path_idle),
        T(test_rack_waits_recent_highest),
        T(test_tx_spray),
        T(test_tx_sack_loss_retx),
        T(test_tx_ack_never_sent),
        T(test_tx_ack_cum_beyond),
        T(test_tx_bogus_ack_counted),
        T(test_rtt_sample_bounds),
        T(test_rto_retransmits),
        T(test_rto_retransmits_active),
        T(test_rto_repath_probe),
        T(test_retry_limit),
        T(test_tx_cap_64),
        T(test_third_copy_twice),
        T(test_rnr_retries),
        T(test_rnr_no_spurious_rto),
        T(test_slow_path_skipped),
        T(test_probe_waits_for_room),
        T(test_rnr_retry_exceeded),
        T(test_fatal_nacks),
        T(test_stale_nack),
        T(test_tail_loss_probe),
        T(test_nack_mismatch_is_stale),
        T(test_tlp_no_double_retx),
        T(test_rack_across_paths),
        T(test_no_tlp_behind_queue),
        T(test_no_rto_before_tlp),
        T(test_no_tlp_for_probe_alone),
        T(test_tlp_copies_silent_peer),
        T(test_tail_copies),
        T(test_overtaken_repath),
        T(test_idle_path_first),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
