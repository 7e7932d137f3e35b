/* Plane health (R-PATH-15) and each connection's share of the planes
 * (R-PATH-100). Planes are independent fabrics that fail as a
 * whole. Each path finds a failure on its own (a tail-loss probe or a
 * timeout), one window of data at a time; when several paths of the
 * context fail on one plane and none of its paths delivers anything in
 * between, new data leaves that plane at once instead of losing a window
 * on each of its remaining paths. One delivery (a PROBE answered when the
 * plane is back, or data) clears it. */
#include "engine/eng.h"

/* Path failures in a row on one plane, with no delivery on it, that mark
 * it down. A link failure inside a plane (one spine of many) fails only
 * the paths hashed onto it while the others keep delivering. */
#define PLANE_FAILS_DOWN 8

int eng_planes_init(struct mroce_ctx *ctx)
{
    if (ctx->dev.n_planes < 2)
        return 0;
    ctx->planes = eng_alloc(ctx, ctx->dev.n_planes * sizeof(*ctx->planes));
    return ctx->planes ? 0 : MROCE_ENOMEM;
}

void eng_plane_fail(struct mroce_ctx *ctx, uint8_t plane)
{
    if (!ctx->planes)
        return;
    struct eng_plane *pl = &ctx->planes[plane];
    if (!pl->down && ++pl->fails >= PLANE_FAILS_DOWN) {
        pl->down = true;
        ctx->n_planes_down++;
        ctx->plane_ver++;
        ctx->cnt.planes_down++;
    }
}

void eng_plane_delivered(struct mroce_ctx *ctx, uint8_t plane)
{
    struct eng_plane *pl = &ctx->planes[plane];
    pl->fails = 0;
    if (pl->down) {
        pl->down = false;
        ctx->n_planes_down--;
        ctx->plane_ver++;
    }
}

/* c's data packets (new and resent) over the paths of `plane` (R-ENC-10). */
static uint64_t plane_sent(const struct mroce_conn *c, uint32_t plane)
{
    uint64_t on = 0;
    for (uint32_t p = plane; p < c->n_paths; p += c->ctx->dev.n_planes)
        on += c->ptx[p].st.tx_pkts;
    return on;
}

/* R-PATH-100: how far c's data packets on `plane` are below an even
 * share of those on the planes that are up (R-PATH-15: what a connection
 * sent into a plane before it went down says nothing about the others),
 * in n-ths of a packet for n planes up; INT64_MIN when it has no path
 * there. Read from the paths' counters, so the packet path counts
 * nothing extra; with every plane up, one plane's paths. */
int64_t eng_plane_lag(const struct mroce_conn *c, uint32_t plane)
{
    const struct mroce_ctx *ctx = c->ctx;
    if (plane >= c->n_paths)
        return INT64_MIN;
    uint64_t up = c->cnt.tx_data_pkts;
    uint32_t n = ctx->dev.n_planes;
    for (uint32_t k = 0; ctx->n_planes_down && k < ctx->dev.n_planes; k++)
        if (eng_plane_down(ctx, (uint8_t)k)) {
            up -= plane_sent(c, k);
            n--;
        }
    return (int64_t)up - (int64_t)n * (int64_t)plane_sent(c, plane);
}
