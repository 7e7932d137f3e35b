/* mroce-dpdk-fwd: the raw DPDK baseline for bench/dpdk_vs_raw.sh. A
 * generator sends fixed-size Ethernet frames as fast as the port takes
 * them; a sink counts what arrives. No protocol, no copies of ours: the
 * rate two DPDK processes reach over the same virtual device (net_memif)
 * that mroce runs on.
 *
 *   mroce-dpdk-fwd gen|sink [--size 4096] [--seconds 3] -- EAL args
 *
 * The sink prints one JSON line: {"frames":..,"gbps":..,"mpps":..}
 * measured from its first to its last frame.
 */
#ifndef MROCE_HAVE_DPDK
#include <stdio.h>
int main(void)
{
    fprintf(stderr, "mroce-dpdk-fwd: built without DPDK\n");
    return 77;
}
#else
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#define BURST 32
#define IDLE_END_SEC 1

struct opts {
    int gen;
    uint32_t size;
    double seconds;
};

static int parse(int argc, char **argv, struct opts *o, int *eal_at)
{
    o->size = 4096;
    o->seconds = 3;
    if (argc < 2)
        return -1;
    o->gen = strcmp(argv[1], "gen") == 0;
    if (!o->gen && strcmp(argv[1], "sink") != 0)
        return -1;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            *eal_at = i;
            return 0;
        }
        if (i + 1 >= argc)
            return -1;
        if (strcmp(argv[i], "--size") == 0)
            o->size = (uint32_t)atoi(argv[++i]);
        else if (strcmp(argv[i], "--seconds") == 0)
            o->seconds = atof(argv[++i]);
        else
            return -1;
    }
    return -1;
}

static struct rte_mempool *port_up(uint16_t port, uint32_t size)
{
    struct rte_eth_conf conf;
    memset(&conf, 0, sizeof(conf));
    struct rte_mempool *mp = rte_pktmbuf_pool_create(
        "fwd", 8192, 256, 0, (uint16_t)(size + 256 + RTE_PKTMBUF_HEADROOM),
        (int)rte_socket_id());
    if (!mp || rte_eth_dev_configure(port, 1, 1, &conf) != 0 ||
        rte_eth_rx_queue_setup(port, 0, 1024, 0, NULL, mp) != 0 ||
        rte_eth_tx_queue_setup(port, 0, 1024, 0, NULL) != 0 ||
        rte_eth_dev_start(port) != 0)
        return NULL;
    return mp;
}

static void gen(uint16_t port, struct rte_mempool *mp, const struct opts *o)
{
    struct rte_mbuf *m[BURST];
    uint64_t end = rte_get_tsc_cycles() +
                   (uint64_t)(o->seconds * (double)rte_get_tsc_hz());
    uint64_t sent = 0;
    while (rte_get_tsc_cycles() < end) {
        if (rte_pktmbuf_alloc_bulk(mp, m, BURST) != 0)
            continue;
        for (int i = 0; i < BURST; i++) {
            uint8_t *f = rte_pktmbuf_mtod(m[i], uint8_t *);
            memset(f, 0xff, 12);
            f[12] = 0x88; /* local experimental ethertype */
            f[13] = 0xb5;
            m[i]->data_len = (uint16_t)o->size;
            m[i]->pkt_len = o->size;
        }
        uint16_t k = 0;
        while (k < BURST && rte_get_tsc_cycles() < end)
            k += rte_eth_tx_burst(port, 0, m + k, BURST - k);
        if (k < BURST)
            rte_pktmbuf_free_bulk(m + k, BURST - k);
        sent += k;
    }
    fprintf(stderr, "mroce-dpdk-fwd gen: %llu frames\n",
            (unsigned long long)sent);
}

static void sink(uint16_t port, const struct opts *o)
{
    struct rte_mbuf *m[BURST];
    uint64_t hz = rte_get_tsc_hz(), first = 0, last = 0, frames = 0, bytes = 0;
    uint64_t give_up =
        rte_get_tsc_cycles() + (uint64_t)((o->seconds + 30) * (double)hz);
    for (;;) {
        uint64_t now = rte_get_tsc_cycles();
        uint16_t n = rte_eth_rx_burst(port, 0, m, BURST);
        if (n == 0) {
            if ((first && now - last > IDLE_END_SEC * hz) || now > give_up)
                break;
            continue;
        }
        if (!first)
            first = now;
        last = now;
        for (uint16_t i = 0; i < n; i++)
            bytes += m[i]->pkt_len;
        frames += n;
        rte_pktmbuf_free_bulk(m, n);
    }
    double secs = first && last > first ? (double)(last - first) / hz : 0;
    printf("{\"frames\":%llu,\"gbps\":%.3f,\"mpps\":%.3f}\n",
           (unsigned long long)frames,
           secs ? (double)bytes * 8 / secs / 1e9 : 0,
           secs ? (double)frames / secs / 1e6 : 0);
}

int main(int argc, char **argv)
{
    struct opts o;
    int at = 0;
    if (parse(argc, argv, &o, &at) < 0) {
        fprintf(stderr, "usage: mroce-dpdk-fwd gen|sink [--size N] "
                        "[--seconds S] -- EAL args\n");
        return 2;
    }
    argv[at] = argv[0];
    if (rte_eal_init(argc - at, argv + at) < 0) {
        fprintf(stderr, "mroce-dpdk-fwd: rte_eal_init failed\n");
        return 1;
    }
    struct rte_mempool *mp = port_up(0, o.size);
    if (!mp) {
        fprintf(stderr, "mroce-dpdk-fwd: port 0 set-up failed\n");
        return 1;
    }
    if (o.gen)
        gen(0, mp, &o);
    else
        sink(0, &o);
    rte_eth_dev_stop(0);
    rte_eal_cleanup();
    return 0;
}
#endif
