/* Ethernet/IPv4/IPv6/UDP header build and validation (see hdr.h). */
#include "io/dpdk/hdr.h"

#include <string.h>

#include <immintrin.h>

#include "wire/be.h"

#define IP4_DF 0x4000
#define IP4_MF 0x2000
#define IP4_OFF_MASK 0x1fff
#define IP6_FRAG 44
#define TTL 64

#define DROP(r) (-(1 + (int)MROCE_DPDK_DROP_##r))

#define CSUM_BULK_MIN 128 /* below it the scalar loop is as fast */
#define CSUM_BULK_STEP 64

/* The 32-bit little-endian words of b[0..n), n a multiple of 64, summed
 * into 64-bit lanes (no carry lost below 2^32 words): the same ones'-
 * complement sum as 16-bit words once folded (RFC 1071, 2.(B)). Four
 * times the scalar loop's rate; an IPv6 frame's UDP checksum covers the
 * whole 4 KiB payload (R-ENC-7) on both ends. */
__attribute__((target("avx2"))) static uint64_t csum_bulk_avx2(const uint8_t *b,
                                                               size_t n)
{
    const __m256i z = _mm256_setzero_si256();
    __m256i a0 = z, a1 = z;
    for (; n; n -= CSUM_BULK_STEP, b += CSUM_BULK_STEP) {
        __m256i v0 = _mm256_loadu_si256((const __m256i *)b);
        __m256i v1 = _mm256_loadu_si256((const __m256i *)(b + 32));
        a0 = _mm256_add_epi64(a0, _mm256_unpacklo_epi32(v0, z));
        a1 = _mm256_add_epi64(a1, _mm256_unpackhi_epi32(v0, z));
        a0 = _mm256_add_epi64(a0, _mm256_unpacklo_epi32(v1, z));
        a1 = _mm256_add_epi64(a1, _mm256_unpackhi_epi32(v1, z));
    }
    uint64_t l[4];
    _mm256_storeu_si256((__m256i *)l, _mm256_add_epi64(a0, a1));
    return l[0] + l[1] + l[2] + l[3];
}

/* The scalar sum; inlined for IP headers. */
static inline uint64_t csum_words(uint64_t sum, const uint8_t *b, size_t n)
{
    for (; n >= 8; n -= 8, b += 8) {
        uint64_t v;
        memcpy(&v, b, 8);
        sum += v;
        sum += sum < v; /* end-around carry */
    }
    if (n >= 4) {
        uint32_t v;
        memcpy(&v, b, 4);
        sum += v;
        sum += sum < v;
        b += 4;
        n -= 4;
    }
    if (n >= 2) {
        uint16_t v;
        memcpy(&v, b, 2);
        sum += v;
        sum += sum < v;
        b += 2;
        n -= 2;
    }
    if (n) {
        uint8_t last[2] = {b[0], 0};
        uint16_t v;
        memcpy(&v, last, 2);
        sum += v;
        sum += sum < v;
    }
    return sum;
}

uint64_t mroce_dpdk_csum_add(uint64_t sum, const void *p, size_t n)
{
    const uint8_t *b = p;
    if (n >= CSUM_BULK_MIN && __builtin_cpu_supports("avx2")) {
        size_t bulk = n & ~(size_t)(CSUM_BULK_STEP - 1);
        uint64_t v = csum_bulk_avx2(b, bulk);
        sum += v;
        sum += sum < v; /* end-around carry */
        b += bulk;
        n -= bulk;
    }
    return csum_words(sum, b, n);
}

uint16_t mroce_dpdk_csum_fold(uint64_t sum)
{
    sum = (sum & 0xffffffffu) + (sum >> 32);
    sum = (sum & 0xffffffffu) + (sum >> 32);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)sum;
}

static size_t addr_len(const struct mroce_addr *a)
{
    return a->family == MROCE_AF_INET6 ? 16 : 4;
}

uint64_t mroce_dpdk_pseudo_sum(const struct mroce_addr *src,
                               const struct mroce_addr *dst, uint8_t proto,
                               uint32_t l4_len)
{
    uint8_t tail[8] = {0};
    uint64_t s = mroce_dpdk_csum_add(0, src->ip, addr_len(src));
    s = mroce_dpdk_csum_add(s, dst->ip, addr_len(dst));
    mroce_be32_put(tail, l4_len);
    tail[7] = proto;
    /* IPv4: zero, proto, 16-bit length == the same sum as this layout */
    return mroce_dpdk_csum_add(s, tail, sizeof(tail));
}

void mroce_dpdk_solicited_node(const uint8_t ip[16], uint8_t group[16],
                               uint8_t mac[6])
{
    static const uint8_t pfx[13] = {0xff, 0x02, 0, 0, 0, 0,   0,
                                    0,    0,    0, 0, 1, 0xff};
    memcpy(group, pfx, sizeof(pfx));
    memcpy(group + 13, ip + 13, 3);
    mac[0] = mac[1] = 0x33;
    memcpy(mac + 2, group + 12, 4);
}

/* ---- Build ---- */

static void put_ip4(uint8_t *ip, const struct mroce_pkt_meta *m, uint32_t len)
{
    ip[0] = 0x45;
    ip[1] = m->ecn & 3; /* DSCP 0, ECN as the engine asks (R-ENC-6) */
    mroce_be16_put(ip + 2, (uint16_t)(MROCE_IP4_LEN + MROCE_UDP_LEN + len));
    mroce_be16_put(ip + 4, 0);
    mroce_be16_put(ip + 6, IP4_DF); /* R-ENC-8 */
    ip[8] = TTL;
    ip[9] = MROCE_IPPROTO_UDP;
    memset(ip + 10, 0, 2);
    memcpy(ip + 12, m->src.ip, 4);
    memcpy(ip + 16, m->dst.ip, 4);
    uint16_t c =
        (uint16_t)~mroce_dpdk_csum_fold(csum_words(0, ip, MROCE_IP4_LEN));
    memcpy(ip + 10, &c, 2);
}

static void put_ip6(uint8_t *ip, const struct mroce_pkt_meta *m, uint32_t len)
{
    /* R-ENC-5: the flow label is the path's source port */
    uint32_t vtf = 6u << 28 | (uint32_t)(m->ecn & 3) << 20 | m->src_port;
    mroce_be32_put(ip, vtf);
    mroce_be16_put(ip + 4, (uint16_t)(MROCE_UDP_LEN + len));
    ip[6] = MROCE_IPPROTO_UDP;
    ip[7] = TTL;
    memcpy(ip + 8, m->src.ip, 16);
    memcpy(ip + 24, m->dst.ip, 16);
}

static void put_udp(uint8_t *udp, const struct mroce_pkt_meta *m, uint32_t len)
{
    uint32_t ulen = MROCE_UDP_LEN + len;
    mroce_be16_put(udp, m->src_port);
    mroce_be16_put(udp + 2, m->dst_port);
    mroce_be16_put(udp + 4, (uint16_t)ulen);
    memset(udp + 6, 0, 2);
    if (m->dst.family != MROCE_AF_INET6)
        return; /* R-ENC-7: MAY be zero over IPv4; the ICRC covers it */
    uint64_t s =
        mroce_dpdk_pseudo_sum(&m->src, &m->dst, MROCE_IPPROTO_UDP, ulen);
    uint16_t c =
        (uint16_t)~mroce_dpdk_csum_fold(mroce_dpdk_csum_add(s, udp, ulen));
    if (c == 0)
        c = 0xffff;
    memcpy(udp + 6, &c, 2);
}

void mroce_dpdk_hdr_write(uint8_t *frame, const uint8_t dst_mac[6],
                          const uint8_t src_mac[6],
                          const struct mroce_pkt_meta *meta, uint32_t len)
{
    bool v6 = meta->dst.family == MROCE_AF_INET6;
    uint8_t *ip = frame + MROCE_ETH_LEN;
    uint8_t *udp = ip + (v6 ? MROCE_IP6_LEN : MROCE_IP4_LEN);
    memcpy(frame, dst_mac, 6);
    memcpy(frame + 6, src_mac, 6);
    mroce_be16_put(frame + 12,
                   v6 ? MROCE_ETHERTYPE_IPV6 : MROCE_ETHERTYPE_IPV4);
    if (v6)
        put_ip6(ip, meta, len);
    else
        put_ip4(ip, meta, len);
    put_udp(udp, meta, len);
}

/* ---- Parse ---- */

static bool is_local(const struct mroce_addr *ours, const uint8_t *ip)
{
    return memcmp(ours->ip, ip, addr_len(ours)) == 0;
}

/* A nonzero checksum must be right (R-ENC-7). A Linux sender whose
 * device offloads the checksum (veth) hands af_packet readers the frame
 * with only the pseudo-header sum in the field (CHECKSUM_PARTIAL): that
 * one is accepted and flagged -- the ICRC still covers the payload. */
static int check_udp_csum(const uint8_t *udp, uint32_t ulen,
                          struct mroce_dpdk_rx_info *out)
{
    uint16_t field;
    memcpy(&field, udp + 6, 2);
    if (field == 0)
        return out->meta.src.family == MROCE_AF_INET6 ? DROP(UDP_CSUM) : 0;
    uint64_t ps = mroce_dpdk_pseudo_sum(&out->meta.src, &out->meta.dst,
                                        MROCE_IPPROTO_UDP, ulen);
    if (mroce_dpdk_csum_fold(mroce_dpdk_csum_add(ps, udp, ulen)) == 0xffff)
        return 0;
    if (field == mroce_dpdk_csum_fold(ps)) {
        out->csum_partial = true;
        return 0;
    }
    return DROP(UDP_CSUM);
}

static int parse_udp(const uint8_t *frame, uint32_t off, uint32_t l4_len,
                     const struct mroce_dpdk_local *local,
                     struct mroce_dpdk_rx_info *out)
{
    const uint8_t *udp = frame + off;
    if (l4_len < MROCE_UDP_LEN)
        return DROP(TRUNC_UDP);
    uint32_t ulen = mroce_be16_get(udp + 4);
    if (ulen < MROCE_UDP_LEN || ulen > l4_len)
        return DROP(TRUNC_UDP);
    out->meta.src_port = mroce_be16_get(udp);
    out->meta.dst_port = mroce_be16_get(udp + 2);
    if (out->meta.dst_port != local->udp_port)
        return DROP(NOT_OUR_PORT);
    int rc = check_udp_csum(udp, ulen, out);
    if (rc < 0)
        return rc;
    out->kind = MROCE_DPDK_RX_UDP;
    out->off = off + MROCE_UDP_LEN;
    out->len = ulen - MROCE_UDP_LEN;
    return out->kind;
}

static void set_addr(struct mroce_addr *a, int family, const uint8_t *ip)
{
    memset(a, 0, sizeof(*a));
    a->family = (uint8_t)family;
    memcpy(a->ip, ip, family == MROCE_AF_INET6 ? 16 : 4);
}

static int parse_ip4(const uint8_t *frame, uint32_t len,
                     const struct mroce_dpdk_local *local,
                     struct mroce_dpdk_rx_info *out)
{
    const uint8_t *ip = frame + MROCE_ETH_LEN;
    if (len < MROCE_ETH_LEN + MROCE_IP4_LEN)
        return DROP(TRUNC_IP);
    uint32_t ihl = (uint32_t)(ip[0] & 0xf) * 4;
    uint32_t tot = mroce_be16_get(ip + 2);
    if (ip[0] >> 4 != 4 || ihl < MROCE_IP4_LEN || ip[8] == 0)
        return DROP(BAD_IP);
    if (tot < ihl || tot > len - MROCE_ETH_LEN)
        return DROP(TRUNC_IP);
    if (mroce_dpdk_csum_fold(csum_words(0, ip, ihl)) != 0xffff)
        return DROP(IP_CSUM);
    if (mroce_be16_get(ip + 6) & (IP4_MF | IP4_OFF_MASK))
        return DROP(FRAG);
    if (local->ip.family != MROCE_AF_INET || !is_local(&local->ip, ip + 16))
        return DROP(NOT_OUR_IP);
    if (ip[9] != MROCE_IPPROTO_UDP)
        return DROP(NOT_UDP);
    set_addr(&out->meta.src, MROCE_AF_INET, ip + 12);
    set_addr(&out->meta.dst, MROCE_AF_INET, ip + 16);
    out->meta.ecn = ip[1] & 3;
    return parse_udp(frame, MROCE_ETH_LEN + ihl, tot - ihl, local, out);
}

/* Our address, its solicited-node group, or all-nodes. */
static bool ip6_for_us(const struct mroce_dpdk_local *local, const uint8_t *dst,
                       bool icmp)
{
    static const uint8_t all_nodes[16] = {0xff, 0x02, [15] = 1};
    uint8_t group[16], mac[6];
    if (local->ip.family != MROCE_AF_INET6)
        return false;
    if (is_local(&local->ip, dst))
        return true;
    if (!icmp)
        return false;
    mroce_dpdk_solicited_node(local->ip.ip, group, mac);
    return !memcmp(dst, group, 16) || !memcmp(dst, all_nodes, 16);
}

static int parse_ip6(const uint8_t *frame, uint32_t len,
                     const struct mroce_dpdk_local *local,
                     struct mroce_dpdk_rx_info *out)
{
    const uint8_t *ip = frame + MROCE_ETH_LEN;
    uint32_t hdrs = MROCE_ETH_LEN + MROCE_IP6_LEN;
    if (len < hdrs)
        return DROP(TRUNC_IP);
    uint32_t plen = mroce_be16_get(ip + 4);
    if (ip[0] >> 4 != 6)
        return DROP(BAD_IP);
    if (plen > len - hdrs)
        return DROP(TRUNC_IP);
    if (ip[6] == IP6_FRAG)
        return DROP(FRAG);
    if (ip[6] != MROCE_IPPROTO_UDP && ip[6] != MROCE_IPPROTO_ICMPV6)
        return DROP(NOT_UDP);
    if (!ip6_for_us(local, ip + 24, ip[6] == MROCE_IPPROTO_ICMPV6))
        return DROP(NOT_OUR_IP);
    set_addr(&out->meta.src, MROCE_AF_INET6, ip + 8);
    set_addr(&out->meta.dst, MROCE_AF_INET6, ip + 24);
    out->meta.ecn = (uint8_t)(mroce_be32_get(ip) >> 20 & 3);
    if (ip[6] == MROCE_IPPROTO_UDP)
        return parse_udp(frame, hdrs, plen, local, out);
    out->kind = MROCE_DPDK_RX_ICMP6;
    out->off = hdrs;
    out->len = plen;
    return out->kind;
}

int mroce_dpdk_hdr_parse(const uint8_t *frame, uint32_t len,
                         const struct mroce_dpdk_local *local,
                         struct mroce_dpdk_rx_info *out)
{
    if (len < MROCE_ETH_LEN)
        return DROP(TRUNC_IP);
    out->csum_partial = false;
    memcpy(out->src_mac, frame + 6, 6);
    switch (mroce_be16_get(frame + 12)) {
    case MROCE_ETHERTYPE_IPV4:
        return parse_ip4(frame, len, local, out);
    case MROCE_ETHERTYPE_IPV6:
        return parse_ip6(frame, len, local, out);
    case MROCE_ETHERTYPE_ARP:
        out->kind = MROCE_DPDK_RX_ARP;
        out->off = MROCE_ETH_LEN;
        out->len = len - MROCE_ETH_LEN;
        return out->kind;
    default:
        return DROP(ETHERTYPE);
    }
}
