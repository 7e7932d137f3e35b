/* The device's memory, randomness and teardown. */
#include <string.h>

#include "device/dev.h"

void dev_init(struct mroce_dev *d, const struct mroce_hooks *hooks)
{
    memset(d, 0, sizeof(*d));
    d->hooks = *hooks;
    d->n_planes = 1;
    d->tx_planes = UINT64_MAX;
}

void *dev_alloc(struct mroce_dev *d, size_t size)
{
    void *p = d->hooks.alloc(d->hooks.ud, size);
    if (p)
        memset(p, 0, size);
    return p;
}

void dev_free(struct mroce_dev *d, void *p)
{
    if (p)
        d->hooks.free(d->hooks.ud, p);
}

/* R-SEC-7: the source mroce_ctx_open chose (src/verbs). */
uint64_t dev_rand(struct mroce_dev *d)
{
    return d->rng(d->rng_ud);
}

size_t dev_table_bytes(const struct mroce_dev *d)
{
    return d->mr_cap * sizeof(*d->mrs);
}

/* Regions first (they hold their PD), then CQs, then PDs. */
void dev_release(struct mroce_dev *d)
{
    for (uint32_t i = 0; i < d->mr_cap; i++)
        if (d->mrs[i])
            dev_free(d, d->mrs[i]);
    dev_free(d, d->mrs);
    dev_free(d, d->virt);
    d->mrs = NULL;
    d->virt = NULL;
    d->n_virt = d->cap_virt = 0;
    d->mr_cap = d->mr_count = 0;
    while (d->cqs) {
        struct mroce_cq *cq = d->cqs;
        cq->users = 0;
        mroce_cq_destroy(cq);
    }
    while (d->pds) {
        struct mroce_pd *pd = d->pds;
        pd->refs = 0;
        mroce_pd_free(pd);
    }
}
