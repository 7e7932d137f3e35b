/* All-to-all (see alltoall.h). Per (rank, peer) four counters of pieces
 * (writes posted and completed, receives posted and completed) are the
 * state; the shifted schedule adds the current step per rank. Two sums
 * of them (posts left per rank, completions left) keep a progress call
 * O(ranks) once everything is posted instead of O(ranks x peers): the
 * simulator calls it after every engine event. */
#include "coll/alltoall.h"

#include <stdlib.h>
#include <string.h>

struct a2a_peer {
    uint16_t tx_posted, tx_done, rx_posted, rx_done;
};

struct mroce_coll_alltoall {
    struct mroce_coll_comm *comm;
    size_t block, piece;
    int schedule;
    int err;
    int *step;             /* [n] shifted: current step 1..N-1 (N: done) */
    int *left;             /* [n] pieces a local rank has still to post */
    long done_left;        /* completions the local ranks still expect */
    struct a2a_peer *peer; /* [n * n], rank-major */
};

static struct a2a_peer *peer(struct mroce_coll_alltoall *a, int r, int p)
{
    return &a->peer[(size_t)r * (size_t)a->comm->n + (size_t)p];
}

static int post_recvs(struct mroce_coll_alltoall *a, int r, int p)
{
    struct a2a_peer *st = peer(a, r, p);
    while (st->rx_posted < a->comm->n_channels) {
        /* WRITE_IMM consumes a receive but places nothing there. */
        struct mroce_recv_wr wr = {.wr_id = (uint64_t)p,
                                   .stream = st->rx_posted};
        int err = mroce_post_recv(a->comm->rank[r].conn[p], &wr);
        if (err)
            return err == MROCE_EAGAIN ? 0 : err;
        st->rx_posted++;
        a->left[r]--;
    }
    return 0;
}

static int post_writes(struct mroce_coll_alltoall *a, int r, int p)
{
    struct mroce_coll_rank *me = &a->comm->rank[r], *to = &a->comm->rank[p];
    struct a2a_peer *st = peer(a, r, p);
    while (st->tx_posted < a->comm->n_channels) {
        size_t off = st->tx_posted * a->piece;
        uint8_t *src = me->sbuf + (size_t)p * a->block + off;
        size_t dst = (size_t)r * a->block + off;
        struct mroce_send_wr wr = {
            .wr_id = (uint64_t)p,
            .stream = st->tx_posted,
            .sge = mroce_coll_sge(me->smr, src, a->piece),
            .remote_addr = mroce_coll_raddr(to, MROCE_COLL_RBUF, dst),
            .rkey = mroce_coll_rkey(to, MROCE_COLL_RBUF),
            .imm = (uint32_t)r};
        int err = mroce_post_write_imm(me->conn[p], &wr);
        if (err)
            return err == MROCE_EAGAIN ? 0 : err;
        st->tx_posted++;
        a->left[r]--;
    }
    return 0;
}

static int on_wc(struct mroce_coll_alltoall *a, int r,
                 const struct mroce_wc *wc)
{
    int p = (int)wc->wr_id;
    if (wc->status != MROCE_WC_SUCCESS)
        a->comm->wc_status = wc->status;
    if (wc->status != MROCE_WC_SUCCESS || p < 0 || p >= a->comm->n || p == r)
        return MROCE_EPROTO;
    struct a2a_peer *st = peer(a, r, p);
    if (wc->opcode != MROCE_WC_RECV_RDMA_WITH_IMM) {
        if (st->tx_done >= a->comm->n_channels)
            return MROCE_EPROTO;
        st->tx_done++;
        a->done_left--;
        return 0;
    }
    if (!wc->has_imm || wc->imm != (uint32_t)p || wc->byte_len != a->piece ||
        st->rx_done >= a->comm->n_channels)
        return MROCE_EPROTO;
    st->rx_done++;
    a->done_left--;
    return 0;
}

static int pair_done(struct mroce_coll_alltoall *a, int r, int k)
{
    int n = a->comm->n, C = a->comm->n_channels;
    return peer(a, r, (r + k) % n)->tx_done == C &&
           peer(a, r, (r - k + n) % n)->rx_done == C;
}

/* Posts what the schedule allows now. */
static int post_ready(struct mroce_coll_alltoall *a, int r)
{
    int n = a->comm->n;
    if (!a->left[r])
        return 0;
    for (int p = 0; p < n; p++) {
        int err = p == r ? 0 : post_recvs(a, r, p);
        if (err)
            return err;
    }
    if (a->schedule == MROCE_COLL_A2A_SHIFTED) {
        while (a->step[r] < n && pair_done(a, r, a->step[r]))
            a->step[r]++;
        return a->step[r] < n ? post_writes(a, r, (r + a->step[r]) % n) : 0;
    }
    for (int p = 0; p < n; p++) {
        int err = p == r ? 0 : post_writes(a, r, p);
        if (err)
            return err;
    }
    return 0;
}

static int rank_progress(struct mroce_coll_alltoall *a, int r)
{
    struct mroce_wc wc[32];
    int n;
    while ((n = mroce_poll_cq(a->comm->rank[r].cq, 32, wc)) > 0)
        for (int i = 0; i < n; i++) {
            int err = on_wc(a, r, &wc[i]);
            if (err)
                return err;
        }
    return post_ready(a, r);
}

int mroce_coll_alltoall_done(const struct mroce_coll_alltoall *a)
{
    return a->done_left == 0;
}

int mroce_coll_alltoall_progress_rank(struct mroce_coll_alltoall *a, int r)
{
    if (a->err)
        return a->err;
    int err = r >= 0 && r < a->comm->n && mroce_coll_is_local(a->comm, r)
                  ? rank_progress(a, r)
                  : 0;
    return err ? (a->err = err) : mroce_coll_alltoall_done(a);
}

int mroce_coll_alltoall_progress(struct mroce_coll_alltoall *a)
{
    if (a->err)
        return a->err;
    for (int r = 0; r < a->comm->n; r++) {
        int err = mroce_coll_is_local(a->comm, r) ? rank_progress(a, r) : 0;
        if (err)
            return a->err = err;
    }
    return mroce_coll_alltoall_done(a);
}

int mroce_coll_alltoall_start(struct mroce_coll_comm *comm,
                              const struct mroce_coll_alltoall_args *args,
                              struct mroce_coll_alltoall **out)
{
    if (!out)
        return MROCE_EINVAL;
    *out = NULL;
    if (!comm || !args || !args->block || args->block % comm->n_channels ||
        args->block > comm->buf_bytes / (size_t)comm->n ||
        args->block / comm->n_channels > UINT32_MAX ||
        (args->schedule != MROCE_COLL_A2A_CONCURRENT &&
         args->schedule != MROCE_COLL_A2A_SHIFTED))
        return MROCE_EINVAL;
    if (!mroce_coll_comm_ready(comm))
        return MROCE_ESTATE;
    struct mroce_coll_alltoall *a = calloc(1, sizeof(*a));
    if (!a)
        return MROCE_ENOMEM;
    int n = comm->n;
    *a = (struct mroce_coll_alltoall){
        .comm = comm,
        .block = args->block,
        .piece = args->block / comm->n_channels,
        .schedule = args->schedule,
        .step = calloc((size_t)n, sizeof(int)),
        .left = calloc((size_t)n, sizeof(int)),
        .peer = calloc((size_t)n * (size_t)n, sizeof(struct a2a_peer))};
    int err = a->step && a->left && a->peer ? 0 : MROCE_ENOMEM;
    for (int r = 0; !err && r < n; r++) {
        a->step[r] = 1;
        if (!mroce_coll_is_local(comm, r))
            continue;
        mroce_coll_copy(comm, r, MROCE_COLL_RBUF, (size_t)r * a->block,
                        MROCE_COLL_SBUF, (size_t)r * a->block, a->block);
        a->left[r] = 2 * (n - 1) * comm->n_channels;
        a->done_left += a->left[r];
    }
    if (!err && mroce_coll_alltoall_progress(a) < 0)
        err = a->err;
    if (err) {
        mroce_coll_alltoall_free(a);
        return err;
    }
    *out = a;
    return 0;
}

void mroce_coll_alltoall_free(struct mroce_coll_alltoall *a)
{
    if (!a)
        return;
    free(a->step);
    free(a->left);
    free(a->peer);
    free(a);
}

static uint8_t pattern(int src, int dst, size_t i)
{
    return (uint8_t)(src * 31 + dst * 7 + i * 13 + (i >> 8));
}

void mroce_coll_alltoall_fill(struct mroce_coll_comm *comm, size_t block)
{
    for (int r = 0; r < comm->n; r++)
        for (int p = 0; mroce_coll_is_local(comm, r) && p < comm->n; p++)
            for (size_t i = 0; i < block; i++)
                comm->rank[r].sbuf[(size_t)p * block + i] = pattern(r, p, i);
}

long mroce_coll_alltoall_check(const struct mroce_coll_comm *comm, size_t block,
                               int *bad_rank)
{
    for (int p = 0; p < comm->n; p++)
        for (int r = 0; mroce_coll_is_local(comm, p) && r < comm->n; r++)
            for (size_t i = 0; i < block; i++) {
                size_t off = (size_t)r * block + i;
                if (comm->rank[p].rbuf[off] != pattern(r, p, i)) {
                    if (bad_rank)
                        *bad_rank = p;
                    return (long)off;
                }
            }
    return -1;
}
