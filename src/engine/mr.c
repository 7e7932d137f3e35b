/* Protection domains and memory regions. Keys are 32-bit random values
 * (R-SEC-2) in an open-addressing table so lookups on the receive path
 * are O(1). */
#include "engine/eng.h"

int mroce_pd_alloc(struct mroce_ctx *ctx, struct mroce_pd **out)
{
    struct mroce_pd *pd = eng_alloc(ctx, sizeof(*pd));
    if (!pd)
        return MROCE_ENOMEM;
    pd->ctx = ctx;
    ENG_LIST_ADD(ctx->pds, pd);
    *out = pd;
    return 0;
}

int mroce_pd_free(struct mroce_pd *pd)
{
    if (pd->refs)
        return MROCE_EBUSY;
    ENG_LIST_DEL(pd->ctx->pds, pd);
    eng_free(pd->ctx, pd);
    return 0;
}

static uint32_t mr_slot(const struct mroce_ctx *ctx, uint32_t key)
{
    return (key * 2654435761u) & (ctx->mr_cap - 1);
}

struct mroce_mr *eng_mr_find(struct mroce_ctx *ctx, uint32_t key)
{
    if (!ctx->mr_cap)
        return NULL;
    for (uint32_t i = mr_slot(ctx, key);; i = (i + 1) & (ctx->mr_cap - 1)) {
        struct mroce_mr *mr = ctx->mrs[i];
        if (!mr || mr->key == key)
            return mr;
    }
}

static void mr_insert(struct mroce_mr **tab, uint32_t cap, struct mroce_mr *mr)
{
    uint32_t i = (mr->key * 2654435761u) & (cap - 1);
    while (tab[i])
        i = (i + 1) & (cap - 1);
    tab[i] = mr;
}

/* Keeps the table at most half full. */
static int mr_grow(struct mroce_ctx *ctx)
{
    if ((ctx->mr_count + 1) * 2 <= ctx->mr_cap)
        return 0;
    uint32_t cap = ctx->mr_cap ? ctx->mr_cap * 2 : 64;
    struct mroce_mr **tab = eng_alloc(ctx, cap * sizeof(*tab));
    if (!tab)
        return MROCE_ENOMEM;
    for (uint32_t i = 0; i < ctx->mr_cap; i++)
        if (ctx->mrs[i])
            mr_insert(tab, cap, ctx->mrs[i]);
    eng_free(ctx, ctx->mrs);
    ctx->mrs = tab;
    ctx->mr_cap = cap;
    return 0;
}

int mroce_reg_mr(struct mroce_pd *pd, void *addr, size_t len, unsigned access,
                 struct mroce_mr **out)
{
    struct mroce_ctx *ctx = pd->ctx;
    unsigned all = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                   MROCE_ACCESS_REMOTE_READ;
    if (!addr || !len || (access & ~all) ||
        ((access & MROCE_ACCESS_REMOTE_WRITE) &&
         !(access & MROCE_ACCESS_LOCAL_WRITE)))
        return MROCE_EINVAL;
    if (mr_grow(ctx))
        return MROCE_ENOMEM;
    struct mroce_mr *mr = eng_alloc(ctx, sizeof(*mr));
    if (!mr)
        return MROCE_ENOMEM;
    *mr = (struct mroce_mr){
        .ctx = ctx, .pd = pd, .addr = addr, .len = len, .access = access};
    do
        mr->key = (uint32_t)eng_rand(ctx);
    while (!mr->key || eng_mr_find(ctx, mr->key));
    mr_insert(ctx->mrs, ctx->mr_cap, mr);
    ctx->mr_count++;
    pd->refs++;
    *out = mr;
    return 0;
}

uint32_t mroce_mr_lkey(const struct mroce_mr *mr)
{
    return mr->key;
}

uint32_t mroce_mr_rkey(const struct mroce_mr *mr)
{
    return mr->key;
}

/* Backward-shift deletion keeps probe chains intact. */
static void mr_remove(struct mroce_ctx *ctx, struct mroce_mr *mr)
{
    uint32_t mask = ctx->mr_cap - 1, i = mr_slot(ctx, mr->key);
    while (ctx->mrs[i] != mr)
        i = (i + 1) & mask;
    for (uint32_t j = (i + 1) & mask; ctx->mrs[j]; j = (j + 1) & mask) {
        uint32_t home = mr_slot(ctx, ctx->mrs[j]->key);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            ctx->mrs[i] = ctx->mrs[j];
            i = j;
        }
    }
    ctx->mrs[i] = NULL;
    ctx->mr_count--;
}

int mroce_dereg_mr(struct mroce_mr *mr)
{
    if (mr->refs)
        return MROCE_EBUSY;
    mr_remove(mr->ctx, mr);
    mr->pd->refs--;
    eng_free(mr->ctx, mr);
    return 0;
}

/* R-SEC-4: key exists, same PD, access right, range inside the region
 * (with overflow-safe arithmetic). */
uint8_t *eng_mr_resolve(struct mroce_ctx *ctx, struct mroce_pd *pd,
                        uint32_t key, uint64_t va, uint64_t len,
                        unsigned access, int *err, struct mroce_mr **mrp)
{
    struct mroce_mr *mr = eng_mr_find(ctx, key);
    if (!mr || mr->pd != pd) {
        *err = MROCE_ENOENT;
        return NULL;
    }
    if ((mr->access & access) != access) {
        *err = MROCE_EACCES;
        return NULL;
    }
    uint64_t base = (uint64_t)(uintptr_t)mr->addr;
    if (va < base || va - base > mr->len || len > mr->len - (va - base)) {
        *err = MROCE_ERANGE;
        return NULL;
    }
    if (mrp)
        *mrp = mr;
    *err = 0;
    return mr->addr + (va - base);
}
