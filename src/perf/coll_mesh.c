/* A rank of mroce-perf coll: datapath, one-rank communicator and the full
 * mesh of connections through the CM (see coll.h). */
#include <stdio.h>
#include <string.h>

#include "coll/allgather.h"
#include "coll/allreduce.h"
#include "coll/alltoall.h"
#include "perf/coll.h"
#include "wire/be.h"

/* HELLO blob: magic, rank, n, op, flavour, channels, bytes, then per
 * buffer addr, rkey, len; big-endian. */
#define BLOB_MAGIC 0x4D50434Cu /* "MPCL" */
#define BLOB_HDR 32
#define BLOB_DESC 20
#define BLOB_LEN (BLOB_HDR + MROCE_COLL_N_BUFS * BLOB_DESC)

static void blob_put(const struct coll_rank *k, uint8_t *b)
{
    mroce_be32_put(b, BLOB_MAGIC);
    mroce_be32_put(b + 4, (uint32_t)k->r);
    mroce_be32_put(b + 8, (uint32_t)k->sh.n);
    mroce_be32_put(b + 12, (uint32_t)k->sh.op);
    mroce_be32_put(b + 16, (uint32_t)k->sh.flavour);
    mroce_be32_put(b + 20, k->sh.channels);
    mroce_be64_put(b + 24, k->sh.bytes);
    struct mroce_coll_buf_desc d[MROCE_COLL_N_BUFS];
    mroce_coll_comm_local_desc(k->comm, d);
    for (int i = 0; i < MROCE_COLL_N_BUFS; i++) {
        uint8_t *p = b + BLOB_HDR + i * BLOB_DESC;
        mroce_be64_put(p, d[i].addr);
        mroce_be32_put(p + 8, d[i].rkey);
        mroce_be64_put(p + 12, d[i].len);
    }
}

/* The peer's rank, or EPROTO if its blob is malformed or its run differs
 * from ours. */
static int blob_get(const struct coll_rank *k, const uint8_t *b, size_t len,
                    struct mroce_coll_buf_desc *d)
{
    if (len != BLOB_LEN || mroce_be32_get(b) != BLOB_MAGIC)
        return MROCE_EPROTO;
    uint32_t peer = mroce_be32_get(b + 4);
    if (peer >= (uint32_t)k->sh.n || (int)peer == k->r ||
        mroce_be32_get(b + 8) != (uint32_t)k->sh.n ||
        mroce_be32_get(b + 12) != (uint32_t)k->sh.op ||
        mroce_be32_get(b + 16) != (uint32_t)k->sh.flavour ||
        mroce_be32_get(b + 20) != k->sh.channels ||
        mroce_be64_get(b + 24) != k->sh.bytes)
        return MROCE_EPROTO;
    for (int i = 0; i < MROCE_COLL_N_BUFS; i++) {
        const uint8_t *p = b + BLOB_HDR + i * BLOB_DESC;
        d[i].addr = mroce_be64_get(p);
        d[i].rkey = mroce_be32_get(p + 8);
        d[i].len = mroce_be64_get(p + 12);
    }
    return (int)peer;
}

const struct mroce_cm_attr coll_cm_attr = {.no_keepalive = 1};

static int remaining_ms(const struct coll_rank *k)
{
    uint64_t now = mroce_dp_now_ns();
    return now >= k->deadline ? 1 : (int)((k->deadline - now) / 1000000);
}

int coll_rank_expired(const struct coll_rank *k)
{
    return mroce_dp_now_ns() > k->deadline;
}

static int conn_new(struct coll_rank *k, struct mroce_conn **out)
{
    const struct perf_opts *o = k->o;
    struct mroce_conn_attr ca = {.send_cq = k->cq,
                                 .recv_cq = k->cq,
                                 .n_streams = k->sh.channels,
                                 .n_paths = o->paths,
                                 .sq_depth = COLL_QD,
                                 .rq_depth = COLL_QD,
                                 .min_rto_ns = perf_min_rto_ns(o),
                                 .retry_cnt = perf_retry_cnt(o)};
    return mroce_conn_create(k->pd, &ca, out);
}

/* CM establish on a fresh connection; the blob names the peer. */
static int mesh_link(struct coll_rank *k, struct mroce_cm *cm, int want)
{
    struct mroce_conn *conn;
    int err = conn_new(k, &conn);
    if (err) {
        mroce_cm_close(cm);
        return err;
    }
    uint8_t mine[BLOB_LEN], theirs[BLOB_LEN + 8];
    size_t got = 0;
    blob_put(k, mine);
    err = mroce_cm_establish(cm, conn, mine, sizeof(mine), theirs,
                             sizeof(theirs), &got, remaining_ms(k));
    struct mroce_coll_buf_desc d[MROCE_COLL_N_BUFS];
    int p = err ? err : blob_get(k, theirs, got, d);
    if (p >= 0 && ((want >= 0 && p != want) || k->cm[p]))
        p = MROCE_EPROTO;
    int bad = p >= 0 ? mroce_coll_comm_set_peer(k->comm, p, conn, d) : 0;
    if (bad)
        p = bad;
    if (p < 0) {
        fprintf(stderr, "mroce-perf coll: rank %d: peer set-up: %s %s\n", k->r,
                mroce_strerror(p), err ? mroce_cm_errmsg() : "");
        mroce_cm_close(cm);
        mroce_conn_destroy(conn);
        return p;
    }
    k->cm[p] = cm;
    k->conn[p] = conn;
    return 0;
}

/* Rank r accepts the r lower ranks (in any order), then dials the higher
 * ones in order: every rank waits only on ranks that are themselves
 * accepting or dialling it, so the mesh cannot deadlock. */
static int mesh_build(struct coll_rank *k, struct mroce_cm_listener *l,
                      const uint16_t *ports)
{
    int err = 0;
    for (int i = 0; !err && i < k->r; i++) {
        struct mroce_cm *cm;
        err = mroce_cm_accept(l, remaining_ms(k), &cm);
        if (!err)
            err = mesh_link(k, cm, -1);
    }
    mroce_cm_listener_close(l);
    for (int p = k->r + 1; !err && p < k->sh.n; p++) {
        struct mroce_cm *cm;
        err = mroce_cm_dial("127.0.0.1", ports[p], remaining_ms(k),
                            &coll_cm_attr, &cm);
        if (!err)
            err = mesh_link(k, cm, p);
    }
    return err;
}

static void rank_fill(struct coll_rank *k)
{
    if (k->sh.op == COLL_ALLREDUCE)
        mroce_coll_allreduce_fill(k->comm, k->sh.unit);
    else if (k->sh.op == COLL_ALLTOALL)
        mroce_coll_alltoall_fill(k->comm, k->sh.unit);
    else
        mroce_coll_allgather_fill(k->comm, k->sh.unit);
}

static int rank_dp(struct coll_rank *k)
{
    const struct perf_opts *o = k->o;
    struct mroce_dp_attr a;
    perf_dp_attr(&a, o, "127.0.0.1", (uint16_t)(o->udp_port + k->r),
                 (uint64_t)k->r + 1);
    int err = mroce_dp_create(&a, &k->dp);
    if (err) {
        fprintf(stderr, "mroce-perf coll: rank %d: datapath on port %u: %s\n",
                k->r, o->udp_port + k->r, mroce_strerror(err));
        return err;
    }
    k->ctx = mroce_dp_ctx(k->dp);
    err = mroce_pd_alloc(k->ctx, &k->pd);
    uint32_t depth =
        (uint32_t)(k->sh.n - 1) * k->sh.channels * 2 * COLL_QD + 64;
    return err ? err : mroce_cq_create(k->ctx, depth, &k->cq);
}

int coll_rank_open(struct coll_rank *k, const struct perf_opts *o, int r,
                   struct mroce_cm_listener *l, const uint16_t *ports)
{
    memset(k, 0, sizeof(*k));
    k->o = o;
    k->r = r;
    k->deadline = mroce_dp_now_ns() + (uint64_t)o->timeout_s * 1000000000ull;
    coll_shape_init(&k->sh, o);
    int err = rank_dp(k);
    struct mroce_coll_over_cfg oc = {.n_ranks = k->sh.n,
                                     .rank = r,
                                     .n_channels = k->sh.channels,
                                     .buf_bytes = k->sh.bytes,
                                     .ctx = k->ctx,
                                     .pd = k->pd,
                                     .cq = k->cq};
    if (!err)
        err = mroce_coll_comm_create_over(&oc, &k->comm);
    if (!err)
        rank_fill(k);
    if (!err)
        return mesh_build(k, l, ports);
    mroce_cm_listener_close(l);
    return err;
}

void coll_rank_close(struct coll_rank *k)
{
    for (int p = 0; p < COLL_MAX_RANKS; p++)
        mroce_cm_close(k->cm[p]);
    mroce_coll_comm_destroy(k->comm); /* before the context goes */
    if (k->dp)
        mroce_dp_destroy(k->dp);
    memset(k, 0, sizeof(*k));
}

void coll_rank_counts(const struct coll_rank *k, struct coll_counts *c)
{
    memset(c, 0, sizeof(*c));
    for (int p = 0; p < k->sh.n; p++) {
        if (!k->conn[p])
            continue;
        struct mroce_conn_counters cc;
        mroce_conn_get_counters(k->conn[p], &cc);
        c->tx_data += cc.tx_data_pkts;
        c->retx += cc.retx_pkts;
        c->rto += cc.rto_events;
        c->tlp += cc.tlp_pkts;
        c->rnr += cc.rnr_naks;
        c->ecn_ce += cc.rx_ecn_ce;
    }
    struct mroce_dp_counters d;
    mroce_dp_get_counters(k->dp, &d);
    c->imp_lost = d.imp_lost;
}
