/* The test wire: see testwire.h for the model. Everything is allocated in
 * mroce_tw_create; send and pop work in a fixed pool of packet slots ordered
 * by a binary heap on (arrival time, insertion sequence). */
#include "io/testwire/testwire.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define TW_NONE UINT32_MAX
#define TW_NS_PER_S 1000000000ull
#define TW_MAX_TIME_CFG (1ull << 62) /* keeps sums of delays from wrapping */
#define TW_MAX_RATE 1000000000000000000ull /* 1 Ebit/s: bits * 1e9 fits */
#define TW_MAX_FRAME (1u << 24)            /* max_pkt + overhead; same reason */
#define TW_MAX_ECN_THRESHOLD (1u << 31)    /* (thr + 1) * 8e9 fits in 64 bits */

struct tw_ep {
    struct mroce_addr addr;
    uint64_t free_at; /* ns at which egress serialization is idle again */
    uint64_t rem;     /* carried fraction of a ns, in units of 1/rate_bps */
};

struct tw_slot {
    uint64_t time;
    uint64_t seq; /* insertion order: breaks ties in time */
    struct mroce_pkt_meta meta;
    uint32_t len;
    int dst_ep;
};

struct tw_hole {
    int src_ep, dst_ep; /* -1 = any */
    uint32_t route;
};

/* What one send may do; drawn in full for every accepted packet so that
 * turning one impairment on does not shift the random choices of another. */
struct tw_draws {
    uint64_t loss, burst_move, burst_loss, reorder, dup, corrupt, corrupt_at;
};

struct mroce_tw {
    struct mroce_tw_cfg cfg;
    /* Probabilities as thresholds on a uniform uint64 (UINT64_MAX = always):
     * integer compares keep the hot path free of floating point. */
    uint64_t p_loss, p_enter, p_exit, p_burst, p_dup, p_corrupt, p_reorder;
    uint64_t ecn_ns;   /* backlog time at which the byte threshold is hit */
    uint64_t rng[4];   /* xoshiro256** state */
    uint64_t hash_key; /* ECMP and jitter salt, from the seed */
    bool burst_bad;    /* Gilbert-Elliott state */
    uint64_t next_seq;
    struct tw_ep *eps;
    int n_eps;
    struct tw_hole holes[MROCE_TW_MAX_HOLES];
    int n_holes;
    struct tw_slot *slots;
    uint8_t *bufs; /* (capacity + 1) * max_pkt, slot i at i * max_pkt */
    uint32_t *free_list;
    uint32_t n_free;
    uint32_t *heap;
    uint32_t n_heap;
    uint32_t held; /* slot lent to the caller by the last pop, or TW_NONE */
    struct mroce_tw_stats st;
};

/* ---- Random numbers and hashing ---- */

static uint64_t tw_splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t tw_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman, Vigna): fast, and good enough for impairments. */
static uint64_t tw_next(struct mroce_tw *tw)
{
    uint64_t *s = tw->rng;
    uint64_t out = tw_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = tw_rotl(s[3], 45);
    return out;
}

static bool tw_hit(uint64_t draw, uint64_t p)
{
    return p == UINT64_MAX || draw < p;
}

static uint64_t tw_prob(double p)
{
    if (!(p > 0))
        return 0;
    if (p >= 1)
        return UINT64_MAX;
    double v = p * 18446744073709551616.0; /* 2^64 */
    return v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v;
}

static uint64_t tw_mix(uint64_t h, uint64_t v)
{
    h ^= v;
    return tw_splitmix(&h);
}

/* Bytes of the address that mean something for its family. */
static size_t tw_addr_len(const struct mroce_addr *a)
{
    if (a->family == MROCE_AF_INET)
        return 4;
    return a->family == MROCE_AF_INET6 ? 16 : 0;
}

static uint64_t tw_hash_addr(uint64_t h, const struct mroce_addr *a)
{
    size_t n = tw_addr_len(a);
    h = tw_mix(h, a->family);
    for (size_t i = 0; i < n; i += 4) {
        uint64_t w = (uint64_t)a->ip[i] << 24 | (uint64_t)a->ip[i + 1] << 16 |
                     (uint64_t)a->ip[i + 2] << 8 | a->ip[i + 3];
        h = tw_mix(h, w);
    }
    return h;
}

static bool tw_addr_eq(const struct mroce_addr *a, const struct mroce_addr *b)
{
    return a->family == b->family && memcmp(a->ip, b->ip, tw_addr_len(a)) == 0;
}

/* ---- Configuration ---- */

static bool tw_prob_ok(double p)
{
    return p >= 0 && p <= 1; /* false for NaN too */
}

static bool tw_cfg_probs_ok(const struct mroce_tw_cfg *c)
{
    return tw_prob_ok(c->loss) && tw_prob_ok(c->burst_enter) &&
           tw_prob_ok(c->burst_exit) && tw_prob_ok(c->burst_loss) &&
           tw_prob_ok(c->dup) && tw_prob_ok(c->corrupt) &&
           tw_prob_ok(c->reorder);
}

static bool tw_cfg_ok(const struct mroce_tw_cfg *c)
{
    return tw_cfg_probs_ok(c) && c->rate_bps <= TW_MAX_RATE &&
           (uint64_t)c->max_pkt + c->wire_overhead <= TW_MAX_FRAME &&
           c->ecn_threshold_bytes <= TW_MAX_ECN_THRESHOLD &&
           c->delay_ns <= TW_MAX_TIME_CFG && c->jitter_ns <= TW_MAX_TIME_CFG &&
           c->reorder_ns <= TW_MAX_TIME_CFG && c->dup_ns <= TW_MAX_TIME_CFG &&
           c->capacity < TW_NONE - 1 && c->max_endpoints <= INT32_MAX / 2;
}

static void tw_cfg_defaults(struct mroce_tw_cfg *c)
{
    if (c->n_routes == 0)
        c->n_routes = 1;
    if (c->max_pkt == 0)
        c->max_pkt = 9000;
    if (c->capacity == 0)
        c->capacity = 1024;
    if (c->max_endpoints == 0)
        c->max_endpoints = 64;
    if (c->dup_ns == 0)
        c->dup_ns = 1;
}

/* Smallest backlog in ns whose size in bytes, floor(ns * rate / 8e9),
 * exceeds the threshold: ns * rate >= (thr + 1) * 8e9. */
static uint64_t tw_ecn_ns(const struct mroce_tw_cfg *c)
{
    if (c->ecn_threshold_bytes == 0 || c->rate_bps == 0)
        return UINT64_MAX;
    uint64_t bits = ((uint64_t)c->ecn_threshold_bytes + 1) * 8 * TW_NS_PER_S;
    return bits / c->rate_bps + (bits % c->rate_bps != 0);
}

static void tw_init_derived(struct mroce_tw *tw)
{
    const struct mroce_tw_cfg *c = &tw->cfg;
    uint64_t x = c->seed;

    tw->p_loss = tw_prob(c->loss);
    tw->p_enter = tw_prob(c->burst_enter);
    tw->p_exit = tw_prob(c->burst_exit);
    tw->p_burst = tw_prob(c->burst_loss);
    tw->p_dup = tw_prob(c->dup);
    tw->p_corrupt = tw_prob(c->corrupt);
    tw->p_reorder = tw_prob(c->reorder);
    tw->ecn_ns = tw_ecn_ns(c);
    for (int i = 0; i < 4; i++)
        tw->rng[i] = tw_splitmix(&x);
    tw->hash_key = tw_splitmix(&x);
}

/* One slot more than the capacity: the slot lent out by pop must not cost
 * the network a place, and a send may copy from it (a relay re-sending what
 * it just popped) before it is released. */
static int tw_alloc(struct mroce_tw *tw)
{
    size_t cap = (size_t)tw->cfg.capacity + 1;

    if (tw->cfg.max_pkt > SIZE_MAX / cap)
        return -ENOMEM;
    tw->eps = calloc(tw->cfg.max_endpoints, sizeof(*tw->eps));
    tw->slots = calloc(cap, sizeof(*tw->slots));
    tw->bufs = malloc(cap * tw->cfg.max_pkt);
    tw->free_list = calloc(cap, sizeof(*tw->free_list));
    tw->heap = calloc(cap, sizeof(*tw->heap));
    if (!tw->eps || !tw->slots || !tw->bufs || !tw->free_list || !tw->heap)
        return -ENOMEM;
    /* Lowest slot on top of the stack: slot use is easy to follow in gdb. */
    for (uint32_t i = 0; i < cap; i++)
        tw->free_list[i] = (uint32_t)(cap - 1 - i);
    tw->n_free = (uint32_t)cap;
    return 0;
}

int mroce_tw_create(const struct mroce_tw_cfg *cfg, struct mroce_tw **out)
{
    if (!cfg || !out)
        return -EINVAL;
    *out = NULL;
    struct mroce_tw *tw = calloc(1, sizeof(*tw));
    if (!tw)
        return -ENOMEM;
    tw->cfg = *cfg;
    tw_cfg_defaults(&tw->cfg);
    if (!tw_cfg_ok(&tw->cfg)) {
        free(tw);
        return -EINVAL;
    }
    tw_init_derived(tw);
    tw->held = TW_NONE;
    int rc = tw_alloc(tw);
    if (rc < 0) {
        mroce_tw_destroy(tw);
        return rc;
    }
    *out = tw;
    return 0;
}

void mroce_tw_destroy(struct mroce_tw *tw)
{
    if (!tw)
        return;
    free(tw->eps);
    free(tw->slots);
    free(tw->bufs);
    free(tw->free_list);
    free(tw->heap);
    free(tw);
}

/* ---- Endpoints ---- */

static int tw_find_ep(const struct mroce_tw *tw, const struct mroce_addr *a)
{
    /* Linear: a test wire joins a handful of endpoints. */
    for (int i = 0; i < tw->n_eps; i++)
        if (tw_addr_eq(&tw->eps[i].addr, a))
            return i;
    return -1;
}

int mroce_tw_attach(struct mroce_tw *tw, const struct mroce_addr *addr)
{
    if (!tw || !addr || tw_addr_len(addr) == 0)
        return -EINVAL;
    if (tw_find_ep(tw, addr) >= 0)
        return -EEXIST;
    if ((uint32_t)tw->n_eps >= tw->cfg.max_endpoints)
        return -ENOSPC;
    struct tw_ep *ep = &tw->eps[tw->n_eps];
    memset(ep, 0, sizeof(*ep));
    ep->addr.family = addr->family;
    memcpy(ep->addr.ip, addr->ip, tw_addr_len(addr));
    return tw->n_eps++;
}

static bool tw_ep_ok(const struct mroce_tw *tw, int ep)
{
    return ep >= 0 && ep < tw->n_eps;
}

uint64_t mroce_tw_egress_free_at(const struct mroce_tw *tw, int ep)
{
    return tw && tw_ep_ok(tw, ep) ? tw->eps[ep].free_at : 0;
}

/* ---- Routes and blackholes ---- */

uint32_t mroce_tw_route_of(const struct mroce_tw *tw,
                           const struct mroce_pkt_meta *meta)
{
    uint64_t h = tw_hash_addr(tw->hash_key, &meta->src);
    h = tw_hash_addr(h, &meta->dst);
    h = tw_mix(h, (uint64_t)meta->src_port << 16 | meta->dst_port);
    return (uint32_t)(h % tw->cfg.n_routes);
}

/* Constant per (src, dst, route); derived from the seed instead of stored so
 * it costs no memory however many endpoints and routes there are. */
static uint64_t tw_route_jitter(const struct mroce_tw *tw, int src, int dst,
                                uint32_t route)
{
    if (tw->cfg.jitter_ns == 0)
        return 0;
    uint64_t h = tw_mix(tw->hash_key ^ 0x6a09e667f3bcc908ull,
                        (uint64_t)src << 32 | (uint32_t)dst);
    h = tw_mix(h, route);
    return h % (tw->cfg.jitter_ns + 1);
}

static int tw_find_hole(const struct mroce_tw *tw, int src, int dst,
                        uint32_t route)
{
    for (int i = 0; i < tw->n_holes; i++) {
        const struct tw_hole *h = &tw->holes[i];
        if (h->src_ep == src && h->dst_ep == dst && h->route == route)
            return i;
    }
    return -1;
}

int mroce_tw_blackhole(struct mroce_tw *tw, int src_ep, int dst_ep,
                       uint32_t route, int on)
{
    if (!tw || route >= tw->cfg.n_routes ||
        (src_ep != -1 && !tw_ep_ok(tw, src_ep)) ||
        (dst_ep != -1 && !tw_ep_ok(tw, dst_ep)))
        return -EINVAL;
    int i = tw_find_hole(tw, src_ep, dst_ep, route);
    if (!on) {
        if (i >= 0) /* order of rules does not matter: move the last in */
            tw->holes[i] = tw->holes[--tw->n_holes];
        return 0;
    }
    if (i >= 0)
        return 0;
    if (tw->n_holes == MROCE_TW_MAX_HOLES)
        return -ENOSPC;
    tw->holes[tw->n_holes++] = (struct tw_hole){src_ep, dst_ep, route};
    return 0;
}

static bool tw_in_hole(const struct mroce_tw *tw, int src, int dst,
                       uint32_t route)
{
    for (int i = 0; i < tw->n_holes; i++) {
        const struct tw_hole *h = &tw->holes[i];
        if (h->route == route && (h->src_ep == -1 || h->src_ep == src) &&
            (h->dst_ep == -1 || h->dst_ep == dst))
            return true;
    }
    return false;
}

void mroce_tw_set_loss(struct mroce_tw *tw, double loss)
{
    if (!tw || loss != loss) /* NaN */
        return;
    tw->cfg.loss = loss < 0 ? 0 : loss > 1 ? 1 : loss;
    tw->p_loss = tw_prob(tw->cfg.loss);
}

/* ---- The delivery heap: min on (time, seq) ---- */

static bool tw_before(const struct mroce_tw *tw, uint32_t a, uint32_t b)
{
    const struct tw_slot *x = &tw->slots[a], *y = &tw->slots[b];
    return x->time < y->time || (x->time == y->time && x->seq < y->seq);
}

static void tw_swap(uint32_t *heap, uint32_t i, uint32_t j)
{
    uint32_t t = heap[i];
    heap[i] = heap[j];
    heap[j] = t;
}

static void tw_sift_up(struct mroce_tw *tw, uint32_t i)
{
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!tw_before(tw, tw->heap[i], tw->heap[parent]))
            return;
        tw_swap(tw->heap, i, parent);
        i = parent;
    }
}

static void tw_sift_down(struct mroce_tw *tw, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, min = i;
        if (l < tw->n_heap && tw_before(tw, tw->heap[l], tw->heap[min]))
            min = l;
        if (r < tw->n_heap && tw_before(tw, tw->heap[r], tw->heap[min]))
            min = r;
        if (min == i)
            return;
        tw_swap(tw->heap, i, min);
        i = min;
    }
}

static void tw_push(struct mroce_tw *tw, uint32_t slot)
{
    tw->heap[tw->n_heap] = slot;
    tw_sift_up(tw, tw->n_heap++);
}

static uint32_t tw_pop_min(struct mroce_tw *tw)
{
    uint32_t top = tw->heap[0];
    tw->heap[0] = tw->heap[--tw->n_heap];
    tw_sift_down(tw, 0);
    return top;
}

/* ---- Slots ---- */

static uint8_t *tw_buf(const struct mroce_tw *tw, uint32_t slot)
{
    return tw->bufs + (size_t)slot * tw->cfg.max_pkt;
}

/* The slot lent by the last pop comes back on the next pop or send, which
 * is what makes mroce_tw_pkt.buf valid exactly that long. */
static void tw_release_held(struct mroce_tw *tw)
{
    if (tw->held == TW_NONE)
        return;
    tw->free_list[tw->n_free++] = tw->held;
    tw->held = TW_NONE;
}

static uint32_t tw_enqueue(struct mroce_tw *tw, uint64_t time, int dst,
                           const struct mroce_pkt_meta *meta,
                           const uint8_t *buf, size_t len)
{
    if (tw->n_heap >= tw->cfg.capacity)
        return TW_NONE;
    uint32_t i = tw->free_list[--tw->n_free];
    struct tw_slot *s = &tw->slots[i];
    s->time = time;
    s->seq = tw->next_seq++;
    s->meta = *meta;
    s->len = (uint32_t)len;
    s->dst_ep = dst;
    if (len > 0)
        memcpy(tw_buf(tw, i), buf, len);
    tw_push(tw, i);
    return i;
}

/* ---- Send ---- */

static uint64_t tw_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void tw_draw(struct mroce_tw *tw, struct tw_draws *d)
{
    d->loss = tw_next(tw);
    d->burst_move = tw_next(tw);
    d->burst_loss = tw_next(tw);
    d->reorder = tw_next(tw);
    d->dup = tw_next(tw);
    d->corrupt = tw_next(tw);
    d->corrupt_at = tw_next(tw);
}

static int tw_check_send(const struct mroce_tw *tw,
                         const struct mroce_pkt_meta *meta, const uint8_t *buf,
                         size_t len, int *src, int *dst)
{
    if (!tw || !meta || (!buf && len > 0))
        return -EINVAL;
    if (len > tw->cfg.max_pkt)
        return -EMSGSIZE;
    *src = tw_find_ep(tw, &meta->src);
    *dst = tw_find_ep(tw, &meta->dst);
    return *src < 0 || *dst < 0 ? -ENOENT : 0;
}

/* DCTCP-style marking on arrival at the egress queue: the packet sees the
 * bytes queued in front of it, not itself. */
static bool tw_ecn_due(const struct mroce_tw *tw, const struct tw_ep *ep,
                       uint64_t now, uint8_t ecn)
{
    if (tw->ecn_ns == UINT64_MAX ||
        (ecn != MROCE_ECN_ECT0 && ecn != MROCE_ECN_ECT1))
        return false;
    return ep->free_at > now && ep->free_at - now >= tw->ecn_ns;
}

/* Returns when the last bit leaves the sender. The remainder keeps a long
 * back-to-back train exact; an idle link has no fraction to carry. */
static uint64_t tw_serialize(const struct mroce_tw *tw, struct tw_ep *ep,
                             uint64_t now, size_t len)
{
    uint64_t rate = tw->cfg.rate_bps;
    if (rate == 0)
        return now;
    if (ep->free_at < now) {
        ep->free_at = now;
        ep->rem = 0;
    }
    uint64_t num = ((uint64_t)len + tw->cfg.wire_overhead) * 8 * TW_NS_PER_S;
    num += ep->rem; /* rem < rate <= 1e18: no wrap given TW_MAX_FRAME */
    ep->free_at = tw_add(ep->free_at, num / rate);
    ep->rem = num % rate;
    return ep->free_at;
}

/* One Gilbert-Elliott step per packet; true if the bad state loses it. */
static bool tw_burst_step(struct mroce_tw *tw, const struct tw_draws *d)
{
    if (tw->burst_bad)
        tw->burst_bad = !tw_hit(d->burst_move, tw->p_exit);
    else
        tw->burst_bad = tw_hit(d->burst_move, tw->p_enter);
    return tw->burst_bad && tw_hit(d->burst_loss, tw->p_burst);
}

/* Counts and returns true if an impairment drops the packet. The burst
 * chain steps even for packets a blackhole takes, so its runs do not
 * depend on which routes are dark. */
static bool tw_dropped(struct mroce_tw *tw, const struct tw_draws *d, int src,
                       int dst, uint32_t route)
{
    bool burst = tw_burst_step(tw, d);
    if (tw_in_hole(tw, src, dst, route))
        tw->st.lost_blackhole++;
    else if (burst)
        tw->st.lost_burst++;
    else if (tw_hit(d->loss, tw->p_loss))
        tw->st.lost_random++;
    else
        return false;
    return true;
}

/* Flips one byte to a different value (xor with 1..255), so a corrupted
 * packet always differs from the one sent in exactly one byte. */
static void tw_corrupt(struct mroce_tw *tw, uint32_t slot, uint64_t draw)
{
    struct tw_slot *s = &tw->slots[slot];
    if (s->len == 0)
        return;
    uint8_t mask = (uint8_t)(1 + (draw & 0xff) % 255);
    tw_buf(tw, slot)[(draw >> 8) % s->len] ^= mask;
    tw->st.corrupted++;
}

/* The copy takes its own slot; with the pool full it is silently skipped
 * (not an overflow loss: the original got through). */
static void tw_duplicate(struct mroce_tw *tw, uint32_t slot)
{
    const struct tw_slot *s = &tw->slots[slot];
    uint64_t t = tw_add(s->time, tw->cfg.dup_ns);
    if (tw_enqueue(tw, t, s->dst_ep, &s->meta, tw_buf(tw, slot), s->len) !=
        TW_NONE)
        tw->st.duplicated++;
}

/* Where and when a packet that survived the drops arrives, and how. */
struct tw_fate {
    uint64_t time;
    int dst;
    bool mark; /* set CE */
    bool late; /* reordered: reorder_ns extra */
};

static void tw_plan(const struct mroce_tw *tw, const struct tw_draws *d,
                    uint64_t done, int src, uint32_t route, struct tw_fate *f)
{
    uint64_t t = tw_add(done, tw->cfg.delay_ns);
    t = tw_add(t, tw_route_jitter(tw, src, f->dst, route));
    f->late = tw_hit(d->reorder, tw->p_reorder);
    f->time = f->late ? tw_add(t, tw->cfg.reorder_ns) : t;
}

/* Counters move only for packets that found room: a packet lost to
 * overflow was not marked, reordered or corrupted anywhere visible. */
static void tw_deliver(struct mroce_tw *tw, const struct tw_draws *d,
                       const struct tw_fate *f, struct mroce_pkt_meta *m,
                       const uint8_t *buf, size_t len)
{
    if (f->mark)
        m->ecn = MROCE_ECN_CE;
    uint32_t slot = tw_enqueue(tw, f->time, f->dst, m, buf, len);
    if (slot == TW_NONE) {
        tw->st.lost_overflow++;
        return;
    }
    tw->st.ecn_marked += f->mark;
    tw->st.reordered += f->late;
    if (tw_hit(d->corrupt, tw->p_corrupt))
        tw_corrupt(tw, slot, d->corrupt_at);
    if (tw_hit(d->dup, tw->p_dup))
        tw_duplicate(tw, slot);
}

static int tw_send(struct mroce_tw *tw, uint64_t now,
                   const struct mroce_pkt_meta *meta, const uint8_t *buf,
                   size_t len)
{
    int src;
    struct tw_fate f;
    int rc = tw_check_send(tw, meta, buf, len, &src, &f.dst);
    if (rc < 0)
        return rc;
    struct tw_draws d;
    tw_draw(tw, &d);
    tw->st.sent++;
    struct tw_ep *ep = &tw->eps[src];
    struct mroce_pkt_meta m = *meta;
    f.mark = tw_ecn_due(tw, ep, now, m.ecn);
    uint64_t done = tw_serialize(tw, ep, now, len);
    uint32_t route = mroce_tw_route_of(tw, &m);
    if (tw_dropped(tw, &d, src, f.dst, route))
        return 0;
    tw_plan(tw, &d, done, src, route, &f);
    tw_deliver(tw, &d, &f, &m, buf, len);
    return 0;
}

int mroce_tw_send(struct mroce_tw *tw, uint64_t now,
                  const struct mroce_pkt_meta *meta, const uint8_t *buf,
                  size_t len)
{
    int rc = tw_send(tw, now, meta, buf, len);
    /* Released after the copy: buf may point into the held slot. */
    if (tw)
        tw_release_held(tw);
    return rc;
}

/* ---- Receive ---- */

uint64_t mroce_tw_next_time(const struct mroce_tw *tw)
{
    if (!tw || tw->n_heap == 0)
        return UINT64_MAX;
    return tw->slots[tw->heap[0]].time;
}

int mroce_tw_pop(struct mroce_tw *tw, uint64_t now, struct mroce_tw_pkt *out)
{
    if (!tw || !out)
        return -EINVAL;
    tw_release_held(tw);
    if (tw->n_heap == 0 || tw->slots[tw->heap[0]].time > now)
        return 0;
    uint32_t i = tw_pop_min(tw);
    const struct tw_slot *s = &tw->slots[i];
    tw->held = i;
    out->dst_ep = s->dst_ep;
    out->meta = s->meta;
    out->buf = tw_buf(tw, i);
    out->len = s->len;
    out->time = s->time;
    tw->st.delivered++;
    tw->st.bytes_delivered += s->len;
    return 1;
}

void mroce_tw_stats(const struct mroce_tw *tw, struct mroce_tw_stats *out)
{
    if (tw && out)
        *out = tw->st;
}
