/* The UDP datapath: sockets, open/close, wait/wake and the ops table.
 * See udp.h for the socket layout and docs/datapath.md for the model. */
#define _GNU_SOURCE
#include "io/udp/udp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

void mroce_udp_log(struct mroce_dp *dp, const char *what, int err)
{
    const struct mroce_hooks *h = &dp->attr.ctx.hooks;
    if (!h->log)
        return;
    char msg[256];
    snprintf(msg, sizeof(msg), "udp datapath: %s: %s", what,
             err ? strerror(err) : "ok");
    h->log(h->ud, MROCE_LOG_ERR, msg);
}

/* ---- addresses ---- */

socklen_t mroce_udp_sa_make(union udp_sa *sa, const struct mroce_addr *a,
                            uint16_t port)
{
    memset(sa, 0, sizeof(*sa));
    if (a->family == MROCE_AF_INET6) {
        sa->v6.sin6_family = AF_INET6;
        sa->v6.sin6_port = htons(port);
        memcpy(&sa->v6.sin6_addr, a->ip, 16);
        return sizeof(sa->v6);
    }
    sa->v4.sin_family = AF_INET;
    sa->v4.sin_port = htons(port);
    memcpy(&sa->v4.sin_addr, a->ip, 4);
    return sizeof(sa->v4);
}

void mroce_udp_sa_read(const union udp_sa *sa, struct mroce_addr *a,
                       uint16_t *port)
{
    memset(a, 0, sizeof(*a));
    if (sa->sa.sa_family == AF_INET6) {
        a->family = MROCE_AF_INET6;
        memcpy(a->ip, &sa->v6.sin6_addr, 16);
        *port = ntohs(sa->v6.sin6_port);
        return;
    }
    a->family = MROCE_AF_INET;
    memcpy(a->ip, &sa->v4.sin_addr, 4);
    *port = ntohs(sa->v4.sin_port);
}

/* ---- sockets ---- */

static void udp_bufsize(int fd, int opt, int force)
{
    int v = (int)UDP_SOCK_BUF;
    /* FORCE passes the rmem_max/wmem_max cap when we have CAP_NET_ADMIN */
    if (setsockopt(fd, SOL_SOCKET, force, &v, sizeof(v)) < 0)
        setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
}

static int udp_bind_err(struct mroce_dp *dp, const char *what)
{
    int e = errno;
    mroce_udp_log(dp, what, e);
    return e == EADDRNOTAVAIL || e == EAFNOSUPPORT ? MROCE_EINVAL
                                                   : MROCE_ESTATE;
}

static int udp_socket(struct mroce_dp *dp, uint16_t port, int *out)
{
    struct udp_dp *u = udp_of(dp);
    int fd = socket(u->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return udp_bind_err(dp, "socket");
    int one = 1;
    if (u->family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    /* R-ENC-8: never fragmented; DF set on IPv4 (a datagram above the
     * path MTU fails to send instead of going out in fragments) */
    int df = u->family == AF_INET6 ? IPV6_PMTUDISC_DO : IP_PMTUDISC_DO;
    if (setsockopt(fd, u->family == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP,
                   u->family == AF_INET6 ? IPV6_MTU_DISCOVER : IP_MTU_DISCOVER,
                   &df, sizeof(df)) < 0) {
        int rc = udp_bind_err(dp, "IP_MTU_DISCOVER");
        close(fd);
        return rc;
    }
    union udp_sa sa = u->local;
    if (u->family == AF_INET6)
        sa.v6.sin6_port = htons(port);
    else
        sa.v4.sin_port = htons(port);
    if (bind(fd, &sa.sa, u->sa_len) < 0) {
        int rc = udp_bind_err(dp, "bind");
        close(fd);
        return rc;
    }
    *out = fd;
    return 0;
}

/* R-ENC-6: the ECN field of every received packet reaches the engine. */
static int udp_rx_socket(struct mroce_dp *dp)
{
    struct udp_dp *u = udp_of(dp);
    int rc = udp_socket(dp, dp->attr.port, &u->rx_fd);
    if (rc < 0)
        return rc;
    udp_bufsize(u->rx_fd, SO_RCVBUF, SO_RCVBUFFORCE);
    int one = 1;
    int lvl = u->family == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP;
    int opt = u->family == AF_INET6 ? IPV6_RECVTCLASS : IP_RECVTOS;
    if (setsockopt(u->rx_fd, lvl, opt, &one, sizeof(one)) < 0)
        mroce_udp_log(dp, "IP_RECVTOS (ECN is not seen)", errno);
    u->gro = !dp->attr.no_gro;
    if (u->gro &&
        setsockopt(u->rx_fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)) < 0) {
        mroce_udp_log(dp, "UDP_GRO (receiving without)", errno);
        u->gro = false;
        dp->cnt.gro_fallback++;
    }
    return 0;
}

/* One send socket per source port (R-ENC-3); the kernel picks the port. */
static int udp_tx_socket(struct mroce_dp *dp, uint32_t i)
{
    struct udp_dp *u = udp_of(dp);
    int rc = udp_socket(dp, 0, &u->tx_fd[i]);
    if (rc < 0)
        return rc;
    u->n_tx = i + 1;
    udp_bufsize(u->tx_fd[i], SO_SNDBUF, SO_SNDBUFFORCE);
    union udp_sa sa;
    socklen_t len = sizeof(sa);
    if (getsockname(u->tx_fd[i], &sa.sa, &len) < 0)
        return udp_bind_err(dp, "getsockname");
    struct mroce_addr a;
    uint16_t port;
    mroce_udp_sa_read(&sa, &a, &port);
    dp->src_ports[i] = port;
    u->port_sock[port] = (uint16_t)(i + 1);
    return 0;
}

/* Whether the kernel knows UDP_SEGMENT (setting 0 is a no-op). */
static void udp_probe_gso(struct mroce_dp *dp)
{
    struct udp_dp *u = udp_of(dp);
    u->gso = !dp->attr.no_gso;
    int zero = 0;
    if (u->gso && setsockopt(u->tx_fd[0], IPPROTO_UDP, UDP_SEGMENT, &zero,
                             sizeof(zero)) < 0) {
        mroce_udp_log(dp, "UDP_SEGMENT (sending without GSO)", errno);
        u->gso = false;
        dp->cnt.gso_fallback++;
    }
}

static int udp_sockets(struct mroce_dp *dp)
{
    struct udp_dp *u = udp_of(dp);
    int rc = udp_rx_socket(dp);
    for (uint32_t i = 0; rc == 0 && i < dp->attr.n_src_ports; i++)
        rc = udp_tx_socket(dp, i);
    if (rc < 0)
        return rc;
    udp_probe_gso(dp);
    u->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (u->wake_fd < 0)
        return udp_bind_err(dp, "eventfd");
    dp->ctx_attr.src_ports = dp->src_ports;
    dp->ctx_attr.n_src_ports = u->n_tx;
    dp->ctx_attr.udp_port = dp->attr.port;
    return 0;
}

/* ---- ops ---- */

static int udp_alloc(struct mroce_dp *dp, struct udp_dp **out)
{
    struct udp_dp *u = calloc(1, sizeof(*u));
    if (!u)
        return MROCE_ENOMEM;
    u->rx_fd = u->wake_fd = -1;
    dp->priv = u;
    u->tx_fd = calloc(dp->attr.n_src_ports, sizeof(*u->tx_fd));
    u->port_sock = calloc(65536, sizeof(*u->port_sock));
    if (!u->tx_fd || !u->port_sock)
        return MROCE_ENOMEM;
    *out = u;
    return 0;
}

static void udp_close(struct mroce_dp *dp)
{
    struct udp_dp *u = udp_of(dp);
    if (!u)
        return;
    if (u->rx_fd >= 0)
        close(u->rx_fd);
    if (u->wake_fd >= 0)
        close(u->wake_fd);
    for (uint32_t i = 0; i < u->n_tx; i++)
        close(u->tx_fd[i]);
    mroce_udp_rx_fini(u);
    mroce_udp_tx_fini(u);
    free(u->tx_fd);
    free(u->port_sock);
    free(u);
    dp->priv = NULL;
}

static int udp_open(struct mroce_dp *dp)
{
    struct udp_dp *u;
    int rc = udp_alloc(dp, &u);
    if (rc == 0)
        rc = dp->ctx_attr.addr.family == MROCE_AF_INET ||
                     dp->ctx_attr.addr.family == MROCE_AF_INET6
                 ? 0
                 : MROCE_EINVAL; /* dp.c parsed attr.local_ip */
    if (rc == 0) {
        u->family =
            dp->ctx_attr.addr.family == MROCE_AF_INET6 ? AF_INET6 : AF_INET;
        u->sa_len = mroce_udp_sa_make(&u->local, &dp->ctx_attr.addr, 0);
        u->batch = dp->attr.batch;
        rc = udp_sockets(dp);
    }
    if (rc == 0)
        rc = mroce_udp_rx_init(dp);
    if (rc == 0)
        rc = mroce_udp_tx_init(dp);
    if (rc < 0)
        udp_close(dp);
    return rc;
}

static void udp_drain_wake(struct udp_dp *u)
{
    uint64_t v;
    while (read(u->wake_fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
        ;
}

static int udp_wait(struct mroce_dp *dp, uint64_t timeout_ns)
{
    struct udp_dp *u = udp_of(dp);
    if (u->have_cur)
        return 0; /* a GRO buffer still has packets */
    struct pollfd p[2] = {{.fd = u->rx_fd, .events = POLLIN},
                          {.fd = u->wake_fd, .events = POLLIN}};
    struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000u),
                          .tv_nsec = (long)(timeout_ns % 1000000000u)};
    int rc = ppoll(p, 2, &ts, NULL);
    if (rc > 0 && (p[1].revents & POLLIN))
        udp_drain_wake(u);
    return rc < 0 && errno != EINTR ? MROCE_ESTATE : 0;
}

static int udp_wake(struct mroce_dp *dp)
{
    uint64_t one = 1;
    ssize_t n = write(udp_of(dp)->wake_fd, &one, sizeof(one));
    return n == (ssize_t)sizeof(one) || errno == EAGAIN ? 0 : MROCE_ESTATE;
}

const struct mroce_dp_ops mroce_dp_udp_ops = {
    .name = "udp",
    .tx_ref = true, /* sendmmsg copies the iovecs before it returns */
    .open = udp_open,
    .close = udp_close,
    .rx_burst = mroce_udp_rx_burst,
    .rx_release = mroce_udp_rx_release,
    .tx_alloc = mroce_udp_tx_alloc,
    .tx_free = mroce_udp_tx_free,
    .tx_burst = mroce_udp_tx_burst,
    .wait = udp_wait,
    .wake = udp_wake,
};
