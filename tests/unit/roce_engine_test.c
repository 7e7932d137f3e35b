/* RoCEv2 baseline engine over the in-process lossy test wire: every
 * operation byte-exact, go-back-N under loss, the local ACK timeout
 * ladder, RNR, retry exhaustion, DCQCN, QP scaling, and the encoder
 * checked by tshark's own RoCEv2 dissector. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, popen */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/pcap/pcap.h"
#include "io/testwire/testwire.h"
#include "io/testwire/twloop.h"
#include "roce/roce.h"
#include "roce/roce_int.h"
#include "wire/roce.h"

/* ---- a pair of devices on the test wire ---- */

/* The RoCEv2 engine runs on a bare src/device device: no MetaRoCE
 * context (and no src/engine code) is involved. */
static void *rp_alloc(void *ud, size_t size)
{
    (void)ud;
    return calloc(1, size);
}

static void rp_free(void *ud, void *ptr)
{
    (void)ud;
    free(ptr);
}

static void rp_nolog(void *ud, int level, const char *msg)
{
    (void)ud;
    (void)level;
    (void)msg;
}

static size_t op_max(const void *ep)
{
    return roce_dev_max_pkt(ep);
}
static int op_tx(void *ep, uint64_t now, uint8_t *buf, size_t cap,
                 struct mroce_pkt_meta *m)
{
    return roce_dev_tx(ep, now, buf, cap, m);
}
static int op_rx(void *ep, uint64_t now, const struct mroce_pkt_meta *m,
                 const uint8_t *buf, size_t len)
{
    return roce_dev_rx(ep, now, m, buf, len);
}
static uint64_t op_next(const void *ep)
{
    return roce_dev_next_expiry(ep);
}
static void op_exp(void *ep, uint64_t now)
{
    roce_dev_on_expiry(ep, now);
}
static const struct mroce_ep_ops roce_ops = {op_max,  op_tx,  op_rx,
                                             op_next, op_exp, NULL};

#define BUFSZ (8u << 20)

struct rp {
    struct mroce_tw *tw;
    struct mroce_twloop *loop;
    struct mroce_dev md[2];
    struct roce_dev *dev[2];
    struct mroce_pd *pd[2];
    struct mroce_cq *cq[2];
    struct roce_conn *conn[2];
    uint8_t *buf[2];
    struct mroce_mr *mr[2];
    struct mroce_pcap *pcap;
    uint64_t tx_times[64];
    uint32_t n_tx_times;
    int capture; /* record packets into caps[] */
    uint32_t n_caps;
    struct cap {
        int from;
        uint64_t t;
        struct mroce_pkt_meta m;
        size_t len;
        uint8_t b[ROCE_MTU_MAX + ROCE_MAX_OVERHEAD];
    } caps[64];
};

struct rp_cfg {
    struct mroce_tw_cfg wire;
    struct roce_dev_attr dev;
    struct roce_conn_attr conn;
    struct mroce_twloop_cfg loop;
};

static void rp_tap(void *ud, uint64_t now, int from,
                   const struct mroce_pkt_meta *m, const uint8_t *buf,
                   size_t len)
{
    struct rp *p = ud;
    if (p->pcap)
        assert_int_equal(mroce_pcap_write(p->pcap, now, m, buf, len), 0);
    if (from == 0 && buf[0] != ROCE_OP_ACK && p->n_tx_times < 64)
        p->tx_times[p->n_tx_times++] = now;
    if (p->capture && p->n_caps < 64) {
        struct cap *c = &p->caps[p->n_caps++];
        c->from = from;
        c->t = now;
        c->m = *m;
        c->len = len;
        memcpy(c->b, buf, len);
    }
}

/* splitmix64: a fixed, reproducible sequence for the test devices */
static uint64_t rp_rand(void *ud)
{
    uint64_t *state = ud;
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static struct rp *rp_create(const struct rp_cfg *cfg)
{
    struct rp *p = calloc(1, sizeof(*p));
    assert_non_null(p);
    assert_int_equal(mroce_tw_create(&cfg->wire, &p->tw), 0);
    struct mroce_addr addr[2];
    void *eps[2];
    const struct mroce_ep_ops *ops[2] = {&roce_ops, &roce_ops};
    for (int i = 0; i < 2; i++) {
        struct mroce_hooks h = {
            .alloc = rp_alloc, .free = rp_free, .log = rp_nolog};
        dev_init(&p->md[i], &h);
        p->md[i].rng = rp_rand; /* deterministic: a test */
        p->md[i].rng_state = 7 + (uint64_t)i;
        p->md[i].rng_ud = &p->md[i].rng_state;
        p->md[i].addr = (struct mroce_addr){.family = MROCE_AF_INET,
                                            .ip = {10, 0, 0, (uint8_t)(i + 1)}};
        addr[i] = p->md[i].addr;
        assert_int_equal(roce_dev_create(&p->md[i], &cfg->dev, &p->dev[i]), 0);
        assert_int_equal(dev_pd_alloc(&p->md[i], &p->pd[i]), 0);
        assert_int_equal(dev_cq_create(&p->md[i], 1 << 16, &p->cq[i]), 0);
        struct roce_conn_attr a = cfg->conn;
        a.send_cq = a.recv_cq = p->cq[i];
        assert_int_equal(roce_conn_create(p->dev[i], p->pd[i], &a, &p->conn[i]),
                         0);
        p->buf[i] = calloc(1, BUFSZ);
        assert_non_null(p->buf[i]);
        unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                       MROCE_ACCESS_REMOTE_READ;
        assert_int_equal(
            mroce_reg_mr(p->pd[i], p->buf[i], BUFSZ, acc, &p->mr[i]), 0);
        eps[i] = p->dev[i];
    }
    struct roce_conn_params pa, pb;
    roce_conn_get_params(p->conn[0], &pa);
    roce_conn_get_params(p->conn[1], &pb);
    assert_int_equal(roce_conn_connect(p->conn[0], &pb), 0);
    assert_int_equal(roce_conn_connect(p->conn[1], &pa), 0);
    assert_int_equal(
        mroce_twloop_create_ops(p->tw, ops, eps, addr, 2, &cfg->loop, &p->loop),
        0);
    mroce_twloop_set_tap(p->loop, rp_tap, p);
    return p;
}

static void rp_destroy(struct rp *p)
{
    mroce_twloop_destroy(p->loop);
    for (int i = 0; i < 2; i++) {
        roce_dev_destroy(p->dev[i]);
        dev_release(&p->md[i]);
        free(p->buf[i]);
    }
    mroce_tw_destroy(p->tw);
    free(p);
}

static uint64_t va(struct rp *p, int side, uint64_t off)
{
    return (uint64_t)(uintptr_t)p->buf[side] + off;
}

static struct mroce_send_wr wr_of(struct rp *p, int side, uint64_t loff,
                                  uint32_t len, uint64_t roff, uint64_t id)
{
    struct mroce_send_wr w = {.wr_id = id,
                              .sge = {.addr = va(p, side, loff),
                                      .length = len,
                                      .lkey = mroce_mr_lkey(p->mr[side])},
                              .remote_addr = va(p, !side, roff),
                              .rkey = mroce_mr_rkey(p->mr[!side]),
                              .imm = (uint32_t)(0xA0000000u + id)};
    return w;
}

static int post_recv(struct rp *p, int side, uint16_t stream, uint64_t off,
                     uint32_t len, uint64_t id)
{
    struct mroce_recv_wr r = {.wr_id = id,
                              .stream = stream,
                              .sge = {.addr = va(p, side, off),
                                      .length = len,
                                      .lkey = mroce_mr_lkey(p->mr[side])}};
    return roce_post_recv(p->conn[side], &r);
}

struct waitc {
    struct rp *p;
    int side;
    int want;
    int got;
    struct mroce_wc wc[4096];
};

static int pred_cq(struct mroce_twloop *loop, void *arg)
{
    (void)loop;
    struct waitc *w = arg;
    int room = (int)(sizeof(w->wc) / sizeof(w->wc[0])) - w->got;
    int n = mroce_poll_cq(w->p->cq[w->side], room, w->wc + w->got);
    w->got += n;
    return w->got >= w->want;
}

/* Runs until `want` completions arrived at side (or the deadline). */
static struct waitc *run_cq(struct rp *p, int side, int want, uint64_t until)
{
    static struct waitc w;
    memset(&w, 0, sizeof(w));
    w.p = p;
    w.side = side;
    w.want = want;
    int r = mroce_twloop_run_until(p->loop, pred_cq, &w, until);
    assert_true(r >= 0);
    return &w;
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(i * 31 + seed + (i >> 8));
}

static struct rp_cfg base_cfg(void)
{
    struct rp_cfg c = {
        .wire = {.seed = 1,
                 .rate_bps = 100000000000ull,
                 .delay_ns = 1000,
                 .wire_overhead = 66},
        .conn = {.mtu = 1024, .psn_fixed = 1, .start_psn = 0xFFFFF0},
    };
    return c;
}

/* ---- every operation, byte-exact ---- */

static void one_op(struct rp *p, int op, uint32_t len, uint64_t id)
{
    uint8_t *a = p->buf[0], *b = p->buf[1];
    memset(b, 0, 65536);
    memset(a + 65536, 0, 65536);
    fill(a, len, (unsigned)id);
    fill(b + 65536, len, (unsigned)id + 99);
    struct mroce_send_wr w = wr_of(p, 0, 0, len, 0, id);
    int recv = op == RWR_SEND || op == RWR_SEND_IMM || op == RWR_WRITE_IMM;
    if (recv)
        assert_int_equal(post_recv(p, 1, 0, 0, 65536, id + 1000), 0);
    int rc;
    switch (op) {
    case RWR_WRITE:
        rc = roce_post_write(p->conn[0], &w);
        break;
    case RWR_WRITE_IMM:
        rc = roce_post_write_imm(p->conn[0], &w);
        break;
    case RWR_SEND:
        rc = roce_post_send(p->conn[0], &w);
        break;
    case RWR_SEND_IMM:
        rc = roce_post_send_imm(p->conn[0], &w);
        break;
    default:
        w.sge.addr = va(p, 0, 65536);
        w.remote_addr = va(p, 1, 65536);
        rc = roce_post_read(p->conn[0], &w);
        break;
    }
    assert_int_equal(rc, 0);
    uint64_t now = mroce_twloop_now(p->loop);
    struct waitc *c = run_cq(p, 0, 1, now + 10000000);
    assert_int_equal(c->got, 1);
    assert_int_equal(c->wc[0].status, MROCE_WC_SUCCESS);
    assert_int_equal(c->wc[0].wr_id, id);
    if (op == RWR_READ) {
        assert_int_equal(c->wc[0].opcode, MROCE_WC_RDMA_READ);
        assert_memory_equal(a + 65536, b + 65536, len);
        return;
    }
    assert_memory_equal(a, b, len);
    if (!recv)
        return;
    c = run_cq(p, 1, 1, mroce_twloop_now(p->loop) + 10000000);
    assert_int_equal(c->got, 1);
    assert_int_equal(c->wc[0].wr_id, id + 1000);
    assert_int_equal(c->wc[0].byte_len, len);
    assert_int_equal(c->wc[0].opcode, op == RWR_WRITE_IMM
                                          ? MROCE_WC_RECV_RDMA_WITH_IMM
                                          : MROCE_WC_RECV);
    assert_int_equal(c->wc[0].has_imm, op != RWR_SEND);
    if (op != RWR_SEND)
        assert_int_equal(c->wc[0].imm, 0xA0000000u + id);
}

static void test_every_op_exact(void **state)
{
    (void)state;
    struct rp_cfg cfg = base_cfg();
    struct rp *p = rp_create(&cfg);
    static const uint32_t lens[] = {0,    1,    3,    1023, 1024,
                                    1025, 4096, 5000, 40000};
    uint64_t id = 1;
    for (int op = RWR_WRITE; op <= RWR_READ; op++)
        for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
            one_op(p, op, lens[i], id++);
    struct roce_qp_counters a, b;
    roce_conn_get_counters(p->conn[0], &a);
    roce_conn_get_counters(p->conn[1], &b);
    assert_int_equal(a.retx_pkts, 0);
    assert_int_equal(b.rx_ooo, 0);
    assert_int_equal(a.timeouts, 0);
    struct roce_dev_counters d;
    roce_dev_get_counters(p->dev[1], &d);
    assert_int_equal(d.drop_bad_icrc, 0);
    rp_destroy(p);
}

/* The simulator's shortcut: no ICRC on either side, same behaviour. */
static void test_no_icrc(void **state)
{
    (void)state;
    struct rp_cfg cfg = base_cfg();
    cfg.dev.no_icrc_check = 1;
    cfg.dev.no_icrc_tx = 1;
    struct rp *p = rp_create(&cfg);
    one_op(p, RWR_WRITE_IMM, 5000, 1);
    one_op(p, RWR_READ, 5000, 2);
    rp_destroy(p);
}

/* ---- the packets on the wire ---- */

static void decode_cap(const struct cap *c, struct roce_hdr *h)
{
    struct roce_ip ip;
    roce_ip_from_meta(&c->m, &ip);
    assert_int_equal(roce_decode(&ip, c->b, c->len, h), ROCE_WIRE_OK);
    assert_int_equal(c->m.dst_port, ROCE_UDP_PORT);
}

/* A 2.5-PMTU WRITE_IMM: FIRST (RETH) / MIDDLE / LAST_IMM with PSNs
 * wrapping past 2^24, the A bit only on the last packet, one ACK for it;
 * every packet of a QP leaves from the QP's one UDP source port. */
static void test_packet_format(void **state)
{
    (void)state;
    struct rp_cfg cfg = base_cfg();
    struct rp *p = rp_create(&cfg);
    struct roce_qp_info qa, qb;
    assert_int_equal(roce_conn_qp_info(p->conn[0], 0, &qa), 0);
    assert_int_equal(roce_conn_qp_info(p->conn[1], 0, &qb), 0);
    assert_int_equal(qa.dest_qpn, qb.qpn);
    assert_int_equal(qa.src_port,
                     0xC000 | ((qa.qpn * 0x61C88647u) >> 18)); /* rxe */
    assert_int_equal(post_recv(p, 1, 0, 0, 4096, 9), 0);
    fill(p->buf[0], 2560, 5);
    struct mroce_send_wr w = wr_of(p, 0, 0, 2560, 8192, 77);
    p->capture = 1;
    assert_int_equal(roce_post_write_imm(p->conn[0], &w), 0);
    struct waitc *c = run_cq(p, 0, 1, 1000000);
    assert_int_equal(c->got, 1);
    assert_int_equal(p->n_caps, 4);
    static const uint8_t ops[3] = {ROCE_OP_WRITE_FIRST, ROCE_OP_WRITE_MIDDLE,
                                   ROCE_OP_WRITE_LAST_IMM};
    static const uint32_t psns[3] = {0xFFFFF0, 0xFFFFF1, 0xFFFFF2};
    struct roce_hdr h;
    for (int i = 0; i < 3; i++) {
        decode_cap(&p->caps[i], &h);
        assert_int_equal(p->caps[i].from, 0);
        assert_int_equal(h.opcode, ops[i]);
        assert_int_equal(h.psn, psns[i]);
        assert_int_equal(h.dqpn, qb.qpn);
        assert_int_equal(h.pkey, 0xFFFF);
        assert_int_equal(h.ackreq, i == 2);
        assert_int_equal(h.payload_len, i == 2 ? 512 : 1024);
        assert_memory_equal(h.payload, p->buf[0] + i * 1024, h.payload_len);
        assert_int_equal(p->caps[i].m.src_port, qa.src_port);
        assert_int_equal(p->caps[i].m.ecn, MROCE_ECN_ECT0);
    }
    decode_cap(&p->caps[0], &h);
    assert_int_equal(h.va, va(p, 1, 8192));
    assert_int_equal(h.rkey, mroce_mr_rkey(p->mr[1]));
    assert_int_equal(h.dma_len, 2560);
    decode_cap(&p->caps[2], &h);
    assert_int_equal(h.imm, 0xA0000000u + 77);
    decode_cap(&p->caps[3], &h);
    assert_int_equal(p->caps[3].from, 1);
    assert_int_equal(h.opcode, ROCE_OP_ACK);
    assert_int_equal(h.psn, 0xFFFFF2);
    assert_int_equal(h.dqpn, qa.qpn);
    assert_int_equal(h.syndrome, ROCE_AETH_ACK | ROCE_AETH_CREDITS_INVALID);
    assert_int_equal(h.msn, 1);
    assert_int_equal(p->caps[3].m.src_port, qb.src_port);
    assert_memory_equal(p->buf[1] + 8192, p->buf[0], 2560);
    rp_destroy(p);
}

/* Local errors at post time, like mroce_post_*. */
static void test_post_errors(void **state)
{
    (void)state;
    struct rp_cfg cfg = base_cfg();
    cfg.conn.sq_depth = 2;
    struct rp *p = rp_create(&cfg);
    struct mroce_send_wr w = wr_of(p, 0, 0, 100, 0, 1);
    w.stream = 1;
    assert_int_equal(roce_post_write(p->conn[0], &w), MROCE_ENOENT);
    w.stream = 0;
    w.sge.lkey ^= 1;
    assert_int_equal(roce_post_write(p->conn[0], &w), MROCE_EACCES);
    w = wr_of(p, 0, BUFSZ - 10, 100, 0, 1);
    assert_int_equal(roce_post_write(p->conn[0], &w), MROCE_ERANGE);
    w = wr_of(p, 0, 0, 100, 0, 1);
    w.sge.length = (1u << 31) + 1;
    assert_int_equal(roce_post_write(p->conn[0], &w), MROCE_EINVAL);
    w = wr_of(p, 0, 0, 100, 0, 1);
    assert_int_equal(roce_post_write(p->conn[0], &w), 0);
    assert_int_equal(roce_post_write(p->conn[0], &w), 0);
    assert_int_equal(roce_post_write(p->conn[0], &w), MROCE_EAGAIN);
    struct roce_conn_params prm;
    roce_conn_get_params(p->conn[1], &prm);
    assert_int_equal(roce_conn_connect(p->conn[0], &prm), MROCE_ESTATE);
    /* a remote key the responder refuses: REM_ACCESS_ERR, then flush */
    struct waitc *c = run_cq(p, 0, 2, 1000000);
    assert_int_equal(c->got, 2);
    w.rkey ^= 0x5a5a;
    assert_int_equal(roce_post_write(p->conn[0], &w), 0);
    w.rkey ^= 0x5a5a;
    assert_int_equal(roce_post_write(p->conn[0], &w), 0);
    c = run_cq(p, 0, 2, 2000000);
    assert_int_equal(c->got, 2);
    assert_int_equal(c->wc[0].status, MROCE_WC_REM_ACCESS_ERR);
    assert_int_equal(c->wc[1].status, MROCE_WC_WR_FLUSH_ERR);
    assert_int_equal(roce_conn_state(p->conn[0]), MROCE_CONN_ERROR);
    assert_int_equal(roce_conn_state(p->conn[1]), MROCE_CONN_ERROR);
    assert_int_equal(roce_post_write(p->conn[0], &w), MROCE_ESTATE);
    rp_destroy(p);
}

/* ---- receive checks, played by a hostile peer ---- */

static void test_rx_checks(void **state)
{
    (void)state;
    struct rp_cfg cfg = base_cfg();
    struct rp *p = rp_create(&cfg);
    struct roce_qp_info qb;
    roce_conn_qp_info(p->conn[1], 0, &qb);
    struct mroce_pkt_meta m = {.src = p->md[0].addr,
                               .dst = p->md[1].addr,
                               .src_port = 0xC001,
                               .dst_port = ROCE_UDP_PORT};
    struct roce_ip ip;
    roce_ip_from_meta(&m, &ip);
    uint8_t pkt[256], one = 7;
    struct roce_hdr h = {.opcode = ROCE_OP_SEND_ONLY,
                         .pkey = 0xFFFF,
                         .dqpn = qb.qpn,
                         .ackreq = 1,
                         .psn = qb.rq_psn};
    int n = roce_encode(&h, &ip, &one, 1, pkt, sizeof(pkt));
    struct roce_dev *d = p->dev[1];
    struct roce_dev_counters c;
    /* bad ICRC, truncated, wrong port, unknown QP, wrong source, P_Key */
    pkt[n - 1] ^= 1;
    assert_int_equal(roce_dev_rx(d, 0, &m, pkt, (size_t)n), MROCE_EPROTO);
    pkt[n - 1] ^= 1;
    assert_int_equal(roce_dev_rx(d, 0, &m, pkt, 8), MROCE_EPROTO);
    m.dst_port = 4792;
    assert_int_equal(roce_dev_rx(d, 0, &m, pkt, (size_t)n), MROCE_EPROTO);
    m.dst_port = ROCE_UDP_PORT;
    h.dqpn = qb.qpn + 1000;
    n = roce_encode(&h, &ip, &one, 1, pkt, sizeof(pkt));
    assert_int_equal(roce_dev_rx(d, 0, &m, pkt, (size_t)n), MROCE_EPROTO);
    h.dqpn = qb.qpn;
    h.pkey = 0x8001;
    n = roce_encode(&h, &ip, &one, 1, pkt, sizeof(pkt));
    assert_int_equal(roce_dev_rx(d, 0, &m, pkt, (size_t)n), MROCE_EPROTO);
    h.pkey = 0xFFFF;
    struct mroce_pkt_meta m2 = m;
    m2.src.ip[3] = 99;
    roce_ip_from_meta(&m2, &ip);
    n = roce_encode(&h, &ip, &one, 1, pkt, sizeof(pkt));
    assert_int_equal(roce_dev_rx(d, 0, &m2, pkt, (size_t)n), MROCE_EPROTO);
    roce_dev_get_counters(d, &c);
    assert_int_equal(c.drop_bad_icrc, 1);
    assert_int_equal(c.drop_truncated, 1);
    assert_int_equal(c.drop_bad_port, 1);
    assert_int_equal(c.drop_unknown_qp, 1);
    assert_int_equal(c.drop_bad_pkey, 1);
    assert_int_equal(c.drop_bad_src, 1);
    /* a MIDDLE packet outside a message: invalid request, fatal */
    roce_ip_from_meta(&m, &ip);
    h.opcode = ROCE_OP_SEND_MIDDLE;
    n = roce_encode(&h, &ip, &one, 1, pkt, sizeof(pkt));
    assert_int_equal(roce_dev_rx(d, 0, &m, pkt, (size_t)n), 0);
    assert_int_equal(roce_conn_state(p->conn[1]), MROCE_CONN_ERROR);
    struct mroce_pkt_meta om;
    uint8_t out[8192];
    n = roce_dev_tx(d, 0, out, sizeof(out), &om);
    struct roce_hdr r;
    roce_ip_from_meta(&om, &ip);
    assert_int_equal(roce_decode(&ip, out, (size_t)n, &r), 0);
    assert_int_equal(r.opcode, ROCE_OP_ACK);
    assert_int_equal(r.syndrome, ROCE_AETH_NAK | ROCE_NAK_INVALID_REQ);
    assert_int_equal(roce_dev_tx(d, 0, out, sizeof(out), &om), 0);
    assert_int_equal(roce_dev_tx(d, 0, out, 100, &om), MROCE_ENOBUFS);
    rp_destroy(p);
}

/* A rate-limited QP whose connection fails stops its DCQCN timers: no
 * deadline left in the past (the driver loop would spin). */
static void test_dcqcn_error_quiet(void **state)
{
    (void)state;
    struct rp_cfg cfg = base_cfg();
    cfg.dev.dcqcn = 1;
    struct rp *p = rp_create(&cfg);
    roce_rp_on_cnp(&p->conn[0]->qps[0], 0);
    assert_true(roce_dev_next_expiry(p->dev[0]) < ROCE_NEVER);
    roce_conn_error(p->conn[0], NULL, NULL, 0);
    assert_true(mroce_twloop_run_until(p->loop, NULL, NULL, 1000000) >= 0);
    roce_dev_on_expiry(p->dev[0], mroce_twloop_now(p->loop));
    assert_int_equal(roce_dev_next_expiry(p->dev[0]), ROCE_NEVER);
    rp_destroy(p);
}

/* ---- go-back-N under random loss ---- */

struct gbn_res {
    double goodput; /* delivered payload bits / elapsed ns, Gb/s */
    struct roce_qp_counters a, b;
    struct mroce_tw_stats tw;
};

/* `n` 1-MiB WRITEs, then a READ back of the last one; the data must be
 * intact whatever was lost. */
static void gbn_run(double loss, uint32_t window, uint64_t seed, int n,
                    struct gbn_res *res)
{
    struct rp_cfg cfg = base_cfg();
    cfg.wire.seed = seed;
    cfg.wire.rate_bps = 25000000000ull;
    cfg.wire.delay_ns = 25000;
    cfg.wire.loss = loss;
    cfg.conn.mtu = 4096;
    cfg.conn.max_unacked_psns = window;
    cfg.conn.timeout = 9; /* 2.1 ms, about 40 RTTs */
    cfg.conn.sq_depth = 256;
    struct rp *p = rp_create(&cfg);
    const uint32_t len = 1u << 20;
    fill(p->buf[0], 2 * len, 3);
    for (int i = 0; i < n; i++) {
        struct mroce_send_wr w = wr_of(p, 0, (uint64_t)(i % 2) * len, len,
                                       (uint64_t)(i % 2) * len, (uint64_t)i);
        assert_int_equal(roce_post_write(p->conn[0], &w), 0);
    }
    struct waitc *c = run_cq(p, 0, n, 60000000000ull);
    assert_int_equal(c->got, n);
    uint64_t t = mroce_twloop_now(p->loop);
    for (int i = 0; i < n; i++) {
        assert_int_equal(c->wc[i].status, MROCE_WC_SUCCESS);
        assert_int_equal(c->wc[i].wr_id, (uint64_t)i);
    }
    assert_memory_equal(p->buf[1], p->buf[0], 2 * len);
    res->goodput = (double)n * len * 8 / (double)t;
    roce_conn_get_counters(p->conn[0], &res->a);
    roce_conn_get_counters(p->conn[1], &res->b);
    mroce_tw_stats(p->tw, &res->tw);
    rp_destroy(p);
}

/* Each loss costs about one window W of resent packets, so goodput falls
 * like 1/(1 + p W) (the model). W = 16 PSNs on a path whose
 * bandwidth-delay product is ~38 packets keeps the window the limit. */
static void test_gbn_loss(void **state)
{
    (void)state;
    const uint32_t w = 16;
    const int n = 24;
    struct gbn_res r0, r;
    gbn_run(0, w, 1, n, &r0);
    assert_int_equal(r0.a.retx_pkts, 0);
    printf("  go-back-N, W=%u, 25 Gb/s, RTT ~50 us, %d MiB:\n", w, n);
    printf("  %-6s %8s %8s %8s %7s %7s %6s %6s %5s\n", "p", "goodput",
           "measured", "1/(1+pW)", "lost", "retx", "ooo", "naks", "rto");
    printf("  %-6.3f %8.2f %8.3f %8.3f\n", 0.0, r0.goodput, 1.0, 1.0);
    static const double ps[] = {0.001, 0.002, 0.005, 0.01, 0.02};
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        gbn_run(ps[i], w, 11 + i, n, &r);
        double rel = r.goodput / r0.goodput, model = 1.0 / (1.0 + ps[i] * w);
        printf(
            "  %-6.3f %8.2f %8.3f %8.3f %7llu %7llu %6llu %6llu %5llu\n", ps[i],
            r.goodput, rel, model, (unsigned long long)r.tw.lost_random,
            (unsigned long long)r.a.retx_pkts, (unsigned long long)r.b.rx_ooo,
            (unsigned long long)r.b.tx_naks, (unsigned long long)r.a.timeouts);
        /* out-of-order packets are dropped and counted; one NAK per gap */
        assert_true(r.b.rx_ooo >= r.b.tx_naks);
        assert_true(r.b.tx_naks <= r.tw.lost_random);
        assert_true(r.a.retx_pkts > 0);
        assert_true(rel < 1.0);
        if (ps[i] <= 0.01) /* the tolerance */
            assert_true(rel > 0.75 * model && rel < 1.25 * model);
    }
}

/* ---- go-back-N, one loss, packet by packet ---- */

/* Side 1 drops the first copy of request PSN `drop_psn`. */
static uint32_t drop_psn;
static int dropped;
static int op_rx_drop(void *ep, uint64_t now, const struct mroce_pkt_meta *m,
                      const uint8_t *buf, size_t len)
{
    struct roce_hdr h;
    if (!dropped && roce_decode(NULL, buf, len, &h) == 0 &&
        h.opcode != ROCE_OP_ACK && h.psn == drop_psn) {
        dropped = 1;
        return 0;
    }
    return roce_dev_rx(ep, now, m, buf, len);
}

/* PSNs 0..9 of one WRITE; PSN 3 is lost. The responder drops 4..9 as out
 * of order (counted), sends one NAK-sequence-error for 3, and the
 * requester resends 3..9: go-back-N from the first unacknowledged PSN. */
static void test_gbn_one_loss(void **state)
{
    (void)state;
    struct rp_cfg cfg = base_cfg();
    cfg.conn.start_psn = 0;
    struct rp *p = rp_create(&cfg);
    static const struct mroce_ep_ops drop_ops = {op_max,  op_tx,  op_rx_drop,
                                                 op_next, op_exp, NULL};
    const struct mroce_ep_ops *ops[2] = {&roce_ops, &drop_ops};
    struct mroce_addr addr[2] = {p->md[0].addr, p->md[1].addr};
    void *eps[2] = {p->dev[0], p->dev[1]};
    mroce_twloop_destroy(p->loop);
    mroce_tw_destroy(p->tw);
    assert_int_equal(mroce_tw_create(&cfg.wire, &p->tw), 0);
    assert_int_equal(
        mroce_twloop_create_ops(p->tw, ops, eps, addr, 2, &cfg.loop, &p->loop),
        0);
    mroce_twloop_set_tap(p->loop, rp_tap, p);
    drop_psn = 3;
    dropped = 0;
    p->capture = 1;
    fill(p->buf[0], 10240, 2);
    struct mroce_send_wr w = wr_of(p, 0, 0, 10240, 0, 1);
    assert_int_equal(roce_post_write(p->conn[0], &w), 0);
    struct waitc *c = run_cq(p, 0, 1, 10000000);
    assert_int_equal(c->got, 1);
    assert_int_equal(c->wc[0].status, MROCE_WC_SUCCESS);
    assert_memory_equal(p->buf[1], p->buf[0], 10240);
    uint32_t seq[32], n = 0, naks = 0;
    for (uint32_t i = 0; i < p->n_caps; i++) {
        struct roce_hdr h;
        decode_cap(&p->caps[i], &h);
        if (p->caps[i].from == 0 && n < 32)
            seq[n++] = h.psn;
        if (p->caps[i].from == 1 && h.syndrome == ROCE_AETH_NAK) {
            naks++;
            assert_int_equal(h.psn, 3);
        }
    }
    static const uint32_t want[17] = {0, 1, 2, 3, 4, 5, 6, 7, 8,
                                      9, 3, 4, 5, 6, 7, 8, 9};
    assert_int_equal(n, 17);
    assert_memory_equal(seq, want, sizeof(want));
    assert_int_equal(naks, 1);
    struct roce_qp_counters a, b;
    roce_conn_get_counters(p->conn[0], &a);
    roce_conn_get_counters(p->conn[1], &b);
    assert_int_equal(b.rx_ooo, 6);
    assert_int_equal(b.tx_naks, 1);
    assert_int_equal(a.rx_naks, 1);
    assert_int_equal(a.retx_pkts, 7);
    assert_int_equal(a.retries, 1);
    assert_int_equal(a.timeouts, 0);
    rp_destroy(p);
}

/* ---- the local ACK timeout ladder and retry exhaustion ---- */

/* Path from side 0 to side 1 blackholed: the first transmission at t0,
 * then one go-back-N retransmission every T = 4.096 us * 2^t (IBTA
 * 9.7.6.1.3; no backoff), retry_cnt of them, then RETRY_EXC_ERR at
 * t0 + (retry_cnt + 1) T and every other WR flushed. */
static void ladder_run(uint8_t t, uint8_t retry_cnt)
{
    struct rp_cfg cfg = base_cfg();
    cfg.conn.timeout = t;
    cfg.conn.retry_cnt = retry_cnt;
    struct rp *p = rp_create(&cfg);
    assert_int_equal(mroce_tw_blackhole(p->tw, 0, 1, 0, 1), 0);
    assert_int_equal(post_recv(p, 0, 0, 0, 100, 50), 0);
    struct mroce_send_wr w = wr_of(p, 0, 0, 100, 0, 1);
    assert_int_equal(roce_post_write(p->conn[0], &w), 0);
    w.wr_id = 2;
    assert_int_equal(roce_post_send(p->conn[0], &w), 0);
    uint64_t T = roce_timeout_ns(t);
    assert_int_equal(T, 4096ull << t);
    struct waitc *c = run_cq(p, 0, 3, 100 * T);
    assert_int_equal(c->got, 3);
    uint64_t t_err = mroce_twloop_now(p->loop);
    assert_int_equal(c->wc[0].wr_id, 1);
    assert_int_equal(c->wc[0].status, MROCE_WC_RETRY_EXC_ERR);
    assert_int_equal(c->wc[1].wr_id, 2);
    assert_int_equal(c->wc[1].status, MROCE_WC_WR_FLUSH_ERR);
    assert_int_equal(c->wc[2].wr_id, 50); /* the posted receive */
    assert_int_equal(c->wc[2].status, MROCE_WC_WR_FLUSH_ERR);
    /* two packets per round: the WRITE and the SEND */
    assert_int_equal(p->n_tx_times, 2u * (retry_cnt + 1u));
    uint64_t t0 = p->tx_times[0];
    printf("  timeout %u (T = %.3f ms), retry_cnt %u: sends at", t, T / 1e6,
           retry_cnt);
    for (uint32_t i = 0; i <= retry_cnt; i++) {
        uint64_t dt = p->tx_times[2 * i] - t0;
        printf(" %.3f", dt / 1e6);
        assert_true(dt >= i * T && dt <= i * T + 2000);
    }
    printf(" ms, error at %.3f ms\n", (t_err - t0) / 1e6);
    assert_true(t_err - t0 >= (retry_cnt + 1u) * T);
    assert_true(t_err - t0 <= (retry_cnt + 1u) * T + 2000);
    struct roce_qp_counters a;
    roce_conn_get_counters(p->conn[0], &a);
    assert_int_equal(a.timeouts, retry_cnt + 1u);
    assert_int_equal(a.retries, retry_cnt);
    assert_int_equal(a.retx_pkts, 2u * retry_cnt);
    assert_int_equal(roce_conn_state(p->conn[0]), MROCE_CONN_ERROR);
    rp_destroy(p);
}

static void test_timeout_ladder(void **state)
{
    (void)state;
    ladder_run(8, 3);
    ladder_run(10, 7);
    ladder_run(14, 1); /* the default exponent: 67.1 ms */
}

/* A short outage inside the retry budget: the transfer completes after
 * the timeouts, and progress resets the retry counter. */
static void test_outage_recovers(void **state)
{
    (void)state;
    struct rp_cfg cfg = base_cfg();
    cfg.conn.timeout = 8;
    cfg.conn.retry_cnt = 2;
    struct rp *p = rp_create(&cfg);
    fill(p->buf[0], 100000, 9);
    assert_int_equal(mroce_tw_blackhole(p->tw, 0, 1, 0, 1), 0);
    struct mroce_send_wr w = wr_of(p, 0, 0, 100000, 0, 1);
    assert_int_equal(roce_post_write(p->conn[0], &w), 0);
    uint64_t T = roce_timeout_ns(8);
    mroce_twloop_run_until(p->loop, NULL, NULL, T + T / 2);
    assert_int_equal(mroce_tw_blackhole(p->tw, 0, 1, 0, 0), 0);
    struct waitc *c = run_cq(p, 0, 1, 100 * T);
    assert_int_equal(c->got, 1);
    assert_int_equal(c->wc[0].status, MROCE_WC_SUCCESS);
    assert_memory_equal(p->buf[1], p->buf[0], 100000);
    struct roce_qp_info qi;
    roce_conn_qp_info(p->conn[0], 0, &qi);
    assert_int_equal(qi.cnt.timeouts, 2);
    assert_int_equal(p->conn[0]->qps[0].retry_left, 2); /* reset */
    rp_destroy(p);
}

/* ---- RNR ---- */

static void test_rnr(void **state)
{
    (void)state;
    struct rp_cfg cfg = base_cfg();
    cfg.conn.min_rnr_timer = 14; /* 1.28 ms */
    struct rp *p = rp_create(&cfg);
    assert_int_equal(roce_rnr_timer_ns(14), 1280000);
    assert_int_equal(roce_rnr_timer_ns(0), 655360000);
    assert_int_equal(roce_rnr_timer_ns(1), 10000);
    fill(p->buf[0], 3000, 1);
    struct mroce_send_wr w = wr_of(p, 0, 0, 3000, 0, 1);
    assert_int_equal(roce_post_send(p->conn[0], &w), 0);
    mroce_twloop_run_until(p->loop, NULL, NULL, 3000000);
    struct roce_qp_counters a, b;
    roce_conn_get_counters(p->conn[0], &a);
    roce_conn_get_counters(p->conn[1], &b);
    assert_int_equal(a.rx_rnr_naks, 3); /* at ~0, ~1.28 and ~2.56 ms */
    assert_int_equal(b.tx_rnr_naks, 3);
    assert_int_equal(b.tx_naks, 0); /* no NAK-sequence for the rest */
    assert_true(p->n_tx_times >= 7);
    /* the first packet is resent once per RNR timer (3 packets a round) */
    uint64_t gap = p->tx_times[3] - p->tx_times[0];
    assert_true(gap >= 1280000 && gap < 1290000);
    assert_int_equal(post_recv(p, 1, 0, 0, 4096, 5), 0);
    struct waitc *c = run_cq(p, 0, 1, 10000000);
    assert_int_equal(c->got, 1);
    assert_int_equal(c->wc[0].status, MROCE_WC_SUCCESS);
    c = run_cq(p, 1, 1, mroce_twloop_now(p->loop) + 1000000);
    assert_int_equal(c->wc[0].byte_len, 3000);
    assert_memory_equal(p->buf[1], p->buf[0], 3000);
    rp_destroy(p);
}

static void test_rnr_exhausted(void **state)
{
    (void)state;
    struct rp_cfg cfg = base_cfg();
    cfg.conn.min_rnr_timer = 1; /* 10 us */
    cfg.conn.rnr_retry = 2;
    struct rp *p = rp_create(&cfg);
    struct mroce_send_wr w = wr_of(p, 0, 0, 10, 0, 1);
    assert_int_equal(roce_post_send(p->conn[0], &w), 0);
    w.wr_id = 2;
    assert_int_equal(roce_post_write(p->conn[0], &w), 0);
    struct waitc *c = run_cq(p, 0, 2, 10000000);
    assert_int_equal(c->got, 2);
    assert_int_equal(c->wc[0].status, MROCE_WC_RNR_RETRY_EXC_ERR);
    assert_int_equal(c->wc[1].status, MROCE_WC_WR_FLUSH_ERR);
    struct roce_qp_counters a;
    roce_conn_get_counters(p->conn[0], &a);
    assert_int_equal(a.rx_rnr_naks, 3);
    rp_destroy(p);
}

/* ---- DCQCN ---- */

/* The rate machine alone, with synthetic CNPs: a cut by alpha/2 (alpha
 * starts at 1), alpha = (1-g) alpha + g, fast recovery halves the
 * distance to Rt each timer period, additive increase after F steps. */
static void test_dcqcn_rate_machine(void **state)
{
    (void)state;
    struct rp_cfg cfg = base_cfg();
    cfg.dev.dcqcn = 1;
    cfg.dev.link_mbps = 100000;
    struct rp *p = rp_create(&cfg);
    struct roce_qp *qp = &p->conn[0]->qps[0];
    uint64_t now = 1000;
    roce_rp_on_cnp(qp, now);
    assert_true(qp->rp.limited);
    assert_true(qp->rp.rc == 50000.0 && qp->rp.rt == 100000.0);
    assert_true(qp->rp.alpha == 1.0); /* (1 - g) * 1 + g */
    roce_rp_on_cnp(qp, now + 1);
    assert_true(qp->rp.rc == 25000.0 && qp->rp.rt == 50000.0);
    /* alpha decays every K = 55 us without CNPs; T = 55 us increases:
     * fast recovery while max(T, BC) < F = 5 */
    double rc = qp->rp.rc;
    for (int i = 1; i <= 4; i++) {
        now += 55000;
        roce_rp_timers(qp, now + 1);
        assert_true(qp->rp.rt == 50000.0); /* fast recovery keeps Rt */
        assert_true(qp->rp.rc > rc);
        rc = qp->rp.rc;
    }
    assert_true(qp->rp.alpha < 1.0 && qp->rp.alpha > 0.98);
    now += 55000;
    roce_rp_timers(qp, now + 1); /* stage 5: additive */
    assert_true(qp->rp.rt == 50000.0 + 40.0);
    rp_destroy(p);
}

/* The transmit round-robin asks only QPs that may have something to send
 * (dev.c, "The ready set"): a rate-limited QP that found itself paced is
 * asked again once its pace time has come, even if no timer of it has run
 * in between (a packet of another QP can bring the device back first);
 * and a QP with nothing to send is not asked, but a post makes it send. */
static void test_ready_set_pacing(void **state)
{
    (void)state;
    struct rp_cfg cfg = base_cfg();
    cfg.dev.dcqcn = 1;
    cfg.dev.link_mbps = 100000;
    struct rp *p = rp_create(&cfg);
    struct roce_dev *dev = p->dev[0];
    struct roce_qp *qp = &p->conn[0]->qps[0];
    uint8_t buf[ROCE_MTU_MAX + ROCE_MAX_OVERHEAD];
    struct mroce_pkt_meta m;
    uint64_t now = 1000;
    assert_int_equal(roce_dev_tx(dev, now, buf, sizeof(buf), &m), 0);
    fill(p->buf[0], 4096, 3);
    struct mroce_send_wr w = wr_of(p, 0, 0, 4096, 0, 1);
    assert_int_equal(roce_post_write(p->conn[0], &w), 0);
    roce_rp_on_cnp(qp, now); /* rate-limited from now on */
    assert_true(roce_dev_tx(dev, now, buf, sizeof(buf), &m) > 0);
    uint64_t at = qp->pace_at;
    assert_true(at > now);
    assert_int_equal(roce_dev_tx(dev, now + 1, buf, sizeof(buf), &m), 0);
    assert_int_equal(roce_dev_tx(dev, at - 1, buf, sizeof(buf), &m), 0);
    assert_true(roce_dev_tx(dev, at, buf, sizeof(buf), &m) > 0); /* no timer */
    rp_destroy(p);
}

/* CE marks from the wire's ECN threshold: the sender overruns a 10 Gb/s
 * wire at its 100 Gb/s line rate, the backlog crosses the threshold, the
 * receiver's NP sends CNPs (at most one per 50 us), the sender's rate
 * drops below the wire rate, and once the traffic ends it climbs back. */
static void test_dcqcn_ecn(void **state)
{
    (void)state;
    struct rp_cfg cfg = base_cfg();
    cfg.wire.rate_bps = 10000000000ull;
    cfg.wire.ecn_threshold_bytes = 30000;
    cfg.wire.capacity = 8192;
    cfg.loop.no_pace = 1; /* the engine, not the loop, paces */
    cfg.dev.dcqcn = 1;
    cfg.dev.link_mbps = 100000;
    cfg.conn.mtu = 4096;
    struct rp *p = rp_create(&cfg);
    const uint32_t len = 1u << 20;
    fill(p->buf[0], 8 * len, 4);
    for (int i = 0; i < 8; i++) {
        struct mroce_send_wr w =
            wr_of(p, 0, (uint64_t)i * len, len, (uint64_t)i * len, (uint64_t)i);
        assert_int_equal(roce_post_write(p->conn[0], &w), 0);
    }
    double min_rate = 1e18;
    struct waitc *c = NULL;
    uint64_t start = mroce_twloop_now(p->loop);
    for (uint64_t t = 20000; t < 100000000; t += 20000) {
        c = run_cq(p, 0, 1, t);
        struct roce_qp_info qi;
        roce_conn_qp_info(p->conn[0], 0, &qi);
        if (qi.rate_mbps < min_rate)
            min_rate = qi.rate_mbps;
        if (p->conn[0]->qps[0].sq_head == p->conn[0]->qps[0].sq_tail)
            break;
    }
    (void)c;
    uint64_t dur = mroce_twloop_now(p->loop) - start;
    assert_memory_equal(p->buf[1], p->buf[0], 8 * len);
    struct roce_qp_counters a, b;
    struct mroce_tw_stats ts;
    roce_conn_get_counters(p->conn[0], &a);
    roce_conn_get_counters(p->conn[1], &b);
    mroce_tw_stats(p->tw, &ts);
    printf("  DCQCN: %llu CE marks, %llu CNPs in %.2f ms, min rate %.0f "
           "Mb/s, %llu cuts, %llu increases\n",
           (unsigned long long)ts.ecn_marked, (unsigned long long)b.tx_cnps,
           dur / 1e6, min_rate, (unsigned long long)a.rate_decreases,
           (unsigned long long)a.rate_increases);
    assert_true(ts.ecn_marked > 0);
    assert_int_equal(b.rx_ecn_ce, ts.ecn_marked);
    assert_true(b.tx_cnps > 0 && b.tx_cnps <= dur / 50000 + 1);
    assert_int_equal(a.rx_cnps, b.tx_cnps);
    assert_int_equal(a.rate_decreases, a.rx_cnps);
    assert_true(min_rate < 10000.0);
    /* recovery with no traffic: timer-driven increases back to line */
    mroce_twloop_run_until(p->loop, NULL, NULL,
                           mroce_twloop_now(p->loop) + 400000000ull);
    struct roce_qp_info qi;
    roce_conn_qp_info(p->conn[0], 0, &qi);
    printf("  DCQCN: back to %.0f Mb/s (alpha %.4f) after recovery\n",
           qi.rate_mbps, qi.alpha);
    assert_true(qi.rate_mbps == 100000.0);
    rp_destroy(p);
}

/* ---- k QPs per stream ---- */

/* 2 streams x 4 QPs: whole messages round-robin over a stream's QPs, each
 * QP on its own UDP source port; completions per stream in post order;
 * receives matched across QPs; with loss too. */
static void scaling_run(double loss)
{
    struct rp_cfg cfg = base_cfg();
    cfg.wire.loss = loss;
    cfg.wire.n_routes = 8;
    cfg.wire.jitter_ns = 3000; /* routes differ: QPs' packets reorder */
    cfg.conn.n_streams = 2;
    cfg.conn.qps_per_stream = 4;
    cfg.conn.timeout = 8;
    struct rp *p = rp_create(&cfg);
    assert_int_equal(roce_conn_n_qps(p->conn[0]), 8);
    const int per = 40;
    const uint32_t len = 3000;
    fill(p->buf[0], 2 * per * 4096, 8);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < per; i++) {
            int k = s * per + i;
            uint64_t off = (uint64_t)k * 4096;
            if (i % 4 != 0)
                assert_int_equal(
                    post_recv(p, 1, (uint16_t)s, off, 4096, (uint64_t)k), 0);
            struct mroce_send_wr w = wr_of(p, 0, off, len, off, (uint64_t)k);
            w.stream = (uint16_t)s;
            int rc;
            switch (i % 4) {
            case 0:
                rc = roce_post_write(p->conn[0], &w);
                break;
            case 1:
                rc = roce_post_send(p->conn[0], &w);
                break;
            case 2:
                rc = roce_post_write_imm(p->conn[0], &w);
                break;
            default:
                rc = roce_post_send_imm(p->conn[0], &w);
                break;
            }
            assert_int_equal(rc, 0);
        }
    struct waitc *c = run_cq(p, 0, 2 * per, 20000000000ull);
    assert_int_equal(c->got, 2 * per);
    int next[2] = {0, 0};
    for (int i = 0; i < 2 * per; i++) {
        assert_int_equal(c->wc[i].status, MROCE_WC_SUCCESS);
        int s = c->wc[i].stream;
        assert_int_equal(c->wc[i].wr_id, (uint64_t)(s * per + next[s]++));
    }
    c = run_cq(p, 1, 2 * per * 3 / 4, mroce_twloop_now(p->loop) + 1000000000);
    assert_int_equal(c->got, 2 * per * 3 / 4);
    int last[2] = {-1, -1};
    for (int i = 0; i < c->got; i++) {
        int s = c->wc[i].stream;
        assert_int_equal(c->wc[i].status, MROCE_WC_SUCCESS);
        assert_true((int)c->wc[i].wr_id > last[s]); /* post order */
        last[s] = (int)c->wc[i].wr_id;
        assert_int_equal(c->wc[i].byte_len, len);
    }
    for (int k = 0; k < 2 * per; k++)
        assert_memory_equal(p->buf[1] + k * 4096, p->buf[0] + k * 4096, len);
    uint16_t ports[8];
    for (uint32_t q = 0; q < 8; q++) {
        struct roce_qp_info qi;
        assert_int_equal(roce_conn_qp_info(p->conn[0], q, &qi), 0);
        assert_true(qi.cnt.msgs_tx >= 9 && qi.cnt.msgs_tx <= 11);
        ports[q] = qi.src_port;
        for (uint32_t j = 0; j < q; j++)
            assert_true(ports[j] != ports[q]);
    }
    rp_destroy(p);
}

static void test_qp_scaling(void **state)
{
    (void)state;
    scaling_run(0);
    scaling_run(0.02);
}

/* READs under loss: lost responses and lost requests are both recovered
 * by asking again for the remaining bytes, which the responder serves
 * again (duplicate READ re-executed). */
static void test_read_loss(void **state)
{
    (void)state;
    struct rp_cfg cfg = base_cfg();
    cfg.wire.loss = 0.03;
    cfg.conn.timeout = 8;
    cfg.conn.mtu = 1024;
    struct rp *p = rp_create(&cfg);
    fill(p->buf[1], 1 << 20, 6);
    for (int i = 0; i < 32; i++) {
        struct mroce_send_wr w = wr_of(p, 0, (uint64_t)i * 32768, 32768,
                                       (uint64_t)i * 32768, (uint64_t)i);
        assert_int_equal(roce_post_read(p->conn[0], &w), 0);
    }
    struct waitc *c = run_cq(p, 0, 32, 20000000000ull);
    assert_int_equal(c->got, 32);
    for (int i = 0; i < 32; i++) {
        assert_int_equal(c->wc[i].status, MROCE_WC_SUCCESS);
        assert_int_equal(c->wc[i].wr_id, (uint64_t)i);
    }
    assert_memory_equal(p->buf[0], p->buf[1], 1 << 20);
    struct roce_qp_counters a, b;
    roce_conn_get_counters(p->conn[0], &a);
    roce_conn_get_counters(p->conn[1], &b);
    assert_true(a.retries > 0);
    rp_destroy(p);
}

/* ---- tshark: an independent parser of what the engine writes ---- */

static int have_tshark(void)
{
    return system("command -v tshark >/dev/null 2>&1") == 0;
}

/* One line per frame: opcode, dest QP, PSN, RETH va, r_key, DMA length,
 * as the dissector prints them. */
static void expect_line(const struct cap *c, char *out, size_t n)
{
    struct roce_hdr h;
    decode_cap(c, &h);
    const struct roce_op_info *oi = roce_op_info(h.opcode);
    if (oi->headers & ROCE_H_RETH)
        snprintf(out, n, "%u\t0x%06x\t%u\t0x%016llx\t0x%08x\t%u", h.opcode,
                 h.dqpn, h.psn, (unsigned long long)h.va, h.rkey, h.dma_len);
    else
        snprintf(out, n, "%u\t0x%06x\t%u\t\t\t", h.opcode, h.dqpn, h.psn);
}

static void test_tshark_decodes(void **state)
{
    (void)state;
    if (!have_tshark()) {
        printf("  SKIP: tshark not installed (apt-get install tshark)\n");
        skip();
    }
    char path[] = "/tmp/roce_tshark_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    struct rp_cfg cfg = base_cfg();
    struct rp *p = rp_create(&cfg);
    assert_int_equal(mroce_pcap_open(path, &p->pcap), 0);
    p->capture = 1;
    assert_int_equal(post_recv(p, 1, 0, 0, 8192, 100), 0);
    assert_int_equal(post_recv(p, 1, 0, 0, 8192, 101), 0);
    assert_int_equal(post_recv(p, 1, 0, 0, 8192, 102), 0);
    struct mroce_send_wr w = wr_of(p, 0, 0, 2500, 4096, 1);
    assert_int_equal(roce_post_write(p->conn[0], &w), 0); /* F/M/L */
    w = wr_of(p, 0, 0, 100, 16384, 2);
    assert_int_equal(roce_post_write_imm(p->conn[0], &w), 0);
    assert_int_equal(roce_post_send(p->conn[0], &w), 0);
    w.sge.length = 1500;
    assert_int_equal(roce_post_send_imm(p->conn[0], &w), 0);
    w = wr_of(p, 0, 65536, 3000, 32768, 5);
    assert_int_equal(roce_post_read(p->conn[0], &w), 0); /* 3 responses */
    struct waitc *c = run_cq(p, 0, 5, 10000000);
    assert_int_equal(c->got, 5);
    /* a CE-marked copy of the last request makes the receiver send a CNP
     * (and re-ACK the duplicate) */
    struct cap ce = p->caps[0];
    ce.m.ecn = MROCE_ECN_CE;
    cfg.dev.dcqcn = 1;
    p->dev[1]->attr.dcqcn = 1;
    uint64_t now = mroce_twloop_now(p->loop);
    assert_int_equal(roce_dev_rx(p->dev[1], now, &ce.m, ce.b, ce.len), 0);
    mroce_twloop_run_until(p->loop, NULL, NULL, now + 100000);
    assert_int_equal(mroce_pcap_close(p->pcap), 0);
    p->pcap = NULL;
    assert_int_equal(p->caps[p->n_caps - 2].b[0], ROCE_OP_CNP);
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "tshark -r %s -T fields -e infiniband.bth.opcode "
             "-e infiniband.bth.destqp -e infiniband.bth.psn "
             "-e infiniband.reth.va -e infiniband.reth.r_key "
             "-e infiniband.reth.dmalen 2>/dev/null",
             path);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    char line[256], want[256];
    uint32_t i = 0;
    printf("  tshark -r %s -T fields -e infiniband.bth.opcode ...:\n", path);
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = 0;
        printf("    %s\n", line);
        assert_true(i < p->n_caps);
        expect_line(&p->caps[i++], want, sizeof(want));
        assert_string_equal(line, want);
    }
    pclose(f);
    assert_int_equal(i, p->n_caps);
    assert_true(i >= 15);
    unlink(path);
    rp_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_op_exact),
        cmocka_unit_test(test_no_icrc),
        cmocka_unit_test(test_packet_format),
        cmocka_unit_test(test_post_errors),
        cmocka_unit_test(test_rx_checks),
        cmocka_unit_test(test_dcqcn_error_quiet),
        cmocka_unit_test(test_gbn_one_loss),
        cmocka_unit_test(test_gbn_loss),
        cmocka_unit_test(test_timeout_ladder),
        cmocka_unit_test(test_outage_recovers),
        cmocka_unit_test(test_rnr),
        cmocka_unit_test(test_rnr_exhausted),
        cmocka_unit_test(test_dcqcn_rate_machine),
        cmocka_unit_test(test_ready_set_pacing),
        cmocka_unit_test(test_dcqcn_ecn),
        cmocka_unit_test(test_qp_scaling),
        cmocka_unit_test(test_read_loss),
        cmocka_unit_test(test_tshark_decodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
