/* Stand-in libefa.so.1 (see mlx5.c): the two symbols perftest names.
 * No device is an EFA. */
#include <errno.h>
#include <infiniband/efadv.h>
#include <stddef.h>

struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ibvctx,
                                  struct ibv_qp_init_attr_ex *attr_ex,
                                  struct efadv_qp_init_attr *efa_attr,
                                  uint32_t inlen)
{
    (void)ibvctx, (void)attr_ex, (void)efa_attr, (void)inlen;
    errno = EOPNOTSUPP;
    return NULL;
}

int efadv_query_device(struct ibv_context *ibvctx,
                       struct efadv_device_attr *attr, uint32_t inlen)
{
    (void)ibvctx, (void)attr, (void)inlen;
    return EOPNOTSUPP;
}
