/* The DPDK datapath's ops table (io/dp.h): bursts of mbufs in and out.
 *
 * TX: tx_alloc hands the loop mbufs whose data pointer is past the room
 * for our Ethernet/IP/UDP headers; the loop asks the engine for packets
 * by reference (ops->tx_ref, mroce_ctx_tx_ref), which writes our headers
 * into the mbuf and says where the payload lies in registered memory.
 * tx_burst writes Ethernet/IP/UDP in front and either attaches the
 * payload as an external buffer (zc.c: ports whose PMD copies during
 * rte_eth_tx_burst) or copies it into the hole (mroce_dp_pkt_flatten).
 * Frames the port refused wait in a backlog, flattened first: the
 * payload reference dies when the loop next calls the engine. Buffers a
 * pass did not fill come back through tx_free into a stash the next
 * tx_alloc takes first. RX: the engine reads the payload in place from
 * the mbuf; its placement into registered memory is the one copy. Every
 * op reads the TSC on entry and exit for the phase profile (dpdk.h,
 * mroce_dpdk_counters.cyc).
 */
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "io/dpdk/dpdk.h"

static bool backlog_flush(struct mroce_dpdk *p);

static int dpdk_open(struct mroce_dp *dp)
{
    struct mroce_dpdk *p = calloc(1, sizeof(*p));
    if (!p)
        return MROCE_ENOMEM;
    dp->ctx_attr.src_ports = NULL; /* any source port: R-ENC-3 default */
    dp->ctx_attr.n_src_ports = 0;
    if (!dp->ctx_attr.udp_port)
        dp->ctx_attr.udp_port = dp->attr.port ? dp->attr.port : MROCE_UDP_PORT;
    int rc = mroce_dpdk_start(dp, p);
    if (rc < 0) {
        free(p);
        return rc;
    }
    dp->priv = p;
    return 0;
}

static void dpdk_close(struct mroce_dp *dp)
{
    struct mroce_dpdk *p = dp->priv;
    if (!p)
        return;
    mroce_dpdk_stop(p);
    free(p);
    dp->priv = NULL;
}

static void rx_drop(struct mroce_dp *dp, struct mroce_dpdk *p, int reason)
{
    p->cnt.drop[reason]++;
    dp->cnt.rx_bad_frame++;
}

/* Parses one frame: ours goes to *pkt (returns 1); the rest is handled
 * or counted and freed (returns 0). */
static int rx_one(struct mroce_dp *dp, struct mroce_dpdk *p, struct rte_mbuf *m,
                  struct mroce_dp_pkt *pkt)
{
    struct mroce_dpdk_rx_info info;
    uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
    int rc = m->nb_segs == 1
                 ? mroce_dpdk_hdr_parse(f, m->data_len, &p->local, &info)
                 : -(1 + MROCE_DPDK_DROP_MULTISEG);
    if (rc == MROCE_DPDK_RX_UDP) {
        pkt->buf = f + info.off;
        pkt->len = pkt->cap = info.len;
        pkt->meta = info.meta;
        pkt->priv = m;
        p->cnt.rx_csum_partial += info.csum_partial;
        return 1;
    }
    if (rc < 0)
        rx_drop(dp, p, -rc - 1);
    else
        mroce_dpdk_ctl_rx(p, f, &info);
    rte_pktmbuf_free(m);
    return 0;
}

static int rx_burst(struct mroce_dp *dp, struct mroce_dpdk *p,
                    struct mroce_dp_pkt *pkts, int n)
{
    struct rte_mbuf *m[MROCE_DPDK_BURST_MAX];
    uint16_t nb = rte_eth_rx_burst(p->port, 0, m,
                                   (uint16_t)RTE_MIN(n, MROCE_DPDK_BURST_MAX));
    int out = 0;
    backlog_flush(p);
    if (nb)
        rte_prefetch0(rte_pktmbuf_mtod(m[0], void *));
    for (uint16_t i = 0; i < nb; i++) {
        if (i + 1 < nb)
            rte_prefetch0(rte_pktmbuf_mtod(m[i + 1], void *));
        mroce_dpdk_capture(p, m[i]);
        out += rx_one(dp, p, m[i], &pkts[out]);
    }
    mroce_dpdk_ctl_flush(p);
    mroce_dpdk_capture_flush(p);
    return out;
}

static int dpdk_rx_burst(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n)
{
    struct mroce_dpdk *p = dp->priv;
    mroce_dpdk_prof_enter(p, MROCE_DPDK_OP_RX);
    p->cnt.passes++;
    int out = rx_burst(dp, p, pkts, n);
    mroce_dpdk_prof_exit(p, MROCE_DPDK_OP_RX, MROCE_DPDK_PH_RX);
    return out;
}

static void free_pkts(struct mroce_dp_pkt *pkts, int n)
{
    struct rte_mbuf *m[MROCE_DPDK_BURST_MAX];
    while (n > 0) {
        int k = RTE_MIN(n, MROCE_DPDK_BURST_MAX);
        for (int i = 0; i < k; i++)
            m[i] = pkts[i].priv;
        rte_pktmbuf_free_bulk(m, (unsigned)k);
        pkts += k;
        n -= k;
    }
}

static void dpdk_rx_release(struct mroce_dp *dp, struct mroce_dp_pkt *pkts,
                            int n)
{
    struct mroce_dpdk *p = dp->priv;
    mroce_dpdk_prof_enter(p, MROCE_DPDK_OP_RELEASE);
    free_pkts(pkts, n);
    mroce_dpdk_prof_exit(p, MROCE_DPDK_OP_RELEASE, MROCE_DPDK_PH_POOL);
}

/* Unused transmit buffers go to the stash, untouched (as allocated): the
 * loop allocates a chunk ahead and hands back what a pass did not fill,
 * which would otherwise cost a pool round trip per buffer, every pass. */
static void dpdk_tx_free(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n)
{
    struct mroce_dpdk *p = dp->priv;
    mroce_dpdk_prof_enter(p, MROCE_DPDK_OP_FREE);
    int k = RTE_MIN(n, MROCE_DPDK_STASH - (int)p->n_stash);
    for (int i = 0; i < k; i++)
        p->stash[p->n_stash++] = pkts[i].priv;
    free_pkts(pkts + k, n - k);
    mroce_dpdk_prof_exit(p, MROCE_DPDK_OP_FREE, MROCE_DPDK_PH_POOL);
}

/* Up to n mbufs: the stash's most recent first (cache-warm), then the
 * pool (halving the request while it cannot serve it). */
static int mbufs_get(struct mroce_dpdk *p, struct rte_mbuf **m, int n)
{
    int k = RTE_MIN(n, (int)p->n_stash);
    p->n_stash -= (uint16_t)k;
    memcpy(m, p->stash + p->n_stash, sizeof(*m) * (size_t)k);
    int more = n - k;
    while (more > 0 &&
           rte_pktmbuf_alloc_bulk(p->mp, m + k, (unsigned)more) != 0)
        more /= 2;
    return k + more;
}

static int tx_alloc(struct mroce_dpdk *p, struct mroce_dp_pkt *pkts, int n,
                    size_t cap)
{
    struct rte_mbuf *m[MROCE_DPDK_BURST_MAX];
    uint32_t room = p->room - p->hdr_len;
    if (cap > room)
        return MROCE_ENOBUFS;
    n = mbufs_get(p, m, RTE_MIN(n, MROCE_DPDK_BURST_MAX));
    if (n == 0) {
        p->cnt.tx_alloc_fail++;
        return 0;
    }
    for (int i = 0; i < n; i++) {
        pkts[i].buf = rte_pktmbuf_mtod(m[i], uint8_t *) + p->hdr_len;
        pkts[i].cap = room;
        pkts[i].len = 0;
        pkts[i].priv = m[i];
    }
    return n;
}

static int dpdk_tx_alloc(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n,
                         size_t cap)
{
    struct mroce_dpdk *p = dp->priv;
    mroce_dpdk_prof_enter(p, MROCE_DPDK_OP_ALLOC);
    int got = tx_alloc(p, pkts, n, cap);
    mroce_dpdk_prof_exit(p, MROCE_DPDK_OP_ALLOC, MROCE_DPDK_PH_POOL);
    return got;
}

/* A referenced payload: attached (zc.c) or copied into the hole. */
static void tx_payload(struct mroce_dpdk *p, struct mroce_dp_pkt *pkt)
{
    if (!pkt->pay_len)
        return;
    if (!p->zc_on || !mroce_dpdk_zc_attach(p, pkt->priv, pkt))
        mroce_dp_pkt_flatten(pkt);
}

/* Headers in front of the payload; false if the peer's MAC is unknown
 * (a request is on its way; the engine retransmits). */
static bool tx_frame(struct mroce_dpdk *p, struct mroce_dp_pkt *pkt)
{
    struct rte_mbuf *m = pkt->priv;
    const uint8_t *dmac = mroce_dpdk_neigh_lookup(&p->neigh, &pkt->meta.dst);
    if (!dmac) {
        mroce_dpdk_resolve(p, &pkt->meta.dst);
        return false;
    }
    if (pkt->meta.src.family != pkt->meta.dst.family)
        pkt->meta.src = p->local.ip;
    tx_payload(p, pkt); /* before the headers: IPv6 sums the payload */
    mroce_dpdk_hdr_write(rte_pktmbuf_mtod(m, uint8_t *), dmac, p->mac,
                         &pkt->meta, pkt->len);
    m->pkt_len = p->hdr_len + pkt->len;
    if (m->nb_segs == 1)
        m->data_len = (uint16_t)m->pkt_len;
    return true;
}

/* Sends the backlog's oldest frames; true when it is empty. */
static bool backlog_flush(struct mroce_dpdk *p)
{
    while (p->bl_head != p->bl_tail) {
        uint32_t at = p->bl_tail & (MROCE_DPDK_BACKLOG - 1);
        uint32_t n =
            RTE_MIN(p->bl_head - p->bl_tail, (uint32_t)MROCE_DPDK_BACKLOG - at);
        uint16_t s = rte_eth_tx_burst(p->port, 0, p->backlog + at,
                                      (uint16_t)RTE_MIN(n, 1024u));
        p->bl_tail += s;
        if (s < n)
            return false;
    }
    return true;
}

/* Chains (zero-copy frames) among m[0..n). */
static uint16_t zc_count(struct rte_mbuf **m, uint16_t n)
{
    uint16_t k = 0;
    for (uint16_t i = 0; i < n; i++)
        k += m[i]->nb_segs > 1;
    return k;
}

/* Frames the port cannot take now wait in the backlog (a drop would
 * cost the engine a retransmission); only a full backlog drops. A
 * zero-copy frame is flattened first: its payload reference dies at the
 * loop's next engine call. Sent chains are counted before the send: the
 * PMD frees them inside rte_eth_tx_burst. */
static void tx_push(struct mroce_dp *dp, struct mroce_dpdk *p,
                    struct rte_mbuf **m, uint16_t n)
{
    uint16_t zc = p->zc_on ? zc_count(m, n) : 0;
    uint16_t s = backlog_flush(p) ? rte_eth_tx_burst(p->port, 0, m, n) : 0;
    for (uint16_t i = s; zc && i < n; i++) {
        if (m[i]->nb_segs == 1)
            continue;
        mroce_dpdk_zc_flatten(p, m[i]);
        zc--;
    }
    p->cnt.tx_zc += zc;
    for (; s < n; s++) {
        if (p->bl_head - p->bl_tail == MROCE_DPDK_BACKLOG) {
            p->cnt.tx_ring_full += n - s;
            dp->cnt.tx_dropped += n - s;
            rte_pktmbuf_free_bulk(m + s, n - s);
            return;
        }
        p->backlog[p->bl_head++ & (MROCE_DPDK_BACKLOG - 1)] = m[s];
        p->cnt.tx_backlogged++;
    }
}

static int tx_burst(struct mroce_dp *dp, struct mroce_dpdk *p,
                    struct mroce_dp_pkt *pkts, int n)
{
    struct rte_mbuf *m[MROCE_DPDK_BURST_MAX];
    uint64_t dropped = dp->cnt.tx_dropped;
    int done = 0;
    while (done < n) {
        uint16_t k = 0;
        int end = RTE_MIN(n, done + MROCE_DPDK_BURST_MAX);
        for (; done < end; done++) {
            struct rte_mbuf *mb = pkts[done].priv;
            if (!tx_frame(p, &pkts[done])) {
                p->cnt.tx_no_neigh++;
                dp->cnt.tx_dropped++;
                rte_pktmbuf_free(mb);
                continue;
            }
            mroce_dpdk_capture(p, mb);
            m[k++] = mb;
        }
        tx_push(dp, p, m, k);
    }
    if (p->zc_on)
        mroce_dpdk_zc_check(dp, p);
    mroce_dpdk_ctl_flush(p);
    mroce_dpdk_capture_flush(p);
    return n - (int)(dp->cnt.tx_dropped - dropped);
}

static int dpdk_tx_burst(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n)
{
    struct mroce_dpdk *p = dp->priv;
    mroce_dpdk_prof_enter(p, MROCE_DPDK_OP_TX);
    int sent = tx_burst(dp, p, pkts, n);
    mroce_dpdk_prof_exit(p, MROCE_DPDK_OP_TX, MROCE_DPDK_PH_TX);
    return sent;
}

const struct mroce_dp_ops mroce_dp_dpdk_ops = {
    .name = "dpdk",
    .tx_ref = true, /* payloads attached (zc.c) or copied in tx_burst */
    .open = dpdk_open,
    .close = dpdk_close,
    .rx_burst = dpdk_rx_burst,
    .rx_release = dpdk_rx_release,
    .tx_alloc = dpdk_tx_alloc,
    .tx_free = dpdk_tx_free,
    .tx_burst = dpdk_tx_burst,
    .wait = NULL,
};

/* ---- Extension calls ---- */

static struct mroce_dpdk *of(const struct mroce_dp *dp)
{
    return dp && dp->ops == &mroce_dp_dpdk_ops ? dp->priv : NULL;
}

int mroce_dpdk_get_counters(const struct mroce_dp *dp,
                            struct mroce_dpdk_counters *out)
{
    const struct mroce_dpdk *p = of(dp);
    if (!p)
        return MROCE_EINVAL;
    *out = p->cnt;
    return 0;
}

int mroce_dpdk_mac(const struct mroce_dp *dp, uint8_t mac[6])
{
    const struct mroce_dpdk *p = of(dp);
    if (!p)
        return MROCE_EINVAL;
    memcpy(mac, p->mac, 6);
    return 0;
}

int mroce_dpdk_port_id(const struct mroce_dp *dp)
{
    const struct mroce_dpdk *p = of(dp);
    return p ? p->port : MROCE_EINVAL;
}

const char *mroce_dpdk_drop_str(int reason)
{
    static const char *const names[MROCE_DPDK_DROP_N] = {
        "ethertype", "trunc_ip",     "bad_ip",     "ip_csum",
        "frag",      "not_udp",      "not_our_ip", "trunc_udp",
        "udp_csum",  "not_our_port", "bad_arp_nd", "multiseg",
    };
    if (reason < 0 || reason >= MROCE_DPDK_DROP_N)
        return "?";
    return names[reason];
}
