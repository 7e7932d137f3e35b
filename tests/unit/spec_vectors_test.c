/* mroce's codec against every test vector of docs/spec.md section 12, as
 * the independent generator tests/vectors/metaroce_vectors.py writes them
 * (a CTest fixture runs it before this test; another CTest checks that
 * the spec holds exactly the generator's output). For each vector the
 * file gives the bytes, the fields, and the action a receiver must take:
 *
 *   accept  decodes to the fields, and the fields encode to the bytes;
 *   ignore  decodes to the fields as if reserved bits were zero, and they
 *           encode to the canonical bytes (R-VER-4);
 *   stale   decodes (the sender then ignores the NACK, R-NACK-2);
 *   drop_X  the decoder refuses it with reason X (R-RX-1), or, for an IP
 *           datagram, its UDP checksum is wrong (R-ENC-7).
 *
 * IP datagrams are checked with a checksum written here (RFC 1071, 768,
 * 8200) and, when built with DPDK, by the DPDK datapath's frame parser.
 * Decoder inputs are exact-size heap copies, so ASan sees any overread. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"
#ifdef MROCE_HAVE_DPDK
#include "io/dpdk/hdr.h"
#endif

#ifndef MROCE_VECTORS_FILE
#error "MROCE_VECTORS_FILE: path of the generated vector file"
#endif

#define MAX_BYTES 2048
#define MAX_FIELDS 32

struct field {
    char name[16];
    uint64_t value;
};

struct vec {
    char name[64], kind[16], action[32];
    uint8_t bytes[MAX_BYTES], inner[MAX_BYTES], payload[MAX_BYTES],
        canon[MAX_BYTES];
    size_t len, inner_len, payload_len, canon_len;
    bool has_fields, has_ip;
    struct field fields[MAX_FIELDS];
    int n_fields;
    uint8_t src[16], dst[16];
    unsigned sport, dport, ecn;
};

/* ---- reading the file ---- */

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    if (!strcmp(s, "-"))
        return 0;
    for (; s[0] && s[1] && s[0] != '\n'; s += 2) {
        assert_true(n < cap);
        unsigned b;
        assert_int_equal(sscanf(s, "%2x", &b), 1);
        out[n++] = (uint8_t)b;
    }
    return n;
}

/* Reads the next vector; false at the end of the file. */
static bool read_vec(FILE *f, struct vec *v)
{
    static char line[8192];
    memset(v, 0, sizeof(*v));
    bool in = false;
    while (fgets(line, sizeof(line), f)) {
        char *arg = strchr(line, ' ');
        if (line[0] == '#' || !arg) {
            if (in && !strncmp(line, "end", 3))
                return true;
            continue;
        }
        *arg++ = 0;
        arg[strcspn(arg, "\n")] = 0;
        if (!strcmp(line, "vector")) {
            assert_int_equal(
                sscanf(arg, "%63s %15s %31s", v->name, v->kind, v->action), 3);
            in = true;
        } else if (!strcmp(line, "hex")) {
            v->len = unhex(arg, v->bytes, MAX_BYTES);
        } else if (!strcmp(line, "inner")) {
            v->inner_len = unhex(arg, v->inner, MAX_BYTES);
        } else if (!strcmp(line, "payload")) {
            v->payload_len = unhex(arg, v->payload, MAX_BYTES);
        } else if (!strcmp(line, "canon")) {
            v->canon_len = unhex(arg, v->canon, MAX_BYTES);
        } else if (!strcmp(line, "field")) {
            struct field *fl = &v->fields[v->n_fields++];
            assert_true(v->n_fields <= MAX_FIELDS);
            unsigned long long val;
            assert_int_equal(sscanf(arg, "%15s %llu", fl->name, &val), 2);
            fl->value = val;
            v->has_fields = true;
        } else if (!strcmp(line, "ip")) {
            char s[40], d[40];
            assert_int_equal(sscanf(arg, "%39s %39s %u %u %u", s, d, &v->sport,
                                    &v->dport, &v->ecn),
                             5);
            assert_true(unhex(s, v->src, 16) == unhex(d, v->dst, 16));
            v->has_ip = true;
        }
    }
    return false;
}

/* ---- fields ---- */

#define F(m)                                                                   \
    {                                                                          \
#m, offsetof(struct mroce_hdr, m), sizeof(((struct mroce_hdr *)0)->m)  \
    }
static const struct {
    const char *name;
    size_t off, size;
} hdr_fields[] = {
    F(opcode),    F(flags),    F(path),     F(conn),      F(psn),
    F(ts),        F(dsn),      F(stream),   F(msn),       F(msg_len),
    F(offset),    F(va),       F(rkey),     F(ssn),       F(imm),
    F(sack_high), F(dsn_cum),  F(echo_ts),  F(rate_mbps), F(ce_count),
    F(rx_count),  F(nak_code), F(nak_info),
};
#undef F

static void set_field(struct mroce_hdr *h, const struct field *fl)
{
    if (!strncmp(fl->name, "sack", 4) && fl->name[4] >= '0' &&
        fl->name[4] <= '3' && !fl->name[5]) {
        h->sack[fl->name[4] - '0'] = fl->value;
        return;
    }
    for (size_t i = 0; i < sizeof(hdr_fields) / sizeof(hdr_fields[0]); i++) {
        if (strcmp(hdr_fields[i].name, fl->name))
            continue;
        uint8_t *p = (uint8_t *)h + hdr_fields[i].off;
        switch (hdr_fields[i].size) {
        case 1:
            *p = (uint8_t)fl->value;
            break;
        case 2:
            *(uint16_t *)(void *)p = (uint16_t)fl->value;
            break;
        case 4:
            *(uint32_t *)(void *)p = (uint32_t)fl->value;
            break;
        default:
            *(uint64_t *)(void *)p = fl->value;
            break;
        }
        return;
    }
    fail_msg("unknown field %s", fl->name);
}

static struct mroce_hdr expected_hdr(const struct vec *v)
{
    struct mroce_hdr h;
    memset(&h, 0, sizeof(h));
    for (int i = 0; i < v->n_fields; i++)
        set_field(&h, &v->fields[i]);
    return h;
}

/* ---- the codec ---- */

static int decode_exact(const uint8_t *b, size_t len, struct mroce_hdr *h,
                        uint8_t **copy)
{
    *copy = malloc(len ? len : 1);
    assert_non_null(*copy);
    memcpy(*copy, b, len);
    return mroce_wire_decode(*copy, len, h);
}

static int drop_reason(const char *action)
{
    static const struct {
        const char *name;
        int err;
    } map[] = {
        {"drop_trunc", MROCE_WIRE_ETRUNC},
        {"drop_version", MROCE_WIRE_EVERSION},
        {"drop_opcode", MROCE_WIRE_EOPCODE},
        {"drop_crc", MROCE_WIRE_ECRC},
        {"drop_payload", MROCE_WIRE_EPAYLOAD},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(action, map[i].name))
            return map[i].err;
    fail_msg("unknown action %s", action);
    return 0;
}

static void check_fields(const struct vec *v, const struct mroce_hdr *got)
{
    struct mroce_hdr want = expected_hdr(v);
    for (size_t i = 0; i < sizeof(hdr_fields) / sizeof(hdr_fields[0]); i++) {
        const uint8_t *a = (const uint8_t *)&want + hdr_fields[i].off;
        const uint8_t *b = (const uint8_t *)got + hdr_fields[i].off;
        if (memcmp(a, b, hdr_fields[i].size))
            fail_msg("%s: field %s differs", v->name, hdr_fields[i].name);
    }
    assert_memory_equal(want.sack, got->sack, sizeof(want.sack));
}

/* A packet that the decoder must take: fields, payload, and re-encoding
 * to the canonical bytes (the vector's own bytes unless reserved bits are
 * set in it). */
static void check_taken(const struct vec *v, const uint8_t *b, size_t len)
{
    struct mroce_hdr h;
    uint8_t *copy;
    int rc = decode_exact(b, len, &h, &copy);
    if (rc != MROCE_WIRE_OK)
        fail_msg("%s: decode returned %d", v->name, rc);
    check_fields(v, &h);
    assert_int_equal(h.payload_len, v->payload_len);
    if (v->payload_len)
        assert_memory_equal(h.payload, v->payload, v->payload_len);
    free(copy);
    struct mroce_hdr e = expected_hdr(v);
    uint8_t out[MAX_BYTES];
    int n = mroce_wire_encode(&e, v->payload, (uint32_t)v->payload_len, out,
                              sizeof(out));
    assert_int_equal(n, (int)v->canon_len);
    assert_memory_equal(out, v->canon, v->canon_len);
    if (!strcmp(v->action, "accept") || !strcmp(v->action, "stale"))
        assert_memory_equal(v->canon, b, len); /* canonical already */
}

static void check_packet(const struct vec *v, const uint8_t *b, size_t len)
{
    if (!strncmp(v->action, "drop_", 5)) {
        struct mroce_hdr h;
        uint8_t *copy;
        int rc = decode_exact(b, len, &h, &copy);
        free(copy);
        if (rc != drop_reason(v->action))
            fail_msg("%s: decode returned %d for %s", v->name, rc, v->action);
        return;
    }
    assert_true(v->has_fields);
    check_taken(v, b, len);
}

/* ---- IP datagrams ---- */

static uint32_t sum16(uint32_t s, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i += 2)
        s += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (n & 1)
        s += (uint32_t)p[n - 1] << 8;
    return s;
}

static uint16_t fold(uint32_t s)
{
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)s;
}

/* Returns the UDP datagram of an IP datagram and whether its checksum (and
 * the IPv4 header checksum) verify. */
static const uint8_t *ip_udp(const struct vec *v, size_t *udp_len, bool *ok)
{
    const uint8_t *b = v->bytes;
    bool v6 = !strcmp(v->kind, "frame6");
    size_t ihl = v6 ? 40 : 20, alen = v6 ? 16 : 4;
    assert_int_equal(b[0] >> 4, v6 ? 6 : 4);
    uint8_t pseudo[40];
    if (v6) {
        assert_int_equal(b[6], 17);
        assert_int_equal((b[4] << 8 | b[5]) + 40, v->len);
        assert_int_equal((b[1] >> 4) & 3, v->ecn);
    } else {
        assert_int_equal(b[0], 0x45);
        assert_int_equal(b[9], 17);
        assert_int_equal(b[2] << 8 | b[3], v->len);
        assert_int_equal(b[6] & 0x40, 0x40); /* DF, R-ENC-8 */
        assert_int_equal(b[1] & 3, v->ecn);
        assert_int_equal(fold(sum16(0, b, 20)), 0xffff);
    }
    const uint8_t *src = b + (v6 ? 8 : 12), *dst = src + alen;
    assert_memory_equal(src, v->src, alen);
    assert_memory_equal(dst, v->dst, alen);
    const uint8_t *u = b + ihl;
    *udp_len = v->len - ihl;
    assert_int_equal(u[4] << 8 | u[5], *udp_len);
    assert_int_equal(u[0] << 8 | u[1], v->sport);
    assert_int_equal(u[2] << 8 | u[3], v->dport);
    memcpy(pseudo, src, alen);
    memcpy(pseudo + alen, dst, alen);
    uint32_t s = sum16(0, pseudo, 2 * alen) + 17 + (uint32_t)*udp_len;
    *ok = fold(sum16(s, u, *udp_len)) == 0xffff;
    return u;
}

#ifdef MROCE_HAVE_DPDK
/* The DPDK datapath's parser on the datagram behind an Ethernet header. */
static void check_dpdk(const struct vec *v, bool csum_ok)
{
    static uint8_t frame[MAX_BYTES + MROCE_ETH_LEN];
    bool v6 = !strcmp(v->kind, "frame6");
    memset(frame, 0, 12);
    frame[0] = 2;
    frame[6] = 2;
    frame[12] = v6 ? 0x86 : 0x08;
    frame[13] = v6 ? 0xdd : 0x00;
    memcpy(frame + MROCE_ETH_LEN, v->bytes, v->len);
    struct mroce_dpdk_local local = {.udp_port = (uint16_t)v->dport};
    local.ip.family = v6 ? MROCE_AF_INET6 : MROCE_AF_INET;
    memcpy(local.ip.ip, v->dst, v6 ? 16 : 4);
    struct mroce_dpdk_rx_info info;
    int rc = mroce_dpdk_hdr_parse(frame, (uint32_t)(v->len + MROCE_ETH_LEN),
                                  &local, &info);
    if (!csum_ok) {
        assert_int_equal(rc, -(1 + MROCE_DPDK_DROP_UDP_CSUM));
        return;
    }
    assert_int_equal(rc, MROCE_DPDK_RX_UDP);
    assert_int_equal(info.len, v->inner_len);
    assert_memory_equal(frame + info.off, v->inner, v->inner_len);
    assert_int_equal(info.meta.src_port, v->sport);
    assert_int_equal(info.meta.dst_port, v->dport);
    assert_int_equal(info.meta.ecn, v->ecn);
    assert_memory_equal(info.meta.src.ip, v->src, v6 ? 16 : 4);
}
#endif

static void check_frame(const struct vec *v)
{
    size_t ulen;
    bool ok;
    const uint8_t *u = ip_udp(v, &ulen, &ok);
    assert_int_equal(ulen - 8, v->inner_len);
    assert_memory_equal(u + 8, v->inner, v->inner_len);
#ifdef MROCE_HAVE_DPDK
    check_dpdk(v, ok);
#endif
    if (!strcmp(v->action, "drop_udp_csum")) {
        assert_false(ok);
        return;
    }
    assert_true(ok);
    check_taken(v, v->inner, v->inner_len);
}

/* ---- the test ---- */

static void test_every_vector(void **state)
{
    (void)state;
    FILE *f = fopen(MROCE_VECTORS_FILE, "r");
    if (!f)
        fail_msg("cannot open %s (run the spec_vectors_emit test first)",
                 MROCE_VECTORS_FILE);
    static struct vec v;
    int n = 0, drops = 0, frames = 0, ignores = 0;
    while (read_vec(f, &v)) {
        n++;
        drops += !strncmp(v.action, "drop_", 5);
        ignores += !strcmp(v.action, "ignore");
        if (!strcmp(v.kind, "packet")) {
            check_packet(&v, v.bytes, v.len);
        } else {
            assert_true(v.has_ip);
            frames++;
            check_frame(&v);
        }
    }
    fclose(f);
    /* the file is complete: 12.2-12.12 and every later vector */
    assert_true(n >= 42);
    assert_true(drops >= 9);
    assert_true(ignores >= 3); /* reserved flag, DXH, NKH bytes */
    assert_true(frames >= 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_vector),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
