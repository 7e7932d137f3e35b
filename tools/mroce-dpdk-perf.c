/* mroce-dpdk-perf: write_bw (and a data-verified run of every operation)
 * between two processes over a mroce datapath -- DPDK (net_memif,
 * net_af_packet, ...) or UDP sockets -- for bench/dpdk_vs_raw.sh and the
 * tests/net/dpdk_*.sh tests. The two sides exchange their connection
 * parameters, buffer address and key through files (PREFIX.server and
 * PREFIX.client, written atomically).
 *
 *   mroce-dpdk-perf server|client --ip A --params PREFIX [--datapath
 *       dpdk|udp] [--port NAME] [--udp-port N] [--mtu 4096] [--paths 16]
 *       [--batch N] [--size 4M] [--seconds 3] [--verify] [--pcap FILE]
 *       [--no-gso] [--no-zc] [-- EAL args]
 *
 * --batch: packets per loop pass (mroce_dp_attr.batch). Default over DPDK
 * 64, the datapath's burst: the engine writes a pass's frames into mbufs
 * and the device reads them back: 64 frames of 4 KiB (270 KB) stay in a
 * 1 MiB L2 in between, 256 do not (docs/dpdk.md). UDP: the loop's default.
 *
 * --no-zc: copy every payload into the frame (mroce_dpdk_attr.no_zc)
 * instead of attaching it where the port allows (docs/dpdk.md).
 *
 * --auth, --encrypt: the connection runs in the authenticated or the
 * encrypted mode (docs/spec.md section 3.14) under a random 32-byte
 * secret. Both sides must say the same. This tool has no connection
 * manager: the server draws the secret and hands it to the client in its
 * parameter file, which only suits a test on one host (mroce-perf's
 * connection manager derives it from a pre-shared key instead). The JSON
 * line then also counts the secure modes' drops and key updates.
 *
 * The client writes; both print a JSON line (client: gbps, msgs, cycles
 * per packet of its loop; with --verify both print one too). --verify runs
 * WRITE+READ (client checks), SEND, SEND_IMM and WRITE_IMM (server checks)
 * instead of the bandwidth run. Exit 0 when every check passed.
 *
 *   mroce-dpdk-perf loop --ip A [options] -- EAL args --vdev=net_ring0
 *
 * runs the write_bw client and its server in one process, as two
 * connections of one context on a port that receives what it sends
 * (net_ring without arguments): sender and receiver on one thread, no
 * second process, so `valgrind --tool=callgrind` sees the whole packet
 * path (docs/dpdk.md). The peer's MAC is a static neighbour.
 *
 *   mroce-dpdk-perf pair --ip A --peer-ip B --port P0 --peer-port P1
 *       [options] -- EAL args (two ports wired to each other)
 *
 * runs the write_bw client on port P0 and its server, with a datapath of
 * its own, on P1 (e.g. the two ends of one memif socket), both polled by
 * one thread: no peer to be descheduled, so on a busy machine the
 * thread's CPU time per data packet (cpu_ns_per_data_pkt) measures the
 * work of sender and receiver together, whoever else runs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <stdbool.h>
#include <sys/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <mroce/mroce.h>
#include <mroce/mroce_dp.h>

#ifdef MROCE_HAVE_DPDK
#include <rte_ethdev.h>

#include "io/dpdk/dpdk.h"
#endif

#define NREG 5   /* regions: write/read, send, send_imm, write_imm, done */
#define DEPTH 16 /* outstanding WRITEs */
#define DPDK_BATCH 64
#define WAIT_NS 60000000000ull
#define GONE_NS 10000000000ull /* close_server: the client's exit */

struct opts {
    bool server, loop, pair, verify, no_gso, no_zc;
    int sec_mode; /* MROCE_SEC_* */
    const char *ip, *params, *port, *pcap, *peer_ip, *peer_port;
    int kind;
    uint16_t udp_port;
    uint32_t mtu, paths, batch;
    size_t size;
    double seconds;
    int eal_argc;
    char **eal_argv;
};

struct xinfo {
    struct mroce_conn_params p;
    uint64_t addr;
    uint32_t rkey;
    int sec_mode;                     /* MROCE_SEC_* */
    uint8_t secret[MROCE_SECRET_LEN]; /* the server's, for both */
};

struct side {
    struct opts o;
    struct mroce_dp *dp;
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    struct mroce_conn *conn;
    struct mroce_mr *mr;
    uint8_t *mem;
    struct xinfo peer;
    uint64_t busy_cycles;
    uint64_t cpu_ns;   /* client_bw: the thread's CPU time */
    struct side *twin; /* pair: the server, polled with this side */
    uint8_t secret[MROCE_SECRET_LEN];
};

static void die(const char *what, int rc)
{
    fprintf(stderr, "mroce-dpdk-perf: %s: %s\n", what, mroce_strerror(rc));
    exit(1);
}

static size_t size_arg(const char *s)
{
    char *e;
    double v = strtod(s, &e);
    if (*e == 'K' || *e == 'k')
        v *= 1024;
    else if (*e == 'M' || *e == 'm')
        v *= 1024 * 1024;
    else if (*e == 'G' || *e == 'g')
        v *= 1024.0 * 1024 * 1024;
    return (size_t)v;
}

static int opt_one(struct opts *o, const char *k, const char *v)
{
    if (!strcmp(k, "--ip"))
        o->ip = v;
    else if (!strcmp(k, "--params"))
        o->params = v;
    else if (!strcmp(k, "--port"))
        o->port = v;
    else if (!strcmp(k, "--peer-ip"))
        o->peer_ip = v;
    else if (!strcmp(k, "--peer-port"))
        o->peer_port = v;
    else if (!strcmp(k, "--pcap"))
        o->pcap = v;
    else if (!strcmp(k, "--datapath"))
        o->kind = !strcmp(v, "udp") ? MROCE_DP_UDP : MROCE_DP_DPDK;
    else if (!strcmp(k, "--udp-port"))
        o->udp_port = (uint16_t)atoi(v);
    else if (!strcmp(k, "--mtu"))
        o->mtu = (uint32_t)atoi(v);
    else if (!strcmp(k, "--paths"))
        o->paths = (uint32_t)atoi(v);
    else if (!strcmp(k, "--batch"))
        o->batch = (uint32_t)atoi(v);
    else if (!strcmp(k, "--size"))
        o->size = size_arg(v);
    else if (!strcmp(k, "--seconds"))
        o->seconds = atof(v);
    else
        return -1;
    return 0;
}

static void parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.kind = MROCE_DP_DPDK,
                       .mtu = 4096,
                       .paths = 16,
                       .size = 4 << 20,
                       .seconds = 3};
    if (argc < 2 || (strcmp(argv[1], "server") && strcmp(argv[1], "client") &&
                     strcmp(argv[1], "loop") && strcmp(argv[1], "pair")))
        goto usage;
    o->server = !strcmp(argv[1], "server");
    o->loop = !strcmp(argv[1], "loop");
    o->pair = !strcmp(argv[1], "pair");
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            o->eal_argc = argc - i;
            o->eal_argv = argv + i;
            argv[i] = argv[0];
            break;
        }
        if (!strcmp(argv[i], "--verify"))
            o->verify = true;
        else if (!strcmp(argv[i], "--no-gso"))
            o->no_gso = true;
        else if (!strcmp(argv[i], "--no-zc"))
            o->no_zc = true;
        else if (!strcmp(argv[i], "--auth"))
            o->sec_mode = MROCE_SEC_AUTH;
        else if (!strcmp(argv[i], "--encrypt"))
            o->sec_mode = MROCE_SEC_ENCRYPT;
        else if (i + 1 >= argc || opt_one(o, argv[i], argv[i + 1]) < 0)
            goto usage;
        else
            i++;
    }
    if (!o->batch && o->kind == MROCE_DP_DPDK)
        o->batch = DPDK_BATCH;
    if (o->pair && o->ip && o->peer_ip && o->port && o->peer_port && !o->verify)
        return; /* pair: write_bw only */
    if (!o->pair && o->ip && (o->loop ? !o->verify : o->params != NULL))
        return; /* loop: write_bw only */
usage:
    fprintf(stderr, "usage: mroce-dpdk-perf server|client --ip A --params "
                    "PREFIX [options] [-- EAL args]\n"
                    "       mroce-dpdk-perf loop --ip A [options] -- EAL "
                    "args\n"
                    "       mroce-dpdk-perf pair --ip A --peer-ip B --port "
                    "P0 --peer-port P1 [options] -- EAL args\n");
    exit(2);
}

static void log_hook(void *ud, int level, const char *msg)
{
    (void)ud;
    if (level == MROCE_LOG_ERR)
        fprintf(stderr, "mroce: %s\n", msg);
}

static void addr_of(const char *ip, struct mroce_addr *a)
{
    if (mroce_addr_parse(ip, a))
        die("bad --ip", MROCE_EINVAL);
}

static void open_dp(struct side *s)
{
    /* loop: the peer is this port, whatever MAC it is given */
    struct mroce_dp_neigh self = {.mac = {0x02, 0, 0, 0, 0, 1}};
    addr_of(s->o.ip, &self.ip);
    struct mroce_dpdk_attr da = {.eal_argc = s->o.eal_argc,
                                 .eal_argv = s->o.eal_argv,
                                 .port = s->o.port,
                                 .neigh = s->o.loop ? &self : NULL,
                                 .n_neigh = s->o.loop,
                                 .pcap = s->o.pcap,
                                 .no_zc = s->o.no_zc};
    struct mroce_dp_attr a = {.kind = s->o.kind,
                              .local_ip = s->o.ip,
                              .port = s->o.udp_port,
                              .dpdk = &da,
                              .batch = s->o.batch,
                              .no_gso = s->o.no_gso};
    addr_of(s->o.ip, &a.ctx.addr);
    a.ctx.mtu = s->o.mtu;
    a.ctx.hooks.log = log_hook;
    int rc = mroce_dp_create(&a, &s->dp);
    if (rc < 0)
        die("datapath", rc);
    s->ctx = mroce_dp_ctx(s->dp);
}

static void open_conn(struct side *s)
{
    size_t len = NREG * s->o.size;
    s->mem = aligned_alloc(4096, len);
    if (!s->mem)
        die("memory", MROCE_ENOMEM);
    memset(s->mem, 0, len);
    unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                   MROCE_ACCESS_REMOTE_READ;
    int rc = mroce_pd_alloc(s->ctx, &s->pd);
    if (rc == 0)
        rc = mroce_cq_create(s->ctx, 4 * DEPTH, &s->cq);
    if (rc == 0)
        rc = mroce_reg_mr(s->pd, s->mem, len, acc, &s->mr);
    /* Two busy-polling processes on a shared 2-core box get descheduled
     * for milliseconds, which the engine would read as loss: a 2 ms
     * minimum RTO and 15 timeout rounds keep the tests about the wire. */
    struct mroce_conn_attr ca = {.send_cq = s->cq,
                                 .recv_cq = s->cq,
                                 .n_paths = (uint16_t)s->o.paths,
                                 .sq_depth = 2 * DEPTH,
                                 .min_rto_ns = 2000000,
                                 .retry_cnt = 15};
    if (rc == 0)
        rc = mroce_conn_create(s->pd, &ca, &s->conn);
    if (rc < 0)
        die("connection", rc);
}

/* The secure mode, under secret (before connecting). */
static void set_secret(struct side *s, const uint8_t *secret)
{
    memcpy(s->secret, secret, sizeof(s->secret));
    int rc = mroce_conn_set_secret(s->conn, s->o.sec_mode, s->secret,
                                   sizeof(s->secret));
    if (rc < 0)
        die("secure mode", rc);
}

static void draw_secret(uint8_t *secret)
{
    if (getrandom(secret, MROCE_SECRET_LEN, 0) != MROCE_SECRET_LEN)
        die("getrandom", MROCE_EINVAL);
}

/* ---- Parameter exchange through files ---- */

static void put_info(struct side *s)
{
    char tmp[600], path[512];
    struct xinfo x = {.addr = (uint64_t)(uintptr_t)s->mem,
                      .rkey = mroce_mr_rkey(s->mr),
                      .sec_mode = s->o.sec_mode};
    memcpy(x.secret, s->secret, sizeof(x.secret));
    mroce_conn_get_params(s->conn, &x.p);
    snprintf(path, sizeof(path), "%s.%s", s->o.params,
             s->o.server ? "server" : "client");
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(&x, sizeof(x), 1, f) != 1 || fclose(f) != 0 ||
        rename(tmp, path) != 0)
        die("writing params", MROCE_EINVAL);
}

/* Until the peer's parameter file is there (polling the datapath, if
 * open, to answer ARP meanwhile). */
static void read_info(struct side *s)
{
    char path[512];
    snprintf(path, sizeof(path), "%s.%s", s->o.params,
             s->o.server ? "client" : "server");
    uint64_t end = mroce_dp_now_ns() + WAIT_NS;
    for (;;) {
        FILE *f = fopen(path, "rb");
        if (f) {
            size_t n = fread(&s->peer, sizeof(s->peer), 1, f);
            fclose(f);
            if (n == 1)
                return;
        }
        if (mroce_dp_now_ns() > end)
            die("no peer parameters", MROCE_ESTATE);
        if (s->dp)
            mroce_progress(s->dp);
        usleep(1000);
    }
}

static void get_info(struct side *s)
{
    read_info(s);
    if (s->peer.sec_mode != s->o.sec_mode)
        die("the peer runs another protection mode", MROCE_EINVAL);
    if (!s->o.server && s->o.sec_mode)
        set_secret(s, s->peer.secret);
    int rc = mroce_conn_connect(s->conn, &s->peer.p);
    if (rc < 0)
        die("connect", rc);
}

/* ---- Driving ---- */

static int poll_one(struct side *s, struct mroce_wc *wc)
{
    uint64_t t = __rdtsc();
    int moved = mroce_progress(s->dp);
    if (s->twin)
        moved += mroce_progress(s->twin->dp);
    if (moved > 0)
        s->busy_cycles += __rdtsc() - t;
    int n = mroce_poll_cq(s->cq, 1, wc);
    if (n == 1 && wc->status != MROCE_WC_SUCCESS) {
        fprintf(stderr, "mroce-dpdk-perf: completion %s\n",
                mroce_wc_status_str(wc->status));
        exit(1);
    }
    return n;
}

static void wait_wc(struct side *s, struct mroce_wc *wc)
{
    uint64_t end = mroce_dp_now_ns() + WAIT_NS;
    while (poll_one(s, wc) == 0)
        if (mroce_dp_now_ns() > end)
            die("no completion", MROCE_ESTATE);
}

/* ---- Teardown ----
 *
 * Each side leaves only when the other needs nothing more from it, and
 * never polls a memif port whose peer may be leaving. The client closes
 * (CLOSE until CLOSE_ACK, R-CONN-8) once its "done" SEND completed, and
 * exits. The server polls until that CLOSE came (so it acknowledges
 * "done" however late the client looks), then stops polling and waits
 * for the client's port to go down before it stops its own. Before,
 * both polled for a fixed 200 ms and exited: a client descheduled for
 * longer lost the server before its "done" was acknowledged
 * (RETRY_EXC_ERR), and whichever side was still polling could be inside
 * rte_eth_rx_burst while memif's interrupt thread unmapped the rings
 * under it (docs/dpdk.md, "Teardown"). */

/* Polls until the connection is closed (or broken); the receives the
 * close flushes complete with WR_FLUSH_ERR and are dropped. */
static void wait_closed(struct side *s)
{
    struct mroce_wc wc;
    uint64_t end = mroce_dp_now_ns() + WAIT_NS;
    for (;;) {
        int st = mroce_conn_state(s->conn);
        if (st == MROCE_CONN_CLOSED || st == MROCE_CONN_ERROR)
            return;
        if (mroce_dp_now_ns() > end)
            die("the connection never closed", MROCE_ESTATE);
        mroce_progress(s->dp);
        while (mroce_poll_cq(s->cq, 1, &wc) == 1)
            ;
    }
}

static void close_client(struct side *s)
{
    if (mroce_conn_disconnect(s->conn) < 0)
        die("disconnect", MROCE_ESTATE);
    wait_closed(s);
}

/* Without polling: until the DPDK port's peer is gone (bounded). */
static void wait_peer_gone(struct side *s)
{
#ifdef MROCE_HAVE_DPDK
    int port = mroce_dpdk_port_id(s->dp);
    if (port < 0)
        return; /* UDP: no shared rings */
    uint64_t end = mroce_dp_now_ns() + GONE_NS;
    struct rte_eth_link l = {0};
    while (mroce_dp_now_ns() < end) {
        if (rte_eth_link_get_nowait((uint16_t)port, &l) != 0 || !l.link_status)
            return;
        usleep(1000);
    }
#else
    (void)s;
#endif
}

static void close_server(struct side *s)
{
    wait_closed(s);
    wait_peer_gone(s);
}

static void pattern(uint8_t *b, size_t n, unsigned k)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(i * 131 + k * 7 + (i >> 9));
}

static bool check(const uint8_t *b, size_t n, unsigned k, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        if (b[i] != (uint8_t)(i * 131 + k * 7 + (i >> 9))) {
            fprintf(stderr, "mroce-dpdk-perf: %s: byte %zu wrong\n", what, i);
            return false;
        }
    }
    printf("verified %s (%zu bytes)\n", what, n);
    return true;
}

static struct mroce_send_wr wr(struct side *s, int reg, int rreg)
{
    struct mroce_send_wr w = {
        .sge = {(uint64_t)(uintptr_t)(s->mem + (size_t)reg * s->o.size),
                (uint32_t)s->o.size, mroce_mr_lkey(s->mr)},
        .remote_addr = s->peer.addr + (uint64_t)rreg * s->o.size,
        .rkey = s->peer.rkey,
        .imm = 0x5eed0000u + (uint32_t)reg};
    return w;
}

static void post_ok(int rc, const char *what)
{
    if (rc < 0)
        die(what, rc);
}

static void post_recvs(struct side *s, int n)
{
    for (int i = 1; i <= n; i++) {
        struct mroce_recv_wr r = {
            .wr_id = (uint64_t)i,
            .sge = {(uint64_t)(uintptr_t)(s->mem + (size_t)i * s->o.size),
                    (uint32_t)s->o.size, mroce_mr_lkey(s->mr)}};
        post_ok(mroce_post_recv(s->conn, &r), "post_recv");
    }
}

static void send_done(struct side *s)
{
    struct mroce_wc wc;
    struct mroce_send_wr w = wr(s, 0, 0);
    w.sge.length = 1;
    post_ok(mroce_post_send(s->conn, &w), "post_send");
    wait_wc(s, &wc);
}

static bool client_verify(struct side *s)
{
    struct mroce_wc wc;
    size_t n = s->o.size;
    pattern(s->mem, n, 1);
    struct mroce_send_wr w = wr(s, 0, 0);
    post_ok(mroce_post_write(s->conn, &w), "post_write");
    wait_wc(s, &wc);
    memset(s->mem, 0, n);
    post_ok(mroce_post_read(s->conn, &w), "post_read");
    wait_wc(s, &wc);
    bool ok = check(s->mem, n, 1, "WRITE then READ");
    pattern(s->mem + n, n, 2);
    pattern(s->mem + 2 * n, n, 3);
    pattern(s->mem + 3 * n, n, 4);
    struct mroce_send_wr s1 = wr(s, 1, 0), s2 = wr(s, 2, 0), s3 = wr(s, 3, 3);
    post_ok(mroce_post_send(s->conn, &s1), "post_send");
    post_ok(mroce_post_send_imm(s->conn, &s2), "post_send_imm");
    post_ok(mroce_post_write_imm(s->conn, &s3), "post_write_imm");
    for (int i = 0; i < 3; i++)
        wait_wc(s, &wc);
    return ok;
}

static bool server_verify(struct side *s)
{
    struct mroce_wc wc[3];
    size_t n = s->o.size;
    for (int i = 0; i < 3; i++)
        wait_wc(s, &wc[i]);
    bool ok = wc[0].opcode == MROCE_WC_RECV && !wc[0].has_imm &&
              wc[1].opcode == MROCE_WC_RECV && wc[1].has_imm &&
              wc[1].imm == 0x5eed0002u &&
              wc[2].opcode == MROCE_WC_RECV_RDMA_WITH_IMM &&
              wc[2].imm == 0x5eed0003u;
    if (!ok)
        fprintf(stderr, "mroce-dpdk-perf: wrong completions\n");
    ok &= check(s->mem + n, n, 2, "SEND");
    ok &= check(s->mem + 2 * n, n, 3, "SEND_IMM");
    ok &= check(s->mem + 3 * n, n, 4, "WRITE_IMM");
    return ok;
}

/* The DPDK datapath's loop phases in cycles per packet (the unit of
 * cycles_per_pkt) and its transmit counters. */
static void print_dpdk(struct side *s, uint64_t pkts)
{
#ifdef MROCE_HAVE_DPDK
    static const char *const ph[MROCE_DPDK_PH_N] = {
        "rx", "eng_rx", "pool", "timers", "eng_tx", "tx", "app"};
    struct mroce_dpdk_counters d;
    if (s->o.kind != MROCE_DP_DPDK || mroce_dpdk_get_counters(s->dp, &d) < 0)
        return;
    printf(",\"passes\":%" PRIu64 ",\"tx_backlogged\":%" PRIu64
           ",\"tx_alloc_fail\":%" PRIu64 ",\"tx_zc\":%" PRIu64
           ",\"tx_zc_flattened\":%" PRIu64 ",\"tx_zc_short\":%" PRIu64
           ",\"tx_zc_async\":%" PRIu64 ",\"phase_cycles_per_pkt\":{",
           d.passes, d.tx_backlogged, d.tx_alloc_fail, d.tx_zc,
           d.tx_zc_flattened, d.tx_zc_short, d.tx_zc_async);
    for (int i = 0; i < MROCE_DPDK_PH_N; i++)
        printf("%s\"%s\":%.0f", i ? "," : "", ph[i],
               pkts ? (double)d.cyc[i] / (double)pkts : 0);
    printf("}");
#else
    (void)s;
    (void)pkts;
#endif
}

static void print_json(struct side *s, double secs, uint64_t bytes,
                       uint64_t msgs, uint64_t cycles)
{
    struct mroce_dp_counters c;
    struct mroce_conn_counters k;
    mroce_dp_get_counters(s->dp, &c);
    mroce_conn_get_counters(s->conn, &k);
    uint64_t pkts = c.tx_pkts + c.rx_pkts;
    printf("{\"role\":\"%s\",\"datapath\":\"%s\",\"seconds\":%.3f,"
           "\"bytes\":%" PRIu64 ",\"msgs\":%" PRIu64 ",\"gbps\":%.3f,"
           "\"tx_pkts\":%" PRIu64 ",\"rx_pkts\":%" PRIu64
           ",\"tx_bursts\":%" PRIu64 ",\"rx_bursts\":%" PRIu64
           ",\"cycles_per_pkt\":%.0f,\"busy_cycles_per_pkt\":%.0f,"
           "\"rx_bad_frame\":%" PRIu64 ",\"tx_dropped\":%" PRIu64
           ",\"retx_pkts\":%" PRIu64 ",\"rto_events\":%" PRIu64 ",\"batch\":%u",
           s->o.loop     ? "loop"
           : s->o.pair   ? "pair"
           : s->o.server ? "server"
                         : "client",
           s->o.kind == MROCE_DP_UDP ? "udp" : "dpdk", secs, bytes, msgs,
           secs > 0 ? (double)bytes * 8 / secs / 1e9 : 0, c.tx_pkts, c.rx_pkts,
           c.tx_bursts, c.rx_bursts, pkts ? (double)cycles / (double)pkts : 0,
           pkts ? (double)s->busy_cycles / (double)pkts : 0, c.rx_bad_frame,
           c.tx_dropped, k.retx_pkts, k.rto_events, s->o.batch);
    static const char *const modes[] = {"none", "auth", "encrypt"};
    printf(",\"sec_mode\":\"%s\",\"drop_bad_tag\":%" PRIu64
           ",\"drop_replay\":%" PRIu64 ",\"drop_sec_mode\":%" PRIu64
           ",\"key_updates_tx\":%" PRIu64 ",\"key_updates_rx\":%" PRIu64,
           modes[mroce_conn_sec_mode(s->conn)], k.drop_bad_tag, k.drop_replay,
           k.drop_sec_mode, k.key_updates_tx, k.key_updates_rx);
    if (bytes)
        printf(",\"cpu_ns_per_data_pkt\":%.0f",
               (double)s->cpu_ns / ((double)bytes / s->o.mtu));
    print_dpdk(s, pkts);
    printf("}\n");
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void client_bw(struct side *s)
{
    struct mroce_wc wc;
    uint64_t msgs = 0, posted = 0;
    pattern(s->mem, s->o.size, 1);
    struct mroce_send_wr w = wr(s, 0, 0);
    uint64_t t0 = mroce_dp_now_ns(), c0 = __rdtsc(), cpu0 = thread_cpu_ns();
    uint64_t end = t0 + (uint64_t)(s->o.seconds * 1e9);
    s->busy_cycles = 0;
    for (;;) { /* one clock read a pass (and the loop's own) */
        bool open = mroce_dp_now_ns() < end;
        if (!open && msgs == posted)
            break;
        while (open && posted - msgs < DEPTH &&
               mroce_post_write(s->conn, &w) == 0)
            posted++;
        msgs += (uint64_t)poll_one(s, &wc);
    }
    double secs = (double)(mroce_dp_now_ns() - t0) / 1e9;
    s->cpu_ns = thread_cpu_ns() - cpu0;
    print_json(s, secs, msgs * s->o.size, msgs, __rdtsc() - c0);
}

static int run(struct side *s)
{
    struct mroce_wc wc;
    bool ok = true;
    if (s->o.server) {
        post_recvs(s, s->o.verify ? 4 : 1);
        if (s->o.sec_mode) {
            uint8_t secret[MROCE_SECRET_LEN];
            draw_secret(secret);
            set_secret(s, secret);
        }
        put_info(s);
        get_info(s);
        uint64_t c0 = __rdtsc(), t0 = mroce_dp_now_ns();
        if (s->o.verify)
            ok = server_verify(s);
        wait_wc(s, &wc); /* the client's "done" */
        print_json(s, (double)(mroce_dp_now_ns() - t0) / 1e9, 0, 0,
                   __rdtsc() - c0);
    } else {
        get_info(s);
        put_info(s);
        uint64_t c0 = __rdtsc(), t0 = mroce_dp_now_ns();
        if (s->o.verify) {
            ok = client_verify(s); /* its counters too (tx_zc, tests) */
            print_json(s, (double)(mroce_dp_now_ns() - t0) / 1e9, 0, 0,
                       __rdtsc() - c0);
        } else {
            client_bw(s);
        }
        send_done(s);
    }
    if (s->o.server)
        close_server(s);
    else
        close_client(s);
    return ok ? 0 : 1;
}

/* loop, pair: both connections in one process, one secret. */
static void secure_both(struct side *a, struct side *b)
{
    if (!a->o.sec_mode)
        return;
    uint8_t secret[MROCE_SECRET_LEN];
    draw_secret(secret);
    set_secret(a, secret);
    set_secret(b, secret);
}

/* Client and server as two connections of one context (loop). */
static int run_loop(struct side *s)
{
    struct side peer = *s;
    peer.o.server = true;
    open_conn(&peer);
    mroce_conn_get_params(peer.conn, &s->peer.p);
    mroce_conn_get_params(s->conn, &peer.peer.p);
    s->peer.addr = (uint64_t)(uintptr_t)peer.mem;
    s->peer.rkey = mroce_mr_rkey(peer.mr);
    secure_both(s, &peer);
    if (mroce_conn_connect(s->conn, &s->peer.p) < 0 ||
        mroce_conn_connect(peer.conn, &peer.peer.p) < 0)
        die("connect", MROCE_ESTATE);
    client_bw(s);
    mroce_conn_destroy(peer.conn);
    free(peer.mem);
    return 0;
}

/* Until both ports' links are up (memif connects in the background). */
static void pair_link_wait(struct side *a, struct side *b)
{
#ifdef MROCE_HAVE_DPDK
    uint64_t end = mroce_dp_now_ns() + WAIT_NS;
    struct rte_eth_link la = {0}, lb = {0};
    while (mroce_dp_now_ns() < end) {
        rte_eth_link_get_nowait((uint16_t)mroce_dpdk_port_id(a->dp), &la);
        rte_eth_link_get_nowait((uint16_t)mroce_dpdk_port_id(b->dp), &lb);
        if (la.link_status && lb.link_status)
            return;
        usleep(1000);
    }
    die("links never came up", MROCE_ESTATE);
#else
    (void)a;
    (void)b;
#endif
}

/* The server on a port of its own, polled with the client (pair). */
static int run_pair(struct side *s)
{
    struct side *peer = calloc(1, sizeof(*peer));
    if (!peer)
        die("memory", MROCE_ENOMEM);
    peer->o = s->o;
    peer->o.server = true;
    peer->o.ip = s->o.peer_ip;
    peer->o.port = s->o.peer_port;
    open_dp(peer);
    open_conn(peer);
    pair_link_wait(s, peer);
    mroce_conn_get_params(peer->conn, &s->peer.p);
    mroce_conn_get_params(s->conn, &peer->peer.p);
    s->peer.addr = (uint64_t)(uintptr_t)peer->mem;
    s->peer.rkey = mroce_mr_rkey(peer->mr);
    secure_both(s, peer);
    if (mroce_conn_connect(s->conn, &s->peer.p) < 0 ||
        mroce_conn_connect(peer->conn, &peer->peer.p) < 0)
        die("connect", MROCE_ESTATE);
    s->twin = peer;
    client_bw(s);
    mroce_conn_destroy(peer->conn);
    mroce_dp_destroy(peer->dp);
    free(peer->mem);
    free(peer);
    return 0;
}

int main(int argc, char **argv)
{
    struct side s;
    memset(&s, 0, sizeof(s));
    parse(argc, argv, &s.o);
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* The server writes its parameters once its port is started. A
     * memif server refuses a client that connects before (its device is
     * disabled until rte_eth_dev_start) and the client never retries: the
     * link stays down and the run fails (RETRY_EXC_ERR, 2 in ~300 loaded
     * runs). So the client opens its port only then. */
    if (!s.o.server && !s.o.loop && !s.o.pair)
        read_info(&s);
    open_dp(&s);
    open_conn(&s);
    int rc = s.o.loop ? run_loop(&s) : s.o.pair ? run_pair(&s) : run(&s);
    mroce_conn_destroy(s.conn);
    mroce_dp_destroy(s.dp);
    free(s.mem);
    return rc;
}
