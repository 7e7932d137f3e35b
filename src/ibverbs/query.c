/* What the device says about itself: ibv_devinfo shows these. They are
 * the soft NIC's real limits (sv.h, the engine's), not a hardware
 * template: one port, Ethernet link layer, MTU 4096, one RoCE v2 GID
 * (R-SOFT-1), one SGE per request, no atomics, no SRQ, no UD. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ibverbs/sv.h"

#define Q_WIDTH_1X 1
#define Q_SPEED_EDR 32 /* 25 Gb/s a lane: about what loopback UDP moves */
#define Q_PHYS_LINKUP 5

static void query_dev_attr(struct ibv_context *ic, struct ibv_device_attr *a)
{
    memset(a, 0, sizeof(*a));
    snprintf(a->fw_ver, sizeof(a->fw_ver), "mroce soft NIC 1.0");
    a->node_guid = ibv_get_device_guid(ic->device);
    a->sys_image_guid = a->node_guid;
    a->max_mr_size = UINT64_C(1) << 40;
    a->page_size_cap = 4096;
    a->vendor_id = SV_VENDOR_ID;
    a->vendor_part_id = SV_VENDOR_PART;
    a->hw_ver = 1;
    a->max_qp = SV_MAX_QP;
    a->max_qp_wr = SV_MAX_QP_WR;
    a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN;
    a->max_sge = 1;
    a->max_sge_rd = 1;
    a->max_cq = 65536;
    a->max_cqe = SV_MAX_CQE;
    a->max_mr = 1 << 20;
    a->max_pd = 1 << 20;
    a->max_qp_rd_atom = SV_MAX_RD;
    a->max_res_rd_atom = SV_MAX_RD * SV_MAX_QP;
    a->max_qp_init_rd_atom = SV_MAX_RD;
    a->atomic_cap = IBV_ATOMIC_NONE;
    a->max_pkeys = 1;
    a->local_ca_ack_delay = 0; /* the engine acks within 2 us */
    a->phys_port_cnt = 1;
}

int ibv_query_device_1_1(struct ibv_context *ic, struct ibv_device_attr *a)
{
    query_dev_attr(ic, a);
    return 0;
}
SV_1_1(ibv_query_device);

int sv_query_device_ex(struct ibv_context *ic,
                       const struct ibv_query_device_ex_input *in,
                       struct ibv_device_attr_ex *attr, size_t len)
{
    if (in && in->comp_mask)
        return EINVAL;
    struct ibv_device_attr_ex a;
    memset(&a, 0, sizeof(a));
    query_dev_attr(ic, &a.orig_attr);
    a.phys_port_cnt_ex = 1;
    memset(attr, 0, len);
    memcpy(attr, &a, len < sizeof(a) ? len : sizeof(a));
    return 0;
}

static void query_port_attr(const struct sv_ctx *c, struct ibv_port_attr *a)
{
    memset(a, 0, sizeof(*a));
    a->state = IBV_PORT_ACTIVE;
    a->max_mtu = IBV_MTU_4096;
    a->active_mtu = IBV_MTU_4096;
    a->gid_tbl_len = 1;
    a->max_msg_sz = SV_MAX_MSG;
    a->pkey_tbl_len = 1;
    a->lid = c->port; /* R-SOFT-1 */
    a->max_vl_num = 1;
    a->active_width = Q_WIDTH_1X;
    a->active_speed = Q_SPEED_EDR;
    a->phys_state = Q_PHYS_LINKUP;
    a->link_layer = IBV_LINK_LAYER_ETHERNET;
}

int sv_query_port(struct ibv_context *ic, uint8_t port,
                  struct ibv_port_attr *attr, size_t len)
{
    if (port != 1)
        return EINVAL;
    struct ibv_port_attr a;
    query_port_attr(sv_ctx_of(ic), &a);
    memset(attr, 0, len);
    memcpy(attr, &a, len < sizeof(a) ? len : sizeof(a));
    return 0;
}

/* The exported symbol (programs built before the inline wrapper call
 * it): the attribute structure up to the old layout's end. */
#undef ibv_query_port
int ibv_query_port_1_1(struct ibv_context *ic, uint8_t port,
                       struct _compat_ibv_port_attr *attr)
{
    return sv_query_port(ic, port, (struct ibv_port_attr *)(void *)attr,
                         offsetof(struct ibv_port_attr, port_cap_flags2));
}
SV_1_1(ibv_query_port);

static int query_gid_entry(struct ibv_context *ic, uint32_t port,
                           uint32_t index, struct ibv_gid_entry *e)
{
    if (port != 1 || index != 0)
        return EINVAL;
    memset(e, 0, sizeof(*e));
    sv_addr_gid(&sv_ctx_of(ic)->addr, &e->gid);
    e->port_num = 1;
    e->gid_type = IBV_GID_TYPE_ROCE_V2;
    return 0;
}

int ibv_query_gid_1_1(struct ibv_context *ic, uint8_t port, int index,
                      union ibv_gid *gid)
{
    struct ibv_gid_entry e;
    if (index < 0 || query_gid_entry(ic, port, (uint32_t)index, &e))
        return -1;
    *gid = e.gid;
    return 0;
}
SV_1_1(ibv_query_gid);

int _ibv_query_gid_ex(struct ibv_context *ic, uint32_t port, uint32_t index,
                      struct ibv_gid_entry *entry, uint32_t flags,
                      size_t entry_size)
{
    struct ibv_gid_entry e;
    if (flags || entry_size < sizeof(e))
        return EINVAL;
    int rc = query_gid_entry(ic, port, index, &e);
    if (!rc)
        *entry = e;
    return rc;
}

ssize_t _ibv_query_gid_table(struct ibv_context *ic,
                             struct ibv_gid_entry *entries, size_t max,
                             uint32_t flags, size_t entry_size)
{
    if (flags || entry_size < sizeof(*entries))
        return -EINVAL;
    if (!max)
        return -EINVAL;
    query_gid_entry(ic, 1, 0, entries);
    return 1;
}

/* rdma-core's private enum ibv_gid_type_sysfs: 1 is RoCE v2. */
#define Q_GID_TYPE_SYSFS_ROCE_V2 1

int ibv_query_gid_type(struct ibv_context *ic, uint8_t port, unsigned int index,
                       int *type)
{
    struct ibv_gid_entry e;
    if (query_gid_entry(ic, port, index, &e))
        return -1;
    *type = Q_GID_TYPE_SYSFS_ROCE_V2;
    return 0;
}

int ibv_query_pkey_1_1(struct ibv_context *ic, uint8_t port, int index,
                       __be16 *pkey)
{
    (void)ic;
    if (port != 1 || index != 0)
        return -1;
    *pkey = 0xFFFF; /* the default full-membership key (byte order moot) */
    return 0;
}
SV_1_1(ibv_query_pkey);

int ibv_get_pkey_index(struct ibv_context *ic, uint8_t port, __be16 pkey)
{
    (void)ic;
    return port == 1 && pkey == 0xFFFF ? 0 : -1;
}
