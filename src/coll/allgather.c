/* Ring all-gather (see allgather.h).
 *
 * Step s (0 .. N-2) on rank r sends chunk (r - s) mod N to the right
 * neighbour and receives chunk (r - s - 1) mod N from the left one: the
 * chunk sent at step s is the one received at step s - 1, so a slice may
 * go on as soon as its predecessor arrived.
 *
 * Per channel c the items are numbered i = s * m_c + k (slice j = c + k *
 * C). Streams deliver in order, so per channel a count of sent, completed
 * and received items is the whole state. Send item i needs receive item
 * i - m_c (same slice, one step earlier). */
#include "coll/allgather.h"

#include <stdlib.h>
#include <string.h>

struct ag_chan {
    uint32_t m;     /* slices of this channel per step */
    uint32_t total; /* items: steps * m */
    uint32_t tx_posted, tx_done, rx_posted, rx_done;
};

struct mroce_coll_allgather {
    struct mroce_coll_comm *comm;
    size_t chunk, slice; /* bytes */
    uint32_t n_slices;   /* slices per chunk, M */
    uint32_t steps;      /* N-1 */
    int err;
    long left;          /* completions the local ranks still expect */
    struct ag_chan *ch; /* [n * C], rank-major */
};

struct ag_item {
    uint32_t s, j;
    size_t off, len; /* bytes in rbuf */
};

static struct ag_chan *chan(struct mroce_coll_allgather *ag, int r, int c)
{
    return &ag->ch[(size_t)r * ag->comm->n_channels + (size_t)c];
}

/* Item i of channel c; the chunk is (r - s - delta) mod N. */
static struct ag_item item(const struct mroce_coll_allgather *ag, int r, int c,
                           const struct ag_chan *ch, uint32_t i, int delta)
{
    int n = ag->comm->n;
    struct ag_item it;
    it.s = i / ch->m;
    it.j = (uint32_t)c + (i % ch->m) * ag->comm->n_channels;
    long k = ((long)r - (long)it.s - delta) % n;
    size_t chunk = (size_t)(k < 0 ? k + n : k);
    size_t first = (size_t)it.j * ag->slice;
    it.off = chunk * ag->chunk + first;
    it.len = ag->chunk - first < ag->slice ? ag->chunk - first : ag->slice;
    return it;
}

/* The tag names (step, slice): a write that lands anywhere else than the
 * receiver expects is caught on its completion. */
static uint32_t tag(const struct mroce_coll_allgather *ag,
                    const struct ag_item *it)
{
    return it->s * ag->n_slices + it->j;
}

static int post_one_send(struct mroce_coll_allgather *ag, int r, int c,
                         struct ag_chan *ch)
{
    struct mroce_coll_comm *cm = ag->comm;
    int right = (r + 1) % cm->n;
    struct mroce_coll_rank *me = &cm->rank[r], *to = &cm->rank[right];
    struct ag_item it = item(ag, r, c, ch, ch->tx_posted, 0);
    struct mroce_send_wr wr = {
        .wr_id = ch->tx_posted,
        .stream = (uint16_t)c,
        .sge = mroce_coll_sge(me->rmr, me->rbuf + it.off, it.len),
        .remote_addr = mroce_coll_raddr(to, MROCE_COLL_RBUF, it.off),
        .rkey = mroce_coll_rkey(to, MROCE_COLL_RBUF),
        .imm = tag(ag, &it)};
    return mroce_post_write_imm(me->conn[right], &wr);
}

/* WRITE_IMM consumes a receive but places nothing there. */
static int post_one_recv(struct mroce_coll_allgather *ag, int r, int c,
                         struct ag_chan *ch)
{
    struct mroce_coll_comm *cm = ag->comm;
    struct mroce_recv_wr wr = {.wr_id = ch->rx_posted, .stream = (uint16_t)c};
    int left = (r + cm->n - 1) % cm->n;
    return mroce_post_recv(cm->rank[r].conn[left], &wr);
}

/* Posts receives and every send whose slice has arrived; a full queue
 * (EAGAIN) just waits for the next progress call. */
static int post_ready(struct mroce_coll_allgather *ag, int r, int c)
{
    struct ag_chan *ch = chan(ag, r, c);
    while (ch->rx_posted < ch->total) {
        int err = post_one_recv(ag, r, c, ch);
        if (err)
            return err == MROCE_EAGAIN ? 0 : err;
        ch->rx_posted++;
    }
    while (ch->tx_posted < ch->total &&
           (ch->tx_posted < ch->m || ch->rx_done > ch->tx_posted - ch->m)) {
        int err = post_one_send(ag, r, c, ch);
        if (err)
            return err == MROCE_EAGAIN ? 0 : err;
        ch->tx_posted++;
    }
    return 0;
}

static int on_recv(struct mroce_coll_allgather *ag, int r,
                   const struct mroce_wc *wc)
{
    int c = wc->stream;
    if (c >= ag->comm->n_channels)
        return MROCE_EPROTO;
    struct ag_chan *ch = chan(ag, r, c);
    if (ch->rx_done >= ch->total)
        return MROCE_EPROTO;
    struct ag_item it = item(ag, r, c, ch, ch->rx_done, 1);
    if (wc->opcode != MROCE_WC_RECV_RDMA_WITH_IMM || wc->byte_len != it.len ||
        !wc->has_imm || wc->imm != tag(ag, &it))
        return MROCE_EPROTO;
    ch->rx_done++;
    ag->left--;
    return 0;
}

static int on_wc(struct mroce_coll_allgather *ag, int r,
                 const struct mroce_wc *wc)
{
    if (wc->status != MROCE_WC_SUCCESS)
        return ag->comm->wc_status = wc->status, MROCE_EPROTO;
    if (wc->opcode == MROCE_WC_RECV ||
        wc->opcode == MROCE_WC_RECV_RDMA_WITH_IMM)
        return on_recv(ag, r, wc);
    if (wc->stream >= ag->comm->n_channels)
        return MROCE_EPROTO;
    struct ag_chan *ch = chan(ag, r, wc->stream);
    if (ch->tx_done >= ch->tx_posted)
        return MROCE_EPROTO;
    ch->tx_done++;
    ag->left--;
    return 0;
}

static int rank_progress(struct mroce_coll_allgather *ag, int r)
{
    struct mroce_wc wc[32];
    int n;
    while ((n = mroce_poll_cq(ag->comm->rank[r].cq, 32, wc)) > 0)
        for (int i = 0; i < n; i++) {
            int err = on_wc(ag, r, &wc[i]);
            if (err)
                return err;
        }
    for (int c = 0; c < ag->comm->n_channels; c++) {
        int err = post_ready(ag, r, c);
        if (err)
            return err;
    }
    return 0;
}

int mroce_coll_allgather_done(const struct mroce_coll_allgather *ag)
{
    return ag->left == 0;
}

int mroce_coll_allgather_progress_rank(struct mroce_coll_allgather *ag, int r)
{
    if (ag->err)
        return ag->err;
    int err = r >= 0 && r < ag->comm->n && mroce_coll_is_local(ag->comm, r)
                  ? rank_progress(ag, r)
                  : 0;
    return err ? (ag->err = err) : mroce_coll_allgather_done(ag);
}

int mroce_coll_allgather_progress(struct mroce_coll_allgather *ag)
{
    if (ag->err)
        return ag->err;
    for (int r = 0; r < ag->comm->n; r++) {
        int err = mroce_coll_is_local(ag->comm, r) ? rank_progress(ag, r) : 0;
        if (err)
            return ag->err = err;
    }
    return mroce_coll_allgather_done(ag);
}

static int ag_setup(struct mroce_coll_allgather *ag,
                    const struct mroce_coll_allgather_args *a)
{
    struct mroce_coll_comm *cm = ag->comm;
    uint32_t C = cm->n_channels;
    ag->chunk = a->bytes;
    ag->slice =
        a->slice_bytes && a->slice_bytes < a->bytes ? a->slice_bytes : a->bytes;
    ag->n_slices = (uint32_t)((ag->chunk + ag->slice - 1) / ag->slice);
    ag->steps = (uint32_t)cm->n - 1;
    for (int r = 0; r < cm->n; r++) {
        if (mroce_coll_is_local(cm, r))
            mroce_coll_copy(cm, r, MROCE_COLL_RBUF, (size_t)r * a->bytes,
                            MROCE_COLL_SBUF, 0, a->bytes);
        for (uint32_t c = 0; c < C; c++) {
            struct ag_chan *ch = chan(ag, r, (int)c);
            ch->m = c < ag->n_slices ? (ag->n_slices - c + C - 1) / C : 0;
            ch->total = ch->m * ag->steps;
            if (mroce_coll_is_local(cm, r))
                ag->left += 2 * (long)ch->total;
        }
    }
    return mroce_coll_allgather_progress(ag) < 0 ? ag->err : 0;
}

int mroce_coll_allgather_start(struct mroce_coll_comm *comm,
                               const struct mroce_coll_allgather_args *args,
                               struct mroce_coll_allgather **out)
{
    if (!out)
        return MROCE_EINVAL;
    *out = NULL;
    /* The tag (step * slices + slice) must fit 32 bits: slices <= bytes. */
    if (!comm || !args || !args->bytes ||
        args->bytes > comm->buf_bytes / (size_t)comm->n ||
        args->bytes > UINT32_MAX / (size_t)comm->n)
        return MROCE_EINVAL;
    if (!mroce_coll_comm_ready(comm))
        return MROCE_ESTATE;
    struct mroce_coll_allgather *ag = calloc(1, sizeof(*ag));
    if (!ag)
        return MROCE_ENOMEM;
    ag->comm = comm;
    ag->ch = calloc((size_t)comm->n * comm->n_channels, sizeof(*ag->ch));
    int err = ag->ch ? ag_setup(ag, args) : MROCE_ENOMEM;
    if (err) {
        mroce_coll_allgather_free(ag);
        return err;
    }
    *out = ag;
    return 0;
}

void mroce_coll_allgather_free(struct mroce_coll_allgather *ag)
{
    if (!ag)
        return;
    free(ag->ch);
    free(ag);
}

/* Differs per rank and per offset (also across 256-byte periods), so a
 * chunk in the wrong place or shifted by a slice is caught. */
static uint8_t pattern(int r, size_t i)
{
    return (uint8_t)(r * 37 + i * 11 + (i >> 8) * 5 + 1);
}

void mroce_coll_allgather_fill(struct mroce_coll_comm *comm, size_t bytes)
{
    for (int r = 0; r < comm->n; r++)
        for (size_t i = 0; mroce_coll_is_local(comm, r) && i < bytes; i++)
            comm->rank[r].sbuf[i] = pattern(r, i);
}

long mroce_coll_allgather_check(const struct mroce_coll_comm *comm,
                                size_t bytes, int *bad_rank)
{
    for (int r = 0; r < comm->n; r++)
        for (int src = 0; mroce_coll_is_local(comm, r) && src < comm->n; src++)
            for (size_t i = 0; i < bytes; i++) {
                size_t off = (size_t)src * bytes + i;
                if (comm->rank[r].rbuf[off] != pattern(src, i)) {
                    if (bad_rank)
                        *bad_rank = r;
                    return (long)off;
                }
            }
    return -1;
}
