/* Section 6.2: when a receiver acknowledges (ACKREQ, gaps and
 * duplicates at once, every ack_every, within ack_delay), from where and
 * to where, and what a sender does with ACKs that arrive out of order,
 * twice, or name things it never sent; the ACK-route check. */
#include <string.h>

#include "conform/cf.h"

/* A one-packet WRITE from the suite on path with the next sequence
 * numbers; returns its PSN. */
static uint32_t ack_write(struct cf_t *t, uint16_t path, uint8_t flags)
{
    uint8_t d[16] = {7};
    struct mroce_hdr h = cf_data_hdr(t, MROCE_OP_WRITE, path);
    h.msn = t->p->msn[0]++;
    h.msg_len = sizeof(d);
    h.va = t->iut.va + 0x100;
    h.rkey = t->iut.rkey;
    h.flags = flags;
    cf_send(t, &h, d, sizeof(d));
    return h.psn;
}

struct psn_arg {
    uint16_t path;
    uint32_t psn;
};

static bool ack_covers(const struct cf_pkt *pk, const void *arg)
{
    const struct psn_arg *a = arg;
    uint32_t i = pk->h.sack_high - a->psn;
    return !pk->derr && pk->h.opcode == MROCE_OP_ACK && pk->h.path == a->path &&
           i < 256 && mroce_sack_test(pk->h.sack, i);
}

/* The time (ms after `from`) of an ACK recording path/psn, or -1. */
static double ack_after(struct cf_t *t, uint16_t path, uint32_t psn,
                        uint64_t from, int ms)
{
    struct psn_arg a = {path, psn};
    const struct cf_pkt *pk = cf_wait(t, ack_covers, &a, ms);
    return pk ? (double)(pk->t - from) / 1e6 : -1;
}

static const struct cf_open ack_slow = {.ack_every = 16,
                                        .ack_delay_ns = 200000000};

/* R-ACK-1 item 1: ACKREQ, and every result but IN_ORDER, at once. */
static void ack_now_ackreq(struct cf_t *t)
{
    cf_open(t, &ack_slow);
    ack_write(t, 0, 0);
    uint64_t t0 = cf_now();
    uint32_t psn = ack_write(t, 0, MROCE_HF_ACKREQ);
    double ms = ack_after(t, 0, psn, t0, cf_ms(t, 150));
    CF_CHECK(t, ms >= 0 && ms < 20 * t->scale,
             "ACKREQ acknowledged after %.1f ms (ack_delay 200 ms)", ms);
}

static void ack_now_gap(struct cf_t *t)
{
    cf_open(t, &ack_slow);
    ack_write(t, 0, 0);
    t->p->psn[0]++; /* PSN 1 never sent */
    uint64_t t0 = cf_now();
    uint32_t psn = ack_write(t, 0, 0);
    double ms = ack_after(t, 0, psn, t0, cf_ms(t, 150));
    CF_CHECK(t, ms >= 0 && ms < 20 * t->scale,
             "a gap acknowledged after %.1f ms (ack_delay 200 ms)", ms);
}

static void ack_now_late(struct cf_t *t)
{
    cf_open(t, &ack_slow);
    ack_write(t, 0, 0);
    uint32_t hole = cf_next_psn(t, 0);
    ack_write(t, 0, MROCE_HF_ACKREQ);
    cf_pump(t, 20);
    uint8_t d[16] = {8};
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_WRITE, 0);
    h.psn = hole;
    h.dsn = cf_next_dsn(t);
    h.msn = t->p->msn[0]++;
    h.msg_len = sizeof(d);
    h.va = t->iut.va + 0x100;
    h.rkey = t->iut.rkey;
    h.flags = 0; /* no ACKREQ: LATE alone must trigger the ACK */
    uint64_t t0 = cf_now();
    cf_send(t, &h, d, sizeof(d));
    double ms = ack_after(t, 0, hole, t0, cf_ms(t, 150));
    CF_CHECK(t, ms >= 0 && ms < 20 * t->scale,
             "a late packet acknowledged after %.1f ms (ack_delay 200 ms)", ms);
}

/* A duplicate DSN, in order on its path and without ACKREQ, is recorded
 * (R-DSN-5) and so acknowledged like any packet: within ack_delay. */
static void ack_dup_recorded(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.ack_every = 16, .ack_delay_ns = 20000000});
    uint8_t d[16] = {5};
    struct mroce_hdr h = cf_data_hdr(t, MROCE_OP_WRITE, 0);
    h.msn = t->p->msn[0]++;
    h.msg_len = sizeof(d);
    h.va = t->iut.va;
    h.rkey = t->iut.rkey;
    h.flags = MROCE_HF_ACKREQ;
    cf_send(t, &h, d, sizeof(d));
    cf_pump(t, 30);
    h.psn = cf_next_psn(t, 0);
    h.flags = 0;
    uint64_t t0 = cf_now();
    cf_send(t, &h, d, sizeof(d));
    double ms = ack_after(t, 0, h.psn, t0, cf_ms(t, 500));
    CF_CHECK(t, ms >= 0 && ms < 20 + 15 * t->scale,
             "a duplicate DSN's PSN acknowledged after %.1f ms, ack_delay 20 "
             "ms",
             ms);
}

static void ack_every_n(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.ack_every = 4, .ack_delay_ns = 200000000});
    uint64_t t0 = 0;
    uint32_t psn = 0;
    for (int i = 0; i < 4; i++) {
        t0 = cf_now();
        psn = ack_write(t, 0, 0);
    }
    double ms = ack_after(t, 0, psn, t0, cf_ms(t, 150));
    CF_CHECK(t, ms >= 0 && ms < 20 * t->scale,
             "4 packets with ack_every 4 acknowledged after %.1f ms", ms);
}

static void ack_delay(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.ack_every = 16, .ack_delay_ns = 20000000});
    uint64_t t0 = cf_now();
    uint32_t psn = ack_write(t, 0, 0);
    double ms = ack_after(t, 0, psn, t0, cf_ms(t, 500));
    CF_CHECK(t, ms >= 0 && ms < 20 + 15 * t->scale,
             "one packet acknowledged after %.1f ms with ack_delay 20 ms", ms);
}

/* R-ACK-5: no ACK for a path the suite sent nothing on. */
static void ack_only_recorded_paths(struct cf_t *t)
{
    cf_open(t, NULL);
    for (int i = 0; i < 8; i++)
        ack_write(t, 2, MROCE_HF_ACKREQ);
    cf_pump(t, 20);
    for (int i = 0; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        if (!pk->derr && pk->h.opcode == MROCE_OP_ACK)
            CF_CHECK(t, pk->h.path == 2, "an ACK for path %u, never used",
                     pk->h.path);
    }
}

/* R-ACK-3: ACKs come from the source ports of the IUT's own paths. */
static void ack_src_ports(struct cf_t *t)
{
    cf_open(t, NULL);
    for (int i = 0; i < 16; i++)
        cf_post(t, &(struct cf_wr){
                       .op = "write", .wr_id = (uint64_t)i + 1, .len = 64});
    cf_wait_wc(t, "send", 16, cf_ms(t, 2000));
    uint16_t ports[CF_MAX_PATHS] = {0};
    for (int i = 0; i < t->p->n_log; i++)
        if (cf_is_data(t->p->log[i], NULL))
            ports[t->p->log[i]->h.path] = t->p->log[i]->sport;
    int from = t->p->n_log;
    for (int i = 0; i < 16; i++)
        ack_write(t, (uint16_t)(i % 4), MROCE_HF_ACKREQ);
    cf_pump(t, 20);
    int acks = 0;
    for (int i = from; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        if (pk->derr || pk->h.opcode != MROCE_OP_ACK)
            continue;
        acks++;
        int q = -1;
        for (int k = 0; k < t->p->n_paths && q < 0; k++)
            if (ports[k] && ports[k] == pk->sport)
                q = k;
        CF_CHECK(t, q >= 0, "an ACK from port %u, no path of the IUT's",
                 pk->sport);
    }
    CF_REQUIRE(t, acks > 0, "no ACKs");
}

/* R-ACK-3 (SHOULD): ACKs rotate over the ACTIVE paths. */
static void ack_rotation(struct cf_t *t)
{
    cf_open(t, NULL);
    int from = t->p->n_log;
    uint16_t path = 0;
    for (int i = 0; i < 16; i++) { /* one at a time: no ACK covers two */
        ack_write(t, 0, MROCE_HF_ACKREQ);
        cf_wait(t, cf_is_ack_for, &path, cf_ms(t, 200));
    }
    uint16_t seen[16];
    int n = 0;
    for (int i = from; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        if (pk->derr || pk->h.opcode != MROCE_OP_ACK)
            continue;
        bool dup = false;
        for (int k = 0; k < n; k++)
            dup |= seen[k] == pk->sport;
        if (!dup && n < 16)
            seen[n++] = pk->sport;
    }
    CF_CHECK(t, n >= 4,
             "16 ACKs came from %d source port(s) (%u...), 4 paths ACTIVE", n,
             n ? seen[0] : 0);
}

/* ---- the sender's side (R-ACK-4, R-ACK-6) ---- */

/* The IUT writes n one-packet messages on its single path; the suite
 * records them but does not acknowledge. */
static void ack_iut_writes(struct cf_t *t, int n)
{
    t->p->auto_ack = false;
    for (int i = 0; i < n; i++)
        cf_post(t, &(struct cf_wr){.op = "write",
                                   .wr_id = (uint64_t)i + 1,
                                   .len = 64,
                                   .roff = (uint32_t)i * 64});
    int got = 0;
    while (got < n && cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000)))
        got++;
    CF_REQUIRE(t, got == n, "the IUT sent %d of %d WRITEs", got, n);
}

static int ack_retx_since(struct cf_t *t, int from)
{
    int n = 0;
    for (int i = from; i < t->p->n_log; i++)
        n += cf_is_data(t->p->log[i], NULL) &&
             (t->p->log[i]->h.flags & MROCE_HF_RETX);
    return n;
}

/* ACKs in reverse order and twice each: every WR completes once, in
 * order, and nothing is sent again. */
static void ack_reordered(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    ack_iut_writes(t, 6);
    struct mroce_hdr a[6];
    struct cf_rxpath m = {.init_psn = cf_iut_psn(t, 0)};
    uint32_t cum0 = t->p->dsn_cum - 6;
    for (int i = 0; i < 6; i++) {
        uint32_t psn = cf_iut_psn(t, (uint32_t)i);
        cf_rx_model(&m, psn, cf_iut_ts(t, 0, psn), 2, CF_REC_DATA);
        cf_ack_fill(t, 0, &a[i]);
        a[i].psn = a[i].sack_high = m.high;
        memcpy(a[i].sack, m.bits, sizeof(m.bits));
        a[i].dsn_cum = cum0 + (uint32_t)i + 1;
        a[i].echo_ts = m.echo;
        a[i].rx_count = m.rx_count;
    }
    int from = t->p->n_log;
    for (int i = 5; i >= 0; i--) {
        cf_send(t, &a[i], NULL, 0);
        cf_send(t, &a[i], NULL, 0);
    }
    for (int i = 1; i <= 6; i++)
        cf_wc_is(t, cf_wait_wc(t, "send", (uint64_t)i, cf_ms(t, 1000)),
                 (uint64_t)i, "SUCCESS");
    for (int i = 1; i < t->n_wc; i++)
        CF_CHECK(t, t->wc[i].wr_id == t->wc[i - 1].wr_id + 1,
                 "completions out of post order");
    CF_CHECK(t, t->n_wc == 6, "%d completions for 6 WRs", t->n_wc);
    cf_pump(t, 20);
    CF_CHECK(t, !ack_retx_since(t, from),
             "%d retransmissions after ACKs out of order",
             ack_retx_since(t, from));
}

/* An old ACK (with holes) after a newer one changes nothing. */
static void ack_old_after_new(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    ack_iut_writes(t, 4);
    struct mroce_hdr all, old;
    cf_ack_fill(t, 0, &all);
    old = all;
    old.psn = old.sack_high = cf_iut_psn(t, 1);
    old.echo_ts = cf_iut_ts(t, 0, old.sack_high);
    memset(old.sack, 0, sizeof(old.sack));
    mroce_sack_set(old.sack, 0); /* PSN 1 yes, PSN 0 no */
    old.dsn_cum = all.dsn_cum - 4;
    old.rx_count = 1;
    int from = t->p->n_log;
    cf_send(t, &all, NULL, 0);
    cf_wc_is(t, cf_wait_wc(t, "send", 4, cf_ms(t, 1000)), 4, "SUCCESS");
    cf_send(t, &old, NULL, 0);
    cf_pump(t, 20);
    CF_CHECK(t, !ack_retx_since(t, from),
             "an old ACK with a hole made the IUT send again");
    cf_state_is(t, "CONNECTED");
}

/* R-ACK-6: an ACK naming a PSN never sent does not acknowledge. */
static void ack_bogus_sack(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    ack_iut_writes(t, 1);
    struct mroce_hdr a;
    cf_ack_fill(t, 0, &a);
    a.sack_high = cf_iut_psn(t, 40); /* only its first PSN was sent */
    memset(a.sack, 0xFF, sizeof(a.sack));
    a.dsn_cum = t->p->dsn_cum - 1; /* nothing by dsn_cum */
    cf_send(t, &a, NULL, 0);
    cf_pump(t, 10);
    cf_poll(t);
    CF_CHECK(t, !cf_find_wc(t, "send", 1),
             "an ACK for PSNs never sent completed the WRITE");
    cf_send_ack(t, 0);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
}

/* R-ACK-6, R-VAL-1: a valid SACK part with a dsn_cum past snd_nxt: the
 * ACK is dropped whole, its SACK part too. */
static void ack_bogus_cum(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    ack_iut_writes(t, 2);
    struct mroce_hdr a;
    cf_ack_fill(t, 0, &a); /* both PSNs received */
    a.dsn_cum += 1000;     /* far past anything sent */
    cf_send(t, &a, NULL, 0);
    cf_pump(t, 10);
    cf_poll(t);
    CF_CHECK(t, !cf_find_wc(t, "send", 1) && !cf_find_wc(t, "send", 2),
             "an ACK with a dsn_cum past every DSN sent completed WRITEs");
    cf_send_ack(t, 0);
    cf_wc_is(t, cf_wait_wc(t, "send", 2, cf_ms(t, 1000)), 2, "SUCCESS");
}

/* R-ACK-6, R-VAL-1: an ACK whose SACK part is no evidence is dropped
 * whole: its good dsn_cum completes nothing. Three ways to be no
 * evidence: sack_high never sent, echo_ts not that PSN's ts, bit 0 clear
 * (naming no PROBE). */
static void ack_bogus_whole(struct cf_t *t, int how)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    ack_iut_writes(t, 1);
    struct mroce_hdr a;
    cf_ack_fill(t, 0, &a);
    const char *what;
    if (how == 0) {
        a.psn = a.sack_high = cf_iut_psn(t, 77);
        what = "a sack_high never sent";
    } else if (how == 1) {
        a.echo_ts ^= 0x00010000u;
        what = "an echo_ts that is not the PSN's ts";
    } else {
        a.sack[0] &= ~(1ull << 63); /* bit 0 (R-HDR-14) */
        what = "bit 0 clear";
    }
    cf_send(t, &a, NULL, 0);
    cf_pump(t, 10);
    cf_poll(t);
    CF_CHECK(t, !cf_find_wc(t, "send", 1),
             "an ACK with %s and a good dsn_cum completed the WRITE", what);
    cf_send_ack(t, 0);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
}

static void ack_bogus_high(struct cf_t *t)
{
    ack_bogus_whole(t, 0);
}

static void ack_bogus_echo(struct cf_t *t)
{
    ack_bogus_whole(t, 1);
}

static void ack_bogus_bit0(struct cf_t *t)
{
    ack_bogus_whole(t, 2);
}

static void ack_bogus_counted(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    ack_iut_writes(t, 1);
    int64_t before = cf_counter(t, "conn", "bad_ack");
    struct mroce_hdr a;
    cf_ack_fill(t, 0, &a);
    a.sack_high = cf_iut_psn(t, 40);
    a.dsn_cum = t->p->dsn_cum - 1;
    cf_send(t, &a, NULL, 0);
    cf_pump(t, 10);
    cf_delta(t, "conn", "bad_ack", before, 1);
}

/* R-ACK-7 step 5: CE marks only from an ACK with a newer rx_count. */
static void ack_ce_newer(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    json_t *pi = cf_path_info(t, 0);
    if (!pi)
        cf_skip(t, "the agent reports no path information");
    json_decref(pi);
    ack_iut_writes(t, 3);
    struct mroce_hdr a[3];
    struct cf_rxpath m = {.init_psn = cf_iut_psn(t, 0)};
    /* the first packet arrived unmarked, the second CE-marked: ACKs (rx 1,
     * ce 0), (rx 2, ce 1), (rx 3, ce 1), sent 2, 1, 3 */
    for (int i = 0; i < 3; i++) {
        uint32_t psn = cf_iut_psn(t, (uint32_t)i);
        cf_rx_model(&m, psn, cf_iut_ts(t, 0, psn), 2, CF_REC_DATA);
        cf_ack_fill(t, 0, &a[i]);
        a[i].psn = a[i].sack_high = m.high;
        a[i].echo_ts = m.echo;
        memcpy(a[i].sack, m.bits, sizeof(m.bits));
        a[i].dsn_cum = t->p->dsn_cum - 3 + (uint32_t)i + 1;
        a[i].rx_count = m.rx_count;
        a[i].ce_count = i ? 1 : 0;
    }
    cf_send(t, &a[1], NULL, 0); /* rx 2, ce 1: one new mark */
    cf_send(t, &a[0], NULL, 0); /* older: rx 1, must be ignored */
    cf_send(t, &a[2], NULL, 0); /* rx 3, ce 1: no new mark */
    cf_wait_wc(t, "send", 3, cf_ms(t, 1000));
    pi = cf_path_info(t, 0);
    json_int_t marks = json_integer_value(json_object_get(pi, "ecn_marks"));
    json_decref(pi);
    CF_CHECK(t, marks == 1, "%lld CE marks taken, the ACKs reported 1",
             (long long)marks);
}

/* R-ACK-8: a PROBE with RETX makes the receiver test the return route of
 * its ACKs: one PROBE without RETX on the path that carried them. */
static void ack_route_check(struct cf_t *t)
{
    cf_open(t, NULL);
    for (int i = 0; i < 8; i++)
        cf_post(t, &(struct cf_wr){
                       .op = "write", .wr_id = (uint64_t)i + 1, .len = 64});
    cf_wait_wc(t, "send", 8, cf_ms(t, 2000));
    ack_write(t, 1, MROCE_HF_ACKREQ);
    uint16_t path = 1;
    const struct cf_pkt *ak = cf_wait(t, cf_is_ack_for, &path, cf_ms(t, 1000));
    CF_REQUIRE(t, ak, "no ACK for path 1");
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_PROBE, 1);
    h.psn = cf_next_psn(t, 1);
    h.flags = MROCE_HF_ACKREQ | MROCE_HF_RETX;
    cf_send(t, &h, NULL, 0);
    const struct cf_pkt *pr = cf_wait_op(t, MROCE_OP_PROBE, cf_ms(t, 200));
    CF_REQUIRE(t, pr, "no PROBE after a PROBE with RETX");
    CF_CHECK(t, !(pr->h.flags & MROCE_HF_RETX),
             "the route-check PROBE has RETX set (probe ping-pong)");
    CF_CHECK(t, pr->sport == ak->sport,
             "the PROBE went on port %u, the last ACK for path 1 on %u",
             pr->sport, ak->sport);
}

static void ack_route_dup(struct cf_t *t)
{
    cf_open(t, NULL);
    for (int i = 0; i < 4; i++)
        cf_post(t, &(struct cf_wr){
                       .op = "write", .wr_id = (uint64_t)i + 1, .len = 64});
    cf_wait_wc(t, "send", 4, cf_ms(t, 2000));
    struct cf_msg m = {
        .op = MROCE_OP_WRITE, .len = 8, .data = "dupdup!!", .path = 2};
    cf_send_msg(t, &m);
    CF_REQUIRE(t, cf_wait_cum(t, m.first_dsn, cf_ms(t, 1000)), "no ACK");
    cf_resend(t, &m, 0, 2); /* the same DSN again, RETX */
    const struct cf_pkt *pr = cf_wait_op(t, MROCE_OP_PROBE, cf_ms(t, 200));
    CF_CHECK(t, pr && !(pr->h.flags & MROCE_HF_RETX),
             "no PROBE without RETX after a retransmitted duplicate");
}

/* R-ACK-1 (SHOULD): ACKREQ on the last packet of every message. */
static void ack_sender_ackreq(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_peer_recv(t, 0, 0, 8192);
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 3000});
    cf_post(t, &(struct cf_wr){.op = "send", .wr_id = 2, .len = 2500});
    cf_post(t,
            &(struct cf_wr){
                .op = "read", .wr_id = 3, .len = 64, .off = 8192, .roff = 64});
    cf_wait_wc(t, "send", 3, cf_ms(t, 2000));
    int last = 0;
    for (int i = 0; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        if (!cf_is_data(pk, NULL) || !pk->first)
            continue;
        bool is_last = pk->h.opcode == MROCE_OP_READ_REQ ||
                       pk->h.offset + pk->h.payload_len >= pk->h.msg_len;
        if (!is_last)
            continue;
        last++;
        CF_CHECK(t, pk->h.flags & MROCE_HF_ACKREQ,
                 "the last packet of %s MSN %u has no ACKREQ",
                 mroce_wire_op_name(pk->h.opcode), pk->h.msn);
    }
    CF_CHECK(t, last == 3, "%d last packets seen of 3 messages", last);
}

/* R-ACK-100 (SHOULD): an ACK of one path whose dsn_cum covers a DSN
 * sent on another resolves that transmission too: its path has nothing
 * left in flight, so no tail-loss probe or retransmission follows. The
 * suite announces an ack_delay just below the IUT's min_rto (slow_tlp),
 * so that a probe of the other path would come within ~2 min_rto. */
static void ack_cum_resolves(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){
                   .n_paths = 2, .min_rto_ns = 40000000, .slow_tlp = true});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 2048});
    const struct cf_pkt *a = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    const struct cf_pkt *b = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, a && b, "the IUT sent %d of 2 packets", !!a + !!b);
    if (a->h.path == b->h.path) {
        cf_note(t,
                "both packets on path %u: nothing to resolve across "
                "paths",
                a->h.path);
        return;
    }
    uint16_t other = a->h.path;
    cf_send_ack(t, b->h.path); /* dsn_cum covers both DSNs */
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
    int from = t->p->n_log;
    cf_pump(t, (int)(4 * t->iut.params.min_rto_ns / 1000000));
    for (int i = from; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        CF_CHECK(t,
                 pk->derr ||
                     (pk->h.opcode != MROCE_OP_PROBE && !cf_is_data(pk, NULL)),
                 "%s on path %u after dsn_cum acknowledged path %u's only "
                 "packet: its transmission was left unresolved",
                 mroce_wire_op_name(pk->h.opcode), pk->h.path, other);
    }
}

/* The most data packets in flight in 3 ms under a 1 Mbit/s hint (as
 * cc.hint_cap) toward a suite that announces ack_every my_every. */
static int ack_slack_burst(struct cf_t *t, uint32_t my_every)
{
    int most = cf_held_burst(t, my_every);
    cf_close(t);
    return most;
}

/* R-ACK-101 (SHOULD): a peer that announces ack_every 16 may hold 15
 * packets' ACKs, so a window R-CC-3 caps near one mtu leaves room for 15
 * more full packets than toward a peer that acknowledges every packet. */
static void ack_window_slack(struct cf_t *t)
{
    int one = ack_slack_burst(t, 1);
    int held = ack_slack_burst(t, 16);
    cf_note(t, "%d packets in flight toward ack_every 16, %d toward 1", held,
            one);
    CF_CHECK(t, one > 0 && held >= one + 12,
             "%d data packets in flight at once under a 1 Mbit/s hint toward "
             "a peer announcing ack_every 16, %d toward ack_every 1: expected "
             "~15 more",
             held, one);
}

const struct cf_test cf_t_ack[] = {
    CF_TEST("ack.now.ackreq", "6.2", "R-ACK-1", MUST,
            "ACKREQ acknowledged at once", ack_now_ackreq),
    CF_TEST("ack.now.gap", "6.2", "R-ACK-1 R-SACK-5", MUST,
            "a gap acknowledged at once", ack_now_gap),
    CF_TEST("ack.now.late", "6.2", "R-ACK-1 R-SACK-5", MUST,
            "a late arrival acknowledged at once", ack_now_late),
    CF_TEST("ack.dup_recorded", "6.2", "R-DSN-5 R-SACK-6 R-ACK-1", MUST,
            "a duplicate DSN recorded and acknowledged", ack_dup_recorded),
    CF_TEST("ack.every", "6.2", "R-ACK-1", MUST,
            "an ACK every ack_every packets", ack_every_n),
    CF_TEST("ack.delay", "6.2", "R-ACK-1", MUST, "an ACK within ack_delay",
            ack_delay),
    CF_TEST("ack.recorded_paths", "6.2", "R-ACK-5", MUST,
            "no ACK for a path with nothing recorded", ack_only_recorded_paths),
    CF_TEST("ack.src_ports", "6.2", "R-ACK-3", MUST,
            "ACKs leave from the IUT's own paths' ports", ack_src_ports),
    CF_TEST("ack.rotation", "6.2", "R-ACK-3", SHOULD,
            "ACKs rotate over the ACTIVE paths", ack_rotation),
    CF_TEST("ack.reordered", "6.2", "R-ACK-4 R-ORD-7", MUST,
            "ACKs reversed and doubled: exact completions, no resend",
            ack_reordered),
    CF_TEST("ack.old_after_new", "6.2", "R-ACK-4 R-LOSS-1", MUST,
            "an old ACK after a new one changes nothing", ack_old_after_new),
    CF_TEST("ack.bogus.sack", "6.2", "R-ACK-6", MUST,
            "a SACK for PSNs never sent is ignored", ack_bogus_sack),
    CF_TEST("ack.bogus.dsn_cum", "6.2", "R-ACK-6 R-VAL-1 R-DSN-8", MUST,
            "a dsn_cum past snd_nxt: the ACK is dropped whole", ack_bogus_cum),
    CF_TEST("ack.bogus.whole.high", "10.4", "R-ACK-6 R-VAL-1", MUST,
            "sack_high never sent: a good dsn_cum completes nothing",
            ack_bogus_high),
    CF_TEST("ack.bogus.whole.echo", "10.4", "R-ACK-6 R-VAL-1 R-HDR-10", MUST,
            "echo_ts not the PSN's ts: the ACK is dropped whole",
            ack_bogus_echo),
    CF_TEST("ack.bogus.whole.bit0", "10.4", "R-ACK-6 R-VAL-1 R-HDR-14", MUST,
            "bit 0 clear, no PROBE named: the ACK is dropped whole",
            ack_bogus_bit0),
    CF_TEST("ack.bogus.counted", "6.2", "R-ACK-6 R-RX-5", SHOULD,
            "an ACK with a bogus part counted bad_ack", ack_bogus_counted),
    CF_TEST("ack.ce_newer_only", "6.2", "R-ACK-7", MUST,
            "CE marks only from an ACK with a newer rx_count", ack_ce_newer),
    CF_TEST("ack.route_check.probe", "6.2", "R-ACK-8 R-PATH-8", SHOULD,
            "a RETX PROBE makes the receiver probe its ACK route",
            ack_route_check),
    CF_TEST("ack.route_check.dup", "6.2", "R-ACK-8", SHOULD,
            "a RETX duplicate makes the receiver probe its ACK route",
            ack_route_dup),
    CF_TEST("ack.sender_ackreq", "6.2", "R-ACK-1", SHOULD,
            "ACKREQ on the last packet of each message", ack_sender_ackreq),
    CF_TEST("ack.cum_resolves", "6.2", "R-ACK-100 R-DSN-8", SHOULD,
            "dsn_cum resolves a DSN's only copy on another path",
            ack_cum_resolves),
    CF_TEST("ack.window_slack", "6.2", "R-ACK-101 R-CC-3", SHOULD,
            "the window leaves room for the ACKs the peer may hold",
            ack_window_slack),
    {0},
};
