/* Scenario tests of the fabric simulator on leaf-spine topologies
 * (src/sim/topo.c with hosts, NICs, switches, links), driven by synthetic
 * endpoints (src/sim/blast.c):
 *   - a lone flow's FCT equals the analytic ideal (within 1%),
 *   - ECMP spreads 1000 flows over all spines (chi-square bound),
 *   - conservation under random traffic, loss and a failure,
 *   - PFC: an incast never drops with PFC on and pauses rise; drops off,
 *   - a link down mid-flow drops and counts; fast reroute limits it,
 *   - determinism: same seed, same counters; other seed, others,
 *   - multiplane: the source port picks the plane; a plane down,
 *   - naming and addressing. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/blast.h"
#include "sim/defaults.h"
#include "sim/rng.h"
#include "sim/topo.h"

#define US MROCE_SIM_PS_PER_US
#define MS (1000 * US)
#define PKT 4096u
#define WIRE (PKT + MROCE_SIM_WIRE_OVERHEAD_V4)

struct net {
    struct mroce_sim_topo *t;
    struct mroce_sim_blast **b;
    int n;
};

static void net_open(struct net *n, const struct mroce_sim_topo_cfg *cfg)
{
    assert_int_equal(mroce_sim_topo_create(cfg, &n->t), 0);
    n->n = mroce_sim_topo_n_hosts(n->t);
    n->b = calloc((size_t)n->n, sizeof(*n->b));
    for (int h = 0; h < n->n; h++) {
        struct mroce_addr a;
        mroce_sim_topo_host_addr(n->t, h, &a);
        n->b[h] = mroce_sim_blast_create(&a, PKT);
        assert_int_equal(mroce_sim_host_attach(mroce_sim_topo_host(n->t, h),
                                               &mroce_sim_blast_ops, n->b[h]),
                         0);
    }
}

static void net_close(struct net *n)
{
    mroce_sim_topo_destroy(n->t);
    for (int h = 0; h < n->n; h++)
        mroce_sim_blast_destroy(n->b[h]);
    free(n->b);
}

static void flow(struct net *n, int src, int dst, uint16_t sport,
                 uint64_t bytes, uint64_t start_ns)
{
    struct mroce_sim_blast_flow f = {.src_port = sport,
                                     .bytes = bytes,
                                     .pkt_bytes = PKT,
                                     .ecn = MROCE_ECN_ECT0,
                                     .start_ns = start_ns};
    mroce_sim_topo_host_addr(n->t, dst, &f.dst);
    assert_true(mroce_sim_blast_add_flow(n->b[src], &f) >= 0);
}

static uint64_t net_run(struct net *n, uint64_t until)
{
    return mroce_sim_ev_run(mroce_sim_topo_ev(n->t), until);
}

static struct mroce_sim_blast_counters bc(struct net *n, int h)
{
    struct mroce_sim_blast_counters c;
    mroce_sim_blast_get_counters(n->b[h], &c);
    return c;
}

/* Every live packet is somewhere: a NIC queue, a switch, or a wire. */
static void check_conservation(struct net *n)
{
    struct mroce_sim_topo *t = n->t;
    const struct mroce_sim_topo_cfg *c = mroce_sim_topo_cfg(t);
    uint64_t held = 0;
    for (int h = 0; h < n->n; h++)
        held +=
            mroce_sim_nic_queued(mroce_sim_host_nic(mroce_sim_topo_host(t, h)));
    (void)c;
    for (int i = 0; i < mroce_sim_topo_n_switches(t); i++)
        held += mroce_sim_switch_pkts_held(mroce_sim_topo_switch(t, i));
    for (int i = 0; i < mroce_sim_topo_n_links(t); i++) {
        struct mroce_sim_link_counters lc;
        mroce_sim_link_get_counters(mroce_sim_topo_link_info(t, i)->link, &lc);
        held += lc.in_flight;
    }
    struct mroce_sim_topo_counters tc;
    mroce_sim_topo_get_counters(t, &tc);
    assert_true(mroce_sim_pool_conserved(mroce_sim_topo_pool(t)));
    assert_int_equal(tc.pkts.in_flight, held);
    /* every drop the pool counted, some object counted too */
    uint64_t by_objects = tc.link_drop_down + tc.link_drop_loss;
    for (int i = 0; i < MROCE_SIM_DROP_N; i++)
        by_objects += tc.switch_drops[i];
    assert_int_equal(tc.pkts.dropped_total, by_objects);
}

/* ---- Naming and addressing ---- */

static void test_names_addresses(void **state)
{
    (void)state;
    struct mroce_sim_topo_cfg c = {
        .hosts_per_leaf = 4, .leaves = 3, .spines = 2, .planes = 2};
    struct mroce_sim_topo *t;
    assert_int_equal(mroce_sim_topo_create(&c, &t), 0);
    assert_int_equal(mroce_sim_topo_n_hosts(t), 12);
    /* per plane: 2 x 12 host links + 2 x 3 x 2 fabric links */
    assert_int_equal(mroce_sim_topo_n_links(t), 2 * (24 + 12));
    int id = mroce_sim_topo_link_find(t, "p1.leaf2-spine1");
    assert_true(id >= 0);
    const struct mroce_sim_link_info *li = mroce_sim_topo_link_info(t, id);
    assert_string_equal(li->name, "p1.leaf2-spine1");
    assert_int_equal(li->kind, MROCE_SIM_LINK_SPINE_UP);
    assert_int_equal(li->plane, 1);
    assert_int_equal(li->leaf, 2);
    assert_int_equal(li->spine, 1);
    assert_string_equal(mroce_sim_topo_link_info(t, li->reverse)->name,
                        "p1.spine1-leaf2");
    assert_int_equal(mroce_sim_topo_link_find(t, "leaf2-spine1"),
                     mroce_sim_topo_link_find(t, "p0.leaf2-spine1"));
    assert_true(mroce_sim_topo_link_find(t, "host5-leaf1") >= 0);
    assert_true(mroce_sim_topo_link_find(t, "p1.leaf1-host5") >= 0);
    assert_int_equal(mroce_sim_topo_link_find(t, "leaf3-spine0"), -1);
    assert_int_equal(
        mroce_sim_topo_link_id(t, 1, MROCE_SIM_LINK_SPINE_UP, 2, 1), id);
    struct mroce_addr a;
    mroce_sim_topo_host_addr(t, 9, &a); /* leaf 2, position 1 */
    assert_int_equal(a.ip[0], 10);
    assert_int_equal(a.ip[2], 2);
    assert_int_equal(a.ip[3], 2);
    assert_int_equal(mroce_sim_topo_resolve(t, &a), 9);
    a.ip[3] = 9;
    assert_int_equal(mroce_sim_topo_resolve(t, &a), -1);
    mroce_sim_topo_destroy(t);
    struct mroce_sim_topo_cfg bad = {.hosts_per_leaf = 255};
    assert_int_equal(mroce_sim_topo_create(&bad, &t), MROCE_EINVAL);
    assert_null(t);
}

/* ---- A lone flow's FCT equals the analytic ideal ---- */

static double lone_flow(int src, int dst, uint64_t bytes)
{
    struct mroce_sim_topo_cfg c = {.hosts_per_leaf = 4, .leaves = 2};
    struct net n;
    net_open(&n, &c);
    flow(&n, src, dst, 1234, bytes, 0);
    net_run(&n, MROCE_SIM_NEVER);
    struct mroce_sim_blast_counters r = bc(&n, dst);
    assert_int_equal(r.rx_bytes, bytes);
    uint64_t fct_ps = r.last_rx_ns * MROCE_SIM_PS_PER_NS;
    uint64_t ideal = mroce_sim_topo_ideal_fct_ps(n.t, bytes, PKT, 0, src, dst);
    double ratio = (double)fct_ps / (double)ideal;
    printf("[ fct      ] %llu bytes host%d->host%d: %.3f us, ideal %.3f us, "
           "ratio %.5f\n",
           (unsigned long long)bytes, src, dst, (double)fct_ps / US,
           (double)ideal / US, ratio);
    check_conservation(&n);
    net_close(&n);
    return ratio;
}

/* The frame-by-frame recurrence of mroce_sim_topo_ideal_fct_ps, as the
 * reference its closed form for equal link rates must match exactly. */
static uint64_t ideal_ref(const struct mroce_sim_topo *t, uint64_t bytes,
                          uint32_t mtu, uint32_t hdr, int src, int dst)
{
    const struct mroce_sim_topo_cfg *c = mroce_sim_topo_cfg(t);
    int links = mroce_sim_topo_hops(t, src, dst);
    uint64_t n = bytes ? (bytes + mtu - 1) / mtu : 1, f[6] = {0};
    for (uint64_t k = 0; k < n; k++) {
        uint64_t pay = k + 1 < n ? mtu : bytes - (n - 1) * mtu, ready = 0;
        for (int j = 0; j < links; j++) {
            uint64_t bps = j == 0 || j == links - 1 ? c->host_bps : c->link_bps;
            uint64_t bits = (pay + hdr + MROCE_SIM_WIRE_OVERHEAD_V4) * 8u;
            uint64_t start = f[j] > ready ? f[j] : ready;
            f[j] = start + (bits * MROCE_SIM_PS_PER_S + bps - 1) / bps;
            ready = f[j] + c->delay_ps;
        }
    }
    return f[links - 1] + c->delay_ps;
}

/* Equal rates take the closed form, unequal ones the recurrence: both
 * give the recurrence's integers, for short last frames and one frame
 * too, on 2- and 4-link routes. */
static void test_ideal_closed_form(void **state)
{
    (void)state;
    static const uint64_t sizes[] = {1, 999, 1000, 1001, 3017, 1u << 20};
    for (int uneq = 0; uneq < 2; uneq++) {
        struct mroce_sim_topo_cfg c = {.hosts_per_leaf = 4, .leaves = 2};
        if (uneq)
            c.host_bps = 100000000000ull; /* 100G hosts, 400G fabric */
        struct mroce_sim_topo *t;
        assert_int_equal(mroce_sim_topo_create(&c, &t), 0);
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
            for (int dst = 1; dst <= 5; dst += 4)
                for (uint32_t hdr = 0; hdr <= 48; hdr += 48)
                    assert_int_equal(mroce_sim_topo_ideal_fct_ps(
                                         t, sizes[i], 1000, hdr, 0, dst),
                                     ideal_ref(t, sizes[i], 1000, hdr, 0, dst));
        mroce_sim_topo_destroy(t);
    }
}

static void test_lone_flow_fct(void **state)
{
    (void)state;
    /* The recursion agrees with metrics.md's closed form for full frames:
     * bytes_on_wire/B + 4 delays + 3 MTU frames/B, 20 ps a byte. */
    struct mroce_sim_topo_cfg c = {.hosts_per_leaf = 4, .leaves = 2};
    struct mroce_sim_topo *t;
    assert_int_equal(mroce_sim_topo_create(&c, &t), 0);
    assert_int_equal(mroce_sim_topo_ideal_fct_ps(t, 1u << 20, PKT, 0, 0, 5),
                     256ull * WIRE * 20 + 4 * US + 3ull * WIRE * 20);
    assert_int_equal(mroce_sim_topo_ideal_fct_ps(t, 1u << 20, PKT, 0, 0, 1),
                     256ull * WIRE * 20 + 2 * US + 1ull * WIRE * 20);
    mroce_sim_topo_destroy(t);
    /* host -> leaf -> spine -> leaf -> host: 4 links, 3 switches */
    double r = lone_flow(0, 5, 1u << 20);
    assert_true(r >= 0.99 && r <= 1.01);
    /* same leaf: 2 links */
    r = lone_flow(0, 3, 1u << 20);
    assert_true(r >= 0.99 && r <= 1.01);
    /* one packet, and a size that leaves a short last packet */
    r = lone_flow(1, 6, PKT);
    assert_true(r >= 0.99 && r <= 1.01);
    r = lone_flow(1, 6, 100000);
    assert_true(r >= 0.99 && r <= 1.01);
}

/* ---- A 3-tier fat-tree ---- */

/* k = 4: 4 pods of 2 leaves and 2 aggs, 4 cores, 16 hosts. Names, hop
 * counts, a cross-pod lone flow at its 6-link ideal, every host reaching
 * every other, and flows between two pods spread over every core. */
static void test_fat_tree(void **state)
{
    (void)state;
    struct mroce_sim_topo_cfg c = {
        .hosts_per_leaf = 2, .leaves = 8, .spines = 2, .pods = 4, .seed = 3};
    struct net n;
    net_open(&n, &c);
    struct mroce_sim_topo *t = n.t;
    assert_int_equal(n.n, 16);
    assert_int_equal(mroce_sim_topo_n_switches(t), 8 + 8 + 4);
    /* 16 host cables, 8 x 2 leaf-agg, 8 x 2 agg-core, both directions */
    assert_int_equal(mroce_sim_topo_n_links(t), 2 * (16 + 16 + 16));
    int id = mroce_sim_topo_link_find(t, "leaf3-agg2");
    assert_true(id >= 0); /* leaf 3 is in pod 1, whose aggs are 2 and 3 */
    assert_int_equal(mroce_sim_topo_link_find(t, "leaf3-agg0"), -1);
    assert_true(mroce_sim_topo_link_find(t, "agg2-core1") >= 0);
    assert_true(mroce_sim_topo_link_find(t, "core3-agg7") >= 0);
    assert_int_equal(mroce_sim_topo_link_find(t, "agg2-core2"), -1);
    const struct mroce_sim_link_info *li =
        mroce_sim_topo_link_info(t, mroce_sim_topo_link_find(t, "agg5-core2"));
    assert_int_equal(li->kind, MROCE_SIM_LINK_CORE_UP);
    assert_int_equal(li->spine, 5);
    assert_int_equal(li->core, 2);
    assert_string_equal(mroce_sim_topo_link_info(t, li->reverse)->name,
                        "core2-agg5");
    assert_int_equal(mroce_sim_topo_hops(t, 0, 1), 2);
    assert_int_equal(mroce_sim_topo_hops(t, 0, 3), 4);
    assert_int_equal(mroce_sim_topo_hops(t, 0, 15), 6);
    /* a lone 1 MiB flow across pods: 6 links, 5 switches */
    flow(&n, 0, 15, 1234, 1u << 20, 0);
    net_run(&n, MROCE_SIM_NEVER);
    uint64_t fct = bc(&n, 15).last_rx_ns * MROCE_SIM_PS_PER_NS;
    uint64_t ideal = mroce_sim_topo_ideal_fct_ps(t, 1u << 20, PKT, 0, 0, 15);
    assert_int_equal(ideal, 256ull * WIRE * 20 + 6 * US + 5ull * WIRE * 20);
    double r = (double)fct / (double)ideal;
    printf("[ fat-tree ] 1 MiB host0->host15: %.3f us, ideal %.3f us, %.5f\n",
           (double)fct / US, (double)ideal / US, r);
    assert_true(r >= 0.99 && r <= 1.01);
    /* every ordered pair, one packet each */
    uint64_t t0 = mroce_sim_ev_now(mroce_sim_topo_ev(t)) / 1000 + 1;
    for (int a = 0; a < 16; a++)
        for (int b = 0; b < 16; b++)
            if (a != b)
                flow(&n, a, b, (uint16_t)(2000 + a * 16 + b), PKT, t0);
    /* pod 0 -> pod 1, 400 single-packet flows: every core carries some */
    for (int i = 0; i < 400; i++)
        flow(&n, i % 4, 4 + i % 4, (uint16_t)(30000 + i), PKT, t0 + 100);
    for (int h = 0; h < 16; h++) /* work came after the last run */
        mroce_sim_host_kick(mroce_sim_topo_host(t, h));
    net_run(&n, MROCE_SIM_NEVER);
    uint64_t rx = 0;
    for (int h = 0; h < 16; h++)
        rx += bc(&n, h).rx_pkts;
    assert_int_equal(rx, 256 + 16 * 15 + 400);
    for (int core = 0; core < 4; core++) {
        char name[32];
        snprintf(name, sizeof(name), "core%d-agg%d", core,
                 2 + core / 2); /* pod 1's agg of that core's group */
        struct mroce_sim_link_counters lc;
        mroce_sim_link_get_counters(
            mroce_sim_topo_link_info(t, mroce_sim_topo_link_find(t, name))
                ->link,
            &lc);
        printf("[ fat-tree ] %s: %llu packets\n", name,
               (unsigned long long)lc.rx_pkts);
        assert_true(lc.rx_pkts > 50);
    }
    check_conservation(&n);
    net_close(&n);
    struct mroce_sim_topo_cfg bad = {
        .hosts_per_leaf = 2, .leaves = 7, .spines = 2, .pods = 4};
    assert_int_equal(mroce_sim_topo_create(&bad, &t), MROCE_EINVAL);
}

/* ---- ECMP spreads flows over all spines ---- */

static void test_ecmp_spread(void **state)
{
    (void)state;
    struct mroce_sim_topo_cfg c = {.hosts_per_leaf = 8, .leaves = 2, .seed = 5};
    struct net n;
    net_open(&n, &c);
    for (int i = 0; i < 1000; i++) /* one packet per source port */
        flow(&n, 0, 8, (uint16_t)(10000 + i), 1000, 0);
    net_run(&n, MROCE_SIM_NEVER);
    assert_int_equal(bc(&n, 8).rx_pkts, 1000);
    struct mroce_sim_switch *leaf = mroce_sim_topo_leaf(n.t, 0, 0);
    double chi2 = 0, e = 1000.0 / 8;
    for (int s = 0; s < 8; s++) {
        struct mroce_sim_port_counters pc;
        mroce_sim_switch_get_port_counters(leaf, 8 + s, &pc);
        printf("[ ecmp     ] spine %d: %llu flows\n", s,
               (unsigned long long)pc.tx_pkts);
        assert_true(pc.tx_pkts > 0);
        chi2 += ((double)pc.tx_pkts - e) * ((double)pc.tx_pkts - e) / e;
    }
    printf("[ ecmp     ] chi-square %.2f (7 dof; 99.9%% bound 24.32)\n", chi2);
    assert_true(chi2 < 24.32);
    check_conservation(&n);
    net_close(&n);
}

/* ---- Conservation under random traffic, loss and a failure ---- */

static void random_traffic(struct net *n, uint64_t seed, int flows)
{
    struct mroce_sim_rng r;
    mroce_sim_rng_init(&r, seed);
    for (int i = 0; i < flows; i++) {
        int src = (int)(mroce_sim_rng_next(&r) % (uint64_t)n->n);
        int dst = (int)(mroce_sim_rng_next(&r) % (uint64_t)(n->n - 1));
        dst += dst >= src;
        uint64_t bytes = 1 + mroce_sim_rng_next(&r) % 200000;
        uint64_t start = mroce_sim_rng_next(&r) % 50000; /* ns */
        flow(n, src, dst, (uint16_t)mroce_sim_rng_next(&r), bytes, start);
    }
}

static void test_conservation_random(void **state)
{
    (void)state;
    struct mroce_sim_topo_cfg c = {.hosts_per_leaf = 4,
                                   .leaves = 4,
                                   .spines = 2,
                                   .seed = 11,
                                   .sw = {.buffer_bytes = 1 << 20}};
    struct net n;
    net_open(&n, &c);
    random_traffic(&n, 3, 300);
    int l = mroce_sim_topo_link_find(n.t, "leaf1-spine0");
    assert_int_equal(mroce_sim_topo_link_loss(n.t, l, true, 0.02, 0), 0);
    l = mroce_sim_topo_link_find(n.t, "leaf2-spine1");
    assert_int_equal(mroce_sim_topo_link_down(n.t, l, true, 20 * US), 0);
    for (uint64_t t = 5 * US; t <= 100 * US; t += 5 * US) {
        net_run(&n, t);
        check_conservation(&n);
    }
    net_run(&n, MROCE_SIM_NEVER);
    check_conservation(&n);
    struct mroce_sim_topo_counters tc;
    mroce_sim_topo_get_counters(n.t, &tc);
    assert_int_equal(tc.pkts.in_flight, 0);
    uint64_t rx = 0, tx = 0;
    for (int h = 0; h < n.n; h++) {
        rx += bc(&n, h).rx_pkts;
        tx += bc(&n, h).tx_pkts;
    }
    assert_int_equal(tc.pkts.injected, tx);
    assert_int_equal(tc.pkts.delivered, rx);
    assert_true(tc.pkts.dropped[MROCE_SIM_DROP_LOSS] > 0);
    assert_true(tc.pkts.dropped[MROCE_SIM_DROP_LINK_DOWN] > 0);
    assert_true(tc.pkts.dropped[MROCE_SIM_DROP_QUEUE] > 0);
    printf("[ conserve ] injected %llu delivered %llu dropped %llu "
           "(queue %llu, loss %llu, link_down %llu), events %llu\n",
           (unsigned long long)tc.pkts.injected,
           (unsigned long long)tc.pkts.delivered,
           (unsigned long long)tc.pkts.dropped_total,
           (unsigned long long)tc.pkts.dropped[MROCE_SIM_DROP_QUEUE],
           (unsigned long long)tc.pkts.dropped[MROCE_SIM_DROP_LOSS],
           (unsigned long long)tc.pkts.dropped[MROCE_SIM_DROP_LINK_DOWN],
           (unsigned long long)tc.events);
    net_close(&n);
}

/* ---- PFC incast ---- */

/* 7 senders (3 on the receiver's leaf, 4 behind the spine) send 2 MB each
 * to host 7 at line rate: 7:1 on its leaf port, 4 MB switch buffers. */
static void incast(int pfc, struct mroce_sim_topo_counters *out,
                   struct mroce_sim_port_counters *spine,
                   struct mroce_sim_port_counters *leaf0)
{
    struct mroce_sim_topo_cfg c = {.hosts_per_leaf = 4,
                                   .leaves = 2,
                                   .spines = 1,
                                   .seed = 2,
                                   .sw = {.buffer_bytes = 4 << 20, .pfc = pfc}};
    struct net n;
    net_open(&n, &c);
    for (int h = 0; h < 7; h++)
        flow(&n, h, 7, (uint16_t)(100 + h), 2 << 20, 0);
    net_run(&n, MROCE_SIM_NEVER);
    check_conservation(&n);
    mroce_sim_topo_get_counters(n.t, out);
    mroce_sim_switch_get_counters(mroce_sim_topo_spine(n.t, 0, 0), spine);
    mroce_sim_switch_get_counters(mroce_sim_topo_leaf(n.t, 0, 0), leaf0);
    assert_int_equal(out->pkts.delivered, bc(&n, 7).rx_pkts);
    printf("[ incast   ] pfc %s: delivered %llu dropped %llu pauses %llu "
           "paused %.1f us, max queue %llu B, finished %.1f us\n",
           pfc ? "on " : "off", (unsigned long long)out->pkts.delivered,
           (unsigned long long)out->pkts.dropped_total,
           (unsigned long long)out->pfc_pauses, (double)out->pfc_pause_ps / US,
           (unsigned long long)out->max_qbytes,
           (double)bc(&n, 7).last_rx_ns / 1000);
    net_close(&n);
}

static void test_pfc_incast(void **state)
{
    (void)state;
    struct mroce_sim_topo_counters on, off;
    struct mroce_sim_port_counters sp_on, sp_off, l0_on, l0_off;
    incast(1, &on, &sp_on, &l0_on);
    incast(0, &off, &sp_off, &l0_off);
    uint64_t all = 7ull * ((2 << 20) / PKT);
    assert_int_equal(on.pkts.dropped_total, 0);
    assert_int_equal(on.pkts.delivered, all);
    assert_true(on.pfc_pauses > 0);
    assert_true(on.pfc_pause_ps > 0);
    /* the pause propagates: the spine pauses leaf 0, which pauses hosts */
    assert_true(sp_on.pause_tx[MROCE_SIM_PRIO_DATA] > 0);
    assert_true(l0_on.pause_tx[MROCE_SIM_PRIO_DATA] > 0);
    assert_true(l0_on.pause_rx[MROCE_SIM_PRIO_DATA] > 0);
    assert_true(off.pkts.dropped[MROCE_SIM_DROP_QUEUE] > 0);
    assert_int_equal(off.pfc_pauses, 0);
    assert_int_equal(off.pkts.delivered + off.pkts.dropped_total, all);
}

/* ---- A link down mid-flow ---- */

/* The leaf-spine link that flow (host 0 -> host 4, sport) hashes onto. */
static int flow_uplink(struct net *n, uint16_t sport)
{
    struct mroce_pkt_meta m;
    memset(&m, 0, sizeof(m));
    mroce_sim_topo_host_addr(n->t, 0, &m.src);
    mroce_sim_topo_host_addr(n->t, 4, &m.dst);
    m.src_port = sport;
    m.dst_port = MROCE_UDP_PORT;
    int port = mroce_sim_switch_route(mroce_sim_topo_leaf(n->t, 0, 0), 4,
                                      mroce_sim_flow_hash(&m));
    int hpl = mroce_sim_topo_cfg(n->t)->hosts_per_leaf;
    assert_true(port >= hpl);
    return mroce_sim_topo_link_id(n->t, 0, MROCE_SIM_LINK_SPINE_UP, 0,
                                  port - hpl);
}

static uint64_t down_mid_flow(uint64_t reroute_ps)
{
    struct mroce_sim_topo_cfg c = {
        .hosts_per_leaf = 4, .leaves = 2, .reroute_ps = reroute_ps};
    struct net n;
    net_open(&n, &c);
    flow(&n, 0, 4, 777, 4 << 20, 0); /* 84 us at 400G */
    int l = flow_uplink(&n, 777);
    assert_int_equal(mroce_sim_topo_link_down(n.t, l, true, 20 * US), 0);
    net_run(&n, MROCE_SIM_NEVER);
    check_conservation(&n);
    struct mroce_sim_topo_counters tc;
    mroce_sim_topo_get_counters(n.t, &tc);
    struct mroce_sim_link_counters lc;
    mroce_sim_link_get_counters(mroce_sim_topo_link_info(n.t, l)->link, &lc);
    uint64_t sent = bc(&n, 0).tx_pkts, got = bc(&n, 4).rx_pkts;
    assert_int_equal(sent, (4 << 20) / PKT);
    assert_int_equal(got + tc.pkts.dropped_total, sent);
    assert_int_equal(tc.pkts.dropped[MROCE_SIM_DROP_LINK_DOWN],
                     tc.pkts.dropped_total);
    assert_int_equal(lc.drop_down, tc.pkts.dropped_total);
    /* received until the failure (~20 us of 4162-byte frames at 400G) */
    assert_true(got >= 200);
    printf("[ fail     ] reroute %.1f us: sent %llu received %llu "
           "dropped %llu (link_down)\n",
           (double)reroute_ps / US, (unsigned long long)sent,
           (unsigned long long)got, (unsigned long long)tc.pkts.dropped_total);
    net_close(&n);
    return tc.pkts.dropped_total;
}

static void test_link_down_mid_flow(void **state)
{
    (void)state;
    uint64_t no_reroute = down_mid_flow(0);
    uint64_t reroute = down_mid_flow(5 * US);
    /* without reroute everything after 20 us is lost */
    assert_true(no_reroute > 700);
    /* with it, only what was sent in the 5 us before the port left ECMP,
     * plus the frames queued and on the wire */
    assert_true(reroute > 0 && reroute < 150);
}

/* A degraded host link stretches the FCT by 1/fraction. */
static void test_degrade(void **state)
{
    (void)state;
    struct mroce_sim_topo_cfg c = {.hosts_per_leaf = 4, .leaves = 2};
    struct net n;
    net_open(&n, &c);
    flow(&n, 0, 5, 1, 1 << 20, 0);
    int l = mroce_sim_topo_link_find(n.t, "host0-leaf0");
    assert_int_equal(mroce_sim_topo_link_degrade(n.t, l, false, 0.25, 0), 0);
    net_run(&n, MROCE_SIM_NEVER);
    uint64_t ideal = mroce_sim_topo_ideal_fct_ps(n.t, 1 << 20, PKT, 0, 0, 5);
    double r = (double)bc(&n, 5).last_rx_ns * 1000 / (double)ideal;
    /* 4 x the 21.3 us of serialization, the 4 us of delay unchanged */
    printf("[ degrade  ] host link at 25%%: FCT %.2f x ideal\n", r);
    assert_true(r > 3.45 && r < 3.55);
    net_close(&n);
}

/* ---- Determinism ---- */

struct snapshot {
    struct mroce_sim_topo_counters tc;
    struct mroce_sim_port_counters ports[4][12];
};

static void snap_run(uint64_t seed, struct snapshot *s)
{
    memset(s, 0, sizeof(*s));
    struct mroce_sim_topo_cfg c = {.hosts_per_leaf = 4,
                                   .leaves = 4,
                                   .spines = 4,
                                   .seed = seed,
                                   .sw = {.buffer_bytes = 1 << 20}};
    struct net n;
    net_open(&n, &c);
    random_traffic(&n, 99, 200); /* the same traffic whatever the seed */
    int l = mroce_sim_topo_link_find(n.t, "spine2-leaf3");
    mroce_sim_topo_link_loss(n.t, l, false, 0.05, 0);
    net_run(&n, MROCE_SIM_NEVER);
    mroce_sim_topo_get_counters(n.t, &s->tc);
    for (int i = 0; i < 4; i++)
        for (int p = 0; p < 8; p++)
            mroce_sim_switch_get_port_counters(mroce_sim_topo_leaf(n.t, 0, i),
                                               p, &s->ports[i][p]);
    net_close(&n);
}

static void test_determinism(void **state)
{
    (void)state;
    struct snapshot *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b)),
                    *c = malloc(sizeof(*c));
    snap_run(1, a);
    snap_run(1, b);
    snap_run(2, c);
    assert_memory_equal(a, b, sizeof(*a));
    assert_memory_not_equal(a->ports, c->ports, sizeof(a->ports));
    assert_true(a->tc.ecn_marks > 0);
    free(a);
    free(b);
    free(c);
}

/* ---- Multiplane ---- */

static void test_multiplane(void **state)
{
    (void)state;
    struct mroce_sim_topo_cfg c = {
        .hosts_per_leaf = 2, .leaves = 2, .spines = 2, .planes = 4};
    struct net n;
    net_open(&n, &c);
    for (int i = 0; i < 40; i++) /* ports 100..139: 10 per plane */
        flow(&n, 0, 3, (uint16_t)(100 + i), PKT, 0);
    assert_int_equal(mroce_sim_topo_plane_set(n.t, 2, false, 0), 0);
    net_run(&n, MROCE_SIM_NEVER);
    check_conservation(&n);
    struct mroce_sim_nic *nic = mroce_sim_host_nic(mroce_sim_topo_host(n.t, 0));
    for (int p = 0; p < 4; p++) {
        struct mroce_sim_nic_port_counters pc;
        mroce_sim_nic_get_port_counters(nic, p, &pc);
        assert_int_equal(pc.tx_pkts, 10);
        struct mroce_sim_port_counters sc;
        mroce_sim_switch_get_counters(mroce_sim_topo_leaf(n.t, p, 1), &sc);
        assert_int_equal(sc.tx_pkts, p == 2 ? 0 : 10);
    }
    /* plane 2's ten packets died on its host link */
    assert_int_equal(bc(&n, 3).rx_pkts, 30);
    struct mroce_sim_topo_counters tc;
    mroce_sim_topo_get_counters(n.t, &tc);
    assert_int_equal(tc.pkts.dropped[MROCE_SIM_DROP_LINK_DOWN], 10);
    net_close(&n);
}

/* ---- Benchmark (printed, never asserted) ---- */

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A permutation on 64 hosts (8 leaves x 8, 8 spines, 400G): host h sends
 * 4 MiB to host (h + 8) % 64 on one source port, so ECMP collisions make
 * queues, ECN marks and drops. */
static void test_bench_permutation(void **state)
{
    (void)state;
    struct mroce_sim_topo_cfg c = {.hosts_per_leaf = 8, .leaves = 8, .seed = 1};
    struct net n;
    net_open(&n, &c);
    for (int h = 0; h < 64; h++)
        flow(&n, h, (h + 8) % 64, (uint16_t)(1000 + h), 4 << 20, 0);
    double w0 = wall_s();
    net_run(&n, MROCE_SIM_NEVER);
    double dt = wall_s() - w0;
    check_conservation(&n);
    struct mroce_sim_topo_counters tc;
    mroce_sim_topo_get_counters(n.t, &tc);
    uint64_t last = 0;
    for (int h = 0; h < 64; h++)
        if (bc(&n, h).last_rx_ns > last)
            last = bc(&n, h).last_rx_ns;
    printf("[ bench    ] permutation 64 x 4 MiB: %llu pkts, %llu events in "
           "%.3f s = %.2f M events/s, %.2f M pkts/s; last byte at %.1f us, "
           "drops %llu, ECN marks %llu, peak pkts alive %llu\n",
           (unsigned long long)tc.pkts.injected, (unsigned long long)tc.events,
           dt, (double)tc.events / dt / 1e6,
           (double)tc.pkts.injected / dt / 1e6, (double)last / 1000,
           (unsigned long long)tc.pkts.dropped_total,
           (unsigned long long)tc.ecn_marks,
           (unsigned long long)tc.pkts.peak_in_flight);
    net_close(&n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_addresses),
        cmocka_unit_test(test_lone_flow_fct),
        cmocka_unit_test(test_fat_tree),
        cmocka_unit_test(test_ecmp_spread),
        cmocka_unit_test(test_conservation_random),
        cmocka_unit_test(test_pfc_incast),
        cmocka_unit_test(test_link_down_mid_flow),
        cmocka_unit_test(test_degrade),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_ideal_closed_form),
        cmocka_unit_test(test_multiplane),
        cmocka_unit_test(test_bench_permutation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
