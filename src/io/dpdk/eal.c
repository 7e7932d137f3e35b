/* DPDK start-up: EAL (once per process), port, mempool, capture port.
 * Every way it can fail logs what to change. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <rte_alarm.h>
#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "io/dpdk/dpdk.h"

#define DEF_MBUFS 8192
#define DEF_RING 1024
#define POOL_CACHE 256
#define AF_PACKET_ROOM 8192
#define MAX_PKT_SLACK 128    /* above mtu: headers + ICRC (mtu + 72 today) */
#define UDP_OVER_MTU 72      /* R-ENC-9: a UDP payload is at most mtu + 72 */
#define STOP_WAIT_US 5000000 /* port_stop: the interrupt thread's turn */

static bool port_busy[RTE_MAX_ETHPORTS];
static unsigned pcap_seq;

void mroce_dpdk_log(const struct mroce_dp *dp, int level, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const struct mroce_hooks *h = &dp->ctx_attr.hooks;
    if (h->log)
        h->log(h->ud, level, msg);
    else if (level == MROCE_LOG_ERR)
        fprintf(stderr, "mroce dpdk: %s\n", msg);
}

static bool has_arg(int argc, char **argv, const char *a)
{
    for (int i = 0; i < argc; i++)
        if (argv[i] && strcmp(argv[i], a) == 0)
            return true;
    return false;
}

static long meminfo(const char *key)
{
    char line[128];
    long v = -1;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, strlen(key)) == 0)
            v = strtol(line + strlen(key), NULL, 10);
    fclose(f);
    return v;
}

/* What rte_eal_init would only say cryptically, said before it runs. */
static int eal_precheck(struct mroce_dp *dp, int argc, char **argv)
{
    bool no_huge = has_arg(argc, argv, "--no-huge");
    if (no_huge && has_arg(argc, argv, "--in-memory")) {
        mroce_dpdk_log(dp, MROCE_LOG_ERR,
                       "DPDK 22.11 rejects --in-memory with --no-huge: use "
                       "--no-huge -m 512 --file-prefix NAME");
        return MROCE_EINVAL;
    }
    if (!no_huge && meminfo("HugePages_Free:") <= 0) {
        mroce_dpdk_log(dp, MROCE_LOG_ERR,
                       "no free hugepages: pass --no-huge -m 512 in the EAL "
                       "arguments, or reserve some (echo 256 > "
                       "/proc/sys/vm/nr_hugepages; mount -t hugetlbfs nodev "
                       "/dev/hugepages)");
        return MROCE_ESTATE;
    }
    return 0;
}

static int eal_start(struct mroce_dp *dp)
{
    const struct mroce_dpdk_attr *a = dp->attr.dpdk;
    if (rte_lcore_count() > 0)
        return 0; /* started by an earlier datapath or the application */
    if (!a || a->eal_argc < 1 || !a->eal_argv) {
        mroce_dpdk_log(dp, MROCE_LOG_ERR,
                       "the DPDK EAL is not running and no EAL arguments "
                       "were given (mroce_dpdk_attr.eal_argv)");
        return MROCE_EINVAL;
    }
    int rc = eal_precheck(dp, a->eal_argc, a->eal_argv);
    if (rc < 0)
        return rc;
    /* rte_eal_init permutes argv: give it a copy */
    char *argv[a->eal_argc + 1];
    memcpy(argv, a->eal_argv, sizeof(char *) * (size_t)a->eal_argc);
    argv[a->eal_argc] = NULL;
    if (rte_eal_init(a->eal_argc, argv) < 0 && rte_errno != EALREADY) {
        mroce_dpdk_log(dp, MROCE_LOG_ERR,
                       "rte_eal_init failed: %s (check -l cores, --vdev "
                       "syntax, -m and a unique --file-prefix)",
                       rte_strerror(rte_errno));
        return MROCE_ESTATE;
    }
    return 0;
}

static void list_ports(char *out, size_t cap)
{
    uint16_t i;
    size_t n = 0;
    out[0] = 0;
    RTE_ETH_FOREACH_DEV(i)
    {
        char name[RTE_ETH_NAME_MAX_LEN];
        if (rte_eth_dev_get_name_by_port(i, name) == 0 && n < cap)
            n += (size_t)snprintf(out + n, cap - n, " %s", name);
    }
}

static int port_find(struct mroce_dp *dp, uint16_t *port)
{
    const char *name = dp->attr.dpdk ? dp->attr.dpdk->port : NULL;
    char have[512];
    if (name && rte_eth_dev_get_port_by_name(name, port) == 0 &&
        !port_busy[*port])
        return 0;
    if (!name) {
        uint16_t i;
        RTE_ETH_FOREACH_DEV(i)
        {
            if (!port_busy[i]) {
                *port = i;
                return 0;
            }
        }
    }
    list_ports(have, sizeof(have));
    mroce_dpdk_log(dp, MROCE_LOG_ERR,
                   "DPDK port %s not found or in use; ports:%s (add one "
                   "with --vdev=net_memif0,... in the EAL arguments)",
                   name ? name : "(any)", have[0] ? have : " none");
    return MROCE_ESTATE;
}

static uint32_t frame_max(const struct mroce_dp *dp, const struct mroce_dpdk *p)
{
    uint32_t mtu = dp->ctx_attr.mtu ? dp->ctx_attr.mtu : 4096;
    return p->hdr_len + mtu + MAX_PKT_SLACK;
}

/* One pool per port and buffer size, kept for the life of the process
 * (a peer's ring may still hold our mbufs after close). */
static int pool_open(struct mroce_dp *dp, struct mroce_dpdk *p,
                     uint32_t n_mbufs, uint32_t min_mbufs)
{
    char name[64]; /* shorter than RTE_MEMPOOL_NAMESIZE in practice */
    struct rte_eth_dev_info info;
    uint32_t room = RTE_ALIGN_CEIL(frame_max(dp, p), 128);
    /* net_af_packet copies whole ring frames: its framesz (8192 for 4 KiB
     * payloads) must fit one mbuf */
    if (rte_eth_dev_info_get(p->port, &info) == 0 && info.driver_name &&
        strcmp(info.driver_name, "net_af_packet") == 0)
        room = RTE_MAX(room, (uint32_t)AF_PACKET_ROOM);
    if (n_mbufs < min_mbufs) {
        mroce_dpdk_log(dp, MROCE_LOG_ERR,
                       "n_mbufs %u too small for the rings: need >= %u",
                       n_mbufs, min_mbufs);
        return MROCE_EINVAL;
    }
    snprintf(name, sizeof(name), "mr%u_%u_%u", p->port, room, n_mbufs);
    p->mp = rte_mempool_lookup(name);
    if (!p->mp)
        p->mp = rte_pktmbuf_pool_create(name, n_mbufs, POOL_CACHE, 0,
                                        (uint16_t)(room + RTE_PKTMBUF_HEADROOM),
                                        (int)rte_socket_id());
    if (!p->mp) {
        mroce_dpdk_log(dp, MROCE_LOG_ERR,
                       "mempool of %u mbufs x %u B: %s (raise -m or lower "
                       "n_mbufs)",
                       n_mbufs, room, rte_strerror(rte_errno));
        return MROCE_ENOMEM;
    }
    p->room = room;
    return 0;
}

/* The L3 MTU the port must take: the largest UDP payload (R-ENC-9:
 * mtu + 72 in the secure modes) with its IP and UDP headers. */
static uint32_t mtu_need(const struct mroce_dp *dp, const struct mroce_dpdk *p)
{
    return frame_max(dp, p) - MAX_PKT_SLACK - MROCE_ETH_LEN + UDP_OVER_MTU;
}

/* The largest MTU ethdev lets a port have: its check in
 * rte_eth_dev_configure (eth_dev_validate_mtu, DPDK 22.11) bounds it by
 * max_mtu and by max_rx_pktlen less the port's Ethernet overhead. */
static uint32_t port_max_mtu(const struct rte_eth_dev_info *info)
{
    uint32_t over = RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
    if (info->max_mtu != UINT16_MAX && info->max_rx_pktlen > info->max_mtu)
        over = info->max_rx_pktlen - info->max_mtu;
    uint32_t by_len =
        info->max_rx_pktlen > over ? info->max_rx_pktlen - over : 0;
    return RTE_MIN((uint32_t)info->max_mtu, by_len);
}

/* The MTU of the kernel interface under a port (net_af_packet, net_tap,
 * ...: those set dev_info.if_index), in this thread's namespace; 0 when
 * there is none or it cannot be read. */
static uint32_t kernel_mtu(uint32_t if_index, char name[IF_NAMESIZE])
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    if (!if_index || !if_indextoname(if_index, name))
        return 0;
    memcpy(ifr.ifr_name, name, IF_NAMESIZE);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int rc = ioctl(fd, SIOCGIFMTU, &ifr);
    close(fd);
    return rc == 0 && ifr.ifr_mtu > 0 ? (uint32_t)ifr.ifr_mtu : 0;
}

/* A port that reports a smaller maximum than the context needs: whether
 * its frames will get through, said in the log. net_memif and
 * net_af_packet report 1518 bytes yet carry more; af_packet's limit is
 * the kernel interface's MTU (and its ring's framesz). */
static void port_mtu_short(struct mroce_dp *dp, const struct mroce_dpdk *p,
                           const struct rte_eth_dev_info *info, uint32_t need)
{
    char ifn[IF_NAMESIZE] = "";
    uint32_t kmtu = kernel_mtu(info->if_index, ifn);
    const char *drv = info->driver_name ? info->driver_name : "?";
    if (kmtu && kmtu < need)
        mroce_dpdk_log(dp, MROCE_LOG_ERR,
                       "DPDK port %u (%s): kernel interface %s has MTU %u < "
                       "%u the context's mtu needs: frames longer than %u "
                       "bytes will be dropped both ways (ip link set %s mtu "
                       "9000, or lower the context's mtu)",
                       p->port, drv, ifn, kmtu, need, kmtu + MROCE_ETH_LEN,
                       ifn);
    else if (kmtu)
        mroce_dpdk_log(dp, MROCE_LOG_INFO,
                       "DPDK port %u (%s) reports MTU %u < %u needed, yet "
                       "carries what kernel interface %s (MTU %u) does if "
                       "its ring frames fit (blocksz=8192,framesz=8192)",
                       p->port, drv, port_max_mtu(info), need, ifn, kmtu);
    else if (strcmp(drv, "net_memif") == 0)
        mroce_dpdk_log(dp, MROCE_LOG_INFO,
                       "DPDK port %u (%s) reports MTU %u < %u needed, yet "
                       "carries larger frames (chained; bsize=8192 holds 4 KiB "
                       "frames in one buffer)",
                       p->port, drv, port_max_mtu(info), need);
    else
        mroce_dpdk_log(dp, MROCE_LOG_ERR,
                       "DPDK port %u (%s) takes an MTU of at most %u < %u "
                       "the context's mtu needs: longer frames will be "
                       "dropped (lower the context's mtu)",
                       p->port, drv, port_max_mtu(info), need);
}

/* The MTU for rte_eth_dev_configure. Since DPDK 21.11 configure applies
 * conf.rxmode.mtu on every call (0: 1500), so the MTU goes there, not to
 * rte_eth_dev_set_mtu: a set_mtu before configure is refused on a
 * port's first open, and the next configure undoes one made on an
 * earlier open. Never set_mtu on net_af_packet: it applies the MTU to the
 * kernel interface (SIOCSIFMTU), so a context at mtu 1024 shrank the
 * veth to 1124 bytes for every later context (tests/unit/
 * dpdk_afp_reopen_test). The port's MTU is its own (conf.rxmode.mtu
 * reaches no kernel interface); the interface's is the administrator's. */
static uint16_t port_mtu(struct mroce_dp *dp, const struct mroce_dpdk *p,
                         uint16_t port, bool quiet)
{
    struct rte_eth_dev_info info;
    uint32_t need = mtu_need(dp, p);
    if (rte_eth_dev_info_get(port, &info) != 0)
        return 0; /* configure fails and says why */
    uint32_t max = port_max_mtu(&info);
    if (need <= max)
        return (uint16_t)need;
    if (!quiet)
        port_mtu_short(dp, p, &info, need);
    return (uint16_t)RTE_MIN(max, (uint32_t)UINT16_MAX);
}

static int port_queues(struct mroce_dp *dp, struct mroce_dpdk *p, uint16_t port,
                       uint16_t nrx, uint16_t ntx)
{
    struct rte_eth_conf conf;
    memset(&conf, 0, sizeof(conf));
    conf.rxmode.mtu = port_mtu(dp, p, port, port != p->port);
    int rc = rte_eth_dev_configure(port, nrx ? 1 : 0, 1, &conf);
    if (rc == 0)
        rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx);
    if (rc == 0 && nrx)
        rc = rte_eth_rx_queue_setup(port, 0, nrx, rte_eth_dev_socket_id(port),
                                    NULL, p->mp);
    if (rc == 0)
        rc = rte_eth_tx_queue_setup(port, 0, ntx, rte_eth_dev_socket_id(port),
                                    NULL);
    if (rc == 0)
        rc = rte_eth_dev_start(port);
    if (rc != 0)
        mroce_dpdk_log(dp, MROCE_LOG_ERR, "DPDK port %u set-up: %s", port,
                       rte_strerror(-rc));
    return rc == 0 ? 0 : MROCE_ESTATE;
}

static int port_open(struct mroce_dp *dp, struct mroce_dpdk *p)
{
    const struct mroce_dpdk_attr *a = dp->attr.dpdk;
    uint16_t nrx = a && a->rx_ring ? a->rx_ring : DEF_RING;
    uint16_t ntx = a && a->tx_ring ? a->tx_ring : DEF_RING;
    uint32_t n = a && a->n_mbufs ? a->n_mbufs : DEF_MBUFS;
    int rc = pool_open(dp, p, n,
                       nrx + ntx + 2 * POOL_CACHE + 4 * MROCE_DPDK_BURST_MAX +
                           MROCE_DPDK_STASH);
    if (rc < 0)
        return rc;
    rc = port_queues(dp, p, p->port, nrx, ntx);
    if (rc < 0)
        return rc;
    rte_eth_promiscuous_enable(p->port); /* multicast NS; may be no-op */
    struct rte_ether_addr mac;
    rte_eth_macaddr_get(p->port, &mac);
    memcpy(p->mac, mac.addr_bytes, 6);
    return 0;
}

/* A net_pcap port that writes every frame we send and receive. */
static int pcap_open(struct mroce_dp *dp, struct mroce_dpdk *p)
{
    char args[512], name[64];
    snprintf(name, sizeof(name), "net_pcap_mroce%u", pcap_seq++);
    snprintf(args, sizeof(args), "%s,tx_pcap=%s", name, dp->attr.dpdk->pcap);
    if (rte_dev_probe(args) != 0 ||
        rte_eth_dev_get_port_by_name(name, &p->pcap_port) != 0) {
        mroce_dpdk_log(dp, MROCE_LOG_ERR, "capture port %s: %s", args,
                       rte_strerror(rte_errno));
        return MROCE_ESTATE;
    }
    port_busy[p->pcap_port] = true;
    p->pcap = true;
    return port_queues(dp, p, p->pcap_port, 0, 256);
}

static void pcap_close(struct mroce_dpdk *p)
{
    struct rte_eth_dev_info info;
    if (!p->pcap)
        return;
    rte_eth_dev_stop(p->pcap_port);
    int have = rte_eth_dev_info_get(p->pcap_port, &info) == 0;
    rte_eth_dev_close(p->pcap_port);
    if (have && info.device)
        rte_dev_remove(info.device);
    port_busy[p->pcap_port] = false;
    p->pcap = false;
}

static int local_addr(struct mroce_dp *dp, struct mroce_dpdk *p)
{
    p->local.ip = dp->ctx_attr.addr;
    p->local.udp_port = dp->ctx_attr.udp_port;
    p->hdr_len = mroce_dpdk_hdr_len(p->local.ip.family);
    if (p->local.ip.family != MROCE_AF_INET &&
        p->local.ip.family != MROCE_AF_INET6) {
        mroce_dpdk_log(dp, MROCE_LOG_ERR, "DPDK: no local IP address");
        return MROCE_EINVAL;
    }
    return 0;
}

static int neigh_static(struct mroce_dp *dp, struct mroce_dpdk *p)
{
    const struct mroce_dpdk_attr *a = dp->attr.dpdk;
    mroce_dpdk_neigh_init(&p->neigh);
    for (int i = 0; a && i < a->n_neigh; i++) {
        if (mroce_dpdk_neigh_add(&p->neigh, &a->neigh[i].ip, a->neigh[i].mac,
                                 true) < 0) {
            mroce_dpdk_log(dp, MROCE_LOG_ERR, "more than %d static neighbours",
                           MROCE_DPDK_NEIGH_MAX);
            return MROCE_EINVAL;
        }
    }
    return 0;
}

int mroce_dpdk_start(struct mroce_dp *dp, struct mroce_dpdk *p)
{
    int rc = local_addr(dp, p);
    if (rc == 0)
        rc = neigh_static(dp, p);
    if (rc == 0)
        rc = eal_start(dp);
    if (rc == 0)
        rc = port_find(dp, &p->port);
    if (rc < 0)
        return rc;
    port_busy[p->port] = true;
    p->tsc_hz = rte_get_tsc_hz();
    rc = port_open(dp, p);
    if (rc == 0 && dp->attr.dpdk && dp->attr.dpdk->pcap)
        rc = pcap_open(dp, p);
    if (rc == 0)
        mroce_dpdk_zc_open(dp, p); /* after pcap_open: capture rules it out */
    if (rc < 0)
        mroce_dpdk_stop(p);
    return rc;
}

struct stop_req {
    uint16_t port;
    atomic_bool done;
};

static void stop_on_intr(void *arg)
{
    struct stop_req *r = arg;
    rte_eth_dev_stop(r->port);
    atomic_store(&r->done, true);
}

/* Stops the port on the EAL interrupt thread. net_memif handles its
 * peer's going away on that thread (memif_disconnect: it unmaps and frees
 * the shared regions) and does the same in rte_eth_dev_stop, with no lock
 * between the two (DPDK 22.11): a stop on our thread while the peer
 * leaves freed every region twice ("EAL: Error: Invalid memory"),
 * corrupting DPDK's heap -- a crash or a hang at exit
 * (tests/unit/dpdk_memif_test). Alarm callbacks run on that thread one
 * at a time with the PMDs' control handlers, so a stop made there cannot
 * overlap them. If the thread does not get to it in STOP_WAIT_US (or is
 * us), the stop runs here; rte_eal_alarm_cancel waits for a callback
 * already running, so r outlives every use. */
static void port_stop(uint16_t port)
{
    struct stop_req r = {.port = port};
    if (rte_thread_is_intr() || rte_eal_alarm_set(1, stop_on_intr, &r) != 0) {
        rte_eth_dev_stop(port);
        return;
    }
    for (int us = 0; us < STOP_WAIT_US && !atomic_load(&r.done); us += 100)
        usleep(100);
    if (!atomic_load(&r.done) && rte_eal_alarm_cancel(stop_on_intr, &r) > 0)
        rte_eth_dev_stop(port); /* cancelled before it ran */
}

void mroce_dpdk_stop(struct mroce_dpdk *p)
{
    mroce_dpdk_ctl_flush(p);
    mroce_dpdk_capture_flush(p);
    for (; p->bl_tail != p->bl_head; p->bl_tail++)
        rte_pktmbuf_free(p->backlog[p->bl_tail & (MROCE_DPDK_BACKLOG - 1)]);
    rte_pktmbuf_free_bulk(p->stash, p->n_stash);
    p->n_stash = 0;
    port_stop(p->port);
    mroce_dpdk_zc_close(p);
    pcap_close(p);
    port_busy[p->port] = false;
}
