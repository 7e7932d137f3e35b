/* Section 10.3: NACKs. The sender's reaction to each syndrome (status,
 * ERROR), reserved syndromes and NACKs that match nothing ignored, the
 * match by stream and MSN, what an RNR releases; the receiver's side:
 * a NACK for each arrival, ERROR after a fatal one, nothing after RNR. */
#include <string.h>

#include "conform/cf.h"

/* The IUT writes once on one path; the suite holds its ACK. */
static const struct cf_pkt *nack_iut_write(struct cf_t *t)
{
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    cf_post(t,
            &(struct cf_wr){
                .op = "write", .wr_id = 2, .stream = 1, .len = 64, .roff = 64});
    const struct cf_pkt *pk = NULL, *x;
    while (!pk && (x = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000))))
        if (x->h.stream == 0)
            pk = x;
    CF_REQUIRE(t, pk, "the IUT sent no WRITE on stream 0");
    return pk;
}

static void nack_send(struct cf_t *t, const struct cf_pkt *pk, uint8_t code,
                      uint32_t info)
{
    struct mroce_hdr n = cf_hdr(t, MROCE_OP_NACK, pk->h.path);
    n.psn = pk->h.psn;
    n.dsn = pk->h.dsn;
    n.stream = pk->h.stream;
    n.msn = pk->h.msn;
    n.nak_code = code;
    n.nak_info = info;
    cf_send(t, &n, NULL, 0);
}

struct syn {
    uint8_t code;
    const char *status;
};

static const struct syn syn_ra = {MROCE_NAK_REMOTE_ACCESS, "REM_ACCESS_ERR"},
                        syn_ir = {MROCE_NAK_INVALID_REQUEST, "REM_INV_REQ_ERR"},
                        syn_ro = {MROCE_NAK_REMOTE_OP, "REM_OP_ERR"},
                        syn_cc = {MROCE_NAK_CONN_CLOSED, "REM_OP_ERR"};

/* R-NACK-2, R-NACK-5: a fatal NACK fails its WR with the syndrome's
 * status and the connection enters ERROR. */
static void nack_fatal(struct cf_t *t)
{
    const struct syn *s = t->test->arg;
    cf_open(t, NULL);
    const struct cf_pkt *pk = nack_iut_write(t);
    nack_send(t, pk, s->code, 0);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, s->status);
    cf_wc_is(t, cf_wait_wc(t, "send", 2, cf_ms(t, 1000)), 2, "FLUSH_ERR");
    cf_state_is(t, "ERROR");
}

/* R-NACK-2, R-NACK-4: a reserved syndrome is ignored. */
static void nack_reserved(struct cf_t *t)
{
    cf_open(t, NULL);
    const struct cf_pkt *pk = nack_iut_write(t);
    static const uint8_t codes[] = {0x00, 0x06, 0x07, 0x80, 0xFF};
    for (size_t i = 0; i < sizeof(codes); i++)
        nack_send(t, pk, codes[i], 0);
    cf_pump(t, 10);
    cf_state_is(t, "CONNECTED");
    cf_send_ack(t, pk->h.path);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
}

static void nack_reserved_counted(struct cf_t *t)
{
    cf_open(t, NULL);
    const struct cf_pkt *pk = nack_iut_write(t);
    int64_t before = cf_counter(t, "conn", "stale");
    nack_send(t, pk, 0x09, 0);
    nack_send(t, pk, 0x00, 0);
    cf_pump(t, 10);
    cf_delta(t, "conn", "stale", before, 2);
}

/* R-NACK-4: a NACK that names nothing outstanding is ignored. */
static void nack_unmatched_fatal(struct cf_t *t)
{
    cf_open(t, NULL);
    const struct cf_pkt *pk = nack_iut_write(t);
    struct cf_pkt fake = *pk;
    fake.h.dsn = pk->h.dsn + 1000; /* never sent */
    fake.h.msn = pk->h.msn + 500;  /* no such message */
    nack_send(t, &fake, MROCE_NAK_REMOTE_ACCESS, 0);
    cf_pump(t, 10);
    cf_state_is(t, "CONNECTED");
    cf_send_ack(t, pk->h.path);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
}

/* R-NACK-4: an RNR NACK whose MSN is not the DSN's message is ignored:
 * no wait. */
static void nack_unmatched_rnr(struct cf_t *t)
{
    cf_open(t, NULL);
    const struct cf_pkt *pk = nack_iut_write(t);
    struct cf_pkt fake = *pk;
    fake.h.msn = pk->h.msn + 1;
    nack_send(t, &fake, MROCE_NAK_RNR, 500000);
    cf_send_ack(t, pk->h.path);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 200)), 1, "SUCCESS");
}

/* R-NACK-4: a fatal NACK whose DSN is acknowledged already matches by
 * stream and MSN the WR that has all its packets sent (a READ). */
static void nack_by_msn(struct cf_t *t)
{
    cf_open(t, NULL);
    t->p->auto_read = false;
    cf_post(t, &(struct cf_wr){.op = "read", .wr_id = 1, .len = 64});
    const struct cf_pkt *rq = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, rq, "no READ_REQ");
    cf_pump(t, 5); /* its ACK went out: the READ_REQ's DSN is acknowledged */
    struct mroce_hdr n = cf_hdr(t, MROCE_OP_NACK, 0);
    n.dsn = rq->h.dsn;
    n.stream = rq->h.stream;
    n.msn = rq->h.msn;
    n.nak_code = MROCE_NAK_REMOTE_ACCESS;
    cf_send(t, &n, NULL, 0);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "REM_ACCESS_ERR");
}

/* R-NACK-5, R-RETRY-4: an RNR releases its transmission: a later SACK
 * showing that PSN missing must not resend it before the RNR delay. */
static void nack_rnr_release(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    t->p->auto_ack = false;
    t->p->rnr_info = 40000; /* the suite's automatic RNR asks for 40 ms */
    cf_post(t, &(struct cf_wr){.op = "send", .wr_id = 1, .len = 64});
    cf_post(t,
            &(struct cf_wr){.op = "write", .wr_id = 2, .stream = 1, .len = 64});
    const struct cf_pkt *s = NULL, *w = NULL, *x;
    while ((!s || !w) && (x = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000))))
        *(x->h.opcode == MROCE_OP_SEND ? &s : &w) = x;
    CF_REQUIRE(t, s && w, "no SEND and WRITE");
    cf_send_ack(t, 0); /* the WRITE's PSN yes, the SEND's no: a hole */
    const struct cf_pkt *r = NULL;
    while (!r && (x = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000))))
        if (x->h.opcode == MROCE_OP_SEND)
            r = x;
    double ms = r ? cf_ts_ms(s, r) : -1;
    CF_CHECK(t, r && ms >= 40,
             "the SEND was resent %.1f ms after an RNR "
             "asking for 40 ms",
             ms);
}

/* R-NACK-5, R-RTT-5: the RNR NACK released the path's only transmission,
 * so the path's RTO timer stops: no PROBE and no re-path while the
 * sender waits the RNR delay (40 ms, 8 x its initial RTO). */
static void nack_rnr_timer_stops(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1, .min_rto_ns = 1000000});
    t->p->rnr_info = 40000;
    cf_post(t, &(struct cf_wr){.op = "send", .wr_id = 1, .len = 64});
    const struct cf_pkt *s = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, s, "no SEND");
    int from = t->p->n_log;
    cf_pump(t, 30);
    for (int i = from; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        CF_CHECK(t, pk->derr || pk->h.opcode != MROCE_OP_PROBE,
                 "a PROBE %.1f ms into an RNR wait: the released "
                 "transmission kept its path's timer running",
                 (double)(pk->t - s->t) / 1e6);
        CF_CHECK(t, pk->derr || !cf_is_data(pk, NULL),
                 "the SEND went again %.1f ms into a 40 ms RNR wait",
                 (double)(pk->t - s->t) / 1e6);
    }
}

/* R-NACK-1, R-NACK-3: every arrival of a refused packet is NACKed. */
static void nack_each_arrival(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_msg m = {.op = MROCE_OP_SEND, .len = 8, .data = "again!!!"};
    cf_send_msg(t, &m);
    for (int i = 0; i < 3; i++) {
        CF_CHECK(t,
                 cf_nack_is(t, cf_wait_nack(t, cf_ms(t, 500)), MROCE_NAK_RNR,
                            "a SEND with no receive"),
                 "arrival %d not NACKed", i + 1);
        cf_resend(t, &m, 0, (uint16_t)((i + 1) % t->p->n_paths));
    }
    CF_CHECK(t,
             cf_nack_is(t, cf_wait_nack(t, cf_ms(t, 500)), MROCE_NAK_RNR,
                        "a SEND with no receive"),
             "the last arrival was not NACKed");
}

/* R-NACK-6: an RNR changes no state at the receiver. */
static void nack_rnr_no_state(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_msg m = {.op = MROCE_OP_SEND, .len = 8, .data = "stateles"};
    cf_send_msg(t, &m);
    cf_nack_is(t, cf_wait_nack(t, cf_ms(t, 500)), MROCE_NAK_RNR,
               "a SEND with no receive");
    cf_state_is(t, "CONNECTED");
    cf_post(t, &(struct cf_wr){.op = "recv", .wr_id = 5, .len = 64});
    cf_resend(t, &m, 0, 0);
    cf_wc_is(t, cf_wait_wc(t, "recv", 5, cf_ms(t, 1000)), 5, "SUCCESS");
}

/* R-NACK-1: NACKs go like ACKs: from a path of the IUT's, to the
 * announced port. */
static void nack_routed(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    cf_wait_wc(t, "send", 1, cf_ms(t, 1000));
    uint16_t ports[CF_MAX_PATHS] = {0};
    for (int i = 0; i < t->p->n_log; i++)
        if (cf_is_data(t->p->log[i], NULL))
            ports[t->p->log[i]->h.path] = t->p->log[i]->sport;
    for (int i = 0; i < 8; i++)
        cf_post(t, &(struct cf_wr){
                       .op = "write", .wr_id = 2 + (uint64_t)i, .len = 64});
    cf_wait_wc(t, "send", 9, cf_ms(t, 1000));
    for (int i = 0; i < t->p->n_log; i++)
        if (cf_is_data(t->p->log[i], NULL))
            ports[t->p->log[i]->h.path] = t->p->log[i]->sport;
    struct cf_msg m = {.op = MROCE_OP_SEND, .len = 8, .data = "routed!!"};
    cf_send_msg(t, &m);
    const struct cf_pkt *n = cf_wait_nack(t, cf_ms(t, 500));
    CF_REQUIRE(t, n, "no NACK");
    bool known = false;
    for (int q = 0; q < t->p->n_paths; q++)
        known |= ports[q] == n->sport;
    CF_CHECK(t, known, "a NACK from port %u, no path of the IUT's", n->sport);
    CF_CHECK(t, n->sock == 0, "a NACK not sent to the announced port");
}

const struct cf_test cf_t_nack[] = {
    CF_TESTA("nack.sender.remote_access", "10.3", "R-NACK-2 R-NACK-5", MUST,
             "REMOTE_ACCESS: REM_ACCESS_ERR, ERROR", nack_fatal, &syn_ra),
    CF_TESTA("nack.sender.invalid_request", "10.3", "R-NACK-2 R-NACK-5", MUST,
             "INVALID_REQUEST: REM_INV_REQ_ERR, ERROR", nack_fatal, &syn_ir),
    CF_TESTA("nack.sender.remote_op", "10.3", "R-NACK-2 R-NACK-5", MUST,
             "REMOTE_OP: REM_OP_ERR, ERROR", nack_fatal, &syn_ro),
    CF_TESTA("nack.sender.conn_closed", "10.3", "R-NACK-2 R-NACK-5", MUST,
             "CONN_CLOSED: REM_OP_ERR, ERROR", nack_fatal, &syn_cc),
    CF_TEST("nack.reserved", "10.3", "R-NACK-2 R-NACK-4 R-VER-4", MUST,
            "reserved syndromes ignored", nack_reserved),
    CF_TEST("nack.reserved.counted", "10.3", "R-NACK-4 R-RX-5", SHOULD,
            "... counted stale", nack_reserved_counted),
    CF_TEST("nack.unmatched.fatal", "10.3", "R-NACK-4 R-NACK-5", MUST,
            "a fatal NACK naming nothing is ignored", nack_unmatched_fatal),
    CF_TEST("nack.unmatched.rnr", "10.3", "R-NACK-4", MUST,
            "an RNR NACK of another message is ignored", nack_unmatched_rnr),
    CF_TEST("nack.by_msn", "10.3", "R-NACK-4 R-MSG-17", MUST,
            "a fatal NACK matched by stream and MSN", nack_by_msn),
    CF_TEST("nack.rnr.release", "10.3", "R-NACK-5 R-RETRY-4", MUST,
            "an RNR'd transmission is not taken as lost", nack_rnr_release),
    CF_TEST("nack.rnr.timer_stops", "10.3", "R-NACK-5 R-RTT-5", MUST,
            "an RNR releases the path's only transmission: its timer stops",
            nack_rnr_timer_stops),
    CF_TEST("nack.each_arrival", "10.3", "R-NACK-1 R-NACK-3", MUST,
            "every arrival of a refused packet is NACKed", nack_each_arrival),
    CF_TEST("nack.rnr.no_state", "10.3", "R-NACK-6 R-RETRY-3", MUST,
            "an RNR leaves the receiver CONNECTED, nothing kept",
            nack_rnr_no_state),
    CF_TEST("nack.routed", "10.3", "R-NACK-1 R-ACK-3 R-SEC-3", MUST,
            "NACKs leave from a path's port to the announced port",
            nack_routed),
    {0},
};
