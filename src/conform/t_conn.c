/* Section 4: connection ids, the parameter exchange (refusal and
 * effective values), the connection states and what each does with every
 * packet type, teardown (disconnect, CLOSE retries, simultaneous close). */
#include <stdio.h>
#include <string.h>

#include "conform/cf.h"

/* ---- ids (R-CONN-1, R-CONN-13) ---- */

static uint32_t conn_new_id(struct cf_t *t)
{
    json_t *rep = cf_call(
        t, json_pack("{s:s, s:i}", "cmd", "conn_create", "ctx", t->iut.ctx));
    json_t *id = json_object_get(json_object_get(rep, "params"), "conn_id");
    uint32_t v = (uint32_t)json_integer_value(id);
    json_decref(rep);
    return v;
}

static void conn_ids(struct cf_t *t)
{
    cf_open(t, NULL);
    uint32_t ids[33];
    ids[0] = t->iut.params.conn_id;
    for (int i = 1; i < 33; i++)
        ids[i] = conn_new_id(t);
    for (int i = 0; i < 33; i++) {
        CF_CHECK(t, ids[i] != 0, "connection id 0 handed out");
        for (int j = 0; j < i; j++)
            CF_CHECK(t, ids[i] != ids[j], "id 0x%08x handed out twice", ids[i]);
    }
}

/* All 32 bits vary and the ids are no arithmetic sequence: not a
 * counter. A random source fails this with probability ~32 / 2^32. */
static void conn_ids_random(struct cf_t *t)
{
    cf_open(t, NULL);
    uint32_t ids[33], ones = 0, zeros = 0;
    ids[0] = t->iut.params.conn_id;
    for (int i = 1; i < 33; i++)
        ids[i] = conn_new_id(t);
    bool progression = true;
    for (int i = 0; i < 33; i++) {
        ones |= ids[i];
        zeros |= ~ids[i];
        if (i >= 2 && ids[i] - ids[i - 1] != ids[1] - ids[0])
            progression = false;
    }
    CF_CHECK(t, ones == 0xFFFFFFFFu && zeros == 0xFFFFFFFFu,
             "bits that never change in 33 ids: 0x%08x", ~ones | ~zeros);
    CF_CHECK(t, !progression, "ids form an arithmetic sequence");
}

static void conn_no_reuse(struct cf_t *t)
{
    cf_open(t, NULL);
    uint32_t old = t->iut.params.conn_id;
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_CLOSE, 0);
    cf_send(t, &h, NULL, 0);
    CF_REQUIRE(t, cf_wait_op(t, MROCE_OP_CLOSE_ACK, cf_ms(t, 2000)),
               "no CLOSE_ACK");
    json_decref(cf_call(t, json_pack("{s:s, s:i}", "cmd", "conn_destroy",
                                     "conn", t->iut.conn)));
    for (int i = 0; i < 64; i++) {
        uint32_t id = conn_new_id(t);
        if (!CF_CHECK(t, id != old,
                      "the id of a connection closed just now came back"))
            break;
    }
}

/* ---- refusal of bad parameters (R-CONN-4) ---- */

struct bad_param {
    const char *what;
    void (*spoil)(struct cf_params *p);
};

#define SPOIL(name, stmt)                                                      \
    static void name(struct cf_params *p)                                      \
    {                                                                          \
        stmt;                                                                  \
    }
SPOIL(sp_id0, p->conn_id = 0)
SPOIL(sp_port0, p->udp_port = 0)
SPOIL(sp_paths0, p->n_paths = 0)
SPOIL(sp_paths257, p->n_paths = 257)
SPOIL(sp_streams0, p->n_streams = 0)
SPOIL(sp_mtu255, p->mtu = 255)
SPOIL(sp_mtu9001, p->mtu = 9001)
SPOIL(sp_win3, p->dsn_window = 3)
SPOIL(sp_winbig, p->dsn_window = 1u << 21)
SPOIL(sp_win0, p->dsn_window = 0)
SPOIL(sp_msgwin0, p->msg_window = 0)
SPOIL(sp_maxrd0, p->max_rd = 0)
SPOIL(sp_version2, p->version = 2)
SPOIL(sp_version0, p->version = 0)
SPOIL(sp_addr, snprintf(p->addr, sizeof(p->addr), "not-an-address"))

static const struct bad_param bp[] = {
    {"conn_id 0", sp_id0},
    {"udp_port 0", sp_port0},
    {"0 paths", sp_paths0},
    {"257 paths", sp_paths257},
    {"0 streams", sp_streams0},
    {"mtu 255", sp_mtu255},
    {"mtu 9001", sp_mtu9001},
    {"dsn_window 3", sp_win3},
    {"dsn_window 2^21", sp_winbig},
    {"dsn_window 0", sp_win0},
    {"msg_window 0", sp_msgwin0},
    {"max_rd 0", sp_maxrd0},
    {"version 2", sp_version2},
    {"version 0", sp_version0},
    {"an address of no family", sp_addr},
};

static void conn_refuse(struct cf_t *t)
{
    const struct bad_param *b = t->test->arg;
    cf_open(t, &(struct cf_open){.no_connect = true});
    struct cf_params p;
    cf_my_params(t, &p);
    b->spoil(&p);
    int from = t->p->n_log;
    const char *err = cf_connect(t, &p);
    CF_CHECK(t, err != NULL, "connecting with %s succeeded", b->what);
    if (err && !strcmp(err, "unsupported"))
        cf_skip(t, "the agent cannot pass %s", b->what);
    cf_pump(t, 20);
    CF_CHECK(t, t->p->n_log == from, "%d packets sent after a refused connect",
             t->p->n_log - from);
    cf_state_is(t, "INIT");
    cf_my_params(t, &p);
    CF_CHECK(t, !cf_connect(t, &p),
             "a valid connect after the refusal of %s failed", b->what);
}

/* ---- effective values (R-CONN-3) ---- */

static void conn_eff_mtu(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.my_mtu = 512});
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 2000});
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
    int n = 0;
    for (int i = 0; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        if (pk->derr || pk->h.opcode != MROCE_OP_WRITE || !pk->first)
            continue;
        n++;
        CF_CHECK(t, pk->h.payload_len <= 512 && pk->h.offset % 512 == 0,
                 "a packet of %u bytes at offset %u with mtu 512",
                 pk->h.payload_len, pk->h.offset);
    }
    CF_CHECK(t, n == 4, "a 2000-byte WRITE in %d packets, expected 4", n);
}

static void conn_eff_paths(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 8, .my_paths = 2});
    for (int i = 0; i < 16; i++)
        cf_post(t, &(struct cf_wr){
                       .op = "write", .wr_id = (uint64_t)i + 1, .len = 100});
    cf_wait_wc(t, "send", 16, cf_ms(t, 2000));
    for (int i = 0; i < t->p->n_log; i++)
        if (!t->p->log[i]->derr)
            CF_CHECK(t, t->p->log[i]->h.path < 2,
                     "a packet on path %u with 2 paths agreed",
                     t->p->log[i]->h.path);
}

static void conn_eff_streams(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_streams = 4, .my_streams = 1});
    const char *err = cf_post_err(
        t, &(struct cf_wr){.op = "write", .wr_id = 1, .stream = 2, .len = 8});
    cf_pump(t, 20);
    for (int i = 0; i < t->p->n_log; i++)
        CF_CHECK(t,
                 t->p->log[i]->derr || !cf_is_data(t->p->log[i], NULL) ||
                     t->p->log[i]->h.stream == 0,
                 "a packet on stream %u with 1 stream agreed",
                 t->p->log[i]->h.stream);
    if (!err)
        cf_note(t, "the post on stream 2 was accepted locally");
}

/* The IUT never has more DSNs beyond the oldest unacknowledged than the
 * agreed window (R-DSN-7 with the minimum of R-CONN-3). */
static void conn_eff_window(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.my_dsn_window = 16, .n_paths = 1});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64 * 1024});
    cf_pump(t, 50);
    uint32_t max = 0;
    for (int i = 0; i < t->p->n_log; i++) {
        uint32_t k = t->p->log[i]->h.dsn - cf_iut_dsn(t, 0);
        if (cf_is_data(t->p->log[i], NULL) && k + 1 > max)
            max = k + 1;
    }
    CF_CHECK(t, max > 0 && max <= 16,
             "DSNs up to %u sent, nothing acknowledged, window 16", max - 1);
}

static int conn_distinct_msns(struct cf_t *t, uint8_t op)
{
    bool seen[256] = {0};
    int n = 0;
    for (int i = 0; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        uint32_t k = pk->h.msn - cf_iut_msn(t, 0);
        if (!pk->derr && pk->h.opcode == op && k < 256 && !seen[k]) {
            seen[k] = true;
            n++;
        }
    }
    return n;
}

static void conn_eff_msg_window(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.my_msg_window = 2});
    t->p->auto_ack = false;
    for (int i = 0; i < 6; i++)
        cf_post(t, &(struct cf_wr){
                       .op = "write", .wr_id = (uint64_t)i + 1, .len = 64});
    cf_pump(t, 30);
    int n = conn_distinct_msns(t, MROCE_OP_WRITE);
    CF_CHECK(t, n == 2,
             "%d messages of a stream sent, the peer's msg_window "
             "is 2",
             n);
}

static void conn_eff_max_rd(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.my_max_rd = 1});
    t->p->auto_read = false;
    for (int i = 0; i < 3; i++)
        cf_post(t, &(struct cf_wr){.op = "read",
                                   .wr_id = (uint64_t)i + 1,
                                   .len = 64,
                                   .off = (uint32_t)i * 64,
                                   .roff = (uint32_t)i * 64});
    cf_pump(t, 30);
    int n = conn_distinct_msns(t, MROCE_OP_READ_REQ);
    CF_CHECK(t, n == 1, "%d READs outstanding with max_rd 1", n);
}

/* R-CONN-5: sequence numbers start at 0; the first packet needs no
 * exchange. */
static void conn_start(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_peer_recv(t, 1, 0, 64);
    for (int i = 0; i < 8; i++)
        cf_post(t, &(struct cf_wr){.op = i == 5 ? "send" : "write",
                                   .wr_id = (uint64_t)i + 1,
                                   .stream = i >= 4,
                                   .len = 32});
    cf_wait_wc(t, "send", 8, cf_ms(t, 2000));
    bool path_seen[CF_MAX_PATHS] = {0};
    uint32_t first_dsn = UINT32_MAX;
    for (int i = 0; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        if (!cf_is_data(pk, NULL))
            continue;
        if (first_dsn == UINT32_MAX)
            first_dsn = pk->h.dsn;
        if (!path_seen[pk->h.path])
            CF_CHECK(t, pk->h.psn == cf_iut_psn(t, 0),
                     "path %u starts at PSN %u", pk->h.path, pk->h.psn);
        path_seen[pk->h.path] = true;
        if (pk->h.opcode == MROCE_OP_SEND)
            CF_CHECK(t, pk->h.ssn == 0 && pk->h.msn == cf_iut_msn(t, 1),
                     "stream 1's first SEND has SSN %u MSN %u", pk->h.ssn,
                     pk->h.msn);
    }
    CF_CHECK(t, first_dsn == cf_iut_dsn(t, 0),
             "the first DSN is %u, init_dsn %u", first_dsn, cf_iut_dsn(t, 0));
    struct cf_msg m = {
        .op = MROCE_OP_WRITE, .len = 16, .data = "0123456789abcdef"};
    cf_send_msg(t, &m);
    CF_CHECK(t, cf_wait_cum(t, m.first_dsn, cf_ms(t, 2000)),
             "the suite's first WRITE (PSN 0, DSN 0) was not acknowledged");
}

/* R-CONN-6: the two directions' sequence spaces are unrelated: both
 * sides use DSNs from 0 at once. */
static void conn_directions(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[3000], got[3000];
    cf_pattern(d, sizeof(d), 41);
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 3000});
    struct cf_msg m = {
        .op = MROCE_OP_WRITE, .roff = 0x8000, .data = d, .len = sizeof(d)};
    cf_send_msg(t, &m);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
    CF_CHECK(t, cf_wait_cum(t, m.first_dsn + 2, cf_ms(t, 2000)),
             "the suite's WRITE (DSNs %u-%u) was not acknowledged", m.first_dsn,
             m.first_dsn + 2);
    cf_iut_read(t, 0x8000, got, sizeof(got));
    CF_CHECK(t, !memcmp(got, d, sizeof(d)), "the suite's WRITE did not land");
}

/* ---- states (R-CONN-7) ---- */

enum { ST_CLOSING, ST_ERROR, ST_CLOSED };

/* Brings the IUT's connection into CLOSING, ERROR or CLOSED. */
static void conn_enter(struct cf_t *t, int st)
{
    cf_open(t, NULL);
    if (st == ST_CLOSING) {
        cf_need(t, "conn.disconnect");
        t->p->auto_close_ack = false;
        json_decref(cf_call(t, json_pack("{s:s, s:i}", "cmd", "conn_disconnect",
                                         "conn", t->iut.conn)));
        CF_REQUIRE(t, cf_wait_op(t, MROCE_OP_CLOSE, cf_ms(t, 2000)),
                   "no CLOSE after the disconnect");
        cf_state_is(t, "CLOSING");
    } else if (st == ST_ERROR) {
        struct cf_msg m = {.op = MROCE_OP_WRITE,
                           .len = 8,
                           .data = "badkey!!",
                           .rkey = t->iut.rkey ^ 1u,
                           .rkey_set = true};
        cf_send_msg(t, &m);
        CF_REQUIRE(t, cf_wait_nack(t, cf_ms(t, 2000)),
                   "no NACK for a WRITE with a bad key");
        cf_state_is(t, "ERROR");
    } else {
        struct mroce_hdr h = cf_hdr(t, MROCE_OP_CLOSE, 0);
        cf_send(t, &h, NULL, 0);
        CF_REQUIRE(t, cf_wait_op(t, MROCE_OP_CLOSE_ACK, cf_ms(t, 2000)),
                   "no CLOSE_ACK");
        cf_state_is(t, "CLOSED");
    }
}

static const int st_closing = ST_CLOSING, st_error = ST_ERROR,
                 st_closed = ST_CLOSED;

static const char *const st_name[] = {"CLOSING", "ERROR", "CLOSED"};

static void conn_state_data(struct cf_t *t)
{
    int st = *(const int *)t->test->arg;
    conn_enter(t, st);
    uint8_t d[32], before[32], after[32];
    cf_pattern(d, sizeof(d), 31);
    cf_iut_read(t, 0x4000, before, sizeof(before));
    struct cf_msg m = {.op = MROCE_OP_WRITE,
                       .roff = 0x4000,
                       .data = d,
                       .len = sizeof(d),
                       .path = 1};
    int from = t->p->n_log;
    cf_send_msg(t, &m);
    const struct cf_pkt *pk = cf_wait_nack(t, cf_ms(t, 1000));
    cf_nack_is(t, pk, MROCE_NAK_CONN_CLOSED, "a WRITE in a closed state");
    if (pk)
        CF_CHECK(t,
                 pk->h.dsn == m.first_dsn && pk->h.path == 1 &&
                     pk->h.psn == m.psn[0],
                 "the NACK names DSN %u path %u psn %u", pk->h.dsn, pk->h.path,
                 pk->h.psn);
    cf_pump(t, 10);
    for (int i = from; i < t->p->n_log; i++)
        CF_CHECK(t,
                 t->p->log[i]->derr || t->p->log[i]->h.opcode != MROCE_OP_ACK,
                 "data acknowledged in %s", st_name[st]);
    cf_iut_read(t, 0x4000, after, sizeof(after));
    CF_CHECK(t, !memcmp(before, after, sizeof(after)), "data placed in %s",
             st_name[st]);
}

static void conn_state_probe(struct cf_t *t)
{
    int st = *(const int *)t->test->arg;
    conn_enter(t, st);
    int from = t->p->n_log;
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_PROBE, 0);
    h.psn = cf_next_psn(t, 0);
    h.flags = MROCE_HF_ACKREQ | MROCE_HF_RETX;
    cf_send(t, &h, NULL, 0);
    cf_pump(t, 30);
    for (int i = from; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        CF_CHECK(t,
                 pk->derr || (pk->h.opcode != MROCE_OP_ACK &&
                              pk->h.opcode != MROCE_OP_NACK &&
                              pk->h.opcode != MROCE_OP_PROBE),
                 "a PROBE in %s answered by %s", st_name[st],
                 mroce_wire_op_name(pk->h.opcode));
    }
}

static void conn_state_close(struct cf_t *t)
{
    int st = *(const int *)t->test->arg;
    conn_enter(t, st);
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_CLOSE, 0);
    cf_send(t, &h, NULL, 0);
    CF_CHECK(t, cf_wait_op(t, MROCE_OP_CLOSE_ACK, cf_ms(t, 1000)) != NULL,
             "a CLOSE in %s was not answered", st_name[st]);
    cf_state_is(t, st == ST_ERROR ? "ERROR" : "CLOSED");
}

/* The ACK is dropped: nothing outstanding can be seen to change, so the
 * counter (R-RX-5) is what shows it. */
static void conn_state_ack(struct cf_t *t)
{
    int st = *(const int *)t->test->arg;
    conn_enter(t, st);
    int64_t before = cf_counter(t, "conn", "state");
    struct mroce_hdr a;
    cf_ack_fill(t, 0, &a);
    a.sack_high = 0;
    a.sack[0] = 1ull << 63;
    cf_send(t, &a, NULL, 0);
    cf_pump(t, 10);
    cf_delta(t, "conn", "state", before, 1);
}

static void conn_closing_close_ack(struct cf_t *t)
{
    conn_enter(t, ST_CLOSING);
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_CLOSE_ACK, 0);
    cf_send(t, &h, NULL, 0);
    cf_pump(t, 5);
    cf_state_is(t, "CLOSED");
    int from = t->p->n_log;
    cf_pump(t, (int)(3 * t->iut.timers.initial_rto_ns / 1000000));
    CF_CHECK(t, !cf_count(t, from, MROCE_OP_CLOSE),
             "CLOSE sent again after the CLOSE_ACK");
}

static void conn_connected_close_ack(struct cf_t *t)
{
    cf_open(t, NULL);
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_CLOSE_ACK, 0);
    int from = t->p->n_log;
    cf_send(t, &h, NULL, 0);
    cf_silent(t, from, "a CLOSE_ACK in CONNECTED");
    cf_state_is(t, "CONNECTED");
    cf_alive(t);
}

/* ---- teardown (R-CONN-8..14) ---- */

static void conn_disconnect_flush(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_need(t, "conn.disconnect");
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "recv", .wr_id = 10, .len = 64});
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    cf_post(t,
            &(struct cf_wr){.op = "write", .wr_id = 2, .stream = 1, .len = 64});
    CF_REQUIRE(t, cf_wait(t, cf_is_data, NULL, cf_ms(t, 2000)), "no data");
    json_decref(cf_call(t, json_pack("{s:s, s:i}", "cmd", "conn_disconnect",
                                     "conn", t->iut.conn)));
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "FLUSH_ERR");
    cf_wc_is(t, cf_wait_wc(t, "send", 2, cf_ms(t, 1000)), 2, "FLUSH_ERR");
    cf_wc_is(t, cf_wait_wc(t, "recv", 10, cf_ms(t, 1000)), 10, "FLUSH_ERR");
    CF_CHECK(t, cf_wait_op(t, MROCE_OP_CLOSE, cf_ms(t, 1000)) != NULL,
             "no CLOSE after the disconnect");
    int from = t->p->n_log;
    cf_pump(t, 30);
    for (int i = from; i < t->p->n_log; i++)
        CF_CHECK(t, !cf_is_data(t->p->log[i], NULL),
                 "data sent after the disconnect");
}

/* R-CONN-8: 1 + retry_cnt CLOSEs, the wait doubling from RTO(0). */
static void conn_close_retries(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.min_rto_ns = 2000000, .retry_cnt = 3});
    cf_need(t, "conn.disconnect");
    t->p->auto_close_ack = false;
    json_decref(cf_call(t, json_pack("{s:s, s:i}", "cmd", "conn_disconnect",
                                     "conn", t->iut.conn)));
    const struct cf_pkt *at[16];
    int n = 0;
    while (n < 16 && (at[n] = cf_wait_op(t, MROCE_OP_CLOSE, cf_ms(t, 400))))
        n++;
    CF_CHECK(t, n == 4, "%d CLOSEs, expected 1 + retry_cnt = 4", n);
    double r = (double)t->iut.timers.initial_rto_ns / 1e6;
    for (int k = 1; k < n && k < 4; k++) {
        double got = cf_ts_ms(at[k - 1], at[k]); /* the IUT's clock */
        double want = r * (double)(1u << (k - 1));
        CF_CHECK(t, got > want * 0.8 - 1 && got < want * 1.6 + 5 * t->scale,
                 "wait before CLOSE %d: %.1f ms, expected %.1f ms", k + 1, got,
                 want);
    }
    cf_state_is(t, "CLOSED");
}

static void conn_close_stops(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_need(t, "conn.disconnect");
    json_decref(cf_call(t, json_pack("{s:s, s:i}", "cmd", "conn_disconnect",
                                     "conn", t->iut.conn)));
    CF_REQUIRE(t, cf_wait_op(t, MROCE_OP_CLOSE, cf_ms(t, 1000)), "no CLOSE");
    int from = t->p->n_log;
    cf_pump(t, (int)(3 * t->iut.timers.initial_rto_ns / 1000000));
    CF_CHECK(t, !cf_count(t, from, MROCE_OP_CLOSE),
             "%d CLOSEs after its CLOSE_ACK",
             cf_count(t, from, MROCE_OP_CLOSE));
    cf_state_is(t, "CLOSED");
}

static void conn_peer_close(struct cf_t *t)
{
    cf_open(t, NULL);
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "recv", .wr_id = 10, .len = 64});
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    CF_REQUIRE(t, cf_wait(t, cf_is_data, NULL, cf_ms(t, 2000)), "no data");
    for (int i = 0; i < 3; i++) {
        struct mroce_hdr h = cf_hdr(t, MROCE_OP_CLOSE, (uint16_t)i);
        cf_send(t, &h, NULL, 0);
    }
    int acks = 0;
    while (cf_wait_op(t, MROCE_OP_CLOSE_ACK, cf_ms(t, 200)))
        acks++;
    CF_CHECK(t, acks == 3, "%d CLOSE_ACKs for 3 CLOSEs", acks);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "FLUSH_ERR");
    cf_wc_is(t, cf_wait_wc(t, "recv", 10, cf_ms(t, 1000)), 10, "FLUSH_ERR");
    cf_state_is(t, "CLOSED");
}

/* R-CONN-14: CLOSEs cross; each side answers and is CLOSED at once. */
static void conn_simultaneous(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_need(t, "conn.disconnect");
    t->p->auto_close_ack = false;
    json_decref(cf_call(t, json_pack("{s:s, s:i}", "cmd", "conn_disconnect",
                                     "conn", t->iut.conn)));
    CF_REQUIRE(t, cf_wait_op(t, MROCE_OP_CLOSE, cf_ms(t, 1000)), "no CLOSE");
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_CLOSE, 0);
    cf_send(t, &h, NULL, 0);
    CF_CHECK(t, cf_wait_op(t, MROCE_OP_CLOSE_ACK, cf_ms(t, 1000)) != NULL,
             "the IUT did not answer the crossing CLOSE");
    cf_state_is(t, "CLOSED");
    int from = t->p->n_log;
    cf_pump(t, (int)(3 * t->iut.timers.initial_rto_ns / 1000000));
    CF_CHECK(t, !cf_count(t, from, MROCE_OP_CLOSE),
             "CLOSE sent again after the simultaneous close");
    h = cf_hdr(t, MROCE_OP_CLOSE_ACK, 0); /* late: dropped */
    cf_send(t, &h, NULL, 0);
    cf_pump(t, 5);
    cf_state_is(t, "CLOSED");
}

/* R-CONN-12: a fatal NACK ends the connection: the WR it names fails,
 * the others flush, no more data. */
static void conn_error(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "recv", .wr_id = 10, .len = 64});
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 64});
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 2, .len = 64});
    cf_post(t,
            &(struct cf_wr){.op = "write", .wr_id = 3, .stream = 1, .len = 64});
    const struct cf_pkt *pk = cf_wait(t, cf_is_data, NULL, cf_ms(t, 2000));
    CF_REQUIRE(t, pk && pk->h.stream == 0 && pk->h.msn == cf_iut_msn(t, 0),
               "the first WRITE is not stream 0 MSN 0");
    struct mroce_hdr n = cf_hdr(t, MROCE_OP_NACK, pk->h.path);
    n.psn = pk->h.psn;
    n.dsn = pk->h.dsn;
    n.msn = pk->h.msn;
    n.nak_code = MROCE_NAK_REMOTE_ACCESS;
    cf_send(t, &n, NULL, 0);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "REM_ACCESS_ERR");
    cf_wc_is(t, cf_wait_wc(t, "send", 2, cf_ms(t, 1000)), 2, "FLUSH_ERR");
    cf_wc_is(t, cf_wait_wc(t, "send", 3, cf_ms(t, 1000)), 3, "FLUSH_ERR");
    cf_wc_is(t, cf_wait_wc(t, "recv", 10, cf_ms(t, 1000)), 10, "FLUSH_ERR");
    cf_state_is(t, "ERROR");
    /* what the IUT sent before it took the NACK arrives before this */
    CF_REQUIRE(t, cf_barrier_close(t, cf_ms(t, 1000)), "no CLOSE_ACK in ERROR");
    int from = t->p->n_log;
    cf_pump(t, 30);
    for (int i = from; i < t->p->n_log; i++)
        CF_CHECK(t, !cf_is_data(t->p->log[i], NULL), "data sent in ERROR");
}

#define REFUSE(i, name)                                                        \
    CF_TESTA("conn.refuse." name, "4.2", "R-CONN-4 R-CONN-3", MUST,            \
             "connect refused for a bad parameter", conn_refuse, &bp[i])

const struct cf_test cf_t_conn[] = {
    CF_TEST("conn.id.unique", "4.1", "R-CONN-1", MUST,
            "connection ids nonzero and unique", conn_ids),
    CF_TEST("conn.id.random", "4.1", "R-CONN-1 R-SEC-2", MUST,
            "connection ids drawn at random", conn_ids_random),
    CF_TEST("conn.id.no_reuse", "4.4", "R-CONN-13", MUST,
            "a closed connection's id is not handed out again", conn_no_reuse),
    REFUSE(0, "conn_id0"),
    REFUSE(1, "udp_port0"),
    REFUSE(2, "paths0"),
    REFUSE(3, "paths257"),
    REFUSE(4, "streams0"),
    REFUSE(5, "mtu255"),
    REFUSE(6, "mtu9001"),
    REFUSE(7, "window_not_pow2"),
    REFUSE(8, "window_2e21"),
    REFUSE(9, "window0"),
    REFUSE(10, "msg_window0"),
    REFUSE(11, "max_rd0"),
    REFUSE(12, "version2"),
    REFUSE(13, "version0"),
    REFUSE(14, "bad_addr"),
    CF_TEST("conn.effective.mtu", "4.2", "R-CONN-3 R-ENC-9", MUST,
            "the smaller mtu is used", conn_eff_mtu),
    CF_TEST("conn.effective.paths", "4.2", "R-CONN-3 R-CONN-6", MUST,
            "the smaller number of paths is used", conn_eff_paths),
    CF_TEST("conn.effective.streams", "4.2", "R-CONN-3 R-CONN-6", MUST,
            "the smaller number of streams is used", conn_eff_streams),
    CF_TEST("conn.effective.dsn_window", "4.2", "R-CONN-3 R-DSN-7", MUST,
            "the smaller DSN window is kept", conn_eff_window),
    CF_TEST("conn.effective.msg_window", "4.2", "R-CONN-3 R-MSG-14", MUST,
            "the peer's message window is kept", conn_eff_msg_window),
    CF_TEST("conn.effective.max_rd", "4.2", "R-CONN-3 R-MSG-13", MUST,
            "at most max_rd READs outstanding", conn_eff_max_rd),
    CF_TEST("conn.start", "4.2", "R-CONN-5", MUST,
            "PSN, DSN, MSN and SSN start at 0; no handshake", conn_start),
    CF_TEST("conn.directions", "4.2", "R-CONN-6", MUST,
            "each direction has its own sequence spaces", conn_directions),
    CF_TESTA("conn.closing.data", "4.3", "R-CONN-7 R-CONN-11", MUST,
             "CLOSING: data answered with NACK CONN_CLOSED, not placed",
             conn_state_data, &st_closing),
    CF_TESTA("conn.closing.probe", "4.3", "R-CONN-7 R-PATH-9", MUST,
             "CLOSING: PROBE dropped", conn_state_probe, &st_closing),
    CF_TESTA("conn.closing.close", "4.3", "R-CONN-7 R-CONN-14 R-CONN-9", MUST,
             "CLOSING: CLOSE answered, CLOSED", conn_state_close, &st_closing),
    CF_TESTA("conn.closing.ack", "4.3", "R-CONN-7 R-RX-5", SHOULD,
             "CLOSING: ACK dropped and counted", conn_state_ack, &st_closing),
    CF_TEST("conn.closing.close_ack", "4.3", "R-CONN-7 R-CONN-8", MUST,
            "CLOSING: CLOSE_ACK ends it, no more CLOSE",
            conn_closing_close_ack),
    CF_TESTA("conn.error.data", "4.3", "R-CONN-7 R-CONN-11 R-NACK-6", MUST,
             "ERROR: data answered with NACK CONN_CLOSED, not placed",
             conn_state_data, &st_error),
    CF_TESTA("conn.error.probe", "4.3", "R-CONN-7", MUST,
             "ERROR: PROBE dropped", conn_state_probe, &st_error),
    CF_TESTA("conn.error.close", "4.3", "R-CONN-7 R-CONN-9", MUST,
             "ERROR: CLOSE answered, stays ERROR", conn_state_close, &st_error),
    CF_TESTA("conn.error.ack", "4.3", "R-CONN-7 R-RX-5", SHOULD,
             "ERROR: ACK dropped and counted", conn_state_ack, &st_error),
    CF_TESTA("conn.closed.data", "4.3", "R-CONN-7 R-CONN-11", MUST,
             "CLOSED: data answered with NACK CONN_CLOSED, not placed",
             conn_state_data, &st_closed),
    CF_TESTA("conn.closed.probe", "4.3", "R-CONN-7", MUST,
             "CLOSED: PROBE dropped", conn_state_probe, &st_closed),
    CF_TESTA("conn.closed.close", "4.3", "R-CONN-7 R-CONN-13", MUST,
             "CLOSED: CLOSE still answered", conn_state_close, &st_closed),
    CF_TEST("conn.connected.close_ack", "4.3", "R-CONN-7", MUST,
            "CONNECTED: CLOSE_ACK dropped", conn_connected_close_ack),
    CF_TEST("conn.disconnect.flush", "4.4", "R-CONN-8 R-ORD-9", MUST,
            "disconnect flushes every WR and receive, sends CLOSE",
            conn_disconnect_flush),
    CF_TEST("conn.disconnect.retries", "4.4", "R-CONN-8 R-RETRY-2", MUST,
            "1 + retry_cnt CLOSEs, doubling waits, then CLOSED",
            conn_close_retries),
    CF_TEST("conn.disconnect.close_ack", "4.4", "R-CONN-8", MUST,
            "a CLOSE_ACK stops the CLOSEs", conn_close_stops),
    CF_TEST("conn.peer_close", "4.4", "R-CONN-9", MUST,
            "every CLOSE answered; WRs and receives flushed; CLOSED",
            conn_peer_close),
    CF_TEST("conn.simultaneous_close", "4.4", "R-CONN-14", MUST,
            "crossing CLOSEs: answered, CLOSED at once", conn_simultaneous),
    CF_TEST("conn.error.completions", "4.4", "R-CONN-12 R-NACK-5", MUST,
            "fatal NACK: its WR fails, the rest flush, no data", conn_error),
    {0},
};
