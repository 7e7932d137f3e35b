/* ARP and IPv6 neighbour discovery frames (see nd.h). */
#include "io/dpdk/nd.h"

#include <string.h>

#include "wire/be.h"

#define ARP_BODY 28
#define ND_MSG 24 /* type, code, csum, flags, target */
#define ND_OPT_SLLA 1
#define ND_OPT_TLLA 2
#define ND_HOP_LIMIT 255
#define NA_SOLICITED 0x40
#define NA_OVERRIDE 0x20

static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

int mroce_dpdk_arp_parse(const uint8_t *b, uint32_t len,
                         struct mroce_dpdk_arp *out)
{
    if (len < ARP_BODY || mroce_be16_get(b) != 1 ||
        mroce_be16_get(b + 2) != MROCE_ETHERTYPE_IPV4 || b[4] != 6 || b[5] != 4)
        return MROCE_EPROTO;
    out->op = mroce_be16_get(b + 6);
    memcpy(out->sha, b + 8, 6);
    memcpy(out->spa, b + 14, 4);
    memcpy(out->tpa, b + 24, 4);
    return 0;
}

uint32_t mroce_dpdk_arp_build(uint8_t *frame, uint16_t op, const uint8_t sha[6],
                              const uint8_t spa[4], const uint8_t *tha,
                              const uint8_t tpa[4])
{
    uint8_t *b = frame + MROCE_ETH_LEN;
    memset(frame, 0, MROCE_ETH_MIN);
    memcpy(frame, tha ? tha : bcast, 6);
    memcpy(frame + 6, sha, 6);
    mroce_be16_put(frame + 12, MROCE_ETHERTYPE_ARP);
    mroce_be16_put(b, 1);
    mroce_be16_put(b + 2, MROCE_ETHERTYPE_IPV4);
    b[4] = 6;
    b[5] = 4;
    mroce_be16_put(b + 6, op);
    memcpy(b + 8, sha, 6);
    memcpy(b + 14, spa, 4);
    if (tha)
        memcpy(b + 18, tha, 6);
    memcpy(b + 24, tpa, 4);
    return MROCE_ETH_MIN;
}

/* Finds the link-layer address option of the given type. */
static int nd_opts(const uint8_t *o, uint32_t len, uint8_t want,
                   struct mroce_dpdk_nd *out)
{
    while (len >= 2) {
        uint32_t olen = (uint32_t)o[1] * 8;
        if (olen == 0 || olen > len)
            return MROCE_EPROTO;
        if (o[0] == want && olen >= 8) {
            out->has_lladdr = true;
            memcpy(out->lladdr, o + 2, 6);
        }
        o += olen;
        len -= olen;
    }
    return 0;
}

int mroce_dpdk_nd_parse(const uint8_t *frame,
                        const struct mroce_dpdk_rx_info *info,
                        struct mroce_dpdk_nd *out)
{
    const uint8_t *m = frame + info->off;
    if (info->len < 4)
        return MROCE_EPROTO;
    if (m[0] != MROCE_ND_NS && m[0] != MROCE_ND_NA)
        return 1;
    uint64_t s = mroce_dpdk_pseudo_sum(&info->meta.src, &info->meta.dst,
                                       MROCE_IPPROTO_ICMPV6, info->len);
    if (info->len < ND_MSG || frame[MROCE_ETH_LEN + 7] != ND_HOP_LIMIT ||
        m[1] != 0 ||
        mroce_dpdk_csum_fold(mroce_dpdk_csum_add(s, m, info->len)) != 0xffff)
        return MROCE_EPROTO;
    out->type = m[0];
    memcpy(out->target, m + 8, 16);
    out->has_lladdr = false;
    return nd_opts(m + ND_MSG, info->len - ND_MSG,
                   m[0] == MROCE_ND_NS ? ND_OPT_SLLA : ND_OPT_TLLA, out);
}

static void nd_ip6(uint8_t *ip, const uint8_t src[16], const uint8_t dst[16],
                   uint16_t plen)
{
    mroce_be32_put(ip, 6u << 28);
    mroce_be16_put(ip + 4, plen);
    ip[6] = MROCE_IPPROTO_ICMPV6;
    ip[7] = ND_HOP_LIMIT;
    memcpy(ip + 8, src, 16);
    memcpy(ip + 24, dst, 16);
}

uint32_t mroce_dpdk_nd_build(uint8_t *frame, uint8_t type,
                             const uint8_t src_mac[6], const uint8_t src_ip[16],
                             const uint8_t dst_mac[6], const uint8_t dst_ip[16],
                             const uint8_t target[16])
{
    uint8_t group[16], gmac[6];
    uint8_t *ip = frame + MROCE_ETH_LEN, *m = ip + MROCE_IP6_LEN;
    uint32_t mlen = ND_MSG + 8;
    if (type == MROCE_ND_NS) {
        mroce_dpdk_solicited_node(target, group, gmac);
        dst_ip = group;
        dst_mac = gmac;
    }
    memcpy(frame, dst_mac, 6);
    memcpy(frame + 6, src_mac, 6);
    mroce_be16_put(frame + 12, MROCE_ETHERTYPE_IPV6);
    nd_ip6(ip, src_ip, dst_ip, (uint16_t)mlen);
    memset(m, 0, mlen);
    m[0] = type;
    if (type == MROCE_ND_NA)
        m[4] = NA_SOLICITED | NA_OVERRIDE;
    memcpy(m + 8, target, 16);
    m[ND_MSG] = type == MROCE_ND_NS ? ND_OPT_SLLA : ND_OPT_TLLA;
    m[ND_MSG + 1] = 1;
    memcpy(m + ND_MSG + 2, src_mac, 6);
    struct mroce_addr a = {.family = MROCE_AF_INET6}, b = a;
    memcpy(a.ip, src_ip, 16);
    memcpy(b.ip, dst_ip, 16);
    uint64_t s = mroce_dpdk_pseudo_sum(&a, &b, MROCE_IPPROTO_ICMPV6, mlen);
    uint16_t c =
        (uint16_t)~mroce_dpdk_csum_fold(mroce_dpdk_csum_add(s, m, mlen));
    memcpy(m + 2, &c, 2);
    return MROCE_ETH_LEN + MROCE_IP6_LEN + mlen;
}
