/* Protection domains and memory regions: one to one onto the device's
 * objects (src/device). Keys come from the engine's key source (random,
 * R-SEC-2); the local and remote key are the same value. */
#include <errno.h>
#include <stdlib.h>

#include "ibverbs/sv.h"

struct ibv_pd *ibv_alloc_pd_1_1(struct ibv_context *ic)
{
    struct sv_ctx *c = sv_ctx_of(ic);
    struct sv_pd *p = calloc(1, sizeof(*p));
    if (!p) {
        errno = ENOMEM;
        return NULL;
    }
    sv_ctl_lock(c);
    int rc = mroce_pd_alloc(c->eng, &p->pd);
    sv_ctl_unlock(c);
    if (rc) {
        free(p);
        errno = sv_errno(rc);
        return NULL;
    }
    p->ibv.context = ic;
    return &p->ibv;
}
SV_1_1(ibv_alloc_pd);

int ibv_dealloc_pd_1_1(struct ibv_pd *pd)
{
    struct sv_pd *p = (struct sv_pd *)(void *)pd;
    struct sv_ctx *c = sv_ctx_of(pd->context);
    sv_ctl_lock(c);
    int rc = mroce_pd_free(p->pd);
    sv_ctl_unlock(c);
    if (rc)
        return sv_errno(rc); /* EBUSY: regions or QPs still use it */
    free(p);
    return 0;
}
SV_1_1(ibv_dealloc_pd);

/* Flags a region may carry. REMOTE_ATOMIC is accepted (the device does
 * no atomics, so it grants nothing); flags of the optional range
 * (relaxed ordering) are hints and dropped, as rdma-core does where the
 * device lacks them. */
static int mr_access(unsigned access, unsigned *out)
{
    access &= ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE;
    unsigned known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    if (access & ~known)
        return EOPNOTSUPP; /* MW bind, zero-based, on-demand paging */
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(access & IBV_ACCESS_LOCAL_WRITE))
        return EINVAL; /* IB rule: remote write needs local write */
    *out = (access & IBV_ACCESS_LOCAL_WRITE ? MROCE_ACCESS_LOCAL_WRITE : 0) |
           (access & IBV_ACCESS_REMOTE_WRITE ? MROCE_ACCESS_REMOTE_WRITE : 0) |
           (access & IBV_ACCESS_REMOTE_READ ? MROCE_ACCESS_REMOTE_READ : 0);
    return 0;
}

static struct ibv_mr *mr_reg(struct ibv_pd *pd, void *addr, size_t len,
                             unsigned access)
{
    struct sv_ctx *c = sv_ctx_of(pd->context);
    unsigned acc = 0;
    int err = mr_access(access, &acc);
    if (!err && (!addr || !len))
        err = EINVAL;
    struct sv_mr *m = err ? NULL : calloc(1, sizeof(*m));
    if (!err && !m)
        err = ENOMEM;
    if (err) {
        errno = err;
        return NULL;
    }
    sv_ctl_lock(c);
    int rc =
        mroce_reg_mr(((struct sv_pd *)(void *)pd)->pd, addr, len, acc, &m->mr);
    sv_ctl_unlock(c);
    if (rc) {
        free(m);
        errno = sv_errno(rc);
        return NULL;
    }
    m->ibv = (struct ibv_mr){.context = pd->context,
                             .pd = pd,
                             .addr = addr,
                             .length = len,
                             .lkey = mroce_mr_lkey(m->mr),
                             .rkey = mroce_mr_rkey(m->mr)};
    return &m->ibv;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr_1_1(struct ibv_pd *pd, void *addr, size_t length,
                              int access)
{
    return mr_reg(pd, addr, length, (unsigned)access);
}
SV_1_1(ibv_reg_mr);

/* A region's remote addresses are its virtual addresses: an iova other
 * than addr is refused. */
#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
                               uint64_t iova, int access)
{
    if (iova != (uint64_t)(uintptr_t)addr) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    return mr_reg(pd, addr, length, (unsigned)access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
                                uint64_t iova, unsigned int access)
{
    return ibv_reg_mr_iova(pd, addr, length, iova, (int)access);
}

int ibv_dereg_mr_1_1(struct ibv_mr *mr)
{
    struct sv_mr *m = (struct sv_mr *)(void *)mr;
    struct sv_ctx *c = sv_ctx_of(mr->context);
    sv_ctl_lock(c);
    int rc = mroce_dereg_mr(m->mr);
    sv_ctl_unlock(c);
    if (rc)
        return sv_errno(rc); /* EBUSY: a posted request still uses it */
    free(m);
    return 0;
}
SV_1_1(ibv_dereg_mr);

int sv_errno(int e)
{
    switch (e) {
    case MROCE_OK:
        return 0;
    case MROCE_ENOMEM:
        return ENOMEM;
    case MROCE_EAGAIN:
        return EAGAIN;
    case MROCE_ENOENT:
        return ENOENT;
    case MROCE_EBUSY:
        return EBUSY;
    case MROCE_EACCES:
        return EACCES;
    case MROCE_ERANGE:
        return ERANGE;
    default:
        return EINVAL;
    }
}
