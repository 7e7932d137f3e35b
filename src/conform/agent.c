/* The suite's client of the agent: starts mroce's own agent when no target
 * is named, connects over TCP or a Unix socket, and sends one JSON request
 * per line (docs/conformance.md, "Transport"). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conform/cf.h"

#define AGENT_REPLY_MS 60000 /* the longest poll wait plus margin */

static int agent_dial_unix(const char *path)
{
    struct sockaddr_un su = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(su.sun_path))
        return -1;
    strcpy(su.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&su, sizeof(su)) < 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static int agent_dial_tcp(const char *target)
{
    char host[256];
    const char *colon = strrchr(target, ':');
    if (!colon || (size_t)(colon - target) >= sizeof(host))
        return -1;
    memcpy(host, target, (size_t)(colon - target));
    host[colon - target] = 0;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, colon + 1, &hints, &ai))
        return -1;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0), one = 1;
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        close(fd);
        fd = -1;
    }
    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    freeaddrinfo(ai);
    return fd;
}

static json_t *agent_hello(struct cf_agent *a)
{
    json_t *rep = cf_agent_call(a, json_pack("{s:s}", "cmd", "hello"));
    if (!rep || !json_is_true(json_object_get(rep, "ok"))) {
        json_decref(rep);
        return NULL;
    }
    return rep;
}

int cf_agent_connect(struct cf_agent *a, const char *target)
{
    if (target != a->target)
        snprintf(a->target, sizeof(a->target), "%s", target);
    a->fd = !strncmp(target, "unix:", 5) ? agent_dial_unix(target + 5)
                                         : agent_dial_tcp(target);
    if (a->fd < 0) {
        snprintf(a->err, sizeof(a->err), "cannot connect to %s: %s", target,
                 strerror(errno));
        return -1;
    }
    a->rlen = 0;
    json_decref(a->hello);
    a->hello = agent_hello(a);
    if (!a->hello) {
        snprintf(a->err, sizeof(a->err), "%s does not answer hello", target);
        return -1;
    }
    return 0;
}

static int agent_wait_port(const char *file, pid_t pid)
{
    for (int i = 0; i < 500; i++) {
        FILE *f = fopen(file, "r");
        int port = 0;
        if (f) {
            if (fscanf(f, "%d", &port) != 1)
                port = 0;
            fclose(f);
        }
        if (port > 0)
            return port;
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return -1;
        cf_sleep_us(10000);
    }
    return -1;
}

static int agent_start(struct cf_agent *a, const char *ip)
{
    char file[64], listen[96];
    snprintf(file, sizeof(file), "/tmp/mroce-conform-agent.%d", (int)getpid());
    unlink(file);
    snprintf(listen, sizeof(listen), "%s:0", "127.0.0.1");
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setpgid(0, 0);
        char *argv[] = {
            a->bin,        "--listen", listen,
            "--port-file", file,       "--ip",
            (char *)ip,    "--once",   a->fault[0] ? "--fault" : NULL,
            a->fault,      NULL};
        execv(a->bin, argv);
        _exit(127);
    }
    a->pid = pid;
    int port = agent_wait_port(file, pid);
    unlink(file);
    if (port < 0) {
        snprintf(a->err, sizeof(a->err), "agent %.200s did not start", a->bin);
        return -1;
    }
    char target[64];
    snprintf(target, sizeof(target), "127.0.0.1:%d", port);
    return cf_agent_connect(a, target);
}

static char agent_ip[64];

int cf_agent_spawn(struct cf_agent *a, const char *bin, const char *ip)
{
    snprintf(a->bin, sizeof(a->bin), "%s", bin);
    snprintf(agent_ip, sizeof(agent_ip), "%s", ip);
    return agent_start(a, ip);
}

static void agent_reap(struct cf_agent *a)
{
    if (a->fd >= 0)
        close(a->fd);
    a->fd = -1;
    if (a->pid > 0) {
        kill(a->pid, SIGKILL);
        waitpid(a->pid, NULL, 0);
        a->pid = 0;
    }
}

int cf_agent_respawn(struct cf_agent *a)
{
    if (!a->bin[0])
        return cf_agent_connect(a, a->target);
    agent_reap(a);
    return agent_start(a, agent_ip);
}

void cf_agent_close(struct cf_agent *a)
{
    if (a->fd >= 0) {
        json_decref(cf_agent_call(a, json_pack("{s:s}", "cmd", "quit")));
        close(a->fd);
        a->fd = -1;
    }
    if (a->pid > 0) {
        for (int i = 0; i < 100 && waitpid(a->pid, NULL, WNOHANG) == 0; i++)
            cf_sleep_us(10000);
        kill(a->pid, SIGKILL);
        waitpid(a->pid, NULL, 0);
        a->pid = 0;
    }
    json_decref(a->hello);
    a->hello = NULL;
    free(a->rbuf);
    a->rbuf = NULL;
}

static bool agent_send_line(struct cf_agent *a, char *s)
{
    size_t n = strlen(s);
    s[n++] = '\n'; /* one segment per request (the caller made room) */
    while (n) {
        ssize_t w = send(a->fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        s += w;
        n -= (size_t)w;
    }
    return true;
}

/* The next line of the agent's replies, NUL-terminated in rbuf. */
static char *agent_read_line(struct cf_agent *a, size_t *used)
{
    for (;;) {
        char *nl = a->rlen ? memchr(a->rbuf, '\n', a->rlen) : NULL;
        if (nl) {
            *nl = 0;
            *used = (size_t)(nl + 1 - a->rbuf);
            return a->rbuf;
        }
        if (a->rlen + 4096 > a->rcap) {
            size_t cap = a->rcap ? a->rcap * 2 : 1 << 16;
            char *b = realloc(a->rbuf, cap);
            if (!b)
                return NULL;
            a->rbuf = b;
            a->rcap = cap;
        }
        struct pollfd pf = {.fd = a->fd, .events = POLLIN};
        if (poll(&pf, 1, AGENT_REPLY_MS) <= 0)
            return NULL;
        ssize_t r = recv(a->fd, a->rbuf + a->rlen, a->rcap - a->rlen, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return NULL;
        a->rlen += (size_t)r;
    }
}

/* The agent is gone: later calls fail at once. */
static json_t *agent_lost(struct cf_agent *a, const char *what)
{
    snprintf(a->err, sizeof(a->err), "agent connection lost (%s)", what);
    if (a->fd >= 0)
        close(a->fd);
    a->fd = -1;
    return NULL;
}

json_t *cf_agent_call(struct cf_agent *a, json_t *req)
{
    if (!req)
        return NULL;
    json_object_set_new(req, "id", json_integer(++a->next_id));
    char *d = a->fd >= 0 ? json_dumps(req, JSON_COMPACT) : NULL;
    char *s = d ? realloc(d, strlen(d) + 2) : NULL;
    if (!s)
        free(d);
    json_decref(req);
    if (!s || !agent_send_line(a, s)) {
        free(s);
        return agent_lost(a, "send");
    }
    free(s);
    size_t used;
    char *line = agent_read_line(a, &used);
    if (!line)
        return agent_lost(a, "reply");
    json_t *rep = json_loads(line, 0, NULL);
    a->rlen -= used;
    memmove(a->rbuf, a->rbuf + used, a->rlen);
    if (!rep)
        snprintf(a->err, sizeof(a->err), "agent reply is not JSON");
    return rep;
}

bool cf_agent_has(const struct cf_agent *a, const char *cap)
{
    json_t *caps = json_object_get(a->hello, "caps");
    size_t i;
    json_t *v;
    json_array_foreach(caps, i, v)
    {
        if (json_is_string(v) && !strcmp(json_string_value(v), cap))
            return true;
    }
    return false;
}
