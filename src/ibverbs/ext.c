/* The extension calls (include/mroce/mroce_verbs.h): the soft NIC's
 * datapath and profile, and a QP's paths, planes and streams on its
 * MetaRoCE connection. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <mroce/mroce_verbs.h>

#include "ibverbs/sv.h"

struct ibv_context *mroce_verbs_open_device(struct ibv_device *dev,
                                            const struct mroce_verbs_attr *a)
{
    return sv_open(dev, a);
}

int mroce_verbs_is_soft(struct ibv_context *ctx)
{
    return ctx && ctx->device == sv_device;
}

int mroce_verbs_nic_info(struct ibv_context *ic,
                         struct mroce_verbs_nic_info *out)
{
    if (!mroce_verbs_is_soft(ic))
        return EINVAL;
    struct sv_ctx *c = sv_ctx_of(ic);
    memset(out, 0, sizeof(*out));
    snprintf(out->ip, sizeof(out->ip), "%s", c->prof.ip);
    out->port = c->port;
    out->paths = c->prof.paths;
    out->streams = c->prof.streams;
    out->planes = c->prof.planes;
    out->datapath = c->prof.datapath;
    sv_ctl_lock(c);
    out->passes = c->passes;
    out->sleeps = c->sleeps;
    out->wakes = c->wakes;
    out->assists = c->assists;
    mroce_dp_get_counters(c->dp, &out->dp);
    mroce_ctx_get_counters(c->eng, &out->eng);
    sv_ctl_unlock(c);
    return 0;
}

/* ---- QPs ---- */

/* A new connection with other paths or streams: RESET only, where the
 * connection holds nothing. */
static int ext_qp_shape(struct ibv_qp *qp, uint16_t paths, uint16_t streams)
{
    struct sv_qp *q = sv_qp_of(qp);
    struct sv_ctx *c = q->ctx;
    if (!paths || paths > 256 || !streams || streams > 64)
        return EINVAL;
    sv_ctl_lock(c);
    int err = atomic_load(&q->state) == IBV_QPS_RESET ? 0 : EINVAL;
    if (!err) {
        uint16_t op = q->n_paths, os = q->n_streams;
        struct mroce_conn *old = q->conn;
        q->n_paths = paths;
        q->n_streams = streams;
        struct mroce_pd *pd = ((struct sv_pd *)(void *)qp->pd)->pd;
        mroce_conn_destroy(old);
        err = sv_qp_conn(q, pd, qp->qp_num);
        if (err) { /* back to what it was */
            q->n_paths = op;
            q->n_streams = os;
            sv_qp_conn(q, pd, qp->qp_num);
        }
    }
    sv_ctl_unlock(c);
    return err;
}

int mroce_verbs_qp_set_paths(struct ibv_qp *qp, uint16_t n_paths)
{
    return ext_qp_shape(qp, n_paths, sv_qp_of(qp)->n_streams);
}

int mroce_verbs_qp_set_streams(struct ibv_qp *qp, uint16_t n_streams)
{
    return ext_qp_shape(qp, sv_qp_of(qp)->n_paths, n_streams);
}

int mroce_verbs_qp_set_stream(struct ibv_qp *qp, uint16_t stream)
{
    struct sv_qp *q = sv_qp_of(qp);
    if (stream >= q->n_streams)
        return EINVAL;
    q->stream = stream;
    return 0;
}

int mroce_verbs_path_plane(struct ibv_qp *qp, uint16_t path)
{
    struct sv_qp *q = sv_qp_of(qp);
    return (int)(path % q->ctx->prof.planes);
}

static int ext_conn_call(struct ibv_qp *qp, int (*fn)(struct sv_qp *, void *),
                         void *arg)
{
    struct sv_qp *q = sv_qp_of(qp);
    sv_ctl_lock(q->ctx);
    int rc = q->conn ? fn(q, arg) : EINVAL;
    sv_ctl_unlock(q->ctx);
    if (rc == 0)
        sv_nic_doorbell(q->ctx); /* a path back in use may send */
    return rc;
}

struct ext_path {
    uint16_t path;
    int on;
    struct mroce_path_info *info;
    struct mroce_conn_counters *cnt;
};

static int ext_query(struct sv_qp *q, void *arg)
{
    struct ext_path *a = arg;
    return sv_errno(mroce_path_query(q->conn, a->path, a->info));
}

static int ext_enable(struct sv_qp *q, void *arg)
{
    struct ext_path *a = arg;
    return sv_errno(mroce_path_enable(q->conn, a->path, a->on));
}

static int ext_repath(struct sv_qp *q, void *arg)
{
    struct ext_path *a = arg;
    return sv_errno(mroce_path_repath(q->conn, a->path));
}

static int ext_counters(struct sv_qp *q, void *arg)
{
    struct ext_path *a = arg;
    mroce_conn_get_counters(q->conn, a->cnt);
    return 0;
}

/* Every path p with p mod planes == plane; the first refusal stops. */
static int ext_plane(struct sv_qp *q, void *arg)
{
    struct ext_path *a = arg;
    uint32_t planes = q->ctx->prof.planes;
    if (a->path >= planes)
        return EINVAL;
    if (mroce_conn_state(q->conn) != MROCE_CONN_CONNECTED)
        return EINVAL;
    for (uint16_t p = a->path; p < q->n_paths; p = (uint16_t)(p + planes)) {
        int rc = mroce_path_enable(q->conn, p, a->on);
        if (rc)
            return sv_errno(rc);
    }
    return 0;
}

int mroce_verbs_path_query(struct ibv_qp *qp, uint16_t path,
                           struct mroce_path_info *out)
{
    struct ext_path a = {.path = path, .info = out};
    return ext_conn_call(qp, ext_query, &a);
}

int mroce_verbs_path_enable(struct ibv_qp *qp, uint16_t path, int on)
{
    struct ext_path a = {.path = path, .on = on};
    return ext_conn_call(qp, ext_enable, &a);
}

int mroce_verbs_path_repath(struct ibv_qp *qp, uint16_t path)
{
    struct ext_path a = {.path = path};
    return ext_conn_call(qp, ext_repath, &a);
}

int mroce_verbs_qp_counters(struct ibv_qp *qp, struct mroce_conn_counters *out)
{
    struct ext_path a = {.cnt = out};
    return ext_conn_call(qp, ext_counters, &a);
}

int mroce_verbs_qp_plane_enable(struct ibv_qp *qp, uint32_t plane, int on)
{
    struct ext_path a = {.path = (uint16_t)plane, .on = on};
    if (plane > UINT16_MAX)
        return EINVAL;
    return ext_conn_call(qp, ext_plane, &a);
}
