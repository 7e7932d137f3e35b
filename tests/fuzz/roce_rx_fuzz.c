/* libFuzzer target for the RoCEv2 engine's receive path (src/roce),
 * driven through the public API (mroce_ctx_attr.transport = ROCEV2,
 * no_icrc = 1 so inputs need no valid ICRC).
 *
 * One context, one connection (2 streams x 2 QPs) to an invented peer
 * whose QPNs and first PSNs (near the 24-bit wrap) are made up here. The
 * engine is kept across inputs and reset (close + reopen) every
 * ROCE_RX_FUZZ_RESET_EVERY inputs (default 32) and whenever the
 * connection has left CONNECTED; a crash therefore may need the inputs
 * since the last reset (run with ROCE_RX_FUZZ_RESET_EVERY=1 to find a
 * self-contained reproducer).
 *
 * An input is a sequence of records `sel len body[len]`; sel % 8 picks:
 *   0 REQ_MSG   a whole request message of the peer (SEND, SEND_IMM,
 *               WRITE, WRITE_IMM, READ_REQ) split at the PMTU, at the
 *               expected PSN of a QP, to a fuzzer-chosen target
 *               (writable, read-only, other-PD region, local slots, any
 *               va/rkey), with drop/dup/reverse/PSN-shift tweaks;
 *   1 REQ_PKT   one request packet, every field fuzzer-chosen (opcode,
 *               PSN near the expected one, RETH, payload length, pad);
 *   2 ACK       an ACK/NAK/RNR NAK near the PSNs the engine has sent,
 *               fuzzer syndrome and MSN;
 *   3 READ_RESP an answer to one of the engine's READ_REQs (bendable);
 *   4 CNP       a CNP to a QP;
 *   5 RAW       raw bytes, optionally with TVer and DestQP made valid;
 *   6 TIME      a clock jump, then the timers;
 *   7 API       post a WRITE, READ, SEND or receive.
 * After each record tx is drained and both CQs polled; after each input
 * the timers fire a few times.
 *
 * Oracles (abort): guard bytes around every region and between receive
 * slots; the read-only and the other-PD regions never change; free slots
 * (no posted receive or READ) stay untouched; every completion names an
 * outstanding WR of its stream on the right CQ (so never more completions
 * than posted WRs); in ERROR nothing is left outstanding; every emitted
 * packet decodes and is addressed to the peer; tx stops; rx returns 0 or
 * EPROTO; no allocation after setup; close frees everything. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/mroce.h>

#include "wire/roce.h"
#include "fuzz/fuzz_rd.h"

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "roce_rx_fuzz: %s:%d: check failed: %s\n",         \
                    __FILE__, __LINE__, #cond);                                \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define T0 1000000ull
#define MTU 256
#define N_STREAMS 2
#define QPS_PER_STREAM 2
#define N_QPS (N_STREAMS * QPS_PER_STREAM)
#define SQ_DEPTH 4
#define RQ_DEPTH 4
#define CQ_DEPTH 64
#define FILL 0xA5
#define GUARD 64
#define SLOT_LEN 1024
#define SLOT_GAP 32
#define N_SLOTS (N_STREAMS * (SQ_DEPTH + RQ_DEPTH))
#define MAX_DRAIN 4096
#define PKT_CAP 8192
#define MAX_MSG 1400
#define N_READS 16

enum { R_RW, R_RO, R_LOCAL, R_OTHER, N_REG };

#define ACC_ALL                                                                \
    (MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |                    \
     MROCE_ACCESS_REMOTE_READ)

static const struct {
    size_t len;
    unsigned access;
    bool other_pd;
} reg_spec[N_REG] = {
    [R_RW] = {2048, ACC_ALL, false},
    [R_RO] = {2048, MROCE_ACCESS_REMOTE_READ, false},
    [R_LOCAL] = {N_SLOTS * (SLOT_LEN + SLOT_GAP), MROCE_ACCESS_LOCAL_WRITE,
                 false},
    [R_OTHER] = {512, ACC_ALL, true},
};

struct region {
    uint8_t *block; /* guard | len | guard */
    uint8_t *base;
    size_t len;
    struct mroce_mr *mr;
    uint32_t key;
};

struct wr {
    bool used;
    uint64_t id;
    uint8_t wc_op; /* expected mroce_wc_opcode */
    uint32_t len;
    int slot; /* receive or READ destination, else -1 */
};

struct fz {
    uint64_t now;
    struct mroce_ctx *ctx;
    struct mroce_pd *pd, *pd2;
    struct mroce_cq *scq, *rcq;
    struct mroce_conn *conn;
    struct mroce_conn_params local, remote;
    struct region reg[N_REG];
    uint8_t ro_pattern[2048];
    bool slot_used[N_SLOTS];
    struct wr sq[N_STREAMS][SQ_DEPTH], rq[N_STREAMS][RQ_DEPTH];
    uint64_t next_id;
    /* the peer: next request PSN per QP; what the engine sent */
    uint32_t peer_psn[N_QPS];
    bool eng_any[N_QPS];
    uint32_t eng_high[N_QPS]; /* last request PSN the engine sent */
    uint32_t eng_msn[N_QPS];  /* ACK MSN the peer reports */
    struct {
        uint8_t q;
        uint32_t psn, len;
    } reads[N_READS];
    unsigned n_reads;
    uint8_t ecn;
    uint64_t allocs_live, alloc_calls, alloc_calls_setup;
    unsigned inputs, reset_every;
};

static struct fz g;

static void *fz_alloc(void *ud, size_t size)
{
    (void)ud;
    void *p = calloc(1, size);
    if (p) {
        g.allocs_live++;
        g.alloc_calls++;
    }
    return p;
}

static void fz_free(void *ud, void *p)
{
    (void)ud;
    if (p)
        g.allocs_live--;
    free(p);
}

/* ---- input reading ---- */

/* ---- memory ---- */

static uint8_t *slot_addr(int i)
{
    return g.reg[R_LOCAL].base + (size_t)i * (SLOT_LEN + SLOT_GAP);
}

static int slot_get(void)
{
    for (int i = 0; i < N_SLOTS; i++)
        if (!g.slot_used[i]) {
            g.slot_used[i] = true;
            return i;
        }
    return -1;
}

static void slot_put(int i)
{
    if (i < 0)
        return;
    memset(slot_addr(i), FILL, SLOT_LEN);
    g.slot_used[i] = false;
}

static bool all_fill(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != FILL)
            return false;
    return true;
}

static void check_memory(void)
{
    for (int k = 0; k < N_REG; k++) {
        CHECK(all_fill(g.reg[k].base - GUARD, GUARD));
        CHECK(all_fill(g.reg[k].base + g.reg[k].len, GUARD));
    }
    CHECK(memcmp(g.reg[R_RO].base, g.ro_pattern, g.reg[R_RO].len) == 0);
    CHECK(all_fill(g.reg[R_OTHER].base, g.reg[R_OTHER].len));
    for (int i = 0; i < N_SLOTS; i++) {
        CHECK(all_fill(slot_addr(i) + SLOT_LEN, SLOT_GAP));
        CHECK(g.slot_used[i] || all_fill(slot_addr(i), SLOT_LEN));
    }
}

static void mem_fresh(void)
{
    for (int k = 0; k < N_REG; k++) {
        struct region *r = &g.reg[k];
        r->len = reg_spec[k].len;
        if (!r->block)
            r->block = malloc(r->len + 2 * GUARD);
        CHECK(r->block);
        r->base = r->block + GUARD;
        memset(r->block, FILL, r->len + 2 * GUARD);
    }
    memcpy(g.reg[R_RO].base, g.ro_pattern, g.reg[R_RO].len);
}

/* ---- completions ---- */

static void check_wc(const struct mroce_wc *wc, bool recv)
{
    CHECK(wc->stream < N_STREAMS);
    struct wr *q = recv ? g.rq[wc->stream] : g.sq[wc->stream];
    int n = recv ? RQ_DEPTH : SQ_DEPTH;
    struct wr *w = NULL;
    for (int i = 0; i < n; i++)
        if (q[i].used && q[i].id == wc->wr_id)
            w = &q[i];
    CHECK(w != NULL); /* an outstanding WR, never completed twice */
    if (wc->status == MROCE_WC_SUCCESS) {
        if (recv) {
            CHECK(wc->opcode == MROCE_WC_RECV ||
                  wc->opcode == MROCE_WC_RECV_RDMA_WITH_IMM);
            CHECK(wc->opcode == MROCE_WC_RECV_RDMA_WITH_IMM ||
                  wc->byte_len <= w->len);
        } else {
            CHECK(wc->opcode == w->wc_op);
        }
    }
    slot_put(w->slot);
    w->used = false;
}

static unsigned outstanding(void)
{
    unsigned n = 0;
    for (int s = 0; s < N_STREAMS; s++) {
        for (int i = 0; i < SQ_DEPTH; i++)
            n += g.sq[s][i].used;
        for (int i = 0; i < RQ_DEPTH; i++)
            n += g.rq[s][i].used;
    }
    return n;
}

static void poll_all(void)
{
    struct mroce_wc wc[16];
    int n;
    while ((n = mroce_poll_cq(g.scq, 16, wc)) > 0)
        for (int i = 0; i < n; i++)
            check_wc(&wc[i], false);
    CHECK(n == 0);
    while ((n = mroce_poll_cq(g.rcq, 16, wc)) > 0)
        for (int i = 0; i < n; i++)
            check_wc(&wc[i], true);
    CHECK(n == 0);
    if (mroce_conn_state(g.conn) == MROCE_CONN_ERROR)
        CHECK(outstanding() == 0); /* flushed */
}

/* ---- posting ---- */

static struct wr *wr_free(struct wr *q, int n)
{
    for (int i = 0; i < n; i++)
        if (!q[i].used)
            return &q[i];
    return NULL;
}

/* kind: 0 WRITE, 1 WRITE_IMM, 2 SEND, 3 SEND_IMM, 4 READ */
static void post_send(int kind, uint16_t stream, uint32_t len, uint64_t raddr,
                      uint32_t rkey)
{
    struct wr *w = wr_free(g.sq[stream], SQ_DEPTH);
    if (!w)
        return;
    int slot = -1;
    struct mroce_send_wr wr = {.wr_id = ++g.next_id,
                               .stream = stream,
                               .remote_addr = raddr,
                               .rkey = rkey,
                               .imm = 0x1234u + (uint32_t)g.next_id};
    if (kind == 4) {
        slot = slot_get();
        if (slot < 0)
            return;
        len %= SLOT_LEN + 1;
        wr.sge = (struct mroce_sge){(uint64_t)(uintptr_t)slot_addr(slot), len,
                                    g.reg[R_LOCAL].key};
    } else {
        len %= (uint32_t)g.reg[R_RO].len + 1;
        wr.sge = (struct mroce_sge){(uint64_t)(uintptr_t)g.reg[R_RO].base, len,
                                    g.reg[R_RO].key};
    }
    int err;
    uint8_t op;
    switch (kind) {
    case 0:
        err = mroce_post_write(g.conn, &wr);
        op = MROCE_WC_RDMA_WRITE;
        break;
    case 1:
        err = mroce_post_write_imm(g.conn, &wr);
        op = MROCE_WC_RDMA_WRITE;
        break;
    case 2:
        err = mroce_post_send(g.conn, &wr);
        op = MROCE_WC_SEND;
        break;
    case 3:
        err = mroce_post_send_imm(g.conn, &wr);
        op = MROCE_WC_SEND;
        break;
    default:
        err = mroce_post_read(g.conn, &wr);
        op = MROCE_WC_RDMA_READ;
        break;
    }
    if (err) {
        CHECK(err == MROCE_EAGAIN || err == MROCE_ESTATE);
        if (slot >= 0)
            g.slot_used[slot] = false;
        return;
    }
    *w = (struct wr){true, wr.wr_id, op, len, slot};
}

static void post_recv(uint16_t stream, uint32_t len)
{
    struct wr *w = wr_free(g.rq[stream], RQ_DEPTH);
    if (!w)
        return;
    int slot = slot_get();
    if (slot < 0)
        return;
    len %= SLOT_LEN + 1;
    struct mroce_recv_wr wr = {
        .wr_id = ++g.next_id,
        .stream = stream,
        .sge = {(uint64_t)(uintptr_t)slot_addr(slot), len, g.reg[R_LOCAL].key}};
    int err = mroce_post_recv(g.conn, &wr);
    if (err) {
        CHECK(err == MROCE_EAGAIN || err == MROCE_ESTATE);
        g.slot_used[slot] = false;
        return;
    }
    *w = (struct wr){true, wr.wr_id, MROCE_WC_RECV, len, slot};
}

/* Keeps receives posted so SENDs from the peer have somewhere to go. */
static void topup(void)
{
    for (uint16_t s = 0; s < N_STREAMS; s++)
        for (int i = 0; i < 2; i++)
            post_recv(s, 64u << (s + i));
}

/* ---- the engine's packets ---- */

static int qp_of_qpn(uint32_t qpn, const struct mroce_conn_params *p)
{
    for (int i = 0; i < N_QPS; i++)
        if (p->qpn[i] == qpn)
            return i;
    return -1;
}

static void on_tx(const uint8_t *buf, int n, const struct mroce_pkt_meta *m)
{
    CHECK(n > 0 && (size_t)n <= mroce_ctx_max_pkt(g.ctx));
    CHECK(m->dst_port == ROCE_UDP_PORT);
    CHECK(m->dst.family == g.remote.addr.family &&
          memcmp(m->dst.ip, g.remote.addr.ip, 4) == 0);
    struct roce_hdr h;
    CHECK(roce_decode(NULL, buf, (size_t)n, &h) == ROCE_WIRE_OK);
    int q = qp_of_qpn(h.dqpn, &g.remote);
    CHECK(q >= 0);
    const struct roce_op_info *oi = roce_op_info(h.opcode);
    if (oi->kind == ROCE_K_SEND || oi->kind == ROCE_K_WRITE ||
        oi->kind == ROCE_K_READ_REQ) {
        CHECK(h.payload_len <= MTU);
        if (!g.eng_any[q] || roce_psn_diff(h.psn, g.eng_high[q]) > 0) {
            g.eng_high[q] = h.psn;
            g.eng_any[q] = true;
        }
        if (oi->kind == ROCE_K_READ_REQ) {
            unsigned i = g.n_reads++ % N_READS;
            g.reads[i].q = (uint8_t)q;
            g.reads[i].psn = h.psn;
            g.reads[i].len = h.dma_len;
            uint32_t np = h.dma_len ? (h.dma_len + MTU - 1) / MTU : 1;
            g.eng_high[q] = roce_psn_add(h.psn, np - 1);
        }
        if (oi->pos & ROCE_P_LAST || oi->kind == ROCE_K_READ_REQ)
            g.eng_msn[q] = (g.eng_msn[q] + 1) & ROCE_PSN_MASK;
    }
}

static void drain(void)
{
    static uint8_t buf[PKT_CAP];
    for (int i = 0;; i++) {
        CHECK(i < MAX_DRAIN); /* tx stops */
        struct mroce_pkt_meta m;
        int n = mroce_ctx_tx(g.ctx, g.now, buf, sizeof(buf), &m);
        CHECK(n >= 0);
        if (n == 0)
            break;
        on_tx(buf, n, &m);
    }
    poll_all();
}

/* ---- feeding packets ---- */

static void feed_raw(const uint8_t *buf, size_t len)
{
    struct mroce_pkt_meta m = {
        .src = g.remote.addr,
        .dst = g.local.addr,
        .src_port = 49152,
        .dst_port = ROCE_UDP_PORT,
        .ecn = g.ecn,
    };
    uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan */
    CHECK(copy);
    if (len)
        memcpy(copy, buf, len);
    int err = mroce_ctx_rx(g.ctx, g.now, &m, copy, len);
    CHECK(err == 0 || err == MROCE_EPROTO);
    free(copy);
    g.now += 100;
}

/* pad_tweak: 0 the right pad; else the BTH PadCnt is overwritten */
static void feed(const struct roce_hdr *h, const uint8_t *pay, uint32_t plen,
                 uint8_t pad_tweak)
{
    static uint8_t buf[PKT_CAP];
    static const struct roce_ip ip0 = {.src = {MROCE_AF_INET, {0}},
                                       .dst = {MROCE_AF_INET, {0}}};
    if (plen && !(roce_op_info(h->opcode)->headers & ROCE_H_PAYLOAD))
        plen = 0;
    int n = roce_encode(h, &ip0, pay, plen, buf, sizeof(buf));
    CHECK(n > 0);
    if (pad_tweak)
        buf[1] = (uint8_t)((buf[1] & 0xCF) | (pad_tweak & 3) << 4);
    feed_raw(buf, (size_t)n);
}

static const uint8_t *peer_data(void)
{
    static uint8_t d[MAX_MSG + 4];
    if (d[1] == 0)
        for (size_t i = 0; i < sizeof(d); i++)
            d[i] = (uint8_t)(i * 7 + 1);
    return d;
}

static struct roce_hdr peer_hdr(uint8_t op, int q, uint32_t psn)
{
    struct roce_hdr h = {0};
    h.opcode = op;
    h.pkey = ROCE_PKEY_DEFAULT;
    h.dqpn = g.local.qpn[q];
    h.psn = psn & ROCE_PSN_MASK;
    return h;
}

/* A target for the peer's RETH: region (or nothing), offset, key. */
static void rd_target(struct rd *r, uint32_t len, uint64_t *va, uint32_t *rkey)
{
    uint8_t sel = rd_u8(r);
    uint16_t off = rd_u16(r);
    int k = sel % 6;
    if (k >= 4) { /* any va, any key (or a valid one) */
        *va = rd_u64(r);
        *rkey = k == 4 ? rd_u32(r) : g.reg[R_RW].key;
        return;
    }
    struct region *reg = &g.reg[k];
    /* mostly in bounds; the top bit of sel lets it hang over */
    size_t span = reg->len > len ? reg->len - len + 1 : 1;
    uint64_t o = sel & 0x80 ? off : off % span;
    *va = (uint64_t)(uintptr_t)reg->base + o;
    *rkey = sel & 0x40 ? reg->key ^ (1u << (off & 31)) : reg->key;
}

/* Flags of REQ_MSG and READ_RESP. */
#define MF_DROP 0x01
#define MF_DUP 0x02
#define MF_REVERSE 0x04
#define MF_ACKREQ 0x08
#define MF_SHIFT 0x10 /* start PSN shifted by a signed byte */
#define MF_CE 0x20    /* CE-marked */
#define MF_NOADV 0x40 /* the peer does not advance its PSN */
#define MF_FECN 0x80

struct pkt {
    struct roce_hdr h;
    uint32_t off, len;
};

static void send_pkts(struct pkt *p, unsigned np, uint8_t mf, uint8_t drop,
                      const uint8_t *data)
{
    g.ecn = mf & MF_CE ? MROCE_ECN_CE : MROCE_ECN_ECT0;
    for (unsigned j = 0; j < np; j++) {
        unsigned i = mf & MF_REVERSE ? np - 1 - j : j;
        if (mf & MF_DROP && i == drop % np)
            continue;
        p[i].h.ackreq = p[i].h.ackreq || (mf & MF_ACKREQ);
        p[i].h.fecn = (mf & MF_FECN) != 0;
        int times = (mf & MF_DUP) && j == 0 ? 2 : 1;
        for (int t = 0; t < times; t++)
            feed(&p[i].h, data + p[i].off, p[i].len, 0);
    }
    g.ecn = MROCE_ECN_ECT0;
}

static void rec_req_msg(struct rd *r)
{
    static const uint8_t only[5] = {ROCE_OP_SEND_ONLY, ROCE_OP_SEND_ONLY_IMM,
                                    ROCE_OP_WRITE_ONLY, ROCE_OP_WRITE_ONLY_IMM,
                                    ROCE_OP_READ_REQ};
    uint8_t kind = rd_u8(r) % 5;
    int q = rd_u8(r) % N_QPS;
    uint32_t len = rd_u16(r) % (MAX_MSG + 1);
    uint8_t mf = rd_u8(r);
    uint8_t drop = rd_u8(r);
    int8_t shift = (int8_t)rd_u8(r);
    uint32_t imm = rd_u32(r);
    uint64_t va;
    uint32_t rkey;
    rd_target(r, len, &va, &rkey);
    uint32_t psn = g.peer_psn[q];
    if (mf & MF_SHIFT)
        psn = roce_psn_add(psn, (uint32_t)(int32_t)shift);
    static struct pkt p[MAX_MSG / MTU + 2];
    unsigned np = 0;
    bool send = kind < 2, with_imm = kind == 1 || kind == 3;
    if (kind == 4) {
        p[0].h = peer_hdr(ROCE_OP_READ_REQ, q, psn);
        p[0].h.va = va;
        p[0].h.rkey = rkey;
        p[0].h.dma_len = len;
        p[0].h.ackreq = 1;
        p[0].off = p[0].len = 0;
        np = 1;
        send_pkts(p, np, mf & ~MF_DROP, drop, peer_data());
        if (!(mf & MF_NOADV))
            g.peer_psn[q] = roce_psn_add(psn, len ? (len + MTU - 1) / MTU : 1);
        return;
    }
    uint32_t n = len ? (len + MTU - 1) / MTU : 1;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t op;
        if (n == 1)
            op = only[kind];
        else if (i == 0)
            op = send ? ROCE_OP_SEND_FIRST : ROCE_OP_WRITE_FIRST;
        else if (i + 1 < n)
            op = send ? ROCE_OP_SEND_MIDDLE : ROCE_OP_WRITE_MIDDLE;
        else if (send)
            op = with_imm ? ROCE_OP_SEND_LAST_IMM : ROCE_OP_SEND_LAST;
        else
            op = with_imm ? ROCE_OP_WRITE_LAST_IMM : ROCE_OP_WRITE_LAST;
        struct pkt *k = &p[np++];
        k->h = peer_hdr(op, q, roce_psn_add(psn, i));
        k->h.va = va;
        k->h.rkey = rkey;
        k->h.dma_len = len;
        k->h.imm = imm;
        k->h.ackreq = i + 1 == n;
        k->off = i * MTU;
        k->len = i + 1 < n ? MTU : len - i * MTU;
    }
    send_pkts(p, np, mf, drop, peer_data());
    if (!(mf & MF_NOADV))
        g.peer_psn[q] = roce_psn_add(psn, n);
}

static void rec_req_pkt(struct rd *r)
{
    uint8_t opsel = rd_u8(r);
    int q = rd_u8(r) % N_QPS;
    int8_t shift = (int8_t)rd_u8(r);
    uint8_t fl = rd_u8(r);
    uint32_t plen = rd_u16(r) % (2 * MTU + 1);
    uint32_t psn = roce_psn_add(g.peer_psn[q], (uint32_t)(int32_t)shift);
    uint8_t op =
        opsel < 0xF0 ? (uint8_t)(opsel % 0x0D) : (uint8_t)(opsel & 0x1F);
    if (!roce_op_info(op))
        op = ROCE_OP_SEND_ONLY;
    struct roce_hdr h = peer_hdr(op, q, psn);
    rd_target(r, plen, &h.va, &h.rkey);
    h.dma_len = fl & 0x01 ? rd_u32(r) : plen;
    h.imm = rd_u32(r);
    h.se = (fl >> 1) & 1;
    h.ackreq = (fl >> 2) & 1;
    h.becn = (fl >> 3) & 1;
    if (fl & 0x10)
        h.pkey = rd_u16(r);
    g.ecn = fl & 0x20 ? MROCE_ECN_CE : MROCE_ECN_ECT0;
    feed(&h, peer_data(), plen, fl & 0x40 ? rd_u8(r) | 4 : 0);
    g.ecn = MROCE_ECN_ECT0;
    if (fl & 0x80) /* the peer believes it went through */
        g.peer_psn[q] = roce_psn_add(psn, 1);
}

static void rec_ack(struct rd *r)
{
    uint8_t qs = rd_u8(r);
    int8_t shift = (int8_t)rd_u8(r);
    uint8_t syn_sel = rd_u8(r);
    uint8_t msn_sel = rd_u8(r);
    uint32_t msn_raw = rd_u32(r);
    int lo = qs & 0x80 ? 0 : qs % N_QPS, hi = qs & 0x80 ? N_QPS : lo + 1;
    for (int q = lo; q < hi; q++) {
        uint32_t base = g.eng_any[q]
                            ? g.eng_high[q]
                            : roce_psn_add(g.local.psn[q], ROCE_PSN_MASK);
        uint32_t psn =
            qs & 0x40 ? roce_psn_add(base, (uint32_t)(int32_t)shift) : base;
        struct roce_hdr h = peer_hdr(ROCE_OP_ACK, q, psn);
        switch (syn_sel >> 6) {
        case 0:
        case 1:
            h.syndrome = ROCE_AETH_ACK | ROCE_AETH_CREDITS_INVALID;
            break;
        case 2:
            h.syndrome = (uint8_t)(ROCE_AETH_NAK | (syn_sel & 7));
            break;
        default:
            h.syndrome = syn_sel & 0x3F
                             ? (uint8_t)(ROCE_AETH_RNR_NAK | (syn_sel & 0x1F))
                             : (uint8_t)msn_raw;
            break;
        }
        h.msn = msn_sel & 1 ? msn_raw & ROCE_PSN_MASK : g.eng_msn[q];
        if (msn_sel & 2)
            h.becn = 1;
        feed(&h, NULL, 0, 0);
    }
}

static void rec_read_resp(struct rd *r)
{
    if (!g.n_reads)
        return;
    unsigned avail = g.n_reads < N_READS ? g.n_reads : N_READS;
    unsigned idx = rd_u8(r) % avail;
    if (g.n_reads > N_READS)
        idx = (g.n_reads + idx) % N_READS;
    uint8_t mf = rd_u8(r);
    uint8_t drop = rd_u8(r);
    int8_t shift = (int8_t)rd_u8(r);
    int16_t dlen = (int16_t)rd_u16(r);
    uint8_t syn = rd_u8(r);
    int q = g.reads[idx].q;
    uint32_t len = g.reads[idx].len;
    if (mf & MF_NOADV) /* a wrong total length */
        len = (uint32_t)((int32_t)len + dlen) % (MAX_MSG + 1);
    if (len > MAX_MSG)
        len = MAX_MSG;
    uint32_t psn = g.reads[idx].psn;
    if (mf & MF_SHIFT)
        psn = roce_psn_add(psn, (uint32_t)(int32_t)shift);
    uint32_t n = len ? (len + MTU - 1) / MTU : 1;
    static struct pkt p[MAX_MSG / MTU + 2];
    for (uint32_t i = 0; i < n; i++) {
        uint8_t op = n == 1      ? ROCE_OP_READ_RESP_ONLY
                     : i == 0    ? ROCE_OP_READ_RESP_FIRST
                     : i + 1 < n ? ROCE_OP_READ_RESP_MIDDLE
                                 : ROCE_OP_READ_RESP_LAST;
        p[i].h = peer_hdr(op, q, roce_psn_add(psn, i));
        p[i].h.syndrome =
            syn & 0x80 ? syn : ROCE_AETH_ACK | ROCE_AETH_CREDITS_INVALID;
        p[i].h.msn = g.eng_msn[q];
        p[i].off = i * MTU;
        p[i].len = i + 1 < n ? MTU : len - i * MTU;
    }
    send_pkts(p, n, mf, drop, peer_data());
}

static void rec_cnp(struct rd *r)
{
    int q = rd_u8(r) % N_QPS;
    struct roce_hdr h = peer_hdr(ROCE_OP_CNP, q, 0);
    h.becn = 1;
    feed(&h, NULL, 0, 0);
}

static void rec_raw(struct rd *r)
{
    uint8_t fix = rd_u8(r);
    uint8_t buf[256];
    size_t n = r->n;
    memcpy(buf, r->p, n);
    if (fix & 1 && n >= ROCE_BTH_LEN) {
        buf[1] &= 0xF0;
        buf[2] = buf[3] = 0xFF;
        uint32_t qpn = g.local.qpn[(fix >> 1) % N_QPS];
        buf[5] = (uint8_t)(qpn >> 16);
        buf[6] = (uint8_t)(qpn >> 8);
        buf[7] = (uint8_t)qpn;
        if (fix & 0x10) { /* PSN: the expected one */
            uint32_t psn = g.peer_psn[(fix >> 1) % N_QPS];
            buf[9] = (uint8_t)(psn >> 16);
            buf[10] = (uint8_t)(psn >> 8);
            buf[11] = (uint8_t)psn;
        }
    }
    feed_raw(buf, n);
}

static void run_timers(void)
{
    for (int i = 0; i < 4; i++) {
        uint64_t t = mroce_ctx_next_expiry(g.ctx);
        if (t == UINT64_MAX)
            break;
        if (t > g.now)
            g.now = t;
        mroce_ctx_on_expiry(g.ctx, g.now);
        drain();
    }
}

static void rec_time(struct rd *r)
{
    uint8_t sel = rd_u8(r);
    uint32_t v = rd_u32(r);
    g.now += (uint64_t)v << (sel % 24);
    mroce_ctx_on_expiry(g.ctx, g.now);
    drain();
    if (sel & 0x80)
        run_timers();
}

static void rec_api(struct rd *r)
{
    uint8_t a = rd_u8(r);
    uint16_t stream = (uint16_t)(rd_u8(r) % N_STREAMS);
    uint32_t len = rd_u16(r);
    if (a % 6 == 5) {
        post_recv(stream, len);
        return;
    }
    uint64_t raddr = rd_u64(r);
    uint32_t rkey = rd_u32(r);
    post_send(a % 6 == 5 ? 0 : a % 5, stream, len, raddr, rkey);
}

/* ---- setup ---- */

static void fz_open(void)
{
    struct mroce_ctx_attr a = {.deterministic = 1,
                               .seed = 1,
                               .mtu = MTU,
                               .transport = MROCE_TRANSPORT_ROCEV2,
                               .no_icrc = 1};
    a.hooks.alloc = fz_alloc;
    a.hooks.free = fz_free;
    a.addr = (struct mroce_addr){.family = MROCE_AF_INET, .ip = {10, 0, 0, 1}};
    CHECK(mroce_ctx_open(&a, &g.ctx) == 0);
    CHECK(mroce_pd_alloc(g.ctx, &g.pd) == 0);
    CHECK(mroce_pd_alloc(g.ctx, &g.pd2) == 0);
    CHECK(mroce_cq_create(g.ctx, CQ_DEPTH, &g.scq) == 0);
    CHECK(mroce_cq_create(g.ctx, CQ_DEPTH, &g.rcq) == 0);
    mem_fresh();
    for (int k = 0; k < N_REG; k++) {
        struct region *r = &g.reg[k];
        CHECK(mroce_reg_mr(reg_spec[k].other_pd ? g.pd2 : g.pd, r->base, r->len,
                           reg_spec[k].access, &r->mr) == 0);
        r->key = mroce_mr_rkey(r->mr);
    }
    struct mroce_conn_attr ca = {.send_cq = g.scq,
                                 .recv_cq = g.rcq,
                                 .n_streams = N_STREAMS,
                                 .qps_per_stream = QPS_PER_STREAM,
                                 .sq_depth = SQ_DEPTH,
                                 .rq_depth = RQ_DEPTH,
                                 .max_rd = 2,
                                 .retry_cnt = 3,
                                 .rnr_retry = 3,
                                 .rocev2_timeout = 8,
                                 .rocev2_window = 16};
    CHECK(mroce_conn_create(g.pd, &ca, &g.conn) == 0);
    mroce_conn_get_params(g.conn, &g.local);
    CHECK(g.local.transport == MROCE_TRANSPORT_ROCEV2);
    CHECK(g.local.n_qps == N_QPS);
    g.remote = (struct mroce_conn_params){
        .conn_id = 0x100,
        .addr = {.family = MROCE_AF_INET, .ip = {10, 0, 0, 2}},
        .udp_port = ROCE_UDP_PORT,
        .n_streams = N_STREAMS,
        .mtu = MTU,
        .max_rd = 2,
        .transport = MROCE_TRANSPORT_ROCEV2,
        .n_qps = N_QPS,
    };
    for (int i = 0; i < N_QPS; i++) {
        g.remote.qpn[i] = 0x100 + (uint32_t)i * 7;
        /* near the 24-bit wrap */
        g.remote.psn[i] = (0xFFFFF0u + (uint32_t)i * 5) & ROCE_PSN_MASK;
        g.peer_psn[i] = g.remote.psn[i];
        g.eng_high[i] = roce_psn_add(g.local.psn[i], ROCE_PSN_MASK);
    }
    CHECK(mroce_conn_connect(g.conn, &g.remote) == 0);
    g.now = T0;
    topup();
    drain();
    g.alloc_calls_setup = g.alloc_calls;
}

static void fz_close(void)
{
    if (!g.ctx)
        return;
    mroce_ctx_close(g.ctx);
    g.ctx = NULL;
    CHECK(g.allocs_live == 0); /* close frees everything */
}

static void fz_reset(void)
{
    fz_close();
    static struct fz keep;
    keep = g;
    memset(&g, 0, sizeof(g));
    memcpy(g.reg, keep.reg, sizeof(g.reg));
    memcpy(g.ro_pattern, keep.ro_pattern, sizeof(g.ro_pattern));
    g.reset_every = keep.reset_every;
    g.alloc_calls = keep.alloc_calls;
    fz_open();
}

static void fz_exit(void)
{
    fz_close();
    for (int k = 0; k < N_REG; k++)
        free(g.reg[k].block);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *e = getenv("ROCE_RX_FUZZ_RESET_EVERY");
    g.reset_every = e && atoi(e) > 0 ? (unsigned)atoi(e) : 32;
    uint32_t x = 777;
    for (size_t i = 0; i < sizeof(g.ro_pattern); i++) {
        x = x * 1103515245u + 12345u;
        g.ro_pattern[i] = (uint8_t)(x >> 16);
    }
    fz_open();
    atexit(fz_exit);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (++g.inputs > g.reset_every ||
        mroce_conn_state(g.conn) != MROCE_CONN_CONNECTED) {
        fz_reset();
        g.inputs = 1;
    }
    topup();
    drain();
    struct rd in = {data, size};
    while (in.n) {
        uint8_t sel = rd_u8(&in);
        size_t len = rd_u8(&in);
        struct rd body = {in.p, len < in.n ? len : in.n};
        in.p += body.n;
        in.n -= body.n;
        switch (sel % 8) {
        case 0:
            rec_req_msg(&body);
            break;
        case 1:
            rec_req_pkt(&body);
            break;
        case 2:
            rec_ack(&body);
            break;
        case 3:
            rec_read_resp(&body);
            break;
        case 4:
            rec_cnp(&body);
            break;
        case 5:
            rec_raw(&body);
            break;
        case 6:
            rec_time(&body);
            break;
        default:
            rec_api(&body);
            break;
        }
        drain();
        g.now += 1000;
    }
    run_timers();
    check_memory();
    poll_all();
    CHECK(g.alloc_calls == g.alloc_calls_setup); /* no per-packet alloc */
    return 0;
}
