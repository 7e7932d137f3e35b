/* The UDP datapath's private state, shared by its three files:
 * udp.c (sockets, open/close, wait/wake), udp_rx.c (receive, GRO, ECN),
 * udp_tx.c (buffers, send, GSO, ECN).
 *
 * Sockets (docs/datapath.md):
 * - one receive socket bound to attr.local_ip:attr.port, non-blocking,
 *   with UDP_GRO and IP_RECVTOS / IPV6_RECVTCLASS;
 * - n_src_ports send sockets bound to local_ip:0; the kernel picks the
 *   port, read back with getsockname. Those ports are the engine's source
 *   port set (R-ENC-3), so every path leaves from a socket that owns its
 *   source port;
 * - an eventfd that mroce_dp_unlock uses to wake a sleeping poll thread.
 *
 * Thread-safety: none; the loop (dp.c) calls the ops under its lock.
 */
#ifndef MROCE_IO_UDP_UDP_H
#define MROCE_IO_UDP_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include "io/dp.h"

#define UDP_GRO_BUF 65536u  /* one GRO super-datagram */
#define UDP_GRO_BUFS 32u    /* GRO buffers per burst at most */
#define UDP_PLAIN_BUF 9216u /* largest single datagram accepted (no GRO) */
#define UDP_MAX_GSO_SEGS 64 /* UDP_MAX_SEGMENTS of the kernel */
#define UDP_GSO_MAX 65000u  /* payload bytes of one GSO send (< 64 KiB) */
#define UDP_SOCK_BUF (8u << 20)
#define UDP_PKT_IOVS 3 /* headers, payload in its region, ICRC */
/* Longest GSO tail kept for the next burst. A kept packet is copied
 * (~0.29 us of the sender's time here), one message more costs the
 * kernel ~1.9 us: in write_bw on loopback keeping all tails kept 40% of
 * the packets, keeping those of <= 3 keeps 9% for 12.7 packets a
 * message instead of 14.7 (docs/datapath.md, Send). */
#define UDP_HOLD_MAX 3

union udp_sa {
    struct sockaddr sa;
    struct sockaddr_in v4;
    struct sockaddr_in6 v6;
};

/* A received GRO buffer not yet handed out completely. */
struct udp_rx_cur {
    uint8_t *buf;
    uint32_t off, len, seg; /* next segment at off; segment size */
    struct mroce_pkt_meta meta;
};

struct udp_dp {
    int family; /* AF_INET or AF_INET6 */
    union udp_sa local;
    socklen_t sa_len;
    int rx_fd;
    int wake_fd;
    int *tx_fd;
    uint32_t n_tx;
    uint16_t *port_sock; /* by source port: tx socket index + 1, 0: none */
    bool gso, gro;
    uint32_t batch;

    /* receive: n_rxb buffers of rxb_cap; rxb[0] holds the leftover */
    uint8_t **rxb;
    uint32_t n_rxb, rxb_cap;
    struct udp_rx_cur cur;
    bool have_cur;
    struct mmsghdr *rmsg;
    struct iovec *riov;
    union udp_sa *rsa;
    uint8_t (*rctl)[64];

    /* transmit: a pool of txb_n buffers of txb_cap bytes */
    uint8_t *tx_arena;
    uint8_t **tx_free;
    uint32_t n_tx_free, txb_n, txb_cap;
    /* tx_burst sends stage[]: the held packets, then the burst (up to
     * 2 * batch); held[]: short GSO tails kept for the next burst while
     * dp->tx_more is set (at most batch, see udp_tx.c) */
    struct mroce_dp_pkt *stage, *held;
    uint32_t n_held;
    uint32_t *tx_next, *tx_head, *tx_tail, *tx_touched; /* grouping */
    struct mmsghdr *tmsg;
    struct iovec *tiov; /* UDP_PKT_IOVS per staged packet */
    union udp_sa *tsa;
    uint8_t (*tctl)[64];
};

static inline struct udp_dp *udp_of(struct mroce_dp *dp)
{
    return (struct udp_dp *)dp->priv;
}

/* Logs through the context's log hook (dp->attr.ctx.hooks). */
void mroce_udp_log(struct mroce_dp *dp, const char *what, int err);

/* udp_rx.c */
int mroce_udp_rx_init(struct mroce_dp *dp);
void mroce_udp_rx_fini(struct udp_dp *u);
int mroce_udp_rx_burst(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n);
void mroce_udp_rx_release(struct mroce_dp *dp, struct mroce_dp_pkt *pkts,
                          int n);

/* udp_tx.c */
int mroce_udp_tx_init(struct mroce_dp *dp);
void mroce_udp_tx_fini(struct udp_dp *u);
int mroce_udp_tx_alloc(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n,
                       size_t cap);
void mroce_udp_tx_free(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n);
int mroce_udp_tx_burst(struct mroce_dp *dp, struct mroce_dp_pkt *pkts, int n);

/* Converts between mroce_addr + port and a socket address. */
socklen_t mroce_udp_sa_make(union udp_sa *sa, const struct mroce_addr *a,
                            uint16_t port);
void mroce_udp_sa_read(const union udp_sa *sa, struct mroce_addr *a,
                       uint16_t *port);

#endif
