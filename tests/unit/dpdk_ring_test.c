/* The DPDK datapath in one process: two engines, each on its own net_ring
 * port, the ports cross-connected by two rte_rings. Every operation type
 * with data verified, over IPv4 (peer found by ARP) and IPv6 (by ND), with
 * the impairment layer, and bad frames injected into a port's receive
 * ring and counted by reason. EAL: --no-huge, one lcore, bounded time. */
#ifndef MROCE_HAVE_DPDK
int main(void)
{
    return 77; /* built without DPDK */
}
#else
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <mroce/mroce.h>
#include <mroce/mroce_dp.h>

#include "io/dpdk/dpdk.h"
#include "wire/be.h"

#define MSG (256 * 1024)
#define MEM (4 * MSG)
#define DEADLINE_NS 20000000000ull

static struct rte_ring *ring_ab, *ring_ba; /* A transmits into ab */
static struct rte_mempool *inject_mp;

struct side {
    struct mroce_dp *dp;
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    struct mroce_conn *conn;
    struct mroce_mr *mr;
    uint8_t *mem;
};

struct pair {
    struct side s[2];
};

static int eal_setup(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "mroce_ring_%d", (int)getpid());
    char *argv[] = {"dpdk_ring_test", "--no-huge",     "--no-pci", "-m", "512",
                    "--no-shconf",    "--file-prefix", prefix,     "-l", "0",
                    "--no-telemetry", "--log-level",   "*:error",  NULL};
    int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
    if (rte_eal_init(argc, argv) < 0)
        return -1;
    ring_ab = rte_ring_create("ab", 4096, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
    ring_ba = rte_ring_create("ba", 4096, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (!ring_ab || !ring_ba)
        return -1;
    if (rte_eth_from_rings("ring_a", &ring_ba, 1, &ring_ab, 1, 0) < 0 ||
        rte_eth_from_rings("ring_b", &ring_ab, 1, &ring_ba, 1, 0) < 0)
        return -1;
    inject_mp = rte_pktmbuf_pool_create("inject", 256, 0, 0, 4096, 0);
    return inject_mp ? 0 : -1;
}

static void addr_of(const char *ip, struct mroce_addr *a)
{
    assert_int_equal(mroce_addr_parse(ip, a), 0);
}

static void side_open(struct side *s, const char *port, const char *ip,
                      const struct mroce_impair *imp)
{
    struct mroce_dpdk_attr da = {
        .port = port, .n_mbufs = 4096, .rx_ring = 512, .tx_ring = 512};
    struct mroce_dp_attr a = {
        .kind = MROCE_DP_DPDK, .local_ip = ip, .dpdk = &da};
    if (imp)
        a.impair = *imp;
    addr_of(ip, &a.ctx.addr);
    a.ctx.deterministic = 1;
    a.ctx.seed = 7;
    assert_int_equal(mroce_dp_create(&a, &s->dp), 0);
    s->ctx = mroce_dp_ctx(s->dp);
    s->mem = malloc(MEM);
    assert_non_null(s->mem);
    assert_int_equal(mroce_pd_alloc(s->ctx, &s->pd), 0);
    assert_int_equal(mroce_cq_create(s->ctx, 256, &s->cq), 0);
    unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                   MROCE_ACCESS_REMOTE_READ;
    assert_int_equal(mroce_reg_mr(s->pd, s->mem, MEM, acc, &s->mr), 0);
    struct mroce_conn_attr ca = {
        .send_cq = s->cq, .recv_cq = s->cq, .n_paths = 4};
    assert_int_equal(mroce_conn_create(s->pd, &ca, &s->conn), 0);
}

/* Frames a closed pair left in the rings (a CLOSE, a retransmission)
 * would reach the next pair, whose connections have the same ids (seed
 * 7) and may be closed by them: each pair starts on empty rings. */
static void rings_drain(void)
{
    void *m;
    while (rte_ring_dequeue(ring_ab, &m) == 0)
        rte_pktmbuf_free(m);
    while (rte_ring_dequeue(ring_ba, &m) == 0)
        rte_pktmbuf_free(m);
}

static void pair_open(struct pair *p, bool v6, const struct mroce_impair *imp)
{
    rings_drain();
    side_open(&p->s[0], "net_ring_ring_a", v6 ? "fd00::1" : "10.9.0.1", imp);
    side_open(&p->s[1], "net_ring_ring_b", v6 ? "fd00::2" : "10.9.0.2", imp);
    struct mroce_conn_params pa, pb;
    mroce_conn_get_params(p->s[0].conn, &pa);
    mroce_conn_get_params(p->s[1].conn, &pb);
    assert_int_equal(mroce_conn_connect(p->s[0].conn, &pb), 0);
    assert_int_equal(mroce_conn_connect(p->s[1].conn, &pa), 0);
}

static void side_close(struct side *s)
{
    mroce_conn_destroy(s->conn);
    mroce_dereg_mr(s->mr);
    mroce_cq_destroy(s->cq);
    mroce_pd_free(s->pd);
    mroce_dp_destroy(s->dp);
    free(s->mem);
}

static void pair_close(struct pair *p)
{
    side_close(&p->s[0]);
    side_close(&p->s[1]);
}

static void dump(struct pair *p)
{
    for (int i = 0; i < 2; i++) {
        struct mroce_dp_counters d;
        struct mroce_dpdk_counters c;
        struct mroce_ctx_counters x;
        mroce_dp_get_counters(p->s[i].dp, &d);
        mroce_dpdk_get_counters(p->s[i].dp, &c);
        mroce_ctx_get_counters(p->s[i].ctx, &x);
        print_message(
            "side %d: rx %llu tx %llu bad %llu txdrop %llu arp "
            "%llu/%llu nd %llu/%llu no_neigh %llu ring_full %llu "
            "alloc_fail %llu ctx rx %llu tx %llu unknown %llu\n",
            i, (unsigned long long)d.rx_pkts, (unsigned long long)d.tx_pkts,
            (unsigned long long)d.rx_bad_frame,
            (unsigned long long)d.tx_dropped, (unsigned long long)c.arp_rx,
            (unsigned long long)c.arp_tx, (unsigned long long)c.nd_rx,
            (unsigned long long)c.nd_tx, (unsigned long long)c.tx_no_neigh,
            (unsigned long long)c.tx_ring_full,
            (unsigned long long)c.tx_alloc_fail, (unsigned long long)x.rx_pkts,
            (unsigned long long)x.tx_pkts,
            (unsigned long long)x.drop_unknown_conn);
    }
}

/* Progresses both sides until `want` completions arrived on side w. */
static void run_until(struct pair *p, int w, int want, struct mroce_wc *wc)
{
    int got = 0;
    uint64_t end = mroce_dp_now_ns() + DEADLINE_NS;
    while (got < want) {
        mroce_progress(p->s[0].dp);
        mroce_progress(p->s[1].dp);
        int n = mroce_poll_cq(p->s[w].cq, want - got, wc + got);
        for (int i = 0; i < n; i++)
            assert_int_equal(wc[got + i].status, MROCE_WC_SUCCESS);
        got += n;
        if (mroce_dp_now_ns() > end)
            dump(p);
        assert_true(mroce_dp_now_ns() < end);
    }
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(i * 131 + seed + (i >> 9));
}

static struct mroce_send_wr wr_of(struct side *from, struct side *to,
                                  size_t off_local, size_t off_remote)
{
    struct mroce_send_wr wr = {
        .wr_id = 1,
        .sge = {(uint64_t)(uintptr_t)(from->mem + off_local), MSG,
                mroce_mr_lkey(from->mr)},
        .remote_addr = (uint64_t)(uintptr_t)(to->mem + off_remote),
        .rkey = mroce_mr_rkey(to->mr),
        .imm = 0xfeed,
    };
    return wr;
}

/* WRITE, WRITE_IMM, SEND, SEND_IMM from A to B, READ by A from B. */
static void every_op(struct pair *p)
{
    struct side *a = &p->s[0], *b = &p->s[1];
    struct mroce_wc wc[8];
    fill(a->mem, MEM, 1);
    fill(b->mem, MEM, 2);
    struct mroce_send_wr w = wr_of(a, b, 0, 0);
    assert_int_equal(mroce_post_write(a->conn, &w), 0);
    run_until(p, 0, 1, wc);
    assert_memory_equal(a->mem, b->mem, MSG);

    struct mroce_recv_wr ri = {.wr_id = 8}; /* WRITE_IMM consumes one */
    assert_int_equal(mroce_post_recv(b->conn, &ri), 0);
    struct mroce_send_wr wi = wr_of(a, b, MSG, MSG);
    assert_int_equal(mroce_post_write_imm(a->conn, &wi), 0);
    run_until(p, 1, 1, wc);
    assert_int_equal(wc[0].opcode, MROCE_WC_RECV_RDMA_WITH_IMM);
    assert_int_equal(wc[0].imm, 0xfeed);
    run_until(p, 0, 1, wc);
    assert_memory_equal(a->mem + MSG, b->mem + MSG, MSG);

    for (int imm = 0; imm < 2; imm++) {
        struct mroce_recv_wr r = {
            .wr_id = 9,
            .sge = {(uint64_t)(uintptr_t)(b->mem + 2 * MSG), MSG,
                    mroce_mr_lkey(b->mr)}};
        assert_int_equal(mroce_post_recv(b->conn, &r), 0);
        fill(a->mem + 2 * MSG, MSG, 3 + (unsigned)imm);
        struct mroce_send_wr s = wr_of(a, b, 2 * MSG, 0);
        assert_int_equal(imm ? mroce_post_send_imm(a->conn, &s)
                             : mroce_post_send(a->conn, &s),
                         0);
        run_until(p, 1, 1, wc);
        assert_int_equal(wc[0].opcode, MROCE_WC_RECV);
        assert_int_equal(wc[0].byte_len, MSG);
        assert_int_equal(wc[0].has_imm, imm);
        run_until(p, 0, 1, wc);
        assert_memory_equal(a->mem + 2 * MSG, b->mem + 2 * MSG, MSG);
    }

    fill(b->mem + 3 * MSG, MSG, 9);
    struct mroce_send_wr rd = wr_of(a, b, 3 * MSG, 3 * MSG);
    assert_int_equal(mroce_post_read(a->conn, &rd), 0);
    run_until(p, 0, 1, wc);
    assert_int_equal(wc[0].opcode, MROCE_WC_RDMA_READ);
    assert_memory_equal(a->mem + 3 * MSG, b->mem + 3 * MSG, MSG);
}

static void test_ipv4_arp(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, false, NULL);
    every_op(&p);
    struct mroce_dpdk_counters c;
    assert_int_equal(mroce_dpdk_get_counters(p.s[0].dp, &c), 0);
    assert_true(c.arp_tx >= 1); /* A asked for B */
    assert_true(c.arp_rx >= 1);
    struct mroce_dp_counters dc;
    mroce_dp_get_counters(p.s[1].dp, &dc);
    assert_int_equal(dc.rx_bad_frame, 0);
    assert_true(dc.rx_pkts >= 4 * MSG / 4096);
    pair_close(&p);
}

static void test_ipv6_nd(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, true, NULL);
    every_op(&p);
    struct mroce_dpdk_counters c;
    assert_int_equal(mroce_dpdk_get_counters(p.s[1].dp, &c), 0);
    assert_true(c.nd_rx >= 1);
    assert_true(c.nd_tx >= 1);
    assert_int_equal(c.drop[MROCE_DPDK_DROP_UDP_CSUM], 0);
    pair_close(&p);
}

static void test_impaired(void **state)
{
    (void)state;
    struct mroce_impair imp = {.loss = 0.02,
                               .reorder = 0.05,
                               .reorder_ns = 20000,
                               .duplicate = 0.02,
                               .seed = 11};
    struct pair p;
    pair_open(&p, false, &imp);
    every_op(&p);
    struct mroce_dp_counters dc;
    mroce_dp_get_counters(p.s[0].dp, &dc);
    assert_true(dc.imp_lost > 0);
    assert_true(dc.imp_dup > 0);
    assert_true(dc.imp_reordered > 0);
    struct mroce_conn_counters cc;
    mroce_conn_get_counters(p.s[0].conn, &cc);
    assert_true(cc.retx_pkts > 0);
    pair_close(&p);
}

/* ---- Transmit buffers and the phase profile ---- */

static unsigned pool_plus_stash(const struct mroce_dpdk *q)
{
    return rte_mempool_avail_count(q->mp) + q->n_stash;
}

/* Buffers the loop hands back unused wait in the stash (at most
 * MROCE_DPDK_STASH, the rest to the pool) and come out first, untouched
 * since they were allocated; none is lost or handed out twice. */
static void test_tx_stash(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, false, NULL);
    struct mroce_dp *dp = p.s[0].dp;
    struct mroce_dpdk *q = dp->priv;
    struct mroce_dp_pkt a[MROCE_DPDK_BURST_MAX], b[MROCE_DPDK_BURST_MAX];
    size_t cap = mroce_ctx_max_pkt(p.s[0].ctx);
    unsigned total = pool_plus_stash(q);
    assert_int_equal(dp->ops->tx_alloc(dp, a, 32, cap), 32);
    assert_int_equal(pool_plus_stash(q), total - 32);
    dp->ops->tx_free(dp, a + 16, 16);
    assert_int_equal(q->n_stash, 16);
    assert_int_equal(dp->ops->tx_alloc(dp, b, 8, cap), 8);
    for (int i = 0; i < 8; i++) /* the 8 most recent, as they lay */
        assert_ptr_equal(b[i].priv, a[24 + i].priv);
    struct rte_mbuf *m = b[0].priv;
    assert_int_equal(m->data_off, RTE_PKTMBUF_HEADROOM);
    assert_int_equal(m->data_len, 0);
    assert_int_equal(rte_mbuf_refcnt_read(m), 1);
    dp->ops->tx_free(dp, b, 8);
    dp->ops->tx_free(dp, a, 16);
    assert_int_equal(q->n_stash, 32);
    assert_int_equal(dp->ops->tx_alloc(dp, a, MROCE_DPDK_BURST_MAX, cap),
                     MROCE_DPDK_BURST_MAX);
    assert_int_equal(q->n_stash, 0);
    assert_int_equal(dp->ops->tx_alloc(dp, b, MROCE_DPDK_BURST_MAX, cap),
                     MROCE_DPDK_BURST_MAX);
    dp->ops->tx_free(dp, a, MROCE_DPDK_BURST_MAX);
    dp->ops->tx_free(dp, b, MROCE_DPDK_BURST_MAX);
    assert_int_equal(q->n_stash, MROCE_DPDK_STASH);
    assert_int_equal(pool_plus_stash(q), total);
    every_op(&p);
    pair_close(&p);
}

/* The phases add up to the TSC time since the datapath opened, and each
 * side spends time where its role says. */
static void test_phases(void **state)
{
    (void)state;
    struct pair p;
    uint64_t t0 = rte_rdtsc();
    pair_open(&p, false, NULL);
    every_op(&p);
    uint64_t t1 = rte_rdtsc();
    for (int i = 0; i < 2; i++) {
        struct mroce_dpdk_counters c;
        assert_int_equal(mroce_dpdk_get_counters(p.s[i].dp, &c), 0);
        uint64_t sum = 0;
        for (int k = 0; k < MROCE_DPDK_PH_N; k++)
            sum += c.cyc[k];
        assert_true(c.passes > 0);
        assert_true(sum > 0 && sum <= t1 - t0);
        assert_true(c.cyc[MROCE_DPDK_PH_ENG_TX] > 0);
        assert_true(c.cyc[MROCE_DPDK_PH_ENG_RX] > 0);
        assert_true(c.cyc[MROCE_DPDK_PH_RX] > 0);
        assert_true(c.cyc[MROCE_DPDK_PH_TX] > 0);
        assert_true(c.cyc[MROCE_DPDK_PH_POOL] > 0);
    }
    pair_close(&p);
}

/* ---- Bad frames ---- */

/* A valid frame from 10.9.0.1 to B's address and port, 64 payload bytes,
 * then `edit` spoils it. */
struct bad {
    const char *what;
    int reason; /* -1: reaches the engine, which drops it */
    void (*edit)(uint8_t *f, uint16_t *len);
};

static void e_ethertype(uint8_t *f, uint16_t *len)
{
    (void)len;
    mroce_be16_put(f + 12, 0x88cc); /* LLDP */
}
static void e_trunc_ip(uint8_t *f, uint16_t *len)
{
    (void)f;
    *len = MROCE_ETH_LEN + 10;
}
static void e_ip_len(uint8_t *f, uint16_t *len)
{
    (void)len;
    mroce_be16_put(f + MROCE_ETH_LEN + 2, 2000); /* beyond the frame */
}
static void e_ip_csum(uint8_t *f, uint16_t *len)
{
    (void)len;
    f[MROCE_ETH_LEN + 10] ^= 0x55;
}
static void e_ip_version(uint8_t *f, uint16_t *len)
{
    (void)len;
    f[MROCE_ETH_LEN] = 0x55;
}
static void e_not_our_ip(uint8_t *f, uint16_t *len)
{
    (void)len;
    f[MROCE_ETH_LEN + 19] = 99;
    f[MROCE_ETH_LEN + 10] = f[MROCE_ETH_LEN + 11] = 0;
    uint16_t c = (uint16_t)~mroce_dpdk_csum_fold(
        mroce_dpdk_csum_add(0, f + MROCE_ETH_LEN, MROCE_IP4_LEN));
    memcpy(f + MROCE_ETH_LEN + 10, &c, 2);
}
static void e_trunc_udp(uint8_t *f, uint16_t *len)
{
    (void)len;
    mroce_be16_put(f + MROCE_ETH_LEN + MROCE_IP4_LEN + 4, 3000);
}
static void e_port(uint8_t *f, uint16_t *len)
{
    (void)len;
    mroce_be16_put(f + MROCE_ETH_LEN + MROCE_IP4_LEN + 2, 9);
}
static void e_udp_csum(uint8_t *f, uint16_t *len)
{
    (void)len;
    mroce_be16_put(f + MROCE_ETH_LEN + MROCE_IP4_LEN + 6, 0x1234);
}
static void e_junk_payload(uint8_t *f, uint16_t *len)
{
    (void)f;
    (void)len; /* valid UDP; the engine sees garbage */
}

static const struct bad bads[] = {
    {"ethertype", MROCE_DPDK_DROP_ETHERTYPE, e_ethertype},
    {"truncated ip", MROCE_DPDK_DROP_TRUNC_IP, e_trunc_ip},
    {"ip length", MROCE_DPDK_DROP_TRUNC_IP, e_ip_len},
    {"ip checksum", MROCE_DPDK_DROP_IP_CSUM, e_ip_csum},
    {"ip version", MROCE_DPDK_DROP_BAD_IP, e_ip_version},
    {"not our ip", MROCE_DPDK_DROP_NOT_OUR_IP, e_not_our_ip},
    {"truncated udp", MROCE_DPDK_DROP_TRUNC_UDP, e_trunc_udp},
    {"udp port", MROCE_DPDK_DROP_NOT_OUR_PORT, e_port},
    {"udp checksum", MROCE_DPDK_DROP_UDP_CSUM, e_udp_csum},
    {"junk payload", -1, e_junk_payload},
};

static void inject(const uint8_t *f, uint16_t len)
{
    struct rte_mbuf *m = rte_pktmbuf_alloc(inject_mp);
    assert_non_null(m);
    memcpy(rte_pktmbuf_append(m, len), f, len);
    assert_int_equal(rte_ring_enqueue(ring_ab, m), 0);
}

static void good_frame(uint8_t *f, const uint8_t *dmac)
{
    struct mroce_pkt_meta m = {
        .src_port = 50000, .dst_port = MROCE_UDP_PORT, .ecn = MROCE_ECN_ECT0};
    addr_of("10.9.0.1", &m.src);
    addr_of("10.9.0.2", &m.dst);
    const uint8_t smac[6] = {2, 0, 0, 0, 0, 1};
    memset(f, 0xab, 200);
    mroce_dpdk_hdr_write(f, dmac, smac, &m, 64);
}

static void test_bad_frames(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, false, NULL);
    uint8_t mac[6], f[256];
    assert_int_equal(mroce_dpdk_mac(p.s[1].dp, mac), 0);
    size_t nb = sizeof(bads) / sizeof(bads[0]);
    for (size_t i = 0; i < nb; i++) {
        uint16_t len = (uint16_t)(mroce_dpdk_hdr_len(MROCE_AF_INET) + 64);
        good_frame(f, mac);
        bads[i].edit(f, &len);
        inject(f, len);
    }
    for (int k = 0; k < 4; k++)
        mroce_progress(p.s[1].dp);
    struct mroce_dpdk_counters c;
    struct mroce_dp_counters dc;
    struct mroce_ctx_counters cc;
    mroce_dpdk_get_counters(p.s[1].dp, &c);
    mroce_dp_get_counters(p.s[1].dp, &dc);
    mroce_ctx_get_counters(p.s[1].ctx, &cc);
    uint64_t want[MROCE_DPDK_DROP_N] = {0};
    for (size_t i = 0; i < nb; i++)
        if (bads[i].reason >= 0)
            want[bads[i].reason]++;
    for (int r = 0; r < MROCE_DPDK_DROP_N; r++) {
        if (c.drop[r] != want[r])
            print_error("%s: %llu, want %llu\n", mroce_dpdk_drop_str(r),
                        (unsigned long long)c.drop[r],
                        (unsigned long long)want[r]);
        assert_int_equal(c.drop[r], want[r]);
    }
    assert_int_equal(dc.rx_bad_frame, nb - 1);
    assert_int_equal(dc.rx_pkts, 1);
    assert_true(cc.drop_truncated + cc.drop_bad_version + cc.drop_bad_crc +
                    cc.drop_bad_opcode + cc.drop_unknown_conn >=
                1);
    every_op(&p); /* and the port still works */
    pair_close(&p);
}

/* ---- Zero-copy transmit (zc.c) ---- */

/* A chain carries headers, the payload where it lies and the ICRC, in
 * order; flattening it gives the same bytes in one mbuf and hands the
 * payload's slot back. Payloads too short to pay off are not chained. */
static void test_zc_chain(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, false, NULL);
    struct mroce_dp *dp = p.s[0].dp;
    struct mroce_dpdk *q = dp->priv;
    assert_false(q->zc_on); /* net_ring may read after tx_burst */
    assert_true(mroce_dpdk_zc_force(q));
    struct mroce_dp_pkt k;
    size_t cap = mroce_ctx_max_pkt(p.s[0].ctx);
    assert_int_equal(dp->ops->tx_alloc(dp, &k, 1, cap), 1);
    uint8_t want[2048];
    fill(want, sizeof(want), 5);
    const uint32_t hl = 28, pl = 1000;
    memcpy(k.buf, want, hl);
    memcpy(k.buf + hl + pl, want + hl + pl, 4); /* the ICRC */
    k.pay = p.s[0].mem;
    memcpy(p.s[0].mem, want + hl, pl);
    k.hdr_len = hl;
    k.pay_len = pl;
    k.len = hl + pl + 4;
    struct rte_mbuf *m = k.priv;
    assert_true(mroce_dpdk_zc_attach(q, m, &k));
    m->pkt_len = q->hdr_len + k.len;
    assert_int_equal(m->nb_segs, 3);
    assert_int_equal(mroce_dpdk_zc_held(q), 1);
    assert_ptr_equal(rte_pktmbuf_mtod(m->next, uint8_t *), p.s[0].mem);
    uint8_t got[2048];
    const uint8_t *g = rte_pktmbuf_read(m, q->hdr_len, k.len, got);
    assert_memory_equal(g, want, k.len);
    mroce_dpdk_zc_flatten(q, m);
    assert_int_equal(m->nb_segs, 1);
    assert_int_equal(m->data_len, q->hdr_len + k.len);
    assert_memory_equal(rte_pktmbuf_mtod(m, uint8_t *) + q->hdr_len, want,
                        k.len);
    assert_int_equal(mroce_dpdk_zc_held(q), 0);
    k.pay_len = 100; /* below the threshold: copied */
    assert_false(mroce_dpdk_zc_attach(q, m, &k));
    assert_int_equal(q->cnt.tx_zc_short, 0);
    rte_pktmbuf_free(m);
    q->zc_on = false;
    pair_close(&p);
}

/* net_ring keeps sent frames in its ring, where the peer takes them
 * later: with zero-copy forced on, the first burst's payloads are still
 * attached after tx_burst, so the port turns zero-copy off; the chains
 * the peer gets are dropped (multiseg) and retransmitted as copies, and
 * every operation still completes with its data. */
static void test_zc_async(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, false, NULL);
    struct mroce_dpdk *q = p.s[0].dp->priv;
    assert_true(mroce_dpdk_zc_force(q));
    every_op(&p);
    assert_false(q->zc_on);
    assert_true(q->cnt.tx_zc > 0);
    assert_true(q->cnt.tx_zc_async > 0);
    struct mroce_dpdk_counters c;
    mroce_dpdk_get_counters(p.s[1].dp, &c);
    assert_true(c.drop[MROCE_DPDK_DROP_MULTISEG] > 0);
    assert_int_equal(mroce_dpdk_zc_held(q), 0); /* the peer freed them */
    pair_close(&p);
}

/* An errors-first check: a port that does not exist. */
static void test_no_port(void **state)
{
    (void)state;
    struct mroce_dpdk_attr da = {.port = "net_nosuch0"};
    struct mroce_dp_attr a = {
        .kind = MROCE_DP_DPDK, .local_ip = "10.9.0.1", .dpdk = &da};
    addr_of("10.9.0.1", &a.ctx.addr);
    struct mroce_dp *dp;
    assert_int_equal(mroce_dp_create(&a, &dp), MROCE_ESTATE);
    assert_null(dp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_port),    cmocka_unit_test(test_ipv4_arp),
        cmocka_unit_test(test_ipv6_nd),    cmocka_unit_test(test_impaired),
        cmocka_unit_test(test_bad_frames), cmocka_unit_test(test_tx_stash),
        cmocka_unit_test(test_phases),     cmocka_unit_test(test_zc_chain),
        cmocka_unit_test(test_zc_async),
    };
    return cmocka_run_group_tests(tests, eal_setup, NULL);
}
#endif
