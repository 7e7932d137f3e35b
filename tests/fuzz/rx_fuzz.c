/* libFuzzer target for the engine's receive path (tier 5).
 *
 * One engine context with one connection to a fake peer whose parameters
 * are invented here, set up once and kept across inputs: reset (close +
 * reopen) every RX_FUZZ_RESET_EVERY inputs (default 64) and whenever the
 * connection has left CONNECTED. Because state carries over, a failure
 * writes rx-replay-<pid> (in RX_FUZZ_REPLAY_DIR, default .): the inputs
 * since the last reset joined into one input that replays the same calls
 * on a fresh engine. A crash file alone replays only its own input.
 *
 * The peer announces feature ACKM, so both sides send ACKMs (RX_AF_ACKM
 * turns the peer's ACKs into one, well formed or bent).
 *
 * Each input is a sequence of records (rx_records.h). Most records build
 * well-formed packets with the codec -- right connection id, valid CRC,
 * sequence numbers next to what the peer and the engine have used -- and
 * let the fuzzer bend single fields, so placement, SACK, NACK, READ
 * responses and timers are reached; RX_RAW and RX_MUTATE feed arbitrary
 * bytes. After every record the fuzzer drains mroce_ctx_tx and polls both
 * CQs; after every input it runs the timers a few times.
 *
 * Oracles (abort on violation):
 *  - guard bytes around and between every registered region; regions the
 *    peer may not write (read-only, other PD, unposted receive slots,
 *    deregistered blocks) keep their contents;
 *  - every completion names the oldest outstanding WR of its stream (so
 *    the CQs never hold more than was posted, nothing completes twice),
 *    with a consistent opcode and length; outside CONNECTED nothing is
 *    left outstanding (flushed) and every region deregisters (no
 *    reference left, R-MSG-17);
 *  - mroce_dereg_mr says EBUSY exactly while a posted WR uses the region
 *    (or, for readable regions, possibly a READ response);
 *  - every packet the engine emits decodes, is addressed to the peer, and
 *    a data packet of one of our WRs carries that WR's fields and bytes;
 *    an ACKM is well formed, its records for distinct paths other than
 *    its MTH path, each with its sack_high's bit set (section 3.15);
 *    mroce_ctx_tx stops returning packets;
 *  - mroce_ctx_rx returns 0 or MROCE_EPROTO, and counts every call;
 *  - no allocation after setup (the hot path does not allocate), and
 *    mroce_ctx_close frees every allocation (checked at each reset; ASan
 *    checks the rest at exit).
 *
 * Environment: RX_FUZZ_TRACE=1 prints every packet both ways;
 * RX_FUZZ_DEREG_FREE=1 frees deregistered blocks (ASan then also catches
 * reads of them; slower: libFuzzer's leak check runs on those inputs);
 * RX_FUZZ_NO_RELEASE_CHECK=1 skips the "every region deregisters" check
 * (to fuzz past a known leaked reference). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RX_FUZZ_ASAN 1
#include <sanitizer/asan_interface.h>
#endif
#endif

#include <mroce/mroce.h>

#include "engine/fault.h"
#include "fuzz/rx_records.h"
#include "wire/ackm.h"
#include "wire/wire.h"
#include "fuzz/fuzz_rd.h"

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond))                                                           \
            fz_fail(__LINE__, #cond);                                          \
    } while (0)

/* ---- the invented setup ---- */

#define T0 1000000ull
#define CTX_MTU 512 /* the peer announces less: the connection uses 256 */
#define MTU 256
#define N_PATHS 4
#define N_STREAMS 2
#define SQ_DEPTH 8
#define RQ_DEPTH 8
#define DSN_WINDOW 64
#define PATH_WINDOW 16
#define CQ_DEPTH 64
#define PEER_ID 0x0BADF00Du
#define PEER_PORT 4797
#define FILL 0xA5
#define GUARD 64
#define SLOT_LEN 320 /* receive buffers and READ destinations */
#define SLOT_GAP 32  /* untouched bytes between slots */
#define N_SLOTS (N_STREAMS * (SQ_DEPTH + RQ_DEPTH))
#define SRC_LEN 1024    /* the source of every send: a fixed pattern */
#define MAX_MSG_PKTS 24 /* more than the 16 NACKs the engine can queue */
#define MAX_DRAIN 4096
#define PKT_MAX (MROCE_MAX_HDR_LEN + 2 * CTX_MTU + 64 + MROCE_ICRC_LEN)
#define HIST_CAP (8u << 20)
#define N_BLOCKS 4 /* a region moves between these when re-registered */

enum { R_RW, R_SMALL, R_SRC, R_LOCAL, R_OTHER, N_REG };

#define ACC_ALL                                                                \
    (MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |                    \
     MROCE_ACCESS_REMOTE_READ)

static const struct {
    size_t len;
    unsigned access;
    bool other_pd;
} reg_spec[N_REG] = {
    [R_RW] = {2048, ACC_ALL, false},
    [R_SMALL] = {40, ACC_ALL, false},
    [R_SRC] = {SRC_LEN, MROCE_ACCESS_REMOTE_READ, false},
    [R_LOCAL] = {N_SLOTS * (SLOT_LEN + SLOT_GAP), MROCE_ACCESS_LOCAL_WRITE,
                 false},
    [R_OTHER] = {256, ACC_ALL, true},
};

struct region {
    /* N_BLOCKS allocations of guard | len | guard; one is registered */
    uint8_t *blocks[N_BLOCKS];
    unsigned cur;
    uint8_t *block; /* blocks[cur] */
    uint8_t *base;
    size_t len;
    struct mroce_mr *mr;
    uint32_t key;
};

/* A send-queue WR as posted, for checking its packets and completion. */
struct swr {
    uint64_t id;
    uint8_t op; /* MROCE_OP_* */
    uint32_t len, src_off, ssn, imm, rkey;
    uint64_t raddr;
    int slot; /* READ destination, else -1 */
};

struct rwr {
    uint64_t id;
    uint32_t len;
    int slot;
};

struct mut {
    bool on;
    uint8_t flags; /* MUT_* */
    uint8_t n;
    uint16_t pos[8];
    uint8_t val[8];
    uint16_t size;
};
#define MUT_RESEAL 0x1
#define MUT_TRUNC 0x2
#define MUT_EXTEND 0x4
#define MUT_XOR 0x8

struct fz {
    uint64_t now;
    struct mroce_ctx *ctx;
    struct mroce_pd *pd, *pd2;
    struct mroce_cq *scq, *rcq;
    struct mroce_conn *conn;
    struct mroce_conn_params local, remote;
    struct region reg[N_REG];
    bool dereg_free;       /* RX_FUZZ_DEREG_FREE: free deregistered blocks */
    bool no_release_check; /* RX_FUZZ_NO_RELEASE_CHECK: skip it */
    uint8_t src_pattern[SRC_LEN];
    bool slot_used[N_SLOTS];

    /* our WRs, outstanding, in post order (index = msn or post count) */
    struct swr sq[N_STREAMS][SQ_DEPTH];
    uint32_t sq_head[N_STREAMS], sq_tail[N_STREAMS], ssn_next[N_STREAMS];
    struct rwr rq[N_STREAMS][RQ_DEPTH];
    uint32_t rq_head[N_STREAMS], rq_tail[N_STREAMS];
    uint64_t next_id;
    unsigned topup;

    /* the peer's own next sequence numbers */
    uint32_t psn[N_PATHS], dsn, msn[N_STREAMS], ssn[N_STREAMS];

    /* what the peer received from the engine */
    bool rx_any[N_PATHS];
    uint32_t rx_high[N_PATHS];
    uint64_t rx_bits[N_PATHS][4];
    uint32_t rx_ts[N_PATHS][256];
    uint16_t rx_count[N_PATHS];
    uint32_t rx_cum;
    uint8_t rx_seen[4096];
    struct mroce_hdr recent[32]; /* the engine's last data packets */
    uint32_t n_recent;
    struct {
        uint16_t stream;
        uint32_t msn, len;
    } reads[8]; /* the engine's READ_REQs */
    uint32_t n_reads;

    /* addressing of the packets fed (RX_API_META), reset per input */
    uint8_t ecn;
    bool bad_src;
    struct mut mut;

    uint64_t allocs_live, alloc_calls, alloc_calls_setup;
    unsigned inputs, reset_every;
    bool trace;

    /* the inputs since the last reset, as one input (see fz_replay) */
    uint8_t *hist;
    size_t hist_len;
    bool hist_lost, no_step;
    uint64_t rx_calls;
};

static struct fz g;

/* RX_FUZZ_TRACE=1 prints every packet both ways (for reproducers). */
static void trace(const char *dir, const uint8_t *buf, size_t len)
{
    struct mroce_hdr h;
    int err = mroce_wire_decode(buf, len, &h);
    if (err) {
        fprintf(stderr, "%12llu %s undecodable (%d), %zu bytes\n",
                (unsigned long long)g.now, dir, err, len);
        return;
    }
    fprintf(stderr,
            "%12llu %s %-9s f=%x path=%u psn=%u dsn=%u s=%u msn=%u ssn=%u "
            "len=%u off=%u pl=%u va=%llx rkey=%x high=%u cum=%u nak=%u/%u\n",
            (unsigned long long)g.now, dir, mroce_wire_op_name(h.opcode),
            h.flags, h.path, h.psn, h.dsn, h.stream, h.msn, h.ssn, h.msg_len,
            h.offset, h.payload_len, (unsigned long long)h.va, h.rkey,
            h.sack_high, h.dsn_cum, h.nak_code, h.nak_info);
}

/* The engine is kept across inputs, so a crash may need the inputs run
 * since the last reset: they are written joined into one input (records
 * re-encoded with exact lengths, RX_API_END_INPUT between inputs) that
 * replays the same calls on a fresh engine. */
static void fz_replay(void)
{
    if (g.inputs <= 1 || !g.hist || g.hist_lost)
        return;
    const char *dir = getenv("RX_FUZZ_REPLAY_DIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/rx-replay-%ld", dir ? dir : ".",
             (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(g.hist, 1, g.hist_len, f) != g.hist_len || fclose(f)) {
        perror(path);
        return;
    }
    fprintf(stderr,
            "rx_fuzz: the engine state came from %u inputs since the last "
            "reset; joined into one input: %s\n"
            "rx_fuzz: replay: rx_fuzz %s   (RX_FUZZ_TRACE=1 shows packets)\n",
            g.inputs, path, path);
}

#ifdef RX_FUZZ_ASAN
static void fz_asan_report(const char *report)
{
    (void)report;
    fz_replay();
}
#endif

/* Called by UBSan before it reports (a weak hook in compiler-rt). */
void __ubsan_on_report(void);
void __ubsan_on_report(void)
{
    fz_replay();
}

static void fz_fail(int line, const char *what)
{
    fprintf(stderr, "rx_fuzz: rx_fuzz.c:%d: check failed: %s\n", line, what);
    fz_replay();
    abort();
}

static void hist_put(const uint8_t *p, size_t n)
{
    if (g.hist_len + n > HIST_CAP) {
        g.hist_lost = true;
        return;
    }
    memcpy(g.hist + g.hist_len, p, n);
    g.hist_len += n;
}

static void hist_record(uint8_t sel, int kind, const uint8_t *body, size_t n)
{
    uint8_t h[3];
    size_t hn = 0;
    h[hn++] = sel;
    if (kind == RX_RAW || kind == RX_MUTATE)
        h[hn++] = (uint8_t)(n >> 8);
    h[hn++] = (uint8_t)n;
    hist_put(h, hn);
    hist_put(body, n);
}

/* ---- hooks: count allocations ---- */

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

/* ---- input records ---- */

/* A sequence number near `base`: 0 reads as base itself. */
static uint32_t rd_seq(struct rd *r, uint32_t base)
{
    uint8_t b = rd_u8(r);
    if (b < 0x40)
        return base + b;
    if (b < 0x80)
        return base - (uint32_t)(b - 0x3F);
    if (b < 0xF0)
        return base + (uint32_t)(int32_t)(int16_t)rd_u16(r);
    return rd_u32(r);
}

static uint16_t rd_path(struct rd *r)
{
    uint8_t b = rd_u8(r);
    return b < 0xF8 ? b % N_PATHS : rd_u16(r);
}

static uint16_t rd_stream(struct rd *r)
{
    uint8_t b = rd_u8(r);
    return b < 0xF8 ? b % N_STREAMS : rd_u16(r);
}

/* Message lengths around the packet boundaries of MTU. */
static uint32_t rd_len(struct rd *r)
{
    static const uint32_t lens[] = {0,   1,   100, 255, 256, 257, 300,
                                    511, 512, 600, 768, 40,  32,  2048};
    uint8_t b = rd_u8(r);
    if (b < 0xE0)
        return lens[b % (sizeof(lens) / sizeof(lens[0]))];
    if (b < 0xF8)
        return rd_u16(r) % 4096;
    return rd_u32(r);
}

/* An (va, rkey) pair: mostly inside one of our regions, sometimes at or
 * past an edge, in a region without the right, or a foreign key. */
static void rd_target(struct rd *r, uint32_t len, uint64_t *va, uint32_t *rkey)
{
    static const int pick[8] = {R_RW,  R_RW,    R_RW,    R_SMALL,
                                R_SRC, R_LOCAL, R_OTHER, -1};
    uint8_t b = rd_u8(r);
    int k = pick[b % 8];
    if (k < 0) {
        *rkey = rd_u32(r);
        *va = rd_u64(r);
        return;
    }
    const struct region *reg = &g.reg[k];
    uint64_t base = (uint64_t)(uintptr_t)reg->base;
    *rkey = reg->key;
    uint16_t off = rd_u16(r);
    switch ((b >> 3) % 4) {
    case 0: /* inside, from the start */
    case 1:
        *va = base + (len < reg->len ? off % (reg->len - len + 1) : 0);
        break;
    case 2: /* around the end */
        *va = base + reg->len - len + (uint64_t)(int64_t)(int8_t)off;
        break;
    default: /* around the start, or anywhere */
        *va = (b & 0x80) ? rd_u64(r) : base + (uint64_t)(int64_t)(int16_t)off;
        break;
    }
}

/* ---- memory and its oracle ---- */

static uint8_t *slot_addr(int i)
{
    return g.reg[R_LOCAL].base + (size_t)i * (SLOT_LEN + SLOT_GAP);
}

static int slot_get(void)
{
    for (int i = 0; i < N_SLOTS; i++) {
        if (!g.slot_used[i]) {
            g.slot_used[i] = true;
            return i;
        }
    }
    return -1;
}

/* A slot goes back to the pattern when its WR completes: from then on
 * the engine must not write it. */
static void slot_put(int i)
{
    if (i < 0)
        return;
    memset(slot_addr(i), FILL, SLOT_LEN);
    g.slot_used[i] = false;
}

static bool all_fill(const uint8_t *p, size_t n)
{
    static uint8_t fill[1024];
    if (fill[0] != FILL)
        memset(fill, FILL, sizeof(fill));
    for (size_t k; n; p += k, n -= k) {
        k = n < sizeof(fill) ? n : sizeof(fill);
        if (memcmp(p, fill, k) != 0)
            return false;
    }
    return true;
}

static void check_memory(void)
{
    for (int k = 0; k < N_REG; k++) {
        CHECK(all_fill(g.reg[k].base - GUARD, GUARD));
        CHECK(all_fill(g.reg[k].base + g.reg[k].len, GUARD));
    }
    for (int k = 0; k < N_REG; k++) /* never written after dereg */
        for (unsigned i = 0; i < N_BLOCKS; i++)
            CHECK(i == g.reg[k].cur || !g.reg[k].blocks[i] ||
                  all_fill(g.reg[k].blocks[i], g.reg[k].len + 2 * GUARD));
    CHECK(memcmp(g.reg[R_SRC].base, g.src_pattern, SRC_LEN) == 0);
    CHECK(all_fill(g.reg[R_OTHER].base, g.reg[R_OTHER].len));
    for (int i = 0; i < N_SLOTS; i++) {
        CHECK(all_fill(slot_addr(i) + SLOT_LEN, SLOT_GAP));
        CHECK(g.slot_used[i] || all_fill(slot_addr(i), SLOT_LEN));
    }
}

/* Makes blocks[i] the region's current block, with fresh contents. */
static void region_use(int k, unsigned i)
{
    struct region *reg = &g.reg[k];
    reg->len = reg_spec[k].len;
    if (!reg->blocks[i])
        reg->blocks[i] = malloc(reg->len + 2 * GUARD);
    CHECK(reg->blocks[i] != NULL);
    reg->cur = i;
    reg->block = reg->blocks[i];
    reg->base = reg->block + GUARD;
    memset(reg->block, FILL, reg->len + 2 * GUARD);
    if (k == R_SRC)
        memcpy(reg->base, g.src_pattern, SRC_LEN);
}

static int region_reg(int k)
{
    struct region *reg = &g.reg[k];
    int err = mroce_reg_mr(reg_spec[k].other_pd ? g.pd2 : g.pd, reg->base,
                           reg->len, reg_spec[k].access, &reg->mr);
    reg->key = err ? 0 : mroce_mr_rkey(reg->mr);
    return err;
}

static void mem_init(void)
{
    uint32_t x = 12345;
    for (size_t i = 0; i < SRC_LEN; i++) {
        x = x * 1103515245u + 12345u;
        g.src_pattern[i] = (uint8_t)(x >> 16);
    }
    for (int k = 0; k < N_REG; k++) {
        for (unsigned i = 0; i < N_BLOCKS; i++) {
            g.reg[k].len = reg_spec[k].len;
            g.reg[k].blocks[i] = malloc(g.reg[k].len + 2 * GUARD);
            CHECK(g.reg[k].blocks[i] != NULL);
            memset(g.reg[k].blocks[i], FILL, g.reg[k].len + 2 * GUARD);
        }
        region_use(k, 0);
    }
}

/* ---- completions ---- */

static uint8_t wc_opcode_of(uint8_t op)
{
    switch (op) {
    case MROCE_OP_READ_REQ:
        return MROCE_WC_RDMA_READ;
    case MROCE_OP_SEND:
    case MROCE_OP_SEND_IMM:
        return MROCE_WC_SEND;
    default:
        return MROCE_WC_RDMA_WRITE;
    }
}

static void check_send_wc(const struct mroce_wc *wc)
{
    CHECK(wc->conn == g.conn && wc->stream < N_STREAMS);
    uint16_t s = wc->stream;
    CHECK(g.sq_head[s] != g.sq_tail[s]); /* never more than posted */
    struct swr *w = &g.sq[s][g.sq_head[s] % SQ_DEPTH];
    CHECK(wc->wr_id == w->id); /* post order per stream (R-ORD-7) */
    CHECK(wc->opcode == wc_opcode_of(w->op));
    CHECK(wc->status <= MROCE_WC_WR_FLUSH_ERR);
    CHECK(wc->status != MROCE_WC_SUCCESS || wc->byte_len == w->len);
    slot_put(w->slot);
    g.sq_head[s]++;
}

static void check_recv_wc(const struct mroce_wc *wc)
{
    CHECK(wc->conn == g.conn && wc->stream < N_STREAMS);
    uint16_t s = wc->stream;
    CHECK(g.rq_head[s] != g.rq_tail[s]);
    struct rwr *w = &g.rq[s][g.rq_head[s] % RQ_DEPTH];
    CHECK(wc->wr_id == w->id); /* receives are consumed in order */
    CHECK(wc->opcode == MROCE_WC_RECV ||
          wc->opcode == MROCE_WC_RECV_RDMA_WITH_IMM);
    CHECK(wc->status <= MROCE_WC_WR_FLUSH_ERR);
    if (wc->status == MROCE_WC_SUCCESS && wc->opcode == MROCE_WC_RECV)
        CHECK(wc->byte_len <= w->len); /* R-MSG-6 */
    slot_put(w->slot);
    g.rq_head[s]++;
}

static void poll_all(void)
{
    struct mroce_wc wc[CQ_DEPTH];
    int n;
    while ((n = mroce_poll_cq(g.scq, CQ_DEPTH, wc)) > 0)
        for (int i = 0; i < n; i++)
            check_send_wc(&wc[i]);
    CHECK(n == 0);
    while ((n = mroce_poll_cq(g.rcq, CQ_DEPTH, wc)) > 0)
        for (int i = 0; i < n; i++)
            check_recv_wc(&wc[i]);
    CHECK(n == 0);
}

/* Outside CONNECTED every WR has completed (flushed, R-CONN-12). */
static void check_flushed(void)
{
    int st = mroce_conn_state(g.conn);
    if (st != MROCE_CONN_ERROR && st != MROCE_CONN_CLOSED &&
        st != MROCE_CONN_CLOSING)
        return;
    for (int s = 0; s < N_STREAMS; s++) {
        CHECK(g.sq_head[s] == g.sq_tail[s]);
        CHECK(g.rq_head[s] == g.rq_tail[s]);
    }
}

/* ---- posting ---- */

static int post_send(uint8_t op, uint16_t stream, uint32_t len,
                     uint32_t src_off, bool bad_lkey)
{
    if (stream >= N_STREAMS)
        return -1;
    if (g.sq_tail[stream] - g.sq_head[stream] >= SQ_DEPTH)
        return -1;
    struct swr w = {.id = ++g.next_id, .op = op, .len = len, .slot = -1};
    struct mroce_send_wr wr = {.wr_id = w.id, .stream = stream};
    if (op == MROCE_OP_READ_REQ) {
        w.len = len = len > SLOT_LEN ? SLOT_LEN : len;
        if ((w.slot = slot_get()) < 0)
            return -1;
        wr.sge.addr = (uint64_t)(uintptr_t)slot_addr(w.slot);
        wr.sge.lkey = g.reg[R_LOCAL].key;
    } else {
        w.len = len = len > SRC_LEN ? SRC_LEN : len;
        w.src_off = src_off % (SRC_LEN - len + 1);
        wr.sge.addr = (uint64_t)(uintptr_t)(g.reg[R_SRC].base + w.src_off);
        wr.sge.lkey = g.reg[R_SRC].key;
    }
    wr.sge.length = len;
    if (bad_lkey)
        wr.sge.lkey ^= 0x5A5A5A5Au;
    w.raddr = wr.remote_addr = 0x100000000ull + g.next_id * 4096;
    w.rkey = wr.rkey = 0x5EED0000u + (uint32_t)g.next_id;
    w.imm = wr.imm = (uint32_t)(g.next_id * 2654435761u);
    if (op != MROCE_OP_WRITE && op != MROCE_OP_READ_REQ)
        w.ssn = g.ssn_next[stream];
    int err;
    switch (op) {
    case MROCE_OP_WRITE:
        err = mroce_post_write(g.conn, &wr);
        break;
    case MROCE_OP_WRITE_IMM:
        err = mroce_post_write_imm(g.conn, &wr);
        break;
    case MROCE_OP_SEND:
        err = mroce_post_send(g.conn, &wr);
        break;
    case MROCE_OP_SEND_IMM:
        err = mroce_post_send_imm(g.conn, &wr);
        break;
    default:
        err = mroce_post_read(g.conn, &wr);
        break;
    }
    CHECK(err == 0 || err == MROCE_EAGAIN || err == MROCE_ESTATE ||
          err == MROCE_EACCES || err == MROCE_ERANGE);
    CHECK(!bad_lkey || err != 0 || len == 0);
    if (err) {
        if (w.slot >= 0)
            g.slot_used[w.slot] = false;
        return err;
    }
    if (op != MROCE_OP_WRITE && op != MROCE_OP_READ_REQ)
        g.ssn_next[stream]++;
    g.sq[stream][g.sq_tail[stream]++ % SQ_DEPTH] = w;
    return 0;
}

static int post_recv(uint16_t stream, uint32_t len, bool bad_lkey)
{
    if (stream >= N_STREAMS ||
        g.rq_tail[stream] - g.rq_head[stream] >= RQ_DEPTH)
        return -1;
    struct rwr w = {.id = ++g.next_id, .len = len > SLOT_LEN ? SLOT_LEN : len};
    if ((w.slot = slot_get()) < 0)
        return -1;
    struct mroce_recv_wr wr = {.wr_id = w.id, .stream = stream};
    wr.sge.addr = (uint64_t)(uintptr_t)slot_addr(w.slot);
    wr.sge.length = w.len;
    wr.sge.lkey = g.reg[R_LOCAL].key ^ (bad_lkey ? 0x5A5A5A5Au : 0);
    int err = mroce_post_recv(g.conn, &wr);
    CHECK(err == 0 || err == MROCE_EAGAIN || err == MROCE_ESTATE ||
          err == MROCE_EACCES);
    if (err) {
        g.slot_used[w.slot] = false;
        return err;
    }
    g.rq[stream][g.rq_tail[stream]++ % RQ_DEPTH] = w;
    return 0;
}

/* Keeps receives posted and a few WRs of every kind outstanding, so ACKs,
 * NACKs and READ responses always have something to act on. */
static void topup(void)
{
    static const uint8_t ops[] = {MROCE_OP_WRITE, MROCE_OP_SEND,
                                  MROCE_OP_READ_REQ, MROCE_OP_WRITE_IMM,
                                  MROCE_OP_SEND_IMM};
    static const uint32_t lens[] = {100, 600, 300, 0, 256, 1, 513, 40};
    if (mroce_conn_state(g.conn) != MROCE_CONN_CONNECTED)
        return;
    for (uint16_t s = 0; s < N_STREAMS; s++) {
        while (g.rq_tail[s] - g.rq_head[s] < RQ_DEPTH)
            if (post_recv(s, lens[g.topup++ % 8] + 64, false))
                break;
        while (g.sq_tail[s] - g.sq_head[s] < 3) {
            unsigned k = g.topup++;
            if (post_send(ops[k % 5], s, lens[k % 8], k * 37, false))
                break;
        }
    }
}

/* ---- what the engine emits ---- */

static bool addr_eq(const struct mroce_addr *a, const struct mroce_addr *b)
{
    return a->family == b->family && memcmp(a->ip, b->ip, 16) == 0;
}

static struct swr *find_swr(uint16_t stream, uint32_t msn)
{
    if (stream >= N_STREAMS ||
        msn - g.sq_head[stream] >= g.sq_tail[stream] - g.sq_head[stream])
        return NULL;
    return &g.sq[stream][msn % SQ_DEPTH];
}

/* A data packet of one of our WRs carries exactly that WR (R-MSG-1). */
static void check_wr_pkt(const struct mroce_hdr *h)
{
    struct swr *w = find_swr(h->stream, h->msn);
    CHECK(w != NULL); /* only outstanding WRs are sent */
    CHECK(h->opcode == w->op && h->msg_len == w->len);
    if (w->op != MROCE_OP_SEND && w->op != MROCE_OP_SEND_IMM)
        CHECK(h->va == w->raddr && h->rkey == w->rkey);
    if (w->op != MROCE_OP_WRITE && w->op != MROCE_OP_READ_REQ)
        CHECK(h->ssn == w->ssn);
    if (w->op == MROCE_OP_WRITE_IMM || w->op == MROCE_OP_SEND_IMM)
        CHECK(h->imm == w->imm);
    if (w->op == MROCE_OP_READ_REQ) {
        CHECK(h->offset == 0 && h->payload_len == 0);
        return;
    }
    CHECK(h->offset % MTU == 0 &&
          (w->len ? h->offset < w->len : h->offset == 0));
    uint32_t left = w->len - h->offset;
    CHECK(h->payload_len == (left < MTU ? left : MTU));
    CHECK(h->payload_len == 0 ||
          memcmp(h->payload, g.src_pattern + w->src_off + h->offset,
                 h->payload_len) == 0);
}

/* The peer's receive bitmap of one path (R-SACK-4), as in peer.c. */
static void rx_record(uint16_t path, uint32_t psn, uint32_t ts)
{
    uint64_t *b = g.rx_bits[path];
    if (!g.rx_any[path] || (int32_t)(psn - g.rx_high[path]) > 0) {
        uint32_t d = g.rx_any[path] ? psn - g.rx_high[path] : 256;
        uint64_t old[4];
        memcpy(old, b, sizeof(old));
        memset(b, 0, 4 * sizeof(uint64_t));
        for (uint32_t i = 0; i + d < MROCE_SACK_BITS; i++)
            if (mroce_sack_test(old, i))
                mroce_sack_set(b, i + d);
        g.rx_any[path] = true;
        g.rx_high[path] = psn;
    }
    uint32_t back = g.rx_high[path] - psn;
    if (back < MROCE_SACK_BITS)
        mroce_sack_set(b, back);
    g.rx_ts[path][psn % 256] = ts;
    g.rx_count[path]++;
}

static void rx_dsn(uint32_t dsn)
{
    if ((int32_t)(dsn - g.rx_cum) < 0 || dsn - g.rx_cum >= 4096)
        return;
    g.rx_seen[dsn % 4096] = 1;
    while (g.rx_seen[g.rx_cum % 4096])
        g.rx_seen[g.rx_cum++ % 4096] = 0;
}

static void note_read(const struct mroce_hdr *h)
{
    for (uint32_t i = 0; i < 8 && i < g.n_reads; i++)
        if (g.reads[i].stream == h->stream && g.reads[i].msn == h->msn)
            return;
    uint32_t i = g.n_reads++ % 8;
    g.reads[i].stream = h->stream;
    g.reads[i].msn = h->msn;
    g.reads[i].len = h->msg_len;
}

/* An ACKM the engine sends is one the peer would accept (section 3.15):
 * well formed, its records for distinct paths of the connection other
 * than the MTH path, each acknowledging its sack_high (bit 0). */
static void check_ackm_out(const struct mroce_hdr *h)
{
    uint32_t hold;
    int n = mroce_ackm_check(h, &hold);
    CHECK(n >= 0 && n < N_PATHS);
    CHECK(h->payload[1] == 0); /* reserved: sent as 0 */
    bool seen[N_PATHS] = {false};
    seen[h->path] = true;
    for (int i = 0; i < n; i++) {
        struct mroce_ackm_rec rec;
        mroce_ackm_get(h, (unsigned)i, &rec);
        CHECK(rec.path < N_PATHS && !seen[rec.path]);
        seen[rec.path] = true;
        CHECK(mroce_sack_test(rec.sack, 0));
    }
}

static void on_tx(const uint8_t *buf, int n, const struct mroce_pkt_meta *m)
{
    struct mroce_hdr h;
    if (g.trace)
        trace("tx", buf, (size_t)n);
    CHECK((size_t)n <= mroce_ctx_max_pkt(g.ctx));
    CHECK(mroce_wire_decode(buf, (size_t)n, &h) == MROCE_WIRE_OK);
    CHECK(addr_eq(&m->src, &g.local.addr) && addr_eq(&m->dst, &g.remote.addr));
    CHECK(m->dst_port == PEER_PORT && m->ecn == MROCE_ECN_ECT0);
    CHECK(m->src_port >= 49152); /* R-ENC-3 */
    CHECK(h.conn == PEER_ID && h.path < N_PATHS);
    if (h.opcode == MROCE_OP_ACKM)
        check_ackm_out(&h);
    bool data = h.opcode >= MROCE_OP_WRITE && h.opcode <= MROCE_OP_READ_RESP;
    if (data || h.opcode == MROCE_OP_PROBE)
        rx_record(h.path, h.psn, h.ts);
    if (!data)
        return;
    CHECK(h.payload_len <= MTU && h.stream < N_STREAMS);
    rx_dsn(h.dsn);
    g.recent[g.n_recent++ % 32] = h;
    if (h.opcode == MROCE_OP_READ_RESP)
        return;
    check_wr_pkt(&h);
    if (h.opcode == MROCE_OP_READ_REQ)
        note_read(&h);
}

static void drain(void)
{
    static uint8_t buf[PKT_MAX];
    struct mroce_pkt_meta m;
    int i, n;
    for (i = 0; i < MAX_DRAIN; i++) {
        n = mroce_ctx_tx(g.ctx, g.now, buf, sizeof(buf), &m);
        CHECK(n >= 0);
        if (!n)
            break;
        on_tx(buf, n, &m);
    }
    CHECK(i < MAX_DRAIN); /* the engine stops emitting */
    poll_all();
}

/* ---- feeding packets ---- */

static size_t apply_mut(uint8_t *buf, size_t len)
{
    struct mut *mu = &g.mut;
    mu->on = false;
    for (int i = 0; i < mu->n && len; i++) {
        size_t at = mu->pos[i] % len;
        buf[at] = (mu->flags & MUT_XOR) ? buf[at] ^ mu->val[i] : mu->val[i];
    }
    if ((mu->flags & MUT_TRUNC) && len)
        len = mu->size % len;
    else if (mu->flags & MUT_EXTEND)
        for (size_t k = mu->size % 64; k; k--)
            buf[len++] = (uint8_t)(0xEE ^ k);
    if ((mu->flags & MUT_RESEAL) && len >= MROCE_ICRC_LEN)
        mroce_wire_seal(buf, len - MROCE_ICRC_LEN);
    return len;
}

static void feed_bytes(const uint8_t *bytes, size_t len, uint16_t path)
{
    static const struct mroce_addr stranger = {.family = MROCE_AF_INET,
                                               .ip = {10, 0, 0, 99}};
    struct mroce_pkt_meta m = {.src = g.bad_src ? stranger : g.remote.addr,
                               .dst = g.local.addr,
                               .src_port = (uint16_t)(50000 + path % 64),
                               .dst_port = MROCE_UDP_PORT,
                               .ecn = g.ecn};
    uint8_t *copy = malloc(len ? len : 1); /* ASan: exact size */
    CHECK(copy != NULL);
    memcpy(copy, bytes, len);
    if (g.trace)
        trace("rx", copy, len);
    int rc = mroce_ctx_rx(g.ctx, g.now, &m, copy, len);
    CHECK(rc == 0 || rc == MROCE_EPROTO);
    free(copy);
    g.rx_calls++;
    g.now += 100; /* packets are 100 ns apart */
}

/* Encodes h + payload with no validity rule (payload on any opcode). */
static void feed(const struct mroce_hdr *h, const uint8_t *pay, uint32_t plen)
{
    static uint8_t buf[MROCE_MAX_HDR_LEN + PKT_MAX + 64];
    int hl = mroce_wire_write_hdr(h, buf, MROCE_MAX_HDR_LEN);
    if (hl < 0)
        return;
    if (plen > PKT_MAX - MROCE_MAX_HDR_LEN - MROCE_ICRC_LEN)
        plen = PKT_MAX - MROCE_MAX_HDR_LEN - MROCE_ICRC_LEN;
    if (plen)
        memcpy(buf + hl, pay, plen);
    size_t n = mroce_wire_seal(buf, (size_t)hl + plen);
    if (g.mut.on)
        n = apply_mut(buf, n);
    feed_bytes(buf, n, h->path);
}

static struct mroce_hdr peer_hdr(uint8_t opcode, uint16_t path, uint32_t psn)
{
    struct mroce_hdr h = {.opcode = opcode, .path = path, .psn = psn};
    h.conn = g.local.conn_id;
    h.ts = (uint32_t)g.now;
    return h;
}

/* The peer's next-PSN bookkeeping follows whatever it sent last nearby. */
static void peer_used_psn(uint16_t path, uint32_t psn)
{
    if (path < N_PATHS && psn - g.psn[path] < 1024)
        g.psn[path] = psn + 1;
}

static void peer_used_dsn(uint32_t dsn)
{
    if (dsn - g.dsn < 4 * DSN_WINDOW)
        g.dsn = dsn + 1;
}

/* Payload bytes: the record's leftover bytes, or a pattern. */
static void fill_payload(uint8_t *p, uint32_t n, const struct rd *src,
                         uint32_t seed)
{
    for (uint32_t i = 0; i < n; i++)
        p[i] = src->n ? src->p[(seed + i) % src->n]
                      : (uint8_t)(seed * 31 + i * 7 + 1);
}

/* ---- record kinds ---- */

/* Sends the packets of a message (h: first packet's fields, offset 0)
 * in order, reversed, with one dropped or one duplicated. */
static void send_msg(struct mroce_hdr *h, uint32_t len, uint8_t mf,
                     uint8_t drop, const struct rd *src)
{
    static uint8_t pay[MTU];
    uint32_t n =
        h->opcode == MROCE_OP_READ_REQ ? 1 : (len ? (len - 1) / MTU + 1 : 1);
    uint32_t sent = n < MAX_MSG_PKTS ? n : MAX_MSG_PKTS;
    uint32_t dsn0 = h->dsn;
    uint16_t path0 = h->path;
    for (uint32_t k = 0; k < sent + ((mf & RX_MF_DUP) ? 1 : 0); k++) {
        uint32_t i = k % sent;
        if (mf & RX_MF_REVERSE)
            i = sent - 1 - i;
        if ((mf & RX_MF_DROP) && i == drop % sent && sent > 1)
            continue;
        struct mroce_hdr p = *h;
        p.offset = i * MTU;
        p.dsn = dsn0 + i;
        uint32_t plen = 0;
        if (p.opcode != MROCE_OP_READ_REQ && len > p.offset)
            plen = len - p.offset < MTU ? len - p.offset : MTU;
        p.path = (mf & RX_MF_SPREAD) && path0 < N_PATHS
                     ? (uint16_t)((path0 + k) % N_PATHS)
                     : path0;
        p.psn = path0 < N_PATHS ? g.psn[p.path % N_PATHS] : h->psn + k;
        p.flags = (uint8_t)(((mf & RX_MF_RETX) ? MROCE_HF_RETX : 0) |
                            ((mf & RX_MF_ACKREQ) || i + 1 == n ? MROCE_HF_ACKREQ
                                                               : 0));
        p.ts = (uint32_t)g.now;
        fill_payload(pay, plen, src, p.dsn);
        feed(&p, pay, plen);
        peer_used_psn(p.path, p.psn);
        peer_used_dsn(p.dsn);
    }
}

static bool op_uses_recv(uint8_t op)
{
    return op == MROCE_OP_SEND || op == MROCE_OP_SEND_IMM ||
           op == MROCE_OP_WRITE_IMM;
}

static void peer_msg_done(const struct mroce_hdr *h)
{
    if (h->stream >= N_STREAMS || h->msn != g.msn[h->stream])
        return;
    g.msn[h->stream]++;
    if (op_uses_recv(h->opcode) && h->ssn == g.ssn[h->stream])
        g.ssn[h->stream]++;
}

static void rec_data_msg(struct rd *r)
{
    static const uint8_t ops[] = {MROCE_OP_WRITE, MROCE_OP_SEND,
                                  MROCE_OP_READ_REQ, MROCE_OP_WRITE_IMM,
                                  MROCE_OP_SEND_IMM};
    uint8_t b = rd_u8(r);
    uint16_t stream = rd_stream(r);
    uint16_t path = rd_path(r);
    struct mroce_hdr h = peer_hdr(ops[b % 5], path, 0);
    uint32_t len = rd_len(r);
    h.stream = stream;
    h.msg_len = len;
    uint16_t si = stream % N_STREAMS;
    h.msn = rd_seq(r, g.msn[si]);
    h.ssn = rd_seq(r, g.ssn[si]);
    h.dsn = rd_seq(r, g.dsn);
    h.imm = rd_u32(r);
    if (h.opcode != MROCE_OP_SEND && h.opcode != MROCE_OP_SEND_IMM)
        rd_target(r, len, &h.va, &h.rkey);
    uint8_t mf = rd_u8(r), drop = rd_u8(r);
    if (h.opcode != MROCE_OP_WRITE_IMM && h.opcode != MROCE_OP_SEND_IMM)
        h.imm = 0;
    send_msg(&h, len, mf, drop, r);
    peer_msg_done(&h);
}

static void rec_data_pkt(struct rd *r)
{
    static uint8_t pay[PKT_MAX];
    uint8_t b = rd_u8(r);
    uint16_t path = rd_path(r);
    uint16_t si;
    struct mroce_hdr h = peer_hdr((uint8_t)(MROCE_OP_WRITE + b % 6), path, 0);
    h.psn = rd_seq(r, g.psn[path % N_PATHS]);
    h.flags = (uint8_t)(b >> 4);
    h.stream = rd_stream(r);
    si = h.stream % N_STREAMS;
    h.dsn = rd_seq(r, g.dsn);
    h.msn = rd_seq(r, g.msn[si]);
    h.ssn = rd_seq(r, g.ssn[si]);
    h.msg_len = rd_len(r);
    uint8_t o = rd_u8(r);
    h.offset = o < 0xF0 ? (uint32_t)(o % 16) * MTU : rd_u32(r);
    rd_target(r, h.msg_len, &h.va, &h.rkey);
    h.imm = rd_u32(r);
    uint8_t pl = rd_u8(r);
    uint32_t left = h.msg_len > h.offset ? h.msg_len - h.offset : 0;
    uint32_t plen =
        pl < 0xC0 ? (left < MTU ? left : MTU) : rd_u16(r) % (2 * MTU);
    if (h.opcode == MROCE_OP_READ_REQ && pl < 0xC0)
        plen = 0;
    fill_payload(pay, plen, r, h.dsn);
    feed(&h, pay, plen);
    peer_used_psn(path, h.psn);
    peer_used_dsn(h.dsn);
    if (h.offset + plen >= h.msg_len)
        peer_msg_done(&h);
}

/* RX_AF_ACKM: the ACKs of rec_ack_all as one ACKM (section 3.15), the
 * first as its MTH path, each other one a record, each with a hold. */
static void feed_ackm(struct rd *r, const struct mroce_hdr *acks, unsigned n)
{
    struct mroce_ackm_rec recs[N_PATHS];
    uint8_t pay[MROCE_ACKM_PRE_LEN + N_PATHS * MROCE_ACKM_REC_LEN];
    uint8_t am = rd_u8(r);
    uint32_t hold0 = 8u * rd_u16(r);
    for (unsigned i = 1; i < n; i++) {
        const struct mroce_hdr *a = &acks[i];
        recs[i - 1] = (struct mroce_ackm_rec){.path = a->path,
                                              .hold_ns = 8u * rd_u16(r),
                                              .sack_high = a->sack_high,
                                              .echo_ts = a->echo_ts,
                                              .ce_count = a->ce_count,
                                              .rx_count = a->rx_count};
        memcpy(recs[i - 1].sack, a->sack, sizeof(a->sack));
    }
    unsigned nr = n - 1;
    if ((am & RX_AM_DUP) && nr >= 2)
        recs[nr - 1].path = recs[0].path;
    if ((am & RX_AM_SELF) && nr)
        recs[0].path = acks[0].path;
    if ((am & RX_AM_FAR) && nr)
        recs[nr - 1].path = (uint16_t)(N_PATHS + rd_u8(r));
    size_t plen = mroce_ackm_put(pay, hold0, recs, nr);
    if (am & RX_AM_COUNT)
        pay[0]++;
    struct mroce_hdr h = acks[0];
    h.opcode = MROCE_OP_ACKM;
    feed(&h, pay, (uint32_t)plen);
}

static void rec_ack_all(struct rd *r)
{
    uint8_t af = rd_u8(r), mask = rd_u8(r);
    struct mroce_hdr acks[N_PATHS];
    unsigned n_acks = 0;
    for (uint16_t p = 0; p < N_PATHS; p++) {
        if (!g.rx_any[p] || ((af & RX_AF_ONLY_MASKED) && !(mask & (1u << p))))
            continue;
        struct mroce_hdr h = peer_hdr(MROCE_OP_ACK, p, 0);
        h.sack_high = g.rx_high[p];
        h.dsn_cum = g.rx_cum;
        h.echo_ts = g.rx_ts[p][h.sack_high % 256];
        memcpy(h.sack, g.rx_bits[p], sizeof(h.sack));
        h.rx_count = g.rx_count[p];
        if (af & RX_AF_HIGH) /* an older view of the path */
            h.sack_high -= rd_u8(r) % 8;
        if (af & RX_AF_CUM)
            h.dsn_cum = rd_seq(r, h.dsn_cum);
        if (af & RX_AF_HOLES)
            for (unsigned k = rd_u8(r) % 8; k; k--) {
                unsigned bit = rd_u8(r);
                h.sack[bit >> 6] &= ~((uint64_t)1 << (63 - (bit & 63)));
            }
        if (af & RX_AF_ECHO)
            h.echo_ts = rd_u32(r);
        if (af & RX_AF_CE)
            h.ce_count = h.rx_count;
        if (af & RX_AF_RATE)
            h.rate_mbps = rd_u32(r);
        if (af & RX_AF_ACKM)
            acks[n_acks++] = h;
        else
            feed(&h, NULL, 0);
    }
    if (n_acks)
        feed_ackm(r, acks, n_acks);
}

static void rec_ack_raw(struct rd *r)
{
    uint16_t p = rd_path(r);
    uint16_t pi = p % N_PATHS;
    struct mroce_hdr h =
        peer_hdr(MROCE_OP_ACK, p, rd_u8(r) < 0xF0 ? 0 : rd_u32(r));
    h.flags = rd_u8(r) & 0xF;
    h.sack_high = rd_seq(r, g.rx_high[pi]);
    h.dsn_cum = rd_seq(r, g.rx_cum);
    h.echo_ts = rd_seq(r, g.rx_ts[pi][h.sack_high % 256]);
    h.rate_mbps = rd_u32(r);
    h.ce_count = rd_u16(r);
    h.rx_count = (uint16_t)(g.rx_count[pi] + rd_u16(r));
    uint8_t bm = rd_u8(r);
    for (int i = 0; i < 4; i++)
        h.sack[i] = (bm & 1)   ? g.rx_bits[pi][i] ^ rd_u64(r)
                    : (bm & 2) ? ~(uint64_t)0
                               : rd_u64(r);
    feed(&h, NULL, 0);
}

static void rec_nack(struct rd *r)
{
    struct mroce_hdr h = peer_hdr(MROCE_OP_NACK, 0, 0);
    uint32_t have = g.n_recent < 32 ? g.n_recent : 32;
    uint8_t idx = rd_u8(r);
    if (have) {
        const struct mroce_hdr *d =
            &g.recent[(g.n_recent - 1 - idx % have) % 32];
        h.path = d->path;
        h.psn = d->psn;
        h.dsn = d->dsn;
        h.stream = d->stream;
        h.msn = d->msn;
    }
    uint8_t c = rd_u8(r);
    h.nak_code = c < 0xE0 ? (uint8_t)(MROCE_NAK_RNR + c % 5) : rd_u8(r);
    h.nak_info = h.nak_code == MROCE_NAK_RNR ? rd_u8(r) : 0;
    uint8_t f = rd_u8(r);
    if (f & 0x01)
        h.psn = rd_seq(r, h.psn);
    if (f & 0x02)
        h.dsn = rd_seq(r, h.dsn);
    if (f & 0x04)
        h.msn = rd_seq(r, h.msn);
    if (f & 0x08)
        h.stream = rd_stream(r);
    if (f & 0x10)
        h.path = rd_path(r);
    if (f & 0x20)
        h.nak_info = rd_u32(r);
    feed(&h, NULL, 0);
}

static void rec_read_resp(struct rd *r)
{
    uint32_t have = g.n_reads < 8 ? g.n_reads : 8;
    uint8_t idx = rd_u8(r), mf = rd_u8(r), drop = rd_u8(r);
    uint16_t path = rd_path(r);
    struct mroce_hdr h = peer_hdr(MROCE_OP_READ_RESP, path, 0);
    uint32_t len = 0;
    if (have) {
        uint32_t i = (g.n_reads - 1 - idx % have) % 8;
        h.stream = g.reads[i].stream;
        h.msn = g.reads[i].msn;
        len = g.reads[i].len;
    }
    if (mf & 0x80) { /* bend the fields */
        h.msn = rd_seq(r, h.msn);
        len = rd_seq(r, len);
        h.stream = rd_stream(r);
    }
    h.msg_len = len;
    h.dsn = rd_seq(r, g.dsn);
    send_msg(&h, len, mf & 0x3F, drop, r);
}

static void rec_probe(struct rd *r)
{
    uint16_t p = rd_path(r);
    struct mroce_hdr h =
        peer_hdr(MROCE_OP_PROBE, p, rd_seq(r, g.psn[p % N_PATHS]));
    h.flags = rd_u8(r) & 0xF;
    feed(&h, NULL, 0);
    peer_used_psn(p, h.psn);
}

static void rec_close(struct rd *r)
{
    uint8_t b = rd_u8(r);
    struct mroce_hdr h = peer_hdr(b & 1 ? MROCE_OP_CLOSE_ACK : MROCE_OP_CLOSE,
                                  (b >> 1) & 1 ? rd_path(r) : 0, 0);
    feed(&h, NULL, 0);
}

static void rec_raw(struct rd *r)
{
    static uint8_t buf[PKT_MAX + 64];
    uint8_t f = rd_u8(r);
    size_t n = r->n < sizeof(buf) ? r->n : sizeof(buf);
    memcpy(buf, r->p, n);
    if ((f & 1) && n)
        buf[0] = (uint8_t)(MROCE_WIRE_VERSION << 4 | (buf[0] & 0xF));
    if ((f & 2) && n >= 8) {
        buf[4] = (uint8_t)(g.local.conn_id >> 24);
        buf[5] = (uint8_t)(g.local.conn_id >> 16);
        buf[6] = (uint8_t)(g.local.conn_id >> 8);
        buf[7] = (uint8_t)g.local.conn_id;
    }
    if ((f & 4) && n >= MROCE_ICRC_LEN)
        mroce_wire_seal(buf, n - MROCE_ICRC_LEN);
    feed_bytes(buf, n, (uint16_t)(f >> 4));
}

static void rec_time(struct rd *r)
{
    uint8_t b = rd_u8(r);
    uint64_t t = mroce_ctx_next_expiry(g.ctx);
    switch (b % 4) {
    case 0: /* the engine's next deadline */
        if (t != UINT64_MAX && t > g.now)
            g.now = t;
        break;
    case 1:
        g.now += (uint64_t)rd_u16(r) * 16;
        break;
    case 2:
        g.now += rd_u32(r);
        break;
    default:
        g.now += 100000; /* a little past the minimum RTO */
        break;
    }
    mroce_ctx_on_expiry(g.ctx, g.now);
}

static void rec_api_path(struct rd *r)
{
    uint8_t b = rd_u8(r);
    uint16_t p = (uint16_t)(b >> 2);
    struct mroce_path_info info;
    int err = mroce_path_query(g.conn, p % (N_PATHS + 1), &info);
    CHECK(err == 0 || err == MROCE_ENOENT);
    CHECK(err || info.state <= MROCE_PATH_DISABLED);
    if (b & 2) {
        err = mroce_path_repath(g.conn, p % (N_PATHS + 1));
        CHECK(err == 0 || err == MROCE_ENOENT);
    } else {
        err = mroce_path_enable(g.conn, p % (N_PATHS + 1), b & 1);
        CHECK(err == 0 || err == MROCE_ENOENT || err == MROCE_EINVAL);
    }
}

/* Whether one of our outstanding WRs holds region k (a non-empty SGE). */
static bool region_busy(int k)
{
    for (int s = 0; s < N_STREAMS; s++) {
        for (uint32_t m = g.sq_head[s]; m != g.sq_tail[s]; m++) {
            const struct swr *w = &g.sq[s][m % SQ_DEPTH];
            int used = w->op == MROCE_OP_READ_REQ ? R_LOCAL : R_SRC;
            if (w->len && k == used)
                return true;
        }
        for (uint32_t n = g.rq_head[s]; n != g.rq_tail[s]; n++)
            if (g.rq[s][n % RQ_DEPTH].len && k == R_LOCAL)
                return true;
    }
    return false;
}

/* Deregisters a region and registers the next of its blocks (a new key):
 * refused (EBUSY) while a posted WR or a READ response in service uses it
 * (R-MSG-17). The old block is filled with the pattern and kept (the
 * engine must not write it any more: check_memory), or with
 * RX_FUZZ_DEREG_FREE=1 freed at once so that ASan also catches reads;
 * that mode makes libFuzzer run its (slow) leak check on such inputs. No
 * allocation here otherwise, for the same reason. */
static void rec_api_rereg(uint8_t b)
{
    int k = b % N_REG;
    struct region *reg = &g.reg[k];
    int err = mroce_dereg_mr(reg->mr);
    if (region_busy(k)) /* one of our posted WRs refers to it */
        CHECK(err == MROCE_EBUSY);
    else if (reg_spec[k].access & MROCE_ACCESS_REMOTE_READ)
        CHECK(err == 0 || err == MROCE_EBUSY); /* a READ response, maybe */
    else
        CHECK(err == 0);
    if (err)
        return;
    memset(reg->block, FILL, reg->len + 2 * GUARD);
    if (g.dereg_free) {
        free(reg->block);
        reg->blocks[reg->cur] = NULL;
    }
    region_use(k, (reg->cur + 1) % N_BLOCKS);
    CHECK(region_reg(k) == 0);
    g.alloc_calls_setup = g.alloc_calls; /* registering may allocate */
}

static void input_begin(void);
static void input_end(void);

static void rec_api(struct rd *r)
{
    static const uint8_t ops[] = {MROCE_OP_WRITE, MROCE_OP_WRITE_IMM,
                                  MROCE_OP_SEND, MROCE_OP_SEND_IMM,
                                  MROCE_OP_READ_REQ};
    uint8_t a = rd_u8(r) % RX_API_N;
    uint8_t b = rd_u8(r);
    poll_all(); /* our view of the queues must be current */
    switch (a) {
    case RX_API_RECV:
        post_recv(b % N_STREAMS, rd_len(r), b >= 0xF0);
        break;
    case RX_API_PATH:
        rec_api_path(r);
        break;
    case RX_API_REREG:
        rec_api_rereg(b);
        break;
    case RX_API_META:
        g.ecn = b & 3;
        g.bad_src = (b & 4) != 0;
        break;
    case RX_API_END_INPUT:
        if (b == RX_API_END_INPUT_MAGIC) {
            input_end();
            input_begin();
            g.no_step = true;
        }
        break;
    case RX_API_DISCONNECT:
        if (b == RX_API_DISCONNECT_MAGIC) {
            int err = mroce_conn_disconnect(g.conn);
            CHECK(err == 0 || err == MROCE_ESTATE);
            poll_all();
        }
        break;
    default:
        post_send(ops[a], b % N_STREAMS, rd_len(r), rd_u16(r), b >= 0xF0);
        break;
    }
}

static void run_record(int kind, struct rd *r);

static void rec_mutate(struct rd *r)
{
    struct mut *mu = &g.mut;
    uint8_t inner = rx_kind_of_sel[rd_u8(r) % 16];
    mu->n = rd_u8(r) % 9;
    for (int i = 0; i < mu->n; i++) {
        mu->pos[i] = rd_u16(r);
        mu->val[i] = rd_u8(r);
    }
    mu->flags = rd_u8(r);
    mu->size = rd_u16(r);
    mu->on = true;
    if (inner == RX_MUTATE || inner == RX_RAW || inner == RX_TIME ||
        inner == RX_API)
        inner = RX_DATA_PKT;
    run_record(inner, r);
    mu->on = false; /* the record fed nothing */
}

static void run_record(int kind, struct rd *r)
{
    switch (kind) {
    case RX_DATA_MSG:
        rec_data_msg(r);
        break;
    case RX_DATA_PKT:
        rec_data_pkt(r);
        break;
    case RX_ACK_ALL:
        rec_ack_all(r);
        break;
    case RX_ACK_RAW:
        rec_ack_raw(r);
        break;
    case RX_NACK:
        rec_nack(r);
        break;
    case RX_READ_RESP:
        rec_read_resp(r);
        break;
    case RX_PROBE:
        rec_probe(r);
        break;
    case RX_CLOSE:
        rec_close(r);
        break;
    case RX_RAW:
        rec_raw(r);
        break;
    case RX_MUTATE:
        rec_mutate(r);
        break;
    case RX_TIME:
        rec_time(r);
        break;
    default:
        rec_api(r);
        break;
    }
}

/* ---- engine life cycle ---- */

static void fz_open(void)
{
    struct mroce_ctx_attr a = {.deterministic = 1, .seed = 1, .mtu = CTX_MTU};
    a.hooks.alloc = fz_alloc;
    a.hooks.free = fz_free;
    a.addr = (struct mroce_addr){.family = MROCE_AF_INET, .ip = {10, 0, 0, 1}};
    CHECK(mroce_ctx_open(&a, &g.ctx) == 0);
    CHECK(mroce_pd_alloc(g.ctx, &g.pd) == 0);
    CHECK(mroce_pd_alloc(g.ctx, &g.pd2) == 0);
    CHECK(mroce_cq_create(g.ctx, CQ_DEPTH, &g.scq) == 0);
    CHECK(mroce_cq_create(g.ctx, CQ_DEPTH, &g.rcq) == 0);
    for (int k = 0; k < N_REG; k++)
        CHECK(region_reg(k) == 0);
    struct mroce_conn_attr ca = {.send_cq = g.scq,
                                 .recv_cq = g.rcq,
                                 .n_streams = N_STREAMS,
                                 .n_paths = N_PATHS,
                                 .sq_depth = SQ_DEPTH,
                                 .rq_depth = RQ_DEPTH,
                                 .dsn_window = DSN_WINDOW,
                                 .path_window = PATH_WINDOW,
                                 .max_rd = 4,
                                 .retry_cnt = 3,
                                 .rnr_retry = 3,
                                 .ack_every = 2,
                                 .init_cwnd_pkts = 4};
    CHECK(mroce_conn_create(g.pd, &ca, &g.conn) == 0);
    /* The model numbers the engine's sequences from 0 (R-CONN-5 lets any
     * start; the wrap has its own tests in sec_fix_test). */
    CHECK(mroce_conn_set_init_seq(g.conn, 0, 0, 0) == 0);
    mroce_conn_get_params(g.conn, &g.local);
    g.remote = (struct mroce_conn_params){
        .conn_id = PEER_ID,
        .addr = {.family = MROCE_AF_INET, .ip = {10, 0, 0, 2}},
        .udp_port = PEER_PORT,
        .n_paths = N_PATHS,
        .n_streams = N_STREAMS,
        .mtu = MTU,
        .dsn_window = DSN_WINDOW,
        .msg_window = 4,
        .max_rd = 2,
        .features = MROCE_FEAT_ACKM, /* ACKMs both ways (section 3.15) */
    };
    CHECK(mroce_conn_connect(g.conn, &g.remote) == 0);
    g.now = T0;
    topup();
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

/* Back to a fresh engine, fresh memory contents and a fresh peer; the
 * region blocks, the options and the allocation count stay. */
static void fz_reset(void)
{
    fz_close();
    static struct fz keep;
    keep = g;
    memset(&g, 0, sizeof(g));
    memcpy(g.reg, keep.reg, sizeof(g.reg));
    memcpy(g.src_pattern, keep.src_pattern, sizeof(g.src_pattern));
    g.reset_every = keep.reset_every;
    g.dereg_free = keep.dereg_free;
    g.no_release_check = keep.no_release_check;
    g.trace = keep.trace;
    g.hist = keep.hist;
    g.alloc_calls = keep.alloc_calls;
    for (int k = 0; k < N_REG; k++) {
        for (unsigned i = 0; i < N_BLOCKS; i++)
            if (g.reg[k].blocks[i])
                memset(g.reg[k].blocks[i], FILL, g.reg[k].len + 2 * GUARD);
        region_use(k, g.reg[k].cur);
        g.reg[k].mr = NULL;
    }
    fz_open();
}

static void fz_exit(void)
{
    fz_close();
    for (int k = 0; k < N_REG; k++)
        for (unsigned i = 0; i < N_BLOCKS; i++)
            free(g.reg[k].blocks[i]);
    free(g.hist);
    g.hist = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *e = getenv("RX_FUZZ_RESET_EVERY");
    g.reset_every = e && atoi(e) > 0 ? (unsigned)atoi(e) : 64;
    e = getenv("RX_FUZZ_DEREG_FREE");
    g.dereg_free = e && atoi(e) > 0;
    e = getenv("RX_FUZZ_NO_RELEASE_CHECK");
    g.no_release_check = e && atoi(e) > 0;
    e = getenv("RX_FUZZ_TRACE");
    g.trace = e && atoi(e) > 0;
    g.hist = malloc(HIST_CAP);
    mem_init();
    fz_open();
    atexit(fz_exit);
#ifdef RX_FUZZ_ASAN
    /* libFuzzer owns the death callback: hook the reports instead */
    __asan_set_error_report_callback(fz_asan_report);
#endif
    return 0;
}

/* Runs the timers at the engine's next deadlines, a few times. */
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

/* Once the connection has left CONNECTED, the flush has released every
 * reference to the regions (WRs and READ responses): each deregisters.
 * They are registered again (new keys) for the rest of the input. */
static void check_released(void)
{
    if (g.no_release_check || mroce_conn_state(g.conn) == MROCE_CONN_CONNECTED)
        return;
    for (int k = 0; k < N_REG; k++) {
        struct region *reg = &g.reg[k];
        CHECK(mroce_dereg_mr(reg->mr) == 0);
        memset(reg->block, FILL, reg->len + 2 * GUARD);
        region_use(k, (reg->cur + 1) % N_BLOCKS);
        CHECK(region_reg(k) == 0);
    }
    g.alloc_calls_setup = g.alloc_calls;
}

static uint64_t log2_ceil(uint64_t v)
{
    uint64_t k = 0;
    while ((1ull << k) < v)
        k++;
    return k;
}

/* The engine allocates on the packet path only to grow a ring, each
 * doubling at most once per connection (src/engine/mem.c): the DSN ring
 * and the retransmit FIFO from 64 slots up to the DSN window, every path's
 * PSN ring from 8 up to the path window. Anything more is a per-packet
 * allocation. */
static uint64_t growth_allocs_max(void)
{
    uint64_t dsn = DSN_WINDOW > 64 ? log2_ceil(DSN_WINDOW / 64) : 0;
    uint64_t psn = PATH_WINDOW > 8 ? log2_ceil(PATH_WINDOW / 8) : 0;
    return 2 * dsn + N_PATHS * psn;
}

static void check_after_input(void)
{
    check_memory();
    check_flushed();
    check_released();
    CHECK(g.alloc_calls - g.alloc_calls_setup <= growth_allocs_max());
    struct mroce_ctx_counters c;
    mroce_ctx_get_counters(g.ctx, &c);
    CHECK(c.rx_pkts == g.rx_calls);
}

static void input_begin(void)
{
    g.ecn = MROCE_ECN_ECT0;
    g.bad_src = false;
    topup();
    drain();
}

static void input_end(void)
{
    run_timers();
    check_after_input();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t end_input[] = {RX_API_END_INPUT,
                                        RX_API_END_INPUT_MAGIC};
    if (++g.inputs > g.reset_every ||
        mroce_conn_state(g.conn) != MROCE_CONN_CONNECTED) {
        fz_reset();
        g.inputs = 1;
    }
    input_begin();
    struct rd in = {data, size};
    while (in.n) {
        uint8_t sel = rd_u8(&in);
        int kind = rx_kind_of_sel[sel % 16];
        size_t len = rd_u8(&in);
        if (kind == RX_RAW || kind == RX_MUTATE)
            len = len << 8 | rd_u8(&in);
        struct rd body = {in.p, len < in.n ? len : in.n};
        in.p += body.n;
        in.n -= body.n;
        hist_record(sel, kind, body.p, body.n);
        run_record(kind, &body);
        drain();
        if (!g.no_step)
            g.now += 1000;
        g.no_step = false;
    }
    input_end();
    hist_record(rx_sel_of_kind(RX_API), RX_API, end_input, sizeof(end_input));
    return 0;
}
