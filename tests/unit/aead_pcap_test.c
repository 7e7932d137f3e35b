/* The Wireshark dissector (tools/wireshark/mroce.lua) on sealed packets
 * (docs/spec.md section 3.14): the three vectors of spec 12.44-12.46 and
 * a sealed packet of every opcode in both modes, written to a pcap file;
 * tshark must show SEAL, the key phase, a control packet's CSN, the
 * protection byte, the payload in clear or as ciphertext, the 16-byte tag
 * (and no ICRC), with the right payload length. */
#define _DEFAULT_SOURCE /* mkstemp, popen */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/pcap/pcap.h"
#include "wire/aead.h"

#ifndef MROCE_SOURCE_DIR
#error "MROCE_SOURCE_DIR must name the source tree (see CMakeLists.txt)"
#endif

#define N_OPS 12
#define MAX_PKTS 32

static const uint8_t all_ops[N_OPS] = {
    MROCE_OP_WRITE,    MROCE_OP_WRITE_IMM, MROCE_OP_SEND,  MROCE_OP_SEND_IMM,
    MROCE_OP_READ_REQ, MROCE_OP_READ_RESP, MROCE_OP_ACK,   MROCE_OP_NACK,
    MROCE_OP_ACKM,     MROCE_OP_PROBE,     MROCE_OP_CLOSE, MROCE_OP_CLOSE_ACK,
};

/* Spec 12.44, the authenticated WRITE (tests/vectors/aead_vectors.py). */
static const uint8_t vec_auth_write[72] = {
    0x1a, 0x01, 0x00, 0x03, 0x1a, 0x2b, 0x3c, 0x4d, 0x00, 0x00, 0x03, 0xe8,
    0x07, 0x5b, 0xcd, 0x15, 0x00, 0x0a, 0x1b, 0x2c, 0x00, 0x01, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x7f, 0x3a, 0x12, 0x34, 0x50, 0x00, 0xc0, 0xff, 0xee, 0x01,
    0x4d, 0x65, 0x74, 0x61, 0x52, 0x6f, 0x43, 0x45, 0x25, 0x8f, 0x89, 0x6e,
    0xf2, 0xeb, 0x04, 0x2f, 0x65, 0x39, 0xc0, 0x7b, 0x68, 0x87, 0x9e, 0x43,
};

struct tpkt {
    uint8_t buf[256];
    size_t len;
    uint8_t op;
    int sealed, kphase, enc;
    long csn; /* -1: none */
    uint32_t plen;
};

struct env {
    char path[64];
    struct tpkt pkt[MAX_PKTS];
    int n;
};

/* A sealed packet of op in mode enc (tag bytes 0xEE: not verified). */
static void build(struct tpkt *p, uint8_t op, int i, bool enc)
{
    struct mroce_hdr h = {.opcode = op,
                          .flags = MROCE_HF_ACKREQ,
                          .path = (uint16_t)i,
                          .conn = 0x1A2B3C4D,
                          .psn = 1000u + (uint32_t)i,
                          .ts = 77,
                          .dsn = 500,
                          .msg_len = 20,
                          .sack_high = 9};
    if (op == MROCE_OP_ACK)
        mroce_sack_set(h.sack, 0);
    if (op == MROCE_OP_NACK)
        h.nak_code = MROCE_NAK_RNR;
    int hl = mroce_wire_write_hdr(&h, p->buf, sizeof(p->buf));
    assert_true(hl > 0);
    p->plen = (mroce_wire_op_info(op)->headers & MROCE_H_PAYLOAD) ? 20 : 0;
    if (op == MROCE_OP_ACKM) /* one record: its length is well formed */
        p->plen = 4 + 48;
    p->op = op;
    p->sealed = 1;
    p->kphase = i & 1;
    p->enc = enc && (mroce_wire_op_info(op)->headers & MROCE_H_DXH);
    p->csn = mroce_aead_is_ctl(op) ? 100 + i : -1;
    mroce_aead_frame(p->buf, p->kphase, (uint32_t)(100 + i), enc);
    memset(p->buf + hl, 0x42, p->plen);
    memset(p->buf + hl + p->plen, 0xEE, MROCE_TAG_LEN);
    p->len = (size_t)hl + p->plen + MROCE_TAG_LEN;
}

static int env_setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    assert_non_null(e);
    strcpy(e->path, "/tmp/mroce_aead_pcap_XXXXXX");
    int fd = mkstemp(e->path);
    assert_true(fd >= 0);
    close(fd);
    struct tpkt *v = &e->pkt[e->n++];
    *v = (struct tpkt){.len = 72, .op = 1, .sealed = 1, .csn = -1, .plen = 8};
    memcpy(v->buf, vec_auth_write, sizeof(vec_auth_write));
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < N_OPS; k++)
            build(&e->pkt[e->n++], all_ops[k], k + m, m == 1);
    struct mroce_pcap *pc;
    assert_int_equal(mroce_pcap_open(e->path, &pc), 0);
    struct mroce_pkt_meta meta = {
        .src = {.family = MROCE_AF_INET, .ip = {10, 0, 0, 1}},
        .dst = {.family = MROCE_AF_INET, .ip = {10, 0, 0, 2}},
        .src_port = 50000,
        .dst_port = MROCE_UDP_PORT_DEFAULT};
    for (int i = 0; i < e->n; i++)
        assert_int_equal(mroce_pcap_write(pc, 1000 + (uint64_t)i, &meta,
                                          e->pkt[i].buf, e->pkt[i].len),
                         0);
    assert_int_equal(mroce_pcap_close(pc), 0);
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

#define FIELDS                                                                 \
    "-e mroce.opcode -e mroce.flags.seal -e mroce.flags.kphase -e mroce.csn "  \
    "-e mroce.prot.enc -e mroce.payload -e mroce.payload_enc "                 \
    "-e mroce.payload_len -e mroce.tag -e mroce.crc -e mroce.ackm.sealed "     \
    "-e _ws.col.Info"

enum {
    C_OP,
    C_SEAL,
    C_KP,
    C_CSN,
    C_ENC,
    C_PL,
    C_PLE,
    C_PLEN,
    C_TAG,
    C_CRC,
    C_ACKM,
    C_INFO,
    N_COLS
};

static void split(char *line, char *cols[N_COLS])
{
    line[strcspn(line, "\n")] = '\0';
    for (int c = 0; c < N_COLS; c++) {
        cols[c] = line ? line : "";
        char *tab = line ? strchr(line, '\t') : NULL;
        if (tab)
            *tab = '\0';
        line = tab ? tab + 1 : NULL;
    }
}

static int boolean(const char *s)
{
    assert_true(*s != '\0');
    return s[0] == '1' || s[0] == 'T' || s[0] == 't';
}

static void hex(char *out, const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

static void check(char **c, const struct tpkt *p)
{
    char want[128];
    assert_int_equal(strtoul(c[C_OP], NULL, 0), p->op);
    assert_int_equal(boolean(c[C_SEAL]), p->sealed);
    assert_int_equal(strtoul(c[C_KP], NULL, 0), p->kphase);
    if (p->csn >= 0) {
        assert_int_equal(strtol(c[C_CSN], NULL, 0), p->csn);
        assert_non_null(strstr(c[C_INFO], "csn="));
    } else {
        assert_string_equal(c[C_CSN], "");
    }
    if (mroce_wire_op_info(p->op)->headers & MROCE_H_DXH)
        assert_int_equal(boolean(c[C_ENC]), p->enc);
    assert_int_equal(strtoul(c[C_PLEN], NULL, 0), p->plen);
    size_t hl = mroce_wire_hdr_len(p->op);
    if (p->op == MROCE_OP_ACKM) { /* clear or ciphertext: no way to tell */
        hex(want, p->buf + hl, p->plen);
        assert_string_equal(c[C_ACKM], want);
        assert_string_equal(c[C_PL], "");
        assert_string_equal(c[C_PLE], "");
    } else if (p->plen) { /* in clear or as ciphertext, never both */
        hex(want, p->buf + hl, p->plen);
        assert_string_equal(p->enc ? c[C_PLE] : c[C_PL], want);
        assert_string_equal(p->enc ? c[C_PL] : c[C_PLE], "");
    }
    hex(want, p->buf + p->len - MROCE_TAG_LEN, MROCE_TAG_LEN);
    assert_string_equal(c[C_TAG], want);
    assert_string_equal(c[C_CRC], ""); /* no ICRC on a sealed packet */
    assert_non_null(strstr(c[C_INFO], p->kphase ? "SEALED K1" : "SEALED K0"));
    assert_int_equal(strstr(c[C_INFO], "ENC") != NULL, p->enc);
    assert_null(strstr(c[C_INFO], "Malformed"));
    assert_null(strstr(c[C_INFO], "MALFORMED"));
}

static void test_tshark(void **state)
{
    struct env *e = *state;
    if (system("command -v tshark >/dev/null 2>&1") != 0) {
        print_message("tshark not installed: skipping\n");
        skip();
    }
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "tshark -n -X lua_script:%s/tools/wireshark/mroce.lua -r %s "
             "-T fields -E separator=/t " FIELDS " 2>/dev/null",
             MROCE_SOURCE_DIR, e->path);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    char line[4096];
    int i = 0;
    while (fgets(line, sizeof(line), f)) {
        char *c[N_COLS];
        assert_true(i < e->n);
        split(line, c);
        check(c, &e->pkt[i]);
        i++;
    }
    assert_int_equal(pclose(f), 0);
    assert_int_equal(i, e->n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tshark, env_setup, env_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
