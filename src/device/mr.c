/* Protection domains and memory regions. Keys are 32-bit random values
 * (R-SEC-2) in an open-addressing table so lookups on the receive path
 * are O(1). */
#include "device/dev.h"

int dev_pd_alloc(struct mroce_dev *dev, struct mroce_pd **out)
{
    struct mroce_pd *pd = dev_alloc(dev, sizeof(*pd));
    if (!pd)
        return MROCE_ENOMEM;
    pd->dev = dev;
    DEV_LIST_ADD(dev->pds, pd);
    *out = pd;
    return 0;
}

int mroce_pd_free(struct mroce_pd *pd)
{
    if (pd->refs)
        return MROCE_EBUSY;
    DEV_LIST_DEL(pd->dev->pds, pd);
    dev_free(pd->dev, pd);
    return 0;
}

static uint32_t mr_slot(const struct mroce_dev *dev, uint32_t key)
{
    return (key * 2654435761u) & (dev->mr_cap - 1);
}

struct mroce_mr *dev_mr_find(struct mroce_dev *dev, uint32_t key)
{
    if (!dev->mr_cap)
        return NULL;
    for (uint32_t i = mr_slot(dev, key);; i = (i + 1) & (dev->mr_cap - 1)) {
        struct mroce_mr *mr = dev->mrs[i];
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
static int mr_grow(struct mroce_dev *dev)
{
    if ((dev->mr_count + 1) * 2 <= dev->mr_cap)
        return 0;
    uint32_t cap = dev->mr_cap ? dev->mr_cap * 2 : 64;
    struct mroce_mr **tab = dev_alloc(dev, cap * sizeof(*tab));
    if (!tab)
        return MROCE_ENOMEM;
    for (uint32_t i = 0; i < dev->mr_cap; i++)
        if (dev->mrs[i])
            mr_insert(tab, cap, dev->mrs[i]);
    dev_free(dev, dev->mrs);
    dev->mrs = tab;
    dev->mr_cap = cap;
    return 0;
}

int mroce_reg_mr(struct mroce_pd *pd, void *addr, size_t len, unsigned access,
                 struct mroce_mr **out)
{
    struct mroce_dev *dev = pd->dev;
    unsigned all = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                   MROCE_ACCESS_REMOTE_READ;
    if (!addr || !len || (access & ~all) ||
        ((access & MROCE_ACCESS_REMOTE_WRITE) &&
         !(access & MROCE_ACCESS_LOCAL_WRITE)))
        return MROCE_EINVAL;
    if (mr_grow(dev))
        return MROCE_ENOMEM;
    struct mroce_mr *mr = dev_alloc(dev, sizeof(*mr));
    if (!mr)
        return MROCE_ENOMEM;
    *mr = (struct mroce_mr){
        .dev = dev, .pd = pd, .addr = addr, .len = len, .access = access};
    do
        mr->key = (uint32_t)dev_rand(dev);
    while (!mr->key || dev_mr_find(dev, mr->key));
    mr_insert(dev->mrs, dev->mr_cap, mr);
    dev->mr_count++;
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
static void mr_remove(struct mroce_dev *dev, struct mroce_mr *mr)
{
    uint32_t mask = dev->mr_cap - 1, i = mr_slot(dev, mr->key);
    while (dev->mrs[i] != mr)
        i = (i + 1) & mask;
    for (uint32_t j = (i + 1) & mask; dev->mrs[j]; j = (j + 1) & mask) {
        uint32_t home = mr_slot(dev, dev->mrs[j]->key);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            dev->mrs[i] = dev->mrs[j];
            i = j;
        }
    }
    dev->mrs[i] = NULL;
    dev->mr_count--;
}

int mroce_dereg_mr(struct mroce_mr *mr)
{
    if (mr->refs)
        return MROCE_EBUSY;
    mr_remove(mr->dev, mr);
    mr->pd->refs--;
    dev_free(mr->dev, mr);
    return 0;
}

/* R-SEC-4: key exists, same PD, access right, range inside the region
 * (with overflow-safe arithmetic). */
uint8_t *dev_mr_resolve(struct mroce_pd *pd, uint32_t key, uint64_t va,
                        uint64_t len, unsigned access, int *err,
                        struct mroce_mr **mrp)
{
    struct mroce_mr *mr = dev_mr_find(pd->dev, key);
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
