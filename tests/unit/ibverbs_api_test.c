/* The drop-in libibverbs (build/lib/libibverbs.so.1) from a program
 * written against plain <infiniband/verbs.h>, as any verbs user writes
 * one: two processes (this one and a forked peer, each with its own soft
 * NIC) connected over an RC QP from what they exchange on a socketpair
 * (QPN, PSN, LID, GID, rkey, address). It checks every operation's data
 * byte for byte (also at 1% loss in the UDP impairment layer), the error
 * completions (wrong rkey, a WRITE past the region, a local key out of
 * range, a killed peer), misuse and unsupported requests (EINVAL,
 * EOPNOTSUPP), completion channels and the async event of a failed QP.
 * The peer serves one-sided operations while it blocks on the socket.
 * Every wait is bounded; an alarm bounds the program. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BUF_LEN (4u << 20)
#define POLL_MS 20000
#define ALL_ACCESS                                                             \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

/* ---- one endpoint ---- */

struct ep {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_comp_channel *ch;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    uint8_t *buf;
    uint32_t psn;
};

/* What verbs programs exchange out of band. */
struct info {
    uint32_t qpn, psn, rkey;
    uint16_t lid;
    uint8_t gid[16];
    uint64_t addr;
};

static uint8_t pat(uint64_t i, uint32_t seed)
{
    return (uint8_t)(i * 131 + seed * 7 + (i >> 9));
}

static void fill(uint8_t *p, uint64_t len, uint32_t seed)
{
    for (uint64_t i = 0; i < len; i++)
        p[i] = pat(i, seed);
}

/* First byte that differs, or -1. */
static int64_t check(const uint8_t *p, uint64_t len, uint32_t seed)
{
    for (uint64_t i = 0; i < len; i++)
        if (p[i] != pat(i, seed))
            return (int64_t)i;
    return -1;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int ep_open(struct ep *e, bool channel)
{
    memset(e, 0, sizeof(*e));
    struct ibv_device **l = ibv_get_device_list(NULL);
    if (!l || !l[0])
        return -1;
    e->ctx = ibv_open_device(l[0]);
    ibv_free_device_list(l);
    if (!e->ctx)
        return -1;
    e->pd = ibv_alloc_pd(e->ctx);
    e->ch = channel ? ibv_create_comp_channel(e->ctx) : NULL;
    e->cq = ibv_create_cq(e->ctx, 256, e, e->ch, 0);
    if (posix_memalign((void **)&e->buf, 4096, BUF_LEN))
        return -1;
    memset(e->buf, 0, BUF_LEN);
    e->mr = ibv_reg_mr(e->pd, e->buf, BUF_LEN, ALL_ACCESS);
    return e->pd && e->cq && e->mr ? 0 : -1;
}

static struct ibv_qp *ep_new_qp(struct ep *e)
{
    struct ibv_qp_init_attr a = {.send_cq = e->cq,
                                 .recv_cq = e->cq,
                                 .cap = {.max_send_wr = 64,
                                         .max_recv_wr = 64,
                                         .max_send_sge = 1,
                                         .max_recv_sge = 1,
                                         .max_inline_data = 64},
                                 .qp_type = IBV_QPT_RC,
                                 .sq_sig_all = 1};
    return ibv_create_qp(e->pd, &a);
}

static int ep_init(struct ep *e)
{
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = ALL_ACCESS};
    return ibv_modify_qp(e->qp, &a,
                         IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                             IBV_QP_ACCESS_FLAGS);
}

static int ep_qp(struct ep *e)
{
    if (e->qp)
        ibv_destroy_qp(e->qp);
    e->qp = ep_new_qp(e);
    e->psn = (uint32_t)lrand48() & 0xFFFFFF;
    return e->qp ? ep_init(e) : -1;
}

static void ep_info(struct ep *e, struct info *i)
{
    struct ibv_port_attr pa;
    union ibv_gid gid;
    ibv_query_port(e->ctx, 1, &pa);
    ibv_query_gid(e->ctx, 1, 0, &gid);
    *i = (struct info){.qpn = e->qp->qp_num,
                       .psn = e->psn,
                       .rkey = e->mr->rkey,
                       .lid = pa.lid,
                       .addr = (uint64_t)(uintptr_t)e->buf};
    memcpy(i->gid, gid.raw, 16);
}

static int ep_rtr_attr(struct ep *e, const struct info *r, bool global,
                       struct ibv_qp_attr *a)
{
    (void)e;
    *a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR,
                              .path_mtu = IBV_MTU_4096,
                              .dest_qp_num = r->qpn,
                              .rq_psn = r->psn,
                              .max_dest_rd_atomic = 16,
                              .min_rnr_timer = 12,
                              .ah_attr = {.dlid = r->lid, .port_num = 1}};
    if (global) {
        a->ah_attr.is_global = 1;
        memcpy(a->ah_attr.grh.dgid.raw, r->gid, 16);
        a->ah_attr.grh.hop_limit = 1;
    }
    return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
           IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
}

static int ep_connect(struct ep *e, const struct info *r, bool global)
{
    struct ibv_qp_attr a;
    int mask = ep_rtr_attr(e, r, global, &a);
    int rc = ibv_modify_qp(e->qp, &a, mask);
    if (rc)
        return rc;
    a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS,
                             .timeout = 14,
                             .retry_cnt = 7,
                             .rnr_retry = 7,
                             .sq_psn = e->psn,
                             .max_rd_atomic = 16};
    return ibv_modify_qp(e->qp, &a,
                         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                             IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                             IBV_QP_MAX_QP_RD_ATOMIC);
}

/* One completion within POLL_MS; wc->status is IBV_WC_GENERAL_ERR with
 * vendor_err 0xDEAD on timeout. */
static void ep_poll(struct ep *e, struct ibv_wc *wc)
{
    uint64_t end = now_ms() + POLL_MS;
    while (now_ms() < end)
        if (ibv_poll_cq(e->cq, 1, wc) == 1)
            return;
    *wc = (struct ibv_wc){.status = IBV_WC_GENERAL_ERR, .vendor_err = 0xDEAD};
}

static void ep_close(struct ep *e)
{
    if (e->qp)
        ibv_destroy_qp(e->qp);
    if (e->mr)
        ibv_dereg_mr(e->mr);
    if (e->cq)
        ibv_destroy_cq(e->cq);
    if (e->ch)
        ibv_destroy_comp_channel(e->ch);
    if (e->pd)
        ibv_dealloc_pd(e->pd);
    if (e->ctx)
        ibv_close_device(e->ctx);
    free(e->buf);
    memset(e, 0, sizeof(*e));
}

static int post_send(struct ep *e, enum ibv_wr_opcode op, uint64_t off,
                     uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t imm)
{
    struct ibv_sge sg = {.addr = (uint64_t)(uintptr_t)e->buf + off,
                         .length = len,
                         .lkey = e->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = off,
                             .sg_list = &sg,
                             .num_sge = 1,
                             .opcode = op,
                             .send_flags = IBV_SEND_SIGNALED,
                             .imm_data = imm,
                             .wr.rdma = {.remote_addr = raddr, .rkey = rkey}},
                       *bad;
    return ibv_post_send(e->qp, &wr, &bad);
}

static int post_recv(struct ep *e, uint64_t off, uint32_t len)
{
    struct ibv_sge sg = {.addr = (uint64_t)(uintptr_t)e->buf + off,
                         .length = len,
                         .lkey = e->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = off, .sg_list = &sg, .num_sge = 1}, *bad;
    return ibv_post_recv(e->qp, &wr, &bad);
}

/* ---- the peer: a process serving commands on a socket ---- */

enum { C_QP, C_FILL, C_CHECK, C_RECV, C_WAIT, C_SEND, C_EXIT };

struct cmd {
    int op;
    uint64_t off;
    uint32_t len, seed, imm;
    struct info info;
};

struct reply {
    int64_t v;
    struct info info;
    struct ibv_wc wc;
};

static void xsend(int fd, const void *p, size_t n)
{
    if (write(fd, p, n) != (ssize_t)n)
        _exit(3);
}

static int xrecv(int fd, void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, (char *)p + got, n - got);
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    return 0;
}

static void peer_do(struct ep *e, const struct cmd *c, struct reply *r)
{
    switch (c->op) {
    case C_QP:
        r->v = ep_qp(e);
        ep_info(e, &r->info);
        if (!r->v)
            r->v = ep_connect(e, &c->info, c->seed != 0);
        break;
    case C_FILL:
        fill(e->buf + c->off, c->len, c->seed);
        break;
    case C_CHECK:
        r->v = check(e->buf + c->off, c->len, c->seed);
        break;
    case C_RECV:
        r->v = post_recv(e, c->off, c->len);
        break;
    case C_WAIT:
        ep_poll(e, &r->wc);
        break;
    case C_SEND:
        fill(e->buf + c->off, c->len, c->seed);
        r->v = post_send(e, IBV_WR_SEND, c->off, c->len, 0, 0, 0);
        ep_poll(e, &r->wc);
        break;
    }
}

static void peer_main(int fd)
{
    struct ep e;
    if (ep_open(&e, false))
        _exit(2);
    struct cmd c;
    while (xrecv(fd, &c, sizeof(c)) == 0 && c.op != C_EXIT) {
        struct reply r = {0};
        peer_do(&e, &c, &r);
        xsend(fd, &r, sizeof(r));
    }
    ep_close(&e);
    _exit(0);
}

/* ---- the test side ---- */

struct fix {
    struct ep e;
    int fd;
    pid_t peer;
    struct info remote;
};

static struct reply fix_cmd(struct fix *f, struct cmd c)
{
    struct reply r;
    xsend(f->fd, &c, sizeof(c));
    assert_int_equal(xrecv(f->fd, &r, sizeof(r)), 0);
    return r;
}

/* A fresh QP pair: ours in INIT, the peer's made with our info, then ours
 * connected with its. `global`: the address vectors carry the GID. */
static void fix_pair(struct fix *f, bool global)
{
    assert_int_equal(ep_qp(&f->e), 0);
    struct cmd c = {.op = C_QP, .seed = global};
    ep_info(&f->e, &c.info);
    struct reply r = fix_cmd(f, c);
    assert_int_equal(r.v, 0);
    f->remote = r.info;
    assert_int_equal(ep_connect(&f->e, &f->remote, global), 0);
}

static int fix_setup(void **state)
{
    struct fix *f = calloc(1, sizeof(*f));
    int sv[2];
    if (!f || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
        return -1;
    f->peer = fork();
    if (f->peer == 0) {
        close(sv[0]);
        peer_main(sv[1]);
    }
    close(sv[1]);
    f->fd = sv[0];
    if (ep_open(&f->e, true))
        return -1;
    fix_pair(f, true);
    *state = f;
    return 0;
}

static int fix_teardown(void **state)
{
    struct fix *f = *state;
    struct cmd c = {.op = C_EXIT};
    if (f->peer > 0) {
        if (write(f->fd, &c, sizeof(c)) != sizeof(c))
            kill(f->peer, SIGKILL);
        int st;
        waitpid(f->peer, &st, 0);
    }
    close(f->fd);
    ep_close(&f->e);
    free(f);
    return 0;
}

static const uint32_t sizes[] = {
    0, 1, 7, 4095, 4096, 4097, 65536, (1u << 20) + 13, 3u << 20};

static void expect_ok(const struct ibv_wc *wc, enum ibv_wc_opcode op)
{
    assert_int_equal(wc->vendor_err, 0);
    assert_int_equal(wc->status, IBV_WC_SUCCESS);
    assert_int_equal(wc->opcode, op);
}

static void do_write(struct fix *f, uint32_t len, uint32_t seed)
{
    struct ibv_wc wc;
    fill(f->e.buf, len, seed);
    uint64_t roff = 4096 + (seed % 13);
    assert_int_equal(post_send(&f->e, IBV_WR_RDMA_WRITE, 0, len,
                               f->remote.addr + roff, f->remote.rkey, 0),
                     0);
    ep_poll(&f->e, &wc);
    expect_ok(&wc, IBV_WC_RDMA_WRITE);
    struct reply r = fix_cmd(
        f, (struct cmd){.op = C_CHECK, .off = roff, .len = len, .seed = seed});
    assert_int_equal(r.v, -1);
}

static void do_read(struct fix *f, uint32_t len, uint32_t seed)
{
    struct ibv_wc wc;
    uint64_t roff = 8192 + (seed % 11);
    fix_cmd(f,
            (struct cmd){.op = C_FILL, .off = roff, .len = len, .seed = seed});
    memset(f->e.buf, 0, len + 64);
    assert_int_equal(post_send(&f->e, IBV_WR_RDMA_READ, 0, len,
                               f->remote.addr + roff, f->remote.rkey, 0),
                     0);
    ep_poll(&f->e, &wc);
    expect_ok(&wc, IBV_WC_RDMA_READ);
    assert_int_equal(check(f->e.buf, len, seed), -1);
    for (uint32_t i = 0; i < 64; i++)
        assert_int_equal(f->e.buf[len + i], 0); /* nothing past the end */
}

/* SEND / SEND_IMM / WRITE_IMM into a receive the peer posted. */
static void do_to_recv(struct fix *f, enum ibv_wr_opcode op, uint32_t len,
                       uint32_t seed)
{
    struct ibv_wc wc;
    uint64_t roff = 16384;
    uint32_t imm = htonl(0xC0DE0000u | seed);
    assert_int_equal(
        fix_cmd(f, (struct cmd){.op = C_RECV, .off = roff, .len = len + 100}).v,
        0);
    fill(f->e.buf, len, seed);
    uint64_t raddr =
        op == IBV_WR_RDMA_WRITE_WITH_IMM ? f->remote.addr + roff : 0;
    assert_int_equal(post_send(&f->e, op, 0, len, raddr, f->remote.rkey, imm),
                     0);
    ep_poll(&f->e, &wc);
    expect_ok(&wc, op == IBV_WR_RDMA_WRITE_WITH_IMM ? IBV_WC_RDMA_WRITE
                                                    : IBV_WC_SEND);
    struct reply r = fix_cmd(f, (struct cmd){.op = C_WAIT});
    expect_ok(&r.wc, op == IBV_WR_RDMA_WRITE_WITH_IMM
                         ? IBV_WC_RECV_RDMA_WITH_IMM
                         : IBV_WC_RECV);
    if (op != IBV_WR_SEND) {
        assert_true(r.wc.wc_flags & IBV_WC_WITH_IMM);
        assert_int_equal(r.wc.imm_data, imm);
    }
    if (op != IBV_WR_RDMA_WRITE_WITH_IMM)
        assert_int_equal(r.wc.byte_len, len);
    assert_int_equal(r.wc.qp_num, f->remote.qpn);
    assert_int_equal(r.wc.src_qp, f->e.qp->qp_num);
    r = fix_cmd(
        f, (struct cmd){.op = C_CHECK, .off = roff, .len = len, .seed = seed});
    assert_int_equal(r.v, -1);
}

/* The peer SENDs into a receive of ours. */
static void do_from_peer(struct fix *f, uint32_t len, uint32_t seed)
{
    struct ibv_wc wc;
    assert_int_equal(post_recv(&f->e, 65536, len + 1), 0);
    struct reply r = fix_cmd(
        f, (struct cmd){.op = C_SEND, .off = 32768, .len = len, .seed = seed});
    assert_int_equal(r.v, 0);
    expect_ok(&r.wc, IBV_WC_SEND);
    ep_poll(&f->e, &wc);
    expect_ok(&wc, IBV_WC_RECV);
    assert_int_equal(wc.byte_len, len);
    assert_int_equal(check(f->e.buf + 65536, len, seed), -1);
}

static void all_ops(struct fix *f)
{
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint32_t n = sizes[i], s = (uint32_t)i + 1;
        do_write(f, n, s);
        do_read(f, n, s + 100);
        if (n > 65536)
            continue; /* receives: 64 KiB apart in the peer's buffer */
        do_to_recv(f, IBV_WR_SEND, n, s + 200);
        do_to_recv(f, IBV_WR_SEND_WITH_IMM, n, s + 300);
        do_to_recv(f, IBV_WR_RDMA_WRITE_WITH_IMM, n, s + 400);
        do_from_peer(f, n, s + 500);
    }
}

static void test_ops_exact(void **state)
{
    all_ops(*state);
}

/* ibv_rc_pingpong's way: no GID, the LID alone (R-SOFT-1). */
static void test_no_gid(void **state)
{
    struct fix *f = *state;
    fix_pair(f, false);
    do_write(f, 70000, 9);
    do_read(f, 70000, 10);
    do_to_recv(f, IBV_WR_SEND, 1000, 11);
}

/* 1% of the packets each side sends are lost in the impairment layer;
 * every byte still arrives exactly (the setup ran with
 * MROCE_VERBS_LOSS=0.01). */
static void test_loss_exact(void **state)
{
    struct fix *f = *state;
    all_ops(f);
    for (uint32_t s = 0; s < 8; s++)
        do_write(f, 3u << 20, 700 + s);
}

static void expect_err(struct fix *f, enum ibv_wc_status st)
{
    struct ibv_wc wc;
    ep_poll(&f->e, &wc);
    assert_int_equal(wc.vendor_err, 0);
    assert_int_equal(wc.status, st);
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;
    assert_int_equal(ibv_query_qp(f->e.qp, &a, IBV_QP_STATE, &ia), 0);
    assert_int_equal(a.qp_state, IBV_QPS_ERR);
    /* a request posted in ERR is flushed */
    assert_int_equal(post_send(&f->e, IBV_WR_RDMA_WRITE, 0, 8, f->remote.addr,
                               f->remote.rkey, 0),
                     0);
    ep_poll(&f->e, &wc);
    assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
}

static void test_bad_rkey(void **state)
{
    struct fix *f = *state;
    assert_int_equal(post_send(&f->e, IBV_WR_RDMA_WRITE, 0, 100, f->remote.addr,
                               f->remote.rkey ^ 0x5A5A, 0),
                     0);
    expect_err(f, IBV_WC_REM_ACCESS_ERR);
    fix_pair(f, true); /* a new pair works */
    do_write(f, 5000, 3);
}

static void test_oob_write(void **state)
{
    struct fix *f = *state;
    /* the last byte would land one past the peer's region */
    fix_cmd(f,
            (struct cmd){
                .op = C_FILL, .off = BUF_LEN - 4096, .len = 4096, .seed = 42});
    assert_int_equal(post_send(&f->e, IBV_WR_RDMA_WRITE, 0, 4096,
                               f->remote.addr + BUF_LEN - 4095, f->remote.rkey,
                               0),
                     0);
    expect_err(f, IBV_WC_REM_ACCESS_ERR);
    struct reply r = fix_cmd(
        f, (struct cmd){
               .op = C_CHECK, .off = BUF_LEN - 4096, .len = 4096, .seed = 42});
    assert_int_equal(r.v, -1); /* not a byte of it was written */
}

static void test_oob_read(void **state)
{
    struct fix *f = *state;
    assert_int_equal(post_send(&f->e, IBV_WR_RDMA_READ, 0, 64,
                               f->remote.addr - 1, f->remote.rkey, 0),
                     0);
    expect_err(f, IBV_WC_REM_ACCESS_ERR);
}

/* A local buffer outside our region: LOC_PROT_ERR, after the requests
 * posted before it completed normally. */
static void test_local_oob(void **state)
{
    struct fix *f = *state;
    struct ibv_wc wc;
    fill(f->e.buf, 1000, 77);
    assert_int_equal(post_send(&f->e, IBV_WR_RDMA_WRITE, 0, 1000,
                               f->remote.addr, f->remote.rkey, 0),
                     0);
    assert_int_equal(post_send(&f->e, IBV_WR_RDMA_WRITE, BUF_LEN - 10, 20,
                               f->remote.addr, f->remote.rkey, 0),
                     0);
    ep_poll(&f->e, &wc);
    expect_ok(&wc, IBV_WC_RDMA_WRITE);
    assert_int_equal(wc.wr_id, 0);
    expect_err(f, IBV_WC_LOC_PROT_ERR);
}

static void test_killed_peer(void **state)
{
    struct fix *f = *state;
    do_write(f, 4096, 5);
    kill(f->peer, SIGKILL);
    int st;
    waitpid(f->peer, &st, 0);
    f->peer = -1;
    uint64_t t0 = now_ms();
    assert_int_equal(post_send(&f->e, IBV_WR_RDMA_WRITE, 0, 4096,
                               f->remote.addr, f->remote.rkey, 0),
                     0);
    struct ibv_wc wc;
    ep_poll(&f->e, &wc);
    assert_int_equal(wc.vendor_err, 0);
    assert_true(wc.status == IBV_WC_RETRY_EXC_ERR ||
                wc.status == IBV_WC_WR_FLUSH_ERR);
    assert_true(now_ms() - t0 < POLL_MS);
    /* the QP's failure is an async event */
    struct ibv_async_event ev;
    struct pollfd p = {.fd = f->e.ctx->async_fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 5000), 1);
    assert_int_equal(ibv_get_async_event(f->e.ctx, &ev), 0);
    assert_int_equal(ev.event_type, IBV_EVENT_QP_FATAL);
    assert_ptr_equal(ev.element.qp, f->e.qp);
    ibv_ack_async_event(&ev);
}

static void test_misuse(void **state)
{
    struct fix *f = *state;
    struct ibv_qp *qp = ep_new_qp(&f->e);
    assert_non_null(qp);
    struct ibv_sge sg = {
        .addr = (uintptr_t)f->e.buf, .length = 8, .lkey = f->e.mr->lkey};
    struct ibv_send_wr wr = {.sg_list = &sg,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND},
                       *bad = NULL;
    struct ibv_recv_wr rw = {.sg_list = &sg, .num_sge = 1}, *rbad = NULL;
    /* posting on a RESET QP */
    assert_int_equal(ibv_post_send(qp, &wr, &bad), EINVAL);
    assert_ptr_equal(bad, &wr);
    assert_int_equal(ibv_post_recv(qp, &rw, &rbad), EINVAL);
    assert_ptr_equal(rbad, &rw);
    /* RESET -> INIT without the port: wrong mask */
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = ALL_ACCESS};
    assert_int_equal(
        ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS),
        EINVAL);
    /* RESET -> RTR skips INIT */
    struct ibv_qp_attr r;
    int m = ep_rtr_attr(&f->e, &f->remote, true, &r);
    assert_int_equal(ibv_modify_qp(qp, &r, m), EINVAL);
    /* a port the device does not have */
    a.port_num = 2;
    assert_int_equal(ibv_modify_qp(qp, &a,
                                   IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
                     EINVAL);
    a.port_num = 1;
    assert_int_equal(ibv_modify_qp(qp, &a,
                                   IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
                     0);
    /* INIT -> RTR with an attribute that belongs to RTS */
    assert_int_equal(ibv_modify_qp(qp, &r, m | IBV_QP_SQ_PSN), EINVAL);
    /* and without a required one */
    assert_int_equal(ibv_modify_qp(qp, &r, m & ~IBV_QP_DEST_QPN), EINVAL);
    struct ibv_qp_init_attr ia;
    assert_int_equal(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
    assert_int_equal(a.qp_state, IBV_QPS_INIT); /* unchanged */
    /* sends in INIT: EINVAL; receives: accepted */
    assert_int_equal(ibv_post_send(qp, &wr, &bad), EINVAL);
    assert_int_equal(ibv_post_recv(qp, &rw, &rbad), 0);
    /* two SGEs: the device has one */
    struct ibv_sge two[2] = {sg, sg};
    rw.sg_list = two;
    rw.num_sge = 2;
    assert_int_equal(ibv_post_recv(qp, &rw, &rbad), EINVAL);
    assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void test_unsupported(void **state)
{
    struct fix *f = *state;
    struct ibv_qp_init_attr a = {.send_cq = f->e.cq,
                                 .recv_cq = f->e.cq,
                                 .cap = {.max_send_wr = 4,
                                         .max_recv_wr = 4,
                                         .max_send_sge = 1,
                                         .max_recv_sge = 1},
                                 .qp_type = IBV_QPT_UD};
    errno = 0;
    assert_null(ibv_create_qp(f->e.pd, &a));
    assert_int_equal(errno, EOPNOTSUPP);
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_sge = 2;
    assert_null(ibv_create_qp(f->e.pd, &a));
    assert_int_equal(errno, EINVAL);
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1}};
    assert_null(ibv_create_srq(f->e.pd, &sa));
    assert_int_equal(errno, EOPNOTSUPP);
    struct ibv_ah_attr ah = {.dlid = 1, .port_num = 1};
    assert_null(ibv_create_ah(f->e.pd, &ah));
    assert_int_equal(errno, EOPNOTSUPP);
    union ibv_gid g = {0};
    assert_int_equal(ibv_attach_mcast(f->e.qp, &g, 0), EOPNOTSUPP);
    assert_null(ibv_reg_mr(f->e.pd, f->e.buf, 4096,
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND));
    assert_int_equal(errno, EOPNOTSUPP);
    assert_null(ibv_reg_mr(f->e.pd, f->e.buf, 4096, IBV_ACCESS_REMOTE_WRITE));
    assert_int_equal(errno, EINVAL);
    /* atomics: the device has none (atomic_cap NONE) */
    struct ibv_sge sg = {
        .addr = (uintptr_t)f->e.buf, .length = 8, .lkey = f->e.mr->lkey};
    struct ibv_send_wr wr = {.sg_list = &sg,
                             .num_sge = 1,
                             .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
                             .wr.atomic = {.remote_addr = f->remote.addr,
                                           .rkey = f->remote.rkey}},
                       *bad;
    assert_int_equal(ibv_post_send(f->e.qp, &wr, &bad), EINVAL);
    struct ibv_device_attr da;
    assert_int_equal(ibv_query_device(f->e.ctx, &da), 0);
    assert_int_equal(da.atomic_cap, IBV_ATOMIC_NONE);
    assert_null(ibv_qp_to_qp_ex(f->e.qp));
    /* the QP is still fine */
    do_write(f, 100, 1);
}

/* Completion events: armed CQ, an event after a completion, acked before
 * the CQ goes. */
static void test_channel(void **state)
{
    struct fix *f = *state;
    assert_int_equal(ibv_req_notify_cq(f->e.cq, 0), 0);
    fill(f->e.buf, 64, 3);
    assert_int_equal(post_send(&f->e, IBV_WR_RDMA_WRITE, 0, 64, f->remote.addr,
                               f->remote.rkey, 0),
                     0);
    struct pollfd p = {.fd = f->e.ch->fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, POLL_MS), 1);
    struct ibv_cq *cq;
    void *cctx;
    assert_int_equal(ibv_get_cq_event(f->e.ch, &cq, &cctx), 0);
    assert_ptr_equal(cq, f->e.cq);
    assert_ptr_equal(cctx, &f->e);
    ibv_ack_cq_events(cq, 1);
    struct ibv_wc wc;
    assert_int_equal(ibv_poll_cq(f->e.cq, 1, &wc), 1);
    expect_ok(&wc, IBV_WC_RDMA_WRITE);
    /* not armed again: no second event */
    assert_int_equal(post_send(&f->e, IBV_WR_RDMA_WRITE, 0, 64, f->remote.addr,
                               f->remote.rkey, 0),
                     0);
    ep_poll(&f->e, &wc);
    expect_ok(&wc, IBV_WC_RDMA_WRITE);
    assert_int_equal(poll(&p, 1, 100), 0);
}

/* A dead peer is found in a few RTOs, not in 15 doublings; the other
 * tests keep the default rounds (a loaded host stalls peers for ms). */
static int killed_setup(void **state)
{
    setenv("MROCE_VERBS_RETRY", "5", 1);
    int rc = fix_setup(state);
    unsetenv("MROCE_VERBS_RETRY");
    return rc;
}

static int loss_setup(void **state)
{
    setenv("MROCE_VERBS_LOSS", "0.01", 1);
    int rc = fix_setup(state);
    unsetenv("MROCE_VERBS_LOSS");
    return rc;
}

int main(void)
{
    alarm(600);
    srand48(getpid());
    struct ibv_device **l = ibv_get_device_list(NULL);
    if (!l || !l[0] || strcmp(ibv_get_device_name(l[0]), "mroce0")) {
        printf("SKIP: libibverbs is not mroce's (check the rpath)\n");
        return 77;
    }
    ibv_free_device_list(l);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ops_exact, fix_setup,
                                        fix_teardown),
        cmocka_unit_test_setup_teardown(test_no_gid, fix_setup, fix_teardown),
        cmocka_unit_test_setup_teardown(test_loss_exact, loss_setup,
                                        fix_teardown),
        cmocka_unit_test_setup_teardown(test_bad_rkey, fix_setup, fix_teardown),
        cmocka_unit_test_setup_teardown(test_oob_write, fix_setup,
                                        fix_teardown),
        cmocka_unit_test_setup_teardown(test_oob_read, fix_setup, fix_teardown),
        cmocka_unit_test_setup_teardown(test_local_oob, fix_setup,
                                        fix_teardown),
        cmocka_unit_test_setup_teardown(test_killed_peer, killed_setup,
                                        fix_teardown),
        cmocka_unit_test_setup_teardown(test_misuse, fix_setup, fix_teardown),
        cmocka_unit_test_setup_teardown(test_unsupported, fix_setup,
                                        fix_teardown),
        cmocka_unit_test_setup_teardown(test_channel, fix_setup, fix_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
