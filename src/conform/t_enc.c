/* Section 2: encapsulation. Source ports (one per path, constant until a
 * re-path, any accepted on receipt), the announced port, the largest
 * packet, and what only the IP header shows: Don't-Fragment and the UDP
 * checksum (root: a capture and a raw socket). */
#include <string.h>
#include <unistd.h>

#include "conform/cf.h"

/* R-ENC-3: every path its own source port, the same until a re-path. */
/* R-ENC-3, R-PATH-1: a path keeps its source port. It may move after an
 * RTO (R-PATH-6, slow ACKs on a busy host), and then its first packet from
 * the new port is a PROBE (R-PATH-7); data never moves by itself. */
static void enc_ports(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 16, .min_rto_ns = 20000000});
    for (int i = 0; i < 48; i++)
        cf_post(t, &(struct cf_wr){
                       .op = "write", .wr_id = (uint64_t)i + 1, .len = 32});
    cf_wait_wc(t, "send", 48, cf_ms(t, 2000));
    uint16_t port[16] = {0};
    for (int i = 0; i < t->p->n_log; i++) {
        const struct cf_pkt *pk = t->p->log[i];
        bool probe = !pk->derr && pk->h.opcode == MROCE_OP_PROBE;
        if ((!cf_is_data(pk, NULL) && !probe) || pk->h.path >= 16)
            continue;
        if (!port[pk->h.path] || probe)
            port[pk->h.path] = pk->sport;
        CF_CHECK(t, port[pk->h.path] == pk->sport,
                 "path %u changed port %u -> %u with no re-path", pk->h.path,
                 port[pk->h.path], pk->sport);
    }
    for (int a = 0; a < 16; a++)
        for (int b = 0; b < a; b++)
            CF_CHECK(t, !port[a] || port[a] != port[b],
                     "paths %d and %d share port %u", a, b, port[a]);
}

/* R-ENC-3 (SHOULD, or MAY from a fixed set): the dynamic port range. */
static void enc_port_range(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.n_paths = 8});
    for (int i = 0; i < 16; i++)
        cf_post(t, &(struct cf_wr){
                       .op = "write", .wr_id = (uint64_t)i + 1, .len = 32});
    cf_wait_wc(t, "send", 16, cf_ms(t, 2000));
    for (int i = 0; i < t->p->n_log; i++)
        if (cf_is_data(t->p->log[i], NULL) &&
            !CF_CHECK(t, t->p->log[i]->sport >= 49152,
                      "source port %u outside 49152-65535 (a datapath with "
                      "a fixed set of ports may do so)",
                      t->p->log[i]->sport))
            break;
}

/* R-ENC-4, R-CRC-3: a path's packets from two source ports, all taken;
 * the answers go to the announced port only (R-ENC-2). */
static void enc_any_src_port(struct cf_t *t)
{
    cf_open(t, NULL);
    CF_REQUIRE(t, cf_sock_open(&t->p->s2, t->ip, 0) == 0, "no second socket");
    uint8_t d[64], got[64];
    for (int i = 0; i < 4; i++) {
        cf_pattern(d, sizeof(d), 81 + (uint32_t)i);
        struct mroce_hdr h = cf_data_hdr(t, MROCE_OP_WRITE, 1);
        h.msn = t->p->msn[0]++;
        h.msg_len = sizeof(d);
        h.va = t->iut.va + 0x2000 + (uint64_t)i * 64;
        h.rkey = t->iut.rkey;
        h.flags = MROCE_HF_ACKREQ;
        cf_send_x(t, &h, d, sizeof(d),
                  &(struct cf_tx){.ecn = 2, .from_s2 = i % 2});
        CF_CHECK(t, cf_wait_sacked(t, 1, h.psn, cf_ms(t, 1000)),
                 "a WRITE from source port %u was not acknowledged",
                 i % 2 ? t->p->s2.port : t->p->s.port);
        cf_iut_read(t, 0x2000 + (uint32_t)i * 64, got, sizeof(got));
        CF_CHECK(t, !memcmp(got, d, sizeof(d)),
                 "a WRITE from port %u did "
                 "not land",
                 i % 2 ? t->p->s2.port : t->p->s.port);
    }
    for (int i = 0; i < t->p->n_log; i++)
        CF_CHECK(t, t->p->log[i]->sock == 0,
                 "an answer went to the packet's source port, not the "
                 "announced one");
}

/* R-ENC-9: at mtu 4096 no packet exceeds mtu + 60 bytes; a WRITE_IMM
 * packet that carries a full payload is exactly that long. */
static void enc_max_size(struct cf_t *t)
{
    cf_open(t, &(struct cf_open){.mtu = 4096});
    cf_peer_recv(t, 0, 0, 64);
    cf_post(t, &(struct cf_wr){
                   .op = "write_imm", .wr_id = 1, .len = 9000, .imm = 1});
    cf_wc_is(t, cf_wait_wc(t, "send", 1, cf_ms(t, 2000)), 1, "SUCCESS");
    size_t max = 0;
    for (int i = 0; i < t->p->n_log; i++)
        if (t->p->log[i]->len > max)
            max = t->p->log[i]->len;
    CF_CHECK(t, max == 4096 + 60,
             "the largest packet is %zu bytes, expected "
             "4156",
             max);
}

/* R-ENC-8: Don't-Fragment set on every IPv4 packet. */
static void enc_df(struct cf_t *t)
{
    int fd = cf_cap_open();
    if (fd < 0)
        cf_skip(t, "needs root for a packet capture");
    cf_open(t, NULL);
    if (t->p->iut_family != 4) {
        close(fd);
        cf_skip(t, "an IPv4 run");
    }
    for (int i = 0; i < 8; i++)
        cf_post(t, &(struct cf_wr){
                       .op = "write", .wr_id = (uint64_t)i + 1, .len = 2000});
    int total = 0, df = 0;
    uint64_t end = cf_now() + cf_ms_ns(t, 100);
    while (cf_now() < end) {
        int n, d;
        cf_cap_count(fd, t->p->s.port, 5, &n, &d);
        total += n;
        df += d;
        cf_pump(t, 1);
    }
    close(fd);
    CF_REQUIRE(t, total > 0, "nothing captured");
    CF_CHECK(t, df == total, "%d of %d IPv4 packets without Don't-Fragment",
             total - df, total);
}

/* R-ENC-7: a nonzero UDP checksum that is wrong: dropped; zero (IPv4):
 * taken. */
static void enc_udp_csum(struct cf_t *t)
{
    cf_open(t, NULL);
    if (t->p->iut_family != 4)
        cf_skip(t, "an IPv4 run");
    uint8_t b[CF_PKT_MAX];
    for (int pass = 0; pass < 3; pass++) {
        struct mroce_hdr h = cf_hdr(t, MROCE_OP_PROBE, 2);
        h.psn = t->p->psn[2]; /* taken only once the PROBE is */
        h.flags = MROCE_HF_ACKREQ;
        int n = mroce_wire_encode(&h, NULL, 0, b, sizeof(b));
        CF_REQUIRE(t, n > 0, "cannot encode a PROBE");
        uint16_t good = cf_udp_csum(t->p->s.ip, t->p->iut_ip, t->p->s.port,
                                    t->p->iut_port, b, (size_t)n);
        uint16_t cs = pass == 0   ? (uint16_t)(good ^ 0x0101)
                      : pass == 1 ? 0
                                  : good;
        if (cf_raw_udp(t->p->iut_ip, t->p->s.port, t->p->iut_port, b, (size_t)n,
                       cs) < 0)
            cf_skip(t, "needs root for a raw socket");
        cf_note_sent(t->p, &h);
        uint16_t path = 2;
        const struct cf_pkt *a =
            cf_wait(t, cf_is_ack_for, &path, cf_ms(t, pass ? 1000 : 50));
        /* R-VAL-4: the answer names the PROBE; R-VAL-2: recorded */
        bool acked = a && a->h.psn == h.psn && a->h.sack_high == h.psn;
        if (acked)
            t->p->psn[2]++;
        if (pass == 0)
            CF_CHECK(t, !acked, "a PROBE with a wrong UDP checksum was taken");
        else
            CF_CHECK(t, acked, "a PROBE with %s UDP checksum was not taken",
                     pass == 1 ? "a zero" : "a good");
    }
}

const struct cf_test cf_t_enc[] = {
    CF_TEST("enc.ports.per_path", "2", "R-ENC-3 R-PATH-1", MUST,
            "one source port per path, constant", enc_ports),
    CF_TEST("enc.ports.range", "2", "R-ENC-3", MAY,
            "source ports from 49152-65535", enc_port_range),
    CF_TEST("enc.any_src_port", "2", "R-ENC-4 R-ENC-2 R-CRC-3 R-SEC-3", MUST,
            "any source port accepted; answers to the announced port",
            enc_any_src_port),
    CF_TEST("enc.max_size", "2", "R-ENC-9 R-ENC-1", MUST,
            "the largest packet is mtu + 60 bytes", enc_max_size),
    CF_TEST("enc.df", "2", "R-ENC-8", MUST,
            "Don't-Fragment set on every IPv4 packet", enc_df),
    CF_TEST("enc.udp_checksum", "2", "R-ENC-7", MUST,
            "a wrong UDP checksum dropped, zero accepted", enc_udp_csum),
    {0},
};
