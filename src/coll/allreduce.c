/* Ring all-reduce (see allreduce.h).
 *
 * Step s (0 .. 2N-3) on rank r sends chunk (r - s) mod N to the right
 * neighbour and receives chunk (r - s - 1) mod N from the left one: the
 * chunk sent at step s is the one received at step s - 1, so a slice may
 * go on as soon as its predecessor arrived. Reduce-scatter steps
 * (s < N-1) land in the neighbour's scratch and are added into its rbuf;
 * all-gather steps land directly in the neighbour's rbuf (the final
 * values, nothing to add).
 *
 * Per channel c the items are numbered i = s * m_c + k (slice j = c + k *
 * C). Streams deliver in order, so per channel a count of sent, completed
 * and received items is the whole state. Send item i needs receive item
 * i - m_c (same slice, one step earlier). */
#include "coll/allreduce.h"

#include <stdlib.h>
#include <string.h>

struct ar_chan {
    uint32_t m;     /* slices of this channel per step */
    uint32_t total; /* items: steps * m */
    uint32_t tx_posted, tx_done, rx_posted, rx_done;
};

struct mroce_coll_allreduce {
    struct mroce_coll_comm *comm;
    size_t count, chunk, slice;
    uint32_t n_slices; /* slices per chunk, M */
    uint32_t steps;    /* 2(N-1) */
    int flavour;
    int err;
    long left;          /* completions the local ranks still expect */
    struct ar_chan *ch; /* [n * C], rank-major */
};

struct ar_item {
    uint32_t s, j;
    size_t off, len; /* bytes */
};

static struct ar_chan *chan(struct mroce_coll_allreduce *ar, int r, int c)
{
    return &ar->ch[(size_t)r * ar->comm->n_channels + (size_t)c];
}

/* Item i of channel c; the chunk is (r - s - delta) mod N. */
static struct ar_item item(const struct mroce_coll_allreduce *ar, int r, int c,
                           const struct ar_chan *ch, uint32_t i, int delta)
{
    int n = ar->comm->n;
    struct ar_item it;
    it.s = i / ch->m;
    it.j = (uint32_t)c + (i % ch->m) * ar->comm->n_channels;
    long k = ((long)r - (long)it.s - delta) % n;
    size_t chunk = (size_t)(k < 0 ? k + n : k);
    size_t first = (size_t)it.j * ar->slice;
    size_t len = ar->chunk - first < ar->slice ? ar->chunk - first : ar->slice;
    it.off = (chunk * ar->chunk + first) * sizeof(float);
    it.len = len * sizeof(float);
    return it;
}

static int is_rs(const struct mroce_coll_allreduce *ar, uint32_t s)
{
    return s + 1 < (uint32_t)ar->comm->n;
}

static int post_one_send(struct mroce_coll_allreduce *ar, int r, int c,
                         struct ar_chan *ch)
{
    struct mroce_coll_comm *cm = ar->comm;
    int right = (r + 1) % cm->n;
    struct mroce_coll_rank *me = &cm->rank[r], *to = &cm->rank[right];
    struct ar_item it = item(ar, r, c, ch, ch->tx_posted, 0);
    /* A remote neighbour's buffers are known by their descriptors. */
    int dbuf = is_rs(ar, it.s) ? MROCE_COLL_SCRATCH : MROCE_COLL_RBUF;
    struct mroce_send_wr wr = {
        .wr_id = ch->tx_posted,
        .stream = (uint16_t)c,
        .sge = mroce_coll_sge(me->rmr, me->rbuf + it.off, it.len),
        .remote_addr = mroce_coll_raddr(to, dbuf, it.off),
        .rkey = mroce_coll_rkey(to, dbuf),
        .imm = it.s * ar->n_slices + it.j};
    struct mroce_conn *cn = me->conn[right];
    return ar->flavour == MROCE_COLL_SEND ? mroce_post_send(cn, &wr)
                                          : mroce_post_write_imm(cn, &wr);
}

static int post_one_recv(struct mroce_coll_allreduce *ar, int r, int c,
                         struct ar_chan *ch)
{
    struct mroce_coll_comm *cm = ar->comm;
    struct mroce_coll_rank *me = &cm->rank[r];
    struct mroce_recv_wr wr = {.wr_id = ch->rx_posted, .stream = (uint16_t)c};
    if (ar->flavour == MROCE_COLL_SEND) {
        struct ar_item it = item(ar, r, c, ch, ch->rx_posted, 1);
        int rs = is_rs(ar, it.s);
        wr.sge = mroce_coll_sge(rs ? me->xmr : me->rmr,
                                (rs ? me->scratch : me->rbuf) + it.off, it.len);
    } /* WRITE_IMM consumes a receive but places nothing there. */
    int left = (r + cm->n - 1) % cm->n;
    return mroce_post_recv(me->conn[left], &wr);
}

/* Posts receives and every send whose slice has arrived; a full queue
 * (EAGAIN) just waits for the next progress call. */
static int post_ready(struct mroce_coll_allreduce *ar, int r, int c)
{
    struct ar_chan *ch = chan(ar, r, c);
    while (ch->rx_posted < ch->total) {
        int err = post_one_recv(ar, r, c, ch);
        if (err)
            return err == MROCE_EAGAIN ? 0 : err;
        ch->rx_posted++;
    }
    while (ch->tx_posted < ch->total &&
           (ch->tx_posted < ch->m || ch->rx_done > ch->tx_posted - ch->m)) {
        int err = post_one_send(ar, r, c, ch);
        if (err)
            return err == MROCE_EAGAIN ? 0 : err;
        ch->tx_posted++;
    }
    return 0;
}

static int on_recv(struct mroce_coll_allreduce *ar, int r,
                   const struct mroce_wc *wc)
{
    int c = wc->stream;
    struct ar_chan *ch = chan(ar, r, c);
    if (c >= ar->comm->n_channels || ch->rx_done >= ch->total)
        return MROCE_EPROTO;
    struct ar_item it = item(ar, r, c, ch, ch->rx_done, 1);
    if (wc->byte_len != it.len)
        return MROCE_EPROTO;
    if (ar->flavour == MROCE_COLL_WRITE_IMM &&
        (!wc->has_imm || wc->imm != it.s * ar->n_slices + it.j))
        return MROCE_EPROTO;
    if (is_rs(ar, it.s))
        mroce_coll_sum_f32(ar->comm, r, it.off, it.len);
    ch->rx_done++;
    ar->left--;
    return 0;
}

static int on_wc(struct mroce_coll_allreduce *ar, int r,
                 const struct mroce_wc *wc)
{
    if (wc->status != MROCE_WC_SUCCESS)
        return ar->comm->wc_status = wc->status, MROCE_EPROTO;
    if (wc->opcode == MROCE_WC_RECV ||
        wc->opcode == MROCE_WC_RECV_RDMA_WITH_IMM)
        return on_recv(ar, r, wc);
    if (wc->stream >= ar->comm->n_channels)
        return MROCE_EPROTO;
    struct ar_chan *ch = chan(ar, r, wc->stream);
    if (ch->tx_done >= ch->tx_posted)
        return MROCE_EPROTO;
    ch->tx_done++;
    ar->left--;
    return 0;
}

static int rank_progress(struct mroce_coll_allreduce *ar, int r)
{
    struct mroce_wc wc[32];
    int n;
    while ((n = mroce_poll_cq(ar->comm->rank[r].cq, 32, wc)) > 0)
        for (int i = 0; i < n; i++) {
            int err = on_wc(ar, r, &wc[i]);
            if (err)
                return err;
        }
    for (int c = 0; c < ar->comm->n_channels; c++) {
        int err = post_ready(ar, r, c);
        if (err)
            return err;
    }
    return 0;
}

int mroce_coll_allreduce_done(const struct mroce_coll_allreduce *ar)
{
    return ar->left == 0;
}

int mroce_coll_allreduce_progress_rank(struct mroce_coll_allreduce *ar, int r)
{
    if (ar->err)
        return ar->err;
    int err = r >= 0 && r < ar->comm->n && mroce_coll_is_local(ar->comm, r)
                  ? rank_progress(ar, r)
                  : 0;
    return err ? (ar->err = err) : mroce_coll_allreduce_done(ar);
}

int mroce_coll_allreduce_progress(struct mroce_coll_allreduce *ar)
{
    if (ar->err)
        return ar->err;
    for (int r = 0; r < ar->comm->n; r++) {
        int err = mroce_coll_is_local(ar->comm, r) ? rank_progress(ar, r) : 0;
        if (err)
            return ar->err = err;
    }
    return mroce_coll_allreduce_done(ar);
}

static int ar_setup(struct mroce_coll_allreduce *ar,
                    const struct mroce_coll_allreduce_args *a)
{
    struct mroce_coll_comm *cm = ar->comm;
    ar->count = a->count;
    ar->chunk = a->count / (size_t)cm->n;
    ar->slice = a->slice_count && a->slice_count < ar->chunk ? a->slice_count
                                                             : ar->chunk;
    ar->n_slices = (uint32_t)((ar->chunk + ar->slice - 1) / ar->slice);
    ar->steps = 2 * (uint32_t)(cm->n - 1);
    ar->flavour = a->flavour;
    for (int r = 0; r < cm->n; r++) {
        if (mroce_coll_is_local(cm, r))
            mroce_coll_copy(cm, r, MROCE_COLL_RBUF, 0, MROCE_COLL_SBUF, 0,
                            a->count * sizeof(float));
        for (int c = 0; c < cm->n_channels; c++) {
            struct ar_chan *ch = chan(ar, r, c);
            uint32_t C = cm->n_channels;
            ch->m = (uint32_t)c < ar->n_slices
                        ? (ar->n_slices - (uint32_t)c + C - 1) / C
                        : 0;
            ch->total = ch->m * ar->steps;
            if (mroce_coll_is_local(cm, r))
                ar->left += 2 * (long)ch->total;
        }
    }
    return mroce_coll_allreduce_progress(ar) < 0 ? ar->err : 0;
}

int mroce_coll_allreduce_start(struct mroce_coll_comm *comm,
                               const struct mroce_coll_allreduce_args *args,
                               struct mroce_coll_allreduce **out)
{
    if (!out)
        return MROCE_EINVAL;
    *out = NULL;
    if (!comm || !args || !args->count || args->count % (size_t)comm->n ||
        args->count > comm->buf_bytes / sizeof(float) ||
        args->count / (size_t)comm->n > UINT32_MAX / sizeof(float) ||
        (args->flavour != MROCE_COLL_WRITE_IMM &&
         args->flavour != MROCE_COLL_SEND))
        return MROCE_EINVAL;
    if (!mroce_coll_comm_ready(comm))
        return MROCE_ESTATE;
    struct mroce_coll_allreduce *ar = calloc(1, sizeof(*ar));
    if (!ar)
        return MROCE_ENOMEM;
    ar->comm = comm;
    ar->ch = calloc((size_t)comm->n * comm->n_channels, sizeof(*ar->ch));
    int err = ar->ch ? ar_setup(ar, args) : MROCE_ENOMEM;
    if (err) {
        mroce_coll_allreduce_free(ar);
        return err;
    }
    *out = ar;
    return 0;
}

void mroce_coll_allreduce_free(struct mroce_coll_allreduce *ar)
{
    if (!ar)
        return;
    free(ar->ch);
    free(ar);
}

static float input(int r, size_t i)
{
    return (float)((i * 7 + (size_t)r * 13) % 61) - 30.0f;
}

void mroce_coll_allreduce_fill(struct mroce_coll_comm *comm, size_t count)
{
    for (int r = 0; r < comm->n; r++) {
        if (!mroce_coll_is_local(comm, r))
            continue;
        float *f = (float *)(void *)comm->rank[r].sbuf;
        for (size_t i = 0; i < count; i++)
            f[i] = input(r, i);
    }
}

long mroce_coll_allreduce_check(const struct mroce_coll_comm *comm,
                                size_t count, int *bad_rank)
{
    for (size_t i = 0; i < count; i++) {
        float want = 0;
        for (int r = 0; r < comm->n; r++)
            want += input(r, i);
        for (int r = 0; r < comm->n; r++) {
            if (!mroce_coll_is_local(comm, r))
                continue;
            float got;
            memcpy(&got, comm->rank[r].rbuf + i * sizeof(float), sizeof(got));
            if (got != want) {
                if (bad_rank)
                    *bad_rank = r;
                return (long)i;
            }
        }
    }
    return -1;
}
