/* The device list (one device, mroce0), device names and GUIDs, the
 * virtual sysfs attributes, and opening and closing a context (one soft
 * NIC per opened context). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <mroce/mroce_verbs.h>

#include "ibverbs/sv.h"

#define SV_SYSFS_DIR "/sys/class/infiniband/" SV_DEV_NAME

static struct ibv_device sv_dev = {
    .node_type = IBV_NODE_CA,
    .transport_type = IBV_TRANSPORT_IB, /* RoCE reports IB transport */
    .name = SV_DEV_NAME,
    .dev_name = "uverbs_" SV_DEV_NAME,
    .dev_path = "/sys/class/infiniband_verbs/uverbs_" SV_DEV_NAME,
    .ibdev_path = SV_SYSFS_DIR,
};
struct ibv_device *sv_device = &sv_dev;

struct ibv_device **ibv_get_device_list_1_1(int *num)
{
    struct ibv_device **l = calloc(2, sizeof(*l));
    if (!l) {
        errno = ENOMEM;
        return NULL;
    }
    l[0] = &sv_dev;
    if (num)
        *num = 1;
    return l;
}
SV_1_1(ibv_get_device_list);

void ibv_free_device_list_1_1(struct ibv_device **list)
{
    free(list);
}
SV_1_1(ibv_free_device_list);

const char *ibv_get_device_name_1_1(struct ibv_device *dev)
{
    return dev ? dev->name : NULL;
}
SV_1_1(ibv_get_device_name);

int ibv_get_device_index(struct ibv_device *dev)
{
    return dev == &sv_dev ? 0 : -1;
}

/* The node GUID: an EUI-64 from the profile's IPv4 address (the low 4
 * bytes of an IPv6 one) behind the local-admin prefix 02:4d:52 ("MR"). */
__be64 ibv_get_device_guid_1_1(struct ibv_device *dev)
{
    (void)dev;
    struct mroce_addr a;
    const char *ip = getenv("MROCE_VERBS_IP");
    if (mroce_addr_parse(ip && *ip ? ip : "127.0.0.1", &a))
        memset(&a, 0, sizeof(a));
    const uint8_t *b = a.family == MROCE_AF_INET6 ? a.ip + 12 : a.ip;
    uint8_t g[8] = {0x02, 0x4d, 0x52, 0xff, b[0], b[1], b[2], b[3]};
    __be64 v;
    memcpy(&v, g, sizeof(v));
    return v;
}
SV_1_1(ibv_get_device_guid);

const char *ibv_get_sysfs_path(void)
{
    return "/sys";
}

/* The device's own attributes come from here; anything else is a real
 * file read as rdma-core reads it. */
static int sysfs_virtual(const char *file, char *buf, size_t size)
{
    static const char *const kv[][2] = {
        {"board_id", "MROCE_SOFT_NIC"},
        {"hca_type", "mroce"},
        {"hw_rev", "1"},
        {"node_type", "1: CA"},
        {"node_desc", "mroce soft NIC"},
    };
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
        if (!strcmp(file, kv[i][0])) {
            int n = snprintf(buf, size, "%s", kv[i][1]);
            return n < (int)size ? n : (int)size - 1;
        }
    errno = ENOENT;
    return -1;
}

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
                        size_t size)
{
    if (!dir || !file || !buf || !size) {
        errno = EINVAL;
        return -1;
    }
    if (!strcmp(dir, SV_SYSFS_DIR))
        return sysfs_virtual(file, buf, size);
    char *path;
    if (asprintf(&path, "%s/%s", dir, file) < 0)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, size);
    close(fd);
    if (n <= 0)
        return -1;
    if ((size_t)n < size) {
        buf[n] = '\0';
        if (n && buf[n - 1] == '\n')
            buf[--n] = '\0';
    }
    return (int)n;
}

/* ---- contexts ---- */

static void ctx_ops(struct sv_ctx *c)
{
    struct ibv_context *ic = &c->vctx.context;
    ic->ops.poll_cq = sv_poll_cq;
    ic->ops.req_notify_cq = sv_req_notify_cq;
    ic->ops.post_send = sv_post_send;
    ic->ops.post_recv = sv_post_recv;
    ic->ops.post_srq_recv = sv_post_srq_recv;
    c->vctx.query_port = sv_query_port;
    c->vctx.query_device_ex = sv_query_device_ex;
    c->vctx.sz = sizeof(c->vctx);
}

static struct sv_ctx *ctx_new(struct ibv_device *dev)
{
    struct sv_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    struct ibv_context *ic = &c->vctx.context;
    ic->device = dev;
    ic->cmd_fd = -1;
    ic->async_fd = -1;
    ic->num_comp_vectors = 1;
    ic->abi_compat = __VERBS_ABI_IS_EXTENDED;
    pthread_mutex_init(&ic->mutex, NULL);
    pthread_mutex_init(&c->ctl, NULL);
    ctx_ops(c);
    return c;
}

static void ctx_free(struct sv_ctx *c)
{
    struct ibv_context *ic = &c->vctx.context;
    if (ic->async_fd >= 0)
        close(ic->async_fd);
    sv_async_fini(&c->async);
    pthread_mutex_destroy(&ic->mutex);
    pthread_mutex_destroy(&c->ctl);
    free(c->qps);
    free(c);
}

static int ctx_async_fd(struct sv_ctx *c)
{
    int fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
    if (fd < 0)
        return errno;
    c->vctx.context.async_fd = fd;
    return sv_async_init(&c->async);
}

/* One soft NIC: the profile (the environment, then the extension's
 * explicit values), the async fd, the datapath and its thread. */
struct ibv_context *sv_open(struct ibv_device *dev,
                            const struct mroce_verbs_attr *a)
{
    if (dev != &sv_dev) {
        errno = ENODEV;
        return NULL;
    }
    struct sv_ctx *c = ctx_new(dev);
    if (!c) {
        errno = ENOMEM;
        return NULL;
    }
    char why[256];
    int err = 0;
    if (sv_profile_load(&c->prof, why, sizeof(why))) {
        fprintf(stderr, "mroce verbs: %s\n", why);
        err = EINVAL;
    }
    if (!err && a)
        err = sv_profile_override(&c->prof, a);
    if (!err)
        err = ctx_async_fd(c);
    if (!err)
        err = sv_nic_open(c);
    if (err) {
        ctx_free(c);
        errno = err;
        return NULL;
    }
    return &c->vctx.context;
}

struct ibv_context *ibv_open_device_1_1(struct ibv_device *dev)
{
    return sv_open(dev, NULL);
}
SV_1_1(ibv_open_device);

/* Objects the application did not destroy go with the context. */
static void ctx_drop_objects(struct sv_ctx *c)
{
    for (uint32_t i = 0; i < c->qps_cap; i++)
        if (c->qps[i])
            ibv_destroy_qp(&c->qps[i]->ibv);
    while (c->cqs) {
        struct sv_cq *cq = c->cqs;
        cq->users = 0;
        if (ibv_destroy_cq(&cq->ibv))
            break;
    }
}

int ibv_close_device_1_1(struct ibv_context *ic)
{
    if (!ic)
        return EINVAL;
    struct sv_ctx *c = sv_ctx_of(ic);
    ctx_drop_objects(c);
    sv_nic_close(c); /* the engine frees its PDs and MRs with it */
    ctx_free(c);
    return 0;
}
SV_1_1(ibv_close_device);
