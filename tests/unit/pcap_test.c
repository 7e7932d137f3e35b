/* Unit tests for the pcap writer (src/io/pcap) and the Wireshark dissector
 * (tools/wireshark/mroce.lua): one packet of each opcode, built with
 * mroce_wire_encode, is written over IPv4 and IPv6; libpcap reads the file
 * back and every synthesized header byte is checked against its own
 * encoder here; then, if tshark is installed, the dissector must decode
 * the values that were encoded and flag a corrupted packet's ICRC. ACKMs
 * (section 3.15) come with two records, with none and a saturated hold,
 * and malformed (wrong count, no payload): the dissector must show every
 * record field and flag the malformed ones. */
#define _DEFAULT_SOURCE /* mkstemp, popen; u_char for <pcap/pcap.h> */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <pcap/pcap.h>

#include "io/pcap/pcap.h"
#include "wire/ackm.h"
#include "wire/wire.h"

#ifndef MROCE_SOURCE_DIR
#error "MROCE_SOURCE_DIR must name the source tree (see CMakeLists.txt)"
#endif

#define N_OPS 12
#define N_ACKMS 4 /* more ACKMs: none, wrong count, no payload, 33 */
#define N_PKTS (N_OPS + 1 + N_ACKMS) /* and a corrupted copy of the first */
#define PKT_MAX 2048                 /* an ACKM of 33 records is 1660 bytes */
#define T0_NS 1700000000123456789ull
#define ETH_LEN 14
#define UDP_LEN 8

static const uint8_t all_ops[N_OPS] = {
    MROCE_OP_WRITE,    MROCE_OP_WRITE_IMM, MROCE_OP_SEND,  MROCE_OP_SEND_IMM,
    MROCE_OP_READ_REQ, MROCE_OP_READ_RESP, MROCE_OP_ACK,   MROCE_OP_NACK,
    MROCE_OP_ACKM,     MROCE_OP_PROBE,     MROCE_OP_CLOSE, MROCE_OP_CLOSE_ACK,
};

struct tpkt {
    struct mroce_hdr h;
    struct mroce_pkt_meta meta;
    uint64_t t_ns;
    uint8_t buf[PKT_MAX];
    size_t len;
    int sack_count; /* ACK and ACKM only */
    int crc_ok;
    /* ACKM: records in the payload (-1: no payload), the count byte, the
     * MTH path's hold as sent, malformed payload? */
    int n_recs, count;
    uint32_t hold_ns;
    int ackm_bad;
};

struct env {
    char path[64];
    struct tpkt pkt[N_PKTS];
};

/* ---- Building the packets ---- */

static int has_dxh(uint8_t op)
{
    return mroce_wire_op_info(op)->headers & MROCE_H_DXH;
}

static void fill_hdr(struct mroce_hdr *h, int i, uint8_t op)
{
    memset(h, 0, sizeof(*h));
    h->opcode = op;
    h->flags = (uint8_t)((i & 1) ? MROCE_HF_ACKREQ : MROCE_HF_RETX);
    h->path = (uint16_t)(i + 1);
    h->conn = 0x1A2B3C00u + (uint32_t)i;
    h->psn = 0xFFFFFFF0u + (uint32_t)i; /* near the wrap */
    h->ts = 123456789u + (uint32_t)i;
    h->dsn = 662316u + (uint32_t)i * 7;
    h->stream = (uint16_t)(i % 3);
    h->msn = (uint32_t)i + 5;
    h->msg_len = 4104;
    h->offset = 4096;
    h->va = 0x00007F3A12345000ull;
    h->rkey = 0xC0FFEE01u;
    h->ssn = (uint32_t)i + 2;
    h->imm = 0xDEADBE00u + (uint32_t)i;
}

/* ACK: bits 0, 1, 3 and 10..20 set, 17 CE marks (like spec 12.8). */
static int fill_ack(struct mroce_hdr *h)
{
    h->psn = 0;
    h->sack_high = 1000;
    h->dsn_cum = 662317;
    h->echo_ts = 123456789;
    h->rate_mbps = 50000;
    h->ce_count = 17;
    h->rx_count = 749;
    unsigned bits[] = {0, 1, 3, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
    for (size_t b = 0; b < sizeof(bits) / sizeof(bits[0]); b++)
        mroce_sack_set(h->sack, bits[b]);
    return (int)(sizeof(bits) / sizeof(bits[0]));
}

/* The records of every test ACKM, as in spec 12.48: paths 5 and 9. */
static struct mroce_ackm_rec test_rec(int k)
{
    struct mroce_ackm_rec r = {.path = 5,
                               .hold_ns = 1000,
                               .sack_high = 2000,
                               .echo_ts = 0x075bc9a0,
                               .ce_count = 0,
                               .rx_count = 1990,
                               .sack = {0xff00000000000000ull}};
    if (k == 1)
        r = (struct mroce_ackm_rec){
            .path = 9,
            .hold_ns = 264,
            .sack_high = 70000,
            .echo_ts = 0x075bcb00,
            .ce_count = 3,
            .rx_count = 1234,
            .sack = {0xa000000000000000ull, 0x8000000000000000ull, 0, 1}};
    return r;
}
#define TEST_REC_SACK_COUNTS "8,4" /* set bits of the two bitmaps */

static void fill_meta(struct mroce_pkt_meta *m, int i)
{
    memset(m, 0, sizeof(*m));
    int v6 = i & 1;
    uint8_t fam = v6 ? MROCE_AF_INET6 : MROCE_AF_INET;
    m->src.family = m->dst.family = fam;
    if (v6) {
        m->src.ip[0] = m->dst.ip[0] = 0xfd;
        m->src.ip[15] = 1;
        m->dst.ip[15] = 2;
    } else {
        memcpy(m->src.ip, (uint8_t[]){10, 0, 0, 1}, 4);
        memcpy(m->dst.ip, (uint8_t[]){10, 0, 0, 2}, 4);
    }
    m->src_port = (uint16_t)(49152 + 97 * i);
    m->dst_port = MROCE_UDP_PORT_DEFAULT;
    m->ecn = (uint8_t)(i % 4);
}

/* Encodes p->h with the payload into packet i of the capture. */
static void finish_pkt(struct tpkt *p, int i, const uint8_t *pay, uint32_t plen)
{
    p->h.payload_len = plen;
    int n = mroce_wire_encode(&p->h, pay, plen, p->buf, sizeof(p->buf));
    assert_true(n > 0);
    p->len = (size_t)n;
    p->crc_ok = 1;
    fill_meta(&p->meta, i);
    p->t_ns = T0_NS + (uint64_t)i * 1001;
}

/* An ACKM for path i + 1 with the first n test records (n < 0: no
 * payload at all); count >= 0 overwrites the count byte. */
static void build_ackm(struct tpkt *p, int i, int n, uint32_t hold_ns,
                       int count)
{
    struct mroce_ackm_rec recs[2] = {test_rec(0), test_rec(1)};
    uint8_t pay[MROCE_ACKM_PRE_LEN + 2 * MROCE_ACKM_REC_LEN];
    uint32_t plen = 0;
    fill_hdr(&p->h, i, MROCE_OP_ACKM);
    p->sack_count = fill_ack(&p->h);
    if (n >= 0)
        plen = (uint32_t)mroce_ackm_put(pay, hold_ns, recs, (unsigned)n);
    if (count >= 0)
        pay[0] = (uint8_t)count;
    p->n_recs = n;
    p->count = count >= 0 ? count : n;
    p->hold_ns = hold_ns < MROCE_ACKM_HOLD_MAX_NS ? hold_ns / 8 * 8
                                                  : MROCE_ACKM_HOLD_MAX_NS;
    p->ackm_bad = n < 0 || (count >= 0 && count != n);
    finish_pkt(p, i, pay, plen);
}

/* An ACKM of 33 records, length and count consistent: one too many. */
static void build_ackm_33(struct tpkt *p, int i)
{
    static uint8_t pay[MROCE_ACKM_PRE_LEN + 33 * MROCE_ACKM_REC_LEN];
    memset(pay, 0, sizeof(pay));
    pay[0] = 33;
    for (int k = 0; k < 33; k++) /* distinct paths 10..42 */
        pay[MROCE_ACKM_PRE_LEN + k * MROCE_ACKM_REC_LEN + 1] =
            (uint8_t)(10 + k);
    fill_hdr(&p->h, i, MROCE_OP_ACKM);
    p->sack_count = fill_ack(&p->h);
    p->n_recs = p->count = 33;
    p->ackm_bad = 1;
    finish_pkt(p, i, pay, sizeof(pay));
}

static void build_pkt(struct tpkt *p, int i, uint8_t op)
{
    uint8_t payload[37]; /* odd: exercises the UDP checksum's pad byte */
    for (size_t k = 0; k < sizeof(payload); k++)
        payload[k] = (uint8_t)(k * 13 + (size_t)i);
    if (op == MROCE_OP_ACKM)
        return build_ackm(p, i, 2, 80, -1);
    fill_hdr(&p->h, i, op);
    if (op == MROCE_OP_ACK)
        p->sack_count = fill_ack(&p->h);
    if (op == MROCE_OP_NACK) {
        p->h.nak_code = MROCE_NAK_RNR;
        p->h.nak_info = 200;
    }
    int has_pl = mroce_wire_op_info(op)->headers & MROCE_H_PAYLOAD;
    finish_pkt(p, i, payload, has_pl ? sizeof(payload) : 0);
}

/* The first packet again with one payload byte flipped. */
static void build_corrupt(struct tpkt *dst, const struct tpkt *src, int i)
{
    *dst = *src;
    dst->buf[dst->len - MROCE_ICRC_LEN - 1] ^= 0x40;
    dst->crc_ok = 0;
    dst->t_ns = T0_NS + (uint64_t)i * 1001;
    struct mroce_hdr h;
    assert_int_equal(mroce_wire_decode(dst->buf, dst->len, &h),
                     MROCE_WIRE_ECRC);
}

static int env_setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    assert_non_null(e);
    for (int i = 0; i < N_OPS; i++)
        build_pkt(&e->pkt[i], i, all_ops[i]);
    build_corrupt(&e->pkt[N_OPS], &e->pkt[0], N_OPS);
    build_ackm(&e->pkt[N_OPS + 1], N_OPS + 1, 0, 600000, -1); /* saturates */
    build_ackm(&e->pkt[N_OPS + 2], N_OPS + 2, 2, 0, 3);
    build_ackm(&e->pkt[N_OPS + 3], N_OPS + 3, -1, 0, -1);
    build_ackm_33(&e->pkt[N_OPS + 4], N_OPS + 4);
    snprintf(e->path, sizeof(e->path), "/tmp/mroce-pcap-test-XXXXXX");
    int fd = mkstemp(e->path);
    assert_true(fd >= 0);
    close(fd);
    struct mroce_pcap *pc;
    assert_int_equal(mroce_pcap_open(e->path, &pc), MROCE_OK);
    for (int i = 0; i < N_PKTS; i++) {
        struct tpkt *p = &e->pkt[i];
        assert_int_equal(
            mroce_pcap_write(pc, p->t_ns, &p->meta, p->buf, p->len), 0);
    }
    assert_int_equal(mroce_pcap_count(pc), N_PKTS);
    assert_int_equal(mroce_pcap_close(pc), MROCE_OK);
    *state = e;
    return 0;
}

static int env_teardown(void **state)
{
    struct env *e = *state;
    unlink(e->path);
    free(e);
    return 0;
}

/* ---- Reading the capture back with libpcap ---- */

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* RFC 1071 sum of a byte string, folded; a correct header or datagram
 * (checksum field included) sums to 0xFFFF. */
static uint32_t sum16(uint32_t s, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        s += (i & 1) ? p[i] : (uint32_t)p[i] << 8;
    while (s >> 16)
        s = (s & 0xFFFF) + (s >> 16);
    return s;
}

static size_t check_ip4(const uint8_t *ip, const struct tpkt *p)
{
    assert_int_equal(ip[0], 0x45);
    assert_int_equal(ip[1], p->meta.ecn); /* DSCP 0 */
    assert_int_equal(be16(ip + 2), 20 + UDP_LEN + p->len);
    assert_int_equal(be16(ip + 6), 0x4000); /* DF, R-ENC-8 */
    assert_int_equal(ip[9], 17);
    assert_int_equal(sum16(0, ip, 20), 0xFFFF);
    assert_memory_equal(ip + 12, p->meta.src.ip, 4);
    assert_memory_equal(ip + 16, p->meta.dst.ip, 4);
    return 20;
}

static size_t check_ip6(const uint8_t *ip, const struct tpkt *p)
{
    assert_int_equal(ip[0] >> 4, 6);
    assert_int_equal((be16(ip) >> 4) & 0xFF, p->meta.ecn);
    assert_int_equal(be16(ip + 4), UDP_LEN + p->len);
    assert_int_equal(ip[6], 17);
    assert_memory_equal(ip + 8, p->meta.src.ip, 16);
    assert_memory_equal(ip + 24, p->meta.dst.ip, 16);
    return 40;
}

static void check_udp(const uint8_t *udp, const struct tpkt *p, size_t alen,
                      const uint8_t *ip_src)
{
    size_t ulen = UDP_LEN + p->len;
    assert_int_equal(be16(udp), p->meta.src_port);
    assert_int_equal(be16(udp + 2), p->meta.dst_port);
    assert_int_equal(be16(udp + 4), ulen);
    assert_int_not_equal(be16(udp + 6), 0);
    uint32_t s = sum16(0, ip_src, 2 * alen); /* src and dst, adjacent */
    s = sum16(s + 17 + (uint32_t)ulen, udp, ulen);
    assert_int_equal(s, 0xFFFF);
    assert_memory_equal(udp + UDP_LEN, p->buf, p->len);
}

static void check_frame(const struct pcap_pkthdr *ph, const uint8_t *f,
                        const struct tpkt *p)
{
    int v4 = p->meta.src.family == MROCE_AF_INET;
    size_t ip_len = v4 ? 20 : 40;
    assert_int_equal(ph->ts.tv_sec, p->t_ns / 1000000000u);
    assert_int_equal(ph->ts.tv_usec, p->t_ns % 1000000000u);
    assert_int_equal(ph->caplen, ETH_LEN + ip_len + UDP_LEN + p->len);
    assert_int_equal(ph->len, ph->caplen);
    assert_int_equal(be16(f + 12), v4 ? 0x0800 : 0x86DD);
    const uint8_t *ip = f + ETH_LEN;
    size_t n = v4 ? check_ip4(ip, p) : check_ip6(ip, p);
    check_udp(ip + n, p, v4 ? 4 : 16, ip + (v4 ? 12 : 8));
}

static void test_read_back(void **state)
{
    struct env *e = *state;
    char err[PCAP_ERRBUF_SIZE];
    pcap_t *pc = pcap_open_offline_with_tstamp_precision(
        e->path, PCAP_TSTAMP_PRECISION_NANO, err);
    assert_non_null(pc);
    assert_int_equal(pcap_datalink(pc), DLT_EN10MB);
    struct pcap_pkthdr *ph;
    const u_char *f;
    int i = 0;
    while (pcap_next_ex(pc, &ph, &f) == 1) {
        assert_true(i < N_PKTS);
        check_frame(ph, f, &e->pkt[i]);
        i++;
    }
    assert_int_equal(i, N_PKTS);
    pcap_close(pc);
}

static void test_bad_args(void **state)
{
    (void)state;
    struct mroce_pcap *pc = (void *)1;
    assert_int_equal(mroce_pcap_open("/nonexistent-dir/x.pcap", &pc),
                     MROCE_EINVAL);
    assert_null(pc);
    char path[] = "/tmp/mroce-pcap-args-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(mroce_pcap_open(path, &pc), MROCE_OK);
    struct mroce_pkt_meta m;
    fill_meta(&m, 0);
    uint8_t b[4] = {0};
    m.dst.family = MROCE_AF_INET6; /* mixed families */
    assert_int_equal(mroce_pcap_write(pc, 0, &m, b, 4), MROCE_EINVAL);
    fill_meta(&m, 0);
    assert_int_equal(mroce_pcap_write(pc, 0, &m, b, 65508), MROCE_EINVAL);
    assert_int_equal(mroce_pcap_count(pc), 0);
    assert_int_equal(mroce_pcap_close(pc), MROCE_OK);
    unlink(path);
}

/* ---- Decoding with tshark and the Lua dissector ---- */

#define TSHARK_FIELDS                                                          \
    "-e mroce.opcode -e mroce.path -e mroce.psn -e mroce.dsn "                 \
    "-e mroce.crc_ok -e mroce.sack.count -e mroce.ce_count "                   \
    "-e mroce.nak.syndrome -e mroce.payload_len -e mroce.ssn -e mroce.imm "    \
    "-e mroce.flags.retx -e mroce.ackm.count -e mroce.ackm.hold_ns "           \
    "-e mroce.ackm.rec.path -e mroce.ackm.rec.hold_ns "                        \
    "-e mroce.ackm.rec.sack_high -e mroce.ackm.rec.echo_ts "                   \
    "-e mroce.ackm.rec.ce_count -e mroce.ackm.rec.rx_count "                   \
    "-e mroce.ackm.rec.sack.count -e _ws.expert.message -e _ws.col.Info"

enum col {
    C_OP,
    C_PATH,
    C_PSN,
    C_DSN,
    C_CRC,
    C_SACK,
    C_CE,
    C_NAK,
    C_PLEN,
    C_SSN,
    C_IMM,
    C_RETX,
    C_ACKM_COUNT,
    C_ACKM_HOLD,
    C_REC_PATH,
    C_REC_HOLD,
    C_REC_HIGH,
    C_REC_ECHO,
    C_REC_CE,
    C_REC_RX,
    C_REC_SACK,
    C_EXPERT,
    C_INFO,
    N_COLS
};

/* Splits a tab-separated line in place; missing columns are "". */
static void split(char *line, char *cols[N_COLS])
{
    line[strcspn(line, "\n")] = '\0';
    for (int c = 0; c < N_COLS; c++) {
        cols[c] = line;
        char *tab = line ? strchr(line, '\t') : NULL;
        if (tab)
            *tab = '\0';
        line = tab ? tab + 1 : NULL;
        if (!cols[c])
            cols[c] = "";
    }
}

static unsigned long num(const char *s)
{
    assert_true(*s != '\0');
    return strtoul(s, NULL, 0);
}

/* tshark prints booleans as 1/0 or True/False, depending on its version. */
static int boolean(const char *s)
{
    assert_true(*s != '\0');
    return s[0] == '1' || s[0] == 'T' || s[0] == 't';
}

static void check_data_cols(char **c, const struct tpkt *p)
{
    assert_int_equal(num(c[C_DSN]), p->h.dsn);
    assert_int_equal(num(c[C_PLEN]), p->h.payload_len);
    int snh = mroce_wire_op_info(p->h.opcode)->headers & MROCE_H_SNH;
    int imm = mroce_wire_op_info(p->h.opcode)->headers & MROCE_H_IMM;
    if (snh)
        assert_int_equal(num(c[C_SSN]), p->h.ssn);
    if (imm)
        assert_int_equal(num(c[C_IMM]), p->h.imm);
}

/* "a,b" of field f of the records the dissector can show: those whose
 * 48 bytes are in the payload. */
#define REC_LIST(out, p, f, fmt)                                               \
    do {                                                                       \
        int n_ = (p)->n_recs < 0 ? 0 : (p)->n_recs;                            \
        (out)[0] = '\0';                                                       \
        for (int k_ = 0; k_ < n_; k_++)                                        \
            snprintf((out) + strlen(out), 64, "%s" fmt, k_ ? "," : "",         \
                     test_rec(k_).f);                                          \
    } while (0)

static void check_ackm_cols(char **c, const struct tpkt *p)
{
    char want[256];
    assert_int_equal(num(c[C_SACK]), p->sack_count);
    assert_int_equal(num(c[C_CE]), p->h.ce_count);
    assert_int_equal(num(c[C_PLEN]), p->h.payload_len);
    if (p->count == 33) { /* the dissector shows the first 32 */
        assert_int_equal(num(c[C_ACKM_COUNT]), 33);
        assert_non_null(strstr(c[C_REC_PATH], "10,11,12,"));
        assert_non_null(strstr(c[C_REC_PATH], ",40,41"));
        assert_null(strstr(c[C_REC_PATH], "42"));
        assert_non_null(strstr(c[C_EXPERT], "count 33: at most 32"));
        assert_non_null(strstr(c[C_INFO], "MALFORMED ACKM"));
        return;
    }
    if (p->n_recs < 0) { /* no preamble to show */
        assert_string_equal(c[C_ACKM_COUNT], "");
        assert_non_null(strstr(c[C_EXPERT], "shorter than its 4-byte"));
    } else {
        assert_int_equal(num(c[C_ACKM_COUNT]), p->count);
        assert_int_equal(num(c[C_ACKM_HOLD]), p->hold_ns);
    }
    REC_LIST(want, p, path, "%u");
    assert_string_equal(c[C_REC_PATH], want);
    REC_LIST(want, p, hold_ns, "%u");
    assert_string_equal(c[C_REC_HOLD], want);
    REC_LIST(want, p, sack_high, "%u");
    assert_string_equal(c[C_REC_HIGH], want);
    REC_LIST(want, p, echo_ts, "%u");
    assert_string_equal(c[C_REC_ECHO], want);
    REC_LIST(want, p, ce_count, "%u");
    assert_string_equal(c[C_REC_CE], want);
    REC_LIST(want, p, rx_count, "%u");
    assert_string_equal(c[C_REC_RX], want);
    assert_string_equal(c[C_REC_SACK],
                        p->n_recs == 2 ? TEST_REC_SACK_COUNTS : "");
    if (p->n_recs == 2 && !p->ackm_bad)
        assert_non_null(strstr(c[C_INFO], "+paths=5,9"));
    if (p->count == 3)
        assert_non_null(strstr(c[C_EXPERT], "count 3 needs 148"));
    assert_int_equal(strstr(c[C_INFO], "MALFORMED ACKM") != NULL, p->ackm_bad);
    assert_int_equal(strstr(c[C_EXPERT], "Hold saturated") != NULL,
                     p->hold_ns == MROCE_ACKM_HOLD_MAX_NS);
}

static void check_cols(char **c, const struct tpkt *p)
{
    assert_int_equal(num(c[C_OP]), p->h.opcode);
    assert_int_equal(num(c[C_PATH]), p->h.path);
    assert_int_equal(num(c[C_PSN]), p->h.psn);
    assert_int_equal(boolean(c[C_CRC]), p->crc_ok);
    assert_int_equal(boolean(c[C_RETX]), !!(p->h.flags & MROCE_HF_RETX));
    if (has_dxh(p->h.opcode))
        check_data_cols(c, p);
    else if (p->h.opcode != MROCE_OP_NACK)
        assert_string_equal(c[C_DSN], "");
    if (p->h.opcode == MROCE_OP_ACK) {
        assert_int_equal(num(c[C_SACK]), p->sack_count);
        assert_int_equal(num(c[C_CE]), p->h.ce_count);
    }
    if (p->h.opcode == MROCE_OP_ACKM)
        check_ackm_cols(c, p);
    else
        assert_string_equal(c[C_ACKM_COUNT], "");
    if (p->h.opcode == MROCE_OP_NACK) {
        assert_int_equal(num(c[C_NAK]), MROCE_NAK_RNR);
        assert_int_equal(num(c[C_DSN]), p->h.dsn);
        assert_non_null(strstr(c[C_INFO], "NACK RNR"));
    }
    assert_non_null(strstr(c[C_INFO], mroce_wire_op_name(p->h.opcode)));
    assert_int_equal(strstr(c[C_INFO], "BAD ICRC") != NULL, !p->crc_ok);
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_tshark(void **state)
{
    struct env *e = *state;
    if (system("command -v tshark >/dev/null 2>&1") != 0) {
        print_message("tshark not installed: skipping the dissector test "
                      "(scripts/install-deps.sh installs it)\n");
        skip();
    }
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "tshark -n -X lua_script:%s/tools/wireshark/mroce.lua -r %s "
             "-T fields -E separator=/t " TSHARK_FIELDS " 2>/dev/null",
             MROCE_SOURCE_DIR, e->path);
    double t0 = wall_now();
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    char line[4096];
    int i = 0;
    while (fgets(line, sizeof(line), f)) {
        char *c[N_COLS];
        assert_true(i < N_PKTS);
        split(line, c);
        check_cols(c, &e->pkt[i]);
        i++;
    }
    assert_int_equal(pclose(f), 0);
    print_message("tshark decoded %d packets in %.2f s\n", i, wall_now() - t0);
    assert_int_equal(i, N_PKTS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_read_back, env_setup,
                                        env_teardown),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test_setup_teardown(test_tshark, env_setup, env_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
