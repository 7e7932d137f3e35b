/* Connection memory sized by use: the sender's DSN ring, the retransmit
 * FIFO and every path's PSN ring start small at connect and double when
 * what is in flight fills them, up to the negotiated windows (R-DSN-7,
 * R-SACK-1); paths are allocated for the negotiated count. Also the byte
 * accounting of mroce_ctx_state_bytes. */
#include <string.h>

#include "engine/eng.h"
#include "engine/seal.h"

#define MEM_DSN_INIT 64u /* first DSN ring and retransmit FIFO */
#define MEM_PSN_INIT 8u  /* first PSN ring of a path */

static uint32_t mem_min(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

static size_t mem_psn_slot(void)
{
    return 2 * sizeof(uint32_t) + sizeof(uint16_t);
}

/* One allocation holds a path's PSN->DSN map, the ts each PSN was sent
 * with (R-VAL-1) and their charges. */
static int mem_psn_alloc(struct mroce_ctx *ctx, struct path_tx *pt,
                         uint32_t cap)
{
    uint8_t *b = eng_alloc(ctx, cap * mem_psn_slot());
    if (!b)
        return MROCE_ENOMEM;
    pt->psn_dsn = (uint32_t *)(void *)b; /* then the ts, eng_psn_ts */
    pt->psn_len = (uint16_t *)(void *)(b + 2 * cap * sizeof(uint32_t));
    pt->psn_mask = cap - 1;
    return 0;
}

/* The PSN ring is full (eng_mem_psn_room): it doubles. Every slot moves
 * (they are the last om + 1 PSNs sent), so that the ts of a PSN resolved
 * but recently sent still checks an ACK (R-VAL-1). */
int eng_mem_psn_grow(struct mroce_conn *c, struct path_tx *pt)
{
    uint32_t *dsn = pt->psn_dsn, *ts = eng_psn_ts(pt, 0), om = pt->psn_mask;
    uint16_t *len = pt->psn_len;
    if (mem_psn_alloc(c->ctx, pt, 2 * (om + 1)))
        return MROCE_ENOMEM;
    for (uint32_t psn = pt->next_psn - (om + 1); psn != pt->next_psn; psn++) {
        pt->psn_dsn[psn & pt->psn_mask] = dsn[psn & om];
        *eng_psn_ts(pt, psn & pt->psn_mask) = ts[psn & om];
        pt->psn_len[psn & pt->psn_mask] = len[psn & om];
    }
    eng_free(c->ctx, dsn);
    return 0;
}

/* The DSN ring is full: it doubles (eng_mem_txp_room). */
int eng_mem_txp_grow(struct mroce_conn *c)
{
    uint32_t nm = 2 * c->txp_mask + 1;
    struct txp *n = eng_alloc(c->ctx, (nm + 1) * sizeof(*n));
    if (!n)
        return MROCE_ENOMEM;
    for (uint32_t d = c->snd_una; d != c->snd_next; d++)
        n[d & nm] = c->txp[d & c->txp_mask];
    eng_free(c->ctx, c->txp);
    c->txp = n;
    c->txp_mask = nm;
    return 0;
}

/* Room for one more retransmit entry; the FIFO keeps its order. */
int eng_mem_retx_room(struct mroce_conn *c)
{
    if (c->retx_count <= c->retx_mask)
        return 0;
    uint32_t nm = 2 * c->retx_mask + 1;
    uint32_t *n = eng_alloc(c->ctx, (nm + 1) * sizeof(*n));
    if (!n)
        return MROCE_ENOMEM;
    for (uint32_t k = 0; k < c->retx_count; k++)
        n[k] = c->retx[(c->retx_head + k) & c->retx_mask];
    eng_free(c->ctx, c->retx);
    c->retx = n;
    c->retx_head = 0;
    c->retx_mask = nm;
    return 0;
}

static int mem_paths(struct mroce_conn *c, uint32_t n, uint32_t psn_cap)
{
    struct mroce_ctx *ctx = c->ctx;
    c->ptx = eng_alloc(ctx, n * sizeof(*c->ptx));
    c->prx = eng_alloc(ctx, n * sizeof(*c->prx));
    c->ack_pending = eng_alloc(ctx, n);
    c->ack_queue = eng_alloc(ctx, n * sizeof(*c->ack_queue));
    c->rec_queue = eng_alloc(ctx, n * sizeof(*c->rec_queue));
    c->rack = eng_alloc(ctx, ctx->dev.n_planes * sizeof(*c->rack));
    c->tt_leaves = eng_ptimer_leaves(n);
    c->ttree = eng_alloc(ctx, c->tt_leaves * sizeof(*c->ttree));
    if (!c->ptx || !c->prx || !c->ack_pending || !c->ack_queue ||
        !c->rec_queue || !c->rack || !c->ttree)
        return MROCE_ENOMEM;
    eng_ptimer_reset(c);
    for (uint32_t p = 0; p < n; p++)
        if (mem_psn_alloc(ctx, &c->ptx[p], psn_cap))
            return MROCE_ENOMEM;
    return 0;
}

/* At connect: n paths and rings for dsn_window / path_window. ENOMEM
 * leaves nothing allocated. */
int eng_mem_connect(struct mroce_conn *c, uint32_t n, uint32_t dsn_window,
                    uint32_t path_window)
{
    uint32_t cap = mem_min(MEM_DSN_INIT, dsn_window);
    c->txp = eng_alloc(c->ctx, cap * sizeof(*c->txp));
    c->retx = eng_alloc(c->ctx, cap * sizeof(*c->retx));
    c->txp_mask = c->retx_mask = cap - 1;
    c->n_alloc_paths = n;
    if (!c->txp || !c->retx ||
        mem_paths(c, n, mem_min(MEM_PSN_INIT, path_window))) {
        eng_mem_free(c);
        return MROCE_ENOMEM;
    }
    return 0;
}

void eng_mem_free(struct mroce_conn *c)
{
    struct mroce_ctx *ctx = c->ctx;
    for (uint32_t p = 0; c->ptx && p < c->n_alloc_paths; p++)
        eng_free(ctx, c->ptx[p].psn_dsn);
    void *bufs[] = {c->ptx, c->prx,  c->ack_pending, c->ack_queue, c->rec_queue,
                    c->txp, c->retx, c->rack,        c->ttree};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        eng_free(ctx, bufs[i]);
    c->ptx = NULL;
    c->prx = NULL;
    c->ack_pending = NULL;
    c->ack_queue = NULL;
    c->rec_queue = NULL;
    c->txp = NULL;
    c->retx = NULL;
    c->rack = NULL;
    c->ttree = NULL;
    c->tt_leaves = 0;
    c->n_alloc_paths = 0;
}

/* ---- accounting (mroce_ctx_state_bytes) ---- */

static size_t mem_per_path(void)
{
    return sizeof(struct path_tx) + sizeof(struct path_rx) + 1 +
           sizeof(uint16_t) + sizeof(struct eng_tent); /* ACK queue, timer
                                                           tree node */
}

/* Queues sized by the application's depths (sq_depth, rq_depth), each
 * rounded up to a power of two. */
static size_t mem_queues(const struct mroce_conn *c)
{
    size_t sq = c->sq_mask + 1, rq = c->rq_mask + 1; /* ring slots */
    size_t per = sizeof(struct stream) + sq * sizeof(struct sq_slot) +
                 rq * sizeof(struct mroce_recv_wr) +
                 rq * sizeof(struct mroce_mr *) + sq * sizeof(struct in_msg);
    return c->attr.n_streams * per;
}

static size_t mem_conn_fixed(const struct mroce_conn *c)
{
    return sizeof(struct mroce_conn) + c->attr.dsn_window / 8 + 8 +
           c->attr.max_rd * sizeof(struct rd_resp);
}

static void mem_conn_add(const struct mroce_conn *c,
                         struct mroce_state_bytes *o)
{
    o->conns++;
    o->paths += c->n_alloc_paths;
    o->conn_bytes += mem_conn_fixed(c) + mem_queues(c);
    if (c->rack)
        o->conn_bytes += c->ctx->dev.n_planes * sizeof(struct eng_rack);
    o->path_bytes += c->n_alloc_paths * mem_per_path();
    if (c->tt_leaves > c->n_alloc_paths) /* the timer tree's power of two */
        o->conn_bytes +=
            (c->tt_leaves - c->n_alloc_paths) * sizeof(struct eng_tent);
    if (c->txp)
        o->dsn_bytes += (c->txp_mask + 1) * sizeof(struct txp) +
                        (c->retx_mask + 1) * sizeof(uint32_t);
    for (uint32_t p = 0; p < c->n_alloc_paths; p++)
        o->psn_bytes += (c->ptx[p].psn_mask + 1) * mem_psn_slot();
    o->sec_bytes += eng_seal_bytes(c);
}

void mroce_ctx_state_bytes(const struct mroce_ctx *ctx,
                           struct mroce_state_bytes *out)
{
    memset(out, 0, sizeof(*out));
    out->per_conn = sizeof(struct mroce_conn);
    out->per_path = mem_per_path();
    out->per_dsn_slot = sizeof(struct txp) + sizeof(uint32_t);
    out->per_psn_slot = mem_psn_slot();
    for (const struct mroce_conn *c = ctx->conns; c; c = c->next)
        mem_conn_add(c, out);
    out->ctx_bytes = sizeof(*ctx) + eng_sched_bytes(ctx) +
                     ctx->conn_hash_cap * sizeof(*ctx->conn_hash) +
                     dev_table_bytes(&ctx->dev);
    if (ctx->aead_buf) /* R-AEAD-8: an encrypted payload opens into it */
        out->sec_bytes += ctx->mtu;
    out->total = out->conn_bytes + out->path_bytes + out->dsn_bytes +
                 out->psn_bytes + out->ctx_bytes + out->sec_bytes;
}
