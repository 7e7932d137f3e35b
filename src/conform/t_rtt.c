/* Section 6.5: RTT samples, the estimator, the RTO and its timer, and the
 * tail-loss probe. The estimator is internal, but its effect on the RTO
 * is what the agent's path information shows (capability path.info).
 * An ACK must echo the exact ts of the packet it names (R-VAL-1), so the
 * suite sets the RTT it wants by holding its ACK: a sample is now -
 * echo_ts (R-RTT-1). Each hold stays below the IUT's timers (initial_rto
 * = 5 x min_rto before the first sample; 3 R and the PTO after it) so
 * that no timer fires meanwhile. */
#include <string.h>

#include "conform/cf.h"

static json_int_t rtt_info(struct cf_t *t, const char *field)
{
    json_t *pi = cf_path_info(t, 0);
    if (!pi)
        cf_skip(t, "the agent reports no path information");
    json_int_t v = json_integer_value(json_object_get(pi, field));
    json_decref(pi);
    return v;
}

/* The IUT sends one WRITE on its only path; the suite acknowledges it
 * hold_ns after it arrived, echoing its ts exactly. */
static void rtt_one(struct cf_t *t, uint64_t wr, uint64_t hold_ns)
{
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = wr, .len = 64});
    const struct cf_pkt *pk = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, pk, "no WRITE from the IUT");
    uint64_t due = pk->t + hold_ns;
    int from = t->p->n_log;
    /* the clock is read once per step: read twice, a step that began just
     * before due computed due - now < 0, an infinite poll, and the ACK
     * waited for the IUT's next timer */
    for (uint64_t now; (now = cf_now()) < due;)
        cf_next(t, (int)((due - now) / 1000000));
    /* a hold that overran the IUT's RTO (the suite descheduled) would
     * make the ACK name the RTO's PROBE: say so rather than blame the
     * IUT's estimator */
    CF_REQUIRE(t, !cf_count(t, from, MROCE_OP_PROBE),
               "the IUT timed out while the suite held its ACK %.1f ms (%.1f "
               "planned): the host is too busy for this test",
               (double)(cf_now() - pk->t) / 1e6, (double)hold_ns / 1e6);
    struct mroce_hdr a;
    cf_ack_fill(t, 0, &a);
    cf_send(t, &a, NULL, 0);
    CF_REQUIRE(t, cf_wait_wc(t, "send", wr, cf_ms(t, 1000)),
               "no completion for wr %llu", (unsigned long long)wr);
}

/* R-RTT-3, R-RTT-4: first sample R: SRTT R, RTTVAR R/2, RTO 3R. */
static void rtt_first_sample(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1, .min_rto_ns = 8000000});
    rtt_one(t, 1, 12000000); /* initial_rto 40 ms */
    json_int_t srtt = rtt_info(t, "srtt_ns"), rto = rtt_info(t, "rto_ns");
    /* the sample also holds both ways' delays, a few ms on a busy host; and
     * an IUT that reads its clock before it reads a burst of packets may
     * time an ACK early by as long as it was descheduled in between */
    CF_CHECK(t,
             srtt >= 12000000 - 2000000 * t->scale &&
                 srtt < 12000000 + 8000000 * t->scale,
             "SRTT %.2f ms after one sample of ~12 ms", srtt / 1e6);
    CF_CHECK(t, rto > 2.9 * srtt && rto < 3.1 * srtt + 10000,
             "RTO %.2f ms, SRTT %.2f ms: expected SRTT + 4 x SRTT/2", rto / 1e6,
             srtt / 1e6);
}

/* R-RTT-3: the second sample moves SRTT by 1/8, RTTVAR as RFC 6298. */
static void rtt_second_sample(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){
                   .n_paths = 1, .min_rto_ns = 8000000, .slow_tlp = true});
    rtt_one(t, 1, 12000000); /* initial_rto 40 ms */
    double s1 = (double)rtt_info(t, "srtt_ns");
    rtt_one(t, 2, 18000000); /* RTO ~36 ms, PTO ~31 ms */
    double s2 = (double)rtt_info(t, "srtt_ns");
    double r2 = 18e6; /* plus the suite's own delay, small */
    double want = 7.0 / 8 * s1 + 1.0 / 8 * r2;
    CF_CHECK(t, s2 > want - 1e6 * t->scale && s2 < want + 1.5e6 * t->scale,
             "SRTT %.2f ms after samples %.2f and ~18 ms, expected %.2f ms",
             s2 / 1e6, s1 / 1e6, want / 1e6);
    double var = 3.0 / 4 * (s1 / 2) + 1.0 / 4 * (r2 - s1);
    double rto = (double)rtt_info(t, "rto_ns");
    CF_CHECK(t, rto > s2 + 4 * var - 1e6 && rto < s2 + 4 * var + 6e6 * t->scale,
             "RTO %.2f ms, expected SRTT + 4 RTTVAR = %.2f ms", rto / 1e6,
             (s2 + 4 * var) / 1e6);
}

/* R-RTT-4: the RTO stays within [min_rto, max_rto]. */
static void rtt_bounds(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1,
                                 .min_rto_ns = 6000000, /* initial 30 ms */
                                 .max_rto_ns = 30000000});
    rtt_one(t, 1, 15000000); /* 3 R = 45 ms */
    json_int_t rto = rtt_info(t, "rto_ns");
    CF_CHECK(t, rto == 30000000,
             "RTO %.2f ms after a 15 ms sample, max_rto "
             "30 ms",
             rto / 1e6);
}

static void rtt_min_bound(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1, .min_rto_ns = 8000000});
    rtt_one(t, 1, 0);
    json_int_t rto = rtt_info(t, "rto_ns");
    CF_CHECK(t, rto == 8000000,
             "RTO %.2f ms after a tiny sample, min_rto 8 "
             "ms",
             rto / 1e6);
}

/* R-RTT-1, R-VAL-1: an echo from the future is no sample (and, not being
 * the packet's ts, no evidence either). */
static void rtt_bogus_echo(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    CF_REQUIRE(t, cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000)),
               "no WRITE from the IUT");
    struct mroce_hdr a;
    cf_ack_fill(t, 0, &a);
    a.echo_ts -= 0x80000000u + 5000;
    cf_send(t, &a, NULL, 0);
    cf_pump(t, 5);
    CF_CHECK(t, rtt_info(t, "srtt_ns") == 0,
             "an echo_ts from the future was taken as a sample (SRTT %.2f ms)",
             rtt_info(t, "srtt_ns") / 1e6);
    cf_send_ack(t, 0);
    cf_wait_wc(t, "send", 1, cf_ms(t, 1000));
}

/* R-RTT-2: only an ACK that newly resolves sack_high gives a sample: the
 * same ACK again 20 ms later changes nothing. */
static void rtt_only_new_high(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1, .min_rto_ns = 1000000});
    rtt_one(t, 1, 3000000);
    json_int_t s1 = rtt_info(t, "srtt_ns");
    struct mroce_hdr a;
    cf_ack_fill(t, 0, &a);
    cf_pump(t, 20);
    cf_send(t, &a, NULL, 0);
    cf_pump(t, 5);
    json_int_t s2 = rtt_info(t, "srtt_ns");
    CF_CHECK(t, s2 == s1,
             "SRTT moved from %.2f to %.2f ms on an ACK that "
             "resolved nothing new",
             s1 / 1e6, s2 / 1e6);
}

/* R-RTT-4, R-RTT-6: before any sample, a lost packet waits initial_rto;
 * then the path is re-pathed and probed. */
static void rtt_initial_rto(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1, .min_rto_ns = 10000000});
    struct cf_drop_dsn d = {.dsn = cf_iut_dsn(t, 0), .times = 1};
    t->p->drop = cf_drop_dsn_fn;
    t->p->drop_ud = &d;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    const struct cf_pkt *o = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, o, "no WRITE");
    const struct cf_pkt *pr = cf_wait_op(t, MROCE_OP_PROBE, cf_ms(t, 1000));
    CF_REQUIRE(t, pr, "no PROBE after the lost WRITE");
    double ms = cf_ts_ms(o, pr); /* the IUT's own clock */
    double rto = (double)t->iut.timers.initial_rto_ns / 1e6;
    CF_CHECK(t, ms > rto * 0.99 && ms < rto * 1.5 + 10 * t->scale,
             "the RTO fired after %.1f ms, initial RTO %.0f ms", ms, rto);
    CF_CHECK(t, pr->h.flags & MROCE_HF_RETX,
             "the PROBE after the RTO has flags 0x%x, RETX clear", pr->h.flags);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
}

/* R-RTT-7 (SHOULD): a silent path gets a tail-loss probe well before its
 * RTO; its data goes again on another path. */
static void rtt_tlp(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 2, .min_rto_ns = 40000000});
    for (int i = 0; i < 4; i++)
        cf_post(t, &(struct cf_wr){
                       .op = "write", .wr_id = (uint64_t)i + 1, .len = 64});
    cf_wait_wc(t, "send", 4, cf_ms(t, 1000)); /* RTT samples now */
    uint32_t dsn = cf_iut_dsn(t, 4);
    struct cf_drop_dsn d = {.dsn = dsn, .times = 1};
    t->p->drop = cf_drop_dsn_fn;
    t->p->drop_ud = &d;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 5, .len = 64});
    cf_wc_is(t, cf_wait_wc(t, "send", 5, cf_ms(t, 1000)), 5, "SUCCESS");
    const struct cf_pkt *o = cf_nth_tx(t, dsn, 0), *r = cf_nth_tx(t, dsn, 1);
    CF_REQUIRE(t, o && r, "DSN %u was not sent again", dsn);
    double ms = (double)(r->t - o->t) / 1e6;
    CF_CHECK(t, ms < 20,
             "the lone lost packet was resent after %.1f ms (RTO "
             "40 ms): no tail-loss probe",
             ms);
    CF_CHECK(t, r->h.path != o->h.path, "resent on the silent path %u",
             o->h.path);
}

const struct cf_test cf_t_rtt[] = {
    CF_TEST("rtt.first_sample", "6.5", "R-RTT-1 R-RTT-3 R-RTT-4", MUST,
            "first sample: SRTT = R, RTO = 3 R", rtt_first_sample),
    CF_TEST("rtt.second_sample", "6.5", "R-RTT-3 R-RTT-4", MUST,
            "second sample: RFC 6298 smoothing", rtt_second_sample),
    CF_TEST("rtt.max_rto", "6.5", "R-RTT-4", MUST, "RTO at most max_rto",
            rtt_bounds),
    CF_TEST("rtt.min_rto", "6.5", "R-RTT-4", MUST, "RTO at least min_rto",
            rtt_min_bound),
    CF_TEST("rtt.bogus_echo", "6.5", "R-RTT-1 R-VAL-1", MUST,
            "an echo_ts from the future is no sample", rtt_bogus_echo),
    CF_TEST("rtt.only_new_high", "6.5", "R-RTT-2", MUST,
            "no sample from an ACK that resolves nothing new",
            rtt_only_new_high),
    CF_TEST("rtt.initial_rto", "6.5", "R-RTT-4 R-RTT-5 R-RTT-6 R-PATH-6", MUST,
            "before a sample: RTO = initial_rto, re-path, PROBE",
            rtt_initial_rto),
    CF_TEST("rtt.tlp", "6.5", "R-RTT-7 R-LOSS-4", SHOULD,
            "a lone lost packet found by a tail-loss probe", rtt_tlp),
    {0},
};
