/* Ethernet, IPv4, IPv6 and UDP headers of the DPDK datapath: built and
 * checked by us, since DPDK has no IP stack (pure functions on bytes, no
 * DPDK types, so the unit tests run them without an EAL).
 *
 * A frame is Ethernet + IPv4 or IPv6 (no options, no extension headers) +
 * UDP + the engine's UDP payload. We send IPv4 with DF set (R-ENC-8), ECN
 * from the engine's meta (R-ENC-6), and UDP checksum 0 over IPv4 (R-ENC-7
 * allows it; the ICRC covers the payload) and the full UDP checksum over
 * IPv6 (R-ENC-7, RFC 8200). The IPv6 flow label comes from the UDP source
 * port (R-ENC-5).
 *
 * Buffers are the caller's and only lent for the call. Thread-safe (no
 * state).
 */
#ifndef MROCE_IO_DPDK_HDR_H
#define MROCE_IO_DPDK_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#define MROCE_ETH_LEN 14
#define MROCE_IP4_LEN 20
#define MROCE_IP6_LEN 40
#define MROCE_UDP_LEN 8
#define MROCE_ETH_MIN 60 /* shortest frame without the FCS */

#define MROCE_ETHERTYPE_IPV4 0x0800
#define MROCE_ETHERTYPE_ARP 0x0806
#define MROCE_ETHERTYPE_IPV6 0x86DD
#define MROCE_IPPROTO_UDP 17
#define MROCE_IPPROTO_ICMPV6 58

/* Why a received frame was dropped; each has a counter. */
enum mroce_dpdk_drop {
    MROCE_DPDK_DROP_ETHERTYPE,  /* not IPv4, IPv6 or ARP (VLANs too) */
    MROCE_DPDK_DROP_TRUNC_IP,   /* shorter than its IP header / length */
    MROCE_DPDK_DROP_BAD_IP,     /* version, IHL/options, TTL 0 */
    MROCE_DPDK_DROP_IP_CSUM,    /* IPv4 header checksum wrong */
    MROCE_DPDK_DROP_FRAG,       /* a fragment (R-ENC-8) */
    MROCE_DPDK_DROP_NOT_UDP,    /* another protocol */
    MROCE_DPDK_DROP_NOT_OUR_IP, /* destination is not our address */
    MROCE_DPDK_DROP_TRUNC_UDP,  /* UDP length inconsistent */
    MROCE_DPDK_DROP_UDP_CSUM,   /* nonzero UDP checksum wrong (R-ENC-7) */
    MROCE_DPDK_DROP_NOT_OUR_PORT,
    MROCE_DPDK_DROP_BAD_ARP_ND, /* malformed ARP or neighbour discovery */
    MROCE_DPDK_DROP_MULTISEG,   /* chained mbuf (pool sized to avoid it) */
    MROCE_DPDK_DROP_N
};

/* What parsing found. */
enum mroce_dpdk_rx_kind {
    MROCE_DPDK_RX_UDP = 0, /* ours: payload at off, len */
    MROCE_DPDK_RX_ARP,     /* ARP: body at off */
    MROCE_DPDK_RX_ICMP6,   /* ICMPv6 to us or to our multicast groups */
};

/* The local end a frame must match. */
struct mroce_dpdk_local {
    struct mroce_addr ip;
    uint16_t udp_port;
};

struct mroce_dpdk_rx_info {
    int kind; /* mroce_dpdk_rx_kind */
    struct mroce_pkt_meta meta;
    uint8_t src_mac[6];
    uint32_t off, len; /* payload (UDP), ARP body or ICMPv6 message */
    bool csum_partial; /* UDP checksum left for an offload (see .c) */
};

/* Bytes of Ethernet + IP + UDP headers for an address family. */
static inline uint32_t mroce_dpdk_hdr_len(int family)
{
    return MROCE_ETH_LEN + MROCE_UDP_LEN +
           (family == MROCE_AF_INET6 ? MROCE_IP6_LEN : MROCE_IP4_LEN);
}

/* Writes the headers into frame[0 .. hdr_len) for the payload already at
 * frame[hdr_len .. hdr_len+len); meta->src/dst must be of one family. */
void mroce_dpdk_hdr_write(uint8_t *frame, const uint8_t dst_mac[6],
                          const uint8_t src_mac[6],
                          const struct mroce_pkt_meta *meta, uint32_t len);

/* Parses and validates frame[0..len). Returns a mroce_dpdk_rx_kind with
 * *out filled, or -(1 + mroce_dpdk_drop) for a frame to drop. */
int mroce_dpdk_hdr_parse(const uint8_t *frame, uint32_t len,
                         const struct mroce_dpdk_local *local,
                         struct mroce_dpdk_rx_info *out);

/* Ones'-complement sum (RFC 1071) of p[0..n) added to sum, in host byte
 * order of 16-bit words; fold and store with memcpy. Chunks other than
 * the last must have even length. */
uint64_t mroce_dpdk_csum_add(uint64_t sum, const void *p, size_t n);
uint16_t mroce_dpdk_csum_fold(uint64_t sum);

/* Sum of the IPv4/IPv6 pseudo header (RFC 768, RFC 8200 8.1). */
uint64_t mroce_dpdk_pseudo_sum(const struct mroce_addr *src,
                               const struct mroce_addr *dst, uint8_t proto,
                               uint32_t l4_len);

/* 33:33:xx:xx:xx:xx and ff02::1:ffxx:xxxx for an IPv6 address. */
void mroce_dpdk_solicited_node(const uint8_t ip[16], uint8_t group[16],
                               uint8_t mac[6]);

#endif
