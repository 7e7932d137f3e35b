/* Control frames of the DPDK datapath: ARP and IPv6 neighbour discovery
 * answered and asked, and the net_pcap capture. Off the hot path except
 * for capture, which only takes a reference on the mbuf. */
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "io/dpdk/dpdk.h"
#include "io/dpdk/nd.h"

#define RESOLVE_INTERVAL_DIV 10 /* re-ask an unresolved peer every 100 ms */

static const uint8_t all_nodes_ip[16] = {0xff, 0x02, [15] = 1};
static const uint8_t all_nodes_mac[6] = {0x33, 0x33, 0, 0, 0, 1};

static uint8_t *ctl_frame(struct mroce_dpdk *p)
{
    if (p->n_ctl == MROCE_DPDK_CTL_MAX)
        mroce_dpdk_ctl_flush(p);
    struct rte_mbuf *m = rte_pktmbuf_alloc(p->mp);
    if (!m) {
        p->cnt.tx_alloc_fail++;
        return NULL;
    }
    p->ctl[p->n_ctl++] = m;
    return rte_pktmbuf_mtod(m, uint8_t *);
}

static void ctl_len(struct mroce_dpdk *p, uint32_t len)
{
    struct rte_mbuf *m = p->ctl[p->n_ctl - 1];
    m->data_len = (uint16_t)len;
    m->pkt_len = len;
}

void mroce_dpdk_ctl_flush(struct mroce_dpdk *p)
{
    if (!p->n_ctl)
        return;
    for (uint16_t i = 0; i < p->n_ctl; i++)
        mroce_dpdk_capture(p, p->ctl[i]);
    uint16_t sent = rte_eth_tx_burst(p->port, 0, p->ctl, p->n_ctl);
    if (sent < p->n_ctl)
        rte_pktmbuf_free_bulk(p->ctl + sent, p->n_ctl - sent);
    p->n_ctl = 0;
}

static void learn(struct mroce_dpdk *p, int family, const uint8_t *ip,
                  const uint8_t mac[6])
{
    struct mroce_addr a = {.family = (uint8_t)family};
    memcpy(a.ip, ip, family == MROCE_AF_INET6 ? 16 : 4);
    mroce_dpdk_neigh_add(&p->neigh, &a, mac, false);
}

static void arp_rx(struct mroce_dpdk *p, const uint8_t *frame,
                   const struct mroce_dpdk_rx_info *info)
{
    struct mroce_dpdk_arp arp;
    if (mroce_dpdk_arp_parse(frame + info->off, info->len, &arp) < 0) {
        p->cnt.drop[MROCE_DPDK_DROP_BAD_ARP_ND]++;
        return;
    }
    p->cnt.arp_rx++;
    bool for_us = p->local.ip.family == MROCE_AF_INET &&
                  memcmp(arp.tpa, p->local.ip.ip, 4) == 0;
    if (!for_us && arp.op != MROCE_ARP_REPLY)
        return;
    learn(p, MROCE_AF_INET, arp.spa, arp.sha);
    if (arp.op != MROCE_ARP_REQUEST)
        return;
    uint8_t *f = ctl_frame(p);
    if (!f)
        return;
    ctl_len(p, mroce_dpdk_arp_build(f, MROCE_ARP_REPLY, p->mac, p->local.ip.ip,
                                    arp.sha, arp.spa));
    p->cnt.arp_tx++;
}

static bool unspecified(const uint8_t ip[16])
{
    static const uint8_t zero[16];
    return memcmp(ip, zero, 16) == 0;
}

static void ns_answer(struct mroce_dpdk *p, const uint8_t *frame,
                      const struct mroce_dpdk_rx_info *info,
                      const struct mroce_dpdk_nd *nd)
{
    const uint8_t *src = info->meta.src.ip;
    const uint8_t *dmac = nd->has_lladdr ? nd->lladdr : frame + 6;
    if (unspecified(src)) { /* duplicate address detection */
        src = all_nodes_ip;
        dmac = all_nodes_mac;
    } else if (nd->has_lladdr) {
        learn(p, MROCE_AF_INET6, src, nd->lladdr);
    }
    uint8_t *f = ctl_frame(p);
    if (!f)
        return;
    ctl_len(p, mroce_dpdk_nd_build(f, MROCE_ND_NA, p->mac, p->local.ip.ip, dmac,
                                   src, p->local.ip.ip));
    p->cnt.nd_tx++;
}

static void nd_rx(struct mroce_dpdk *p, const uint8_t *frame,
                  const struct mroce_dpdk_rx_info *info)
{
    struct mroce_dpdk_nd nd;
    int rc = mroce_dpdk_nd_parse(frame, info, &nd);
    if (rc < 0) {
        p->cnt.drop[MROCE_DPDK_DROP_BAD_ARP_ND]++;
        return;
    }
    if (rc > 0) {
        p->cnt.icmp6_ignored++;
        return;
    }
    p->cnt.nd_rx++;
    bool ours = memcmp(nd.target, p->local.ip.ip, 16) == 0;
    if (nd.type == MROCE_ND_NS && ours)
        ns_answer(p, frame, info, &nd);
    else if (nd.type == MROCE_ND_NA && nd.has_lladdr)
        learn(p, MROCE_AF_INET6, nd.target, nd.lladdr);
}

void mroce_dpdk_ctl_rx(struct mroce_dpdk *p, const uint8_t *frame,
                       const struct mroce_dpdk_rx_info *info)
{
    if (info->kind == MROCE_DPDK_RX_ARP)
        arp_rx(p, frame, info);
    else
        nd_rx(p, frame, info);
}

void mroce_dpdk_resolve(struct mroce_dpdk *p, const struct mroce_addr *ip)
{
    uint64_t now = rte_get_tsc_cycles();
    if (!mroce_dpdk_neigh_want_request(&p->neigh, ip, now,
                                       p->tsc_hz / RESOLVE_INTERVAL_DIV))
        return;
    uint8_t *f = ctl_frame(p);
    if (!f)
        return;
    if (ip->family == MROCE_AF_INET6) {
        ctl_len(p, mroce_dpdk_nd_build(f, MROCE_ND_NS, p->mac, p->local.ip.ip,
                                       NULL, NULL, ip->ip));
        p->cnt.nd_tx++;
    } else {
        ctl_len(p, mroce_dpdk_arp_build(f, MROCE_ARP_REQUEST, p->mac,
                                        p->local.ip.ip, NULL, ip->ip));
        p->cnt.arp_tx++;
    }
}

void mroce_dpdk_capture(struct mroce_dpdk *p, struct rte_mbuf *m)
{
    if (!p->pcap)
        return;
    if (p->n_cap == MROCE_DPDK_BURST_MAX)
        mroce_dpdk_capture_flush(p);
    rte_mbuf_refcnt_update(m, 1);
    p->cap[p->n_cap++] = m;
}

void mroce_dpdk_capture_flush(struct mroce_dpdk *p)
{
    if (!p->n_cap)
        return;
    uint16_t sent = rte_eth_tx_burst(p->pcap_port, 0, p->cap, p->n_cap);
    p->cnt.pcap_frames += sent;
    if (sent < p->n_cap) {
        p->cnt.pcap_dropped += p->n_cap - sent;
        rte_pktmbuf_free_bulk(p->cap + sent, p->n_cap - sent);
    }
    p->n_cap = 0;
}
