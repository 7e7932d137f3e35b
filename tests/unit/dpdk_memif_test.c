/* The DPDK datapath over a net_memif pair between two processes (this
 * one and a forked child: memif takes one end of a socket per process),
 * for many set-up / transfer / teardown cycles. Each cycle opens both
 * datapaths, runs an encrypted connection (docs/spec.md section 3.14)
 * with a checked WRITE, then both processes destroy their datapath at
 * the same moment.
 *
 * That moment is what this test is about. memif handles its peer's
 * going away on the EAL interrupt thread: it unmaps the shared regions
 * and frees them (memif_disconnect, DPDK 22.11), with no lock against
 * rte_eth_dev_stop doing the same on the application's thread. Two at
 * once free each region twice ("EAL: Error: Invalid memory") and corrupt
 * DPDK's heap: net_secure_transfers crashed or hung at exit about once in
 * 80 runs under load. mroce_dpdk_stop now stops the port on the interrupt
 * thread (io/dpdk/eal.c). Here both sides stop together on every cycle,
 * and the test fails if DPDK logged a double free, if either process
 * crashed, or if it hung (alarm). */
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_log.h>

#include <mroce/mroce.h>
#include <mroce/mroce_crypto.h>
#include <mroce/mroce_dp.h>

#include "support/xproc.h"

#define CYCLES 24
#define MEM (256 * 1024)
#define DEADLINE_NS 20000000000ull
#define ALARM_S 100 /* a hang fails the test */

struct xinfo {
    struct mroce_conn_params p;
    uint64_t addr;
    uint32_t rkey;
    uint8_t secret[MROCE_SECRET_LEN]; /* the server's */
};

struct side {
    bool server;
    int sock; /* to the peer process */
    FILE *log;
    struct mroce_dp *dp;
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    struct mroce_conn *conn;
    struct mroce_mr *mr;
    uint8_t *mem;
    struct xinfo peer;
};

/* The child cannot use cmocka's asserts: it reports by exit status. */
#define CHECK(s, cond)                                                         \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s: line %d: %s\n",                               \
                    (s)->server ? "server" : "client", __LINE__, #cond);       \
            return -1;                                                         \
        }                                                                      \
    } while (0)

static int eal_init(struct side *s, const char *sock_path)
{
    char prefix[64], vdev[512], lcore[8];
    snprintf(prefix, sizeof(prefix), "mrmemif_%d", (int)getpid());
    snprintf(vdev, sizeof(vdev),
             "--vdev=net_memif0,role=%s,socket=%s,socket-abstract=no,"
             "bsize=8192",
             s->server ? "server" : "client", sock_path);
    bool two = sysconf(_SC_NPROCESSORS_ONLN) >= 2;
    snprintf(lcore, sizeof(lcore), "%d", two && !s->server ? 1 : 0);
    char *argv[] = {"dpdk_memif_test", "--no-huge",     "--no-pci", "-m", "512",
                    "--no-shconf",     "--file-prefix", prefix,     "-l", lcore,
                    "--no-telemetry",  "--log-level",   "*:error",  vdev, NULL};
    int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
    s->log = tmpfile();
    CHECK(s, s->log != NULL);
    rte_openlog_stream(s->log); /* searched for DPDK's complaints */
    CHECK(s, rte_eal_init(argc, argv) >= 0);
    return 0;
}

static int side_open(struct side *s)
{
    struct mroce_dpdk_attr da = {.port = "net_memif0"};
    struct mroce_dp_attr a = {.kind = MROCE_DP_DPDK,
                              .local_ip = s->server ? "10.68.0.1" : "10.68.0.2",
                              .dpdk = &da};
    CHECK(s, mroce_addr_parse(a.local_ip, &a.ctx.addr) == 0);
    CHECK(s, mroce_dp_create(&a, &s->dp) == 0);
    s->ctx = mroce_dp_ctx(s->dp);
    unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE;
    CHECK(s, mroce_pd_alloc(s->ctx, &s->pd) == 0);
    CHECK(s, mroce_cq_create(s->ctx, 64, &s->cq) == 0);
    CHECK(s, mroce_reg_mr(s->pd, s->mem, MEM, acc, &s->mr) == 0);
    /* generous timers: two busy-polling processes share the machine */
    struct mroce_conn_attr ca = {.send_cq = s->cq,
                                 .recv_cq = s->cq,
                                 .n_paths = 4,
                                 .min_rto_ns = 2000000,
                                 .retry_cnt = 15};
    CHECK(s, mroce_conn_create(s->pd, &ca, &s->conn) == 0);
    return 0;
}

/* Parameters both ways; the server draws the cycle's secret. */
static int side_connect(struct side *s)
{
    struct xinfo me = {.addr = (uint64_t)(uintptr_t)s->mem,
                       .rkey = mroce_mr_rkey(s->mr)};
    if (s->server)
        CHECK(s, getrandom(me.secret, sizeof(me.secret), 0) ==
                     (ssize_t)sizeof(me.secret));
    mroce_conn_get_params(s->conn, &me.p);
    if (!s->server) /* the client learns the secret first */
        CHECK(s, xproc_io(s->sock, &s->peer, sizeof(s->peer), false) == 0);
    CHECK(s, xproc_io(s->sock, &me, sizeof(me), true) == 0);
    if (s->server)
        CHECK(s, xproc_io(s->sock, &s->peer, sizeof(s->peer), false) == 0);
    const uint8_t *secret = s->server ? me.secret : s->peer.secret;
    CHECK(s, mroce_conn_set_secret(s->conn, MROCE_SEC_ENCRYPT, secret,
                                   MROCE_SECRET_LEN) == 0);
    CHECK(s, mroce_conn_connect(s->conn, &s->peer.p) == 0);
    return 0;
}

static uint8_t pat(size_t i, int cycle)
{
    return (uint8_t)(i * 131 + (size_t)cycle * 7 + (i >> 9));
}

/* The client WRITEs the cycle's pattern and says so; the server polls
 * (acknowledging) until then and checks every byte. */
static int side_transfer(struct side *s, int cycle)
{
    uint64_t end = mroce_dp_now_ns() + DEADLINE_NS;
    if (s->server) {
        while (!xproc_ready(s->sock)) {
            CHECK(s, mroce_progress(s->dp) >= 0);
            CHECK(s, mroce_dp_now_ns() < end);
        }
        char c;
        CHECK(s, xproc_io(s->sock, &c, 1, false) == 0 && c == 'w');
        for (size_t i = 0; i < MEM; i++)
            CHECK(s, s->mem[i] == pat(i, cycle));
        return 0;
    }
    for (size_t i = 0; i < MEM; i++)
        s->mem[i] = pat(i, cycle);
    struct mroce_send_wr wr = {
        .wr_id = (uint64_t)cycle,
        .sge = {(uint64_t)(uintptr_t)s->mem, MEM, mroce_mr_lkey(s->mr)},
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
    CHECK(s, n == 1 && wc.status == MROCE_WC_SUCCESS);
    char c = 'w';
    CHECK(s, xproc_io(s->sock, &c, 1, true) == 0);
    return 0;
}

/* Neither side polls any more (the rule docs/dpdk.md states for memif);
 * both stop their port at once. */
static int side_close(struct side *s)
{
    CHECK(s, xproc_barrier(s->sock, 'c') == 0);
    mroce_conn_destroy(s->conn);
    mroce_dp_destroy(s->dp);
    s->dp = NULL;
    return xproc_barrier(s->sock, 'd');
}

/* DPDK's log of this process names no memory freed twice. */
static int log_clean(struct side *s)
{
    char line[512];
    int bad = 0;
    fflush(s->log);
    rewind(s->log);
    while (fgets(line, sizeof(line), s->log)) {
        if (strstr(line, "Invalid memory")) {
            fprintf(stderr, "%s: DPDK: %s", s->server ? "server" : "client",
                    line);
            bad++;
        }
    }
    return bad ? -1 : 0;
}

static int side_run(struct side *s, const char *sock_path)
{
    alarm(ALARM_S);
    s->mem = aligned_alloc(4096, MEM);
    CHECK(s, s->mem != NULL);
    if (eal_init(s, sock_path))
        return -1;
    char go = 'g'; /* the server listens: the client may start */
    if (s->server)
        CHECK(s, xproc_io(s->sock, &go, 1, true) == 0);
    int rc = 0;
    for (int cycle = 0; cycle < CYCLES && rc == 0; cycle++) {
        memset(s->mem, 0, MEM);
        /* the server's port first: a memif server refuses a client that
         * connects before rte_eth_dev_start, and the client never retries */
        if (s->server)
            rc = side_open(s);
        if (rc == 0)
            rc = xproc_barrier(s->sock, 'o');
        if (rc == 0 && !s->server)
            rc = side_open(s);
        if (rc == 0)
            rc = side_connect(s);
        if (rc == 0)
            rc = side_transfer(s, cycle);
        if (rc == 0)
            rc = side_close(s);
    }
    if (log_clean(s))
        rc = -1;
    free(s->mem);
    return rc;
}

static void test_teardown_cycles(void **state)
{
    (void)state;
    if (!mroce_crypto_default())
        skip();
    char dir[] = "/tmp/mroce-memif-test.XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/s.sock", dir);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* the client, once the server listens */
        close(sv[0]);
        struct side c = {.server = false, .sock = sv[1]};
        char go;
        _exit(xproc_io(c.sock, &go, 1, false) == 0 && side_run(&c, path) == 0
                  ? 0
                  : 1);
    }
    close(sv[1]);
    struct side s = {.server = true, .sock = sv[0]};
    int rc = side_run(&s, path);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    unlink(path);
    rmdir(dir);
    assert_int_equal(rc, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_teardown_cycles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
