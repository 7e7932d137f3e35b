/* TCP plumbing of the CM (see sock.h). */
#define _GNU_SOURCE
#include "cm/sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <mroce/mroce_cm.h>

static _Thread_local char cm_err[256];
static _Thread_local int cm_rej;

const char *mroce_cm_errmsg(void)
{
    return cm_err;
}

int mroce_cm_reject_reason(void)
{
    return cm_rej;
}

void cm_set_reject(int reason)
{
    cm_rej = reason;
}

int cm_fail(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cm_err, sizeof(cm_err), fmt, ap);
    va_end(ap);
    return err;
}

int64_t cm_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t cm_deadline(int timeout_ms)
{
    return timeout_ms < 0 ? -1 : cm_now_ms() + timeout_ms;
}

int cm_left_ms(int64_t deadline)
{
    if (deadline < 0)
        return -1;
    int64_t left = deadline - cm_now_ms();
    return left <= 0 ? 0 : (left > 1000000 ? 1000000 : (int)left);
}

void cm_sock_tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static int sock_resolve(const char *host, uint16_t port, int passive,
                        struct addrinfo **res)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = passive ? AI_PASSIVE : 0};
    char ps[8];
    snprintf(ps, sizeof(ps), "%u", port);
    const char *h = host && *host ? host : NULL;
    if (passive && !h)
        hints.ai_family = AF_INET6; /* dual stack: v4-mapped too */
    int rc = getaddrinfo(h, ps, &hints, res);
    if (rc)
        return cm_fail(MROCE_EINVAL, "resolve %s: %s", h ? h : "*",
                       gai_strerror(rc));
    return 0;
}

static int sock_listen_one(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 16)) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

int cm_sock_listen(const char *host, uint16_t port)
{
    struct addrinfo *res;
    int err = sock_resolve(host, port, 1, &res);
    if (err)
        return err;
    int fd = -1;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
        fd = sock_listen_one(ai);
    int e = errno;
    freeaddrinfo(res);
    if (fd < 0)
        return cm_fail(MROCE_ESTATE, "listen %s:%u: %s",
                       host && *host ? host : "*", port, strerror(e));
    return fd;
}

/* One non-blocking connect attempt bounded by the deadline: fd, or -1
 * with errno set. */
static int sock_dial_one(const struct addrinfo *ai, int64_t dl)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    cm_sock_tune(fd);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
        goto fail;
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int rc = poll(&p, 1, cm_left_ms(dl));
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    if (rc <= 0) {
        errno = ETIMEDOUT;
        goto fail;
    }
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
    if (!soerr)
        return fd;
    errno = soerr;
fail:;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

int cm_sock_dial(const char *host, uint16_t port, int timeout_ms)
{
    if (!host || !*host)
        return cm_fail(MROCE_EINVAL, "dial: no host");
    struct addrinfo *res;
    int err = sock_resolve(host, port, 0, &res);
    if (err)
        return err;
    int64_t dl = cm_deadline(timeout_ms);
    int fd = -1, e = 0;
    for (;;) {
        for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
            if ((fd = sock_dial_one(ai, dl)) < 0)
                e = errno;
        /* A refused connect is retried: the server may be starting. */
        if (fd >= 0 || e != ECONNREFUSED || !cm_left_ms(dl))
            break;
        usleep(20000);
    }
    freeaddrinfo(res);
    if (fd < 0)
        return cm_fail(e == ETIMEDOUT ? MROCE_EAGAIN : MROCE_ESTATE,
                       "connect %s:%u: %s", host, port, strerror(e));
    return fd;
}

uint16_t cm_sock_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl))
        return 0;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* A v4-mapped IPv6 address (::ffff:a.b.c.d) is printed as IPv4. */
static int sock_ntop(const struct sockaddr_storage *ss, char *buf, size_t cap)
{
    const void *src;
    int af = ss->ss_family;
    if (af == AF_INET6) {
        const struct in6_addr *a =
            &((const struct sockaddr_in6 *)ss)->sin6_addr;
        src = a;
        if (IN6_IS_ADDR_V4MAPPED(a)) {
            af = AF_INET;
            src = &a->s6_addr[12];
        }
    } else {
        src = &((const struct sockaddr_in *)ss)->sin_addr;
    }
    if (!inet_ntop(af, src, buf, (socklen_t)cap))
        return cm_fail(MROCE_ENOBUFS, "address: %s", strerror(errno));
    return 0;
}

int cm_sock_ip(int fd, int peer, char *buf, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int rc = peer ? getpeername(fd, (struct sockaddr *)&ss, &sl)
                  : getsockname(fd, (struct sockaddr *)&ss, &sl);
    if (rc)
        return cm_fail(MROCE_ESTATE, "address: %s", strerror(errno));
    return sock_ntop(&ss, buf, cap);
}

int cm_sock_peer_addr(int fd, struct mroce_addr *out)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    memset(out, 0, sizeof(*out));
    if (getpeername(fd, (struct sockaddr *)&ss, &sl))
        return cm_fail(MROCE_ESTATE, "address: %s", strerror(errno));
    if (ss.ss_family == AF_INET) {
        out->family = MROCE_AF_INET;
        memcpy(out->ip, &((struct sockaddr_in *)&ss)->sin_addr, 4);
        return 0;
    }
    const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(a)) { /* a dual-stack listener's IPv4 peer */
        out->family = MROCE_AF_INET;
        memcpy(out->ip, &a->s6_addr[12], 4);
    } else {
        out->family = MROCE_AF_INET6;
        memcpy(out->ip, a->s6_addr, 16);
    }
    return 0;
}

int cm_sock_wait(int fd, int64_t deadline)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int rc = poll(&p, 1, cm_left_ms(deadline));
        if (rc >= 0 || errno != EINTR)
            return rc > 0;
    }
}

int cm_sock_send_all(int fd, const uint8_t *buf, size_t len, int64_t deadline)
{
    while (len) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return cm_fail(MROCE_ESTATE, "send: %s", strerror(errno));
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        if (poll(&p, 1, cm_left_ms(deadline)) == 0)
            return cm_fail(MROCE_EAGAIN, "send: timed out");
    }
    return 0;
}
