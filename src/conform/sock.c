/* The suite's UDP sockets: ECN bits on every datagram sent (IP_TOS as a
 * control message), ECN and kernel drops read on every one received. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conform/cf.h"

uint64_t cf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void cf_sleep_us(uint64_t us)
{
    struct timespec ts = {.tv_sec = (time_t)(us / 1000000),
                          .tv_nsec = (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

bool cf_parse_ip(const char *s, int *family, uint8_t ip[16])
{
    memset(ip, 0, 16);
    if (inet_pton(AF_INET, s, ip) == 1) {
        *family = 4;
        return true;
    }
    if (inet_pton(AF_INET6, s, ip) == 1) {
        *family = 6;
        return true;
    }
    return false;
}

static socklen_t sock_sa(int family, const uint8_t *ip, uint16_t port,
                         struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (family == 6) {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
        s->sin6_family = AF_INET6;
        s->sin6_port = htons(port);
        memcpy(&s->sin6_addr, ip, 16);
        return sizeof(*s);
    }
    struct sockaddr_in *s = (struct sockaddr_in *)ss;
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    memcpy(&s->sin_addr, ip, 4);
    return sizeof(*s);
}

static void sock_opts(int fd, int family)
{
    int one = 1, buf = 8 << 20;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) < 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)) < 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
    if (family == 6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one));
    else
        setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
}

int cf_sock_open(struct cf_sock *s, const char *ip, uint16_t port)
{
    memset(s, 0, sizeof(*s));
    s->fd = -1;
    if (!cf_parse_ip(ip, &s->family, s->ip))
        return -1;
    int fd = socket(s->family == 6 ? AF_INET6 : AF_INET,
                    SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_storage ss;
    socklen_t len = sock_sa(s->family, s->ip, port, &ss);
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
        close(fd);
        return -1;
    }
    sock_opts(fd, s->family);
    s->fd = fd;
    s->port = ntohs(s->family == 6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                   : ((struct sockaddr_in *)&ss)->sin_port);
    return 0;
}

void cf_sock_close(struct cf_sock *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

int cf_sock_send(struct cf_sock *s, const uint8_t *ip, uint16_t port,
                 const void *buf, size_t len, uint8_t ecn)
{
    struct sockaddr_storage ss;
    socklen_t sl = sock_sa(s->family, ip, port, &ss);
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    union {
        char b[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } cb;
    memset(&cb, 0, sizeof(cb));
    struct msghdr m = {.msg_name = &ss,
                       .msg_namelen = sl,
                       .msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = cb.b,
                       .msg_controllen = sizeof(cb.b)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    int tos = ecn & 3;
    c->cmsg_level = s->family == 6 ? IPPROTO_IPV6 : IPPROTO_IP;
    c->cmsg_type = s->family == 6 ? IPV6_TCLASS : IP_TOS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &tos, sizeof(tos));
    for (;;) {
        ssize_t n = sendmsg(s->fd, &m, 0);
        if (n >= 0)
            return (int)n;
        if (errno != EAGAIN && errno != ENOBUFS && errno != EINTR)
            return -1;
        cf_sleep_us(50); /* a full send buffer drains quickly */
    }
}

static void sock_cmsgs(struct cf_sock *s, struct msghdr *m, struct cf_pkt *pk)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
        if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS))
            pk->ecn = *(const uint8_t *)CMSG_DATA(c) & 3;
        else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
            int v;
            memcpy(&v, CMSG_DATA(c), sizeof(v));
            pk->ecn = (uint8_t)(v & 3);
        } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
            uint32_t d;
            memcpy(&d, CMSG_DATA(c), sizeof(d));
            s->kernel_drops = d;
        }
    }
}

int cf_sock_recv(struct cf_sock *s, uint8_t *buf, size_t cap, struct cf_pkt *pk,
                 int timeout_ms)
{
    struct pollfd pf = {.fd = s->fd, .events = POLLIN};
    int pr = poll(&pf, 1, timeout_ms);
    if (pr <= 0)
        return -1;
    struct sockaddr_storage ss;
    struct iovec iov = {.iov_base = buf, .iov_len = cap};
    char cb[256];
    struct msghdr m = {.msg_name = &ss,
                       .msg_namelen = sizeof(ss),
                       .msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = cb,
                       .msg_controllen = sizeof(cb)};
    ssize_t n = recvmsg(s->fd, &m, 0);
    if (n < 0)
        return -1;
    pk->ecn = 0;
    sock_cmsgs(s, &m, pk);
    if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        pk->family = 6;
        memcpy(pk->src, &a->sin6_addr, 16);
        pk->sport = ntohs(a->sin6_port);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        pk->family = 4;
        memset(pk->src, 0, 16);
        memcpy(pk->src, &a->sin_addr, 4);
        pk->sport = ntohs(a->sin_port);
    }
    return (int)n;
}
