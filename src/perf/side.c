/* One mroce-perf endpoint: datapath, context, PD, CQ, connection, buffer. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf/perf.h"

/* MROCE_PERF_LOG=1|2 shows info/debug messages too. */
static void side_log(void *ud, int level, const char *msg)
{
    (void)ud;
    const char *env = getenv("MROCE_PERF_LOG");
    if (level <= (env ? atoi(env) : MROCE_LOG_ERR))
        fprintf(stderr, "mroce: %s\n", msg);
}

void perf_dp_attr(struct mroce_dp_attr *a, const struct perf_opts *o,
                  const char *ip, uint16_t udp_port, uint64_t seed)
{
    memset(a, 0, sizeof(*a));
    a->kind = o->datapath;
    a->local_ip = ip;
    a->port = udp_port;
    a->n_src_ports = o->paths > 64 ? o->paths : 64;
    a->pace_bps = o->pace_bps;
    a->batch = o->batch;
    a->ctx.spray_run = o->spray_run; /* R-PATH-17 */
    a->no_gso = o->no_gso;
    a->no_gro = o->no_gro;
    a->impair.loss = o->loss;
    a->impair.seed = seed * 7919 + 1;
    a->ctx.mtu = o->mtu;
    a->ctx.transport = o->transport;
    a->ctx.hooks.log = side_log;
}

/* A host running busy-polling peers deschedules them for milliseconds,
 * in the guest or under it: on the 2-vCPU VM a write_lat run lost 24% of
 * its CPU time to the hypervisor (steal) and peers went silent for up to
 * 36 ms. The engine's 100 us / 7 rounds (a fabric's values, ~51 ms of
 * silence before RETRY_EXC_ERR) then end live connections, so mroce-perf
 * defaults to 1 ms and 15 rounds (RoCEv2 allows 7 at most); --min-rto and
 * --retry override. */
uint64_t perf_min_rto_ns(const struct perf_opts *o)
{
    return o->min_rto_ns ? o->min_rto_ns : 1000000;
}

uint8_t perf_retry_cnt(const struct perf_opts *o)
{
    if (o->retry_cnt)
        return o->retry_cnt;
    return o->transport == MROCE_TRANSPORT_ROCEV2 ? 7 : 15;
}

static int side_conn(struct perf_side *s, const struct perf_opts *o)
{
    uint32_t per = (o->tx_depth + o->streams - 1) / o->streams;
    s->depth = per < 64 ? 64 : per;
    /* Receives: twice the sends, so a repost that lags a little does not
     * cost an RNR NAK. */
    uint32_t cqd = (uint32_t)o->streams * s->depth * 3 + 64;
    int err = mroce_cq_create(s->ctx, cqd, &s->cq);
    if (err)
        return err;
    struct mroce_conn_attr ca = {.send_cq = s->cq,
                                 .recv_cq = s->cq,
                                 .n_streams = o->streams,
                                 .n_paths = o->paths,
                                 .sq_depth = s->depth,
                                 .rq_depth = 2 * s->depth,
                                 .max_rd = s->depth > 1024 ? 1024 : s->depth,
                                 .min_rto_ns = perf_min_rto_ns(o),
                                 .retry_cnt = perf_retry_cnt(o)};
    return mroce_conn_create(s->pd, &ca, &s->conn);
}

int perf_side_open(struct perf_side *s, const struct perf_opts *o,
                   const char *ip, uint16_t udp_port, uint64_t seed)
{
    memset(s, 0, sizeof(*s));
    struct mroce_dp_attr a;
    struct mroce_dpdk_attr dk = {.eal_argc = o->eal_argc,
                                 .eal_argv = (char **)o->eal_argv};
    perf_dp_attr(&a, o, ip, udp_port, seed);
    if (o->datapath == MROCE_DP_DPDK)
        a.dpdk = &dk;
    int err = mroce_dp_create(&a, &s->dp);
    if (err) {
        fprintf(stderr, "mroce-perf: datapath on %s:%u: %s\n", ip, udp_port,
                mroce_strerror(err));
        return err;
    }
    s->ctx = mroce_dp_ctx(s->dp);
    err = mroce_pd_alloc(s->ctx, &s->pd);
    if (!err)
        err = side_conn(s, o);
    if (err)
        fprintf(stderr, "mroce-perf: set-up: %s\n", mroce_strerror(err));
    return err;
}

uint32_t perf_slots(size_t size)
{
    size_t n = (64u << 20) / (size ? size : 1);
    return n < 2 ? 2 : n > 16 ? 16 : (uint32_t)n; /* lat: 0 in, 1 out */
}

int perf_side_buf(struct perf_side *s, size_t len, int who)
{
    if (s->mr && s->buf_len >= len)
        return 0;
    if (s->mr)
        mroce_dereg_mr(s->mr);
    free(s->buf);
    s->mr = NULL;
    size_t al = (len + 4095) & ~(size_t)4095;
    s->buf = aligned_alloc(4096, al);
    if (!s->buf)
        return MROCE_ENOMEM;
    s->buf_len = al;
    for (size_t i = 0; i < al; i++)
        s->buf[i] = perf_pattern(who, i);
    unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                   MROCE_ACCESS_REMOTE_READ;
    return mroce_reg_mr(s->pd, s->buf, al, acc, &s->mr);
}

void perf_side_remote(const struct perf_side *s, struct perf_remote *r)
{
    r->addr = (uint64_t)(uintptr_t)s->buf;
    r->rkey = s->mr ? mroce_mr_rkey(s->mr) : 0;
    r->len = s->buf_len;
}

void perf_side_close(struct perf_side *s)
{
    if (s->dp)
        mroce_dp_destroy(s->dp); /* closes the context and its objects */
    free(s->buf);
    memset(s, 0, sizeof(*s));
}

void perf_side_fill(struct perf_side *s, int who)
{
    for (size_t i = 0; i < s->buf_len; i++)
        s->buf[i] = perf_pattern(who, i);
}

int perf_progress(struct mroce_dp *dp)
{
    int n = mroce_progress(dp);
    /* Busy polling, but an idle pass lets the peer process run: on a
     * shared host a descheduled peer looks like loss (spurious RTOs). */
    if (n == 0)
        sched_yield();
    return n;
}

int perf_progress_idle(struct mroce_dp *dp, unsigned *idle)
{
    int n = perf_progress(dp);
    if (n != 0)
        *idle = 0;
    else if (++*idle >= PERF_IDLE_SPINS)
        mroce_dp_wait(dp, PERF_IDLE_SLEEP_NS);
    return n;
}
