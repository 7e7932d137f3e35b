/* UDP send: a pool of transmit buffers, and tx_burst, which groups a
 * burst by source port (each path's socket, R-ENC-3), keeping the order
 * of each path's packets, then sends each socket's share with one
 * sendmmsg. With GSO, consecutive packets to the same destination with
 * the same ECN and length (the last may be shorter) go as one message
 * with UDP_SEGMENT: the kernel cuts it into the original datagrams, each
 * a complete packet of ours (machine.md). ECN is set per message with an
 * IP_TOS / IPV6_TCLASS control message (R-ENC-6).
 *
 * Short tails: the engine sprays round robin (R-PATH-13), so a burst of
 * 256 packets over 16 paths gives each socket 16 packets, one GSO message
 * of 15 (64 KiB) and a message of 1, which costs the kernel on both sides
 * as much as the 15. While the loop says more follows (dp->tx_more, a
 * full burst), a socket's last message that could still grow is held
 * (held[]) and sent at the front of that socket's share of the next
 * burst, so messages fill up; a burst without tx_more sends everything.
 * A packet is held once at most, so it leaves one pass late at worst
 * even if its path gets nothing new. A path's packets keep their order.
 * Only tails of at most UDP_HOLD_MAX packets wait: a kept packet is
 * copied (zero copy, below), and longer tails cost more in copies than
 * the message they save.
 *
 * Runs (R-PATH-17, mroce_ctx_attr.spray_run): with runs of a message's worth
 * (15 at mtu 4096) a path's packets come consecutive already; grouping
 * then finds one or two messages per socket and burst, whose payloads
 * lie next to each other in the memory region, and the hold joins a run
 * that the end of a burst cut.
 *
 * Zero copy: a packet whose payload the engine only referenced (dp.h)
 * is three iovecs, headers, the memory region's slice and the ICRC;
 * UDP_SEGMENT cuts the concatenated bytes, and every packet but a
 * message's last has the segment size. The kernel copies them during
 * sendmmsg, so nothing refers to the region after tx_burst returns; a
 * held packet is flattened (its payload copied into its buffer) because
 * the loop calls the engine before it leaves.
 *
 * Buffer ownership: tx_alloc hands pool buffers to the loop; tx_burst and
 * tx_free take them back (tx_burst whether sent, held or not). */
#define _GNU_SOURCE
#include "io/udp/udp.h"

#include <errno.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

#define UDP_NONE UINT32_MAX
#define UDP_HELD (UINT32_MAX - 1) /* tx_next mark: packet kept in held[] */

int mroce_udp_tx_init(struct mroce_dp *dp)
{
    struct udp_dp *u = udp_of(dp);
    uint32_t mtu = dp->ctx_attr.mtu ? dp->ctx_attr.mtu : 4096;
    u->txb_cap = MROCE_MAX_HDR_LEN + mtu + MROCE_ICRC_LEN + 64;
    /* a burst in the loop's hands plus at most a burst held */
    u->txb_n = 2 * u->batch + 2;
    uint32_t stage = 2 * u->batch;
    u->tx_arena = malloc((size_t)u->txb_n * u->txb_cap);
    u->tx_free = calloc(u->txb_n, sizeof(*u->tx_free));
    u->stage = calloc(stage, sizeof(*u->stage));
    u->held = calloc(u->batch, sizeof(*u->held));
    u->tx_next = calloc(stage, sizeof(*u->tx_next));
    u->tx_head = malloc(u->n_tx * sizeof(*u->tx_head));
    u->tx_tail = calloc(u->n_tx, sizeof(*u->tx_tail));
    u->tx_touched = calloc(u->n_tx, sizeof(*u->tx_touched));
    u->tmsg = calloc(stage, sizeof(*u->tmsg));
    u->tiov = calloc(UDP_PKT_IOVS * stage, sizeof(*u->tiov));
    u->tsa = calloc(stage, sizeof(*u->tsa));
    u->tctl = calloc(stage, sizeof(*u->tctl));
    if (!u->tx_arena || !u->tx_free || !u->stage || !u->held || !u->tx_next ||
        !u->tx_head || !u->tx_tail || !u->tx_touched || !u->tmsg || !u->tiov ||
        !u->tsa || !u->tctl)
        return MROCE_ENOMEM;
    for (uint32_t i = 0; i < u->txb_n; i++)
        u->tx_free[u->n_tx_free++] = u->tx_arena + (size_t)i * u->txb_cap;
    for (uint32_t i = 0; i < u->n_tx; i++)
        u->tx_head[i] = UDP_NONE;
    return 0;
}

void mroce_udp_tx_fini(struct udp_dp *u)
{
    free(u->tx_arena);
    free(u->tx_free);
    free(u->stage);
    free(u->held);
    free(u->tx_next);
    free(u->tx_head);
    free(u->tx_tail);
    free(u->tx_touched);
    free(u->tmsg);
    free(u->tiov);
    free(u->tsa);
    free(u->tctl);
}

int mroce_udp_tx_alloc(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n,
                       size_t cap)
{
    struct udp_dp *u = udp_of(dp);
    if (cap > u->txb_cap)
        return MROCE_ENOBUFS;
    int k = 0;
    while (k < n && u->n_tx_free > 0) {
        struct mroce_dp_pkt *p = &pkts[k++];
        memset(p, 0, sizeof(*p));
        p->buf = u->tx_free[--u->n_tx_free];
        p->cap = u->txb_cap;
    }
    return k;
}

void mroce_udp_tx_free(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n)
{
    struct udp_dp *u = udp_of(dp);
    for (int i = 0; i < n; i++)
        u->tx_free[u->n_tx_free++] = pkts[i].buf;
}

/* ---- grouping by socket ---- */

static uint32_t udp_sock_of(const struct udp_dp *u, uint16_t port)
{
    uint16_t s = u->port_sock[port];
    return s ? s - 1u : 0; /* a port not ours: the first socket */
}

/* Chains pkts[0..n) per socket in order; returns the sockets touched. */
static uint32_t udp_group(struct udp_dp *u, const struct mroce_dp_pkt *pkts,
                          int n)
{
    uint32_t nt = 0;
    for (int i = 0; i < n; i++) {
        uint32_t s = udp_sock_of(u, pkts[i].meta.src_port);
        u->tx_next[i] = UDP_NONE;
        if (u->tx_head[s] == UDP_NONE) {
            u->tx_head[s] = (uint32_t)i;
            u->tx_touched[nt++] = s;
        } else {
            u->tx_next[u->tx_tail[s]] = (uint32_t)i;
        }
        u->tx_tail[s] = (uint32_t)i;
    }
    return nt;
}

/* ---- messages ---- */

static bool udp_same_dst(const struct mroce_pkt_meta *a,
                         const struct mroce_pkt_meta *b)
{
    size_t l = a->dst.family == MROCE_AF_INET6 ? 16 : 4;
    return a->dst.family == b->dst.family && a->dst_port == b->dst_port &&
           a->ecn == b->ecn && memcmp(a->dst.ip, b->dst.ip, l) == 0;
}

static void udp_ctl(struct udp_dp *u, struct msghdr *m, uint8_t *ctl,
                    uint8_t ecn, uint16_t seg)
{
    memset(ctl, 0, 64);
    m->msg_control = ctl;
    m->msg_controllen = CMSG_SPACE(sizeof(int));
    if (seg)
        m->msg_controllen += CMSG_SPACE(sizeof(uint16_t));
    struct cmsghdr *c = CMSG_FIRSTHDR(m);
    int tos = ecn & 3; /* R-ENC-6: the engine says ECT(0) */
    c->cmsg_level = u->family == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP;
    c->cmsg_type = u->family == AF_INET6 ? IPV6_TCLASS : IP_TOS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &tos, sizeof(tos));
    if (!seg)
        return;
    c = CMSG_NXTHDR(m, c);
    c->cmsg_level = IPPROTO_UDP;
    c->cmsg_type = UDP_SEGMENT;
    c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
    memcpy(CMSG_DATA(c), &seg, sizeof(seg));
}

/* Whether pkts[j] may join a GSO message of segment size seg whose last
 * packet so far is `last` (every segment but the last is full). */
static bool udp_joins(const struct udp_dp *u, const struct mroce_dp_pkt *first,
                      const struct mroce_dp_pkt *last,
                      const struct mroce_dp_pkt *p, uint32_t cnt,
                      uint32_t total)
{
    return u->gso && cnt < UDP_MAX_GSO_SEGS && last->len == first->len &&
           p->len <= first->len && total + p->len <= UDP_GSO_MAX &&
           udp_same_dst(&first->meta, &p->meta);
}

/* Whether a GSO message could take one more full packet. */
static bool udp_can_grow(const struct udp_dp *u,
                         const struct mroce_dp_pkt *first,
                         const struct mroce_dp_pkt *last, uint32_t cnt,
                         uint32_t total)
{
    return u->gso && cnt < UDP_MAX_GSO_SEGS && last->len == first->len &&
           total + first->len <= UDP_GSO_MAX;
}

/* The iovecs of one packet: 1 if whole in buf, 3 if its payload lies in
 * a memory region (dp.h). Returns how many it filled. */
static uint32_t udp_pkt_iov(struct iovec *iov, const struct mroce_dp_pkt *p)
{
    if (!p->pay_len) {
        iov[0] = (struct iovec){p->buf, p->len};
        return 1;
    }
    uint32_t tail = p->hdr_len + p->pay_len;
    iov[0] = (struct iovec){p->buf, p->hdr_len};
    iov[1] = (struct iovec){(void *)(uintptr_t)p->pay, p->pay_len};
    iov[2] = (struct iovec){p->buf + tail, p->len - tail};
    return UDP_PKT_IOVS;
}

/* Builds message k from the chain at *i (advanced past what it took);
 * iov entries from *iov_used. Returns the packets it holds; *open: the
 * chain ended while the message could still grow. */
static uint32_t udp_build(struct udp_dp *u, struct mroce_dp_pkt *pkts,
                          uint32_t *i, uint32_t k, uint32_t *iov_used,
                          bool *open)
{
    struct mroce_dp_pkt *first = &pkts[*i], *last = first;
    struct iovec *iov = &u->tiov[*iov_used];
    uint32_t cnt = 0, total = 0, niov = 0;
    do {
        niov += udp_pkt_iov(&iov[niov], last);
        cnt++;
        total += last->len;
        *i = u->tx_next[*i];
        if (*i == UDP_NONE) {
            *open = udp_can_grow(u, first, last, cnt, total);
            break;
        }
        if (!udp_joins(u, first, last, &pkts[*i], cnt, total))
            break;
        last = &pkts[*i];
    } while (1);
    struct msghdr *m = &u->tmsg[k].msg_hdr;
    memset(m, 0, sizeof(*m));
    m->msg_name = &u->tsa[k];
    m->msg_namelen =
        mroce_udp_sa_make(&u->tsa[k], &first->meta.dst, first->meta.dst_port);
    m->msg_iov = iov;
    m->msg_iovlen = niov;
    udp_ctl(u, m, u->tctl[k], first->meta.ecn,
            cnt > 1 ? (uint16_t)first->len : 0);
    *iov_used += niov;
    return cnt;
}

/* ---- sending ---- */

/* The segment size of a GSO message (its UDP_SEGMENT control message). */
static uint16_t udp_seg_of(struct msghdr *m)
{
    uint16_t seg = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
        if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_SEGMENT)
            memcpy(&seg, CMSG_DATA(c), sizeof(seg));
    return seg;
}

/* The iovecs of the packet at iov[j]: up to `seg` bytes (each packet of
 * a GSO message but the last has exactly seg). */
static size_t udp_seg_iovs(const struct msghdr *m, size_t j, uint16_t seg)
{
    size_t n = 0, bytes = 0;
    while (j + n < m->msg_iovlen && (n == 0 || bytes < seg))
        bytes += m->msg_iov[j + n++].iov_len;
    return n;
}

/* A GSO message the kernel refused: GSO off from now on (counted), and
 * its packets go one by one. Returns the packets sent. */
static uint32_t udp_unsegment(struct mroce_dp *dp, int fd, struct msghdr *m)
{
    struct udp_dp *u = udp_of(dp);
    mroce_udp_log(dp, "GSO send refused (sending without GSO)", errno);
    u->gso = false;
    dp->cnt.gso_fallback++;
    uint32_t sent = 0;
    struct msghdr one = *m;
    uint8_t ctl[64] __attribute__((aligned(16)));
    int tos;
    memcpy(&tos, CMSG_DATA(CMSG_FIRSTHDR(m)), sizeof(tos));
    uint16_t seg = udp_seg_of(m);
    for (size_t j = 0; j < m->msg_iovlen; j += one.msg_iovlen) {
        one.msg_iov = &m->msg_iov[j];
        one.msg_iovlen = udp_seg_iovs(m, j, seg);
        udp_ctl(u, &one, ctl, (uint8_t)tos, 0);
        if (sendmsg(fd, &one, MSG_DONTWAIT) >= 0)
            sent++;
        else
            dp->cnt.tx_dropped++;
    }
    return sent;
}

/* Sends messages [0, k) on fd; segs[i] packets in message i. A full
 * socket buffer (EAGAIN) drops the rest, counted: it never blocks. */
static uint32_t udp_flush(struct mroce_dp *dp, int fd, uint32_t k,
                          const uint32_t *segs)
{
    struct udp_dp *u = udp_of(dp);
    uint32_t done = 0, sent = 0;
    while (done < k) {
        int r = sendmmsg(fd, &u->tmsg[done], k - done, MSG_DONTWAIT);
        if (r > 0) {
            for (uint32_t j = done; j < done + (uint32_t)r; j++) {
                sent += segs[j];
                dp->cnt.gso_sends += segs[j] > 1;
            }
            done += (uint32_t)r;
            continue;
        }
        int e = errno;
        if (e == EINTR)
            continue;
        if (e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS) {
            for (; done < k; done++)
                dp->cnt.tx_dropped += segs[done];
            break;
        }
        if (segs[done] > 1 && (e == EINVAL || e == EIO || e == EMSGSIZE))
            sent += udp_unsegment(dp, fd, &u->tmsg[done].msg_hdr);
        else
            dp->cnt.tx_dropped += segs[done];
        done++;
    }
    return sent;
}

/* Keeps the message starting at pkts[i] (to the chain's end) in held[]
 * if it is short (UDP_HOLD_MAX), there is room and none of it was held
 * before (pkts[0..fresh) were); marks its packets UDP_HELD. */
static bool udp_hold(struct udp_dp *u, const struct mroce_dp_pkt *pkts,
                     uint32_t i, uint32_t fresh)
{
    if (i < fresh)
        return false;
    uint32_t cnt = 0;
    for (uint32_t j = i; j != UDP_NONE; j = u->tx_next[j])
        cnt++;
    if (cnt > UDP_HOLD_MAX || u->n_held + cnt > u->batch)
        return false;
    while (i != UDP_NONE) {
        uint32_t next = u->tx_next[i];
        u->held[u->n_held] = pkts[i];
        mroce_dp_pkt_flatten(&u->held[u->n_held++]); /* dp.h: lifetime */
        u->tx_next[i] = UDP_HELD;
        i = next;
    }
    return true;
}

/* One socket's chain: build its messages, send them; with `hold`, a last
 * message that could still grow and starts at or after pkts[fresh] waits
 * for the next burst. */
static uint32_t udp_send_sock(struct mroce_dp *dp, struct mroce_dp_pkt *pkts,
                              uint32_t s, uint32_t *segs, bool hold,
                              uint32_t fresh)
{
    struct udp_dp *u = udp_of(dp);
    uint32_t k = 0, iov_used = 0, start = UDP_NONE;
    bool open = false;
    for (uint32_t i = u->tx_head[s]; i != UDP_NONE; k++) {
        start = i;
        segs[k] = udp_build(u, pkts, &i, k, &iov_used, &open);
    }
    u->tx_head[s] = UDP_NONE;
    if (hold && open && udp_hold(u, pkts, start, fresh))
        k--;
    return udp_flush(dp, u->tx_fd[s], k, segs);
}

/* Sends pkts[0..n) (n <= 2 * batch) and returns their buffers to the
 * pool, except those now held; pkts[0..fresh) were held before. */
static int udp_tx_chunk(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n,
                        bool hold, uint32_t fresh)
{
    struct udp_dp *u = udp_of(dp);
    uint32_t segs[n];
    uint32_t nt = udp_group(u, pkts, n);
    uint32_t sent = 0;
    for (uint32_t t = 0; t < nt; t++)
        sent += udp_send_sock(dp, pkts, u->tx_touched[t], segs, hold, fresh);
    for (int i = 0; i < n; i++)
        if (u->tx_next[i] != UDP_HELD)
            u->tx_free[u->n_tx_free++] = pkts[i].buf;
    return (int)sent;
}

/* The held packets, then pkts[0..n), in stage[]; returns the count. */
static int udp_stage(struct udp_dp *u, const struct mroce_dp_pkt *pkts, int n)
{
    uint32_t h = u->n_held;
    memcpy(u->stage, u->held, h * sizeof(*u->held));
    if (n)
        memcpy(u->stage + h, pkts, (size_t)n * sizeof(*pkts));
    u->n_held = 0;
    return (int)h + n;
}

int mroce_udp_tx_burst(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n)
{
    struct udp_dp *u = udp_of(dp);
    int cap = 2 * (int)u->batch, sent = 0;
    uint32_t fresh = u->n_held;
    if (u->n_held && n <= (int)u->batch) {
        n = udp_stage(u, pkts, n);
        pkts = u->stage;
    } else if (u->n_held) { /* not from the loop: the held go first */
        sent = udp_tx_chunk(dp, u->stage, udp_stage(u, NULL, 0), false, 0);
        fresh = 0;
    }
    for (int at = 0; at < n; at += cap) {
        int m = n - at < cap ? n - at : cap;
        sent += udp_tx_chunk(dp, pkts + at, m, dp->tx_more && at + m == n,
                             at ? 0 : fresh);
    }
    dp->tx_held = u->n_held;
    return sent + (int)u->n_held;
}
