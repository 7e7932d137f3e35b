/* mroce-perf udp_pingpong: the bare-UDP reference for write_lat. The same
 * syscalls as the UDP datapath (sendmsg, recvmsg with MSG_DONTWAIT, busy
 * polling, sched_yield when idle like perf_progress), no engine: the client
 * sends SIZE bytes, the server echoes them, the client reports half the round
 * trip. A 1-byte datagram 'Q' ends the server. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "perf/perf.h"

#define PP_RETRY_NS 200000000ull /* resend a lost ping after 200 ms */

static int pp_socket(const char *ip, uint16_t port, struct sockaddr_storage *sa,
                     socklen_t *sl)
{
    struct addrinfo hints = {.ai_socktype = SOCK_DGRAM,
                             .ai_flags = AI_NUMERICHOST};
    struct addrinfo *res;
    char ps[8];
    snprintf(ps, sizeof(ps), "%u", port);
    if (getaddrinfo(ip, ps, &hints, &res)) {
        fprintf(stderr, "udp_pingpong: bad address %s\n", ip);
        return -1;
    }
    memcpy(sa, res->ai_addr, res->ai_addrlen);
    *sl = res->ai_addrlen;
    int fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    freeaddrinfo(res);
    return fd;
}

static int pp_bind(const char *ip, uint16_t port)
{
    struct sockaddr_storage sa;
    socklen_t sl;
    int fd = pp_socket(ip, port, &sa, &sl);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sl)) {
        fprintf(stderr, "udp_pingpong: bind %s:%u: %s\n", ip, port,
                strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static ssize_t pp_send(int fd, const void *buf, size_t len,
                       const struct sockaddr_storage *to, socklen_t tl)
{
    struct iovec iov = {(void *)buf, len};
    struct msghdr m = {.msg_name = (void *)to,
                       .msg_namelen = tl,
                       .msg_iov = &iov,
                       .msg_iovlen = 1};
    return sendmsg(fd, &m, MSG_DONTWAIT);
}

static ssize_t pp_recv(int fd, void *buf, size_t cap,
                       struct sockaddr_storage *from, socklen_t *fl)
{
    struct iovec iov = {buf, cap};
    struct msghdr m = {.msg_name = from,
                       .msg_namelen = sizeof(*from),
                       .msg_iov = &iov,
                       .msg_iovlen = 1};
    ssize_t n = recvmsg(fd, &m, MSG_DONTWAIT);
    if (fl)
        *fl = m.msg_namelen;
    return n;
}

/* Echoes one datagram if there is one: 1 echoed, 0 none, -1 quit. */
static int pp_echo(int fd, uint8_t *buf, size_t cap)
{
    struct sockaddr_storage from;
    socklen_t fl;
    ssize_t n = pp_recv(fd, buf, cap, &from, &fl);
    if (n < 0)
        return 0;
    if (n == 1 && buf[0] == 'Q')
        return -1;
    pp_send(fd, buf, (size_t)n, &from, fl);
    return 1;
}

struct pp {
    const struct perf_opts *o;
    int cfd, sfd; /* sfd >= 0: loopback, this thread echoes too */
    struct sockaddr_storage to;
    socklen_t tl;
    uint8_t *buf;
    uint64_t deadline;
};

/* One round trip (resending after a loss); its half in ns, or 0. */
static uint64_t pp_one(struct pp *p)
{
    size_t size = p->o->size;
    for (;;) {
        uint64_t t0 = mroce_dp_now_ns();
        pp_send(p->cfd, p->buf, size, &p->to, p->tl);
        while (mroce_dp_now_ns() - t0 < PP_RETRY_NS) {
            if (p->sfd >= 0)
                pp_echo(p->sfd, p->buf + size, size);
            if (pp_recv(p->cfd, p->buf, size, NULL, NULL) == (ssize_t)size)
                return (mroce_dp_now_ns() - t0) / 2;
            sched_yield(); /* as perf_progress does when idle */
        }
        if (mroce_dp_now_ns() > p->deadline)
            return 0;
    }
}

static int pp_client(struct pp *p, struct perf_result *res)
{
    uint64_t n = p->o->iters, got = 0;
    uint64_t *lat = calloc(n, sizeof(*lat));
    if (!lat)
        return -1;
    for (int w = 0; w < 10; w++) /* warm-up: caches, ARP */
        pp_one(p);
    uint64_t t0 = mroce_dp_now_ns();
    while (got < n && (lat[got] = pp_one(p)))
        got++;
    memset(res, 0, sizeof(*res));
    res->size = p->o->size;
    res->iters = got;
    res->secs = (double)(mroce_dp_now_ns() - t0) / 1e9;
    perf_lat_stats(lat, got, res);
    free(lat);
    return got == n ? 0 : -1;
}

static int pp_run_client(struct perf_opts *o, int sfd, const char *host,
                         uint16_t port)
{
    struct pp p = {.o = o, .sfd = sfd};
    p.deadline = mroce_dp_now_ns() + (uint64_t)o->timeout_s * 1000000000ull;
    p.cfd = pp_socket(host, port, &p.to, &p.tl);
    p.buf = calloc(2, o->size + 64);
    struct perf_result res;
    int rc = p.cfd >= 0 && p.buf ? pp_client(&p, &res) : -1;
    if (p.cfd >= 0 && sfd < 0) /* tell the server to stop */
        for (int i = 0; i < 3; i++)
            pp_send(p.cfd, "Q", 1, &p.to, p.tl);
    if (!rc && !o->quiet) {
        perf_report_header(o);
        perf_report_line(o, &res);
    }
    if (!rc)
        perf_report_json(o, &res, 1, NULL);
    if (p.cfd >= 0)
        close(p.cfd);
    free(p.buf);
    if (rc)
        fprintf(stderr, "udp_pingpong: failed (timeout or lost peer)\n");
    return rc ? 1 : 0;
}

static int pp_server(struct perf_opts *o)
{
    const char *ip = o->local_ip ? o->local_ip : "0.0.0.0";
    int fd = pp_bind(ip, o->udp_port);
    if (fd < 0)
        return 1;
    size_t cap = 65536;
    uint8_t *buf = malloc(cap);
    uint64_t dl = mroce_dp_now_ns() + (uint64_t)o->timeout_s * 1000000000ull;
    int rc;
    while (buf && (rc = pp_echo(fd, buf, cap)) >= 0 && mroce_dp_now_ns() < dl)
        if (!rc)
            sched_yield();
    free(buf);
    close(fd);
    return 0;
}

int perf_main_pingpong(struct perf_opts *o)
{
    if (o->size > 65000) {
        fprintf(stderr, "udp_pingpong: -s at most 65000\n");
        return 1;
    }
    if (o->mode == PERF_SERVER)
        return pp_server(o);
    if (o->mode == PERF_CLIENT)
        return pp_run_client(o, -1, o->host,
                             o->udp_port == 4798 ? 4797 : o->udp_port);
    const char *ip = o->local_ip ? o->local_ip : "127.0.0.1";
    int sfd = pp_bind(ip, o->udp_port);
    if (sfd < 0)
        return 1;
    int rc = pp_run_client(o, sfd, ip, o->udp_port);
    close(sfd);
    return rc;
}
