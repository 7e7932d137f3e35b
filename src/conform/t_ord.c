/* Section 8: ordering and completion. MSNs in post order, placement in
 * any order and at once, receive completions in MSN order, send-side
 * completion only when everything is acknowledged and in post order,
 * streams independent, and the order of a flush. */
#include <string.h>

#include "conform/cf.h"

/* R-ORD-1: the i-th request posted takes MSN init + i. R-ORD-2 lets the
 * IUT send them in any order (and a retransmission repeats one), so the
 * check is which request each MSN carries, not the order on the wire:
 * the posts alternate READ and WRITE. */
static void ord_msn(struct cf_t *t)
{
    cf_open(t, NULL);
    for (int i = 0; i < 5; i++)
        cf_post(t, &(struct cf_wr){.op = i % 2 ? "write" : "read",
                                   .wr_id = (uint64_t)i + 1,
                                   .stream = 1,
                                   .len = 64,
                                   .off = (uint32_t)i * 64,
                                   .roff = (uint32_t)i * 64});
    cf_wait_wc(t, "send", 5, cf_ms(t, 1000));
    uint32_t msn0 = cf_iut_msn(t, 0);
    bool seen[5] = {false};
    for (int i = 0; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        if (!cf_is_data(pk, NULL) || !pk->first ||
            pk->h.opcode == MROCE_OP_READ_RESP)
            continue;
        uint32_t k = pk->h.msn - msn0;
        if (!CF_CHECK(t, k < 5, "MSN %u sent, outside the 5 posted from %u",
                      pk->h.msn, msn0))
            continue;
        uint8_t want = k % 2 ? MROCE_OP_WRITE : MROCE_OP_READ_REQ;
        CF_CHECK(t, pk->h.opcode == want,
                 "MSN %u carries opcode 0x%02x, request %u posted was 0x%02x",
                 pk->h.msn, pk->h.opcode, k + 1, want);
        seen[k] = true;
    }
    for (uint32_t k = 0; k < 5; k++)
        CF_CHECK(t, seen[k], "no request sent with MSN %u (post %u of 5)",
                 msn0 + k, k + 1);
}

static void ord_reverse(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[4096], got[4096];
    cf_pattern(d, sizeof(d), 71);
    struct cf_msg m = {.op = MROCE_OP_WRITE,
                       .len = sizeof(d),
                       .data = d,
                       .roff = 0x60000,
                       .reverse = true};
    cf_send_msg(t, &m);
    CF_CHECK(t, cf_wait_cum(t, m.first_dsn + 3, cf_ms(t, 1000)),
             "a WRITE sent last packet first was not acknowledged");
    cf_iut_read(t, 0x60000, got, sizeof(got));
    CF_CHECK(t, !memcmp(got, d, sizeof(d)),
             "a WRITE sent last packet first was not placed");
}

/* R-ORD-2: data of a later message lands at once, before an earlier
 * message is complete. */
static void ord_no_wait(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t a[2048], b[64], got[64];
    cf_pattern(a, sizeof(a), 72);
    cf_pattern(b, sizeof(b), 73);
    struct cf_msg ma = {.op = MROCE_OP_WRITE,
                        .len = sizeof(a),
                        .data = a,
                        .roff = 0x61000,
                        .skip = 1};
    struct cf_msg mb = {
        .op = MROCE_OP_WRITE, .len = sizeof(b), .data = b, .roff = 0x62000};
    cf_send_msg(t, &ma);
    cf_send_msg(t, &mb);
    CF_REQUIRE(t, cf_wait_sacked(t, mb.pth[0], mb.psn[0], cf_ms(t, 1000)),
               "the later WRITE was not acknowledged");
    cf_iut_read(t, 0x62000, got, sizeof(got));
    CF_CHECK(t, !memcmp(got, b, sizeof(b)),
             "a later message was held back for an earlier incomplete one");
}

/* R-ORD-3, R-ORD-4: receives complete in MSN order. */
static void ord_recv_order(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_post(t, &(struct cf_wr){.op = "recv", .wr_id = 10, .len = 4096});
    cf_post(t, &(struct cf_wr){
                   .op = "recv", .wr_id = 11, .len = 4096, .off = 4096});
    uint8_t d[2048];
    cf_pattern(d, sizeof(d), 74);
    struct cf_msg a = {
        .op = MROCE_OP_SEND, .len = sizeof(d), .data = d, .skip = 1};
    struct cf_msg b = {.op = MROCE_OP_SEND, .len = 16, .data = d};
    cf_send_msg(t, &a);
    cf_send_msg(t, &b);
    cf_pump(t, 20);
    cf_poll(t);
    CF_CHECK(t, !cf_find_wc(t, "recv", 11),
             "the second SEND completed before the first was complete");
    cf_resend(t, &a, 0, 0);
    cf_wait_wc(t, "recv", 11, cf_ms(t, 1000));
    const struct cf_wc *w10 = cf_find_wc(t, "recv", 10);
    const struct cf_wc *w11 = cf_find_wc(t, "recv", 11);
    CF_CHECK(t, w10 && w11 && w10 < w11,
             "receive completions out of MSN "
             "order");
}

/* R-ORD-4: when a receive completes, every earlier message's data is in
 * place. */
static void ord_data_visible(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_post(t, &(struct cf_wr){.op = "recv", .wr_id = 10, .len = 64});
    uint8_t d[3072], got[3072];
    cf_pattern(d, sizeof(d), 75);
    struct cf_msg w = {.op = MROCE_OP_WRITE,
                       .len = sizeof(d),
                       .data = d,
                       .roff = 0x63000,
                       .skip = 1 << 2};
    struct cf_msg s = {
        .op = MROCE_OP_SEND_IMM, .len = 8, .data = "visible!", .imm = 1};
    cf_send_msg(t, &w);
    cf_send_msg(t, &s);
    cf_resend(t, &w, 2, 1);
    CF_REQUIRE(t, cf_wait_wc(t, "recv", 10, cf_ms(t, 1000)),
               "no receive completion");
    cf_iut_read(t, 0x63000, got, sizeof(got));
    CF_CHECK(t, !memcmp(got, d, sizeof(d)),
             "a receive completed before the WRITE before it was in place");
}

/* R-ORD-6: a WRITE completes when every DSN is acknowledged. */
static void ord_all_acked(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    struct cf_drop_dsn d = {.dsn = cf_iut_dsn(t, 2), .times = 1};
    t->p->drop = cf_drop_dsn_fn;
    t->p->drop_ud = &d;
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 3 * 1024});
    for (int i = 0; i < 3; i++)
        CF_REQUIRE(t, cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000)),
                   "the IUT sent %d of 3 packets", i);
    struct mroce_hdr a;
    cf_ack_fill(t, 0, &a); /* PSNs 0 and 1; the last packet not received */
    cf_send(t, &a, NULL, 0);
    cf_pump(t, 20);
    cf_poll(t);
    CF_CHECK(t, !cf_find_wc(t, "send", 1),
             "a WRITE completed with one of its DSNs unacknowledged");
    t->p->auto_ack = true;
    t->p->drop = NULL;
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
}

/* R-ORD-6: a READ completes when all its response packets arrived. */
static void ord_read_all(struct cf_t *t)
{
    cf_open(t, NULL);
    t->p->auto_read = false;
    cf_post(t, &(struct cf_wr){.op = "read", .wr_id = 1, .len = 3000});
    const struct cf_pkt *rq = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, rq, "no READ_REQ");
    uint8_t d[3000];
    cf_pattern(d, sizeof(d), 76);
    uint32_t base = t->p->dsn;
    t->p->dsn += 3;
    for (uint32_t i = 0; i < 3; i++) {
        if (i == 1)
            continue;
        struct mroce_hdr h = cf_hdr(t, MROCE_OP_READ_RESP, 0);
        h.psn = cf_next_psn(t, 0);
        h.dsn = base + i;
        h.stream = rq->h.stream;
        h.msn = rq->h.msn;
        h.msg_len = 3000;
        h.offset = i * 1024;
        cf_send(t, &h, d + h.offset, i == 2 ? 952 : 1024);
    }
    cf_pump(t, 20);
    cf_poll(t);
    CF_CHECK(t, !cf_find_wc(t, "send", 1),
             "a READ completed with a response packet missing");
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_READ_RESP, 1);
    h.psn = cf_next_psn(t, 1);
    h.dsn = base + 1; /* the DSN held back */
    h.stream = rq->h.stream;
    h.msn = rq->h.msn;
    h.msg_len = 3000;
    h.offset = 1024;
    h.flags = MROCE_HF_ACKREQ;
    cf_send(t, &h, d + 1024, 1024);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
    uint8_t got[3000];
    cf_iut_read(t, 0, got, sizeof(got));
    CF_CHECK(t, !memcmp(got, d, sizeof(d)), "the READ's bytes are wrong");
}

/* R-ORD-7: send completions in post order per stream. */
static void ord_send_order(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 2});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 2, .len = 64});
    const struct cf_pkt *a = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    const struct cf_pkt *b = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, a && b && a->h.path != b->h.path,
               "the two WRITEs did not go on two paths");
    const struct cf_pkt *second = a->h.msn == cf_iut_msn(t, 1) ? a : b;
    const struct cf_pkt *first = second == a ? b : a;
    struct mroce_hdr h;
    cf_ack_fill(t, second->h.path, &h);
    h.dsn_cum = cf_iut_dsn(t, 0); /* only the SACK of the second */
    cf_send(t, &h, NULL, 0);
    cf_pump(t, 10);
    cf_poll(t);
    CF_CHECK(t, !cf_find_wc(t, "send", 2),
             "the second WRITE completed before the first");
    cf_send_ack(t, first->h.path);
    cf_wait_wc(t, "send", 2, cf_ms(t, 1000));
    CF_CHECK(t, t->n_wc == 2 && t->wc[0].wr_id == 1 && t->wc[1].wr_id == 2,
             "send completions not in post order");
}

/* R-ORD-8: a stream never waits for another. */
static void ord_streams_recv(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_post(t, &(struct cf_wr){.op = "recv", .wr_id = 10, .len = 4096});
    cf_post(
        t, &(struct cf_wr){
               .op = "recv", .wr_id = 11, .stream = 1, .len = 64, .off = 4096});
    uint8_t d[2048] = {1};
    struct cf_msg a = {
        .op = MROCE_OP_SEND, .len = sizeof(d), .data = d, .skip = 1};
    struct cf_msg b = {
        .op = MROCE_OP_SEND, .stream = 1, .len = 8, .data = "stream-1"};
    cf_send_msg(t, &a);
    cf_send_msg(t, &b);
    CF_CHECK(t, cf_wait_wc(t, "recv", 11, cf_ms(t, 1000)) != NULL,
             "stream 1's receive waited for stream 0's incomplete message");
}

static void ord_streams_send(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_drop_dsn d = {.dsn = cf_iut_dsn(t, 0), .times = 1000};
    t->p->drop = cf_drop_dsn_fn;
    t->p->drop_ud = &d;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    cf_post(t,
            &(struct cf_wr){.op = "write", .wr_id = 2, .stream = 1, .len = 64});
    CF_CHECK(t, cf_wait_wc(t, "send", 2, cf_ms(t, 1000)) != NULL,
             "stream 1's WRITE waited for stream 0's");
    CF_CHECK(t, !cf_find_wc(t, "send", 1), "stream 0's lost WRITE completed");
}

/* R-ORD-9: a fatal error flushes stream by stream in post order, the
 * failing WR with its status in its place. */
static void ord_flush_order(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    t->p->auto_ack = false;
    for (int i = 0; i < 3; i++)
        cf_post(t, &(struct cf_wr){.op = "recv",
                                   .wr_id = 20 + (uint64_t)i,
                                   .stream = (uint16_t)(i % 2),
                                   .len = 64,
                                   .off = 8192 + (uint32_t)i * 64});
    for (int i = 0; i < 5; i++)
        cf_post(t, &(struct cf_wr){.op = "write",
                                   .wr_id = (uint64_t)i + 1,
                                   .stream = (uint16_t)(i >= 3),
                                   .len = 64});
    const struct cf_pkt *bad = NULL, *pk;
    while (!bad && (pk = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000))))
        if (pk->h.stream == 0 && pk->h.msn == cf_iut_msn(t, 1))
            bad = pk;
    CF_REQUIRE(t, bad, "no WRITE with MSN 1 on stream 0");
    struct mroce_hdr n = cf_hdr(t, MROCE_OP_NACK, bad->h.path);
    n.psn = bad->h.psn;
    n.dsn = bad->h.dsn;
    n.msn = bad->h.msn;
    n.nak_code = MROCE_NAK_INVALID_REQUEST;
    cf_send(t, &n, NULL, 0);
    cf_wait_wc(t, "recv", 22, cf_ms(t, 1000));
    cf_wait_wc(t, "send", 5, cf_ms(t, 1000));
    static const uint64_t s0[] = {1, 2, 3}, s1[] = {4, 5};
    int k0 = 0, k1 = 0, r0 = 0;
    for (int i = 0; i < t->n_wc; i++) {
        const struct cf_wc *w = &t->wc[i];
        if (!strcmp(w->cq, "send") && w->stream == 0 && k0 < 3)
            CF_CHECK(t, w->wr_id == s0[k0++],
                     "stream 0 send completion %d is "
                     "wr %llu",
                     k0, (unsigned long long)w->wr_id);
        else if (!strcmp(w->cq, "send") && w->stream == 1 && k1 < 2)
            CF_CHECK(t, w->wr_id == s1[k1++],
                     "stream 1 send completion %d is "
                     "wr %llu",
                     k1, (unsigned long long)w->wr_id);
        else if (!strcmp(w->cq, "recv") && w->stream == 0)
            CF_CHECK(t, w->wr_id == (r0++ ? 22u : 20u),
                     "stream 0 receive completions out of order");
    }
    const struct cf_wc *w2 = cf_find_wc(t, "send", 2);
    CF_CHECK(t, w2 && !strcmp(w2->status, "REM_INV_REQ_ERR"),
             "the NACKed WR completed %s", w2 ? w2->status : "never");
    for (uint64_t w = 1; w <= 5; w++)
        if (w != 2) {
            const struct cf_wc *x = cf_find_wc(t, "send", w);
            CF_CHECK(t, x && !strcmp(x->status, "FLUSH_ERR"),
                     "wr %llu completed %s, expected FLUSH_ERR",
                     (unsigned long long)w, x ? x->status : "never");
        }
}

const struct cf_test cf_t_ord[] = {
    CF_TEST("ord.msn", "8", "R-ORD-1", MUST, "MSNs consecutive in post order",
            ord_msn),
    CF_TEST("ord.place.reverse", "8", "R-ORD-2", MUST,
            "packets placed in any order", ord_reverse),
    CF_TEST("ord.place.no_wait", "8", "R-ORD-2", MUST,
            "placement not delayed for an earlier message", ord_no_wait),
    CF_TEST("ord.recv.order", "8", "R-ORD-3 R-ORD-4", MUST,
            "receive completions in MSN order", ord_recv_order),
    CF_TEST("ord.recv.data_visible", "8", "R-ORD-4", MUST,
            "earlier data in place when a receive completes", ord_data_visible),
    CF_TEST("ord.send.all_acked", "8", "R-ORD-6", MUST,
            "a WRITE completes only when every DSN is acknowledged",
            ord_all_acked),
    CF_TEST("ord.read.all_resp", "8", "R-ORD-6", MUST,
            "a READ completes only with all its response", ord_read_all),
    CF_TEST("ord.send.post_order", "8", "R-ORD-7", MUST,
            "send completions in post order", ord_send_order),
    CF_TEST("ord.streams.recv", "8", "R-ORD-8", MUST,
            "a stream's receive does not wait for another stream",
            ord_streams_recv),
    CF_TEST("ord.streams.send", "8", "R-ORD-8", MUST,
            "a stream's WRITE does not wait for another stream",
            ord_streams_send),
    CF_TEST("ord.flush", "8", "R-ORD-9 R-CONN-12 R-NACK-5", MUST,
            "flush order: per stream, post order, error in place",
            ord_flush_order),
    {0},
};
