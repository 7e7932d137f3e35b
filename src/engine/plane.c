/* Plane health (R-PATH-15): planes are independent fabrics that fail as a
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
