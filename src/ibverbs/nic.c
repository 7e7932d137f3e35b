/* The soft NIC: one datapath and one progress thread per opened context.
 *
 * The thread owns the datapath and drives the engine: each pass feeds the
 * work requests the application posted (nic_post.c), runs the datapath
 * (receive, timers, send: mroce_progress) and moves the engine's
 * completions into the CQ rings (nic_comp.c). One-sided WRITEs and READs
 * are therefore served while the application does nothing. When passes
 * find nothing to do for a while the thread sleeps in the datapath's
 * wait (the UDP datapath: ppoll on its socket and its eventfd) until a
 * packet, a timer or a doorbell. The application rings the doorbell after
 * posting; it costs a syscall only while the thread sleeps. */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "ibverbs/sv.h"

#define NIC_MAX_SLEEP_NS 100000000ull /* a sleeping NIC looks every 100 ms */
#define NIC_SRC_PORTS 64              /* as mroce-perf: max(paths, 64) */
#define NIC_EAL_ARGS 32

void sv_log(const struct sv_ctx *c, const char *fmt, ...)
{
    if (!c->prof.log)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "mroce verbs: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void nic_eng_log(void *ud, int level, const char *msg)
{
    const struct sv_ctx *c = ud;
    if (level < c->prof.log)
        fprintf(stderr, "mroce: %s\n", msg);
}

void sv_random(void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = getrandom((char *)buf + got, len - got, 0);
        if (n <= 0 && errno != EINTR)
            abort(); /* no secure randomness: hand out no keys */
        got += n > 0 ? (size_t)n : 0;
    }
}

/* ---- the control lock ---- */

void sv_ctl_lock(struct sv_ctx *c)
{
    atomic_fetch_add(&c->ctl_waiting, 1);
    sv_nic_doorbell(c); /* a sleeping NIC holds ctl: make it let go */
    pthread_mutex_lock(&c->ctl);
    atomic_fetch_sub(&c->ctl_waiting, 1);
}

void sv_ctl_unlock(struct sv_ctx *c)
{
    pthread_mutex_unlock(&c->ctl);
}

void sv_nic_doorbell(struct sv_ctx *c)
{
    atomic_store(&c->doorbell, 1);
    if (atomic_load(&c->sleeping) && c->dp) {
        c->wakes++;
        mroce_dp_wake(c->dp);
    }
}

/* ---- the datapath ---- */

static void nic_dp_attr(struct sv_ctx *c, struct mroce_dp_attr *a)
{
    const struct sv_profile *p = &c->prof;
    memset(a, 0, sizeof(*a));
    a->kind = p->datapath;
    a->local_ip = p->ip;
    a->n_src_ports = p->paths > NIC_SRC_PORTS ? p->paths : NIC_SRC_PORTS;
    a->batch = p->batch;
    a->no_gso = p->no_gso;
    a->no_gro = p->no_gro;
    a->impair.loss = p->loss;
    sv_random(&a->impair.seed, sizeof(a->impair.seed));
    /* no rand64 hook: memory keys, ids and sequence starts come from the
     * engine's own CSPRNG (R-SEC-7) */
    a->ctx.hooks.log = nic_eng_log;
    a->ctx.hooks.ud = c;
    a->ctx.mtu = 4096;
    a->ctx.n_planes = p->planes;
    a->ctx.spray_run = p->spray_run;
}

static int nic_eal_argv(struct sv_ctx *c, char **argv, char *buf, size_t cap)
{
    int n = 0;
    argv[n++] = "mroce-verbs";
    snprintf(buf, cap, "%s", c->prof.dpdk_args);
    for (char *t = strtok(buf, " "); t && n < NIC_EAL_ARGS - 1;
         t = strtok(NULL, " "))
        argv[n++] = t;
    argv[n] = NULL;
    return n;
}

/* R-SOFT-1: the profile's port, or the first free one from a start that
 * depends on the process, so processes on one host rarely collide. */
static int nic_dp_create(struct sv_ctx *c, struct mroce_dp_attr *a)
{
    if (c->prof.port) {
        a->port = c->prof.port;
        return mroce_dp_create(a, &c->dp);
    }
    uint32_t start = (uint32_t)getpid() % 1024, rc = MROCE_ESTATE;
    /* only UDP sockets can find their port taken; DPDK owns its port */
    uint32_t tries = a->kind == MROCE_DP_UDP ? SV_PORT_TRIES : 1;
    for (uint32_t i = 0; i < tries; i++) {
        a->port = (uint16_t)(SV_PORT_BASE + (start + i) % SV_PORT_TRIES);
        rc = (uint32_t)mroce_dp_create(a, &c->dp);
        if ((int)rc != MROCE_ESTATE)
            break;
    }
    return (int)rc;
}

static void *nic_main(void *arg);

int sv_nic_open(struct sv_ctx *c)
{
    struct mroce_dp_attr a;
    struct mroce_dpdk_attr dk = {0};
    char *argv[NIC_EAL_ARGS], buf[sizeof(c->prof.dpdk_args)];
    nic_dp_attr(c, &a);
    if (a.kind == MROCE_DP_DPDK) {
        dk.eal_argc = nic_eal_argv(c, argv, buf, sizeof(buf));
        dk.eal_argv = argv;
        a.dpdk = &dk;
    }
    int rc = nic_dp_create(c, &a);
    if (rc) {
        fprintf(stderr, "mroce verbs: no datapath on %s: %s\n", c->prof.ip,
                mroce_strerror(rc));
        return rc == MROCE_EINVAL ? EINVAL : ENODEV;
    }
    c->eng = mroce_dp_ctx(c->dp);
    c->port = a.port;
    mroce_addr_parse(c->prof.ip, &c->addr);
    sv_log(c, "mroce0: %s port %u (lid %u), %u paths", c->prof.ip, c->port,
           c->port, c->prof.paths);
    if (pthread_create(&c->thread, NULL, nic_main, c)) {
        mroce_dp_destroy(c->dp);
        c->dp = NULL;
        return EAGAIN;
    }
    c->running = true;
    return 0;
}

static void nic_log_counters(struct sv_ctx *c)
{
    struct mroce_dp_counters d;
    mroce_dp_get_counters(c->dp, &d);
    sv_log(c,
           "mroce0 port %u closed: %llu passes (%llu by pollers), %llu sleeps, "
           "%llu wakes; "
           "%llu packets out, %llu in, %llu lost by the impairment layer",
           c->port, (unsigned long long)c->passes,
           (unsigned long long)c->assists, (unsigned long long)c->sleeps,
           (unsigned long long)c->wakes, (unsigned long long)d.tx_pkts,
           (unsigned long long)d.rx_pkts, (unsigned long long)d.imp_lost);
}

void sv_nic_close(struct sv_ctx *c)
{
    if (c->running) {
        atomic_store(&c->stop, true);
        mroce_dp_wake(c->dp);
        pthread_join(c->thread, NULL);
        c->running = false;
    }
    if (c->dp)
        nic_log_counters(c);
    if (c->dp)
        mroce_dp_destroy(c->dp); /* closes the engine and its objects */
    c->dp = NULL;
}

/* ---- the thread ---- */

/* The pass receives before it sends and, in between, delivers the
 * completions and feeds what the application posted meanwhile: a
 * completion (and the data a WRITE placed) does not wait behind the send
 * system call of the same pass, and a response the application posts as
 * soon as it sees a request leaves in the same burst as the ACK of that
 * request (R-ACK-9 still puts the ACK first) instead of one pass later. */
int sv_nic_pass(struct sv_ctx *c)
{
    int n = sv_nic_feed(c);
    int rx = mroce_progress_rx(c->dp);
    int done = sv_nic_complete(c);
    if (rx > 0 || done > 0)
        n += rx + done + sv_nic_feed(c);
    int tx = mroce_progress_tx(c->dp);
    if (tx > 0)
        n += tx;
    done += sv_nic_complete(c);
    c->pass_rx = rx > 0 ? rx : 0;
    c->pass_done = done;
    c->passes++;
    return n;
}

/* Application-assisted progress (MROCE_VERBS_ASSIST=1, docs/verbs.md): a
 * thread that polls an empty CQ runs one NIC pass itself when the NIC
 * thread is not in one (the control lock is free), so a polling
 * application moves its own packets without waiting for the NIC thread
 * to be scheduled. The NIC thread still owns the datapath when nobody
 * polls: one-sided operations need no caller. Returns what the pass
 * moved, or -1 if none ran. */
int sv_nic_assist(struct sv_ctx *c)
{
    if (atomic_load(&c->ctl_waiting))
        return -1;
    if (pthread_mutex_trylock(&c->ctl)) {
        if (atomic_load(&c->sleeping))
            sv_nic_doorbell(c); /* it sleeps holding ctl: wake it */
        return -1;
    }
    int n = sv_nic_pass(c);
    c->assists++;
    pthread_mutex_unlock(&c->ctl);
    return n;
}

/* Sleeps in the datapath's wait unless something was posted since the
 * last pass (the doorbell); an application thread waiting for ctl rings
 * the doorbell too. ctl is held: the wait reads the engine's timers. */
static void nic_sleep(struct sv_ctx *c)
{
    atomic_store(&c->sleeping, true);
    if (!atomic_exchange(&c->doorbell, 0) && !atomic_load(&c->stop) &&
        !atomic_load(&c->ctl_waiting)) {
        c->sleeps++;
        mroce_dp_wait(c->dp, NIC_MAX_SLEEP_NS);
    }
    atomic_store(&c->sleeping, false);
}

/* Let an application thread that waits for ctl have it. */
static void nic_give_way(struct sv_ctx *c)
{
    while (atomic_load(&c->ctl_waiting) && !atomic_load(&c->stop))
        sched_yield();
}

static void *nic_main(void *arg)
{
    struct sv_ctx *c = arg;
    uint32_t idle = 0;
    while (!atomic_load(&c->stop)) {
        nic_give_way(c);
        if (pthread_mutex_trylock(&c->ctl)) {
            sched_yield(); /* a poller runs a pass: it needs no help */
            continue;
        }
        atomic_store(&c->doorbell, 0);
        int n = sv_nic_pass(c);
        bool handed = c->pass_rx > 0 || c->pass_done > 0;
        if (n == 0 && ++idle >= c->prof.spins) {
            nic_sleep(c);
            idle = 0;
        }
        pthread_mutex_unlock(&c->ctl);
        if (n > 0 || atomic_load(&c->doorbell))
            idle = 0;
        if (atomic_load(&c->doorbell))
            continue; /* posted during the pass: feed it now */
        /* Idle, or something arrived for the application: let the peer
         * process or the thread that waits for it have the core (with
         * a core of its own, the yield returns at once). */
        if (n == 0 || handed)
            sched_yield();
    }
    return NULL;
}
