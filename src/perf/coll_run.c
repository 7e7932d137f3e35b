/* The iterations of mroce-perf coll (see coll.h for the protocol): every
 * rank runs the collective on its own rank; rank 0 leads the barriers,
 * times the iterations and prints the result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/allgather.h"
#include "coll/allreduce.h"
#include "coll/alltoall.h"
#include "perf/coll.h"
#include "perf/ctl.h"

/* ---- One collective on this rank ---- */

struct coll_x {
    int op;
    void *h;
};

static int x_start(struct coll_rank *k, struct coll_x *x)
{
    const struct coll_shape *sh = &k->sh;
    x->op = sh->op;
    if (sh->op == COLL_ALLREDUCE) {
        struct mroce_coll_allreduce_args a = {.count = sh->unit,
                                              .slice_count = sh->slice,
                                              .flavour = sh->flavour};
        return mroce_coll_allreduce_start(
            k->comm, &a, (struct mroce_coll_allreduce **)&x->h);
    }
    if (sh->op == COLL_ALLTOALL) {
        struct mroce_coll_alltoall_args a = {
            .block = sh->unit, .schedule = MROCE_COLL_A2A_CONCURRENT};
        return mroce_coll_alltoall_start(k->comm, &a,
                                         (struct mroce_coll_alltoall **)&x->h);
    }
    struct mroce_coll_allgather_args a = {.bytes = sh->unit,
                                          .slice_bytes = sh->slice};
    return mroce_coll_allgather_start(k->comm, &a,
                                      (struct mroce_coll_allgather **)&x->h);
}

static int x_progress(struct coll_x *x)
{
    if (x->op == COLL_ALLREDUCE)
        return mroce_coll_allreduce_progress(x->h);
    if (x->op == COLL_ALLTOALL)
        return mroce_coll_alltoall_progress(x->h);
    return mroce_coll_allgather_progress(x->h);
}

static void x_free(struct coll_x *x)
{
    if (x->op == COLL_ALLREDUCE)
        mroce_coll_allreduce_free(x->h);
    else if (x->op == COLL_ALLTOALL)
        mroce_coll_alltoall_free(x->h);
    else
        mroce_coll_allgather_free(x->h);
    x->h = NULL;
}

/* 1 if this rank's result is exact. */
static int rank_check(struct coll_rank *k)
{
    long bad;
    if (k->sh.op == COLL_ALLREDUCE)
        bad = mroce_coll_allreduce_check(k->comm, k->sh.unit, NULL);
    else if (k->sh.op == COLL_ALLTOALL)
        bad = mroce_coll_alltoall_check(k->comm, k->sh.unit, NULL);
    else
        bad = mroce_coll_allgather_check(k->comm, k->sh.unit, NULL);
    if (bad >= 0)
        fprintf(stderr,
                "mroce-perf coll: rank %d: wrong result at byte or "
                "float %ld\n",
                k->r, bad);
    return bad < 0;
}

static void rank_poison(struct coll_rank *k)
{
    struct mroce_coll_rank *me = &k->comm->rank[k->r];
    memset(me->rbuf, 0xa5, k->sh.bytes);
    memset(me->scratch, 0x5a, k->sh.bytes);
}

/* ---- Control messages ---- */

static int ctl_send(struct coll_rank *k, int p, uint32_t cmd, const uint64_t *v,
                    int nv)
{
    struct perf_ctl c = {.cmd = cmd};
    for (int i = 0; i < nv && i < PERF_CTL_NV; i++)
        c.v[i] = v[i];
    uint8_t buf[PERF_CTL_LEN];
    perf_ctl_encode(&c, buf);
    return mroce_cm_send(k->cm[p], buf, sizeof(buf));
}

/* 1 got one, 0 none yet, negative on a broken channel. */
static int ctl_try(struct coll_rank *k, int p, struct perf_ctl *c)
{
    uint8_t buf[PERF_CTL_LEN + 8];
    int n = mroce_cm_recv(k->cm[p], buf, sizeof(buf), 0);
    if (n == MROCE_EAGAIN)
        return 0;
    if (n < 0 || perf_ctl_decode(buf, n, c)) {
        fprintf(stderr, "mroce-perf coll: rank %d: control from rank %d: %s\n",
                k->r, p, n < 0 ? mroce_cm_errmsg() : "malformed");
        return n < 0 ? n : MROCE_EPROTO;
    }
    return 1;
}

static int ctl_bcast(struct coll_rank *k, uint32_t cmd, const uint64_t *v,
                     int nv)
{
    for (int p = 1; p < k->sh.n; p++) {
        int err = ctl_send(k, p, cmd, v, nv);
        if (err)
            return err;
    }
    return 0;
}

/* ---- Running ---- */

/* The collective until done on this rank. Rank > 0 also watches rank 0's
 * channel for QUIT (another rank failed): returns 1 then. */
static int run_one(struct coll_rank *k, struct coll_x *x)
{
    int err = x_start(k, x);
    unsigned polls = 0;
    while (!err) {
        perf_progress(k->dp);
        int rc = x_progress(x);
        if (rc)
            err = rc < 0 ? rc : 0;
        if (rc)
            break;
        if (coll_rank_expired(k))
            err = MROCE_EAGAIN;
        struct perf_ctl c;
        if (!err && k->r && ++polls % 64 == 0 && ctl_try(k, 0, &c))
            err = 1; /* QUIT, or a broken channel: stop */
    }
    if (x->h)
        x_free(x);
    int st = k->comm->wc_status;
    if (err < 0)
        fprintf(stderr, "mroce-perf coll: rank %d: %s: %s%s%s\n", k->r,
                coll_op_name(k->sh.op),
                err == MROCE_EAGAIN ? "timed out" : mroce_strerror(err),
                st ? ": a completion failed with " : "",
                st ? mroce_wc_status_str(st) : "");
    return err;
}

/* Waits for a control message from p, keeping the datapath going (peers
 * may still need our ACKs). */
static int wait_ctl(struct coll_rank *k, int p, struct perf_ctl *c)
{
    for (;;) {
        perf_progress(k->dp);
        int rc = ctl_try(k, p, c);
        if (rc)
            return rc < 0 ? rc : 0;
        if (coll_rank_expired(k)) {
            fprintf(stderr, "mroce-perf coll: rank %d: timed out\n", k->r);
            return MROCE_EAGAIN;
        }
    }
}

/* Rank > 0: tell rank 0 the mesh is up, then follow it until QUIT. */
static int follow(struct coll_rank *k)
{
    int ok = 1;
    if (ctl_send(k, 0, PERF_CMD_END, NULL, 0))
        return MROCE_ESTATE;
    for (;;) {
        struct perf_ctl c;
        int err = wait_ctl(k, 0, &c);
        if (err || c.cmd == PERF_CMD_QUIT)
            return err ? err : ok ? 0 : MROCE_EPROTO;
        if (c.cmd == PERF_CMD_RUN) { /* check the last run, then poison */
            ok &= rank_check(k);
            rank_poison(k);
            err = ctl_send(k, 0, PERF_CMD_END, NULL, 0);
        } else if (c.cmd == PERF_CMD_GO) {
            struct coll_x x = {0};
            err = run_one(k, &x);
            if (err)
                return err;
            ok &= !c.v[1] || rank_check(k);
            struct coll_counts n;
            coll_rank_counts(k, &n);
            uint64_t v[8] = {(uint64_t)ok, n.tx_data, n.retx,   n.rto,
                             n.tlp,        n.rnr,     n.ecn_ce, n.imp_lost};
            err = ctl_send(k, 0, c.v[1] ? PERF_CMD_RESULT : PERF_CMD_END, v, 8);
        }
        if (err)
            return err;
    }
}

/* ---- Rank 0 ---- */

struct lead {
    uint64_t iters;
    double t_sum, t_min; /* seconds */
    int ok;
    struct coll_counts sum;
};

static void add_counts(struct lead *l, const uint64_t *v)
{
    l->ok &= v[0] == 1;
    l->sum.tx_data += v[1];
    l->sum.retx += v[2];
    l->sum.rto += v[3];
    l->sum.tlp += v[4];
    l->sum.rnr += v[5];
    l->sum.ecn_ce += v[6];
    l->sum.imp_lost += v[7];
}

/* Waits for `cmd` from every other rank. */
static int gather(struct coll_rank *k, uint32_t cmd, struct lead *l)
{
    for (int p = 1; p < k->sh.n; p++) {
        struct perf_ctl c;
        int err = wait_ctl(k, p, &c);
        if (!err && c.cmd != cmd)
            err = MROCE_EPROTO;
        if (err)
            return err;
        if (cmd == PERF_CMD_RESULT)
            add_counts(l, c.v);
    }
    return 0;
}

/* One iteration: GO, our part, everybody's END. */
static int lead_iter(struct coll_rank *k, int verify, double *secs,
                     struct lead *l)
{
    uint64_t t0 = mroce_dp_now_ns(), v[2] = {0, (uint64_t)verify};
    int err = ctl_bcast(k, PERF_CMD_GO, v, 2);
    struct coll_x x = {0};
    if (!err)
        err = run_one(k, &x);
    if (!err)
        err = gather(k, verify ? PERF_CMD_RESULT : PERF_CMD_END, l);
    *secs = (double)(mroce_dp_now_ns() - t0) / 1e9;
    return err;
}

static int lead_run(struct coll_rank *k, struct lead *l)
{
    uint64_t total = COLL_WARMUP + k->o->iters;
    l->t_min = 1e30;
    int err = gather(k, PERF_CMD_END, l); /* every mesh is up */
    for (uint64_t i = 0; !err && i < total; i++) {
        double s;
        err = lead_iter(k, 0, &s, l);
        if (err || i < COLL_WARMUP)
            continue;
        l->iters++;
        l->t_sum += s;
        l->t_min = s < l->t_min ? s : l->t_min;
    }
    if (err)
        return err;
    l->ok = rank_check(k);
    rank_poison(k);
    err = ctl_bcast(k, PERF_CMD_RUN, NULL, 0);
    if (!err)
        err = gather(k, PERF_CMD_END, l);
    double s;
    if (!err)
        err = lead_iter(k, 1, &s, l);
    if (!err) {
        l->ok &= rank_check(k);
        struct coll_counts n;
        coll_rank_counts(k, &n);
        uint64_t v[8] = {1,     n.tx_data, n.retx,   n.rto,
                         n.tlp, n.rnr,     n.ecn_ce, n.imp_lost};
        add_counts(l, v);
    }
    return err;
}

static void lead_print(const struct coll_rank *k, const struct lead *l)
{
    const struct perf_opts *o = k->o;
    double t = l->t_sum / (double)l->iters, S = (double)k->sh.bytes;
    double alg = S * 8 / t / 1e9, bus = alg * coll_busbw_factor(&k->sh);
    const struct coll_counts *c = &l->sum;
    printf("-----------------------------------------------------------------"
           "---------------\n"
           " mroce coll %s: %d ranks (processes), udp 127.0.0.1, %u paths, "
           "%u channels, MTU %u, spray run %u%s\n"
           "-----------------------------------------------------------------"
           "---------------\n"
           " #bytes      #iters  t_avg[usec]  t_min[usec]  algbw[Gb/s]  "
           "busbw[Gb/s]  data\n"
           " %-11zu %-7llu %-12.1f %-12.1f %-12.3f %-12.3f %s\n",
           coll_op_name(k->sh.op), k->sh.n, o->paths, k->sh.channels, o->mtu,
           o->spray_run,
           k->sh.op != COLL_ALLREDUCE ? ""
           : k->sh.flavour            ? ", send"
                                      : ", writeimm",
           k->sh.bytes, (unsigned long long)l->iters, t * 1e6, l->t_min * 1e6,
           alg, bus, l->ok ? "verified" : "MISMATCH");
    printf("   all ranks, whole run: data pkts %llu  retx %llu (%.3f%%)  "
           "rto %llu  tlp %llu  rnr_naks %llu  ecn_ce %llu  lost(imp) %llu\n",
           (unsigned long long)c->tx_data, (unsigned long long)c->retx,
           c->tx_data ? 100.0 * (double)c->retx / (double)c->tx_data : 0.0,
           (unsigned long long)c->rto, (unsigned long long)c->tlp,
           (unsigned long long)c->rnr, (unsigned long long)c->ecn_ce,
           (unsigned long long)c->imp_lost);
    fflush(stdout);
}

static int lead_json(const struct coll_rank *k, const struct lead *l)
{
    const struct perf_opts *o = k->o;
    FILE *f = o->json ? fopen(o->json, "w") : NULL;
    if (!o->json)
        return 0;
    if (!f) {
        perror(o->json);
        return -1;
    }
    double t = l->t_sum / (double)l->iters, S = (double)k->sh.bytes;
    double alg = S * 8 / t / 1e9, fac = coll_busbw_factor(&k->sh);
    const struct coll_counts *c = &l->sum;
    fprintf(f,
            "{\"tool\":\"mroce-perf\",\"test\":\"coll\",\"op\":\"%s\","
            "\"ranks\":%d,\"datapath\":\"udp\",\"transport\":\"%s\","
            "\"flavour\":\"%s\",\"paths\":%u,\"channels\":%u,\"mtu\":%u,"
            "\"spray_run\":%u,\"loss\":%g,\"bytes\":%zu,\"iterations\":%llu,"
            "\"t_avg_us\":%.3f,\"t_min_us\":%.3f,\"algbw_gbps\":%.4f,"
            "\"busbw_factor\":%.4f,\"busbw_gbps\":%.4f,\"check\":\"%s\",",
            coll_op_name(k->sh.op), k->sh.n,
            o->transport ? "rocev2" : "metaroce",
            k->sh.flavour ? "send" : "writeimm", o->paths, k->sh.channels,
            o->mtu, o->spray_run, o->loss, k->sh.bytes,
            (unsigned long long)l->iters, t * 1e6, l->t_min * 1e6, alg, fac,
            alg * fac, l->ok ? "verified" : "MISMATCH");
    fprintf(f,
            "\"tx_data_pkts\":%llu,\"retx_pkts\":%llu,\"rto_events\":%llu,"
            "\"tlp_pkts\":%llu,\"rnr_naks\":%llu,\"rx_ecn_ce\":%llu,"
            "\"imp_lost\":%llu}\n",
            (unsigned long long)c->tx_data, (unsigned long long)c->retx,
            (unsigned long long)c->rto, (unsigned long long)c->tlp,
            (unsigned long long)c->rnr, (unsigned long long)c->ecn_ce,
            (unsigned long long)c->imp_lost);
    return fclose(f) ? -1 : 0;
}

static int lead(struct coll_rank *k)
{
    struct lead l = {0};
    int err = lead_run(k, &l);
    /* QUIT also stops ranks still running after a failure. */
    ctl_bcast(k, PERF_CMD_QUIT, NULL, 0);
    if (err)
        return err;
    if (!k->o->quiet)
        lead_print(k, &l);
    if (lead_json(k, &l))
        return MROCE_EINVAL;
    if (!l.ok)
        fprintf(stderr, "mroce-perf coll: verification failed\n");
    return l.ok ? 0 : MROCE_EPROTO;
}

int coll_rank_main(struct coll_rank *k)
{
    int err = k->r ? follow(k) : lead(k);
    /* Linger a little so late ACKs for our peers still go out. */
    uint64_t end = mroce_dp_now_ns() + 20000000;
    while (!err && mroce_dp_now_ns() < end)
        perf_progress(k->dp);
    return err ? 1 : 0;
}
