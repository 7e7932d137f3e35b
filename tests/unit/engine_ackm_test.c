/* ACKM, one ACK for several paths (R-ACKM-*, R-VER-5): the receiver
 * holds an acknowledgement that R-ACK-1 asks for only by case 2 as a
 * record for the connection's next ACK, with the time it waited; the
 * sender takes each record as an ACK for its path, its RTT sample less
 * that hold, before the ACKM's dsn_cum, and drops a forged ACKM whole. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <mroce/mroce_crypto.h>

#include "io/testwire/twloop.h"
#include "support/peer.h"
#include "support/peer_sec.h"
#include "wire/ackm.h"
#include "wire/aead.h"

#define US 1000ull
#define BOUND 1000ull /* half the default ack_delay (R-ACKM-4) */

static const uint8_t secret[32] = {0xac, 0x4d, 1, 2, 3, 4, 5, 6, 7, 8};

static void ackm_cfg(struct peer_cfg *cfg, uint32_t n_paths)
{
    peer_default_cfg(cfg);
    cfg->fixed_init = true;
    cfg->attr.n_paths = n_paths;
    cfg->attr.sq_depth = 64; /* its msg_window: a message per DSN here */
    cfg->remote.features = MROCE_FEAT_ACKM; /* the peer announces it */
}

static struct peer *ackm_peer(uint32_t n_paths)
{
    struct peer_cfg cfg;
    ackm_cfg(&cfg, n_paths);
    return peer_new(&cfg);
}

static int teardown(void **state)
{
    (void)state;
    peer_free_all();
    return 0;
}

/* A one-packet WRITE from the peer at (path, psn) with DSN and MSN dsn. */
static void rx_data(struct peer *p, uint16_t path, uint32_t psn, uint32_t dsn,
                    uint8_t flags, uint8_t ecn)
{
    uint8_t data[64];
    peer_pattern(data, sizeof(data), dsn);
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_WRITE, path, psn);
    h.flags = flags;
    h.dsn = dsn;
    h.msn = dsn;
    h.va = p->va + 64 * (dsn % 512);
    h.rkey = p->rkey;
    h.msg_len = sizeof(data);
    uint8_t buf[PEER_PKT_MAX];
    size_t n = p->sec ? peer_sec_seal(p->sec, &h, data, sizeof(data), buf)
                      : peer_encode(&h, data, sizeof(data), buf);
    struct mroce_pkt_meta m = peer_meta(p, path);
    m.ecn = ecn;
    assert_int_equal(peer_rx_meta(p, &m, buf, n), 0);
}

/* The i-th ACKM of the last drain, its count checked; hold gets the
 * hold of its own path. */
static const struct peer_out *ackm_out(const struct peer *p, int i,
                                       unsigned count, uint32_t *hold)
{
    const struct peer_out *o = peer_find(p, MROCE_OP_ACKM, i);
    assert_non_null(o);
    assert_int_equal(mroce_ackm_check(&o->h, hold), (int)count);
    return o;
}

static struct mroce_ackm_rec rec_of(const struct peer_out *o, unsigned i)
{
    struct mroce_ackm_rec r;
    mroce_ackm_get(&o->h, i, &r);
    return r;
}

/* ---- the receiver (R-ACKM-4) ---- */

/* A packet above a DSN hole (case 2 alone) is not acknowledged at once;
 * the next ACK, asked for by an ACKREQ on another path, is an ACKM whose
 * record for that path carries what its own ACK would have, and how long
 * it waited. */
static void test_rx_record_rides_next_ack(void **state)
{
    (void)state;
    struct peer *p = ackm_peer(4);
    uint32_t ts0 = (uint32_t)p->now;
    rx_data(p, 0, 0, 1, 0, MROCE_ECN_ECT0); /* DSN 0 is missing */
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_int_equal(peer_cnt(p).tx_acks, 0);
    peer_advance(p, 400);
    rx_data(p, 1, 0, 2, MROCE_HF_ACKREQ, MROCE_ECN_ECT0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    uint32_t hold;
    const struct peer_out *o = ackm_out(p, 0, 1, &hold);
    assert_int_equal(o->h.path, 1);
    assert_int_equal(hold, 0); /* its own ACK went at once */
    assert_int_equal(o->h.sack_high, 0);
    assert_int_equal(o->h.dsn_cum, 0);
    assert_true(mroce_sack_test(o->h.sack, 0));
    struct mroce_ackm_rec r = rec_of(o, 0);
    assert_int_equal(r.path, 0);
    assert_int_equal(r.hold_ns, 400); /* 50 units of 8 ns */
    assert_int_equal(r.sack_high, 0);
    assert_int_equal(r.echo_ts, ts0);
    assert_int_equal(r.rx_count, 1);
    assert_int_equal(r.ce_count, 0);
    assert_true(mroce_sack_test(r.sack, 0));
    assert_false(mroce_sack_test(r.sack, 1));
    struct mroce_conn_counters c = peer_cnt(p);
    assert_int_equal(c.tx_acks, 1);
    assert_int_equal(c.tx_ackm_recs, 1);
    /* the record went: nothing more, not even when timers run */
    assert_int_equal(peer_fire_tx(p, 8), 0);
    assert_int_equal(peer_cnt(p).tx_acks, 1);
}

/* A record is sent by the timer once the oldest has waited half the
 * ack_delay: the newest record's path is the ACKM's own. */
static void test_rx_record_timer(void **state)
{
    (void)state;
    struct peer *p = ackm_peer(4);
    uint64_t t0 = p->now;
    rx_data(p, 0, 0, 1, 0, MROCE_ECN_ECT0);
    peer_advance(p, 200);
    rx_data(p, 1, 0, 2, 0, MROCE_ECN_ECT0);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    assert_true(mroce_ctx_next_expiry(p->ctx) <= t0 + BOUND);
    assert_int_equal(peer_fire_tx(p, 8), 1);
    assert_int_equal(p->now, t0 + BOUND);
    uint32_t hold;
    const struct peer_out *o = ackm_out(p, 0, 1, &hold);
    assert_int_equal(o->h.path, 1);
    assert_int_equal(hold, BOUND - 200);
    struct mroce_ackm_rec r = rec_of(o, 0);
    assert_int_equal(r.path, 0);
    assert_int_equal(r.hold_ns, BOUND);
    assert_int_equal(peer_fire_tx(p, 8), 0);
}

/* As many waiting records as an ACKM carries (32) and one more send the
 * ACK at once: an ACKM for the newest path with the 32 others. */
static void test_rx_33_records(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    ackm_cfg(&cfg, 40);
    cfg.mtu = 2048; /* 32 records fit */
    struct peer *p = peer_new(&cfg);
    for (uint16_t q = 0; q < 32; q++) {
        rx_data(p, q, 0, q + 1u, 0, MROCE_ECN_ECT0);
        assert_int_equal(peer_drain(p, NULL, 0), 0);
    }
    rx_data(p, 32, 0, 33, 0, MROCE_ECN_ECT0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    uint32_t hold;
    const struct peer_out *o = ackm_out(p, 0, 32, &hold);
    assert_int_equal(o->h.path, 32);
    for (unsigned i = 0; i < 32; i++)
        assert_int_equal(rec_of(o, i).path, i); /* oldest first */
    assert_int_equal(peer_cnt(p).tx_ackm_recs, 32);
    assert_int_equal(peer_fire_tx(p, 8), 0);
}

/* R-ACK-1 case 1 is unchanged: ACKREQ, RETX, a CE mark and a PSN gap
 * are acknowledged at once (a plain ACK: nothing waits). */
static void test_rx_case1_at_once(void **state)
{
    (void)state;
    struct peer *p = ackm_peer(4);
    rx_data(p, 0, 0, 1, MROCE_HF_ACKREQ, MROCE_ECN_ECT0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_int_equal(p->out[0].h.opcode, MROCE_OP_ACK);
    rx_data(p, 1, 0, 2, MROCE_HF_RETX, MROCE_ECN_ECT0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_int_equal(p->out[0].h.opcode, MROCE_OP_ACK);
    assert_int_equal(p->out[0].h.path, 1);
    rx_data(p, 2, 0, 3, 0, MROCE_ECN_CE);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_int_equal(p->out[0].h.path, 2);
    rx_data(p, 3, 5, 4, 0, MROCE_ECN_ECT0); /* PSNs 0..4 of path 3 missing */
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_int_equal(p->out[0].h.opcode, MROCE_OP_ACK);
    assert_int_equal(p->out[0].h.path, 3);
    assert_int_equal(peer_cnt(p).tx_ackm_recs, 0);
}

/* R-VER-5: the feature is in effect only when both sides announce it;
 * otherwise case 2 is acknowledged at once with a plain ACK and no ACKM
 * ever leaves. */
static void ackm_off_case(bool local_off, bool remote_on)
{
    struct peer_cfg cfg;
    ackm_cfg(&cfg, 4);
    cfg.attr.ackm_off = local_off;
    cfg.remote.features = remote_on ? MROCE_FEAT_ACKM : 0;
    struct peer *p = peer_new(&cfg);
    assert_int_equal(p->local.features & MROCE_FEAT_ACKM,
                     local_off ? 0 : MROCE_FEAT_ACKM);
    for (uint16_t q = 0; q < 4; q++) {
        rx_data(p, q, 0, q + 1u, 0, MROCE_ECN_ECT0); /* above the hole */
        assert_int_equal(peer_drain(p, NULL, 0), 1);
        assert_int_equal(p->out[0].h.opcode, MROCE_OP_ACK);
        assert_int_equal(p->out[0].h.path, q);
    }
    rx_data(p, 0, 1, 0, 0, MROCE_ECN_ECT0); /* fills it */
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_int_equal(p->out[0].h.opcode, MROCE_OP_ACK);
    assert_int_equal(p->out[0].h.dsn_cum, 5);
    assert_int_equal(peer_fire_tx(p, 8), 0);
    assert_int_equal(peer_cnt(p).tx_ackm_recs, 0);
    peer_free(p);
}

static void test_rx_ackm_off(void **state)
{
    (void)state;
    ackm_off_case(true, true);
    ackm_off_case(false, false);
    ackm_off_case(true, false);
}

/* The smallest MTU (256) holds 5 records: an ACKM carries no more and
 * stays within the MTU; the others wait for the next ACK (here the
 * timer's) and none is lost. */
static void test_rx_small_mtu(void **state)
{
    (void)state;
    struct peer_cfg cfg;
    ackm_cfg(&cfg, 12);
    cfg.mtu = 256;
    struct peer *p = peer_new(&cfg);
    uint64_t t0 = p->now;
    unsigned fit = (256 - MROCE_ACKM_PRE_LEN) / MROCE_ACKM_REC_LEN;
    assert_int_equal(fit, 5);
    for (uint16_t q = 0; q < 11; q++)
        rx_data(p, q, 0, q + 1u, 0, MROCE_ECN_ECT0);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    rx_data(p, 11, 0, 12, MROCE_HF_ACKREQ, MROCE_ECN_ECT0);
    bool acked[12] = {false};
    unsigned recs = 0, ackms = 0;
    for (int round = 0; round < 4 && ackms + recs < 12; round++) {
        int n = round ? peer_fire_tx(p, 8) : peer_drain(p, NULL, 0);
        assert_true(n >= 1);
        assert_true(p->now <= t0 + BOUND); /* the oldest one's bound */
        for (int i = 0; i < p->n_out; i++) {
            const struct peer_out *o = &p->out[i];
            assert_int_equal(o->h.opcode, MROCE_OP_ACKM);
            assert_true(o->len <= MROCE_MAX_HDR_LEN + 256 + MROCE_ICRC_LEN);
            uint32_t hold;
            int k = mroce_ackm_check(&o->h, &hold);
            assert_true(k >= 0 && k <= (int)fit);
            assert_false(acked[o->h.path]);
            acked[o->h.path] = true;
            for (int j = 0; j < k; j++) {
                struct mroce_ackm_rec r = rec_of(o, (unsigned)j);
                assert_false(acked[r.path]);
                acked[r.path] = true;
                assert_true(r.hold_ns <= BOUND);
            }
            recs += (unsigned)k;
            ackms++;
        }
    }
    for (int q = 0; q < 12; q++)
        assert_true(acked[q]);
    assert_int_equal(ackms, 12 - recs);
    assert_int_equal(peer_cnt(p).tx_ackm_recs, recs);
    assert_true(ackms >= 2);
    assert_int_equal(peer_fire_tx(p, 8), 0);
}

/* ---- the sender (R-ACKM-5, R-ACKM-6) ---- */

/* What the engine's WRITE put on each path: highest PSN and count. */
struct sent {
    uint32_t hi[PEER_PATHS];
    uint32_t n[PEER_PATHS];
    uint32_t dsns;
};

static void send_write(struct peer *p, struct sent *s)
{
    memset(s, 0, sizeof(*s));
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, 8 * PEER_MTU), 0);
    peer_drain(p, NULL, 0);
    for (int i = 0; i < p->n_out; i++) {
        const struct mroce_hdr *h = &p->out[i].h;
        if (h->opcode != MROCE_OP_WRITE)
            continue;
        assert_true(h->path < PEER_PATHS);
        s->n[h->path]++;
        s->hi[h->path] = h->psn;
        s->dsns++;
    }
    assert_int_equal(s->dsns, 8);
    for (int q = 0; q < PEER_PATHS; q++) /* each path's PSNs from 0 */
        assert_int_equal(s->hi[q] + 1, s->n[q]);
}

/* Path q's record saying all its PSNs arrived, held hold_ns. */
static struct mroce_ackm_rec full_rec(const struct peer *p,
                                      const struct sent *s, uint16_t q,
                                      uint32_t hold_ns)
{
    struct mroce_ackm_rec r = {.path = q, .hold_ns = hold_ns};
    r.sack_high = s->hi[q];
    r.echo_ts = peer_sent_ts(p, q, s->hi[q]);
    r.rx_count = (uint16_t)s->n[q];
    for (uint32_t i = 0; i < s->n[q]; i++)
        mroce_sack_set(r.sack, i);
    return r;
}

/* An ACKM for path a (all its PSNs, own hold) with these records and
 * payload as built; len_adj changes the payload length, count_adj the
 * count byte. */
static int feed_ackm(struct peer *p, const struct sent *s, uint16_t a,
                     uint32_t hold, uint32_t dsn_cum,
                     const struct mroce_ackm_rec *recs, unsigned n, int len_adj,
                     int count_adj)
{
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_ACKM, a, 0);
    h.sack_high = s->hi[a];
    h.psn = s->hi[a];
    h.dsn_cum = dsn_cum;
    h.echo_ts = peer_sent_ts(p, a, s->hi[a]);
    h.rx_count = (uint16_t)s->n[a];
    for (uint32_t i = 0; i < s->n[a]; i++)
        mroce_sack_set(h.sack, i);
    uint8_t pl[MROCE_ACKM_PRE_LEN + 34 * MROCE_ACKM_REC_LEN] = {0};
    size_t len = mroce_ackm_put(pl, hold, recs, n);
    pl[0] = (uint8_t)(pl[0] + count_adj);
    return peer_feed(p, &h, pl, (uint32_t)((int)len + len_adj));
}

/* Each record resolves its path's PSNs and gives the path an RTT sample
 * less its hold; the ACKM's own path likewise with the preamble's hold;
 * the records go before dsn_cum, which covers their packets too. */
static void test_tx_records_resolve(void **state)
{
    (void)state;
    struct peer *p = ackm_peer(PEER_PATHS);
    struct sent s;
    send_write(p, &s);
    peer_advance(p, 10 * US);
    struct mroce_ackm_rec recs[3];
    uint32_t holds[PEER_PATHS] = {2000, 4000, 0, 9000};
    for (uint16_t q = 1; q < PEER_PATHS; q++)
        recs[q - 1] = full_rec(p, &s, q, holds[q]);
    assert_int_equal(
        feed_ackm(p, &s, 0, holds[0], peer_tdsn(p, 8), recs, 3, 0, 0), 0);
    struct mroce_conn_counters c = peer_cnt(p);
    assert_int_equal(c.drop_bad_ack, 0);
    assert_int_equal(c.rx_acks, 1);
    assert_int_equal(c.rx_ackm_recs, 3);
    for (uint16_t q = 0; q < PEER_PATHS; q++) {
        struct mroce_path_info i = peer_path(p, q);
        assert_int_equal(i.acked_pkts, s.n[q]);
        /* R-ACKM-6: the echo's 10 us less the hold */
        assert_int_equal(i.min_rtt_ns, 10 * US - holds[q]);
        assert_int_equal(i.srtt_ns, 10 * US - holds[q]);
    }
    struct mroce_wc wc[2];
    assert_int_equal(peer_poll(p->scq, wc, 2), 1);
    assert_int_equal(wc[0].status, MROCE_WC_SUCCESS);
}

/* R-ACKM-6: a hold not below the RTT gives no sample (the path is still
 * acknowledged). */
static void test_tx_hold_beyond_rtt(void **state)
{
    (void)state;
    struct peer *p = ackm_peer(PEER_PATHS);
    struct sent s;
    send_write(p, &s);
    peer_advance(p, 10 * US);
    struct mroce_ackm_rec r = full_rec(p, &s, 1, 10 * US);
    assert_int_equal(feed_ackm(p, &s, 0, 0, peer_tdsn(p, 0), &r, 1, 0, 0), 0);
    assert_int_equal(peer_path(p, 1).acked_pkts, s.n[1]);
    assert_int_equal(peer_path(p, 1).min_rtt_ns, 0);
    assert_int_equal(peer_path(p, 0).min_rtt_ns, 10 * US);
}

/* Feeds one forged ACKM: counted once as drop_bad_ack and nothing of it
 * acts (no PSN resolved on any path, no completion, no sample). */
static void forged(struct peer *p, const struct sent *s,
                   const struct mroce_ackm_rec *recs, unsigned n, int len_adj,
                   int count_adj)
{
    struct mroce_conn_counters c0 = peer_cnt(p);
    uint64_t d0 = peer_drops(p);
    feed_ackm(p, s, 0, 0, peer_tdsn(p, 8), recs, n, len_adj, count_adj);
    struct mroce_conn_counters c = peer_cnt(p);
    assert_int_equal(c.drop_bad_ack, c0.drop_bad_ack + 1);
    assert_int_equal(peer_drops(p), d0 + 1);
    assert_int_equal(c.rx_ackm_recs, c0.rx_ackm_recs);
    for (uint16_t q = 0; q < PEER_PATHS; q++) {
        struct mroce_path_info i = peer_path(p, q);
        assert_int_equal(i.acked_pkts, 0);
        assert_int_equal(i.min_rtt_ns, 0);
    }
    struct mroce_wc wc[2];
    assert_int_equal(peer_poll(p->scq, wc, 2), 0);
}

/* A record for path q older than every PSN the sender still holds (an
 * ACKM overtaken by later ones), claiming new packets and CE marks. */
static struct mroce_ackm_rec stale_rec(const struct peer *p,
                                       const struct sent *s, uint16_t q)
{
    struct mroce_ackm_rec r = full_rec(p, s, q, 0);
    r.sack_high = s->hi[q] - 1000;
    r.echo_ts = 12345;
    r.rx_count = 100;
    r.ce_count = 50;
    return r;
}

/* R-ACKM-5: a stale record is skipped whole (no PSN, no CE mark, no
 * sample) and counted `stale`; the rest of the ACKM acts. An ACKM whose
 * every part is stale is no evidence and is dropped whole; one whose own
 * path is stale but a record is evidence takes that record and its
 * dsn_cum. */
static void test_tx_stale_skipped(void **state)
{
    (void)state;
    struct peer *p = ackm_peer(PEER_PATHS);
    struct sent s;
    send_write(p, &s);
    peer_advance(p, 10 * US);
    struct mroce_ackm_rec all_stale[3];
    for (uint16_t q = 1; q < PEER_PATHS; q++)
        all_stale[q - 1] = stale_rec(p, &s, q);
    struct sent old = s; /* own path 0 stale too */
    old.hi[0] = s.hi[0] - 1000;
    forged(p, &old, all_stale, 3, 0, 0);
    /* fresh records for 1 and 2, a stale one for 3 */
    struct mroce_ackm_rec recs[3] = {
        full_rec(p, &s, 1, 0), full_rec(p, &s, 2, 0), stale_rec(p, &s, 3)};
    struct mroce_conn_counters c0 = peer_cnt(p);
    assert_int_equal(feed_ackm(p, &old, 0, 0, peer_tdsn(p, 0), recs, 3, 0, 0),
                     0);
    struct mroce_conn_counters c = peer_cnt(p);
    assert_int_equal(c.drop_bad_ack, c0.drop_bad_ack);
    assert_int_equal(c.drop_stale, c0.drop_stale + 2); /* path 3, own 0 */
    assert_int_equal(c.rx_ackm_recs, c0.rx_ackm_recs + 2);
    assert_int_equal(peer_path(p, 1).acked_pkts, s.n[1]);
    assert_int_equal(peer_path(p, 2).acked_pkts, s.n[2]);
    assert_int_equal(peer_path(p, 1).min_rtt_ns, 10 * US);
    struct mroce_path_info i3 = peer_path(p, 3), i0 = peer_path(p, 0);
    assert_int_equal(i3.acked_pkts, 0);
    assert_int_equal(i3.ecn_marks, 0);
    assert_int_equal(i3.min_rtt_ns, 0);
    assert_int_equal(i0.acked_pkts, 0); /* dsn_cum covers nothing yet */
    /* own path stale, a record evidence: dsn_cum acts (R-ACK-100) */
    struct mroce_ackm_rec r3 = full_rec(p, &s, 3, 0);
    assert_int_equal(feed_ackm(p, &old, 0, 0, peer_tdsn(p, 8), &r3, 1, 0, 0),
                     0);
    assert_int_equal(peer_path(p, 3).acked_pkts, s.n[3]);
    assert_int_equal(peer_path(p, 0).acked_pkts, s.n[0]);
    assert_int_equal(peer_path(p, 0).min_rtt_ns, 0); /* no sample */
    struct mroce_wc wc[2];
    assert_int_equal(peer_poll(p->scq, wc, 2), 1);
    assert_int_equal(wc[0].status, MROCE_WC_SUCCESS);
}

/* R-ACKM-5: a record that is no evidence makes the whole ACKM none. */
static void test_tx_forged_dropped_whole(void **state)
{
    (void)state;
    struct peer *p = ackm_peer(PEER_PATHS);
    struct sent s;
    send_write(p, &s);
    peer_advance(p, 10 * US);
    struct mroce_ackm_rec ok[3], bad[4];
    for (uint16_t q = 1; q < PEER_PATHS; q++)
        ok[q - 1] = full_rec(p, &s, q, 0);
    /* a path the connection does not have (the last record) */
    memcpy(bad, ok, sizeof(ok));
    bad[2].path = PEER_PATHS;
    forged(p, &s, bad, 3, 0, 0);
    bad[2].path = 0xFFFF;
    forged(p, &s, bad, 3, 0, 0);
    /* the same path twice */
    memcpy(bad, ok, sizeof(ok));
    bad[3] = ok[0];
    forged(p, &s, bad, 4, 0, 0);
    /* the ACKM's own path again */
    memcpy(bad, ok, sizeof(ok));
    bad[3] = full_rec(p, &s, 0, 0);
    forged(p, &s, bad, 4, 0, 0);
    /* an echo_ts that is not the one its PSN was sent with */
    memcpy(bad, ok, sizeof(ok));
    bad[1].echo_ts++;
    forged(p, &s, bad, 3, 0, 0);
    /* bit 0 clear: the record says sack_high did not arrive */
    memcpy(bad, ok, sizeof(ok));
    bad[2].sack[0] &= ~(1ull << 63);
    assert_false(mroce_sack_test(bad[2].sack, 0));
    forged(p, &s, bad, 3, 0, 0);
    /* a sack_high never sent on its path */
    memcpy(bad, ok, sizeof(ok));
    bad[0].sack_high = s.hi[1] + 1;
    forged(p, &s, bad, 3, 0, 0);
    /* payload length and count disagree, or too many records */
    forged(p, &s, ok, 3, -1, 0);
    forged(p, &s, ok, 3, 1, 0);
    forged(p, &s, ok, 3, 0, 1);
    forged(p, &s, ok, 3, 0, -1);
    forged(p, &s, ok, 0, -4, 0); /* no preamble */
    struct mroce_ackm_rec many[33];
    for (unsigned i = 0; i < 33; i++)
        many[i] = ok[i % 3];
    forged(p, &s, many, 33, 0, 0);
    /* the genuine ACKM still acts in full */
    assert_int_equal(feed_ackm(p, &s, 0, 0, peer_tdsn(p, 8), ok, 3, 0, 0), 0);
    for (uint16_t q = 0; q < PEER_PATHS; q++)
        assert_int_equal(peer_path(p, q).acked_pkts, s.n[q]);
    assert_int_equal(peer_cnt(p).rx_ackm_recs, 3);
}

/* R-VER-5: an ACKM on a connection where the feature is not in effect
 * (either side did not announce it) is an unknown opcode. */
static void ackm_unannounced(bool local_off, bool remote_on)
{
    struct peer_cfg cfg;
    ackm_cfg(&cfg, PEER_PATHS);
    cfg.attr.ackm_off = local_off;
    cfg.remote.features = remote_on ? MROCE_FEAT_ACKM : 0;
    struct peer *p = peer_new(&cfg);
    struct sent s;
    send_write(p, &s);
    peer_advance(p, 10 * US);
    struct mroce_ackm_rec r = full_rec(p, &s, 1, 0);
    uint64_t op0 = peer_ctx_cnt(p).drop_bad_opcode, d0 = peer_drops(p);
    feed_ackm(p, &s, 0, 0, peer_tdsn(p, 8), &r, 1, 0, 0);
    assert_int_equal(peer_ctx_cnt(p).drop_bad_opcode, op0 + 1);
    assert_int_equal(peer_drops(p), d0 + 1);
    assert_int_equal(peer_cnt(p).rx_acks, 0);
    for (uint16_t q = 0; q < PEER_PATHS; q++)
        assert_int_equal(peer_path(p, q).acked_pkts, 0);
    struct mroce_wc wc[2];
    assert_int_equal(peer_poll(p->scq, wc, 2), 0);
    peer_free(p);
}

static void test_tx_unannounced_unknown_opcode(void **state)
{
    (void)state;
    ackm_unannounced(true, true);
    ackm_unannounced(false, false);
}

/* ---- the secure modes (R-AEAD-3, R-AEAD-4) ---- */

static struct peer *sec_peer(int mode)
{
    struct peer_cfg cfg;
    ackm_cfg(&cfg, PEER_PATHS);
    cfg.crypto = mroce_crypto_default();
    struct peer *p = peer_new_unconnected(&cfg);
    peer_sec_setup(p, mode, secret);
    peer_connect(p);
    assert_int_equal(mroce_conn_sec_mode(p->conn), mode);
    return p;
}

/* The engine's ACKM opens under the spec's keys (peer_drain asserts it)
 * with its record intact; the peer's sealed ACKM is taken; one with a
 * byte of its payload flipped is a bad tag and nothing of it acts. */
static void sec_case(int mode)
{
    struct peer *p = sec_peer(mode);
    rx_data(p, 0, 0, 1, 0, MROCE_ECN_ECT0);
    assert_int_equal(peer_drain(p, NULL, 0), 0);
    peer_advance(p, 80);
    rx_data(p, 1, 0, 2, MROCE_HF_ACKREQ, MROCE_ECN_ECT0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    uint32_t hold;
    const struct peer_out *o = ackm_out(p, 0, 1, &hold);
    assert_int_equal(rec_of(o, 0).path, 0);
    assert_int_equal(rec_of(o, 0).hold_ns, 80);
    assert_true(o->buf[0] & MROCE_HF_SEAL);

    struct sent s;
    send_write(p, &s);
    peer_advance(p, 10 * US);
    struct mroce_ackm_rec recs[3];
    for (uint16_t q = 1; q < PEER_PATHS; q++)
        recs[q - 1] = full_rec(p, &s, q, 1000);
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_ACKM, 0, s.hi[0]);
    h.sack_high = s.hi[0];
    h.dsn_cum = peer_tdsn(p, 8);
    h.echo_ts = peer_sent_ts(p, 0, s.hi[0]);
    for (uint32_t i = 0; i < s.n[0]; i++)
        mroce_sack_set(h.sack, i);
    uint8_t pl[MROCE_ACKM_PRE_LEN + 3 * MROCE_ACKM_REC_LEN];
    size_t len = mroce_ackm_put(pl, 0, recs, 3);
    uint8_t buf[PEER_PKT_MAX];
    size_t n = peer_sec_seal(p->sec, &h, pl, (uint32_t)len, buf);
    size_t off = n - MROCE_AEAD_TAG_LEN - len; /* the payload */
    for (size_t i = off; i < off + len; i += 37) {
        uint8_t bad[PEER_PKT_MAX];
        memcpy(bad, buf, n);
        bad[i] ^= 0x10;
        uint64_t t0 = peer_cnt(p).drop_bad_tag;
        assert_int_equal(peer_rx_raw(p, bad, n), MROCE_EPROTO);
        assert_int_equal(peer_cnt(p).drop_bad_tag, t0 + 1);
        for (uint16_t q = 0; q < PEER_PATHS; q++)
            assert_int_equal(peer_path(p, q).acked_pkts, 0);
    }
    assert_int_equal(peer_cnt(p).drop_bad_ack, 0);
    assert_int_equal(peer_rx_raw(p, buf, n), 0);
    for (uint16_t q = 0; q < PEER_PATHS; q++) {
        assert_int_equal(peer_path(p, q).acked_pkts, s.n[q]);
        assert_int_equal(peer_path(p, q).min_rtt_ns, q ? 9 * US : 10 * US);
    }
    assert_int_equal(peer_cnt(p).rx_ackm_recs, 3);
    peer_free(p);
}

static void test_sec_auth(void **state)
{
    (void)state;
    sec_case(MROCE_SEC_AUTH);
}

static void test_sec_encrypt(void **state)
{
    (void)state;
    sec_case(MROCE_SEC_ENCRYPT);
}

/* ---- end to end: two engines over the test wire ---- */

#define XFER (256 * 1024)

struct xfer {
    struct mroce_twloop_pair *p;
    size_t max_pkt;
    uint32_t mtu;
    int sealed;
    uint64_t ackms, too_big, max_recs;
    bool done;
};

/* Every ACKM on the wire stays within the connection's packet size and
 * carries no more records than its MTU holds. */
static void xfer_tap(void *ud, uint64_t now, int from,
                     const struct mroce_pkt_meta *meta, const uint8_t *buf,
                     size_t len)
{
    (void)now;
    (void)from;
    (void)meta;
    struct xfer *x = ud;
    if (len < 2 || buf[1] != MROCE_OP_ACKM)
        return;
    x->ackms++;
    x->too_big += len > x->max_pkt;
    assert_int_equal(!!(buf[0] & MROCE_HF_SEAL), x->sealed);
    size_t trailer = x->sealed ? MROCE_AEAD_TAG_LEN : MROCE_ICRC_LEN;
    size_t pl = len - MROCE_MAX_HDR_LEN - trailer;
    assert_int_equal((pl - MROCE_ACKM_PRE_LEN) % MROCE_ACKM_REC_LEN, 0);
    uint64_t n = (pl - MROCE_ACKM_PRE_LEN) / MROCE_ACKM_REC_LEN;
    assert_true(pl <= x->mtu);
    x->max_recs = n > x->max_recs ? n : x->max_recs;
}

static int xfer_pred(struct mroce_twloop *loop, void *arg)
{
    (void)loop;
    struct xfer *x = arg;
    struct mroce_wc wc;
    if (mroce_poll_cq(x->p->cq[0], 1, &wc) == 1) {
        assert_int_equal(wc.status, MROCE_WC_SUCCESS);
        x->done = true;
    }
    return x->done;
}

/* A WRITE sprayed over n_paths paths of a reordering wire: it completes
 * with the data exact, the receiver's records all reach the sender and
 * are taken (none dropped as bad), and every path's PSNs resolve. */
static void xfer_run(int sec_mode, uint32_t mtu, uint32_t n_paths, bool off)
{
    static uint8_t src[XFER], dst[XFER];
    struct mroce_twloop_pair_cfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.wire.seed = 7;
    cfg.wire.n_routes = 16;
    cfg.wire.rate_bps = 100000000000ull;
    cfg.wire.delay_ns = 1000;
    cfg.wire.jitter_ns = 3000; /* routes differ: data arrives out of order */
    cfg.wire.capacity = 16384;
    for (int i = 0; i < 2; i++) {
        cfg.ctx[i].seed = 3 + (uint64_t)i;
        cfg.ctx[i].mtu = mtu;
        cfg.conn[i].n_paths = n_paths;
        cfg.conn[i].ackm_off = off;
    }
    cfg.sec_mode = sec_mode;
    for (int i = 0; i < MROCE_SECRET_LEN; i++)
        cfg.secret[i] = (uint8_t)(i * 5 + 3);
    struct xfer x = {.mtu = mtu, .sealed = sec_mode != MROCE_SEC_NONE};
    assert_int_equal(mroce_twloop_pair_create(&cfg, &x.p), 0);
    x.max_pkt = mroce_ctx_max_pkt(x.p->ctx[1]);
    mroce_twloop_set_tap(x.p->loop, xfer_tap, &x);
    for (int i = 0; i < XFER; i++)
        src[i] = (uint8_t)(i * 29 + 1);
    memset(dst, 0, sizeof(dst));
    struct mroce_mr *ms, *md;
    assert_int_equal(mroce_reg_mr(x.p->pd[0], src, XFER, 0, &ms), 0);
    assert_int_equal(
        mroce_reg_mr(x.p->pd[1], dst, XFER,
                     MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE, &md),
        0);
    struct mroce_send_wr wr = {
        .wr_id = 1,
        .sge = {(uint64_t)(uintptr_t)src, XFER, mroce_mr_lkey(ms)},
        .remote_addr = (uint64_t)(uintptr_t)dst,
        .rkey = mroce_mr_rkey(md)};
    assert_int_equal(mroce_post_write(x.p->conn[0], &wr), 0);
    assert_int_equal(
        mroce_twloop_run_until(x.p->loop, xfer_pred, &x, 2000000000ull),
        MROCE_TWLOOP_DONE);
    assert_memory_equal(src, dst, XFER);
    /* the ACKs still on the wire */
    uint64_t t = mroce_twloop_now(x.p->loop) + 1000000;
    assert_int_equal(mroce_twloop_run_until(x.p->loop, NULL, NULL, t),
                     MROCE_TWLOOP_TIMEOUT);
    struct mroce_conn_counters c0, c1;
    mroce_conn_get_counters(x.p->conn[0], &c0);
    mroce_conn_get_counters(x.p->conn[1], &c1);
    assert_int_equal(x.ackms > 0, !off);
    assert_int_equal(x.too_big, 0);
    assert_int_equal(c1.tx_ackm_recs > 0, !off);
    assert_int_equal(c0.rx_acks, c1.tx_acks); /* a lossless wire */
    assert_int_equal(c0.drop_bad_tag + c1.drop_bad_tag, 0);
    /* an ACKM overtaken by later ones may carry records (or an own path)
     * older than the sender still knows: skipped as stale, the rest of
     * the ACKM taken (R-ACKM-5); no genuine ACKM is dropped. A plain
     * ACK as old is dropped (R-ACK-6): one path's old news */
    if (!off)
        assert_int_equal(c0.drop_bad_ack, 0);
    else
        assert_true(c0.drop_bad_ack * 20 <= c0.rx_acks);
    assert_true(c0.rx_ackm_recs <= c1.tx_ackm_recs);
    assert_true(c0.rx_ackm_recs + c0.drop_stale >= c1.tx_ackm_recs);
    for (uint16_t q = 0; q < n_paths; q++) {
        struct mroce_path_info i;
        assert_int_equal(mroce_path_query(x.p->conn[0], q, &i), 0);
        assert_int_equal(i.acked_pkts, i.tx_pkts); /* every PSN resolved */
        assert_int_equal(i.inflight_bytes, 0);
    }
    print_message(
        "mode %d mtu %u off %d: %llu ACKMs, %llu records (at most %llu "
        "in one), %llu/%llu records/ACKs taken, %llu bad, %llu ACKs for "
        "%llu data packets, %llu resent, %llu stale\n",
        sec_mode, mtu, off, (unsigned long long)x.ackms,
        (unsigned long long)c1.tx_ackm_recs, (unsigned long long)x.max_recs,
        (unsigned long long)c0.rx_ackm_recs, (unsigned long long)c0.rx_acks,
        (unsigned long long)c0.drop_bad_ack, (unsigned long long)c1.tx_acks,
        (unsigned long long)c0.tx_pkts, (unsigned long long)c0.retx_pkts,
        (unsigned long long)c0.drop_stale);
    mroce_twloop_pair_destroy(x.p);
}

static void test_xfer_plain(void **state)
{
    (void)state;
    xfer_run(MROCE_SEC_NONE, 1024, 16, false);
    xfer_run(MROCE_SEC_NONE, 1024, 16, true); /* plain ACKs, side by side */
}

static void test_xfer_sealed(void **state)
{
    (void)state;
    xfer_run(MROCE_SEC_AUTH, 1024, 16, false);
    xfer_run(MROCE_SEC_ENCRYPT, 1024, 16, false);
}

/* The smallest MTU: at most 5 records per ACKM, none lost. */
static void test_xfer_small_mtu(void **state)
{
    (void)state;
    xfer_run(MROCE_SEC_NONE, 256, 64, false);
    xfer_run(MROCE_SEC_ENCRYPT, 256, 64, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_rx_record_rides_next_ack, teardown),
        cmocka_unit_test_teardown(test_rx_record_timer, teardown),
        cmocka_unit_test_teardown(test_rx_33_records, teardown),
        cmocka_unit_test_teardown(test_rx_case1_at_once, teardown),
        cmocka_unit_test_teardown(test_rx_ackm_off, teardown),
        cmocka_unit_test_teardown(test_rx_small_mtu, teardown),
        cmocka_unit_test_teardown(test_tx_records_resolve, teardown),
        cmocka_unit_test_teardown(test_tx_hold_beyond_rtt, teardown),
        cmocka_unit_test_teardown(test_tx_forged_dropped_whole, teardown),
        cmocka_unit_test_teardown(test_tx_stale_skipped, teardown),
        cmocka_unit_test_teardown(test_tx_unannounced_unknown_opcode, teardown),
        cmocka_unit_test_teardown(test_sec_auth, teardown),
        cmocka_unit_test_teardown(test_sec_encrypt, teardown),
        cmocka_unit_test(test_xfer_plain),
        cmocka_unit_test(test_xfer_sealed),
        cmocka_unit_test(test_xfer_small_mtu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
