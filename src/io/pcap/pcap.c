/* pcap writer: UDP payloads wrapped in synthesized Ethernet/IP/UDP. */
#define _DEFAULT_SOURCE /* u_char and friends, used by <pcap/pcap.h> */

#include "io/pcap/pcap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#define ETH_LEN 14
#define IP4_LEN 20
#define IP6_LEN 40
#define UDP_LEN 8
#define ETHERTYPE_IP4 0x0800
#define ETHERTYPE_IP6 0x86DD
#define IPPROTO_UDP_NUM 17
#define TTL 64
#define FRAME_MAX (ETH_LEN + IP6_LEN + UDP_LEN + MROCE_PCAP_MAX_PAYLOAD)
#define SNAPLEN 262144 /* what tcpdump writes; larger than any frame */
#define NS_PER_S 1000000000ull

struct mroce_pcap {
    pcap_t *dead; /* only says link type and precision to the dumper */
    pcap_dumper_t *dump;
    uint64_t count;
    int failed;
    uint8_t frame[FRAME_MAX];
};

static void pcap_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void pcap_put32(uint8_t *p, uint32_t v)
{
    pcap_put16(p, (uint16_t)(v >> 16));
    pcap_put16(p + 2, (uint16_t)v);
}

/* One's-complement sum of 16-bit big-endian words, not yet folded; an odd
 * last byte is padded with zero (RFC 1071). */
static uint32_t pcap_sum(uint32_t sum, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i += 2)
        sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (n & 1)
        sum += (uint32_t)p[n - 1] << 8;
    return sum;
}

static uint16_t pcap_fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xFFFF) + (sum >> 16);
    return (uint16_t)~sum;
}

static size_t pcap_addr_len(const struct mroce_addr *a)
{
    return a->family == MROCE_AF_INET ? 4 : 16;
}

/* Locally administered MACs (02:00 + last four address bytes), so that
 * each endpoint keeps one Ethernet address in the capture. */
static void pcap_mac(uint8_t *mac, const struct mroce_addr *a)
{
    size_t n = pcap_addr_len(a);
    mac[0] = 0x02;
    mac[1] = 0x00;
    memcpy(mac + 2, a->ip + n - 4, 4);
}

static size_t pcap_eth(uint8_t *f, const struct mroce_pkt_meta *m)
{
    pcap_mac(f, &m->dst);
    pcap_mac(f + 6, &m->src);
    int v4 = m->src.family == MROCE_AF_INET;
    pcap_put16(f + 12, v4 ? ETHERTYPE_IP4 : ETHERTYPE_IP6);
    return ETH_LEN;
}

/* DSCP 0 and the packet's ECN (R-ENC-6); DF set, no fragments (R-ENC-8). */
static size_t pcap_ip4(uint8_t *f, const struct mroce_pkt_meta *m,
                       size_t udp_len)
{
    memset(f, 0, IP4_LEN);
    f[0] = 0x45;
    f[1] = m->ecn & 3;
    pcap_put16(f + 2, (uint16_t)(IP4_LEN + udp_len));
    pcap_put16(f + 6, 0x4000);
    f[8] = TTL;
    f[9] = IPPROTO_UDP_NUM;
    memcpy(f + 12, m->src.ip, 4);
    memcpy(f + 16, m->dst.ip, 4);
    pcap_put16(f + 10, pcap_fold(pcap_sum(0, f, IP4_LEN)));
    return IP4_LEN;
}

/* Traffic class = DSCP 0 and ECN; flow label = UDP source port (R-ENC-5). */
static size_t pcap_ip6(uint8_t *f, const struct mroce_pkt_meta *m,
                       size_t udp_len)
{
    uint32_t vtf = 6u << 28 | (uint32_t)(m->ecn & 3) << 20 | m->src_port;
    pcap_put32(f, vtf);
    pcap_put16(f + 4, (uint16_t)udp_len);
    f[6] = IPPROTO_UDP_NUM;
    f[7] = TTL;
    memcpy(f + 8, m->src.ip, 16);
    memcpy(f + 24, m->dst.ip, 16);
    return IP6_LEN;
}

/* UDP header and payload at u; the checksum covers the IPv4 or IPv6
 * pseudo-header, whose sums are the same for lengths below 2^16. */
static size_t pcap_udp(uint8_t *u, const struct mroce_pkt_meta *m,
                       const uint8_t *buf, size_t len)
{
    size_t udp_len = UDP_LEN + len;
    pcap_put16(u, m->src_port);
    pcap_put16(u + 2, m->dst_port);
    pcap_put16(u + 4, (uint16_t)udp_len);
    pcap_put16(u + 6, 0);
    memcpy(u + UDP_LEN, buf, len);
    size_t alen = pcap_addr_len(&m->src);
    uint32_t sum = pcap_sum(0, m->src.ip, alen);
    sum = pcap_sum(sum, m->dst.ip, alen);
    sum += IPPROTO_UDP_NUM + (uint32_t)udp_len;
    uint16_t ck = pcap_fold(pcap_sum(sum, u, udp_len));
    pcap_put16(u + 6, ck ? ck : 0xFFFF); /* 0 means "none" on the wire */
    return udp_len;
}

static size_t pcap_frame(uint8_t *f, const struct mroce_pkt_meta *m,
                         const uint8_t *buf, size_t len)
{
    size_t n = pcap_eth(f, m);
    size_t udp_len = UDP_LEN + len;
    if (m->src.family == MROCE_AF_INET)
        n += pcap_ip4(f + n, m, udp_len);
    else
        n += pcap_ip6(f + n, m, udp_len);
    return n + pcap_udp(f + n, m, buf, len);
}

static int pcap_meta_ok(const struct mroce_pkt_meta *m)
{
    int fam = m->src.family;
    return (fam == MROCE_AF_INET || fam == MROCE_AF_INET6) &&
           m->dst.family == fam;
}

int mroce_pcap_open(const char *path, struct mroce_pcap **out)
{
    if (!out)
        return MROCE_EINVAL;
    *out = NULL;
    if (!path)
        return MROCE_EINVAL;
    struct mroce_pcap *p = calloc(1, sizeof(*p));
    if (!p)
        return MROCE_ENOMEM;
    p->dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, SNAPLEN,
                                                   PCAP_TSTAMP_PRECISION_NANO);
    FILE *f = p->dead ? fopen(path, "wb") : NULL;
    if (f)
        p->dump = pcap_dump_fopen(p->dead, f);
    if (!p->dump) {
        int enomem = !p->dead;
        if (f)
            fclose(f);
        if (p->dead)
            pcap_close(p->dead);
        free(p);
        return enomem ? MROCE_ENOMEM : MROCE_EINVAL;
    }
    *out = p;
    return MROCE_OK;
}

int mroce_pcap_write(struct mroce_pcap *p, uint64_t now_ns,
                     const struct mroce_pkt_meta *meta, const uint8_t *buf,
                     size_t len)
{
    if (!p || !meta || (!buf && len) || len > MROCE_PCAP_MAX_PAYLOAD ||
        !pcap_meta_ok(meta))
        return MROCE_EINVAL;
    struct pcap_pkthdr h;
    memset(&h, 0, sizeof(h));
    h.ts.tv_sec = (time_t)(now_ns / NS_PER_S);
    h.ts.tv_usec = (suseconds_t)(now_ns % NS_PER_S); /* ns: NANO file */
    h.caplen = h.len = (bpf_u_int32)pcap_frame(p->frame, meta, buf, len);
    pcap_dump((u_char *)p->dump, &h, p->frame);
    if (ferror(pcap_dump_file(p->dump))) {
        p->failed = 1;
        return MROCE_EINVAL;
    }
    p->count++;
    return MROCE_OK;
}

uint64_t mroce_pcap_count(const struct mroce_pcap *p)
{
    return p ? p->count : 0;
}

int mroce_pcap_close(struct mroce_pcap *p)
{
    if (!p)
        return MROCE_OK;
    int bad = p->failed || pcap_dump_flush(p->dump) != 0 ||
              ferror(pcap_dump_file(p->dump));
    pcap_dump_close(p->dump);
    pcap_close(p->dead);
    free(p);
    return bad ? MROCE_EINVAL : MROCE_OK;
}
