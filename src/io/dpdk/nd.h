/* ARP (RFC 826) and IPv6 neighbour discovery (RFC 4861) frames: just
 * enough to answer who-has for our address and to resolve a peer's MAC,
 * so the DPDK datapath talks to ordinary Linux hosts. Pure functions on
 * bytes; buffers are the caller's, lent for the call. Thread-safe.
 */
#ifndef MROCE_IO_DPDK_ND_H
#define MROCE_IO_DPDK_ND_H

#include <stdbool.h>
#include <stdint.h>

#include "io/dpdk/hdr.h"

#define MROCE_ARP_REQUEST 1
#define MROCE_ARP_REPLY 2
#define MROCE_ND_NS 135
#define MROCE_ND_NA 136

/* Largest frame the builders write (an NS/NA: 14 + 40 + 32). */
#define MROCE_ND_FRAME_MAX 86

struct mroce_dpdk_arp {
    uint16_t op;
    uint8_t sha[6];
    uint8_t spa[4];
    uint8_t tpa[4];
};

/* An ARP body (after the Ethernet header). Errors: EPROTO (not Ethernet/
 * IPv4 ARP, truncated). */
int mroce_dpdk_arp_parse(const uint8_t *body, uint32_t len,
                         struct mroce_dpdk_arp *out);

/* A whole ARP frame, padded to 60 bytes; returns its length. tha NULL:
 * a broadcast request. */
uint32_t mroce_dpdk_arp_build(uint8_t *frame, uint16_t op, const uint8_t sha[6],
                              const uint8_t spa[4], const uint8_t *tha,
                              const uint8_t tpa[4]);

struct mroce_dpdk_nd {
    uint8_t type; /* MROCE_ND_NS or MROCE_ND_NA */
    uint8_t target[16];
    bool has_lladdr; /* source (NS) or target (NA) link-layer option */
    uint8_t lladdr[6];
};

/* The ICMPv6 message the parser found (info->kind == RX_ICMP6). Returns 0
 * for an NS/NA, 1 for another ICMPv6 type (ignored), EPROTO if malformed:
 * hop limit not 255, bad checksum, truncated options. */
int mroce_dpdk_nd_parse(const uint8_t *frame,
                        const struct mroce_dpdk_rx_info *info,
                        struct mroce_dpdk_nd *out);

/* A whole NS (to the target's solicited-node group, dst_mac/dst_ip
 * ignored) or solicited NA (to dst_ip/dst_mac); returns its length. */
uint32_t mroce_dpdk_nd_build(uint8_t *frame, uint8_t type,
                             const uint8_t src_mac[6], const uint8_t src_ip[16],
                             const uint8_t dst_mac[6], const uint8_t dst_ip[16],
                             const uint8_t target[16]);

#endif
