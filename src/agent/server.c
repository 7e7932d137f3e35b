/* The agent's control server: a TCP (or Unix stream) socket, one client at
 * a time, one JSON request per line answered by one JSON reply per line
 * (docs/conformance.md, "Transport"). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/agent.h"
#include "engine/fault.h"

struct agent_cmd {
    const char *name;
    agent_cmd_fn fn;
};

static json_t *agent_cmd_quit(struct agent *a, json_t *req)
{
    (void)req;
    a->quit = true;
    return agent_ok();
}

static const struct agent_cmd agent_cmds[] = {
    {"hello", agent_cmd_hello},
    {"ctx_open", agent_cmd_ctx_open},
    {"ctx_close", agent_cmd_ctx_close},
    {"ctx_counters", agent_cmd_ctx_counters},
    {"mr_reg", agent_cmd_mr_reg},
    {"mr_dereg", agent_cmd_mr_dereg},
    {"mem_write", agent_cmd_mem_write},
    {"mem_read", agent_cmd_mem_read},
    {"fault", agent_cmd_fault},
    {"conn_create", agent_cmd_conn_create},
    {"conn_connect", agent_cmd_conn_connect},
    {"conn_state", agent_cmd_conn_state},
    {"conn_disconnect", agent_cmd_conn_disconnect},
    {"conn_destroy", agent_cmd_conn_destroy},
    {"conn_counters", agent_cmd_conn_counters},
    {"post", agent_cmd_post},
    {"poll", agent_cmd_poll},
    {"path_info", agent_cmd_path_info},
    {"path_repath", agent_cmd_path_repath},
    {"path_enable", agent_cmd_path_enable},
    {"conn_secret", agent_cmd_conn_secret},
    {"cm_listen", agent_cmd_cm_listen},
    {"cm_dial", agent_cmd_cm_dial},
    {"cm_result", agent_cmd_cm_result},
    {"cm_close", agent_cmd_cm_close},
    {"quit", agent_cmd_quit},
};

json_t *agent_handle(struct agent *a, json_t *req)
{
    const char *cmd = agent_get_str(req, "cmd", NULL);
    json_t *rep = NULL;
    for (size_t i = 0; cmd && i < sizeof(agent_cmds) / sizeof(agent_cmds[0]);
         i++)
        if (!strcmp(cmd, agent_cmds[i].name))
            rep = agent_cmds[i].fn(a, req);
    if (!rep)
        rep = agent_err("unsupported", "unknown command %s",
                        cmd ? cmd : "(none)");
    json_t *id = json_object_get(req, "id");
    if (id)
        json_object_set(rep, "id", id);
    return rep;
}

/* ---- sockets ---- */

static int agent_listen_unix(const char *path)
{
    struct sockaddr_un su = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(su.sun_path))
        return -1;
    strcpy(su.sun_path, path);
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&su, sizeof(su)) < 0 ||
        listen(fd, 4) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* "HOST:PORT" (PORT 0: any free port, written to port_file). */
static int agent_listen_tcp(const char *spec, const char *port_file)
{
    char host[256];
    const char *colon = strrchr(spec, ':');
    if (!colon || (size_t)(colon - spec) >= sizeof(host))
        return -1;
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = 0;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                    *ai;
    if (getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai))
        return -1;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0), one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
        listen(fd, 4) < 0) {
        freeaddrinfo(ai);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &len);
    int port =
        ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                       : ((struct sockaddr_in *)&ss)->sin_port);
    FILE *f = port_file ? fopen(port_file, "w") : NULL;
    if (f) {
        fprintf(f, "%d\n", port);
        fclose(f);
    }
    if (!port_file)
        fprintf(stderr, "mroce-agent: listening on %s (port %d)\n", spec, port);
    return fd;
}

static int agent_listen(const struct agent_opts *o)
{
    if (!strncmp(o->listen, "unix:", 5))
        return agent_listen_unix(o->listen + 5);
    return agent_listen_tcp(o->listen, o->port_file);
}

/* ---- one client ---- */

static bool agent_write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

static bool agent_reply(struct agent *a, int fd, const char *line)
{
    json_error_t je;
    json_t *req = json_loads(line, 0, &je);
    json_t *rep = req && json_is_object(req)
                      ? agent_handle(a, req)
                      : agent_err("invalid", "not a JSON object: %s", je.text);
    char *s = json_dumps(rep, JSON_COMPACT);
    if (a->o.verbose)
        fprintf(stderr, "> %s\n< %s\n", line, s ? s : "(null)");
    size_t n = s ? strlen(s) : 0;
    char *out = s ? realloc(s, n + 2) : NULL;
    if (out) { /* one write: a reply in two segments waits for a delayed ACK */
        out[n] = '\n';
        s = out;
    }
    bool ok = out && agent_write_all(fd, s, n + 1);
    free(s);
    json_decref(rep);
    json_decref(req);
    return ok;
}

static void agent_serve(struct agent *a, int fd)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf && !a->quit) {
        char *nl = memchr(buf, '\n', len);
        if (nl) {
            *nl = 0;
            if (!agent_reply(a, fd, buf))
                break;
            len -= (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, len);
            continue;
        }
        if (len == cap &&
            (cap >= AGENT_MAX_LINE || !(buf = realloc(buf, cap *= 2))))
            break;
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    free(buf);
}

int agent_run(const struct agent_opts *o)
{
    static struct agent a; /* large handle tables: not on the stack */
    a.o = *o;
    if (o->fault && (a.fault_id = mroce_fault_lookup(o->fault)) < 0) {
        if (a.fault_id == MROCE_ENOTSUP)
            fprintf(stderr, "mroce-agent: --fault %s: %s\n", o->fault,
                    AGENT_NO_FAULTS);
        else
            fprintf(stderr, "mroce-agent: no fault named %s\n", o->fault);
        return 2;
    }
    mroce_fault_set_process(a.fault_id);
    int lfd = agent_listen(o);
    if (lfd < 0) {
        fprintf(stderr, "mroce-agent: cannot listen on %s: %s\n", o->listen,
                strerror(errno));
        return 1;
    }
    while (!a.quit) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), one = 1;
        if (fd < 0 && errno == EINTR)
            continue;
        if (fd < 0)
            break;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        agent_serve(&a, fd);
        close(fd);
        agent_free_all(&a); /* a client's objects die with it */
        if (o->once)
            break;
    }
    close(lfd);
    if (!strncmp(o->listen, "unix:", 5))
        unlink(o->listen + 5);
    return 0;
}
