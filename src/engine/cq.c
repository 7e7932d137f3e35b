/* Completion queues: a ring of caller-visible work completions. */
#include "engine/eng.h"

int mroce_cq_create(struct mroce_ctx *ctx, uint32_t depth,
                    struct mroce_cq **out)
{
    if (!depth || depth > (1u << 24))
        return MROCE_EINVAL;
    struct mroce_cq *cq = eng_alloc(ctx, sizeof(*cq));
    if (!cq)
        return MROCE_ENOMEM;
    cq->ring = eng_alloc(ctx, (size_t)depth * sizeof(*cq->ring));
    if (!cq->ring) {
        eng_free(ctx, cq);
        return MROCE_ENOMEM;
    }
    cq->ctx = ctx;
    cq->depth = depth;
    ENG_LIST_ADD(ctx->cqs, cq);
    *out = cq;
    return 0;
}

int mroce_cq_destroy(struct mroce_cq *cq)
{
    if (cq->users)
        return MROCE_EBUSY;
    ENG_LIST_DEL(cq->ctx->cqs, cq);
    eng_free(cq->ctx, cq->ring);
    eng_free(cq->ctx, cq);
    return 0;
}

/* A post succeeds only while count + pending < depth, so every
 * completion already has its room here and the ring never overflows. */
bool eng_cq_reserve(struct mroce_cq *cq)
{
    if (cq->count + cq->pending >= cq->depth)
        return false;
    cq->pending++;
    return true;
}

void eng_cq_push(struct mroce_cq *cq, const struct mroce_wc *wc)
{
    cq->ring[(cq->head + cq->count) % cq->depth] = *wc;
    cq->count++;
    cq->pending--;
}

int mroce_poll_cq(struct mroce_cq *cq, int n, struct mroce_wc *wc)
{
    int got = 0;
    while (got < n && cq->count) {
        wc[got++] = cq->ring[cq->head];
        cq->head = (cq->head + 1) % cq->depth;
        cq->count--;
    }
    return got;
}
