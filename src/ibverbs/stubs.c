/* The rest of rdma-core 44's exported interface: symbols a program or a
 * library may link against that the soft NIC does not implement. Each
 * fails cleanly -- an errno value, or NULL/-1 with errno set (EOPNOTSUPP
 * for a feature the device lacks, ENOSYS for the kernel and provider
 * interface, which has no kernel behind it here) -- and never touches its
 * arguments. */
#include <errno.h>
#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <stdbool.h>
#include <string.h>

#include "ibverbs/sv.h"

static void *stub_null(int err)
{
    errno = err;
    return NULL;
}

/* ---- features the device does not have (query.c says so) ---- */

struct ibv_ah *ibv_create_ah_1_1(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
    (void)pd, (void)attr;
    return stub_null(EOPNOTSUPP); /* address handles serve UD: no UD */
}
SV_1_1(ibv_create_ah);

int ibv_destroy_ah_1_1(struct ibv_ah *ah)
{
    (void)ah;
    return EINVAL; /* none can exist */
}
SV_1_1(ibv_destroy_ah);

int ibv_init_ah_from_wc(struct ibv_context *c, uint8_t port, struct ibv_wc *wc,
                        struct ibv_grh *grh, struct ibv_ah_attr *ah)
{
    (void)c, (void)port, (void)wc, (void)grh, (void)ah;
    errno = EOPNOTSUPP;
    return -1;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
                                     struct ibv_grh *grh, uint8_t port)
{
    (void)pd, (void)wc, (void)grh, (void)port;
    return stub_null(EOPNOTSUPP);
}

int ibv_attach_mcast_1_1(struct ibv_qp *qp, const union ibv_gid *gid,
                         uint16_t lid)
{
    (void)qp, (void)gid, (void)lid;
    return EOPNOTSUPP; /* no multicast (max_mcast_grp 0) */
}
SV_1_1(ibv_attach_mcast);

int ibv_detach_mcast_1_1(struct ibv_qp *qp, const union ibv_gid *gid,
                         uint16_t lid)
{
    (void)qp, (void)gid, (void)lid;
    return EOPNOTSUPP;
}
SV_1_1(ibv_detach_mcast);

struct ibv_srq *ibv_create_srq_1_1(struct ibv_pd *pd,
                                   struct ibv_srq_init_attr *a)
{
    (void)pd, (void)a;
    return stub_null(EOPNOTSUPP); /* no SRQ (max_srq 0) */
}
SV_1_1(ibv_create_srq);

int ibv_modify_srq_1_1(struct ibv_srq *srq, struct ibv_srq_attr *a, int mask)
{
    (void)srq, (void)a, (void)mask;
    return EOPNOTSUPP;
}
SV_1_1(ibv_modify_srq);

int ibv_query_srq_1_1(struct ibv_srq *srq, struct ibv_srq_attr *a)
{
    (void)srq, (void)a;
    return EOPNOTSUPP;
}
SV_1_1(ibv_query_srq);

int ibv_destroy_srq_1_1(struct ibv_srq *srq)
{
    (void)srq;
    return EINVAL;
}
SV_1_1(ibv_destroy_srq);

int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
                 size_t length, int access)
{
    (void)mr, (void)flags, (void)pd, (void)addr, (void)length, (void)access;
    errno = EOPNOTSUPP;
    return IBV_REREG_MR_ERR_INPUT; /* the old region stays valid */
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
                                 size_t length, uint64_t iova, int fd,
                                 int access)
{
    (void)pd, (void)offset, (void)length, (void)iova, (void)fd, (void)access;
    return stub_null(EOPNOTSUPP); /* no device memory to map a dmabuf to */
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
    (void)qp;
    return stub_null(EOPNOTSUPP); /* QPs take the classic post calls */
}

/* MetaRoCE places each packet where it belongs as it arrives (R-ORD-2):
 * data is not guaranteed to land in order. */
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
                               uint32_t flags)
{
    (void)qp, (void)op, (void)flags;
    return 0;
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
    (void)qp, (void)ece;
    return EOPNOTSUPP;
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
    (void)qp, (void)ece;
    return EOPNOTSUPP;
}

int ibv_resolve_eth_l2_from_gid(struct ibv_context *c, struct ibv_ah_attr *a,
                                uint8_t eth_mac[6], uint16_t *vid)
{
    (void)c, (void)a, (void)eth_mac, (void)vid;
    return EOPNOTSUPP; /* the datapath resolves its neighbours itself */
}

/* ---- sharing objects between processes (needs a kernel) ---- */

struct ibv_context *ibv_import_device(int cmd_fd)
{
    (void)cmd_fd;
    return stub_null(EOPNOTSUPP);
}

struct ibv_pd *ibv_import_pd(struct ibv_context *c, uint32_t handle)
{
    (void)c, (void)handle;
    return stub_null(EOPNOTSUPP);
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
    (void)pd;
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t handle)
{
    (void)pd, (void)handle;
    return stub_null(EOPNOTSUPP);
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
    (void)mr;
}

struct ibv_dm *ibv_import_dm(struct ibv_context *c, uint32_t handle)
{
    (void)c, (void)handle;
    return stub_null(EOPNOTSUPP);
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
    (void)dm;
}

/* ---- fork: nothing is pinned for a device to write into, so fork()
 * needs no preparation ---- */

int ibv_fork_init(void)
{
    return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
    return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size);
int ibv_dontfork_range(void *base, size_t size)
{
    (void)base, (void)size;
    return 0;
}

int ibv_dofork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size)
{
    (void)base, (void)size;
    return 0;
}

/* ---- kernel ABI converters (librdmacm's; no kernel CM here): the
 * destination is zeroed ---- */

void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, const void *src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, const void *src)
{
    (void)src;
    memset(dst, 0, sizeof(*dst));
}

void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, const void *src);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, const void *src)
{
    (void)src;
    memset(dst, 0, sizeof(*dst));
}

void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
                                 const struct ib_user_path_rec *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
                                 const struct ib_user_path_rec *src)
{
    (void)src;
    memset(dst, 0, sizeof(*dst));
}

void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
                               const struct ibv_sa_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
                               const struct ibv_sa_path_rec *src)
{
    (void)src;
    memset(dst, 0, sizeof(*dst));
}

/* ---- the provider interface (IBVERBS_PRIVATE_34): no provider plugs
 * into this library ---- */

bool verbs_allow_disassociate_destroy;

#define SV_PRIV_INT(name)                                                      \
    int name(void);                                                            \
    int name(void)                                                             \
    {                                                                          \
        errno = ENOSYS;                                                        \
        return ENOSYS;                                                         \
    }
#define SV_PRIV_NULL(name)                                                     \
    void *name(void);                                                          \
    void *name(void)                                                           \
    {                                                                          \
        return stub_null(ENOSYS);                                              \
    }
#define SV_PRIV_VOID(name)                                                     \
    void name(void);                                                           \
    void name(void)                                                            \
    {                                                                          \
    }

SV_PRIV_NULL(_verbs_init_and_alloc_context)
SV_PRIV_NULL(verbs_open_device)
SV_PRIV_VOID(verbs_register_driver_34)
SV_PRIV_VOID(verbs_set_ops)
SV_PRIV_VOID(verbs_uninit_context)
SV_PRIV_VOID(verbs_init_cq)
SV_PRIV_VOID(__verbs_log)
SV_PRIV_INT(execute_ioctl)
SV_PRIV_INT(ibv_read_ibdev_sysfs_file)

unsigned int __ioctl_final_num_attrs(void);
unsigned int __ioctl_final_num_attrs(void)
{
    return 0;
}

#define SV_CMD(x) SV_PRIV_INT(ibv_cmd_##x)
SV_CMD(advise_mr)
SV_CMD(alloc_dm)
SV_CMD(alloc_mw)
SV_CMD(alloc_pd)
SV_CMD(attach_mcast)
SV_CMD(close_xrcd)
SV_CMD(create_ah)
SV_CMD(create_counters)
SV_CMD(create_cq)
SV_CMD(create_cq_ex)
SV_CMD(create_flow)
SV_CMD(create_flow_action_esp)
SV_CMD(create_qp)
SV_CMD(create_qp_ex)
SV_CMD(create_qp_ex2)
SV_CMD(create_rwq_ind_table)
SV_CMD(create_srq)
SV_CMD(create_srq_ex)
SV_CMD(create_wq)
SV_CMD(dealloc_mw)
SV_CMD(dealloc_pd)
SV_CMD(dereg_mr)
SV_CMD(destroy_ah)
SV_CMD(destroy_counters)
SV_CMD(destroy_cq)
SV_CMD(destroy_flow)
SV_CMD(destroy_flow_action)
SV_CMD(destroy_qp)
SV_CMD(destroy_rwq_ind_table)
SV_CMD(destroy_srq)
SV_CMD(destroy_wq)
SV_CMD(detach_mcast)
SV_CMD(free_dm)
SV_CMD(get_context)
SV_CMD(modify_cq)
SV_CMD(modify_flow_action_esp)
SV_CMD(modify_qp)
SV_CMD(modify_qp_ex)
SV_CMD(modify_srq)
SV_CMD(modify_wq)
SV_CMD(open_qp)
SV_CMD(open_xrcd)
SV_CMD(poll_cq)
SV_CMD(post_recv)
SV_CMD(post_send)
SV_CMD(post_srq_recv)
SV_CMD(query_context)
SV_CMD(query_device_any)
SV_CMD(query_mr)
SV_CMD(query_port)
SV_CMD(query_qp)
SV_CMD(query_srq)
SV_CMD(read_counters)
SV_CMD(reg_dm_mr)
SV_CMD(reg_dmabuf_mr)
SV_CMD(reg_mr)
SV_CMD(req_notify_cq)
SV_CMD(rereg_mr)
SV_CMD(resize_cq)
