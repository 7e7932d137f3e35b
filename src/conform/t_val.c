/* Section 10.4: validation of feedback (R-VAL). Every packet the IUT takes
 * must name state that exists before it changes anything: CLOSE and
 * CLOSE_ACK their sender's next DSN, a NACK the stream, MSN and DSN of
 * what it refuses, a duplicate a PSN near the path's highest, a data
 * packet a DSN in the window before any other check; a READ is answered
 * with data only once the peer proved that it holds the connection, and
 * an answer to a PROBE names it (the resynchronisation of a path). */
#include <string.h>

#include "conform/cf.h"

/* ---- CLOSE and CLOSE_ACK (R-VAL-5) ---- */

static void val_close_bad(struct cf_t *t, uint32_t psn, const char *what)
{
    int from = t->p->n_log;
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_CLOSE, 0);
    h.psn = psn;
    cf_send(t, &h, NULL, 0);
    cf_silent(t, from, what);
    cf_state_is(t, "CONNECTED");
    cf_alive(t);
}

static void val_close_ahead(struct cf_t *t)
{
    cf_open(t, NULL);
    val_close_bad(t, t->p->dsn + t->iut.params.dsn_window + 10,
                  "a CLOSE naming a DSN past the window");
}

static void val_close_behind(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_alive(t); /* DSN 0 accepted: dsn_cum is 1 */
    val_close_bad(t, t->p->dsn - 1, "a CLOSE naming a DSN before dsn_cum");
}

static void val_close_counted(struct cf_t *t)
{
    cf_open(t, NULL);
    int64_t before = cf_counter(t, "conn", "bad_close");
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_CLOSE, 0);
    h.psn = t->p->dsn + 0x40000000u;
    cf_send(t, &h, NULL, 0);
    h.psn = t->p->dsn - 7;
    cf_send(t, &h, NULL, 0);
    CF_REQUIRE(t, cf_barrier(t, 0, cf_ms(t, 1000)), "no barrier ACK");
    cf_delta(t, "conn", "bad_close", before, 2);
}

/* A CLOSE_ACK naming a DSN outside the window does not end CLOSING: the
 * IUT sends its CLOSE again; a good one then closes. */
static void val_close_ack_bad(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.min_rto_ns = 2000000});
    cf_need(t, "conn.disconnect");
    t->p->auto_close_ack = false;
    json_decref(cf_call(t, json_pack("{s:s, s:i}", "cmd", "conn_disconnect",
                                     "conn", t->iut.conn)));
    CF_REQUIRE(t, cf_wait_op(t, MROCE_OP_CLOSE, cf_ms(t, 1000)), "no CLOSE");
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_CLOSE_ACK, 0);
    h.psn = t->p->dsn + t->iut.params.dsn_window + 1;
    cf_send(t, &h, NULL, 0);
    cf_pump(t, 2);
    cf_state_is(t, "CLOSING");
    CF_CHECK(t, cf_wait_op(t, MROCE_OP_CLOSE, cf_ms(t, 1000)) != NULL,
             "no CLOSE again after a CLOSE_ACK with a DSN outside the window");
    h = cf_hdr(t, MROCE_OP_CLOSE_ACK, 0);
    cf_send(t, &h, NULL, 0);
    cf_pump(t, 5);
    cf_state_is(t, "CLOSED");
}

/* ---- NACKs (R-VAL-6) ---- */

/* The IUT writes on streams 0 and 1; the suite holds its ACKs. Returns
 * the first data packet of each stream. */
static void val_two_writes(struct cf_t *t, const struct cf_pkt **s0,
                           const struct cf_pkt **s1)
{
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    cf_post(t,
            &(struct cf_wr){
                .op = "write", .wr_id = 2, .stream = 1, .len = 64, .roff = 64});
    *s0 = *s1 = NULL;
    const struct cf_pkt *x;
    while ((!*s0 || !*s1) && (x = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000))))
        *(x->h.stream ? s1 : s0) = x;
    CF_REQUIRE(t, *s0 && *s1, "the IUT did not write on both streams");
}

static void val_nack(struct cf_t *t, uint16_t path, uint32_t dsn,
                     uint16_t stream, uint32_t msn)
{
    struct mroce_hdr n = cf_hdr(t, MROCE_OP_NACK, path);
    n.dsn = dsn;
    n.stream = stream;
    n.msn = msn;
    n.nak_code = MROCE_NAK_REMOTE_ACCESS;
    cf_send(t, &n, NULL, 0);
}

/* The NACK changed nothing: both WRITEs complete on the ACKs. */
static void val_nack_ignored(struct cf_t *t, const char *what)
{
    cf_pump(t, 10);
    cf_state_is(t, "CONNECTED");
    for (uint16_t q = 0; q < t->p->n_paths; q++)
        if (t->p->rx[q].any)
            cf_send_ack(t, q);
    const struct cf_wc *a = cf_wait_wc(t, "send", 1, cf_ms(t, 1000));
    const struct cf_wc *b = cf_wait_wc(t, "send", 2, cf_ms(t, 1000));
    CF_CHECK(t,
             a && b && !strcmp(a->status, "SUCCESS") &&
                 !strcmp(b->status, "SUCCESS"),
             "%s: the WRITEs completed %s and %s", what,
             a ? a->status : "never", b ? b->status : "never");
}

/* The outstanding DSN with a wrong MSN. */
static void val_nack_wrong_msn(struct cf_t *t)
{
    cf_open(t, NULL);
    const struct cf_pkt *s0, *s1;
    val_two_writes(t, &s0, &s1);
    val_nack(t, s0->h.path, s0->h.dsn, 0, s0->h.msn + 1);
    val_nack_ignored(t, "a fatal NACK with the DSN of a WRITE and another MSN");
}

/* The stream and MSN of one WRITE with the DSN of the other: the match by
 * (stream, MSN) needs a DSN its work request took. */
static void val_nack_other_dsn(struct cf_t *t)
{
    cf_open(t, NULL);
    const struct cf_pkt *s0, *s1;
    val_two_writes(t, &s0, &s1);
    val_nack(t, s1->h.path, s0->h.dsn, 1, s1->h.msn);
    val_nack_ignored(t, "a fatal NACK naming stream 1's WRITE with the DSN "
                        "of stream 0's");
}

/* A READ with all its packets sent: a fatal NACK with its stream and MSN
 * but a DSN outside the READ's changes nothing. */
static void val_nack_by_msn_dsn(struct cf_t *t)
{
    cf_open(t, NULL);
    t->p->auto_read = false;
    cf_post(t, &(struct cf_wr){.op = "read", .wr_id = 1, .len = 64});
    const struct cf_pkt *rq = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, rq, "no READ_REQ");
    cf_pump(t, 5); /* acknowledged: its DSN no longer matches */
    val_nack(t, 0, rq->h.dsn + 3, rq->h.stream, rq->h.msn);
    cf_pump(t, 10);
    cf_poll(t);
    CF_CHECK(t, !cf_find_wc(t, "send", 1),
             "a fatal NACK with the READ's MSN and a DSN it never took "
             "completed the READ");
    cf_state_is(t, "CONNECTED");
}

/* ---- READ responses wait for proof (R-VAL-7) ---- */

static bool val_is_resp_data(const struct cf_pkt *pk, const void *unused)
{
    (void)unused;
    return !pk->derr && pk->h.opcode == MROCE_OP_READ_RESP &&
           pk->h.payload_len > 0;
}

/* A fresh connection, a READ of 4 KiB: no response data until an ACK of
 * the suite resolved a transmission of the IUT. Returns the PROBE the
 * IUT sent to obtain that ACK, or NULL. */
static const struct cf_pkt *val_read_unproven(struct cf_t *t)
{
    cf_open(t, NULL);
    t->p->auto_ack = false;
    int from = t->p->n_log;
    struct cf_msg r = {.op = MROCE_OP_READ_REQ, .len = 4096, .path = 0};
    cf_send_msg(t, &r);
    cf_pump(t, 30);
    const struct cf_pkt *probe = NULL;
    for (int i = from; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        CF_CHECK(t, !val_is_resp_data(pk, NULL),
                 "READ_RESP data to a peer that proved nothing yet");
        if (!pk->derr && pk->h.opcode == MROCE_OP_PROBE && !probe)
            probe = pk;
    }
    return probe;
}

static void val_read_proof(struct cf_t *t)
{
    const struct cf_pkt *probe = val_read_unproven(t);
    t->p->auto_ack = true;
    if (probe) {
        cf_send_probe_ack(t, probe->h.path, probe->h.psn);
    } else { /* proof by another way: a WRITE of the IUT acknowledged */
        cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 7, .len = 8});
    }
    CF_CHECK(t, cf_wait(t, val_is_resp_data, NULL, cf_ms(t, 1000)) != NULL,
             "no READ_RESP data once the peer %s",
             probe ? "answered the PROBE" : "acknowledged a WRITE");
}

static void val_read_probe(struct cf_t *t)
{
    const struct cf_pkt *probe = val_read_unproven(t);
    CF_CHECK(t, probe != NULL,
             "no PROBE to obtain the proof a READ's "
             "response waits for");
    if (probe)
        CF_CHECK(t, probe->h.flags & MROCE_HF_ACKREQ,
                 "the PROBE has no ACKREQ");
}

/* R-VAL-4: the answer to the IUT's PROBE shows the suite holding a PSN
 * 1000 after it (as if a forged packet had been recorded): the IUT
 * continues the path's PSNs after that one. */
static void val_resync(struct cf_t *t)
{
    const struct cf_pkt *probe = val_read_unproven(t);
    if (!probe)
        cf_skip(t, "the IUT sent no PROBE to answer");
    uint16_t path = probe->h.path;
    uint32_t far = probe->h.psn + 1000;
    struct cf_rxpath *r = &t->p->rx[path];
    cf_rx_model(r, far, probe->h.ts, 2, CF_REC_DATA);
    r->rx_count--; /* the model's own record of it is not the IUT's */
    int64_t before = cf_counter(t, "conn", "resync");
    struct mroce_hdr a;
    cf_ack_fill(t, path, &a);
    a.psn = probe->h.psn; /* names the PROBE: evidence (R-VAL-1) */
    cf_send(t, &a, NULL, 0);
    t->p->auto_ack = true;
    const struct cf_pkt *pk;
    uint8_t op = MROCE_OP_READ_RESP;
    while ((pk = cf_wait(t, cf_is_op, &op, cf_ms(t, 1000))) &&
           pk->h.path != path)
        ;
    CF_REQUIRE(t, pk, "no READ_RESP on path %u after the PROBE's answer", path);
    CF_CHECK(t, (int32_t)(pk->h.psn - far) > 0 && pk->h.psn - far <= 65536,
             "path %u went on at PSN %u; the peer holds %u (the PROBE was "
             "%u)",
             path, pk->h.psn, far, probe->h.psn);
    if (before >= 0)
        cf_delta(t, "conn", "resync", before, 1);
}

/* ---- what a data packet names (R-VAL-2, R-VAL-3) ---- */

/* A one-packet WRITE of 8 bytes: fields as given, ACKREQ. */
static struct mroce_hdr val_write(struct cf_t *t, uint16_t path, uint32_t psn,
                                  uint32_t dsn, uint16_t stream, uint32_t msn,
                                  uint32_t rkey)
{
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_WRITE, path);
    h.psn = psn;
    h.dsn = dsn;
    h.stream = stream;
    h.msn = msn;
    h.msg_len = 8;
    h.va = t->iut.va + 0x700;
    h.rkey = rkey;
    h.flags = MROCE_HF_ACKREQ;
    cf_send(t, &h, "valwrite", 8);
    return h;
}

/* A WRITE accepted on path 1; returns its header (for duplicates). */
static struct mroce_hdr val_accepted(struct cf_t *t)
{
    struct mroce_hdr h = val_write(t, 1, cf_next_psn(t, 1), cf_next_dsn(t), 0,
                                   t->p->msn[0]++, t->iut.rkey);
    CF_REQUIRE(t, cf_wait_cum(t, h.dsn, cf_ms(t, 1000)), "no ACK");
    return h;
}

/* R-VAL-2: a duplicate far after the path's highest PSN is not recorded
 * and not answered; the PROBE at the next PSN then is. */
static void val_dup_far(struct cf_t *t)
{
    cf_open(t, NULL);
    struct mroce_hdr a = val_accepted(t);
    int from = t->p->n_log;
    val_write(t, 1, a.psn + 2000, a.dsn, 0, a.msn, t->iut.rkey);
    val_write(t, 1, a.psn - 300, a.dsn, 0, a.msn, t->iut.rkey);
    cf_silent(t, from, "a duplicate 2000 PSNs ahead and one 300 behind");
    uint16_t path = 1;
    struct mroce_hdr p = cf_hdr(t, MROCE_OP_PROBE, 1);
    p.psn = cf_next_psn(t, 1);
    p.flags = MROCE_HF_ACKREQ;
    cf_send(t, &p, NULL, 0);
    const struct cf_pkt *k = cf_wait(t, cf_is_ack_for, &path, cf_ms(t, 1000));
    CF_CHECK(t, k && k->h.sack_high == p.psn && k->h.rx_count == 2,
             "after far duplicates: sack_high %u rx_count %u, expected %u "
             "and 2 (the WRITE and the PROBE)",
             k ? k->h.sack_high : 0, k ? k->h.rx_count : 0, p.psn);
}

/* R-VAL-2: a duplicate up to 1024 after the highest PSN is recorded. */
static void val_dup_near(struct cf_t *t)
{
    cf_open(t, NULL);
    struct mroce_hdr a = val_accepted(t);
    struct mroce_hdr d =
        val_write(t, 1, a.psn + 1000, a.dsn, 0, a.msn, t->iut.rkey);
    uint16_t path = 1;
    const struct cf_pkt *k = cf_wait(t, cf_is_ack_for, &path, cf_ms(t, 1000));
    CF_CHECK(t,
             k && k->h.sack_high == d.psn && k->h.rx_count == 2 &&
                 k->h.echo_ts == d.ts,
             "a duplicate 1000 PSNs ahead was not recorded (sack_high %u, "
             "rx_count %u)",
             k ? k->h.sack_high : 0, k ? k->h.rx_count : 0);
    t->p->psn[1] = d.psn + 1;
}

/* R-VAL-3: the DSN is classified first: an out-of-window DSN with a bad
 * stream is dropped silently, not NACKed. */
static void val_first_out_bad_stream(struct cf_t *t)
{
    cf_open(t, NULL);
    int from = t->p->n_log;
    val_write(t, 0, cf_next_psn(t, 0), t->p->dsn + t->iut.params.dsn_window,
              999, t->p->msn[0], t->iut.rkey);
    cf_silent(t, from, "a DSN past the window with stream 999");
    cf_state_is(t, "CONNECTED");
    cf_alive(t);
}

/* ... a duplicate with a stream that does not exist: dropped silently. */
static void val_first_dup_bad_stream(struct cf_t *t)
{
    cf_open(t, NULL);
    struct mroce_hdr a = val_accepted(t);
    int from = t->p->n_log;
    val_write(t, 1, cf_next_psn(t, 1), a.dsn, 999, a.msn, t->iut.rkey);
    cf_silent(t, from, "a duplicate DSN with stream 999");
    cf_state_is(t, "CONNECTED");
    cf_alive(t);
}

/* ... a duplicate with a bad key is a duplicate (recorded, acknowledged),
 * not a REMOTE_ACCESS violation. */
static void val_first_dup_bad_key(struct cf_t *t)
{
    cf_open(t, NULL);
    struct mroce_hdr a = val_accepted(t);
    int from = t->p->n_log;
    struct mroce_hdr d = val_write(t, 1, cf_next_psn(t, 1), a.dsn, 0, a.msn,
                                   t->iut.rkey ^ 0x5A5A5A5Au);
    CF_CHECK(t, cf_wait_sacked(t, 1, d.psn, cf_ms(t, 1000)),
             "a duplicate DSN with a bad key was not recorded");
    CF_CHECK(t, !cf_count(t, from, MROCE_OP_NACK),
             "a duplicate DSN with a bad key was NACKed");
    cf_state_is(t, "CONNECTED");
}

/* R-DSN-3, R-VAL-3: a DSN more than W before dsn_cum is out of window,
 * not a duplicate: dropped, not recorded, not answered. */
static void val_dsn_far_back(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_alive(t);
    int from = t->p->n_log;
    val_write(t, 0, cf_next_psn(t, 0), t->p->dsn - t->iut.params.dsn_window - 5,
              0, t->p->msn[0], t->iut.rkey);
    cf_silent(t, from, "a DSN more than W before dsn_cum");
    cf_alive(t);
}

static void val_dsn_far_back_counted(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_alive(t);
    int64_t before = cf_counter(t, "conn", "dsn_window");
    val_write(t, 0, cf_next_psn(t, 0), t->p->dsn - t->iut.params.dsn_window - 5,
              0, t->p->msn[0], t->iut.rkey);
    CF_REQUIRE(t, cf_barrier(t, 0, cf_ms(t, 1000)), "no barrier ACK");
    cf_delta(t, "conn", "dsn_window", before, 1);
}

static void val_psn_window_counted(struct cf_t *t)
{
    cf_open(t, NULL);
    int64_t before = cf_counter(t, "conn", "psn_window");
    struct mroce_hdr p = cf_hdr(t, MROCE_OP_PROBE, 2);
    p.psn = t->p->psn[2] + 77;
    p.flags = MROCE_HF_ACKREQ;
    cf_send(t, &p, NULL, 0);
    uint16_t path = 2;
    CF_REQUIRE(t, cf_wait(t, cf_is_ack_for, &path, cf_ms(t, 1000)),
               "no answer to the PROBE");
    cf_delta(t, "conn", "psn_window", before, 1);
}

const struct cf_test cf_t_val[] = {
    CF_TEST("val.close.ahead", "10.4", "R-VAL-5 R-CONN-9 R-RX-5", MUST,
            "a CLOSE naming a DSN past the window: dropped unanswered",
            val_close_ahead),
    CF_TEST("val.close.behind", "10.4", "R-VAL-5 R-CONN-9 R-RX-5", MUST,
            "a CLOSE naming a DSN before dsn_cum: dropped unanswered",
            val_close_behind),
    CF_TEST("val.close.counted", "10.4", "R-VAL-5 R-RX-5", SHOULD,
            "... counted bad_close", val_close_counted),
    CF_TEST("val.close_ack.bad", "10.4", "R-VAL-5 R-CONN-8", MUST,
            "a CLOSE_ACK naming a DSN outside the window does not close",
            val_close_ack_bad),
    CF_TEST("val.nack.wrong_msn", "10.4", "R-VAL-6 R-NACK-4", MUST,
            "a fatal NACK with the right DSN and another MSN: ignored",
            val_nack_wrong_msn),
    CF_TEST("val.nack.other_dsn", "10.4", "R-VAL-6 R-NACK-4", MUST,
            "a fatal NACK matched by MSN needs a DSN of that request",
            val_nack_other_dsn),
    CF_TEST("val.nack.by_msn_dsn", "10.4", "R-VAL-6 R-NACK-4", MUST,
            "a READ's MSN with a DSN it never took: ignored",
            val_nack_by_msn_dsn),
    CF_TEST("val.read.proof", "10.4", "R-VAL-7 R-SEC-3", MUST,
            "no READ_RESP data before the peer proved it holds the "
            "connection",
            val_read_proof),
    CF_TEST("val.read.probe", "10.4", "R-VAL-7", SHOULD,
            "a PROBE to obtain that proof", val_read_probe),
    CF_TEST("val.resync", "10.4", "R-VAL-4", SHOULD,
            "a path's PSNs continue after the one the peer holds", val_resync),
    CF_TEST("val.dup.far", "10.4", "R-VAL-2 R-SACK-6 R-RX-5", MUST,
            "a duplicate far from the path's highest PSN: not recorded",
            val_dup_far),
    CF_TEST("val.dup.near", "10.4", "R-VAL-2 R-DSN-5", MUST,
            "a duplicate 1000 PSNs ahead: recorded", val_dup_near),
    CF_TEST("val.first.out_bad_stream", "10.4", "R-VAL-3 R-RX-3", MUST,
            "an out-of-window DSN with a bad stream: dropped, no NACK",
            val_first_out_bad_stream),
    CF_TEST("val.first.dup_bad_stream", "10.4", "R-VAL-3 R-RX-3", MUST,
            "a duplicate with a stream that does not exist: dropped",
            val_first_dup_bad_stream),
    CF_TEST("val.first.dup_bad_key", "10.4", "R-VAL-3 R-RX-3 R-DSN-5", MUST,
            "a duplicate with a bad key: a duplicate, no NACK",
            val_first_dup_bad_key),
    CF_TEST("val.dsn.far_back", "10.4", "R-DSN-3 R-VAL-3 R-DSN-6", MUST,
            "a DSN more than W before dsn_cum: out of window",
            val_dsn_far_back),
    CF_TEST("val.dsn.far_back.counted", "10.4", "R-DSN-3 R-RX-5", SHOULD,
            "... counted dsn_window", val_dsn_far_back_counted),
    CF_TEST("val.psn_window.counted", "10.4", "R-VAL-2 R-RX-5", SHOULD,
            "a PROBE not at the next PSN counted psn_window",
            val_psn_window_counted),
    {0},
};
