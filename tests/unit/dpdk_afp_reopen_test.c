/* The DPDK datapath on a net_af_packet port, opened and closed several
 * times in one process at different context MTUs, with full-size
 * (4 KiB payload, 4170-byte) frames both ways on every open.
 *
 * The bug this guards against (io/dpdk/eal.c before the fix): every open
 * called rte_eth_dev_set_mtu with the context's MTU. On the first open
 * DPDK refused (the port was not configured yet); on later opens it
 * accepted any MTU up to the 1500 net_af_packet claims, and net_af_packet
 * applies an MTU with SIOCSIFMTU on the kernel interface. A context at
 * mtu 1024 so shrank the veth to 1124 bytes, and no later context could
 * raise it again (4196 > 1500 is refused): from then on the kernel
 * dropped every frame over 1138 bytes, both ways. tests/net/conform_dpdk.sh
 * carried four known failures for it.
 *
 * Here: veth ad0/au0 (MTU 9000) between two namespaces; this process runs
 * the DPDK datapath on ad0, a forked child the UDP datapath on au0. The
 * cycles open both at mtu 4096, 1024, 4096, 4096; each cycle WRITEs
 * 64 KiB both ways and checks every byte. At the end ad0's kernel MTU
 * must still be 9000. Last, with ad0 at MTU 1500, a context at mtu 4096
 * must log an error that names ad0 and its MTU, one at 1024 none. Needs
 * root and network namespaces: skipped (77) otherwise. */
#ifndef MROCE_HAVE_DPDK
int main(void)
{
    return 77; /* built without DPDK */
}
#else
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_log.h>

#include <mroce/mroce.h>
#include <mroce/mroce_dp.h>

#include "support/xproc.h"

#define HALF (64 * 1024) /* bytes each way per cycle */
#define DEADLINE_NS 20000000000ull
#define ALARM_S 100 /* a hang fails the test */
#define VETH_MTU 9000
#define IP_D "10.89.0.1" /* DPDK, this process */
#define IP_U "10.89.0.2" /* UDP, the child */

static const uint32_t cycle_mtu[] = {4096, 1024, 4096, 4096};
#define CYCLES ((int)(sizeof(cycle_mtu) / sizeof(cycle_mtu[0])))

struct xinfo {
    struct mroce_conn_params p;
    uint64_t addr;
    uint32_t rkey;
};

struct side {
    bool dpdk;
    int sock; /* to the other process */
    char ns[32];
    uint8_t peer_mac[6];
    struct mroce_dp *dp;
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    struct mroce_conn *conn;
    struct mroce_mr *mr;
    uint8_t *mem; /* [0, HALF): what we send; [HALF, 2 HALF): what we get */
    struct xinfo peer;
    char errs[2048]; /* the datapath's ERR messages */
};

/* The child cannot use cmocka's asserts: both report by return value. */
#define CHECK(s, cond)                                                         \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s: line %d: %s\n", (s)->dpdk ? "dpdk" : "udp",   \
                    __LINE__, #cond);                                          \
            return -1;                                                         \
        }                                                                      \
    } while (0)

static int sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd);
}

/* Two namespaces and a veth between them; each side knows the other's
 * MAC from the start (no ARP wait). */
static int net_setup(const char *nd, const char *nu, uint8_t mac_u[6])
{
    if (sh("ip netns add %s 2>/dev/null && ip netns add %s && "
           "ip link add ad0 netns %s type veth peer name au0 netns %s && "
           "ip -n %s link set ad0 mtu %d up && "
           "ip -n %s link set au0 mtu %d up && "
           "ip -n %s addr add " IP_U "/24 dev au0 && "
           "ip -n %s neigh replace " IP_D " lladdr $(ip -n %s -o link show "
           "ad0 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2) dev au0 "
           "nud permanent",
           nd, nu, nd, nu, nd, VETH_MTU, nu, VETH_MTU, nu, nu, nd) != 0)
        return -1;
    char cmd[256], line[64];
    snprintf(cmd, sizeof(cmd),
             "ip -n %s -o link show au0 | grep -o 'link/ether [0-9a-f:]*' | "
             "cut -d' ' -f2",
             nu);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    bool ok =
        fgets(line, sizeof(line), f) &&
        sscanf(line, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac_u[0], &mac_u[1],
               &mac_u[2], &mac_u[3], &mac_u[4], &mac_u[5]) == 6;
    pclose(f);
    return ok ? 0 : -1;
}

static void net_teardown(const char *nd, const char *nu)
{
    sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", nd, nu);
}

static int ns_enter(struct side *s)
{
    char path[64];
    snprintf(path, sizeof(path), "/run/netns/%s", s->ns);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CHECK(s, fd >= 0);
    int rc = setns(fd, CLONE_NEWNET);
    close(fd);
    CHECK(s, rc == 0);
    return 0;
}

/* The kernel's MTU of an interface in our namespace. */
static int if_mtu(const char *name)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int rc = ioctl(fd, SIOCGIFMTU, &ifr);
    close(fd);
    return rc == 0 ? ifr.ifr_mtu : -1;
}

static int eal_init(struct side *s)
{
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "mrafp_%d", (int)getpid());
    char *argv[] = {"dpdk_afp_reopen_test",
                    "--no-huge",
                    "--no-pci",
                    "-m",
                    "512",
                    "--no-shconf",
                    "--file-prefix",
                    prefix,
                    "-l",
                    "0",
                    "--no-telemetry",
                    "--log-level",
                    "*:error",
                    "--vdev=net_af_packet0,iface=ad0,blocksz=8192,"
                    "framesz=8192,framecnt=512,qpairs=1",
                    NULL};
    int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
    CHECK(s, rte_eal_init(argc, argv) >= 0);
    return 0;
}

/* Keeps the datapath's errors (and shows them) for the MTU check. */
static void side_log(void *ud, int level, const char *msg)
{
    struct side *s = ud;
    if (level != MROCE_LOG_ERR)
        return;
    fprintf(stderr, "%s: %s\n", s->dpdk ? "dpdk" : "udp", msg);
    size_t n = strlen(s->errs);
    snprintf(s->errs + n, sizeof(s->errs) - n, "%s\n", msg);
}

static int side_open(struct side *s, uint32_t mtu)
{
    struct mroce_dp_neigh nb = {.mac = {0}};
    memcpy(nb.mac, s->peer_mac, 6);
    CHECK(s, mroce_addr_parse(IP_U, &nb.ip) == 0);
    struct mroce_dpdk_attr da = {
        .port = "net_af_packet0", .neigh = &nb, .n_neigh = 1, .n_mbufs = 4096};
    struct mroce_dp_attr a = {.kind = s->dpdk ? MROCE_DP_DPDK : MROCE_DP_UDP,
                              .local_ip = s->dpdk ? IP_D : IP_U,
                              .n_src_ports = 4,
                              /* a GSO batch crosses the veth as one
                                 frame, longer than af_packet's ring
                                 frames */
                              .no_gso = true,
                              .dpdk = s->dpdk ? &da : NULL,
                              .ctx.mtu = mtu,
                              .ctx.hooks.log = side_log,
                              .ctx.hooks.ud = s};
    CHECK(s, mroce_addr_parse(a.local_ip, &a.ctx.addr) == 0);
    CHECK(s, mroce_dp_create(&a, &s->dp) == 0);
    s->ctx = mroce_dp_ctx(s->dp);
    unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE;
    CHECK(s, mroce_pd_alloc(s->ctx, &s->pd) == 0);
    CHECK(s, mroce_cq_create(s->ctx, 64, &s->cq) == 0);
    CHECK(s, mroce_reg_mr(s->pd, s->mem, 2 * HALF, acc, &s->mr) == 0);
    /* generous timers: a busy-polling process shares a loaded machine */
    struct mroce_conn_attr ca = {.send_cq = s->cq,
                                 .recv_cq = s->cq,
                                 .n_paths = 4,
                                 .min_rto_ns = 10000000,
                                 .retry_cnt = 15};
    CHECK(s, mroce_conn_create(s->pd, &ca, &s->conn) == 0);
    return 0;
}

static int side_connect(struct side *s)
{
    struct xinfo me = {.addr = (uint64_t)(uintptr_t)(s->mem + HALF),
                       .rkey = mroce_mr_rkey(s->mr)};
    mroce_conn_get_params(s->conn, &me.p);
    CHECK(s, xproc_io(s->sock, &me, sizeof(me), true) == 0);
    CHECK(s, xproc_io(s->sock, &s->peer, sizeof(s->peer), false) == 0);
    CHECK(s, mroce_conn_connect(s->conn, &s->peer.p) == 0);
    return 0;
}

static uint8_t pat(size_t i, int cycle, bool dpdk)
{
    return (uint8_t)(i * 131 + (size_t)cycle * 7 + (i >> 9) + dpdk);
}

/* Both WRITE HALF bytes to the other at once, say so when complete, poll
 * (acknowledging) until the other has said so too, then check every byte
 * that arrived. */
static int side_transfer(struct side *s, int cycle)
{
    uint64_t end = mroce_dp_now_ns() + DEADLINE_NS;
    for (size_t i = 0; i < HALF; i++)
        s->mem[i] = pat(i, cycle, s->dpdk);
    struct mroce_send_wr wr = {
        .wr_id = (uint64_t)cycle + 1,
        .sge = {(uint64_t)(uintptr_t)s->mem, HALF, mroce_mr_lkey(s->mr)},
        .remote_addr = s->peer.addr,
        .rkey = s->peer.rkey};
    CHECK(s, mroce_post_write(s->conn, &wr) == 0);
    struct mroce_wc wc;
    int n = 0;
    while (n == 0) {
        CHECK(s, mroce_progress(s->dp) >= 0);
        n = mroce_poll_cq(s->cq, 1, &wc);
        CHECK(s, mroce_dp_now_ns() < end);
    }
    if (n != 1 || wc.status != MROCE_WC_SUCCESS)
        fprintf(stderr, "%s: cycle %d (mtu %u): WRITE status %d\n",
                s->dpdk ? "dpdk" : "udp", cycle, cycle_mtu[cycle],
                (int)wc.status);
    CHECK(s, n == 1 && wc.status == MROCE_WC_SUCCESS);
    char c = 'w';
    CHECK(s, xproc_io(s->sock, &c, 1, true) == 0);
    while (!xproc_ready(s->sock)) {
        CHECK(s, mroce_progress(s->dp) >= 0);
        CHECK(s, mroce_dp_now_ns() < end);
    }
    CHECK(s, xproc_io(s->sock, &c, 1, false) == 0 && c == 'w');
    for (size_t i = 0; i < HALF; i++)
        CHECK(s, s->mem[HALF + i] == pat(i, cycle, !s->dpdk));
    return 0;
}

static int side_close(struct side *s)
{
    CHECK(s, xproc_barrier(s->sock, 'c') == 0);
    mroce_conn_destroy(s->conn);
    mroce_dp_destroy(s->dp);
    s->dp = NULL;
    return xproc_barrier(s->sock, 'd');
}

/* A context whose frames the kernel interface cannot carry says so: an
 * error naming the interface and its MTU (no peer needed). */
static int short_mtu_said(struct side *s)
{
    CHECK(s, sh("ip link set ad0 mtu 1500") == 0);
    s->errs[0] = 0;
    int rc = side_open(s, 4096);
    if (rc == 0) {
        mroce_conn_destroy(s->conn);
        mroce_dp_destroy(s->dp);
        s->dp = NULL;
    }
    CHECK(s, rc == 0);
    CHECK(s,
          strstr(s->errs, "kernel interface ad0 has MTU 1500 < 4196") != NULL);
    s->errs[0] = 0;
    rc = side_open(s, 1024); /* fits: no error */
    if (rc == 0) {
        mroce_conn_destroy(s->conn);
        mroce_dp_destroy(s->dp);
        s->dp = NULL;
    }
    CHECK(s, rc == 0 && s->errs[0] == 0);
    return 0;
}

static int side_run(struct side *s)
{
    alarm(ALARM_S);
    if (ns_enter(s))
        return -1;
    s->mem = aligned_alloc(4096, 2 * HALF);
    CHECK(s, s->mem != NULL);
    if (s->dpdk && eal_init(s))
        return -1;
    int rc = 0;
    for (int cycle = 0; cycle < CYCLES && rc == 0; cycle++) {
        memset(s->mem, 0, 2 * HALF);
        rc = side_open(s, cycle_mtu[cycle]);
        if (rc == 0)
            rc = side_connect(s);
        if (rc == 0)
            rc = side_transfer(s, cycle);
        if (rc == 0)
            rc = side_close(s);
    }
    /* the veth is the administrator's: mroce never changes its MTU */
    if (rc == 0 && s->dpdk && if_mtu("ad0") != VETH_MTU) {
        fprintf(stderr, "dpdk: ad0's kernel MTU is now %d, was %d\n",
                if_mtu("ad0"), VETH_MTU);
        rc = -1;
    }
    if (rc == 0 && s->dpdk)
        rc = short_mtu_said(s);
    free(s->mem);
    return rc;
}

static void test_reopen_full_frames(void **state)
{
    (void)state;
    char nd[32], nu[32];
    snprintf(nd, sizeof(nd), "mrafd%d", (int)getpid());
    snprintf(nu, sizeof(nu), "mrafu%d", (int)getpid());
    uint8_t mac_u[6];
    if (geteuid() != 0 || net_setup(nd, nu, mac_u) != 0) {
        net_teardown(nd, nu);
        skip(); /* needs root, iproute2 and network namespaces */
    }
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(sv[0]);
        struct side u = {.dpdk = false, .sock = sv[1]};
        snprintf(u.ns, sizeof(u.ns), "%s", nu);
        _exit(side_run(&u) == 0 ? 0 : 1);
    }
    close(sv[1]);
    struct side d = {.dpdk = true, .sock = sv[0]};
    snprintf(d.ns, sizeof(d.ns), "%s", nd);
    memcpy(d.peer_mac, mac_u, 6);
    int rc = side_run(&d);
    close(sv[0]); /* a child still waiting on us sees EOF */
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    net_teardown(nd, nu);
    assert_int_equal(rc, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reopen_full_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
