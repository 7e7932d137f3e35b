/* Incast and permutation (see pattern.h). Per flow four counters of pieces
 * (writes posted and completed, receives posted and completed) are the
 * whole state. Every work request carries its flow index as wr_id, so a
 * completion finds its flow directly; a connection and stream carry at
 * most one flow each way, so the receive a WRITE_IMM consumes is always
 * one posted for that flow. */
#include "coll/pattern.h"

#include <stdlib.h>
#include <string.h>

struct pat_flow {
    uint16_t tx_posted, tx_done, rx_posted, rx_done;
};

struct mroce_coll_pattern {
    struct mroce_coll_comm *comm;
    int kind;
    size_t bytes, piece;
    int n_flows;
    int err;
    uint64_t now;                 /* of the progress call running */
    struct mroce_coll_flow *flow; /* [n_flows], public part */
    struct pat_flow *st;          /* [n_flows] */
};

/* Where flow f lands in its receiver's rbuf: incast flows side by side,
 * a permutation's single incoming flow at 0. */
static size_t dst_off(const struct mroce_coll_pattern *p, int f)
{
    return p->kind == MROCE_COLL_INCAST ? (size_t)f * p->bytes : 0;
}

static int post_recvs(struct mroce_coll_pattern *p, int f)
{
    const struct mroce_coll_flow *fl = &p->flow[f];
    struct pat_flow *st = &p->st[f];
    while (st->rx_posted < p->comm->n_channels) {
        /* WRITE_IMM consumes a receive but places nothing there. */
        struct mroce_recv_wr wr = {.wr_id = (uint64_t)f,
                                   .stream = st->rx_posted};
        int err = mroce_post_recv(p->comm->rank[fl->dst].conn[fl->src], &wr);
        if (err)
            return err == MROCE_EAGAIN ? 0 : err;
        st->rx_posted++;
    }
    return 0;
}

static int post_writes(struct mroce_coll_pattern *p, int f)
{
    const struct mroce_coll_flow *fl = &p->flow[f];
    struct mroce_coll_rank *me = &p->comm->rank[fl->src];
    struct mroce_coll_rank *to = &p->comm->rank[fl->dst];
    struct pat_flow *st = &p->st[f];
    while (st->tx_posted < p->comm->n_channels) {
        size_t off = st->tx_posted * p->piece;
        uint8_t *dst = to->rbuf + dst_off(p, f) + off;
        struct mroce_send_wr wr = {
            .wr_id = (uint64_t)f,
            .stream = st->tx_posted,
            .sge = mroce_coll_sge(me->smr, me->sbuf + off, p->piece),
            .remote_addr = (uint64_t)(uintptr_t)dst,
            .rkey = mroce_mr_rkey(to->rmr),
            .imm = (uint32_t)fl->src};
        int err = mroce_post_write_imm(me->conn[fl->dst], &wr);
        if (err)
            return err == MROCE_EAGAIN ? 0 : err;
        st->tx_posted++;
    }
    return 0;
}

static int on_recv(struct mroce_coll_pattern *p, int f,
                   const struct mroce_wc *wc)
{
    struct pat_flow *st = &p->st[f];
    if (!wc->has_imm || wc->imm != (uint32_t)p->flow[f].src ||
        wc->byte_len != p->piece || st->rx_done >= p->comm->n_channels)
        return MROCE_EPROTO;
    if (++st->rx_done == p->comm->n_channels)
        p->flow[f].rx_done = p->now;
    return 0;
}

static int on_wc(struct mroce_coll_pattern *p, int r, const struct mroce_wc *wc)
{
    int f = wc->wr_id < (uint64_t)p->n_flows ? (int)wc->wr_id : -1;
    if (wc->status != MROCE_WC_SUCCESS || f < 0)
        return MROCE_EPROTO;
    if (wc->opcode == MROCE_WC_RECV_RDMA_WITH_IMM)
        return p->flow[f].dst == r ? on_recv(p, f, wc) : MROCE_EPROTO;
    struct pat_flow *st = &p->st[f];
    if (p->flow[f].src != r || wc->opcode == MROCE_WC_RECV ||
        st->tx_done >= st->tx_posted)
        return MROCE_EPROTO;
    if (++st->tx_done == p->comm->n_channels)
        p->flow[f].tx_done = p->now;
    return 0;
}

static int poll_rank(struct mroce_coll_pattern *p, int r)
{
    struct mroce_wc wc[32];
    int n;
    while ((n = mroce_poll_cq(p->comm->rank[r].cq, 32, wc)) > 0)
        for (int i = 0; i < n; i++) {
            int err = on_wc(p, r, &wc[i]);
            if (err)
                return err;
        }
    return 0;
}

/* Receives first, so a write never waits for its receive (RNR). */
static int post_flows(struct mroce_coll_pattern *p)
{
    for (int f = 0; f < p->n_flows; f++) {
        int err = post_recvs(p, f);
        if (err)
            return err;
    }
    for (int f = 0; f < p->n_flows; f++) {
        int err = post_writes(p, f);
        if (err)
            return err;
    }
    return 0;
}

int mroce_coll_pattern_done(const struct mroce_coll_pattern *p)
{
    int C = p->comm->n_channels;
    for (int f = 0; f < p->n_flows; f++)
        if (p->st[f].tx_done < C || p->st[f].rx_done < C)
            return 0;
    return 1;
}

int mroce_coll_pattern_progress(struct mroce_coll_pattern *p, uint64_t now)
{
    if (p->err)
        return p->err;
    p->now = now;
    int err = 0;
    for (int r = 0; !err && r < p->comm->n; r++)
        err = poll_rank(p, r);
    if (!err)
        err = post_flows(p);
    if (err)
        return p->err = err;
    return mroce_coll_pattern_done(p);
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A uniform random derangement: shuffle (Fisher-Yates) and retry while a
 * rank maps to itself; about e tries on average. The modulo bias of a
 * 64-bit draw over <= 256 ranks is negligible. */
static void derangement(int *to, int n, uint64_t seed)
{
    uint64_t x = seed;
    int fixed;
    do {
        for (int i = 0; i < n; i++)
            to[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(splitmix64(&x) % (uint64_t)(i + 1));
            int t = to[i];
            to[i] = to[j];
            to[j] = t;
        }
        fixed = 0;
        for (int i = 0; i < n; i++)
            fixed |= to[i] == i;
    } while (fixed);
}

static int make_flows(struct mroce_coll_pattern *p, uint64_t seed, uint64_t now)
{
    int n = p->comm->n;
    p->n_flows = p->kind == MROCE_COLL_INCAST ? n - 1 : n;
    p->flow = calloc((size_t)p->n_flows, sizeof(*p->flow));
    p->st = calloc((size_t)p->n_flows, sizeof(*p->st));
    int *to = calloc((size_t)n, sizeof(int));
    if (!p->flow || !p->st || !to) {
        free(to);
        return MROCE_ENOMEM;
    }
    if (p->kind == MROCE_COLL_PERMUTATION)
        derangement(to, n, seed);
    for (int f = 0; f < p->n_flows; f++) {
        int incast = p->kind == MROCE_COLL_INCAST;
        p->flow[f] = (struct mroce_coll_flow){.src = incast ? f + 1 : f,
                                              .dst = incast ? 0 : to[f],
                                              .start = now,
                                              .rx_done = UINT64_MAX,
                                              .tx_done = UINT64_MAX};
    }
    free(to);
    return 0;
}

static int bad_args(const struct mroce_coll_comm *comm,
                    const struct mroce_coll_pattern_args *a)
{
    if (!comm || !a || !a->bytes || a->bytes % comm->n_channels ||
        a->bytes / comm->n_channels > UINT32_MAX)
        return 1;
    if (a->kind == MROCE_COLL_INCAST)
        return a->bytes > comm->buf_bytes / (size_t)(comm->n - 1);
    return a->kind != MROCE_COLL_PERMUTATION || a->bytes > comm->buf_bytes;
}

int mroce_coll_pattern_start(struct mroce_coll_comm *comm,
                             const struct mroce_coll_pattern_args *args,
                             uint64_t now, struct mroce_coll_pattern **out)
{
    if (!out)
        return MROCE_EINVAL;
    *out = NULL;
    if (bad_args(comm, args))
        return MROCE_EINVAL;
    if (comm->borrowed) /* patterns drive every rank in one process */
        return MROCE_ESTATE;
    struct mroce_coll_pattern *p = calloc(1, sizeof(*p));
    if (!p)
        return MROCE_ENOMEM;
    p->comm = comm;
    p->kind = args->kind;
    p->bytes = args->bytes;
    p->piece = args->bytes / comm->n_channels;
    int err = make_flows(p, args->seed, now);
    if (!err && mroce_coll_pattern_progress(p, now) < 0)
        err = p->err;
    if (err) {
        mroce_coll_pattern_free(p);
        return err;
    }
    *out = p;
    return 0;
}

void mroce_coll_pattern_free(struct mroce_coll_pattern *p)
{
    if (!p)
        return;
    free(p->flow);
    free(p->st);
    free(p);
}

const struct mroce_coll_flow *
mroce_coll_pattern_flows(const struct mroce_coll_pattern *p, int *n_flows)
{
    if (n_flows)
        *n_flows = p->n_flows;
    return p->flow;
}

static uint8_t pattern(int src, size_t i)
{
    return (uint8_t)(src * 53 + i * 17 + (i >> 8) * 3 + 7);
}

void mroce_coll_pattern_fill(struct mroce_coll_comm *comm, size_t bytes)
{
    for (int r = 0; r < comm->n; r++)
        for (size_t i = 0; i < bytes; i++)
            comm->rank[r].sbuf[i] = pattern(r, i);
}

long mroce_coll_pattern_check(const struct mroce_coll_pattern *p, int *bad_rank)
{
    for (int f = 0; f < p->n_flows; f++) {
        const uint8_t *rb = p->comm->rank[p->flow[f].dst].rbuf;
        for (size_t i = 0; i < p->bytes; i++) {
            size_t off = dst_off(p, f) + i;
            if (rb[off] != pattern(p->flow[f].src, i)) {
                if (bad_rank)
                    *bad_rank = p->flow[f].dst;
                return (long)off;
            }
        }
    }
    return -1;
}
