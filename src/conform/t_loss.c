/* Section 6.3: loss detection and retransmission. The suite drops chosen
 * transmissions of the IUT's data and checks what comes back and when.
 * So that no tail-loss probe (R-RTT-7) blurs which rule resent what, the
 * tests of the SACK rule announce an ack_delay just below the IUT's
 * min_rto (slow_tlp: the PTO counts it), and the test of the RTO lets the
 * IUT take no RTT sample at all (nothing is acknowledged before it). */
#include <string.h>

#include "conform/cf.h"

/* R-LOSS-1, R-LOSS-2: a hole below sack_high is a loss at once. */
static void loss_sack_hole(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){
                   .n_paths = 1, .min_rto_ns = 40000000, .slow_tlp = true});
    struct cf_drop_dsn d = {.dsn = cf_iut_dsn(t, 1), .times = 1};
    t->p->drop = cf_drop_dsn_fn;
    t->p->drop_ud = &d;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 4096});
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
    const struct cf_pkt *orig = cf_nth_tx(t, d.dsn, 0),
                        *re = cf_nth_tx(t, d.dsn, 1);
    CF_REQUIRE(t, orig && re, "DSN 1 was not sent again");
    double ms = (double)(re->t - orig->t) / 1e6;
    double pto = (double)cf_my_ack_delay(t) / 1e6; /* PTO >= ack_delay */
    CF_CHECK(t, ms < pto / 2,
             "DSN 1 sent again %.1f ms after its loss showed in a SACK "
             "(tail-loss probe not before %.0f ms): the hole was not taken "
             "as a loss",
             ms, pto);
}

/* R-LOSS-3: the retransmission repeats the original after the MTH. */
static void loss_retx_bytes(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){
                   .n_paths = 1, .min_rto_ns = 40000000, .slow_tlp = true});
    struct cf_drop_dsn d = {.dsn = cf_iut_dsn(t, 2), .times = 1};
    t->p->drop = cf_drop_dsn_fn;
    t->p->drop_ud = &d;
    cf_peer_recv(t, 0, 0, 8192);
    cf_post(t,
            &(struct cf_wr){
                .op = "send_imm", .wr_id = 1, .len = 4000, .imm = 0xCAFEBABE});
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
    const struct cf_pkt *o = cf_nth_tx(t, d.dsn, 0),
                        *r = cf_nth_tx(t, d.dsn, 1);
    CF_REQUIRE(t, o && r, "DSN 2 was not sent again");
    CF_CHECK(t,
             r->len == o->len && !memcmp(r->buf + 16, o->buf + 16, o->len - 20),
             "the retransmission differs from the original after the MTH");
    CF_CHECK(t, r->h.flags & MROCE_HF_RETX, "RETX not set on a retransmission");
    CF_CHECK(t, r->h.opcode == o->h.opcode, "the opcode changed");
    CF_CHECK(t, r->h.psn != o->h.psn, "the retransmission reused PSN %u",
             o->h.psn);
    CF_CHECK(t, (int32_t)(r->h.ts - o->h.ts) > 0,
             "the retransmission carries the old ts (R-HDR-10)");
}

/* R-RTT-6, R-LOSS-4: an RTO resends on another ACTIVE path; the timed-out
 * path gets a new source port and a PROBE. The only packet is lost, so
 * the IUT has no RTT estimate and no tail-loss probe: its RTO is the
 * initial one. */
static void loss_rto_other_path(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 4});
    struct cf_drop_dsn d = {.dsn = cf_iut_dsn(t, 0), .times = 1};
    t->p->drop = cf_drop_dsn_fn;
    t->p->drop_ud = &d;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
    const struct cf_pkt *o = cf_nth_tx(t, d.dsn, 0),
                        *r = cf_nth_tx(t, d.dsn, 1);
    CF_REQUIRE(t, o && r, "DSN %u was not sent again", d.dsn);
    double ms = cf_ts_ms(o, r); /* the IUT's own clock */
    double rto = (double)t->iut.timers.initial_rto_ns / 1e6;
    CF_CHECK(t, ms > rto * 0.99,
             "DSN %u resent after %.1f ms, before its RTO (%.0f ms; lost by "
             "sack %lld rack %lld pto %lld rto %lld)",
             d.dsn, ms, rto, (long long)cf_counter(t, "conn", "lost_sack"),
             (long long)cf_counter(t, "conn", "lost_rack"),
             (long long)cf_counter(t, "conn", "lost_pto"),
             (long long)cf_counter(t, "conn", "lost_rto"));
    CF_CHECK(t, r->h.path != o->h.path,
             "DSN %u resent on the path it was lost on (%u)", d.dsn, o->h.path);
    const struct cf_pkt *pr = cf_find(t, 0, MROCE_OP_PROBE, 0);
    CF_CHECK(t, pr && pr->h.path == o->h.path && (pr->h.flags & MROCE_HF_RETX),
             "no PROBE with RETX on the timed-out path %u", o->h.path);
    /* R-PATH-6: the timed-out path moved to a new source port */
    if (pr)
        CF_CHECK(t, pr->sport != o->sport,
                 "the PROBE after the RTO left from the lost packet's port %u",
                 o->sport);
}

/* R-DSN-8, R-LOSS-5: a DSN acknowledged by dsn_cum is not resent, even
 * when the same ACK shows its transmission lost. */
static void loss_acked_not_resent(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){
                   .n_paths = 1, .min_rto_ns = 40000000, .slow_tlp = true});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 3072});
    for (int i = 0; i < 3; i++)
        CF_REQUIRE(t, cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000)),
                   "the IUT sent %d of 3 packets", i);
    struct mroce_hdr a;
    cf_ack_fill(t, 0, &a);
    a.sack[0] &= ~(1ull << 61); /* PSN 0 (bit 2) shown lost */
    a.rx_count = 2;
    int from = t->p->n_log;
    cf_send(t, &a, NULL, 0); /* dsn_cum 3: every DSN accepted */
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
    cf_pump(t, 20);
    for (int i = from; i < t->p->n_log; i++)
        CF_CHECK(t, !cf_is_data(t->p->log[i], NULL),
                 "DSN %u resent although dsn_cum acknowledged it",
                 t->p->log[i]->h.dsn);
}

/* R-LOSS-6 (SHOULD): a retransmission goes before new data. One ACK
 * shows DSN 1 lost and opens the window for DSN 4 at once. */
static void loss_retx_first(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1,
                                 .my_dsn_window = 4,
                                 .min_rto_ns = 40000000,
                                 .slow_tlp = true});
    struct cf_drop_dsn d = {.dsn = cf_iut_dsn(t, 1), .times = 1};
    t->p->auto_ack = false;
    t->p->drop = cf_drop_dsn_fn;
    t->p->drop_ud = &d;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 8 * 1024});
    for (int i = 0; i < 4; i++)
        CF_REQUIRE(t, cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000)),
                   "the IUT sent %d of the 4 packets its window allows", i);
    cf_send_ack(t, 0); /* PSNs 0, 2, 3; dsn_cum 1 */
    const struct cf_pkt *pk = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, pk, "nothing sent after the ACK");
    CF_CHECK(t, pk->h.dsn == d.dsn,
             "new DSN %u went before the retransmission of DSN %u", pk->h.dsn,
             d.dsn);
}

/* R-LOSS-3 receiver side: RETX changes nothing about placement. */
static void loss_rx_retx_flag(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[64], got[64];
    cf_pattern(d, sizeof(d), 51);
    struct mroce_hdr h = cf_data_hdr(t, MROCE_OP_WRITE, 1);
    h.msn = t->p->msn[0]++;
    h.msg_len = sizeof(d);
    h.va = t->iut.va + 0x3000;
    h.rkey = t->iut.rkey;
    h.flags = MROCE_HF_ACKREQ | MROCE_HF_RETX;
    cf_send(t, &h, d, sizeof(d));
    CF_CHECK(t, cf_wait_cum(t, h.dsn, cf_ms(t, 1000)),
             "a first arrival with RETX was not acknowledged");
    cf_iut_read(t, 0x3000, got, sizeof(got));
    CF_CHECK(t, !memcmp(got, d, sizeof(d)),
             "a first arrival with RETX was not placed");
}

/* R-LOSS-7 (SHOULD): a DSN lost twice goes out twice, on two paths. */
static void loss_third_twice(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 4, .tail_copies = 1});
    struct cf_drop_dsn d = {.dsn = cf_iut_dsn(t, 0), .times = 2};
    t->p->drop = cf_drop_dsn_fn;
    t->p->drop_ud = &d;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 3000)), 1, "SUCCESS");
    cf_pump(t, 10);
    const struct cf_pkt *a = cf_nth_tx(t, d.dsn, 2),
                        *b = cf_nth_tx(t, d.dsn, 3);
    CF_CHECK(t, a && b && a->h.path != b->h.path,
             "the third transmission of a DSN lost twice went out %s",
             !b ? "once" : "twice on one path");
}

/* R-PATH-7, R-LOSS-5: a lost PROBE is not sent again: every PROBE takes
 * a new PSN. */
static void loss_probe_not_resent(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1, .retry_cnt = 3});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    cf_wait_wc(t, "send", 1, cf_ms(t, 1000));
    cf_pump(t, (int)(4 * t->iut.timers.initial_rto_ns / 1000000));
    uint32_t psns[64];
    int n = 0;
    for (int i = 0; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        if (pk->derr || pk->h.opcode != MROCE_OP_PROBE || n >= 64)
            continue;
        for (int k = 0; k < n; k++)
            CF_CHECK(t, psns[k] != pk->h.psn, "PROBE PSN %u sent twice",
                     pk->h.psn);
        psns[n++] = pk->h.psn;
    }
    CF_REQUIRE(t, n >= 2, "%d PROBEs in four RTOs of silence", n);
}

/* R-LOSS-8 (SHOULD): a packet sent before one that another path of the
 * same plane has delivered is lost within the reorder window, long before
 * the PTO (the suite announces an ack_delay just below min_rto). */
static void loss_rack(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){
                   .n_paths = 2, .min_rto_ns = 40000000, .slow_tlp = true});
    /* an RTT sample first */
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
    cf_pump(t, 5);
    int64_t rack0 = cf_counter(t, "conn", "lost_rack");
    t->p->auto_ack = false;
    struct cf_drop_dsn d = {.dsn = cf_iut_dsn(t, 1), .times = 1};
    t->p->drop = cf_drop_dsn_fn;
    t->p->drop_ud = &d;
    int from = t->p->n_log;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 2, .len = 1024});
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 3, .len = 1024});
    const struct cf_pkt *w = NULL;
    for (int k = 0; k < 100 && !w; k++) {
        cf_pump(t, 1);
        for (int i = from; i < t->p->n_log && !w; i++)
            if (cf_is_data(t->p->log[i], NULL) &&
                t->p->log[i]->h.dsn == d.dsn + 1)
                w = t->p->log[i];
    }
    const struct cf_pkt *x = cf_nth_tx(t, d.dsn, 0);
    CF_REQUIRE(t, x && w, "the IUT did not send DSNs %u and %u", d.dsn,
               d.dsn + 1);
    if (x->h.path == w->h.path) {
        cf_note(t, "both packets on path %u: a SACK case, not RACK", x->h.path);
        return;
    }
    uint64_t t0 = cf_now();
    cf_send_ack(t, w->h.path); /* DSN + 1 delivered, DSN not */
    t->p->auto_ack = true;
    cf_wc_is(t, cf_wait_wc(t, "send", 2, cf_ms(t, 1000)), 2, "SUCCESS");
    const struct cf_pkt *r = cf_nth_tx(t, d.dsn, 1);
    CF_REQUIRE(t, r, "DSN %u was not sent again", d.dsn);
    double ms = (double)(r->t - t0) / 1e6;
    double pto = (double)cf_my_ack_delay(t) / 1e6;
    CF_CHECK(t, ms < pto / 2 || cf_counter(t, "conn", "lost_rack") > rack0,
             "DSN %u resent %.1f ms after DSN %u showed delivered on path %u "
             "(lost_rack %lld): not as a RACK loss",
             d.dsn, ms, d.dsn + 1, w->h.path,
             (long long)(cf_counter(t, "conn", "lost_rack") - rack0));
}

const struct cf_test cf_t_loss[] = {
    CF_TEST("loss.sack_hole", "6.3", "R-LOSS-1 R-LOSS-2 R-LOSS-5", MUST,
            "a hole below sack_high is resent at once", loss_sack_hole),
    CF_TEST("loss.retx.bytes", "6.3", "R-LOSS-3 R-HDR-10 R-SACK-2", MUST,
            "a retransmission repeats the original, RETX, new PSN and ts",
            loss_retx_bytes),
    CF_TEST("loss.rto.other_path", "6.3", "R-RTT-6 R-LOSS-4 R-PATH-6", MUST,
            "after an RTO: resent elsewhere, path re-pathed and probed",
            loss_rto_other_path),
    CF_TEST("loss.acked_not_resent", "6.3", "R-DSN-8 R-LOSS-5 R-ACK-7", MUST,
            "a DSN acknowledged by dsn_cum is never resent",
            loss_acked_not_resent),
    CF_TEST("loss.retx_first", "6.3", "R-LOSS-6", SHOULD,
            "retransmissions before new data", loss_retx_first),
    CF_TEST("loss.rx_retx_flag", "6.3", "R-LOSS-3", MUST,
            "RETX on a first arrival changes nothing", loss_rx_retx_flag),
    CF_TEST("loss.third_twice", "6.3", "R-LOSS-7", SHOULD,
            "a DSN lost twice is sent twice, on two paths", loss_third_twice),
    CF_TEST("loss.rack", "6.3", "R-LOSS-8", SHOULD,
            "a packet sent before one delivered on another path is lost "
            "within the reorder window",
            loss_rack),
    CF_TEST("loss.probe_not_resent", "5.3", "R-PATH-7 R-LOSS-5", MUST,
            "a lost PROBE is never sent again", loss_probe_not_resent),
    {0},
};
