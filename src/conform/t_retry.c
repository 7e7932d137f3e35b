/* Section 6.6: retry limits (timeout rounds, 64 transmissions per DSN),
 * receiver-not-ready on both sides, liveness, the READ watchdog. */
#include <string.h>

#include "conform/cf.h"

static bool retry_drop_all(struct cf_t *t, const struct cf_pkt *pk, void *ud)
{
    (void)t;
    (void)pk;
    (void)ud;
    return true;
}

/* R-RETRY-1: a silent peer ends the connection after retry_cnt + 1
 * timeout rounds: R x (2^(retry_cnt + 1) - 1) with R the initial RTO. */
static void retry_rounds(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){
                   .n_paths = 1, .retry_cnt = 2, .min_rto_ns = 4000000});
    t->p->drop = retry_drop_all;
    cf_post(t, &(struct cf_wr){.op = "recv", .wr_id = 9, .len = 64});
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 2, .len = 64});
    const struct cf_pkt *first = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, first, "no WRITE");
    const struct cf_wc *w = cf_wait_wc(t, "send", 1, cf_ms(t, 3000));
    cf_wc_is(t, w, 1, "RETRY_EXC_ERR");
    if (w) {
        double r = (double)t->iut.timers.initial_rto_ns / 1e6;
        double want = r * 7, got = (double)(w->t - first->t) / 1e6;
        CF_CHECK(t, got > want * 0.8 && got < want * 1.5 + 30 * t->scale,
                 "gave up after %.1f ms, expected %.0f ms (R %.0f ms, "
                 "retry_cnt 2)",
                 got, want, r);
    }
    cf_wc_is(t, cf_wait_wc(t, "send", 2, cf_ms(t, 1000)), 2, "FLUSH_ERR");
    cf_wc_is(t, cf_wait_wc(t, "recv", 9, cf_ms(t, 1000)), 9, "FLUSH_ERR");
    cf_state_is(t, "ERROR");
}

/* R-RETRY-1 item 2: no DSN more than 64 times; then RETRY_EXC_ERR. The
 * suite answers everything but DSN 0: each PROBE's answer resolves the
 * PROBE (R-VAL-4), so backoff stays low and only the cap can end it. The
 * PROBEs follow a lost packet, so they are not recorded (R-VAL-2) and
 * give no RTT sample: each round lasts about 2 x initial_rto (5 ms). */
static void retry_tx_cap(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 2, .min_rto_ns = 1000000});
    struct cf_drop_dsn d = {.dsn = cf_iut_dsn(t, 0), .times = 1000};
    t->p->drop = cf_drop_dsn_fn;
    t->p->drop_ud = &d;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    const struct cf_wc *w = cf_wait_wc(t, "send", 1, cf_ms(t, 8000));
    cf_wc_is(t, w, 1, "RETRY_EXC_ERR");
    int n = cf_count_dsn(t, d.dsn);
    CF_CHECK(t, n <= 64, "DSN 0 sent %d times, at most 64 allowed", n);
    CF_CHECK(t, n >= 60, "gave up after %d transmissions of 64", n);
}

/* R-RETRY-4: after RNR with info X us, no resend before X us. */
static void retry_rnr_wait(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 2});
    t->p->rnr_info = 30000; /* 30 ms */
    cf_post(t, &(struct cf_wr){.op = "send", .wr_id = 1, .len = 64});
    const struct cf_pkt *o = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, o, "no SEND");
    const struct cf_pkt *r = cf_wait(t, cf_is_data, NULL, cf_ms(t, 500));
    CF_REQUIRE(t, r, "the SEND was not retried after the RNR");
    double ms = cf_ts_ms(o, r); /* the IUT's own clock */
    CF_CHECK(t, ms >= 30, "retried %.2f ms after RNR info 30000 us", ms);
    CF_CHECK(t, ms < 30 + 30 * t->scale, "retried only after %.1f ms", ms);
    CF_CHECK(t,
             r->h.dsn == o->h.dsn && (r->h.flags & MROCE_HF_RETX) &&
                 (r->h.path != o->h.path || r->h.psn != o->h.psn),
             "the RNR retry is not the same DSN with RETX on a new PSN");
}

static void retry_rnr_then_ok(struct cf_t *t)
{
    cf_open(t, NULL);
    t->p->rnr_info = 500;
    cf_post(t,
            &(struct cf_wr){.op = "send_imm", .wr_id = 1, .len = 64, .imm = 5});
    int nacks = 0;
    for (int i = 0; i < 12; i++)
        nacks += cf_wait(t, cf_is_data, NULL, cf_ms(t, 500)) != NULL;
    CF_CHECK(t, nacks == 12,
             "%d tries of a SEND refused with RNR, expected "
             "12 (rnr_retry 7: no limit)",
             nacks);
    cf_peer_recv(t, 0, 0, 64);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
}

/* R-RETRY-4: an RNR asking 0xFFFFFFFF us (71 minutes) waits max_rto. */
static void retry_rnr_capped(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 2, .max_rto_ns = 30000000});
    t->p->rnr_info = 0xFFFFFFFFu;
    cf_post(t, &(struct cf_wr){.op = "send", .wr_id = 1, .len = 64});
    const struct cf_pkt *o = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, o, "no SEND");
    const struct cf_pkt *r = cf_wait(t, cf_is_data, NULL, cf_ms(t, 500));
    CF_REQUIRE(t, r,
               "no retry within 500 ms of an RNR asking 71 minutes "
               "(max_rto 30 ms)");
    double ms = cf_ts_ms(o, r); /* the IUT's own clock */
    CF_CHECK(t, ms >= 30 * 0.95 && ms < 30 * 1.3 + 10 * t->scale,
             "retried %.1f ms after an RNR asking 71 minutes, max_rto 30 ms",
             ms);
}

static void retry_rnr_capped_counted(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 2, .max_rto_ns = 20000000});
    int64_t before = cf_counter(t, "conn", "rnr_capped");
    t->p->rnr_info = 0xFFFFFFFFu;
    cf_post(t, &(struct cf_wr){.op = "send", .wr_id = 1, .len = 64});
    CF_REQUIRE(t, cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000)), "no SEND");
    cf_pump(t, 5);
    cf_delta(t, "conn", "rnr_capped", before, 1);
}

/* R-RETRY-1 item 2, R-RETRY-4: transmissions answered by RNR do not count
 * toward the cap of 64: a SEND refused 80 times still completes. */
static void retry_rnr_uncounted(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 2});
    t->p->rnr_info = 50;
    cf_post(t, &(struct cf_wr){.op = "send", .wr_id = 1, .len = 64});
    int tries = 0;
    while (tries < 80 && cf_wait(t, cf_is_data, NULL, cf_ms(t, 500)))
        tries++;
    CF_REQUIRE(t, tries == 80,
               "the SEND was tried %d times, then no more "
               "(RNR answers do not count toward 64)",
               tries);
    cf_peer_recv(t, 0, 0, 64);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
}

/* Three RNR rounds, then RNR_RETRY_EXC_ERR. A round may carry two
 * copies of the DSN (R-LOSS-7's tail rule), so rounds are counted: the
 * SEND's transmissions, grouped by the RNR wait between them. */
static void retry_rnr_limit(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.rnr_retry = 2});
    t->p->rnr_info = 5000;
    cf_post(t, &(struct cf_wr){.op = "send", .wr_id = 1, .len = 64});
    cf_post(t,
            &(struct cf_wr){.op = "write", .wr_id = 2, .stream = 1, .len = 64});
    const struct cf_wc *w = cf_wait_wc(t, "send", 1, cf_ms(t, 1000));
    cf_wc_is(t, w, 1, "RNR_RETRY_EXC_ERR");
    int rounds = 0;
    uint64_t last = 0;
    for (int i = 0; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        if (!cf_is_data(pk, NULL) || pk->h.opcode != MROCE_OP_SEND)
            continue;
        rounds += !last || pk->t - last > 2500000;
        last = pk->t;
    }
    CF_CHECK(t, rounds == 3,
             "the SEND was tried in %d rounds with rnr_retry "
             "2, expected 3",
             rounds);
    cf_state_is(t, "ERROR");
}

/* R-RETRY-3, R-RETRY-4: info 0 means the sender's own default. */
static void retry_rnr_info0(struct cf_t *t)
{
    cf_open(t, NULL);
    t->p->rnr_info = 0;
    cf_post(t, &(struct cf_wr){.op = "send", .wr_id = 1, .len = 64});
    CF_REQUIRE(t, cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000)), "no SEND");
    CF_CHECK(t, cf_wait(t, cf_is_data, NULL, cf_ms(t, 500)) != NULL,
             "no retry after an RNR with info 0");
    cf_peer_recv(t, 0, 0, 64);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
}

/* R-RETRY-3: the IUT as receiver: NACK RNR with a delay, nothing kept. */
static void retry_rnr_receiver(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_msg m = {.op = MROCE_OP_WRITE_IMM,
                       .len = 16,
                       .roff = 0x900,
                       .data = "rnr-write-imm-16",
                       .imm = 3};
    uint8_t before[16], after[16];
    cf_iut_read(t, 0x900, before, sizeof(before));
    cf_send_msg(t, &m);
    const struct cf_pkt *n = cf_wait_nack(t, cf_ms(t, 1000));
    cf_nack_is(t, n, MROCE_NAK_RNR, "a WRITE_IMM with no receive");
    if (n)
        CF_CHECK(t, n->h.nak_info > 0, "RNR with a delay of 0 us");
    cf_iut_read(t, 0x900, after, sizeof(after));
    CF_CHECK(t, !memcmp(before, after, sizeof(after)),
             "a WRITE_IMM refused with RNR was placed");
    cf_state_is(t, "CONNECTED");
}

/* R-RETRY-5: under total silence every outstanding WR completes. */
static void retry_liveness(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.retry_cnt = 1, .min_rto_ns = 4000000});
    t->p->drop = retry_drop_all;
    cf_post(t, &(struct cf_wr){.op = "recv", .wr_id = 20, .len = 64});
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 4096});
    cf_post(t,
            &(struct cf_wr){
                .op = "read", .wr_id = 2, .stream = 1, .len = 64, .off = 8192});
    cf_post(t, &(struct cf_wr){.op = "send", .wr_id = 3, .len = 64});
    for (uint64_t w = 1; w <= 3; w++)
        CF_CHECK(t, cf_wait_wc(t, "send", w, cf_ms(t, 3000)) != NULL,
                 "wr %llu never completed with the peer silent",
                 (unsigned long long)w);
    CF_CHECK(t, cf_wait_wc(t, "recv", 20, cf_ms(t, 1000)) != NULL,
             "the posted receive never completed");
}

/* R-RETRY-6: while a READ waits for data, the requester checks the
 * peer at least every two RTOs. */
static void retry_read_watchdog(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1, .min_rto_ns = 4000000});
    t->p->auto_read = false;
    cf_post(t, &(struct cf_wr){.op = "read", .wr_id = 1, .len = 64});
    const struct cf_pkt *rq = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, rq, "no READ_REQ");
    const struct cf_pkt *pr = cf_wait_op(t, MROCE_OP_PROBE, cf_ms(t, 1000));
    CF_REQUIRE(t, pr, "no PROBE while a READ waited for its data");
    double ms = (double)(pr->t - rq->t) / 1e6;
    double lim = 2 * (double)t->iut.timers.initial_rto_ns / 1e6;
    CF_CHECK(t, ms < lim * 1.3 + 10 * t->scale,
             "the first PROBE came %.1f ms after the READ_REQ (2 RTO = %.0f)",
             ms, lim);
}

/* R-RETRY-2: PROBEs that are never answered end the connection too. */
static void retry_probes_end(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){
                   .n_paths = 2, .retry_cnt = 1, .min_rto_ns = 4000000});
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    cf_wait_wc(t, "send", 1, cf_ms(t, 1000));
    t->p->drop = retry_drop_all;
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_PROBE, 0);
    h.psn = cf_next_psn(t, 0);
    h.flags = MROCE_HF_ACKREQ | MROCE_HF_RETX; /* route check: a PROBE */
    cf_send(t, &h, NULL, 0);
    CF_REQUIRE(t, cf_wait_op(t, MROCE_OP_PROBE, cf_ms(t, 500)),
               "no route-check PROBE (R-ACK-8) to leave unanswered");
    char st[32] = "";
    for (int i = 0;
         i < 100 && cf_state(t, st, sizeof(st)) && !strcmp(st, "CONNECTED");
         i++)
        cf_pump(t, 10);
    CF_CHECK(t, !strcmp(st, "ERROR"),
             "a connection whose PROBEs are never answered is still %s", st);
}

const struct cf_test cf_t_retry[] = {
    CF_TEST("retry.rounds", "6.6", "R-RETRY-1 R-RTT-4 R-CONN-12", MUST,
            "a silent peer: RETRY_EXC_ERR after the timeout rounds",
            retry_rounds),
    CF_TEST("retry.tx_cap", "6.6", "R-RETRY-1", MUST,
            "at most 64 transmissions of a DSN", retry_tx_cap),
    CF_TEST("retry.rnr.wait", "6.6", "R-RETRY-4 R-LOSS-3", MUST,
            "an RNR retry waits info microseconds", retry_rnr_wait),
    CF_TEST("retry.rnr.unlimited", "6.6", "R-RETRY-4", MUST,
            "rnr_retry 7: no limit", retry_rnr_then_ok),
    CF_TEST("retry.rnr.capped", "6.6", "R-RETRY-4", MUST,
            "an RNR delay longer than max_rto waits max_rto", retry_rnr_capped),
    CF_TEST("retry.rnr.capped.counted", "6.6", "R-RETRY-4 R-RX-5", SHOULD,
            "... counted rnr_capped", retry_rnr_capped_counted),
    CF_TEST("retry.rnr.uncounted", "6.6", "R-RETRY-1 R-RETRY-4", MUST,
            "80 RNR answers do not reach the cap of 64 transmissions",
            retry_rnr_uncounted),
    CF_TEST("retry.rnr.limit", "6.6", "R-RETRY-4 R-CONN-12", MUST,
            "rnr_retry 2: RNR_RETRY_EXC_ERR on the third RNR", retry_rnr_limit),
    CF_TEST("retry.rnr.info0", "6.6", "R-RETRY-4", MUST,
            "RNR info 0: retried after the sender's default", retry_rnr_info0),
    CF_TEST("retry.rnr.receiver", "6.6", "R-RETRY-3 R-MSG-8", MUST,
            "no receive: NACK RNR with a delay, nothing placed",
            retry_rnr_receiver),
    CF_TEST("retry.liveness", "6.6", "R-RETRY-5 R-RETRY-1", MUST,
            "every WR completes when the peer falls silent", retry_liveness),
    CF_TEST("retry.read_watchdog", "6.6", "R-RETRY-6", MUST,
            "a READ waiting for data probes the peer", retry_read_watchdog),
    CF_TEST("retry.probes_end", "6.6", "R-RETRY-2 R-PATH-8", MUST,
            "unanswered PROBEs end the connection", retry_probes_end),
    {0},
};
