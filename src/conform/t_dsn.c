/* Section 6.4: the receiver's DSN window (duplicates before and inside
 * it, the edge, the out-of-window drop, a map that aliases, dsn_cum) and
 * the sender's acknowledgement by dsn_cum and by SACK alone. */
#include <string.h>

#include "conform/cf.h"

/* A one-packet WRITE of 32 bytes with DSN `dsn`, the next PSN on path,
 * to the IUT's region at off; MSN of a fresh message. */
static struct mroce_hdr dsn_write(struct cf_t *t, uint16_t path, uint32_t dsn,
                                  uint32_t off, uint32_t seed)
{
    uint8_t d[32];
    cf_pattern(d, sizeof(d), seed);
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_WRITE, path);
    h.psn = cf_next_psn(t, path);
    h.dsn = dsn;
    h.msn = t->p->msn[0]++;
    h.msg_len = sizeof(d);
    h.va = t->iut.va + off;
    h.rkey = t->iut.rkey;
    h.flags = MROCE_HF_ACKREQ;
    cf_send(t, &h, d, sizeof(d));
    return h;
}

struct psn_arg {
    uint16_t path;
    uint32_t psn;
};

static bool dsn_acked_psn(const struct cf_pkt *pk, const void *arg)
{
    const struct psn_arg *a = arg;
    uint32_t i = pk->h.sack_high - a->psn;
    return !pk->derr && pk->h.opcode == MROCE_OP_ACK && pk->h.path == a->path &&
           i < 256 && mroce_sack_test(pk->h.sack, i);
}

static bool dsn_recorded(struct cf_t *t, const struct mroce_hdr *h, int ms)
{
    struct psn_arg a = {h->path, h->psn};
    return cf_wait(t, dsn_acked_psn, &a, ms) != NULL;
}

static bool dsn_mem_is(struct cf_t *t, uint32_t off, uint32_t seed)
{
    uint8_t d[32], got[32];
    cf_pattern(d, sizeof(d), seed);
    cf_iut_read(t, off, got, sizeof(got));
    return !memcmp(d, got, sizeof(d));
}

/* R-DSN-5: a duplicate is recorded, never placed again. */
static void dsn_dup_before_cum(struct cf_t *t)
{
    cf_open(t, NULL);
    struct mroce_hdr a = dsn_write(t, 0, cf_next_dsn(t), 0x100, 1);
    CF_REQUIRE(t, cf_wait_cum(t, a.dsn, cf_ms(t, 1000)), "no ACK");
    t->p->msn[0]--; /* the same message again */
    struct mroce_hdr b = dsn_write(t, 1, a.dsn, 0x100, 2);
    CF_CHECK(t, dsn_recorded(t, &b, cf_ms(t, 1000)),
             "a duplicate DSN was not recorded on its path");
    CF_CHECK(t, dsn_mem_is(t, 0x100, 1),
             "a duplicate DSN (before dsn_cum) was placed again");
}

static void dsn_dup_in_window(struct cf_t *t)
{
    cf_open(t, NULL);
    uint32_t base = t->p->dsn;
    t->p->dsn += 3; /* DSNs base..base+2 held back: a hole at dsn_cum */
    struct mroce_hdr a = dsn_write(t, 0, base + 2, 0x200, 3);
    CF_REQUIRE(t, dsn_recorded(t, &a, cf_ms(t, 1000)), "no ACK");
    t->p->msn[0]--;
    struct mroce_hdr b = dsn_write(t, 1, base + 2, 0x200, 4);
    CF_CHECK(t, dsn_recorded(t, &b, cf_ms(t, 1000)),
             "a duplicate DSN in the window was not recorded");
    CF_CHECK(t, dsn_mem_is(t, 0x200, 3),
             "a duplicate DSN (in the window, marked) was placed again");
}

static void dsn_dup_counted(struct cf_t *t)
{
    cf_open(t, NULL);
    int64_t before = cf_counter(t, "conn", "dup");
    struct mroce_hdr a = dsn_write(t, 0, cf_next_dsn(t), 0x100, 1);
    CF_REQUIRE(t, cf_wait_cum(t, a.dsn, cf_ms(t, 1000)), "no ACK");
    t->p->msn[0]--;
    struct mroce_hdr b = dsn_write(t, 1, a.dsn, 0x100, 2);
    dsn_recorded(t, &b, cf_ms(t, 1000));
    cf_delta(t, "conn", "dup", before, 1);
}

/* R-DSN-7: the IUT as sender keeps its DSNs within the window the suite
 * announced (4): with nothing acknowledged, 4 packets of 8 go out. */
static void dsn_window_sender(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){
                   .n_paths = 2, .my_dsn_window = 4, .min_rto_ns = 40000000});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 8 * 1024});
    cf_pump(t, 30);
    uint32_t most = 0;
    for (int i = 0; i < t->p->n_log; i++)
        if (cf_is_data(t->p->log[i], NULL) &&
            t->p->log[i]->h.dsn - t->p->iut_init_dsn + 1 > most)
            most = t->p->log[i]->h.dsn - t->p->iut_init_dsn + 1;
    CF_CHECK(t, most == 4,
             "DSNs up to init_dsn + %u sent with none acknowledged, window 4",
             most - 1);
}

/* R-DSN-6: beyond the window: dropped, not recorded, no reply. */
static void dsn_out_of_window(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.dsn_window = 64});
    int from = t->p->n_log;
    struct mroce_hdr h = dsn_write(t, 1, t->p->dsn + 64, 0x300, 5);
    cf_silent(t, from, "a DSN one past the window");
    CF_CHECK(t, !dsn_mem_is(t, 0x300, 5), "a DSN past the window was placed");
    (void)h;
    cf_alive(t);
}

static void dsn_out_counted(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.dsn_window = 64});
    int64_t before = cf_counter(t, "conn", "dsn_window");
    dsn_write(t, 1, t->p->dsn + 64, 0x300, 5);
    CF_REQUIRE(t, cf_barrier(t, 0, cf_ms(t, 1000)), "no barrier ACK");
    cf_delta(t, "conn", "dsn_window", before, 1);
}

/* R-DSN-3: the last DSN in the window is accepted. */
static void dsn_edge(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.dsn_window = 64});
    struct mroce_hdr h = dsn_write(t, 1, t->p->dsn + 63, 0x400, 6);
    CF_CHECK(t, dsn_recorded(t, &h, cf_ms(t, 1000)),
             "the last DSN of the window was not accepted");
    CF_CHECK(t, dsn_mem_is(t, 0x400, 6),
             "the last DSN of the window was not placed");
}

/* R-DSN-3: the map is read only for DSNs in the window: dsn_cum + 1 + W
 * has the map position of dsn_cum + 1, which is marked. */
static void dsn_alias(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.dsn_window = 64});
    uint32_t cum = t->p->dsn;
    struct mroce_hdr a = dsn_write(t, 0, cum + 1, 0x500, 7);
    CF_REQUIRE(t, dsn_recorded(t, &a, cf_ms(t, 1000)), "no ACK");
    int from = t->p->n_log;
    dsn_write(t, 1, cum + 1 + 64, 0x600, 8);
    cf_silent(t, from,
              "an out-of-window DSN whose map bit is set by an in-window one");
}

/* R-DSN-4: dsn_cum jumps over every DSN marked at the front. */
static void dsn_cum_advance(struct cf_t *t)
{
    cf_open(t, NULL);
    uint32_t c = t->p->dsn;
    t->p->dsn += 4;
    dsn_write(t, 0, c + 3, 0x700, 9);
    dsn_write(t, 0, c + 1, 0x720, 10);
    dsn_write(t, 0, c + 2, 0x740, 11);
    cf_pump(t, 10);
    CF_CHECK(t, !t->p->got_ack || t->p->iut_cum == c,
             "dsn_cum %u before DSN %u arrived", t->p->iut_cum, c);
    dsn_write(t, 0, c, 0x760, 12);
    CF_CHECK(t, cf_wait_cum(t, c + 3, cf_ms(t, 1000)),
             "dsn_cum did not move past %u once the hole filled", c + 3);
    CF_CHECK(t, t->p->iut_cum == c + 4, "dsn_cum %u, expected %u",
             t->p->iut_cum, c + 4);
}

/* R-DSN-4, R-RETRY-3: a refused DSN is not marked; accepted later. */
static void dsn_refused_not_marked(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_msg m = {
        .op = MROCE_OP_SEND, .len = 16, .data = "refused-then-ok!", .path = 0};
    cf_send_msg(t, &m);
    CF_REQUIRE(t,
               cf_nack_is(t, cf_wait_nack(t, cf_ms(t, 1000)), MROCE_NAK_RNR,
                          "a SEND with no receive"),
               "no RNR");
    cf_pump(t, 5);
    CF_CHECK(t, !t->p->got_ack || t->p->iut_cum == m.first_dsn,
             "dsn_cum moved past a refused DSN");
    cf_post(t, &(struct cf_wr){.op = "recv", .wr_id = 7, .len = 64});
    cf_resend(t, &m, 0, 1);
    CF_CHECK(t, cf_wait_cum(t, m.first_dsn, cf_ms(t, 1000)),
             "the refused DSN was not accepted once the receive was posted");
    cf_wc_is(t, cf_wait_wc(t, "recv", 7, cf_ms(t, 1000)), 7, "SUCCESS");
}

/* R-DSN-8: a DSN is acknowledged by dsn_cum alone, or by SACK alone. */
static void dsn_ack_by_cum(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 2});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    cf_post(t,
            &(struct cf_wr){.op = "write", .wr_id = 2, .len = 64, .roff = 64});
    const struct cf_pkt *a = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    const struct cf_pkt *b = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, a && b && a->h.path != b->h.path,
               "the two WRITEs did not go on two paths");
    cf_send_ack(t, b->h.path); /* SACK for b only; dsn_cum covers a too */
    cf_wc_is(t,
             cf_wait_wc(t, "send", a->h.dsn == cf_iut_dsn(t, 0) ? 1 : 2,
                        cf_ms(t, 1000)),
             a->h.dsn == cf_iut_dsn(t, 0) ? 1 : 2, "SUCCESS");
}

static void dsn_ack_by_sack(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    CF_REQUIRE(t, cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000)), "no WRITE");
    struct mroce_hdr h;
    cf_ack_fill(t, 0, &h);
    h.dsn_cum -= 1; /* as if stale: only the SACK bit says so */
    cf_send(t, &h, NULL, 0);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
}

const struct cf_test cf_t_dsn[] = {
    CF_TEST("dsn.dup.before_cum", "6.4", "R-DSN-3 R-DSN-5", MUST,
            "a DSN before dsn_cum: recorded, not placed", dsn_dup_before_cum),
    CF_TEST("dsn.dup.in_window", "6.4", "R-DSN-3 R-DSN-5", MUST,
            "a marked DSN in the window: recorded, not placed",
            dsn_dup_in_window),
    CF_TEST("dsn.dup.counted", "6.4", "R-DSN-5 R-RX-5", SHOULD,
            "a duplicate counted dup", dsn_dup_counted),
    CF_TEST("dsn.window.sender", "6.4", "R-DSN-7", MUST,
            "the IUT sends no DSN beyond the window the peer announced",
            dsn_window_sender),
    CF_TEST("dsn.out_of_window", "6.4", "R-DSN-6 R-RX-5", MUST,
            "dsn_cum + W: dropped silently, not recorded", dsn_out_of_window),
    CF_TEST("dsn.out_of_window.counted", "6.4", "R-DSN-6 R-RX-5", SHOULD,
            "... counted dsn_window", dsn_out_counted),
    CF_TEST("dsn.window_edge", "6.4", "R-DSN-3", MUST,
            "dsn_cum + W - 1 accepted", dsn_edge),
    CF_TEST("dsn.window_alias", "6.4", "R-DSN-3", MUST,
            "the map is not read for a DSN out of the window", dsn_alias),
    CF_TEST("dsn.cum_advance", "6.4", "R-DSN-2 R-DSN-4 R-ACK-2", MUST,
            "dsn_cum moves past every marked DSN at the front",
            dsn_cum_advance),
    CF_TEST("dsn.refused_not_marked", "6.4", "R-DSN-4 R-RETRY-3 R-NACK-6", MUST,
            "a refused DSN is not marked; accepted when ready",
            dsn_refused_not_marked),
    CF_TEST("dsn.ack.by_cum", "6.4", "R-DSN-8 R-ORD-6", MUST,
            "a DSN acknowledged by dsn_cum alone", dsn_ack_by_cum),
    CF_TEST("dsn.ack.by_sack", "6.4", "R-DSN-8 R-LOSS-1", MUST,
            "a DSN acknowledged by a SACK bit alone", dsn_ack_by_sack),
    {0},
};
