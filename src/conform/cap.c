/* What a UDP socket cannot show: the IP header of the IUT's packets
 * (AF_PACKET capture, root only) and datagrams with a chosen UDP
 * checksum (a raw socket, root only). For R-ENC-7 and R-ENC-8. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conform/cf.h"

int cf_cap_open(void)
{
    return socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                  htons(ETH_P_IP));
}

/* IPv4 UDP datagrams to dst_port captured within ms: how many, how many
 * with Don't-Fragment set. */
void cf_cap_count(int fd, uint16_t dst_port, int ms, int *total, int *df)
{
    uint8_t b[16384];
    uint64_t end = cf_now() + (uint64_t)ms * 1000000ull;
    *total = *df = 0;
    for (uint64_t now; (now = cf_now()) < end;) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, (int)((end - now) / 1000000) + 1) <= 0)
            continue;
        struct sockaddr_ll sl;
        socklen_t sl_len = sizeof(sl);
        ssize_t n =
            recvfrom(fd, b, sizeof(b), 0, (struct sockaddr *)&sl, &sl_len);
        if (n < 28 || sl.sll_pkttype == PACKET_OUTGOING)
            continue;
        const struct iphdr *ip = (const void *)b;
        size_t ihl = (size_t)ip->ihl * 4;
        if (ip->version != 4 || ip->protocol != IPPROTO_UDP ||
            (size_t)n < ihl + 8)
            continue;
        const struct udphdr *u = (const void *)(b + ihl);
        if (ntohs(u->dest) != dst_port)
            continue;
        (*total)++;
        *df += (ntohs(ip->frag_off) & IP_DF) != 0;
    }
}

/* A UDP datagram from a raw socket: our header with checksum `csum`. */
int cf_raw_udp(const uint8_t *dst_ip, uint16_t sport, uint16_t dport,
               const void *payload, size_t len, uint16_t csum)
{
    int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_UDP);
    if (fd < 0)
        return -1;
    uint8_t b[2048];
    if (len + 8 > sizeof(b)) {
        close(fd);
        return -1;
    }
    struct udphdr *u = (struct udphdr *)b;
    u->source = htons(sport);
    u->dest = htons(dport);
    u->len = htons((uint16_t)(len + 8));
    u->check = htons(csum);
    memcpy(b + 8, payload, len);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    memcpy(&sa.sin_addr, dst_ip, 4);
    ssize_t w = sendto(fd, b, len + 8, 0, (struct sockaddr *)&sa, sizeof(sa));
    close(fd);
    return w == (ssize_t)(len + 8) ? 0 : -1;
}

/* The Internet checksum of a UDP datagram over IPv4 (RFC 768). */
uint16_t cf_udp_csum(const uint8_t *src, const uint8_t *dst, uint16_t sport,
                     uint16_t dport, const uint8_t *p, size_t len)
{
    uint32_t s = 0;
    uint16_t ulen = (uint16_t)(len + 8);
    s += (uint32_t)(src[0] << 8 | src[1]) + (uint32_t)(src[2] << 8 | src[3]);
    s += (uint32_t)(dst[0] << 8 | dst[1]) + (uint32_t)(dst[2] << 8 | dst[3]);
    s += IPPROTO_UDP + ulen + sport + dport + ulen;
    for (size_t i = 0; i + 1 < len; i += 2)
        s += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (len & 1)
        s += (uint32_t)p[len - 1] << 8;
    while (s >> 16)
        s = (s & 0xFFFF) + (s >> 16);
    uint16_t c = (uint16_t)~s;
    return c ? c : 0xFFFF;
}
