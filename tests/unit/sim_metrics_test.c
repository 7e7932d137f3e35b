/* The experiment runner's health, fairness, time-series and recovery
 * metrics (src/sim/exp_meter.c, exp_metrics.c; docs/sim.md), each
 * checked on a small fabric where its value is known, plus the
 * all-gather workload and plane faults. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <mroce/mroce.h>

#include "sim/event.h"
#include "sim/exp.h"

#define US MROCE_SIM_PS_PER_US

static struct mroce_sim_exp_cfg flows(int transport, int hosts, int hpl,
                                      int spines)
{
    struct mroce_sim_exp_cfg c = {
        .transport = transport,
        .hosts = hosts,
        .hosts_per_leaf = hpl,
        .spines = spines,
        .size = 1024 * 1024,
        .seed = 3,
    };
    return c;
}

/* A permutation of 256 KiB flows over 8 hosts (4 per leaf, 4 spines) at
 * the given random loss; RoCEv2's timeout short enough to recover. */
static struct mroce_sim_exp_cfg perm8(int transport, double loss)
{
    struct mroce_sim_exp_cfg c = flows(transport, 8, 4, 4);
    c.workload = MROCE_SIM_EXP_PERMUTATION;
    c.size = 256 * 1024;
    c.loss = loss;
    if (loss > 0)
        c.rocev2_timeout = 6;
    return c;
}

static void run(const struct mroce_sim_exp_cfg *c,
                struct mroce_sim_exp_result *r)
{
    int err = mroce_sim_exp_run(c, r);
    if (err)
        fprintf(stderr, "sim_metrics: %s\n", r->error);
    assert_int_equal(err, 0);
}

static double placed_from_samples(const struct mroce_sim_exp_result *r)
{
    double bytes = 0;
    uint64_t prev = 0;
    for (int i = 0; i < r->n_samples; i++) {
        bytes += r->samples[i].gbps * (double)(r->samples[i].t_ps - prev) / 8e3;
        prev = r->samples[i].t_ps;
    }
    return bytes;
}

/* Lossless, alone on the fabric: no retransmission, no reordering, no
 * queue anywhere (equal rates, store and forward), so no ECN mark; the
 * samples add up to the bytes placed, which are the flow's bytes once;
 * no fault, no victim, one flow: Jain 1. */
static void test_single_flow_clean(void **state)
{
    (void)state;
    int tr[] = {MROCE_TRANSPORT_METAROCE, MROCE_TRANSPORT_ROCEV2};
    for (int i = 0; i < 2; i++) {
        struct mroce_sim_exp_cfg c = flows(tr[i], 4, 2, 2);
        struct mroce_sim_exp_result r;
        run(&c, &r);
        assert_int_equal(r.flows_completed, 1);
        assert_true(r.retx_rate == 0 && r.ooo_rate == 0);
        assert_true(r.ecn_fraction == 0 && r.p95_qbytes == 0);
        assert_int_equal(r.rx_data_pkts, r.data_pkts);
        assert_int_equal(r.placed_bytes, c.size);
        assert_true(fabs(placed_from_samples(&r) - (double)c.size) < 1.0);
        assert_true(r.jain == 1.0);
        assert_true(r.victim_fraction == -1.0);
        assert_true(r.converge_rtts == -1.0); /* not an incast */
        assert_true(r.recovery_ps == 0 && r.fault_ps == 0);
        assert_true(r.n_samples > 20); /* 1 us samples of a ~26 us flow */
        mroce_sim_exp_result_free(&r);
    }
}

/* Random loss: every byte still counts once (retransmissions of
 * MetaRoCE, go-back-N discards of RoCEv2 are not placed twice or at
 * all), and retx_rate is the senders' count over their data packets. */
static void test_loss_counts_once(void **state)
{
    (void)state;
    int tr[] = {MROCE_TRANSPORT_METAROCE, MROCE_TRANSPORT_ROCEV2};
    for (int i = 0; i < 2; i++) {
        struct mroce_sim_exp_cfg c = perm8(tr[i], 0.01);
        struct mroce_sim_exp_result r;
        run(&c, &r);
        assert_int_equal(r.flows_completed, 8);
        assert_int_equal(r.placed_bytes, 8 * c.size);
        assert_true(fabs(placed_from_samples(&r) - 8.0 * c.size) < 8.0);
        assert_true(r.retx_pkts > 0);
        assert_true(r.retx_rate == (double)r.retx_pkts / r.data_pkts);
        assert_true(r.ooo_rate > 0 && r.ooo_rate < 1);
        assert_true(r.rx_data_pkts < r.data_pkts); /* 1% were lost */
        mroce_sim_exp_result_free(&r);
    }
}

static uint64_t conn_drops(const struct mroce_conn_counters *c)
{
    return c->drop_bad_path + c->drop_dsn_window + c->drop_msn_window +
           c->drop_bad_key + c->drop_bad_bounds + c->drop_bad_access +
           c->drop_bad_msg + c->drop_state + c->drop_stale + c->drop_bad_ack +
           c->drop_psn_window + c->drop_bad_close + c->drop_ooo +
           c->drop_bad_tag + c->drop_replay + c->drop_sec_mode;
}

/* The endpoints' counters in the result (exp_counters.c): lossless, every
 * packet sent is received, by the connections and by the contexts, and
 * nothing is dropped; the data packets are the run's. At 1% loss the
 * MetaRoCE loss rules are the ones the run reports by rule, and RoCEv2's
 * go-back-N discards show as drop_ooo (what a broken endpoint's drops
 * would look like). */
static void test_endpoint_counters(void **state)
{
    (void)state;
    int tr[] = {MROCE_TRANSPORT_METAROCE, MROCE_TRANSPORT_ROCEV2};
    for (int i = 0; i < 2; i++) {
        struct mroce_sim_exp_cfg c = perm8(tr[i], 0);
        struct mroce_sim_exp_result r;
        run(&c, &r);
        const struct mroce_conn_counters *k = &r.conn_cnt;
        assert_int_equal(k->tx_data_pkts, r.data_pkts);
        assert_int_equal(k->rx_data_pkts, r.rx_data_pkts);
        assert_int_equal(k->tx_pkts, k->rx_pkts);
        assert_int_equal(k->tx_acks, k->rx_acks);
        assert_true(k->tx_acks > 0);
        assert_int_equal(r.ctx_cnt.tx_pkts, k->tx_pkts);
        assert_int_equal(r.ctx_cnt.rx_pkts, k->rx_pkts);
        assert_int_equal(k->msgs_tx, k->msgs_rx);
        assert_int_equal(conn_drops(k), 0);
        mroce_sim_exp_result_free(&r);

        c = perm8(tr[i], 0.01);
        run(&c, &r);
        k = &r.conn_cnt;
        assert_true(k->rx_pkts < k->tx_pkts);
        assert_int_equal(k->lost_sack + k->lost_rack + k->lost_pto +
                             k->lost_rto + k->lost_rnr,
                         r.lost_by.sack + r.lost_by.rack + r.lost_by.pto +
                             r.lost_by.rto + r.lost_by.rnr);
        if (tr[i] == MROCE_TRANSPORT_ROCEV2)
            assert_true(k->drop_ooo > 0);
        else
            assert_true(k->retx_pkts > 0 && k->drop_ooo == 0);
        mroce_sim_exp_result_free(&r);
    }
}

/* A receiver's packets from several senders interleave: each is counted
 * against its own sender's sequence (the meter keeps the last sender's
 * record by address), so an incast over one path per flow, lossless,
 * has every data packet delivered and none reordered. */
static void test_incast_senders_apart(void **state)
{
    (void)state;
    int tr[] = {MROCE_TRANSPORT_METAROCE, MROCE_TRANSPORT_ROCEV2};
    for (int i = 0; i < 2; i++) {
        struct mroce_sim_exp_cfg c = flows(tr[i], 8, 4, 4);
        c.workload = MROCE_SIM_EXP_INCAST;
        c.senders = 4;
        c.paths = 1;
        c.size = 256 * 1024;
        struct mroce_sim_exp_result r;
        run(&c, &r);
        assert_int_equal(r.flows_completed, 4);
        assert_int_equal(r.rx_data_pkts, r.data_pkts);
        assert_true(r.retx_rate == 0 && r.ooo_rate == 0);
        mroce_sim_exp_result_free(&r);
    }
}

/* The sampler only reads: the same run with a 1 us and a 1 ms interval
 * has the same events (sampler ticks are not counted), times and
 * packets. A 0.2 ns interval overflows the series, which halves: at most
 * MROCE_SIM_EXP_MAX_SAMPLES samples, still adding up. */
static void test_sampler_is_passive(void **state)
{
    (void)state;
    struct mroce_sim_exp_cfg c = flows(MROCE_TRANSPORT_METAROCE, 8, 4, 4);
    c.workload = MROCE_SIM_EXP_PERMUTATION;
    struct mroce_sim_exp_result a, b, d;
    run(&c, &a);
    c.sample_ps = 1000 * US;
    run(&c, &b);
    c.sample_ps = 200;
    run(&c, &d);
    assert_int_equal(a.events, b.events);
    assert_int_equal(a.events, d.events);
    assert_int_equal(a.jct_ps, b.jct_ps);
    assert_int_equal(a.pkts.injected, d.pkts.injected);
    assert_int_equal(b.n_samples, 1);
    assert_true(d.n_samples <= MROCE_SIM_EXP_MAX_SAMPLES);
    assert_true(d.n_samples > MROCE_SIM_EXP_MAX_SAMPLES / 2);
    assert_true(fabs(placed_from_samples(&d) - 8.0 * c.size) < 8.0);
    mroce_sim_exp_result_free(&a);
    mroce_sim_exp_result_free(&b);
    mroce_sim_exp_result_free(&d);
}

static double jain_of(const struct mroce_sim_exp_result *r, uint64_t size)
{
    double s = 0, s2 = 0;
    int n = 0;
    for (int i = 0; i < r->n_flows; i++) {
        if (r->flows[i].victim)
            continue;
        double x = (double)size / (double)r->flows[i].fct_ps;
        s += x;
        s2 += x * x;
        n++;
    }
    return s * s / (n * s2);
}

/* Two hosts swapping equal flows: Jain 1. A 2:1 incast whose second
 * sender's link runs at a quarter rate: the other sender gets the rest,
 * so the throughputs differ and Jain is well below 1, equal to the
 * formula over size/FCT. */
static void test_jain(void **state)
{
    (void)state;
    struct mroce_sim_exp_cfg c = flows(MROCE_TRANSPORT_METAROCE, 2, 2, 1);
    c.workload = MROCE_SIM_EXP_PERMUTATION;
    struct mroce_sim_exp_result r;
    run(&c, &r);
    assert_true(r.jain > 0.9999 && r.jain <= 1.0);
    mroce_sim_exp_result_free(&r);

    c = flows(MROCE_TRANSPORT_METAROCE, 4, 4, 1);
    c.workload = MROCE_SIM_EXP_INCAST;
    c.senders = 2;
    c.n_degrade = 1;
    strcpy(c.degrade[0].link, "host3-leaf0");
    c.degrade[0].fraction = 0.25;
    run(&c, &r);
    assert_int_equal(r.flows_completed, 2);
    assert_true(r.jain < 0.9);
    assert_true(fabs(r.jain - jain_of(&r, c.size)) < 1e-9);
    mroce_sim_exp_result_free(&r);
}

/* One RoCEv2 flow (one QP, one ECMP path) over S spines puts all its
 * bytes on one of S uplinks, its ACKs on one of the far leaf's: MMR is
 * exactly S. One spine: 1. */
static void test_mmr_known(void **state)
{
    (void)state;
    int spines[] = {1, 2, 4};
    for (int i = 0; i < 3; i++) {
        struct mroce_sim_exp_cfg c =
            flows(MROCE_TRANSPORT_ROCEV2, 4, 2, spines[i]);
        struct mroce_sim_exp_result r;
        run(&c, &r);
        assert_true(fabs(r.mmr - spines[i]) < 1e-9);
        mroce_sim_exp_result_free(&r);
    }
}

/* A MetaRoCE flow sprayed over 64 paths and 2 spines is near balance; a
 * spine cable that dies a third of the way carries a third of its share,
 * so the imbalance grows. */
static void test_mmr_failed_link(void **state)
{
    (void)state;
    struct mroce_sim_exp_cfg c = flows(MROCE_TRANSPORT_METAROCE, 4, 2, 2);
    c.paths = 64;
    c.size = 2 * 1024 * 1024;
    struct mroce_sim_exp_result a, b;
    run(&c, &a);
    c.n_fail = 1;
    strcpy(c.fail[0].link, "leaf0-spine0");
    c.fail[0].t_ps = 15 * US;
    c.reroute_ps = 2 * US;
    run(&c, &b);
    printf("  mmr healthy %.3f, failed link %.3f\n", a.mmr, b.mmr);
    assert_true(a.mmr >= 1.0 && a.mmr < 1.25);
    assert_true(b.mmr > a.mmr + 0.25);
    mroce_sim_exp_result_free(&a);
    mroce_sim_exp_result_free(&b);
}

/* An 4:1 incast with a victim flow (last host -> host 1) on both
 * transports: the victim is flagged, its fraction is in (0, 1] and is
 * its ideal over its FCT; the victim's samples add up to its bytes (its
 * buffer once per sender, so that it lasts as long as the incast).
 * The incast queues: ECN marks and a p95 queue at most the maximum. */
/* The incast convergence figures are there and consistent: judged in
 * windows of at least one base RTT, no later than the run, the queue
 * after it no deeper than the deepest, nothing dropped (this fabric
 * drops nothing here). */
static void check_convergence(const struct mroce_sim_exp_result *r)
{
    printf("  converged after %.1f base RTTs (windows of %.1f), then queue "
           "%lld B (median %lld B), %lld drops\n",
           r->converge_rtts, r->conv_window_rtts,
           (long long)r->queue_after_conv_bytes,
           (long long)r->queue_median_after_conv_bytes,
           (long long)r->drops_after_conv);
    assert_true(r->converge_rtts >= 0 && r->conv_window_rtts >= 1);
    assert_true(r->bdp_bytes > 0 && r->base_rtt_ps > 0);
    assert_true(r->converge_rtts * (double)r->base_rtt_ps <= (double)r->end_ps);
    assert_true(r->queue_after_conv_bytes >= 0 &&
                (uint64_t)r->queue_after_conv_bytes <= r->max_qbytes);
    /* the standing queue: one of the samples, no deeper than the deepest */
    int64_t med = r->queue_median_after_conv_bytes;
    assert_true(med >= 0 && med <= r->queue_after_conv_bytes);
    bool sampled = false;
    for (int i = 0; i < r->n_samples; i++)
        sampled |= (int64_t)r->samples[i].q_dst_bytes == med;
    assert_true(sampled);
    assert_int_equal(r->drops_after_conv, 0);
}

static void test_victim_incast(void **state)
{
    (void)state;
    int tr[] = {MROCE_TRANSPORT_METAROCE, MROCE_TRANSPORT_ROCEV2};
    for (int i = 0; i < 2; i++) {
        struct mroce_sim_exp_cfg c = flows(tr[i], 8, 4, 4);
        c.workload = MROCE_SIM_EXP_INCAST;
        c.senders = 4;
        c.victim = 1;
        struct mroce_sim_exp_result r;
        run(&c, &r);
        assert_int_equal(r.n_flows, 5);
        const struct mroce_sim_exp_flow *v = &r.flows[4];
        assert_true(v->victim && v->src == 7 && v->dst == 1);
        assert_true(v->completed);
        printf("  %s victim fraction %.3f, Jain %.4f, ECN %.3f\n",
               i ? "rocev2" : "metaroce", r.victim_fraction, r.jain,
               r.ecn_fraction);
        assert_true(r.victim_fraction > 0 && r.victim_fraction <= 1);
        assert_true(fabs(r.victim_fraction -
                         (double)v->ideal_ps / (double)v->fct_ps) < 1e-9);
        double vb = 0;
        uint64_t prev = 0;
        for (int k = 0; k < r.n_samples; k++) {
            vb += r.samples[k].victim_gbps *
                  (double)(r.samples[k].t_ps - prev) / 8e3;
            prev = r.samples[k].t_ps;
        }
        assert_true(fabs(vb - (double)c.size * c.senders) < 1.0);
        assert_true(fabs(r.jain - jain_of(&r, c.size)) < 1e-9);
        assert_true(r.ecn_fraction > 0 && r.ecn_fraction <= 1);
        assert_true(r.p95_qbytes > 0 && r.p95_qbytes <= r.max_qbytes);
        check_convergence(&r);
        mroce_sim_exp_result_free(&r);
    }
}

static struct mroce_sim_exp_cfg allreduce_link_down(int transport,
                                                    uint64_t reroute)
{
    struct mroce_sim_exp_cfg c = flows(transport, 8, 4, 4);
    c.workload = MROCE_SIM_EXP_ALLREDUCE;
    c.size = 4 * 1024 * 1024;
    c.n_fail = 1;
    strcpy(c.fail[0].link, "leaf0-spine2"); /* a cable one cross-leaf QP uses */
    c.fail[0].t_ps = 50 * US;
    c.reroute_ps = reroute;
    c.rocev2_timeout = 6; /* 262 us: retries end within the test */
    return c;
}

/* A spine cable dies mid-all-reduce. MetaRoCE with fast reroute finds
 * its way around: recovery is finite, after the fault and before the
 * end. RoCEv2's one QP per pair whose path died retries into it (the
 * switches' reroute does not cover the far side) until its retries run
 * out: the all-reduce fails and throughput never recovers. */
static void test_recovery(void **state)
{
    (void)state;
    struct mroce_sim_exp_cfg c =
        allreduce_link_down(MROCE_TRANSPORT_METAROCE, 5 * US);
    struct mroce_sim_exp_result r;
    run(&c, &r);
    printf("  metaroce all-reduce, link down at 50 us: recovery %.3f us, "
           "JCT %.3f us\n",
           (double)r.recovery_ps / US, (double)r.jct_ps / US);
    assert_true(r.coll_verified);
    assert_int_equal(r.fault_ps, 50 * US);
    assert_true(r.recovery_ps > 0 && r.recovery_ps != UINT64_MAX);
    assert_true(r.fault_ps + r.recovery_ps < r.end_ps);
    mroce_sim_exp_result_free(&r);

    c = allreduce_link_down(MROCE_TRANSPORT_ROCEV2, 5 * US);
    run(&c, &r);
    assert_int_equal(r.flows_failed, 1); /* the premise */
    assert_true(r.recovery_ps == UINT64_MAX);
    mroce_sim_exp_result_free(&r);
}

/* All-gather verified on both transports; its ideal is metrics.md's
 * ring with S the gathered array, over C channels: the longer of one
 * channel's chain, (N-1) (alpha + S/(N C)/(eta B)), and the NIC's bytes,
 * (N-1)/N S/(eta B). */
static void test_allgather(void **state)
{
    (void)state;
    int tr[] = {MROCE_TRANSPORT_METAROCE, MROCE_TRANSPORT_ROCEV2};
    for (int i = 0; i < 2; i++) {
        struct mroce_sim_exp_cfg c = flows(tr[i], 8, 4, 4);
        c.workload = MROCE_SIM_EXP_ALLGATHER;
        c.size = 512 * 1024;
        c.iters = 2;
        c.channels = 2;
        struct mroce_sim_exp_result r;
        run(&c, &r);
        assert_true(r.coll_verified);
        assert_int_equal(r.iters_done, 2);
        assert_int_equal(r.flows_corrupt, 0);
        assert_int_equal(r.coll_bytes, c.size);
        double n = 8, s = (double)r.coll_bytes;
        double bw = r.eta * r.line_gbps * 1e9 / 8;
        double chain = (n - 1) * ((double)r.alpha_ps / 1e12 + s / (n * 2) / bw);
        double bytes = (n - 1) / n * s / bw;
        double ideal = chain > bytes ? chain : bytes;
        assert_true(fabs((double)r.ideal_ps / 1e12 - ideal) < 1e-11);
        assert_true(fabs(r.busbw_gbps - (n - 1) / n * r.algbw_gbps) < 1e-9);
        assert_true(r.fraction_of_ideal > 0 && r.fraction_of_ideal <= 1);
        /* every rank receives (N-1)/N of S per iteration, once */
        assert_int_equal(r.placed_bytes, 2 * 7 * (uint64_t)c.size);
        assert_true(r.jain == 0);
        mroce_sim_exp_result_free(&r);
    }
}

/* A MetaRoCE all-to-all of 8 hosts on 4 planes whose plane 1 goes down at
 * 3 us. */
static struct mroce_sim_exp_cfg plane1_down(uint64_t size)
{
    struct mroce_sim_exp_cfg c = flows(MROCE_TRANSPORT_METAROCE, 8, 4, 4);
    c.workload = MROCE_SIM_EXP_ALLTOALL;
    c.planes = 4;
    c.size = size;
    c.n_fail_plane = 1;
    c.fail_plane[0] = (struct mroce_sim_exp_plane_fault){1, 3 * US, 0};
    return c;
}

/* A whole plane of four goes down mid-all-to-all (and comes back): the
 * MetaRoCE all-to-all completes verified; the fault instant is
 * reported and recovery, judged until the work left cannot fill a
 * smoothing window, is quick. Refused: a plane that does not exist. */
static void test_plane_down(void **state)
{
    (void)state;
    struct mroce_sim_exp_cfg c = plane1_down(2 * 1024 * 1024);
    struct mroce_sim_exp_result r;
    run(&c, &r);
    printf("  metaroce all-to-all, plane 1 of 4 down at 3 us: JCT %.3f us, "
           "recovery %.3f us, drops %llu\n",
           (double)r.jct_ps / US,
           r.recovery_ps == UINT64_MAX ? -1.0 : (double)r.recovery_ps / US,
           (unsigned long long)r.drops);
    assert_true(r.coll_verified);
    assert_int_equal(r.fault_ps, 3 * US);
    assert_true(r.drop[MROCE_SIM_DROP_LINK_DOWN] > 0);
    /* Recovered within a few us: the job's own tail, once the work left
     * cannot fill a smoothing window, is not judged (it read "never"
     * when it was, issue 18) */
    assert_true(r.recovery_ps != UINT64_MAX && r.recovery_ps < 20 * US);
    mroce_sim_exp_result_free(&r);

    c.fail_plane[0].plane = 4;
    assert_int_equal(mroce_sim_exp_run(&c, &r), MROCE_EINVAL);
    mroce_sim_exp_result_free(&r);
}

static double plane_share(const struct mroce_sim_exp_result *r, int plane)
{
    double sum = 0;
    for (int p = 0; p < r->cfg.planes; p++)
        sum += (double)r->plane_tx_bytes[p];
    return sum > 0 ? (double)r->plane_tx_bytes[plane] / sum : 0;
}

/* R-PATH-15, R-ENC-10: data leaves a dead plane and comes back to it. A
 * plane down from 3 us for good carries almost nothing after it; one back
 * at 10 us carries its share of the rest again. */
static void test_plane_returns(void **state)
{
    (void)state;
    struct mroce_sim_exp_cfg c = plane1_down(8 * 1024 * 1024);
    struct mroce_sim_exp_result gone, back;
    run(&c, &gone);
    c.fail_plane[0].up_ps = 10 * US;
    run(&c, &back);
    double share_gone = plane_share(&gone, 1),
           share_back = plane_share(&back, 1);
    printf("  plane 1 down at 3 us: its share of the host bytes %.3f for "
           "good, %.3f when back at 10 us; JCT %.3f / %.3f us\n",
           share_gone, share_back, (double)gone.jct_ps / US,
           (double)back.jct_ps / US);
    assert_true(gone.coll_verified && back.coll_verified);
    assert_true(share_gone < 0.15); /* ACKs, PROBEs, the first us */
    assert_true(share_back > 0.2);  /* 1/4 when all is well */
    assert_true(back.jct_ps < gone.jct_ps);
    mroce_sim_exp_result_free(&gone);
    mroce_sim_exp_result_free(&back);
}

/* A victim needs an incast. */
static void test_refused(void **state)
{
    (void)state;
    struct mroce_sim_exp_cfg c = flows(MROCE_TRANSPORT_METAROCE, 8, 4, 4);
    c.victim = 1;
    struct mroce_sim_exp_result r;
    assert_int_equal(mroce_sim_exp_run(&c, &r), MROCE_EINVAL);
    assert_true(r.error[0] != 0);
    mroce_sim_exp_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_flow_clean),
        cmocka_unit_test(test_loss_counts_once),
        cmocka_unit_test(test_incast_senders_apart),
        cmocka_unit_test(test_sampler_is_passive),
        cmocka_unit_test(test_jain),
        cmocka_unit_test(test_mmr_known),
        cmocka_unit_test(test_mmr_failed_link),
        cmocka_unit_test(test_victim_incast),
        cmocka_unit_test(test_recovery),
        cmocka_unit_test(test_allgather),
        cmocka_unit_test(test_plane_down),
        cmocka_unit_test(test_plane_returns),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_endpoint_counters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
