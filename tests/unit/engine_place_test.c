/* Direct placement at the responder (R-MSG-*, R-ORD-*, R-DSN-2): packets
 * land wherever they belong in whatever order they arrive, receive
 * completions come in MSN order, duplicates are acknowledged but never
 * placed or counted twice, RNR refuses without acknowledging. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "support/peer.h"

/* One inbound message as the peer sends it. */
struct msg {
    uint8_t op;
    uint16_t stream;
    uint32_t msn, ssn, imm, len;
    uint32_t dsn0;   /* DSN of packet 0; packet k has dsn0 + k */
    uint32_t va_off; /* WRITE target: mem + va_off */
    const uint8_t *data;
};

static int setup(void **state)
{
    *state = peer_new(NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    peer_free_all(); /* the fixture's peer and any a failed test left */
    return 0;
}

static uint32_t npkts(const struct msg *m)
{
    return m->len ? (m->len + PEER_MTU - 1) / PEER_MTU : 1;
}

static struct mroce_hdr pkt_hdr(const struct peer *p, const struct msg *m,
                                uint32_t k, uint16_t path, uint32_t psn)
{
    struct mroce_hdr h = peer_hdr(p, m->op, path, psn);
    h.dsn = m->dsn0 + k;
    h.stream = m->stream;
    h.msn = m->msn;
    h.ssn = m->ssn;
    h.imm = m->imm;
    h.msg_len = m->len;
    h.offset = k * PEER_MTU;
    h.va = p->va + m->va_off;
    h.rkey = p->rkey;
    return h;
}

static uint32_t pkt_len(const struct msg *m, uint32_t k)
{
    uint32_t left = m->len - k * PEER_MTU;
    return left < PEER_MTU ? left : PEER_MTU;
}

/* Packet k of m on (path, psn) with the given payload bytes. */
static int feed_as(struct peer *p, const struct msg *m, uint32_t k,
                   uint16_t path, uint32_t psn, const uint8_t *payload)
{
    struct mroce_hdr h = pkt_hdr(p, m, k, path, psn);
    return peer_feed(p, &h, payload, m->len ? pkt_len(m, k) : 0);
}

/* Packet k of m on `path` with that path's next PSN. */
static void feed(struct peer *p, const struct msg *m, uint32_t k, uint16_t path)
{
    const uint8_t *pl = m->len ? m->data + k * PEER_MTU : NULL;
    assert_int_equal(feed_as(p, m, k, path, p->psn[path]++, pl), 0);
}

static int rcq_poll(struct peer *p, struct mroce_wc *wc, int max)
{
    return peer_poll(p->rcq, wc, max);
}

static void assert_recv_wc(const struct mroce_wc *wc, const struct peer *p,
                           uint64_t wr_id, uint8_t opcode, uint32_t len,
                           bool has_imm, uint32_t imm)
{
    assert_int_equal(wc->wr_id, wr_id);
    assert_ptr_equal(wc->conn, p->conn);
    assert_int_equal(wc->status, MROCE_WC_SUCCESS);
    assert_int_equal(wc->opcode, opcode);
    assert_int_equal(wc->byte_len, len);
    assert_int_equal(wc->has_imm, has_imm);
    if (has_imm)
        assert_int_equal(wc->imm, imm);
}

/* The last ACK of the last drain. */
static const struct mroce_hdr *last_ack(const struct peer *p)
{
    int n = peer_count(p, MROCE_OP_ACK);
    assert_true(n > 0);
    return &peer_find(p, MROCE_OP_ACK, n - 1)->h;
}

/* ---- WRITE placement in any order ---- */

static void test_write_reverse_order(void **state)
{
    struct peer *p = *state;
    static uint8_t data[8 * PEER_MTU];
    struct msg m = {.op = MROCE_OP_WRITE, .len = 8 * PEER_MTU - 100};
    m.va_off = 1000;
    m.data = data;
    peer_pattern(data, m.len, 1);
    for (uint32_t k = npkts(&m); k-- > 0;) {
        assert_int_equal(peer_cnt(p).msgs_rx, 0);
        feed(p, &m, k, (uint16_t)(k % 4));
        assert_memory_equal(p->mem + 1000 + k * PEER_MTU, data + k * PEER_MTU,
                            pkt_len(&m, k));
    }
    assert_memory_equal(p->mem + 1000, data, m.len);
    assert_int_equal(peer_mem_dirty(p), m.len);
    assert_int_equal(peer_cnt(p).msgs_rx, 1);
    assert_int_equal(peer_cnt(p).rx_dup_pkts, 0);
    /* ack_every = 1, but a path's pending ACKs coalesce into one */
    assert_int_equal(peer_drain(p, NULL, 0), 4);
    assert_int_equal(peer_count(p, MROCE_OP_ACK), 4);
    assert_int_equal(last_ack(p)->dsn_cum, 8);
    struct mroce_wc wc[2];
    assert_int_equal(rcq_poll(p, wc, 2), 0); /* a plain WRITE: silent */
    assert_int_equal(peer_poll(p->scq, wc, 2), 0);
}

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static void random_order_once(uint32_t seed)
{
    struct peer *p = peer_new(NULL);
    static uint8_t data[16 * PEER_MTU];
    struct msg m = {.op = MROCE_OP_WRITE, .len = 16 * PEER_MTU - 7};
    m.va_off = 333;
    m.data = data;
    peer_pattern(data, m.len, seed);
    uint32_t order[16];
    for (uint32_t i = 0; i < 16; i++)
        order[i] = i;
    for (uint32_t i = 15; i > 0; i--) {
        uint32_t j = lcg(&seed) % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (uint32_t i = 0; i < 16; i++)
        feed(p, &m, order[i], (uint16_t)(lcg(&seed) % 4));
    assert_memory_equal(p->mem + 333, data, m.len);
    assert_int_equal(peer_mem_dirty(p), m.len);
    assert_int_equal(peer_cnt(p).msgs_rx, 1);
    assert_int_equal(peer_cnt(p).rx_data_pkts, 16);
    peer_drain(p, NULL, 0);
    assert_int_equal(last_ack(p)->dsn_cum, 16);
    peer_free(p);
}

static void test_write_random_order(void **state)
{
    (void)state;
    for (uint32_t seed = 1; seed <= 25; seed++)
        random_order_once(seed);
}

/* R-DSN-2: dsn_cum after every packet of rounds of 8 WRITEs that fill
 * the DSN window, the first in reverse order (one packet moves dsn_cum
 * over the whole window), the others shuffled; the DSNs start just short
 * of the middle of the window, so every round wraps past the end of the
 * map and each of its words. A DSN left marked once dsn_cum passed it
 * would make its alias in the next round a duplicate. */
static void dsn_cum_rounds(uint32_t window)
{
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.attr.dsn_window = window;
    uint32_t start = 5 * window - window / 2 - 3, per = window / 8;
    cfg.remote.init_dsn = start;
    struct peer *p = peer_new(&cfg);
    static uint8_t data[32 * PEER_MTU];
    peer_pattern(data, sizeof(data), window);
    uint32_t seed = window, order[256];
    bool got[256];
    for (uint32_t r = 0; r < 4; r++) {
        uint32_t base = start + r * window, cum = 0;
        for (uint32_t i = 0; i < window; i++) {
            order[i] = r ? i : window - 1 - i;
            got[i] = false;
        }
        for (uint32_t i = window - 1; r && i > 0; i--) {
            uint32_t j = lcg(&seed) % (i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (uint32_t i = 0; i < window; i++) {
            uint32_t d = order[i], k = d % per;
            struct msg m = {.op = MROCE_OP_WRITE, .len = per * PEER_MTU};
            m.msn = r * 8 + d / per;
            m.dsn0 = base + d - k;
            m.data = data;
            uint16_t path = (uint16_t)(lcg(&seed) % PEER_PATHS);
            struct mroce_hdr h = pkt_hdr(p, &m, k, path, p->psn[path]++);
            h.flags = MROCE_HF_ACKREQ; /* its ACK at once */
            assert_int_equal(peer_feed(p, &h, data + k * PEER_MTU, PEER_MTU),
                             0);
            for (got[d] = true; cum < window && got[cum];)
                cum++;
            assert_int_equal(peer_drain(p, NULL, 0), 1);
            assert_int_equal(last_ack(p)->dsn_cum, base + cum);
        }
    }
    assert_int_equal(peer_cnt(p).rx_dup_pkts, 0);
    assert_int_equal(peer_cnt(p).msgs_rx, 32);
    peer_free(p);
}

static void test_dsn_cum_over_words(void **state)
{
    (void)state;
    dsn_cum_rounds(256); /* four words */
    dsn_cum_rounds(16);  /* less than one */
}

static void test_write_imm_waits_for_all(void **state)
{
    struct peer *p = *state;
    static uint8_t data[4 * PEER_MTU];
    struct msg m = {.op = MROCE_OP_WRITE_IMM, .len = 4 * PEER_MTU - 1};
    m.imm = 0xCAFEBABE;
    m.data = data;
    peer_pattern(data, m.len, 2);
    peer_post_recv(p, 0, 5, 0, 0);
    static const uint32_t order[] = {2, 0, 3, 1};
    struct mroce_wc wc[4];
    for (int i = 0; i < 4; i++) {
        assert_int_equal(rcq_poll(p, wc, 4), 0);
        feed(p, &m, order[i], (uint16_t)i);
    }
    assert_int_equal(rcq_poll(p, wc, 4), 1);
    assert_recv_wc(&wc[0], p, 5, MROCE_WC_RECV_RDMA_WITH_IMM, m.len, true,
                   0xCAFEBABE);
    assert_int_equal(wc[0].stream, 0);
    assert_memory_equal(p->mem, data, m.len);
}

/* Message 1 complete before message 0: its completion waits (R-ORD-2),
 * while another stream is not held up (no head-of-line blocking). */
static void test_completion_in_msn_order(void **state)
{
    struct peer *p = *state;
    static uint8_t d0[2 * PEER_MTU], d1[2 * PEER_MTU], d2[100];
    peer_pattern(d0, sizeof(d0), 3);
    peer_pattern(d1, sizeof(d1), 4);
    peer_pattern(d2, sizeof(d2), 5);
    struct msg m0 = {MROCE_OP_WRITE_IMM, 0, 0, 0, 100, 2 * PEER_MTU, 0, 0, d0};
    struct msg m1 = {MROCE_OP_WRITE_IMM, 0, 1, 1, 101, 2 * PEER_MTU, 2,
                     2 * PEER_MTU,       d1};
    struct msg s1 = {MROCE_OP_SEND, 1, 0, 0, 0, 100, 4, 0, d2};
    peer_post_recv(p, 0, 10, 0, 0);
    peer_post_recv(p, 0, 11, 0, 0);
    peer_post_recv(p, 1, 20, 8192, 100);
    struct mroce_wc wc[4];
    feed(p, &m1, 1, 0);
    feed(p, &m1, 0, 1);
    feed(p, &m0, 1, 2);
    assert_int_equal(rcq_poll(p, wc, 4), 0);
    assert_int_equal(peer_cnt(p).msgs_rx, 0);
    feed(p, &s1, 0, 3); /* stream 1 completes at once */
    assert_int_equal(rcq_poll(p, wc, 4), 1);
    assert_recv_wc(&wc[0], p, 20, MROCE_WC_RECV, 100, false, 0);
    assert_int_equal(wc[0].stream, 1);
    feed(p, &m0, 0, 0);
    assert_int_equal(rcq_poll(p, wc, 4), 2);
    assert_recv_wc(&wc[0], p, 10, MROCE_WC_RECV_RDMA_WITH_IMM, m0.len, true,
                   100);
    assert_recv_wc(&wc[1], p, 11, MROCE_WC_RECV_RDMA_WITH_IMM, m1.len, true,
                   101);
    assert_memory_equal(p->mem, d0, sizeof(d0));
    assert_memory_equal(p->mem + 2 * PEER_MTU, d1, sizeof(d1));
    assert_memory_equal(p->mem + 8192, d2, sizeof(d2));
    assert_int_equal(peer_cnt(p).msgs_rx, 3);
}

/* ---- duplicates: acknowledged, never placed or counted again ---- */

/* Packet 0 of a 2-packet WRITE_IMM arrives, then a copy of it with other
 * bytes on (path, psn); nothing may change and the message must not
 * complete early (its byte count must not grow). */
static void dup_case(uint16_t dup_path, uint32_t dup_psn, bool retx_first)
{
    struct peer *p = peer_new(NULL);
    static uint8_t data[2 * PEER_MTU], other[PEER_MTU];
    peer_pattern(data, sizeof(data), 6);
    peer_pattern(other, sizeof(other), 7);
    struct msg m = {.op = MROCE_OP_WRITE_IMM, .len = 2 * PEER_MTU};
    m.imm = 9;
    m.data = data;
    peer_post_recv(p, 0, 1, 0, 0);
    const uint8_t *first = retx_first ? other : data;
    const uint8_t *second = retx_first ? data : other;
    uint16_t path1 = retx_first ? dup_path : 0;
    uint16_t path2 = retx_first ? 0 : dup_path;
    uint32_t psn1 = retx_first ? dup_psn : 0, psn2 = retx_first ? 0 : dup_psn;
    assert_int_equal(feed_as(p, &m, 0, path1, psn1, first), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    assert_int_equal(feed_as(p, &m, 0, path2, psn2, second), 0);
    assert_memory_equal(p->mem, first, PEER_MTU);
    assert_int_equal(peer_mem_dirty(p), PEER_MTU);
    assert_int_equal(peer_cnt(p).rx_dup_pkts, 1);
    assert_int_equal(peer_drain(p, NULL, 0), 1); /* the duplicate's ACK */
    const struct mroce_hdr *a = last_ack(p);
    assert_int_equal(a->path, path2);
    assert_int_equal(a->sack_high, psn2);
    assert_true(mroce_sack_test(a->sack, 0));
    assert_int_equal(a->dsn_cum, 1);
    struct mroce_wc wc[4];
    assert_int_equal(rcq_poll(p, wc, 4), 0);
    assert_int_equal(feed_as(p, &m, 1, 1, 0, data + PEER_MTU), 0);
    assert_int_equal(rcq_poll(p, wc, 4), 1);
    assert_recv_wc(&wc[0], p, 1, MROCE_WC_RECV_RDMA_WITH_IMM, m.len, true, 9);
    assert_int_equal(peer_cnt(p).msgs_rx, 1);
    assert_int_equal(rcq_poll(p, wc, 4), 0);
    peer_free(p);
}

static void test_duplicate_same_packet(void **state)
{
    (void)state;
    dup_case(0, 0, false); /* the very same (path, PSN, DSN) */
}

static void test_duplicate_other_path(void **state)
{
    (void)state;
    dup_case(2, 0, false); /* retransmission after the original */
    dup_case(3, 5, true);  /* late original after its retransmission */
}

/* ---- RNR ---- */

static void test_send_rnr_then_retx(void **state)
{
    struct peer *p = *state;
    uint8_t data[100];
    peer_pattern(data, sizeof(data), 8);
    struct msg m = {.op = MROCE_OP_SEND, .len = sizeof(data), .data = data};
    assert_int_equal(feed_as(p, &m, 0, 0, 0, data), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    const struct mroce_hdr *n = &p->out[0].h;
    assert_int_equal(n->opcode, MROCE_OP_NACK); /* and no ACK */
    assert_int_equal(n->nak_code, MROCE_NAK_RNR);
    assert_int_equal(n->path, 0);
    assert_int_equal(n->psn, 0);
    assert_int_equal(n->dsn, 0);
    assert_int_equal(n->msn, 0);
    assert_int_equal(n->stream, 0);
    assert_true(n->nak_info > 0);
    assert_int_equal(peer_cnt(p).rnr_naks, 1);
    assert_int_equal(peer_cnt(p).tx_acks, 0);
    assert_int_equal(peer_mem_dirty(p), 0);

    peer_post_recv(p, 0, 3, 4096, 256);
    struct mroce_hdr h = pkt_hdr(p, &m, 0, 0, 1);
    h.flags = MROCE_HF_RETX;
    assert_int_equal(peer_feed(p, &h, data, sizeof(data)), 0);
    assert_int_equal(peer_drain(p, NULL, 0), 1);
    const struct mroce_hdr *a = last_ack(p);
    assert_int_equal(a->sack_high, 1);
    assert_true(mroce_sack_test(a->sack, 0));
    assert_false(mroce_sack_test(a->sack, 1)); /* the refused PSN */
    assert_int_equal(a->dsn_cum, 1);
    struct mroce_wc wc[2];
    assert_int_equal(rcq_poll(p, wc, 2), 1);
    assert_recv_wc(&wc[0], p, 3, MROCE_WC_RECV, sizeof(data), false, 0);
    assert_memory_equal(p->mem + 4096, data, sizeof(data));
    assert_int_equal(peer_mem_dirty(p), sizeof(data));
}

static void test_send_multi_packet_reverse(void **state)
{
    struct peer *p = *state;
    static uint8_t data[2500];
    peer_pattern(data, sizeof(data), 9);
    struct msg m = {.op = MROCE_OP_SEND_IMM, .len = sizeof(data)};
    m.imm = 0x77;
    m.data = data;
    peer_post_recv(p, 0, 4, 4096, 3000);
    struct mroce_wc wc[2];
    for (uint32_t k = 3; k-- > 0;) {
        assert_int_equal(rcq_poll(p, wc, 2), 0);
        feed(p, &m, k, (uint16_t)k);
    }
    assert_int_equal(rcq_poll(p, wc, 2), 1);
    assert_recv_wc(&wc[0], p, 4, MROCE_WC_RECV, sizeof(data), true, 0x77);
    assert_memory_equal(p->mem + 4096, data, sizeof(data));
    assert_int_equal(peer_mem_dirty(p), sizeof(data)); /* not 3000 */
}

/* ---- zero-length messages: one packet, no payload ---- */

static void test_zero_length_messages(void **state)
{
    struct peer *p = *state;
    peer_post_recv(p, 0, 30, 0, 0);
    peer_post_recv(p, 0, 31, 0, 64);
    peer_post_recv(p, 0, 32, 0, 0);
    struct msg m[4] = {
        {.op = MROCE_OP_WRITE_IMM, .msn = 0, .ssn = 0, .imm = 6, .dsn0 = 0},
        {.op = MROCE_OP_SEND, .msn = 1, .ssn = 1, .dsn0 = 1},
        {.op = MROCE_OP_SEND_IMM, .msn = 2, .ssn = 2, .imm = 5, .dsn0 = 2},
        {.op = MROCE_OP_WRITE, .msn = 3, .dsn0 = 3},
    };
    for (int i = 0; i < 4; i++)
        feed(p, &m[i], 0, 0);
    struct mroce_wc wc[4];
    assert_int_equal(rcq_poll(p, wc, 4), 3);
    assert_recv_wc(&wc[0], p, 30, MROCE_WC_RECV_RDMA_WITH_IMM, 0, true, 6);
    assert_recv_wc(&wc[1], p, 31, MROCE_WC_RECV, 0, false, 0);
    assert_recv_wc(&wc[2], p, 32, MROCE_WC_RECV, 0, true, 5);
    assert_int_equal(peer_cnt(p).msgs_rx, 4);
    assert_int_equal(peer_mem_dirty(p), 0);
    peer_drain(p, NULL, 0);
    assert_int_equal(last_ack(p)->dsn_cum, 4);
}

/* R-MSG-5/7: a WRITE_IMM after other receive-consuming messages uses the
 * next receive. Regression: before 9ff9a02 WRITE_IMM carried no SNH, the
 * responder decoded ssn 0 and, once any receive of the stream had
 * completed, refused every WRITE_IMM with RNR forever. (docs/spec.md
 * R-MSG-8 and D7 still describe the SNH-less WRITE_IMM.) */
static void test_write_imm_after_send(void **state)
{
    struct peer *p = *state;
    uint8_t data[100];
    peer_pattern(data, sizeof(data), 14);
    peer_post_recv(p, 0, 60, 0, 16);
    peer_post_recv(p, 0, 61, 0, 0);
    struct msg s = {.op = MROCE_OP_SEND, .msn = 0, .ssn = 0, .dsn0 = 0};
    struct msg w = {.op = MROCE_OP_WRITE_IMM, .msn = 1, .ssn = 1, .imm = 3};
    w.dsn0 = 1;
    w.len = sizeof(data);
    w.va_off = 1024;
    w.data = data;
    feed(p, &s, 0, 0);
    feed(p, &w, 0, 1);
    peer_drain(p, NULL, 0);
    assert_int_equal(peer_count(p, MROCE_OP_NACK), 0);
    struct mroce_wc wc[4];
    assert_int_equal(rcq_poll(p, wc, 4), 2);
    assert_recv_wc(&wc[0], p, 60, MROCE_WC_RECV, 0, false, 0);
    assert_recv_wc(&wc[1], p, 61, MROCE_WC_RECV_RDMA_WITH_IMM, sizeof(data),
                   true, 3);
    assert_memory_equal(p->mem + 1024, data, sizeof(data));
}

/* ---- READ responses ---- */

static struct mroce_hdr read_req(const struct peer *p, uint32_t dsn,
                                 uint32_t msn, uint32_t off, uint32_t len)
{
    struct mroce_hdr h = peer_hdr(p, MROCE_OP_READ_REQ, 0, dsn);
    h.flags = MROCE_HF_ACKREQ;
    h.dsn = dsn;
    h.msn = msn;
    h.va = p->va + off;
    h.rkey = p->rkey;
    h.msg_len = len;
    return h;
}

static void test_read_response(void **state)
{
    struct peer *p = *state;
    peer_pattern(p->mem + 300, 2500, 12);
    struct mroce_hdr r = read_req(p, 0, 0, 300, 2500);
    assert_int_equal(peer_feed(p, &r, NULL, 0), 0);
    peer_drain(p, NULL, 0);
    assert_int_equal(peer_count(p, MROCE_OP_ACK), 1);
    /* R-VAL-7: no response data until the peer proves it holds the
     * connection: a PROBE first, its ACK, then the data */
    assert_int_equal(peer_count(p, MROCE_OP_READ_RESP), 0);
    peer_prove(p);
    assert_int_equal(peer_count(p, MROCE_OP_READ_RESP), 3);
    for (int k = 0; k < 3; k++) {
        const struct mroce_hdr *h = &peer_find(p, MROCE_OP_READ_RESP, k)->h;
        /* the responder's own DSN space */
        assert_int_equal(h->dsn, peer_tdsn(p, (uint32_t)k));
        assert_int_equal(h->msn, 0);
        assert_int_equal(h->stream, 0);
        assert_int_equal(h->msg_len, 2500);
        assert_int_equal(h->offset, k * PEER_MTU);
        assert_int_equal(h->payload_len, k < 2 ? PEER_MTU : 452);
        assert_memory_equal(h->payload, p->mem + 300 + k * PEER_MTU,
                            h->payload_len);
        /* R-ACK-1: the last three packets of a response ask for an ACK
         * (all of this one's) */
        assert_true(h->flags & MROCE_HF_ACKREQ);
    }
}

/* A READ executes only after the earlier messages of its stream, so it
 * sees their data (R-ORD-3). */
static void test_read_sees_earlier_write(void **state)
{
    struct peer *p = *state;
    static uint8_t data[2 * PEER_MTU];
    peer_pattern(data, sizeof(data), 13);
    struct msg w = {.op = MROCE_OP_WRITE, .len = sizeof(data), .data = data};
    feed(p, &w, 0, 0);
    struct mroce_hdr r = read_req(p, 2, 1, PEER_MTU, PEER_MTU);
    r.path = 1;
    assert_int_equal(peer_feed(p, &r, NULL, 0), 0);
    peer_drain(p, NULL, 0);
    assert_int_equal(peer_count(p, MROCE_OP_READ_RESP), 0);
    feed(p, &w, 1, 2);
    peer_drain(p, NULL, 0);
    peer_prove(p);
    assert_int_equal(peer_count(p, MROCE_OP_READ_RESP), 1);
    const struct mroce_hdr *h = &peer_find(p, MROCE_OP_READ_RESP, 0)->h;
    assert_int_equal(h->msn, 1);
    assert_memory_equal(h->payload, data + PEER_MTU, PEER_MTU);
}

static int setup_max_rd_1(void **state)
{
    struct peer_cfg cfg;
    peer_default_cfg(&cfg);
    cfg.attr.max_rd = 1;
    *state = peer_new(&cfg);
    return 0;
}

/* ENGINE BUG (reported): a zero-length READ never gets its one response
 * packet (req_next_resp skips a response whose sent >= len, and 0 >= 0),
 * so its response slot is never freed: after max_rd of them, every later
 * message of the stream waits forever. Repro (max_rd 1): READ_REQ msn 0
 * msg_len 0 -> no READ_RESP is ever emitted. */
static void test_zero_length_read(void **state)
{
    struct peer *p = *state;
    for (uint32_t i = 0; i < 2; i++) {
        struct mroce_hdr r = read_req(p, i, i, 0, 0);
        r.psn = i;
        assert_int_equal(peer_feed(p, &r, NULL, 0), 0);
        peer_drain(p, NULL, 0);
        assert_int_equal(peer_count(p, MROCE_OP_READ_RESP), 1);
        const struct peer_out *o = peer_find(p, MROCE_OP_READ_RESP, 0);
        assert_int_equal(o->h.msg_len, 0);
        assert_int_equal(o->h.payload_len, 0);
        assert_int_equal(o->h.msn, i);
        peer_ack_all(p); /* frees the response slot */
    }
    peer_post_recv(p, 0, 50, 0, 16);
    struct msg s = {.op = MROCE_OP_SEND, .msn = 2, .dsn0 = 2};
    feed(p, &s, 0, 1);
    struct mroce_wc wc[2];
    assert_int_equal(rcq_poll(p, wc, 2), 1);
    assert_recv_wc(&wc[0], p, 50, MROCE_WC_RECV, 0, false, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
        T(test_write_reverse_order),
        T(test_write_random_order),
        T(test_dsn_cum_over_words),
        T(test_write_imm_waits_for_all),
        T(test_completion_in_msn_order),
        T(test_duplicate_same_packet),
        T(test_duplicate_other_path),
        T(test_send_rnr_then_retx),
        T(test_send_multi_packet_reverse),
        T(test_zero_length_messages),
        T(test_write_imm_after_send),
        T(test_read_response),
        T(test_read_sees_earlier_write),
        cmocka_unit_test_setup_teardown(test_zero_length_read, setup_max_rd_1,
                                        teardown),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
