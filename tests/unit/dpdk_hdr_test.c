/* Unit tests of the DPDK datapath's pure parts (no EAL): the Internet
 * checksum against a byte-wise reference and a textbook vector, frames
 * built and parsed back over IPv4 and IPv6, every drop reason, ARP and
 * neighbour discovery frames, and the neighbour table. */
#ifndef MROCE_HAVE_DPDK
int main(void)
{
    return 77; /* built without DPDK */
}
#else
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <mroce/mroce_dp.h>

#include "io/dpdk/hdr.h"
#include "io/dpdk/nd.h"
#include "io/dpdk/neigh.h"
#include "wire/be.h"

static const uint8_t mac_a[6] = {2, 0, 0, 0, 0, 0xa};
static const uint8_t mac_b[6] = {2, 0, 0, 0, 0, 0xb};

static void addr_of(const char *ip, struct mroce_addr *a)
{
    assert_int_equal(mroce_addr_parse(ip, a), 0);
}

/* RFC 1071 the slow way: big-endian 16-bit words. */
static uint16_t ref_sum(const uint8_t *p, size_t n)
{
    uint32_t s = 0;
    for (size_t i = 0; i + 1 < n; i += 2)
        s += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (n & 1)
        s += (uint32_t)p[n - 1] << 8;
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)s;
}

static uint16_t our_sum(const uint8_t *p, size_t n)
{
    uint16_t v = mroce_dpdk_csum_fold(mroce_dpdk_csum_add(0, p, n));
    uint8_t b[2];
    memcpy(b, &v, 2);
    return mroce_be16_get(b);
}

static void test_csum(void **state)
{
    (void)state;
    /* the classic IPv4 header; its checksum is 0xb861 */
    uint8_t ip[20] = {0x45, 0, 0,    0x73, 0, 0, 0x40, 0,    0x40, 0x11,
                      0,    0, 0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0,    0xc7};
    assert_int_equal((uint16_t)~our_sum(ip, 20), 0xb861);
    static uint8_t buf[9100];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(i * 37 + 11);
    for (size_t n = 0; n < 4100; n += 61)
        assert_int_equal(our_sum(buf, n), ref_sum(buf, n));
    /* around the vector code's threshold and step, at every alignment */
    for (size_t off = 0; off < 4; off++)
        for (size_t n = 100; n < 300; n++)
            assert_int_equal(our_sum(buf + off, n), ref_sum(buf + off, n));
    memset(buf, 0xff, sizeof(buf)); /* every add carries */
    assert_int_equal(our_sum(buf, 4096), ref_sum(buf, 4096));
    assert_int_equal(our_sum(buf + 1, 9000), ref_sum(buf + 1, 9000));
}

static uint32_t build(uint8_t *f, const char *src, const char *dst, uint8_t ecn,
                      uint32_t plen)
{
    struct mroce_pkt_meta m = {.src_port = 51000, .dst_port = 4797, .ecn = ecn};
    addr_of(src, &m.src);
    addr_of(dst, &m.dst);
    uint32_t h = mroce_dpdk_hdr_len(m.dst.family);
    for (uint32_t i = 0; i < plen; i++)
        f[h + i] = (uint8_t)(i ^ 0x5a);
    mroce_dpdk_hdr_write(f, mac_b, mac_a, &m, plen);
    return h + plen;
}

static void roundtrip(const char *src, const char *dst)
{
    uint8_t f[5000];
    struct mroce_dpdk_local l = {.udp_port = 4797};
    struct mroce_dpdk_rx_info info;
    addr_of(dst, &l.ip);
    uint32_t len = build(f, src, dst, MROCE_ECN_CE, 4097);
    assert_int_equal(mroce_dpdk_hdr_parse(f, len, &l, &info),
                     MROCE_DPDK_RX_UDP);
    assert_int_equal(info.len, 4097);
    assert_int_equal(info.off, mroce_dpdk_hdr_len(l.ip.family));
    assert_int_equal(info.meta.ecn, MROCE_ECN_CE);
    assert_int_equal(info.meta.src_port, 51000);
    assert_memory_equal(info.src_mac, mac_a, 6);
    assert_memory_equal(info.meta.dst.ip, l.ip.ip, 16);
    assert_false(info.csum_partial);
    /* one flipped payload bit: IPv6 carries a checksum, IPv4 does not */
    f[len - 1] ^= 1;
    int rc = mroce_dpdk_hdr_parse(f, len, &l, &info);
    if (l.ip.family == MROCE_AF_INET6)
        assert_int_equal(rc, -(1 + MROCE_DPDK_DROP_UDP_CSUM));
    else
        assert_int_equal(rc, MROCE_DPDK_RX_UDP);
}

static void test_roundtrip(void **state)
{
    (void)state;
    roundtrip("10.0.0.1", "10.0.0.2");
    roundtrip("fd00::1", "fd00::2");
}

static void test_ipv4_fields(void **state)
{
    (void)state;
    uint8_t f[200];
    build(f, "10.0.0.1", "10.0.0.2", MROCE_ECN_ECT0, 100);
    const uint8_t *ip = f + MROCE_ETH_LEN;
    assert_int_equal(mroce_be16_get(f + 12), MROCE_ETHERTYPE_IPV4);
    assert_int_equal(ip[1], MROCE_ECN_ECT0);
    assert_int_equal(mroce_be16_get(ip + 6), 0x4000); /* DF, R-ENC-8 */
    assert_int_equal(mroce_be16_get(ip + 2), 128);
    assert_int_equal(ref_sum(ip, 20), 0xffff);
    assert_int_equal(mroce_be16_get(ip + 26), 0); /* UDP csum 0 on v4 */
}

/* Linux leaves the pseudo-header sum in the field (CHECKSUM_PARTIAL). */
static void test_partial_csum(void **state)
{
    (void)state;
    uint8_t f[300];
    struct mroce_dpdk_local l = {.udp_port = 4797};
    struct mroce_dpdk_rx_info info;
    addr_of("10.0.0.2", &l.ip);
    uint32_t len = build(f, "10.0.0.1", "10.0.0.2", 0, 200);
    struct mroce_addr s, d;
    addr_of("10.0.0.1", &s);
    addr_of("10.0.0.2", &d);
    uint16_t ps = mroce_dpdk_csum_fold(
        mroce_dpdk_pseudo_sum(&s, &d, MROCE_IPPROTO_UDP, 208));
    memcpy(f + MROCE_ETH_LEN + MROCE_IP4_LEN + 6, &ps, 2);
    assert_int_equal(mroce_dpdk_hdr_parse(f, len, &l, &info),
                     MROCE_DPDK_RX_UDP);
    assert_true(info.csum_partial);
}

static int parse_edit(const char *dst, void (*edit)(uint8_t *f))
{
    uint8_t f[300];
    struct mroce_dpdk_local l = {.udp_port = 4797};
    struct mroce_dpdk_rx_info info;
    addr_of(dst, &l.ip);
    uint32_t len =
        build(f, dst[0] == 'f' ? "fd00::1" : "10.0.0.1", dst, 0, 100);
    edit(f);
    return mroce_dpdk_hdr_parse(f, len, &l, &info);
}

static void x_frag(uint8_t *f)
{
    uint8_t *ip = f + MROCE_ETH_LEN;
    mroce_be16_put(ip + 6, 0x2000);
    memset(ip + 10, 0, 2);
    uint16_t c =
        (uint16_t)~mroce_dpdk_csum_fold(mroce_dpdk_csum_add(0, ip, 20));
    memcpy(ip + 10, &c, 2);
}
static void x_proto(uint8_t *f)
{
    uint8_t *ip = f + MROCE_ETH_LEN;
    ip[9] = 6;
    memset(ip + 10, 0, 2);
    uint16_t c =
        (uint16_t)~mroce_dpdk_csum_fold(mroce_dpdk_csum_add(0, ip, 20));
    memcpy(ip + 10, &c, 2);
}
static void x_v6_zero_csum(uint8_t *f)
{
    memset(f + MROCE_ETH_LEN + MROCE_IP6_LEN + 6, 0, 2);
}
static void x_v6_frag(uint8_t *f)
{
    f[MROCE_ETH_LEN + 6] = 44;
}
static void x_v6_dst(uint8_t *f)
{
    f[MROCE_ETH_LEN + 39] = 7;
}

static void test_drops(void **state)
{
    (void)state;
    assert_int_equal(parse_edit("10.0.0.2", x_frag),
                     -(1 + MROCE_DPDK_DROP_FRAG));
    assert_int_equal(parse_edit("10.0.0.2", x_proto),
                     -(1 + MROCE_DPDK_DROP_NOT_UDP));
    assert_int_equal(parse_edit("fd00::2", x_v6_zero_csum),
                     -(1 + MROCE_DPDK_DROP_UDP_CSUM));
    assert_int_equal(parse_edit("fd00::2", x_v6_frag),
                     -(1 + MROCE_DPDK_DROP_FRAG));
    assert_int_equal(parse_edit("fd00::2", x_v6_dst),
                     -(1 + MROCE_DPDK_DROP_NOT_OUR_IP));
    uint8_t shortf[10] = {0};
    struct mroce_dpdk_local l = {.udp_port = 4797};
    struct mroce_dpdk_rx_info info;
    assert_int_equal(mroce_dpdk_hdr_parse(shortf, 10, &l, &info),
                     -(1 + MROCE_DPDK_DROP_TRUNC_IP));
}

static void test_arp(void **state)
{
    (void)state;
    uint8_t f[64];
    struct mroce_addr a, b;
    addr_of("10.0.0.1", &a);
    addr_of("10.0.0.2", &b);
    uint32_t len =
        mroce_dpdk_arp_build(f, MROCE_ARP_REQUEST, mac_a, a.ip, NULL, b.ip);
    assert_int_equal(len, 60);
    struct mroce_dpdk_local l = {.ip = b, .udp_port = 4797};
    struct mroce_dpdk_rx_info info;
    assert_int_equal(mroce_dpdk_hdr_parse(f, len, &l, &info),
                     MROCE_DPDK_RX_ARP);
    struct mroce_dpdk_arp arp;
    assert_int_equal(mroce_dpdk_arp_parse(f + info.off, info.len, &arp), 0);
    assert_int_equal(arp.op, MROCE_ARP_REQUEST);
    assert_memory_equal(arp.sha, mac_a, 6);
    assert_memory_equal(arp.tpa, b.ip, 4);
    assert_int_equal(mroce_dpdk_arp_parse(f + info.off, 20, &arp),
                     MROCE_EPROTO);
}

static void test_nd(void **state)
{
    (void)state;
    uint8_t f[MROCE_ND_FRAME_MAX];
    struct mroce_addr a, b;
    addr_of("fd00::1", &a);
    addr_of("fd00::2", &b);
    uint32_t len =
        mroce_dpdk_nd_build(f, MROCE_ND_NS, mac_a, a.ip, NULL, NULL, b.ip);
    assert_int_equal(f[0], 0x33); /* solicited-node multicast MAC */
    struct mroce_dpdk_local l = {.ip = b, .udp_port = 4797};
    struct mroce_dpdk_rx_info info;
    assert_int_equal(mroce_dpdk_hdr_parse(f, len, &l, &info),
                     MROCE_DPDK_RX_ICMP6);
    struct mroce_dpdk_nd nd;
    assert_int_equal(mroce_dpdk_nd_parse(f, &info, &nd), 0);
    assert_int_equal(nd.type, MROCE_ND_NS);
    assert_memory_equal(nd.target, b.ip, 16);
    assert_true(nd.has_lladdr);
    assert_memory_equal(nd.lladdr, mac_a, 6);
    f[len - 1] ^= 1; /* checksum now wrong */
    assert_int_equal(mroce_dpdk_nd_parse(f, &info, &nd), MROCE_EPROTO);

    len = mroce_dpdk_nd_build(f, MROCE_ND_NA, mac_b, b.ip, mac_a, a.ip, b.ip);
    l.ip = a;
    assert_int_equal(mroce_dpdk_hdr_parse(f, len, &l, &info),
                     MROCE_DPDK_RX_ICMP6);
    assert_int_equal(mroce_dpdk_nd_parse(f, &info, &nd), 0);
    assert_int_equal(nd.type, MROCE_ND_NA);
    assert_memory_equal(nd.lladdr, mac_b, 6);
}

static void test_neigh(void **state)
{
    (void)state;
    static struct mroce_dpdk_neigh t;
    struct mroce_addr a;
    uint8_t mac[6] = {2, 0, 0, 0, 0, 0};
    mroce_dpdk_neigh_init(&t);
    addr_of("10.0.0.1", &a);
    assert_null(mroce_dpdk_neigh_lookup(&t, &a));
    assert_true(mroce_dpdk_neigh_want_request(&t, &a, 100, 50));
    assert_false(mroce_dpdk_neigh_want_request(&t, &a, 120, 50));
    assert_true(mroce_dpdk_neigh_want_request(&t, &a, 200, 50));
    assert_int_equal(mroce_dpdk_neigh_add(&t, &a, mac_a, true), 0);
    assert_int_equal(mroce_dpdk_neigh_add(&t, &a, mac_b, false), 0);
    assert_memory_equal(mroce_dpdk_neigh_lookup(&t, &a), mac_a, 6);
    for (int i = 0; i < 3 * MROCE_DPDK_NEIGH_MAX; i++) {
        a.ip[3] = (uint8_t)(i + 2);
        a.ip[2] = (uint8_t)(i >> 8);
        mac[5] = (uint8_t)i;
        assert_int_equal(mroce_dpdk_neigh_add(&t, &a, mac, false), 0);
        assert_memory_equal(mroce_dpdk_neigh_lookup(&t, &a), mac, 6);
    }
    addr_of("10.0.0.1", &a); /* the static entry survived the churn */
    assert_memory_equal(mroce_dpdk_neigh_lookup(&t, &a), mac_a, 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csum),        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_ipv4_fields), cmocka_unit_test(test_partial_csum),
        cmocka_unit_test(test_drops),       cmocka_unit_test(test_arp),
        cmocka_unit_test(test_nd),          cmocka_unit_test(test_neigh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
