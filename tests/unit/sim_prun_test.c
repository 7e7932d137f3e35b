/* Unit tests for partitions and the parallel run (src/sim/part.c,
 * src/sim/prun.c, the threads comm of src/sim/comm.c), below the
 * experiment driver: synthetic endpoints (sim/blast.h) on a leaf-spine,
 * cut into 1, 2 and 3 ranks running as threads, must deliver every packet
 * at the same nanosecond with the same fabric counters as one process;
 * the cut falls where part.h says; a configuration without lookahead or
 * with more ranks than leaf groups is refused; a window longer than the
 * lookahead is caught, not run out of order. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <mroce/mroce.h>

#include "sim/blast.h"
#include "sim/comm.h"
#include "sim/part.h"
#include "sim/prun.h"
#include "sim/topo.h"

#define LEAVES 4
#define HPL 3
#define HOSTS (LEAVES * HPL)

static struct mroce_sim_topo_cfg topo_cfg(void)
{
    struct mroce_sim_topo_cfg c = {
        .hosts_per_leaf = HPL, .leaves = LEAVES, .spines = 2, .seed = 9};
    c.sw.pfc = 1; /* PFC signals cross the cut too: low thresholds */
    c.sw.pfc_xoff = 24 * 1024;
    c.sw.pfc_xon = 12 * 1024;
    c.sw.ecn_kmin = 2000; /* and marks drawn by the switches' generators */
    c.sw.ecn_kmax = 20000;
    c.sw.ecn_pmax = 0.2;
    return c;
}

/* What one host saw, and the fabric's counters (summed over ranks). */
struct outcome {
    struct mroce_sim_blast_counters host[HOSTS];
    uint64_t delivered, dropped, ecn, pauses, events;
    int rc;
};

struct job {
    int ranks;
    uint64_t window; /* 0: the runner's */
    struct outcome out[4];
};

/* Every host sends to its neighbour and to the hosts one and two leaves
 * over: three senders per receiver fill queues (ECN, PFC) and cross the
 * cut. */
static int add_flows(struct mroce_sim_topo *t, struct mroce_sim_blast *b, int h)
{
    for (int k = 0; k < 3; k++) {
        int d = (h + (k == 0 ? 1 : k * HPL)) % HOSTS;
        struct mroce_sim_blast_flow f = {.src_port = (uint16_t)(1000 + h),
                                         .bytes = 128 * 1024,
                                         .pkt_bytes = 4096,
                                         .ecn = MROCE_ECN_ECT0,
                                         .start_ns = (uint64_t)k * 300};
        mroce_sim_topo_host_addr(t, d, &f.dst);
        if (mroce_sim_blast_add_flow(b, &f) < 0)
            return -1;
    }
    return 0;
}

static void rank_outcome(struct mroce_sim_topo *t, struct outcome *o,
                         struct mroce_sim_blast **b)
{
    for (int h = 0; h < HOSTS; h++)
        if (b[h])
            mroce_sim_blast_get_counters(b[h], &o->host[h]);
    struct mroce_sim_topo_counters tc;
    mroce_sim_topo_get_counters(t, &tc);
    o->delivered = tc.pkts.delivered;
    o->dropped = tc.pkts.dropped_total;
    o->ecn = tc.ecn_marks;
    o->pauses = tc.pfc_pauses;
    o->events = tc.events;
}

/* One rank (a thread: no cmocka asserts here; failures go to o->rc). */
static void run_rank(const struct mroce_sim_comm *comm, void *arg)
{
    struct job *j = arg;
    int me = mroce_sim_comm_rank(comm);
    struct outcome *o = &j->out[me];
    struct mroce_sim_topo_cfg c = topo_cfg();
    struct mroce_sim_topo *t = NULL;
    struct mroce_sim_part *p = NULL;
    struct mroce_sim_prun *run = NULL;
    struct mroce_sim_blast *b[HOSTS] = {0};
    char why[160];
    o->rc = -1; /* set up: the ranks agree, so all get this far or none */
    if (mroce_sim_topo_create(&c, &t) ||
        mroce_sim_part_create(t, j->ranks, &p, why, sizeof(why)) ||
        mroce_sim_prun_create(t, p, comm, 0, &run))
        goto out;
    if (j->window)
        mroce_sim_prun_set_window(run, j->window);
    for (int h = 0; h < HOSTS; h++) {
        if (p->owner[mroce_sim_topo_host_lp(t, h)] != me)
            continue;
        struct mroce_addr a;
        mroce_sim_topo_host_addr(t, h, &a);
        if (!(b[h] = mroce_sim_blast_create(&a, 4096)) ||
            add_flows(t, b[h], h) ||
            mroce_sim_host_attach(mroce_sim_topo_host(t, h),
                                  &mroce_sim_blast_ops, b[h]))
            goto out;
    }
    o->rc = mroce_sim_prun_run(run, MROCE_SIM_NEVER, NULL);
    rank_outcome(t, o, b);
out:
    mroce_sim_prun_destroy(run);
    mroce_sim_part_destroy(p);
    mroce_sim_topo_destroy(t);
    for (int h = 0; h < HOSTS; h++)
        mroce_sim_blast_destroy(b[h]);
}

static void run_job(struct job *j)
{
    if (j->ranks == 1)
        run_rank(NULL, j);
    else
        assert_int_equal(mroce_sim_comm_threads_run(j->ranks, run_rank, j), 0);
}

/* The ranks' outcomes as one: each host from its rank, counters summed. */
static struct outcome merged(const struct job *j)
{
    struct outcome m = {0};
    for (int r = 0; r < j->ranks; r++) {
        const struct outcome *o = &j->out[r];
        for (int h = 0; h < HOSTS; h++)
            if (o->host[h].tx_pkts || o->host[h].rx_pkts)
                m.host[h] = o->host[h];
        m.delivered += o->delivered;
        m.dropped += o->dropped;
        m.ecn += o->ecn;
        m.pauses += o->pauses;
        m.events += o->events;
        m.rc = m.rc ? m.rc : o->rc;
    }
    return m;
}

static void test_ranks_run_like_one(void **state)
{
    (void)state;
    struct job one = {.ranks = 1};
    run_job(&one);
    struct outcome a = merged(&one);
    assert_int_equal(a.rc, 0);
    print_message("[ prun     ] 1 rank: %llu packets, %llu ECN marks, %llu "
                  "pauses\n",
                  (unsigned long long)a.delivered, (unsigned long long)a.ecn,
                  (unsigned long long)a.pauses);
    assert_true(a.ecn > 0 && a.pauses > 0); /* queues did fill */
    for (int ranks = 2; ranks <= 4; ranks++) {
        struct job *j = calloc(1, sizeof(*j));
        j->ranks = ranks;
        run_job(j);
        struct outcome b = merged(j);
        assert_int_equal(b.rc, 0);
        for (int h = 0; h < HOSTS; h++) {
            assert_int_equal(a.host[h].rx_pkts, b.host[h].rx_pkts);
            assert_int_equal(a.host[h].rx_ce, b.host[h].rx_ce);
            assert_int_equal(a.host[h].first_rx_ns, b.host[h].first_rx_ns);
            assert_int_equal(a.host[h].last_rx_ns, b.host[h].last_rx_ns);
            assert_int_equal(a.host[h].last_tx_ns, b.host[h].last_tx_ns);
        }
        assert_int_equal(a.delivered, b.delivered);
        assert_int_equal(a.dropped, b.dropped);
        assert_int_equal(a.ecn, b.ecn);
        assert_int_equal(a.pauses, b.pauses);
        assert_int_equal(a.events, b.events); /* no LP 0 events here */
        print_message("[ prun     ] %d ranks: %llu packets, %llu ECN marks, "
                      "%llu pauses, %llu events, as one process\n",
                      ranks, (unsigned long long)b.delivered,
                      (unsigned long long)b.ecn, (unsigned long long)b.pauses,
                      (unsigned long long)b.events);
        free(j);
    }
}

/* A window beyond the lookahead would run events before what other
 * ranks send for them: the runner refuses instead. */
static void test_window_beyond_lookahead_refused(void **state)
{
    (void)state;
    struct job *j = calloc(1, sizeof(*j));
    j->ranks = 2;
    j->window = 5 * MROCE_SIM_PS_PER_US;
    run_job(j);
    assert_int_equal(j->out[0].rc, MROCE_EPROTO);
    assert_int_equal(j->out[1].rc, MROCE_EPROTO);
    free(j);
}

/* Leaf-spine: the cut is on leaf-spine cables only; fat-tree by pod: on
 * agg-core cables only; every cut link joins two ranks; lookahead is the
 * link delay. */
static void check_cut(const struct mroce_sim_topo_cfg *c, int ranks,
                      unsigned kinds_ok)
{
    struct mroce_sim_topo *t;
    assert_int_equal(mroce_sim_topo_create(c, &t), 0);
    struct mroce_sim_part *p;
    char why[160];
    assert_int_equal(mroce_sim_part_create(t, ranks, &p, why, sizeof(why)), 0);
    int n_cut = 0;
    for (int i = 0; i < mroce_sim_topo_n_links(t); i++) {
        const struct mroce_sim_link_info *li = mroce_sim_topo_link_info(t, i);
        if (!mroce_sim_part_is_cut(p, li->link))
            continue;
        n_cut++;
        assert_true(kinds_ok & (1u << li->kind));
    }
    assert_int_equal(n_cut, p->n_cut);
    assert_true(n_cut > 0);
    assert_int_equal(p->lookahead_ps, MROCE_SIM_PS_PER_US);
    assert_int_equal(p->owner[0], -1);
    int hosts = 0;
    for (int r = 0; r < ranks; r++) {
        assert_true(p->rank[r].hosts > 0 && p->rank[r].leaf_groups > 0);
        hosts += p->rank[r].hosts;
    }
    assert_int_equal(hosts, mroce_sim_topo_n_hosts(t));
    mroce_sim_part_destroy(p);
    mroce_sim_topo_destroy(t);
}

static void test_cut_placement(void **state)
{
    (void)state;
    unsigned spine =
        1u << MROCE_SIM_LINK_SPINE_UP | 1u << MROCE_SIM_LINK_SPINE_DOWN;
    unsigned core =
        1u << MROCE_SIM_LINK_CORE_UP | 1u << MROCE_SIM_LINK_CORE_DOWN;
    struct mroce_sim_topo_cfg ls = topo_cfg();
    ls.planes = 2;
    check_cut(&ls, 3, spine);
    struct mroce_sim_topo_cfg ft = {
        .hosts_per_leaf = 2, .leaves = 8, .spines = 2, .pods = 4};
    check_cut(&ft, 2, core);         /* 2 pods each */
    check_cut(&ft, 4, core);         /* a pod each */
    check_cut(&ft, 8, spine | core); /* pods split: leaf-agg cut too */
}

static void test_refusals(void **state)
{
    (void)state;
    struct mroce_sim_topo_cfg c = topo_cfg();
    struct mroce_sim_topo *t;
    struct mroce_sim_part *p;
    char why[160];
    assert_int_equal(mroce_sim_topo_create(&c, &t), 0);
    assert_int_equal(mroce_sim_part_create(t, LEAVES + 1, &p, why, sizeof(why)),
                     MROCE_EINVAL);
    assert_null(p);
    assert_non_null(strstr(why, "leaf group"));
    assert_int_equal(mroce_sim_part_create(t, 0, &p, why, sizeof(why)),
                     MROCE_EINVAL);
    mroce_sim_topo_destroy(t);
    c.delay_ps = MROCE_SIM_ZERO_DELAY;
    assert_int_equal(mroce_sim_topo_create(&c, &t), 0);
    assert_int_equal(mroce_sim_part_create(t, 1, &p, why, sizeof(why)), 0);
    mroce_sim_part_destroy(p); /* one rank: nothing is cut */
    assert_int_equal(mroce_sim_part_create(t, 2, &p, why, sizeof(why)),
                     MROCE_EINVAL);
    assert_non_null(strstr(why, "no lookahead"));
    print_message("[ refuse   ] %s\n", why);
    mroce_sim_topo_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranks_run_like_one),
        cmocka_unit_test(test_window_beyond_lookahead_refused),
        cmocka_unit_test(test_cut_placement),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
