/* Zero-copy transmit of the DPDK datapath (docs/dpdk.md, "Zero-copy
 * transmit"): a data packet whose payload the engine only referenced
 * (mroce_ctx_tx_ref, io/dp.h) leaves as a chain of three segments
 *
 *   m0  the transmit mbuf: Ethernet/IP/UDP and our headers;
 *   m1  an mbuf of the port's "mrzc" pool attached as an external buffer
 *       to the payload in registered memory (rte_pktmbuf_attach_extbuf);
 *   m2  a second "mrzc" mbuf holding the trailer in its own 16 bytes
 *       (the 4-byte ICRC, or an authenticated connection's 16-byte tag);
 *
 * instead of the payload being copied into m0. The reference dies at
 * the loop's next engine call (the lifetime rule, docs/datapath.md), so
 * this is only used on PMDs that copy the frame out and free the mbufs
 * inside rte_eth_tx_burst (net_memif in copy mode, net_af_packet), over
 * IPv4 (IPv6 sums the payload into the UDP checksum, hdr.c), and never
 * with capture on (net_pcap holds a reference to every frame).
 *
 * Each attached payload takes one of ZC_SLOTS shared-info slots from a
 * free stack; the mbuf library's free callback pushes it back. A slot
 * still out when tx_burst has flattened everything it kept can only be
 * held by the PMD: mroce_dpdk_zc_check then turns zero-copy off for the
 * port (tx_zc_async). No allocation, no locks on the hot path: one
 * thread polls a datapath, and the callback runs in that thread's
 * rte_eth_tx_burst or rte_pktmbuf_free.
 *
 * The slots and the pool live as long as the process (like the port's
 * mempool, eal.c): a PMD that turned out to hold mbufs frees them, and
 * calls back into the slots, whenever it likes.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "io/dpdk/dpdk.h"

#define ZC_SLOTS 128  /* payloads attached at once: two 64-frame bursts */
#define ZC_MBUFS 1024 /* m1 + m2 per slot, with room for pool caches */
#define ZC_CACHE 64
#define ZC_OWN_ROOM 16 /* m2's own buffer: the ICRC or AEAD tag */
#define ZC_MIN_PAY 256 /* below it a copy costs less than two mbufs */
#define ZC_SPARE 64    /* "mrzc" mbufs kept out of the pool */

struct zc_slot {
    struct rte_mbuf_ext_shared_info sh;
    struct mroce_dpdk_zc *zc;
    uint16_t idx;
};

struct mroce_dpdk_zc {
    struct rte_mempool *mp;
    bool iova_va; /* IOVA = VA; else RTE_BAD_IOVA (see zc_iova) */
    uint16_t n_free, n_spare;
    uint16_t free[ZC_SLOTS];
    struct rte_mbuf *spare[ZC_SPARE]; /* as a free mbuf is (see zc_get2) */
    struct zc_slot slot[ZC_SLOTS];
};

static struct mroce_dpdk_zc *zc_port[RTE_MAX_ETHPORTS];

/* The mbuf library's free callback for an attached payload. */
static void zc_slot_free(void *addr, void *opaque)
{
    struct zc_slot *s = opaque;
    (void)addr;
    s->zc->free[s->zc->n_free++] = s->idx;
}

static struct mroce_dpdk_zc *zc_new(uint16_t port)
{
    char name[RTE_MEMPOOL_NAMESIZE];
    struct mroce_dpdk_zc *z = calloc(1, sizeof(*z));
    if (!z)
        return NULL;
    snprintf(name, sizeof(name), "mrzc%u", port);
    z->mp = rte_mempool_lookup(name);
    if (!z->mp)
        z->mp = rte_pktmbuf_pool_create(name, ZC_MBUFS, ZC_CACHE, 0,
                                        ZC_OWN_ROOM, (int)rte_socket_id());
    if (!z->mp) {
        free(z);
        return NULL;
    }
    for (uint16_t i = 0; i < ZC_SLOTS; i++) {
        z->slot[i] = (struct zc_slot){
            .sh = {.free_cb = zc_slot_free, .fcb_opaque = &z->slot[i]},
            .zc = z,
            .idx = i};
        z->free[i] = i;
    }
    z->n_free = ZC_SLOTS;
    return z;
}

/* True if devargs of the port's device contain `s`. */
static bool dev_args_have(const struct rte_eth_dev_info *info, const char *s)
{
    const struct rte_devargs *da =
        info->device ? rte_dev_devargs(info->device) : NULL;
    return da && da->args && strstr(da->args, s);
}

/* Why zero-copy cannot be used on this port; NULL: it can. */
static const char *zc_refusal(const struct mroce_dp *dp,
                              const struct mroce_dpdk *p)
{
    struct rte_eth_dev_info info;
    if (dp->attr.dpdk && dp->attr.dpdk->no_zc)
        return "turned off (mroce_dpdk_attr.no_zc)";
    if (p->local.ip.family != MROCE_AF_INET)
        return "IPv6 (the UDP checksum sums the payload)";
    if (p->pcap)
        return "capture on (net_pcap holds frames)";
    if (rte_eth_dev_info_get(p->port, &info) != 0 || !info.driver_name)
        return "no device info";
    if (strcmp(info.driver_name, "net_af_packet") == 0)
        return NULL;
    if (strcmp(info.driver_name, "net_memif") != 0)
        return "the PMD may read frames after tx_burst returns";
    /* memif's zero-copy mode hands the peer buffer offsets into its own
     * shared regions: registered memory is not in them */
    return dev_args_have(&info, "zero-copy=yes") ? "memif zero-copy mode"
                                                 : NULL;
}

void mroce_dpdk_zc_open(struct mroce_dp *dp, struct mroce_dpdk *p)
{
    const char *why = zc_refusal(dp, p);
    p->zc_on = false;
    if (!why && !zc_port[p->port] && !(zc_port[p->port] = zc_new(p->port)))
        why = "no memory for the external-buffer pool";
    if (why) {
        mroce_dpdk_log(dp, MROCE_LOG_INFO,
                       "DPDK port %u: zero-copy transmit off: %s", p->port,
                       why);
        return;
    }
    p->zc = zc_port[p->port];
    p->zc->iova_va = rte_eal_iova_mode() == RTE_IOVA_VA;
    p->zc_on = true;
}

void mroce_dpdk_zc_close(struct mroce_dpdk *p)
{
    p->zc_on = false;
    p->zc = NULL; /* the slots stay: a PMD may still hold some */
}

/* Only PMDs that read by virtual address get here (zc_refusal), so the
 * IOVA is never used; it is right where it is cheap to be right. */
static rte_iova_t zc_iova(const struct mroce_dpdk_zc *z, const void *va)
{
    return z->iova_va ? (rte_iova_t)(uintptr_t)va : RTE_BAD_IOVA;
}

/* m1: the payload in registered memory; m2: the trailer, copied. */
static void zc_link(struct mroce_dpdk_zc *z, struct rte_mbuf *m0,
                    struct rte_mbuf **seg, const struct mroce_dp_pkt *pkt)
{
    struct zc_slot *s = &z->slot[z->free[--z->n_free]];
    rte_mbuf_ext_refcnt_set(&s->sh, 1);
    void *pay = (void *)(uintptr_t)pkt->pay;
    rte_pktmbuf_attach_extbuf(seg[0], pay, zc_iova(z, pay),
                              (uint16_t)pkt->pay_len, &s->sh);
    seg[0]->data_len = (uint16_t)pkt->pay_len;
    uint32_t tail = pkt->hdr_len + pkt->pay_len;
    seg[1]->data_off = 0;
    memcpy(seg[1]->buf_addr, pkt->buf + tail, pkt->len - tail);
    seg[1]->data_len = (uint16_t)(pkt->len - tail);
    m0->next = seg[0];
    seg[0]->next = seg[1];
    m0->nb_segs = 3;
}

/* Two mbufs, taken from the pool ZC_SPARE / 2 at a time and without
 * rte_pktmbuf_reset: a free mbuf has refcnt 1, next NULL, nb_segs 1 and
 * (these never carry offloads; detach clears the external flag)
 * ol_flags 0; zc_link sets the rest. */
static bool zc_get2(struct mroce_dpdk_zc *z, struct rte_mbuf **seg)
{
    if (z->n_spare < 2) {
        if (rte_mempool_get_bulk(z->mp, (void **)(z->spare + z->n_spare),
                                 ZC_SPARE / 2) != 0)
            return false;
        z->n_spare += ZC_SPARE / 2;
    }
    seg[0] = z->spare[--z->n_spare];
    seg[1] = z->spare[--z->n_spare];
    return true;
}

bool mroce_dpdk_zc_attach(struct mroce_dpdk *p, struct rte_mbuf *m0,
                          const struct mroce_dp_pkt *pkt)
{
    struct mroce_dpdk_zc *z = p->zc;
    struct rte_mbuf *seg[2];
    if (pkt->pay_len < ZC_MIN_PAY || pkt->pay_len > UINT16_MAX)
        return false;
    if (z->n_free == 0 || !zc_get2(z, seg)) {
        p->cnt.tx_zc_short++;
        return false;
    }
    zc_link(z, m0, seg, pkt);
    m0->data_len = (uint16_t)(p->hdr_len + pkt->hdr_len);
    return true;
}

void mroce_dpdk_zc_flatten(struct mroce_dpdk *p, struct rte_mbuf *m0)
{
    struct rte_mbuf *m1 = m0->next;
    /* the loop wrote the ICRC into m0 behind the hole (io/dp.c) */
    memcpy(rte_pktmbuf_mtod(m0, uint8_t *) + m0->data_len,
           rte_pktmbuf_mtod(m1, const void *), m1->data_len);
    m0->data_len = (uint16_t)m0->pkt_len;
    m0->next = NULL;
    m0->nb_segs = 1;
    rte_pktmbuf_free(m1); /* m1 and m2; m1's slot comes back */
    p->cnt.tx_zc_flattened++;
}

unsigned mroce_dpdk_zc_held(const struct mroce_dpdk *p)
{
    return p->zc ? ZC_SLOTS - p->zc->n_free : 0;
}

/* Sound because of what tx_burst does before it: every chain the port
 * refused was flattened (its slot came back through the free callback),
 * the backlog holds only flat frames and capture is off, so a slot still
 * out was taken by a sent chain that the PMD has not freed. It may read
 * that payload after the reference died: it cannot be known to have
 * read it already. Such a frame carries whatever the memory holds by
 * then, under the ICRC computed before: the receiver drops it (R-CRC-1)
 * and the engine retransmits it, as a copy. A PMD that copies but frees
 * late only loses zero-copy. */
void mroce_dpdk_zc_check(struct mroce_dp *dp, struct mroce_dpdk *p)
{
    unsigned held = mroce_dpdk_zc_held(p);
    if (held == 0)
        return;
    p->cnt.tx_zc_async += held;
    p->zc_on = false;
    mroce_dpdk_log(dp, MROCE_LOG_ERR,
                   "DPDK port %u kept %u zero-copy frames past tx_burst: "
                   "zero-copy transmit off for it",
                   p->port, held);
}

bool mroce_dpdk_zc_force(struct mroce_dpdk *p)
{
    if (!zc_port[p->port] && !(zc_port[p->port] = zc_new(p->port)))
        return false;
    p->zc = zc_port[p->port];
    p->zc_on = true;
    return true;
}
