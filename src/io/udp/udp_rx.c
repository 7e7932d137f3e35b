/* UDP receive: recvmmsg (no GRO) or recvmsg of GRO super-datagrams (with
 * GRO: machine.md found recvmmsg with vlen >= 4 collapses throughput),
 * split into the datagrams they carry; ECN from the IP header (R-ENC-6).
 *
 * Buffer ownership: packets handed out by rx_burst point into rxb[];
 * the loop releases each burst before the next rx_burst, so every buffer
 * is free again then, except rxb[0] while it holds the rest of a GRO
 * buffer that did not fit the previous burst (have_cur). */
#define _GNU_SOURCE
#include "io/udp/udp.h"

#include <errno.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>

#ifndef UDP_GRO
#define UDP_GRO 104
#endif

int mroce_udp_rx_init(struct mroce_dp *dp)
{
    struct udp_dp *u = udp_of(dp);
    /* a GRO buffer holds up to 64 datagrams: fewer buffers suffice */
    uint32_t bufs = u->gro && u->batch > UDP_GRO_BUFS ? UDP_GRO_BUFS : u->batch;
    u->n_rxb = bufs + 1;
    u->rxb_cap = u->gro ? UDP_GRO_BUF : UDP_PLAIN_BUF;
    u->rxb = calloc(u->n_rxb, sizeof(*u->rxb));
    u->rmsg = calloc(u->n_rxb, sizeof(*u->rmsg));
    u->riov = calloc(u->n_rxb, sizeof(*u->riov));
    u->rsa = calloc(u->n_rxb, sizeof(*u->rsa));
    u->rctl = calloc(u->n_rxb, sizeof(*u->rctl));
    if (!u->rxb || !u->rmsg || !u->riov || !u->rsa || !u->rctl)
        return MROCE_ENOMEM;
    for (uint32_t i = 0; i < u->n_rxb; i++)
        if (!(u->rxb[i] = malloc(u->rxb_cap)))
            return MROCE_ENOMEM;
    return 0;
}

void mroce_udp_rx_fini(struct udp_dp *u)
{
    for (uint32_t i = 0; u->rxb && i < u->n_rxb; i++)
        free(u->rxb[i]);
    free(u->rxb);
    free(u->rmsg);
    free(u->riov);
    free(u->rsa);
    free(u->rctl);
}

/* Hands out segments of the current buffer until pkts is full. */
static int udp_emit(struct udp_dp *u, struct mroce_dp_pkt *pkts, int n, int out)
{
    struct udp_rx_cur *c = &u->cur;
    while (out < n && u->have_cur) {
        uint32_t left = c->len - c->off;
        uint32_t len = c->seg < left ? c->seg : left;
        struct mroce_dp_pkt *p = &pkts[out++];
        p->buf = c->buf + c->off;
        p->len = p->cap = len;
        p->meta = c->meta;
        p->priv = NULL;
        c->off += len;
        u->have_cur = c->off < c->len;
    }
    return out;
}

/* ECN (R-ENC-6) and the GRO segment size from the control messages. */
static void udp_cmsgs(struct msghdr *m, uint8_t *ecn, uint32_t *seg)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
        int v = 0;
        if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
            *ecn = *(const uint8_t *)CMSG_DATA(c) & 3;
        } else if (c->cmsg_level == IPPROTO_IPV6 &&
                   c->cmsg_type == IPV6_TCLASS) {
            memcpy(&v, CMSG_DATA(c), sizeof(v));
            *ecn = (uint8_t)(v & 3);
        } else if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) {
            memcpy(&v, CMSG_DATA(c), sizeof(v));
            *seg = v > 0 ? (uint32_t)v : 0;
        }
    }
}

/* Makes received datagram i (in rxb[idx]) the current buffer and hands
 * out what fits; a leftover moves to rxb[0]. */
static int udp_take(struct mroce_dp *dp, uint32_t idx, uint32_t i,
                    struct mroce_dp_pkt *pkts, int n, int out)
{
    struct udp_dp *u = udp_of(dp);
    struct mmsghdr *mm = &u->rmsg[i];
    if (mm->msg_hdr.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        dp->cnt.rx_bad_frame++; /* larger than a GRO buffer or an MTU */
        return out;
    }
    struct udp_rx_cur *c = &u->cur;
    uint32_t seg = 0;
    c->meta.ecn = MROCE_ECN_NOT_ECT;
    udp_cmsgs(&mm->msg_hdr, &c->meta.ecn, &seg);
    mroce_udp_sa_read(&u->rsa[i], &c->meta.src, &c->meta.src_port);
    c->meta.dst = dp->ctx_attr.addr;
    c->meta.dst_port = dp->attr.port;
    c->buf = u->rxb[idx];
    c->off = 0;
    c->len = mm->msg_len;
    c->seg = seg && seg < c->len ? seg : c->len;
    if (c->seg < c->len)
        dp->cnt.gro_merged += (c->len + c->seg - 1) / c->seg - 1;
    u->have_cur = true;
    out = udp_emit(u, pkts, n, out);
    if (u->have_cur && idx != 0) {
        uint8_t *t = u->rxb[0];
        u->rxb[0] = u->rxb[idx];
        u->rxb[idx] = t;
    }
    return out;
}

static void udp_rx_prep(struct udp_dp *u, uint32_t first, int want)
{
    for (int i = 0; i < want; i++) {
        struct msghdr *m = &u->rmsg[i].msg_hdr;
        u->riov[i].iov_base = u->rxb[first + (uint32_t)i];
        u->riov[i].iov_len = u->rxb_cap;
        m->msg_name = &u->rsa[i];
        m->msg_namelen = sizeof(u->rsa[i]);
        m->msg_iov = &u->riov[i];
        m->msg_iovlen = 1;
        m->msg_control = u->rctl[i];
        m->msg_controllen = sizeof(u->rctl[i]);
        m->msg_flags = 0;
    }
}

int mroce_udp_rx_burst(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n)
{
    struct udp_dp *u = udp_of(dp);
    uint32_t next = u->have_cur ? 1 : 0;
    int out = udp_emit(u, pkts, n, 0);
    while (out < n && next < u->n_rxb) {
        int room = (int)(u->n_rxb - next);
        int want = u->gro ? 1 : (n - out < room ? n - out : room);
        udp_rx_prep(u, next, want);
        int r = recvmmsg(u->rx_fd, u->rmsg, (unsigned)want, MSG_DONTWAIT, NULL);
        if (r <= 0)
            break; /* EAGAIN: nothing more; other errors: try next pass */
        for (int i = 0; i < r && out < n; i++)
            out = udp_take(dp, next + (uint32_t)i, (uint32_t)i, pkts, n, out);
        next += (uint32_t)r;
        if (r < want)
            break;
    }
    return out;
}

void mroce_udp_rx_release(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n)
{
    (void)dp;
    (void)pkts;
    (void)n; /* buffers are reused by position; see the file comment */
}
