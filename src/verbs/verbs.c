/* The context and the parts of the public API that need the C library:
 * default hooks (malloc, a seeded generator) and the string tables. The
 * verbs objects themselves live in the sans-I/O device (src/device),
 * which both engines share. */
#include <stdlib.h>
#include <string.h>

#include "engine/eng.h"
#include "roce/roce.h"

static void *verbs_alloc(void *ud, size_t size)
{
    (void)ud;
    return calloc(1, size);
}

static void verbs_free(void *ud, void *p)
{
    (void)ud;
    free(p);
}

static void verbs_nolog(void *ud, int level, const char *msg)
{
    (void)ud;
    (void)level;
    (void)msg;
}

/* The device of the context: the hooks with their defaults, the address
 * and the planes. */
static void verbs_dev(struct mroce_ctx *ctx, const struct mroce_ctx_attr *a)
{
    struct mroce_hooks h = a->hooks;
    if (!a->hooks.alloc || !a->hooks.free) {
        h.alloc = verbs_alloc;
        h.free = verbs_free;
    }
    if (!a->hooks.log)
        h.log = verbs_nolog;
    /* the seed is used when hooks.rand64 is NULL */
    dev_init(&ctx->dev, &h, a->seed);
    ctx->dev.addr = a->addr;
    ctx->dev.n_planes = a->n_planes ? a->n_planes : 1;
}

/* A RoCEv2 context gets a device of the baseline engine (src/roce). */
static int verbs_transport(struct mroce_ctx *ctx,
                           const struct mroce_ctx_attr *a)
{
    if (a->transport == MROCE_TRANSPORT_METAROCE)
        return 0;
    if (a->transport != MROCE_TRANSPORT_ROCEV2)
        return MROCE_EINVAL;
    struct roce_dev_attr ra = {.link_mbps = ctx->link_mbps,
                               .dcqcn = !a->rocev2_no_dcqcn,
                               .no_icrc_check = a->no_icrc,
                               .no_icrc_tx = a->no_icrc};
    return roce_dev_create(&ctx->dev, &ra, &ctx->roce);
}

static bool verbs_src_ports_ok(const struct mroce_ctx_attr *a)
{
    if (a->n_src_ports > MROCE_MAX_SRC_PORTS ||
        (a->n_src_ports && !a->src_ports))
        return false;
    for (uint32_t i = 0; i < a->n_src_ports; i++)
        if (!a->src_ports[i])
            return false;
    return true;
}

int mroce_ctx_open(const struct mroce_ctx_attr *a, struct mroce_ctx **out)
{
    uint32_t mtu = a->mtu ? a->mtu : 4096;
    if (mtu < 256 || mtu > 9000 || a->n_planes > MROCE_MAX_PLANES ||
        a->spray_run > MROCE_MAX_SPRAY_RUN ||
        (a->addr.family != MROCE_AF_INET && a->addr.family != MROCE_AF_INET6) ||
        !verbs_src_ports_ok(a))
        return MROCE_EINVAL;
    void *(*alloc)(void *, size_t) =
        a->hooks.alloc ? a->hooks.alloc : verbs_alloc;
    struct mroce_ctx *ctx = alloc(a->hooks.ud, sizeof(*ctx));
    if (!ctx)
        return MROCE_ENOMEM;
    memset(ctx, 0, sizeof(*ctx));
    verbs_dev(ctx, a);
    ctx->udp_port = a->udp_port ? a->udp_port : MROCE_UDP_PORT;
    ctx->mtu = mtu;
    ctx->link_mbps = a->link_mbps ? a->link_mbps : 100000;
    ctx->base_rtt_ns = a->base_rtt_ns;
    ctx->n_src_ports = a->n_src_ports;
    ctx->spray_run = a->spray_run ? a->spray_run : 1; /* R-PATH-17 */
    if (a->n_src_ports)
        memcpy(ctx->src_ports, a->src_ports,
               a->n_src_ports * sizeof(*a->src_ports));
    ctx->conn_hash_cap = 1024;
    ctx->conn_hash = eng_alloc(ctx, 1024 * sizeof(*ctx->conn_hash));
    int err = ctx->conn_hash ? eng_planes_init(ctx) : MROCE_ENOMEM;
    if (!err)
        err = verbs_transport(ctx, a);
    if (err) {
        eng_free(ctx, ctx->planes);
        eng_free(ctx, ctx->conn_hash);
        ctx->dev.hooks.free(ctx->dev.hooks.ud, ctx);
        return err;
    }
    *out = ctx;
    return 0;
}

void mroce_ctx_close(struct mroce_ctx *ctx)
{
    if (!ctx)
        return;
    while (ctx->roce_conns)
        mroce_conn_destroy(ctx->roce_conns);
    if (ctx->roce)
        roce_dev_destroy(ctx->roce);
    eng_ctx_release(ctx);
    dev_release(&ctx->dev);
    ctx->dev.hooks.free(ctx->dev.hooks.ud, ctx);
}

#define NAMEOF(tab, i)                                                         \
    ((i) >= 0 && (size_t)(i) < sizeof(tab) / sizeof((tab)[0]) && (tab)[i]      \
         ? (tab)[i]                                                            \
         : "unknown")

const char *mroce_strerror(int err)
{
    static const char *const t[] = {
        "success",
        "invalid argument",
        "out of memory",
        "queue or window full, retry later",
        "no such key, stream or path",
        "object in the wrong state",
        "buffer outside its memory region",
        "key lacks the access right",
        "object still in use",
        "buffer too small",
        "packet dropped: malformed or not for this endpoint",
    };
    return NAMEOF(t, -err);
}

const char *mroce_wc_status_str(int status)
{
    static const char *const t[] = {
        "SUCCESS",        "LOC_LEN_ERR",       "LOC_PROT_ERR",
        "REM_ACCESS_ERR", "REM_INV_REQ_ERR",   "REM_OP_ERR",
        "RETRY_EXC_ERR",  "RNR_RETRY_EXC_ERR", "WR_FLUSH_ERR",
    };
    return NAMEOF(t, status);
}

const char *mroce_conn_state_str(int state)
{
    static const char *const t[] = {"INIT", "CONNECTED", "CLOSING", "CLOSED",
                                    "ERROR"};
    return NAMEOF(t, state);
}

const char *mroce_path_state_str(int state)
{
    static const char *const t[] = {"ACTIVE", "SUSPECT", "FAILED", "PROBING",
                                    "DISABLED"};
    return NAMEOF(t, state);
}
