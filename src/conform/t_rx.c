/* Section 10: receive validation. Every reason of R-RX-1 and R-RX-2 for
 * dropping a packet, twice: the drop itself (silent, no state changed,
 * the connection unharmed: MUST) and its counter (R-RX-5: SHOULD); and
 * the order of the checks, seen through which counter a packet with two
 * faults moves. */
#include <string.h>

#include "conform/cf.h"

/* A hostile packet: sent by `send`, dropped as `counter` (of `scope`),
 * `n` times. */
struct drop_case {
    void (*send)(struct cf_t *t);
    const char *scope, *counter, *what;
    int n;
};

/* A PROBE on path 0 with the suite's next PSN, left unconsumed: accepted
 * by mistake it would be recorded and acknowledged, which the barrier
 * shows. */
static struct mroce_hdr rx_probe(struct cf_t *t)
{
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_PROBE, 0);
    h.psn = t->p->psn[0];
    h.flags = MROCE_HF_ACKREQ;
    return h;
}

static void rx_send_short(struct cf_t *t)
{
    static const uint8_t b[19] = {0x18, 0x20};
    for (int n = 0; n < 20; n++)
        cf_send_raw(t, b, (size_t)n, NULL);
}

/* A WRITE cut inside its headers, with an ICRC over what is left. */
static void rx_send_trunc_hdr(struct cf_t *t)
{
    uint8_t buf[64];
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_WRITE, 0);
    h.psn = t->p->psn[0];
    h.dsn = t->p->dsn;
    h.va = t->iut.va;
    h.rkey = t->iut.rkey;
    int hl = mroce_wire_write_hdr(&h, buf, sizeof(buf));
    for (int cut = 20; cut < hl + 4; cut += 4) {
        uint8_t b[64];
        memcpy(b, buf, (size_t)cut - 4);
        mroce_wire_seal(b, (size_t)cut - 4);
        cf_send_raw(t, b, (size_t)cut, NULL);
    }
}

static void rx_send_versions(struct cf_t *t)
{
    struct mroce_hdr h = rx_probe(t);
    for (int v = 0; v < 16; v++) {
        struct cf_tx x = {.ecn = 2, .byte0 = (uint8_t)(v << 4 | 0x8)};
        if (v != 1)
            cf_send_x(t, &h, NULL, 0, &x);
    }
}

/* The opcode registry (docs/spec.md section 3): 0x12 is ACKM (section
 * 3.15), which R-RX-1 decodes before the connection is known, so it is
 * not sent here as unassigned (without the feature it is counted
 * `opcode` too, but only once its connection is known: t_ackm.c). */
static bool rx_assigned(int op)
{
    return (op >= 0x01 && op <= 0x06) || op == 0x10 || op == 0x11 ||
           op == 0x12 || op == 0x20 || op == 0x30 || op == 0x31;
}

/* A 20-byte packet (MTH + ICRC) with opcode op; a 72-byte one too, so
 * that an opcode a receiver wrongly decodes with headers is not cut. */
static void rx_send_op(struct cf_t *t, int op)
{
    uint8_t b[72] = {0};
    struct mroce_hdr h = rx_probe(t);
    mroce_wire_write_hdr(&h, b, sizeof(b));
    b[1] = (uint8_t)op;
    uint8_t c[72];
    memcpy(c, b, 16);
    mroce_wire_seal(c, 16);
    cf_send_raw(t, c, 20, NULL);
    memcpy(c, b, 68);
    mroce_wire_seal(c, 68);
    cf_send_raw(t, c, 72, NULL);
}

static void rx_send_unassigned(struct cf_t *t)
{
    for (int op = 0; op < 256; op++)
        if (!rx_assigned(op) && op != 0x21 && (op < 0x07 || op > 0x0F))
            rx_send_op(t, op);
}

static void rx_send_atomic(struct cf_t *t)
{
    for (int op = 0x07; op <= 0x0F; op++)
        rx_send_op(t, op);
}

static void rx_send_0x21(struct cf_t *t)
{
    rx_send_op(t, 0x21);
}

static void rx_send_bad_crc(struct cf_t *t)
{
    struct mroce_hdr h = rx_probe(t);
    struct cf_tx x = {.ecn = 2, .bad_crc = true};
    cf_send_x(t, &h, NULL, 0, &x);
}

static void rx_send_crc_le(struct cf_t *t)
{
    struct mroce_hdr h = rx_probe(t);
    h.ts = 0x01020304; /* an ICRC that is not a palindrome */
    struct cf_tx x = {.ecn = 2, .crc_le = true};
    cf_send_x(t, &h, NULL, 0, &x);
}

/* Every single-bit error in the MTH, the padding's first word and the
 * ICRC of a PROBE: never accepted. */
static void rx_send_bitflips(struct cf_t *t)
{
    uint8_t b[72];
    struct mroce_hdr h = rx_probe(t);
    CF_REQUIRE(t, mroce_wire_encode(&h, NULL, 0, b, sizeof(b)) == 72,
               "cannot encode a PROBE");
    static const int at[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                             12, 13, 14, 15, 16, 17, 18, 19, 68, 69, 70, 71};
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
        for (int bit = 0; bit < 8; bit++) {
            uint8_t c[72];
            memcpy(c, b, sizeof(c));
            c[at[i]] ^= (uint8_t)(0x80 >> bit);
            cf_send_raw(t, c, sizeof(c), NULL);
        }
}

static void rx_send_probe_payload(struct cf_t *t)
{
    struct mroce_hdr h = rx_probe(t);
    struct cf_tx x = {.ecn = 2, .extra = 4};
    cf_send_x(t, &h, NULL, 0, &x);
}

static void rx_send_close_payload(struct cf_t *t)
{
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_CLOSE, 0);
    struct cf_tx x = {.ecn = 2, .extra = 8};
    cf_send_x(t, &h, NULL, 0, &x);
}

static void rx_send_readreq_payload(struct cf_t *t)
{
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_READ_REQ, 0);
    h.psn = t->p->psn[0];
    h.dsn = t->p->dsn;
    h.msn = t->p->msn[0];
    h.msg_len = 64;
    h.va = t->iut.va;
    h.rkey = t->iut.rkey;
    struct cf_tx x = {.ecn = 2, .extra = 64};
    cf_send_x(t, &h, NULL, 0, &x);
}

static void rx_send_unknown_conn(struct cf_t *t)
{
    struct mroce_hdr h = rx_probe(t);
    for (int i = 0; i < 8; i++) {
        h.conn = t->p->iut_id ^ (0x9E3779B9u * (uint32_t)(i + 1));
        cf_send(t, &h, NULL, 0);
    }
}

static bool rx_open_s2(struct cf_t *t, const char *ip)
{
    if (t->p->s2.fd >= 0)
        return true;
    return cf_sock_open(&t->p->s2, ip, 0) == 0;
}

/* From another IP address of this host (127.0.0.2 on loopback). */
static void rx_send_bad_src(struct cf_t *t)
{
    if (!rx_open_s2(t, t->p->iut_family == 4 ? "127.0.0.2" : "::1") ||
        t->p->iut_family != 4 || t->p->iut_ip[0] != 127)
        cf_skip(t, "needs a second local address (loopback IPv4 run)");
    struct mroce_hdr h = rx_probe(t);
    struct cf_tx x = {.ecn = 2, .from_s2 = true};
    cf_send_x(t, &h, NULL, 0, &x);
    uint8_t d[32] = {1};
    struct mroce_hdr w = cf_hdr(t, MROCE_OP_WRITE, 0);
    w.psn = t->p->psn[0];
    w.dsn = t->p->dsn;
    w.msn = t->p->msn[0];
    w.msg_len = sizeof(d);
    w.va = t->iut.va;
    w.rkey = t->iut.rkey;
    w.flags = MROCE_HF_ACKREQ;
    cf_send_x(t, &w, d, sizeof(d), &x);
}

static void rx_send_bad_path(struct cf_t *t)
{
    struct mroce_hdr h = rx_probe(t);
    uint16_t bad[] = {t->p->n_paths, (uint16_t)(t->p->n_paths + 1), 255,
                      0xFFFF};
    for (int i = 0; i < 4; i++) {
        h.path = bad[i];
        cf_send(t, &h, NULL, 0);
    }
}

/* Order (R-RX-1): a bad version with a bad ICRC is a version drop. */
static void rx_send_version_crc(struct cf_t *t)
{
    struct mroce_hdr h = rx_probe(t);
    struct cf_tx x = {.ecn = 2, .byte0 = 0x28, .bad_crc = true};
    cf_send_x(t, &h, NULL, 0, &x);
}

static void rx_send_opcode_crc(struct cf_t *t)
{
    uint8_t b[20]; /* an MTH-only packet, then its opcode changed */
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_CLOSE_ACK, 0);
    CF_REQUIRE(t, mroce_wire_encode(&h, NULL, 0, b, sizeof(b)) == 20,
               "cannot encode a CLOSE_ACK");
    b[1] = 0x40;
    b[19] ^= 0xFF;
    cf_send_raw(t, b, sizeof(b), NULL);
}

/* A 20-byte WRITE: MTH with a good ICRC, but shorter than its headers. */
static void rx_send_trunc_crc(struct cf_t *t)
{
    uint8_t b[20];
    struct mroce_hdr h = cf_hdr(t, MROCE_OP_CLOSE_ACK, 0);
    CF_REQUIRE(t, mroce_wire_encode(&h, NULL, 0, b, sizeof(b)) == 20,
               "cannot encode a CLOSE_ACK");
    b[1] = MROCE_OP_WRITE;
    b[19] ^= 0xFF;
    cf_send_raw(t, b, sizeof(b), NULL);
}

static void rx_send_crc_payload(struct cf_t *t)
{
    struct mroce_hdr h = rx_probe(t);
    struct cf_tx x = {.ecn = 2, .extra = 4, .bad_crc = true};
    cf_send_x(t, &h, NULL, 0, &x);
}

/* Order (R-RX-2): unknown connection from a foreign address and path. */
static void rx_send_conn_src(struct cf_t *t)
{
    if (!rx_open_s2(t, "127.0.0.2") || t->p->iut_family != 4 ||
        t->p->iut_ip[0] != 127)
        cf_skip(t, "needs a second local address (loopback IPv4 run)");
    struct mroce_hdr h = rx_probe(t);
    h.conn ^= 0x5A5A5A5Au;
    h.path = 0xFFFF;
    struct cf_tx x = {.ecn = 2, .from_s2 = true};
    cf_send_x(t, &h, NULL, 0, &x);
}

static void rx_send_src_path(struct cf_t *t)
{
    if (!rx_open_s2(t, "127.0.0.2") || t->p->iut_family != 4 ||
        t->p->iut_ip[0] != 127)
        cf_skip(t, "needs a second local address (loopback IPv4 run)");
    struct mroce_hdr h = rx_probe(t);
    h.path = 0xFFFF;
    struct cf_tx x = {.ecn = 2, .from_s2 = true};
    cf_send_x(t, &h, NULL, 0, &x);
}

#define DC(name, fn, scope, counter, n, what)                                  \
    static const struct drop_case name = {fn, scope, counter, what, n}

DC(dc_short, rx_send_short, "ctx", "trunc", 20, "datagrams of 0-19 bytes");
DC(dc_trunc_hdr, rx_send_trunc_hdr, "ctx", "trunc", 8,
   "a WRITE cut inside its headers");
DC(dc_version, rx_send_versions, "ctx", "version", 15,
   "PROBEs of versions 0 and 2-15");
DC(dc_unassigned, rx_send_unassigned, "ctx", "opcode", 2 * 234,
   "packets of every unassigned opcode");
DC(dc_atomic, rx_send_atomic, "ctx", "opcode", 2 * 9,
   "packets of the atomic opcodes 0x07-0x0F");
DC(dc_0x21, rx_send_0x21, "ctx", "opcode", 2, "packets of opcode 0x21");
DC(dc_crc, rx_send_bad_crc, "ctx", "crc", 1, "a PROBE with a bad ICRC");
DC(dc_crc_le, rx_send_crc_le, "ctx", "crc", 1,
   "a PROBE with its ICRC little-endian");
DC(dc_bitflip, rx_send_bitflips, "ctx", NULL, 0,
   "every single-bit error of a PROBE");
DC(dc_probe_pay, rx_send_probe_payload, "ctx", "payload", 1,
   "a PROBE with 4 bytes after its header");
DC(dc_close_pay, rx_send_close_payload, "ctx", "payload", 1,
   "a CLOSE with 8 bytes after its header");
DC(dc_rreq_pay, rx_send_readreq_payload, "ctx", "payload", 1,
   "a READ_REQ with a payload");
DC(dc_unknown, rx_send_unknown_conn, "ctx", "unknown_conn", 8,
   "PROBEs for 8 unknown connection ids");
DC(dc_bad_src, rx_send_bad_src, "ctx", "bad_src", 2,
   "a PROBE and a WRITE from a foreign address");
DC(dc_bad_path, rx_send_bad_path, "conn", "bad_path", 4,
   "PROBEs on paths N, N+1, 255 and 65535");
DC(dc_order_vc, rx_send_version_crc, "ctx", "version", 1,
   "a bad version with a bad ICRC");
DC(dc_order_oc, rx_send_opcode_crc, "ctx", "opcode", 1,
   "a bad opcode with a bad ICRC");
DC(dc_order_tc, rx_send_trunc_crc, "ctx", "trunc", 1,
   "a 20-byte WRITE with a bad ICRC");
DC(dc_order_cp, rx_send_crc_payload, "ctx", "crc", 1,
   "a PROBE with a payload and a bad ICRC");
DC(dc_order_cs, rx_send_conn_src, "ctx", "unknown_conn", 1,
   "an unknown connection id from a foreign address on a bad path");
DC(dc_order_sp, rx_send_src_path, "ctx", "bad_src", 1,
   "a foreign address on a bad path");

/* MUST: dropped with no reply, nothing recorded, connection unharmed. */
static void rx_drop(struct cf_t *t)
{
    const struct drop_case *dc = t->test->arg;
    cf_open(t, NULL);
    int from = t->p->n_log;
    uint8_t before[256], after[256];
    cf_iut_read(t, 0, before, sizeof(before));
    dc->send(t);
    cf_silent(t, from, dc->what);
    cf_iut_read(t, 0, after, sizeof(after));
    CF_CHECK(t, !memcmp(before, after, sizeof(before)),
             "memory changed after %s", dc->what);
    cf_alive(t);
}

/* SHOULD (R-RX-5), MUST where R-RX-1 fixes the order: the counter. */
static void rx_count(struct cf_t *t)
{
    const struct drop_case *dc = t->test->arg;
    cf_open(t, NULL);
    int64_t before = cf_counter(t, dc->scope, dc->counter);
    dc->send(t);
    CF_REQUIRE(t, cf_barrier(t, 0, 1000), "no ACK for a barrier PROBE");
    cf_delta(t, dc->scope, dc->counter, before, dc->n);
}

/* R-CONN-7: a connection in INIT is unknown. */
static void rx_init_conn(struct cf_t *t)
{
    cf_open(t, NULL);
    json_t *rep = cf_call(
        t, json_pack("{s:s, s:i}", "cmd", "conn_create", "ctx", t->iut.ctx));
    json_t *prm = json_object_get(rep, "params");
    uint32_t id = (uint32_t)json_integer_value(json_object_get(prm, "conn_id"));
    json_decref(rep);
    CF_REQUIRE(t, id, "a second connection could not be created");
    int64_t before = cf_counter(t, "ctx", "unknown_conn");
    int from = t->p->n_log;
    struct mroce_hdr h = rx_probe(t);
    h.conn = id;
    cf_send(t, &h, NULL, 0);
    h = cf_hdr(t, MROCE_OP_CLOSE, 0);
    h.conn = id;
    cf_send(t, &h, NULL, 0);
    cf_silent(t, from, "a PROBE and a CLOSE for a connection in INIT");
    if (before >= 0)
        cf_delta(t, "ctx", "unknown_conn", before, 2);
}

/* R-RX-1: a packet of the right length for an ACK, with its ICRC
 * wrong, is not processed: the IUT's WRITE stays unacknowledged. */
static void rx_bad_ack_crc(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 1});
    t->p->auto_ack = false;
    cf_post(t, &(struct cf_wr){.op = "write", .wr_id = 1, .len = 100});
    const struct cf_pkt *pk = cf_wait(t, cf_is_data, NULL, cf_ms(t, 2000));
    CF_REQUIRE(t, pk, "the IUT sent no WRITE");
    struct mroce_hdr a;
    cf_ack_fill(t, 0, &a);
    cf_send_x(t, &a, NULL, 0, &(struct cf_tx){.ecn = 2, .bad_crc = true});
    cf_pump(t, 20);
    cf_poll(t);
    CF_CHECK(t, !cf_find_wc(t, "send", 1),
             "an ACK with a bad ICRC completed the WRITE");
    cf_send_ack(t, 0);
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
}

#define DROP(id, rules, what, arg)                                             \
    CF_TESTA("rx." id ".drop", "10.1", rules, MUST, what, rx_drop, &arg)
#define COUNT(id, rules, kw, what, arg)                                        \
    CF_TESTA("rx." id ".counted", "10.2", rules, kw, what, rx_count, &arg)

const struct cf_test cf_t_rx[] = {
    DROP("short", "R-RX-1 R-RX-5", "datagrams below 20 bytes dropped silently",
         dc_short),
    COUNT("short", "R-RX-5", SHOULD, "... counted trunc", dc_short),
    DROP("trunc_hdr", "R-RX-1 R-HDR-2",
         "a packet shorter than its opcode's headers dropped", dc_trunc_hdr),
    COUNT("trunc_hdr", "R-RX-5", SHOULD, "... counted trunc", dc_trunc_hdr),
    DROP("version", "R-RX-1 R-HDR-3 R-VER-2", "versions other than 1 dropped",
         dc_version),
    COUNT("version", "R-RX-5", SHOULD, "... counted version", dc_version),
    DROP("opcode", "R-RX-1 R-HDR-4 R-VER-5", "unassigned opcodes dropped",
         dc_unassigned),
    COUNT("opcode", "R-RX-5", SHOULD, "... counted opcode", dc_unassigned),
    DROP("atomic", "R-MSG-15 R-HDR-4", "atomic opcodes 0x07-0x0F dropped",
         dc_atomic),
    COUNT("atomic", "R-RX-5", SHOULD, "... counted opcode", dc_atomic),
    DROP("0x21", "R-HDR-16 R-PATH-10", "opcode 0x21 dropped as unknown",
         dc_0x21),
    COUNT("0x21", "R-RX-5 R-HDR-16", SHOULD, "... counted opcode", dc_0x21),
    DROP("crc", "R-CRC-4 R-RX-1", "a bad ICRC dropped silently", dc_crc),
    COUNT("crc", "R-RX-5", SHOULD, "... counted crc", dc_crc),
    DROP("crc_le", "R-CRC-1 R-CRC-2", "an ICRC stored little-endian dropped",
         dc_crc_le),
    DROP("bitflip", "R-CRC-4 R-CRC-3", "every single-bit error dropped",
         dc_bitflip),
    DROP("probe_payload", "R-HDR-6 R-RX-1", "a PROBE with a payload dropped",
         dc_probe_pay),
    COUNT("probe_payload", "R-RX-5", SHOULD, "... counted payload",
          dc_probe_pay),
    DROP("close_payload", "R-HDR-6 R-RX-1", "a CLOSE with a payload dropped",
         dc_close_pay),
    DROP("readreq_payload", "R-HDR-6 R-RX-1",
         "a READ_REQ with a payload dropped", dc_rreq_pay),
    COUNT("readreq_payload", "R-RX-5", SHOULD, "... counted payload",
          dc_rreq_pay),
    DROP("unknown_conn", "R-CONN-2 R-RX-2",
         "unknown connection ids dropped silently", dc_unknown),
    COUNT("unknown_conn", "R-RX-5", SHOULD, "... counted unknown_conn",
          dc_unknown),
    CF_TEST("rx.init_conn.drop", "4.3", "R-CONN-7 R-RX-2", MUST,
            "packets for a connection in INIT dropped as unknown",
            rx_init_conn),
    DROP("bad_src", "R-RX-2 R-SEC-3",
         "packets from an address that is not the peer's dropped", dc_bad_src),
    COUNT("bad_src", "R-RX-5", SHOULD, "... counted bad_src", dc_bad_src),
    DROP("bad_path", "R-RX-2 R-HDR-8", "path ids >= N dropped", dc_bad_path),
    COUNT("bad_path", "R-RX-5", SHOULD, "... counted bad_path", dc_bad_path),
    COUNT("order.version_crc", "R-RX-1", MUST,
          "version is checked before the ICRC", dc_order_vc),
    COUNT("order.opcode_crc", "R-RX-1", MUST,
          "opcode is checked before the ICRC", dc_order_oc),
    COUNT("order.trunc_crc", "R-RX-1", MUST,
          "the opcode's length is checked before the ICRC", dc_order_tc),
    COUNT("order.crc_payload", "R-RX-1", MUST,
          "the ICRC is checked before the payload rule", dc_order_cp),
    COUNT("order.conn_src", "R-RX-2", MUST,
          "the connection id is checked before the source", dc_order_cs),
    COUNT("order.src_path", "R-RX-2", MUST,
          "the source is checked before the path id", dc_order_sp),
    CF_TEST("rx.ack_crc.ignored", "10.1", "R-RX-1 R-CRC-4", MUST,
            "an ACK with a bad ICRC acknowledges nothing", rx_bad_ack_crc),
    {0},
};
