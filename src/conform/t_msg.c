/* Section 7: message semantics. Packetisation and its checks, zero-length
 * messages, the constant fields of a message, WRITE, WRITE_IMM, SEND and
 * READ with their access, length and receive checks, the receive index,
 * READ execution (order, slots, duplicates, the region check when it
 * runs) and the per-stream message window. */
#include <string.h>

#include "conform/cf.h"

/* Sends m and expects a NACK with `code`; true if it came. */
static bool msg_nacked(struct cf_t *t, struct cf_msg *m, uint8_t code,
                       const char *what)
{
    cf_send_msg(t, m);
    return cf_nack_is(t, cf_wait_nack(t, cf_ms(t, 1000)), code, what);
}

/* One data packet with explicit fields, the next PSN and DSN, on path 0. */
static struct mroce_hdr msg_pkt(struct cf_t *t, uint8_t op, uint32_t msn,
                                uint32_t msg_len, uint32_t offset,
                                const void *pay, uint32_t len)
{
    struct mroce_hdr h = cf_data_hdr(t, op, 0);
    h.msn = msn;
    h.msg_len = msg_len;
    h.offset = offset;
    h.va = t->iut.va;
    h.rkey = t->iut.rkey;
    h.flags = MROCE_HF_ACKREQ;
    cf_send(t, &h, pay, len);
    return h;
}

/* ---- packetisation (R-MSG-1) ---- */

static void msg_pkt_iut(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 2560});
    cf_post(
        t,
        &(struct cf_wr){
            .op = "read", .wr_id = 2, .stream = 1, .len = 10000, .off = 8192});
    cf_wait_wc(t, "send", 2, cf_ms(t, 2000));
    static const uint32_t off[] = {0, 1024, 2048}, len[] = {1024, 1024, 512};
    int w = 0, r = 0;
    for (int i = 0; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        if (!cf_is_data(pk, NULL) || !pk->first)
            continue;
        if (pk->h.opcode == MROCE_OP_WRITE && w < 3) {
            CF_CHECK(t, pk->h.offset == off[w] && pk->h.payload_len == len[w],
                     "WRITE packet %d: offset %u, %u bytes", w, pk->h.offset,
                     pk->h.payload_len);
            w++;
        }
        r += pk->h.opcode == MROCE_OP_READ_REQ;
    }
    CF_CHECK(t, w == 3, "a 2560-byte WRITE in %d packets, expected 3", w);
    CF_CHECK(t, r == 1, "a 10000-byte READ in %d READ_REQs, expected 1", r);
}

struct bad_pkt {
    uint8_t op;
    uint32_t msg_len, offset, len;
    const char *what;
};

static const struct bad_pkt bad_pkts[] = {
    {MROCE_OP_WRITE, 4096, 1000, 1024, "an offset not a multiple of mtu"},
    {MROCE_OP_WRITE, 4096, 0, 512, "a short packet that is not the last"},
    {MROCE_OP_WRITE, 4096, 0, 1100, "a payload longer than mtu"},
    {MROCE_OP_WRITE, 2048, 3072, 1024, "an offset past msg_len"},
    {MROCE_OP_WRITE, 0, 0, 8, "a payload on a zero-length message"},
    {MROCE_OP_SEND, 1500, 1024, 100, "a last packet of the wrong length"},
    {MROCE_OP_READ_REQ, 64, 64, 0, "a READ_REQ with an offset"},
};

/* R-MSG-1, R-MSG-3: NACK INVALID_REQUEST, nothing placed. */
static void msg_bad_pkt(struct cf_t *t)
{
    const struct bad_pkt *b = t->test->arg;
    cf_open(t, NULL);
    cf_post(t, &(struct cf_wr){.op = "recv", .wr_id = 9, .len = 8192});
    uint8_t d[1100], before[64], after[64];
    cf_pattern(d, sizeof(d), 61);
    cf_iut_read(t, b->offset % 4096, before, sizeof(before));
    msg_pkt(t, b->op, t->p->msn[0]++, b->msg_len, b->offset, d, b->len);
    cf_nack_is(t, cf_wait_nack(t, cf_ms(t, 1000)), MROCE_NAK_INVALID_REQUEST,
               b->what);
    cf_iut_read(t, b->offset % 4096, after, sizeof(after));
    CF_CHECK(t, !memcmp(before, after, sizeof(after)), "%s was placed",
             b->what);
}

/* ---- zero-length messages (R-MSG-2) ---- */

/* R-MSG-2, R-MSG-4, R-MSG-9: a zero-length WRITE or READ has the checks
 * of any other: a key of the connection's domain with the right, a va in
 * the region, its end included. */
struct zero_case {
    uint8_t op;
    int key;      /* 0 the region's, 1 bogus */
    uint32_t off; /* va = region + off */
    bool ok;
    const char *what;
};

static const struct zero_case zero_cases[] = {
    {MROCE_OP_WRITE, 0, 0x100, true, "a zero-length WRITE"},
    {MROCE_OP_WRITE, 0, CF_IUT_MR_LEN, true,
     "a zero-length WRITE at the region's end"},
    {MROCE_OP_WRITE, 1, 0x100, false, "a zero-length WRITE with a bogus key"},
    {MROCE_OP_WRITE, 0, CF_IUT_MR_LEN + 1, false,
     "a zero-length WRITE past the region's end"},
    {MROCE_OP_READ_REQ, 1, 0x100, false, "a zero-length READ with a bogus key"},
    {MROCE_OP_READ_REQ, 0, CF_IUT_MR_LEN + 1, false,
     "a zero-length READ past the region's end"},
};

static void msg_zero_checked(struct cf_t *t)
{
    const struct zero_case *z = t->test->arg;
    cf_open(t, NULL);
    struct cf_msg m = {.op = z->op,
                       .len = 0,
                       .va = t->iut.va + z->off,
                       .rkey = z->key ? t->iut.rkey ^ 0x55AA55AAu : t->iut.rkey,
                       .rkey_set = true};
    int from = t->p->n_log;
    cf_send_msg(t, &m);
    if (z->ok) {
        CF_CHECK(t, cf_wait_cum(t, m.first_dsn, cf_ms(t, 1000)),
                 "%s was not acknowledged", z->what);
        CF_CHECK(t, !cf_count(t, from, MROCE_OP_NACK), "%s was NACKed",
                 z->what);
        return;
    }
    cf_nack_is(t, cf_wait_nack(t, cf_ms(t, 1000)), MROCE_NAK_REMOTE_ACCESS,
               z->what);
    CF_CHECK(t, !cf_count(t, from, MROCE_OP_READ_RESP),
             "%s was answered with a READ_RESP", z->what);
}

static void msg_zero_read(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_msg m = {
        .op = MROCE_OP_READ_REQ, .len = 0, .va = t->iut.va + CF_IUT_MR_LEN};
    cf_send_msg(t, &m);
    uint8_t op = MROCE_OP_READ_RESP;
    const struct cf_pkt *r = cf_wait(t, cf_is_op, &op, cf_ms(t, 1000));
    CF_REQUIRE(t, r, "no READ_RESP for a zero-length READ");
    CF_CHECK(t,
             r->h.msg_len == 0 && r->h.offset == 0 && r->h.payload_len == 0 &&
                 r->h.msn == m.msn,
             "READ_RESP msg_len %u offset %u payload %u msn %u", r->h.msg_len,
             r->h.offset, r->h.payload_len, r->h.msn);
    cf_pump(t, 20);
    CF_CHECK(t, cf_count(t, 0, MROCE_OP_READ_RESP) == 1,
             "%d READ_RESPs for a zero-length READ, expected exactly 1",
             cf_count(t, 0, MROCE_OP_READ_RESP));
}

/* R-MSG-2, R-ORD-6: a zero-length READ completes on its one response. */
static void msg_zero_read_requester(struct cf_t *t)
{
    cf_open(t, NULL);
    t->p->auto_read = false;
    cf_post(t,
            &(struct cf_wr){.op = "read", .wr_id = 1, .len = 0, .no_mr = true});
    const struct cf_pkt *rq = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, rq && rq->h.opcode == MROCE_OP_READ_REQ, "no READ_REQ");
    cf_pump(t, 20);
    cf_poll(t);
    CF_CHECK(t, !cf_find_wc(t, "send", 1),
             "a zero-length READ completed before its READ_RESP");
    struct mroce_hdr h = cf_data_hdr(t, MROCE_OP_READ_RESP, 0);
    h.stream = rq->h.stream;
    h.msn = rq->h.msn;
    h.flags = MROCE_HF_ACKREQ;
    cf_send(t, &h, NULL, 0);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
}

/* ---- constant fields (R-MSG-3, R-HDR-11..13) ---- */

enum { CH_LEN, CH_VA, CH_RKEY, CH_OP, CH_IMM, CH_SSN };

static void msg_changed(struct cf_t *t)
{
    int what = *(const int *)t->test->arg;
    static const char *const names[] = {"msg_len", "va",  "rkey",
                                        "opcode",  "imm", "ssn"};
    cf_open(t, NULL);
    cf_post(t, &(struct cf_wr){.op = "recv", .wr_id = 9, .len = 8192});
    cf_post(t, &(struct cf_wr){.op = "recv", .wr_id = 10, .len = 8192});
    uint8_t d[2048];
    cf_pattern(d, sizeof(d), 62);
    uint8_t op =
        what == CH_IMM || what == CH_SSN ? MROCE_OP_WRITE_IMM : MROCE_OP_WRITE;
    uint32_t msn = t->p->msn[0]++;
    struct mroce_hdr h = cf_data_hdr(t, op, 0);
    h.msn = msn;
    h.msg_len = 2048;
    h.va = t->iut.va;
    h.rkey = t->iut.rkey;
    h.imm = 7;
    cf_send(t, &h, d, 1024);
    h = (struct mroce_hdr){.opcode = op,
                           .path = 0,
                           .conn = t->p->iut_id,
                           .psn = cf_next_psn(t, 0),
                           .dsn = cf_next_dsn(t),
                           .msn = msn,
                           .msg_len = 2048,
                           .offset = 1024,
                           .va = t->iut.va,
                           .rkey = t->iut.rkey,
                           .imm = 7,
                           .flags = MROCE_HF_ACKREQ};
    if (what == CH_LEN)
        h.msg_len = 3072;
    else if (what == CH_VA)
        h.va += 4096;
    else if (what == CH_RKEY)
        h.rkey ^= 1;
    else if (what == CH_OP)
        h.opcode = MROCE_OP_WRITE_IMM;
    else if (what == CH_IMM)
        h.imm = 8;
    else
        h.ssn = 1;
    cf_send(t, &h, d + 1024, 1024);
    cf_nack_is(t, cf_wait_nack(t, cf_ms(t, 1000)), MROCE_NAK_INVALID_REQUEST,
               names[what]);
}

static const int ch_len = CH_LEN, ch_va = CH_VA, ch_rkey = CH_RKEY,
                 ch_op = CH_OP, ch_imm = CH_IMM, ch_ssn = CH_SSN;

static void msg_stream_range(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_msg m = {.op = MROCE_OP_WRITE,
                       .stream = t->p->n_streams,
                       .len = 8,
                       .data = "stream!!",
                       .msn_set = true,
                       .msn = t->p->msn[0]};
    msg_nacked(t, &m, MROCE_NAK_INVALID_REQUEST, "a stream >= S");
}

/* ---- WRITE (R-MSG-4) ---- */

static void msg_write_refused(struct cf_t *t, struct cf_msg *m,
                              uint32_t check_off, const char *what)
{
    uint8_t before[64], after[64];
    cf_iut_read(t, check_off, before, sizeof(before));
    msg_nacked(t, m, MROCE_NAK_REMOTE_ACCESS, what);
    cf_iut_read(t, check_off, after, sizeof(after));
    CF_CHECK(t, !memcmp(before, after, sizeof(after)), "%s: memory changed",
             what);
}

static void msg_write_bad_key(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_msg m = {.op = MROCE_OP_WRITE,
                       .len = 64,
                       .data = t->p->mem,
                       .rkey = t->iut.rkey + 1,
                       .rkey_set = true};
    msg_write_refused(t, &m, 0, "a WRITE with an unknown rkey");
}

static void msg_write_no_right(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_mr ro;
    CF_REQUIRE(t, cf_iut_mr(t, 4096, "remote_read", &ro),
               "a read-only region could not be registered");
    uint8_t d[64] = {1};
    struct cf_msg m = {.op = MROCE_OP_WRITE,
                       .len = 64,
                       .data = d,
                       .va = ro.va,
                       .rkey = ro.rkey,
                       .rkey_set = true};
    msg_nacked(t, &m, MROCE_NAK_REMOTE_ACCESS,
               "a WRITE to a region without remote write");
}

static void msg_write_bounds(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[64];
    cf_pattern(d, sizeof(d), 63);
    struct cf_msg m = {
        .op = MROCE_OP_WRITE, .len = 64, .data = d, .roff = CF_IUT_MR_LEN - 63};
    msg_write_refused(t, &m, CF_IUT_MR_LEN - 64,
                      "a WRITE one byte past the region");
}

static void msg_write_overflow(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[64] = {2};
    struct cf_msg m = {
        .op = MROCE_OP_WRITE, .len = 64, .data = d, .va = UINT64_MAX - 31};
    msg_nacked(t, &m, MROCE_NAK_REMOTE_ACCESS,
               "a WRITE whose end wraps past 2^64");
}

static void msg_write_placed(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[3000], got[3000];
    cf_pattern(d, sizeof(d), 64);
    cf_post(t, &(struct cf_wr){
                   .op = "recv", .wr_id = 9, .len = 64, .off = 0x20000});
    struct cf_msg m = {
        .op = MROCE_OP_WRITE, .len = sizeof(d), .data = d, .roff = 0x10000};
    cf_send_msg(t, &m);
    CF_CHECK(t, cf_wait_cum(t, m.first_dsn + 2, cf_ms(t, 1000)),
             "a 3-packet WRITE was not acknowledged");
    cf_iut_read(t, 0x10000, got, sizeof(got));
    CF_CHECK(t, !memcmp(got, d, sizeof(d)), "a 3-packet WRITE did not land");
    struct cf_msg s = {.op = MROCE_OP_SEND, .len = 4, .data = "recv"};
    cf_send_msg(t, &s);
    const struct cf_wc *w = cf_wait_wc(t, "recv", 9, cf_ms(t, 1000));
    CF_CHECK(t, w && !strcmp(w->status, "SUCCESS") && w->byte_len == 4,
             "the WRITE consumed the receive the next SEND needed");
}

/* R-MSG-5: WRITE_IMM completes a receive with the immediate and msg_len;
 * the receive's buffer stays untouched. */
static void msg_write_imm(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[1500], before[64], after[64];
    cf_pattern(d, sizeof(d), 65);
    cf_iut_read(t, 0x30000, before, sizeof(before));
    cf_post(t, &(struct cf_wr){
                   .op = "recv", .wr_id = 9, .len = 16, .off = 0x30000});
    struct cf_msg m = {.op = MROCE_OP_WRITE_IMM,
                       .len = sizeof(d),
                       .data = d,
                       .roff = 0x11000,
                       .imm = 0x11223344};
    cf_send_msg(t, &m);
    const struct cf_wc *w = cf_wait_wc(t, "recv", 9, cf_ms(t, 1000));
    cf_wc_is(t, w, 9, "SUCCESS");
    if (w)
        CF_CHECK(t,
                 w->has_imm && w->imm == 0x11223344 &&
                     w->byte_len == sizeof(d) && !strcmp(w->opcode, "recv_imm"),
                 "WRITE_IMM completion: imm %s0x%08x byte_len %u opcode %s",
                 w->has_imm ? "" : "(none) ", w->imm, w->byte_len, w->opcode);
    cf_iut_read(t, 0x30000, after, sizeof(after));
    CF_CHECK(t, !memcmp(before, after, sizeof(after)),
             "WRITE_IMM wrote into the receive's buffer");
}

/* ---- SEND (R-MSG-6) ---- */

static void msg_send_placed(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[2500], got[2500];
    cf_pattern(d, sizeof(d), 66);
    cf_post(t, &(struct cf_wr){
                   .op = "recv", .wr_id = 9, .len = 4096, .off = 0x40000});
    struct cf_msg m = {.op = MROCE_OP_SEND_IMM,
                       .len = sizeof(d),
                       .data = d,
                       .imm = 99,
                       .reverse = true};
    cf_send_msg(t, &m);
    const struct cf_wc *w = cf_wait_wc(t, "recv", 9, cf_ms(t, 1000));
    cf_wc_is(t, w, 9, "SUCCESS");
    if (w)
        CF_CHECK(t, w->byte_len == sizeof(d) && w->has_imm && w->imm == 99,
                 "SEND_IMM completion byte_len %u imm %u", w->byte_len, w->imm);
    cf_iut_read(t, 0x40000, got, sizeof(got));
    CF_CHECK(t, !memcmp(got, d, sizeof(d)),
             "a SEND sent last packet first was not placed by offset");
}

static void msg_send_too_long(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_post(t, &(struct cf_wr){.op = "recv", .wr_id = 9, .len = 100});
    uint8_t d[101] = {3};
    struct cf_msg m = {.op = MROCE_OP_SEND, .len = sizeof(d), .data = d};
    msg_nacked(t, &m, MROCE_NAK_INVALID_REQUEST,
               "a SEND longer than its receive");
}

/* R-MSG-7 (sender): SSN counts the receive-consuming messages only. */
static void msg_ssn_sender(struct cf_t *t)
{
    cf_open(t, NULL);
    static const char *const ops[] = {"write",    "send", "write_imm", "write",
                                      "send_imm", "read", "send"};
    for (int i = 0; i < 3; i++)
        cf_peer_recv(t, 0, (uint32_t)i, 4096);
    for (int i = 0; i < 7; i++)
        cf_post(t, &(struct cf_wr){.op = ops[i],
                                   .wr_id = (uint64_t)i + 1,
                                   .len = 32,
                                   .off = (uint32_t)i * 64,
                                   .roff = 0x1000 + (uint32_t)i * 64});
    cf_wait_wc(t, "send", 7, cf_ms(t, 2000));
    static const int want[] = {-1, 0, 1, -1, 2, -1, 3};
    for (int i = 0; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        uint32_t k = pk->h.msn - cf_iut_msn(t, 0);
        if (!cf_is_data(pk, NULL) || k >= 7 || want[k] < 0)
            continue;
        CF_CHECK(t, pk->h.ssn == (uint32_t)want[k],
                 "message %u (%s) has SSN %u, expected %d", k, ops[k],
                 pk->h.ssn, want[k]);
    }
}

/* R-MSG-8: with no receive, a WRITE_IMM is RNR before its key is read. */
static void msg_write_imm_rnr_first(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_msg m = {.op = MROCE_OP_WRITE_IMM,
                       .len = 8,
                       .data = "rnrfirst",
                       .rkey = t->iut.rkey ^ 7,
                       .rkey_set = true};
    msg_nacked(t, &m, MROCE_NAK_RNR,
               "a WRITE_IMM with a bad key and no receive");
}

/* R-MSG-16: a receive-consuming message must name the next receive. */
static void msg_ssn_check(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_post(t, &(struct cf_wr){.op = "recv", .wr_id = 9, .len = 64});
    cf_post(t,
            &(struct cf_wr){.op = "recv", .wr_id = 10, .len = 64, .off = 64});
    struct cf_msg m = {.op = MROCE_OP_SEND,
                       .len = 8,
                       .data = "skip-one",
                       .ssn = 1,
                       .ssn_set = true};
    cf_send_msg(t, &m);
    const struct cf_pkt *n = cf_wait_nack(t, cf_ms(t, 1000));
    cf_nack_is(t, n, MROCE_NAK_INVALID_REQUEST,
               "a SEND naming receive 1 before receive 0 is used");
    if (n)
        CF_CHECK(t,
                 n->h.path == 0 && n->h.psn == 0 && n->h.msn == m.msn &&
                     n->h.stream == m.stream && n->h.dsn == m.first_dsn,
                 "the NACK names path %u psn %u msn %u dsn %u", n->h.path,
                 n->h.psn, n->h.msn, n->h.dsn);
    cf_poll(t);
    const struct cf_wc *w = cf_find_wc(t, "recv", 9);
    CF_CHECK(t, !w || strcmp(w->status, "SUCCESS"),
             "receive 0 completed for a message that named receive 1");
    cf_state_is(t, "ERROR");
}

/* ---- READ (R-MSG-9..13, R-MSG-17) ---- */

static void msg_read_bad_key(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_msg m = {.op = MROCE_OP_READ_REQ,
                       .len = 64,
                       .rkey = t->iut.rkey ^ 3,
                       .rkey_set = true};
    msg_nacked(t, &m, MROCE_NAK_REMOTE_ACCESS, "a READ with an unknown rkey");
}

static void msg_read_no_right(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_mr wo;
    CF_REQUIRE(t, cf_iut_mr(t, 4096, "local_write remote_write", &wo),
               "a write-only region could not be registered");
    struct cf_msg m = {.op = MROCE_OP_READ_REQ,
                       .len = 64,
                       .va = wo.va,
                       .rkey = wo.rkey,
                       .rkey_set = true,
                       .path = 2};
    t->p->psn[2] = 9; /* a PSN the NACK must name (R-HDR-9) */
    cf_send_msg(t, &m);
    const struct cf_pkt *n = cf_wait_nack(t, cf_ms(t, 1000));
    cf_nack_is(t, n, MROCE_NAK_REMOTE_ACCESS,
               "a READ of a region without remote read");
    /* checked on arrival: the NACK names the READ_REQ itself */
    if (n)
        CF_CHECK(t, n->h.path == 2 && n->h.psn == 9 && n->h.dsn == m.first_dsn,
                 "the NACK names path %u PSN %u DSN %u, not the READ_REQ "
                 "(path 2 PSN 9 DSN %u): its key was not checked on arrival",
                 n->h.path, n->h.psn, n->h.dsn, m.first_dsn);
}

static void msg_read_bounds(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_msg m = {
        .op = MROCE_OP_READ_REQ, .len = 4096, .roff = CF_IUT_MR_LEN - 4095};
    msg_nacked(t, &m, MROCE_NAK_REMOTE_ACCESS,
               "a READ one byte past the region");
}

/* R-MSG-10, R-ORD-5: a READ waits for the earlier message of its stream
 * and then returns what it wrote. */
static void msg_read_order(struct cf_t *t)
{
    cf_open(t, NULL);
    uint8_t d[2048];
    cf_pattern(d, sizeof(d), 67);
    struct cf_msg w = {.op = MROCE_OP_WRITE,
                       .len = sizeof(d),
                       .data = d,
                       .roff = 0x50000,
                       .skip = 1,
                       .path = 0};
    cf_send_msg(t, &w);
    struct cf_msg r = {
        .op = MROCE_OP_READ_REQ, .len = sizeof(d), .roff = 0x50000, .path = 0};
    cf_send_msg(t, &r);
    uint8_t op = MROCE_OP_READ_RESP;
    CF_CHECK(t, !cf_wait(t, cf_is_op, &op, cf_ms(t, 30)),
             "the READ ran before the WRITE before it was complete");
    cf_resend(t, &w, 0, 0);
    int got = 0;
    while (got < 2 && cf_wait(t, cf_is_op, &op, cf_ms(t, 1000)))
        got++;
    CF_REQUIRE(t, got == 2, "%d READ_RESPs of 2", got);
    for (int i = 0; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        if (pk->derr || pk->h.opcode != MROCE_OP_READ_RESP)
            continue;
        CF_CHECK(
            t,
            pk->h.offset + pk->h.payload_len <= sizeof(d) &&
                !memcmp(pk->h.payload, d + pk->h.offset, pk->h.payload_len),
            "the READ did not see the WRITE before it (offset %u)",
            pk->h.offset);
    }
}

/* R-MSG-11, R-VAL-3: a READ_RESP naming no READ sent and not completed
 * names nothing: dropped silently, the connection goes on. */
static void msg_read_resp_unknown(struct cf_t *t)
{
    cf_open(t, NULL);
    int from = t->p->n_log;
    struct mroce_hdr h = cf_data_hdr(t, MROCE_OP_READ_RESP, 0);
    h.msn = cf_iut_msn(t, 0);
    h.msg_len = 8;
    h.flags = MROCE_HF_ACKREQ;
    cf_send(t, &h, "unasked!", 8);
    cf_silent(t, from, "a READ_RESP for no READ");
    cf_alive(t);
    cf_state_is(t, "CONNECTED");
}

/* ... nor one for a READ that completed. */
static void msg_read_resp_done(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_post(t, &(struct cf_wr){.op = "read", .wr_id = 1, .len = 64});
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 1000)), 1, "SUCCESS");
    const struct cf_pkt *rq = cf_find(t, 0, MROCE_OP_READ_REQ, 0);
    CF_REQUIRE(t, rq, "no READ_REQ");
    int from = t->p->n_log;
    struct mroce_hdr h = cf_data_hdr(t, MROCE_OP_READ_RESP, 0);
    h.stream = rq->h.stream;
    h.msn = rq->h.msn;
    h.msg_len = 64;
    h.flags = MROCE_HF_ACKREQ;
    uint8_t d[64] = {3};
    cf_send(t, &h, d, sizeof(d));
    cf_silent(t, from, "a READ_RESP for a completed READ");
    cf_alive(t);
}

static void msg_read_resp_counted(struct cf_t *t)
{
    cf_open(t, NULL);
    int64_t before = cf_counter(t, "conn", "msn_window");
    struct mroce_hdr h = cf_data_hdr(t, MROCE_OP_READ_RESP, 0);
    h.msn = cf_iut_msn(t, 0);
    h.msg_len = 8;
    cf_send(t, &h, "unasked!", 8);
    CF_REQUIRE(t, cf_barrier(t, 0, cf_ms(t, 1000)), "no barrier ACK");
    cf_delta(t, "conn", "msn_window", before, 1);
}

static void msg_read_resp_len(struct cf_t *t)
{
    cf_open(t, NULL);
    t->p->auto_read = false;
    cf_post(t, &(struct cf_wr){.op = "read", .wr_id = 1, .len = 64});
    const struct cf_pkt *rq = cf_wait(t, cf_is_data, NULL, cf_ms(t, 1000));
    CF_REQUIRE(t, rq, "no READ_REQ");
    struct mroce_hdr h = cf_data_hdr(t, MROCE_OP_READ_RESP, 0);
    h.stream = rq->h.stream;
    h.msn = rq->h.msn;
    h.msg_len = 128;
    h.flags = MROCE_HF_ACKREQ;
    uint8_t d[128] = {0};
    cf_send(t, &h, d, 128);
    cf_nack_is(t, cf_wait_nack(t, cf_ms(t, 1000)), MROCE_NAK_INVALID_REQUEST,
               "a READ_RESP whose msg_len is not the READ's");
}

/* R-MSG-12: a READ_REQ sent again is a duplicate: not executed again. */
static void msg_read_dup(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_msg r = {.op = MROCE_OP_READ_REQ, .len = 64, .path = 0};
    cf_send_msg(t, &r);
    uint8_t op = MROCE_OP_READ_RESP;
    CF_REQUIRE(t, cf_wait(t, cf_is_op, &op, cf_ms(t, 1000)), "no READ_RESP");
    cf_resend(t, &r, 0, 1);
    cf_pump(t, 20);
    int n = 0;
    for (int i = 0; i < t->p->n_log; i++)
        n += !t->p->log[i]->derr &&
             t->p->log[i]->h.opcode == MROCE_OP_READ_RESP &&
             t->p->log[i]->first;
    CF_CHECK(t, n == 1, "%d READ_RESP DSNs for one READ sent twice", n);
}

/* R-MSG-13: at most max_rd READs in progress at the responder. */
static void msg_read_max_rd(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.max_rd = 1});
    t->p->auto_ack = false;
    struct cf_msg a = {.op = MROCE_OP_READ_REQ, .len = 64, .path = 0};
    struct cf_msg b = {
        .op = MROCE_OP_READ_REQ, .len = 64, .path = 1, .roff = 64};
    cf_send_msg(t, &a);
    cf_send_msg(t, &b);
    cf_pump(t, 30);
    bool second = false;
    for (int i = 0; i < t->p->n_log; i++)
        second |= !t->p->log[i]->derr &&
                  t->p->log[i]->h.opcode == MROCE_OP_READ_RESP &&
                  t->p->log[i]->h.msn == b.msn;
    CF_CHECK(t, !second,
             "a second READ ran with max_rd 1 before the first's "
             "response was acknowledged");
    t->p->auto_ack = true;
    for (uint16_t q = 0; q < t->p->n_paths; q++)
        if (t->p->rx[q].any)
            cf_send_ack(t, q);
    uint8_t op = MROCE_OP_READ_RESP;
    const struct cf_pkt *pk;
    bool got = false;
    while (!got && (pk = cf_wait(t, cf_is_op, &op, cf_ms(t, 1000))))
        got = pk->h.msn == b.msn;
    CF_CHECK(t, got, "the second READ never ran");
}

/* R-MSG-17: a READ's region is resolved again when it runs. */
static void msg_read_recheck(struct cf_t *t)
{
    cf_open(t, NULL);
    cf_need(t, "mr.dereg");
    struct cf_mr rr;
    CF_REQUIRE(t, cf_iut_mr(t, 4096, "remote_read", &rr), "no region");
    uint8_t d[2048] = {4};
    struct cf_msg w = {.op = MROCE_OP_WRITE,
                       .len = sizeof(d),
                       .data = d,
                       .skip = 1,
                       .path = 0};
    cf_send_msg(t, &w);
    struct cf_msg r = {.op = MROCE_OP_READ_REQ,
                       .len = 64,
                       .va = rr.va,
                       .rkey = rr.rkey,
                       .rkey_set = true,
                       .path = 0};
    cf_send_msg(t, &r);
    cf_pump(t, 10);
    json_t *rep =
        cf_call(t, json_pack("{s:s, s:i}", "cmd", "mr_dereg", "mr", rr.mr));
    bool ok = cf_reply_ok(rep, NULL, 0);
    json_decref(rep);
    CF_REQUIRE(t, ok, "the region of a queued READ could not be deregistered");
    cf_resend(t, &w, 0, 0);
    const struct cf_pkt *n = cf_wait_nack(t, cf_ms(t, 1000));
    cf_nack_is(t, n, MROCE_NAK_REMOTE_ACCESS,
               "a READ whose region went away while it was queued");
    if (n)
        CF_CHECK(t,
                 n->h.path == 0 && n->h.psn == 0 && n->h.msn == r.msn &&
                     n->h.dsn == r.first_dsn,
                 "the NACK names path %u psn %u msn %u dsn %u", n->h.path,
                 n->h.psn, n->h.msn, n->h.dsn);
    uint8_t op = MROCE_OP_READ_RESP;
    CF_CHECK(t, !cf_find(t, 0, op, 0), "a READ_RESP for a region gone");
    cf_state_is(t, "ERROR");
}

/* ---- the message window (R-MSG-14) ---- */

static void msg_window_drop(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.sq_depth = 8});
    uint32_t m_win = t->iut.params.msg_window;
    int from = t->p->n_log;
    struct cf_msg m = {.op = MROCE_OP_WRITE,
                       .len = 8,
                       .data = "msnfar!!",
                       .msn = t->p->msn[0] + m_win,
                       .msn_set = true};
    cf_send_msg(t, &m);
    cf_silent(t, from, "a WRITE with an MSN one past the message window");
    cf_alive(t);
}

static void msg_window_counted(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.sq_depth = 8});
    int64_t before = cf_counter(t, "conn", "msn_window");
    struct cf_msg m = {.op = MROCE_OP_WRITE,
                       .len = 8,
                       .data = "msnfar!!",
                       .msn = t->p->msn[0] + t->iut.params.msg_window,
                       .msn_set = true};
    cf_send_msg(t, &m);
    CF_REQUIRE(t, cf_barrier(t, 0, cf_ms(t, 1000)), "no barrier ACK");
    cf_delta(t, "conn", "msn_window", before, 1);
}

static void msg_window_edge(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.sq_depth = 8});
    struct cf_msg m = {.op = MROCE_OP_WRITE,
                       .len = 8,
                       .data = "msnedge!",
                       .msn = t->p->msn[0] + t->iut.params.msg_window - 1,
                       .msn_set = true};
    cf_send_msg(t, &m);
    CF_CHECK(t, cf_wait_cum(t, m.first_dsn, cf_ms(t, 1000)),
             "the last MSN of the window was not accepted");
}

static void msg_window_old(struct cf_t *t)
{
    cf_open(t, NULL);
    struct cf_msg a = {.op = MROCE_OP_WRITE, .len = 8, .data = "complete"};
    cf_send_msg(t, &a);
    CF_REQUIRE(t, cf_wait_cum(t, a.first_dsn, cf_ms(t, 1000)), "no ACK");
    struct cf_msg b = {.op = MROCE_OP_WRITE,
                       .len = 8,
                       .data = "oldmsn!!",
                       .msn = a.msn,
                       .msn_set = true};
    msg_nacked(t, &b, MROCE_NAK_INVALID_REQUEST,
               "a new DSN for a completed message");
}

/* R-MSG-14, R-VAL-3: an MSN more than M before f names no message:
 * dropped silently, no NACK that ends the connection. */
static void msg_window_far_back(struct cf_t *t)
{
    cf_open(t, NULL);
    int from = t->p->n_log;
    struct cf_msg m = {.op = MROCE_OP_WRITE,
                       .len = 8,
                       .data = "farback!",
                       .msn = t->p->msn[0] - t->iut.params.msg_window - 1,
                       .msn_set = true};
    cf_send_msg(t, &m);
    cf_silent(t, from, "a WRITE with an MSN far before the message window");
    cf_alive(t);
    cf_state_is(t, "CONNECTED");
}

#define BADPKT(name, i)                                                        \
    CF_TESTA("msg.pkt." name, "7.1", "R-MSG-1 R-MSG-3", MUST,                  \
             "a packet breaking the packetisation: NACK INVALID_REQUEST",      \
             msg_bad_pkt, &bad_pkts[i])
#define CHANGED(name, arg)                                                     \
    CF_TESTA("msg.const." name, "7.1", "R-MSG-3 R-HDR-11 R-HDR-12 R-HDR-13",   \
             MUST, "a constant field changed within a message", msg_changed,   \
             &arg)

const struct cf_test cf_t_msg[] = {
    CF_TEST("msg.pkt.iut", "7.1", "R-MSG-1", MUST,
            "the IUT cuts messages at multiples of mtu", msg_pkt_iut),
    BADPKT("offset", 0),
    BADPKT("short_middle", 1),
    BADPKT("too_long", 2),
    BADPKT("past_end", 3),
    BADPKT("zero_len_payload", 4),
    BADPKT("last_len", 5),
    BADPKT("readreq_offset", 6),
    CF_TESTA("msg.zero.write", "7.1", "R-MSG-2 R-MSG-4", MUST,
             "a zero-length WRITE with a good key and va: acknowledged",
             msg_zero_checked, &zero_cases[0]),
    CF_TESTA("msg.zero.write.end", "7.1", "R-MSG-2 R-MSG-4", MUST,
             "a zero-length WRITE at the region's end: acknowledged",
             msg_zero_checked, &zero_cases[1]),
    CF_TESTA("msg.zero.write.bad_key", "7.1", "R-MSG-2 R-MSG-4", MUST,
             "a zero-length WRITE with a bogus key: NACK REMOTE_ACCESS",
             msg_zero_checked, &zero_cases[2]),
    CF_TESTA("msg.zero.write.past_end", "7.1", "R-MSG-2 R-MSG-4", MUST,
             "a zero-length WRITE past the region: NACK REMOTE_ACCESS",
             msg_zero_checked, &zero_cases[3]),
    CF_TESTA("msg.zero.read.bad_key", "7.1", "R-MSG-2 R-MSG-9", MUST,
             "a zero-length READ with a bogus key: NACK REMOTE_ACCESS",
             msg_zero_checked, &zero_cases[4]),
    CF_TESTA("msg.zero.read.past_end", "7.1", "R-MSG-2 R-MSG-9", MUST,
             "a zero-length READ past the region: NACK REMOTE_ACCESS",
             msg_zero_checked, &zero_cases[5]),
    CF_TEST("msg.zero.read", "7.1", "R-MSG-2 R-MSG-10", MUST,
            "a zero-length READ: exactly one empty READ_RESP", msg_zero_read),
    CF_TEST("msg.zero.read_requester", "7.1", "R-MSG-2 R-ORD-6", MUST,
            "a zero-length READ completes on its READ_RESP",
            msg_zero_read_requester),
    CHANGED("msg_len", ch_len),
    CHANGED("va", ch_va),
    CHANGED("rkey", ch_rkey),
    CHANGED("opcode", ch_op),
    CHANGED("imm", ch_imm),
    CHANGED("ssn", ch_ssn),
    CF_TEST("msg.stream_range", "7.1", "R-MSG-3 R-CONN-6", MUST,
            "a stream >= S: NACK INVALID_REQUEST", msg_stream_range),
    CF_TEST("msg.write.bad_key", "7.2", "R-MSG-4 R-RX-6", MUST,
            "a WRITE with an unknown key: REMOTE_ACCESS, nothing written",
            msg_write_bad_key),
    CF_TEST("msg.write.no_right", "7.2", "R-MSG-4", MUST,
            "a WRITE without remote write: REMOTE_ACCESS", msg_write_no_right),
    CF_TEST("msg.write.bounds", "7.2", "R-MSG-4 R-SEC-4 R-RX-6", MUST,
            "a WRITE past the region: REMOTE_ACCESS, nothing written",
            msg_write_bounds),
    CF_TEST("msg.write.overflow", "7.2", "R-MSG-4 R-SEC-4", MUST,
            "a WRITE wrapping past 2^64: REMOTE_ACCESS", msg_write_overflow),
    CF_TEST("msg.write.placed", "7.2", "R-MSG-4", MUST,
            "a WRITE lands at va + offset and uses no receive",
            msg_write_placed),
    CF_TEST("msg.write_imm", "7.2", "R-MSG-5", MUST,
            "WRITE_IMM: a receive completes with imm and msg_len",
            msg_write_imm),
    CF_TEST("msg.send.placed", "7.3", "R-MSG-6 R-ORD-2", MUST,
            "SEND placed at its offsets in the receive", msg_send_placed),
    CF_TEST("msg.send.too_long", "7.3", "R-MSG-6 R-SEC-4", MUST,
            "a SEND longer than its receive: INVALID_REQUEST",
            msg_send_too_long),
    CF_TEST("msg.ssn.sender", "7.3", "R-MSG-7", MUST,
            "SSN counts the receive-consuming messages", msg_ssn_sender),
    CF_TEST("msg.write_imm.rnr_first", "7.3", "R-MSG-8 R-RX-3", MUST,
            "no receive: RNR before the key is checked",
            msg_write_imm_rnr_first),
    CF_TEST("msg.ssn.check", "7.3", "R-MSG-16 R-NACK-6", MUST,
            "a message naming the wrong receive: INVALID_REQUEST, ERROR",
            msg_ssn_check),
    CF_TEST("msg.read.bad_key", "7.4", "R-MSG-9", MUST,
            "a READ with an unknown key: REMOTE_ACCESS", msg_read_bad_key),
    CF_TEST("msg.read.no_right", "7.4", "R-MSG-9", MUST,
            "a READ without remote read: REMOTE_ACCESS", msg_read_no_right),
    CF_TEST("msg.read.bounds", "7.4", "R-MSG-9 R-SEC-4", MUST,
            "a READ past the region: REMOTE_ACCESS", msg_read_bounds),
    CF_TEST("msg.read.order", "7.4", "R-MSG-10 R-ORD-5 R-ORD-3", MUST,
            "a READ waits for earlier messages and sees them", msg_read_order),
    CF_TEST("msg.read.resp_unknown", "7.4", "R-MSG-11 R-VAL-3", MUST,
            "a READ_RESP for no READ: dropped silently", msg_read_resp_unknown),
    CF_TEST("msg.read.resp_done", "7.4", "R-MSG-11 R-VAL-3", MUST,
            "a READ_RESP for a completed READ: dropped silently",
            msg_read_resp_done),
    CF_TEST("msg.read.resp_counted", "7.4", "R-MSG-11 R-RX-5", SHOULD,
            "... counted msn_window", msg_read_resp_counted),
    CF_TEST("msg.read.resp_len", "7.4", "R-MSG-11", MUST,
            "a READ_RESP of the wrong length: INVALID_REQUEST",
            msg_read_resp_len),
    CF_TEST("msg.read.dup", "7.4", "R-MSG-12 R-DSN-5", MUST,
            "a duplicate READ_REQ is not executed again", msg_read_dup),
    CF_TEST("msg.read.max_rd", "7.4", "R-MSG-13", MUST,
            "at most max_rd READs in progress", msg_read_max_rd),
    CF_TEST("msg.read.recheck", "7.4", "R-MSG-17 R-NACK-6", MUST,
            "a READ's region checked again when it runs", msg_read_recheck),
    CF_TEST("msg.window.drop", "7.5", "R-MSG-14 R-RX-5", MUST,
            "an MSN past the window: dropped silently", msg_window_drop),
    CF_TEST("msg.window.counted", "7.5", "R-MSG-14 R-RX-5", SHOULD,
            "... counted msn_window", msg_window_counted),
    CF_TEST("msg.window.far_back", "7.5", "R-MSG-14 R-VAL-3", MUST,
            "an MSN more than M before f: dropped silently",
            msg_window_far_back),
    CF_TEST("msg.window.edge", "7.5", "R-MSG-14", MUST,
            "the last MSN of the window accepted", msg_window_edge),
    CF_TEST("msg.window.old", "7.5", "R-MSG-14 R-NACK-6", MUST,
            "a new DSN for a completed message: INVALID_REQUEST",
            msg_window_old),
    {0},
};
