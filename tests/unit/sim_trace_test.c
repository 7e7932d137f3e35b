/* Unit test for simulator traces (src/sim/trace.c): frames that traced
 * links start land in a pcap file with simulated nanosecond timestamps,
 * in time order, with the addresses and ports of the simulated packets;
 * read back with libpcap. */
#define _DEFAULT_SOURCE /* mkstemp, and u_char for <pcap/pcap.h> */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pcap/pcap.h>

#include "sim/blast.h"
#include "sim/defaults.h"
#include "sim/topo.h"
#include "sim/trace.h"

#define ETH_IP4_UDP 42 /* Ethernet 14 + IPv4 20 + UDP 8 */

static void test_trace_two_links(void **state)
{
    (void)state;
    char path[] = "/tmp/sim_trace_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);

    struct mroce_sim_topo_cfg c = {
        .hosts_per_leaf = 2, .leaves = 2, .spines = 2};
    struct mroce_sim_topo *t;
    assert_int_equal(mroce_sim_topo_create(&c, &t), 0);
    struct mroce_addr a0, a2;
    mroce_sim_topo_host_addr(t, 0, &a0);
    mroce_sim_topo_host_addr(t, 2, &a2);
    struct mroce_sim_blast *b0 = mroce_sim_blast_create(&a0, 1000);
    struct mroce_sim_blast *b2 = mroce_sim_blast_create(&a2, 1000);
    mroce_sim_host_attach(mroce_sim_topo_host(t, 0), &mroce_sim_blast_ops, b0);
    mroce_sim_host_attach(mroce_sim_topo_host(t, 2), &mroce_sim_blast_ops, b2);
    struct mroce_sim_blast_flow f = {
        .dst = a2, .src_port = 4242, .bytes = 20000, .pkt_bytes = 1000};
    assert_true(mroce_sim_blast_add_flow(b0, &f) >= 0);

    struct mroce_sim_trace *tr;
    assert_int_equal(mroce_sim_trace_open(path, &tr), 0);
    const char *names[] = {"host0-leaf0", "leaf1-host2"};
    for (int i = 0; i < 2; i++) {
        int id = mroce_sim_topo_link_find(t, names[i]);
        mroce_sim_trace_add_link(tr, mroce_sim_topo_link_info(t, id)->link);
    }
    mroce_sim_ev_run(mroce_sim_topo_ev(t), MROCE_SIM_NEVER);
    assert_int_equal(mroce_sim_trace_count(tr), 40);
    assert_int_equal(mroce_sim_trace_errors(tr), 0);
    assert_int_equal(mroce_sim_trace_close(tr), 0);

    char err[PCAP_ERRBUF_SIZE];
    pcap_t *pc = pcap_open_offline_with_tstamp_precision(
        path, PCAP_TSTAMP_PRECISION_NANO, err);
    assert_non_null(pc);
    struct pcap_pkthdr *h;
    const u_char *d;
    int n = 0;
    uint64_t prev = 0;
    while (pcap_next_ex(pc, &h, &d) == 1) {
        uint64_t ns =
            (uint64_t)h->ts.tv_sec * 1000000000ull + (uint64_t)h->ts.tv_usec;
        assert_true(ns >= prev);
        prev = ns;
        if (n == 0) /* the first frame starts on host0's link at time 0 */
            assert_int_equal(ns, 0);
        assert_int_equal(h->caplen, ETH_IP4_UDP + 1000);
        assert_memory_equal(d + 14 + 12, a0.ip, 4); /* IPv4 source */
        assert_memory_equal(d + 14 + 16, a2.ip, 4); /* IPv4 destination */
        assert_int_equal(d[34] << 8 | d[35], 4242); /* UDP source port */
        n++;
    }
    pcap_close(pc);
    assert_int_equal(n, 40);
    /* the last frame starts on leaf1-host2 after 3 hops of the first */
    uint64_t frame_ps = (1000 + MROCE_SIM_WIRE_OVERHEAD_V4) * 20ull;
    assert_true(prev * 1000 >= 3 * MROCE_SIM_PS_PER_US + 20 * frame_ps);
    unlink(path);
    mroce_sim_topo_destroy(t);
    mroce_sim_blast_destroy(b0);
    mroce_sim_blast_destroy(b2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_two_links),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
