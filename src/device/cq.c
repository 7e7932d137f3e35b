/* Completion queues: a ring of caller-visible work completions. */
#include "device/dev.h"

int dev_cq_create(struct mroce_dev *dev, uint32_t depth, struct mroce_cq **out)
{
    if (!depth || depth > (1u << 24))
        return MROCE_EINVAL;
    struct mroce_cq *cq = dev_alloc(dev, sizeof(*cq));
    if (!cq)
        return MROCE_ENOMEM;
    cq->ring = dev_alloc(dev, (size_t)depth * sizeof(*cq->ring));
    if (!cq->ring) {
        dev_free(dev, cq);
        return MROCE_ENOMEM;
    }
    cq->dev = dev;
    cq->depth = depth;
    DEV_LIST_ADD(dev->cqs, cq);
    *out = cq;
    return 0;
}

int mroce_cq_destroy(struct mroce_cq *cq)
{
    if (cq->users)
        return MROCE_EBUSY;
    DEV_LIST_DEL(cq->dev->cqs, cq);
    dev_free(cq->dev, cq->ring);
    dev_free(cq->dev, cq);
    return 0;
}

/* A post succeeds only while count + pending < depth, so every
 * completion already has its room here and the ring never overflows. */
bool dev_cq_reserve(struct mroce_cq *cq)
{
    if (cq->count + cq->pending >= cq->depth)
        return false;
    cq->pending++;
    return true;
}

void dev_cq_push(struct mroce_cq *cq, const struct mroce_wc *wc)
{
    cq->ring[(cq->head + cq->count) % cq->depth] = *wc;
    cq->count++;
    cq->pending--;
}

/* Out of line: the loop's set-up (a saved register) stays off the
 * empty poll, which is most polls. */
static __attribute__((noinline)) int cq_take(struct mroce_cq *cq, int n,
                                             struct mroce_wc *wc)
{
    int got = 0;
    while (got < n && cq->count) {
        wc[got++] = cq->ring[cq->head];
        cq->head = (cq->head + 1) % cq->depth;
        cq->count--;
    }
    return got;
}

int mroce_poll_cq(struct mroce_cq *cq, int n, struct mroce_wc *wc)
{
    if (!cq->count)
        return 0;
    return cq_take(cq, n, wc);
}
