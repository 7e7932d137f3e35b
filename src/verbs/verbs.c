/* The context and the parts of the public API that need the C library:
 * default hooks (malloc, the kernel's CSPRNG or a seeded generator) and
 * the string tables. The verbs objects themselves live in the sans-I/O
 * device (src/device), which both engines share. */
#define _DEFAULT_SOURCE /* getrandom(2), O_CLOEXEC */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

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

/* ---- randomness (R-SEC-7) ---- */

/* 256 bytes per refill: getrandom(2) returns that much in one call
 * without blocking (once the kernel pool is initialised) and without
 * being interrupted, and the engine draws a few words per connection,
 * memory region and re-path, so refills are rare. */
#define VERBS_RNG_WORDS 32

struct verbs_rng {
    uint64_t w[VERBS_RNG_WORDS];
    uint32_t pos;
};

static int verbs_urandom(uint8_t *p, size_t n)
{
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    return got == n ? 0 : -1;
}

/* The kernel's CSPRNG: getrandom(2), or /dev/urandom where a sandbox
 * refuses the system call. */
static int verbs_fill(void *buf, size_t n)
{
    uint8_t *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got == n ? 0 : verbs_urandom(p + got, n - got);
}

/* A used word is wiped, so a later memory disclosure reveals no id or
 * key already handed out. A source that worked when the context was
 * opened and fails now leaves nothing safe to return: handing out
 * predictable ids and keys would be worse than stopping. */
static uint64_t verbs_sysrand(void *ud)
{
    struct verbs_rng *r = ud;
    if (r->pos == VERBS_RNG_WORDS) {
        if (verbs_fill(r->w, sizeof(r->w)))
            abort();
        r->pos = 0;
    }
    uint64_t v = r->w[r->pos];
    r->w[r->pos++] = 0;
    return v;
}

/* Deterministic runs only (mroce_ctx_attr.deterministic): splitmix64,
 * whose output reveals its state -- never a source of secrets. */
static uint64_t verbs_splitmix(void *ud)
{
    uint64_t *state = ud;
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int verbs_rng_open(struct mroce_ctx *ctx, const struct mroce_ctx_attr *a)
{
    if (a->hooks.rand64) {
        ctx->dev.rng = a->hooks.rand64;
        ctx->dev.rng_ud = a->hooks.ud;
        return 0;
    }
    if (a->deterministic) {
        ctx->dev.rng_state = a->seed;
        ctx->dev.rng = verbs_splitmix;
        ctx->dev.rng_ud = &ctx->dev.rng_state;
        return 0;
    }
    struct verbs_rng *r = ctx->dev.hooks.alloc(ctx->dev.hooks.ud, sizeof(*r));
    if (!r)
        return MROCE_ENOMEM;
    ctx->dev.rng = verbs_sysrand;
    ctx->dev.rng_ud = r;
    if (verbs_fill(r->w, sizeof(r->w)))
        return MROCE_ENOENT; /* no secure source: refuse to open */
    r->pos = 0;
    return 0;
}

static void verbs_rng_close(struct mroce_ctx *ctx)
{
    if (ctx->dev.rng != verbs_sysrand || !ctx->dev.rng_ud)
        return;
    memset(ctx->dev.rng_ud, 0, sizeof(struct verbs_rng));
    ctx->dev.hooks.free(ctx->dev.hooks.ud, ctx->dev.rng_ud);
    ctx->dev.rng_ud = NULL;
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
    dev_init(&ctx->dev, &h);
    ctx->dev.addr = a->addr;
    ctx->dev.n_planes = a->n_planes ? a->n_planes : 1;
    for (uint32_t i = 0; i < ctx->dev.n_planes; i++) /* R-ENC-10 */
        ctx->dev.plane_addr[i] = a->plane_addrs ? a->plane_addrs[i] : a->addr;
}

/* A RoCEv2 context gets a device of the baseline engine (src/roce). */
static int verbs_transport(struct mroce_ctx *ctx,
                           const struct mroce_ctx_attr *a)
{
    if (a->transport == MROCE_TRANSPORT_METAROCE) {
        ctx->no_icrc = a->no_icrc; /* every packet, sent and received */
        return 0;
    }
    if (a->transport != MROCE_TRANSPORT_ROCEV2)
        return MROCE_EINVAL;
    struct roce_dev_attr ra = {.link_mbps = ctx->link_mbps,
                               .dcqcn = !a->rocev2_no_dcqcn,
                               .no_icrc_check = a->no_icrc,
                               .no_icrc_tx = a->no_icrc};
    ctx->sched.top = 0; /* no engine timer: mroce_ctx_next_expiry asks roce */
    int err = roce_dev_create(&ctx->dev, &ra, &ctx->roce);
    if (err)
        return err;
    ctx->sched.busy = true; /* mroce_ctx_tx always asks roce */
    ctx->max_pkt = (uint32_t)roce_dev_max_pkt(ctx->roce);
    return 0;
}

/* R-ENC-10: every plane's address is of addr's family. */
static bool verbs_planes_ok(const struct mroce_ctx_attr *a)
{
    uint32_t n = a->n_planes ? a->n_planes : 1;
    for (uint32_t i = 0; a->plane_addrs && i < n && n <= MROCE_MAX_PLANES; i++)
        if (a->plane_addrs[i].family != a->addr.family)
            return false;
    return true;
}

/* R-ENC-3: distinct nonzero ports. A port listed twice would count as
 * two in the paths-per-port limit, and a path looking for a port no
 * other path uses would then search forever. */
static bool verbs_src_ports_ok(const struct mroce_ctx_attr *a)
{
    if (a->n_src_ports > MROCE_MAX_SRC_PORTS ||
        (a->n_src_ports && !a->src_ports))
        return false;
    uint64_t seen[65536 / 64] = {0};
    for (uint32_t i = 0; i < a->n_src_ports; i++) {
        uint16_t port = a->src_ports[i];
        if (!port || (seen[port / 64] >> (port % 64) & 1))
            return false;
        seen[port / 64] |= UINT64_C(1) << (port % 64);
    }
    return true;
}

static bool verbs_crypto_ok(const struct mroce_crypto *c)
{
    return !c ||
           (c->key_new && c->key_free && c->seal && c->open && c->hkdf_expand);
}

/* The secure modes' provider and the buffer an encrypted payload is
 * opened into before it is placed (R-AEAD-8). */
static int verbs_crypto(struct mroce_ctx *ctx, const struct mroce_ctx_attr *a)
{
    if (!a->crypto || a->transport != MROCE_TRANSPORT_METAROCE)
        return 0;
    ctx->crypto = *a->crypto;
    ctx->has_crypto = true;
    ctx->aead_buf = eng_alloc(ctx, ctx->mtu);
    return ctx->aead_buf ? 0 : MROCE_ENOMEM;
}

int mroce_ctx_open(const struct mroce_ctx_attr *a, struct mroce_ctx **out)
{
    uint32_t mtu = a->mtu ? a->mtu : 4096;
    if (mtu < 256 || mtu > 9000 || a->n_planes > MROCE_MAX_PLANES ||
        a->spray_run > MROCE_MAX_SPRAY_RUN ||
        (a->addr.family != MROCE_AF_INET && a->addr.family != MROCE_AF_INET6) ||
        !verbs_src_ports_ok(a) || !verbs_planes_ok(a) ||
        !verbs_crypto_ok(a->crypto))
        return MROCE_EINVAL;
    void *(*alloc)(void *, size_t) =
        a->hooks.alloc ? a->hooks.alloc : verbs_alloc;
    struct mroce_ctx *ctx = alloc(a->hooks.ud, sizeof(*ctx));
    if (!ctx)
        return MROCE_ENOMEM;
    memset(ctx, 0, sizeof(*ctx));
    verbs_dev(ctx, a);
    int err = verbs_rng_open(ctx, a);
    if (err) {
        verbs_rng_close(ctx);
        ctx->dev.hooks.free(ctx->dev.hooks.ud, ctx);
        return err;
    }
    ctx->udp_port = a->udp_port ? a->udp_port : MROCE_UDP_PORT;
    ctx->mtu = mtu;
    ctx->link_mbps = a->link_mbps ? a->link_mbps : 100000;
    ctx->base_rtt_ns = a->base_rtt_ns;
    ctx->n_src_ports = a->n_src_ports;
    ctx->spray_run = a->spray_run ? a->spray_run : 1; /* R-PATH-17 */
    if (a->n_src_ports)
        memcpy(ctx->src_ports, a->src_ports,
               a->n_src_ports * sizeof(*a->src_ports));
    ctx->sched.top = ENG_NEVER; /* no connection, no timer */
    ctx->conn_hash_cap = 1024;
    ctx->conn_hash = eng_alloc(ctx, 1024 * sizeof(*ctx->conn_hash));
    err = ctx->conn_hash ? eng_planes_init(ctx) : MROCE_ENOMEM;
    if (!err)
        err = verbs_crypto(ctx, a);
    ctx->max_pkt = (uint32_t)eng_ctx_max_pkt(ctx); /* mtu and crypto set */
    if (!err)
        err = verbs_transport(ctx, a);
    if (err) {
        eng_free(ctx, ctx->aead_buf);
        eng_free(ctx, ctx->planes);
        eng_free(ctx, ctx->conn_hash);
        verbs_rng_close(ctx);
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
    verbs_rng_close(ctx);
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
        "not available here (no crypto provider)",
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
