/* A unidirectional link; see link.h for the model. */
#include "sim/link.h"

#include <stdlib.h>
#include <string.h>

#include "sim/defaults.h"
#include "sim/event_int.h"
#include "sim/rng.h"

struct mroce_sim_link {
    struct mroce_sim_evlist *ev;
    struct mroce_sim_pool *pool;
    struct mroce_sim_sink dst;
    struct mroce_sim_pause_sink src;
    uint64_t rate_bps; /* nominal */
    uint64_t eff_bps;  /* nominal x degrade fraction */
    uint64_t delay_ps;
    uint64_t busy_until;
    uint32_t downs; /* times it went down: frames sent before are lost */
    bool up;
    double loss;
    struct mroce_sim_rng rng;
    uint32_t src_lp, dst_lp;
    struct mroce_sim_link_remote remote; /* cut by a partition */
    mroce_sim_link_tap tap;
    void *tap_ud;
    bool plain; /* up, lossless, untapped, local: the send fast path */
    struct mroce_sim_link_counters c;
};

/* After any change to up, loss, tap or remote. */
static void link_update_plain(struct mroce_sim_link *l)
{
    l->plain = l->up && !(l->loss > 0.0) && !l->tap && !l->remote.arrive;
}

struct mroce_sim_link *mroce_sim_link_create(struct mroce_sim_evlist *ev,
                                             struct mroce_sim_pool *pool,
                                             const struct mroce_sim_link_cfg *c)
{
    struct mroce_sim_link_cfg d = {0};
    if (c)
        d = *c;
    if (d.rate_bps == 0)
        d.rate_bps = MROCE_SIM_LINK_BPS;
    if (d.delay_ps == 0)
        d.delay_ps = MROCE_SIM_LINK_DELAY_PS;
    else if (d.delay_ps == MROCE_SIM_ZERO_DELAY)
        d.delay_ps = 0;
    if (!ev || !pool || d.loss < 0.0 || d.loss > 1.0)
        return NULL;
    struct mroce_sim_link *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->ev = ev;
    l->pool = pool;
    l->rate_bps = d.rate_bps;
    l->eff_bps = d.rate_bps;
    l->delay_ps = d.delay_ps;
    l->up = true;
    l->loss = d.loss;
    mroce_sim_rng_init(&l->rng, d.seed);
    link_update_plain(l);
    return l;
}

void mroce_sim_link_destroy(struct mroce_sim_link *l)
{
    free(l);
}

void mroce_sim_link_set_dst(struct mroce_sim_link *l,
                            const struct mroce_sim_sink *dst)
{
    l->dst = *dst;
}

void mroce_sim_link_set_src(struct mroce_sim_link *l,
                            const struct mroce_sim_pause_sink *src)
{
    l->src = *src;
}

void mroce_sim_link_set_lps(struct mroce_sim_link *l, uint32_t src_lp,
                            uint32_t dst_lp)
{
    l->src_lp = src_lp;
    l->dst_lp = dst_lp;
}

void mroce_sim_link_get_lps(const struct mroce_sim_link *l, uint32_t *src_lp,
                            uint32_t *dst_lp)
{
    *src_lp = l->src_lp;
    *dst_lp = l->dst_lp;
}

uint64_t mroce_sim_link_ser_ps(const struct mroce_sim_link *l,
                               uint32_t wire_bytes)
{
    uint64_t bits_ps = (uint64_t)wire_bytes * 8u * MROCE_SIM_PS_PER_S;
    return (bits_ps + l->eff_bps - 1) / l->eff_bps;
}

uint64_t mroce_sim_link_busy_until(const struct mroce_sim_link *l)
{
    return l->busy_until;
}

/* The frame's last bit has propagated to the far end. */
static void link_arrive(void *obj, uint64_t arg, uint64_t now)
{
    struct mroce_sim_link *l = obj;
    struct mroce_sim_pkt *p = (struct mroce_sim_pkt *)(uintptr_t)arg;
    l->c.in_flight--;
    if (!l->up || p->epoch != l->downs) {
        l->c.drop_down++;
        mroce_sim_pkt_drop(l->pool, p, MROCE_SIM_DROP_LINK_DOWN);
        return;
    }
    l->c.rx_pkts++;
    l->c.rx_bytes += p->wire_bytes;
    l->dst.recv(l->dst.obj, l->dst.port, p, now);
}

/* The frame's arrival: here, or on the rank that holds the far end. */
static void link_schedule(struct mroce_sim_link *l, struct mroce_sim_pkt *p,
                          uint64_t t)
{
    if (!l->remote.arrive) {
        ev_post_to_inline(l->ev, t, link_arrive, l, (uint64_t)(uintptr_t)p,
                          l->dst_lp);
        return;
    }
    l->remote.arrive(l->remote.ud, l, p, t, mroce_sim_ev_take_key(l->ev));
    mroce_sim_pkt_export(l->pool, p);
}

bool mroce_sim_link_arrive_at(struct mroce_sim_link *l, struct mroce_sim_pkt *p,
                              uint64_t t_ps, uint64_t key)
{
    return mroce_sim_ev_post_key(l->ev, t_ps, link_arrive, l,
                                 (uint64_t)(uintptr_t)p, key, l->dst_lp);
}

void mroce_sim_link_set_remote(struct mroce_sim_link *l,
                               const struct mroce_sim_link_remote *r)
{
    memset(&l->remote, 0, sizeof(l->remote));
    if (r)
        l->remote = *r;
    link_update_plain(l);
}

uint64_t mroce_sim_link_send(struct mroce_sim_link *l, struct mroce_sim_pkt *p,
                             uint64_t now_ps)
{
    uint64_t start = now_ps > l->busy_until ? now_ps : l->busy_until;
    uint64_t ser = mroce_sim_link_ser_ps(l, p->wire_bytes);
    l->busy_until = start + ser;
    l->c.tx_pkts++;
    l->c.tx_bytes += p->wire_bytes;
    l->c.busy_ps += ser;
    if (l->plain) { /* what the checks below come to on a plain link */
        p->epoch = l->downs;
        l->c.in_flight++;
        ev_post_to_inline(l->ev, l->busy_until + l->delay_ps, link_arrive, l,
                          (uint64_t)(uintptr_t)p, l->dst_lp);
        return l->busy_until;
    }
    if (l->tap)
        l->tap(l->tap_ud, p, start);
    if (!l->up) {
        l->c.drop_down++;
        mroce_sim_pkt_drop(l->pool, p, MROCE_SIM_DROP_LINK_DOWN);
    } else if (mroce_sim_rng_chance(&l->rng, l->loss)) {
        l->c.drop_loss++;
        mroce_sim_pkt_drop(l->pool, p, MROCE_SIM_DROP_LOSS);
    } else {
        p->epoch = l->downs;
        l->c.in_flight++;
        link_schedule(l, p, l->busy_until + l->delay_ps);
    }
    return l->busy_until;
}

/* A pause or resume reaches the sender. arg = prio << 1 | on. */
static void link_pause_arrive(void *obj, uint64_t arg, uint64_t now)
{
    struct mroce_sim_link *l = obj;
    l->src.pause(l->src.obj, l->src.port, (int)(arg >> 1), arg & 1, now);
}

void mroce_sim_link_pause(struct mroce_sim_link *l, int prio, bool on,
                          uint64_t now_ps)
{
    if (!l->src.pause)
        return;
    if (on)
        l->c.pause_sent++;
    else
        l->c.resume_sent++;
    uint64_t t = now_ps + l->delay_ps +
                 mroce_sim_link_ser_ps(l, MROCE_SIM_MIN_FRAME_WIRE);
    if (l->remote.pause)
        l->remote.pause(l->remote.ud, l, prio, on, t,
                        mroce_sim_ev_take_key(l->ev));
    else
        ev_post_to_inline(l->ev, t, link_pause_arrive, l,
                          (uint64_t)prio << 1 | (on ? 1u : 0u), l->src_lp);
}

bool mroce_sim_link_pause_at(struct mroce_sim_link *l, int prio, bool on,
                             uint64_t t_ps, uint64_t key)
{
    if (!l->src.pause)
        return true; /* a sender that does not honour PFC */
    return mroce_sim_ev_post_key(l->ev, t_ps, link_pause_arrive, l,
                                 (uint64_t)prio << 1 | (on ? 1u : 0u), key,
                                 l->src_lp);
}

void mroce_sim_link_set_up(struct mroce_sim_link *l, bool up)
{
    if (l->up && !up)
        l->downs++;
    l->up = up;
    link_update_plain(l);
}

bool mroce_sim_link_is_up(const struct mroce_sim_link *l)
{
    return l->up;
}

bool mroce_sim_link_set_rate_fraction(struct mroce_sim_link *l, double f)
{
    if (!(f > 0.0 && f <= 1.0))
        return false;
    uint64_t r = (uint64_t)((double)l->rate_bps * f);
    l->eff_bps = r ? r : 1;
    return true;
}

bool mroce_sim_link_set_loss(struct mroce_sim_link *l, double p)
{
    if (!(p >= 0.0 && p <= 1.0))
        return false;
    l->loss = p;
    link_update_plain(l);
    return true;
}

uint64_t mroce_sim_link_rate_bps(const struct mroce_sim_link *l)
{
    return l->eff_bps;
}

uint64_t mroce_sim_link_delay_ps(const struct mroce_sim_link *l)
{
    return l->delay_ps;
}

void mroce_sim_link_get_counters(const struct mroce_sim_link *l,
                                 struct mroce_sim_link_counters *out)
{
    *out = l->c;
}

void mroce_sim_link_load_counters(struct mroce_sim_link *l,
                                  const struct mroce_sim_link_counters *c)
{
    l->c = *c;
}

void mroce_sim_link_set_tap(struct mroce_sim_link *l, mroce_sim_link_tap tap,
                            void *ud)
{
    l->tap = tap;
    l->tap_ud = ud;
    link_update_plain(l);
}
