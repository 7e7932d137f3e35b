/* Protection domains and memory regions. Keys are 32-bit random values
 * (R-SEC-2) in an open-addressing table so lookups on the receive path
 * are O(1) (dev_mr_find and dev_mr_resolve, inline in dev.h). */
#include <string.h>

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

static bool mr_access_ok(unsigned access)
{
    unsigned all = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                   MROCE_ACCESS_REMOTE_READ;
    return !(access & ~all) && (!(access & MROCE_ACCESS_REMOTE_WRITE) ||
                                (access & MROCE_ACCESS_LOCAL_WRITE));
}

/* A new region with a fresh key (R-SEC-2), or NULL (ENOMEM). */
static struct mroce_mr *mr_new(struct mroce_pd *pd, uint8_t *addr, size_t len,
                               unsigned access)
{
    struct mroce_dev *dev = pd->dev;
    if (mr_grow(dev))
        return NULL;
    struct mroce_mr *mr = dev_alloc(dev, sizeof(*mr));
    if (!mr)
        return NULL;
    *mr = (struct mroce_mr){
        .dev = dev, .pd = pd, .addr = addr, .len = len, .access = access};
    do
        mr->key = (uint32_t)dev_rand(dev);
    while (!mr->key || dev_mr_find(dev, mr->key));
    mr_insert(dev->mrs, dev->mr_cap, mr);
    dev->mr_count++;
    pd->refs++;
    return mr;
}

int mroce_reg_mr(struct mroce_pd *pd, void *addr, size_t len, unsigned access,
                 struct mroce_mr **out)
{
    if (!addr || !len || !mr_access_ok(access))
        return MROCE_EINVAL;
    struct mroce_mr *mr = mr_new(pd, addr, len, access);
    if (!mr)
        return MROCE_ENOMEM;
    *out = mr;
    return 0;
}

/* ---- Payload-free regions ---- */

static uint64_t mr_base(const struct mroce_mr *mr)
{
    return (uint64_t)(uintptr_t)mr->addr;
}

/* Index of the first payload-free region that starts above a. */
static uint32_t virt_upper(const struct mroce_dev *dev, uint64_t a)
{
    uint32_t lo = 0, hi = dev->n_virt;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (mr_base(dev->virt[mid]) <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The payload-free region holding [p, p+len), or NULL. */
static struct mroce_mr *virt_find(const struct mroce_dev *dev, const uint8_t *p,
                                  size_t len)
{
    uint64_t a = (uint64_t)(uintptr_t)p;
    uint32_t i = virt_upper(dev, a);
    if (i == 0)
        return NULL;
    struct mroce_mr *mr = dev->virt[i - 1];
    uint64_t off = a - mr_base(mr);
    return off <= mr->len && len <= mr->len - off ? mr : NULL;
}

static bool virt_room(struct mroce_dev *dev)
{
    if (dev->n_virt < dev->cap_virt)
        return true;
    uint32_t cap = dev->cap_virt ? dev->cap_virt * 2 : 8;
    struct mroce_mr **v = dev_alloc(dev, cap * sizeof(*v));
    if (!v)
        return false;
    if (dev->n_virt)
        memcpy(v, dev->virt, dev->n_virt * sizeof(*v));
    dev_free(dev, dev->virt);
    dev->virt = v;
    dev->cap_virt = cap;
    return true;
}

int mroce_reg_mr_virt(struct mroce_pd *pd, uint64_t va, size_t len,
                      unsigned access, const struct mroce_mr_virt *v,
                      struct mroce_mr **out)
{
    struct mroce_dev *dev = pd->dev;
    if (!va || !len || va + len < va || !v || !v->place || !v->fill ||
        !mr_access_ok(access))
        return MROCE_EINVAL;
    uint32_t i = virt_upper(dev, va);
    if ((i > 0 && mr_base(dev->virt[i - 1]) + dev->virt[i - 1]->len > va) ||
        (i < dev->n_virt && mr_base(dev->virt[i]) < va + len))
        return MROCE_EINVAL; /* overlaps: the hooks would be ambiguous */
    if (!virt_room(dev))
        return MROCE_ENOMEM;
    struct mroce_mr *mr = mr_new(pd, (uint8_t *)(uintptr_t)va, len, access);
    if (!mr)
        return MROCE_ENOMEM;
    mr->v = *v;
    memmove(&dev->virt[i + 1], &dev->virt[i],
            (dev->n_virt - i) * sizeof(*dev->virt));
    dev->virt[i] = mr;
    dev->n_virt++;
    *out = mr;
    return 0;
}

static void virt_remove(struct mroce_dev *dev, struct mroce_mr *mr)
{
    uint32_t i = virt_upper(dev, mr_base(mr)) - 1;
    memmove(&dev->virt[i], &dev->virt[i + 1],
            (dev->n_virt - i - 1) * sizeof(*dev->virt));
    dev->n_virt--;
}

void dev_mem_put_slow(struct mroce_dev *d, uint8_t *dst, const uint8_t *src,
                      size_t len)
{
    struct mroce_mr *mr = virt_find(d, dst, len);
    if (mr)
        mr->v.place(mr->v.ud, (uint64_t)(uintptr_t)dst - mr_base(mr), src, len);
    else
        memcpy(dst, src, len);
}

void dev_mem_get_slow(struct mroce_dev *d, uint8_t *dst, const uint8_t *src,
                      size_t len)
{
    struct mroce_mr *mr = virt_find(d, src, len);
    if (mr)
        mr->v.fill(mr->v.ud, (uint64_t)(uintptr_t)src - mr_base(mr), dst, len);
    else
        memcpy(dst, src, len);
}

bool dev_mem_is_virt(const struct mroce_dev *d, const uint8_t *p, size_t len)
{
    return d->n_virt && virt_find(d, p, len);
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
    uint32_t mask = dev->mr_cap - 1, i = dev_mr_slot(dev, mr->key);
    while (dev->mrs[i] != mr)
        i = (i + 1) & mask;
    for (uint32_t j = (i + 1) & mask; dev->mrs[j]; j = (j + 1) & mask) {
        uint32_t home = dev_mr_slot(dev, dev->mrs[j]->key);
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
    if (mr->v.place)
        virt_remove(mr->dev, mr);
    mr->pd->refs--;
    dev_free(mr->dev, mr);
    return 0;
}
