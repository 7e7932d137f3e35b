/* The IBVERBS_1.0 symbols of rdma-core's compatibility layer: the ABI of
 * libibverbs 1.0 (2006), whose structures differ from today's. Programs
 * built since use the IBVERBS_1.1 versions; these exist so that an old
 * binary loads and is told ENOSYS instead of crashing. Also the retired
 * provider hook ibv_register_driver@IBVERBS_1.1. */
#include <errno.h>
#include <stddef.h>

#define COMPAT_PTR(name)                                                       \
    __attribute__((symver(#name "@IBVERBS_1.0"))) void *compat_##name(void);   \
    void *compat_##name(void)                                                  \
    {                                                                          \
        errno = ENOSYS;                                                        \
        return NULL;                                                           \
    }
#define COMPAT_INT(name)                                                       \
    __attribute__((symver(#name "@IBVERBS_1.0"))) int compat_##name(void);     \
    int compat_##name(void)                                                    \
    {                                                                          \
        errno = ENOSYS;                                                        \
        return -1;                                                             \
    }
#define COMPAT_VOID(name, ver)                                                 \
    __attribute__((symver(#name "@" ver))) void compat_##name(void);           \
    void compat_##name(void)                                                   \
    {                                                                          \
    }

COMPAT_PTR(ibv_get_device_list)
COMPAT_PTR(ibv_get_device_name)
COMPAT_PTR(ibv_open_device)
COMPAT_PTR(ibv_alloc_pd)
COMPAT_PTR(ibv_reg_mr)
COMPAT_PTR(ibv_create_cq)
COMPAT_PTR(ibv_create_srq)
COMPAT_PTR(ibv_create_qp)
COMPAT_PTR(ibv_create_ah)
COMPAT_INT(ibv_close_device)
COMPAT_INT(ibv_get_async_event)
COMPAT_INT(ibv_query_device)
COMPAT_INT(ibv_query_port)
COMPAT_INT(ibv_query_gid)
COMPAT_INT(ibv_query_pkey)
COMPAT_INT(ibv_dealloc_pd)
COMPAT_INT(ibv_dereg_mr)
COMPAT_INT(ibv_resize_cq)
COMPAT_INT(ibv_destroy_cq)
COMPAT_INT(ibv_get_cq_event)
COMPAT_INT(ibv_modify_srq)
COMPAT_INT(ibv_query_srq)
COMPAT_INT(ibv_destroy_srq)
COMPAT_INT(ibv_query_qp)
COMPAT_INT(ibv_modify_qp)
COMPAT_INT(ibv_destroy_qp)
COMPAT_INT(ibv_destroy_ah)
COMPAT_INT(ibv_attach_mcast)
COMPAT_INT(ibv_detach_mcast)
COMPAT_INT(ibv_get_device_guid) /* 0 would read as a GUID: -1 */
COMPAT_VOID(ibv_free_device_list, "IBVERBS_1.0")
COMPAT_VOID(ibv_ack_async_event, "IBVERBS_1.0")
COMPAT_VOID(ibv_ack_cq_events, "IBVERBS_1.0")
COMPAT_VOID(ibv_register_driver, "IBVERBS_1.1")
