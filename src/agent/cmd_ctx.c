/* Agent commands on the endpoint: hello (capabilities), contexts, memory
 * regions and their bytes, endpoint counters, engine faults. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/agent.h"
#include "engine/fault.h"

static const char *const agent_caps[] = {
    "write",         "write_imm",
    "send",          "send_imm",
    "read",          "recv",
    "mem",           "mr.dereg",
    "counters.ctx",  "counters.conn",
    "path.info",     "path.repath",
    "path.enable",   "conn.disconnect",
    "conn.state",    "conn.attr",
    "conn.init_seq", "cm",
    "secure",        "fault",
};

static json_t *agent_fault_list(void)
{
    json_t *arr = json_array();
    for (int id = 1; mroce_fault_get(id); id++) {
        const struct mroce_fault_info *f = mroce_fault_get(id);
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "name", f->name,
                                             "rule", f->rule, "what", f->what));
    }
    return arr;
}

json_t *agent_cmd_hello(struct agent *a, json_t *req)
{
    (void)req;
    json_t *caps = json_array();
    for (size_t i = 0; i < sizeof(agent_caps) / sizeof(agent_caps[0]); i++)
        /* the CM speaks TCP through the kernel, which does not own a DPDK
         * port's address */
        if ((strcmp(agent_caps[i], "cm") || a->o.dp_kind == MROCE_DP_UDP) &&
            (strcmp(agent_caps[i], "fault") || mroce_fault_built()))
            json_array_append_new(caps, json_string(agent_caps[i]));
    const struct mroce_fault_info *f = mroce_fault_get(a->fault_id);
    return json_pack("{s:b, s:s, s:i, s:s, s:[i], s:s, s:o, s:o, s:s?}", "ok",
                     1, "agent", "mroce-agent", "protocol", AGENT_PROTOCOL,
                     "impl", "mroce 0.1", "wire_versions", 1, "datapath",
                     a->o.dp_kind == MROCE_DP_DPDK ? "dpdk" : "udp", "caps",
                     caps, "faults", agent_fault_list(), "fault",
                     f ? f->name : NULL);
}

/* ---- contexts ---- */

static void agent_log(void *ud, int level, const char *msg)
{
    const struct agent *a = ud;
    if (a->o.verbose || level == MROCE_LOG_ERR)
        fprintf(stderr, "mroce-agent: engine: %s\n", msg);
}

/* A UDP port the kernel says is free on addr now (the datapath binds it
 * right after; a race with another process only fails that ctx_open). */
static uint16_t agent_free_port(const struct mroce_addr *addr)
{
    int fam = addr->family == MROCE_AF_INET6 ? AF_INET6 : AF_INET;
    int fd = socket(fam, SOCK_DGRAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_storage ss = {0};
    socklen_t len;
    if (fam == AF_INET) {
        struct sockaddr_in *s = (struct sockaddr_in *)&ss;
        s->sin_family = AF_INET;
        memcpy(&s->sin_addr, addr->ip, 4);
        len = sizeof(*s);
    } else {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
        s->sin6_family = AF_INET6;
        memcpy(&s->sin6_addr, addr->ip, 16);
        len = sizeof(*s);
    }
    uint16_t port = 0;
    if (bind(fd, (struct sockaddr *)&ss, len) == 0 &&
        getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
        port = ntohs(fam == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                    : ((struct sockaddr_in6 *)&ss)->sin6_port);
    close(fd);
    return port;
}

static bool agent_ctx_attr(struct agent *a, json_t *req,
                           struct mroce_dp_attr *da, struct mroce_addr *addr)
{
    int64_t mtu, link, ports, port, run;
    const char *ip = agent_get_str(req, "addr", a->o.ip);
    if (!agent_get_int(req, "mtu", 0, 0, 9000, &mtu) ||
        !agent_get_int(req, "link_mbps", 0, 0, UINT32_MAX, &link) ||
        !agent_get_int(req, "src_ports", 16, 1, MROCE_MAX_SRC_PORTS, &ports) ||
        !agent_get_int(req, "port", 0, 0, 65535, &port) ||
        !agent_get_int(req, "spray_run", 0, 0, MROCE_MAX_SPRAY_RUN, &run) ||
        mroce_addr_parse(ip, addr))
        return false;
    da->kind = a->o.dp_kind;
    da->n_src_ports = (uint32_t)ports;
    da->port = (uint16_t)port;
    da->ctx.mtu = (uint32_t)mtu;
    da->ctx.link_mbps = (uint32_t)link;
    da->ctx.spray_run = (uint32_t)run;
    da->ctx.hooks.log = agent_log;
    da->ctx.hooks.ud = a;
    return true;
}

static int agent_dp_open(struct agent *a, struct mroce_dp_attr *da,
                         struct mroce_addr *addr, const char *ip,
                         struct mroce_dp **dp)
{
    struct mroce_dpdk_attr dk = {.eal_argc = a->o.eal_argc,
                                 .eal_argv = a->o.eal_argv,
                                 .port = a->o.dpdk_port,
                                 .neigh = a->o.neigh,
                                 .n_neigh = a->o.n_neigh};
    da->local_ip = ip;
    da->dpdk = a->o.dp_kind == MROCE_DP_DPDK ? &dk : NULL;
    bool pick = da->port == 0 && a->o.dp_kind == MROCE_DP_UDP;
    int rc = MROCE_ESTATE;
    for (int tries = 0; tries < 8 && rc == MROCE_ESTATE; tries++) {
        if (pick)
            da->port = agent_free_port(addr);
        rc = mroce_dp_create(da, dp);
        if (!pick)
            break;
    }
    return rc;
}

json_t *agent_cmd_ctx_open(struct agent *a, json_t *req)
{
    struct mroce_dp_attr da = {0};
    struct mroce_addr addr;
    if (!agent_ctx_attr(a, req, &da, &addr))
        return agent_err("invalid", "bad context attributes");
    int h = agent_ctx_new(a);
    if (h < 0)
        return agent_err("nomem", "too many contexts");
    struct agent_ctx *c = &a->ctx[h];
    const char *ip = agent_get_str(req, "addr", a->o.ip);
    int rc = agent_dp_open(a, &da, &addr, ip, &c->dp);
    if (rc < 0) {
        c->used = false;
        return agent_err_rc(rc, "datapath");
    }
    c->ctx = mroce_dp_ctx(c->dp);
    snprintf(c->addr, sizeof(c->addr), "%s", ip);
    c->port = da.port ? da.port : MROCE_UDP_PORT;
    if (mroce_pd_alloc(c->ctx, &c->pd) < 0 ||
        mroce_ctx_set_fault_id(c->ctx, a->fault_id) < 0 ||
        mroce_dp_thread_start(c->dp) < 0) {
        agent_ctx_free(a, h);
        return agent_err("internal", "context set-up failed");
    }
    return json_pack("{s:b, s:i, s:s, s:i, s:I}", "ok", 1, "ctx", h + 1, "addr",
                     c->addr, "port", c->port, "max_pkt",
                     (json_int_t)mroce_ctx_max_pkt(c->ctx));
}

json_t *agent_cmd_ctx_close(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_ctx *c = agent_ctx_get(a, req, &err);
    if (!c)
        return err;
    agent_ctx_free(a, (int)(c - a->ctx));
    return agent_ok();
}

#define CNT(o, name, v)                                                        \
    json_object_set_new(o, name, json_integer((json_int_t)(v)))

/* Section 10.2's names for what mroce counts per endpoint. */
json_t *agent_cmd_ctx_counters(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_ctx *c = agent_ctx_get(a, req, &err);
    if (!c)
        return err;
    struct mroce_ctx_counters k;
    mroce_dp_lock(c->dp);
    mroce_ctx_get_counters(c->ctx, &k);
    mroce_dp_unlock(c->dp);
    json_t *o = json_object();
    CNT(o, "rx_pkts", k.rx_pkts);
    CNT(o, "tx_pkts", k.tx_pkts);
    CNT(o, "trunc", k.drop_truncated);
    CNT(o, "version", k.drop_bad_version);
    CNT(o, "opcode", k.drop_bad_opcode);
    CNT(o, "crc", k.drop_bad_crc);
    CNT(o, "payload", k.drop_bad_payload);
    CNT(o, "unknown_conn", k.drop_unknown_conn);
    CNT(o, "bad_src", k.drop_bad_src);
    CNT(o, "planes_down", k.planes_down);
    return json_pack("{s:b, s:o}", "ok", 1, "counters", o);
}

/* ---- memory ---- */

static bool agent_access(json_t *req, unsigned *out)
{
    json_t *arr = json_object_get(req, "access");
    *out = 0;
    if (!arr)
        return true;
    if (!json_is_array(arr))
        return false;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *s = json_string_value(v);
        if (s && !strcmp(s, "local_write"))
            *out |= MROCE_ACCESS_LOCAL_WRITE;
        else if (s && !strcmp(s, "remote_write"))
            *out |= MROCE_ACCESS_REMOTE_WRITE;
        else if (s && !strcmp(s, "remote_read"))
            *out |= MROCE_ACCESS_REMOTE_READ;
        else
            return false;
    }
    return true;
}

json_t *agent_cmd_mr_reg(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_ctx *c = agent_ctx_get(a, req, &err);
    if (!c)
        return err;
    int64_t len, fill;
    unsigned access;
    if (!agent_get_int(req, "len", -1, 1, AGENT_MAX_MR_LEN, &len) ||
        !agent_get_int(req, "fill", 0, 0, 255, &fill) ||
        !agent_access(req, &access))
        return agent_err("invalid", "mr_reg needs len and access");
    int h = agent_mr_new(a);
    if (h < 0)
        return agent_err("nomem", "too many memory regions");
    struct agent_mr *m = &a->mr[h];
    m->ctx = (int)(c - a->ctx);
    m->len = (uint64_t)len;
    m->buf = aligned_alloc(64, ((size_t)len + 63) & ~(size_t)63);
    if (!m->buf) {
        m->used = false;
        return agent_err("nomem", "no memory for the region");
    }
    memset(m->buf, (int)fill, (size_t)len);
    mroce_dp_lock(c->dp);
    int rc = mroce_reg_mr(c->pd, m->buf, (size_t)len, access, &m->mr);
    mroce_dp_unlock(c->dp);
    if (rc < 0) {
        free(m->buf);
        m->used = false;
        return agent_err_rc(rc, "mroce_reg_mr");
    }
    return json_pack("{s:b, s:i, s:I, s:I, s:I, s:I}", "ok", 1, "mr", h + 1,
                     "va", (json_int_t)(uintptr_t)m->buf, "len",
                     (json_int_t)len, "rkey", (json_int_t)mroce_mr_rkey(m->mr),
                     "lkey", (json_int_t)mroce_mr_lkey(m->mr));
}

json_t *agent_cmd_mr_dereg(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_mr *m = agent_mr_get(a, req, &err);
    if (!m)
        return err;
    if (!m->mr)
        return agent_err("state", "already deregistered");
    struct mroce_dp *dp = a->ctx[m->ctx].dp;
    mroce_dp_lock(dp);
    int rc = mroce_dereg_mr(m->mr);
    mroce_dp_unlock(dp);
    if (rc < 0)
        return agent_err_rc(rc, "mroce_dereg_mr");
    m->mr = NULL; /* the bytes stay until the context closes */
    return agent_ok();
}

static bool agent_range(const struct agent_mr *m, json_t *req, int64_t *off,
                        int64_t len_def, int64_t *len)
{
    return agent_get_int(req, "offset", 0, 0, (int64_t)m->len, off) &&
           agent_get_int(req, "len", len_def, 0, (int64_t)m->len - *off, len);
}

json_t *agent_cmd_mem_write(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_mr *m = agent_mr_get(a, req, &err);
    if (!m)
        return err;
    int64_t off, unused;
    const char *hex = agent_get_str(req, "data", NULL);
    if (!agent_range(m, req, &off, 0, &unused) || !hex)
        return agent_err("invalid", "mem_write needs offset and data");
    size_t n = strlen(hex) / 2;
    if ((uint64_t)off + n > m->len)
        return agent_err("range", "beyond the region");
    uint8_t *tmp = malloc(n ? n : 1);
    long got = tmp ? agent_unhex(hex, tmp, n) : -1;
    if (got < 0) {
        free(tmp);
        return agent_err("invalid", "data is not hex");
    }
    struct mroce_dp *dp = a->ctx[m->ctx].dp;
    mroce_dp_lock(dp);
    memcpy(m->buf + off, tmp, (size_t)got);
    mroce_dp_unlock(dp);
    free(tmp);
    return agent_ok();
}

json_t *agent_cmd_mem_read(struct agent *a, json_t *req)
{
    json_t *err;
    struct agent_mr *m = agent_mr_get(a, req, &err);
    if (!m)
        return err;
    int64_t off, len;
    if (!agent_range(m, req, &off, -1, &len) || len < 0)
        return agent_err("invalid", "mem_read needs offset and len");
    uint8_t *tmp = malloc((size_t)len + 1);
    if (!tmp)
        return agent_err("nomem", "mem_read");
    struct mroce_dp *dp = a->ctx[m->ctx].dp;
    mroce_dp_lock(dp);
    memcpy(tmp, m->buf + off, (size_t)len);
    mroce_dp_unlock(dp);
    char *hex = agent_hex(tmp, (size_t)len);
    free(tmp);
    if (!hex)
        return agent_err("nomem", "mem_read");
    json_t *r = json_pack("{s:b, s:s}", "ok", 1, "data", hex);
    free(hex);
    return r;
}

/* ---- faults (mutation runs) ---- */

/* A fault that could not be set everywhere is set nowhere. */
static json_t *agent_cmd_fault_undo(struct agent *a, const char *name, int rc)
{
    mroce_fault_set_process(MROCE_FID_NONE);
    for (int i = 0; i < AGENT_MAX_CTX; i++) {
        if (!a->ctx[i].used)
            continue;
        mroce_dp_lock(a->ctx[i].dp);
        mroce_ctx_set_fault_id(a->ctx[i].ctx, MROCE_FID_NONE);
        mroce_dp_unlock(a->ctx[i].dp);
    }
    a->fault_id = MROCE_FID_NONE;
    return agent_err_rc(rc, name ? name : "fault");
}

json_t *agent_cmd_fault(struct agent *a, json_t *req)
{
    const char *name = agent_get_str(req, "name", NULL);
    int id = name ? mroce_fault_lookup(name) : MROCE_FID_NONE;
    if (id == MROCE_ENOTSUP)
        return agent_err("unsupported", "fault %s: %s", name, AGENT_NO_FAULTS);
    if (id < 0)
        return agent_err("not_found", "no fault named %s", name);
    int rc = mroce_fault_set_process(id); /* the CM's faults */
    for (int i = 0; i < AGENT_MAX_CTX && rc == 0; i++) {
        if (!a->ctx[i].used)
            continue;
        mroce_dp_lock(a->ctx[i].dp);
        rc = mroce_ctx_set_fault_id(a->ctx[i].ctx, id);
        mroce_dp_unlock(a->ctx[i].dp);
    }
    if (rc < 0) /* no context runs half a mutant */
        return agent_cmd_fault_undo(a, name, rc);
    a->fault_id = id;
    return agent_ok();
}
