/* The UDP datapath (src/io/udp, src/io/dp.c) on real sockets: two
 * datapaths in this process on 127.0.0.1 (and ::1), driven by one loop
 * calling mroce_progress on both. Every operation type byte for byte,
 * many paths and streams, the impairment layer, IPv6, GSO/GRO on and off,
 * a peer that disappears, hostile datagrams from a plain socket, and the
 * polling thread. Every wait is bounded by a wall-clock deadline, and an
 * alarm bounds the whole program. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <mroce/mroce.h>
#include <mroce/mroce_dp.h>

#include "io/dp.h"
#include "io/udp/udp.h"
#include "wire/wire.h"

#define MS 1000000ull
#define KIB 1024u
#define MIB (1024u * 1024u)
#define WC_MAX 4096
#define CQ_DEPTH 8192
#define TEST_MIN_RTO (10 * MS)
#define ALL_ACCESS                                                             \
    (MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |                    \
     MROCE_ACCESS_REMOTE_READ)

struct side {
    struct mroce_dp *dp;
    struct mroce_ctx *ctx;
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    uint8_t *mem;
    size_t len;
    struct mroce_mr *mr;
    struct mroce_wc wc[WC_MAX];
    int n_wc;
};

struct opts {
    const char *ip;
    uint16_t n_paths, n_streams;
    bool no_gso, no_gro;
    struct mroce_impair imp;
    struct mroce_conn_attr conn;
    size_t mem;
    uint32_t mtu;
    uint64_t pace_bps;
    uint32_t tx_run;
};

struct fix {
    struct side s[2];
    struct mroce_conn *c[2];
};

static struct fix *g_fix;
static bool g_halves; /* pump: mroce_progress_rx, poll, mroce_progress_tx */

/* ---- set-up ---- */

static void pattern(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 16);
    }
}

/* Binds a free port: tries random ports below the ephemeral range. */
static int side_open(struct side *s, const struct opts *o, int idx)
{
    struct mroce_dp_attr a;
    memset(&a, 0, sizeof(a));
    a.kind = MROCE_DP_UDP;
    a.local_ip = o->ip;
    a.no_gso = o->no_gso;
    a.no_gro = o->no_gro;
    a.impair = o->imp;
    a.impair.seed = o->imp.seed * 2 + (uint64_t)idx + 1;
    a.ctx.mtu = o->mtu;
    a.pace_bps = o->pace_bps;
    a.ctx.spray_run = o->tx_run;
    a.ctx.seed = (uint64_t)idx + 77;
    int rc = MROCE_ESTATE;
    for (int t = 0; t < 50 && rc == MROCE_ESTATE; t++) {
        a.port = (uint16_t)(20000 + (unsigned)rand() % 12000);
        rc = mroce_dp_create(&a, &s->dp);
    }
    if (rc < 0)
        return rc;
    s->ctx = mroce_dp_ctx(s->dp);
    assert_int_equal(mroce_pd_alloc(s->ctx, &s->pd), 0);
    assert_int_equal(mroce_cq_create(s->ctx, CQ_DEPTH, &s->cq), 0);
    s->len = o->mem ? o->mem : 4 * MIB;
    s->mem = malloc(s->len);
    assert_non_null(s->mem);
    pattern(s->mem, s->len, (uint32_t)idx + 9);
    assert_int_equal(mroce_reg_mr(s->pd, s->mem, s->len, ALL_ACCESS, &s->mr),
                     0);
    return 0;
}

static struct mroce_conn *conn_new(struct side *s, const struct opts *o)
{
    struct mroce_conn_attr a = o->conn;
    /* a shared 2-core box preempts threads for milliseconds: a 100 us
     * minimum RTO would fire spuriously and fail paths */
    if (!a.min_rto_ns)
        a.min_rto_ns = TEST_MIN_RTO;
    a.send_cq = a.recv_cq = s->cq;
    a.n_paths = o->n_paths ? o->n_paths : a.n_paths;
    a.n_streams = o->n_streams ? o->n_streams : a.n_streams;
    struct mroce_conn *c;
    assert_int_equal(mroce_conn_create(s->pd, &a, &c), 0);
    return c;
}

/* Connects a to b; a's packets go to redirect_port if it is not 0. */
static void conn_pair(struct mroce_conn *a, struct mroce_conn *b,
                      uint16_t redirect_port)
{
    struct mroce_conn_params pa, pb;
    mroce_conn_get_params(a, &pa);
    mroce_conn_get_params(b, &pb);
    if (redirect_port)
        pb.udp_port = redirect_port;
    assert_int_equal(mroce_conn_connect(a, &pb), 0);
    assert_int_equal(mroce_conn_connect(b, &pa), 0);
}

static void fix_free(struct fix *f)
{
    if (!f)
        return;
    for (int i = 0; i < 2; i++) {
        mroce_dp_destroy(f->s[i].dp); /* frees conns, MRs, CQs, PDs */
        free(f->s[i].mem);
    }
    free(f);
}

/* Opens both sides and one connection; NULL if the address family is
 * not available here (IPv6 in some containers). */
static struct fix *fix_new(const struct opts *o)
{
    struct fix *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    g_fix = f;
    for (int i = 0; i < 2; i++) {
        int rc = side_open(&f->s[i], o, i);
        if (rc == MROCE_EINVAL && i == 0) {
            fix_free(f);
            g_fix = NULL;
            return NULL;
        }
        assert_int_equal(rc, 0);
    }
    for (int i = 0; i < 2; i++)
        f->c[i] = conn_new(&f->s[i], o);
    conn_pair(f->c[0], f->c[1], 0);
    return f;
}

static int teardown(void **state)
{
    (void)state;
    g_halves = false;
    fix_free(g_fix);
    g_fix = NULL;
    return 0;
}

/* ---- driving ---- */

static uint64_t now_ns(void)
{
    return mroce_dp_now_ns();
}

static void side_poll(struct side *s)
{
    if (!s->dp)
        return;
    int room = WC_MAX - s->n_wc;
    int n = mroce_poll_cq(s->cq, room < 64 ? room : 64, s->wc + s->n_wc);
    assert_true(n >= 0);
    s->n_wc += n;
}

/* One pass on both sides; a short sleep when both were idle. */
static void pump(struct fix *f)
{
    int moved = 0;
    for (int i = 0; i < 2; i++) {
        if (!f->s[i].dp)
            continue;
        int rc = g_halves ? mroce_progress_rx(f->s[i].dp)
                          : mroce_progress(f->s[i].dp);
        assert_true(rc >= 0);
        moved += rc;
        side_poll(&f->s[i]);
        if (g_halves) {
            rc = mroce_progress_tx(f->s[i].dp);
            assert_true(rc >= 0);
            moved += rc;
        }
    }
    if (moved == 0 && f->s[0].dp)
        mroce_dp_wait(f->s[0].dp, 20000);
}

/* Takes the completion with wr_id from side s, driving both sides until
 * it arrives or ms have passed (then the test fails). */
static struct mroce_wc wait_wc(struct fix *f, int side, uint64_t wr_id,
                               unsigned ms)
{
    struct side *s = &f->s[side];
    uint64_t end = now_ns() + ms * MS;
    for (;;) {
        for (int i = 0; i < s->n_wc; i++) {
            if (s->wc[i].wr_id != wr_id)
                continue;
            struct mroce_wc wc = s->wc[i];
            s->wc[i] = s->wc[--s->n_wc];
            return wc;
        }
        if (now_ns() > end)
            fail_msg("no completion for wr %llu on side %d in %u ms",
                     (unsigned long long)wr_id, side, ms);
        pump(f);
    }
}

static void expect_ok(struct fix *f, int side, uint64_t wr_id, int opcode,
                      unsigned ms)
{
    struct mroce_wc wc = wait_wc(f, side, wr_id, ms);
    if (wc.status != MROCE_WC_SUCCESS)
        fail_msg("wr %llu: %s", (unsigned long long)wr_id,
                 mroce_wc_status_str(wc.status));
    assert_int_equal(wc.opcode, opcode);
}

/* ---- operations ---- */

static struct mroce_send_wr swr(struct side *src, uint64_t id, uint16_t st,
                                size_t off, uint32_t len)
{
    struct mroce_send_wr w;
    memset(&w, 0, sizeof(w));
    w.wr_id = id;
    w.stream = st;
    w.sge.addr = (uint64_t)(uintptr_t)(src->mem + off);
    w.sge.length = len;
    w.sge.lkey = mroce_mr_lkey(src->mr);
    return w;
}

static void post_recv(struct fix *f, uint64_t id, uint16_t st, size_t off,
                      uint32_t len)
{
    struct side *b = &f->s[1];
    struct mroce_recv_wr r = {.wr_id = id, .stream = st};
    r.sge.addr = (uint64_t)(uintptr_t)(b->mem + off);
    r.sge.length = len;
    r.sge.lkey = mroce_mr_lkey(b->mr);
    assert_int_equal(mroce_post_recv(f->c[1], &r), 0);
}

enum op { OP_WRITE, OP_WRITE_IMM, OP_SEND, OP_SEND_IMM, OP_READ, N_OP };

/* Posts op from side 0 over [off, +len) to side 1 at the same offset
 * (READ: from side 1 into side 0). */
static void post_op(struct fix *f, int op, uint64_t id, uint16_t st, size_t off,
                    uint32_t len)
{
    struct side *a = &f->s[0], *b = &f->s[1];
    struct mroce_send_wr w = swr(a, id, st, off, len);
    w.remote_addr = (uint64_t)(uintptr_t)(b->mem + off);
    w.rkey = mroce_mr_rkey(b->mr);
    w.imm = (uint32_t)id ^ 0xC0FFEEu;
    struct mroce_conn *c = f->c[0];
    if (op == OP_WRITE_IMM || op == OP_SEND || op == OP_SEND_IMM)
        post_recv(f, id, st, off, len);
    int rc = op == OP_WRITE       ? mroce_post_write(c, &w)
             : op == OP_WRITE_IMM ? mroce_post_write_imm(c, &w)
             : op == OP_SEND      ? mroce_post_send(c, &w)
             : op == OP_SEND_IMM  ? mroce_post_send_imm(c, &w)
                                  : mroce_post_read(c, &w);
    assert_int_equal(rc, 0);
}

static void check_op(struct fix *f, int op, uint64_t id, size_t off,
                     uint32_t len, unsigned ms)
{
    static const int sopc[N_OP] = {MROCE_WC_RDMA_WRITE, MROCE_WC_RDMA_WRITE,
                                   MROCE_WC_SEND, MROCE_WC_SEND,
                                   MROCE_WC_RDMA_READ};
    expect_ok(f, 0, id, sopc[op], ms);
    if (op == OP_WRITE_IMM || op == OP_SEND || op == OP_SEND_IMM) {
        struct mroce_wc wc = wait_wc(f, 1, id, ms);
        assert_int_equal(wc.status, MROCE_WC_SUCCESS);
        assert_int_equal(wc.opcode, op == OP_WRITE_IMM
                                        ? MROCE_WC_RECV_RDMA_WITH_IMM
                                        : MROCE_WC_RECV);
        if (op != OP_SEND) {
            assert_true(wc.has_imm);
            assert_int_equal(wc.imm, (uint32_t)id ^ 0xC0FFEEu);
        }
        if (op != OP_WRITE_IMM)
            assert_int_equal(wc.byte_len, len);
    }
    assert_memory_equal(f->s[0].mem + off, f->s[1].mem + off, len);
}

/* Fresh source bytes, and the destination made different. */
static void prep_op(struct fix *f, int op, size_t off, uint32_t len,
                    uint32_t seed)
{
    int src = op == OP_READ ? 1 : 0;
    pattern(f->s[src].mem + off, len, seed);
    memset(f->s[1 - src].mem + off, 0x5A, len);
}

static void one_op(struct fix *f, int op, uint64_t id, size_t off, uint32_t len)
{
    prep_op(f, op, off, len, (uint32_t)id);
    post_op(f, op, id, 0, off, len);
    check_op(f, op, id, off, len, 10000);
}

/* Every operation type, small and multi-packet sizes. */
static void all_ops(struct fix *f)
{
    static const uint32_t sizes[] = {1, 100, 4096, 4097, 65536 + 13, MIB};
    uint64_t id = 1;
    for (int op = 0; op < N_OP; op++)
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
            one_op(f, op, id++, (size_t)op * 8 * KIB, sizes[k]);
}

/* Many messages in flight on every stream and op; then checks all. */
static void many_ops(struct fix *f, uint16_t streams, int per, uint32_t len)
{
    uint64_t id = 1000;
    size_t off = 0;
    for (int k = 0; k < per; k++)
        for (uint16_t st = 0; st < streams; st++, id++, off += len) {
            int op = (int)(id % N_OP);
            assert_true(off + len <= f->s[0].len);
            prep_op(f, op, off, len, (uint32_t)id);
            post_op(f, op, id, st, off, len);
        }
    id = 1000;
    off = 0;
    for (int k = 0; k < per; k++)
        for (uint16_t st = 0; st < streams; st++, id++, off += len)
            check_op(f, (int)(id % N_OP), id, off, len, 30000);
}

/* ---- tests ---- */

static void test_ops_v4(void **state)
{
    (void)state;
    struct opts o = {.ip = "127.0.0.1"};
    struct fix *f = fix_new(&o);
    all_ops(f);
    struct mroce_dp_counters a, b;
    mroce_dp_get_counters(f->s[0].dp, &a);
    mroce_dp_get_counters(f->s[1].dp, &b);
    assert_true(a.tx_pkts > 0 && b.rx_pkts > 0);
    assert_int_equal(a.rx_bad_frame + b.rx_bad_frame, 0);
    assert_int_equal(a.gso_fallback + a.gro_fallback, 0);
    /* 1 MiB writes leave in GSO messages and arrive GRO-merged */
    assert_true(a.gso_sends > 0);
    assert_true(b.gro_merged > 0);
}

/* The soft NIC's pass (src/ibverbs/nic.c) splits mroce_progress in two
 * and acts in between: the halves together move every operation. */
static void test_ops_halves(void **state)
{
    (void)state;
    assert_int_equal(mroce_progress_rx(NULL), MROCE_EINVAL);
    assert_int_equal(mroce_progress_tx(NULL), MROCE_EINVAL);
    struct opts o = {.ip = "127.0.0.1"};
    struct fix *f = fix_new(&o);
    g_halves = true;
    all_ops(f);
    g_halves = false;
}

static void test_ops_no_offload(void **state)
{
    (void)state;
    struct opts o = {.ip = "127.0.0.1", .no_gso = true, .no_gro = true};
    struct fix *f = fix_new(&o);
    all_ops(f);
    struct mroce_dp_counters a, b;
    mroce_dp_get_counters(f->s[0].dp, &a);
    mroce_dp_get_counters(f->s[1].dp, &b);
    assert_int_equal(a.gso_sends + b.gso_sends, 0);
    assert_int_equal(a.gro_merged + b.gro_merged, 0);
}

static void test_gso_only(void **state)
{
    (void)state;
    struct opts o = {.ip = "127.0.0.1", .no_gro = true, .n_paths = 4};
    struct fix *f = fix_new(&o);
    many_ops(f, 1, 10, 200 * KIB);
}

static void test_ops_v6(void **state)
{
    (void)state;
    struct opts o = {.ip = "::1"};
    struct fix *f = fix_new(&o);
    if (!f)
        skip();
    all_ops(f);
    struct mroce_dp_counters b;
    mroce_dp_get_counters(f->s[1].dp, &b);
    assert_true(b.rx_pkts > 0);
}

static void test_many_paths_streams(void **state)
{
    (void)state;
    struct opts o = {.ip = "127.0.0.1", .n_paths = 64, .n_streams = 8};
    o.mem = 16 * MIB;
    struct fix *f = fix_new(&o);
    many_ops(f, 8, 6, 256 * KIB);
    /* every path carried data: each has its own socket and port */
    int used = 0;
    for (uint16_t p = 0; p < 64; p++) {
        struct mroce_path_info pi;
        assert_int_equal(mroce_path_query(f->c[0], p, &pi), 0);
        used += pi.tx_pkts > 0;
    }
    assert_int_equal(used, 64);
}

static void test_impaired(void **state)
{
    (void)state;
    struct opts o = {.ip = "127.0.0.1", .n_paths = 8, .n_streams = 4};
    o.imp.loss = 0.05;
    o.imp.reorder = 0.05;
    o.imp.reorder_ns = 200000;
    o.imp.duplicate = 0.02;
    o.imp.seed = 5;
    o.mem = 8 * MIB;
    struct fix *f = fix_new(&o);
    many_ops(f, 4, 5, 128 * KIB);
    all_ops(f);
    struct mroce_dp_counters a, b;
    mroce_dp_get_counters(f->s[0].dp, &a);
    mroce_dp_get_counters(f->s[1].dp, &b);
    assert_true(a.imp_lost > 0 && b.imp_lost > 0);
    assert_true(a.imp_dup > 0 && a.imp_reordered > 0);
    struct mroce_conn_counters cc;
    mroce_conn_get_counters(f->c[0], &cc);
    assert_true(cc.retx_pkts > 0);
}

/* Runs (R-PATH-17, spray_run 15): every operation byte for byte, clean and
 * under loss, reordering and duplicates; a run's packets leave as GSO
 * messages of several packets. */
static void test_runs(void **state)
{
    (void)state;
    struct opts o = {.ip = "127.0.0.1", .n_paths = 8, .n_streams = 2};
    o.tx_run = 15;
    o.mem = 8 * MIB;
    struct fix *f = fix_new(&o);
    all_ops(f);
    many_ops(f, 2, 8, 256 * KIB);
    struct mroce_dp_counters a;
    mroce_dp_get_counters(f->s[0].dp, &a);
    assert_true(a.gso_sends > 0);
    assert_int_equal(a.gso_fallback, 0);
    teardown(NULL);
    o.imp.loss = 0.05;
    o.imp.reorder = 0.05;
    o.imp.reorder_ns = 200000;
    o.imp.duplicate = 0.02;
    o.imp.seed = 11;
    f = fix_new(&o);
    many_ops(f, 2, 5, 128 * KIB);
    all_ops(f);
    struct mroce_conn_counters cc;
    mroce_conn_get_counters(f->c[0], &cc);
    assert_true(cc.retx_pkts > 0);
}

/* A peer that disappears: the survivor's work requests complete with an
 * error within the configured timeout (R-RETRY: retry_cnt rounds). */
static void test_killed_peer(void **state)
{
    (void)state;
    struct opts o = {.ip = "127.0.0.1", .n_paths = 4};
    o.conn.min_rto_ns = 1 * MS;
    o.conn.max_rto_ns = 8 * MS;
    o.conn.retry_cnt = 2;
    struct fix *f = fix_new(&o);
    one_op(f, OP_WRITE, 1, 0, 64 * KIB);
    for (uint64_t id = 10; id < 14; id++)
        post_op(f, OP_WRITE, id, 0, (size_t)(id - 10) * 512 * KIB, 512 * KIB);
    for (int i = 0; i < 3; i++)
        pump(f);
    mroce_dp_destroy(f->s[1].dp);
    f->s[1].dp = NULL;
    uint64_t t0 = now_ns();
    for (uint64_t id = 10; id < 14; id++) {
        struct mroce_wc wc = wait_wc(f, 0, id, 5000);
        if (wc.status == MROCE_WC_SUCCESS)
            continue; /* finished before the peer went */
        assert_true(wc.status == MROCE_WC_RETRY_EXC_ERR ||
                    wc.status == MROCE_WC_WR_FLUSH_ERR);
    }
    assert_int_equal(mroce_conn_state(f->c[0]), MROCE_CONN_ERROR);
    assert_true(now_ns() - t0 < 3000 * MS);
}

/* ---- hostile datagrams ---- */

static int udp_sock(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    socklen_t l = sizeof(sa);
    getsockname(fd, (struct sockaddr *)&sa, &l);
    *port = ntohs(sa.sin_port);
    struct timeval tv = {.tv_usec = 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

/* A victim connection on side 1 whose peer on side 0 sends to the
 * sniffer: returns the first data packet the engine emitted. */
static size_t capture(struct fix *f, const struct opts *o, int sniff,
                      uint16_t sniff_port, uint8_t *buf, size_t cap,
                      struct mroce_conn **victim)
{
    struct mroce_conn *a = conn_new(&f->s[0], o);
    struct mroce_conn *v = conn_new(&f->s[1], o);
    *victim = v;
    conn_pair(a, v, sniff_port);
    struct mroce_send_wr w = swr(&f->s[0], 777, 0, 0, 64);
    w.remote_addr = (uint64_t)(uintptr_t)(f->s[1].mem + f->s[1].len - 4096);
    w.rkey = mroce_mr_rkey(f->s[1].mr);
    assert_int_equal(mroce_post_write(a, &w), 0);
    struct mroce_conn_params pv;
    mroce_conn_get_params(v, &pv);
    uint64_t end = now_ns() + 2000 * MS;
    for (;;) {
        pump(f);
        ssize_t n = recv(sniff, buf, cap, MSG_DONTWAIT);
        struct mroce_hdr h;
        /* earlier victims' peers still retransmit to the sniffer */
        if (n > 0 && mroce_wire_decode(buf, (size_t)n, &h) == 0 &&
            h.opcode == MROCE_OP_WRITE && h.conn == pv.conn_id)
            return (size_t)n;
        assert_true(now_ns() < end);
    }
}

static void send_to(int fd, uint16_t port, const uint8_t *buf, size_t len,
                    int tos)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
    assert_int_equal(
        sendto(fd, buf, len, 0, (struct sockaddr *)&sa, sizeof(sa)),
        (ssize_t)len);
}

static size_t reencode(const uint8_t *in, size_t len, uint8_t *out,
                       void (*mut)(struct mroce_hdr *, void *), void *arg)
{
    struct mroce_hdr h;
    assert_int_equal(mroce_wire_decode(in, len, &h), 0);
    mut(&h, arg);
    int n = mroce_wire_encode(&h, h.payload, h.payload_len, out, 16384);
    assert_true(n > 0);
    return (size_t)n;
}

static void mut_key(struct mroce_hdr *h, void *arg)
{
    (void)arg;
    h->rkey ^= 0x5A5A5A5Au;
}

static void mut_va(struct mroce_hdr *h, void *arg)
{
    h->va = *(const uint64_t *)arg;
}

/* Pumps until side 1 has seen every datagram sent so far. */
static void settle(struct fix *f, uint64_t rx_before, uint64_t sent)
{
    uint64_t end = now_ns() + 2000 * MS;
    struct mroce_dp_counters c;
    do {
        pump(f);
        mroce_dp_get_counters(f->s[1].dp, &c);
        assert_true(now_ns() < end);
    } while (c.rx_pkts < rx_before + sent);
}

static struct mroce_conn_counters conn_cnt(const struct mroce_conn *c)
{
    struct mroce_conn_counters cc;
    mroce_conn_get_counters(c, &cc);
    return cc;
}

static void test_bad_packets(void **state)
{
    (void)state;
    struct opts o = {.ip = "127.0.0.1", .n_paths = 4};
    o.mem = 16 * MIB;
    struct fix *f = fix_new(&o);
    /* a transfer in progress on the main connection */
    for (uint64_t id = 1; id <= 8; id++) {
        int op = id % 2 ? OP_WRITE : OP_SEND;
        prep_op(f, op, (size_t)(id - 1) * MIB, MIB, (uint32_t)id);
        post_op(f, op, id, 0, (size_t)(id - 1) * MIB, MIB);
    }
    uint16_t sp;
    int sn = udp_sock(&sp);
    uint8_t good[16384], bad[16384];
    struct mroce_conn *v1, *v2;
    size_t n1 = capture(f, &o, sn, sp, good, sizeof(good), &v1);
    struct mroce_conn_params par;
    mroce_conn_get_params(f->c[1], &par);
    uint16_t port = par.udp_port;

    struct mroce_ctx_counters x0, x1;
    struct mroce_dp_counters d0;
    mroce_ctx_get_counters(f->s[1].ctx, &x0);
    mroce_dp_get_counters(f->s[1].dp, &d0);
    /* truncated, bad CRC, unknown connection: silent drops (R-RX-1) */
    send_to(sn, port, good, 20, 0);
    memcpy(bad, good, n1);
    bad[n1 - 10] ^= 0x40;
    send_to(sn, port, bad, n1, 0);
    memcpy(bad, good, n1);
    bad[4] ^= 0xFF;
    send_to(sn, port, bad, mroce_wire_seal(bad, n1 - MROCE_ICRC_LEN),
            0xFC | MROCE_ECN_CE);
    send_to(sn, port, bad, 0, 0); /* an empty datagram */
    settle(f, d0.rx_pkts, 4);
    mroce_ctx_get_counters(f->s[1].ctx, &x1);
    assert_int_equal(x1.drop_truncated, x0.drop_truncated + 2);
    assert_int_equal(x1.drop_bad_crc, x0.drop_bad_crc + 1);
    assert_int_equal(x1.drop_unknown_conn, x0.drop_unknown_conn + 1);
    struct mroce_dp_counters d1;
    mroce_dp_get_counters(f->s[1].dp, &d1);
    assert_true(d1.rx_ce >= d0.rx_ce + 1); /* the CE mark reached us */

    /* wrong key and out-of-bounds address: each kills the connection it
     * names (a REMOTE_ACCESS NACK, R-SEC), so each gets a victim of its
     * own; the transfer on the main connection goes on. */
    mroce_dp_get_counters(f->s[1].dp, &d0);
    size_t nb = reencode(good, n1, bad, mut_key, NULL);
    send_to(sn, port, bad, nb, 0);
    settle(f, d0.rx_pkts, 1);
    assert_int_equal(conn_cnt(v1).drop_bad_key, 1);
    uint64_t va = (uint64_t)(uintptr_t)f->s[1].mem + f->s[1].len;
    size_t n2 = capture(f, &o, sn, sp, good, sizeof(good), &v2);
    mroce_dp_get_counters(f->s[1].dp, &d0);
    nb = reencode(good, n2, bad, mut_va, &va);
    send_to(sn, port, bad, nb, 0);
    settle(f, d0.rx_pkts, 1);
    assert_int_equal(conn_cnt(v2).drop_bad_bounds, 1);
    struct mroce_conn_counters m = conn_cnt(f->c[1]);
    assert_int_equal(m.drop_bad_key + m.drop_bad_bounds, 0);
    close(sn);
    for (uint64_t id = 1; id <= 8; id++)
        check_op(f, id % 2 ? OP_WRITE : OP_SEND, id, (size_t)(id - 1) * MIB,
                 MIB, 20000);
    assert_int_equal(mroce_conn_state(f->c[0]), MROCE_CONN_CONNECTED);
    assert_int_equal(mroce_conn_state(f->c[1]), MROCE_CONN_CONNECTED);
}

/* Pacing: 4 MiB at 200 Mbit/s takes 168 ms, less the bucket's depth (16
 * packets): at least 150 ms. The bound is one-sided so a loaded machine
 * cannot make it flaky. */
static void test_pacing(void **state)
{
    (void)state;
    struct opts o = {.ip = "127.0.0.1", .n_paths = 4};
    o.pace_bps = 200000000ull;
    o.mem = 8 * MIB;
    struct fix *f = fix_new(&o);
    uint64_t t0 = now_ns();
    prep_op(f, OP_WRITE, 0, 4 * MIB, 1);
    post_op(f, OP_WRITE, 1, 0, 0, 4 * MIB);
    check_op(f, OP_WRITE, 1, 0, 4 * MIB, 10000);
    uint64_t bits = (uint64_t)4 * MIB * 8;
    assert_true(now_ns() - t0 >= bits * 900000000ull / o.pace_bps);
    struct mroce_dp_counters a;
    mroce_dp_get_counters(f->s[0].dp, &a);
    assert_true(a.pace_waits > 0);
}

/* The polling thread: the application posts under the lock. */
static void test_thread(void **state)
{
    (void)state;
    struct opts o = {.ip = "127.0.0.1", .n_paths = 8};
    struct fix *f = fix_new(&o);
    for (int i = 0; i < 2; i++)
        assert_int_equal(mroce_dp_thread_start(f->s[i].dp), 0);
    for (uint64_t id = 1; id <= 20; id++) {
        size_t off = (size_t)(id % 4) * MIB;
        int op = (int)(id % N_OP);
        mroce_dp_lock(f->s[0].dp);
        mroce_dp_lock(f->s[1].dp);
        prep_op(f, op, off, 300 * KIB, (uint32_t)id);
        post_op(f, op, id, 0, off, 300 * KIB);
        mroce_dp_unlock(f->s[1].dp);
        mroce_dp_unlock(f->s[0].dp);
        int need = op == OP_WRITE || op == OP_READ ? 1 : 2;
        uint64_t end = now_ns() + 10000 * MS;
        int got = 0;
        while (got < need) {
            assert_true(now_ns() < end);
            for (int i = 0; i < 2; i++) {
                struct mroce_wc wc;
                mroce_dp_lock(f->s[i].dp);
                int n = mroce_poll_cq(f->s[i].cq, 1, &wc);
                mroce_dp_unlock(f->s[i].dp);
                if (n == 1) {
                    assert_int_equal(wc.status, MROCE_WC_SUCCESS);
                    got++;
                }
            }
            usleep(50);
        }
        assert_memory_equal(f->s[0].mem + off, f->s[1].mem + off, 300 * KIB);
    }
    for (int i = 0; i < 2; i++)
        mroce_dp_thread_stop(f->s[i].dp);
}

static void test_create_errors(void **state)
{
    (void)state;
    struct mroce_dp *dp;
    struct mroce_dp_attr a;
    memset(&a, 0, sizeof(a));
    a.kind = MROCE_DP_UDP;
    assert_int_equal(mroce_dp_create(&a, &dp), MROCE_EINVAL); /* no ip */
    assert_null(dp);
    a.local_ip = "not an address";
    assert_int_equal(mroce_dp_create(&a, &dp), MROCE_EINVAL);
    struct mroce_addr ad;
    assert_int_equal(mroce_addr_parse("::1", &ad), 0);
    assert_int_equal(ad.family, MROCE_AF_INET6);
    assert_int_equal(ad.ip[15], 1);
    assert_int_equal(mroce_addr_parse("10.1.2.3", &ad), 0);
    assert_int_equal(ad.family, MROCE_AF_INET);
    assert_int_equal(ad.ip[3], 3);
    assert_int_equal(mroce_addr_parse("10.1.2", &ad), MROCE_EINVAL);
    assert_int_equal(ad.family, MROCE_AF_NONE);
    assert_int_equal(mroce_addr_parse(NULL, &ad), MROCE_EINVAL);
    a.local_ip = "192.0.2.77"; /* TEST-NET-1: not ours */
    assert_int_equal(mroce_dp_create(&a, &dp), MROCE_EINVAL);
    a.local_ip = "127.0.0.1";
    a.ctx.transport = MROCE_TRANSPORT_ROCEV2; /* simulator only */
    assert_int_equal(mroce_dp_create(&a, &dp), MROCE_EINVAL);
    a.ctx.transport = MROCE_TRANSPORT_METAROCE;
    a.kind = 99;
    assert_int_equal(mroce_dp_create(&a, &dp), MROCE_EINVAL);
    a.kind = MROCE_DP_UDP;
    a.ctx.spray_run = MROCE_MAX_SPRAY_RUN + 1; /* R-PATH-17 */
    assert_int_equal(mroce_dp_create(&a, &dp), MROCE_EINVAL);
    a.ctx.spray_run = 0;
    /* a port in use */
    struct opts o = {.ip = "127.0.0.1"};
    struct side s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(side_open(&s, &o, 0), 0);
    struct mroce_conn_params p;
    memset(&p, 0, sizeof(p));
    a.kind = MROCE_DP_UDP;
    a.port = 0;
    struct mroce_dp *dp2;
    struct mroce_conn *dummy = conn_new(&s, &o);
    mroce_conn_get_params(dummy, &p);
    a.port = p.udp_port;
    assert_int_equal(mroce_dp_create(&a, &dp2), MROCE_ESTATE);
    mroce_dp_destroy(s.dp);
    free(s.mem);
}

/* ---- short GSO tails (udp_tx.c) ---- */

#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#define HOLD_PORTS 2  /* a step's messages fit a default receive buffer */
#define HOLD_LEN 4100 /* 15 fit in a 64 KiB GSO message, 16 do not */

struct hold_rx {
    int fd;
    uint16_t port;
    const struct mroce_dp *dp;
    uint32_t next[HOLD_PORTS]; /* next sequence number per source port */
    uint32_t msgs, pkts;
};

/* Zero copy: even packets refer to their payload in hold_mem (as the
 * engine's memory region), odd ones carry it in buf. A burst's packets
 * use distinct slices; the test overwrites them after each tx_burst, as
 * the engine may once it runs again, so a packet held for the next burst
 * must have been flattened. */
#define HOLD_HDR 16
#define HOLD_PAY (HOLD_LEN - HOLD_HDR - 4)
static uint8_t hold_mem[HOLD_PORTS * 16][HOLD_PAY];

static uint8_t hold_byte(uint32_t seq, int p)
{
    return (uint8_t)(seq * 7 + (uint32_t)p * 3 + 1);
}

/* Packet `seq` of source port index p: its numbers in the first bytes,
 * hold_byte in its payload and ~hold_byte in its 4-byte trailer. */
static void hold_pkt(struct mroce_dp *dp, struct mroce_dp_pkt *pk,
                     uint16_t rx_port, int p, uint32_t seq, int slot)
{
    assert_int_equal(dp->ops->tx_alloc(dp, pk, 1, HOLD_LEN), 1);
    uint8_t b = hold_byte(seq, p);
    memset(pk->buf, 0, HOLD_HDR);
    memset(pk->buf + HOLD_HDR, b, HOLD_PAY);
    memset(pk->buf + HOLD_LEN - 4, (uint8_t)~b, 4);
    memcpy(pk->buf, &seq, sizeof(seq));
    pk->buf[4] = (uint8_t)p;
    pk->len = HOLD_LEN;
    if (seq % 2 == 0) {
        memset(pk->buf + HOLD_HDR, 0, HOLD_PAY); /* the hole */
        memset(hold_mem[slot], b, HOLD_PAY);
        pk->pay = hold_mem[slot];
        pk->hdr_len = HOLD_HDR;
        pk->pay_len = HOLD_PAY;
    }
    assert_int_equal(mroce_addr_parse("127.0.0.1", &pk->meta.dst), 0);
    pk->meta.dst_port = rx_port;
    pk->meta.src_port = dp->src_ports[p];
}

/* The packet at q: payload and trailer as hold_pkt wrote them. */
static void hold_check(const uint8_t *q, uint32_t seq, int p)
{
    uint8_t b = hold_byte(seq, p);
    for (int i = 0; i < HOLD_PAY; i++)
        if (q[HOLD_HDR + i] != b)
            fail_msg("seq %u port %d: payload byte %d is %#x, not %#x", seq, p,
                     i, q[HOLD_HDR + i], b);
    for (int i = 0; i < 4; i++)
        assert_int_equal(q[HOLD_LEN - 4 + i], (uint8_t)~b);
}

/* One GRO buffer: counts the message, checks each packet's order. */
static int hold_recv_one(struct hold_rx *r)
{
    static uint8_t buf[65536];
    uint8_t ctl[64];
    struct iovec iov = {buf, sizeof(buf)};
    struct msghdr m = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = ctl,
                       .msg_controllen = sizeof(ctl)};
    ssize_t n = recvmsg(r->fd, &m, MSG_DONTWAIT);
    if (n <= 0)
        return 0;
    int seg = (int)n;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO)
            memcpy(&seg, CMSG_DATA(c), sizeof(seg));
    assert_int_equal(seg, HOLD_LEN);
    for (ssize_t off = 0; off < n; off += seg) {
        uint32_t seq;
        memcpy(&seq, buf + off, sizeof(seq));
        int p = buf[off + 4];
        assert_true(p < HOLD_PORTS);
        assert_int_equal(seq, r->next[p]++); /* a path keeps its order */
        hold_check(buf + off, seq, p);
        r->pkts++;
    }
    r->msgs++;
    return 1;
}

/* Receives until `pkts` more packets arrived; returns their messages. */
static uint32_t hold_recv(struct hold_rx *r, uint32_t pkts)
{
    uint32_t m0 = r->msgs, want = r->pkts + pkts;
    uint64_t end = now_ns() + 2000 * MS;
    while (r->pkts < want) {
        hold_recv_one(r);
        assert_true(now_ns() < end);
    }
    usleep(2000);
    assert_int_equal(hold_recv_one(r), 0); /* nothing beyond */
    return r->msgs - m0;
}

/* Sends per_port packets on each of the first `ports` source ports,
 * round robin as the engine sprays, with tx_more as given. */
static int hold_burst(struct mroce_dp *dp, struct hold_rx *r, int ports,
                      int per_port, bool more, uint32_t *seq)
{
    struct mroce_dp_pkt pk[HOLD_PORTS * 16];
    int n = 0;
    for (int k = 0; k < per_port; k++)
        for (int p = 0; p < ports; p++, n++)
            hold_pkt(dp, &pk[n], r->port, p, seq[p]++, n);
    dp->tx_more = more;
    int rc = dp->ops->tx_burst(dp, pk, n);
    dp->tx_more = false;
    memset(hold_mem, 0xEE, sizeof(hold_mem)); /* the region moves on */
    return rc;
}

/* A datapath on 127.0.0.1 and a plain GRO socket to receive from it. */
static void hold_open(struct side *s, struct hold_rx *r)
{
    struct opts o = {.ip = "127.0.0.1"};
    memset(s, 0, sizeof(*s));
    assert_int_equal(side_open(s, &o, 0), 0);
    *r = (struct hold_rx){.dp = s->dp};
    r->fd = udp_sock(&r->port);
    int one = 1;
    assert_int_equal(setsockopt(r->fd, IPPROTO_UDP, UDP_GRO, &one, 4), 0);
}

static void hold_close(struct side *s, struct hold_rx *r)
{
    close(r->fd);
    mroce_dp_destroy(s->dp);
    free(s->mem);
}

/* While the loop says more follows, each socket's short last GSO message
 * (at most UDP_HOLD_MAX) waits for the next burst, once at most;
 * per-path order holds. Packets
 * whose payload is referenced (zero copy) and whole ones mix in one GSO
 * message and arrive intact, a held one too. */
static void test_tail_hold(void **state)
{
    (void)state;
    struct side s;
    struct hold_rx r;
    hold_open(&s, &r);
    uint32_t seq[HOLD_PORTS] = {0};
    /* 16 a socket: a message of 15 leaves, the 16th waits */
    assert_int_equal(hold_burst(s.dp, &r, HOLD_PORTS, 16, true, seq),
                     16 * HOLD_PORTS);
    assert_int_equal(s.dp->tx_held, HOLD_PORTS);
    assert_int_equal(hold_recv(&r, 15 * HOLD_PORTS), HOLD_PORTS);
    /* 14 more: with the held one, full messages; nothing waits */
    hold_burst(s.dp, &r, HOLD_PORTS, 14, true, seq);
    assert_int_equal(s.dp->tx_held, 0);
    assert_int_equal(hold_recv(&r, 15 * HOLD_PORTS), HOLD_PORTS);
    /* 1 a socket waits; a burst with nothing new for them sends them:
     * a packet never waits twice */
    hold_burst(s.dp, &r, HOLD_PORTS, 1, true, seq);
    assert_int_equal(s.dp->tx_held, HOLD_PORTS);
    hold_burst(s.dp, &r, 0, 0, true, seq);
    assert_int_equal(s.dp->tx_held, 0);
    assert_int_equal(hold_recv(&r, HOLD_PORTS), HOLD_PORTS);
    /* without tx_more everything leaves */
    hold_burst(s.dp, &r, HOLD_PORTS, 3, false, seq);
    assert_int_equal(s.dp->tx_held, 0);
    assert_int_equal(hold_recv(&r, 3 * HOLD_PORTS), HOLD_PORTS);
    /* a tail longer than UDP_HOLD_MAX leaves at once, one that long waits */
    hold_burst(s.dp, &r, HOLD_PORTS, UDP_HOLD_MAX + 1, true, seq);
    assert_int_equal(s.dp->tx_held, 0);
    assert_int_equal(hold_recv(&r, (UDP_HOLD_MAX + 1) * HOLD_PORTS),
                     HOLD_PORTS);
    hold_burst(s.dp, &r, HOLD_PORTS, UDP_HOLD_MAX, true, seq);
    assert_int_equal(s.dp->tx_held, UDP_HOLD_MAX * HOLD_PORTS);
    hold_burst(s.dp, &r, 0, 0, false, seq);
    assert_int_equal(hold_recv(&r, UDP_HOLD_MAX * HOLD_PORTS), HOLD_PORTS);
    hold_close(&s, &r);
}

/* A GSO message the kernel refuses (SO_NO_CHECK forbids GSO) goes out
 * packet by packet: each of its packets' iovecs, zero-copy ones too, make
 * one datagram; GSO stays off. */
static void test_gso_refused(void **state)
{
    (void)state;
    struct side s;
    struct hold_rx r;
    hold_open(&s, &r);
    struct udp_dp *u = s.dp->priv;
    int one = 1;
    for (uint32_t i = 0; i < u->n_tx; i++)
        assert_int_equal(
            setsockopt(u->tx_fd[i], SOL_SOCKET, SO_NO_CHECK, &one, 4), 0);
    uint32_t seq[HOLD_PORTS] = {0};
    assert_int_equal(hold_burst(s.dp, &r, HOLD_PORTS, 5, false, seq),
                     5 * HOLD_PORTS);
    assert_int_equal(hold_recv(&r, 5 * HOLD_PORTS), 5 * HOLD_PORTS);
    struct mroce_dp_counters c;
    mroce_dp_get_counters(s.dp, &c);
    assert_int_equal(c.gso_fallback, 1);
    assert_int_equal(c.tx_dropped, 0);
    hold_close(&s, &r);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char m[] = "udp_dp_test: wall-clock guard expired\n";
    ssize_t r = write(2, m, sizeof(m) - 1);
    (void)r;
    _exit(1);
}

int main(void)
{
    signal(SIGALRM, on_alarm);
    alarm(240);
    srand((unsigned)(now_ns() ^ (uint64_t)getpid()));
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_teardown(f, teardown)
        T(test_create_errors), T(test_ops_v4),      T(test_ops_no_offload),
        T(test_gso_only),      T(test_ops_v6),      T(test_many_paths_streams),
        T(test_impaired),      T(test_killed_peer), T(test_bad_packets),
        T(test_pacing),        T(test_thread),      T(test_tail_hold),
        T(test_gso_refused),   T(test_runs),        T(test_ops_halves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
