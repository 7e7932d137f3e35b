/* The device: what the MetaRoCE engine (src/engine) and the RoCEv2
 * engine (src/roce) share, below both -- memory, randomness, the
 * endpoint's address and planes, and the verbs objects PD, MR and CQ.
 * Neither engine calls the other; both call this. Sans-I/O: libc basics
 * only; memory and randomness come through the hooks the context was
 * opened with (src/verbs fills the defaults).
 *
 * The public functions on these objects (mroce_reg_mr, mroce_poll_cq,
 * ...) are defined here; the two that take a context (mroce_pd_alloc,
 * mroce_cq_create) are src/verbs wrappers around dev_pd_alloc and
 * dev_cq_create.
 *
 * Thread-safety: none; a device and its objects belong to the thread
 * that drives its context. */
#ifndef MROCE_DEVICE_DEV_H
#define MROCE_DEVICE_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <mroce/mroce.h>

/* Embedded in the context (struct mroce_ctx, src/engine/eng.h). */
struct mroce_dev {
    struct mroce_hooks hooks; /* every member set (src/verbs defaults) */
    /* R-SEC-7: every random draw of both engines: hooks.rand64, or the
     * default mroce_ctx_open chose (the kernel CSPRNG, or the
     * deterministic generator over rng_state when the application asked
     * for a deterministic run) */
    uint64_t (*rng)(void *ud);
    void *rng_ud;
    uint64_t rng_state;
    uint64_t tx_planes; /* R-PATH-14: planes data may be sent to now */
    struct mroce_pd *pds;
    struct mroce_cq *cqs;
    struct mroce_mr **mrs; /* open-addressing table by key */
    uint32_t mr_cap, mr_count;
    uint32_t n_planes;      /* R-ENC-10: ports of the NIC, >= 1 */
    struct mroce_addr addr; /* this endpoint's IP address */
    struct mroce_addr plane_addr[MROCE_MAX_PLANES]; /* R-ENC-10, by plane */
    struct mroce_mr **virt; /* payload-free regions, sorted by address */
    uint32_t n_virt, cap_virt;
};

struct mroce_mr {
    struct mroce_dev *dev;
    struct mroce_pd *pd;
    uint8_t *addr;
    uint64_t len;
    uint32_t key;
    unsigned access;
    uint32_t refs;          /* posted WRs pointing into it */
    struct mroce_mr_virt v; /* payload-free: the hooks (place set) */
};

struct mroce_pd {
    struct mroce_dev *dev;
    struct mroce_pd *next, *prev; /* device list */
    uint32_t refs;                /* regions and connections using it */
};

struct mroce_cq {
    struct mroce_dev *dev;
    struct mroce_cq *next, *prev; /* device list */
    struct mroce_wc *ring;
    uint32_t depth, head, count;
    uint32_t pending; /* posted WRs whose completion is not pushed yet */
    uint32_t users;   /* connections using it */
};

/* Intrusive doubly linked lists (pds and cqs on the device). */
#define DEV_LIST_ADD(head, o)                                                  \
    do {                                                                       \
        (o)->next = (head);                                                    \
        if (head)                                                              \
            (head)->prev = (o);                                                \
        (head) = (o);                                                          \
    } while (0)
#define DEV_LIST_DEL(head, o)                                                  \
    do {                                                                       \
        if ((o)->prev)                                                         \
            (o)->prev->next = (o)->next;                                       \
        else                                                                   \
            (head) = (o)->next;                                                \
        if ((o)->next)                                                         \
            (o)->next->prev = (o)->prev;                                       \
    } while (0)

/* dev.c: hooks must have alloc, free and log set. */
void dev_init(struct mroce_dev *d, const struct mroce_hooks *hooks);
/* Frees every region, CQ and PD (their users must be gone). */
void dev_release(struct mroce_dev *d);
void *dev_alloc(struct mroce_dev *d, size_t size); /* zeroed or NULL */
void dev_free(struct mroce_dev *d, void *p);
uint64_t dev_rand(struct mroce_dev *d);
/* Bytes of the device's own tables (the key table). */
size_t dev_table_bytes(const struct mroce_dev *d);

/* mr.c: protection domains */
int dev_pd_alloc(struct mroce_dev *d, struct mroce_pd **out);

/* mr.c; the lookups inline (every data packet received resolves its
 * target), always: GCC otherwise takes dev_mr_resolve out of line once
 * the responder's placing is inlined (+6 instructions a data packet). */
static inline uint32_t dev_mr_slot(const struct mroce_dev *d, uint32_t key)
{
    return (key * 2654435761u) & (d->mr_cap - 1);
}

static inline __attribute__((always_inline)) struct mroce_mr *
dev_mr_find(struct mroce_dev *d, uint32_t key)
{
    if (!d->mr_cap)
        return NULL;
    for (uint32_t i = dev_mr_slot(d, key);; i = (i + 1) & (d->mr_cap - 1)) {
        struct mroce_mr *mr = d->mrs[i];
        if (!mr || mr->key == key)
            return mr;
    }
}

/* R-SEC-4: resolves [va, va+len) in key's region of pd for access: key
 * exists, same PD, access right, range inside the region (overflow-safe
 * arithmetic). NULL and *err (ENOENT, EACCES, ERANGE) else. *mrp (if not
 * NULL): the region. */
static inline __attribute__((always_inline)) uint8_t *
dev_mr_resolve(struct mroce_pd *pd, uint32_t key, uint64_t va, uint64_t len,
               unsigned access, int *err, struct mroce_mr **mrp)
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

/* Payload bytes between the engines' packets and application memory:
 * every copy of payload into or out of a registered region goes through
 * these, so a payload-free region (mroce_reg_mr_virt) sees it through its
 * hooks. Without such regions they are a memcpy. */
void dev_mem_put_slow(struct mroce_dev *d, uint8_t *dst, const uint8_t *src,
                      size_t len);
void dev_mem_get_slow(struct mroce_dev *d, uint8_t *dst, const uint8_t *src,
                      size_t len);
/* True if [p, p+len) lies in a payload-free region (no bytes to point
 * at: a zero-copy transmit must copy through the hook instead). */
bool dev_mem_is_virt(const struct mroce_dev *d, const uint8_t *p, size_t len);

static inline void dev_mem_put(struct mroce_dev *d, uint8_t *dst,
                               const uint8_t *src, size_t len)
{
    if (d->n_virt)
        dev_mem_put_slow(d, dst, src, len);
    else
        memcpy(dst, src, len);
}

static inline void dev_mem_get(struct mroce_dev *d, uint8_t *dst,
                               const uint8_t *src, size_t len)
{
    if (d->n_virt)
        dev_mem_get_slow(d, dst, src, len);
    else
        memcpy(dst, src, len);
}

/* cq.c */
int dev_cq_create(struct mroce_dev *d, uint32_t depth, struct mroce_cq **out);
/* Room for one more completion; false: the CQ is full (EAGAIN). */
bool dev_cq_reserve(struct mroce_cq *cq);
/* Pushes a completion into room reserved before. */
void dev_cq_push(struct mroce_cq *cq, const struct mroce_wc *wc);

#endif
