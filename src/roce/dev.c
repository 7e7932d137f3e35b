/* The RoCE device: QP table, receive demultiplexing, transmit
 * round-robin over QPs, timers as one cached deadline. */
#include <string.h>

#include "roce/roce_int.h"

/* IBTA ch. 9: the local ACK timeout is 4.096 us * 2^t; t = 0 means
 * "infinite" (no timeout). */
uint64_t roce_timeout_ns(uint8_t t)
{
    if (!t || t > 31)
        return 0;
    return 4096ull << t;
}

/* the IBTA RNR NAK timer encoding, in units of 10 us; code 0 is the
 * longest, 655.36 ms. */
uint64_t roce_rnr_timer_ns(uint8_t code)
{
    static const uint32_t tab[32] = {
        65536, 1,    2,    3,    4,    6,     8,     12,    16,    24,   32,
        48,    64,   96,   128,  192,  256,   384,   512,   768,   1024, 1536,
        2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};
    return (uint64_t)tab[code & 31] * 10000;
}

static void dev_fill_attr(struct roce_dev_attr *a)
{
    if (!a->link_mbps)
        a->link_mbps = 100000;
    if (!a->first_qpn)
        a->first_qpn = 17; /* rxe: QPNs 0 and 1 are special, pool from 16 */
    roce_dcqcn_fill(&a->dcqcn_cfg);
}

int roce_dev_create(struct mroce_dev *md, const struct roce_dev_attr *attr,
                    struct roce_dev **out)
{
    struct roce_dev_attr a = attr ? *attr : (struct roce_dev_attr){0};
    dev_fill_attr(&a);
    if (a.first_qpn > ROCE_QPN_MASK)
        return MROCE_EINVAL;
    struct roce_dev *dev = dev_alloc(md, sizeof(*dev));
    if (!dev)
        return MROCE_ENOMEM;
    dev->mdev = md;
    dev->attr = a;
    dev->next_qpn = a.first_qpn;
    dev->deadline = ROCE_NEVER;
    dev->paced_min = ROCE_NEVER;
    *out = dev;
    return 0;
}

void roce_dev_destroy(struct roce_dev *dev)
{
    if (!dev)
        return;
    while (dev->conns)
        roce_conn_destroy(dev->conns);
    dev_free(dev->mdev, dev->qps);
    dev_free(dev->mdev, dev->ready);
    dev_free(dev->mdev, dev->paced);
    dev_free(dev->mdev, dev->blk);
    dev_free(dev->mdev, dev);
}

size_t roce_dev_max_pkt(const struct roce_dev *dev)
{
    (void)dev;
    return ROCE_MAX_OVERHEAD + ROCE_MTU_MAX;
}

void roce_dev_get_counters(const struct roce_dev *dev,
                           struct roce_dev_counters *out)
{
    *out = dev->cnt;
}

/* ---- QP table ---- */

/* rxe: the UDP source port is 0xC000 + a 14-bit hash of the QPN
 * (hash_32 with the golden ratio), fixed for the QP's life: one QP, one
 * ECMP path. */
static uint16_t dev_sport(uint32_t qpn)
{
    return (uint16_t)(0xC000 | ((qpn * 0x61C88647u) >> 18));
}

static int dev_grow(struct roce_dev *dev, uint32_t more)
{
    if (dev->n_qps + more <= dev->qps_cap)
        return 0;
    uint32_t cap = dev->qps_cap ? dev->qps_cap : 64;
    while (cap < dev->n_qps + more)
        cap *= 2;
    struct roce_qp **q = dev_alloc(dev->mdev, cap * sizeof(*q));
    uint64_t *r = dev_alloc(dev->mdev, cap / 64 * sizeof(*r));
    struct roce_blk *b = dev_alloc(dev->mdev, cap / 64 * sizeof(*b));
    uint64_t *pc = dev_alloc(dev->mdev, cap / 64 * sizeof(*pc));
    if (!q || !r || !b || !pc) {
        dev_free(dev->mdev, q);
        dev_free(dev->mdev, r);
        dev_free(dev->mdev, b);
        dev_free(dev->mdev, pc);
        return MROCE_ENOMEM;
    }
    if (dev->n_qps) {
        memcpy(q, dev->qps, dev->n_qps * sizeof(*q));
        memcpy(r, dev->ready, dev->qps_cap / 64 * sizeof(*r));
        memcpy(b, dev->blk, dev->qps_cap / 64 * sizeof(*b));
        memcpy(pc, dev->paced, dev->qps_cap / 64 * sizeof(*pc));
    }
    for (uint32_t i = dev->qps_cap / 64; i < cap / 64; i++)
        b[i].min = ROCE_NEVER;
    dev_free(dev->mdev, dev->qps);
    dev_free(dev->mdev, dev->ready);
    dev_free(dev->mdev, dev->blk);
    dev_free(dev->mdev, dev->paced);
    dev->qps = q;
    dev->ready = r;
    dev->blk = b;
    dev->paced = pc;
    dev->qps_cap = cap;
    return 0;
}

/* ---- The ready set ----
 * A QP leaves it when it had nothing to send, and every entry point that
 * can give it something (a packet received, a post, a timer, a state
 * change) puts its connection's QPs back, and one that left paced comes
 * back when its pace time has come, timer or not: the transmit
 * round-robin then skips in one bit test what would return 0 and change
 * nothing, instead of asking every QP of the device for each packet. */

static void dev_ready_set(struct roce_dev *dev, uint32_t slot)
{
    dev->ready[slot / 64] |= UINT64_C(1) << (slot % 64);
}

void roce_conn_ready(struct roce_conn *c)
{
    for (uint32_t i = 0; i < c->n_qps; i++)
        dev_ready_set(c->dev, c->qps[i].slot);
}

/* The first ready slot in [from, end), or end. */
static uint32_t dev_ready_next(const struct roce_dev *dev, uint32_t from,
                               uint32_t end)
{
    while (from < end) {
        uint64_t w = dev->ready[from / 64] >> (from % 64);
        if (w) {
            uint32_t s = from + (uint32_t)__builtin_ctzll(w);
            return s < end ? s : end;
        }
        from = (from / 64 + 1) * 64;
    }
    return end;
}

static struct roce_qp *dev_find(struct roce_dev *dev, uint32_t qpn)
{
    struct roce_qp *qp = dev->qp_hash[qpn % ROCE_QP_HASH];
    while (qp && qp->qpn != qpn)
        qp = qp->hnext;
    return qp;
}

/* Hands out the next free QPN (24 bits, wrapping past the reserved 0/1). */
static uint32_t dev_fresh_qpn(struct roce_dev *dev)
{
    uint32_t q;
    do {
        q = dev->next_qpn;
        dev->next_qpn = (q + 1) & ROCE_QPN_MASK;
        if (dev->next_qpn < 2)
            dev->next_qpn = 2;
    } while (dev_find(dev, q));
    return q;
}

int roce_dev_add_qps(struct roce_dev *dev, struct roce_conn *c)
{
    if (dev_grow(dev, c->n_qps))
        return MROCE_ENOMEM;
    for (uint32_t i = 0; i < c->n_qps; i++) {
        struct roce_qp *qp = &c->qps[i];
        qp->qpn = dev_fresh_qpn(dev);
        qp->sport = dev_sport(qp->qpn);
        qp->hnext = dev->qp_hash[qp->qpn % ROCE_QP_HASH];
        dev->qp_hash[qp->qpn % ROCE_QP_HASH] = qp;
        qp->slot = dev->n_qps;
        dev->qps[dev->n_qps++] = qp;
        dev_ready_set(dev, qp->slot);
    }
    return 0;
}

void roce_dev_del_qps(struct roce_dev *dev, struct roce_conn *c)
{
    for (uint32_t i = 0; i < c->n_qps; i++) {
        struct roce_qp *qp = &c->qps[i];
        struct roce_qp **pp = &dev->qp_hash[qp->qpn % ROCE_QP_HASH];
        while (*pp && *pp != qp)
            pp = &(*pp)->hnext;
        if (*pp)
            *pp = qp->hnext;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < dev->n_qps; i++)
        if (dev->qps[i]->conn != c)
            dev->qps[n++] = dev->qps[i];
    dev->n_qps = n;
    dev->tx_cursor = 0;
    memset(dev->ready, 0, dev->qps_cap / 64 * sizeof(*dev->ready));
    memset(dev->paced, 0, dev->qps_cap / 64 * sizeof(*dev->paced));
    dev->paced_min = ROCE_NEVER;
    for (uint32_t i = 0; i < n; i++) { /* slots moved: all ready again */
        dev->qps[i]->slot = i;
        dev_ready_set(dev, i);
    }
    for (uint32_t i = 0; i < dev->qps_cap / 64; i++)
        dev->blk[i].dirty = true;
}

/* ---- receive ---- */

static int dev_drop_wire(struct roce_dev *dev, int err)
{
    switch (err) {
    case ROCE_WIRE_ETRUNC:
        dev->cnt.drop_truncated++;
        break;
    case ROCE_WIRE_EVERSION:
        dev->cnt.drop_bad_version++;
        break;
    case ROCE_WIRE_EOPCODE:
        dev->cnt.drop_bad_opcode++;
        break;
    case ROCE_WIRE_ECRC:
        dev->cnt.drop_bad_icrc++;
        break;
    default:
        dev->cnt.drop_bad_payload++;
        break;
    }
    return MROCE_EPROTO;
}

static bool dev_addr_eq(const struct mroce_addr *a, const struct mroce_addr *b)
{
    size_t n = a->family == MROCE_AF_INET ? 4 : 16;
    return a->family == b->family && memcmp(a->ip, b->ip, n) == 0;
}

/* Requests go to the responder role, responses (ACK, READ response) to
 * the completer, CNPs to the DCQCN reaction point. */
static void dev_dispatch(struct roce_qp *qp, uint64_t now,
                         const struct mroce_pkt_meta *meta,
                         const struct roce_hdr *h)
{
    const struct roce_op_info *oi = roce_op_info(h->opcode);
    if (oi->kind == ROCE_K_CNP) {
        qp->cnt.rx_cnps++;
        roce_rp_on_cnp(qp, now);
        return;
    }
    if (meta->ecn == MROCE_ECN_CE)
        roce_np_on_ce(qp, now);
    if (oi->kind == ROCE_K_ACK || oi->kind == ROCE_K_READ_RESP)
        roce_comp_rx(qp, now, h);
    else
        roce_resp_rx(qp, now, meta, h);
}

/* IBTA ch. 9 header checks, in order: UDP port, BTH/ICRC (codec), QP,
 * source address, P_Key. */
int roce_dev_rx(struct roce_dev *dev, uint64_t now,
                const struct mroce_pkt_meta *meta, const uint8_t *buf,
                size_t len)
{
    struct roce_hdr h;
    struct roce_ip ip;
    dev->cnt.rx_pkts++;
    if (meta->dst_port != ROCE_UDP_PORT) {
        dev->cnt.drop_bad_port++;
        return MROCE_EPROTO;
    }
    roce_ip_from_meta(meta, &ip);
    int err = roce_decode(dev->attr.no_icrc_check ? NULL : &ip, buf, len, &h);
    if (err)
        return dev_drop_wire(dev, err);
    struct roce_qp *qp = dev_find(dev, h.dqpn);
    if (!qp || qp->conn->state == MROCE_CONN_INIT) {
        dev->cnt.drop_unknown_qp++;
        return MROCE_EPROTO;
    }
    if (!dev_addr_eq(&meta->src, &qp->conn->remote.addr)) {
        dev->cnt.drop_bad_src++;
        return MROCE_EPROTO;
    }
    if (h.pkey != ROCE_PKEY_DEFAULT) {
        dev->cnt.drop_bad_pkey++;
        return MROCE_EPROTO;
    }
    qp->cnt.rx_pkts++;
    qp->cnt.rx_bytes += len;
    dev_dispatch(qp, now, meta, &h);
    roce_conn_ready(qp->conn);
    return 0;
}

/* ---- transmit ---- */

/* R-ENC-10 as a multi-port RoCE NIC does it: a QP is bound to one port,
 * here the one its source port hashes to. */
static uint32_t dev_qp_plane(const struct roce_qp *qp)
{
    return qp->sport % qp->conn->dev->mdev->n_planes;
}

void roce_qp_meta(const struct roce_qp *qp, struct mroce_pkt_meta *meta)
{
    const struct roce_conn *c = qp->conn;
    meta->src = c->dev->mdev->addr;
    meta->dst = c->remote.addr;
    meta->src_port = qp->sport;
    meta->dst_port = ROCE_UDP_PORT;
    meta->ecn = MROCE_ECN_ECT0; /* ECN-capable, so switches mark CE */
    meta->plane = (uint8_t)dev_qp_plane(qp);
}

/* Payload and pad after the headers at buf[0..hlen), then the ICRC over
 * the addressing in meta. Returns the packet length. */
int roce_qp_finish(struct roce_qp *qp, const struct mroce_pkt_meta *meta,
                   uint8_t *buf, size_t hlen, const uint8_t *payload,
                   uint32_t plen)
{
    struct roce_ip ip;
    uint32_t pad = -plen & 3;
    if (plen)
        dev_mem_get(qp->conn->dev->mdev, buf + hlen, payload, plen);
    memset(buf + hlen + plen, 0, pad);
    size_t n = hlen + plen + pad;
    if (qp->conn->dev->attr.no_icrc_tx) {
        memset(buf + n, 0, ROCE_ICRC_LEN);
        n += ROCE_ICRC_LEN;
    } else {
        roce_ip_from_meta(meta, &ip);
        n = roce_seal(&ip, buf, n);
    }
    qp->cnt.tx_pkts++;
    qp->cnt.tx_bytes += n;
    return (int)n;
}

/* One QP's next packet: a CNP or an ACK/NAK first (never paced), then
 * data, which DCQCN paces: READ responses before new requests, like the
 * responder's in-order output of rxe. */
static int dev_qp_tx(struct roce_qp *qp, uint64_t now, uint8_t *buf, size_t cap,
                     struct mroce_pkt_meta *meta)
{
    int n = roce_resp_tx_ctl(qp, buf, cap, meta);
    if (n || qp->conn->state != MROCE_CONN_CONNECTED)
        return n;
    if (!roce_rp_may_send(qp, now)) {
        if (qp->rd_count || roce_req_has_work(qp))
            roce_qp_arm(qp, qp->pace_at);
        return 0;
    }
    n = roce_resp_tx_read(qp, buf, cap, meta);
    if (!n)
        n = roce_req_tx(qp, now, buf, cap, meta);
    if (n > 0)
        roce_rp_on_sent(qp, now, (uint32_t)n);
    return n;
}

/* qp had nothing to send at now; if pacing held it, until its pace_at. */
static void dev_unready(struct roce_dev *dev, struct roce_qp *qp, uint64_t now)
{
    uint32_t j = qp->slot;
    dev->ready[j / 64] &= ~(UINT64_C(1) << (j % 64));
    if (!roce_rp_may_send(qp, now)) {
        dev->paced[j / 64] |= UINT64_C(1) << (j % 64);
        if (qp->pace_at < dev->paced_min)
            dev->paced_min = qp->pace_at;
    }
}

/* The paced QPs whose time has come are ready again. */
static void dev_unpace(struct roce_dev *dev, uint64_t now)
{
    uint64_t min = ROCE_NEVER;
    for (uint32_t w = 0; w * 64 < dev->n_qps; w++) {
        for (uint64_t m = dev->paced[w]; m; m &= m - 1) {
            uint32_t j = w * 64 + (uint32_t)__builtin_ctzll(m);
            struct roce_qp *qp = dev->qps[j];
            if (!roce_rp_may_send(qp, now)) {
                min = qp->pace_at < min ? qp->pace_at : min;
                continue;
            }
            dev->paced[w] &= ~(UINT64_C(1) << (j % 64));
            dev_ready_set(dev, j);
        }
    }
    dev->paced_min = min;
}

/* The ready QPs of [from, end) in turn: the first packet one sends. */
static int dev_tx_range(struct roce_dev *dev, uint32_t from, uint32_t end,
                        uint64_t now, uint8_t *buf, size_t cap,
                        struct mroce_pkt_meta *meta)
{
    for (uint32_t j = dev_ready_next(dev, from, end); j < end;
         j = dev_ready_next(dev, j + 1, end)) {
        struct roce_qp *qp = dev->qps[j];
        if (qp->conn->state == MROCE_CONN_INIT ||
            !((dev->mdev->tx_planes >> dev_qp_plane(qp)) & 1u)) /* R-PATH-14 */
            continue; /* not asked: stays ready */
        int n = dev_qp_tx(qp, now, buf, cap, meta);
        if (n > 0) {
            dev->tx_cursor = (j + 1) % dev->n_qps;
            dev->cnt.tx_pkts++;
            return n;
        }
        if (n == 0)
            dev_unready(dev, qp, now);
    }
    return 0;
}

/* Round-robin over the QPs from the cursor (ready ones only). */
int roce_dev_tx(struct roce_dev *dev, uint64_t now, uint8_t *buf, size_t cap,
                struct mroce_pkt_meta *meta)
{
    if (cap < roce_dev_max_pkt(dev))
        return MROCE_ENOBUFS;
    if (dev->paced_min <= now)
        dev_unpace(dev, now);
    uint32_t at = dev->tx_cursor < dev->n_qps ? dev->tx_cursor : 0;
    int n = dev_tx_range(dev, at, dev->n_qps, now, buf, cap, meta);
    return n ? n : dev_tx_range(dev, 0, at, now, buf, cap, meta);
}

/* ---- timers ---- */

/* Arming only lowers the cached deadlines; a deadline left early by a
 * disarmed timer costs one on_expiry call, which recomputes it. */
void roce_dev_arm(struct roce_dev *dev, uint64_t t)
{
    if (t < dev->deadline)
        dev->deadline = t;
}

void roce_qp_arm(struct roce_qp *qp, uint64_t t)
{
    struct roce_blk *b = &qp->conn->dev->blk[qp->slot / 64];
    if (t < qp->deadline)
        qp->deadline = t;
    if (t < b->min)
        b->min = t;
    roce_dev_arm(qp->conn->dev, t);
}

void roce_qp_update_deadline(struct roce_qp *qp)
{
    uint64_t t = qp->rto_at < qp->rnr_at ? qp->rto_at : qp->rnr_at;
    uint64_t r = roce_rp_deadline(qp);
    if (r < t)
        t = r;
    struct roce_blk *b = &qp->conn->dev->blk[qp->slot / 64];
    if (t > qp->deadline)
        b->dirty = true; /* b->min may be this QP's old deadline */
    else if (t < b->min)
        b->min = t;
    qp->deadline = t;
}

uint64_t roce_dev_next_expiry(const struct roce_dev *dev)
{
    return dev->deadline;
}

/* The QPs of block k that are due, in slot order, and the earliest
 * deadline met on the way (each read after its own QP's turn, as one scan
 * of every QP reads them); then the block's exact min. */
static uint64_t dev_expire_blk(struct roce_dev *dev, uint32_t k, uint64_t now)
{
    uint32_t end = (k + 1) * 64 < dev->n_qps ? (k + 1) * 64 : dev->n_qps;
    uint64_t t = ROCE_NEVER, m = ROCE_NEVER;
    for (uint32_t i = k * 64; i < end; i++) {
        struct roce_qp *qp = dev->qps[i];
        if (qp->deadline <= now) {
            if (qp->conn->state == MROCE_CONN_CONNECTED) {
                roce_comp_timers(qp, now);
                roce_rp_timers(qp, now);
            }
            roce_qp_update_deadline(qp);
            roce_conn_ready(qp->conn);
        }
        t = qp->deadline < t ? qp->deadline : t;
    }
    for (uint32_t i = k * 64; i < end; i++)
        m = dev->qps[i]->deadline < m ? dev->qps[i]->deadline : m;
    dev->blk[k] = (struct roce_blk){.min = m, .dirty = false};
    return t;
}

/* Every due QP in slot order (a timer may flush or arm QPs further on:
 * their blocks are then dirty or due), and the exact earliest deadline
 * after them, as one scan of every QP would find. */
void roce_dev_on_expiry(struct roce_dev *dev, uint64_t now)
{
    uint64_t t = ROCE_NEVER;
    for (uint32_t k = 0; k * 64 < dev->n_qps; k++) {
        struct roce_blk *b = &dev->blk[k];
        uint64_t m =
            b->dirty || b->min <= now ? dev_expire_blk(dev, k, now) : b->min;
        t = m < t ? m : t;
    }
    dev->deadline = t;
}
